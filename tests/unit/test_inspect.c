/*
 * test_inspect.c: the calls of include/wsfuse.h for looking at what wsfuse
 * does, used as an embedding program would: wsf_environment (what `wsfuse
 * --version` and `wsfuse env` print), wsf_pass_name, wsf_kernel_stats and
 * the ptxas report it reads (rt_ptxas_report), and the dumps WSFUSE_DUMP
 * (or the option dump) asks of every compile.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "wsfuse.h"

#include "../../runtime/runtime.h"
#include "have_nvrtc.h"

static const char spec[] =
	"fusion: inspect\n"
	"sizes: {M: 64, N: 128}\n"
	"inputs:\n"
	"  x: {dtype: bf16, shape: [M, N]}\n"
	"  b: {dtype: f32, shape: [N]}\n"
	"ops:\n"
	"  - {out: y, op: add, in: [x, b]}\n"
	"  - {out: z, op: relu, in: [y]}\n"
	"outputs:\n"
	"  z: {dtype: bf16}\n";

/* Does some line of TEXT start with PREFIX? */
static bool
has_line(const char *text, const char *prefix)
{
	const char *p;

	for (p = text; p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, prefix, strlen(prefix)) == 0)
			return true;
	return false;
}

static int errors;

static void
count_errors(void *user, WsfSeverity sev, const char *msg)
{
	(void)user;
	(void)msg;
	errors += sev == WSF_SEV_ERROR;
}

/*
 * wsf_environment says what it finds and why something is missing, without
 * a diagnostic: missing NVRTC and driver are not errors here.
 */
static void
environment(void **state)
{
	WsfContext *ctx = wsf_context_new();
	const char *t;
	char *first;

	(void)state;
	assert_null(wsf_environment(NULL, 0));
	wsf_set_diagnostic_handler(ctx, count_errors, NULL);
	errors = 0;
	t = wsf_environment(ctx, 0);
	assert_non_null(t);
	assert_true(has_line(t, "wsfuse " WSF_VERSION_STRING "\n"));
	assert_true(has_line(t, "nvrtc: "));
	assert_true(has_line(t, "driver: "));
	assert_true(has_line(t, "gpu"));
	assert_false(has_line(t, "nvrtc options: "));
	if (have_nvrtc())
		assert_false(has_line(t, "nvrtc: none"));
	first = strdup(t);
	assert_non_null(first);

	/* nothing to load: said so, and still no error */
	setenv("WSFUSE_NVRTC_PATH", "/nonexistent/libnvrtc.so", 1);
	setenv("WSFUSE_LIBCUDA_PATH", "/nonexistent/libcuda.so.1", 1);
	setenv("WSFUSE_CACHE", "1", 1);
	assert_int_equal(wsf_set_option(ctx, "cache-dir", "/tmp/wsfuse-inspect-cache"), WSF_OK);
	t = wsf_environment(ctx, 1);
	assert_non_null(t);
	assert_true(has_line(t, "nvrtc: none (cannot load NVRTC from WSFUSE_NVRTC_PATH: /nonexistent/libnvrtc.so"));
	assert_true(has_line(t, "driver: none (/nonexistent/libcuda.so.1: cannot open"));
	assert_true(has_line(t, "gpu: none"));
	assert_true(has_line(t, "nvrtc options: --gpu-architecture=sm_90a"));
	assert_true(has_line(t, "built with: CUDA headers "));
	assert_true(has_line(t, "cache: /tmp/wsfuse-inspect-cache\n"));
	assert_true(has_line(t, "  WSFUSE_NVRTC_PATH=/nonexistent/libnvrtc.so\n"));
	/* a value cannot put a line of its own in the report */
	setenv("WSFUSE_LIBCUDA_PATH", "/x\ngpu 0: fake", 1);
	t = wsf_environment(ctx, 1);
	assert_false(has_line(t, "gpu 0: fake"));
	assert_true(has_line(t, "  WSFUSE_LIBCUDA_PATH=/x\n    gpu 0: fake\n"));
	unsetenv("WSFUSE_NVRTC_PATH");
	unsetenv("WSFUSE_LIBCUDA_PATH");
	unsetenv("WSFUSE_CACHE");
	assert_int_equal(errors, 0);
	assert_string_equal(wsf_context_last_error(ctx), "");
	assert_string_equal(wsf_environment(ctx, 0), first);
	free(first);
	wsf_context_delete(ctx);
}

/* wsf_pass_name lists the passes dump-after takes, in order, and nothing else. */
static void
pass_names(void **state)
{
	static const char *const want[] = {"expand", "infer", "views", "schedule", "lower", "circular_buffer",
	                                   "warp_specialize", "sync"};
	WsfContext *ctx = wsf_context_new();
	int i;

	(void)state;
	for (i = 0; wsf_pass_name(i); i++) {
		assert_true(i < (int)(sizeof want / sizeof want[0]));
		assert_string_equal(wsf_pass_name(i), want[i]);
		assert_int_equal(wsf_set_option(ctx, "dump-after", wsf_pass_name(i)), WSF_OK);
	}
	assert_int_equal(i, (int)(sizeof want / sizeof want[0]));
	assert_null(wsf_pass_name(-1));
	assert_null(wsf_pass_name(1000));
	wsf_context_delete(ctx);
}

