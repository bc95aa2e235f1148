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
    Span first = {0, (size_t)nd};
    Spans decay = {1, &first};
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
        adamw_step(&opt, p, g, 1.0f, &decay, 0, rate, &ac);
        int i = 0;
        for (const cJSON *x = want->child; x; x = x->next, i++) worst = fmax(worst, fabs(p[i] - x->valuedouble));
    }
    /* float32 state against float64: rounding of values of size ~1 over 7 steps */
    CHECK(worst < 2e-6, "%s: parameters after %d AdamW steps within %.2g of torch float64", name, total, worst);
    adamw_free(&opt);
    free(p), free(g);
}

/* decay by spans = a per-element mask written out here (torch's update with
 * decay where the mask is 1, to float32 rounding), and a step in two shares
 * (ZeRO-1: each with its base) = the whole step, bit for bit */
static void test_decay_spans(void) {
    size_t n = 1000, cut = 250;
    Span sp[] = {{10, 200}, {200, 300}, {500, 700}, {999, 1000}};
    Spans d = {4, sp};
    float *p = xmalloc(sizeof(float) * n), *q = xmalloc(sizeof(float) * n), *r = xmalloc(sizeof(float) * n);
    float *g = xmalloc(sizeof(float) * n), *m = xcalloc(n, sizeof(float)), *v = xcalloc(n, sizeof(float));
    PpaRng rg;
    rng_seed(&rg, 4);
    for (size_t i = 0; i < n; i++) p[i] = q[i] = r[i] = (float)rng_normal(&rg), g[i] = (float)rng_normal(&rg);
    AdamW a, b0, b1;
    adamw_init(&a, n), adamw_init(&b0, cut), adamw_init(&b1, n - cut);
    AdamWConfig ac = {0.9, 0.999, 1e-8, 0.3};
    double lr = 0.01;
    for (int s = 1; s <= 3; s++) {
        adamw_step(&a, p, g, 0.5f, &d, 0, lr, &ac);
        adamw_step(&b0, q, g, 0.5f, &d, 0, lr, &ac);
        adamw_step(&b1, q + cut, g + cut, 0.5f, &d, cut, lr, &ac);
        float bc1 = (float)(lr / (1.0 - pow(0.9, s))), sq = (float)sqrt(1.0 - pow(0.999, s)), shrink = (float)(1.0 - lr * 0.3);
        for (size_t i = 0; i < n; i++) {
            int on = 0;
            for (int k = 0; k < d.n; k++) on |= i >= sp[k].lo && i < sp[k].hi;
            float gi = g[i] * 0.5f;
            float x = on ? r[i] * shrink : r[i];
            m[i] = 0.9f * m[i] + (1.0f - 0.9f) * gi;
            v[i] = 0.999f * v[i] + (1.0f - 0.999f) * gi * gi;
            r[i] = x - bc1 * m[i] / (sqrtf(v[i]) / sq + 1e-8f);
        }
    }
    double worst = 0; /* the loop above may contract to fma where adamw_step's does not: a few ulps */
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs(p[i] - r[i]) / fmax(1.0, fabs(r[i])));
    CHECK(worst < 1e-6, "decay by spans = the per-element mask (worst %.3g)", worst);
    CHECK(!memcmp(p, q, sizeof(float) * n), "two shares with their bases = the whole step, bit for bit");
    adamw_free(&a), adamw_free(&b0), adamw_free(&b1);
    free(p), free(q), free(r), free(g), free(m), free(v);
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
        adamw_step(&a, p1, g2, 1.0f, NULL, 0, 1e-2, &ac);
        CHECK(grad_norm(g, n) == norm, "grad_norm = clip_grad_norm's norm");
        adamw_step(&b, p2, g, clip_scale(grad_norm(g, n), 1.0), NULL, 0, 1e-2, &ac);
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
    test_decay_spans();
    test_fused_clip();
    return check_report("test_optim");
}
