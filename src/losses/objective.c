/* objective.c: the public objectives API: names and options, list
 * preparation (mask, validation, stable sort by label), dispatch to the
 * per-objective kernels, metrics, and the batched multi-threaded entry. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "losses/internal.h"

static const struct {
    const char *name;
    PpaObjective obj;
} NAMES[] = {
    {"neural_ndcg", PPA_NEURAL_NDCG},
    {"ppa", PPA_NEURAL_NDCG},
    {"approx_ndcg", PPA_APPROX_NDCG},
    {"lambda", PPA_LAMBDA},
    {"lipo", PPA_LAMBDA},
    {"lambdarank", PPA_LAMBDA},
    {"ranknet", PPA_RANKNET},
    {"dpo_single_pair", PPA_DPO_SINGLE_PAIR},
    {"dpo_bpr", PPA_DPO_BPR},
    {"dpo_ovw", PPA_DPO_OVW},
    {"dpo_all_pairs", PPA_DPO_ALL_PAIRS},
    {"dpo", PPA_DPO_ALL_PAIRS},
    {"hinge", PPA_HINGE},
    {"slic", PPA_HINGE},
    {"listmle", PPA_LISTMLE},
    {"dpo_pl", PPA_LISTMLE},
    {"listnet", PPA_LISTNET},
    {"ipo", PPA_IPO},
    {"simpo", PPA_SIMPO},
};

const char *ppa_objective_name(PpaObjective obj) {
    for (size_t i = 0; i < PPA_ARRAY_LEN(NAMES); i++)
        if (NAMES[i].obj == obj) return NAMES[i].name; /* the first entry is the canonical name */
    return "?";
}

int ppa_objective_parse(const char *name, PpaObjective *out) {
    for (size_t i = 0; i < PPA_ARRAY_LEN(NAMES); i++)
        if (strcmp(NAMES[i].name, name) == 0) {
            *out = NAMES[i].obj;
            return 0;
        }
    return -1;
}

int ppa_objective_uses_gain(PpaObjective obj) {
    return obj == PPA_NEURAL_NDCG || obj == PPA_APPROX_NDCG || obj == PPA_LAMBDA;
}

PpaStatus ppa_label_check(PpaObjective obj, double psi) { return item_status(ppa_objective_uses_gain(obj), 0.0, psi); }

const char *ppa_status_string(PpaStatus st) {
    switch (st) {
    case PPA_OK: return "ok";
    case PPA_ERR_NONFINITE_SCORE: return "a score of a valid item is not finite";
    case PPA_ERR_NONFINITE_LABEL: return "a label is infinite";
    case PPA_ERR_NEGATIVE_LABEL: return "a label is negative, but gains 2^psi - 1 need labels >= 0";
    case PPA_ERR_BAD_OPTION: return "bad option";
    case PPA_ERR_LIST_TOO_LONG: return "the list has more than 1024 valid items, too many for neural_ndcg and approx_ndcg";
    case PPA_ERR_LABEL_TOO_LARGE: return "a label is above 1000, where the gain 2^psi - 1 of a list can overflow";
    }
    return "unknown status";
}

void ppa_loss_options_default(PpaLossOptions *o) {
    *o = (PpaLossOptions){
        .tau = 1.0, .alpha = 25.0, .k = 0, .gain = PPA_GAIN_POW2, .discount = PPA_DISCOUNT_LOG2,
        .sinkhorn = 1, .sinkhorn_iters = 50, .sinkhorn_tol = 1e-6, .ties = PPA_TIES_EXCLUDE,
        .pairs = PPA_PAIRS_ALL, .sigma = 1.0, .label_smoothing = 0.0, .gamma = 0.1, .beta = 0.1,
        .normalize = 0,
    };
}

/* ---- option parsing ---- */

static int parse_double(const char *v, double *out) {
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !isfinite(x)) return -1;
    *out = x;
    return 0;
}

static int parse_int(const char *v, int *out) {
    char *end;
    long x = strtol(v, &end, 10);
    if (end == v || *end || x < -1000000000L || x > 1000000000L) return -1;
    *out = (int)x;
    return 0;
}

static int parse_bool(const char *v, int *out) {
    const char *yes[] = {"on", "true", "1", "yes"}, *no[] = {"off", "false", "0", "no"};
    for (int i = 0; i < 4; i++) {
        if (!strcmp(v, yes[i])) return *out = 1, 0;
        if (!strcmp(v, no[i])) return *out = 0, 0;
    }
    return -1;
}

/* value -> index into names[]; -1 if absent */
static int parse_choice(const char *v, const char *const *names, int count) {
    for (int i = 0; i < count; i++)
        if (!strcmp(v, names[i])) return i;
    return -1;
}

