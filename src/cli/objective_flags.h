/* objective_flags.h: the objective options (losses/objective_opts.h) as
 * getopt_long entries, for the commands outside the model commands' option
 * table (ppa loss, ppa bench loss). */
#ifndef PPA_CLI_OBJECTIVE_FLAGS_H
#define PPA_CLI_OBJECTIVE_FLAGS_H

#include <getopt.h>

#include "losses/objective_opts.h"

/* getopt_long code of OBJECTIVE_OPTS[i] is OBJ_FLAG_BASE + i (--objective first) */
#define OBJ_FLAG_BASE 1000

/* Appends the objective options to a table with room for OBJECTIVE_OPT_COUNT
 * more entries and the terminator; returns the new count. */
int objective_flags_append(struct option *table, int count);

/* Handles one getopt code: 1 if it was an objective option, 0 if not. A bad
 * value is fatal (exit status 2, the option named); --list-objectives
 * prints the names and exits 0. */
int objective_flags_handle(int code, const char *arg, PpaObjective *obj, PpaLossOptions *o);

#endif
