/* t_bench.c: the kernel benchmark on model shapes: Qwen2-0.5B (hidden 896, 14 / 2 heads of 64, intermediate 4864,
 * vocabulary 151,936) and Llama-3.1-8B (4096, 32 / 8 of 128, 14336, 128,256), at 8 lists of K = 8 responses,
 * P = R = 256, in shared-prompt rows: 8 x (256 + 8 x 256) = 18,432 tokens, the LM head scoring the 8 x 8 x 256 =
 * 16,384 response tokens. The engine's bf16 mode: bf16 product operands, float32 outputs, residual stream and
 * gradients. Each kernel's median time beside its floor: the bytes its contract must move over the measured copy
 * bandwidth (memory-bound kernels), or its FLOPs over the measured bf16 cuBLASLt rate (products). Inputs come from
 * pc_fill_uniform (values do not change the times); correctness is the tests' business, here only the LM head's
 * log-probs are checked to be finite. With a dump folder, Qwen2-0.5B's LM-head inputs and log-probs and both
 * models' LM-head times go there for bench/cuda_lmhead_torch.py (PyTorch on the same inputs). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/adamw.h"
#include "cuda/convert.h"
#include "cuda/embedding.h"
#include "cuda/global_norm.h"
#include "cuda/lmhead.h"
#include "cuda/matmul.h"
#include "cuda/rmsnorm.h"
#include "cuda/rope.h"
#include "cuda/swiglu.h"
#include "families.h"
#include "harness.h"

typedef struct {
    const char *name;
    int H, NH, NKV, HS, I, V, bias;
    double params; /* AdamW and the norm over this many parameters (0: skipped) */
} Model;

static int LISTS = 8, K_RESP = 8, P_LEN = 256, R_LEN = 256; /* b_models(tiny): 1, 2, 8, 8 */

static struct {
    const Model *m;
    int T, n, H, QKV, QD, I, V, NH, NKV, HS, n_seg;
    float *x, *xsum, *res, *y, *dy, *dx, *rstd, *qkv, *dqkv, *gu, *dh, *bqkv, *db, *nw, *dnw, *dW, *E, *dE, *cs;
    uint16_t *xnb, *dyb, *dqkvb, *attb, *hb, *gb, *ub, *dgu, *Wqkv, *Wo, *Wgu, *Wd;
    int *tok, *pos, *order, *seg, *key;
    /* the LM head */
    uint16_t *Wl;
    float *dWl, *lse;
    double *logp, *g;
    int *src, *tgt, *lorder, *lseg, *lkey, ln_seg;
    void *work;
    /* the optimizer */
    float *p, *pg, *pm, *pv;
    uint16_t *pb;
    size_t np;
} B;

static uint64_t fill_n;
static void fill(void *p, PcDtype t, size_t n, float lo, float hi) {
    if (pc_fill_uniform(p, t, n, h_seed * 1000003 + ++fill_n, lo, hi)) H_CHECK(0, "pc_fill_uniform: %s", pc_error());
}
static void *dalloc(size_t bytes) { return d_alloc(bytes); }

