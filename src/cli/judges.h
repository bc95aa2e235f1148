/* judges.h: the model judges `ppa judge` and `ppa winrate` share, as
 * winrate callbacks (eval/winrate.h):
 *   reward-model  a score judge (judge/reward_judge.h) on --reward-model,
 *                 its head's output --reward-index;
 *   pair-model    a preference judge (judge/pair_judge.h) on --pair-model with
 *                 --pair-template, both orders averaged.
 * The judging is src/judge's; this opens them from the command's options.
 * Both load their model frozen in --precision; a problem dies with exit 2. */
#ifndef PPA_CLI_JUDGES_H
#define PPA_CLI_JUDGES_H

#include "eval/winrate.h"
#include "options/options.h"

/* kind: "reward-model" or "pair-model"; sets j->score or j->prefer, and j->ctx */
void model_judge_open(const TrainOptions *o, const char *kind, WinJudge *j);
void model_judge_close(WinJudge *j);

#endif
