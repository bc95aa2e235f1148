/* config.c: config.json -> ModelConfig. The model types with their
 * transformers class defaults, the typed getters whose messages name the file
 * and the field, and each group of fields with its checks and contradictions:
 * type and architecture, sizes, activation and norm, biases, token ids,
 * dtype, sliding window; loading from a file or a model folder.
 *
 * Not here: the RoPE fields and frequencies (rope.c), the tensor table
 * (tensors.c), writing config.json and the summary (config_write.c). */
#include "hf/config.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "core/common.h"
#include "io/file.h"
#include "io/json.h"
#include "hf/config_get.h"
#include "hf/internal.h"
#include "hf/rope.h"

/* ---- model types and their transformers class defaults ---------------- */

const TypeInfo CONFIG_TYPES[] = {
    [MODEL_LLAMA] = {"llama", "LlamaForCausalLM", "LlamaForSequenceClassification", 2048, 0, 0, 1, 2},
    [MODEL_MISTRAL] = {"mistral", "MistralForCausalLM", "MistralForSequenceClassification", 4096 * 32, 8, 0, 1, 2},
    [MODEL_QWEN2] = {"qwen2", "Qwen2ForCausalLM", "Qwen2ForSequenceClassification", 32768, 32, 0, -1, -1},
    [MODEL_QWEN3] = {"qwen3", "Qwen3ForCausalLM", "Qwen3ForSequenceClassification", 32768, 32, 128, -1, -1},
};

#define ARMORM_ARCHITECTURE "LlamaForRewardModelWithGating" /* llama only */
#define DEFAULT_NUM_LABELS 2                               /* PretrainedConfig */
#define DEFAULT_NUM_OBJECTIVES 19                          /* ArmoRM's code */

#define DEFAULT_RMS_NORM_EPS 1e-6 /* every one of the four config classes */
#define DEFAULT_SLIDING_WINDOW 4096
#define DEFAULT_MAX_WINDOW_LAYERS 28 /* Qwen2Config, Qwen3Config */

const char *model_type_name(ModelType t) {
    return (unsigned)t < PPA_ARRAY_LEN(CONFIG_TYPES) ? CONFIG_TYPES[t].model_type : "?";
}

const char *model_architecture_name(ModelType t) {
    return (unsigned)t < PPA_ARRAY_LEN(CONFIG_TYPES) ? CONFIG_TYPES[t].architecture : "?";
}

const char *model_config_architecture(const ModelConfig *c) {
    if ((unsigned)c->type >= PPA_ARRAY_LEN(CONFIG_TYPES)) return "?";
    return c->head == HEAD_SCORE ? CONFIG_TYPES[c->type].seqcls
           : c->head == HEAD_REGRESSION ? ARMORM_ARCHITECTURE : CONFIG_TYPES[c->type].architecture;
}

const char *model_head_tensor(const ModelConfig *c) {
    return c->head == HEAD_SCORE ? "score.weight" : c->head == HEAD_REGRESSION ? "regression_layer.weight" : NULL;
}

/* ---- error context and typed getters ------------------------------------ */


/* ---- the parts of the config ---------------------------------------------- */

/* the type an architecture names, and its head; -1 if none */
static int type_from_architecture(const char *s, ModelHead *head) {
    for (size_t t = 0; t < PPA_ARRAY_LEN(CONFIG_TYPES); t++) {
        if (!strcmp(s, CONFIG_TYPES[t].architecture)) return *head = HEAD_LM, (int)t;
        if (!strcmp(s, CONFIG_TYPES[t].seqcls)) return *head = HEAD_SCORE, (int)t;
    }
    if (!strcmp(s, ARMORM_ARCHITECTURE)) return *head = HEAD_REGRESSION, MODEL_LLAMA;
    return -1;
}

static int type_from_name(const char *s) {
    for (size_t t = 0; t < PPA_ARRAY_LEN(CONFIG_TYPES); t++)
        if (!strcmp(s, CONFIG_TYPES[t].model_type)) return (int)t;
    return -1;
}

/* model_type decides, as for transformers' AutoModel; architectures[0],
 * when given, must name a class of the same type, and picks the head (a
 * config without it is a causal LM). */