/* ---- the timed calls ---- */
static int k_embed_fwd(void *c) { (void)c; return pc_embed_forward(B.x, B.E, PC_F32, B.tok, B.T, B.H); }
static int k_embed_bwd(void *c) { (void)c; return pc_embed_backward(B.dE, B.dx, B.order, B.seg, B.key, B.n_seg, B.H); }
static int k_norm(void *c) { (void)c; return pc_rmsnorm_forward(B.xnb, PC_BF16, B.rstd, NULL, B.x, NULL, B.nw, B.T, B.H, 1e-6f); }
static int k_norm_res(void *c) {
    (void)c;
    return pc_rmsnorm_forward(B.xnb, PC_BF16, B.rstd, B.xsum, B.x, B.res, B.nw, B.T, B.H, 1e-6f);
}
static int k_norm_bwd(void *c) { (void)c; return pc_rmsnorm_backward(B.dx, B.dnw, B.dy, B.x, B.nw, B.rstd, B.T, B.H); }
static int k_qkv(void *c) {
    (void)c;
    return pc_linear_forward(B.qkv, PC_F32, B.xnb, B.H, B.Wqkv, B.m->bias ? B.bqkv : NULL, NULL, B.T, B.H, B.QKV, PC_BF16);
}
static int k_rope(void *c) {
    (void)c;
    if (pc_rope_forward(B.qkv, PC_F32, B.QKV, B.pos, B.cs, B.T, B.NH, B.HS)) return -1;
    return pc_rope_forward(B.qkv + B.QD, PC_F32, B.QKV, B.pos, B.cs, B.T, B.NKV, B.HS);
}
static int k_rope_bwd(void *c) {
    (void)c;
    if (pc_rope_backward(B.dqkv, PC_F32, B.QKV, B.pos, B.cs, B.T, B.NH, B.HS)) return -1;
    return pc_rope_backward(B.dqkv + B.QD, PC_F32, B.QKV, B.pos, B.cs, B.T, B.NKV, B.HS);
}
static int k_o(void *c) { (void)c; return pc_linear_forward(B.y, PC_F32, B.attb, B.QD, B.Wo, NULL, B.x, B.T, B.QD, B.H, PC_BF16); }
static int k_gu(void *c) { (void)c; return pc_linear_forward(B.gu, PC_F32, B.xnb, B.H, B.Wgu, NULL, NULL, B.T, B.H, 2 * B.I, PC_BF16); }
static int k_swiglu(void *c) {
    (void)c;
    return pc_swiglu_forward(B.hb, PC_BF16, B.gb, B.ub, B.gu, B.gu + B.I, PC_F32, 2 * B.I, B.T, B.I);
}
static int k_down(void *c) { (void)c; return pc_linear_forward(B.y, PC_F32, B.hb, B.I, B.Wd, NULL, B.x, B.T, B.I, B.H, PC_BF16); }
static int k_down_dx(void *c) { (void)c; return pc_linear_backward(B.dh, 0.0f, NULL, B.dyb, B.hb, B.I, B.Wd, B.T, B.I, B.H, PC_BF16); }
static int k_down_dw(void *c) { (void)c; return pc_linear_backward(NULL, 0.0f, B.dW, B.dyb, B.hb, B.I, B.Wd, B.T, B.I, B.H, PC_BF16); }
static int k_swiglu_bwd(void *c) {
    (void)c;
    return pc_swiglu_backward(B.dgu, B.dgu + B.I, PC_BF16, 2 * B.I, B.dh, B.gb, B.ub, PC_BF16, B.I, B.T, B.I);
}
static int k_gu_dx(void *c) { (void)c; return pc_linear_backward(B.dx, 0.0f, NULL, B.dgu, B.xnb, B.H, B.Wgu, B.T, B.H, 2 * B.I, PC_BF16); }
static int k_gu_dw(void *c) { (void)c; return pc_linear_backward(NULL, 0.0f, B.dW, B.dgu, B.xnb, B.H, B.Wgu, B.T, B.H, 2 * B.I, PC_BF16); }
static int k_o_dx(void *c) { (void)c; return pc_linear_backward(B.dx, 0.0f, NULL, B.dyb, B.attb, B.QD, B.Wo, B.T, B.QD, B.H, PC_BF16); }
static int k_o_dw(void *c) { (void)c; return pc_linear_backward(NULL, 0.0f, B.dW, B.dyb, B.attb, B.QD, B.Wo, B.T, B.QD, B.H, PC_BF16); }
static int k_qkv_dx(void *c) { (void)c; return pc_linear_backward(B.dx, 1.0f, NULL, B.dqkvb, B.xnb, B.H, B.Wqkv, B.T, B.H, B.QKV, PC_BF16); }
static int k_qkv_dw(void *c) { (void)c; return pc_linear_backward(NULL, 0.0f, B.dW, B.dqkvb, B.xnb, B.H, B.Wqkv, B.T, B.H, B.QKV, PC_BF16); }
static int k_bias_bwd(void *c) { (void)c; return pc_bias_backward(B.db, B.dqkv, B.T, B.QKV); }
static int k_to_bf16(void *c) { (void)c; return pc_f32_to_bf16(B.hb, B.dh, (size_t)B.T * B.I); }
static int k_lm_fwd(void *c) {
    (void)c;
    return pc_lmhead_forward(B.logp, B.lse, B.x, B.Wl, PC_BF16, B.src, B.tgt, B.n, B.H, B.V, B.work, NULL);
}
static int k_lm_bwd(void *c) {
    (void)c;
    return pc_lmhead_backward(B.dx, B.dWl, B.g, B.logp, B.lse, B.x, B.Wl, PC_BF16, B.src, B.tgt, B.n, B.H, B.V,
                              B.lorder, B.lseg, B.lkey, B.ln_seg, B.work, NULL);
}
/* a training step's head, forward and backward, with the logits recomputed (keep NULL) or the probabilities kept */
static int k_lm_step(void *keep) {
    return pc_lmhead_forward(B.logp, B.lse, B.x, B.Wl, PC_BF16, B.src, B.tgt, B.n, B.H, B.V, B.work, keep) ||
           pc_lmhead_backward(B.dx, B.dWl, B.g, B.logp, B.lse, B.x, B.Wl, PC_BF16, B.src, B.tgt, B.n, B.H, B.V,
                              B.lorder, B.lseg, B.lkey, B.ln_seg, B.work, keep);
}
static int k_adamw(void *c) {
    (void)c;
    PcAdamW hp = {3, 1e-4, 0.9, 0.999, 1e-8, 0.1};
    return pc_adamw_step(B.p, B.pb, B.pg, B.pm, B.pv, B.np, 0.8f, NULL, 0, 0, &hp);
}
static int k_norm_all(void *c) {
    (void)c;
    return pc_grad_sumsq((double *)B.db, B.pg, B.np);
}

