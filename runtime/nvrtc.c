/*
 * nvrtc.c: CUDA C++ -> PTX and an sm_90a cubin through NVRTC, via the disk cache.
 *
 * NVRTC is opened with dlopen for each compile ($WSFUSE_NVRTC_PATH when set,
 * which is then the only candidate, else libnvrtc.so.13, .so.12, .so) and its
 * entry points taken with dlsym into an Nvrtc table on the stack, so nothing
 * links against it and nothing global is kept.  RTLD_NODELETE keeps the
 * library mapped after dlclose, so later compiles in the process do not pay
 * for loading it again.
 *
 * The cache key holds nvrtcVersion(), so even a lookup opens NVRTC (about
 * 10 ms once the library is in the page cache); a hit compiles nothing.
 *
 * Every NVRTC call goes through nv_check, which names the call.  A failure
 * after the source is known writes the source (and the full log) to the dump
 * directory and reports, in one diagnostic, the NVRTC result name and
 * version, the options, the first lines of the log and the path of the
 * source.  ptxas warnings that mean the kernel will not run as designed
 * (serialized wgmma, ignored setmaxnreg) are reported the same way.
 */
#define _GNU_SOURCE  /* dladdr: the file NVRTC was loaded from, for bug reports */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nvrtc.h>

#include "runtime.h"

/* Log lines a compile error shows; the rest is in the dumped log. */
#define LOG_LINES 40

/* NVRTC's entry points, with nvrtc.h's prototypes: X(name without "nvrtc", result, params). */
#define NVRTC_FUNCS(X) \
	X(GetErrorString, const char *, (nvrtcResult)) \
	X(Version, nvrtcResult, (int *, int *)) \
	X(GetNumSupportedArchs, nvrtcResult, (int *)) \
	X(GetSupportedArchs, nvrtcResult, (int *)) \
	X(CreateProgram, nvrtcResult, (nvrtcProgram *, const char *, const char *, int, \
	                               const char *const *, const char *const *)) \
	X(DestroyProgram, nvrtcResult, (nvrtcProgram *)) \
	X(CompileProgram, nvrtcResult, (nvrtcProgram, int, const char *const *)) \
	X(GetPTXSize, nvrtcResult, (nvrtcProgram, size_t *)) \
	X(GetPTX, nvrtcResult, (nvrtcProgram, char *)) \
	X(GetCUBINSize, nvrtcResult, (nvrtcProgram, size_t *)) \
	X(GetCUBIN, nvrtcResult, (nvrtcProgram, char *)) \
	X(GetProgramLogSize, nvrtcResult, (nvrtcProgram, size_t *)) \
	X(GetProgramLog, nvrtcResult, (nvrtcProgram, char *))

#define NVRTC_TYPEDEF(fn, ret, params) typedef ret(*Pfn##fn) params;
NVRTC_FUNCS(NVRTC_TYPEDEF)
#undef NVRTC_TYPEDEF

typedef struct Nvrtc {
	void *lib;
	const char *path;  /* what was dlopen'ed */
	int major, minor;
#define NVRTC_FIELD(fn, ret, params) Pfn##fn fn;
	NVRTC_FUNCS(NVRTC_FIELD)
#undef NVRTC_FIELD
} Nvrtc;

static const struct {
	const char *name;
	size_t offset;
} nvrtc_syms[] = {
#define NVRTC_SYM(fn, ret, params) {"nvrtc" #fn, offsetof(Nvrtc, fn)},
	NVRTC_FUNCS(NVRTC_SYM)
#undef NVRTC_SYM
};

/* Part of the cache key: changing one changes every key. */
static const char *const nvrtc_opts[] = {
	"--gpu-architecture=sm_90a",
	"-std=c++17",
	"-default-device",
	"--fmad=true",
	"-DNDEBUG",
	"--ptxas-options=--verbose",
};
/*
 * NVRTC 12.9 and later keep their own cache (in the driver's compute cache)
 * and return an empty ptxas log on its hits, which would hide the warnings
 * checked below and the register report; our disk cache does that job.
 */
#define NVRTC_NO_CACHE "--no-cache"
#define NVRTC_NO_CACHE_SINCE 12090

/*
 * ptxas log text that turns a compile into a failure, and what it means.
 * ptxas reports these as "info": the kernel still runs, correct, but not
 * as the schedule built it (serialized wgmmas leave the tensor cores idle
 * between them).  The codes come first; the texts catch a code a newer
 * ptxas adds.
 */
