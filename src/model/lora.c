/* lora.c: LoRA adapters on the model's linear layers (lora.h): the buffer
 * and its layout, PEFT's initialisation, the forward and backward terms the
 * passes add to each target product, dropout masks from a key, and the
 * adapter read from and written to PEFT's folder (through hf/adapter.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "core/rng.h"
#include "kernels/gemm.h"
#include "model/internal.h"

static int check_spec(const Model *m, const LoraSpec *s, char *err, size_t errlen) {
    if (m->lora) return snprintf(err, errlen, "the model has an adapter already"), -1;
    if (s->r < 1) return snprintf(err, errlen, "LoRA rank r must be at least 1, found %d", s->r), -1;
    if (!(s->alpha > 0) || !isfinite(s->alpha))
        return snprintf(err, errlen, "lora_alpha must be positive, found %g", s->alpha), -1;
    if (!(s->dropout >= 0 && s->dropout < 1))
        return snprintf(err, errlen, "lora_dropout must be in [0, 1), found %g", s->dropout), -1;
    if (!s->targets || s->targets & ~LORA_ALL_TARGETS) return snprintf(err, errlen, "no LoRA target modules"), -1;
    for (int k = 0; k < LORA_N_TARGETS; k++) {
        int out, in;
        lora_dims(&m->c, k, &out, &in);
        if (s->targets & 1u << k && (s->r > in || s->r > out))
            return snprintf(err, errlen, "LoRA rank %d is larger than %s [%d, %d]", s->r, LORA_TARGETS[k], out, in), -1;
    }
    return 0;
}

static Lora *lora_new(Model *m, const LoraSpec *s) {
    int L = m->c.num_hidden_layers;
    Lora *a = xcalloc(1, sizeof *a);
    a->s = *s, a->scale = (float)lora_scale(s), a->enabled = 1;
    a->off = xmalloc(sizeof(size_t) * (size_t)(7 * (L ? L : 1)));
    for (int l = 0; l < L; l++)
        for (int k = 0; k < LORA_N_TARGETS; k++) {
            int out, in;
            lora_dims(&m->c, k, &out, &in);
            a->off[7 * l + k] = s->targets & 1u << k ? a->n : NO_OFFSET;
            if (s->targets & 1u << k) a->n += (size_t)s->r * (size_t)(in + out);
        }
    a->params = xcalloc(a->n ? a->n : 1, sizeof(float));
    return a;
}

int model_lora_attach(Model *m, const LoraSpec *s, const float *values, char *err, size_t errlen) {
    if (check_spec(m, s, err, errlen)) return -1;
    m->lora = lora_new(m, s);
    memcpy(m->lora->params, values, sizeof(float) * m->lora->n);
    return 0;
}

int model_lora_new(Model *m, const LoraSpec *s, uint64_t seed, char *err, size_t errlen) {
    if (check_spec(m, s, err, errlen)) return -1;
    Lora *a = m->lora = lora_new(m, s);
    PpaRng rng;
    rng_seed(&rng, seed ^ 0x4c6f5241ull); /* "LoRA": a stream of its own, apart from the data order's */
    for (int l = 0; l < m->c.num_hidden_layers; l++)
        for (int k = 0; k < LORA_N_TARGETS; k++) {
            if (a->off[7 * l + k] == NO_OFFSET) continue;
            int out, in;
            lora_dims(&m->c, k, &out, &in);
            float *A = a->params + a->off[7 * l + k], bound = (float)(1.0 / sqrt((double)in));
            for (size_t i = 0; i < (size_t)s->r * in; i++) A[i] = (float)((2.0 * rng_uniform(&rng) - 1.0) * bound);
            /* B, after A, stays 0: the adapted model starts as its base */
        }
    return 0;
}

const LoraSpec *model_lora(const Model *m) { return m->lora ? &m->lora->s : NULL; }
void model_lora_enable(Model *m, int on) {
    if (m->lora) m->lora->enabled = on != 0;
}
int model_lora_enabled(const Model *m) { return m->lora && m->lora->enabled; }
void model_lora_dropout(Model *m, int on, uint64_t key) {
    if (m->lora) m->lora->drop_on = on != 0, m->lora->drop_key = key;
}
int model_lora_dropping(const Model *m, uint64_t *key) {
    if (!m->lora || !m->lora->drop_on || !(m->lora->s.dropout > 0)) return 0;
    *key = m->lora->drop_key;
    return 1;
}

LoraView model_lora_view(Model *m, int l, int k) {
    Lora *a = m->lora;
    LoraView v = {0};
    if (!a || a->off[7 * l + k] == NO_OFFSET) return v;
    lora_dims(&m->c, k, &v.out, &v.in);
    v.r = a->s.r, v.scale = a->scale;
    v.A = a->params + a->off[7 * l + k], v.B = v.A + (size_t)v.r * v.in;
    if (a->grads) v.dA = a->grads + a->off[7 * l + k], v.dB = v.dA + (size_t)v.r * v.in;
    return v;
}

void lora_free(Lora *a) {
    if (!a) return;
    free(a->off), free(a->params), free(a->grads), free(a->work);
    free(a);
}

/* ---- the passes ---- */

static float *work(Lora *a, size_t n) {
    if (n > a->work_n) {
        free(a->work);
        a->work = xmalloc(sizeof(float) * n);
        a->work_n = n;
    }
    return a->work;
}

