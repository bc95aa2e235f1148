/* llama.c: the model (parameter buffers over the tensor table), batches of
 * shared-prompt rows, and the forward / backward passes that chain the
 * kernels of kernels.c. */
#include "model/llama.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/common.h"
#include "io/safetensors.h"
#include "model/checkpoint.h"
#include "model/gemm.h"
#include "model/kernels.h"
#include "model/llama_internal.h"

struct Model {
    ModelConfig c;
    ModelTensorSpec *specs; /* [n_specs] the tensor table */
    size_t *offset;         /* [n_specs] into params / grads */
    int n_specs;
    size_t n_params;
    float *params, *grads;
    double *inv_freq; /* [HS / 2] */
    float *arena;     /* activations of the current batch, kept between batches: */
    size_t arena_n;   /* fresh buffers every step would cost page faults */
    float *scratch;   /* the backward's buffers, kept likewise */
    size_t scratch_n;
    float *lmwork;    /* the LM head's chunk buffers, kept likewise */
    size_t lmwork_n;
    float *lmkeep;    /* the forward's softmax for the backward (lmhead_forward) */
    size_t lmkeep_n, lmkeep_max; /* floats; the limit set by model_keep_softmax */
};

static float *tensor_at(const Model *m, float *base, const char *name) {
    for (int i = 0; i < m->n_specs; i++)
        if (!strcmp(m->specs[i].name, name)) return base + m->offset[i];
    return NULL;
}

static float *layer_tensor(const Model *m, float *base, int l, const char *suffix) {
    char name[MODEL_TENSOR_NAME_LEN + 16];
    snprintf(name, sizeof name, "model.layers.%d.%s", l, suffix);
    return tensor_at(m, base, name);
}

static LayerW layer_view(const Model *m, float *base, int l) {
    return (LayerW){
        layer_tensor(m, base, l, "input_layernorm.weight"),  layer_tensor(m, base, l, "self_attn.q_proj.weight"),
        layer_tensor(m, base, l, "self_attn.q_proj.bias"),   layer_tensor(m, base, l, "self_attn.k_proj.weight"),
        layer_tensor(m, base, l, "self_attn.k_proj.bias"),   layer_tensor(m, base, l, "self_attn.v_proj.weight"),
        layer_tensor(m, base, l, "self_attn.v_proj.bias"),   layer_tensor(m, base, l, "self_attn.o_proj.weight"),
        layer_tensor(m, base, l, "self_attn.o_proj.bias"),   layer_tensor(m, base, l, "post_attention_layernorm.weight"),
        layer_tensor(m, base, l, "mlp.gate_proj.weight"),     layer_tensor(m, base, l, "mlp.gate_proj.bias"),
        layer_tensor(m, base, l, "mlp.up_proj.weight"),       layer_tensor(m, base, l, "mlp.up_proj.bias"),
        layer_tensor(m, base, l, "mlp.down_proj.weight"),     layer_tensor(m, base, l, "mlp.down_proj.bias"),
    };
}

static float *lm_head(const Model *m, float *base) {
    return m->c.tie_word_embeddings ? tensor_at(m, base, "model.embed_tokens.weight") : tensor_at(m, base, "lm_head.weight");
}

/* the table, offsets and buffers of a config */
static int model_layout(Model *m, char *err, size_t errlen) {
    if (m->c.qk_norm) {
        snprintf(err, errlen, "qwen3's per-head q/k norms are not implemented by the engine yet");
        return -1;
    }
    m->n_specs = model_tensor_table(&m->c, &m->specs);
    m->offset = xmalloc(sizeof(size_t) * (size_t)m->n_specs);
    for (int i = 0; i < m->n_specs; i++) {
        m->offset[i] = m->n_params;
        m->n_params += (size_t)m->specs[i].numel;
    }
    m->params = xmalloc(sizeof(float) * (m->n_params ? m->n_params : 1));
    m->inv_freq = xmalloc(sizeof(double) * (size_t)(m->c.head_dim / 2));
    m->lmkeep_max = MODEL_KEEP_SOFTMAX / sizeof(float);
    model_rope_inv_freq(&m->c, m->inv_freq);
    return 0;
}

