/*
 * spec.h: what the front end's three files share, private to them.  spec.c
 * reads the document, top-level keys, sizes, inputs and outputs and holds the
 * shared helpers; spec_ops.c reads 'ops'; spec_schedule.c reads 'schedule'.
 */
#ifndef WSFUSE_SPEC_H
#define WSFUSE_SPEC_H

#include <yaml.h>

#include "compiler.h"

enum {
	MAX_DEPTH = 64,     /* the spec needs 4 levels; anything deeper is refused */
	MAX_TILE = 65536,   /* a schedule tile extent beyond this is not a hint */
	MAX_STAGES = 16,
	MAX_CLUSTER = 16,   /* CTAs in a cluster (Hopper, non-portable size) */
	MAX_SPLIT_K = 8,    /* CTAs that split a matmul tile's K: a cluster of them, of a portable size */
	MAX_SHOWN = 40,     /* bytes of user text quoted in a message */
	SMALL_MAP = 8       /* keys of a map checked for duplicates without the name table */
};

typedef enum NodeKind { N_NONE, N_SCALAR, N_LIST, N_MAP } NodeKind;

/* How a scalar reads: plain scalars by the YAML 1.2 core schema, quoted ones as strings. */
typedef enum Scalar { SC_NONE, SC_NULL, SC_BOOL, SC_INT, SC_FLOAT, SC_STR } Scalar;

/* A YAML node.  A map's kids alternate key and value; every key is a scalar. */
typedef struct Node {
	NodeKind kind;
	Scalar type;        /* scalars only */
	const char *text;   /* scalars only: interned, NUL-terminated */
	bool quoted;        /* scalars only: written in quotes or as a block */
	struct Node **kid;
	int nkid, capkid;
	Pos pos;            /* where the node starts */
} Node;

/* One slot of the name table: VAL is a tensor id, a sym id, or a map key's index + 1. */
typedef struct Entry {
	const void *scope;
	const char *name;
	int val;
} Entry;

typedef struct Reader {
	Comp *c;
	Fusion *f;
	Entry *names;       /* open addressing; load at most 1/2 */
	int nnames, capnames;
	yaml_parser_t parser;
	yaml_event_t event;
	bool parsing;       /* parser holds memory that must be given back */
	jmp_buf oom;        /* arena failures while parsing land here first */
	Node *stack[MAX_DEPTH];
	int depth;
	Node *root;
	bool done;
} Reader;

/* The scope of tensor names in the name table. */
extern const char tensor_scope[];

/* spec.c: the name table, messages, and the scalar readers */
int names_get(const Reader *r, const void *scope, const char *name);
char *PRINTF_LIKE(2, 3) words(const Reader *r, const char *fmt, ...);
const char *show(const Reader *r, const char *s);
const char *describe(const Reader *r, const Node *n);
const char *join_words(const Reader *r, const char *const *w, int n, const char *conj);
const char *suggest_among(const char *name, const char *const *cand, int n);
const Node *map_get(const Node *n, const char *key);
const Node *map_need(const Reader *r, const Node *n, const char *key, const char *where);
int key_unknown(const Reader *r, const Node *key, const char *where, const char *const *allowed, int n);
int PRINTF_LIKE(4, 5) need_kind(const Reader *r, const Node *n, NodeKind kind, const char *fmt, ...);
bool scalar_number(const Node *n, double *v);
bool scalar_int(const Node *n, int64_t *v);
bool nonzero_text(const char *s);
int f32_number(const Reader *r, const Node *n, double v, const char *what, bool nonzero);
int read_int(const Reader *r, const Node *n, const char *what, int64_t lo, int64_t hi, int64_t *v);
int read_bool(const Reader *r, const Node *n, const char *what, bool *v);
int read_word(const Reader *r, const Node *n, const char *what, const char *const *allowed, int nallowed,
               int *v);
const char *read_name(const Reader *r, const Node *n, const char *what);
int read_dtype(const Reader *r, const Node *n, Dtype *v);
int define_tensor(Reader *r, const char *name, TensorKind kind, Pos p);
int check_keys(const Reader *r, const Node *n, const char *where, const char *const *allowed, int nallowed);
int read_per_tile(const Reader *r, const Node *n, const char *where, const char *none);
const char *suggest_tensor(const Reader *r, const char *name);

/* spec_ops.c: ops: [op, ...] */
int read_ops(Reader *r, const Node *n);

/* spec_schedule.c: schedule: {...} */
int read_schedule(Reader *r, const Node *key, const Node *n);

#endif
