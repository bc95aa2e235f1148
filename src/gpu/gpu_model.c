/* gpu_model.c: a GpuModel's weights on the device (gpu_model.h): every tensor of a loaded host Model in one device
 * allocation, laid out in two passes (sizes, then uploads), with a table of per-layer pointers; the embedding as
 * the CPU forward reads it; the RoPE table. The forward is gpu_forward.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "gpu/gpu_internal.h"
#include "hf/rope.h"
#include "kernels/bf16.h"
#include "model/lora.h"

#define ALIGN 256 /* every tensor: cuBLASLt's and the attention's alignment needs, and fused biases' */

/* The layout's state: pass 0 (base NULL) counts bytes; pass 1 places and uploads. */
typedef struct {
    GpuModel *g;
    char *base; /* device, or NULL while counting */
    size_t off;
    int failed; /* an upload failed: pc_error() says why */
    int merge;  /* the model's adapter merged into its base's matrices (sampling: gpu_model_merged) */
} Layout;

static void *place(Layout *L, size_t bytes) {
    void *p = L->base ? L->base + L->off : NULL;
    L->off += (bytes + ALIGN - 1) / ALIGN * ALIGN;
    return p;
}

/* copies host bytes to dst (device) and waits, so that the caller may free or reuse src */
static void put(Layout *L, void *dst, const void *src, size_t bytes) {
    const PcApi *pc = L->g->pc;
    if (L->failed || !dst || !bytes) return;
    if (pc->pc_upload(dst, src, bytes) || pc->pc_sync()) L->failed = 1;
}

/* n values of W in the products' dtype into dst: as they are, rounded from float32 to bf16 (nearest even, as
 * model_set_precision's copy), or widened from bf16 (exact) */
static void put_values(Layout *L, void *dst, Weight W, size_t n) {
    PcDtype dt = L->g->dt;
    if (!dst) return;
    if (dt == PC_BF16 && W.b) return put(L, dst, W.b, n * sizeof(bf16));
    if (dt == PC_F32 && W.f) return put(L, dst, W.f, n * sizeof(float));
    void *tmp = xmalloc(n * (dt == PC_BF16 ? sizeof(bf16) : sizeof(float)));
    if (dt == PC_BF16)
        bf16_from_f32(tmp, W.f, n);
    else
        bf16_to_f32(tmp, W.b, n);
    put(L, dst, tmp, n * (dt == PC_BF16 ? sizeof(bf16) : sizeof(float)));
    free(tmp);
}

static size_t dt_size(PcDtype dt) { return dt == PC_BF16 ? sizeof(bf16) : sizeof(float); }

/* np matrices stacked ([rows[0] + ... , cols]: q, k, v; gate and up) in dt; NULL when counting */
static const void *put_matrix(Layout *L, const Weight *W, const size_t *rows, int np, size_t cols) {
    size_t e = dt_size(L->g->dt), all = 0;
    for (int i = 0; i < np; i++) all += rows[i];
    char *p = place(L, all * cols * e), *at = p;
    for (int i = 0; p && i < np; at += rows[i] * cols * e, i++) put_values(L, at, W[i], rows[i] * cols);
    return p;
}

/* np float32 vectors stacked (biases), zeros for an absent one; NULL when all are absent (or counting) */
static const float *put_vector(Layout *L, const float *const *v, const size_t *n, int np) {
    size_t all = 0;
    int any = 0;
    for (int i = 0; i < np; i++) all += n[i], any |= v[i] != NULL;
    if (!any) return NULL;
    float *p = place(L, all * sizeof(float)), *at = p;
    for (int i = 0; p && i < np; at += n[i], i++) {
        float *z = v[i] ? NULL : xcalloc(n[i] ? n[i] : 1, sizeof(float));
        put(L, at, v[i] ? v[i] : z, n[i] * sizeof(float));
        free(z);
    }
    return p;
}

static Weight layer_weight(const Model *m, int l, const char *suffix) {
    char name[MODEL_TENSOR_NAME_LEN + 16];
    snprintf(name, sizeof name, "model.layers.%d.%s", l, suffix);
    return model_weight(m, name);
}

