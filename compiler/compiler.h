/*
 * compiler.h: the internal header of compiler/ (front end and driver).
 *
 *   spec.c   reads a YAML fusion spec (libyaml) into the fusion IR
 *   api.c    the public API of include/wsfuse.h
 *   main.c   the wsfuse CLI (uses only include/wsfuse.h, not this header)
 */
#ifndef WSFUSE_COMPILER_H
#define WSFUSE_COMPILER_H

#include "../ir/ir.h"

/*
 * spec.c: parses c->src (c->srclen bytes, named c->file) into a new c->fusion.
 * Checks everything that needs no shape inference: YAML syntax, encoding,
 * duplicate keys, aliases, unknown and missing keys, names (defined once,
 * before use), op names, arity, attributes and their types, dtypes, size
 * values, schedule hints.  Applies c->bind (bindings override `sizes:`
 * defaults; binding a name the spec never uses is an error).  Shapes are
 * recorded as written; passes/infer.c checks them.  Returns 0, or -1 after
 * exactly one diagnostic.
 */
int spec_read(Comp *c);

/*
 * api.c: the choice a tune record (TEXT, LEN bytes) holds among the N
 * candidates whose descriptions are CAND: its "choice N" (digits, below N)
 * with a "# MS ms: CAND[N]" line saying it was timed; else -1 and *WHY.
 * Exposed for tests.
 */
int tune_parse_record(const char *text, size_t len, const char *const *cand, int n, const char **why);

#endif
