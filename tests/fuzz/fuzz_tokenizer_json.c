/* fuzz_tokenizer_json.c: tokenizer.json loading (tokenizer/tokenizer.h),
 * then encoding a fixed text (ASCII, an added token, UTF-8, digits, runs of
 * spaces) with and without the post-processor, and decoding the ids back. */
#include "fuzz_common.h"
#include "tokenizer/tokenizer.h"

static const char TEXT[] = "Hello, world!  It's 2024:\n\tcaf\xc3\xa9 \xe2\x96\x81x <|im_end|>"
                           "\xf0\x9f\x98\x80  <s></s> 12345 don't";

static char json_path[600];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fuzz_path(json_path, sizeof json_path, "tokenizer.json");
    return 0;
}

static void round_trip(Tokenizer *t, int add_special) {
    int *ids = NULL;
    char err[1024];
    long n = tokenizer_encode(t, TEXT, sizeof TEXT - 1, add_special, &ids, err, sizeof err);
    if (n < 0) return;
    for (long i = 0; i < n; i++) {
        FUZZ_ASSERT(ids[i] >= 0 && ids[i] < tokenizer_size(t), "id %d outside [0, %d)", ids[i], tokenizer_size(t));
        (void)tokenizer_token(t, ids[i]), (void)tokenizer_is_special(t, ids[i]);
    }
    for (int skip = 0; skip < 2; skip++) {
        size_t len;
        char *s = tokenizer_decode(t, ids, (size_t)n, skip, &len);
        FUZZ_ASSERT(s && s[len] == 0, "decode: no NUL-terminated text");
        free(s);
    }
    free(ids);
    int odd[] = {-1, tokenizer_size(t), 0x7fffffff}; /* unknown ids are skipped */
    size_t len;
    free(tokenizer_decode(t, odd, 3, 0, &len));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_write(json_path, data, size);
    char err[1024];
    Tokenizer *t = tokenizer_load(json_path, err, sizeof err);
    if (!t) return 0;
    round_trip(t, 0);
    round_trip(t, 1);
    (void)tokenizer_has_added_token(t, TEXT, sizeof TEXT - 1);
    (void)tokenizer_token_id(t, "<|im_end|>"), (void)tokenizer_bos_id(t), (void)tokenizer_family(t);
    tokenizer_free(t);
    return 0;
}
