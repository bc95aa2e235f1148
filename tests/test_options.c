/* test_options.c: the option table the model commands share
 * (options/options.h): that it is well formed, that each command takes
 * exactly its own flags, requires its own inputs and starts from its own
 * defaults (sft), that --help lists exactly a command's flags with their
 * defaults, generate's one-letter and alias flags, and --collective-timeout
 * on the commands that run under several MPI ranks; the one parser
 * (options/argv.h) on a command's small local table, with the same messages,
 * and the hints for TRL / handbook names written as flags. `ppa train`'s own
 * rules are in test_train_options.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "options/argv.h"
#include "options/options.h"

static const OptCommand CMDS[] = {CMD_TRAIN, CMD_SFT, CMD_SCORE, CMD_EVAL, CMD_LOGPROBS, CMD_GRAD, CMD_GENERATE,
                                  CMD_REWARD, CMD_JUDGE, CMD_WINRATE};
#define N_CMDS ((int)(sizeof CMDS / sizeof CMDS[0]))

static char err[2048];

/* options_parse of cmd with the arguments (NULL-terminated), stderr silenced */
static TrainOptionsStatus parse(OptCommand cmd, TrainOptions *o, ...) {
    char *argv[64];
    int argc = 0;
    argv[argc++] = (char *)options_command_name(cmd);
    va_list ap;
    va_start(ap, o);
    const char *a;
    while ((a = va_arg(ap, const char *)) && argc < 63) argv[argc++] = (char *)a;
    va_end(ap);
    argv[argc] = NULL;
    fflush(stderr);
    FILE *saved = stderr;
    stderr = fopen("/dev/null", "w");
    TrainOptionsStatus st = options_parse(cmd, argc, argv, o, err, sizeof err);
    fclose(stderr);
    stderr = saved;
    return st;
}

static char *help_of(OptCommand cmd) {
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    options_help(cmd, f);
    fclose(f);
    return text;
}

/* the flag of an option, as the help shows it: "--max-prompt-length" */
static const char *flag(TrainOptId id, char *buf) {
    sprintf(buf, "--%s", train_option_name(id));
    for (char *c = buf + 2; *c; c++)
        if (*c == '_') *c = '-';
    if (id == TOPT_SINKHORN) strcpy(buf, "--no-sinkhorn");
    return buf;
}

/* a flag at the start of a help line: "  --lr X" or "  --verbose" */
static int help_has(const char *help, const char *f) {
    for (const char *p = help; (p = strstr(p, f)); p++)
        if (p >= help + 2 && p[-1] == ' ' && p[-2] == ' ' && (p[strlen(f)] == ' ' || p[strlen(f)] == '\n' || p[strlen(f)] == ','))
            return 1;
    return 0;
}

static void test_table(void) {
    for (int i = 0; i < TOPT_COUNT; i++) {
        int takers = 0;
        for (int c = 0; c < N_CMDS; c++) takers += options_takes(CMDS[c], (TrainOptId)i);
        CHECK(takers > 0, "option %s is taken by no command", train_option_name((TrainOptId)i));
        for (int j = 0; j < i; j++)
            CHECK(strcmp(train_option_name((TrainOptId)i), train_option_name((TrainOptId)j)),
                  "option name %s twice", train_option_name((TrainOptId)i));
    }
    /* train takes every option of its record and nothing of the other commands' */
    for (int i = 0; i < TOPT_COUNT; i++)
        CHECK(options_takes(CMD_TRAIN, (TrainOptId)i) == (i <= TOPT_NORMALIZE), "train and %s",
              train_option_name((TrainOptId)i));
}

/* --help of each command: exactly the flags it takes, each once */
static void test_help(void) {
    char f[64];
    for (int c = 0; c < N_CMDS; c++) {
        char *h = help_of(CMDS[c]);
        for (int i = 0; i < TOPT_COUNT; i++) {
            int want = options_takes(CMDS[c], (TrainOptId)i);
            CHECK(help_has(h, flag((TrainOptId)i, f)) == want, "ppa %s --help %s %s", options_command_name(CMDS[c]),
                  want ? "lacks" : "shows", f);
        }
        CHECK(!strstr(h, "(null)"), "ppa %s --help prints (null)", options_command_name(CMDS[c]));
        free(h);
    }
    char *h = help_of(CMD_SFT);
    CHECK(strstr(h, "peak learning rate (0.0001)") && strstr(h, "rows per optimizer step (8)"),
          "sft's help shows sft's defaults:\n%s", h);
    free(h);
    h = help_of(CMD_GENERATE);
    CHECK(strstr(h, "--n K, --num-samples, -n") != NULL, "generate's help names -n and --num-samples");
    free(h);
}

