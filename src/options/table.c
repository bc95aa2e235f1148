/* table.c: the one table of the model commands' options (name,
 * flag, type, field, which commands take it, help), their defaults per
 * command, and the text of their values. options.h has the rules. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "core/text.h"
#include "io/jsonl.h"
#include "losses/objective_opts.h"
#include "options/internal.h"

#define TRAINING (CMD_TRAIN | CMD_SFT | CMD_REWARD)
#define LISTS (CMD_TRAIN | CMD_REWARD) /* training on lists: checkpoints, resume, held-out lists */
#define DATA_CMDS (CMD_TRAIN | CMD_SFT | CMD_SCORE | CMD_EVAL | CMD_LOGPROBS | CMD_GRAD | CMD_REWARD)
#define MODEL_CMDS (DATA_CMDS | CMD_GENERATE)
#define JUDGES (CMD_JUDGE | CMD_WINRATE)
#define ANY_MODEL (MODEL_CMDS | JUDGES) /* every command that may run a model */
#define LOSS_CMDS (CMD_TRAIN | CMD_GRAD | CMD_REWARD)
#define RANKS (TRAINING | CMD_SCORE | CMD_EVAL | CMD_LOGPROBS | CMD_GENERATE | CMD_JUDGE) /* divide their work among
                                                                                      MPI ranks (cli/main.c) */
#define SCORING (CMD_LOGPROBS | CMD_SCORE | CMD_EVAL | CMD_JUDGE | LISTS) /* a forward without a backward */
#define LORA_CMDS (CMD_TRAIN | CMD_SFT | CMD_GRAD) /* a new adapter: the commands that differentiate a causal LM */

const char *const GAIN_NAMES[2] = {"pow2", "linear"};
const char *const DISCOUNT_NAMES[4] = {"log2", "inv", "inv_sqrt", "inv_sq"};
const char *const TIES_NAMES[2] = {"exclude", "include"};
const char *const PAIRS_NAMES[4] = {"all_pairs", "best_with_worst", "best_with_others", "others_vs_worst"};
const char *const SCHEDULE_NAMES[3] = {"cosine", "linear", "constant"};

/* F: an option with a field; L: an objective option (flag and help from losses/objective_opts.c) */
#define F(id, name, flag, type, field, cmds, req, sec, mv, help)                                                    \
    [id] = {name, flag, type, offsetof(TrainOptions, field), cmds, req, sec, mv, help, NULL, 0}
