/* batch.c: ppa_loss_batch, many lists at once with OpenMP. neural_ndcg lists
 * are grouped by their valid length into tiles of PPA_LANES lists for the
 * vectorised kernel; the other objectives run list by list. Each list's
 * result depends only on its own data, so the output is the same for any
 * thread count and any batch composition. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "losses/internal.h"

/* Per-list float64 copies after preparation (masked, label-sorted). */
typedef struct {
    int B, K;
    double *s, *psi;   /* [B, K], first n[b] entries valid */
    int *idx;          /* [B, K] input position of each prepared entry */
    int *n;            /* [B] */
    PpaStatus *status; /* [B] */
} Prepared;

static void prepare_all(PpaObjective obj, int B, int K, const float *s, const float *psi, const unsigned char *mask,
                        Prepared *p) {
    p->B = B;
    p->K = K;
    p->s = xmalloc(sizeof(double) * (size_t)B * K);
    p->psi = xmalloc(sizeof(double) * (size_t)B * K);
    p->idx = xmalloc(sizeof(int) * (size_t)B * K);
    p->n = xmalloc(sizeof(int) * (size_t)B);
    p->status = xmalloc(sizeof(PpaStatus) * (size_t)B);
    int gain_based = ppa_objective_uses_gain(obj);
#pragma omp parallel for schedule(static)
    for (int b = 0; b < B; b++) {
        size_t off = (size_t)b * K;
        int nv = 0;
        PpaStatus st = PPA_OK;
        for (int i = 0; i < K && st == PPA_OK; i++) {
            double l = psi[off + i];
            if ((mask && !mask[off + i]) || isnan(l)) continue;
            st = item_status(gain_based, s[off + i], l);
            int j = nv++; /* stable insertion by label, descending */
            while (j > 0 && p->psi[off + j - 1] < l) {
                p->psi[off + j] = p->psi[off + j - 1];
                p->s[off + j] = p->s[off + j - 1];
                p->idx[off + j] = p->idx[off + j - 1];
                j--;
            }
            p->psi[off + j] = l;
            p->s[off + j] = s[off + i];
            p->idx[off + j] = i;
        }
        p->n[b] = st == PPA_OK ? nv : 0;
        p->status[b] = st;
    }
}

static void prepared_free(Prepared *p) {
    free(p->s);
    free(p->psi);
    free(p->idx);
    free(p->n);
    free(p->status);
}

/* Lists grouped by valid length (stable), as tiles of up to PPA_LANES. */
typedef struct {
    int *order;   /* [B] list indices grouped by n */
    int *tile_at; /* [n_tiles + 1] start of each tile in order */
    int n_tiles;
} Tiles;

static void make_tiles(const Prepared *p, Tiles *t) {
    int K = p->K;
    int *count = xcalloc((size_t)K + 2, sizeof(int));
    for (int b = 0; b < p->B; b++) count[p->n[b] + 1]++;
    for (int n = 0; n <= K; n++) count[n + 1] += count[n];
    t->order = xmalloc(sizeof(int) * (size_t)(p->B ? p->B : 1));
    for (int b = 0; b < p->B; b++) t->order[count[p->n[b]]++] = b;
    t->tile_at = xmalloc(sizeof(int) * ((size_t)p->B + 1));
    t->n_tiles = 0;
    /* lists with n < 2 sort first and need no tile; after them tiles are contiguous */
    int i = 0;
    while (i < p->B && p->n[t->order[i]] < 2) i++;
    t->tile_at[0] = i;
    while (i < p->B) {
        int n = p->n[t->order[i]], j = i;
        while (j < p->B && j - i < PPA_LANES && p->n[t->order[j]] == n) j++;
        t->tile_at[++t->n_tiles] = i = j;
    }
    free(count);
}

