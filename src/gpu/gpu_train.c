/* gpu_train.c: a GpuTrain's state on the device (gpu_train.h): the master weights, gradients, AdamW moments and
 * bf16 copy in the host's layout, one allocation; what moves them to and from the host; the gradient norm and the
 * AdamW step. The passes are gpu_backward.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "gpu/gpu_internal.h"
#include "hf/rope.h"
#include "model/lora.h"

#define ALIGN 256

static size_t up(size_t b) { return (b + ALIGN - 1) / ALIGN * ALIGN; }

static int fail(const GpuTrain *t, const char *what, char *err, size_t errlen) {
    snprintf(err, errlen, "gpu train: %s: %s", what, t->pc->pc_error());
    return -1;
}

long gpu_layer_offset(const Model *m, int l, const char *suffix) {
    char name[MODEL_TENSOR_NAME_LEN + 16];
    snprintf(name, sizeof name, "model.layers.%d.%s", l, suffix);
    return model_param_offset(m, name);
}

/* what the engine cannot train: a message in buf, or NULL */
static const char *refusal(const Model *m, char *buf, size_t n) {
    const ModelConfig *c = model_config(m);
    if (!model_lora(m) && model_frozen(m))
        snprintf(buf, n, "a frozen model (bf16 weights only) has no float32 weights to train");
    else if (model_lora(m) && c->head != HEAD_LM)
        snprintf(buf, n, "a reward model trains every parameter, without an adapter");
    else if (gpu_config_refusal(c, buf, n))
        return buf;
    else if (!model_lora(m) && (model_lm_offset(m) < 0 || model_param_offset(m, "model.embed_tokens.weight") < 0))
        snprintf(buf, n, "the model has no head or embedding tensor");
    else
        return NULL;
    return buf;
}

/* the pointers of the whole model in the flat buffers: weights (pb, else p), vectors p, gradients g */
static void full_layout(GpuTrain *t, const Model *m) {
    const ModelConfig *c = &t->c;
    int L = c->num_hidden_layers;
#define MAT(o) ((o) < 0 ? NULL : t->pb ? (const void *)(t->pb + (o)) : (const void *)(t->p + (o)))
#define VEC(o) ((o) < 0 ? NULL : t->p + (o))
#define GRD(o) ((o) < 0 ? NULL : gpu_zero_grad_at(t, o))
#define SET(field, suffix, kind)                                                                                       \
    do {                                                                                                               \
        long o = gpu_layer_offset(m, l, suffix);                                                                       \
        w->field = kind(o), w->d_##field = GRD(o);                                                                     \
    } while (0)
    for (int l = 0; l < L; l++) {
        TrainLayer *w = &t->layers[l];
        SET(attn_norm, "input_layernorm.weight", VEC);
        SET(mlp_norm, "post_attention_layernorm.weight", VEC);
        SET(wq, "self_attn.q_proj.weight", MAT);
        SET(bq, "self_attn.q_proj.bias", VEC);
        SET(wk, "self_attn.k_proj.weight", MAT);
        SET(bk, "self_attn.k_proj.bias", VEC);
        SET(wv, "self_attn.v_proj.weight", MAT);
        SET(bv, "self_attn.v_proj.bias", VEC);
        SET(wo, "self_attn.o_proj.weight", MAT);
        SET(bo, "self_attn.o_proj.bias", VEC);
        SET(wg, "mlp.gate_proj.weight", MAT);
        SET(bg, "mlp.gate_proj.bias", VEC);
        SET(wu, "mlp.up_proj.weight", MAT);
        SET(bu, "mlp.up_proj.bias", VEC);
        SET(wd, "mlp.down_proj.weight", MAT);
        SET(bd, "mlp.down_proj.bias", VEC);
    }
    /* gate's rows followed at once by up's (no bias between, the tensor table's order): [2I, H] in place */
    long IH = (long)c->intermediate_size * c->hidden_size;
    t->fused_gu = L > 0;
    for (int l = 0; l < L; l++)
        t->fused_gu &= gpu_layer_offset(m, l, "mlp.up_proj.weight") ==
                           gpu_layer_offset(m, l, "mlp.gate_proj.weight") + IH &&
                       !t->layers[l].bg;
    /* q's rows, then k's, then v's, no biases (Llama, Mistral; Qwen2's biases lie between): [QD + 2 KD, H] */
    long QH = (long)c->num_attention_heads * c->head_dim * c->hidden_size;
    long KH = (long)c->num_key_value_heads * c->head_dim * c->hidden_size;
    t->fused_qkv = L > 0 && t->dt == PC_BF16;
    for (int l = 0; l < L; l++) {
        long oq = gpu_layer_offset(m, l, "self_attn.q_proj.weight");
        long ok = gpu_layer_offset(m, l, "self_attn.k_proj.weight");
        t->fused_qkv &= ok == oq + QH && gpu_layer_offset(m, l, "self_attn.v_proj.weight") == ok + KH &&
                        !t->layers[l].bq && !t->layers[l].bk && !t->layers[l].bv;
    }
    long e = model_param_offset(m, "model.embed_tokens.weight"), f = model_param_offset(m, "model.norm.weight");
    long h = model_lm_offset(m);
    t->embed = t->p + e, t->embed_dt = PC_F32, t->d_embed = GRD(e); /* the master rows: model_embed's */
    t->final_norm = VEC(f), t->d_final_norm = GRD(f);
    if (c->head == HEAD_LM) t->head = MAT(h), t->d_head = GRD(h);
    t->head_off = h;
#undef SET
#undef MAT
#undef VEC
#undef GRD
}

