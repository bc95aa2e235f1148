/* dist.c: MPI loaded at run time (dist.h). Open MPI's C ABI is declared
 * here for the few calls ppa makes (handles are pointers; the predefined
 * ones are the addresses of ompi_mpi_* objects), so building ppa needs no MPI
 * headers and running it alone needs no MPI library. */
#include "dist/dist.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "core/timer.h"

typedef void *Handle; /* MPI_Comm, MPI_Datatype, MPI_Op */

static struct {
    int (*Init)(int *, char ***);
    int (*Initialized)(int *);
    int (*Finalize)(void);
    int (*Comm_rank)(Handle, int *);
    int (*Comm_size)(Handle, int *);
    int (*Allreduce)(const void *, void *, int, Handle, Handle, Handle);
    int (*Bcast)(void *, int, Handle, int, Handle);
    int (*Allgatherv)(const void *, int, Handle, void *, const int *, const int *, Handle, Handle);
    int (*Barrier)(Handle);
    int (*Abort)(Handle, int);
    Handle world, f32, f64, byte, sum;
    void *lib;
    int rank, size;
    double sec, bytes, wait; /* dist_stats */
} M = {.size = 1};

void dist_stats(double *seconds, double *bytes, double *wait) { *seconds = M.sec, *bytes = M.bytes, *wait = M.wait; }

/* a barrier before a timed collective: the time ranks wait for the slowest one is counted apart from the
 * collective's own (on a shared or noisy machine the wait can be most of it) */
static void wait_for_all(void) {
    double t0 = timer_now();
    if (M.Barrier(M.world)) ppa_die(1, "MPI_Barrier failed");
    M.wait += timer_now() - t0;
}

/* a launcher's mark: Open MPI's mpirun, a PMIx or PMI-2 launcher (srun) */
static int launched(void) {
    const char *v = getenv("OMPI_COMM_WORLD_SIZE");
    if (!v) v = getenv("PMIX_SIZE");
    if (!v) v = getenv("PMI_SIZE");
    if (!v && getenv("PMIX_RANK")) v = "2";
    return v && atoi(v) > 1;
}

static _Noreturn void abort_job(int status) {
    M.Abort(M.world, status ? status : 1);
    exit(status); /* MPI_Abort does not return; if it does, leave anyway */
}

static void finalize(void) {
    int up = 0;
    if (M.Initialized && !M.Initialized(&up) && up) M.Finalize();
}

#define LOAD(name, sym)                                                                                                \
    if (!(*(void **)&M.name = dlsym(M.lib, sym))) {                                                                    \
        snprintf(err, errlen, "%s has no %s: ppa needs Open MPI's libmpi (openmpi-bin)", lib, sym);                    \
        return -1;                                                                                                     \
    }

int dist_init(char *err, size_t errlen) {
    if (!launched()) return 0;
    const char *lib = "libmpi.so.40";
    /* RTLD_GLOBAL: Open MPI loads its own components, which need libmpi's symbols */
    if (!(M.lib = dlopen(lib, RTLD_NOW | RTLD_GLOBAL))) {
        snprintf(err, errlen, "started by an MPI launcher, but %s does not load (%s): install openmpi-bin", lib, dlerror());
        return -1;
    }
    LOAD(Init, "MPI_Init") LOAD(Initialized, "MPI_Initialized") LOAD(Finalize, "MPI_Finalize")
    LOAD(Comm_rank, "MPI_Comm_rank") LOAD(Comm_size, "MPI_Comm_size") LOAD(Allreduce, "MPI_Allreduce")
    LOAD(Bcast, "MPI_Bcast") LOAD(Allgatherv, "MPI_Allgatherv") LOAD(Barrier, "MPI_Barrier") LOAD(Abort, "MPI_Abort")
    LOAD(world, "ompi_mpi_comm_world") LOAD(f32, "ompi_mpi_float") LOAD(f64, "ompi_mpi_double")
    LOAD(byte, "ompi_mpi_byte") LOAD(sum, "ompi_mpi_op_sum")
    if (M.Init(NULL, NULL)) {
        snprintf(err, errlen, "MPI_Init failed");
        return -1;
    }
    M.Comm_rank(M.world, &M.rank);
    M.Comm_size(M.world, &M.size);
    atexit(finalize);
    if (M.size > 1) ppa_die_setup(M.rank, abort_job);
    return 0;
}
#undef LOAD

