/* rows.c: JSON Lines preference rows to token rows (rows.h). */
#include "data/rows.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "io/json.h"
#include "io/jsonl.h"
#include "io/records.h"

/* The field of a row under its canonical name or one alias (formats.md a.2):
 * the canonical name wins; two aliases at once are an error. */
static int pick(const cJSON *j, const char *const *names, const cJSON **out, char *err, size_t errlen) {
    *out = cJSON_GetObjectItemCaseSensitive(j, names[0]);
    if (*out) return 0;
    const char *found = NULL;
    for (int i = 1; names[i]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, names[i]);
        if (!v) continue;
        if (found) {
            snprintf(err, errlen, "fields \"%s\" and \"%s\" both give the %s", found, names[i], names[0]);
            return -1;
        }
        found = names[i], *out = v;
    }
    return 0;
}

static const char *const PROMPT[] = {"prompt", "instruction", "question", "query", NULL};
static const char *const RESPONSES[] = {"responses", "all_responses", "all_generated_responses", "generations",
                                        "completions", NULL};
static const char *const SCORES[] = {"scores", "overall_scores", "all_rm_scores", "rm_scores", "rewards", "ratings", NULL};
static const char *const ID[] = {"id", "prompt_id", NULL};

typedef struct {
    ChatMessage *m;
    int n;
} Conv;

static int read_messages(const cJSON *list, Conv *c, char *err, size_t errlen) {
    int n = cJSON_GetArraySize(list), i = 0;
    c->m = xcalloc((size_t)n + 2, sizeof(ChatMessage));
    for (const cJSON *it = list->child; it; it = it->next, i++) {
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(it, "role"), *content = cJSON_GetObjectItemCaseSensitive(it, "content");
        if (!cJSON_IsString(role) || !cJSON_IsString(content)) {
            snprintf(err, errlen, "message %d needs string \"role\" and \"content\"", i);
            return -1;
        }
        c->m[c->n++] = (ChatMessage){role->valuestring, content->valuestring};
    }
    return 0;
}

/* The text of one response: a string, or an object with text|content|response */
static const char *response_text(const cJSON *v, const cJSON **score) {
    *score = NULL;
    if (cJSON_IsString(v)) return v->valuestring;
    if (!cJSON_IsObject(v)) return NULL;
    const char *keys[] = {"text", "content", "response"};
    for (int i = 0; i < 3; i++) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(v, keys[i]);
        if (cJSON_IsString(t)) {
            *score = cJSON_GetObjectItemCaseSensitive(v, "score");
            if (!*score) *score = cJSON_GetObjectItemCaseSensitive(v, "overall_score");
            return t->valuestring;
        }
    }
    return NULL;
}

/* chosen / rejected: a string, or a message list whose last assistant turn is the answer */
static const char *pair_answer(const cJSON *v, Conv *before, char *err, size_t errlen) {
    if (cJSON_IsString(v)) return v->valuestring;
    if (!cJSON_IsArray(v) || !cJSON_GetArraySize(v)) {
        snprintf(err, errlen, "\"chosen\" and \"rejected\" must be strings or message lists");
        return NULL;
    }
    Conv c = {0};
    if (read_messages(v, &c, err, errlen)) {
        free(c.m);
        return NULL;
    }
    if (strcmp(c.m[c.n - 1].role, "assistant")) {
        snprintf(err, errlen, "the last turn of \"chosen\"/\"rejected\" must be the assistant's");
        free(c.m);
        return NULL;
    }
    const char *answer = c.m[c.n - 1].content;
    c.n--;
    *before = c;
    return answer;
}

static int same_conv(const Conv *a, const Conv *b) {
    if (a->n != b->n) return 0;
    for (int i = 0; i < a->n; i++)
        if (strcmp(a->m[i].role, b->m[i].role) || strcmp(a->m[i].content, b->m[i].content)) return 0;
    return 1;
}

/* ---- tokenizing one response ---- */

static int encode(const DataOptions *o, const MaskedText *x, int add_special, int **ids, char *err, size_t errlen) {
    long n = tokenizer_encode_masked(o->tok, x->text.s, o->special_in_text ? NULL : (const unsigned char *)x->mask.s,
                                     x->text.n, add_special, ids, err, errlen);
    return n < 0 ? -1 : (int)n;
}

