/* nccl.cu: NCCL's collectives over the gradients and weights (nccl.h), its library loaded at run time. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <nccl.h>
#include <stdio.h>

#include <time.h>
#include <unistd.h>

#include "cuda/check.cuh"
#include "cuda/nccl.h"

/* adamw.cu's pc_add_f32 on a stream of the caller's: a reduced bucket added into the owner's share, after NCCL */
int pc_add_f32_on(float *acc, const float *x, size_t n, cudaStream_t stream);

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static_assert(sizeof(ncclUniqueId) == PC_NCCL_ID_BYTES, "NCCL's id size");

static struct {
    void *lib;
    ncclResult_t (*get_id)(ncclUniqueId *);
    ncclResult_t (*init)(ncclComm_t *, int, ncclUniqueId, int, ncclConfig_t *);
    ncclResult_t (*all_reduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
    ncclResult_t (*all_gather)(const void *, void *, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
    ncclResult_t (*reduce_scatter)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                                   cudaStream_t);
    ncclResult_t (*reduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t, cudaStream_t);
    ncclResult_t (*rank_of)(ncclComm_t, int *);
    ncclResult_t (*destroy)(ncclComm_t);
    ncclResult_t (*abort)(ncclComm_t);
    ncclResult_t (*async_error)(ncclComm_t, ncclResult_t *);
    const char *(*error)(ncclResult_t);
    ncclComm_t comm;
    int rank;
    cudaStream_t side;          /* ZeRO-2's bucket reductions, beside the backward on the module's stream */
    cudaEvent_t ready, tag[4];  /* the module's stream's work so far; a tag's last reduction done */
} N;
static double timeout_s = 600; /* seconds a collective may wait for the other ranks (pc_nccl_set_timeout) */

static int load(void) {
    if (N.lib) return 0;
    void *lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return pc_fail(__FILE__, __LINE__, "dlopen(libnccl.so.2)", dlerror());
    N.get_id = (ncclResult_t(*)(ncclUniqueId *))dlsym(lib, "ncclGetUniqueId");
    N.init = (ncclResult_t(*)(ncclComm_t *, int, ncclUniqueId, int, ncclConfig_t *))dlsym(lib,
                                                                                         "ncclCommInitRankConfig");
    N.abort = (ncclResult_t(*)(ncclComm_t))dlsym(lib, "ncclCommAbort");
    N.async_error = (ncclResult_t(*)(ncclComm_t, ncclResult_t *))dlsym(lib, "ncclCommGetAsyncError");
    N.all_reduce = (ncclResult_t(*)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                                    cudaStream_t))dlsym(lib, "ncclAllReduce");
    N.destroy = (ncclResult_t(*)(ncclComm_t))dlsym(lib, "ncclCommDestroy");
    N.all_gather = (ncclResult_t(*)(const void *, void *, size_t, ncclDataType_t, ncclComm_t, cudaStream_t))dlsym(
        lib, "ncclAllGather");
    N.rank_of = (ncclResult_t(*)(ncclComm_t, int *))dlsym(lib, "ncclCommUserRank");
    N.reduce_scatter = (ncclResult_t(*)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                                        cudaStream_t))dlsym(lib, "ncclReduceScatter");
    N.reduce = (ncclResult_t(*)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t,
                                cudaStream_t))dlsym(lib, "ncclReduce");
    N.error = (const char *(*)(ncclResult_t))dlsym(lib, "ncclGetErrorString");
    if (!N.get_id || !N.init || !N.all_reduce || !N.destroy || !N.error || !N.abort || !N.async_error ||
        !N.all_gather || !N.rank_of || !N.reduce_scatter || !N.reduce) {
        dlclose(lib);
        return pc_fail(__FILE__, __LINE__, "libnccl.so.2", "a function is missing (too old a NCCL)");
    }
    N.lib = lib;
    return 0;
}

