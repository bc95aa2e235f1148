/* judges.c: the model judges opened as the options say (judges.h). */
#include "cli/judges.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/dataset.h"
#include "cli/load.h"
#include "core/common.h"
#include "judge/pair_judge.h"
#include "judge/reward_judge.h"
#include "model/decode.h"
#include "model/model.h"

/* the reward judge and what it was read with */
typedef struct {
    RewardJudge j;
    Prepared p; /* the tokenizer and template */
} RewardCtx;

static void open_reward(const TrainOptions *o, WinJudge *j) {
    if (!o->reward_model) ppa_die(2, "%s: --judge reward-model needs --reward-model DIR", options_command_name(o->cmd));
    RewardCtx *r = xcalloc(1, sizeof *r);
    r->j.m = load_judge_model(o, o->reward_model, 1);
    PrepArgs pa = dataset_args(o, r->j.m);
    pa.model_dir = o->reward_model;
    r->j.dopt = dataset_options(&r->p, &pa, options_command_name(o->cmd));
    r->j.index = o->reward_index, r->j.NL = model_config(r->j.m)->num_labels;
    j->score = reward_judge_scores, j->ctx = &r->j; /* first member: the context is the RewardCtx */
}

typedef struct {
    Model *m;
    PairJudge *judge;
} PairCtx;

static int pair_prefer(void *ctx, const char *prompt, const char *a, const char *b, double *p, char *err,
                       size_t errlen) {
    return pair_judge_prefer(((PairCtx *)ctx)->judge, prompt, a, b, p, err, errlen);
}

static void open_pair(const TrainOptions *o, WinJudge *j) {
    const char *who = options_command_name(o->cmd);
    if (!o->pair_model || !o->pair_template)
        ppa_die(2, "%s: the pair-model judge needs --pair-model DIR and --pair-template FILE "
                   "(examples/pair_templates/rlhflow_llama3.txt is the paper's judge's)", who);
    PairCtx *c = xcalloc(1, sizeof *c);
    c->m = load_judge_model(o, o->pair_model, 0);
    char err[4096];
    PairJudgeOptions po = {NULL, NULL, 0, o->special_tokens_in_text};
    c->judge = pair_judge_new(c->m, o->pair_model, o->pair_template, &po, err, sizeof err);
    if (!c->judge) ppa_die(2, "%s: %s", who, err);
    j->prefer = pair_prefer, j->ctx = c;
}

void model_judge_open(const TrainOptions *o, const char *kind, WinJudge *j) {
    if (!strcmp(kind, "reward-model")) open_reward(o, j);
    else open_pair(o, j);
}

void model_judge_close(WinJudge *j) {
    if (j->score == reward_judge_scores) {
        RewardCtx *r = j->ctx;
        dataset_free(&r->p);
        model_free(r->j.m);
        free(r);
    } else if (j->prefer == pair_prefer) {
        PairCtx *c = j->ctx;
        pair_judge_free(c->judge);
        model_free(c->m);
        free(c);
    }
    j->ctx = NULL;
}
