/* gpu_backward.c: the training passes on the GPU (gpu_train.h): the forward that keeps what the backward needs,
 * and the backward, llama.c's model_forward / model_backward (and the reward models' pair) kernel by kernel
 * through the module's table, on GpuTrain's flat buffers.
 *
 * Per layer, as llama.c's layer_forward, keeping (one slot per layer, or one slot with checkpointing):
 *   xn1 = RMSNorm(x) w1 (dt), rstd1; q, k, v (after bias and RoPE; dt: rounded once in bf16); att (dt), lse;
 *   xmid = x + att Wo^T (+ bo) (float32); xn2 (dt), rstd2; gate and up (bf16 models: rounded to bf16 after h is
 *   computed from their float32 values, as llama.c's mlp_hidden keeps them; float32 models: float32);
 * and every layer's input x (float32 [L + 1, T, H], the last residual after the last layer). Then the final norm
 * (xf, rstdf) and the LM head's log-probs (logp, lse per target; and its bf16 probabilities, lmkeep), or a reward
 * model's rows of xf at each response's last token (downloaded: its head runs in double on the host, as
 * model_forward_rewards).
 *
 * The backward, as llama.c's layer_backward, point for point in bf16 (a gradient is float32 everywhere and rounded
 * to bf16 only as a bf16 product's operand, where llama.c's mm_backward rounds it):
 *   h recomputed from the kept (bf16) gate and up; dh = dx Wd (dx rounded as the operand); dWd += dx^T h;
 *   d gate, d up from swiglu's backward: in bf16 and without biases rounded straight to bf16 (llama.c's `round`),
 *   else float32 (the biases' sums), rounded for the products; dxn = d[gate|up] W[gate|up] (one product when the
 *   two matrices are adjacent in the layout, as they are without MLP biases); RMSNorm's backward adds into dx;
 *   datt = dx Wo; the attention's backward (datt rounded to bf16 as its operand: cuda/attention.h takes dout as
 *   it takes q); RoPE's inverse rotation (with the rounding of dq, dk, dv as operands: one pass in bf16); dxn = dq
 *   Wq + dk Wk + dv Wv (one product when q, k, v are adjacent, fused_qkv, as q, k, v are one in the forward);
 *   RMSNorm's backward into dx;
 * the LM head's backward first, from the probabilities its forward kept (bf16: cuda/lmhead.h) when it could (its
 * weight gradient, the tied embedding's, added before the embeddings' own, as llama.c does), the embeddings'
 * scatter-add last, in token order. Every reduction is in a fixed order (no float atomics in the module): a rerun
 * gives the same bits.
 *
 * Memory (one device allocation, GpuTrain.act, grown when a batch needs more): the batch's index arrays and
 * scatter plans; x [L + 1, T, H]; the layers' slots; the head's (xf, rstdf, log-probs, or the reward rows); dx and
 * dxf [T, H]; one scratch region used in turn by the forward (float32 q, k, v and gate | up before rounding, h),
 * the LM head's work and the backward's buffers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "gpu/gpu_internal.h"
#include "kernels/bf16.h"
#include "model/lora.h"

/* one layer's kept activations (device) */
typedef struct {
    void *xn1, *xn2;   /* [T, H] dt */
    float *rstd1, *rstd2; /* [T] */
    void *qkv;         /* [T, QD], [T, KD], [T, KD] one after the other, dt, after bias and RoPE */
    void *att;         /* [T, QD] dt */
    float *lse;        /* [T, NH] */
    float *xmid;       /* [T, H] */
    void *g, *u;       /* gate and up: bf16 [T, I] each (ld I), or float32 inside [T, 2I] (fused: ld 2I) */
} Slot;

struct TrainBatch {
    BatchLayout lay;
    int reward, keep, slots, n_seg_tok, n_seg_src, n_seg_last; /* keep: a training forward (the backward follows) */
    PcAttnPlan *plan;
    int *tokens, *pos, *src, *tgt, *last;          /* device */
    int *tok_order, *tok_seg, *tok_key;             /* device: the scatter plan of the tokens (embedding) */
    int *src_order, *src_seg, *src_key;             /* of the LM head's rows */
    int *last_order, *last_seg, *last_key;          /* of the reward rows */
    float *xs;                                      /* [L + 1, T, H] */
    char *slot0;                                    /* slot s at slot0 + s * slot_bytes */
    size_t slot_bytes;
    float *xf, *rstdf;                              /* [T, H], [T] */
    double *logp, *dlogp;                           /* [n_tgt] */
    float *lse_t;                                   /* [n_tgt] */
    void *lmkeep;                                   /* the LM head's kept probabilities (lmhead.h), or NULL */
    float *hl;                                      /* [n_resp, H] reward rows */
    float *dx, *dxf;                                /* [T, H] */
    char *scratch;                                  /* the shared region */
    float *hl_host, *head_host;                     /* reward models: the rows and the head as the products see it */
};

#define ALIGN 256

static void *place(char *base, size_t *off, size_t bytes) {
    void *p = base && bytes ? base + *off : NULL;
    *off += (bytes + ALIGN - 1) / ALIGN * ALIGN;
    return p;
}

/* the sizes of one batch */
typedef struct {
    size_t T, H, I, NH, QD, KD, L, e, f, nt, nr;
} Dims;

static Dims dims(const GpuTrain *t, const BatchLayout *lay) {
    const ModelConfig *c = &t->c;
    Dims d = {(size_t)lay->T, (size_t)c->hidden_size, (size_t)c->intermediate_size, (size_t)c->num_attention_heads,
              (size_t)c->num_attention_heads * c->head_dim, (size_t)c->num_key_value_heads * c->head_dim,
              (size_t)c->num_hidden_layers, t->dt == PC_BF16 ? sizeof(PcBf16) : sizeof(float), sizeof(float),
              (size_t)lay->n_tgt, (size_t)lay->n_resp};
    return d;
}

