/* argv.c: the one command-line parser (argv.h) over getopt_long, its
 * messages for flags that are unknown, ambiguous or misused, and the
 * model commands' pass over argv with their table built from OPT. */
#include "options/argv.h"

#include <limits.h>
#include <string.h>

#include "core/common.h"
#include "core/text.h"
#include "options/internal.h"

/* getopt_long's code of the table's option i; far above the one-letter flags and getopt's own 1, '?' and ':' */
#define ARGV_CODE_BASE 1000
#define ARGV_CODE_HELP (ARGV_CODE_BASE + ARGV_MAX_OPTIONS)

/* former names of ppa's own flags: a script written for them gets the new name */
static const struct {
    const char *old, *now;
} RENAMED[] = {
    {"dtype", "save-dtype"}, /* ppa merge and ppa init wrote --dtype until it became train's name */
};

void argv_begin(ArgvParser *p, const char *command, const struct option *options, const char *shorts, int argc,
                char **argv) {
    memset(p, 0, sizeof *p);
    p->command = command, p->argc = argc, p->argv = argv, p->at = 1;
    int n = 0;
    for (; options[n].name; n++) {
        if (n == ARGV_MAX_OPTIONS) ppa_die(70, "%s: more than %d options (internal)", command, ARGV_MAX_OPTIONS);
        p->table[n] = (struct option){options[n].name, options[n].has_arg, NULL, ARGV_CODE_BASE + n};
        p->codes[n] = options[n].val;
    }
    p->table[n++] = (struct option){"help", no_argument, NULL, ARGV_CODE_HELP};
    p->table[n] = (struct option){0};
    /* "-": arguments come back in order (code 1), argv is never permuted; ":": a missing value is ':' */
    snprintf(p->optstring, sizeof p->optstring, "-:");
    for (const char *s = shorts ? shorts : ""; *s && strlen(p->optstring) + 2 < sizeof p->optstring; s++)
        snprintf(p->optstring + strlen(p->optstring), sizeof p->optstring - strlen(p->optstring), "%c:", *s);
    optind = 0; /* glibc: a full reinitialisation, for a second pass over the same argv */
    opterr = 0;
}

/* the table's entry named exactly `name`, or NULL */
static const struct option *find(const ArgvParser *p, const char *name) {
    for (const struct option *t = p->table; t->name; t++)
        if (!strcmp(t->name, name)) return t;
    return NULL;
}

/* The explanation of a flag the command does not know, in hint: a ppa name it stands for that the command takes
 * (a config-file key or a TRL / handbook name, an old flag), else the closest flag, else --help. */
static void unknown_hint(const ArgvParser *p, const char *name, const char *value, char *hint, size_t len) {
    char flag[64];
    if (opt_flag_hint(name, value, p->command, flag, sizeof flag, hint, len) && find(p, flag)) return;
    for (size_t i = 0; i < sizeof RENAMED / sizeof RENAMED[0]; i++)
        if (!strcmp(name, RENAMED[i].old) && find(p, RENAMED[i].now)) {
            snprintf(hint, len, "did you mean '--%s'? --%s is its former name", RENAMED[i].now, name);
            return;
        }
    TextClosest c = {0};
    for (const struct option *t = p->table; t->name; t++) text_closest_add(&c, name, t->name);
    if (c.best) snprintf(hint, len, "did you mean '--%s'?", c.best);
    else snprintf(hint, len, "see ppa %s --help", p->command);
}

