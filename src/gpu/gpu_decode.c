/* gpu_decode.c: incremental decoding on the GPU (gpu_decode.h), model/decode.c's steps on a GpuModel's weights:
 * prompts' layers over their tokens packed (the fused attention, one causal segment a prompt), their keys and
 * values into their slots' cache; then a step appends one token to each active sequence, the projections batched
 * across them, each new query attending to its own cache and its borrowed prefix (cuda/decode.h); the next-token
 * logits of the last positions through the LM head's product, read back for the host's sampler or drawn from on
 * the device. Rounding in bf16 as gpu_forward.c's layer. */
#include "gpu/gpu_decode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "gpu/gpu_internal.h"

/* A step runs over a bucket's rows (the active ones, then padding rows on a slot of their own), so that one CUDA
 * graph a (bucket, lengths' bound, tokens' source) replays it; the first step of a key runs uncaptured (scratch and
 * cached algorithms made), the second captures it */
typedef struct GpuDecoder GpuDecoder;
typedef struct {
    GpuDecoder *d;
    int B, bound, from_next; /* rows; the decode attention's bound (a multiple of its split); tokens from next[] */
} StepRun;
typedef struct {
    StepRun run;
    int state; /* 0 warmed up once, 1 captured in graph, -1 capture refused: uncaptured from then on */
    void *graph;
} StepGraph;
#define MAX_GRAPHS 64

struct GpuDecoder {
    GpuModel *g;
    const PcApi *pc;
    int n_seq, max_len, cap; /* cap: the rows the activations hold (max(max_len, bmax)) */
    int n_slots, bmax;       /* n_seq + 1 (the last: the padding rows'); the largest bucket a step takes */
    size_t e;                /* bytes of a cache element (the products' dtype) */
    void *kc, *vc;           /* device [L, n_slots, max_len, KD] keys (after RoPE) and values */
    void *act;               /* device: the activations and arrays below */
    size_t act_bytes, cache_bytes;
    int *tokens, *pos, *slot, *len;  /* [cap] a pass's rows */
    int *pslot, *plen, *next;        /* [n_slots] each slot's borrowed prefix (cuda/decode.h), its drawn token */
    int *ids, *rows, *steps;         /* [n_seq] a draw's ids, logits rows and steps */
    uint64_t *keys;                  /* [n_seq] a draw's streams */
    float *temps;                    /* [n_seq] a draw's temperatures */
    int *banned;                     /* [n_banned] */
    float *x, *q, *gu, *xf, *logits; /* [cap, H], [cap, QD + 2 KD], [cap, 2I], [cap, H], [bmax + 2 n_seq, V] */
    void *xn, *att, *h, *xfb;        /* dt: [cap, H], [cap, QD], [cap, I], [bmax, H] */
    float *xg;                       /* [n_seq, H] the prompts' last rows */
    PcBf16 *qkvb;                    /* [cap, QD + 2 KD] q, k, v rounded for the prompt's attention (bf16 models) */
    float *lse, *rstd;               /* [cap, NH], [cap] */
    void *dwork, *swork;             /* the decode attention's and the sampler's work */
    /* host */
    int *h_pslot, *h_plen, *h_lrow;  /* [n_slots] mirrors; lrow: the row of logits holding the slot's latest */
    int n_banned;
    PcSampling s;
    char *pin;                       /* pinned: two staging halves of half bytes (a pass's arrays up), then the ids
                                        down [n_seq] */
    size_t half;
    int flip, pending[2];            /* the half written last; a half's uploads may still be in flight */
    int dirty;                       /* h_pslot / h_plen changed since their upload */
    int graphs;                      /* steps through CUDA graphs (gpu_decoder_graphs) */
    StepGraph graph[MAX_GRAPHS];
    int n_graph;
    long launches;                   /* steps replayed from a graph */
    char gerr[512];                  /* a step's error inside a graph's work */
};

/* Logits rows: [0, bmax) a step's, in its rows' order; [bmax, bmax + n_seq) slot s's prefill kept at bmax + s;
 * [bmax + n_seq, bmax + 2 n_seq) a prefill's product, before its rows are kept (so that a prefill between a step and
 * its draws leaves the step's rows) */
