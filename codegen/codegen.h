/*
 * codegen.h: the internal header of codegen/ (kernel IR -> CUDA C++).
 *
 *   emit.c          the emitter: small emit_* functions into a Buf
 *   device.cuh      the device helper header (mbarrier, TMA, fences,
 *                   conversions), embedded in the library as a string by
 *                   tools/embed.sh and inlined at the top of every kernel,
 *                   between the lines CODEGEN_DEVICE_BEGIN and _END
 */
#ifndef WSFUSE_CODEGEN_H
#define WSFUSE_CODEGEN_H

#include "../ir/ir.h"

#define CODEGEN_DEVICE_HEADER_NAME "wsfuse_device.cuh"
/* The lines around the inlined header (tests/run_golden.sh leaves it out of the .cu goldens). */
#define CODEGEN_DEVICE_BEGIN "// ---- begin wsfuse_device.cuh: the device helpers, inlined ----"
#define CODEGEN_DEVICE_END "// ---- end wsfuse_device.cuh ----"

/* The text of codegen/device.cuh (generated at build time). */
extern const char codegen_device_header[];

/*
 * Emits the CUDA C++ of c->kernel into B and describes its launch in
 * *launch (arena memory).  0, or -1 after a diagnostic.
 */
int codegen_emit(Comp *c, Buf *b, Launch **launch);

#endif
