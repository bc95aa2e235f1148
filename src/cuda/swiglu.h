/* swiglu.h: the MLP's h = silu(gate) * up and its backward, in float32
 * maths whatever the storage (kernels.c's swiglu_forward / swiglu_backward):
 * s = 1 / (1 + exp(-g)), h = g s u; dg = dh u s (1 + g (1 - s)), du = dh g s.
 * Inputs and outputs float32 or bf16 (bf16 outputs: the float32 value
 * rounded once), on rows x cols with row strides, so the fused gate_up
 * product's [T, 2I] output (g = buf, u = buf + I, ld = 2I) is read in place
 * and the backward writes d gate and d up in that same layout for one fused
 * backward product. */
#ifndef PPA_CUDA_SWIGLU_H
#define PPA_CUDA_SWIGLU_H

#include "cuda/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* h: [rows, cols] contiguous (`ht` elements); g, u: [rows, cols] rows ld_in apart (`gt` elements);
 * gb, ub: NULL, or [rows, cols] contiguous bf16: g and u rounded in the same pass (a bf16 model keeps them so;
 * both or neither). */
int pc_swiglu_forward(void *h, PcDtype ht, PcBf16 *gb, PcBf16 *ub, const void *g, const void *u, PcDtype gt,
                      int ld_in, int rows, int cols);

/* dg, du: [rows, cols] rows ld_out apart (`dt` elements), overwritten; dh: [rows, cols] float32 contiguous;
 * g, u: as the forward read them (`gt` elements, rows ld_in apart) */
int pc_swiglu_backward(void *dg, void *du, PcDtype dt, int ld_out, const float *dh, const void *g, const void *u,
                       PcDtype gt, int ld_in, int rows, int cols);

#ifdef __cplusplus
}
#endif

#endif
