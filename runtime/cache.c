/*
 * cache.c: the disk cache of compiled kernels.
 *
 * The key is the SHA-256 of a length-prefixed record of everything that
 * shapes the binary: the cache format, the wsfuse version, the kernel name,
 * the source, every header, the ordered NVRTC options and the NVRTC version.
 * Length prefixes keep field boundaries unambiguous ("ab"+"c" != "a"+"bc").
 *
 * An entry is a directory <dir>/v1/<key[0:2]>/<key>/ holding kernel.cu,
 * kernel.ptx, kernel.cubin, compile.log and meta.  Every file is written to a
 * unique temp file and renamed into place (files.c, which replaces whatever
 * is at the path: links are not followed); meta goes last and lists the key
 * and the size and SHA-256 of each artifact, so its presence means the entry
 * is complete.  A load recomputes meta from the files it read and compares the
 * text, so a missing, truncated, flipped or foreign entry is a miss, never an
 * error.  Readers take no locks: two writers of one key write equal bytes.
 *
 * SHA-256 is written here from FIPS 180-4 so the library needs no crypto
 * dependency; it runs once per compile over a few hundred kilobytes at most.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime.h"

/* The record's and the meta file's first field; bump it when either changes. */
#define CACHE_FORMAT "wsfuse-cache-v1"
/* A cache file larger than this is corrupt, not a kernel. */
#define CACHE_FILE_MAX ((size_t)1 << 30)

/* ---- SHA-256 (FIPS 180-4, section 6.2) ---- */

typedef struct Sha256 {
	uint32_t h[8];
	uint64_t len;             /* bytes hashed so far */
	unsigned char blk[64];
	size_t used;              /* bytes waiting in blk */
} Sha256;

/* First 32 bits of the fractional parts of the cube roots of the first 64 primes (4.2.2). */
static const uint32_t sha_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t
rotr(uint32_t x, int n)
{
	return x >> n | x << (32 - n);
}

static void
sha_init(Sha256 *s)
{
	/* square roots of the first 8 primes (5.3.3) */
	static const uint32_t h0[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
	};

	memcpy(s->h, h0, sizeof h0);
	s->len = 0;
	s->used = 0;
}

static void
sha_block(Sha256 *s, const unsigned char *p)
{
	uint32_t w[64], v[8], t1, t2;
	int i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (i = 16; i < 64; i++) {
		uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ w[i - 15] >> 3;
		uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ w[i - 2] >> 10;

		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	memcpy(v, s->h, sizeof v);
	for (i = 0; i < 64; i++) {
		/* v[0..7] are a..h */
		t1 = v[7] + (rotr(v[4], 6) ^ rotr(v[4], 11) ^ rotr(v[4], 25)) +
		     ((v[4] & v[5]) ^ (~v[4] & v[6])) + sha_k[i] + w[i];
		t2 = (rotr(v[0], 2) ^ rotr(v[0], 13) ^ rotr(v[0], 22)) +
		     ((v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]));
		memmove(v + 1, v, 7 * sizeof v[0]);
		v[4] += t1;
		v[0] = t1 + t2;
	}
	for (i = 0; i < 8; i++)
		s->h[i] += v[i];
}

static void
sha_update(Sha256 *s, const void *data, size_t n)
{
	const unsigned char *p = data;

	s->len += n;
	while (n > 0) {
		size_t k = 64 - s->used < n ? 64 - s->used : n;

		memcpy(s->blk + s->used, p, k);
		s->used += k;
		p += k;
		n -= k;
		if (s->used == 64) {
			sha_block(s, s->blk);
			s->used = 0;
		}
	}
}

static void
sha_final_hex(Sha256 *s, char hex[65])
{
	static const char digit[] = "0123456789abcdef";
	uint64_t bits = s->len * 8;
	unsigned char pad[72] = {0x80};
	size_t npad = (s->used < 56 ? 56 : 120) - s->used;
	int i;

	/* 1 bit, zeros to 56 mod 64 bytes, then the bit length big-endian (5.1.1) */
	for (i = 0; i < 8; i++)
		pad[npad + (size_t)i] = (unsigned char)(bits >> (56 - 8 * i));
	sha_update(s, pad, npad + 8);
	for (i = 0; i < 32; i++) {
		unsigned byte = s->h[i / 4] >> (24 - 8 * (i % 4)) & 0xff;

		hex[2 * i] = digit[byte >> 4];
		hex[2 * i + 1] = digit[byte & 15];
	}
	hex[64] = 0;
}

void
rt_sha256_hex(const void *data, size_t n, char hex[65])
{
	Sha256 s;

	sha_init(&s);
	sha_update(&s, data, n);
	sha_final_hex(&s, hex);
}

/* ---- the key ---- */

/* One field of the record: its length as 8 bytes little-endian, then its bytes. */
static void
sha_field(Sha256 *s, const void *data, size_t n)
{
	unsigned char len[8];
	int i;

	for (i = 0; i < 8; i++)
		len[i] = (unsigned char)((uint64_t)n >> (8 * i));
	sha_update(s, len, sizeof len);
	sha_update(s, data, n);
}

static void
sha_str(Sha256 *s, const char *str)
{
	sha_field(s, str, strlen(str));
}

static void
sha_int(Sha256 *s, long long v)
{
	char num[32];

	snprintf(num, sizeof num, "%lld", v);
	sha_str(s, num);
}

