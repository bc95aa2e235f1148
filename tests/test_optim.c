/* test_optim.c: AdamW, the schedules and gradient clipping against the float64
 * PyTorch reference (tests/ref/optim_ref.py -> tests/fixtures/optim_golden.json:
 * torch.optim.AdamW with decay / no-decay groups, clip_grad_norm_, the
 * transformers warm-up schedules), and the clipping norm's independence of
 * the thread count. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "check.h"
#include "core/common.h"
#include "core/rng.h"
#include "optim/optim.h"

static void floats(const cJSON *a, float *out) {
    int i = 0;
    for (const cJSON *x = a->child; x; x = x->next) out[i++] = (float)x->valuedouble;
}

static double num(const cJSON *j, const char *k) { return cJSON_GetObjectItemCaseSensitive(j, k)->valuedouble; }

static void test_run(const cJSON *doc, const cJSON *run) {
    int n = (int)num(doc, "n"), nd = (int)num(doc, "n_decay"), warmup = (int)num(doc, "warmup"), total = (int)num(doc, "total");
    const char *name = cJSON_GetObjectItemCaseSensitive(run, "schedule")->valuestring;
    Schedule sch;
    CHECK(schedule_parse(name, &sch) == 0, "schedule %s", name);
    float *p = xmalloc(sizeof(float) * (size_t)n), *g = xmalloc(sizeof(float) * (size_t)n);
    unsigned char *decay = xmalloc((size_t)n);
    for (int i = 0; i < n; i++) decay[i] = i < nd;
    floats(cJSON_GetObjectItemCaseSensitive(run, "params0"), p);
    AdamW opt;
    adamw_init(&opt, (size_t)n);
    AdamWConfig ac = {0.9, 0.999, 1e-8, num(doc, "weight_decay")};
    const cJSON *gr = cJSON_GetObjectItemCaseSensitive(run, "grads")->child, *lr = cJSON_GetObjectItemCaseSensitive(run, "lr")->child;
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(run, "norm")->child, *want = cJSON_GetObjectItemCaseSensitive(run, "params")->child;
    double worst = 0;
    for (int s = 0; s < total; s++, gr = gr->next, lr = lr->next, nm = nm->next, want = want->next) {
        floats(gr, g);
        double norm = clip_grad_norm(g, (size_t)n, num(doc, "max_norm"));
        CHECK_NEAR(norm, nm->valuedouble, 0, 1e-12, "%s step %d: gradient norm", name, s);
        double rate = schedule_lr(sch, num(doc, "peak_lr"), s, warmup, total);
        CHECK_NEAR(rate, lr->valuedouble, 1e-18, 1e-13, "%s step %d: learning rate", name, s);
        adamw_step(&opt, p, g, 1.0f, decay, rate, &ac);
        int i = 0;
        for (const cJSON *x = want->child; x; x = x->next, i++) worst = fmax(worst, fabs(p[i] - x->valuedouble));
    }
    /* float32 state against float64: rounding of values of size ~1 over 7 steps */
    CHECK(worst < 2e-6, "%s: parameters after %d AdamW steps within %.2g of torch float64", name, total, worst);
    adamw_free(&opt);
    free(p), free(g), free(decay);
}

/* clipping inside the AdamW pass equals clipping first, bit for bit */
static void test_fused_clip(void) {
    size_t n = 5000;
    float *p1 = xmalloc(sizeof(float) * n), *p2 = xmalloc(sizeof(float) * n), *g = xmalloc(sizeof(float) * n);
    float *g2 = xmalloc(sizeof(float) * n);
    PpaRng r;
    rng_seed(&r, 9);
    for (size_t i = 0; i < n; i++) p1[i] = p2[i] = (float)rng_normal(&r), g[i] = (float)rng_normal(&r);
    AdamW a, b;
    adamw_init(&a, n), adamw_init(&b, n);
    AdamWConfig ac = {0.9, 0.999, 1e-8, 0.1};
    for (int s = 0; s < 3; s++) {
        memcpy(g2, g, sizeof(float) * n);
        double norm = clip_grad_norm(g2, n, 1.0);
        adamw_step(&a, p1, g2, 1.0f, NULL, 1e-2, &ac);
        CHECK(grad_norm(g, n) == norm, "grad_norm = clip_grad_norm's norm");
        adamw_step(&b, p2, g, clip_scale(grad_norm(g, n), 1.0), NULL, 1e-2, &ac);
    }
    CHECK(!memcmp(p1, p2, sizeof(float) * n) && !memcmp(a.m, b.m, sizeof(float) * n) && !memcmp(a.v, b.v, sizeof(float) * n),
          "clip_scale inside adamw_step = clip_grad_norm then adamw_step, bit for bit");
    CHECK(clip_scale(0.5, 1.0) == 1.0f && clip_scale(5.0, 0) == 1.0f, "no clipping below max_norm or with max_norm 0");
    adamw_free(&a), adamw_free(&b);
    free(p1), free(p2), free(g), free(g2);
}

static void test_clip_threads(void) {
    size_t n = 1000003;
    float *g = xmalloc(sizeof(float) * n);
    PpaRng r;
    rng_seed(&r, 5);
    double ss = 0;
    for (size_t i = 0; i < n; i++) g[i] = (float)rng_normal(&r), ss += (double)g[i] * g[i];
    double a = clip_grad_norm(g, n, 0), b = a;
#ifdef _OPENMP
    int t = omp_get_max_threads();
    omp_set_num_threads(1);
    b = clip_grad_norm(g, n, 0);
    omp_set_num_threads(t);
#endif
    CHECK(a == b, "the clipping norm does not depend on the thread count (%.17g, %.17g)", a, b);
    CHECK_NEAR(a, sqrt(ss), 0, 1e-12, "the clipping norm of 1e6 values");
    clip_grad_norm(g, n, 2.0);
    CHECK_NEAR(clip_grad_norm(g, n, 0), 2.0 * a / (a + 1e-6), 0, 1e-6, "clipped to max_norm / (norm + 1e-6) of the norm");
    free(g);
}

int main(void) {
    char *text = check_slurp("tests/fixtures/optim_golden.json");
    cJSON *doc = text ? cJSON_Parse(text) : NULL;
    CHECK(doc != NULL, "read tests/fixtures/optim_golden.json");
    if (doc) {
        int runs = 0;
        for (const cJSON *run = cJSON_GetObjectItemCaseSensitive(doc, "runs")->child; run; run = run->next, runs++) test_run(doc, run);
        CHECK(runs == 3, "three schedules");
    }
    cJSON_Delete(doc);
    free(text);
    test_clip_threads();
    test_fused_clip();
    return check_report("test_optim");
}
