/* test_engine.c: the Llama-family engine. Shared-prompt rows against the same
 * responses as separate sequences (log-probs and every parameter gradient),
 * central finite differences, repeatability, and the PyTorch float64 goldens
 * of tests/ref/engine_ref.py when present (tests/fixtures/engine). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "golden_rows.h"
#include "core/rng.h"
#include "io/jsonl.h"
#include "io/safetensors.h"
#include "hf/checkpoint.h"
#include "kernels/kernels.h"
#include "model/model.h"

static char tmpdir[64];

/* writes a model folder for a config text with non-trivial weights */
static Model *make_model(const char *name, const char *config_json, uint64_t seed) {
    char dir[160], err[2048];
    snprintf(dir, sizeof dir, "%s/%s", tmpdir, name);
    ModelConfig c;
    if (model_config_parse(&c, config_json, name, err, sizeof err)) {
        CHECK(0, "config %s: %s", name, err);
        return NULL;
    }
    ModelTensorSpec *specs;
    int n = model_tensor_table(&c, &specs);
    float **w = calloc((size_t)n, sizeof(float *));
    checkpoint_init(specs, n, seed, 0.3, 1, w);
    int rc = checkpoint_write_folder(dir, &c, specs, w, n, ST_F32, NULL, NULL, err, sizeof err);
    CHECK(rc == 0, "write %s: %s", dir, err);
    for (int i = 0; i < n; i++) free(w[i]);
    free(w), free(specs);
    Model *m = model_load(dir, err, sizeof err);
    CHECK(m != NULL, "load %s: %s", dir, m ? "" : err);
    return m;
}

static const char *CONFIGS[][2] = {
    {"llama_mha", "{\"model_type\": \"llama\", \"vocab_size\": 53, \"hidden_size\": 32, \"intermediate_size\": 40,"
                  " \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 4,"
                  " \"rms_norm_eps\": 1e-5, \"tie_word_embeddings\": false}"},
    {"qwen2_gqa_tied", "{\"model_type\": \"qwen2\", \"vocab_size\": 47, \"hidden_size\": 32, \"intermediate_size\": 48,"
                       " \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2,"
                       " \"rms_norm_eps\": 1e-6, \"tie_word_embeddings\": true, \"rope_theta\": 1000000.0}"},
};

typedef struct {
    int P, K, R[4];
    int prompt[12], resp[4][8];
} TestRow;

static void random_rows(TestRow *rows, int n, int vocab, PpaRng *rng) {
    for (int r = 0; r < n; r++) {
        rows[r].P = 1 + (int)(rng_uniform(rng) * 9);
        rows[r].K = 1 + (int)(rng_uniform(rng) * 4);
        for (int j = 0; j < rows[r].P; j++) rows[r].prompt[j] = (int)(rng_uniform(rng) * vocab);
        for (int k = 0; k < rows[r].K; k++) {
            rows[r].R[k] = 1 + (int)(rng_uniform(rng) * 7);
            for (int j = 0; j < rows[r].R[k]; j++) rows[r].resp[k][j] = (int)(rng_uniform(rng) * vocab);
        }
    }
}

/* packed: one Row per TestRow; separate: one Row per response */
static int to_rows(const TestRow *t, int n, int separate, Row *out, const int **ptrs) {
    int m = 0, p = 0;
    for (int r = 0; r < n; r++) {
        if (!separate) {
            for (int k = 0; k < t[r].K; k++) ptrs[p + k] = t[r].resp[k];
            out[m++] = (Row){t[r].P, t[r].prompt, t[r].K, t[r].R, ptrs + p};
            p += t[r].K;
            continue;
        }
        for (int k = 0; k < t[r].K; k++) {
            ptrs[p] = t[r].resp[k];
            out[m++] = (Row){t[r].P, t[r].prompt, 1, &t[r].R[k], ptrs + p};
            p++;
        }
    }
    return m;
}

