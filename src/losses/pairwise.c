/* pairwise.c: Bradley-Terry and margin objectives over pairs of the
 * label-sorted list (objectives.md 3.4-3.7, 3.10): ranknet, the four DPO
 * pairings, SLiC hinge, IPO and SimPO. */
#include <math.h>

#include "losses/internal.h"

double obj_ranknet(int n, const double *s, const double *psi, double *g) {
    double sum = 0.0;
    long pairs = 0;
    for (int i = 0; i < n; i++) g[i] = 0.0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            if (!(psi[i] > psi[j])) continue;
            double sg;
            sum += softplus_sigmoid(s[j] - s[i], &sg);
            g[i] -= sg;
            g[j] += sg;
            pairs++;
        }
    if (!pairs) return 0.0;
    for (int i = 0; i < n; i++) g[i] /= (double)pairs;
    return sum / (double)pairs;
}

static PpaPairs pairing_of(PpaObjective obj, const PpaLossOptions *o) {
    switch (obj) {
    case PPA_DPO_SINGLE_PAIR: return PPA_PAIRS_BEST_WORST;
    case PPA_DPO_BPR: return PPA_PAIRS_BEST_OTHERS;
    case PPA_DPO_OVW: return PPA_PAIRS_OTHERS_WORST;
    case PPA_IPO:
    case PPA_SIMPO: return o->pairs;
    default: return PPA_PAIRS_ALL;
    }
}

/* The loss of one pair with d = s_i - s_j (i preferred); *dterm = d term / d d. */
static double pair_term(PpaObjective obj, const PpaLossOptions *o, double d, double *dterm) {
    switch (obj) {
    case PPA_HINGE:
        *dterm = 1.0 - d > 0.0 ? -1.0 : 0.0; /* relu'(0) = 0 */
        return 1.0 - d > 0.0 ? 1.0 - d : 0.0;
    case PPA_IPO: {
        double h = d / o->beta - 1.0 / (2.0 * o->beta);
        *dterm = 2.0 / o->beta * h;
        return h * h;
    }
    default: {
        /* (1 - eps) softplus(-x) + eps softplus(x), with softplus(x) = softplus(-x) + x */
        double gamma = obj == PPA_SIMPO ? o->gamma : 0.0, eps = o->label_smoothing, x = d - gamma, sg;
        double sp = softplus_sigmoid(-x, &sg); /* sg = sigmoid(-x) */
        *dterm = eps - sg;
        return eps != 0.0 ? sp + eps * x : sp;
    }
    }
}

double obj_pairwise(PpaObjective obj, const PpaLossOptions *o, int n, const double *s, const double *psi, double *g) {
    PpaPairs pairing = pairing_of(obj, o);
    double norm = pairing == PPA_PAIRS_ALL ? 0.5 * n * (n - 1) : pairing == PPA_PAIRS_BEST_WORST ? 1.0 : n - 1.0;
    for (int i = 0; i < n; i++) g[i] = 0.0;
    double sum = 0.0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            int use = pairing == PPA_PAIRS_ALL || (pairing == PPA_PAIRS_BEST_WORST && i == 0 && j == n - 1) ||
                      (pairing == PPA_PAIRS_BEST_OTHERS && i == 0) || (pairing == PPA_PAIRS_OTHERS_WORST && j == n - 1);
            if (!use || (o->ties == PPA_TIES_EXCLUDE && psi[i] == psi[j])) continue;
            double dterm, term = pair_term(obj, o, s[i] - s[j], &dterm);
            sum += term;
            g[i] += dterm / norm;
            g[j] -= dterm / norm;
        }
    return sum / norm;
}
