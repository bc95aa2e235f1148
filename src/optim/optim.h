/* optim.h: AdamW over the flat parameter buffer (torch.optim.AdamW's update,
 * decoupled weight decay on matrices only), the learning-rate schedules of
 * transformers (warm-up, then cosine, linear or constant), and global L2
 * gradient clipping. */
#ifndef PPA_OPTIM_H
#define PPA_OPTIM_H

#include <stddef.h>

#include "core/span.h"

typedef struct {
    double beta1, beta2, eps, weight_decay; /* 0.9, 0.999, 1e-8, 0 */
} AdamWConfig;

typedef struct {
    size_t n;
    float *m, *v; /* [n] moments */
    long step;
} AdamW;

void adamw_init(AdamW *a, size_t n);
void adamw_free(AdamW *a);
/* One step on the gradient g = grad_scale * grads (the clipping factor
 * applied on the fly, in float32 as torch's in-place clip does: one pass over
 * the buffers instead of two): p -= lr (m^ / (sqrt(v^) + eps) + wd p) with
 * decay only inside decay's spans (NULL: everywhere). params, grads and the
 * moments are elements [base, base + a->n) of the flat buffer (a ZeRO-1
 * share; 0 otherwise), which decay's spans are counted in. */
void adamw_step(AdamW *a, float *params, const float *grads, float grad_scale, const Spans *decay, size_t base,
                double lr, const AdamWConfig *c);

typedef enum { SCHEDULE_COSINE, SCHEDULE_LINEAR, SCHEDULE_CONSTANT } Schedule;
int schedule_parse(const char *name, Schedule *out); /* 0, or -1 if unknown */
/* lr at optimizer step `step` (0-based) of `total`, after `warmup` linear warm-up steps */
double schedule_lr(Schedule s, double peak, long step, long warmup, long total);

/* The L2 norm of g [n], in double, the same bits at any thread count. */
double grad_norm(const float *g, size_t n);
/* the index of the first NaN or infinity of x [n], or -1 (weights are checked before every save) */
long first_nonfinite(const float *x, size_t n);
/* torch's clip_grad_norm_ factor: max_norm / (norm + 1e-6) when norm >
 * max_norm, else 1 (and 1 when max_norm <= 0: no clipping). */
float clip_scale(double norm, double max_norm);
/* Scales g in place by clip_scale; returns the norm before clipping. */
double clip_grad_norm(float *g, size_t n, double max_norm);

#endif