/* LoRA target k (lora.h's order: q, k, v, o, gate, up, down) of layer l as the products see it: W itself, or with
 * L->merge and an adapter on it W + s B A in float32 (hf/adapter.h's lora_merge_into: PEFT's merge, as `ppa merge`
 * writes it), in *tmp (the caller frees it) */
static const char *const TARGET[7] = {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
                                      "self_attn.o_proj.weight", "mlp.gate_proj.weight",    "mlp.up_proj.weight",
                                      "mlp.down_proj.weight"};
static Weight target_weight(const Layout *L, const Model *m, int l, int k, float **tmp) {
    Weight W = layer_weight(m, l, TARGET[k]);
    *tmp = NULL;
    if (!L->merge || !L->base) return W; /* counting needs no values */
    LoraView v = model_lora_view((Model *)m, l, k);
    if (!v.A) return W;
    size_t n = (size_t)v.out * v.in;
    *tmp = xmalloc(sizeof(float) * (n ? n : 1));
    if (W.f) memcpy(*tmp, W.f, sizeof(float) * n);
    else bf16_to_f32(*tmp, W.b, n);
    lora_merge_into(*tmp, v.A, v.B, v.out, v.in, v.r, v.scale);
    return (Weight){*tmp, NULL};
}

/* ---- the embedding: its rows as model_embed gives them ---- */

enum { EMBED_ROWS = 1024 }; /* rows read at a time */

/* v in dt as the products see it: W's bf16 copy (or float32 rounded) in bf16, float32 (or bf16 widened) otherwise */
static float head_value(const Weight W, PcDtype dt, size_t i) {
    if (dt == PC_BF16) return W.b ? bf16_f32(W.b[i]) : bf16_f32(bf16_round(W.f[i]));
    return W.f ? W.f[i] : bf16_f32(W.b[i]);
}

/* Reads every row once: *exact = every value is a bf16; *same = the head's values in dt (tied LM heads) are the
 * rows' bit for bit, so one buffer serves both */
static void embed_survey(const Model *m, Weight head, PcDtype dt, int *exact, int *same) {
    const ModelConfig *c = model_config(m);
    size_t H = (size_t)c->hidden_size;
    int *ids = xmalloc(sizeof(int) * EMBED_ROWS);
    float *x = xmalloc(sizeof(float) * EMBED_ROWS * H);
    *exact = 1, *same = head.f || head.b;
    for (int r0 = 0; r0 < c->vocab_size; r0 += EMBED_ROWS) {
        int n = c->vocab_size - r0 < EMBED_ROWS ? c->vocab_size - r0 : EMBED_ROWS;
        for (int i = 0; i < n; i++) ids[i] = r0 + i;
        model_embed(m, ids, n, x);
        for (size_t i = 0; i < (size_t)n * H; i++) {
            float v = x[i], h = *same ? head_value(head, dt, (size_t)r0 * H + i) : 0.0f;
            if (bf16_f32(bf16_round(v)) != v) *exact = 0; /* NaN too */
            if (*same && memcmp(&v, &h, sizeof v)) *same = 0;
        }
    }
    free(ids), free(x);
}

/* the rows into dst (device, [V, H] et elements) */
static void put_embed(Layout *L, const Model *m, void *dst, PcDtype et) {
    const ModelConfig *c = model_config(m);
    size_t H = (size_t)c->hidden_size, e = dt_size(et);
    if (!dst) return;
    int *ids = xmalloc(sizeof(int) * EMBED_ROWS);
    float *x = xmalloc(sizeof(float) * EMBED_ROWS * H);
    bf16 *xb = et == PC_BF16 ? xmalloc(sizeof(bf16) * EMBED_ROWS * H) : NULL;
    for (int r0 = 0; r0 < c->vocab_size && !L->failed; r0 += EMBED_ROWS) {
        int n = c->vocab_size - r0 < EMBED_ROWS ? c->vocab_size - r0 : EMBED_ROWS;
        for (int i = 0; i < n; i++) ids[i] = r0 + i;
        model_embed(m, ids, n, x);
        if (xb) bf16_from_f32(xb, x, (size_t)n * H); /* exact: embed_survey found every value a bf16 */
        put(L, (char *)dst + (size_t)r0 * H * e, xb ? (void *)xb : (void *)x, (size_t)n * H * e);
    }
    free(ids), free(x), free(xb);
}

