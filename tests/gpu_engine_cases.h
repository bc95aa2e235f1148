/* gpu_engine_cases.h: what the GPU engine's two tests share: tests/test_gpu_engine.c (src/gpu against the CPU
 * stand-in of the CUDA module, part of make test) and tests/cuda/test_gpu_forward.c (against the real module, on a
 * GPU). The cases (the engine fixtures' configs, tests/fixtures/engine/NAME.json, with head_dim 64: the GPU's
 * attention runs head sizes 64 and 128), their model folders, deterministic random rows, the CPU engine's runs (the
 * oracle) and the GPU engine's, and error measures; each test makes its own checks with them. */
#ifndef PPA_TEST_GPU_ENGINE_CASES_H
#define PPA_TEST_GPU_ENGINE_CASES_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda/adamw.h"
#include "cuda/lora.h"
#include "cuda/nccl.h"
#include "cuda/attention.h"
#include "cuda/common.h"
#include "cuda/convert.h"
#include "cuda/decode.h"
#include "cuda/embedding.h"
#include "cuda/global_norm.h"
#include "cuda/lmhead.h"
#include "cuda/sample.h"
#include "cuda/matmul.h"
#include "cuda/rmsnorm.h"
#include "cuda/rope.h"
#include "cuda/swiglu.h"
#include "device/pc_api.h"
#include "gpu/gpu_model.h"
#include "hf/checkpoint.h"
#include "io/safetensors.h"
#include "model/model.h"

/* The table of the module linked into the test (the real one, or the stand-in): assigning each pc_* function to
 * its field is also the compiler's check that device/pc_api.h's prototypes are the module's headers'. */
static inline PcApi ge_linked_api(void) {
    PcApi a;
#define GE_FILL(ret, name, params) a.name = name;
    PC_API_FUNCTIONS(GE_FILL)
#undef GE_FILL
    return a;
}

typedef struct {
    const char *name;    /* the case */
    const char *fixture; /* tests/fixtures/engine/FIXTURE.json */
    int nkv, tie;        /* num_key_value_heads and tie_word_embeddings, -1: the fixture's */
    int window;          /* sliding_window, 0: the fixture's */
    int biases;          /* 1: Llama's attention_bias and mlp_bias (q, k, v, o, gate, up and down biases) */
    const char *what;
} GeCase;

static const GeCase GE_CASES[] = {
    {"llama_tied_gqa", "llama_untied", 2, 1, 0, 0, "Llama, GQA (4 heads, 2 kv heads), tied LM head"},
    {"llama_biases", "llama_untied", -1, -1, 0, 1, "Llama, MHA, untied, attention_bias and mlp_bias"},
    {"qwen2_tied_gqa", "qwen2_tied_gqa", -1, -1, 0, 0, "Qwen2: q/k/v biases, GQA, tied LM head"},
    {"llama3_rope", "llama3_rope", -1, -1, 0, 0, "Llama with llama3 RoPE scaling, one kv head"},
    {"mistral_window", "mistral_gqa", -1, -1, 20, 0, "Mistral, GQA, a sliding window of 20"},
    {"reward_llama", "reward_llama", -1, -1, 0, 0, "LlamaForSequenceClassification, 1 label"},
    {"reward_qwen2", "reward_qwen2", -1, -1, 0, 0, "Qwen2ForSequenceClassification, 3 labels, biases"},
    {"reward_armo", "reward_armo", -1, -1, 0, 0, "ArmoRM's regression heads: 5 objectives, llama3 RoPE, pads"},
};
#define GE_N_CASES ((int)(sizeof GE_CASES / sizeof GE_CASES[0]))
#define GE_HEAD_DIM 64

static inline char *ge_slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)(n > 0 ? n : 0) + 1);
    if (s && (n < 0 || fread(s, 1, (size_t)n, f) != (size_t)n)) n = 0;
    if (s) s[n] = 0;
    fclose(f);
    return s;
}