/* arg: the argument the bad option is in; next: the one after it (a value written as "--x value"), or NULL */
static void bad_option(const ArgvParser *p, const char *arg, const char *next, int missing_value, char *err,
                       size_t errlen) {
    if (missing_value) {
        opt_fail(err, errlen, "%s needs a value", arg);
        return;
    }
    if (arg[0] != '-' || arg[1] != '-') { /* -x: a one-letter flag, or a long name with one dash */
        if (arg[1] && arg[2] && find(p, arg + 1))
            opt_fail(err, errlen, "unknown option '%s' (did you mean '-%s'? ppa uses long options only)", arg, arg);
        else opt_fail(err, errlen, "unknown option '%s' (ppa uses long options only: see ppa %s --help)", arg, p->command);
        return;
    }
    char name[128];
    snprintf(name, sizeof name, "%s", arg + 2);
    char *eq = strchr(name, '=');
    if (eq) *eq = 0;
    const char *value = eq ? arg + 2 + (eq - name) + 1 : next && next[0] != '-' ? next : NULL;
    const struct option *exact = find(p, name);
    int n_prefix = 0;
    char prefixes[256] = "";
    for (const struct option *t = p->table; t->name; t++)
        if (!strncmp(t->name, name, strlen(name)) && strlen(prefixes) < 200)
            snprintf(prefixes + strlen(prefixes), sizeof prefixes - strlen(prefixes), "%s--%s", n_prefix++ ? ", " : "",
                     t->name);
    if (exact && exact->has_arg == no_argument && eq) {
        opt_fail(err, errlen, "--%s takes no value", name);
    } else if (n_prefix > 1) {
        opt_fail(err, errlen, "ambiguous option '--%s': %s", name, prefixes);
    } else {
        char hint[512];
        unknown_hint(p, name, value, hint, sizeof hint);
        opt_fail(err, errlen, "unknown option '--%s' (%s)", name, hint);
    }
}

int argv_next(ArgvParser *p, const char **value, char *err, size_t errlen) {
    *value = NULL;
    int c = p->ended ? -1 : getopt_long(p->argc, p->argv, p->optstring, p->table, NULL);
    int this_at = p->at; /* the argument this option started in */
    if (c == -1) { /* the end, or "--": what follows is arguments only */
        if (!p->ended) p->ended = 1, p->at = optind;
        if (p->at >= p->argc) return ARGV_END;
        if (p->arguments) return *value = p->argv[p->at++], ARGV_ARGUMENT;
        opt_fail(err, errlen, "unexpected argument '%s' (every input is given by a --flag)", p->argv[p->at]);
        return ARGV_ERROR;
    }
    p->at = optind;
    if (c == 1) {
        if (p->arguments) return *value = optarg, ARGV_ARGUMENT;
        opt_fail(err, errlen, "unexpected argument '%s' (every input is given by a --flag)", optarg);
        return ARGV_ERROR;
    }
    if (c == '?' || c == ':') {
        int i = this_at < p->argc ? this_at : p->argc - 1;
        bad_option(p, p->argv[i], i + 1 < p->argc ? p->argv[i + 1] : NULL, c == ':', err, errlen);
        return ARGV_ERROR;
    }
    if (c == ARGV_CODE_HELP) return ARGV_HELP;
    *value = optarg;
    if (c >= ARGV_CODE_BASE) return p->codes[c - ARGV_CODE_BASE];
    const struct option *t = find(p, (char[]){(char)c, 0}); /* -n: the long option of that letter */
    if (!t || t->val == ARGV_CODE_HELP) ppa_die(70, "%s: -%c has no long option of that letter (internal)", p->command, c);
    return p->codes[t->val - ARGV_CODE_BASE];
}

int argv_long(const char *flag, const char *value, long lo, long hi, long *out, char *err, size_t errlen) {
    if (text_long(value, out) || *out < lo || *out > hi) {
        if (hi >= INT_MAX) opt_fail(err, errlen, "%s: cannot use '%s': expected a whole number >= %ld", flag, value, lo);
        else opt_fail(err, errlen, "%s: cannot use '%s': expected a whole number in %ld..%ld", flag, value, lo, hi);
        return -1;
    }
    return 0;
}