static WsfKernel *
compile_to(WsfContext *ctx, const char *stop, const char *text)
{
	WsfKernel *k = NULL;

	assert_int_equal(wsf_set_option(ctx, "stop-after", stop), WSF_OK);
	assert_int_equal(wsf_compile_string(ctx, "inspect.yaml", text, strlen(text), &k), WSF_OK);
	return k;
}

/* What a kernel takes: from the kernel IR at every stage, from ptxas once it ran. */
static void
kernel_stats(void **state)
{
	static const char gemm[] =
		"fusion: g\nsizes: {M: 4096, N: 4096, K: 4096}\ninputs:\n  x: {dtype: bf16, shape: [M, K]}\n"
		"  w: {dtype: bf16, shape: [N, K]}\nops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n"
		"outputs:\n  y: {dtype: bf16}\nschedule: {cluster: [2, 1]}\n";
	WsfContext *ctx = wsf_context_new();
	WsfKernelStats st, ir;
	WsfKernel *k;
	char unbound[sizeof spec + 16];
	const char *log;

	(void)state;
	assert_int_equal(wsf_set_option(ctx, "cache", "0"), WSF_OK);
	assert_int_equal(wsf_kernel_stats(NULL, &st), WSF_ERR_USAGE);
	k = compile_to(ctx, "fusion-ir", spec);
	assert_int_equal(wsf_kernel_stats(k, &st), WSF_ERR_USAGE);   /* no kernel yet */
	assert_null(wsf_kernel_text(k, WSF_STAGE_PTXAS, NULL));
	wsf_kernel_delete(k);

	k = compile_to(ctx, "kernel-ir", spec);
	assert_int_equal(wsf_kernel_stats(k, NULL), WSF_ERR_USAGE);
	assert_int_equal(wsf_kernel_stats(k, &ir), WSF_OK);
	assert_true(ir.threads >= 32 && ir.threads % 32 == 0);
	assert_true(ir.smem_dynamic > 0);
	assert_int_equal(ir.registers, -1);
	assert_int_equal(ir.spill_stores, -1);
	assert_int_equal(ir.smem_static, -1);
	assert_int_equal(ir.ctas_per_sm, -1);
	/* 64 x 128 elements, one CTA a tile: at least one tile, each CTA one */
	assert_int_equal(ir.persistent, 0);
	assert_true(ir.tiles >= 1 && ir.tiles <= 64 * 128 / 8);
	assert_int_equal(ir.grid, ir.tiles);
	assert_int_equal(ir.cluster, 1);
	wsf_kernel_delete(k);

	/* a GEMM in clusters of two: its tiles count both CTAs' */
	k = compile_to(ctx, "kernel-ir", gemm);
	assert_int_equal(wsf_kernel_stats(k, &st), WSF_OK);
	assert_int_equal(st.cluster, 2);
	assert_int_equal(st.persistent, 1);
	assert_int_equal(st.tiles, 32 * 16);   /* 4096 / 128 row tiles x 4096 / 256 column tiles */
	wsf_kernel_delete(k);

	/* a size bound nowhere: the tiles are not known */
	snprintf(unbound, sizeof unbound, "%s", spec);
	memcpy(strstr(unbound, "sizes: {M: 64, N: 128}"), "sizes: {       N: 128}", 22);
	k = compile_to(ctx, "kernel-ir", unbound);
	assert_int_equal(wsf_kernel_stats(k, &st), WSF_OK);
	assert_int_equal(st.tiles, -1);
	assert_int_equal(st.grid, -1);
	wsf_kernel_delete(k);

	/* a size bound in the context counts */
	assert_int_equal(wsf_set_size(ctx, "M", 6400), WSF_OK);
	k = compile_to(ctx, "kernel-ir", spec);
	assert_int_equal(wsf_kernel_stats(k, &st), WSF_OK);
	assert_int_equal(st.tiles, ir.tiles * 100);
	wsf_kernel_delete(k);

	if (!have_nvrtc()) {
		wsf_context_delete(ctx);
		skip_because(NO_NVRTC);
	}
	k = compile_to(ctx, "ptxas", spec);   /* ptxas: stops after the PTX and cubin */
	assert_non_null(wsf_kernel_text(k, WSF_STAGE_CUBIN, NULL));
	log = wsf_kernel_text(k, WSF_STAGE_PTXAS, NULL);
	assert_non_null(log);
	assert_non_null(strstr(log, "Compiling entry function 'wsfuse_inspect'"));
	assert_non_null(strstr(log, " registers"));
	assert_int_equal(log[strlen(log) - 1], '\n');
	assert_int_equal(wsf_kernel_stats(k, &st), WSF_OK);
	assert_int_equal(st.threads, ir.threads);
	assert_int_equal(st.smem_dynamic, ir.smem_dynamic);
	assert_true(st.registers > 0 && st.registers <= 255);
	assert_int_equal(st.spill_stores, 0);
	assert_int_equal(st.spill_loads, 0);
	assert_int_equal(st.stack_bytes, 0);
	assert_true(st.smem_static >= 0);
	assert_true(st.ctas_per_sm >= 1 && st.ctas_per_sm <= 32 && st.ctas_per_sm * st.threads <= 2048);
	assert_int_equal(st.tiles, ir.tiles * 100);
	wsf_kernel_delete(k);
	wsf_context_delete(ctx);
}

