/* objective_opts.c: --objective and the objective options as long options. */
#include "cli/objective_opts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"

/* option name -> library option key (NULL key: handled specially) */
static const struct {
    const char *name;
    int has_arg;
    const char *key;
} OPTS[OBJ_OPT_COUNT] = {
    {"objective", required_argument, NULL},
    {"tau", required_argument, "tau"},
    {"alpha", required_argument, "alpha"},
    {"k", required_argument, "k"},
    {"gain", required_argument, "gain"},
    {"discount", required_argument, "discount"},
    {"no-sinkhorn", no_argument, NULL},
    {"sinkhorn-iters", required_argument, "sinkhorn_iters"},
    {"sinkhorn-tol", required_argument, "sinkhorn_tol"},
    {"ties", required_argument, "ties"},
    {"pairs", required_argument, "pairs"},
    {"sigma", required_argument, "sigma"},
    {"label-smoothing", required_argument, "label_smoothing"},
    {"gamma", required_argument, "gamma"},
    {"beta", required_argument, "beta"},
    {"normalize", no_argument, NULL},
    {"list-objectives", no_argument, NULL},
};

const char OBJECTIVE_OPTS_HELP[] =
    "Objective:\n"
    "  --objective NAME        neural_ndcg (alias ppa), approx_ndcg, lambda (lipo, lambdarank),\n"
    "                          ranknet, dpo_single_pair, dpo_bpr, dpo_ovw, dpo_all_pairs (dpo),\n"
    "                          hinge (slic), listmle (dpo_pl), listnet, ipo, simpo\n"
    "  --tau X                 NeuralSort temperature (neural_ndcg; 1.0)\n"
    "  --alpha X               ApproxNDCG sharpness (25)\n"
    "  --k N                   NDCG@k (neural_ndcg, lambda, metric; default: list size)\n"
    "  --gain G                pow2 (2^psi - 1, default) | linear\n"
    "  --discount D            log2 (default) | inv | inv_sqrt | inv_sq\n"
    "  --no-sinkhorn           NeuralSort without Sinkhorn scaling\n"
    "  --sinkhorn-iters N      at most N Sinkhorn iterations (50)\n"
    "  --sinkhorn-tol X        stop a list once row and column sums are within X of 1 (1e-6)\n"
    "  --ties T                pairwise objectives: exclude (default, the paper) | include (authors' code)\n"
    "  --pairs P               ipo/simpo pairing: all_pairs (default) | best_with_worst |\n"
    "                          best_with_others | others_vs_worst\n"
    "  --sigma X               lambda sigma_0 (1.0)\n"
    "  --label-smoothing X     dpo/simpo epsilon (0)\n"
    "  --gamma X               simpo margin (0.1)\n"
    "  --beta X                ipo beta (0.1)\n"
    "  --normalize             listmle: divide by the list size\n"
    "  --list-objectives       print the objective names and exit\n";

int objective_opts_append(struct option *table, int count) {
    for (int i = 0; i < OBJ_OPT_COUNT; i++)
        table[count++] = (struct option){OPTS[i].name, OPTS[i].has_arg, NULL, OBJ_OPT_BASE + i};
    table[count] = (struct option){0};
    return count;
}

int objective_opts_code(const char *name) {
    for (int i = 0; i < OBJ_OPT_COUNT; i++)
        if (!strcmp(OPTS[i].name, name)) return OBJ_OPT_BASE + i;
    return -1;
}

int objective_opts_apply(int code, const char *arg, PpaObjective *obj, PpaLossOptions *o, char *err, size_t errlen) {
    int i = code - OBJ_OPT_BASE;
    if (i < 0 || i >= OBJ_OPT_COUNT) return 0;
    const char *name = OPTS[i].name;
    char msg[256];
    if (!strcmp(name, "objective")) {
        if (ppa_objective_parse(arg, obj)) {
            snprintf(err, errlen, "--objective: unknown objective '%s' (see --list-objectives)", arg);
            return -1;
        }
    } else if (!strcmp(name, "no-sinkhorn")) {
        o->sinkhorn = 0;
    } else if (!strcmp(name, "normalize")) {
        o->normalize = 1;
    } else if (!strcmp(name, "list-objectives")) {
        return 2;
    } else if (ppa_loss_option_set(o, OPTS[i].key, arg, msg, sizeof msg) != PPA_OK) {
        snprintf(err, errlen, "--%s: %s", name, msg);
        return -1;
    }
    return 1;
}

int objective_opts_handle(int code, const char *arg, PpaObjective *obj, PpaLossOptions *o) {
    char err[320];
    int r = objective_opts_apply(code, arg, obj, o, err, sizeof err);
    if (r < 0) ppa_die(2, "%s", err);
    if (r == 2) {
        for (int k = 0; k < PPA_N_OBJECTIVES; k++) printf("%s\n", ppa_objective_name((PpaObjective)k));
        exit(0);
    }
    return r;
}
