/* lambda.c: LambdaRank / LiPO-lambda (objectives.md 3.3), natural log, mean
 * over the strictly ordered label pairs inside the top k of the predicted
 * ranking. Stable form w * softplus(-sigma d) instead of upstream's clamped
 * log(sigmoid^w) (pitfall 13). Weights and the ranking carry no gradient. */
#include <math.h>
#include <stdlib.h>

#include "core/common.h"
#include "losses/internal.h"

double obj_lambda(const PpaLossOptions *o, int n, const double *s, const double *psi, double *g, double *work,
                  int *pi) {
    int k = ndcg_cutoff(o->k, n);
    double maxdcg = ndcg_ideal(PPA_GAIN_POW2, PPA_DISCOUNT_LOG2, k, n, psi);
    if (maxdcg < 1e-10) maxdcg = 1e-10;
    double *gain = work, *disc = work + n; /* by item, by position */
    for (int i = 0; i < n; i++) {
        gain[i] = ndcg_gain(PPA_GAIN_POW2, psi[i]) / maxdcg;
        disc[i] = ndcg_discount(PPA_DISCOUNT_LOG2, i + 1);
        g[i] = 0.0;
    }
    order_by_score(n, s, pi); /* stable, so tied scores keep label order */
    double sum = 0.0;
    long pairs = 0;
    for (int p = 0; p < k; p++)
        for (int q = 0; q < k; q++) {
            int a = pi[p], b = pi[q];
            if (!(psi[a] > psi[b])) continue;
            double w = fabs(disc[p] - disc[q]) * fabs(gain[a] - gain[b]), sg;
            sum += w * softplus_sigmoid(-o->sigma * (s[a] - s[b]), &sg);
            double dd = -w * o->sigma * sg; /* d term / d (s_a - s_b) */
            g[a] += dd;
            g[b] -= dd;
            pairs++;
        }
    if (!pairs) return 0.0;
    for (int i = 0; i < n; i++) g[i] /= (double)pairs;
    return sum / (double)pairs;
}
