/*
 * main.c: the wsfuse command line.  It uses only the public API
 * (include/wsfuse.h), as any embedding program would.
 *
 * Options are read with getopt_long (--emit=cuda and --emit cuda, -D N=1
 * and -DN=1, -- before a SPEC that starts with '-') from one table, opts[],
 * which says what each option takes and which commands take it.  A
 * command's --help is printed from that table, an option of another
 * command is refused by name (compile --check), an option this invocation
 * would ignore is an error (--iters without --bench), and a mistyped
 * command, option or --emit value gets a did-you-mean.
 *
 * Exit status: 0 ok, 1 bad input (the spec, a size), 2 usage, 3 no GPU,
 * 4 a check failed, 5 an internal, NVRTC or CUDA error, 6 a valid spec whose
 * kernel family this version cannot build yet.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wsfuse.h"

#define countof(a) ((int)(sizeof(a) / sizeof((a)[0])))

enum {
	EXIT_INPUT = 1,
	EXIT_USAGE = 2,
	EXIT_NO_GPU = 3,
	EXIT_CHECK = 4,
	EXIT_INTERNAL = 5,
	EXIT_UNSUPPORTED = 6
};

typedef enum Cmd {
	CMD_NONE,
	CMD_COMPILE,
	CMD_RUN,
	CMD_CHECK,
	CMD_BENCH,
	CMD_ENV,
	CMD_HELP,
	CMD_COUNT
} Cmd;

static const struct {
	const char *name;
	const char *synopsis;  /* what follows "wsfuse NAME" */
	const char *what;      /* one line for the list of commands */
	const char *about;     /* the paragraph of NAME --help */
} cmds[CMD_COUNT] = {
	[CMD_COMPILE] = {"compile", "SPEC [options]", "compile a spec to IR, CUDA, PTX or a cubin",
		"Compiles SPEC (a fusion spec in YAML, docs/spec.md; - reads standard input) and\n"
		"writes the output --emit names: a text to standard output, the cubin to NAME.cubin,\n"
		"unless -o says otherwise.\n"},
	[CMD_RUN] = {"run", "SPEC [options]", "compile, then launch on random inputs (a GPU)",
		"Compiles SPEC and launches the kernel once on random inputs (sizes from -D and\n"
		"the spec's defaults); --check compares every output with the host reference,\n"
		"--bench times the kernel.  Without a GPU it compiles and exits with status 3.\n"},
	[CMD_CHECK] = {"check", "SPEC [options]", "run --check: compare every output with the host reference",
		"Same as wsfuse run --check: launches the kernel on random inputs and compares\n"
		"every output with the host reference evaluator (exit status 4 if one differs).\n"},
	[CMD_BENCH] = {"bench", "SPEC [options]", "run --bench: time the kernel",
		"Same as wsfuse run --bench: times the kernel (the median of --iters launches)\n"
		"and prints the time and the bandwidth.\n"},
	[CMD_ENV] = {"env", "", "what wsfuse finds here (NVRTC, driver, GPU, cache), for bug reports",
		"Prints the wsfuse version, the NVRTC and CUDA driver it loads and the GPUs the\n"
		"driver sees (or why there are none), how wsfuse was built, its NVRTC options,\n"
		"the cache directory and the environment variables wsfuse reads: what a bug\n"
		"report needs.  It never fails for want of NVRTC, a driver or a GPU.\n"},
	[CMD_HELP] = {"help", "[COMMAND]", "this help, or a command's",
		"Prints the help of COMMAND, or of wsfuse.\n"},
};

#define ON(c) (1u << (c))
#define RUNS (ON(CMD_RUN) | ON(CMD_CHECK) | ON(CMD_BENCH))
#define BUILDS (ON(CMD_COMPILE) | RUNS)

/* Option codes past the short letters. */
enum {
	OPT_EMIT = 256, OPT_DUMP_AFTER, OPT_CACHE_DIR, OPT_NO_CACHE, OPT_LINEINFO, OPT_LAYOUT, OPT_GRAD_OF,
	OPT_CHECK, OPT_BENCH, OPT_ITERS, OPT_SEED, OPT_SCALE, OPT_TUNE
};

