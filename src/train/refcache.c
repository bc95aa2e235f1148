/* refcache.c: computing, saving, loading and checking the reference cache. */
#include "train/refcache.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "io/file.h"
#include "dist/dist.h"
#include "io/json.h"
#include "core/hash.h"
#include "io/atomic.h"

#define MAGIC "PPAREF1\n"


/* the parameters and every config field that changes the function */
uint64_t refkey_weights(Model *m) {
    const ModelConfig *c = model_config(m);
    char cfg[512];
    int n = snprintf(cfg, sizeof cfg, "%d %d %d %d %d %d %d %d %.17g %d %d %d %d %d %d %.17g %.17g %.17g %.17g %d",
                     (int)c->type, c->vocab_size, c->hidden_size, c->intermediate_size, c->num_hidden_layers,
                     c->num_attention_heads, c->num_key_value_heads, c->head_dim, c->rms_norm_eps,
                     c->tie_word_embeddings, c->qkv_bias, c->o_bias, c->mlp_bias, c->qk_norm, (int)c->rope.type,
                     c->rope.theta, c->rope.factor, c->rope.low_freq_factor, c->rope.high_freq_factor,
                     c->rope.original_max_position_embeddings);
    uint64_t h = hash64(cfg, (size_t)n, 1);
    return model_hash(m, h);
}

uint64_t refkey_tokens(const DataRow *rows, int n) {
    uint64_t h = hash64(&n, sizeof n, 2);
    for (int r = 0; r < n; r++) {
        const DataRow *d = &rows[r];
        h = hash64_more(h, &d->prompt_len, sizeof(int));
        h = hash64_more(h, d->prompt, sizeof(int) * (size_t)d->prompt_len);
        h = hash64_more(h, &d->n_resp, sizeof(int));
        for (int k = 0; k < d->n_resp; k++) {
            h = hash64_more(h, &d->resp_len[k], sizeof(int));
            h = hash64_more(h, d->resp[k], sizeof(int) * (size_t)d->resp_len[k]);
        }
    }
    return h;
}

static long row_tokens(const DataRow *d) {
    long t = d->prompt_len;
    for (int k = 0; k < d->n_resp; k++) t += d->resp_len[k];
    return t;
}

/* rows [r0, r1) as one batch; their logps (a reward model: rewards[index]) and counts go to c at offset[r0] */
static void run_batch(RefCache *c, Model *ref, const DataRow *rows, int r0, int r1, int index) {
    Row *b = xmalloc(sizeof(Row) * (size_t)(r1 - r0));
    for (int r = r0; r < r1; r++)
        b[r - r0] = (Row){rows[r].prompt_len, rows[r].prompt, rows[r].n_resp, rows[r].resp_len,
                          (const int *const *)rows[r].resp};
    char err[4096];
    int rc; /* on the model's engine: the CPU passes, or a GPU attached by the command */
    if (model_config(ref)->head == HEAD_LM) {
        rc = model_forward_rows(ref, b, r1 - r0, c->logp + c->offset[r0], c->n_scored + c->offset[r0], err, sizeof err);
    } else {
        int nr = c->offset[r1] - c->offset[r0], NL = model_config(ref)->num_labels;
        double *rw = xmalloc(sizeof(double) * (size_t)nr * (size_t)NL);
        rc = model_forward_rows_rewards(ref, b, r1 - r0, rw, err, sizeof err);
        for (int g = 0, at = c->offset[r0]; !rc && g < nr; g++) c->logp[at + g] = rw[(size_t)g * NL + index];
        for (int r = r0, at = c->offset[r0]; r < r1; r++)
            for (int k = 0; k < rows[r].n_resp; k++) c->n_scored[at++] = rows[r].resp_len[k];
        free(rw);
    }
    /* the rows were checked when the data set was built: a GPU failed, or the CPU refuses a batch too large */
    if (rc) ppa_die(model_forward_engine(ref) ? 1 : 2, "reference: %s", err);
    free(b);
}

void refcache_compute(RefCache *c, Model *ref, const DataRow *rows, int n, long max_tokens, Progress *pr) {
    refcache_compute_at(c, ref, rows, n, max_tokens, 0, pr);
}

void refcache_compute_at(RefCache *c, Model *ref, const DataRow *rows, int n, long max_tokens, int index,
                         Progress *pr) {
    c->n_rows = n;
    c->offset = xmalloc(sizeof(int) * (size_t)(n + 1));
    c->offset[0] = 0;
    for (int r = 0; r < n; r++) c->offset[r + 1] = c->offset[r] + rows[r].n_resp;
    size_t total = (size_t)c->offset[n];
    c->logp = xmalloc(sizeof(double) * (total ? total : 1));
    c->n_scored = xmalloc(sizeof(int) * (total ? total : 1));
    long all = 0, done = 0; /* tokens: the work of a row is its length, and rows differ a lot */
    for (int r = 0; r < n; r++) all += row_tokens(&rows[r]);
    if (pr) progress_start(pr, 0, all);
    for (int r0 = 0; r0 < n;) {
        int r1 = r0 + 1;
        long t = row_tokens(&rows[r0]);
        while (r1 < n && t + row_tokens(&rows[r1]) <= max_tokens) t += row_tokens(&rows[r1++]);
        run_batch(c, ref, rows, r0, r1, index);
        r0 = r1, done += t;
        if (pr) progress_update(pr, done, "%d/%d rows, %ld/%ld tokens", r0, n, done, all);
    }
    if (pr) progress_end(pr);
}

