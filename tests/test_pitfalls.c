/* test_pitfalls.c: properties of the objectives and the pitfalls of
 * shared/spec/pitfalls.md that concern the loss layer (13, 14, 17, 18, 20,
 * 21, 22), step-0 closed forms (objectives.md 4), option parsing, and the
 * batched entry point (same bits as one list at a time, any thread count). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "check.h"
#include "core/rng.h"
#include "losses/internal.h"

static PpaLossOptions defaults(void) {
    PpaLossOptions o;
    ppa_loss_options_default(&o);
    return o;
}

static double run(PpaObjective obj, const PpaLossOptions *o, int n, const double *s, const double *psi,
                  const unsigned char *mask, double *g) {
    PpaListResult r;
    PpaStatus st = ppa_loss_list(obj, o, n, s, psi, mask, g, &r);
    CHECK(st == PPA_OK, "%s: status %s", ppa_objective_name(obj), ppa_status_string(st));
    return r.loss;
}

static const char *name(int obj) { return ppa_objective_name((PpaObjective)obj); }

/* objectives.md 4: policy = reference, every s = 0 */
static void test_step0_closed_forms(void) {
    const int n = 8;
    double s[8] = {0}, psi[8] = {0.79, 0.75, 0.74, 0.71, 0.70, 0.66, 0.64, 0.61}, g[8];
    PpaLossOptions o = defaults();
    const double ln2 = M_LN2;
    double lnfact = 0;
    for (int i = 2; i <= n; i++) lnfact += log(i);
    CHECK_NEAR(lnfact, 10.6046029027, 1e-10, 0, "ln 8!");
    for (int obj = PPA_DPO_SINGLE_PAIR; obj <= PPA_DPO_ALL_PAIRS; obj++)
        CHECK_NEAR(run(obj, &o, n, s, psi, NULL, g), ln2, 1e-15, 0, "%s at step 0", name(obj));
    CHECK_NEAR(run(PPA_RANKNET, &o, n, s, psi, NULL, g), ln2, 1e-15, 0, "ranknet at step 0");
    CHECK_NEAR(run(PPA_HINGE, &o, n, s, psi, NULL, g), 1.0, 1e-15, 0, "hinge at step 0");
    CHECK_NEAR(run(PPA_LISTMLE, &o, n, s, psi, NULL, g), lnfact, 1e-12, 0, "listmle at step 0");
    CHECK_NEAR(run(PPA_LISTNET, &o, n, s, psi, NULL, g), -log(1.0 / n + 1e-10), 1e-12, 0, "listnet at step 0");
    CHECK_NEAR(run(PPA_IPO, &o, n, s, psi, NULL, g), 1 / (4 * o.beta * o.beta), 1e-12, 0, "ipo at step 0");

    double G[8], idcg = ndcg_ideal(PPA_GAIN_POW2, PPA_DISCOUNT_LOG2, 0, n, psi), meang = 0, dsum = 0, approx = 0;
    for (int i = 0; i < n; i++) {
        G[i] = exp2(psi[i]) - 1;
        meang += G[i] / n;
        dsum += 1 / log2(2.0 + i);
        approx += G[i];
    }
    CHECK_NEAR(run(PPA_NEURAL_NDCG, &o, n, s, psi, NULL, g), -meang * dsum / (idcg + 1e-10), 1e-12, 0,
               "neural_ndcg at step 0");
    CHECK_NEAR(run(PPA_APPROX_NDCG, &o, n, s, psi, NULL, g), -approx / (log2((n + 3) / 2.0) * idcg), 1e-12, 0,
               "approx_ndcg at step 0");
    /* lambda: ln 2 x mean w_pq, pi = label order (stable ties) */
    double wsum = 0;
    int pairs = 0;
    for (int p = 0; p < n; p++)
        for (int q = p + 1; q < n; q++) {
            wsum += fabs(1 / log2(2.0 + p) - 1 / log2(2.0 + q)) * fabs(G[p] - G[q]) / idcg;
            pairs++;
        }
    CHECK_NEAR(run(PPA_LAMBDA, &o, n, s, psi, NULL, g), ln2 * wsum / pairs, 1e-12, 0, "lambda at step 0");
    /* pitfall 22: at s = 0 NeuralSort's |s_i - s_j| terms carry no gradient, so
     * the gradient comes from c_r s_i alone: finite, nonzero, summing to 0 */
    run(PPA_NEURAL_NDCG, &o, n, s, psi, NULL, g);
    double sum = 0, norm = 0;
    for (int i = 0; i < n; i++) sum += g[i], norm += fabs(g[i]);
    CHECK(isfinite(norm) && norm > 1e-6, "neural_ndcg step-0 gradient is nonzero (|g|_1 = %g)", norm);
    CHECK_NEAR(sum, 0.0, 1e-15, 0, "neural_ndcg step-0 gradient sums to 0");
}