#define L(id, name, flag, cmds) [id] = {name, flag, T_LOSS, 0, cmds, 0, S_OBJECTIVE, NULL, NULL, NULL, 0}
const OptSpec OPT[TOPT_COUNT] = {
    F(TOPT_MODEL, "model", "model", T_STR, model, MODEL_CMDS, MODEL_CMDS, S_IO, "DIR", "the model, a Hugging Face folder"),
    F(TOPT_DATA, "data", "data", T_STR, data, DATA_CMDS | CMD_JUDGE, DATA_CMDS | CMD_JUDGE, S_IO, "FILE.jsonl",
      "rows: responses with scores, or ranks (1 = best, ties 1, 2, 2, 4)"),
    F(TOPT_OUT, "out", "out", T_STR, out, TRAINING | CMD_SCORE | CMD_GRAD | CMD_GENERATE | JUDGES,
      TRAINING | CMD_SCORE | CMD_GRAD, S_IO, "DIR", "the trained model folder"),
    F(TOPT_OBJECTIVE, "objective", "objective", T_OBJECTIVE, objective, LOSS_CMDS, CMD_GRAD, S_OBJECTIVE, "NAME", NULL),
    F(TOPT_BETA, "beta", "beta", T_DOUBLE, beta, CMD_TRAIN | CMD_GRAD | CMD_EVAL, CMD_GRAD, S_OBJECTIVE, "B",
      "implicit-reward beta, also ipo's"),
    F(TOPT_LIST_SIZE, "list_size", "list-size", T_INT, list_size, LISTS, 0, S_OBJECTIVE, "K", "responses per list"),
    F(TOPT_EPOCHS, "epochs", "epochs", T_INT, epochs, TRAINING, 0, S_OPTIM, "N", "passes over the data"),
    F(TOPT_MAX_STEPS, "max_steps", "max-steps", T_LONG, max_steps, TRAINING, 0, S_OPTIM, "N",
      "optimizer steps; 0: from the epochs"),
    F(TOPT_LR, "lr", "lr", T_DOUBLE, lr, TRAINING, 0, S_OPTIM, "X", "peak learning rate"),
    F(TOPT_BATCH_SIZE, "batch_size", "batch-size", T_INT, batch_size, TRAINING, 0, S_OPTIM, "N",
      "lists per optimizer step"),
    F(TOPT_MICRO_BATCH, "micro_batch", "micro-batch", T_INT, micro_batch, TRAINING, 0, S_OPTIM, "N",
      "lists per forward/backward"),
    F(TOPT_GRAD_ACCUM, "grad_accum", "grad-accum", T_INT, grad_accum, TRAINING, 0, S_OPTIM, "N",
      "micro-batches per step (batch / micro)"),
    F(TOPT_WARMUP_RATIO, "warmup_ratio", "warmup-ratio", T_DOUBLE, warmup_ratio, TRAINING, 0, S_OPTIM, "X",
      "share of the steps warming up linearly"),
    F(TOPT_SCHEDULE, "schedule", "schedule", T_SCHEDULE, schedule, TRAINING, 0, S_OPTIM, "S",
      "cosine | linear | constant"),
    F(TOPT_WEIGHT_DECAY, "weight_decay", "weight-decay", T_DOUBLE, weight_decay, TRAINING, 0, S_OPTIM, "X",
      "AdamW decoupled decay, matrices only"),
    F(TOPT_CLIP_GRAD, "clip_grad", "clip-grad", T_DOUBLE, clip_grad, TRAINING, 0, S_OPTIM, "X",
      "global L2 gradient-norm clip, 0: off"),
    F(TOPT_SEED, "seed", "seed", T_U64, seed, TRAINING | CMD_GENERATE, 0, S_OPTIM, "N",
      "seed of the data order and list draws"),
    F(TOPT_MAX_LENGTH, "max_length", "max-length", T_INT, max_length, TRAINING | CMD_SCORE | CMD_EVAL, 0, S_IO, "N",
      "prompt + response tokens"),
    F(TOPT_MAX_PROMPT_LENGTH, "max_prompt_length", "max-prompt-length", T_INT, max_prompt_length,
      LISTS | CMD_SCORE | CMD_EVAL, 0, S_IO, "N", "prompt tokens; responses get the rest"),
    F(TOPT_TEMPLATE, "template", "template", T_STR, template_name, ANY_MODEL, 0, S_IO, "NAME",
      "chatml | llama3 | mistral | zephyr | llama2 | none (default: the model's own)"),
    F(TOPT_SPECIAL_TOKENS_IN_TEXT, "special_tokens_in_text", "special-tokens-in-text", T_BOOL, special_tokens_in_text,
      ANY_MODEL, 0, S_IO, NULL,
      "special-token strings in prompts and responses become control tokens (Hugging Face's default); "
      "without it they stay text"),
    F(TOPT_SKIP_INVALID, "skip_invalid", "skip-invalid", T_BOOL, skip_invalid, ANY_MODEL, 0, S_IO, NULL,
      "report and skip malformed rows"),
    F(TOPT_REFERENCE_FREE, "reference_free", "reference-free", T_BOOL, reference_free, CMD_TRAIN, 0, S_IO, NULL,
      "s = beta log pi, no reference model"),
    F(TOPT_REF, "ref", "ref", T_STR, ref, CMD_TRAIN | CMD_GRAD | CMD_EVAL, CMD_EVAL, S_IO, "DIR",
      "reference model (default: the initial --model)"),
    F(TOPT_REF_CACHE, "ref_cache", "ref-cache", T_STR, ref_cache, CMD_TRAIN | CMD_EVAL, 0, S_IO, "FILE",
      "reference log-probs, written once and reused"),
    F(TOPT_SAVE_EVERY, "save_every", "save-every", T_LONG, save_every, LISTS, 0, S_RUN, "N",
      "checkpoint every N steps, 0: the final model only"),
    F(TOPT_RESUME, "resume", "resume", T_STR, resume, LISTS, 0, S_RUN, "DIR", "continue from a checkpoint"),
    F(TOPT_SAVE_DTYPE, "save_dtype", "save-dtype", T_DTYPE, save_dtype, TRAINING, 0, S_RUN, "D",
      "f32 | bf16: the dtype of the written model"),
    F(TOPT_DEVICE, "device", "device", T_DEVICE, device, ANY_MODEL, 0, S_RUN, "D",
      "auto | cpu | cuda: where the command computes (auto: the GPU where the command runs there, else the CPU)"),
    F(TOPT_BATCH_TOKENS, "batch_tokens", "batch-tokens", T_LONG, batch_tokens, SCORING, 0, S_RUN, "N",
      "tokens (prompts once) per forward batch when scoring; 0: 4096 on the CPU, 32768 on a GPU"),
    F(TOPT_PRECISION, "precision", "precision", T_PRECISION, bf16, ANY_MODEL, 0, S_RUN, "P",
      "fp32 | bf16: matrix products in bf16, sums and the rest in float32"),
    F(TOPT_GRADIENT_CHECKPOINTING, "gradient_checkpointing", "gradient-checkpointing", T_BOOL, gradient_checkpointing,
      TRAINING | CMD_GRAD, 0, S_RUN, NULL, "keep each layer's input only; recompute it in the backward"),
    F(TOPT_LOW_MEMORY, "low_memory", "low-memory", T_BOOL, low_memory, TRAINING | CMD_GRAD, 0, S_RUN, NULL,
      "no gradients in the forward, activations freed layer by layer: a lower peak, page faults every step"),
    F(TOPT_LORA_R, "lora_r", "lora-r", T_INT, lora_r, LORA_CMDS, 0, S_LORA, "R",
      "train a LoRA adapter of rank R on the frozen --model (0: every parameter)"),
    F(TOPT_LORA_ALPHA, "lora_alpha", "lora-alpha", T_DOUBLE, lora_alpha, LORA_CMDS, 0, S_LORA, "A",
      "the adapter's scale is A / R"),
    F(TOPT_LORA_DROPOUT, "lora_dropout", "lora-dropout", T_DOUBLE, lora_dropout, LORA_CMDS, 0, S_LORA, "P",
      "dropout on the adapter's input in training, seeded"),
    F(TOPT_LORA_TARGETS, "lora_targets", "lora-targets", T_STR, lora_targets, LORA_CMDS, 0, S_LORA, "LIST",
      "all-linear, or a comma list of q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj"),
    F(TOPT_USE_RSLORA, "use_rslora", "use-rslora", T_BOOL, use_rslora, LORA_CMDS, 0, S_LORA, NULL,
      "scale A / sqrt(R) (rank-stabilised LoRA)"),
    F(TOPT_ADAPTER, "adapter", "adapter", T_STR, adapter, MODEL_CMDS | JUDGES, 0, S_LORA, "DIR",
      "a PEFT LoRA adapter folder on --model (training continues it)"),
    F(TOPT_ZERO, "zero", "zero", T_INT, zero, LISTS, 0, S_RUN, "STAGE",
      "under mpirun, each rank keeps the AdamW state of its share of the weights (1, ZeRO-1), and on\n"
                 "the GPU its share of the gradients too (2, ZeRO-2: reduced layer by layer during the backward);\n"
                 "0: every rank all of it"),
    F(TOPT_COLLECTIVE_TIMEOUT, "collective_timeout", "collective-timeout", T_LONG, collective_timeout, RANKS, 0, S_RUN,
      "SECONDS", "under mpirun: how long rank 0 waits at a collective for the other ranks (they wait twice\n"
                 "as long + 5 s for rank 0), then aborts the job naming the ranks that did not arrive"),
    F(TOPT_LOG, "log", "log", T_STR, log, LISTS, 0, S_RUN, "FILE", "JSON Lines metrics (default: OUT/train_log.jsonl)"),
    F(TOPT_LOG_LAMBDAS, "log_lambdas", "log-lambdas", T_BOOL, log_lambdas, LISTS, 0, S_RUN, NULL,
      "log d loss / d s of every list"),
    F(TOPT_REPORT_TO, "report_to", "report-to", T_STR, report_to, TRAINING, 0, S_RUN, "LIST",
      "none | tensorboard | wandb, a comma list: tensorboard writes every logged number to\n"
      "OUT/runs/events.out.tfevents.ppa; wandb: a note on importing that folder (ppa uploads nothing)"),
    F(TOPT_EVAL_DATA, "eval_data", "eval-data", T_STR, eval_data, LISTS, 0, S_IO, "FILE.jsonl", "held-out lists"),
    F(TOPT_EVAL_EVERY, "eval_every", "eval-every", T_LONG, eval_every, LISTS, 0, S_IO, "N",
      "evaluate every N steps, 0: at the end"),
    F(TOPT_THREADS, "threads", "threads", T_INT, threads, ANY_MODEL, 0, S_RUN, "N", "compute threads, 0: all cores"),
    F(TOPT_MAX_LINE_BYTES, "max_line_bytes", "max-line-bytes", T_LONG, max_line_bytes, ANY_MODEL, 0, S_RUN, "N",
      "longest line of a JSON Lines input; a longer one stops the run"),
    F(TOPT_VERBOSE, "verbose", "verbose", T_BOOL, verbose, LISTS | CMD_LOGPROBS | CMD_GRAD | JUDGES, 0, S_RUN, NULL,
      "say more on stderr (resolved options, kernels)"),
    L(TOPT_TAU, "tau", "tau", LOSS_CMDS),
    L(TOPT_ALPHA, "alpha", "alpha", LOSS_CMDS),
    L(TOPT_K, "k", "k", LOSS_CMDS | CMD_EVAL),
    L(TOPT_GAIN, "gain", "gain", LOSS_CMDS),
    L(TOPT_DISCOUNT, "discount", "discount", LOSS_CMDS),
    L(TOPT_SINKHORN, "sinkhorn", "no-sinkhorn", LOSS_CMDS),
    L(TOPT_SINKHORN_ITERS, "sinkhorn_iters", "sinkhorn-iters", LOSS_CMDS),
    L(TOPT_SINKHORN_TOL, "sinkhorn_tol", "sinkhorn-tol", LOSS_CMDS),
    L(TOPT_TIES, "ties", "ties", LOSS_CMDS),
    L(TOPT_PAIRS, "pairs", "pairs", LOSS_CMDS),
    L(TOPT_SIGMA, "sigma", "sigma", LOSS_CMDS),
    L(TOPT_LABEL_SMOOTHING, "label_smoothing", "label-smoothing", LOSS_CMDS),
    L(TOPT_GAMMA, "gamma", "gamma", LOSS_CMDS),
    L(TOPT_NORMALIZE, "normalize", "normalize", LOSS_CMDS),
    F(TOPT_STRICT, "strict", "strict", T_BOOL, strict, CMD_LOGPROBS | CMD_GRAD, 0, S_IO, NULL,
      "refuse responses whose first token merges with the prompt's end"),
    F(TOPT_ASSISTANT_ONLY_LOSS, "assistant_only_loss", "assistant-only-loss", T_BOOL, assistant_only_loss, CMD_SFT, 0,
      S_IO, NULL, "train on every assistant turn of a \"messages\" row, one row per turn (default: the last turn)"),
    F(TOPT_PROMPTS, "prompts", "prompts", T_STR, prompts, CMD_GENERATE, CMD_GENERATE, S_IO, "FILE.jsonl",
      "prompts: JSON Lines, or a JSON array (AlpacaEval's file)"),
    F(TOPT_MAX_NEW_TOKENS, "max_new_tokens", "max-new-tokens", T_INT, max_new_tokens, CMD_GENERATE, 0, S_GENERATE,
      "N", "at most N new tokens per response; the model's maximum length also ends one"),
    F(TOPT_TEMPERATURE, "temperature", "temperature", T_DOUBLE, temperature, CMD_GENERATE, 0, S_GENERATE, "T",
      "0: greedy; > 0: sample from softmax(logits / T)"),
    F(TOPT_TOP_P, "top_p", "top-p", T_DOUBLE, top_p, CMD_GENERATE, 0, S_GENERATE, "P",
      "nucleus sampling: the smallest set of likeliest tokens with mass >= P"),
    [TOPT_N] = {"n", "n", T_INT, offsetof(TrainOptions, n_samples), CMD_GENERATE, 0, S_GENERATE, "K",
                "responses per prompt", "num-samples", 'n'},
    F(TOPT_TOP_K, "top_k", "top-k", T_INT, top_k, CMD_GENERATE, 0, S_GENERATE, "K",
      "sample from the K likeliest tokens only (before top-p, as transformers does); 0: all"),
    F(TOPT_STOP, "stop", "stop", T_STRS, stop, CMD_GENERATE, 0, S_GENERATE, "STRING",
      "end a response where its text first holds STRING, cut before it (repeatable: any of them)"),
    F(TOPT_SAMPLER, "sampler", "sampler", T_STR, sampler, CMD_GENERATE, 0, S_GENERATE, "S",
      "device: draw each token on the GPU (float32, a counter-based generator; only the ids\n"
            "come back); exact: read the logits back and draw on the host in double precision (the\n"
      "CPU's sampler, its bits). Default: device with --device cuda, exact on the CPU"),
    F(TOPT_MAX_SEQS, "max_seqs", "max-seqs", T_INT, max_seqs, CMD_GENERATE, 0, S_GENERATE, "N",
      "sequences decoded at once, at least -n (default 0: as many as fit in the cache's budget,\n"
      "1 GB on the CPU, 16 GB on a GPU, at most 256); a prompt starts when one's samples all end"),
    F(TOPT_FORMAT, "format", "format", T_STR, format, CMD_GENERATE, 0, S_IO, "F",
      "jsonl | alpaca_eval | mt_bench (default: alpaca_eval for a JSON array, mt_bench for \"turns\"\n"
      "rows, else jsonl)"),
    F(TOPT_GENERATOR, "generator", "generator", T_STR, generator, CMD_GENERATE, 0, S_IO, "NAME",
      "the model's name in AlpacaEval's \"generator\" and MT-Bench's \"model_id\" (default: the\n"
      "folder name of --adapter, else of --model)"),
    F(TOPT_REWARD_INDEX, "reward_index", "reward-index", T_INT, reward_index, CMD_REWARD | JUDGES, 0, S_IO, "N",
      "the reward head's output used, 0-based (ArmoRM's overall score: 5)"),
    F(TOPT_JUDGE, "judge", "judge", T_STR, judge, JUDGES, CMD_WINRATE, S_IO, "NAME",
      "afinn | vader | reward-model | pair-model (a model judge: implied by its folder's flag)"),
    F(TOPT_RAW, "raw", "raw", T_BOOL, raw, CMD_JUDGE, 0, S_IO, NULL,
      "a lexicon's own numbers: {score, comparative} (afinn) or {neg, neu, pos, compound} (vader)"),
    F(TOPT_NPM_CACHE, "npm_cache", "npm-cache", T_STR, npm_cache, JUDGES, 0, S_IO, "DIR",
      "the word lists unpacked by scripts/fetch-fixtures.sh (default cache/npm)"),
    F(TOPT_REWARD_MODEL, "reward_model", "reward-model", T_STR, reward_model, JUDGES, 0, S_IO, "DIR",
      "a reward-model folder (<Type>ForSequenceClassification, ArmoRM)"),
    F(TOPT_PAIR_MODEL, "pair_model", "pair-model", T_STR, pair_model, JUDGES, 0, S_IO, "DIR",
      "a pair-preference causal LM: P(\"A\") against P(\"B\"), both orders"),
    F(TOPT_PAIR_TEMPLATE, "pair_template", "pair-template", T_STR, pair_template, JUDGES, 0, S_IO, "FILE",
      "the pair model's prompt, with {prompt}, {response_A}, {response_B}"),
    F(TOPT_A, "a", "a", T_STR, a, CMD_WINRATE, CMD_WINRATE, S_IO, "A.jsonl", "responses to rate (\"prompt\", \"responses\")"),
    F(TOPT_B, "b", "b", T_STR, b, CMD_WINRATE, CMD_WINRATE, S_IO, "B.jsonl", "the responses they are compared with"),
    F(TOPT_SKIP_UNMATCHED, "skip_unmatched", "skip-unmatched", T_BOOL, skip_unmatched, CMD_WINRATE, 0, S_IO, NULL,
      "count prompts found in one file only instead of stopping"),
    F(TOPT_PER_PROMPT, "per_prompt", "per-prompt", T_BOOL, per_prompt, CMD_WINRATE, 0, S_IO, NULL,
      "add each prompt's mean outcome and A's line (paired comparisons)"),
};
#undef F
#undef L

