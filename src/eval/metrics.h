/* metrics.h: what a user watches while aligning: per-list statistics of the
 * implicit reward s = beta (logp_policy - logp_ref) against the labels, and
 * their accumulation over many lists for `ppa eval` and the training log.
 *
 * Conventions (documented in docs/commands.md, ppa eval):
 *   - pairs are (w, l) with label_w > label_l; tied labels form no pair;
 *   - ranking accuracy of s: s_w > s_l (a tie in s is not correct), as the
 *     objectives library's metric;
 *   - likelihood ranking accuracy (the paper's Definition "Ranking Accuracy"):
 *     logp_policy(w) >= logp_policy(l);
 *   - rank flips (Definition "Successful rank flip"), with the same >= as
 *     "correct" under both models: gained = incorrect under the reference
 *     (logp_ref(w) < logp_ref(l)) and correct under the policy; lost = the
 *     reverse; rates are over the reference's incorrect (resp. correct) pairs;
 *   - accuracies, NDCG, rewards and margins are means over lists (lists
 *     without pairs do not count for accuracies), flips are counted over pairs. */
#ifndef PPA_METRICS_H
#define PPA_METRICS_H

#include <stdio.h>

#include "ppa/losses.h"

typedef struct {
    long lists, lists_with_pairs, pairs;
    double acc, lik_acc, ndcg, reward, margin, best_worst; /* sums over lists */
    long ref_incorrect, ref_correct, gained, lost;
} EvalSums;

/* One list of n responses: policy and reference summed log-probs, labels
 * (NaN: masked). o: NDCG options (k, gain, discount). */
void eval_add_list(EvalSums *e, const PpaLossOptions *o, double beta, int n, const double *lp_pol,
                   const double *lp_ref, const double *psi);

/* Writes one JSON object (no newline) with the means and counts. */
void eval_print_json(FILE *out, const EvalSums *e);

#endif
