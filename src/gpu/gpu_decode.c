/* gpu_decode.c: incremental decoding on the GPU (gpu_decode.h), model/decode.c's steps on a GpuModel's weights:
 * a prompt's layers over its tokens (the fused attention on one causal segment), its keys and values into the
 * sequence's cache; then a step appends one token to each active sequence, the projections batched across them,
 * each new query attending to its own cache (cuda/decode.h); the next-token logits of the last positions through
 * the LM head's product, read back for the host's sampler. Rounding in bf16 as gpu_forward.c's layer. */
#include "gpu/gpu_decode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "gpu/gpu_internal.h"

struct GpuDecoder {
    GpuModel *g;
    const PcApi *pc;
    int n_seq, max_len, cap; /* cap: the rows the activations hold (max(max_len, n_seq)) */
    size_t e;                /* bytes of a cache element (the products' dtype) */
    void *kc, *vc;           /* device [L, n_seq, max_len, KD] keys (after RoPE) and values */
    void *act;               /* device: the activations below */
    int *tokens, *pos, *slot, *len; /* [cap] */
    float *x, *q, *gu, *xf, *logits; /* [cap, H], [cap, QD + 2 KD], [cap, 2I], [cap, H], [n_seq, V] */
    void *xn, *att, *h, *xfb; /* dt: [cap, H], [cap, QD], [cap, I], [n_seq, H] */
    PcBf16 *qkvb;            /* [cap, QD + 2 KD] q, k, v rounded for the prompt's attention (bf16 models) */
    float *lse, *rstd;       /* [cap, NH], [cap] */
    void *host;              /* a host buffer for fork's copies, [max_len, KD] elements */
};

#define ALIGN 256
static void *place(char *base, size_t *off, size_t bytes) {
    void *p = base ? base + *off : NULL;
    *off += (bytes + ALIGN - 1) / ALIGN * ALIGN;
    return p;
}

static size_t carve(GpuDecoder *d, char *base) {
    const ModelConfig *c = &d->g->c;
    size_t T = (size_t)d->cap, H = (size_t)c->hidden_size, I = (size_t)c->intermediate_size, f = sizeof(float);
    size_t QD = (size_t)c->num_attention_heads * c->head_dim, KD = (size_t)c->num_key_value_heads * c->head_dim;
    size_t S = (size_t)d->n_seq, off = 0, e = d->e, ni = sizeof(int);
    d->tokens = place(base, &off, T * ni), d->pos = place(base, &off, T * ni);
    d->slot = place(base, &off, T * ni), d->len = place(base, &off, T * ni);
    d->x = place(base, &off, T * H * f), d->xn = place(base, &off, T * H * e), d->rstd = place(base, &off, T * f);
    d->q = place(base, &off, T * (QD + 2 * KD) * f), d->qkvb = place(base, &off, T * (QD + 2 * KD) * e);
    d->att = place(base, &off, T * QD * e), d->lse = place(base, &off, T * (size_t)c->num_attention_heads * f);
    d->gu = place(base, &off, T * 2 * I * f), d->h = place(base, &off, T * I * e);
    d->xf = place(base, &off, T * H * f), d->xfb = place(base, &off, S * H * e);
    d->logits = place(base, &off, S * (size_t)c->vocab_size * f);
    return off;
}

static int fail(const GpuDecoder *d, const char *what, char *err, size_t errlen) {
    snprintf(err, errlen, "gpu decode: %s: %s", what, d->pc->pc_error());
    return -1;
}

