/*
 * diag.c: the one diagnostic format.
 *
 *   FILE:LINE:COL: error: WHAT
 *     <the spec line>
 *     <spaces>^
 *
 * Messages are lowercase, quote names, and say "expected X, saw Y".  The full
 * text goes to the Comp's callback and is kept as its last error; nothing here
 * prints or exits.
 *
 * Everything a message shows may come from hostile input, so the text is made
 * safe here, in the one place every message passes: control bytes, bytes that
 * are not UTF-8, and characters that are invisible or reorder text are shown
 * as escapes (\x01, \u202e); a quoted span ('NAME') of more than QUOTED_CHARS
 * characters keeps only its ends; the source line is cut to a window of about
 * LINE_COLS columns around the caret.  The caret stays under its character:
 * the caret line pads with the width each character was shown with.
 *
 * Lines are found as libyaml numbers them (YAML 1.1): CRLF, CR, LF, NEL
 * (U+0085), LS (U+2028) and PS (U+2029) each end one, and a byte-order mark
 * at the start is not a column.  The front end refuses all but LF and CRLF
 * (compiler/spec.c), but a position always names the line libyaml meant.
 */
#include <stdio.h>
#include <string.h>

#include "ir.h"

enum {
	LINE_COLS = 120,    /* columns of a source line shown; a longer line is cut around the caret */
	LINE_LEFT = 40,     /* columns kept before the caret when the line is cut (if it has them) */
	QUOTED_CHARS = 120, /* a longer quoted span in a message is cut to its ends */
	QUOTED_END = 56     /* characters kept at each end of a cut span */
};

/* One character of untrusted text: LEN bytes, code point CP, or -1 for a byte that is not UTF-8. */
typedef struct Char {
	int len;
	long cp;
} Char;

