/* common.h: the C face of ppa's CUDA module (build/libppa_cuda.so, built by
 * nvcc when it is found; ppa itself dlopen()s it for --device cuda, so the
 * ppa binary starts on any machine). Every function of the module is a plain
 * C function named pc_*, declared in the header of its kernel family
 * (src/cuda/<family>.h) and exported by the shared object; this header holds
 * the device, the memory, the stream and the errors they share.
 *
 * Conventions of every kernel family: pointers are device memory; work runs
 * in order on the module's one stream (pc_stream); a function that can fail
 * returns 0 or -1, and pc_error() then says why (the CUDA or cuBLASLt call,
 * its file and line). bf16 is stored as its 16 bits (PcBf16), float32
 * accumulation everywhere. Not thread-safe: one host thread drives the
 * module (the families share cached algorithms and a scratch buffer). Shapes follow the CPU kernels they mirror
 * (src/model/kernels.h, matmul.h): T tokens, C or H hidden, NH / NKV heads,
 * HS head size, V vocabulary. Nothing here knows a model. */
#ifndef PPA_CUDA_COMMON_H
#define PPA_CUDA_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "device/pc_types.h" /* PcBf16, PcDtype and the other plain types, shared with the engine's table */

#ifdef __cplusplus
extern "C" {
#endif

/* Chooses GPU `device`, creates the stream and the cuBLASLt handle and its
 * workspace. 0, or -1 with the reason in err ("no CUDA driver", "no device",
 * ...). Calling it again with the same device does nothing. */
int pc_init(int device, char *err, size_t errlen);
/* Frees what pc_init and the families made (stream, cuBLASLt handle and workspace, cached algorithms, scratch);
 * a later pc_init starts afresh. Device memory from pc_alloc stays the caller's. */
void pc_shutdown(void);
/* The device's name ("NVIDIA H200") and its compute capability, after pc_init. */
const char *pc_device_name(void);
int pc_device_cc(void); /* 90 for sm_90 */
/* GPUs the driver shows (before or after pc_init); 0 when there is no driver or none */
int pc_device_count(void);
/* The device's identity, the same on every process that sees it under whatever ordinal (CUDA_VISIBLE_DEVICES):
 * "GPU-" and its UUID as nvidia-smi prints it, into buf (at least 48 bytes), after pc_init. 0 or -1. */
int pc_device_uuid(char *buf, size_t n);
/* The last failure's message ("" if none). */
const char *pc_error(void);

/* Device memory. pc_alloc: NULL with "out of GPU memory: N bytes asked, M free of T" in pc_error(). */
void *pc_alloc(size_t bytes);
void pc_free(void *p);
int pc_mem_info(size_t *free_bytes, size_t *total_bytes);
/* Copies on the stream (host memory may be pageable; pinned is faster); 0 or -1. */
int pc_upload(void *dst_device, const void *src_host, size_t bytes);
int pc_download(void *dst_host, const void *src_device, size_t bytes);
int pc_memset(void *p, int byte, size_t bytes);
/* Device to device, on the stream. */
int pc_copy(void *dst_device, const void *src_device, size_t bytes);
/* Pinned (page-locked) host memory: copies from and to it do not stage through the driver's buffers, so a
 * download into it costs its bytes only. NULL with pc_error() when the host refuses it. */
void *pc_host_alloc(size_t bytes);
void pc_host_free(void *p);
/* CUDA graphs: the work fn(ctx) enqueues on the stream recorded (stream capture, not run) and instantiated, so that
 * pc_graph_launch replays it without the host's launch costs (a decode step: some hundred kernels). The work must
 * not synchronise or allocate (run it once uncaptured first, so that scratch and cached algorithms exist), and its
 * arguments are fixed at capture: it reads what changes from device memory. NULL with pc_error() when fn fails or
 * the work cannot be captured (the stream is then usable again). */
void *pc_graph_capture(int (*fn)(void *ctx), void *ctx);
int pc_graph_launch(void *graph);
void pc_graph_free(void *graph);
/* Waits for the stream; reports an error any earlier launch left. */
int pc_sync(void);
/* The stream (a cudaStream_t) for the families' launches. */
void *pc_stream(void);

#ifdef __cplusplus
}
#endif

#endif