/* L = sum_k w_k logp_k: its value, and its gradient in the model */
static double loss_and_grad(Model *m, const Row *rows, int n, const double *wts, double *logps) {
    char err[512];
    Batch *b = batch_new(m, rows, n, err, sizeof err);
    CHECK(b != NULL, "batch: %s", b ? "" : err);
    if (!b) return NAN;
    model_forward(m, b, logps, NULL);
    double L = 0;
    for (int g = 0; g < batch_n_responses(b); g++) L += wts[g] * logps[g];
    model_zero_grads(m);
    model_backward(m, b, wts);
    batch_free(b);
    return L;
}

static void test_packed_equals_separate(Model *m, const char *name) {
    PpaRng rng;
    rng_seed(&rng, 5);
    TestRow t[4];
    random_rows(t, 4, model_config(m)->vocab_size, &rng);
    Row packed[4], separate[16];
    const int *pp[16], *sp[16];
    int np = to_rows(t, 4, 0, packed, pp), ns = to_rows(t, 4, 1, separate, sp);
    double wts[16], lp1[16], lp2[16];
    for (int i = 0; i < 16; i++) wts[i] = 2 * rng_uniform(&rng) - 1;
    size_t n = model_n_params(m);
    loss_and_grad(m, packed, np, wts, lp1);
    float *g1 = malloc(sizeof(float) * n);
    memcpy(g1, model_grads(m), sizeof(float) * n);
    loss_and_grad(m, separate, ns, wts, lp2);
    const float *g2 = model_grads(m);
    /* relative to the largest gradient entry: float32 sums over the K
     * responses of a shared prompt run in another order than K sequences */
    double worst_lp = 0, worst_g = 0, gmax = 0;
    for (int i = 0; i < ns; i++) worst_lp = fmax(worst_lp, fabs(lp1[i] - lp2[i]) / fmax(1.0, fabs(lp2[i])));
    for (size_t i = 0; i < n; i++) gmax = fmax(gmax, fabs(g2[i]));
    for (size_t i = 0; i < n; i++) worst_g = fmax(worst_g, fabs(g1[i] - g2[i]) / gmax);
    printf("%s: packed vs separate: log-probs %.2e, gradients %.2e (relative)\n", name, worst_lp, worst_g);
    CHECK(worst_lp <= 1e-5, "%s: packed and separate log-probs agree (%.3g)", name, worst_lp);
    CHECK(worst_g <= 1e-5, "%s: packed and separate gradients agree (%.3g)", name, worst_g);
    free(g1);
}

/* float32 forward: differences of a float64-accumulated loss with a large step */
static void test_finite_differences(Model *m, const char *name) {
    PpaRng rng;
    rng_seed(&rng, 9);
    TestRow t[2];
    random_rows(t, 2, model_config(m)->vocab_size, &rng);
    Row rows[2];
    const int *pp[8];
    int nr = to_rows(t, 2, 0, rows, pp);
    double wts[8], lp[8];
    for (int i = 0; i < 8; i++) wts[i] = 2 * rng_uniform(&rng) - 1;
    size_t n = model_n_params(m);
    loss_and_grad(m, rows, nr, wts, lp);
    float *g = malloc(sizeof(float) * n), *p = model_params(m);
    memcpy(g, model_grads(m), sizeof(float) * n);
    int ok = 0, tried = 0;
    for (int trial = 0; trial < 40; trial++) {
        size_t i = (size_t)(rng_uniform(&rng) * n);
        float keep = p[i], h = 1e-2f;
        p[i] = keep + h;
        double up = loss_and_grad(m, rows, nr, wts, lp);
        p[i] = keep - h;
        double down = loss_and_grad(m, rows, nr, wts, lp);
        p[i] = keep;
        double fd = (up - down) / (2.0 * h);
        tried++;
        ok += fabs(fd - g[i]) <= 2e-3 + 2e-2 * fabs(fd);
    }
    printf("%s: finite differences agree on %d/%d parameters\n", name, ok, tried);
    CHECK(ok >= tried - 1, "%s: finite differences (%d/%d)", name, ok, tried);
    free(g);
}

