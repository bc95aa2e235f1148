/* llama.c: the model (parameter buffers over the tensor table), batches of
 * shared-prompt rows, and the forward / backward passes that chain the
 * kernels of kernels.c. */
#include "model/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/common.h"
#include "io/safetensors.h"
#include "hf/checkpoint.h"
#include "kernels/gemm.h"
#include "kernels/kernels.h"
#include "model/internal.h"

/* ---- batches ---- */

/* A layer's activations, listed once: alloc_activations carves them, acts() finds a layer's, release_layer hands
 * them back. Each: its name, element, width per token (Widths) and the models that keep it (F32: float32 models,
 * BF: bf16 models, which keep in bf16 what only feeds products, ALL: both). */
#define LAYER_ACTS(X)                                                                                                  \
    X(xn1, float, H, F32) /* the normalised inputs of attention and the MLP */                                        \
    X(xn2, float, H, F32)                                                                                              \
    X(xn1b, bf16, H, BF)                                                                                               \
    X(xn2b, bf16, H, BF)                                                                                               \
    X(rstd1, float, one, ALL)                                                                                          \
    X(rstd2, float, one, ALL)                                                                                          \
    X(q, float, QD, F32) /* q, k, v after RoPE, and attention's output */                                             \
    X(k, float, KD, F32)                                                                                               \
    X(v, float, KD, F32)                                                                                               \
    X(att, float, QD, F32)                                                                                             \
    X(qb, bf16, QD, BF)                                                                                                \
    X(kb, bf16, KD, BF)                                                                                                \
    X(vb, bf16, KD, BF)                                                                                                \
    X(attb, bf16, QD, BF)                                                                                              \
    X(lse, float, NH, ALL)                                                                                             \
    X(xmid, float, H, ALL) /* the residual after attention */                                                          \
    X(gate, float, I, F32) /* the MLP's gate and up projections */                                                     \
    X(up, float, I, F32)                                                                                               \
    X(gateb, bf16, I, BF)                                                                                              \
    X(upb, bf16, I, BF)

enum { ALL, F32, BF };
static int kept(int keep, int bf) { return keep == ALL || (keep == BF) == (bf != 0); }

typedef struct {
    size_t H, QD, KD, I, NH, one;
} Widths;

static Widths widths(const ModelConfig *c) {
    return (Widths){(size_t)c->hidden_size, (size_t)c->num_attention_heads * c->head_dim,
                    (size_t)c->num_key_value_heads * c->head_dim, (size_t)c->intermediate_size,
                    (size_t)c->num_attention_heads, 1};
}

/* a layer's activations [T, width] (NULL: not kept by this model), and its input x [T, H] */
#define ACT_FIELD(name, type, wd, keep) type *name;
typedef struct {
    float *x;
    LAYER_ACTS(ACT_FIELD)
} Acts;
#undef ACT_FIELD

struct Batch {
    int n_rows, T, n_resp, n_tgt, n_pos;
    size_t act_bytes;   /* of the model's arena */
    int slots;          /* layers whose activations are kept: L, or 1 (recomputed in the backward) */
    int *tokens, *pos, *pstart, *plen, *sstart, *rows; /* [T], rows [n_rows + 1] */
    int *src, *tgt, *tgt_resp;                         /* [n_tgt] scored targets */
    int *n_scored;                                     /* [n_resp] */
    int *last;                                         /* [n_resp] where a reward head reads each response */
    Acts act;           /* slot 0 of each [slots, T, width] (layer l in slot l, or all in slot 0); x: [L + 1, T, H],
                         * every layer's input, then the last residual */
    float *xf, *rstdf;  /* [T, H], [T] */
    float *lse_t;       /* [n_tgt] */
    double *logp_t;     /* [n_tgt] */
    float *cs;          /* RoPE table [n_pos, HS/2, 2] */
    LmKeep lmkeep;      /* [n_tgt, V] softmax kept by the forward, or none */
};

static int check_ids(const ModelConfig *c, const int *ids, int n, int row, const char *what, char *err,
                     size_t errlen) {
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= c->vocab_size) {
            snprintf(err, errlen, "row %d: %s token %d = %d is outside the vocabulary (0..%d)", row, what, i, ids[i],
                     c->vocab_size - 1);
            return -1;
        }
    return 0;
}

int batch_layout_count(const ModelConfig *c, const Row *rows, int n_rows, BatchLayout *lay, char *err,
                       size_t errlen) {
    memset(lay, 0, sizeof *lay);
    lay->n_rows = n_rows;
    for (int r = 0; r < n_rows; r++) {
        const Row *w = &rows[r];
        if (w->prompt_len < 1 || w->n_resp < 1) {
            snprintf(err, errlen, "row %d: needs a prompt of at least 1 token and at least 1 response", r);
            return -1;
        }
        if (check_ids(c, w->prompt, w->prompt_len, r, "prompt", err, errlen)) return -1;
        lay->T += w->prompt_len;
        for (int k = 0; k < w->n_resp; k++) {
            if (w->resp_len[k] < 1) {
                snprintf(err, errlen, "row %d: response %d is empty (nothing to score)", r, k);
                return -1;
            }
            if (check_ids(c, w->resp[k], w->resp_len[k], r, "response", err, errlen)) return -1;
            int len = w->prompt_len + w->resp_len[k];
            if (model_config_check_seq_len(c, len, err, errlen)) return -1;
            lay->n_pos = len > lay->n_pos ? len : lay->n_pos;
            lay->T += w->resp_len[k];
            lay->n_tgt += w->resp_len[k];
            lay->n_resp++;
        }
    }
    return 0;
}

