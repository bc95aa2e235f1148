/* test_attn_sched.c: the fused attention's plan (src/cuda/attn_sched.c), which the CUDA module uploads and its kernels
 * follow, checked against its definitions by brute force on shared-prompt batches (lists of one prompt and K
 * responses, as llama.c's batch_new packs them), plain causal rows and sliding windows:
 *   - each token's key ranges see exactly the keys attention.h's mask defines (the window counted along the
 *     sequence), and the pair count is theirs;
 *   - each block of 64 and of 128 queries has sorted, disjoint, non-adjacent intervals whose union is the keys its
 *     tokens see; the query orders are permutations, heaviest first by the keys covered, ties the lower block first;
 *   - each 64-key block's list is exactly the query blocks with a token seeing one of its keys, ascending;
 *   - the dk/dv items cut each list into consecutive, near-equal runs of at most `chunk` blocks, in list order, so
 *     that every visible (query, key) pair falls in exactly one item; the items are ordered by their query blocks,
 *     most first; their count is within the scratch bound pc_attention_work_bytes sizes from T alone;
 *   - a shared prompt's key blocks are actually split when their lists are long (not vacuous);
 *   - the kernels' tile tests (attn_sees_some, attn_sees_all) on every token against tiles of 16, 32 and 64 keys
 *     and unaligned ranges: "some" exactly the brute force, "all" never true where a key is hidden (and true
 *     somewhere: the fast path runs);
 *   - two builds give the same tables; bad arrays are refused with the token named.
 * Then the backward the plan drives, on the CPU stand-in of the module (tests/cuda/mock/mock_attention.c: dk, dv
 * through the items' partial sums in the module's scratch layout and order), against the CPU engine's
 * attention_backward in float32, on a batch whose prompt key blocks are split: within 1e-5 of each tensor's largest
 * magnitude (float32 sums in other orders over at most a few hundred terms of size <= 1: about 100 x 2^-24), so a
 * dropped or repeated query block (an error of one term, ~1e-2 here) fails. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "core/rng.h"
#include "cuda/attention.h"
#include "cuda/attn_sched.h"
#include "kernels/kernels.h"

typedef struct {
    int T, nrows;
    int *pstart, *plen, *sstart, *rows;
} Batch;

/* lists of a P-token prompt and K responses of lengths R[i % nr], n lists; or (P = 0) causal rows of length R[0] */
static Batch batch(int n, int P, int K, const int *R, int nr) {
    Batch b = {0};
    int T = 0;
    for (int l = 0; l < n; l++) {
        T += P;
        for (int i = 0; i < K; i++) T += R[(l * K + i) % nr];
    }
    b.T = T, b.pstart = malloc(sizeof(int) * T), b.plen = malloc(sizeof(int) * T), b.sstart = malloc(sizeof(int) * T);
    b.rows = malloc(sizeof(int) * (n + 1));
    int t = 0;
    for (int l = 0; l < n; l++) {
        int base = t;
        b.rows[b.nrows++] = t;
        for (int i = 0; i < P; i++, t++) b.pstart[t] = base, b.plen[t] = 0, b.sstart[t] = base;
        for (int i = 0; i < K; i++) {
            int s = t;
            for (int j = 0; j < R[(l * K + i) % nr]; j++, t++) b.pstart[t] = base, b.plen[t] = P, b.sstart[t] = s;
        }
    }
    b.rows[b.nrows] = t;
    return b;
}

static void batch_free(Batch *b) { free(b->pstart), free(b->plen), free(b->sstart), free(b->rows); }

/* attention.h's mask, from its definition */
static int visible(const Batch *b, int W, int t, int j) {
    int ps = b->pstart[t], pl = b->plen[t], ss = b->sstart[t];
    int in_prompt = j >= ps && j < ps + pl, in_seg = j >= ss && j <= t;
    if (!in_prompt && !in_seg) return 0;
    if (W == 0) return 1;
    long qpos = pl + (t - ss), kpos = in_seg ? pl + (j - ss) : j - ps;
    return qpos - kpos < W;
}

