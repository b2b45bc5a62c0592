# wsfuse: plain Makefile, explicit per-layer object lists.
#
#   make               build/wsfuse, build/libwsfuse.a, build/libwsfuse.so
#   make example       emit and compile examples/pointwise_chain.yaml; on a GPU run and check it
#   make test          unit + golden tests (+ NVRTC compile of every example); ends "N passed, N failed"
#   make check-gpu     run every example and the sweep with --check on the GPU (skips without one)
#   make check-asan    the test suite under ASan+UBSan
#   make fuzz SECONDS=N  libFuzzer on the front end
#   make update-golden regenerate golden files for review (git diff shows what moved)
#   make install PREFIX=/usr/local DESTDIR= [BINDIR= LIBDIR= INCLUDEDIR=]
#                      the CLI, the libraries, wsfuse.h, wsfuse.pc and a CMake package
#   make clean

# The version is include/wsfuse.h's, and nowhere else.
VERSION   := $(shell sed -n 's/^.define WSF_VERSION_STRING "\(.*\)"$$/\1/p' include/wsfuse.h)
SOMAJOR   := $(shell sed -n 's/^.define WSF_VERSION_MAJOR \([0-9]*\)$$/\1/p' include/wsfuse.h)
PREFIX    ?= /usr/local
BINDIR    ?= $(PREFIX)/bin
LIBDIR    ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
CMAKEDIR  ?= $(LIBDIR)/cmake/wsfuse
DESTDIR   ?=
CUDA_HOME ?= /usr/local/cuda
B         ?= build
# APT=auto: run as root, the build installs the Debian packages it misses; APT=no: it says which
APT       ?= auto

CC        ?= cc
CFLAGS    ?= -O2 -g
# The build's own flags come first and always; CPPFLAGS, CFLAGS and LDFLAGS
# from the command line or the environment add to them.
WARN      := -std=c11 -Wall -Wextra -Wpedantic -Wshadow -Wmissing-prototypes -Wstrict-prototypes \
             -Wno-unused-parameter
ALLCPPFLAGS = -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -I$(CUDA_HOME)/include -Iinclude $(YAML_CFLAGS) $(CPPFLAGS)
ALLCFLAGS = $(WARN) $(CFLAGS) -fPIC $(ALLCPPFLAGS)

# libyaml through pkg-config, else the compiler's own search path.  It is
# linked statically where its archive exists, so that the CLI and
# libwsfuse.so run where libyaml is not installed.  Each is computed once,
# when first used: after check-deps, which may have installed libyaml.
yaml_a      = $(firstword $(wildcard $(shell pkg-config --variable=libdir yaml-0.1 2>/dev/null)/libyaml.a) \
                          $(filter /%,$(shell $(CC) -print-file-name=libyaml.a)))
YAML_LIBS   = $(eval YAML_LIBS := $(or $(yaml_a),$(shell pkg-config --libs yaml-0.1 2>/dev/null),-lyaml))$(YAML_LIBS)
YAML_CFLAGS = $(eval YAML_CFLAGS := $(shell pkg-config --cflags yaml-0.1 2>/dev/null))$(YAML_CFLAGS)
LIBS        = $(YAML_LIBS) -ldl -lm -lpthread
# What a program linking libwsfuse.a adds (no libyaml where the archive
# carries it), kept in $(B)/libs.private for the CLI and wsfuse.pc.
ARCHIVE_LIBS = $(if $(yaml_a),,$(YAML_LIBS)) -ldl -lm -lpthread
OBJCOPY     ?= objcopy
# The headers each goal needs (HEADER=Debian package); tests.mk adds cmocka's.
DEPS        := yaml.h=libyaml-dev

IR_OBJS       := arena diag number fusion verify print kernel kverify kprint dot
COMPILER_OBJS := spec spec_ops spec_schedule spec_write layout context compile tune launch
PASSES_OBJS   := pipeline expand infer grad schedule schedule_matmul schedule_row lower lower_pointwise lower_reduce_grid lower_reduction lower_bcast views lower_matmul lower_matmul_ksum \
                 lower_matmul_sync plan_matmul plan_stream_k circular_buffer \
                 warp_specialize sync sync_patterns sync_protocols
CODEGEN_OBJS  := emit emit_ops emit_pointwise emit_reduce_grid emit_reduction emit_topk device_header emit_matmul emit_matmul_ksum launch_desc
RUNTIME_OBJS  := nvrtc cache files driver tmap hostfp parallel reference launch run timing

OBJS := $(IR_OBJS:%=$(B)/ir/%.o) $(COMPILER_OBJS:%=$(B)/compiler/%.o) \
        $(PASSES_OBJS:%=$(B)/passes/%.o) $(CODEGEN_OBJS:%=$(B)/codegen/%.o) \
        $(RUNTIME_OBJS:%=$(B)/runtime/%.o)
# Only the objects whose sources exist yet (the tree grows issue by issue).
OBJS := $(foreach o,$(OBJS),$(if $(or $(wildcard $(patsubst $(B)/%.o,%.c,$(o))),$(findstring device_header,$(o))),$(o)))

all: check-deps $(B)/wsfuse $(B)/libwsfuse.a $(B)/libwsfuse.so

# Every compile waits for it (order-only), so headers it installs are there.
check-deps:
	@sh tools/deps.sh '$(APT)' '$(CC) $(CPPFLAGS) $(shell pkg-config --cflags yaml-0.1 2>/dev/null)' $(DEPS)
	@test -f $(CUDA_HOME)/include/cuda.h || { echo "wsfuse: CUDA toolkit not found at $(CUDA_HOME) (set CUDA_HOME): install NVIDIA's cuda-toolkit (12.x or 13.x)" >&2; exit 1; }

