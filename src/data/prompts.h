/* prompts.h: prompts for generation, from JSON Lines or a JSON array of
 * objects (AlpacaEval's file: each element a row). A row holds "prompt"
 * (a string or a message list; aliases instruction / question / query),
 * or "messages" (a list ending with a user turn), or "turns" (MT-Bench's
 * questions: a list of user turns, the first one the prompt), optional
 * "system" (with a string prompt or turns), optional "id" / "prompt_id",
 * optional "template": "none"; or pre-tokenized "prompt_ids". Rendering
 * follows rows.h exactly (the chat template with the generation prompt,
 * exactly one BOS), so the prompt a response is generated for is the prompt
 * training will score it under. Other keys (responses, scores, ...) are
 * ignored: a training file is a prompt file. Every problem names FILE:LINE
 * (FILE: element N in an array) and the field. */
#ifndef PPA_PROMPTS_H
#define PPA_PROMPTS_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "template/template.h"

typedef struct {
    long line;         /* of the source file, 1-based (an array's element number) */
    cJSON *echo;       /* the prompt fields as given, in input order: id, prompt_id,
                        * prompt (or its alias), messages, system, template, prompt_ids */
    cJSON *source;     /* the whole row as given (PromptOptions.keep_source), else NULL */
    int n_turns;       /* "turns": how many (the first is the prompt); 0: the row has none */
    int template_none; /* "template": "none" */
    int pretokenized;  /* 1: from "prompt_ids" */
    int len;           /* >= 1, below the model's maximum length */
    int *ids;          /* [len] */
} PromptRow;

typedef struct {
    PromptRow *rows;
    int n;
    long skipped; /* lines refused with skip_invalid */
    int array;    /* 1: read from a JSON array */
} PromptSet;

typedef struct {
    Tokenizer *tok;          /* NULL: only "prompt_ids" lines are accepted */
    const ChatTemplate *tpl; /* chat template of text prompts; NULL: none */
    int vocab_size;          /* ids must be below it */
    int max_len;             /* a prompt must leave room for one token: len < max_len */
    int skip_invalid;        /* report each bad line on stderr and go on */
    int special_in_text;     /* special-token strings in message text become control tokens (rows.h) */
    const char *model_dir;   /* the model folder, named when tok is NULL (it has no tokenizer.json); NULL: none */
    int keep_source;         /* keep every row whole in PromptRow.source */
} PromptOptions;

/* Reads every prompt of path: a JSON array when its first byte but blanks is
 * '[' (a regular file), else JSON Lines. 0, or -1 with "path:line: problem"
 * (or "path: element N: problem") in err. */
int prompts_read(PromptSet *ps, const char *path, const PromptOptions *o, char *err, size_t errlen);

/* The tokens of a conversation ending with a user turn, rendered as a row's
 * prompt is (o's template, or none with template_none; the generation
 * prompt; the length checked against o->max_len): *ids malloc'd, *len.
 * 0, or -1 with the problem in err. */
int prompts_encode(const PromptOptions *o, int template_none, const ChatMessage *m, int n, int **ids, int *len, char *err,
                   size_t errlen);
void prompts_free(PromptSet *ps);

#endif
