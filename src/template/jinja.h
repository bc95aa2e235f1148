/* jinja.h: the subset of Jinja that chat templates use, interpreted in C
 * with transformers' settings (trim_blocks, lstrip_blocks, one trailing
 * newline dropped, loop controls, raise_exception, strftime_now, its tojson).
 *
 * Covered: text, {{ }}, {# #}, whitespace control (- and +); if / elif /
 * else, for (loop.*, an if filter, else, break, continue, tuple targets), set
 * (names, tuples, namespace attributes, blocks), generation blocks; literals
 * (strings, numbers, lists, tuples, dicts), subscripts and slices,
 * attributes, calls with keywords, + - * / // % ** ~, comparisons, in, not
 * in, and, or, not, is [not] TEST, x if c else y; the filters, tests, string
 * and dict methods and global functions of jinja_builtins.c.
 * Refused when the template is read, naming the construct and its line:
 * macros, call and filter blocks, include / import / extends / block, raw,
 * with, recursive loops, unknown tags, filters, tests and methods, and
 * malformed templates. Printing a list or dict (Python's repr) and %
 * string formatting are refused when rendered.
 *
 * Every byte of the output carries a flag: 1 when it comes from a message's
 * content (through slices, strips, concatenations ...), 0 when it is the
 * template's own text. The tokenizer uses it to keep special-token strings
 * of message text as text. */
#ifndef PPA_JINJA_H
#define PPA_JINJA_H

#include <stddef.h>

#include "tokenizer/buffers.h"
#include "template/template.h"

typedef struct JinjaTemplate JinjaTemplate;

/* Parses src. NULL with "line N: problem" in err. */
JinjaTemplate *jinja_parse(const char *src, size_t len, char *err, size_t errlen);
void jinja_free(JinjaTemplate *t);
/* The time strftime_now renders: SOURCE_DATE_EPOCH (decimal seconds, 0 to 9999-12-31) when set, else a fixed day;
 * 0, or -1 with why in err (naming the variable) when it is not such a number. */
int jinja_source_date(long long *out, char *err, size_t errlen);
/* A render evaluates at most BASE + PER_MESSAGE x messages + PER_BYTE x the bytes of their contents (and the
 * template's variables) nodes, so that rendering a data set costs at most a fixed multiple of its size; real chat
 * templates take some hundreds of steps a message. Past it the render fails naming the bound. */
#define JINJA_STEPS_BASE 200000L
#define JINJA_STEPS_PER_MESSAGE 20000L
#define JINJA_STEPS_PER_BYTE 100L

typedef struct {
    const ChatMessage *messages; /* as dicts {"role", "content"}; content is message text */
    int n_messages;
    int add_generation_prompt;
    const char *const *names; /* further string variables (bos_token, eos_token, ...) */
    const char *const *values;
    int n_vars;
} JinjaChat;

/* Renders: text appended to out, one flag byte per text byte to mask.
 * 0, or -1 with "line N: problem" (raise_exception's message included). */
int jinja_render(const JinjaTemplate *t, const JinjaChat *chat, ByteBuf *out, ByteBuf *mask, char *err, size_t errlen);

#endif
