/* adamw.h: one AdamW step on the device, the CPU's adamw_step
 * (src/optim/optim.c) element for element: torch.optim.AdamW's update on
 * float32 master weights with float32 moments, the clip factor applied to the
 * gradient on the fly, decoupled weight decay only inside the decay spans,
 * and the bf16 copy of the weights refreshed in the same pass. */
#ifndef PPA_CUDA_ADAMW_H
#define PPA_CUDA_ADAMW_H

#include "cuda/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* PcSpan ([lo, hi) of the flat parameter buffer) and PcAdamW (the step's hyperparameters): device/pc_types.h */

/* p: [n] float32 master weights; pb: [n] bf16 copy (rounded from the new p) or NULL; g: [n] gradients;
 * m, v: [n] moments; grad_scale: the clip factor (1: none); decay: [n_decay] sorted disjoint spans on the device,
 * counted from base (element i is base + i), or NULL: decay everywhere. p, m, v (and pb) updated in place. */
int pc_adamw_step(float *p, PcBf16 *pb, const float *g, float *m, float *v, size_t n, float grad_scale,
                  const PcSpan *decay, int n_decay, size_t base, const PcAdamW *hp);

/* acc [n] += x [n] (float32, device): ZeRO-2's share of the gradients accumulating a reduced bucket */
int pc_add_f32(float *acc, const float *x, size_t n);

#ifdef __cplusplus
}
#endif

#endif
