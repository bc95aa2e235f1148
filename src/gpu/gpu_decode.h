/* gpu_decode.h: incremental decoding with a key/value cache on the GPU, model/decode.h's decoder on a GpuModel's
 * weights (the scoring engine's upload): decode.c delegates to it when the model's engine decodes, and keeps the
 * slots' bookkeeping and checks itself (lengths, ids, limits), so these take checked arguments.
 *
 * The cache is in the products' dtype (bf16 models: the keys and values rounded once, as the forward's attention
 * takes them). A step's products run over its active rows only; on a GPU their algorithm may depend on how many
 * rows share a step (cuda/matmul.h), so a sequence's logits are the same whatever else is in the batch only up to
 * the products' rounding there (bit for bit on the CPU stand-in). Not thread-safe. */
#ifndef PPA_GPU_DECODE_H
#define PPA_GPU_DECODE_H

#include <stddef.h>

#include "gpu/gpu_model.h"

typedef struct GpuDecoder GpuDecoder;

/* n_seq slots of max_len tokens (max_len <= 8192), the cache and activations on the device; NULL with why in err
 * (a reward model, out of GPU memory with the sizes). g must outlive the decoder. */
GpuDecoder *gpu_decoder_new(GpuModel *g, int n_seq, int max_len, char *err, size_t errlen);
void gpu_decoder_free(GpuDecoder *d);
/* ids [n] (1 <= n <= max_len) as slot seq's content; logits [V] (host) of its last position */
int gpu_decoder_prefill(GpuDecoder *d, int seq, const int *ids, int n, float *logits, char *err, size_t errlen);
/* slot src's first len positions copied to slots dst .. dst + count - 1 (src among them is skipped) */
int gpu_decoder_fork(GpuDecoder *d, int src, int dst, int count, int len, char *err, size_t errlen);
/* tok[i] appended at position pos[i] of slot seq[i] (distinct slots), i < n; logits [n, V] (host) */
int gpu_decoder_step(GpuDecoder *d, const int *tok, const int *seq, const int *pos, int n, float *logits, char *err,
                     size_t errlen);

#endif
