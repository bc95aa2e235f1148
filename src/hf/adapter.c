/* adapter.c: PEFT's LoRA adapter folder (adapter.h): adapter_config.json
 * read with every field ppa would have to honour checked, the tensors under
 * PEFT's names, and the folder written as PEFT writes it. */
#include "hf/adapter.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/common.h"
#include "io/atomic.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "hf/checkpoint.h"

const char *const LORA_TARGETS[LORA_N_TARGETS] = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                                  "down_proj"};

const char *const LORA_MODULES[LORA_N_TARGETS] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                                                  "self_attn.o_proj", "mlp.gate_proj",    "mlp.up_proj",
                                                  "mlp.down_proj"};

double lora_scale(const LoraSpec *s) { return s->rslora ? s->alpha / sqrt((double)s->r) : s->alpha / s->r; }

int lora_parse_targets(const char *list, unsigned *mask, char *err, size_t errlen) {
    *mask = 0;
    if (!strcmp(list, "all-linear")) {
        *mask = LORA_ALL_TARGETS;
        return 0;
    }
    const char *p = list;
    while (*p) {
        size_t n = strcspn(p, ",");
        int k = 0;
        while (k < LORA_N_TARGETS && (strlen(LORA_TARGETS[k]) != n || strncmp(p, LORA_TARGETS[k], n))) k++;
        if (k == LORA_N_TARGETS || *mask & 1u << k) {
            snprintf(err, errlen, "'%.*s' is %s: the targets are all-linear or a list of q_proj, k_proj, v_proj, "
                     "o_proj, gate_proj, up_proj, down_proj", (int)n, p, k == LORA_N_TARGETS ? "not a target" : "repeated");
            return -1;
        }
        *mask |= 1u << k;
        p += n + (p[n] == ',');
    }
    if (!*mask) {
        snprintf(err, errlen, "no target modules given");
        return -1;
    }
    return 0;
}

void lora_targets_text(unsigned mask, char *buf, size_t n) {
    size_t at = 0;
    buf[0] = 0;
    for (int k = 0; k < LORA_N_TARGETS; k++)
        if (mask & 1u << k && at < n) at += (size_t)snprintf(buf + at, n - at, "%s%s", at ? "," : "", LORA_TARGETS[k]);
}

void lora_dims(const ModelConfig *c, int k, int *out, int *in) {
    int H = c->hidden_size, QD = c->num_attention_heads * c->head_dim, KD = c->num_key_value_heads * c->head_dim;
    int I = c->intermediate_size;
    static const int OUT[LORA_N_TARGETS] = {0, 1, 1, 2, 3, 3, 2}, IN[LORA_N_TARGETS] = {2, 2, 2, 0, 2, 2, 3};
    const int size[4] = {QD, KD, H, I}; /* q k v o gate up down: [QD,H] [KD,H] [KD,H] [H,QD] [I,H] [I,H] [H,I] */
    *out = size[OUT[k]], *in = size[IN[k]];
}

size_t lora_size(const ModelConfig *c, const LoraSpec *s) {
    size_t n = 0;
    for (int k = 0; k < LORA_N_TARGETS; k++) {
        int out, in;
        lora_dims(c, k, &out, &in);
        if (s->targets & 1u << k) n += (size_t)s->r * (size_t)(in + out) * (size_t)c->num_hidden_layers;
    }
    return n;
}

void lora_merge_into(float *W, const float *A, const float *B, int out, int in, int r, double s) {
#pragma omp parallel for schedule(static)
    for (int o = 0; o < out; o++)
        for (int i = 0; i < in; i++) {
            double acc = 0.0;
            for (int j = 0; j < r; j++) acc += (double)B[(size_t)o * r + j] * A[(size_t)j * in + i];
            W[(size_t)o * in + i] = (float)((double)W[(size_t)o * in + i] + s * acc);
        }
}

void adapter_tensor_name(char *buf, size_t n, int l, int k, int b) {
    snprintf(buf, n, "base_model.model.model.layers.%d.%s.lora_%c.weight", l, LORA_MODULES[k], b ? 'B' : 'A');
}