/* 1/(1-p) or 0 for element i of row t of target (l, k): a pure function of the key and the place */
static float keep(const Lora *a, int l, int k, size_t t, size_t i, size_t in) {
    uint64_t z = a->drop_key ^ ((uint64_t)(7 * l + k) << 48) ^ (t * in + i) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull; /* splitmix64's finaliser */
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    double u = (double)(z >> 11) * 0x1.0p-53;
    return u < a->s.dropout ? 0.0f : (float)(1.0 / (1.0 - a->s.dropout));
}

/* the input as A sees it, [T, in]: x itself, or widened from bf16 and / or dropped out into buf */
static const float *input(const Lora *a, int l, int k, Act x, int T, int in, float *buf) {
    int drop = a->drop_on && a->s.dropout > 0;
    if (x.f && !drop) return x.f;
#pragma omp parallel for schedule(static)
    for (int t = 0; t < T; t++)
        for (int i = 0; i < in; i++) {
            size_t at = (size_t)t * in + i;
            float v = x.f ? x.f[at] : bf16_f32(x.b[at]);
            buf[at] = drop ? v * keep(a, l, k, (size_t)t, (size_t)i, (size_t)in) : v;
        }
    return buf;
}

int lora_active(const Model *m, int l, int k) {
    return m->lora && m->lora->enabled && m->lora->off[7 * l + k] != NO_OFFSET;
}

void lora_forward(Model *m, int l, int k, float *y, Act x, int T) {
    if (!lora_active(m, l, k) || !T) return;
    LoraView v = model_lora_view(m, l, k);
    float *xb = work(m->lora, (size_t)T * (v.in + v.r)), *u = xb + (size_t)T * v.in;
    const float *xin = input(m->lora, l, k, x, T, v.in, xb);
    m->dev->gemm_rows(T, v.r, v.in, xin, v.in, v.A, v.in, 0.0f, u, v.r); /* u = x A^T, row-invariant like the base */
    for (size_t i = 0; i < (size_t)T * v.r; i++) u[i] *= v.scale;
    m->dev->gemm_rows(T, v.out, v.r, u, v.r, v.B, v.r, 1.0f, y, v.out); /* y += (s u) B^T */
}

void lora_backward(Model *m, int l, int k, float *dx, const float *dy, Act x, int T) {
    if (!lora_active(m, l, k) || !T) return;
    LoraView v = model_lora_view(m, l, k);
    size_t TI = (size_t)T * v.in, TR = (size_t)T * v.r;
    float *xb = work(m->lora, 2 * TI + 2 * TR), *u = xb + TI, *du = u + TR, *dxl = du + TR;
    const float *xin = input(m->lora, l, k, x, T, v.in, xb);
    m->dev->gemm_rows(T, v.r, v.in, xin, v.in, v.A, v.in, 0.0f, u, v.r);                  /* u = x A^T, as the forward's */
    m->dev->gemm(1, 0, v.out, v.r, T, v.scale, dy, v.out, u, v.r, 1.0f, v.dB, v.r);       /* dB += s dy^T u */
    m->dev->gemm(0, 0, T, v.r, v.out, v.scale, dy, v.out, v.B, v.r, 0.0f, du, v.r);       /* du = s dy B */
    m->dev->gemm(1, 0, v.r, v.in, T, 1.0f, du, v.r, xin, v.in, 1.0f, v.dA, v.in);         /* dA += du^T x */
    if (!(m->lora->drop_on && m->lora->s.dropout > 0)) {
        m->dev->gemm(0, 0, T, v.in, v.r, 1.0f, du, v.r, v.A, v.in, 1.0f, dx, v.in); /* dx += du A */
        return;
    }
    m->dev->gemm(0, 0, T, v.in, v.r, 1.0f, du, v.r, v.A, v.in, 0.0f, dxl, v.in); /* through the same mask */
#pragma omp parallel for schedule(static)
    for (int t = 0; t < T; t++)
        for (int i = 0; i < v.in; i++)
            dx[(size_t)t * v.in + i] += dxl[(size_t)t * v.in + i] * keep(m->lora, l, k, (size_t)t, (size_t)i, (size_t)v.in);
}

/* ---- PEFT's folder (hf/adapter.h) ---- */

int lora_load(Model *m, const char *dir, char *err, size_t errlen) {
    LoraSpec s;
    float *values;
    if (adapter_read(&m->c, dir, &s, &values, err, errlen)) return -1;
    char msg[1024];
    int rc = model_lora_attach(m, &s, values, msg, sizeof msg);
    if (rc) snprintf(err, errlen, "%s: %s", dir, msg);
    free(values);
    return rc;
}

int lora_save(const Model *m, const char *dir, const char *tokenizer_dir, char *err, size_t errlen) {
    return adapter_write(dir, &m->c, &m->lora->s, m->lora->params, m->dir, tokenizer_dir, err, errlen);
}

int lora_save_grads(const Model *m, const char *path, char *err, size_t errlen) {
    float *g = m->lora->grads ? m->lora->grads : xcalloc(m->lora->n ? m->lora->n : 1, sizeof(float));
    int rc = adapter_write_tensors(path, &m->c, &m->lora->s, g, err, errlen);
    if (g != m->lora->grads) free(g);
    return rc;
}
