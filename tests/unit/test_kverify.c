/*
 * test_kverify.c: unit tests of the kernel IR verifier (ir/kverify.c).
 *
 * Each promise of kverify.c's header comment gets a case: a kernel built by
 * hand and run through the kernel passes (which the verifier accepts), then
 * broken in one place, which the verifier must refuse with the message that
 * names what broke.  The last test runs every example and GPU spec through
 * the passes, so a new check cannot refuse a kernel the passes really make.
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

#include "../../compiler/compiler.h"
#include "../../passes/passes.h"

#include "fixture.h"
#include "skip_because.h"

/*
 * for i in [0, n): { if elect() { load in0, in1 }; compute reading them },
 * two 16 x 256 bf16 tiles, through circular_buffer (S = 8, P = 7),
 * warp_specialize when WS, and sync.
 */
static Kernel *
build(Fixture *t, bool ws)
{
	Comp *c = &t->c;
	Fusion *f = fusion_new(c);
	Kernel *k;
	Stmt *loop, *issue, *compute;
	int i, n;

	f->name = "k";
	k = c->kernel = kernel_new(c, f);
	k->warp_specialize = ws;
	k->consumer_threads = 256;
	k->threads = ws ? 288 : 256;
	k->smem_budget = 200 * 1024;
	n = kernel_add_param(c, k, PK_SIZE, "n");
	k->param[n].var = kernel_add_var(c, k, "n");
	loop = st_loop(c, kernel_add_var(c, k, "i"), ex_int(c, 0), ex_var(c, k->param[n].var), LOOP_TILE);
	st_append(c, k->body, loop);
	issue = st_if(c, ex_leaf(c, EX_ELECT));
	compute = st_new(c, ST_COMPUTE);
	st_append(c, loop, issue);
	st_append(c, loop, compute);
	compute->u.compute.row = ex_var(c, loop->u.loop.var);
	compute->u.compute.col = ex_int(c, 0);
	for (i = 0; i < 2; i++) {
		int p = kernel_add_param(c, k, PK_TMAP, arena_printf(c->arena, "in%d", i));
		int b = kernel_add_buf(c, k, arena_printf(c->arena, "in%d_tile", i), BUF_TILE, DT_BF16, 16, 256);
		Stmt *ld = st_new(c, ST_TMA_LOAD);

		k->param[p].dtype = DT_BF16;
		k->buf[b].param = p;
		ld->u.tma.buf = b;
		ld->u.tma.param = p;
		ld->u.tma.slot = ex_int(c, 0);
		ld->u.tma.row = ex_var(c, loop->u.loop.var);
		ld->u.tma.col = ex_int(c, 0);
		st_append(c, issue, ld);
		VEC_PUSH(c->arena, compute->reads, compute->nreads, compute->capreads)->buf = b;
		compute->reads[compute->nreads - 1].slot = ex_int(c, 0);
	}
	if (pass_circular_buffer(c) || (ws && pass_warp_specialize(c)) || pass_sync(c))
		fail_msg("a pass failed: %s", t->msg);
	if (kernel_verify(c, k, "test") != 0)
		fail_msg("the unbroken kernel does not verify: %s", t->msg);
	return k;
}

typedef struct Find {
	StmtKind kind;
	CbPart part;   /* ST_LOOP: the circular-buffered loop of this part */
	Stmt *s;
} Find;

static void
find_one(Stmt *s, void *user)
{
	Find *f = user;

	if (!f->s && s->kind == f->kind && (f->kind != ST_LOOP || (s->u.loop.cb && s->u.loop.cb->part == f->part)))
		f->s = s;
}

/* The first statement of KIND in K (a loop: the first buffered one of PART). */
static Stmt *
first(const Kernel *k, StmtKind kind, CbPart part)
{
	Find f = {kind, part, NULL};

	st_walk(k->body, find_one, &f);
	if (!f.s)
		fail_msg("no statement of kind %d", kind);
	return f.s;
}

static Stmt *
load(const Kernel *k)
{
	return first(k, ST_TMA_LOAD, CB_NONE);
}

static Stmt *
main_loop(const Kernel *k)
{
	return first(k, ST_LOOP, k->warp_specialize ? CB_PRODUCER : CB_MAIN);
}