/* The end-of-turn text of the template (the EOS token's for none): an answer
 * holding it would be scored past the end of its turn. */
static int check_answer(const DataOptions *o, const char *answer, int k, char *err, size_t errlen) {
    const char *eot = chat_template_eot(o->tpl);
    if (!eot && chat_template_is_none(o->tpl) && o->eos_id >= 0) eot = tokenizer_token(o->tok, o->eos_id);
    if (!eot || !*eot || !strstr(answer, eot)) return 0;
    snprintf(err, errlen, "response %d contains the end-of-turn text \"%s\": it would be scored past the end of its turn",
             k + 1, eot); /* counted from 1, as every message about a row's responses */
    return -1;
}

/* Each prompt + response is tokenized once (formats.md d rule 3). The row's
 * prompt is the longest prefix that ids(prompt) shares with every joint
 * tokenization; a response whose first token merged with the prompt's end
 * (Qwen's "\n" + "\n", SentencePiece spaces) moves the boundary back for
 * the whole row, so its scored span starts at the first differing token. */
typedef struct {
    int *ids, n, cut; /* joint ids, their count, the prefix shared with ids(prompt) */
} Joint;

static int joint_encode(Joint *j, const DataOptions *o, const Conv *conv, const MaskedText *prompt, int add, const char *answer,
                        const int *pids, int np, char *err, size_t errlen) {
    MaskedText resp = {0}, full = {0};
    int rc = chat_template_response(o->tpl, conv->m, conv->n, prompt, answer, &resp, err, errlen);
    if (!rc) {
        bytebuf_put(&full.text, prompt->text.s, prompt->text.n), bytebuf_put(&full.mask, prompt->mask.s, prompt->text.n);
        bytebuf_put(&full.text, resp.text.s, resp.text.n), bytebuf_put(&full.mask, resp.mask.s, resp.text.n);
        rc = (j->n = encode(o, &full, add, &j->ids, err, errlen)) < 0 ? -1 : 0;
    }
    masked_free(&resp), masked_free(&full);
    if (rc) return -1;
    for (j->cut = 0; j->cut < np && j->cut < j->n && pids[j->cut] == j->ids[j->cut];) j->cut++;
    return 0;
}

static int tokenize_row(DataRow *r, const DataOptions *o, const Conv *conv, const char *const *answers,
                        long *boundary_fixes, char *err, size_t errlen) {
    int *pids = NULL, np = -1, n = r->n_resp, rc = -1, cut, add = 0;
    Joint *j = xcalloc((size_t)n, sizeof *j);
    MaskedText prompt = {0};
    for (int k = 0; k < n; k++)
        if (check_answer(o, answers[k], k, err, errlen)) goto done;
    if (chat_template_render(o->tpl, conv->m, conv->n, 1, &prompt, err, errlen)) goto done;
    add = chat_template_add_special(o->tpl, &prompt);
    if ((np = encode(o, &prompt, add, &pids, err, errlen)) < 0) goto done;
    cut = np;
    for (int k = 0; k < n; k++) {
        if (joint_encode(&j[k], o, conv, &prompt, add, answers[k], pids, np, err, errlen)) goto done;
        if (j[k].cut < np && o->strict) {
            snprintf(err, errlen, "response %d: its first token merges with the end of the prompt (token %d)", k, j[k].cut);
            goto done;
        }
        cut = j[k].cut < cut ? j[k].cut : cut;
    }
    if (cut < 1) {
        snprintf(err, errlen, "the prompt has no tokens");
        goto done;
    }
    int extra = chat_template_is_none(o->tpl) && o->eos_id >= 0; /* the tokenizer's EOS, once */
    for (int k = 0; k < n; k++) {
        int len = j[k].n - cut + extra;
        if (len < 1) {
            snprintf(err, errlen, "response %d: no response tokens to score", k);
            goto done;
        }
        *boundary_fixes += cut < np;
        r->resp_len[k] = len;
        r->resp[k] = xmalloc(sizeof(int) * (size_t)len);
        memcpy(r->resp[k], j[k].ids + cut, sizeof(int) * (size_t)(j[k].n - cut));
        if (extra) r->resp[k][len - 1] = o->eos_id;
    }
    r->prompt_len = cut;
    r->prompt = xmalloc(sizeof(int) * (size_t)cut);
    memcpy(r->prompt, pids, sizeof(int) * (size_t)cut);
    rc = 0;
done:
    for (int k = 0; k < n; k++) free(j[k].ids);
    free(j), free(pids);
    masked_free(&prompt);
    return rc;
}

