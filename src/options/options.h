/* options.h: the options of the model commands (train, sft, score, eval,
 * logprobs, grad, generate): one declarative table (options/table.c) says for
 * every option its name (also its recipe key), flag, type, field, help line
 * and which commands take it, so an option is added once and every command
 * that takes it gets the flag, the --help line, the recipe key and the
 * origins record together. `ppa train` takes nearly all of them, so the
 * struct keeps its name TrainOptions.
 *
 * Precedence: command line > --config file (train only) > defaults, whatever
 * the order of the arguments (--config is read first, then every other flag
 * is applied on top). Every value remembers where it came from (TrainOrigin),
 * and train_options_print_json shows it.
 *
 * Defaults are the paper's configuration where there is one (shared/paper/
 * ppa.tex "Training Details" and table tab_train_hyper; objectives.md §5):
 * beta 0.1, tau 1, lr 5e-7, cosine with warm-up ratio 0.1, 128 lists per
 * optimizer step, one epoch, list size 8, seed 42, weight decay 0, gradient
 * clipping at norm 1.0, max length 1024 / prompt 512. `ppa sft` starts from
 * its own (options_default).
 *
 * Batch semantics: batch_size (lists per optimizer step) = micro_batch
 * (lists per forward/backward) x grad_accum (micro-batches per step). Any
 * two determine the third: see train_options_parse for how values from the
 * two sources and the defaults combine.
 *
 * The config file: keys that map to a ppa option (the handbook / transformers
 * / trl names, and ppa's own option names with '_' for '-') are used; a
 * fixed list of handbook and Trainer keys with no meaning for ppa are
 * accepted with one note each on stderr saying why they are ignored; keys
 * whose value ppa would have to honour but cannot (use_peft: true, optim:
 * sgd, ...) and every unknown key are errors naming FILE:LINE, with a
 * did-you-mean suggestion for unknown keys. train_options_help (for
 * `ppa train --help`) lists all of it. */
#ifndef PPA_TRAIN_OPTIONS_H
#define PPA_TRAIN_OPTIONS_H

#include <stdio.h>

#include "optim/optim.h"
#include "ppa/losses.h"

/* Every option, in the order of the JSON output. The objective options
 * (TOPT_TAU ...) live in TrainOptions.loss. */
