/* decode.h: what incremental decoding adds on the device (model/decode.h's steps, on the GPU: src/gpu/gpu_decode.c):
 * the key/value cache's rows written, one new query a sequence attending to its cache (flash-decoding: the cache
 * split over blocks, merged in a fixed order), and the moves of token ids between a step's rows and its slots. The
 * products, norms, RoPE, the MLP and the sampler are the other families'. */
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

/* bytes of work pc_decode_attention needs for n queries of NH heads whose lengths are at most bound */
size_t pc_decode_work(int n, int NH, int HS, int bound);

/* One query a sequence, against its cache: out[t, h, :] = softmax(q[t, h, :] k[t, j, g(h), :] / sqrt(HS),
 * j < len[t]) v[t, j, g(h), :], g(h) = h / (NH / NKV) (GQA), where position j of row t lies in slot pslot[s] when
 * j < plen[s], else in slot s, s = slot[t] (a sample reads its prompt's positions from the prompt's slot, by
 * reference; pslot, plen: [n_slots] device, or NULL: every position in slot s). q: [n, NH HS] float32 (after RoPE;
 * read as `ct` rounds it: a bf16 cache's products see a bf16 query, as the forward's attention does); kc, vc:
 * [n_slots, max_len, NKV HS] `ct` elements; slot, len: [n] (device), 1 <= len <= bound <= max_len; HS 64 or 128;
 * out: [n, NH HS] `ct` elements; work: pc_decode_work(n, NH, HS, bound) bytes.
 * Each block takes PC_DECODE_SPLIT keys (device/pc_types.h) of one sequence for its kv head's query heads (8 at a
 * time): scores, p = exp(s - m) with m the block's max (bf16: p rounded to bf16 before P V, as the forward's
 * probabilities), their sum l, and sum p v, all float32; then out = sum_b e^(m_b - M) (sum p v)_b / sum_b e^(m_b - M)
 * l_b over the blocks in order. Sums run in a fixed order: reruns give the same bits. */
int pc_decode_attention(void *out, const float *q, const void *kc, const void *vc, PcDtype ct, const int *slot,
                        const int *len, const int *pslot, const int *plen, int n, int max_len, int bound, int NH,
                        int NKV, int HS, void *work);

/* dst[dst_at ? dst_at[i] : i] = src[src_at ? src_at[i] : i] for i < n (device int arrays): a step's sampled ids to
 * their slots, or the slots' next tokens to a step's rows */
int pc_ids_move(int *dst, const int *dst_at, const int *src, const int *src_at, int n);

#ifdef __cplusplus
}
#endif

#endif
