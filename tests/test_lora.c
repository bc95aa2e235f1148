/* test_lora.c: LoRA adapters in the engine. A new adapter (B = 0) and an
 * adapter switched off compute the base bit for bit (fp32 and frozen bf16);
 * shared-prompt rows = separate sequences with an adapter; the adapter's
 * gradients against central finite differences (dropout on, its masks fixed
 * by the key); gradient checkpointing = the plain backward; dropout masks
 * fixed by the key; and the PyTorch float64 goldens of
 * tests/ref/make_lora_goldens.sh (PEFT's semantics and folder format, a
 * non-zero adapter): log-probs and every adapter gradient in float32, bf16
 * against PyTorch autocast on the same inputs, and the merge W + s B A.
 *
 * Tolerances. float32: as test_engine (log-probs 1e-5 relative + 1e-4,
 * gradients 1e-4 of each tensor's largest entry). bf16: the base's products
 * round their inputs to 8 bits (the adapter's run in float32), so the errors
 * are bf16's (test_bf16.c): median and max at most twice PyTorch autocast's,
 * whose adapter products are bf16 too. Merge: both sides sum B A in double
 * and round W + s B A once to float32, so they agree to 1 ulp (the order of
 * the double sums may differ). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "golden_rows.h"
#include "core/rng.h"
#include "hf/adapter.h"
#include "model/internal.h"
#include "model/lora.h"

static char tmpdir[64];

static Model *load(const char *dir, ModelPrecision p, int frozen) {
    char err[2048];
    Model *m = model_load_as(dir, p, frozen, err, sizeof err);
    CHECK(m != NULL, "load %s: %s", dir, m ? "" : err);
    return m;
}

#define run golden_run

/* every adapter value drawn from U(-a, a) */
static void randomize(Model *m, double a, uint64_t seed) {
    PpaRng rng;
    rng_seed(&rng, seed);
    float *p = model_params(m);
    for (size_t i = 0; i < model_n_params(m); i++) p[i] = (float)((2 * rng_uniform(&rng) - 1) * a);
}

static const LoraSpec SPEC = {4, 8.0, 0.0, 0, LORA_ALL_TARGETS, 0};

/* B = 0 and switched off: the base's log-probs, bit for bit */
static void test_base_bits(const char *name, const GoldenRows *g) {
    char dir[160], err[512];
    for (int bf = 0; bf < 2; bf++) {
        if (write_golden_model(tmpdir, name, bf ? ST_BF16 : ST_F32, dir, sizeof dir)) return;
        ModelPrecision p = bf ? MODEL_BF16 : MODEL_FP32;
        Model *base = load(dir, p, 1), *m = load(dir, p, 1);
        if (!base || !m) return;
        double l0[64], l1[64], l2[64];
        run(base, g->rows, g->n, l0, NULL);
        CHECK(model_lora_new(m, &SPEC, 7, err, sizeof err) == 0, "new adapter: %s", err);
        run(m, g->rows, g->n, l1, NULL);
        CHECK(!memcmp(l0, l1, sizeof(double) * (size_t)g->nw), "%s %s: a new adapter (B = 0) computes the base, bits",
              name, bf ? "bf16" : "fp32");
        randomize(m, 0.3, 3);
        run(m, g->rows, g->n, l1, NULL);
        CHECK(memcmp(l0, l1, sizeof(double) * (size_t)g->nw), "%s: a non-zero adapter changes the log-probs", name);
        model_lora_enable(m, 0);
        run(m, g->rows, g->n, l2, NULL);
        CHECK(!memcmp(l0, l2, sizeof(double) * (size_t)g->nw), "%s %s: the adapter switched off computes the base, bits",
              name, bf ? "bf16" : "fp32");
        model_free(base), model_free(m);
    }
}

/* each golden row's responses as separate rows */
static int separate(const GoldenRows *g, Row *out) {
    int n = 0;
    for (int r = 0; r < g->n; r++)
        for (int k = 0; k < g->rows[r].n_resp; k++)
            out[n++] = (Row){g->rows[r].prompt_len, g->rows[r].prompt, 1, &g->rows[r].resp_len[k], &g->rows[r].resp[k]};
    return n;
}

static double max_rel(const float *a, const float *b, size_t n) {
    double mx = 0, d = 0;
    for (size_t i = 0; i < n; i++) mx = fmax(mx, fabs(b[i])), d = fmax(d, fabs(a[i] - b[i]));
    return mx > 0 ? d / mx : d;
}