/* ptxas's --verbose report: the entry's registers, shared memory and stack; every function's spills. */
static void
ptxas_report(void **state)
{
	static const char log[] =
		"ptxas info    : 0 bytes gmem\n"
		"ptxas info    : Function properties for helper\n"
		"ptxas         .     24 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
		"ptxas info    : Compiling entry function 'wsfuse_other' for 'sm_90a'\n"
		"ptxas info    : Function properties for wsfuse_other\n"
		"ptxas         .     16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
		"ptxas info    : Used 200 registers, used 1 barriers, 4096 bytes smem\n"
		"ptxas info    : Compiling entry function 'wsfuse_k' for 'sm_90a'\n"
		"ptxas info    : Function properties for wsfuse_k\n"
		"ptxas         .     32 bytes stack frame, 52 bytes spill stores, 28 bytes spill loads\n"
		"ptxas info    : Used 168 registers, used 1 barriers, 256 bytes smem, 400 bytes cmem[0]\n"
		"ptxas info    : Compile time = 12.5 ms";
	RtPtxas r;

	(void)state;
	rt_ptxas_report(log, "wsfuse_k", &r);
	assert_int_equal(r.registers, 168);
	assert_int_equal(r.smem, 256);
	assert_int_equal(r.stack, 32);
	assert_int_equal(r.spill_stores, 8 + 52);
	assert_int_equal(r.spill_loads, 4 + 28);
	/* a name that only starts another's is not it */
	rt_ptxas_report(log, "wsfuse_", &r);
	assert_int_equal(r.registers, -1);
	assert_int_equal(r.stack, -1);
	/* no shared memory named: none; an empty log: nothing known */
	rt_ptxas_report("ptxas info    : Compiling entry function 'e' for 'sm_90a'\n"
	                "ptxas info    : Used 40 registers, used 1 barriers\n", "e", &r);
	assert_int_equal(r.registers, 40);
	assert_int_equal(r.smem, 0);
	rt_ptxas_report("", "e", &r);
	assert_int_equal(r.registers, -1);
	assert_int_equal(r.spill_stores, -1);
	/* a log not from ptxas (a planted compile.log): counts too long to be ptxas's, or signed, unread */
	rt_ptxas_report("ptxas info    : Compiling entry function 'e' for 'sm_90a'\n"
	                "ptxas info    : Function properties for e\n"
	                "    4294967296 bytes stack frame, 99999999999999999999 bytes spill stores, -8 bytes spill loads\n"
	                "ptxas info    : Used 2147483648 registers, used 1 barriers, 4294967040 bytes smem\n", "e", &r);
	assert_int_equal(r.registers, -1);
	assert_int_equal(r.stack, -1);
	assert_int_equal(r.spill_stores, -1);
	assert_int_equal(r.spill_loads, -1);
	/* the largest count read, summed over many functions: saturated, never wrapped negative */
	{
		static char big[400 * 128];   /* 96 bytes a function */
		int i;

		for (i = 0; i < 400; i++)
			strcat(big, "ptxas info    : Function properties for f\n"
			            "    0 bytes stack frame, 16777216 bytes spill stores\n");
		rt_ptxas_report(big, "e", &r);
		assert_int_equal(r.spill_stores, 2147483647);
	}
}

typedef struct Notes {
	int errors, warnings, notes;
	char note[2048], warning[1024];
} Notes;

static void
take_notes(void *user, WsfSeverity sev, const char *msg)
{
	Notes *n = user;

	if (sev == WSF_SEV_ERROR)
		n->errors++;
	if (sev == WSF_SEV_WARNING) {
		n->warnings++;
		snprintf(n->warning, sizeof n->warning, "%s", msg);
	}
	if (sev == WSF_SEV_NOTE) {
		n->notes++;
		snprintf(n->note, sizeof n->note, "%s", msg);
	}
}

/* Is file PATH there, holding exactly the N bytes TEXT?  Removes it. */
static bool
file_holds(const char *path, const char *text, size_t n)
{
	static char got[1 << 20];
	FILE *f = fopen(path, "rb");
	size_t len;

	if (!f)
		return false;
	len = fread(got, 1, sizeof got, f);
	fclose(f);
	unlink(path);
	return len == n && memcmp(got, text, n) == 0;
}

