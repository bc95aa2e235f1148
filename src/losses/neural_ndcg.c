/* neural_ndcg.c: PPA's objective, NeuralNDCG (NeuralSort + Sinkhorn + DCG),
 * forward and hand-derived backward, vectorised across lists: lane l of every
 * PpaLanes value is list l of a tile of PPA_LANES lists with the same n.
 *
 * Sinkhorn is kept in diagonal form: P_t = diag(A_t) P^ diag(B_t), because
 * scaling rows and columns only rescales them. So the forward stores two
 * n-vectors per iteration instead of two n x n matrices, and the backward
 * rebuilds U_t and P_t from them. Semantics (objectives.md 3.1): columns then
 * rows, sums clamped at 1e-10 (a clamped sum passes no gradient), at most
 * sinkhorn_iters iterations, per-list stop once every row and column sum is
 * within sinkhorn_tol of 1, backward through exactly the iterations run. */
#include <assert.h>
#include <math.h>
#include <stdlib.h>

#include "core/common.h"
#include "losses/internal.h"

typedef long long LaneMask __attribute__((vector_size(8 * PPA_LANES))); /* -1 = true, 0 = false */

/* forced inlining lets a constant n (see neural_ndcg_lanes) unroll every loop */
#define INLINE inline __attribute__((always_inline))

#define SUM_EPS 1e-10  /* Sinkhorn sum clamp */
#define IDCG_EPS 1e-10 /* NDCG denominator */

struct NeuralWork {
    int n_max, iters_max; /* what the buffers hold */
    PpaLanes *ph;  /* [n, n] NeuralSort P^, rows = ranks, columns = items */
    PpaLanes *dp;  /* [n, n] E_t = d loss / d P_t * P_t (elementwise) */
    PpaLanes *a;   /* [iters + 1, n] row scalings A_t */
    PpaLanes *b;   /* [iters + 1, n] column scalings B_t */
    PpaLanes *kap; /* [iters, n] column sums kappa_t of P_{t-1}, before the clamp */
    PpaLanes *rho; /* [iters, n] row sums rho_t of U_t, before the clamp */
    PpaLanes *vec;  /* [2, n] scratch */
    PpaLanes *gain; /* [n] G(psi) */
    double *disc;   /* [n] D(r) for r <= k, else 0 */
    int iters[PPA_LANES];
};

static inline PpaLanes lanes_splat(double x) { return (PpaLanes){0} + x; }
static inline PpaLanes lanes_select(LaneMask m, PpaLanes yes, PpaLanes no) {
    return (PpaLanes)(((LaneMask)yes & m) | ((LaneMask)no & ~m));
}
static inline PpaLanes lanes_max(PpaLanes x, PpaLanes y) { return lanes_select(x > y, x, y); }
static inline PpaLanes lanes_abs(PpaLanes x) { return (PpaLanes)((LaneMask)x & 0x7fffffffffffffffLL); }
/* sgn with sgn(0) = 0 (torch's abs backward) */
static inline PpaLanes lanes_sgn(PpaLanes x) {
    return __builtin_convertvector(x < 0, PpaLanes) - __builtin_convertvector(x > 0, PpaLanes);
}
static inline int lanes_any(LaneMask m) {
    long long r = 0;
    for (int l = 0; l < PPA_LANES; l++) r |= m[l];
    return r != 0;
}
#ifdef __AVX512F__
/* glibc's libmvec: 8 doubles at once, within 4 ulp (libm's scalar exp is 1 ulp) */
PpaLanes _ZGVeN8v_exp(PpaLanes x);
PpaLanes _ZGVeN8v_expm1(PpaLanes x);
static inline PpaLanes lanes_exp(PpaLanes x) { return _ZGVeN8v_exp(x); }
static inline PpaLanes lanes_expm1(PpaLanes x) { return _ZGVeN8v_expm1(x); }
#else
static inline PpaLanes lanes_exp(PpaLanes x) {
    for (int l = 0; l < PPA_LANES; l++) x[l] = exp(x[l]);
    return x;
}
static inline PpaLanes lanes_expm1(PpaLanes x) {
    for (int l = 0; l < PPA_LANES; l++) x[l] = expm1(x[l]);
    return x;
}
#endif

