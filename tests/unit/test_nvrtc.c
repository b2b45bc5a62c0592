/*
 * test_nvrtc.c: runtime/nvrtc.c against the real NVRTC (no GPU needed).
 *
 * A tiny kernel with one RtHeader must come back as an sm_90a cubin (ELF)
 * and PTX, and come from the cache the second time.  A syntax error must be
 * WSF_ERR_NVRTC with the options, the log and the path where the source was
 * written; two kernels that make ptxas serialize wgmma or ignore setmaxnreg
 * must fail the same way.  Every test uses its own temp cache and dump dirs;
 * those that need NVRTC skip when it cannot be loaded.  Each ptxas warning
 * code wsfuse fails on (C7508 to C7515) goes through rt_ptxas_fatal, and
 * through a whole compile with fake_nvrtc.so, a stand-in NVRTC whose log is
 * $FAKE_NVRTC_LOG, which needs no NVRTC.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../runtime/runtime.h"

#include "comp_init.h"
#include "have_nvrtc.h"

typedef struct Dirs {
	char root[64];
	char cache[96];
	char dump[96];
} Dirs;

static const RtHeader header = {
	"wsf_test.cuh", "#pragma once\n__device__ inline float twice(float v) { return 2.0f * v; }\n"};

static const char *const good_src =
	"#include \"wsf_test.cuh\"\n"
	"extern \"C\" __global__ void k(float *x) { x[threadIdx.x] = twice(x[threadIdx.x]); }\n";

static const char *const bad_src =
	"#include \"wsf_test.cuh\"\n"
	"extern \"C\" __global__ void k(float *x) { x[threadIdx.x] = twice(x[threadIdx.x]) }\n";

/* No register count at entry: ptxas ignores the setmaxnreg (C7508). */
static const char *const setmaxnreg_src =
	"extern \"C\" __global__ void k(float *x) {\n"
	"  if (threadIdx.x < 128) { asm volatile(\"setmaxnreg.dec.sync.aligned.u32 40;\\n\"); }\n"
	"  else { asm volatile(\"setmaxnreg.inc.sync.aligned.u32 232;\\n\"); x[threadIdx.x] *= 2; }\n"
	"}\n";

/* The accumulator is touched between two wgmmas of one pipeline: ptxas serializes them. */
#define WGMMA \
	"  asm volatile(\"wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 " \
	"{%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, 1, 1, 1, 0, 0;\\n\"\n" \
	"    : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3]), \"+f\"(d[4]), \"+f\"(d[5]),\n" \
	"      \"+f\"(d[6]), \"+f\"(d[7]) : \"l\"(da), \"l\"(db));\n" \
	"  asm volatile(\"wgmma.commit_group.sync.aligned;\\n\");\n"
static const char *const wgmma_src =
	"extern \"C\" __global__ void k(float *x, unsigned long long da, unsigned long long db) {\n"
	"  float d[8] = {0};\n"
	"  asm volatile(\"wgmma.fence.sync.aligned;\\n\");\n"
	WGMMA
	"  d[0] += x[0];\n"
	WGMMA
	"  asm volatile(\"wgmma.wait_group.sync.aligned 0;\\n\" ::: \"memory\");\n"
	"  for (int i = 0; i < 8; i++) x[threadIdx.x * 8 + i] = d[i];\n"
	"}\n";

