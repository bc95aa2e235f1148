/* test_generate.c: the decoder against the training engine (log-probs of
 * every generated token, at every step, on several sequences at once), greedy
 * choices checked independently of the decoder, sampling (ties, nucleus,
 * repeatability, independence from batching), and the stopping rules. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include <cjson/cJSON.h>

#include "byte_tokenizer.h"
#include "check.h"
#include "core/rng.h"
#include "eval/generate.h"
#include "hf/checkpoint.h"
#include "model/decode.h"
#include "kernels/gemm.h"
#include "model/model.h"
#include "model/sample.h"

static const char *CONFIGS[][2] = {
    {"llama_mha_untied", "{\"model_type\": \"llama\", \"vocab_size\": 97, \"hidden_size\": 32, \"intermediate_size\": 48,"
                         " \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 4,"
                         " \"max_position_embeddings\": 64, \"rms_norm_eps\": 1e-5, \"tie_word_embeddings\": false}"},
    {"qwen2_gqa_tied", "{\"model_type\": \"qwen2\", \"vocab_size\": 130, \"hidden_size\": 48, \"intermediate_size\": 64,"
                       " \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2,"
                       " \"max_position_embeddings\": 64, \"rms_norm_eps\": 1e-6, \"tie_word_embeddings\": true,"
                       " \"rope_theta\": 1000000.0}"},
};

/* a model whose logits are far from flat: every weight ~ N(0, 0.3^2),
 * norms and biases perturbed too */
static Model *tiny_model(const char *name, const char *json, uint64_t seed) {
    char err[2048];
    ModelConfig c;
    if (model_config_parse(&c, json, name, err, sizeof err)) {
        CHECK(0, "config %s: %s", name, err);
        return NULL;
    }
    Model *m = model_new(&c, seed, err, sizeof err);
    CHECK(m != NULL, "model_new %s: %s", name, m ? "" : err);
    if (!m) return NULL;
    ModelTensorSpec *specs;
    int n = model_tensor_table(&c, &specs);
    float *p = model_params(m); /* tensors in table order */
    for (int i = 0; i < n; i++) {
        float *w;
        checkpoint_init(&specs[i], 1, seed, 0.3, 1, &w);
        memcpy(p, w, sizeof(float) * (size_t)specs[i].numel);
        p += specs[i].numel;
        free(w);
    }
    free(specs);
    return m;
}

static double log_softmax_at(const float *l, int V, int id) {
    double mx = l[0], s = 0.0;
    for (int v = 1; v < V; v++) mx = l[v] > mx ? l[v] : mx;
    for (int v = 0; v < V; v++) s += exp((double)l[v] - mx);
    return (double)l[id] - mx - log(s);
}

/* summed log-probs of responses given a prompt, from the training engine */
static void engine_logps(Model *m, const int *prompt, int P, int K, const int *len, const int *const *resp, double *out) {
    char err[512];
    Row r = {P, prompt, K, len, resp};
    Batch *b = batch_new(m, &r, 1, err, sizeof err);
    CHECK(b != NULL, "batch: %s", b ? "" : err);
    if (!b) return;
    model_forward(m, b, out, NULL);
    batch_free(b);
}

#define NSEQ 3
#define STEPS 10

/* (a) S sequences forked from one prompt, each fed its own random tokens:
 * the decoder's log-softmax of each token equals the engine's */
/* tol: 1e-5 in float32. In bf16 the engine's attention rounds q, k, v and the probabilities to bf16 (2^-9
 * relative each) before its products, while the decoder's KV-cache attention stays float32: the two differ by
 * bf16 rounding through every layer, bounded as the engine is against float64 (test_bf16.c: 2^-5 |logp|) */
