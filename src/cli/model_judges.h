/* model_judges.h: the model judges `ppa judge` and `ppa winrate` share, as
 * winrate callbacks (eval/winrate.h):
 *   reward-model  a score judge: the responses of a prompt rendered and
 *                 tokenized as `ppa judge --reward-model` reads a
 *                 {"prompt", "responses"} row (the reward model's tokenizer
 *                 and chat template), scored in one batch with the prompt
 *                 computed once; the head's output --reward-index;
 *   pair-model    a preference judge: judge/pair_judge.h on --pair-model with
 *                 --pair-template, both orders averaged.
 * Both load their model frozen in --precision; a problem dies with exit 2. */
#ifndef PPA_CLI_MODEL_JUDGES_H
#define PPA_CLI_MODEL_JUDGES_H

#include "eval/winrate.h"
#include "options/options.h"

/* kind: "reward-model" or "pair-model"; sets j->score or j->prefer, and j->ctx */
void model_judge_open(const TrainOptions *o, const char *kind, WinJudge *j);
void model_judge_close(WinJudge *j);

#endif