#define ALLOC(p, n) ((p) = xcalloc((size_t)(n), sizeof *(p))) /* xcalloc takes 0 */

/* A mapped buffer of the model (core/common.h's xmap: low memory hands its pages back within a step), grown to n
 * floats when needed and kept between batches. */
static float *grow_mapped(float **buf, size_t *have, size_t n) {
    if (n > *have) {
        ppa_unmap(*buf, sizeof(float) * *have);
        *buf = xmap(sizeof(float) * n);
        *have = n;
    }
    return *buf;
}

/* bytes at *off of base (NULL, or nothing to place: NULL), the offset moved on in 64-byte steps */
static void *place(char *base, size_t *off, size_t bytes) {
    void *p = base && bytes ? base + *off : NULL;
    *off += (bytes + 63) & ~(size_t)63;
    return p;
}

/* Points the batch's activations into base (NULL: only measures); returns their bytes. */
static size_t carve(const Model *m, Batch *b, char *base) {
    const ModelConfig *c = &m->c;
    Widths w = widths(c);
    size_t T = (size_t)b->T, L = (size_t)b->slots, f = sizeof(float), off = 0;
    int bf = m->bf16;
    b->act.x = place(base, &off, ((size_t)c->num_hidden_layers + 1) * T * w.H * f); /* every layer's input is kept */
#define ACT_PLACE(name, type, wd, keep) b->act.name = place(base, &off, kept(keep, bf) * L * T * w.wd * sizeof(type));
    LAYER_ACTS(ACT_PLACE)
#undef ACT_PLACE
    b->xf = place(base, &off, T * w.H * f), b->rstdf = place(base, &off, T * f);
    b->lse_t = place(base, &off, (size_t)b->n_tgt * f), b->cs = place(base, &off, (size_t)b->n_pos * c->head_dim * f);
    return off;
}

/* Carves the activations out of the model's arena (grown when needed; the
 * forward writes every element before it is read, so nothing is cleared). */
static int alloc_activations(Model *m, Batch *b, char *err, size_t errlen) {
    size_t total = carve(m, b, NULL);
    double need = (double)total, have = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    if (have > 0 && need > have) { /* refused before xmalloc dies on it */
        snprintf(err, errlen, "a batch of %d tokens needs %.1f GB of activations, more than this machine's %.1f GB: "
                 "use fewer lists per micro-batch, a shorter --max-length or a smaller list size", b->T, need / 1e9,
                 have / 1e9);
        return -1;
    }
    /* release_layer hands each layer's pages back */
    carve(m, b, (char *)grow_mapped(&m->arena, &m->arena_n, total / sizeof(float)));
    b->act_bytes = total;
    ALLOC(b->logp_t, b->n_tgt);
    m->dev->rope_table(b->cs, m->inv_freq, b->n_pos, m->c.head_dim);
    return 0;
}

/* The packed index a reward head reads for the sequence prompt [p0, p0 + P) +
 * response [s0, end) (the row's earlier responses lie between them, and are
 * not part of this sequence): its last token, or the rightmost one that is
 * not pad when the sequence ends in pad tokens (transformers' rule since
 * 4.48; the first token when all are pad). */
static int reward_token(const int *tokens, int p0, int P, int s0, int end, int pad) {
    if (pad < 0) return end - 1;
    for (int t = end - 1; t >= s0; t--)
        if (tokens[t] != pad) return t;
    for (int t = p0 + P - 1; t >= p0; t--)
        if (tokens[t] != pad) return t;
    return p0;
}

void batch_layout_fill(const ModelConfig *c, const Row *rows, int n_rows, BatchLayout *lay) {
    int T = lay->T, n_tgt = lay->n_tgt, n_resp = lay->n_resp;
    ALLOC(lay->tokens, T), ALLOC(lay->pos, T), ALLOC(lay->pstart, T), ALLOC(lay->plen, T), ALLOC(lay->sstart, T);
    ALLOC(lay->rows, n_rows + 1), ALLOC(lay->src, n_tgt), ALLOC(lay->tgt, n_tgt), ALLOC(lay->tgt_resp, n_tgt);
    ALLOC(lay->n_scored, n_resp), ALLOC(lay->last, n_resp);
    int t = 0, i = 0, g = 0;
    for (int r = 0; r < n_rows; r++) {
        const Row *w = &rows[r];
        int p0 = t, P = w->prompt_len;
        lay->rows[r] = t;
        for (int j = 0; j < P; j++, t++) /* the prompt: causal among itself */
            lay->tokens[t] = w->prompt[j], lay->pos[t] = j, lay->pstart[t] = p0, lay->plen[t] = 0, lay->sstart[t] = p0;
        for (int k = 0; k < w->n_resp; k++, g++) {
            int s0 = t;
            for (int j = 0; j < w->resp_len[k]; j++, t++, i++) {
                lay->tokens[t] = w->resp[k][j], lay->pos[t] = P + j, lay->pstart[t] = p0, lay->plen[t] = P;
                lay->sstart[t] = s0;
                lay->tgt[i] = w->resp[k][j]; /* scored by the logits of the token before */
                lay->src[i] = j ? t - 1 : p0 + P - 1;
                lay->tgt_resp[i] = g;
            }
            lay->n_scored[g] = w->resp_len[k];
            lay->last[g] = reward_token(lay->tokens, p0, P, s0, t, c->pad_token_id);
        }
    }
    lay->rows[n_rows] = t;
}