/* Every option: NAME the long name (NULL: short only), CODE its letter or OPT_*, CMDS who takes it. */
static const struct Opt {
	const char *name;
	int code;
	int has_arg;
	unsigned cmds;
	const char *arg;   /* what the value is, in help (NULL: none) */
	const char *need;  /* "-o needs NEED" when the value is missing */
	const char *help;  /* lines after the first are indented under it */
} opts[] = {
	{"emit", OPT_EMIT, required_argument, ON(CMD_COMPILE), "OUTPUT", "an output",
	 "what to write: fusion-ir, kernel-ir, cuda, ptx, cubin\n"
	 "(the default), ptxas (ptxas's report), dot (the fusion\n"
	 "DAG), kernel-dot (the kernel's roles and pipelines) or\n"
	 "grad (the backward, as a spec)"},
	{"output", 'o', required_argument, ON(CMD_COMPILE), "FILE", "a file name",
	 "where to write it; - is standard output (the default\nfor text)"},
	{NULL, 'D', required_argument, BUILDS, "NAME=VALUE", "NAME=VALUE",
	 "bind size NAME to VALUE, 1..2^40 (overrides the spec's\nsizes: default)"},
	{"dump-after", OPT_DUMP_AFTER, required_argument, BUILDS, "PASSES", "a pass name, a list or all",
	 "print the IR to stderr after each pass named (a comma\nlist of the passes below, or all)"},
	{"cache-dir", OPT_CACHE_DIR, required_argument, BUILDS, "DIR", "a directory",
	 "kernel cache directory (default $WSFUSE_CACHE_DIR,\n~/.cache/wsfuse)"},
	{"no-cache", OPT_NO_CACHE, no_argument, BUILDS, NULL, NULL,
	 "do not read or write the kernel cache"},
	{"verbose", 'v', no_argument, BUILDS, NULL, NULL,
	 "print what the kernel takes to stderr: threads, registers,\n"
	 "spills, shared memory, CTAs an SM, grid (wsf_kernel_stats)"},
	{"lineinfo", OPT_LINEINFO, no_argument, BUILDS, NULL, NULL,
	 "line tables in the PTX and cubin, so that profilers (Nsight\n"
	 "Compute) show the CUDA's lines (NVRTC's -lineinfo)"},
	{"grad-of", OPT_GRAD_OF, required_argument, ON(CMD_COMPILE), "X,...", "input names",
	 "the backward (--emit=grad) of these inputs alone (option grad-of)"},
	{"layout", OPT_LAYOUT, required_argument, BUILDS, "X=DIMS", "X=DIMS;...",
	 "input X comes as X_stored.permute(DIMS) (x=1,0: torch's\nx.t()): the kernel takes X_stored (option layout)"},
	{"check", OPT_CHECK, no_argument, RUNS, NULL, NULL,
	 "compare every output with the host reference"},
	{"bench", OPT_BENCH, no_argument, RUNS, NULL, NULL,
	 "time the kernel and print time and bandwidth"},
	{"iters", OPT_ITERS, required_argument, RUNS, "N", "a number",
	 "timed launches for --bench, 1..2^31-1 (default 100)"},
	{"seed", OPT_SEED, required_argument, RUNS, "N", "a number",
	 "seed of the random inputs, 0..2^64-1 (default 0, which\nstands for a fixed seed)"},
	{"scale", OPT_SCALE, required_argument, RUNS, "X", "a number",
	 "multiply the random inputs by X, up to 1e38 (large\nvalues test overflow)"},
	{"tune", OPT_TUNE, no_argument, RUNS, NULL, NULL,
	 "a measured choice: a matmul's schedule candidates are\n"
	 "timed on the GPU first and the fastest runs (kept in the\n"
	 "cache's tune/ folder for the next run; $WSFUSE_TUNE=1 too)"},
	{"help", 'h', no_argument, ~0u, NULL, NULL, "print this help"},
};

static const char footer[] =
	"numbers are decimal digits (X may have a fraction and an exponent: 2.5e3);\n"
	"a sign, a suffix or a value out of range is a usage error.\n"
	"\n"
	"exit status: 0 ok, 1 bad input, 2 usage, 3 no GPU, 4 check failed,\n"
	"             5 internal, NVRTC or CUDA error, 6 kernel family not built yet\n"
	"\n"
	"environment: WSFUSE_CACHE_DIR, WSFUSE_CACHE=0, WSFUSE_LINEINFO=1, WSFUSE_TUNE=1,\n"
	"             WSFUSE_LIBCUDA_PATH, WSFUSE_NVRTC_PATH, WSFUSE_DUMP=OUTPUT,... (write\n"
	"             those outputs to WSFUSE_DUMP_DIR/NAME-KEY/NAME.EXT on every compile;\n"
	"             all: every one)\n";

typedef struct Args {
	Cmd cmd;
	const char *spec;
	const char *out;
	const char *emit;
	char iters_opt[48];     /* --iters as written, for the message when --bench is absent */
	int check, bench, iters, help, lineinfo, verbose, tune;
	uint64_t seed;
	double scale;
} Args;

static void
print_diag(void *user, WsfSeverity sev, const char *msg)
{
	(void)user;
	(void)sev;
	fprintf(stderr, "%s\n", msg);
}

static void
print_dump(void *user, const char *pass, const char *text)
{
	(void)user;
	fprintf(stderr, "// ---- after pass %s ----\n%s", pass, text);
}

/* The command whose synopsis a usage error shows (CMD_NONE: all of them). */
static Cmd usage_cmd;

static void
print_synopsis(FILE *fp, Cmd only)
{
	int c, first = 1;

	for (c = CMD_COMPILE; c < CMD_COUNT; c++)
		if (!only || c == (int)only) {
			fprintf(fp, "%s wsfuse %s%s%s\n", first ? "usage:" : "      ", cmds[c].name,
			        *cmds[c].synopsis ? " " : "", cmds[c].synopsis);
			first = 0;
		}
	if (!only)
		fputs("       wsfuse --help | --version\n", fp);
}