/* layer slot s of b (base NULL: only its size) */
static size_t carve_slot(const GpuTrain *t, const Dims *d, char *base, Slot *s) {
    size_t off = 0, T = d->T;
    memset(s, 0, sizeof *s);
    s->xn1 = place(base, &off, T * d->H * d->e), s->xn2 = place(base, &off, T * d->H * d->e);
    s->rstd1 = place(base, &off, T * d->f), s->rstd2 = place(base, &off, T * d->f);
    s->qkv = place(base, &off, T * (d->QD + 2 * d->KD) * d->e), s->att = place(base, &off, T * d->QD * d->e);
    s->lse = place(base, &off, T * d->NH * d->f), s->xmid = place(base, &off, T * d->H * d->f);
    if (t->dt == PC_BF16) {
        s->g = place(base, &off, T * d->I * sizeof(PcBf16)), s->u = place(base, &off, T * d->I * sizeof(PcBf16));
    } else {
        float *gu = place(base, &off, T * 2 * d->I * d->f);
        s->g = gu, s->u = !gu ? NULL : t->fused_gu ? gu + d->I : gu + T * d->I;
    }
    return off;
}

/* the scratch region's parts: the forward's, the head's and the backward's share it (h first, common to the
 * forward and the recomputation in the backward) */
typedef struct {
    void *h;                    /* [T, I] dt */
    float *qkv32, *gu32;        /* forward (bf16 models): [T, QD + 2 KD], [T, 2I] */
    void *lmwork;               /* the LM head's */
    float *dxn, *dh, *dgu, *dqkv, *datt; /* backward: [T, H], [T, I], [T, 2I], [T, QD + 2 KD], [T, QD] */
    PcBf16 *dyb;                /* [T, max(H, 2I, QD + 2 KD)] a gradient rounded as a product's operand */
    void *awork;                /* the attention backward's */
    float *rows;                /* [n_resp, H] the reward rows' gradients */
    float *lx, *lu, *ldu;       /* LoRA: the input as A sees it [T, max in], u = x A^T and its gradient [T, r] */
} Scratch;

static size_t carve_scratch(const GpuTrain *t, const Dims *d, int reward, char *base, Scratch *s) {
    size_t T = d->T, off = 0, f = d->f;
    memset(s, 0, sizeof *s);
    s->h = place(base, &off, T * d->I * d->e);
    if (t->lora) { /* beside the forward's buffers: an adapter's term runs while they hold q, k, v or gate | up */
        s->lx = place(base, &off, T * (size_t)t->lora_max_in * f);
        s->lu = place(base, &off, T * (size_t)t->lora_r * f), s->ldu = place(base, &off, T * (size_t)t->lora_r * f);
    }
    size_t rest = off, end = off;
    if (t->dt == PC_BF16) {
        s->qkv32 = place(base, &off, T * (d->QD + 2 * d->KD) * f);
        s->gu32 = place(base, &off, T * 2 * d->I * f);
    }
    end = off > end ? off : end, off = rest;
    if (reward) s->rows = place(base, &off, d->nr * d->H * f);
    else s->lmwork = place(base, &off, t->pc->pc_lmhead_work((int)d->nt, (int)d->H, t->c.vocab_size, t->dt));
    end = off > end ? off : end, off = rest;
    size_t wide = d->H > 2 * d->I ? d->H : 2 * d->I;
    wide = wide > d->QD + 2 * d->KD ? wide : d->QD + 2 * d->KD;
    s->dxn = place(base, &off, T * d->H * f), s->dh = place(base, &off, T * d->I * f);
    s->dgu = place(base, &off, T * 2 * d->I * f), s->dqkv = place(base, &off, T * (d->QD + 2 * d->KD) * f);
    s->datt = place(base, &off, T * d->QD * f);
    if (t->dt == PC_BF16) s->dyb = place(base, &off, T * wide * sizeof(PcBf16));
    s->awork = place(base, &off, t->pc->pc_attention_work_bytes((int)T, (int)d->NH, (int)(d->QD / d->NH)));
    return off > end ? off : end;
}

/* Points the batch's arrays into base (NULL: only measures); returns the bytes */
static size_t carve(const GpuTrain *t, TrainBatch *b, char *base) {
    Dims d = dims(t, &b->lay);
    size_t off = 0, T = d.T, ni = sizeof(int);
    b->tokens = place(base, &off, T * ni), b->pos = place(base, &off, T * ni);
    b->tok_order = place(base, &off, T * ni), b->tok_seg = place(base, &off, (T + 1) * ni);
    b->tok_key = place(base, &off, T * ni);
    if (b->reward) {
        b->last = place(base, &off, d.nr * ni), b->last_order = place(base, &off, d.nr * ni);
        b->last_seg = place(base, &off, (d.nr + 1) * ni), b->last_key = place(base, &off, d.nr * ni);
        b->hl = place(base, &off, d.nr * d.H * d.f);
    } else {
        b->src = place(base, &off, d.nt * ni), b->tgt = place(base, &off, d.nt * ni);
        b->src_order = place(base, &off, d.nt * ni), b->src_seg = place(base, &off, (d.nt + 1) * ni);
        b->src_key = place(base, &off, d.nt * ni);
        b->logp = place(base, &off, d.nt * sizeof(double)), b->dlogp = place(base, &off, d.nt * sizeof(double));
        b->lse_t = place(base, &off, d.nt * d.f);
        if (b->keep) /* a scoring forward has no backward to keep them for */
            b->lmkeep = place(base, &off, t->pc->pc_lmhead_keep_bytes((int)d.nt, t->c.vocab_size, t->dt));
    }
    b->xs = place(base, &off, (d.L + 1) * T * d.H * d.f);
    Slot s;
    b->slot_bytes = carve_slot(t, &d, NULL, &s);
    b->slot0 = place(base, &off, (size_t)b->slots * b->slot_bytes);
    b->xf = place(base, &off, T * d.H * d.f), b->rstdf = place(base, &off, T * d.f);
    b->dx = place(base, &off, T * d.H * d.f), b->dxf = place(base, &off, T * d.H * d.f);
    Scratch sc;
    size_t sb = carve_scratch(t, &d, b->reward, NULL, &sc);
    b->scratch = place(base, &off, sb);
    return off;
}