/* each command refuses the flags of the others, and needs its own inputs */
static void test_flags_per_command(void) {
    TrainOptions o;
    TrainOptionsStatus st = parse(CMD_SCORE, &o, "--model", "m", "--data", "d", "--out", "c", "--lr", "1", NULL);
    CHECK(st == TRAIN_OPTIONS_ERROR && strstr(err, "unknown option '--lr'"), "score --lr: %s", err);
    train_options_free(&o);
    st = parse(CMD_SCORE, &o, "--model", "m", "--data", "d", NULL);
    CHECK(st == TRAIN_OPTIONS_ERROR && !strcmp(err, "--out CACHE is required"), "score without --out: %s", err);
    train_options_free(&o);
    st = parse(CMD_EVAL, &o, "--model", "m", "--data", "d", NULL);
    CHECK(st == TRAIN_OPTIONS_ERROR && !strcmp(err, "--ref DIR is required"), "eval without --ref: %s", err);
    train_options_free(&o);
    st = parse(CMD_EVAL, &o, "--model", "m", "--ref", "r", "--data", "d", "--k", "3", "--beta", "0.5", "--threads", "1",
               NULL);
    CHECK(st == TRAIN_OPTIONS_OK && o.loss.k == 3 && o.beta == 0.5 && o.threads == 1, "eval --k --beta --threads: %s",
          err);
    train_options_free(&o);
    st = parse(CMD_EVAL, &o, "--model", "m", "--ref", "r", "--data", "d", "--tau", "2", NULL);
    CHECK(st == TRAIN_OPTIONS_ERROR && strstr(err, "--tau"), "eval takes --k but not --tau: %s", err);
    train_options_free(&o);
    st = parse(CMD_EVAL, &o, "--model", "m", "--ref", "r", "--data", "d", "--beta", "x", NULL);
    CHECK(st == TRAIN_OPTIONS_ERROR && !strcmp(err, "--beta: cannot use 'x': expected a finite number"),
          "eval --beta x: %s", err);
    train_options_free(&o);
    /* grad: --objective and --beta must be given; ipo's beta follows --beta */
    st = parse(CMD_GRAD, &o, "--model", "m", "--data", "d", "--out", "g", "--beta", "0.2", NULL);
    CHECK(st == TRAIN_OPTIONS_ERROR && strstr(err, "--objective NAME is required") == err, "grad needs --objective: %s", err);
    train_options_free(&o);
    st = parse(CMD_GRAD, &o, "--model", "m", "--data", "d", "--out", "g", "--objective", "ipo", NULL);
    CHECK(st == TRAIN_OPTIONS_ERROR && strstr(err, "--beta B is required") == err, "grad needs --beta: %s", err);
    train_options_free(&o);
    st = parse(CMD_GRAD, &o, "--model", "m", "--data", "d", "--out", "g", "--objective", "ipo", "--beta", "0.2",
               "--strict", "--no-sinkhorn", NULL);
    CHECK(st == TRAIN_OPTIONS_OK && o.objective == PPA_IPO && o.loss.beta == 0.2 && o.strict && !o.loss.sinkhorn,
          "grad: %s", err);
    train_options_free(&o);
    st = parse(CMD_LOGPROBS, &o, "--model", "m", "--data", "d", "--objective", "ppa", NULL);
    CHECK(st == TRAIN_OPTIONS_ERROR && strstr(err, "--objective"), "logprobs takes no objective: %s", err);
    train_options_free(&o);
    st = parse(CMD_LOGPROBS, &o, "--model", "m", "--data", "d", "--list-objectives", NULL);
    CHECK(st == TRAIN_OPTIONS_ERROR, "logprobs takes no --list-objectives");
    train_options_free(&o);
    st = parse(CMD_GRAD, &o, "--list-objectives", NULL);
    CHECK(st == TRAIN_OPTIONS_LIST_OBJECTIVES, "grad --list-objectives");
    train_options_free(&o);
    st = parse(CMD_SCORE, &o, "--help", NULL);
    CHECK(st == TRAIN_OPTIONS_HELP, "score --help");
    train_options_free(&o);
    st = parse(CMD_SCORE, &o, "--model", "m", "--data", "d", "--out", "c", "--config", "x.yaml", NULL);
    CHECK(st == TRAIN_OPTIONS_ERROR && strstr(err, "--config"), "only train reads recipes: %s", err);
    train_options_free(&o);
    st = parse(CMD_SCORE, &o, "--model", "m", "--data", "d", "--out", "c", "--max-length", "64",
               "--max-prompt-length", "64", NULL);
    CHECK(st == TRAIN_OPTIONS_ERROR && strstr(err, "--max-prompt-length must be in 1..max_length - 1 = 63"),
          "score: the truncation rule: %s", err);
    train_options_free(&o);
}

