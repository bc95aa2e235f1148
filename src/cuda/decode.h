/* decode.h: what incremental decoding adds on the device (model/decode.h's steps, on the GPU: src/gpu/gpu_decode.c):
 * the key/value cache's rows written, and one new query a sequence attending to its cache. The products, norms,
 * RoPE and the MLP are the other families'. */
#ifndef PPA_CUDA_DECODE_H
#define PPA_CUDA_DECODE_H

#include "cuda/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* cache[slot[t], pos[t], :] = x[t, :] (rounded to `ct` elements) for t < n: the keys or values of n tokens
 * into a cache [n_slots, max_len, D]; x: [n, D] float32 rows ldx apart; slot, pos: [n] (device), each pos < max_len */
int pc_kv_store(void *cache, PcDtype ct, int max_len, int D, const float *x, int ldx, const int *slot, const int *pos,
                int n);

/* One query a sequence, against its cache: out[t, h, :] = softmax(q[t, h, :] k[slot[t], j, g(h), :] / sqrt(HS),
 * j < len[t]) v[slot[t], j, g(h), :], g(h) = h / (NH / NKV) (GQA). q: [n, NH HS] float32 (after RoPE; read as
 * `ct` rounds it: a bf16 cache's products see a bf16 query, as the forward's attention does); kc, vc: [n_slots,
 * max_len, NKV HS] `ct` elements; slot, len: [n] (device), 1 <= len <= max_len <= 8192; out: [n, NH HS] `ct`
 * elements (float32 softmax and sums; bf16: the probabilities rounded to bf16 before P V, as the forward's). */
int pc_decode_attention(void *out, const float *q, const void *kc, const void *vc, PcDtype ct, const int *slot,
                        const int *len, int n, int max_len, int NH, int NKV, int HS);

#ifdef __cplusplus
}
#endif

#endif
