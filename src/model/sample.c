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

/* the nucleus order: descending probability, then ascending id (total) */
static int before(const SampleCand *a, const SampleCand *b) { return a->p > b->p || (a->p == b->p && a->id < b->id); }

static void swap(SampleCand *a, SampleCand *b) {
    SampleCand t = *a;
    *a = *b, *b = t;
}

/* The last member of the nucleus of c[0..n): the smallest prefix in the
 * nucleus order whose mass reaches need. Quickselect on mass (expected O(n))
 * rather than a sort: on a flat distribution the nucleus is most of the
 * vocabulary. c is permuted. */
static SampleCand nucleus_edge(SampleCand *c, int n, double need) {
    int lo = 0, hi = n; /* [0, lo) in the nucleus with mass acc < need; the edge is in [lo, hi) */
    double acc = 0.0;
    while (hi - lo > 1) {
        int mid = lo + (hi - lo) / 2, last = hi - 1; /* median of three as pivot, moved to the end */
        if (before(&c[mid], &c[lo])) swap(&c[mid], &c[lo]);
        if (before(&c[last], &c[lo])) swap(&c[last], &c[lo]);
        if (before(&c[mid], &c[last])) swap(&c[mid], &c[last]);
        int m = lo;
        double front = 0.0;
        for (int j = lo; j < last; j++)
            if (before(&c[j], &c[last])) front += c[j].p, swap(&c[m++], &c[j]);
        swap(&c[m], &c[last]); /* c[lo..m) before the pivot c[m], c(m..hi) after */
        if (acc + front >= need) hi = m;
        else if (acc + front + c[m].p >= need) return c[m];
        else acc += front + c[m].p, lo = m + 1;
    }
    return c[lo < n ? lo : n - 1]; /* lo = n only when rounding kept the total below need */
}

/* one draw over the ids in id order, with weights p where keep(id) */
static int draw(const SampleCand *byid, int V, const SampleCand *edge, PpaRng *rng) {
    double mass = 0.0;
    for (int v = 0; v < V; v++)
        if (!edge || !before(edge, &byid[v])) mass += byid[v].p;
    double u = rng_uniform(rng) * mass, cum = 0.0;
    int last = -1;
    for (int v = 0; v < V; v++) {
        if (byid[v].p <= 0.0 || (edge && before(edge, &byid[v]))) continue;
        cum += byid[v].p;
        last = v;
        if (u < cum) return v;
    }
    return last; /* u rounded past the total */
}

int sample_token(const float *logits, int V, double temperature, double top_p, PpaRng *rng, SampleCand *work) {
    if (!(temperature > 0.0)) return sample_greedy(logits, V);
    double mx = -INFINITY;
    for (int v = 0; v < V; v++)
        if (!isnan(logits[v]) && logits[v] / temperature > mx) mx = logits[v] / temperature;
    if (!isfinite(mx)) return sample_greedy(logits, V);
    SampleCand *byid = work, *cand = work + V;
    double total = 0.0;
    for (int v = 0; v < V; v++) {
        double p = isnan(logits[v]) ? 0.0 : exp(logits[v] / temperature - mx);
        byid[v] = (SampleCand){p, v};
        total += p;
    }
    if (!(top_p < 1.0)) return draw(byid, V, NULL, rng);
    /* A token below (1 - top_p) / (V - 1) of the mass cannot be in the
     * nucleus (all of them together hold less than 1 - top_p): only the
     * others are candidates. The largest always is. */
    double cut = V > 1 ? (1.0 - top_p) / (V - 1) * total : 0.0;
    int n = 0;
    for (int v = 0; v < V; v++)
        if (byid[v].p >= cut && byid[v].p > 0.0) cand[n++] = byid[v];
    SampleCand edge = nucleus_edge(cand, n, top_p * total);
    return draw(byid, V, &edge, rng);
}