#define NCCL_TRY(call)                                                                                                 \
    do {                                                                                                               \
        ncclResult_t r_ = (call);                                                                                      \
        if (r_ != ncclSuccess) return pc_fail(__FILE__, __LINE__, #call, N.error(r_));                                 \
    } while (0)

extern "C" int pc_nccl_load(void) { return load(); }

extern "C" void pc_nccl_set_timeout(double seconds) { timeout_s = seconds > 0 ? seconds : 600; }

/* The communicator is non-blocking (its calls return at once, ncclInProgress): waits until its pending work is done
 * (stream: the stream it runs on, or NULL: the communicator's own state), polling NCCL's asynchronous error; past
 * the timeout, or on an error, the communicator is aborted (so no call waits for ever) and the reason returned */
static int wait_nccl(cudaStream_t stream, const char *what) {
    double t0 = now_s();
    for (;;) {
        ncclResult_t st = ncclSuccess;
        N.async_error(N.comm, &st);
        int done = stream ? cudaStreamQuery(stream) == cudaSuccess : st != ncclInProgress;
        if (st != ncclSuccess && st != ncclInProgress) {
            N.abort(N.comm), N.comm = nullptr;
            cudaGetLastError();
            return pc_fail(__FILE__, __LINE__, what, N.error(st));
        }
        if (done) return 0;
        if (now_s() - t0 > timeout_s) {
            N.abort(N.comm), N.comm = nullptr;
            cudaGetLastError();
            char why[160];
            snprintf(why, sizeof why, "waited %.0f s (--collective-timeout) for a rank that does not arrive; the "
                     "communicator is aborted", timeout_s);
            return pc_fail(__FILE__, __LINE__, what, why);
        }
        usleep(50);
    }
}

extern "C" int pc_nccl_id(void *id) {
    if (load()) return -1;
    ncclUniqueId u;
    NCCL_TRY(N.get_id(&u));
    memcpy(id, &u, sizeof u);
    return 0;
}

extern "C" int pc_nccl_init(const void *id, int rank, int size) {
    ARG_TRY(size >= 1 && rank >= 0 && rank < size, "rank and size");
    if (load()) return -1;
    pc_nccl_free();
    /* NCCL's order of summation depends on the algorithm and protocol it picks (by size, topology, version): fixed
     * unless the user set them, so that a rerun at the same rank count adds in the same order (NCCL reads these when
     * a communicator is made) */
    setenv("NCCL_ALGO", "Ring", 0);
    setenv("NCCL_PROTO", "Simple", 0);
    ncclUniqueId u;
    memcpy(&u, id, sizeof u);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0; /* every wait polled, with a timeout: wait_nccl */
    ncclResult_t r = N.init(&N.comm, size, u, rank, &config);
    if (r != ncclSuccess && r != ncclInProgress) {
        N.comm = nullptr;
        return pc_fail(__FILE__, __LINE__, "ncclCommInitRankConfig", N.error(r));
    }
    if (wait_nccl(NULL, "ncclCommInitRankConfig")) return -1;
    NCCL_TRY(N.rank_of(N.comm, &N.rank));
    if (!N.side) {
        CUDA_TRY(cudaStreamCreateWithFlags(&N.side, cudaStreamNonBlocking));
        CUDA_TRY(cudaEventCreateWithFlags(&N.ready, cudaEventDisableTiming));
        for (int i = 0; i < 4; i++) CUDA_TRY(cudaEventCreateWithFlags(&N.tag[i], cudaEventDisableTiming));
    }
    return 0;
}

extern "C" int pc_nccl_sum_f32(float *buf, size_t n) {
    ARG_TRY(N.comm != nullptr, "no communicator (pc_nccl_init first)");
    ncclResult_t r = N.all_reduce(buf, buf, n, ncclFloat32, ncclSum, N.comm, pc_cuda_stream());
    if (r != ncclSuccess && r != ncclInProgress) return pc_fail(__FILE__, __LINE__, "ncclAllReduce", N.error(r));
    return wait_nccl(pc_cuda_stream(), "ncclAllReduce");
}

extern "C" int pc_nccl_all_gather_f32(float *buf, size_t count) {
    ARG_TRY(N.comm != nullptr, "no communicator (pc_nccl_init first)");
    int rank = 0;
    NCCL_TRY(N.rank_of(N.comm, &rank));
    ncclResult_t r = N.all_gather(buf + (size_t)rank * count, buf, count, ncclFloat32, N.comm, pc_cuda_stream());
    if (r != ncclSuccess && r != ncclInProgress) return pc_fail(__FILE__, __LINE__, "ncclAllGather", N.error(r));
    return wait_nccl(pc_cuda_stream(), "ncclAllGather");
}

extern "C" int pc_nccl_reduce_scatter_f32(float *buf, size_t count) {
    ARG_TRY(N.comm != nullptr, "no communicator (pc_nccl_init first)");
    ncclResult_t r = N.reduce_scatter(buf, buf + (size_t)N.rank * count, count, ncclFloat32, ncclSum, N.comm,
                                      pc_cuda_stream());
    if (r != ncclSuccess && r != ncclInProgress) return pc_fail(__FILE__, __LINE__, "ncclReduceScatter", N.error(r));
    return wait_nccl(pc_cuda_stream(), "ncclReduceScatter");
}

/* a non-blocking communicator may still be queueing the last call (ncclInProgress): waits for that alone, within
 * the timeout, so that the next call finds it ready */
static int wait_queued(const char *what) {
    for (double t0 = now_s();;) {
        ncclResult_t st = ncclSuccess;
        N.async_error(N.comm, &st);
        if (st == ncclSuccess) return 0;
        if (st != ncclInProgress || now_s() - t0 > timeout_s) {
            N.abort(N.comm), N.comm = nullptr;
            return pc_fail(__FILE__, __LINE__, what, st != ncclInProgress ? N.error(st) : "queueing timed out");
        }
        usleep(20);
    }
}

extern "C" int pc_nccl_reduce_f32(float *buf, size_t n, int root, float *acc, int tag) {
    ARG_TRY(N.comm != nullptr && N.side, "no communicator (pc_nccl_init first)");
    ARG_TRY(tag >= 0 && tag < 4 && root >= -1 && (root >= 0 || !acc), "tag in 0..3, root, acc with a root");
    CUDA_TRY(cudaEventRecord(N.ready, pc_cuda_stream()));
    CUDA_TRY(cudaStreamWaitEvent(N.side, N.ready, 0));
    const char *what = root < 0 ? "ncclAllReduce" : "ncclReduce";
    ncclResult_t r = root < 0 ? N.all_reduce(buf, buf, n, ncclFloat32, ncclSum, N.comm, N.side)
                              : N.reduce(buf, buf, n, ncclFloat32, ncclSum, root, N.comm, N.side);
    if (r != ncclSuccess && r != ncclInProgress) return pc_fail(__FILE__, __LINE__, what, N.error(r));
    if (r == ncclInProgress && wait_queued(what)) return -1;
    if (acc && root == N.rank && pc_add_f32_on(acc, buf, n, N.side)) return -1;
    CUDA_TRY(cudaEventRecord(N.tag[tag], N.side));
    return 0;
}

extern "C" int pc_nccl_await(int tag) {
    ARG_TRY(N.side && tag >= 0 && tag < 4, "a tag in 0..3 of a communicator's reductions");
    CUDA_TRY(cudaStreamWaitEvent(pc_cuda_stream(), N.tag[tag], 0));
    return 0;
}

extern "C" int pc_nccl_finish(void) {
    ARG_TRY(N.comm != nullptr && N.side, "no communicator (pc_nccl_init first)");
    return wait_nccl(N.side, "ncclReduce");
}

extern "C" void pc_nccl_free(void) {
    if (N.comm) N.destroy(N.comm);
    N.comm = nullptr;
}