static void check_plan(const char *name, const Batch *b, int W) {
    AttnSched s, s2;
    char why[200];
    int T = b->T;
    if (attn_sched_build(&s, b->pstart, b->plen, b->sstart, T, W, why, sizeof why)) {
        CHECK(0, "%s: attn_sched_build: %s", name, why);
        return;
    }
    /* the token ranges and the pairs */
    long long pairs = 0;
    int bad = 0;
    for (int t = 0; t < T; t++)
        for (int j = 0; j < T; j++) {
            const int *m = s.mask + 4 * t;
            int v = visible(b, W, t, j), got = (j >= m[0] && j < m[1]) || (j >= m[2] && j <= t);
            pairs += v, bad += v != got;
        }
    CHECK(bad == 0 && pairs == s.pairs, "%s: %d (token, key) pairs other than the mask's; pairs %lld, want %lld", name,
          bad, s.pairs, pairs);

    /* the query blocks' intervals and orders */
    for (int pass = 0; pass < 2; pass++) {
        int B = pass ? ATTN_QB2 : ATTN_QB, nq = pass ? s.nq128 : s.nq64;
        const int *off = pass ? s.off128 : s.off64, *iv = pass ? s.iv128 : s.iv64, *ord = pass ? s.qord128 : s.qord64;
        int errs = 0, seen_ok = 1;
        long long *w = calloc((size_t)nq, sizeof(long long));
        char *in = malloc((size_t)T);
        for (int q = 0; q < nq; q++) {
            memset(in, 0, (size_t)T);
            for (int i = off[q]; i < off[q + 1]; i++) {
                int x = iv[2 * i], y = iv[2 * i + 1];
                errs += !(x < y) + (i > off[q] && x <= iv[2 * i - 1]); /* empty, or overlapping or adjacent */
                for (int j = x; j < y; j++) in[j] = 1;
                w[q] += y - x;
            }
            for (int j = 0; j < T; j++) {
                int v = 0;
                for (int t = q * B; t < T && t < (q + 1) * B && !v; t++) v = visible(b, W, t, j);
                errs += v != in[j];
            }
        }
        char *hit = calloc((size_t)nq, 1);
        for (int i = 0; i < nq; i++) {
            seen_ok = seen_ok && ord[i] >= 0 && ord[i] < nq && !hit[ord[i]];
            if (ord[i] >= 0 && ord[i] < nq) hit[ord[i]] = 1;
            if (i && seen_ok)
                seen_ok = w[ord[i - 1]] > w[ord[i]] || (w[ord[i - 1]] == w[ord[i]] && ord[i - 1] < ord[i]);
        }
        CHECK(errs == 0, "%s: blocks of %d queries: %d interval errors against the mask", name, B, errs);
        CHECK(seen_ok, "%s: blocks of %d queries: the order is not a permutation, heaviest first", name, B);
        free(w), free(in), free(hit);
    }

    /* the key blocks' lists */
    int errs = 0;
    for (int kt = 0; kt < s.nk64; kt++) {
        int li = s.koff[kt];
        for (int q = 0; q < s.nq64; q++) {
            int v = 0;
            for (int t = q * ATTN_QB; t < T && t < (q + 1) * ATTN_QB && !v; t++)
                for (int j = kt * ATTN_KB; j < T && j < (kt + 1) * ATTN_KB && !v; j++) v = visible(b, W, t, j);
            if (v) errs += li >= s.koff[kt + 1] || s.klist[li++] != q;
        }
        errs += li != s.koff[kt + 1];
    }
    CHECK(errs == 0, "%s: %d key-block list errors", name, errs);

    /* the items */
    int w = s.koff[s.nk64], chunk = (w + ATTN_EXTRA_ITEMS - 1) / ATTN_EXTRA_ITEMS, split = 0;
    chunk = chunk < 4 ? 4 : chunk;
    CHECK(s.chunk == chunk && s.nitems <= s.nk64 + ATTN_EXTRA_ITEMS && s.kioff[s.nk64] == s.nitems,
          "%s: chunk %d (want %d), %d items for %d key blocks", name, s.chunk, chunk, s.nitems, s.nk64);
    errs = 0;
    for (int kt = 0; kt < s.nk64; kt++) {
        int next = s.koff[kt], lo = 1 << 30, hi = 0;
        for (int ii = s.kioff[kt]; ii < s.kioff[kt + 1]; ii++) {
            const int *it = s.items + 3 * s.kitems[ii];
            errs += it[0] != kt || it[1] != next || it[2] > s.chunk;
            next = it[1] + it[2];
            lo = it[2] < lo ? it[2] : lo, hi = it[2] > hi ? it[2] : hi;
        }
        errs += next != s.koff[kt + 1] || hi - lo > 1;
        split += s.kioff[kt + 1] - s.kioff[kt] > 1;
    }
    for (int i = 1; i < s.nitems; i++) {
        const int *a = s.items + 3 * (i - 1), *c = s.items + 3 * i;
        errs += a[2] < c[2] || (a[2] == c[2] && a[0] > c[0]);
    }
    /* every visible pair in exactly one item: the items covering each (key block, query block) */
    int *cover = calloc((size_t)s.nk64 * s.nq64, sizeof(int));
    for (int i = 0; i < s.nitems; i++) {
        const int *it = s.items + 3 * i;
        for (int l = it[1]; l < it[1] + it[2]; l++) cover[(size_t)it[0] * s.nq64 + s.klist[l]]++;
    }
    for (int t = 0; t < T; t++)
        for (int j = 0; j < T; j++)
            errs += visible(b, W, t, j) && cover[(size_t)(j / ATTN_KB) * s.nq64 + t / ATTN_QB] != 1;
    free(cover);
    CHECK(errs == 0, "%s: %d item errors (runs, order, or a visible pair not in exactly one item)", name, errs);
    if (strstr(name, "long"))
        CHECK(split > 0 && s.chunk < s.koff[1] - s.koff[0], "%s: no key block split (chunk %d, first list %d)", name,
              s.chunk, s.koff[1] - s.koff[0]);
    CHECK(attn_work_bytes(T, 14, 64) >= sizeof(float) * (attn_work_d_floats(T, 14) +
                                                         2 * (size_t)s.nitems * 14 * ATTN_KB * 64),
          "%s: the scratch bound is below the plan's %d items", name, s.nitems);

    /* the kernels' tile tests */
    int some_bad = 0, all_bad = 0, all_true = 0;
    for (int t = 0; t < T; t++) {
        const int *m = s.mask + 4 * t;
        for (int size = 3; size <= 64; size = size == 3 ? 16 : 2 * size)
            for (int a = size == 3 ? t % 5 : 0; a < T; a += size) {
                int b2 = a + size < T ? a + size : T, some = 0, all = 1;
                for (int j = a; j < b2; j++) {
                    int v = visible(b, W, t, j);
                    some |= v, all &= v;
                }
                int gs = attn_sees_some(m[0], m[1], m[2], t, a, b2), ga = attn_sees_all(m[0], m[1], m[2], t, a, b2);
                some_bad += gs != some, all_bad += ga && !all, all_true += ga;
            }
    }
    CHECK(some_bad == 0 && all_bad == 0 && all_true > 0, "%s: tile tests: %d wrong \"some\", %d \"all\" over a hidden "
          "key, %d \"all\"", name, some_bad, all_bad, all_true);

    /* the same tables again */
    if (attn_sched_build(&s2, b->pstart, b->plen, b->sstart, T, W, why, sizeof why) == 0) {
        CHECK(s2.nitems == s.nitems && !memcmp(s2.items, s.items, sizeof(int) * 3 * s.nitems) &&
                  !memcmp(s2.kitems, s.kitems, sizeof(int) * s.nitems) &&
                  !memcmp(s2.qord64, s.qord64, sizeof(int) * s.nq64) &&
                  !memcmp(s2.klist, s.klist, sizeof(int) * s.koff[s.nk64]),
              "%s: a second build gives other tables", name);
        attn_sched_free(&s2);
    }
    attn_sched_free(&s);
}

