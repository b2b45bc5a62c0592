/*
 * emit_matmul_ksum.c: where a matmul's partial sums over K meet, emitted
 * (ST_SPLIT_REDUCE and ST_SK_*; passes/lower_matmul_ksum.c places them).
 *
 * Requires a kernel whose MatmulPlan.ksum holds partial sums in a CTA
 * (ksum_rule[].split_cluster or .workspace); leaves the CUDA that adds them
 * in a fixed order (rank order, part order), so the sum does not depend on
 * which CTA finishes first.
 */
#include "codegen.h"

/*
 * A K-split's reduction (ST_SPLIT_REDUCE): the warpgroup's fragment of the
 * partial sum goes, 16 bytes at a time, to its row of the partial buffer
 * (register-major: thread t's registers 4q .. 4q + 3 at float4 q x 128 +
 * t), which rank 0 reads from each other rank's shared memory and adds in
 * rank order, so the sum does not depend on which CTA finishes first.
 * With KSUM_SPLIT_SCATTER, a reduce-scatter: each rank writes the
 * registers of the subtiles it does not store, and adds into its own
 * subtiles' registers the others' partials of them (its own first, then
 * the others in rank order), so each rank reads 1 / splits of what rank 0
 * alone read, all at once.
 */
static void
split_reduce_scatter(Emit *e, const Stmt *s, const char *acc, int n)
{
	const Kernel *k = e->k;
	const KAcc *a = &k->acc[s->reads[0].acc];
	const char *full = k->bar[s->u.split.bar].name, *free_ = k->bar[s->u.split.bar + 1].name, *q = "q", *own, *peer = "r";
	int sh = k->mm.cluster[0] * k->mm.cluster[1];

	/* float4 q's subtile (left to right: % and / bind alike): its 8 columns start at 8 q of its 64-row
	   block, of its matmul (side by side) */
	if (k->mm.row_blocks > 1)
		q = arena_printf(e->c->arena, "q %% %d", a->cols / 8);
	if (a->cols != k->tile_cols)
		q = arena_printf(e->c->arena, "%s %% %d", q, k->tile_cols / 8);
	own = arena_printf(e->c->arena, "%s / %d %% %d", q, k->mm.epi_cols / 8, k->mm.ksize.splits);
	if (sh > 1) {   /* rank = split rank x sh + place (lower_split_rank): rank r's CTA of this tile is sh r + at */
		emit_line(e, "const int me = (int)wsf_cluster_rank() / %d, at = (int)wsf_cluster_rank() %% %d;   "
		          "// split rank me stores subtiles me, me + %d, ...; at: the tile's place in the cluster", sh, sh,
		          k->mm.ksize.splits);
		peer = arena_printf(e->c->arena, "%d * r + at", sh);
	} else {
		emit_line(e, "const int me = (int)wsf_cluster_rank();   // stores subtiles me, me + %d, ...", k->mm.ksize.splits);
	}
	emit_line(e, "wsf_mbar_wait(&%s[w], parity ^ 1u);   // the other ranks have read this warpgroup's partial before",
	          free_);
	emit_line(e, "#pragma unroll");
	emit_line(e, "for (int q = 0; q < %d; q++)   // registers 4q .. 4q + 3: their subtile is rank %s's", n / 4, own);
	emit_line(e, "    if (%s != me)   // another rank's subtile: for it to read", own);
	emit_line(e, "        mine[128 * q] = make_float4(%s[4 * q], %s[4 * q + 1], %s[4 * q + 2], %s[4 * q + 3]);", acc, acc,
	          acc, acc);
	emit_line(e, "#pragma unroll");
	emit_line(e, "for (int r = 0; r < %d; r++)", k->mm.ksize.splits);
	emit_line(e, "    if (r != me)");
	emit_line(e, "        wsf_mbar_arrive_remote(&%s[w], %s);   // released to rank r: its subtiles' partials are in place",
	          full, peer);
	emit_line(e, "wsf_mbar_wait_cluster(&%s[w], parity);   // the other ranks' partials of this rank's subtiles are in place",
	          full);
	emit_line(e, "#pragma unroll");
	emit_line(e, "for (int q = 0; q < %d; q++)", n / 4);
	emit_line(e, "    if (%s == me && me >= parts)   // no k-steps here: the mma never wrote them", own);
	emit_line(e, "        %s[4 * q] = %s[4 * q + 1] = %s[4 * q + 2] = %s[4 * q + 3] = 0.0f;", acc, acc, acc, acc);
	emit_line(e, "#pragma unroll");
	emit_line(e, "for (int r = 0; r < %d; r++) {   // in rank order; a rank without k-steps adds nothing",
	          k->mm.ksize.splits);
	emit_line(e, "    if (r == me || r >= parts)");
	emit_line(e, "        continue;");
	emit_line(e, "    const float4 *theirs = wsf_map_rank(mine, %s);", peer);
	emit_line(e, "    #pragma unroll");
	emit_line(e, "    for (int q = 0; q < %d; q++)", n / 4);
	emit_line(e, "        if (%s == me) {", own);
	emit_line(e, "            const float4 v = theirs[128 * q];");
	emit_line(e, "            %s[4 * q] += v.x, %s[4 * q + 1] += v.y, %s[4 * q + 2] += v.z, %s[4 * q + 3] += v.w;", acc, acc,
	          acc, acc);
	emit_line(e, "        }");
	emit_line(e, "}");
	emit_line(e, "#pragma unroll");
	emit_line(e, "for (int r = 0; r < %d; r++)", k->mm.ksize.splits);
	emit_line(e, "    if (r != me)");
	emit_line(e, "        wsf_mbar_arrive_remote(&%s[w], %s);   // rank r's partial is read: it may write its next", free_,
	          peer);
}