/* ---- rows ---- */

static int int_array(const cJSON *a, int **out, int vocab, const char *what, char *err, size_t errlen) {
    if (!cJSON_IsArray(a)) {
        snprintf(err, errlen, "\"%s\" must be an array of token ids", what);
        return -1;
    }
    int n = cJSON_GetArraySize(a), i = 0;
    *out = xmalloc(sizeof(int) * (size_t)(n ? n : 1));
    for (const cJSON *it = a->child; it; it = it->next, i++) {
        double v = it->valuedouble;
        /* the range first: (int) of a double outside int's range is undefined behaviour */
        if (!cJSON_IsNumber(it) || !(v >= 0 && v < vocab) || v != (int)v) {
            snprintf(err, errlen, "\"%s\"[%d] is not a token id below %d", what, i, vocab);
            return -1;
        }
        (*out)[i] = it->valueint;
    }
    return n;
}

/* Ranks (formats.md a.1, 1 = best) are a standard competition ranking of the
 * row's K responses: every rank is a whole number, 1 + the number of
 * responses ranked strictly better, so tied responses share the best of
 * their places and the next rank skips ("1, 2, 2, 4"; a permutation of
 * 1..K when there are no ties). Each order with ties has exactly one such
 * ranking, so psi = (K - rank) / (K - 1) is a function of the order alone: 1
 * for the best, 0 for a single worst. Dense ranks ("1, 2, 2, 3") are
 * refused: they would give the same order other labels (the worst 1/3, not
 * 0), and "1, 2, 2, 3" reads as a mistake under the other convention. A
 * rank cannot be null (a list of K integers; "scores" takes null). */
/* v as the shortest of %.15g..%.17g that reads back exactly (0.1, not 0.10000000000000001) */
static const char *num_text(double v, char *buf, size_t n) {
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, n, "%.*g", digits, v);
        if (strtod(buf, NULL) == v) break;
    }
    return buf;
}

static int read_ranks(const cJSON *a, int n, double *rank, char *err, size_t errlen) {
    int k = 0;
    for (const cJSON *it = a->child; it; it = it->next, k++) {
        if (cJSON_IsNull(it))
            return snprintf(err, errlen, "ranks[%d] is null: every response needs a rank (1 = best); to leave a response "
                            "out, remove it or give \"scores\" with null", k), -1;
        if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble))
            return snprintf(err, errlen, "ranks[%d] is not a finite number", k), -1;
        double v = it->valuedouble;
        char t[40];
        if (!(v >= 1 && v <= n) || v != floor(v))
            return snprintf(err, errlen, "ranks[%d] = %s: a rank must be a whole number from 1 (best) to %d, the "
                            "row's number of responses", k, num_text(v, t, sizeof t), n), -1;
        rank[k] = v;
    }
    for (k = 0; k < n; k++) {
        int better = 0;
        for (int j = 0; j < n; j++) better += rank[j] < rank[k];
        if (rank[k] != better + 1)
            return snprintf(err, errlen, "ranks[%d] = %.0f: %d response%s rank%s better, so its rank is %d (a rank is 1 + "
                            "the number of better responses, ties sharing the best place: 1, 2, 2, 4; dense ranks "
                            "like 1, 2, 2, 3 are not read)", k, rank[k], better, better == 1 ? "" : "s",
                            better == 1 ? "s" : "", better + 1), -1;
    }
    return 0;
}

/* Scores and ranks in one row must give the same order: a higher score a
 * better (smaller) rank, equal scores equal ranks. Responses without a score
 * (null) are left out of the comparison. */