static void test_repeatable(Model *m, const char *name) {
    PpaRng rng;
    rng_seed(&rng, 3);
    TestRow t[3];
    random_rows(t, 3, model_config(m)->vocab_size, &rng);
    Row rows[3];
    const int *pp[12];
    int nr = to_rows(t, 3, 0, rows, pp);
    double wts[12], a[12] = {0}, b[12] = {0};
    for (int i = 0; i < 12; i++) wts[i] = 1.0;
    size_t n = model_n_params(m);
    loss_and_grad(m, rows, nr, wts, a);
    float *g = malloc(sizeof(float) * n);
    memcpy(g, model_grads(m), sizeof(float) * n);
    loss_and_grad(m, rows, nr, wts, b);
    CHECK(!memcmp(a, b, sizeof(double) * 12) && !memcmp(g, model_grads(m), sizeof(float) * n),
          "%s: a repeated pass gives the same bits", name);
    free(g);
}

/* the kept softmax (one LM-head chunk in the backward) against the
 * recomputed logits (chunks of lmhead_chunk): same log-probs, gradients to
 * float32 rounding */
/* A batch whose activations exceed the machine's memory is refused with a message, before any allocation dies:
 * one row of 2^25 tokens (a long response; the positions allow it) on a tiny model needs over 30 GB. */
static void test_activation_refusal(void) {
    static const char cfg[] = "{\"model_type\": \"llama\", \"vocab_size\": 11, \"hidden_size\": 16, "
                              "\"intermediate_size\": 32, \"num_hidden_layers\": 4, \"num_attention_heads\": 2, "
                              "\"num_key_value_heads\": 2, \"max_position_embeddings\": 67108864}";
    char err[512];
    ModelConfig c;
    if (model_config_parse(&c, cfg, "big_positions", err, sizeof err)) {
        CHECK(0, "config: %s", err);
        return;
    }
    Model *m = model_new(&c, 1, err, sizeof err);
    CHECK(m != NULL, "model_new: %s", m ? "" : err);
    if (!m) return;
    int n = 1 << 25, prompt[1] = {1}, len[1] = {n};
    int *resp = calloc((size_t)n, sizeof(int));
    const int *rp[1] = {resp};
    Row row = {1, prompt, 1, len, rp};
    Batch *b = batch_new(m, &row, 1, err, sizeof err);
    CHECK(b == NULL && strstr(err, "GB of activations") && strstr(err, "micro-batch"),
          "a batch larger than memory is refused: %s", b ? "(accepted)" : err);
    batch_free(b);
    free(resp);
    model_free(m);
}

static void test_keep_softmax(Model *m, const char *name) {
    PpaRng rng;
    rng_seed(&rng, 11);
    TestRow t[3];
    random_rows(t, 3, model_config(m)->vocab_size, &rng);
    Row rows[3];
    const int *pp[12];
    int nr = to_rows(t, 3, 0, rows, pp);
    double wts[12], a[12] = {0}, b[12] = {0};
    for (int i = 0; i < 12; i++) wts[i] = 2 * rng_uniform(&rng) - 1;
    size_t n = model_n_params(m);
    model_zero_grads(m); /* a training model: the forward keeps the softmax */
    loss_and_grad(m, rows, nr, wts, a);
    float *g = malloc(sizeof(float) * n);
    memcpy(g, model_grads(m), sizeof(float) * n);
    model_keep_softmax(m, 0);
    lmhead_set_chunk_rows(5); /* several chunks */
    loss_and_grad(m, rows, nr, wts, b);
    lmhead_set_chunk_rows(0);
    model_keep_softmax(m, MODEL_KEEP_SOFTMAX);
    const float *g2 = model_grads(m);
    double gmax = 0, worst = 0;
    for (size_t i = 0; i < n; i++) gmax = fmax(gmax, fabs(g2[i]));
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs(g[i] - g2[i]) / gmax);
    double worst_lp = 0;
    for (int i = 0; i < 12; i++) worst_lp = fmax(worst_lp, fabs(a[i] - b[i]));
    CHECK(worst_lp <= 1e-5, "%s: kept and recomputed LM head: log-probs agree (%.3g)", name, worst_lp);
    /* the head's weight gradient sums the same terms over other pieces (all rows, or 5-row chunks): float32 sums with
     * cancellation, 2e-7 to 1e-6 of the largest entry measured (scalar and libmvec exp); a lost or doubled piece is
     * off by whole terms */
    CHECK(worst <= 4e-6 && worst > 0, "%s: kept and recomputed (5-row chunks) LM head: gradients agree (%.3g)", name, worst);
    free(g);
}

