/*
 * test_ir.c: unit tests of the ir/ layer's foundations: the arena, growable
 * arrays, text buffers, interning, the diagnostic format and the op and dtype
 * tables.  Each test gets a fresh arena from setup() and frees it in
 * teardown(), so the suite is leak-free under ASan and valgrind.
 *
 * The diagnostic tests pin the exact text users see; change them together
 * with ir/diag.c and the error goldens (tests/errors/).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../ir/ir.h"

static int
setup(void **state)
{
	*state = arena_new(NULL);
	return *state ? 0 : -1;
}

static int
teardown(void **state)
{
	arena_free(*state);
	return 0;
}

/* ---- arena ---------------------------------------------------------- */

static void
arena_alloc_aligned_and_zeroed(void **state)
{
	Arena *a = *state;
	size_t n;

	for (n = 0; n <= 200; n++) {
		unsigned char *p = arena_alloc(a, n);
		size_t i;

		assert_non_null(p);
		assert_int_equal((uintptr_t)p % 16, 0);
		for (i = 0; i < n; i++)
			assert_int_equal(p[i], 0);
		memset(p, 0xab, n);  /* dirty it: the next allocation must still be zero */
	}
}

static void
arena_alloc_distinct(void **state)
{
	Arena *a = *state;
	char *p = arena_alloc(a, 0), *q = arena_alloc(a, 0), *r = arena_alloc(a, 1);

	assert_ptr_not_equal(p, q);
	assert_ptr_not_equal(q, r);
	assert_true(q >= p + 16 || p >= q + 16);
}

static void
arena_used_counts_rounded_sizes(void **state)
{
	Arena *a = *state;

	assert_int_equal(arena_used(a), 0);
	arena_alloc(a, 1);
	assert_int_equal(arena_used(a), 16);
	arena_alloc(a, 17);
	assert_int_equal(arena_used(a), 48);
}

static void
arena_big_allocations(void **state)
{
	Arena *a = *state;
	size_t sizes[] = {16 * 1024 + 1, 64 * 1024, 64 * 1024 + 16, 1 << 20, 8 << 20};
	int i;

	for (i = 0; i < countof(sizes); i++) {
		unsigned char *p = arena_alloc(a, sizes[i]);

		assert_int_equal((uintptr_t)p % 16, 0);
		assert_int_equal(p[0], 0);
		assert_int_equal(p[sizes[i] - 1], 0);
		memset(p, 0x5a, sizes[i]);  /* ASan catches a short block */
	}
}

/* A block of its own for a big request does not waste the current block's space. */
static void
arena_big_block_keeps_current_space(void **state)
{
	Arena *a = *state;
	char *small = arena_alloc(a, 16);

	arena_alloc(a, 1 << 20);
	assert_ptr_equal(arena_alloc(a, 16), small + 16);
}

static void
arena_many_blocks(void **state)
{
	Arena *a = *state;
	int *p[1000];
	int i;

	for (i = 0; i < countof(p); i++) {
		p[i] = arena_alloc(a, 1000);
		*p[i] = i;
	}
	for (i = 0; i < countof(p); i++)
		assert_int_equal(*p[i], i);
}

static void
arena_strings(void **state)
{
	Arena *a = *state;
	char *s = arena_strndup(a, "matmul_bias", 6);

	assert_string_equal(s, "matmul");
	assert_string_equal(arena_strdup(a, ""), "");
	assert_string_equal(arena_strdup(a, "gelu"), "gelu");
	assert_string_equal(arena_printf(a, "%s_%d", "add", 12), "add_12");
	assert_string_equal(arena_printf(a, "%s", ""), "");
}

static void
arena_grow_and_vec_push(void **state)
{
	Arena *a = *state;
	int *v = NULL, n = 0, cap = 0, i;
	void *same;

	for (i = 0; i < 10000; i++) {
		int *e = VEC_PUSH(a, v, n, cap);

		assert_int_equal(*e, 0);  /* a pushed element starts zeroed */
		*e = i * 3;
	}
	assert_int_equal(n, 10000);
	assert_true(cap >= n);
	assert_int_equal(cap & (cap - 1), 0);
	for (i = 0; i < n; i++)
		assert_int_equal(v[i], i * 3);
	same = arena_grow(a, v, &cap, cap, sizeof *v);
	assert_ptr_equal(same, v);
}

