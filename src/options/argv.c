/* argv.c: the command line of the model commands: the getopt table of
 * a command's options from OPT, the two passes over argv, and messages for
 * flags that are unknown, ambiguous or misused. */
#include <getopt.h>
#include <string.h>

#include "core/text.h"
#include "options/internal.h"

/* getopt codes: 1 is getopt's own code for a non-option argument (optstring "-") */
/* codes above every one-letter flag (-n is 110) */
enum { C_CONFIG = 2, C_HELP, C_LIST_OBJECTIVES, C_OPT_BASE = 1000 }; /* C_OPT_BASE + TrainOptId */

/* switches among the objective options take no value; other on/off flags an optional one */
static int has_arg(TrainOptId id) {
    if (OPT[id].type == T_BOOL) return optional_argument;
    if (id == TOPT_SINKHORN || id == TOPT_NORMALIZE) return no_argument;
    return required_argument;
}

/* t: room for TOPT_COUNT * 2 + 4 entries */
static void build_table(OptCommand cmd, struct option *t, char *optstring) {
    int n = 0;
    strcpy(optstring, "-:");
    if (cmd == CMD_TRAIN) t[n++] = (struct option){"config", required_argument, NULL, C_CONFIG};
    t[n++] = (struct option){"help", no_argument, NULL, C_HELP};
    for (int i = 0; i < TOPT_COUNT; i++) {
        if (!opt_takes(cmd, (TrainOptId)i)) continue;
        t[n++] = (struct option){OPT[i].flag, has_arg((TrainOptId)i), NULL, C_OPT_BASE + i};
        if (OPT[i].alias) t[n++] = (struct option){OPT[i].alias, has_arg((TrainOptId)i), NULL, C_OPT_BASE + i};
        if (OPT[i].short_flag) {
            size_t k = strlen(optstring);
            optstring[k] = OPT[i].short_flag, optstring[k + 1] = ':', optstring[k + 2] = 0;
        }
    }
    if (opt_takes(cmd, TOPT_OBJECTIVE))
        t[n++] = (struct option){"list-objectives", no_argument, NULL, C_LIST_OBJECTIVES};
    t[n] = (struct option){0};
}

/* the option of a one-letter flag */
static int short_option(int c) {
    for (int i = 0; i < TOPT_COUNT; i++)
        if (OPT[i].short_flag && OPT[i].short_flag == c) return i;
    return -1;
}

static void bad_option(OptCommand cmd, const struct option *t, const char *arg, int missing_value, char *err,
                       size_t errlen) {
    if (arg[0] != '-' || arg[1] != '-') {
        if (missing_value) opt_fail(err, errlen, "%s needs a value", arg);
        else opt_fail(err, errlen, "unknown option '%s' (ppa uses long options only, such as --lr)", arg);
        return;
    }
    char name[128];
    snprintf(name, sizeof name, "%s", arg + 2);
    char *eq = strchr(name, '=');
    if (eq) *eq = 0;
    const struct option *exact = NULL;
    int n_prefix = 0;
    char prefixes[256] = "";
    for (const struct option *p = t; p->name; p++) {
        if (!strcmp(p->name, name)) exact = p;
        if (!strncmp(p->name, name, strlen(name)) && strlen(prefixes) < 200) {
            n_prefix++;
            snprintf(prefixes + strlen(prefixes), sizeof prefixes - strlen(prefixes), "%s--%s", n_prefix > 1 ? ", " : "",
                     p->name);
        }
    }
    if (missing_value) {
        opt_fail(err, errlen, "%s needs a value", arg);
    } else if (exact && exact->has_arg == no_argument && eq) {
        opt_fail(err, errlen, "--%s takes no value", name);
    } else if (n_prefix > 1) {
        opt_fail(err, errlen, "ambiguous option '--%s': %s", name, prefixes);
    } else {
        TextClosest c = {0};
        for (const struct option *p = t; p->name; p++) text_closest_add(&c, name, p->name);
        /* a recipe name given as a flag: --learning-rate */
        char key[128], buf[64];
        snprintf(key, sizeof key, "%s", name);
        for (char *k = key; *k; k++)
            if (*k == '-') *k = '_';
        TrainOptId id;
        if (opt_recipe_key_option(key, &id) && opt_takes(cmd, id))
            opt_fail(err, errlen, "unknown option '--%s' (did you mean '%s'? %s is a config-file key)", name,
                     opt_flag(id, buf, sizeof buf), key);
        else if (c.best) opt_fail(err, errlen, "unknown option '--%s' (did you mean '--%s'?)", name, c.best);
        else opt_fail(err, errlen, "unknown option '--%s' (see ppa %s --help)", name, options_command_name(cmd));
    }
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
    struct option t[TOPT_COUNT * 2 + 4];
    char optstring[64];
    build_table(cmd, t, optstring);
    optind = 0; /* glibc: full reinitialisation */
    opterr = 0;
    int c, at = 1;
    while ((c = getopt_long(argc, argv, optstring, t, NULL)) != -1) {
        int this_at = at; /* the argument this option started in */
        at = optind;
        if (c == 1) {
            opt_fail(err, errlen, "unexpected argument '%s' (every input is given by a --flag)", optarg);
            return TRAIN_OPTIONS_ERROR;
        }
        if (c == '?' || c == ':') {
            bad_option(cmd, t, argv[this_at < argc ? this_at : argc - 1], c == ':', err, errlen);
            return TRAIN_OPTIONS_ERROR;
        }
        if (c == C_HELP) return TRAIN_OPTIONS_HELP;
        if (c == C_LIST_OBJECTIVES) return TRAIN_OPTIONS_LIST_OBJECTIVES;
        if (pass == PASS_SYNTAX) {
            if (c == C_CONFIG) {
                if (o->config) {
                    opt_fail(err, errlen, "--config given twice ('%s' and '%s'): give one file", o->config, optarg);
                    return TRAIN_OPTIONS_ERROR;
                }
                o->config = opt_strdup(optarg);
            }
            continue;
        }
        if (c == C_CONFIG) continue;
        int id = c >= C_OPT_BASE ? c - C_OPT_BASE : short_option(c);
        if (id >= 0 && cli_set(o, (TrainOptId)id, optarg, err, errlen)) return TRAIN_OPTIONS_ERROR;
    }
    if (optind < argc) {
        opt_fail(err, errlen, "unexpected argument '%s' (every input is given by a --flag)", argv[optind]);
        return TRAIN_OPTIONS_ERROR;
    }
    return TRAIN_OPTIONS_OK;
}