/* pitfall 21: adding c to every score changes no loss and no gradient */
static void test_shift_invariance(void) {
    PpaRng rng;
    rng_seed(&rng, 21);
    double s[8], t[8], psi[8], g[8], h[8];
    for (int i = 0; i < 8; i++) s[i] = rng_normal(&rng), psi[i] = rng_uniform(&rng);
    for (int obj = 0; obj < PPA_N_OBJECTIVES; obj++) {
        PpaLossOptions o = defaults();
        o.sinkhorn_tol = 0;
        for (int i = 0; i < 8; i++) t[i] = s[i] + 3.75;
        double a = run(obj, &o, 8, s, psi, NULL, g), b = run(obj, &o, 8, t, psi, NULL, h);
        CHECK_NEAR(b, a, 1e-12, 1e-12, "%s shift invariance: loss", name(obj));
        for (int i = 0; i < 8; i++) CHECK_NEAR(h[i], g[i], 1e-12, 1e-9, "%s shift invariance: grad[%d]", name(obj), i);
    }
}

/* NeuralNDCG -> NDCG as tau -> 0 (Sinkhorn on) */
static void test_tau_limit(void) {
    PpaRng rng;
    rng_seed(&rng, 3);
    for (int trial = 0; trial < 20; trial++) {
        int n = 2 + trial % 15;
        double s[16], psi[16], g[16];
        for (int i = 0; i < n; i++) s[i] = rng_normal(&rng), psi[i] = rng_uniform(&rng);
        PpaLossOptions o = defaults();
        PpaListMetrics m;
        ppa_metrics_list(&o, n, s, psi, NULL, &m);
        o.tau = 1e-4;
        double loss = run(PPA_NEURAL_NDCG, &o, n, s, psi, NULL, g);
        CHECK_NEAR(-loss, m.ndcg, 1e-8, 0, "NeuralNDCG at tau 1e-4 equals NDCG (n = %d)", n);
    }
}

/* pitfall 13: a pair 30 nats the wrong way: loss ~ 30 w, gradient ~ -w, finite
 * and nonzero, in float64 and through the float32 batch with bf16 inputs */
