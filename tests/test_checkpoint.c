/* test_checkpoint.c: model folders: the documented random init, folders
 * written and reopened (F32 and BF16), the tensor-set check against
 * config.json, and refusals that must not touch existing data. */
#include <math.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "byte_tokenizer.h"
#include "check.h"
#include "hf/checkpoint.h"
#include "io/safetensors.h"
#include "optim/optim.h"
#include "train/state.h"

static const char CONFIG[] =
    "{\"model_type\": \"qwen2\", \"architectures\": [\"Qwen2ForCausalLM\"], \"vocab_size\": 300, \"hidden_size\": 32,"
    " \"intermediate_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2,"
    " \"max_position_embeddings\": 128, \"rms_norm_eps\": 1e-6, \"tie_word_embeddings\": false,"
    " \"eos_token_id\": [1, 2], \"rope_theta\": 1000000.0}";

static void write_tokenizer(const char *path) { write_byte_tokenizer(path, "{\"id\": 256, \"content\": \"<|endoftext|>\", \"special\": true}, {\"id\": 257, \"content\": \"<|im_start|>\", \"special\": true}"); }

static char tmpdir[64];

static void path(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", tmpdir, name); }

static void test_init_values(const ModelConfig *c) {
    ModelTensorSpec *specs;
    int n = model_tensor_table(c, &specs);
    float **a = calloc((size_t)n, sizeof(float *)), **b = calloc((size_t)n, sizeof(float *));
    checkpoint_init(specs, n, 7, 0.02, 0, a);
    checkpoint_init(specs + 1, n - 1, 7, 0.02, 0, b + 1); /* without the first tensor: the others must not change */
    b[0] = malloc(4);
    int same = 1;
    for (int i = 1; i < n; i++) same &= !memcmp(a[i], b[i], sizeof(float) * (size_t)specs[i].numel);
    CHECK(same, "a tensor's initial values depend only on the seed and its name");
    double s1 = 0, s2 = 0;
    long count = 0;
    for (int i = 0; i < n; i++) {
        const ModelTensorSpec *s = &specs[i];
        if (s->kind != MODEL_TENSOR_MATRIX) {
            int ok = 1;
            for (int64_t k = 0; k < s->numel; k++) ok &= a[i][k] == (s->kind == MODEL_TENSOR_NORM ? 1.0f : 0.0f);
            CHECK(ok, "%s initialised to %s", s->name, s->kind == MODEL_TENSOR_NORM ? "1" : "0");
            continue;
        }
        for (int64_t k = 0; k < s->numel; k++) s1 += a[i][k], s2 += (double)a[i][k] * a[i][k], count++;
    }
    double mean = s1 / count, sd = sqrt(s2 / count - mean * mean);
    CHECK(fabs(mean) < 4 * 0.02 / sqrt((double)count) + 1e-12, "matrix init mean %.2e ~ 0 over %ld values", mean, count);
    CHECK(fabs(sd - 0.02) < 0.02 * 0.02, "matrix init standard deviation %.5f ~ 0.02", sd);
    float **c2 = calloc((size_t)n, sizeof(float *));
    checkpoint_init(specs, n, 8, 0.02, 0, c2);
    CHECK(memcmp(a[0], c2[0], sizeof(float) * (size_t)specs[0].numel), "another seed gives other weights");
    for (int i = 0; i < n; i++) free(a[i]), free(b[i]), free(c2[i]);
    free(a), free(b), free(c2), free(specs);
}

static void test_folder(const ModelConfig *c, StDtype dtype) {
    char dir[128], tok[128], err[4096];
    path(dir, sizeof dir, dtype == ST_BF16 ? "model_bf16" : "model_f32");
    path(tok, sizeof tok, "tokenizer.json");
    ModelTensorSpec *specs;
    int n = model_tensor_table(c, &specs);
    float **w = calloc((size_t)n, sizeof(float *));
    checkpoint_init(specs, n, 1, 0.02, 0, w);
    int rc = checkpoint_write_folder(dir, c, specs, w, n, dtype, tok, NULL, err, sizeof err);
    CHECK(rc == 0, "write %s: %s", dir, rc ? err : "");
    const char *files[] = {"config.json", "model.safetensors", "generation_config.json", "tokenizer.json",
                           "tokenizer_config.json"};
    for (int i = 0; i < 5; i++) {
        char p[256];
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        CHECK(access(p, R_OK) == 0, "%s written", p);
    }
    ModelConfig back;
    CHECK(model_config_load(&back, dir, err, sizeof err) == 0 && back.num_hidden_layers == c->num_hidden_layers &&
              back.n_eos == 2,
          "config.json reads back: %s", err);
    StSet st;
    CHECK(st_open(&st, dir, err, sizeof err) == 0, "model.safetensors opens: %s", err);
    CHECK(checkpoint_check(c, &st, err, sizeof err) == 0, "the written tensors match the config: %s", err);
    int exact = 1;
    for (int i = 0; i < n; i++) {
        const StTensor *t = st_find(&st, specs[i].name);
        if (!t) continue;
        float *v = malloc(sizeof(float) * (size_t)(t->numel ? t->numel : 1));
        st_to_f32(t, v);
        for (int64_t k = 0; k < t->numel; k++)
            exact &= v[k] == (dtype == ST_BF16 ? st_bf16_to_f32(st_f32_to_bf16(w[i][k])) : w[i][k]);
        free(v);
    }
    CHECK(exact, "weights read back exactly (%s)", st_dtype_name(dtype));
    st_close(&st);

    /* nothing is overwritten: the same folder again is refused and left as it was */
    rc = checkpoint_write_folder(dir, c, specs, w, n, dtype, tok, NULL, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "already exists"), "an existing folder is refused: %s", err);
    char tmp[192];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", dir, (long)getpid());
    CHECK(access(tmp, F_OK) != 0, "no temporary folder left behind");
    for (int i = 0; i < n; i++) free(w[i]);
    free(w), free(specs);
}