/* sft: 8 rows per step in one micro-batch unless told otherwise; no prompt length */
static void test_sft(void) {
    TrainOptions o;
    TrainOptionsStatus st = parse(CMD_SFT, &o, "--model", "m", "--data", "d", "--out", "o", NULL);
    CHECK(st == TRAIN_OPTIONS_OK && o.lr == 1e-4 && o.batch_size == 8 && o.micro_batch == 8 && o.grad_accum == 1 &&
              o.warmup_ratio == 0,
          "sft defaults: %s", err);
    train_options_free(&o);
    static const struct {
        const char *flag1, *v1, *flag2, *v2;
        int batch, micro, accum;
    } CASES[] = {
        {"--grad-accum", "2", NULL, NULL, 8, 4, 2},   {"--micro-batch", "4", NULL, NULL, 8, 4, 2},
        {"--batch-size", "16", NULL, NULL, 16, 16, 1}, {"--batch-size", "16", "--micro-batch", "4", 16, 4, 4},
        {"--micro-batch", "2", "--grad-accum", "3", 6, 2, 3},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        st = parse(CMD_SFT, &o, "--model", "m", "--data", "d", "--out", "o", CASES[i].flag1, CASES[i].v1, CASES[i].flag2,
                   CASES[i].v2, NULL);
        CHECK(st == TRAIN_OPTIONS_OK && o.batch_size == CASES[i].batch && o.micro_batch == CASES[i].micro &&
                  o.grad_accum == CASES[i].accum,
              "sft %s %s: %d = %d x %d (%s)", CASES[i].flag1, CASES[i].v1, o.batch_size, o.micro_batch, o.grad_accum,
              err);
        train_options_free(&o);
    }
    st = parse(CMD_SFT, &o, "--model", "m", "--data", "d", "--out", "o", "--micro-batch", "3", NULL);
    CHECK(st == TRAIN_OPTIONS_ERROR && strstr(err, "does not divide the default batch size 8"), "sft --micro-batch 3: %s",
          err);
    train_options_free(&o);
    st = parse(CMD_SFT, &o, "--model", "m", "--data", "d", "--out", "o", "--max-length", "100", NULL);
    CHECK(st == TRAIN_OPTIONS_OK && o.max_length == 100, "sft --max-length below the default prompt length: %s", err);
    train_options_free(&o);
    st = parse(CMD_SFT, &o, "--model", "m", "--data", "d", "--out", "o", "--max-prompt-length", "10", NULL);
    CHECK(st == TRAIN_OPTIONS_ERROR, "sft takes no --max-prompt-length");
    train_options_free(&o);
}