static void test_log_sigmoid_stability(void) {
    double s[2] = {-15, 15}, psi[2] = {1, 0}, g[2];
    PpaLossOptions o = defaults();
    double loss = run(PPA_DPO_SINGLE_PAIR, &o, 2, s, psi, NULL, g);
    CHECK_NEAR(loss, 30.0, 1e-12, 0, "dpo at d = -30");
    CHECK_NEAR(g[0], -1.0, 1e-12, 0, "dpo gradient at d = -30");
    double w = (1 / log2(2.0) - 1 / log2(3.0)) * 1.0 / 1.0; /* |dD| |dG| / maxDCG, G = (1, 0), maxDCG = 1 */
    loss = run(PPA_LAMBDA, &o, 2, s, psi, NULL, g);
    CHECK_NEAR(loss, 30 * w, 1e-9, 0, "lambda at d = -30: 30 w");
    CHECK_NEAR(g[0], -w, 1e-12, 0, "lambda gradient at d = -30: -w");
    CHECK(g[0] != 0 && isfinite(g[0]), "lambda gradient is finite and nonzero");
    float fs[2] = {-15.0f, 15.0f}, fpsi[2] = {1.0f, 0.0f}, fg[2], fl[1]; /* exact in bf16 */
    for (int obj = 0; obj < PPA_N_OBJECTIVES; obj++) {
        ppa_loss_batch((PpaObjective)obj, &o, 1, 2, fs, fpsi, NULL, fl, fg, NULL, NULL);
        CHECK(isfinite(fl[0]) && isfinite(fg[0]) && isfinite(fg[1]), "%s finite at d = -30 (float32)", name(obj));
    }
    ppa_loss_batch(PPA_LAMBDA, &o, 1, 2, fs, fpsi, NULL, fl, fg, NULL, NULL);
    CHECK_NEAR(fg[0], -w, 1e-6, 0, "lambda float32 gradient at d = -30");
}

/* pitfall 14: ListMLE at |s| ~ 1e3 against a long double evaluation */
static void test_listmle_large(void) {
    double s[6] = {1000, -1000, 999.5, -999.5, 3, 1000}, psi[6] = {6, 5, 4, 3, 2, 1}, g[6];
    PpaLossOptions o = defaults();
    long double want = 0;
    for (int k = 0; k < 6; k++) {
        long double z = 0;
        for (int j = k; j < 6; j++) z += expl((long double)s[j]);
        want += logl(z) - s[k];
    }
    double loss = run(PPA_LISTMLE, &o, 6, s, psi, NULL, g);
    CHECK_NEAR(loss, (double)want, 1e-9, 1e-14, "listmle at |s| = 1e3");
    for (int i = 0; i < 6; i++) CHECK(isfinite(g[i]), "listmle gradient finite at |s| = 1e3");
    o.normalize = 1;
    CHECK_NEAR(run(PPA_LISTMLE, &o, 6, s, psi, NULL, g), (double)want / 6, 1e-9, 1e-14, "listmle normalize");
}

/* pitfall 17: masked items with garbage (NaN, inf) scores change nothing */
static void test_padding(void) {
    double s[5] = {0.3, NAN, -0.2, INFINITY, 0.9}, psi[5] = {0.5, 0.9, 0.1, 0.2, 0.7};
    unsigned char mask[5] = {1, 0, 1, 0, 1};
    double cs[3] = {0.3, -0.2, 0.9}, cpsi[3] = {0.5, 0.1, 0.7};
    for (int obj = 0; obj < PPA_N_OBJECTIVES; obj++) {
        PpaLossOptions o = defaults();
        double g[5], cg[3];
        double a = run(obj, &o, 5, s, psi, mask, g), b = run(obj, &o, 3, cs, cpsi, NULL, cg);
        CHECK(a == b, "%s: padded loss %.17g equals compacted %.17g", name(obj), a, b);
        CHECK(g[0] == cg[0] && g[2] == cg[1] && g[4] == cg[2] && g[1] == 0 && g[3] == 0,
              "%s: padded gradient equals compacted, 0 on padding", name(obj));
        /* a null (NaN) label masks too */
        double psi2[5] = {0.5, NAN, 0.1, NAN, 0.7}, s2[5] = {0.3, 1e30, -0.2, -7e20, 0.9};
        CHECK(run(obj, &o, 5, s2, psi2, NULL, g) == b, "%s: NaN labels mask their items", name(obj));
        float fs[5], fp[5], fg[5], fl, fcs[3], fcp[3], fcg[3], fcl;
        for (int i = 0; i < 5; i++) fs[i] = (float)s[i], fp[i] = (float)psi[i];
        for (int i = 0; i < 3; i++) fcs[i] = (float)cs[i], fcp[i] = (float)cpsi[i];
        ppa_loss_batch((PpaObjective)obj, &o, 1, 5, fs, fp, mask, &fl, fg, NULL, NULL);
        ppa_loss_batch((PpaObjective)obj, &o, 1, 3, fcs, fcp, NULL, &fcl, fcg, NULL, NULL);
        CHECK(fl == fcl && fg[0] == fcg[0] && fg[2] == fcg[1] && fg[4] == fcg[2] && fg[1] == 0 && fg[3] == 0,
              "%s: batch ignores masked garbage", name(obj));
    }
}

