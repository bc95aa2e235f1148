/* pair_judge.h: the pair-preference judge: a causal LM shown a prompt and two
 * responses, read at the answer position: the preference for the response
 * shown as A is softmax over the two answer tokens ("A", "B") of the
 * next-token logits after the whole rendered text, temperature 1.
 *
 * Not here: the command line, tournaments over K responses, multi-turn
 * contexts (the prompt is one text), batching of many pairs.
 *
 * Template file (pair_template_load):
 *   - UTF-8 text used literally as the text to tokenize, with three
 *     placeholders, each exactly once, in any order: {prompt},
 *     {response_A} (the response shown first), {response_B}.
 *   - {{ and }} are literal braces (Python str.format's rule, which the
 *     RLHFlow code uses); any other {name} is refused, naming it, and so is
 *     a lone { or }.
 *   - Exactly one final "\n" of the file is dropped (the line end editors
 *     add); to end the template with a newline, end the file with one more.
 *   - Refused too: invalid UTF-8, NUL bytes, carriage returns (a file saved
 *     with CRLF would change the tokens without a sign). Every refusal names
 *     FILE (and LINE where there is one).
 *   - The texts are substituted verbatim: no escaping, no trimming. Special
 *     token text such as "<|eot_id|>" is recognised as that added token
 *     wherever it appears (in the template or in a response), as
 *     transformers' encode does.
 *   - By default the rendered text is encoded WITHOUT the tokenizer's
 *     post-processor: the template is the whole sequence, so a BOS is there
 *     only if the template writes it ("<|begin_of_text|>", "<s>").
 *     PairJudgeOptions.add_special = 1 runs the post-processor instead.
 *
 * The RLHFlow judge (RLHFlow/pair-preference-model-LLaMA3-8B): shipped as
 * examples/pair_templates/rlhflow_llama3.txt, with the default options. Its
 * reference code (model card; RewardBench's models/pairpm.py) builds
 *   context = plain_template([user: prompt])
 *   message = "[CONTEXT] {context} [RESPONSE A] {a} [RESPONSE B] {b} \n"
 *   text    = llama3_chat_template([user: message]) with "<|begin_of_text|>" removed,
 *             encoded with add_special_tokens=False: no BOS at all.
 * transformers renders chat templates with trim_blocks (the newline after a
 * block tag is dropped) and drops a template's final newline, so the plain
 * context of one user turn is "\n\n<turn> user\n {prompt}\n", not the
 * "\n" + "\n\n<turn> user\n {prompt}" + "\n\n\n" the raw string suggests
 * (the pair-pm README's data example shows the same). The Llama 3 template
 * trims the message (as ppa's llama3 template does) and ends with the
 * assistant header: the reference calls it without add_generation_prompt,
 * and Meta's template of April 2024 appended the header unconditionally;
 * training (axolotl, FastChat's llama-3 format) put the answer letter after
 * that header too. The file therefore reads, one token sequence:
 *   <|start_header_id|>user<|end_header_id|>\n\n[CONTEXT] \n\n<turn> user\n
 *   {prompt}\n [RESPONSE A] {response_A} [RESPONSE B] {response_B}<|eot_id|>
 *   <|start_header_id|>assistant<|end_header_id|>\n\n
 * Deviation: the trim also removes trailing whitespace of the response
 * shown as B (and the blank before it if that response is empty), which a
 * literal template cannot do; the renderings agree byte for byte when both
 * responses are non-empty and do not end in whitespace (both are shown as B
 * once). tests/ref/pair_template_ref.cjs renders the reference with
 * @huggingface/jinja and @huggingface/tokenizers on the Llama 3 tokenizer;
 * test_pair_judge compares ppa's ids with it.
 *
 * Averaging over both orders (position bias): d1 = l[A] - l[B] with a shown
 * first, d2 = l[A] - l[B] with b shown first;
 *   p(a over b) = (sigmoid(d1) + sigmoid(-d2)) / 2 = 1/2 + (sigmoid(d1) - sigmoid(d2)) / 2,
 * in double. It is computed as q = 1/2 + |sigmoid(d1) - sigmoid(d2)| / 2 in
 * [1/2, 1], p = q or 1 - q by the sign, so that p(b over a) = 1 - p(a over b)
 * exactly in double (1 - q is exact there). Absolute error about 1e-16.
 *
 * Sequences longer than the model computes exactly (decoder_model_max_len)
 * are refused. The decoder's float32 key/value cache is kept for the
 * longest sequence so far (rounded up to a power of two, at most the
 * model's limit): layers x 2 x key/value width x 4 bytes per token (256 KiB
 * for Llama-3-8B). A judge holds a tokenizer and a decoder: one per thread. */