static void test_decoder_matches_engine(Model *m, const char *name, double tol) {
    enum { P = 6 };
    const int V = model_config(m)->vocab_size;
    PpaRng rng;
    rng_seed(&rng, 11);
    int prompt[P], toks[NSEQ][STEPS + 1];
    for (int i = 0; i < P; i++) prompt[i] = (int)(rng_uniform(&rng) * V);
    for (int s = 0; s < NSEQ; s++)
        for (int t = 0; t <= STEPS; t++) toks[s][t] = (int)(rng_uniform(&rng) * V);
    char err[512];
    Decoder *d = decoder_new(m, NSEQ, P + STEPS, err, sizeof err);
    CHECK(d != NULL, "%s: decoder_new: %s", name, d ? "" : err);
    if (!d) return;
    float *logits = malloc(sizeof(float) * NSEQ * V);
    double dec[NSEQ][STEPS + 1]; /* decoder log-prob of toks[s][t] */
    CHECK(decoder_prefill(d, 0, prompt, P, logits, err, sizeof err) == 0, "%s: prefill: %s", name, err);
    decoder_fork(d, 0, 0, NSEQ);
    for (int s = 0; s < NSEQ; s++) dec[s][0] = log_softmax_at(logits, V, toks[s][0]);
    int seq[NSEQ] = {2, 0, 1}, feed[NSEQ]; /* slots in a shuffled order: rows follow seq, not slot numbers */
    for (int t = 0; t < STEPS; t++) {
        for (int i = 0; i < NSEQ; i++) feed[i] = toks[seq[i]][t];
        int rc = decoder_step(d, feed, seq, NSEQ, logits, err, sizeof err);
        CHECK(rc == 0, "%s: step %d: %s", name, t, err);
        for (int i = 0; i < NSEQ; i++) dec[seq[i]][t + 1] = log_softmax_at(logits + (size_t)i * V, V, toks[seq[i]][t + 1]);
    }
    CHECK(decoder_len(d, 1) == P + STEPS, "%s: slot length %d", name, decoder_len(d, 1));
    /* the engine: responses toks[s][0..t] for t = 0..STEPS, one row per sequence */
    int lens[STEPS + 1];
    const int *resp[STEPS + 1];
    double eng[STEPS + 1], worst = 0.0;
    for (int s = 0; s < NSEQ; s++) {
        for (int t = 0; t <= STEPS; t++) lens[t] = t + 1, resp[t] = toks[s];
        engine_logps(m, prompt, P, STEPS + 1, lens, resp, eng);
        double cum = 0.0;
        for (int t = 0; t <= STEPS; t++) {
            double tok_eng = t ? eng[t] - eng[t - 1] : eng[0];
            cum += dec[s][t];
            CHECK_NEAR(dec[s][t], tok_eng, tol, tol, "%s: seq %d token %d log-prob", name, s, t);
            CHECK_NEAR(cum, eng[t], tol / 10, tol, "%s: seq %d summed log-prob to %d", name, s, t);
            double rel = fabs(cum - eng[t]) / fabs(eng[t]);
            worst = rel > worst ? rel : worst;
        }
    }
    printf("%s: decoder vs engine, largest relative difference of summed log-probs %.2e\n", name, worst);
    free(logits);
    decoder_free(d);
}

static GenOptions opts(int max_new, double T, double top_p, int K, uint64_t seed) {
    return (GenOptions){.max_new_tokens = max_new, .temperature = T, .top_p = top_p, .n_samples = K, .seed = seed};
}

static int gen(Model *m, const GenPrompt *p, int n, const GenOptions *o, GenSample *out) {
    char err[512];
    int rc = generate(m, p, n, o, out, err, sizeof err);
    CHECK(rc == 0, "generate: %s", err);
    return rc;
}

static int same_sample(const GenSample *a, const GenSample *b) {
    return a->len == b->len && a->finished == b->finished && !memcmp(a->ids, b->ids, sizeof(int) * (size_t)(a->len + a->finished));
}

/* (b) greedy picks the argmax of the engine's next-token log-probs, given the
 * prompt and the tokens before; near-ties (top two within 1e-5) skipped */