void refcache_compute_ranks(RefCache *c, Model *m, const DataRow *rows, int n, long max_tokens, int index,
                            Progress *pr) {
    if (dist_size() < 2) {
        refcache_compute_at(c, m, rows, n, max_tokens, index, pr);
        return;
    }
    int R = dist_size();
    long lo, hi, *counts = xmalloc(sizeof(long) * (size_t)R);
    for (int r = 0; r < R; r++) { /* responses of each rank's rows */
        dist_share(n, r, &lo, &hi);
        counts[r] = 0;
        for (long i = lo; i < hi; i++) counts[r] += rows[i].n_resp;
    }
    dist_share(n, dist_rank(), &lo, &hi);
    RefCache part;
    refcache_compute_at(&part, m, rows + lo, (int)(hi - lo), max_tokens, index, pr); /* a rank's line: its share */
    c->n_rows = n;
    c->offset = xmalloc(sizeof(int) * (size_t)(n + 1));
    c->offset[0] = 0;
    for (int r = 0; r < n; r++) c->offset[r + 1] = c->offset[r] + rows[r].n_resp;
    size_t total = (size_t)c->offset[n], mine = (size_t)part.offset[part.n_rows];
    c->logp = xmalloc(sizeof(double) * (total ? total : 1));
    c->n_scored = xmalloc(sizeof(int) * (total ? total : 1));
    double *ns = xmalloc(sizeof(double) * (mine ? mine : 1)), *all = xmalloc(sizeof(double) * (total ? total : 1));
    for (size_t i = 0; i < mine; i++) ns[i] = part.n_scored[i];
    dist_allgather_f64(part.logp, c->logp, counts); /* rank order = row order: the bytes of one process */
    dist_allgather_f64(ns, all, counts);
    for (size_t i = 0; i < total; i++) c->n_scored[i] = (int)all[i];
    free(ns), free(all), free(counts);
    refcache_free(&part);
}

/* ---- file ---- */

static char *header_json(const RefCache *c) {
    cJSON *j = cJSON_CreateObject();
    char h[32];
    snprintf(h, sizeof h, "%016" PRIx64, c->key.weights);
    cJSON_AddStringToObject(j, "weights", h);
    snprintf(h, sizeof h, "%016" PRIx64, c->key.tokens);
    cJSON_AddStringToObject(j, "tokens", h);
    snprintf(h, sizeof h, "%016" PRIx64, c->key.data_file);
    cJSON_AddStringToObject(j, "data_file", h);
    cJSON_AddStringToObject(j, "template", c->key.template_name);
    cJSON_AddNumberToObject(j, "max_length", c->key.max_length);
    cJSON_AddNumberToObject(j, "max_prompt_length", c->key.max_prompt_length);
    cJSON_AddNumberToObject(j, "rows", c->n_rows);
    cJSON_AddNumberToObject(j, "responses", c->offset[c->n_rows]);
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return s;
}

static uint64_t payload_hash(const RefCache *c) {
    size_t n = (size_t)c->offset[c->n_rows];
    uint64_t h = hash64(c->offset, sizeof(int) * (size_t)(c->n_rows + 1), 3);
    h = hash64_more(h, c->logp, sizeof(double) * n);
    return hash64_more(h, c->n_scored, sizeof(int) * n);
}

static int write_body(FILE *f, const void *ctx) {
    const RefCache *c = ctx;
    size_t n = (size_t)c->offset[c->n_rows];
    char *hdr = header_json(c);
    int bad = fputs(MAGIC, f) < 0 || fprintf(f, "%s\n", hdr) < 0;
    free(hdr);
    uint64_t h = payload_hash(c);
    bad = bad || fwrite(c->offset, sizeof(int), (size_t)c->n_rows + 1, f) != (size_t)c->n_rows + 1;
    bad = bad || fwrite(c->logp, sizeof(double), n, f) != n || fwrite(c->n_scored, sizeof(int), n, f) != n;
    bad = bad || fwrite(&h, sizeof h, 1, f) != 1;
    return bad ? -1 : 0;
}

int refcache_save(const RefCache *c, const char *path, char *err, size_t errlen) {
    return atomic_write(path, write_body, c, err, errlen);
}