static Expr *
ghost(Fixture *t)
{
	return ex_var(&t->c, kernel_add_var(&t->c, t->c.kernel, "ghost"));
}

/* ---- the breaks, one per promise ---- */

static void b_load_buf(Fixture *t, Kernel *k) { (void)t; load(k)->u.tma.buf = k->nbuf; }
static void b_load_param(Fixture *t, Kernel *k) { (void)t; load(k)->u.tma.param = 0; }
static void b_load_param_kind(Fixture *t, Kernel *k) { (void)t; load(k)->u.tma.param = 1; /* n, a size */ }
static void b_load_bar(Fixture *t, Kernel *k) { (void)t; load(k)->u.tma.bar = k->nbar; }
static void b_mbar(Fixture *t, Kernel *k) { (void)t; first(k, ST_MBAR_WAIT, CB_NONE)->u.mbar.bar = 0; }
static void b_compute_read(Fixture *t, Kernel *k) { (void)t; first(k, ST_COMPUTE, CB_NONE)->reads[1].buf = 0; }
static void b_loop_var(Fixture *t, Kernel *k) { (void)t; main_loop(k)->u.loop.var = k->nvar; }
static void b_loop_bound(Fixture *t, Kernel *k) { (void)t; main_loop(k)->u.loop.hi = NULL; }
static void b_buf_param(Fixture *t, Kernel *k) { (void)t; k->buf[2].param = k->nparam; }
static void b_buf_stages(Fixture *t, Kernel *k) { (void)t; k->buf[2].stages = 0; }
static void b_buf_full(Fixture *t, Kernel *k) { (void)t; k->buf[2].full_bar = k->nbar; }
static void b_size_var(Fixture *t, Kernel *k) { (void)t; k->param[1].var = 0; }
static void b_var_id(Fixture *t, Kernel *k) { first(k, ST_COMPUTE, CB_NONE)->u.compute.row = ex_var(&t->c, k->nvar); }
static void b_use_compute(Fixture *t, Kernel *k) { first(k, ST_COMPUTE, CB_NONE)->u.compute.row = ghost(t); }
static void b_use_barslot(Fixture *t, Kernel *k) { load(k)->u.tma.barslot = ghost(t); }
static void b_use_write(Fixture *t, Kernel *k)
{
	Stmt *s = first(k, ST_COMPUTE, CB_NONE);

	VEC_PUSH(t->c.arena, s->writes, s->nwrites, s->capwrites)->buf = 1;
	s->writes[0].slot = ghost(t);
}
static void b_use_lin(Fixture *t, Kernel *k) { main_loop(k)->u.loop.lin = ghost(t); }
static void b_use_cond(Fixture *t, Kernel *k) { first(k, ST_IF, CB_NONE)->u.branch.cond = ghost(t); }
static void b_let_var(Fixture *t, Kernel *k)
{
	Stmt *let = st_new(&t->c, ST_LET);

	let->u.let.value = ex_int(&t->c, 1);
	st_append(&t->c, k->body, let);
}
static void b_load_kind(Fixture *t, Kernel *k) { (void)t; k->buf[load(k)->u.tma.buf].kind = BUF_STAGING; }
/* The first load's buffer a staging copy that carries in1 (a full input before it, box one copy): on BAR */
static Stmt *
carry(Fixture *t, Kernel *k, int bar)
{
	Stmt *ld = load(k);
	KBuf *b = &k->buf[ld->u.tma.buf];
	int p = k->buf[2].param;

	b->kind = BUF_STAGING;
	k->param[b->param].arg = 1;
	k->param[p].arg = 0;
	k->param[p].view = VIEW_FULL;
	k->param[p].preload = true;
	k->param[p].box[0] = b->rows;
	k->param[p].box[1] = b->cols;
	b->preload = p;
	b->preload_bar = kernel_add_bar(&t->c, k, "carry", b->stages, 1);
	ld->u.tma.param = p;
	ld->u.tma.bar = bar ? bar : b->preload_bar;
	return ld;
}
static void b_carry_bar(Fixture *t, Kernel *k) { carry(t, k, k->buf[1].full_bar); }
static void b_carry_box(Fixture *t, Kernel *k) { carry(t, k, 0); k->param[k->buf[2].param].box[1] /= 2; }
static void b_carry_bars(Fixture *t, Kernel *k) { carry(t, k, 0); k->bar[k->buf[1].preload_bar].count++; }
static void b_load_no_bar(Fixture *t, Kernel *k)
{
	(void)t;
	k->buf[1].full_bar = 0;
	load(k)->u.tma.bar = 0;
}
static void b_load_other_bar(Fixture *t, Kernel *k)
{
	load(k)->u.tma.bar = kernel_add_bar(&t->c, k, "other", 8, 1);
}
static void b_load_not_loops_bar(Fixture *t, Kernel *k)
{
	int other = kernel_add_bar(&t->c, k, "other", 8, 1);

	k->buf[1].full_bar = other;
	load(k)->u.tma.bar = other;
}
static void b_buf_no_full(Fixture *t, Kernel *k) { (void)t; k->buf[1].full_bar = 0; }
static void b_stages(Fixture *t, Kernel *k) { (void)t; k->buf[2].stages = 3; }
static void b_prefetch(Fixture *t, Kernel *k) { (void)t; main_loop(k)->u.loop.cb->prefetch = 8; }
static void b_prefetch_neg(Fixture *t, Kernel *k) { (void)t; main_loop(k)->u.loop.cb->prefetch = -1; }
static void b_cb_full(Fixture *t, Kernel *k) { (void)t; main_loop(k)->u.loop.cb->full_bar = 0; }
static void b_cb_full_count(Fixture *t, Kernel *k) { (void)t; k->bar[main_loop(k)->u.loop.cb->full_bar].count = 4; }
static void b_cb_empty(Fixture *t, Kernel *k) { (void)t; main_loop(k)->u.loop.cb->empty_bar = k->nbar; }
static void b_cb_empty_count(Fixture *t, Kernel *k) { (void)t; k->bar[main_loop(k)->u.loop.cb->empty_bar].count = 2; }
static void b_row_phase(Fixture *t, Kernel *k) { (void)t; first(k, ST_COMPUTE, CB_NONE)->u.compute.phase = ROW_CHUNK; }
static void b_sync_in_roles(Fixture *t, Kernel *k)
{
	st_append(&t->c, first(k, ST_LOOP, CB_CONSUMER), st_new(&t->c, ST_SYNC));
}