/* ptxas's own lines for each code wsfuse fails a compile on (CUDA 12 and 13), and what each means. */
static const struct {
	const char *code, *means, *line;
} fatal_lines[] = {
	{"(C7508)", "setmaxnreg ignored",
	 "ptxas info    : (C7508) Potential Performance Loss: 'setmaxnreg' ignored; unable to determine "
	 "register count at entry."},
	{"(C7509)", "wgmma serialized",
	 "ptxas info    : (C7509) Potential Performance Loss: wgmma.mma_async instructions are serialized "
	 "due to the presence of Extern calls in the function 'wsfuse_mm'"},
	{"(C7510)", "wgmma serialized",
	 "ptxas info    : (C7510) Potential Performance Loss: wgmma.mma_async instructions are serialized "
	 "due to wgmma pipeline crossing function boundary at a function call in the function 'wsfuse_mm'"},
	{"(C7511)", "wgmma serialized",
	 "ptxas info    : (C7511) Potential Performance Loss: wgmma.mma_async instructions are serialized "
	 "due to insufficient register resources for the wgmma pipeline in the function 'wsfuse_mm'"},
	{"(C7515)", "wgmma serialized",
	 "ptxas info    : (C7515) Potential Performance Loss: wgmma.mma_async instructions are serialized "
	 "due to non wgmma instructions defining accumulator registers of a wgmma between start and end "
	 "of the pipeline stage in the function 'wsfuse_mm'"},
};

/* A ptxas --verbose log of kernel wsfuse_mm with LINE in it. */
static const char *
ptxas_log(Comp *c, const char *line)
{
	return arena_printf(c->arena,
	                    "ptxas info    : 0 bytes gmem\n"
	                    "ptxas info    : Compiling entry function 'wsfuse_mm' for 'sm_90a'\n"
	                    "%s%s"
	                    "ptxas info    : Function properties for wsfuse_mm\n"
	                    "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
	                    "ptxas info    : Used 168 registers, used 1 barriers, 448 bytes cmem[0]",
	                    line, *line ? "\n" : "");
}

/* The path of fake_nvrtc.so, which tests.mk builds beside this program. */
static void
fake_nvrtc_path(char *path, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", path, size - sizeof "fake_nvrtc.so");
	char *slash;

	assert_true(n > 0);
	path[n] = 0;
	slash = strrchr(path, '/');
	assert_non_null(slash);
	strcpy(slash + 1, "fake_nvrtc.so");
}

static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static int
setup(void **state)
{
	Dirs *d = calloc(1, sizeof *d);

	if (!d)
		return -1;
	strcpy(d->root, "/tmp/wsfuse-test-nvrtc-XXXXXX");
	if (!mkdtemp(d->root))
		return -1;
	snprintf(d->cache, sizeof d->cache, "%s/cache", d->root);
	snprintf(d->dump, sizeof d->dump, "%s/dump", d->root);
	unsetenv("WSFUSE_NVRTC_PATH");
	*state = d;
	return 0;
}

