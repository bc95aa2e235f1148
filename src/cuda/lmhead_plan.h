/* lmhead_plan.h: the LM head's chunking and the layouts of its work and kept memory (lmhead.h), plain C, so that the
 * module (lmhead.cu) and its CPU stand-in (tests/cuda/mock) lay them out alike. */
#ifndef PPA_CUDA_LMHEAD_PLAN_H
#define PPA_CUDA_LMHEAD_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "device/pc_types.h"

#define LM_ROWS 16384        /* rows per chunk */
#define LM_LOGITS (1L << 27) /* floats of one logits chunk (512 MB) */
#define LM_VOCAB 8192        /* vocabulary columns per chunk at most: the backward's dx sums at most this many
                              * products before adding them to the previous chunks' (float32 accuracy) */
#define LM_KEEP (1L << 33)   /* bytes of kept probabilities at most (8 GiB: 16,384 targets of a 151,936 vocabulary
                              * keep 5 GB) */

typedef struct {
    int R, Vc, ldl;       /* rows, vocabulary columns per chunk; the logits' row stride */
    float *logits;        /* [R, ldl] */
    uint16_t *dlb;        /* [R, ldl] bf16 d logits (bf16 products) */
    void *xs;             /* [R, H] gathered rows (`wt` elements) */
    float *dxs;           /* [n, H] d xs */
    float *mx, *sum, *lt; /* [R] running max and sum, target logit */
} LmPlan;

/* the kept probabilities: q [n, ldq] bf16, then mc [n, nch] float32 */
typedef struct {
    uint16_t *q;
    float *mc;
    size_t ldq;
    int nch;
} LmKept;

static inline size_t lm_up256(size_t b) { return (b + 255) & ~(size_t)255; }

/* a test hook's rows per chunk: a chunk's rows are a grid dimension */
static inline int lm_hook_rows(int rows) { return rows > 0 ? (rows < 65535 ? rows : 65535) : 0; }

/* the chunking (rows, vocab: the test hooks, 0 automatic) and the work's layout (base NULL: only sizes); its bytes */
static inline size_t lm_plan(LmPlan *p, char *base, int n, int H, int V, PcDtype wt, int rows, int vocab) {
    long R = rows ? rows : LM_ROWS;
    R = n < R ? (n > 0 ? n : 1) : R;
    long Vc = vocab ? vocab : LM_LOGITS / R / 256 * 256;
    Vc = Vc < 256 && !vocab ? 256 : Vc > LM_VOCAB && !vocab ? LM_VOCAB : Vc;
    Vc = Vc > V ? V : Vc;
    p->R = (int)R, p->Vc = (int)Vc, p->ldl = (int)((Vc + 7) / 8 * 8); /* rows 32 bytes apart (16 in bf16) */
    size_t off = 0, e = wt == PC_BF16 ? 2 : 4, nn = (size_t)(n > 0 ? n : 1);
    size_t sz[7] = {(size_t)R * p->ldl * 4, wt == PC_BF16 ? (size_t)R * p->ldl * 2 : 0, (size_t)R * H * e, nn * H * 4,
                    (size_t)R * 4, (size_t)R * 4, (size_t)R * 4};
    void **at[7] = {(void **)&p->logits, (void **)&p->dlb, &p->xs, (void **)&p->dxs, (void **)&p->mx,
                    (void **)&p->sum, (void **)&p->lt};
    for (int i = 0; i < 7; i++) *at[i] = base ? base + off : NULL, off += lm_up256(sz[i]);
    return off;
}

/* the kept probabilities' layout (base NULL: only sizes); their bytes, 0 when none are kept (float32 products, or
 * over LM_KEEP) */
static inline size_t lm_keep_plan(LmKept *k, char *base, int n, int V, PcDtype wt, int rows, int vocab) {
    LmPlan p;
    lm_plan(&p, NULL, n, 1, V, wt, rows, vocab);
    size_t nn = (size_t)(n > 0 ? n : 1);
    k->ldq = (size_t)(V + 7) / 8 * 8, k->nch = (V + p.Vc - 1) / p.Vc;
    size_t qb = lm_up256(nn * k->ldq * 2), total = qb + lm_up256(nn * (size_t)k->nch * 4);
    k->q = base ? (uint16_t *)base : NULL, k->mc = base ? (float *)(base + qb) : NULL;
    return wt == PC_BF16 && total <= (size_t)LM_KEEP ? total : 0;
}

#endif
