/* metrics.c: eval_add_list and its JSON. */
#include "eval/metrics.h"

#include <math.h>
#include <stdlib.h>

#include "core/common.h"

/* the pair statistics of one list; returns the number of pairs */
static long pair_stats(EvalSums *e, int n, const double *s, const double *lp, const double *ref, const double *psi,
                       double *acc, double *lik, double *margin) {
    long pairs = 0, ok = 0, lok = 0;
    double msum = 0;
    for (int w = 0; w < n; w++)
        for (int l = 0; l < n; l++) {
            if (isnan(psi[w]) || isnan(psi[l]) || !(psi[w] > psi[l])) continue;
            pairs++;
            ok += s[w] > s[l];
            lok += lp[w] >= lp[l];
            msum += s[w] - s[l];
            int ref_ok = ref[w] >= ref[l], pol_ok = lp[w] >= lp[l];
            e->ref_correct += ref_ok, e->ref_incorrect += !ref_ok;
            e->gained += !ref_ok && pol_ok, e->lost += ref_ok && !pol_ok;
        }
    if (pairs) *acc = (double)ok / pairs, *lik = (double)lok / pairs, *margin = msum / pairs;
    return pairs;
}

void eval_add_list(EvalSums *e, const PpaLossOptions *o, double beta, int n, const double *lp_pol,
                   const double *lp_ref, const double *psi) {
    double *s = xmalloc(sizeof(double) * (size_t)(n ? n : 1)), sum = 0;
    int valid = 0, best = -1, worst = -1;
    for (int i = 0; i < n; i++) {
        s[i] = beta * (lp_pol[i] - lp_ref[i]);
        if (isnan(psi[i])) continue;
        valid++, sum += s[i];
        if (best < 0 || psi[i] > psi[best]) best = i; /* first of tied labels */
        if (worst < 0 || psi[i] < psi[worst]) worst = i;
    }
    e->lists++;
    if (valid) e->reward += sum / valid;
    if (valid >= 2) e->best_worst += s[best] - s[worst];
    double acc = 0, lik = 0, margin = 0;
    long pairs = pair_stats(e, n, s, lp_pol, lp_ref, psi, &acc, &lik, &margin);
    if (pairs) e->lists_with_pairs++, e->pairs += pairs, e->acc += acc, e->lik_acc += lik, e->margin += margin;
    PpaListMetrics m;
    if (ppa_metrics_list(o, n, s, psi, NULL, &m) == PPA_OK && !isnan(m.ndcg)) e->ndcg += m.ndcg;
    free(s);
}

static double ratio(double a, double b) { return b > 0 ? a / b : NAN; }

static void num(FILE *out, const char *key, double v, int last) {
    if (isnan(v)) fprintf(out, "\"%s\": null%s", key, last ? "" : ", ");
    else fprintf(out, "\"%s\": %.6g%s", key, v, last ? "" : ", ");
}

void eval_print_json(FILE *out, const EvalSums *e) {
    fputc('{', out);
    fprintf(out, "\"lists\": %ld, \"lists_with_pairs\": %ld, \"pairs\": %ld, ", e->lists, e->lists_with_pairs, e->pairs);
    num(out, "ranking_accuracy", ratio(e->acc, (double)e->lists_with_pairs), 0);
    num(out, "likelihood_ranking_accuracy", ratio(e->lik_acc, (double)e->lists_with_pairs), 0);
    num(out, "ndcg", ratio(e->ndcg, (double)e->lists), 0);
    num(out, "mean_reward", ratio(e->reward, (double)e->lists), 0);
    num(out, "mean_margin", ratio(e->margin, (double)e->lists_with_pairs), 0);
    num(out, "best_worst_margin", ratio(e->best_worst, (double)e->lists), 0);
    fprintf(out, "\"rank_flips_gained\": %ld, \"rank_flips_lost\": %ld, ", e->gained, e->lost);
    fprintf(out, "\"reference_incorrect_pairs\": %ld, \"reference_correct_pairs\": %ld, ", e->ref_incorrect, e->ref_correct);
    num(out, "rank_flip_gain_rate", ratio((double)e->gained, (double)e->ref_incorrect), 0);
    num(out, "rank_flip_loss_rate", ratio((double)e->lost, (double)e->ref_correct), 1);
    fputc('}', out);
}