static void fill(float *x, size_t n, PpaRng *r) {
    for (size_t i = 0; i < n; i++) x[i] = (float)(rng_uniform(r) * 2.0 - 1.0);
}

static float maxabs(const float *x, size_t n) {
    float m = 0.0f;
    for (size_t i = 0; i < n; i++) m = fabsf(x[i]) > m ? fabsf(x[i]) : m;
    return m;
}

/* the stand-in's backward through the plan's items against the CPU engine's, float32 */
static void check_backward(const char *name, const Batch *b, int NH, int NKV, int HS) {
    int T = b->T;
    size_t nq = (size_t)T * NH * HS, nk = (size_t)T * NKV * HS, nl = (size_t)T * NH;
    PpaRng r;
    rng_seed(&r, 43);
    float *q = malloc(4 * nq), *k = malloc(4 * nk), *v = malloc(4 * nk), *dout = malloc(4 * nq);
    float *out = malloc(4 * nq), *lse = malloc(4 * nl);
    float *gq = calloc(nq, 4), *gk = calloc(nk, 4), *gv = calloc(nk, 4), *mq = malloc(4 * nq), *mk = malloc(4 * nk),
          *mv = malloc(4 * nk);
    fill(q, nq, &r), fill(k, nk, &r), fill(v, nk, &r), fill(dout, nq, &r);
    AttnShape as = {b->pstart, b->plen, b->sstart, b->rows, b->nrows, T, NH, NKV, HS, 0};
    attention_forward(out, lse, q, k, v, &as);
    attention_backward(gq, gk, gv, dout, out, lse, q, k, v, &as);

    char err[200];
    CHECK(pc_init(0, err, sizeof err) == 0, "pc_init (the stand-in): %s", err);
    PcAttnPlan *p = pc_attn_plan_new(b->pstart, b->plen, b->sstart, T, 0);
    CHECK(p != NULL, "%s: pc_attn_plan_new: %s", name, p ? "" : pc_error());
    if (!p) return;
    size_t wb = pc_attention_work_bytes(T, NH, HS);
    float *d[10];
    size_t sz[10] = {nq, nk, nk, nq, nq, nl, nq, nk, nk, wb / 4};
    const float *src[10] = {NULL, NULL, NULL, dout, out, lse, q, k, v, NULL};
    for (int i = 0; i < 10; i++) {
        d[i] = pc_alloc(4 * sz[i]);
        if (src[i]) pc_upload(d[i], src[i], 4 * sz[i]);
    }
    int rc = pc_attention_backward(d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], p, NH, NKV, HS, PC_F32, d[9]);
    CHECK(rc == 0, "%s: pc_attention_backward: %s", name, rc ? pc_error() : "");
    pc_download(mq, d[0], 4 * nq), pc_download(mk, d[1], 4 * nk), pc_download(mv, d[2], 4 * nk);
    const char *what[3] = {"dq", "dk", "dv"};
    const float *want[3] = {gq, gk, gv}, *got[3] = {mq, mk, mv};
    size_t n[3] = {nq, nk, nk};
    for (int i = 0; i < 3; i++) {
        float scale = maxabs(want[i], n[i]), worst = 0.0f;
        for (size_t e = 0; e < n[i]; e++) worst = fmaxf(worst, fabsf(got[i][e] - want[i][e]));
        CHECK(scale > 0 && worst <= 1e-5f * scale,
              "%s: %s through the plan's items: %g from the CPU engine's (scale %g)",
              name, what[i], worst, scale);
    }
    for (int i = 0; i < 10; i++) pc_free(d[i]);
    pc_attn_plan_free(p);
    free(q), free(k), free(v), free(dout), free(out), free(lse), free(gq), free(gk), free(gv), free(mq), free(mk),
        free(mv);
}