typedef enum Fatal { FATAL_NONE = 0, FATAL_WGMMA, FATAL_SETMAXNREG, FATAL_COUNT } Fatal;
static const struct {
	const char *name, *means;
} fatal_kinds[FATAL_COUNT] = {
	[FATAL_WGMMA] = {"wgmma serialized", "the wgmmas would run one at a time, not pipelined"},
	[FATAL_SETMAXNREG] = {"setmaxnreg ignored", "the warp roles would keep the registers they start with"},
};
static const struct {
	const char *text;
	Fatal kind;
} fatal_ptxas[] = {
	{"(C7508)", FATAL_SETMAXNREG}, /* no register count at entry */
	{"(C7509)", FATAL_WGMMA},      /* an extern call in the kernel (assert, printf) */
	{"(C7510)", FATAL_WGMMA},      /* a pipeline crosses a function call */
	{"(C7511)", FATAL_WGMMA},      /* too few registers for the pipeline */
	{"(C7515)", FATAL_WGMMA},      /* a non-wgmma instruction writes an accumulator in a stage */
	{"wgmma.mma_async instructions are serialized", FATAL_WGMMA},
	{"'setmaxnreg' ignored", FATAL_SETMAXNREG},
};

/* One compile in progress. */
typedef struct Job {
	Comp *c;
	const RtOptions *o;
	Nvrtc nv;
	const char *name, *src;
	const char *prog;      /* the program's name: NAME.cu, or with line tables its full path */
	const char *cache_dir; /* NULL: the cache is off */
	const char *opts[countof(nvrtc_opts) + 2]; /* the options for this NVRTC and RtOptions */
	int nopts;
	const char *key;       /* NULL until NVRTC's version is known */
	const char *log;       /* NVRTC's log, "" until compiled */
} Job;

/* ---- loading ---- */

static WsfStatus PRINTF_LIKE(2, 3)
nvrtc_error(Comp *c, const char *fmt, ...)
{
	Pos none = {0};
	va_list ap;

	va_start(ap, fmt);
	diag_verror(c, none, fmt, ap);
	va_end(ap);
	return WSF_ERR_NVRTC;
}

static WsfStatus
nvrtc_dlopen(Comp *c, Nvrtc *nv)
{
	static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
	const char *env = getenv("WSFUSE_NVRTC_PATH");
	int flags = RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE, i;
	Buf tried;

	if (env && *env) {
		nv->path = env;
		if ((nv->lib = dlopen(env, flags)))
			return WSF_OK;
		return nvrtc_error(c, "cannot load NVRTC from WSFUSE_NVRTC_PATH: %s", dlerror());
	}
	buf_init(&tried, c->arena);
	for (i = 0; i < countof(names); i++) {
		nv->path = names[i];
		if ((nv->lib = dlopen(names[i], flags)))
			return WSF_OK;
		buf_printf(&tried, "\n  %s", dlerror());
	}
	return nvrtc_error(c, "cannot load NVRTC, which wsfuse needs to build kernels; tried:%s\n"
	                   "install NVRTC 12 or 13 (part of the CUDA toolkit) and add its folder "
	                   "to LD_LIBRARY_PATH, or set WSFUSE_NVRTC_PATH to libnvrtc's full path",
	                   buf_str(&tried));
}

static WsfStatus
nvrtc_resolve(Comp *c, Nvrtc *nv)
{
	int i;

	for (i = 0; i < countof(nvrtc_syms); i++) {
		void *p = dlsym(nv->lib, nvrtc_syms[i].name);

		if (!p)
			return nvrtc_error(c, "NVRTC '%s' has no %s; wsfuse needs NVRTC 12 or newer",
			                   nv->path, nvrtc_syms[i].name);
		memcpy((char *)nv + nvrtc_syms[i].offset, &p, sizeof p);
	}
	return WSF_OK;
}

static void
nvrtc_close(Nvrtc *nv)
{
	if (nv->lib)
		dlclose(nv->lib);
	nv->lib = NULL;
}

/* ---- reporting ---- */

static const char *
options_line(Job *j)
{
	Buf b;
	int i;

	buf_init(&b, j->c->arena);
	for (i = 0; i < j->nopts; i++)
		buf_printf(&b, "%s%s", i ? " " : "", j->opts[i]);
	return buf_str(&b);
}

