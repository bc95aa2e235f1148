/* objective_opts.c: the objective options table (objective_opts.h). */
#include "losses/objective_opts.h"

#include <string.h>

const ObjectiveOpt OBJECTIVE_OPTS[OBJECTIVE_OPT_COUNT] = {
    {"objective", 1, NULL, "NAME",
     "neural_ndcg (alias ppa), approx_ndcg, lambda (lipo, lambdarank),\n"
     "ranknet, dpo_single_pair, dpo_bpr, dpo_ovw, dpo_all_pairs (dpo),\n"
     "hinge (slic), listmle (dpo_pl), listnet, ipo, simpo"},
    {"tau", 1, "tau", "X", "NeuralSort temperature (neural_ndcg; 1.0)"},
    {"alpha", 1, "alpha", "X", "ApproxNDCG sharpness (25)"},
    {"k", 1, "k", "N", "NDCG@k (neural_ndcg, lambda, metric; default: list size)"},
    {"gain", 1, "gain", "G", "pow2 (2^psi - 1, default) | linear"},
    {"discount", 1, "discount", "D", "log2 (default) | inv | inv_sqrt | inv_sq"},
    {"no-sinkhorn", 0, NULL, NULL, "NeuralSort without Sinkhorn scaling"},
    {"sinkhorn-iters", 1, "sinkhorn_iters", "N", "at most N Sinkhorn iterations, 1..100000 (50)"},
    {"sinkhorn-tol", 1, "sinkhorn_tol", "X", "stop a list once row and column sums are within X of 1 (1e-6)"},
    {"ties", 1, "ties", "T", "pairwise objectives: exclude (default, the paper) | include (authors' code)"},
    {"pairs", 1, "pairs", "P",
     "ipo/simpo pairing: all_pairs (default) | best_with_worst |\n"
     "best_with_others | others_vs_worst"},
    {"sigma", 1, "sigma", "X", "lambda sigma_0 (1.0)"},
    {"label-smoothing", 1, "label_smoothing", "X", "dpo/simpo epsilon, in [0, 0.5) (0)"},
    {"gamma", 1, "gamma", "X", "simpo margin (0.1)"},
    {"beta", 1, "beta", "X", "ipo beta (0.1)"},
    {"normalize", 0, NULL, NULL, "listmle: divide by the list size"},
    {"list-objectives", 0, NULL, NULL, "print the objective names and exit"},
};

int objective_opt_find(const char *flag) {
    for (int i = 0; i < OBJECTIVE_OPT_COUNT; i++)
        if (!strcmp(OBJECTIVE_OPTS[i].flag, flag)) return i;
    return -1;
}

int objective_opt_apply(int i, const char *arg, PpaObjective *obj, PpaLossOptions *o, char *err, size_t errlen) {
    const char *flag = OBJECTIVE_OPTS[i].flag;
    char msg[256];
    if (!strcmp(flag, "objective")) {
        if (ppa_objective_parse(arg, obj)) {
            snprintf(err, errlen, "--objective: unknown objective '%s' (see --list-objectives)", arg);
            return -1;
        }
    } else if (!strcmp(flag, "no-sinkhorn")) {
        o->sinkhorn = 0;
    } else if (!strcmp(flag, "normalize")) {
        o->normalize = 1;
    } else if (!strcmp(flag, "list-objectives")) {
        return 2;
    } else if (ppa_loss_option_set(o, OBJECTIVE_OPTS[i].key, arg, msg, sizeof msg) != PPA_OK) {
        snprintf(err, errlen, "--%s: %s", flag, msg);
        return -1;
    }
    return 1;
}

void objective_opt_help_line(FILE *f, int i) {
    const ObjectiveOpt *p = &OBJECTIVE_OPTS[i];
    char head[64];
    snprintf(head, sizeof head, "--%s%s%s", p->flag, p->metavar ? " " : "", p->metavar ? p->metavar : "");
    fprintf(f, "  %-22s", head);
    for (const char *s = p->help; *s;) { /* continuation lines under the text column */
        const char *nl = strchr(s, '\n');
        int len = nl ? (int)(nl - s) : (int)strlen(s);
        fprintf(f, "  %.*s\n", len, s);
        if (!nl) break;
        s = nl + 1;
        fprintf(f, "%24s", "");
    }
}

void objective_opts_help(FILE *f) {
    fputs("Objective:\n", f);
    for (int i = 0; i < OBJECTIVE_OPT_COUNT; i++) objective_opt_help_line(f, i);
}

void objective_names_print(FILE *f) {
    for (int k = 0; k < PPA_N_OBJECTIVES; k++) fprintf(f, "%s\n", ppa_objective_name((PpaObjective)k));
}
