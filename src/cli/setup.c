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

/* the commands whose forward runs on a GPU (scoring: no backward) */
static int runs_on_gpu(const TrainOptions *o) {
    return (o->cmd & (CMD_LOGPROBS | CMD_SCORE | CMD_EVAL)) || (o->cmd == CMD_JUDGE && o->reward_model && !o->pair_model);
}

/* Where the command computes, resolved once (o->device becomes DEVICE_CPU or DEVICE_CUDA) and said in its first log
 * line. The scoring commands (logprobs, score, eval, judge --reward-model) run on a usable GPU with --device cuda,
 * and with auto when there is one (auto looks for it only for them); the others run on the CPU, and refuse --device
 * cuda saying so. On the GPU the products run in bf16 unless --precision says fp32 (the oracle mode); the host
 * model that uploads them is loaded in that precision too, so the reference cache's key names it. */
void setup_device(TrainOptions *o) {
    const char *who = options_command_name(o->cmd);
    char why[8192] = "";
    int lead = dist_rank() == 0;
    if (o->device == DEVICE_CPU) {
        if (lead) fprintf(stderr, "ppa %s: device: cpu\n", who);
        return;
    }
    int gpu = runs_on_gpu(o) && !o->adapter;
    if (gpu && device_cuda_open(-1, why, sizeof why)) gpu = 0;
    if (!gpu && o->device == DEVICE_CUDA) {
        if (!runs_on_gpu(o) || o->adapter) {
            if (device_cuda_open(-1, why, sizeof why)) ppa_die(2, "%s: --device cuda: %s", who, why);
            ppa_die(2, "%s: --device cuda: %s is usable, but ppa %s%s does not run on the GPU yet: use --device cpu "
                       "(or auto)", who, device_cuda_name(), who, o->adapter ? " with an --adapter" : "");
        }
        ppa_die(2, "%s: --device cuda: %s", who, why);
    }
    if (!gpu) {
        o->device = DEVICE_CPU;
        if (lead)
            fprintf(stderr, "ppa %s: device: cpu (--device auto: %s)\n", who, !runs_on_gpu(o) ? "this command runs on "
                    "the CPU" : o->adapter ? "adapters run on the CPU" : why);
        return;
    }
    o->device = DEVICE_CUDA;
    if (o->origin[TOPT_PRECISION].from == TRAIN_FROM_DEFAULT) o->bf16 = 1; /* the GPU's default */
    /* the host copy of a bf16 model is only uploaded, never multiplied here: the CPU's bf16 kernel check (made for
     * its speed) does not apply to it */
    if (o->bf16) setenv("PPA_BF16", "builtin", 0);
    if (lead)
        fprintf(stderr, "ppa %s: device: cuda: %s, %s products\n", who, device_cuda_name(), o->bf16 ? "bf16" : "float32");
}

long setup_batch_tokens(const TrainOptions *o) {
    if (o->batch_tokens > 0) return o->batch_tokens;
    return o->device == DEVICE_CUDA ? 32768 : 4096;
}
