/* sample.h: the next token from a row of logits: greedy (temperature 0) or
 * a draw from softmax(logits / T) restricted to the top-p nucleus. Pure
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

/* temperature <= 0: greedy (rng unused). Else softmax(logits / temperature)
 * in double, the nucleus = the smallest set of most likely tokens (ties by
 * lower id first) whose mass reaches top_p (top_p >= 1: every token), and
 * one draw from it (one rng_uniform per call), walking the kept ids in id
 * order. NaN logits count as -inf. work: [2 V], any content. */
int sample_token(const float *logits, int V, double temperature, double top_p, PpaRng *rng, SampleCand *work);

#endif