void batch_layout_free(BatchLayout *lay) {
    void *all[] = {lay->tokens, lay->pos, lay->pstart, lay->plen, lay->sstart, lay->rows, lay->src, lay->tgt,
                   lay->tgt_resp, lay->n_scored, lay->last};
    for (size_t i = 0; i < PPA_ARRAY_LEN(all); i++) free(all[i]);
    memset(lay, 0, sizeof *lay);
}

Batch *batch_new(Model *m, const Row *rows, int n_rows, char *err, size_t errlen) {
    BatchLayout lay;
    if (batch_layout_count(&m->c, rows, n_rows, &lay, err, errlen)) return NULL;
    Batch *b = xcalloc(1, sizeof *b);
    b->n_rows = n_rows, b->T = lay.T, b->n_resp = lay.n_resp, b->n_tgt = lay.n_tgt, b->n_pos = lay.n_pos;
    b->slots = model_trains(m) && !m->gc ? m->c.num_hidden_layers : 1;
    if (alloc_activations(m, b, err, errlen)) { /* first: a batch too large is refused before anything is allocated */
        batch_free(b);
        return NULL;
    }
    batch_layout_fill(&m->c, rows, n_rows, &lay); /* the arrays are the batch's from here (batch_free frees them) */
    b->tokens = lay.tokens, b->pos = lay.pos, b->pstart = lay.pstart, b->plen = lay.plen, b->sstart = lay.sstart;
    b->rows = lay.rows, b->src = lay.src, b->tgt = lay.tgt, b->tgt_resp = lay.tgt_resp, b->n_scored = lay.n_scored;
    b->last = lay.last;
    return b;
}

void batch_free(Batch *b) {
    if (!b) return;
    void *all[] = {b->tokens, b->pos, b->pstart, b->plen, b->sstart, b->rows, b->src, b->tgt, b->tgt_resp, b->n_scored,
                   b->last, b->logp_t}; /* the activations live in the model's arena */
    for (size_t i = 0; i < PPA_ARRAY_LEN(all); i++) free(all[i]);
    free(b);
}

int batch_n_responses(const Batch *b) { return b->n_resp; }
int batch_n_tokens(const Batch *b) { return b->T; }
size_t batch_activation_bytes(const Batch *b) { return b->act_bytes; }

/* ---- forward ---- */

static void add_bias(float *y, const float *bias, int T, int N) {
    if (!bias) return;
#pragma omp parallel for schedule(static)
    for (int t = 0; t < T; t++)
        for (int n = 0; n < N; n++) y[(size_t)t * N + n] += bias[n];
}

/* bf16 scratch for a product with W: none for float32 products */
static bf16 *btmp_for(Model *m, Weight W, size_t n) { return W.b ? model_btmp(m, n) : NULL; }

/* y[T, out] = x[T, in] W^T (+ bias); W: [out, in] */
static void linear(Model *m, float *y, Act x, Weight W, const float *bias, int T, int in, int out) {
    m->dev->mm_forward(y, 0.0f, x, in, W, T, in, out, x.b ? NULL : btmp_for(m, W, (size_t)T * in));
    add_bias(y, bias, T, out);
}

static AttnShape attn_shape(const Model *m, const Batch *b) {
    return (AttnShape){b->pstart, b->plen, b->sstart, b->rows, b->n_rows, b->T, m->c.num_attention_heads,
                       m->c.num_key_value_heads, m->c.head_dim, m->bf16 != 0};
}

/* layer l's activations: its slot (l, or 0 when the batch keeps one layer) */
static Acts acts(const Model *m, const Batch *b, int l) {
    Widths w = widths(&m->c);
    size_t T = (size_t)b->T, s = b->slots > 1 ? (size_t)l : 0;
    Acts a = b->act;
    a.x += (size_t)l * T * w.H;
#define ACT_AT(name, type, wd, keep) if (a.name) a.name += s * T * w.wd;
    LAYER_ACTS(ACT_AT)
#undef ACT_AT
    return a;
}

/* xn = rmsnorm(x) w, stored as the model keeps it (bf16 models: through tmp [T, H] into xnb); the product operand */
static Act norm(const Model *m, float *xn, bf16 *xnb, float *rstd, const float *x, const float *w, int T, float *tmp) {
    int H = m->c.hidden_size;
    m->dev->rmsnorm_forward(xnb ? tmp : xn, rstd, x, w, T, H, (float)m->c.rms_norm_eps);
    if (!xnb) return act_f32(xn);
    m->dev->to_bf16(xnb, tmp, (size_t)T * H);
    return (Act){NULL, xnb};
}

/* floats of the attention's float32 q, k, v and att [T, 2 (NH + NKV) HS] in a bf16 model's scratch (none in a float32 one) */
static size_t attn_wide(const Model *m, size_t T) {
    return m->bf16 ? 2 * T * (size_t)(m->c.num_attention_heads + m->c.num_key_value_heads) * (size_t)m->c.head_dim : 0;
}