static Slot slot_of(const GpuTrain *t, const TrainBatch *b, int l) {
    Dims d = dims(t, &b->lay);
    Slot s;
    carve_slot(t, &d, b->slot0 + (size_t)(b->slots > 1 ? l : 0) * b->slot_bytes, &s);
    return s;
}

static Scratch scratch_of(const GpuTrain *t, const TrainBatch *b) {
    Dims d = dims(t, &b->lay);
    Scratch s;
    carve_scratch(t, &d, b->reward, b->scratch, &s);
    return s;
}

/* ---- the run of one call: the first failure's message ---- */

typedef struct {
    GpuTrain *t;
    const PcApi *pc;
    char *err;
    size_t errlen;
} Run;

static int fail(Run *r, const char *what) {
    snprintf(r->err, r->errlen, "gpu train: %s: %s", what, r->pc->pc_error());
    return -1;
}

#define TRY(r, what, call)                                                                                             \
    do {                                                                                                               \
        if (call) return fail(r, what);                                                                                \
    } while (0)

void gpu_train_batch_free(GpuTrain *t) {
    TrainBatch *b = t->batch;
    if (!b) return;
    if (b->plan) t->pc->pc_attn_plan_free(b->plan);
    batch_layout_free(&b->lay);
    free(b->hl_host), free(b->head_host);
    free(b);
    t->batch = NULL;
}

/* a host scatter plan of keys [n] uploaded into order, seg, seg_key; its segment count in *n_seg */
static int upload_plan(Run *r, int *order, int *seg, int *key, const int *keys, int n, int *n_seg) {
    int *h = xmalloc(sizeof(int) * (size_t)(3 * n + 1));
    int k = r->pc->pc_scatter_plan(h, h + n, h + 2 * n + 1, keys, n);
    int bad = k < 0 || r->pc->pc_upload(order, h, sizeof(int) * (size_t)n) ||
              r->pc->pc_upload(seg, h + n, sizeof(int) * (size_t)(k + 1)) ||
              r->pc->pc_upload(key, h + 2 * n + 1, sizeof(int) * (size_t)k) || r->pc->pc_sync();
    free(h);
    *n_seg = k;
    return bad ? fail(r, "a scatter plan") : 0;
}

/* The batch: layout (batch_new's checks and messages), activations (grown when needed), uploads and plans */
static int batch_open(Run *r, const Row *rows, int n_rows, int keep) {
    GpuTrain *t = r->t;
    const PcApi *pc = r->pc;
    gpu_train_batch_free(t);
    TrainBatch *b = xcalloc(1, sizeof *b);
    t->batch = b;
    b->reward = t->c.head != HEAD_LM;
    b->keep = keep, b->slots = keep && !t->gc ? t->c.num_hidden_layers : 1;
    if (batch_layout_count(&t->c, rows, n_rows, &b->lay, r->err, r->errlen)) return -1;
    if (!b->lay.n_resp) return 0;
    batch_layout_fill(&t->c, rows, n_rows, &b->lay);
    size_t need = carve(t, b, NULL);
    if (need > t->act_bytes) {
        pc->pc_free(t->act);
        t->act = NULL, t->act_bytes = 0;
        if (!(t->act = pc->pc_alloc(need))) {
            snprintf(r->err, r->errlen, "gpu train: a micro-batch of %d tokens needs %.2f GB of activations beside "
                     "%.2f GB of weights, gradients and moments: %s (use fewer lists per micro-batch, "
                     "--gradient-checkpointing, or shorter responses)", b->lay.T, (double)need / 1e9,
                     (double)t->state_bytes / 1e9, pc->pc_error());
            return -1;
        }
        t->act_bytes = need;
    }
    carve(t, b, t->act);
    BatchLayout *lay = &b->lay;
    if (gpu_rope_table(pc, &t->c, t->inv_freq, lay->n_pos, &t->cs, &t->cs_pos)) return fail(r, "the RoPE table");
    if (train_bytes(t) > t->peak) t->peak = train_bytes(t);
    TRY(r, "uploading the tokens", pc->pc_upload(b->tokens, lay->tokens, sizeof(int) * (size_t)lay->T));
    TRY(r, "uploading the positions", pc->pc_upload(b->pos, lay->pos, sizeof(int) * (size_t)lay->T));
    if (b->reward) {
        TRY(r, "uploading the last tokens", pc->pc_upload(b->last, lay->last, sizeof(int) * (size_t)lay->n_resp));
        if (upload_plan(r, b->last_order, b->last_seg, b->last_key, lay->last, lay->n_resp, &b->n_seg_last))
            return -1;
    } else {
        TRY(r, "uploading the LM head's rows", pc->pc_upload(b->src, lay->src, sizeof(int) * (size_t)lay->n_tgt));
        TRY(r, "uploading the targets", pc->pc_upload(b->tgt, lay->tgt, sizeof(int) * (size_t)lay->n_tgt));
        if (upload_plan(r, b->src_order, b->src_seg, b->src_key, lay->src, lay->n_tgt, &b->n_seg_src)) return -1;
    }
    if (upload_plan(r, b->tok_order, b->tok_seg, b->tok_key, lay->tokens, lay->T, &b->n_seg_tok)) return -1;
    /* the CPU's attention with no window: longer sequences were refused (model_config_check_seq_len) */
    if (!(b->plan = pc->pc_attn_plan_new(lay->pstart, lay->plen, lay->sstart, lay->T, 0)))
        return fail(r, "the attention plan");
    return 0;
}