/* Where a failing compile's files go, without the extension. */
static const char *
dump_base(Job *j)
{
	Comp *c = j->c;
	const char *tmp;

	if (j->o && j->o->dump_dir && *j->o->dump_dir)
		return arena_printf(c->arena, "%s/%s-%.16s", j->o->dump_dir, j->name, j->key);
	if (j->cache_dir)
		return arena_printf(c->arena, "%s/failed/%s-%.16s", j->cache_dir, j->name, j->key);
	tmp = getenv("TMPDIR");
	return arena_printf(c->arena, "%s/wsfuse-%s-%.16s", tmp && *tmp ? tmp : "/tmp", j->name, j->key);
}

/* Appends the "log:" and "source:" lines, writing the source and the log out. */
static void
put_dump(Job *j, Buf *b)
{
	Comp *c = j->c;
	const char *base = dump_base(j), *p = j->log, *cu, *log;
	int nlines = 0, shown = 0;

	cu = arena_printf(c->arena, "%s.cu", base);
	log = arena_printf(c->arena, "%s.log", base);
	if (*j->log && rt_write_file(log, j->log, strlen(j->log), RT_WRITE_MKDIRS) < 0)
		log = arena_printf(c->arena, "not written: %s", strerror(errno));
	for (p = j->log; *p; p++)
		nlines += *p == '\n' || !p[1];
	if (nlines > 0)
		buf_printf(b, "\n  log (%d lines; full log: %s):", nlines, log);
	for (p = j->log; *p && shown < LOG_LINES; shown++) {
		size_t n = strcspn(p, "\n");

		buf_puts(b, "\n    ");
		buf_putn(b, p, n);
		p += n + (p[n] == '\n');
	}
	if (nlines > shown)
		buf_printf(b, "\n    ... %d more lines", nlines - shown);
	if (rt_write_file(cu, j->src, strlen(j->src), RT_WRITE_MKDIRS) < 0)
		cu = arena_printf(c->arena, "%s (not written: %s)", cu, strerror(errno));
	buf_printf(b, "\n  source: %s", cu);
}

/* Reports a failed compile step: CALL failed with WHAT; DETAIL (or NULL) follows. */
static void
report(Job *j, const char *call, const char *what, const char *detail)
{
	Comp *c = j->c;
	Pos none = {0};
	Buf b;

	buf_init(&b, c->arena);
	buf_printf(&b, "%s: %s (nvrtc %d.%d, sm_90a, kernel '%s')", call, what, j->nv.major,
	           j->nv.minor, j->name);
	buf_printf(&b, "\n  options: %s", options_line(j));
	if (detail)
		buf_puts(&b, detail);
	if (j->key)
		put_dump(j, &b);
	diag_error(c, none, "%s", buf_str(&b));
}

/* The one check every NVRTC call goes through: nonzero (and reported) on failure. */
static int
nv_check(Job *j, nvrtcResult r, const char *call)
{
	if (r == NVRTC_SUCCESS)
		return 0;
	report(j, call, j->nv.GetErrorString(r), NULL);
	return -1;
}

/* ---- compiling ---- */

/* NVRTC's version as CUDA writes versions: 13.0 is 13000. */
static int
nvrtc_version(const Job *j)
{
	return j->nv.major * 1000 + j->nv.minor * 10;
}

static WsfStatus
nvrtc_open(Job *j)
{
	int n = 0, i, *archs;
	WsfStatus st;

	if ((st = nvrtc_dlopen(j->c, &j->nv)) != WSF_OK)
		return st;
	if ((st = nvrtc_resolve(j->c, &j->nv)) != WSF_OK)
		return st;
	if (nv_check(j, j->nv.Version(&j->nv.major, &j->nv.minor), "nvrtcVersion") ||
	    nv_check(j, j->nv.GetNumSupportedArchs(&n), "nvrtcGetNumSupportedArchs"))
		return WSF_ERR_NVRTC;
	archs = arena_alloc(j->c->arena, (size_t)(n > 0 ? n : 1) * sizeof *archs);
	if (nv_check(j, j->nv.GetSupportedArchs(archs), "nvrtcGetSupportedArchs"))
		return WSF_ERR_NVRTC;
	for (i = 0; i < countof(nvrtc_opts); i++)
		j->opts[j->nopts++] = nvrtc_opts[i];
	if (nvrtc_version(j) >= NVRTC_NO_CACHE_SINCE)
		j->opts[j->nopts++] = NVRTC_NO_CACHE;
	/* line tables map SASS to lines of NAME.cu (the program's name) for Nsight Compute */
	if (j->o && j->o->lineinfo)
		j->opts[j->nopts++] = "-lineinfo";
	for (i = 0; i < n; i++)
		if (archs[i] == 90)
			return WSF_OK;
	return nvrtc_error(j->c, "NVRTC %d.%d ('%s') cannot compile for sm_90a; use NVRTC 12 or 13",
	                   j->nv.major, j->nv.minor, j->nv.path);
}

