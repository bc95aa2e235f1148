/* model.c: the Model's parameter buffers over the tensor table: loading,
 * random init, saving, gradients, and the bf16 copies of --precision bf16
 * (float32 master weights with a bf16 copy for training; bf16 alone for a
 * frozen model). The passes are in llama.c. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/common.h"
#include "core/hash.h"
#include "io/safetensors.h"
#include "hf/checkpoint.h"
#include "kernels/gemm.h"
#include "kernels/gemm_bf16.h"
#include "model/model.h"
#include "model/internal.h"

static int spec_index(const Model *m, const char *name) {
    for (int i = 0; i < m->n_specs; i++)
        if (!strcmp(m->specs[i].name, name)) return i;
    return -1;
}

/* base + tensor i's offset; NULL when absent or not float32 */
static float *at(const Model *m, float *base, int i) {
    return i < 0 || !base || m->offset[i] == NO_OFFSET ? NULL : base + m->offset[i];
}

float *tensor_at(const Model *m, float *base, const char *name) { return at(m, base, spec_index(m, name)); }

static char *layer_name(char *buf, size_t n, int l, const char *suffix) {
    snprintf(buf, n, "model.layers.%d.%s", l, suffix);
    return buf;
}

/* a layer's tensors in LayerW order: their spec indices are found once, when the model is laid out */
static const char *const LAYER_TENSORS[LAYER_N_TENSORS] = {
    "input_layernorm.weight", "self_attn.q_proj.weight", "self_attn.q_proj.bias", "self_attn.k_proj.weight",
    "self_attn.k_proj.bias", "self_attn.v_proj.weight", "self_attn.v_proj.bias", "self_attn.o_proj.weight",
    "self_attn.o_proj.bias", "post_attention_layernorm.weight", "mlp.gate_proj.weight", "mlp.gate_proj.bias",
    "mlp.up_proj.weight", "mlp.up_proj.bias", "mlp.down_proj.weight", "mlp.down_proj.bias"};

LayerW layer_view(const Model *m, float *base, int l) {
    const int *i = m->layer_ix[l].t;
    return (LayerW){at(m, base, i[0]),  at(m, base, i[1]),  at(m, base, i[2]),  at(m, base, i[3]),
                    at(m, base, i[4]),  at(m, base, i[5]),  at(m, base, i[6]),  at(m, base, i[7]),
                    at(m, base, i[8]),  at(m, base, i[9]),  at(m, base, i[10]), at(m, base, i[11]),
                    at(m, base, i[12]), at(m, base, i[13]), at(m, base, i[14]), at(m, base, i[15])};
}

/* the LM head, or a reward model's head */
static const char *head_name(const Model *m) {
    if (m->c.head != HEAD_LM) return model_head_tensor(&m->c);
    return m->c.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight";
}

float *lm_head(const Model *m, float *base) { return at(m, base, m->ix_head); }
float *final_norm(const Model *m, float *base) { return at(m, base, m->ix_norm); }
float *embed_tokens(const Model *m, float *base) { return at(m, base, m->ix_embed); }

/* tensor i as a product operand */
static Weight weight_at(const Model *m, int i) {
    if (i < 0) return (Weight){NULL, NULL};
    return (Weight){m->offset[i] == NO_OFFSET ? NULL : m->params + m->offset[i], m->wb ? m->wb[i] : NULL};
}

/* the layers' matrices in LayerM order (q, k, v, o, gate, up, down) */
LayerM model_layer_mats(const Model *m, int l) {
    const int *i = m->layer_ix[l].t;
    return (LayerM){weight_at(m, i[1]),  weight_at(m, i[3]),  weight_at(m, i[5]), weight_at(m, i[7]),
                    weight_at(m, i[10]), weight_at(m, i[12]), weight_at(m, i[14])};
}

Weight model_lm_weight(const Model *m) { return weight_at(m, m->ix_head); }

static long offset_at(const Model *m, int i) { return i < 0 || m->offset[i] == NO_OFFSET ? -1 : (long)m->offset[i]; }
long model_param_offset(const Model *m, const char *name) { return offset_at(m, spec_index(m, name)); }
long model_lm_offset(const Model *m) { return offset_at(m, m->ix_head); }
Weight model_weight(const Model *m, const char *name) { return weight_at(m, spec_index(m, name)); }

/* Embedding rows in float32 in every precision (as autocast keeps them): a
 * trainable model's master weights, a frozen one's rows read from the mapped
 * checkpoint, so both give the same bytes (x0 = embed_tokens[id]). */