/* ---- LoRA: lora.c's terms, in float32 through pc_gemm ---- */

/* target k of layer l has an adapter that is on */
static int lora_on(const GpuTrain *t, int l, int k) {
    return t->lora && t->lora[7 * l + k].at >= 0 && model_lora_enabled(t->host);
}

/* x [T, in] (the base product's operand, dt) as A sees it: float32 (widened into buf from bf16), dropped out into
 * buf while the trainer's dropout is on (lora.c's input) */
static int lora_input(Run *r, int l, int k, const void *x, int T, int in, float *buf, const float **xin) {
    GpuTrain *t = r->t;
    uint64_t key;
    int drop = model_lora_dropping(t->host, &key);
    const float *src = x;
    if (t->dt == PC_BF16) {
        TRY(r, "an adapter's input to float32", r->pc->pc_bf16_to_f32(buf, x, (size_t)T * in));
        src = buf;
    }
    if (drop) TRY(r, "an adapter's dropout", r->pc->pc_lora_dropout(buf, 0.0f, src, T, in, key, 7 * l + k,
                                                                     model_lora(t->host)->dropout));
    *xin = drop ? buf : src;
    return 0;
}

/* y [T, out] (rows ldy apart, float32) += s (x A^T) B^T */
static int lora_forward(Run *r, const Scratch *sc, int l, int k, float *y, int ldy, const void *x, int T) {
    GpuTrain *t = r->t;
    if (!lora_on(t, l, k) || !T) return 0;
    const TrainLora *a = &t->lora[7 * l + k];
    const float *A = t->p + a->at, *B = A + (size_t)t->lora_r * a->in, *xin;
    int R = t->lora_r;
    if (lora_input(r, l, k, x, T, a->in, sc->lx, &xin)) return -1;
    TRY(r, "an adapter's u = s x A^T", r->pc->pc_gemm(0, 1, T, R, a->in, t->lora_scale, xin, a->in, A, a->in, 0.0f,
                                                      NULL, sc->lu, R, NULL, PC_F32, PC_F32));
    TRY(r, "an adapter's y += u B^T", r->pc->pc_gemm(0, 1, T, a->out, R, 1.0f, sc->lu, R, B, R, 1.0f, NULL, y, ldy,
                                                     NULL, PC_F32, PC_F32));
    return 0;
}

/* lora.c's lora_backward: dy [T, out] (rows lddy apart) of target k; dA, dB += ...; dx [T, in] += ... */
static int lora_backward(Run *r, const Scratch *sc, int l, int k, float *dx, const float *dy, int lddy,
                         const void *x, int T) {
    GpuTrain *t = r->t;
    if (!lora_on(t, l, k) || !T) return 0;
    const PcApi *pc = r->pc;
    const TrainLora *a = &t->lora[7 * l + k];
    const float *A = t->p + a->at, *B = A + (size_t)t->lora_r * a->in, *xin;
    float *dA = t->g + a->at, *dB = dA + (size_t)t->lora_r * a->in, s = t->lora_scale;
    int R = t->lora_r;
    uint64_t key;
    int drop = model_lora_dropping(t->host, &key);
    if (lora_input(r, l, k, x, T, a->in, sc->lx, &xin)) return -1;
    TRY(r, "an adapter's backward", pc->pc_gemm(0, 1, T, R, a->in, 1.0f, xin, a->in, A, a->in, 0.0f, NULL, sc->lu, R,
                                                NULL, PC_F32, PC_F32) || /* u = x A^T, as the forward's */
        pc->pc_gemm(1, 0, a->out, R, T, s, dy, lddy, sc->lu, R, 1.0f, NULL, dB, R, NULL, PC_F32, PC_F32) ||
        pc->pc_gemm(0, 0, T, R, a->out, s, dy, lddy, B, R, 0.0f, NULL, sc->ldu, R, NULL, PC_F32, PC_F32) ||
        pc->pc_gemm(1, 0, R, a->in, T, 1.0f, sc->ldu, R, xin, a->in, 1.0f, NULL, dA, a->in, NULL, PC_F32, PC_F32));
    if (!drop) {
        TRY(r, "an adapter's dx", pc->pc_gemm(0, 0, T, a->in, R, 1.0f, sc->ldu, R, A, a->in, 1.0f, NULL, dx, a->in,
                                              NULL, PC_F32, PC_F32));
        return 0;
    }
    /* through the same mask: du A into the input's buffer (read for the last time above), then masked into dx */
    TRY(r, "an adapter's dx", pc->pc_gemm(0, 0, T, a->in, R, 1.0f, sc->ldu, R, A, a->in, 0.0f, NULL, sc->lx, a->in,
                                          NULL, PC_F32, PC_F32) ||
        pc->pc_lora_dropout(dx, 1.0f, sc->lx, T, a->in, key, 7 * l + k, model_lora(t->host)->dropout));
    return 0;
}

/* ---- forward ---- */