/* shared prompt = separate sequences; checkpointing = plain; the key fixes the dropout */
static void test_layouts(const char *name, const GoldenRows *g) {
    char dir[160], err[512];
    if (write_golden_model(tmpdir, name, ST_F32, dir, sizeof dir)) return;
    Model *m = load(dir, MODEL_FP32, 1);
    if (!m) return;
    LoraSpec s = SPEC;
    s.dropout = 0.25;
    CHECK(model_lora_new(m, &s, 7, err, sizeof err) == 0, "new adapter: %s", err);
    randomize(m, 0.3, 4);
    size_t n = model_n_params(m);
    float *g1 = malloc(sizeof(float) * n), *g2 = malloc(sizeof(float) * n);
    double l0[64], l1[64], l2[64], l3[64];
    Row sep[64];
    int ns = separate(g, sep);
    run(m, g->rows, g->n, l1, g->w);
    memcpy(l0, l1, sizeof l0);
    memcpy(g1, model_grads(m), sizeof(float) * n);
    run(m, sep, ns, l2, g->w);
    double dl = 0;
    for (int i = 0; i < g->nw; i++) dl = fmax(dl, fabs(l1[i] - l2[i]) / fmax(1, fabs(l2[i])));
    double dg = max_rel(g1, model_grads(m), n);
    CHECK(dl <= 1e-5 && dg <= 1e-5, "%s: shared prompt = separate sequences with an adapter (%.2g, %.2g)", name, dl, dg);

    model_lora_dropout(m, 1, 99); /* the same key: the same masks, in the plain and the recomputing backward */
    run(m, g->rows, g->n, l1, g->w);
    memcpy(g1, model_grads(m), sizeof(float) * n);
    CHECK(memcmp(l1, l2, sizeof(double) * (size_t)g->nw), "%s: dropout changes the log-probs", name);
    model_gradient_checkpointing(m, 1);
    run(m, g->rows, g->n, l3, g->w);
    memcpy(g2, model_grads(m), sizeof(float) * n);
    CHECK(!memcmp(l1, l3, sizeof(double) * (size_t)g->nw) && !memcmp(g1, g2, sizeof(float) * n),
          "%s: gradient checkpointing = the plain backward, dropout on, bits", name);
    model_gradient_checkpointing(m, 0);
    model_lora_dropout(m, 1, 100);
    run(m, g->rows, g->n, l3, NULL);
    CHECK(memcmp(l1, l3, sizeof(double) * (size_t)g->nw), "%s: another key, other masks", name);
    model_lora_dropout(m, 0, 0);
    run(m, g->rows, g->n, l3, NULL);
    CHECK(!memcmp(l0, l3, sizeof(double) * (size_t)g->nw), "%s: dropout off again: the first log-probs, bits", name);
    free(g1), free(g2);
    model_free(m);
}

/* central differences of L = sum w logp over adapter entries, dropout on with a fixed key */
static void test_finite_differences(const char *name, const GoldenRows *g) {
    char dir[160], err[512];
    if (write_golden_model(tmpdir, name, ST_F32, dir, sizeof dir)) return;
    Model *m = load(dir, MODEL_FP32, 1);
    if (!m) return;
    LoraSpec s = SPEC;
    s.dropout = 0.2;
    CHECK(model_lora_new(m, &s, 8, err, sizeof err) == 0, "new adapter: %s", err);
    randomize(m, 0.2, 5);
    model_lora_dropout(m, 1, 1234);
    size_t n = model_n_params(m);
    double lp[64];
    run(m, g->rows, g->n, lp, g->w);
    float *gr = malloc(sizeof(float) * n), *p = model_params(m);
    memcpy(gr, model_grads(m), sizeof(float) * n);
    PpaRng rng;
    rng_seed(&rng, 17);
    int ok = 0, tried = 40;
    for (int t = 0; t < tried; t++) {
        size_t i = (size_t)(rng_uniform(&rng) * (double)n);
        float keep = p[i], h = 1e-2f;
        double L[2];
        for (int side = 0; side < 2; side++) {
            p[i] = keep + (side ? -h : h);
            run(m, g->rows, g->n, lp, NULL);
            L[side] = 0;
            for (int k = 0; k < g->nw; k++) L[side] += g->w[k] * lp[k];
        }
        p[i] = keep;
        double fd = (L[0] - L[1]) / (2.0 * h);
        ok += fabs(fd - gr[i]) <= 2e-3 + 2e-2 * fabs(fd);
    }
    printf("%s: adapter gradients against finite differences (dropout 0.2): %d/%d\n", name, ok, tried);
    CHECK(ok >= tried - 1, "%s: finite differences of the adapter (%d/%d)", name, ok, tried);
    free(gr);
    model_free(m);
}

