/* decode.c: incremental decoding with a key/value cache (decode.h). The
 * layer is the one of llama.c step for step (same kernels, same matrix
 * products through matmul.h in the model's precision), so a token's logits agree with the training
 * engine's to float32 rounding; only attention differs in form: the prompt
 * goes through the engine's attention kernel, a decode step through plain
 * loops over one query and its cache. */
#include "model/decode.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "kernels/gemm.h"
#include "kernels/kernels.h"
#include "model/internal.h"

struct Decoder {
    Model *m;
    const ModelConfig *c;
    int n_seq, max_len;
    int H, I, NH, NKV, HS, QD, KD, V;
    float *kc, *vc; /* [L, n_seq, max_len, KD] keys (after RoPE) and values */
    int *len;       /* [n_seq] tokens in each slot */
    float *cs;      /* [max_len, HS/2, 2] RoPE table */
    int cap;        /* tokens the activations below hold */
    float *x, *xn, *rstd, *q, *k, *v, *att, *lse, *xmid, *gate, *up, *h; /* [cap, ...] */
    int *pos, *zero, *mark; /* [cap]; mark [n_seq] */
    const ForwardEngine *eng; /* the model's engine when it decodes (a GPU's): the slots computed there */
    void *ed;                 /* its decoder */
    char pending[512];        /* a failed fork's message, reported by the next step */
};

int decoder_model_max_len(const ModelConfig *c) {
    int n = c->max_position_embeddings > 0 ? c->max_position_embeddings : 1 << 30;
    return c->sliding_window > 0 && c->sliding_window < n ? c->sliding_window : n;
}

Decoder *decoder_new(Model *m, int n_seq, int max_len, char *err, size_t errlen) {
    const ModelConfig *c = model_config(m);
    int limit = decoder_model_max_len(c);
    if (c->head != HEAD_LM) {
        snprintf(err, errlen, "decoder: a reward model (%s) has no language-model head to decode with",
                 model_config_architecture(c));
        return NULL;
    }
    if (n_seq < 1 || max_len < 1 || max_len > limit) {
        snprintf(err, errlen, "decoder: %d sequences of %d tokens: need at least 1 of 1 to %d tokens (the model's limit)",
                 n_seq, max_len, limit);
        return NULL;
    }
    Decoder *d = xcalloc(1, sizeof *d);
    d->m = m, d->c = c, d->n_seq = n_seq, d->max_len = max_len;
    d->H = c->hidden_size, d->I = c->intermediate_size, d->NH = c->num_attention_heads;
    d->NKV = c->num_key_value_heads, d->HS = c->head_dim, d->V = c->vocab_size;
    d->QD = d->NH * d->HS, d->KD = d->NKV * d->HS;
    d->len = xcalloc((size_t)n_seq, sizeof(int));
    d->mark = xcalloc((size_t)n_seq, sizeof(int));
    const ForwardEngine *e = model_forward_engine(m);
    if (e && e->dec_new) { /* the engine holds the cache: none here */
        d->eng = e;
        if (!(d->ed = e->dec_new(e->ctx, n_seq, max_len, err, errlen))) {
            decoder_free(d);
            return NULL;
        }
        return d;
    }
    size_t cache = (size_t)c->num_hidden_layers * n_seq * max_len * d->KD;
    d->kc = xmalloc(sizeof(float) * (cache ? cache : 1));
    d->vc = xmalloc(sizeof(float) * (cache ? cache : 1));
    double *inv_freq = xmalloc(sizeof(double) * (size_t)(d->HS / 2 ? d->HS / 2 : 1));
    rope_inv_freq(&c->rope, c->head_dim, inv_freq);
    d->cs = xmalloc(sizeof(float) * (size_t)max_len * d->HS);
    d->m->dev->rope_table(d->cs, inv_freq, max_len, d->HS);
    free(inv_freq);
    return d;
}

static void free_activations(Decoder *d) {
    void *all[] = {d->x, d->xn, d->rstd, d->q, d->k, d->v, d->att, d->lse, d->xmid, d->gate, d->up, d->h, d->pos, d->zero};
    for (size_t i = 0; i < PPA_ARRAY_LEN(all); i++) free(all[i]);
}

