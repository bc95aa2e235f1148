/* pc_api.h: the CUDA module's functions (declared in src/cuda/<family>.h, exported by libppa_cuda.so as plain C
 * functions pc_NAME) as one table of function pointers, PcApi, a field pc_NAME for each. ppa never links the
 * module: device_cuda_open (cuda.h) dlopen()s it and resolves every entry of this table, and device_cuda_api()
 * hands it out; the GPU engine (src/gpu) calls the kernels only through a table, so its tests can fill one from the
 * CPU stand-in of the module (tests/cuda/mock) instead.
 *
 * Copied by hand from src/cuda/<family>.h: C prototypes only, no CUDA types (the plain types are
 * device/pc_types.h's, which the module's headers include too). A file that includes both this header and the
 * module's headers and assigns each pc_NAME to its field (the tests do: gpu_engine_cases.h's ge_linked_api) has the
 * compiler check that the two agree (tests/test_cuda_build.sh checks that the names are the same); the semantics,
 * shapes and dtypes of each function are in its family's header, named on each group below.
 * Conventions (cuda/common.h): pointers are device memory unless said otherwise; work runs in order on the module's
 * one stream; a function that can fail returns 0 or -1 (NULL for pointers) and pc_error() then says why. */
#ifndef PPA_DEVICE_PC_API_H
#define PPA_DEVICE_PC_API_H

#include <stddef.h>
#include <stdint.h>

#include "device/pc_types.h"

