/* pair_judge.c: the pair-preference judge (pair_judge.h): answer tokens,
 * encoding, the decoder's next-token logits for both orders, and the
 * averaging. Not here: template files (pair_template.c). */
#include "judge/pair_judge.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "model/decode.h"
#include "tokenizer/tokenizer.h"

struct PairJudge {
    Model *m;
    Tokenizer *tok;
    char *tok_name; /* as given, for messages */
    PairTemplate *tpl;
    int id_a, id_b;
    int add_special, special_in_text;
    Decoder *dec; /* one slot, grown to the longest sequence so far */
    int dec_len;
    float *logits; /* [V] */
};

/* err already holds a message: prefix it (copied first, as snprintf's
 * source may not overlap its destination) */
static int fail_prefixed(char *err, size_t errlen, const char *prefix) {
    char inner[1024];
    snprintf(inner, sizeof inner, "%s", err);
    return ppa_fail(err, errlen, "%s%s", prefix, inner);
}

/* the single token of an answer text, or -1 with the message */
static int answer_id(PairJudge *j, const char *text, char *err, size_t errlen) {
    int *ids = NULL;
    long n = tokenizer_encode(j->tok, text, strlen(text), 0, &ids, err, errlen);
    int id = n == 1 ? ids[0] : -1;
    free(ids);
    if (n < 0) return fail_prefixed(err, errlen, "pair judge: an answer text: ");
    if (n != 1)
        return ppa_fail(err, errlen,
                        "pair judge: the answer text \"%s\" is %ld tokens with the tokenizer %s; it must be "
                        "exactly one token",
                        text, n, j->tok_name);
    int V = model_config(j->m)->vocab_size;
    if (id >= V)
        return ppa_fail(err, errlen,
                        "pair judge: the answer \"%s\" is token %d of the tokenizer %s, outside the model's "
                        "vocabulary (%d)",
                        text, id, j->tok_name, V);
    return id;
}

static int set_answers(PairJudge *j, const PairJudgeOptions *o, char *err, size_t errlen) {
    const char *a = o && o->answer_a ? o->answer_a : "A", *b = o && o->answer_b ? o->answer_b : "B";
    if ((j->id_a = answer_id(j, a, err, errlen)) < 0 || (j->id_b = answer_id(j, b, err, errlen)) < 0) return -1;
    if (j->id_a == j->id_b)
        return ppa_fail(err, errlen,
                        "pair judge: the answers \"%s\" and \"%s\" are the same token (%d) with the "
                        "tokenizer %s",
                        a, b, j->id_a, j->tok_name);
    return 0;
}

PairJudge *pair_judge_new(Model *m, const char *tokenizer, const char *template_path, const PairJudgeOptions *o,
                          char *err, size_t errlen) {
    PairJudge *j = xcalloc(1, sizeof *j);
    j->m = m;
    j->add_special = o ? o->add_special : 0;
    j->special_in_text = o ? o->special_in_text : 0;
    j->tok_name = xmalloc(strlen(tokenizer) + 1);
    strcpy(j->tok_name, tokenizer);
    if (!(j->tok = tokenizer_load(tokenizer, err, errlen)) ||
        !(j->tpl = pair_template_load(template_path, err, errlen)) || set_answers(j, o, err, errlen)) {
        pair_judge_free(j);
        return NULL;
    }
    j->logits = xmalloc(sizeof(float) * (size_t)model_config(m)->vocab_size);
    return j;
}

void pair_judge_free(PairJudge *j) {
    if (!j) return;
    tokenizer_free(j->tok);
    pair_template_free(j->tpl);
    decoder_free(j->dec);
    free(j->tok_name), free(j->logits);
    free(j);
}

void pair_judge_answer_ids(const PairJudge *j, int *id_a, int *id_b) { *id_a = j->id_a, *id_b = j->id_b; }

long pair_judge_encode(PairJudge *j, const char *prompt, const char *first, const char *second, int **ids, char *err,
                       size_t errlen) {
    size_t len;
    unsigned char *mask;
    char *text = pair_template_render(j->tpl, prompt, first, second, &len, &mask);
    long n = tokenizer_encode_masked(j->tok, text, j->special_in_text ? NULL : mask, len, j->add_special, ids, err, errlen);
    free(text), free(mask);
    return n;
}

/* a decoder slot for n tokens: regrown to a power of two (fewer regrowths),
 * never past the model's limit (checked by the caller) */
static int reserve(PairJudge *j, int n, char *err, size_t errlen) {
    if (j->dec && n <= j->dec_len) return 0;
    int limit = decoder_model_max_len(model_config(j->m));
    long cap = 64;
    while (cap < n) cap *= 2;
    if (cap > limit) cap = limit;
    decoder_free(j->dec);
    j->dec = decoder_new(j->m, 1, (int)cap, err, errlen);
    j->dec_len = j->dec ? (int)cap : 0;
    return j->dec ? 0 : -1;
}

int pair_judge_logit_diff(PairJudge *j, const char *prompt, const char *first, const char *second, double *d, char *err,
                          size_t errlen) {
    int *ids = NULL;
    long n = pair_judge_encode(j, prompt, first, second, &ids, err, errlen);
    int limit = decoder_model_max_len(model_config(j->m)), rc = -1;
    if (n < 0)
        fail_prefixed(err, errlen, "pair judge: ");
    else if (n == 0)
        ppa_fail(err, errlen, "pair judge: the pair renders to no tokens");
    else if (n > limit)
        ppa_fail(err, errlen,
                 "pair judge: the rendered pair is %ld tokens, more than the %d the model computes "
                 "exactly (max_position_embeddings, sliding window)",
                 n, limit);
    else if (!reserve(j, (int)n, err, errlen) && !decoder_prefill(j->dec, 0, ids, (int)n, j->logits, err, errlen))
        rc = 0;
    free(ids);
    if (rc) return -1;
    *d = (double)j->logits[j->id_a] - (double)j->logits[j->id_b];
    if (!isfinite(*d))
        return ppa_fail(err, errlen, "pair judge: non-finite logits at the answer position (A %g, B %g)",
                        (double)j->logits[j->id_a], (double)j->logits[j->id_b]);
    return 0;
}

static double sigmoid(double x) {
    if (x >= 0) return 1.0 / (1.0 + exp(-x));
    double e = exp(x); /* no overflow for large negative x */
    return e / (1.0 + e);
}

double pair_judge_average(double d_ab, double d_ba) {
    double s1 = sigmoid(d_ab), s2 = sigmoid(d_ba);
    /* q in [1/2, 1], where 1 - q is exact: swapping a and b gives 1 - p to the bit */
    double q = 0.5 + 0.5 * fabs(s1 - s2);
    return s1 >= s2 ? q : 1.0 - q;
}

int pair_judge_prefer(PairJudge *j, const char *prompt, const char *a, const char *b, double *p, char *err,
                      size_t errlen) {
    double d_ab, d_ba;
    if (pair_judge_logit_diff(j, prompt, a, b, &d_ab, err, errlen) ||
        pair_judge_logit_diff(j, prompt, b, a, &d_ba, err, errlen))
        return -1;
    *p = pair_judge_average(d_ab, d_ba);
    return 0;
}

int pair_judge_prefer_cb(void *ctx, const char *prompt, const char *a, const char *b, double *p, char *err,
                         size_t errlen) {
    return pair_judge_prefer(ctx, prompt, a, b, p, err, errlen);
}