/* the forward's scratch, hbuf: h [T, I] (bf16 models: a norm's [T, H] output, then the float32 q, k, v and att,
 * then the float32 gate and up) */
static size_t mlp_scratch(const Model *m, size_t T) {
    size_t H = (size_t)m->c.hidden_size, I = (size_t)m->c.intermediate_size * (m->bf16 ? 2 : 1);
    size_t n = T * (I > H ? I : H), a = attn_wide(m, T);
    return n > a ? n : a;
}

/* gate and up = xn2's projections (+ LoRA), kept for the backward as the model keeps them: bf16 models round them
 * into bf16 (half the largest activations) after h = silu(gate) * up is computed from their float32 values, so h
 * is rounded once, as the down projection (and its adapter) take it. Returns h: float32 in hbuf, or bf16 in the
 * products' bf16 scratch. hbuf: [mlp_scratch(m, T)] */
static Act mlp_hidden(Model *m, Acts *a, Act xn2, const LayerW *w, const LayerM *W, int l, int T, float *hbuf) {
    int H = m->c.hidden_size, I = m->c.intermediate_size;
    size_t TI = (size_t)T * I;
    float *g = a->gateb ? hbuf : a->gate, *u = a->gateb ? hbuf + TI : a->up;
    linear(m, g, xn2, W->g, w->bg, T, H, I);
    linear(m, u, xn2, W->u, w->bu, T, H, I);
    lora_forward(m, l, 4, g, xn2, T);
    lora_forward(m, l, 5, u, xn2, T);
    if (!a->gateb) {
        m->dev->swiglu_forward(hbuf, NULL, NULL, NULL, act_f32(g), act_f32(u), (long)TI);
        return act_f32(hbuf);
    }
    bf16 *h = model_btmp(m, TI); /* the down product takes a bf16 operand as it is: no other use of the scratch */
    m->dev->swiglu_forward(NULL, h, a->gateb, a->upb, act_f32(g), act_f32(u), (long)TI);
    return (Act){NULL, h};
}

/* attention's q, k, v and att [T, QD | KD] in float32: the kept ones (float32 models) or wide's (bf16 models) */
typedef struct {
    float *q, *k, *v, *att;
} QKV;

static QKV attn_f32(const Acts *a, float *wide, int T, int QD, int KD) {
    if (!a->qb) return (QKV){a->q, a->k, a->v, a->att};
    size_t TQ = (size_t)T * QD, TK = (size_t)T * KD;
    return (QKV){wide, wide + TQ, wide + TQ + TK, wide + TQ + 2 * TK};
}

/* bf16 models keep q, k, v and att rounded, as attention's products and o_proj take them (the same bytes as
 * rounding them there): half the memory. Returns att as o_proj and its adapter take it. */
static Act attn_keep(const Device *D, const Acts *a, const QKV *f, int T, int QD, int KD) {
    if (!a->qb) return act_f32(a->att);
    size_t TQ = (size_t)T * QD, TK = (size_t)T * KD;
    D->to_bf16(a->qb, f->q, TQ), D->to_bf16(a->kb, f->k, TK);
    D->to_bf16(a->vb, f->v, TK), D->to_bf16(a->attb, f->att, TQ);
    return (Act){NULL, a->attb};
}

/* the same widened back to float32 into wide (bf16 models) for attention's backward */
static QKV attn_widen(const Device *D, const Acts *a, float *wide, int T, int QD, int KD) {
    QKV f = attn_f32(a, wide, T, QD, KD);
    if (!a->qb) return f;
    size_t TQ = (size_t)T * QD, TK = (size_t)T * KD;
    D->from_bf16(f.q, a->qb, TQ), D->from_bf16(f.k, a->kb, TK);
    D->from_bf16(f.v, a->vb, TK), D->from_bf16(f.att, a->attb, TQ);
    return f;
}