/* ---- the layout ---- */

/* Walks every tensor: counts (L->base NULL) or places and uploads. share: the LM head is the embedding's buffer. */
static void layout(Layout *L, const Model *m, int share) {
    GpuModel *g = L->g;
    const ModelConfig *c = &g->c;
    size_t H = (size_t)c->hidden_size, I = (size_t)c->intermediate_size, V = (size_t)c->vocab_size;
    size_t QD = (size_t)c->num_attention_heads * c->head_dim, KD = (size_t)c->num_key_value_heads * c->head_dim;
    void *embed = place(L, V * H * dt_size(g->embed_dt));
    put_embed(L, m, embed, g->embed_dt);
    g->embed = embed;
    for (int l = 0; l < c->num_hidden_layers; l++) {
        GpuLayer *w = &g->layers[l];
#define V1(suffix) ((const float *[]){layer_weight(m, l, suffix).f})
        w->attn_norm = put_vector(L, V1("input_layernorm.weight"), &H, 1);
        /* q, k and v stacked ([QD + 2 KD, H], their biases likewise): one product where the engine fuses them */
        size_t qkv[3] = {QD, KD, KD}, gu[2] = {I, I};
        float *t[7];
        Weight T[7];
        for (int k = 0; k < 7; k++) T[k] = target_weight(L, m, l, k, &t[k]);
        w->wq = put_matrix(L, T, qkv, 3, H);
        w->wk = w->wq ? (const char *)w->wq + QD * H * dt_size(g->dt) : NULL;
        w->wv = w->wk ? (const char *)w->wk + KD * H * dt_size(g->dt) : NULL;
        w->wo = put_matrix(L, T + 3, &H, 1, QD);
        w->bq = put_vector(L, (const float *[]){layer_weight(m, l, "self_attn.q_proj.bias").f, layer_weight(m, l,
                               "self_attn.k_proj.bias").f, layer_weight(m, l, "self_attn.v_proj.bias").f}, qkv, 3);
        w->bk = w->bq ? w->bq + QD : NULL, w->bv = w->bk ? w->bk + KD : NULL;
        w->bo = put_vector(L, V1("self_attn.o_proj.bias"), &H, 1);
        w->mlp_norm = put_vector(L, V1("post_attention_layernorm.weight"), &H, 1);
        w->wgu = put_matrix(L, T + 4, gu, 2, H);
        w->wd = put_matrix(L, T + 6, &H, 1, I);
        for (int k = 0; k < 7; k++) free(t[k]);
        w->bgu = put_vector(L, (const float *[]){layer_weight(m, l, "mlp.gate_proj.bias").f, layer_weight(m, l,
                                "mlp.up_proj.bias").f}, gu, 2);
        w->bd = put_vector(L, V1("mlp.down_proj.bias"), &H, 1);
#undef V1
    }
    g->final_norm = put_vector(L, (const float *[]){model_weight(m, "model.norm.weight").f}, &H, 1);
    if (c->head == HEAD_LM) g->lm_head = share ? g->embed : put_matrix(L, (Weight[]){model_lm_weight(m)}, &V, 1, H);
}

const char *gpu_config_refusal(const ModelConfig *c, char *buf, size_t n) {
    if (c->head_dim != 64 && c->head_dim != 128)
        snprintf(buf, n, "head_dim %d: the GPU's fused attention runs head sizes 64 and 128", c->head_dim);
    else if (c->hidden_size > 8192)
        snprintf(buf, n, "hidden_size %d: the GPU's RMSNorm runs at most 8192", c->hidden_size);
    else
        return NULL;
    return buf;
}

/* what the module cannot run, or the engine does not: a message, or NULL */
static const char *refusal(const Model *m, int adapter_ok, char *buf, size_t n) {
    const ModelConfig *c = model_config(m);
    if (gpu_config_refusal(c, buf, n))
        return buf;
    else if (!adapter_ok && model_lora(m) && model_lora_enabled(m))
        snprintf(buf, n, "the model has a LoRA adapter switched on: the GPU engine runs the base model only (merge "
                 "the adapter, or switch it off)");
    else if (c->head != HEAD_LM && !model_lm_weight(m).f && !model_lm_weight(m).b)
        snprintf(buf, n, "the reward model has no head tensor");
    else
        return NULL;
    return buf;
}

