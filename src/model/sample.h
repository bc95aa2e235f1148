/* sample.h: the next token from a row of logits: greedy (temperature 0) or
 * a draw from softmax(logits / T) restricted to the top-k tokens, then to
 * the top-p nucleus of those (transformers' order of its warpers). Pure
 * functions of the logits and the caller's random stream. */
#ifndef PPA_SAMPLE_H
#define PPA_SAMPLE_H

#include <stdint.h>

#include "core/rng.h"

/* The random stream of sample j of prompt i: a pure function of
 * (seed, i, j), so samples do not depend on batching or threads. */
void sample_stream(PpaRng *r, uint64_t seed, uint64_t i, uint64_t j);

/* argmax of logits [V], ties to the lowest id (NaN never wins). */
int sample_greedy(const float *logits, int V);

typedef struct {
    double p;
    int id;
} SampleCand;

/* The weights a draw takes (temperature > 0): work[v] = {w_v, v} for every
 * id v in [0, V), w_v = exp(logits[v] / temperature - max) for the kept ids
 * and 0 for the others; returns their sum (0 when no logit is a number).
 * Kept: with top_k in 1..V-1, the ids whose weight is at least the k-th
 * largest (ties with it all stay, as transformers' TopKLogitsWarper keeps
 * them); of those, with top_p < 1, the nucleus: the smallest set of most
 * likely ids (ties by lower id first) whose weight reaches top_p of the
 * kept total. top_k 0 or >= V and top_p >= 1 keep every id. NaN logits
 * count as -inf. work: [2 V], any content. */
double sample_weights(const float *logits, int V, double temperature, int top_k, double top_p, SampleCand *work);

/* temperature <= 0: greedy (rng unused). Else one draw (one rng_uniform per
 * call) from sample_weights, walking the kept ids in id order. */
int sample_token(const float *logits, int V, double temperature, int top_k, double top_p, PpaRng *rng, SampleCand *work);

#endif
