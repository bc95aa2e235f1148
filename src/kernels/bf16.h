/* bf16.h: bfloat16 storage (the top 16 bits of a float32) and its
 * conversions, for weights and activations of --precision bf16. Rounding is
 * to nearest even, as PyTorch's .to(torch.bfloat16) and vcvtne2ps2bf16 do; a
 * NaN stays a quiet NaN (the same rule as st_f32_to_bf16 in safetensors.h). */
#ifndef PPA_BF16_H
#define PPA_BF16_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef uint16_t bf16;

/* y[n] = bf16(x[n]); x and y may not overlap */
void bf16_from_f32(bf16 *y, const float *x, size_t n);
/* y[n] = float(x[n]) (exact) */
void bf16_to_f32(float *y, const bf16 *x, size_t n);
/* rows of a strided matrix: y[r * ldy + c] = bf16(x[r * ldx + c]), c < cols */
void bf16_from_f32_rows(bf16 *y, size_t ldy, const float *x, size_t ldx, size_t rows, size_t cols);

/* nearest even; a NaN stays a quiet NaN; may round up to inf */
static inline bf16 bf16_round(float f) {
    union {
        float f;
        uint32_t u;
    } v = {f};
    uint32_t nan = (v.u & 0x7fffffffu) > 0x7f800000u;
    uint32_t r = (v.u + 0x7fffu + (v.u >> 16 & 1)) >> 16;
    return (bf16)(nan ? (v.u >> 16 | 0x40) : r);
}

/* The same 16 lanes at a time (GCC vectors: AVX-512 where the build or the caller targets it), for the kernels
 * that convert inside their own loops. */
typedef float bf16_f32x16 __attribute__((vector_size(64)));
typedef uint32_t bf16_u32x16 __attribute__((vector_size(64)));
typedef uint16_t bf16_x16 __attribute__((vector_size(32)));

/* bf16_round of each lane, the bf16 in the low half of its 32-bit lane */
static inline __attribute__((always_inline)) bf16_u32x16 bf16_round16(bf16_f32x16 v) {
    bf16_u32x16 u, nan;
    memcpy(&u, &v, sizeof u);
    nan = (bf16_u32x16)((u & 0x7fffffffu) > 0x7f800000u); /* all ones where NaN */
    return ((u + 0x7fffu + (u >> 16 & 1u)) >> 16 & ~nan) | ((u >> 16 | 0x40u) & nan);
}

/* 16 bf16 widened to float32 (exact) */
static inline __attribute__((always_inline)) bf16_f32x16 bf16_widen16(bf16_x16 h) {
    bf16_u32x16 w = __builtin_convertvector(h, bf16_u32x16) << 16;
    bf16_f32x16 f;
    memcpy(&f, &w, sizeof f);
    return f;
}

static inline float bf16_f32(bf16 h) {
    union {
        uint32_t u;
        float f;
    } v = {(uint32_t)h << 16};
    return v.f;
}

#endif
