/* test_reward.c: reward models (llama.h model_forward_rewards /
 * model_backward_rewards): the head's output and every parameter gradient
 * against the PyTorch float64 goldens of transformers' sequence-
 * classification head (tests/ref/engine_ref.py, reward mode), the shared
 * prompt against separate sequences, the pad rule of the pooled token, and a
 * causal-LM folder turned into a reward model (model_load_reward). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/rng.h"
#include "golden_rows.h"
#include "io/safetensors.h"
#include "hf/checkpoint.h"
#include "kernels/gemm_bf16.h"
#include "model/model.h"

static char tmpdir[64];

/* a model folder for config text, written with `ppa init --seed S --init-std 0.3 --init-all`'s weights */
static Model *make_model(const char *name, const char *config_json, uint64_t seed, ModelPrecision prec) {
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
    char probe[200];
    snprintf(probe, sizeof probe, "%s/config.json", dir);
    FILE *exists = fopen(probe, "r");
    if (exists) fclose(exists);
    else CHECK(checkpoint_write_folder(dir, &c, specs, w, n, ST_F32, NULL, NULL, err, sizeof err) == 0, "write %s: %s", dir, err);
    for (int i = 0; i < n; i++) free(w[i]);
    free(w), free(specs);
    Model *m = model_load_as(dir, prec, 0, err, sizeof err);
    CHECK(m != NULL, "load %s: %s", dir, m ? "" : err);
    return m;
}

/* L = sum_g sum_j w_g c_j r_gj with c_j = 1 / (j + 1) (engine_ref.py's reward loss); its gradient in the model */
static double loss_and_grad(Model *m, const Row *rows, int n, const double *w, double *r) {
    char err[512];
    Batch *b = batch_new(m, rows, n, err, sizeof err);
    CHECK(b != NULL, "batch: %s", b ? "" : err);
    if (!b) return NAN;
    int nr = batch_n_responses(b), NL = model_config(m)->num_labels;
    model_forward_rewards(m, b, r);
    double L = 0, *d = malloc(sizeof(double) * (size_t)nr * (size_t)NL);
    for (int g = 0; g < nr; g++)
        for (int j = 0; j < NL; j++) {
            d[g * NL + j] = w[g] / (j + 1.0);
            L += d[g * NL + j] * r[g * NL + j];
        }
    model_zero_grads(m);
    model_backward_rewards(m, b, d);
    batch_free(b);
    free(d);
    return L;
}

/* float32 engine against the float64 reference: rewards to 1e-5 relative (+1e-5 absolute), each gradient tensor
 * to 1e-4 of its largest entry (test_engine.c's tolerances: float32 sums over a few hundred terms) */
static void test_golden(const char *name) {
    char path[256];
    snprintf(path, sizeof path, "tests/fixtures/engine/%s.json", name);
    char *cfg = check_slurp(path);
    CHECK(cfg != NULL, "golden config %s", path);
    if (!cfg) return;
    Model *m = make_model(name, cfg, 11, MODEL_FP32);
    free(cfg);
    if (!m) return;
    int NL = model_config(m)->num_labels;
    GoldenRows g;
    snprintf(path, sizeof path, "tests/fixtures/engine/rows_%s.jsonl", name);
    read_golden_rows(path, &g);
    double *r = malloc(sizeof(double) * 64 * (size_t)NL);
    loss_and_grad(m, g.rows, g.n, g.w, r);
    snprintf(path, sizeof path, "tests/fixtures/engine/golden_%s/rewards.jsonl", name);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL, "open %s", path);
    if (!f) return;
    JsonlReader rd;
    jsonl_init(&rd, f, path);
    char *line;
    int i = 0;
    double worst_r = 0;
    while (jsonl_next(&rd, &line)) {
        cJSON *j = cJSON_Parse(line);
        for (const cJSON *resp = cJSON_GetObjectItem(j, "rewards")->child; resp; resp = resp->next) {
            CHECK(cJSON_GetArraySize(resp) == NL, "%s: %d outputs per response", name, NL);
            int k = 0;
            for (const cJSON *it = resp->child; it && k < NL; it = it->next, k++) {
                CHECK_NEAR(r[i * NL + k], it->valuedouble, 1e-5, 1e-5, "%s: reward %d[%d] against PyTorch float64", name, i, k);
                worst_r = fmax(worst_r, fabs(r[i * NL + k] - it->valuedouble));
            }
            i++;
        }
        cJSON_Delete(j);
    }
    jsonl_free(&rd);
    fclose(f);
    CHECK(i == g.nw, "%s: every response has golden rewards (%d of %d)", name, i, g.nw);
    snprintf(path, sizeof path, "tests/fixtures/engine/golden_%s/grads.safetensors", name);
    double worst = golden_grads_check(m, tmpdir, path, name, 1e-4);
    printf("%s: against PyTorch float64: rewards within %.2e, gradients within %.2e of each tensor's largest entry\n", name,
           worst_r, worst);
    free(r);
    free_golden_rows(&g);
    model_free(m);
}

