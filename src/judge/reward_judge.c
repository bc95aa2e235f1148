/* reward_judge.c: a reward model as a score judge (reward_judge.h). */
#include "judge/reward_judge.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "model/decode.h"

/* WinScoreFn: one {"prompt", "responses"} row, as data_read reads it, in one batch */
int reward_judge_scores(void *ctx, const char *prompt, const char *const *responses, int n, double *out, char *err,
                        size_t errlen) {
    const RewardJudge *r = ctx;
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
    double *rw = xmalloc(sizeof(double) * (size_t)n * (size_t)r->NL);
    rc = model_forward_rows_rewards(r->m, &b, 1, rw, err, errlen); /* on the model's engine */
    for (int k = 0; !rc && k < n; k++) out[k] = rw[(size_t)k * r->NL + r->index];
    free(rw);
    data_row_free(&row);
    return rc;
}