/* The character at S (before END): a well-formed UTF-8 sequence, else one bad byte. */
static Char
char_at(const char *s, const char *end)
{
	const unsigned char *u = (const unsigned char *)s;
	Char bad = {1, -1};
	long cp;
	int n, i;

	if (u[0] < 0x80)
		return (Char){1, u[0]};
	if (u[0] >= 0xc2 && u[0] <= 0xdf)
		n = 2, cp = u[0] & 0x1f;
	else if (u[0] >= 0xe0 && u[0] <= 0xef)
		n = 3, cp = u[0] & 0x0f;
	else if (u[0] >= 0xf0 && u[0] <= 0xf4)
		n = 4, cp = u[0] & 0x07;
	else
		return bad;
	if (end - s < n)
		return bad;
	for (i = 1; i < n; i++) {
		if ((u[i] & 0xc0) != 0x80)
			return bad;
		cp = cp << 6 | (u[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return bad;
	return (Char){n, cp};
}

/*
 * Is CH shown as an escape?  Control characters (C0 but tab, DEL, C1),
 * bytes that are not UTF-8, and the characters a terminal draws as nothing
 * or uses to reorder text: zero-width spaces and joiners, the directional
 * marks, embeddings, overrides and isolates, line and paragraph separators,
 * and the byte-order mark.
 */
static bool
char_escaped(Char ch)
{
	long c = ch.cp;

	return c < 0 || (c < 0x20 && c != '\t') || (c >= 0x7f && c <= 0x9f) || (c >= 0x200b && c <= 0x200f) ||
	       (c >= 0x2028 && c <= 0x202e) || (c >= 0x2060 && c <= 0x2069) || c == 0xfeff;
}

/* Columns CH takes as shown: 1, or the width of its escape. */
static int
char_cols(Char ch)
{
	if (!char_escaped(ch))
		return 1;
	return ch.cp < 0x80 ? 4 : 6;  /* \xNN for a byte, \uNNNN for a character */
}

/* Appends CH (at S) as shown. */
static void
char_put(Buf *b, const char *s, Char ch)
{
	if (!char_escaped(ch))
		buf_putn(b, s, (size_t)ch.len);
	else if (ch.cp < 0x80)
		buf_printf(b, "\\x%02x", (unsigned char)s[0]);
	else
		buf_printf(b, "\\u%04lx", ch.cp);
}

int
diag_break_len(const char *s, const char *end)
{
	const unsigned char *u = (const unsigned char *)s;
	ptrdiff_t n = end - s;

	if (n <= 0)
		return 0;
	if (u[0] == '\n')
		return 1;
	if (u[0] == '\r')
		return n > 1 && u[1] == '\n' ? 2 : 1;
	if (n > 1 && u[0] == 0xc2 && u[1] == 0x85)
		return 2;
	if (n > 2 && u[0] == 0xe2 && u[1] == 0x80 && (u[2] == 0xa8 || u[2] == 0xa9))
		return 3;
	return 0;
}

/* The first byte of line LINE (from 1) of C's source, or NULL past its end. */
static const char *
line_start(const Comp *c, int line)
{
	const char *s = c->src, *end = s + c->srclen;
	int n;

	if (c->srclen >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0)
		s += 3;  /* libyaml's marks do not count a byte-order mark */
	while (line > 1 && s < end) {
		n = diag_break_len(s, end);
		s += n ? n : 1;
		line -= n > 0;
	}
	return line == 1 && s < end ? s : NULL;
}

/*
 * Appends the source line of P and a caret under its column.  Columns count
 * characters, as libyaml's marks do.  A line wider than LINE_COLS is shown
 * from FROM to TO around the caret, with "..." where it was cut.
 */
static void
put_caret(Buf *b, const Comp *c, Pos p)
{
	const char *s, *end, *q, *at, *from, *to, *t;
	int col, left = 0, right = 0, w;
	Char ch;

	if (!c->src || p.line <= 0 || !(s = line_start(c, p.line)))
		return;
	end = c->src + c->srclen;
	for (q = s; q < end && !diag_break_len(q, end); q++)
		;
	for (at = s, col = 1; col < p.col && at < q; col++, at += ch.len)
		left += char_cols(ch = char_at(at, q));
	for (t = at; t < q; t += ch.len)
		right += char_cols(ch = char_at(t, q));
	from = s, to = q;
	if (left + right > LINE_COLS) {
		int keep = right < LINE_COLS - LINE_LEFT ? LINE_COLS - right : LINE_LEFT;

		for (w = left; w > keep; from += ch.len)
			w -= char_cols(ch = char_at(from, q));
		for (to = at, right = LINE_COLS - w; to < q; to += ch.len) {
			ch = char_at(to, q);
			if ((right -= char_cols(ch)) < 0)
				break;
		}
	}
	buf_puts(b, "\n  ");
	if (from > s)
		buf_puts(b, "...");
	for (t = from; t < to; t += ch.len)
		char_put(b, t, ch = char_at(t, to));
	if (to < q)
		buf_puts(b, "...");
	buf_puts(b, "\n  ");
	if (from > s)
		buf_puts(b, "   ");
	/* keep tabs so the caret lines up however the terminal renders them */
	for (t = from; t < at; t += ch.len) {
		ch = char_at(t, at);
		if (*t == '\t')
			buf_puts(b, "\t");
		else
			buf_indent(b, char_cols(ch));
	}
	buf_puts(b, "^");
}

/*
 * Appends the character at T (before END) as shown and returns its length;
 * B NULL: only the length.  In a message (MSG) a newline stays; elsewhere
 * (a file name) it is escaped, and a tab is escaped everywhere.
 */
static int
put_one(Buf *b, const char *t, const char *end, bool msg)
{
	Char ch = char_at(t, end);

	if (!b)
		return ch.len;
	if (msg && *t == '\n')
		buf_puts(b, "\n");
	else if (*t == '\t')
		buf_puts(b, "\\t");
	else
		char_put(b, t, ch);
	return ch.len;
}

/* Appends (B NULL: skips) up to N characters from S (before END); returns where it stopped. */
static const char *
put_chars(Buf *b, const char *s, const char *end, long n)
{
	for (; n > 0 && s < end; n--)
		s += put_one(b, s, end, true);
	return s;
}

/* Does the quote at S (in text from TEXT) open a quoted span, rather than end a word ("op's")? */
static bool
opens_quote(const char *text, const char *s)
{
	unsigned char prev = s > text ? (unsigned char)s[-1] : ' ';

	return *s == '\'' && !(prev == '_' || prev >= 0x80 || (prev >= '0' && prev <= '9') ||
	                       ((prev | 0x20) >= 'a' && (prev | 0x20) <= 'z'));
}

/*
 * Appends text S of N bytes as shown.  In a message (MSG), a quoted span on
 * one line of more than QUOTED_CHARS characters keeps QUOTED_END at each end.
 */
static void
put_text(Buf *b, const char *s, size_t n, bool msg)
{
	const char *end = s + n, *t = s, *close, *u;
	long nchars;

	while (t < end) {
		if (msg && opens_quote(s, t)) {
			for (close = t + 1; close < end && *close != '\'' && *close != '\n'; close++)
				;
			for (u = t + 1, nchars = 0; close < end && *close == '\'' && u < close; nchars++)
				u += char_at(u, close).len;
			if (nchars > QUOTED_CHARS) {
				buf_puts(b, "'");
				u = put_chars(b, t + 1, close, QUOTED_END);
				buf_puts(b, "...");
				u = put_chars(NULL, u, close, nchars - 2 * QUOTED_END);
				put_chars(b, u, close, QUOTED_END);
				buf_puts(b, "'");
				t = close + 1;
				continue;
			}
		}
		t += put_one(b, t, end, msg);
	}
}

static void
report(Comp *c, WsfSeverity sev, Pos p, const char *fmt, va_list ap)
{
	static const char *word[] = {"", "note", "warning", "error"};
	const char *file = p.line > 0 && p.file ? p.file : c->file;
	Buf what, b;

	buf_init(&what, c->arena);
	buf_vprintf(&what, fmt, ap);
	buf_init(&b, c->arena);
	if (file)
		put_text(&b, file, strlen(file), false);
	if (p.line > 0)
		buf_printf(&b, "%s%d:%d: ", file ? ":" : "", p.line, p.col);
	else if (file)
		buf_puts(&b, ": ");
	buf_printf(&b, "%s: ", word[sev]);
	put_text(&b, buf_str(&what), what.len, true);
	put_caret(&b, c, p);
	if (sev == WSF_SEV_ERROR) {
		c->nerrors++;
		c->last_error = (char *)buf_str(&b);
	}
	if (c->diag)
		c->diag(c->diag_user, sev, buf_str(&b));
}

int
diag_verror(Comp *c, Pos p, const char *fmt, va_list ap)
{
	report(c, WSF_SEV_ERROR, p, fmt, ap);
	return -1;
}

int
diag_error(Comp *c, Pos p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	report(c, WSF_SEV_ERROR, p, fmt, ap);
	va_end(ap);
	return -1;
}

void
diag_warn(Comp *c, Pos p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	report(c, WSF_SEV_WARNING, p, fmt, ap);
	va_end(ap);
}

void
diag_note(Comp *c, Pos p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	report(c, WSF_SEV_NOTE, p, fmt, ap);
	va_end(ap);
}

int
diag_internal(Comp *c, const char *who, const char *fmt, ...)
{
	Pos none = {0};
	Buf b;
	va_list ap;

	buf_init(&b, c->arena);
	buf_printf(&b, "internal error in %s: ", who);
	va_start(ap, fmt);
	buf_vprintf(&b, fmt, ap);
	va_end(ap);
	buf_puts(&b, " (this is a wsfuse bug; please report it with the spec)");
	c->status = WSF_ERR_INTERNAL;
	return diag_error(c, none, "%s", buf_str(&b));
}