/* layer l from x = xs[l] into xs[l + 1], keeping its slot */
static int layer_forward(Run *r, const TrainBatch *b, int l) {
    GpuTrain *t = r->t;
    const PcApi *pc = r->pc;
    const ModelConfig *c = &t->c;
    const TrainLayer *w = &t->layers[l];
    PcDtype dt = t->dt;
    int T = b->lay.T, H = c->hidden_size, I = c->intermediate_size, NH = c->num_attention_heads;
    int NKV = c->num_key_value_heads, HS = c->head_dim, QD = NH * HS, KD = NKV * HS;
    float eps = (float)c->rms_norm_eps, *x = b->xs + (size_t)l * T * H, *xout = x + (size_t)T * H;
    Slot s = slot_of(t, b, l);
    Scratch sc = scratch_of(t, b);
    size_t e = dt == PC_BF16 ? sizeof(PcBf16) : sizeof(float), TQ = (size_t)T * QD, TK = (size_t)T * KD;
    TRY(r, "input_layernorm", pc->pc_rmsnorm_forward(s.xn1, dt, s.rstd1, NULL, x, NULL, w->attn_norm,
                                                     T, H, eps));
    /* q, k, v in float32: one product into [T, QD + 2 KD] rows (fused_qkv), or three packed arrays */
    const int fq = t->fused_qkv, ldq = fq ? QD + 2 * KD : QD, ldk = fq ? QD + 2 * KD : KD;
    float *q = dt == PC_BF16 ? sc.qkv32 : s.qkv, *k = fq ? q + QD : q + TQ, *v = fq ? k + KD : k + TK;
    if (fq) {
        TRY(r, "q_proj, k_proj and v_proj", pc->pc_linear_forward(q, PC_F32, s.xn1, H, w->wq, w->bq, NULL, T, H,
                                                                  QD + 2 * KD, dt));
    } else {
        TRY(r, "q_proj", pc->pc_linear_forward(q, PC_F32, s.xn1, H, w->wq, w->bq, NULL, T, H, QD, dt));
        TRY(r, "k_proj", pc->pc_linear_forward(k, PC_F32, s.xn1, H, w->wk, w->bk, NULL, T, H, KD, dt));
        TRY(r, "v_proj", pc->pc_linear_forward(v, PC_F32, s.xn1, H, w->wv, w->bv, NULL, T, H, KD, dt));
    }
    if (lora_forward(r, &sc, l, 0, q, ldq, s.xn1, T) || lora_forward(r, &sc, l, 1, k, ldk, s.xn1, T) ||
        lora_forward(r, &sc, l, 2, v, ldk, s.xn1, T))
        return -1;
    if (dt == PC_BF16) { /* rotated, then rounded once, after the bias, as the CPU keeps them: one pass */
        TRY(r, "RoPE of q and k, and q, k, v to bf16", pc->pc_rope_qkv_forward(s.qkv, q, ldq, k, ldk, v, ldk, b->pos,
                                                                              t->cs, T, NH, NKV, HS));
    } else {
        TRY(r, "RoPE of q", pc->pc_rope_forward(q, PC_F32, QD, b->pos, t->cs, T, NH, HS));
        TRY(r, "RoPE of k", pc->pc_rope_forward(k, PC_F32, KD, b->pos, t->cs, T, NKV, HS));
    }
    const char *qkv = s.qkv;
    TRY(r, "attention", pc->pc_attention_forward(s.att, s.lse, qkv, qkv + TQ * e, qkv + (TQ + TK) * e, b->plan, NH,
                                                 NKV, HS, dt));
    TRY(r, "o_proj", pc->pc_linear_forward(s.xmid, PC_F32, s.att, QD, w->wo, w->bo, x, T,
                                           QD, H, dt));
    if (lora_forward(r, &sc, l, 3, s.xmid, H, s.att, T)) return -1;
    TRY(r, "post_attention_layernorm", pc->pc_rmsnorm_forward(s.xn2, dt, s.rstd2, NULL, s.xmid, NULL,
                                                              w->mlp_norm, T, H, eps));
    /* gate and up in float32: the bf16 models' scratch, or the float32 models' slot */
    float *g = dt == PC_BF16 ? sc.gu32 : s.g, *u;
    int ld = t->fused_gu ? 2 * I : I;
    if (t->fused_gu) {
        u = g + I;
        TRY(r, "gate_proj and up_proj", pc->pc_linear_forward(g, PC_F32, s.xn2, H, w->wg, w->bgu, NULL, T,
                                                              H, 2 * I, dt));
    } else {
        u = g + (size_t)T * I;
        TRY(r, "gate_proj", pc->pc_linear_forward(g, PC_F32, s.xn2, H, w->wg, w->bg, NULL,
                                                  T, H, I, dt));
        TRY(r, "up_proj", pc->pc_linear_forward(u, PC_F32, s.xn2, H, w->wu, w->bu, NULL, T,
                                                H, I, dt));
    }
    if (lora_forward(r, &sc, l, 4, g, ld, s.xn2, T) || lora_forward(r, &sc, l, 5, u, ld, s.xn2, T)) return -1;
    TRY(r, "SwiGLU", pc->pc_swiglu_forward(sc.h, dt, dt == PC_BF16 ? s.g : NULL, dt == PC_BF16 ? s.u : NULL, g, u,
                                           PC_F32, ld, T, I));
    TRY(r, "down_proj", pc->pc_linear_forward(xout, PC_F32, sc.h, I, w->wd, w->bd, s.xmid,
                                              T, I, H, dt));
    return lora_forward(r, &sc, l, 6, xout, H, sc.h, T);
}

/* a reward model's head as the products see it (its bf16 copy in bf16), read back for the host's sums */
static int reward_head(Run *r, TrainBatch *b) {
    GpuTrain *t = r->t;
    size_t n = (size_t)t->c.num_labels * t->c.hidden_size;
    b->head_host = xmalloc(sizeof(float) * (n ? n : 1));
    TRY(r, "reading the reward head", r->pc->pc_download(b->head_host, t->p + t->head_off, sizeof(float) * n) ||
                                          r->pc->pc_sync());
    if (t->dt == PC_BF16)
        for (size_t i = 0; i < n; i++) b->head_host[i] = bf16_f32(bf16_round(b->head_host[i]));
    return 0;
}

