/* gpu_forward.c: the forward on the GPU (gpu_model.h): model_forward and model_forward_rewards of llama.c, kernel
 * by kernel through the module's table, on one batch's activations.
 *
 * The batch is packed by model.h's BatchLayout, the CPU's own packing (the same tokens, positions, mask bounds,
 * LM-head (src, tgt) pairs and scored counts, and the same refusals). Per layer, as llama.c's layer_forward:
 *   xn = RMSNorm(x) w1; q, k, v = xn Wq^T + bq, ...; RoPE(q), RoPE(k); att = attention(q, k, v) on the batch's
 *   plan; x += att Wo^T (+ bo); xn = RMSNorm(x) w2; [g | u] = xn [Wg | Wu]^T (+ b); h = silu(g) u; x += h Wd^T (+ bd)
 * then xf = RMSNorm(x) wf, and the LM head's log-probs of every target (summed per response in double on the host,
 * in target order, as model_forward does) or a reward head at each response's last token (in double on the host,
 * as model_forward_rewards does, from xf's rows gathered on the device).
 *
 * Rounding in bf16 (MODEL_BF16), point by point against llama.c's bf16 engine:
 *   the residual x is float32 throughout (both);
 *   a norm's output is computed in float32 and rounded once to bf16, the products' operand (both: llama.c's norm);
 *   q, k, v leave their products in float32 (bf16 operands, float32 sums), get their float32 bias and RoPE, and are
 *   rounded to bf16 once, as attention takes them (llama.c: attention's bf16 products round them as they pack);
 *   attention: float32 scores and softmax, probabilities rounded to bf16 before P V, float32 sums, the output
 *   rounded to bf16 once (llama.c keeps att in bf16 for o_proj: the same point);
 *   o_proj and down_proj add their float32 result (and bias) into the float32 residual (both);
 *   gate and up in float32, h = silu(g) u from their float32 values, rounded once to bf16 (both: swiglu_forward);
 *   the LM head: xf float32, rounded to bf16 as the product's operand; logits, log-sum-exp and log-probs in float32
 *   and double as lmhead.h says (the CPU's lmhead_forward rounds the same operand).
 * What differs is the order of every float32 sum (products, norms, softmax), so a value that lands near a bf16
 * rounding boundary may round the other way: the two engines agree to a few bf16 ulps of the activations, which the
 * log-probs show as errors of order 2^-8 of their size (the tests state their bounds). In float32 both are float32
 * throughout and agree to float32 rounding.
 *
 * Memory: one device allocation per batch size (grown when a batch needs more, kept for the next): the token
 * arrays, x [T, H] float32, xn [T, H], rstd [T], lse [T, NH], then one region used in turn by the attention
 * (q, k, v float32 [T, QD + 2 KD], their bf16 copy, att [T, QD]), the MLP (g | u [T, 2I] float32, h [T, I]) and the
 * head (xf [T, H], the LM head's log-probs, log-sum-exps and work, or the reward rows [n_responses, H]). The
 * attention plan is built per batch and freed after it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "gpu/gpu_internal.h"
#include "kernels/kernels.h"


#define ALIGN 256

static void *place(char *base, size_t *off, size_t bytes) {
    void *p = base && bytes ? base + *off : NULL;
    *off += (bytes + ALIGN - 1) / ALIGN * ALIGN;
    return p;
}

/* Points a batch's activations into base (NULL: only measures); returns their bytes. */
static size_t carve(const GpuModel *g, const BatchLayout *lay, int reward, char *base, Acts *a) {
    const ModelConfig *c = &g->c;
    size_t T = (size_t)lay->T, H = (size_t)c->hidden_size, I = (size_t)c->intermediate_size;
    size_t NH = (size_t)c->num_attention_heads, QD = NH * c->head_dim;
    size_t KD = (size_t)c->num_key_value_heads * c->head_dim, e = g->dt == PC_BF16 ? sizeof(PcBf16) : sizeof(float);
    size_t nt = (size_t)lay->n_tgt, nr = (size_t)lay->n_resp, off = 0, f = sizeof(float);
    memset(a, 0, sizeof *a);
    a->tokens = place(base, &off, T * sizeof(int)), a->pos = place(base, &off, T * sizeof(int));
    if (reward)
        a->last = place(base, &off, nr * sizeof(int));
    else
        a->src = place(base, &off, nt * sizeof(int)), a->tgt = place(base, &off, nt * sizeof(int));
    a->x = place(base, &off, T * H * f), a->xn = place(base, &off, T * H * e);
    a->rstd = place(base, &off, T * f), a->lse = place(base, &off, T * NH * f);
    size_t region = off, end = off;
    a->q = place(base, &off, T * (QD + 2 * KD) * f); /* q, k and v contiguous: one conversion to bf16 */
    a->k = a->q ? a->q + T * QD : NULL, a->v = a->q ? a->k + T * KD : NULL;
    if (g->dt == PC_BF16) a->qkvb = place(base, &off, T * (QD + 2 * KD) * sizeof(PcBf16));
    a->att = place(base, &off, T * QD * e);
    end = off > end ? off : end, off = region;
    a->gu = place(base, &off, T * 2 * I * f), a->h = place(base, &off, T * I * e);
    end = off > end ? off : end, off = region;
    a->xf = place(base, &off, T * H * f);
    if (reward) {
        a->hl = place(base, &off, nr * H * f);
    } else {
        a->logp = place(base, &off, nt * sizeof(double)), a->lse_t = place(base, &off, nt * f);
        a->work = place(base, &off, g->pc->pc_lmhead_work(lay->n_tgt, c->hidden_size, c->vocab_size, g->dt));
    }
    return off > end ? off : end;
}

