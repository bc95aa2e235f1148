/* gpu_internal.h: what the files of src/gpu share: the GpuModel struct (gpu_model.c builds it, gpu_forward.c runs
 * it) and the GpuTrain struct (gpu_train.c builds it, gpu_backward.c runs it). Other modules use gpu_model.h and
 * gpu_train.h. Pointers into device memory are marked "device"; the rest is host memory. */
#ifndef PPA_GPU_INTERNAL_H
#define PPA_GPU_INTERNAL_H

#include "gpu/gpu_model.h"
#include "gpu/gpu_train.h"

/* One layer's tensors: device pointers into GpuModel.weights. Matrices in the products' dtype (GpuModel.dt),
 * vectors in float32. */
typedef struct {
    const void *wq, *wk, *wv; /* [QD, H], [KD, H], [KD, H] */
    const void *wo;           /* [H, QD] */
    const void *wgu;          /* [2I, H]: gate_proj's rows, then up_proj's (one product, swiglu reads it in place) */
    const void *wd;           /* [H, I] */
    const float *attn_norm, *mlp_norm;   /* [H] */
    const float *bq, *bk, *bv, *bo, *bd; /* [QD], [KD], [KD], [H], [H], or NULL (absent) */
    const float *bgu;                    /* [2I]: gate's bias, then up's, or NULL */
} GpuLayer;

struct GpuModel {
    const PcApi *pc;
    ModelConfig c;
    ModelPrecision prec;
    PcDtype dt;               /* the matrices and the products' operands: PC_BF16 or PC_F32 */
    void *weights;            /* device: one allocation holding every tensor below */
    size_t weight_bytes;
    GpuLayer *layers;         /* [L] */
    const void *embed;        /* device [V, H], embed_dt elements: the rows model_embed gives, exactly */
    PcDtype embed_dt;
    const float *final_norm;  /* device [H] */
    const void *lm_head;      /* device [V, H] dt elements (a causal LM; embed itself when tied and equal), or NULL */
    float *reward_head;       /* [num_labels, H] a reward model's head as the CPU's products see it, or NULL */
    double *inv_freq;         /* [HS / 2] RoPE's inverse frequencies (hf/rope.h: the model's scaling) */
    float *cs;                /* device [cs_pos, HS / 2, 2] kernels.h's rope_table for positions 0 .. cs_pos - 1 */
    int cs_pos;
    void *act;                /* device: the activations of one batch (gpu_forward.c), grown when needed, kept */
    size_t act_bytes;
};

/* A batch's activations (device pointers into GpuModel.act), NULL where the batch has none */
typedef struct {
    int *tokens, *pos; /* [T] */
    int *src, *tgt;    /* [n_tgt] */
    int *last;         /* [n_resp] */
    float *x;          /* [T, H] the residual stream */
    void *xn;          /* [T, H] dt: a norm's output, the products' operand */
    float *rstd;       /* [T] */
    float *lse;        /* [T, NH] attention's log-sum-exps */
    /* the attention's phase */
    float *q, *k, *v;  /* [T, QD], [T, KD], [T, KD], one after the other */
    PcBf16 *qkvb;      /* [T, QD + 2 KD] the same in bf16 (bf16 models), q, then k, then v */
    void *att;         /* [T, QD] dt */
    /* the MLP's phase, over the attention's */
    float *gu;         /* [T, 2I] gate | up */
    void *h;           /* [T, I] dt */
    /* the head's phase, over both */
    float *xf;         /* [T, H] the final norm's output */
    double *logp;      /* [n_tgt] */
    float *lse_t;      /* [n_tgt] */
    void *work;        /* [pc_lmhead_work] bytes */
    float *hl;         /* [n_resp, H] xf at each response's last token (reward models) */
} Acts;

/* A decoder's key/value cache (gpu_decode.c), for gpu_layer_forward: layer l's keys and values [n_slots, max_len,
 * KD] in the products' dtype, and each row's slot and, for a step, its length after it (device); a step's
 * attention also reads each slot's borrowed prefix (pslot, plen [n_slots], cuda/decode.h), its lengths' bound and
 * its work */
