/*
 * have_nvrtc.h: whether NVRTC can be loaded, for the unit tests that skip
 * without it (the same library names runtime/nvrtc.c tries), and why they
 * skip: skip_because(NO_NVRTC).  Include it after <cmocka.h>.
 */
#ifndef WSFUSE_TEST_HAVE_NVRTC_H
#define WSFUSE_TEST_HAVE_NVRTC_H

#include <dlfcn.h>

#include "skip_because.h"

#define NO_NVRTC "no NVRTC (libnvrtc.so.13 or .12 not found by dlopen)"

static inline int
have_nvrtc(void)
{
	static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
	size_t i;

	for (i = 0; i < sizeof names / sizeof names[0]; i++) {
		/* NODELETE as in nvrtc.c: unloading NVRTC would orphan its startup allocations */
		void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);

		if (h) {
			dlclose(h);
			return 1;
		}
	}
	return 0;
}

#endif
