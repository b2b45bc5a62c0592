/*
 * test_emit.c: the shared-memory layout of the emitted CUDA, read back from
 * the text as NVRTC will see it.  Every buffer and every copy of it must
 * start on 128 bytes (TMA faults with CUDA_ERROR_MISALIGNED_ADDRESS on a
 * destination off it), copies must lie at least their bytes apart, no
 * buffer may overlap the next, and the mbarriers come after them all.
 * Copies narrower than 128 bytes (a bias row of 16 or 32 elements, a
 * one-row tile) are padded, and stepping through them by their unpadded
 * size once put every odd stage off its alignment; the sizes below make
 * such copies, and every GPU spec, example and line of the GPU sweep (with
 * its sizes) is checked too.  And the device header NVRTC gets with each
 * kernel: device.cuh, then its family's helpers.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../codegen/codegen.h"
#include "../../compiler/compiler.h"
#include "../../passes/passes.h"

enum { MAX_BUFS = 32 };

typedef struct SmemBuf {
	char name[64];
	long long off, stride, bytes;   /* stride: bytes from one copy to the next (0: not seen) */
	int stages;
} SmemBuf;

static int
dtype_bytes(const char *name)
{
	if (strcmp(name, "f32") == 0)
		return 4;
	if (strcmp(name, "f16") == 0 || strcmp(name, "bf16") == 0)
		return 2;
	return 1;
}

static bool
ident_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
}

/*
 * Every "NAME + (SLOT) * N" in CU: a copy's address; checks N and keeps the
 * stride in B.  "NAME + (X * N)" is a place inside a buffer of one copy (a
 * ping-pong warpgroup's half of a staging copy, a cluster rank's half of a
 * one-stage operand): N elements must be a multiple of 128 bytes, where TMA
 * reads and writes shared memory.
 */
static void
check_copies(const char *what, const char *cu, SmemBuf *b, int elem)
{
	size_t n = strlen(b->name);
	const char *p;

	for (p = strstr(cu, b->name); p; p = strstr(p + 1, b->name)) {
		const char *q = p + n;
		long long stride;
		int depth = 1;

		if ((p > cu && ident_char(p[-1])) || strncmp(q, " + (", 4) != 0)
			continue;
		for (q += 4; *q && depth; q++)
			depth += *q == '(' ? 1 : *q == ')' ? -1 : 0;
		if (strncmp(q, " * ", 3) != 0 && q - 3 > p) {   /* (X * N): an offset in the one copy */
			const char *m = q - 2;

			while (m > p && (*m == 'L' || (*m >= '0' && *m <= '9')))
				m--;
			if (strncmp(m - 2, " * ", 3) != 0 || sscanf(m + 1, "%lld", &stride) != 1)
				fail_msg("%s: a place in '%s' without a multiplier: %.60s", what, b->name, p);
			if (stride * elem % 128)
				fail_msg("%s: a place in '%s' %lld bytes on: not a multiple of 128", what, b->name, stride * elem);
			continue;
		}
		if (sscanf(q, " * %lld", &stride) != 1)
			fail_msg("%s: a copy of '%s' without a stride: %.60s", what, b->name, p);
		stride *= elem;
		if (stride % 128 || stride < b->bytes)
			fail_msg("%s: copies of '%s' (%lld bytes) lie %lld bytes apart: the stride must be a "
			         "multiple of 128 and at least a copy's bytes", what, b->name, b->bytes, stride);
		if (b->stride && b->stride != stride)
			fail_msg("%s: copies of '%s' lie %lld and %lld bytes apart", what, b->name, b->stride, stride);
		b->stride = stride;
	}
}

/* Reads the buffer and mbarrier declarations of CU back and checks the layout. */
static void
check_layout(const char *what, const char *cu)
{
	SmemBuf buf[MAX_BUFS];
	const char *p = cu;
	long long end = 0, bar = -1;
	int n = 0, i;

	while ((p = strstr(p, "(wsf_smem + "))) {
		const char *ln = p, *decl;
		char dt[16];
		long long off;
		int stages, rows, cols;

		while (ln > cu && ln[-1] != '\n')
			ln--;
		decl = strstr(ln, " *const ");
		if (sscanf(p, "(wsf_smem + %lld);", &off) != 1)
			fail_msg("%s: unreadable: %.80s", what, ln);
		p++;
		if (strncmp(ln, "    wsf_u64 ", 12) == 0) {
			if (bar < 0)
				bar = off;
			continue;
		}
		if (n == MAX_BUFS || !decl || sscanf(strstr(p, "// ["), "// [%d stages][%d][%d] %15s", &stages, &rows,
		                                     &cols, dt) != 4)
			fail_msg("%s: unreadable buffer: %.80s", what, ln);
		memset(&buf[n], 0, sizeof buf[n]);
		sscanf(decl + 8, "%63[A-Za-z0-9_]", buf[n].name);
		buf[n].off = off;
		buf[n].stages = stages;
		buf[n].bytes = (long long)rows * cols * dtype_bytes(dt);
		check_copies(what, cu, &buf[n], dtype_bytes(dt));
		if (stages > 1 && !buf[n].stride)
			fail_msg("%s: '%s' has %d copies and no copy's address", what, buf[n].name, stages);
		n++;
	}
	for (i = 0; i < n; i++) {
		long long stride = buf[i].stride ? buf[i].stride : (buf[i].bytes + 127) / 128 * 128;

		if (buf[i].off % 128)
			fail_msg("%s: '%s' starts at %lld, off 128 bytes", what, buf[i].name, buf[i].off);
		if (buf[i].off < end)
			fail_msg("%s: '%s' at %lld overlaps the buffer before it (to %lld)", what, buf[i].name,
			         buf[i].off, end);
		end = buf[i].off + stride * buf[i].stages;
	}
	if (bar >= 0 && (bar < end || bar % 8))
		fail_msg("%s: mbarriers at %lld, buffers end at %lld", what, bar, end);
}

