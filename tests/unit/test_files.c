/*
 * test_files.c: runtime/files.c, rt_write_file: what lands where for every
 * kind of thing a path can name (a new or existing file, a symbolic link, a
 * dangling link, a loop of links, a FIFO, a device, a directory), that a
 * replaced file keeps its mode, and that no temp file is left behind; and
 * rt_read_file, which reads a regular file whole and refuses the rest
 * without waiting (a FIFO with no writer, a device, a directory).
 *
 * The FIFO tests fork a reader; alarm() turns a hang into a failure.  The
 * suite runs as root on CI, so nothing here writes to a device but through
 * RT_WRITE_THROUGH, which never replaces one.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../runtime/runtime.h"

#include "comp_init.h"

/* Seconds a test may take before SIGALRM fails it: a FIFO opened the wrong way blocks forever. */
#define HANG_LIMIT 20

static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static int
make_tmp(void **state)
{
	char *dir = strdup("/tmp/wsfuse-test-files-XXXXXX");

	if (!dir || !mkdtemp(dir))
		return -1;
	*state = dir;
	alarm(HANG_LIMIT);
	return 0;
}

static int
remove_tmp(void **state)
{
	alarm(0);
	nftw(*state, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(*state);
	return 0;
}

static char *
at(const char *dir, const char *name)
{
	static char path[4][512];
	static int next;
	char *p = path[next++ % 4];

	snprintf(p, sizeof path[0], "%s/%s", dir, name);
	return p;
}

static void
assert_file(const char *path, const char *want)
{
	char buf[256] = {0};
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f)
		fail_msg("cannot open %s: %s", path, strerror(errno));
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	assert_int_equal(n, strlen(want));
	assert_string_equal(buf, want);
}

static int
no_temp(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	if (strstr(path, ".tmp."))
		fail_msg("temp file left behind: %s", path);
	return 0;
}

static mode_t
mode_of(const char *path)
{
	struct stat st;

	assert_int_equal(lstat(path, &st), 0);
	return st.st_mode;
}

static void
test_new_and_replaced(void **state)
{
	const char *dir = *state, *f = at(dir, "out");
	mode_t old = umask(022);

	assert_int_equal(rt_write_file(f, "one", 3, RT_WRITE_NONE), 0);
	assert_file(f, "one");
	/* a new file gets what fopen would give it */
	assert_int_equal(mode_of(f) & 07777, 0644);
	/* a replaced file keeps its mode, less set-id bits */
	assert_int_equal(chmod(f, 0600), 0);
	assert_int_equal(rt_write_file(f, "two", 3, RT_WRITE_THROUGH), 0);
	assert_file(f, "two");
	assert_int_equal(mode_of(f) & 07777, 0600);
	assert_int_equal(chmod(f, 04750), 0);
	assert_int_equal(rt_write_file(f, "three", 5, RT_WRITE_NONE), 0);
	assert_int_equal(mode_of(f) & 07777, 0750);
	umask(old);
	/* a name of 255 bytes, too long for NAME_MAX with the temp suffix */
	{
		char name[256];

		memset(name, 'n', 255);
		name[255] = 0;
		assert_int_equal(rt_write_file(at(dir, name), "long", 4, RT_WRITE_THROUGH), 0);
		assert_file(at(dir, name), "long");
	}
	nftw(dir, no_temp, 16, FTW_PHYS);
}

static void
test_failures_leave_nothing(void **state)
{
	const char *dir = *state;

	assert_int_equal(rt_write_file(at(dir, "file"), "x", 1, RT_WRITE_NONE), 0);
	/* a parent that is a file: fails for root too */
	errno = 0;
	assert_int_equal(rt_write_file(at(dir, "file/below"), "x", 1, RT_WRITE_NONE), -1);
	assert_int_equal(errno, ENOTDIR);
	assert_int_equal(rt_write_file(at(dir, "file/below"), "x", 1, RT_WRITE_MKDIRS), -1);
	assert_int_equal(rt_write_file(at(dir, "missing/below"), "x", 1, RT_WRITE_THROUGH), -1);
	assert_int_equal(errno, ENOENT);
	/* a directory is not replaced, nor written */
	assert_int_equal(mkdir(at(dir, "d"), 0700), 0);
	assert_int_equal(rt_write_file(at(dir, "d"), "x", 1, RT_WRITE_THROUGH), -1);
	assert_int_equal(errno, EISDIR);
	assert_int_equal(rt_write_file(at(dir, "d"), "x", 1, RT_WRITE_NONE), -1);
	assert_true(S_ISDIR(mode_of(at(dir, "d"))));
	nftw(dir, no_temp, 16, FTW_PHYS);
}