#define KEPT(d) ((size_t)(d)->bmax)
#define PREFILL(d) ((size_t)(d)->bmax + (size_t)(d)->n_seq)

/* the rows a step of n takes: 1, 2, 4, 8, 16, 32, then multiples of 16 up to 64, of 32 up to 256, of 64 beyond */
static int bucket(int n) {
    if (n <= 32) {
        int b = 1;
        while (b < n) b *= 2;
        return b;
    }
    int q = n <= 64 ? 16 : n <= 256 ? 32 : 64;
    return (n + q - 1) / q * q;
}

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
    size_t S = (size_t)d->n_seq, off = 0, e = d->e, ni = sizeof(int), V = (size_t)c->vocab_size;
    size_t NS = (size_t)d->n_slots, BM = (size_t)d->bmax;
    d->tokens = place(base, &off, T * ni), d->pos = place(base, &off, T * ni);
    d->slot = place(base, &off, T * ni), d->len = place(base, &off, T * ni);
    d->pslot = place(base, &off, NS * ni), d->plen = place(base, &off, NS * ni);
    d->next = place(base, &off, NS * ni), d->ids = place(base, &off, S * ni);
    d->rows = place(base, &off, S * ni), d->steps = place(base, &off, S * ni);
    d->keys = place(base, &off, S * sizeof(uint64_t)), d->temps = place(base, &off, S * f);
    d->banned = place(base, &off, V * ni);
    d->x = place(base, &off, T * H * f), d->xn = place(base, &off, T * H * e), d->rstd = place(base, &off, T * f);
    d->q = place(base, &off, T * (QD + 2 * KD) * f), d->qkvb = place(base, &off, T * (QD + 2 * KD) * e);
    d->att = place(base, &off, T * QD * e), d->lse = place(base, &off, T * (size_t)c->num_attention_heads * f);
    d->gu = place(base, &off, T * 2 * I * f), d->h = place(base, &off, T * I * e);
    d->xf = place(base, &off, T * H * f), d->xfb = place(base, &off, BM * H * e), d->xg = place(base, &off, S * H * f);
    d->logits = place(base, &off, (BM + 2 * S) * V * f);
    d->dwork = place(base, &off, d->pc->pc_decode_work(d->bmax, c->num_attention_heads, c->head_dim, d->max_len));
    d->swork = place(base, &off, d->pc->pc_sample_work(d->n_seq, c->vocab_size));
    return off;
}

static int fail(const GpuDecoder *d, const char *what, char *err, size_t errlen) {
    snprintf(err, errlen, "gpu decode: %s: %s", what, d->pc->pc_error());
    return -1;
}

#define TRY(what, call)                                                                                                \
    do {                                                                                                               \
        if (call) return fail(d, what, err, errlen);                                                                   \
    } while (0)

/* the stream waited for: no staged upload is in flight */
static int synced(GpuDecoder *d, int rc) {
    if (!rc) d->pending[0] = d->pending[1] = 0;
    return rc;
}

/* the host arrays a[i] (bytes[i] each) into a staging half (the other one than last time, so that a step's
 * uploads and the next draw's need no wait), then to the device arrays dst[i], one copy each */
static int stage_up(GpuDecoder *d, int **dst, const int *const *a, const size_t *bytes, int k) {
    int h = d->flip ^= 1;
    if (d->pending[h] && synced(d, d->pc->pc_sync())) return -1; /* its last uploads may still be reading it */
    char *base = d->pin + (size_t)h * d->half;
    size_t off = 0;
    for (int i = 0; i < k; i++) {
        if (off + bytes[i] > d->half) return -1; /* sized by gpu_decoder_new: not reached */
        memcpy(base + off, a[i], bytes[i]);
        if (bytes[i] && d->pc->pc_upload(dst[i], base + off, bytes[i])) return -1;
        off += (bytes[i] + 15) / 16 * 16;
    }
    d->pending[h] = 1;
    return 0;
}

