/*
 * passes.h: the internal header of passes/.  Every transformation is one
 * function with one signature, listed in the pipeline table of pipeline.c with
 * its contract; the driver (pipeline.c) runs the verifier after each pass and
 * prints the IR after the passes the dump option names.
 *
 *   pipeline.c        the pass table and the driver
 *   expand.c          composite ops (softmax, layernorm, rmsnorm) -> primitives
 *   infer.c           shapes, dtypes, broadcasts, axes; shape errors
 *   schedule.c        choose the kernel family and its parameters
 */
#ifndef WSFUSE_PASSES_H
#define WSFUSE_PASSES_H

#include "../ir/ir.h"

/* A pass returns 0, or -1 after reporting a diagnostic. */
typedef int (*PassFn)(Comp *c);

struct Pass {
	const char *name;   /* as in --dump-after */
	PassFn run;
	WsfStage stage;     /* which IR it produces: fusion or kernel IR */
};

extern const Pass pass_table[];
extern const int pass_count;

/* Runs the passes whose output stage is at most STOP. 0 or -1. */
int passes_run(Comp *c, WsfStage stop);
/* 1 if NAME is a pass name, "all", or a comma list of them. */
int passes_valid_dump_list(const char *list);

int pass_expand(Comp *c);
int pass_infer(Comp *c);
int pass_schedule(Comp *c);

#endif
