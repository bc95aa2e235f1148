/* global_norm.h: the global L2 norm of the gradients (the CPU's grad_norm,
 * src/optim/optim.c): squares summed in double in a fixed two-stage order
 * (fixed contiguous blocks, then the blocks' sums in order by one block), so
 * a rerun gives the same bits whatever the device's scheduling. */
#ifndef PPA_CUDA_GLOBAL_NORM_H
#define PPA_CUDA_GLOBAL_NORM_H

#include "cuda/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* *norm (host memory) = sqrt(sum of g[i]^2), g: [n] float32 on the device. Waits for the stream (the host
 * needs the value: torch's clip factor, clip_scale in optim.h, then goes to pc_adamw_step). */
int pc_grad_norm(double *norm, const float *g, size_t n);
/* the same without waiting: *sumsq_device (device memory, one double) = the sum of squares */
int pc_grad_sumsq(double *sumsq_device, const float *g, size_t n);

#ifdef __cplusplus
}
#endif

#endif
