/* dataset.h: what the data commands share: a model folder's tokenizer and chat
 * template, the data read and prepared (train/data.h), its labels checked. */
#ifndef PPA_CLI_DATASET_H
#define PPA_CLI_DATASET_H

#include "data/rows.h"
#include "model/model.h"
#include "options/options.h"
#include "template/template.h"
#include "train/data.h"

typedef struct {
    const char *model_dir;   /* tokenizer and template come from here */
    const char *data;
    const char *template_name; /* NULL: the model's own */
    int skip_invalid, max_length, max_prompt_length;
    int special_in_text; /* --special-tokens-in-text */
    int vocab_size, eos_id;
    int bf16; /* the reference runs in the command's precision */
    long batch_tokens; /* tokens per forward batch when scoring (setup_batch_tokens) */
    const TrainOptions *opt; /* the command's options (the reference's device) */
} PrepArgs;

typedef struct {
    DataSet data;
    Tokenizer *tok; /* NULL: a folder without tokenizer files (pre-tokenized rows only) */
    ChatTemplate *tpl;
    char template_name[32];
    PrepStats stats;
    uint64_t data_hash;
} Prepared;

/* The reading settings of a command's options, with the model's vocabulary and first end-of-sequence id. */
PrepArgs dataset_args(const TrainOptions *o, const Model *m);
/* The same from the model's config.json alone: the training commands read their data before loading the model */
PrepArgs dataset_args_config(const TrainOptions *o, const ModelConfig *c);
/* Reads and prepares; dies with a message (exit 2) on bad input. */
void dataset_load(Prepared *p, const PrepArgs *a, const char *who);
/* The tokenizer (into p->tok) and the chat template (p->tpl, named in
 * p->template_name) the rows of a model folder are read with; a template
 * that cannot be rendered exactly dies here, before any work. */
DataOptions dataset_options(Prepared *p, const PrepArgs *a, const char *who);
/* Reads only: every row and response as in the file (no truncation, no
 * filtering; missing labels stay NaN), for the judges. */
void dataset_read(Prepared *p, const PrepArgs *a, const char *who);
void dataset_free(Prepared *p);
/* Every label of the prepared rows against the objective (negative or too
 * large for a gain, infinite): the first bad one dies with FILE:LINE before
 * any work is done. Missing labels (NaN) are masked and fine. */
void dataset_check_labels(const Prepared *p, PpaObjective obj, const char *path, const char *who);

#endif