static void
test_symlinks(void **state)
{
	const char *dir = *state;
	char *target = strdup(at(dir, "target")), *link = strdup(at(dir, "link"));

	/* a relative link: its target is replaced, the link stays */
	assert_int_equal(rt_write_file(target, "old", 3, RT_WRITE_NONE), 0);
	assert_int_equal(symlink("target", link), 0);
	assert_int_equal(rt_write_file(link, "new", 3, RT_WRITE_THROUGH), 0);
	assert_true(S_ISLNK(mode_of(link)));
	assert_file(target, "new");
	/* a chain of two, the second absolute */
	assert_int_equal(symlink(link, at(dir, "link2")), 0);
	assert_int_equal(rt_write_file(at(dir, "link2"), "chain", 5, RT_WRITE_THROUGH), 0);
	assert_true(S_ISLNK(mode_of(at(dir, "link2"))));
	assert_true(S_ISLNK(mode_of(link)));
	assert_file(target, "chain");
	/* a dangling link: the file it names is created */
	assert_int_equal(mkdir(at(dir, "sub"), 0700), 0);
	assert_int_equal(symlink("../made", at(dir, "sub/dangling")), 0);
	assert_int_equal(rt_write_file(at(dir, "sub/dangling"), "made", 4, RT_WRITE_THROUGH), 0);
	assert_true(S_ISLNK(mode_of(at(dir, "sub/dangling"))));
	assert_file(at(dir, "made"), "made");
	/* a loop fails */
	assert_int_equal(symlink("loop2", at(dir, "loop1")), 0);
	assert_int_equal(symlink("loop1", at(dir, "loop2")), 0);
	assert_int_equal(rt_write_file(at(dir, "loop1"), "x", 1, RT_WRITE_THROUGH), -1);
	assert_int_equal(errno, ELOOP);
	/* without RT_WRITE_THROUGH (the cache) the link itself is replaced */
	assert_int_equal(rt_write_file(link, "mine", 4, RT_WRITE_NONE), 0);
	assert_true(S_ISREG(mode_of(link)));
	assert_file(target, "chain");
	nftw(dir, no_temp, 16, FTW_PHYS);
	free(target);
	free(link);
}

/* Forks a reader of FIFO that copies what it reads into COPY (or, if COPY is NULL, leaves at once). */
static pid_t
fifo_reader(const char *fifo, const char *copy)
{
	pid_t pid = fork();
	char buf[4096];
	ssize_t k;
	int in, out;

	assert_true(pid >= 0);
	if (pid > 0)
		return pid;
	if ((in = open(fifo, O_RDONLY)) < 0)
		_exit(1);
	if (!copy)
		_exit(0);
	if ((out = open(copy, O_WRONLY | O_CREAT | O_TRUNC, 0600)) < 0)
		_exit(1);
	while ((k = read(in, buf, sizeof buf)) > 0)
		if (write(out, buf, (size_t)k) != k)
			_exit(1);
	_exit(k < 0 || close(out) < 0);
}

