/* rows.h: preference data as token rows. JSON Lines in the native schema and
 * its aliases (formats.md a.1-a.3: ListUltraFeedback, Princeton, UltraFeedback
 * completions, H4 chosen/rejected pairs), rendered with the chat template and
 * tokenized once per response, or pre-tokenized rows
 * {"prompt_ids": [...], "response_ids": [[...], ...], "scores": [...]} used as
 * given; {"text": ...} rows are plain next-token data (one response: the
 * text after its first token). Text from the data never becomes a control
 * token unless special_in_text, and a response holding the end-of-turn text
 * is refused (it would be scored past its turn). Every problem names
 * FILE:LINE and the field. */
#ifndef PPA_ROWS_H
#define PPA_ROWS_H

#include <stddef.h>

#include "template/template.h"

/* Responses in one row: at most this many (docs/commands.md); a longer row is refused with its line. Lists are
 * short (the paper's 8; samples for a judge some dozens): the bound keeps a row's memory and its O(K log K) work
 * (ordering, duplicates) small whatever the file holds. */
#define DATA_MAX_RESPONSES 1024

typedef struct DataRow {
    long line;      /* line of the source file */
    char *id;       /* "id" / "prompt_id", else the line number */
    int prompt_len; /* >= 1 */
    int *prompt;    /* [prompt_len] */
    int n_resp;
    int *resp_len;  /* [n_resp], each >= 1 */
    int **resp;     /* [n_resp][resp_len] */
    double *scores; /* [n_resp] labels, NaN where missing */
    int n_more;             /* the further rows one line expands into (all_assistant_turns), in the order of their */
    struct DataRow *more;   /* turns; data_read puts them after the row as rows of their own */
} DataRow;

typedef struct {
    DataRow *rows;
    int n;
    long skipped;        /* lines refused with skip_invalid */
    long boundary_fixes; /* responses of rows whose prompt ends early: one response's first token merged with the
                          * prompt's end, so the row's scored spans start where the tokenizations differ
                          * (formats.md d rule 3) */
} DataSet;

typedef struct {
    Tokenizer *tok;          /* NULL: only pre-tokenized rows are accepted */
    const ChatTemplate *tpl; /* chat template for text rows; NULL: none */
    int eos_id;              /* appended once to responses when tpl is none; -1 for none */
    int vocab_size;          /* ids must be below it (pre-tokenized rows too) */
    int skip_invalid;        /* report and skip bad lines instead of stopping */
    int strict;              /* a prompt/response boundary merge is an error */
    int special_in_text;     /* Hugging Face's default: special-token strings in message text become control tokens
                              * (by default they stay text; only the template's markers are control tokens) */
    const char *model_dir;   /* the model folder, named when tok is NULL (it has no tokenizer.json); NULL: none */
    int all_assistant_turns; /* a "messages" row gives one row per assistant turn (the conversation before it the
                              * prompt, rendered with the generation prompt); 0: the last turn, which must end it */
} DataOptions;

/* Reads every row of path (the rows of an expanded line in its place, each with its line and id). Returns 0, or -1
 * with "path:line: problem" in err. */
int data_read(DataSet *ds, const char *path, const DataOptions *o, char *err, size_t errlen);
void data_free(DataSet *ds);
/* One row from the text of one JSON object, read as data_read reads a line
 * (line 0); 0, or -1 with the problem in err. data_row_free releases it. */
int data_row_parse(const char *json, size_t len, DataRow *r, const DataOptions *o, char *err, size_t errlen);
void data_row_free(DataRow *r);

#endif