static int scores_agree(const double *score, const double *rank, int n, const char *name, char *err, size_t errlen) {
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            if (isnan(score[i]) || isnan(score[j])) continue;
            int by_score = (score[i] > score[j]) - (score[i] < score[j]), by_rank = (rank[i] < rank[j]) - (rank[i] > rank[j]);
            char a[40], b[40];
            if (by_score != by_rank)
                return snprintf(err, errlen, "%s[%d] = %s and %s[%d] = %s but ranks[%d] = %.0f and ranks[%d] = %.0f: "
                                "\"%s\" and \"ranks\" disagree (a higher score needs a better, smaller rank; equal "
                                "scores equal ranks)", name, i, num_text(score[i], a, sizeof a), name, j,
                                num_text(score[j], b, sizeof b), i, rank[i], j, rank[j], name), -1;
        }
    return 0;
}

static int read_scores(const cJSON *j, DataRow *r, const cJSON *const *obj_scores, char *err, size_t errlen) {
    const cJSON *sc;
    if (pick(j, SCORES, &sc, err, errlen)) return -1;
    const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(j, "ranks");
    int n = r->n_resp, have_scores = sc != NULL;
    for (int k = 0; k < n; k++) r->scores[k] = NAN;
    if (sc) {
        if (!cJSON_IsArray(sc) || cJSON_GetArraySize(sc) != n)
            return snprintf(err, errlen, "\"%s\" must be an array with one entry per response (%d)", sc->string, n), -1;
        int k = 0;
        for (const cJSON *it = sc->child; it; it = it->next, k++) {
            if (cJSON_IsNull(it)) continue;
            if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble))
                return snprintf(err, errlen, "%s[%d] is not a finite number or null", sc->string, k), -1;
            r->scores[k] = it->valuedouble;
        }
    } else {
        for (int k = 0; k < n; k++) {
            if (!obj_scores || !obj_scores[k] || !cJSON_IsNumber(obj_scores[k])) continue;
            if (!isfinite(obj_scores[k]->valuedouble)) /* 1e999 parses as inf; the scores array refuses it too */
                return snprintf(err, errlen, "the score of response %d is not a finite number", k), -1;
            r->scores[k] = obj_scores[k]->valuedouble, have_scores = 1;
        }
    }
    if (!ranks) return 0;
    if (!cJSON_IsArray(ranks) || cJSON_GetArraySize(ranks) != n)
        return snprintf(err, errlen, "\"ranks\" must be an array with one entry per response (%d)", n), -1;
    double *rank = xmalloc(sizeof(double) * (size_t)n);
    int rc = read_ranks(ranks, n, rank, err, errlen);
    if (!rc && have_scores) /* the scores are the labels; the ranks must tell the same order */
        rc = scores_agree(r->scores, rank, n, sc ? sc->string : "score", err, errlen);
    else if (!rc) /* ranks (1 = best) become labels in [0, 1] */
        for (int k = 0; k < n; k++) r->scores[k] = n > 1 ? (n - rank[k]) / (n - 1) : 1.0;
    free(rank);
    return rc;
}

static void alloc_responses(DataRow *r, int n) {
    r->n_resp = n;
    r->resp_len = xcalloc((size_t)n, sizeof(int));
    r->resp = xcalloc((size_t)n, sizeof(int *));
    r->scores = xcalloc((size_t)n, sizeof(double));
}

static int read_pretokenized(const cJSON *j, DataRow *r, const DataOptions *o, char *err, size_t errlen) {
    r->prompt_len = int_array(cJSON_GetObjectItemCaseSensitive(j, "prompt_ids"), &r->prompt, o->vocab_size, "prompt_ids",
                              err, errlen);
    if (r->prompt_len < 0) return -1;
    if (r->prompt_len < 1) return snprintf(err, errlen, "\"prompt_ids\" is empty"), -1;
    const cJSON *ra = cJSON_GetObjectItemCaseSensitive(j, "response_ids");
    if (!cJSON_IsArray(ra) || cJSON_GetArraySize(ra) < 1)
        return snprintf(err, errlen, "\"response_ids\" must be a non-empty array of id arrays"), -1;
    if (cJSON_GetArraySize(ra) > DATA_MAX_RESPONSES)
        return snprintf(err, errlen, "\"response_ids\" holds %d responses: at most %d a row", cJSON_GetArraySize(ra),
                        DATA_MAX_RESPONSES), -1;
    alloc_responses(r, cJSON_GetArraySize(ra));
    int k = 0;
    for (const cJSON *it = ra->child; it; it = it->next, k++) {
        char what[32];
        snprintf(what, sizeof what, "response_ids[%d]", k);
        if ((r->resp_len[k] = int_array(it, &r->resp[k], o->vocab_size, what, err, errlen)) < 0) return -1;
        if (!r->resp_len[k]) return snprintf(err, errlen, "\"%s\" is empty (nothing to score)", what), -1;
    }
    return read_scores(j, r, NULL, err, errlen);
}