static void *alloc_lanes(size_t count) {
    void *p = NULL;
    if (posix_memalign(&p, 64, (count ? count : 1) * sizeof(PpaLanes)) != 0)
        ppa_die(1, "out of memory for %zu Sinkhorn lanes", count);
    return p;
}

NeuralWork *neural_work_new(int n_max, int iters_max) {
    NeuralWork *w = xcalloc(1, sizeof *w);
    size_t n = (size_t)n_max, t = (size_t)(iters_max > 0 ? iters_max : 0);
    w->n_max = n_max;
    w->iters_max = iters_max;
    w->ph = alloc_lanes(n * n);
    w->dp = alloc_lanes(n * n);
    w->a = alloc_lanes((t + 1) * n);
    w->b = alloc_lanes((t + 1) * n);
    w->kap = alloc_lanes(t * n);
    w->rho = alloc_lanes(t * n);
    w->vec = alloc_lanes(2 * n);
    w->gain = alloc_lanes(n);
    w->disc = xmalloc(sizeof(double) * (n ? n : 1));
    return w;
}

void neural_work_free(NeuralWork *w) {
    if (!w) return;
    free(w->ph);
    free(w->dp);
    free(w->a);
    free(w->b);
    free(w->kap);
    free(w->rho);
    free(w->vec);
    free(w->gain);
    free(w->disc);
    free(w);
}

/* P^[r, i] = softmax_i((c_r s_i - B_i) / tau), c_r = n + 1 - 2r (r 1-based),
 * B_i = sum_j |s_i - s_j|. */
static INLINE void neuralsort_forward(int n, double tau, const PpaLanes *s, PpaLanes *ph, PpaLanes *bsum) {
    for (int i = 0; i < n; i++) {
        PpaLanes acc = lanes_splat(0.0);
        for (int j = 0; j < n; j++) acc += lanes_abs(s[i] - s[j]);
        bsum[i] = acc;
    }
    for (int r = 0; r < n; r++) {
        double c = (double)(n - 1 - 2 * r);
        PpaLanes *row = ph + (size_t)r * n;
        PpaLanes mx = lanes_splat(-INFINITY);
        for (int i = 0; i < n; i++) {
            row[i] = (c * s[i] - bsum[i]) / tau;
            mx = lanes_max(mx, row[i]);
        }
        PpaLanes sum = lanes_splat(0.0);
        for (int i = 0; i < n; i++) {
            row[i] = lanes_exp(row[i] - mx);
            sum += row[i];
        }
        PpaLanes inv = 1.0 / sum;
        for (int i = 0; i < n; i++) row[i] *= inv;
    }
}

/* colsum[i] = B[i] * sum_r A[r] P^[r, i]: the column sums of diag(A) P^ diag(B). */
static INLINE void column_sums(int n, const PpaLanes *ph, const PpaLanes *A, const PpaLanes *B, PpaLanes *colsum) {
    for (int i = 0; i < n; i++) colsum[i] = lanes_splat(0.0);
    for (int r = 0; r < n; r++)
        for (int i = 0; i < n; i++) colsum[i] += A[r] * ph[(size_t)r * n + i];
    for (int i = 0; i < n; i++) colsum[i] *= B[i];
}

/* Runs Sinkhorn on P^ in diagonal form. Fills w->a, w->b, w->kap, w->rho and
 * w->iters; returns the largest iteration count over the lanes. */
