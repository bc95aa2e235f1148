/* template.c: the chat templates of template.h, written from the rendered
 * strings in formats.md d. */
#include "template/template.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "tokenizer/buffers.h"

static const char *const NAMES[] = {"none", "chatml", "llama3", "mistral", "zephyr", "llama2"};

int template_parse(const char *name, TemplateKind *out) {
    for (int i = 0; i < (int)PPA_ARRAY_LEN(NAMES); i++)
        if (!strcmp(name, NAMES[i])) return *out = (TemplateKind)i, 0;
    if (!strcmp(name, "raw")) return *out = TEMPLATE_NONE, 0;
    return -1;
}

const char *template_name(TemplateKind k) { return NAMES[k]; }

TemplateKind template_detect(const Tokenizer *t) {
    static const struct {
        const char *marker;
        TemplateKind kind;
    } SIGNS[] = {{"<|im_start|>", TEMPLATE_CHATML}, {"<|start_header_id|>", TEMPLATE_LLAMA3},
                 {"<<SYS>>", TEMPLATE_LLAMA2},     {"<|user|>", TEMPLATE_ZEPHYR},
                 {"[INST]", TEMPLATE_MISTRAL}};
    for (size_t i = 0; t && i < PPA_ARRAY_LEN(SIGNS); i++)
        if (tokenizer_token_id(t, SIGNS[i].marker) >= 0 && tokenizer_is_special(t, tokenizer_token_id(t, SIGNS[i].marker)))
            return SIGNS[i].kind;
    return TEMPLATE_NONE;
}

int template_check(const ChatMessage *m, int n, int add_generation_prompt, char *err, size_t errlen) {
    int expect_user = 1;
    for (int i = 0; i < n; i++) {
        const char *r = m[i].role;
        if (!strcmp(r, "system") && i == 0) continue;
        const char *want = expect_user ? "user" : "assistant";
        if (strcmp(r, want)) {
            snprintf(err, errlen, "message %d has role \"%s\" where \"%s\" is expected%s", i, r, want,
                     !strcmp(r, "system") ? " (a system turn may only come first)" : "");
            return -1;
        }
        expect_user = !expect_user;
    }
    if (add_generation_prompt && expect_user) {
        snprintf(err, errlen, "the conversation must end with a user turn");
        return -1;
    }
    return 0;
}

void masked_put(MaskedText *m, const char *s, size_t n, int message_text) {
    static const unsigned char FLAG[2][64] = {{0}, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                                    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                                    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}};
    bytebuf_put(&m->text, s, n);
    for (size_t i = 0; i < n; i += 64) bytebuf_put(&m->mask, FLAG[!!message_text], n - i < 64 ? n - i : 64);
    if (!n) bytebuf_put(&m->mask, "", 0);
}

void masked_free(MaskedText *m) {
    free(m->text.s), free(m->mask.s);
    memset(m, 0, sizeof *m);
}

typedef MaskedText Out;

/* the template's own text, and a message's */
static void put(Out *b, const char *s) { masked_put(b, s, strlen(s), 0); }
static void put_content(Out *b, const char *s) { masked_put(b, s, strlen(s), 1); }

/* Python's str.strip() for the ASCII whitespace the templates meet */
static void put_stripped(Out *b, const char *s) {
    size_t len = strlen(s), i = 0;
    while (i < len && strchr(" \t\n\r\v\f", s[i])) i++;
    while (len > i && strchr(" \t\n\r\v\f", s[len - 1])) len--;
    masked_put(b, s + i, len - i, 1);
}

static void render_chatml(Out *b, const ChatMessage *m, int n, int gen) {
    for (int i = 0; i < n; i++) {
        put(b, "<|im_start|>");
        put(b, m[i].role);
        put(b, "\n");
        put_content(b, m[i].content);
        put(b, "<|im_end|>\n");
    }
    if (gen) put(b, "<|im_start|>assistant\n");
}

