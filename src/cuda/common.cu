/* common.cu: device, memory, stream and errors of the CUDA module (common.h). */
#include <stdio.h>
#include <string.h>

#include <cuda_runtime.h>

#include "cuda/check.cuh"

static struct {
    int device, ready, cc;
    cudaStream_t stream;
    void *scratch;
    size_t scratch_n;
    char name[256];
    char error[1024];
} G = {-1, 0, 0, NULL, NULL, 0, "", ""};

extern "C" int pc_fail(const char *file, int line, const char *what, const char *why) {
    snprintf(G.error, sizeof G.error, "%s:%d: %s: %s", file, line, what, why);
    return -1;
}

extern "C" const char *pc_error(void) { return G.error; }

extern "C" int pc_init(int device, char *err, size_t errlen) {
    if (G.ready && G.device == device) return 0;
    if (G.ready) pc_shutdown(); /* another device: start afresh */
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        const char *what = e == cudaErrorInsufficientDriver ? "no NVIDIA driver, or one older than this CUDA runtime needs"
                           : e == cudaErrorNoDevice ? "no CUDA device" : "no usable CUDA driver or device";
        snprintf(err, errlen, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
        return -1;
    }
    if (device < 0 || device >= n) {
        snprintf(err, errlen, "GPU %d asked for, %d visible", device, n);
        return -1;
    }
    cudaDeviceProp p;
    if ((e = cudaSetDevice(device)) != cudaSuccess || (e = cudaGetDeviceProperties(&p, device)) != cudaSuccess ||
        (e = cudaStreamCreateWithFlags(&G.stream, cudaStreamNonBlocking)) != cudaSuccess) {
        snprintf(err, errlen, "GPU %d: %s", device, cudaGetErrorString(e));
        return -1;
    }
    snprintf(G.name, sizeof G.name, "%s", p.name);
    G.cc = p.major * 10 + p.minor;
    G.device = device, G.ready = 1;
    if (pc_lt_init(err, errlen)) { /* the cuBLASLt handle and its workspace (matmul.cu) */
        pc_shutdown();
        return -1;
    }
    return 0;
}

extern "C" void pc_shutdown(void) {
    if (!G.ready) return;
    cudaStreamSynchronize(G.stream);
    pc_lt_release();
    if (G.scratch) cudaFree(G.scratch);
    cudaStreamDestroy(G.stream);
    G.scratch = NULL, G.scratch_n = 0, G.stream = NULL, G.ready = 0, G.device = -1;
}

void *pc_scratch(size_t bytes) {
    if (bytes <= G.scratch_n) return G.scratch;
    if (G.scratch) {
        cudaError_t e = cudaStreamSynchronize(G.stream); /* queued kernels may still read the old one */
        if (e != cudaSuccess) {
            pc_fail(__FILE__, __LINE__, "cudaStreamSynchronize", cudaGetErrorString(e));
            return NULL;
        }
        cudaFree(G.scratch);
        G.scratch = NULL, G.scratch_n = 0;
    }
    size_t n = bytes < ((size_t)1 << 20) ? ((size_t)1 << 20) : bytes; /* at least 1 MiB: few regrowths */
    void *p = pc_alloc(n);
    if (!p) return NULL;
    G.scratch = p, G.scratch_n = n;
    return p;
}

extern "C" const char *pc_device_name(void) { return G.name; }
extern "C" int pc_device_cc(void) { return G.cc; }

extern "C" int pc_device_count(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError(); /* not sticky: pc_init says why */
        return 0;
    }
    return n;
}
extern "C" void *pc_stream(void) { return (void *)G.stream; }

extern "C" int pc_device_uuid(char *buf, size_t n) {
    cudaDeviceProp p;
    CUDA_TRY(cudaGetDeviceProperties(&p, G.device));
    const unsigned char *u = (const unsigned char *)p.uuid.bytes;
    snprintf(buf, n, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3],
             u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    return 0;
}

extern "C" int pc_mem_info(size_t *free_bytes, size_t *total_bytes) {
    CUDA_TRY(cudaMemGetInfo(free_bytes, total_bytes));
    return 0;
}

extern "C" void *pc_alloc(size_t bytes) {
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
    if (e == cudaSuccess) return p;
    cudaGetLastError(); /* clear it: an allocation failure is not sticky */
    size_t fr = 0, tot = 0;
    cudaMemGetInfo(&fr, &tot);
    snprintf(G.error, sizeof G.error, "out of GPU memory: %zu bytes (%.2f GiB) asked, %zu (%.2f GiB) free of %zu (%.2f GiB)",
             bytes, bytes / 1073741824.0, fr, fr / 1073741824.0, tot, tot / 1073741824.0);
    return NULL;
}

extern "C" void pc_free(void *p) {
    if (p) cudaFree(p);
}

extern "C" int pc_upload(void *dst, const void *src, size_t bytes) {
    CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, G.stream));
    return 0;
}

extern "C" int pc_download(void *dst, const void *src, size_t bytes) {
    CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, G.stream));
    CUDA_TRY(cudaStreamSynchronize(G.stream)); /* the host reads it next */
    return 0;
}

extern "C" int pc_memset(void *p, int byte, size_t bytes) {
    CUDA_TRY(cudaMemsetAsync(p, byte, bytes, G.stream));
    return 0;
}

extern "C" int pc_copy(void *dst, const void *src, size_t bytes) {
    CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, G.stream));
    return 0;
}

extern "C" void *pc_host_alloc(size_t bytes) {
    void *p = NULL;
    cudaError_t e = cudaMallocHost(&p, bytes ? bytes : 1);
    if (e == cudaSuccess) return p;
    cudaGetLastError();
    snprintf(G.error, sizeof G.error, "pinned host memory: %zu bytes refused: %s", bytes, cudaGetErrorString(e));
    return NULL;
}

extern "C" void pc_host_free(void *p) {
    if (p) cudaFreeHost(p);
}

extern "C" void *pc_graph_capture(int (*fn)(void *ctx), void *ctx) {
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    /* relaxed: the families' host calls (cuBLASLt's heuristics, cached) are not stream work */
    cudaError_t e = cudaStreamBeginCapture(G.stream, cudaStreamCaptureModeRelaxed);
    if (e != cudaSuccess) {
        pc_fail(__FILE__, __LINE__, "cudaStreamBeginCapture", cudaGetErrorString(e));
        return NULL;
    }
    int rc = fn(ctx);
    e = cudaStreamEndCapture(G.stream, &graph);
    if (rc || e != cudaSuccess) {
        if (!rc) pc_fail(__FILE__, __LINE__, "cudaStreamEndCapture", cudaGetErrorString(e));
        if (graph) cudaGraphDestroy(graph);
        cudaGetLastError();
        return NULL;
    }
    e = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    if (e != cudaSuccess) {
        pc_fail(__FILE__, __LINE__, "cudaGraphInstantiate", cudaGetErrorString(e));
        cudaGetLastError();
        return NULL;
    }
    return (void *)exec;
}

extern "C" int pc_graph_launch(void *graph) {
    CUDA_TRY(cudaGraphLaunch((cudaGraphExec_t)graph, G.stream));
    return 0;
}

extern "C" void pc_graph_free(void *graph) {
    if (graph) cudaGraphExecDestroy((cudaGraphExec_t)graph);
}

extern "C" int pc_sync(void) {
    CUDA_TRY(cudaStreamSynchronize(G.stream));
    CUDA_TRY(cudaGetLastError());
    return 0;
}