/* hbuf: [mlp_scratch(m, T)] */
static void layer_forward(Model *m, Batch *b, int l, float *hbuf) {
    const ModelConfig *c = &m->c;
    int T = b->T, H = c->hidden_size, I = c->intermediate_size, NH = c->num_attention_heads, NKV = c->num_key_value_heads;
    int HS = c->head_dim, QD = NH * HS, KD = NKV * HS;
    size_t TH = (size_t)T * H;
    LayerW w = layer_view(m, m->params, l);
    LayerM W = model_layer_mats(m, l);
    Acts a = acts(m, b, l);
    Act xn1 = norm(m, a.xn1, a.xn1b, a.rstd1, a.x, w.attn_norm, T, hbuf);
    QKV f = attn_f32(&a, hbuf, T, QD, KD); /* bf16 models: float32 in hbuf, then kept in bf16 */
    linear(m, f.q, xn1, W.q, w.bq, T, H, QD);
    linear(m, f.k, xn1, W.k, w.bk, T, H, KD);
    linear(m, f.v, xn1, W.v, w.bv, T, H, KD);
    lora_forward(m, l, 0, f.q, xn1, T);
    lora_forward(m, l, 1, f.k, xn1, T);
    lora_forward(m, l, 2, f.v, xn1, T);
    m->dev->rope_apply(f.q, b->pos, b->cs, T, NH, HS, 0);
    m->dev->rope_apply(f.k, b->pos, b->cs, T, NKV, HS, 0);
    AttnShape s = attn_shape(m, b);
    m->dev->attention_forward(f.att, a.lse, f.q, f.k, f.v, &s);
    Act att = attn_keep(m->dev, &a, &f, T, QD, KD);
    memcpy(a.xmid, a.x, sizeof(float) * TH); /* residual, then += o_proj(att) */
    m->dev->mm_forward(a.xmid, 1.0f, att, QD, W.o, T, QD, H, att.b ? NULL : btmp_for(m, W.o, (size_t)T * QD));
    add_bias(a.xmid, w.bo, T, H);
    lora_forward(m, l, 3, a.xmid, att, T);
    Act xn2 = norm(m, a.xn2, a.xn2b, a.rstd2, a.xmid, w.mlp_norm, T, hbuf);
    Act h = mlp_hidden(m, &a, xn2, &w, &W, l, T, hbuf);
    float *xout = a.x + TH;
    memcpy(xout, a.xmid, sizeof(float) * TH);
    m->dev->mm_forward(xout, 1.0f, h, I, W.d, T, I, H, h.b ? NULL : btmp_for(m, W.d, (size_t)T * I));
    add_bias(xout, w.bd, T, H);
    lora_forward(m, l, 6, xout, h, T);
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
    return grow(&m->lmwork, &m->lmwork_n, m->dev->lmhead_work(b->n_tgt, m->c.hidden_size, m->c.vocab_size));
}

/* The softmax the forward keeps for the backward: bf16 when the head's products are (half the memory), float32
 * otherwise; none when the model does not train (no gradients), checkpoints (which trades the memory for a
 * recomputation) or it would take more than model_keep_softmax allows. */
static LmKeep lmkeep(Model *m, const Batch *b) {
    int bf = model_lm_weight(m).b != NULL;
    size_t bytes = (size_t)b->n_tgt * m->c.vocab_size * (bf ? sizeof(bf16) : sizeof(float));
    if (!model_trains(m) || m->gc || !b->n_tgt || bytes > m->lmkeep_max) return (LmKeep){NULL, NULL};
    float *p = grow_mapped(&m->lmkeep, &m->lmkeep_n, (bytes + sizeof(float) - 1) / sizeof(float));
    return bf ? (LmKeep){NULL, (bf16 *)p} : (LmKeep){p, NULL};
}

/* the layers and the final norm: b->xf */
static void trunk_forward(Model *m, Batch *b) {
    const ModelConfig *c = &m->c;
    int T = b->T, H = c->hidden_size, L = c->num_hidden_layers;
    model_embed(m, b->tokens, T, b->act.x);
    float *hbuf = scratch(m, mlp_scratch(m, (size_t)T)); /* reused by the backward */
    for (int l = 0; l < L; l++) layer_forward(m, b, l, hbuf);
    m->dev->rmsnorm_forward(b->xf, b->rstdf, b->act.x + (size_t)L * T * H, final_norm(m, m->params), T, H,
                    (float)c->rms_norm_eps);
}

static void need_head(const Model *m, int reward, const char *who) {
    if ((m->c.head != HEAD_LM) != reward)
        ppa_die(70, "%s: called on a %s (internal)", who, reward ? "causal LM" : "reward model");
}

void model_forward(Model *m, Batch *b, double *logps, int *n_scored) {
    const ModelConfig *c = &m->c;
    int H = c->hidden_size, V = c->vocab_size;
    need_head(m, 0, "model_forward");
    trunk_forward(m, b);
    bf16 *bt = m->bf16 ? model_btmp(m, m->dev->lmhead_btmp(b->n_tgt, H, V)) : NULL;
    b->lmkeep = lmkeep(m, b);
    m->dev->lmhead_forward(b->logp_t, b->lse_t, b->xf, model_lm_weight(m), b->src, b->tgt, b->n_tgt, H, V, lmwork(m, b),
                   b->lmkeep, bt);
    if (m->low_memory && b->lmkeep.b) /* the backward reads the kept softmax, not the work's logits chunk */
        ppa_release(m->lmwork, sizeof(float) * (size_t)m->dev->lmhead_chunk(b->n_tgt, V) * (size_t)V, 0);
    for (int g = 0; g < b->n_resp; g++) logps[g] = 0.0;
    for (int i = 0; i < b->n_tgt; i++) logps[b->tgt_resp[i]] += b->logp_t[i];
    if (n_scored) memcpy(n_scored, b->n_scored, sizeof(int) * (size_t)b->n_resp);
}

/* row j of the reward head as the products see it: the bf16 copy in a bf16 model */
static float head_w(Weight W, size_t i) { return W.b ? bf16_f32(W.b[i]) : W.f[i]; }