static void test_greedy_is_argmax(Model *m, const char *name) {
    enum { P = 5, N = 12 };
    const int V = model_config(m)->vocab_size;
    int prompt[P] = {3, 14, 15, 9, 26}, ctx[P + N];
    GenPrompt gp = {.ids = prompt, .len = P};
    GenOptions o = opts(N, 0.0, 1.0, 1, 42);
    GenSample s;
    if (gen(m, &gp, 1, &o, &s)) return;
    CHECK(s.len == N && !s.finished, "%s: greedy without stop ids runs to the cap (%d)", name, s.len);
    int *lens = malloc(sizeof(int) * V), *ids = malloc(sizeof(int) * V), skipped = 0;
    const int **resp = malloc(sizeof(int *) * V);
    double *lp = malloc(sizeof(double) * V);
    for (int v = 0; v < V; v++) ids[v] = v, lens[v] = 1, resp[v] = &ids[v];
    memcpy(ctx, prompt, sizeof prompt);
    for (int t = 0; t < s.len; t++) {
        engine_logps(m, ctx, P + t, V, lens, resp, lp);
        int best = 0, second = -1;
        for (int v = 1; v < V; v++)
            if (lp[v] > lp[best]) second = best, best = v;
            else if (second < 0 || lp[v] > lp[second]) second = v;
        if (lp[best] - lp[second] < 1e-5) {
            skipped++;
        } else {
            CHECK(s.ids[t] == best, "%s: step %d: greedy chose %d, the engine's argmax is %d", name, t, s.ids[t], best);
        }
        ctx[P + t] = s.ids[t];
    }
    printf("%s: greedy = argmax at %d steps (%d near-ties skipped)\n", name, s.len - skipped, skipped);
    free(lens), free(ids), free(resp), free(lp);
    generate_free(&s, 1);
}

/* (c) repeatability: greedy twice, same seed, another seed, tiny top-p */
static void test_repeatable(Model *m, const char *name) {
    int prompt[4] = {7, 1, 8, 2};
    GenPrompt gp = {.ids = prompt, .len = 4, .stream = 5};
    GenSample a, b, c[4], e[4], g[4];
    GenOptions greedy = opts(16, 0.0, 1.0, 1, 42);
    if (gen(m, &gp, 1, &greedy, &a) || gen(m, &gp, 1, &greedy, &b)) return;
    CHECK(same_sample(&a, &b), "%s: greedy twice gives the same tokens", name);
    GenOptions hot = opts(16, 1.0, 1.0, 4, 42), hot2 = opts(16, 1.0, 1.0, 4, 43);
    if (gen(m, &gp, 1, &hot, c) || gen(m, &gp, 1, &hot, e) || gen(m, &gp, 1, &hot2, g)) return;
    int same = 1, differ = 0, distinct = 0;
    for (int j = 0; j < 4; j++) same &= same_sample(&c[j], &e[j]), differ |= !same_sample(&c[j], &g[j]);
    for (int j = 1; j < 4; j++) distinct |= !same_sample(&c[0], &c[j]);
    CHECK(same, "%s: sampling with the same seed gives the same tokens", name);
    CHECK(differ, "%s: another seed gives other tokens", name);
    CHECK(distinct, "%s: the 4 samples of one prompt are not all equal", name);
    generate_free(e, 4), generate_free(g, 4);
    GenOptions tiny = opts(16, 1.0, 1e-9, 4, 42);
    if (gen(m, &gp, 1, &tiny, e)) return;
    for (int j = 0; j < 4; j++) CHECK(same_sample(&e[j], &a), "%s: top-p 1e-9 equals greedy (sample %d)", name, j);
    GenOptions cold = opts(16, 0.0, 1.0, 3, 42);
    if (gen(m, &gp, 1, &cold, g)) return;
    for (int j = 0; j < 3; j++) CHECK(same_sample(&g[j], &a), "%s: greedy with K = 3 gives K equal samples", name);
    generate_free(&a, 1), generate_free(&b, 1), generate_free(c, 4), generate_free(e, 4), generate_free(g, 3);
}

/* (d) sample j of prompt i is the same whether the prompt is generated with
 * others or alone, with continuous batching or not, and whatever the thread
 * count */