/* Prints "wsfuse: " FMT (with ARG, shortened and on one line) and the synopsis; the exit status. */
static int
usage_error(const char *fmt, const char *arg)
{
	char shown[80], *p;

	snprintf(shown, sizeof shown, "%.64s%s", arg, strlen(arg) > 64 ? "..." : "");
	for (p = shown; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	fputs("wsfuse: ", stderr);
	fprintf(stderr, fmt, shown);
	fputs("\n", stderr);
	print_synopsis(stderr, usage_cmd);
	if (usage_cmd)
		fprintf(stderr, "wsfuse %s --help lists its options.\n", cmds[usage_cmd].name);
	else
		fputs("wsfuse --help lists the commands and options.\n", stderr);
	return EXIT_USAGE;
}

/* Prints FMT with ARG and a did-you-mean (if SUGGEST is not NULL) as a usage error. */
static int
usage_error_hint(const char *fmt, const char *arg, const char *suggest)
{
	char buf[256];
	size_t n;

	if (!suggest)
		return usage_error(fmt, arg);
	snprintf(buf, sizeof buf, "%s: did you mean '", fmt);
	/* SUGGEST may hold what the user typed: each '%' doubled, it stays text */
	for (n = strlen(buf); *suggest && n + 8 < sizeof buf; suggest++) {
		if (*suggest == '%')
			buf[n++] = '%';
		buf[n++] = *suggest;
	}
	snprintf(buf + n, sizeof buf - n, "'?");
	return usage_error(buf, arg);
}

/*
 * Edit distance of A and B (insertions, deletions, substitutions and swaps
 * of neighbours each count 1), or a large number when either is long.
 */
static int
distance(const char *a, const char *b)
{
	int d[33][33], i, j, n = (int)strlen(a), m = (int)strlen(b);

	if (n > 32 || m > 32)
		return 99;
	for (i = 0; i <= n; i++)
		d[i][0] = i;
	for (j = 0; j <= m; j++)
		d[0][j] = j;
	for (i = 1; i <= n; i++)
		for (j = 1; j <= m; j++) {
			int v = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);

			if (d[i - 1][j] + 1 < v)
				v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	return d[n][m];
}

/* Is WORD close enough to CAND to suggest it?  The closest candidate wins (see best_match). */
static int
closeness(const char *word, const char *cand)
{
	int d = distance(word, cand), n = (int)strlen(word);

	return d <= 2 && d < n && d < (int)strlen(cand) ? d : -1;
}

/* Keeps in *BEST the closest candidate to WORD so far (*BESTD its distance). */
static void
best_match(const char *word, const char *cand, const char **best, int *bestd)
{
	int d = cand ? closeness(word, cand) : -1;

	if (d >= 0 && (!*best || d < *bestd)) {
		*best = cand;
		*bestd = d;
	}
}

static Cmd
cmd_from_name(const char *name)
{
	int c;

	for (c = CMD_COMPILE; c < CMD_COUNT; c++)
		if (strcmp(cmds[c].name, name) == 0)
			return (Cmd)c;
	return CMD_NONE;
}

/* The commands that take option O, as "compile" or "run, check and bench". */
static const char *
takers(const struct Opt *o)
{
	if ((o->cmds & BUILDS) == BUILDS)
		return "compile, run, check and bench";
	if ((o->cmds & BUILDS) == RUNS)
		return "run, check and bench";
	return "compile";
}

/* The usage error for option O (written as SPELLED), which command CMD does not take. */
static int
not_for(Cmd cmd, const struct Opt *o, const char *spelled)
{
	char fmt[200];

	snprintf(fmt, sizeof fmt, "'%%s' is not an option of %s: %s take%s it", cmds[cmd].name, takers(o),
	         strchr(takers(o), ',') ? "" : "s");
	return usage_error(fmt, spelled);
}

static const struct Opt *
opt_by_code(int code)
{
	int i;

	for (i = 0; i < countof(opts); i++)
		if (opts[i].code == code)
			return &opts[i];
	return NULL;
}

/* The long option called NAME (LEN bytes), or NULL. */
static const struct Opt *
opt_by_name(const char *name, size_t len)
{
	int i;

	for (i = 0; i < countof(opts); i++)
		if (opts[i].name && strlen(opts[i].name) == len && strncmp(opts[i].name, name, len) == 0)
			return &opts[i];
	return NULL;
}

/* "-o" or "--emit": how option O is written. */
static const char *
opt_spelling(const struct Opt *o, char buf[40])
{
	if (o->name)
		snprintf(buf, 40, "--%s", o->name);
	else
		snprintf(buf, 40, "-%c", o->code);
	return buf;
}

/* Prints option O's help to FP: its spelling, then its help, lines after the first indented. */
static void
print_opt(FILE *fp, const struct Opt *o)
{
	char left[64];
	const char *h;
	int n;

	if (o->name && o->code < 128)
		n = snprintf(left, sizeof left, "-%c, --%s%s%s", o->code, o->name, o->arg ? "=" : "",
		             o->arg ? o->arg : "");
	else if (o->name)
		n = snprintf(left, sizeof left, "--%s%s%s", o->name, o->arg ? "=" : "", o->arg ? o->arg : "");
	else
		n = snprintf(left, sizeof left, "-%c %s", o->code, o->arg ? o->arg : "");
	fprintf(fp, "  %-20s%s", left, n > 19 ? "\n                      " : "");
	for (h = o->help; *h; h++)
		fputs(*h == '\n' ? "\n                      " : (char[2]){*h, 0}, fp);
	fputs("\n", fp);
}

static void
print_pass_names(FILE *fp)
{
	const char *name;
	int i;

	fputs("passes, in the order they run (for --dump-after):\n ", fp);
	for (i = 0; (name = wsf_pass_name(i)); i++)
		fprintf(fp, " %s", name);
	fputs("\n", fp);
}

/* The help of command CMD, or of wsfuse (CMD_NONE), to standard output. */
static int
print_help(Cmd cmd)
{
	int i, c;

	print_synopsis(stdout, cmd);
	fputs("\n", stdout);
	if (cmd) {
		fputs(cmds[cmd].about, stdout);
	} else {
		fputs("wsfuse compiles a fusion spec (YAML; see docs/spec.md) into one CUDA kernel for\n"
		      "Hopper (sm_90a), built by NVRTC and launched through the CUDA driver.\n\n", stdout);
		fputs("commands:\n", stdout);
		for (c = CMD_COMPILE; c < CMD_COUNT; c++)
			printf("  %-9s %s\n", cmds[c].name, cmds[c].what);
	}
	if (cmd != CMD_HELP) {
		/* wsfuse --help: the options in groups by the commands that take them */
		static const unsigned groups[] = {ON(CMD_COMPILE), BUILDS, RUNS, ~0u};
		int g;

		for (g = 0; g < countof(groups); g++) {
			unsigned want = cmd ? ON(cmd) : groups[g];
			int shown = 0;

			if (cmd && g > 0)
				break;
			for (i = 0; i < countof(opts); i++) {
				if (cmd ? !(opts[i].cmds & want) : opts[i].cmds != want)
					continue;
				if (!shown++) {
					if (cmd)
						fputs("\noptions:\n", stdout);
					else if (want == ~0u)
						fputs("\noptions of every command:\n", stdout);
					else
						printf("\noptions of %s:\n", takers(&opts[i]));
				}
				print_opt(stdout, &opts[i]);
			}
		}
	}
	if (!cmd || (ON(cmd) & BUILDS)) {
		fputs("\n", stdout);
		print_pass_names(stdout);
		fputs("\n", stdout);
		fputs(footer, stdout);
	}
	return 0;
}

/* A usage error for VALUE of option OPT, which should be WANT. */
static int
bad_value(const char *opt, const char *want, const char *value)
{
	char fmt[160];

	snprintf(fmt, sizeof fmt, "%s expects %s, saw '%%s'", opt, want);
	return usage_error(fmt, value);
}

static bool
is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/*
 * The one integer reader: all of S is decimal digits (no sign, space, base
 * prefix or suffix) and its value, *V, is at most HI (no overflow).
 */
static bool
read_uint(const char *s, uint64_t hi, uint64_t *v)
{
	const char *p;
	uint64_t n = 0;

	for (p = s; is_digit(*p); p++) {
		unsigned d = (unsigned)(*p - '0');

		if (n > (hi - d) / 10 || d > hi)
			return false;
		n = n * 10 + d;
	}
	*v = n;
	return p > s && !*p;
}

/* Integer option OPT's VALUE in [LO, HI]: 0 and *V, or a usage error naming OPT and VALUE. */
static int
parse_int(const char *opt, const char *value, uint64_t lo, uint64_t hi, uint64_t *v)
{
	char want[96];
	uint64_t n;

	if (read_uint(value, hi, &n) && n >= lo) {
		*v = n;
		return 0;
	}
	snprintf(want, sizeof want, "an integer from %" PRIu64 " to %" PRIu64, lo, hi);
	return bad_value(opt, want, value);
}

/*
 * The one reader of a real option: VALUE is a decimal number (1000, 0.5,
 * 2.5e3; no sign, inf, nan or hex) that is finite and in (0, HI].  0 and *V,
 * or a usage error that names OPT and VALUE.
 */
static int
parse_real(const char *opt, const char *value, double hi, const char *want, double *v)
{
	const char *p = value;
	bool digits = false;
	char *end;
	double x;

	for (; is_digit(*p); p++)
		digits = true;
	if (*p == '.')
		for (p++; is_digit(*p); p++)
			digits = true;
	if (digits && (*p == 'e' || *p == 'E')) {
		p += 1 + (p[1] == '+' || p[1] == '-');
		digits = is_digit(*p);
		while (is_digit(*p))
			p++;
	}
	if (digits && !*p) {
		x = strtod(value, &end);
		if (!*end && isfinite(x) && x > 0 && x <= hi) {
			*v = x;
			return 0;
		}
	}
	return bad_value(opt, want, value);
}

static int
exit_code(WsfStatus s)
{
	switch (s) {
	case WSF_OK:
		return 0;
	case WSF_ERR_INPUT:
	case WSF_ERR_IO:
		return EXIT_INPUT;
	case WSF_ERR_UNSUPPORTED:
		return EXIT_UNSUPPORTED;
	case WSF_ERR_USAGE:
		return EXIT_USAGE;
	case WSF_ERR_NO_GPU:
		return EXIT_NO_GPU;
	default:
		return EXIT_INTERNAL;
	}
}

/* Parses "-D NAME=VALUE" into the context; the library checks NAME and the range of VALUE. */
static int
bind_size(WsfContext *ctx, const char *def)
{
	const char *eq = strchr(def, '=');
	char *name;
	uint64_t v;
	int rc;

	if (!eq || eq == def)
		return usage_error("-D expects NAME=VALUE, saw '%s'", def);
	if (!read_uint(eq + 1, INT64_MAX, &v))
		return usage_error("-D expects NAME=VALUE with VALUE a positive integer (decimal digits), "
		                   "saw '%s'", def);
	if (!(name = malloc((size_t)(eq - def) + 1))) {
		fputs("wsfuse: out of memory\n", stderr);
		return EXIT_INTERNAL;
	}
	memcpy(name, def, (size_t)(eq - def));
	name[eq - def] = 0;
	rc = exit_code(wsf_set_size(ctx, name, (int64_t)v));
	free(name);
	return rc;
}

/*
 * Standard input, up to one byte past the spec limit (wsf_compile_string
 * reports a longer spec, and endless input ends).  NULL when out of memory
 * or unreadable, after a message.
 */
static char *
read_stdin(size_t *len)
{
	size_t cap = 0, n;
	char *buf = NULL, *t;

	*len = 0;
	do {
		if (*len == cap) {
			if (!(t = realloc(buf, cap = cap ? 2 * cap : 4096))) {
				fputs("wsfuse: out of memory\n", stderr);
				free(buf);
				return NULL;
			}
			buf = t;
		}
		n = fread(buf + *len, 1, cap - *len < WSF_MAX_SPEC_BYTES + 1 - *len ? cap - *len :
		                         WSF_MAX_SPEC_BYTES + 1 - *len, stdin);
		*len += n;
	} while (n > 0 && *len <= WSF_MAX_SPEC_BYTES);
	if (ferror(stdin)) {
		fprintf(stderr, "wsfuse: cannot read standard input: %s\n", strerror(errno));
		free(buf);
		return NULL;
	}
	return buf;
}

/* Says that standard output could not be written, and why. */
static int
stdout_error(void)
{
	fprintf(stderr, "wsfuse: cannot write to standard output: %s\n",
	        errno ? strerror(errno) : "write error");
	return EXIT_INPUT;
}

/* RC, unless it is 0 and what was printed did not all arrive (a full disk, a closed pipe). */
static int
flush_stdout(int rc)
{
	if (rc == 0 && (fflush(stdout) != 0 || ferror(stdout)))
		return stdout_error();
	return rc;
}

/* "fusion-ir, kernel-ir, ..., cubin": the --emit values. */
static const char *
emit_names(void)
{
	static char names[256];
	int i;

	if (!names[0])
		for (i = WSF_STAGE_FUSION_IR; i <= WSF_STAGE_COUNT; i++)
			snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i > 1 ? ", " : "",
			         i < WSF_STAGE_COUNT ? wsf_stage_name((WsfStage)i) : "grad");
	return names;
}