Model *model_load(const char *dir, char *err, size_t errlen) {
    Model *m = xcalloc(1, sizeof *m);
    StSet st = {0};
    if (model_config_load(&m->c, dir, err, errlen)) goto fail;
    if (st_open(&st, dir, err, errlen)) goto fail;
    char problems[4096];
    if (checkpoint_check(&m->c, &st, problems, sizeof problems)) {
        snprintf(err, errlen, "%s: the tensors do not match config.json:\n%s", dir, problems);
        goto fail;
    }
    char msg[512];
    if (model_layout(m, msg, sizeof msg)) {
        snprintf(err, errlen, "%s: %s", dir, msg);
        goto fail;
    }
    for (int i = 0; i < m->n_specs; i++) st_to_f32(st_find(&st, m->specs[i].name), m->params + m->offset[i]);
    st_close(&st);
    return m;
fail:
    st_close(&st);
    model_free(m);
    return NULL;
}

Model *model_new(const ModelConfig *c, uint64_t seed, char *err, size_t errlen) {
    Model *m = xcalloc(1, sizeof *m);
    m->c = *c;
    if (model_layout(m, err, errlen)) {
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

void model_free(Model *m) {
    if (!m) return;
    free(m->specs);
    free(m->offset);
    free(m->params);
    free(m->grads);
    free(m->inv_freq);
    free(m->arena);
    free(m->scratch);
    free(m->lmwork);
    free(m->lmkeep);
    free(m);
}

void model_keep_softmax(Model *m, size_t max_bytes) {
    m->lmkeep_max = max_bytes / sizeof(float);
    if (m->lmkeep_n > m->lmkeep_max) free(m->lmkeep), m->lmkeep = NULL, m->lmkeep_n = 0;
}

const ModelConfig *model_config(const Model *m) { return &m->c; }
size_t model_n_params(const Model *m) { return m->n_params; }
float *model_params(Model *m) { return m->params; }

float *model_grads(Model *m) {
    if (!m->grads) m->grads = xcalloc(m->n_params ? m->n_params : 1, sizeof(float));
    return m->grads;
}

void model_zero_grads(Model *m) { memset(model_grads(m), 0, sizeof(float) * m->n_params); }

int model_save_grads(const Model *m, const char *path, char *err, size_t errlen) {
    StWriteTensor *t = xcalloc((size_t)m->n_specs + 1, sizeof *t);
    float *g = m->grads ? m->grads : xcalloc(m->n_params ? m->n_params : 1, sizeof(float));
    for (int i = 0; i < m->n_specs; i++) t[i] = (StWriteTensor){m->specs[i].name, m->specs[i].ndim, m->specs[i].shape, g + m->offset[i]};
    int rc = st_write(path, t, m->n_specs, ST_F32, err, errlen);
    if (g != m->grads) free(g);
    free(t);
    return rc;
}

unsigned char *model_decay_mask(const Model *m) {
    unsigned char *mask = xmalloc(m->n_params ? m->n_params : 1);
    for (int i = 0; i < m->n_specs; i++)
        memset(mask + m->offset[i], m->specs[i].kind == MODEL_TENSOR_MATRIX, (size_t)m->specs[i].numel);
    return mask;
}

int model_save(const Model *m, const char *dir, int bf16, const char *tokenizer_dir, char *err, size_t errlen) {
    float **data = xmalloc(sizeof(float *) * (size_t)m->n_specs);
    for (int i = 0; i < m->n_specs; i++) data[i] = m->params + m->offset[i];
    ModelConfig c = m->c;
    snprintf(c.dtype, sizeof c.dtype, "%s", bf16 ? "bfloat16" : "float32");
    int rc = checkpoint_write_folder(dir, &c, m->specs, data, m->n_specs, bf16 ? ST_BF16 : ST_F32, tokenizer_dir, err,
                                     errlen);
    free(data);
    return rc;
}

/* ---- batches ---- */

struct Batch {
    int n_rows, T, n_resp, n_tgt, n_pos;
    int *tokens, *pos, *pstart, *plen, *sstart, *rows; /* [T], rows [n_rows + 1] */
    int *src, *tgt, *tgt_resp;                         /* [n_tgt] scored targets */
    int *n_scored;                                     /* [n_resp] */
    /* activations, per layer l: [L, T, ...] */
    float *x;           /* [L + 1, T, H] input of each layer, then the last residual */
    float *xn1, *xn2;   /* [L, T, H] normalised inputs of attention and MLP */
    float *rstd1, *rstd2;
    float *q, *k, *v;   /* [L, T, NH*HS], [L, T, NKV*HS] after RoPE */
    float *att, *lse;   /* [L, T, NH*HS], [L, T, NH] */
    float *xmid;        /* [L, T, H] after attention */
    float *gate, *up;   /* [L, T, I] */
    float *xf, *rstdf;  /* [T, H], [T] */
    float *lse_t;       /* [n_tgt] */
    double *logp_t;     /* [n_tgt] */
    float *cs;          /* RoPE table [n_pos, HS/2, 2] */
    float *lmkeep;      /* [n_tgt, V] softmax kept by the forward, or NULL */
};

static int check_ids(const Model *m, const int *ids, int n, int row, const char *what, char *err, size_t errlen) {
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= m->c.vocab_size) {
            snprintf(err, errlen, "row %d: %s token %d = %d is outside the vocabulary (0..%d)", row, what, i, ids[i],
                     m->c.vocab_size - 1);
            return -1;
        }
    return 0;
}

static int count_rows(const Model *m, const Row *rows, int n_rows, int *T, int *n_resp, int *n_tgt, int *n_pos,
                      char *err, size_t errlen) {
    *T = *n_resp = *n_tgt = *n_pos = 0;
    for (int r = 0; r < n_rows; r++) {
        const Row *w = &rows[r];
        if (w->prompt_len < 1 || w->n_resp < 1) {
            snprintf(err, errlen, "row %d: needs a prompt of at least 1 token and at least 1 response", r);
            return -1;
        }
        if (check_ids(m, w->prompt, w->prompt_len, r, "prompt", err, errlen)) return -1;
        *T += w->prompt_len;
        for (int k = 0; k < w->n_resp; k++) {
            if (w->resp_len[k] < 1) {
                snprintf(err, errlen, "row %d: response %d is empty (nothing to score)", r, k);
                return -1;
            }
            if (check_ids(m, w->resp[k], w->resp_len[k], r, "response", err, errlen)) return -1;
            int len = w->prompt_len + w->resp_len[k];
            if (model_config_check_seq_len(&m->c, len, err, errlen)) return -1;
            *n_pos = len > *n_pos ? len : *n_pos;
            *T += w->resp_len[k];
            *n_tgt += w->resp_len[k];
            (*n_resp)++;
        }
    }
    return 0;
}

#define ALLOC(p, n) ((p) = xcalloc((size_t)(n), sizeof *(p))) /* xcalloc takes 0 */

/* Carves the activations out of the model's arena (grown when needed; the
 * forward writes every element before it is read, so nothing is cleared). */
static int alloc_activations(Model *m, Batch *b, char *err, size_t errlen) {
    const ModelConfig *c = &m->c;
    size_t T = (size_t)b->T, L = (size_t)c->num_hidden_layers, H = (size_t)c->hidden_size, I = (size_t)c->intermediate_size;
    size_t QD = (size_t)c->num_attention_heads * c->head_dim, KD = (size_t)c->num_key_value_heads * c->head_dim;
    struct {
        float **p;
        size_t n;
    } parts[] = {
        {&b->x, (L + 1) * T * H}, {&b->xn1, L * T * H},   {&b->xn2, L * T * H},  {&b->rstd1, L * T},
        {&b->rstd2, L * T},       {&b->q, L * T * QD},    {&b->k, L * T * KD},   {&b->v, L * T * KD},
        {&b->att, L * T * QD},    {&b->lse, L * T * (size_t)c->num_attention_heads},
        {&b->xmid, L * T * H},    {&b->gate, L * T * I},  {&b->up, L * T * I},   {&b->xf, T * H},
        {&b->rstdf, T},           {&b->lse_t, (size_t)b->n_tgt}, {&b->cs, (size_t)b->n_pos * c->head_dim},
    };
    size_t total = 0;
    for (size_t i = 0; i < PPA_ARRAY_LEN(parts); i++) total += (parts[i].n + 15) & ~(size_t)15; /* 64-byte steps */
    double need = 4.0 * (double)total, have = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    if (have > 0 && need > have) { /* refused before xmalloc dies on it */
        snprintf(err, errlen, "a batch of %d tokens needs %.1f GB of activations, more than this machine's %.1f GB: "
                 "use fewer lists per micro-batch, a shorter --max-length or a smaller list size", b->T, need / 1e9,
                 have / 1e9);
        return -1;
    }
    if (total > m->arena_n) {
        free(m->arena);
        m->arena = xmalloc(sizeof(float) * total);
        m->arena_n = total;
    }
    float *at = m->arena;
    for (size_t i = 0; i < PPA_ARRAY_LEN(parts); i++) {
        *parts[i].p = at;
        at += (parts[i].n + 15) & ~(size_t)15;
    }
    ALLOC(b->logp_t, b->n_tgt);
    rope_table(b->cs, m->inv_freq, b->n_pos, c->head_dim);
    return 0;
}

Batch *batch_new(Model *m, const Row *rows, int n_rows, char *err, size_t errlen) {
    int T, n_resp, n_tgt, n_pos;
    if (count_rows(m, rows, n_rows, &T, &n_resp, &n_tgt, &n_pos, err, errlen)) return NULL;
    Batch *b = xcalloc(1, sizeof *b);
    b->n_rows = n_rows, b->T = T, b->n_resp = n_resp, b->n_tgt = n_tgt, b->n_pos = n_pos;
    ALLOC(b->tokens, T), ALLOC(b->pos, T), ALLOC(b->pstart, T), ALLOC(b->plen, T), ALLOC(b->sstart, T);
    ALLOC(b->rows, n_rows + 1), ALLOC(b->src, n_tgt), ALLOC(b->tgt, n_tgt), ALLOC(b->tgt_resp, n_tgt);
    ALLOC(b->n_scored, n_resp);
    int t = 0, i = 0, g = 0;
    for (int r = 0; r < n_rows; r++) {
        const Row *w = &rows[r];
        int p0 = t, P = w->prompt_len;
        b->rows[r] = t;
        for (int j = 0; j < P; j++, t++) /* the prompt: causal among itself */
            b->tokens[t] = w->prompt[j], b->pos[t] = j, b->pstart[t] = p0, b->plen[t] = 0, b->sstart[t] = p0;
        for (int k = 0; k < w->n_resp; k++, g++) {
            int s0 = t;
            for (int j = 0; j < w->resp_len[k]; j++, t++, i++) {
                b->tokens[t] = w->resp[k][j], b->pos[t] = P + j, b->pstart[t] = p0, b->plen[t] = P, b->sstart[t] = s0;
                b->tgt[i] = w->resp[k][j]; /* scored by the logits of the token before */
                b->src[i] = j ? t - 1 : p0 + P - 1;
                b->tgt_resp[i] = g;
            }
            b->n_scored[g] = w->resp_len[k];
        }
    }
    b->rows[n_rows] = t;
    if (alloc_activations(m, b, err, errlen)) {
        batch_free(b);
        return NULL;
    }
    return b;
}

void batch_free(Batch *b) {
    if (!b) return;
    void *all[] = {b->tokens, b->pos, b->pstart, b->plen, b->sstart, b->rows, b->src, b->tgt, b->tgt_resp, b->n_scored,
                   b->logp_t}; /* the activations live in the model's arena */
    for (size_t i = 0; i < PPA_ARRAY_LEN(all); i++) free(all[i]);
    free(b);
}

int batch_n_responses(const Batch *b) { return b->n_resp; }
int batch_n_tokens(const Batch *b) { return b->T; }

/* ---- forward ---- */

static void add_bias(float *y, const float *bias, int T, int N) {
    if (!bias) return;
#pragma omp parallel for schedule(static)
    for (int t = 0; t < T; t++)
        for (int n = 0; n < N; n++) y[(size_t)t * N + n] += bias[n];
}

/* y[T, out] = x[T, in] W^T (+ bias); W: [out, in] */
static void linear(float *y, const float *x, const float *W, const float *bias, int T, int in, int out) {
    gemm_rows(T, out, in, x, in, W, in, 0.0f, y, out);
    add_bias(y, bias, T, out);
}

static AttnShape attn_shape(const Model *m, const Batch *b) {
    return (AttnShape){b->pstart, b->plen, b->sstart, b->rows, b->n_rows, b->T, m->c.num_attention_heads,
                       m->c.num_key_value_heads, m->c.head_dim};
}

static void layer_forward(Model *m, Batch *b, int l, float *hbuf) {
    const ModelConfig *c = &m->c;
    int T = b->T, H = c->hidden_size, I = c->intermediate_size, NH = c->num_attention_heads, NKV = c->num_key_value_heads;
    int HS = c->head_dim, QD = NH * HS, KD = NKV * HS;
    size_t TH = (size_t)T * H;
    LayerW w = layer_view(m, m->params, l);
    float *x = b->x + l * TH, *xn1 = b->xn1 + l * TH, *xn2 = b->xn2 + l * TH, *xmid = b->xmid + l * TH;
    float *q = b->q + (size_t)l * T * QD, *k = b->k + (size_t)l * T * KD, *v = b->v + (size_t)l * T * KD;
    float *att = b->att + (size_t)l * T * QD, *lse = b->lse + (size_t)l * T * NH;
    float *gate = b->gate + (size_t)l * T * I, *up = b->up + (size_t)l * T * I;
    rmsnorm_forward(xn1, b->rstd1 + (size_t)l * T, x, w.attn_norm, T, H, (float)c->rms_norm_eps);
    linear(q, xn1, w.wq, w.bq, T, H, QD);
    linear(k, xn1, w.wk, w.bk, T, H, KD);
    linear(v, xn1, w.wv, w.bv, T, H, KD);
    rope_apply(q, b->pos, b->cs, T, NH, HS, 0);
    rope_apply(k, b->pos, b->cs, T, NKV, HS, 0);
    AttnShape s = attn_shape(m, b);
    attention_forward(att, lse, q, k, v, &s);
    memcpy(xmid, x, sizeof(float) * TH); /* residual, then += o_proj(att) */
    gemm_rows(T, H, QD, att, QD, w.wo, QD, 1.0f, xmid, H);
    add_bias(xmid, w.bo, T, H);
    rmsnorm_forward(xn2, b->rstd2 + (size_t)l * T, xmid, w.mlp_norm, T, H, (float)c->rms_norm_eps);
    linear(gate, xn2, w.wg, w.bg, T, H, I);
    linear(up, xn2, w.wu, w.bu, T, H, I);
    swiglu_forward(hbuf, gate, up, (long)T * I);
    float *xout = b->x + (l + 1) * TH;
    memcpy(xout, xmid, sizeof(float) * TH);
    gemm_rows(T, H, I, hbuf, I, w.wd, I, 1.0f, xout, H);
    add_bias(xout, w.bd, T, H);
}

/* The model's scratch buffer, grown to n floats when needed and kept between
 * batches (fresh multi-MB buffers would page-fault in every step). */
static float *grow(float **buf, size_t *have, size_t n) {
    if (n > *have) {
        free(*buf);
        *buf = xmalloc(sizeof(float) * (n ? n : 1));
        *have = n;
    }
    return *buf;
}

static float *scratch(Model *m, size_t n) { return grow(&m->scratch, &m->scratch_n, n); }

static float *lmwork(Model *m, const Batch *b) {
    return grow(&m->lmwork, &m->lmwork_n, lmhead_work(b->n_tgt, m->c.hidden_size, m->c.vocab_size));
}

/* NULL when the model does not train (no gradients) or the softmax is too big */
static float *lmkeep(Model *m, const Batch *b) {
    size_t n = (size_t)b->n_tgt * m->c.vocab_size;
    if (!m->grads || !b->n_tgt || n > m->lmkeep_max) return NULL;
    return grow(&m->lmkeep, &m->lmkeep_n, n);
}

void model_forward(Model *m, Batch *b, double *logps, int *n_scored) {
    const ModelConfig *c = &m->c;
    int T = b->T, H = c->hidden_size, L = c->num_hidden_layers;
    const float *E = tensor_at(m, m->params, "model.embed_tokens.weight");
    for (int t = 0; t < T; t++) memcpy(b->x + (size_t)t * H, E + (size_t)b->tokens[t] * H, sizeof(float) * (size_t)H);
    float *hbuf = scratch(m, (size_t)T * c->intermediate_size); /* reused by the backward */
    for (int l = 0; l < L; l++) layer_forward(m, b, l, hbuf);
    rmsnorm_forward(b->xf, b->rstdf, b->x + (size_t)L * T * H, tensor_at(m, m->params, "model.norm.weight"), T, H,
                    (float)c->rms_norm_eps);
    lmhead_forward(b->logp_t, b->lse_t, b->xf, lm_head(m, m->params), b->src, b->tgt, b->n_tgt, H, c->vocab_size, lmwork(m, b),
                   b->lmkeep = lmkeep(m, b));
    for (int g = 0; g < b->n_resp; g++) logps[g] = 0.0;
    for (int i = 0; i < b->n_tgt; i++) logps[b->tgt_resp[i]] += b->logp_t[i];
    if (n_scored) memcpy(n_scored, b->n_scored, sizeof(int) * (size_t)b->n_resp);
}

/* ---- backward ---- */

/* db[N] += sum over t of dy[t, N], in token order */
static void bias_backward(float *db, const float *dy, int T, int N) {
    if (!db) return;
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        double acc = 0.0;
        for (int t = 0; t < T; t++) acc += dy[(size_t)t * N + n];
        db[n] += (float)acc;
    }
}