static void test_generate(void) {
    TrainOptions o;
    TrainOptionsStatus st = parse(CMD_GENERATE, &o, "--model", "m", "--prompts", "p", "-n", "3", "--temperature", "0.7",
                                  "--top-p", "0.9", "--max-new-tokens", "5", "--seed", "7", NULL);
    CHECK(st == TRAIN_OPTIONS_OK && o.n_samples == 3 && o.temperature == 0.7 && o.top_p == 0.9 &&
              o.max_new_tokens == 5 && o.seed == 7 && !o.out,
          "generate: %s", err);
    train_options_free(&o);
    st = parse(CMD_GENERATE, &o, "--model", "m", "--prompts", "p", "--num-samples", "2", NULL);
    CHECK(st == TRAIN_OPTIONS_OK && o.n_samples == 2, "--num-samples: %s", err);
    train_options_free(&o);
    /* --stop repeats: every value kept in order; the others replace */
    st = parse(CMD_GENERATE, &o, "--model", "m", "--prompts", "p", "--stop", "\n\nUser:", "--top-k", "40", "--stop", "###",
               "--format", "mt_bench", "--generator", "a", "--generator", "b", NULL);
    CHECK(st == TRAIN_OPTIONS_OK && o.stop.n == 2 && !strcmp(o.stop.v[0], "\n\nUser:") && !strcmp(o.stop.v[1], "###") &&
              o.top_k == 40 && !strcmp(o.format, "mt_bench") && !strcmp(o.generator, "b"),
          "generate --stop twice, --top-k, --format, --generator: %s", err);
    train_options_free(&o);
    CHECK(o.stop.n == 0 && !o.stop.v && !o.format && !o.generator, "train_options_free releases the repeated values");
    st = parse(CMD_GENERATE, &o, "--model", "m", "--prompts", "p", NULL);
    CHECK(st == TRAIN_OPTIONS_OK && o.stop.n == 0 && o.top_k == 0 && !o.format, "generate: no stop strings, top-k off");
    train_options_free(&o);
    st = parse(CMD_TRAIN, &o, "--model", "m", "--data", "d", "--out", "o", "--stop", "x", NULL);
    CHECK(st == TRAIN_OPTIONS_ERROR, "train takes no --stop");
    train_options_free(&o);
    static const char *const BAD[][2] = {{"--top-p", "0"}, {"--top-p", "1.5"}, {"--temperature", "-1"},
                                        {"--temperature", "nan"}, {"--max-new-tokens", "0"}, {"-n", "0"},
                                        {"--n", "x"}, {"--seed", "-1"}, {"--top-k", "-1"}, {"--top-k", "1.5"},
                                        {"--stop", ""}, {"--format", "alpaca"}, {"--generator", ""}};
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        st = parse(CMD_GENERATE, &o, "--model", "m", "--prompts", "p", BAD[i][0], BAD[i][1], NULL);
        CHECK(st == TRAIN_OPTIONS_ERROR && (strstr(err, BAD[i][0]) || strstr(err, "--n")), "generate %s %s: %s",
              BAD[i][0], BAD[i][1], err);
        train_options_free(&o);
    }
    st = parse(CMD_GENERATE, &o, "--model", "m", NULL);
    CHECK(st == TRAIN_OPTIONS_ERROR && !strcmp(err, "--prompts FILE.jsonl is required"), "generate needs --prompts: %s",
          err);
    train_options_free(&o);
    st = parse(CMD_GENERATE, &o, "--model", "m", "--prompts", "p", "-n", NULL);
    CHECK(st == TRAIN_OPTIONS_ERROR && strstr(err, "-n needs a value"), "-n without a value: %s", err);
    train_options_free(&o);
}

/* --collective-timeout: on exactly the commands that divide their work among MPI ranks (cli/main.c), 600 s unless
 * given, whole seconds from 1 to a week */