/*
 * The usage error for an option getopt_long refused for command CMD: ELEM
 * is the argument it came from; SHORTC the letter when it was a short one.
 */
static int
refused_option(Cmd cmd, const char *elem, int shortc)
{
	const struct Opt *o;
	const char *best = NULL;
	char fmt[256], sp[40], word[40];
	size_t len;
	int i, bestd = 0, n = 0;

	if (elem[0] != '-' || elem[1] != '-') {
		o = opt_by_code(shortc);
		snprintf(sp, sizeof sp, "-%c", shortc > 32 && shortc < 127 ? shortc : '?');
		if (o && !(o->cmds & ON(cmd)))
			return not_for(cmd, o, sp);
		/* a long option with one dash, as nvcc spells them: -lineinfo */
		len = strcspn(elem + 1, "=");
		snprintf(word, sizeof word, "%.*s", (int)(len < 32 ? len : 32), elem + 1);
		if (len > 1 && (o = opt_by_name(word, strlen(word))) && (o->cmds & ON(cmd))) {
			snprintf(fmt, sizeof fmt, "-%.64s", elem);
			return usage_error_hint("unknown option '%s'", elem, fmt);
		}
		return usage_error("unknown option '%s'", sp);
	}
	len = strcspn(elem + 2, "=");
	o = opt_by_name(elem + 2, len);
	if (o && (o->cmds & ON(cmd)) && o->has_arg == no_argument && elem[2 + len] == '=')
		return usage_error("'%s' takes no value", elem);
	if (o && !(o->cmds & ON(cmd)))
		return not_for(cmd, o, opt_spelling(o, sp));
	/* a prefix of several options: getopt_long takes a prefix of one */
	fmt[0] = 0;
	for (i = 0; i < countof(opts); i++)
		if (opts[i].name && (opts[i].cmds & ON(cmd)) && strncmp(opts[i].name, elem + 2, len) == 0) {
			snprintf(fmt + strlen(fmt), sizeof fmt - strlen(fmt), "%s--%s", n++ ? ", " : "", opts[i].name);
		}
	if (n > 1 && len > 0) {
		char msg[300];

		snprintf(msg, sizeof msg, "option '%%s' is ambiguous: %s", fmt);
		return usage_error(msg, elem);
	}
	snprintf(word, sizeof word, "%.*s", (int)(len < 32 ? len : 32), elem + 2);
	for (i = 0; i < countof(opts); i++)
		if (opts[i].cmds & ON(cmd))
			best_match(word, opts[i].name, &best, &bestd);
	if (best) {
		snprintf(sp, sizeof sp, "--%s", best);
		return usage_error_hint("unknown option '%s'", elem, sp);
	}
	return usage_error("unknown option '%s'", elem);
}

