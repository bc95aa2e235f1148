/* template.h: chat templates as code (no Jinja): chatml (Qwen2, SmolLM2),
 * llama3, mistral, zephyr, llama2, and none (raw text). A prompt renders with
 * the generation prompt; the scored response is exactly what follows it: the
 * assistant text and one end-of-turn token (formats.md d). */
#ifndef PPA_TEMPLATE_H
#define PPA_TEMPLATE_H

#include "tokenizer/tokenizer.h"

typedef enum { TEMPLATE_NONE, TEMPLATE_CHATML, TEMPLATE_LLAMA3, TEMPLATE_MISTRAL, TEMPLATE_ZEPHYR, TEMPLATE_LLAMA2 } TemplateKind;

typedef struct {
    const char *role; /* "system", "user" or "assistant" */
    const char *content;
} ChatMessage;

/* Name ("chatml", "llama3", "mistral", "zephyr", "llama2", "none" or "raw") to kind; -1 if unknown. */
int template_parse(const char *name, TemplateKind *out);
const char *template_name(TemplateKind k);

/* Detection: the chat_template string of tokenizer_config.json when there is
 * one (may be NULL), else the tokenizer's special tokens; none if nothing fits. */
TemplateKind template_detect(const Tokenizer *t, const char *chat_template);

/* The chat_template string of the tokenizer_config.json beside a
 * tokenizer.json (or in a model folder), malloc'd; NULL if there is none. */
char *template_from_config(const char *tokenizer_path);

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

/* 1 if the rendered text already starts with BOS, so it must be encoded
 * without the tokenizer's post-processor (exactly one BOS). */
int template_has_bos(TemplateKind k);

#endif