static void timed(const char *kernel, HFn fn, double bytes, double flops) {
    char shape[64];
    snprintf(shape, sizeof shape, "%s T=%d", B.m->name, B.T);
    double ms = h_time(fn, NULL);
    if (flops > 0) h_row(kernel, shape, NULL, ms, h_floor_flops(flops), "bf16 rate");
    else h_row(kernel, shape, NULL, ms, h_floor_bytes(bytes), "bytes/bw");
}

static void write_file(const char *dir, const char *name, const void *dev, size_t bytes) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    void *h = h_malloc(bytes);
    d_down(h, dev, bytes);
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(h, 1, bytes, f) == bytes;
    if (f && fclose(f)) ok = 0;
    H_CHECK(ok, "bench: cannot write %s", path);
    free(h);
}

static void bench_model(const Model *m, const char *dump, FILE *meta, int first) {
    memset(&B, 0, sizeof B);
    B.m = m;
    int T = LISTS * (P_LEN + K_RESP * R_LEN), n = LISTS * K_RESP * R_LEN, H = m->H, I = m->I, V = m->V;
    int QD = m->NH * m->HS, QKV = (m->NH + 2 * m->NKV) * m->HS, HS = m->HS;
    B.T = T, B.n = n, B.H = H, B.I = I, B.V = V, B.QD = QD, B.QKV = QKV, B.NH = m->NH, B.NKV = m->NKV, B.HS = HS;
    size_t TH = (size_t)T * H, TI = (size_t)T * I, TQ = (size_t)T * QKV;
    size_t wide = TI > TQ ? TI : TQ, wmax = (size_t)2 * I * H > (size_t)QKV * H ? (size_t)2 * I * H : (size_t)QKV * H;
    B.x = dalloc(TH * 4), B.xsum = dalloc(TH * 4), B.res = dalloc(TH * 4), B.y = dalloc(TH * 4), B.dy = dalloc(TH * 4);
    B.dx = dalloc((size_t)T * (H > QD ? H : QD) * 4), B.rstd = dalloc((size_t)T * 4), B.qkv = dalloc(TQ * 4), B.dqkv = dalloc(TQ * 4);
    B.gu = dalloc(2 * TI * 4), B.dh = dalloc(wide * 4), B.bqkv = dalloc((size_t)QKV * 4), B.db = dalloc((size_t)QKV * 4 + 64);
    B.nw = dalloc((size_t)H * 4), B.dnw = dalloc((size_t)H * 4), B.dW = dalloc(wmax * 4);
    B.xnb = dalloc(TH * 2), B.dyb = dalloc(TH * 2), B.dqkvb = dalloc(TQ * 2), B.attb = dalloc((size_t)T * QD * 2);
    B.hb = dalloc(TI * 2), B.gb = dalloc(TI * 2), B.ub = dalloc(TI * 2), B.dgu = dalloc(2 * TI * 2);
    B.Wqkv = dalloc((size_t)QKV * H * 2), B.Wo = dalloc((size_t)H * QD * 2), B.Wgu = dalloc((size_t)2 * I * H * 2);
    B.Wd = dalloc((size_t)H * I * 2), B.E = dalloc((size_t)V * H * 4), B.dE = dalloc((size_t)V * H * 4);
    B.cs = dalloc((size_t)(P_LEN + R_LEN) * HS * 4);
    fill(B.x, PC_F32, TH, -1, 1), fill(B.res, PC_F32, TH, -1, 1), fill(B.dy, PC_F32, TH, -1, 1);
    fill(B.dx, PC_F32, (size_t)T * (H > QD ? H : QD), -1, 1), fill(B.dyb, PC_BF16, TH, -1, 1), fill(B.dqkv, PC_F32, TQ, -1, 1);
    fill(B.dqkvb, PC_BF16, TQ, -1, 1), fill(B.attb, PC_BF16, (size_t)T * QD, -1, 1), fill(B.xnb, PC_BF16, TH, -1, 1);
    fill(B.gu, PC_F32, 2 * TI, -3, 3), fill(B.dh, PC_F32, wide, -1, 1), fill(B.bqkv, PC_F32, QKV, -1, 1);
    fill(B.nw, PC_F32, H, 0.5f, 1.5f), fill(B.dnw, PC_F32, H, -1, 1), fill(B.dW, PC_F32, wmax, -1, 1);
    fill(B.db, PC_F32, QKV, -1, 1);
    fill(B.Wqkv, PC_BF16, (size_t)QKV * H, -0.05f, 0.05f), fill(B.Wo, PC_BF16, (size_t)H * QD, -0.05f, 0.05f);
    fill(B.Wgu, PC_BF16, (size_t)2 * I * H, -0.05f, 0.05f), fill(B.Wd, PC_BF16, (size_t)H * I, -0.05f, 0.05f);
    fill(B.E, PC_F32, (size_t)V * H, -1, 1), fill(B.dE, PC_F32, (size_t)V * H, -1, 1);
    fill(B.cs, PC_F32, (size_t)(P_LEN + R_LEN) * HS, -1, 1);
    /* tokens (half from 1000 frequent ids), positions and the scatter plan */
    int *tok = h_malloc(sizeof(int) * T), *pos = h_malloc(sizeof(int) * T), t = 0;
    int *src = h_malloc(sizeof(int) * n), *tgt = h_malloc(sizeof(int) * n), i = 0;
    for (int l = 0; l < LISTS; l++) {
        int p0 = t;
        for (int j = 0; j < P_LEN; j++, t++) pos[t] = j;
        for (int k = 0; k < K_RESP; k++)
            for (int j = 0; j < R_LEN; j++, t++, i++) {
                pos[t] = P_LEN + j;
                src[i] = j ? t - 1 : p0 + P_LEN - 1;
                tgt[i] = h_randint(V);
            }
    }
    for (t = 0; t < T; t++) tok[t] = h_randint(2) ? h_randint(1000) : h_randint(V);
    int *order = h_malloc(sizeof(int) * (T > n ? T : n)), *seg = h_malloc(sizeof(int) * ((T > n ? T : n) + 1));
    int *key = h_malloc(sizeof(int) * (T > n ? T : n));
    B.n_seg = pc_scatter_plan(order, seg, key, tok, T);
    B.tok = d_clone(tok, sizeof(int) * T), B.pos = d_clone(pos, sizeof(int) * T);
    B.order = d_clone(order, sizeof(int) * T), B.seg = d_clone(seg, sizeof(int) * (B.n_seg + 1));
    B.key = d_clone(key, sizeof(int) * B.n_seg);
    B.ln_seg = pc_scatter_plan(order, seg, key, src, n);
    B.lorder = d_clone(order, sizeof(int) * n), B.lseg = d_clone(seg, sizeof(int) * (B.ln_seg + 1));
    B.lkey = d_clone(key, sizeof(int) * B.ln_seg), B.src = d_clone(src, sizeof(int) * n), B.tgt = d_clone(tgt, sizeof(int) * n);

    double th = (double)TH, ti = (double)TI, tq = (double)TQ;
    timed("embed_fwd", k_embed_fwd, th * 8, 0);
    timed("embed_bwd", k_embed_bwd, th * 4 + (double)B.n_seg * H * 8, 0);
    timed("rmsnorm_fwd ->bf16", k_norm, th * 6 + T * 4.0, 0);
    timed("rmsnorm_fwd +res ->bf16", k_norm_res, th * 14 + T * 4.0, 0);
    timed("rmsnorm_bwd", k_norm_bwd, th * 16 + T * 4.0, 0);
    timed(m->bias ? "qkv_fwd +bias" : "qkv_fwd", k_qkv, 0, 2.0 * T * H * QKV);
    timed("rope_fwd q+k", k_rope, 8.0 * T * (m->NH + m->NKV) * HS, 0);
    timed("o_fwd +res", k_o, 0, 2.0 * T * QD * H);
    timed("gate_up_fwd", k_gu, 0, 2.0 * T * H * 2 * I);
    timed("swiglu_fwd ->bf16 +keep", k_swiglu, ti * 14, 0);
    timed("down_fwd +res", k_down, 0, 2.0 * T * I * H);
    timed("down_bwd dx", k_down_dx, 0, 2.0 * T * I * H);
    timed("down_bwd dW+=", k_down_dw, 0, 2.0 * T * I * H);
    timed("swiglu_bwd ->bf16", k_swiglu_bwd, ti * 12, 0);
    timed("gate_up_bwd dx", k_gu_dx, 0, 2.0 * T * H * 2 * I);
    timed("gate_up_bwd dW+=", k_gu_dw, 0, 2.0 * T * H * 2 * I);
    timed("o_bwd dx", k_o_dx, 0, 2.0 * T * QD * H);
    timed("o_bwd dW+=", k_o_dw, 0, 2.0 * T * QD * H);
    timed("rope_bwd q+k", k_rope_bwd, 8.0 * T * (m->NH + m->NKV) * HS, 0);
    timed("qkv_bwd dx+=", k_qkv_dx, 0, 2.0 * T * H * QKV);
    timed("qkv_bwd dW+=", k_qkv_dw, 0, 2.0 * T * H * QKV);
    if (m->bias) timed("bias_bwd", k_bias_bwd, tq * 4, 0);
    timed("f32_to_bf16 [T,I]", k_to_bf16, ti * 6, 0);
    /* the big activations go before the LM head and the optimizer */
    float **fr[] = {&B.xsum, &B.res, &B.y, &B.dy, &B.qkv, &B.dqkv, &B.gu, &B.dh, &B.E, &B.dE};
    for (size_t j = 0; j < sizeof fr / sizeof fr[0]; j++) d_free(*fr[j]), *fr[j] = NULL;
    uint16_t **fb[] = {&B.xnb, &B.dyb, &B.dqkvb, &B.attb, &B.hb, &B.gb, &B.ub, &B.dgu, &B.Wqkv, &B.Wo, &B.Wgu, &B.Wd};
    for (size_t j = 0; j < sizeof fb / sizeof fb[0]; j++) d_free(*fb[j]), *fb[j] = NULL;

    /* the LM head */
    B.Wl = dalloc((size_t)V * H * 2), B.dWl = dalloc((size_t)V * H * 4), B.lse = dalloc((size_t)n * 4);
    B.logp = dalloc((size_t)n * 8), B.g = dalloc((size_t)n * 8);
    B.work = dalloc(pc_lmhead_work(n, H, V, PC_BF16));
    fill(B.Wl, PC_BF16, (size_t)V * H, -0.05f, 0.05f), fill(B.dWl, PC_F32, (size_t)V * H, -1, 1);
    double *gh = h_malloc(sizeof(double) * n);
    for (int j = 0; j < n; j++) gh[j] = 0.1 + h_unit();
    d_up(B.g, gh, sizeof(double) * n);
    double fl = 2.0 * n * (double)V * H;
    char shape[64];
    snprintf(shape, sizeof shape, "%s n=%d V=%d", m->name, n, V);
    double fwd = h_time(k_lm_fwd, NULL);
    h_row("lmhead_fwd", shape, NULL, fwd, h_floor_flops(fl), "bf16 rate");
    double bwd = h_time(k_lm_bwd, NULL);
    h_row("lmhead_bwd", shape, NULL, bwd, h_floor_flops(3 * fl), "bf16 rate");
    h_row("lmhead_step (fwd + bwd)", shape, NULL, h_time(k_lm_step, NULL), h_floor_flops(4 * fl), "bf16 rate");
    size_t kb = pc_lmhead_keep_bytes(n, V, PC_BF16);
    void *keep = kb ? dalloc(kb) : NULL;
    if (keep) h_row("lmhead_step kept probs", shape, NULL, h_time(k_lm_step, keep), h_floor_flops(3 * fl), "bf16 rate");
    d_free(keep);
    /* the chunks' shape: the default (up to 512 MB of float32 logits a chunk, through memory) against chunks whose
     * logits can stay in the L2 cache (64 and 16 MB) */
    static const int chunk[][2] = {{4096, 4096}, {2048, 2048}};
    const size_t wdef = pc_lmhead_work(n, H, V, PC_BF16); /* B.work's size */
    for (size_t c = 0; c < sizeof chunk / sizeof chunk[0]; c++) {
        pc_lmhead_set_chunks(chunk[c][0], chunk[c][1]);
        size_t kc = pc_lmhead_keep_bytes(n, V, PC_BF16);
        void *kp = kc ? dalloc(kc) : NULL;
        char name[64];
        snprintf(name, sizeof name, "lmhead_step kept %dx%d", chunk[c][0], chunk[c][1]);
        if (kp && pc_lmhead_work(n, H, V, PC_BF16) <= wdef)
            h_row(name, shape, NULL, h_time(k_lm_step, kp), h_floor_flops(3 * fl), "bf16 rate");
        d_free(kp);
    }
    pc_lmhead_set_chunks(0, 0);
    double *lp = h_malloc(sizeof(double) * n);
    H_TRY(k_lm_fwd(NULL));
    d_down(lp, B.logp, sizeof(double) * n);
    int finite = 1;
    for (int j = 0; j < n; j++) finite = finite && isfinite(lp[j]) && lp[j] <= 0;
    H_CHECK(finite, "bench %s: an LM-head log-prob is not finite and <= 0", m->name);
    if (dump && meta) {
        fprintf(meta, "%s{\"name\": \"%s\", \"n\": %d, \"T\": %d, \"H\": %d, \"V\": %d, \"ours_fwd_ms\": %.4f, "
                      "\"ours_bwd_ms\": %.4f, \"files\": %s}",
                first ? "" : ",\n  ", m->name, n, T, H, V, fwd, bwd, first ? "true" : "false");
        if (first) { /* Qwen2-0.5B's inputs and log-probs */
            write_file(dump, "x.f32", B.x, TH * 4);
            write_file(dump, "W.bf16", B.Wl, (size_t)V * H * 2);
            write_file(dump, "src.i32", B.src, (size_t)n * 4);
            write_file(dump, "tgt.i32", B.tgt, (size_t)n * 4);
            write_file(dump, "g.f64", B.g, (size_t)n * 8);
            write_file(dump, "logp.f64", B.logp, (size_t)n * 8);
        }
    }
    d_free(B.Wl), d_free(B.dWl), d_free(B.work), d_free(B.lse), d_free(B.logp), d_free(B.g);

    /* the optimizer over all parameters (float32 master, moments, bf16 copy) */
    if (m->params > 0) {
        B.np = (size_t)m->params;
        B.p = dalloc(B.np * 4), B.pg = dalloc(B.np * 4), B.pm = dalloc(B.np * 4), B.pv = dalloc(B.np * 4);
        B.pb = dalloc(B.np * 2);
        fill(B.p, PC_F32, B.np, -1, 1), fill(B.pg, PC_F32, B.np, -1, 1), fill(B.pm, PC_F32, B.np, -0.1f, 0.1f);
        fill(B.pv, PC_F32, B.np, 0.0f, 0.01f);
        snprintf(shape, sizeof shape, "%s %.0fM params", m->name, m->params / 1e6);
        h_row("adamw +bf16 copy", shape, NULL, h_time(k_adamw, NULL), h_floor_bytes(30.0 * B.np), "bytes/bw");
        h_row("grad_norm", shape, NULL, h_time(k_norm_all, NULL), h_floor_bytes(4.0 * B.np), "bytes/bw");
        d_free(B.p), d_free(B.pg), d_free(B.pm), d_free(B.pv), d_free(B.pb);
    }
    float **fr2[] = {&B.x, &B.dx, &B.rstd, &B.bqkv, &B.db, &B.nw, &B.dnw, &B.dW, &B.cs};
    for (size_t j = 0; j < sizeof fr2 / sizeof fr2[0]; j++) d_free(*fr2[j]);
    int **fi[] = {&B.tok, &B.pos, &B.order, &B.seg, &B.key, &B.lorder, &B.lseg, &B.lkey, &B.src, &B.tgt};
    for (size_t j = 0; j < sizeof fi / sizeof fi[0]; j++) d_free(*fi[j]);
    free(tok), free(pos), free(src), free(tgt), free(order), free(seg), free(key), free(gh), free(lp);
}

