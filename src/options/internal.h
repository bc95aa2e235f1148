/* internal.h: what the files of the option layer share: the option
 * table, the text of a value, origins, notes, and the steps of a parse
 * (command line, recipe, batch arithmetic, validation). Not for other
 * modules: they use options.h. */
#ifndef PPA_TRAIN_OPTIONS_INTERNAL_H
#define PPA_TRAIN_OPTIONS_INTERNAL_H

#include <stddef.h>
#include <stdio.h>

#include "options/options.h"

/* the paper's global batch: 128 lists per optimizer step (ppa.tex "Training Details", tab_train_hyper) */
#define DEFAULT_BATCH 128
/* the paper's per-device batch: one list per forward/backward (objectives.md §2.5, every A config) */
#define DEFAULT_MICRO 1
/* the longest --collective-timeout: a week, in seconds */
#define COLLECTIVE_TIMEOUT_MAX (7 * 24 * 3600)

/* T_STRS: OptStrings, every use of the flag appends a value */
typedef enum { T_STR, T_STRS, T_INT, T_LONG, T_U64, T_DOUBLE, T_BOOL, T_SCHEDULE, T_DTYPE, T_PRECISION, T_DEVICE, T_OBJECTIVE, T_LOSS } OptType;

/* sections of --help, in order */
typedef enum { S_IO, S_OBJECTIVE, S_OPTIM, S_LORA, S_GENERATE, S_RUN, S_COUNT } OptSection;

typedef struct {
    const char *name;    /* ppa name = recipe key = JSON key ("max_prompt_length") */
    const char *flag;    /* flag without "--"; NULL: the name with '-' for '_' */
    OptType type;
    size_t off;          /* the field in TrainOptions (T_LOSS: none, the value is in .loss) */
    unsigned cmds;       /* OptCommand mask: the commands that take the option */
    unsigned required;   /* OptCommand mask: the commands that need it given */
    OptSection section;
    const char *metavar; /* "N", "DIR"; NULL for switches (T_BOOL) */
    const char *help;    /* without the default, which --help prints from the command's defaults */
    const char *alias;   /* a second flag, or NULL */
    char short_flag;     /* a one-letter flag, or 0 */
} OptSpec;

extern const OptSpec OPT[TOPT_COUNT];

/* A command's --help wording of an option where it differs from OPT's. */
typedef struct {
    TrainOptId id;
    unsigned cmds;
    const char *metavar, *help;
} OptHelpOverride;

extern const OptHelpOverride OPT_HELP_OVERRIDES[];
extern const int OPT_N_HELP_OVERRIDES;

/* names of the enumerations, in enum order */
extern const char *const GAIN_NAMES[2], *const DISCOUNT_NAMES[4], *const TIES_NAMES[2], *const PAIRS_NAMES[4],
    *const SCHEDULE_NAMES[3];

/* 1 if objective obj reads objective option id (TOPT_TAU..TOPT_NORMALIZE; others: 1) */
int opt_objective_uses(PpaObjective obj, TrainOptId id);
/* 1 if cmd takes option id */
static inline int opt_takes(OptCommand cmd, TrainOptId id) { return (OPT[id].cmds & cmd) != 0; }

/* The flag with "--" ("--no-sinkhorn" for sinkhorn). */
const char *opt_flag(TrainOptId id, char *buf, size_t len);
/* "--lr" or "recipe.yaml:29: learning_rate" or "lr (default)": the start of a message about a value. */
const char *opt_where(const TrainOptions *o, TrainOptId id, char *buf, size_t len);
void opt_set_origin(TrainOptions *o, TrainOptId id, TrainSource from, int line, const char *key);
/* Sets option id from text; on failure a message without the option name. */
int opt_set_text(TrainOptions *o, TrainOptId id, const char *s, char *msg, size_t msglen);
/* The value of option id as text (for --help's defaults); "" when it has none to show. */
const char *opt_value_text(const TrainOptions *o, TrainOptId id, char *buf, size_t len);

/* "ppa: note: ..." on stderr, also kept in o->notes */
void opt_note(TrainOptions *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void opt_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
char *opt_strdup(const char *s);

/* the steps of a parse */
enum { PASS_SYNTAX = 1, PASS_VALUES = 2 };
TrainOptionsStatus opt_cli_pass(OptCommand cmd, int argc, char **argv, TrainOptions *o, int pass, char *err,
                                size_t errlen);
/* the --config recipe; *constant_line: the line of lr_scheduler_type constant, or 0 */
int opt_apply_recipe(TrainOptions *o, int *constant_line, char *err, size_t errlen);
/* the recipe keys that set option id, as "a, b" ("" if none), for --help */
const char *opt_recipe_keys(TrainOptId id, char *buf, size_t len);
/* A recipe key or a TRL / alignment-handbook name written as a flag (name: the flag without "--", '-' or '_';
 * value: the value given with it, or NULL): 1 with the ppa flag it stands for in flag (without "--") and the
 * message's hint ("did you mean '--lr'? learning_rate is a config-file key") in hint; 0 if name is none of them.
 * command: the command's name, for "ppa train --list-objectives". */
int opt_flag_hint(const char *name, const char *value, const char *command, char *flag, size_t flaglen, char *hint,
                  size_t hintlen);
/* the recipe keys ppa ignores, one line per reason, for --help */
void opt_recipe_help(FILE *f);
int opt_resolve_batch(TrainOptions *o, char *err, size_t errlen);
int opt_validate(TrainOptions *o, char *err, size_t errlen);

#endif
