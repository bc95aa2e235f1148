/* fuzz_checkpoint_state.c: the training state of a checkpoint folder
 * (train/state.h state_load). The input is ppa_state.json; the folder also
 * holds a fixed valid optimizer.safetensors for a model of N_PARAMS
 * parameters, which state_load reads after the state file. */
#include <sys/stat.h>

#include "fuzz_common.h"
#include "io/safetensors.h"
#include "train/state.h"

#define N_PARAMS 4

static char dir[600], state_path[700];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    char opt_path[700], err[1024];
    fuzz_path(dir, sizeof dir, "checkpoint-1");
    FUZZ_ASSERT(mkdir(dir, 0700) == 0, "mkdir %s", dir);
    snprintf(state_path, sizeof state_path, "%s/ppa_state.json", dir);
    snprintf(opt_path, sizeof opt_path, "%s/optimizer.safetensors", dir);
    const float m[N_PARAMS] = {0.1f, -0.2f, 0.3f, 0}, v[N_PARAMS] = {0.01f, 0.04f, 0.09f, 0};
    const int64_t shape[1] = {N_PARAMS};
    StWriteTensor t[2] = {{"exp_avg", 1, shape, m}, {"exp_avg_sq", 1, shape, v}};
    FUZZ_ASSERT(st_write(opt_path, t, 2, ST_F32, err, sizeof err) == 0, "the fixed moments: %s", err);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_write(state_path, data, size);
    AdamW opt;
    adamw_init(&opt, N_PARAMS);
    TrainState st;
    char err[2048];
    if (state_load(dir, &opt, &st, err, sizeof err) == 0) {
        FUZZ_ASSERT(st.options && opt.m[1] == -0.2f && opt.v[2] == 0.09f, "state or moments not read");
        FUZZ_ASSERT(st.step >= 0 && st.epoch >= 0 && st.cursor >= 0 && st.threads >= 0, "a negative count loaded");
    }
    state_free(&st);
    adamw_free(&opt);
    return 0;
}