typedef struct {
    void *kc, *vc;
    int max_len;
    const int *slot, *len;
    const int *pslot, *plen;
    int bound;
    void *work;
} GpuKv;

/* llama.c's layer_forward on a batch's activations (a->x [T, H] in, out; a->tokens unused; a->pos the rows'
 * positions): plan, the batch's fused attention; kv (may be NULL): the rows' keys and values, after RoPE, stored
 * into a decoder's cache, and with plan NULL each row's query attends to its slot's cache instead (a decode step).
 * gpu_forward.c; 0, or -1 with why in err. */
int gpu_layer_forward(const GpuModel *g, const Acts *a, const GpuLayer *w, const PcAttnPlan *plan, const GpuKv *kv,
                      int T, char *err, size_t errlen);

/* One layer's tensors as the training passes read them (device pointers): the weights in the products' dtype, the
 * vectors in float32, and their gradients (float32, NULL: frozen, or absent). When gate and up are adjacent
 * ([2I, H], GpuTrain.fused_gu) wu is wg + I H and a stacked bias is bgu ([2I], frozen bases only), bg and bu NULL.
 * When q, k and v are adjacent ([QD + 2 KD, H], GpuTrain.fused_qkv) wk is wq + QD H, wv wk + KD H, and bq (when
 * present) is their stacked bias ([QD + 2 KD], frozen bases only). */
typedef struct {
    const void *wq, *wk, *wv, *wo, *wg, *wu, *wd;
    const float *attn_norm, *mlp_norm, *bq, *bk, *bv, *bo, *bg, *bu, *bd, *bgu;
    float *d_wq, *d_wk, *d_wv, *d_wo, *d_wg, *d_wu, *d_wd;
    float *d_attn_norm, *d_mlp_norm, *d_bq, *d_bk, *d_bv, *d_bo, *d_bg, *d_bu, *d_bd;
} TrainLayer;

/* The kept micro-batch (gpu_backward.c): its layout, mask and scatter plans, and where its activations lie */
typedef struct TrainBatch TrainBatch;

/* A LoRA target's adapter in the trainable buffers: A [r, in] at p + at, B [out, r] after it; at < 0: none */
typedef struct {
    long at;
    int in, out;
} TrainLora;

