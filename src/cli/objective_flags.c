/* objective_flags.c: the objective options as long options (objective_flags.h). */
#include "cli/objective_flags.h"

#include <stdlib.h>

#include "core/common.h"

int objective_flags_append(struct option *table, int count) {
    for (int i = 0; i < OBJECTIVE_OPT_COUNT; i++)
        table[count++] = (struct option){OBJECTIVE_OPTS[i].flag, OBJECTIVE_OPTS[i].takes_value ? required_argument
                                                                                               : no_argument,
                                         NULL, OBJ_FLAG_BASE + i};
    table[count] = (struct option){0};
    return count;
}

int objective_flags_handle(int code, const char *arg, PpaObjective *obj, PpaLossOptions *o) {
    int i = code - OBJ_FLAG_BASE;
    if (i < 0 || i >= OBJECTIVE_OPT_COUNT) return 0;
    char err[320];
    int r = objective_opt_apply(i, arg, obj, o, err, sizeof err);
    if (r < 0) ppa_die(2, "%s", err);
    if (r == 2) {
        objective_names_print(stdout);
        exit(0);
    }
    return 1;
}