int adapter_is_folder(const char *dir) {
    char *p = ppa_path_join(dir, "adapter_config.json");
    struct stat sb;
    int yes = !stat(p, &sb);
    free(p);
    return yes;
}

/* ---- adapter_config.json ---- */

/* a field that must be absent, null, false, empty or equal to `fine` (a string); else why ppa cannot honour it */
static int unsupported(const cJSON *j, const char *key, const char *fine, const char *why, char *err, size_t errlen) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    int ok = !v || cJSON_IsNull(v) || cJSON_IsFalse(v) || ((cJSON_IsObject(v) || cJSON_IsArray(v)) && !v->child) ||
             (fine && cJSON_IsString(v) && !strcmp(v->valuestring, fine));
    if (ok) return 0;
    char *text = cJSON_PrintUnformatted(v);
    snprintf(err, errlen, "%s = %s: %s", key, text ? text : "?", why);
    free(text);
    return -1;
}

static int read_targets(const cJSON *v, unsigned *mask, char *err, size_t errlen) {
    if (cJSON_IsString(v)) {
        if (!strcmp(v->valuestring, "all-linear")) return *mask = LORA_ALL_TARGETS, 0;
        snprintf(err, errlen, "target_modules = \"%s\": a regular expression is not read; give the module names "
                 "(q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj) or \"all-linear\"", v->valuestring);
        return -1;
    }
    if (!cJSON_IsArray(v) || !v->child) return snprintf(err, errlen, "target_modules must be a non-empty list"), -1;
    *mask = 0;
    for (const cJSON *x = v->child; x; x = x->next) {
        unsigned one;
        if (!cJSON_IsString(x)) return snprintf(err, errlen, "target_modules holds a value that is not a string"), -1;
        if (lora_parse_targets(x->valuestring, &one, err, errlen) || one == LORA_ALL_TARGETS) {
            snprintf(err, errlen, "target_modules: '%s' is not one of the linear layers ppa adapts (q_proj, k_proj, "
                     "v_proj, o_proj, gate_proj, up_proj, down_proj)", x->valuestring);
            return -1;
        }
        *mask |= one; /* PEFT keeps a set: a repeat is harmless */
    }
    return 0;
}

static int parse_spec(const cJSON *j, LoraSpec *s, char *err, size_t errlen) {
    memset(s, 0, sizeof *s);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "peft_type");
    if (!cJSON_IsString(t) || strcmp(t->valuestring, "LORA"))
        return snprintf(err, errlen, "peft_type must be \"LORA\" (ppa reads LoRA adapters only)"), -1;
    long r;
    if (json_whole(cJSON_GetObjectItemCaseSensitive(j, "r"), "r", 1, 65536, &r, err, errlen)) return -1;
    s->r = (int)r, s->alpha = 8, s->dropout = 0; /* PEFT's defaults */
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, "lora_alpha"), *d = cJSON_GetObjectItemCaseSensitive(j, "lora_dropout");
    if (a && !cJSON_IsNumber(a)) return snprintf(err, errlen, "lora_alpha must be a number"), -1;
    if (d && !cJSON_IsNull(d) && !cJSON_IsNumber(d)) return snprintf(err, errlen, "lora_dropout must be a number"), -1;
    if (a) s->alpha = a->valuedouble;
    if (cJSON_IsNumber(d)) s->dropout = d->valuedouble;
    if (!(s->alpha > 0) || !isfinite(s->alpha)) return snprintf(err, errlen, "lora_alpha must be positive"), -1;
    if (!(s->dropout >= 0 && s->dropout < 1)) return snprintf(err, errlen, "lora_dropout must be in [0, 1)"), -1;
    if (json_bool(j, "use_rslora", &s->rslora, err, errlen)) return -1;
    const cJSON *task = cJSON_GetObjectItemCaseSensitive(j, "task_type");
    if (task && !cJSON_IsNull(task) &&
        !(cJSON_IsString(task) && (!strcmp(task->valuestring, "CAUSAL_LM") || !strcmp(task->valuestring, "SEQ_CLS"))))
        return snprintf(err, errlen, "task_type must be CAUSAL_LM (or SEQ_CLS for a reward model)"), -1;
    if (cJSON_IsString(task)) s->task = strcmp(task->valuestring, "CAUSAL_LM") ? 2 : 1;
    if (unsupported(j, "bias", "none", "ppa's adapters have no biases", err, errlen) ||
        unsupported(j, "use_dora", NULL, "DoRA is not implemented", err, errlen) ||
        unsupported(j, "fan_in_fan_out", NULL, "ppa's layers store W as [out, in]", err, errlen) ||
        unsupported(j, "modules_to_save", NULL, "ppa trains adapters only, no full modules", err, errlen) ||
        unsupported(j, "rank_pattern", NULL, "every target has the same rank in ppa", err, errlen) ||
        unsupported(j, "alpha_pattern", NULL, "every target has the same alpha in ppa", err, errlen) ||
        unsupported(j, "layers_to_transform", NULL, "ppa adapts every layer", err, errlen) ||
        unsupported(j, "layer_replication", NULL, "ppa does not replicate layers", err, errlen))
        return -1;
    const cJSON *tm = cJSON_GetObjectItemCaseSensitive(j, "target_modules");
    if (!tm) return snprintf(err, errlen, "target_modules is missing"), -1;
    return read_targets(tm, &s->targets, err, errlen);
}