/* 0 if LIST is "all" or a comma list of pass names, else a usage error naming the first that is not. */
static int
check_passes(const char *list)
{
	const char *p = list, *name, *best = NULL;
	char item[40], fmt[400];
	int i, bestd = 0, known;

	if (strcmp(list, "all") == 0)
		return 0;
	do {
		size_t len = strcspn(p, ",");

		snprintf(item, sizeof item, "%.*s", (int)(len < 32 ? len : 32), p);
		best = NULL;
		for (i = 0, known = 0; (name = wsf_pass_name(i)); i++) {
			known |= strlen(name) == len && strncmp(name, p, len) == 0;
			best_match(item, name, &best, &bestd);
		}
		if (!known) {
			snprintf(fmt, sizeof fmt, "unknown pass '%%s' in --dump-after (expected all, or pass names: ");
			for (i = 0; (name = wsf_pass_name(i)); i++)
				snprintf(fmt + strlen(fmt), sizeof fmt - strlen(fmt), "%s%s", i ? ", " : "", name);
			snprintf(fmt + strlen(fmt), sizeof fmt - strlen(fmt), ")");
			if (best)
				snprintf(fmt, sizeof fmt, "unknown pass '%%s' in --dump-after: did you mean '%s'?", best);
			return usage_error(fmt, item);
		}
		p += len;
	} while (*p++);
	return 0;
}

/* Takes option CODE with value ARG (NULL: none), written as SPELLED. */
static int
take_option(WsfContext *ctx, Args *a, int code, const char *arg, const char *spelled)
{
	uint64_t v;
	int rc, i, bestd = 0;
	const char *best = NULL;

	switch (code) {
	case 'h':
		a->help = 1;
		return 0;
	case OPT_EMIT:
		if (!wsf_stage_from_name(arg) && strcmp(arg, "grad") != 0) {
			char fmt[300];

			for (i = WSF_STAGE_FUSION_IR; i < WSF_STAGE_COUNT; i++)
				best_match(arg, wsf_stage_name((WsfStage)i), &best, &bestd);
			best_match(arg, "grad", &best, &bestd);
			if (best)
				snprintf(fmt, sizeof fmt, "unknown --emit value '%%s': did you mean '%s'?", best);
			else
				snprintf(fmt, sizeof fmt, "unknown --emit value '%%s' (expected %s)", emit_names());
			return usage_error(fmt, arg);
		}
		a->emit = arg;
		return 0;
	case 'o':
		if (!*arg)
			return usage_error("%s needs a file name", "-o");
		a->out = arg;
		return 0;
	case 'D':
		return bind_size(ctx, arg);
	case OPT_DUMP_AFTER:
		if ((rc = check_passes(arg)))
			return rc;
		return wsf_set_option(ctx, "dump-after", arg) ? EXIT_USAGE : 0;
	case OPT_CACHE_DIR:
		if (!*arg)
			return usage_error("%s needs a directory", "--cache-dir");
		return wsf_set_option(ctx, "cache-dir", arg) ? EXIT_USAGE : 0;
	case OPT_NO_CACHE:
		wsf_set_option(ctx, "cache", "0");
		return 0;
	case 'v':
		a->verbose = 1;
		return 0;
	case OPT_LAYOUT:
	case OPT_GRAD_OF:
		return wsf_set_option(ctx, code == OPT_LAYOUT ? "layout" : "grad-of", arg) ? EXIT_USAGE : 0;
	case OPT_LINEINFO:
		a->lineinfo = 1;
		wsf_set_option(ctx, "lineinfo", "1");
		return 0;
	case OPT_CHECK:
		a->check = 1;
		return 0;
	case OPT_BENCH:
		a->bench = 1;
		return 0;
	case OPT_ITERS:
		if ((rc = parse_int("--iters", arg, 1, INT_MAX, &v)))
			return rc;
		a->iters = (int)v;
		snprintf(a->iters_opt, sizeof a->iters_opt, "%s", spelled);
		return 0;
	case OPT_SEED:
		if ((rc = parse_int("--seed", arg, 0, UINT64_MAX, &v)))
			return rc;
		a->seed = v;
		return 0;
	case OPT_TUNE:
		a->tune = 1;
		wsf_set_option(ctx, "tune", "1");
		return 0;
	case OPT_SCALE:
		/* [-2, 2] times the scale stays finite in f32 */
		return parse_real("--scale", arg, 1e38, "a positive number up to 1e38 (such as 1000 or 2.5e3)",
		                  &a->scale);
	}
	return usage_error("unknown option '%s'", spelled);
}