const OptHelpOverride OPT_HELP_OVERRIDES[] = {
    {TOPT_MODEL, CMD_TRAIN, "DIR", "policy to train, a Hugging Face folder"},
    {TOPT_DATA, CMD_TRAIN, "FILE.jsonl", "training lists: scores, or ranks (1 = best, ties 1, 2, 2, 4)"},
    {TOPT_DATA, CMD_SFT, "FILE.jsonl", "{\"text\"} rows, or prompt/response rows (the prompt not scored)"},
    {TOPT_OUT, CMD_SCORE, "CACHE", "the reference cache to write (never overwritten)"},
    {TOPT_OUT, CMD_GRAD, "FILE", "the gradients, safetensors under the Hugging Face names"},
    {TOPT_OUT, CMD_GENERATE, "FILE", "write the rows here, atomically (default: stdout)"},
    {TOPT_MAX_NEW_TOKENS, CMD_GENERATE, "N",
     "at most N new tokens per response, the model's maximum length permitting; unless given,\n"
     "2048 for alpaca_eval and 1024 for mt_bench, as their generation scripts use"},
    {TOPT_TEMPERATURE, CMD_GENERATE, "T",
     "0: greedy; > 0: sample from softmax(logits / T); unless given, mt_bench takes\n"
     "FastChat's per category"},
    {TOPT_REF, CMD_EVAL, "DIR", "the reference model"},
    {TOPT_REF, CMD_GRAD, "DIR", "reference model (default: the policy itself, so every s is 0)"},
    {TOPT_BATCH_SIZE, CMD_SFT, "N", "rows per optimizer step"},
    {TOPT_MICRO_BATCH, CMD_SFT, "N", "rows per forward/backward"},
    {TOPT_SEED, CMD_GENERATE, "S", "sample j of the prompt on line i draws from a stream fixed by (S, i, j)"},
    {TOPT_K, CMD_EVAL, "N", "NDCG@k of the metric (0: the list size)"},
    {TOPT_MODEL, CMD_REWARD, "DIR", "a reward-model folder, or a causal LM given a new one-label head"},
    {TOPT_DATA, CMD_REWARD, "FILE.jsonl", "training lists: scores, or ranks (1 = best, ties 1, 2, 2, 4)"},
    {TOPT_OUT, CMD_REWARD, "DIR", "the trained reward-model folder"},
    {TOPT_SEED, CMD_REWARD, "N", "seed of the data order, the list draws and a new head"},
    {TOPT_DATA, CMD_JUDGE, "FILE.jsonl", "rows with \"responses\" (or pre-tokenized) to score"},
    {TOPT_OUT, CMD_JUDGE, "FILE", "write the rows here, atomically (default: stdout)"},
    {TOPT_OUT, CMD_WINRATE, "FILE", "write the JSON here, atomically (default: stdout)"},
};
const int OPT_N_HELP_OVERRIDES = (int)PPA_ARRAY_LEN(OPT_HELP_OVERRIDES);