int adapter_read_spec(const char *dir, LoraSpec *s, char *err, size_t errlen) {
    char *path = ppa_path_join(dir, "adapter_config.json"), msg[1024];
    cJSON *j = json_load_file(path, 1 << 20, msg, sizeof msg);
    int rc = -1;
    if (!j)
        snprintf(err, errlen, "%s", msg);
    else if (!cJSON_IsObject(j))
        snprintf(err, errlen, "%s: not a JSON object", path);
    else if (parse_spec(j, s, msg, sizeof msg))
        snprintf(err, errlen, "%s: %s", path, msg);
    else
        rc = 0;
    cJSON_Delete(j);
    free(path);
    return rc;
}

/* ---- the tensors ---- */

/* every A, B of the spec from st into values (lora.c's order), each checked; extra tensors refused */
static int read_tensors(const ModelConfig *c, const LoraSpec *s, const StSet *st, const char *path, float *values,
                        char *err, size_t errlen) {
    int expected = 0;
    size_t at = 0;
    for (int l = 0; l < c->num_hidden_layers; l++)
        for (int k = 0; k < LORA_N_TARGETS; k++) {
            if (!(s->targets & 1u << k)) continue;
            int out, in;
            lora_dims(c, k, &out, &in);
            for (int b = 0; b < 2; b++, expected++) {
                char name[160];
                adapter_tensor_name(name, sizeof name, l, k, b);
                int64_t rows = b ? out : s->r, cols = b ? s->r : in;
                const StTensor *t = st_find(st, name);
                if (!t) return snprintf(err, errlen, "%s: tensor %s is missing (r %d, target %s)", path, name, s->r,
                                        LORA_TARGETS[k]), -1;
                if (t->ndim != 2 || t->shape[0] != rows || t->shape[1] != cols)
                    return snprintf(err, errlen, "%s: %s has shape [%lld, %lld], expected [%lld, %lld]", path, name,
                                    t->ndim > 0 ? (long long)t->shape[0] : 0LL, t->ndim > 1 ? (long long)t->shape[1] : 0LL,
                                    (long long)rows, (long long)cols), -1;
                st_to_f32(t, values + at);
                for (int64_t i = 0; i < t->numel; i++)
                    if (!isfinite(values[at + (size_t)i]))
                        return snprintf(err, errlen, "%s: %s holds a non-finite value at %lld", path, name, (long long)i), -1;
                at += (size_t)t->numel;
            }
        }
    for (int i = 0; st->n_tensors != expected && i < st->n_tensors; i++) { /* every expected one is there: find the extra */
        const char *n = st->tensors[i].name;
        int found = 0;
        for (int l = 0; l < c->num_hidden_layers && !found; l++)
            for (int k = 0; k < LORA_N_TARGETS && !found; k++)
                for (int b = 0; b < 2 && !found; b++) {
                    char want[160];
                    adapter_tensor_name(want, sizeof want, l, k, b);
                    found = s->targets & 1u << k && !strcmp(want, n);
                }
        if (!found)
            return snprintf(err, errlen, "%s: tensor %s is not one of the adapter's (r %d on %d layers; "
                            "adapter_config.json's target_modules name the targets)", path, n, s->r,
                            c->num_hidden_layers), -1;
    }
    return 0;
}