static int parse_type(const Ctx *x, const cJSON *root, ModelType *type, ModelHead *head) {
    const char *mt;
    int from_mt = -1, from_arch = -1;
    *head = HEAD_LM;
    if (config_get_string(x, root, "", "model_type", "llama, mistral, qwen2 or qwen3", &mt) < 0) return -1;
    if (mt && (from_mt = type_from_name(mt)) < 0)
        return config_fail(x, "model_type = \"%s\" is not supported (expected llama, mistral, qwen2 or qwen3)", mt);
    const cJSON *arch = config_member(root, "architectures");
    if (arch) {
        const char *expect = "an array of strings such as [\"LlamaForCausalLM\"]";
        if (!cJSON_IsArray(arch)) return config_fail(x, "architectures is not an array (expected %s)", expect);
        const cJSON *first = arch->child;
        if (first && !cJSON_IsString(first))
            return config_fail(x, "architectures[0] is not a string (expected %s)", expect);
        if (first && (from_arch = type_from_architecture(first->valuestring, head)) < 0)
            return config_fail(x,
                               "architectures[0] = \"%s\" is not supported (expected <Type>ForCausalLM or "
                               "<Type>ForSequenceClassification for Llama, Mistral, Qwen2 or Qwen3, or "
                               ARMORM_ARCHITECTURE ")",
                               first->valuestring);
    }
    if (from_mt < 0 && from_arch < 0)
        return config_missing(x, root, "", "model_type", "llama, mistral, qwen2 or qwen3, or architectures");
    if (from_mt >= 0 && from_arch >= 0 && from_mt != from_arch)
        return config_fail(x, "architectures[0] = \"%s\" does not match model_type = \"%s\" (expected %s)",
                           arch->child->valuestring, mt, CONFIG_TYPES[from_mt].architecture);
    *type = (ModelType)(from_mt >= 0 ? from_mt : from_arch);
    return 0;
}

/* num_labels of a reward head: id2label's size (what transformers derives it
 * from), or num_labels; ArmoRM: num_objectives */
static int parse_head(const Ctx *x, const cJSON *root, ModelConfig *c) {
    c->num_labels = 0;
    if (c->head == HEAD_LM) return 0;
    if (c->head == HEAD_REGRESSION)
        return config_get_int(x, root, "", "num_objectives", 0, DEFAULT_NUM_OBJECTIVES, 1, 1 << 16, &c->num_labels) < 0
                   ? -1 : 0;
    const cJSON *ids = config_member(root, "id2label");
    int n = -1;
    if (ids) {
        if (!cJSON_IsObject(ids) || !ids->child)
            return config_fail(x, "id2label is not a non-empty object (expected {\"0\": \"LABEL_0\", ...})");
        n = cJSON_GetArraySize(ids);
        if (n > 1 << 16) return config_fail(x, "id2label has %d labels (expected at most %d)", n, 1 << 16);
    }
    int given;
    if ((given = config_get_int(x, root, "", "num_labels", 0, n > 0 ? n : DEFAULT_NUM_LABELS, 1, 1 << 16,
                                &c->num_labels)) < 0)
        return -1;
    if (given && n > 0 && n != c->num_labels)
        return config_fail(x, "num_labels = %d but id2label has %d labels (expected them to agree)", c->num_labels, n);
    return 0;
}

static int parse_sizes(const Ctx *x, const cJSON *root, ModelConfig *c) {
    const TypeInfo *ti = &CONFIG_TYPES[c->type];
    int head_dim_given = 0;
    if (config_get_int(x, root, "", "vocab_size", 1, 0, 1, MODEL_MAX_DIM, &c->vocab_size) < 0 ||
        config_get_int(x, root, "", "hidden_size", 1, 0, 1, MODEL_MAX_DIM, &c->hidden_size) < 0 ||
        config_get_int(x, root, "", "intermediate_size", 1, 0, 1, MODEL_MAX_DIM, &c->intermediate_size) < 0 ||
        config_get_int(x, root, "", "num_hidden_layers", 1, 0, 1, MODEL_MAX_LAYERS, &c->num_hidden_layers) < 0 ||
        config_get_int(x, root, "", "num_attention_heads", 1, 0, 1, MODEL_MAX_DIM, &c->num_attention_heads) < 0 ||
        config_get_int(x, root, "", "num_key_value_heads", 0, ti->kv_heads ? ti->kv_heads : c->num_attention_heads, 1,
                       MODEL_MAX_DIM, &c->num_key_value_heads) < 0 ||
        config_get_int(x, root, "", "max_position_embeddings", 0, ti->max_position_embeddings, 1, INT_MAX,
                       &c->max_position_embeddings) < 0 ||
        (head_dim_given = config_get_int(x, root, "", "head_dim", 0, ti->head_dim, 1, MODEL_MAX_DIM, &c->head_dim)) < 0)
        return -1;
    if (c->num_attention_heads % c->num_key_value_heads)
        return config_fail(x, "num_key_value_heads = %d does not divide num_attention_heads = %d",
                           c->num_key_value_heads, c->num_attention_heads);
    if (!c->head_dim) {
        if (c->hidden_size % c->num_attention_heads)
            return config_fail(x,
                               "hidden_size = %d is not divisible by num_attention_heads = %d (expected a multiple, "
                               "or a head_dim field)",
                               c->hidden_size, c->num_attention_heads);
        c->head_dim = c->hidden_size / c->num_attention_heads;
    }
    if (c->head_dim % 2)
        return config_fail(x, "head_dim = %d%s is odd (expected an even size: RoPE rotates dims j and j + head_dim/2)",
                           c->head_dim, head_dim_given ? "" : " (hidden_size / num_attention_heads)");
    return 0;
}