/* fill for st_write_sharded_fill: tensor i of checkpoint_init's arrays */
typedef struct {
    const ModelTensorSpec *specs;
    float *const *w;
} Arrays;

static void test_fill(const void *ctx, int i, float *out) {
    const Arrays *a = ctx;
    memcpy(out, a->w[i], sizeof(float) * (size_t)a->specs[i].numel);
}

static int same_file(const char *a, const char *b) {
    FILE *f = fopen(a, "rb"), *g = fopen(b, "rb");
    int same = f && g, x, y;
    while (same && ((x = getc(f)) != EOF) | ((y = getc(g)) != EOF)) same = x == y;
    if (f) fclose(f);
    if (g) fclose(g);
    return same;
}

/* the streaming writer (ppa init) makes the bytes of checkpoint_init + checkpoint_write_folder, also when sharded */
static void test_streaming(const ModelConfig *c, StDtype dtype) {
    char a[128], b[128], fa[192], fb[192], err[4096];
    path(a, sizeof a, dtype == ST_BF16 ? "model_bf16" : "model_f32"); /* written by test_folder (seed 1, std 0.02) */
    path(b, sizeof b, dtype == ST_BF16 ? "stream_bf16" : "stream_f32");
    ModelTensorSpec *specs;
    int n = model_tensor_table(c, &specs);
    int rc = checkpoint_write_random_folder(b, c, specs, n, 1, 0.02, 0, dtype, NULL, NULL, err, sizeof err);
    CHECK(rc == 0, "streaming write %s: %s", b, rc ? err : "");
    snprintf(fa, sizeof fa, "%s/model.safetensors", a), snprintf(fb, sizeof fb, "%s/model.safetensors", b);
    CHECK(same_file(fa, fb), "%s: the streaming writer gives the same model.safetensors", st_dtype_name(dtype));
    /* sharded: shards of at most 4 KB, the same files as the sharded writer given the arrays */
    float **w = calloc((size_t)n, sizeof(float *));
    checkpoint_init(specs, n, 1, 0.02, 0, w);
    StWriteTensor *t = calloc((size_t)n, sizeof *t), *z = calloc((size_t)n, sizeof *z);
    for (int i = 0; i < n; i++) {
        t[i] = (StWriteTensor){specs[i].name, specs[i].ndim, specs[i].shape, w[i]};
        z[i] = (StWriteTensor){specs[i].name, specs[i].ndim, specs[i].shape, NULL};
    }
    char sa[160], sb[160];
    snprintf(sa, sizeof sa, "%s/sharded_a_%d", tmpdir, (int)dtype), snprintf(sb, sizeof sb, "%s/sharded_b_%d", tmpdir, (int)dtype);
    CHECK(st_write_sharded(sa, t, n, dtype, 4096, err, sizeof err) == 0, "sharded: %s", err);
    Arrays arr = {specs, w};
    int ok = st_write_sharded_fill(sb, z, n, dtype, 4096, test_fill, &arr, err, sizeof err) == 0;
    CHECK(ok, "sharded with fill: %s", err);
    int same = 1, shards = 0;
    for (int s = 1; s < 1000; s++) {
        char name[64], pa[512], pb[512];
        snprintf(name, sizeof name, "model-%05d-of-", s);
        DIR *d = opendir(sa);
        struct dirent *e;
        int found = 0;
        while (d && (e = readdir(d)))
            if (!strncmp(e->d_name, name, strlen(name))) {
                snprintf(pa, sizeof pa, "%s/%s", sa, e->d_name), snprintf(pb, sizeof pb, "%s/%s", sb, e->d_name);
                same &= same_file(pa, pb), found = 1, shards++;
            }
        if (d) closedir(d);
        if (!found) break;
    }
    char ia[256], ib[256];
    snprintf(ia, sizeof ia, "%s/model.safetensors.index.json", sa), snprintf(ib, sizeof ib, "%s/model.safetensors.index.json", sb);
    CHECK(shards > 2 && same && same_file(ia, ib), "%s: %d shards written from fill are the files written from arrays",
          st_dtype_name(dtype), shards);
    for (int i = 0; i < n; i++) free(w[i]);
    free(w), free(t), free(z), free(specs);
}

