/* attn_bf16.c: attention's products in bf16 with float32 sums, one segment
 * and head at a time (attn_bf16.h): packing into bf16 pairs, an 8 x 32 tile
 * kernel on vdpbf16ps (or the same chains on AVX2, or a C loop), and the five
 * products of a segment. */
#include "kernels/attn_bf16.h"

#include <immintrin.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "kernels/bf16.h"
#include "kernels/gemm_bf16.h"
#include "kernels/gemm_seq.h"

/* two bf16 of the summed dimension: index 2i in the low half, 2i + 1 in the high half */
typedef uint32_t W2;

#define MR 8  /* rows of a tile: packed A operands have a multiple of MR rows */
#define NR 32 /* columns of a tile: packed B operands have a multiple of NR columns */

static int up(int n, int m) { return (n + m - 1) / m * m; }
static int half(int k) { return (k + 1) / 2; }

static inline W2 pair(float lo, float hi) { return (W2)bf16_round(lo) | (W2)bf16_round(hi) << 16; }

/* ---- the tile kernel: C [MR, NR] = alpha A [MR, K2] Bp [K2, NR] + beta C ---- */

/* A's pair (r, kp) is A[r * sr + kp * sk]: the A form (sr = lda, sk = 1), or the B form of the transposed
 * operand read down its columns (sr = 1, sk = ldb), which saves transposing it */
#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

/* the first n (clamped to 0 .. 16) lanes */
static inline __mmask16 mask16(int n) { return (__mmask16)(n >= 16 ? 0xffff : n > 0 ? (1u << n) - 1 : 0); }

/* C [mr, nr] = alpha t + beta C for the tile's sums t, C rows ldc apart (mr <= MR, nr <= NR) */
TARGET static void tile_native(int K2, const W2 *A, size_t sr, size_t sk, const W2 *B, int ldb, float alpha,
                               float beta, float *C, int ldc, int mr, int nr) {
    __m512 c[MR][2];
    for (int r = 0; r < MR; r++) c[r][0] = c[r][1] = _mm512_setzero_ps();
    for (int kp = 0; kp < K2; kp++) {
        __m512bh b0 = (__m512bh)_mm512_loadu_si512(B + (size_t)kp * ldb);
        __m512bh b1 = (__m512bh)_mm512_loadu_si512(B + (size_t)kp * ldb + 16);
        const W2 *a = A + (size_t)kp * sk;
#pragma GCC unroll 8
        for (int r = 0; r < MR; r++) {
            __m512bh ar = (__m512bh)_mm512_set1_epi32((int)a[r * sr]);
            c[r][0] = _mm512_dpbf16_ps(c[r][0], ar, b0);
            c[r][1] = _mm512_dpbf16_ps(c[r][1], ar, b1);
        }
    }
    __mmask16 m[2] = {mask16(nr), mask16(nr - 16)};
    __m512 va = _mm512_set1_ps(alpha);
    for (int r = 0; r < mr; r++)
        for (int h = 0; h < 2; h++) {
            float *cr = C + (size_t)r * ldc + 16 * h;
            __m512 v = _mm512_mul_ps(va, c[r][h]);
            if (beta != 0.0f) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m[h], cr));
            _mm512_mask_storeu_ps(cr, m[h], v);
        }
}

/* vdpbf16ps's order: for each element the odd element's product is added first, then the even one's. Products of
 * two bf16 are exact in float32, so each add rounds once, fused or not: fmaf over the tile's columns, which the
 * compiler vectorises (AVX2 here) without changing an element's chain. */
static void tile_c(int K2, const W2 *A, size_t sr, size_t sk, const W2 *B, int ldb, float alpha, float beta, float *C,
                   int ldc, int mr, int nr) {
    float acc[MR][NR] = {{0}}, bh[NR] = {0}, bl[NR] = {0}; /* columns past nr stay 0 and are not stored */
    for (int kp = 0; kp < K2; kp++) {
        const W2 *b = B + (size_t)kp * ldb;
        for (int j = 0; j < nr; j++) bh[j] = bf16_f32((bf16)(b[j] >> 16)), bl[j] = bf16_f32((bf16)b[j]);
        for (int r = 0; r < mr; r++) {
            W2 a = A[r * sr + (size_t)kp * sk];
            float ah = bf16_f32((bf16)(a >> 16)), al = bf16_f32((bf16)a);
            for (int j = 0; j < NR; j++) acc[r][j] = fmaf(al, bl[j], fmaf(ah, bh[j], acc[r][j]));
        }
    }
    for (int r = 0; r < mr; r++)
        for (int j = 0; j < nr; j++) {
            float *c = C + (size_t)r * ldc + j;
            *c = alpha * acc[r][j] + (beta != 0.0f ? *c : 0.0f);
        }
}