static void test_collective_timeout(void) {
    static const OptCommand RANKS[] = {CMD_TRAIN, CMD_SFT, CMD_REWARD, CMD_SCORE, CMD_EVAL, CMD_LOGPROBS, CMD_GENERATE,
                                       CMD_JUDGE};
    unsigned mask = 0;
    for (size_t i = 0; i < sizeof RANKS / sizeof RANKS[0]; i++) mask |= RANKS[i];
    for (int c = 0; c < N_CMDS; c++) {
        TrainOptions o;
        CHECK(options_takes(CMDS[c], TOPT_COLLECTIVE_TIMEOUT) == !!(CMDS[c] & mask), "ppa %s and --collective-timeout",
              options_command_name(CMDS[c]));
        options_default(CMDS[c], &o);
        CHECK(o.collective_timeout == 600, "ppa %s: default %ld", options_command_name(CMDS[c]), o.collective_timeout);
        train_options_free(&o);
    }
    TrainOptions o;
    TrainOptionsStatus st =
        parse(CMD_SCORE, &o, "--model", "m", "--data", "d", "--out", "c", "--collective-timeout", "5", NULL);
    CHECK(st == TRAIN_OPTIONS_OK && o.collective_timeout == 5, "score --collective-timeout 5: %s", err);
    train_options_free(&o);
    st = parse(CMD_GENERATE, &o, "--model", "m", "--prompts", "p", "--collective-timeout", "604800", NULL);
    CHECK(st == TRAIN_OPTIONS_OK && o.collective_timeout == 604800, "a week: %s", err);
    train_options_free(&o);
    static const char *const BAD[] = {"0", "-1", "604801", "2.5", "x", ""};
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        st = parse(CMD_SFT, &o, "--model", "m", "--data", "d", "--out", "o", "--collective-timeout", BAD[i], NULL);
        CHECK(st == TRAIN_OPTIONS_ERROR && strstr(err, "--collective-timeout") == err, "--collective-timeout '%s': %s",
              BAD[i], err);
        train_options_free(&o);
    }
    st = parse(CMD_SFT, &o, "--model", "m", "--data", "d", "--out", "o", "--collective-timeout", "0", NULL);
    CHECK(st == TRAIN_OPTIONS_ERROR &&
              !strcmp(err, "--collective-timeout must be in 1..604800 seconds (a week), found 0"),
          "the message: %s", err);
    train_options_free(&o);
}

/* argv_next over a local table (as ppa merge's): the codes in order, or the first error's message in err */
static int local_parse(const char *const *args, int *codes, const char **values, int max) {
    enum { L_MODEL = 1, L_OUT, L_SWITCH, L_SAVE_DTYPE };
    static const struct option opts[] = {
        {"model", required_argument, NULL, L_MODEL}, {"out", required_argument, NULL, L_OUT},
        {"output-name", required_argument, NULL, L_OUT}, {"switch", no_argument, NULL, L_SWITCH},
        {"save-dtype", required_argument, NULL, L_SAVE_DTYPE}, {0},
    };
    char *argv[32];
    int argc = 0;
    argv[argc++] = "merge";
    while (args[argc - 1] && argc < 31) argv[argc] = (char *)args[argc - 1], argc++;
    argv[argc] = NULL;
    ArgvParser p;
    argv_begin(&p, "merge", opts, NULL, argc, argv);
    p.arguments = !strcmp(args[0], "ARGS"); /* a first argument "ARGS": bare arguments are taken */
    int n = 0, c;
    const char *v;
    err[0] = 0;
    while ((c = argv_next(&p, &v, err, sizeof err)) != ARGV_END && n < max) {
        codes[n] = c, values[n++] = v;
        if (c == ARGV_ERROR) break;
    }
    return n;
}