static void render_llama3(Out *b, const ChatMessage *m, int n, int gen) {
    put(b, "<|begin_of_text|>");
    for (int i = 0; i < n; i++) {
        put(b, "<|start_header_id|>");
        put(b, m[i].role);
        put(b, "<|end_header_id|>\n\n");
        put_stripped(b, m[i].content);
        put(b, "<|eot_id|>");
    }
    if (gen) put(b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

/* Mistral Instruct v0.1: a system turn is folded into the first user turn */
static void render_mistral(Out *b, const ChatMessage *m, int n) {
    const char *sys = n && !strcmp(m[0].role, "system") ? m[0].content : NULL;
    put(b, "<s>");
    for (int i = sys ? 1 : 0; i < n; i++) {
        if (!strcmp(m[i].role, "user")) {
            put(b, "[INST] ");
            if (sys && i == 1) put_content(b, sys), put(b, "\n\n");
            put_content(b, m[i].content);
            put(b, " [/INST]");
        } else {
            put_content(b, m[i].content);
            put(b, "</s>");
        }
    }
}

static void render_zephyr(Out *b, const ChatMessage *m, int n, int gen) {
    for (int i = 0; i < n; i++) {
        put(b, "<|");
        put(b, m[i].role);
        put(b, "|>\n");
        put_content(b, m[i].content);
        put(b, "</s>\n");
    }
    if (gen) put(b, "<|assistant|>\n");
}

static void render_llama2(Out *b, const ChatMessage *m, int n) {
    const char *sys = n && !strcmp(m[0].role, "system") ? m[0].content : NULL;
    for (int i = sys ? 1 : 0; i < n; i++) {
        if (!strcmp(m[i].role, "user")) {
            put(b, "<s>[INST] ");
            if (sys && i == 1) put(b, "<<SYS>>\n"), put_content(b, sys), put(b, "\n<</SYS>>\n\n");
            put_content(b, m[i].content);
            put(b, " [/INST]");
        } else {
            put(b, " ");
            put_content(b, m[i].content);
            put(b, " </s>");
        }
    }
}

/* roles are checked (template_check) before: they are the template's text */
void template_render_masked(TemplateKind k, const ChatMessage *m, int n, int gen, MaskedText *b) {
    masked_put(b, "", 0, 0);
    switch (k) {
    case TEMPLATE_CHATML: render_chatml(b, m, n, gen); break;
    case TEMPLATE_LLAMA3: render_llama3(b, m, n, gen); break;
    case TEMPLATE_MISTRAL: render_mistral(b, m, n); break;
    case TEMPLATE_ZEPHYR: render_zephyr(b, m, n, gen); break;
    case TEMPLATE_LLAMA2: render_llama2(b, m, n); break;
    case TEMPLATE_NONE: /* raw text: the contents as given */
        for (int i = 0; i < n; i++) put_content(b, m[i].content);
        break;
    }
}

void template_response_masked(TemplateKind k, const char *answer, MaskedText *b) {
    masked_put(b, "", 0, 0);
    switch (k) {
    case TEMPLATE_CHATML: put_content(b, answer), put(b, "<|im_end|>"); break;
    case TEMPLATE_LLAMA3: put_stripped(b, answer), put(b, "<|eot_id|>"); break;
    case TEMPLATE_MISTRAL:
    case TEMPLATE_ZEPHYR: put_content(b, answer), put(b, "</s>"); break;
    case TEMPLATE_LLAMA2: put(b, " "), put_content(b, answer), put(b, " </s>"); break;
    case TEMPLATE_NONE: put_content(b, answer); break;
    }
}

char *template_render(TemplateKind k, const ChatMessage *m, int n, int gen) {
    MaskedText b = {0};
    template_render_masked(k, m, n, gen, &b);
    free(b.mask.s);
    return b.text.s;
}

char *template_response(TemplateKind k, const char *answer) {
    MaskedText b = {0};
    template_response_masked(k, answer, &b);
    free(b.mask.s);
    return b.text.s;
}

int template_has_bos(TemplateKind k) { return k == TEMPLATE_LLAMA3 || k == TEMPLATE_MISTRAL || k == TEMPLATE_LLAMA2; }
