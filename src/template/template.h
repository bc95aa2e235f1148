/* template.h: chat templates. A run's template (ChatTemplate) is either one
 * of ppa's own, written as code: chatml (Qwen2, SmolLM2), llama3, mistral,
 * zephyr, llama2 and none (raw text), chosen with --template NAME; or the
 * tokenizer's own Jinja chat_template, interpreted by jinja.h exactly or
 * refused. A prompt renders with the generation prompt; the scored response
 * is exactly what follows it: the assistant text and one end-of-turn token
 * (formats.md d). Rendered text carries a flag per byte marking message
 * text, which the tokenizer never turns into control tokens. */
#ifndef PPA_TEMPLATE_H
#define PPA_TEMPLATE_H

#include "tokenizer/buffers.h"
#include "tokenizer/tokenizer.h"

typedef enum { TEMPLATE_NONE, TEMPLATE_CHATML, TEMPLATE_LLAMA3, TEMPLATE_MISTRAL, TEMPLATE_ZEPHYR, TEMPLATE_LLAMA2 } TemplateKind;

typedef struct {
    const char *role; /* "system", "user" or "assistant" */
    const char *content;
} ChatMessage;

/* Name ("chatml", "llama3", "mistral", "zephyr", "llama2", "none" or "raw") to kind; -1 if unknown. */
int template_parse(const char *name, TemplateKind *out);
const char *template_name(TemplateKind k);

/* The code template whose special tokens the tokenizer has (for a tokenizer
 * without a chat template of its own); none if nothing fits. */
TemplateKind template_detect(const Tokenizer *t);

/* Checks roles (system only first, alternating user/assistant, ending with a
 * user turn when add_generation_prompt). Returns 0, or -1 with err. */
int template_check(const ChatMessage *m, int n, int add_generation_prompt, char *err, size_t errlen);

/* Renders the conversation (malloc'd). With add_generation_prompt the text
 * ends where the assistant's answer starts. */
char *template_render(TemplateKind k, const ChatMessage *m, int n, int add_generation_prompt);

/* What follows the generation prompt for an answer, and is scored: the
 * answer and one end-of-turn marker ("<|im_end|>", "<|eot_id|>", "</s>"),
 * without the newline some templates put after it. For none it is the
 * answer alone: the caller appends the tokenizer's EOS token once. */
char *template_response(TemplateKind k, const char *answer);

/* The same with the message-text flags (MaskedText below), appended to out. */
typedef struct MaskedText MaskedText;
void template_render_masked(TemplateKind k, const ChatMessage *m, int n, int add_generation_prompt, MaskedText *out);
void template_response_masked(TemplateKind k, const char *answer, MaskedText *out);

/* 1 if the rendered text already starts with BOS, so it must be encoded
 * without the tokenizer's post-processor (exactly one BOS). */
int template_has_bos(TemplateKind k);

/* ---- the template of a run ---- */

/* Text with a flag per byte (mask.s[i] = 1: message text). */
struct MaskedText {
    ByteBuf text, mask;
};
void masked_put(MaskedText *m, const char *s, size_t n, int message_text);
void masked_free(MaskedText *m);

typedef struct ChatTemplate ChatTemplate;

/* The template a run renders with; path is the tokenizer.json or its folder,
 * t the tokenizer loaded from it (NULL: none, so nothing is rendered),
 * which must outlive the template.
 *   name given: that code template, refused (naming them) when t lacks one
 *     of its special tokens, whose text would otherwise be split into
 *     ordinary tokens;
 *   else the folder's own: chat_template.jinja, else tokenizer_config.json's
 *     chat_template (a string, or in a list the entry named "default", as
 *     transformers picks it), refused naming the file, line and construct
 *     when ppa's renderer lacks something or the scored response cannot be
 *     cut cleanly from its renderings (checked on a probe conversation);
 *   else the code template detected from t's special tokens.
 * NULL with the reason in err. */
ChatTemplate *chat_template_open(const char *name, const char *path, const Tokenizer *t, char *err, size_t errlen);
ChatTemplate *chat_template_code(TemplateKind k); /* a code template, unchecked */
void chat_template_free(ChatTemplate *c);
/* "chatml" ... "none", or "jinja-" and 16 hex digits of the template's hash. A NULL template is none. */
const char *chat_template_name(const ChatTemplate *c);
int chat_template_is_none(const ChatTemplate *c);
/* The end-of-turn text that ends a scored response ("<|im_end|>" ...); NULL for none. */
const char *chat_template_eot(const ChatTemplate *c);
/* Renders the conversation into out (cleared first). 0, or -1 with err. */
int chat_template_render(const ChatTemplate *c, const ChatMessage *m, int n, int add_generation_prompt, MaskedText *out,
                         char *err, size_t errlen);
/* The scored response for answer after the conversation m[0..n) whose
 * rendering with the generation prompt is prompt: for a Jinja template, what
 * follows the prompt in the rendering with the answer, up to and with the
 * end-of-turn text after the answer. 0, or -1 with err. */
int chat_template_response(const ChatTemplate *c, const ChatMessage *m, int n, const MaskedText *prompt, const char *answer,
                           MaskedText *out, char *err, size_t errlen);
/* 1 when the tokenizer's post-processor is to run on this rendered prompt:
 * not when the template already wrote BOS (exactly one BOS). */
int chat_template_add_special(const ChatTemplate *c, const MaskedText *prompt);

#endif
