/* rope.h: Hugging Face rotate_half RoPE in place, pairing dims (j, j + HS/2),
 * from the CPU's own cos/sin table (kernels.c's rope_table, uploaded: it
 * already holds every rope_scaling the CPU supports). The backward is the
 * inverse rotation (the rotation's transpose), as kernels.c's rope_apply with
 * inverse = 1. */
#ifndef PPA_CUDA_ROPE_H
#define PPA_CUDA_ROPE_H

#include "cuda/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* x: token t's head h at x[t * ldx + h * HS], h < NHx (q, k, or their slices of a fused qkv buffer: ldx its width),
 * `xt` elements (bf16: rotated in float32, rounded back); pos: [T] (device), each < the table's n_pos;
 * cs: [n_pos, HS/2, 2] cos and sin; HS even. v_j = a cos - b sin, v_{j+HS/2} = b cos + a sin. */
int pc_rope_forward(void *x, PcDtype xt, int ldx, const int *pos, const float *cs, int T, int NHx, int HS);
/* the gradient through the rotation, in place: the same with sin negated */
int pc_rope_backward(void *dx, PcDtype xt, int ldx, const int *pos, const float *cs, int T, int NHx, int HS);

#ifdef __cplusplus
}
#endif

#endif