static const char *const GAINS[] = {"pow2", "linear"};
static const char *const DISCOUNTS[] = {"log2", "inv", "inv_sqrt", "inv_sq"};
static const char *const TIES[] = {"exclude", "include"};
static const char *const PAIRS[] = {"all_pairs", "best_with_worst", "best_with_others", "others_vs_worst"};
static const char *const PAIR_ALIASES[] = {"all", "single_pair", "bpr", "ovw"};

PpaStatus ppa_loss_option_set(PpaLossOptions *o, const char *key_in, const char *v, char *err, size_t errlen) {
    char key[64];
    snprintf(key, sizeof key, "%s", key_in);
    for (char *c = key; *c; c++)
        if (*c == '-') *c = '_';
    int bad = 0, choice;
    if (!strcmp(key, "tau")) bad = parse_double(v, &o->tau);
    else if (!strcmp(key, "alpha")) bad = parse_double(v, &o->alpha);
    else if (!strcmp(key, "k")) bad = parse_int(v, &o->k);
    else if (!strcmp(key, "sinkhorn")) bad = parse_bool(v, &o->sinkhorn);
    else if (!strcmp(key, "sinkhorn_iters")) bad = parse_int(v, &o->sinkhorn_iters);
    else if (!strcmp(key, "sinkhorn_tol")) bad = parse_double(v, &o->sinkhorn_tol);
    else if (!strcmp(key, "sigma")) bad = parse_double(v, &o->sigma);
    else if (!strcmp(key, "label_smoothing")) bad = parse_double(v, &o->label_smoothing);
    else if (!strcmp(key, "gamma")) bad = parse_double(v, &o->gamma);
    else if (!strcmp(key, "beta")) bad = parse_double(v, &o->beta);
    else if (!strcmp(key, "normalize")) bad = parse_bool(v, &o->normalize);
    else if (!strcmp(key, "gain")) {
        bad = (choice = parse_choice(v, GAINS, 2)) < 0;
        if (!bad) o->gain = (PpaGain)choice;
    } else if (!strcmp(key, "discount")) {
        bad = (choice = parse_choice(v, DISCOUNTS, 4)) < 0;
        if (!bad) o->discount = (PpaDiscount)choice;
    } else if (!strcmp(key, "ties")) {
        bad = (choice = parse_choice(v, TIES, 2)) < 0;
        if (!bad) o->ties = (PpaTies)choice;
    } else if (!strcmp(key, "pairs")) {
        choice = parse_choice(v, PAIRS, 4);
        if (choice < 0) choice = parse_choice(v, PAIR_ALIASES, 4);
        bad = choice < 0;
        if (!bad) o->pairs = (PpaPairs)choice;
    } else {
        snprintf(err, errlen, "unknown option '%s'", key_in);
        return PPA_ERR_BAD_OPTION;
    }
    if (bad) {
        snprintf(err, errlen, "option '%s': cannot use value '%s'", key_in, v);
        return PPA_ERR_BAD_OPTION;
    }
    return ppa_loss_options_check(o, err, errlen);
}

PpaStatus ppa_loss_options_check(const PpaLossOptions *o, char *err, size_t errlen) {
    const char *msg = NULL;
    /* each option's domain (docs/commands.md, the objectives table); a value outside it is refused, never clamped */
    if (!(o->tau > 0 && isfinite(o->tau))) msg = "tau must be > 0 (and finite)";
    else if (!(o->alpha > 0 && isfinite(o->alpha))) msg = "alpha must be > 0 (and finite)";
    else if (o->k < 0) msg = "k must be >= 1 (or 0 for the list size)";
    else if (o->sinkhorn_iters < 1 || o->sinkhorn_iters > 100000)
        msg = "sinkhorn_iters must be in 1..100000 (--no-sinkhorn turns the scaling off)";
    else if (!(o->sinkhorn_tol >= 0 && isfinite(o->sinkhorn_tol))) msg = "sinkhorn_tol must be >= 0 (and finite)";
    else if (!(o->sigma > 0 && isfinite(o->sigma))) msg = "sigma must be > 0 (and finite)";
    /* TRL's range: at 0.5 the loss no longer prefers either response, above it the preference is reversed */
    else if (!(o->label_smoothing >= 0 && o->label_smoothing < 0.5))
        msg = "label_smoothing must be in [0, 0.5) (at 0.5 no response is preferred, above it the preference is reversed)";
    else if (!(o->beta > 0 && isfinite(o->beta))) msg = "beta must be > 0 (and finite)";
    else if (!isfinite(o->gamma)) msg = "gamma must be finite";
    if (!msg) return PPA_OK;
    snprintf(err, errlen, "%s", msg);
    return PPA_ERR_BAD_OPTION;
}

/* ---- list preparation ---- */

/* Keeps the valid items (mask set, label not NaN), checks them, and orders
 * them by label, descending, stably. idx[0..nv) receives input positions. */