/* TRL's "completion": a string, or a message list of one assistant message; its text, or NULL with why */
static const char *trl_completion(const cJSON *c, char *err, size_t errlen) {
    if (cJSON_IsString(c)) return c->valuestring;
    const cJSON *m = cJSON_IsArray(c) && cJSON_GetArraySize(c) == 1 ? c->child : NULL;
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role"), *content = cJSON_GetObjectItemCaseSensitive(m, "content");
    if (cJSON_IsString(role) && !strcmp(role->valuestring, "assistant") && cJSON_IsString(content)) return content->valuestring;
    snprintf(err, errlen, "\"completion\" must be a string or a list of one assistant message (role, content)");
    return NULL;
}

/* all_assistant_turns: a conversation's assistant turns, each an answer; turn_at[k] is where answer k is in it */
static int assistant_turns(const Conv *conv, const char ***answers, const cJSON ***oscores, int *n, int **turn_at,
                           char *err, size_t errlen) {
    *n = 0;
    for (int i = 0; i < conv->n; i++) *n += !strcmp(conv->m[i].role, "assistant");
    if (!*n)
        return snprintf(err, errlen, "\"messages\" has no assistant turn to train on (--assistant-only-loss trains on "
                        "each)"), -1;
    *answers = xcalloc((size_t)*n, sizeof(char *)), *oscores = xcalloc((size_t)*n, sizeof(cJSON *));
    *turn_at = xcalloc((size_t)*n, sizeof(int));
    for (int i = 0, k = 0; i < conv->n; i++)
        if (!strcmp(conv->m[i].role, "assistant")) (*turn_at)[k] = i, (*answers)[k++] = conv->m[i].content;
    return 0;
}

/* The conversation before the answers, and the answers (with object scores). all_turns: a "messages" conversation
 * gives every assistant turn as an answer, and *turn_at where each one is (NULL for every other row). */