/* tile_c's chains on AVX2, a block of 4 rows by 16 columns at a time: its 8 sums stay in registers (tile_c's
 * [8][32] do not fit), each element's adds in tile_c's order: the same bits */
#define AVX2 __attribute__((target("avx2,fma")))

AVX2 static inline __m256 hi_of(__m256i w) { return _mm256_castsi256_ps(_mm256_and_si256(w, _mm256_set1_epi32((int)0xffff0000u))); }
AVX2 static inline __m256 lo_of(__m256i w) { return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)); }

AVX2 static void block_avx2(int K2, const W2 *A, size_t sr, size_t sk, const W2 *B, int ldb, float alpha, float beta,
                            float *C, int ldc, int mr, int nr) {
    __m256 acc[4][2];
    for (int r = 0; r < 4; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int kp = 0; kp < K2; kp++) {
        const W2 *b = B + (size_t)kp * ldb;
        __m256i w0 = _mm256_loadu_si256((const __m256i *)b), w1 = _mm256_loadu_si256((const __m256i *)(b + 8));
        __m256 bh0 = hi_of(w0), bl0 = lo_of(w0), bh1 = hi_of(w1), bl1 = lo_of(w1);
        const W2 *a = A + (size_t)kp * sk;
#pragma GCC unroll 4
        for (int r = 0; r < 4; r++) {
            __m256i ar = _mm256_set1_epi32((int)a[r * sr]);
            __m256 ah = hi_of(ar), al = lo_of(ar);
            acc[r][0] = _mm256_fmadd_ps(al, bl0, _mm256_fmadd_ps(ah, bh0, acc[r][0]));
            acc[r][1] = _mm256_fmadd_ps(al, bl1, _mm256_fmadd_ps(ah, bh1, acc[r][1]));
        }
    }
    __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256 va = _mm256_set1_ps(alpha);
    for (int h = 0; h < 2; h++) {
        __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(nr - 8 * h), lane);
        for (int r = 0; r < mr; r++) {
            float *c = C + (size_t)r * ldc + 8 * h;
            __m256 v = _mm256_mul_ps(va, acc[r][h]);
            if (beta != 0.0f) v = _mm256_add_ps(v, _mm256_maskload_ps(c, m));
            _mm256_maskstore_ps(c, m, v);
        }
    }
}

/* tile_c on AVX2: rows in blocks of 4, columns in blocks of 16 (the packed operands hold whole tiles: A rows up to
 * MR, B columns up to NR, so the blocks read only packed memory) */
AVX2 static void tile_avx2(int K2, const W2 *A, size_t sr, size_t sk, const W2 *B, int ldb, float alpha, float beta,
                           float *C, int ldc, int mr, int nr) {
    for (int r0 = 0; r0 < mr; r0 += 4)
        for (int c0 = 0; c0 < nr; c0 += 16)
            block_avx2(K2, A + (size_t)r0 * sr, sr, sk, B + c0, ldb, alpha, beta, C + (size_t)r0 * ldc + c0, ldc,
                       mr - r0 < 4 ? mr - r0 : 4, nr - c0 < 16 ? nr - c0 : 16);
}
#undef AVX2

typedef void (*TileFn)(int, const W2 *, size_t, size_t, const W2 *, int, float, float, float *, int, int, int);

static int g_native;
static TileFn g_tile;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void native_once(void) { /* gemm_bf16's choice: its C kernel under PPA_BF16=builtin (and sanitizers) */
    __builtin_cpu_init();
    g_native = __builtin_cpu_supports("avx512bf16") && strcmp(gemm_bf16_kernel(), "oneDNN") == 0;
    int avx2 = !strcmp(gemm_seq_isa(), "avx2"); /* the built-in products' choice (PPA_GEMM_SEQ=scalar: portable) */
    g_tile = g_native ? tile_native : avx2 ? tile_avx2 : tile_c;
}

int ab_native(void) {
    pthread_once(&g_once, native_once);
    return g_native;
}

/* C [M, N] = alpha A Bp + beta C (beta 0 or 1); A: pairs (r, kp) at A[r * sr + kp * sk] for r < up(M, MR)
 * (rows past M are read, their results dropped); Bp: [K2, ldb >= up(N, NR)].
 * causal: the row block of queries i0 .. i0 + mr sees keys below pl + i0 + mr only; CAUSAL_N skips the output
 * columns past that (scores: masked after), CAUSAL_K the summed keys past it (their P or dS are exact zeros) */
