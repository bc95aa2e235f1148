/* test_losses.c: every objective against the PyTorch float64 goldens
 * (tests/ref/objectives_ref.py), against central finite differences, and on
 * the paper's worked examples (objectives.md section 6). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/rng.h"
#include "io/jsonl.h"
#include "losses/internal.h"

/* ---- goldens ---- */

static void set_options(const cJSON *opts, PpaLossOptions *o, long line) {
    ppa_loss_options_default(o);
    for (const cJSON *it = opts ? opts->child : NULL; it; it = it->next) {
        char val[64], err[256];
        if (cJSON_IsBool(it)) snprintf(val, sizeof val, "%s", cJSON_IsTrue(it) ? "true" : "false");
        else if (cJSON_IsNumber(it)) snprintf(val, sizeof val, "%.17g", it->valuedouble);
        else snprintf(val, sizeof val, "%s", it->valuestring ? it->valuestring : "");
        PpaStatus st = ppa_loss_option_set(o, it->string, val, err, sizeof err);
        CHECK(st == PPA_OK, "golden line %ld: option %s=%s: %s", line, it->string, val, err);
    }
}

static double number_or_nan(const cJSON *obj, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* Loss and metrics to 1e-10 absolute + 1e-8 relative: both sides are float64
 * implementations of the same formulas; only rounding differs. */
static void test_goldens(const char *path) {
    FILE *f = fopen(path, "r");
    CHECK(f != NULL, "cannot open %s (make goldens)", path);
    if (!f) return;
    JsonlReader rd;
    jsonl_init(&rd, f, path);
    char *line, err[256];
    double *s = NULL, *psi = NULL, *want = NULL;
    int cs = 0, cp = 0, cw = 0, cases = 0, per_obj[PPA_N_OBJECTIVES] = {0}, step0[PPA_N_OBJECTIVES] = {0};
    while (jsonl_next(&rd, &line)) {
        cJSON *j = cJSON_Parse(line);
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "objective");
        PpaObjective obj;
        if (!j || !cJSON_IsString(name) || ppa_objective_parse(name->valuestring, &obj)) {
            CHECK(0, "%s:%ld: bad golden line", path, rd.line);
            cJSON_Delete(j);
            continue;
        }
        PpaLossOptions o;
        set_options(cJSON_GetObjectItemCaseSensitive(j, "options"), &o, rd.line);
        int n = json_number_array(j, "scores", 0, &s, &cs, err, sizeof err);
        int m = json_number_array(j, "labels", 1, &psi, &cp, err, sizeof err);
        int ng = json_number_array(j, "grad", 0, &want, &cw, err, sizeof err);
        CHECK(n > 0 && n == m && n == ng, "%s:%ld: bad arrays", path, rd.line);
        if (n <= 0 || n != m || n != ng) {
            cJSON_Delete(j);
            continue;
        }
        double *g = malloc(sizeof(double) * (size_t)n);
        PpaListResult r;
        PpaStatus st = ppa_loss_list(obj, &o, n, s, psi, NULL, g, &r);
        CHECK(st == PPA_OK, "%s:%ld: status %s", path, rd.line, ppa_status_string(st));
        CHECK_NEAR(r.loss, number_or_nan(j, "loss"), 1e-10, 1e-8, "%s:%ld %s loss", path, rd.line, name->valuestring);
        for (int i = 0; i < n; i++)
            CHECK_NEAR(g[i], want[i], 1e-10, 1e-8, "%s:%ld %s grad[%d]", path, rd.line, name->valuestring, i);
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(j, "sinkhorn_iters");
        if (cJSON_IsNumber(it))
            CHECK(r.sinkhorn_iters == it->valueint, "%s:%ld sinkhorn iterations %d, want %d", path, rd.line,
                  r.sinkhorn_iters, it->valueint);
        PpaListMetrics met;
        ppa_metrics_list(&o, n, s, psi, NULL, &met);
        CHECK_NEAR(met.ndcg, number_or_nan(j, "ndcg"), 1e-12, 1e-10, "%s:%ld ndcg", path, rd.line);
        CHECK_NEAR(met.accuracy, number_or_nan(j, "accuracy"), 1e-12, 0, "%s:%ld accuracy", path, rd.line);
        CHECK_NEAR(met.kendall_tau, number_or_nan(j, "kendall_tau"), 1e-12, 1e-12, "%s:%ld kendall", path, rd.line);

        int equal = 1;
        for (int i = 1; i < n; i++) equal &= s[i] == s[0] || isnan(psi[i]);
        step0[obj] += equal;
        per_obj[obj]++;
        cases++;
        free(g);
        cJSON_Delete(j);
    }
    /* the goldens must cover every objective, each also at step 0 (all scores
     * equal: the sgn(0) = 0 convention of pitfall 22) */
    for (int k = 0; k < PPA_N_OBJECTIVES; k++) {
        CHECK(per_obj[k] >= 20, "goldens: only %d cases for %s", per_obj[k], ppa_objective_name((PpaObjective)k));
        CHECK(step0[k] >= 1, "goldens: no step-0 case for %s", ppa_objective_name((PpaObjective)k));
    }
    printf("goldens: %d cases from %s\n", cases, path);
    free(s);
    free(psi);
    free(want);
    jsonl_free(&rd);
    fclose(f);
}

