/* test_train_options.c: `ppa train` options: defaults, command line only,
 * config only, the command line overriding the config before and after
 * --config, unknown keys (FILE:LINE and a suggestion), ignored keys (one
 * note each on stderr), loss_type for every objective, the batch rule,
 * validation, and the JSON record. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "options/options.h"

static char dir[64];          /* temporary folder: model/, data.jsonl, eval.jsonl, cfg.yaml */
static char cfg[128];         /* the config path */
static char err[2048];
static char captured[1 << 16]; /* stderr of the last parse */

/* Writes the config, with every "@D" replaced by the temporary folder. */
static void write_config(const char *text) {
    FILE *f = fopen(cfg, "w");
    for (const char *p = text; *p; p++) {
        if (p[0] == '@' && p[1] == 'D') fputs(dir, f), p++;
        else fputc(*p, f);
    }
    fclose(f);
}

static OptCommand parse_cmd = CMD_TRAIN; /* the command parse() parses for */

/* Parses "train" (or parse_cmd's) + the arguments (NULL-terminated; "@C" = the config path), capturing stderr. */
static TrainOptionsStatus parse(TrainOptions *o, ...) {
    char *argv[64];
    int argc = 0;
    argv[argc++] = "train";
    va_list ap;
    va_start(ap, o);
    const char *a;
    while ((a = va_arg(ap, const char *)) && argc < 63) argv[argc++] = !strcmp(a, "@C") ? cfg : (char *)a;
    va_end(ap);
    argv[argc] = NULL;
    char *copy[64]; /* the parser must not reorder argv */
    memcpy(copy, argv, sizeof(char *) * (size_t)(argc + 1));
    fflush(stderr);
    int saved = dup(2);
    FILE *tmp = tmpfile();
    dup2(fileno(tmp), 2);
    TrainOptionsStatus st = parse_cmd == CMD_TRAIN ? train_options_parse(argc, argv, o, err, sizeof err)
                                                  : options_parse(parse_cmd, argc, argv, o, err, sizeof err);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(tmp);
    size_t n = fread(captured, 1, sizeof captured - 1, tmp);
    captured[n] = 0;
    fclose(tmp);
    CHECK(!memcmp(argv, copy, sizeof(char *) * (size_t)argc), "argv was reordered");
    return st;
}

#define MDO "--model", "m", "--data", "d", "--out", "o"

static const char *origin(const TrainOptions *o, TrainOptId id) {
    static char buf[512];
    return train_option_origin(o, id, buf, sizeof buf);
}

static int has_note(const TrainOptions *o, const char *text) {
    for (int i = 0; i < o->n_notes; i++)
        if (strstr(o->notes[i], text)) return 1;
    return 0;
}

/* an error whose message contains `what` (and starts with `prefix` when given) */
static void check_error(TrainOptionsStatus st, const char *prefix, const char *what, int line) {
    CHECK(st == TRAIN_OPTIONS_ERROR, "line %d: status %d, want an error", line, st);
    CHECK((!prefix || !strncmp(err, prefix, strlen(prefix))) && strstr(err, what),
          "line %d: message '%s', want %s%s%s'%s'", line, err, prefix ? "prefix '" : "", prefix ? prefix : "",
          prefix ? "' and " : "", what);
}
#define ERROR_WITH(st, prefix, what) check_error(st, prefix, what, __LINE__)

static char *at_line(int line) { /* "CFG:LINE: " */
    static char buf[256];
    snprintf(buf, sizeof buf, "%s:%d: ", cfg, line);
    return buf;
}

static void test_defaults(void) {
    TrainOptions o;
    TrainOptionsStatus st = parse(&o, MDO, NULL);
    CHECK(st == TRAIN_OPTIONS_OK, "minimal command line: %s", err);
    CHECK(!strcmp(o.model, "m") && !strcmp(o.data, "d") && !strcmp(o.out, "o"), "paths");
    CHECK(o.objective == PPA_NEURAL_NDCG, "objective neural_ndcg");
    CHECK(o.beta == 0.1 && o.loss.beta == 0.1 && o.loss.tau == 1.0 && o.loss.alpha == 25, "beta, tau, alpha");
    CHECK(o.lr == 5e-7 && o.schedule == SCHEDULE_COSINE && o.warmup_ratio == 0.1, "lr, schedule, warm-up");
    CHECK(o.batch_size == 128 && o.micro_batch == 1 && o.grad_accum == 128, "batch %d = %d x %d", o.batch_size,
          o.micro_batch, o.grad_accum);
    CHECK(o.list_size == 8 && o.epochs == 1 && o.max_steps == 0 && o.seed == 42, "list size, epochs, seed");
    CHECK(o.weight_decay == 0 && o.clip_grad == 1.0 && o.max_length == 1024 && o.max_prompt_length == 512,
          "decay, clip, lengths");
    CHECK(!o.ref && !o.ref_cache && !o.resume && !o.log && !o.eval_data && !o.template_name && !o.config,
          "no optional paths");
    CHECK(o.save_dtype == SAVE_F32 && !o.save_every && !o.eval_every && !o.threads && !o.verbose && !o.skip_invalid &&
              !o.reference_free && !o.log_lambdas,
          "flags off");
    CHECK(!strcmp(origin(&o, TOPT_MODEL), "--model") && !strcmp(origin(&o, TOPT_LR), "default") &&
              !strcmp(origin(&o, TOPT_GRAD_ACCUM), "derived") && !strcmp(origin(&o, TOPT_MICRO_BATCH), "default"),
          "origins: %s %s %s", origin(&o, TOPT_MODEL), origin(&o, TOPT_LR), origin(&o, TOPT_GRAD_ACCUM));
    CHECK(o.n_notes == 0 && captured[0] == 0, "no notes: %s", captured);
    CHECK(!strcmp(train_option_name(TOPT_MAX_PROMPT_LENGTH), "max_prompt_length"), "option names");
    train_options_free(&o);

    st = parse(&o, "--data", "d", "--out", "o", NULL);
    ERROR_WITH(st, NULL, "--model DIR is required (or model_name_or_path in the --config file)");
    train_options_free(&o);
    st = parse(&o, "--model", "m", "--out", "o", NULL);
    ERROR_WITH(st, NULL, "--data FILE.jsonl is required");
    train_options_free(&o);
    st = parse(&o, "--model", "m", "--data", "d", NULL);
    ERROR_WITH(st, NULL, "--out DIR is required");
    train_options_free(&o);
}

