/* prep.h: what train, score and eval share: a model folder's tokenizer and
 * chat template, the data read and prepared (train/data.h), and the key of
 * the reference cache for those rows. */
#ifndef PPA_CLI_PREP_H
#define PPA_CLI_PREP_H

#include "data/rows.h"
#include "model/model.h"
#include "model/lora.h"
#include "train/data.h"
#include "options/options.h"
#include "train/refcache.h"

typedef struct {
    const char *model_dir;   /* tokenizer and template come from here */
    const char *data;
    const char *template_name; /* NULL: the model's own */
    int skip_invalid, max_length, max_prompt_length;
    int special_in_text; /* --special-tokens-in-text */
    int vocab_size, eos_id;
    int bf16; /* the reference runs in the command's precision */
} PrepArgs;

typedef struct {
    DataSet data;
    Tokenizer *tok; /* NULL: a folder without tokenizer files (pre-tokenized rows only) */
    ChatTemplate *tpl;
    char template_name[32];
    PrepStats stats;
    uint64_t data_hash;
} Prepared;

/* Parses a model command's options (options/options.h). --help prints usage
 * and the command's option lines and exits 0, --list-objectives the names;
 * an error dies with "CMD: message" and exit status 2. Sets the threads. */
void prep_options(OptCommand cmd, const char *usage, int argc, char **argv, TrainOptions *o);
/* Compute threads for matrix products and OpenMP loops; 0 leaves the default (all cores). */
void prep_threads(int n);
/* Loads the command's model in its --precision: trainable (float32 master
 * weights and a bf16 copy, --gradient-checkpointing) or frozen (bf16 weights
 * only). Dies with "CMD: message" (exit 2), e.g. on a CPU without bf16. The
 * causal-LM commands refuse a reward model; `ppa reward` wants one, or takes
 * a causal LM and gives it a head (model_load_reward). */
Model *prep_model(const TrainOptions *o, const char *dir, int trainable);
/* LoRA (model/lora.h): with --lora-r (train, sft, grad) or --adapter, the
 * model of prep_model is a frozen base (bf16 weights only with --precision
 * bf16) carrying a new seeded adapter or --adapter's; prep_frozen loads a
 * plain frozen model (a reference: never an adapter). */
Model *prep_frozen(const TrainOptions *o, const char *dir);
/* train's policy: --model, or the --resume checkpoint (an adapter folder on --model for a LoRA run) */
Model *prep_policy(const TrainOptions *o);
/* The adapter the options ask for (a new one's shape, or --adapter's): 1 and *s, or 0 */
int prep_lora_spec(const TrainOptions *o, LoraSpec *s);
/* A judge's model, frozen, in --precision: a reward model (reward != 0;
 * --reward-index checked against its outputs) or a causal LM. */
Model *prep_judge_model(const TrainOptions *o, const char *dir, int reward);
/* Dies (exit 2) unless m is a reward model (reward != 0) or a causal LM. */
void prep_need_head(const Model *m, const char *dir, int reward, const char *who);
/* "fp32 products: <gemm_backend()>" or "bf16 products: <oneDNN line>; ..." */
const char *prep_kernels(const Model *m);
/* The reading settings of a command's options, with the model's vocabulary and first end-of-sequence id. */
PrepArgs prep_args(const TrainOptions *o, const Model *m);

/* Reads and prepares; dies with a message (exit 2) on bad input. */
void prep_load(Prepared *p, const PrepArgs *a, const char *who);
/* The tokenizer (into p->tok) and the chat template (p->tpl, named in
 * p->template_name) the rows of a model folder are read with; a template
 * that cannot be rendered exactly dies here, before any work. */
DataOptions prep_data_options(Prepared *p, const PrepArgs *a, const char *who);
/* Reads only: every row and response as in the file (no truncation, no
 * filtering; missing labels stay NaN), for the judges. */
void prep_read(Prepared *p, const PrepArgs *a, const char *who);
void prep_free(Prepared *p);
/* Every label of the prepared rows against the objective (negative or too
 * large for a gain, infinite): the first bad one dies with FILE:LINE before
 * any work is done. Missing labels (NaN) are masked and fine. */
void prep_check_labels(const Prepared *p, PpaObjective obj, const char *path, const char *who);
/* The key of a reference cache for p's rows and reference model ref. */
RefKey prep_refkey(const Prepared *p, Model *ref, const PrepArgs *a);
/* Under several ranks: every rank's output (mine, n bytes) gathered in rank order, written by rank 0 to out
 * atomically, or to stdout when out is NULL; dies with "WHO: ..." when it cannot. Every rank must call it. */
void prep_write_gathered(const char *mine, size_t n, const char *out, const char *who);
/* Loads the cache at path if it exists and matches (else dies naming the
 * reason), or computes it with the reference model at ref_dir and saves it. */
void prep_reference(RefCache *c, const Prepared *p, const PrepArgs *a, const char *ref_dir, const char *path, int verbose);
/* The same with a loaded model ref (kept). */
void prep_reference_with(RefCache *c, const Prepared *p, const PrepArgs *a, Model *ref, const char *path, int verbose);
/* The reference of a policy loaded from folder base: ref_dir, or base when NULL. A policy with an adapter whose
 * reference is its own base computes it with the adapter switched off (no second copy of the base); policy may be
 * NULL (freed: the reference is loaded). */
void prep_policy_reference(RefCache *c, const Prepared *p, const PrepArgs *a, Model *policy, const char *base,
                           const char *ref_dir, const char *path, int verbose);

#endif
