/* test_gpu_decode.c: decoding on the GPU (src/gpu/gpu_decode.h, reached through model/decode.h as ppa generate
 * reaches it) against the CPU's decoder, the oracle (itself checked against the engine's forward in
 * tests/test_generate.c): built against the real module for make test-cuda and against the CPU stand-in for make
 * test, on the causal-LM cases of ../gpu_engine_cases.h (head_dim 64).
 *
 * Checks, in float32 and bf16 (the GPU's default), on each case: three prompts prefilled, forked to two samples
 * each, then six steps feeding every slot the CPU decoder's greedy token (the same tokens on both sides):
 *   every row of logits within F32_LOGIT (float32: sums in other orders; on the stand-in 1.5e-6 .. 1.2e-5, the
 *   largest on llama3_rope as in training) or BF16_LOGIT (bf16: the GPU keeps its cache and the attention's
 *   probabilities in bf16 as the forward's attention does, where the CPU's decoder keeps them in float32, and on
 *   these small peaky models a rounding moved in a layer moves the logits by several bf16 ulps of the largest:
 *   1.4e-2 .. 7.8e-2 on the stand-in; the tight bf16 check is the next but one) of the row's largest |logit|;
 *   the greedy token the CPU's wherever the CPU's two best logits are further apart than twice that bound;
 *   the decoded tokens' log-probs (log-softmax of the decoder's logits, summed) against the GPU forward's log-probs
 *   of the same sequences (gpu_model.h, itself within 2^-6 of the CPU bf16 engine): float32 within 1e-4, bf16
 *   within 2^-5 of max(1, |logp|) (on the stand-in 2e-8 .. 8e-4: the same rounding points as the forward);
 *   a prompt decoded alone = the same prompt decoded beside the others, bit for bit (the sampled text of a seed
 *   does not depend on the batch: the step's products must not depend on how many rows share them; matmul.h
 *   picks one cuBLASLt algorithm per shape, so on a GPU this check is what tells);
 *   a decoder larger than the GPU refused with the sizes.
 * And, on the GPU engine (sampler_case):
 *   prompts prefilled packed in one forward (decoder_prefill_many) = the CPU's one by one, within the bounds above;
 *   a fork shares its source's cache by reference: the source prefilled again with another prompt while its forks
 *   live (their prefix copied to them first), then every slot stepped: the CPU's logits within the bounds above;
 *   generate() with the device's sampler at temperature 0 = generate() with the exact sampler on the same engine,
 *   token for token (greedy is the same rule; the device path feeds its drawn tokens and keeps its logits there);
 *   sampled (temperature 1, top-p 0.9, top-k 50): sample j of a prompt = the prompt alone asked for its sample j,
 *   token for token, and a rerun gives the same tokens; continuous batching (max_seqs K and 2K: a prompt admitted
 *   when the slots of one whose samples all ended free up, into slots other prompts' samples used) = every prompt
 *   at once, token for token.
 * And steps through CUDA graphs (graph_case) = kernel by kernel, bit for bit, with the graphs replayed.
 * Usage: test_gpu_decode [--small] [--seed N]. Exit status: 0 all passed, 1 a failure, 77 no usable GPU. */
#include <time.h>

#include "../gpu_engine_cases.h"
#include "gpu/gpu_decode.h"
#include "harness.h"
#include "model/decode.h"
#include "eval/generate.h"

static PcApi api;
static char tmpdir[64];

#define F32_LOGIT 3e-5
#define BF16_LOGIT 0x1p-2
#define F32_LOGP 1e-4
#define BF16_LOGP 0x1p-5
#define STEPS 6
#define NP 3 /* prompts */
#define NS 2 /* samples a prompt */

