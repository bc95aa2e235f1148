/* rmsnorm.h: RMSNorm forward (with the residual add fused when asked) and
 * backward, mirroring kernels.c's rmsnorm_forward / rmsnorm_backward: the
 * sum of squares and the backward's dot product in double, rstd cached by
 * the forward. Inputs and gradients float32 (the residual stream is float32
 * in every precision); the forward's output float32 or bf16 (a bf16 model's
 * product operand: the float32 value rounded once). C <= 8192. */
#ifndef PPA_CUDA_RMSNORM_H
#define PPA_CUDA_RMSNORM_H

#include "cuda/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y = xs / sqrt(mean(xs^2) + eps) * w per token, where xs = x, or xs = x + res stored into xsum when res is given.
 * y: [T, C] (`yt` elements); rstd: [T]; xsum: [T, C] or NULL (only with res); x, res: [T, C]; w: [C] */
int pc_rmsnorm_forward(void *y, PcDtype yt, float *rstd, float *xsum, const float *x, const float *res, const float *w,
                       int T, int C, float eps);

/* dx [T, C] += d x, dw [C] += d w (dw NULL: a frozen weight; summed over fixed blocks of tokens in double, the blocks
 * in order); dy, x: [T, C]; w: [C]; rstd: [T] from the forward (x is its xs) */
int pc_rmsnorm_backward(float *dx, float *dw, const float *dy, const float *x, const float *w, const float *rstd, int T,
                        int C);

#ifdef __cplusplus
}
#endif

#endif
