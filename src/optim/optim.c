/* optim.c: AdamW, schedules and clipping (optim.h). */
#include "optim/optim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"

void adamw_init(AdamW *a, size_t n) {
    a->n = n;
    a->m = xcalloc(n ? n : 1, sizeof(float));
    a->v = xcalloc(n ? n : 1, sizeof(float));
    a->step = 0;
}

void adamw_free(AdamW *a) {
    free(a->m);
    free(a->v);
    memset(a, 0, sizeof *a);
}

/* elements [i0, i1) of one step; shrink 1 where no decay applies */
static void adamw_range(AdamW *a, float *params, const float *grads, float grad_scale, size_t i0, size_t i1,
                        float shrink, float b1, float b2, float step_size, float sq_bc2, float eps) {
    /* one pass over p, g, m, v: the step is memory-bound */
#pragma omp parallel for simd schedule(static)
    for (size_t i = i0; i < i1; i++) {
        float g = grad_scale == 1.0f ? grads[i] : grads[i] * grad_scale, p = params[i] * shrink;
        float m = a->m[i] = b1 * a->m[i] + (1.0f - b1) * g;
        float v = a->v[i] = b2 * a->v[i] + (1.0f - b2) * g * g;
        params[i] = p - step_size * m / (sqrtf(v) / sq_bc2 + eps);
    }
}

void adamw_step(AdamW *a, float *params, const float *grads, float grad_scale, const Spans *decay, size_t base,
                double lr, const AdamWConfig *c) {
    a->step++;
    double bc1 = 1.0 - pow(c->beta1, (double)a->step), bc2 = 1.0 - pow(c->beta2, (double)a->step);
    float b1 = (float)c->beta1, b2 = (float)c->beta2, step_size = (float)(lr / bc1), sq_bc2 = (float)sqrt(bc2);
    float eps = (float)c->eps, shrink = (float)(1.0 - lr * c->weight_decay);
    /* [0, n) in runs of constant decay: x 1 is exact, so a run without decay is the old mask's 0 */
    int s = 0;
    for (size_t i = 0; i < a->n;) {
        size_t at = base + i, end = a->n;
        int on = !decay;
        if (decay) {
            while (s < decay->n && decay->s[s].hi <= at) s++;
            if (s < decay->n && decay->s[s].lo <= at) on = 1, end = decay->s[s].hi - base;
            else if (s < decay->n) end = decay->s[s].lo - base;
            end = end < a->n ? end : a->n;
        }
        adamw_range(a, params, grads, grad_scale, i, end, on ? shrink : 1.0f, b1, b2, step_size, sq_bc2, eps);
        i = end;
    }
}

int schedule_parse(const char *name, Schedule *out) {
    if (!strcmp(name, "cosine")) *out = SCHEDULE_COSINE;
    else if (!strcmp(name, "linear")) *out = SCHEDULE_LINEAR;
    else if (!strcmp(name, "constant")) *out = SCHEDULE_CONSTANT;
    else return -1;
    return 0;
}

double schedule_lr(Schedule s, double peak, long step, long warmup, long total) {
    if (step < warmup) return peak * (double)step / (double)warmup;
    if (s == SCHEDULE_CONSTANT || total <= warmup) return peak;
    double progress = (double)(step - warmup) / (double)(total - warmup);
    if (s == SCHEDULE_LINEAR) return peak * fmax(0.0, 1.0 - progress);
    return peak * 0.5 * (1.0 + cos(M_PI * progress));
}

/* The sum of squares in fixed blocks (each with 8 partial sums, in double),
 * the block sums added in order: the same bits whatever the thread count,
 * and no serial dependency chain over the whole buffer. */
#define CLIP_BLOCK 16384

static double block_sumsq(const float *g, size_t n) {
    double acc[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) acc[j] += (double)g[i + j] * g[i + j];
    for (; i < n; i++) acc[0] += (double)g[i] * g[i];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

double grad_norm(const float *g, size_t n) {
    size_t nb = (n + CLIP_BLOCK - 1) / CLIP_BLOCK;
    double *part = xmalloc(sizeof(double) * (nb ? nb : 1)), ss = 0.0;
#pragma omp parallel for schedule(static)
    for (size_t b = 0; b < nb; b++) {
        size_t lo = b * CLIP_BLOCK, len = n - lo < CLIP_BLOCK ? n - lo : CLIP_BLOCK;
        part[b] = block_sumsq(g + lo, len);
    }
    for (size_t b = 0; b < nb; b++) ss += part[b];
    free(part);
    return sqrt(ss);
}

float clip_scale(double norm, double max_norm) {
    return max_norm > 0 && norm > max_norm ? (float)(max_norm / (norm + 1e-6)) : 1.0f;
}

double clip_grad_norm(float *g, size_t n, double max_norm) {
    double norm = grad_norm(g, n);
    float f = clip_scale(norm, max_norm);
    if (f != 1.0f) {
#pragma omp parallel for simd schedule(static)
        for (size_t i = 0; i < n; i++) g[i] *= f;
    }
    return norm;
}

long first_nonfinite(const float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return (long)i;
    return -1;
}