void model_forward_rewards(Model *m, Batch *b, double *rewards) {
    int H = m->c.hidden_size, NL = m->c.num_labels;
    need_head(m, 1, "model_forward_rewards");
    trunk_forward(m, b);
    Weight W = model_lm_weight(m);
    for (int g = 0; g < b->n_resp; g++) {
        const float *h = b->xf + (size_t)b->last[g] * H;
        for (int j = 0; j < NL; j++) {
            double acc = 0.0;
            for (int k = 0; k < H; k++) acc += (double)head_w(W, (size_t)j * H + k) * h[k];
            rewards[(size_t)g * NL + j] = acc;
        }
    }
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

/* y = x W^T + b: dx (+= when beta_x = 1) = dy W, dW += dy^T x, db += sum dy (dy float32 where there is a bias) */
static void linear_backward(Model *m, float *dx, float beta_x, float *dW, float *db, Act dy, Act x, Weight W, int T,
                            int in, int out) {
    m->dev->mm_backward(dx, beta_x, dW, dy, x, W, T, in, out, btmp_for(m, W, mm_tmp(T, in, out)));
    if (db && !dy.f) ppa_die(70, "linear_backward: a bias needs a float32 dy (internal)");
    bias_backward(db, dy.f, T, out);
}

typedef struct {
    float *dxn, *dq, *dk, *dv, *datt, *dh, *dg, *du, *h;
} Scratch;

/* dx: [T, H] gradient of the layer's output in, of its input out */
static void layer_backward(Model *m, Batch *b, int l, float *dx, Scratch *s) {
    const ModelConfig *c = &m->c;
    int T = b->T, H = c->hidden_size, I = c->intermediate_size, NH = c->num_attention_heads, NKV = c->num_key_value_heads;
    int HS = c->head_dim, QD = NH * HS, KD = NKV * HS;
    LayerW w = layer_view(m, m->params, l), dw = layer_view(m, m->grads, l);
    LayerM W = model_layer_mats(m, l);
    Acts a = acts(m, b, l);

    /* MLP: out = xmid + down(silu(gate) * up) */
    Act gate = {a.gate, a.gateb}, up = {a.up, a.upb};
    float *hf = a.gateb ? NULL : s->h; /* h recomputed, not stored: bf16 from the bf16 gate and up */
    bf16 *hb = a.gateb ? (bf16 *)s->h : NULL;
    m->dev->swiglu_forward(hf, hb, NULL, NULL, gate, up, (long)T * I);
    Act h = {hf, hb};
    Act xn1 = {a.xn1, a.xn1b}, xn2 = {a.xn2, a.xn2b};
    linear_backward(m, s->dh, 0.0f, dw.wd, dw.bd, act_f32(dx), h, W.d, T, I, H);
    lora_backward(m, l, 6, s->dh, dx, h, T);
    /* bf16 products take d gate and d up rounded, straight from swiglu, unless a bias or an adapter reads them */
    int round = a.gateb && !dw.bg && !dw.bu && !lora_active(m, l, 4) && !lora_active(m, l, 5);
    float *dgf = round ? NULL : s->dg, *duf = round ? NULL : s->du;
    bf16 *dgb = round ? (bf16 *)s->dg : NULL, *dub = round ? (bf16 *)s->du : NULL;
    m->dev->swiglu_backward(dgf, dgb, duf, dub, s->dh, gate, up, (long)T * I);
    if (m->low_memory && b->slots > 1) { /* the largest activations are dead before the layer's largest gradients */
        size_t TI = (size_t)T * I, e = a.gateb ? sizeof(bf16) : sizeof(float);
        ppa_release(a.gateb ? (void *)a.gateb : (void *)a.gate, TI * e, 0);
        ppa_release(a.upb ? (void *)a.upb : (void *)a.up, TI * e, 0);
    }
    Act dg = {dgf, dgb}, du = {duf, dub};
    linear_backward(m, s->dxn, 0.0f, dw.wg, dw.bg, dg, xn2, W.g, T, H, I);
    lora_backward(m, l, 4, s->dxn, s->dg, xn2, T);
    linear_backward(m, s->dxn, 1.0f, dw.wu, dw.bu, du, xn2, W.u, T, H, I);
    lora_backward(m, l, 5, s->dxn, s->du, xn2, T);
    m->dev->rmsnorm_backward(dx, dw.mlp_norm, s->dxn, a.xmid, w.mlp_norm, a.rstd2, T, H); /* dx: d xmid */

    /* attention: xmid = x + o_proj(att) */
    Act att = {a.att, a.attb}; /* one of them, as the model keeps it */
    linear_backward(m, s->datt, 0.0f, dw.wo, dw.bo, act_f32(dx), att, W.o, T, QD, H);
    lora_backward(m, l, 3, s->datt, dx, att, T);
    memset(s->dq, 0, sizeof(float) * (size_t)T * QD);
    memset(s->dk, 0, sizeof(float) * (size_t)T * KD);
    memset(s->dv, 0, sizeof(float) * (size_t)T * KD);
    AttnShape sh = attn_shape(m, b);
    QKV f = attn_widen(m->dev, &a, s->dh, T, QD, KD); /* the MLP's buffers are free from here */
    m->dev->attention_backward(s->dq, s->dk, s->dv, s->datt, f.att, a.lse, f.q, f.k, f.v, &sh);
    m->dev->rope_apply(s->dq, b->pos, b->cs, T, NH, HS, 1); /* the rotation's transpose is its inverse */
    m->dev->rope_apply(s->dk, b->pos, b->cs, T, NKV, HS, 1);
    linear_backward(m, s->dxn, 0.0f, dw.wq, dw.bq, act_f32(s->dq), xn1, W.q, T, H, QD);
    lora_backward(m, l, 0, s->dxn, s->dq, xn1, T);
    linear_backward(m, s->dxn, 1.0f, dw.wk, dw.bk, act_f32(s->dk), xn1, W.k, T, H, KD);
    lora_backward(m, l, 1, s->dxn, s->dk, xn1, T);
    linear_backward(m, s->dxn, 1.0f, dw.wv, dw.bv, act_f32(s->dv), xn1, W.v, T, H, KD);
    lora_backward(m, l, 2, s->dxn, s->dv, xn1, T);
    m->dev->rmsnorm_backward(dx, dw.attn_norm, s->dxn, a.x, w.attn_norm, a.rstd1, T, H); /* dx: d x */
}

/* Low memory: once layer l is differentiated, the batch needs none of its activations: their pages go back to the
 * system (the next forward writes every element before reading it), so the backward's memory falls as its gradients
 * fill. With one kept slot (checkpointing) only the layer's input is the layer's own. */
static void release_layer(const Model *m, const Batch *b, int l) {
    if (!m->low_memory) return;
    Widths w = widths(&m->c);
    size_t T = (size_t)b->T;
    Acts a = acts(m, b, l);
    ppa_release(a.x, T * w.H * sizeof(float), 0);
    if (b->slots == 1) return;
#define ACT_RELEASE(name, type, wd, keep) if (a.name) ppa_release(a.name, T * w.wd * sizeof(type), 0);
    LAYER_ACTS(ACT_RELEASE) /* gate and up again: layer_backward released them as soon as it had read them */
#undef ACT_RELEASE
}

/* The scratch of the backward: dxf and dx [T, H] zeroed, the layer buffers after them */
static float *backward_scratch(Model *m, const Batch *b) {
    const ModelConfig *c = &m->c;
    size_t T = (size_t)b->T, H = (size_t)c->hidden_size, I = (size_t)c->intermediate_size;
    size_t QD = (size_t)c->num_attention_heads * c->head_dim, KD = (size_t)c->num_key_value_heads * c->head_dim;
    size_t TW = b->slots == 1 ? mlp_scratch(m, T) : T * I; /* h; with checkpointing, the recomputing forward's hbuf */
    size_t mlp = 3 * T * I + TW, wide = attn_wide(m, T); /* d h, d gate, d up and h; then attention's float32 q .. */
    float *at = scratch(m, 3 * T * H + 2 * T * QD + 2 * T * KD + (mlp > wide ? mlp : wide));
    memset(at, 0, sizeof(float) * 2 * T * H); /* dxf and dx accumulate */
    return at;
}

/* From d loss / d xf (at [T, H], the scratch's start) down to the embeddings. */
static void trunk_backward(Model *m, Batch *b, float *at) {
    const ModelConfig *c = &m->c;
    int T = b->T, H = c->hidden_size, L = c->num_hidden_layers, I = c->intermediate_size;
    int QD = c->num_attention_heads * c->head_dim, KD = c->num_key_value_heads * c->head_dim;
    size_t TH = (size_t)T * H, TQ = (size_t)T * QD, TK = (size_t)T * KD, TI = (size_t)T * I;
    float *dxf = at, *dx = at + TH;
    at += 2 * TH;
    m->dev->rmsnorm_backward(dx, final_norm(m, m->grads), dxf, b->act.x + (size_t)L * T * H,
                     final_norm(m, m->params), b->rstdf, T, H);
    if (m->low_memory) ppa_release(b->act.x + (size_t)L * T * H, sizeof(float) * T * H, 0);
    Scratch s; /* every buffer is written before it is read */
    s.dxn = at, at += TH;
    s.dq = at, at += TQ, s.datt = at, at += TQ;
    s.dk = at, at += TK, s.dv = at, at += TK;
    s.dh = at, at += TI, s.dg = at, at += TI, s.du = at, at += TI, s.h = at;
    for (int l = L - 1; l >= 0; l--) {
        /* one kept layer: recompute layer l from its input (the forward left the last layer's) */
        if (b->slots == 1 && l < L - 1) layer_forward(m, b, l, s.h);
        layer_backward(m, b, l, dx, &s);
        release_layer(m, b, l);
    }
}

/* The end of every backward: the embeddings' gradient from d loss / d x_0 (the scratch's second [T, H] buffer),
 * added last, after the tied LM head's share in every path, so both add in the same order; then, with low memory,
 * the scratch's pages go back (the forward needs less of it). */
static void embed_backward(Model *m, const Batch *b) {
    int H = m->c.hidden_size;
    const float *dx = m->scratch + (size_t)b->T * H;
    float *dE = embed_tokens(m, m->grads);
    for (int t = 0; dE && t < b->T; t++) { /* in token order: deterministic */
        float *d = dE + (size_t)b->tokens[t] * H;
        for (int h = 0; h < H; h++) d[h] += dx[(size_t)t * H + h];
    }
    if (m->low_memory) ppa_release(m->scratch, sizeof(float) * m->scratch_n, 0);
}

/* the gradients a backward adds into: the model's, or its adapter's (lora.h: the base frozen) */
static void backward_grads(Model *m) {
    if (m->lora && !m->lora->enabled) ppa_die(70, "model_backward: the adapter is off (internal)");
    model_grads(m);
}

void model_backward(Model *m, Batch *b, const double *dlogps) {
    int H = m->c.hidden_size, V = m->c.vocab_size;
    need_head(m, 0, "model_backward");
    backward_grads(m);
    double *g = xmalloc(sizeof(double) * (size_t)(b->n_tgt ? b->n_tgt : 1));
    for (int i = 0; i < b->n_tgt; i++) g[i] = dlogps[b->tgt_resp[i]];
    float *at = backward_scratch(m, b);
    bf16 *bt = m->bf16 ? model_btmp(m, m->dev->lmhead_btmp(b->n_tgt, H, V)) : NULL;
    /* with a kept softmax the head's weight gradient waits in the d logits it leaves there until the layers are
     * done and their activations released: the peak then holds neither it nor the layers' gradients */
    LmKeep kept = b->lmkeep;
    float *dW = lm_head(m, m->grads);
    int defer = dW && (kept.f || kept.b);
    m->dev->lmhead_backward(at, defer ? NULL : dW, g, b->logp_t, b->xf, model_lm_weight(m), b->lse_t, b->src, b->tgt, b->n_tgt,
                    H, V, lmwork(m, b), kept, bt);
    b->lmkeep = (LmKeep){NULL, NULL}; /* consumed: another backward recomputes */
    free(g);
    trunk_backward(m, b, at);
    if (defer) {
        bt = m->bf16 ? model_btmp(m, m->dev->lmhead_btmp(b->n_tgt, H, V)) : NULL; /* the layers may have grown it */
        m->dev->lmhead_backward_weights(dW, b->xf, model_lm_weight(m), b->src, b->n_tgt, H, V, lmwork(m, b), kept, bt);
        if (m->low_memory) ppa_release(m->lmkeep, sizeof(float) * m->lmkeep_n, 0);
    }
    embed_backward(m, b);
}

void model_backward_rewards(Model *m, Batch *b, const double *drewards) {
    int H = m->c.hidden_size, NL = m->c.num_labels;
    need_head(m, 1, "model_backward_rewards");
    backward_grads(m);
    float *dxf = backward_scratch(m, b), *dW = lm_head(m, m->grads);
    Weight W = model_lm_weight(m);
    for (int g = 0; g < b->n_resp; g++) { /* in response order: deterministic */
        const float *h = b->xf + (size_t)b->last[g] * H;
        float *dh = dxf + (size_t)b->last[g] * H;
        for (int j = 0; j < NL; j++) {
            float d = (float)drewards[(size_t)g * NL + j];
            for (int k = 0; k < H; k++) {
                dh[k] += d * head_w(W, (size_t)j * H + k);
                if (dW) dW[(size_t)j * H + k] += d * h[k]; /* NULL: a frozen head (an adapter trains) */
            }
        }
    }
    trunk_backward(m, b, dxf);
    embed_backward(m, b);
}

/* ---- scoring: the attached engine, or these passes ---- */

int model_forward_rows(Model *m, const Row *rows, int n_rows, double *logps, int *n_scored, char *err, size_t errlen) {
    if (m->engine) return m->engine->logps(m->engine->ctx, rows, n_rows, logps, n_scored, err, errlen);
    Batch *b = batch_new(m, rows, n_rows, err, errlen);
    if (!b) return -1;
    model_forward(m, b, logps, n_scored);
    batch_free(b);
    return 0;
}

int model_forward_rows_rewards(Model *m, const Row *rows, int n_rows, double *rewards, char *err, size_t errlen) {
    if (m->engine) return m->engine->rewards(m->engine->ctx, rows, n_rows, rewards, err, errlen);
    Batch *b = batch_new(m, rows, n_rows, err, errlen);
    if (!b) return -1;
    model_forward_rewards(m, b, rewards);
    batch_free(b);
    return 0;
}

/* ---- training passes: the engine that trains, or these passes ---- */

const ForwardEngine *model_train_engine(const Model *m) {
    return m->engine && m->engine->train_forward ? m->engine : NULL;
}

void model_pass_end(Model *m) {
    batch_free(m->pass);
    m->pass = NULL;
}

int model_pass_forward(Model *m, const Row *rows, int n_rows, double *out, int *n_scored, char *err, size_t errlen) {
    model_pass_end(m);
    const ForwardEngine *e = model_train_engine(m);
    if (e) return e->train_forward(e->ctx, rows, n_rows, out, n_scored, err, errlen);
    if (!(m->pass = batch_new(m, rows, n_rows, err, errlen))) return -1;
    if (m->c.head == HEAD_LM) {
        model_forward(m, m->pass, out, n_scored);
    } else {
        model_forward_rewards(m, m->pass, out);
        if (n_scored) memcpy(n_scored, m->pass->n_scored, sizeof(int) * (size_t)m->pass->n_resp);
    }
    return 0;
}

int model_pass_backward(Model *m, const double *dout, char *err, size_t errlen) {
    const ForwardEngine *e = model_train_engine(m);
    if (e) return e->train_backward(e->ctx, dout, err, errlen);
    if (!m->pass) {
        snprintf(err, errlen, "model_pass_backward: no forward before it (internal)");
        return -1;
    }
    if (m->c.head == HEAD_LM) model_backward(m, m->pass, dout);
    else model_backward_rewards(m, m->pass, dout);
    model_pass_end(m);
    return 0;
}
