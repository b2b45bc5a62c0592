# tests/tests.mk: the test targets, included by the Makefile (which defines B,
# CC, ALLCPPFLAGS, ALLCFLAGS, LIBS and DEPS).  docs/testing.md describes the suite.
#
#   test            all + unit tests + fuzz replays + golden files + NVRTC cubins
#   update-golden   rewrite golden files from the current compiler (T=NAME: only those)
#   check-asan      the same suite, built in build-asan/ with ASan and UBSan
#   check-valgrind  error and IR goldens with the CLI under valgrind
#   check-gpu       every example and tests/gpu/sweep.txt with `wsfuse run --check`
#   check-sanitize  compute-sanitizer memcheck/racecheck/synccheck on the kernel variants
#   fuzz            libFuzzer on the front end for SECONDS seconds (default 60)
#   fuzz-launch     libFuzzer on the launch checks (shapes, strides, dtypes) for SECONDS seconds
#   cuda-diff       the generated CUDA of every spec and size, BASE's compiler against this tree's

TEST_SRCS := $(wildcard tests/unit/test_*.c)
TEST_BINS := $(TEST_SRCS:tests/unit/%.c=$(B)/tests/%)
TEST_HDRS := $(wildcard include/*.h ir/*.h compiler/*.h passes/*.h codegen/*.h runtime/*.h tests/unit/*.h)

# make test and the unit tests also need cmocka (check-deps installs it or says how)
test: DEPS += cmocka.h=libcmocka-dev
$(B)/tests/test_%: DEPS += cmocka.h=libcmocka-dev

test: all $(TEST_BINS) $(B)/tests/replay $(B)/tests/replay_launch $(B)/locale/de_DE.UTF-8
	@bash tests/summary.sh $(B)

# A comma-decimal locale for test_locale, made in the build tree (no root):
# localedef needs the locales package's sources; without them test_locale
# skips its comma-locale cases.
$(B)/locale/de_DE.UTF-8:
	@mkdir -p $(B)/locale
	@rm -rf $@.tmp
	@localedef -i de_DE -f UTF-8 $@.tmp >/dev/null 2>&1 && mv $@.tmp $@ || rm -rf $@.tmp

# Each unit test is a standalone cmocka program over the library's objects.
$(B)/tests/test_%: tests/unit/test_%.c $(B)/libwsfuse_internal.a $(TEST_HDRS) | check-deps
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) $(LDFLAGS) -o $@ $< $(B)/libwsfuse_internal.a -lcmocka $(LIBS)

# A stand-in NVRTC whose log is $$FAKE_NVRTC_LOG: test_nvrtc makes ptxas "say"
# each warning wsfuse fails a compile on, and loads it from its own folder.
$(B)/tests/test_nvrtc: $(B)/tests/fake_nvrtc.so
$(B)/tests/fake_nvrtc.so: tests/unit/fake_nvrtc.c | check-deps
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) $(LDFLAGS) -shared -o $@ $<

# A stand-in libcuda that checks every tensor map and launch against the
# driver's documented rules: test_fake_gpu loads it from its own folder.
$(B)/tests/test_fake_gpu: $(B)/tests/fake_cuda.so
$(B)/tests/fake_cuda.so: tests/unit/fake_cuda.c | check-deps
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) $(LDFLAGS) -shared -o $@ $<

# The fuzz entry points without libFuzzer, for replaying inputs.
$(B)/tests/replay: tests/fuzz/replay.c tests/fuzz/fuzz_spec.c include/wsfuse.h $(B)/libwsfuse_internal.a
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) $(LDFLAGS) -o $@ tests/fuzz/replay.c tests/fuzz/fuzz_spec.c $(B)/libwsfuse_internal.a $(LIBS)

$(B)/tests/replay_launch: tests/fuzz/replay.c tests/fuzz/fuzz_launch.c $(TEST_HDRS) $(B)/libwsfuse_internal.a
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) $(LDFLAGS) -o $@ tests/fuzz/replay.c tests/fuzz/fuzz_launch.c $(B)/libwsfuse_internal.a $(LIBS)

update-golden: all
	@bash tests/run_golden.sh -u $(if $(T),-t $(T)) $(B)

# allocator_may_return_null: the OOM tests ask for SIZE_MAX/2 bytes and expect NULL.
# intercept_tls_get_addr=0: GCC 12's LeakSanitizer reads the size of a dynamic TLS block
# (one of NVRTC's libraries') from a glibc chunk header that ASan's malloc never wrote,
# and its tracer dies on the garbage ("Tracer caught signal 11") whenever the heap's
# layout makes it huge; wsfuse has no TLS, and the blocks are NVIDIA's (tests/lsan.supp).
ASAN_CFLAGS  := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
ASAN_LDFLAGS := -fsanitize=address,undefined
check-asan:
	@ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1:intercept_tls_get_addr=0 \
	 UBSAN_OPTIONS=print_stacktrace=1 LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp \
	 $(MAKE) --no-print-directory B=build-asan CFLAGS='$(ASAN_CFLAGS)' LDFLAGS='$(ASAN_LDFLAGS)' test

VALGRIND := valgrind --leak-check=full --errors-for-leak-kinds=all --error-exitcode=9 -q --num-callers=40 --suppressions=$(CURDIR)/tests/valgrind.supp
check-valgrind: all
	@command -v valgrind >/dev/null || { echo "wsfuse: valgrind is missing: apt-get install valgrind" >&2; exit 1; }
	@bash tests/run_golden.sh -n -w '$(VALGRIND)' $(B)

check-gpu: all
	@bash tests/gpu/run.sh $(B)

# every spec of the fuzz corpora that compiles, compiled on through NVRTC
check-corpus: all
	@bash tests/fuzz/nvrtc_corpus.sh $(B)

# compute-sanitizer memcheck, racecheck and synccheck over the kernel variants
check-sanitize: all
	@bash tests/gpu/sanitize.sh $(B)

# BASE=COMMIT's CUDA against the working tree's (HEAD=COMMIT: that commit's) over
# every example, spec, sweep line and more size sets; CUDA_DIFF_FLAGS='-k --ptx -j N'
# (tools/cuda_diff.sh -h).  Exit 0 only when nothing differs.
cuda-diff:
	@test -n '$(BASE)' || { echo 'usage: make cuda-diff BASE=COMMIT [HEAD=COMMIT] [CUDA_DIFF_FLAGS=...]' >&2; exit 2; }
	@bash tools/cuda_diff.sh $(CUDA_DIFF_FLAGS) '$(BASE)' $(if $(HEAD),'$(HEAD)')

# libFuzzer needs clang.  Every library source but the CLI is compiled into the
# target directly, so that the front end is instrumented for coverage.
SECONDS   ?= 60
FUZZ_SRCS  = $(filter-out compiler/main.c,$(wildcard ir/*.c compiler/*.c passes/*.c codegen/*.c runtime/*.c)) \
             $(if $(wildcard codegen/device.cuh),build-fuzz/device_header.c)
FUZZ_FLAGS = -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
             -fno-omit-frame-pointer $(ALLCPPFLAGS)

build-fuzz/device_header.c: $(DEVICE_CUH) tools/embed.sh
	@mkdir -p build-fuzz
	$(EMBED_CUH) > $@.tmp && mv $@.tmp $@

build-fuzz/fuzz_spec: tests/fuzz/fuzz_spec.c $(FUZZ_SRCS) $(TEST_HDRS)
	@mkdir -p build-fuzz
	@command -v clang >/dev/null || { echo "wsfuse: make fuzz needs clang: apt-get install clang" >&2; exit 1; }
	clang $(FUZZ_FLAGS) -o $@ tests/fuzz/fuzz_spec.c $(FUZZ_SRCS) $(LIBS)

FUZZ_RUN = build-fuzz/fuzz_spec -max_len=4096 -max_total_time=$(SECONDS) -timeout=10 \
           -dict=tests/fuzz/spec.dict -artifact_prefix=build-fuzz/crashes/ \
           build-fuzz/corpus tests/fuzz/corpus build-fuzz/seeds
fuzz: build-fuzz/fuzz_spec
	@mkdir -p build-fuzz/corpus build-fuzz/seeds build-fuzz/crashes
	@for f in examples/*.yaml tests/errors/*.yaml tests/gpu/specs/*.yaml; do \
	  [ -f "$$f" ] && cp "$$f" build-fuzz/seeds/`echo "$$f" | tr / _`; done; true
	@echo "$(FUZZ_RUN)"
	@$(FUZZ_RUN); rc=$$?; n=`ls build-fuzz/crashes | wc -l`; \
	if [ $$n -gt 0 ]; then echo "fuzz: $$n input(s) in build-fuzz/crashes/: minimise each" \
	  "(build-fuzz/fuzz_spec -minimize_crash=1 -runs=100000 FILE) and add it as tests/fuzz/regress/NAME.yaml"; fi; \
	exit $$rc

# The launch checks: inputs are tensor descriptions for a fixed table of kernels (tests/fuzz/fuzz_launch.c).
build-fuzz/fuzz_launch: tests/fuzz/fuzz_launch.c $(FUZZ_SRCS) $(TEST_HDRS)
	@mkdir -p build-fuzz
	@command -v clang >/dev/null || { echo "wsfuse: make fuzz-launch needs clang: apt-get install clang" >&2; exit 1; }
	clang $(FUZZ_FLAGS) -o $@ tests/fuzz/fuzz_launch.c $(FUZZ_SRCS) $(LIBS)

FUZZ_LAUNCH_RUN = build-fuzz/fuzz_launch -max_len=512 -max_total_time=$(SECONDS) -timeout=10 \
                  -artifact_prefix=build-fuzz/launch-crashes/ build-fuzz/launch-corpus tests/fuzz/launch
fuzz-launch: build-fuzz/fuzz_launch
	@mkdir -p build-fuzz/launch-corpus build-fuzz/launch-crashes
	@echo "$(FUZZ_LAUNCH_RUN)"
	@$(FUZZ_LAUNCH_RUN); rc=$$?; n=`ls build-fuzz/launch-crashes | wc -l`; \
	if [ $$n -gt 0 ]; then echo "fuzz-launch: $$n input(s) in build-fuzz/launch-crashes/: minimise each" \
	  "(build-fuzz/fuzz_launch -minimize_crash=1 -runs=100000 FILE) and add it to tests/fuzz/launch/ as regress-NAME"; fi; \
	exit $$rc

.PHONY: test update-golden check-asan check-valgrind check-gpu check-sanitize check-corpus fuzz fuzz-launch cuda-diff