static int
take_spec(Args *a, const char *s)
{
	if (a->spec)
		return usage_error("more than one SPEC: '%s'", s);
	a->spec = s;
	return 0;
}

/* Reads the arguments of command A->cmd: ARGV[0] is the command, then its options and SPEC. */
static int
parse_args(int argc, char **argv, WsfContext *ctx, Args *a)
{
	struct option lo[countof(opts) + 1];
	char shorts[2 * countof(opts) + 4] = "-:";  /* -: arguments in order (POSIXLY_CORRECT or not), ':' for missing values */
	int i, n = 0, rc;

	memset(lo, 0, sizeof lo);
	for (i = 0; i < countof(opts); i++) {
		const struct Opt *o = &opts[i];

		if (!(o->cmds & ON(a->cmd)))
			continue;
		if (o->name)
			lo[n++] = (struct option){o->name, o->has_arg, NULL, o->code};
		if (o->code < 128) {
			size_t k = strlen(shorts);

			shorts[k] = (char)o->code;
			shorts[k + 1] = o->has_arg == required_argument ? ':' : 0;
			shorts[k + 2] = 0;
		}
	}
	opterr = 0;
	optind = 1;
	for (;;) {
		int before = optind, code = getopt_long(argc, argv, shorts, lo, NULL);
		const char *elem = before < argc ? argv[before] : "";
		char spelled[48];

		if (code == -1)
			break;
		/* what the user wrote, up to '=': "-o", "--emit", "--em" */
		if (elem[0] == '-' && elem[1] == '-')
			snprintf(spelled, sizeof spelled, "%.*s", (int)strcspn(elem, "="), elem);
		else
			snprintf(spelled, sizeof spelled, "-%c", optopt > 32 && optopt < 127 ? optopt : code);
		if (code == 1) {
			rc = take_spec(a, optarg);
		} else if (code == '?') {
			rc = refused_option(a->cmd, elem, optopt);
		} else if (code == ':') {
			const struct Opt *o = opt_by_code(optopt);
			char fmt[320];

			if (o && o->code == OPT_EMIT)
				snprintf(fmt, sizeof fmt, "%%s needs one of %s", emit_names());
			else
				snprintf(fmt, sizeof fmt, "%%s needs %s", o ? o->need : "a value");
			if (o && elem[1] == '-' && o->name)
				snprintf(spelled, sizeof spelled, "--%s", o->name);
			rc = usage_error(fmt, spelled);
		} else {
			if (elem[0] == '-' && elem[1] != '-')
				snprintf(spelled, sizeof spelled, "-%c", code);
			rc = take_option(ctx, a, code, optarg, spelled);
		}
		if (rc || a->help)
			return rc;
	}
	for (; optind < argc; optind++)   /* after "--" */
		if ((rc = take_spec(a, argv[optind])))
			return rc;
	if (a->cmd == CMD_ENV)
		return a->spec ? usage_error("env takes no SPEC, saw '%s'", a->spec) : 0;
	if (a->cmd == CMD_CHECK)
		a->check = 1;
	if (a->cmd == CMD_BENCH)
		a->bench = 1;
	if (!a->spec)
		return usage_error("%s needs a SPEC", cmds[a->cmd].name);
	if (a->verbose && a->emit && wsf_stage_made_by(wsf_stage_from_name(a->emit)) < WSF_STAGE_KERNEL_IR)
		return usage_error("-v reports what the kernel takes; --emit=%s stops before there is a kernel",
		                   a->emit);
	if (a->lineinfo && a->emit && wsf_stage_made_by(wsf_stage_from_name(a->emit)) < WSF_STAGE_PTX)
		return usage_error("--lineinfo adds line tables to the PTX and cubin; --emit=%s stops before them",
		                   a->emit);
	if (a->iters_opt[0] && !a->bench)
		return usage_error("%s counts the launches --bench times: add --bench, or use wsfuse bench",
		                   a->iters_opt);
	return 0;
}

static WsfStatus
compile_spec(WsfContext *ctx, const char *spec, WsfKernel **k)
{
	WsfStatus s;
	size_t len;
	char *text;

	if (strcmp(spec, "-") != 0)
		return wsf_compile_file(ctx, spec, k);
	if (!(text = read_stdin(&len)))
		return WSF_ERR_IO;
	s = wsf_compile_string(ctx, "<stdin>", text, len, k);
	free(text);
	return s;
}

