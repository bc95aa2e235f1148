/* setup.c: a command's options and threads (setup.h). */
#include "cli/setup.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/common.h"
#include "device/cuda.h"
#include "gpu/gpu_model.h"
#include "hf/config.h"
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

/* the commands that train (train, sft, reward: every parameter of the model, one process) */
static int trains(const TrainOptions *o) { return (o->cmd & (CMD_TRAIN | CMD_SFT | CMD_REWARD)) != 0; }

/* the commands that run on a GPU: scoring (no backward), and training */
static int runs_on_gpu(const TrainOptions *o) {
    return (o->cmd & (CMD_LOGPROBS | CMD_SCORE | CMD_EVAL | CMD_GENERATE)) ||
           (o->cmd == CMD_JUDGE && o->reward_model && !o->pair_model) || trains(o);
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
    const char *cpu = NULL; /* a reason this run stays on the CPU */
    char cfg_why[512];
    /* auto: a model whose shape the GPU engine cannot run stays on the CPU (--device cuda refuses it when loaded) */
    const char *dir = o->cmd == CMD_JUDGE ? o->reward_model : o->model;
    ModelConfig mc;
    if (!cpu && o->device == DEVICE_AUTO && runs_on_gpu(o) && dir && !model_config_load(&mc, dir, cfg_why, sizeof cfg_why) &&
        gpu_config_refusal(&mc, cfg_why, sizeof cfg_why))
        cpu = cfg_why;
    int gpu = runs_on_gpu(o) && !cpu;
    if (gpu && device_cuda_open(-1, why, sizeof why)) gpu = 0;
    if (dist_size() > 1 && runs_on_gpu(o) && !cpu) { /* several ranks: all on their GPUs or none, the first why said */
        enum { W = 1024 };
        char mine[W] = "", first[W];
        if (!gpu) snprintf(mine, sizeof mine, "%.*s", W - 1, why);
        int r = dist_first_text(mine, W, first, sizeof first);
        if (r >= 0) snprintf(why, sizeof why, "rank %d: %s", r, first), gpu = 0;
    }
    if (!gpu && o->device == DEVICE_CUDA) {
        if (!runs_on_gpu(o) || cpu) {
            if (device_cuda_open(-1, why, sizeof why)) ppa_die(2, "%s: --device cuda: %s", who, why);
            ppa_die(2, "%s: --device cuda: %s is usable, but ppa %s%s%s does not run on the GPU yet: use --device cpu "
                       "(or auto)", who, device_cuda_name(), who, cpu ? " " : "", cpu ? cpu : "");
        }
        ppa_die(2, "%s: --device cuda: %s", who, why);
    }
    if (!gpu) {
        o->device = DEVICE_CPU;
        if (lead)
            fprintf(stderr, "ppa %s: device: cpu (--device auto: %s%s)\n", who, !runs_on_gpu(o) ? "this command runs on "
                    "the CPU" : cpu == cfg_why ? "the GPU engine cannot run the model: " : cpu ? "it runs on the CPU " : why,
                    !runs_on_gpu(o) ? "" : cpu ? cpu : "");
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
