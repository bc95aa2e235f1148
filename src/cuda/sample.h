/* sample.h: the next token of n sequences drawn on the device from their logits (a decode step's last kernel, so
 * that only the ids go back to the host), with model/sample.h's definitions: greedy (temperature 0: the lowest id
 * of the largest logit, NaN never wins), else softmax(logits / T) restricted to the top-k ids (ties with the k-th
 * all kept), then to the top-p nucleus of those (the smallest set of most likely ids, ties by lower id, whose
 * weight reaches top_p of the kept total), and one draw walking the kept ids in id order.
 *
 * The draw of row r is a pure function of its logits, keys[r] and steps[r] (a counter-based generator: no state,
 * nothing shared between rows), so a sequence's tokens do not depend on the batch it is in. The weights are
 * float32 (w = exp(l / T - max)) and their sums float32 in a fixed order (one block a row: reruns give the same
 * bits); the host's sample_token sums in double, so the two may part where a draw or the nucleus's edge falls
 * within float32 rounding of a boundary: this is the fast mode, checked against the host's weights by a
 * chi-square test (tests/cuda/t_sample.c), and the host sampler stays the exact one. */
#ifndef PPA_CUDA_SAMPLE_H
#define PPA_CUDA_SAMPLE_H

#include "cuda/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* bytes of device work memory pc_sample needs for n draws from rows of V logits */
size_t pc_sample_work(int n, int V);

/* ids [n] (device, written): draw r's token from logits row rows[r] (rows NULL: row r) of logits [*, V] (float32,
 * rows ld apart; several draws may share a row: a prompt's K first tokens); keys [n] (device): each sequence's
 * stream; steps [n] (device): its step; temps [n] (device): each draw's temperature, or NULL: s.temperature for
 * all. 0, or -1 with pc_error(). */
int pc_sample(int *ids, const float *logits, int ld, const int *rows, int n, int V, const uint64_t *keys,
              const int *steps, const float *temps, PcSampling s, void *work);

/* logits[rows[r], banned[b]] = -inf for r < n, b < n_banned (rows NULL: row r; ids outside [0, V) ignored): tokens
 * never drawn (device arrays) */
int pc_logits_ban(float *logits, int ld, const int *rows, int n, int V, const int *banned, int n_banned);

/* the uniform draw in [0, 1) of (key, step), 53 bits, as the kernel takes it (for the host's twin and tests) */
#ifdef __CUDACC__
__host__ __device__
#endif
static inline double draw_uniform(uint64_t key, uint64_t step) {
    uint64_t z = key + 0x9e3779b97f4a7c15ULL * (step + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1p-53;
}

#ifdef __cplusplus
}
#endif

#endif