static INLINE int sinkhorn_forward(const PpaLossOptions *o, int n, NeuralWork *w) {
    const PpaLanes one = lanes_splat(1.0), eps = lanes_splat(SUM_EPS);
    for (int i = 0; i < n; i++) w->a[i] = w->b[i] = one;
    for (int l = 0; l < PPA_LANES; l++) w->iters[l] = 0;
    if (!o->sinkhorn || o->sinkhorn_iters <= 0) return 0;

    LaneMask active = (LaneMask){0} - 1, count = (LaneMask){0}; /* iterations run per lane */
    column_sums(n, w->ph, w->a, w->b, w->kap);
    int t = 0;
    while (t < o->sinkhorn_iters && lanes_any(active)) {
        t++;
        const PpaLanes *restrict A0 = w->a + (size_t)(t - 1) * n, *restrict B0 = w->b + (size_t)(t - 1) * n;
        PpaLanes *restrict A1 = w->a + (size_t)t * n, *restrict B1 = w->b + (size_t)t * n;
        const PpaLanes *restrict K = w->kap + (size_t)(t - 1) * n;
        PpaLanes *restrict R = w->rho + (size_t)(t - 1) * n;
        for (int i = 0; i < n; i++) B1[i] = lanes_select(active, B0[i] / lanes_max(K[i], eps), B0[i]);

        /* one pass over P^: each row's sum of U_t, then, while the row is in
         * registers, its share of the column sums of P_t (the stop test, and
         * kappa of the next iteration). err: the stop test's largest
         * deviation, in two halves to shorten the max chain */
        PpaLanes err[2] = {lanes_splat(0.0), lanes_splat(0.0)};
        PpaLanes *C = t < o->sinkhorn_iters ? w->kap + (size_t)t * n : w->vec, c[n], b1[n];
        for (int i = 0; i < n; i++) c[i] = lanes_splat(0.0), b1[i] = B1[i]; /* locals: kept in registers */
        for (int r = 0; r < n; r++) {
            const PpaLanes *row = w->ph + (size_t)r * n;
            PpaLanes dot = lanes_splat(0.0);
            for (int i = 0; i < n; i++) dot += row[i] * b1[i];
            R[r] = A0[r] * dot;
            PpaLanes a1 = lanes_select(active, A0[r] / lanes_max(R[r], eps), A0[r]);
            A1[r] = a1;
            err[r & 1] = lanes_max(err[r & 1], lanes_abs(a1 * dot - one)); /* row sum of P_t */
            for (int i = 0; i < n; i++) c[i] += a1 * row[i];
        }
        for (int i = 0; i < n; i++) {
            C[i] = c[i] * b1[i];
            err[i & 1] = lanes_max(err[i & 1], lanes_abs(C[i] - one));
        }

        count -= active; /* -1 where active */
        active &= ~(lanes_max(err[0], err[1]) < o->sinkhorn_tol);
    }
    for (int l = 0; l < PPA_LANES; l++) w->iters[l] = (int)count[l];
    return t;
}

/* Forward up to the final P_T; returns T (the largest lane count). */
static INLINE int neural_forward(const PpaLossOptions *o, int n, const PpaLanes *s, NeuralWork *w) {
    neuralsort_forward(n, o->tau, s, w->ph, w->vec);
    return sinkhorn_forward(o, n, w);
}

/* The backward runs on E_t = dP_t * P_t (elementwise), which needs no n x n
 * state besides P^ itself: with P_t = diag(A_t) P^ diag(B_t), the rows step
 * P_t = U_t / rho and the columns step U_t = P_{t-1} / kappa give
 *   rd_r = sum_j E_t[r, j]                       (0 where rho_r was clamped)
 *   cd_i = sum_q E_t[q, i] - sum_q rd_q P_t[q, i] (0 where kappa_i was clamped)
 *   E_{t-1}[r, i] = E_t[r, i] - (rd_r + max(rho_r, eps) cd_i) P_t[r, i]
 * which is d loss / d P_{t-1} times P_{t-1}, clamps included. */
/* Iteration t's sums of E_t (see above): x_r = rd_r A_t[r] (0 where rho_r was
 * clamped), so that rd_r P_t[r, .] = x_r P^[r, .] B_t, and acc = P^T x. The
 * column sums colE come with the previous update (or the caller). */
static INLINE void backward_sums(int n, int t, const NeuralWork *w, const PpaLanes *rd, PpaLanes *x, PpaLanes *acc) {
    const PpaLanes eps = lanes_splat(SUM_EPS), zero = lanes_splat(0.0);
    const PpaLanes *restrict ph = w->ph, *A1 = w->a + (size_t)t * n, *R = w->rho + (size_t)(t - 1) * n;
    for (int i = 0; i < n; i++) acc[i] = zero;
    for (int r = 0; r < n; r++) {
        x[r] = lanes_select(R[r] < eps, zero, rd[r] * A1[r]);
        for (int i = 0; i < n; i++) acc[i] += x[r] * ph[(size_t)r * n + i];
    }
}

/* Back through Sinkhorn iterations T..1, in place on E (w->dp). Each step
 * updates E once and, in the same pass, takes the row and column sums of the
 * result for the next step. Locals, not pointers into w, so that the
 * compiler keeps them in registers. */
