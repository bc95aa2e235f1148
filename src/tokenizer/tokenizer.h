/* tokenizer.h: Hugging Face tokenizer.json (BPE) in C: byte-level files
 * (Qwen2/2.5/3, Llama 3, GPT-2, SmolLM) and SentencePiece-style files with
 * byte fallback (Mistral, Llama 2, TinyLlama). Encoding gives the ids the
 * model's own tokenizer gives; a file that uses something unsupported is
 * refused with the name of the missing piece. A Tokenizer keeps a piece cache
 * and regex match state: use one per thread. */
#ifndef PPA_TOKENIZER_H
#define PPA_TOKENIZER_H

#include <stddef.h>

typedef struct Tokenizer Tokenizer;

/* path: a tokenizer.json, or a model folder holding one. NULL on error. */
Tokenizer *tokenizer_load(const char *path, char *err, size_t errlen);
/* A model folder's tokenizer: NULL with err "" when the folder has no
 * tokenizer.json (pre-tokenized rows only), NULL with the reason when it has
 * one that cannot be read: a broken file is never taken for an absent one
 * (nor a Hub id given for a folder: file_refuse_hub_id). */
Tokenizer *tokenizer_load_folder(const char *dir, char *err, size_t errlen);
void tokenizer_free(Tokenizer *t);

/* Encodes UTF-8 text. add_special: run the post-processor (BOS for Llama 3
 * and Mistral, nothing for Qwen). *ids is allocated (free it); returns the
 * count, or -1 for invalid UTF-8 (err names the byte offset). */
long tokenizer_encode(Tokenizer *t, const char *text, size_t len, int add_special, int **ids, char *err,
                      size_t errlen);

/* The same for text in which mask[i] = 1 marks message text (from a chat
 * template): no special token is matched over those bytes, so their
 * "<|im_end|>" stays text, as Hugging Face's split_special_tokens=True does.
 * Non-special added tokens still match there, as they do in HF. mask may be
 * NULL (every special string is a control token, HF's default). */
long tokenizer_encode_masked(Tokenizer *t, const char *text, const unsigned char *mask, size_t len, int add_special,
                             int **ids, char *err, size_t errlen);

/* Decodes ids to a NUL-terminated UTF-8 string (free it). skip_special drops
 * added tokens marked special. Unknown ids are skipped. */
char *tokenizer_decode(const Tokenizer *t, const int *ids, size_t n, int skip_special, size_t *len);

/* clean_up_tokenization_spaces (" ." -> "." ...) is a transformers option
 * read from tokenizer_config.json; this overrides it. */
void tokenizer_set_clean_up_spaces(Tokenizer *t, int on);
int tokenizer_clean_up_spaces(const Tokenizer *t);

/* 1 if text contains the content of an added token (it is split out). */
int tokenizer_has_added_token(const Tokenizer *t, const char *text, size_t len);

/* Where the first special added token starts in text (outside mask's 1
 * bytes, when mask is given), its length in *tok_len; -1 if none. */
long tokenizer_find_special(const Tokenizer *t, const char *text, const unsigned char *mask, size_t len, size_t *tok_len);

int tokenizer_token_id(const Tokenizer *t, const char *token); /* -1 if absent */
int tokenizer_added_id(const Tokenizer *t, const char *token); /* id if token is an added token (split out whole), else -1 */
const char *tokenizer_token(const Tokenizer *t, int id);       /* NULL if absent */
int tokenizer_is_special(const Tokenizer *t, int id);
int tokenizer_size(const Tokenizer *t);  /* largest id + 1 */
int tokenizer_bos_id(const Tokenizer *t); /* what add_special puts first, or -1 */
const char *tokenizer_family(const Tokenizer *t); /* "byte-level" or "sentencepiece" */

#endif
