/* fuzz_pair_template.c: the pair judge's template files
 * (judge/pair_judge.h pair_template_load). An accepted template must render
 * to its literal text plus the three values, each once. */
#include "judge/pair_judge.h"
#include "fuzz_common.h"

static char path[600];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fuzz_path(path, sizeof path, "template.txt");
    return 0;
}

static size_t count(const char *s, const char *sub) {
    size_t n = 0;
    for (const char *p = strstr(s, sub); p; p = strstr(p + 1, sub)) n++;
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_write(path, data, size);
    char err[2048];
    PairTemplate *t = pair_template_load(path, err, sizeof err);
    if (!t) {
        FUZZ_ASSERT(strstr(err, path) != NULL, "a refusal without the file name: %s", err);
        return 0;
    }
    /* marked values: the literal text may hold a marker too, so each must appear once more
     * than in the rendering with empty values (the markers cannot overlap across a boundary) */
    size_t n0, n1;
    char *empty = pair_template_render(t, "", "", "", &n0, NULL);
    char *full = pair_template_render(t, "\x01P\x02", "\x01" "A\x02", "\x01" "B\x02", &n1, NULL);
    FUZZ_ASSERT(n1 == n0 + 9 && strlen(full) == n1 && strlen(empty) == n0, "rendered lengths %zu, %zu", n0, n1);
    FUZZ_ASSERT(count(full, "\x01P\x02") == count(empty, "\x01P\x02") + 1, "the prompt is not there once");
    FUZZ_ASSERT(count(full, "\x01" "A\x02") == count(empty, "\x01" "A\x02") + 1, "response A is not there once");
    FUZZ_ASSERT(count(full, "\x01" "B\x02") == count(empty, "\x01" "B\x02") + 1, "response B is not there once");
    FUZZ_ASSERT(!memchr(empty, '\r', n0), "a carriage return accepted");
    free(empty), free(full);
    pair_template_free(t);
    return 0;
}