/* adapter_ok: 0 refuses a model whose adapter is on, 1 uploads its base alone, 2 its base with the adapter merged */
static GpuModel *upload(const PcApi *pc, const Model *m, ModelPrecision prec, int adapter_ok, char *err,
                        size_t errlen) {
    char why[256];
    if (refusal(m, adapter_ok, why, sizeof why)) {
        snprintf(err, errlen, "gpu: %s", why);
        return NULL;
    }
    GpuModel *g = xcalloc(1, sizeof *g);
    g->pc = pc, g->c = *model_config(m), g->prec = prec, g->dt = prec == MODEL_BF16 ? PC_BF16 : PC_F32;
    const ModelConfig *c = &g->c;
    g->layers = xcalloc((size_t)(c->num_hidden_layers ? c->num_hidden_layers : 1), sizeof(GpuLayer));
    g->inv_freq = xmalloc(sizeof(double) * (size_t)(c->head_dim / 2));
    rope_inv_freq(&c->rope, c->head_dim, g->inv_freq);
    size_t H = (size_t)c->hidden_size;
    Weight head = model_lm_weight(m);
    if (c->head != HEAD_LM) { /* the reward head as head_w reads it in llama.c: its bf16 copy in a bf16 model */
        size_t n = (size_t)c->num_labels * H;
        g->reward_head = xmalloc(sizeof(float) * (n ? n : 1));
        for (size_t i = 0; i < n; i++) g->reward_head[i] = head_value(head, g->dt, i);
    }
    int exact, same, tied = c->head == HEAD_LM && c->tie_word_embeddings;
    embed_survey(m, tied ? head : (Weight){NULL, NULL}, g->dt, &exact, &same);
    int share = tied && same; /* one buffer in dt (in bf16 the rows are then bf16 values: exact) */
    g->embed_dt = share ? g->dt : exact ? PC_BF16 : PC_F32;
    Layout L = {g, NULL, 0, 0, adapter_ok == 2 && model_lora(m) && model_lora_enabled(m)};
    layout(&L, m, share);
    g->weight_bytes = L.off;
    if (!(g->weights = pc->pc_alloc(L.off))) {
        snprintf(err, errlen, "gpu: the weights (%.2f GB): %s", (double)L.off / 1e9, pc->pc_error());
        gpu_model_free(g);
        return NULL;
    }
    L.base = g->weights, L.off = 0;
    layout(&L, m, share);
    if (L.failed) {
        snprintf(err, errlen, "gpu: uploading the weights: %s", pc->pc_error());
        gpu_model_free(g);
        return NULL;
    }
    return g;
}

GpuModel *gpu_model_new(const PcApi *pc, const Model *m, ModelPrecision prec, char *err, size_t errlen) {
    return upload(pc, m, prec, 0, err, errlen);
}

GpuModel *gpu_model_base(const PcApi *pc, const Model *m, ModelPrecision prec, char *err, size_t errlen) {
    return upload(pc, m, prec, 1, err, errlen);
}

GpuModel *gpu_model_merged(const PcApi *pc, const Model *m, ModelPrecision prec, char *err, size_t errlen) {
    return upload(pc, m, prec, 2, err, errlen);
}

void gpu_model_free(GpuModel *g) {
    if (!g) return;
    g->pc->pc_free(g->weights);
    g->pc->pc_free(g->cs);
    g->pc->pc_free(g->act);
    free(g->layers), free(g->reward_head), free(g->inv_freq);
    free(g);
}

const ModelConfig *gpu_model_config(const GpuModel *g) { return &g->c; }
ModelPrecision gpu_model_precision(const GpuModel *g) { return g->prec; }
size_t gpu_model_weight_bytes(const GpuModel *g) {
    return g->weight_bytes + sizeof(float) * (size_t)g->cs_pos * (size_t)g->c.head_dim;
}
size_t gpu_model_activation_bytes(const GpuModel *g) { return g->act_bytes; }