/* pitfall 18: tied labels and tied scores give one documented, repeatable answer */
static void test_ties(void) {
    double s[6] = {0.1, 0.1, -0.3, 0.4, 0.1, 0.0}, psi[6] = {0.5, 0.5, 0.2, 0.5, 0.9, 0.2};
    for (int obj = 0; obj < PPA_N_OBJECTIVES; obj++)
        for (int ties = 0; ties < 2; ties++) {
            PpaLossOptions o = defaults();
            o.ties = (PpaTies)ties;
            double g1[6], g2[6];
            double a = run(obj, &o, 6, s, psi, NULL, g1), b = run(obj, &o, 6, s, psi, NULL, g2);
            CHECK(a == b && !memcmp(g1, g2, sizeof g1) && isfinite(a), "%s: repeatable with ties", name(obj));
        }
    /* ties=exclude: tied-label pairs contribute 0 but the normaliser stays C(n,2) */
    double t0[3] = {0, 0, 0}, tpsi[3] = {1, 1, 0}, g[3];
    PpaLossOptions o = defaults();
    CHECK_NEAR(run(PPA_DPO_ALL_PAIRS, &o, 3, t0, tpsi, NULL, g), 2 * M_LN2 / 3, 1e-15, 0, "dpo ties=exclude");
    o.ties = PPA_TIES_INCLUDE;
    CHECK_NEAR(run(PPA_DPO_ALL_PAIRS, &o, 3, t0, tpsi, NULL, g), M_LN2, 1e-15, 0, "dpo ties=include");
    /* all labels equal: ranking objectives have nothing to rank */
    double eq[4] = {0.5, 0.5, 0.5, 0.5}, sc[4] = {0.3, -0.1, 0.2, 0.0}, g4[4];
    o = defaults();
    CHECK(run(PPA_LAMBDA, &o, 4, sc, eq, NULL, g4) == 0 && g4[0] == 0, "lambda with equal labels: 0, not NaN");
    CHECK(run(PPA_RANKNET, &o, 4, sc, eq, NULL, g4) == 0 && g4[0] == 0, "ranknet with equal labels: 0");
    run(PPA_NEURAL_NDCG, &o, 4, sc, eq, NULL, g4);
    for (int i = 0; i < 4; i++) CHECK_NEAR(g4[i], 0.0, 1e-15, 0, "neural_ndcg with equal labels: zero gradient");
}

