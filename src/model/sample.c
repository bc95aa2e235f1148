/* sample.c: greedy choice and temperature / top-p draws (sample.h). */
#include "model/sample.h"

#include <math.h>
#include <stdlib.h>

static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void sample_stream(PpaRng *r, uint64_t seed, uint64_t i, uint64_t j) {
    /* i and j through separate mixing rounds: (i, j) and (j, i) differ */
    rng_seed(r, seed ^ mix64(mix64(i + 0x9e3779b97f4a7c15ULL) + j));
}

int sample_greedy(const float *logits, int V) {
    int best = 0;
    for (int v = 1; v < V; v++)
        if (logits[v] > logits[best] || isnan(logits[best])) best = v;
    return best;
}

/* descending probability, then ascending id: a total order */
static int by_prob(const void *a, const void *b) {
    const SampleCand *x = a, *y = b;
    if (x->p != y->p) return x->p > y->p ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* one draw from cand[0..n) with weights p (total mass): walks in the given order */
static int draw(const SampleCand *cand, int n, double mass, PpaRng *rng) {
    double u = rng_uniform(rng) * mass, cum = 0.0;
    int last = cand[0].id;
    for (int i = 0; i < n; i++) {
        if (cand[i].p <= 0.0) continue;
        cum += cand[i].p;
        last = cand[i].id;
        if (u < cum) return cand[i].id;
    }
    return last; /* u rounded past the total */
}

int sample_token(const float *logits, int V, double temperature, double top_p, PpaRng *rng, SampleCand *work) {
    if (!(temperature > 0.0)) return sample_greedy(logits, V);
    double mx = -INFINITY;
    for (int v = 0; v < V; v++)
        if (!isnan(logits[v]) && logits[v] / temperature > mx) mx = logits[v] / temperature;
    if (!isfinite(mx)) return sample_greedy(logits, V);
    double total = 0.0;
    for (int v = 0; v < V; v++) {
        double p = isnan(logits[v]) ? 0.0 : exp(logits[v] / temperature - mx);
        work[v] = (SampleCand){p, v};
        total += p;
    }
    if (!(top_p < 1.0)) return draw(work, V, total, rng);
    /* A token below (1 - top_p) / (V - 1) of the mass cannot be in the
     * nucleus (all of them together hold less than 1 - top_p), so only the
     * others are sorted. */
    double cut = V > 1 ? (1.0 - top_p) / (V - 1) * total : 0.0;
    int n = 0;
    for (int v = 0; v < V; v++)
        if (work[v].p >= cut && work[v].p > 0.0) work[n++] = work[v];
    qsort(work, (size_t)n, sizeof *work, by_prob);
    double need = top_p * total, kept = 0.0;
    int k = 0;
    while (k < n && (k == 0 || kept < need)) kept += work[k++].p;
    return draw(work, k, kept, rng);
}