static bool
exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* In PATH: the file DIR/NAME-KEY/NAME.EXT a dump wrote (the first folder of NAME's), else where none is. */
static void
dumped(char *path, size_t size, const char *dir, const char *name, const char *ext)
{
	glob_t g;

	snprintf(path, size, "%s/%s-*/%s.%s", dir, name, name, ext);
	if (glob(path, 0, NULL, &g) == 0 && g.gl_pathc > 0)
		snprintf(path, size, "%s", g.gl_pathv[0]);
	else
		snprintf(path, size, "%s/%s-none/%s.%s", dir, name, name, ext);
	globfree(&g);
}

/*
 * WSFUSE_DUMP=cuda,kernel-ir,ptx,ptxas and WSFUSE_DUMP_DIR, as a program
 * embedding the library meets them: each output the compile made lands in
 * DIR/NAME-KEY/NAME.EXT, on a cache hit too, with a note; the option dump overrides
 * the variable; a name that is no output is an error, a folder that cannot
 * be written a warning; a compile that fails still dumps what it made.
 */
static void
dump_through_the_environment(void **state)
{
	static const char too_big[] =
		"fusion: big\nsizes: {M: 4096, N: 4096}\n"
		"inputs:\n  x: {dtype: f32, shape: [M, N]}\n  y: {dtype: f32, shape: [M, N]}\n"
		"ops:\n  - {out: z, op: add, in: [x, y]}\noutputs:\n  z: {dtype: f32}\n"
		"schedule:\n  tile: [256, 256]\n";
	char dir[] = "/tmp/wsfuse-test-dump-XXXXXX", sub[64], cache[64], path[256];
	const char *stop = have_nvrtc() ? "cubin" : "cuda";
	WsfContext *ctx = wsf_context_new();
	WsfKernel *k = NULL;
	Notes n = {0};
	const char *t;
	size_t len = 0;
	FILE *f;
	int round;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(sub, sizeof sub, "%s/made/by/dump", dir);
	snprintf(cache, sizeof cache, "%s/cache", dir);
	wsf_set_diagnostic_handler(ctx, take_notes, &n);
	assert_int_equal(wsf_set_option(ctx, "cache-dir", cache), WSF_OK);
	assert_int_equal(wsf_set_option(ctx, "cache", "1"), WSF_OK);
	setenv("WSFUSE_DUMP", "cuda,kernel-ir,ptx,ptxas", 1);
	setenv("WSFUSE_DUMP_DIR", sub, 1);

	/* a miss, then a hit of the cache: the same files each time */
	for (round = 0; round < 2; round++) {
		n = (Notes){0};
		k = compile_to(ctx, stop, spec);
		assert_int_equal(n.errors + n.warnings, 0);
		assert_int_equal(n.notes, 1);
		dumped(path, sizeof path, sub, "inspect", "cu");
		assert_non_null(strstr(n.note, "note: WSFUSE_DUMP wrote "));
		assert_non_null(strstr(n.note, path));
		t = wsf_kernel_text(k, WSF_STAGE_CUDA, &len);
		assert_true(file_holds(path, t, len));
		dumped(path, sizeof path, sub, "inspect", "kir");
		t = wsf_kernel_text(k, WSF_STAGE_KERNEL_IR, &len);
		assert_true(file_holds(path, t, len));
		dumped(path, sizeof path, sub, "inspect", "fir");
		assert_false(exists(path));   /* not asked for */
		dumped(path, sizeof path, sub, "inspect", "ptx");
		if (have_nvrtc()) {
			t = wsf_kernel_text(k, WSF_STAGE_PTX, &len);
			assert_true(file_holds(path, t, len));
			dumped(path, sizeof path, sub, "inspect", "ptxas");
			t = wsf_kernel_text(k, WSF_STAGE_PTXAS, &len);
			assert_non_null(strstr(t, "Used"));
			assert_true(file_holds(path, t, len));
		} else {
			assert_false(exists(path));   /* not made: nothing to dump */
		}
		wsf_kernel_delete(k);
	}

	/* the option overrides the variable; all is every output made */
	assert_int_equal(wsf_set_option(ctx, "dump", "fusion-ir"), WSF_OK);
	k = compile_to(ctx, "kernel-ir", spec);
	dumped(path, sizeof path, sub, "inspect", "fir");
	t = wsf_kernel_text(k, WSF_STAGE_FUSION_IR, &len);
	assert_true(file_holds(path, t, len));
	dumped(path, sizeof path, sub, "inspect", "kir");
	assert_false(exists(path));
	wsf_kernel_delete(k);
	assert_int_equal(wsf_set_option(ctx, "dump", "all"), WSF_OK);
	k = compile_to(ctx, "kernel-ir", spec);
	dumped(path, sizeof path, sub, "inspect", "fir");
	assert_true(exists(path) && unlink(path) == 0);
	dumped(path, sizeof path, sub, "inspect", "kir");
	assert_true(exists(path) && unlink(path) == 0);
	wsf_kernel_delete(k);
	assert_int_equal(wsf_set_option(ctx, "dump", "cuda,ptc"), WSF_ERR_USAGE);
	assert_non_null(strstr(wsf_context_last_error(ctx), "unknown output 'ptc' in option 'dump'"));
	assert_int_equal(wsf_set_option(ctx, "dump", NULL), WSF_OK);

	/* a compile that fails at lowering still dumps the fusion IR it made */
	setenv("WSFUSE_DUMP", "fusion-ir,kernel-ir", 1);
	n = (Notes){0};
	assert_int_equal(wsf_compile_string(ctx, "big.yaml", too_big, strlen(too_big), &k), WSF_ERR_INPUT);
	assert_null(k);
	assert_int_equal(n.errors, 1);
	dumped(path, sizeof path, sub, "big", "fir");
	assert_true(exists(path) && unlink(path) == 0);
	dumped(path, sizeof path, sub, "big", "kir");
	assert_false(exists(path));
	assert_non_null(strstr(wsf_context_last_error(ctx), "needs 768 KiB of shared memory"));

	/* a name that is no output: the compile is refused, and says why */
	setenv("WSFUSE_DUMP", "cuda,cdua", 1);
	n = (Notes){0};
	assert_int_equal(wsf_compile_string(ctx, "inspect.yaml", spec, strlen(spec), &k), WSF_ERR_USAGE);
	assert_null(k);
	assert_int_equal(n.errors, 1);
	assert_non_null(strstr(wsf_context_last_error(ctx), "error: unknown output 'cdua' in WSFUSE_DUMP (expected "));

	/* a long name is quoted cut, as other long quoted spans are; a control character as '?' */
	{
		static char list[8192] = "cuda,\t";

		memset(list + 6, 'x', sizeof list - 7);
		setenv("WSFUSE_DUMP", list, 1);
		assert_int_equal(wsf_compile_string(ctx, "inspect.yaml", spec, strlen(spec), &k), WSF_ERR_USAGE);
		t = wsf_context_last_error(ctx);
		assert_non_null(strstr(t, "error: unknown output '?xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...' in WSFUSE_DUMP"));
		assert_true(strlen(t) < 300);
		assert_int_equal(wsf_set_option(ctx, "dump", list + 5000), WSF_ERR_USAGE);
		assert_non_null(strstr(wsf_context_last_error(ctx), "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...' in option"));
	}

	/* a folder that cannot be made: a warning, and the kernel */
	setenv("WSFUSE_DUMP", "cuda", 1);
	snprintf(path, sizeof path, "%s/file", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	snprintf(path, sizeof path, "%s/file/sub", dir);
	setenv("WSFUSE_DUMP_DIR", path, 1);
	n = (Notes){0};
	k = compile_to(ctx, "cuda", spec);
	assert_int_equal(n.errors, 0);
	assert_int_equal(n.warnings, 1);
	assert_non_null(strstr(n.warning, "warning: WSFUSE_DUMP: cannot write "));
	assert_non_null(strstr(n.warning, "/file/sub/inspect-"));
	assert_non_null(strstr(n.warning, "/inspect.cu: Not a directory"));
	wsf_kernel_delete(k);

	unsetenv("WSFUSE_DUMP");
	unsetenv("WSFUSE_DUMP_DIR");
	wsf_context_delete(ctx);
	snprintf(path, sizeof path, "rm -rf '%s'", dir);
	assert_int_equal(system(path), 0);
}

/*
 * A dump folder a kernel: two compiles of one spec at other sizes (bound in
 * either order) keep their own files, and the note names each folder; the
 * same sizes again write the same folder.
 */
static void
dump_folder_per_kernel(void **state)
{
	char dir[] = "/tmp/wsfuse-test-dumpkey-XXXXXX", path[256], note[2][2048];
	WsfContext *ctx = wsf_context_new();
	WsfKernel *k;
	Notes n = {0};
	glob_t g;
	int i;

	(void)state;
	assert_non_null(mkdtemp(dir));
	wsf_set_diagnostic_handler(ctx, take_notes, &n);
	assert_int_equal(wsf_set_option(ctx, "dump", "cuda"), WSF_OK);
	assert_int_equal(wsf_set_option(ctx, "dump-dir", dir), WSF_OK);
	for (i = 0; i < 2; i++) {
		n = (Notes){0};
		assert_int_equal(wsf_set_size(ctx, "M", i ? 4096 : 64), WSF_OK);
		k = compile_to(ctx, "cuda", spec);
		assert_int_equal(n.notes, 1);
		snprintf(note[i], sizeof note[i], "%s", n.note);
		wsf_kernel_delete(k);
	}
	snprintf(path, sizeof path, "%s/inspect-*/inspect.cu", dir);
	assert_int_equal(glob(path, 0, NULL, &g), 0);
	assert_int_equal(g.gl_pathc, 2);
	for (i = 0; i < 2; i++)
		assert_true(strstr(note[0], g.gl_pathv[i]) || strstr(note[1], g.gl_pathv[i]));
	assert_string_not_equal(note[0], note[1]);
	globfree(&g);

	/* the same bindings set in either order: the same kernel, the same folder */
	for (i = 0; i < 2; i++) {
		wsf_context_delete(ctx);
		ctx = wsf_context_new();
		wsf_set_diagnostic_handler(ctx, take_notes, &n);
		assert_int_equal(wsf_set_option(ctx, "dump", "cuda"), WSF_OK);
		assert_int_equal(wsf_set_option(ctx, "dump-dir", dir), WSF_OK);
		assert_int_equal(wsf_set_size(ctx, i ? "M" : "N", i ? 4096 : 128), WSF_OK);
		assert_int_equal(wsf_set_size(ctx, i ? "N" : "M", i ? 128 : 4096), WSF_OK);
		n = (Notes){0};
		k = compile_to(ctx, "cuda", spec);
		snprintf(note[i], sizeof note[i], "%s", n.note);
		wsf_kernel_delete(k);
	}
	assert_string_equal(note[0], note[1]);

	wsf_context_delete(ctx);
	snprintf(path, sizeof path, "rm -rf '%s'", dir);
	assert_int_equal(system(path), 0);
}

/*
 * A hand-edited kernel's directive "// wsfuse-override: smem_bytes = N" (its
 * first non-blank characters, anywhere in the file) sets the dynamic shared
 * memory the launch asks for (the kernel's stats show it); a directive of
 * anything else, or N out of 1..1 MiB, fails the compile with
 * WSF_ERR_INPUT at its line.
 */
static void
override_smem(void **state)
{
	static const struct {
		const char *line;
		WsfStatus status;
		const char *error;
	} cases[] = {
		{"// wsfuse-override: smem_bytes = 54321\n", WSF_OK, NULL},
		{"  // wsfuse-override:smem_bytes=54321  \n", WSF_OK, NULL},
		{"// wsfuse-override: smem_bytes = 0\n", WSF_ERR_INPUT, "inspect.cu:2: smem_bytes 0 is out of range: 1 to 1048576 bytes"},
		{"// wsfuse-override: smem_bytes = 99999999999\n", WSF_ERR_INPUT, "inspect.cu:2: smem_bytes 99999999999 is out of range"},
		{"// wsfuse-override: stages = 5\n", WSF_ERR_INPUT, "inspect.cu:2: expected 'smem_bytes = N'"},
		{"// wsfuse-override: smem_bytes 54321\n", WSF_ERR_INPUT, "inspect.cu:2: expected 'smem_bytes = N'"},
		{"// wsfuse-override: smem_bytes = 5k\n", WSF_ERR_INPUT, "inspect.cu:2: expected 'smem_bytes = N'"},
		{"// wsfuse override: smem_bytes = 5k\n", WSF_OK, NULL},   /* not the directive: a comment */
	};
	char dir[] = "/tmp/wsfuse-test-override-smem-XXXXXX", path[128];
	WsfContext *ctx = wsf_context_new();
	WsfKernel *k;
	WsfKernelStats st;
	const char *t;
	char *gen;
	size_t glen;
	FILE *f;
	int i, planned;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(wsf_set_option(ctx, "cache", "0"), WSF_OK);
	k = compile_to(ctx, "cuda", spec);
	t = wsf_kernel_text(k, WSF_STAGE_CUDA, &glen);
	gen = strndup(t, glen);
	assert_int_equal(wsf_kernel_stats(k, &st), WSF_OK);
	planned = st.smem_dynamic;
	assert_true(planned != 54321);
	wsf_kernel_delete(k);
	assert_int_equal(wsf_set_option(ctx, "override-dir", dir), WSF_OK);
	snprintf(path, sizeof path, "%s/inspect.cu", dir);
	for (i = 0; i < (int)countof(cases); i++) {
		f = fopen(path, "w");
		assert_non_null(f);
		fputs("// hand-edited\n", f);
		fputs(cases[i].line, f);
		fwrite(gen, 1, glen, f);
		fclose(f);
		k = NULL;
		assert_int_equal(wsf_set_option(ctx, "stop-after", "cuda"), WSF_OK);
		assert_int_equal(wsf_compile_string(ctx, "inspect.yaml", spec, strlen(spec), &k), cases[i].status);
		if (cases[i].error) {
			assert_null(k);
			assert_non_null(strstr(wsf_context_last_error(ctx), cases[i].error));
			continue;
		}
		assert_int_equal(wsf_kernel_stats(k, &st), WSF_OK);
		assert_int_equal(st.smem_dynamic, i == 7 ? planned : 54321);
		wsf_kernel_delete(k);
	}
	wsf_context_delete(ctx);
	free(gen);
	snprintf(path, sizeof path, "rm -rf '%s'", dir);
	assert_int_equal(system(path), 0);
}

/*
 * Option override-dir and $WSFUSE_OVERRIDE_DIR: DIR/NAME.cu, where it exists,
 * is the kernel's CUDA (the option before the variable), with one note,
 * through the cache too; DIR/NAME-KEY/NAME.cu, the kernel's dump folder
 * there, before it; without either, the generated CUDA and no note.
 */
static void
override_dir(void **state)
{
	static const char edit[] = "// hand-edited\n";
	char dir[] = "/tmp/wsfuse-test-override-XXXXXX", path[256], cache[64];
	WsfContext *ctx = wsf_context_new();
	WsfKernel *k;
	Notes n = {0};
	const char *t;
	char *gen;
	size_t len = 0, glen;
	FILE *f;
	int round;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(cache, sizeof cache, "%s/cache", dir);
	wsf_set_diagnostic_handler(ctx, take_notes, &n);
	assert_int_equal(wsf_set_option(ctx, "cache-dir", cache), WSF_OK);
	assert_int_equal(wsf_set_option(ctx, "cache", "1"), WSF_OK);
	k = compile_to(ctx, "cuda", spec);
	t = wsf_kernel_text(k, WSF_STAGE_CUDA, &glen);
	gen = strndup(t, glen);
	wsf_kernel_delete(k);

	/* the variable names a folder without inspect.cu: the generated CUDA */
	setenv("WSFUSE_OVERRIDE_DIR", dir, 1);
	n = (Notes){0};
	k = compile_to(ctx, "cuda", spec);
	t = wsf_kernel_text(k, WSF_STAGE_CUDA, &len);
	assert_true(len == glen && memcmp(t, gen, len) == 0);
	assert_int_equal(n.notes + n.warnings + n.errors, 0);
	wsf_kernel_delete(k);

	/* the option's folder holds it: that text, a miss and a hit of the cache */
	snprintf(path, sizeof path, "%s/mine", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(wsf_set_option(ctx, "override-dir", path), WSF_OK);
	snprintf(path, sizeof path, "%s/mine/inspect.cu", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(edit, f);
	fwrite(gen, 1, glen, f);
	fclose(f);
	for (round = 0; round < 2; round++) {
		n = (Notes){0};
		k = compile_to(ctx, have_nvrtc() ? "ptx" : "cuda", spec);
		t = wsf_kernel_text(k, WSF_STAGE_CUDA, &len);
		assert_true(len == glen + strlen(edit) && memcmp(t, edit, strlen(edit)) == 0);
		assert_int_equal(n.notes, 1);
		assert_int_equal(n.warnings + n.errors, 0);
		assert_non_null(strstr(n.note, "note: kernel 'inspect' compiled from "));
		assert_non_null(strstr(n.note, "/mine/inspect.cu (override-dir), not from its generated CUDA"));
		wsf_kernel_delete(k);
	}

	/* a dump into the folder (DIR/NAME-KEY/NAME.cu) is this kernel's override, before DIR/NAME.cu */
	snprintf(path, sizeof path, "%s/mine", dir);
	assert_int_equal(wsf_set_option(ctx, "dump-dir", path), WSF_OK);
	assert_int_equal(wsf_set_option(ctx, "dump", "cuda"), WSF_OK);
	n = (Notes){0};
	k = compile_to(ctx, "cuda", spec);
	assert_non_null(strstr(n.note, "/mine/inspect-"));   /* the dump's note: the override is DIR/NAME.cu */
	wsf_kernel_delete(k);
	assert_int_equal(wsf_set_option(ctx, "dump", NULL), WSF_OK);
	n = (Notes){0};
	k = compile_to(ctx, "cuda", spec);
	assert_int_equal(n.notes, 1);
	assert_non_null(strstr(n.note, "/mine/inspect-"));
	assert_non_null(strstr(n.note, "/inspect.cu (override-dir), not from its generated CUDA"));
	t = wsf_kernel_text(k, WSF_STAGE_CUDA, &len);
	assert_true(len == glen + strlen(edit) && memcmp(t, edit, strlen(edit)) == 0);
	wsf_kernel_delete(k);

	unsetenv("WSFUSE_OVERRIDE_DIR");
	wsf_context_delete(ctx);
	free(gen);
	snprintf(path, sizeof path, "rm -rf '%s'", dir);
	assert_int_equal(system(path), 0);
}

/*
 * An override that is there but unusable fails the compile, naming the
 * file, never waiting or passing it by: a FIFO (refused at once; alarm()
 * turns a hang into a failure), a folder, a dangling symbolic link, in
 * the override folder or in the kernel's folder there; with
 * NVRTC, a file whose kernel is not the entry point the launch looks up.
 * A link to a file is followed.
 */
static void
override_unusable(void **state)
{
	char dir[] = "/tmp/wsfuse-test-ovbad-XXXXXX", path[128], cmd[256];
	WsfContext *ctx = wsf_context_new();
	WsfKernel *k = NULL;
	Notes n = {0};
	const char *t;
	char *gen, *at;
	size_t glen;
	FILE *f;

	(void)state;
	alarm(20);
	assert_non_null(mkdtemp(dir));
	wsf_set_diagnostic_handler(ctx, take_notes, &n);
	assert_int_equal(wsf_set_option(ctx, "cache", "0"), WSF_OK);
	k = compile_to(ctx, "cuda", spec);
	t = wsf_kernel_text(k, WSF_STAGE_CUDA, &glen);
	gen = strndup(t, glen);
	wsf_kernel_delete(k);
	assert_int_equal(wsf_set_option(ctx, "override-dir", dir), WSF_OK);
	snprintf(path, sizeof path, "%s/inspect.cu", dir);

	assert_int_equal(mkfifo(path, 0600), 0);
	n = (Notes){0};
	assert_int_equal(wsf_compile_string(ctx, "inspect.yaml", spec, strlen(spec), &k), WSF_ERR_IO);
	assert_null(k);
	assert_non_null(strstr(wsf_context_last_error(ctx), "/inspect.cu is not a regular file"));
	assert_int_equal(unlink(path), 0);
	/* the kernel's own folder there (as a dump names it) is looked in first */
	assert_int_equal(wsf_set_option(ctx, "dump", "cuda"), WSF_OK);
	assert_int_equal(wsf_set_option(ctx, "dump-dir", dir), WSF_OK);
	wsf_kernel_delete(compile_to(ctx, "cuda", spec));
	assert_int_equal(wsf_set_option(ctx, "dump", NULL), WSF_OK);
	assert_int_equal(wsf_set_option(ctx, "dump-dir", NULL), WSF_OK);
	snprintf(cmd, sizeof cmd, "%s/inspect-*/inspect.cu", dir);
	{
		glob_t g;

		assert_int_equal(glob(cmd, 0, NULL, &g), 0);
		snprintf(cmd, sizeof cmd, "%s", g.gl_pathv[0]);
		globfree(&g);
	}
	assert_int_equal(unlink(cmd), 0);
	assert_int_equal(mkfifo(cmd, 0600), 0);
	assert_int_equal(wsf_compile_string(ctx, "inspect.yaml", spec, strlen(spec), &k), WSF_ERR_IO);
	assert_non_null(strstr(wsf_context_last_error(ctx), "/inspect.cu is not a regular file"));
	assert_non_null(strstr(wsf_context_last_error(ctx), "/inspect-"));
	assert_int_equal(unlink(cmd), 0);

	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(wsf_compile_string(ctx, "inspect.yaml", spec, strlen(spec), &k), WSF_ERR_IO);
	assert_non_null(strstr(wsf_context_last_error(ctx), "/inspect.cu: Is a directory"));
	assert_int_equal(rmdir(path), 0);

	assert_int_equal(symlink("edited.cu", path), 0);
	assert_int_equal(wsf_compile_string(ctx, "inspect.yaml", spec, strlen(spec), &k), WSF_ERR_IO);
	assert_non_null(strstr(wsf_context_last_error(ctx),
	                       "override-dir: " ));
	assert_non_null(strstr(wsf_context_last_error(ctx),
	                       "/inspect.cu is a symbolic link to a file that does not exist"));

	/* the link's file made: it is compiled */
	snprintf(cmd, sizeof cmd, "%s/edited.cu", dir);
	assert_non_null(f = fopen(cmd, "w"));
	fwrite(gen, 1, glen, f);
	fclose(f);
	n = (Notes){0};
	k = compile_to(ctx, "cuda", spec);
	assert_int_equal(n.notes, 1);
	wsf_kernel_delete(k);

	/* the entry point renamed: ptxas compiles it, the launch would not find it */
	if (have_nvrtc()) {
		assert_non_null(at = strstr(gen, "wsfuse_inspect("));
		memcpy(at, "wsfuse_inspekt", 14);
		assert_non_null(f = fopen(cmd, "w"));
		fwrite(gen, 1, glen, f);
		fclose(f);
		assert_int_equal(wsf_set_option(ctx, "stop-after", "ptx"), WSF_OK);
		assert_int_equal(wsf_compile_string(ctx, "inspect.yaml", spec, strlen(spec), &k), WSF_ERR_INPUT);
		assert_null(k);
		t = wsf_context_last_error(ctx);
		assert_non_null(strstr(t, "override-dir: "));
		assert_non_null(strstr(t, "/inspect.cu defines no kernel 'wsfuse_inspect', the entry point"));
	}

	alarm(0);
	wsf_context_delete(ctx);
	free(gen);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

/* The pictures are outputs like the others: made with their stage, named, dumped. */
static void
pictures(void **state)
{
	WsfContext *ctx = wsf_context_new();
	WsfKernel *k;
	const char *t;

	(void)state;
	assert_int_equal(wsf_stage_from_name("dot"), WSF_STAGE_DOT);
	assert_int_equal(wsf_stage_from_name("kernel-dot"), WSF_STAGE_KERNEL_DOT);
	assert_string_equal(wsf_stage_name(WSF_STAGE_KERNEL_DOT), "kernel-dot");
	assert_int_equal(wsf_stage_made_by(WSF_STAGE_DOT), WSF_STAGE_FUSION_IR);
	assert_int_equal(wsf_stage_made_by(WSF_STAGE_KERNEL_DOT), WSF_STAGE_KERNEL_IR);
	assert_int_equal(wsf_stage_made_by(WSF_STAGE_PTXAS), WSF_STAGE_PTX);
	assert_int_equal(wsf_stage_made_by(WSF_STAGE_CUDA), WSF_STAGE_CUDA);
	assert_int_equal(wsf_stage_made_by(WSF_STAGE_COUNT), WSF_STAGE_NONE);

	k = compile_to(ctx, "dot", spec);   /* stops after the fusion IR */
	t = wsf_kernel_text(k, WSF_STAGE_DOT, NULL);
	assert_non_null(t);
	assert_non_null(strstr(t, "digraph \"inspect\" {\n"));
	assert_non_null(strstr(t, "label=\"y = add(x, b)\\nf32[M, N]\"]"));
	assert_non_null(strstr(t, "o2 -> out0;\n}\n"));
	assert_null(wsf_kernel_text(k, WSF_STAGE_KERNEL_IR, NULL));
	assert_null(wsf_kernel_text(k, WSF_STAGE_KERNEL_DOT, NULL));
	wsf_kernel_delete(k);

	k = compile_to(ctx, "kernel-dot", spec);
	assert_non_null(wsf_kernel_text(k, WSF_STAGE_KERNEL_IR, NULL));
	assert_null(wsf_kernel_text(k, WSF_STAGE_CUDA, NULL));
	t = wsf_kernel_text(k, WSF_STAGE_KERNEL_DOT, NULL);
	assert_non_null(t);
	assert_non_null(strstr(t, "label=\"kernel wsfuse_inspect: "));
	assert_non_null(strstr(t, "[label=\"TMA load\"]"));
	assert_non_null(strstr(t, "[label=\"read\"]"));
	wsf_kernel_delete(k);
	wsf_context_delete(ctx);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(environment),
		cmocka_unit_test(override_dir),
		cmocka_unit_test(override_smem),
		cmocka_unit_test(override_unusable),
		cmocka_unit_test(pass_names),
		cmocka_unit_test(kernel_stats),
		cmocka_unit_test(ptxas_report),
		cmocka_unit_test(dump_through_the_environment),
		cmocka_unit_test(dump_folder_per_kernel),
		cmocka_unit_test(pictures),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
