/* model_judges.c: the reward-model and pair-model judges (model_judges.h). */
#include "cli/model_judges.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/prep.h"
#include "core/common.h"
#include "judge/pair_judge.h"
#include "model/decode.h"
#include "model/model.h"

typedef struct {
    Model *m;
    Prepared p; /* the tokenizer and template */
    DataOptions dopt;
    int index, NL;
} RewardJudge;

/* WinScoreFn: one {"prompt", "responses"} row, as data_read reads it, in one batch */
static int reward_scores(void *ctx, const char *prompt, const char *const *responses, int n, double *out, char *err,
                         size_t errlen) {
    RewardJudge *r = ctx;
    cJSON *j = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(j, "responses");
    cJSON_AddStringToObject(j, "prompt", prompt);
    for (int k = 0; k < n; k++) cJSON_AddItemToArray(list, cJSON_CreateString(responses[k]));
    char *text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!text) ppa_die(1, "winrate: out of memory");
    DataRow row;
    int rc = data_row_parse(text, strlen(text), &row, &r->dopt, err, errlen);
    free(text);
    if (rc) return -1;
    for (int k = 0; k < row.n_resp && !rc; k++)
        if (row.prompt_len + row.resp_len[k] > decoder_model_max_len(model_config(r->m)))
            rc = -1, snprintf(err, errlen, "response %d is %d tokens with its prompt, more than the %d the reward model "
                                            "computes exactly", k + 1, row.prompt_len + row.resp_len[k],
                              decoder_model_max_len(model_config(r->m)));
    if (rc) {
        data_row_free(&row);
        return -1;
    }
    Row b = {row.prompt_len, row.prompt, row.n_resp, row.resp_len, (const int *const *)row.resp};
    Batch *batch = batch_new(r->m, &b, 1, err, errlen);
    if (!batch) {
        data_row_free(&row);
        return -1;
    }
    double *rw = xmalloc(sizeof(double) * (size_t)n * (size_t)r->NL);
    model_forward_rewards(r->m, batch, rw);
    for (int k = 0; k < n; k++) out[k] = rw[(size_t)k * r->NL + r->index];
    free(rw);
    batch_free(batch);
    data_row_free(&row);
    return 0;
}

static void open_reward(const TrainOptions *o, WinJudge *j) {
    if (!o->reward_model) ppa_die(2, "%s: --judge reward-model needs --reward-model DIR", options_command_name(o->cmd));
    RewardJudge *r = xcalloc(1, sizeof *r);
    r->m = prep_judge_model(o, o->reward_model, 1);
    PrepArgs pa = prep_args(o, r->m);
    pa.model_dir = o->reward_model;
    r->dopt = prep_data_options(&r->p, &pa, options_command_name(o->cmd));
    r->index = o->reward_index, r->NL = model_config(r->m)->num_labels;
    j->score = reward_scores, j->ctx = r;
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
    c->m = prep_judge_model(o, o->pair_model, 0);
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
    if (j->score == reward_scores) {
        RewardJudge *r = j->ctx;
        prep_free(&r->p);
        model_free(r->m);
        free(r);
    } else if (j->prefer == pair_prefer) {
        PairCtx *c = j->ctx;
        pair_judge_free(c->judge);
        model_free(c->m);
        free(c);
    }
    j->ctx = NULL;
}
