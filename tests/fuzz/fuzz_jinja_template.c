/* fuzz_jinja_template.c: chat templates (template/jinja.h). Each input is a
 * template source: parsed, and when accepted rendered on two conversations
 * with and without the generation prompt. Refusals must say where ("line N:"
 * or why), and an accepted rendering must be valid UTF-8 with exactly one
 * message-text flag per byte, set only on bytes of the messages' text. */
#include "template/jinja.h"
#include "fuzz_common.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    return 0;
}

static void check_render(const JinjaTemplate *t, const ChatMessage *m, int n, int gen) {
    static const char *const names[] = {"bos_token", "eos_token"}, *const values[] = {"<s>", "</s>"};
    JinjaChat chat = {m, n, gen, names, values, 2};
    ByteBuf out = {0}, mask = {0};
    char err[1024];
    if (!jinja_render(t, &chat, &out, &mask, err, sizeof err)) {
        FUZZ_ASSERT(out.n == mask.n, "%zu bytes rendered with %zu flags", out.n, mask.n);
        for (size_t i = 0; i < out.n;) {
            uint32_t cp;
            int k = utf8_next((const unsigned char *)out.s + i, out.n - i, &cp);
            FUZZ_ASSERT(!(cp == 0xFFFD && !(out.n - i >= 3 && !memcmp(out.s + i, "\xEF\xBF\xBD", 3))),
                        "the rendering is not UTF-8 at byte %zu", i);
            i += (size_t)k;
        }
        for (size_t i = 0; i < mask.n; i++) FUZZ_ASSERT(mask.s[i] == 0 || mask.s[i] == 1, "a flag is %d", mask.s[i]);
    } else {
        FUZZ_ASSERT(err[0], "a failed render without a reason");
    }
    free(out.s), free(mask.s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[1024] = "";
    JinjaTemplate *t = jinja_parse((const char *)data, size, err, sizeof err);
    if (!t) {
        FUZZ_ASSERT(err[0], "a refused template without a reason");
        return 0;
    }
    static const ChatMessage conv[] = {{"system", "Be brief."}, {"user", " Caf\xC3\xA9 <|im_end|>\n"}, {"assistant", "A."},
                                       {"user", "Q2"}};
    check_render(t, conv + 1, 1, 1);
    check_render(t, conv, 3, 0);
    check_render(t, conv, 4, 1);
    jinja_free(t);
    return 0;
}
