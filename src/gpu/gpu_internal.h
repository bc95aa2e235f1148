/* gpu_internal.h: what the files of src/gpu share: the GpuModel struct (gpu_model.c builds it, gpu_forward.c runs
 * it). Other modules use gpu_model.h. Pointers into device memory are marked "device"; the rest is host memory. */
#ifndef PPA_GPU_INTERNAL_H
#define PPA_GPU_INTERNAL_H

#include "gpu/gpu_model.h"

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

#endif