static int
read_log(Job *j, nvrtcProgram prog)
{
	size_t n = 0;
	char *log;

	if (nv_check(j, j->nv.GetProgramLogSize(prog, &n), "nvrtcGetProgramLogSize"))
		return -1;
	log = arena_alloc(j->c->arena, n + 1);
	if (n > 0 && nv_check(j, j->nv.GetProgramLog(prog, log), "nvrtcGetProgramLog"))
		return -1;
	while (*log == '\n')
		log++;
	n = strlen(log);
	while (n > 0 && (log[n - 1] == '\n' || log[n - 1] == ' '))
		log[--n] = 0;
	j->log = log;
	return 0;
}

const char *
rt_ptxas_fatal(Arena *a, const char *log, const char **lines)
{
	bool seen[FATAL_COUNT] = {false};
	const char *p;
	Buf bad;
	int i;

	buf_init(&bad, a);
	for (p = log; *p;) {
		size_t n = strcspn(p, "\n");
		const char *line = arena_strndup(a, p, n);

		for (i = 0; i < countof(fatal_ptxas); i++)
			if (strstr(line, fatal_ptxas[i].text)) {
				Fatal k = fatal_ptxas[i].kind;

				buf_printf(&bad, "\n  %s (%s):\n    %s", fatal_kinds[k].name, fatal_kinds[k].means, line);
				seen[k] = true;
				break;
			}
		p += n + (p[n] == '\n');
	}
	*lines = buf_str(&bad);
	if (!seen[FATAL_WGMMA] && !seen[FATAL_SETMAXNREG])
		return NULL;
	return arena_printf(a, "%s%s%s, which wsfuse treats as %s",
	                    seen[FATAL_WGMMA] ? fatal_kinds[FATAL_WGMMA].name : "",
	                    seen[FATAL_WGMMA] && seen[FATAL_SETMAXNREG] ? " and " : "",
	                    seen[FATAL_SETMAXNREG] ? fatal_kinds[FATAL_SETMAXNREG].name : "",
	                    seen[FATAL_WGMMA] && seen[FATAL_SETMAXNREG] ? "errors" : "an error");
}

/* Fails the compile when the ptxas log says the kernel will not run as designed. */
static int
check_ptxas(Job *j)
{
	const char *lines, *what = rt_ptxas_fatal(j->c->arena, j->log, &lines);

	if (!what)
		return 0;
	report(j, "ptxas", what, lines);
	return -1;
}

static int
get_outputs(Job *j, nvrtcProgram prog, Cubin *out)
{
	Arena *a = j->c->arena;
	size_t nptx = 0, ncubin = 0;
	char *ptx, *cubin;

	if (nv_check(j, j->nv.GetPTXSize(prog, &nptx), "nvrtcGetPTXSize"))
		return -1;
	ptx = arena_alloc(a, nptx + 1);
	if (nv_check(j, j->nv.GetPTX(prog, ptx), "nvrtcGetPTX") ||
	    nv_check(j, j->nv.GetCUBINSize(prog, &ncubin), "nvrtcGetCUBINSize"))
		return -1;
	cubin = arena_alloc(a, ncubin ? ncubin : 1);
	if (nv_check(j, j->nv.GetCUBIN(prog, cubin), "nvrtcGetCUBIN"))
		return -1;
	out->ptx = ptx;
	out->ptx_len = strlen(ptx);
	out->cubin = cubin;
	out->cubin_len = ncubin;
	out->log = j->log;
	out->cache_hit = false;
	return 0;
}

