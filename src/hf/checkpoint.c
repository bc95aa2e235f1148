/* checkpoint.c: tensor-set checks against config.json, random init, and
 * model folders written through a temporary folder renamed into place. */
#include "hf/checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/cleanup.h"
#include "core/common.h"
#include "hf/carry.h"
#include "io/file.h"
#include "core/rng.h"
#include "tokenizer/tokenizer.h"

#define SHARD_BYTES 5000000000ULL /* save_pretrained's default max_shard_size */

static void shape_str(int ndim, const int64_t *shape, char *buf, size_t n) {
    int k = snprintf(buf, n, "[");
    for (int d = 0; d < ndim && k < (int)n; d++) k += snprintf(buf + k, n - (size_t)k, d ? ", %lld" : "%lld", (long long)shape[d]);
    if (k < (int)n) snprintf(buf + k, n - (size_t)k, "]");
}

/* appends one line to err while there is room; counts every problem */
static void problem(char *err, size_t errlen, int *count, const char *fmt, const char *a, const char *b, const char *c) {
    size_t used = strlen(err);
    if (used + 1 < errlen) snprintf(err + used, errlen - used, fmt, a, b, c);
    (*count)++;
}

int checkpoint_ignored(const ModelConfig *c, const char *name) {
    return c->head == HEAD_REGRESSION && (!strncmp(name, "gating.", 7) || !strcmp(name, "reward_transform_matrix"));
}

int checkpoint_check(const ModelConfig *c, const StSet *st, char *err, size_t errlen) {
    ModelTensorSpec *specs;
    int n = model_tensor_table(c, &specs), count = 0;
    char *used = xcalloc((size_t)st->n_tensors + 1, 1), want[96], got[96];
    err[0] = 0;
    for (int i = 0; i < n; i++) {
        const StTensor *t = st_find(st, specs[i].name);
        shape_str(specs[i].ndim, specs[i].shape, want, sizeof want);
        if (!t) {
            problem(err, errlen, &count, "missing tensor %s %s%s\n", specs[i].name, want, "");
            continue;
        }
        used[t - st->tensors] = 1;
        int same = t->ndim == specs[i].ndim;
        for (int d = 0; same && d < t->ndim; d++) same = t->shape[d] == specs[i].shape[d];
        shape_str(t->ndim, t->shape, got, sizeof got);
        if (!same) problem(err, errlen, &count, "tensor %s has shape %s but config.json needs %s\n", specs[i].name, got, want);
    }
    for (int i = 0; i < st->n_tensors; i++)
        if (!used[i] && !checkpoint_ignored(c, st->tensors[i].name))
            problem(err, errlen, &count, "unexpected tensor %s (%s%s)\n", st->tensors[i].name,
                    !strcmp(st->tensors[i].name, "lm_head.weight") ? "tie_word_embeddings is true"
                                                                   : "a model with this config.json has no such tensor",
                    "");
    free(used);
    free(specs);
    size_t len = strlen(err);
    if (len && err[len - 1] == '\n') err[len - 1] = 0;
    return count;
}

void checkpoint_init(const ModelTensorSpec *specs, int n, uint64_t seed, double std, int perturb_all, float **data) {
    for (int i = 0; i < n; i++) {
        const ModelTensorSpec *s = &specs[i];
        float *w = data[i] = xmalloc(sizeof(float) * (size_t)(s->numel ? s->numel : 1));
        PpaRng rng; /* one stream per tensor, named by the tensor: order-independent */
        rng_seed(&rng, seed ^ rng_hash_string(s->name));
        double base = s->kind == MODEL_TENSOR_NORM ? 1.0 : 0.0;
        int random = s->kind == MODEL_TENSOR_MATRIX || perturb_all;
        for (int64_t k = 0; k < s->numel; k++) w[k] = (float)(base + (random ? std * rng_normal(&rng) : 0.0));
    }
}

static int write_text(const char *path, const char *text, char *err, size_t errlen) {
    FILE *f = file_create(path, 0, err, errlen);
    if (!f) return -1;
    if (fputs(text, f) == EOF || fflush(f) || fsync(fileno(f))) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        if (f) fclose(f);
        return -1;
    }
    if (fclose(f)) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

static void json_token(char *buf, size_t n, const Tokenizer *tok, int id) {
    const char *s = id >= 0 ? tokenizer_token(tok, id) : NULL;
    if (s) snprintf(buf, n, "\"%s\"", s); /* special tokens are plain ASCII markers */
    else snprintf(buf, n, "null");
}