static INLINE void sinkhorn_backward(int n, int T, NeuralWork *w) {
    const PpaLanes eps = lanes_splat(SUM_EPS), zero = lanes_splat(0.0);
    PpaLanes *restrict E = w->dp;
    const PpaLanes *restrict ph = w->ph;
    PpaLanes rd[n], colE[n], acc[n], x[n], y[n], b1[n];
    for (int i = 0; i < n; i++) rd[i] = colE[i] = zero;
    for (int r = 0; r < n; r++)
        for (int i = 0; i < n; i++) {
            rd[r] += E[(size_t)r * n + i];
            colE[i] += E[(size_t)r * n + i];
        }
    for (int t = T; t >= 1; t--) {
        LaneMask act = (LaneMask){0};
        int all = 1;
        for (int l = 0; l < PPA_LANES; l++) {
            act[l] = w->iters[l] >= t ? -1 : 0;
            all &= w->iters[l] >= t;
        }
        const PpaLanes *A0 = w->a + (size_t)(t - 1) * n, *B1 = w->b + (size_t)t * n, *K = w->kap + (size_t)(t - 1) * n;
        backward_sums(n, t, w, rd, x, acc);
        for (int i = 0; i < n; i++) {
            b1[i] = B1[i];
            y[i] = lanes_select(K[i] < eps, zero, (colE[i] - acc[i] * b1[i]) * b1[i]);
            colE[i] = zero;
        }
        /* max(rho_r, eps) A_t[r] = A_{t-1}[r], so the update is P^ (x_r B_i + A_{t-1}[r] y_i) */
        for (int r = 0; r < n; r++) {
            PpaLanes *erow = E + (size_t)r * n, a0 = A0[r], sum = zero;
            const PpaLanes *prow = ph + (size_t)r * n;
            for (int i = 0; i < n; i++) {
                PpaLanes upd = erow[i] - prow[i] * (x[r] * b1[i] + a0 * y[i]);
                upd = all ? upd : lanes_select(act, upd, erow[i]);
                erow[i] = upd;
                sum += upd;
                colE[i] += upd;
            }
            rd[r] = sum;
        }
    }
}

/* From E_0 = dP^ * P^ (w->dp) to d loss / d s through the softmax
 * (dZ = E_0 - P^ rowsum(E_0)) and Z = (c s - B) / tau. */
static INLINE void neuralsort_backward(int n, double tau, const PpaLanes *s, NeuralWork *w, PpaLanes *grad) {
    PpaLanes *gam = w->vec;
    for (int i = 0; i < n; i++) gam[i] = grad[i] = lanes_splat(0.0);
    for (int r = 0; r < n; r++) {
        const PpaLanes *erow = w->dp + (size_t)r * n, *prow = w->ph + (size_t)r * n;
        PpaLanes rsum = lanes_splat(0.0);
        for (int j = 0; j < n; j++) rsum += erow[j];
        double c = (double)(n - 1 - 2 * r);
        for (int i = 0; i < n; i++) {
            PpaLanes dz = erow[i] - prow[i] * rsum;
            gam[i] += dz;
            grad[i] += c * dz;
        }
    }
    for (int m = 0; m < n; m++) {
        PpaLanes acc = lanes_splat(0.0);
        for (int j = 0; j < n; j++) acc += lanes_sgn(s[m] - s[j]) * (gam[m] + gam[j]);
        grad[m] = (grad[m] - acc) / tau;
    }
}

/* Gains and discounts into w; returns 1 / (IDCG@k + 1e-10), 0 where IDCG = 0.
 * Labels are sorted, descending, so the gains are too. */
static INLINE PpaLanes gains_and_ideal(const PpaLossOptions *o, int n, const PpaLanes *psi, NeuralWork *w) {
    int k = ndcg_cutoff(o->k, n);
    PpaLanes idcg = lanes_splat(0.0);
    for (int r = 0; r < n; r++) {
        w->disc[r] = r < k ? ndcg_discount(o->discount, r + 1) : 0.0;
        w->gain[r] = o->gain == PPA_GAIN_LINEAR ? psi[r] : lanes_expm1(psi[r] * M_LN2);
        idcg += w->disc[r] * w->gain[r];
    }
    return lanes_select(idcg > 0.0, 1.0 / (idcg + IDCG_EPS), lanes_splat(0.0));
}