static KRole *
role(const Kernel *k, RoleKind kind)
{
	int i;

	for (i = 1; i < k->nrole; i++)
		if (k->role[i].kind == kind)
			return &k->role[i];
	fail_msg("no role of kind %d", kind);
	return NULL;
}
static void b_role_warps(Fixture *t, Kernel *k) { (void)t; role(k, ROLE_PRODUCER)->threads = 48; }
static void b_role_outside(Fixture *t, Kernel *k) { (void)t; role(k, ROLE_PRODUCER)->first = k->threads; }
static void b_role_overlap(Fixture *t, Kernel *k) { (void)t; role(k, ROLE_CONSUMER)->threads = 288; }
static void b_role_bar(Fixture *t, Kernel *k) { (void)t; role(k, ROLE_CONSUMER)->bar_id = 0; }
static void b_role_groups(Fixture *t, Kernel *k) { (void)t; role(k, ROLE_CONSUMER)->groups = 3; }
static void b_role_regs(Fixture *t, Kernel *k) { (void)t; role(k, ROLE_PRODUCER)->regs = 40; /* one warp */ }
static void b_role_regs_step(Fixture *t, Kernel *k) { (void)t; role(k, ROLE_CONSUMER)->regs = 230; }
static void b_swap_tile(Fixture *t, Kernel *k)
{
	(void)t;
	k->family = FAM_MATMUL;
	k->mm = matmul_none;
	k->mm.swap_ab = k->mm.pingpong = true;   /* ping-pong's swapped tile is 64 columns wide */
	k->tile_rows = 16;
	k->tile_cols = 128;
}
static void b_split_cluster(Fixture *t, Kernel *k)
{
	(void)t;
	k->family = FAM_MATMUL;
	k->mm = matmul_none;
	k->mm.ksize.splits = 4;   /* 4 x 2 x 2: past the portable cluster size */
	k->mm.cluster[0] = k->mm.cluster[1] = 2;
}
static void b_split_reduce(Fixture *t, Kernel *k)
{
	Stmt *s = st_new(&t->c, ST_SPLIT_REDUCE);

	k->family = FAM_MATMUL;
	k->mm = matmul_none;
	k->mm.ksize.splits = 2;
	s->u.split.buf = 1;   /* a tile buffer, not a partial-sum one; and no accumulator, barriers or parity */
	st_append(&t->c, k->body, s);
}
static void b_role_twice(Fixture *t, Kernel *k)
{
	Stmt *roles = first(k, ST_ROLES, CB_NONE);

	roles->body[1]->u.role.id = roles->body[0]->u.role.id;
}

