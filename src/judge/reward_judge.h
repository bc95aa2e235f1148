/* reward_judge.h: a reward model as a score judge (`ppa judge --reward-model`
 * through `ppa winrate`): the responses of one prompt rendered and tokenized
 * as a {"prompt", "responses"} row of the data files (the reward model's
 * tokenizer and chat template), scored in one batch with the prompt
 * computed once; the score is the head's output `index`. */
#ifndef PPA_JUDGE_REWARD_JUDGE_H
#define PPA_JUDGE_REWARD_JUDGE_H

#include <stddef.h>

#include "data/rows.h"
#include "model/model.h"

typedef struct {
    Model *m;         /* a reward model (frozen is fine) */
    DataOptions dopt; /* its tokenizer and chat template */
    int index, NL;    /* the head's output used, of NL */
} RewardJudge;

/* eval/winrate.h's WinScoreFn with ctx a RewardJudge: out [n] the scores of the n responses; 0, or -1 with err */
int reward_judge_scores(void *ctx, const char *prompt, const char *const *responses, int n, double *out, char *err,
                        size_t errlen);

#endif
