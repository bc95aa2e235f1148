/* nccl.h: the gradients of several processes summed GPU to GPU with NCCL (one process a GPU), for data-parallel
 * training, and ZeRO's reduce-scatter, bucket reductions and all-gather. NCCL is loaded at run time (dlopen of libnccl.so.2): the module works without it, and then these say
 * so and the caller adds the gradients up through the host instead (MPI). */
#ifndef PPA_CUDA_NCCL_H
#define PPA_CUDA_NCCL_H

#include "cuda/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* loads libnccl.so.2 (every rank does, before the ranks agree on using it): 0, or -1 with pc_error() */
int pc_nccl_load(void);
/* rank 0: a new communicator's id into id (PC_NCCL_ID_BYTES, host memory), to be sent to every rank (MPI). 0, or -1
 * with pc_error() (NCCL missing: "libnccl.so.2: cannot open ...") */
int pc_nccl_id(void *id);
/* joins the communicator of id as rank of size (after pc_init: this process's GPU); every rank must call it. NCCL's
 * algorithm and protocol are fixed (NCCL_ALGO=Ring, NCCL_PROTO=Simple) unless the environment sets them: its order
 * of summation, and so the bits of a rerun at the same rank count, then stay the same */
int pc_nccl_init(const void *id, int rank, int size);
/* how long a collective (and joining) may wait for the other ranks, in seconds (default 600: --collective-timeout's):
 * past it the communicator is aborted and the call fails saying so, so that no rank waits for ever */
void pc_nccl_set_timeout(double seconds);
/* buf [n] float32 (device) = the sum over the ranks of their buf, in place, on the module's stream; waits (polling
 * NCCL's asynchronous errors, within the timeout) */
int pc_nccl_sum_f32(float *buf, size_t n);
/* buf [size count] float32 (device) = every rank's chunk buf[rank count .. +count) gathered, in place, on the
 * module's stream; waits as pc_nccl_sum_f32 does */
int pc_nccl_all_gather_f32(float *buf, size_t count);
/* buf [size count] float32 (device): this rank's chunk buf[rank count .. +count) = the sum over the ranks of their
 * chunk, in place (ZeRO's reduce-scatter: the rest of buf is left as it was), on the module's stream; waits as
 * pc_nccl_sum_f32 does */
int pc_nccl_reduce_scatter_f32(float *buf, size_t count);
/* The reduction of one bucket of the backward, queued without waiting: buf [n] float32 (device) summed over the ranks
 * onto rank root, in place there (root -1: on every rank, an all-reduce), on NCCL's own stream once the module's
 * stream has done what was queued before the call (so the backward goes on meanwhile); on root, acc [n] (device) +=
 * that sum afterwards (ZeRO-2's share; acc NULL: nothing). tag (0..3) names the call for pc_nccl_await. Every rank
 * must make the same calls in the same order. */
int pc_nccl_reduce_f32(float *buf, size_t n, int root, float *acc, int tag);
/* the module's stream waits (on the device; the host goes on) for the last pc_nccl_reduce_f32 of tag to be done:
 * its buf may then be written again */
int pc_nccl_await(int tag);
/* the host waits for every queued pc_nccl_reduce_f32 (polling NCCL's errors within the timeout, aborting past it) */
int pc_nccl_finish(void);
/* leaves the communicator (nothing when there is none) */
void pc_nccl_free(void);

#ifdef __cplusplus
}
#endif

#endif
