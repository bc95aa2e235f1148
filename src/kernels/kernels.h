/* kernels.h: the layer kernels of the Llama-family engine, as forward /
 * backward pairs on raw float arrays. Forwards cache what their backward
 * needs; backwards accumulate (+=) into parameter gradients and into the
 * gradients of their inputs unless said otherwise. Nothing here allocates
 * except attention's per-thread scratch. T = tokens of the batch, H = hidden,
 * NH / NKV = query / key-value heads, HS = head size, V = vocabulary. */
#ifndef PPA_KERNELS_H
#define PPA_KERNELS_H

#include <stddef.h>

#include "kernels/matmul.h"

/* y = x / sqrt(mean(x^2) + eps) * w, per token; rstd cached.
 * x, y: [T, C]; w: [C]; rstd: [T] */
void rmsnorm_forward(float *y, float *rstd, const float *x, const float *w, int T, int C, float eps);
/* dx: [T, C] (+=), dw: [C] (+=), dy: [T, C] */
void rmsnorm_backward(float *dx, float *dw, const float *dy, const float *x, const float *w, const float *rstd, int T,
                      int C);

/* Hugging Face rotate_half RoPE in place, pairing dims (j, j + HS/2).
 * x: [T, NHx * HS]; pos: [T]; cs: [max_pos + 1, HS/2, 2] cos and sin table.
 * inverse = 1 rotates back (the backward of the rotation). */
void rope_apply(float *x, const int *pos, const float *cs, int T, int NHx, int HS, int inverse);
/* cs: [n_pos, HS/2, 2] from inv_freq: [HS/2] */
void rope_table(float *cs, const double *inv_freq, int n_pos, int HS);

/* h = silu(g) * u in float32 maths; g, u, h: [N]; g and u float32 or bf16
 * (stored so by bf16 models), h float32 or, when hb is given, rounded to
 * bf16 (the down projection's operand). gb, ub (or NULL): float32 g and u
 * rounded to bf16 in the same pass, as a bf16 model keeps them (h comes from
 * their float32 values). */
void swiglu_forward(float *h, bf16 *hb, bf16 *gb, bf16 *ub, Act g, Act u, long N);
/* dg, du: [N] (overwritten), float32, or rounded to bf16 into dgb, dub
 * (the products' operands) when those are given instead */
void swiglu_backward(float *dg, bf16 *dgb, float *du, bf16 *dub, const float *dh, Act g, Act u, long N);

/* Causal attention on shared-prompt rows. Token t attends keys
 * [pstart[t], pstart[t] + plen[t]) (its row's prompt, for response tokens)
 * and [sstart[t], t] (its own segment). rows: [n_rows + 1] token offsets;
 * a row's keys never leave it. q: [T, NH*HS]; k, v: [T, NKV*HS];
 * out: [T, NH*HS]; lse: [T, NH] (log-sum-exp of the scaled scores). */
typedef struct {
    const int *pstart, *plen, *sstart; /* [T] */
    const int *rows;                  /* [n_rows + 1] */
    int n_rows, T, NH, NKV, HS;
    int bf16; /* the products in bf16 with float32 sums (attn_bf16.h); the softmax stays float32 */
} AttnShape;
void attention_forward(float *out, float *lse, const float *q, const float *k, const float *v, const AttnShape *s);
/* dq: [T, NH*HS], dk, dv: [T, NKV*HS] (+=); scores are recomputed from lse */
void attention_backward(float *dq, float *dk, float *dv, const float *dout, const float *out, const float *lse,
                        const float *q, const float *k, const float *v, const AttnShape *s);

/* Log-probabilities of n targets without storing [n, V] logits: in chunks of
 * lmhead_chunk(n, V) targets, logits = x[src] W^T, logp[i] = logits[i, tgt[i]] - lse[i].
 * Chunks are as large as a ~128 MB logits buffer allows: the float32
 * backward's dW += dlogits^T x reads and writes all of dW once per chunk;
 * with bf16 products the backward's pieces hold several chunks (a ~256 MB
 * bf16 buffer), the same with a kept softmax as without.
 * keep: where the forward leaves the softmax for the backward, which then
 * needs no second logits product: f (float32 products only; one chunk of n),
 * b (bf16 products: the backward forms its bf16 d logits from it directly),
 * or neither (recomputed; with bf16 products rounded as a kept one is: the
 * same bytes).
 * work: [lmhead_work(n, H, V)] floats, any content.
 * x: [T, H]; W: [V, H]; src, tgt: [n]; logp: [n]; lse: [n] (cached) */
typedef struct {
    float *f; /* [n, V] or NULL */
    bf16 *b;  /* [n, V] or NULL; not both */
} LmKeep;
int lmhead_chunk(int n, int V);
void lmhead_set_chunk_rows(int rows); /* tests: fixed rows per chunk (0: automatic) */
size_t lmhead_work(int n, int H, int V);
/* W: float32 or bf16 products (matmul.h); btmp: [lmhead_btmp(n, H, V)] bf16
 * scratch, used by bf16 products only (may be NULL for float32) */
size_t lmhead_btmp(int n, int H, int V);
void lmhead_forward(double *logp, float *lse, const float *x, Weight W, const int *src, const int *tgt, int n, int H,
                    int V, float *work, LmKeep keep, bf16 *btmp);
/* g: [n] d loss / d logp; logp: the forward's (a bf16 keep takes the target's
 * 1 - p from it, not from the rounded softmax). dx: [T, H] (+=, rows src),
 * dW: [V, H] (+=, or NULL: frozen, or later); keep: as given to the forward
 * (the backward leaves its d logits there) */
void lmhead_backward(float *dx, float *dW, const double *g, const double *logp, const float *x, Weight W,
                     const float *lse, const int *src, const int *tgt, int n, int H, int V, float *work, LmKeep keep,
                     bf16 *btmp);
/* dW [V, H] += the weight gradient from the d logits a backward with a kept
 * softmax and no dW left in keep, piece by piece as that backward would have
 * added it: the same bytes, later (when the layers' activations are gone). */
void lmhead_backward_weights(float *dW, const float *x, Weight W, const int *src, int n, int H, int V, float *work,
                             LmKeep keep, bf16 *btmp);

#endif
