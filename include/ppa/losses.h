/* ppa/losses.h: the objectives library, public API.
 *
 * One list = n items with scores s (implicit rewards, beta already applied),
 * labels psi and an optional validity mask. Every objective returns the loss
 * of the list and d loss / d s for every item. Conventions follow
 * shared/spec/objectives.md:
 *   - masked items (mask[i] == 0 or psi[i] NaN) are removed before the loss,
 *     wherever they sit; their scores are never read and their gradient is 0;
 *   - objectives that depend on order sort the list by label, descending,
 *     stably (ties keep input order), so callers may pass any order;
 *   - sgn(0) = 0, relu'(0) = 0; the Sinkhorn stop test is not differentiated;
 *   - all maths in float64; a list with fewer than 2 valid items has loss 0
 *     and gradient 0 (PpaListResult.n_valid tells the caller).
 * The reduction over lists is the plain mean of per-list losses. */
#ifndef PPA_LOSSES_H
#define PPA_LOSSES_H

#include <stddef.h>

typedef enum {
    PPA_NEURAL_NDCG, /* PPA: NeuralSort + Sinkhorn NDCG; alias "ppa" */
    PPA_APPROX_NDCG,
    PPA_LAMBDA, /* LambdaRank / LiPO-lambda; aliases "lipo", "lambdarank" */
    PPA_RANKNET,
    PPA_DPO_SINGLE_PAIR, /* best with worst */
    PPA_DPO_BPR,         /* best with others */
    PPA_DPO_OVW,         /* others vs worst */
    PPA_DPO_ALL_PAIRS,   /* alias "dpo" */
    PPA_HINGE,           /* SLiC; alias "slic" */
    PPA_LISTMLE,         /* alias "dpo_pl" */
    PPA_LISTNET,
    PPA_IPO,
    PPA_SIMPO,
    PPA_N_OBJECTIVES
} PpaObjective;

typedef enum { PPA_GAIN_POW2, PPA_GAIN_LINEAR } PpaGain;
typedef enum { PPA_DISCOUNT_LOG2, PPA_DISCOUNT_INV, PPA_DISCOUNT_INV_SQRT, PPA_DISCOUNT_INV_SQ } PpaDiscount;
typedef enum { PPA_TIES_EXCLUDE, PPA_TIES_INCLUDE } PpaTies;
typedef enum { PPA_PAIRS_ALL, PPA_PAIRS_BEST_WORST, PPA_PAIRS_BEST_OTHERS, PPA_PAIRS_OTHERS_WORST } PpaPairs;

typedef struct {
    double tau;             /* NeuralSort temperature (neural_ndcg), 1.0 */
    double alpha;           /* ApproxNDCG sharpness, 25 */
    int k;                  /* NDCG@k (neural_ndcg, lambda, metric); 0 = list size */
    PpaGain gain;           /* neural_ndcg and metric; pow2 */
    PpaDiscount discount;   /* neural_ndcg and metric; log2 */
    int sinkhorn;           /* neural_ndcg: 1 = Sinkhorn scaling on */
    int sinkhorn_iters;     /* at most this many iterations, 50 */
    double sinkhorn_tol;    /* per-list stop when row and column sums are within tol, 1e-6 */
    PpaTies ties;           /* pairwise objectives: tied-label pairs; exclude */
    PpaPairs pairs;         /* ipo and simpo pairing scheme; all pairs */
    double sigma;           /* lambda: sigma_0, 1.0 */
    double label_smoothing; /* dpo / simpo epsilon, 0 */
    double gamma;           /* simpo margin, 0.1 */
    double beta;            /* ipo beta, 0.1 */
    int normalize;          /* listmle: divide by n, off */
} PpaLossOptions;

typedef enum {
    PPA_OK = 0,
    PPA_ERR_NONFINITE_SCORE,
    PPA_ERR_NONFINITE_LABEL,
    PPA_ERR_NEGATIVE_LABEL, /* gain-based objectives and the NDCG metric */
    PPA_ERR_BAD_OPTION,
    PPA_ERR_LIST_TOO_LONG, /* neural_ndcg, approx_ndcg: more than PPA_NEURAL_MAX_ITEMS valid items */
    PPA_ERR_LABEL_TOO_LARGE, /* gain-based objectives: a label above PPA_MAX_GAIN_LABEL */
} PpaStatus;