void b_models(const char *dump, int tiny) {
    /* Qwen2-0.5B: 494,032,768 parameters (tied head); Llama-3.1-8B: its 8.03e9 would need 128 GB for float32
     * AdamW: the optimizer is timed on one layer's 218,112,000 (LoRA trains far fewer) */
    static const Model models[] = {
        {"qwen2-0.5b", 896, 14, 2, 64, 4864, 151936, 1, 494032768.0},
        {"llama3.1-8b", 4096, 32, 8, 128, 14336, 128256, 0, 218112000.0},
    };
    /* tiny: the same code on toy shapes (the CPU stand-in's check of this file's logic) */
    static const Model toys[] = {
        {"tiny-a", 64, 4, 2, 16, 96, 1000, 1, 100000.0},
        {"tiny-b", 128, 4, 4, 32, 160, 777, 0, 50000.0},
    };
    const Model *ms = tiny ? toys : models;
    if (tiny) LISTS = 1, K_RESP = 2, P_LEN = 8, R_LEN = 8;
    FILE *meta = NULL;
    if (dump) {
        char path[1024];
        snprintf(path, sizeof path, "%s/meta.json", dump);
        meta = fopen(path, "w");
        H_CHECK(meta != NULL, "bench: cannot write %s", path);
        if (meta) fprintf(meta, "{\"lists\": %d, \"K\": %d, \"P\": %d, \"R\": %d, \"models\": [\n  ", LISTS, K_RESP, P_LEN, R_LEN);
    }
    char title[160];
    snprintf(title, sizeof title, "kernel benchmark: %d lists x (%d prompt + %d x %d response tokens), bf16 products", LISTS,
             P_LEN, K_RESP, R_LEN);
    h_table_header(title);
    for (size_t i = 0; i < 2; i++) bench_model(&ms[i], dump, meta, i == 0);
    if (meta) {
        fprintf(meta, "]}\n");
        H_CHECK(fclose(meta) == 0, "bench: cannot write meta.json");
    }
}
