/* tensors.c: the tensor table of a ModelConfig: the Hugging Face name and
 * shape of every tensor the checkpoint holds, in canonical order (tied or
 * untied lm_head, q/k/v/o and MLP biases, qwen3 q_norm/k_norm), and the
 * tensor and parameter counts.
 *
 * Not here: reading or writing the tensors (io/safetensors.c, checkpoint.c),
 * the parameter buffers (llama.c). */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include "core/common.h"
#include "hf/config.h"

/* ---- tensor table ------------------------------------------------------------------ */

static int tensors_per_layer(const ModelConfig *c) {
    return 9 + 3 * c->qkv_bias + c->o_bias + 3 * c->mlp_bias + 2 * c->qk_norm; /* 2 norms + 7 weights */
}

int model_tensor_count(const ModelConfig *c) {
    return 2 + (c->head != HEAD_LM || !c->tie_word_embeddings) + c->num_hidden_layers * tensors_per_layer(c);
}

int64_t model_param_count(const ModelConfig *c) {
    const int64_t V = c->vocab_size, H = c->hidden_size, I = c->intermediate_size, hd = c->head_dim;
    const int64_t q = c->num_attention_heads * hd, kv = c->num_key_value_heads * hd;
    int64_t layer = 2 * H                                  /* input_layernorm, post_attention_layernorm */
                    + q * H + 2 * kv * H + H * q           /* q, k, v, o */
                    + 3 * I * H                            /* gate, up, down */
                    + c->qkv_bias * (q + 2 * kv) + c->o_bias * H + c->mlp_bias * (2 * I + H) + c->qk_norm * 2 * hd;
    int64_t head = c->head != HEAD_LM ? (int64_t)c->num_labels * H : c->tie_word_embeddings ? 0 : V * H;
    return V * H + head + H + c->num_hidden_layers * layer;
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
    if (len < 0 || (size_t)len >= sizeof s->name) ppa_die(70, "tensor name too long (internal: %d chars)", len);
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
    if (c->head != HEAD_LM) /* a reward model: no lm_head, tied or not */
        add(&tb, MODEL_TENSOR_MATRIX, -1, c->num_labels, H, "%s", model_head_tensor(c));
    else if (!c->tie_word_embeddings)
        add(&tb, MODEL_TENSOR_MATRIX, -1, V, H, "lm_head.weight");
    if (tb.n != model_tensor_count(c)) ppa_die(70, "tensor table: %d entries, expected %d (internal)", tb.n, model_tensor_count(c));
    *out = tb.t;
    return tb.n;
}