/* every reward of a jsonl golden file, in order: [n] */
static int read_rewards(const char *path, double *out, int max) {
    FILE *f = fopen(path, "r");
    CHECK(f != NULL, "open %s", path);
    if (!f) return 0;
    JsonlReader rd;
    jsonl_init(&rd, f, path);
    char *line;
    int n = 0;
    while (jsonl_next(&rd, &line)) {
        cJSON *j = cJSON_Parse(line);
        for (const cJSON *resp = cJSON_GetObjectItem(j, "rewards")->child; resp; resp = resp->next)
            for (const cJSON *it = resp->child; it && n < max; it = it->next) out[n++] = it->valuedouble;
        cJSON_Delete(j);
    }
    jsonl_free(&rd);
    fclose(f);
    return n;
}

static double pool_ppa[512], pool_torch[512]; /* |reward - float64| of every golden reward: ppa bf16, autocast */
static int n_pool;

/* A frozen bf16 reward model (what `ppa judge --precision bf16` runs) against the float64 rewards: no worse than
 * PyTorch's autocast bf16 on the same inputs, by the median and the maximum error over all the goldens' rewards
 * together (a few dozen: one config alone is too few to rank two methods whose errors are of the same size; the
 * tolerance is autocast's own error, bf16 keeping 8 significant bits, 2^-9 relative rounding per operand; the
 * maximum, a single draw, may be up to twice autocast's) */
static void test_bf16_against_autocast(const char *name) {
    char err[512], dir[160], path[256];
    if (gemm_bf16_ready(err, sizeof err)) {
        printf("%s: bf16 skipped: %s\n", name, err);
        return;
    }
    snprintf(dir, sizeof dir, "%s/%s", tmpdir, name);
    Model *m = model_load_as(dir, MODEL_BF16, 1, err, sizeof err);
    CHECK(m != NULL, "load %s in bf16: %s", dir, m ? "" : err);
    if (!m) return;
    GoldenRows g;
    snprintf(path, sizeof path, "tests/fixtures/engine/rows_%s.jsonl", name);
    read_golden_rows(path, &g);
    int NL = model_config(m)->num_labels;
    double r[512], want[512], autoc[512];
    Batch *b = batch_new(m, g.rows, g.n, err, sizeof err);
    model_forward_rewards(m, b, r);
    int n = batch_n_responses(b) * NL;
    batch_free(b);
    snprintf(path, sizeof path, "tests/fixtures/engine/golden_%s/rewards.jsonl", name);
    int n1 = read_rewards(path, want, 512);
    snprintf(path, sizeof path, "tests/fixtures/engine/golden_%s/rewards_autocast_bf16.jsonl", name);
    int n2 = read_rewards(path, autoc, 512);
    CHECK(n1 == n && n2 == n, "%s: %d rewards in both goldens", name, n);
    if (n1 != n || n2 != n) return;
    double e1[512], e2[512], max1 = 0, max2 = 0;
    for (int i = 0; i < n; i++) {
        e1[i] = fabs(r[i] - want[i]), e2[i] = fabs(autoc[i] - want[i]);
        max1 = fmax(max1, e1[i]), max2 = fmax(max2, e2[i]);
        if (n_pool < 512) pool_ppa[n_pool] = e1[i], pool_torch[n_pool++] = e2[i];
    }
    double med1 = median(e1, n), med2 = median(e2, n);
    printf("%s: bf16 rewards against float64: ppa median %.2e max %.2e; autocast median %.2e max %.2e\n", name, med1, max1,
           med2, max2);
    free_golden_rows(&g);
    model_free(m);
}

