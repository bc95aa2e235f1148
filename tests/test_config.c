/* test_config.c: config.json parsing (every field, defaults, eos forms,
 * v4 and v5 RoPE keys), refusals and their messages, the tensor table and
 * parameter counts of real-model-shaped configs, RoPE inverse frequencies
 * (default, linear, llama3 against long double and a plain-Python reference),
 * the atomic writer and the write/read round trip.
 *
 * Fixtures: the .json files of tests/fixtures/configs, written for this test from the
 * published field values of each model (argv[1] overrides the folder). */
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "hf/config.h"

static const char *fixture_dir = "tests/fixtures/configs";

static int load_fixture(ModelConfig *c, const char *file) {
    char path[512], err[512];
    snprintf(path, sizeof path, "%s/%s", fixture_dir, file);
    int rc = model_config_load(c, path, err, sizeof err);
    CHECK(rc == 0, "load %s: %s", path, err);
    return rc;
}

static int64_t table_param_sum(const ModelTensorSpec *t, int n) {
    int64_t s = 0;
    for (int i = 0; i < n; i++) s += t[i].numel;
    return s;
}

static const ModelTensorSpec *find_tensor(const ModelTensorSpec *t, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (!strcmp(t[i].name, name)) return &t[i];
    return NULL;
}

/* The named tensor exists with this shape (d1 = 0: 1-D) and kind. */
static void check_tensor(const ModelTensorSpec *t, int n, const char *name, int64_t d0, int64_t d1,
                         ModelTensorKind kind) {
    const ModelTensorSpec *s = find_tensor(t, n, name);
    CHECK(s != NULL, "tensor %s is in the table", name);
    if (!s) return;
    CHECK(s->ndim == (d1 ? 2 : 1) && s->shape[0] == d0 && s->shape[1] == d1 && s->numel == (d1 ? d0 * d1 : d0),
          "%s: shape [%lld, %lld] ndim %d, want [%lld, %lld]", name, (long long)s->shape[0], (long long)s->shape[1],
          s->ndim, (long long)d0, (long long)d1);
    CHECK(s->kind == kind, "%s: kind %d, want %d", name, s->kind, kind);
}

/* Table = count, sum = param count, names unique, layers in order. */
static void check_table_invariants(const ModelConfig *c, const ModelTensorSpec *t, int n, const char *what) {
    CHECK(n == model_tensor_count(c), "%s: table has %d tensors, model_tensor_count says %d", what, n,
          model_tensor_count(c));
    CHECK(table_param_sum(t, n) == model_param_count(c), "%s: table sums to %lld, model_param_count %lld", what,
          (long long)table_param_sum(t, n), (long long)model_param_count(c));
    int dups = 0, order = 1;
    for (int i = 0; i < n; i++) {
        for (int j = i + 1; j < n; j++) dups += !strcmp(t[i].name, t[j].name);
        if (i > 0 && t[i].layer >= 0 && t[i - 1].layer >= 0 && t[i].layer < t[i - 1].layer) order = 0;
    }
    CHECK(dups == 0, "%s: %d duplicate tensor names", what, dups);
    CHECK(order, "%s: layers appear in increasing order", what);
    CHECK(!strcmp(t[0].name, "model.embed_tokens.weight"), "%s: first tensor is %s", what, t[0].name);
    const char *last = c->tie_word_embeddings ? "model.norm.weight" : "lm_head.weight";
    CHECK(!strcmp(t[n - 1].name, last), "%s: last tensor is %s, want %s", what, t[n - 1].name, last);
}

/* The per-layer names in canonical order for layer i (no biases, no qk norm). */
static void check_layer_order(const ModelTensorSpec *t, int first, int layer, int bias, int o_bias, int qk_norm,
                              int mlp_bias) {
    const char *seq[20];
    int k = 0;
    seq[k++] = "input_layernorm.weight";
    seq[k++] = "self_attn.q_proj.weight";
    if (bias) seq[k++] = "self_attn.q_proj.bias";
    seq[k++] = "self_attn.k_proj.weight";
    if (bias) seq[k++] = "self_attn.k_proj.bias";
    seq[k++] = "self_attn.v_proj.weight";
    if (bias) seq[k++] = "self_attn.v_proj.bias";
    seq[k++] = "self_attn.o_proj.weight";
    if (o_bias) seq[k++] = "self_attn.o_proj.bias";
    if (qk_norm) seq[k++] = "self_attn.q_norm.weight", seq[k++] = "self_attn.k_norm.weight";
    seq[k++] = "post_attention_layernorm.weight";
    seq[k++] = "mlp.gate_proj.weight";
    if (mlp_bias) seq[k++] = "mlp.gate_proj.bias";
    seq[k++] = "mlp.up_proj.weight";
    if (mlp_bias) seq[k++] = "mlp.up_proj.bias";
    seq[k++] = "mlp.down_proj.weight";
    if (mlp_bias) seq[k++] = "mlp.down_proj.bias";
    for (int i = 0; i < k; i++) {
        char want[96];
        snprintf(want, sizeof want, "model.layers.%d.%s", layer, seq[i]);
        CHECK(!strcmp(t[first + i].name, want) && t[first + i].layer == layer, "table[%d] = %s (layer %d), want %s",
              first + i, t[first + i].name, t[first + i].layer, want);
    }
}

/* ---- llama3 RoPE, independent of the library ------------------------------ */

/* Straight from formats.md e.3, in long double. */
static long double llama3_ref(long double theta, int hd, int j, long double factor, long double lo, long double hi,
                              long double orig) {
    long double f = 1.0L / powl(theta, (long double)(2 * j) / hd);
    long double wavelen = 2 * 3.14159265358979323846264338327950288L / f;
    if (wavelen > orig / lo) return f / factor;
    if (wavelen < orig / hi) return f;
    long double smooth = (orig / wavelen - lo) / (hi - lo);
    return (1 - smooth) * f / factor + smooth * f;
}

/* printed by tests/ref/config_rope_ref.py (plain Python floats) */
static const struct {
    int j;
    double v;
} PY_LLAMA31[] = {{0, 1.0},
                  {1, 0.8146172338565447},
                  {10, 0.12868737343265052},
                  {27, 0.003942276030116656},
                  {28, 0.0032114459947525913},
                  {29, 0.002166570763503359},
                  {30, 0.0013718935677611381},
                  {32, 0.0005248461609929547},
                  {34, 0.00017850781276799638},
                  {35, 9.556212353964683e-05},
                  {36, 7.78465527393245e-05},
                  {50, 4.411534674558404e-06},
                  {63, 3.068925988914511e-07}},
  PY_LLAMA32[] = {{0, 1.0},
                  {13, 0.004839421345719893},
                  {14, 0.0032114459947525913},
                  {15, 0.001290547928209264},
                  {16, 0.00042955679655936815},
                  {17, 9.70828780262767e-05},
                  {18, 1.9461638184831125e-05},
                  {31, 9.418306725434909e-08}};

static void test_llama31_rope(const ModelConfig *c) {
    double inv[64];
    rope_inv_freq(&c->rope, c->head_dim, inv);
    for (size_t i = 0; i < sizeof PY_LLAMA31 / sizeof PY_LLAMA31[0]; i++)
        CHECK_NEAR(inv[PY_LLAMA31[i].j], PY_LLAMA31[i].v, 0, 1e-14, "llama3.1 inv_freq[%d] vs Python", PY_LLAMA31[i].j);
    for (int j = 0; j < 64; j++)
        CHECK_NEAR(inv[j], (double)llama3_ref(500000, 128, j, 8, 1, 4, 8192), 0, 1e-14,
                   "llama3.1 inv_freq[%d] vs long double", j);
    /* Regimes: wavelen_j = 2 pi 500000^(j/64).
     *   wavelen < 8192/4 = 2048  <=>  j < 64 ln(2048 / 2 pi) / ln 500000 = 64 x 5.7868 / 13.1224 = 28.22
     *   wavelen > 8192/1 = 8192  <=>  j > 64 ln(8192 / 2 pi) / ln 500000 = 64 x 7.1731 / 13.1224 = 34.98
     * so j <= 28 keep theta^(-2j/hd), j >= 35 are divided by 8, and j = 29..34 blend. */
    for (int j = 0; j < 64; j++) {
        double base = 1.0 / pow(500000.0, (double)(2 * j) / 128);
        if (j <= 28)
            CHECK(inv[j] == base, "llama3.1 j = %d (high frequency) is unchanged: %.17g vs %.17g", j, inv[j], base);
        else if (j >= 35) CHECK(inv[j] == base / 8, "llama3.1 j = %d (low frequency) is divided by 8", j);
        else CHECK(inv[j] > base / 8 && inv[j] < base, "llama3.1 j = %d (medium) lies between base/8 and base", j);
    }
}