GpuDecoder *gpu_decoder_new(GpuModel *g, int n_seq, int max_len, char *err, size_t errlen) {
    const ModelConfig *c = &g->c;
    if (c->head != HEAD_LM) {
        snprintf(err, errlen, "gpu decode: a reward model has no language-model head to decode with");
        return NULL;
    }
    if (max_len > 8192) {
        snprintf(err, errlen, "gpu decode: sequences of %d tokens: the GPU's decode attention holds at most 8192",
                 max_len);
        return NULL;
    }
    GpuDecoder *d = xcalloc(1, sizeof *d);
    d->g = g, d->pc = g->pc, d->n_seq = n_seq, d->max_len = max_len, d->cap = max_len > n_seq ? max_len : n_seq;
    d->e = g->dt == PC_BF16 ? 2 : 4;
    size_t KD = (size_t)c->num_key_value_heads * c->head_dim;
    size_t cache = (size_t)c->num_hidden_layers * n_seq * max_len * KD * d->e, act = carve(d, NULL);
    d->kc = g->pc->pc_alloc(cache ? cache : 1);
    d->vc = d->kc ? g->pc->pc_alloc(cache ? cache : 1) : NULL;
    d->act = d->vc ? g->pc->pc_alloc(act) : NULL;
    if (!d->act) {
        snprintf(err, errlen, "gpu decode: %d sequences of %d tokens need %.2f GB of key/value cache and %.2f GB of "
                 "activations: %s (fewer prompts at once, or shorter ones)", n_seq, max_len, 2.0 * (double)cache / 1e9,
                 (double)act / 1e9, g->pc->pc_error());
        gpu_decoder_free(d);
        return NULL;
    }
    carve(d, d->act);
    d->host = xmalloc((size_t)max_len * KD * d->e);
    if (gpu_rope_table(g->pc, c, g->inv_freq, max_len, &g->cs, &g->cs_pos)) {
        fail(d, "the RoPE table", err, errlen);
        gpu_decoder_free(d);
        return NULL;
    }
    return d;
}

void gpu_decoder_free(GpuDecoder *d) {
    if (!d) return;
    d->pc->pc_free(d->kc), d->pc->pc_free(d->vc), d->pc->pc_free(d->act);
    free(d->host);
    free(d);
}

#define TRY(what, call)                                                                                                \
    do {                                                                                                               \
        if (call) return fail(d, what, err, errlen);                                                                   \
    } while (0)

/* layer l over T rows (their positions, slots and, for a step, lengths after it uploaded): gpu_forward.c's layer,
 * the keys and values into the cache; plan: the prompt's causal attention (prefill), or NULL (a step) */
static int layer(GpuDecoder *d, int l, int T, const PcAttnPlan *plan, char *err, size_t errlen) {
    const ModelConfig *c = &d->g->c;
    size_t QD = (size_t)c->num_attention_heads * c->head_dim, KD = (size_t)c->num_key_value_heads * c->head_dim;
    size_t layer_cache = (size_t)d->n_seq * d->max_len * KD * d->e;
    Acts a = {.pos = d->pos, .x = d->x, .xn = d->xn, .rstd = d->rstd, .lse = d->lse, .q = d->q, .qkvb = d->qkvb,
              .att = d->att, .gu = d->gu, .h = d->h};
    a.k = a.q + (size_t)T * QD, a.v = a.k + (size_t)T * KD;
    GpuKv kv = {(char *)d->kc + (size_t)l * layer_cache, (char *)d->vc + (size_t)l * layer_cache, d->max_len, d->slot,
                d->len};
    return gpu_layer_forward(d->g, &a, &d->g->layers[l], plan, &kv, T, err, errlen);
}

/* the rows' tokens through the layers and the final norm, then the logits of rows [r0, r0 + nr) into logits
 * [nr, V] (host) */