/* The largest label of a gain-based objective: 2^psi - 1 summed over the
 * longest list (1024 items) stays finite (2^1000 x 1024 < DBL_MAX), so a label
 * on another scale (2000, 1e308) is refused instead of giving a NaN loss. */
#define PPA_MAX_GAIN_LABEL 1000.0

/* NeuralSort (neural_ndcg) and approx_ndcg keep n x n matrices per list:
 * lists with more valid items than this are refused (PPA_ERR_LIST_TOO_LONG)
 * before that memory is taken. The other objectives use O(n) memory. */
#define PPA_NEURAL_MAX_ITEMS 1024

typedef struct {
    double loss;
    int n_valid;        /* items left after masking */
    int sinkhorn_iters; /* neural_ndcg: Sinkhorn iterations run; else 0 */
    int bad_index;      /* on error: the input index of the offending item, else -1 */
} PpaListResult;

typedef struct {
    double ndcg;        /* true NDCG@k of the ranking by s, tie-averaged; NaN if labels < 0 */
    double accuracy;    /* fraction of psi_i > psi_j pairs with s_i > s_j; NaN without such pairs */
    double kendall_tau; /* Kendall tau-b of s against psi; 0 when undefined */
} PpaListMetrics;

void ppa_loss_options_default(PpaLossOptions *o);

/* Set one option by its name ("tau", "sinkhorn_iters", "ties", ...) from a
 * string value. Returns PPA_OK, or PPA_ERR_BAD_OPTION with a message in err. */
PpaStatus ppa_loss_option_set(PpaLossOptions *o, const char *key, const char *value, char *err, size_t errlen);
/* Check ranges (tau > 0, k >= 0, ...); PPA_ERR_BAD_OPTION with a message. */
PpaStatus ppa_loss_options_check(const PpaLossOptions *o, char *err, size_t errlen);

const char *ppa_objective_name(PpaObjective obj);
/* Name or alias to objective; returns 0 on success, -1 if unknown. */
int ppa_objective_parse(const char *name, PpaObjective *out);
/* 1 if the objective uses gains 2^psi - 1 and so rejects negative labels. */
int ppa_objective_uses_gain(PpaObjective obj);
const char *ppa_status_string(PpaStatus st);
/* The most valid items a list may have for the objective (INT_MAX: no limit). */
int ppa_objective_max_items(PpaObjective obj);
/* Whether a label is usable with an objective (finite; for gain-based ones
 * in [0, PPA_MAX_GAIN_LABEL]), so that a data file can be checked whole
 * before any work is done. */
PpaStatus ppa_label_check(PpaObjective obj, double psi);

/* One list, float64. grad[n] receives d loss / d s (0 for masked items); it
 * may be NULL. mask may be NULL (every item valid unless psi is NaN). */
PpaStatus ppa_loss_list(PpaObjective obj, const PpaLossOptions *o, int n, const double *s, const double *psi,
                        const unsigned char *mask, double *grad, PpaListResult *res);

/* Metrics of one list, same masking rules. */
PpaStatus ppa_metrics_list(const PpaLossOptions *o, int n, const double *s, const double *psi,
                           const unsigned char *mask, PpaListMetrics *m);

/* Many lists, float32 data, float64 maths, OpenMP threads over lists.
 * s, psi, mask: [B, K] row-major (mask may be NULL); loss: [B] (may be NULL);
 * grad: [B, K] per-list d loss_b / d s_b (unreduced; the gradient of the mean
 * is grad / B). mean_loss (may be NULL) receives the mean over the B lists.
 * Results do not depend on the thread count or on the other lists of the call.
 * On error returns the first failing list's status and its index in *bad_list. */
PpaStatus ppa_loss_batch(PpaObjective obj, const PpaLossOptions *o, int B, int K, const float *s, const float *psi,
                         const unsigned char *mask, float *loss, float *grad, double *mean_loss, int *bad_list);

#endif