static int parse_activation_and_norm(const Ctx *x, const cJSON *root, ModelConfig *c) {
    const char *act;
    if (config_get_string(x, root, "", "hidden_act", "\"silu\"", &act) < 0) return -1;
    if (act && strcmp(act, "silu") && strcmp(act, "swish")) /* ACT2FN maps both to SiLU */
        return config_fail(x, "hidden_act = \"%s\" is not supported (expected \"silu\": the MLP is "
                              "down(silu(gate) * up))", act);
    if (config_get_double(x, root, "", "rms_norm_eps", 0, DEFAULT_RMS_NORM_EPS, 1, &c->rms_norm_eps) < 0) return -1;
    return config_get_bool(x, root, "tie_word_embeddings", 0, &c->tie_word_embeddings) < 0 ? -1 : 0;
}

/* Which bias and norm tensors exist, per type, as transformers builds them. */
static int parse_biases(const Ctx *x, const cJSON *root, ModelConfig *c) {
    int attention_bias = 0, mlp_bias = 0; /* set by get_bool; zero keeps gcc's -Wmaybe-uninitialized quiet */
    if (config_get_bool(x, root, "attention_bias", 0, &attention_bias) < 0 || config_get_bool(x, root, "mlp_bias", 0, &mlp_bias) < 0)
        return -1;
    const char *tn = CONFIG_TYPES[c->type].model_type;
    if (mlp_bias && c->type != MODEL_LLAMA)
        return config_fail(x, "mlp_bias = true is not supported for %s (expected false: transformers builds its MLP "
                              "without biases)", tn);
    if (attention_bias && c->type == MODEL_MISTRAL)
        return config_fail(x, "attention_bias = true is not supported for mistral (expected false: transformers "
                              "builds its attention without biases)");
    switch (c->type) {
    case MODEL_LLAMA: c->qkv_bias = c->o_bias = attention_bias, c->mlp_bias = mlp_bias; break;
    case MODEL_MISTRAL: break;
    case MODEL_QWEN2: c->qkv_bias = 1; break; /* attention_bias is not read by Qwen2 */
    case MODEL_QWEN3: c->qkv_bias = c->o_bias = attention_bias, c->qk_norm = 1; break;
    }
    return 0;
}

/* One token id in [0, V), or -1 for null. */
static int token_id(const Ctx *x, const cJSON *it, const char *what, int vocab, int *out) {
    char v[48];
    config_show(it, v, sizeof v);
    if (cJSON_IsNull(it)) {
        *out = -1;
        return 0;
    }
    if (!cJSON_IsNumber(it) || it->valuedouble != floor(it->valuedouble) || !(it->valuedouble >= 0) ||
        !(it->valuedouble < vocab))
        return config_fail(x, "%s = %s is not a token id (expected an integer in 0..%d, vocab_size - 1)", what, v,
                           vocab - 1);
    *out = (int)it->valuedouble;
    return 0;
}

