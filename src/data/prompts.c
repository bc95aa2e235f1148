/* prompts.c: generation prompts from JSON Lines or a JSON array (prompts.h). */
#include "data/prompts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/common.h"
#include "io/json.h"
#include "io/jsonl.h"
#include "io/records.h"

/* the aliases of rows.c (formats.md a.2) */
static const char *const PROMPT[] = {"prompt", "instruction", "question", "query", NULL};
static const char *const ID[] = {"id", "prompt_id", NULL};
static const char *const OTHER[] = {"messages", "turns", "system", "template", "prompt_ids", NULL};

static int listed(const char *const *names, const char *key) {
    for (int i = 0; names[i]; i++)
        if (!strcmp(names[i], key)) return 1;
    return 0;
}

/* The field under its canonical name or one alias; two aliases at once are an error. */
static int pick(const cJSON *j, const char *const *names, const cJSON **out, char *err, size_t errlen) {
    *out = cJSON_GetObjectItemCaseSensitive(j, names[0]);
    if (*out) return 0;
    const char *found = NULL;
    for (int i = 1; names[i]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, names[i]);
        if (!v) continue;
        if (found) return snprintf(err, errlen, "fields \"%s\" and \"%s\" both give the %s", found, names[i], names[0]), -1;
        found = names[i], *out = v;
    }
    return 0;
}

static cJSON *echo_fields(const cJSON *j) {
    cJSON *e = cJSON_CreateObject();
    for (const cJSON *it = j->child; it; it = it->next)
        if (listed(PROMPT, it->string) || listed(ID, it->string) || listed(OTHER, it->string))
            cJSON_AddItemToObject(e, it->string, cJSON_Duplicate(it, 1));
    return e;
}

static int read_ids(const cJSON *a, PromptRow *r, const PromptOptions *o, char *err, size_t errlen) {
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) < 1)
        return snprintf(err, errlen, "\"prompt_ids\" must be a non-empty array of token ids"), -1;
    r->len = cJSON_GetArraySize(a);
    r->ids = xmalloc(sizeof(int) * (size_t)r->len);
    int i = 0;
    for (const cJSON *it = a->child; it; it = it->next, i++) {
        double v = cJSON_IsNumber(it) ? it->valuedouble : -1.0; /* range first: no float-to-int overflow */
        if (!(v >= 0.0 && v < o->vocab_size) || v != (double)(int)v)
            return snprintf(err, errlen, "\"prompt_ids\"[%d] is not a token id below %d", i, o->vocab_size), -1;
        r->ids[i] = (int)v;
    }
    r->pretokenized = 1;
    return 0;
}

/* the conversation of a text line: messages, or system + prompt */
static int read_conv(const cJSON *j, ChatMessage **m, int *n, char *err, size_t errlen) {
    const cJSON *prompt, *msgs = cJSON_GetObjectItemCaseSensitive(j, "messages");
    if (pick(j, PROMPT, &prompt, err, errlen)) return -1;
    const cJSON *turns = cJSON_GetObjectItemCaseSensitive(j, "turns");
    if (turns && (prompt || msgs))
        return snprintf(err, errlen, "both \"turns\" and \"%s\" give the prompt", prompt ? prompt->string : "messages"), -1;
    if (turns) prompt = turns->child; /* checked by read_turns: the first user turn */
    if (cJSON_IsArray(prompt)) msgs = prompt, prompt = NULL; /* a message list under "prompt" */
    if (msgs && !cJSON_IsArray(msgs)) return snprintf(err, errlen, "\"messages\" must be a list of messages"), -1;
    if (prompt && msgs) return snprintf(err, errlen, "both \"prompt\" and \"messages\" give the prompt"), -1;
    if (prompt && !cJSON_IsString(prompt)) return snprintf(err, errlen, "\"prompt\" must be a string or a message list"), -1;
    if (!prompt && !msgs) return snprintf(err, errlen, "no prompt: expected \"prompt\", \"messages\" or \"prompt_ids\""), -1;
    *m = xcalloc((size_t)(msgs ? cJSON_GetArraySize(msgs) : 0) + 2, sizeof(ChatMessage));
    *n = 0;
    if (prompt) {
        const cJSON *sys = cJSON_GetObjectItemCaseSensitive(j, "system"); /* as rows.c: with a string prompt only */
        if (cJSON_IsString(sys)) (*m)[(*n)++] = (ChatMessage){"system", sys->valuestring};
        (*m)[(*n)++] = (ChatMessage){"user", prompt->valuestring};
        return 0;
    }
    for (const cJSON *it = msgs->child; it; it = it->next, (*n)++) {
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(it, "role"), *content = cJSON_GetObjectItemCaseSensitive(it, "content");
        if (!cJSON_IsString(role) || !cJSON_IsString(content))
            return snprintf(err, errlen, "message %d needs string \"role\" and \"content\"", *n), -1;
        (*m)[*n] = (ChatMessage){role->valuestring, content->valuestring};
    }
    return 0;
}