static void embed_row(const Model *m, int id, float *x) {
    size_t H = (size_t)m->c.hidden_size;
    const float *E = embed_tokens(m, m->params);
    if (E) {
        memcpy(x, E + (size_t)id * H, sizeof(float) * H);
        return;
    }
    StTensor row = *m->embed; /* frozen: one row of the file's tensor, in its dtype */
    row.numel = (int64_t)H;
    row.data = m->embed->data + (size_t)id * H * st_dtype_size(m->embed->dtype);
    st_to_f32(&row, x);
}

void model_embed(const Model *m, const int *ids, int T, float *x) {
    for (int t = 0; t < T; t++) embed_row(m, ids[t], x + (size_t)t * m->c.hidden_size);
}

bf16 *model_btmp(Model *m, size_t n) {
    if (n > m->btmp_n) {
        free(m->btmp);
        m->btmp = xmalloc(sizeof(bf16) * (n ? n : 1));
        m->btmp_n = n;
    }
    return m->btmp;
}

/* The table, offsets and buffers of a config. frozen: float32 room for the
 * vectors only (the matrices live in bf16). */
static int model_layout(Model *m, int frozen, char *err, size_t errlen) {
    m->dev = device_cpu();
    if (m->c.qk_norm) {
        snprintf(err, errlen, "qwen3's per-head q/k norms are not implemented by the engine yet");
        return -1;
    }
    m->n_specs = model_tensor_table(&m->c, &m->specs);
    m->offset = xmalloc(sizeof(size_t) * (size_t)m->n_specs);
    m->frozen = frozen;
    for (int i = 0; i < m->n_specs; i++) {
        int f32 = !frozen || m->specs[i].kind != MODEL_TENSOR_MATRIX;
        m->offset[i] = f32 ? m->n_f32 : NO_OFFSET;
        m->n_f32 += f32 ? (size_t)m->specs[i].numel : 0;
        m->n_params += (size_t)m->specs[i].numel;
    }
    m->layer_ix = xmalloc(sizeof(LayerIx) * (size_t)(m->c.num_hidden_layers ? m->c.num_hidden_layers : 1));
    for (int l = 0; l < m->c.num_hidden_layers; l++)
        for (int k = 0; k < LAYER_N_TENSORS; k++) {
            char name[MODEL_TENSOR_NAME_LEN + 16];
            m->layer_ix[l].t[k] = spec_index(m, layer_name(name, sizeof name, l, LAYER_TENSORS[k]));
        }
    m->ix_embed = spec_index(m, "model.embed_tokens.weight");
    m->ix_norm = spec_index(m, "model.norm.weight");
    m->ix_head = spec_index(m, head_name(m));
    double need = 4.0 * (double)m->n_f32, have = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    if (have > 0 && need > have) { /* said before the allocation fails */
        snprintf(err, errlen, "%.1f GB of float32 weights do not fit in this machine's %.1f GB%s", need / 1e9,
                 have / 1e9, frozen ? "" : " (--precision bf16 keeps a model that is not trained in bf16: half)");
        return -1;
    }
    m->params = xmalloc(sizeof(float) * (m->n_f32 ? m->n_f32 : 1));
    m->inv_freq = xmalloc(sizeof(double) * (size_t)(m->c.head_dim / 2));
    m->lmkeep_max = MODEL_KEEP_SOFTMAX;
    rope_inv_freq(&m->c.rope, m->c.head_dim, m->inv_freq);
    return 0;
}

static size_t matrix_elems(const Model *m) {
    size_t n = 0;
    for (int i = 0; i < m->n_specs; i++)
        if (m->specs[i].kind == MODEL_TENSOR_MATRIX) n += (size_t)m->specs[i].numel;
    return n;
}

/* t's elements as bf16 into out, a million at a time (no float32 copy of a
 * whole 7B embedding) */
static void st_to_bf16(const StTensor *t, bf16 *out) {
    enum { CHUNK = 1 << 20 };
    float *f = xmalloc(sizeof(float) * CHUNK);
    size_t es = st_dtype_size(t->dtype);
    for (int64_t i0 = 0; i0 < t->numel; i0 += CHUNK) {
        StTensor part = *t;
        part.numel = t->numel - i0 < CHUNK ? t->numel - i0 : CHUNK;
        part.data = t->data + (size_t)i0 * es;
        st_to_f32(&part, f);
        bf16_from_f32(out + i0, f, (size_t)part.numel);
    }
    free(f);
}

/* A frozen model's matrices: a BF16 tensor at an even address is used where it
 * is mapped (read-only, shared with the page cache); others are converted. */
