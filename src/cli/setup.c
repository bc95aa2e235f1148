/* setup.c: a command's options and threads (setup.h). */
#include "cli/setup.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/common.h"
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
}
