/*
 * spec.c: the front end.  Reads a YAML fusion spec (docs/spec.md) into the
 * fusion IR: requires the spec's bytes in Comp, leaves c->fusion.  This file
 * reads the document, its top-level keys, sizes, inputs and outputs;
 * spec_ops.c reads 'ops' and spec_schedule.c 'schedule' (spec.h is shared).
 *
 * Reading takes three steps.  check_text() makes sure the bytes are UTF-8 without NULs, whose lines end
 * in LF or CRLF only, so that an encoding error gets an exact line and column and every line is one line
 * to libyaml too.  tree_load() then runs libyaml's event loop (tree_parse) and builds a small tree of
 * Nodes in the arena.  That is where everything YAML allows but a spec never needs is refused, in file
 * order: anchors and aliases (which also defuses alias bombs), tags, keys that are not scalars, a second
 * document, nesting deeper than MAX_DEPTH, and duplicate keys (libyaml keeps the last one silently).
 * The builder keeps its own stack, so deep input cannot make it recurse.  Finally the read_* functions
 * walk the tree, one per schema rule (the rule is written above each), and fill a new Fusion.  Plain
 * scalars are typed by the YAML 1.2 core schema (null, bool, int, float, otherwise string), and quoted
 * scalars are always strings.  (A spec's `alias:` is an output's key, nothing of YAML's.)
 *
 * A check that fails reports one diagnostic and returns -1, and the caller passes the -1 up; the first
 * error ends the read.  Names are kept in one hash table keyed by (scope, interned name).  Tensors,
 * sizes and the keys of big maps are looked up there in constant time, so a huge spec still reads in
 * linear time.
 *
 * libyaml allocates its own memory.  Its parser and each event are deleted on
 * every path, and that includes an arena out-of-memory longjmp: while libyaml
 * runs, the arena jumps to the Reader, which cleans up and jumps on to c->oom
 * (where every API entry points the arena).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec.h"

/* Scopes of the name table besides maps (whose scope is the map node). */
const char tensor_scope[] = "tensor";
static const char size_scope[] = "size";

static const char *const spec_keys[] = {"fusion", "sizes", "inputs", "ops", "outputs", "schedule"};
static const char *const input_keys[] = {"dtype", "shape", "wait"};
static const char *const output_keys[] = {"dtype", "accumulate", "wait", "alias"};

/* ---- names ------------------------------------------------------------- */

static uint64_t
name_hash(const void *scope, const char *name)
{
	uint64_t h = (uint64_t)(uintptr_t)scope * 0x9e3779b97f4a7c15u ^ (uint64_t)(uintptr_t)name;

	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9u;
	return h ^ h >> 29;
}

static Entry *
names_slot(Entry *tab, int cap, const void *scope, const char *name)
{
	uint64_t i = name_hash(scope, name) & (uint64_t)(cap - 1);

	while (tab[i].name && (tab[i].scope != scope || tab[i].name != name))
		i = (i + 1) & (uint64_t)(cap - 1);
	return &tab[i];
}

/* The value stored for (SCOPE, NAME), or 0. */
int
names_get(const Reader *r, const void *scope, const char *name)
{
	return r->capnames ? names_slot(r->names, r->capnames, scope, name)->val : 0;
}

/* Stores VAL for (SCOPE, NAME) unless present; returns the value already there, or 0. */
static int
names_put(Reader *r, const void *scope, const char *name, int val)
{
	Entry *e;
	int i;

	if (2 * (r->nnames + 1) > r->capnames) {
		Entry *old = r->names;
		int oldcap = r->capnames;

		r->capnames = oldcap ? 2 * oldcap : 256;
		r->names = arena_alloc(r->c->arena, (size_t)r->capnames * sizeof *r->names);
		for (i = 0; i < oldcap; i++)
			if (old[i].name)
				*names_slot(r->names, r->capnames, old[i].scope, old[i].name) = old[i];
	}
	e = names_slot(r->names, r->capnames, scope, name);
	if (e->name)
		return e->val;
	e->scope = scope;
	e->name = name;
	e->val = val;
	r->nnames++;
	return 0;
}

/* ---- scalars ---------------------------------------------------------- */

static bool
is_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

static bool
is_ident(const char *s)
{
	if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
		return false;
	for (s++; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_' || is_digit(*s)))
			return false;
	return true;
}

/* [-+]? DIGITS */
static bool
is_int_text(const char *s)
{
	if (*s == '-' || *s == '+')
		s++;
	if (!is_digit(*s))
		return false;
	while (is_digit(*s))
		s++;
	return *s == 0;
}

/* [-+]? DIGITS? ('.' DIGITS?)? ([eE] [-+]? DIGITS)? with a digit before the exponent; .inf; .nan */
static bool
is_float_text(const char *s)
{
	static const char *const special[] = {
		".inf", ".Inf", ".INF", "-.inf", "-.Inf", "-.INF", "+.inf", "+.Inf", "+.INF",
		".nan", ".NaN", ".NAN",
	};
	int i, ndigit = 0;

	for (i = 0; i < countof(special); i++)
		if (strcmp(s, special[i]) == 0)
			return true;
	if (*s == '-' || *s == '+')
		s++;
	for (; is_digit(*s); s++)
		ndigit++;
	if (*s == '.')
		for (s++; is_digit(*s); s++)
			ndigit++;
	if (ndigit == 0)
		return false;
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '-' || *s == '+')
			s++;
		if (!is_digit(*s))
			return false;
		while (is_digit(*s))
			s++;
	}
	return *s == 0;
}

