/*
 * arena.c: arena allocation, growable arrays, text buffers and interning.
 *
 * An arena is a list of blocks; allocation bumps a pointer in the newest
 * block and a request larger than a block gets a block of its own.  A failed
 * malloc longjmps to the handler given at arena_new(), so callers never see
 * NULL (the Lua approach: one recovery point per compilation, not a check at
 * every call).  Interning is an open-addressing hash table of arena strings.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

enum { BLOCK_SIZE = 64 * 1024 };

typedef struct Block {
	struct Block *next;
	size_t size, used;
	_Alignas(16) unsigned char data[];
} Block;

struct Arena {
	Block *head;
	jmp_buf *oom;
	size_t total;
};

Arena *
arena_new(jmp_buf *oom)
{
	Arena *a = calloc(1, sizeof *a);

	if (!a)
		return NULL;
	a->oom = oom;
	return a;
}

void
arena_set_oom(Arena *a, jmp_buf *oom)
{
	a->oom = oom;
}

void
arena_free(Arena *a)
{
	Block *b, *next;

	if (!a)
		return;
	for (b = a->head; b; b = next) {
		next = b->next;
		free(b);
	}
	free(a);
}

static void
out_of_memory(Arena *a)
{
	if (a->oom)
		longjmp(*a->oom, 1);
	fputs("wsfuse: out of memory with no handler\n", stderr);
	abort();
}

void *
arena_alloc_raw(Arena *a, size_t size)
{
	Block *b = a->head;
	void *p;

	if (size > SIZE_MAX / 2)
		out_of_memory(a);
	size = (size + 15) & ~(size_t)15;
	if (size == 0)
		size = 16;
	if (!b || b->size - b->used < size) {
		size_t bsize = size > BLOCK_SIZE / 4 ? size : BLOCK_SIZE;

		b = malloc(sizeof *b + bsize);
		if (!b)
			out_of_memory(a);
		b->size = bsize;
		b->used = 0;
		if (bsize == size && a->head) {
			/* a big block goes behind the current one, which keeps its space */
			b->next = a->head->next;
			a->head->next = b;
		} else {
			b->next = a->head;
			a->head = b;
		}
	}
	p = b->data + b->used;
	b->used += size;
	a->total += size;
	return p;
}

void *
arena_alloc(Arena *a, size_t size)
{
	void *p = arena_alloc_raw(a, size);

	memset(p, 0, size);
	return p;
}

char *
arena_strndup(Arena *a, const char *s, size_t n)
{
	char *p = arena_alloc(a, n + 1);

	memcpy(p, s, n);
	p[n] = 0;
	return p;
}

char *
arena_strdup(Arena *a, const char *s)
{
	return arena_strndup(a, s, strlen(s));
}

/* Sized to fit: codegen makes one for each name it writes (a Buf would reserve 256 bytes). */
char *
arena_printf(Arena *a, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	s = arena_alloc_raw(a, (size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	s[n] = 0;
	return s;
}

void *
arena_grow(Arena *a, void *p, int *cap, int need, size_t size)
{
	int ncap = *cap ? *cap : 8;
	void *q;

	while (ncap < need)
		ncap *= 2;
	if (ncap == *cap)
		return p;
	q = arena_alloc(a, (size_t)ncap * size);
	if (p)
		memcpy(q, p, (size_t)*cap * size);
	*cap = ncap;
	return q;
}

size_t
arena_used(const Arena *a)
{
	return a->total;
}

void
buf_init(Buf *b, Arena *a)
{
	b->arena = a;
	b->s = NULL;
	b->len = b->cap = 0;
}

static void
buf_reserve(Buf *b, size_t extra)
{
	size_t ncap;
	char *s;

	if (b->len + extra + 1 <= b->cap)
		return;
	ncap = b->cap ? b->cap * 2 : 256;
	while (ncap < b->len + extra + 1)
		ncap *= 2;
	s = arena_alloc(b->arena, ncap);
	if (b->s)
		memcpy(s, b->s, b->len + 1);
	b->s = s;
	b->cap = ncap;
}

void
buf_putn(Buf *b, const char *s, size_t n)
{
	buf_reserve(b, n);
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = 0;
}

void
buf_puts(Buf *b, const char *s)
{
	buf_putn(b, s, strlen(s));
}

void
buf_vprintf(Buf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	int n;

	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		return;
	buf_reserve(b, (size_t)n);
	vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
}

void
buf_printf(Buf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	buf_vprintf(b, fmt, ap);
	va_end(ap);
}

void
buf_indent(Buf *b, int n)
{
	buf_reserve(b, (size_t)n);
	memset(b->s + b->len, ' ', (size_t)n);
	b->len += (size_t)n;
	b->s[b->len] = 0;
}

const char *
buf_str(Buf *b)
{
	if (!b->s)
		buf_reserve(b, 0), b->s[0] = 0;
	return b->s;
}

/* Interning: open addressing, FNV-1a, load factor at most 1/2. */
struct Strtab {
	Arena *arena;
	const char **slot;
	int cap, n;
};

Strtab *
strtab_new(Arena *a)
{
	Strtab *t = arena_alloc(a, sizeof *t);

	t->arena = a;
	t->cap = 256;
	t->slot = arena_alloc(a, (size_t)t->cap * sizeof *t->slot);
	return t;
}

static uint32_t
hash(const char *s, size_t n)
{
	uint32_t h = 2166136261u;

	while (n--)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

static void
strtab_rehash(Strtab *t)
{
	const char **old = t->slot;
	int oldcap = t->cap, i;

	t->cap *= 2;
	t->slot = arena_alloc(t->arena, (size_t)t->cap * sizeof *t->slot);
	for (i = 0; i < oldcap; i++) {
		uint32_t j;

		if (!old[i])
			continue;
		j = hash(old[i], strlen(old[i])) & (uint32_t)(t->cap - 1);
		while (t->slot[j])
			j = (j + 1) & (uint32_t)(t->cap - 1);
		t->slot[j] = old[i];
	}
}

const char *
intern(Strtab *t, const char *s, size_t n)
{
	uint32_t j;

	if (2 * (t->n + 1) > t->cap)
		strtab_rehash(t);
	j = hash(s, n) & (uint32_t)(t->cap - 1);
	for (; t->slot[j]; j = (j + 1) & (uint32_t)(t->cap - 1))
		if (strncmp(t->slot[j], s, n) == 0 && t->slot[j][n] == 0)
			return t->slot[j];
	t->n++;
	return t->slot[j] = arena_strndup(t->arena, s, n);
}

const char *
intern_cstr(Strtab *t, const char *s)
{
	return intern(t, s, strlen(s));
}

bool
intern_new(Strtab *t, const char *s)
{
	int n = t->n;

	intern(t, s, strlen(s));
	return t->n > n;
}