void decoder_free(Decoder *d) {
    if (!d) return;
    if (d->ed) d->eng->dec_free(d->ed);
    free_activations(d);
    free(d->kc), free(d->vc), free(d->len), free(d->mark), free(d->cs);
    free(d);
}

int decoder_len(const Decoder *d, int seq) { return seq >= 0 && seq < d->n_seq ? d->len[seq] : -1; }

/* activations for T tokens, grown when needed */
static void reserve(Decoder *d, int T) {
    if (T <= d->cap) return;
    free_activations(d);
    size_t t = (size_t)T;
#define A(p, n) ((p) = xmalloc(sizeof *(p) * (n)))
    A(d->x, t * d->H), A(d->xn, t * d->H), A(d->rstd, t), A(d->q, t * d->QD), A(d->k, t * d->KD), A(d->v, t * d->KD);
    A(d->att, t * d->QD), A(d->lse, t * d->NH), A(d->xmid, t * d->H), A(d->gate, t * d->I), A(d->up, t * d->I);
    A(d->h, t * d->I), A(d->pos, t);
#undef A
    d->zero = xcalloc(t, sizeof(int));
    d->cap = T;
}

static float *cache_at(const Decoder *d, float *base, int l, int seq, int t) {
    return base + (((size_t)l * d->n_seq + seq) * d->max_len + t) * d->KD;
}

/* y[T, out] (+)= x[T, in] W^T, in the model's precision (matmul.h), as llama.c */
static void product(Decoder *d, float *y, float beta, const float *x, Weight W, int T, int in, int out) {
    d->m->dev->mm_forward(y, beta, act_f32(x), in, W, T, in, out, W.b ? model_btmp(d->m, (size_t)T * in) : NULL);
}

/* y[T, out] = x[T, in] W^T (+ bias), as llama.c's linear */
static void linear(Decoder *d, float *y, const float *x, Weight W, const float *bias, int T, int in, int out) {
    product(d, y, 0.0f, x, W, T, in, out);
    if (!bias) return;
    for (int t = 0; t < T; t++)
        for (int n = 0; n < out; n++) y[(size_t)t * out + n] += bias[n];
}