#ifndef PPA_PAIR_JUDGE_H
#define PPA_PAIR_JUDGE_H

#include <stddef.h>

#include "model/model.h"

/* ---- template files ---- */

typedef struct PairTemplate PairTemplate;

/* Reads and checks a template file. NULL with "FILE[:LINE]: problem" in err. */
PairTemplate *pair_template_load(const char *path, char *err, size_t errlen);
/* The same from text [len] (the final-newline rule included); name stands
 * for the file in messages. */
PairTemplate *pair_template_parse(const char *text, size_t len, const char *name, char *err, size_t errlen);
void pair_template_free(PairTemplate *t);
/* The text to tokenize (malloc'd, NUL-terminated, length in *len if len);
 * *mask (malloc'd, when mask is not NULL): 1 on the bytes of the three
 * values, which are message text (tokenizer_encode_masked: their special
 * strings stay text), 0 on the template's own. */
char *pair_template_render(const PairTemplate *t, const char *prompt, const char *response_a, const char *response_b,
                           size_t *len, unsigned char **mask);

/* ---- the judge ---- */

typedef struct {
    const char *answer_a; /* text of the token meaning "A is better"; NULL: "A" */
    const char *answer_b; /* NULL: "B" */
    int add_special; /* 1: run the tokenizer's post-processor (BOS); 0: the template is the whole sequence */
    int special_in_text; /* 1: special-token strings in the prompt and responses become control tokens (HF's
                          * default, --special-tokens-in-text); 0: they stay text */
} PairJudgeOptions;

typedef struct PairJudge PairJudge;

/* m: the judge model (frozen is fine; it must outlive the judge).
 * tokenizer: a tokenizer.json or a model folder holding one (loaded and
 * owned by the judge). template_path: a template file (above). o: NULL for
 * the defaults. Each answer text must encode (without special tokens) to
 * exactly one token, the two different, both inside the model's vocabulary.
 * NULL with err otherwise. */
PairJudge *pair_judge_new(Model *m, const char *tokenizer, const char *template_path, const PairJudgeOptions *o,
                          char *err, size_t errlen);
void pair_judge_free(PairJudge *j);
/* The ids of the two answer tokens. */
void pair_judge_answer_ids(const PairJudge *j, int *id_a, int *id_b);

/* The ids the model runs for one order (first shown as A): rendered and
 * encoded. *ids malloc'd; returns the count, or -1 with err. */
long pair_judge_encode(PairJudge *j, const char *prompt, const char *first, const char *second, int **ids, char *err,
                       size_t errlen);
/* One order: *d = logit[A] - logit[B] at the answer position, with first
 * shown as A (= log p(A) - log p(B)). 0, or -1 with err (a sequence of no
 * tokens or longer than the model's limit, non-finite logits). */
int pair_judge_logit_diff(PairJudge *j, const char *prompt, const char *first, const char *second, double *d, char *err,
                          size_t errlen);
/* Both orders: *p = probability that a is better than b (averaged, above). */
int pair_judge_prefer(PairJudge *j, const char *prompt, const char *a, const char *b, double *p, char *err,
                      size_t errlen);
/* pair_judge_prefer with ctx = the PairJudge: the judge-callback shape. */
int pair_judge_prefer_cb(void *ctx, const char *prompt, const char *a, const char *b, double *p, char *err,
                         size_t errlen);
/* p(a over b) from d_ab (a shown first) and d_ba (b shown first);
 * pair_judge_average(y, x) == 1 - pair_judge_average(x, y) exactly. */
double pair_judge_average(double d_ab, double d_ba);

#endif