int adapter_read(const ModelConfig *c, const char *dir, LoraSpec *s, float **values, char *err, size_t errlen) {
    *values = NULL;
    if (adapter_read_spec(dir, s, err, errlen)) return -1;
    int lm = c->head == HEAD_LM;
    if (s->task && (s->task == 1) != lm) { /* PEFT builds another model around each: never one for the other */
        snprintf(err, errlen, "%s/adapter_config.json: task_type %s is an adapter of a %s, but this model is a %s; give "
                 "the adapter trained on this kind of model", dir, s->task == 1 ? "CAUSAL_LM" : "SEQ_CLS",
                 s->task == 1 ? "causal LM" : "sequence classifier (a reward model)",
                 lm ? "causal LM" : "sequence classifier (a reward model)");
        return -1;
    }
    char *path = ppa_path_join(dir, "adapter_model.safetensors");
    struct stat sb;
    if (stat(path, &sb)) {
        char *bin = ppa_path_join(dir, "adapter_model.bin");
        int pickled = !stat(bin, &sb);
        snprintf(err, errlen, "%s: %s", path, pickled ? "missing; adapter_model.bin (a pickle) is not read: save the "
                 "adapter with safe_serialization=True" : strerror(errno));
        free(bin), free(path);
        return -1;
    }
    StSet st;
    if (st_open(&st, path, err, errlen)) {
        free(path);
        return -1;
    }
    size_t n = lora_size(c, s);
    *values = xmalloc(sizeof(float) * (n ? n : 1));
    int rc = read_tensors(c, s, &st, path, *values, err, errlen);
    if (rc) free(*values), *values = NULL;
    st_close(&st);
    free(path);
    return rc;
}

/* ---- writing ---- */

typedef struct {
    const ModelConfig *c;
    const LoraSpec *s;
    const float *values;
    const char *base, *tokenizer_dir;
} Save;

static cJSON *config_json(const Save *sv) {
    const LoraSpec *s = sv->s;
    cJSON *j = cJSON_CreateObject(), *t = cJSON_CreateArray();
    for (int k = 0; k < LORA_N_TARGETS; k++)
        if (s->targets & 1u << k) cJSON_AddItemToArray(t, cJSON_CreateString(LORA_TARGETS[k]));
    /* PEFT's keys, sorted as its save_pretrained writes them */
    cJSON_AddItemToObject(j, "alpha_pattern", cJSON_CreateObject());
    cJSON_AddNullToObject(j, "auto_mapping");
    if (sv->base) cJSON_AddStringToObject(j, "base_model_name_or_path", sv->base);
    else cJSON_AddNullToObject(j, "base_model_name_or_path");
    cJSON_AddStringToObject(j, "bias", "none");
    cJSON_AddFalseToObject(j, "fan_in_fan_out");
    cJSON_AddTrueToObject(j, "inference_mode");
    cJSON_AddTrueToObject(j, "init_lora_weights");
    cJSON_AddNullToObject(j, "layers_pattern");
    cJSON_AddNullToObject(j, "layers_to_transform");
    cJSON_AddItemToObject(j, "lora_alpha", json_number_exact(s->alpha));
    cJSON_AddItemToObject(j, "lora_dropout", json_number_exact(s->dropout));
    cJSON_AddNullToObject(j, "modules_to_save");
    cJSON_AddStringToObject(j, "peft_type", "LORA");
    cJSON_AddNumberToObject(j, "r", s->r);
    cJSON_AddItemToObject(j, "rank_pattern", cJSON_CreateObject());
    cJSON_AddNullToObject(j, "revision");
    cJSON_AddItemToObject(j, "target_modules", t);
    cJSON_AddStringToObject(j, "task_type", sv->c->head == HEAD_LM ? "CAUSAL_LM" : "SEQ_CLS");
    cJSON_AddFalseToObject(j, "use_dora");
    cJSON_AddBoolToObject(j, "use_rslora", s->rslora);
    return j;
}