static Scalar
scalar_type(const char *s, bool plain)
{
	static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};
	static const char *const bools[] = {"true", "True", "TRUE", "false", "False", "FALSE"};
	int i;

	if (!plain)
		return SC_STR;
	for (i = 0; i < countof(nulls); i++)
		if (strcmp(s, nulls[i]) == 0)
			return SC_NULL;
	for (i = 0; i < countof(bools); i++)
		if (strcmp(s, bools[i]) == 0)
			return SC_BOOL;
	if (is_int_text(s))
		return SC_INT;
	if (is_float_text(s))
		return SC_FLOAT;
	return SC_STR;
}

/* ---- messages ---------------------------------------------------------- */

static Pos
mark_pos(const Comp *c, yaml_mark_t m)
{
	return (Pos){c->file, (int)m.line + 1, (int)m.column + 1};
}

/* A short formatted string in the arena, sized to fit (a Buf would reserve 256 bytes). */
char * PRINTF_LIKE(2, 3)
words(const Reader *r, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	s = arena_alloc(r->c->arena, (size_t)(n < 0 ? 0 : n) + 1);
	va_start(ap, fmt);
	vsnprintf(s, (size_t)(n < 0 ? 0 : n) + 1, fmt, ap);
	va_end(ap);
	return s;
}

/* The byte offset of mark M: libyaml counts characters, after any byte-order mark. */
static size_t
mark_offset(const Comp *c, yaml_mark_t m)
{
	size_t i = c->srclen >= 3 && memcmp(c->src, "\xef\xbb\xbf", 3) == 0 ? 3 : 0, n = 0;

	for (; i < c->srclen; i++)
		if (((unsigned char)c->src[i] & 0xc0) != 0x80 && n++ == m.index)
			break;
	return i;
}