GpuDecoder *gpu_decoder_new(GpuModel *g, int n_seq, int max_len, char *err, size_t errlen) {
    const ModelConfig *c = &g->c;
    if (c->head != HEAD_LM) {
        snprintf(err, errlen, "gpu decode: a reward model has no language-model head to decode with");
        return NULL;
    }
    if (max_len > (1 << 17)) {
        snprintf(err, errlen, "gpu decode: sequences of %d tokens: the GPU's decode attention holds at most 131072",
                 max_len);
        return NULL;
    }
    GpuDecoder *d = xcalloc(1, sizeof *d);
    d->g = g, d->pc = g->pc, d->n_seq = n_seq, d->max_len = max_len, d->n_slots = n_seq + 1, d->bmax = bucket(n_seq);
    d->cap = max_len > d->bmax ? max_len : d->bmax;
    d->e = g->dt == PC_BF16 ? 2 : 4;
    const char *gv = getenv("PPA_CUDA_GRAPHS"); /* 0: every step launched kernel by kernel */
    d->graphs = !(gv && !strcmp(gv, "0"));
    size_t KD = (size_t)c->num_key_value_heads * c->head_dim;
    size_t cache = (size_t)c->num_hidden_layers * d->n_slots * max_len * KD * d->e, act = carve(d, NULL);
    d->cache_bytes = 2 * cache, d->act_bytes = act;
    d->kc = g->pc->pc_alloc(cache ? cache : 1);
    d->vc = d->kc ? g->pc->pc_alloc(cache ? cache : 1) : NULL;
    d->act = d->vc ? g->pc->pc_alloc(act) : NULL;
    if (!d->act) {
        snprintf(err, errlen, "gpu decode: %d sequences of %d tokens need %.2f GB of key/value cache and %.2f GB of "
                 "activations and logits: %s (fewer prompts at once, or shorter ones)", n_seq, max_len,
                 2.0 * (double)cache / 1e9, (double)act / 1e9, g->pc->pc_error());
        gpu_decoder_free(d);
        return NULL;
    }
    carve(d, d->act);
    /* staging: a pass's four row arrays, or a draw's five, or the banned ids */
    size_t rows = 4 * sizeof(int) * (size_t)d->cap + 64, draws = 32 * (size_t)n_seq + 96;
    size_t ban = sizeof(int) * (size_t)c->vocab_size + 16;
    d->half = rows > draws ? rows : draws;
    d->half = (d->half > ban ? d->half : ban + 15) / 16 * 16;
    d->pin = g->pc->pc_host_alloc(2 * d->half + sizeof(int) * (size_t)n_seq);
    d->h_pslot = xmalloc(sizeof(int) * (size_t)d->n_slots), d->h_plen = xcalloc((size_t)d->n_slots, sizeof(int));
    d->h_lrow = xmalloc(sizeof(int) * (size_t)d->n_slots);
    for (int s = 0; s < d->n_slots; s++) d->h_pslot[s] = s, d->h_lrow[s] = -1;
    d->s = (PcSampling){0.0f, 0, 1.0f};
    char e2[256];
    size_t nsb = sizeof(int) * (size_t)d->n_slots;
    if (!d->pin || d->pc->pc_upload(d->pslot, d->h_pslot, nsb) || d->pc->pc_upload(d->plen, d->h_plen, nsb) ||
        d->pc->pc_memset(d->next, 0, nsb) || d->pc->pc_sync() ||
        gpu_rope_table(g->pc, c, g->inv_freq, max_len, &g->cs, &g->cs_pos)) {
        fail(d, d->pin ? "the RoPE table and the slots' arrays" : "the pinned staging", e2, sizeof e2);
        snprintf(err, errlen, "%s", e2);
        gpu_decoder_free(d);
        return NULL;
    }
    return d;
}

void gpu_decoder_free(GpuDecoder *d) {
    if (!d) return;
    for (int i = 0; i < d->n_graph; i++) d->pc->pc_graph_free(d->graph[i].graph);
    d->pc->pc_free(d->kc), d->pc->pc_free(d->vc), d->pc->pc_free(d->act);
    d->pc->pc_host_free(d->pin);
    free(d->h_pslot), free(d->h_plen), free(d->h_lrow);
    free(d);
}

size_t gpu_decoder_bytes(const GpuDecoder *d) { return d->cache_bytes + d->act_bytes; }

/* layer l over T rows (their positions, slots and, for a step, lengths uploaded): gpu_forward.c's layer, the keys
 * and values into the cache; plan: the prompts' causal attention (prefill), or NULL (a step; bound: its longest) */