/* ---- PyTorch float64 goldens (tests/ref/make_engine_goldens.sh) ---- */

/* float32 engine against the float64 reference: log-probs to 1e-5 relative
 * (+1e-4 absolute), each gradient tensor to 1e-4 of its largest entry */
static void test_golden(const char *name) {
    char path[256];
    snprintf(path, sizeof path, "tests/fixtures/engine/%s.json", name);
    char *cfg = check_slurp(path);
    CHECK(cfg != NULL, "golden config %s", path);
    if (!cfg) return;
    Model *m = make_model(name, cfg, 11);
    free(cfg);
    if (!m) return;
    GoldenRows g;
    snprintf(path, sizeof path, "tests/fixtures/engine/rows_%s.jsonl", name);
    read_golden_rows(path, &g);
    double lp[64];
    loss_and_grad(m, g.rows, g.n, g.w, lp);
    snprintf(path, sizeof path, "tests/fixtures/engine/golden_%s/logps.jsonl", name);
    FILE *f = fopen(path, "r");
    JsonlReader rd;
    jsonl_init(&rd, f, path);
    char *line;
    int i = 0;
    double worst_lp = 0;
    while (jsonl_next(&rd, &line)) {
        cJSON *j = cJSON_Parse(line);
        for (const cJSON *it = cJSON_GetObjectItem(j, "logps")->child; it; it = it->next, i++) {
            CHECK_NEAR(lp[i], it->valuedouble, 1e-4, 1e-5, "%s: logp %d against PyTorch float64", name, i);
            worst_lp = fmax(worst_lp, fabs(lp[i] - it->valuedouble));
        }
        cJSON_Delete(j);
    }
    jsonl_free(&rd);
    fclose(f);
    CHECK(i == g.nw, "%s: every response has a golden log-prob (%d of %d)", name, i, g.nw);
    /* gradients, tensor by tensor, through the writer and reader */
    char gpath[256];
    snprintf(gpath, sizeof gpath, "tests/fixtures/engine/golden_%s/grads.safetensors", name);
    double worst = golden_grads_check(m, tmpdir, gpath, name, 1e-4);
    printf("%s: against PyTorch float64: log-probs within %.2e, gradients within %.2e of each tensor's largest entry\n",
           name, worst_lp, worst);
    free_golden_rows(&g);
    model_free(m);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ppa_engine_XXXXXX");
    if (!mkdtemp(tmpdir)) return 1;
    for (size_t c = 0; c < sizeof CONFIGS / sizeof CONFIGS[0]; c++) {
        Model *m = make_model(CONFIGS[c][0], CONFIGS[c][1], 11 + c);
        if (!m) continue;
        test_packed_equals_separate(m, CONFIGS[c][0]);
        test_finite_differences(m, CONFIGS[c][0]);
        test_repeatable(m, CONFIGS[c][0]);
        test_keep_softmax(m, CONFIGS[c][0]);
        model_free(m);
    }
    const char *goldens[] = {"llama_untied", "qwen2_tied_gqa", "llama3_rope", "mistral_gqa"};
    for (int i = 0; i < 4; i++) test_golden(goldens[i]);
    test_activation_refusal();
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", tmpdir);
    return check_report("test_engine");
}