static int run(GpuDecoder *d, int T, const PcAttnPlan *plan, int r0, int nr, float *logits, char *err,
               size_t errlen) {
    const GpuModel *g = d->g;
    const PcApi *pc = d->pc;
    const ModelConfig *c = &g->c;
    int H = c->hidden_size, V = c->vocab_size;
    TRY("embed_tokens", pc->pc_embed_forward(d->x, g->embed, g->embed_dt, d->tokens, T, H));
    for (int l = 0; l < c->num_hidden_layers; l++)
        if (layer(d, l, T, plan, err, errlen)) return -1;
    TRY("model.norm", pc->pc_rmsnorm_forward(d->xf, PC_F32, d->rstd, NULL, d->x, NULL, g->final_norm, T, H,
                                             (float)c->rms_norm_eps));
    const void *xs = d->xf + (size_t)r0 * H;
    if (g->dt == PC_BF16) { /* the head's operand rounded, as the CPU's product rounds it */
        TRY("the head's operand", pc->pc_f32_to_bf16(d->xfb, d->xf + (size_t)r0 * H, (size_t)nr * H));
        xs = d->xfb;
    }
    TRY("the LM head", pc->pc_gemm(0, 1, nr, V, H, 1.0f, xs, H, g->lm_head, H, 0.0f, NULL, d->logits, V, NULL, g->dt,
                                   PC_F32));
    TRY("reading the logits back", pc->pc_download(logits, d->logits, sizeof(float) * (size_t)nr * V) || pc->pc_sync());
    return 0;
}

int gpu_decoder_prefill(GpuDecoder *d, int seq, const int *ids, int n, float *logits, char *err, size_t errlen) {
    int *h = xmalloc(sizeof(int) * (size_t)(4 * n)), *zero = h + n, *pos = h + 2 * n, *sl = h + 3 * n;
    for (int i = 0; i < n; i++) zero[i] = 0, pos[i] = i, sl[i] = seq;
    int rc = d->pc->pc_upload(d->tokens, ids, sizeof(int) * (size_t)n) ||
             d->pc->pc_upload(d->pos, pos, sizeof(int) * (size_t)n) ||
             d->pc->pc_upload(d->slot, sl, sizeof(int) * (size_t)n) || d->pc->pc_sync()
                 ? fail(d, "uploading the prompt", err, errlen)
                 : 0;
    /* one causal segment: row t sees rows 0 .. t */
    PcAttnPlan *plan = rc ? NULL : d->pc->pc_attn_plan_new(zero, zero, zero, n, 0);
    if (!rc && !plan) rc = fail(d, "the attention plan", err, errlen);
    if (!rc) rc = run(d, n, plan, n - 1, 1, logits, err, errlen);
    if (plan) d->pc->pc_sync(), d->pc->pc_attn_plan_free(plan);
    free(h);
    return rc;
}

int gpu_decoder_fork(GpuDecoder *d, int src, int dst, int count, int len, char *err, size_t errlen) {
    const ModelConfig *c = &d->g->c;
    size_t KD = (size_t)c->num_key_value_heads * c->head_dim, row = KD * d->e, n = (size_t)len * row;
    size_t slot = (size_t)d->max_len * row, layer_cache = (size_t)d->n_seq * slot;
    for (int l = 0; l < c->num_hidden_layers; l++)
        for (int which = 0; which < 2; which++) {
            char *base = (char *)(which ? d->vc : d->kc) + (size_t)l * layer_cache;
            TRY("reading a prompt's cache", d->pc->pc_download(d->host, base + (size_t)src * slot, n) || d->pc->pc_sync());
            for (int s = dst; s < dst + count; s++)
                if (s != src) TRY("copying a prompt's cache", d->pc->pc_upload(base + (size_t)s * slot, d->host, n));
            TRY("copying a prompt's cache", d->pc->pc_sync());
        }
    return 0;
}

int gpu_decoder_step(GpuDecoder *d, const int *tok, const int *seq, const int *pos, int n, float *logits, char *err,
                     size_t errlen) {
    int *len = xmalloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++) len[i] = pos[i] + 1;
    int rc = d->pc->pc_upload(d->tokens, tok, sizeof(int) * (size_t)n) ||
             d->pc->pc_upload(d->pos, pos, sizeof(int) * (size_t)n) ||
             d->pc->pc_upload(d->slot, seq, sizeof(int) * (size_t)n) ||
             d->pc->pc_upload(d->len, len, sizeof(int) * (size_t)n) || d->pc->pc_sync()
                 ? fail(d, "uploading the step's tokens", err, errlen)
                 : 0;
    free(len);
    return rc ? -1 : run(d, n, NULL, 0, n, logits, err, errlen);
}