/* ---- finite differences ---- */

static double loss_at(PpaObjective obj, const PpaLossOptions *o, int n, const double *s, const double *psi) {
    PpaListResult r;
    ppa_loss_list(obj, o, n, s, psi, NULL, NULL, &r);
    return r.loss;
}

/* Random lists without score ties and away from the hinge kink; Sinkhorn with
 * tol 0 so that every evaluation runs the same iterations. */
static void test_finite_differences(void) {
    PpaRng rng;
    rng_seed(&rng, 7);
    int checked = 0;
    for (int obj = 0; obj < PPA_N_OBJECTIVES; obj++)
        for (int n = 2; n <= 16; n += (n < 6 ? 1 : 5)) {
            PpaLossOptions o;
            ppa_loss_options_default(&o);
            o.sinkhorn_tol = 0.0;
            o.label_smoothing = obj == PPA_DPO_BPR ? 0.1 : 0.0;
            double s[16], psi[16], g[16], sp[16];
            for (int i = 0; i < n; i++) {
                s[i] = 1.5 * rng_normal(&rng);
                psi[i] = floor(4.0 * rng_uniform(&rng)) / 4.0; /* label ties included */
            }
            const double h = 1e-6;
            PpaListResult r;
            ppa_loss_list((PpaObjective)obj, &o, n, s, psi, NULL, g, &r);
            for (int i = 0; i < n; i++) {
                memcpy(sp, s, sizeof s);
                sp[i] = s[i] + h;
                double up = loss_at((PpaObjective)obj, &o, n, sp, psi);
                sp[i] = s[i] - h;
                double down = loss_at((PpaObjective)obj, &o, n, sp, psi);
                double fd = (up - down) / (2 * h);
                CHECK_NEAR(g[i], fd, 2e-7, 1e-5, "finite differences %s n=%d item %d",
                           ppa_objective_name((PpaObjective)obj), n, i);
                checked++;
            }
        }
    printf("finite differences: %d gradient entries\n", checked);
}

/* ---- the paper's worked examples (objectives.md 6.1-6.5) ---- */

static void p_dot_s(int n, const double *P, const double *s, double *out) {
    for (int r = 0; r < n; r++) {
        out[r] = 0;
        for (int i = 0; i < n; i++) out[r] += P[r * n + i] * s[i];
    }
}