static void test_cli_only(void) {
    TrainOptions o;
    TrainOptionsStatus st =
        parse(&o, MDO, "--objective", "dpo_bpr", "--beta", "0.05", "--list-size", "4", "--epochs", "2", "--max-steps",
              "300", "--lr", "1e-6", "--batch-size", "64", "--micro-batch", "2", "--warmup-ratio", "0.05", "--schedule",
              "linear", "--weight-decay", "0.01", "--clip-grad", "0", "--seed", "18446744073709551615", "--max-length",
              "512", "--max-prompt-length", "256", "--template", "chatml", "--skip-invalid", "--ref", "r",
              "--ref-cache", "rc.bin", "--save-every", "100", "--resume", "ck", "--save-dtype", "bf16", "--log",
              "l.jsonl", "--log-lambdas", "--eval-data", "e.jsonl", "--eval-every", "50", "--threads", "2",
              "--verbose", "--ties", "include", "--label-smoothing=0.1", NULL);
    CHECK(st == TRAIN_OPTIONS_OK, "every flag: %s", err);
    CHECK(o.objective == PPA_DPO_BPR && o.beta == 0.05 && o.loss.beta == 0.05 && o.list_size == 4, "objective");
    CHECK(o.epochs == 2 && o.max_steps == 300 && o.lr == 1e-6, "steps, lr");
    CHECK(o.batch_size == 64 && o.micro_batch == 2 && o.grad_accum == 32, "batch 64 = 2 x %d", o.grad_accum);
    CHECK(o.warmup_ratio == 0.05 && o.schedule == SCHEDULE_LINEAR && o.weight_decay == 0.01 && o.clip_grad == 0,
          "schedule");
    CHECK(o.seed == 18446744073709551615ULL, "64-bit seed");
    CHECK(o.max_length == 512 && o.max_prompt_length == 256 && !strcmp(o.template_name, "chatml"), "lengths");
    CHECK(o.skip_invalid && o.log_lambdas && o.verbose && !o.reference_free, "flags");
    CHECK(!strcmp(o.ref, "r") && !strcmp(o.ref_cache, "rc.bin") && !strcmp(o.resume, "ck") &&
              !strcmp(o.log, "l.jsonl") && !strcmp(o.eval_data, "e.jsonl"),
          "paths");
    CHECK(o.save_every == 100 && o.eval_every == 50 && o.threads == 2 && o.save_dtype == SAVE_BF16, "checkpoints");
    CHECK(o.loss.ties == PPA_TIES_INCLUDE && o.loss.label_smoothing == 0.1, "objective options");
    CHECK(!strcmp(origin(&o, TOPT_TIES), "--ties") && !strcmp(origin(&o, TOPT_LABEL_SMOOTHING), "--label-smoothing") &&
              !strcmp(origin(&o, TOPT_GRAD_ACCUM), "derived") && !strcmp(origin(&o, TOPT_BETA), "--beta"),
          "origins");
    CHECK(o.n_notes == 0, "no notes: %s", captured);
    train_options_free(&o);

    /* neural_ndcg options through ppa loss's parser */
    st = parse(&o, MDO, "--objective", "ppa", "--tau", "0.5", "--no-sinkhorn", "--k", "4", "--gain", "linear",
               "--discount", "inv_sqrt", "--sinkhorn-iters", "20", "--sinkhorn-tol", "1e-8", NULL);
    CHECK(st == TRAIN_OPTIONS_OK && o.objective == PPA_NEURAL_NDCG && o.loss.tau == 0.5 && !o.loss.sinkhorn &&
              o.loss.k == 4 && o.loss.gain == PPA_GAIN_LINEAR && o.loss.discount == PPA_DISCOUNT_INV_SQRT &&
              o.loss.sinkhorn_iters == 20 && o.loss.sinkhorn_tol == 1e-8,
          "neural_ndcg options: %s", err);
    CHECK(!strcmp(origin(&o, TOPT_SINKHORN), "--no-sinkhorn") && !strcmp(origin(&o, TOPT_SINKHORN_ITERS),
                                                                         "--sinkhorn-iters"),
          "loss origins %s", origin(&o, TOPT_SINKHORN_ITERS));
    train_options_free(&o);
    st = parse(&o, MDO, "--objective", "listmle", "--normalize", "--alpha", "10", NULL);
    CHECK(st == TRAIN_OPTIONS_OK && o.loss.normalize && o.loss.alpha == 10, "listmle --normalize");
    CHECK(o.n_notes == 1 && has_note(&o, "--alpha has no effect on objective listmle"), "alpha note: %s", captured);
    train_options_free(&o);
    st = parse(&o, MDO, "--objective", "ipo", "--beta", "0.2", "--pairs", "best_with_worst", NULL);
    CHECK(st == TRAIN_OPTIONS_OK && o.objective == PPA_IPO && o.loss.beta == 0.2 && o.loss.pairs == PPA_PAIRS_BEST_WORST,
          "ipo's beta follows --beta");
    train_options_free(&o);

    /* bad values and flags */
    struct {
        const char *flag, *value, *what;
    } bad[] = {
        {"--lr", "abc", "--lr: cannot use 'abc': expected a finite number"},
        {"--lr", "0", "--lr must be > 0"},
        {"--lr", "inf", "--lr: cannot use 'inf'"},
        {"--epochs", "1.5", "ppa trains whole epochs"},
        {"--epochs", "0", "--epochs must be >= 1"},
        {"--max-steps", "-2", "--max-steps must be >= 0"},
        {"--warmup-ratio", "1", "--warmup-ratio must be in [0, 1)"},
        {"--weight-decay", "-1", "--weight-decay must be >= 0"},
        {"--clip-grad", "-1", "--clip-grad must be >= 0"},
        {"--beta", "0", "--beta must be > 0"},
        {"--list-size", "1", "--list-size must be in 2..1024"},
        {"--max-prompt-length", "1024", "--max-prompt-length must be in 1..max_length - 1 = 1023"},
        {"--max-length", "1", "--max-length must be in 2.."},
        {"--template", "jinja", "--template 'jinja' is not a template"},
        {"--schedule", "cosine_with_restarts", "--schedule: cannot use 'cosine_with_restarts'"},
        {"--save-dtype", "f16", "--save-dtype: cannot use 'f16': expected f32 or bf16"},
        {"--seed", "-1", "--seed: cannot use '-1'"},
        {"--threads", "-1", "--threads must be in 0..4096"},
        {"--tau", "0", "--tau: tau must be > 0"},
        {"--objective", "nope", "--objective: unknown objective 'nope'"},
        {"--ties", "sometimes", "--ties: option 'ties': cannot use value 'sometimes'"},
        {"--verbose=maybe", NULL, "--verbose: cannot use 'maybe': expected true or false"},
        {"--eval-every", "5", "--eval-every needs --eval-data FILE"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        st = bad[i].value ? parse(&o, MDO, bad[i].flag, bad[i].value, NULL) : parse(&o, MDO, bad[i].flag, NULL);
        CHECK(st == TRAIN_OPTIONS_ERROR && strstr(err, bad[i].what), "%s %s: '%s', want '%s'", bad[i].flag,
              bad[i].value ? bad[i].value : "", err, bad[i].what);
        train_options_free(&o);
    }
    st = parse(&o, MDO, "--reference-free", "--ref", "r", NULL);
    ERROR_WITH(st, "--reference-free", "uses no reference model: drop the reference model (--ref)");
    train_options_free(&o);
    st = parse(&o, MDO, "--objective", "simpo", "--ref", "r", NULL);
    CHECK(st == TRAIN_OPTIONS_OK && has_note(&o, "simpo uses no reference model"), "simpo --ref note");
    train_options_free(&o);

    /* the command line's own mistakes */
    st = parse(&o, MDO, "--learning-rate", "1e-6", NULL);
    ERROR_WITH(st, NULL, "unknown option '--learning-rate' (did you mean '--lr'? learning_rate is a config-file key)");
    train_options_free(&o);
    st = parse(&o, MDO, "--epoch", "2", NULL); /* a unique prefix is accepted, as getopt_long does */
    CHECK(st == TRAIN_OPTIONS_OK && o.epochs == 2, "prefix --epoch: %s", err);
    train_options_free(&o);
    st = parse(&o, MDO, "--warmup-ration", "0.1", NULL);
    ERROR_WITH(st, NULL, "unknown option '--warmup-ration' (did you mean '--warmup-ratio'?)");
    train_options_free(&o);
    st = parse(&o, MDO, "--max", "3", NULL);
    ERROR_WITH(st, NULL, "ambiguous option '--max': --max-steps, --max-length, --max-prompt-length");
    train_options_free(&o);
    st = parse(&o, MDO, "--lr", NULL);
    ERROR_WITH(st, NULL, "--lr needs a value");
    train_options_free(&o);
    st = parse(&o, MDO, "--help=yes", NULL);
    ERROR_WITH(st, NULL, "--help takes no value");
    train_options_free(&o);
    st = parse(&o, MDO, "-v", NULL);
    ERROR_WITH(st, NULL, "unknown option '-v' (ppa uses long options only");
    train_options_free(&o);
    st = parse(&o, MDO, "extra", NULL);
    ERROR_WITH(st, NULL, "unexpected argument 'extra'");
    train_options_free(&o);
    st = parse(&o, MDO, "--", "extra", NULL);
    ERROR_WITH(st, NULL, "unexpected argument 'extra'");
    train_options_free(&o);
    st = parse(&o, MDO, "--zzzzzz", NULL);
    ERROR_WITH(st, NULL, "unknown option '--zzzzzz' (see ppa train --help)");
    train_options_free(&o);
    st = parse(&o, "--lr", "1e-6", "--help", NULL);
    CHECK(st == TRAIN_OPTIONS_HELP, "--help");
    train_options_free(&o);
    st = parse(&o, "--list-objectives", NULL);
    CHECK(st == TRAIN_OPTIONS_LIST_OBJECTIVES, "--list-objectives");
    train_options_free(&o);
    st = parse(&o, MDO, "--config", "a.yaml", "--config", "b.yaml", NULL);
    ERROR_WITH(st, NULL, "--config given twice");
    train_options_free(&o);
    st = parse(&o, MDO, "--config", "/nonexistent/recipe.yaml", NULL);
    ERROR_WITH(st, "/nonexistent/recipe.yaml: cannot open", "");
    train_options_free(&o);
}

/* An alignment-handbook style recipe for ppa, written for this test. */
static const char RECIPE[] =
    "# Model arguments\n"                              /* 1 */
    "model_name_or_path: @D/model\n"                   /* 2 */
    "torch_dtype: bfloat16\n"                          /* 3 */
    "use_flash_attention_2: true\n"                    /* 4 */
    "# Data training arguments\n"                      /* 5 */
    "dataset_mixer:\n"                                 /* 6 */
    "  @D/data.jsonl: 1.0\n"                           /* 7 */
    "dataset_splits:\n"                                /* 8 */
    "- train\n"                                        /* 9 */
    "- test\n"                                         /* 10 */
    "preprocessing_num_workers: 12\n"                  /* 11 */
    "# Trainer arguments\n"                            /* 12 */
    "bf16: true\n"                                     /* 13 */
    "beta: 0.05\n"                                     /* 14 */
    "tau: 1.0\n"                                       /* 15 */
    "list_size: 8\n"                                   /* 16 */
    "loss_type: neural_ndcg\n"                         /* 17 */
    "do_eval: true\n"                                  /* 18 */
    "evaluation_strategy: steps\n"                     /* 19 */
    "eval_steps: 200\n"                                /* 20 */
    "gradient_accumulation_steps: 32\n"                /* 21 */
    "gradient_checkpointing: true\n"                   /* 22 */
    "gradient_checkpointing_kwargs:\n"                 /* 23 */
    "  use_reentrant: false\n"                         /* 24 */
    "hub_model_id: qwen2-0.5b-ppa-beta-0.05\n"         /* 25 */
    "learning_rate: 5.0e-7\n"                          /* 26 */
    "log_level: info\n"                                /* 27 */
    "logging_steps: 5\n"                               /* 28 */
    "lr_scheduler_type: cosine\n"                      /* 29 */
    "max_length: 1024\n"                               /* 30 */
    "max_prompt_length: 512\n"                         /* 31 */
    "num_train_epochs: 1\n"                            /* 32 */
    "optim: adamw_torch\n"                             /* 33 */
    "output_dir: @D/run\n"                             /* 34 */
    "overwrite_output_dir: true\n"                     /* 35 */
    "run_name: qwen2-0.5b-ppa\n"                       /* 36 */
    "per_device_train_batch_size: 1\n"                 /* 37 */
    "per_device_eval_batch_size: 1\n"                  /* 38 */
    "push_to_hub: false\n"                             /* 39 */
    "report_to:\n"                                     /* 40 */
    "- tensorboard\n"                                  /* 41 */
    "save_strategy: \"steps\"\n"                       /* 42 */
    "save_steps: 100\n"                                /* 43 */
    "save_total_limit: 1\n"                            /* 44 */
    "seed: 42\n"                                       /* 45 */
    "warmup_ratio: 0.1\n";                             /* 46 */

static void test_config_only(void) {
    write_config(RECIPE);
    TrainOptions o;
    TrainOptionsStatus st = parse(&o, "--config", "@C", NULL);
    CHECK(st == TRAIN_OPTIONS_OK, "recipe alone: %s", err);
    char want[256];
    snprintf(want, sizeof want, "%s/model", dir);
    CHECK(o.model && !strcmp(o.model, want), "model_name_or_path");
    snprintf(want, sizeof want, "%s/data.jsonl", dir);
    CHECK(o.data && !strcmp(o.data, want), "dataset_mixer's file");
    snprintf(want, sizeof want, "%s/run", dir);
    CHECK(o.out && !strcmp(o.out, want), "output_dir");
    CHECK(!strcmp(o.config, cfg), "config path kept");
    CHECK(o.objective == PPA_NEURAL_NDCG && o.beta == 0.05 && o.loss.beta == 0.05 && o.loss.tau == 1.0 &&
              o.list_size == 8,
          "objective");
    CHECK(o.lr == 5e-7 && o.schedule == SCHEDULE_COSINE && o.warmup_ratio == 0.1 && o.epochs == 1 && o.seed == 42,
          "optimisation");
    CHECK(o.micro_batch == 1 && o.grad_accum == 32 && o.batch_size == 32, "batch %d = %d x %d", o.batch_size,
          o.micro_batch, o.grad_accum);
    CHECK(o.save_every == 100 && o.eval_every == 200, "save_steps, eval_steps");
    snprintf(want, sizeof want, "%s:26 learning_rate", cfg);
    CHECK(!strcmp(origin(&o, TOPT_LR), want), "lr from '%s', want '%s'", origin(&o, TOPT_LR), want);
    snprintf(want, sizeof want, "%s:17 loss_type", cfg);
    CHECK(!strcmp(origin(&o, TOPT_OBJECTIVE), want), "objective from %s", origin(&o, TOPT_OBJECTIVE));
    snprintf(want, sizeof want, "%s:6 dataset_mixer", cfg);
    CHECK(!strcmp(origin(&o, TOPT_DATA), want), "data from %s", origin(&o, TOPT_DATA));
    CHECK(!strcmp(origin(&o, TOPT_BATCH_SIZE), "derived") && !strcmp(origin(&o, TOPT_CLIP_GRAD), "default"),
          "derived and default");
    /* one note per ignored key, each on stderr with FILE:LINE */
    static const struct {
        int line;
        const char *key;
    } ignored[] = {{3, "torch_dtype"},
                   {4, "use_flash_attention_2"},
                   {8, "dataset_splits"},
                   {11, "preprocessing_num_workers"},
                   {18, "do_eval"},
                   {23, "gradient_checkpointing_kwargs"},
                   {25, "hub_model_id"},
                   {27, "log_level"},
                   {28, "logging_steps"},
                   {35, "overwrite_output_dir"},
                   {36, "run_name"},
                   {38, "per_device_eval_batch_size"},
                   {39, "push_to_hub"},
                   {44, "save_total_limit"}};
    size_t n_ignored = sizeof ignored / sizeof ignored[0];
    for (size_t i = 0; i < n_ignored; i++) {
        char line[300];
        snprintf(line, sizeof line, "ppa: note: %s:%d: %s ignored: ", cfg, ignored[i].line, ignored[i].key);
        char *at = strstr(captured, line);
        CHECK(at && !strstr(at + 1, line), "exactly one note '%s'", line);
    }
    CHECK(strstr(captured, "torch_dtype ignored: ppa keeps float32 master weights"), "the reason is given");
    /* report_to: [tensorboard] is honoured (cli/report.h) */
    CHECK(o.report_to && !strcmp(o.report_to, "tensorboard"), "report_to -> --report-to tensorboard");
    /* bf16: true and gradient_checkpointing: true are honoured */
    CHECK(o.bf16 == 1 && o.gradient_checkpointing == 1, "bf16 -> --precision bf16, gradient_checkpointing");
    snprintf(want, sizeof want, "%s:13 bf16", cfg);
    CHECK(!strcmp(origin(&o, TOPT_PRECISION), want), "precision from '%s', want '%s'", origin(&o, TOPT_PRECISION), want);
    /* plus the batch note: 1 x 32 leaves out the GPUs */
    CHECK(has_note(&o, "batch size 32 = per-device batch 1 x gradient accumulation 32") &&
              has_note(&o, "--batch-size 128"),
          "GPU note: %s", captured);
    /* and eval_steps without eval_data */
    snprintf(want, sizeof want, "%s:20: eval_steps 200 has no effect without eval_data", cfg);
    CHECK(has_note(&o, want), "eval note: %s", captured);
    CHECK(o.n_notes == (int)n_ignored + 2, "%d notes, want %zu: %s", o.n_notes, n_ignored + 2, captured);
    int lines = 0;
    for (const char *p = captured; *p; p++) lines += *p == '\n';
    CHECK(lines == o.n_notes, "every note on stderr once: %d lines", lines);

    /* the JSON record */
    FILE *tmp = tmpfile();
    train_options_print_json(&o, tmp);
    rewind(tmp);
    char json[1 << 15];
    size_t n = fread(json, 1, sizeof json - 1, tmp);
    json[n] = 0;
    fclose(tmp);
    CHECK(n > 0 && strchr(json, '\n') == json + n - 1, "one line of JSON");
    cJSON *j = cJSON_Parse(json);
    CHECK(j != NULL, "valid JSON: %.200s", json);
    if (j) {
        cJSON *from = cJSON_GetObjectItem(j, "from");
        snprintf(want, sizeof want, "%s:26 learning_rate", cfg);
        CHECK(cJSON_GetObjectItem(j, "lr")->valuedouble == 5e-7, "lr value");
        CHECK(!strcmp(cJSON_GetObjectItem(from, "lr")->valuestring, want), "from.lr");
        CHECK(!strcmp(cJSON_GetObjectItem(from, "clip_grad")->valuestring, "default"), "from.clip_grad");
        CHECK(!strcmp(cJSON_GetObjectItem(j, "objective")->valuestring, "neural_ndcg"), "objective name");
        CHECK(!strcmp(cJSON_GetObjectItem(j, "schedule")->valuestring, "cosine"), "schedule name");
        CHECK(cJSON_GetObjectItem(j, "seed")->valuedouble == 42, "seed");
        CHECK(cJSON_IsTrue(cJSON_GetObjectItem(j, "sinkhorn")), "sinkhorn");
        CHECK(cJSON_IsNull(cJSON_GetObjectItem(j, "ref")), "ref null");
        CHECK(!strcmp(cJSON_GetObjectItem(j, "gain")->valuestring, "pow2") &&
                  !strcmp(cJSON_GetObjectItem(j, "pairs")->valuestring, "all_pairs"),
              "enum names");
        CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(j, "notes")) == o.n_notes, "notes in the record");
        int n_train = 0;
        for (int id = 0; id < TOPT_COUNT; id++) n_train += options_takes(CMD_TRAIN, (TrainOptId)id);
        CHECK(cJSON_GetArraySize(from) == n_train && n_train == TOPT_NORMALIZE + 1, "every option has an origin");
        cJSON_Delete(j);
    }
    train_options_free(&o);
}