/* y = x W^T + b: dx (+= when beta_x = 1) = dy W, dW += dy^T x, db += sum dy */
static void linear_backward(float *dx, float beta_x, float *dW, float *db, const float *dy, const float *x, const float *W,
                            int T, int in, int out) {
    gemm(0, 0, T, in, out, 1.0f, dy, out, W, in, beta_x, dx, in);
    gemm(1, 0, out, in, T, 1.0f, dy, out, x, in, 1.0f, dW, in);
    bias_backward(db, dy, T, out);
}

typedef struct {
    float *dxn, *dq, *dk, *dv, *datt, *dh, *dg, *du, *h;
} Scratch;

/* dx: [T, H] gradient of the layer's output in, of its input out */
static void layer_backward(Model *m, Batch *b, int l, float *dx, Scratch *s) {
    const ModelConfig *c = &m->c;
    int T = b->T, H = c->hidden_size, I = c->intermediate_size, NH = c->num_attention_heads, NKV = c->num_key_value_heads;
    int HS = c->head_dim, QD = NH * HS, KD = NKV * HS;
    size_t TH = (size_t)T * H;
    LayerW w = layer_view(m, m->params, l), dw = layer_view(m, m->grads, l);
    float *x = b->x + l * TH, *xn1 = b->xn1 + l * TH, *xn2 = b->xn2 + l * TH, *xmid = b->xmid + l * TH;
    float *q = b->q + (size_t)l * T * QD, *k = b->k + (size_t)l * T * KD, *v = b->v + (size_t)l * T * KD;
    float *att = b->att + (size_t)l * T * QD, *lse = b->lse + (size_t)l * T * NH;
    float *gate = b->gate + (size_t)l * T * I, *up = b->up + (size_t)l * T * I;

    /* MLP: out = xmid + down(silu(gate) * up) */
    swiglu_forward(s->h, gate, up, (long)T * I); /* recomputed, not stored */
    linear_backward(s->dh, 0.0f, dw.wd, dw.bd, dx, s->h, w.wd, T, I, H);
    swiglu_backward(s->dg, s->du, s->dh, gate, up, (long)T * I);
    linear_backward(s->dxn, 0.0f, dw.wg, dw.bg, s->dg, xn2, w.wg, T, H, I);
    linear_backward(s->dxn, 1.0f, dw.wu, dw.bu, s->du, xn2, w.wu, T, H, I);
    rmsnorm_backward(dx, dw.mlp_norm, s->dxn, xmid, w.mlp_norm, b->rstd2 + (size_t)l * T, T, H); /* dx: d xmid */

    /* attention: xmid = x + o_proj(att) */
    linear_backward(s->datt, 0.0f, dw.wo, dw.bo, dx, att, w.wo, T, QD, H);
    memset(s->dq, 0, sizeof(float) * (size_t)T * QD);
    memset(s->dk, 0, sizeof(float) * (size_t)T * KD);
    memset(s->dv, 0, sizeof(float) * (size_t)T * KD);
    AttnShape sh = attn_shape(m, b);
    attention_backward(s->dq, s->dk, s->dv, s->datt, att, lse, q, k, v, &sh);
    rope_apply(s->dq, b->pos, b->cs, T, NH, HS, 1); /* the rotation's transpose is its inverse */
    rope_apply(s->dk, b->pos, b->cs, T, NKV, HS, 1);
    linear_backward(s->dxn, 0.0f, dw.wq, dw.bq, s->dq, xn1, w.wq, T, H, QD);
    linear_backward(s->dxn, 1.0f, dw.wk, dw.bk, s->dk, xn1, w.wk, T, H, KD);
    linear_backward(s->dxn, 1.0f, dw.wv, dw.bv, s->dv, xn1, w.wv, T, H, KD);
    rmsnorm_backward(dx, dw.attn_norm, s->dxn, x, w.attn_norm, b->rstd1 + (size_t)l * T, T, H); /* dx: d x */
}