typedef enum {
    TOPT_MODEL,
    TOPT_DATA,
    TOPT_OUT,
    TOPT_OBJECTIVE,
    TOPT_BETA,
    TOPT_LIST_SIZE,
    TOPT_EPOCHS,
    TOPT_MAX_STEPS,
    TOPT_LR,
    TOPT_BATCH_SIZE,
    TOPT_MICRO_BATCH,
    TOPT_GRAD_ACCUM,
    TOPT_WARMUP_RATIO,
    TOPT_SCHEDULE,
    TOPT_WEIGHT_DECAY,
    TOPT_CLIP_GRAD,
    TOPT_SEED,
    TOPT_MAX_LENGTH,
    TOPT_MAX_PROMPT_LENGTH,
    TOPT_TEMPLATE,
    TOPT_SPECIAL_TOKENS_IN_TEXT,
    TOPT_SKIP_INVALID,
    TOPT_REFERENCE_FREE,
    TOPT_REF,
    TOPT_REF_CACHE,
    TOPT_SAVE_EVERY,
    TOPT_RESUME,
    TOPT_SAVE_DTYPE,
    TOPT_PRECISION,
    TOPT_DEVICE,
    TOPT_BATCH_TOKENS,
    TOPT_GRADIENT_CHECKPOINTING,
    TOPT_LOW_MEMORY,
    TOPT_LORA_R,
    TOPT_LORA_ALPHA,
    TOPT_LORA_DROPOUT,
    TOPT_LORA_TARGETS,
    TOPT_USE_RSLORA,
    TOPT_ADAPTER,
    TOPT_ZERO,
    TOPT_COLLECTIVE_TIMEOUT,
    TOPT_LOG,
    TOPT_LOG_LAMBDAS,
    TOPT_REPORT_TO,
    TOPT_EVAL_DATA,
    TOPT_EVAL_EVERY,
    TOPT_THREADS,
    TOPT_MAX_LINE_BYTES,
    TOPT_VERBOSE,
    TOPT_TAU,
    TOPT_ALPHA,
    TOPT_K,
    TOPT_GAIN,
    TOPT_DISCOUNT,
    TOPT_SINKHORN,
    TOPT_SINKHORN_ITERS,
    TOPT_SINKHORN_TOL,
    TOPT_TIES,
    TOPT_PAIRS,
    TOPT_SIGMA,
    TOPT_LABEL_SMOOTHING,
    TOPT_GAMMA,
    TOPT_NORMALIZE,
    /* options of other commands than train (never in train_options.json) */
    TOPT_STRICT,
    TOPT_ASSISTANT_ONLY_LOSS,
    TOPT_PROMPTS,
    TOPT_MAX_NEW_TOKENS,
    TOPT_TEMPERATURE,
    TOPT_TOP_P,
    TOPT_N,
    TOPT_TOP_K,
    TOPT_STOP,
    TOPT_SAMPLER,
    TOPT_MAX_SEQS,
    TOPT_FORMAT,
    TOPT_GENERATOR,
    TOPT_REWARD_INDEX,
    TOPT_JUDGE,
    TOPT_RAW,
    TOPT_NPM_CACHE,
    TOPT_REWARD_MODEL,
    TOPT_PAIR_MODEL,
    TOPT_PAIR_TEMPLATE,
    TOPT_A,
    TOPT_B,
    TOPT_SKIP_UNMATCHED,
    TOPT_PER_PROMPT,
    TOPT_COUNT
} TrainOptId;

/* The commands that share the table; an option's `cmds` is a mask of them. */
typedef enum {
    CMD_TRAIN = 1u << 0,
    CMD_SFT = 1u << 1,
    CMD_SCORE = 1u << 2,
    CMD_EVAL = 1u << 3,
    CMD_LOGPROBS = 1u << 4,
    CMD_GRAD = 1u << 5,
    CMD_GENERATE = 1u << 6,
    CMD_REWARD = 1u << 7,  /* ppa reward: train's loop on a reward model's scores */
    CMD_JUDGE = 1u << 8,
    CMD_WINRATE = 1u << 9,
} OptCommand;

typedef enum {
    TRAIN_FROM_DEFAULT,
    TRAIN_FROM_CONFIG,  /* the --config file: line and key as written */
    TRAIN_FROM_CLI,     /* the command line */
    TRAIN_FROM_DERIVED, /* computed from other options (grad_accum from batch / micro, ...) */
} TrainSource;

typedef struct {
    TrainSource from;
    int line;        /* TRAIN_FROM_CONFIG: line of the key */
    const char *key; /* TRAIN_FROM_CONFIG: the key as written (static string) */
} TrainOrigin;

typedef enum { SAVE_F32, SAVE_BF16 } SaveDtype;

/* the values of a repeatable option, in the order given (each owned) */
typedef struct {
    char **v;
    int n;
} OptStrings;
typedef enum { DEVICE_AUTO, DEVICE_CPU, DEVICE_CUDA } DeviceChoice;