void
emit_split_reduce(Emit *e, const Stmt *s)
{
	const Kernel *k = e->k;
	const char *acc = emit_acc_name(e, s->reads[0].acc), *full = k->bar[s->u.split.bar].name;
	const char *free_ = k->bar[s->u.split.bar + 1].name;
	int n = emit_acc_regs(k, s->reads[0].acc);

	emit_line(e, "{   // %s: %d CTAs each summed a share of the k-steps", s->comment ? s->comment : "split-K",
	          k->mm.ksize.splits);
	e->depth++;
	emit_line(e, "const unsigned parity = (unsigned)(%s);", emit_expr_str(e, s->u.split.parity));
	emit_line(e, "const int parts = (int)(%s);   // the ranks with k-steps", emit_expr_str(e, s->u.split.ranks));
	emit_line(e, "const int w = wsf_wg;   // the consumer warpgroup");
	emit_line(e, "float4 *const mine = (float4 *)(%s) + w * %d + threadIdx.x %% 128;",
	          emit_buf_at(e, s->u.split.buf, NULL),
	          n / 4 * 128);
	if (k->mm.ksum == KSUM_SPLIT_SCATTER) {
		split_reduce_scatter(e, s, acc, n);
		e->depth--;
		emit_line(e, "}");
		return;
	}
	emit_line(e, "if (wsf_cluster_rank() != 0) {");
	emit_line(e, "    wsf_mbar_wait(&%s[w], parity ^ 1u);   // rank 0 has read this warpgroup's partial before", free_);
	emit_line(e, "    #pragma unroll");
	emit_line(e, "    for (int q = 0; q < %d; q++)", n / 4);
	emit_line(e, "        mine[128 * q] = make_float4(%s[4 * q], %s[4 * q + 1], %s[4 * q + 2], %s[4 * q + 3]);", acc,
	          acc, acc, acc);
	emit_line(e, "    wsf_mbar_arrive_remote(&%s[w], 0);   // released to rank 0: the partial is in place", full);
	emit_line(e, "} else {");
	emit_line(e, "    wsf_mbar_wait_cluster(&%s[w], parity);   // every other rank's partial is in place", full);
	emit_line(e, "    #pragma unroll");
	emit_line(e, "    for (int r = 1; r < %d; r++) {   // a rank without k-steps adds nothing", k->mm.ksize.splits);
	emit_line(e, "        const float4 *theirs = wsf_map_rank(mine, r);");
	emit_line(e, "        const bool has = r < parts;   // else its registers were never written: not even 0 x them");
	emit_line(e, "        #pragma unroll");
	emit_line(e, "        for (int q = 0; q < %d; q++) {", n / 4);
	emit_line(e, "            const float4 v = theirs[128 * q];");
	emit_line(e, "            %s[4 * q] += has ? v.x : 0.0f, %s[4 * q + 1] += has ? v.y : 0.0f, %s[4 * q + 2] += has ? "
	          "v.z : 0.0f, %s[4 * q + 3] += has ? v.w : 0.0f;", acc, acc, acc, acc);
	emit_line(e, "        }");
	emit_line(e, "    }");
	emit_line(e, "    #pragma unroll");
	emit_line(e, "    for (int r = 1; r < %d; r++)", k->mm.ksize.splits);
	emit_line(e, "        wsf_mbar_arrive_remote(&%s[w], r);   // rank r's partial is read: it may write its next", free_);
	emit_line(e, "}");
	e->depth--;
	emit_line(e, "}");
}