/* The position of byte OFF, lines and columns counted as libyaml counts them (ir/diag.c). */
static Pos
offset_pos(const Comp *c, size_t off)
{
	Pos p = {c->file, 1, 1};
	const char *end = c->src + c->srclen;
	size_t i = c->srclen >= 3 && memcmp(c->src, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
	int n;

	while (i < off && i < c->srclen) {
		if ((n = diag_break_len(c->src + i, end)) > 0)
			p.line++, p.col = 1, i += (size_t)n;
		else if (((unsigned char)c->src[i++] & 0xc0) != 0x80)
			p.col++;
	}
	return p;
}

/*
 * User text made fit for a message: its first line, at most MAX_SHOWN bytes,
 * "..." where it was cut.  ir/diag.c escapes what it holds that a terminal
 * should not see.
 */
const char *
show(const Reader *r, const char *s)
{
	size_t n = strcspn(s, "\r\n");
	bool cut = n > MAX_SHOWN || s[n];

	if (n > MAX_SHOWN) {
		n = MAX_SHOWN;
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
	}
	return words(r, "%.*s%s", (int)n, s, cut ? "..." : "");
}

/* What N is, for "saw ...": "a list", "a mapping", "nothing" or the quoted scalar. */
const char *
describe(const Reader *r, const Node *n)
{
	if (n->kind == N_LIST)
		return "a list";
	if (n->kind == N_MAP)
		return "a mapping";
	if (n->type == SC_NULL && !n->text[0])
		return "nothing";
	if (n->quoted && scalar_type(n->text, true) != SC_STR)
		return words(r, "'%s' in quotes (a string)", show(r, n->text));
	return words(r, "'%s'", show(r, n->text));
}

/* "a, b or c" (CONJ "or"), "a, b and c" (CONJ "and") */
const char *
join_words(const Reader *r, const char *const *w, int n, const char *conj)
{
	Buf b;
	int i;

	buf_init(&b, r->c->arena);
	for (i = 0; i < n; i++) {
		if (i > 0 && i == n - 1)
			buf_printf(&b, " %s ", conj);
		else if (i > 0)
			buf_puts(&b, ", ");
		buf_puts(&b, w[i]);
	}
	return buf_str(&b);
}

/* Edit distance of A and B, or 3 for anything above 2 (which no suggestion needs). */
static int
edit_distance(const char *a, const char *b)
{
	int la = (int)strlen(a), lb = (int)strlen(b), row[MAX_SHOWN + 1], i, j;

	if (la > MAX_SHOWN || lb > MAX_SHOWN || abs(la - lb) > 2)
		return 3;
	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		int diag = row[0];

		row[0] = i;
		for (j = 1; j <= lb; j++) {
			int up = row[j], best = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb] < 3 ? row[lb] : 3;
}

/* The closest candidate to a misspelt name, within 2 edits and fewer edits than it has letters. */
typedef struct Suggest {
	const char *name, *best;
	int dist;
} Suggest;

static void
suggest_try(Suggest *s, const char *cand)
{
	int d = edit_distance(s->name, cand);

	if (d <= 2 && d < (int)strlen(s->name) && (!s->best || d < s->dist))
		s->best = cand, s->dist = d;
}

const char *
suggest_among(const char *name, const char *const *cand, int n)
{
	Suggest s = {name, NULL, 0};
	int i;

	for (i = 0; i < n; i++)
		suggest_try(&s, cand[i]);
	return s.best;
}

/* ---- text and tree ----------------------------------------------------- */

/* Length of the UTF-8 character at S (N bytes left), or 0 if it is malformed. */
static size_t
utf8_len(const unsigned char *s, size_t n)
{
	uint32_t cp;
	size_t len, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, cp = s[0] & 0x1fu;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, cp = s[0] & 0x0fu;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, cp = s[0] & 0x07u;
	else
		return 0;
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3fu);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/*
 * The spec is UTF-8 text with no NUL bytes, whose lines end in LF or CRLF.
 * YAML 1.1 (libyaml) also ends a line at a lone CR, NEL, LS or PS: in a
 * comment they would let an op hide from an editor or reveal one, and few
 * tools count lines that way, so they are refused before parsing.
 */
static int
check_text(Comp *c)
{
	static const char *const breaks[] = {"U+0085 (next line)", "U+2028 (line separator)",
	                                     "U+2029 (paragraph separator)"};
	const unsigned char *s = (const unsigned char *)c->src;
	size_t i = 0, len;

	while (i < c->srclen) {
		if (s[i] == 0)
			return diag_error(c, offset_pos(c, i), "NUL byte in the spec: expected UTF-8 text");
		len = utf8_len(s + i, c->srclen - i);
		if (len == 0)
			return diag_error(c, offset_pos(c, i),
			                  "invalid UTF-8 byte 0x%02x: the spec must be UTF-8 text", s[i]);
		if (s[i] == '\r' && (i + 1 == c->srclen || s[i + 1] != '\n'))
			return diag_error(c, offset_pos(c, i),
			                  "carriage return without a line feed: expected lines that end in LF or CRLF");
		if (len > 1 && diag_break_len(c->src + i, c->src + c->srclen))
			return diag_error(c, offset_pos(c, i),
			                  "%s, which YAML reads as a line break: expected lines that end in LF or CRLF",
			                  breaks[len == 2 ? 0 : s[i + 2] == 0xa8 ? 1 : 2]);
		i += len;
	}
	return 0;
}

static int
yaml_error(Reader *r)
{
	Comp *c = r->c;
	const yaml_parser_t *p = &r->parser;
	const char *problem = p->problem ? p->problem : "unknown error";
	Pos at;

	switch (p->error) {
	case YAML_MEMORY_ERROR:
		return diag_error(c, (Pos){0}, "out of memory while parsing the spec");
	case YAML_READER_ERROR:
		return diag_error(c, offset_pos(c, p->problem_offset), "invalid YAML: %s", problem);
	default:
		at = mark_pos(c, p->problem_mark);
		if (c->src[mark_offset(c, p->problem_mark)] == '\t')
			return diag_error(c, at, "invalid YAML: tabs cannot indent YAML; use spaces");
		if (!p->context)
			return diag_error(c, at, "invalid YAML: %s", problem);
		return diag_error(c, at, "invalid YAML: %s (%s at %d:%d)", problem, p->context,
		                  (int)p->context_mark.line + 1, (int)p->context_mark.column + 1);
	}
}

/* The index + 1 of an earlier key of MAP equal to KEY, or 0.  The first SMALL_MAP keys
 * are scanned; the rest go through the name table, so that big maps stay linear and
 * small ones (nearly all) stay out of the table. */
static int
key_seen(Reader *r, const Node *map, const Node *key)
{
	int nkey = map->nkid / 2, i;

	for (i = 0; i < nkey && i < SMALL_MAP; i++)
		if (map->kid[2 * i]->text == key->text)
			return 2 * i + 1;
	return nkey < SMALL_MAP ? 0 : names_put(r, map, key->text, map->nkid + 1);
}

/* Hangs N under the open list or map (or makes it the root); checks map keys. */
static int
tree_add(Reader *r, Node *n)
{
	Comp *c = r->c;
	Node *parent = r->depth ? r->stack[r->depth - 1] : NULL;
	int first;

	if (!parent) {
		r->root = n;
		return 0;
	}
	if (parent->kind == N_MAP && parent->nkid % 2 == 0) {
		if (n->kind != N_SCALAR)
			return diag_error(c, n->pos, "expected a name as mapping key, saw %s", describe(r, n));
		first = key_seen(r, parent, n);
		if (first) {
			Pos p = parent->kid[first - 1]->pos;

			return diag_error(c, n->pos, "duplicate key '%s': first given at %d:%d",
			                  show(r, n->text), p.line, p.col);
		}
	}
	*VEC_PUSH(c->arena, parent->kid, parent->nkid, parent->capkid) = n;
	return 0;
}

/* Turns one parser event into tree nodes. */
static int
tree_take(Reader *r, const yaml_event_t *ev)
{
	Comp *c = r->c;
	Pos at = mark_pos(c, ev->start_mark);
	const yaml_char_t *anchor = NULL, *tag = NULL;
	Node *n;

	switch (ev->type) {
	case YAML_STREAM_END_EVENT:
		r->done = true;
		return 0;
	case YAML_DOCUMENT_START_EVENT:
		if (r->root)
			return diag_error(c, at,
			                  "expected one YAML document, saw a second: write one fusion per file");
		return 0;
	case YAML_ALIAS_EVENT:
		return diag_error(c, at, "anchors and aliases are not supported: write the value out in full");
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		r->depth--;
		return 0;
	case YAML_SCALAR_EVENT:
		anchor = ev->data.scalar.anchor, tag = ev->data.scalar.tag;
		break;
	case YAML_SEQUENCE_START_EVENT:
		anchor = ev->data.sequence_start.anchor, tag = ev->data.sequence_start.tag;
		break;
	case YAML_MAPPING_START_EVENT:
		anchor = ev->data.mapping_start.anchor, tag = ev->data.mapping_start.tag;
		break;
	default:
		return 0;
	}
	if (anchor)
		return diag_error(c, at, "anchors and aliases are not supported: write the value out in full");
	if (tag) {
		const char *t = c->src + mark_offset(c, ev->start_mark);

		return diag_error(c, at, "YAML tags are not supported: remove '%s'",
		                  show(r, arena_strndup(c->arena, t, strcspn(t, " \t\r\n"))));
	}

	n = arena_alloc(c->arena, sizeof *n);
	n->pos = at;
	if (ev->type == YAML_SCALAR_EVENT) {
		const char *s = (const char *)ev->data.scalar.value;
		size_t len = ev->data.scalar.length;

		if (memchr(s, 0, len))
			return diag_error(c, at, "NUL character in a string: expected text");
		n->kind = N_SCALAR;
		n->text = intern(c->strs, s, len);
		n->quoted = ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
		n->type = scalar_type(n->text, !n->quoted);
		return tree_add(r, n);
	}
	n->kind = ev->type == YAML_MAPPING_START_EVENT ? N_MAP : N_LIST;
	if (tree_add(r, n) < 0)
		return -1;
	if (r->depth == MAX_DEPTH)
		return diag_error(c, at, "the spec nests deeper than %d levels", MAX_DEPTH);
	r->stack[r->depth++] = n;
	return 0;
}

/* Parses c->src into r->root (NULL for a spec with no document). */
static int
tree_parse(Reader *r)
{
	Comp *c = r->c;
	int err = 0;

	if (!yaml_parser_initialize(&r->parser))
		return diag_error(c, (Pos){0}, "out of memory while parsing the spec");
	r->parsing = true;
	yaml_parser_set_input_string(&r->parser, (const unsigned char *)(c->src ? c->src : ""), c->srclen);
	while (!r->done && !err) {
		if (!yaml_parser_parse(&r->parser, &r->event))
			err = yaml_error(r);
		else
			err = tree_take(r, &r->event);
		yaml_event_delete(&r->event);
	}
	yaml_parser_delete(&r->parser);
	r->parsing = false;
	return err;
}

/* tree_parse() with the arena's out-of-memory jump detoured through libyaml's cleanup. */
static int
tree_load(Reader *r)
{
	Comp *c = r->c;

	if (setjmp(r->oom)) {
		if (r->parsing) {
			yaml_event_delete(&r->event);
			yaml_parser_delete(&r->parser);
		}
		arena_set_oom(c->arena, &c->oom);
		longjmp(c->oom, 1);
	}
	arena_set_oom(c->arena, &r->oom);
	if (tree_parse(r) < 0) {
		arena_set_oom(c->arena, &c->oom);
		return -1;
	}
	arena_set_oom(c->arena, &c->oom);
	return 0;
}

/* ---- typed values ------------------------------------------------------ */

/* The index of KEY among the kids of map N, or -1. */
static int
map_find(const Node *n, const char *key)
{
	int i;

	for (i = 0; n->kind == N_MAP && i < n->nkid; i += 2)
		if (strcmp(n->kid[i]->text, key) == 0)
			return i;
	return -1;
}

/* The value for KEY in map N, or NULL. */
const Node *
map_get(const Node *n, const char *key)
{
	int i = map_find(n, key);

	return i < 0 ? NULL : n->kid[i + 1];
}

/* The value for required KEY in map N of WHERE, or NULL after a diagnostic. */
const Node *
map_need(const Reader *r, const Node *n, const char *key, const char *where)
{
	const Node *v = map_get(n, key);

	if (!v)
		diag_error(r->c, n->pos, "%s is missing required key '%s'", where, key);
	return v;
}

int
key_unknown(const Reader *r, const Node *key, const char *where, const char *const *allowed, int n)
{
	const char *best = suggest_among(key->text, allowed, n);

	if (best)
		return diag_error(r->c, key->pos, "unknown key '%s' in %s: did you mean '%s'?",
		                  show(r, key->text), where, best);
	return diag_error(r->c, key->pos, "unknown key '%s' in %s: expected %s", show(r, key->text),
	                  where, join_words(r, allowed, n, "or"));
}

/* Every key of map N is one of ALLOWED. */
int
check_keys(const Reader *r, const Node *n, const char *where, const char *const *allowed, int nallowed)
{
	int i, j;

	for (i = 0; i < n->nkid; i += 2) {
		for (j = 0; j < nallowed; j++)
			if (strcmp(n->kid[i]->text, allowed[j]) == 0)
				break;
		if (j == nallowed)
			return key_unknown(r, n->kid[i], where, allowed, nallowed);
	}
	return 0;
}

/* N is a list or map (KIND); else "expected WHAT, saw ..." with WHAT formatted from FMT. */
int PRINTF_LIKE(4, 5)
need_kind(const Reader *r, const Node *n, NodeKind kind, const char *fmt, ...)
{
	va_list ap;
	Buf what;

	if (n->kind == kind)
		return 0;
	buf_init(&what, r->c->arena);
	va_start(ap, fmt);
	buf_vprintf(&what, fmt, ap);
	va_end(ap);
	return diag_error(r->c, n->pos, "expected %s, saw %s", buf_str(&what), describe(r, n));
}

/* A decimal integer scalar; false if it does not fit in int64 (*V saturates). */
bool
scalar_int(const Node *n, int64_t *v)
{
	const char *s = n->text;
	bool neg = *s == '-';
	uint64_t x = 0;

	if (*s == '-' || *s == '+')
		s++;
	for (; *s; s++) {
		if (x > ((uint64_t)INT64_MAX - 9) / 10) {
			*v = neg ? INT64_MIN : INT64_MAX;
			return false;
		}
		x = x * 10 + (uint64_t)(*s - '0');
	}
	*v = neg ? -(int64_t)x : (int64_t)x;
	return true;
}

/* A finite number, read the same whatever the locale (num_parse). */
bool
scalar_number(const Node *n, double *v)
{
	*v = 0;
	if (n->kind != N_SCALAR || (n->type != SC_INT && n->type != SC_FLOAT) || strpbrk(n->text, "nN"))
		return false;  /* .inf and .nan are not numbers here */
	return num_parse(n->text, v) && isfinite(*v);
}

/*
 * Number N, already read as the finite double V, used as an f32: ops compute
 * in f32, so a number f32 would round to infinity, or from non-zero to zero,
 * is not what the user meant and is refused here, at the number.  Subnormal
 * f32 values are kept (NVRTC does not flush them without --ftz).  WHAT names
 * the number ("for 'eps'", or "" for an operand); NONZERO: zero is no use.
 */
bool
nonzero_text(const char *s)
{
	for (; *s && *s != 'e' && *s != 'E'; s++)
		if (*s >= '1' && *s <= '9')
			return true;
	return false;
}

int
f32_number(const Reader *r, const Node *n, double v, const char *what, bool nonzero)
{
	/*
	 * f32 rounds |v| >= 2^128 - 2^103 (halfway above FLT_MAX) up to infinity,
	 * |v| <= 2^-150 to zero; 1e-400 is 0 already as a double.
	 */
	if (fabs(v) >= 0x1.ffffffp+127)
		return diag_error(r->c, n->pos,
		                  "the number %s%s is too large for f32, in which ops compute: "
		                  "the largest finite f32 is about 3.4028235e38", describe(r, n), what);
	if ((v != 0 || nonzero_text(n->text)) && fabs(v) <= 0x1p-150)
		return diag_error(r->c, n->pos,
		                  "the number %s%s is too small for f32, in which ops compute: f32 would round it "
		                  "to 0 (the smallest positive f32 is about 1.4e-45)%s", describe(r, n), what,
		                  nonzero ? "" : "; write 0 if 0 is meant");
	return 0;
}

/* INT in LO..HI */
int
read_int(const Reader *r, const Node *n, const char *what, int64_t lo, int64_t hi, int64_t *v)
{
	*v = 0;
	if (n->type != SC_INT || !scalar_int(n, v) || *v < lo || *v > hi)
		return diag_error(r->c, n->pos, "expected an integer from %lld to %lld for %s, saw %s",
		                  (long long)lo, (long long)hi, what, describe(r, n));
	return 0;
}

/* EXTENT: INT in 1..MAX_EXTENT */
static int
read_extent(const Reader *r, const Node *n, const char *what, int64_t *v)
{
	bool fits;

	if (n->type != SC_INT)
		return diag_error(r->c, n->pos, "expected a positive integer for %s, saw %s", what,
		                  describe(r, n));
	fits = scalar_int(n, v);
	if (*v <= 0)
		return diag_error(r->c, n->pos, "%s must be positive, saw %s", what, show(r, n->text));
	if (!fits || *v > MAX_EXTENT)
		return diag_error(r->c, n->pos, "%s is %s, more than the limit of 2^40 (%lld)", what,
		                  show(r, n->text), (long long)MAX_EXTENT);
	return 0;
}

/* BOOL: true | false */
int
read_bool(const Reader *r, const Node *n, const char *what, bool *v)
{
	if (n->type != SC_BOOL)
		return diag_error(r->c, n->pos, "expected true or false for %s, saw %s", what,
		                  describe(r, n));
	*v = n->text[0] == 't' || n->text[0] == 'T';
	return 0;
}

/* One of the N words in ALLOWED; *V is its index + 1. */
int
read_word(const Reader *r, const Node *n, const char *what, const char *const *allowed, int nallowed,
          int *v)
{
	int i;

	for (i = 0; n->kind == N_SCALAR && i < nallowed; i++)
		if (strcmp(n->text, allowed[i]) == 0) {
			*v = i + 1;
			return 0;
		}
	return diag_error(r->c, n->pos, "expected %s for %s, saw %s", join_words(r, allowed, nallowed, "or"),
	                  what, describe(r, n));
}

/* -1 after a diagnostic when identifier N is longer than MAX_NAME (it would reach NVRTC). */
static int
check_name_length(const Reader *r, const Node *n, const char *what)
{
	size_t len = strlen(n->text);

	if (len <= MAX_NAME)
		return 0;
	return diag_error(r->c, n->pos,
	                  "'%s' is too long for %s name: %zu characters, more than the limit of %d",
	                  show(r, n->text), what, len, MAX_NAME);
}

/* NAME: [A-Za-z_][A-Za-z0-9_]* of at most MAX_NAME; the interned name, or NULL after a diagnostic */
const char *
read_name(const Reader *r, const Node *n, const char *what)
{
	if (n->kind != N_SCALAR || n->type != SC_STR)
		diag_error(r->c, n->pos, "expected %s name, saw %s", what, describe(r, n));
	else if (!is_ident(n->text))
		diag_error(r->c, n->pos,
		           "'%s' is not a valid name for %s: use letters, digits and '_', "
		           "not starting with a digit",
		           show(r, n->text), what);
	else if (check_name_length(r, n, what) == 0)
		return n->text;
	return NULL;
}

/* DTYPE: f32 | f16 | bf16 | fp8e4m3 | fp8e5m2 | int8 | uint8 | int32 | int64 | bool, or torch's name of one */
int
read_dtype(const Reader *r, const Node *n, Dtype *v)
{
	const char *valid[DT_COUNT - 1], *names[2 * (DT_COUNT - 1)];
	const char *best;
	int i, nnames = 0;

	for (i = 1; i < DT_COUNT; i++) {
		valid[i - 1] = dtype_info[i].name;
		names[nnames++] = dtype_info[i].name;
		if (strcmp(dtype_info[i].torch, dtype_info[i].name) != 0)
			names[nnames++] = dtype_info[i].torch;
	}
	if (n->kind != N_SCALAR || n->type == SC_NULL)
		return diag_error(r->c, n->pos, "expected a dtype (%s), saw %s", join_words(r, valid, DT_COUNT - 1, "or"),
		                  describe(r, n));
	*v = dtype_from_name(n->text);
	if (*v != DT_NONE)
		return 0;
	best = suggest_among(n->text, names, nnames);
	if (best)
		return diag_error(r->c, n->pos, "unknown dtype '%s': did you mean '%s'?", show(r, n->text), best);
	return diag_error(r->c, n->pos, "unknown dtype '%s': expected %s (or torch's names: float32, bfloat16, "
	                  "float8_e4m3fn...)", show(r, n->text), join_words(r, valid, DT_COUNT - 1, "or"));
}

/* ---- the spec ---------------------------------------------------------- */

/* Defines tensor NAME at P; ids are unique across inputs and op outputs. */
int
define_tensor(Reader *r, const char *name, TensorKind kind, Pos p)
{
	Fusion *f = r->f;
	int t = names_get(r, tensor_scope, name);

	if (t) {
		Pos q = f->tensor[t].pos;

		return diag_error(r->c, p, "'%s' is defined twice: first at %d:%d; give this one a new name",
		                  name, q.line, q.col);
	}
	t = fusion_add_tensor(r->c, f, name, kind, p);
	names_put(r, tensor_scope, name, t);
	return t;
}

/* The size variable NAME, made unbound at P if `sizes:` did not give it. */
static int
use_sym(Reader *r, const char *name, Pos p)
{
	int s = names_get(r, size_scope, name);

	if (!s) {
		s = fusion_add_sym(r->c, r->f, name, p);
		names_put(r, size_scope, name, s);
	}
	return s;
}

/* sizes: { NAME: EXTENT, ... }   defaults of the size variables */
static int
read_sizes(Reader *r, const Node *n)
{
	int i, s;
	int64_t v;

	if (n->type == SC_NULL)
		return 0;
	if (need_kind(r, n, N_MAP, "a mapping of size names to positive integers for 'sizes'") < 0)
		return -1;
	for (i = 0; i < n->nkid; i += 2) {
		const char *name = read_name(r, n->kid[i], "a size");
		const char *what;

		if (!name)
			return -1;
		what = words(r, "size '%s'", name);
		if (read_extent(r, n->kid[i + 1], what, &v) < 0)
			return -1;
		s = use_sym(r, name, n->kid[i]->pos);
		r->f->sym[s].value = v;
	}
	return 0;
}

/* shape: [NAME | EXTENT, ...]   at most MAX_RANK entries; [] is a scalar */
static int
read_shape(Reader *r, int t, const Node *n, const char *where)
{
	Tensor *ten = &r->f->tensor[t];
	int i;

	if (need_kind(r, n, N_LIST, "a list of sizes for the shape of %s", where) < 0)
		return -1;
	if (n->nkid > MAX_RANK)
		return diag_error(r->c, n->kid[MAX_RANK]->pos, "%s has rank %d, more than the limit of %d",
		                  where, n->nkid, MAX_RANK);
	for (i = 0; i < n->nkid; i++) {
		const Node *d = n->kid[i];
		Dim *dim = &ten->dim[i];

		if (d->type == SC_INT) {
			const char *what = words(r, "dim %d of %s", i, where);

			if (read_extent(r, d, what, &dim->ext) < 0)
				return -1;
		} else if (d->type == SC_STR && is_ident(d->text)) {
			if (check_name_length(r, d, "a size") < 0)
				return -1;
			dim->sym = use_sym(r, d->text, d->pos);
		} else {
			return diag_error(r->c, d->pos,
			                  "expected a size name or a positive integer in the shape of %s, saw %s",
			                  where, describe(r, d));
		}
	}
	ten->rank = n->nkid;
	ten->shape_pos = n->pos;
	return 0;
}

/*
 * The per_tile key of map N ({per_tile, ...}), with no value or true: else
 * "expected per_tile WHERE", or for another value the hint NONE.
 */
int
read_per_tile(const Reader *r, const Node *n, const char *where, const char *none)
{
	const Node *v = map_get(n, "per_tile");

	if (!v)
		return diag_error(r->c, n->pos, "expected per_tile %s", where);
	if (v->type != SC_NULL && !(v->type == SC_BOOL && (v->text[0] == 't' || v->text[0] == 'T')))
		return diag_error(r->c, v->pos, "expected per_tile with no value, or per_tile: true, saw %s (%s)",
		                  describe(r, v), none);
	return 0;
}

/*
 * wait: per_tile | {per_tile, tile: [R, C]}: T's tiles arrive while the
 * kernel runs; with a tile, its writer's, whose flag layout the words follow.
 */
static int
read_wait(Reader *r, int t, const Node *n, const char *where)
{
	static const char *const waits[] = {"per_tile"}, *const keys[] = {"per_tile", "tile"};
	Tensor *x = &r->f->tensor[t];
	const Node *v;
	int64_t e;
	int i, word;

	x->wait_pos = n->pos;
	if (n->kind != N_MAP)
		return read_word(r, n, words(r, "'wait' of %s", where), waits, countof(waits), &word);
	if (check_keys(r, n, words(r, "'wait' of %s", where), keys, countof(keys)) < 0)
		return -1;
	if (read_per_tile(r, n, words(r, "in the 'wait' of %s ({per_tile, tile: [R, C]})", where),
	                  "to wait for nothing, leave out 'wait'") < 0)
		return -1;
	if (!(v = map_get(n, "tile")))
		return 0;   /* {per_tile}: the same as wait: per_tile */
	if (need_kind(r, v, N_LIST, "a list [rows, cols] for the writer's 'tile'") < 0)
		return -1;
	if (v->nkid != 2)
		return diag_error(r->c, v->pos, "expected the writer's tile as [rows, cols], saw %d entr%s", v->nkid,
		                  v->nkid == 1 ? "y" : "ies");
	for (i = 0; i < 2; i++) {
		if (read_int(r, v->kid[i], "a writer's tile extent", 1, MAX_TILE, &e) < 0)
			return -1;
		x->wait_tile[i] = (int)e;
	}
	x->wait_tile_pos = v->pos;
	return 0;
}

/* input: NAME: {dtype: DTYPE, shape: [NAME | EXTENT, ...], wait: ...} */
static int
read_input(Reader *r, const Node *key, const Node *n)
{
	const char *name = read_name(r, key, "an input"), *where;
	const Node *dt, *shape, *w;
	Dtype d;
	int t;

	if (!name)
		return -1;
	where = words(r, "input '%s'", name);
	if (need_kind(r, n, N_MAP, "{dtype, shape} for %s", where) < 0 ||
	    check_keys(r, n, where, input_keys, countof(input_keys)) < 0 ||
	    !(dt = map_need(r, n, "dtype", where)) || !(shape = map_need(r, n, "shape", where)) ||
	    read_dtype(r, dt, &d) < 0 || (t = define_tensor(r, name, TK_INPUT, key->pos)) < 0)
		return -1;
	r->f->tensor[t].dtype = d;
	if ((w = map_get(n, "wait")) && read_wait(r, t, w, where) < 0)
		return -1;
	return read_shape(r, t, shape, where);
}

/* inputs: { input, ... } */
static int
read_inputs(Reader *r, const Node *n)
{
	int i;

	if (need_kind(r, n, N_MAP, "a mapping of input names to {dtype, shape} for 'inputs'") < 0)
		return -1;
	for (i = 0; i < n->nkid; i += 2)
		if (read_input(r, n->kid[i], n->kid[i + 1]) < 0)
			return -1;
	return 0;
}


/* The tensor defined so far whose name is closest to NAME, or NULL. */
const char *
suggest_tensor(const Reader *r, const char *name)
{
	Suggest s = {name, NULL, 0};
	int t;

	for (t = 1; t < r->f->ntensor; t++)
		suggest_try(&s, r->f->tensor[t].name);
	return s.best;
}

/* alias: INPUT, the input whose memory an output is written into (infer.c checks the rest) */
static int
read_alias(Reader *r, const Node *n, const char *where, Output *o)
{
	const char *name = read_name(r, n, "an input");
	int t;

	if (!name)
		return -1;
	t = names_get(r, tensor_scope, name);
	if (!t || r->f->tensor[t].kind != TK_INPUT)
		return diag_error(r->c, n->pos, "'alias' of %s names %s '%s': expected an input, whose memory the output "
		                  "is written into in place", where, t ? "the op output" : "no tensor", name);
	o->alias = t;
	o->alias_pos = n->pos;
	return 0;
}

/* output: NAME: {dtype: DTYPE, accumulate: BOOL, wait: ..., alias: INPUT} | {} | nothing   NAME is an op's output */
static int
read_output(Reader *r, const Node *key, const Node *n)
{
	const char *name = read_name(r, key, "an output"), *where;
	const Node *dt, *acc = NULL, *w, *al = NULL;
	Output *o;
	Dtype d = DT_NONE;
	bool accumulate = false;
	int t;

	if (!name)
		return -1;
	where = words(r, "output '%s'", name);
	t = names_get(r, tensor_scope, name);
	if (!t) {
		const char *best = suggest_tensor(r, name);

		if (best)
			return diag_error(r->c, key->pos, "%s names no tensor: did you mean '%s'?", where, best);
		return diag_error(r->c, key->pos, "%s names no tensor: expected the out of an op", where);
	}
	if (r->f->tensor[t].kind == TK_INPUT)
		return diag_error(r->c, key->pos,
		                  "%s is an input: outputs are computed by ops "
		                  "(to copy it, add {out: y, op: cast, in: [%s], to: DTYPE})",
		                  where, name);
	if (n->type != SC_NULL) {
		if (need_kind(r, n, N_MAP, "{dtype} for %s", where) < 0 ||
		    check_keys(r, n, where, output_keys, countof(output_keys)) < 0)
			return -1;
		if ((dt = map_get(n, "dtype")) && read_dtype(r, dt, &d) < 0)
			return -1;
		if ((acc = map_get(n, "accumulate")) &&
		    read_bool(r, acc, words(r, "'accumulate' of %s", where), &accumulate) < 0)
			return -1;
		if ((w = map_get(n, "wait")) && read_wait(r, t, w, where) < 0)
			return -1;
		al = map_get(n, "alias");
	}
	o = VEC_PUSH(r->c->arena, r->f->out, r->f->nout, r->f->capout);
	if (al && read_alias(r, al, where, o) < 0)
		return -1;
	o->tensor = t;
	o->dtype = d;
	o->pos = key->pos;
	o->accumulate = accumulate;
	if (acc)
		o->accumulate_pos = acc->pos;
	return 0;
}

/* outputs: { output, ... }   at least one */
static int
read_outputs(Reader *r, const Node *n)
{
	int i;

	if (need_kind(r, n, N_MAP, "a mapping of output names to {dtype} for 'outputs'") < 0)
		return -1;
	if (n->nkid == 0)
		return diag_error(r->c, n->pos,
		                  "the spec has no outputs: name at least one op's out under 'outputs'");
	for (i = 0; i < n->nkid; i += 2)
		if (read_output(r, n->kid[i], n->kid[i + 1]) < 0)
			return -1;
	return 0;
}

/* -D NAME=VALUE overrides the default of a size the spec uses. */
static int
apply_bindings(Reader *r)
{
	Comp *c = r->c;
	int i, s;

	for (i = 0; i < c->nbind; i++) {
		const SizeBinding *b = &c->bind[i];

		s = names_get(r, size_scope, intern_cstr(c->strs, b->name));
		if (!s)
			return diag_error(c, (Pos){0}, "size '%s' given with -D is not used by the spec", b->name);
		if (b->value <= 0 || b->value > MAX_EXTENT)
			return diag_error(c, (Pos){0}, "size '%s' given with -D is %lld: expected 1 to 2^40",
			                  b->name, (long long)b->value);
		r->f->sym[s].value = b->value;
		r->f->sym[s].bound = true;
	}
	return 0;
}

/* spec: { fusion: NAME, sizes: {...}, inputs: {...}, ops: [...], outputs: {...}, schedule: {...} } */
static int
read_spec(Reader *r, const Node *n)
{
	const char *what = "a mapping with keys fusion, inputs, ops and outputs";
	const Node *name, *inputs, *ops, *outputs;
	int i;

	if (!n || n->type == SC_NULL)
		return diag_error(r->c, (Pos){r->c->file, 1, 1}, "the spec is empty: expected %s", what);
	if (need_kind(r, n, N_MAP, "%s", what) < 0 ||
	    check_keys(r, n, "the spec", spec_keys, countof(spec_keys)) < 0)
		return -1;
	if (!(name = map_need(r, n, "fusion", "the spec")) ||
	    !(inputs = map_need(r, n, "inputs", "the spec")) ||
	    !(ops = map_need(r, n, "ops", "the spec")) ||
	    !(outputs = map_need(r, n, "outputs", "the spec")))
		return -1;
	if (!(r->f->name = read_name(r, name, "a fusion")))
		return -1;
	r->f->pos = name->pos;
	if ((i = map_find(n, "sizes")) >= 0 && read_sizes(r, n->kid[i + 1]) < 0)
		return -1;
	if (read_inputs(r, inputs) < 0 || read_ops(r, ops) < 0 || read_outputs(r, outputs) < 0)
		return -1;
	if ((i = map_find(n, "schedule")) >= 0 && read_schedule(r, n->kid[i], n->kid[i + 1]) < 0)
		return -1;
	return apply_bindings(r);
}

int
spec_read(Comp *c)
{
	Reader *r = arena_alloc(c->arena, sizeof *r);

	r->c = c;
	if (check_text(c) < 0 || tree_load(r) < 0)
		return -1;
	r->f = fusion_new(c);
	if (read_spec(r, r->root) < 0)
		return -1;
	c->fusion = r->f;
	return 0;
}
