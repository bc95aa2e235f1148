/* t_sample.c: pc_sample (the next token drawn on the device, cuda/sample.h) against model/sample.c, the exact
 * sampler:
 *  - greedy (temperature 0, and a row with no number): sample_greedy's id exactly, on rows with ties, NaN, -inf;
 *  - support: every draw is an id sample_weights keeps (top-k keeping ties, the top-p nucleus with its tie rule);
 *  - distribution: N draws of one row under N distinct keys against sample_weights' probabilities, by a chi-square
 *    test at significance 1e-6 (Wilson-Hilferty's critical value). The keys are fixed, so the outcome is too. The
 *    settings keep every top-k boundary and nucleus edge at least 1e-3 of the mass from a rounding's reach (checked
 *    here), so that float32 weights choose the host's sets;
 *  - on random rows (logits on a grid of 1/64): greedy as above, every draw inside the host's kept ids (the nucleus
 *    of top_p + 1e-3: a random edge may fall within float32 rounding of top_p), and a row's id alone = the same
 *    row in a batch of other rows (no state shared between rows);
 *  - draws through a row map (several draws from one row, as a prompt's K first tokens) = the same rows repeated;
 *    per-draw temperatures = each draw alone at its temperature; banned ids (pc_logits_ban) never drawn, and greedy
 *    then sample_greedy's of the row with them at -inf;
 *  - (not --small) a vocabulary of 151,936: greedy and support. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/sample.h"
#include "families.h"
#include "harness.h"
#include "model/sample.h"

/* draws of n rows (logits [n_rows, V], rows [n] or NULL: row r; temps [n] or NULL); ids [n] */
static int draw_map(int *ids, const float *logits, int n_rows, const int *rows, int n, int V, const uint64_t *keys,
                    const int *steps, const float *temps, PcSampling s) {
    float *dl = d_clone(logits, sizeof(float) * (size_t)n_rows * V), *dt = temps ? d_clone(temps, sizeof(float) * n) : NULL;
    uint64_t *dk = d_clone(keys, sizeof(uint64_t) * (size_t)n);
    int *ds = d_clone(steps, sizeof(int) * (size_t)n), *di = d_alloc(sizeof(int) * (size_t)n);
    int *dr = rows ? d_clone(rows, sizeof(int) * (size_t)n) : NULL;
    void *work = d_alloc(pc_sample_work(n, V));
    int rc = pc_sample(di, dl, V, dr, n, V, dk, ds, dt, s, work);
    if (!rc) d_down(ids, di, sizeof(int) * (size_t)n);
    d_free(dl), d_free(dk), d_free(ds), d_free(di), d_free(work), d_free(dr), d_free(dt);
    return rc;
}
static int draw(int *ids, const float *logits, int n, int V, const uint64_t *keys, const int *steps, PcSampling s) {
    return draw_map(ids, logits, n, NULL, n, V, keys, steps, NULL, s);
}

static uint64_t key_of(int i) { return 0x5eed0000ULL * 2654435761ULL + (uint64_t)i * 0x9e3779b97f4a7c15ULL; }

/* the host's kept probabilities of one row: p [V] (0 outside), their count */
static int host_probs(const float *l, int V, PcSampling s, double *p) {
    SampleCand *work = h_malloc(sizeof(SampleCand) * 2 * (size_t)V);
    double total = sample_weights(l, V, (double)s.temperature, s.top_k, (double)s.top_p, work);
    int kept = 0;
    for (int v = 0; v < V; v++) p[v] = total > 0 ? work[v].p / total : 0.0, kept += p[v] > 0;
    free(work);
    return kept;
}

/* the smallest distance of the setting's top-k boundary and nucleus edge from a rounding's reach, as a share of
 * the mass: the k-th and (k+1)-th weights apart, and the nucleus's cumulative mass before and at its edge apart
 * from top_p */
