/* lambda.c: LambdaRank / LiPO-lambda (objectives.md 3.3), natural log, mean
 * over the strictly ordered label pairs inside the top k of the predicted
 * ranking. Stable form w * softplus(-sigma d) instead of upstream's clamped
 * log(sigmoid^w) (pitfall 13). Weights and the ranking carry no gradient. */
#include <math.h>
#include <stdlib.h>

#include "core/common.h"
#include "losses/internal.h"

double obj_lambda(const PpaLossOptions *o, int n, const double *s, const double *psi, double *g) {
    int k = ndcg_cutoff(o->k, n);
    double maxdcg = ndcg_ideal(PPA_GAIN_POW2, PPA_DISCOUNT_LOG2, k, n, psi);
    if (maxdcg < 1e-10) maxdcg = 1e-10;

    /* pi: positions by score, descending; stable, so tied scores keep label order */
    int *pi = xmalloc(sizeof(int) * (size_t)n);
    order_by_score(n, s, pi);
    for (int i = 0; i < n; i++) g[i] = 0.0;
    double sum = 0.0;
    long pairs = 0;
    for (int p = 0; p < k; p++)
        for (int q = 0; q < k; q++) {
            int a = pi[p], b = pi[q];
            if (!(psi[a] > psi[b])) continue;
            double w = fabs(ndcg_discount(PPA_DISCOUNT_LOG2, p + 1) - ndcg_discount(PPA_DISCOUNT_LOG2, q + 1)) *
                       fabs(ndcg_gain(PPA_GAIN_POW2, psi[a]) - ndcg_gain(PPA_GAIN_POW2, psi[b])) / maxdcg;
            double x = o->sigma * (s[a] - s[b]);
            sum += w * softplus(-x);
            double dd = -w * o->sigma * sigmoid(-x); /* d term / d (s_a - s_b) */
            g[a] += dd;
            g[b] -= dd;
            pairs++;
        }
    free(pi);
    if (!pairs) return 0.0;
    for (int i = 0; i < n; i++) g[i] /= (double)pairs;
    return sum / (double)pairs;
}
