/* paths.c: what each command does with the paths its options name,
 * for paths_check (io/paths.h): an output never replaces an input. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "hf/carry.h"
#include "io/paths.h"
#include "io/records.h"
#include "options/internal.h"

/* what a training command writes into --out: the model folder (model_save) with the files it carries from its input
 * (hf/carry.h), the run's files and caches */
static const char *const RUN_OWN[] = {"config.json", "generation_config.json", "*.safetensors",
                                      "model.safetensors.index.json", "adapter_config.json", "train_options.json",
                                      "train_log.jsonl", "summary.json", "reference.cache", "reference.eval.cache", ".ppa.lock"};

static const char *const *run_writes(void) {
    static const char *all[PPA_ARRAY_LEN(RUN_OWN) + 32];
    if (all[0]) return all;
    size_t n = 0;
    for (size_t i = 0; i < PPA_ARRAY_LEN(RUN_OWN); i++) all[n++] = RUN_OWN[i];
    for (size_t i = 0; CARRY_TOKENIZER_FILES[i] && n + 1 < PPA_ARRAY_LEN(all); i++) all[n++] = CARRY_TOKENIZER_FILES[i];
    all[n] = NULL;
    return all;
}

static const struct {
    TrainOptId id;
    PathRole role; /* TOPT_OUT: decided by the command */
} ROLES[] = {
    {TOPT_MODEL, PATH_IN_DIR},       {TOPT_DATA, PATH_IN_FILE},         {TOPT_REF, PATH_IN_DIR},
    {TOPT_RESUME, PATH_IN_DIR},      {TOPT_EVAL_DATA, PATH_IN_FILE},    {TOPT_ADAPTER, PATH_IN_DIR},
    {TOPT_PROMPTS, PATH_IN_FILE},    {TOPT_REWARD_MODEL, PATH_IN_DIR},  {TOPT_PAIR_MODEL, PATH_IN_DIR},
    {TOPT_PAIR_TEMPLATE, PATH_IN_FILE}, {TOPT_A, PATH_IN_FILE},         {TOPT_B, PATH_IN_FILE},
    {TOPT_NPM_CACHE, PATH_IN_DIR},   {TOPT_OUT, PATH_OUT_FILE},         {TOPT_LOG, PATH_OUT_FILE},
    {TOPT_REF_CACHE, PATH_OUT_FILE}, /* read when it exists, written when not: checked as an output */
};

/* the row inputs, which may name several files (io/records.h: a folder of shards, a glob, a comma list) */
static int several_files(TrainOptId id) {
    return id == TOPT_DATA || id == TOPT_EVAL_DATA || id == TOPT_PROMPTS || id == TOPT_A || id == TOPT_B;
}

int options_check_paths(const TrainOptions *o, char *err, size_t errlen) {
    enum { N = PPA_ARRAY_LEN(ROLES) };
    PathUse *use = xcalloc(N + 2, sizeof(PathUse));
    char flags[N][64], **names[N] = {0};
    int n = 0, cap = N + 2, n_names[N] = {0};
    for (size_t i = 0; i < N; i++) {
        TrainOptId id = ROLES[i].id;
        if (!opt_takes(o->cmd, id)) continue;
        PathUse u = {opt_flag(id, flags[i], sizeof flags[i]), *(char *const *)((const char *)o + OPT[id].off),
                     ROLES[i].role, NULL};
        if (id == TOPT_OUT && (o->cmd & (CMD_TRAIN | CMD_REWARD | CMD_SFT))) u.role = PATH_OUT_DIR, u.writes = run_writes();
        use[n++] = u;
        char why[512];
        if (several_files(id) && u.path && !records_files(u.path, &names[i], &n_names[i], why, sizeof why) &&
            (n_names[i] > 1 || strcmp(names[i][0], u.path))) { /* each file of the input is an input too */
            use = xrealloc(use, sizeof(PathUse) * (size_t)(cap += n_names[i]));
            for (int k = 0; k < n_names[i]; k++) use[n++] = (PathUse){u.option, names[i][k], PATH_IN_FILE, NULL};
        }
    }
    if (o->cmd == CMD_TRAIN) use[n++] = (PathUse){"--config", o->config, PATH_IN_FILE, NULL};
    paths_add_stdout(use, &n);
    int rc = paths_check(use, n, err, errlen);
    for (size_t i = 0; i < N; i++) {
        for (int k = 0; k < n_names[i]; k++) free(names[i][k]);
        free(names[i]);
    }
    free(use);
    return rc;
}
