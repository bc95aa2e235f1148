/* chat_template.c: the template of a run (template.h): ppa's code templates,
 * checked against the tokenizer's special tokens, or the model's own Jinja
 * template read from its folder as transformers reads it, parsed by jinja.c
 * and tried on a probe conversation before any row is read. The scored
 * response of a Jinja template is cut from two renderings: the conversation
 * with the generation prompt (the prompt) and with the answer appended (no
 * generation prompt); the first must start the second, and the response is
 * what follows, up to and with the first end-of-turn text after the answer.
 * A template for which that does not hold is refused, so no response is
 * ever scored past its turn or with a header of the template in it. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/common.h"
#include "io/file.h"
#include "core/hash.h"
#include "io/json.h"
#include "template/jinja.h"
#include "template/template.h"

struct ChatTemplate {
    TemplateKind kind;
    JinjaTemplate *jinja;      /* NULL for a code template */
    const Tokenizer *tok;      /* the Jinja template's, for the checks of each response */
    char name[32];
    char *eot;                 /* end-of-turn text; NULL for none */
    char *bos;                 /* the tokenizer's BOS text, or NULL */
    char *var_names[4], *var_values[4]; /* bos_token, eos_token, unk_token, pad_token as the config has them */
    int n_vars;
    char origin[4300];         /* the file the Jinja template came from, for messages */
};

static const char *const EOT[] = {[TEMPLATE_NONE] = NULL, [TEMPLATE_CHATML] = "<|im_end|>", [TEMPLATE_LLAMA3] = "<|eot_id|>",
                                  [TEMPLATE_MISTRAL] = "</s>", [TEMPLATE_ZEPHYR] = "</s>", [TEMPLATE_LLAMA2] = "</s>"};

ChatTemplate *chat_template_code(TemplateKind k) {
    ChatTemplate *c = xcalloc(1, sizeof *c);
    c->kind = k;
    snprintf(c->name, sizeof c->name, "%s", template_name(k));
    if (EOT[k]) c->eot = strdup(EOT[k]);
    return c;
}

void chat_template_free(ChatTemplate *c) {
    if (!c) return;
    jinja_free(c->jinja);
    free(c->eot), free(c->bos);
    for (int i = 0; i < c->n_vars; i++) free(c->var_names[i]), free(c->var_values[i]);
    free(c);
}

const char *chat_template_name(const ChatTemplate *c) { return c ? c->name : "none"; }
int chat_template_is_none(const ChatTemplate *c) { return !c || (!c->jinja && c->kind == TEMPLATE_NONE); }
const char *chat_template_eot(const ChatTemplate *c) { return c ? c->eot : NULL; }

/* ---- code templates ---- */

/* --template NAME on a tokenizer without NAME's special tokens would split
 * "<|begin_of_text|>" into ordinary tokens and fail far later, if at all */
static int check_specials(TemplateKind k, const char *path, const Tokenizer *t, char *err, size_t errlen) {
    static const char *const NEED[][4] = {[TEMPLATE_NONE] = {NULL},
                                          [TEMPLATE_CHATML] = {"<|im_start|>", "<|im_end|>", NULL},
                                          [TEMPLATE_LLAMA3] = {"<|begin_of_text|>", "<|start_header_id|>",
                                                               "<|end_header_id|>", "<|eot_id|>"},
                                          [TEMPLATE_MISTRAL] = {"<s>", "</s>", NULL},
                                          [TEMPLATE_ZEPHYR] = {"</s>", NULL},
                                          [TEMPLATE_LLAMA2] = {"<s>", "</s>", NULL}};
    char missing[256] = "";
    for (int i = 0; i < 4 && NEED[k][i]; i++)
        if (tokenizer_added_id(t, NEED[k][i]) < 0)
            snprintf(missing + strlen(missing), sizeof missing - strlen(missing), "%s%s", missing[0] ? ", " : "", NEED[k][i]);
    if (!missing[0]) return 0;
    snprintf(err, errlen, "--template %s: the tokenizer %s has no special token %s, so the template's markers would be "
             "tokenized as plain text: leave --template out to use the model's own template, or give --template none",
             template_name(k), path, missing);
    return -1;
}

/* ---- the folder's own template ---- */

