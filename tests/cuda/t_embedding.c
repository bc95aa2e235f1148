/* t_embedding.c: pc_embed_forward, pc_scatter_plan and pc_embed_backward (pc_scatter_add_rows) against the CPU
 * engine's loops (model.c's model_embed: rows widened to float32; llama.c's embed_backward: dE[tok[t]] += dx[t] in
 * token order). Bound: bit for bit (a gather, and the same float32 additions in the same order). Token ids repeat
 * (half of them from a handful of ids), as real text and pad tokens do. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/embedding.h"
#include "families.h"
#include "harness.h"

typedef struct {
    float *x, *dE, *dx;
    const void *E;
    PcDtype et;
    int *tok, *order, *seg, *key, n_seg, T, C;
} Emb;

static int emb_fwd(void *p) {
    Emb *e = p;
    return pc_embed_forward(e->x, e->E, e->et, e->tok, e->T, e->C);
}
static int emb_bwd(void *p) {
    Emb *e = p;
    return pc_embed_backward(e->dE, e->dx, e->order, e->seg, e->key, e->n_seg, e->C);
}

static void emb_case(int T, int V, int C, PcDtype et) {
    char shape[96];
    snprintf(shape, sizeof shape, "T=%d V=%d C=%d E %s", T, V, C, et == PC_BF16 ? "bf16" : "f32");
    int *tok = h_malloc(sizeof(int) * T), hot = V < 5 ? V : 5;
    for (int t = 0; t < T; t++) tok[t] = h_randint(2) ? h_randint(hot) : h_randint(V);
    size_t nE = (size_t)V * C, nx = (size_t)T * C;
    float *E = h_malloc(sizeof(float) * nE), *xref = h_malloc(sizeof(float) * nx), *got = h_malloc(sizeof(float) * nx);
    uint16_t *Eb = NULL;
    h_fill(E, nE, 0.1f, 1.0f);
    if (et == PC_BF16) {
        Eb = h_malloc(2 * nE);
        for (size_t i = 0; i < nE; i++) Eb[i] = h_bf16(E[i]);
        h_widen(E, Eb, nE);
    }
    for (int t = 0; t < T; t++) memcpy(xref + (size_t)t * C, E + (size_t)tok[t] * C, sizeof(float) * C);
    Emb e = {d_alloc(nx * 4), NULL, NULL, et == PC_BF16 ? d_clone(Eb, nE * 2) : d_clone(E, nE * 4), et,
             d_clone(tok, sizeof(int) * T), NULL, NULL, NULL, 0, T, C};
    d_poison(e.x, nx * 4);
    H_TRY(emb_fwd(&e));
    d_down(got, e.x, nx * 4);
    Cmp cf = cmp_bits(got, xref, nx * 4);
    d_poison(e.x, nx * 4);
    H_TRY(emb_fwd(&e));
    float *again = h_malloc(sizeof(float) * (nE > nx ? nE : nx));
    d_down(again, e.x, nx * 4);
    H_CHECK(cf.ok, "embed_fwd %s: differs from the gathered rows at byte %ld", shape, cf.worst);
    H_CHECK(!memcmp(again, got, nx * 4), "embed_fwd %s: a rerun differs", shape);
    H_CHECK(d_guard_ok(e.x), "embed_fwd %s: wrote past x", shape);
    h_row("embed_fwd", shape, &cf, h_time(emb_fwd, &e), h_floor_bytes((double)nx * (4 + (et == PC_BF16 ? 2 : 4))),
          "bytes/bw");

    /* backward: the plan, then the scatter; float32 gradients */
    if (et == PC_F32) {
        int *order = h_malloc(sizeof(int) * T), *seg = h_malloc(sizeof(int) * (T + 1)), *key = h_malloc(sizeof(int) * T);
        int ns = pc_scatter_plan(order, seg, key, tok, T);
        int plan_ok = ns >= 1 && seg[0] == 0 && seg[ns] == T;
        for (int s = 0; plan_ok && s < ns; s++)
            for (int p = seg[s]; p < seg[s + 1]; p++)
                if (tok[order[p]] != key[s] || (p > seg[s] && order[p] <= order[p - 1]) || (s && key[s] <= key[s - 1]))
                    plan_ok = 0;
        H_CHECK(plan_ok, "scatter_plan %s: not sorted by key and position", shape);
        float *dx = h_malloc(sizeof(float) * nx), *dE0 = h_malloc(sizeof(float) * nE), *dEref = h_malloc(sizeof(float) * nE);
        h_fill(dx, nx, 0.1f, 1.0f), h_fill(dE0, nE, 0.1f, 1.0f);
        memcpy(dEref, dE0, sizeof(float) * nE);
        for (int t = 0; t < T; t++) /* embed_backward's loop */
            for (int c = 0; c < C; c++) dEref[(size_t)tok[t] * C + c] += dx[(size_t)t * C + c];
        e.dE = d_clone(dE0, nE * 4), e.dx = d_clone(dx, nx * 4);
        e.order = d_clone(order, sizeof(int) * T), e.seg = d_clone(seg, sizeof(int) * (ns + 1));
        e.key = d_clone(key, sizeof(int) * ns), e.n_seg = ns;
        float *gE = h_malloc(sizeof(float) * nE);
        H_TRY(emb_bwd(&e));
        d_down(gE, e.dE, nE * 4);
        Cmp cb = cmp_bits(gE, dEref, nE * 4);
        d_up(e.dE, dE0, nE * 4);
        H_TRY(emb_bwd(&e));
        d_down(again, e.dE, nE * 4);
        char s2[128];
        snprintf(s2, sizeof s2, "T=%d V=%d C=%d (%d ids)", T, V, C, ns);
        H_CHECK(cb.ok, "embed_bwd %s: differs from the CPU's token-order sums at byte %ld", s2, cb.worst);
        H_CHECK(!memcmp(again, gE, nE * 4), "embed_bwd %s: a rerun differs", s2);
        H_CHECK(d_guard_ok(e.dE), "embed_bwd %s: wrote past dE", s2);
        h_row("embed_bwd", s2, &cb, h_time(emb_bwd, &e), h_floor_bytes((double)nx * 4 + (double)ns * C * 8), "bytes/bw");
        d_free(e.dE), d_free(e.dx), d_free(e.order), d_free(e.seg), d_free(e.key);
        free(order), free(seg), free(key), free(dx), free(dE0), free(dEref), free(gE);
    }
    d_free(e.x), d_free((void *)e.E), d_free(e.tok);
    free(tok), free(E), free(Eb), free(xref), free(got), free(again);
}

void t_embedding(void) {
    int bad[3] = {4, -1, 2}, o[3], s[4], k[3];
    H_CHECK(pc_scatter_plan(o, s, k, bad, 3) == -1, "scatter_plan: a negative key accepted");
    H_CHECK(pc_scatter_plan(o, s, k, bad, 0) == 0 && s[0] == 0, "scatter_plan: n = 0");
    for (int d = 0; d < 2; d++) {
        PcDtype et = d ? PC_BF16 : PC_F32;
        emb_case(1, 10, 64, et);
        emb_case(9, 7, 17, et);
        emb_case(300, 1000, 896, et);
        if (!h_small) emb_case(18432, 32000, 896, et), emb_case(2304, 8000, 4096, et);
    }
}