static const struct {
    OptCommand cmd;
    const char *name;
} COMMAND_NAMES[] = {
    {CMD_TRAIN, "train"}, {CMD_SFT, "sft"},   {CMD_SCORE, "score"},       {CMD_EVAL, "eval"},
    {CMD_LOGPROBS, "logprobs"}, {CMD_GRAD, "grad"}, {CMD_GENERATE, "generate"}, {CMD_REWARD, "reward"},
    {CMD_JUDGE, "judge"}, {CMD_WINRATE, "winrate"},
};

int options_takes(OptCommand cmd, TrainOptId id) { return id >= 0 && id < TOPT_COUNT && opt_takes(cmd, id); }

const char *options_command_name(OptCommand cmd) {
    for (size_t i = 0; i < PPA_ARRAY_LEN(COMMAND_NAMES); i++)
        if (COMMAND_NAMES[i].cmd == cmd) return COMMAND_NAMES[i].name;
    return "?";
}

void train_options_default(TrainOptions *o) { options_default(CMD_TRAIN, o); }

void options_default(OptCommand cmd, TrainOptions *o) {
    memset(o, 0, sizeof *o);
    o->cmd = cmd;
    o->objective = PPA_NEURAL_NDCG;
    ppa_loss_options_default(&o->loss);
    o->beta = 0.1;
    o->loss.beta = o->beta;
    o->list_size = 8;
    o->epochs = 1;
    o->lr = 5e-7;
    o->batch_size = DEFAULT_BATCH;
    o->micro_batch = DEFAULT_MICRO;
    o->grad_accum = DEFAULT_BATCH / DEFAULT_MICRO;
    o->warmup_ratio = 0.1;
    o->schedule = SCHEDULE_COSINE;
    o->weight_decay = 0.0;
    o->clip_grad = 1.0;
    o->seed = 42;
    o->max_length = 1024;
    o->max_prompt_length = 512;
    o->save_dtype = SAVE_F32;
    o->max_new_tokens = 128;
    o->top_p = 1.0;
    o->n_samples = 1;
    o->max_line_bytes = JSONL_MAX_LINE_DEFAULT;
    o->lora_alpha = 32;
    o->collective_timeout = 600;
    if (cmd == CMD_REWARD) { /* TRL's RewardTrainer: Bradley-Terry on pairs; a reward model learns at larger steps */
        o->objective = PPA_DPO_ALL_PAIRS;
        o->beta = 1, o->loss.beta = 1;
        o->lr = 1e-5;
    }
    if (cmd == CMD_SFT) { /* next-token training of a small model: ppa's demo settings */
        o->lr = 1e-4;
        o->batch_size = 8, o->micro_batch = 8, o->grad_accum = 1;
        o->warmup_ratio = 0;
    }
    for (int i = 0; i < TOPT_COUNT; i++) o->origin[i] = (TrainOrigin){TRAIN_FROM_DEFAULT, 0, NULL};
}