/* ---- PyTorch float64 goldens (tests/ref/make_lora_goldens.sh) ---- */

/* our adapter gradients written and read back against golden FILE: each tensor's error of its largest entry */
static int grad_errors(Model *m, const char *lcase, const char *file, double *err_of, StSet *ref) {
    char path[256], gpath[256], err[2048];
    snprintf(path, sizeof path, "%s/%s_grads.safetensors", tmpdir, lcase);
    snprintf(gpath, sizeof gpath, "tests/fixtures/engine/golden_%s/%s", lcase, file);
    CHECK(lora_save_grads(m, path, err, sizeof err) == 0, "save grads: %s", err);
    StSet ours;
    int ok = st_open(&ours, path, err, sizeof err) == 0 && st_open(ref, gpath, err, sizeof err) == 0;
    CHECK(ok, "open gradients: %s", err);
    if (!ok) return 0;
    CHECK(ours.n_tensors == ref->n_tensors, "%s: the golden's %d adapter gradients (%d)", lcase, ref->n_tensors,
          ours.n_tensors);
    int n = 0;
    for (int t = 0; t < ref->n_tensors; t++) {
        const StTensor *w = &ref->tensors[t], *o = st_find(&ours, w->name);
        CHECK(o && o->numel == w->numel, "%s: gradient %s present with its shape", lcase, w->name);
        if (o && o->numel == w->numel) err_of[n++] = tensor_err(o, w);
    }
    st_close(&ours);
    return n;
}

static void test_golden(const char *lcase, const char *base) {
    char dir[160], adir[160], err[2048], path[256];
    GoldenRows g;
    snprintf(path, sizeof path, "tests/fixtures/engine/rows_%s.jsonl", base);
    read_golden_rows(path, &g);
    snprintf(adir, sizeof adir, "tests/fixtures/engine/%s", lcase);
    for (int bf = 0; bf < 2; bf++) {
        if (write_golden_model(tmpdir, base, bf ? ST_BF16 : ST_F32, dir, sizeof dir)) break;
        Model *m = load(dir, bf ? MODEL_BF16 : MODEL_FP32, 1);
        if (!m) break;
        int rc = lora_load(m, adir, err, sizeof err);
        CHECK(rc == 0, "%s: PEFT's folder loads: %s", lcase, rc ? err : "");
        if (rc) {
            model_free(m);
            break;
        }
        double lp[64], eo[64], et[64];
        run(m, g.rows, g.n, lp, g.w);
        double *want = golden_logps(lcase, "logps.jsonl", g.nw);
        double *torch = golden_logps(lcase, "logps_autocast_bf16.jsonl", g.nw);
        double worst = 0;
        for (int i = 0; i < g.nw; i++) {
            if (!bf) CHECK_NEAR(lp[i], want[i], 1e-4, 1e-5, "%s: logp %d against PyTorch float64", lcase, i);
            eo[i] = fabs(lp[i] - want[i]), et[i] = fabs(torch[i] - want[i]);
            worst = fmax(worst, eo[i] / fmax(1, fabs(want[i])));
        }
        StSet ref;
        double ge[128], gt[128];
        int n = grad_errors(m, lcase, "grads.safetensors", ge, &ref);
        st_close(&ref);
        double gw = 0;
        for (int i = 0; i < n; i++) gw = fmax(gw, ge[i]);
        if (!bf) {
            CHECK(gw <= 1e-4, "%s: adapter gradients within 1e-4 of each tensor's largest entry (%.3g)", lcase, gw);
            printf("%s: against PyTorch float64 (PEFT's LoRA): log-probs within %.2e, adapter gradients within %.2e\n",
                   lcase, worst, gw);
        } else {
            /* autocast's own gradient errors, tensor by tensor */
            StSet a, w;
            char apath[256], wpath[256];
            snprintf(apath, sizeof apath, "tests/fixtures/engine/golden_%s/grads_autocast_bf16.safetensors", lcase);
            snprintf(wpath, sizeof wpath, "tests/fixtures/engine/golden_%s/grads.safetensors", lcase);
            int nt = 0;
            if (!st_open(&a, apath, err, sizeof err) && !st_open(&w, wpath, err, sizeof err)) {
                for (int t = 0; t < w.n_tensors && nt < 128; t++) {
                    const StTensor *x = st_find(&a, w.tensors[t].name);
                    if (x) gt[nt++] = tensor_err(x, &w.tensors[t]);
                }
                st_close(&a), st_close(&w);
            }
            double mo = median(eo, g.nw), mt = median(et, g.nw), xo = eo[g.nw - 1], xt = et[g.nw - 1];
            double gmo = median(ge, n), gmt = median(gt, nt), gxo = ge[n - 1], gxt = gt[nt - 1];
            printf("%s bf16: |logp - float64| median %.3g, max %.3g (PyTorch autocast: %.3g, %.3g); adapter gradients "
                   "median %.3g, max %.3g (autocast: %.3g, %.3g)\n", lcase, mo, xo, mt, xt, gmo, gxo, gmt, gxt);
            CHECK(mo <= 2 * mt && xo <= 2 * xt, "%s bf16: log-prob errors at most twice PyTorch autocast's", lcase);
            CHECK(nt == n && gmo <= 2 * gmt && gxo <= 2 * gxt, "%s bf16: adapter gradient errors at most twice "
                  "PyTorch autocast's", lcase);
        }
        free(want), free(torch);
        model_free(m);
    }
    free_golden_rows(&g);
}