/* The two regime boundaries and the middle of the band, with head_dim 4 so
 * that inv_freq_1 = theta^(-1/2) and wavelen = 2 pi sqrt(theta): theta puts
 * the wavelength where we want it. factor 8, low 1, high 4, orig 8192:
 * boundaries at wavelen 2048 and 8192, smooth = 1/2 at 8192/2.5 = 3276.8. */
static void test_llama3_boundaries(void) {
    ModelConfig c = {.head_dim = 4, .rope = {ROPE_LLAMA3, 0, 8, 1, 4, 8192}};
    double inv[2];
    const double eps = 1e-9;
    struct {
        double wavelen, scale_wanted, tol;
        const char *what;
    } cases[] = {
        {2048 * (1 - eps), 1.0, 0, "just below the high-frequency boundary: unchanged"},
        {2048 * (1 + eps), 1.0, 1e-8, "just above the high-frequency boundary: continuous (smooth ~ 1)"},
        {8192 * (1 - eps), 1.0 / 8, 1e-8, "just below the low-frequency boundary: continuous (smooth ~ 0)"},
        {8192 * (1 + eps), 1.0 / 8, 0, "just above the low-frequency boundary: divided by factor"},
        {3276.8, 0.5 / 8 + 0.5, 1e-12, "middle of the band: smooth = 1/2"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double s = cases[i].wavelen / (2 * M_PI);
        c.rope.theta = s * s;
        rope_inv_freq(&c.rope, c.head_dim, inv);
        double base = 1.0 / pow(c.rope.theta, 0.5);
        CHECK(inv[0] == 1.0, "j = 0 is unchanged");
        CHECK_NEAR(inv[1] / base, cases[i].scale_wanted, cases[i].tol, 0, "%s", cases[i].what);
    }
}

static void test_default_and_linear_rope(void) {
    ModelConfig c = {.head_dim = 8, .rope = {ROPE_DEFAULT, 10000.0, 1, 0, 0, 0}};
    double inv[4];
    rope_inv_freq(&c.rope, c.head_dim, inv);
    /* 10000^(-2j/8) = 10^(-j) */
    for (int j = 0; j < 4; j++) CHECK_NEAR(inv[j], pow(10.0, -j), 0, 1e-15, "default inv_freq[%d] = 10^-%d", j, j);
    c.rope.type = ROPE_LINEAR;
    c.rope.factor = 4;
    rope_inv_freq(&c.rope, c.head_dim, inv);
    for (int j = 0; j < 4; j++) CHECK_NEAR(inv[j], pow(10.0, -j) / 4, 0, 1e-15, "linear inv_freq[%d] / 4", j);
}

/* ---- fixtures ----------------------------------------------------------------- */

static void test_llama31_8b(void) {
    ModelConfig c;
    if (load_fixture(&c, "llama31_8b.json")) return;
    CHECK(c.type == MODEL_LLAMA, "type llama");
    CHECK(c.vocab_size == 128256 && c.hidden_size == 4096 && c.intermediate_size == 14336, "V, H, I");
    CHECK(c.num_hidden_layers == 32 && c.num_attention_heads == 32 && c.num_key_value_heads == 8, "L, NH, NKV");
    CHECK(c.head_dim == 128, "head_dim defaults to 4096 / 32 = 128: %d", c.head_dim);
    CHECK(c.max_position_embeddings == 131072, "max_position_embeddings");
    CHECK(c.rms_norm_eps == 1e-5, "rms_norm_eps %g", c.rms_norm_eps);
    CHECK(!c.tie_word_embeddings && !c.qkv_bias && !c.o_bias && !c.mlp_bias && !c.qk_norm, "untied, no biases");
    CHECK(c.bos_token_id == 128000, "bos");
    CHECK(c.n_eos == 3 && c.eos_token_ids[0] == 128001 && c.eos_token_ids[1] == 128008 &&
              c.eos_token_ids[2] == 128009,
          "eos list [128001, 128008, 128009]");
    CHECK(c.pad_token_id == -1, "no pad");
    CHECK(!strcmp(c.dtype, "bfloat16"), "dtype %s", c.dtype);
    CHECK(c.rope.type == ROPE_LLAMA3 && c.rope.theta == 500000.0 && c.rope.factor == 8 && c.rope.low_freq_factor == 1 &&
              c.rope.high_freq_factor == 4 && c.rope.original_max_position_embeddings == 8192,
          "rope llama3 (500000, 8, 1, 4, 8192)");
    CHECK(c.sliding_window == 0 && c.max_window_layers == 0, "no sliding window");

    ModelTensorSpec *t;
    int n = model_tensor_table(&c, &t);
    /* 1 embedding + 32 x 9 + final norm + lm_head = 291 */
    CHECK(n == 291, "llama3.1-8b: %d tensors, want 291", n);
    /* embed = lm_head = 128256 x 4096 = 525,336,576
     * per layer: q 4096 x 4096 = 16,777,216; k = v = 1024 x 4096 = 4,194,304; o 16,777,216;
     *   gate = up = down = 14336 x 4096 = 58,720,256 (x 3 = 176,160,768); 2 norms 8,192
     *   = 33,554,432 + 8,388,608 + 176,160,768 + 8,192 = 218,112,000
     * total = 2 x 525,336,576 + 32 x 218,112,000 + 4,096
     *       = 1,050,673,152 + 6,979,584,000 + 4,096 = 8,030,261,248 */
    CHECK(model_param_count(&c) == 8030261248LL, "llama3.1-8b params %lld", (long long)model_param_count(&c));
    check_table_invariants(&c, t, n, "llama3.1-8b");
    check_layer_order(t, 1, 0, 0, 0, 0, 0);
    check_layer_order(t, 1 + 31 * 9, 31, 0, 0, 0, 0);
    check_tensor(t, n, "model.embed_tokens.weight", 128256, 4096, MODEL_TENSOR_MATRIX);
    check_tensor(t, n, "model.layers.0.input_layernorm.weight", 4096, 0, MODEL_TENSOR_NORM);
    check_tensor(t, n, "model.layers.0.self_attn.q_proj.weight", 4096, 4096, MODEL_TENSOR_MATRIX);
    check_tensor(t, n, "model.layers.0.self_attn.k_proj.weight", 1024, 4096, MODEL_TENSOR_MATRIX);
    check_tensor(t, n, "model.layers.0.self_attn.v_proj.weight", 1024, 4096, MODEL_TENSOR_MATRIX);
    check_tensor(t, n, "model.layers.0.self_attn.o_proj.weight", 4096, 4096, MODEL_TENSOR_MATRIX);
    check_tensor(t, n, "model.layers.17.mlp.gate_proj.weight", 14336, 4096, MODEL_TENSOR_MATRIX);
    check_tensor(t, n, "model.layers.17.mlp.up_proj.weight", 14336, 4096, MODEL_TENSOR_MATRIX);
    check_tensor(t, n, "model.layers.31.mlp.down_proj.weight", 4096, 14336, MODEL_TENSOR_MATRIX);
    check_tensor(t, n, "model.layers.31.post_attention_layernorm.weight", 4096, 0, MODEL_TENSOR_NORM);
    check_tensor(t, n, "model.norm.weight", 4096, 0, MODEL_TENSOR_NORM);
    check_tensor(t, n, "lm_head.weight", 128256, 4096, MODEL_TENSOR_MATRIX);
    CHECK(!find_tensor(t, n, "model.layers.0.self_attn.q_proj.bias"), "no q bias");
    CHECK(!find_tensor(t, n, "model.layers.32.input_layernorm.weight"), "no layer 32");
    free(t);
    test_llama31_rope(&c);
}

static void test_qwen2_0_5b(void) {
    ModelConfig c;
    if (load_fixture(&c, "qwen2_0_5b.json")) return;
    CHECK(c.type == MODEL_QWEN2, "type qwen2");
    CHECK(c.vocab_size == 151936 && c.hidden_size == 896 && c.intermediate_size == 4864 && c.num_hidden_layers == 24,
          "V, H, I, L");
    CHECK(c.num_attention_heads == 14 && c.num_key_value_heads == 2 && c.head_dim == 64, "14 heads, 2 kv, hd 64");
    CHECK(c.tie_word_embeddings, "tied");
    CHECK(c.qkv_bias && !c.o_bias && !c.mlp_bias && !c.qk_norm, "qwen2: q/k/v biases only");
    CHECK(c.bos_token_id == 151643 && c.n_eos == 1 && c.eos_token_ids[0] == 151643, "eos as an int");
    CHECK(c.rope.type == ROPE_DEFAULT && c.rope.theta == 1e6 && c.rope.factor == 1, "rope default, theta 1e6");
    CHECK(c.rms_norm_eps == 1e-6 && c.max_position_embeddings == 32768, "eps, max positions");
    CHECK(c.sliding_window == 0 && c.max_window_layers == 21, "use_sliding_window false: no window (mwl 21 kept)");
    char err[256];
    CHECK(model_config_check_seq_len(&c, 32768, err, sizeof err) == 0, "no window: any length within the positions");
    CHECK(model_config_check_seq_len(&c, 32769, err, sizeof err) == -1 && strstr(err, "longer than the model's 32768 positions"),
          "never past the positions: %s", err);

    ModelTensorSpec *t;
    int n = model_tensor_table(&c, &t);
    /* 1 + 24 x (9 + 3 biases) + final norm, no lm_head = 290 */
    CHECK(n == 290, "qwen2-0.5b: %d tensors, want 290", n);
    /* embed 151936 x 896 = 136,134,656 (tied: counted once)
     * per layer: q 896 x 896 = 802,816 + bias 896; k = v = 128 x 896 = 114,688 + bias 128 each;
     *   o 802,816; gate = up = down = 4864 x 896 = 4,358,144 (x 3 = 13,074,432); 2 norms 1,792
     *   = 1,605,632 + 229,376 + 1,152 + 13,074,432 + 1,792 = 14,912,384
     * total = 136,134,656 + 24 x 14,912,384 + 896 = 136,134,656 + 357,897,216 + 896 = 494,032,768 */
    CHECK(model_param_count(&c) == 494032768LL, "qwen2-0.5b params %lld", (long long)model_param_count(&c));
    check_table_invariants(&c, t, n, "qwen2-0.5b");
    check_layer_order(t, 1, 0, 1, 0, 0, 0);
    check_tensor(t, n, "model.layers.5.self_attn.q_proj.bias", 896, 0, MODEL_TENSOR_BIAS);
    check_tensor(t, n, "model.layers.5.self_attn.k_proj.weight", 128, 896, MODEL_TENSOR_MATRIX);
    check_tensor(t, n, "model.layers.5.self_attn.k_proj.bias", 128, 0, MODEL_TENSOR_BIAS);
    check_tensor(t, n, "model.layers.5.self_attn.v_proj.bias", 128, 0, MODEL_TENSOR_BIAS);
    CHECK(!find_tensor(t, n, "model.layers.5.self_attn.o_proj.bias"), "qwen2: no o_proj bias");
    CHECK(!find_tensor(t, n, "lm_head.weight"), "tied: no lm_head");
    free(t);
}

static void test_mistral_7b(void) {
    ModelConfig c;
    char err[256];
    if (load_fixture(&c, "mistral_7b_v01.json")) return;
    CHECK(c.type == MODEL_MISTRAL && c.num_key_value_heads == 8 && c.head_dim == 128, "mistral, 8 kv heads");
    CHECK(c.rope.type == ROPE_DEFAULT && c.rope.theta == 10000.0, "rope theta 1e4");
    CHECK(c.bos_token_id == 1 && c.n_eos == 1 && c.eos_token_ids[0] == 2, "bos 1, eos 2");
    CHECK(c.sliding_window == 4096 && c.max_window_layers == 0, "sliding window 4096 on every layer");
    CHECK(model_config_check_seq_len(&c, 4096, err, sizeof err) == 0, "4096 tokens fit the window");
    CHECK(model_config_check_seq_len(&c, 4097, err, sizeof err) == -1 && strstr(err, "sliding window of 4096"),
          "4097 tokens refused: %s", err);
    /* per layer as Llama-3.1-8B: 218,112,000; embed = lm_head = 32000 x 4096 = 131,072,000
     * total = 262,144,000 + 6,979,584,000 + 4,096 = 7,241,732,096 */
    CHECK(model_param_count(&c) == 7241732096LL, "mistral-7b params %lld", (long long)model_param_count(&c));
    ModelTensorSpec *t;
    int n = model_tensor_table(&c, &t);
    CHECK(n == 291, "mistral: %d tensors", n);
    check_table_invariants(&c, t, n, "mistral-7b");
    free(t);
}

static void test_qwen3_0_6b(void) {
    ModelConfig c;
    if (load_fixture(&c, "qwen3_0_6b.json")) return;
    CHECK(c.type == MODEL_QWEN3 && c.qk_norm && !c.qkv_bias && !c.o_bias, "qwen3: qk norm, no biases");
    CHECK(c.head_dim == 128 && c.hidden_size / c.num_attention_heads == 64, "head_dim 128 != 1024 / 16");
    CHECK(c.rope.theta == 1e6 && c.rope.type == ROPE_DEFAULT, "integer rope_theta read as 1e6");
    CHECK(c.sliding_window == 0 && c.max_window_layers == 28, "sliding_window null");
    CHECK(c.n_eos == 1 && c.eos_token_ids[0] == 151645, "eos");
    ModelTensorSpec *t;
    int n = model_tensor_table(&c, &t);
    /* 1 + 28 x 11 + 1 (tied) = 310 */
    CHECK(n == 310, "qwen3: %d tensors, want 310", n);
    check_layer_order(t, 1, 0, 0, 0, 1, 0);
    check_tensor(t, n, "model.layers.0.self_attn.q_proj.weight", 2048, 1024, MODEL_TENSOR_MATRIX);
    check_tensor(t, n, "model.layers.0.self_attn.k_proj.weight", 1024, 1024, MODEL_TENSOR_MATRIX);
    check_tensor(t, n, "model.layers.0.self_attn.o_proj.weight", 1024, 2048, MODEL_TENSOR_MATRIX);
    check_tensor(t, n, "model.layers.27.self_attn.q_norm.weight", 128, 0, MODEL_TENSOR_NORM);
    check_tensor(t, n, "model.layers.27.self_attn.k_norm.weight", 128, 0, MODEL_TENSOR_NORM);
    /* embed 151936 x 1024 = 155,582,464
     * per layer: q 2048 x 1024 = 2,097,152; k = v = 1024 x 1024 = 1,048,576; o 2,097,152;
     *   q_norm + k_norm 256; mlp 3 x 3072 x 1024 = 9,437,184; norms 2,048 = 15,730,944
     * total = 155,582,464 + 28 x 15,730,944 + 1,024 = 155,582,464 + 440,466,432 + 1,024 = 596,049,920 */
    CHECK(model_param_count(&c) == 596049920LL, "qwen3-0.6b params %lld", (long long)model_param_count(&c));
    check_table_invariants(&c, t, n, "qwen3-0.6b");
    free(t);
}

static void test_v5_rope_parameters(void) {
    ModelConfig c;
    if (load_fixture(&c, "llama32_1b_v5.json")) return;
    CHECK(c.rope.type == ROPE_LLAMA3 && c.rope.theta == 500000.0 && c.rope.factor == 32 &&
              c.rope.original_max_position_embeddings == 8192,
          "rope_parameters: llama3, theta inside the dict");
    CHECK(!strcmp(c.dtype, "bfloat16"), "v5 dtype key");
    CHECK(c.head_dim == 64 && c.tie_word_embeddings && c.pad_token_id == -1, "head_dim 64, tied, pad null");
    /* embed 128256 x 2048 = 262,668,288 (tied)
     * per layer: q 2048^2 = 4,194,304; k = v = 512 x 2048 = 1,048,576; o 4,194,304;
     *   mlp 3 x 8192 x 2048 = 50,331,648; norms 4,096 = 60,821,504
     * total = 262,668,288 + 16 x 60,821,504 + 2,048 = 1,235,814,400 */
    CHECK(model_param_count(&c) == 1235814400LL, "llama3.2-1b params %lld", (long long)model_param_count(&c));
    double inv[32];
    rope_inv_freq(&c.rope, c.head_dim, inv);
    for (size_t i = 0; i < sizeof PY_LLAMA32 / sizeof PY_LLAMA32[0]; i++)
        CHECK_NEAR(inv[PY_LLAMA32[i].j], PY_LLAMA32[i].v, 0, 1e-14, "llama3.2 inv_freq[%d] vs Python", PY_LLAMA32[i].j);
}

static void test_small_fixtures(void) {
    ModelConfig c;
    ModelTensorSpec *t;
    int n;
    if (!load_fixture(&c, "tiny_llama_minimal.json")) {
        /* every optional field at its LlamaConfig default */
        CHECK(c.num_key_value_heads == 4 && c.head_dim == 16, "kv = heads, head_dim = 64 / 4");
        CHECK(c.rms_norm_eps == 1e-6 && c.max_position_embeddings == 2048, "LlamaConfig eps 1e-6, 2048 positions");
        CHECK(!c.tie_word_embeddings && !c.qkv_bias && !c.o_bias && !c.mlp_bias, "untied, no biases");
        CHECK(c.bos_token_id == 1 && c.n_eos == 1 && c.eos_token_ids[0] == 2 && c.pad_token_id == -1,
              "bos 1, eos 2, no pad");
        CHECK(c.rope.type == ROPE_DEFAULT && c.rope.theta == 10000.0 && c.rope.factor == 1, "rope default 1e4");
        CHECK(c.dtype[0] == 0 && c.sliding_window == 0, "no dtype, no window");
    }
    if (!load_fixture(&c, "tiny_llama_biases.json")) {
        CHECK(c.qkv_bias && c.o_bias && c.mlp_bias && c.head_dim == 16, "llama attention_bias + mlp_bias");
        CHECK(c.rope.type == ROPE_LINEAR && c.rope.factor == 4, "rope_scaling with the old key \"type\"");
        CHECK(c.n_eos == 2 && c.eos_token_ids[1] == 3 && c.pad_token_id == 0, "eos [2, 3], pad 0");
        n = model_tensor_table(&c, &t);
        /* per layer 9 + 3 qkv biases + o bias + 3 mlp biases = 16; 3 layers; + embed, norm, lm_head */
        CHECK(n == 51, "biases: %d tensors, want 51", n);
        check_table_invariants(&c, t, n, "tiny llama with biases");
        check_layer_order(t, 1 + 16, 1, 1, 1, 0, 1);
        check_tensor(t, n, "model.layers.2.self_attn.q_proj.weight", 128, 64, MODEL_TENSOR_MATRIX);
        check_tensor(t, n, "model.layers.2.self_attn.o_proj.weight", 64, 128, MODEL_TENSOR_MATRIX);
        check_tensor(t, n, "model.layers.2.self_attn.o_proj.bias", 64, 0, MODEL_TENSOR_BIAS);
        check_tensor(t, n, "model.layers.2.self_attn.v_proj.bias", 32, 0, MODEL_TENSOR_BIAS);
        check_tensor(t, n, "model.layers.2.mlp.gate_proj.bias", 128, 0, MODEL_TENSOR_BIAS);
        check_tensor(t, n, "model.layers.2.mlp.down_proj.bias", 64, 0, MODEL_TENSOR_BIAS);
        /* embed + lm_head 2 x 320 x 64 = 40,960; norm 64; per layer: q 128 x 64 = 8,192 + 128,
         * k = v = 32 x 64 = 2,048 + 32, o 64 x 128 = 8,192 + 64, mlp 3 x 128 x 64 = 24,576 + 128 + 128 + 64,
         * norms 128: 45,056 weights + 576 biases + 128 = 45,760 -> 40,960 + 64 + 3 x 45,760 = 178,304 */
        CHECK(model_param_count(&c) == 178304, "biases: %lld params", (long long)model_param_count(&c));
        free(t);
    }
    if (!load_fixture(&c, "tiny_qwen2_sliding.json")) {
        char err[256];
        CHECK(c.sliding_window == 256 && c.max_window_layers == 2, "layer_types: layers 2, 3 slide, window 256");
        CHECK(c.n_eos == 1 && c.bos_token_id == -1, "qwen2: bos absent = none");
        CHECK(model_config_check_seq_len(&c, 256, err, sizeof err) == 0, "256 tokens fit");
        CHECK(model_config_check_seq_len(&c, 257, err, sizeof err) == -1 && strstr(err, "257"), "257 refused: %s",
              err);
    }
}

/* ---- synthetic configs: defaults, forms, refusals ---------------------------------- */

static const char *BASE[][2] = {
    {"model_type", "\"llama\""},  {"vocab_size", "256"},         {"hidden_size", "64"},
    {"intermediate_size", "176"}, {"num_hidden_layers", "2"},    {"num_attention_heads", "4"},
};

/* BASE edited by (key, value) pairs ending in NULL: a value replaces or adds
 * the key, "-" removes it. */
static char *json_with(const char *k, ...) {
    const char *keys[64], *vals[64];
    int n = 0;
    for (size_t i = 0; i < sizeof BASE / sizeof BASE[0]; i++) keys[n] = BASE[i][0], vals[n++] = BASE[i][1];
    va_list ap;
    va_start(ap, k);
    for (; k; k = va_arg(ap, const char *)) {
        const char *v = va_arg(ap, const char *);
        int i = 0;
        while (i < n && strcmp(keys[i], k)) i++;
        if (i == n) n++;
        keys[i] = k, vals[i] = v;
    }
    va_end(ap);
    static char buf[4096]; /* test-only scratch */
    size_t pos = (size_t)snprintf(buf, sizeof buf, "{");
    for (int i = 0; i < n; i++)
        if (strcmp(vals[i], "-"))
            pos += (size_t)snprintf(buf + pos, sizeof buf - pos, "%s\"%s\": %s", pos > 1 ? ", " : "", keys[i], vals[i]);
    snprintf(buf + pos, sizeof buf - pos, "}");
    return buf;
}

static int parse(ModelConfig *c, const char *text, char *err, size_t errlen) {
    return model_config_parse(c, text, "cfg.json", err, errlen);
}

/* Parsing fails and the message starts with the file name and holds every
 * needle. */
static void refuse(const char *text, const char *needle1, const char *needle2) {
    ModelConfig c;
    char err[512] = "";
    int rc = parse(&c, text, err, sizeof err);
    CHECK(rc == -1, "refused: %s", text);
    if (rc != -1) return;
    CHECK(!strncmp(err, "cfg.json: ", 10), "message names the file: %s", err);
    CHECK(strstr(err, needle1) != NULL, "message \"%s\" mentions \"%s\"", err, needle1);
    if (needle2) CHECK(strstr(err, needle2) != NULL, "message \"%s\" mentions \"%s\"", err, needle2);
}

static int accept(ModelConfig *c, const char *text) {
    char err[512] = "";
    int rc = parse(c, text, err, sizeof err);
    CHECK(rc == 0, "accepted: %s (%s)", text, err);
    return rc;
}

/* reward heads: architectures[0] picks the head; num_labels from id2label, num_labels or the default; the
 * tensor table ends in the head (no lm_head, tied or not); config.json round-trips */
static void test_reward_heads(void) {
    ModelConfig c, back;
    char err[512], path[] = "/tmp/ppa_cfg_reward_XXXXXX";
    if (!accept(&c, json_with("architectures", "[\"LlamaForSequenceClassification\"]", NULL)))
        CHECK(c.head == HEAD_SCORE && c.num_labels == 2, "no labels given: PretrainedConfig's 2");
    if (!accept(&c, json_with("architectures", "[\"LlamaForSequenceClassification\"]", "id2label",
                              "{\"0\": \"bad\", \"1\": \"ok\", \"2\": \"good\"}", "tie_word_embeddings", "true", NULL))) {
        CHECK(c.num_labels == 3, "id2label's 3 labels");
        ModelTensorSpec *t;
        int n = model_tensor_table(&c, &t);
        CHECK(!strcmp(t[n - 1].name, "score.weight") && t[n - 1].shape[0] == 3 && t[n - 1].shape[1] == 64,
              "the table ends in score.weight [3, 64]");
        int lm = 0;
        for (int i = 0; i < n; i++) lm += !strcmp(t[i].name, "lm_head.weight");
        CHECK(!lm && n == model_tensor_count(&c), "no lm_head; the count agrees");
        CHECK(model_param_count(&c) == 256 * 64 + 3 * 64 + (model_param_count(&c) - 256 * 64 - 3 * 64),
              "parameters count the head");
        free(t);
        int fd = mkstemp(path);
        if (fd >= 0) close(fd);
        CHECK(model_config_write(&c, path, err, sizeof err) == 0, "write: %s", err);
        CHECK(model_config_load(&back, path, err, sizeof err) == 0, "read back: %s", err);
        CHECK(!model_config_difference(&c, &back), "round trip (%s)", model_config_difference(&c, &back));
        remove(path);
    }
    if (!accept(&c, json_with("architectures", "[\"LlamaForSequenceClassification\"]", "num_labels", "1", NULL)))
        CHECK(c.num_labels == 1 && !strcmp(model_head_tensor(&c), "score.weight"), "num_labels 1");
    if (!accept(&c, json_with("architectures", "[\"LlamaForRewardModelWithGating\"]", NULL)))
        CHECK(c.head == HEAD_REGRESSION && c.num_labels == 19 && !strcmp(model_head_tensor(&c), "regression_layer.weight"),
              "ArmoRM: 19 objectives by default, regression_layer");
    if (!accept(&c, json_with("architectures", "[\"LlamaForRewardModelWithGating\"]", "num_objectives", "5", NULL)))
        CHECK(c.num_labels == 5 && !strcmp(model_config_architecture(&c), "LlamaForRewardModelWithGating"), "num_objectives 5");
    if (!accept(&c, json_with("model_type", "\"qwen2\"", "num_key_value_heads", "2", "architectures", "[\"Qwen2ForSequenceClassification\"]", NULL)))
        CHECK(c.head == HEAD_SCORE && !strcmp(model_config_architecture(&c), "Qwen2ForSequenceClassification"), "qwen2");
    if (!accept(&c, json_with("architectures", "[\"LlamaForCausalLM\"]", NULL)))
        CHECK(c.head == HEAD_LM && c.num_labels == 0 && !model_head_tensor(&c), "a causal LM has no reward head");
}

static void test_type_defaults(void) {
    ModelConfig c;
    if (!accept(&c, json_with("model_type", "\"mistral\"", "num_attention_heads", "8", NULL))) {
        CHECK(c.num_key_value_heads == 8 && c.sliding_window == 4096, "MistralConfig: kv 8, sliding_window 4096");
        CHECK(c.max_position_embeddings == 131072 && c.bos_token_id == 1 && c.eos_token_ids[0] == 2,
              "MistralConfig: 4096 x 32 positions, bos 1, eos 2");
    }
    if (!accept(&c, json_with("model_type", "\"mistral\"", "num_attention_heads", "8", "sliding_window", "null", NULL)))
        CHECK(c.sliding_window == 0, "mistral sliding_window null: none");
    if (!accept(&c, json_with("model_type", "\"qwen2\"", "num_attention_heads", "32", NULL))) {
        CHECK(c.num_key_value_heads == 32 && c.head_dim == 2, "Qwen2Config: kv 32");
        CHECK(c.qkv_bias && !c.o_bias, "qwen2 q/k/v biases");
        CHECK(c.bos_token_id == -1 && c.n_eos == 0, "Qwen2Config: no bos, no eos");
        CHECK(c.max_position_embeddings == 32768 && c.max_window_layers == 28 && c.sliding_window == 0,
              "Qwen2Config: 32768 positions, max_window_layers 28, no window");
    }
    if (!accept(&c, json_with("model_type", "\"qwen2\"", "num_attention_heads", "32", "use_sliding_window", "true",
                              NULL)))
        CHECK(c.sliding_window == 0, "use_sliding_window with 28 full layers of 2: nothing slides");
    if (!accept(&c, json_with("model_type", "\"qwen2\"", "num_key_value_heads", "4", "use_sliding_window", "true",
                              "max_window_layers", "1", NULL)))
        CHECK(c.sliding_window == 4096 && c.max_window_layers == 1, "default window 4096 from layer 1");
    if (!accept(&c, json_with("model_type", "\"qwen2\"", "num_key_value_heads", "4", "use_sliding_window", "true",
                              "max_window_layers", "0", "sliding_window", "null", NULL)))
        CHECK(c.sliding_window == 0, "use_sliding_window with window null: none");
    if (!accept(&c, json_with("model_type", "\"qwen2\"", "num_key_value_heads", "4", "max_window_layers", "0",
                              "sliding_window", "16", NULL)))
        CHECK(c.sliding_window == 0, "window without use_sliding_window: none");
    if (!accept(&c, json_with("model_type", "\"qwen3\"", "num_key_value_heads", "2", NULL)))
        CHECK(c.head_dim == 128 && c.qk_norm && !c.qkv_bias, "Qwen3Config: head_dim 128 whatever H / NH");
    if (!accept(&c, json_with("model_type", "\"qwen3\"", "num_key_value_heads", "2", "attention_bias", "true",
                              "head_dim", "null", NULL))) {
        CHECK(c.qkv_bias && c.o_bias && c.head_dim == 128, "qwen3 attention_bias: q/k/v/o biases");
        ModelTensorSpec *t;
        int n = model_tensor_table(&c, &t);
        check_layer_order(t, 1, 0, 1, 1, 1, 0);
        check_table_invariants(&c, t, n, "qwen3 with biases");
        free(t);
    }
    if (!accept(&c, json_with("model_type", "\"qwen2\"", "num_key_value_heads", "2", "attention_bias", "false", NULL)))
        CHECK(c.qkv_bias, "qwen2 ignores attention_bias, as transformers does");
}

static void test_forms(void) {
    ModelConfig c;
    if (!accept(&c, json_with("eos_token_id", "null", "bos_token_id", "null", NULL)))
        CHECK(c.n_eos == 0 && c.bos_token_id == -1, "eos null, bos null: none");
    if (!accept(&c, json_with("eos_token_id", "[]", NULL))) CHECK(c.n_eos == 0, "eos []: none");
    if (!accept(&c, json_with("eos_token_id", "7", NULL))) CHECK(c.n_eos == 1 && c.eos_token_ids[0] == 7, "eos 7");
    if (!accept(&c, json_with("eos_token_id", "[0, 1, 2, 3, 4, 5, 6, 255]", NULL)))
        CHECK(c.n_eos == 8 && c.eos_token_ids[7] == 255, "eight eos ids");
    if (!accept(&c, json_with("pad_token_id", "-1", NULL))) CHECK(c.pad_token_id == -1, "pad -1: none");
    if (!accept(&c, json_with("pad_token_id", "255", NULL))) CHECK(c.pad_token_id == 255, "pad 255");
    if (!accept(&c, json_with("hidden_size", "64.0", "rope_theta", "1000000", NULL)))
        CHECK(c.hidden_size == 64 && c.rope.theta == 1e6, "64.0 is an integer; integer theta");
    if (!accept(&c, json_with("model_type", "-", "architectures", "[\"Qwen2ForCausalLM\"]", "num_key_value_heads", "4",
                              NULL)))
        CHECK(c.type == MODEL_QWEN2, "type from architectures alone");
    if (!accept(&c, json_with("hidden_act", "\"swish\"", NULL))) CHECK(c.hidden_size == 64, "swish = silu");
    if (!accept(&c, json_with("head_dim", "32", NULL)))
        CHECK(c.head_dim == 32, "explicit head_dim (heads x head_dim = 128 != hidden 64)");
    if (!accept(&c, json_with("num_key_value_heads", "null", NULL))) CHECK(c.num_key_value_heads == 4, "kv null");
    if (!accept(&c, json_with("rope_scaling", "{\"rope_type\": \"default\"}", "rope_theta", "5e5", NULL)))
        CHECK(c.rope.type == ROPE_DEFAULT && c.rope.theta == 5e5, "explicit default rope");
    if (!accept(&c, json_with("rope_scaling", "{\"rope_type\": \"linear\", \"type\": \"linear\", \"factor\": 2}",
                              NULL)))
        CHECK(c.rope.type == ROPE_LINEAR && c.rope.factor == 2, "rope_type and type agree");
    /* v4 and v5 keys together, agreeing */
    const char *l3 = "\"factor\": 8.0, \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, "
                     "\"original_max_position_embeddings\": 8192";
    char v4[512], v5[512];
    snprintf(v4, sizeof v4, "{\"rope_type\": \"llama3\", %s}", l3);
    snprintf(v5, sizeof v5, "{\"rope_type\": \"llama3\", \"rope_theta\": 500000.0, %s}", l3);
    if (!accept(&c, json_with("rope_scaling", v4, "rope_parameters", v5, "rope_theta", "500000", NULL)))
        CHECK(c.rope.type == ROPE_LLAMA3 && c.rope.theta == 5e5 && c.rope.factor == 8, "v4 and v5 agree");
    if (!accept(&c, json_with("rope_parameters", "{\"rope_theta\": 250000.0}", NULL)))
        CHECK(c.rope.type == ROPE_DEFAULT && c.rope.theta == 2.5e5, "v5 without rope_type: default");
    if (!accept(&c, json_with("attention_dropout", "0.1", "pretraining_tp", "2", "use_cache", "false",
                              "initializer_range", "0.5", "some_future_key", "{\"a\": [1]}", NULL)))
        CHECK(c.hidden_size == 64, "ignored and unknown keys");
}

static void test_refusals(void) {
    /* RoPE */
    refuse(json_with("rope_scaling", "{\"rope_type\": \"yarn\", \"factor\": 4.0}", NULL), "rope_scaling.rope_type",
           "\"yarn\" is not supported");
    refuse(json_with("rope_scaling", "{\"type\": \"dynamic\", \"factor\": 2.0}", NULL), "rope_scaling.rope_type",
           "\"dynamic\"");
    refuse(json_with("rope_parameters", "{\"rope_type\": \"longrope\", \"rope_theta\": 1e4}", NULL),
           "rope_parameters.rope_type", "longrope");
    refuse(json_with("rope_scaling", "{\"factor\": 2.0}", NULL), "missing field \"rope_scaling.rope_type\"", NULL);
    refuse(json_with("rope_scaling", "{\"rope_type\": \"linear\", \"type\": \"llama3\"}", NULL),
           "rope_scaling.rope_type", "disagree");
    refuse(json_with("rope_scaling", "{\"rope_type\": \"linear\"}", NULL), "rope_scaling.factor", "number > 0");
    refuse(json_with("rope_scaling", "{\"rope_type\": \"linear\", \"factor\": 0}", NULL), "rope_scaling.factor = 0",
           NULL);
    refuse(json_with("rope_scaling", "{\"rope_type\": \"llama3\", \"factor\": 8, \"high_freq_factor\": 4, "
                                     "\"original_max_position_embeddings\": 8192}", NULL),
           "rope_scaling.low_freq_factor", NULL);
    refuse(json_with("rope_scaling", "{\"rope_type\": \"llama3\", \"factor\": 8, \"low_freq_factor\": 4, "
                                     "\"high_freq_factor\": 4, \"original_max_position_embeddings\": 8192}", NULL),
           "rope_scaling.high_freq_factor", "low_freq_factor");
    refuse(json_with("rope_scaling", "{\"rope_type\": \"llama3\", \"factor\": 8, \"low_freq_factor\": 1, "
                                     "\"high_freq_factor\": 4, \"original_max_position_embeddings\": 0.5}", NULL),
           "rope_scaling.original_max_position_embeddings", NULL);
    refuse(json_with("rope_scaling", "\"linear\"", NULL), "rope_scaling", "object");
    refuse(json_with("rope_scaling", "{\"rope_type\": \"linear\", \"factor\": 2}", "rope_parameters",
                     "{\"rope_type\": \"linear\", \"factor\": 4}", NULL),
           "rope_parameters.factor = 4 and rope_scaling.factor = 2", "disagree");
    refuse(json_with("rope_scaling", "{\"rope_type\": \"linear\", \"factor\": 2}", "rope_parameters",
                     "{\"rope_type\": \"default\"}", NULL),
           "rope_parameters.rope_type = \"default\" and rope_scaling.rope_type = \"linear\"", "disagree");
    refuse(json_with("rope_theta", "10000", "rope_parameters", "{\"rope_theta\": 500000}", NULL),
           "rope_parameters.rope_theta", "disagree");
    refuse(json_with("rope_parameters", "{\"full_attention\": {\"rope_type\": \"default\"}}", NULL),
           "rope_parameters.full_attention", "per-layer");
    refuse(json_with("rope_theta", "\"10000\"", NULL), "rope_theta = \"10000\" is not a number", NULL);
    refuse(json_with("rope_theta", "-1", NULL), "rope_theta = -1", "> 0");
    /* cJSON reads 1e400 as inf and prints it as null: the message says what the file holds */
    refuse(json_with("rope_theta", "1e400", NULL), "rope_theta = a number that overflows a double (expected a number > 0)",
           NULL);
    refuse(json_with("num_hidden_layers", "-1e400", NULL), "num_hidden_layers = a number that overflows a double", NULL);
    refuse(json_with("tie_word_embeddings", "1e400", NULL), "tie_word_embeddings = a number that overflows a double "
           "(expected true or false)", NULL);
    refuse(json_with("partial_rotary_factor", "0.5", NULL), "partial_rotary_factor", "expected 1");
    /* activation, norm, flags */
    refuse(json_with("hidden_act", "\"gelu\"", NULL), "hidden_act = \"gelu\"", "silu");
    refuse(json_with("hidden_act", "1", NULL), "hidden_act", "not a string");
    refuse(json_with("hidden_act", "\"gelu_pytorch_tanh\"", NULL), "hidden_act = \"gelu_pytorch_tanh\"", NULL);
    refuse(json_with("rms_norm_eps", "0", NULL), "rms_norm_eps = 0", "> 0");
    refuse(json_with("rms_norm_eps", "-1e-6", NULL), "rms_norm_eps", NULL);
    refuse(json_with("tie_word_embeddings", "\"yes\"", NULL), "tie_word_embeddings", "true or false");
    refuse(json_with("tie_word_embeddings", "1", NULL), "tie_word_embeddings", "true or false");
    refuse(json_with("model_type", "\"qwen2\"", "num_key_value_heads", "4", "mlp_bias", "true", NULL), "mlp_bias",
           "qwen2");
    refuse(json_with("model_type", "\"mistral\"", "num_key_value_heads", "4", "attention_bias", "true", NULL),
           "attention_bias", "mistral");
    /* sizes */
    refuse(json_with("num_key_value_heads", "3", NULL),
           "num_key_value_heads = 3 does not divide num_attention_heads = 4", NULL);
    refuse(json_with("vocab_size", "-", NULL), "missing field \"vocab_size\"", "positive integer");
    refuse(json_with("num_hidden_layers", "-", NULL), "missing field \"num_hidden_layers\"", NULL);
    refuse(json_with("hidden_size", "null", NULL), "null field \"hidden_size\"", NULL);
    refuse(json_with("hidden_size", "\"64\"", NULL), "hidden_size = \"64\" is not a number", "positive integer");
    refuse(json_with("intermediate_size", "-5", NULL), "intermediate_size = -5", "positive integer");
    refuse(json_with("num_hidden_layers", "0", NULL), "num_hidden_layers = 0", NULL);
    refuse(json_with("num_hidden_layers", "5000", NULL), "num_hidden_layers = 5000", "at most 4096");
    refuse(json_with("hidden_size", "64.5", NULL), "hidden_size = 64.5", NULL);
    refuse(json_with("vocab_size", "1e12", NULL), "vocab_size", "at most 16777216");
    refuse(json_with("num_attention_heads", "[4]", NULL), "num_attention_heads = [4] is not a number", NULL);
    refuse(json_with("max_position_embeddings", "0", NULL), "max_position_embeddings = 0", NULL);
    refuse(json_with("hidden_size", "66", NULL), "hidden_size = 66 is not divisible by num_attention_heads = 4",
           "head_dim");
    refuse(json_with("head_dim", "15", NULL), "head_dim = 15", "even");
    refuse(json_with("hidden_size", "8", "num_attention_heads", "8", NULL), "head_dim = 1", "even");
    /* tokens */
    refuse(json_with("eos_token_id", "[1, 256]", NULL), "eos_token_id[1] = 256", "0..255");
    refuse(json_with("eos_token_id", "-2", NULL), "eos_token_id = -2", NULL);
    refuse(json_with("eos_token_id", "\"</s>\"", NULL), "eos_token_id = \"</s>\"", "token id");
    refuse(json_with("eos_token_id", "[1, null]", NULL), "eos_token_id[1] = null", NULL);
    refuse(json_with("eos_token_id", "[1, 2, 3, 4, 5, 6, 7, 8, 9]", NULL), "eos_token_id has 9 entries", "at most 8");
    refuse(json_with("bos_token_id", "300", NULL), "bos_token_id = 300", NULL);
    refuse(json_with("bos_token_id", "1.5", NULL), "bos_token_id = 1.5", NULL);
    refuse(json_with("pad_token_id", "256", NULL), "pad_token_id = 256", NULL);
    refuse(json_with("vocab_size", "2", NULL), "eos_token_id (absent: llama default 2)", NULL);
    /* type */
    refuse(json_with("model_type", "\"gemma\"", NULL), "model_type = \"gemma\" is not supported", "qwen3");
    refuse(json_with("model_type", "3", NULL), "model_type = 3 is not a string", NULL);
    refuse(json_with("model_type", "-", NULL), "missing field \"model_type\"", NULL);
    refuse(json_with("architectures", "[\"MistralForCausalLM\"]", NULL), "architectures[0] = \"MistralForCausalLM\"",
           "model_type = \"llama\"");
    refuse(json_with("architectures", "[\"LlamaForTokenClassification\"]", NULL), "architectures[0]",
           "not supported");
    refuse(json_with("architectures", "[\"Qwen2ForSequenceClassification\"]", NULL), "does not match",
           "model_type = \"llama\"");
    refuse(json_with("architectures", "[\"LlamaForSequenceClassification\"]", "num_labels", "2", "id2label",
                     "{\"0\": \"a\"}", NULL), "num_labels = 2 but id2label has 1", NULL);
    refuse(json_with("architectures", "[\"LlamaForSequenceClassification\"]", "id2label", "[]", NULL), "id2label", NULL);
    refuse(json_with("architectures", "[\"LlamaForSequenceClassification\"]", "num_labels", "0", NULL), "num_labels", NULL);
    refuse(json_with("architectures", "\"LlamaForCausalLM\"", NULL), "architectures is not an array", NULL);
    /* dtype, quantisation, sliding window */
    refuse(json_with("torch_dtype", "\"float16\"", "dtype", "\"bfloat16\"", NULL), "torch_dtype", "dtype");
    refuse(json_with("torch_dtype", "16", NULL), "torch_dtype = 16 is not a string", NULL);
    refuse(json_with("torch_dtype", "\"a_very_long_dtype_name\"", NULL), "dtype", "too long");
    refuse(json_with("quantization_config", "{\"quant_method\": \"gptq\"}", NULL), "quantization_config", NULL);
    refuse(json_with("model_type", "\"mistral\"", "num_key_value_heads", "4", "sliding_window", "0", NULL),
           "sliding_window = 0", NULL);
    refuse(json_with("model_type", "\"qwen2\"", "num_key_value_heads", "4", "layer_types", "[\"full_attention\"]",
                     NULL),
           "layer_types", "2 strings");
    refuse(json_with("model_type", "\"qwen2\"", "num_key_value_heads", "4", "layer_types",
                     "[\"full_attention\", \"chunked_attention\"]", NULL),
           "layer_types[1]", NULL);
    refuse(json_with("model_type", "\"qwen2\"", "num_key_value_heads", "4", "use_sliding_window", "\"no\"", NULL),
           "use_sliding_window", "true or false");
    /* text */
    refuse("{\"model_type\": \"llama\", \"vocab_size\": 256,\n \"hidden_size\": }", "line 2: invalid JSON", NULL);
    refuse("{\"model_type\": \"llama\"} x", "content after the JSON value", NULL);
    refuse("", "invalid JSON", NULL);
    refuse("[1, 2]", "top level is not an object", NULL);
    refuse("{\"model_type\": \"llama\", \"vocab_size\": 256, \"vocab_size\": 512}", "duplicate key \"vocab_size\"", NULL);
    refuse(json_with("rope_scaling", "{\"rope_type\": \"linear\", \"factor\": 2, \"factor\": 3}", NULL),
           "duplicate key \"factor\"", NULL);
}

/* A tiny error buffer truncates the message and never overflows (ASan). */
static void test_small_err_buffer(void) {
    ModelConfig c;
    char err[8];
    memset(err, 'x', sizeof err);
    CHECK(parse(&c, json_with("hidden_act", "\"gelu\"", NULL), err, sizeof err) == -1 && strlen(err) == 7,
          "message truncated to the buffer");
    CHECK(parse(&c, json_with("hidden_act", "\"gelu\"", NULL), NULL, 0) == -1, "no error buffer at all");
}

/* ---- load, write, round trip ---------------------------------------------------------- */

static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}