void train_options_free(TrainOptions *o) {
    char **strs[] = {&o->model, &o->data, &o->out, &o->ref, &o->ref_cache, &o->resume, &o->log, &o->eval_data,
                     &o->template_name, &o->config, &o->prompts, &o->judge, &o->npm_cache, &o->reward_model,
                     &o->pair_model, &o->pair_template, &o->a, &o->b, &o->lora_targets, &o->adapter, &o->report_to,
                     &o->format,    &o->generator, &o->sampler};
    for (size_t i = 0; i < PPA_ARRAY_LEN(strs); i++) free(*strs[i]), *strs[i] = NULL;
    for (int i = 0; i < o->stop.n; i++) free(o->stop.v[i]);
    free(o->stop.v);
    o->stop = (OptStrings){0};
    for (int i = 0; i < o->n_notes; i++) free(o->notes[i]);
    free(o->notes);
    o->notes = NULL;
    o->n_notes = 0;
}

/* ---- small shared helpers ---- */

char *opt_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = xmalloc(n);
    memcpy(p, s, n);
    return p;
}

void opt_note(TrainOptions *o, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "ppa: note: %s\n", buf);
    o->notes = xrealloc(o->notes, sizeof(*o->notes) * (size_t)(o->n_notes + 1));
    o->notes[o->n_notes++] = opt_strdup(buf);
}