void model_backward(Model *m, Batch *b, const double *dlogps) {
    const ModelConfig *c = &m->c;
    int T = b->T, H = c->hidden_size, L = c->num_hidden_layers, I = c->intermediate_size;
    int QD = c->num_attention_heads * c->head_dim, KD = c->num_key_value_heads * c->head_dim;
    model_grads(m);
    double *g = xmalloc(sizeof(double) * (size_t)(b->n_tgt ? b->n_tgt : 1));
    for (int i = 0; i < b->n_tgt; i++) g[i] = dlogps[b->tgt_resp[i]];
    size_t TH = (size_t)T * H, TQ = (size_t)T * QD, TK = (size_t)T * KD, TI = (size_t)T * I;
    float *at = scratch(m, 3 * TH + 2 * TQ + 2 * TK + 4 * TI), *dxf = at, *dx = at + TH;
    memset(at, 0, sizeof(float) * 2 * TH); /* dxf and dx accumulate */
    at += 2 * TH;
    lmhead_backward(dxf, lm_head(m, m->grads), g, b->xf, lm_head(m, m->params), b->lse_t, b->src, b->tgt, b->n_tgt, H,
                    c->vocab_size, lmwork(m, b), b->lmkeep);
    b->lmkeep = NULL; /* consumed: another backward recomputes */
    rmsnorm_backward(dx, tensor_at(m, m->grads, "model.norm.weight"), dxf, b->x + (size_t)L * T * H,
                     tensor_at(m, m->params, "model.norm.weight"), b->rstdf, T, H);
    Scratch s; /* every buffer is written before it is read */
    s.dxn = at, at += TH;
    s.dq = at, at += TQ, s.datt = at, at += TQ;
    s.dk = at, at += TK, s.dv = at, at += TK;
    s.dh = at, at += TI, s.dg = at, at += TI, s.du = at, at += TI, s.h = at;
    for (int l = L - 1; l >= 0; l--) layer_backward(m, b, l, dx, &s);
    float *dE = tensor_at(m, m->grads, "model.embed_tokens.weight");
    for (int t = 0; t < T; t++) { /* in token order: deterministic */
        float *d = dE + (size_t)b->tokens[t] * H;
        for (int h = 0; h < H; h++) d[h] += dx[(size_t)t * H + h];
    }
    free(g);
}

/* ---- the parameters, for the decoder (llama_internal.h) ---- */

LayerW model_layer(const Model *m, int l) { return layer_view(m, m->params, l); }
float *model_tensor(const Model *m, const char *name) { return tensor_at(m, m->params, name); }
float *model_lm_head(const Model *m) { return lm_head(m, m->params); }
