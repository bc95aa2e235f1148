/* gemm_seq.c: products whose elements are in-order fma chains (gemm_seq.h).
 * op(A) is packed a block of rows at a time into tiles [K][MR], op(B) a
 * panel of NR columns at a time into [K][NR] (bf16 widened on the way, which
 * is exact), both zero-padded at the edges; every tile then runs the whole
 * chain over k with its MR x NR sums in registers. The padding adds zeros
 * to nothing that is stored, so edges cost no second code path. A chain
 * longer than K_BLOCK runs in pieces of K_BLOCK: its float32 partial sums
 * wait in a [M, N] buffer between pieces, stored and reloaded exactly, so
 * the chain and its bits are those of one piece, while the packed tiles of
 * a piece stay in cache (an LM head's dx = dlogits W sums over the whole
 * vocabulary: 14 GFLOP/s in one piece, streaming its tiles from memory). */
#include "kernels/gemm_seq.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SEQ_X86 1
#endif

#include "core/common.h"

#define MR 6  /* rows of a tile */
#define NR 16 /* columns of a tile: two 8-lane vectors */
#define A_BLOCK_FLOATS (1u << 19) /* 2 MB of packed rows per block: they stay in cache across the panels */
#define B_ONCE_FLOATS (1u << 24)  /* op(B) up to 64 MB packed once for all blocks; a larger one per block, in */
#define A_BIG_FLOATS (1u << 23)   /* blocks of 32 MB of rows so that its repacking is spread over many */
#define K_BLOCK 2048              /* k per piece of a longer chain */

typedef struct {
    const void *p;
    int ld, trans, bf; /* bf: elements are bf16 */
} Opnd;

static inline float elem(const Opnd *o, size_t idx) {
    return o->bf ? bf16_f32(((const bf16 *)o->p)[idx]) : ((const float *)o->p)[idx];
}

/* out[K][W] = w lines of a stored matrix, line l at l * ld, element k at k (by_line: read along the lines) or the
 * transpose (line l's element k at k * ld + l); zero past w. The loops run along memory either way. */
static void pack_scalar(float *out, int W, const Opnd *o, int l0, int w, int K, int by_line) {
    if (by_line) {
        for (int l = 0; l < W; l++)
            for (int k = 0; k < K; k++)
                out[(size_t)k * W + l] = l < w ? elem(o, (size_t)(l0 + l) * o->ld + (size_t)k) : 0.0f;
    } else {
        for (int k = 0; k < K; k++)
            for (int l = 0; l < W; l++)
                out[(size_t)k * W + l] = l < w ? elem(o, (size_t)k * o->ld + (size_t)(l0 + l)) : 0.0f;
    }
}

#ifdef SEQ_X86
static int has_avx2(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

#define AVX2 __attribute__((target("avx2,fma")))

/* the n <= 8 elements at idx as 8 floats (bf16 widened, which is exact), zero past n; nothing read past n */
AVX2 static inline __m256 load8(const Opnd *o, size_t idx, int n) {
    if (o->bf) {
        const bf16 *p = (const bf16 *)o->p + idx;
        __m128i h;
        if (n == 8) {
            h = _mm_loadu_si128((const __m128i *)p);
        } else if (n == MR) { /* an A tile's row of op(A) = A^T: 12 bytes */
            uint64_t lo;
            uint32_t hi;
            memcpy(&lo, p, 8), memcpy(&hi, p + 4, 4);
            h = _mm_set_epi64x((long long)hi, (long long)lo);
        } else {
            uint16_t t[8] = {0};
            for (int i = 0; i < n; i++) t[i] = p[i];
            h = _mm_loadu_si128((const __m128i *)t);
        }
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    }
    const float *p = (const float *)o->p + idx;
    if (n == 8) return _mm256_loadu_ps(p);
    __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_maskload_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32(n), lane));
}

/* r[i][j] <- r[j][i] */
AVX2 static inline void transpose8(__m256 r[8]) {
    __m256 t[8], u[8];
    for (int i = 0; i < 8; i += 2) t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]), t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44), u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44), u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
    for (int i = 0; i < 4; i++)
        r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20), r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
}