static void test_neuralsort_example(void) {
    const double s[4] = {9, 1, 5, 2};
    const double want_P[16] = {9.8201160e-01, 1.4956017e-08, 1.7986170e-02, 2.2196697e-06,
                               1.7108123e-02, 2.3153326e-03, 9.3407185e-01, 4.6504699e-02,
                               2.1577871e-07, 2.5949640e-01, 3.5119019e-02, 7.0538436e-01,
                               6.8407435e-14, 7.3103432e-01, 3.3188907e-05, 2.6893250e-01};
    const double want_cols[4] = {0.99911993, 0.99284607, 0.98721022, 1.0208238};
    const double raw[4] = {8.928039663585475, 4.919657063460773, 1.845862164246586, 1.2690652511251421};
    const double sk[4] = {8.928159358514442, 4.942002442231612, 1.8603760800792042, 1.2643282405888805};
    double P[16], ps[4], cols[4] = {0};
    int it;
    PpaLossOptions o;
    ppa_loss_options_default(&o);
    o.sinkhorn = 0;
    neural_ndcg_matrix(&o, 4, s, P, &it);
    for (int i = 0; i < 16; i++) {
        CHECK_NEAR(P[i], want_P[i], 0, 5e-8, "NeuralSort P^[%d][%d]", i / 4, i % 4);
        cols[i % 4] += P[i];
    }
    for (int r = 0; r < 4; r++) {
        double row = P[r * 4] + P[r * 4 + 1] + P[r * 4 + 2] + P[r * 4 + 3];
        CHECK_NEAR(row, 1.0, 1e-15, 0, "NeuralSort row %d sum", r);
        CHECK_NEAR(cols[r], want_cols[r], 5e-8, 0, "NeuralSort column %d sum", r);
    }
    p_dot_s(4, P, s, ps);
    for (int r = 0; r < 4; r++) CHECK_NEAR(ps[r], raw[r], 1e-13, 0, "raw P^ s[%d]", r);
    o.sinkhorn = 1;
    neural_ndcg_matrix(&o, 4, s, P, &it);
    p_dot_s(4, P, s, ps);
    CHECK(it == 50, "Sinkhorn at tau 1 should not converge within 50 iterations (ran %d)", it);
    for (int r = 0; r < 4; r++) CHECK_NEAR(ps[r], sk[r], 1e-12, 0, "Sinkhorn P s[%d]", r);

    /* table tab_p_hat, Sinkhorn-scaled, with the iterations run */
    const double taus[3] = {0.1, 10.0, 0.01};
    const double want[3][4] = {{9, 4.99999999999972, 1.9999546021315786, 1.0000453978687025},
                               {6.686250002963648, 4.845151544248493, 3.2128905266705265, 2.2557025447661117},
                               {9, 5, 2, 1}};
    const int want_it[3] = {1, 10, 1};
    for (int t = 0; t < 3; t++) {
        o.tau = taus[t];
        neural_ndcg_matrix(&o, 4, s, P, &it);
        p_dot_s(4, P, s, ps);
        CHECK(it == want_it[t], "tau %g: %d Sinkhorn iterations, want %d", taus[t], it, want_it[t]);
        for (int r = 0; r < 4; r++) CHECK_NEAR(ps[r], want[t][r], 1e-12, 0, "tau %g: P s[%d]", taus[t], r);
    }
}

static void test_ndcg_example(void) {
    const double s[4] = {9, 1, 5, 2}, psi[4] = {5, 4, 3, 2};
    PpaLossOptions o;
    ppa_loss_options_default(&o);
    double dcg = 31 / log2(2.0) + 15 / log2(5.0) + 7 / log2(3.0) + 3 / log2(4.0);
    CHECK_NEAR(dcg, 43.3766566461011, 1e-12, 0, "DCG@4 of the appendix");
    CHECK_NEAR(ndcg_ideal(o.gain, o.discount, 4, 4, psi), 45.25597597779204, 1e-12, 0, "IDCG@4");
    PpaListMetrics m;
    ppa_metrics_list(&o, 4, s, psi, NULL, &m);
    CHECK_NEAR(m.ndcg, 0.9584735652897385, 1e-15, 0, "NDCG@4 of the appendix");
    const double taus[4] = {0.01, 0.1, 1, 10};
    const double want[4] = {-0.9584735653, -0.9584743998, -0.9591870748, -0.8744096942};
    for (int t = 0; t < 4; t++) {
        o.tau = taus[t];
        CHECK_NEAR(loss_at(PPA_NEURAL_NDCG, &o, 4, s, psi), want[t], 5e-11, 0, "NeuralNDCG loss at tau %g", taus[t]);
    }
}

