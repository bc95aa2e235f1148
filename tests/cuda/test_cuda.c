/* test_cuda.c: the GPU tests of the CUDA module (build/libppa_cuda.so): every kernel family against the CPU
 * engine's own kernels (build/libppa.a) on random inputs drawn afresh each run (the seed is printed), outputs
 * poisoned before each run, reruns compared bit for bit, guard bytes after every output; one table of kernel,
 * shape, error, bound, median time and its floor. The bounds are stated and derived in each family's file
 * (t_*.c). Usage:
 *   test_cuda                 all tests, small and model-sized shapes, timed
 *   test_cuda --small         small shapes only, untimed (for compute-sanitizer)
 *   test_cuda --bench [DIR]   the kernel benchmark on Qwen2-0.5B and Llama-3.1-8B shapes (DIR: where to leave the
 *                             LM head's inputs and times for bench/cuda_lmhead_torch.py)
 *   --seed N  repeat a run's inputs;  --reps N  timed runs per kernel (median; 7)
 *   --only NAME  one family: convert matmul embedding rmsnorm rope swiglu lmhead sample adamw
 *   --no-limits  no bandwidth and bf16-rate measurement first (no floors)
 *   --bench-tiny the benchmark's code on toy shapes (with --bench; the CPU stand-in runs it)
 * Exit status: 0 all passed, 1 a failure, 77 no usable GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "families.h"
#include "harness.h"

int main(int argc, char **argv) {
    h_begin();
    int bench = 0, limits = 1, tiny = 0;
    const char *dump = NULL, *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--small")) h_small = 1;
        else if (!strcmp(argv[i], "--bench")) {
            bench = 1;
            if (i + 1 < argc && argv[i + 1][0] != '-') dump = argv[++i];
        } else if (!strcmp(argv[i], "--seed") && i + 1 < argc) h_seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) h_reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--no-limits")) limits = 0;
        else if (!strcmp(argv[i], "--bench-tiny")) tiny = 1;
        else {
            fprintf(stderr, "usage: test_cuda [--small] [--bench [DIR]] [--seed N] [--reps N] [--only FAMILY] [--no-limits] [--bench-tiny]\n");
            return 2;
        }
    }
    if (h_reps < 1) h_reps = 1;
    if (h_gpu_open("test_cuda", "inputs")) return 77;
    fflush(stdout);
    if (limits) h_measure_limits();
    if (bench) {
        b_models(dump, tiny);
    } else {
        static const struct {
            const char *name;
            void (*fn)(void);
        } fam[] = {{"convert", t_convert}, {"matmul", t_matmul}, {"embedding", t_embedding}, {"rmsnorm", t_rmsnorm},
                   {"rope", t_rope},       {"swiglu", t_swiglu}, {"lmhead", t_lmhead},       {"sample", t_sample},
                   {"decode", t_decode},   {"adamw", t_adamw},     {"adamw", t_global_norm},
                   {"nccl", t_nccl}};
        h_table_header(h_small ? "tests (small shapes, untimed)" : "tests");
        for (size_t i = 0; i < sizeof fam / sizeof fam[0]; i++)
            if (!only || !strcmp(only, fam[i].name)) fam[i].fn();
    }
    int bad = pc_sync();
    H_CHECK(bad == 0, "the stream ends with an error: %s", bad ? pc_error() : "");
    pc_shutdown();
    printf("test_cuda: %d passed, %d failed\n", h_passed(), h_failed());
    return h_failed() ? 1 : 0;
}