static int
teardown(void **state)
{
	Dirs *d = *state;

	nftw(d->root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(d);
	return 0;
}

static int
file_has(const char *path, const char *text)
{
	char buf[4096] = {0};
	FILE *f = fopen(path, "rb");

	if (!f)
		return 0;
	if (fread(buf, 1, sizeof buf - 1, f) == 0)
		buf[0] = 0;
	fclose(f);
	return strstr(buf, text) != NULL;
}

static void
test_compile_then_hit(void **state)
{
	Dirs *d = *state;
	RtOptions o = {d->cache, 2, d->dump, false, NULL};
	Cubin a, b;
	Comp c;

	if (!have_nvrtc())
		skip_because(NO_NVRTC);
	COMP_INIT(c);
	assert_int_equal(rt_compile(&c, &o, "k", good_src, &header, 1, &a), WSF_OK);
	assert_false(a.cache_hit);
	assert_true(a.cubin_len > 4);
	assert_memory_equal(a.cubin, "\x7f" "ELF", 4);
	assert_int_equal(strlen(a.ptx), a.ptx_len);
	assert_contains(a.ptx, ".target sm_90a");
	assert_contains(a.ptx, ".entry k");
	assert_contains(a.log, "ptxas info"); /* --ptxas-options=--verbose */
	assert_contains(a.log, "Used");
	assert_contains(a.log, " bytes spill stores"); /* what rt_spill_bytes reads */
	assert_int_equal(rt_spill_bytes(a.log), 0);

	assert_int_equal(rt_compile(&c, &o, "k", good_src, &header, 1, &b), WSF_OK);
	assert_true(b.cache_hit);
	assert_int_equal(b.cubin_len, a.cubin_len);
	assert_memory_equal(b.cubin, a.cubin, a.cubin_len);
	assert_string_equal(b.ptx, a.ptx);
	assert_string_equal(b.log, a.log);

	/* a different header text is a different kernel */
	{
		RtHeader h2 = {header.name, "#pragma once\n__device__ inline float twice(float v) "
		                            "{ return v + v; }\n"};

		assert_int_equal(rt_compile(&c, &o, "k", good_src, &h2, 1, &b), WSF_OK);
		assert_false(b.cache_hit);
	}
	assert_int_equal(c.nerrors, 0);
	arena_free(c.arena);
}

/* rt_spill_bytes sums the spill stores of every function in a ptxas log. */
static void
test_spill_bytes(void **state)
{
	(void)state;
	assert_int_equal(rt_spill_bytes(""), 0);
	assert_int_equal(rt_spill_bytes("ptxas info    : Function properties for k\n"
	                                "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"),
	                 0);
	assert_int_equal(rt_spill_bytes("ptxas info    : Function properties for a\n"
	                                "    40 bytes stack frame, 52 bytes spill stores, 28 bytes spill loads\n"
	                                "ptxas info    : Function properties for b\n"
	                                "    8 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads\n"),
	                 60);
	/* counts no ptxas writes: too long to be one, or signed, are not read; sums do not wrap */
	assert_int_equal(rt_spill_bytes("    0 bytes stack frame, 99999999999999999999 bytes spill stores\n"), 0);
	assert_int_equal(rt_spill_bytes("    0 bytes stack frame, 4294967296 bytes spill stores\n"), 0);
	assert_int_equal(rt_spill_bytes("    0 bytes stack frame, -8 bytes spill stores\n"), 0);
	{
		static char log[200 * 32];
		int i;

		for (i = 0; i < 200; i++)
			strcat(log, "16777216 bytes spill stores\n");   /* 28 bytes */
		assert_int_equal(rt_spill_bytes(log), 2147483647);
	}
}

static void
test_cache_off(void **state)
{
	Dirs *d = *state;
	RtOptions o = {d->cache, 1, d->dump, false, NULL};
	struct stat st;
	Cubin a;
	Comp c;

	if (!have_nvrtc())
		skip_because(NO_NVRTC);
	COMP_INIT(c);
	assert_int_equal(rt_compile(&c, &o, "k", good_src, &header, 1, &a), WSF_OK);
	assert_int_equal(rt_compile(&c, &o, "k", good_src, &header, 1, &a), WSF_OK);
	assert_false(a.cache_hit);
	assert_int_not_equal(stat(d->cache, &st), 0);
	arena_free(c.arena);
}

static void
test_syntax_error(void **state)
{
	Dirs *d = *state;
	RtOptions o = {d->cache, 2, d->dump, false, NULL};
	const char *msg, *src;
	char path[256];
	Cubin a;
	Comp c;

	if (!have_nvrtc())
		skip_because(NO_NVRTC);
	COMP_INIT(c);
	assert_int_equal(rt_compile(&c, &o, "bad", bad_src, &header, 1, &a), WSF_ERR_NVRTC);
	assert_int_equal(c.nerrors, 1);
	msg = c.last_error;
	assert_contains(msg, "nvrtcCompileProgram: NVRTC_ERROR_COMPILATION");
	assert_contains(msg, "sm_90a");
	assert_contains(msg, "options: --gpu-architecture=sm_90a -std=c++17 -default-device "
	                     "--fmad=true -DNDEBUG --ptxas-options=--verbose");
	assert_contains(msg, "bad.cu(2): error");
	/* the source went to the dump dir, and the message says where */
	snprintf(path, sizeof path, "source: %s/bad-", d->dump);
	assert_contains(msg, path);
	src = strstr(msg, "source: ") + strlen("source: ");
	assert_true(file_has(src, "twice(x[threadIdx.x]) }"));
	assert_int_equal(a.cubin_len, 0);
	arena_free(c.arena);
}

static void
test_error_dump_without_dump_dir(void **state)
{
	Dirs *d = *state;
	RtOptions o = {d->cache, 2, NULL, false, NULL};
	char path[256];
	Cubin a;
	Comp c;

	if (!have_nvrtc())
		skip_because(NO_NVRTC);
	COMP_INIT(c);
	assert_int_equal(rt_compile(&c, &o, "bad", bad_src, &header, 1, &a), WSF_ERR_NVRTC);
	snprintf(path, sizeof path, "source: %s/failed/bad-", d->cache);
	assert_contains(c.last_error, path);
	assert_true(file_has(strstr(c.last_error, "source: ") + 8, "extern"));
	arena_free(c.arena);
}

/* No dump folder and no cache: a refused source goes to $TMPDIR (else /tmp). */
static void
test_error_dump_to_tmpdir(void **state)
{
	Dirs *d = *state;
	RtOptions o = {NULL, 1, NULL, false, NULL};
	char *keep, path[256];
	Cubin a;
	Comp c;

	if (!have_nvrtc())
		skip_because(NO_NVRTC);
	COMP_INIT(c);
	keep = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
	setenv("TMPDIR", d->dump, 1);
	assert_int_equal(rt_compile(&c, &o, "bad", bad_src, &header, 1, &a), WSF_ERR_NVRTC);
	if (keep)
		setenv("TMPDIR", keep, 1);
	else
		unsetenv("TMPDIR");
	free(keep);
	snprintf(path, sizeof path, "source: %s/wsfuse-bad-", d->dump);
	assert_contains(c.last_error, path);
	assert_true(file_has(strstr(c.last_error, "source: ") + 8, "extern"));
	arena_free(c.arena);
}

/*
 * -lineinfo names the source in the PTX's .file directive: NVRTC escapes a
 * backslash there but not a quote, on which ptxas fails.  A folder with a
 * backslash compiles and is named; one with a quote is refused, clearly,
 * before NVRTC.
 */
static void
test_lineinfo_folder_names(void **state)
{
	Dirs *d = *state;
	RtOptions o = {d->cache, 1, NULL, true, NULL};
	char dir[160];
	Cubin a;
	Comp c;

	if (!have_nvrtc())
		skip_because(NO_NVRTC);
	COMP_INIT(c);
	snprintf(dir, sizeof dir, "%s/back\\slash", d->dump);
	o.line_dir = dir;
	assert_int_equal(rt_compile(&c, &o, "k", good_src, &header, 1, &a), WSF_OK);
	assert_contains(a.ptx, ".file");
	assert_contains(a.ptx, "/back\\\\slash/k.cu\"");
	snprintf(dir, sizeof dir, "%s/qu\"ote\\", d->dump);
	assert_int_equal(rt_compile(&c, &o, "k", good_src, &header, 1, &a), WSF_ERR_USAGE);
	assert_int_equal(c.nerrors, 1);
	assert_contains(c.last_error, "-lineinfo: the line tables would name '");
	assert_contains(c.last_error, "/qu\"ote\\/k.cu', and ptxas takes no '\"'");
	/* the same without line tables: the name is not in the PTX */
	o.lineinfo = false;
	assert_int_equal(rt_compile(&c, &o, "k", good_src, &header, 1, &a), WSF_OK);
	arena_free(c.arena);
}

static void
test_missing_header(void **state)
{
	Dirs *d = *state;
	RtOptions o = {d->cache, 2, d->dump, false, NULL};
	Cubin a;
	Comp c;

	if (!have_nvrtc())
		skip_because(NO_NVRTC);
	COMP_INIT(c);
	assert_int_equal(rt_compile(&c, &o, "k", good_src, NULL, 0, &a), WSF_ERR_NVRTC);
	assert_contains(c.last_error, "wsf_test.cuh");
	arena_free(c.arena);
}

static void
test_ignored_setmaxnreg_is_an_error(void **state)
{
	Dirs *d = *state;
	RtOptions o = {d->cache, 2, d->dump, false, NULL};
	Cubin a;
	Comp c;

	if (!have_nvrtc())
		skip_because(NO_NVRTC);
	COMP_INIT(c);
	assert_int_equal(rt_compile(&c, &o, "smr", setmaxnreg_src, NULL, 0, &a), WSF_ERR_NVRTC);
	assert_contains(c.last_error, "ptxas: setmaxnreg ignored, which wsfuse treats as an error");
	assert_contains(c.last_error, "kernel 'smr'");
	assert_contains(c.last_error, "'setmaxnreg' ignored"); /* ptxas's own line */
	assert_contains(c.last_error, "source: ");
	/* a failed compile is not cached */
	assert_int_equal(rt_compile(&c, &o, "smr", setmaxnreg_src, NULL, 0, &a), WSF_ERR_NVRTC);
	arena_free(c.arena);
}

static void
test_serialized_wgmma_is_an_error(void **state)
{
	Dirs *d = *state;
	RtOptions o = {d->cache, 2, d->dump, false, NULL};
	Cubin a;
	Comp c;

	if (!have_nvrtc())
		skip_because(NO_NVRTC);
	COMP_INIT(c);
	assert_int_equal(rt_compile(&c, &o, "wg", wgmma_src, NULL, 0, &a), WSF_ERR_NVRTC);
	assert_contains(c.last_error, "ptxas: wgmma serialized, which wsfuse treats as an error");
	assert_contains(c.last_error, "kernel 'wg'");
	assert_contains(c.last_error, "wgmma.mma_async instructions are serialized");
	arena_free(c.arena);
}

/* Each code fails the compile in its own words, ptxas's too; the informational lines do not. */
static void
test_ptxas_fatal(void **state)
{
	const char *lines, *what;
	Buf b;
	Comp c;
	int i;

	(void)state;
	COMP_INIT(c);
	assert_null(rt_ptxas_fatal(c.arena, "", &lines));
	assert_string_equal(lines, "");
	assert_null(rt_ptxas_fatal(c.arena, ptxas_log(&c, ""), &lines));
	/* what ptxas says of the arrives and waits it adds around wgmmas: no loss */
	assert_null(rt_ptxas_fatal(c.arena, ptxas_log(&c,
		"ptxas info    : (C7519) warpgroup.arrive is injected in around line 94 by compiler to "
		"allow use of registers in GMMA in function 'wsfuse_mm'\n"
		"ptxas info    : (C7517) warpgroup.wait is injected in around line 92 by compiler to "
		"allow use of registers defined by GMMA in function 'wsfuse_mm'"), &lines));
	for (i = 0; i < (int)(sizeof fatal_lines / sizeof fatal_lines[0]); i++) {
		const char *reworded = arena_printf(c.arena, "ptxas info    : %s some later wording", fatal_lines[i].code);

		what = rt_ptxas_fatal(c.arena, ptxas_log(&c, fatal_lines[i].line), &lines);
		assert_non_null(what);
		assert_contains(what, fatal_lines[i].means);
		assert_contains(what, "which wsfuse treats as an error");
		assert_contains(lines, fatal_lines[i].line);
		assert_contains(lines, fatal_lines[i].means);
		/* the code alone is enough */
		what = rt_ptxas_fatal(c.arena, ptxas_log(&c, reworded), &lines);
		assert_non_null(what);
		assert_contains(what, fatal_lines[i].means);
		assert_contains(lines, reworded);
	}
	/* a code not in the table, caught by ptxas's words */
	what = rt_ptxas_fatal(c.arena, ptxas_log(&c,
		"ptxas info    : (C7520) Potential Performance Loss: wgmma.mma_async instructions are serialized "
		"due to program dependence on compiler-inserted WG.AR in divergent path in the function "
		"'wsfuse_mm'"), &lines);
	assert_non_null(what);
	assert_contains(lines, "(C7520)");
	/* both kinds at once: every line, each once */
	buf_init(&b, c.arena);
	buf_printf(&b, "%s\n%s", fatal_lines[0].line, fatal_lines[3].line);
	what = rt_ptxas_fatal(c.arena, ptxas_log(&c, buf_str(&b)), &lines);
	assert_string_equal(what, "wgmma serialized and setmaxnreg ignored, which wsfuse treats as errors");
	assert_contains(lines, fatal_lines[0].line);
	assert_contains(lines, fatal_lines[3].line);
	assert_null(strstr(strstr(lines, "(C7511)") + 1, "(C7511)"));
	arena_free(c.arena);
}

/* Through a whole compile, with the fake NVRTC: the error names the kernel and quotes the line. */
static void
test_ptxas_warnings_fail_the_compile(void **state)
{
	Dirs *d = *state;
	RtOptions o = {d->cache, 1, d->dump, false, NULL};
	char fake[4096];
	Cubin a;
	Comp c;
	int i;

	fake_nvrtc_path(fake, sizeof fake);
	COMP_INIT(c);
	setenv("WSFUSE_NVRTC_PATH", fake, 1);
	setenv("FAKE_NVRTC_LOG", ptxas_log(&c, ""), 1);
	assert_int_equal(rt_compile(&c, &o, "wsfuse_mm", good_src, &header, 1, &a), WSF_OK);
	assert_memory_equal(a.cubin, "\x7f" "ELF", 4);
	for (i = 0; i < (int)(sizeof fatal_lines / sizeof fatal_lines[0]); i++) {
		setenv("FAKE_NVRTC_LOG", ptxas_log(&c, fatal_lines[i].line), 1);
		assert_int_equal(rt_compile(&c, &o, "wsfuse_mm", good_src, &header, 1, &a), WSF_ERR_NVRTC);
		assert_int_equal(a.cubin_len, 0);
		assert_contains(c.last_error, arena_printf(c.arena, "ptxas: %s, which wsfuse treats as an error",
		                                           fatal_lines[i].means));
		assert_contains(c.last_error, "kernel 'wsfuse_mm'");
		assert_contains(c.last_error, fatal_lines[i].line);
		assert_contains(c.last_error, "source: ");
	}
	unsetenv("FAKE_NVRTC_LOG");
	unsetenv("WSFUSE_NVRTC_PATH");
	assert_int_equal(c.nerrors, (int)(sizeof fatal_lines / sizeof fatal_lines[0]));
	arena_free(c.arena);
}

static void
test_bad_nvrtc_path(void **state)
{
	Dirs *d = *state;
	RtOptions o = {d->cache, 2, d->dump, false, NULL};
	Cubin a;
	Comp c;

	COMP_INIT(c);
	setenv("WSFUSE_NVRTC_PATH", "/nonexistent/libnvrtc.so.13", 1);
	assert_int_equal(rt_compile(&c, &o, "k", good_src, &header, 1, &a), WSF_ERR_NVRTC);
	unsetenv("WSFUSE_NVRTC_PATH");
	assert_contains(c.last_error, "WSFUSE_NVRTC_PATH");
	assert_contains(c.last_error, "/nonexistent/libnvrtc.so.13");
	arena_free(c.arena);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_compile_then_hit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cache_off, setup, teardown),
		cmocka_unit_test(test_spill_bytes),
		cmocka_unit_test_setup_teardown(test_syntax_error, setup, teardown),
		cmocka_unit_test_setup_teardown(test_error_dump_without_dump_dir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_error_dump_to_tmpdir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lineinfo_folder_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_header, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ignored_setmaxnreg_is_an_error, setup, teardown),
		cmocka_unit_test_setup_teardown(test_serialized_wgmma_is_an_error, setup, teardown),
		cmocka_unit_test(test_ptxas_fatal),
		cmocka_unit_test_setup_teardown(test_ptxas_warnings_fail_the_compile, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_nvrtc_path, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