/* the first n lanes of v at d */
AVX2 static inline void store8(float *d, __m256 v, int n) {
    if (n == 8)
        _mm256_storeu_ps(d, v);
    else
        _mm256_maskstore_ps(d, _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)), v);
}

/* pack_scalar's out, 8 lines by 8 elements at a time: read along the lines and transposed in registers, or copied
 * 8 at a time across them */
AVX2 static void pack_avx2(float *out, int W, const Opnd *o, int l0, int w, int K, int by_line) {
    for (int g = 0; g < W; g += 8) {
        int gw = W - g < 8 ? W - g : 8, have = w - g < 0 ? 0 : w - g < gw ? w - g : gw; /* stored, read */
        if (!by_line) {
            for (int k = 0; k < K; k++)
                store8(out + (size_t)k * W + g, have ? load8(o, (size_t)k * o->ld + (size_t)(l0 + g), have)
                                                     : _mm256_setzero_ps(), gw);
            continue;
        }
        for (int k0 = 0; k0 < K; k0 += 8) {
            int kn = K - k0 < 8 ? K - k0 : 8;
            __m256 r[8];
            for (int i = 0; i < 8; i++)
                r[i] = i < have ? load8(o, (size_t)(l0 + g + i) * o->ld + (size_t)k0, kn) : _mm256_setzero_ps();
            transpose8(r);
            for (int i = 0; i < kn; i++) store8(out + (size_t)(k0 + i) * W + g, r[i], gw);
        }
    }
}
#undef AVX2
#endif

typedef void (*PackFn)(float *, int, const Opnd *, int, int, int, int);
static PackFn g_pack; /* pack_avx2 or pack_scalar: chosen with the tiles (choose, below) */

/* ap[K][MR] = op(A)[i0 .. i0 + rows, 0 .. K], zero rows past `rows` */
static void pack_a(float *ap, const Opnd *A, int i0, int rows, int K) { g_pack(ap, MR, A, i0, rows, K, !A->trans); }

/* bp[K][NR] = op(B)[0 .. K, j0 .. j0 + cols], zero columns past `cols` */
static void pack_b(float *bp, const Opnd *B, int j0, int cols, int K) { g_pack(bp, NR, B, j0, cols, K, B->trans); }

/* acc[MR][NR] = the chains over k of one tile, from 0 or (cont) from acc's sums */
static void tile_scalar(int K, const float *ap, const float *bp, float *acc, int cont) {
    for (int i = 0; !cont && i < MR * NR; i++) acc[i] = 0.0f;
    for (int k = 0; k < K; k++)
        for (int r = 0; r < MR; r++)
            for (int c = 0; c < NR; c++)
                acc[r * NR + c] = fmaf(ap[(size_t)k * MR + r], bp[(size_t)k * NR + c], acc[r * NR + c]);
}

#ifdef SEQ_X86
/* named accumulators: an array of them is stored back to the stack every k by GCC 12 */
#define FMA_ROW(r, c0, c1)                                                                                             \
    a = _mm256_broadcast_ss(ap + (r)), c0 = _mm256_fmadd_ps(a, b0, c0), c1 = _mm256_fmadd_ps(a, b1, c1)
#define LOAD(i) (cont ? _mm256_loadu_ps(acc + 8 * (i)) : _mm256_setzero_ps())
__attribute__((target("avx2,fma"))) static void tile_avx2(int K, const float *ap, const float *bp, float *acc,
                                                          int cont) {
    __m256 c00 = LOAD(0), c01 = LOAD(1), c10 = LOAD(2), c11 = LOAD(3), c20 = LOAD(4), c21 = LOAD(5), c30 = LOAD(6),
           c31 = LOAD(7), c40 = LOAD(8), c41 = LOAD(9), c50 = LOAD(10), c51 = LOAD(11), a;
    for (int k = 0; k < K; k++, ap += MR, bp += NR) {
        __m256 b0 = _mm256_loadu_ps(bp), b1 = _mm256_loadu_ps(bp + 8);
        FMA_ROW(0, c00, c01), FMA_ROW(1, c10, c11), FMA_ROW(2, c20, c21);
        FMA_ROW(3, c30, c31), FMA_ROW(4, c40, c41), FMA_ROW(5, c50, c51);
    }
    __m256 out[MR * 2] = {c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51};
    for (int i = 0; i < MR * 2; i++) _mm256_storeu_ps(acc + 8 * i, out[i]);
}
#undef FMA_ROW
#undef LOAD

