/* config.c: config.json -> ModelConfig (typed getters whose messages name
 * the file and the field), RoPE inverse frequencies, the tensor table, the
 * atomic writer and the one-paragraph summary. */
#include "model/config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/common.h"

/* ---- model types and their transformers class defaults ---------------- */

typedef struct {
    const char *model_type, *architecture;
    int max_position_embeddings;
    int kv_heads;    /* 0: = num_attention_heads (LlamaConfig: None) */
    int head_dim;    /* 0: hidden_size / num_attention_heads */
    int bos, eos;    /* -1: None */
} TypeInfo;

static const TypeInfo TYPES[] = {
    [MODEL_LLAMA] = {"llama", "LlamaForCausalLM", 2048, 0, 0, 1, 2},
    [MODEL_MISTRAL] = {"mistral", "MistralForCausalLM", 4096 * 32, 8, 0, 1, 2},
    [MODEL_QWEN2] = {"qwen2", "Qwen2ForCausalLM", 32768, 32, 0, -1, -1},
    [MODEL_QWEN3] = {"qwen3", "Qwen3ForCausalLM", 32768, 32, 128, -1, -1},
};

#define DEFAULT_ROPE_THETA 10000.0 /* every one of the four config classes */
#define DEFAULT_RMS_NORM_EPS 1e-6  /* idem */
#define DEFAULT_SLIDING_WINDOW 4096
#define DEFAULT_MAX_WINDOW_LAYERS 28 /* Qwen2Config, Qwen3Config */
#define WRITTEN_TRANSFORMERS_VERSION "4.51.0" /* first release with Qwen3 */

const char *model_type_name(ModelType t) { return (unsigned)t < PPA_ARRAY_LEN(TYPES) ? TYPES[t].model_type : "?"; }

const char *model_architecture_name(ModelType t) {
    return (unsigned)t < PPA_ARRAY_LEN(TYPES) ? TYPES[t].architecture : "?";
}

static const char *const ROPE_NAMES[] = {
    [ROPE_DEFAULT] = "default",
    [ROPE_LINEAR] = "linear",
    [ROPE_LLAMA3] = "llama3",
};

const char *model_rope_type_name(RopeType t) {
    return (unsigned)t < PPA_ARRAY_LEN(ROPE_NAMES) ? ROPE_NAMES[t] : "?";
}

/* ---- error context and typed getters ------------------------------------ */

typedef struct {
    const char *name; /* file name for messages */
    char *err;
    size_t errlen;
} Ctx;