static double margin(const float *l, int V, PcSampling s) {
    double *w = h_malloc(sizeof(double) * V), mx = -INFINITY, m = 1.0;
    for (int v = 0; v < V; v++) mx = fmax(mx, l[v] / (double)s.temperature);
    for (int v = 0; v < V; v++) w[v] = exp(l[v] / (double)s.temperature - mx);
    /* sorted descending */
    for (int i = 1; i < V; i++)
        for (int j = i; j > 0 && w[j] > w[j - 1]; j--) {
            double t = w[j];
            w[j] = w[j - 1], w[j - 1] = t;
        }
    int k = s.top_k > 0 && s.top_k < V ? s.top_k : V;
    while (k < V && w[k] == w[k - 1]) k++; /* ties stay */
    if (k < V) m = fmin(m, (w[k - 1] - w[k]) / w[0]);
    if (s.top_p < 1.0f) {
        double tot = 0.0, cum = 0.0;
        for (int i = 0; i < k; i++) tot += w[i];
        for (int i = 0; i < k; i++) {
            double before = cum / tot;
            cum += w[i];
            if (cum / tot >= s.top_p) {
                m = fmin(m, fmin(fabs(before - s.top_p), fabs(cum / tot - s.top_p)));
                break;
            }
        }
    }
    free(w);
    return m;
}

static void dist_case(const char *name, const float *row, int V, PcSampling s, int N) {
    char shape[96];
    snprintf(shape, sizeof shape, "V=%d T=%g k=%d p=%g N=%d", V, s.temperature, s.top_k, s.top_p, N);
    double mg = margin(row, V, s);
    H_CHECK(mg >= 1e-3, "sample %s: the setting's margin %.3g is below 1e-3 (the test's own choice)", name, mg);
    float *l = h_malloc(sizeof(float) * (size_t)N * V);
    uint64_t *keys = h_malloc(sizeof(uint64_t) * N);
    int *steps = h_malloc(sizeof(int) * N), *ids = h_malloc(sizeof(int) * N), *ids2 = h_malloc(sizeof(int) * N);
    for (int i = 0; i < N; i++) memcpy(l + (size_t)i * V, row, sizeof(float) * V), keys[i] = key_of(i), steps[i] = 7;
    H_TRY(draw(ids, l, N, V, keys, steps, s));
    int *zero = h_malloc(sizeof(int) * N);
    for (int i = 0; i < N; i++) zero[i] = 0;
    H_TRY(draw_map(ids2, row, 1, zero, N, V, keys, steps, NULL, s)); /* one row, N draws through the map */
    free(zero);
    double *p = h_malloc(sizeof(double) * V), *obs = h_malloc(sizeof(double) * V);
    int kept = host_probs(row, V, s, p), outside = 0;
    for (int v = 0; v < V; v++) obs[v] = 0;
    for (int i = 0; i < N; i++) {
        if (ids[i] < 0 || ids[i] >= V || p[ids[i]] == 0.0) outside++;
        else obs[ids[i]]++;
    }
    double chi = 0.0;
    for (int v = 0; v < V; v++)
        if (p[v] > 0) chi += (obs[v] - N * p[v]) * (obs[v] - N * p[v]) / (N * p[v]);
    int df = kept - 1;
    double z = 4.7534, crit = df > 0 ? df * pow(1.0 - 2.0 / (9.0 * df) + z * sqrt(2.0 / (9.0 * df)), 3.0) : 0.0;
    H_CHECK(outside == 0, "sample %s %s: %d draws outside the host's kept ids", name, shape, outside);
    H_CHECK(chi <= crit, "sample %s %s: chi-square %.2f over %d degrees of freedom, above %.2f (significance 1e-6)",
            name, shape, chi, df, crit);
    H_CHECK(!memcmp(ids, ids2, sizeof(int) * N), "sample %s %s: N draws from one row through the map differ from the "
            "row repeated N times", name, shape);
    char kernel[48];
    snprintf(kernel, sizeof kernel, "sample %s", name);
    Cmp c = {chi, crit, -1, chi <= crit && outside == 0, 0};
    h_row(kernel, shape, &c, 0, 0, "");
    free(l), free(keys), free(steps), free(ids), free(ids2), free(p), free(obs);
}

