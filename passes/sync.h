/*
 * sync.h: what the sync pass's two files share, private to them: sync.c
 * (the analysis) and sync_patterns.c (its named exceptions, see sync.c).
 */
#ifndef WSFUSE_SYNC_H
#define WSFUSE_SYNC_H

#include "passes.h"

/* How an access completes. */
typedef enum Via {
	VIA_NONE,     /* when the statement ends (synchronous) */
	VIA_MBAR,     /* an mbarrier phase: TMA loads, and a consumer's release of a stage */
	VIA_BULK,     /* a bulk async-group: TMA stores */
	VIA_MMA       /* an mma async-group */
} Via;

/* One access of a statement: a buffer copy (buf, slot), an accumulator or a global tensor (param). */
typedef struct Acc {
	int buf, acc, param;
	Expr *slot;
	bool write;
	Via via;
} Acc;

/* An effect still pending. */
typedef struct Pend {
	Acc a;
	int id;          /* unique; an effect keeps it through the frames it passes */
	Stmt *at;        /* the statement of the current block that issued it; NULL: before the block */
	int dist;        /* iterations of the current loop since it was issued */
	bool one;        /* issued by one elected thread, not by all */
	int group;       /* VIA_BULK, VIA_MMA, once committed: its group's number on this path (may be
	                    negative for a group carried in from earlier iterations) */
	bool committed;
	int bar;         /* VIA_MBAR: the barrier phase that completes it */
	Expr *barslot, *parity;
} Pend;

/* Arrays grow: a kernel's inputs, each an effect, are as many as the spec has. */
typedef struct State {
	Pend *p;
	int n, cap;
	int bulk, mma;   /* groups committed on this path */
} State;

/* Syncs a block needs that depend on where barriers are: placed once its walk is done. */
typedef enum ReqKind { REQ_FENCE = 1, REQ_BULK_READ } ReqKind;

typedef struct Req {
	ReqKind kind;
	Stmt *from;      /* the statement that issued the effect; NULL: before the block */
	int dist;        /* iterations back */
	Stmt *at;        /* the statement that conflicts */
	int group;       /* REQ_BULK_READ: the effect's group, counted from this iteration's start */
} Req;

/* A circular-buffered region: the loop's info and the stage counter of the body being walked. */
typedef struct Cb {
	const CbInfo *cb;
	Expr *lin;
} Cb;

typedef struct Sync {
	Comp *c;
	Kernel *k;
	bool dry;        /* walk without placing anything */
	int ids;
	int err;
	Acc *acc;        /* the accesses of the statement being walked */
	int capacc;
} Sync;

/* The frame of one block: its requirements and where its iterations start counting groups. */
typedef struct Frame {
	Stmt *block;
	bool loop;       /* a loop body: requirements may be met in the iteration before */
	int bulk0;       /* State.bulk at the start of this iteration */
	Req *req;
	int nreq, capreq;
} Frame;

/* sync.c: small builders and the pending effects */
Stmt *mbar(Comp *c, StmtKind kind, int bar, Expr *slot, Expr *par, const char *why);
Stmt *elect_block(Comp *c, Stmt *inner);
Stmt *bulk_wait(Comp *c, int n, bool read, const char *why);
Stmt *barrier(Comp *c, const char *why);
int index_of(const Stmt *block, const Stmt *s);
bool is_barrier(const Stmt *s);
void drop_pending(State *st, int i);
void retire_groups(State *st, Via via, int group, bool read);
void wait_mma(Sync *y, State *st, Stmt *block, int *j, Pend p);
bool drains_each_step(const CbInfo *info);

/* sync_patterns.c: the exceptions (sync.c's contract) */
void pre_arrive(Sync *y, Stmt *block, int *j, const Stmt *loop, const Stmt *s);
void hoist_mma_wait(Sync *y, State *st, Stmt *block, int *j, const Stmt *loop);
void hoist_row_barrier(Sync *y, State *st, Stmt *block, int *j, const Stmt *loop);
void restart_wait(Sync *y, State *st, Stmt *block, int *j, const Stmt *loop);
void pingpong_last(Sync *y, State *st, Stmt *block, int *j, const Stmt *loop, const Cb *outer);

/* sync_protocols.c: the protocols expanded before the walk (sync.c's contract) */
int expand_protocols(Comp *c, Kernel *k);

#endif
