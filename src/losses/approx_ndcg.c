/* approx_ndcg.c: ApproxNDCG (objectives.md 3.2). The rank of item i is
 * approximated by 1 + sum_{j != i} sigmoid(alpha (s_j - s_i)); gain pow2,
 * discount log2, k = n, maxDCG from sorted gains clamped at 1e-10. */
#include <math.h>
#include <stdlib.h>

#include "core/common.h"
#include "losses/internal.h"

double obj_approx_ndcg(const PpaLossOptions *o, int n, const double *s, const double *psi, double *g, double *work) {
    const double alpha = o->alpha;
    double maxdcg = ndcg_ideal(PPA_GAIN_POW2, PPA_DISCOUNT_LOG2, 0, n, psi);
    if (maxdcg < 1e-10) maxdcg = 1e-10;
    /* sig[i n + j] = sigmoid(alpha (s_j - s_i)); sigmoid(-x) = 1 - sigmoid(x) fills the lower half */
    double *sig = work, *rank = work + (size_t)n * n, *lam = rank + n;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            sig[(size_t)i * n + j] = sigmoid(alpha * (s[j] - s[i]));
            sig[(size_t)j * n + i] = 1.0 - sig[(size_t)i * n + j];
        }
    for (int i = 0; i < n; i++) {
        double r = 1.0;
        for (int j = 0; j < n; j++)
            if (j != i) r += sig[(size_t)i * n + j];
        rank[i] = r;
    }
    double ndcg = 0.0;
    for (int i = 0; i < n; i++) {
        double gi = ndcg_gain(PPA_GAIN_POW2, psi[i]), l2 = log2(1.0 + rank[i]);
        ndcg += gi / l2;
        lam[i] = gi / (maxdcg * (1.0 + rank[i]) * M_LN2 * l2 * l2); /* d loss / d rank_i */
    }
    for (int m = 0; m < n; m++) {
        double acc = 0.0;
        for (int i = 0; i < n; i++) {
            if (i == m) continue;
            double sg = sig[(size_t)i * n + m]; /* sigmoid(alpha (s_m - s_i)) */
            acc += alpha * sg * (1.0 - sg) * (lam[i] - lam[m]);
        }
        g[m] = acc;
    }
    return 0.0 - ndcg / maxdcg;
}
