/* gpu_zero.c: the ranks' gradients and weights on the device (gpu_train.h): NCCL's all-reduce, ZeRO's reduce-scatter
 * and in-place all-gather, and the backward's buckets: each layer's gradients reduced (onto the ranks that own them
 * under ZeRO) while the backward goes on to the next layer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "gpu/gpu_internal.h"

static int fail(const GpuTrain *t, const char *what, char *err, size_t errlen) {
    snprintf(err, errlen, "gpu train: %s: %s", what, t->pc->pc_error());
    return -1;
}

int gpu_train_nccl_join(GpuTrain *t, const void *id, int rank, int size, char *err, size_t errlen) {
    if (t->pc->pc_nccl_init(id, rank, size)) return fail(t, "joining NCCL", err, errlen);
    t->nccl = 1;
    return 0;
}

void gpu_train_nccl_leave(GpuTrain *t) {
    if (t->nccl) t->pc->pc_nccl_free();
    t->nccl = 0;
}

void gpu_train_host_reduce(GpuTrain *t, GpuHostReduce reduce, void *ctx) { t->host_reduce = reduce, t->host_ctx = ctx; }

/* ---- the backward's buckets ---- */

static const char *const LAYER_TENSORS[] = {
    "input_layernorm.weight", "post_attention_layernorm.weight", "self_attn.q_proj.weight", "self_attn.q_proj.bias",
    "self_attn.k_proj.weight", "self_attn.k_proj.bias",          "self_attn.v_proj.weight", "self_attn.v_proj.bias",
    "self_attn.o_proj.weight", "self_attn.o_proj.bias",          "mlp.gate_proj.weight",    "mlp.gate_proj.bias",
    "mlp.up_proj.weight",      "mlp.up_proj.bias",               "mlp.down_proj.weight",    "mlp.down_proj.bias"};
enum { N_LAYER_TENSORS = sizeof LAYER_TENSORS / sizeof *LAYER_TENSORS };

int gpu_zero_buckets(GpuTrain *t, const Model *m, char *err, size_t errlen) {
    int L = t->c.num_hidden_layers;
    size_t n = t->n;
    t->bucket = xcalloc((size_t)L + 1, sizeof(size_t));
    for (int l = 0; l < L; l++) { /* a layer's region starts at its first tensor */
        long lo = -1;
        for (int k = 0; k < N_LAYER_TENSORS; k++) {
            long o = gpu_layer_offset(m, l, LAYER_TENSORS[k]);
            if (o >= 0 && (lo < 0 || o < lo)) lo = o;
        }
        if (lo < 0 || (l && (size_t)lo <= t->bucket[l - 1])) goto apart;
        t->bucket[l] = (size_t)lo;
    }
    /* the last layer's ends at the first other tensor after it (the final norm, an untied head), else at n */
    const char *const rest[] = {"model.embed_tokens.weight", "model.norm.weight"};
    long other[3] = {model_param_offset(m, rest[0]), model_param_offset(m, rest[1]), model_lm_offset(m)};
    t->bucket[L] = n;
    for (int i = 0; i < 3; i++)
        if (L && other[i] > (long)t->bucket[L - 1] && (size_t)other[i] < t->bucket[L]) t->bucket[L] = (size_t)other[i];
    for (int i = 0; i < 3; i++) /* none of them inside the layers' regions */
        if (L && other[i] >= (long)t->bucket[0] && (size_t)other[i] < t->bucket[L]) goto apart;
    for (int l = 0; l < L; l++) /* every tensor of a layer inside its region */
        for (int k = 0; k < N_LAYER_TENSORS; k++) {
            long o = gpu_layer_offset(m, l, LAYER_TENSORS[k]);
            if (o >= 0 && ((size_t)o < t->bucket[l] || (size_t)o >= t->bucket[l + 1])) goto apart;
        }
    return 0;
apart:
    snprintf(err, errlen, "gpu train: --zero 2 reduces the gradients layer by layer, and this model's tensor table does "
                          "not keep each layer's tensors together");
    free(t->bucket), t->bucket = NULL;
    return -1;
}

float *gpu_zero_grad_at(const GpuTrain *t, long o) {
    if (t->stage != 2) return t->g + o;
    int L = t->c.num_hidden_layers;
    size_t u = (size_t)o;
    if (!L || u < t->bucket[0]) return t->gx + u;
    if (u >= t->bucket[L]) return t->gx + t->bucket[0] + (u - t->bucket[L]);
    int lo = 0, hi = L - 1; /* the layer whose region holds u */
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (t->bucket[mid] <= u) lo = mid;
        else hi = mid - 1;
    }
    return t->slot[lo & 1] + (u - t->bucket[lo]);
}

/* buf [b - a]: the gradients [a, b) of the flat buffer summed over the ranks: onto each part's owner, who adds its
 * part into its share (stage 2: gs) or finds it in place (stage 1: g), or on every rank (stage 0); tag:
 * pc_nccl_await's. Without NCCL (stage 2 alone) through the host, part by part. */
