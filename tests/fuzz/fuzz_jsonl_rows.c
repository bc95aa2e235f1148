/* fuzz_jsonl_rows.c: the JSON Lines row reader (data/rows.h data_read).
 * Each input is a .jsonl file read twice: without a tokenizer (only
 * pre-tokenized rows are accepted) and with a byte-level tokenizer and the
 * chatml template (text rows, pairs, message lists, {"text": ...}). Both
 * skip bad lines, so every line of an input is parsed. */
#include <math.h>

#include "../byte_tokenizer.h"
#include "data/rows.h"
#include "fuzz_common.h"

#define VOCAB 258 /* 256 bytes + <|im_start|> + <|im_end|> */

static Tokenizer *tok;
static ChatTemplate *chatml;
static char rows_path[600];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    char path[600], err[1024];
    write_byte_tokenizer(fuzz_path(path, sizeof path, "tokenizer.json"),
                         "{\"id\": 256, \"content\": \"<|im_start|>\", \"special\": true},"
                         " {\"id\": 257, \"content\": \"<|im_end|>\", \"special\": true}");
    tok = tokenizer_load(path, err, sizeof err);
    FUZZ_ASSERT(tok, "the test tokenizer: %s", err);
    chatml = chat_template_code(TEMPLATE_CHATML);
    fuzz_path(rows_path, sizeof rows_path, "rows.jsonl");
    return 0;
}

/* What rows.h promises about every row it returns. */
static void check_rows(const DataSet *ds, int vocab) {
    for (int i = 0; i < ds->n; i++) {
        const DataRow *r = &ds->rows[i];
        FUZZ_ASSERT(r->id && r->prompt_len >= 1 && r->n_resp >= 1, "row %d: id, prompt or responses missing", i);
        FUZZ_ASSERT(!r->n_more && !r->more, "row %d: its expansion was not put in place", i);
        for (int t = 0; t < r->prompt_len; t++) FUZZ_ASSERT(r->prompt[t] >= 0 && r->prompt[t] < vocab, "prompt id");
        for (int k = 0; k < r->n_resp; k++) {
            FUZZ_ASSERT(r->resp_len[k] >= 1, "row %d: response %d is empty", i, k);
            for (int t = 0; t < r->resp_len[k]; t++)
                FUZZ_ASSERT(r->resp[k][t] >= 0 && r->resp[k][t] < vocab, "response id");
            FUZZ_ASSERT(isnan(r->scores[k]) || isfinite(r->scores[k]), "score");
        }
    }
}

static void read_with(const DataOptions *o) {
    DataSet ds;
    char err[2048];
    if (data_read(&ds, rows_path, o, err, sizeof err) == 0) check_rows(&ds, o->vocab_size);
    data_free(&ds);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_write(rows_path, data, size);
    DataOptions ids_only = {NULL, NULL, -1, 1000, 1, 0, 0, NULL, 0};
    read_with(&ids_only);
    DataOptions text = {tok, chatml, 257, VOCAB, 1, 0, 0, NULL, 0};
    read_with(&text);
    text.special_in_text = 1; /* Hugging Face's reading of special-token strings in the text */
    read_with(&text);
    text.all_assistant_turns = 1; /* sft --assistant-only-loss: a conversation expands into a row a turn */
    read_with(&text);
    return 0;
}
