/*
 * files.c: writing a file whole or not at all (rt_write_file), and reading
 * one that may have been planted (rt_read_file).  Every file wsfuse writes
 * goes through the first: -o outputs, cache entries, dumps.  Every file it
 * finds rather than is handed goes through the second: cache entries, tune
 * records, override sources.  A spec the user names is read as the shell
 * gives it, a FIFO or /dev/stdin included.
 *
 * A found file must be a regular file: it is opened with O_NONBLOCK, so a
 * FIFO planted at its path does not wait for a writer, and refused by fstat
 * before anything is read; a device or socket is refused the same way.
 *
 * A regular file is replaced, never rewritten in place.  The bytes go to a
 * temp file next to it, PATH.tmp.PID.XXXXXX, created with O_CREAT|O_EXCL
 * (a symbolic link planted at that name makes the open fail; it is never
 * followed), and the temp file is renamed over PATH once it is complete.  So
 * a reader sees the old file or the new one, and a failed write leaves the
 * old one.  The temp file takes the mode of the file it replaces, or 0666
 * less the umask, as fopen would give.
 *
 * A path the user names (RT_WRITE_THROUGH) means what the shell makes of it:
 * a symbolic link is followed, and the file it names is replaced while the
 * link stays; a device, FIFO or socket is opened and written in place, since
 * replacing /dev/null or a pipe with a file is never what `-o` means.  A FIFO
 * whose reader left is an error (EPIPE), not a SIGPIPE that ends the
 * embedding process.  Without the flag (the cache, dumps) whatever is at the
 * path is replaced: a FIFO planted in the cache must not block a compile.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime.h"

/* Temp names tried before giving up: each collision is a file someone else made. */
#define TEMP_TRIES 64
/* Symbolic links followed before ELOOP, as Linux does. */
#define MAX_LINKS 40

/* Makes every missing directory above the last '/' of PATH. */
static int
make_parents(const char *path)
{
	char *p = strdup(path), *q;
	int rc = 0;

	if (!p)
		return -1;
	for (q = strchr(p + 1, '/'); q; q = strchr(q + 1, '/')) {
		*q = 0;
		if (mkdir(p, 0777) < 0 && errno != EEXIST) {
			rc = -1;
			break;
		}
		*q = '/';
	}
	free(p);
	return rc;
}