/* 16 partial sums: without -ffast-math a single float sum stays scalar */
static float dotf(const float *a, const float *b, int n) {
    float acc[16] = {0}, s = 0.0f;
    int i = 0;
    for (; i + 16 <= n; i += 16)
        for (int l = 0; l < 16; l++) acc[l] += a[i + l] * b[i + l];
    for (int l = 0; l < 16; l++) s += acc[l];
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

/* out [HS] = softmax(scale q K^T) V over n cached keys; K, Vc: [n, ldk]
 * at the kv head; s: [n] scratch. The softmax as the engine's: max, then
 * log-sum-exp accumulated in double, then exp(s - lse). */
static void attend_one(float *out, const float *q, const float *K, const float *Vc, int n, int ldk, int HS, float *s) {
    const float scale = 1.0f / sqrtf((float)HS);
    float mx = -INFINITY;
    for (int t = 0; t < n; t++) {
        s[t] = scale * dotf(q, K + (size_t)t * ldk, HS);
        mx = s[t] > mx ? s[t] : mx;
    }
    double sum = 0.0;
    for (int t = 0; t < n; t++) sum += expf(s[t] - mx);
    float lse = mx + (float)log(sum);
    for (int j = 0; j < HS; j++) out[j] = 0.0f;
    for (int t = 0; t < n; t++) {
        float p = expf(s[t] - lse);
        const float *vt = Vc + (size_t)t * ldk;
        for (int j = 0; j < HS; j++) out[j] += p * vt[j];
    }
}

/* attention of one new token per active slot over its cache (which already
 * holds the token's own key and value at position pos[i]) */
static void attend_step(Decoder *d, int l, const int *seq, int n) {
    const int NH = d->NH, HS = d->HS, group = NH / d->NKV;
#pragma omp parallel
    {
        float *s = xmalloc(sizeof(float) * (size_t)d->max_len);
#pragma omp for schedule(static)
        for (long ih = 0; ih < (long)n * NH; ih++) {
            int i = (int)(ih / NH), h = (int)(ih % NH), kv = h / group;
            const float *K = cache_at(d, d->kc, l, seq[i], 0) + (size_t)kv * HS;
            const float *Vc = cache_at(d, d->vc, l, seq[i], 0) + (size_t)kv * HS;
            attend_one(d->att + (size_t)i * d->QD + (size_t)h * HS, d->q + (size_t)i * d->QD + (size_t)h * HS, K, Vc,
                       d->pos[i] + 1, d->KD, HS, s);
        }
        free(s);
    }
}

/* The prompt of slot seq, causal over itself: the engine's kernel, keys and
 * values read straight from the slot's cache. */
static void attend_prefill(Decoder *d, int l, int seq, int T) {
    int rows[2] = {0, T};
    AttnShape s = {d->zero, d->zero, d->zero, rows, 1, T, d->NH, d->NKV, d->HS, 0}; /* the cache stays float32 */
    d->m->dev->attention_forward(d->att, d->lse, d->q, cache_at(d, d->kc, l, seq, 0), cache_at(d, d->vc, l, seq, 0), &s);
}

/* One layer over the T tokens in d->x (in place); token i goes to slot
 * seq[i] at position pos[i]. prefill: all T tokens belong to slot seq[0]. */
static void layer_forward(Decoder *d, int l, int T, const int *seq, int prefill) {
    const int H = d->H, I = d->I, QD = d->QD, KD = d->KD;
    LayerW w = model_layer(d->m, l);
    LayerM W = model_layer_mats(d->m, l);
    float eps = (float)d->c->rms_norm_eps;
    d->m->dev->rmsnorm_forward(d->xn, d->rstd, d->x, w.attn_norm, T, H, eps);
    linear(d, d->q, d->xn, W.q, w.bq, T, H, QD);
    linear(d, d->k, d->xn, W.k, w.bk, T, H, KD);
    linear(d, d->v, d->xn, W.v, w.bv, T, H, KD);
    lora_forward(d->m, l, 0, d->q, act_f32(d->xn), T);
    lora_forward(d->m, l, 1, d->k, act_f32(d->xn), T);
    lora_forward(d->m, l, 2, d->v, act_f32(d->xn), T);
    d->m->dev->rope_apply(d->q, d->pos, d->cs, T, d->NH, d->HS, 0);
    d->m->dev->rope_apply(d->k, d->pos, d->cs, T, d->NKV, d->HS, 0);
    for (int i = 0; i < T; i++) {
        int s = prefill ? seq[0] : seq[i];
        memcpy(cache_at(d, d->kc, l, s, d->pos[i]), d->k + (size_t)i * KD, sizeof(float) * (size_t)KD);
        memcpy(cache_at(d, d->vc, l, s, d->pos[i]), d->v + (size_t)i * KD, sizeof(float) * (size_t)KD);
    }
    if (prefill)
        attend_prefill(d, l, seq[0], T);
    else
        attend_step(d, l, seq, T);
    size_t TH = (size_t)T * H;
    memcpy(d->xmid, d->x, sizeof(float) * TH); /* residual, then += o_proj(att) */
    product(d, d->xmid, 1.0f, d->att, W.o, T, QD, H);
    if (w.bo)
        for (int t = 0; t < T; t++)
            for (int n = 0; n < H; n++) d->xmid[(size_t)t * H + n] += w.bo[n];
    lora_forward(d->m, l, 3, d->xmid, act_f32(d->att), T);
    d->m->dev->rmsnorm_forward(d->xn, d->rstd, d->xmid, w.mlp_norm, T, H, eps);
    linear(d, d->gate, d->xn, W.g, w.bg, T, H, I);
    linear(d, d->up, d->xn, W.u, w.bu, T, H, I);
    lora_forward(d->m, l, 4, d->gate, act_f32(d->xn), T);
    lora_forward(d->m, l, 5, d->up, act_f32(d->xn), T);
    d->m->dev->swiglu_forward(d->h, NULL, NULL, NULL, act_f32(d->gate), act_f32(d->up), (long)T * I);
    memcpy(d->x, d->xmid, sizeof(float) * TH);
    product(d, d->x, 1.0f, d->h, W.d, T, I, H);
    if (w.bd)
        for (int t = 0; t < T; t++)
            for (int n = 0; n < H; n++) d->x[(size_t)t * H + n] += w.bd[n];
    lora_forward(d->m, l, 6, d->x, act_f32(d->h), T);
}

static void embed(Decoder *d, const int *ids, int T) { model_embed(d->m, ids, T, d->x); }

/* logits [n, V] of the n rows of d->x starting at row r0 */
static void head(Decoder *d, int r0, int n, float *logits) {
    float *xr = d->x + (size_t)r0 * d->H;
    d->m->dev->rmsnorm_forward(d->xn, d->rstd, xr, model_tensor(d->m, "model.norm.weight"), n, d->H, (float)d->c->rms_norm_eps);
    product(d, logits, 0.0f, d->xn, model_lm_weight(d->m), n, d->H, d->V);
}

static int check_token(const Decoder *d, int id, char *err, size_t errlen) {
    if (id >= 0 && id < d->V) return 0;
    snprintf(err, errlen, "token id %d is outside the vocabulary (0..%d)", id, d->V - 1);
    return -1;
}

int decoder_prefill(Decoder *d, int seq, const int *ids, int n, float *logits, char *err, size_t errlen) {
    if (seq < 0 || seq >= d->n_seq) return snprintf(err, errlen, "decoder: no sequence slot %d", seq), -1;
    if (n < 1 || n > d->max_len)
        return snprintf(err, errlen, "a prompt of %d tokens: the decoder holds 1 to %d", n, d->max_len), -1;
    for (int i = 0; i < n; i++)
        if (check_token(d, ids[i], err, errlen)) return -1;
    if (d->ed) {
        if (d->eng->dec_prefill(d->ed, &seq, &ids, &n, 1, logits, err, errlen)) return -1;
        d->len[seq] = n;
        return 0;
    }
    reserve(d, n);
    for (int i = 0; i < n; i++) d->pos[i] = i;
    embed(d, ids, n);
    for (int l = 0; l < d->c->num_hidden_layers; l++) layer_forward(d, l, n, &seq, 1);
    head(d, n - 1, 1, logits);
    d->len[seq] = n;
    return 0;
}

int decoder_prefill_many(Decoder *d, const int *seq, const int *const *ids, const int *n, int np, float *logits,
                         char *err, size_t errlen) {
    if (!logits && !decoder_samples(d))
        return snprintf(err, errlen, "decoder: logits kept on the device need an engine that samples there"), -1;
    if (!d->ed || np < 1) {
        for (int i = 0; i < np; i++)
            if (decoder_prefill(d, seq[i], ids[i], n[i], logits + (size_t)i * d->V, err, errlen)) return -1;
        return 0;
    }
    int rc = 0;
    for (int i = 0; i < np && !rc; i++) {
        if (seq[i] < 0 || seq[i] >= d->n_seq) rc = snprintf(err, errlen, "decoder: no sequence slot %d", seq[i]);
        else if (d->mark[seq[i]]) rc = snprintf(err, errlen, "decoder: slot %d prefilled twice in one call", seq[i]);
        else if (n[i] < 1 || n[i] > d->max_len)
            rc = snprintf(err, errlen, "a prompt of %d tokens: the decoder holds 1 to %d", n[i], d->max_len);
        for (int j = 0; j < n[i] && !rc; j++) rc = check_token(d, ids[i][j], err, errlen);
        if (!rc) d->mark[seq[i]] = 1;
    }
    for (int i = 0; i < np; i++)
        if (seq[i] >= 0 && seq[i] < d->n_seq) d->mark[seq[i]] = 0;
    if (rc || d->eng->dec_prefill(d->ed, seq, ids, n, np, logits, err, errlen)) return -1;
    for (int i = 0; i < np; i++) d->len[seq[i]] = n[i];
    return 0;
}

int decoder_drop(Decoder *d, int seq, char *err, size_t errlen) {
    if (seq < 0 || seq >= d->n_seq) return snprintf(err, errlen, "decoder: no sequence slot %d", seq), -1;
    d->len[seq] = 0;
    return d->ed && d->eng->dec_drop ? d->eng->dec_drop(d->ed, seq, err, errlen) : 0;
}

int decoder_samples(const Decoder *d) { return d->ed && d->eng->dec_sample; }

int decoder_sampler(Decoder *d, double temperature, int top_k, double top_p, const int *banned, int n_banned,
                    char *err, size_t errlen) {
    if (!decoder_samples(d)) return snprintf(err, errlen, "decoder: this engine does not sample"), -1;
    return d->eng->dec_sampler(d->ed, temperature, top_k, top_p, banned, n_banned, err, errlen);
}

int decoder_sample(Decoder *d, const int *seq, const uint64_t *keys, const int *steps, const float *temps, int n,
                   int *ids, char *err, size_t errlen) {
    if (!decoder_samples(d)) return snprintf(err, errlen, "decoder: this engine does not sample"), -1;
    if (d->pending[0]) return snprintf(err, errlen, "%s", d->pending), -1;
    for (int i = 0; i < n; i++)
        if (seq[i] < 0 || seq[i] >= d->n_seq || d->len[seq[i]] < 1)
            return snprintf(err, errlen, "decoder: slot %d has nothing to draw from", seq[i]), -1;
    return d->eng->dec_sample(d->ed, seq, keys, steps, temps, n, ids, err, errlen);
}

void decoder_fork(Decoder *d, int src, int dst, int count) {
    size_t n = (size_t)d->len[src] * d->KD;
    if (d->ed) { /* the engine holds the cache; a failure is the next step's error */
        if (!d->pending[0] &&
            d->eng->dec_fork(d->ed, src, dst, count, d->len[src], d->pending, sizeof d->pending) && !d->pending[0])
            snprintf(d->pending, sizeof d->pending, "decoder: copying a prompt's cache failed");
        for (int s = dst; s < dst + count; s++) d->len[s] = d->len[src];
        return;
    }
    for (int l = 0; l < d->c->num_hidden_layers; l++)
        for (int s = dst; s < dst + count; s++) {
            if (s == src) continue;
            memcpy(cache_at(d, d->kc, l, s, 0), cache_at(d, d->kc, l, src, 0), sizeof(float) * n);
            memcpy(cache_at(d, d->vc, l, s, 0), cache_at(d, d->vc, l, src, 0), sizeof(float) * n);
        }
    for (int s = dst; s < dst + count; s++) d->len[s] = d->len[src];
}

static int check_step(Decoder *d, const int *tok, const int *seq, int n, char *err, size_t errlen) {
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        if (seq[i] < 0 || seq[i] >= d->n_seq) rc = snprintf(err, errlen, "decoder: no sequence slot %d", seq[i]);
        else if (d->mark[seq[i]]) rc = snprintf(err, errlen, "decoder: slot %d appears twice in one step", seq[i]);
        else if (d->len[seq[i]] < 1) rc = snprintf(err, errlen, "decoder: slot %d has no prompt", seq[i]);
        else if (d->len[seq[i]] >= d->max_len)
            rc = snprintf(err, errlen, "sequence %d would exceed %d tokens (the decoder's limit)", seq[i], d->max_len);
        else if (tok && check_token(d, tok[i], err, errlen)) rc = 1;
        if (!rc) d->mark[seq[i]] = 1;
    }
    for (int i = 0; i < n; i++)
        if (seq[i] >= 0 && seq[i] < d->n_seq) d->mark[seq[i]] = 0;
    return rc ? -1 : 0;
}