/* greedy, support and batch independence on random rows of V */
static void rows_case(int n, int V) {
    char shape[64];
    snprintf(shape, sizeof shape, "n=%d V=%d", n, V);
    float *l = h_malloc(sizeof(float) * (size_t)n * V);
    uint64_t *keys = h_malloc(sizeof(uint64_t) * n);
    int *steps = h_malloc(sizeof(int) * n), *ids = h_malloc(sizeof(int) * n), *one = h_malloc(sizeof(int));
    /* logits on a grid of 1/64: equal ones tie exactly on both sides, others are 1.6% of weight apart, far from
     * float32 rounding; the nucleus's edge may still fall within rounding of top_p, so the support is checked
     * against the nucleus of top_p + 1e-3 (the distribution test holds the exact rule) */
    for (size_t i = 0; i < (size_t)n * V; i++) l[i] = roundf((float)(6.0 * h_unit() - 3.0) * 64.0f) / 64.0f;
    for (int r = 0; r < n; r++) {
        keys[r] = key_of(1000 + r), steps[r] = r % 5;
        float *row = l + (size_t)r * V;
        int a = h_randint(V), b = h_randint(V);
        row[a] = row[b] = 9.0f; /* a tie at the top */
        if (r % 3 == 1) row[h_randint(V)] = NAN;
        if (r % 3 == 2) row[h_randint(V)] = -INFINITY;
    }
    for (int r = 0; r < 4 && r < n; r++) /* rows with no number: greedy's lowest id of -inf, or the last of NaN */
        for (int v = 0; v < V; v++) l[(size_t)r * V + v] = r % 2 ? NAN : -INFINITY;
    PcSampling greedy = {0.0f, 0, 1.0f};
    PcSampling mixed[] = {{1.0f, 0, 1.0f}, {0.8f, 40, 1.0f}, {1.2f, 0, 0.9f}, {1.0f, 50, 0.7f}};
    H_TRY(draw(ids, l, n, V, keys, steps, greedy));
    int bad = 0;
    for (int r = 0; r < n; r++) bad += ids[r] != sample_greedy(l + (size_t)r * V, V);
    H_CHECK(bad == 0, "sample greedy %s: %d rows other than sample_greedy's id", shape, bad);
    double *p = h_malloc(sizeof(double) * V);
    for (size_t k = 0; k < sizeof mixed / sizeof mixed[0]; k++) {
        H_TRY(draw(ids, l, n, V, keys, steps, mixed[k]));
        int out = 0, alone_bad = 0;
        PcSampling wide = mixed[k];
        wide.top_p = wide.top_p < 1.0f ? fminf(1.0f, wide.top_p + 1e-3f) : wide.top_p;
        for (int r = 0; r < n; r++) {
            const float *row = l + (size_t)r * V;
            if (host_probs(row, V, wide, p) == 0) out += ids[r] != sample_greedy(row, V);
            else out += ids[r] < 0 || ids[r] >= V || p[ids[r]] == 0.0;
        }
        for (int r = 4; r < n; r += n / 4 > 1 ? n / 4 : 1) { /* alone = in the batch */
            H_TRY(draw(one, l + (size_t)r * V, 1, V, keys + r, steps + r, mixed[k]));
            alone_bad += one[0] != ids[r];
        }
        H_CHECK(out == 0, "sample %s T=%g k=%d p=%g: %d draws outside the host's kept ids", shape,
                mixed[k].temperature, mixed[k].top_k, mixed[k].top_p, out);
        H_CHECK(alone_bad == 0, "sample %s T=%g k=%d p=%g: %d rows draw otherwise alone than in the batch", shape,
                mixed[k].temperature, mixed[k].top_k, mixed[k].top_p, alone_bad);
    }
    /* per-draw temperatures: each draw as alone at its own */
    float *temps = h_malloc(sizeof(float) * n);
    int *ids2 = h_malloc(sizeof(int) * n), temp_bad = 0;
    for (int r = 0; r < n; r++) temps[r] = r % 4 == 0 ? 0.0f : 0.5f + 0.25f * (float)(r % 5);
    H_TRY(draw_map(ids, l, n, NULL, n, V, keys, steps, temps, mixed[3]));
    for (int r = 0; r < n; r++) {
        PcSampling one_s = mixed[3];
        one_s.temperature = temps[r];
        H_TRY(draw(ids2 + r, l + (size_t)r * V, 1, V, keys + r, steps + r, one_s));
        temp_bad += ids2[r] != ids[r];
    }
    H_CHECK(temp_bad == 0, "sample %s: %d draws at their own temperature differ from the same alone", shape, temp_bad);
    /* banned ids: each row's first top-tie id and ids 1, 2, 3, never drawn; greedy is then the host's of the row
     * with them at -inf (pc_logits_ban one row at a time, since the tie's id is the row's own) */
    int ban_bad = 0, *dban = NULL;
    float *lb = h_malloc(sizeof(float) * (size_t)n * V), *dl = d_clone(l, sizeof(float) * (size_t)n * V);
    memcpy(lb, l, sizeof(float) * (size_t)n * V);
    for (int r = 0; r < n; r++) {
        float *row = lb + (size_t)r * V;
        int mine[4] = {0, 1, 2, 3};
        for (int v = 0; v < V; v++)
            if (row[v] == 9.0f) {
                mine[0] = v;
                break;
            }
        for (int b = 0; b < 4; b++) row[mine[b]] = -INFINITY;
        d_free(dban), dban = d_clone(mine, sizeof mine);
        H_TRY(pc_logits_ban(dl + (size_t)r * V, V, NULL, 1, V, dban, 4));
    }
    float *back = h_malloc(sizeof(float) * (size_t)n * V);
    d_down(back, dl, sizeof(float) * (size_t)n * V);
    H_CHECK(!memcmp(back, lb, sizeof(float) * (size_t)n * V), "sample %s: pc_logits_ban's rows differ from the host's "
            "banned rows", shape);
    H_TRY(draw(ids, lb, n, V, keys, steps, greedy));
    for (int r = 0; r < n; r++) ban_bad += ids[r] != sample_greedy(lb + (size_t)r * V, V);
    H_TRY(draw(ids, lb, n, V, keys, steps, mixed[0]));
    for (int r = 0; r < n; r++) {
        const float *row = lb + (size_t)r * V;
        ban_bad += ids[r] >= 0 && ids[r] < V && row[ids[r]] == -INFINITY && sample_greedy(row, V) != ids[r];
    }
    H_CHECK(ban_bad == 0, "sample %s: %d draws took a banned id or missed greedy's", shape, ban_bad);
    h_row("sample rows", shape, NULL, 0, 0, "");
    free(l), free(keys), free(steps), free(ids), free(one), free(p), free(temps), free(ids2), free(lb), free(back);
    d_free(dban), d_free(dl);
}

void t_sample(void) {
    static const float row[12] = {2.0f, 1.0f, 1.0f, 0.5f, 0.0f, -0.3f, -1.0f, -1.0f, -2.0f, 0.7f, 1.5f, -0.5f};
    static const float flat[8] = {1.0f, 1.0f, 1.0f, 1.0f, 0.2f, 0.2f, -1.0f, -3.0f}; /* the nucleus's edge in a tie */
    const int N = h_small ? 20000 : 200000;
    dist_case("every id", row, 12, (PcSampling){1.0f, 0, 1.0f}, N);
    dist_case("top-k 3, its tie kept", row, 12, (PcSampling){0.7f, 3, 1.0f}, N);
    dist_case("top-p", row, 12, (PcSampling){1.3f, 0, 0.8f}, N);
    dist_case("top-k then top-p", row, 12, (PcSampling){1.0f, 6, 0.9f}, N);
    dist_case("edge inside a tie", flat, 8, (PcSampling){1.0f, 0, 0.3f}, N);
    rows_case(64, 1000);
    if (!h_small) rows_case(8, 151936);
}