int dist_rank(void) { return M.rank; }
int dist_size(void) { return M.size; }

void dist_share(long n, int r, long *lo, long *hi) {
    *lo = n * r / M.size;
    *hi = n * (r + 1) / M.size;
}

/* MPI counts are int: large buffers go in pieces */
enum { PIECE = 1 << 28 };

static void sum(void *buf, size_t n, size_t size, Handle type) {
    if (M.size < 2) return;
    wait_for_all();
    double t0 = timer_now();
    M.bytes += (double)(n * size);
    for (size_t at = 0; at < n; at += PIECE) {
        size_t k = n - at < PIECE ? n - at : PIECE;
        if (M.Allreduce((const void *)1 /* MPI_IN_PLACE */, (char *)buf + at * size, (int)k, type, M.sum, M.world))
            ppa_die(1, "MPI_Allreduce failed");
    }
    M.sec += timer_now() - t0;
}

void dist_sum_f32(float *buf, size_t n) { sum(buf, n, sizeof(float), M.f32); }
void dist_sum_f64(double *buf, size_t n) { sum(buf, n, sizeof(double), M.f64); }

void dist_bcast(void *buf, size_t bytes, int root) {
    if (M.size < 2) return;
    for (size_t at = 0; at < bytes; at += PIECE)
        if (M.Bcast((char *)buf + at, (int)(bytes - at < PIECE ? bytes - at : PIECE), M.byte, root, M.world))
            ppa_die(1, "MPI_Bcast failed");
}

static void allgather(const void *mine, void *all, const long *counts, size_t size, Handle type) {
    if (M.size < 2) {
        memmove(all, mine, size * (size_t)counts[0]);
        return;
    }
    int *c = xmalloc(sizeof(int) * (size_t)M.size), *d = xmalloc(sizeof(int) * (size_t)M.size);
    long at = 0;
    for (int r = 0; r < M.size; r++) {
        if (counts[r] > INT_MAX || at > INT_MAX - counts[r])
            ppa_die(1, "an all-gather of %ld elements is more than MPI's int counts allow", at + counts[r]);
        c[r] = (int)counts[r], d[r] = (int)at, at += counts[r];
    }
    wait_for_all();
    double t0 = timer_now();
    if (M.Allgatherv(mine, c[M.rank], type, all, c, d, type, M.world)) ppa_die(1, "MPI_Allgatherv failed");
    M.sec += timer_now() - t0, M.bytes += (double)(size * (size_t)c[M.rank]);
    free(c), free(d);
}

void dist_allgather_f64(const double *mine, double *all, const long *counts) {
    allgather(mine, all, counts, sizeof(double), M.f64);
}
void dist_allgather_f32(const float *mine, float *all, const long *counts) {
    allgather(mine, all, counts, sizeof(float), M.f32);
}

void dist_gather_bytes(const char *mine, size_t n, char **all, size_t *total) {
    int R = M.size;
    double *len = xcalloc((size_t)R, sizeof(double));
    len[M.rank] = (double)n;
    dist_sum_f64(len, (size_t)R);
    long *counts = xmalloc(sizeof(long) * (size_t)R);
    *total = 0;
    for (int r = 0; r < R; r++) counts[r] = (long)len[r], *total += (size_t)counts[r];
    *all = xmalloc(*total ? *total : 1);
    allgather(mine, *all, counts, 1, M.byte);
    free(len), free(counts);
}

void dist_barrier(void) {
    if (M.size > 1 && M.Barrier(M.world)) ppa_die(1, "MPI_Barrier failed");
}

void dist_abort(int status) {
    if (M.size > 1) abort_job(status);
    exit(status);
}
