/* setup.c: a command's options and threads (setup.h). */
#include "cli/setup.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/common.h"
#include "device/cuda.h"
#include "dist/dist.h"
#include "io/jsonl.h"
#include "kernels/gemm.h"

void setup_threads(int n) {
    if (n <= 0) return;
    gemm_set_threads(n);
#ifdef _OPENMP
    omp_set_num_threads(n);
#endif
}

void setup_options(OptCommand cmd, const char *usage, int argc, char **argv, TrainOptions *o) {
    char err[4096];
    TrainOptionsStatus s = options_parse(cmd, argc, argv, o, err, sizeof err);
    if (s == TRAIN_OPTIONS_ERROR) {
        train_options_free(o);
        ppa_die(2, "%s: %s", options_command_name(cmd), err);
    }
    if (s == TRAIN_OPTIONS_HELP) {
        if (cmd == CMD_TRAIN) train_options_help(stdout);
        else fputs(usage, stdout), options_help(cmd, stdout);
    } else if (s == TRAIN_OPTIONS_LIST_OBJECTIVES) {
        for (int i = 0; i < PPA_N_OBJECTIVES; i++) puts(ppa_objective_name((PpaObjective)i));
    }
    if (s != TRAIN_OPTIONS_OK) {
        train_options_free(o);
        exit(0);
    }
    if (options_check_paths(o, err, sizeof err)) {
        train_options_free(o);
        ppa_die(2, "%s: %s", options_command_name(cmd), err);
    }
    setup_threads(o->threads);
    jsonl_set_max_line((size_t)o->max_line_bytes);
    if (options_takes(cmd, TOPT_COLLECTIVE_TIMEOUT)) dist_set_timeout((double)o->collective_timeout);
    setup_device(o);
}

/* Where the command computes, said in its first log line. No command runs on the GPU yet (the CUDA module holds
 * the kernels; the engine's passes come to it command by command), so auto is the CPU without probing the GPU,
 * and cuda is refused: naming why no GPU is usable, or that the command does not run there yet. */
void setup_device(const TrainOptions *o) {
    const char *who = options_command_name(o->cmd);
    if (o->device == DEVICE_CUDA) {
        char why[8192];
        if (device_cuda_open(0, why, sizeof why)) ppa_die(2, "%s: --device cuda: %s", who, why);
        ppa_die(2, "%s: --device cuda: %s is usable, but ppa %s does not run on the GPU yet: use --device cpu (or auto)",
                who, device_cuda_name(), who);
    }
    if (dist_rank() == 0)
        fprintf(stderr, "ppa %s: device: cpu%s\n", who, o->device == DEVICE_AUTO ? " (--device auto: no command runs "
                                                                                   "on the GPU yet)" : "");
}
