/* generate.c: K responses per prompt: prefill, fork, batched steps,
 * sampling and stopping rules (generate.h). */
#include "eval/generate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "model/decode.h"
#include "model/sample.h"
#include "tokenizer/tokenizer.h"

size_t generate_cache_bytes(const ModelConfig *c, int n_seq, int max_len) {
    return 2 * sizeof(float) * (size_t)c->num_hidden_layers * (size_t)n_seq * (size_t)max_len *
           (size_t)c->num_key_value_heads * (size_t)c->head_dim;
}

int generate_max_len(const ModelConfig *c, int len, int max_new_tokens) {
    long want = (long)len + max_new_tokens, limit = decoder_model_max_len(c);
    return (int)(want < limit ? want : limit);
}

int generate_room(const ModelConfig *c, int len, int max_new_tokens) {
    /* a response cut by the length ends one position short, so that the end-of-turn token a reader adds still fits */
    int room = decoder_model_max_len(c) - 1 - len;
    room = room < max_new_tokens ? room : max_new_tokens;
    return room > 0 ? room : 0;
}

void generate_free(GenSample *s, int n) {
    for (int i = 0; i < n; i++) free(s[i].ids);
}

uint64_t generate_key(uint64_t seed, uint64_t stream, uint64_t sample) {
    uint64_t z = seed; /* three rounds of splitmix64's finaliser, one a coordinate */
    const uint64_t in[3] = {stream, sample, 0x70706121ULL};
    for (int i = 0; i < 3; i++) {
        z += 0x9e3779b97f4a7c15ULL + in[i];
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
    }
    return z;
}

static int check_options(const GenOptions *o, char *err, size_t errlen) {
    if (o->max_new_tokens < 1) return snprintf(err, errlen, "max-new-tokens must be >= 1"), -1;
    if (o->n_samples < 1) return snprintf(err, errlen, "the number of samples must be >= 1"), -1;
    if (!(o->temperature >= 0.0) || !isfinite(o->temperature))
        return snprintf(err, errlen, "temperature must be a finite number >= 0"), -1;
    if (!(o->top_p > 0.0 && o->top_p <= 1.0)) return snprintf(err, errlen, "top-p must be in (0, 1]"), -1;
    if (o->top_k < 0) return snprintf(err, errlen, "top-k must be >= 0"), -1;
    if (o->n_stop_strings > 0 && !o->tok) return snprintf(err, errlen, "stop strings need a tokenizer"), -1;
    for (int i = 0; i < o->n_stop_strings; i++)
        if (!o->stop_strings[i][0]) return snprintf(err, errlen, "a stop string is empty"), -1;
    return 0;
}

static int is_stop(const GenOptions *o, int id) {
    for (int i = 0; i < o->n_stop; i++)
        if (o->stop[i] == id) return 1;
    return 0;
}

/* the banned ids of the logits rows in use get probability 0 */
static void ban_tokens(float *logits, const int *row, int n, int V, const GenOptions *o) {
    for (int i = 0; i < n; i++)
        for (int b = 0; b < o->n_banned; b++)
            if (o->banned[b] >= 0 && o->banned[b] < V) logits[(size_t)row[i] * V + o->banned[b]] = -INFINITY;
}

/* tok[i] = the next token of sample smp[i], from logits row row[i], at the
 * temperature of its prompt; one stream per sample, so the threads' split
 * does not matter */
static void sample_rows(int *tok, const float *logits, const int *row, const int *smp, int n, int V, int K,
                        const GenPrompt *p, const GenOptions *o, PpaRng *rng) {
#pragma omp parallel
    {
        SampleCand *work = xmalloc(sizeof(SampleCand) * 2 * (size_t)V);
#pragma omp for schedule(dynamic, 4)
        for (int i = 0; i < n; i++) {
            const GenPrompt *q = &p[smp[i] / K];
            double t = q->own_temperature ? q->temperature : o->temperature;
            tok[i] = sample_token(logits + (size_t)row[i] * V, V, t, o->top_k, o->top_p, &rng[smp[i]], work);
        }
        free(work);
    }
}