/* the shared prompt computes what K separate sequences do: the same rewards and gradients */
static void test_packed_equals_separate(const char *name) {
    char path[256];
    snprintf(path, sizeof path, "tests/fixtures/engine/%s.json", name);
    char *cfg = check_slurp(path);
    if (!cfg) return;
    Model *m = make_model(name, cfg, 11, MODEL_FP32);
    free(cfg);
    if (!m) return;
    GoldenRows g;
    snprintf(path, sizeof path, "tests/fixtures/engine/rows_%s.jsonl", name);
    read_golden_rows(path, &g);
    Row sep[64];
    int ns = 0;
    for (int r = 0; r < g.n; r++)
        for (int k = 0; k < g.rows[r].n_resp; k++)
            sep[ns++] = (Row){g.rows[r].prompt_len, g.rows[r].prompt, 1, &g.rows[r].resp_len[k], &g.rows[r].resp[k]};
    int NL = model_config(m)->num_labels;
    size_t n = model_n_params(m);
    double *r1 = malloc(sizeof(double) * 64 * (size_t)NL), *r2 = malloc(sizeof(double) * 64 * (size_t)NL);
    loss_and_grad(m, g.rows, g.n, g.w, r1);
    float *g1 = malloc(sizeof(float) * n);
    memcpy(g1, model_grads(m), sizeof(float) * n);
    loss_and_grad(m, sep, ns, g.w, r2);
    const float *g2 = model_grads(m);
    double worst_r = 0, worst_g = 0, gmax = 0;
    for (int i = 0; i < ns * NL; i++) worst_r = fmax(worst_r, fabs(r1[i] - r2[i]) / fmax(1.0, fabs(r2[i])));
    for (size_t i = 0; i < n; i++) gmax = fmax(gmax, fabs(g2[i]));
    for (size_t i = 0; i < n; i++) worst_g = fmax(worst_g, fabs(g1[i] - g2[i]) / gmax);
    printf("%s: shared prompt vs separate sequences: rewards %.2e, gradients %.2e (relative)\n", name, worst_r, worst_g);
    CHECK(worst_r <= 1e-6, "%s: shared-prompt and separate rewards agree (%.3g)", name, worst_r);
    CHECK(worst_g <= 1e-5, "%s: shared-prompt and separate gradients agree (%.3g)", name, worst_g);
    free(r1), free(r2), free(g1);
    free_golden_rows(&g);
    model_free(m);
}

/* the pooled token: the last one, or the rightmost that is not pad_token_id (pad 0 here) */
static void test_pad_rule(void) {
    static const char cfg[] = "{\"architectures\": [\"LlamaForSequenceClassification\"], \"model_type\": \"llama\", "
                              "\"vocab_size\": 13, \"hidden_size\": 16, \"intermediate_size\": 24, \"num_hidden_layers\": 1, "
                              "\"num_attention_heads\": 2, \"num_key_value_heads\": 1, \"rms_norm_eps\": 1e-5, "
                              "\"num_labels\": 2, \"pad_token_id\": 0}";
    Model *m = make_model("pad_rule", cfg, 3, MODEL_FP32);
    if (!m) return;
    int prompt[3] = {4, 5, 6}, a[2] = {7, 8}, b[4] = {7, 8, 0, 0}, c[2] = {0, 0};
    const int *ra[1] = {a}, *rb[1] = {b}, *rc[1] = {c};
    int la = 2, lb = 4, lc = 2;
    Row rows[3] = {{3, prompt, 1, &la, ra}, {3, prompt, 1, &lb, rb}, {3, prompt, 1, &lc, rc}};
    char err[256];
    double r[6];
    Batch *bt = batch_new(m, rows, 3, err, sizeof err);
    model_forward_rewards(m, bt, r);
    batch_free(bt);
    CHECK(r[0] == r[2] && r[1] == r[3], "trailing pads: the reward is read at the last token that is not pad");
    /* an all-pad response: the prompt's last token, as [prompt] alone would give */
    int one = 1, p2[2] = {4, 5}, last[1] = {6};
    const int *rl[1] = {last};
    Row solo = {2, p2, 1, &one, rl};
    double s[2];
    bt = batch_new(m, &solo, 1, err, sizeof err);
    model_forward_rewards(m, bt, s);
    batch_free(bt);
    CHECK(fabs(r[4] - s[0]) <= 1e-6 && fabs(r[5] - s[1]) <= 1e-6, "all-pad response: read at the prompt's last token");
    /* the same after another response of the row (between the prompt and it in the packed row): still the prompt's */
    const int *r2[2] = {a, c};
    int l2[2] = {2, 2};
    Row two = {3, prompt, 2, l2, r2};
    double t[4];
    bt = batch_new(m, &two, 1, err, sizeof err);
    model_forward_rewards(m, bt, t);
    batch_free(bt);
    CHECK(fabs(t[2] - s[0]) <= 1e-6 && fabs(t[3] - s[1]) <= 1e-6,
          "all-pad second response of a row: read at the prompt's last token, not the first response's");
    model_free(m);
}