static void test_batch_independent(Model *m, const char *name) {
    if (!gemm_rows_invariant()) {
        printf("%s: SKIP batch independence: the matrix-product kernels are not batch-invariant (%s)\n", name, gemm_kernel());
        return;
    }
    enum { NP = 3, K = 4 };
    int pr[NP][7] = {{1, 2, 3, 4, 5, 6, 7}, {9, 8}, {40, 41, 42, 43}}, plen[NP] = {7, 2, 4};
    GenPrompt gp[NP];
    for (int i = 0; i < NP; i++) gp[i] = (GenPrompt){.ids = pr[i], .len = plen[i], .stream = (uint64_t)(100 + i)};
    GenOptions o = opts(12, 0.9, 0.95, K, 7);
    GenSample all[NP * K], one[K];
    if (gen(m, gp, NP, &o, all)) return;
    for (int i = 0; i < NP; i++) {
        if (gen(m, &gp[i], 1, &o, one)) return;
        for (int j = 0; j < K; j++)
            CHECK(same_sample(&all[i * K + j], &one[j]), "%s: prompt %d sample %d: together = alone", name, i, j);
        generate_free(one, K);
    }
    /* continuous batching: in K or 2K slots (a prompt admitted when the slots of one whose samples all ended free
     * up), with stop ids from the run above so that samples end at different steps: the same samples */
    int stop[2] = {all[1].ids[3], all[2 * K].ids[5]}, early = 0;
    GenOptions os = o;
    os.stop = stop, os.n_stop = 2;
    GenSample ref[NP * K], cb[NP * K];
    if (!gen(m, gp, NP, &os, ref)) {
        for (int s = 0; s < NP * K; s++) early += ref[s].finished && ref[s].len < 11;
        CHECK(early > 0 && early < NP * K, "%s: some samples (%d) end early on a stop id (the check's premise)", name, early);
        for (int slots = K; slots <= 2 * K; slots += K) {
            os.max_seqs = slots;
            if (gen(m, gp, NP, &os, cb)) break;
            int same = 1;
            for (int s = 0; s < NP * K; s++) same &= same_sample(&ref[s], &cb[s]);
            CHECK(same, "%s: continuous batching in %d slots = every prompt at once", name, slots);
            generate_free(cb, NP * K);
        }
        generate_free(ref, NP * K);
    }
#ifdef _OPENMP
    int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    gemm_set_threads(1);
    GenSample single[NP * K];
    if (!gen(m, gp, NP, &o, single)) {
        for (int s = 0; s < NP * K; s++) CHECK(same_sample(&all[s], &single[s]), "%s: sample %d: 1 thread = %d threads", name, s, threads);
        generate_free(single, NP * K);
    }
    omp_set_num_threads(threads);
    gemm_set_threads(0);
#endif
    generate_free(all, NP * K);
}

