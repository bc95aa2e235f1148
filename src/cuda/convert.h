/* convert.h: float32 <-> bf16 conversions on the device, and the random
 * fills of the tests and benchmarks. Rounding is to nearest even and a NaN
 * stays a quiet NaN: the CPU's bf16_round (src/model/bf16.h) bit for bit. */
#ifndef PPA_CUDA_CONVERT_H
#define PPA_CUDA_CONVERT_H

#include "cuda/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y[n] = bf16(x[n]); x, y: [n], not overlapping */
int pc_f32_to_bf16(PcBf16 *y, const float *x, size_t n);
/* y[n] = float(x[n]) (exact); x, y: [n], not overlapping */
int pc_bf16_to_f32(float *y, const PcBf16 *x, size_t n);

/* p[n] (`t` elements) = uniform values in [lo, hi] (bf16: then rounded), from a hash of (seed, index): the same
 * values for a seed on any device and launch shape. */
int pc_fill_uniform(void *p, PcDtype t, size_t n, uint64_t seed, float lo, float hi);

#ifdef __cplusplus
}
#endif

#endif