static void neural_batch(const PpaLossOptions *o, const Prepared *p, double *loss, double *grad) {
    Tiles t;
    make_tiles(p, &t);
    int K = p->K;
#pragma omp parallel
    {
        NeuralWork *w = neural_work_new(K, o->sinkhorn_iters);
        PpaLanes *buf = NULL;
        if (posix_memalign((void **)&buf, 64, sizeof(PpaLanes) * 3 * (size_t)K)) ppa_die(1, "out of memory");
        PpaLanes *sl = buf, *gl = buf + K, *dl = buf + 2 * K;
        double *disc = xmalloc(sizeof(double) * (size_t)K);
        int iters[PPA_LANES];
#pragma omp for schedule(dynamic, 16)
        for (int ti = 0; ti < t.n_tiles; ti++) {
            int first = t.tile_at[ti], count = t.tile_at[ti + 1] - first;
            int n = p->n[t.order[first]], k = ndcg_cutoff(o->k, n);
            for (int r = 0; r < n; r++) disc[r] = r < k ? ndcg_discount(o->discount, r + 1) : 0.0;
            PpaLanes inv, ls;
            for (int l = 0; l < PPA_LANES; l++) {
                int b = t.order[first + (l < count ? l : 0)]; /* spare lanes repeat lane 0 */
                const double *s = p->s + (size_t)b * K, *psi = p->psi + (size_t)b * K;
                for (int i = 0; i < n; i++) {
                    sl[i][l] = s[i];
                    gl[i][l] = ndcg_gain(o->gain, psi[i]);
                }
                double idcg = ndcg_ideal(o->gain, o->discount, o->k, n, psi);
                inv[l] = idcg > 0.0 ? 1.0 / (idcg + 1e-10) : 0.0;
            }
            neural_ndcg_lanes(o, n, sl, gl, inv, disc, &ls, dl, iters, w);
            for (int l = 0; l < count; l++) {
                int b = t.order[first + l];
                loss[b] = ls[l];
                for (int i = 0; i < n; i++) grad[(size_t)b * K + i] = dl[i][l];
            }
        }
        neural_work_free(w);
        free(buf);
        free(disc);
    }
    free(t.order);
    free(t.tile_at);
}

static void generic_batch(PpaObjective obj, const PpaLossOptions *o, const Prepared *p, double *loss, double *grad) {
    int K = p->K;
#pragma omp parallel
    {
        double *work = xmalloc(sizeof(double) * ((size_t)K * K + 2 * (size_t)K));
        int *order = xmalloc(sizeof(int) * (size_t)K), iters;
#pragma omp for schedule(dynamic, 256)
        for (int b = 0; b < p->B; b++) {
            if (p->n[b] < 2) continue;
            size_t off = (size_t)b * K;
            loss[b] = loss_prepared(obj, o, p->n[b], p->s + off, p->psi + off, grad + off, &iters, work, order);
        }
        free(work);
        free(order);
    }
}

PpaStatus ppa_loss_batch(PpaObjective obj, const PpaLossOptions *o, int B, int K, const float *s, const float *psi,
                         const unsigned char *mask, float *loss, float *grad, double *mean_loss, int *bad_list) {
    Prepared p;
    prepare_all(obj, B, K, s, psi, mask, &p);
    if (bad_list) *bad_list = -1;
    for (int b = 0; b < B; b++)
        if (p.status[b] != PPA_OK) {
            PpaStatus st = p.status[b];
            if (bad_list) *bad_list = b;
            prepared_free(&p);
            return st;
        }
    double *dl = xcalloc((size_t)B, sizeof(double));
    double *dg = xcalloc((size_t)B * K, sizeof(double));
    if (obj == PPA_NEURAL_NDCG) neural_batch(o, &p, dl, dg);
    else generic_batch(obj, o, &p, dl, dg);

    double sum = 0.0;
    for (int b = 0; b < B; b++) {
        sum += dl[b];
        if (loss) loss[b] = (float)dl[b];
        if (grad) {
            float *gb = grad + (size_t)b * K;
            memset(gb, 0, sizeof(float) * (size_t)K);
            for (int i = 0; i < p.n[b]; i++) gb[p.idx[(size_t)b * K + i]] = (float)dg[(size_t)b * K + i];
        }
    }
    if (mean_loss) *mean_loss = B ? sum / B : 0.0;
    free(dl);
    free(dg);
    prepared_free(&p);
    return PPA_OK;
}
