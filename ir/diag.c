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

/*
 * Appends the source line of P and a caret under its column.  The line ends
 * at a newline or a NUL byte; control bytes and bytes that are not valid
 * UTF-8 are shown as '?'.  Columns count characters, as libyaml's marks do,
 * so the caret skips one column per UTF-8 sequence, not per byte.
 */
static void
put_caret(Buf *b, const Comp *c, Pos p)
{
	const char *s = c->src, *end, *q;
	int line = 1, col;

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
		;
	buf_puts(b, "\n  ");
	for (const char *t = s; t < q;) {
		int n = utf8_len(t, q);

		if (n > 1 || (n == 1 && (*t == '\t' || (*t >= 0x20 && *t != 0x7f))))
			buf_putn(b, t, (size_t)(n ? n : 1));
		else
			buf_puts(b, "?");
		t += n ? n : 1;
	}
	buf_puts(b, "\n  ");
	/* keep tabs so the caret lines up however the terminal renders them */
	for (col = 1; col < p.col && s < q; col++) {
		buf_putn(b, *s == '\t' ? "\t" : " ", 1);
		s++;
		while (s < q && ((unsigned char)*s & 0xc0) == 0x80)
			s++;
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
