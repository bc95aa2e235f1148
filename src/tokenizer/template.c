/* template.c: the chat templates of template.h, written from the rendered
 * strings in formats.md d. */
#include "tokenizer/template.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

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

TemplateKind template_detect(const Tokenizer *t, const char *chat_template) {
    static const struct {
        const char *marker;
        TemplateKind kind;
    } SIGNS[] = {{"<|im_start|>", TEMPLATE_CHATML}, {"<|start_header_id|>", TEMPLATE_LLAMA3},
                 {"<<SYS>>", TEMPLATE_LLAMA2},     {"<|user|>", TEMPLATE_ZEPHYR},
                 {"[INST]", TEMPLATE_MISTRAL}};
    for (size_t i = 0; chat_template && i < PPA_ARRAY_LEN(SIGNS); i++)
        if (strstr(chat_template, SIGNS[i].marker)) return SIGNS[i].kind;
    for (size_t i = 0; t && i < PPA_ARRAY_LEN(SIGNS); i++)
        if (tokenizer_token_id(t, SIGNS[i].marker) >= 0 && tokenizer_is_special(t, tokenizer_token_id(t, SIGNS[i].marker)))
            return SIGNS[i].kind;
    return TEMPLATE_NONE;
}

char *template_from_config(const char *tokenizer_path) {
    char path[4096];
    struct stat st;
    if (!stat(tokenizer_path, &st) && S_ISDIR(st.st_mode)) {
        snprintf(path, sizeof path, "%s/tokenizer_config.json", tokenizer_path);
    } else {
        const char *slash = strrchr(tokenizer_path, '/');
        snprintf(path, sizeof path, "%.*stokenizer_config.json", slash ? (int)(slash - tokenizer_path + 1) : 0,
                 tokenizer_path);
    }
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    ByteBuf b = {0};
    char chunk[1 << 16];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) bytebuf_put(&b, chunk, n);
    fclose(f);
    cJSON *root = b.s ? cJSON_ParseWithLength(b.s, b.n) : NULL;
    free(b.s);
    const cJSON *tpl = cJSON_GetObjectItemCaseSensitive(root, "chat_template");
    char *out = NULL;
    if (cJSON_IsString(tpl)) out = strdup(tpl->valuestring);
    for (const cJSON *it = cJSON_IsArray(tpl) ? tpl->child : NULL; it && !out; it = it->next) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(it, "name"), *t = cJSON_GetObjectItemCaseSensitive(it, "template");
        if (cJSON_IsString(name) && !strcmp(name->valuestring, "default") && cJSON_IsString(t)) out = strdup(t->valuestring);
    }
    cJSON_Delete(root);
    return out;
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

static void put(ByteBuf *b, const char *s) { bytebuf_put(b, s, strlen(s)); }

/* Python's str.strip() for the ASCII whitespace the templates meet */
static void put_stripped(ByteBuf *b, const char *s) {
    size_t len = strlen(s), i = 0;
    while (i < len && strchr(" \t\n\r\v\f", s[i])) i++;
    while (len > i && strchr(" \t\n\r\v\f", s[len - 1])) len--;
    bytebuf_put(b, s + i, len - i);
}

static void render_chatml(ByteBuf *b, const ChatMessage *m, int n, int gen) {
    for (int i = 0; i < n; i++) {
        put(b, "<|im_start|>");
        put(b, m[i].role);
        put(b, "\n");
        put(b, m[i].content);
        put(b, "<|im_end|>\n");
    }
    if (gen) put(b, "<|im_start|>assistant\n");
}

static void render_llama3(ByteBuf *b, const ChatMessage *m, int n, int gen) {
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
static void render_mistral(ByteBuf *b, const ChatMessage *m, int n) {
    const char *sys = n && !strcmp(m[0].role, "system") ? m[0].content : NULL;
    put(b, "<s>");
    for (int i = sys ? 1 : 0; i < n; i++) {
        if (!strcmp(m[i].role, "user")) {
            put(b, "[INST] ");
            if (sys && i == 1) put(b, sys), put(b, "\n\n");
            put(b, m[i].content);
            put(b, " [/INST]");
        } else {
            put(b, m[i].content);
            put(b, "</s>");
        }
    }
}

static void render_zephyr(ByteBuf *b, const ChatMessage *m, int n, int gen) {
    for (int i = 0; i < n; i++) {
        put(b, "<|");
        put(b, m[i].role);
        put(b, "|>\n");
        put(b, m[i].content);
        put(b, "</s>\n");
    }
    if (gen) put(b, "<|assistant|>\n");
}

static void render_llama2(ByteBuf *b, const ChatMessage *m, int n) {
    const char *sys = n && !strcmp(m[0].role, "system") ? m[0].content : NULL;
    for (int i = sys ? 1 : 0; i < n; i++) {
        if (!strcmp(m[i].role, "user")) {
            put(b, "<s>[INST] ");
            if (sys && i == 1) put(b, "<<SYS>>\n"), put(b, sys), put(b, "\n<</SYS>>\n\n");
            put(b, m[i].content);
            put(b, " [/INST]");
        } else {
            put(b, " ");
            put(b, m[i].content);
            put(b, " </s>");
        }
    }
}

char *template_render(TemplateKind k, const ChatMessage *m, int n, int gen) {
    ByteBuf b = {0};
    bytebuf_put(&b, "", 0);
    switch (k) {
    case TEMPLATE_CHATML: render_chatml(&b, m, n, gen); break;
    case TEMPLATE_LLAMA3: render_llama3(&b, m, n, gen); break;
    case TEMPLATE_MISTRAL: render_mistral(&b, m, n); break;
    case TEMPLATE_ZEPHYR: render_zephyr(&b, m, n, gen); break;
    case TEMPLATE_LLAMA2: render_llama2(&b, m, n); break;
    case TEMPLATE_NONE: /* raw text: the contents as given */
        for (int i = 0; i < n; i++) put(&b, m[i].content);
        break;
    }
    return b.s;
}

char *template_response(TemplateKind k, const char *answer) {
    ByteBuf b = {0};
    bytebuf_put(&b, "", 0);
    switch (k) {
    case TEMPLATE_CHATML: put(&b, answer), put(&b, "<|im_end|>"); break;
    case TEMPLATE_LLAMA3: put_stripped(&b, answer), put(&b, "<|eot_id|>"); break;
    case TEMPLATE_MISTRAL:
    case TEMPLATE_ZEPHYR: put(&b, answer), put(&b, "</s>"); break;
    case TEMPLATE_LLAMA2: put(&b, " "), put(&b, answer), put(&b, " </s>"); break;
    case TEMPLATE_NONE: put(&b, answer); break;
    }
    return b.s;
}

int template_has_bos(TemplateKind k) { return k == TEMPLATE_LLAMA3 || k == TEMPLATE_MISTRAL || k == TEMPLATE_LLAMA2; }
