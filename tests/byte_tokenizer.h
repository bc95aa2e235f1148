/* byte_tokenizer.h: a byte-level tokenizer.json for tests: ids 0..255 are the
 * bytes (GPT-2's bytes_to_unicode characters), no merges, then the added
 * tokens given as JSON objects ("{\"id\": 256, \"content\": ...}, ..."). */
#ifndef PPA_TEST_BYTE_TOKENIZER_H
#define PPA_TEST_BYTE_TOKENIZER_H

#include <stdio.h>

static inline void write_byte_tokenizer(const char *path, const char *added) {
    FILE *f = fopen(path, "w");
    if (!f) return;
    fprintf(f, "{\"added_tokens\": [%s], \"normalizer\": null,"
               " \"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": true},"
               " \"post_processor\": null, \"decoder\": {\"type\": \"ByteLevel\"},"
               " \"model\": {\"type\": \"BPE\", \"merges\": [], \"vocab\": {",
            added);
    for (int b = 0; b < 256; b++) {
        int printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174, k = 0;
        for (int x = 0; x < b && !printable; x++) k += !((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || x >= 174);
        fprintf(f, "%s\"\\u%04x\": %d", b ? ", " : "", printable ? (unsigned)b : 256u + (unsigned)k, b);
    }
    fputs("}}}", f);
    fclose(f);
}

#endif