int gpu_train_forward(GpuTrain *t, const Row *rows, int n_rows, int keep, double *out, int *n_scored, char *err,
                      size_t errlen) {
    Run r = {t, t->pc, err, errlen};
    const PcApi *pc = t->pc;
    if (batch_open(&r, rows, n_rows, keep)) {
        gpu_train_batch_free(t);
        return -1;
    }
    TrainBatch *b = t->batch;
    BatchLayout *lay = &b->lay;
    if (!lay->n_resp) return 0;
    const ModelConfig *c = &t->c;
    int T = lay->T, H = c->hidden_size, L = c->num_hidden_layers, rc = 0;
    if (pc->pc_embed_forward(b->xs, t->embed, t->embed_dt, b->tokens, T, H)) rc = fail(&r, "embed_tokens");
    for (int l = 0; l < L && !rc; l++) rc = layer_forward(&r, b, l);
    if (!rc && pc->pc_rmsnorm_forward(b->xf, PC_F32, b->rstdf, NULL, b->xs + (size_t)L * T * H, NULL,
                                      t->final_norm, T, H, (float)c->rms_norm_eps))
        rc = fail(&r, "model.norm");
    if (!rc && !b->reward) {
        Scratch sc = scratch_of(t, b);
        double *lp = xmalloc(sizeof(double) * (size_t)lay->n_tgt);
        if (pc->pc_lmhead_forward(b->logp, b->lse_t, b->xf, t->head, t->dt, b->src, b->tgt, lay->n_tgt,
                                  H, c->vocab_size, sc.lmwork, b->lmkeep))
            rc = fail(&r, "the LM head");
        else if (pc->pc_download(lp, b->logp, sizeof(double) * (size_t)lay->n_tgt) || pc->pc_sync())
            rc = fail(&r, "reading the log-probs back");
        if (!rc) { /* in target order, as model_forward adds them */
            for (int i = 0; i < lay->n_resp; i++) out[i] = 0.0;
            for (int i = 0; i < lay->n_tgt; i++) out[lay->tgt_resp[i]] += lp[i];
        }
        free(lp);
    } else if (!rc) {
        size_t nr = (size_t)lay->n_resp, NL = (size_t)c->num_labels;
        b->hl_host = xmalloc(sizeof(float) * nr * (size_t)H);
        if (pc->pc_embed_forward(b->hl, b->xf, PC_F32, b->last, lay->n_resp, H)) /* a gather of xf's rows */
            rc = fail(&r, "the last tokens' rows");
        else if (pc->pc_download(b->hl_host, b->hl, sizeof(float) * nr * (size_t)H) || pc->pc_sync())
            rc = fail(&r, "reading the last tokens' rows back");
        if (!rc) rc = reward_head(&r, b);
        for (size_t i = 0; !rc && i < nr; i++) /* model_forward_rewards' sums, in its order */
            for (size_t j = 0; j < NL; j++) {
                double acc = 0.0;
                for (size_t k = 0; k < (size_t)H; k++) acc += (double)b->head_host[j * H + k] * b->hl_host[i * H + k];
                out[i * NL + j] = acc;
            }
    }
    if (!rc && n_scored) memcpy(n_scored, lay->n_scored, sizeof(int) * (size_t)lay->n_resp);
    if (rc || !keep) gpu_train_batch_free(t);
    return rc;
}

/* ---- backward ---- */

/* a float32 gradient as a product's operand: itself (float32 products), or rounded into dst (bf16) */
static int operand(Run *r, const void **op, PcBf16 *dst, const float *g, size_t n) {
    if (r->t->dt != PC_BF16) {
        *op = g;
        return 0;
    }
    TRY(r, "a gradient to bf16", r->pc->pc_f32_to_bf16(dst, g, n));
    *op = dst;
    return 0;
}

