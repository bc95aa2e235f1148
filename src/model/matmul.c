/* matmul.c: linear-layer products in float32 or bf16 (matmul.h). */
#include "model/matmul.h"

#include "core/common.h"
#include "model/gemm.h"
#include "model/gemm_bf16.h"

void mm_forward(float *y, float beta, Act x, int ldx, Weight W, int T, int in, int out, bf16 *tmp) {
    if (!W.b) {
        gemm_rows(T, out, in, x.f, ldx, W.f, in, beta, y, out);
        return;
    }
    const bf16 *xb = x.b;
    if (!xb) {
        bf16_from_f32_rows(tmp, (size_t)in, x.f, (size_t)ldx, (size_t)T, (size_t)in); /* tmp: [T, in] */
        xb = tmp, ldx = in;
    }
    gemm_bf16(0, 1, T, out, in, xb, ldx, W.b, in, beta, y, out); /* row-invariant: gemm_bf16.h */
}

void mm_backward(float *dx, float beta_x, float *dW, const float *dy, Act x, Weight W, int T, int in, int out,
                 bf16 *tmp) {
    if (!W.b) {
        if (dx) gemm(0, 0, T, in, out, 1.0f, dy, out, W.f, in, beta_x, dx, in);
        if (dW) gemm(1, 0, out, in, T, 1.0f, dy, out, x.f, in, 1.0f, dW, in);
        return;
    }
    bf16 *dyb = tmp, *xb = tmp + (size_t)T * out; /* [T, out], [T, in] */
    bf16_from_f32(dyb, dy, (size_t)T * out);
    if (dx) gemm_bf16(0, 0, T, in, out, dyb, out, W.b, in, beta_x, dx, in);
    if (dW) {
        if (x.b)
            xb = (bf16 *)x.b;
        else
            bf16_from_f32(xb, x.f, (size_t)T * in);
        gemm_bf16(1, 0, out, in, T, dyb, out, xb, in, 1.0f, dW, in);
    }
}