/* a template's text: a regular file without NUL bytes */
static char *read_text(const char *path, char *err, size_t errlen) {
    size_t n;
    char *text = file_read_all(path, &n, err, errlen);
    if (text && strlen(text) != n) return free(text), snprintf(err, errlen, "%s: holds a NUL byte", path), NULL;
    return text;
}

/* a special token of tokenizer_config.json: a string, {"content": ...} or null */
static const char *token_text(const cJSON *v) {
    if (cJSON_IsString(v)) return v->valuestring;
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(v, "content");
    return cJSON_IsObject(v) && cJSON_IsString(c) ? c->valuestring : NULL;
}

/* transformers' choice among named templates: "default" (it refuses when there is none) */
static int pick_named(const cJSON *list, const char *cfg, char **out, char *err, size_t errlen) {
    const cJSON *pick = NULL;
    char names[512] = "";
    int i = 0;
    for (const cJSON *it = list->child; it; it = it->next, i++) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(it, "name"), *tpl = cJSON_GetObjectItemCaseSensitive(it, "template");
        if (!cJSON_IsString(name) || !cJSON_IsString(tpl))
            return snprintf(err, errlen, "%s: chat_template[%d] needs string \"name\" and \"template\"", cfg, i), -1;
        for (const cJSON *o = list->child; o != it; o = o->next)
            if (!strcmp(cJSON_GetObjectItemCaseSensitive(o, "name")->valuestring, name->valuestring))
                return snprintf(err, errlen, "%s: chat_template names two templates \"%s\"", cfg, name->valuestring), -1;
        if (!strcmp(name->valuestring, "default")) pick = tpl;
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s\"%s\"", i ? ", " : "", name->valuestring);
    }
    if (!pick)
        return snprintf(err, errlen, "%s: chat_template lists %d template%s (%s) and none is named \"default\", which "
                        "transformers refuses too: give --template NAME", cfg, i, i == 1 ? "" : "s", names), -1;
    *out = strdup(pick->valuestring);
    return 0;
}

/* tokenizer_config.json's chat_template (and special tokens) and the
 * chat_template.jinja that overrides it; *tpl NULL when there is none */
static int read_config(ChatTemplate *c, const char *path, char **tpl, char *err, size_t errlen) {
    char dir[4096], cfg[4200], jfile[4200];
    struct stat st;
    if (!stat(path, &st) && S_ISDIR(st.st_mode)) snprintf(dir, sizeof dir, "%s/", path);
    else {
        const char *slash = strrchr(path, '/');
        snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path + 1) : 0, path);
    }
    snprintf(cfg, sizeof cfg, "%stokenizer_config.json", dir);
    snprintf(jfile, sizeof jfile, "%schat_template.jinja", dir);
    *tpl = NULL;
    cJSON *root = NULL;
    if (!(stat(cfg, &st) && errno == ENOENT)) {
        char msg[512], *text = read_text(cfg, err, errlen);
        if (!text) return -1;
        root = json_parse(text, strlen(text), msg, sizeof msg);
        free(text);
        if (!cJSON_IsObject(root)) {
            cJSON_Delete(root);
            return snprintf(err, errlen, "%s: %s", cfg, root ? "not a JSON object" : msg), -1;
        }
        static const char *const VARS[] = {"bos_token", "eos_token", "unk_token", "pad_token"};
        for (int i = 0; i < 4; i++) { /* transformers passes the special tokens that are set */
            const char *v = token_text(cJSON_GetObjectItemCaseSensitive(root, VARS[i]));
            if (v) c->var_names[c->n_vars] = strdup(VARS[i]), c->var_values[c->n_vars++] = strdup(v);
        }
        const cJSON *ct = cJSON_GetObjectItemCaseSensitive(root, "chat_template");
        int rc = 0;
        if (cJSON_IsString(ct)) *tpl = strdup(ct->valuestring);
        else if (cJSON_IsArray(ct)) rc = pick_named(ct, cfg, tpl, err, errlen);
        else if (ct && !cJSON_IsNull(ct))
            rc = -1, snprintf(err, errlen, "%s: chat_template is neither a string nor a list of named templates", cfg);
        cJSON_Delete(root);
        if (rc) return -1;
        snprintf(c->origin, sizeof c->origin, "%s: chat_template", cfg);
    }
    if (!(stat(jfile, &st) && errno == ENOENT)) { /* transformers: it replaces the config's template */
        free(*tpl);
        if (!(*tpl = read_text(jfile, err, errlen))) return -1;
        snprintf(c->origin, sizeof c->origin, "%s", jfile);
    }
    return 0;
}