static int layer(GpuDecoder *d, int l, int T, const PcAttnPlan *plan, int bound, char *err, size_t errlen) {
    const ModelConfig *c = &d->g->c;
    size_t QD = (size_t)c->num_attention_heads * c->head_dim, KD = (size_t)c->num_key_value_heads * c->head_dim;
    size_t layer_cache = (size_t)d->n_slots * d->max_len * KD * d->e;
    Acts a = {.pos = d->pos, .x = d->x, .xn = d->xn, .rstd = d->rstd, .lse = d->lse, .q = d->q, .qkvb = d->qkvb,
              .att = d->att, .gu = d->gu, .h = d->h};
    a.k = a.q + (size_t)T * QD, a.v = a.k + (size_t)T * KD;
    GpuKv kv = {(char *)d->kc + (size_t)l * layer_cache, (char *)d->vc + (size_t)l * layer_cache, d->max_len, d->slot,
                d->len, d->pslot, d->plen, bound, d->dwork};
    return gpu_layer_forward(d->g, &a, &d->g->layers[l], plan, &kv, T, err, errlen);
}

/* the rows' tokens through the layers and the final norm; then the LM head over the n_out rows last[] of xf (NULL:
 * its first n_out) into logits rows [r0, r0 + n_out) */
static int run(GpuDecoder *d, int T, const PcAttnPlan *plan, int bound, const int *last, int n_out, int r0, char *err,
               size_t errlen) {
    const GpuModel *g = d->g;
    const PcApi *pc = d->pc;
    const ModelConfig *c = &g->c;
    int H = c->hidden_size, V = c->vocab_size;
    TRY("embed_tokens", pc->pc_embed_forward(d->x, g->embed, g->embed_dt, d->tokens, T, H));
    for (int l = 0; l < c->num_hidden_layers; l++)
        if (layer(d, l, T, plan, bound, err, errlen)) return -1;
    TRY("model.norm", pc->pc_rmsnorm_forward(d->xf, PC_F32, d->rstd, NULL, d->x, NULL, g->final_norm, T, H,
                                             (float)c->rms_norm_eps));
    const float *xs = d->xf;
    if (last) { /* a prefill's last rows, one a prompt */
        for (int i = 0; i < n_out; i++)
            TRY("the prompts' last rows", pc->pc_copy(d->xg + (size_t)i * H, d->xf + (size_t)last[i] * H,
                                                      sizeof(float) * (size_t)H));
        xs = d->xg;
    }
    const void *op = xs;
    if (g->dt == PC_BF16) { /* the head's operand rounded, as the CPU's product rounds it */
        TRY("the head's operand", pc->pc_f32_to_bf16(d->xfb, xs, (size_t)n_out * H));
        op = d->xfb;
    }
    TRY("the LM head", pc->pc_gemm(0, 1, n_out, V, H, 1.0f, op, H, g->lm_head, H, 0.0f, NULL,
                                   d->logits + (size_t)r0 * V, V, NULL, g->dt, PC_F32));
    return 0;
}

/* the logits rows [r0, r0 + n) to the host */
static int read_logits(GpuDecoder *d, float *logits, int r0, int n, char *err, size_t errlen) {
    size_t V = (size_t)d->g->c.vocab_size;
    TRY("reading the logits back", synced(d, d->pc->pc_download(logits, d->logits + (size_t)r0 * V,
                                                                sizeof(float) * (size_t)n * V) || d->pc->pc_sync()));
    return 0;
}

/* the content of slot s is about to be replaced or dropped: the slots borrowing from it get their positions copied
 * first (device to device), and s drops its own borrowing */
static int release(GpuDecoder *d, int s, char *err, size_t errlen) {
    const ModelConfig *c = &d->g->c;
    size_t KD = (size_t)c->num_key_value_heads * c->head_dim, row = KD * d->e, slot = (size_t)d->max_len * row;
    size_t layer_cache = (size_t)d->n_slots * slot;
    for (int b = 0; b < d->n_seq; b++) {
        if (b == s || d->h_pslot[b] != s || d->h_plen[b] == 0) continue;
        for (int l = 0; l < c->num_hidden_layers; l++)
            for (int which = 0; which < 2; which++) {
                char *base = (char *)(which ? d->vc : d->kc) + (size_t)l * layer_cache;
                TRY("copying a borrowed prefix", d->pc->pc_copy(base + (size_t)b * slot, base + (size_t)s * slot,
                                                                (size_t)d->h_plen[b] * row));
            }
        d->h_pslot[b] = b, d->h_plen[b] = 0, d->dirty = 1;
    }
    if (d->h_plen[s]) d->h_pslot[s] = s, d->h_plen[s] = 0, d->dirty = 1;
    return 0;
}

