/* cmd_demo.c: `ppa demo`: the paper's worked examples (appendix "NeuralSort
 * Details", "NDCG Approximation", Proposition prop:dpo_log2) and every
 * objective on one list, computed by the library. The default main job until
 * the full pipeline exists. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "core/common.h"
#include "losses/internal.h"
#include "options/argv.h"

static void print_vec(const char *label, int n, const double *v) {
    printf("  %-26s (", label);
    for (int i = 0; i < n; i++) printf("%s%.7f", i ? ", " : "", v[i]);
    printf(")\n");
}

static void p_times_s(int n, const double *P, const double *s, double *out) {
    for (int r = 0; r < n; r++) {
        out[r] = 0.0;
        for (int i = 0; i < n; i++) out[r] += P[r * n + i] * s[i];
    }
}

static void neuralsort_example(void) {
    const double s[4] = {9, 1, 5, 2};
    double P[16], ps[4], col[4] = {0};
    int it;
    PpaLossOptions o;
    ppa_loss_options_default(&o);
    o.sinkhorn = 0;
    neural_ndcg_matrix(&o, 4, s, P, &it);
    printf("NeuralSort, s = (9, 1, 5, 2), tau = 1: P^ (rows = ranks)\n");
    for (int r = 0; r < 4; r++) {
        printf("  [");
        for (int i = 0; i < 4; i++) printf(" %.7e", P[r * 4 + i]), col[i] += P[r * 4 + i];
        printf(" ]\n");
    }
    print_vec("column sums", 4, col);
    p_times_s(4, P, s, ps);
    print_vec("P^ s (NeuralSort)", 4, ps);
    o.sinkhorn = 1;
    neural_ndcg_matrix(&o, 4, s, P, &it);
    p_times_s(4, P, s, ps);
    char label[64];
    snprintf(label, sizeof label, "P s (Sinkhorn, %d iter)", it);
    print_vec(label, 4, ps);

    printf("\nSinkhorn-scaled P s for several tau (paper table tab_p_hat)\n");
    const double taus[4] = {0.01, 0.1, 1.0, 10.0};
    for (int t = 0; t < 4; t++) {
        o.tau = taus[t];
        neural_ndcg_matrix(&o, 4, s, P, &it);
        p_times_s(4, P, s, ps);
        snprintf(label, sizeof label, "tau = %g (%d iter)", taus[t], it);
        print_vec(label, 4, ps);
    }
}

static void ndcg_example(void) {
    const double s[4] = {9, 1, 5, 2}, psi[4] = {5, 4, 3, 2};
    PpaLossOptions o;
    ppa_loss_options_default(&o);
    PpaListMetrics m;
    ppa_metrics_list(&o, 4, s, psi, NULL, &m);
    printf("\nNDCG, psi = (5, 4, 3, 2), s = (9, 1, 5, 2): NDCG@4 = %.10f\n", m.ndcg);
    const double taus[4] = {0.01, 0.1, 1.0, 10.0};
    for (int t = 0; t < 4; t++) {
        PpaListResult r;
        o.tau = taus[t];
        ppa_loss_list(PPA_NEURAL_NDCG, &o, 4, s, psi, NULL, NULL, &r);
        printf("  neural_ndcg loss, tau = %-5g %.10f\n", taus[t], r.loss);
    }
}

static void dpo_example(void) {
    const double s[3] = {0.7, 0.5, 0.6}, psi[3] = {3, 2, 1};
    double g[3];
    PpaLossOptions o;
    ppa_loss_options_default(&o);
    PpaListResult r;
    ppa_loss_list(PPA_DPO_ALL_PAIRS, &o, 3, s, psi, NULL, g, &r);
    printf("\nDPO all pairs, s = (0.7, 0.5, 0.6), psi_1 > psi_2 > psi_3: loss %.16f < ln 2\n", r.loss);
    print_vec("gradient", 3, g);
}

static void all_objectives(void) {
    const double psi[8] = {0.79, 0.75, 0.74, 0.70, 0.70, 0.66, 0.64, 0.61};
    const double s[8] = {0.3, -0.1, 0.5, 0.0, 0.2, -0.4, 0.1, -0.2};
    const double zero[8] = {0};
    PpaLossOptions o;
    ppa_loss_options_default(&o);
    printf("\nEvery objective on one list of 8 (labels %.2f .. %.2f)\n  %-16s %14s %14s\n", psi[0], psi[7],
           "objective", "loss at s = 0", "loss at s");
    for (int k = 0; k < PPA_N_OBJECTIVES; k++) {
        PpaListResult r0, r1;
        ppa_loss_list((PpaObjective)k, &o, 8, zero, psi, NULL, NULL, &r0);
        ppa_loss_list((PpaObjective)k, &o, 8, s, psi, NULL, NULL, &r1);
        printf("  %-16s %14.9f %14.9f\n", ppa_objective_name((PpaObjective)k), r0.loss, r1.loss);
    }
}

int cmd_demo(int argc, char **argv) {
    static const struct option none[] = {{0}};
    const char *v;
    char err[512];
    ArgvParser p;
    argv_begin(&p, "demo", none, NULL, argc, argv);
    for (int c; (c = argv_next(&p, &v, err, sizeof err)) != ARGV_END;) {
        if (c != ARGV_HELP) ppa_die(2, "demo: %s", err);
        printf("usage: ppa demo\n\nPrints the paper's worked examples and every objective on one list.\n");
        return 0;
    }
    neuralsort_example();
    ndcg_example();
    dpo_example();
    all_objectives();
    return 0;
}
