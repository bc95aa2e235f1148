/* generate.h: K responses per prompt with the decoder (model/decode.h) and
 * the sampler (model/sample.h): each prompt computed once, its samples
 * decoded together with those of the other prompts of the call, one matrix
 * product per layer and step for all of them.
 *
 * A response ends at a stop token (the config's EOS ids, the template's end
 * of turn), at the first stop string in its text (GenOptions.stop_strings),
 * after max_new_tokens, or when prompt + response reach the model's maximum
 * length (decoder_model_max_len), so the sequence can always be scored by
 * the training engine.
 *
 * Determinism: sample j of a prompt draws from the stream
 * sample_stream(seed, stream, j); with batch-invariant matrix products
 * (gemm_rows_invariant()) its tokens do not depend on which prompts share
 * the call.
 *
 * Two samplers: the exact one (model/sample.h on the host, the logits read
 * back every step: the CPU's bits) and, where the decoder can draw where its
 * logits are (a GPU: decoder_samples), the device's (GenOptions.device_sampler):
 * the same rules in float32, and draw t of sample j of prompt i a pure
 * function of its logits, generate_key(seed, stream, sample0 + j) and t (the
 * response's tokens so far), so that it too does not depend on the batch;
 * only the ids come back. Greedy is the same on both. */
#ifndef PPA_GENERATE_H
#define PPA_GENERATE_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "tokenizer/tokenizer.h"

typedef struct {
    int max_new_tokens; /* >= 1 */
    double temperature; /* 0: greedy */
    double top_p;       /* (0, 1]; 1: no nucleus cut */
    int top_k;          /* >= 0; 0: no top-k cut (applied before top-p, as transformers does) */
    int n_samples;      /* K >= 1 */
    uint64_t seed;
    const int *stop;    /* [n_stop] ids that end a response */
    int n_stop;
    const int *banned;  /* [n_banned] ids never generated (their text holds a NUL byte, which no reader takes) */
    int n_banned;
    /* optional: texts that end a response once the decoded response holds one
     * (generate_find_stop); tok decodes (both NULL / 0: none) */
    const char *const *stop_strings;
    int n_stop_strings;
    const Tokenizer *tok;
    /* optional (progress lines): called after each round of sampling with
     * the tokens just sampled and the budget the responses that just ended
     * left unsampled (generate_room's less theirs), so that the sum of both
     * over a call is the sum of its responses' rooms */
    void (*on_tokens)(void *ctx, int sampled, int unused);
    void *ctx;
    int device_sampler; /* 1: draw on the device when the decoder can (decoder_samples), else the exact sampler */
    /* the sequences decoded at once, at least K (0: every prompt's K at once): continuous batching, a prompt
     * admitted (prefilled, its samples started) when the K slots of one whose samples all ended free up */
    int max_seqs;
} GenOptions;

typedef struct {
    const int *ids;  /* [len] the prompt's tokens */
    int len;
    uint64_t stream; /* i of the random streams (seed, i, sample0 + j) */
    uint64_t sample0;
    int own_temperature; /* 1: temperature below replaces GenOptions.temperature for this prompt */
    double temperature;
} GenPrompt;

typedef struct {
    int len;      /* generated tokens, the stop token not counted */
    int finished; /* 1: ended on a stop token, which is ids[len] */
    int stopped;  /* 1: ended because its text holds a stop string (cut it with generate_find_stop) */
    int *ids;     /* [len + finished] (free it) */
} GenSample;

/* The sequences of one call (n_prompts * K, or max_seqs) share one
 * key/value cache of their longest length: split large prompt sets into
 * calls of a size that fits in memory (generate_cache_bytes). out:
 * [n_prompts * K], sample j of prompt i at i * K + j; which samples share a
 * step does not change them (see Determinism). 0, or -1 with err (a prompt
 * without room for one token, bad ids, bad options). */
int generate(Model *m, const GenPrompt *prompts, int n_prompts, const GenOptions *o, GenSample *out, char *err,
             size_t errlen);

/* Bytes of key/value cache for n_seq sequences of max_len tokens. */
size_t generate_cache_bytes(const ModelConfig *c, int n_seq, int max_len);

/* The longest sequence a prompt of len tokens needs: len + max_new_tokens,
 * at most the model's limit. */
int generate_max_len(const ModelConfig *c, int len, int max_new_tokens);
/* The most tokens one response to a prompt of len tokens samples, its stop
 * token included (0 when the prompt leaves no room). */
int generate_room(const ModelConfig *c, int len, int max_new_tokens);

void generate_free(GenSample *s, int n);

/* The device sampler's stream of sample j of prompt stream i under seed */
uint64_t generate_key(uint64_t seed, uint64_t stream, uint64_t sample);

/* The text that response ids add to their prompt: decode(prompt + ids) after
 * decode(prompt), special tokens skipped (malloc'd, length in *len). Decoding
 * the response alone loses what depends on its context, such as
 * SentencePiece's leading space: "The man" + "went" would read "The manwent". */
char *generate_decode_continuation(const Tokenizer *tok, const int *prompt, int np, const int *ids, int n, size_t *len);

/* The first place in text[0..n) where one of the stop strings starts
 * (the earliest; vLLM's and transformers' cut), or n when none does. */
size_t generate_find_stop(const char *text, size_t n, const char *const *stops, int n_stops);

#endif