static const struct {
	const char *promise;
	bool ws;
	void (*brk)(Fixture *t, Kernel *k);
	const char *msg;
} breaks[] = {
	{"ids: a TMA load's buffer", false, b_load_buf, "TMA statement with a bad buffer or param"},
	{"ids: a TMA load's param", false, b_load_param, "TMA statement with a bad buffer or param"},
	{"a TMA param is a tensor map or a pointer", false, b_load_param_kind,
	 "TMA statement on a param that is neither a tensor map nor a pointer"},
	{"ids: a TMA load's barrier", false, b_load_bar, "TMA load with a bad barrier"},
	{"ids: an mbarrier statement's barrier", false, b_mbar, "mbarrier statement with a bad barrier"},
	{"ids: a compute's buffers", false, b_compute_read, "compute reads or writes a bad buffer"},
	{"ids: a loop's variable", false, b_loop_var, "loop without variable or bounds"},
	{"ids: a let's variable", false, b_let_var, "let of a bad variable"},
	{"ids: a buffer's param", false, b_buf_param, "buffer without stages or param (a partial-sum buffer has none)"},
	{"ids: a buffer's full barrier", false, b_buf_full, "buffer 'in1_tile' has a bad full barrier"},
	{"ids: a size param's variable", false, b_size_var, "size param 'n' holds no variable"},
	{"ids: a variable in an expression", false, b_var_id, "variable id out of range"},
	{"ids: a circular buffer's full barrier", false, b_cb_full, "circular buffer without a full barrier"},
	{"ids: a circular buffer's empty barrier", true, b_cb_empty, "circular buffer with a bad empty barrier"},
	{"a buffer has stages", false, b_buf_stages, "buffer without stages or param (a partial-sum buffer has none)"},
	{"loops have bounds", false, b_loop_bound, "loop without variable or bounds"},
	{"set before use: a compute's coordinates", false, b_use_compute, "variable 'ghost' used before it is set"},
	{"set before use: a load's barrier slot", false, b_use_barslot, "variable 'ghost' used before it is set"},
	{"set before use: a compute's write slot", false, b_use_write, "variable 'ghost' used before it is set"},
	{"set before use: a loop's stage counter", false, b_use_lin, "variable 'ghost' used before it is set"},
	{"set before use: an if's condition", false, b_use_cond, "variable 'ghost' used before it is set"},
	{"a TMA load fills a tile buffer", false, b_load_kind, "TMA load into a buffer that is not a tile buffer"},
	{"a staging copy's load is of the input it carries, on its barrier", false, b_carry_bar,
	 "TMA load into staging buffer 'in0_tile' that is not its preload on its barrier"},
	{"a carried input's map has one copy's box", false, b_carry_box, "staging buffer 'in0_tile' carries an input "
	 "that is not a full input of its element size (a candidate's pointer, or a tensor map of one copy's box with a "
	 "barrier a copy)"},
	{"a carried input has a barrier a copy", false, b_carry_bars, "staging buffer 'in0_tile' carries an input "
	 "that is not a full input of its element size (a candidate's pointer, or a tensor map of one copy's box with a "
	 "barrier a copy)"},
	{"a buffered load names a barrier", false, b_load_no_bar,
	 "TMA load of 'in0_tile' in a circular-buffered loop completes on no barrier"},
	{"a load completes on its buffer's full barrier", false, b_load_other_bar,
	 "TMA load completes on a barrier other than its buffer's"},
	{"a buffered load completes on its loop's full barrier", false, b_load_not_loops_bar,
	 "TMA load of 'in0_tile' completes on a barrier other than its loop's full barrier"},
	{"a buffer loaded in a buffered loop has its full barrier", false, b_buf_no_full,
	 "buffer 'in0_tile' is loaded in a circular-buffered loop but has no full barrier"},
	{"S equals the stages of every buffer loaded", false, b_stages,
	 "buffer 'in1_tile' has 3 stages, but the circular-buffered loop that loads it has 8"},
	{"S equals the stages, warp-specialized", true, b_stages,
	 "buffer 'in1_tile' has 3 stages, but the circular-buffered loop that loads it has 8"},
	{"P < S", false, b_prefetch, "circular buffer with prefetch outside [0, stages)"},
	{"0 <= P", false, b_prefetch_neg, "circular buffer with prefetch outside [0, stages)"},
	{"S full barriers", false, b_cb_full_count, "circular buffer of 8 stages has 4 full barriers"},
	{"S empty barriers", true, b_cb_empty_count, "circular buffer of 8 stages has 2 empty barriers"},
	{"a compute's row phase", false, b_row_phase, "a compute's row phase does not match the kernel's row mode"},
	{"no CTA barrier in the roles", true, b_sync_in_roles, "__syncthreads inside warp-specialized roles"},
	{"roles are whole warps", true, b_role_warps, "role 1 is not whole warps inside the CTA's 288 threads"},
	{"roles lie inside the CTA", true, b_role_outside, "role 1 is not whole warps inside the CTA's 288 threads"},
	{"roles share no thread", true, b_role_overlap, "roles 1 and 2 share threads"},
	{"a consumer role has a named barrier", true, b_role_bar, "consumer role 2 has no named barrier of its own"},
	{"a consumer group that owns a tile is a warpgroup", true, b_role_groups,
	 "role 2's 3 groups that each own a tile are not its warpgroups with turn barriers past their own"},
	{"setmaxnreg needs whole warpgroups", true, b_role_regs,
	 "role 1's register target 40 is not a multiple of 8 in [24, 256] for whole warpgroups"},
	{"a register target is a multiple of 8", true, b_role_regs_step,
	 "role 2's register target 230 is not a multiple of 8 in [24, 256] for whole warpgroups"},
	{"one branch a role", true, b_role_twice, "role 1 has two branches"},
	{"a K-split's cluster holds at most 8 CTAs", false, b_split_cluster, "a K-split over 4 CTAs in clusters that "
	 "share an operand, more than 8 CTAs a cluster, which codegen does not build"},
	{"a split-K reduction has its buffer, barriers and accumulator", false, b_split_reduce, "a split-K reduction "
	 "without a K-split, its partial buffer, its two barriers, an accumulator, a parity or the count of CTAs "
	 "with k-steps"},
	{"a swapped tile codegen builds", true, b_swap_tile, "a swapped matmul tile of 16 x 128 (ping-pong), 1 row "
	 "blocks, a cluster of 1 x 1, which codegen does not build"},
};

