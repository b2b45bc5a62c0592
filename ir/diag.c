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

/* Appends the source line of P and a caret under its column. */
static void
put_caret(Buf *b, const Comp *c, Pos p)
{
	const char *s = c->src, *end, *q;
	int line = 1, i;

	if (!s || p.line <= 0)
		return;
	end = s + c->srclen;
	while (s < end && line < p.line) {
		if (*s++ == '\n')
			line++;
	}
	if (line != p.line || s >= end)
		return;
	for (q = s; q < end && *q != '\n' && *q != '\r'; q++)
		;
	buf_puts(b, "\n  ");
	buf_putn(b, s, (size_t)(q - s));
	buf_puts(b, "\n  ");
	/* keep tabs so the caret lines up however the terminal renders them */
	for (i = 1; i < p.col && s + i - 1 < q; i++)
		buf_putn(b, s[i - 1] == '\t' ? "\t" : " ", 1);
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
