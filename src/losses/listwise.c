/* listwise.c: Plackett-Luce ListMLE (objectives.md 3.8) and ListNet (3.9). */
#include <math.h>
#include <stdlib.h>

#include "core/common.h"
#include "losses/internal.h"

static double log_add_exp(double a, double b) {
    double m = a > b ? a : b;
    return m + log1p(exp(-fabs(a - b)));
}

/* loss = sum_k [log sum_{j >= k} e^{s_j} - s_k] in label order, via a
 * reverse log-cumsum-exp (stable for |s| ~ 1e3, pitfall 14). */
double obj_listmle(const PpaLossOptions *o, int n, const double *s, double *g, double *lse) {
    lse[n - 1] = s[n - 1];
    for (int k = n - 2; k >= 0; k--) lse[k] = log_add_exp(s[k], lse[k + 1]);
    double loss = 0.0, scale = o->normalize ? 1.0 / n : 1.0;
    for (int k = 0; k < n; k++) loss += lse[k] - s[k];
    for (int m = 0; m < n; m++) {
        double acc = 0.0; /* sum_{k <= m} softmax_{j >= k}(s)_m */
        for (int k = 0; k <= m; k++) acc += exp(s[m] - lse[k]);
        g[m] = (acc - 1.0) * scale;
    }
    return loss * scale;
}

static void softmax(int n, const double *x, double *p) {
    double mx = x[0], sum = 0.0;
    for (int i = 1; i < n; i++) mx = x[i] > mx ? x[i] : mx;
    for (int i = 0; i < n; i++) sum += (p[i] = exp(x[i] - mx));
    for (int i = 0; i < n; i++) p[i] /= sum;
}

double obj_listnet(int n, const double *s, const double *psi, double *g, double *work) {
    const double eps = 1e-10;
    double *p = work, *q = work + n;
    softmax(n, s, p);
    softmax(n, psi, q);
    double loss = 0.0, c = 0.0;
    for (int i = 0; i < n; i++) {
        loss -= q[i] * log(p[i] + eps);
        c += q[i] * p[i] / (p[i] + eps);
    }
    for (int m = 0; m < n; m++) g[m] = p[m] * c - q[m] * p[m] / (p[m] + eps);
    return loss;
}