/* the prefixes' mirrors to the device when they changed */
static int upload_prefixes(GpuDecoder *d, char *err, size_t errlen) {
    if (!d->dirty) return 0;
    d->dirty = 0;
    int *dst[2] = {d->pslot, d->plen};
    const int *src[2] = {d->h_pslot, d->h_plen};
    size_t bytes[2] = {sizeof(int) * (size_t)d->n_slots, sizeof(int) * (size_t)d->n_slots};
    TRY("the slots' prefixes", stage_up(d, dst, src, bytes, 2));
    return 0;
}

/* prompts [0, np) packed into one forward of their total tokens (<= cap) */
static int prefill_pack(GpuDecoder *d, const int *seq, const int *const *ids, const int *n, int np, char *err,
                        size_t errlen) {
    int T = 0;
    for (int i = 0; i < np; i++) T += n[i];
    int *h = xmalloc(sizeof(int) * (size_t)(6 * T + np));
    int *tok = h, *zero = h + T, *pos = h + 2 * T, *sl = h + 3 * T, *sst = h + 4 * T, *len = h + 5 * T;
    int *last = h + 6 * T;
    for (int i = 0, t = 0; i < np; i++) {
        for (int j = 0; j < n[i]; j++, t++)
            tok[t] = ids[i][j], zero[t] = 0, pos[t] = j, sl[t] = seq[i], sst[t] = t - j, len[t] = j + 1;
        last[i] = t - 1;
    }
    int *dst[4] = {d->tokens, d->pos, d->slot, d->len};
    const int *src[4] = {tok, pos, sl, len};
    size_t bytes[4];
    for (int i = 0; i < 4; i++) bytes[i] = sizeof(int) * (size_t)T;
    int rc = stage_up(d, dst, src, bytes, 4) ? fail(d, "uploading the prompts", err, errlen) : 0;
    /* one causal segment a prompt: row t sees its prompt's rows up to itself */
    PcAttnPlan *plan = rc ? NULL : d->pc->pc_attn_plan_new(zero, zero, sst, T, 0);
    if (!rc && !plan) rc = fail(d, "the attention plan", err, errlen);
    if (!rc) rc = run(d, T, plan, 1, last, np, (int)PREFILL(d), err, errlen);
    if (plan) synced(d, d->pc->pc_sync()), d->pc->pc_attn_plan_free(plan);
    free(h);
    return rc;
}

int gpu_decoder_prefill(GpuDecoder *d, const int *seq, const int *const *ids, const int *n, int np, float *logits,
                        char *err, size_t errlen) {
    for (int i = 0; i < np; i++)
        if (release(d, seq[i], err, errlen)) return -1;
    if (upload_prefixes(d, err, errlen)) return -1;
    size_t V = (size_t)d->g->c.vocab_size, P = PREFILL(d); /* the prefill's rows */
    for (int i0 = 0; i0 < np;) { /* as many prompts as the activations hold, at most n_seq (the head's rows) */
        int i1 = i0, T = 0;
        while (i1 < np && i1 - i0 < d->n_seq && T + n[i1] <= d->cap) T += n[i1++];
        if (prefill_pack(d, seq + i0, ids + i0, n + i0, i1 - i0, err, errlen)) return -1;
        for (int i = i0; i < i1; i++) /* kept: slot s's row at KEPT + s */
            TRY("keeping a prompt's logits", d->pc->pc_copy(d->logits + (KEPT(d) + (size_t)seq[i]) * V,
                                                            d->logits + (P + (size_t)(i - i0)) * V, sizeof(float) * V));
        if (logits && read_logits(d, logits + (size_t)i0 * V, (int)P, i1 - i0, err, errlen)) return -1;
        for (int i = i0; i < i1; i++) d->h_lrow[seq[i]] = (int)KEPT(d) + seq[i];
        i0 = i1;
    }
    return 0;
}

