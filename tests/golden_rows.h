/* golden_rows.h: the rows of the engine goldens (tests/fixtures/engine/rows_*.jsonl,
 * written by tests/ref/engine_ref.py --make-rows), their model folders, golden
 * log-probs and error measures, for test_engine.c, test_bf16.c and test_lora.c. */
#ifndef PPA_TEST_GOLDEN_ROWS_H
#define PPA_TEST_GOLDEN_ROWS_H

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "io/jsonl.h"
#include "io/safetensors.h"
#include "hf/checkpoint.h"
#include "model/model.h"

typedef struct {
    int n;
    Row rows[8];
    int *lens[8], *prompt[8], **resp[8];
    double w[64]; /* the golden loss's weights, L = sum w logp; nw of them, one per response */
    int nw;
} GoldenRows;

static inline int *ints(const cJSON *a, int *n) {
    *n = cJSON_GetArraySize(a);
    int *v = malloc(sizeof(int) * (size_t)(*n ? *n : 1)), i = 0;
    for (const cJSON *it = a->child; it; it = it->next) v[i++] = it->valueint;
    return v;
}

static inline void read_golden_rows(const char *path, GoldenRows *g) {
    memset(g, 0, sizeof *g);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL, "open %s", path);
    if (!f) return;
    JsonlReader rd;
    jsonl_init(&rd, f, path);
    char *line;
    while (jsonl_next(&rd, &line) && g->n < 8) {
        cJSON *j = cJSON_Parse(line);
        int P, K = cJSON_GetArraySize(cJSON_GetObjectItem(j, "response_ids")), k = 0, nw;
        g->prompt[g->n] = ints(cJSON_GetObjectItem(j, "prompt_ids"), &P);
        g->lens[g->n] = malloc(sizeof(int) * (size_t)K);
        g->resp[g->n] = malloc(sizeof(int *) * (size_t)K);
        for (const cJSON *it = cJSON_GetObjectItem(j, "response_ids")->child; it; it = it->next, k++)
            g->resp[g->n][k] = ints(it, &g->lens[g->n][k]);
        const cJSON *w = cJSON_GetObjectItem(j, "weights");
        nw = 0;
        for (const cJSON *it = w->child; it; it = it->next) g->w[g->nw + nw++] = it->valuedouble;
        g->nw += nw;
        g->rows[g->n] = (Row){P, g->prompt[g->n], K, g->lens[g->n], (const int *const *)g->resp[g->n]};
        g->n++;
        cJSON_Delete(j);
    }
    jsonl_free(&rd);
    fclose(f);
}

static inline void free_golden_rows(GoldenRows *g) {
    for (int r = 0; r < g->n; r++) {
        for (int k = 0; k < g->rows[r].n_resp; k++) free(g->resp[r][k]);
        free(g->resp[r]), free(g->lens[r]), free(g->prompt[r]);
    }
}

/* a model folder of tests/fixtures/engine/NAME.json under tmpdir (written once) with the goldens' weights (ppa init --seed 11
 * --init-std 0.3 --init-all), in dtype; its path in dir */
static inline int write_golden_model(const char *tmpdir, const char *name, StDtype dtype, char *dir, size_t n) {
    snprintf(dir, n, "%s/%s_%s", tmpdir, name, dtype == ST_BF16 ? "bf16" : "f32");
    char done[512];
    snprintf(done, sizeof done, "%s/config.json", dir);
    if (access(done, F_OK) == 0) return 0; /* written before, by this test */
    char path[256], err[2048];
    snprintf(path, sizeof path, "tests/fixtures/engine/%s.json", name);
    char *cfg = check_slurp(path);
    ModelConfig c;
    int ok = cfg && model_config_parse(&c, cfg, name, err, sizeof err) == 0;
    free(cfg);
    CHECK(ok, "config %s", path);
    if (!ok) return -1;
    ModelTensorSpec *specs;
    int nt = model_tensor_table(&c, &specs);
    float **w = calloc((size_t)nt, sizeof(float *));
    checkpoint_init(specs, nt, 11, 0.3, 1, w);
    int rc = checkpoint_write_folder(dir, &c, specs, w, nt, dtype, NULL, NULL, err, sizeof err);
    CHECK(rc == 0, "write %s: %s", dir, err);
    for (int i = 0; i < nt; i++) free(w[i]);
    free(w), free(specs);
    return rc;
}