static void test_dpo_example(void) {
    const double s[3] = {0.7, 0.5, 0.6}, psi[3] = {3, 2, 1};
    const double want_g[3] = {-0.3083956050695, -0.0249377282638, 0.3333333333333};
    double g[3];
    PpaLossOptions o;
    ppa_loss_options_default(&o);
    PpaListResult r;
    ppa_loss_list(PPA_DPO_ALL_PAIRS, &o, 3, s, psi, NULL, g, &r);
    CHECK_NEAR(r.loss, 0.6623107298429112, 1e-15, 0, "Proposition prop:dpo_log2 loss");
    CHECK(r.loss < M_LN2, "the wrong order scores below ln 2");
    for (int i = 0; i < 3; i++) CHECK_NEAR(g[i], want_g[i], 1e-12, 0, "Proposition prop:dpo_log2 grad[%d]", i);
}

/* objectives.md 6.5: psi = [1 .8 .6 .4 .2], s = [x .8 .6 .4 .2]: value and d/dx */
static void test_slice(void) {
    const double xs[5] = {0.0, 0.5, 0.7, 0.9, 2.0};
    const double ndcg[5] = {0.873246, 0.917233, 0.950248, 1.0, 1.0};
    const double neural[3][5][2] = {
        {{0.873246, -4.0e-9}, {0.917234, -0.000261}, {0.950249, -0.000376}, {0.999998, -0.000226}, {1.0, -4e-24}},
        {{0.868452, -0.019769}, {0.914187, -0.146904}, {0.952543, -0.194581}, {0.984326, -0.098410}, {0.997062, -4.9e-6}},
        {{0.840736, -0.048537}, {0.881996, -0.109845}, {0.903321, -0.100931}, {0.921340, -0.078185}, {0.960628, -0.014506}}};
    const double approx[2][5][2] = {
        {{0.714214, -0.011388}, {0.722905, -0.024165}, {0.728357, -0.030429}, {0.735102, -0.037062}, {0.794004, -0.065681}},
        {{0.871507, -0.002437}, {0.912159, -0.061879}, {0.930810, 0.112242}, {0.978589, -0.436496}, {0.999522, -7e-13}}};
    const double taus[3] = {0.01, 0.1, 1.0}, alphas[2] = {1.0, 25.0};
    double psi[5] = {1, .8, .6, .4, .2}, s[5] = {0, .8, .6, .4, .2}, g[5];
    for (int x = 0; x < 5; x++) {
        s[0] = xs[x];
        PpaLossOptions o;
        ppa_loss_options_default(&o);
        PpaListMetrics m;
        ppa_metrics_list(&o, 5, s, psi, NULL, &m);
        CHECK_NEAR(m.ndcg, ndcg[x], 6e-7, 0, "slice NDCG at x = %g", xs[x]);
        PpaListResult r;
        for (int t = 0; t < 3; t++) {
            o.tau = taus[t];
            ppa_loss_list(PPA_NEURAL_NDCG, &o, 5, s, psi, NULL, g, &r);
            CHECK_NEAR(-r.loss, neural[t][x][0], 6e-7, 0, "slice NeuralNDCG tau %g x %g", taus[t], xs[x]);
            CHECK_NEAR(g[0], neural[t][x][1], 6e-7, 1e-3, "slice NeuralNDCG d/dx tau %g x %g", taus[t], xs[x]);
        }
        for (int a = 0; a < 2; a++) {
            o.alpha = alphas[a];
            ppa_loss_list(PPA_APPROX_NDCG, &o, 5, s, psi, NULL, g, &r);
            CHECK_NEAR(-r.loss, approx[a][x][0], 6e-7, 0, "slice ApproxNDCG alpha %g x %g", alphas[a], xs[x]);
            CHECK_NEAR(g[0], approx[a][x][1], 6e-7, 1e-3, "slice ApproxNDCG d/dx alpha %g x %g", alphas[a], xs[x]);
        }
    }
}

int main(int argc, char **argv) {
    test_goldens(argc > 1 ? argv[1] : "tests/fixtures/objectives_golden.jsonl");
    test_finite_differences();
    test_neuralsort_example();
    test_ndcg_example();
    test_dpo_example();
    test_slice();
    return check_report("test_losses");
}