static void load_frozen_matrices(Model *m) {
    const int le = 1;
    m->wb = xcalloc((size_t)m->n_specs, sizeof(bf16 *));
    for (int pass = 0; pass < 2; pass++) { /* count what needs a copy, then fill */
        size_t at = 0;
        for (int i = 0; i < m->n_specs; i++) {
            if (m->specs[i].kind != MODEL_TENSOR_MATRIX) continue;
            const StTensor *t = st_find(&m->st, m->specs[i].name);
            int mapped = t->dtype == ST_BF16 && !((uintptr_t)t->data & 1) && *(const char *)&le;
            if (mapped && pass) m->wb[i] = (bf16 *)t->data;
            if (!mapped && pass) m->wb[i] = m->wbuf + at, st_to_bf16(t, m->wb[i]);
            if (!mapped) at += (size_t)t->numel;
        }
        if (!pass) m->wbuf = at ? xmalloc(sizeof(bf16) * at) : NULL;
    }
}

/* make_head: a causal-LM folder loaded as a reward model of one label, its head drawn from N(0, 0.02^2) */
static Model *load(const char *dir, ModelPrecision prec, int frozen, int make_head, uint64_t head_seed, char *err,
                   size_t errlen) {
    Model *m = xcalloc(1, sizeof *m);
    m->dir = strdup(dir);
    int bf16 = prec == MODEL_BF16;
    if (bf16 && gemm_bf16_ready(err, errlen)) goto fail;
    if (model_config_load(&m->c, dir, err, errlen)) goto fail;
    if (st_open(&m->st, dir, err, errlen)) goto fail;
    char problems[4096];
    if (checkpoint_check(&m->c, &m->st, problems, sizeof problems)) {
        snprintf(err, errlen, "%s: the tensors do not match config.json:\n%s", dir, problems);
        goto fail;
    }
    int init_head = make_head && m->c.head == HEAD_LM;
    if (init_head) m->c.head = HEAD_SCORE, m->c.num_labels = 1; /* lm_head, if any, is left out */
    char msg[512];
    if (model_layout(m, bf16 && frozen, msg, sizeof msg)) {
        snprintf(err, errlen, "%s: %s", dir, msg);
        goto fail;
    }
    for (int i = 0; i < m->n_specs; i++) {
        if (m->offset[i] == NO_OFFSET) continue;
        const StTensor *t = st_find(&m->st, m->specs[i].name);
        if (t) {
            st_to_f32(t, m->params + m->offset[i]);
            continue;
        }
        float *w; /* the new head: transformers' normal init, initializer_range 0.02 */
        checkpoint_init(&m->specs[i], 1, head_seed, 0.02, 0, &w);
        memcpy(m->params + m->offset[i], w, sizeof(float) * (size_t)m->specs[i].numel);
        free(w);
    }
    m->bf16 = bf16;
    if (m->frozen) /* the embedding rows are read from the mapping: st stays open */
        load_frozen_matrices(m), m->embed = st_find(&m->st, "model.embed_tokens.weight");
    else
        st_close(&m->st);
    if (bf16 && !m->frozen && model_set_precision(m, MODEL_BF16, err, errlen)) goto fail;
    return m;
fail:
    model_free(m);
    return NULL;
}

Model *model_load_as(const char *dir, ModelPrecision prec, int frozen, char *err, size_t errlen) {
    return load(dir, prec, frozen, 0, 0, err, errlen);
}

Model *model_load_reward(const char *dir, ModelPrecision prec, uint64_t seed, char *err, size_t errlen) {
    return load(dir, prec, 0, 1, seed, err, errlen);
}

Model *model_load(const char *dir, char *err, size_t errlen) { return model_load_as(dir, MODEL_FP32, 0, err, errlen); }

Model *model_new(const ModelConfig *c, uint64_t seed, char *err, size_t errlen) {
    Model *m = xcalloc(1, sizeof *m);
    m->c = *c;
    if (model_layout(m, 0, err, errlen)) {
        model_free(m);
        return NULL;
    }
    for (int i = 0; i < m->n_specs; i++) { /* one tensor at a time: no second copy of the model */
        float *w;
        checkpoint_init(&m->specs[i], 1, seed, 0.02, 0, &w);
        memcpy(m->params + m->offset[i], w, sizeof(float) * (size_t)m->specs[i].numel);
        free(w);
    }
    return m;
}

