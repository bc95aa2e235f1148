/* mock_nccl.c: the stand-in's NCCL (cuda/nccl.h). By default it has none, as a machine without libnccl.so.2: the
 * callers then sum through the host. PPA_MOCK_NCCL=1: NCCL's calls done over the MPI job's own library (ppa loads
 * Open MPI's libmpi with RTLD_GLOBAL: its symbols are found here), so that the GPU engine's NCCL path runs under
 * mpirun without a GPU: an all-reduce is MPI_Allreduce in place on MPI_COMM_WORLD, in the ranks' fixed order.
 * PPA_MOCK_NCCL_LOADS=R: the library loads on MPI rank R alone (a job where the other ranks lack it).
 * PPA_MOCK_NCCL_LOG=PREFIX: each rank appends a line for every bucket reduction (pc_nccl_reduce_f32: its count and
 * root) to PREFIX.RANK, for the tests of their order. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cuda/nccl.h"
#include "mock.h"

static struct {
    int (*iallreduce)(const void *, void *, int, void *, void *, void *, void **);
    int (*test)(void **, int *, void *);
    int (*iallgather)(const void *, int, void *, void *, int, void *, void *, void **);
    int (*cancel)(void **);
    int (*ireduce_scatter)(const void *, void *, int, void *, void *, void *, void **);
    int (*ireduce)(const void *, void *, int, void *, void *, int, void *, void **);
    void *world, *f32, *sum;
    int joined, rank, size;
    double timeout;
} N = {.timeout = 600};

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int mpi_rank(void) {
    const char *r = getenv("OMPI_COMM_WORLD_RANK");
    return r ? atoi(r) : -1;
}

static int loads(void) {
    const char *on = getenv("PPA_MOCK_NCCL"), *one = getenv("PPA_MOCK_NCCL_LOADS");
    if (one && *one) return atoi(one) == mpi_rank();
    return on && !strcmp(on, "1");
}

int pc_nccl_load(void) {
    MOCK_GUARD;
    if (!loads()) return mock_fail("NCCL: the CPU stand-in of the module has none");
    if (N.iallreduce) return 0;
    *(void **)&N.iallreduce = dlsym(RTLD_DEFAULT, "MPI_Iallreduce");
    *(void **)&N.test = dlsym(RTLD_DEFAULT, "MPI_Test"), *(void **)&N.cancel = dlsym(RTLD_DEFAULT, "MPI_Cancel");
    *(void **)&N.iallgather = dlsym(RTLD_DEFAULT, "MPI_Iallgather");
    *(void **)&N.ireduce_scatter = dlsym(RTLD_DEFAULT, "MPI_Ireduce_scatter_block");
    *(void **)&N.ireduce = dlsym(RTLD_DEFAULT, "MPI_Ireduce");
    N.world = dlsym(RTLD_DEFAULT, "ompi_mpi_comm_world"), N.f32 = dlsym(RTLD_DEFAULT, "ompi_mpi_float");
    N.sum = dlsym(RTLD_DEFAULT, "ompi_mpi_op_sum");
    if (!N.iallreduce || !N.test || !N.cancel || !N.iallgather || !N.ireduce_scatter || !N.ireduce || !N.world ||
        !N.f32 || !N.sum) {
        N.iallreduce = NULL;
        return mock_fail("NCCL: the stand-in's NCCL runs over Open MPI's libmpi, which is not loaded (mpirun)");
    }
    return 0;
}

int pc_nccl_id(void *id) {
    MOCK_GUARD;
    if (pc_nccl_load()) return -1;
    uint64_t x = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    for (int i = 0; i < PC_NCCL_ID_BYTES; i++) { /* any bytes: the ranks only pass it on */
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        ((unsigned char *)id)[i] = (unsigned char)(x >> 56);
    }
    return 0;
}

int pc_nccl_init(const void *id, int rank, int size) {
    MOCK_GUARD;
    (void)id;
    if (size < 1 || rank < 0 || rank >= size) return mock_fail("pc_nccl_init: bad arguments: rank and size");
    if (pc_nccl_load()) return -1;
    N.joined = 1, N.rank = rank, N.size = size;
    return 0;
}

void pc_nccl_set_timeout(double seconds) {
    MOCK_GUARD;
    N.timeout = seconds > 0 ? seconds : 600;
}

/* a started request polled within the timeout; past it the communicator is gone and the call fails */
static int wait_request(void *req, const char *what) {
    int done = 0;
    for (double t0 = now_s(); !done;) {
        if (N.test(&req, &done, NULL /* MPI_STATUS_IGNORE */))
            return mock_fail("NCCL (the stand-in's): MPI_Test failed");
        if (done) break;
        if (now_s() - t0 > N.timeout) {
            N.joined = 0;
            static char why[200];
            snprintf(why, sizeof why, "%s: waited %.0f s (--collective-timeout) for a rank that does not arrive; the "
                     "communicator is aborted", what, N.timeout);
            return mock_fail(why);
        }
        usleep(200);
    }
    return 0;
}