static void test_cli_overrides_config(void) {
    write_config("model_name_or_path: @D/model\n"
                 "dataset_mixer:\n"
                 "  @D/data.jsonl: 1.0\n"
                 "output_dir: @D/run\n"
                 "learning_rate: 1.0e-6\n"   /* 5 */
                 "beta: 0.05\n"              /* 6 */
                 "loss_type: dpo\n"          /* 7 */
                 "pairwise_type: best_with_worst\n"
                 "verbose: true\n"           /* 9 */
                 "tau: 0.5\n");              /* 10 */
    TrainOptions o;
    /* flags before --config */
    TrainOptionsStatus st = parse(&o, "--lr", "2e-6", "--objective", "ppa", "--verbose=false", "--config", "@C", NULL);
    CHECK(st == TRAIN_OPTIONS_OK, "flags before --config: %s", err);
    CHECK(o.lr == 2e-6 && !strcmp(origin(&o, TOPT_LR), "--lr"), "--lr before --config wins");
    CHECK(o.objective == PPA_NEURAL_NDCG && !strcmp(origin(&o, TOPT_OBJECTIVE), "--objective"), "--objective wins");
    CHECK(o.verbose == 0, "--verbose=false overrides verbose: true");
    CHECK(o.beta == 0.05, "config beta kept");
    CHECK(!has_note(&o, "tau has no effect"), "tau applies to the command line's objective");
    train_options_free(&o);
    /* flags after --config */
    st = parse(&o, "--config", "@C", "--lr", "3e-6", "--beta", "0.2", "--out", "elsewhere", NULL);
    CHECK(st == TRAIN_OPTIONS_OK, "flags after --config: %s", err);
    CHECK(o.lr == 3e-6 && o.beta == 0.2 && o.loss.beta == 0.2 && !strcmp(o.out, "elsewhere"), "flags after win");
    CHECK(o.objective == PPA_DPO_SINGLE_PAIR && o.verbose == 1, "config values stay");
    char want[256];
    snprintf(want, sizeof want, "%s:10: tau has no effect on objective dpo_single_pair", cfg);
    CHECK(has_note(&o, want), "tau note: %s", captured);
    train_options_free(&o);

    /* a local --data replaces a recipe's Hub dataset, which alone is an error */
    write_config("model_name_or_path: @D/model\n"
                 "dataset_mixer:\n"
                 "  OPO-alignment/ListUltraFeedback: 1.0\n"
                 "output_dir: @D/run\n");
    st = parse(&o, "--config", "@C", NULL);
    ERROR_WITH(st, at_line(2), "dataset_mixer names 'OPO-alignment/ListUltraFeedback', which is not a local file");
    train_options_free(&o);
    st = parse(&o, "--config", "@C", "--data", "local.jsonl", NULL);
    CHECK(st == TRAIN_OPTIONS_OK && !strcmp(o.data, "local.jsonl"), "--data over a Hub name: %s", err);
    train_options_free(&o);
    write_config("model_name_or_path: alignment-handbook/zephyr-7b-sft-full\n");
    st = parse(&o, "--config", "@C", "--data", "d", "--out", "o", NULL);
    ERROR_WITH(st, at_line(1), "model_name_or_path names 'alignment-handbook/zephyr-7b-sft-full', which is not a local folder");
    train_options_free(&o);
    st = parse(&o, "--config", "@C", "--data", "d", "--out", "o", "--model", "m", NULL);
    CHECK(st == TRAIN_OPTIONS_OK, "--model over a Hub name: %s", err);
    train_options_free(&o);

    /* YAML the handbook's recipes do not use but libyaml reads: an anchor and its alias, a flow mapping */
    write_config("seed: &n 7\n"
                 "max_steps: *n\n"
                 "dataset_mixer: {@D/data.jsonl: 1.0}\n"
                 "learning_rate: >-\n  2.0e-6\n");
    st = parse(&o, "--config", "@C", "--model", "m", "--out", "o", NULL);
    snprintf(want, sizeof want, "%s/data.jsonl", dir);
    CHECK(st == TRAIN_OPTIONS_OK && o.seed == 7 && o.max_steps == 7 && o.lr == 2e-6 && o.data && !strcmp(o.data, want),
          "anchor, alias, flow mapping, block scalar: %s", err);
    CHECK(o.origin[TOPT_MAX_STEPS].line == 2, "an alias value comes from its key's line");
    train_options_free(&o);

    /* an empty config changes nothing */
    write_config("# nothing yet\n");
    st = parse(&o, "--config", "@C", MDO, NULL);
    CHECK(st == TRAIN_OPTIONS_OK && o.lr == 5e-7 && o.n_notes == 0, "empty config: %s", err);
    train_options_free(&o);
}