/* pitfall 20: negative labels, the -1 sentinel, all-zero labels */
static void test_labels(void) {
    double s[3] = {0.2, 0.1, 0.0}, neg[3] = {1, -1, 0}, g[3];
    PpaLossOptions o = defaults();
    for (int obj = 0; obj < PPA_N_OBJECTIVES; obj++) {
        PpaListResult r;
        PpaStatus st = ppa_loss_list((PpaObjective)obj, &o, 3, s, neg, NULL, g, &r);
        if (ppa_objective_uses_gain((PpaObjective)obj))
            CHECK(st == PPA_ERR_NEGATIVE_LABEL && r.bad_index == 1, "%s rejects label -1 at item 1", name(obj));
        else
            CHECK(st == PPA_OK && r.n_valid == 3, "%s: label -1 is a real label, not padding", name(obj));
    }
    /* a label whose gain overflows (2^2000) is refused, not turned into a NaN loss; 1000 still works */
    double big[3] = {0, 2000, 1}, top[3] = {1000, 1, 0};
    for (int obj = 0; obj < PPA_N_OBJECTIVES; obj++) {
        PpaListResult r;
        PpaStatus st = ppa_loss_list((PpaObjective)obj, &o, 3, s, big, NULL, g, &r);
        int gain = ppa_objective_uses_gain((PpaObjective)obj);
        CHECK(gain ? st == PPA_ERR_LABEL_TOO_LARGE && r.bad_index == 1 : st == PPA_OK && isfinite(r.loss),
              "%s and label 2000", name(obj));
        CHECK(ppa_label_check((PpaObjective)obj, 2000) == (gain ? PPA_ERR_LABEL_TOO_LARGE : PPA_OK) &&
                  ppa_label_check((PpaObjective)obj, -1) == (gain ? PPA_ERR_NEGATIVE_LABEL : PPA_OK) &&
                  ppa_label_check((PpaObjective)obj, INFINITY) == PPA_ERR_NONFINITE_LABEL,
              "%s: ppa_label_check agrees with the loss", name(obj));
        st = ppa_loss_list((PpaObjective)obj, &o, 3, s, top, NULL, g, &r);
        CHECK(st == PPA_OK && isfinite(r.loss) && isfinite(g[0]) && isfinite(g[1]) && isfinite(g[2]),
              "%s: label 1000 gives a finite loss and gradient", name(obj));
    }
    double zero[3] = {0, 0, 0};
    const PpaObjective gains[3] = {PPA_NEURAL_NDCG, PPA_APPROX_NDCG, PPA_LAMBDA};
    for (int k = 0; k < 3; k++) {
        double loss = run(gains[k], &o, 3, s, zero, NULL, g);
        CHECK(loss == 0 && g[0] == 0 && g[1] == 0 && g[2] == 0, "%s: all-zero labels give 0 and 0", name(gains[k]));
    }
    PpaListMetrics m;
    ppa_metrics_list(&o, 3, s, zero, NULL, &m);
    CHECK(m.ndcg == 1.0, "metric NDCG with IDCG = 0 is 1");
    ppa_metrics_list(&o, 3, s, neg, NULL, &m);
    CHECK(isnan(m.ndcg), "metric NDCG is undefined for negative labels");
    /* pitfall 16: labels 1e-4 apart stay ordered */
    double close[2] = {0.7891, 0.7890}, sc[2] = {0, 1};
    ppa_metrics_list(&o, 2, sc, close, NULL, &m);
    CHECK(m.accuracy == 0.0, "labels 1e-4 apart are a strict pair");
    double bad_s[2] = {NAN, 0}, inf_l[2] = {INFINITY, 0};
    PpaListResult r;
    CHECK(ppa_loss_list(PPA_DPO_ALL_PAIRS, &o, 2, bad_s, close, NULL, g, &r) == PPA_ERR_NONFINITE_SCORE,
          "a NaN score of a valid item is an error");
    CHECK(ppa_loss_list(PPA_DPO_ALL_PAIRS, &o, 2, sc, inf_l, NULL, g, &r) == PPA_ERR_NONFINITE_LABEL,
          "an infinite label is an error");
}

/* unsorted input: objectives sort by label themselves */
static void test_unsorted(void) {
    double s[5] = {0.4, -0.2, 0.9, 0.0, 0.3}, psi[5] = {0.2, 0.8, 0.5, 0.1, 0.9};
    int perm[5] = {4, 1, 2, 0, 3}; /* label order */
    for (int obj = 0; obj < PPA_N_OBJECTIVES; obj++) {
        PpaLossOptions o = defaults();
        double ss[5], pp[5], g[5], gs[5];
        for (int i = 0; i < 5; i++) ss[i] = s[perm[i]], pp[i] = psi[perm[i]];
        double a = run(obj, &o, 5, s, psi, NULL, g), b = run(obj, &o, 5, ss, pp, NULL, gs);
        CHECK(a == b, "%s: loss independent of input order", name(obj));
        int same = 1;
        for (int i = 0; i < 5; i++) same &= g[perm[i]] == gs[i];
        CHECK(same, "%s: gradient follows its item", name(obj));
    }
}