$(B)/%.o: %.c $(wildcard include/*.h ir/*.h compiler/*.h passes/*.h codegen/*.h runtime/*.h) ir/ops.h | check-deps
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) -c $< -o $@

# The host reference's loops vectorized (gcc leaves them scalar at -O2): its
# matmul is most of an 8192^3 check's time.  Element-wise, no reassociation:
# the same sums.
$(B)/runtime/reference.o: ALLCFLAGS += -ftree-vectorize

# The device helper headers are embedded as C strings, the shared helpers and each family's.
DEVICE_CUH := codegen/device.cuh codegen/device_reduction.cuh codegen/device_matmul.cuh codegen/device_dtypes.cuh
EMBED_CUH  := sh tools/embed.sh codegen_device_cuh codegen/device.cuh \
                                codegen_device_dtypes_cuh codegen/device_dtypes.cuh \
                                codegen_device_reduction_cuh codegen/device_reduction.cuh \
                                codegen_device_matmul_cuh codegen/device_matmul.cuh
$(B)/codegen/device_header.c: $(DEVICE_CUH) tools/embed.sh
	@mkdir -p $(dir $@)
	$(EMBED_CUH) > $@.tmp && mv $@.tmp $@
$(B)/codegen/device_header.o: $(B)/codegen/device_header.c | check-deps
	$(CC) $(ALLCFLAGS) -Wno-overlength-strings -c $< -o $@

# The shipped archive is one object: the library and libyaml.a (where it
# exists, as in libwsfuse.so) linked together, every global but wsf_* made
# local, so that neither can clash with a program's own symbols.  The unit
# tests call internals: they link libwsfuse_internal.a, the objects as built.
$(B)/libwsfuse.a: $(OBJS) Makefile
	@rm -f $@
	$(CC) $(CFLAGS) -nostdlib -r -o $(B)/libwsfuse.o $(OBJS) $(yaml_a)
	$(OBJCOPY) --wildcard --keep-global-symbol='wsf_*' $(B)/libwsfuse.o
	ar rcs $@ $(B)/libwsfuse.o
	echo '$(strip $(ARCHIVE_LIBS))' > $(B)/libs.private

$(B)/libwsfuse_internal.a: $(OBJS)
	@rm -f $@
	ar rcs $@ $^

# Only wsf_* is exported (pkg/libwsfuse.map).
$(B)/libwsfuse.so: $(OBJS) pkg/libwsfuse.map
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -Wl,-soname,libwsfuse.so.$(SOMAJOR) -Wl,--version-script=pkg/libwsfuse.map \
	  -o $(B)/libwsfuse.so.$(VERSION) $(OBJS) $(LIBS)
	ln -sf libwsfuse.so.$(VERSION) $(B)/libwsfuse.so.$(SOMAJOR)
	ln -sf libwsfuse.so.$(VERSION) $@

$(B)/wsfuse: $(B)/compiler/main.o $(B)/libwsfuse.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ `cat $(B)/libs.private`

# The README's first command: emit and compile a kernel; on a GPU also run and check it.
EXAMPLE ?= examples/pointwise_chain.yaml
example: all
	$(B)/wsfuse compile --emit=cuda $(EXAMPLE) -o $(B)/example.cu
	$(B)/wsfuse compile $(EXAMPLE) -o $(B)/example.cubin
	@$(B)/wsfuse run --check $(EXAMPLE); rc=$$?; \
	if [ $$rc = 3 ]; then echo "no GPU here: $(EXAMPLE) was emitted to $(B)/example.cu and compiled to $(B)/example.cubin, not run"; exit 0; fi; \
	exit $$rc

include tests/tests.mk

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(CMAKEDIR)
	install -m 755 $(B)/wsfuse $(DESTDIR)$(BINDIR)/wsfuse
	install -m 644 include/wsfuse.h $(DESTDIR)$(INCLUDEDIR)/wsfuse.h
	install -m 644 $(B)/libwsfuse.a $(DESTDIR)$(LIBDIR)/libwsfuse.a
	install -m 755 $(B)/libwsfuse.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libwsfuse.so.$(VERSION)
	ln -sf libwsfuse.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libwsfuse.so.$(SOMAJOR)
	ln -sf libwsfuse.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libwsfuse.so
	sed $(SUBST) pkg/wsfuse.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/wsfuse.pc
	sed $(SUBST) pkg/wsfuse-config.cmake.in > $(DESTDIR)$(CMAKEDIR)/wsfuse-config.cmake
	sed $(SUBST) pkg/wsfuse-config-version.cmake.in > $(DESTDIR)$(CMAKEDIR)/wsfuse-config-version.cmake

clean:
	rm -rf $(B) build-asan build-fuzz

# The templates of pkg/: wsfuse.pc names its folders from ${prefix} where
# they lie under it (for pkg-config --define-prefix); the CMake package
# finds them relative to its own folder.
pc_dir    = $(patsubst $(PREFIX)/%,$${prefix}/%,$(1))
from_cmake = $(shell realpath -ms --relative-to='$(CMAKEDIR)' '$(1)')
SUBST     = -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(call pc_dir,$(LIBDIR))|g' \
            -e 's|@INCLUDEDIR@|$(call pc_dir,$(INCLUDEDIR))|g' -e 's|@VERSION@|$(VERSION)|g' \
            -e 's|@SOMAJOR@|$(SOMAJOR)|g' -e "s|@LIBS_PRIVATE@|`cat $(B)/libs.private`|g" \
            -e 's|@CMAKE_TO_LIBDIR@|$(call from_cmake,$(LIBDIR))|g' \
            -e 's|@CMAKE_TO_INCLUDEDIR@|$(call from_cmake,$(INCLUDEDIR))|g'

.PHONY: all check-deps example install clean