enum { SK_LOADS = 16 };   /* stream_k_scatter's float4 loads in flight: 64 registers beside 128 x 256's 128 */

/*
 * Stream-K in fractions of a tile (KSUM_SK_SCATTER): a part writes to
 * its slot the registers of the subtiles other parts own (float4 q's
 * subtile is q / (epi_cols / 8), part subtile % parts's) and arrives on the
 * count at its tile's first CTA's flag; a part that owns subtiles waits
 * for all the tile's parts to arrive, then adds the others' sums of its
 * subtiles, part by part in order, up to SK_LOADS float4 loads in flight.
 * In clusters a tile's parts are its rank's CTAs of consecutive clusters:
 * part h on the tile's first CTA + h x the cluster's CTAs.
 */
static void
stream_k_scatter(Emit *e, const Stmt *s, const char *acc, const char *ws, int n, int bar, int t)
{
	const Kernel *k = e->k;
	int nsub = k->tile_cols / k->mm.epi_cols, group = n / 4 < SK_LOADS ? n / 4 : SK_LOADS, cl = kernel_cluster_ctas(k);
	const char *by = cl > 1 ? arena_printf(e->c->arena, " * %d", cl) : "";

	emit_line(e, "const long long me = %s, parts = %s;   // this part's index among its tile's, and their number",
	          emit_expr_str(e, s->u.sk.part),
	          emit_expr_str(e, s->u.sk.parts));
	if (s->kind == ST_SK_STORE) {
		emit_line(e, "float4 *const part = (float4 *)wsf_sk_slot(%s, %d, %d, blockIdx.x) + threadIdx.x;", ws,
		          SK_MAX_CTAS, k->mm.ksize.sk_slot);
		emit_line(e, "#pragma unroll");
		emit_line(e, "for (int q = 0; q < %d; q++)   // registers 4q .. 4q + 3, of subtile q / %d", n / 4,
		          k->mm.epi_cols / 8);
		emit_line(e, "    if (q / %d %% parts != me)   // another part's subtile: for it to read", k->mm.epi_cols / 8);
		emit_line(e, "        part[%d * q] = make_float4(%s[4 * q], %s[4 * q + 1], %s[4 * q + 2], %s[4 * q + 3]);", t,
		          acc, acc, acc, acc);
		emit_line(e, "wsf_bar_sync(%d, %d);   // every consumer thread's sums written", bar, t);
		emit_line(e, "if (threadIdx.x == 0)");
		emit_line(e, "    wsf_sk_arrive(wsf_sk_flag(%s, blockIdx.x - me%s));   // counted at the tile's first CTA "
		          "(release, gpu scope)", ws, by);
		return;
	}
	emit_line(e, "const long long first = (long long)blockIdx.x - me%s;   // the tile's first part's CTA", by);
	emit_line(e, "if (threadIdx.x == 0)   // every part's sums are in place (acquire); the last of the %s that own "
	          "subtiles (counted at first + %d) resets the count", nsub > 1 ? "parts" : "part",
	          cl);
	emit_line(e, "    wsf_sk_gather(wsf_sk_flag(%s, first), (unsigned)parts, wsf_sk_flag(%s, first + %d), "
	          "(unsigned)wsf_min(parts, %dLL));", ws, ws, cl, nsub);
	emit_line(e, "wsf_bar_sync(%d, %d);   // what the acquire made visible, to every consumer thread", bar, t);
	if (n / 4 > group) {   /* registers: the loads in flight at once are a group of float4s' */
		emit_line(e, "#pragma unroll");
		emit_line(e, "for (int g = 0; g < %d; g += %d)   // %d registers' loads in flight at a time", n / 4, group,
		          4 * group);
	} else {
		emit_line(e, "const int g = 0;");
	}
	emit_line(e, "for (long long h = 0; h < parts; h++) {   // in part order");
	emit_line(e, "    if (h == me)");
	emit_line(e, "        continue;");
	emit_line(e, "    const float4 *const part = (const float4 *)wsf_sk_slot(%s, %d, %d, first + h%s) + threadIdx.x;", ws,
	          SK_MAX_CTAS, k->mm.ksize.sk_slot, by);
	emit_line(e, "    uint4 v[%d];", group);
	emit_line(e, "    #pragma unroll");
	emit_line(e, "    for (int q = 0; q < %d; q++)   // this part's subtiles' registers", group);
	emit_line(e, "        if ((g + q) / %d %% parts == me)", k->mm.epi_cols / 8);
	emit_line(e, "            v[q] = wsf_ldcg16(part + %d * (g + q));", t);
	emit_line(e, "    #pragma unroll");
	emit_line(e, "    for (int q = 0; q < %d; q++)", group);
	emit_line(e, "        if ((g + q) / %d %% parts == me)", k->mm.epi_cols / 8);
	emit_line(e, "            %s[4 * (g + q)] += __uint_as_float(v[q].x), %s[4 * (g + q) + 1] += __uint_as_float(v[q].y), "
	          "%s[4 * (g + q) + 2] += __uint_as_float(v[q].z), %s[4 * (g + q) + 3] += __uint_as_float(v[q].w);",
	          acc, acc, acc, acc);
	emit_line(e, "}");
}

