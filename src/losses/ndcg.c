/* ndcg.c: gains, discounts, ideal DCG and the ranking metrics (true NDCG@k
 * with tie-averaged gains, pairwise ranking accuracy, Kendall tau-b). */
#include <math.h>
#include <stdlib.h>

#include "core/common.h"
#include "losses/internal.h"

double ndcg_gain(PpaGain gain, double psi) {
    /* 2^psi - 1 through expm1: exact to the last bit for small psi */
    return gain == PPA_GAIN_LINEAR ? psi : expm1(psi * M_LN2);
}

double ndcg_discount(PpaDiscount d, int r) {
    switch (d) {
    case PPA_DISCOUNT_INV: return 1.0 / r;
    case PPA_DISCOUNT_INV_SQRT: return 1.0 / sqrt((double)r);
    case PPA_DISCOUNT_INV_SQ: return 1.0 / ((double)r * r);
    case PPA_DISCOUNT_LOG2: break;
    }
    return 1.0 / log2(1.0 + r);
}

int ndcg_cutoff(int k, int n) { return (k <= 0 || k > n) ? n : k; }

double ndcg_ideal(PpaGain gain, PpaDiscount d, int k, int n, const double *psi_sorted) {
    int kk = ndcg_cutoff(k, n);
    double idcg = 0.0;
    for (int r = 0; r < kk; r++) idcg += ndcg_gain(gain, psi_sorted[r]) * ndcg_discount(d, r + 1);
    return idcg;
}

/* insertion sort: lists are short */
void order_by_score(int n, const double *s, int *idx) {
    for (int i = 0; i < n; i++) {
        int j = i;
        while (j > 0 && s[idx[j - 1]] < s[i]) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = i;
    }
}

double ndcg_metric(const PpaLossOptions *o, int n, const double *s, const double *psi_sorted, int *idx) {
    double idcg = ndcg_ideal(o->gain, o->discount, o->k, n, psi_sorted);
    if (idcg == 0.0) return 1.0; /* allRank's convention: nothing to rank */
    int k = ndcg_cutoff(o->k, n);
    order_by_score(n, s, idx);
    double dcg = 0.0;
    for (int a = 0; a < n;) {
        /* a tie group [a, b) of equal scores shares the mean gain */
        int b = a + 1;
        while (b < n && s[idx[b]] == s[idx[a]]) b++;
        double g = 0.0, d = 0.0;
        for (int p = a; p < b; p++) {
            g += ndcg_gain(o->gain, psi_sorted[idx[p]]);
            if (p < k) d += ndcg_discount(o->discount, p + 1);
        }
        dcg += g / (b - a) * d;
        a = b;
    }
    return dcg / idcg;
}

double pair_accuracy(int n, const double *s, const double *psi) {
    long pairs = 0, right = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (psi[i] > psi[j]) {
                pairs++;
                right += s[i] > s[j];
            }
    return pairs ? (double)right / (double)pairs : NAN;
}

static int sgn(double x) { return (x > 0) - (x < 0); }

double kendall_tau_b(int n, const double *s, const double *psi) {
    long n0 = (long)n * (n - 1) / 2, ties_s = 0, ties_psi = 0, concord = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            int a = sgn(s[i] - s[j]), b = sgn(psi[i] - psi[j]);
            ties_s += a == 0;
            ties_psi += b == 0;
            concord += a * b;
        }
    double den = sqrt((double)(n0 - ties_s) * (double)(n0 - ties_psi));
    return den > 0.0 ? (double)concord / den : 0.0;
}