static int parse_tokens(const Ctx *x, const cJSON *root, ModelConfig *c) {
    const TypeInfo *ti = &CONFIG_TYPES[c->type];
    const cJSON *bos = cJSON_GetObjectItemCaseSensitive(root, "bos_token_id");
    const cJSON *eos = cJSON_GetObjectItemCaseSensitive(root, "eos_token_id");
    const cJSON *pad = config_member(root, "pad_token_id");
    char what[32];
    c->bos_token_id = ti->bos;
    if (bos && token_id(x, bos, "bos_token_id", c->vocab_size, &c->bos_token_id) < 0) return -1;
    if (!bos && ti->bos >= c->vocab_size)
        return config_fail(x, "bos_token_id (absent: %s default %d) is not a token id (expected a bos_token_id "
                              "field, or vocab_size > %d)", ti->model_type, ti->bos, ti->bos);
    c->n_eos = 0;
    if (!eos) {
        if (ti->eos >= c->vocab_size)
            return config_fail(x, "eos_token_id (absent: %s default %d) is not a token id (expected an eos_token_id "
                                  "field, or vocab_size > %d)", ti->model_type, ti->eos, ti->eos);
        if (ti->eos >= 0) c->eos_token_ids[c->n_eos++] = ti->eos;
    } else if (cJSON_IsArray(eos)) {
        if (cJSON_GetArraySize(eos) > MODEL_MAX_EOS)
            return config_fail(x, "eos_token_id has %d entries (expected at most %d)", cJSON_GetArraySize(eos),
                               MODEL_MAX_EOS);
        for (const cJSON *it = eos->child; it; it = it->next) {
            snprintf(what, sizeof what, "eos_token_id[%d]", c->n_eos);
            if (cJSON_IsNull(it)) return config_fail(x, "%s = null (expected a token id)", what);
            if (token_id(x, it, what, c->vocab_size, &c->eos_token_ids[c->n_eos]) < 0) return -1;
            c->n_eos++;
        }
    } else if (!cJSON_IsNull(eos)) {
        if (!cJSON_IsNumber(eos)) {
            char v[48];
            config_show(eos, v, sizeof v);
            return config_fail(x, "eos_token_id = %s (expected a token id or a list of token ids)", v);
        }
        if (token_id(x, eos, "eos_token_id", c->vocab_size, &c->eos_token_ids[0]) < 0) return -1;
        c->n_eos = 1;
    }
    /* pad: null, absent and negative (old Llama conversions wrote -1) mean none */
    c->pad_token_id = -1;
    if (pad && !(cJSON_IsNumber(pad) && pad->valuedouble < 0) &&
        token_id(x, pad, "pad_token_id", c->vocab_size, &c->pad_token_id) < 0)
        return -1;
    return 0;
}

static int parse_dtype(const Ctx *x, const cJSON *root, ModelConfig *c) {
    const char *a, *b, *expect = "a dtype name such as \"bfloat16\"";
    if (config_get_string(x, root, "", "torch_dtype", expect, &a) < 0 ||
        config_get_string(x, root, "", "dtype", expect, &b) < 0)
        return -1;
    if (a && b && strcmp(a, b))
        return config_fail(x, "torch_dtype = \"%s\" and dtype = \"%s\" disagree (expected one dtype)", a, b);
    const char *d = b ? b : a ? a : "";
    if (strlen(d) >= MODEL_DTYPE_LEN) return config_fail(x, "dtype = \"%.40s\" is too long (expected %s)", d, expect);
    memcpy(c->dtype, d, strlen(d) + 1);
    return 0;
}

/* ---- sliding window --------------------------------------------------------- */

/* qwen2/qwen3 layer_types: index of the first "sliding_attention" layer, or
 * num_hidden_layers when none slides. */
static int first_sliding_layer(const Ctx *x, const cJSON *lt, int L, int *first) {
    if (!cJSON_IsArray(lt) || cJSON_GetArraySize(lt) != L)
        return config_fail(x, "layer_types is not an array of %d strings (expected one entry per layer)", L);
    int i = 0;
    *first = L;
    for (const cJSON *it = lt->child; it; it = it->next, i++) {
        int sliding = cJSON_IsString(it) && !strcmp(it->valuestring, "sliding_attention");
        if (!sliding && !(cJSON_IsString(it) && !strcmp(it->valuestring, "full_attention")))
            return config_fail(x, "layer_types[%d] is not \"full_attention\" or \"sliding_attention\"", i);
        if (sliding && *first == L) *first = i;
    }
    return 0;
}

static int parse_sliding(const Ctx *x, const cJSON *root, ModelConfig *c) {
    int window, use = 0, mwl, first;
    if (c->type == MODEL_LLAMA) return 0;
    const cJSON *sw = cJSON_GetObjectItemCaseSensitive(root, "sliding_window");
    if (config_get_int(x, root, "", "sliding_window", 0, DEFAULT_SLIDING_WINDOW, 1, INT_MAX, &window) < 0) return -1;
    if (sw && cJSON_IsNull(sw)) window = 0; /* null: no window; absent: the class default */
    if (c->type == MODEL_MISTRAL) {
        c->sliding_window = window;
        return 0;
    }
    if (config_get_bool(x, root, "use_sliding_window", 0, &use) < 0 ||
        config_get_int(x, root, "", "max_window_layers", 0, DEFAULT_MAX_WINDOW_LAYERS, 0, INT_MAX, &mwl) < 0)
        return -1;
    const cJSON *lt = config_member(root, "layer_types");
    first = mwl < c->num_hidden_layers ? mwl : c->num_hidden_layers;
    if (lt && first_sliding_layer(x, lt, c->num_hidden_layers, &first) < 0) return -1;
    /* transformers: sliding_window = None unless use_sliding_window */
    if (use && window && first < c->num_hidden_layers) {
        c->sliding_window = window;
        c->max_window_layers = first;
    } else {
        c->max_window_layers = mwl;
    }
    return 0;
}