static void
arena_grow_from_empty(void **state)
{
	Arena *a = *state;
	int cap = 0;
	double *d = arena_grow(a, NULL, &cap, 1, sizeof *d);

	assert_non_null(d);
	assert_true(cap >= 1);
	d = arena_grow(a, d, &cap, 100, sizeof *d);
	assert_true(cap >= 100);
	assert_true(d[99] == 0.0);
}

/* A failed allocation jumps to the handler instead of returning NULL. */
static void
arena_oom_longjmps(void **state)
{
	jmp_buf jb;
	Arena *volatile a = arena_new(&jb);
	volatile int jumped = 0;

	(void)state;
	assert_non_null(a);
	if (setjmp(jb) == 0)
		arena_alloc(a, SIZE_MAX / 2);
	else
		jumped = 1;
	assert_int_equal(jumped, 1);
	/* the arena survives the failure and is still usable */
	assert_non_null(arena_alloc(a, 32));
	arena_free(a);
}

/* Sizes near SIZE_MAX must not wrap around to a small block. */
static void
arena_oom_no_size_overflow(void **state)
{
	jmp_buf jb;
	Arena *volatile a = arena_new(&jb);
	volatile int jumped = 0;

	(void)state;
	if (setjmp(jb) == 0)
		arena_alloc(a, SIZE_MAX - 7);
	else
		jumped = 1;
	assert_int_equal(jumped, 1);
	arena_free(a);
}

/* ---- Buf ------------------------------------------------------------ */

static void
buf_empty_is_empty_string(void **state)
{
	Buf b;

	buf_init(&b, *state);
	assert_string_equal(buf_str(&b), "");
	assert_int_equal(b.len, 0);
}

static void
buf_printf_grows(void **state)
{
	Arena *a = *state;
	char want[64];
	Buf b;
	int i;

	buf_init(&b, a);
	for (i = 0; i < 5000; i++)
		buf_printf(&b, "%d,", i);
	assert_int_equal(b.len, strlen(b.s));
	assert_true(b.cap > b.len);
	assert_memory_equal(b.s, "0,1,2,3,", 8);
	snprintf(want, sizeof want, "%d,", 4999);
	assert_string_equal(b.s + b.len - strlen(want), want);
}

static void
buf_one_big_write(void **state)
{
	Arena *a = *state;
	char *big = arena_alloc(a, 100001);
	Buf b;

	memset(big, 'x', 100000);
	buf_init(&b, a);
	buf_puts(&b, "<");
	buf_printf(&b, "%s>", big);
	assert_int_equal(b.len, 100002);
	assert_int_equal(b.s[0], '<');
	assert_int_equal(b.s[100000], 'x');
	assert_string_equal(b.s + 100001, ">");
}

static void
buf_putn_and_indent(void **state)
{
	Buf b;

	buf_init(&b, *state);
	buf_putn(&b, "loop body", 4);
	buf_indent(&b, 3);
	buf_indent(&b, 0);
	buf_puts(&b, "|");
	assert_string_equal(buf_str(&b), "loop   |");
}

/* ---- interning ------------------------------------------------------ */

static void
intern_equal_strings_same_pointer(void **state)
{
	Strtab *t = strtab_new(*state);
	char buf1[] = "bias", buf2[] = "bias";
	const char *p = intern_cstr(t, buf1);

	assert_ptr_not_equal(buf1, buf2);
	assert_ptr_equal(p, intern_cstr(t, buf2));
	assert_ptr_not_equal(p, buf1);  /* interned strings are copies */
	assert_string_equal(p, "bias");
	assert_ptr_equal(intern(t, "bias_grad", 4), p);
	assert_ptr_not_equal(intern_cstr(t, "bia"), p);
	assert_ptr_not_equal(intern_cstr(t, "biass"), p);
	assert_ptr_equal(intern(t, "", 0), intern_cstr(t, ""));
	/* intern_new: a set of names */
	assert_false(intern_new(t, "bias"));
	assert_true(intern_new(t, "y_max"));
	assert_false(intern_new(t, "y_max"));
	assert_ptr_equal(intern_cstr(t, "y_max"), intern_cstr(t, "y_max"));
}