int gpu_decoder_fork(GpuDecoder *d, int src, int dst, int count, int len, char *err, size_t errlen) {
    const ModelConfig *c = &d->g->c;
    size_t KD = (size_t)c->num_key_value_heads * c->head_dim, row = KD * d->e, slot = (size_t)d->max_len * row;
    size_t layer_cache = (size_t)d->n_slots * slot;
    /* the root of src's first len positions: src itself, or the slot it borrows from (its own positions past the
     * borrowed ones are then copied) */
    int root = d->h_plen[src] ? d->h_pslot[src] : src;
    int shared = d->h_plen[src] && d->h_plen[src] < len ? d->h_plen[src] : len;
    for (int s = dst; s < dst + count; s++) {
        if (s == src) continue;
        if (release(d, s, err, errlen)) return -1;
        d->h_pslot[s] = root, d->h_plen[s] = shared, d->h_lrow[s] = d->h_lrow[src], d->dirty = 1;
        if (shared < len)
            for (int l = 0; l < c->num_hidden_layers; l++)
                for (int which = 0; which < 2; which++) {
                    char *base = (char *)(which ? d->vc : d->kc) + (size_t)l * layer_cache;
                    TRY("copying a prompt's cache", d->pc->pc_copy(base + (size_t)s * slot + shared * row,
                                                                   base + (size_t)src * slot + shared * row,
                                                                   (size_t)(len - shared) * row));
                }
    }
    return upload_prefixes(d, err, errlen);
}

int gpu_decoder_drop(GpuDecoder *d, int seq, char *err, size_t errlen) {
    d->h_lrow[seq] = -1;
    return release(d, seq, err, errlen);
}

/* a step's work on the device, its rows' arrays uploaded: what a graph captures (host values from r alone) */
static int step_work(void *ctx) {
    const StepRun *r = ctx;
    GpuDecoder *d = r->d;
    if (r->from_next && d->pc->pc_ids_move(d->tokens, NULL, d->next, d->slot, r->B)) /* the slots' drawn tokens */
        return fail(d, "the drawn tokens", d->gerr, sizeof d->gerr);
    return run(d, r->B, NULL, r->bound, NULL, r->B, 0, d->gerr, sizeof d->gerr);
}

/* the step's work: replayed from its key's graph, or captured now (its key's second step), or run uncaptured */
static int step_run(GpuDecoder *d, StepRun r) {
    StepGraph *G = NULL;
    for (int i = 0; d->graphs && i < d->n_graph && !G; i++)
        if (d->graph[i].run.B == r.B && d->graph[i].run.bound == r.bound && d->graph[i].run.from_next == r.from_next)
            G = &d->graph[i];
    if (!G && d->graphs && d->n_graph < MAX_GRAPHS) { /* a new key: warmed up uncaptured */
        G = &d->graph[d->n_graph++];
        *G = (StepGraph){r, 0, NULL};
        return step_work(&G->run);
    }
    if (!G || G->state < 0) return step_work(&r);
    if (G->state == 0) {
        if ((G->graph = d->pc->pc_graph_capture(step_work, &G->run))) {
            G->state = 1;
        } else { /* not capturable here: kernel by kernel from now on */
            G->state = -1;
            return step_work(&G->run);
        }
    }
    d->launches++;
    return d->pc->pc_graph_launch(G->graph) ? fail(d, "replaying the step's graph", d->gerr, sizeof d->gerr) : 0;
}