/* LoRA: the frozen base from the scoring engine's upload, the adapter's targets in the trainable buffers */
static int lora_layout(GpuTrain *t, Model *m, char *err, size_t errlen) {
    const ModelConfig *c = &t->c;
    int L = c->num_hidden_layers;
    if (!(t->base = gpu_model_base(t->pc, m, t->prec, err, errlen))) return -1;
    const GpuModel *b = t->base;
    size_t IH = (size_t)c->intermediate_size * c->hidden_size, e = b->dt == PC_BF16 ? 2 : 4;
    for (int l = 0; l < L; l++) {
        const GpuLayer *g = &b->layers[l];
        t->layers[l] = (TrainLayer){.wq = g->wq, .wk = g->wk, .wv = g->wv, .wo = g->wo, .wg = g->wgu,
                                    .wu = (const char *)g->wgu + IH * e, .wd = g->wd, .attn_norm = g->attn_norm,
                                    .mlp_norm = g->mlp_norm, .bq = g->bq, .bk = g->bk, .bv = g->bv, .bo = g->bo,
                                    .bd = g->bd, .bgu = g->bgu};
    }
    t->fused_gu = 1;
    t->fused_qkv = b->dt == PC_BF16; /* the base stacks q, k, v and their biases (gpu_model.c) */
    t->embed = b->embed, t->embed_dt = b->embed_dt, t->final_norm = b->final_norm, t->head = b->lm_head;
    t->host = m, t->head_off = -1;
    t->lora = xcalloc((size_t)(7 * (L ? L : 1)), sizeof(TrainLora));
    const float *base = model_params(m);
    for (int l = 0; l < L; l++)
        for (int k = 0; k < 7; k++) {
            LoraView v = model_lora_view(m, l, k);
            t->lora[7 * l + k] = (TrainLora){v.A ? (long)(v.A - base) : -1, v.in, v.out};
            if (v.A) t->lora_r = v.r, t->lora_scale = v.scale, t->lora_max_in = v.in > t->lora_max_in ? v.in : t->lora_max_in;
        }
    return 0;
}

