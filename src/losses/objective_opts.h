/* objective_opts.h: the options of the objectives as named options: their
 * flag names, which take a value, the library key they set
 * (ppa_loss_option_set), and their help lines. Every command that computes a
 * loss (ppa loss, bench loss, grad, train) takes them from this one table;
 * the command line only maps flags onto it. */
#ifndef PPA_LOSSES_OBJECTIVE_OPTS_H
#define PPA_LOSSES_OBJECTIVE_OPTS_H

#include <stddef.h>
#include <stdio.h>

#include "ppa/losses.h"

typedef struct {
    const char *flag;    /* without "--": "sinkhorn-iters" */
    int takes_value;     /* 0 for the switches (--no-sinkhorn, --normalize, --list-objectives) */
    const char *key;     /* ppa_loss_option_set key; NULL for objective and the switches */
    const char *metavar; /* "X", "N", "NAME"; NULL for switches */
    const char *help;    /* one line, or several separated by '\n' */
} ObjectiveOpt;

#define OBJECTIVE_OPT_COUNT 17
extern const ObjectiveOpt OBJECTIVE_OPTS[OBJECTIVE_OPT_COUNT];

/* The index of a flag ("tau", "no-sinkhorn") in OBJECTIVE_OPTS, or -1. */
int objective_opt_find(const char *flag);

/* Applies option i with its value (NULL for switches): 1 done, 2 it was
 * --list-objectives (nothing changed), -1 bad value with a message naming
 * the flag in err. */
int objective_opt_apply(int i, const char *arg, PpaObjective *obj, PpaLossOptions *o, char *err, size_t errlen);

/* One help line "  --flag METAVAR   text" per option, continuation lines
 * indented, in the layout of every command's help. */
void objective_opt_help_line(FILE *f, int i);
/* "Objective:" and every option's help line. */
void objective_opts_help(FILE *f);

/* Prints every objective's canonical name, one per line. */
void objective_names_print(FILE *f);

#endif
