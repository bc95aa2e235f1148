/* internal.h: per-objective kernels behind ppa_loss_list / ppa_loss_batch.
 *
 * Every function here takes one *prepared* list: masked items removed and the
 * rest sorted by label, descending, stably. s, psi: [n] (n >= 2); g: [n] is
 * overwritten with d loss / d s. They return the loss. Options are already
 * range-checked. Scratch memory comes from the caller (work: doubles, order:
 * ints), so no kernel allocates. */
#ifndef PPA_LOSSES_INTERNAL_H
#define PPA_LOSSES_INTERNAL_H

#include <math.h>

#include "ppa/losses.h"

/* log(1 + e^x) and the logistic function, stable for any finite x */
static inline double softplus(double x) { return (x > 0 ? x : 0.0) + log1p(exp(-fabs(x))); }
static inline double sigmoid(double x) {
    double e = exp(-fabs(x));
    return x >= 0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
}
/* softplus(x) and, in *sig, its derivative sigmoid(x), from one exp */
static inline double softplus_sigmoid(double x, double *sig) {
    double e = exp(-fabs(x));
    *sig = x >= 0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
    return (x > 0 ? x : 0.0) + log1p(e);
}

/* Status of one valid (unmasked) item. */
static inline PpaStatus item_status(int gain_based, double s, double psi) {
    if (!isfinite(psi)) return PPA_ERR_NONFINITE_LABEL;
    if (!isfinite(s)) return PPA_ERR_NONFINITE_SCORE;
    if (gain_based && psi < 0) return PPA_ERR_NEGATIVE_LABEL;
    if (gain_based && psi > PPA_MAX_GAIN_LABEL) return PPA_ERR_LABEL_TOO_LARGE;
    return PPA_OK;
}

/* The n x n scratch (in doubles) approx_ndcg needs for lists of up to n
 * valid items, capped at the longest list it accepts; 0 for the others. */
static inline long approx_square(PpaObjective obj, int n) {
    long m = n < PPA_NEURAL_MAX_ITEMS ? n : PPA_NEURAL_MAX_ITEMS;
    return obj == PPA_APPROX_NDCG ? m * m : 0;
}

/* ---- gains, discounts, ideal DCG (ndcg.c) ---- */
double ndcg_gain(PpaGain gain, double psi);
double ndcg_discount(PpaDiscount d, int r); /* r = 1-based rank position */
int ndcg_cutoff(int k, int n);              /* k capped at n; 0 means n */
/* IDCG@k of labels sorted descending. */
double ndcg_ideal(PpaGain gain, PpaDiscount d, int k, int n, const double *psi_sorted);
/* idx[p] = the item at position p when ordered by score, descending, stably
 * (tied scores keep their order in s). */
void order_by_score(int n, const double *s, int *idx);
double ndcg_metric(const PpaLossOptions *o, int n, const double *s, const double *psi_sorted, int *idx /*[n]*/);
double pair_accuracy(int n, const double *s, const double *psi);
double kendall_tau_b(int n, const double *s, const double *psi);

/* ---- objectives ---- */
double obj_approx_ndcg(const PpaLossOptions *o, int n, const double *s, const double *psi, double *g,
                       double *work /*[n * n + 2n]*/);
double obj_lambda(const PpaLossOptions *o, int n, const double *s, const double *psi, double *g, double *work /*[2n]*/,
                  int *order /*[n]*/);
double obj_ranknet(int n, const double *s, const double *psi, double *g);
double obj_pairwise(PpaObjective obj, const PpaLossOptions *o, int n, const double *s, const double *psi, double *g);
double obj_listmle(const PpaLossOptions *o, int n, const double *s, double *g, double *work /*[n]*/);
double obj_listnet(int n, const double *s, const double *psi, double *g, double *work /*[2n]*/);

/* Any objective on a prepared list; work: [n * n + 2n] doubles, order: [n] ints.
 * *iters receives the Sinkhorn iterations (neural_ndcg), else 0. */
double loss_prepared(PpaObjective obj, const PpaLossOptions *o, int n, const double *s, const double *psi, double *g,
                     int *iters, double *work, int *order);

/* ---- neural_ndcg, vectorised across lists (neural_ndcg.c) ----
 * Lane l of every PpaLanes value belongs to list l of a tile; the lists of a
 * tile share n and the options. Lanes never mix: a list's result does not
 * depend on the other lists of its tile. */
#define PPA_LANES 8
typedef double PpaLanes __attribute__((vector_size(8 * PPA_LANES)));

typedef struct NeuralWork NeuralWork;
NeuralWork *neural_work_new(int n_max, int iters_max);
void neural_work_free(NeuralWork *w);

/* s, psi: [n] lanes, each lane's labels sorted descending. Writes loss,
 * grad: [n] and iters[PPA_LANES], the Sinkhorn iterations each lane ran. */
void neural_ndcg_lanes(const PpaLossOptions *o, int n, const PpaLanes *s, const PpaLanes *psi, PpaLanes *loss,
                       PpaLanes *grad, int *iters, NeuralWork *w);

/* One list through the lane kernel (replicated into every lane). */
double neural_ndcg_one(const PpaLossOptions *o, int n, const double *s, const double *psi, double *g, int *iters);

/* The relaxed permutation matrix P [n, n] (rows = ranks, columns = items)
 * that neural_ndcg uses for s: NeuralSort, then Sinkhorn if o->sinkhorn.
 * For tests and the paper's worked examples. */
void neural_ndcg_matrix(const PpaLossOptions *o, int n, const double *s, double *P, int *iters);

#endif
