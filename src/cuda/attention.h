/* attention.h: causal attention on shared-prompt rows on the GPU, forward and
 * backward (kernels.h's attention_forward / attention_backward): fused, the
 * T x T scores never stored (online softmax), GQA, an optional sliding
 * window, head size 64 or 128; bf16 inputs with float32 softmax and sums on
 * tensor cores, or float32 throughout (the oracle mode). Deterministic: no
 * atomics, every output element written by one thread in a fixed order, so
 * reruns give the same bits.
 *
 * The mask is kernels.h's: token t attends keys [pstart[t], pstart[t] +
 * plen[t]) (its row's prompt, for response tokens) and [sstart[t], t] (its own
 * segment, causally). With a sliding window W > 0 it attends only keys at
 * most W - 1 positions back, positions counted along its own sequence
 * (prompt, then its response) as the engine's RoPE positions are: key j of
 * the prompt is at j - pstart[t], key j of the segment at plen[t] + j -
 * sstart[t], and t itself at plen[t] + t - sstart[t] (Hugging Face's "a token
 * sees at most sliding_window positions, itself included"). The CPU engine
 * has no window: it refuses sequences longer than the window
 * (model_config_check_seq_len), where W changes nothing; W = 0 here is its
 * attention exactly.
 *
 * Shapes: T tokens, NH query heads, NKV key-value heads (NH a multiple of
 * NKV; query head h uses kv head h / (NH / NKV)), HS head size.
 * q, out, dout: [T, NH * HS]; k, v: [T, NKV * HS]; lse: [T, NH] (natural
 * log-sum-exp of the scaled scores, scale = 1 / sqrt(HS)); dq: [T, NH * HS];
 * dk, dv: [T, NKV * HS], rows packed (no padding between heads or rows).
 * Pointers are device memory unless said otherwise, 16-byte aligned (as
 * cudaMalloc's are; a misaligned one is refused). */
#ifndef PPA_CUDA_ATTENTION_H
#define PPA_CUDA_ATTENTION_H

#include <stddef.h>

#include "cuda/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The mask of one batch, built once and used by every layer's forward and
 * backward: the rows' mask bounds and the tile lists the kernels walk (which
 * key blocks a block of queries sees; which query blocks see a key block).
 * pstart, plen, sstart: [T] HOST arrays, as llama.c's batch_new builds them;
 * window: 0 (none) or W >= 1. Checks 0 <= pstart, 0 <= plen, pstart + plen <=
 * T and 0 <= sstart <= t. NULL with pc_error() on bad arrays or no memory.
 * Waits for its uploads, so the host arrays may go at once. */
typedef struct PcAttnPlan PcAttnPlan;
PcAttnPlan *pc_attn_plan_new(const int *pstart, const int *plen, const int *sstart, int T, int window);
void pc_attn_plan_free(PcAttnPlan *p);
int pc_attn_plan_tokens(const PcAttnPlan *p); /* T */
/* the visible (query, key) pairs of one head: a head's forward is 4 HS pairs FLOP (two products), its backward
 * 10 HS pairs by the usual count of five products (the kernels do seven: S and dP are formed twice, once for dq
 * and once for dk and dv, which keeps both passes free of atomics) */
long long pc_attn_plan_pairs(const PcAttnPlan *p);

/* dt PC_BF16: q, k, v and out are bf16 (products on tensor cores, bf16 x bf16
 * exact in float32, float32 sums; the probabilities rounded to bf16 before
 * P V, as flash kernels and the CPU's bf16 path do; float32 softmax; out
 * rounded to bf16 once, as llama.c keeps att in a bf16 model); dt PC_F32:
 * all float32, float32 products (CUDA cores). lse is float32 in both.
 * HS 64 or 128. 0, or -1 with pc_error(). */
int pc_attention_forward(void *out, float *lse, const void *q, const void *k, const void *v, const PcAttnPlan *p,
                         int NH, int NKV, int HS, PcDtype dt);

/* bytes of device scratch the backward needs for T tokens, whatever their mask (D = rowsum(dout o out), [T, NH]
 * float32, and the partial dk and dv of the plan's work items, attn_sched.h): about 8 KB_HS (T / 64 + 128) NH */
size_t pc_attention_work_bytes(int T, int NH, int HS);

/* dq, dk, dv (float32, written, not added to) from dout, out and lse of the
 * forward and q, k, v; dout and out as q is (bf16 or float32). The scores are
 * recomputed from lse: one pass over each query block's key blocks gives dq;
 * in bf16, dk and dv come from the plan's items (a key block and a run of the
 * query blocks that see it, for one query head) as partial sums, added per key
 * in a fixed order (heads, then items); in float32, from one pass over each key
 * block's query blocks, the group's heads in order. In bf16: P and dS rounded
 * to bf16 before their products, float32 sums. work: [pc_attention_work_bytes]. */
int pc_attention_backward(float *dq, float *dk, float *dv, const void *dout, const void *out, const float *lse,
                          const void *q, const void *k, const void *v, const PcAttnPlan *p, int NH, int NKV, int HS,
                          PcDtype dt, void *work);

/* For tests and benchmarks: selects the bf16 forward's tiling for head size
 * HS (v 0, the default: 16 queries a warp, 4 warps, 64 keys a tile for HS
 * 64; 32 queries a warp, 32 keys a tile for HS 128: the fastest measured on
 * an H200; v 1 and 2: alternatives) and returns its description,
 * or NULL (nothing changed) for no such variant. Every variant computes the
 * same function; their sums run in other orders. */
const char *pc_attention_bf16_variant(int HS, int v);

/* ---- the reference (attention_ref.cu): for tests only ----
 * One thread per (query row, head, 32 dims) (forward, dq) or (key row, kv
 * head, 32 dims) (dk, dv), float64 arithmetic on the inputs as stored (bf16
 * widened exactly), the mask from its definition above on DEVICE arrays
 * pstart, plen, sstart [T] (no plan), results rounded to float32 once.
 * Beside each result, the magnitudes its rounding-error bound needs:
 *   mag_out [T, NH*HS] = sum_j P_tj |v_jd|
 *   mq1 [T, NH*HS] = scale sum_j |dS_tj| |k_jd|, mq2 = scale sum_j P_tj (A_tj + B_t) |k_jd|
 *   mk1 [T, NKV*HS] = scale sum_(h,t) |dS_tj| |q_td|, mk2 = scale sum_(h,t) P_tj (A_tj + B_t) |q_td|
 *   mv [T, NKV*HS] = sum_(h,t) P_tj |dout_td|
 * with P_tj = exp(s_tj - lse_t) (lse as given), dS_tj = P_tj (dP_tj - D_t),
 * dP_tj = dout_t . v_j, D_t = dout_t . out_t, A_tj = sum_d |dout_td v_jd|,
 * B_t = sum_d |dout_td out_td|. 0 or -1 with pc_error(). */
int pc_attention_ref_forward(float *out, float *lse, float *mag_out, const void *q, const void *k, const void *v,
                             const int *pstart, const int *plen, const int *sstart, int T, int window, int NH, int NKV,
                             int HS, PcDtype dt);
int pc_attention_ref_backward(float *dq, float *dk, float *dv, float *mq1, float *mq2, float *mk1, float *mk2,
                              float *mv, const void *dout, const void *out, const float *lse, const void *q,
                              const void *k, const void *v, const int *pstart, const int *plen, const int *sstart,
                              int T, int window, int NH, int NKV, int HS, PcDtype dt);

#ifdef __cplusplus
}
#endif

#endif