/*
 * Stream-K's meeting of a tile's parts (ST_SK_STORE, ST_SK_REDUCE): the
 * partial sums of a part that starts inside its tile go, 16 bytes at a
 * time, to the CTA's slot of the workspace (register-major: consumer
 * thread t's registers 4q .. 4q + 3 at float4 q x 256 + t, so a warp's
 * stores are contiguous), and a barrier of the consumers orders them
 * before one thread's release of the CTA's flag; the tile's owner takes
 * the CTAs after it in order, each flag acquired (and reset for the next
 * launch) by one thread, a barrier, then every thread's adds from L2:
 * the sum does not depend on which CTA finishes first.
 */
void
emit_stream_k(Emit *e, const Stmt *s)
{
	const Kernel *k = e->k;
	const char *acc = emit_acc_name(e, s->reads[0].acc), *ws = k->param[s->u.sk.param].name;
	const KRole *r = &k->role[e->role];   /* the consumers: their named barrier, their threads */
	int n = emit_acc_regs(k, s->reads[0].acc), t = r->threads;

	emit_line(e, "if (%s) {   // stream-K: %s", emit_expr_str(e, s->u.sk.cond), s->comment ? s->comment : "");
	e->depth++;
	if (k->mm.ksum == KSUM_SK_SCATTER) {
		stream_k_scatter(e, s, acc, ws, n, r->bar_id, t);
	} else if (s->kind == ST_SK_STORE) {
		emit_line(e, "float4 *const part = (float4 *)wsf_sk_slot(%s, %d, %d, blockIdx.x) + threadIdx.x;", ws,
		          SK_MAX_CTAS, k->mm.ksize.sk_slot);
		emit_line(e, "#pragma unroll");
		emit_line(e, "for (int q = 0; q < %d; q++)", n / 4);
		emit_line(e, "    part[%d * q] = make_float4(%s[4 * q], %s[4 * q + 1], %s[4 * q + 2], %s[4 * q + 3]);", t,
		          acc, acc, acc, acc);
		emit_line(e, "wsf_bar_sync(%d, %d);   // every consumer thread's sums written", r->bar_id, t);
		emit_line(e, "if (threadIdx.x == 0)");
		emit_line(e, "    wsf_sk_post(wsf_sk_flag(%s, blockIdx.x));   // released to the owner (gpu scope)", ws);
	} else {
		emit_line(e, "const long long n = %s;", emit_expr_str(e, s->u.sk.parts));
		emit_line(e, "for (long long h = 1; h <= n; h++) {");
		emit_line(e, "    const long long cta = (long long)blockIdx.x + h;");
		emit_line(e, "    if (threadIdx.x == 0)");
		emit_line(e, "        wsf_sk_take(wsf_sk_flag(%s, cta));   // its sums are in place (acquire), the flag "
		          "reset for the next launch", ws);
		emit_line(e, "    wsf_bar_sync(%d, %d);   // what the acquire made visible, to every consumer thread", r->bar_id,
		          t);
		emit_line(e, "    const float4 *const part = (const float4 *)wsf_sk_slot(%s, %d, %d, cta) + threadIdx.x;", ws,
		          SK_MAX_CTAS, k->mm.ksize.sk_slot);
		emit_line(e, "    #pragma unroll");
		emit_line(e, "    for (int q = 0; q < %d; q++) {", n / 4);
		emit_line(e, "        const uint4 v = wsf_ldcg16(part + %d * q);", t);
		emit_line(e, "        %s[4 * q] += __uint_as_float(v.x), %s[4 * q + 1] += __uint_as_float(v.y), "
		          "%s[4 * q + 2] += __uint_as_float(v.z), %s[4 * q + 3] += __uint_as_float(v.w);", acc, acc, acc, acc);
		emit_line(e, "    }");
		emit_line(e, "}");
	}
	e->depth--;
	emit_line(e, "}");
}
