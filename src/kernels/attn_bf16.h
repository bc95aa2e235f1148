/* attn_bf16.h: the matrix products of attention in bf16 with float32 sums,
 * for --precision bf16 (PyTorch autocast runs attention's matmuls in bf16
 * too). kernels.c's attention calls these one segment and head at a time,
 * inside its own parallel loop, so each product is single-threaded: small
 * products (a segment's queries against its keys, head size 64-128) that
 * oneDNN's primitives (shape-cached, serialised) do not suit.
 *
 * Operands are rounded to bf16 (nearest even) as they are packed: pairs of
 * bf16 along the summed dimension, the layout of vdpbf16ps. Products of two
 * bf16 are exact in float32; only the float32 sums round, in the order of the
 * summed index, whatever the shape: a row of S or O depends on its own query
 * only (batch invariance) and on no thread count. The kernel is vdpbf16ps on
 * CPUs with AVX512-BF16 and a C loop with the same order otherwise (and
 * under PPA_BF16=builtin, as the products of gemm_bf16.h).
 *
 * One AbSeg per thread; ab_seg_keys packs a segment's keys and values for one
 * kv head (the prompt's rows, then the segment's own), then the product
 * functions run for each query head of that kv head. n queries, nc = pl + n
 * keys, HS head size; S, P, dS: [n, nc] float32, row-major. */
#ifndef PPA_ATTN_BF16_H
#define PPA_ATTN_BF16_H

typedef struct AbSeg AbSeg;

AbSeg *ab_seg_new(void);
void ab_seg_free(AbSeg *s);
/* the calling thread's own, kept (with its buffers) until the thread ends */
AbSeg *ab_seg_thread(void);

/* k, v: the kv head's columns (row t at k + t * ldk); keys p0 .. p0 + pl
 * (the prompt, pl may be 0), then a .. a + n (the segment). backward: also
 * the layouts the backward's products read. */
void ab_seg_keys(AbSeg *s, const float *k, const float *v, int ldk, int p0, int pl, int a, int n, int HS,
                 int backward);

/* Causal: query i sees keys j <= pl + i. ab_scores leaves some masked
 * entries of S unset (the caller masks them); ab_out and ab_dq skip the
 * masked keys, whose P and dS must be zero. */
/* S [n, nc] = scale Q K^T (where not masked); Q: the segment's queries, rows ldq apart */
void ab_scores(AbSeg *s, float *S, const float *Q, int ldq, float scale);
/* O [n, HS] (rows ldo apart) = P V */
void ab_out(AbSeg *s, float *O, int ldo, const float *P);
/* dP [n, nc] = dO V^T (every entry) */
void ab_dprobs(AbSeg *s, float *dP, const float *dO, int ldo);
/* dQ [n, HS] += dS K */
void ab_dq(AbSeg *s, float *dQ, int ldq, const float *dS);
/* dK += dS^T Q and dV += P^T dO into the keys' rows of dk and dv (the kv
 * head's columns, rows ldk apart, as ab_seg_keys's k and v) */
void ab_dkv(AbSeg *s, float *dk, float *dv, int ldk, const float *dS, const float *P, const float *Q,
            const float *dO, int ldq);

/* 1 when the vdpbf16ps kernel runs, 0 for the C loop (for tests) */
int ab_native(void);

#endif