static void round_trip(const ModelConfig *c, const char *dir, const char *what) {
    char err[512];
    ModelConfig back;
    int rc = model_config_write(c, dir, err, sizeof err);
    CHECK(rc == 0, "%s: write into %s: %s", what, dir, err);
    if (rc) return;
    CHECK(count_entries(dir) == 1, "%s: only config.json in the folder (no temp file left)", what);
    rc = model_config_load(&back, dir, err, sizeof err);
    CHECK(rc == 0, "%s: read back: %s", what, err);
    if (rc) return;
    const char *diff = model_config_difference(c, &back);
    CHECK(diff == NULL, "%s: read back differs in %s", what, diff);
}

/* The written file as transformers would see it: checked with cJSON. */
static void check_written_llama31(const char *dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL, "open %s", path);
    if (!f) return;
    static char text[1 << 14];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    cJSON *j = cJSON_Parse(text);
    CHECK(j != NULL, "written config is JSON");
    if (!j) return;
    const cJSON *arch = cJSON_GetObjectItem(j, "architectures"), *rs = cJSON_GetObjectItem(j, "rope_scaling");
    CHECK(cJSON_IsArray(arch) && !strcmp(arch->child->valuestring, "LlamaForCausalLM"), "architectures");
    CHECK(!strcmp(cJSON_GetObjectItem(j, "model_type")->valuestring, "llama"), "model_type");
    CHECK(!strcmp(cJSON_GetObjectItem(j, "torch_dtype")->valuestring, "bfloat16"), "torch_dtype as given");
    CHECK(cJSON_IsString(cJSON_GetObjectItem(j, "transformers_version")), "transformers_version");
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(j, "eos_token_id")) == 3, "eos list kept as a list");
    CHECK(rs && !strcmp(cJSON_GetObjectItem(rs, "rope_type")->valuestring, "llama3"), "rope_scaling.rope_type");
    CHECK(strstr(text, "\"rope_theta\": 500000.0") && strstr(text, "\"factor\": 8.0") &&
              strstr(text, "\"rms_norm_eps\": 1e-05"),
          "floats written as floats, shortest form:\n%s", text);
    struct stat st;
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0644, "mode 0644");
    cJSON_Delete(j);
}