int argv_double(const char *flag, const char *value, double lo, double hi, double *out, char *err, size_t errlen) {
    if (text_double(value, out) || !(*out >= lo && *out <= hi)) {
        opt_fail(err, errlen, "%s: cannot use '%s': expected a finite number in [%g, %g]", flag, value, lo, hi);
        return -1;
    }
    return 0;
}

/* ---- the model commands: their table from OPT, two passes ---- */

enum { C_CONFIG = 1, C_LIST_OBJECTIVES, C_OPT_BASE }; /* C_OPT_BASE + TrainOptId */

/* switches among the objective options take no value; other on/off flags an optional one */
static int has_arg(TrainOptId id) {
    if (OPT[id].type == T_BOOL) return optional_argument;
    if (id == TOPT_SINKHORN || id == TOPT_NORMALIZE) return no_argument;
    return required_argument;
}

/* t: room for TOPT_COUNT * 2 + 3 entries; shorts: room for every one-letter flag */
static void build_table(OptCommand cmd, struct option *t, char *shorts) {
    int n = 0, k = 0;
    if (cmd == CMD_TRAIN) t[n++] = (struct option){"config", required_argument, NULL, C_CONFIG};
    for (int i = 0; i < TOPT_COUNT; i++) {
        if (!opt_takes(cmd, (TrainOptId)i)) continue;
        t[n++] = (struct option){OPT[i].flag, has_arg((TrainOptId)i), NULL, C_OPT_BASE + i};
        if (OPT[i].alias) t[n++] = (struct option){OPT[i].alias, has_arg((TrainOptId)i), NULL, C_OPT_BASE + i};
        if (OPT[i].short_flag) shorts[k++] = OPT[i].short_flag;
    }
    if (opt_takes(cmd, TOPT_OBJECTIVE))
        t[n++] = (struct option){"list-objectives", no_argument, NULL, C_LIST_OBJECTIVES};
    t[n] = (struct option){0};
    shorts[k] = 0;
}

/* Sets option id from the command line (value NULL for a flag without one). */
static int cli_set(TrainOptions *o, TrainOptId id, const char *value, char *err, size_t errlen) {
    char msg[384], buf[64];
    const char *text = value;
    if (!text) text = id == TOPT_SINKHORN ? "false" : "true"; /* --no-sinkhorn, --normalize, --verbose */
    if (opt_set_text(o, id, text, msg, sizeof msg)) {
        opt_fail(err, errlen, "%s: %s", opt_flag(id, buf, sizeof buf), msg);
        return -1;
    }
    opt_set_origin(o, id, TRAIN_FROM_CLI, 0, NULL);
    return 0;
}

TrainOptionsStatus opt_cli_pass(OptCommand cmd, int argc, char **argv, TrainOptions *o, int pass, char *err,
                                size_t errlen) {
    struct option t[TOPT_COUNT * 2 + 3];
    char shorts[8];
    build_table(cmd, t, shorts);
    ArgvParser p;
    argv_begin(&p, options_command_name(cmd), t, shorts, argc, argv);
    const char *v;
    for (int c; (c = argv_next(&p, &v, err, errlen)) != ARGV_END;) {
        if (c == ARGV_ERROR) return TRAIN_OPTIONS_ERROR;
        if (c == ARGV_HELP) return TRAIN_OPTIONS_HELP;
        if (c == C_LIST_OBJECTIVES) return TRAIN_OPTIONS_LIST_OBJECTIVES;
        if (pass == PASS_SYNTAX) {
            if (c == C_CONFIG) {
                if (o->config) {
                    opt_fail(err, errlen, "--config given twice ('%s' and '%s'): give one file", o->config, v);
                    return TRAIN_OPTIONS_ERROR;
                }
                o->config = opt_strdup(v);
            }
            continue;
        }
        if (c >= C_OPT_BASE && cli_set(o, (TrainOptId)(c - C_OPT_BASE), v, err, errlen)) return TRAIN_OPTIONS_ERROR;
    }
    return TRAIN_OPTIONS_OK;
}