/* -v: what kernel K takes, from wsf_kernel_stats, to standard error. */
static void
print_stats(const WsfKernel *k)
{
	WsfKernelStats st;
	char sizes[512] = "", unbound[512] = "";
	int i, d, n = wsf_kernel_num_args(k);

	if (wsf_kernel_stats(k, &st) != WSF_OK)
		return;
	/* the sizes it was compiled at, each once; apart, those with no value */
	for (i = 0; i < n; i++)
		for (d = 0; d < wsf_kernel_arg_rank(k, i); d++) {
			const char *name = wsf_kernel_arg_dim_name(k, i, d);
			int64_t v = wsf_kernel_arg_dim(k, i, d);
			char item[96], *list = v < 0 ? unbound : sizes;

			if (!name)
				continue;
			if (v < 0)
				snprintf(item, sizeof item, " %s", name);
			else
				snprintf(item, sizeof item, " %s=%" PRId64, name, v);
			if (!strstr(list, item) && strlen(list) + strlen(item) < sizeof sizes)
				strcat(list, item);
		}
	fprintf(stderr, "kernel wsfuse_%s\n", wsf_kernel_name(k));
	fprintf(stderr, "  threads: %d a CTA\n", st.threads);
	if (st.registers >= 0)
		fprintf(stderr, "  registers: %d a thread; %d bytes spill stores, %d bytes spill loads, %d bytes stack\n",
		        st.registers, st.spill_stores, st.spill_loads, st.stack_bytes);
	else
		fputs("  registers: not known: ptxas counts them (--emit=ptx, cubin or ptxas)\n", stderr);
	if (st.smem_static >= 0)
		fprintf(stderr, "  shared memory: %d bytes a CTA, %d dynamic + %d static\n",
		        st.smem_dynamic + st.smem_static, st.smem_dynamic, st.smem_static);
	else
		fprintf(stderr, "  shared memory: %d bytes a CTA dynamic, static not known before ptxas\n",
		        st.smem_dynamic);
	if (st.ctas_per_sm >= 0)
		fprintf(stderr, "  occupancy: %d CTAs an SM (sm_90's limits)\n", st.ctas_per_sm);
	if (st.tiles < 0 && *unbound)
		fprintf(stderr, "  grid: %s; the tiles depend on sizes with no value here (-D gives one):%s\n",
		        st.persistent ? "persistent over tiles" : "one CTA a tile", unbound);
	else if (st.tiles < 0)   /* every size has a value, but a launch would refuse them (wsf_kernel_launch) */
		fprintf(stderr, "  grid: %s; none at%s: a launch at these sizes is refused\n",
		        st.persistent ? "persistent over tiles" : "one CTA a tile", sizes);
	else if (st.persistent && st.workspace && st.ctas_per_sm >= 0)   /* stream-K: every CTA (launch.c) */
		fprintf(stderr, "  grid: SMs x %d CTAs, persistent over %" PRId64 " tiles, at%s\n", st.ctas_per_sm,
		        st.tiles, sizes);
	else if (st.persistent && st.ctas_per_sm >= 0)
		fprintf(stderr, "  grid: min(%" PRId64 " tiles, SMs x %d) CTAs, persistent over tiles, at%s\n",
		        st.tiles, st.ctas_per_sm, sizes);
	else if (st.persistent)
		fprintf(stderr, "  grid: min(%" PRId64 " tiles, SMs x CTAs an SM), persistent over tiles, at%s\n",
		        st.tiles, sizes);
	else
		fprintf(stderr, "  grid: %" PRId64 " CTA%s, one a tile, at%s\n", st.grid, st.grid == 1 ? "" : "s", sizes);
	if (st.cluster > 1)
		fprintf(stderr, "  clusters of %d CTAs: the persistent grid is the clusters that fit at once\n", st.cluster);
	if (st.view_rows + st.view_cols + st.view_elems + st.view_tiles)
		fprintf(stderr, "  views of inputs, read through the input's pointer: %d as rows of 16-byte loads at an "
		        "offset, %d one element a row, %d element by element, %d as tiles exchanged through shared "
		        "memory (a transpose)\n", st.view_rows, st.view_cols, st.view_elems, st.view_tiles);
	if (st.place_rows + st.place_elems)
		fprintf(stderr, "  outputs a scatter writes in place into an input, its part alone: %d as rows of 16-byte "
		        "stores at their place, %d element by element\n", st.place_rows, st.place_elems);
	if (st.workspace)
		fprintf(stderr, "  stream-K: the last wave's tiles (all, when fewer than the CTAs) split over the CTAs by "
		        "k-steps; a workspace of %d bytes a CTA and 4 KiB of flags for each stream it is launched on\n",
		        st.workspace);
}

/* --emit=grad: the backward of the spec, a spec (docs/spec.md, Gradients), to standard output or -o's file. */
static int
cmd_grad(WsfContext *ctx, Args *a)
{
	char *text = NULL, *yaml = NULL;
	size_t len = 0, n = 0;
	bool out = a->out && strcmp(a->out, "-") != 0, ok = false;
	FILE *fp;
	int rc;

	if (strcmp(a->spec, "-") != 0)
		rc = exit_code(wsf_grad_file(ctx, a->spec, &yaml, &n));
	else if ((text = read_stdin(&len)))
		rc = exit_code(wsf_grad_string(ctx, "<stdin>", text, len, &yaml, &n));
	else
		rc = EXIT_INPUT;
	free(text);
	if (rc == 0 && (fp = out ? fopen(a->out, "w") : stdout)) {
		errno = 0;
		ok = fwrite(yaml, 1, n, fp) == n && fflush(fp) == 0;
		ok = (!out || fclose(fp) == 0) && ok;
	}
	if (rc == 0 && !ok) {
		fprintf(stderr, "wsfuse: cannot write %s: %s\n", out ? a->out : "to standard output",
		        errno ? strerror(errno) : "write error");
		rc = EXIT_INPUT;
	}
	free(yaml);
	return rc;
}

static int
cmd_compile(WsfContext *ctx, Args *a)
{
	WsfStage stage = a->emit ? wsf_stage_from_name(a->emit) : WSF_STAGE_CUBIN;
	WsfKernel *k = NULL;
	const char *text;
	char *defname = NULL;
	size_t len = 0;
	int rc;

	if (a->emit && strcmp(a->emit, "grad") == 0)
		return cmd_grad(ctx, a);
	wsf_set_option(ctx, "stop-after", wsf_stage_name(stage));
	if ((rc = exit_code(compile_spec(ctx, a->spec, &k))))
		return rc;
	if (a->verbose)
		print_stats(k);
	if (a->out ? strcmp(a->out, "-") == 0 : stage != WSF_STAGE_CUBIN) {
		text = wsf_kernel_text(k, stage, &len);
		errno = 0;
		rc = fwrite(text, 1, len, stdout) == len && fflush(stdout) == 0 ? 0 : stdout_error();
		wsf_kernel_delete(k);
		return rc;
	}
	if (!a->out) {
		const char *name = wsf_kernel_name(k);

		if (!(defname = malloc(strlen(name) + 8))) {
			wsf_kernel_delete(k);
			return EXIT_INTERNAL;
		}
		sprintf(defname, "%s.cubin", name);
	}
	rc = exit_code(wsf_kernel_write(ctx, k, stage, a->out ? a->out : defname));
	free(defname);
	wsf_kernel_delete(k);
	return rc;
}

