/* internal.h: the pieces of the tokenizer: the BPE model, normalizers and
 * pre-tokenizers. tokenizer.c ties them together; the buffers and UTF-8
 * helpers they share are in buffers.h, below both bpe.c and pretok.c. */
#ifndef PPA_TOKENIZER_INTERNAL_H
#define PPA_TOKENIZER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "tokenizer/strmap.h"
#include "tokenizer/buffers.h"

/* Token ids are below this: an id indexes the model's embedding rows, and
 * config.json's vocab_size is refused above MODEL_MAX_DIM = 2^24. It also
 * bounds the id table (17 bytes per id) a hostile file can make us allocate. */
#define TOKENIZER_MAX_ID (1 << 24)

/* ---- BPE model (bpe.c) ---- */
typedef struct {
    StrMap vocab;       /* token string -> id */
    U64Map merges;      /* (left id << 32 | right id) -> rank */
    int *merge_result;  /* [n_merges] id of the merged token */
    int n_merges;
    int byte_level;     /* symbols start from bytes mapped through bytes_to_unicode */
    int byte_id[256];   /* byte-level: id of each byte's character; byte_fallback: id of <0xXX> */
    int byte_fallback, fuse_unk, ignore_merges, unk_id;
    StrMap cache;       /* piece -> index into cache_at (not thread-safe) */
    IntVec cache_ids, cache_at;
} Bpe;

/* Reads "model" of tokenizer.json. byte_level is decided by the caller. */
int bpe_load(Bpe *m, const cJSON *model, int byte_level, char *err, size_t errlen);
void bpe_free(Bpe *m);
/* Appends the ids of one pre-token (raw bytes; mapped to byte-level
 * characters inside when byte_level). */
void bpe_encode_piece(Bpe *m, const char *piece, size_t len, IntVec *out);
/* The byte-level character (UTF-8, 1-2 bytes) of byte b; returns its length. */
size_t byte_level_char(unsigned char b, char out[2]);
/* Inverse: the byte of a byte-level code point, or -1. */
int byte_level_byte(uint32_t cp);

/* ---- normalizers and pre-tokenizers (pretok.c) ---- */
typedef struct Normalizer Normalizer;
typedef struct PreTokenizer PreTokenizer;
int normalizer_load(Normalizer **out, const cJSON *j, char *err, size_t errlen);
void normalizer_free(Normalizer *n);
/* Normalises one segment (between added tokens) into out (cleared first). */
/* The normalizers' output is at most NORM_GROWTH x the input + NORM_EXTRA bytes (NFKC's largest expansion is 11x,
 * a Replace of a space by U+2581 3x); 0, or -1 past it (nested Replace steps that multiply the text). */
#define NORM_GROWTH 32
#define NORM_EXTRA 1024
int normalizer_apply(const Normalizer *n, const char *s, size_t len, ByteBuf *out);

int pretok_load(PreTokenizer **out, const cJSON *j, char *err, size_t errlen);
void pretok_free(PreTokenizer *p);
/* 1 if a ByteLevel pre-tokenizer is present (symbols are bytes). */
int pretok_is_byte_level(const PreTokenizer *p);
/* Splits a normalised segment into pieces: their bytes go to buf, and
 * (offset, length) pairs to spans. first_segment: the segment starts the text
 * (Metaspace prepend_scheme "first"). */
/* The bound on a Split pattern's work on a text (docs/safety.md): PRETOK_BUDGET_BASE + PER_BYTE x its bytes, in
 * PCRE2's match-limit units, each match attempt charged its limit (pretok.c: match_budgeted); 10M is PCRE2's own
 * default limit for one match. */
#define PRETOK_FIRST_LIMIT 32u /* the real patterns (GPT-2, Llama 3, Qwen) take a few units a byte */
#define PRETOK_MATCH_LIMIT 10000000u
#define PRETOK_BUDGET_BASE 65536.0
#define PRETOK_BUDGET_PER_BYTE 256.0
/* 0, or -1 when a Split pattern fails on the text (its work budget, or PCRE2's limits) */
int pretok_split(const PreTokenizer *p, const char *s, size_t len, int first_segment, ByteBuf *buf, IntVec *spans);

#endif
