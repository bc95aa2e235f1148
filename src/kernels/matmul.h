/* matmul.h: the engine's linear-layer products in either precision. A
 * Weight carries a matrix W [out, in] as float32, as bf16, or both; with a
 * bf16 copy the product runs in bf16 with float32 accumulation (gemm_bf16.h),
 * the activations rounded to bf16 on the way in (PyTorch autocast's rule),
 * and float32 otherwise (gemm.h). Outputs and gradients stay float32.
 * tmp: bf16 scratch of at least the size each function states. */
#ifndef PPA_MATMUL_H
#define PPA_MATMUL_H

#include "kernels/bf16.h"

typedef struct {
    const float *f; /* [out, in] float32, or NULL (a frozen bf16 model) */
    const bf16 *b;  /* [out, in] bf16, or NULL (float32 products) */
} Weight;

/* An activation that feeds products: float32, or already bf16 (stored so
 * by a bf16 model: the products take it as it is, no conversion). */
typedef struct {
    const float *f;
    const bf16 *b; /* only with a bf16 Weight */
} Act;
static inline Act act_f32(const float *x) { return (Act){x, NULL}; }

/* y[T, out] = x[T, in] W^T + beta y (beta 0 or 1); row i of y is the same
 * whatever T is (batch invariance, pitfall 9). x rows are ldx apart.
 * tmp: [T * in] (unused when x is bf16) */
void mm_forward(float *y, float beta, Act x, int ldx, Weight W, int T, int in, int out, bf16 *tmp);

/* The backward of y = x W^T: dx = dy W + beta_x dx (dx may be NULL), and
 * dW += dy^T x (dW may be NULL: a frozen weight). x rows are in apart; dy
 * [T, out] may come in bf16 already (with a bf16 Weight).
 * tmp: [T * (in + out)] (what is already bf16 needs none) */
void mm_backward(float *dx, float beta_x, float *dW, Act dy, Act x, Weight W, int T, int in, int out, bf16 *tmp);

/* the tmp mm_backward needs, in bf16 elements */
static inline size_t mm_tmp(int T, int in, int out) { return (size_t)T * (size_t)(in + out); }

#endif