GpuTrain *gpu_train_new(const PcApi *pc, Model *m, ModelPrecision prec, int checkpointing, const GpuShare *share,
                        char *err, size_t errlen) {
    char why[256];
    if (refusal(m, why, sizeof why)) {
        snprintf(err, errlen, "gpu train: %s", why);
        return NULL;
    }
    int lora = model_lora(m) != NULL;
    GpuTrain *t = xcalloc(1, sizeof *t);
    t->pc = pc, t->c = *model_config(m), t->prec = prec, t->dt = prec == MODEL_BF16 ? PC_BF16 : PC_F32;
    t->gc = checkpointing != 0, t->n = model_n_params(m);
    t->lo = share ? share->lo : 0, t->hi = share ? share->hi : t->n;
    t->ranks = share ? share->ranks : 1, t->rank = share ? share->rank : 0, t->stage = share ? share->stage : 0;
    t->chunk = t->ranks > 0 ? (t->n + (size_t)t->ranks - 1) / (size_t)t->ranks : t->n;
    size_t want_lo = (size_t)t->rank * t->chunk < t->n ? (size_t)t->rank * t->chunk : t->n;
    if (t->ranks < 1 || t->rank < 0 || t->rank >= t->ranks || t->lo > t->hi || t->hi > t->n ||
        (t->stage && (t->lo != want_lo || t->hi - t->lo > t->chunk)) || (!t->stage && t->hi - t->lo != t->n)) {
        snprintf(err, errlen, "gpu train: the share [%zu, %zu) of rank %d of %d is not its chunk of the %zu parameters",
                 t->lo, t->hi, t->rank, t->ranks, t->n);
        free(t);
        return NULL;
    }
    if (t->stage == 2 && lora) {
        snprintf(err, errlen, "gpu train: --zero 2 shards a full fine-tuning's gradients; an adapter's are small: use "
                              "--zero 1");
        free(t);
        return NULL;
    }
    const ModelConfig *c = &t->c;
    int L = c->num_hidden_layers;
    t->layers = xcalloc((size_t)(L ? L : 1), sizeof(TrainLayer));
    t->inv_freq = xmalloc(sizeof(double) * (size_t)(c->head_dim / 2));
    rope_inv_freq(&c->rope, c->head_dim, t->inv_freq);
    /* several ranks: each layer's gradients reduced as the backward finishes it; at stage 2 there is no other way */
    if (t->ranks > 1 && !lora && gpu_zero_buckets(t, m, err, errlen) && t->stage == 2) {
        gpu_train_free(t);
        return NULL;
    }

    Spans d = model_decay(m);
    t->n_decay = d.n;
    /* an adapter's products run in float32 (lora.h): no bf16 copy of it. Under ZeRO the weights (and stage 1's
     * gradients) are padded to whole chunks; stage 2 has a share, two layers and the rest of gradients instead. */
    size_t n = t->n, np = t->stage ? (size_t)t->ranks * t->chunk : n, f = up(np * sizeof(float));
    size_t b = prec == MODEL_BF16 && !lora ? up(n * sizeof(PcBf16)) : 0;
    size_t fm = up((t->hi - t->lo) * sizeof(float)), sp = up(sizeof(PcSpan) * (size_t)(d.n ? d.n : 1)), fg = f;
    size_t fx = 0, fl = 0, fs = 0;
    if (t->stage == 2) {
        size_t most = 0;
        for (int l = 0; l < L; l++) most = t->bucket[l + 1] - t->bucket[l] > most ? t->bucket[l + 1] - t->bucket[l] : most;
        fx = up((t->bucket[0] + (n - t->bucket[L])) * sizeof(float)), fl = up(most * sizeof(float));
        fs = up(t->chunk * sizeof(float)), fg = fx + 2 * fl + fs;
    }
    t->state_bytes = f + fg + 2 * fm + b + sp;
    if (!(t->state = pc->pc_alloc(t->state_bytes))) {
        snprintf(err, errlen, "gpu train: the weights, gradients and AdamW moments of %zu parameters (%.2f GB%s): %s", n,
                 (double)t->state_bytes / 1e9, t->stage ? ", this rank's share under ZeRO" : "", pc->pc_error());
        spans_free(&d);
        gpu_train_free(t);
        return NULL;
    }
    char *at = t->state;
    t->p = (float *)at;
    if (t->stage == 2) {
        t->gx = (float *)(at + f), t->slot[0] = (float *)(at + f + fx), t->slot[1] = (float *)(at + f + fx + fl);
        t->gs = (float *)(at + f + fx + 2 * fl);
    } else {
        t->g = (float *)(at + f), t->gs = t->g + t->lo;
    }
    t->m = (float *)(at + f + fg), t->v = (float *)(at + f + fg + fm);
    t->pb = b ? (PcBf16 *)(at + f + fg + 2 * fm) : NULL;
    t->decay = (PcSpan *)(at + f + fg + 2 * fm + b);
    PcSpan *hs = xmalloc(sizeof(PcSpan) * (size_t)(d.n ? d.n : 1));
    for (int i = 0; i < d.n; i++) hs[i] = (PcSpan){d.s[i].lo, d.s[i].hi};
    int bad = pc->pc_memset(t->state, 0, f + fg + 2 * fm) || pc->pc_upload(t->decay, hs, sizeof(PcSpan) * (size_t)d.n) ||
              pc->pc_sync();
    free(hs), spans_free(&d);
    if (bad) {
        fail(t, "clearing the optimizer's state", err, errlen);
        gpu_train_free(t);
        return NULL;
    }
    if (lora ? lora_layout(t, m, err, errlen) : (full_layout(t, m), 0)) {
        gpu_train_free(t);
        return NULL;
    }
    /* the host's weights now, so that a forward can run at once (a scoring command's, the reference's) */
    if (gpu_train_push(t, model_params(m), NULL, NULL, err, errlen)) {
        gpu_train_free(t);
        return NULL;
    }
    t->peak = gpu_train_bytes(t);
    return t;
}