static int jinja_render_masked(const ChatTemplate *c, const ChatMessage *m, int n, int gen, MaskedText *out, char *err,
                               size_t errlen) {
    JinjaChat chat = {m, n, gen, (const char *const *)c->var_names, (const char *const *)c->var_values, c->n_vars};
    char why[600];
    masked_free(out);
    if (!jinja_render(c->jinja, &chat, &out->text, &out->mask, why, sizeof why)) return 0;
    snprintf(err, errlen, "%s %s", c->origin, why);
    return -1;
}

static int starts_with(const MaskedText *full, const MaskedText *prefix) {
    return full->text.n >= prefix->text.n && !memcmp(full->text.s, prefix->text.s, prefix->text.n) &&
           !memcmp(full->mask.s, prefix->mask.s, prefix->text.n);
}

/* Where the answer lies in tail (its first and last message-text byte), and
 * whether a special token of the template comes before it. */
static int answer_span(const ChatTemplate *c, const char *tail, const unsigned char *mask, size_t n, size_t *a0, size_t *a1,
                       char *err, size_t errlen) {
    *a0 = n, *a1 = 0;
    for (size_t i = 0; i < n; i++)
        if (mask[i]) *a0 = *a0 < i ? *a0 : i, *a1 = i + 1;
    if (*a1 == 0) *a0 = *a1 = 0; /* an empty answer: the end of turn is the first one after the prompt */
    size_t len;
    long at = tokenizer_find_special(c->tok, tail, mask, *a0, &len);
    if (at < 0) return 0;
    snprintf(err, errlen, "%s: the template writes the special token %.*s between the generation prompt and the answer, "
             "so it would be scored as part of the response", c->origin, (int)len, tail + at);
    return -1;
}

/* The probe: a user turn and an answer must render as prompt + response +
 * end of turn; the end-of-turn text is the first special token after the answer. */
static int probe(ChatTemplate *c, char *err, size_t errlen) {
    ChatMessage conv[2] = {{"user", "ppa probe question"}, {"assistant", "ppa probe answer"}};
    MaskedText p = {0}, f = {0};
    int rc = -1;
    if (jinja_render_masked(c, conv, 1, 1, &p, err, errlen) || jinja_render_masked(c, conv, 2, 0, &f, err, errlen)) goto done;
    if (!starts_with(&f, &p)) {
        snprintf(err, errlen, "%s: rendering [user, assistant] does not start with the rendering of [user] with the "
                 "generation prompt, so the scored response cannot be cut from it", c->origin);
        goto done;
    }
    const char *tail = f.text.s + p.text.n;
    const unsigned char *mask = (const unsigned char *)f.mask.s + p.text.n;
    size_t n = f.text.n - p.text.n, a0, a1, len;
    if (answer_span(c, tail, mask, n, &a0, &a1, err, errlen)) goto done;
    if (a1 == 0) {
        snprintf(err, errlen, "%s: the answer of [user, assistant] is not in the rendering after the prompt", c->origin);
        goto done;
    }
    long at = tokenizer_find_special(c->tok, tail + a1, mask + a1, n - a1, &len);
    if (at < 0) {
        snprintf(err, errlen, "%s: the template writes no special token after the answer, so no end-of-turn token "
                 "would end a scored response", c->origin);
        goto done;
    }
    c->eot = strndup(tail + a1 + at, len);
    rc = 0;
done:
    masked_free(&p), masked_free(&f);
    return rc;
}

static int open_jinja(ChatTemplate *c, char *src, const Tokenizer *t, char *err, size_t errlen) {
    char why[600];
    c->tok = t;
    c->jinja = jinja_parse(src, strlen(src), why, sizeof why);
    uint64_t h = hash64(src, strlen(src), 0);
    for (int i = 0; i < c->n_vars; i++) h = hash64_more(h, c->var_values[i], strlen(c->var_values[i]) + 1);
    snprintf(c->name, sizeof c->name, "jinja-%016" PRIx64, h);
    free(src);
    if (!c->jinja) {
        snprintf(err, errlen, "%s %s (--template NAME renders with one of ppa's own templates instead, which may "
                 "differ from the model's)", c->origin, why);
        return -1;
    }
    int bos = tokenizer_bos_id(t);
    if (bos >= 0 && tokenizer_token(t, bos)) c->bos = strdup(tokenizer_token(t, bos));
    return probe(c, err, errlen);
}