static int reduce_range(GpuTrain *t, float *buf, size_t a, size_t b, int tag, char *err, size_t errlen) {
    const PcApi *pc = t->pc;
    size_t c = t->chunk;
    if (!t->stage) /* NCCL's all-reduce in place */
        return b > a && pc->pc_nccl_reduce_f32(buf, b - a, -1, NULL, tag)
                   ? fail(t, "summing a layer's gradients (NCCL)", err, errlen) : 0;
    for (int r = c ? (int)(a / c) : 0; c && r < t->ranks && (size_t)r * c < b; r++) {
        size_t x0 = a > (size_t)r * c ? a : (size_t)r * c, x1 = b < (size_t)(r + 1) * c ? b : (size_t)(r + 1) * c;
        if (x0 >= x1) continue;
        float *part = buf + (x0 - a), *acc = r == t->rank && t->stage == 2 ? t->gs + (x0 - t->lo) : NULL;
        if (t->nccl) {
            if (pc->pc_nccl_reduce_f32(part, x1 - x0, r, acc, tag))
                return fail(t, "reducing a layer's gradients onto their rank (NCCL)", err, errlen);
            continue;
        }
        if (!t->host_reduce) {
            snprintf(err, errlen, "gpu train: ZeRO-2 without NCCL or the host's reductions (internal)");
            return -1;
        }
        float *host = xmalloc(sizeof(float) * (x1 - x0));
        int rc = pc->pc_download(host, part, sizeof(float) * (x1 - x0)) || pc->pc_sync()
                     ? fail(t, "reading a layer's gradients back", err, errlen)
                     : t->host_reduce(t->host_ctx, host, x1 - x0, r, err, errlen);
        if (!rc && acc && (pc->pc_upload(part, host, sizeof(float) * (x1 - x0)) || pc->pc_add_f32(acc, part, x1 - x0)))
            rc = fail(t, "adding a reduced layer into this rank's share", err, errlen);
        free(host);
        if (rc) return -1;
    }
    return 0;
}

int gpu_zero_reduces(const GpuTrain *t) { return t->stage == 2 || (t->nccl && t->bucket && t->last); }

int gpu_train_reduce_in_backward(GpuTrain *t, int last) {
    t->last = last;
    return gpu_zero_reduces(t);
}

int gpu_zero_open(GpuTrain *t, int l, char *err, size_t errlen) {
    const PcApi *pc = t->pc;
    int L = t->c.num_hidden_layers;
    if (t->stage != 2) return 0; /* below stage 2 the layers reduce in place in g */
    if (l < 0) {
        size_t nx = t->bucket[0] + (t->n - t->bucket[L]);
        return pc->pc_memset(t->gx, 0, sizeof(float) * nx) ? fail(t, "clearing the gradients", err, errlen) : 0;
    }
    /* the slot's previous layer (l + 2) reduced before this one writes it */
    if ((t->nccl && pc->pc_nccl_await(l & 1)) ||
        pc->pc_memset(t->slot[l & 1], 0, sizeof(float) * (t->bucket[l + 1] - t->bucket[l])))
        return fail(t, "a layer's gradient buffer", err, errlen);
    return 0;
}

int gpu_zero_close(GpuTrain *t, int l, char *err, size_t errlen) {
    int L = t->c.num_hidden_layers, two = t->stage == 2;
    if (l >= 0)
        return reduce_range(t, two ? t->slot[l & 1] : t->g + t->bucket[l], t->bucket[l], t->bucket[l + 1], l & 1, err,
                            errlen);
    float *head = two ? t->gx : t->g, *tail = two ? t->gx + t->bucket[0] : t->g + t->bucket[L];
    if (reduce_range(t, head, 0, t->bucket[0], 2, err, errlen) || reduce_range(t, tail, t->bucket[L], t->n, 2, err, errlen))
        return -1;
    if (t->nccl && t->pc->pc_nccl_finish()) return fail(t, "the layers' reductions (NCCL)", err, errlen);
    t->reduced = 1;
    return 0;
}

int gpu_train_idle(GpuTrain *t, char *err, size_t errlen) {
    if (!gpu_zero_reduces(t)) return 0;
    if (gpu_zero_open(t, -1, err, errlen)) return -1;
    for (int l = t->c.num_hidden_layers - 1; l >= 0; l--)
        if (gpu_zero_open(t, l, err, errlen) || gpu_zero_close(t, l, err, errlen)) return -1;
    return gpu_zero_close(t, -1, err, errlen);
}

/* ---- after the micro-steps ---- */

int gpu_train_sum_grads(GpuTrain *t, int *sharded, char *err, size_t errlen) {
    *sharded = 0;
    if (t->reduced || t->stage == 2) { /* the backward's buckets did it */
        t->reduced = 0;
        *sharded = t->stage > 0;
        return 0;
    }
    if (!t->nccl) return 1;
    if (t->stage) {
        if (t->pc->pc_nccl_reduce_scatter_f32(t->g, t->chunk))
            return fail(t, "summing the ranks' shares of the gradients (NCCL)", err, errlen);
        return *sharded = 1, 0;
    }
    if (t->pc->pc_nccl_sum_f32(t->g, t->n)) return fail(t, "summing the ranks' gradients (NCCL)", err, errlen);
    return 0;
}

int gpu_train_zero_gather(GpuTrain *t, char *err, size_t errlen) {
    if (!t->nccl) return 1;
    /* p holds R chunks: every rank's share lands where it belongs, the last chunk's padding stays zero */
    if (t->pc->pc_nccl_all_gather_f32(t->p, t->chunk)) return fail(t, "gathering the ranks' weights (NCCL)", err, errlen);
    if (t->pb && t->pc->pc_f32_to_bf16(t->pb, t->p, t->n)) return fail(t, "the weights' bf16 copy", err, errlen);
    return 0;
}