static void
intern_many_strings_rehash(void **state)
{
	Arena *a = *state;
	Strtab *t = strtab_new(a);
	enum { N = 5000 };
	const char **first = arena_alloc(a, N * sizeof *first);
	char name[32];
	int i;

	for (i = 0; i < N; i++) {
		snprintf(name, sizeof name, "t%d", i);
		first[i] = intern_cstr(t, name);
		assert_string_equal(first[i], name);
	}
	for (i = 0; i < N; i++) {
		snprintf(name, sizeof name, "t%d", i);
		assert_ptr_equal(intern_cstr(t, name), first[i]);
	}
	for (i = 1; i < N; i++)
		assert_ptr_not_equal(first[i], first[i - 1]);
}

/* ---- diagnostics ---------------------------------------------------- */

typedef struct Seen {
	int calls;
	WsfSeverity sev;
	char msg[1024];
} Seen;

static void
record(void *user, WsfSeverity sev, const char *msg)
{
	Seen *s = user;

	s->calls++;
	s->sev = sev;
	snprintf(s->msg, sizeof s->msg, "%s", msg);
}

static void
comp_init(Comp *c, Arena *a, Seen *seen, const char *src)
{
	memset(c, 0, sizeof *c);
	memset(seen, 0, sizeof *seen);
	c->arena = a;
	c->strs = strtab_new(a);
	c->file = "t.yaml";
	c->src = src;
	c->srclen = strlen(src);
	c->diag = record;
	c->diag_user = seen;
}

static const char spec[] =
	"fusion: f\n"
	"ops:\n"
	"  - {out: y, op: matmull, in: [x]}\n"
	"\tname: [a,\tb]\n"
	"last: line";

static void
diag_error_format_with_caret(void **state)
{
	Comp c;
	Seen seen;
	Pos p = {NULL, 3, 18};

	comp_init(&c, *state, &seen, spec);
	assert_int_equal(diag_error(&c, p, "unknown op '%s'", "matmull"), -1);
	assert_int_equal(seen.calls, 1);
	assert_int_equal(seen.sev, WSF_SEV_ERROR);
	assert_string_equal(seen.msg,
		"t.yaml:3:18: error: unknown op 'matmull'\n"
		"    - {out: y, op: matmull, in: [x]}\n"
		"                   ^");
	assert_int_equal(c.nerrors, 1);
	assert_string_equal(c.last_error, seen.msg);
}

static void
diag_caret_keeps_tabs(void **state)
{
	Comp c;
	Seen seen;
	Pos p = {NULL, 4, 12};  /* the 'b' after the second tab */

	comp_init(&c, *state, &seen, spec);
	diag_error(&c, p, "unknown tensor '%s'", "b");
	assert_string_equal(seen.msg,
		"t.yaml:4:12: error: unknown tensor 'b'\n"
		"  \tname: [a,\tb]\n"
		"  \t         \t^");
}

static void
diag_first_column_and_last_line(void **state)
{
	Comp c;
	Seen seen;
	Pos p = {NULL, 5, 1};

	comp_init(&c, *state, &seen, spec);
	diag_error(&c, p, "unknown key '%s'", "last");
	assert_string_equal(seen.msg,
		"t.yaml:5:1: error: unknown key 'last'\n"
		"  last: line\n"
		"  ^");
}

static void
diag_line_zero_has_no_position(void **state)
{
	Comp c;
	Seen seen;
	Pos none = {0};

	comp_init(&c, *state, &seen, spec);
	diag_error(&c, none, "size '%s' is bound but never used", "Q");
	assert_string_equal(seen.msg, "t.yaml: error: size 'Q' is bound but never used");
	c.file = NULL;
	diag_error(&c, none, "no input");
	assert_string_equal(seen.msg, "error: no input");
}

static void
diag_position_past_the_text(void **state)
{
	Comp c;
	Seen seen;
	Pos p = {NULL, 40, 2};

	comp_init(&c, *state, &seen, spec);
	diag_error(&c, p, "expected %s, saw %s", "a list", "a map");
	assert_string_equal(seen.msg, "t.yaml:40:2: error: expected a list, saw a map");
}