/* lora_merge_into on the base's float32 weights against PyTorch's float64 merge rounded once */
static void test_merge(const char *lcase, const char *base) {
    char dir[160], adir[160], err[2048], path[256];
    if (write_golden_model(tmpdir, base, ST_F32, dir, sizeof dir)) return;
    snprintf(adir, sizeof adir, "tests/fixtures/engine/%s", lcase);
    snprintf(path, sizeof path, "tests/fixtures/engine/golden_%s/merged.safetensors", lcase);
    Model *m = load(dir, MODEL_FP32, 0);
    StSet want;
    LoraSpec s;
    float *values;
    if (!m || st_open(&want, path, err, sizeof err) || adapter_read(model_config(m), adir, &s, &values, err, sizeof err)) {
        CHECK(0, "%s: merge inputs: %s", lcase, err);
        model_free(m);
        return;
    }
    const ModelConfig *c = model_config(m);
    size_t at = 0;
    int merged = 0, ulps = 0;
    for (int l = 0; l < c->num_hidden_layers; l++)
        for (int k = 0; k < LORA_N_TARGETS; k++) {
            if (!(s.targets & 1u << k)) continue;
            int out, in;
            lora_dims(c, k, &out, &in);
            char name[160];
            snprintf(name, sizeof name, "model.layers.%d.%s.weight", l, LORA_MODULES[k]);
            float *W = model_tensor(m, name);
            const StTensor *t = st_find(&want, name);
            CHECK(W && t && t->numel == (int64_t)out * in, "%s: merged %s in the golden", lcase, name);
            if (!W || !t) continue;
            lora_merge_into(W, values + at, values + at + (size_t)s.r * in, out, in, s.r, lora_scale(&s));
            float *ref = malloc(sizeof(float) * (size_t)t->numel);
            st_to_f32(t, ref);
            for (int64_t i = 0; i < t->numel; i++)
                if (W[i] != ref[i]) ulps += fabsf(W[i] - ref[i]) <= fabsf(ref[i]) * 0x1p-23f ? 1 : 1000000;
            free(ref);
            merged++;
            at += (size_t)s.r * (size_t)(in + out);
        }
    printf("%s: merge of %d matrices: %d elements differ from PyTorch's by 1 ulp\n", lcase, merged, ulps);
    CHECK(merged > 0 && ulps < 1000000, "%s: merged weights within 1 ulp of PyTorch's W + s B A", lcase);
    free(values);
    st_close(&want);
    model_free(m);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ppa_lora_XXXXXX");
    if (!mkdtemp(tmpdir)) return 1;
    const char *bases[] = {"llama_untied", "qwen2_tied_gqa", "mistral_gqa"};
    const char *cases[] = {"lora_llama", "lora_qwen2", "lora_mistral"};
    for (int i = 0; i < 3; i++) {
        GoldenRows g;
        char path[256];
        snprintf(path, sizeof path, "tests/fixtures/engine/rows_%s.jsonl", bases[i]);
        read_golden_rows(path, &g);
        test_base_bits(bases[i], &g);
        test_layouts(bases[i], &g);
        if (i == 0) test_finite_differences(bases[i], &g);
        free_golden_rows(&g);
        snprintf(path, sizeof path, "tests/fixtures/engine/golden_%s/logps.jsonl", cases[i]);
        if (access(path, F_OK)) {
            CHECK(0, "golden %s missing (tests/ref/make_lora_goldens.sh)", path);
            continue;
        }
        test_golden(cases[i], bases[i]);
        test_merge(cases[i], bases[i]);
    }
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", tmpdir);
    return check_report("test_lora");
}