typedef struct {
    /* files; every string is owned (train_options_free); NULL = not given */
    char *model;     /* --model DIR: the policy's initial weights (a Hugging Face folder); required */
    char *data;      /* --data FILE.jsonl: training lists (formats.md §a); required */
    char *out;       /* --out DIR: the trained model folder; required */
    char *ref;       /* --ref DIR: reference model; NULL = the initial policy (--model) */
    char *ref_cache; /* --ref-cache FILE: reference log-probs, written once and reused */
    char *resume;    /* --resume DIR: a checkpoint folder to continue from */
    char *log;       /* --log FILE: JSON Lines metrics, one line per step */
    char *eval_data; /* --eval-data FILE.jsonl: held-out lists */
    char *template_name; /* --template NAME (chatml, llama3, mistral, zephyr, llama2, none); NULL = detect */
    char *config;    /* --config FILE.yaml; NULL = none */

    /* objective */
    PpaObjective objective; /* neural_ndcg (PPA, the paper's method; A's default loss_type) */
    PpaLossOptions loss;    /* objective options (ppa_loss_options_default; loss.beta follows beta) */
    double beta;            /* implicit-reward beta, 0.1 (paper, Qwen2-0.5B main results; objectives.md §5) */
    int list_size;          /* responses per list K, 8 (paper; NDCGConfig list_size) */
    int reference_free;     /* s = beta log pi (no reference model); off */

    /* optimisation */
    int epochs;             /* 1 (paper tab_train_hyper) */
    long max_steps;         /* optimizer steps; 0 = as many as the epochs give (else it wins, as in transformers) */
    double lr;              /* peak learning rate, 5e-7 (paper "Training Details") */
    int batch_size;         /* lists per optimizer step, 128 (paper: "total batch size of 128") */
    int micro_batch;        /* lists per forward/backward, 1 (the paper's per-device batch) */
    int grad_accum;         /* micro-batches per optimizer step = batch_size / micro_batch */
    double warmup_ratio;    /* share of the steps with linear warm-up, 0.1 (paper) */
    Schedule schedule;      /* cosine (paper) */
    double weight_decay;    /* AdamW decoupled decay, 0 (transformers' default, A's configs) */
    double clip_grad;       /* global L2 gradient-norm clip, 1.0 (max_grad_norm default); 0 = off */
    unsigned long long seed; /* 42 (paper) */
    int max_length;         /* prompt + response tokens, 1024 (paper) */
    int max_prompt_length;  /* prompt tokens, 512 (paper); responses get max_length - this */

    /* data, checkpoints, logging */
    int special_tokens_in_text; /* special-token strings in message text become control tokens (HF default); off */
    int skip_invalid;       /* report and skip malformed rows instead of stopping */
    int assistant_only_loss; /* sft: every assistant turn of a "messages" row is a target (TRL's name); off: the last */
    long save_every;        /* checkpoint every N optimizer steps; 0 = only the final model */
    SaveDtype save_dtype;   /* f32 */
    int bf16;               /* --precision bf16: bf16 products, float32 master weights (kernels/matmul.h) */
    long batch_tokens;      /* tokens per forward batch when scoring; 0: 4096 on the CPU, 32768 on a GPU */
    int device;             /* --device: DEVICE_AUTO (the GPU where the command runs there, else the CPU), _CPU, _CUDA */
    int gradient_checkpointing; /* keep each layer's input only, recompute in the backward */
    int low_memory;             /* hand dead buffers back to the system within each step */
    int lora_r;             /* LoRA rank; 0 = no adapter (model/lora.h); use_peft: true in a recipe gives 16 */
    double lora_alpha;      /* 32 (TRL's ModelConfig) */
    double lora_dropout;    /* 0 (a recipe's use_peft: true gives TRL's 0.05) */
    char *lora_targets;     /* "all-linear" (NULL) or a comma list of q_proj ... down_proj */
    int use_rslora;         /* s = alpha / sqrt(r) */
    char *adapter;          /* --adapter DIR: a PEFT LoRA folder on --model */
    int use_peft;           /* a recipe's use_peft: true (its lora_* keys count only then, as in TRL) */
    int zero;               /* ZeRO stage: 0; 1 (AdamW state sharded over the MPI ranks); 2 (gradients too, GPU) */
    long collective_timeout; /* seconds an MPI collective waits for the ranks before it aborts the job, 600
                              * (PyTorch's process groups' 10 minutes; src/dist) */
    int log_lambdas;        /* log the per-response d loss / d s of every list */
    char *report_to;        /* --report-to LIST: none, tensorboard, wandb (options_report_to); NULL = none */
    long eval_every;        /* evaluate every N steps; 0 = only at the end (with eval_data) */
    int threads;            /* compute threads; 0 = all cores */
    long max_line_bytes;    /* longest JSON Lines line read, 256 MiB (io/jsonl.h) */
    int verbose;

    /* other commands */
    int strict;             /* logprobs, grad: refuse responses whose first token merges with the prompt */
    char *prompts;          /* generate: --prompts FILE.jsonl */
    int max_new_tokens;     /* generate: new tokens per response, 128 */
    double temperature;     /* generate: 0 = greedy */
    double top_p;           /* generate: nucleus mass, 1 */
    int n_samples;          /* generate: responses per prompt, 1 */
    int top_k;              /* generate: keep the k likeliest tokens before top-p; 0 = off */
    OptStrings stop;        /* generate: --stop STRING, repeatable: texts that end a response */
    char *sampler;          /* generate: device | exact, NULL: device with --device cuda, exact on the CPU */
    int max_seqs;           /* generate: sequences decoded at once (0: as many as fit) */
    char *format;           /* generate: auto (NULL) | jsonl | alpaca_eval | mt_bench: the output's format */
    char *generator;        /* generate: the model's name in AlpacaEval and MT-Bench files; NULL = from --model */
    int reward_index;       /* reward, judge, winrate: the reward head's output used, 0 */
    char *judge;            /* judge, winrate: afinn | vader | reward-model | pair-model */
    int raw;                /* judge: the lexicon's own numbers */
    char *npm_cache;        /* judge, winrate: the word lists' folder; NULL = cache/npm */
    char *reward_model;     /* judge, winrate: --reward-model DIR */
    char *pair_model;       /* judge, winrate: --pair-model DIR */
    char *pair_template;    /* judge, winrate: --pair-template FILE */
    char *a, *b;            /* winrate: the two sets of responses */
    int skip_unmatched;     /* winrate: prompts of one file only are counted, not an error */
    int per_prompt;         /* winrate: write each prompt's mean outcome */

    OptCommand cmd;         /* the command these options are for */
    TrainOrigin origin[TOPT_COUNT];
    char **notes; /* [n_notes] the notes printed to stderr while parsing */
    int n_notes;
} TrainOptions;