/* the adapter's tensors (A, B of every target, in lora.h's order) over values [lora_size(c, s)] */
static StWriteTensor *tensors(const ModelConfig *c, const LoraSpec *s, const float *values, int *n, char (**names)[160],
                              int64_t (**shapes)[2]) {
    int cap = 2 * LORA_N_TARGETS * (c->num_hidden_layers ? c->num_hidden_layers : 1);
    StWriteTensor *t = xcalloc((size_t)cap, sizeof *t);
    *names = xcalloc((size_t)cap, sizeof **names);
    *shapes = xcalloc((size_t)cap, sizeof **shapes);
    *n = 0;
    size_t at = 0;
    for (int l = 0; l < c->num_hidden_layers; l++)
        for (int k = 0; k < LORA_N_TARGETS; k++) {
            if (!(s->targets & 1u << k)) continue;
            int out, in;
            lora_dims(c, k, &out, &in);
            int64_t dims[2][2] = {{s->r, in}, {out, s->r}};
            for (int b = 0; b < 2; b++, (*n)++) {
                adapter_tensor_name((*names)[*n], sizeof (*names)[*n], l, k, b);
                memcpy((*shapes)[*n], dims[b], sizeof dims[b]);
                t[*n] = (StWriteTensor){(*names)[*n], 2, (*shapes)[*n], values + at};
                at += (size_t)(dims[b][0] * dims[b][1]);
            }
        }
    return t;
}

int adapter_write_tensors(const char *path, const ModelConfig *c, const LoraSpec *s, const float *values, char *err,
                          size_t errlen) {
    int n;
    char(*names)[160];
    int64_t(*shapes)[2];
    StWriteTensor *t = tensors(c, s, values, &n, &names, &shapes);
    int rc = st_write(path, t, n, ST_F32, err, errlen);
    free(t), free(names), free(shapes);
    return rc;
}

/* json.dumps(indent=2) of the flat object: one key per line, a list's items one per line */
static int write_config(FILE *f, const void *ctx) {
    cJSON *j = config_json(ctx);
    fputs("{\n", f);
    for (const cJSON *x = j->child; x; x = x->next) {
        fprintf(f, "  \"%s\": ", x->string);
        if (cJSON_IsArray(x) && x->child) {
            fputs("[\n", f);
            for (const cJSON *y = x->child; y; y = y->next) {
                char *v = cJSON_PrintUnformatted(y);
                fprintf(f, "    %s%s\n", v, y->next ? "," : "");
                free(v);
            }
            fputs("  ]", f);
        } else {
            char *v = cJSON_PrintUnformatted(x);
            fputs(v, f);
            free(v);
        }
        fputs(x->next ? ",\n" : "\n", f);
    }
    fputs("}", f);
    cJSON_Delete(j);
    return ferror(f) ? -1 : 0;
}

static int fill(const char *tmp, const void *ctx, char *err, size_t errlen) {
    const Save *sv = ctx;
    char *path = ppa_path_join(tmp, "adapter_config.json");
    int rc = atomic_write(path, write_config, sv, err, errlen);
    free(path);
    if (rc) return -1;
    path = ppa_path_join(tmp, "adapter_model.safetensors");
    rc = adapter_write_tensors(path, sv->c, sv->s, sv->values, err, errlen);
    free(path);
    if (rc) return -1;
    /* the tokenizer and template files, as the trainer saves them beside an adapter; PEFT writes no
     * generation_config.json into an adapter folder, and neither does ppa */
    return sv->tokenizer_dir ? checkpoint_tokenizer_files(tmp, sv->c, sv->tokenizer_dir, err, errlen) : 0;
}

int adapter_write(const char *dir, const ModelConfig *c, const LoraSpec *s, const float *values, const char *base,
                  const char *tokenizer_dir, char *err, size_t errlen) {
    Save sv = {c, s, values, base, tokenizer_dir};
    return checkpoint_folder(dir, fill, &sv, err, errlen);
}