static int read_text_parts(const cJSON *j, Conv *conv, const char ***answers, const cJSON ***oscores, int *n, int *pair,
                           int all_turns, int **turn_at, char *err, size_t errlen) {
    const cJSON *prompt, *responses, *msgs = cJSON_GetObjectItemCaseSensitive(j, "messages");
    if (pick(j, PROMPT, &prompt, err, errlen) || pick(j, RESPONSES, &responses, err, errlen)) return -1;
    const cJSON *chosen = cJSON_GetObjectItemCaseSensitive(j, "chosen"), *rejected = cJSON_GetObjectItemCaseSensitive(j, "rejected");
    /* a pair row's conversation is in "chosen"/"rejected"; ultrafeedback_binarized's "messages" beside them is the SFT
     * view of the same conversation (prompt + chosen), not a prompt */
    if (!responses && chosen && rejected) msgs = NULL;
    if (cJSON_IsArray(prompt)) msgs = prompt, prompt = NULL; /* a message list under "prompt" */
    if (msgs && !cJSON_IsArray(msgs)) return snprintf(err, errlen, "\"messages\" must be a list of messages"), -1;
    if (prompt && msgs) return snprintf(err, errlen, "both \"prompt\" and \"messages\" give the prompt"), -1;
    if (prompt && !cJSON_IsString(prompt)) return snprintf(err, errlen, "\"prompt\" must be a string or a message list"), -1;
    const cJSON *sys = cJSON_GetObjectItemCaseSensitive(j, "system");
    conv->m = xcalloc(2, sizeof(ChatMessage));
    if (msgs) {
        free(conv->m);
        if (read_messages(msgs, conv, err, errlen)) return -1;
    } else if (prompt) {
        if (cJSON_IsString(sys)) conv->m[conv->n++] = (ChatMessage){"system", sys->valuestring};
        conv->m[conv->n++] = (ChatMessage){"user", prompt->valuestring};
    }
    if (!responses && chosen && rejected) { /* a pair: K = 2 */
        Conv c1 = {0}, c2 = {0};
        const char *a = pair_answer(chosen, &c1, err, errlen), *b = a ? pair_answer(rejected, &c2, err, errlen) : NULL;
        int ok = a && b && (conv->n || same_conv(&c1, &c2));
        if (a && b && !ok) snprintf(err, errlen, "\"chosen\" and \"rejected\" disagree on the turns before the answer");
        if (ok && !conv->n) free(conv->m), *conv = c1, c1.m = NULL;
        free(c1.m), free(c2.m);
        if (!ok) return -1;
        *n = 2, *pair = 1;
        *answers = xcalloc(2, sizeof(char *)), *oscores = xcalloc(2, sizeof(cJSON *));
        (*answers)[0] = a, (*answers)[1] = b;
        (*oscores)[0] = cJSON_GetObjectItemCaseSensitive(j, "score_chosen");
        (*oscores)[1] = cJSON_GetObjectItemCaseSensitive(j, "score_rejected");
        return 0;
    }
    /* TRL's SFT formats, one answer a row: prompt/completion (strings, or message lists), and a conversation whose
     * last message is the assistant's (the answer; the turns before it, the prompt) */
    const cJSON *completion = cJSON_GetObjectItemCaseSensitive(j, "completion");
    if (!responses && completion && conv->n) {
        const char *a = trl_completion(completion, err, errlen);
        if (!a) return -1;
        *n = 1, *answers = xcalloc(1, sizeof(char *)), *oscores = xcalloc(1, sizeof(cJSON *));
        (*answers)[0] = a;
        return 0;
    }
    if (!responses && msgs && all_turns) return assistant_turns(conv, answers, oscores, n, turn_at, err, errlen);
    if (!responses && msgs && conv->n >= 2 && !strcmp(conv->m[conv->n - 1].role, "assistant")) {
        *n = 1, *answers = xcalloc(1, sizeof(char *)), *oscores = xcalloc(1, sizeof(cJSON *));
        (*answers)[0] = conv->m[--conv->n].content;
        return 0;
    }
    if (!conv->n) return snprintf(err, errlen, "no prompt: expected \"prompt\" or \"messages\""), -1;
    if (!cJSON_IsArray(responses) || cJSON_GetArraySize(responses) < 1)
        return snprintf(err, errlen, "expected \"responses\" (a non-empty list), or one answer: \"completion\", or "
                        "\"messages\" ending with the assistant's"), -1;
    *n = cJSON_GetArraySize(responses);
    if (*n > DATA_MAX_RESPONSES)
        return snprintf(err, errlen, "%d responses: at most %d a row", *n, DATA_MAX_RESPONSES), -1;
    *answers = xcalloc((size_t)*n, sizeof(char *)), *oscores = xcalloc((size_t)*n, sizeof(cJSON *));
    int k = 0;
    for (const cJSON *it = responses->child; it; it = it->next, k++)
        if (!((*answers)[k] = response_text(it, &(*oscores)[k])))
            return snprintf(err, errlen, "responses[%d] is neither a string nor an object with text", k), -1;
    return 0;
}

/* why a text row cannot be read without a tokenizer */
static int no_tokenizer(const DataOptions *o, char *err, size_t errlen) {
    if (o->model_dir)
        return ppa_fail(err, errlen, "a text row needs the model's tokenizer, and the model folder %s has no "
                        "tokenizer.json (rows of token ids, \"prompt_ids\" and \"response_ids\", need none)", o->model_dir);
    return ppa_fail(err, errlen, "a text row needs the model's tokenizer (or use prompt_ids/response_ids)");
}

/* all_assistant_turns: the row of each assistant turn, as a "messages" row ending with that turn gives it (the
 * conversation before it the prompt, rendered with the generation prompt); r holds the first, r->more the rest */
