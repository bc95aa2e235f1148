/* objective_opts.h: the command-line options of the objectives library,
 * shared by every command that computes a loss (loss, bench, later train). */
#ifndef PPA_CLI_OBJECTIVE_OPTS_H
#define PPA_CLI_OBJECTIVE_OPTS_H

#include <getopt.h>
#include <stddef.h>

#include "ppa/losses.h"

/* getopt_long codes of the objective options start here */
#define OBJ_OPT_BASE 1000

/* Appends the objective options to a command's table (which must have room
 * for OBJ_OPT_COUNT more entries plus the terminator). Returns the new count. */
int objective_opts_append(struct option *table, int count);
#define OBJ_OPT_COUNT 17

/* Handles one option code; returns 1 if it was an objective option, 0 if not.
 * A bad value is fatal (exit status 2) with a message naming the option. */
int objective_opts_handle(int code, const char *arg, PpaObjective *obj, PpaLossOptions *o);

/* The same without exiting (for src/train/options.c, which returns its
 * errors): 1 handled, 0 not an objective option, -1 bad value (message,
 * naming the option, in err), 2 --list-objectives (nothing printed). */
int objective_opts_apply(int code, const char *arg, PpaObjective *obj, PpaLossOptions *o, char *err, size_t errlen);

/* The getopt_long code of an objective option, for commands that give one
 * a wider meaning (--beta is also the implicit-reward beta of ppa grad). */
int objective_opts_code(const char *name);

/* Help text for the objective options. */
extern const char OBJECTIVE_OPTS_HELP[];

#endif