static int
cmd_run(WsfContext *ctx, Args *a)
{
	WsfRunOptions o = {0};
	WsfRunReport r;
	WsfKernel *k = NULL;
	WsfStatus s;
	int i, rc;

	if ((rc = exit_code(compile_spec(ctx, a->spec, &k))))
		return rc;
	if (a->verbose)
		print_stats(k);
	o.check = a->check;
	o.bench = a->bench;
	o.iters = a->iters;
	o.seed = a->seed;
	o.scale = a->scale;
	s = wsf_kernel_run(ctx, k, &o, &r);
	if (s == WSF_ERR_NO_GPU) {
		size_t n = 0;

		wsf_kernel_text(k, WSF_STAGE_CUBIN, &n);
		fprintf(stderr, "wsfuse: kernel '%s' compiled to an sm_90a cubin (%zu bytes), not run: no GPU\n",
		        wsf_kernel_name(k), n);
		wsf_kernel_delete(k);
		return EXIT_NO_GPU;
	}
	if (s != WSF_OK) {
		wsf_kernel_delete(k);
		return exit_code(s);
	}
	if (a->tune)   /* what the measured choice ran, as a schedule line to keep in the spec */
		printf("tune %s: %s\n", wsf_kernel_name(k),
		       wsf_kernel_tuned(k) ? wsf_kernel_tuned(k) : "nothing to choose (one schedule for this kernel)");
	for (i = 0; o.check && i < r.noutputs; i++)
		printf("check %-16s rel_err %.3e (tolerance %.1e)%s\n",
		       wsf_kernel_arg_name(k, wsf_kernel_num_args(k) - r.noutputs + i), r.rel_err[i],
		       r.tolerance[i], r.unwritten[i] ? " UNWRITTEN ELEMENTS" : "");
	if (o.check)
		printf("check %s: %s\n", wsf_kernel_name(k), r.passed ? "passed" : "FAILED");
	if (o.bench)
		printf("bench %s: %.4f ms, %.1f GB/s (%.0f bytes)\n", wsf_kernel_name(k), r.ms, r.gbps, r.bytes);
	if (!o.check && !o.bench)
		printf("ran %s\n", wsf_kernel_name(k));
	rc = o.check && !r.passed ? EXIT_CHECK : 0;
	wsf_kernel_delete(k);
	return rc;
}

/* wsfuse --version (the first lines) and wsfuse env (FULL): what wsf_environment finds. */
static int
print_environment(WsfContext *ctx, bool full)
{
	const char *text = wsf_environment(ctx, full);

	if (!text) {
		fputs("wsfuse: out of memory\n", stderr);
		return EXIT_INTERNAL;
	}
	fputs(text, stdout);
	return 0;
}

/* The usage error for FIRST, the first argument, which names no command. */
static int
no_command(const char *first)
{
	static const char *const top[] = {"--help", "--version"};
	const char *best = NULL;
	int c, i, bestd = 0;

	if (first[0] == '-') {
		size_t len = strcspn(first + 2, "=");
		const struct Opt *o = first[1] == '-' ? opt_by_name(first + 2, len) : NULL;

		if (o && o->cmds != ~0u) {
			char fmt[160];

			snprintf(fmt, sizeof fmt, "'%%s' goes after the command (%s)", takers(o));
			return usage_error(fmt, first);
		}
		for (i = 0; i < countof(top); i++)
			best_match(first, top[i], &best, &bestd);
		return usage_error_hint("unknown option '%s'", first, best);
	}
	for (c = CMD_COMPILE; c < CMD_COUNT; c++)
		best_match(first, cmds[c].name, &best, &bestd);
	return usage_error_hint("unknown command '%s'", first, best);
}

int
main(int argc, char **argv)
{
	WsfContext *ctx;
	Args a = {0};
	int rc;

	if (argc < 2)
		return usage_error("%s", "missing command");
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
		return flush_stdout(print_help(CMD_NONE));
	if (!(a.cmd = cmd_from_name(argv[1])) && strcmp(argv[1], "--version") != 0)
		return no_command(argv[1]);
	usage_cmd = a.cmd;
	if (a.cmd == CMD_HELP) {
		if (argc > 3)
			return usage_error("help takes one COMMAND, saw '%s' too", argv[3]);
		if (argc == 2)
			return flush_stdout(print_help(CMD_NONE));
		if (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)
			return flush_stdout(print_help(CMD_HELP));
		if (!(a.cmd = cmd_from_name(argv[2])))
			return no_command(argv[2]);
		return flush_stdout(print_help(a.cmd));
	}
	if (!(ctx = wsf_context_new())) {
		fputs("wsfuse: out of memory\n", stderr);
		return EXIT_INTERNAL;
	}
	wsf_set_diagnostic_handler(ctx, print_diag, NULL);
	wsf_set_dump_handler(ctx, print_dump, NULL);
	if (!a.cmd || a.cmd == CMD_ENV) {   /* --version, env */
		if (!a.cmd && argc > 2)
			rc = usage_error("--version takes nothing after it, saw '%s'", argv[2]);
		else if (!a.cmd || !(rc = parse_args(argc - 1, argv + 1, ctx, &a)))
			rc = a.help ? print_help(a.cmd) : print_environment(ctx, a.cmd == CMD_ENV);
	} else if ((rc = parse_args(argc - 1, argv + 1, ctx, &a)) || a.help)
		rc = rc ? rc : print_help(a.cmd);
	else if (a.cmd == CMD_COMPILE)
		rc = cmd_compile(ctx, &a);
	else
		rc = cmd_run(ctx, &a);
	wsf_context_delete(ctx);
	return flush_stdout(rc);
}