typedef enum {
    TRAIN_OPTIONS_OK = 0,
    TRAIN_OPTIONS_HELP,            /* --help: train_options_help(stdout), exit 0 */
    TRAIN_OPTIONS_LIST_OBJECTIVES, /* --list-objectives: print the objective names, exit 0 */
    TRAIN_OPTIONS_ERROR,           /* message in err; exit status 2 */
} TrainOptionsStatus;

/* The defaults above (no strings set, every origin TRAIN_FROM_DEFAULT). */
void train_options_default(TrainOptions *o);
/* The defaults of one command (sft: lr 1e-4, 8 rows per step, no warm-up). */
void options_default(OptCommand cmd, TrainOptions *o);

/* Parses the arguments of any command of the table as train_options_parse
 * does for train: only the options the command takes are flags, --config
 * is train's alone, and the options the table marks required for the
 * command must be given. */
TrainOptionsStatus options_parse(OptCommand cmd, int argc, char **argv, TrainOptions *o, char *err, size_t errlen);

/* Refuses, before any work, an output of the command (--out, --log, the
 * reference cache, a shell redirection of standard output) that resolves to
 * one of its inputs (io/paths.h); 0, or -1 with both options named in err. */
int options_check_paths(const TrainOptions *o, char *err, size_t errlen);

/* The services of a --report-to list (transformers' report_to: a comma list of none, all, tensorboard, wandb; all
 * is tensorboard and wandb, the two ppa knows): REPORT_* bits. transformers' other integrations (mlflow, comet_ml,
 * ...) are named in *ignored (comma-separated, "" when none); any other name is -1 with a message in err. */
enum { REPORT_TENSORBOARD = 1, REPORT_WANDB = 2 };
int options_report_to(const char *list, char *ignored, size_t ignoredlen, char *err, size_t errlen);