static int read_turns(const cJSON *j, DataRow *r, const DataOptions *o, const Conv *conv, const char *const *answers,
                      const int *turn_at, int n, long *fixes, char *err, size_t errlen) {
    if (template_check(conv->m, conv->n, 0, err, errlen)) return -1;
    r->n_more = n - 1;
    r->more = n > 1 ? xcalloc((size_t)n - 1, sizeof(DataRow)) : NULL;
    for (int t = 0; t < n; t++) {
        DataRow *x = t ? &r->more[t - 1] : r;
        Conv before = {conv->m, turn_at[t]};
        char why[1024];
        alloc_responses(x, 1);
        if (tokenize_row(x, o, &before, &answers[t], fixes, why, sizeof why) ||
            read_scores(j, x, NULL, why, sizeof why))
            return snprintf(err, errlen, "the assistant turn of message %d: %s", turn_at[t], why), -1;
    }
    return 0;
}

static int read_text(const cJSON *j, DataRow *r, const DataOptions *o, long *fixes, char *err, size_t errlen) {
    if (!o->tok) return no_tokenizer(o, err, errlen);
    Conv conv = {0};
    const char **answers = NULL;
    const cJSON **oscores = NULL;
    int n = 0, rc = -1, pair = 0, *turn_at = NULL;
    DataOptions opt = *o;
    const cJSON *tpl = cJSON_GetObjectItemCaseSensitive(j, "template");
    if (cJSON_IsString(tpl) && !strcmp(tpl->valuestring, "none")) opt.tpl = NULL;
    if (read_text_parts(j, &conv, &answers, &oscores, &n, &pair, o->all_assistant_turns, &turn_at, err, errlen))
        goto done;
    if (turn_at) {
        rc = read_turns(j, r, &opt, &conv, answers, turn_at, n, fixes, err, errlen);
        goto done;
    }
    if (template_check(conv.m, conv.n, 1, err, errlen)) goto done;
    alloc_responses(r, n);
    rc = tokenize_row(r, &opt, &conv, answers, fixes, err, errlen);
    if (!rc) rc = read_scores(j, r, oscores, err, errlen);
    if (!rc && pair && isnan(r->scores[0]) && isnan(r->scores[1])) r->scores[0] = 1.0, r->scores[1] = 0.0; /* chosen > rejected */
done:
    free(conv.m), free(answers), free(oscores), free(turn_at);
    return rc;
}

/* {"text": ...}: plain next-token data. BOS from the post-processor, the
 * tokenizer's EOS appended; the first token is the "prompt" (never scored).
 * Its special-token strings are text, as a message's are. */
static int read_plain_text(const cJSON *text, DataRow *r, const DataOptions *o, char *err, size_t errlen) {
    if (!o->tok) return no_tokenizer(o, err, errlen);
    if (!cJSON_IsString(text)) return snprintf(err, errlen, "\"text\" must be a string"), -1;
    int *ids;
    MaskedText x = {0}; /* data: its special-token strings stay text unless special_in_text */
    masked_put(&x, text->valuestring, strlen(text->valuestring), 1);
    long n = encode(o, &x, 1, &ids, err, errlen);
    masked_free(&x);
    if (n < 0) return -1;
    int extra = o->eos_id >= 0;
    if (n + extra < 2) {
        free(ids);
        return snprintf(err, errlen, "\"text\" is too short to train on (%ld tokens)", n), -1;
    }
    alloc_responses(r, 1);
    r->prompt_len = 1;
    r->prompt = xmalloc(sizeof(int));
    r->prompt[0] = ids[0];
    r->resp_len[0] = (int)n - 1 + extra;
    r->resp[0] = xmalloc(sizeof(int) * (size_t)r->resp_len[0]);
    memcpy(r->resp[0], ids + 1, sizeof(int) * (size_t)(n - 1));
    if (extra) r->resp[0][n - 1] = o->eos_id;
    r->scores[0] = NAN;
    free(ids);
    return 0;
}