/* the run of one batch: the model, and the first failure's message */
typedef struct {
    GpuModel *g;
    const PcApi *pc;
    char *err;
    size_t errlen;
} Run;

static int fail(Run *r, const char *what) {
    snprintf(r->err, r->errlen, "gpu forward: %s: %s", what, r->pc->pc_error());
    return -1;
}

#define TRY(r, what, call)                                                                                             \
    do {                                                                                                               \
        if (call) return fail(r, what);                                                                                \
    } while (0)

/* the batch's activations in g->act, grown when it needs more */
static int activations(Run *r, const BatchLayout *lay, int reward, Acts *a) {
    GpuModel *g = r->g;
    size_t need = carve(g, lay, reward, NULL, a);
    if (need > g->act_bytes) {
        g->pc->pc_free(g->act);
        g->act = NULL, g->act_bytes = 0;
        if (!(g->act = g->pc->pc_alloc(need))) {
            snprintf(r->err, r->errlen, "gpu forward: a batch of %d tokens needs %.2f GB of activations: %s (use "
                     "fewer or shorter rows per batch)", lay->T, (double)need / 1e9, g->pc->pc_error());
            return -1;
        }
        g->act_bytes = need;
    }
    carve(g, lay, reward, g->act, a);
    return 0;
}

int gpu_rope_table(const PcApi *pc, const ModelConfig *c, const double *inv_freq, int n_pos, float **cs,
                   int *cs_pos) {
    if (n_pos <= *cs_pos) return 0;
    int max = c->max_position_embeddings, want = n_pos > 2 * *cs_pos ? n_pos : 2 * *cs_pos;
    if (max > 0 && want > max) want = max > n_pos ? max : n_pos;
    size_t n = (size_t)want * (size_t)c->head_dim; /* [want, HS / 2, 2] */
    float *h = xmalloc(sizeof(float) * n);
    rope_table(h, inv_freq, want, c->head_dim);
    pc->pc_free(*cs);
    *cs_pos = 0;
    *cs = pc->pc_alloc(sizeof(float) * n);
    int bad = !*cs || pc->pc_upload(*cs, h, sizeof(float) * n) || pc->pc_sync();
    free(h);
    if (bad) return -1;
    *cs_pos = want;
    return 0;
}

/* the RoPE table on the device for positions 0 .. n_pos - 1 at least */
static int rope_table_for(Run *r, int n_pos) {
    GpuModel *g = r->g;
    if (gpu_rope_table(g->pc, &g->c, g->inv_freq, n_pos, &g->cs, &g->cs_pos)) return fail(r, "the RoPE table");
    return 0;
}