static void round_trip_text(const char *text, const char *dir) {
    char copy[4096];
    ModelConfig c;
    snprintf(copy, sizeof copy, "%s", text); /* json_with reuses its buffer */
    if (!accept(&c, copy)) round_trip(&c, dir, copy);
}

static void test_round_trips(void) {
    char dir[] = "/tmp/ppa_test_config_XXXXXX", err[512], path[600];
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    const char *files[] = {"llama31_8b.json",   "qwen2_0_5b.json",        "mistral_7b_v01.json",
                           "qwen3_0_6b.json",   "llama32_1b_v5.json",     "tiny_llama_minimal.json",
                           "tiny_llama_biases.json", "tiny_qwen2_sliding.json"};
    ModelConfig c;
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        if (!load_fixture(&c, files[i])) {
            round_trip(&c, dir, files[i]);
            if (i == 0) check_written_llama31(dir);
        }
    /* synthetic ones: every type and form the writer has a branch for */
    round_trip_text(json_with("eos_token_id", "null", "bos_token_id", "null", "pad_token_id", "3", NULL), dir);
    round_trip_text(json_with("model_type", "\"mistral\"", "num_key_value_heads", "2", "sliding_window", "null", NULL),
                    dir);
    round_trip_text(json_with("model_type", "\"qwen3\"", "num_key_value_heads", "2", "attention_bias", "true",
                              "use_sliding_window", "true", "max_window_layers", "1", "sliding_window", "128", NULL),
                    dir);
    round_trip_text(json_with("torch_dtype", "\"float\\\"32\"", "rms_norm_eps", "1.2345678901234567e-7", "rope_theta",
                              "123456.78901234567", "rope_scaling", "{\"rope_type\": \"linear\", \"factor\": 0.3}",
                              NULL),
                    dir);
    /* hand-built configs that config.json cannot express, or that break a rule, are not written */
    snprintf(path, sizeof path, "%s/config.json", dir);
    unlink(path);
    if (!load_fixture(&c, "tiny_llama_minimal.json")) {
        ModelConfig bad = c;
        bad.qkv_bias = 1; /* llama: attention_bias covers q, k, v and o together */
        CHECK(model_config_write(&bad, dir, err, sizeof err) == -1 && strstr(err, "not written: qkv_bias"),
              "llama q/k/v bias without o bias refused: %s", err);
        bad = c, bad.type = MODEL_QWEN3; /* qwen3 without its q/k norms */
        CHECK(model_config_write(&bad, dir, err, sizeof err) == -1 && strstr(err, "head_dim") == NULL &&
                  strstr(err, "not written: qk_norm"),
              "qwen3 without qk_norm refused: %s", err);
        bad = c, bad.num_key_value_heads = 3;
        CHECK(model_config_write(&bad, dir, err, sizeof err) == -1 &&
                  strstr(err, "(not written): num_key_value_heads = 3 does not divide"),
              "invalid sizes refused: %s", err);
        bad = c, bad.sliding_window = 100; /* llama has no sliding window */
        CHECK(model_config_write(&bad, dir, err, sizeof err) == -1 && strstr(err, "sliding_window"),
              "llama with a window refused: %s", err);
        bad = c, bad.type = (ModelType)9;
        CHECK(model_config_write(&bad, dir, err, sizeof err) == -1 && strstr(err, "model type 9"),
              "invalid type refused: %s", err);
        CHECK(count_entries(dir) == 0, "nothing written by refused writes");
    }
    /* load from a file path and from a folder give the same config */
    round_trip(&c, dir, "minimal again");
    ModelConfig a, b;
    snprintf(path, sizeof path, "%s/config.json", dir);
    CHECK(model_config_load(&a, path, err, sizeof err) == 0 && model_config_load(&b, dir, err, sizeof err) == 0 &&
              !model_config_difference(&a, &b),
          "file path and folder path load the same");
    /* write to an explicit file name */
    snprintf(path, sizeof path, "%s/other.json", dir);
    CHECK(model_config_write(&a, path, err, sizeof err) == 0 && model_config_load(&b, path, err, sizeof err) == 0 &&
              !model_config_difference(&a, &b),
          "write to a file name");
    unlink(path);
    snprintf(path, sizeof path, "%s/config.json", dir);
    unlink(path);
    /* errors of load and write name the file */
    CHECK(model_config_load(&a, dir, err, sizeof err) == -1 && strstr(err, "config.json: cannot open"),
          "folder without config.json: %s", err);
    snprintf(path, sizeof path, "%s/no/such/folder/config.json", dir);
    CHECK(model_config_write(&a, path, err, sizeof err) == -1 && strstr(err, "no/such/folder/config.json"),
          "write into a missing folder: %s", err);
    CHECK(rmdir(dir) == 0, "temp folder empty at the end");
}

