/* nccl.cu: NCCL's all-reduce of the gradients (nccl.h), its library loaded at run time. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <nccl.h>
#include <stdio.h>

#include "cuda/check.cuh"
#include "cuda/nccl.h"

static_assert(sizeof(ncclUniqueId) == PC_NCCL_ID_BYTES, "NCCL's id size");

static struct {
    void *lib;
    ncclResult_t (*get_id)(ncclUniqueId *);
    ncclResult_t (*init)(ncclComm_t *, int, ncclUniqueId, int);
    ncclResult_t (*all_reduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
    ncclResult_t (*destroy)(ncclComm_t);
    const char *(*error)(ncclResult_t);
    ncclComm_t comm;
} N;

static int load(void) {
    if (N.lib) return 0;
    void *lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return pc_fail(__FILE__, __LINE__, "dlopen(libnccl.so.2)", dlerror());
    N.get_id = (ncclResult_t(*)(ncclUniqueId *))dlsym(lib, "ncclGetUniqueId");
    N.init = (ncclResult_t(*)(ncclComm_t *, int, ncclUniqueId, int))dlsym(lib, "ncclCommInitRank");
    N.all_reduce = (ncclResult_t(*)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                                    cudaStream_t))dlsym(lib, "ncclAllReduce");
    N.destroy = (ncclResult_t(*)(ncclComm_t))dlsym(lib, "ncclCommDestroy");
    N.error = (const char *(*)(ncclResult_t))dlsym(lib, "ncclGetErrorString");
    if (!N.get_id || !N.init || !N.all_reduce || !N.destroy || !N.error) {
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
    NCCL_TRY(N.init(&N.comm, size, u, rank));
    return 0;
}

extern "C" int pc_nccl_sum_f32(float *buf, size_t n) {
    ARG_TRY(N.comm != nullptr, "no communicator (pc_nccl_init first)");
    NCCL_TRY(N.all_reduce(buf, buf, n, ncclFloat32, ncclSum, N.comm, pc_cuda_stream()));
    CUDA_TRY(cudaStreamSynchronize(pc_cuda_stream()));
    return 0;
}

extern "C" void pc_nccl_free(void) {
    if (N.comm) N.destroy(N.comm);
    N.comm = nullptr;
}