/* dx [T, H]: the gradient of layer l's output in, of its input out */
static int layer_backward(Run *r, const TrainBatch *b, int l) {
    GpuTrain *t = r->t;
    const PcApi *pc = r->pc;
    const ModelConfig *c = &t->c;
    const TrainLayer *w = &t->layers[l];
    PcDtype dt = t->dt;
    int T = b->lay.T, H = c->hidden_size, I = c->intermediate_size, NH = c->num_attention_heads;
    int NKV = c->num_key_value_heads, HS = c->head_dim, QD = NH * HS, KD = NKV * HS;
    size_t TH = (size_t)T * H, TI = (size_t)T * I, TQ = (size_t)T * QD, TK = (size_t)T * KD;
    size_t e = dt == PC_BF16 ? sizeof(PcBf16) : sizeof(float);
    float *x = b->xs + (size_t)l * TH, *dx = b->dx;
    Slot s = slot_of(t, b, l);
    Scratch sc = scratch_of(t, b);
    const void *op;

    /* MLP: out = xmid + down(silu(gate) up), h recomputed from gate and up as kept */
    PcDtype gt = dt == PC_BF16 ? PC_BF16 : PC_F32;
    int ld = dt == PC_BF16 ? I : t->fused_gu ? 2 * I : I;
    TRY(r, "SwiGLU (recomputed)", pc->pc_swiglu_forward(sc.h, dt, NULL, NULL, s.g, s.u, gt, ld, T, I));
    if (operand(r, &op, sc.dyb, dx, TH)) return -1;
    TRY(r, "down_proj's backward", pc->pc_linear_backward(sc.dh, 0.0f, w->d_wd, op, sc.h, I,
                                                          w->wd, T, I, H, dt));
    if (w->d_bd) TRY(r, "down_proj's bias", pc->pc_bias_backward(w->d_bd, dx, T, H));
    if (lora_backward(r, &sc, l, 6, sc.dh, dx, H, sc.h, T)) return -1;
    /* d gate, d up: rounded straight to bf16 as llama.c's `round` does when no bias reads them */
    int round = dt == PC_BF16 && !w->d_bg && !w->d_bu && !lora_on(t, l, 4) && !lora_on(t, l, 5);
    int ldo = t->fused_gu ? 2 * I : I;
    void *dg = sc.dgu, *du = round ? (void *)((PcBf16 *)sc.dgu + (t->fused_gu ? (size_t)I : TI))
                                   : (void *)(sc.dgu + (t->fused_gu ? (size_t)I : TI));
    TRY(r, "SwiGLU's backward", pc->pc_swiglu_backward(dg, du, round ? PC_BF16 : PC_F32, ldo, sc.dh, s.g, s.u, gt, ld,
                                                       T, I));
    if (w->d_bg) TRY(r, "gate_proj's bias", pc->pc_bias_backward(w->d_bg, dg, T, I));
    if (w->d_bu) TRY(r, "up_proj's bias", pc->pc_bias_backward(w->d_bu, du, T, I));
    const void *dgo = dg, *duo = du;
    if (dt == PC_BF16 && !round) { /* float32 for the biases, rounded for the products */
        if (operand(r, &dgo, sc.dyb, dg, 2 * TI)) return -1;
        duo = t->fused_gu ? NULL : (const void *)(sc.dyb + TI);
    }
    if (t->fused_gu) {
        TRY(r, "gate_proj and up_proj's backward", pc->pc_linear_backward(sc.dxn, 0.0f, w->d_wg, dgo,
                                                                          s.xn2, H, w->wg, T, H, 2 * I,
                                                                          dt));
    } else {
        TRY(r, "gate_proj's backward", pc->pc_linear_backward(sc.dxn, 0.0f, w->d_wg, dgo, s.xn2, H,
                                                              w->wg, T, H, I, dt));
        TRY(r, "up_proj's backward", pc->pc_linear_backward(sc.dxn, 1.0f, w->d_wu, duo, s.xn2, H,
                                                            w->wu, T, H, I, dt));
    }
    if (lora_backward(r, &sc, l, 4, sc.dxn, dg, ldo, s.xn2, T) || lora_backward(r, &sc, l, 5, sc.dxn, du, ldo, s.xn2, T))
        return -1;
    TRY(r, "post_attention_layernorm's backward", /* dx: d xmid */
        pc->pc_rmsnorm_backward(dx, w->d_mlp_norm, sc.dxn, s.xmid, w->mlp_norm, s.rstd2, T,
                                H));

    /* attention: xmid = x + o_proj(att) */
    if (operand(r, &op, sc.dyb, dx, TH)) return -1;
    TRY(r, "o_proj's backward", pc->pc_linear_backward(sc.datt, 0.0f, w->d_wo, op, s.att, QD,
                                                       w->wo, T, QD, H, dt));
    if (w->d_bo) TRY(r, "o_proj's bias", pc->pc_bias_backward(w->d_bo, dx, T, H));
    if (lora_backward(r, &sc, l, 3, sc.datt, dx, H, s.att, T)) return -1;
    if (operand(r, &op, sc.dyb, sc.datt, TQ)) return -1;
    float *dq = sc.dqkv, *dk = dq + TQ, *dv = dk + TK;
    const char *qkv = s.qkv;
    TRY(r, "attention's backward", pc->pc_attention_backward(dq, dk, dv, op, s.att, s.lse, qkv, qkv + TQ * e,
                                                             qkv + (TQ + TK) * e, b->plan, NH, NKV, HS, dt, sc.awork));
    const char *o;
    if (dt == PC_BF16) { /* rotated back in place (biases, adapters) and rounded for the products, in one pass */
        const int ldo = t->fused_qkv ? QD + 2 * KD : 0;
        PcBf16 *oq = (PcBf16 *)sc.dyb, *ok = ldo ? oq + QD : oq + TQ, *ov = ldo ? ok + KD : ok + TK;
        TRY(r, "RoPE's backward of q and k, and dq, dk, dv to bf16",
            pc->pc_rope_qkv_backward(oq, ldo ? ldo : QD, ok, ldo ? ldo : KD, ov, ldo ? ldo : KD, dq, dk, dv, b->pos,
                                     t->cs, T, NH, NKV, HS));
        o = (const char *)sc.dyb;
    } else {
        TRY(r, "RoPE's backward of q", pc->pc_rope_backward(dq, PC_F32, QD, b->pos, t->cs, T, NH, HS));
        TRY(r, "RoPE's backward of k", pc->pc_rope_backward(dk, PC_F32, KD, b->pos, t->cs, T, NKV, HS));
        o = (const char *)dq;
    }
    if (w->d_bq) TRY(r, "q_proj's bias", pc->pc_bias_backward(w->d_bq, dq, T, QD));
    if (w->d_bk) TRY(r, "k_proj's bias", pc->pc_bias_backward(w->d_bk, dk, T, KD));
    if (w->d_bv) TRY(r, "v_proj's bias", pc->pc_bias_backward(w->d_bv, dv, T, KD));
    if (t->fused_qkv) { /* [T, QD + 2 KD] rows against the stacked weights (and gradients) */
        TRY(r, "q_proj, k_proj and v_proj's backward", pc->pc_linear_backward(sc.dxn, 0.0f, w->d_wq, o, s.xn1, H,
                                                                              w->wq, T, H, QD + 2 * KD, dt));
    } else {
        TRY(r, "q_proj's backward", pc->pc_linear_backward(sc.dxn, 0.0f, w->d_wq, o, s.xn1, H, w->wq, T, H, QD, dt));
        TRY(r, "k_proj's backward", pc->pc_linear_backward(sc.dxn, 1.0f, w->d_wk, o + TQ * e, s.xn1, H, w->wk, T, H,
                                                           KD, dt));
        TRY(r, "v_proj's backward", pc->pc_linear_backward(sc.dxn, 1.0f, w->d_wv, o + (TQ + TK) * e, s.xn1, H, w->wv,
                                                           T, H, KD, dt));
    }
    if (lora_backward(r, &sc, l, 0, sc.dxn, dq, QD, s.xn1, T) || lora_backward(r, &sc, l, 1, sc.dxn, dk, KD, s.xn1, T) ||
        lora_backward(r, &sc, l, 2, sc.dxn, dv, KD, s.xn1, T))
        return -1;
    TRY(r, "input_layernorm's backward", /* dx: d x */
        pc->pc_rmsnorm_backward(dx, w->d_attn_norm, sc.dxn, x, w->attn_norm, s.rstd1, T,
                                H));
    return 0;
}

