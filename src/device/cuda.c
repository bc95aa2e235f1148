/* cuda.c: the CUDA module loaded at run time (cuda.h), its functions resolved into one table (pc_api.h). */
#include "device/cuda.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/dynlib.h"

static struct {
    int tried, ok;
    char why[4 * PATH_MAX], name[256];
    void *lib;
    PcApi api; /* every entry resolved, or the open failed */
} G;

/* the module's search order: $PPA_CUDA_LIB, else the binary's own folder, else its build/ (a checkout's ./ppa);
 * never a folder above the binary, which others may be able to create (/tmp/lib for a binary in /tmp/X) */
static const char *const WHERE[] = {"%s/libppa_cuda.so", "%s/build/libppa_cuda.so"};

/* the module's path: $PPA_CUDA_LIB, else the first candidate that exists; -1: none (tried lists where it looked) */
static int find_module(char *path, size_t n, char *tried, size_t ntried) {
    const char *env = getenv("PPA_CUDA_LIB");
    if (env && *env) return snprintf(path, n, "%s", env), 0;
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) return snprintf(tried, ntried, "PPA_CUDA_LIB (unset); the binary's folder (unknown)"), -1;
    exe[len] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0;
    size_t used = (size_t)snprintf(tried, ntried, "PPA_CUDA_LIB (unset)");
    for (size_t i = 0; i < sizeof WHERE / sizeof WHERE[0]; i++) {
        snprintf(path, n, WHERE[i], exe);
        if (!access(path, F_OK)) return 0;
        if (used < ntried) used += (size_t)snprintf(tried + used, ntried - used, ", %s", path);
    }
    return -1;
}

/* resolves every function of the table; the first one missing (NULL: none) */
static const char *resolve(PcApi *a) {
#define PC_API_RESOLVE(ret, name, params)                                                                              \
    if (!(*(void **)&a->name = dlsym(G.lib, #name))) return #name;
    PC_API_FUNCTIONS(PC_API_RESOLVE)
#undef PC_API_RESOLVE
    return NULL;
}

/* this process's place among the ranks on its node, as the launchers say it (0 alone) */
static int local_rank(void) {
    static const char *const VARS[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "LOCAL_RANK"};
    for (size_t i = 0; i < sizeof VARS / sizeof VARS[0]; i++) {
        const char *v = getenv(VARS[i]);
        if (v && *v) return atoi(v) > 0 ? atoi(v) : 0;
    }
    return 0;
}

/* the GPU asked for, or (-1) the local rank's, round robin over those the driver shows */
static int pick(int index) {
    int n = G.api.pc_device_count();
    return index >= 0 ? index : n > 0 ? local_rank() % n : 0;
}

int device_cuda_open(int index, char *err, size_t errlen) {
    if (!G.tried) {
        G.tried = 1;
        char path[PATH_MAX + 64];
        const char *missing = NULL;
        char tried[2 * PATH_MAX + 64], why[PATH_MAX + 512];
        if (find_module(path, sizeof path, tried, sizeof tried))
            snprintf(G.why, sizeof G.why, "no CUDA module: this ppa was built without nvcc (looked in: %s; build "
                     "with the CUDA toolkit, or set PPA_CUDA_LIB=/path/to/libppa_cuda.so)", tried);
        else if (dynlib_check(path, NULL, why, sizeof why))
            snprintf(G.why, sizeof G.why, "the CUDA module is refused: %s", why);
        else if (!(G.lib = dynlib_open(path, RTLD_NOW | RTLD_LOCAL, why, sizeof why)))
            snprintf(G.why, sizeof G.why, "the CUDA module does not load: %s (NVIDIA's libcudart and libcublasLt "
                     "must be on the library path)", why);
        else if (!dlsym(G.lib, "pc_init"))
            snprintf(G.why, sizeof G.why, "%s is not ppa's CUDA module (no pc_init)", path);
        else if ((missing = resolve(&G.api)))
            snprintf(G.why, sizeof G.why, "%s is another version of ppa's CUDA module: it has no %s (rebuild it with "
                     "this ppa: make)", path, missing);
        else if (G.api.pc_init(index = pick(index), G.why, sizeof G.why) == 0) {
            size_t free_b = 0, total = 0;
            G.api.pc_mem_info(&free_b, &total);
            int cc = G.api.pc_device_cc();
            snprintf(G.name, sizeof G.name, "%s (GPU %d, sm_%d, %.0f GiB, %.0f GiB free)", G.api.pc_device_name(),
                     index, cc, (double)total / 1073741824.0, (double)free_b / 1073741824.0);
            G.ok = 1;
        }
    }
    if (!G.ok) snprintf(err, errlen, "%s", G.why);
    return G.ok ? 0 : -1;
}

const PcApi *device_cuda_api(void) { return G.ok ? &G.api : NULL; }

const char *device_cuda_name(void) { return G.name; }
