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

/* Each list's valid items in label order, as input positions. */
typedef struct {
    int B, K;
    int *idx;          /* [B, K] input position of each prepared entry; first n[b] valid */
    int *n;            /* [B] */
    PpaStatus *status; /* [B] */
} Prepared;

static void prepare_all(PpaObjective obj, int B, int K, const float *s, const float *psi, const unsigned char *mask,
                        Prepared *p) {
    p->B = B;
    p->K = K;
    p->idx = xmalloc(sizeof(int) * (size_t)B * K);
    p->n = xmalloc(sizeof(int) * (size_t)B);
    p->status = xmalloc(sizeof(PpaStatus) * (size_t)B);
    int gain_based = ppa_objective_uses_gain(obj);
#pragma omp parallel for schedule(static)
    for (int b = 0; b < B; b++) {
        const float *sb = s + (size_t)b * K, *pb = psi + (size_t)b * K;
        const unsigned char *mb = mask ? mask + (size_t)b * K : NULL;
        int *idx = p->idx + (size_t)b * K, nv = 0;
        PpaStatus st = PPA_OK;
        for (int i = 0; i < K && st == PPA_OK; i++) {
            float l = pb[i];
            if ((mb && !mb[i]) || isnan(l)) continue;
            st = item_status(gain_based, sb[i], l);
            int j = nv++; /* stable insertion by label, descending */
            while (j > 0 && pb[idx[j - 1]] < l) {
                idx[j] = idx[j - 1];
                j--;
            }
            idx[j] = i;
        }
        if (st == PPA_OK && nv > ppa_objective_max_items(obj)) st = PPA_ERR_LIST_TOO_LONG;
        p->n[b] = st == PPA_OK ? nv : 0;
        p->status[b] = st;
    }
}

/* List b's prepared scores and labels as float64. */
static void gather(const Prepared *p, const float *s, const float *psi, int b, double *ds, double *dpsi) {
    const int *idx = p->idx + (size_t)b * p->K;
    for (int i = 0; i < p->n[b]; i++) {
        ds[i] = s[(size_t)b * p->K + idx[i]];
        dpsi[i] = psi[(size_t)b * p->K + idx[i]];
    }
}

static void prepared_free(Prepared *p) {
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

static void neural_batch(const PpaLossOptions *o, const Prepared *p, const float *s, const float *psi, double *loss,
                         double *grad) {
    Tiles t;
    make_tiles(p, &t);
    int K = p->K;
#pragma omp parallel
    {
        NeuralWork *w = neural_work_new(K, o->sinkhorn_iters);
        PpaLanes *buf = NULL;
        if (posix_memalign((void **)&buf, 64, sizeof(PpaLanes) * 3 * (size_t)K)) ppa_die(1, "out of memory");
        PpaLanes *sl = buf, *pl = buf + K, *dl = buf + 2 * K;
        double *ds = xmalloc(sizeof(double) * 2 * (size_t)K), *dpsi = ds + K;
        int iters[PPA_LANES];
#pragma omp for schedule(dynamic, 16)
        for (int ti = 0; ti < t.n_tiles; ti++) {
            int first = t.tile_at[ti], count = t.tile_at[ti + 1] - first, n = p->n[t.order[first]];
            PpaLanes ls;
            for (int l = 0; l < PPA_LANES; l++) {
                gather(p, s, psi, t.order[first + (l < count ? l : 0)], ds, dpsi); /* spare lanes repeat lane 0 */
                for (int i = 0; i < n; i++) {
                    sl[i][l] = ds[i];
                    pl[i][l] = dpsi[i];
                }
            }
            neural_ndcg_lanes(o, n, sl, pl, &ls, dl, iters, w);
            for (int l = 0; l < count; l++) {
                int b = t.order[first + l];
                loss[b] = ls[l];
                for (int i = 0; i < n; i++) grad[(size_t)b * K + i] = dl[i][l];
            }
        }
        neural_work_free(w);
        free(buf);
        free(ds);
    }
    free(t.order);
    free(t.tile_at);
}

static void generic_batch(PpaObjective obj, const PpaLossOptions *o, const Prepared *p, const float *s,
                          const float *psi, double *loss, double *grad) {
    int K = p->K;
#pragma omp parallel
    {
        size_t sq = (size_t)approx_square(obj, K); /* lists past the limit were refused in prepare_all */
        double *work = xmalloc(sizeof(double) * (sq + 4 * (size_t)K)), *ds = work + sq + 2 * K;
        double *dpsi = ds + K;
        int *order = xmalloc(sizeof(int) * (size_t)K), iters;
#pragma omp for schedule(dynamic, 256)
        for (int b = 0; b < p->B; b++) {
            if (p->n[b] < 2) continue;
            gather(p, s, psi, b, ds, dpsi);
            size_t off = (size_t)b * K;
            loss[b] = loss_prepared(obj, o, p->n[b], ds, dpsi, grad + off, &iters, work, order);
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
    if (obj == PPA_NEURAL_NDCG) neural_batch(o, &p, s, psi, dl, dg);
    else generic_batch(obj, o, &p, s, psi, dl, dg);

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