/* ppa_loss_batch: same bits as the per-list float64 path, for any thread
 * count and batch composition; lists of different valid lengths */
static void test_batch(void) {
    const int B = 37, K = 9;
    float s[37 * 9], psi[37 * 9], g1[37 * 9], g2[37 * 9], l1[37], l2[37];
    unsigned char mask[37 * 9];
    PpaRng rng;
    rng_seed(&rng, 11);
    for (int i = 0; i < B * K; i++) {
        s[i] = (float)rng_normal(&rng);
        psi[i] = (float)rng_uniform(&rng);
        mask[i] = rng_uniform(&rng) < 0.8;
    }
    for (int obj = 0; obj < PPA_N_OBJECTIVES; obj++) {
        PpaLossOptions o = defaults();
        double mean1, mean2;
#ifdef _OPENMP
        omp_set_num_threads(1);
#endif
        ppa_loss_batch((PpaObjective)obj, &o, B, K, s, psi, mask, l1, g1, &mean1, NULL);
#ifdef _OPENMP
        omp_set_num_threads(2);
#endif
        ppa_loss_batch((PpaObjective)obj, &o, B, K, s, psi, mask, l2, g2, &mean2, NULL);
        CHECK(!memcmp(l1, l2, sizeof l1) && !memcmp(g1, g2, sizeof g1) && mean1 == mean2,
              "%s: batch result independent of thread count", name(obj));
        /* the first list alone, and each list through the float64 API */
        float l0, g0[9];
        ppa_loss_batch((PpaObjective)obj, &o, 1, K, s, psi, mask, &l0, g0, NULL, NULL);
        CHECK(l0 == l1[0] && !memcmp(g0, g1, sizeof g0), "%s: batch result independent of other lists", name(obj));
        int same = 1;
        double sum = 0;
        for (int b = 0; b < B; b++) {
            double ds[9], dp[9], dg[9];
            for (int i = 0; i < K; i++) ds[i] = s[b * K + i], dp[i] = psi[b * K + i];
            double l = run(obj, &o, K, ds, dp, mask + b * K, dg);
            sum += l;
            same &= (float)l == l1[b];
            for (int i = 0; i < K; i++) same &= (float)dg[i] == g1[b * K + i];
        }
        CHECK(same, "%s: batch equals ppa_loss_list to the float32 bit", name(obj));
        CHECK_NEAR(mean1, sum / B, 1e-15, 1e-15, "%s: batch mean loss", name(obj));
    }
    float bad[4] = {0.1f, 0.2f, 0.3f, 0.4f}, negl[4] = {0.5f, 0.2f, 0.1f, -1.0f}, fg[4];
    int bad_list;
    PpaLossOptions o = defaults();
    PpaStatus st = ppa_loss_batch(PPA_NEURAL_NDCG, &o, 2, 2, bad, negl, NULL, NULL, fg, NULL, &bad_list);
    CHECK(st == PPA_ERR_NEGATIVE_LABEL && bad_list == 1, "batch names the list with a negative label");
    /* a list too long for NeuralSort's n x n matrices is refused, not allocated */
    enum { N = PPA_NEURAL_MAX_ITEMS + 1 };
    static double ls[N], lp[N], lg[N];
    for (int i = 0; i < N; i++) ls[i] = 0.001 * i, lp[i] = (i % 7) / 7.0;
    PpaListResult r;
    CHECK(ppa_loss_list(PPA_NEURAL_NDCG, &o, N, ls, lp, NULL, lg, &r) == PPA_ERR_LIST_TOO_LONG, "long list refused");
    CHECK(ppa_loss_list(PPA_LISTMLE, &o, N, ls, lp, NULL, lg, &r) == PPA_OK, "long lists are fine elsewhere");
    /* approx_ndcg's n x n sigmoids: the same limit, in both APIs; masked items do not count */
    CHECK(ppa_loss_list(PPA_APPROX_NDCG, &o, N, ls, lp, NULL, lg, &r) == PPA_ERR_LIST_TOO_LONG,
          "approx_ndcg: long list refused");
    static unsigned char valid[N];
    for (int i = 0; i < N; i++) valid[i] = i > 0;
    CHECK(ppa_loss_list(PPA_APPROX_NDCG, &o, N, ls, lp, valid, lg, &r) == PPA_OK && r.n_valid == N - 1 &&
              isfinite(r.loss),
          "approx_ndcg: 1024 valid items of 1025 are fine");
    static float fs[2 * N], fp[2 * N], fgl[2 * N], fl[2];
    for (int i = 0; i < 2 * N; i++) fs[i] = (float)ls[i % N], fp[i] = (float)lp[i % N];
    for (int i = N; i < 2 * N; i++) fp[i] = i % N ? fp[i] : NAN; /* list 1 has one missing label: 1024 valid */
    st = ppa_loss_batch(PPA_APPROX_NDCG, &o, 2, N, fs, fp, NULL, fl, fgl, NULL, &bad_list);
    CHECK(st == PPA_ERR_LIST_TOO_LONG && bad_list == 0, "approx_ndcg batch: the long list named");
    CHECK(ppa_objective_max_items(PPA_APPROX_NDCG) == PPA_NEURAL_MAX_ITEMS &&
              ppa_objective_max_items(PPA_DPO_ALL_PAIRS) == INT_MAX,
          "the limits are stated");
}