struct GpuTrain {
    const PcApi *pc;
    ModelConfig c;
    ModelPrecision prec;
    PcDtype dt;               /* the products' operands: PC_BF16 or PC_F32 */
    int gc;                   /* checkpointing: one layer's activations kept, the others recomputed */
    size_t n;                 /* trainable parameters: the model's, or its adapter's */
    float *p, *g, *m, *v;     /* device: master weights and gradients [n] (model_params' layout), AdamW's moments
                                 [hi - lo]: those of this rank's share [lo, hi) (all of them: lo 0, hi n) */
    size_t lo, hi;
    PcBf16 *pb;               /* device [n]: the bf16 copy the products read (MODEL_BF16, no adapter), or NULL */
    void *state;              /* device: the one allocation behind p, g, m, v, pb and decay */
    size_t state_bytes;
    PcSpan *decay;            /* device [n_decay]: model_decay's spans */
    int n_decay;
    TrainLayer *layers;       /* [L] */
    const void *embed;        /* [V, H] embed_dt elements: the rows the CPU's model_embed gives */
    PcDtype embed_dt;
    const float *final_norm;  /* [H] */
    const void *head;         /* [V, H] dt: the LM head (the embedding's when tied), or NULL (a reward model) */
    float *d_embed, *d_final_norm, *d_head; /* their gradients, or NULL (frozen; a tied head's is d_embed) */
    long head_off;            /* a reward model's head [num_labels, H] in p and g (its gradient on the host) */
    int fused_gu;             /* gate_proj and up_proj adjacent ([2I, H]): one product each way */
    int fused_qkv;            /* q_proj, k_proj and v_proj adjacent ([QD + 2 KD, H]) and bf16 products: one product
                                 each way, its rows rotated and rounded by one pass (pc_rope_qkv_*) */
    /* LoRA (gpu_train_new of a model with an adapter): the frozen base uploaded as the scoring engine does (base),
     * the adapter's A and B the trainable buffers; host: the model, read for the adapter's switch and dropout */
    GpuModel *base;
    Model *host;
    TrainLora *lora;          /* [7 L] (LoRA targets in LayerM order), or NULL */
    int lora_r, lora_max_in;
    float lora_scale;
    double *inv_freq;         /* [HS / 2] */
    float *cs;                /* device RoPE table [cs_pos, HS / 2, 2] */
    int cs_pos;
    void *act;                /* device: the micro-batch's activations and scratch, grown when needed, kept */
    size_t act_bytes, peak;
    TrainBatch *batch;        /* the kept forward, or NULL */
    int nccl;                 /* joined NCCL's communicator: the ranks' gradients summed GPU to GPU */
    /* ZeRO (gpu_zero.c) over `ranks` ranks, this one `rank`, in chunks of ceil(n / ranks): p (and g at stage 1) hold
     * ranks x chunk floats, so that NCCL's reduce-scatter and all-gather run in place. gs: the gradient of this
     * rank's share [hi - lo] (g + lo, or at stage 2 its own buffer, which the backward's reductions add into). */
    int ranks, rank, stage;
    size_t chunk;
    float *gs;
    /* layer l's gradients are [bucket[l], bucket[l + 1]) of the flat buffer (NULL: not one region a layer, an
     * adapter's); a backward that reduces (`reduce`: the step's last with NCCL, every one at stage 2) reduces each
     * layer's once it is done while the next layer's runs, the rest (the embedding before layer 0; the final norm
     * and head after the last) at the end, and marks `reduced`. Stage 2 has no whole gradient buffer: layer l's
     * are written in slot[l % 2] and reduced onto their owners, the rest in gx. */
    size_t *bucket;           /* [L + 1] */
    int last, reduced;
    float *slot[2], *gx;
    GpuHostReduce host_reduce; /* the reductions through the host (no NCCL), or NULL */
    void *host_ctx;
};

/* where tensor "model.layers.L.SUFFIX" starts in the flat buffers (model_param_offset), or -1 (gpu_train.c) */
long gpu_layer_offset(const Model *m, int l, const char *suffix);
/* where offset o of the flat gradient buffer lives on the device (g + o below stage 2) */
float *gpu_zero_grad_at(const GpuTrain *t, long o);
/* the layer regions (t->bucket) from the model's tensor offsets: 0, or -1 with why in err */
int gpu_zero_buckets(GpuTrain *t, const Model *m, char *err, size_t errlen);
/* whether the coming backward reduces (gpu_train_reduce_in_backward's answer) */
int gpu_zero_reduces(const GpuTrain *t);
/* in a backward that reduces: before and after layer l's backward (l = -1: the rest, before and after the whole) */
int gpu_zero_open(GpuTrain *t, int l, char *err, size_t errlen);
int gpu_zero_close(GpuTrain *t, int l, char *err, size_t errlen);

/* frees the kept batch (gpu_backward.c) */
void gpu_train_batch_free(GpuTrain *t);

/* the device's RoPE table *cs [*cs_pos, HS / 2, 2] (kernels.h's rope_table: the CPU's values) grown to hold
 * positions 0 .. n_pos - 1 at least (gpu_forward.c); 0, or -1 with pc_error() */
int gpu_rope_table(const PcApi *pc, const ModelConfig *c, const double *inv_freq, int n_pos, float **cs,
                   int *cs_pos);

/* gpu_model_new for a model whose adapter is on: its base alone (a LoRA run's frozen base, gpu_train.c) */
GpuModel *gpu_model_base(const PcApi *pc, const Model *m, ModelPrecision prec, char *err, size_t errlen);

/* the device bytes a GpuTrain holds now: its state, activations, RoPE table and a LoRA run's frozen base */
static inline size_t train_bytes(const GpuTrain *t) {
    return t->state_bytes + t->act_bytes + sizeof(float) * (size_t)t->cs_pos * (size_t)t->c.head_dim +
           (t->base ? gpu_model_weight_bytes(t->base) : 0);
}

#endif