void opt_fail(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

void opt_set_origin(TrainOptions *o, TrainOptId id, TrainSource from, int line, const char *key) {
    o->origin[id] = (TrainOrigin){from, line, key};
}

const char *train_option_name(TrainOptId id) { return id >= 0 && id < TOPT_COUNT ? OPT[id].name : "?"; }

const char *opt_flag(TrainOptId id, char *buf, size_t len) {
    snprintf(buf, len, "--%s", OPT[id].flag ? OPT[id].flag : OPT[id].name);
    for (char *c = buf + 2; *c; c++)
        if (*c == '_') *c = '-';
    return buf;
}

const char *train_option_origin(const TrainOptions *o, TrainOptId id, char *buf, size_t len) {
    const TrainOrigin *g = &o->origin[id];
    switch (g->from) {
    case TRAIN_FROM_DEFAULT: snprintf(buf, len, "default"); break;
    case TRAIN_FROM_DERIVED: snprintf(buf, len, "derived"); break;
    case TRAIN_FROM_CLI: opt_flag(id, buf, len); break;
    case TRAIN_FROM_CONFIG: snprintf(buf, len, "%s:%d %s", o->config ? o->config : "?", g->line, g->key); break;
    }
    return buf;
}

const char *opt_where(const TrainOptions *o, TrainOptId id, char *buf, size_t len) {
    const TrainOrigin *g = &o->origin[id];
    if (g->from == TRAIN_FROM_CONFIG) snprintf(buf, len, "%s:%d: %s", o->config, g->line, g->key);
    else if (g->from == TRAIN_FROM_CLI) opt_flag(id, buf, len);
    else snprintf(buf, len, "%s (%s)", OPT[id].name, g->from == TRAIN_FROM_DERIVED ? "derived" : "default");
    return buf;
}

/* ---- values as text ---- */

int opt_set_text(TrainOptions *o, TrainOptId id, const char *s, char *msg, size_t msglen) {
    void *field = (char *)o + OPT[id].off;
    long v;
    double x;
    int b;
    switch (OPT[id].type) {
    case T_STR:
        free(*(char **)field);
        *(char **)field = opt_strdup(s);
        return 0;
    case T_STRS: {
        OptStrings *l = field;
        l->v = xrealloc(l->v, sizeof(char *) * (size_t)(l->n + 1));
        l->v[l->n++] = opt_strdup(s);
        return 0;
    }
    case T_INT:
    case T_LONG:
        if (text_long(s, &v) || (OPT[id].type == T_INT && (v < INT_MIN || v > INT_MAX))) {
            opt_fail(msg, msglen, "cannot use '%s': expected a whole number%s", s,
                     id == TOPT_EPOCHS ? " (ppa trains whole epochs; max_steps stops earlier)" : "");
            return -1;
        }
        if (OPT[id].type == T_INT) *(int *)field = (int)v;
        else *(long *)field = v;
        return 0;
    case T_U64: {
        char *end;
        errno = 0;
        unsigned long long u = strtoull(s, &end, 10);
        if (*s < '0' || *s > '9' || *end || errno == ERANGE) {
            opt_fail(msg, msglen, "cannot use '%s': expected a whole number >= 0", s);
            return -1;
        }
        *(unsigned long long *)field = u;
        return 0;
    }
    case T_DOUBLE:
        if (text_double(s, &x)) {
            opt_fail(msg, msglen, "cannot use '%s': expected a finite number", s);
            return -1;
        }
        *(double *)field = x;
        return 0;
    case T_BOOL:
        if (text_bool(s, &b)) {
            opt_fail(msg, msglen, "cannot use '%s': expected true or false", s);
            return -1;
        }
        *(int *)field = b;
        return 0;
    case T_SCHEDULE:
        if (schedule_parse(s, (Schedule *)field)) {
            opt_fail(msg, msglen, "cannot use '%s': expected cosine, linear or constant", s);
            return -1;
        }
        return 0;
    case T_DTYPE:
        if (!strcmp(s, "f32") || !strcmp(s, "float32")) *(SaveDtype *)field = SAVE_F32;
        else if (!strcmp(s, "bf16") || !strcmp(s, "bfloat16")) *(SaveDtype *)field = SAVE_BF16;
        else {
            opt_fail(msg, msglen, "cannot use '%s': expected f32 or bf16", s);
            return -1;
        }
        return 0;
    case T_PRECISION:
        if (!strcmp(s, "fp32") || !strcmp(s, "float32")) *(int *)field = 0;
        else if (!strcmp(s, "bf16") || !strcmp(s, "bfloat16")) *(int *)field = 1;
        else {
            opt_fail(msg, msglen, "cannot use '%s': expected fp32 or bf16", s);
            return -1;
        }
        return 0;
    case T_DEVICE:
        if (!strcmp(s, "auto")) *(int *)field = DEVICE_AUTO;
        else if (!strcmp(s, "cpu")) *(int *)field = DEVICE_CPU;
        else if (!strcmp(s, "cuda") || !strcmp(s, "gpu")) *(int *)field = DEVICE_CUDA;
        else {
            opt_fail(msg, msglen, "cannot use '%s': expected auto, cpu or cuda", s);
            return -1;
        }
        return 0;
    case T_OBJECTIVE:
        if (ppa_objective_parse(s, (PpaObjective *)field)) {
            opt_fail(msg, msglen, "unknown objective '%s' (see --list-objectives)", s);
            return -1;
        }
        return 0;
    case T_LOSS:
        return ppa_loss_option_set(&o->loss, OPT[id].name, s, msg, msglen) == PPA_OK ? 0 : -1;
    }
    return -1;
}

/* the value of an objective option, as text */
static const char *loss_value_text(const PpaLossOptions *l, TrainOptId id, char *buf, size_t len) {
    switch (id) {
    case TOPT_TAU: snprintf(buf, len, "%g", l->tau); break;
    case TOPT_ALPHA: snprintf(buf, len, "%g", l->alpha); break;
    case TOPT_K: snprintf(buf, len, "%d", l->k); break;
    case TOPT_GAIN: snprintf(buf, len, "%s", GAIN_NAMES[l->gain]); break;
    case TOPT_DISCOUNT: snprintf(buf, len, "%s", DISCOUNT_NAMES[l->discount]); break;
    case TOPT_SINKHORN: snprintf(buf, len, "%s", l->sinkhorn ? "true" : "false"); break;
    case TOPT_SINKHORN_ITERS: snprintf(buf, len, "%d", l->sinkhorn_iters); break;
    case TOPT_SINKHORN_TOL: snprintf(buf, len, "%g", l->sinkhorn_tol); break;
    case TOPT_TIES: snprintf(buf, len, "%s", TIES_NAMES[l->ties]); break;
    case TOPT_PAIRS: snprintf(buf, len, "%s", PAIRS_NAMES[l->pairs]); break;
    case TOPT_SIGMA: snprintf(buf, len, "%g", l->sigma); break;
    case TOPT_LABEL_SMOOTHING: snprintf(buf, len, "%g", l->label_smoothing); break;
    case TOPT_GAMMA: snprintf(buf, len, "%g", l->gamma); break;
    case TOPT_NORMALIZE: snprintf(buf, len, "%s", l->normalize ? "true" : "false"); break;
    default: snprintf(buf, len, "?");
    }
    return buf;
}

const char *opt_value_text(const TrainOptions *o, TrainOptId id, char *buf, size_t len) {
    const void *field = (const char *)o + OPT[id].off;
    buf[0] = 0;
    switch (OPT[id].type) {
    case T_STR: snprintf(buf, len, "%s", *(char *const *)field ? *(char *const *)field : ""); break;
    case T_STRS: /* the values, one after another, as the command line gives them */
        for (int i = 0; i < ((const OptStrings *)field)->n && strlen(buf) + 1 < len; i++)
            snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i ? " " : "", ((const OptStrings *)field)->v[i]);
        break;
    case T_INT: snprintf(buf, len, "%d", *(const int *)field); break;
    case T_LONG: snprintf(buf, len, "%ld", *(const long *)field); break;
    case T_U64: snprintf(buf, len, "%llu", *(const unsigned long long *)field); break;
    case T_DOUBLE: snprintf(buf, len, "%g", *(const double *)field); break;
    case T_BOOL: snprintf(buf, len, "%s", *(const int *)field ? "true" : "false"); break;
    case T_SCHEDULE: snprintf(buf, len, "%s", SCHEDULE_NAMES[o->schedule]); break;
    case T_DTYPE: snprintf(buf, len, "%s", o->save_dtype == SAVE_BF16 ? "bf16" : "f32"); break;
    case T_PRECISION: snprintf(buf, len, "%s", *(const int *)field ? "bf16" : "fp32"); break;
    case T_DEVICE: snprintf(buf, len, "%s", (const char *[]){"auto", "cpu", "cuda"}[*(const int *)field]); break;
    case T_OBJECTIVE: snprintf(buf, len, "%s", ppa_objective_name(o->objective)); break;
    case T_LOSS: loss_value_text(&o->loss, id, buf, len); break;
    }
    return buf;
}