static int parse_hex(const cJSON *j, const char *key, uint64_t *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    return cJSON_IsString(v) && sscanf(v->valuestring, "%" SCNx64, out) == 1 ? 0 : -1;
}

static int parse_int(const cJSON *j, const char *key, int *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 2e9) return -1;
    *out = (int)v->valuedouble;
    return 0;
}

static int parse_header(RefCache *c, const char *line, int *n_resp) {
    char why[256];
    cJSON *j = json_parse(line, strlen(line), why, sizeof why);
    const cJSON *t = j ? cJSON_GetObjectItemCaseSensitive(j, "template") : NULL;
    int bad = !j || parse_hex(j, "weights", &c->key.weights) || parse_hex(j, "tokens", &c->key.tokens) ||
              parse_hex(j, "data_file", &c->key.data_file) || !cJSON_IsString(t) ||
              parse_int(j, "max_length", &c->key.max_length) ||
              parse_int(j, "max_prompt_length", &c->key.max_prompt_length) || parse_int(j, "rows", &c->n_rows) ||
              parse_int(j, "responses", n_resp);
    if (!bad) snprintf(c->key.template_name, sizeof c->key.template_name, "%s", t->valuestring);
    cJSON_Delete(j);
    return bad ? -1 : 0;
}

static int read_payload(RefCache *c, FILE *f, int n_resp) {
    size_t n = (size_t)n_resp, nr = (size_t)c->n_rows + 1;
    c->offset = xmalloc(sizeof(int) * nr);
    c->logp = xmalloc(sizeof(double) * (n ? n : 1));
    c->n_scored = xmalloc(sizeof(int) * (n ? n : 1));
    uint64_t h;
    if (fread(c->offset, sizeof(int), nr, f) != nr || fread(c->logp, sizeof(double), n, f) != n ||
        fread(c->n_scored, sizeof(int), n, f) != n || fread(&h, sizeof h, 1, f) != 1 || fgetc(f) != EOF)
        return -1;
    if (c->offset[0] != 0 || c->offset[c->n_rows] != n_resp) return -1;
    for (int r = 0; r < c->n_rows; r++)
        if (c->offset[r + 1] < c->offset[r]) return -1;
    return h == payload_hash(c) ? 0 : -1;
}

int refcache_load(RefCache *c, const char *path, char *err, size_t errlen) {
    memset(c, 0, sizeof *c);
    char why[4400];
    FILE *f = file_open_regular(path, why, sizeof why);
    if (!f) return ppa_fail(err, errlen, "the reference cache %s", why);
    char magic[sizeof MAGIC] = {0}, line[4096];
    int n_resp = 0, rc = 0;
    if (fread(magic, 1, sizeof MAGIC - 1, f) != sizeof MAGIC - 1 || strcmp(magic, MAGIC))
        rc = ppa_fail(err, errlen, "%s: not a ppa reference cache (no PPAREF1 header)", path);
    else if (!fgets(line, sizeof line, f) || parse_header(c, line, &n_resp))
        rc = ppa_fail(err, errlen, "%s: the reference cache's header line is damaged", path);
    else if (read_payload(c, f, n_resp))
        rc = ppa_fail(err, errlen, "%s: the reference cache is truncated or damaged (sizes or checksum do not match); "
                  "delete it and score again", path);
    fclose(f);
    if (rc) refcache_free(c);
    return rc;
}

int refcache_check(const RefCache *c, const RefKey *want, const DataRow *rows, int n, char *why, size_t whylen) {
    const RefKey *k = &c->key;
    if (k->weights != want->weights)
        return ppa_fail(why, whylen, "it was computed with other reference weights (or another config)");
    if (want->data_file && k->data_file && k->data_file != want->data_file)
        return ppa_fail(why, whylen, "the data file has changed since the cache was made");
    if (strcmp(k->template_name, want->template_name))
        return ppa_fail(why, whylen, "it used the chat template '%s', this run uses '%s'", k->template_name,
                    want->template_name);
    if (k->max_length != want->max_length || k->max_prompt_length != want->max_prompt_length)
        return ppa_fail(why, whylen, "it used --max-length %d --max-prompt-length %d, this run %d and %d", k->max_length,
                    k->max_prompt_length, want->max_length, want->max_prompt_length);
    if (k->tokens != want->tokens)
        return ppa_fail(why, whylen, "the token ids differ (another tokenizer, template or data)");
    if (c->n_rows != n) return ppa_fail(why, whylen, "it has %d rows, the data has %d", c->n_rows, n);
    for (int r = 0; r < n; r++)
        if (c->offset[r + 1] - c->offset[r] != rows[r].n_resp)
            return ppa_fail(why, whylen, "row %d has %d responses in the cache, %d in the data", r,
                        c->offset[r + 1] - c->offset[r], rows[r].n_resp);
    return 0;
}

void refcache_free(RefCache *c) {
    free(c->offset), free(c->logp), free(c->n_scored);
    memset(c, 0, sizeof *c);
}