static WsfStatus
build(Job *j, const RtHeader *hdr, int nhdr, Cubin *out)
{
	Arena *a = j->c->arena;
	const char **names = arena_alloc(a, (size_t)(nhdr + 1) * sizeof *names);
	const char **texts = arena_alloc(a, (size_t)(nhdr + 1) * sizeof *texts);
	nvrtcProgram prog = NULL;
	nvrtcResult r;
	WsfStatus st = WSF_ERR_NVRTC;
	int i;

	for (i = 0; i < nhdr; i++) {
		names[i] = hdr[i].name;
		texts[i] = hdr[i].text;
	}
	r = j->nv.CreateProgram(&prog, j->src, j->prog, nhdr, texts, names);
	if (nv_check(j, r, "nvrtcCreateProgram"))
		return WSF_ERR_NVRTC;
	r = j->nv.CompileProgram(prog, j->nopts, j->opts);
	/* the log first: a failed compile is reported with it */
	if (read_log(j, prog) || nv_check(j, r, "nvrtcCompileProgram") || check_ptxas(j) ||
	    get_outputs(j, prog, out))
		goto destroy;
	st = WSF_OK;
destroy:
	j->nv.DestroyProgram(&prog);
	return st;
}

/*
 * A count in a ptxas log is at most this: past any register file, shared
 * memory or stack frame, and small enough that sums and products of a few
 * stay in an int.  A longer number is a log not from ptxas, and not read.
 */
#define PTXAS_COUNT_MAX (1 << 24)

/* The count in the digits just before Q (none before LINE), or -1: no digits, a sign, or over PTXAS_COUNT_MAX. */
static int
count_before(const char *line, const char *q)
{
	const char *d = q;
	long v = 0;

	while (d > line && d[-1] >= '0' && d[-1] <= '9')
		d--;
	if (d == q || (d > line && d[-1] == '-'))
		return -1;
	for (; d < q && v <= PTXAS_COUNT_MAX; d++)
		v = v * 10 + (*d - '0');
	return v <= PTXAS_COUNT_MAX ? (int)v : -1;
}

/* A + B, counts of the same log: at most INT_MAX, never wrapped. */
static int
add_count(int a, int b)
{
	return a > INT_MAX - b ? INT_MAX : a + b;
}

long
rt_spill_bytes(const char *log)
{
	static const char what[] = " bytes spill stores";
	const char *p, *q;
	int n = 0, v;

	/* ptxas --verbose: "    32 bytes stack frame, 52 bytes spill stores, 28 bytes spill loads" */
	for (p = log; (q = strstr(p, what)); p = q + sizeof what - 1)
		if ((v = count_before(log, q)) > 0)
			n = add_count(n, v);
	return n;
}

void
rt_nvrtc_describe(Comp *c, const RtOptions *o, Buf *b, bool full)
{
	Job j = {.c = c, .o = o, .log = ""};
	WsfDiagFn diag = c->diag;
	Dl_info info;
	int i;

	c->diag = NULL;
	if (nvrtc_open(&j) == WSF_OK) {
		void *fn;

		memcpy(&fn, &j.nv.Version, sizeof fn);
		buf_printf(b, "nvrtc: %d.%d (", j.nv.major, j.nv.minor);
		rt_put_text(b, dladdr(fn, &info) && info.dli_fname ? info.dli_fname : j.nv.path);
	} else {
		if (j.nv.major)
			buf_printf(b, "nvrtc: %d.%d, unusable (", j.nv.major, j.nv.minor);
		else
			buf_puts(b, "nvrtc: none (");
		rt_put_text(b, rt_reason(c));
	}
	buf_puts(b, ")\n");
	if (full) {
		buf_puts(b, "nvrtc options:");
		if (!j.nopts) {
			for (i = 0; i < countof(nvrtc_opts); i++)
				j.opts[j.nopts++] = nvrtc_opts[i];
			if (o && o->lineinfo)
				j.opts[j.nopts++] = "-lineinfo";
		}
		for (i = 0; i < j.nopts; i++)
			buf_printf(b, " %s", j.opts[i]);
		buf_puts(b, "\n");
	}
	nvrtc_close(&j.nv);
	c->diag = diag;
}

/* The number just before WHAT in LINE ("48" of "Used 48 registers" for " registers"), or -1. */
static int
number_before(const char *line, size_t n, const char *what)
{
	const char *q = line;

	for (;;) {
		q = strstr(q, what);
		if (!q || q >= line + n)
			return -1;
		if (q > line && q[-1] >= '0' && q[-1] <= '9')
			return count_before(line, q);
		q++;
	}
}