enum { DENSE, CAUSAL_N, CAUSAL_K };

static void ab_gemm(int M, int N, int K2, const W2 *A, size_t sr, size_t sk, const W2 *B, int ldb, float alpha,
                    float beta, float *C, int ldc, int causal, int pl) {
    ab_native();
    TileFn tile = g_tile;
    for (int i0 = 0; i0 < M; i0 += MR) {
        int mr = M - i0 < MR ? M - i0 : MR, seen = pl + i0 + mr, n = N, k2 = K2;
        if (causal == CAUSAL_N && seen < n) n = seen;
        if (causal == CAUSAL_K && half(seen) < k2) k2 = half(seen);
        for (int j0 = 0; j0 < n; j0 += NR) {
            int nr = n - j0 < NR ? n - j0 : NR;
            tile(k2, A + (size_t)i0 * sr, sr, sk, B + j0, ldb, alpha, beta, C + (size_t)i0 * ldc + j0, ldc, mr, nr);
        }
    }
}

/* ---- packing (the same rounding as bf16_round, in both paths; bf16.h's bf16_round16 in intrinsics, because
 * clang refuses to pass its GCC vectors from an untargeted helper into these TARGET functions) ---- */

TARGET static inline __m512i round16(__m512 x) { /* 16 bf16, each in the low half of a 32-bit lane */
    __m512i u = _mm512_castps_si512(x), one = _mm512_set1_epi32(1);
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), one);
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb), 16);
    __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                            _mm512_set1_epi32(0x7f800000));
    return _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40)));
}

/* x [n] as 16 lanes, zero past n (a masked load only where lanes fall past n) */
TARGET static inline __m512 load16(const float *x, int n) {
    return n >= 16 ? _mm512_loadu_ps(x) : _mm512_maskz_loadu_ps(mask16(n), x);
}

TARGET static inline void store16(W2 *w, int n, __m512i v) {
    if (n >= 16)
        _mm512_storeu_si512(w, v);
    else
        _mm512_mask_storeu_epi32(w, mask16(n), v);
}

TARGET static void row_native(W2 *w, int words, const float *x, int K) {
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    for (int i = 0; i < words; i += 16) { /* 16 pairs from 32 floats; no down-converting stores (slow on Zen) */
        int c = 2 * i;
        __m512 x0 = load16(x + c, K - c), x1 = load16(x + c + 16, K - c - 16);
        __m512i lo = round16(_mm512_permutex2var_ps(x0, even, x1));
        __m512i hi = round16(_mm512_permutex2var_ps(x0, odd, x1));
        store16(w + i, words - i, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
    }
}

/* w [words] = the pairs of x [K], zero past K */
static void row_pairs(W2 *w, int words, const float *x, int K) {
    if (ab_native()) {
        row_native(w, words, x, K);
        return;
    }
    int i = 0, whole = K / 2 < words ? K / 2 : words;
    for (; i < whole; i++) w[i] = pair(x[2 * i], x[2 * i + 1]); /* no branch: the compiler vectorises it */
    for (; i < words; i++) w[i] = pair(2 * i < K ? x[2 * i] : 0.0f, 0.0f);
}

TARGET static void interleave_native(W2 *w, const float *lo, const float *hi, int N, int words) {
    for (int c = 0; c < words; c += 16) {
        __m512i a = round16(load16(lo + c, N - c));
        __m512i b = hi ? round16(load16(hi + c, N - c)) : _mm512_setzero_si512();
        store16(w + c, words - c, _mm512_or_si512(a, _mm512_slli_epi32(b, 16)));
    }
}

/* w [words] = pairs (lo[j], hi[j]) for j < N (hi NULL: zeros), zero past N */
static void interleave(W2 *w, const float *lo, const float *hi, int N, int words) {
    if (ab_native()) {
        interleave_native(w, lo, hi, N, words);
        return;
    }
    int j = 0, n = N < words ? N : words;
    if (hi)
        for (; j < n; j++) w[j] = pair(lo[j], hi[j]);
    else
        for (; j < n; j++) w[j] = pair(lo[j], 0.0f);
    for (; j < words; j++) w[j] = 0;
}

/* A form: A [up(n, MR), half(K)], row i = the pairs of rows[i] (zero rows past n) */
static void pack_a(W2 *A, const float *const *rows, int n, int K) {
    int lda = half(K);
    for (int i = 0; i < up(n, MR); i++) {
        if (i < n)
            row_pairs(A + (size_t)i * lda, lda, rows[i], K);
        else
            memset(A + (size_t)i * lda, 0, sizeof(W2) * (size_t)lda);
    }
}

TARGET static void gather16(W2 *B, int ldb, const W2 *tmp, int k2) { /* 16 keys' pairs [16, k2] to [k2, 16] */
    const __m512i idx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                           _mm512_set1_epi32(k2));
    for (int kp = 0; kp < k2; kp++)
        _mm512_storeu_si512(B + (size_t)kp * ldb, _mm512_i32gather_epi32(idx, (const void *)(tmp + kp), 4));
}