static void test_describe(void) {
    ModelConfig c;
    if (load_fixture(&c, "llama31_8b.json")) return;
    char buf[2048], small[16];
    int n = model_config_describe(&c, buf, sizeof buf);
    CHECK(n == (int)strlen(buf) && n < (int)sizeof buf, "describe length %d", n);
    const char *want[] = {"llama (LlamaForCausalLM)", "32 layers", "hidden 4096", "32 heads / 8 kv heads",
                          "head_dim 128", "intermediate 14336", "vocab 128256", "RoPE llama3", "theta 500000",
                          "factor 8", "untied", "biases: none", "eos [128001, 128008, 128009]",
                          "8,030,261,248 parameters in 291 tensors"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        CHECK(strstr(buf, want[i]) != NULL, "describe mentions \"%s\": %s", want[i], buf);
    CHECK(model_config_describe(&c, small, sizeof small) == n && strlen(small) == sizeof small - 1,
          "truncated describe returns the full length");
    if (!load_fixture(&c, "qwen2_0_5b.json")) {
        model_config_describe(&c, buf, sizeof buf);
        CHECK(strstr(buf, "tied to embed_tokens") && strstr(buf, "biases: q/k/v") && strstr(buf, "494,032,768"),
              "qwen2 summary: %s", buf);
    }
}

int main(int argc, char **argv) {
    if (argc > 1) fixture_dir = argv[1];
    test_default_and_linear_rope();
    test_llama3_boundaries();
    test_llama31_8b();
    test_qwen2_0_5b();
    test_mistral_7b();
    test_qwen3_0_6b();
    test_v5_rope_parameters();
    test_small_fixtures();
    test_type_defaults();
    test_reward_heads();
    test_forms();
    test_refusals();
    test_small_err_buffer();
    test_round_trips();
    test_describe();
    return check_report("test_config");
}