/* ---- parse and load ----------------------------------------------------------- */

static int parse_root(const Ctx *x, const cJSON *root, ModelConfig *c) {
    if (!cJSON_IsObject(root)) return config_fail(x, "the top level is not an object (expected a config.json object)");
    if (config_member(root, "quantization_config"))
        return config_fail(x, "quantization_config: quantized checkpoints are not supported (expected float32, "
                              "float16 or bfloat16 weights)");
    if (parse_type(x, root, &c->type, &c->head) < 0 || parse_head(x, root, c) < 0 || parse_sizes(x, root, c) < 0 ||
        parse_activation_and_norm(x, root, c) < 0 ||
        parse_biases(x, root, c) < 0 || parse_tokens(x, root, c) < 0 || parse_dtype(x, root, c) < 0 ||
        rope_parse(x, root, &c->rope) < 0 || parse_sliding(x, root, c) < 0)
        return -1;
    return 0;
}

int model_config_parse(ModelConfig *c, const char *json_text, const char *name, char *err, size_t errlen) {
    const Ctx x = {name ? name : "config.json", err, errlen};
    memset(c, 0, sizeof *c);
    char msg[512];
    cJSON *root = json_parse(json_text, strlen(json_text), msg, sizeof msg); /* duplicate keys refused there */
    if (!root) return config_fail(&x, "%s (expected a config.json object)", msg);
    int rc = parse_root(&x, root, c);
    cJSON_Delete(root);
    return rc;
}

/* The whole file as a NUL-terminated string; NULL with a message. */
static char *read_text(const Ctx *x, const char *path) {
    char why[4400];
    FILE *f = file_open_regular(path, why, sizeof why);
    if (!f) {
        size_t n = strlen(path); /* config_fail names the file itself */
        config_fail(x, "%s", strncmp(why, path, n) || strncmp(why + n, ": ", 2) ? why : why + n + 2);
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = xmalloc(cap);
    for (;;) {
        if (n + 1 >= cap) {
            if (cap >= ((size_t)64 << 20)) {
                config_fail(x, "larger than 64 MiB (expected a config.json of a few KiB)");
                break;
            }
            buf = xrealloc(buf, cap *= 2);
        }
        size_t got = fread(buf + n, 1, cap - 1 - n, f);
        n += got;
        if (got) continue;
        if (ferror(f)) config_fail(x, "read error (%s)", strerror(errno));
        else {
            buf[n] = 0;
            fclose(f);
            return buf;
        }
        break;
    }
    fclose(f);
    free(buf);
    return NULL;
}

/* "dir/config.json" when path is a folder, else a copy of path. */
char *config_path(const char *path) {
    struct stat st;
    size_t n = strlen(path);
    if (stat(path, &st) || !S_ISDIR(st.st_mode)) return memcpy(xmalloc(n + 1), path, n + 1);
    char *p = xmalloc(n + sizeof "/config.json");
    snprintf(p, n + sizeof "/config.json", "%s%sconfig.json", path, n && path[n - 1] == '/' ? "" : "/");
    return p;
}

int model_config_load(ModelConfig *c, const char *path, char *err, size_t errlen) {
    if (file_refuse_hub_id(path, err, errlen)) return -1;
    char *file = config_path(path);
    const Ctx x = {file, err, errlen};
    char *text = read_text(&x, file);
    int rc = text ? model_config_parse(c, text, file, err, errlen) : -1;
    free(text);
    free(file);
    return rc;
}

int model_config_check_seq_len(const ModelConfig *c, int T, char *err, size_t errlen) {
    if (c->max_position_embeddings > 0 && T > c->max_position_embeddings) {
        snprintf(err, errlen, "a sequence of %d tokens is longer than the model's %d positions (max_position_embeddings)",
                 T, c->max_position_embeddings);
        return -1;
    }
    if (!c->sliding_window || T <= c->sliding_window) return 0;
    snprintf(err, errlen,
             "a sequence of %d tokens exceeds the %s sliding window of %d (ppa computes full causal attention, which "
             "equals sliding-window attention only up to %d tokens)",
             T, model_type_name(c->type), c->sliding_window, c->sliding_window);
    return -1;
}