/* tokenizer_config.json when the input has none: the special tokens of c, read from the tokenizer at src */
static int write_tokenizer_config(const char *tmp, const ModelConfig *c, const char *src, char *err, size_t errlen) {
    Tokenizer *tok = tokenizer_load(src, err, errlen);
    if (!tok) return -1;
    char bos[256], eos[256], json[1024], path[4400];
    json_token(bos, sizeof bos, tok, c->bos_token_id);
    json_token(eos, sizeof eos, tok, c->n_eos ? c->eos_token_ids[0] : -1);
    snprintf(json, sizeof json,
             "{\n  \"add_bos_token\": %s,\n  \"add_eos_token\": false,\n  \"bos_token\": %s,\n"
             "  \"clean_up_tokenization_spaces\": false,\n  \"eos_token\": %s,\n  \"model_max_length\": %d,\n"
             "  \"tokenizer_class\": \"PreTrainedTokenizerFast\"\n}\n",
             tokenizer_bos_id(tok) >= 0 ? "true" : "false", bos, eos, c->max_position_embeddings);
    tokenizer_free(tok);
    snprintf(path, sizeof path, "%s/tokenizer_config.json", tmp);
    return write_text(path, json, err, errlen);
}

int checkpoint_tokenizer_files(const char *tmp, const ModelConfig *c, const char *tokenizer_path, char *err,
                               size_t errlen) {
    struct stat sb;
    int is_dir = !stat(tokenizer_path, &sb) && S_ISDIR(sb.st_mode), have_tok = 0, have_cfg = 0, rc = 0;
    char *from = carry_folder_of(tokenizer_path);
    for (int i = 0; !rc && CARRY_TOKENIZER_FILES[i]; i++) {
        const char *name = CARRY_TOKENIZER_FILES[i];
        int got;
        if (!strcmp(name, "tokenizer.json") && !is_dir) { /* a tokenizer.json given by its path, under any name */
            char *dst = ppa_path_join(tmp, name);
            got = carry_copy(tokenizer_path, dst, err, errlen) ? -1 : 1;
            free(dst);
        } else
            got = carry_file(from, tmp, name, err, errlen);
        if (got < 0) rc = -1;
        if (got > 0 && !strcmp(name, "tokenizer.json")) have_tok = 1;
        if (got > 0 && !strcmp(name, "tokenizer_config.json")) have_cfg = 1;
    }
    free(from);
    if (rc || have_cfg || !have_tok) return rc;
    return write_tokenizer_config(tmp, c, tokenizer_path, err, errlen);
}

static int write_generation_config(const char *tmp, const ModelConfig *c, char *err, size_t errlen) {
    char path[4400], eos[160] = "null", json[512];
    if (c->n_eos == 1) snprintf(eos, sizeof eos, "%d", c->eos_token_ids[0]);
    if (c->n_eos > 1) {
        int k = snprintf(eos, sizeof eos, "[");
        for (int i = 0; i < c->n_eos; i++) k += snprintf(eos + k, sizeof eos - (size_t)k, i ? ", %d" : "%d", c->eos_token_ids[i]);
        snprintf(eos + k, sizeof eos - (size_t)k, "]");
    }
    char bos[32] = "null", pad[32] = "null";
    if (c->bos_token_id >= 0) snprintf(bos, sizeof bos, "%d", c->bos_token_id);
    if (c->pad_token_id >= 0) snprintf(pad, sizeof pad, "%d", c->pad_token_id);
    snprintf(json, sizeof json,
             "{\n  \"bos_token_id\": %s,\n  \"eos_token_id\": %s,\n  \"pad_token_id\": %s,\n"
             "  \"transformers_version\": \"4.51.0\"\n}\n", bos, eos, pad);
    snprintf(path, sizeof path, "%s/generation_config.json", tmp);
    return write_text(path, json, err, errlen);
}

/* the input's generation_config.json (its sampling settings, its list of eos ids), or ppa's own when it has none;
 * ppa never changes the config's bos, eos or pad ids, so the input's file stays true to the written config.json */
static int generation_config(const char *tmp, const ModelConfig *c, const char *gen_dir, char *err, size_t errlen) {
    int got = gen_dir ? carry_file(gen_dir, tmp, CARRY_GENERATION_CONFIG, err, errlen) : 0;
    return got < 0 ? -1 : got ? 0 : write_generation_config(tmp, c, err, errlen);
}

/* 1 if dir exists and holds anything */
static int non_empty_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *e;
    int found = 0;
    while (!found && (e = readdir(d))) found = strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return found;
}

static void remove_tree_files(const char *dir) { /* our own temporary folder: files only; dir < 4096 */
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[4400];
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) snprintf(path, sizeof path, "%s/%s", dir, e->d_name), unlink(path);
    if (d) closedir(d);
    rmdir(dir);
}

typedef struct {
    const ModelTensorSpec *specs;
    uint64_t seed;
    double std;
    int perturb_all;
} InitFill;

/* checkpoint_init's tensor i, for st_write_sharded_fill */
static void init_fill(const void *ctx, int i, float *out) {
    const InitFill *f = ctx;
    float *w;
    checkpoint_init(&f->specs[i], 1, f->seed, f->std, f->perturb_all, &w);
    memcpy(out, w, sizeof(float) * (size_t)f->specs[i].numel);
    free(w);
}