static char *
slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *s = NULL;
	long n;

	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) ||
	    !(s = calloc(1, (size_t)n + 1)) || fread(s, 1, (size_t)n, f) != (size_t)n)
		fail_msg("cannot read %s (run from the repository root)", path);
	fclose(f);
	return s;
}

/* Every kernel pass and the emitter into B: 0, or -1 after a diagnostic. */
static int
emit(Comp *c, Buf *b)
{
	Launch *l;

	if (setjmp(c->oom))
		fail_msg("out of memory");
	c->arena = arena_new(&c->oom);
	c->strs = strtab_new(c->arena);
	buf_init(b, c->arena);
	return spec_read(c) || passes_run(c, WSF_STAGE_FUSION_IR) || passes_run(c, WSF_STAGE_KERNEL_IR) ||
	       codegen_emit(c, b, &l) ? -1 : 0;
}

/*
 * Lowers SPEC (the file PATH, or TEXT when not NULL) with the bindings
 * NAME, VALUE, ... through every kernel pass and the emitter (no NVRTC:
 * the library's spill probe is not wanted here) and checks the layout.
 */
static void
check_spec(const char *path, const char *text, const char *const *bind, int nbind)
{
	Comp c;
	SizeBinding sb[4];
	Buf b;
	char what[512], *src = text ? NULL : slurp(path);
	int i, len = snprintf(what, sizeof what, "%s", path);

	memset(&c, 0, sizeof c);
	c.file = path;
	c.src = text ? text : src;
	c.srclen = strlen(c.src);
	for (i = 0; i + 1 < nbind && i / 2 < countof(sb); i += 2) {
		sb[i / 2].name = bind[i];
		sb[i / 2].value = atoll(bind[i + 1]);
		len += snprintf(what + len, sizeof what - (size_t)len, " -D %s=%s", bind[i], bind[i + 1]);
	}
	c.bind = sb;
	c.nbind = nbind / 2;
	if (emit(&c, &b)) {
		if (c.status != WSF_ERR_UNSUPPORTED)   /* the matmul examples */
			fail_msg("%s: %s", what, c.last_error ? c.last_error : "failed");
	} else {
		check_layout(what, buf_str(&b));
	}
	arena_free(c.arena);
	free(src);
}

/* a + c with c a bias row of 16 bf16 (32 bytes): four stages of it in the persistent pipeline */
static const char narrow[] =
	"fusion: narrow\nsizes: {M: 1048576}\ninputs:\n  a: {dtype: bf16, shape: [M, 16]}\n"
	"  c: {dtype: bf16, shape: [16]}\nops:\n  - {out: o, op: add, in: [a, c]}\noutputs:\n  o: {dtype: bf16}\n"
	"schedule: {persistent: true, stages: 4}\n";

/* f16 and f32 rows of 16, one-row tiles of 16 (the staging copies are narrow too) */
static const char narrow_tiles[] =
	"fusion: narrow_tiles\nsizes: {M: 4096, N: 16}\ninputs:\n  a: {dtype: f16, shape: [M, N]}\n"
	"  b: {dtype: f32, shape: [N]}\n  s: {dtype: f32, shape: [M, 1]}\n"
	"ops:\n  - {out: o, op: mul, in: [a, b]}\n  - {out: p, op: add, in: [o, s]}\n"
	"outputs:\n  p: {dtype: bf16}\n  o: {dtype: f32}\n"
	"schedule: {persistent: true, warp_specialize: true, tile: [1, 16], stages: 8}\n";

