/*
 * stmts.h: the kernel IR's statement kinds, one row per kind.  Included
 * several times with ST defined.
 *
 *   ST(ID, name, owner, print, verify, dot, effects)
 *
 * NAME is the kind's name in diagnostics, and the printed form of a kind
 * with no operands.  OWNER is the family whose emitter writes it
 * (EmitFamily.stmt), or GENERIC: codegen/emit.c's.  The last four name
 * the kind's hooks: kprint.c's print_PRINT, kverify.c's verify_VERIFY,
 * dot.c's dot_DOT and sync.c's effects_EFFECTS (what it reads and writes,
 * and how each access completes); "none" where a kind has nothing to say.
 * Which fields a kind has: its member of Stmt's union (ir.h).
 *
 * Adding a statement kind is one row here, its member, its hooks, and its
 * owner's emitter.
 */
/* containers: Stmt.body */
ST(BLOCK,             "block",                     GENERIC, none,         none,         none,         none)
ST(LOOP,              "for",                       GENERIC, loop,         loop,         none,         none)
ST(IF,                "if",                        GENERIC, if,           if,           none,         none)
ST(ROLES,             "roles",                     GENERIC, roles,        roles,        none,         none)
ST(ROLE,              "role",                      GENERIC, none,         role,         none,         none)
ST(LET,               "let",                       GENERIC, let,          let,          none,         none)
/* asynchronous copies */
ST(TMA_LOAD,          "tma_load",                  GENERIC, tma_load,     tma,          tma_load,     tma_load)
ST(TMA_STORE,         "tma_store",                 GENERIC, tma_store,    tma,          tma_store,    tma_store)
ST(TMA_PREFETCH,      "tma_prefetch",              GENERIC, tma_prefetch, tma_prefetch, tma_prefetch, none)
/* mbarriers, fences, bulk groups, barriers */
ST(EXPECT_TX,         "mbarrier.arrive_expect_tx", GENERIC, expect_tx,    mbar,         expect_tx,    expect_tx)
ST(MBAR_INIT,         "mbarrier.init",             GENERIC, mbar_init,    mbar,         none,         none)
ST(MBAR_ARRIVE,       "mbarrier.arrive",           GENERIC, mbar_arrive,  mbar,         mbar_arrive,  none)
ST(MBAR_WAIT,         "mbarrier.wait",             GENERIC, mbar_wait,    mbar,         mbar_wait,    none)
ST(FENCE_MBAR_INIT,   "fence.mbarrier_init",       GENERIC, name,         none,         none,         none)
ST(FENCE_PROXY_ASYNC, "fence.proxy.async",         GENERIC, name,         none,         none,         none)
ST(BULK_COMMIT,       "bulk.commit_group",         GENERIC, name,         none,         none,         none)
ST(BULK_WAIT,         "bulk.wait_group",           GENERIC, bulk_wait,    none,         none,         none)
ST(SYNC,              "sync",                      GENERIC, sync,         sync,         none,         none)
ST(SETMAXNREG,        "setmaxnreg",                GENERIC, setmaxnreg,   none,         none,         none)
/* work */
ST(COMPUTE,           "compute",                   GENERIC, compute,      compute,      compute,      compute)
ST(EXCHANGE,          "exchange",                  POINTWISE, exchange,   exchange,     none,         exchange)
ST(REDUCE,            "reduce",                    POINTWISE, reduce,     reduce,       none,         none)
ST(ROW_MEET,          "rows.meet",                 REDUCTION, row_meet,   row_meet,     none,         none)
ST(MMA,               "mma",                       MATMUL,  mma,          mma,          mma,          mma)
ST(MMA_FENCE,         "mma.fence",                 MATMUL,  name,         none,         none,         none)
ST(MMA_COMMIT,        "mma.commit_group",          MATMUL,  name,         none,         none,         none)
ST(MMA_WAIT,          "mma.wait_group",            MATMUL,  mma_wait,     none,         none,         none)
/* between kernels and between CTAs */
ST(GRID_DEP,          "griddepcontrol",            GENERIC, grid_dep,     none,         none,         none)
ST(CLUSTER_SYNC,      "barrier.cluster",           GENERIC, name,         cluster_sync, none,         none)
ST(FLAG_WAIT,         "flag.wait",                 GENERIC, flag_wait,    flag_wait,    none,         none)
ST(SPLIT_REDUCE,      "split_k.reduce",            MATMUL,  split_reduce, split_reduce, split_reduce, ksum)
ST(SK_STORE,          "stream_k.store",            MATMUL,  sk_store,     sk,           sk,           ksum)
ST(SK_REDUCE,         "stream_k.reduce",           MATMUL,  sk_reduce,    sk,           sk,           ksum)
ST(ROW_FETCH,         "row.fetch",                 MATMUL,  row_fetch,    row_copy,     row_fetch,    none)
ST(ROW_PUT,           "row.put",                   MATMUL,  row_put,      row_copy,     none,         row_put)
ST(SIGNAL,            "signal",                    GENERIC, signal,       signal,       signal,       none)
