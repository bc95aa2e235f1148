/* lora.h: LoRA's dropout on the device (src/model/lora.c's keep(): a pure function of the step's key, the target
 * and the element's place, so the GPU drops exactly the CPU's elements). The adapter's products themselves are
 * pc_gemm's (matmul.h), in float32 as the CPU's. */
#ifndef PPA_CUDA_LORA_H
#define PPA_CUDA_LORA_H

#include "cuda/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y[t, i] = beta y[t, i] + x[t, i] keep(t, i) for t < T, i < in, where keep is 0 with probability p and
 * 1 / (1 - p) otherwise: u = (splitmix64's finaliser of key ^ (target << 48) ^ (t in + i) 0x9e3779b97f4a7c15)
 * >> 11 times 2^-53, dropped when u < p (lora.c's keep, bit for bit). target: 7 l + k (layer l, target k).
 * x, y: [T, in] float32; beta 0 (y = the masked x; y may be x) or 1 (y += the masked x: the backward). */
int pc_lora_dropout(float *y, float beta, const float *x, int T, int in, uint64_t key, int target, double p);

#ifdef __cplusplus
}
#endif

#endif