int checkpoint_folder(const char *dir, FolderFill fill, const void *ctx, char *err, size_t errlen) {
    struct stat sb;
    if (!stat(dir, &sb) && (!S_ISDIR(sb.st_mode) || non_empty_dir(dir))) {
        snprintf(err, errlen, "%s already exists and is not an empty folder: choose another --out", dir);
        return -1;
    }
    char tmp[4096];
    if (strlen(dir) > 4000) {
        snprintf(err, errlen, "output folder name too long");
        return -1;
    }
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", dir, (long)getpid());
    if (mkdir(tmp, 0777)) {
        snprintf(err, errlen, "%s: cannot create: %s", tmp, strerror(errno));
        return -1;
    }
    cleanup_on_signal(tmp); /* an interrupted init or merge leaves no OUT.tmp.PID behind */
    int rc = fill(tmp, ctx, err, errlen);
    if (!rc) {
        rmdir(dir); /* an empty folder may stand there */
        if (rename(tmp, dir)) {
            snprintf(err, errlen, "%s: cannot rename %s into place: %s", dir, tmp, strerror(errno));
            rc = -1;
        }
    }
    if (rc) remove_tree_files(tmp);
    cleanup_forget();
    return rc ? -1 : 0;
}

typedef struct {
    const ModelConfig *c;
    const StWriteTensor *w;
    int n;
    StDtype dtype;
    StFillFn fill; /* NULL, or what makes w's NULL data */
    const void *fill_ctx;
    const char *tokenizer_path, *gen_dir;
} ModelFolder;

static int fill_model_folder(const char *tmp, const void *ctx, char *err, size_t errlen) {
    const ModelFolder *f = ctx;
    /* the carried files before the weights: an input file that cannot be carried is refused before gigabytes are
     * written (the order is invisible otherwise: the folder appears whole, under its name, at the end) */
    return model_config_write(f->c, tmp, err, errlen) || generation_config(tmp, f->c, f->gen_dir, err, errlen) ||
                   (f->tokenizer_path && checkpoint_tokenizer_files(tmp, f->c, f->tokenizer_path, err, errlen)) ||
                   (f->fill ? st_write_sharded_fill(tmp, f->w, f->n, f->dtype, SHARD_BYTES, f->fill, f->fill_ctx, err, errlen)
                            : st_write_sharded(tmp, f->w, f->n, f->dtype, SHARD_BYTES, err, errlen))
               ? -1
               : 0;
}

static int write_folder(const char *dir, const ModelConfig *c, const StWriteTensor *w, int n, StDtype dtype,
                        StFillFn fill, const void *fill_ctx, const char *tokenizer_path, const char *gen_dir, char *err,
                        size_t errlen) {
    ModelFolder f = {c, w, n, dtype, fill, fill_ctx, tokenizer_path, gen_dir};
    return checkpoint_folder(dir, fill_model_folder, &f, err, errlen);
}

int checkpoint_write_folder(const char *dir, const ModelConfig *c, const ModelTensorSpec *specs, float *const *data,
                            int n, StDtype dtype, const char *tokenizer_path, const char *gen_dir, char *err,
                            size_t errlen) {
    StWriteTensor *w = xcalloc((size_t)n + 1, sizeof *w);
    for (int i = 0; i < n; i++) w[i] = (StWriteTensor){specs[i].name, specs[i].ndim, specs[i].shape, data[i]};
    int rc = write_folder(dir, c, w, n, dtype, NULL, NULL, tokenizer_path, gen_dir, err, errlen);
    free(w);
    return rc;
}

int checkpoint_write_filled_folder(const char *dir, const ModelConfig *c, const ModelTensorSpec *specs, int n,
                                   StFillFn fill, const void *ctx, StDtype dtype, const char *tokenizer_path,
                                   const char *gen_dir, char *err, size_t errlen) {
    StWriteTensor *w = xcalloc((size_t)n + 1, sizeof *w);
    for (int i = 0; i < n; i++) w[i] = (StWriteTensor){specs[i].name, specs[i].ndim, specs[i].shape, NULL};
    int rc = write_folder(dir, c, w, n, dtype, fill, ctx, tokenizer_path, gen_dir, err, errlen);
    free(w);
    return rc;
}

int checkpoint_write_random_folder(const char *dir, const ModelConfig *c, const ModelTensorSpec *specs, int n,
                                   uint64_t seed, double std, int perturb_all, StDtype dtype, const char *tokenizer_path,
                                   const char *gen_dir, char *err, size_t errlen) {
    InitFill f = {specs, seed, std, perturb_all};
    return checkpoint_write_filled_folder(dir, c, specs, n, init_fill, &f, dtype, tokenizer_path, gen_dir, err, errlen);
}