/* B form of the transposed rows: Bp [half(K), ldb] with Bp[kp][j] = the pair kp of rows[j] (j < n, zero past n) */
static void pack_bt(W2 *B, int ldb, const float *const *rows, int n, int K, W2 *tmp /* [16 half(K)] */) {
    int k2 = half(K), j = 0;
    for (int kp = 0; kp < k2; kp++) memset(B + (size_t)kp * ldb + n, 0, sizeof(W2) * (size_t)(ldb - n));
    if (ab_native())
        for (; j + 16 <= n; j += 16) {
            for (int r = 0; r < 16; r++) row_pairs(tmp + (size_t)r * k2, k2, rows[j + r], K);
            gather16(B + j, ldb, tmp, k2);
        }
    for (; j < n; j++) {
        row_pairs(tmp, k2, rows[j], K);
        for (int kp = 0; kp < k2; kp++) B[(size_t)kp * ldb + j] = tmp[kp];
    }
}

/* B form: Bp [half(K), ldb] with Bp[kp][j] = (rows[2kp][j], rows[2kp + 1][j]) for j < N */
static void pack_b(W2 *B, int ldb, const float *const *rows, int K, int N) {
    for (int kp = 0; kp < half(K); kp++)
        interleave(B + (size_t)kp * ldb, rows[2 * kp], 2 * kp + 1 < K ? rows[2 * kp + 1] : NULL, N, ldb);
}

/* ---- a segment ---- */

enum { KT, VT, KN, VN, QA, PA, PB, QT, TMP, NBUF };

struct AbSeg {
    int p0, pl, a, n, nc, HS;
    const float **krow, **vrow, **rows; /* row pointers: keys, values, the rows a pack reads */
    size_t cap_rows;
    /* KT, VT: Bp of K^T, V^T [half(HS), up(nc)]; KN, VN: Bp of K, V [half(nc), up(HS)]; QA: queries (or dO) in the
     * A form; PA: P or dS in the A form; PB: in the B form; QT: Q or dO in the B form; TMP: 16 keys' pairs */
    W2 *w[NBUF];
    size_t cap[NBUF];
};

AbSeg *ab_seg_new(void) { return xcalloc(1, sizeof(AbSeg)); }

AbSeg *ab_seg_thread(void) {
    static _Thread_local AbSeg *mine; /* kept for the thread's life: fresh buffers would page-fault in every layer */
    if (!mine) mine = ab_seg_new();
    return mine;
}

void ab_seg_free(AbSeg *s) {
    if (!s) return;
    for (int i = 0; i < NBUF; i++) free(s->w[i]);
    free(s->krow), free(s->vrow), free(s->rows);
    free(s);
}

static void grow_to(void **p, size_t *cap, size_t n, size_t size) {
    if (n <= *cap) return;
    free(*p);
    *p = xmalloc(size * n), *cap = n;
}

static void grow(AbSeg *s) {
    size_t tn = (size_t)up(s->nc, NR), hn = (size_t)up(s->HS, NR), h2 = (size_t)half(s->HS), c2 = (size_t)half(s->nc);
    size_t n8 = (size_t)up(s->n, MR), n2 = (size_t)half(s->n);
    size_t need[NBUF] = {[KT] = h2 * tn, [VT] = h2 * tn, [KN] = c2 * hn, [VN] = c2 * hn, [QA] = n8 * h2, [PA] = n8 * c2,
                         [PB] = n2 * (size_t)up(s->nc + MR, NR), [QT] = n2 * hn, [TMP] = 16 * h2};
    for (int i = 0; i < NBUF; i++) grow_to((void **)&s->w[i], &s->cap[i], need[i], sizeof(W2));
    size_t rows = (size_t)(s->nc > s->n ? s->nc : s->n);
    if (rows > s->cap_rows) {
        free(s->krow), free(s->vrow), free(s->rows);
        s->krow = xmalloc(sizeof *s->krow * rows), s->vrow = xmalloc(sizeof *s->vrow * rows);
        s->rows = xmalloc(sizeof *s->rows * rows), s->cap_rows = rows;
    }
}