/* the case's config: the fixture's with its overrides and head_dim (keep_head_dim: the fixture's own); 0 or -1 */
static inline int ge_config(const GeCase *k, int keep_head_dim, ModelConfig *c, char *err, size_t errlen) {
    char path[256];
    snprintf(path, sizeof path, "tests/fixtures/engine/%s.json", k->fixture);
    char *text = ge_slurp(path);
    if (!text) return snprintf(err, errlen, "cannot read %s", path), -1;
    int rc = model_config_parse(c, text, path, err, errlen);
    free(text);
    if (rc) return -1;
    if (!keep_head_dim) c->head_dim = GE_HEAD_DIM;
    if (k->nkv > 0) c->num_key_value_heads = k->nkv;
    if (k->tie >= 0) c->tie_word_embeddings = k->tie;
    if (k->window > 0) c->sliding_window = k->window;
    if (k->biases) c->qkv_bias = c->o_bias = c->mlp_bias = 1;
    return 0;
}

/* Writes the folder DIR (under tmpdir: NAME_TAG) of config c with random weights (seed 11, matrices of std `std`,
 * every weight perturbed: the engine goldens' with std 0.3) in dtype, once; loads it as prec (frozen when bf16).
 * NULL with err. */
static inline Model *ge_model(const char *tmpdir, const char *tag, const ModelConfig *c, double std, StDtype dtype,
                              ModelPrecision prec, char *err, size_t errlen) {
    char dir[512], cfg[600];
    snprintf(dir, sizeof dir, "%s/%s_%s", tmpdir, tag, dtype == ST_BF16 ? "bf16" : "f32");
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    if (access(cfg, F_OK)) {
        ModelTensorSpec *specs;
        int n = model_tensor_table(c, &specs), rc;
        float **w = calloc((size_t)n, sizeof(float *));
        checkpoint_init(specs, n, 11, std, 1, w);
        rc = checkpoint_write_folder(dir, c, specs, w, n, dtype, NULL, NULL, err, errlen);
        for (int i = 0; i < n; i++) free(w[i]);
        free(w), free(specs);
        if (rc) return NULL;
    }
    return model_load_as(dir, prec, prec == MODEL_BF16, err, errlen);
}

/* ---- rows ---- */

#define GE_MAX_ROWS 64
typedef struct {
    int n;
    Row rows[GE_MAX_ROWS];
    int lens[GE_MAX_ROWS][8];
    const int *resp[GE_MAX_ROWS][8];
    int *store; /* every token */
} GeRows;