static void
diag_pos_file_overrides(void **state)
{
	Comp c;
	Seen seen;
	Pos p = {"other.yaml", 2, 1};

	comp_init(&c, *state, &seen, spec);
	diag_error(&c, p, "bad");
	assert_memory_equal(seen.msg, "other.yaml:2:1: error: bad\n", 27);
}

static void
diag_crlf_line(void **state)
{
	Comp c;
	Seen seen;
	Pos p = {NULL, 2, 3};

	comp_init(&c, *state, &seen, "a: 1\r\nb: x\r\n");
	diag_error(&c, p, "bad");
	assert_string_equal(seen.msg, "t.yaml:2:3: error: bad\n  b: x\n    ^");
}

/* The message of an error at LINE:COL of SRC (LEN bytes), as kept for the last error. */
static const char *
diag_at(Comp *c, Seen *seen, const char *src, size_t len, int line, int col)
{
	Pos p = {NULL, line, col};

	comp_init(c, c->arena, seen, src);
	c->srclen = len;
	diag_error(c, p, "bad");
	return c->last_error;
}

#define DIAG_AT(src, line, col) diag_at(&c, &seen, src, sizeof src - 1, line, col)

/*
 * Lines are numbered as libyaml numbers them: CRLF, CR, LF, NEL, LS and PS
 * each end one, so the line shown is the one its mark means.
 */
static void
diag_line_breaks_as_libyaml(void **state)
{
	static const char src[] = "a: 1\r\nb: 2\rc: 3\xc2\x85" "d: 4\xe2\x80\xa8" "e: 5\xe2\x80\xa9" "f: 6\ng: 7";
	Comp c;
	Seen seen;

	c.arena = *state;
	assert_string_equal(DIAG_AT(src, 1, 4), "t.yaml:1:4: error: bad\n  a: 1\n     ^");
	assert_string_equal(DIAG_AT(src, 2, 4), "t.yaml:2:4: error: bad\n  b: 2\n     ^");
	assert_string_equal(DIAG_AT(src, 3, 4), "t.yaml:3:4: error: bad\n  c: 3\n     ^");
	assert_string_equal(DIAG_AT(src, 4, 4), "t.yaml:4:4: error: bad\n  d: 4\n     ^");
	assert_string_equal(DIAG_AT(src, 5, 4), "t.yaml:5:4: error: bad\n  e: 5\n     ^");
	assert_string_equal(DIAG_AT(src, 6, 4), "t.yaml:6:4: error: bad\n  f: 6\n     ^");
	assert_string_equal(DIAG_AT(src, 7, 4), "t.yaml:7:4: error: bad\n  g: 7\n     ^");
	assert_string_equal(DIAG_AT(src, 8, 1), "t.yaml:8:1: error: bad");
	/* a CR-only file: each CR is a line */
	assert_string_equal(DIAG_AT("x\ry\rz", 3, 1), "t.yaml:3:1: error: bad\n  z\n  ^");
	/* CR then LF is one break, LF then CR two */
	assert_string_equal(DIAG_AT("x\n\ry", 3, 1), "t.yaml:3:1: error: bad\n  y\n  ^");
	assert_string_equal(DIAG_AT("x\r\ny", 2, 1), "t.yaml:2:1: error: bad\n  y\n  ^");
	/* the caret at a break stands just past the line's text */
	assert_string_equal(DIAG_AT("ab\xe2\x80\xa8" "c", 1, 3), "t.yaml:1:3: error: bad\n  ab\n    ^");
}

/* libyaml's columns do not count a byte-order mark at the start; the line is shown without it. */
static void
diag_byte_order_mark(void **state)
{
	Comp c;
	Seen seen;

	c.arena = *state;
	assert_string_equal(DIAG_AT("\xef\xbb\xbf" "ab: c\nd", 1, 5), "t.yaml:1:5: error: bad\n  ab: c\n      ^");
	assert_string_equal(DIAG_AT("\xef\xbb\xbf" "ab: c\nd", 2, 1), "t.yaml:2:1: error: bad\n  d\n  ^");
	/* elsewhere it is an invisible character, shown as an escape */
	assert_string_equal(DIAG_AT("a\n\xef\xbb\xbf" "b", 2, 2), "t.yaml:2:2: error: bad\n  \\ufeffb\n        ^");
}

/*
 * Control bytes (NUL included), bytes that are not UTF-8, and invisible or
 * reordering characters are shown as escapes; the caret pads over their width.
 */