static PpaStatus prepare(int gain_based, int n, const double *s, const double *psi, const unsigned char *mask,
                         int *idx, int *nv_out, int *bad) {
    int nv = 0;
    *bad = -1;
    for (int i = 0; i < n; i++) {
        if ((mask && !mask[i]) || isnan(psi[i])) continue;
        PpaStatus st = item_status(gain_based, s[i], psi[i]);
        if (st != PPA_OK) {
            *bad = i;
            return st;
        }
        int j = nv++;
        while (j > 0 && psi[idx[j - 1]] < psi[i]) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = i;
    }
    *nv_out = nv;
    return PPA_OK;
}

double loss_prepared(PpaObjective obj, const PpaLossOptions *o, int n, const double *s, const double *psi, double *g,
                     int *iters, double *work, int *order) {
    *iters = 0;
    switch (obj) {
    case PPA_NEURAL_NDCG: return neural_ndcg_one(o, n, s, psi, g, iters);
    case PPA_APPROX_NDCG: return obj_approx_ndcg(o, n, s, psi, g, work);
    case PPA_LAMBDA: return obj_lambda(o, n, s, psi, g, work, order);
    case PPA_RANKNET: return obj_ranknet(n, s, psi, g);
    case PPA_LISTMLE: return obj_listmle(o, n, s, g, work);
    case PPA_LISTNET: return obj_listnet(n, s, psi, g, work);
    default: return obj_pairwise(obj, o, n, s, psi, g);
    }
}

/* One allocation for a list's preparation and scratch; approx_ndcg's n x n
 * part is taken only once the valid items are counted and within the limit. */
typedef struct {
    int *idx, *order;           /* [n] each */
    double *s, *psi, *g, *work; /* [n], [n], [n], [2n] (or approx_ndcg's [nv * nv + 2 nv]) */
} ListBuffers;

static ListBuffers list_buffers(int n) {
    size_t m = (size_t)(n > 0 ? n : 1), nd = 5 * m;
    double *d = xmalloc(sizeof(double) * nd + sizeof(int) * 2 * m);
    int *i = (int *)(d + nd);
    return (ListBuffers){i, i + m, d, d + m, d + 2 * m, d + 3 * m};
}

int ppa_objective_max_items(PpaObjective obj) {
    return obj == PPA_NEURAL_NDCG || obj == PPA_APPROX_NDCG ? PPA_NEURAL_MAX_ITEMS : INT_MAX;
}

PpaStatus ppa_loss_list(PpaObjective obj, const PpaLossOptions *o, int n, const double *s, const double *psi,
                        const unsigned char *mask, double *grad, PpaListResult *res) {
    PpaListResult r = {0.0, 0, 0, -1};
    if (grad)
        for (int i = 0; i < n; i++) grad[i] = 0.0;
    ListBuffers b = list_buffers(n);
    PpaStatus st = prepare(ppa_objective_uses_gain(obj), n, s, psi, mask, b.idx, &r.n_valid, &r.bad_index);
    if (st == PPA_OK && r.n_valid > ppa_objective_max_items(obj)) st = PPA_ERR_LIST_TOO_LONG;
    double *square = NULL;
    if (st == PPA_OK && r.n_valid >= 2) {
        for (int i = 0; i < r.n_valid; i++) {
            b.s[i] = s[b.idx[i]];
            b.psi[i] = psi[b.idx[i]];
        }
        if (obj == PPA_APPROX_NDCG)
            b.work = square = xmalloc(sizeof(double) * (size_t)(approx_square(obj, r.n_valid) + 2 * r.n_valid));
        r.loss = loss_prepared(obj, o, r.n_valid, b.s, b.psi, b.g, &r.sinkhorn_iters, b.work, b.order);
        if (grad)
            for (int i = 0; i < r.n_valid; i++) grad[b.idx[i]] = b.g[i];
    }
    free(square);
    free(b.s);
    if (res) *res = r;
    return st;
}

PpaStatus ppa_metrics_list(const PpaLossOptions *o, int n, const double *s, const double *psi,
                           const unsigned char *mask, PpaListMetrics *m) {
    ListBuffers b = list_buffers(n);
    int nv, bad;
    PpaStatus st = prepare(0, n, s, psi, mask, b.idx, &nv, &bad);
    *m = (PpaListMetrics){NAN, NAN, 0.0};
    if (st == PPA_OK) {
        int negative = 0;
        for (int i = 0; i < nv; i++) {
            b.s[i] = s[b.idx[i]];
            b.psi[i] = psi[b.idx[i]];
            negative |= b.psi[i] < 0;
        }
        m->ndcg = negative ? NAN : ndcg_metric(o, nv, b.s, b.psi, b.order);
        m->accuracy = pair_accuracy(nv, b.s, b.psi);
        m->kendall_tau = kendall_tau_b(nv, b.s, b.psi);
    }
    free(b.s);
    return st;
}