/* (e) stop tokens, the new-token cap and the model's maximum length */
static void test_stops(Model *m, const char *name) {
    int prompt[3] = {5, 6, 7};
    GenPrompt gp = {.ids = prompt, .len = 3};
    GenOptions o = opts(20, 0.0, 1.0, 1, 42);
    GenSample free_run, capped, stopped, at_limit;
    if (gen(m, &gp, 1, &o, &free_run)) return;
    /* the first token not seen before position 3 becomes the stop token */
    int at = -1;
    for (int t = 3; t < free_run.len && at < 0; t++) {
        int seen = 0;
        for (int u = 0; u < t; u++) seen |= free_run.ids[u] == free_run.ids[t];
        if (!seen) at = t;
    }
    if (at < 0) {
        printf("%s: SKIP stop test: greedy repeats itself\n", name);
    } else {
        int stop = free_run.ids[at];
        o.stop = &stop, o.n_stop = 1;
        if (!gen(m, &gp, 1, &o, &stopped)) {
            CHECK(stopped.finished && stopped.len == at, "%s: stops at the stop token (len %d, finished %d; want %d)", name,
                  stopped.len, stopped.finished, at);
            CHECK(!memcmp(stopped.ids, free_run.ids, sizeof(int) * (size_t)at) && stopped.ids[at] == stop,
                  "%s: the tokens before, then the stop token", name);
            generate_free(&stopped, 1);
        }
        o.stop = NULL, o.n_stop = 0;
    }
    o.max_new_tokens = 5;
    if (!gen(m, &gp, 1, &o, &capped)) {
        CHECK(capped.len == 5 && !capped.finished, "%s: max_new_tokens caps (len %d)", name, capped.len);
        CHECK(!memcmp(capped.ids, free_run.ids, sizeof(int) * 5), "%s: the capped run is a prefix", name);
        generate_free(&capped, 1);
    }
    int lim = decoder_model_max_len(model_config(m)), *longp = calloc((size_t)lim, sizeof(int));
    GenPrompt lp = {.ids = longp, .len = lim - 4};
    o.max_new_tokens = 100;
    if (!gen(m, &lp, 1, &o, &at_limit)) {
        CHECK(at_limit.len == 3 && !at_limit.finished,
              "%s: prompt + response stop one short of the model's %d tokens, room for an end of turn (len %d)", name,
              lim, at_limit.len);
        generate_free(&at_limit, 1);
    }
    char err[512];
    lp.len = lim;
    CHECK(generate(m, &lp, 1, &o, &at_limit, err, sizeof err) == -1 && strstr(err, "prompt 0 has"),
          "%s: a prompt without room for one token is refused (%s)", name, err);
    Decoder *d = decoder_new(m, 1, lim + 1, err, sizeof err);
    CHECK(d == NULL && strstr(err, "limit"), "%s: a decoder longer than the model allows is refused", name);
    d = decoder_new(m, 2, 4, err, sizeof err);
    float *logits = malloc(sizeof(float) * 2 * (size_t)model_config(m)->vocab_size);
    CHECK(decoder_prefill(d, 0, longp, 5, logits, err, sizeof err) == -1, "%s: a prompt longer than the cache is refused", name);
    CHECK(decoder_prefill(d, 0, longp, 4, logits, err, sizeof err) == 0, "%s: a prompt that fits", name);
    int tok = 1, seq = 0, bad = -3, seqs[2] = {0, 0};
    CHECK(decoder_step(d, &tok, &seq, 1, logits, err, sizeof err) == -1 && strstr(err, "exceed"),
          "%s: a step past the end is refused (%s)", name, err);
    CHECK(decoder_step(d, &bad, &seq, 1, logits, err, sizeof err) == -1, "%s: a bad token id is refused", name);
    CHECK(decoder_step(d, (int[]){1, 1}, seqs, 2, logits, err, sizeof err) == -1, "%s: a slot twice is refused", name);
    seq = 1;
    CHECK(decoder_step(d, &tok, &seq, 1, logits, err, sizeof err) == -1, "%s: an empty slot is refused", name);
    free(logits), free(longp);
    decoder_free(d);
    generate_free(&free_run, 1);
}

/* the nucleus by a full sort, and the draw of sample.h over it */
typedef struct {
    double p;
    int id;
} RefCand;

static int ref_order(const void *a, const void *b) {
    const RefCand *x = a, *y = b;
    if (x->p != y->p) return x->p > y->p ? -1 : 1;
    return x->id - y->id;
}

static int ref_sample(const float *l, int V, double T, int top_k, double top_p, PpaRng *rng) { /* V <= 512 */
    double mx = -INFINITY, total = 0.0, mass = 0.0, cum = 0.0, p[512];
    RefCand c[512];
    char in[512] = {0};
    for (int v = 0; v < V; v++) mx = l[v] / T > mx ? l[v] / T : mx;
    for (int v = 0; v < V; v++) p[v] = exp(l[v] / T - mx), c[v] = (RefCand){p[v], v};
    qsort(c, (size_t)V, sizeof *c, ref_order);
    int kept = V; /* top-k: the first k of the sorted order and every tie of the k-th */
    if (top_k > 0 && top_k < V)
        for (kept = top_k; kept < V && c[kept].p == c[top_k - 1].p;) kept++;
    for (int k = 0; k < kept; k++) total += c[k].p;
    for (int k = 0; k < kept && (k == 0 || cum < top_p * total); k++) in[c[k].id] = 1, cum += c[k].p;
    for (int v = 0; v < V; v++) mass += in[v] ? p[v] : 0.0;
    double u = rng_uniform(rng) * mass;
    cum = 0.0;
    for (int v = 0; v < V; v++)
        if (in[v] && p[v] > 0.0 && u < (cum += p[v])) return v;
    return -1;
}