static void test_local_table(void) {
    int c[8];
    const char *v[8];
    int n = local_parse((const char *[]){"--model", "m", "--out=o", "--switch", "--mod", "x", NULL}, c, v, 8);
    CHECK(n == 4 && c[0] == 1 && !strcmp(v[0], "m") && c[1] == 2 && !strcmp(v[1], "o") && c[2] == 3 && !v[2] &&
              c[3] == 1 && !strcmp(v[3], "x"),
          "--opt value, --opt=value, a switch, a unique prefix: %d codes", n);
    n = local_parse((const char *[]){"--help", NULL}, c, v, 8);
    CHECK(n == 1 && c[0] == ARGV_HELP, "--help is every command's");
    static const struct {
        const char *args[4], *want;
    } BAD[] = {
        {{"--bogus", NULL}, "unknown option '--bogus' (see ppa merge --help)"},
        {{"--modle", "m", NULL}, "unknown option '--modle' (did you mean '--model'?)"},
        {{"--model", NULL}, "--model needs a value"},
        {{"--switch=1", NULL}, "--switch takes no value"},
        {{"--ou", "o", NULL}, "ambiguous option '--ou': --out, --output-name"},
        {{"-model", "m", NULL}, "unknown option '-model' (did you mean '--model'? ppa uses long options only)"},
        {{"-x", NULL}, "unknown option '-x' (ppa uses long options only: see ppa merge --help)"},
        {{"extra", NULL}, "unexpected argument 'extra' (every input is given by a --flag)"},
        {{"--", "extra", NULL}, "unexpected argument 'extra'"},
        {{"--dtype", "bf16", NULL}, "unknown option '--dtype' (did you mean '--save-dtype'? --dtype is its former name)"},
        {{"--learning-rate", "1", NULL}, "unknown option '--learning-rate' (see ppa merge --help)"}, /* no --lr here */
    };
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        n = local_parse(BAD[i].args, c, v, 8);
        CHECK(n >= 1 && c[n - 1] == ARGV_ERROR && strstr(err, BAD[i].want) == err, "%s: '%s', want '%s'", BAD[i].args[0],
              err, BAD[i].want);
    }
    n = local_parse((const char *[]){"ARGS", "--model", "m", "--", "--out", NULL}, c, v, 8);
    CHECK(n == 3 && c[0] == ARGV_ARGUMENT && !strcmp(v[0], "ARGS") && c[1] == 1 && c[2] == ARGV_ARGUMENT &&
              !strcmp(v[2], "--out"),
          "arguments, and after --: %d", n);
}

/* a TRL / handbook name written as a flag: the ppa flag it stands for, on the commands that take it */
static void test_foreign_names(void) {
    static const struct {
        OptCommand cmd;
        const char *flag, *value, *want;
    } CASES[] = {
        {CMD_TRAIN, "--loss_type", "sigmoid", "(did you mean '--objective dpo_all_pairs'? loss_type sigmoid is ppa's"},
        {CMD_TRAIN, "--loss-type", "ipo", "(did you mean '--objective ipo'?"},
        {CMD_GRAD, "--loss_type", "robust", "ppa has no objective for loss_type robust; `ppa grad --list-objectives`"},
        {CMD_TRAIN, "--loss_type", NULL, "TRL's loss types in ppa: sigmoid -> dpo_all_pairs, hinge -> hinge, ipo -> ipo"},
        {CMD_TRAIN, "--bf16", NULL, "(did you mean '--precision bf16'?"},
        {CMD_SCORE, "--bf16", NULL, "(did you mean '--precision bf16'?"},
        {CMD_TRAIN, "--report_to", "wandb", "(did you mean '--report-to'?)"},
        {CMD_TRAIN, "--lora_target_modules", "q_proj", "(did you mean '--lora-targets'?"},
        {CMD_SFT, "--lora-target-modules", "q_proj", "(did you mean '--lora-targets'?"},
        {CMD_TRAIN, "--num_train_epochs", "2", "(did you mean '--epochs'? num_train_epochs is a config-file key)"},
        {CMD_SFT, "--report_to", "wandb", "(did you mean '--report-to'?"},
        {CMD_SCORE, "--report-to", "tensorboard", "(see ppa score --help)"}, /* score trains nothing */
        {CMD_SCORE, "--loss_type", "sigmoid", "(see ppa score --help)"}, /* score has no --objective */
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        TrainOptions o;
        TrainOptionsStatus st = CASES[i].value ? parse(CASES[i].cmd, &o, CASES[i].flag, CASES[i].value, NULL)
                                               : parse(CASES[i].cmd, &o, CASES[i].flag, NULL);
        CHECK(st == TRAIN_OPTIONS_ERROR && strstr(err, "unknown option '") == err && strstr(err, CASES[i].want),
              "%s %s %s: %s", options_command_name(CASES[i].cmd), CASES[i].flag, CASES[i].value ? CASES[i].value : "",
              err);
        train_options_free(&o);
    }
}

int main(void) {
    test_local_table();
    test_foreign_names();
    test_collective_timeout();
    test_table();
    test_help();
    test_flags_per_command();
    test_sft();
    test_generate();
    return check_report("test_options");
}