#endif

typedef void (*TileFn)(int, const float *, const float *, float *, int);

static TileFn g_tile;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void choose(void) { /* PPA_GEMM_SEQ=scalar: the portable loops, as on a CPU without AVX2 (tests run both) */
    const char *e = getenv("PPA_GEMM_SEQ");
    g_tile = tile_scalar, g_pack = pack_scalar;
#ifdef SEQ_X86
    if (!(e && !strcmp(e, "scalar")) && has_avx2()) g_tile = tile_avx2, g_pack = pack_avx2;
#else
    (void)e;
#endif
}

static TileFn tile_fn(void) {
    pthread_once(&g_once, choose);
    return g_tile;
}

const char *gemm_seq_isa(void) { return tile_fn() == tile_scalar ? "scalar" : "avx2"; }

static int max_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

static int thread_id(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

/* C[i0 .. i0 + rows, j0 .. j0 + cols] = acc, or += acc */
static void store(float *C, int ldc, int i0, int rows, int j0, int cols, const float *acc, float beta) {
    for (int r = 0; r < rows; r++) {
        float *c = C + (size_t)(i0 + r) * ldc + j0;
        for (int j = 0; j < cols; j++) c[j] = beta == 0.0f ? acc[r * NR + j] : c[j] + acc[r * NR + j];
    }
}

/* acc = the partial sums of a tile in S [., N] (the padding 0) */
static void load(float *acc, const float *S, int N, int i0, int rows, int j0, int cols) {
    for (int i = 0; i < MR * NR; i++) acc[i] = 0.0f;
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < cols; j++) acc[r * NR + j] = S[(size_t)(i0 + r) * N + j0 + j];
}

/* where a piece of the chains starts and ends: sin (NULL: at 0) and sout (NULL: the last piece, into C) [M, N] */
typedef struct {
    const float *sin;
    float *sout;
} Piece;

/* rows [i0, i0 + mb) of C, their tiles packed in ap; the panels of op(B) packed in ball (all of them), or else each
 * into the thread's part of bps as needed */
static void block(const Opnd *A, const Opnd *B, int i0, int mb, int N, int K, float beta, float *C, int ldc,
                  float *ap, const float *ball, float *bps, TileFn tile, Piece pc) {
    int tiles = (mb + MR - 1) / MR, panels = (N + NR - 1) / NR, team = max_threads();
    /* enough work items for every thread: split the rows when there are few panels */
    int chunks = panels >= 4 * team ? 1 : (4 * team + panels - 1) / panels;
    chunks = chunks > tiles ? tiles : chunks;
    size_t tsz = (size_t)K * MR;
#pragma omp parallel
    {
#pragma omp for schedule(static)
        for (int t = 0; t < tiles; t++) {
            int r = mb - t * MR < MR ? mb - t * MR : MR;
            pack_a(ap + (size_t)t * tsz, A, i0 + t * MR, r, K);
        }
        float *own = ball ? NULL : bps + (size_t)thread_id() * K * NR, acc[MR * NR];
#pragma omp for schedule(static)
        for (int w = 0; w < panels * chunks; w++) {
            int p = w / chunks, ch = w % chunks, j0 = p * NR, cols = N - j0 < NR ? N - j0 : NR;
            int t0 = (int)((long)tiles * ch / chunks), t1 = (int)((long)tiles * (ch + 1) / chunks);
            const float *bp = ball ? ball + (size_t)p * K * NR : own;
            if (!ball) pack_b(own, B, j0, cols, K);
            for (int t = t0; t < t1; t++) {
                int r = mb - t * MR < MR ? mb - t * MR : MR;
                if (pc.sin) load(acc, pc.sin, N, i0 + t * MR, r, j0, cols);
                tile(K, ap + (size_t)t * tsz, bp, acc, pc.sin != NULL);
                if (pc.sout) store(pc.sout, N, i0 + t * MR, r, j0, cols, acc, 0.0f);
                else store(C, ldc, i0 + t * MR, r, j0, cols, acc, beta);
            }
        }
    }
}