static void
diag_source_line_escapes(void **state)
{
	Comp c;
	Seen seen;

	c.arena = *state;
	assert_string_equal(DIAG_AT("k: a\x01" "b\xff" "c\xe2\x80\xae" "d\x7f" "e\xc2\x9b" "f\0g", 1, 16),
	                    "t.yaml:1:16: error: bad\n"
	                    "  k: a\\x01b\\xffc\\u202ed\\x7fe\\u009bf\\x00g\n"
	                    "                                       ^");
	/* a caret on an escaped character stands under its backslash */
	assert_string_equal(DIAG_AT("k: a\x01", 1, 5), "t.yaml:1:5: error: bad\n  k: a\\x01\n      ^");
	/* a truncated sequence is bytes, each escaped; characters of other scripts stay */
	assert_string_equal(DIAG_AT("\xc3\xa9\xe2\x82 x", 1, 5),
	                    "t.yaml:1:5: error: bad\n  \xc3\xa9\\xe2\\x82 x\n            ^");
}

/* A line over 120 columns is shown as a window around the caret, "..." where cut. */
static void
diag_long_line_window(void **state)
{
	char src[1001], want[512];
	Comp c;
	Seen seen;
	int i;

	c.arena = *state;
	for (i = 0; i < 1000; i++)
		src[i] = (char)('a' + i % 26);
	src[1000] = 0;
	/* the caret in the middle: 40 columns before it, 80 from it */
	snprintf(want, sizeof want, "t.yaml:1:501: error: bad\n  ...%.120s...\n  %43s^", src + 460, "");
	assert_string_equal(diag_at(&c, &seen, src, 1000, 1, 501), want);
	/* near the start: the line from its start */
	snprintf(want, sizeof want, "t.yaml:1:3: error: bad\n  %.120s...\n    ^", src);
	assert_string_equal(diag_at(&c, &seen, src, 1000, 1, 3), want);
	/* near the end: the last 120 columns */
	snprintf(want, sizeof want, "t.yaml:1:990: error: bad\n  ...%s\n  %112s^", src + 880, "");
	assert_string_equal(diag_at(&c, &seen, src, 1000, 1, 990), want);
	/* past the end */
	snprintf(want, sizeof want, "t.yaml:1:1200: error: bad\n  ...%s\n  %123s^", src + 880, "");
	assert_string_equal(diag_at(&c, &seen, src, 1000, 1, 1200), want);
	/* escapes count their width */
	memset(src, 1, 200);
	snprintf(want, sizeof want, "t.yaml:1:101: error: bad\n  ...");
	for (i = 0; i < 30; i++)
		strcat(want, "\\x01");
	strcat(want, "...\n  ");
	for (i = 0; i < 43; i++)
		strcat(want, " ");
	strcat(want, "^");
	assert_string_equal(diag_at(&c, &seen, src, 200, 1, 101), want);
}

/*
 * Message text is made safe too: control bytes escaped (newlines kept, for
 * messages of several lines), a quoted span over 120 characters cut to 56
 * at each end, however long the name in it; apostrophes do not open a span.
 */
static void
diag_message_text(void **state)
{
	size_t big = 1 << 20;
	char *name = arena_alloc(*state, big + 1), want[512];
	Comp c;
	Seen seen;
	Pos none = {0};

	comp_init(&c, *state, &seen, spec);
	memset(name, 't', big);
	name[0] = 'a', name[big - 1] = 'z';
	diag_error(&c, none, "unknown tensor '%s': expected an earlier op's output", name);
	snprintf(want, sizeof want, "t.yaml: error: unknown tensor 'a%.55s...%.55sz': expected an earlier op's output",
	         name + 1, name + 1);
	assert_string_equal(c.last_error, want);
	/* at the limit, nothing is cut */
	name[120] = 0;
	diag_error(&c, none, "op's '%s'", name);
	snprintf(want, sizeof want, "t.yaml: error: op's '%s'", name);
	assert_string_equal(c.last_error, want);
	diag_error(&c, none, "name 'a%sb\tc\xff' and\n  a second line", "\x01\x1b[2J\xe2\x80\xae");
	assert_string_equal(c.last_error, "t.yaml: error: name 'a\\x01\\x1b[2J\\u202eb\\tc\\xff' and\n  a second line");
	/* the file name cannot add lines */
	c.file = "a\nb.yaml";
	diag_error(&c, none, "x");
	assert_string_equal(c.last_error, "a\\x0ab.yaml: error: x");
}