/* a causal LM loaded as a reward model: its trunk unchanged, lm_head gone, a one-output head from the seed */
static void test_from_causal_lm(void) {
    static const char cfg[] = "{\"model_type\": \"qwen2\", \"vocab_size\": 17, \"hidden_size\": 16, \"intermediate_size\": 24, "
                              "\"num_hidden_layers\": 1, \"num_attention_heads\": 2, \"num_key_value_heads\": 1, "
                              "\"rms_norm_eps\": 1e-6, \"tie_word_embeddings\": false}";
    Model *lm = make_model("causal", cfg, 5, MODEL_FP32);
    if (!lm) return;
    char dir[160], err[1024];
    snprintf(dir, sizeof dir, "%s/causal", tmpdir);
    Model *a = model_load_reward(dir, MODEL_FP32, 7, err, sizeof err), *b = model_load_reward(dir, MODEL_FP32, 7, err, sizeof err);
    Model *c = model_load_reward(dir, MODEL_FP32, 8, err, sizeof err);
    CHECK(a && b && c, "load as a reward model: %s", err);
    if (!a || !b || !c) return;
    const ModelConfig *ca = model_config(a);
    CHECK(ca->head == HEAD_SCORE && ca->num_labels == 1, "a score head of one output");
    size_t H = 16, V = 17;
    CHECK(model_n_params(a) == model_n_params(lm) - V * H + H, "lm_head [V, H] replaced by score [1, H]");
    const float *ea = model_params(a), *el = model_params(lm);
    CHECK(!memcmp(ea, el, sizeof(float) * V * H), "the embedding is the causal LM's");
    size_t n = model_n_params(a);
    CHECK(!memcmp(model_params(a), model_params(b), sizeof(float) * n), "the same seed, the same head");
    CHECK(memcmp(model_params(a) + n - H, model_params(c) + n - H, sizeof(float) * H) != 0, "another seed, another head");
    double sd = 0;
    for (size_t i = n - H; i < n; i++) sd += (double)model_params(a)[i] * model_params(a)[i];
    sd = sqrt(sd / (double)H);
    CHECK(sd > 0.005 && sd < 0.05, "the head ~ N(0, 0.02^2) (rms %.4f)", sd);
    snprintf(dir, sizeof dir, "%s/causal_rm", tmpdir);
    CHECK(model_save(a, dir, 0, NULL, err, sizeof err) == 0, "save: %s", err);
    Model *back = model_load_as(dir, MODEL_FP32, 0, err, sizeof err);
    CHECK(back && model_config(back)->head == HEAD_SCORE, "the saved folder loads as a reward model: %s", back ? "" : err);
    if (back) CHECK(!memcmp(model_params(back), model_params(a), sizeof(float) * n), "and holds the same weights");
    model_free(back), model_free(a), model_free(b), model_free(c), model_free(lm);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ppa_reward_XXXXXX");
    if (!mkdtemp(tmpdir)) return 1;
    const char *goldens[] = {"reward_llama", "reward_qwen2", "reward_armo"};
    for (int i = 0; i < 3; i++)
        test_golden(goldens[i]), test_packed_equals_separate(goldens[i]), test_bf16_against_autocast(goldens[i]);
    if (n_pool) {
        double xo = 0, xt = 0;
        for (int i = 0; i < n_pool; i++) xo = fmax(xo, pool_ppa[i]), xt = fmax(xt, pool_torch[i]);
        double mo = median(pool_ppa, n_pool), mt = median(pool_torch, n_pool);
        printf("all reward goldens, %d rewards: |reward - float64| ppa bf16 median %.2e max %.2e; autocast median %.2e "
               "max %.2e\n", n_pool, mo, xo, mt, xt);
        /* the maximum of 81 is one draw of the rounding: up to twice autocast's, as test_bf16.c allows log-probs */
        CHECK(mo <= mt && xo <= 2 * xt, "bf16 rewards: median error at most autocast's, maximum at most twice");
    }
    test_pad_rule();
    test_from_causal_lm();
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", tmpdir);
    return check_report("test_reward");
}