int model_set_precision(Model *m, ModelPrecision prec, char *err, size_t errlen) {
    if (m->frozen) {
        snprintf(err, errlen, "a frozen bf16 model keeps its precision");
        return -1;
    }
    if (prec == MODEL_FP32) {
        free(m->wb), free(m->wbuf);
        m->wb = NULL, m->wbuf = NULL, m->bf16 = 0;
        return 0;
    }
    if (gemm_bf16_ready(err, errlen)) return -1;
    if (!m->wb) {
        m->wb = xcalloc((size_t)m->n_specs, sizeof(bf16 *));
        m->wbuf = xmalloc(sizeof(bf16) * (matrix_elems(m) + 1));
        size_t at = 0;
        for (int i = 0; i < m->n_specs; i++)
            if (m->specs[i].kind == MODEL_TENSOR_MATRIX) m->wb[i] = m->wbuf + at, at += (size_t)m->specs[i].numel;
    }
    m->bf16 = 1;
    model_bf16_refresh(m);
    return 0;
}

void model_bf16_refresh(Model *m) {
    if (!m->bf16 || m->frozen || m->lora) return; /* with an adapter the base does not change */
    for (int i = 0; i < m->n_specs; i++)
        if (m->wb[i]) m->dev->to_bf16(m->wb[i], m->params + m->offset[i], (size_t)m->specs[i].numel);
}

ModelPrecision model_precision(const Model *m) { return m->bf16 ? MODEL_BF16 : MODEL_FP32; }
int model_frozen(const Model *m) { return m->frozen; }
void model_kernel_name(const Model *m, char *buf, size_t n) {
    if (m->engine)
        snprintf(buf, n, "gpu:%s:%s", m->engine->name, m->bf16 ? "bf16" : "fp32");
    else if (m->bf16)
        snprintf(buf, n, "%s+%s", gemm_kernel(), gemm_bf16_kernel());
    else
        snprintf(buf, n, "%s", gemm_kernel());
}

void model_gradient_checkpointing(Model *m, int on) { m->gc = on != 0; }
void model_low_memory(Model *m, int on) { m->low_memory = on != 0; }

/* the weights the passes read: bf16 matrices of a bf16 model (frozen or not: the same hash for the same
 * log-probs), float32 for the rest, the embedding row by row as embed_row reads it */
uint64_t model_hash(const Model *m, uint64_t h) {
    h = hash64_more(h, &m->bf16, sizeof m->bf16);
    int H = m->c.hidden_size;
    float *row = xmalloc(sizeof(float) * (size_t)H);
    for (int id = 0; id < m->c.vocab_size; id++) {
        embed_row(m, id, row);
        h = hash64_more(h, row, sizeof(float) * (size_t)H);
    }
    free(row);
    if (m->lora && m->lora->enabled) { /* an adapted model is another model; switched off, it is its base */
        double shape[3] = {m->lora->s.r, lora_scale(&m->lora->s), m->lora->s.targets};
        h = hash64_more(h, shape, sizeof shape);
        h = hash64_more(h, m->lora->params, sizeof(float) * m->lora->n);
    }
    for (int i = 0; i < m->n_specs; i++) {
        size_t n = (size_t)m->specs[i].numel;
        if (!strcmp(m->specs[i].name, "model.embed_tokens.weight")) continue; /* hashed above; its bf16 copy derives from it */
        if (m->bf16 && m->wb[i])
            h = hash64_more(h, m->wb[i], sizeof(bf16) * n);
        else
            h = hash64_more(h, m->params + m->offset[i], sizeof(float) * n);
    }
    return h;
}

void model_free(Model *m) {
    if (!m) return;
    if (m->engine && m->engine->free) m->engine->free(m->engine->ctx);
    free(m->engine);
    free(m->specs);
    free(m->offset);
    free(m->layer_ix);
    free(m->params);
    ppa_unmap(m->grads, sizeof(float) * m->n_params);
    free(m->wb);
    free(m->wbuf);
    st_close(&m->st);
    free(m->inv_freq);
    ppa_unmap(m->arena, sizeof(float) * m->arena_n);
    free(m->scratch);
    free(m->lmwork);
    ppa_unmap(m->lmkeep, sizeof(float) * m->lmkeep_n);
    free(m->btmp);
    lora_free(m->lora);
    free(m->dir);
    free(m);
}

void model_keep_softmax(Model *m, size_t max_bytes) {
    m->lmkeep_max = max_bytes;
    if (m->lmkeep_n * sizeof(float) > m->lmkeep_max)
        ppa_unmap(m->lmkeep, sizeof(float) * m->lmkeep_n), m->lmkeep = NULL, m->lmkeep_n = 0;
}