int gpu_decoder_step(GpuDecoder *d, const int *tok, const int *seq, const int *pos, int n, float *logits, char *err,
                     size_t errlen) {
    /* B rows: the n active ones, then padding rows on the last slot at position 0 */
    const int B = bucket(n), pad = d->n_slots - 1;
    int *h = xmalloc(sizeof(int) * (size_t)(4 * B)), *hp = h, *hs = h + B, *hl = h + 2 * B, *ht = h + 3 * B, bound = 1;
    for (int i = 0; i < B; i++) {
        hp[i] = i < n ? pos[i] : 0, hs[i] = i < n ? seq[i] : pad, hl[i] = hp[i] + 1, ht[i] = i < n && tok ? tok[i] : 0;
        bound = hl[i] > bound ? hl[i] : bound;
    }
    /* the attention's bound rounded up to its split, so that a graph serves lengths up to the next split */
    bound = (bound + PC_DECODE_SPLIT - 1) / PC_DECODE_SPLIT * PC_DECODE_SPLIT;
    bound = bound < d->max_len ? bound : d->max_len;
    int *dst[4] = {d->pos, d->slot, d->len, d->tokens};
    const int *src[4] = {hp, hs, hl, ht};
    size_t b = sizeof(int) * (size_t)B, bytes[4] = {b, b, b, b};
    int rc = upload_prefixes(d, err, errlen);
    if (!rc && stage_up(d, dst, src, bytes, tok ? 4 : 3)) rc = fail(d, "uploading the step's rows", err, errlen);
    free(h);
    if (!rc && step_run(d, (StepRun){d, B, bound, !tok})) rc = (snprintf(err, errlen, "%s", d->gerr), -1);
    if (!rc && logits) rc = read_logits(d, logits, 0, n, err, errlen);
    for (int i = 0; i < n && !rc; i++) d->h_lrow[seq[i]] = i;
    return rc;
}

void gpu_decoder_graphs(GpuDecoder *d, int on) { d->graphs = on; }
long gpu_decoder_graph_launches(const GpuDecoder *d) { return d->launches; }

int gpu_decoder_sampler(GpuDecoder *d, double temperature, int top_k, double top_p, const int *banned, int n_banned,
                        char *err, size_t errlen) {
    int V = d->g->c.vocab_size, n = 0;
    int *keep = xmalloc(sizeof(int) * (size_t)(n_banned ? n_banned : 1));
    for (int i = 0; i < n_banned; i++) /* distinct ids inside the vocabulary, at most V */
        if (banned[i] >= 0 && banned[i] < V) {
            int dup = 0;
            for (int j = 0; j < n && !dup; j++) dup = keep[j] == banned[i];
            if (!dup) keep[n++] = banned[i];
        }
    d->s = (PcSampling){(float)temperature, top_k, (float)top_p};
    d->n_banned = n;
    int *dst[1] = {d->banned};
    const int *src[1] = {keep};
    size_t bytes[1] = {sizeof(int) * (size_t)n};
    int rc = stage_up(d, dst, src, bytes, 1) ? fail(d, "the banned ids", err, errlen) : 0;
    free(keep);
    return rc;
}

int gpu_decoder_sample(GpuDecoder *d, const int *seq, const uint64_t *keys, const int *steps, const float *temps,
                       int n, int *ids, char *err, size_t errlen) {
    const PcApi *pc = d->pc;
    int V = d->g->c.vocab_size;
    int *rows = xmalloc(sizeof(int) * (size_t)(n ? n : 1)), bad = -1;
    for (int i = 0; i < n; i++)
        if ((rows[i] = d->h_lrow[seq[i]]) < 0) bad = seq[i];
    if (bad >= 0) {
        free(rows);
        snprintf(err, errlen, "gpu decode: slot %d has no logits kept on the device to draw from", bad);
        return -1;
    }
    int *dst[5] = {d->rows, d->slot, d->steps, (int *)d->keys, (int *)d->temps};
    const int *src[5] = {rows, seq, steps, (const int *)keys, (const int *)temps};
    size_t b = sizeof(int) * (size_t)n, bytes[5] = {b, b, b, 2 * b, b};
    int rc = stage_up(d, dst, src, bytes, temps ? 5 : 4) ? fail(d, "uploading the draws", err, errlen) : 0;
    free(rows);
    if (rc) return -1;
    TRY("the banned ids", pc->pc_logits_ban(d->logits, V, d->rows, n, V, d->banned, d->n_banned));
    TRY("the sampler", pc->pc_sample(d->ids, d->logits, V, d->rows, n, V, d->keys, d->steps, temps ? d->temps : NULL,
                                     d->s, d->swork));
    TRY("keeping the drawn tokens", pc->pc_ids_move(d->next, d->slot, d->ids, NULL, n));
    int *pin_ids = (int *)(d->pin + 2 * d->half);
    TRY("reading the drawn tokens back", synced(d, pc->pc_download(pin_ids, d->ids, b) || pc->pc_sync()));
    memcpy(ids, pin_ids, b);
    return 0;
}