int decoder_step(Decoder *d, const int *tok, const int *seq, int n_active, float *logits, char *err, size_t errlen) {
    if (n_active < 1) return 0;
    if ((!tok || !logits) && !decoder_samples(d))
        return snprintf(err, errlen, "decoder: tokens or logits kept on the device need an engine that samples "
                                     "there"), -1;
    if (check_step(d, tok, seq, n_active, err, errlen)) return -1;
    if (d->pending[0]) return snprintf(err, errlen, "%s", d->pending), -1;
    if (d->ed) {
        int *pos = xmalloc(sizeof(int) * (size_t)n_active);
        for (int i = 0; i < n_active; i++) pos[i] = d->len[seq[i]];
        int rc = d->eng->dec_step(d->ed, tok, seq, pos, n_active, logits, err, errlen);
        free(pos);
        if (rc) return -1;
        for (int i = 0; i < n_active; i++) d->len[seq[i]]++;
        return 0;
    }
    reserve(d, n_active);
    for (int i = 0; i < n_active; i++) d->pos[i] = d->len[seq[i]];
    embed(d, tok, n_active);
    for (int l = 0; l < d->c->num_hidden_layers; l++) layer_forward(d, l, n_active, seq, 0);
    head(d, 0, n_active, logits);
    for (int i = 0; i < n_active; i++) d->len[seq[i]]++;
    return 0;
}