static void
diag_last_error_and_callback_once_per_error(void **state)
{
	Comp c;
	Seen seen;
	Pos p = {NULL, 1, 1};

	comp_init(&c, *state, &seen, spec);
	diag_error(&c, p, "first");
	assert_int_equal(seen.calls, 1);
	diag_error(&c, p, "second");
	assert_int_equal(seen.calls, 2);
	assert_int_equal(c.nerrors, 2);
	assert_string_equal(c.last_error, seen.msg);
	assert_memory_equal(c.last_error, "t.yaml:1:1: error: second\n", 26);

	diag_warn(&c, p, "just a warning");
	assert_int_equal(seen.calls, 3);
	assert_int_equal(seen.sev, WSF_SEV_WARNING);
	assert_memory_equal(seen.msg, "t.yaml:1:1: warning: just a warning\n", 36);
	assert_int_equal(c.nerrors, 2);  /* warnings are not errors */
	assert_memory_equal(c.last_error, "t.yaml:1:1: error: second\n", 26);
}

static void
diag_without_callback(void **state)
{
	Comp c;
	Seen seen;
	Pos p = {NULL, 1, 1};

	comp_init(&c, *state, &seen, spec);
	c.diag = NULL;
	diag_error(&c, p, "kept");
	assert_int_equal(seen.calls, 0);
	assert_memory_equal(c.last_error, "t.yaml:1:1: error: kept\n", 24);
}

static void
diag_internal_format(void **state)
{
	Comp c;
	Seen seen;

	comp_init(&c, *state, &seen, spec);
	assert_int_equal(diag_internal(&c, "lower", "tensor %d has no shape", 3), -1);
	assert_int_equal(seen.calls, 1);
	assert_string_equal(seen.msg,
		"t.yaml: error: internal error in lower: tensor 3 has no shape "
		"(this is a wsfuse bug; please report it with the spec)");
}

/* ---- op and dtype tables -------------------------------------------- */

static void
op_table_round_trip(void **state)
{
	int i, j;

	(void)state;
	assert_true(OP_COUNT > 1);
	for (i = 1; i < OP_COUNT; i++) {
		const OpInfo *o = &op_info[i];

		assert_non_null(o->name);
		assert_int_equal(op_from_name(o->name), i);
		assert_true(o->cls != CLS_NONE);
		assert_true(o->min_in >= 1 && o->min_in <= o->max_in && o->max_in <= MAX_IN);
		for (j = 1; j < i; j++)
			assert_true(strcmp(o->name, op_info[j].name) != 0);
	}
	assert_int_equal(op_from_name("matmull"), OP_NONE);
	assert_int_equal(op_from_name(""), OP_NONE);
	assert_int_equal(op_from_name("none"), OP_NONE);
	assert_int_equal(op_from_name("MATMUL"), OP_NONE);
}

static void
op_table_classes(void **state)
{
	(void)state;
	assert_int_equal(op_info[OP_ADD].cls, CLS_BINARY);
	assert_int_equal(op_info[OP_EXP].cls, CLS_UNARY);
	assert_int_equal(op_info[OP_SUM].cls, CLS_REDUCE);
	assert_int_equal(op_info[OP_MATMUL].cls, CLS_MATMUL);
	assert_int_equal(op_info[OP_SOFTMAX].cls, CLS_COMPOSITE);
	assert_true(op_info[OP_GELU].attrs & A_APPROX);
	assert_true(op_info[OP_CAST].attrs & A_TO);
	assert_true(op_info[OP_SUM].attrs & A_AXIS);
	assert_int_equal(op_info[OP_ADD].attrs, 0);
}

