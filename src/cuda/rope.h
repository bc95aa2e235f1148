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

/* q, k and v in one pass, as the bf16 attention reads them: token t's q at q + t ldq (NH heads of HS), k at
 * k + t ldk and v at v + t ldv (NKV heads), float32 with their biases added (three arrays, or the column slices of
 * one fused product's [T, (NH + 2 NKV) HS] rows); out: [T, NH HS] q, then [T, NKV HS] k, then v, packed, bf16:
 * q and k rotated in float32 and rounded once, v rounded (pc_rope_forward then pc_f32_to_bf16, in one pass). */
int pc_rope_qkv_forward(PcBf16 *out, const float *q, int ldq, const float *k, int ldk, const float *v, int ldv,
                        const int *pos, const float *cs, int T, int NH, int NKV, int HS);
/* The backward's: dq [T, NH HS] and dk [T, NKV HS] (float32, packed) rotated back in place (for biases and
 * adapters), and with dv [T, NKV HS] rounded to bf16 into the products' operands: token t's at oq + t ldoq, ok + t
 * ldok, ov + t ldov (packed, or the column slices of one fused product's rows) (pc_rope_backward then
 * pc_f32_to_bf16, in one pass). */
int pc_rope_qkv_backward(PcBf16 *oq, int ldoq, PcBf16 *ok, int ldok, PcBf16 *ov, int ldov, float *dq, float *dk,
                         const float *dv, const int *pos, const float *cs, int T, int NH, int NKV, int HS);

#ifdef __cplusplus
}
#endif

#endif