int main(void) {
    const int r1[] = {256}, r2[] = {37, 64, 100, 5, 129}, r3[] = {64}, r4[] = {1};
    struct {
        const char *name;
        int n, P, K, W;
        const int *R;
        int nr;
    } cases[] = {
        {"one list, K 4, P = R = 256", 1, 256, 4, 0, r1, 1},
        {"3 lists, ragged responses", 3, 70, 5, 0, r2, 5},
        {"long list: P 256, K 24 responses of 64", 1, 256, 24, 0, r3, 1},
        {"causal rows of 300", 3, 0, 1, 0, (const int[]){300}, 1},
        {"window 100, ragged", 2, 150, 4, 100, r2, 5},
        {"one-token responses", 2, 3, 7, 0, r4, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        Batch b = batch(cases[i].n, cases[i].P, cases[i].K, cases[i].R, cases[i].nr);
        check_plan(cases[i].name, &b, cases[i].W);
        batch_free(&b);
    }

    /* refused: the token named */
    AttnSched s;
    char why[200];
    int ps[3] = {0, 0, 0}, pl[3] = {0, 0, 0}, ss[3] = {0, 0, 3};
    CHECK(attn_sched_build(&s, ps, pl, ss, 3, 0, why, sizeof why) == -1 && strstr(why, "token 2"),
          "sstart past its token accepted (%s)", why);
    pl[1] = 5, ss[2] = 0;
    CHECK(attn_sched_build(&s, ps, pl, ss, 3, 0, why, sizeof why) == -1 && strstr(why, "token 1"),
          "a prompt past T accepted (%s)", why);
    CHECK(attn_sched_build(&s, ps, pl, ss, 0, 0, why, sizeof why) == -1 && strstr(why, "T = 0"), "T 0 accepted");
    pl[1] = 0;
    CHECK(attn_sched_build(&s, ps, pl, ss, 3, -1, why, sizeof why) == -1 && strstr(why, "window"),
          "a negative window accepted");

    /* the backward the plan drives: the long list splits its prompt's key blocks; GQA groups of 2 */
    Batch b = batch(1, 256, 24, r3, 1);
    check_backward("long list, NH 4, NKV 2, HS 64", &b, 4, 2, 64);
    batch_free(&b);
    b = batch(2, 70, 5, r2, 5);
    check_backward("2 ragged lists, NH 2, NKV 1, HS 128", &b, 2, 1, 128);
    batch_free(&b);
    return check_report("test_attn_sched");
}