/* the golden log-probs of FILE in tests/fixtures/engine/golden_NAME/, n of them */
static inline double *golden_logps(const char *name, const char *file, int n) {
    char path[256];
    snprintf(path, sizeof path, "tests/fixtures/engine/golden_%s/%s", name, file);
    double *v = calloc((size_t)n, sizeof(double));
    FILE *f = fopen(path, "r");
    JsonlReader rd;
    jsonl_init(&rd, f, path);
    char *line;
    int i = 0;
    while (jsonl_next(&rd, &line)) {
        cJSON *j = cJSON_Parse(line);
        for (const cJSON *it = cJSON_GetObjectItem(j, "logps")->child; it && i < n; it = it->next) v[i++] = it->valuedouble;
        cJSON_Delete(j);
    }
    jsonl_free(&rd);
    fclose(f);
    CHECK(i == n, "%s: %d golden log-probs for %d responses", name, i, n);
    return v;
}

static inline int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static inline double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* max |a - ref| / max |ref| of a tensor */
static inline double tensor_err(const StTensor *a, const StTensor *ref) {
    float *x = malloc(sizeof(float) * (size_t)ref->numel), *y = malloc(sizeof(float) * (size_t)ref->numel);
    st_to_f32(a, x), st_to_f32(ref, y);
    double mx = 0, d = 0;
    for (int64_t k = 0; k < ref->numel; k++) mx = fmax(mx, fabs(y[k])), d = fmax(d, fabs(x[k] - y[k]));
    free(x), free(y);
    return mx > 0 ? d / mx : d;
}

/* m's gradients, written (model_save_grads, under tmpdir) and read back, against the golden safetensors file:
 * every tensor present with its shape and within tol of its largest entry; returns the worst ratio */
static inline double golden_grads_check(Model *m, const char *tmpdir, const char *golden, const char *name, double tol) {
    char path[512], err[1024];
    snprintf(path, sizeof path, "%s/%s_grads.safetensors", tmpdir, name);
    CHECK(model_save_grads(m, path, err, sizeof err) == 0, "save grads: %s", err);
    StSet ours, want;
    int ok = st_open(&ours, path, err, sizeof err) == 0 && st_open(&want, golden, err, sizeof err) == 0;
    CHECK(ok, "open gradients: %s", err);
    if (!ok) return INFINITY;
    CHECK(ours.n_tensors == want.n_tensors, "%s: the same gradient tensors (%d, %d)", name, ours.n_tensors, want.n_tensors);
    double worst = 0;
    for (int t = 0; t < want.n_tensors; t++) {
        const StTensor *w = &want.tensors[t], *o = st_find(&ours, w->name);
        CHECK(o && o->numel == w->numel, "%s: gradient %s present with its shape", name, w->name);
        if (!o || o->numel != w->numel) continue;
        double rel = tensor_err(o, w);
        worst = fmax(worst, rel);
        CHECK(rel <= tol, "%s: gradient %s within %g of its largest entry (%.3g)", name, w->name, tol, rel);
    }
    st_close(&ours), st_close(&want);
    return worst;
}

/* logps of n rows in one batch; with wts, also the gradients of sum w logp */
static inline void golden_run(Model *m, const Row *rows, int n, double *lp, const double *wts) {
    char err[512];
    Batch *b = batch_new(m, rows, n, err, sizeof err);
    CHECK(b != NULL, "batch: %s", b ? "" : err);
    if (!b) return;
    model_forward(m, b, lp, NULL);
    if (wts) {
        model_zero_grads(m);
        model_backward(m, b, wts);
    }
    batch_free(b);
}

#endif
