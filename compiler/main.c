/*
 * main.c: the wsfuse command line.  It uses only the public API
 * (include/wsfuse.h), as any embedding program would.
 *
 * Exit status: 0 ok, 1 bad input (the spec, a size), 2 usage, 3 no GPU,
 * 4 a check failed, 5 an internal, NVRTC or CUDA error, 6 a valid spec whose
 * kernel family this version cannot build yet.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wsfuse.h"

enum {
	EXIT_INPUT = 1,
	EXIT_USAGE = 2,
	EXIT_NO_GPU = 3,
	EXIT_CHECK = 4,
	EXIT_INTERNAL = 5,
	EXIT_UNSUPPORTED = 6
};

static const char usage[] =
	"usage: wsfuse compile SPEC [--emit=STAGE] [-o FILE|-] [-D NAME=VALUE]... [--dump-after=PASS|all]\n"
	"       wsfuse run SPEC [-D NAME=VALUE]... [--check] [--bench] [--iters=N] [--seed=N] [--scale=X]\n"
	"       wsfuse check SPEC [...]    same as run --check\n"
	"       wsfuse bench SPEC [...]    same as run --bench\n"
	"       wsfuse --help | --version\n";

static const char help[] =
	"\n"
	"wsfuse compiles a fusion spec (YAML; see docs/spec.md) into one CUDA kernel for\n"
	"Hopper (sm_90a), built by NVRTC and launched through the CUDA driver.\n"
	"\n"
	"SPEC is a file name, or - for standard input.\n"
	"\n"
	"options:\n"
	"  --emit=STAGE        what compile writes: fusion-ir, kernel-ir, cuda, ptx, cubin\n"
	"                      (default cubin, to NAME.cubin unless -o says otherwise)\n"
	"  -o FILE             output file; - is standard output (default for text stages)\n"
	"  -D NAME=VALUE       bind size NAME to VALUE, 1..2^40 (overrides the spec's sizes: default)\n"
	"  --dump-after=LIST   print the IR to stderr after each named pass (comma list) or all\n"
	"  --cache-dir=DIR     kernel cache directory (default $WSFUSE_CACHE_DIR, ~/.cache/wsfuse)\n"
	"  --no-cache          do not read or write the kernel cache\n"
	"  --check             run compares every output with the host reference\n"
	"  --bench             run times the kernel and prints time and bandwidth\n"
	"  --iters=N           timed launches for --bench, 1..2^31-1 (default 100)\n"
	"  --seed=N            seed of the random inputs, 0..2^64-1\n"
	"  --scale=X           multiply the random inputs by X, up to 1e38 (large values test overflow)\n"
	"\n"
	"numbers are decimal digits (X may have a fraction and an exponent: 2.5e3);\n"
	"a sign, a suffix or a value out of range is a usage error.\n"
	"\n"
	"exit status: 0 ok, 1 bad input, 2 usage, 3 no GPU, 4 check failed,\n"
	"             5 internal, NVRTC or CUDA error, 6 kernel family not built yet\n"
	"\n"
	"environment: WSFUSE_CACHE_DIR, WSFUSE_CACHE=0, WSFUSE_LIBCUDA_PATH, WSFUSE_NVRTC_PATH\n";

typedef struct Args {
	const char *cmd;
	const char *spec;
	const char *out;
	const char *emit;
	int check, bench, iters;
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

/* Prints "wsfuse: " FMT (with ARG, shortened and on one line) and the usage; the exit status. */
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
	fputs(usage, stderr);
	return EXIT_USAGE;
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