/* Builds the kernel of case I, breaks it and verifies; false, after saying why, unless refused as expected. */
static bool
refused(int i)
{
	Fixture *t;
	Kernel *k;
	char want[512];
	bool ok;

	if (setup((void **)&t) < 0)
		fail_msg("setup");
	if (setjmp(t->c.oom))
		fail_msg("out of memory");
	k = build(t, breaks[i].ws);
	breaks[i].brk(t, k);
	snprintf(want, sizeof want, FILE_NAME ": error: internal error in kernel verifier: after pass 'test': %s "
	         "(this is a wsfuse bug; please report it with the spec)", breaks[i].msg);
	ok = kernel_verify(&t->c, k, "test") == -1 && strcmp(t->msg, want) == 0 && t->c.nerrors == 1 &&
	     t->c.status == WSF_ERR_INTERNAL;
	if (!ok)
		print_error("%s: expected \"%s\", got %d errors, status %d: \"%s\"\n", breaks[i].promise,
		            breaks[i].msg, t->c.nerrors, t->c.status, t->msg);
	teardown((void **)&t);
	return ok;
}

/* A K-split is a matmul's: another family's kernel has none, whatever its plan's union holds. */
static void
split_is_a_matmuls(void **state)
{
	Fixture *t;
	Kernel *k;

	if (setup((void **)&t) < 0)
		fail_msg("setup");
	if (setjmp(t->c.oom))
		fail_msg("out of memory");
	k = build(t, false);
	k->mm.ksize.splits = 2;
	assert_int_equal(kernel_mm(k)->ksize.splits, 1);
	assert_int_equal(kernel_cluster_ctas(k), 1);
	assert_int_equal(kernel_verify(&t->c, k, "test"), 0);
	teardown((void **)&t);
	(void)state;
}