int gpu_layer_forward(const GpuModel *g, const Acts *a, const GpuLayer *w, const PcAttnPlan *plan, const GpuKv *kv,
                      int T, char *err, size_t errlen) {
    Run run = {(GpuModel *)g, g->pc, err, errlen}, *r = &run;
    const PcApi *pc = g->pc;
    const ModelConfig *c = &g->c;
    PcDtype dt = g->dt;
    int H = c->hidden_size, I = c->intermediate_size, NH = c->num_attention_heads, NKV = c->num_key_value_heads;
    int HS = c->head_dim, QD = NH * HS, KD = NKV * HS;
    float eps = (float)c->rms_norm_eps;
    TRY(r, "input_layernorm", pc->pc_rmsnorm_forward(a->xn, dt, a->rstd, NULL, a->x, NULL, w->attn_norm, T, H, eps));
    TRY(r, "q_proj", pc->pc_linear_forward(a->q, PC_F32, a->xn, H, w->wq, w->bq, NULL, T, H, QD, dt));
    TRY(r, "k_proj", pc->pc_linear_forward(a->k, PC_F32, a->xn, H, w->wk, w->bk, NULL, T, H, KD, dt));
    TRY(r, "v_proj", pc->pc_linear_forward(a->v, PC_F32, a->xn, H, w->wv, w->bv, NULL, T, H, KD, dt));
    TRY(r, "RoPE of q", pc->pc_rope_forward(a->q, PC_F32, QD, a->pos, g->cs, T, NH, HS));
    TRY(r, "RoPE of k", pc->pc_rope_forward(a->k, PC_F32, KD, a->pos, g->cs, T, NKV, HS));
    if (kv) { /* a decoder's: the rows' keys and values into their slots' cache */
        TRY(r, "the key cache", pc->pc_kv_store(kv->kc, dt, kv->max_len, KD, a->k, KD, kv->slot, a->pos, T));
        TRY(r, "the value cache", pc->pc_kv_store(kv->vc, dt, kv->max_len, KD, a->v, KD, kv->slot, a->pos, T));
    }
    if (plan) {
        const void *q = a->q, *k = a->k, *v = a->v;
        if (dt == PC_BF16) { /* rounded once, after the bias and the rotation, as the CPU's attention rounds them */
            TRY(r, "q, k, v to bf16", pc->pc_f32_to_bf16(a->qkvb, a->q, (size_t)T * (size_t)(QD + 2 * KD)));
            q = a->qkvb, k = a->qkvb + (size_t)T * QD, v = a->qkvb + (size_t)T * (QD + KD);
        }
        TRY(r, "attention", pc->pc_attention_forward(a->att, a->lse, q, k, v, plan, NH, NKV, HS, dt));
    } else { /* a decode step: each row's query against its slot's cache */
        TRY(r, "attention over the cache",
            pc->pc_decode_attention(a->att, a->q, kv->kc, kv->vc, dt, kv->slot, kv->len, kv->pslot, kv->plen, T,
                                    kv->max_len, kv->bound, NH, NKV, HS, kv->work));
    }
    TRY(r, "o_proj", pc->pc_linear_forward(a->x, PC_F32, a->att, QD, w->wo, w->bo, a->x, T, QD, H, dt));
    TRY(r, "post_attention_layernorm",
        pc->pc_rmsnorm_forward(a->xn, dt, a->rstd, NULL, a->x, NULL, w->mlp_norm, T, H, eps));
    TRY(r, "gate_proj and up_proj", pc->pc_linear_forward(a->gu, PC_F32, a->xn, H, w->wgu, w->bgu, NULL, T, H, 2 * I,
                                                          dt));
    TRY(r, "SwiGLU", pc->pc_swiglu_forward(a->h, dt, NULL, NULL, a->gu, a->gu + I, PC_F32, 2 * I, T, I));
    TRY(r, "down_proj", pc->pc_linear_forward(a->x, PC_F32, a->h, I, w->wd, w->bd, a->x, T, I, H, dt));
    return 0;
}

/* uploads the batch's arrays, then embedding, layers and final norm: xf */
static int trunk_forward(Run *r, const BatchLayout *lay, const Acts *a, int reward) {
    GpuModel *g = r->g;
    const PcApi *pc = r->pc;
    int T = lay->T, H = g->c.hidden_size;
    TRY(r, "uploading the tokens", pc->pc_upload(a->tokens, lay->tokens, sizeof(int) * (size_t)T));
    TRY(r, "uploading the positions", pc->pc_upload(a->pos, lay->pos, sizeof(int) * (size_t)T));
    if (reward)
        TRY(r, "uploading the last tokens", pc->pc_upload(a->last, lay->last, sizeof(int) * (size_t)lay->n_resp));
    else {
        TRY(r, "uploading the LM head's rows", pc->pc_upload(a->src, lay->src, sizeof(int) * (size_t)lay->n_tgt));
        TRY(r, "uploading the targets", pc->pc_upload(a->tgt, lay->tgt, sizeof(int) * (size_t)lay->n_tgt));
    }
    /* the CPU's attention with no window: longer sequences were refused (model_config_check_seq_len), so a window
     * would change nothing */
    PcAttnPlan *plan = pc->pc_attn_plan_new(lay->pstart, lay->plen, lay->sstart, T, 0);
    if (!plan) return fail(r, "the attention plan");
    int rc = pc->pc_embed_forward(a->x, g->embed, g->embed_dt, a->tokens, T, H) ? fail(r, "embed_tokens") : 0;
    for (int l = 0; l < g->c.num_hidden_layers && !rc; l++)
        rc = gpu_layer_forward(g, a, &g->layers[l], plan, NULL, T, r->err, r->errlen);
    if (!rc && pc->pc_rmsnorm_forward(a->xf, PC_F32, a->rstd, NULL, a->x, NULL, g->final_norm, T, H,
                                      (float)g->c.rms_norm_eps))
        rc = fail(r, "model.norm");
    if (pc->pc_sync() && !rc) rc = fail(r, "the layers"); /* the plan's memory may be in use until here */
    pc->pc_attn_plan_free(plan);
    return rc;
}