const ModelConfig *model_config(const Model *m) { return &m->c; }
size_t model_n_params(const Model *m) { return m->lora ? m->lora->n : m->n_params; }
size_t model_n_base_params(const Model *m) { return m->n_params; }

float *model_params(Model *m) {
    if (m->lora) return m->lora->params;
    if (m->frozen) ppa_die(70, "model_params: a frozen bf16 model has no float32 matrices");
    return m->params;
}

float *model_grads(Model *m) {
    if (m->lora) {
        if (!m->lora->grads) m->lora->grads = xcalloc(m->lora->n ? m->lora->n : 1, sizeof(float));
        return m->lora->grads;
    }
    if (m->frozen) ppa_die(70, "model_grads: a frozen bf16 model has no gradients");
    if (!m->grads) m->grads = xmap(sizeof(float) * m->n_params); /* resident only once a backward writes it */
    return m->grads;
}

/* low memory: released rather than cleared, so the forward runs without the gradients' memory */
void model_zero_grads(Model *m) {
    if (m->lora || !m->low_memory) memset(model_grads(m), 0, sizeof(float) * model_n_params(m));
    else ppa_release(model_grads(m), sizeof(float) * m->n_params, 1);
}

int model_trains(const Model *m) { return m->lora ? m->lora->enabled && m->lora->grads : m->grads != NULL; }

int model_save_grads(const Model *m, const char *path, char *err, size_t errlen) {
    if (m->lora) return snprintf(err, errlen, "%s: a model with an adapter saves it with lora_save_grads", path), -1;
    StWriteTensor *t = xcalloc((size_t)m->n_specs + 1, sizeof *t);
    float *g = m->grads ? m->grads : xcalloc(m->n_params ? m->n_params : 1, sizeof(float));
    for (int i = 0; i < m->n_specs; i++) t[i] = (StWriteTensor){m->specs[i].name, m->specs[i].ndim, m->specs[i].shape, g + m->offset[i]};
    int rc = st_write(path, t, m->n_specs, ST_F32, err, errlen);
    if (g != m->grads) free(g);
    free(t);
    return rc;
}

Spans model_decay(const Model *m) {
    Spans d = {0, xmalloc(sizeof(Span) * (size_t)(m->n_specs + 1))};
    if (m->lora) { /* A and B are matrices */
        d.s[d.n++] = (Span){0, m->lora->n};
        return d;
    }
    for (int i = 0; i < m->n_specs; i++) {
        if (m->specs[i].kind != MODEL_TENSOR_MATRIX) continue;
        size_t lo = m->offset[i], hi = lo + (size_t)m->specs[i].numel;
        if (d.n && d.s[d.n - 1].hi == lo) d.s[d.n - 1].hi = hi; /* adjacent matrices: one span */
        else d.s[d.n++] = (Span){lo, hi};
    }
    return d;
}

int model_save(const Model *m, const char *dir, int bf16, const char *tokenizer_dir, char *err, size_t errlen) {
    if (m->lora) return snprintf(err, errlen, "%s: a model with an adapter saves it with lora_save", dir), -1;
    if (m->frozen) {
        snprintf(err, errlen, "%s: a frozen bf16 model is not saved (load it in float32 to train and save)", dir);
        return -1;
    }
    float **data = xmalloc(sizeof(float *) * (size_t)m->n_specs);
    for (int i = 0; i < m->n_specs; i++) data[i] = m->params + m->offset[i];
    ModelConfig c = m->c;
    snprintf(c.dtype, sizeof c.dtype, "%s", bf16 ? "bfloat16" : "float32");
    int rc = checkpoint_write_folder(dir, &c, m->specs, data, m->n_specs, bf16 ? ST_BF16 : ST_F32, tokenizer_dir, m->dir,
                                     err, errlen);
    free(data);
    return rc;
}

/* ---- the parameters, for the decoder (llama_internal.h) ---- */

LayerW model_layer(const Model *m, int l) { return layer_view(m, m->params, l); }
const Device *model_device(const Model *m) { return m->dev; }
float *model_tensor(const Model *m, const char *name) { return tensor_at(m, m->params, name); }
float *model_lm_head(const Model *m) { return lm_head(m, m->params); }

void model_set_forward_engine(Model *m, const ForwardEngine *e) {
    if (m->engine && m->engine->free) m->engine->free(m->engine->ctx);
    free(m->engine), m->engine = NULL;
    if (e) m->engine = xmalloc(sizeof *e), *m->engine = *e;
}

const ForwardEngine *model_forward_engine(const Model *m) { return m->engine; }