/*
 * After lowering no statement waits, arrives, fences or forms a barrier:
 * the kernel the later passes synchronised verifies, but not as lowering's.
 */
static void
lowering_leaves_no_sync(void **state)
{
	Fixture *t;
	Kernel *k;

	if (setup((void **)&t) < 0)
		fail_msg("setup");
	if (setjmp(t->c.oom))
		fail_msg("out of memory");
	k = build(t, true);
	assert_int_equal(kernel_verify(&t->c, k, "test"), 0);
	assert_int_equal(kernel_verify(&t->c, k, "lower"), -1);
	assert_string_equal(t->msg, FILE_NAME ": error: internal error in kernel verifier: after pass 'lower': lowering "
	                    "left a mbarrier.init: later passes place every wait, arrive, fence and barrier (this is a "
	                    "wsfuse bug; please report it with the spec)");
	assert_int_equal(t->c.status, WSF_ERR_INTERNAL);
	teardown((void **)&t);
	(void)state;
}

static void
each_promise_is_checked(void **state)
{
	int i, bad = 0;

	for (i = 0; i < countof(breaks); i++)
		bad += !refused(i);
	assert_int_equal(bad, 0);
	(void)state;
}

/* Lowers spec text SRC (LEN bytes, from PATH) through every kernel pass; the verifier runs after each. */
static void
passes_on(const char *path, const char *src, size_t len, char *why, size_t n)
{
	Fixture *t;

	if (setup((void **)&t) < 0)
		fail_msg("setup");
	if (setjmp(t->c.oom))
		fail_msg("out of memory");
	t->c.file = path;
	t->c.src = src;
	t->c.srclen = len;
	if (spec_read(&t->c) || passes_run(&t->c, WSF_STAGE_FUSION_IR) || passes_run(&t->c, WSF_STAGE_KERNEL_IR)) {
		/* a family not built yet is a user-facing error; a verifier's is internal */
		if (t->c.status == WSF_ERR_INTERNAL || !strstr(t->msg, "not implemented yet"))
			snprintf(why, n, "%s: %s", path, t->msg);
	}
	teardown((void **)&t);
}

/* passes_on() the spec file PATH. */
static void
passes_on_file(const char *path, char *why, size_t n)
{
	FILE *fp = fopen(path, "rb");
	long len = -1;
	char *src = NULL;

	if (fp && !fseek(fp, 0, SEEK_END) && (len = ftell(fp)) >= 0 && !fseek(fp, 0, SEEK_SET) &&
	    (src = malloc((size_t)len + 1)) && fread(src, 1, (size_t)len, fp) != (size_t)len)
		len = -1;
	if (fp)
		fclose(fp);
	if (src && len >= 0)
		passes_on(path, src, (size_t)len, why, n);
	else
		snprintf(why, n, "cannot read %s", path);
	free(src);
}

/* Every example and GPU spec goes through the kernel passes with the verifier content. */
static void
examples_verify(void **state)
{
	static const char *const dirs[] = {"examples", "tests/gpu/specs", "tests/golden"};
	char path[1024], why[8192] = "";
	int d, nspecs = 0;

	for (d = 0; d < countof(dirs) && !why[0]; d++) {
		DIR *dir = opendir(dirs[d]);
		struct dirent *e;

		if (!dir)
			skip_because("no folder %s: not run from the repository root", dirs[d]);
		while (!why[0] && (e = readdir(dir))) {
			size_t len = strlen(e->d_name);

			if (len < 6 || strcmp(e->d_name + len - 5, ".yaml") != 0)
				continue;
			snprintf(path, sizeof path, "%s/%s", dirs[d], e->d_name);
			passes_on_file(path, why, sizeof why);
			nspecs++;
		}
		closedir(dir);
	}
	if (why[0])
		fail_msg("%s", why);
	assert_true(nspecs >= 8);
	(void)state;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(each_promise_is_checked),
		cmocka_unit_test(split_is_a_matmuls),
		cmocka_unit_test(lowering_leaves_no_sync),
		cmocka_unit_test(examples_verify),
	};

	return cmocka_run_group_tests_name("kverify", tests, NULL, NULL);
}