/* the sampler alone: ties, the nucleus, and the draw frequencies */
static void test_sampler(void) {
    float tie[5] = {1.0f, 3.0f, -2.0f, 3.0f, NAN};
    CHECK(sample_greedy(tie, 5) == 1, "greedy ties go to the lowest id");
    float l[3] = {0.0f, 0.0f, (float)log(2.0)}; /* p = 0.25, 0.25, 0.5 */
    SampleCand work[6];
    PpaRng r;
    sample_stream(&r, 1, 0, 0);
    int count[3] = {0}, c2[3] = {0}, n = 20000;
    for (int i = 0; i < n; i++) count[sample_token(l, 3, 1.0, 0, 1.0, &r, work)]++;
    CHECK(fabs(count[2] / (double)n - 0.5) < 0.02 && fabs(count[0] / (double)n - 0.25) < 0.02,
          "temperature 1 draws follow the softmax (%d %d %d)", count[0], count[1], count[2]);
    for (int i = 0; i < 2000; i++) c2[sample_token(l, 3, 1.0, 0, 0.5, &r, work)]++;
    CHECK(c2[2] == 2000, "top-p 0.5 keeps only the most likely token");
    memset(c2, 0, sizeof c2);
    for (int i = 0; i < 4000; i++) c2[sample_token(l, 3, 1.0, 0, 0.6, &r, work)]++;
    CHECK(c2[1] == 0 && c2[0] > 1000 && c2[2] > 2000, "top-p 0.6: the tie goes to the lower id (%d %d %d)", c2[0], c2[1], c2[2]);
    memset(c2, 0, sizeof c2);
    for (int i = 0; i < 4000; i++) c2[sample_token(l, 3, 100.0, 0, 1.0, &r, work)]++;
    CHECK(c2[1] > 1100 && c2[2] < 1500, "a high temperature flattens (%d %d %d)", c2[0], c2[1], c2[2]);
    PpaRng a, b;
    sample_stream(&a, 42, 1, 2), sample_stream(&b, 42, 2, 1);
    CHECK(rng_u64(&a) != rng_u64(&b), "streams (1, 2) and (2, 1) differ");
    /* the quickselect nucleus against a full sort, ties included (logits on a coarse grid) */
    enum { RV = 300 };
    float rl[RV];
    SampleCand rw[2 * RV];
    PpaRng g;
    sample_stream(&g, 3, 0, 0);
    int agree = 0, trials = 400;
    for (int t = 0; t < trials; t++) {
        int V = 2 + (int)(rng_uniform(&g) * (RV - 2));
        double T = 0.2 + 2 * rng_uniform(&g), top_p = t % 5 ? rng_uniform(&g) : 1e-9 + 0.999 * (t % 2);
        for (int v = 0; v < V; v++) rl[v] = (float)(0.5 * floor(8 * rng_uniform(&g)));
        PpaRng a1, a2;
        sample_stream(&a1, 9, (uint64_t)t, 0), a2 = a1;
        int top_k = t % 3 ? 0 : 1 + (int)(rng_uniform(&g) * V);
        int got = sample_token(rl, V, T, top_k, top_p, &a1, rw), want = ref_sample(rl, V, T, top_k, top_p, &a2);
        agree += got == want;
        if (got != want)
            CHECK(0, "trial %d (V %d, T %g, top-k %d, top-p %g): sampled %d, the sorted top-k and nucleus give %d", t, V, T,
                  top_k, top_p, got, want);
    }
    CHECK(agree == trials, "top-k and nucleus sampling = a full sort on %d/%d trials", agree, trials);
    /* top-k 1 is greedy (no ties): whatever the temperature, top-p and draw */
    int greedy_same = 1;
    for (int t = 0; t < 200; t++) {
        int V = 2 + (int)(rng_uniform(&g) * (RV - 2));
        for (int v = 0; v < V; v++) rl[v] = (float)(4 * rng_uniform(&g) - 2);
        greedy_same &= sample_token(rl, V, 0.2 + 3 * rng_uniform(&g), 1, 0.3 + 0.7 * rng_uniform(&g), &g, rw) ==
                       sample_greedy(rl, V);
    }
    CHECK(greedy_same, "top-k 1 draws the greedy token");
    float nan3[3] = {NAN, NAN, NAN};
    int t = sample_token(nan3, 3, 1.0, 0, 0.9, &r, work);
    CHECK(t >= 0 && t < 3, "all-NaN logits still give an id");
}

