/* device.h: the seam between the engine's passes (src/model) and the
 * compute. The passes reach the products, norms, RoPE, attention, SwiGLU,
 * the LM head's log-probs, the conversions to bf16 and the optimizer step
 * through one table of functions, chosen once per model (Model.dev): the CPU
 * (src/kernels, src/optim) is its first implementation; a GPU module adds a
 * table of its own beside it without touching the passes' callers. One call
 * per layer and operation, on the buffers the passes own: no call per
 * element, no copies. The signatures, shapes and rules are the kernels':
 * kernels/matmul.h, kernels/kernels.h, kernels/gemm.h, kernels/bf16.h,
 * optim/optim.h. */
#ifndef PPA_DEVICE_H
#define PPA_DEVICE_H

#include <stddef.h>

#include "core/span.h"
#include "kernels/kernels.h"
#include "optim/optim.h"

typedef struct Device {
    const char *name; /* "cpu" */

    /* products: the linear layers (matmul.h) and plain row-major ones (gemm.h: LoRA's small factors) */
    void (*mm_forward)(float *y, float beta, Act x, int ldx, Weight W, int T, int in, int out, bf16 *tmp);
    void (*mm_backward)(float *dx, float beta_x, float *dW, Act dy, Act x, Weight W, int T, int in, int out, bf16 *tmp);
    void (*gemm)(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                 int ldb, float beta, float *C, int ldc);
    void (*gemm_rows)(int M, int N, int K, const float *A, int lda, const float *B, int ldb, float beta, float *C,
                      int ldc);

    /* RMSNorm, RoPE, SwiGLU, attention on shared-prompt rows (kernels.h) */
    void (*rmsnorm_forward)(float *y, float *rstd, const float *x, const float *w, int T, int C, float eps);
    void (*rmsnorm_backward)(float *dx, float *dw, const float *dy, const float *x, const float *w, const float *rstd,
                             int T, int C);
    void (*rope_table)(float *cs, const double *inv_freq, int n_pos, int HS);
    void (*rope_apply)(float *x, const int *pos, const float *cs, int T, int NHx, int HS, int inverse);
    void (*swiglu_forward)(float *h, bf16 *hb, bf16 *gb, bf16 *ub, Act g, Act u, long N);
    void (*swiglu_backward)(float *dg, bf16 *dgb, float *du, bf16 *dub, const float *dh, Act g, Act u, long N);
    void (*attention_forward)(float *out, float *lse, const float *q, const float *k, const float *v,
                              const AttnShape *s);
    void (*attention_backward)(float *dq, float *dk, float *dv, const float *dout, const float *out, const float *lse,
                               const float *q, const float *k, const float *v, const AttnShape *s);

    /* the LM head's log-probs, chunk by chunk, and their sizes (kernels.h) */
    int (*lmhead_chunk)(int n, int V);
    size_t (*lmhead_work)(int n, int H, int V);
    size_t (*lmhead_btmp)(int n, int H, int V);
    void (*lmhead_forward)(double *logp, float *lse, const float *x, Weight W, const int *src, const int *tgt, int n,
                           int H, int V, float *work, LmKeep keep, bf16 *btmp);
    void (*lmhead_backward)(float *dx, float *dW, const double *g, const double *logp, const float *x, Weight W,
                            const float *lse, const int *src, const int *tgt, int n, int H, int V, float *work,
                            LmKeep keep, bf16 *btmp);
    void (*lmhead_backward_weights)(float *dW, const float *x, Weight W, const int *src, int n, int H, int V,
                                    float *work, LmKeep keep, bf16 *btmp);

    /* bf16 copies (bf16.h) */
    void (*to_bf16)(bf16 *y, const float *x, size_t n);
    void (*from_bf16)(float *y, const bf16 *x, size_t n);

    /* the optimizer step and the global gradient norm (optim.h) */
    void (*adamw_step)(AdamW *a, float *params, const float *grads, float grad_scale, const Spans *decay, size_t base,
                       double lr, const AdamWConfig *c);
    double (*grad_norm)(const float *g, size_t n);
} Device;

/* The CPU's table: the kernels of src/kernels and the optimizer of src/optim. */
const Device *device_cpu(void);

#endif
