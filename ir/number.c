/*
 * number.c: numbers in text, the same in every locale.
 *
 * snprintf and strtod follow the calling thread's LC_NUMERIC, and a program
 * that embeds wsfuse may have set one whose decimal point is not '.': under
 * de_DE strtod reads "1e-5" whole but "0.001" as 0, and "%g" writes
 * "0,001", which in CUDA source is the comma operator.  Every number wsfuse
 * reads from a spec or writes into IR text or CUDA goes through here.
 *
 * The locale is neither read through localeconv() (not thread-safe) nor
 * switched (setlocale is process-wide; uselocale would do, but is state to
 * restore on every path).  Instead each call asks snprintf how the thread's
 * locale writes one half, and swaps that decimal point for '.' in what it
 * prints, and '.' for it in what it parses.  The decimal point is all that
 * LC_NUMERIC changes in %g, %e, %f and strtod (grouping needs the ' flag,
 * which wsfuse never uses), so the results are those of the "C" locale.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

enum { RADIX_MAX = 8 };

/* The calling thread's decimal point as snprintf writes it: "." in the C locale, "," in de_DE. */
static void
radix(char r[RADIX_MAX])
{
	char s[16];
	size_t n;

	snprintf(s, sizeof s, "%.1f", 0.5);  /* "0" RADIX "5" */
	n = strlen(s);
	if (n < 3 || n - 2 >= RADIX_MAX || s[0] != '0' || s[n - 1] != '5') {
		strcpy(r, ".");
		return;
	}
	memcpy(r, s + 1, n - 2);
	r[n - 2] = 0;
}

/* [-+]? DIGITS? ('.' DIGITS?)? ([eE] [-+]? DIGITS)?, with a digit before the exponent */
static bool
decimal(const char *s)
{
	int ndigit = 0;

	if (*s == '-' || *s == '+')
		s++;
	for (; *s >= '0' && *s <= '9'; s++)
		ndigit++;
	if (*s == '.')
		for (s++; *s >= '0' && *s <= '9'; s++)
			ndigit++;
	if (!ndigit)
		return false;
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '-' || *s == '+')
			s++;
		if (!(*s >= '0' && *s <= '9'))
			return false;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	return *s == 0;
}

/* Reads all of S as a double (D) or as an f32 (F, correctly rounded from the decimal: strtof). */
static bool
parse(const char *s, double *d, float *f)
{
	char r[RADIX_MAX], small[64], *copy = (char *)s, *end;
	const char *dot = strchr(s, '.');
	size_t n, nr;
	bool ok;

	if (!decimal(s))
		return false;
	radix(r);
	if (dot && strcmp(r, ".") != 0) {
		/* the same text with the locale's decimal point in place of '.' */
		n = strlen(s);
		nr = strlen(r);
		copy = small;
		if (n + nr >= sizeof small && !(copy = malloc(n + nr + 1)))
			return false;
		memcpy(copy, s, (size_t)(dot - s));
		memcpy(copy + (dot - s), r, nr);
		memcpy(copy + (dot - s) + nr, dot + 1, n - (size_t)(dot - s));  /* with the NUL */
	}
	if (d)
		*d = strtod(copy, &end);
	else
		*f = strtof(copy, &end);
	ok = end != copy && *end == 0;
	if (copy != s && copy != small)
		free(copy);
	return ok;
}

bool
num_parse(const char *s, double *v)
{
	*v = 0;
	return parse(s, v, NULL);
}

int
num_snprintf(char *out, size_t size, const char *fmt, double v)
{
	char r[RADIX_MAX], tmp[512], *p;
	size_t nr;
	int n;

	radix(r);
	if (strcmp(r, ".") == 0)
		return snprintf(out, size, fmt, v);
	snprintf(tmp, sizeof tmp, fmt, v);
	nr = strlen(r);
	if ((p = strstr(tmp, r))) {
		*p = '.';
		memmove(p + 1, p + nr, strlen(p + nr) + 1);
	}
	n = (int)strlen(tmp);
	if (size)
		snprintf(out, size, "%s", tmp);
	return n;
}

void
num_shortest(char out[NUM_MAX], double v)
{
	double back;

	num_snprintf(out, NUM_MAX, "%.15g", v);
	if (num_parse(out, &back) && back == v)
		return;
	num_snprintf(out, NUM_MAX, "%.16g", v);
	if (num_parse(out, &back) && back == v)
		return;
	num_snprintf(out, NUM_MAX, "%.17g", v);
}

void
num_shortest_f32(char out[NUM_MAX], float f)
{
	static const char *const fmt[] = {"%.1g", "%.2g", "%.3g", "%.4g", "%.5g", "%.6g", "%.7g", "%.8g"};
	float back;
	int i;

	for (i = 0; i < countof(fmt); i++) {
		num_snprintf(out, NUM_MAX, fmt[i], f);
		if (parse(out, NULL, &back) && back == f)   /* as a compiler reads "TEXTf" */
			return;
	}
	num_snprintf(out, NUM_MAX, "%.9g", f);  /* 9 digits always read back as the same f32 */
}