/* d loss / d xf of a reward model into b->dxf (zeroed), and its head's gradient (model_backward_rewards' order) */
static int reward_head_backward(Run *r, TrainBatch *b, const double *drewards) {
    GpuTrain *t = r->t;
    const PcApi *pc = r->pc;
    size_t H = (size_t)t->c.hidden_size, NL = (size_t)t->c.num_labels, nr = (size_t)b->lay.n_resp;
    size_t nw = NL * H > 0 ? NL * H : 1, nx = nr * H > 0 ? nr * H : 1;
    float *dW = xmalloc(sizeof(float) * nw), *rows = xcalloc(nx, sizeof(float));
    int rc = pc->pc_download(dW, gpu_zero_grad_at(t, t->head_off), sizeof(float) * NL * H) || pc->pc_sync();
    for (size_t g = 0; !rc && g < nr; g++) { /* in response order: deterministic */
        const float *h = b->hl_host + g * H;
        float *dh = rows + g * H;
        for (size_t j = 0; j < NL; j++) {
            float d = (float)drewards[g * NL + j];
            for (size_t k = 0; k < H; k++) {
                dh[k] += d * b->head_host[j * H + k];
                dW[j * H + k] += d * h[k];
            }
        }
    }
    Scratch sc = scratch_of(t, b);
    rc = rc || pc->pc_upload(gpu_zero_grad_at(t, t->head_off), dW, sizeof(float) * NL * H) ||
         pc->pc_upload(sc.rows, rows, sizeof(float) * nr * H) ||
         pc->pc_memset(b->dxf, 0, sizeof(float) * (size_t)b->lay.T * H) ||
         pc->pc_scatter_add_rows(b->dxf, (int)H, sc.rows, (int)H, b->last_order, b->last_seg, b->last_key,
                                 b->n_seg_last, (int)H) ||
         pc->pc_sync();
    free(dW), free(rows);
    return rc ? fail(r, "the reward head's backward") : 0;
}

int gpu_train_backward(GpuTrain *t, const double *dout, char *err, size_t errlen) {
    Run r = {t, t->pc, err, errlen};
    const PcApi *pc = t->pc;
    TrainBatch *b = t->batch;
    if (!b) {
        snprintf(err, errlen, "gpu train: a backward without a kept forward (internal)");
        return -1;
    }
    BatchLayout *lay = &b->lay;
    const ModelConfig *c = &t->c;
    int T = lay->T, H = c->hidden_size, L = c->num_hidden_layers, rc = 0;
    size_t TH = (size_t)T * H;
    if (!lay->n_resp) {
        gpu_train_batch_free(t);
        return gpu_train_idle(t, err, errlen); /* ZeRO-2: the other ranks reduce with this one */
    }
    int reducing = gpu_zero_reduces(t); /* the ranks' sums, layer by layer (gpu_zero.c) */
    if (reducing && gpu_zero_open(t, -1, err, errlen)) {
        gpu_train_batch_free(t);
        return -1;
    }
    if (b->reward) {
        rc = reward_head_backward(&r, b, dout);
    } else {
        double *g = xmalloc(sizeof(double) * (size_t)lay->n_tgt);
        for (int i = 0; i < lay->n_tgt; i++) g[i] = dout[lay->tgt_resp[i]];
        Scratch sc = scratch_of(t, b);
        if (pc->pc_upload(b->dlogp, g, sizeof(double) * (size_t)lay->n_tgt) ||
            pc->pc_memset(b->dxf, 0, sizeof(float) * TH) ||
            pc->pc_lmhead_backward(b->dxf, t->d_head, b->dlogp, b->logp, b->lse_t, b->xf,
                                   t->head, t->dt, b->src, b->tgt, lay->n_tgt, H, c->vocab_size,
                                   b->src_order, b->src_seg, b->src_key, b->n_seg_src, sc.lmwork, b->lmkeep) ||
            pc->pc_sync())
            rc = fail(&r, "the LM head's backward");
        free(g);
    }
    if (!rc && (pc->pc_memset(b->dx, 0, sizeof(float) * TH) ||
                pc->pc_rmsnorm_backward(b->dx, t->d_final_norm, b->dxf, b->xs + (size_t)L * TH,
                                        t->final_norm, b->rstdf, T, H)))
        rc = fail(&r, "model.norm's backward");
    for (int l = L - 1; l >= 0 && !rc; l--) {
        /* one kept slot: recompute layer l from its input (the forward left the last layer's) */
        if (b->slots == 1 && l < L - 1) rc = layer_forward(&r, b, l);
        if (!rc && reducing) rc = gpu_zero_open(t, l, err, errlen);
        if (!rc) rc = layer_backward(&r, b, l);
        if (!rc && reducing) rc = gpu_zero_close(t, l, err, errlen); /* reduced while layer l - 1's backward runs */
    }
    if (!rc && t->d_embed && pc->pc_embed_backward(t->d_embed, b->dx, b->tok_order, b->tok_seg, b->tok_key,
                                     b->n_seg_tok, H))
        rc = fail(&r, "embed_tokens' backward");
    if (!rc && reducing) rc = gpu_zero_close(t, -1, err, errlen);
    if (!rc && pc->pc_sync()) rc = fail(&r, "the backward");
    gpu_train_batch_free(t);
    return rc;
}