/* X(return type, name, (parameters)) for every function of the module, by family */
#define PC_API_FUNCTIONS(X)                                                                                            \
    /* cuda/common.h: the device, memory, the stream, errors */                                                        \
    X(int, pc_init, (int device, char *err, size_t errlen))                                                            \
    X(void, pc_shutdown, (void))                                                                                       \
    X(const char *, pc_device_name, (void))                                                                            \
    X(int, pc_device_cc, (void))                                                                                       \
    X(int, pc_device_count, (void))                                                                                    \
    X(int, pc_device_uuid, (char *buf, size_t n))                                                                      \
    X(const char *, pc_error, (void))                                                                                  \
    X(void *, pc_alloc, (size_t bytes))                                                                                \
    X(void, pc_free, (void *p))                                                                                        \
    X(int, pc_mem_info, (size_t *free_bytes, size_t *total_bytes))                                                     \
    X(int, pc_upload, (void *dst_device, const void *src_host, size_t bytes))                                          \
    X(int, pc_download, (void *dst_host, const void *src_device, size_t bytes))                                        \
    X(int, pc_memset, (void *p, int byte, size_t bytes))                                                               \
    X(int, pc_copy, (void *dst_device, const void *src_device, size_t bytes))                                          \
    X(void *, pc_host_alloc, (size_t bytes))                                                                           \
    X(void, pc_host_free, (void *p))                                                                                   \
    X(void *, pc_graph_capture, (int (*fn)(void *ctx), void *ctx))                                                     \
    X(int, pc_graph_launch, (void *graph))                                                                             \
    X(void, pc_graph_free, (void *graph))                                                                              \
    X(int, pc_sync, (void))                                                                                            \
    X(void *, pc_stream, (void))                                                                                       \
    /* cuda/attention.h: fused attention on shared-prompt rows (plan: HOST arrays pstart, plen, sstart [T]) */         \
    X(PcAttnPlan *, pc_attn_plan_new, (const int *pstart, const int *plen, const int *sstart, int T, int window))      \
    X(void, pc_attn_plan_free, (PcAttnPlan *p))                                                                        \
    X(int, pc_attn_plan_tokens, (const PcAttnPlan *p))                                                                 \
    X(long long, pc_attn_plan_pairs, (const PcAttnPlan *p))                                                            \
    X(int, pc_attention_forward, (void *out, float *lse, const void *q, const void *k, const void *v,                  \
        const PcAttnPlan *p, int NH, int NKV, int HS, PcDtype dt))                                                     \
    X(size_t, pc_attention_work_bytes, (int T, int NH, int HS))                                                        \
    X(int, pc_attention_backward, (float *dq, float *dk, float *dv, const void *dout, const void *out,                 \
        const float *lse, const void *q, const void *k, const void *v, const PcAttnPlan *p, int NH, int NKV, int HS,   \
        PcDtype dt, void *work))                                                                                       \
    X(const char *, pc_attention_bf16_variant, (int HS, int v))                                                        \
    X(int, pc_attention_ref_forward, (float *out, float *lse, float *mag_out, const void *q, const void *k,            \
        const void *v, const int *pstart, const int *plen, const int *sstart, int T, int window, int NH, int NKV,      \
        int HS, PcDtype dt))                                                                                           \
    X(int, pc_attention_ref_backward, (float *dq, float *dk, float *dv, float *mq1, float *mq2, float *mk1,            \
        float *mk2, float *mv, const void *dout, const void *out, const float *lse, const void *q, const void *k,      \
        const void *v, const int *pstart, const int *plen, const int *sstart, int T, int window, int NH, int NKV,      \
        int HS, PcDtype dt))                                                                                           \
    /* cuda/matmul.h: cuBLASLt products, the linear layer and the bias gradient */                                     \
    X(int, pc_gemm, (int ta, int tb, int M, int N, int K, float alpha, const void *A, int lda, const void *B, int ldb, \
        float beta, const void *Cin, void *D, int ldd, const float *bias, PcDtype ab, PcDtype c))                      \
    X(int, pc_linear_forward, (void *y, PcDtype yt, const void *x, int ldx, const void *W, const float *bias,          \
        const void *res, int T, int in, int out, PcDtype ab))                                                          \
    X(int, pc_linear_backward, (float *dx, float beta_x, float *dW, const void *dy, const void *x, int ldx,            \
        const void *W, int T, int in, int out, PcDtype ab))                                                            \
    X(int, pc_bias_backward, (float *db, const float *dy, int T, int N))                                               \
    X(const char *, pc_gemm_algo, (void))                                                                              \
    /* cuda/embedding.h: the gather, the scatter plan (HOST arrays) and the deterministic scatter-adds */              \
    X(int, pc_embed_forward, (float *x, const void *E, PcDtype et, const int *tokens, int T, int C))                   \
    X(int, pc_scatter_plan, (int *order, int *seg, int *seg_key, const int *keys, int n))                              \
    X(int, pc_scatter_add_rows, (float *dst, int ldd, const float *src, int lds, const int *order, const int *seg,     \
        const int *seg_key, int n_seg, int C))                                                                         \
    X(int, pc_embed_backward, (float *dE, const float *dx, const int *order, const int *seg, const int *seg_key,       \
        int n_seg, int C))                                                                                             \
    /* cuda/rmsnorm.h */                                                                                               \
    X(int, pc_rmsnorm_forward, (void *y, PcDtype yt, float *rstd, float *xsum, const float *x, const float *res,       \
        const float *w, int T, int C, float eps))                                                                      \
    X(int, pc_rmsnorm_backward, (float *dx, float *dw, const float *dy, const float *x, const float *w,                \
        const float *rstd, int T, int C))                                                                              \
    /* cuda/rope.h: the CPU's cos/sin table, uploaded */                                                               \
    X(int, pc_rope_forward, (void *x, PcDtype xt, int ldx, const int *pos, const float *cs, int T, int NHx, int HS))   \
    X(int, pc_rope_backward, (void *dx, PcDtype xt, int ldx, const int *pos, const float *cs, int T, int NHx, int HS)) \
    X(int, pc_rope_qkv_forward, (PcBf16 *out, const float *q, int ldq, const float *k, int ldk, const float *v,       \
        int ldv, const int *pos, const float *cs, int T, int NH, int NKV, int HS))                                     \
    X(int, pc_rope_qkv_backward, (PcBf16 *oq, int ldoq, PcBf16 *ok, int ldok, PcBf16 *ov, int ldov, float *dq,         \
        float *dk, const float *dv, const int *pos, const float *cs, int T, int NH, int NKV, int HS))                  \
    /* cuda/swiglu.h */                                                                                                \
    X(int, pc_swiglu_forward, (void *h, PcDtype ht, PcBf16 *gb, PcBf16 *ub, const void *g, const void *u, PcDtype gt,  \
        int ld_in, int rows, int cols))                                                                                \
    X(int, pc_swiglu_backward, (void *dg, void *du, PcDtype dt, int ld_out, const float *dh, const void *g,            \
        const void *u, PcDtype gt, int ld_in, int rows, int cols))                                                     \
    /* cuda/lmhead.h: chunked log-probs of target tokens */                                                            \
    X(size_t, pc_lmhead_work, (int n, int H, int V, PcDtype wt))                                                       \
    X(size_t, pc_lmhead_keep_bytes, (int n, int V, PcDtype wt))                                                        \
    X(int, pc_lmhead_forward, (double *logp, float *lse, const float *x, const void *W, PcDtype wt, const int *src,    \
        const int *tgt, int n, int H, int V, void *work, void *keep))                                                  \
    X(int, pc_lmhead_backward, (float *dx, float *dW, const double *g, const double *logp, const float *lse,           \
        const float *x, const void *W, PcDtype wt, const int *src, const int *tgt, int n, int H, int V,                \
        const int *order, const int *seg, const int *seg_key, int n_seg, void *work, void *keep))                      \
    X(void, pc_lmhead_set_chunks, (int rows, int vocab))                                                               \
    /* cuda/sample.h: the next token drawn on the device */                                                            \
    X(size_t, pc_sample_work, (int n, int V))                                                                          \
    X(int, pc_sample, (int *ids, const float *logits, int ld, const int *rows, int n, int V, const uint64_t *keys,    \
        const int *steps, const float *temps, PcSampling s, void *work))                                               \
    X(int, pc_logits_ban, (float *logits, int ld, const int *rows, int n, int V, const int *banned, int n_banned))     \
    /* cuda/convert.h */                                                                                               \
    X(int, pc_f32_to_bf16, (PcBf16 * y, const float *x, size_t n))                                                     \
    X(int, pc_bf16_to_f32, (float *y, const PcBf16 *x, size_t n))                                                      \
    X(int, pc_fill_uniform, (void *p, PcDtype t, size_t n, uint64_t seed, float lo, float hi))                         \
    /* cuda/decode.h: the key/value cache and one query's attention over it */                                         \
    X(int, pc_kv_store, (void *cache, PcDtype ct, int max_len, int D, const float *x, int ldx, const int *slot,        \
        const int *pos, int n))                                                                                        \
    X(size_t, pc_decode_work, (int n, int NH, int HS, int bound))                                                      \
    X(int, pc_decode_attention, (void *out, const float *q, const void *kc, const void *vc, PcDtype ct,                \
        const int *slot, const int *len, const int *pslot, const int *plen, int n, int max_len, int bound, int NH,     \
        int NKV, int HS, void *work))                                                                                  \
    X(int, pc_ids_move, (int *dst, const int *dst_at, const int *src, const int *src_at, int n))                       \
    /* cuda/nccl.h: several processes' gradients summed GPU to GPU (NCCL, loaded at run time) */                       \
    X(int, pc_nccl_load, (void))                                                                                       \
    X(int, pc_nccl_id, (void *id))                                                                                     \
    X(int, pc_nccl_init, (const void *id, int rank, int size))                                                         \
    X(void, pc_nccl_set_timeout, (double seconds))                                                                     \
    X(int, pc_nccl_sum_f32, (float *buf, size_t n))                                                                    \
    X(int, pc_nccl_all_gather_f32, (float *buf, size_t count))                                                         \
    X(int, pc_nccl_reduce_scatter_f32, (float *buf, size_t count))                                                     \
    X(int, pc_nccl_reduce_f32, (float *buf, size_t n, int root, float *acc, int tag))                                  \
    X(int, pc_nccl_await, (int tag))                                                                                   \
    X(int, pc_nccl_finish, (void))                                                                                     \
    X(void, pc_nccl_free, (void))                                                                                      \
    /* cuda/lora.h: LoRA's dropout masks (lora.c's keep) */                                                            \
    X(int, pc_lora_dropout, (float *y, float beta, const float *x, int T, int in, uint64_t key, int target,            \
        double p))                                                                                                     \
    /* cuda/adamw.h, cuda/global_norm.h */                                                                             \
    X(int, pc_adamw_step, (float *p, PcBf16 *pb, const float *g, float *m, float *v, size_t n, float grad_scale,       \
        const PcSpan *decay, int n_decay, size_t base, const PcAdamW *hp))                                             \
    X(int, pc_grad_norm, (double *norm, const float *g, size_t n))                                                     \
    X(int, pc_grad_sumsq, (double *sumsq_device, const float *g, size_t n))                                            \
    X(int, pc_add_f32, (float *acc, const float *x, size_t n))

/* The table: field pc_NAME points at the module's pc_NAME. */
typedef struct PcApi {
#define PC_API_FIELD(ret, name, params) ret(*name) params;
    PC_API_FUNCTIONS(PC_API_FIELD)
#undef PC_API_FIELD
} PcApi;

#endif