ChatTemplate *chat_template_open(const char *name, const char *path, const Tokenizer *t, char *err, size_t errlen) {
    TemplateKind k = TEMPLATE_NONE;
    if (name) {
        if (template_parse(name, &k)) {
            snprintf(err, errlen, "unknown template '%s' (chatml, llama3, mistral, zephyr, llama2, none)", name);
            return NULL;
        }
        return t && check_specials(k, path, t, err, errlen) ? NULL : chat_template_code(k);
    }
    if (!t) return chat_template_code(TEMPLATE_NONE); /* pre-tokenized rows only: nothing to render */
    ChatTemplate *c = xcalloc(1, sizeof *c);
    char *src;
    if (read_config(c, path, &src, err, errlen) || (src && jinja_source_date(NULL, err, errlen) && (free(src), 1)) ||
        (src && open_jinja(c, src, t, err, errlen))) {
        chat_template_free(c);
        return NULL;
    }
    if (!c->jinja) { /* no template in the files: ppa's own, if the special tokens name one */
        chat_template_free(c);
        c = chat_template_code(template_detect(t));
    }
    return c;
}

/* ---- rendering ---- */

int chat_template_render(const ChatTemplate *c, const ChatMessage *m, int n, int gen, MaskedText *out, char *err,
                         size_t errlen) {
    if (c && c->jinja) return jinja_render_masked(c, m, n, gen, out, err, errlen);
    masked_free(out);
    template_render_masked(c ? c->kind : TEMPLATE_NONE, m, n, gen, out);
    return 0;
}

int chat_template_response(const ChatTemplate *c, const ChatMessage *m, int n, const MaskedText *prompt, const char *answer,
                           MaskedText *out, char *err, size_t errlen) {
    masked_free(out);
    if (!c || !c->jinja) {
        template_response_masked(c ? c->kind : TEMPLATE_NONE, answer, out);
        return 0;
    }
    ChatMessage *all = xcalloc((size_t)n + 1, sizeof *all);
    memcpy(all, m, sizeof *all * (size_t)n);
    all[n] = (ChatMessage){"assistant", answer};
    MaskedText f = {0};
    int rc = jinja_render_masked(c, all, n + 1, 0, &f, err, errlen);
    free(all);
    if (!rc && !starts_with(&f, prompt)) {
        snprintf(err, errlen, "%s: the rendering with the answer does not start with the prompt (the rendering with the "
                 "generation prompt), so the scored response cannot be cut from it", c->origin);
        rc = -1;
    }
    const char *tail = f.text.s + (rc ? 0 : prompt->text.n);
    const unsigned char *mask = (const unsigned char *)f.mask.s + (rc ? 0 : prompt->text.n);
    size_t n_tail = rc ? 0 : f.text.n - prompt->text.n, a0 = 0, a1 = 0, el = strlen(c->eot), cut = 0;
    if (!rc) rc = answer_span(c, tail, mask, n_tail, &a0, &a1, err, errlen);
    for (size_t i = a1; !rc && i + el <= n_tail && !cut; i++)
        if (!memcmp(tail + i, c->eot, el) && !memchr(mask + i, 1, el)) cut = i + el;
    if (!rc && !cut) {
        snprintf(err, errlen, "%s: the template writes no end-of-turn %s after the answer", c->origin, c->eot);
        rc = -1;
    }
    if (!rc) bytebuf_put(&out->text, tail, cut), bytebuf_put(&out->mask, mask, cut);
    masked_free(&f);
    return rc;
}

int chat_template_add_special(const ChatTemplate *c, const MaskedText *prompt) {
    if (!c || !c->jinja) return !template_has_bos(c ? c->kind : TEMPLATE_NONE);
    size_t n = c->bos ? strlen(c->bos) : 0; /* the template wrote BOS itself: no second one */
    return !(n && prompt->text.n >= n && !memcmp(prompt->text.s, c->bos, n) && !memchr(prompt->mask.s, 1, n));
}
