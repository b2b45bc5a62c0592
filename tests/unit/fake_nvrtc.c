/*
 * fake_nvrtc.c: a stand-in libnvrtc for test_nvrtc, loaded through
 * WSFUSE_NVRTC_PATH.  It compiles nothing: every program "compiles" to a
 * few bytes of cubin, and its log is $FAKE_NVRTC_LOG, so a test can make
 * ptxas say anything (a warning of any code) without a kernel that makes
 * the real ptxas say it.  It reports NVRTC 13.0 with sm_90 supported.
 */
#include <stdlib.h>
#include <string.h>

#include <nvrtc.h>

static const char cubin[] = "\x7f" "ELF fake cubin";
static const char ptx[] = "// fake PTX\n.target sm_90a\n";

static const char *
log_text(void)
{
	const char *s = getenv("FAKE_NVRTC_LOG");

	return s ? s : "";
}

const char *
nvrtcGetErrorString(nvrtcResult result)
{
	return result == NVRTC_SUCCESS ? "NVRTC_SUCCESS" : "NVRTC_ERROR_FAKE";
}

nvrtcResult
nvrtcVersion(int *major, int *minor)
{
	*major = 13;
	*minor = 0;
	return NVRTC_SUCCESS;
}

nvrtcResult
nvrtcGetNumSupportedArchs(int *n)
{
	*n = 2;
	return NVRTC_SUCCESS;
}

nvrtcResult
nvrtcGetSupportedArchs(int *archs)
{
	archs[0] = 80;
	archs[1] = 90;
	return NVRTC_SUCCESS;
}

nvrtcResult
nvrtcCreateProgram(nvrtcProgram *prog, const char *src, const char *name, int nhdr,
                   const char *const *headers, const char *const *names)
{
	*prog = (nvrtcProgram)(void *)cubin; /* never dereferenced */
	return NVRTC_SUCCESS;
}

nvrtcResult
nvrtcDestroyProgram(nvrtcProgram *prog)
{
	*prog = NULL;
	return NVRTC_SUCCESS;
}

nvrtcResult
nvrtcCompileProgram(nvrtcProgram prog, int nopts, const char *const *opts)
{
	return NVRTC_SUCCESS;
}

nvrtcResult
nvrtcGetPTXSize(nvrtcProgram prog, size_t *n)
{
	*n = sizeof ptx;
	return NVRTC_SUCCESS;
}

nvrtcResult
nvrtcGetPTX(nvrtcProgram prog, char *out)
{
	memcpy(out, ptx, sizeof ptx);
	return NVRTC_SUCCESS;
}

nvrtcResult
nvrtcGetCUBINSize(nvrtcProgram prog, size_t *n)
{
	*n = sizeof cubin - 1;
	return NVRTC_SUCCESS;
}

nvrtcResult
nvrtcGetCUBIN(nvrtcProgram prog, char *out)
{
	memcpy(out, cubin, sizeof cubin - 1);
	return NVRTC_SUCCESS;
}

nvrtcResult
nvrtcGetProgramLogSize(nvrtcProgram prog, size_t *n)
{
	*n = strlen(log_text()) + 1;
	return NVRTC_SUCCESS;
}

nvrtcResult
nvrtcGetProgramLog(nvrtcProgram prog, char *out)
{
	strcpy(out, log_text());
	return NVRTC_SUCCESS;
}
