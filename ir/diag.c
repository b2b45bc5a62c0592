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
 */
#include <stdio.h>
#include <string.h>

#include "ir.h"

/* Length of the well-formed UTF-8 sequence at S (before END), 0 if malformed. */
static int
utf8_len(const char *s, const char *end)
{
	unsigned char c0 = (unsigned char)s[0];
	int n = c0 < 0x80 ? 1 : (c0 & 0xe0) == 0xc0 ? 2 : (c0 & 0xf0) == 0xe0 ? 3 : (c0 & 0xf8) == 0xf0 ? 4 : 0;
	int i;

	if (n == 0 || s + n > end)
		return 0;
	for (i = 1; i < n; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

/* Characters of a longer source line shown, around the caret. */
#define LINE_SHOWN 240

/* S advanced by N characters (a character is a byte and its UTF-8 continuation bytes), up to END. */
static const char *
skip_chars(const char *s, const char *end, int n)
{
	for (; n > 0 && s < end; n--) {
		s++;
		while (s < end && ((unsigned char)*s & 0xc0) == 0x80)
			s++;
	}
	return s;
}

/*
 * Appends the source line of P and a caret under its column.  The line ends
 * at a newline or a NUL byte; control bytes and bytes that are not valid
 * UTF-8 are shown as '?'.  Columns count characters, as libyaml's marks do,
 * so the caret skips one column per UTF-8 sequence, not per byte.  A line
 * longer than LINE_SHOWN characters is cut to that many around the caret,
 * with "..." where it was cut, so that a megabyte on one line does not
 * become a megabyte of message.
 */
static void
put_caret(Buf *b, const Comp *c, Pos p)
{
	const char *s = c->src, *end, *q, *t;
	int line = 1, col, nchars = 0, first = 0;

	if (!s || p.line <= 0)
		return;
	end = s + c->srclen;
	while (s < end && line < p.line) {
		if (*s++ == '\n')
			line++;
	}
	if (line != p.line || s >= end)
		return;
	for (q = s; q < end && *q != '\n' && *q != '\r' && *q != 0; q++)
		nchars += ((unsigned char)*q & 0xc0) != 0x80;
	if (nchars > LINE_SHOWN) {
		first = p.col - 1 - LINE_SHOWN / 2;
		first = first > nchars - LINE_SHOWN ? nchars - LINE_SHOWN : first < 0 ? 0 : first;
		s = skip_chars(s, q, first);
		end = q;
		q = skip_chars(s, q, LINE_SHOWN);
	}
	buf_puts(b, "\n  ");
	if (first > 0)
		buf_puts(b, "...");
	for (t = s; t < q;) {
		int n = utf8_len(t, q);

		if (n > 1 || (n == 1 && (*t == '\t' || (*t >= 0x20 && *t != 0x7f))))
			buf_putn(b, t, (size_t)(n ? n : 1));
		else
			buf_puts(b, "?");
		t += n ? n : 1;
	}
	if (nchars > LINE_SHOWN && q < end)
		buf_puts(b, "...");
	buf_puts(b, "\n  ");
	if (first > 0)
		buf_puts(b, "   ");
	/* keep tabs so the caret lines up however the terminal renders them */
	for (col = 1 + first; col < p.col && s < q; col++) {
		buf_putn(b, *s == '\t' ? "\t" : " ", 1);
		s = skip_chars(s, q, 1);
	}
	buf_puts(b, "^");
}

static void
report(Comp *c, WsfSeverity sev, Pos p, const char *fmt, va_list ap)
{
	static const char *word[] = {"", "note", "warning", "error"};
	Buf b;

	buf_init(&b, c->arena);
	if (p.line > 0)
		buf_printf(&b, "%s:%d:%d: ", p.file ? p.file : c->file, p.line, p.col);
	else if (c->file)
		buf_printf(&b, "%s: ", c->file);
	buf_printf(&b, "%s: ", word[sev]);
	buf_vprintf(&b, fmt, ap);
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