/* sample_weights against transformers' warpers (temperature, top-k, top-p),
 * written independently in tests/ref/sample_ref.py */
static void test_sampler_reference(void) {
    const char *path = "tests/fixtures/sample_golden.json";
    char *text = check_slurp(path);
    cJSON *doc = text ? cJSON_Parse(text) : NULL;
    CHECK(doc != NULL, "read %s", path);
    if (!doc) return free(text);
    int n = 0, agree = 0;
    for (const cJSON *c = cJSON_GetObjectItem(doc, "cases")->child; c; c = c->next, n++) {
        int V = cJSON_GetObjectItem(c, "V")->valueint, top_k = cJSON_GetObjectItem(c, "top_k")->valueint;
        double T = cJSON_GetObjectItem(c, "temperature")->valuedouble, top_p = cJSON_GetObjectItem(c, "top_p")->valuedouble;
        float *l = malloc(sizeof(float) * (size_t)V);
        SampleCand *w = malloc(sizeof(SampleCand) * 2 * (size_t)V);
        const cJSON *lv = cJSON_GetObjectItem(c, "logits")->child, *pv = cJSON_GetObjectItem(c, "probs")->child;
        for (int v = 0; v < V; v++, lv = lv->next) l[v] = (float)lv->valuedouble;
        double mass = sample_weights(l, V, T, top_k, top_p, w), worst = 0.0;
        int same_set = mass > 0.0;
        for (int v = 0; v < V; v++, pv = pv->next) {
            double got = w[v].p / mass, want = pv->valuedouble;
            same_set &= (got > 0.0) == (want > 0.0) && w[v].id == v;
            double d = fabs(got - want) / (want > 1e-300 ? want : 1.0);
            worst = d > worst ? d : worst;
        }
        int ok = same_set && worst < 1e-9;
        agree += ok;
        if (!ok) CHECK(0, "case %d (V %d, T %g, top-k %d, top-p %g): kept set %s, largest relative difference %.3g", n, V,
                       T, top_k, top_p, same_set ? "equal" : "differs", worst);
        free(l), free(w);
    }
    CHECK(n >= 50 && agree == n, "the filtered distribution = transformers' warpers on %d/%d cases", agree, n);
    cJSON_Delete(doc);
    free(text);
}

/* stop strings end a response at the first token whose text completes one,
 * found by the window of generate.c: the same token as decoding the whole
 * response after every token (the reference here) */
static void test_stop_strings(Model *m, const char *name) {
    char path[] = "/tmp/ppa_test_stop_XXXXXX", err[256];
    int fd = mkstemp(path);
    if (fd < 0) return;
    close(fd);
    write_byte_tokenizer(path, "");
    Tokenizer *tok = tokenizer_load(path, err, sizeof err);
    unlink(path);
    CHECK(tok != NULL, "%s: the byte tokenizer: %s", name, err);
    if (!tok) return;
    int prompt[4] = {40, 41, 42, 43}, agree = 0, cases = 0;
    GenPrompt gp = {.ids = prompt, .len = 4};
    GenOptions free_o = opts(48, 0.0, 1.0, 1, 42);
    GenSample full;
    CHECK(gen(m, &gp, 1, &free_o, &full) == 0 && full.len == 48, "%s: 48 free tokens", name);
    size_t n;
    char *text = tokenizer_decode(tok, full.ids, (size_t)full.len, 1, &n); /* one byte per token (ids < 256) */
    for (int at = 6; at + 12 <= (int)n; at += 7)
        for (int w = 1; w <= 12; w += 11) {
            char stop[16];
            memcpy(stop, text + at, (size_t)w), stop[w] = 0;
            if (strlen(stop) != (size_t)w) continue; /* a NUL byte: not a C string */
            int want = 0; /* the reference: the first prefix whose whole decoded text holds the string */
            for (int k = 1; k <= full.len && !want; k++) {
                size_t len;
                char *t = tokenizer_decode(tok, full.ids, (size_t)k, 1, &len);
                if (memmem(t, len, stop, (size_t)w)) want = k;
                free(t);
            }
            const char *stops[2] = {stop, "\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f"};
            GenOptions o = opts(48, 0.0, 1.0, 1, 42);
            o.stop_strings = stops, o.n_stop_strings = 2, o.tok = tok;
            GenSample got;
            cases++;
            if (gen(m, &gp, 1, &o, &got)) continue;
            agree += got.stopped && got.len == want && !memcmp(got.ids, full.ids, sizeof(int) * (size_t)want);
            generate_free(&got, 1);
        }
    CHECK(cases >= 6 && agree == cases, "%s: a stop string ends generation at the token completing it (%d/%d)", name,
          agree, cases);
    free(text);
    generate_free(&full, 1);
    tokenizer_free(tok);
}