int pc_nccl_all_gather_f32(float *buf, size_t count) {
    MOCK_GUARD;
    if (!N.joined) return mock_fail("pc_nccl_all_gather_f32: bad arguments: no communicator (pc_nccl_init first)");
    if (count > (size_t)INT_MAX) return mock_fail("pc_nccl_all_gather_f32: the stand-in gathers at most 2^31 - 1 a rank");
    void *req = NULL;
    if (N.iallgather((void *)1 /* MPI_IN_PLACE */, 0, NULL, buf, (int)count, N.f32, N.world, &req))
        return mock_fail("NCCL (the stand-in's, over MPI): MPI_Iallgather failed");
    return wait_request(req, "ncclAllGather");
}

/* as the module's: started, then polled within the timeout; past it the communicator is gone and the call fails */
int pc_nccl_sum_f32(float *buf, size_t n) {
    MOCK_GUARD;
    if (!N.joined) return mock_fail("pc_nccl_sum_f32: bad arguments: no communicator (pc_nccl_init first)");
    for (size_t i = 0; i < n;) { /* MPI counts are ints */
        int c = n - i > (size_t)INT_MAX ? INT_MAX : (int)(n - i);
        void *req = NULL;
        if (N.iallreduce((void *)1 /* Open MPI's MPI_IN_PLACE */, buf + i, c, N.f32, N.sum, N.world, &req))
            return mock_fail("NCCL (the stand-in's, over MPI): MPI_Iallreduce failed");
        if (wait_request(req, "ncclAllReduce")) return -1;
        i += (size_t)c;
    }
    return 0;
}

int pc_nccl_reduce_scatter_f32(float *buf, size_t count) {
    MOCK_GUARD;
    if (!N.joined) return mock_fail("pc_nccl_reduce_scatter_f32: bad arguments: no communicator (pc_nccl_init first)");
    if (count > (size_t)INT_MAX) return mock_fail("pc_nccl_reduce_scatter_f32: the stand-in takes at most 2^31 - 1 a rank");
    void *req = NULL; /* in place, MPI puts this rank's sum at the buffer's start: moved to its chunk after */
    if (N.ireduce_scatter((void *)1 /* MPI_IN_PLACE */, buf, (int)count, N.f32, N.sum, N.world, &req))
        return mock_fail("NCCL (the stand-in's, over MPI): MPI_Ireduce_scatter_block failed");
    if (wait_request(req, "ncclReduceScatter")) return -1;
    memmove(buf + (size_t)N.rank * count, buf, sizeof(float) * count);
    return 0;
}

int pc_nccl_reduce_f32(float *buf, size_t n, int root, float *acc, int tag) {
    MOCK_GUARD;
    if (!N.joined) return mock_fail("pc_nccl_reduce_f32: bad arguments: no communicator (pc_nccl_init first)");
    if (tag < 0 || tag > 3 || root < -1 || root >= N.size || (root < 0 && acc))
        return mock_fail("pc_nccl_reduce_f32: bad arguments: tag in 0..3, root, acc with a root");
    const char *log = getenv("PPA_MOCK_NCCL_LOG");
    if (log && *log) {
        char path[4096];
        snprintf(path, sizeof path, "%s.%d", log, N.rank);
        FILE *f = fopen(path, "a");
        if (f) fprintf(f, "reduce %zu %d\n", n, root), fclose(f);
    }
    if (root < 0) return pc_nccl_sum_f32(buf, n); /* synchronous here: the stand-in has one stream */
    for (size_t i = 0; i < n;) { /* MPI counts are ints; synchronous here: the stand-in has one stream */
        int c = n - i > (size_t)INT_MAX ? INT_MAX : (int)(n - i);
        void *req = NULL, *in_place = (void *)1 /* MPI_IN_PLACE */;
        if (N.ireduce(N.rank == root ? in_place : buf + i, N.rank == root ? buf + i : NULL, c, N.f32, N.sum, root,
                      N.world, &req))
            return mock_fail("NCCL (the stand-in's, over MPI): MPI_Ireduce failed");
        if (wait_request(req, "ncclReduce")) return -1;
        i += (size_t)c;
    }
    if (acc && N.rank == root)
        for (size_t i = 0; i < n; i++) acc[i] += buf[i];
    return 0;
}

int pc_nccl_await(int tag) {
    MOCK_GUARD;
    return tag < 0 || tag > 3 ? mock_fail("pc_nccl_await: bad arguments: a tag in 0..3") : 0;
}

int pc_nccl_finish(void) {
    MOCK_GUARD;
    return N.joined ? 0 : mock_fail("pc_nccl_finish: bad arguments: no communicator (pc_nccl_init first)");
}

void pc_nccl_free(void) {
    MOCK_GUARD;
    N.joined = 0;
}