static int read_row(const char *line, size_t len, DataRow *r, const DataOptions *o, long *fixes, char *err,
                    size_t errlen) {
    cJSON *j = json_parse(line, len, err, errlen);
    if (!j) return -1;
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return snprintf(err, errlen, "a row must be a JSON object"), -1;
    }
    const cJSON *id;
    int rc = pick(j, ID, &id, err, errlen);
    long num_id;
    if (!rc && cJSON_IsString(id)) r->id = strdup(id->valuestring);
    else if (!rc && id && !cJSON_IsNull(id)) { /* a number id must be whole: 3.5 is not read as 3 */
        rc = json_whole(id, id->string, 0, 9007199254740992.0, &num_id, err, errlen);
        if (!rc && asprintf(&r->id, "%ld", num_id) < 0) r->id = NULL;
    }
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(j, "text");
    if (!rc)
        rc = cJSON_GetObjectItemCaseSensitive(j, "prompt_ids") ? read_pretokenized(j, r, o, err, errlen)
             : text && !cJSON_GetObjectItemCaseSensitive(j, "responses") ? read_plain_text(text, r, o, err, errlen)
                                                                          : read_text(j, r, o, fixes, err, errlen);
    cJSON_Delete(j);
    return rc;
}

static void row_free(DataRow *r) {
    for (int i = 0; i < r->n_more; i++) row_free(&r->more[i]);
    free(r->more);
    for (int k = 0; k < r->n_resp; k++) free(r->resp[k]);
    free(r->resp), free(r->resp_len), free(r->scores), free(r->prompt), free(r->id);
    memset(r, 0, sizeof *r);
}

typedef struct {
    const DataOptions *o;
    long *fixes;
} ReadCtx;

static int parse_row(const char *line, size_t len, long lineno, void *item, void *ctx, char *msg, size_t msglen) {
    const ReadCtx *c = ctx;
    DataRow *r = item;
    r->line = lineno;
    if (read_row(line, len, r, c->o, c->fixes, msg, msglen)) return -1;
    if (!r->id) { /* the id defaults to the line number */
        char num[32];
        snprintf(num, sizeof num, "%ld", lineno);
        r->id = strdup(num);
    }
    return 0;
}

static void free_row_item(void *item) { row_free(item); }

int data_row_parse(const char *line, size_t len, DataRow *r, const DataOptions *o, char *err, size_t errlen) {
    long fixes = 0;
    memset(r, 0, sizeof *r);
    return parse_row(line, len, 0, r, &(ReadCtx){o, &fixes}, err, errlen);
}

void data_row_free(DataRow *r) { row_free(r); }

/* The rows a line expanded into (all_assistant_turns) follow it as rows of their own, with its line and id. */
static int rows_flatten(DataSet *ds, const char *path, char *err, size_t errlen) {
    long total = 0;
    for (int i = 0; i < ds->n; i++) total += 1 + (long)ds->rows[i].n_more;
    if (total == ds->n) return 0;
    if (total > INT_MAX / 2) /* DataSet counts rows in an int */
        return snprintf(err, errlen, "%s: %ld rows, one a turn: at most %d", path, total, INT_MAX / 2), -1;
    DataRow *all = xcalloc((size_t)total, sizeof(DataRow));
    for (long i = 0, at = 0; i < ds->n; i++) {
        DataRow *r = &ds->rows[i], *more = r->more;
        int n_more = r->n_more;
        r->more = NULL, r->n_more = 0, all[at++] = *r;
        for (int t = 0; t < n_more; t++, at++) {
            all[at] = more[t];
            all[at].line = r->line, all[at].id = strdup(r->id);
        }
        free(more);
    }
    free(ds->rows);
    ds->rows = all, ds->n = (int)total;
    return 0;
}

int data_read(DataSet *ds, const char *path, const DataOptions *o, char *err, size_t errlen) {
    memset(ds, 0, sizeof *ds);
    ReadCtx c = {o, &ds->boundary_fixes};
    void *rows;
    if (records_read_all(path, sizeof(DataRow), parse_row, free_row_item, &c, o->skip_invalid, &rows, &ds->n, &ds->skipped,
                       err, errlen))
        return -1;
    ds->rows = rows;
    if (rows_flatten(ds, path, err, errlen)) {
        data_free(ds);
        return -1;
    }
    return 0;
}

void data_free(DataSet *ds) {
    for (int i = 0; i < ds->n; i++) row_free(&ds->rows[i]);
    free(ds->rows);
    memset(ds, 0, sizeof *ds);
}
