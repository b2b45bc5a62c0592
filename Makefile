# wsfuse: plain Makefile, explicit per-layer object lists.
#
#   make               build/wsfuse, build/libwsfuse.a, build/libwsfuse.so
#   make example       emit and compile examples/pointwise_chain.yaml; on a GPU run and check it
#   make test          unit + golden tests (+ NVRTC compile of every example); ends "N passed, N failed"
#   make check-gpu     run every example and the sweep with --check on the GPU (skips without one)
#   make check-asan    the test suite under ASan+UBSan
#   make fuzz SECONDS=N  libFuzzer on the front end
#   make update-golden regenerate golden files for review (git diff shows what moved)
#   make install PREFIX=/usr/local DESTDIR=
#   make clean

# The version is include/wsfuse.h's, and nowhere else.
VERSION   := $(shell sed -n 's/^.define WSF_VERSION_STRING "\(.*\)"$$/\1/p' include/wsfuse.h)
SOMAJOR   := $(shell sed -n 's/^.define WSF_VERSION_MAJOR \([0-9]*\)$$/\1/p' include/wsfuse.h)
PREFIX    ?= /usr/local
DESTDIR   ?=
CUDA_HOME ?= /usr/local/cuda
B         ?= build

CC        ?= cc
CFLAGS    ?= -O2 -g
WARN      := -std=c11 -Wall -Wextra -Wpedantic -Wshadow -Wmissing-prototypes -Wstrict-prototypes \
             -Wno-unused-parameter
CPPFLAGS  += -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -I$(CUDA_HOME)/include -Iinclude
ALLCFLAGS := $(WARN) $(CFLAGS) -fPIC $(CPPFLAGS)
# libyaml is linked statically so the binary runs where libyaml is not installed.
YAML_LIB  := $(firstword $(wildcard /usr/lib/x86_64-linux-gnu/libyaml.a /usr/lib/aarch64-linux-gnu/libyaml.a /usr/lib/libyaml.a /usr/local/lib/libyaml.a))
ifeq ($(YAML_LIB),)
YAML_LIB  := -lyaml
endif
LIBS      := $(YAML_LIB) -ldl -lm -lpthread

IR_OBJS       := arena diag number fusion verify print kernel kverify kprint
COMPILER_OBJS := spec api
PASSES_OBJS   := pipeline expand infer schedule lower lower_pointwise lower_reduction circular_buffer \
                 warp_specialize sync
CODEGEN_OBJS  := emit emit_pointwise emit_reduction device_header
RUNTIME_OBJS  := nvrtc cache files driver tmap hostfp parallel reference launch run

OBJS := $(IR_OBJS:%=$(B)/ir/%.o) $(COMPILER_OBJS:%=$(B)/compiler/%.o) \
        $(PASSES_OBJS:%=$(B)/passes/%.o) $(CODEGEN_OBJS:%=$(B)/codegen/%.o) \
        $(RUNTIME_OBJS:%=$(B)/runtime/%.o)
# Only the objects whose sources exist yet (the tree grows issue by issue).
OBJS := $(foreach o,$(OBJS),$(if $(or $(wildcard $(patsubst $(B)/%.o,%.c,$(o))),$(findstring device_header,$(o))),$(o)))

all: check-deps $(B)/wsfuse $(B)/libwsfuse.a $(B)/libwsfuse.so

check-deps:
	@test -f /usr/include/yaml.h || { echo "wsfuse: libyaml headers are missing: apt-get install libyaml-dev" >&2; exit 1; }
	@test -f $(CUDA_HOME)/include/cuda.h || { echo "wsfuse: CUDA toolkit not found at $(CUDA_HOME) (set CUDA_HOME): apt-get install nvidia-cuda-toolkit or NVIDIA's cuda-toolkit" >&2; exit 1; }

$(B)/%.o: %.c $(wildcard include/*.h ir/*.h compiler/*.h passes/*.h codegen/*.h runtime/*.h) ir/ops.h
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) -c $< -o $@

# The device helper headers are embedded as C strings, the shared helpers and each family's.
DEVICE_CUH := codegen/device.cuh codegen/device_reduction.cuh
EMBED_CUH  := sh tools/embed.sh codegen_device_cuh codegen/device.cuh \
                                codegen_device_reduction_cuh codegen/device_reduction.cuh
$(B)/codegen/device_header.c: $(DEVICE_CUH) tools/embed.sh
	@mkdir -p $(dir $@)
	$(EMBED_CUH) > $@.tmp && mv $@.tmp $@
$(B)/codegen/device_header.o: $(B)/codegen/device_header.c
	$(CC) $(ALLCFLAGS) -Wno-overlength-strings -c $< -o $@

$(B)/libwsfuse.a: $(OBJS)
	@rm -f $@
	ar rcs $@ $^

$(B)/libwsfuse.so: $(OBJS)
	$(CC) -shared -Wl,-soname,libwsfuse.so.$(SOMAJOR) -o $(B)/libwsfuse.so.$(VERSION) $^ $(LIBS)
	ln -sf libwsfuse.so.$(VERSION) $(B)/libwsfuse.so.$(SOMAJOR)
	ln -sf libwsfuse.so.$(VERSION) $@

$(B)/wsfuse: $(B)/compiler/main.o $(B)/libwsfuse.a
	$(CC) $(CFLAGS) -o $@ $^ $(LIBS)

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
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 755 $(B)/wsfuse $(DESTDIR)$(PREFIX)/bin/wsfuse
	install -m 644 include/wsfuse.h $(DESTDIR)$(PREFIX)/include/wsfuse.h
	install -m 644 $(B)/libwsfuse.a $(DESTDIR)$(PREFIX)/lib/libwsfuse.a
	install -m 755 $(B)/libwsfuse.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libwsfuse.so.$(VERSION)
	ln -sf libwsfuse.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libwsfuse.so.$(SOMAJOR)
	ln -sf libwsfuse.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libwsfuse.so
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' wsfuse.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/wsfuse.pc

clean:
	rm -rf $(B) build-asan build-fuzz

.PHONY: all check-deps example install clean