static int
parse_args(int argc, char **argv, WsfContext *ctx, Args *a)
{
	uint64_t v;
	int i, rc;

	a->cmd = argv[1];
	for (i = 2; i < argc; i++) {
		const char *s = argv[i];

		if (strncmp(s, "--emit=", 7) == 0) {
			a->emit = s + 7;
			if (!wsf_stage_from_name(a->emit))
				return usage_error("unknown --emit value '%s' (expected fusion-ir, kernel-ir, cuda, ptx or cubin)", a->emit);
		} else if (strcmp(s, "-o") == 0) {
			if (++i == argc || !*argv[i])
				return usage_error("%s needs a file name", "-o");
			a->out = argv[i];
		} else if (strcmp(s, "-D") == 0) {
			if (++i == argc)
				return usage_error("%s needs NAME=VALUE", "-D");
			if ((rc = bind_size(ctx, argv[i])))
				return rc;
		} else if (strncmp(s, "-D", 2) == 0) {
			if ((rc = bind_size(ctx, s + 2)))
				return rc;
		} else if (strncmp(s, "--dump-after=", 13) == 0) {
			if (wsf_set_option(ctx, "dump-after", s + 13))
				return EXIT_USAGE;
		} else if (strncmp(s, "--cache-dir=", 12) == 0) {
			if (!s[12])
				return usage_error("%s needs a directory", "--cache-dir");
			if (wsf_set_option(ctx, "cache-dir", s + 12))
				return EXIT_USAGE;
		} else if (strcmp(s, "--no-cache") == 0) {
			wsf_set_option(ctx, "cache", "0");
		} else if (strcmp(s, "--check") == 0) {
			a->check = 1;
		} else if (strcmp(s, "--bench") == 0) {
			a->bench = 1;
		} else if (strncmp(s, "--iters=", 8) == 0) {
			if ((rc = parse_int("--iters", s + 8, 1, INT_MAX, &v)))
				return rc;
			a->iters = (int)v;
		} else if (strncmp(s, "--seed=", 7) == 0) {
			if ((rc = parse_int("--seed", s + 7, 0, UINT64_MAX, &v)))
				return rc;
			a->seed = v;
		} else if (strncmp(s, "--scale=", 8) == 0) {
			/* [-2, 2] times the scale stays finite in f32 */
			if ((rc = parse_real("--scale", s + 8, 1e38,
			                     "a positive number up to 1e38 (such as 1000 or 2.5e3)", &a->scale)))
				return rc;
		} else if (s[0] == '-' && s[1]) {
			return usage_error("unknown option '%s'", s);
		} else if (a->spec) {
			return usage_error("more than one SPEC: '%s'", s);
		} else {
			a->spec = s;
		}
	}
	if (!a->spec)
		return usage_error("%s needs a SPEC", a->cmd);
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

static int
cmd_compile(WsfContext *ctx, Args *a)
{
	WsfStage stage = a->emit ? wsf_stage_from_name(a->emit) : WSF_STAGE_CUBIN;
	WsfKernel *k = NULL;
	const char *text;
	char *defname = NULL;
	size_t len = 0;
	int rc;

	wsf_set_option(ctx, "stop-after", wsf_stage_name(stage));
	if ((rc = exit_code(compile_spec(ctx, a->spec, &k))))
		return rc;
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

int
main(int argc, char **argv)
{
	WsfContext *ctx;
	Args a = {0};
	int rc;

	if (argc < 2)
		return usage_error("%s", "missing command"), EXIT_USAGE;
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		fputs(usage, stdout);
		fputs(help, stdout);
		return flush_stdout(0);
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("wsfuse %s\n", WSF_VERSION_STRING);
		return flush_stdout(0);
	}
	if (!(ctx = wsf_context_new())) {
		fputs("wsfuse: out of memory\n", stderr);
		return EXIT_INTERNAL;
	}
	wsf_set_diagnostic_handler(ctx, print_diag, NULL);
	wsf_set_dump_handler(ctx, print_dump, NULL);
	if ((rc = parse_args(argc, argv, ctx, &a)))
		goto done;
	if (strcmp(a.cmd, "compile") == 0) {
		rc = cmd_compile(ctx, &a);
	} else if (strcmp(a.cmd, "run") == 0 || strcmp(a.cmd, "check") == 0 || strcmp(a.cmd, "bench") == 0) {
		a.check |= strcmp(a.cmd, "check") == 0;
		a.bench |= strcmp(a.cmd, "bench") == 0;
		rc = cmd_run(ctx, &a);
	} else {
		rc = usage_error("unknown command '%s'", a.cmd);
	}
done:
	wsf_context_delete(ctx);
	return flush_stdout(rc);
}
