/*
 * replay.c: runs LLVMFuzzerTestOneInput on each file named, with no
 * libFuzzer.  `make test` builds it against libwsfuse.a twice: with
 * fuzz_spec.c (fed every file of tests/fuzz/regress/, past crashes, and
 * tests/fuzz/corpus/, seeds) and with fuzz_launch.c (tests/fuzz/launch/);
 * a crash, a sanitizer report or a broken promise ends it non-zero.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
replay(const char *path)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f) {
		perror(path);
		return -1;
	}
	for (;;) {
		if (len == cap) {
			unsigned char *nb = realloc(buf, cap = cap ? 2 * cap : 4096);

			if (!nb) {
				fprintf(stderr, "replay: %s: out of memory\n", path);
				free(buf);
				fclose(f);
				return -1;
			}
			buf = nb;
		}
		n = fread(buf + len, 1, cap - len, f);
		if (n == 0)
			break;
		len += n;
	}
	fclose(f);
	/* shrink to the exact size, so ASan sees a read past the end of the input */
	{
		unsigned char *exact = realloc(buf, len ? len : 1);

		if (exact)
			buf = exact;
	}
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	return 0;
}

int
main(int argc, char **argv)
{
	int i, bad = 0;

	if (argc < 2) {
		fputs("usage: replay FILE...\n", stderr);
		return 2;
	}
	for (i = 1; i < argc; i++)
		if (replay(argv[i]) != 0)
			bad = 1;
	return bad;
}