static int
write_all(int fd, const void *data, size_t n)
{
	const char *p = data;

	while (n > 0) {
		ssize_t k = write(fd, p, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			if (k == 0)
				errno = EIO;
			return -1;
		}
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Writes into FD, a device, FIFO or socket, and closes it; SIGPIPE becomes EPIPE. */
static int
write_in_place(int fd, const void *data, size_t n)
{
	struct timespec now = {0, 0};
	sigset_t pipe_only, old, pending;
	int rc, err, was_pending;

	sigemptyset(&pipe_only);
	sigaddset(&pipe_only, SIGPIPE);
	sigpending(&pending);
	was_pending = sigismember(&pending, SIGPIPE);
	/* the mask is per thread: other threads keep theirs */
	pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
	rc = write_all(fd, data, n);
	err = errno;
	/* the SIGPIPE this write raised is taken off the thread, so unblocking does not deliver it */
	if (rc < 0 && err == EPIPE && !was_pending)
		sigtimedwait(&pipe_only, NULL, &now);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (close(fd) < 0 && rc == 0) {
		rc = -1;
		err = errno;
	}
	errno = err;
	return rc;
}

/* The target of symbolic link P, prefixed with P's folder when relative (malloc'ed). */
static char *
read_link(const char *p)
{
	const char *slash = strrchr(p, '/');
	size_t cap = 256, dirlen;
	char *buf = NULL, *t, *out;
	ssize_t k;

	for (;;) {
		if (!(t = realloc(buf, cap))) {
			free(buf);
			return NULL;
		}
		buf = t;
		if ((k = readlink(p, buf, cap)) < 0) {
			free(buf);
			return NULL;
		}
		if ((size_t)k < cap)
			break;
		cap *= 2;
	}
	buf[k] = 0;
	if (buf[0] == '/' || !slash)
		return buf;
	dirlen = (size_t)(slash - p) + 1;
	if ((out = malloc(dirlen + (size_t)k + 1))) {
		memcpy(out, p, dirlen);
		memcpy(out + dirlen, buf, (size_t)k + 1);
	}
	free(buf);
	return out;
}

/*
 * The file a write to PATH lands in (malloc'ed): PATH when it is not a
 * symbolic link, else the file at the end of the chain, which a dangling
 * link names but which does not exist yet.
 */
static char *
link_target(const char *path)
{
	char *p = strdup(path), *next;
	struct stat st;
	int hops;

	for (hops = 0; p; hops++) {
		if (lstat(p, &st) < 0 || !S_ISLNK(st.st_mode))
			return p;
		if (stat(p, &st) == 0) {
			/* the chain ends in a file: the kernel knows where */
			next = realpath(p, NULL);
			free(p);
			return next;
		}
		if (hops == MAX_LINKS) {
			free(p);
			errno = ELOOP;
			return NULL;
		}
		next = read_link(p);
		free(p);
		p = next;
	}
	return NULL;
}

static uint64_t
mix64(uint64_t x)
{
	/* splitmix64's finaliser */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9u;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebu;
	return x ^ x >> 31;
}

/*
 * Creates a new PATH.tmp.PID.XXXXXX for writing: the fd and *TMP (malloc'ed),
 * or -1.  A file name too long to take the suffix within NAME_MAX (255)
 * gets DIR/wsfuse.tmp.PID.XXXXXX instead.
 */
static int
open_temp(const char *path, char **tmp)
{
	static const char digit[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
	int dirlen = (int)(base - path);
	size_t len = strlen(path) + 48;
	struct timespec ts;
	uint64_t seed;
	int i, k, fd = -1, err;

	if (strlen(base) > 200)
		base = "wsfuse";

	if (!(*tmp = malloc(len)))
		return -1;
	/* unpredictable enough to avoid collisions; O_EXCL, not the name, is what keeps it safe */
	clock_gettime(CLOCK_REALTIME, &ts);
	seed = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^ (uint64_t)(uintptr_t)tmp ^
	       (uint64_t)getpid() << 40;
	for (i = 0; i < TEMP_TRIES; i++) {
		uint64_t r = mix64(seed + (uint64_t)i * 0x9e3779b97f4a7c15u);
		char suffix[7];

		for (k = 0; k < 6; k++, r /= 62)
			suffix[k] = digit[r % 62];
		suffix[6] = 0;
		snprintf(*tmp, len, "%.*s%s.tmp.%ld.%s", dirlen, path, base, (long)getpid(), suffix);
		fd = open(*tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
		if (fd >= 0 || errno != EEXIST)
			break;
	}
	if (fd < 0) {
		err = errno;
		free(*tmp);
		*tmp = NULL;
		errno = err;
	}
	return fd;
}

int
rt_read_file(Comp *c, const char *path, size_t max, char **text, size_t *len)
{
	struct stat st;
	size_t got = 0;
	char *p;
	int fd, err;

	*text = NULL;
	*len = 0;
	if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)) < 0)
		return -1;
	if (fstat(fd, &st) < 0) {
		err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	if (!S_ISREG(st.st_mode) || (uintmax_t)st.st_size > max) {
		close(fd);
		errno = EISDIR;
		return S_ISDIR(st.st_mode) ? -1 : S_ISREG(st.st_mode) ? RT_READ_TOO_LONG : RT_READ_IRREGULAR;
	}
	p = arena_alloc(c->arena, (size_t)st.st_size + 1);
	/* a file that shrinks meanwhile is read to its end; one that grows, to its size at fstat */
	while (got < (size_t)st.st_size) {
		ssize_t k = read(fd, p + got, (size_t)st.st_size - got);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			err = errno;
			close(fd);
			errno = err;
			return -1;
		}
		if (k == 0)
			break;
		got += (size_t)k;
	}
	close(fd);
	p[got] = 0;
	*text = p;
	*len = got;
	return 0;
}

int
rt_write_file(const char *path, const void *data, size_t n, unsigned flags)
{
	char *target = NULL, *tmp = NULL;
	struct stat st;
	int fd, rc = -1, err;

	if (flags & RT_WRITE_THROUGH) {
		if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
			/* a directory fails here, with EISDIR */
			if ((fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC)) < 0)
				return -1;
			if (fstat(fd, &st) == 0 && !S_ISREG(st.st_mode))
				return write_in_place(fd, data, n);
			/* a regular file took its place meanwhile: replace that */
			close(fd);
		}
		if (!(target = link_target(path)))
			return -1;
		path = target;
	}
	if ((flags & RT_WRITE_MKDIRS) && make_parents(path) < 0)
		goto done;
	if ((fd = open_temp(path, &tmp)) < 0)
		goto done;
	/* a replaced file keeps its permissions (not set-id bits: the new file is ours) */
	if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
		fchmod(fd, st.st_mode & 0777);
	if (write_all(fd, data, n) < 0) {
		err = errno;
		close(fd);
		goto remove_tmp;
	}
	if (close(fd) < 0 || rename(tmp, path) < 0) {
		err = errno;
		goto remove_tmp;
	}
	rc = 0;
	goto done;

remove_tmp:
	unlink(tmp);
	errno = err;
done:
	err = errno;
	free(tmp);
	free(target);
	errno = err;
	return rc;
}
