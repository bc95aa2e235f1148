/* argv.h: the one command-line parser of every ppa command. Long options
 * only: "--opt value" or "--opt=value", an unambiguous prefix of a long name
 * ("--epoch" for --epochs), and --help everywhere. A command gives its
 * options as a getopt_long table (the model commands build theirs from
 * options/table.c, the others keep a small local one), and every command
 * gets the same messages for the same mistakes: "unknown option '--x'" with
 * a did-you-mean (a misspelling, a config-file key, a TRL / alignment-handbook
 * name, an old name of a ppa flag), "--x needs a value", "--x takes no value",
 * "ambiguous option '--lo': --log, --lora-r", "unexpected argument 'x'". */
#ifndef PPA_OPTIONS_ARGV_H
#define PPA_OPTIONS_ARGV_H

#include <getopt.h>
#include <stddef.h>

/* what argv_next returns besides the codes of the table's options (their val, which must be > 0) */
enum { ARGV_END = 0, ARGV_HELP = -1, ARGV_ARGUMENT = -2, ARGV_ERROR = -3 };

#define ARGV_MAX_OPTIONS 200

typedef struct {
    const char *command; /* "merge", "bench loss": named in "see ppa merge --help" */
    int argc;
    char **argv;
    int arguments; /* 1: a bare argument comes back as ARGV_ARGUMENT; 0 (argv_begin's): it is an error */
    /* the parser's own */
    struct option table[ARGV_MAX_OPTIONS + 2]; /* the command's options (getopt's code: their index) and --help */
    int codes[ARGV_MAX_OPTIONS];               /* the command's code of each */
    char optstring[16];
    int at;    /* the argument the next option starts in */
    int ended; /* getopt_long is done: only arguments are left */
} ArgvParser;

/* options: the command's long options, {0}-terminated (flag NULL, val the code argv_next returns, > 0); --help is
 * added. shorts: the one-letter flags that take a value and name a long option of the same letter ("n" for -n and
 * --n), or NULL. argv[0] is the command's name and is skipped; argv is not reordered. */
void argv_begin(ArgvParser *p, const char *command, const struct option *options, const char *shorts, int argc,
                char **argv);

/* The next option: its code, its value in *value (NULL when it has none); ARGV_HELP for --help; ARGV_ARGUMENT with
 * the argument in *value when p->arguments; ARGV_END after the last; ARGV_ERROR with the message in err (without
 * the command's name, which the caller puts first: "ppa: merge: unknown option '--x' ..."). */
int argv_next(ArgvParser *p, const char **value, char *err, size_t errlen);

/* A flag's value as a whole number in [lo, hi], or a finite number in [lo, hi]: 0, or -1 with
 * "--flag: cannot use 'x': expected ..." in err (the wording of the model commands' values). */
int argv_long(const char *flag, const char *value, long lo, long hi, long *out, char *err, size_t errlen);
int argv_double(const char *flag, const char *value, double lo, double hi, double *out, char *err, size_t errlen);

#endif
