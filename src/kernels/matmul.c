/* matmul.c: linear-layer products in float32 or bf16 (matmul.h). */
#include "kernels/matmul.h"

#include "core/common.h"
#include "kernels/gemm.h"
#include "kernels/gemm_bf16.h"

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

void mm_backward(float *dx, float beta_x, float *dW, Act dy, Act x, Weight W, int T, int in, int out, bf16 *tmp) {
    if (!W.b) {
        if (!dy.f || (dW && !x.f)) ppa_die(70, "mm_backward: float32 products need float32 operands (internal)");
        if (dx) gemm(0, 0, T, in, out, 1.0f, dy.f, out, W.f, in, beta_x, dx, in);
        if (dW) gemm(1, 0, out, in, T, 1.0f, dy.f, out, x.f, in, 1.0f, dW, in);
        return;
    }
    const bf16 *dyb = dy.b;
    if (!dyb) { /* tmp: [T, out] */
        bf16_from_f32(tmp, dy.f, (size_t)T * out);
        dyb = tmp, tmp += (size_t)T * out;
    }
    if (dx) gemm_bf16(0, 0, T, in, out, dyb, out, W.b, in, beta_x, dx, in);
    if (dW) {
        const bf16 *xb = x.b;
        if (!xb) { /* tmp: [T, in] */
            bf16_from_f32(tmp, x.f, (size_t)T * in);
            xb = tmp;
        }
        gemm_bf16(1, 0, out, in, T, dyb, out, xb, in, 1.0f, dW, in);
    }
}
