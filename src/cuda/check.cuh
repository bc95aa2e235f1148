/* check.cuh: what the .cu files of the module share: error checks that name
 * the call, file and line (kept for pc_error), and launch checks. Not for C. */
#ifndef PPA_CUDA_CHECK_CUH
#define PPA_CUDA_CHECK_CUH

#include <cuda_runtime.h>

#include "cuda/common.h"

/* records "FILE:LINE: what: why" as the module's last error; returns -1 */
extern "C" int pc_fail(const char *file, int line, const char *what, const char *why);

/* CUDA_TRY(call): returns -1 from the enclosing function when call fails */
#define CUDA_TRY(call)                                                                                                 \
    do {                                                                                                               \
        cudaError_t e_ = (call);                                                                                       \
        if (e_ != cudaSuccess) return pc_fail(__FILE__, __LINE__, #call, cudaGetErrorString(e_));                      \
    } while (0)

/* after a launch: the launch's own error (bad configuration) */
#define LAUNCH_TRY() CUDA_TRY(cudaGetLastError())

static inline cudaStream_t pc_cuda_stream(void) { return (cudaStream_t)pc_stream(); }

#endif