size_t generate_find_stop(const char *text, size_t n, const char *const *stops, int n_stops) {
    size_t at = n;
    for (int i = 0; i < n_stops; i++) { /* the whole text: a later string may start before an earlier one ends */
        const char *hit = memmem(text, n, stops[i], strlen(stops[i]));
        if (hit && (size_t)(hit - text) < at) at = (size_t)(hit - text);
    }
    return at;
}

/* Tokens decoded to look for a stop string after each new token: an
 * occurrence that the newest token completes ends in that token's text, so
 * the last (longest stop string's bytes + 8) tokens hold it (a token is at
 * least one byte; the 8 cover a character cut at the window's start). */
static int stop_window(const GenOptions *o) {
    size_t most = 0;
    for (int i = 0; i < o->n_stop_strings; i++) most = strlen(o->stop_strings[i]) > most ? strlen(o->stop_strings[i]) : most;
    return most > (size_t)1 << 24 ? 1 << 24 : (int)most + 8;
}

/* 1 if the end of the response's text holds a stop string: its last window
 * tokens decoded, so that each step costs the window, not the response (the
 * written text, with its prompt's context, is cut by the caller, which finds
 * every occurrence however generation stopped). */
static int holds_stop(const GenSample *s, const GenOptions *o, int window) {
    size_t len;
    int from = s->len > window ? s->len - window : 0;
    char *text = tokenizer_decode(o->tok, s->ids + from, (size_t)(s->len - from), 1, &len);
    int hit = text && generate_find_stop(text, len, o->stop_strings, o->n_stop_strings) < len;
    free(text);
    return hit;
}

/* What one sampled token does to its slot: 1 when the slot goes on (feed it). */
static int take_token(GenSample *s, int tok, int prompt_len, int limit, int window, const GenOptions *o) {
    if (is_stop(o, tok)) {
        s->ids[s->len] = tok;
        s->finished = 1;
        return 0;
    }
    s->ids[s->len++] = tok;
    if (o->n_stop_strings && holds_stop(s, o, window)) return s->stopped = 1, 0;
    return s->len < o->max_new_tokens && prompt_len + s->len < limit;
}

/* One call's state: S decoder slots for n prompts of K samples (sample s = i K + j), the ones in flight listed in
 * act (their logits rows in row, exact sampler), the waiting prompts admitted as slots free up */
typedef struct {
    Decoder *d;
    const GenPrompt *p;
    const GenOptions *o;
    GenSample *out;
    const ModelConfig *c;
    int n, K, S, V, dev;
    float *logits;            /* host [S, V] (exact sampler) */
    int *free_slots, n_free;  /* a stack: the slots no sequence holds */
    int *slot_of, *left;      /* [n K] a sample's slot; [n] a prompt's samples still going */
    int next;                 /* the next prompt to admit */
    PpaRng *rng;              /* [n K] */
    uint64_t *key;            /* [n K] the device sampler's streams */
    int *act, *row, n_act;    /* [S] the samples in flight and their logits rows */
} Gen;

/* Prompts from g->next while K slots are free: prefilled together (their logits at rows r0 ...), their K samples
 * started from the prompt's cache and its one row of logits */