static void
dtype_table_round_trip(void **state)
{
	int i;

	(void)state;
	for (i = 1; i < DT_COUNT; i++) {
		assert_int_equal(dtype_from_name(dtype_info[i].name), i);
		assert_true(dtype_info[i].bytes == 1 || dtype_info[i].bytes == 2 ||
		            dtype_info[i].bytes == 4 || dtype_info[i].bytes == 8);
		assert_non_null(dtype_info[i].ctype);
		assert_int_equal(dtype_from_name(dtype_info[i].torch), i);
	}
	assert_int_equal(dtype_from_name("float8_e4m3fn"), DT_FP8E4M3);
	assert_int_equal(dtype_from_name("bfloat16"), DT_BF16);
	assert_int_equal(dtype_from_name("int16"), DT_NONE);
	assert_int_equal(dtype_from_name("f64"), DT_NONE);
	assert_int_equal(dtype_from_name("none"), DT_NONE);
	assert_int_equal(dtype_from_name(""), DT_NONE);
	assert_int_equal(dtype_info[DT_F32].bytes, 4);
	assert_int_equal(dtype_info[DT_BF16].bytes, 2);
	assert_string_equal(dtype_info[DT_BF16].ctype, "__nv_bfloat16");
}

static void
dtype_promotion(void **state)
{
	int i, j;

	(void)state;
	for (i = 0; i < DT_COUNT; i++) {
		assert_int_equal(dtype_promote((Dtype)i, (Dtype)i), i);
		assert_int_equal(dtype_promote(DT_NONE, (Dtype)i), i);
		assert_int_equal(dtype_promote((Dtype)i, DT_NONE), i);
		for (j = 0; j < DT_COUNT; j++)
			assert_int_equal(dtype_promote((Dtype)i, (Dtype)j),
			                 dtype_promote((Dtype)j, (Dtype)i));
	}
	assert_int_equal(dtype_promote(DT_F16, DT_BF16), DT_F32);
	assert_int_equal(dtype_promote(DT_BF16, DT_F32), DT_F32);
	assert_int_equal(dtype_promote(DT_F16, DT_F16), DT_F16);
	assert_int_equal(dtype_promote(DT_BOOL, DT_INT8), DT_INT8);
	assert_int_equal(dtype_promote(DT_INT8, DT_UINT8), DT_INT32);
	assert_int_equal(dtype_promote(DT_UINT8, DT_INT64), DT_INT64);
	assert_int_equal(dtype_promote(DT_INT64, DT_FP8E4M3), DT_FP8E4M3);
	assert_int_equal(dtype_promote(DT_FP8E4M3, DT_FP8E5M2), DT_F32);
	assert_int_equal(dtype_promote_number(DT_BOOL, true), DT_INT64);
	assert_int_equal(dtype_promote_number(DT_INT8, true), DT_INT8);
	assert_int_equal(dtype_promote_number(DT_INT8, false), DT_F32);
	assert_int_equal(dtype_promote_number(DT_BF16, false), DT_BF16);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(arena_alloc_aligned_and_zeroed),
		T(arena_alloc_distinct),
		T(arena_used_counts_rounded_sizes),
		T(arena_big_allocations),
		T(arena_big_block_keeps_current_space),
		T(arena_many_blocks),
		T(arena_strings),
		T(arena_grow_and_vec_push),
		T(arena_grow_from_empty),
		cmocka_unit_test(arena_oom_longjmps),
		cmocka_unit_test(arena_oom_no_size_overflow),
		T(buf_empty_is_empty_string),
		T(buf_printf_grows),
		T(buf_one_big_write),
		T(buf_putn_and_indent),
		T(intern_equal_strings_same_pointer),
		T(intern_many_strings_rehash),
		T(diag_error_format_with_caret),
		T(diag_caret_keeps_tabs),
		T(diag_first_column_and_last_line),
		T(diag_line_zero_has_no_position),
		T(diag_position_past_the_text),
		T(diag_pos_file_overrides),
		T(diag_crlf_line),
		T(diag_line_breaks_as_libyaml),
		T(diag_byte_order_mark),
		T(diag_source_line_escapes),
		T(diag_long_line_window),
		T(diag_message_text),
		T(diag_last_error_and_callback_once_per_error),
		T(diag_without_callback),
		T(diag_internal_format),
		cmocka_unit_test(op_table_round_trip),
		cmocka_unit_test(op_table_classes),
		cmocka_unit_test(dtype_table_round_trip),
		cmocka_unit_test(dtype_promotion),
	};

	return cmocka_run_group_tests_name("ir", tests, NULL, NULL);
}