/* the cut of --stop: where the first of the stop strings starts (vLLM's and transformers' rule) */
static void test_find_stop(void) {
    const char *one[] = {"\nUser"}, *two[] = {"xyz", "z"}, *rev[] = {"z", "xyz"};
    const char *t = "Hi.\nUser: more\nUser";
    CHECK(generate_find_stop(t, strlen(t), one, 1) == 3, "the first occurrence");
    CHECK(generate_find_stop("wxyz", 4, two, 2) == 1 && generate_find_stop("wxyz", 4, rev, 2) == 1,
          "a string that starts earlier wins, whichever the order given, even where a later one starts inside it");
    CHECK(generate_find_stop("abc", 3, one, 1) == 3 && generate_find_stop("abc", 3, NULL, 0) == 3, "none: the whole text");
    CHECK(generate_find_stop("ab\nUs", 5, one, 1) == 5, "a stop string cut by the text's end is not one yet");
}

/* SentencePiece: a continuation keeps its leading space (the decoder strips a
 * text's first space, so decoding the response alone would lose it) */
static void test_continuation_text(void) {
    const char *path = "cache/tokenizers/mistral/tokenizer.json";
    char err[256];
    Tokenizer *tok = access(path, R_OK) ? NULL : tokenizer_load(path, err, sizeof err);
    if (!tok) {
        printf("SKIP continuation text with the Mistral tokenizer: no %s (make fixtures)\n", path);
        return;
    }
    int *p = NULL, *f = NULL;
    long np = tokenizer_encode(tok, "The man", 7, 1, &p, err, sizeof err);
    long nf = tokenizer_encode(tok, "The man went home.", 18, 1, &f, err, sizeof err);
    CHECK(np > 1 && nf > np && !memcmp(p, f, sizeof(int) * (size_t)np), "the prompt's ids are a prefix");
    size_t len;
    char *text = generate_decode_continuation(tok, p, (int)np, f + np, (int)(nf - np), &len);
    CHECK(len == 11 && !strcmp(text, " went home."), "the continuation keeps its leading space: '%s'", text);
    free(text), free(p), free(f);
    tokenizer_free(tok);
}

int main(void) {
    test_continuation_text();
    test_find_stop();
    test_sampler();
    test_sampler_reference();
    for (size_t i = 0; i < sizeof CONFIGS / sizeof CONFIGS[0]; i++) {
        Model *m = tiny_model(CONFIGS[i][0], CONFIGS[i][1], 1234 + i);
        if (!m) continue;
        test_decoder_matches_engine(m, CONFIGS[i][0], 1e-5);
        test_greedy_is_argmax(m, CONFIGS[i][0]);
        test_repeatable(m, CONFIGS[i][0]);
        test_batch_independent(m, CONFIGS[i][0]);
        test_stops(m, CONFIGS[i][0]);
        test_stop_strings(m, CONFIGS[i][0]);
        /* the same in bf16 (generate --precision bf16): decoder = engine, repeatable, batch-independent */
        char err[512], name[64];
        snprintf(name, sizeof name, "%s bf16", CONFIGS[i][0]);
        CHECK(model_set_precision(m, MODEL_BF16, err, sizeof err) == 0, "bf16: %s", err);
        test_decoder_matches_engine(m, name, 0x1p-5);
        test_repeatable(m, name);
        test_batch_independent(m, name);
        model_free(m);
    }
    return check_report("test_generate");
}