void
rt_ptxas_report(const char *log, const char *entry, RtPtxas *r)
{
	const char *p, *props = "", *compiling = "";
	size_t elen = strlen(entry);

	*r = (RtPtxas){-1, -1, -1, -1, -1};
	/*
	 * ptxas info    : Compiling entry function 'wsfuse_NAME' for 'sm_90a'
	 * ptxas info    : Function properties for wsfuse_NAME
	 * ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
	 * ptxas info    : Used 48 registers, used 1 barriers, 256 bytes smem
	 */
	for (p = log; *p;) {
		size_t n = strcspn(p, "\n");
		const char *q;
		int v;

		if ((q = strstr(p, "Compiling entry function '")) && q < p + n)
			compiling = q + strlen("Compiling entry function '");
		else if ((q = strstr(p, "Function properties for ")) && q < p + n)
			props = q + strlen("Function properties for ");
		if ((v = number_before(p, n, " bytes spill stores")) >= 0)
			r->spill_stores = add_count(r->spill_stores > 0 ? r->spill_stores : 0, v);
		if ((v = number_before(p, n, " bytes spill loads")) >= 0)
			r->spill_loads = add_count(r->spill_loads > 0 ? r->spill_loads : 0, v);
		if ((v = number_before(p, n, " bytes stack frame")) >= 0 && strncmp(props, entry, elen) == 0 &&
		    (props[elen] == '\n' || props[elen] == 0))
			r->stack = v;
		if ((v = number_before(p, n, " registers")) >= 0 && strncmp(compiling, entry, elen) == 0 &&
		    compiling[elen] == '\'') {
			r->registers = v;
			r->smem = (v = number_before(p, n, " bytes smem")) >= 0 ? v : 0;
		}
		p += n + (p[n] == '\n');
	}
}

/*
 * The name NVRTC compiles NAME's source as.  Line tables hold it, made
 * absolute, and profilers look for the source there: so with -lineinfo it
 * is the full path of LINE_DIR/NAME.cu (the current directory when none is
 * set), where WSFUSE_DUMP=cuda writes the source, and the cache key holds
 * it, so a cubin cached elsewhere does not point at another folder.
 */
static const char *
program_name(Comp *c, const RtOptions *o, const char *name)
{
	const char *dir = o && o->line_dir && *o->line_dir ? o->line_dir : ".";
	char cwd[4096];

	if (!o || !o->lineinfo)
		return arena_printf(c->arena, "%s.cu", name);
	if (dir[0] == '/' || !getcwd(cwd, sizeof cwd))
		return arena_printf(c->arena, "%s/%s.cu", dir, name);
	if (strcmp(dir, ".") == 0)
		return arena_printf(c->arena, "%s/%s.cu", cwd, name);
	return arena_printf(c->arena, "%s/%s/%s.cu", cwd, dir, name);
}

/*
 * NVRTC writes the program name into the PTX's .file directive escaping
 * backslashes but not quotes, and ptxas fails on the quote at its line: a
 * path with a quote or a control character is refused here, clearly.
 */
static WsfStatus
check_program_name(Comp *c, const RtOptions *o, const char *prog)
{
	const char *p;
	Buf b;

	if (!o || !o->lineinfo)
		return WSF_OK;
	for (p = prog; *p && *p != '"' && (unsigned char)*p >= 0x20 && *p != 0x7f; p++)
		;
	if (!*p)
		return WSF_OK;
	buf_init(&b, c->arena);
	rt_put_text(&b, prog);
	diag_error(c, (Pos){0}, "-lineinfo: the line tables would name '%s', and ptxas takes no '\"' or control "
	           "character in a file name; set the dump folder (WSFUSE_DUMP_DIR, option dump-dir) to one "
	           "without them", buf_str(&b));
	return WSF_ERR_USAGE;
}

WsfStatus
rt_compile(Comp *c, const RtOptions *o, const char *name, const char *src, const RtHeader *hdr,
           int nhdr, Cubin *out)
{
	Job j = {.c = c, .o = o, .name = name, .src = src, .log = ""};
	WsfStatus st;

	memset(out, 0, sizeof *out);
	out->log = "";
	if ((st = nvrtc_open(&j)) != WSF_OK)
		goto close;
	j.prog = program_name(c, o, name);
	if ((st = check_program_name(c, o, j.prog)) != WSF_OK)
		goto close;
	j.cache_dir = rt_cache_dir(c, o);
	j.key = rt_cache_key(c, j.prog, src, hdr, nhdr, j.opts, j.nopts, nvrtc_version(&j));
	if (j.cache_dir && rt_cache_load(c, j.cache_dir, j.key, out))
		goto close;
	if ((st = build(&j, hdr, nhdr, out)) != WSF_OK)
		goto close;
	if (j.cache_dir)
		rt_cache_store(c, j.cache_dir, j.key, src, out);
close:
	nvrtc_close(&j.nv);
	return st;
}