static void
narrow_copies_are_aligned(void **state)
{
	static const char *const n24[] = {"M", "262144", "N", "24"}, *const n8[] = {"M", "262144", "N", "8"};
	static const char *const n40[] = {"M", "1000", "N", "40"};

	(void)state;
	check_spec("narrow.yaml", narrow, NULL, 0);
	check_spec("narrow_tiles.yaml", narrow_tiles, NULL, 0);
	check_spec("tests/gpu/specs/bias_scale_tma.yaml", NULL, n24, 4);
	check_spec("tests/gpu/specs/bias_scale_tma.yaml", NULL, n8, 4);
	check_spec("tests/gpu/specs/bias_scale_mixed.yaml", NULL, n40, 4);
}

/* Every GPU spec and example, at its own sizes. */
static void
every_spec_is_aligned(void **state)
{
	static const char *const dirs[] = {"tests/gpu/specs", "examples"};
	int d, seen = 0;

	(void)state;
	for (d = 0; d < 2; d++) {
		DIR *dir = opendir(dirs[d]);
		struct dirent *e;

		if (!dir)
			fail_msg("cannot open %s (run from the repository root)", dirs[d]);
		while ((e = readdir(dir))) {
			char path[512];
			size_t n = strlen(e->d_name);

			if (n < 6 || strcmp(e->d_name + n - 5, ".yaml") != 0)
				continue;
			snprintf(path, sizeof path, "%s/%s", dirs[d], e->d_name);
			check_spec(path, NULL, NULL, 0);
			seen++;
		}
		closedir(dir);
	}
	assert_true(seen > 10);
}

/* Every line of the GPU sweep, with its -D bindings (they choose the tile: a narrow row, a ragged size). */
static void
every_sweep_line_is_aligned(void **state)
{
	FILE *f = fopen("tests/gpu/sweep.txt", "r");
	char line[1024];
	int seen = 0;

	(void)state;
	if (!f)
		fail_msg("cannot open tests/gpu/sweep.txt (run from the repository root)");
	while (fgets(line, sizeof line, f)) {
		const char *bind[8];
		char *w, *save, *spec;
		int n = 0;

		line[strcspn(line, "#\n")] = 0;
		if (!(spec = strtok_r(line, " \t", &save)))
			continue;
		while ((w = strtok_r(NULL, " \t", &save)))
			if (strcmp(w, "-D") == 0 && (w = strtok_r(NULL, " \t", &save)) && strchr(w, '=') && n < 8) {
				*strchr(w, '=') = 0;
				bind[n++] = w;
				bind[n++] = w + strlen(w) + 1;
			}
		check_spec(spec, NULL, bind, n);
		seen++;
	}
	fclose(f);
	assert_true(seen > 50);
}

/*
 * A pointwise kernel's device header is device.cuh alone (no block
 * reductions to compile); a row reduction's goes on with
 * device_reduction.cuh; a kernel with an fp8, integer or bool value with
 * device_dtypes.cuh before its family's.
 */
static void
device_header_by_family(void **state)
{
	size_t nd = strlen(codegen_device_dtypes_cuh), nr = strlen(codegen_device_reduction_cuh);
	char *dtypes = malloc(nd + 2), *dtypes_then_row = malloc(nd + nr + 2);
	const struct {
		const char *path;
		const char *tail;
	} cases[] = {
		{"examples/pointwise_chain.yaml", ""},
		{"examples/layernorm.yaml", codegen_device_reduction_cuh},
		{"tests/golden/fp8_quant.yaml", dtypes_then_row},
		{"tests/golden/dtypes_pointwise.yaml", dtypes},
	};
	size_t n = strlen(codegen_device_cuh);
	int i;

	(void)state;
	assert_non_null(dtypes);
	assert_non_null(dtypes_then_row);
	snprintf(dtypes, nd + 2, "\n%s", codegen_device_dtypes_cuh);
	snprintf(dtypes_then_row, nd + nr + 2, "\n%s%s", codegen_device_dtypes_cuh, codegen_device_reduction_cuh);
	assert_null(strstr(codegen_device_cuh, "wsf_block<"));
	assert_non_null(strstr(codegen_device_reduction_cuh, "wsf_block(float v"));
	for (i = 0; i < countof(cases); i++) {
		Comp c;
		Buf b;
		char *src = slurp(cases[i].path);
		const char *h;

		memset(&c, 0, sizeof c);
		c.file = cases[i].path;
		c.src = src;
		c.srclen = strlen(src);
		if (emit(&c, &b))
			fail_msg("%s: %s", cases[i].path, c.last_error ? c.last_error : "failed");
		h = codegen_device_header(&c, c.kernel);
		assert_memory_equal(h, codegen_device_cuh, n);
		assert_string_equal(h + n, cases[i].tail);
		arena_free(c.arena);
		free(src);
	}
	free(dtypes);
	free(dtypes_then_row);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(narrow_copies_are_aligned),
		cmocka_unit_test(every_spec_is_aligned),
		cmocka_unit_test(every_sweep_line_is_aligned),
		cmocka_unit_test(device_header_by_family),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