/* A Markdown list of the options that shape the trained model (the objective and the options it uses, the
 * optimisation, an adapter's shape), "- name: value", for a model card (cli/model_card.h). */
void options_print_markdown(const TrainOptions *o, FILE *f);

/* 1 if the command takes the option. */
int options_takes(OptCommand cmd, TrainOptId id);

/* The command's name ("score"), for messages. */
const char *options_command_name(OptCommand cmd);

/* The options part of a command's --help: one line per option it takes,
 * with its default (and for train its recipe keys). */
void options_help(OptCommand cmd, FILE *f);

/* Parses `ppa train` arguments (argv[0] is the command name and is skipped):
 * defaults, then the --config file, then the other flags; then combines the
 * batch options, validates everything, and prints one note per ignored
 * config key (and other remarks) to stderr as "ppa: note: ...", also kept in
 * o->notes. On TRAIN_OPTIONS_ERROR, err holds one message ("FILE:LINE: ..."
 * for the config file, "--flag: ..." for the command line) and o must still
 * be freed. argv is not reordered.
 *
 * Batch options: the values given, from the command line first, then from
 * the config file (in the order batch size, micro-batch, grad-accum), then
 * the defaults micro-batch 1 and batch size 128, are taken one by one while
 * they agree with batch = micro x accum; once two are known the third
 * follows. Values from one source that contradict each other are an error
 * (all three given with batch != micro x accum, or a batch size that is not
 * a multiple of the micro-batch or grad-accum); a config value that
 * contradicts the command line is dropped with a note. As everywhere, a
 * flag first replaces the config's value of the same option, so the config
 * is checked only for the values the command line leaves it. A micro-batch
 * given alone must divide the default batch size 128. Examples: nothing ->
 * 128 = 1 x 128; --micro-batch 4 -> 128 = 4 x 32; --grad-accum 16 -> 16 =
 * 1 x 16; the handbook's per_device_train_batch_size 1 and
 * gradient_accumulation_steps 32 -> 32 = 1 x 32 (with a note that the
 * handbook also multiplies by the GPU count), and with --batch-size 128 ->
 * 128 = 1 x 128 (the config's 32 dropped with a note). */
TrainOptionsStatus train_options_parse(int argc, char **argv, TrainOptions *o, char *err, size_t errlen);

void train_options_free(TrainOptions *o);

/* The option's ppa name ("max_prompt_length"); the flag is "--" with '-'. */
const char *train_option_name(TrainOptId id);

/* Where a value came from, as text: "default", "--lr", "recipe.yaml:29
 * learning_rate", "derived". buf must hold at least 64 bytes + the path. */
const char *train_option_origin(const TrainOptions *o, TrainOptId id, char *buf, size_t len);

/* One JSON object on one line: every resolved option under its ppa name,
 * "from": {name: origin, ...} for the values that are not defaults, and
 * "notes": [...]. For the header of a run's log. */
void train_options_print_json(const TrainOptions *o, FILE *f);

/* Maps a loss_type of the authors' trainer (neural_ndcg, approx_ndcg, lipo,
 * dpo, simpo, hinge), of trl (sigmoid, hinge, ipo) or a paper / ppa name
 * (ppa, lambda, bpr, single_pair, all_pairs, others_vs_worst, slic,
 * listmle, ...) together with the authors' pairwise_type (all_pairs,
 * best_with_others, best_with_worst, list_mle, and ppa's others_vs_worst;
 * NULL = all_pairs) to an objective, and for simpo / ipo to a pairing
 * scheme (*pairs, left alone otherwise). *pairwise_used tells whether
 * pairwise_type mattered. Returns 0, or -1 with a message in err. */
int train_loss_type_map(const char *loss_type, const char *pairwise_type, PpaObjective *obj, PpaPairs *pairs,
                        int *pairwise_used, char *err, size_t errlen);

/* The help of `ppa train`: every flag with its default and config-file
 * names, the objective options, the batch rule, and the config keys that
 * are used, checked or ignored (with the reason). */
void train_options_help(FILE *f);

#endif