/* a checkpoint whose tensors do not fit the config */
static void test_check_problems(const ModelConfig *c) {
    char file[128], err[4096];
    path(file, sizeof file, "odd.safetensors");
    ModelTensorSpec *specs;
    int n = model_tensor_table(c, &specs);
    StWriteTensor *t = calloc((size_t)n + 1, sizeof *t);
    float *zero = calloc((size_t)c->vocab_size * c->hidden_size, sizeof(float));
    int64_t wrong[2] = {7, 3};
    int m = 0;
    for (int i = 1; i < n; i++) { /* drop the first tensor (embeddings) */
        t[m] = (StWriteTensor){specs[i].name, specs[i].ndim, specs[i].shape, zero};
        if (!strcmp(specs[i].name, "model.norm.weight")) t[m].ndim = 2, t[m].shape = wrong;
        m++;
    }
    t[m++] = (StWriteTensor){"model.layers.0.self_attn.rotary_emb.inv_freq", 2, wrong, zero};
    CHECK(st_write(file, t, m, ST_F32, err, sizeof err) == 0, "write %s: %s", file, err);
    StSet st;
    CHECK(st_open(&st, file, err, sizeof err) == 0, "open %s: %s", file, err);
    int problems = checkpoint_check(c, &st, err, sizeof err);
    CHECK(problems == 3, "three problems found (%d): %s", problems, err);
    CHECK(strstr(err, "missing tensor model.embed_tokens.weight [300, 32]") != NULL, "the missing tensor is named");
    CHECK(strstr(err, "tensor model.norm.weight has shape [7, 3] but config.json needs [32]") != NULL,
          "the wrong shape is named");
    CHECK(strstr(err, "unexpected tensor model.layers.0.self_attn.rotary_emb.inv_freq") != NULL,
          "the unexpected tensor is named");
    st_close(&st);
    free(t), free(zero), free(specs);
}

/* Adam's moments read back from a checkpoint: finite, the second never negative (state.c), whatever the state file
 * says (a forger who recomputes the checksums gets this far) */
static void test_moments(void) {
    char dir[128], file[160], err[1024];
    path(dir, sizeof dir, "moments");
    mkdir(dir, 0777);
    snprintf(file, sizeof file, "%s/optimizer.safetensors", dir);
    float m[3] = {0.5f, -0.25f, 0}, v[3] = {1, 0, 2};
    int64_t shape[1] = {3};
    for (int bad = 0; bad < 3; bad++) {
        float m2[3], v2[3];
        memcpy(m2, m, sizeof m), memcpy(v2, v, sizeof v);
        if (bad == 1) v2[1] = -1;
        if (bad == 2) m2[2] = NAN;
        StWriteTensor t[2] = {{"exp_avg", 1, shape, m2}, {"exp_avg_sq", 1, shape, v2}};
        CHECK(st_write(file, t, 2, ST_F32, err, sizeof err) == 0, "the moments are written: %s", err);
        AdamW opt;
        adamw_init(&opt, 3);
        int rc = state_read_moments(dir, &opt, err, sizeof err);
        if (!bad) CHECK(rc == 0 && opt.m[1] == -0.25f && opt.v[2] == 2, "valid moments are read back: %s", err);
        if (bad == 1) CHECK(rc && strstr(err, "exp_avg_sq[1] = -1 is not a valid moment (finite, >= 0)"), "a negative second moment is refused: %s", err);
        if (bad == 2) CHECK(rc && strstr(err, "exp_avg[2] = nan is not a valid moment (finite)"), "a NaN first moment is refused: %s", err);
        adamw_free(&opt);
    }
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ppa_ckpt_XXXXXX");
    if (!mkdtemp(tmpdir)) return 1;
    char tok[128], err[1024];
    path(tok, sizeof tok, "tokenizer.json");
    write_tokenizer(tok);
    ModelConfig c;
    CHECK(model_config_parse(&c, CONFIG, "config.json", err, sizeof err) == 0, "fixture config parses: %s", err);
    test_init_values(&c);
    test_folder(&c, ST_F32);
    test_folder(&c, ST_BF16);
    test_streaming(&c, ST_F32);
    test_streaming(&c, ST_BF16);
    test_check_problems(&c);
    test_moments();
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", tmpdir);
    return check_report("test_checkpoint");
}