static void
reap(pid_t pid)
{
	int status;

	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void
test_fifo(void **state)
{
	const char *dir = *state, *fifo = at(dir, "fifo");
	size_t big = 1 << 20;
	char *lots = calloc(1, big);
	sigset_t pending;
	pid_t pid;

	assert_non_null(lots);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	/* written through, and still a FIFO */
	pid = fifo_reader(fifo, at(dir, "copy"));
	assert_int_equal(rt_write_file(fifo, "piped", 5, RT_WRITE_THROUGH), 0);
	reap(pid);
	assert_true(S_ISFIFO(mode_of(fifo)));
	assert_file(at(dir, "copy"), "piped");
	/* a reader that leaves: EPIPE, and no SIGPIPE kills or waits for this process */
	pid = fifo_reader(fifo, NULL);
	errno = 0;
	assert_int_equal(rt_write_file(fifo, lots, big, RT_WRITE_THROUGH), -1);
	assert_int_equal(errno, EPIPE);
	reap(pid);
	sigpending(&pending);
	assert_false(sigismember(&pending, SIGPIPE));
	/* the cache's way: replaced by a file, without waiting for a reader */
	assert_int_equal(rt_write_file(fifo, "file", 4, RT_WRITE_NONE), 0);
	assert_true(S_ISREG(mode_of(fifo)));
	assert_file(fifo, "file");
	nftw(dir, no_temp, 16, FTW_PHYS);
	free(lots);
}

static void
test_device(void **state)
{
	struct stat st;

	assert_int_equal(rt_write_file("/dev/null", "gone", 4, RT_WRITE_THROUGH), 0);
	assert_int_equal(stat("/dev/null", &st), 0);
	assert_true(S_ISCHR(st.st_mode));
	if (stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode)) {
		errno = 0;
		assert_int_equal(rt_write_file("/dev/full", "x", 1, RT_WRITE_THROUGH), -1);
		assert_int_equal(errno, ENOSPC);
	}
}

/* rt_read_file: a regular file whole, NUL-terminated; anything else refused at once. */
static void
test_read(void **state)
{
	const char *dir = *state;
	char *text, *fifo = strdup(at(dir, "fifo"));
	size_t len;
	Comp c;
	int fd;

	COMP_INIT(c);
	assert_int_equal(rt_write_file(at(dir, "f"), "abc\0def", 7, RT_WRITE_NONE), 0);
	assert_int_equal(rt_read_file(&c, at(dir, "f"), 7, &text, &len), 0);
	assert_int_equal(len, 7);
	assert_memory_equal(text, "abc\0def", 8);
	assert_int_equal(rt_read_file(&c, at(dir, "f"), 6, &text, &len), RT_READ_TOO_LONG);
	assert_null(text);
	assert_int_equal(rt_write_file(at(dir, "empty"), "", 0, RT_WRITE_NONE), 0);
	assert_int_equal(rt_read_file(&c, at(dir, "empty"), 0, &text, &len), 0);
	assert_int_equal(len, 0);
	assert_string_equal(text, "");
	/* a link to a file is followed; one to nothing is ENOENT, as no file is */
	assert_int_equal(symlink("f", at(dir, "link")), 0);
	assert_int_equal(rt_read_file(&c, at(dir, "link"), 7, &text, &len), 0);
	assert_int_equal(len, 7);
	assert_int_equal(symlink("none", at(dir, "dangling")), 0);
	assert_int_equal(rt_read_file(&c, at(dir, "dangling"), 7, &text, &len), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(rt_read_file(&c, at(dir, "none"), 7, &text, &len), -1);
	assert_int_equal(errno, ENOENT);
	/* a FIFO with no writer, and one with a writer that never writes: refused, not waited on (alarm) */
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(rt_read_file(&c, fifo, 1 << 20, &text, &len), RT_READ_IRREGULAR);
	assert_null(text);
	fd = open(fifo, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(rt_read_file(&c, fifo, 1 << 20, &text, &len), RT_READ_IRREGULAR);
	close(fd);
	assert_int_equal(rt_read_file(&c, "/dev/zero", 1 << 20, &text, &len), RT_READ_IRREGULAR);
	assert_int_equal(rt_read_file(&c, dir, 1 << 20, &text, &len), -1);
	assert_int_equal(errno, EISDIR);
	free(fifo);
	arena_free(c.arena);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_new_and_replaced, make_tmp, remove_tmp),
		cmocka_unit_test_setup_teardown(test_failures_leave_nothing, make_tmp, remove_tmp),
		cmocka_unit_test_setup_teardown(test_symlinks, make_tmp, remove_tmp),
		cmocka_unit_test_setup_teardown(test_fifo, make_tmp, remove_tmp),
		cmocka_unit_test(test_device),
		cmocka_unit_test_setup_teardown(test_read, make_tmp, remove_tmp),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