static int fail(const Ctx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Writes "name: message" into err; returns -1 so callers can `return fail(...)`. */
static int fail(const Ctx *x, const char *fmt, ...) {
    if (!x->errlen) return -1;
    int n = snprintf(x->err, x->errlen, "%s: ", x->name);
    if (n >= 0 && (size_t)n < x->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(x->err + n, x->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* A JSON value as it reads in the file, cut to fit messages. */
static void show(const cJSON *it, char *buf, size_t n) {
    char *s = cJSON_PrintUnformatted(it);
    if (!s) {
        snprintf(buf, n, "?");
        return;
    }
    if (strlen(s) > 40) snprintf(buf, n, "%.37s...", s);
    else snprintf(buf, n, "%s", s);
    cJSON_free(s);
}

/* The member, or NULL when it is absent or JSON null: for every optional
 * field, null means "not set", as it does for transformers. */
static const cJSON *member(const cJSON *obj, const char *key) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    return it && !cJSON_IsNull(it) ? it : NULL;
}

static int missing(const Ctx *x, const cJSON *obj, const char *prefix, const char *key, const char *expect) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    return fail(x, "%s \"%s%s\" (expected %s)", it ? "null field" : "missing field", prefix, key, expect);
}

/* *out = obj[key], an integer in [lo, hi]. Absent or null: *out = def, or an
 * error when required. Returns 1 if the value was present, 0 if not, -1. */
static int get_int(const Ctx *x, const cJSON *obj, const char *prefix, const char *key, int required, int def,
                   long long lo, long long hi, int *out) {
    char expect[64], v[48];
    if (lo == 1) snprintf(expect, sizeof expect, "a positive integer, at most %lld", hi);
    else snprintf(expect, sizeof expect, "an integer in %lld..%lld", lo, hi);
    const cJSON *it = member(obj, key);
    if (!it) {
        if (required) return missing(x, obj, prefix, key, expect);
        *out = def;
        return 0;
    }
    show(it, v, sizeof v);
    if (!cJSON_IsNumber(it)) return fail(x, "%s%s = %s is not a number (expected %s)", prefix, key, v, expect);
    double d = it->valuedouble;
    if (!isfinite(d) || d != floor(d) || d < (double)lo || d > (double)hi)
        return fail(x, "%s%s = %s (expected %s)", prefix, key, v, expect);
    *out = (int)d;
    return 1;
}

/* *out = obj[key], a finite number, > 0 when positive. Same returns as get_int. */
static int get_double(const Ctx *x, const cJSON *obj, const char *prefix, const char *key, int required, double def,
                      int positive, double *out) {
    const char *expect = positive ? "a number > 0" : "a finite number";
    char v[48];
    const cJSON *it = member(obj, key);
    if (!it) {
        if (required) return missing(x, obj, prefix, key, expect);
        *out = def;
        return 0;
    }
    show(it, v, sizeof v);
    if (!cJSON_IsNumber(it)) return fail(x, "%s%s = %s is not a number (expected %s)", prefix, key, v, expect);
    double d = it->valuedouble;
    if (!isfinite(d) || (positive && !(d > 0))) return fail(x, "%s%s = %s (expected %s)", prefix, key, v, expect);
    *out = d;
    return 1;
}

static int get_bool(const Ctx *x, const cJSON *obj, const char *key, int def, int *out) {
    const cJSON *it = member(obj, key);
    if (!it) {
        *out = def;
        return 0;
    }
    if (!cJSON_IsBool(it)) {
        char v[48];
        show(it, v, sizeof v);
        return fail(x, "%s = %s (expected true or false)", key, v);
    }
    *out = cJSON_IsTrue(it);
    return 1;
}

/* *out = obj[key] as a string, or NULL when absent or null. */
static int get_string(const Ctx *x, const cJSON *obj, const char *prefix, const char *key, const char *expect,
                      const char **out) {
    const cJSON *it = member(obj, key);
    *out = NULL;
    if (!it) return 0;
    if (!cJSON_IsString(it)) {
        char v[48];
        show(it, v, sizeof v);
        return fail(x, "%s%s = %s is not a string (expected %s)", prefix, key, v, expect);
    }
    *out = it->valuestring;
    return 1;
}

/* Python's json keeps the last of duplicate keys and cJSON the first; a file
 * that relies on either is refused rather than read differently. */
static int check_duplicates(const Ctx *x, const cJSON *obj, const char *prefix) {
    for (const cJSON *a = obj->child; a; a = a->next)
        for (const cJSON *b = a->next; b; b = b->next)
            if (a->string && b->string && !strcmp(a->string, b->string))
                return fail(x, "%s%s appears twice (expected each key once)", prefix, a->string);
    return 0;
}

/* ---- the parts of the config ---------------------------------------------- */

static int type_from_name(const char *s, int architecture) {
    for (size_t t = 0; t < PPA_ARRAY_LEN(TYPES); t++)
        if (!strcmp(s, architecture ? TYPES[t].architecture : TYPES[t].model_type)) return (int)t;
    return -1;
}

/* model_type decides, as for transformers' AutoModel; architectures[0],
 * when given, must name the causal-LM class of the same type. */
static int parse_type(const Ctx *x, const cJSON *root, ModelType *type) {
    const char *mt;
    int from_mt = -1, from_arch = -1;
    if (get_string(x, root, "", "model_type", "llama, mistral, qwen2 or qwen3", &mt) < 0) return -1;
    if (mt && (from_mt = type_from_name(mt, 0)) < 0)
        return fail(x, "model_type = \"%s\" is not supported (expected llama, mistral, qwen2 or qwen3)", mt);
    const cJSON *arch = member(root, "architectures");
    if (arch) {
        const char *expect = "an array of strings such as [\"LlamaForCausalLM\"]";
        if (!cJSON_IsArray(arch)) return fail(x, "architectures is not an array (expected %s)", expect);
        const cJSON *first = arch->child;
        if (first && !cJSON_IsString(first)) return fail(x, "architectures[0] is not a string (expected %s)", expect);
        if (first && (from_arch = type_from_name(first->valuestring, 1)) < 0)
            return fail(x,
                        "architectures[0] = \"%s\" is not supported (expected LlamaForCausalLM, MistralForCausalLM, "
                        "Qwen2ForCausalLM or Qwen3ForCausalLM)",
                        first->valuestring);
    }
    if (from_mt < 0 && from_arch < 0)
        return missing(x, root, "", "model_type", "llama, mistral, qwen2 or qwen3, or architectures");
    if (from_mt >= 0 && from_arch >= 0 && from_mt != from_arch)
        return fail(x, "architectures[0] = \"%s\" does not match model_type = \"%s\" (expected %s)",
                    TYPES[from_arch].architecture, mt, TYPES[from_mt].architecture);
    *type = (ModelType)(from_mt >= 0 ? from_mt : from_arch);
    return 0;
}

static int parse_sizes(const Ctx *x, const cJSON *root, ModelConfig *c) {
    const TypeInfo *ti = &TYPES[c->type];
    int head_dim_given = 0;
    if (get_int(x, root, "", "vocab_size", 1, 0, 1, MODEL_MAX_DIM, &c->vocab_size) < 0 ||
        get_int(x, root, "", "hidden_size", 1, 0, 1, MODEL_MAX_DIM, &c->hidden_size) < 0 ||
        get_int(x, root, "", "intermediate_size", 1, 0, 1, MODEL_MAX_DIM, &c->intermediate_size) < 0 ||
        get_int(x, root, "", "num_hidden_layers", 1, 0, 1, MODEL_MAX_LAYERS, &c->num_hidden_layers) < 0 ||
        get_int(x, root, "", "num_attention_heads", 1, 0, 1, MODEL_MAX_DIM, &c->num_attention_heads) < 0 ||
        get_int(x, root, "", "num_key_value_heads", 0, ti->kv_heads ? ti->kv_heads : c->num_attention_heads, 1,
                MODEL_MAX_DIM, &c->num_key_value_heads) < 0 ||
        get_int(x, root, "", "max_position_embeddings", 0, ti->max_position_embeddings, 1, INT_MAX,
                &c->max_position_embeddings) < 0 ||
        (head_dim_given = get_int(x, root, "", "head_dim", 0, ti->head_dim, 1, MODEL_MAX_DIM, &c->head_dim)) < 0)
        return -1;
    if (c->num_attention_heads % c->num_key_value_heads)
        return fail(x, "num_key_value_heads = %d does not divide num_attention_heads = %d", c->num_key_value_heads,
                    c->num_attention_heads);
    if (!c->head_dim) {
        if (c->hidden_size % c->num_attention_heads)
            return fail(x,
                        "hidden_size = %d is not divisible by num_attention_heads = %d (expected a multiple, or a "
                        "head_dim field)",
                        c->hidden_size, c->num_attention_heads);
        c->head_dim = c->hidden_size / c->num_attention_heads;
    }
    if (c->head_dim % 2)
        return fail(x, "head_dim = %d%s is odd (expected an even size: RoPE rotates dims j and j + head_dim/2)",
                    c->head_dim, head_dim_given ? "" : " (hidden_size / num_attention_heads)");
    return 0;
}

static int parse_activation_and_norm(const Ctx *x, const cJSON *root, ModelConfig *c) {
    const char *act;
    if (get_string(x, root, "", "hidden_act", "\"silu\"", &act) < 0) return -1;
    if (act && strcmp(act, "silu") && strcmp(act, "swish")) /* ACT2FN maps both to SiLU */
        return fail(x, "hidden_act = \"%s\" is not supported (expected \"silu\": the MLP is down(silu(gate) * up))",
                    act);
    if (get_double(x, root, "", "rms_norm_eps", 0, DEFAULT_RMS_NORM_EPS, 1, &c->rms_norm_eps) < 0) return -1;
    return get_bool(x, root, "tie_word_embeddings", 0, &c->tie_word_embeddings) < 0 ? -1 : 0;
}

/* Which bias and norm tensors exist, per type, as transformers builds them. */
static int parse_biases(const Ctx *x, const cJSON *root, ModelConfig *c) {
    int attention_bias, mlp_bias;
    if (get_bool(x, root, "attention_bias", 0, &attention_bias) < 0 || get_bool(x, root, "mlp_bias", 0, &mlp_bias) < 0)
        return -1;
    const char *tn = TYPES[c->type].model_type;
    if (mlp_bias && c->type != MODEL_LLAMA)
        return fail(x, "mlp_bias = true is not supported for %s (expected false: transformers builds its MLP without "
                       "biases)", tn);
    if (attention_bias && c->type == MODEL_MISTRAL)
        return fail(x, "attention_bias = true is not supported for mistral (expected false: transformers builds its "
                       "attention without biases)");
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
    show(it, v, sizeof v);
    if (cJSON_IsNull(it)) {
        *out = -1;
        return 0;
    }
    if (!cJSON_IsNumber(it) || it->valuedouble != floor(it->valuedouble) || !(it->valuedouble >= 0) ||
        !(it->valuedouble < vocab))
        return fail(x, "%s = %s is not a token id (expected an integer in 0..%d, vocab_size - 1)", what, v,
                    vocab - 1);
    *out = (int)it->valuedouble;
    return 0;
}

static int parse_tokens(const Ctx *x, const cJSON *root, ModelConfig *c) {
    const TypeInfo *ti = &TYPES[c->type];
    const cJSON *bos = cJSON_GetObjectItemCaseSensitive(root, "bos_token_id");
    const cJSON *eos = cJSON_GetObjectItemCaseSensitive(root, "eos_token_id");
    const cJSON *pad = member(root, "pad_token_id");
    char what[32];
    c->bos_token_id = ti->bos;
    if (bos && token_id(x, bos, "bos_token_id", c->vocab_size, &c->bos_token_id) < 0) return -1;
    if (!bos && ti->bos >= c->vocab_size)
        return fail(x, "bos_token_id (absent: %s default %d) is not a token id (expected a bos_token_id field, or "
                       "vocab_size > %d)", ti->model_type, ti->bos, ti->bos);
    c->n_eos = 0;
    if (!eos) {
        if (ti->eos >= c->vocab_size)
            return fail(x, "eos_token_id (absent: %s default %d) is not a token id (expected an eos_token_id field, "
                           "or vocab_size > %d)", ti->model_type, ti->eos, ti->eos);
        if (ti->eos >= 0) c->eos_token_ids[c->n_eos++] = ti->eos;
    } else if (cJSON_IsArray(eos)) {
        if (cJSON_GetArraySize(eos) > MODEL_MAX_EOS)
            return fail(x, "eos_token_id has %d entries (expected at most %d)", cJSON_GetArraySize(eos), MODEL_MAX_EOS);
        for (const cJSON *it = eos->child; it; it = it->next) {
            snprintf(what, sizeof what, "eos_token_id[%d]", c->n_eos);
            if (cJSON_IsNull(it)) return fail(x, "%s = null (expected a token id)", what);
            if (token_id(x, it, what, c->vocab_size, &c->eos_token_ids[c->n_eos]) < 0) return -1;
            c->n_eos++;
        }
    } else if (!cJSON_IsNull(eos)) {
        if (!cJSON_IsNumber(eos)) {
            char v[48];
            show(eos, v, sizeof v);
            return fail(x, "eos_token_id = %s (expected a token id or a list of token ids)", v);
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
    if (get_string(x, root, "", "torch_dtype", expect, &a) < 0 || get_string(x, root, "", "dtype", expect, &b) < 0)
        return -1;
    if (a && b && strcmp(a, b))
        return fail(x, "torch_dtype = \"%s\" and dtype = \"%s\" disagree (expected one dtype)", a, b);
    const char *d = b ? b : a ? a : "";
    if (strlen(d) >= MODEL_DTYPE_LEN) return fail(x, "dtype = \"%.40s\" is too long (expected %s)", d, expect);
    memcpy(c->dtype, d, strlen(d) + 1);
    return 0;
}

/* ---- RoPE ------------------------------------------------------------------ */

static int rope_type_of(const Ctx *x, const cJSON *d, const char *key, int required, RopeType *t) {
    char prefix[32];
    snprintf(prefix, sizeof prefix, "%s.", key);
    const char *a, *b, *expect = "\"default\", \"linear\" or \"llama3\"";
    if (get_string(x, d, prefix, "rope_type", expect, &a) < 0 || get_string(x, d, prefix, "type", expect, &b) < 0)
        return -1;
    if (a && b && strcmp(a, b))
        return fail(x, "%s.rope_type = \"%s\" and %s.type = \"%s\" disagree (expected one RoPE type)", key, a, key, b);
    const char *name = a ? a : b;
    if (!name) {
        if (required) return missing(x, d, prefix, "rope_type", expect);
        name = "default";
    }
    for (size_t i = 0; i < PPA_ARRAY_LEN(ROPE_NAMES); i++)
        if (!strcmp(name, ROPE_NAMES[i])) {
            *t = (RopeType)i;
            return 0;
        }
    return fail(x, "%s.rope_type = \"%s\" is not supported (expected %s; ppa does not implement dynamic, yarn, "
                   "longrope or other scalings)", key, name, expect);
}

/* Reads one RoPE dict (v4 rope_scaling or v5 rope_parameters) into r;
 * *theta_set tells whether it carried rope_theta. */
static int parse_rope_dict(const Ctx *x, const cJSON *d, const char *key, RopeConfig *r, int *theta_set) {
    char prefix[32];
    snprintf(prefix, sizeof prefix, "%s.", key);
    if (!cJSON_IsObject(d)) return fail(x, "%s is not an object (expected an object or null)", key);
    if (check_duplicates(x, d, prefix) < 0) return -1;
    for (const cJSON *it = d->child; it; it = it->next)
        if (cJSON_IsObject(it))
            return fail(x, "%s.%s: per-layer-type RoPE is not supported (expected one flat RoPE object)", key,
                        it->string);
    if (rope_type_of(x, d, key, !strcmp(key, "rope_scaling"), &r->type) < 0) return -1;
    double prf;
    if (get_double(x, d, prefix, "partial_rotary_factor", 0, 1.0, 1, &prf) < 0) return -1;
    if (prf != 1.0) return fail(x, "%s.partial_rotary_factor = %g is not supported (expected 1)", key, prf);
    if ((*theta_set = get_double(x, d, prefix, "rope_theta", 0, DEFAULT_ROPE_THETA, 1, &r->theta)) < 0) return -1;
    r->factor = 1.0;
    if (r->type == ROPE_DEFAULT) return 0;
    if (get_double(x, d, prefix, "factor", 1, 0, 1, &r->factor) < 0) return -1;
    if (r->type == ROPE_LINEAR) return 0;
    if (get_double(x, d, prefix, "low_freq_factor", 1, 0, 1, &r->low_freq_factor) < 0 ||
        get_double(x, d, prefix, "high_freq_factor", 1, 0, 1, &r->high_freq_factor) < 0 ||
        get_int(x, d, prefix, "original_max_position_embeddings", 1, 0, 1, INT_MAX,
                &r->original_max_position_embeddings) < 0)
        return -1;
    if (!(r->high_freq_factor > r->low_freq_factor))
        return fail(x, "%s.high_freq_factor = %g is not above %s.low_freq_factor = %g (expected high > low)", key,
                    r->high_freq_factor, key, r->low_freq_factor);
    return 0;
}

/* The first field on which two RoPE dicts differ (theta aside), or NULL. */
static const char *rope_difference(const RopeConfig *a, const RopeConfig *b, char *va, char *vb, size_t n) {
    if (a->type != b->type) {
        snprintf(va, n, "\"%s\"", ROPE_NAMES[a->type]);
        snprintf(vb, n, "\"%s\"", ROPE_NAMES[b->type]);
        return "rope_type";
    }
    const struct {
        const char *name;
        double x, y;
    } f[] = {{"factor", a->factor, b->factor},
             {"low_freq_factor", a->low_freq_factor, b->low_freq_factor},
             {"high_freq_factor", a->high_freq_factor, b->high_freq_factor},
             {"original_max_position_embeddings", a->original_max_position_embeddings,
              b->original_max_position_embeddings}};
    for (size_t i = 0; i < PPA_ARRAY_LEN(f); i++)
        if (f[i].x != f[i].y) {
            snprintf(va, n, "%.17g", f[i].x);
            snprintf(vb, n, "%.17g", f[i].y);
            return f[i].name;
        }
    return NULL;
}

/* rope_theta + rope_scaling (v4) and rope_parameters (v5): either, or both
 * when they agree. */
static int parse_rope(const Ctx *x, const cJSON *root, ModelConfig *c) {
    double top_theta, prf;
    int top_set, v5_theta_set = 0, v4_theta_set = 0;
    if ((top_set = get_double(x, root, "", "rope_theta", 0, DEFAULT_ROPE_THETA, 1, &top_theta)) < 0) return -1;
    if (get_double(x, root, "", "partial_rotary_factor", 0, 1.0, 1, &prf) < 0) return -1;
    if (prf != 1.0) return fail(x, "partial_rotary_factor = %g is not supported (expected 1: RoPE on every dim)", prf);
    const cJSON *v4 = member(root, "rope_scaling"), *v5 = member(root, "rope_parameters");
    RopeConfig r4 = {ROPE_DEFAULT, DEFAULT_ROPE_THETA, 1.0, 0, 0, 0}, r5 = r4;
    if (v4 && parse_rope_dict(x, v4, "rope_scaling", &r4, &v4_theta_set) < 0) return -1;
    if (v5 && parse_rope_dict(x, v5, "rope_parameters", &r5, &v5_theta_set) < 0) return -1;
    char a[32], b[32];
    const char *diff = v4 && v5 ? rope_difference(&r5, &r4, a, b, sizeof a) : NULL;
    if (diff)
        return fail(x, "rope_parameters.%s = %s and rope_scaling.%s = %s disagree (expected one of the two dicts, or "
                       "the same values in both)", diff, a, diff, b);
    if (v5_theta_set && top_set && r5.theta != top_theta)
        return fail(x, "rope_parameters.rope_theta = %.17g and rope_theta = %.17g disagree (expected one value)",
                    r5.theta, top_theta);
    c->rope = v5 ? r5 : r4;
    c->rope.theta = v5_theta_set ? r5.theta : top_theta;
    /* not a v4 key, but v5 reads rope_scaling as rope_parameters */
    if (v4 && v4_theta_set && r4.theta != c->rope.theta)
        return fail(x, "rope_scaling.rope_theta = %.17g and rope_theta = %.17g disagree (expected one value)",
                    r4.theta, c->rope.theta);
    return 0;
}

/* ---- sliding window --------------------------------------------------------- */

/* qwen2/qwen3 layer_types: index of the first "sliding_attention" layer, or
 * num_hidden_layers when none slides. */
static int first_sliding_layer(const Ctx *x, const cJSON *lt, int L, int *first) {
    if (!cJSON_IsArray(lt) || cJSON_GetArraySize(lt) != L)
        return fail(x, "layer_types is not an array of %d strings (expected one entry per layer)", L);
    int i = 0;
    *first = L;
    for (const cJSON *it = lt->child; it; it = it->next, i++) {
        int sliding = cJSON_IsString(it) && !strcmp(it->valuestring, "sliding_attention");
        if (!sliding && !(cJSON_IsString(it) && !strcmp(it->valuestring, "full_attention")))
            return fail(x, "layer_types[%d] is not \"full_attention\" or \"sliding_attention\"", i);
        if (sliding && *first == L) *first = i;
    }
    return 0;
}

static int parse_sliding(const Ctx *x, const cJSON *root, ModelConfig *c) {
    int window, use, mwl, first;
    if (c->type == MODEL_LLAMA) return 0;
    const cJSON *sw = cJSON_GetObjectItemCaseSensitive(root, "sliding_window");
    if (get_int(x, root, "", "sliding_window", 0, DEFAULT_SLIDING_WINDOW, 1, INT_MAX, &window) < 0) return -1;
    if (sw && cJSON_IsNull(sw)) window = 0; /* null: no window; absent: the class default */
    if (c->type == MODEL_MISTRAL) {
        c->sliding_window = window;
        return 0;
    }
    if (get_bool(x, root, "use_sliding_window", 0, &use) < 0 ||
        get_int(x, root, "", "max_window_layers", 0, DEFAULT_MAX_WINDOW_LAYERS, 0, INT_MAX, &mwl) < 0)
        return -1;
    const cJSON *lt = member(root, "layer_types");
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
    if (!cJSON_IsObject(root)) return fail(x, "the top level is not an object (expected a config.json object)");
    if (check_duplicates(x, root, "") < 0) return -1;
    if (member(root, "quantization_config"))
        return fail(x, "quantization_config: quantized checkpoints are not supported (expected float32, float16 or "
                       "bfloat16 weights)");
    if (parse_type(x, root, &c->type) < 0 || parse_sizes(x, root, c) < 0 || parse_activation_and_norm(x, root, c) < 0 ||
        parse_biases(x, root, c) < 0 || parse_tokens(x, root, c) < 0 || parse_dtype(x, root, c) < 0 ||
        parse_rope(x, root, c) < 0 || parse_sliding(x, root, c) < 0)
        return -1;
    return 0;
}

int model_config_parse(ModelConfig *c, const char *json_text, const char *name, char *err, size_t errlen) {
    const Ctx x = {name ? name : "config.json", err, errlen};
    memset(c, 0, sizeof *c);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(json_text, &end, 1);
    if (!root) {
        int line = 1, col = 1;
        for (const char *p = json_text; end && p < end && *p; p++) {
            if (*p == '\n') line++, col = 1;
            else col++;
        }
        return fail(&x, "invalid JSON at line %d, column %d (expected a config.json object)", line, col);
    }
    int rc = parse_root(&x, root, c);
    cJSON_Delete(root);
    return rc;
}

/* The whole file as a NUL-terminated string; NULL with a message. */
static char *read_text(const Ctx *x, const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fail(x, "cannot open (%s)", strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = xmalloc(cap);
    for (;;) {
        if (n + 1 >= cap) {
            if (cap >= ((size_t)64 << 20)) {
                fail(x, "larger than 64 MiB (expected a config.json of a few KiB)");
                break;
            }
            buf = xrealloc(buf, cap *= 2);
        }
        size_t got = fread(buf + n, 1, cap - 1 - n, f);
        n += got;
        if (got) continue;
        if (ferror(f)) fail(x, "read error (%s)", strerror(errno));
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
static char *config_path(const char *path) {
    struct stat st;
    size_t n = strlen(path);
    if (stat(path, &st) || !S_ISDIR(st.st_mode)) return memcpy(xmalloc(n + 1), path, n + 1);
    char *p = xmalloc(n + sizeof "/config.json");
    snprintf(p, n + sizeof "/config.json", "%s%sconfig.json", path, n && path[n - 1] == '/' ? "" : "/");
    return p;
}

int model_config_load(ModelConfig *c, const char *path, char *err, size_t errlen) {
    char *file = config_path(path);
    const Ctx x = {file, err, errlen};
    char *text = read_text(&x, file);
    int rc = text ? model_config_parse(c, text, file, err, errlen) : -1;
    free(text);
    free(file);
    return rc;
}

int model_config_check_seq_len(const ModelConfig *c, int T, char *err, size_t errlen) {
    if (!c->sliding_window || T <= c->sliding_window) return 0;
    snprintf(err, errlen,
             "a sequence of %d tokens exceeds the %s sliding window of %d (ppa computes full causal attention, which "
             "equals sliding-window attention only up to %d tokens)",
             T, model_type_name(c->type), c->sliding_window, c->sliding_window);
    return -1;
}

/* ---- RoPE inverse frequencies --------------------------------------------------- */

void model_rope_inv_freq(const ModelConfig *c, double *inv_freq /* [head_dim/2] */) {
    const RopeConfig *r = &c->rope;
    const int hd = c->head_dim;
    for (int j = 0; j < hd / 2; j++) {
        double f = 1.0 / pow(r->theta, (double)(2 * j) / hd); /* transformers: 1 / base^(arange(0, hd, 2)/hd) */
        if (r->type == ROPE_LINEAR) f /= r->factor;
        if (r->type == ROPE_LLAMA3) {
            const double orig = r->original_max_position_embeddings, lo = r->low_freq_factor, hi = r->high_freq_factor;
            const double wavelen = 2 * M_PI / f;
            if (wavelen > orig / lo) f /= r->factor;                /* low frequencies: interpolate */
            else if (!(wavelen < orig / hi)) {                      /* the band between: blend */
                const double smooth = (orig / wavelen - lo) / (hi - lo);
                f = (1 - smooth) * f / r->factor + smooth * f;
            }                                                       /* high frequencies: unchanged */
        }
        inv_freq[j] = f;
    }
}

/* ---- tensor table ------------------------------------------------------------------ */

static int tensors_per_layer(const ModelConfig *c) {
    return 9 + 3 * c->qkv_bias + c->o_bias + 3 * c->mlp_bias + 2 * c->qk_norm; /* 2 norms + 7 weights */
}

int model_tensor_count(const ModelConfig *c) {
    return 2 + !c->tie_word_embeddings + c->num_hidden_layers * tensors_per_layer(c);
}

int64_t model_param_count(const ModelConfig *c) {
    const int64_t V = c->vocab_size, H = c->hidden_size, I = c->intermediate_size, hd = c->head_dim;
    const int64_t q = c->num_attention_heads * hd, kv = c->num_key_value_heads * hd;
    int64_t layer = 2 * H                                  /* input_layernorm, post_attention_layernorm */
                    + q * H + 2 * kv * H + H * q           /* q, k, v, o */
                    + 3 * I * H                            /* gate, up, down */
                    + c->qkv_bias * (q + 2 * kv) + c->o_bias * H + c->mlp_bias * (2 * I + H) + c->qk_norm * 2 * hd;
    return V * H * (c->tie_word_embeddings ? 1 : 2) + H + c->num_hidden_layers * layer;
}

typedef struct {
    ModelTensorSpec *t;
    int n;
} Table;

static void add(Table *tb, ModelTensorKind kind, int layer, int64_t d0, int64_t d1, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

static void add(Table *tb, ModelTensorKind kind, int layer, int64_t d0, int64_t d1 /* 0: 1-D */, const char *fmt,
                ...) {
    ModelTensorSpec *s = &tb->t[tb->n++];
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(s->name, sizeof s->name, fmt, ap);
    va_end(ap);
    if (len < 0 || (size_t)len >= sizeof s->name) ppa_die(1, "tensor name too long (internal: %d chars)", len);
    s->ndim = d1 ? 2 : 1;
    s->shape[0] = d0;
    s->shape[1] = d1;
    s->numel = d1 ? d0 * d1 : d0;
    s->kind = kind;
    s->layer = layer;
}

/* A projection's .weight [out, in] and, when present, its .bias [out]. */
static void add_linear(Table *tb, int layer, const char *name, int64_t out, int64_t in, int bias) {
    add(tb, MODEL_TENSOR_MATRIX, layer, out, in, "model.layers.%d.%s.weight", layer, name);
    if (bias) add(tb, MODEL_TENSOR_BIAS, layer, out, 0, "model.layers.%d.%s.bias", layer, name);
}

int model_tensor_table(const ModelConfig *c, ModelTensorSpec **out) {
    const int64_t V = c->vocab_size, H = c->hidden_size, I = c->intermediate_size, hd = c->head_dim;
    const int64_t q = c->num_attention_heads * hd, kv = c->num_key_value_heads * hd;
    Table tb = {xcalloc((size_t)model_tensor_count(c), sizeof(ModelTensorSpec)), 0};
    add(&tb, MODEL_TENSOR_MATRIX, -1, V, H, "model.embed_tokens.weight");
    for (int i = 0; i < c->num_hidden_layers; i++) {
        add(&tb, MODEL_TENSOR_NORM, i, H, 0, "model.layers.%d.input_layernorm.weight", i);
        add_linear(&tb, i, "self_attn.q_proj", q, H, c->qkv_bias);
        add_linear(&tb, i, "self_attn.k_proj", kv, H, c->qkv_bias);
        add_linear(&tb, i, "self_attn.v_proj", kv, H, c->qkv_bias);
        add_linear(&tb, i, "self_attn.o_proj", H, q, c->o_bias);
        if (c->qk_norm) {
            add(&tb, MODEL_TENSOR_NORM, i, hd, 0, "model.layers.%d.self_attn.q_norm.weight", i);
            add(&tb, MODEL_TENSOR_NORM, i, hd, 0, "model.layers.%d.self_attn.k_norm.weight", i);
        }
        add(&tb, MODEL_TENSOR_NORM, i, H, 0, "model.layers.%d.post_attention_layernorm.weight", i);
        add_linear(&tb, i, "mlp.gate_proj", I, H, c->mlp_bias);
        add_linear(&tb, i, "mlp.up_proj", I, H, c->mlp_bias);
        add_linear(&tb, i, "mlp.down_proj", H, I, c->mlp_bias);
    }
    add(&tb, MODEL_TENSOR_NORM, -1, H, 0, "model.norm.weight");
    if (!c->tie_word_embeddings) add(&tb, MODEL_TENSOR_MATRIX, -1, V, H, "lm_head.weight");
    if (tb.n != model_tensor_count(c)) ppa_die(1, "tensor table: %d entries, expected %d", tb.n, model_tensor_count(c));
    *out = tb.t;
    return tb.n;
}

/* ---- writer ------------------------------------------------------------------------- */

/* Python's repr of a float: the fewest digits that read back as exactly v,
 * fixed notation for exponents -4..15 (with ".0" when integral), else
 * exponent notation; so "500000.0", "0.02", "1e-05". */
static void put_double(FILE *f, double v) {
    char buf[48];
    int p = 1;
    for (; p < 17; p++) {
        snprintf(buf, sizeof buf, "%.*e", p - 1, v);
        if (strtod(buf, NULL) == v) break;
    }
    snprintf(buf, sizeof buf, "%.*e", p - 1, v);
    const int exp10 = atoi(strchr(buf, 'e') + 1);
    if (exp10 >= -4 && exp10 < 16) {
        snprintf(buf, sizeof buf, "%.*f", p - 1 - exp10 > 0 ? p - 1 - exp10 : 0, v);
        if (!strchr(buf, '.')) strcat(buf, ".0");
    }
    fputs(buf, f);
}

static void put_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') fprintf(f, "\\%c", ch);
        else if (ch < 0x20) fprintf(f, "\\u%04x", ch);
        else fputc(ch, f);
    }
    fputc('"', f);
}

/* Emits "key": with the comma and indentation of transformers' output. */
typedef struct {
    FILE *f;
    int n;
} Emit;

static void key(Emit *e, const char *k) {
    fprintf(e->f, "%s\n  \"%s\": ", e->n++ ? "," : "", k);
}

static void put_int_or_null(FILE *f, int v) {
    if (v < 0) fputs("null", f);
    else fprintf(f, "%d", v);
}

static void put_rope_scaling(FILE *f, const RopeConfig *r) {
    if (r->type == ROPE_DEFAULT) {
        fputs("null", f);
        return;
    }
    fputs("{\n    \"factor\": ", f);
    put_double(f, r->factor);
    if (r->type == ROPE_LLAMA3) {
        fputs(",\n    \"high_freq_factor\": ", f);
        put_double(f, r->high_freq_factor);
        fputs(",\n    \"low_freq_factor\": ", f);
        put_double(f, r->low_freq_factor);
        fprintf(f, ",\n    \"original_max_position_embeddings\": %d", r->original_max_position_embeddings);
    }
    fprintf(f, ",\n    \"rope_type\": \"%s\"\n  }", ROPE_NAMES[r->type]);
}

/* The keys in transformers' (sorted) order, only those the type's config
 * class reads. */
static void write_json(FILE *f, const ModelConfig *c) {
    const int qwen = c->type == MODEL_QWEN2 || c->type == MODEL_QWEN3;
    Emit e = {f, 0};
    fputc('{', f);
    key(&e, "architectures");
    fprintf(f, "[\n    \"%s\"\n  ]", TYPES[c->type].architecture);
    if (c->type == MODEL_LLAMA || c->type == MODEL_QWEN3) {
        key(&e, "attention_bias");
        fputs(c->o_bias ? "true" : "false", f);
    }
    key(&e, "bos_token_id");
    put_int_or_null(f, c->bos_token_id);
    key(&e, "eos_token_id");
    if (c->n_eos == 0) fputs("null", f);
    else if (c->n_eos == 1) fprintf(f, "%d", c->eos_token_ids[0]);
    else {
        fputc('[', f);
        for (int i = 0; i < c->n_eos; i++) fprintf(f, "%s\n    %d", i ? "," : "", c->eos_token_ids[i]);
        fputs("\n  ]", f);
    }
    key(&e, "head_dim");
    fprintf(f, "%d", c->head_dim);
    key(&e, "hidden_act");
    fputs("\"silu\"", f);
    key(&e, "hidden_size");
    fprintf(f, "%d", c->hidden_size);
    key(&e, "intermediate_size");
    fprintf(f, "%d", c->intermediate_size);
    key(&e, "max_position_embeddings");
    fprintf(f, "%d", c->max_position_embeddings);
    if (qwen) {
        key(&e, "max_window_layers");
        fprintf(f, "%d", c->max_window_layers);
    }
    if (c->type == MODEL_LLAMA) {
        key(&e, "mlp_bias");
        fputs(c->mlp_bias ? "true" : "false", f);
    }
    key(&e, "model_type");
    fprintf(f, "\"%s\"", TYPES[c->type].model_type);
    key(&e, "num_attention_heads");
    fprintf(f, "%d", c->num_attention_heads);
    key(&e, "num_hidden_layers");
    fprintf(f, "%d", c->num_hidden_layers);
    key(&e, "num_key_value_heads");
    fprintf(f, "%d", c->num_key_value_heads);
    if (c->pad_token_id >= 0) {
        key(&e, "pad_token_id");
        fprintf(f, "%d", c->pad_token_id);
    }
    key(&e, "rms_norm_eps");
    put_double(f, c->rms_norm_eps);
    key(&e, "rope_scaling");
    put_rope_scaling(f, &c->rope);
    key(&e, "rope_theta");
    put_double(f, c->rope.theta);
    if (c->type != MODEL_LLAMA) {
        key(&e, "sliding_window");
        put_int_or_null(f, c->sliding_window ? c->sliding_window : -1);
    }
    key(&e, "tie_word_embeddings");
    fputs(c->tie_word_embeddings ? "true" : "false", f);
    if (c->dtype[0]) {
        key(&e, "torch_dtype");
        put_string(f, c->dtype);
    }
    key(&e, "transformers_version");
    fputs("\"" WRITTEN_TRANSFORMERS_VERSION "\"", f);
    if (qwen) {
        key(&e, "use_sliding_window");
        fputs(c->sliding_window ? "true" : "false", f);
    }
    key(&e, "vocab_size");
    fprintf(f, "%d", c->vocab_size);
    fputs("\n}\n", f);
}

/* fsync of the folder makes the rename itself durable. */
static int sync_dir(const char *file) {
    const char *slash = strrchr(file, '/');
    char *dir = slash ? strndup(file, slash == file ? 1 : (size_t)(slash - file)) : strdup(".");
    if (!dir) ppa_die(1, "out of memory");
    int fd = open(dir, O_RDONLY | O_DIRECTORY), rc = 0;
    free(dir);
    if (fd < 0) return -1;
    if (fsync(fd) && errno != EINVAL) rc = -1; /* some file systems cannot sync folders */
    close(fd);
    return rc;
}

/* The first field on which a and b differ, or NULL; field by field, since
 * struct padding is not part of the value. */
const char *model_config_difference(const ModelConfig *a, const ModelConfig *b) {
#define SAME(f) \
    if (memcmp(&a->f, &b->f, sizeof a->f)) return #f
    SAME(type); SAME(vocab_size); SAME(hidden_size); SAME(intermediate_size); SAME(num_hidden_layers);
    SAME(num_attention_heads); SAME(num_key_value_heads); SAME(head_dim); SAME(max_position_embeddings);
    SAME(rms_norm_eps); SAME(tie_word_embeddings); SAME(qkv_bias); SAME(o_bias); SAME(mlp_bias); SAME(qk_norm);
    SAME(bos_token_id); SAME(n_eos); SAME(eos_token_ids); SAME(pad_token_id); SAME(dtype); SAME(rope.type);
    SAME(rope.theta); SAME(rope.factor); SAME(rope.low_freq_factor); SAME(rope.high_freq_factor);
    SAME(rope.original_max_position_embeddings); SAME(sliding_window); SAME(max_window_layers);
#undef SAME
    return NULL;
}

/* The JSON text of c, after checking that it reads back as c: this refuses
 * hand-built configs that break a rule of the parser or that config.json
 * cannot express (e.g. a llama with q/k/v biases but no o_proj bias). */
static char *render_checked(const Ctx *x, const ModelConfig *c) {
    if ((unsigned)c->type >= PPA_ARRAY_LEN(TYPES) || (unsigned)c->rope.type >= PPA_ARRAY_LEN(ROPE_NAMES)) {
        fail(x, "model type %d / RoPE type %d is not valid (expected a ModelType and a RopeType)", (int)c->type,
             (int)c->rope.type);
        return NULL;
    }
    char *text = NULL, name[600];
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (!m) ppa_die(1, "out of memory (open_memstream: %s)", strerror(errno));
    write_json(m, c);
    if (fclose(m)) ppa_die(1, "out of memory (open_memstream: %s)", strerror(errno));
    ModelConfig back;
    snprintf(name, sizeof name, "%s (not written)", x->name);
    const char *diff = NULL;
    if (model_config_parse(&back, text, name, x->err, x->errlen) ||
        ((diff = model_config_difference(c, &back)) &&
         fail(x, "not written: %s cannot be expressed in a %s config.json (expected a config as model_config_parse "
                 "returns it)", diff, TYPES[c->type].model_type))) {
        free(text);
        return NULL;
    }
    return text;
}

int model_config_write(const ModelConfig *c, const char *path, char *err, size_t errlen) {
    char *file = config_path(path);
    const Ctx x = {file, err, errlen};
    char *text = render_checked(&x, c), *tmp = NULL;
    int rc = -1;
    if (!text) goto out;
    size_t n = strlen(file) + sizeof ".tmp.XXXXXX";
    tmp = xmalloc(n);
    snprintf(tmp, n, "%s.tmp.XXXXXX", file);
    int fd = mkstemp(tmp);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        fail(&x, "cannot create a temporary file %s (%s)", tmp, strerror(errno));
        if (fd >= 0) close(fd), unlink(tmp);
        goto out;
    }
    fchmod(fd, 0644); /* mkstemp creates 0600; a config is meant to be shared */
    fputs(text, f);
    int bad = fflush(f) || ferror(f) || fsync(fd);
    int saved = errno;
    if (fclose(f) || bad) {
        fail(&x, "cannot write %s (%s)", tmp, strerror(bad ? saved : errno));
        unlink(tmp);
        goto out;
    }
    if (rename(tmp, file)) {
        fail(&x, "cannot rename %s into place (%s)", tmp, strerror(errno));
        unlink(tmp);
        goto out;
    }
    if (sync_dir(file)) {
        fail(&x, "written, but the folder could not be synced (%s)", strerror(errno));
        goto out;
    }
    rc = 0;
out:
    free(text);
    free(tmp);
    free(file);
    return rc;
}

/* ---- summary ------------------------------------------------------------------------ */

typedef struct {
    char *buf;
    size_t len, pos;
} Sb;

static void sb(Sb *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* snprintf that appends and keeps counting past the end of the buffer. */
static void sb(Sb *s, const char *fmt, ...) {
    size_t room = s->pos < s->len ? s->len - s->pos : 0;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(room ? s->buf + s->pos : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0) s->pos += (size_t)n;
}

/* 8030261248 -> "8,030,261,248" */
static void sb_grouped(Sb *s, int64_t v) {
    char d[24];
    int n = snprintf(d, sizeof d, "%lld", (long long)v);
    for (int i = 0; i < n; i++) sb(s, "%s%c", i && d[i - 1] != '-' && (n - i) % 3 == 0 ? "," : "", d[i]);
}

static void sb_token(Sb *s, const char *what, int id) {
    if (id < 0) sb(s, "%s none", what);
    else sb(s, "%s %d", what, id);
}

int model_config_describe(const ModelConfig *c, char *buf, size_t len) {
    Sb s = {buf, len, 0};
    const RopeConfig *r = &c->rope;
    if (len) buf[0] = 0;
    sb(&s, "%s (%s): %d layers, hidden %d, %d heads / %d kv heads", model_type_name(c->type),
       model_architecture_name(c->type), c->num_hidden_layers, c->hidden_size, c->num_attention_heads,
       c->num_key_value_heads);
    if (c->num_key_value_heads > 0 && c->num_key_value_heads != c->num_attention_heads)
        sb(&s, " (GQA, %d query heads per kv head)", c->num_attention_heads / c->num_key_value_heads);
    sb(&s, ", head_dim %d%s, intermediate %d (SwiGLU), vocab %d, max positions %d, rms_norm_eps %g; RoPE %s, "
           "theta %.10g",
       c->head_dim, c->head_dim * c->num_attention_heads != c->hidden_size ? " (heads x head_dim != hidden)" : "",
       c->intermediate_size, c->vocab_size, c->max_position_embeddings, c->rms_norm_eps, model_rope_type_name(r->type),
       r->theta);
    if (r->type != ROPE_DEFAULT) sb(&s, ", factor %g", r->factor);
    if (r->type == ROPE_LLAMA3)
        sb(&s, ", low_freq_factor %g, high_freq_factor %g, original_max_position_embeddings %d", r->low_freq_factor,
           r->high_freq_factor, r->original_max_position_embeddings);
    sb(&s, "; lm_head %s; biases:", c->tie_word_embeddings ? "tied to embed_tokens" : "untied");
    if (!c->qkv_bias && !c->o_bias && !c->mlp_bias) sb(&s, " none");
    sb(&s, "%s%s%s", c->qkv_bias ? " q/k/v" : "", c->o_bias ? " o" : "", c->mlp_bias ? " mlp" : "");
    if (c->qk_norm) sb(&s, "; q_norm/k_norm per head");
    sb(&s, "; ");
    sb_token(&s, "bos", c->bos_token_id);
    sb(&s, ", eos [");
    for (int i = 0; i < c->n_eos; i++) sb(&s, "%s%d", i ? ", " : "", c->eos_token_ids[i]);
    sb(&s, "], ");
    sb_token(&s, "pad", c->pad_token_id);
    sb(&s, "; dtype %s; ", c->dtype[0] ? c->dtype : "unspecified");
    if (c->sliding_window) sb(&s, "sliding window %d (from layer %d)", c->sliding_window, c->max_window_layers);
    else sb(&s, "no sliding window");
    sb(&s, "; ");
    sb_grouped(&s, model_param_count(c));
    sb(&s, " parameters in %d tensors.", model_tensor_count(c));
    return (int)s.pos;
}