/* MT-Bench's "turns": a non-empty list of strings */
static int read_turns(const cJSON *j, PromptRow *r, char *err, size_t errlen) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "turns");
    if (!t) return 0;
    if (!cJSON_IsArray(t) || !t->child)
        return snprintf(err, errlen, "\"turns\" must be a non-empty list of strings (the user's turns)"), -1;
    int i = 0;
    for (const cJSON *it = t->child; it; it = it->next, i++)
        if (!cJSON_IsString(it)) return snprintf(err, errlen, "\"turns\"[%d] must be a string", i), -1;
    r->n_turns = i;
    return 0;
}

int prompts_encode(const PromptOptions *o, int template_none, const ChatMessage *m, int n, int **ids, int *len, char *err,
                   size_t errlen) {
    const ChatTemplate *tpl = template_none ? NULL : o->tpl;
    MaskedText text = {0};
    *ids = NULL, *len = 0;
    if (template_check(m, n, 1, err, errlen) || chat_template_render(tpl, m, n, 1, &text, err, errlen)) {
        masked_free(&text);
        return -1;
    }
    long got = tokenizer_encode_masked(o->tok, text.text.s, o->special_in_text ? NULL : (const unsigned char *)text.mask.s,
                                       text.text.n, chat_template_add_special(tpl, &text), ids, err, errlen);
    masked_free(&text);
    if (got < 0) return -1;
    if (got < 1) snprintf(err, errlen, "the prompt has no tokens");
    else if (got >= o->max_len)
        snprintf(err, errlen, "the prompt has %ld tokens: the model allows %d in all, and one must be left to generate",
                 got, o->max_len);
    if (got < 1 || got >= o->max_len) return free(*ids), *ids = NULL, -1;
    *len = (int)got;
    return 0;
}

static int read_text(const cJSON *j, PromptRow *r, const PromptOptions *o, char *err, size_t errlen) {
    if (!o->tok && o->model_dir)
        return ppa_fail(err, errlen, "a text prompt needs the model's tokenizer, and the model folder %s has no "
                        "tokenizer.json (a line of token ids, \"prompt_ids\", needs none)", o->model_dir);
    if (!o->tok) return snprintf(err, errlen, "a text prompt needs the model's tokenizer (or use \"prompt_ids\")"), -1;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "template");
    r->template_none = cJSON_IsString(t) && !strcmp(t->valuestring, "none");
    ChatMessage *m = NULL;
    int n = 0, rc = read_turns(j, r, err, errlen) || read_conv(j, &m, &n, err, errlen) ||
                    prompts_encode(o, r->template_none, m, n, &r->ids, &r->len, err, errlen) ? -1 : 0;
    free(m);
    return rc;
}

static int read_prompt(const char *line, size_t len, PromptRow *r, const PromptOptions *o, char *err, size_t errlen) {
    cJSON *j = json_parse(line, len, err, errlen);
    if (!j) return -1; /* json_parse said why */
    int rc = -1;
    const cJSON *id, *ids;
    if (!cJSON_IsObject(j)) snprintf(err, errlen, "a prompt line must be a JSON object");
    else if (!pick(j, ID, &id, err, errlen)) {
        ids = cJSON_GetObjectItemCaseSensitive(j, "prompt_ids");
        rc = ids ? read_ids(ids, r, o, err, errlen) : read_text(j, r, o, err, errlen);
    }
    if (!rc && r->len >= o->max_len) {
        snprintf(err, errlen, "the prompt has %d tokens: the model allows %d in all, and one must be left to generate",
                 r->len, o->max_len);
        rc = -1;
    }
    if (!rc) r->echo = echo_fields(j);
    if (!rc && o->keep_source) r->source = j, j = NULL;
    cJSON_Delete(j);
    return rc;
}

static void prompt_free(PromptRow *r) {
    free(r->ids);
    cJSON_Delete(r->echo);
    cJSON_Delete(r->source);
    memset(r, 0, sizeof *r);
}

static int parse_prompt(const char *line, size_t len, long lineno, void *item, void *ctx, char *msg, size_t msglen) {
    PromptRow *r = item;
    r->line = lineno;
    return read_prompt(line, len, r, ctx, msg, msglen);
}

static void free_prompt_item(void *item) { prompt_free(item); }


int prompts_read(PromptSet *ps, const char *path, const PromptOptions *o, char *err, size_t errlen) {
    memset(ps, 0, sizeof *ps);
    void *rows;
    ps->array = records_is_array(path);
    if (records_read_all(path, sizeof(PromptRow), parse_prompt, free_prompt_item, (void *)o, o->skip_invalid, &rows, &ps->n,
                       &ps->skipped, err, errlen))
        return -1;
    ps->rows = rows;
    return 0;
}

void prompts_free(PromptSet *ps) {
    for (int i = 0; i < ps->n; i++) prompt_free(&ps->rows[i]);
    free(ps->rows);
    memset(ps, 0, sizeof *ps);
}
