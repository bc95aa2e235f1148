/* embedding.h: the token embedding's gather and its deterministic
 * scatter-add backward, and the row scatter-add both that backward and the
 * LM head's share (rows added to rows chosen by a key, repeats allowed).
 *
 * Determinism without float atomics: positions are sorted by key once per
 * batch on the host (pc_scatter_plan; the tokens are the host's anyway),
 * then one thread block per key adds its rows in ascending position order,
 * the order of the CPU's loop (model.c's embed_backward, kernels.c's
 * add_rows): the same bits as the CPU when the added rows are the same. */
#ifndef PPA_CUDA_EMBEDDING_H
#define PPA_CUDA_EMBEDDING_H

#include "cuda/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* x[t, :] = E[tokens[t], :] in float32 (a bf16 E widened, exact).
 * x: [T, C]; E: [V, C] (`et` elements); tokens: [T] (device), each in [0, V) (not checked here: batch_new checks) */
int pc_embed_forward(float *x, const void *E, PcDtype et, const int *tokens, int T, int C);

/* HOST function: the plan of a scatter by keys[n] (host memory, each >= 0). order: [n] the positions sorted by
 * key, ascending within a key; seg: [n_seg + 1] where each key's run starts in order (seg[n_seg] = n);
 * seg_key: [n_seg] the keys, ascending. Returns n_seg, or -1 (a negative key, or out of memory). Upload the
 * three arrays for pc_scatter_add_rows. */
int pc_scatter_plan(int *order, int *seg, int *seg_key, const int *keys, int n);

/* dst[seg_key[s], :] += src[order[p], :] for p in [seg[s], seg[s + 1]), in that order, for every s.
 * dst: rows ldd apart; src: rows lds apart; C columns; float32. order, seg, seg_key: device copies of a plan. */
int pc_scatter_add_rows(float *dst, int ldd, const float *src, int lds, const int *order, const int *seg,
                        const int *seg_key, int n_seg, int C);

/* dE [V, C] += dx [T, C] by token: the plan of the batch's tokens (pc_scatter_plan(order, seg, seg_key, tokens, T)).
 * dE, dx: float32. */
int pc_embed_backward(float *dE, const float *dx, const int *order, const int *seg, const int *seg_key, int n_seg,
                      int C);

#ifdef __cplusplus
}
#endif

#endif
