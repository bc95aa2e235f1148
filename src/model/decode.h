/* decode.h: incremental decoding with a key/value cache, float32, the same
 * mathematics as model_forward (llama.h): a prompt is computed once (prefill,
 * matrix products over its tokens), its cache copied to as many sequences as
 * there are samples (fork), then each step appends one token to every active
 * sequence, the projections batched across sequences in one matrix product.
 *
 * Not here: sampling (sample.h), stopping rules and text (eval/generate.h).
 *
 * A decoder holds n_seq sequence slots of at most max_len tokens each; slots
 * are independent (different prompts may share one decoder). A row of the
 * logits depends only on its own sequence, not on which other sequences
 * share the step, when the matrix products are batch-invariant
 * (gemm_rows_invariant(), true of ppa's default kernels). */
#ifndef PPA_DECODE_H
#define PPA_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"

typedef struct Decoder Decoder;

/* The longest sequence the model computes exactly: max_position_embeddings
 * (when > 0) and the sliding window (when set), whichever is smaller. */
int decoder_model_max_len(const ModelConfig *c);

/* n_seq >= 1 slots of max_len tokens (1 <= max_len <= decoder_model_max_len);
 * NULL with err otherwise. The model must outlive the decoder. */
Decoder *decoder_new(Model *m, int n_seq, int max_len, char *err, size_t errlen);
void decoder_free(Decoder *d);
int decoder_len(const Decoder *d, int seq); /* tokens in slot seq */

/* Runs ids [n] as the whole content of slot seq (its old content dropped)
 * and returns the next-token logits [V] of the last position. 0, or -1 with
 * err (bad id, n < 1, or n > max_len). */
int decoder_prefill(Decoder *d, int seq, const int *ids, int n, float *logits, char *err, size_t errlen);

/* np prompts at once: ids[i] [n[i]] as the content of slot seq[i] (distinct
 * slots); logits [np, V] as decoder_prefill's, or NULL (decoder_samples only:
 * kept where they are for decoder_sample). An engine packs them into one
 * forward; the CPU runs them one by one. */
int decoder_prefill_many(Decoder *d, const int *seq, const int *const *ids, const int *n, int np, float *logits,
                         char *err, size_t errlen);

/* Slots dst .. dst + count - 1 (src itself may be among them) start as slot
 * src's cache (the CPU copies it; a GPU's engine shares it by reference): a
 * prompt computed once serves count samples. */
void decoder_fork(Decoder *d, int src, int dst, int count);

/* Slot seq's sequence ended: its cache may go (a GPU's engine drops its
 * references); the slot takes a new prompt with decoder_prefill. Drop a
 * prompt's forks before the prompt's own slot. 0, or -1 with err. */
int decoder_drop(Decoder *d, int seq, char *err, size_t errlen);

/* Appends tok[i] to slot seq[i] for each of the n_active (distinct) slots and
 * returns their next-token logits [n_active, V]. 0, or -1 with err (a slot
 * would exceed max_len, a bad id or slot), nothing changed then.
 * With decoder_samples: tok NULL feeds each slot the token decoder_sample
 * last drew for it, and logits NULL keeps the logits for the next draw. */
int decoder_step(Decoder *d, const int *tok, const int *seq, int n_active, float *logits, char *err, size_t errlen);

/* 1 when the decoder draws tokens where its logits are (a GPU's engine:
 * cuda/sample.h's sampler, so that only the ids come back), 0 on the CPU */
int decoder_samples(const Decoder *d);
/* The draws' settings: temperature (0 greedy), top-k (0: off), top-p, and
 * ids never drawn. 0, or -1 with err. */
int decoder_sampler(Decoder *d, double temperature, int top_k, double top_p, const int *banned, int n_banned,
                    char *err, size_t errlen);
/* ids[i] = slot seq[i]'s next token drawn from its latest logits (kept by a
 * prefill or step with logits NULL; a fork's from its source) with stream
 * keys[i] at step steps[i] (a counter-based generator: the draw depends on
 * nothing else) and temperature temps[i] (NULL: the sampler's). */
int decoder_sample(Decoder *d, const int *seq, const uint64_t *keys, const int *steps, const float *temps, int n,
                   int *ids, char *err, size_t errlen);

#endif
