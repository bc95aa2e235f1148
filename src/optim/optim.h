/* optim.h: AdamW over the flat parameter buffer (torch.optim.AdamW's update,
 * decoupled weight decay on matrices only), the learning-rate schedules of
 * transformers (warm-up, then cosine, linear or constant), and global L2
 * gradient clipping. */
#ifndef PPA_OPTIM_H
#define PPA_OPTIM_H

#include <stddef.h>

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
/* One step: p -= lr (m^ / (sqrt(v^) + eps) + wd p) with decay only where decay[i];
 * decay: [n] 1 for matrices, 0 for norms and biases (may be NULL: all decay). */
void adamw_step(AdamW *a, float *params, const float *grads, const unsigned char *decay, double lr,
                const AdamWConfig *c);

typedef enum { SCHEDULE_COSINE, SCHEDULE_LINEAR, SCHEDULE_CONSTANT } Schedule;
int schedule_parse(const char *name, Schedule *out); /* 0, or -1 if unknown */
/* lr at optimizer step `step` (0-based) of `total`, after `warmup` linear warm-up steps */
double schedule_lr(Schedule s, double peak, long step, long warmup, long total);

/* Scales g to L2 norm max_norm when it is larger (torch's clip_grad_norm_:
 * factor max_norm / (norm + 1e-6)); returns the norm before clipping.
 * max_norm <= 0: no clipping. */
double clip_grad_norm(float *g, size_t n, double max_norm);

#endif
