/* sample.c: greedy choice and temperature / top-k / top-p draws (sample.h). */
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

/* The k-th member of c[0..n) in the nucleus order (1 <= k <= n): quickselect
 * on position, median of three as pivot. c is permuted. */
static SampleCand kth(SampleCand *c, int n, int k) {
    int lo = 0, hi = n, want = k - 1;
    while (hi - lo > 1) {
        int mid = lo + (hi - lo) / 2, last = hi - 1;
        if (before(&c[mid], &c[lo])) swap(&c[mid], &c[lo]);
        if (before(&c[last], &c[lo])) swap(&c[last], &c[lo]);
        if (before(&c[mid], &c[last])) swap(&c[mid], &c[last]);
        int m = lo;
        for (int j = lo; j < last; j++)
            if (before(&c[j], &c[last])) swap(&c[m++], &c[j]);
        swap(&c[m], &c[last]);
        if (want == m) return c[m];
        if (want < m) hi = m;
        else lo = m + 1;
    }
    return c[lo];
}

double sample_weights(const float *logits, int V, double temperature, int top_k, double top_p, SampleCand *work) {
    double mx = -INFINITY;
    for (int v = 0; v < V; v++)
        if (!isnan(logits[v]) && logits[v] / temperature > mx) mx = logits[v] / temperature;
    SampleCand *byid = work, *cand = work + V;
    if (!isfinite(mx)) return 0.0;
    double total = 0.0;
    for (int v = 0; v < V; v++) byid[v] = (SampleCand){isnan(logits[v]) ? 0.0 : exp(logits[v] / temperature - mx), v};
    if (top_k > 0 && top_k < V) {
        /* transformers' TopKLogitsWarper: every token below the k-th largest value goes; ties with it stay */
        int n = 0;
        for (int v = 0; v < V; v++) cand[n++] = byid[v];
        double pk = kth(cand, n, top_k).p;
        for (int v = 0; v < V; v++)
            if (byid[v].p < pk) byid[v].p = 0.0;
    }
    for (int v = 0; v < V; v++) total += byid[v].p;
    if (!(top_p < 1.0)) return total;
    /* A token below (1 - top_p) / (V - 1) of the mass cannot be in the
     * nucleus (all of them together hold less than 1 - top_p): only the
     * others are candidates. The largest always is. */
    double cut = V > 1 ? (1.0 - top_p) / (V - 1) * total : 0.0;
    int n = 0;
    for (int v = 0; v < V; v++)
        if (byid[v].p >= cut && byid[v].p > 0.0) cand[n++] = byid[v];
    SampleCand edge = nucleus_edge(cand, n, top_p * total);
    total = 0.0;
    for (int v = 0; v < V; v++) {
        if (before(&edge, &byid[v])) byid[v].p = 0.0;
        total += byid[v].p;
    }
    return total;
}

int sample_token(const float *logits, int V, double temperature, int top_k, double top_p, PpaRng *rng, SampleCand *work) {
    if (!(temperature > 0.0)) return sample_greedy(logits, V);
    double mass = sample_weights(logits, V, temperature, top_k, top_p, work);
    if (!(mass > 0.0)) return sample_greedy(logits, V);
    /* one draw over the ids in id order */
    double u = rng_uniform(rng) * mass, cum = 0.0;
    int last = -1;
    for (int v = 0; v < V; v++) {
        if (work[v].p <= 0.0) continue;
        cum += work[v].p;
        last = v;
        if (u < cum) return v;
    }
    return last; /* u rounded past the total */
}