static void test_options(void) {
    PpaLossOptions o = defaults();
    char err[256];
    CHECK(ppa_loss_option_set(&o, "tau", "0", err, sizeof err) == PPA_ERR_BAD_OPTION, "tau 0 rejected");
    CHECK(ppa_loss_option_set(&o, "tau", "abc", err, sizeof err) == PPA_ERR_BAD_OPTION, "tau abc rejected");
    CHECK(ppa_loss_option_set(&o, "gain", "cubic", err, sizeof err) == PPA_ERR_BAD_OPTION, "gain cubic rejected");
    CHECK(ppa_loss_option_set(&o, "nonsense", "1", err, sizeof err) == PPA_ERR_BAD_OPTION && strstr(err, "nonsense"),
          "unknown option named in the message");
    o = defaults();
    CHECK(ppa_loss_option_set(&o, "sinkhorn-iters", "7", err, sizeof err) == PPA_OK && o.sinkhorn_iters == 7,
          "hyphenated keys accepted");
    CHECK(ppa_loss_option_set(&o, "pairs", "bpr", err, sizeof err) == PPA_OK && o.pairs == PPA_PAIRS_BEST_OTHERS,
          "pairs alias");
    PpaObjective obj;
    const char *aliases[][2] = {{"ppa", "neural_ndcg"}, {"lipo", "lambda"}, {"lambdarank", "lambda"},
                                {"slic", "hinge"},      {"dpo_pl", "listmle"}, {"dpo", "dpo_all_pairs"}};
    for (int i = 0; i < 6; i++)
        CHECK(!ppa_objective_parse(aliases[i][0], &obj) && !strcmp(ppa_objective_name(obj), aliases[i][1]),
              "alias %s", aliases[i][0]);
    CHECK(ppa_objective_parse("dpo_ipo", &obj) == -1, "unknown objective");
}

int main(void) {
    test_step0_closed_forms();
    test_shift_invariance();
    test_tau_limit();
    test_log_sigmoid_stability();
    test_listmle_large();
    test_padding();
    test_ties();
    test_labels();
    test_unsorted();
    test_batch();
    test_options();
    return check_report("test_pitfalls");
}
