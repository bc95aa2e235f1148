/* gpu_engine.c: the GPU's engines as a model's ForwardEngine (model.h): a GpuModel (scoring and decoding: every
 * call one of gpu_model.h's or gpu_decode.h's) and a GpuTrain (every call one of gpu_train.h's, the scoring calls a
 * forward that keeps nothing). */
#include <stdio.h>

#include "gpu/gpu_decode.h"
#include "gpu/gpu_model.h"
#include "gpu/gpu_train.h"

/* ---- a GpuModel ---- */

static int gpu_logps(void *g, const Row *rows, int n, double *logps, int *n_scored, char *err, size_t errlen) {
    return gpu_forward_logps(g, rows, n, logps, n_scored, err, errlen);
}
static int gpu_rewards(void *g, const Row *rows, int n, double *rewards, char *err, size_t errlen) {
    return gpu_forward_rewards(g, rows, n, rewards, err, errlen);
}
static void gpu_free(void *g) { gpu_model_free(g); }
static void *dec_new(void *g, int n_seq, int max_len, char *err, size_t errlen) {
    return gpu_decoder_new(g, n_seq, max_len, err, errlen);
}
static void dec_free(void *d) { gpu_decoder_free(d); }
static int dec_prefill(void *d, const int *seq, const int *const *ids, const int *n, int np, float *logits,
                       char *err, size_t errlen) {
    return gpu_decoder_prefill(d, seq, ids, n, np, logits, err, errlen);
}
static int dec_fork(void *d, int src, int dst, int count, int len, char *err, size_t errlen) {
    return gpu_decoder_fork(d, src, dst, count, len, err, errlen);
}
static int dec_drop(void *d, int seq, char *err, size_t errlen) { return gpu_decoder_drop(d, seq, err, errlen); }
static int dec_step(void *d, const int *tok, const int *seq, const int *pos, int n, float *logits, char *err,
                    size_t errlen) {
    return gpu_decoder_step(d, tok, seq, pos, n, logits, err, errlen);
}
static int dec_sampler(void *d, double t, int top_k, double top_p, const int *banned, int n_banned, char *err,
                       size_t errlen) {
    return gpu_decoder_sampler(d, t, top_k, top_p, banned, n_banned, err, errlen);
}
static int dec_sample(void *d, const int *seq, const uint64_t *keys, const int *steps, const float *temps, int n,
                      int *ids, char *err, size_t errlen) {
    return gpu_decoder_sample(d, seq, keys, steps, temps, n, ids, err, errlen);
}
static size_t gpu_bytes(void *g) { return gpu_model_weight_bytes(g) + gpu_model_activation_bytes(g); }

/* A model that trains on a command resolved to the GPU gets the GPU's training engine (its weights are pushed by
 * the trainer before the first step) */

ForwardEngine gpu_model_engine(GpuModel *g, const char *name) {
    ForwardEngine e = {.ctx = g, .logps = gpu_logps, .rewards = gpu_rewards, .free = gpu_free, .bytes = gpu_bytes,
                       .dec_new = dec_new, .dec_free = dec_free, .dec_prefill = dec_prefill, .dec_fork = dec_fork,
                       .dec_drop = dec_drop,
                       .dec_step = dec_step, .dec_sampler = dec_sampler, .dec_sample = dec_sample};
    snprintf(e.name, sizeof e.name, "%s", name ? name : "gpu");
    return e;
}

/* ---- a GpuTrain ---- */

static int tr_logps(void *t, const Row *rows, int n, double *logps, int *n_scored, char *err, size_t errlen) {
    return gpu_train_forward(t, rows, n, 0, logps, n_scored, err, errlen);
}
static int tr_rewards(void *t, const Row *rows, int n, double *rewards, char *err, size_t errlen) {
    return gpu_train_forward(t, rows, n, 0, rewards, NULL, err, errlen);
}
static int tr_forward(void *t, const Row *rows, int n, double *out, int *n_scored, char *err, size_t errlen) {
    return gpu_train_forward(t, rows, n, 1, out, n_scored, err, errlen);
}
static int tr_backward(void *t, const double *dout, char *err, size_t errlen) {
    return gpu_train_backward(t, dout, err, errlen);
}
static int tr_zero(void *t, char *err, size_t errlen) { return gpu_train_zero_grads(t, err, errlen); }
static int tr_norm(void *t, int shard, double *norm, char *err, size_t errlen) {
    return gpu_train_grad_norm(t, shard, norm, err, errlen);
}
static int tr_adamw(void *t, long step, float scale, double lr, double b1, double b2, double eps, double wd, char *err,
                    size_t errlen) {
    return gpu_train_adamw(t, step, scale, lr, b1, b2, eps, wd, err, errlen);
}
static int tr_push(void *t, const float *p, const float *m, const float *v, char *err, size_t errlen) {
    return gpu_train_push(t, p, m, v, err, errlen);
}
static int tr_pull(void *t, float *p, float *m, float *v, char *err, size_t errlen) {
    return gpu_train_pull(t, p, m, v, err, errlen);
}
static int tr_grads(void *t, float *g, int to_device, char *err, size_t errlen) {
    return to_device ? gpu_train_set_grads(t, g, err, errlen) : gpu_train_grads(t, g, err, errlen);
}
static int tr_sum_grads(void *t, int *sharded, char *err, size_t errlen) {
    return gpu_train_sum_grads(t, sharded, err, errlen);
}
static int tr_idle(void *t, char *err, size_t errlen) { return gpu_train_idle(t, err, errlen); }
static int tr_reduce_in_backward(void *t, int last) { return gpu_train_reduce_in_backward(t, last); }
static int tr_zero_gather(void *t, char *err, size_t errlen) { return gpu_train_zero_gather(t, err, errlen); }
static void tr_free(void *t) { gpu_train_free(t); }
static size_t tr_bytes(void *t) { return gpu_train_bytes(t); }
static size_t tr_peak(void *t) { return gpu_train_peak(t); }

ForwardEngine gpu_train_engine(GpuTrain *t, const char *name) {
    ForwardEngine e = {.ctx = t, .logps = tr_logps, .rewards = tr_rewards, .free = tr_free, .bytes = tr_bytes,
                       .train_forward = tr_forward, .train_backward = tr_backward, .zero_grads = tr_zero,
                       .grad_norm = tr_norm, .adamw = tr_adamw, .push = tr_push, .pull = tr_pull, .peak = tr_peak,
                       .grads = tr_grads, .sum_grads = tr_sum_grads, .zero_gather = tr_zero_gather,
                       .reduce_in_backward = tr_reduce_in_backward, .train_idle = tr_idle};
    snprintf(e.name, sizeof e.name, "%s", name ? name : "gpu");
    return e;
}