static inline uint64_t ge_rand(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* n rows (n <= GE_MAX_ROWS): prompts of 1 .. max_p tokens, 1 .. max_k (<= 8) responses of 1 .. max_r, uniform
 * ids; prompt + response within the model's window; with a pad token, some responses end in pads (one all pads). */
static inline void ge_rows(GeRows *R, const ModelConfig *c, uint64_t seed, int n, int max_p, int max_r, int max_k) {
    uint64_t s = seed;
    int total = 0, pad = c->pad_token_id;
    memset(R, 0, sizeof *R);
    R->n = n;
    R->store = malloc(sizeof(int) * (size_t)n * (size_t)(max_p + 8 * max_r));
    for (int r = 0; r < n; r++) {
        int P = 1 + (int)(ge_rand(&s) % (uint64_t)max_p), K = 1 + (int)(ge_rand(&s) % (uint64_t)max_k);
        int *prompt = R->store + total;
        for (int j = 0; j < P; j++) prompt[j] = (int)(ge_rand(&s) % (uint64_t)c->vocab_size);
        total += P;
        for (int k = 0; k < K; k++) {
            int len = 1 + (int)(ge_rand(&s) % (uint64_t)max_r);
            if (c->sliding_window && P + len > c->sliding_window)
                len = c->sliding_window - P > 0 ? c->sliding_window - P : 1;
            int *t = R->store + total;
            for (int j = 0; j < len; j++) t[j] = (int)(ge_rand(&s) % (uint64_t)c->vocab_size);
            if (pad >= 0 && ge_rand(&s) % 3 == 0) /* trailing pads: the reward head reads before them */
                for (int j = len - 1 - (int)(ge_rand(&s) % 2); j < len; j++) t[j > 0 ? j : 0] = pad;
            if (pad >= 0 && r == 1 && k == K - 1) /* all pads: the reward head reads the prompt's last non-pad */
                for (int j = 0; j < len; j++) t[j] = pad;
            R->lens[r][k] = len, R->resp[r][k] = t;
            total += len;
        }
        R->rows[r] = (Row){P, prompt, K, R->lens[r], R->resp[r]};
    }
}

/* the same responses as separate sequences: one row per response (at most GE_MAX_ROWS) */
static inline void ge_separate(const GeRows *in, GeRows *out) {
    memset(out, 0, sizeof *out);
    for (int r = 0; r < in->n; r++)
        for (int k = 0; k < in->rows[r].n_resp && out->n < GE_MAX_ROWS; k++, out->n++) {
            out->lens[out->n][0] = in->rows[r].resp_len[k], out->resp[out->n][0] = in->rows[r].resp[k];
            out->rows[out->n] = (Row){in->rows[r].prompt_len, in->rows[r].prompt, 1, out->lens[out->n],
                                      out->resp[out->n]};
        }
}

static inline void ge_rows_free(GeRows *R) { free(R->store); }

/* responses of n rows */
static inline int ge_n_resp(const Row *rows, int n) {
    int k = 0;
    for (int r = 0; r < n; r++) k += rows[r].n_resp;
    return k;
}

/* packed tokens of n rows (each prompt once) */
static inline int ge_tokens(const Row *rows, int n) {
    int t = 0;
    for (int r = 0; r < n; r++) {
        t += rows[r].prompt_len;
        for (int k = 0; k < rows[r].n_resp; k++) t += rows[r].resp_len[k];
    }
    return t;
}

/* values per response: 1 (a log-prob) or num_labels */
static inline int ge_width(const ModelConfig *c) { return c->head == HEAD_LM ? 1 : c->num_labels; }

/* the CPU engine: out [n_resp * width], n_scored [n_resp] (LM only; may be NULL); 0 or -1 with err */
static inline int ge_cpu(Model *m, const Row *rows, int n, double *out, int *n_scored, char *err, size_t errlen) {
    Batch *b = batch_new(m, rows, n, err, errlen);
    if (!b) return -1;
    if (model_config(m)->head == HEAD_LM)
        model_forward(m, b, out, n_scored);
    else
        model_forward_rewards(m, b, out);
    batch_free(b);
    return 0;
}

/* the GPU engine, the same */
static inline int ge_gpu(GpuModel *g, const Row *rows, int n, double *out, int *n_scored, char *err, size_t errlen) {
    if (gpu_model_config(g)->head == HEAD_LM) return gpu_forward_logps(g, rows, n, out, n_scored, err, errlen);
    return gpu_forward_rewards(g, rows, n, out, err, errlen);
}

/* max over i of |a - b| / max(floor, |b|) */
static inline double ge_rel(const double *a, const double *b, int n, double floor) {
    double w = 0.0;
    for (int i = 0; i < n; i++) {
        double d = fabs(a[i] - b[i]) / fmax(floor, fabs(b[i]));
        w = d > w || isnan(d) ? d : w;
    }
    return w;
}

static inline int ge_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* the median over i of |a - b| / max(floor, |b|) (NaN counts as infinite) */
static inline double ge_rel_median(const double *a, const double *b, int n, double floor) {
    double *d = malloc(sizeof(double) * (n > 0 ? (size_t)n : 1)), m;
    for (int i = 0; i < n; i++) {
        d[i] = fabs(a[i] - b[i]) / fmax(floor, fabs(b[i]));
        if (isnan(d[i])) d[i] = INFINITY;
    }
    qsort(d, (size_t)n, sizeof(double), ge_cmp_double);
    m = n ? (n % 2 ? d[n / 2] : 0.5 * (d[n / 2 - 1] + d[n / 2])) : 0.0;
    free(d);
    return m;
}

#endif
