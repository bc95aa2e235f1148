/* bf16.c: float32 <-> bfloat16 conversions (bf16.h). Plain integer code the
 * compiler vectorises; the conversions are memory-bound next to the products
 * they feed. */
#include "kernels/bf16.h"

void bf16_from_f32(bf16 *y, const float *x, size_t n) {
#pragma omp parallel for simd schedule(static) if (n > (1u << 18))
    for (size_t i = 0; i < n; i++) y[i] = bf16_round(x[i]);
}

void bf16_to_f32(float *y, const bf16 *x, size_t n) {
#pragma omp parallel for simd schedule(static) if (n > (1u << 18))
    for (size_t i = 0; i < n; i++) y[i] = bf16_f32(x[i]);
}

void bf16_from_f32_rows(bf16 *y, size_t ldy, const float *x, size_t ldx, size_t rows, size_t cols) {
#pragma omp parallel for schedule(static) if (rows * cols > (1u << 18))
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++) y[r * ldy + c] = bf16_round(x[r * ldx + c]);
}