static int admit(Gen *g, int r0, char *err, size_t errlen) {
    int np = 0, *root = xmalloc(sizeof(int) * (size_t)(g->n_free / g->K + 1));
    int *lens = xmalloc(sizeof(int) * (size_t)(g->n_free / g->K + 1));
    const int **ids = xmalloc(sizeof(int *) * (size_t)(g->n_free / g->K + 1));
    int first = g->next;
    for (; g->next < g->n && g->n_free >= g->K; g->next++, np++) {
        const GenPrompt *q = &g->p[g->next];
        int room = generate_room(g->c, q->len, g->o->max_new_tokens);
        for (int j = 0; j < g->K; j++) {
            int s = g->next * g->K + j;
            g->slot_of[s] = g->free_slots[--g->n_free];
            sample_stream(&g->rng[s], g->o->seed, q->stream, q->sample0 + (uint64_t)j);
            g->key[s] = generate_key(g->o->seed, q->stream, q->sample0 + (uint64_t)j);
            g->out[s].ids = xmalloc(sizeof(int) * (size_t)(room + 1));
            g->act[g->n_act] = s, g->row[g->n_act++] = r0 + np;
        }
        root[np] = g->slot_of[g->next * g->K], lens[np] = q->len, ids[np] = q->ids;
        g->left[g->next] = g->K;
    }
    int rc = np ? decoder_prefill_many(g->d, root, ids, lens, np, g->logits ? g->logits + (size_t)r0 * g->V : NULL,
                                       err, errlen)
                : 0;
    for (int i = first; i < g->next && !rc; i++)
        for (int j = 1; j < g->K; j++) decoder_fork(g->d, g->slot_of[i * g->K], g->slot_of[i * g->K + j], 1);
    free(root), free(lens), free(ids);
    return rc;
}

/* sample s ended: when its prompt's samples all have, their slots free up (the forks dropped first) */
static int sample_ended(Gen *g, int s, char *err, size_t errlen) {
    int i = s / g->K;
    if (--g->left[i]) return 0;
    for (int j = g->K - 1; j >= 0; j--) {
        int sl = g->slot_of[i * g->K + j];
        if (decoder_drop(g->d, sl, err, errlen)) return -1;
        g->free_slots[g->n_free++] = sl;
    }
    return 0;
}

