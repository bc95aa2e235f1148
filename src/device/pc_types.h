/* pc_types.h: the plain C types of the CUDA module's interface (src/cuda/<family>.h), defined once: the module's
 * headers include this file, and so does the engine's table of the module's functions (pc_api.h), which must
 * not include src/cuda (the engine never links or includes the module: it dlopen()s it). No CUDA types. */
#ifndef PPA_DEVICE_PC_TYPES_H
#define PPA_DEVICE_PC_TYPES_H

#include <stdint.h>

typedef uint16_t PcBf16; /* the upper 16 bits of a float32, rounded to nearest even */

typedef enum { PC_F32 = 0, PC_BF16 = 1 } PcDtype;

/* the mask of one batch for the fused attention (cuda/attention.h), opaque */
typedef struct PcAttnPlan PcAttnPlan;

/* [lo, hi) of the flat parameter buffer: core/span.h's Span (two size_t) on a 64-bit machine, so a Spans array
 * uploads as it is (cuda/adamw.h) */
typedef struct {
    uint64_t lo, hi;
} PcSpan;

/* the bytes of NCCL's communicator id (cuda/nccl.h: ncclUniqueId), sent from rank 0 to every rank */
#define PC_NCCL_ID_BYTES 128

/* a draw's settings (cuda/sample.h): temperature <= 0 greedy; top_k 0 or >= V and top_p >= 1 keep every id */
typedef struct {
    float temperature;
    int top_k;
    float top_p;
} PcSampling;

/* keys a block of the decode attention takes (cuda/decode.h): a sequence's split depends on its length alone, so
 * its result does not depend on the batch it is in */
#define PC_DECODE_SPLIT 256

/* one AdamW step's hyperparameters (cuda/adamw.h) */
typedef struct {
    long step;                                  /* t >= 1: the step being taken (the CPU's a->step after ++) */
    double lr, beta1, beta2, eps, weight_decay; /* as AdamWConfig, and the step's learning rate */
} PcAdamW;

#endif
