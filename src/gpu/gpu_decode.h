/* gpu_decode.h: incremental decoding with a key/value cache on the GPU, model/decode.h's decoder on a GpuModel's
 * weights (the scoring engine's upload): decode.c delegates to it when the model's engine decodes, and keeps the
 * slots' bookkeeping and checks itself (lengths, ids, limits), so these take checked arguments.
 *
 * The cache is in the products' dtype (bf16 models: the keys and values rounded once, as the forward's attention
 * takes them). A fork shares its source's positions by reference (the samples of a prompt read the prompt's slot:
 * no copy); a slot that others borrow from is copied to them before its content is replaced. Prompts are
 * prefilled packed, several in one forward. The logits may stay on the device: the sampler there draws each
 * slot's next token (cuda/sample.h) and keeps it for the next step, so that only the ids come back, into pinned
 * memory. A step's products run over its active rows only; on a GPU their algorithm may depend on how many rows
 * share a step (cuda/matmul.h), so a sequence's logits are the same whatever else is in the batch only up to the
 * products' rounding there (bit for bit on the CPU stand-in); the attention splits a cache by its own length, so
 * it does not depend on the batch. Not thread-safe. */
#ifndef PPA_GPU_DECODE_H
#define PPA_GPU_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "gpu/gpu_model.h"

typedef struct GpuDecoder GpuDecoder;

/* n_seq slots of max_len tokens (max_len <= 131072), the cache and activations on the device; NULL with why in err
 * (a reward model, out of GPU memory with the sizes). g must outlive the decoder. */
GpuDecoder *gpu_decoder_new(GpuModel *g, int n_seq, int max_len, char *err, size_t errlen);
void gpu_decoder_free(GpuDecoder *d);
/* the device bytes it holds (cache, activations, logits, work) */
size_t gpu_decoder_bytes(const GpuDecoder *d);
/* np prompts: ids[i] [n[i]] (1 <= n[i] <= max_len) as slot seq[i]'s content (distinct slots), packed into forwards
 * of up to max(max_len, n_seq) tokens; logits [np, V] (host) of each prompt's last position, or NULL (they are
 * kept on the device for gpu_decoder_sample either way) */
int gpu_decoder_prefill(GpuDecoder *d, const int *seq, const int *const *ids, const int *n, int np, float *logits,
                        char *err, size_t errlen);
/* slots dst .. dst + count - 1 (src among them is skipped) start as slot src's first len positions, and its
 * latest logits */
int gpu_decoder_fork(GpuDecoder *d, int src, int dst, int count, int len, char *err, size_t errlen);
/* slot seq's content is no longer needed (its sequence ended): it stops borrowing (no copy; slots borrowing from it
 * get their positions copied, so drop those first) */
int gpu_decoder_drop(GpuDecoder *d, int seq, char *err, size_t errlen);
/* tok[i] (NULL: the token gpu_decoder_sample last drew for the slot, on the device) appended at position pos[i] of
 * slot seq[i] (distinct slots), i < n; logits [n, V] (host), or NULL (kept on the device either way, until the
 * next step) */
int gpu_decoder_step(GpuDecoder *d, const int *tok, const int *seq, const int *pos, int n, float *logits, char *err,
                     size_t errlen);
/* steps through CUDA graphs (on unless PPA_CUDA_GRAPHS=0: a step's rows padded to a bucket of sizes, one graph a
 * bucket and bound of lengths, captured at its second step); and the steps replayed from one so far */
void gpu_decoder_graphs(GpuDecoder *d, int on);
long gpu_decoder_graph_launches(const GpuDecoder *d);
/* the sampler's settings (cuda/sample.h's) and the ids it never draws, for the calls below */
int gpu_decoder_sampler(GpuDecoder *d, double temperature, int top_k, double top_p, const int *banned, int n_banned,
                        char *err, size_t errlen);
/* ids[i] (host) = the next token of slot seq[i] drawn from its latest logits (its prefill's, its fork source's, or
 * its last step's, kept on the device), from stream keys[i] at step steps[i], at temperature temps[i] (temps NULL:
 * the sampler's); the draw is kept as the slot's next token */
int gpu_decoder_sample(GpuDecoder *d, const int *seq, const uint64_t *keys, const int *steps, const float *temps,
                       int n, int *ids, char *err, size_t errlen);

#endif
