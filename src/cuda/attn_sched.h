/* attn_sched.h: the fused attention's plan as host arrays (cuda/attention.h's PcAttnPlan before its upload), plain
 * C, so that the CUDA module (attention_plan.cu uploads it) and its CPU stand-in (tests/cuda/mock, which executes the
 * same work items and sums their partial results in the same order) follow one work split, tested on any machine
 * (tests/test_attn_sched.c).
 *
 * Per token t: the keys it sees, [pa, pb) (its prompt, clipped by the window) and [sa, t] (its own segment).
 * Per block of 64 (the backward's and one forward tiling's) or 128 queries: its merged key intervals, and an order of
 * the blocks by the keys they see, most first (the grids run the heaviest blocks first, so that none ends a kernel
 * alone). Per block of 64 keys: the 64-query blocks that see it, ascending.
 *
 * The backward's dk and dv are computed by items, one thread block each for each query head: an item is one key
 * block and a run of consecutive query blocks of its list (a chunk), a long list (a shared prompt's key block is seen
 * by every response of its list) cut into near-equal chunks of at most `chunk` blocks, so that no item carries many
 * times another's work. Items are ordered by their query blocks, most first. Each (item, head) writes its partial
 * sums to a slot of its own; a second pass adds, for each key block and kv head, its heads' slots (heads ascending)
 * and each head's items (in list order): a fixed order, no atomics, the same bits on every run. */
#ifndef PPA_CUDA_ATTN_SCHED_H
#define PPA_CUDA_ATTN_SCHED_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { ATTN_QB = 64, ATTN_KB = 64, ATTN_QB2 = 128, ATTN_EXTRA_ITEMS = 128 };

typedef struct {
    int T, window;
    long long pairs;      /* visible (query, key) pairs of one head */
    int *mask;            /* [T][4]: pa, pb, sa, 0 */
    int nq64, nq128, nk64;
    int *off64, *off128;  /* [nq + 1]: each query block's intervals in iv64 / iv128 */
    int *iv64, *iv128;    /* [n][2]: the intervals [x, y), sorted, disjoint, not adjacent */
    int niv64, niv128;
    int *qord64, *qord128; /* [nq]: the query blocks by the keys they see, most first (ties: the lower block first) */
    int *koff, *klist;    /* [nk64 + 1], [koff[nk64]]: the 64-query blocks seeing each 64-key block, ascending */
    int chunk;            /* an item's most query blocks: max(4, ceil(koff[nk64] / ATTN_EXTRA_ITEMS)) */
    int nitems;           /* <= nk64 + ATTN_EXTRA_ITEMS (the chunk's rule) */
    int *items;           /* [nitems][3]: key block, first index into klist, count; the most query blocks first */
    int *kioff, *kitems;  /* [nk64 + 1], [nitems]: each key block's items (indices into items) in list order */
} AttnSched;

/* Builds s from HOST arrays pstart, plen, sstart [T] (as llama.c's batch_new makes them) and window (0: none; W:
 * a token sees at most W positions of its sequence, itself included; attention.h). Checks 0 <= pstart, 0 <= plen,
 * pstart + plen <= T, 0 <= sstart <= t. 0, or -1 with why (and nothing to free). */
int attn_sched_build(AttnSched *s, const int *pstart, const int *plen, const int *sstart, int T, int window,
                     char *why, size_t whylen);
void attn_sched_free(AttnSched *s);

/* The backward's scratch for T tokens, whatever their mask: D [T, NH] float32 (rounded up to 64 floats), then the
 * partial dk and the partial dv, each [(nk64 + ATTN_EXTRA_ITEMS) NH][ATTN_KB][HS] float32; the slot of item i and
 * head h is i NH + h. */
size_t attn_work_bytes(int T, int NH, int HS);
size_t attn_work_d_floats(int T, int NH);
size_t attn_work_partial_floats(int T, int NH, int HS); /* each of the two partial arrays */

/* The kernels' tile tests, here so that the host can check them (tests/test_attn_sched.c): token t with key ranges
 * [pa, pb) and [sa, t] sees some key of [a, b) (exactly: a tile or a warp's keys no row sees are skipped), or every
 * key of it (a sufficient test: a range that needs both of t's ranges is not called whole, and takes the masked path,
 * which is right, only slower). a < b. */
#ifdef __CUDACC__
#define ATTN_HD static __host__ __device__ __forceinline__
#else
#define ATTN_HD static inline
#endif
ATTN_HD int attn_sees_some(int pa, int pb, int sa, int t, int a, int b) {
    return (a > pa ? a : pa) < (b < pb ? b : pb) || (a > sa ? a : sa) <= (b - 1 < t ? b - 1 : t);
}
ATTN_HD int attn_sees_all(int pa, int pb, int sa, int t, int a, int b) {
    return (a >= pa && b <= pb) || (a >= sa && b - 1 <= t);
}

#ifdef __cplusplus
}
#endif

#endif
