/*
 * codegen.h: the internal header of codegen/ (kernel IR -> CUDA C++).
 *
 *   emit.c          the emitter: small emit_* functions into a Buf
 *   device.cuh      the device helper header (mbarrier, TMA, fences,
 *                   conversions), embedded in the library as a string by
 *                   tools/embed.sh and handed to NVRTC as an in-memory header
 */
#ifndef WSFUSE_CODEGEN_H
#define WSFUSE_CODEGEN_H

#include "../ir/ir.h"

#define CODEGEN_DEVICE_HEADER_NAME "wsfuse_device.cuh"

/* The text of codegen/device.cuh (generated at build time). */
extern const char codegen_device_header[];

/*
 * Emits the CUDA C++ of c->kernel into B and describes its launch in
 * *launch (arena memory).  0, or -1 after a diagnostic.
 */
int codegen_emit(Comp *c, Buf *b, Launch **launch);

#endif