const char *
rt_cache_key(Comp *c, const char *name, const char *src, const RtHeader *hdr, int nhdr,
             const char *const *opts, int nopts, int nvrtc_version)
{
	char hex[65];
	Sha256 s;
	int i;

	sha_init(&s);
	sha_str(&s, CACHE_FORMAT);
	sha_str(&s, WSF_VERSION_STRING);
	sha_str(&s, name);
	sha_str(&s, src);
	/* counts keep headers and options from trading places */
	sha_int(&s, nhdr);
	for (i = 0; i < nhdr; i++) {
		sha_str(&s, hdr[i].name);
		sha_str(&s, hdr[i].text);
	}
	sha_int(&s, nopts);
	for (i = 0; i < nopts; i++)
		sha_str(&s, opts[i]);
	sha_int(&s, nvrtc_version);
	sha_final_hex(&s, hex);
	return arena_strdup(c->arena, hex);
}

/* ---- the directory ---- */

static const char *
env_nonempty(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

const char *
rt_cache_dir(Comp *c, const RtOptions *o)
{
	int mode = o ? o->cache : 0;
	const char *v;

	if (mode == 1)
		return NULL;
	if (mode != 2 && (v = getenv("WSFUSE_CACHE")) && strcmp(v, "0") == 0)
		return NULL;
	if (o && o->cache_dir && *o->cache_dir)
		return arena_strdup(c->arena, o->cache_dir);
	if ((v = env_nonempty("WSFUSE_CACHE_DIR")))
		return arena_strdup(c->arena, v);
	if ((v = env_nonempty("XDG_CACHE_HOME")))
		return arena_printf(c->arena, "%s/wsfuse", v);
	if ((v = env_nonempty("HOME")))
		return arena_printf(c->arena, "%s/.cache/wsfuse", v);
	return NULL;
}

static const char *
entry_path(Comp *c, const char *dir, const char *key, const char *file)
{
	return arena_printf(c->arena, "%s/v1/%.2s/%s/%s", dir, key, key, file);
}

/* The whole of regular file PATH in C's arena, NUL-terminated; NULL if unreadable (rt_read_file). */
static char *
read_all(Comp *c, const char *path, size_t *len)
{
	char *p;

	return rt_read_file(c, path, CACHE_FILE_MAX, &p, len) == 0 ? p : NULL;
}

/* ---- entries ---- */

/* The meta file an entry for KEY holding B must have, byte for byte. */
static const char *
meta_text(Comp *c, const char *key, const Cubin *b)
{
	char ptx[65], cubin[65], log[65];

	rt_sha256_hex(b->ptx, b->ptx_len, ptx);
	rt_sha256_hex(b->cubin, b->cubin_len, cubin);
	rt_sha256_hex(b->log, strlen(b->log), log);
	return arena_printf(c->arena,
	                    CACHE_FORMAT "\nkey %s\nptx %zu %s\ncubin %zu %s\nlog %zu %s\n",
	                    key, b->ptx_len, ptx, b->cubin_len, cubin, strlen(b->log), log);
}

int
rt_cache_load(Comp *c, const char *dir, const char *key, Cubin *out)
{
	Cubin b = {0};
	const char *meta;
	size_t meta_len, log_len;
	char *ptx, *cubin, *log;

	meta = read_all(c, entry_path(c, dir, key, "meta"), &meta_len);
	if (!meta)
		return 0;
	ptx = read_all(c, entry_path(c, dir, key, "kernel.ptx"), &b.ptx_len);
	cubin = read_all(c, entry_path(c, dir, key, "kernel.cubin"), &b.cubin_len);
	log = read_all(c, entry_path(c, dir, key, "compile.log"), &log_len);
	if (!ptx || !cubin || !log || strlen(log) != log_len)
		return 0;
	b.ptx = ptx;
	b.cubin = cubin;
	b.log = log;
	if (meta_len != strlen(meta) || strcmp(meta, meta_text(c, key, &b)) != 0)
		return 0;
	b.cache_hit = true;
	*out = b;
	return 1;
}

void
rt_cache_store(Comp *c, const char *dir, const char *key, const char *src, const Cubin *in)
{
	Cubin b = *in;
	const char *meta, *path;
	Pos none = {0};
	int i;

	if (!b.log)
		b.log = "";
	meta = meta_text(c, key, &b);
	{
		const struct {
			const char *file;
			const void *data;
			size_t n;
		} part[] = {
			{"kernel.cu", src, strlen(src)},
			{"kernel.ptx", b.ptx, b.ptx_len},
			{"kernel.cubin", b.cubin, b.cubin_len},
			{"compile.log", b.log, strlen(b.log)},
			/* meta last: it marks the entry complete */
			{"meta", meta, strlen(meta)},
		};

		for (i = 0; i < countof(part); i++) {
			path = entry_path(c, dir, key, part[i].file);
			if (rt_write_file(path, part[i].data, part[i].n, RT_WRITE_MKDIRS) < 0) {
				diag_warn(c, none,
				          "cannot write the kernel cache entry '%s': %s; continuing without caching "
				          "(set WSFUSE_CACHE_DIR to a writable directory, or WSFUSE_CACHE=0)",
				          path, strerror(errno));
				return;
			}
		}
	}
}
