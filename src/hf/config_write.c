/* config_write.c: ModelConfig -> text. config.json as transformers writes
 * it (sorted keys, Python float repr, the v4 RoPE form), refused unless it
 * reads back as the same config, then written atomically; the field-by-field
 * comparison that check uses; the one-paragraph summary of `ppa inspect`.
 *
 * Not here: reading config.json (config.c, rope.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/common.h"
#include "hf/config.h"
#include "hf/internal.h"
#include "io/atomic.h"

#define WRITTEN_TRANSFORMERS_VERSION "4.51.0" /* first release with Qwen3 */

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
    fprintf(f, ",\n    \"rope_type\": \"%s\"\n  }", rope_type_name(r->type));
}

static int cmp_name(const void *a, const void *b) { return strcmp(a, b); }

/* id2label {"0": "LABEL_0", ...} or label2id {"LABEL_0": 0, ...}, as
 * PretrainedConfig writes them; the keys sort as strings, "10" before "2" */
static void put_labels(Emit *e, int n, const char *which) {
    int inverse = !strcmp(which, "label2id");
    key(e, which);
    fputc('{', e->f);
    char (*names)[16] = xmalloc(sizeof *names * (size_t)n);
    for (int i = 0; i < n; i++) snprintf(names[i], sizeof names[i], "%d", i);
    qsort(names, (size_t)n, sizeof *names, cmp_name);
    for (int i = 0; i < n; i++) {
        if (inverse) fprintf(e->f, "%s\n    \"LABEL_%s\": %s", i ? "," : "", names[i], names[i]);
        else fprintf(e->f, "%s\n    \"%s\": \"LABEL_%s\"", i ? "," : "", names[i], names[i]);
    }
    fputs("\n  }", e->f);
    free(names);
}

/* The keys in transformers' (sorted) order, only those the type's config
 * class reads. */
static void write_json(FILE *f, const ModelConfig *c) {
    const int qwen = c->type == MODEL_QWEN2 || c->type == MODEL_QWEN3;
    Emit e = {f, 0};
    fputc('{', f);
    key(&e, "architectures");
    fprintf(f, "[\n    \"%s\"\n  ]", model_config_architecture(c));
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
    if (c->head == HEAD_SCORE) put_labels(&e, c->num_labels, "id2label");
    key(&e, "intermediate_size");
    fprintf(f, "%d", c->intermediate_size);
    if (c->head == HEAD_SCORE) put_labels(&e, c->num_labels, "label2id");
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
    fprintf(f, "\"%s\"", CONFIG_TYPES[c->type].model_type);
    key(&e, "num_attention_heads");
    fprintf(f, "%d", c->num_attention_heads);
    key(&e, "num_hidden_layers");
    fprintf(f, "%d", c->num_hidden_layers);
    key(&e, "num_key_value_heads");
    fprintf(f, "%d", c->num_key_value_heads);
    if (c->head == HEAD_REGRESSION) {
        key(&e, "num_objectives");
        fprintf(f, "%d", c->num_labels);
    }
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
    SAME(rope.original_max_position_embeddings); SAME(sliding_window); SAME(max_window_layers); SAME(head);
    SAME(num_labels);
#undef SAME
    return NULL;
}

/* The JSON text of c, after checking that it reads back as c: this refuses
 * hand-built configs that break a rule of the parser or that config.json
 * cannot express (e.g. a llama with q/k/v biases but no o_proj bias). */
static char *render_checked(const Ctx *x, const ModelConfig *c) {
    if ((unsigned)c->type >= PPA_ARRAY_LEN(CONFIG_TYPES) ||
        !strcmp(rope_type_name(c->rope.type), "?")) {
        config_fail(x, "model type %d / RoPE type %d is not valid (expected a ModelType and a RopeType)", (int)c->type,
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
         config_fail(x, "not written: %s cannot be expressed in a %s config.json (expected a config as "
                        "model_config_parse returns it)", diff, CONFIG_TYPES[c->type].model_type))) {
        free(text);
        return NULL;
    }
    return text;
}

int model_config_write(const ModelConfig *c, const char *path, char *err, size_t errlen) {
    char *file = config_path(path);
    const Ctx x = {file, err, errlen};
    char *text = render_checked(&x, c);
    /* written as every output is (io/atomic.h): a new file renamed into place, its mode 0666 less the umask */
    int rc = text ? atomic_write_bytes(file, text, strlen(text), err, errlen) : -1;
    free(text);
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
       model_config_architecture(c), c->num_hidden_layers, c->hidden_size, c->num_attention_heads,
       c->num_key_value_heads);
    if (c->num_key_value_heads > 0 && c->num_key_value_heads != c->num_attention_heads)
        sb(&s, " (GQA, %d query heads per kv head)", c->num_attention_heads / c->num_key_value_heads);
    sb(&s, ", head_dim %d%s, intermediate %d (SwiGLU), vocab %d, max positions %d, rms_norm_eps %g; RoPE %s, "
           "theta %.10g",
       c->head_dim, c->head_dim * c->num_attention_heads != c->hidden_size ? " (heads x head_dim != hidden)" : "",
       c->intermediate_size, c->vocab_size, c->max_position_embeddings, c->rms_norm_eps, rope_type_name(r->type),
       r->theta);
    if (r->type != ROPE_DEFAULT) sb(&s, ", factor %g", r->factor);
    if (r->type == ROPE_LLAMA3)
        sb(&s, ", low_freq_factor %g, high_freq_factor %g, original_max_position_embeddings %d", r->low_freq_factor,
           r->high_freq_factor, r->original_max_position_embeddings);
    if (c->head == HEAD_LM) sb(&s, "; lm_head %s; biases:", c->tie_word_embeddings ? "tied to embed_tokens" : "untied");
    else sb(&s, "; reward head %s [%d, %d] on the last token (no lm_head); biases:", model_head_tensor(c), c->num_labels,
            c->hidden_size);
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