static INLINE void lanes_kernel(const PpaLossOptions *o, int n, const PpaLanes *s, const PpaLanes *psi, PpaLanes *loss,
                                PpaLanes *grad, int *iters, NeuralWork *w) {
    const double *disc = w->disc;
    const PpaLanes *gain = w->gain;
    PpaLanes inv_idcg = gains_and_ideal(o, n, psi, w);
    int T = neural_forward(o, n, s, w);
    const PpaLanes *A = w->a + (size_t)T * n, *B = w->b + (size_t)T * n;

    /* DCG^ = sum_r D(r) sum_i P_T[r, i] G_i;  loss = -DCG^ / (IDCG + eps) */
    PpaLanes dcg = lanes_splat(0.0);
    for (int r = 0; r < n; r++) {
        if (disc[r] == 0.0) continue;
        const PpaLanes *prow = w->ph + (size_t)r * n;
        PpaLanes g = lanes_splat(0.0);
        for (int i = 0; i < n; i++) g += prow[i] * B[i] * gain[i];
        dcg += disc[r] * (A[r] * g);
    }
    *loss = 0.0 - dcg * inv_idcg;

    /* E_T = d loss / d P_T * P_T, then back through Sinkhorn to P^ */
    for (int r = 0; r < n; r++)
        for (int i = 0; i < n; i++)
            w->dp[(size_t)r * n + i] = -disc[r] * gain[i] * inv_idcg * (A[r] * w->ph[(size_t)r * n + i] * B[i]);
    sinkhorn_backward(n, T, w);
    neuralsort_backward(n, o->tau, s, w, grad);
    for (int l = 0; l < PPA_LANES; l++) iters[l] = w->iters[l];
}

void neural_ndcg_lanes(const PpaLossOptions *o, int n, const PpaLanes *s, const PpaLanes *psi, PpaLanes *loss,
                       PpaLanes *grad, int *iters, NeuralWork *w) {
    assert(n <= w->n_max && o->sinkhorn_iters <= w->iters_max);
    /* the paper's list sizes get a fully unrolled copy */
    switch (n) {
    case 4: lanes_kernel(o, 4, s, psi, loss, grad, iters, w); break;
    case 8: lanes_kernel(o, 8, s, psi, loss, grad, iters, w); break;
    default: lanes_kernel(o, n, s, psi, loss, grad, iters, w); break;
    }
}

double neural_ndcg_one(const PpaLossOptions *o, int n, const double *s, const double *psi, double *g, int *iters) {
    *iters = 0;
    if (ndcg_ideal(o->gain, o->discount, o->k, n, psi) == 0.0) { /* nothing to rank: 0, 0, no Sinkhorn */
        for (int i = 0; i < n; i++) g[i] = 0.0;
        return 0.0;
    }
    /* every lane holds the list, so the result is the batch path's to the bit */
    PpaLanes *buf = alloc_lanes(3 * (size_t)n), *sl = buf, *pl = buf + n, *dl = buf + 2 * (size_t)n, loss;
    for (int i = 0; i < n; i++) {
        sl[i] = lanes_splat(s[i]);
        pl[i] = lanes_splat(psi[i]);
    }
    int it[PPA_LANES];
    NeuralWork *w = neural_work_new(n, o->sinkhorn_iters);
    neural_ndcg_lanes(o, n, sl, pl, &loss, dl, it, w);
    neural_work_free(w);
    for (int i = 0; i < n; i++) g[i] = dl[i][0];
    *iters = it[0];
    free(buf);
    return loss[0];
}

void neural_ndcg_matrix(const PpaLossOptions *o, int n, const double *s, double *P, int *iters) {
    PpaLanes *sl = alloc_lanes((size_t)n);
    for (int i = 0; i < n; i++) sl[i] = lanes_splat(s[i]);
    NeuralWork *w = neural_work_new(n, o->sinkhorn_iters);
    int T = neural_forward(o, n, sl, w);
    const PpaLanes *A = w->a + (size_t)T * n, *B = w->b + (size_t)T * n;
    for (int r = 0; r < n; r++)
        for (int i = 0; i < n; i++) P[(size_t)r * n + i] = (A[r][0] * w->ph[(size_t)r * n + i][0]) * B[i][0];
    *iters = w->iters[0];
    neural_work_free(w);
    free(sl);
}