int generate(Model *m, const GenPrompt *p, int n, const GenOptions *o, GenSample *out, char *err, size_t errlen) {
    const ModelConfig *c = model_config(m);
    const int K = o->n_samples, V = c->vocab_size, limit = decoder_model_max_len(c);
    /* a response cut by the length ends one position short, so that the end-of-turn token a reader adds still fits */
    const int cap = limit - 1, window = stop_window(o);
    if (check_options(o, err, errlen)) return -1;
    if (n < 1) return 0;
    int max_len = 1; /* tokens fed: the prompt and every generated token but the last */
    for (int i = 0; i < n; i++) {
        if (p[i].len < 1 || p[i].len >= limit)
            return snprintf(err, errlen, "prompt %d has %d tokens: it needs 1 to %d (the model's limit %d, minus one to "
                                         "generate)", i, p[i].len, limit - 1, limit), -1;
        if (p[i].own_temperature && (!(p[i].temperature >= 0.0) || !isfinite(p[i].temperature)))
            return snprintf(err, errlen, "prompt %d: temperature must be a finite number >= 0", i), -1;
        int need = generate_max_len(c, p[i].len, o->max_new_tokens) - 1;
        max_len = need > max_len ? need : max_len;
    }
    const int N = n * K, S = o->max_seqs > 0 && o->max_seqs < N ? (o->max_seqs < K ? K : o->max_seqs / K * K) : N;
    Gen g = {.p = p, .o = o, .out = out, .c = c, .n = n, .K = K, .S = S, .V = V};
    if (!(g.d = decoder_new(m, S, max_len, err, errlen))) return -1;
    g.dev = o->device_sampler && decoder_samples(g.d);
    g.logits = g.dev ? NULL : xmalloc(sizeof(float) * (size_t)S * V);
    g.free_slots = xmalloc(sizeof(int) * (size_t)S), g.n_free = S;
    for (int i = 0; i < S; i++) g.free_slots[i] = S - 1 - i; /* popped in ascending order */
    g.slot_of = xmalloc(sizeof(int) * (size_t)N), g.left = xmalloc(sizeof(int) * (size_t)n);
    g.rng = xmalloc(sizeof(PpaRng) * (size_t)N), g.key = xmalloc(sizeof(uint64_t) * (size_t)N);
    g.act = xmalloc(sizeof(int) * (size_t)S), g.row = xmalloc(sizeof(int) * (size_t)S);
    int *tok = xmalloc(sizeof(int) * (size_t)S), *slot = xmalloc(sizeof(int) * (size_t)S);
    int *feed = xmalloc(sizeof(int) * (size_t)S), *steps = xmalloc(sizeof(int) * (size_t)S), own = 0;
    uint64_t *keys = xmalloc(sizeof(uint64_t) * (size_t)S);
    float *temps = xmalloc(sizeof(float) * (size_t)S);
    memset(out, 0, sizeof(GenSample) * (size_t)N);
    for (int i = 0; i < n; i++) own |= p[i].own_temperature;
    int rc = g.dev ? decoder_sampler(g.d, o->temperature, o->top_k, o->top_p, o->banned, o->n_banned, err, errlen) : 0;
    if (!rc) rc = admit(&g, 0, err, errlen);
    while (!rc && g.n_act > 0) {
        for (int a = 0; a < g.n_act; a++) slot[a] = g.slot_of[g.act[a]];
        if (g.dev) { /* drawn on the device from each slot's kept logits; only the ids come back */
            for (int a = 0; a < g.n_act; a++) {
                const GenPrompt *q = &p[g.act[a] / K];
                keys[a] = g.key[g.act[a]], steps[a] = out[g.act[a]].len;
                temps[a] = (float)(q->own_temperature ? q->temperature : o->temperature);
            }
            if ((rc = decoder_sample(g.d, slot, keys, steps, own ? temps : NULL, g.n_act, tok, err, errlen))) break;
        } else {
            ban_tokens(g.logits, g.row, g.n_act, V, o);
            sample_rows(tok, g.logits, g.row, g.act, g.n_act, V, K, p, o, g.rng);
        }
        int n_feed = 0, unused = 0;
        for (int a = 0; a < g.n_act && !rc; a++) {
            int s = g.act[a];
            if (take_token(&out[s], tok[a], p[s / K].len, cap, window, o)) {
                feed[n_feed] = tok[a], slot[n_feed] = slot[a], g.act[n_feed++] = s;
                continue;
            }
            unused += generate_room(c, p[s / K].len, o->max_new_tokens) - out[s].len - out[s].finished;
            rc = sample_ended(&g, s, err, errlen);
        }
        if (rc) break;
        if (o->on_tokens) o->on_tokens(o->ctx, g.n_act, unused);
        if (n_feed && (rc = decoder_step(g.d, g.dev ? NULL : feed, slot, n_feed, g.logits, err, errlen))) break;
        for (int a = 0; a < n_feed; a++) g.row[a] = a;
        g.n_act = n_feed;
        rc = admit(&g, n_feed, err, errlen); /* into the slots that freed up, their rows after the step's */
    }
    if (rc) generate_free(out, N), memset(out, 0, sizeof(GenSample) * (size_t)N);
    free(g.logits), free(g.free_slots), free(g.slot_of), free(g.left), free(g.rng), free(g.key), free(g.act);
    free(g.row), free(tok), free(slot), free(feed), free(steps), free(keys), free(temps);
    decoder_free(g.d);
    return rc ? -1 : 0;
}

/* The text a response adds to its prompt: decode(prompt + response) after
 * decode(prompt). Decoding the response alone would lose what depends on
 * its context, such as SentencePiece's leading space (the decoder strips the
 * first one of a text), and "The man" + "went" would read "The manwent". */
char *generate_decode_continuation(const Tokenizer *tok, const int *prompt, int np, const int *ids, int n, size_t *len) {
    int *all = xmalloc(sizeof(int) * (size_t)(np + n));
    memcpy(all, prompt, sizeof(int) * (size_t)np);
    memcpy(all + np, ids, sizeof(int) * (size_t)n);
    size_t lp, la;
    char *head = tokenizer_decode(tok, prompt, (size_t)np, 1, &lp), *text = tokenizer_decode(tok, all, (size_t)(np + n), 1, &la);
    free(all);
    if (la >= lp && !memcmp(head, text, lp)) {
        memmove(text, text + lp, la - lp + 1);
        *len = la - lp;
    } else { /* no clean prefix (a merge across the boundary): the response alone */
        free(text);
        text = tokenizer_decode(tok, ids, (size_t)n, 1, len);
    }
    free(head);
    return text;
}