void gpu_train_free(GpuTrain *t) {
    if (!t) return;
    gpu_train_batch_free(t);
    if (t->nccl) t->pc->pc_nccl_free();
    t->pc->pc_free(t->state);
    t->pc->pc_free(t->act);
    t->pc->pc_free(t->cs);
    gpu_model_free(t->base);
    free(t->layers), free(t->inv_freq), free(t->lora), free(t->bucket);
    free(t);
}

int gpu_train_push(GpuTrain *t, const float *params, const float *m, const float *v, char *err, size_t errlen) {
    const PcApi *pc = t->pc;
    size_t bytes = sizeof(float) * t->n, mb = sizeof(float) * (t->hi - t->lo);
    if (pc->pc_upload(t->p, params, bytes) || (m && pc->pc_upload(t->m, m, mb)) || (v && pc->pc_upload(t->v, v, mb)) ||
        (t->pb && pc->pc_f32_to_bf16(t->pb, t->p, t->n)) || pc->pc_sync())
        return fail(t, "uploading the weights", err, errlen);
    return 0;
}

int gpu_train_pull(GpuTrain *t, float *params, float *m, float *v, char *err, size_t errlen) {
    const PcApi *pc = t->pc;
    size_t bytes = sizeof(float) * t->n, mb = sizeof(float) * (t->hi - t->lo);
    if ((params && pc->pc_download(params, t->p, bytes)) || (m && pc->pc_download(m, t->m, mb)) ||
        (v && pc->pc_download(v, t->v, mb)) || pc->pc_sync())
        return fail(t, "reading the weights back", err, errlen);
    return 0;
}

/* stage 2 keeps no whole gradient buffer: its sums never go through the host this way */
static int whole_grads(const GpuTrain *t, char *err, size_t errlen) {
    if (t->g) return 1;
    snprintf(err, errlen, "gpu train: ZeRO-2 keeps this rank's share of the gradients alone (internal)");
    return 0;
}

int gpu_train_grads(GpuTrain *t, float *grads, char *err, size_t errlen) {
    if (!whole_grads(t, err, errlen)) return -1;
    if (t->pc->pc_download(grads, t->g, sizeof(float) * t->n) || t->pc->pc_sync())
        return fail(t, "reading the gradients back", err, errlen);
    return 0;
}

int gpu_train_set_grads(GpuTrain *t, const float *grads, char *err, size_t errlen) {
    if (!whole_grads(t, err, errlen)) return -1;
    if (t->pc->pc_upload(t->g, grads, sizeof(float) * t->n) || t->pc->pc_sync())
        return fail(t, "writing the gradients", err, errlen);
    return 0;
}

int gpu_train_zero_grads(GpuTrain *t, char *err, size_t errlen) {
    float *g = t->g ? t->g : t->gs; /* stage 2: the share, which the buckets' reductions add into */
    size_t n = t->g ? (t->stage ? (size_t)t->ranks * t->chunk : t->n) : t->hi - t->lo;
    if (t->pc->pc_memset(g, 0, sizeof(float) * n)) return fail(t, "clearing the gradients", err, errlen);
    return 0;
}

int gpu_train_grad_norm(GpuTrain *t, int shard, double *norm, char *err, size_t errlen) {
    if (!shard && !whole_grads(t, err, errlen)) return -1;
    if (t->pc->pc_grad_norm(norm, shard ? t->gs : t->g, shard ? t->hi - t->lo : t->n))
        return fail(t, "the gradient norm", err, errlen);
    return 0;
}

int gpu_train_adamw(GpuTrain *t, long step, float grad_scale, double lr, double beta1, double beta2, double eps,
                    double weight_decay, char *err, size_t errlen) {
    PcAdamW hp = {step, lr, beta1, beta2, eps, weight_decay};
    size_t lo = t->lo;
    if (t->pc->pc_adamw_step(t->p + lo, t->pb ? t->pb + lo : NULL, t->gs, t->m, t->v, t->hi - lo, grad_scale,
                             t->decay, t->n_decay, lo, &hp))
        return fail(t, "the AdamW step", err, errlen);
    return 0;
}

size_t gpu_train_bytes(const GpuTrain *t) { return train_bytes(t); }
size_t gpu_train_peak(const GpuTrain *t) { return t->peak > gpu_train_bytes(t) ? t->peak : gpu_train_bytes(t); }
