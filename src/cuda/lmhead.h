/* lmhead.h: the LM head's log-probabilities of n target tokens and their
 * backward, without ever storing [n, V] logits (kernels.c's lmhead_forward /
 * lmhead_backward with nothing kept: the backward recomputes its logits).
 *
 * Rows are taken R at a time (R = min(n, 16384)) and the vocabulary Vc
 * columns at a time, Vc = min(V, 8192, 2^27 / R rounded down to 256s) (a
 * logits chunk [R, Vc] is at most 512 MB; the backward's products sum at most
 * 8192 terms before adding a chunk's share):
 *   forward:  logits = xs W[v0:v0+Vc]^T (cuBLASLt), then a running
 *             log-sum-exp per row (one warp a row, online max and sum);
 *             lse = max + log(sum) and logp = logit[tgt] - lse in double;
 *   backward: the same logits again, dlogits = g (onehot(tgt) - softmax),
 *             dxs (+)= dlogits W[v0:v0+Vc], dW[v0:v0+Vc] += dlogits^T xs;
 *             then dx[src[i]] += dxs[i] in ascending i (the scatter plan of
 *             src: deterministic, the CPU's add_rows order).
 * xs = x[src] gathered (and, for bf16 products, rounded to bf16: the CPU's
 * mm_forward rounds its float32 operand the same way). The bf16 backward forms
 * its bf16 d logits as the CPU's bf16 path does: p = bf16(exp(l - lse)),
 * dl = bf16(-g p), and at the target bf16(g * -expm1(logp)).
 *
 * Kept probabilities (bf16 products, training): a forward given `keep` also
 * writes each chunk's q = bf16(exp(l - M)) ([n, V] bf16, M the chunk's
 * largest logit of the row, kept beside it), and the backward given the same
 * `keep` forms p = bf16(q exp(M - lse)), dl = bf16(-g p) in place, with no
 * logits product: one of the head's four [n, V, H] products saved, and no
 * float32 logits in the backward. One bf16 rounding more than the CPU's p (q):
 * p is within 3 bf16 roundings of exp(l - lse) where the CPU's is within 1, the
 * bound t_lmhead.c states and checks. The backward overwrites keep.
 * Everything runs on the module's stream; reruns are bit-identical. */
#ifndef PPA_CUDA_LMHEAD_H
#define PPA_CUDA_LMHEAD_H

#include "cuda/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* bytes of device work memory the two functions need for n targets (any content; the same for both) */
size_t pc_lmhead_work(int n, int H, int V, PcDtype wt);

/* bytes of the kept probabilities of n targets: bf16 [n, V rounded up to 8] and a float32 per row and vocabulary
 * chunk; 0 (nothing can be kept: the backward recomputes its logits) for float32 products or over 8 GiB */
size_t pc_lmhead_keep_bytes(int n, int V, PcDtype wt);

/* logp: [n] double; lse: [n] float (kept for the backward); x: [T, H] float32; W: [V, H] (`wt` elements:
 * PC_F32 float32 products, PC_BF16 bf16 products); src, tgt: [n] (device; src rows of x, tgt in [0, V));
 * work: [pc_lmhead_work(n, H, V, wt)] bytes; keep: NULL, or [pc_lmhead_keep_bytes(n, V, wt)] bytes (not 0)
 * for the backward of these targets */
int pc_lmhead_forward(double *logp, float *lse, const float *x, const void *W, PcDtype wt, const int *src,
                      const int *tgt, int n, int H, int V, void *work, void *keep);

/* g: [n] double, d loss / d logp[i]; logp, lse: the forward's; dx: [T, H] float32 (+=, rows src);
 * dW: [V, H] float32 (+=; NULL: a frozen head); order, seg, seg_key, n_seg: the device copy of
 * pc_scatter_plan(order, seg, seg_key, src, n) (embedding.h); keep: NULL (the logits recomputed) or what the
 * forward of the same targets kept (overwritten); the rest as the forward's */
int pc_lmhead_backward(float *dx, float *dW, const double *g, const double *logp, const float *lse, const float *x,
                       const void *W, PcDtype wt, const int *src, const int *tgt, int n, int H, int V,
                       const int *order, const int *seg, const int *seg_key, int n_seg, void *work, void *keep);

/* tests and benchmarks: rows and vocabulary columns per chunk (0: automatic); call before sizing the work */
void pc_lmhead_set_chunks(int rows, int vocab);

#ifdef __cplusplus
}
#endif

#endif