void ab_seg_keys(AbSeg *s, const float *k, const float *v, int ldk, int p0, int pl, int a, int n, int HS,
                 int backward) {
    s->p0 = p0, s->pl = pl, s->a = a, s->n = n, s->nc = pl + n, s->HS = HS;
    grow(s);
    for (int j = 0; j < s->nc; j++) {
        int t = j < pl ? p0 + j : a + j - pl;
        s->krow[j] = k + (size_t)t * ldk, s->vrow[j] = v + (size_t)t * ldk;
    }
    int ldt = up(s->nc, NR), ldn = up(HS, NR);
    pack_bt(s->w[KT], ldt, s->krow, s->nc, HS, s->w[TMP]);
    pack_b(s->w[VN], ldn, s->vrow, s->nc, HS);
    if (backward) pack_bt(s->w[VT], ldt, s->vrow, s->nc, HS, s->w[TMP]), pack_b(s->w[KN], ldn, s->krow, s->nc, HS);
}

/* row pointers x, x + ld, ... (n of them) */
static const float *const *strided(AbSeg *s, const float *x, int ld, int n) {
    for (int i = 0; i < n; i++) s->rows[i] = x + (size_t)i * ld;
    return s->rows;
}

void ab_scores(AbSeg *s, float *S, const float *Q, int ldq, float scale) {
    pack_a(s->w[QA], strided(s, Q, ldq, s->n), s->n, s->HS);
    ab_gemm(s->n, s->nc, half(s->HS), s->w[QA], (size_t)half(s->HS), 1, s->w[KT], up(s->nc, NR), scale, 0.0f, S,
            s->nc, CAUSAL_N, s->pl);
}

void ab_out(AbSeg *s, float *O, int ldo, const float *P) {
    pack_a(s->w[PA], strided(s, P, s->nc, s->n), s->n, s->nc);
    ab_gemm(s->n, s->HS, half(s->nc), s->w[PA], (size_t)half(s->nc), 1, s->w[VN], up(s->HS, NR), 1.0f, 0.0f, O, ldo,
            CAUSAL_K, s->pl);
}

void ab_dprobs(AbSeg *s, float *dP, const float *dO, int ldo) {
    pack_a(s->w[QA], strided(s, dO, ldo, s->n), s->n, s->HS);
    ab_gemm(s->n, s->nc, half(s->HS), s->w[QA], (size_t)half(s->HS), 1, s->w[VT], up(s->nc, NR), 1.0f, 0.0f, dP,
            s->nc, DENSE, 0);
}

void ab_dq(AbSeg *s, float *dQ, int ldq, const float *dS) {
    pack_a(s->w[PA], strided(s, dS, s->nc, s->n), s->n, s->nc);
    ab_gemm(s->n, s->HS, half(s->nc), s->w[PA], (size_t)half(s->nc), 1, s->w[KN], up(s->HS, NR), 1.0f, 1.0f, dQ, ldq,
            CAUSAL_K, s->pl);
}

/* d (the keys' rows) += G^T X for G [n, nc] and X [n, HS] (rows ldx apart): G's B form read down its columns is
 * the A form of G^T, so nothing is transposed */
static void key_grad(AbSeg *s, float *d, int ldk, const float *X, int ldx, const float *G) {
    int n = s->n, nc = s->nc, HS = s->HS, ldb = up(nc + MR, NR), ldx2 = up(HS, NR), k2 = half(n);
    W2 *g = s->w[PB], *x = s->w[QT];
    pack_b(g, ldb, strided(s, G, nc, n), n, nc);
    pack_b(x, ldx2, strided(s, X, ldx, n), n, HS);
    if (s->pl) ab_gemm(s->pl, HS, k2, g, 1, (size_t)ldb, x, ldx2, 1.0f, 1.0f, d + (size_t)s->p0 * ldk, ldk, DENSE, 0);
    ab_gemm(n, HS, k2, g + s->pl, 1, (size_t)ldb, x, ldx2, 1.0f, 1.0f, d + (size_t)s->a * ldk, ldk, DENSE, 0);
}

void ab_dkv(AbSeg *s, float *dk, float *dv, int ldk, const float *dS, const float *P, const float *Q,
            const float *dO, int ldq) {
    key_grad(s, dk, ldk, Q, ldq, dS);
    key_grad(s, dv, ldk, dO, ldq, P);
}
