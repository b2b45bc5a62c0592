/*
 * test_cache.c: runtime/cache.c: SHA-256, the key, the directory rules, and
 * entries that must load only when whole.
 *
 * SHA-256 is checked on FIPS 180-4's examples and on lengths around the
 * padding boundary.  Each damaged-entry test stores a good entry, breaks one
 * thing (truncates the cubin, flips a byte, deletes or garbles meta) and
 * expects a miss with no error; a FIFO in place of a file is a miss too, at
 * once (alarm() fails the test if opening it waits for a writer).  Every test
 * works in its own mkdtemp folder.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../runtime/runtime.h"

#include "comp_init.h"

static int nwarnings;

static void
count_warnings(void *user, WsfSeverity sev, const char *msg)
{
	if (sev == WSF_SEV_WARNING)
		nwarnings++;
}

static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

/* A fresh temp folder per test, removed with everything in it afterwards. */
static int
make_tmp(void **state)
{
	char *dir = strdup("/tmp/wsfuse-test-cache-XXXXXX");

	if (!dir || !mkdtemp(dir))
		return -1;
	*state = dir;
	return 0;
}

static int
remove_tmp(void **state)
{
	nftw(*state, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(*state);
	return 0;
}

static void
assert_sha(const char *data, size_t n, const char *want)
{
	char hex[65];

	rt_sha256_hex(data, n, hex);
	assert_string_equal(hex, want);
}

static void
test_sha256_known_answers(void **state)
{
	static const struct {
		size_t n;
		const char *hex;
	} as[] = {
		/* around the 55/56/64-byte padding boundaries */
		{55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
		{56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
		{63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
		{64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
		{65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"},
		{119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
		{120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"},
		{1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
	};
	char *a = malloc(1000000);
	int i;

	assert_sha("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	assert_sha("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	assert_sha("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56,
	           "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	assert_non_null(a);
	memset(a, 'a', 1000000);
	for (i = 0; i < countof(as); i++)
		assert_sha(a, as[i].n, as[i].hex);
	free(a);
}

static void
test_key(void **state)
{
	static const char *const opts[] = {"-a", "-b"}, *const opts2[] = {"-b", "-a"};
	RtHeader h[2] = {{"x.h", "int x;"}, {"y.h", "int y;"}};
	RtHeader split1[2] = {{"ab", "c"}, {"d", "e"}}, split2[2] = {{"a", "bc"}, {"d", "e"}};
	const char *k, *base;
	Comp c;

	COMP_INIT(c);
	base = rt_cache_key(&c, "k", "src", h, 2, opts, 2, 13000);
	assert_int_equal(strlen(base), 64);
	assert_string_equal(base, rt_cache_key(&c, "k", "src", h, 2, opts, 2, 13000));
	/* every field moves the key */
	assert_string_not_equal(base, rt_cache_key(&c, "k2", "src", h, 2, opts, 2, 13000));
	assert_string_not_equal(base, rt_cache_key(&c, "k", "src ", h, 2, opts, 2, 13000));
	assert_string_not_equal(base, rt_cache_key(&c, "k", "src", h, 1, opts, 2, 13000));
	assert_string_not_equal(base, rt_cache_key(&c, "k", "src", h, 2, opts2, 2, 13000));
	assert_string_not_equal(base, rt_cache_key(&c, "k", "src", h, 2, opts, 1, 13000));
	assert_string_not_equal(base, rt_cache_key(&c, "k", "src", h, 2, opts, 2, 12080));
	h[1].text = "int y; ";
	assert_string_not_equal(base, rt_cache_key(&c, "k", "src", h, 2, opts, 2, 13000));
	/* length prefixes keep field boundaries apart */
	k = rt_cache_key(&c, "k", "src", split1, 2, opts, 2, 13000);
	assert_string_not_equal(k, rt_cache_key(&c, "k", "src", split2, 2, opts, 2, 13000));
	/* a header is not an option */
	k = rt_cache_key(&c, "k", "s", NULL, 0, (const char *const[]){"a", "b"}, 2, 1);
	assert_string_not_equal(k, rt_cache_key(&c, "k", "s", (RtHeader[]){{"a", "b"}}, 1, NULL, 0, 1));
	arena_free(c.arena);
}

static void
test_dir(void **state)
{
	RtOptions o = {0};
	char *home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
	Comp c;

	COMP_INIT(c);
	unsetenv("WSFUSE_CACHE");
	unsetenv("WSFUSE_CACHE_DIR");
	setenv("XDG_CACHE_HOME", "/xdg", 1);
	setenv("HOME", "/h/u", 1);
	assert_string_equal(rt_cache_dir(&c, NULL), "/xdg/wsfuse");
	unsetenv("XDG_CACHE_HOME");
	assert_string_equal(rt_cache_dir(&c, &o), "/h/u/.cache/wsfuse");
	setenv("WSFUSE_CACHE_DIR", "/env/cache", 1);
	assert_string_equal(rt_cache_dir(&c, &o), "/env/cache");
	o.cache_dir = "/opt/cache";
	assert_string_equal(rt_cache_dir(&c, &o), "/opt/cache");
	o.cache = 1;
	assert_null(rt_cache_dir(&c, &o));
	o.cache = 0;
	setenv("WSFUSE_CACHE", "0", 1);
	assert_null(rt_cache_dir(&c, &o));
	o.cache = 2; /* forced on beats the environment */
	assert_string_equal(rt_cache_dir(&c, &o), "/opt/cache");
	setenv("WSFUSE_CACHE", "1", 1);
	o.cache = 0;
	assert_string_equal(rt_cache_dir(&c, &o), "/opt/cache");
	unsetenv("WSFUSE_CACHE");
	unsetenv("WSFUSE_CACHE_DIR");
	unsetenv("HOME");
	assert_null(rt_cache_dir(&c, NULL));
	if (home)
		setenv("HOME", home, 1);
	free(home);
	arena_free(c.arena);
}

static const unsigned char cubin_bytes[] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 42};

static Cubin
sample(void)
{
	Cubin b = {0};

	b.ptx = "//\n.version 9.0\n.target sm_90a\n";
	b.ptx_len = strlen(b.ptx);
	b.cubin = cubin_bytes;
	b.cubin_len = sizeof cubin_bytes;
	b.log = "ptxas info    : Used 8 registers";
	return b;
}

static const char *const key =
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

static const char *
file_of(Comp *c, const char *dir, const char *name)
{
	return arena_printf(c->arena, "%s/v1/01/%s/%s", dir, key, name);
}

static void
test_store_load(void **state)
{
	const char *dir = *state;
	Cubin in = sample(), out;
	struct stat st;
	Comp c;

	COMP_INIT(c);
	assert_int_equal(rt_cache_load(&c, dir, key, &out), 0);
	rt_cache_store(&c, dir, key, "__global__ void k() {}", &in);
	assert_int_equal(c.nerrors, 0);
	assert_int_equal(stat(file_of(&c, dir, "kernel.cu"), &st), 0);
	memset(&out, 0, sizeof out);
	assert_int_equal(rt_cache_load(&c, dir, key, &out), 1);
	assert_true(out.cache_hit);
	assert_int_equal(out.ptx_len, in.ptx_len);
	assert_string_equal(out.ptx, in.ptx);
	assert_int_equal(out.cubin_len, in.cubin_len);
	assert_memory_equal(out.cubin, in.cubin, in.cubin_len);
	assert_string_equal(out.log, in.log);
	/* another key is a different entry */
	assert_int_equal(rt_cache_load(&c, dir, "ff" "23456789abcdef0123456789abcdef"
	                                             "0123456789abcdef0123456789abcdef", &out), 0);
	/* storing again replaces the entry in place */
	rt_cache_store(&c, dir, key, "__global__ void k() {}", &in);
	assert_int_equal(rt_cache_load(&c, dir, key, &out), 1);
	assert_int_equal(c.nerrors, 0);
	arena_free(c.arena);
}

/* Stores a good entry, lets DAMAGE break it, and expects a silent miss. */
static void
expect_miss_after(const char *dir, void (*damage)(Comp *c, const char *dir))
{
	Cubin in = sample(), out = {0};
	Comp c;

	COMP_INIT(c);
	rt_cache_store(&c, dir, key, "src", &in);
	assert_int_equal(rt_cache_load(&c, dir, key, &out), 1);
	damage(&c, dir);
	assert_int_equal(rt_cache_load(&c, dir, key, &out), 0);
	assert_int_equal(c.nerrors, 0);
	arena_free(c.arena);
}

static void
truncate_cubin(Comp *c, const char *dir)
{
	assert_int_equal(truncate(file_of(c, dir, "kernel.cubin"), 5), 0);
}

static void
flip_ptx_byte(Comp *c, const char *dir)
{
	FILE *f = fopen(file_of(c, dir, "kernel.ptx"), "r+b");
	int ch;

	assert_non_null(f);
	fseek(f, 7, SEEK_SET);
	ch = fgetc(f);
	fseek(f, 7, SEEK_SET);
	fputc(ch ^ 1, f);
	fclose(f);
}

static void
flip_cubin_byte(Comp *c, const char *dir)
{
	unsigned char other[sizeof cubin_bytes];

	memcpy(other, cubin_bytes, sizeof other);
	other[sizeof other - 1] ^= 0x80;
	assert_int_equal(rt_write_file(file_of(c, dir, "kernel.cubin"), other, sizeof other, RT_WRITE_NONE), 0);
}

static void
remove_meta(Comp *c, const char *dir)
{
	assert_int_equal(unlink(file_of(c, dir, "meta")), 0);
}

static void
garble_meta(Comp *c, const char *dir)
{
	const char *junk = "wsfuse-cache-v1\nkey nonsense\n\x01\x02";

	assert_int_equal(rt_write_file(file_of(c, dir, "meta"), junk, strlen(junk), RT_WRITE_MKDIRS), 0);
}

static void
empty_meta(Comp *c, const char *dir)
{
	assert_int_equal(rt_write_file(file_of(c, dir, "meta"), "", 0, RT_WRITE_MKDIRS), 0);
}

static void
remove_log(Comp *c, const char *dir)
{
	assert_int_equal(unlink(file_of(c, dir, "compile.log")), 0);
}

static void
cubin_is_a_dir(Comp *c, const char *dir)
{
	assert_int_equal(unlink(file_of(c, dir, "kernel.cubin")), 0);
	assert_int_equal(mkdir(file_of(c, dir, "kernel.cubin"), 0700), 0);
}

/* A FIFO in place of a file: opening it must not wait for a writer that never comes. */
static void
fifo_for(Comp *c, const char *dir, const char *file)
{
	alarm(20); /* a hang fails the test */
	assert_int_equal(unlink(file_of(c, dir, file)), 0);
	assert_int_equal(mkfifo(file_of(c, dir, file), 0600), 0);
}

static void
meta_is_a_fifo(Comp *c, const char *dir)
{
	fifo_for(c, dir, "meta");
}

static void
cubin_is_a_fifo(Comp *c, const char *dir)
{
	fifo_for(c, dir, "kernel.cubin");
}

static void test_truncated_cubin(void **state) { expect_miss_after(*state, truncate_cubin); }
static void test_flipped_ptx_byte(void **state) { expect_miss_after(*state, flip_ptx_byte); }
static void test_flipped_cubin_byte(void **state) { expect_miss_after(*state, flip_cubin_byte); }
static void test_missing_meta(void **state) { expect_miss_after(*state, remove_meta); }
static void test_garbage_meta(void **state) { expect_miss_after(*state, garble_meta); }
static void test_empty_meta(void **state) { expect_miss_after(*state, empty_meta); }
static void test_missing_log(void **state) { expect_miss_after(*state, remove_log); }
static void test_cubin_is_a_dir(void **state) { expect_miss_after(*state, cubin_is_a_dir); }

static void
test_fifo_entry(void **state)
{
	const char *dir = *state;
	Cubin in = sample(), out;
	Comp c;

	expect_miss_after(dir, meta_is_a_fifo);
	expect_miss_after(dir, cubin_is_a_fifo);
	/* storing again replaces the FIFOs (without opening them) and the entry loads */
	COMP_INIT(c);
	rt_cache_store(&c, dir, key, "src", &in);
	assert_int_equal(c.nerrors, 0);
	assert_int_equal(rt_cache_load(&c, dir, key, &out), 1);
	alarm(0);
	arena_free(c.arena);
}

static void
test_unwritable_dir(void **state)
{
	const char *dir = *state, *blocked;
	Cubin in = sample(), out;
	Comp c;

	COMP_INIT(c);
	c.diag = count_warnings;
	nwarnings = 0;
	/* a regular file where a directory must go: fails even for root */
	blocked = arena_printf(c.arena, "%s/file", dir);
	assert_int_equal(rt_write_file(blocked, "x", 1, RT_WRITE_MKDIRS), 0);
	rt_cache_store(&c, arena_printf(c.arena, "%s/cache", blocked), key, "src", &in);
	assert_int_equal(nwarnings, 1);
	assert_int_equal(c.nerrors, 0);
	assert_int_equal(rt_cache_load(&c, arena_printf(c.arena, "%s/cache", blocked), key, &out), 0);
	assert_int_equal(c.nerrors, 0);
	arena_free(c.arena);
}

static int
count_entries(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	if (strstr(path, ".tmp."))
		fail_msg("temp file left behind: %s", path);
	return 0;
}

static void
test_write_file(void **state)
{
	const char *dir = *state;
	char path[256], buf[16] = {0};
	FILE *f;

	snprintf(path, sizeof path, "%s/a/b/c/file.txt", dir);
	assert_int_equal(rt_write_file(path, "first", 5, RT_WRITE_MKDIRS), 0);
	assert_int_equal(rt_write_file(path, "second", 6, RT_WRITE_MKDIRS), 0);
	f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fread(buf, 1, sizeof buf - 1, f), 6);
	fclose(f);
	assert_string_equal(buf, "second");
	nftw(dir, count_entries, 16, FTW_PHYS);
	/* a path whose parent cannot exist fails with errno set */
	snprintf(path, sizeof path, "%s/a/b/c/file.txt/below", dir);
	assert_int_equal(rt_write_file(path, "x", 1, RT_WRITE_MKDIRS), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sha256_known_answers),
		cmocka_unit_test(test_key),
		cmocka_unit_test(test_dir),
		cmocka_unit_test_setup_teardown(test_store_load, make_tmp, remove_tmp),
		cmocka_unit_test_setup_teardown(test_truncated_cubin, make_tmp, remove_tmp),
		cmocka_unit_test_setup_teardown(test_flipped_ptx_byte, make_tmp, remove_tmp),
		cmocka_unit_test_setup_teardown(test_flipped_cubin_byte, make_tmp, remove_tmp),
		cmocka_unit_test_setup_teardown(test_missing_meta, make_tmp, remove_tmp),
		cmocka_unit_test_setup_teardown(test_garbage_meta, make_tmp, remove_tmp),
		cmocka_unit_test_setup_teardown(test_empty_meta, make_tmp, remove_tmp),
		cmocka_unit_test_setup_teardown(test_missing_log, make_tmp, remove_tmp),
		cmocka_unit_test_setup_teardown(test_cubin_is_a_dir, make_tmp, remove_tmp),
		cmocka_unit_test_setup_teardown(test_fifo_entry, make_tmp, remove_tmp),
		cmocka_unit_test_setup_teardown(test_unwritable_dir, make_tmp, remove_tmp),
		cmocka_unit_test_setup_teardown(test_write_file, make_tmp, remove_tmp),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