static int argmax(const float *x, int V) {
    int b = 0;
    for (int i = 1; i < V; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* |a - b| of a row over its largest |b| */
static double row_err(const float *a, const float *b, int V) {
    double m = 1e-30, w = 0;
    for (int i = 0; i < V; i++) m = fmax(m, fabs(b[i]));
    for (int i = 0; i < V; i++) w = fmax(w, fabs((double)a[i] - b[i]) / m);
    return w;
}

static double log_softmax_at(const float *x, int V, int t) {
    double m = x[0], s = 0;
    for (int i = 1; i < V; i++) m = fmax(m, x[i]);
    for (int i = 0; i < V; i++) s += exp((double)x[i] - m);
    return (double)x[t] - m - log(s);
}

/* case c's host model (*m) and its upload, or NULL after a failed check */
static GpuModel *case_model(const char *name, const ModelConfig *c, ModelPrecision prec, Model **m) {
    char err[1024] = "";
    *m = ge_model(tmpdir, name, c, 0.3, ST_F32, prec, err, sizeof err);
    GpuModel *g = *m ? gpu_model_new(&api, *m, prec, err, sizeof err) : NULL;
    H_CHECK(g != NULL, "%s %s: model: %s", name, prec == MODEL_BF16 ? "bf16" : "fp32", err);
    if (!g) model_free(*m), *m = NULL;
    return g;
}

static void run_case(const char *name, const ModelConfig *c, ModelPrecision prec, uint64_t seed) {
    char err[1024];
    int bf = prec == MODEL_BF16, V = c->vocab_size, S = NP * NS, max_len = 10 + STEPS + 1;
    const char *p = bf ? "bf16" : "fp32";
    Model *m;
    GpuModel *g = case_model(name, c, prec, &m);
    if (!g) return;
    /* prompts of 3 .. 10 tokens */
    int prompts[NP][10], plen[NP];
    uint64_t s = seed;
    for (int i = 0; i < NP; i++) {
        plen[i] = 3 + (int)(ge_rand(&s) % 8);
        for (int j = 0; j < plen[i]; j++) prompts[i][j] = (int)(ge_rand(&s) % (uint64_t)V);
    }
    float *lc = calloc((size_t)S * V, sizeof(float)), *lg = calloc((size_t)S * V, sizeof(float));
    float *la = calloc((size_t)V, sizeof(float));
    int tok[NP * NS], slot[NP * NS], seqs[NP * NS][10 + STEPS + 1];
    double lp_dec[NP * NS] = {0};
    Decoder *cd = decoder_new(m, S, max_len, err, sizeof err);
    ForwardEngine e = gpu_model_engine(g, "test"); /* as cli/load.c attaches it; g stays this test's */
    e.free = NULL;
    model_set_forward_engine(m, &e); /* decoders made from here on decode on the GPU engine */
    Decoder *gd = cd ? decoder_new(m, S, max_len, err, sizeof err) : NULL;
    Decoder *alone = gd ? decoder_new(m, 1, max_len, err, sizeof err) : NULL;
    int ok = alone != NULL;
    double worst = 0, worst_lp = 0;
    int greedy_checked = 0, greedy_same = 1, same_alone = 1;
    for (int i = 0; ok && i < NP; i++) {
        ok = !decoder_prefill(cd, i * NS, prompts[i], plen[i], lc + (size_t)i * NS * V, err, sizeof err) &&
             !decoder_prefill(gd, i * NS, prompts[i], plen[i], lg + (size_t)i * NS * V, err, sizeof err);
        decoder_fork(cd, i * NS, i * NS, NS), decoder_fork(gd, i * NS, i * NS, NS);
        for (int k = 0; k < NS; k++) {
            memcpy(lc + (size_t)(i * NS + k) * V, lc + (size_t)i * NS * V, sizeof(float) * V);
            memcpy(lg + (size_t)(i * NS + k) * V, lg + (size_t)i * NS * V, sizeof(float) * V);
            memcpy(seqs[i * NS + k], prompts[i], sizeof(int) * (size_t)plen[i]);
        }
    }
    H_CHECK(ok, "%s %s: decoders and prefill: %s", name, p, err);
    for (int step = 0; ok && step <= STEPS; step++) {
        for (int r = 0; r < S; r++) {
            const float *a = lg + (size_t)r * V, *b = lc + (size_t)r * V;
            worst = fmax(worst, row_err(a, b, V));
            int t = argmax(b, V), t2 = t ? 0 : 1; /* the CPU's greedy token and its runner-up */
            for (int i = 0; i < V; i++)
                if (i != t && b[i] > b[t2]) t2 = i;
            double gap = (b[t] - b[t2]) / fmax(1e-30, fabs(b[t])), bound = 2 * (bf ? BF16_LOGIT : F32_LOGIT);
            if (gap > bound) greedy_checked++, greedy_same &= argmax(a, V) == t;
            /* sample k of a prompt: its greedy token, or its runner-up for odd samples (two continuations) */
            tok[r] = r % NS ? t2 : t, slot[r] = r;
            lp_dec[r] += log_softmax_at(a, V, tok[r]);
            seqs[r][plen[r / NS] + step] = tok[r];
        }
        if (step == STEPS) break;
        ok = !decoder_step(cd, tok, slot, S, lc, err, sizeof err) && !decoder_step(gd, tok, slot, S, lg, err, sizeof err);
    }
    H_CHECK(ok, "%s %s: steps: %s", name, p, err);
    double bound = bf ? BF16_LOGIT : F32_LOGIT;
    H_CHECK(ok && worst <= bound, "%s %s: every row of logits within %g of its largest (%.3g)", name, p, bound, worst);
    H_CHECK(ok && greedy_same, "%s %s: the greedy token is the CPU's where its two best are apart (%d rows)", name, p,
            greedy_checked);
    /* the decoded tokens' log-probs against the forward's: the last STEPS + 1 tokens of each sequence, scored */
    if (ok) {
        Row rows[NP * NS];
        int rl[NP * NS];
        const int *rp[NP * NS];
        for (int r = 0; r < S; r++) {
            rl[r] = STEPS + 1, rp[r] = seqs[r] + plen[r / NS];
            rows[r] = (Row){plen[r / NS], seqs[r], 1, &rl[r], &rp[r]};
        }
        double fw[NP * NS];
        ok = !gpu_forward_logps(g, rows, S, fw, NULL, err, sizeof err);
        for (int r = 0; ok && r < S; r++) worst_lp = fmax(worst_lp, fabs(lp_dec[r] - fw[r]) / fmax(1.0, fabs(fw[r])));
        if (getenv("DBG")) for (int r = 0; r < S; r++) printf("  row %d: decoder %.6f forward %.6f (prompt %d)\n", r, lp_dec[r], fw[r], plen[r / NS]);
        double lb = bf ? BF16_LOGP : F32_LOGP;
        H_CHECK(ok && worst_lp <= lb, "%s %s: the decoded tokens' log-probs = the forward's within %g (%.3g) %s", name, p,
                lb, worst_lp, ok ? "" : err);
    }
    /* prompt 1's first sample alone, the same tokens: the same bits as beside the others */
    if (ok) {
        float *one = la;
        ok = !decoder_prefill(alone, 0, prompts[1], plen[1], one, err, sizeof err);
        Decoder *again = decoder_new(m, S, max_len, err, sizeof err);
        float *row = calloc((size_t)V, sizeof(float));
        ok = ok && again && !decoder_prefill(again, 2, prompts[1], plen[1], row, err, sizeof err);
        same_alone &= ok && !memcmp(one, row, sizeof(float) * V);
        for (int step = 0; ok && step < STEPS; step++) {
            int t1 = seqs[NS][plen[1] + step], s0 = 0, s2 = 2;
            ok = !decoder_step(alone, &t1, &s0, 1, one, err, sizeof err) &&
                 !decoder_step(again, &t1, &s2, 1, row, err, sizeof err);
            same_alone &= ok && !memcmp(one, row, sizeof(float) * V);
        }
        decoder_free(again), free(row);
        H_CHECK(ok && same_alone, "%s %s: a prompt decoded alone = in another slot of a larger decoder, bit for bit %s",
                name, p, ok ? "" : err);
    }
    printf("%-15s %s: logits %.2e, greedy checked on %d rows, log-probs vs forward %.2e%s\n", name, p, worst,
           greedy_checked, worst_lp, same_alone ? ", alone = batched (bits)" : "");
    decoder_free(cd), decoder_free(gd), decoder_free(alone);
    free(lc), free(lg), free(la);
    model_set_forward_engine(m, NULL);
    gpu_model_free(g), model_free(m);
}

static int same_samples(const GenSample *a, const GenSample *b) {
    return a->len == b->len && a->finished == b->finished && !memcmp(a->ids, b->ids, sizeof(int) * (size_t)(a->len + a->finished));
}

/* the device's decoding paths on the GPU engine: packed prefill, forks by reference, the sampler in generate() */
static void sampler_case(const char *name, const ModelConfig *c, ModelPrecision prec, uint64_t seed) {
    char err[1024] = "";
    int bf = prec == MODEL_BF16, V = c->vocab_size, max_len = decoder_model_max_len(c) < 24 ? decoder_model_max_len(c) : 24;
    const char *p = bf ? "bf16" : "fp32";
    double bound = bf ? BF16_LOGIT : F32_LOGIT, worst = 0;
    Model *m;
    GpuModel *g = case_model(name, c, prec, &m);
    if (!g) return;
    int prompts[4][10], plen[4];
    uint64_t s = seed ^ 0xdec0de;
    for (int i = 0; i < 4; i++) {
        plen[i] = 3 + (int)(ge_rand(&s) % 8);
        for (int j = 0; j < plen[i]; j++) prompts[i][j] = (int)(ge_rand(&s) % (uint64_t)V);
    }
    float *lc = calloc((size_t)4 * V, sizeof(float)), *lg = calloc((size_t)4 * V, sizeof(float));
    Decoder *cd = decoder_new(m, 4, max_len, err, sizeof err);
    ForwardEngine e = gpu_model_engine(g, "test");
    e.free = NULL;
    model_set_forward_engine(m, &e);
    Decoder *gd = cd ? decoder_new(m, 4, max_len, err, sizeof err) : NULL;
    int ok = gd != NULL, seq[3] = {0, 1, 2}, n3[3] = {plen[0], plen[1], plen[2]};
    const int *ids3[3] = {prompts[0], prompts[1], prompts[2]};
    /* packed prefill against the CPU's one by one */
    ok = ok && !decoder_prefill_many(gd, seq, ids3, n3, 3, lg, err, sizeof err);
    for (int i = 0; ok && i < 3; i++) ok = !decoder_prefill(cd, i, prompts[i], plen[i], lc + (size_t)i * V, err, sizeof err);
    for (int i = 0; ok && i < 3 * V; i += V) worst = fmax(worst, row_err(lg + i, lc + i, V));
    H_CHECK(ok && worst <= bound, "%s %s: three prompts prefilled packed = the CPU's one by one within %g (%.3g) %s",
            name, p, bound, worst, ok ? "" : err);
    /* slot 0 forked to 1..3 by reference, slots stepped, then slot 0 prefilled again: its forks keep their prefix */
    worst = 0;
    decoder_fork(cd, 0, 0, 4), decoder_fork(gd, 0, 0, 4);
    int tok[4] = {1 % V, 2 % V, 3 % V, 4 % V}, sl[4] = {0, 1, 2, 3};
    for (int step = 0; ok && step < 3; step++) {
        ok = !decoder_step(cd, tok, sl, 4, lc, err, sizeof err) && !decoder_step(gd, tok, sl, 4, lg, err, sizeof err);
        for (int i = 0; ok && i < 4 * V; i += V) worst = fmax(worst, row_err(lg + i, lc + i, V));
        for (int r = 0; r < 4; r++) tok[r] = (tok[r] * 7 + step + 5) % V;
    }
    ok = ok && !decoder_prefill(cd, 0, prompts[3], plen[3], lc, err, sizeof err) &&
         !decoder_prefill(gd, 0, prompts[3], plen[3], lg, err, sizeof err);
    for (int step = 0; ok && step < 3; step++) {
        ok = !decoder_step(cd, tok, sl, 4, lc, err, sizeof err) && !decoder_step(gd, tok, sl, 4, lg, err, sizeof err);
        for (int i = 0; ok && i < 4 * V; i += V) worst = fmax(worst, row_err(lg + i, lc + i, V));
        for (int r = 0; r < 4; r++) tok[r] = (tok[r] * 5 + step + 3) % V;
    }
    H_CHECK(ok && worst <= bound, "%s %s: forks by reference, their source prefilled again: the CPU's logits within %g "
            "(%.3g) %s", name, p, bound, worst, ok ? "" : err);
    decoder_free(cd), decoder_free(gd);
    /* generate(): the device's sampler */
    enum { NPR = 3, K = 3, NEW = 8 };
    GenPrompt gp[NPR];
    for (int i = 0; i < NPR; i++) gp[i] = (GenPrompt){prompts[i], plen[i], (uint64_t)i, 0, 0, 0.0};
    /* stop ids taken from a first run's tokens, so that sequences end at different steps and the active rows
     * compact */
    int stop[2], n_stop = 2, early = 0;
    GenOptions go = {.max_new_tokens = NEW, .temperature = 0.0, .top_p = 1.0, .top_k = 0, .n_samples = K, .seed = 7,
                     .stop = stop, .n_stop = 0};
    GenSample a[NPR * K], b[NPR * K], one[1];
    go.device_sampler = 1;
    ok = !generate(m, gp, NPR, &go, a, err, sizeof err);
    if (ok) stop[0] = a[0].ids[2], stop[1] = a[K].ids[4], go.n_stop = n_stop, generate_free(a, NPR * K);
    ok = ok && !generate(m, gp, NPR, &go, a, err, sizeof err);
    go.device_sampler = 0;
    ok = ok && !generate(m, gp, NPR, &go, b, err, sizeof err);
    int same = ok;
    for (int i = 0; ok && i < NPR * K; i++) same &= same_samples(&a[i], &b[i]);
    H_CHECK(same, "%s %s: greedy on the device's sampler = the exact sampler's, token for token %s", name, p, ok ? "" : err);
    if (ok) generate_free(a, NPR * K), generate_free(b, NPR * K);
    go = (GenOptions){.max_new_tokens = NEW, .temperature = 1.0, .top_p = 0.9, .top_k = 50, .n_samples = K, .seed = 7,
                      .device_sampler = 1, .stop = stop, .n_stop = 0};
    ok = !generate(m, gp, NPR, &go, a, err, sizeof err);
    if (ok) stop[0] = a[1].ids[2], stop[1] = a[2 * K + 2].ids[3], go.n_stop = n_stop, generate_free(a, NPR * K);
    ok = ok && !generate(m, gp, NPR, &go, a, err, sizeof err) && !generate(m, gp, NPR, &go, b, err, sizeof err);
    int rerun = ok, alone = ok, distinct = 0;
    for (int i = 0; ok && i < NPR * K; i++) rerun &= same_samples(&a[i], &b[i]), early += a[i].finished && a[i].len < NEW - 1;
    for (int i = 0; ok && i < NPR; i++)
        for (int j = 0; ok && j < K; j++) {
            GenPrompt q = gp[i];
            q.sample0 = (uint64_t)j;
            GenOptions g1 = go;
            g1.n_samples = 1;
            ok = !generate(m, &q, 1, &g1, one, err, sizeof err);
            alone &= ok && same_samples(&a[i * K + j], one);
            distinct += j && !same_samples(&a[i * K + j], &a[i * K]);
            if (ok) generate_free(one, 1);
        }
    H_CHECK(ok && rerun, "%s %s: sampled on the device, a rerun gives the same tokens %s", name, p, ok ? "" : err);
    /* continuous batching: K or 2K slots, the next prompt admitted as one's samples all end = all at once */
    int cont = ok;
    for (int slots = K; ok && slots <= 2 * K; slots += K) {
        GenOptions gc = go;
        gc.max_seqs = slots;
        ok = !generate(m, gp, NPR, &gc, b, err, sizeof err);
        for (int i = 0; ok && i < NPR * K; i++) cont &= same_samples(&a[i], &b[i]);
        if (ok) generate_free(b, NPR * K);
    }
    H_CHECK(ok && cont, "%s %s: continuous batching in %d and %d slots = every prompt at once, token for token %s",
            name, p, K, 2 * K, ok ? "" : err);
    ok = ok && !generate(m, gp, NPR, &go, b, err, sizeof err);
    H_CHECK(ok && alone, "%s %s: sample j of a prompt = the prompt alone asked for its sample j %s", name, p, ok ? "" : err);
    H_CHECK(ok && distinct > 0, "%s %s: the K samples of a prompt are not all equal (a stream per sample)", name, p);
    H_CHECK(ok && early > 0 && early < NPR * K, "%s %s: some samples (%d) end early on a stop id, so the active rows "
            "compact (the test's own premise)", name, p, early);
    generate_free(a, NPR * K), generate_free(b, NPR * K);
    printf("%-15s %s: packed prefill and forks by reference vs the CPU %.2e; device sampler: greedy = exact, "
           "alone = batched, %d of %d samples differ from the first\n", name, p, worst, distinct, NPR * (K - 1));
    free(lc), free(lg);
    model_set_forward_engine(m, NULL);
    gpu_model_free(g), model_free(m);
}

/* CUDA graphs: the same steps through graphs (a step's rows padded to a bucket, replayed from the bucket's graph)
 * and kernel by kernel give the same logits and draws, bit for bit, as the active rows shrink from 5 to 3 to 2
 * (buckets 8, 4, 2) and the tokens come from the host or from the device's draws; the graphs were replayed */
static void graph_case(const char *name, const ModelConfig *c, ModelPrecision prec, uint64_t seed) {
    char err[1024] = "";
    const char *p = prec == MODEL_BF16 ? "bf16" : "fp32";
    int V = c->vocab_size, max_len = decoder_model_max_len(c) < 24 ? decoder_model_max_len(c) : 24;
    Model *m;
    GpuModel *g = case_model(name, c, prec, &m);
    GpuDecoder *d[2] = {NULL, NULL};
    for (int k = 0; g && k < 2; k++)
        if ((d[k] = gpu_decoder_new(g, 5, max_len, err, sizeof err))) gpu_decoder_graphs(d[k], k == 0);
    int ok = d[0] && d[1], same = 1;
    H_CHECK(ok, "%s %s: graph decoders: %s", name, p, err);
    int pr[5] = {3, 1, 4, 1, 5}, n1 = 5, seq[5] = {0, 1, 2, 3, 4}, pos[5], tok[5], ids[2][5];
    const int *ids1 = pr;
    float *lg[2] = {calloc((size_t)5 * V, sizeof(float)), calloc((size_t)5 * V, sizeof(float))};
    uint64_t keys[5];
    int steps[5];
    for (int i = 0; i < 5; i++) pr[i] = (int)((pr[i] * 37 + seed) % (uint64_t)V), keys[i] = seed + 11 * (uint64_t)i;
    for (int k = 0; ok && k < 2; k++)
        ok = !gpu_decoder_prefill(d[k], seq, &ids1, &n1, 1, NULL, err, sizeof err) &&
             !gpu_decoder_fork(d[k], 0, 0, 5, 5, err, sizeof err) &&
             !gpu_decoder_sampler(d[k], 1.0, 0, 0.95, NULL, 0, err, sizeof err);
    for (int step = 0; ok && step < 8; step++) {
        int n = step < 3 ? 5 : step < 6 ? 3 : 2, host = step % 2; /* odd steps: tokens from the host */
        for (int i = 0; i < n; i++) pos[i] = 5 + step, tok[i] = (step * 13 + i * 7) % V, steps[i] = step;
        for (int k = 0; ok && k < 2; k++) {
            ok = !gpu_decoder_sample(d[k], seq, keys, steps, NULL, n, ids[k], err, sizeof err) &&
                 !gpu_decoder_step(d[k], host ? tok : NULL, seq, pos, n, host ? lg[k] : NULL, err, sizeof err);
        }
        same &= ok && !memcmp(ids[0], ids[1], sizeof(int) * (size_t)n);
        if (host) same &= ok && !memcmp(lg[0], lg[1], sizeof(float) * (size_t)n * V);
    }
    long launches = ok ? gpu_decoder_graph_launches(d[0]) : 0, off = ok ? gpu_decoder_graph_launches(d[1]) : 0;
    H_CHECK(ok && same, "%s %s: steps through CUDA graphs = kernel by kernel, bit for bit %s", name, p, ok ? "" : err);
    H_CHECK(ok && launches > 0 && off == 0, "%s %s: the graphs were replayed (%ld steps; off: %ld)", name, p, launches,
            off);
    gpu_decoder_free(d[0]), gpu_decoder_free(d[1]);
    free(lg[0]), free(lg[1]);
    gpu_model_free(g), model_free(m);
}

/* a decoder larger than the GPU: refused with the sizes */
static void test_out_of_memory(void) {
    ModelConfig c;
    char err[1024] = "";
    if (ge_config(&GE_CASES[0], 0, &c, err, sizeof err)) return;
    Model *m = ge_model(tmpdir, "dec_oom", &c, 0.3, ST_F32, MODEL_BF16, err, sizeof err);
    GpuModel *g = m ? gpu_model_new(&api, m, MODEL_BF16, err, sizeof err) : NULL;
    size_t fr = 0, total = 0;
    api.pc_mem_info(&fr, &total);
    size_t per_seq = (size_t)c.num_hidden_layers * 4096 * c.num_key_value_heads * c.head_dim * 2; /* keys alone */
    c.max_position_embeddings = 4096;
    int n = (int)(1.25 * (double)total / (double)per_seq) + 1;
    GpuDecoder *d = g ? gpu_decoder_new(g, n, 4096, err, sizeof err) : NULL;
    H_CHECK(g && !d && strstr(err, "GB") && strstr(err, "cache"), "%d sequences of 4096 tokens: refused with the sizes: %s",
            n, err);
    gpu_decoder_free(d), gpu_model_free(g), model_free(m);
}

int main(int argc, char **argv) {
    h_begin();
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--small")) h_small = 1;
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) h_seed = strtoull(argv[++i], NULL, 10);
        else return fprintf(stderr, "usage: test_gpu_decode [--small] [--seed N]\n"), 2;
    }
    if (h_gpu_open("test_gpu_decode", "prompts")) return 77;
    char err[512];
    api = ge_linked_api();
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ppa_gpu_decode_XXXXXX");
    if (!mkdtemp(tmpdir)) return 1;
    for (int i = 0; i < GE_N_CASES; i++) {
        ModelConfig c;
        if (ge_config(&GE_CASES[i], 0, &c, err, sizeof err)) {
            H_CHECK(0, "%s: config: %s", GE_CASES[i].name, err);
            continue;
        }
        if (c.head != HEAD_LM) continue;
        run_case(GE_CASES[i].name, &c, MODEL_FP32, h_seed + (uint64_t)i);
        run_case(GE_CASES[i].name, &c, MODEL_BF16, h_seed + (uint64_t)i);
        sampler_case(GE_CASES[i].name, &c, MODEL_FP32, h_seed + (uint64_t)i);
        sampler_case(GE_CASES[i].name, &c, MODEL_BF16, h_seed + (uint64_t)i);
        graph_case(GE_CASES[i].name, &c, MODEL_BF16, h_seed + (uint64_t)i);
    }
    test_out_of_memory(); /* the stand-in refuses past its 16 GiB as the module does past the device */
    return h_gpu_close("test_gpu_decode", tmpdir);
}