/* the packing buffers of a product's pieces, sized for chains of up to K (every piece uses the same blocking) */
typedef struct {
    int once, mb; /* op(B) packed once for all row blocks; rows per block */
    float *ap, *b;
} Bufs;

static Bufs bufs_new(int M, int N, int K) {
    size_t k1 = K > 0 ? (size_t)K : 1, panels = (size_t)(N + NR - 1) / NR;
    Bufs w;
    w.once = panels * NR * k1 <= B_ONCE_FLOATS;
    size_t rows = (w.once ? A_BLOCK_FLOATS : A_BIG_FLOATS) / k1 / MR * MR;
    w.mb = rows < MR ? MR : rows > (size_t)M ? M : (int)rows;
    w.ap = xmalloc(sizeof(float) * (size_t)((w.mb + MR - 1) / MR) * MR * k1);
    w.b = xmalloc(sizeof(float) * (w.once ? panels : (size_t)max_threads()) * NR * k1);
    return w;
}

static void piece(const Opnd *A, const Opnd *B, int M, int N, int K, float beta, float *C, int ldc, Piece pc,
                  const Bufs *w) {
    size_t k1 = K > 0 ? (size_t)K : 1, panels = (size_t)(N + NR - 1) / NR;
    if (w->once) {
#pragma omp parallel for schedule(static)
        for (size_t p = 0; p < panels; p++) {
            int j0 = (int)p * NR;
            pack_b(w->b + p * k1 * NR, B, j0, N - j0 < NR ? N - j0 : NR, K);
        }
    }
    TileFn tile = tile_fn();
    for (int i0 = 0; i0 < M; i0 += w->mb)
        block(A, B, i0, M - i0 < w->mb ? M - i0 : w->mb, N, K, beta, C, ldc, w->ap, w->once ? w->b : NULL, w->b,
              tile, pc);
}

/* o from its k-th element on: A's k runs along its rows unless transposed, B's down its columns unless transposed */
static Opnd from_k(const Opnd *o, int k, int is_b) {
    size_t step = (is_b ? !o->trans : o->trans) ? (size_t)o->ld : 1;
    Opnd r = *o;
    r.p = (const char *)o->p + (size_t)k * step * (o->bf ? sizeof(bf16) : sizeof(float));
    return r;
}

static void run(const Opnd *A, const Opnd *B, int M, int N, int K, float beta, float *C, int ldc) {
    if (M <= 0 || N <= 0) return;
    if (beta != 0.0f && beta != 1.0f) ppa_die(70, "gemm_seq: beta %g (0 or 1 only)", (double)beta);
    tile_fn(); /* the kernels, chosen before any thread packs */
    Bufs w = bufs_new(M, N, K < K_BLOCK ? K : K_BLOCK); /* allocated once: fresh buffers per piece would fault */
    if (K <= K_BLOCK) {
        piece(A, B, M, N, K, beta, C, ldc, (Piece){NULL, NULL}, &w);
    } else {
        float *S = xmalloc(sizeof(float) * (size_t)M * N); /* the chains' partial sums between pieces */
        for (int k0 = 0; k0 < K; k0 += K_BLOCK) {
            Opnd a = from_k(A, k0, 0), b = from_k(B, k0, 1);
            int kc = K - k0 < K_BLOCK ? K - k0 : K_BLOCK;
            piece(&a, &b, M, N, kc, beta, C, ldc, (Piece){k0 ? S : NULL, k0 + kc < K ? S : NULL}, &w);
        }
        free(S);
    }
    free(w.ap), free(w.b);
}

void gemm_seq_f32(int transA, int transB, int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                  float beta, float *C, int ldc) {
    Opnd a = {A, lda, transA, 0}, b = {B, ldb, transB, 0};
    run(&a, &b, M, N, K, beta, C, ldc);
}

void gemm_seq_bf16(int transA, int transB, int M, int N, int K, const bf16 *A, int lda, const bf16 *B, int ldb,
                   float beta, float *C, int ldc) {
    Opnd a = {A, lda, transA, 1}, b = {B, ldb, transB, 1};
    run(&a, &b, M, N, K, beta, C, ldc);
}