static void test_unknown_keys(void) {
    TrainOptions o;
    write_config("beta: 0.1\n"
                 "# comment\n"
                 "learning_rat: 1.0e-6\n");
    TrainOptionsStatus st = parse(&o, "--config", "@C", MDO, NULL);
    ERROR_WITH(st, at_line(3), "unknown key 'learning_rat' (did you mean 'learning_rate'?)");
    CHECK(st == TRAIN_OPTIONS_ERROR, "exit status 2 is the caller's");
    train_options_free(&o);
    const struct {
        const char *text, *what;
        int line;
    } cases[] = {
        {"Learning_Rate: 1.0e-6\n", "unknown key 'Learning_Rate' (did you mean 'learning_rate'?)", 1},
        {"beta: 0.1\nper_device_batch_size: 2\n", "(did you mean 'per_device_eval_batch_size'?)", 2},
        {"gradient_acumulation_steps: 4\n", "(did you mean 'gradient_accumulation_steps'?)", 1},
        {"lis_size: 4\n", "(did you mean 'list_size'?)", 1},
        {"completely_unrelated_thing: 4\n", "unknown key 'completely_unrelated_thing' (ppa train --help", 1},
        {"dataset_mixture: x\nb: *nope\n", "undefined alias '*nope'", 2}, /* a YAML error comes first, with its line */
        /* a flow mapping is read: the key is what is wrong */
        {"dataset_mixture: {}\n", "unknown key 'dataset_mixture' (did you mean 'dataset_mixer'?)", 1},
        {"loss_type: dpo\nobjective: ppa\n", "loss_type sets the same option (objective) as objective on line 2", 1},
        {"lr: 1e-6\nlearning_rate: 2e-6\n", "learning_rate sets the same option (lr) as lr on line 1", 2},
        {"evaluation_strategy: steps\neval_strategy: steps\n", "eval_strategy repeats evaluation_strategy", 2},
        {"- a\n- b\n", "a config file is a mapping of 'key: value' lines, found a list", 1},
        {"config: other.yaml\n", "a config file cannot name another config file", 1},
        {"chat_template: \"{% for m in messages %}\"\n", "renders the model folder's own chat template", 1},
        {"optim: sgd\n", "optim 'sgd': ppa has one optimizer, AdamW", 1},
        {"adam_beta1: 0.95\n", "adam_beta1 0.95: ppa's AdamW uses adam_beta1 0.9", 1},
        {"adam_epsilon: 1.0e-6\n", "adam_epsilon", 1},
        {"use_dora: true\n", "use_dora: DoRA is not implemented", 1},
        {"use_peft: true\nlora_target_modules: [q_proj, lm_head]\n", "'lm_head' is not a target", 2},
        {"use_peft: maybe\n", "use_peft: expected true or false", 1},
        {"load_in_4bit: true\n", "ppa does not quantize", 1},
        {"warmup_steps: 10\n", "warmup_steps 10: ppa sets the warm-up as a share of the steps", 1},
        {"truncation_mode: keep_start\n", "ppa keeps the end of a long prompt", 1},
        {"resume_from_checkpoint: true\n", "ppa needs the checkpoint folder", 1},
        {"lr_scheduler_type: cosine_with_restarts\n", "'cosine_with_restarts' is not implemented by ppa", 1},
        {"num_train_epochs: 1.5\n", "num_train_epochs: cannot use '1.5': expected a whole number (ppa trains whole epochs", 1},
        {"save_strategy: epoch\n", "save_strategy epoch: ppa saves every save_steps steps", 1},
        {"evaluation_strategy: epoch\n", "evaluation_strategy epoch", 1},
        {"dataset_mixer:\n  a.jsonl: 0.5\n", "dataset_mixer: fraction 0.5 of 'a.jsonl': ppa uses the whole file", 2},
        {"dataset_mixer:\n  a.jsonl: 1.0\n  b.jsonl: 1.0\n", "dataset_mixer lists 2 datasets", 1},
        {"dataset_mixer: [a.jsonl]\n", "dataset_mixer: expected a mapping", 1},
        {"learning_rate: [1, 2]\n", "learning_rate: expected a single value, found a list", 1},
        {"learning_rate:\n", "learning_rate needs a value (found null)", 1},
        {"learning_rate: fast\n", "learning_rate: cannot use 'fast'", 1},
        {"verbose: \"true\"\n", "verbose: expected true or false, found the string 'true'", 1},
        {"sinkhorn: 1\n", "sinkhorn: expected true or false, found '1'", 1},
        {"tau: 0\n", "tau: tau must be > 0", 1},
        {"pairwise_type: best_with_worst\n", "pairwise_type needs loss_type in the same file", 1},
        {"loss_type: dpo\npairwise_type: top_two\n", "pairwise_type 'top_two' is not one of", 2},
        {"ablation_type: top-8\n", "ablation_type 'top-8' is not one of none, no_power, top-4, scale", 1},
        {"loss_type: simpo\npairwise_type: list_mle\n", "loss_type simpo with pairwise_type list_mle", 1},
        {"loss_type: robust\n", "loss_type 'robust' (trl) has no ppa objective", 1},
        {"loss_type: neural_ndgc\n", "unknown loss_type 'neural_ndgc' (did you mean 'neural_ndcg'?)", 1},
        {"per_device_train_batch_size: 0\n", "per_device_train_batch_size must be >= 1, found 0", 1},
        {"learning_rate: 0\n", "learning_rate must be > 0, found 0", 1},
        {"max_steps: -5\n", "max_steps must be >= 0", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_config(cases[i].text);
        st = parse(&o, "--config", "@C", MDO, NULL);
        char prefix[256];
        snprintf(prefix, sizeof prefix, "%s:%d: ", cfg, cases[i].line);
        CHECK(st == TRAIN_OPTIONS_ERROR && !strncmp(err, prefix, strlen(prefix)) && strstr(err, cases[i].what),
              "case %zu: '%s', want '%s...%s'", i, err, prefix, cases[i].what);
        train_options_free(&o);
    }
}

static void test_special_keys(void) {
    TrainOptions o;
    /* accepted checks: no note, no value */
    write_config("optim: adamw_torch_fused\nadam_beta1: 0.9\nadam_beta2: 0.999\nadam_epsilon: 1.0e-8\n"
                 "use_peft: false\nload_in_8bit: false\ntruncation_mode: keep_end\nwarmup_steps: 0\n"
                 "resume_from_checkpoint: null\nref_model: null\n");
    TrainOptionsStatus st = parse(&o, "--config", "@C", MDO, NULL);
    CHECK(st == TRAIN_OPTIONS_OK && o.n_notes == 0 && !o.resume && !o.ref, "checked keys: %s %s", err, captured);
    train_options_free(&o);
    /* max_steps -1 = from the epochs; resume folder; aliases of paths */
    write_config("max_steps: -1\nresume_from_checkpoint: ck/step-100\nref_model_name_or_path: refm\n"
                 "train_file: @D/data.jsonl\nvalidation_file: v.jsonl\neval_steps: 10\n");
    st = parse(&o, "--config", "@C", "--model", "m", "--out", "o", NULL);
    CHECK(st == TRAIN_OPTIONS_OK && o.max_steps == 0 && !strcmp(o.resume, "ck/step-100") && !strcmp(o.ref, "refm") &&
              !strcmp(o.eval_data, "v.jsonl") && o.eval_every == 10,
          "paths: %s", err);
    char want[256];
    snprintf(want, sizeof want, "%s/data.jsonl", dir);
    CHECK(st == TRAIN_OPTIONS_OK && !strcmp(o.data, want), "train_file");
    train_options_free(&o);
    /* transformers' ddp_timeout (seconds) sets the collective timeout, as ppa's own key does */
    write_config("ddp_timeout: 1800\n");
    st = parse(&o, "--config", "@C", MDO, NULL);
    snprintf(want, sizeof want, "%s:1 ddp_timeout", cfg);
    CHECK(st == TRAIN_OPTIONS_OK && o.collective_timeout == 1800 && o.n_notes == 0 &&
              !strcmp(origin(&o, TOPT_COLLECTIVE_TIMEOUT), want),
          "ddp_timeout: %s %s", err, captured);
    train_options_free(&o);
    write_config("collective_timeout: 0\n");
    st = parse(&o, "--config", "@C", MDO, NULL);
    ERROR_WITH(st, at_line(1), "collective_timeout must be in 1..604800 seconds");
    train_options_free(&o);
    /* use_peft: TRL's LoRA defaults, a list of targets; lora keys without it are noted and dropped */
    write_config("use_peft: true\nlora_target_modules:\n  - q_proj\n  - v_proj\n");
    st = parse(&o, "--config", "@C", MDO, NULL);
    CHECK(st == TRAIN_OPTIONS_OK && o.lora_r == 16 && o.lora_alpha == 32 && o.lora_dropout == 0.05 &&
              !strcmp(o.lora_targets, "q_proj,v_proj") && !strcmp(o.origin[TOPT_LORA_R].key, "use_peft"),
          "use_peft: r %d alpha %g dropout %g: %s", o.lora_r, o.lora_alpha, o.lora_dropout, err);
    train_options_free(&o);
    write_config("use_peft: true\nlora_r: 64\nlora_alpha: 128\nlora_dropout: 0.1\nuse_rslora: true\n");
    st = parse(&o, "--config", "@C", MDO, "--lora-r", "8", NULL);
    CHECK(st == TRAIN_OPTIONS_OK && o.lora_r == 8 && o.lora_alpha == 128 && o.lora_dropout == 0.1 && o.use_rslora,
          "recipe lora keys, --lora-r over lora_r: %s", err);
    train_options_free(&o);
    write_config("lora_r: 64\nlora_alpha: 128\n");
    st = parse(&o, "--config", "@C", MDO, NULL);
    CHECK(st == TRAIN_OPTIONS_OK && o.lora_r == 0 && o.lora_alpha == 32 &&
              has_note(&o, ":1: lora_r ignored: use_peft is not true") && has_note(&o, ":2: lora_alpha ignored"),
          "lora keys without use_peft: %s %s", err, captured);
    train_options_free(&o);
    st = parse(&o, MDO, "--lora-r", "4", "--adapter", "a", NULL);
    CHECK(st == TRAIN_OPTIONS_ERROR && strstr(err, "--lora-r: the adapter of --adapter a sets its own shape"),
          "--lora-r with --adapter: %s", err);
    train_options_free(&o);
    st = parse(&o, MDO, "--lora-alpha", "4", NULL);
    CHECK(st == TRAIN_OPTIONS_OK && has_note(&o, "--lora-alpha has no effect without an adapter"), "alpha alone: %s",
          captured);
    train_options_free(&o);
    /* transformers' constant has no warm-up */
    write_config("lr_scheduler_type: constant\nwarmup_ratio: 0.1\n");
    st = parse(&o, "--config", "@C", MDO, NULL);
    CHECK(st == TRAIN_OPTIONS_OK && o.schedule == SCHEDULE_CONSTANT && o.warmup_ratio == 0, "constant: %s", err);
    CHECK(has_note(&o, "lr_scheduler_type constant has no warm-up in transformers, so warmup_ratio 0.1 is not used"),
          "constant note: %s", captured);
    train_options_free(&o);
    st = parse(&o, "--config", "@C", MDO, "--warmup-ratio", "0.05", NULL);
    CHECK(st == TRAIN_OPTIONS_OK && o.warmup_ratio == 0.05 && o.n_notes == 0, "--warmup-ratio keeps the warm-up");
    train_options_free(&o);
    st = parse(&o, "--config", "@C", MDO, "--schedule", "cosine", NULL);
    CHECK(st == TRAIN_OPTIONS_OK && o.warmup_ratio == 0.1 && o.schedule == SCHEDULE_COSINE, "--schedule over constant");
    train_options_free(&o);
    write_config("lr_scheduler_type: constant_with_warmup\nwarmup_ratio: 0.1\n");
    st = parse(&o, "--config", "@C", MDO, NULL);
    CHECK(st == TRAIN_OPTIONS_OK && o.schedule == SCHEDULE_CONSTANT && o.warmup_ratio == 0.1, "constant_with_warmup");
    train_options_free(&o);
    write_config("lr_scheduler_type: linear\n");
    st = parse(&o, "--config", "@C", MDO, NULL);
    CHECK(st == TRAIN_OPTIONS_OK && o.schedule == SCHEDULE_LINEAR, "linear");
    train_options_free(&o);
    /* save and eval strategies */
    write_config("save_strategy: \"no\"\nsave_steps: 100\nevaluation_strategy: no\neval_steps: 200\n");
    st = parse(&o, "--config", "@C", MDO, NULL);
    CHECK(st == TRAIN_OPTIONS_OK && o.save_every == 0 && o.eval_every == 0, "strategies no: %s", err);
    CHECK(has_note(&o, ":2: save_steps 100 ignored: save_strategy is \"no\"") &&
              has_note(&o, ":4: eval_steps 200 ignored: evaluation_strategy is \"no\""),
          "strategy notes: %s", captured);
    train_options_free(&o);
    write_config("save_strategy: steps\n");
    st = parse(&o, "--config", "@C", MDO, NULL);
    CHECK(st == TRAIN_OPTIONS_OK && o.save_every == 500, "save_strategy steps alone: transformers' 500");
    train_options_free(&o);
    write_config("eval_steps: 50\n");
    st = parse(&o, "--config", "@C", MDO, NULL);
    CHECK(st == TRAIN_OPTIONS_OK && has_note(&o, "eval_steps 50 has no effect without eval_data"), "eval note");
    train_options_free(&o);
    /* ablations of the authors' NeuralNDCG */
    const struct {
        const char *value;
        int gain_linear, k, sinkhorn;
    } abl[] = {{"none", 0, 0, 1}, {"no_power", 1, 0, 1}, {"top-4", 0, 4, 1}, {"scale", 0, 0, 0}};
    for (int i = 0; i < 4; i++) {
        char text[64];
        snprintf(text, sizeof text, "ablation_type: %s\n", abl[i].value);
        write_config(text);
        st = parse(&o, "--config", "@C", MDO, NULL);
        CHECK(st == TRAIN_OPTIONS_OK && (o.loss.gain == PPA_GAIN_LINEAR) == abl[i].gain_linear &&
                  o.loss.k == abl[i].k && o.loss.sinkhorn == abl[i].sinkhorn,
              "ablation_type %s: %s", abl[i].value, err);
        train_options_free(&o);
    }
    write_config("ablation_type: scale\nsinkhorn: true\n");
    st = parse(&o, "--config", "@C", MDO, NULL);
    ERROR_WITH(st, at_line(1), "ablation_type sets the same option (sinkhorn) as sinkhorn on line 2");
    train_options_free(&o);
    /* ppa's own names as keys */
    write_config("objective: listmle\nnormalize: true\nbatch_size: 16\nmicro_batch: 4\nschedule: constant\n"
                 "clip_grad: 0.5\nsave_dtype: bf16\ntemplate: llama3\nthreads: 2\nskip_invalid: yes\n"
                 "reference_free: true\n");
    st = parse(&o, "--config", "@C", MDO, NULL);
    CHECK(st == TRAIN_OPTIONS_OK && o.objective == PPA_LISTMLE && o.loss.normalize && o.batch_size == 16 &&
              o.micro_batch == 4 && o.grad_accum == 4 && o.schedule == SCHEDULE_CONSTANT && o.warmup_ratio == 0.1 &&
              o.clip_grad == 0.5 && o.save_dtype == SAVE_BF16 && !strcmp(o.template_name, "llama3") &&
              o.threads == 2 && o.skip_invalid && o.reference_free,
          "ppa keys: %s", err);
    train_options_free(&o);
    /* pairwise_type that loss_type does not use: noted */
    write_config("loss_type: hinge\npairwise_type: best_with_worst\n");
    st = parse(&o, "--config", "@C", MDO, NULL);
    CHECK(st == TRAIN_OPTIONS_OK && o.objective == PPA_HINGE &&
              has_note(&o, ":2: pairwise_type best_with_worst ignored: loss_type hinge does not use it"),
          "pairwise_type note: %s", captured);
    train_options_free(&o);
    write_config("loss_type: simpo\npairwise_type: best_with_others\ngamma: 0.5\n");
    st = parse(&o, "--config", "@C", MDO, NULL);
    CHECK(st == TRAIN_OPTIONS_OK && o.objective == PPA_SIMPO && o.loss.pairs == PPA_PAIRS_BEST_OTHERS &&
              o.loss.gamma == 0.5 && o.n_notes == 0,
          "simpo pairs: %s", err);
    train_options_free(&o);
    st = parse(&o, "--config", "@C", MDO, "--pairs", "all_pairs", NULL);
    CHECK(st == TRAIN_OPTIONS_OK && o.loss.pairs == PPA_PAIRS_ALL, "--pairs over pairwise_type");
    train_options_free(&o);
}

static void test_loss_type_map(void) {
    const struct {
        const char *lt, *pt;
        PpaObjective obj;
        int pairs; /* -1: left alone */
        int used;
    } cases[] = {
        /* the authors' loss_type x pairwise_type */
        {"neural_ndcg", NULL, PPA_NEURAL_NDCG, -1, 0},
        {"approx_ndcg", NULL, PPA_APPROX_NDCG, -1, 0},
        {"lipo", NULL, PPA_LAMBDA, -1, 0},
        {"hinge", NULL, PPA_HINGE, -1, 0},
        {"hinge", "all_pairs", PPA_HINGE, -1, 0},
        {"dpo", NULL, PPA_DPO_ALL_PAIRS, -1, 0},
        {"dpo", "all_pairs", PPA_DPO_ALL_PAIRS, -1, 1},
        {"dpo", "best_with_others", PPA_DPO_BPR, -1, 1},
        {"dpo", "best_with_worst", PPA_DPO_SINGLE_PAIR, -1, 1},
        {"dpo", "others_vs_worst", PPA_DPO_OVW, -1, 1},
        {"dpo", "list_mle", PPA_LISTMLE, -1, 1},
        {"simpo", NULL, PPA_SIMPO, -1, 0},
        {"simpo", "all_pairs", PPA_SIMPO, PPA_PAIRS_ALL, 1},
        {"simpo", "best_with_worst", PPA_SIMPO, PPA_PAIRS_BEST_WORST, 1},
        {"simpo", "best_with_others", PPA_SIMPO, PPA_PAIRS_BEST_OTHERS, 1},
        {"simpo", "others_vs_worst", PPA_SIMPO, PPA_PAIRS_OTHERS_WORST, 1},
        /* trl */
        {"sigmoid", NULL, PPA_DPO_ALL_PAIRS, -1, 0},
        {"sigmoid", "best_with_worst", PPA_DPO_SINGLE_PAIR, -1, 1},
        {"ipo", NULL, PPA_IPO, -1, 0},
        {"ipo", "best_with_others", PPA_IPO, PPA_PAIRS_BEST_OTHERS, 1},
        /* the paper's and ppa's names */
        {"ppa", NULL, PPA_NEURAL_NDCG, -1, 0},
        {"lambda", NULL, PPA_LAMBDA, -1, 0},
        {"lambdarank", NULL, PPA_LAMBDA, -1, 0},
        {"ranknet", NULL, PPA_RANKNET, -1, 0},
        {"bpr", NULL, PPA_DPO_BPR, -1, 0},
        {"single_pair", NULL, PPA_DPO_SINGLE_PAIR, -1, 0},
        {"all_pairs", NULL, PPA_DPO_ALL_PAIRS, -1, 0},
        {"others_vs_worst", NULL, PPA_DPO_OVW, -1, 0},
        {"ovw", NULL, PPA_DPO_OVW, -1, 0},
        {"best_with_others", NULL, PPA_DPO_BPR, -1, 0},
        {"best_with_worst", NULL, PPA_DPO_SINGLE_PAIR, -1, 0},
        {"slic", NULL, PPA_HINGE, -1, 0},
        {"listmle", NULL, PPA_LISTMLE, -1, 0},
        {"list_mle", NULL, PPA_LISTMLE, -1, 0},
        {"dpo_pl", NULL, PPA_LISTMLE, -1, 0},
        {"listnet", NULL, PPA_LISTNET, -1, 0},
        {"bpr", "best_with_worst", PPA_DPO_BPR, -1, 0},
    };
    char msg[512];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        PpaObjective obj = PPA_N_OBJECTIVES;
        PpaPairs pairs = (PpaPairs)99;
        int used = -1;
        int r = train_loss_type_map(cases[i].lt, cases[i].pt, &obj, &pairs, &used, msg, sizeof msg);
        CHECK(r == 0 && obj == cases[i].obj && used == cases[i].used &&
                  (int)pairs == (cases[i].pairs < 0 ? 99 : cases[i].pairs),
              "loss_type %s + %s: r %d obj %d used %d pairs %d (%s)", cases[i].lt, cases[i].pt ? cases[i].pt : "-", r,
              obj, used, pairs, r ? msg : "");
    }
    /* every objective is reachable by its own name, through the config file too */
    for (int k = 0; k < PPA_N_OBJECTIVES; k++) {
        const char *name = ppa_objective_name((PpaObjective)k);
        PpaObjective obj;
        PpaPairs pairs = PPA_PAIRS_ALL;
        int used;
        CHECK(!train_loss_type_map(name, NULL, &obj, &pairs, &used, msg, sizeof msg) && obj == (PpaObjective)k,
              "loss_type %s", name);
        char text[128];
        snprintf(text, sizeof text, "loss_type: %s\n", name);
        write_config(text);
        TrainOptions o;
        TrainOptionsStatus st = parse(&o, "--config", "@C", MDO, NULL);
        CHECK(st == TRAIN_OPTIONS_OK && o.objective == (PpaObjective)k, "config loss_type %s: %s", name, err);
        train_options_free(&o);
    }
    const struct {
        const char *lt, *pt, *what;
    } bad[] = {
        {"simpo", "list_mle", "no ppa objective"},
        {"ipo", "list_mle", "no ppa objective"},
        {"kto_pair", NULL, "(trl) has no ppa objective"},
        {"orpo", NULL, "(trl) has no ppa objective"},
        {"dpo", "best", "pairwise_type 'best' is not one of"},
        {"lipoo", NULL, "did you mean 'lipo'?"},
        {"sigmod", NULL, "did you mean 'sigmoid'?"},
        {"xyzzy-frobnicate", NULL, "unknown loss_type 'xyzzy-frobnicate'; ppa has"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        PpaObjective obj;
        PpaPairs pairs;
        int used;
        int r = train_loss_type_map(bad[i].lt, bad[i].pt, &obj, &pairs, &used, msg, sizeof msg);
        CHECK(r == -1 && strstr(msg, bad[i].what), "loss_type %s: '%s', want '%s'", bad[i].lt, msg, bad[i].what);
    }
}

static void test_batch(void) {
    TrainOptions o;
    const struct {
        const char *b, *m, *a; /* command line values, NULL = not given */
        int B, M, A;
    } ok[] = {
        {NULL, NULL, NULL, 128, 1, 128}, {"64", NULL, NULL, 64, 1, 64},  {NULL, "4", NULL, 128, 4, 32},
        {NULL, NULL, "16", 16, 1, 16},   {"64", "4", NULL, 64, 4, 16},   {"64", NULL, "8", 64, 8, 8},
        {NULL, "2", "8", 16, 2, 8},      {"32", "4", "8", 32, 4, 8},     {NULL, "128", NULL, 128, 128, 1},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char *argv[16] = {"--model", "m", "--data", "d", "--out", "o"};
        int n = 6;
        if (ok[i].b) argv[n++] = "--batch-size", argv[n++] = (char *)ok[i].b;
        if (ok[i].m) argv[n++] = "--micro-batch", argv[n++] = (char *)ok[i].m;
        if (ok[i].a) argv[n++] = "--grad-accum", argv[n++] = (char *)ok[i].a;
        argv[n] = NULL;
        TrainOptionsStatus st = parse(&o, argv[0], argv[1], argv[2], argv[3], argv[4], argv[5], argv[6], argv[7],
                                      argv[8], argv[9], argv[10], argv[11], argv[12], NULL);
        CHECK(st == TRAIN_OPTIONS_OK && o.batch_size == ok[i].B && o.micro_batch == ok[i].M &&
                  o.grad_accum == ok[i].A,
              "batch case %zu: %s -> %d = %d x %d, want %d = %d x %d", i, err, o.batch_size, o.micro_batch,
              o.grad_accum, ok[i].B, ok[i].M, ok[i].A);
        train_options_free(&o);
    }
    /* inconsistent on the command line */
    TrainOptionsStatus st = parse(&o, MDO, "--batch-size", "100", "--micro-batch", "3", "--grad-accum", "32", NULL);
    ERROR_WITH(st, NULL, "--batch-size 100 is not --micro-batch 3 x --grad-accum 32 = 96");
    train_options_free(&o);
    st = parse(&o, MDO, "--batch-size", "100", "--micro-batch", "3", NULL);
    ERROR_WITH(st, NULL, "--batch-size 100 is not a multiple of --micro-batch 3");
    train_options_free(&o);
    st = parse(&o, MDO, "--grad-accum", "4", "--batch-size", "10", NULL);
    ERROR_WITH(st, NULL, "--batch-size 10 is not a multiple of --grad-accum 4");
    train_options_free(&o);
    st = parse(&o, MDO, "--micro-batch", "3", NULL);
    ERROR_WITH(st, NULL, "--micro-batch 3 does not divide the default batch size 128");
    train_options_free(&o);
    st = parse(&o, MDO, "--micro-batch", "0", NULL);
    ERROR_WITH(st, NULL, "--micro-batch must be >= 1, found 0");
    train_options_free(&o);
    st = parse(&o, MDO, "--batch-size", "-4", NULL);
    ERROR_WITH(st, NULL, "--batch-size must be >= 1, found -4");
    train_options_free(&o);

    /* inconsistent in the config */
    write_config("batch_size: 128\n"
                 "per_device_train_batch_size: 1\n"
                 "gradient_accumulation_steps: 32\n");
    st = parse(&o, "--config", "@C", MDO, NULL);
    ERROR_WITH(st, at_line(3),
               "batch_size 128 (line 1) is not per_device_train_batch_size 1 (line 2) x gradient_accumulation_steps 32 "
               "(line 3) = 32");
    train_options_free(&o);
    /* ... which a flag settles: --grad-accum replaces the config's, then batch_size 128 is taken and the
     * per-device batch 1, which no longer agrees, is dropped with a note */
    st = parse(&o, "--config", "@C", MDO, "--grad-accum", "64", NULL);
    CHECK(st == TRAIN_OPTIONS_OK && o.batch_size == 128 && o.micro_batch == 2 && o.grad_accum == 64,
          "--grad-accum 64 over the config: %d = %d x %d (%s)", o.batch_size, o.micro_batch, o.grad_accum, err);
    CHECK(has_note(&o, ":2: per_device_train_batch_size 1 not used"), "dropped note: %s", captured);
    train_options_free(&o);

    /* the handbook's per-device batch and accumulation, with the command line's batch size */
    write_config("per_device_train_batch_size: 1\n"
                 "gradient_accumulation_steps: 32\n");
    st = parse(&o, "--config", "@C", MDO, NULL);
    CHECK(st == TRAIN_OPTIONS_OK && o.batch_size == 32 && o.micro_batch == 1 && o.grad_accum == 32,
          "recipe batch 1 x 32");
    CHECK(has_note(&o, "the handbook also multiplies by the number of GPUs"), "GPU note");
    train_options_free(&o);
    st = parse(&o, "--batch-size", "128", "--config", "@C", MDO, NULL);
    CHECK(st == TRAIN_OPTIONS_OK && o.batch_size == 128 && o.micro_batch == 1 && o.grad_accum == 128,
          "--batch-size 128 over 1 x 32: %d = %d x %d (%s)", o.batch_size, o.micro_batch, o.grad_accum, err);
    char want[256];
    snprintf(want, sizeof want, "%s:2: gradient_accumulation_steps 32 not used: it contradicts the command line", cfg);
    CHECK(has_note(&o, want) && !has_note(&o, "GPUs"), "dropped-value note: %s", captured);
    CHECK(!strcmp(origin(&o, TOPT_GRAD_ACCUM), "derived") && !strcmp(origin(&o, TOPT_BATCH_SIZE), "--batch-size"),
          "origins after the drop");
    snprintf(want, sizeof want, "%s:1 per_device_train_batch_size", cfg);
    CHECK(!strcmp(origin(&o, TOPT_MICRO_BATCH), want), "micro-batch from the config: %s", origin(&o, TOPT_MICRO_BATCH));
    train_options_free(&o);
    st = parse(&o, "--config", "@C", MDO, "--micro-batch", "2", NULL);
    CHECK(st == TRAIN_OPTIONS_OK && o.batch_size == 64 && o.micro_batch == 2 && o.grad_accum == 32,
          "--micro-batch 2 with accumulation 32: %d = %d x %d", o.batch_size, o.micro_batch, o.grad_accum);
    train_options_free(&o);
    st = parse(&o, "--config", "@C", MDO, "--batch-size", "96", "--micro-batch", "3", NULL);
    CHECK(st == TRAIN_OPTIONS_OK && o.batch_size == 96 && o.micro_batch == 3 && o.grad_accum == 32 && o.n_notes == 0,
          "96 = 3 x 32 agrees with the config's 32: %d = %d x %d (%s)", o.batch_size, o.micro_batch, o.grad_accum,
          captured);
    train_options_free(&o);
    /* config batch size and micro-batch: the accumulation follows */
    write_config("batch_size: 128\nper_device_train_batch_size: 2\n");
    st = parse(&o, "--config", "@C", MDO, NULL);
    CHECK(st == TRAIN_OPTIONS_OK && o.batch_size == 128 && o.micro_batch == 2 && o.grad_accum == 64 && o.n_notes == 0,
          "config 128 / 2");
    train_options_free(&o);
    st = parse(&o, "--config", "@C", MDO, "--micro-batch", "3", NULL);
    ERROR_WITH(st, NULL, "--micro-batch 3 does not divide the default batch size"); /* config's 128 dropped: 128 % 3 */
    train_options_free(&o);
    write_config("per_device_train_batch_size: 3\n");
    st = parse(&o, "--config", "@C", MDO, NULL);
    ERROR_WITH(st, at_line(1), "per_device_train_batch_size 3 does not divide the default batch size 128");
    train_options_free(&o);
}

/* values whose arithmetic overflows are refused with the option and the
 * bound (options/check.c: beta x sharpness <= 1e20, lr <= 1e18, an
 * adapter's scale <= 1e20); the bounds themselves are accepted */
static void test_magnitudes(void) {
    TrainOptions o;
    const struct {
        OptCommand cmd;
        const char *a[6], *what;
    } bad[] = {
        {CMD_TRAIN, {"--beta", "1e300"}, "--beta 1e+300 is above 1e+20: beta scales the scores"},
        {CMD_TRAIN, {"--tau", "1e-300"}, "--tau 1e-300 is too small for beta 0.1 (the default): beta / tau above 1e+20 "
                                         "makes the gradient beta x dloss/ds overflow float32 in the backward; tau must "
                                         "be >= beta / 1e20 = 1e-21"},
        {CMD_TRAIN, {"--beta", "10", "--tau", "1e-20"}, "--tau 1e-20 is too small for --beta 10: "},
        {CMD_TRAIN, {"--lr", "1e30"}, "--lr 1e+30 is above 1e+18: one AdamW step moves a weight by about lr"},
        {CMD_TRAIN, {"--objective", "ipo", "--beta", "1e-30"}, "--beta 1e-30 is below 1e-20 for ipo"},
        {CMD_TRAIN, {"--objective", "approx_ndcg", "--alpha", "1e30"}, "--alpha 1e+30 is too large for beta 0.1 (the "
                                                                       "default): beta x alpha above 1e+20"},
        {CMD_TRAIN, {"--objective", "lambda", "--sigma", "1e22"}, "sigma must be <= 1e20 / beta = 1e+21"},
        {CMD_TRAIN, {"--lora-r", "4", "--lora-alpha", "1e30"}, "--lora-alpha 1e+30 with --lora-r 4: the adapter's scale "
                                                               "alpha / r = 2.5e+29 is above 1e+20"},
        {CMD_TRAIN, {"--lora-r", "4", "--use-rslora", "--lora-alpha", "1e21"}, "alpha / sqrt(r) = 5e+20"},
        {CMD_SFT, {"--lr", "1e30"}, "--lr 1e+30 is above 1e+18"},
        {CMD_REWARD, {"--objective", "neural_ndcg", "--tau", "1e-30"}, "--tau 1e-30 is below 1e-20, where the gradient"},
        {CMD_EVAL, {"--beta", "1e300"}, "--beta 1e+300 is above 1e+20"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        parse_cmd = bad[i].cmd;
        const char *const *a = bad[i].a;
        TrainOptionsStatus st = bad[i].cmd == CMD_EVAL ? parse(&o, "--model", "m", "--data", "d", "--ref", "r", a[0], a[1], NULL)
                                                      : parse(&o, MDO, a[0], a[1], a[2], a[3], a[4], NULL);
        CHECK(st == TRAIN_OPTIONS_ERROR && strstr(err, bad[i].what), "magnitude %zu: '%s', want '%s'", i, err, bad[i].what);
        train_options_free(&o);
    }
    parse_cmd = CMD_TRAIN;
    const char *good[][6] = {
        {"--beta", "1e20"}, {"--tau", "1e-21"}, {"--lr", "1e18"}, {"--objective", "ipo", "--beta", "1e-20"},
        {"--objective", "lambda", "--sigma", "1e21"}, {"--lora-r", "1", "--lora-alpha", "1e20"}, {"--lora-r", "16", "--lora-alpha", "1e21"} /* scale 6.25e19 */,
        {"--objective", "dpo", "--tau", "1e-300"}, /* tau is not dpo's: a note, not an error */
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        TrainOptionsStatus st = parse(&o, MDO, good[i][0], good[i][1], good[i][2], good[i][3], NULL);
        CHECK(st == TRAIN_OPTIONS_OK, "at the bound %zu (%s %s %s %s): %s", i, good[i][0], good[i][1],
              good[i][2] ? good[i][2] : "", good[i][3] ? good[i][3] : "", err);
        train_options_free(&o);
    }
    write_config("beta: 1.0e300\n");
    TrainOptionsStatus st = parse(&o, "--config", "@C", MDO, NULL);
    ERROR_WITH(st, at_line(1), "beta 1e+300 is above 1e+20");
    train_options_free(&o);
    write_config("learning_rate: 1.0e30\n");
    st = parse(&o, "--config", "@C", MDO, NULL);
    ERROR_WITH(st, at_line(1), "learning_rate 1e+30 is above 1e+18");
    train_options_free(&o);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/ppa_test_train_options_XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char path[256];
    snprintf(path, sizeof path, "%s/model", dir);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/data.jsonl", dir);
    FILE *f = fopen(path, "w");
    fclose(f);
    snprintf(cfg, sizeof cfg, "%s/cfg.yaml", dir);

    test_defaults();
    test_cli_only();
    test_config_only();
    test_cli_overrides_config();
    test_unknown_keys();
    test_special_keys();
    test_loss_type_map();
    test_batch();
    test_magnitudes();

    unlink(cfg);
    unlink(path);
    snprintf(path, sizeof path, "%s/model", dir);
    rmdir(path);
    rmdir(dir);
    return check_report("test_train_options");
}