/* the batch's layout, checked as batch_new checks it; 1 when it has no responses (nothing to do) */
static int pack(Run *r, const Row *rows, int n_rows, BatchLayout *lay, int reward) {
    const ModelConfig *c = &r->g->c;
    if ((c->head != HEAD_LM) != reward) {
        snprintf(r->err, r->errlen, "gpu forward: %s", reward ? "gpu_forward_rewards needs a reward model (this is "
                 "a causal LM: gpu_forward_logps)" : "gpu_forward_logps needs a causal LM (this is a reward model: "
                 "gpu_forward_rewards)");
        return -1;
    }
    if (batch_layout_count(c, rows, n_rows, lay, r->err, r->errlen)) return -1;
    if (!lay->n_resp) return 1;
    batch_layout_fill(c, rows, n_rows, lay);
    return 0;
}

int gpu_forward_logps(GpuModel *g, const Row *rows, int n_rows, double *logps, int *n_scored, char *err,
                      size_t errlen) {
    Run r = {g, g->pc, err, errlen};
    BatchLayout lay;
    memset(&lay, 0, sizeof lay);
    Acts a;
    int rc = pack(&r, rows, n_rows, &lay, 0);
    if (rc) {
        batch_layout_free(&lay);
        return rc > 0 ? 0 : -1;
    }
    double *lp = xmalloc(sizeof(double) * (size_t)lay.n_tgt);
    const ModelConfig *c = &g->c;
    rc = activations(&r, &lay, 0, &a) || rope_table_for(&r, lay.n_pos) || trunk_forward(&r, &lay, &a, 0) ? -1 : 0;
    if (!rc && g->pc->pc_lmhead_forward(a.logp, a.lse_t, a.xf, g->lm_head, g->dt, a.src, a.tgt, lay.n_tgt,
                                        c->hidden_size, c->vocab_size, a.work, NULL))
        rc = fail(&r, "the LM head");
    if (!rc && (g->pc->pc_download(lp, a.logp, sizeof(double) * (size_t)lay.n_tgt) || g->pc->pc_sync()))
        rc = fail(&r, "downloading the log-probs");
    if (!rc) { /* in target order, as model_forward adds them */
        for (int i = 0; i < lay.n_resp; i++) logps[i] = 0.0;
        for (int i = 0; i < lay.n_tgt; i++) logps[lay.tgt_resp[i]] += lp[i];
        if (n_scored) memcpy(n_scored, lay.n_scored, sizeof(int) * (size_t)lay.n_resp);
    }
    free(lp);
    batch_layout_free(&lay);
    return rc;
}

int gpu_forward_rewards(GpuModel *g, const Row *rows, int n_rows, double *rewards, char *err, size_t errlen) {
    Run r = {g, g->pc, err, errlen};
    BatchLayout lay;
    memset(&lay, 0, sizeof lay);
    Acts a;
    int rc = pack(&r, rows, n_rows, &lay, 1);
    if (rc) {
        batch_layout_free(&lay);
        return rc > 0 ? 0 : -1;
    }
    size_t H = (size_t)g->c.hidden_size, NL = (size_t)g->c.num_labels, nr = (size_t)lay.n_resp;
    float *hl = xmalloc(sizeof(float) * nr * H);
    rc = activations(&r, &lay, 1, &a) || rope_table_for(&r, lay.n_pos) || trunk_forward(&r, &lay, &a, 1) ? -1 : 0;
    if (!rc && g->pc->pc_embed_forward(a.hl, a.xf, PC_F32, a.last, lay.n_resp, (int)H)) /* a gather of xf's rows */
        rc = fail(&r, "the last tokens' rows");
    if (!rc && (g->pc->pc_download(hl, a.hl, sizeof(float) * nr * H) || g->pc->pc_sync()))
        rc = fail(&r, "downloading the last tokens' rows");
    for (size_t i = 0; !rc && i < nr; i++) /* model_forward_rewards' sums, in its order */
        for (size_t j = 0; j < NL; j++) {
            double acc = 0.0;
            for (size_t k = 0; k < H; k++) acc += (double)g->reward_head[j * H + k] * hl[i * H + k];
            rewards[i * NL + j] = acc;
        }
    free(hl);
    batch_layout_free(&lay);
    return rc;
}
