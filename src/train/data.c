/* data.c: data_prepare and the list source of the trainer (data.h). */
#include "train/data.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "core/hash.h"
#include "core/rng.h"

/* ---- preparation ---- */

static void drop_response(DataRow *d, int k) {
    free(d->resp[k]);
    for (int j = k; j + 1 < d->n_resp; j++)
        d->resp[j] = d->resp[j + 1], d->resp_len[j] = d->resp_len[j + 1], d->scores[j] = d->scores[j + 1];
    d->n_resp--;
}

static void truncate_row(DataRow *d, int max_length, int max_prompt_length, PrepStats *st) {
    int longest = 0;
    for (int k = 0; k < d->n_resp; k++) longest = d->resp_len[k] > longest ? d->resp_len[k] : longest;
    if (d->prompt_len + longest <= max_length) return;
    if (d->prompt_len > max_prompt_length) { /* keep_end */
        int cut = d->prompt_len - max_prompt_length;
        memmove(d->prompt, d->prompt + cut, sizeof(int) * (size_t)max_prompt_length);
        d->prompt_len = max_prompt_length;
        st->truncated_prompts++;
    }
    int room = max_length - d->prompt_len;
    for (int k = 0; k < d->n_resp; k++)
        if (d->resp_len[k] > room) d->resp_len[k] = room, st->truncated_responses++;
}

static int same_ids(const int *a, int na, const int *b, int nb) {
    return na == nb && !memcmp(a, b, sizeof(int) * (size_t)na);
}

typedef struct {
    uint64_t key;
    int at;
} Keyed;

static int keyed_cmp(const void *a, const void *b) {
    const Keyed *x = a, *y = b;
    return x->key != y->key ? (x->key < y->key ? -1 : 1) : (x->at > y->at) - (x->at < y->at);
}

/* drops every response identical to an earlier one of its row, keeping the first, in O(K log K): responses sorted
 * by the hash of their ids (then position), each compared only with the earlier ones of its hash */
static void drop_duplicates(DataRow *d, PrepStats *st) {
    int n = d->n_resp;
    if (n < 2) return;
    Keyed *h = xmalloc(sizeof(Keyed) * (size_t)n);
    unsigned char *dup = xcalloc((size_t)n, 1);
    for (int k = 0; k < n; k++)
        h[k] = (Keyed){hash64(d->resp[k], sizeof(int) * (size_t)d->resp_len[k], (uint64_t)d->resp_len[k]), k};
    qsort(h, (size_t)n, sizeof *h, keyed_cmp);
    for (int i = 0; i < n;) {
        int end = i + 1;
        while (end < n && h[end].key == h[i].key) end++;
        for (int b = i + 1; b < end; b++) /* a run: one hash, nearly always one response (collisions are rare) */
            for (int a = i; a < b && !dup[h[b].at]; a++)
                if (!dup[h[a].at] && same_ids(d->resp[h[a].at], d->resp_len[h[a].at], d->resp[h[b].at], d->resp_len[h[b].at]))
                    dup[h[b].at] = 1;
        i = end;
    }
    int kept = 0;
    for (int k = 0; k < n; k++) {
        if (dup[k]) {
            free(d->resp[k]), st->duplicate_responses++;
            continue;
        }
        d->resp[kept] = d->resp[k], d->resp_len[kept] = d->resp_len[k], d->scores[kept] = d->scores[k], kept++;
    }
    d->n_resp = kept;
    free(h), free(dup);
}

/* 1 when the row stays */
static int prepare_row(DataRow *d, int max_length, int max_prompt_length, PrepStats *st) {
    for (int k = d->n_resp - 1; k >= 0; k--)
        if (isnan(d->scores[k])) drop_response(d, k), st->masked_responses++;
    truncate_row(d, max_length, max_prompt_length, st);
    drop_duplicates(d, st);
    if (d->n_resp < 2) return st->dropped_few++, 0;
    for (int k = 1; k < d->n_resp; k++)
        if (d->scores[k] != d->scores[0]) return 1;
    return st->dropped_equal++, 0;
}

static void free_row(DataRow *d) {
    for (int k = 0; k < d->n_resp; k++) free(d->resp[k]);
    free(d->id), free(d->prompt), free(d->resp_len), free(d->resp), free(d->scores);
}

int data_prepare(DataSet *ds, int max_length, int max_prompt_length, PrepStats *st, char *err, size_t errlen) {
    memset(st, 0, sizeof *st);
    if (max_prompt_length < 1 || max_prompt_length >= max_length) {
        snprintf(err, errlen, "--max-prompt-length %d must be at least 1 and below --max-length %d", max_prompt_length,
                 max_length);
        return -1;
    }
    if (!ds->n) {
        if (ds->skipped) snprintf(err, errlen, "holds no valid rows: its %ld lines were all skipped (--skip-invalid)", ds->skipped);
        else snprintf(err, errlen, "holds no rows");
        return -1;
    }
    int kept = 0, total = ds->n;
    for (int r = 0; r < ds->n; r++) {
        if (prepare_row(&ds->rows[r], max_length, max_prompt_length, st)) ds->rows[kept++] = ds->rows[r];
        else free_row(&ds->rows[r]);
    }
    ds->n = kept;
    if (!kept) {
        snprintf(err, errlen, "gives no list: of its %d row%s, %ld %s all labels equal and %ld %s fewer than 2 labelled, "
                 "distinct responses", total, total == 1 ? "" : "s", st->dropped_equal, st->dropped_equal == 1 ? "has" : "have",
                 st->dropped_few, st->dropped_few == 1 ? "has" : "have");
        return -1;
    }
    return 0;
}

void prep_stats_print(FILE *f, const PrepStats *st, const char *prefix) {
    if (st->dropped_equal || st->dropped_few)
        fprintf(f, "%sdropped %ld rows (%ld with all labels equal, %ld with fewer than 2 responses)\n", prefix,
                st->dropped_equal + st->dropped_few, st->dropped_equal, st->dropped_few);
    if (st->truncated_prompts || st->truncated_responses)
        fprintf(f, "%struncated %ld prompts and %ld responses to --max-length / --max-prompt-length\n", prefix,
                st->truncated_prompts, st->truncated_responses);
    if (st->masked_responses || st->duplicate_responses)
        fprintf(f, "%sremoved %ld responses without a label and %ld identical to another of their row\n", prefix,
                st->masked_responses, st->duplicate_responses);
}

/* ---- lists ---- */

struct TrainData {
    const DataSet *ds;
    int list_size;
    uint64_t seed;
    long epoch; /* of perm */
    int *perm;  /* [n] row order of that epoch */
    /* the last take */
    Row *rows;
    int *lens, **resp;
    double *labels, *ref;
    const double **lab_p, **ref_p;
    long *lines; /* [rows] data file line of each list, for messages */
    int cap_rows, cap_items;
};

static uint64_t mix(uint64_t a, uint64_t b, uint64_t c) {
    PpaRng r;
    rng_seed(&r, a * 0x9E3779B97F4A7C15ULL ^ (b + 0x632BE59BD9B4E019ULL) * 0xBF58476D1CE4E5B9ULL ^ c * 0x94D049BB133111EBULL);
    return rng_u64(&r);
}

static void shuffle(int *a, int n, PpaRng *rng) {
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(rng_u64(rng) % (uint64_t)(i + 1)), t = a[i];
        a[i] = a[j], a[j] = t;
    }
}

TrainData *train_data_new(const DataSet *ds, int list_size, uint64_t seed) {
    TrainData *d = xcalloc(1, sizeof *d);
    d->ds = ds, d->list_size = list_size < 2 ? 2 : list_size, d->seed = seed, d->epoch = -1;
    d->perm = xmalloc(sizeof(int) * (size_t)(ds->n ? ds->n : 1));
    return d;
}

void train_data_free(TrainData *d) {
    if (!d) return;
    free(d->perm), free(d->rows), free(d->lens), free(d->resp), free(d->labels), free(d->ref), free(d->lab_p), free(d->ref_p);
    free(d->lines);
    free(d);
}

long train_data_lists(const TrainData *d) { return d->ds->n; }

static void epoch_order(TrainData *d, long epoch) {
    if (d->epoch == epoch) return;
    PpaRng rng;
    rng_seed(&rng, mix(d->seed, (uint64_t)epoch, 1));
    for (int i = 0; i < d->ds->n; i++) d->perm[i] = i;
    shuffle(d->perm, d->ds->n, &rng);
    d->epoch = epoch;
}

typedef struct {
    double score;
    int at;
} Ranked;

static int ranked_cmp(const void *a, const void *b) { /* label descending, then file position */
    const Ranked *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return (x->at > y->at) - (x->at < y->at);
}

/* idx [n] ordered by label, descending, ties by position in the row: the positions 0..n-1 (given 0), or the
 * positions idx holds (given 1); O(n log n) */
static void by_label(const double *scores, int *idx, int n, int given) {
    Ranked *r = xmalloc(sizeof(Ranked) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) r[i].at = given ? idx[i] : i, r[i].score = scores[r[i].at];
    qsort(r, (size_t)n, sizeof *r, ranked_cmp);
    for (int i = 0; i < n; i++) idx[i] = r[i].at;
    free(r);
}

/* the responses of row r kept this epoch, ordered by label (descending, stable): idx [n]; returns n */
static int select_list(const TrainData *d, long epoch, int r, int *idx) {
    const DataRow *x = &d->ds->rows[r];
    int n = x->n_resp, K = d->list_size;
    int *order = xmalloc(sizeof(int) * (size_t)n);
    by_label(x->scores, order, n, 0);
    int m = n;
    if (n > K) {
        int top = K >= 4 ? 2 : 1, bottom = K >= 4 ? 2 : 1, mid = n - top - bottom, draw = K - top - bottom;
        PpaRng rng;
        rng_seed(&rng, mix(d->seed, (uint64_t)epoch, 2 + (uint64_t)r));
        shuffle(order + top, mid, &rng); /* a uniform draw of `draw` middle responses */
        int *keep = xmalloc(sizeof(int) * (size_t)K), k = 0;
        for (int i = 0; i < top; i++) keep[k++] = order[i];
        for (int i = 0; i < draw; i++) keep[k++] = order[top + i];
        for (int i = 0; i < bottom; i++) keep[k++] = order[n - bottom + i];
        by_label(x->scores, keep, K, 1); /* back to label order (the drawn middle ones by file position among ties) */
        memcpy(order, keep, sizeof(int) * (size_t)K);
        free(keep);
        m = K;
    }
    memcpy(idx, order, sizeof(int) * (size_t)m);
    free(order);
    return m;
}

static void reserve(TrainData *d, int n, int items) {
    if (n > d->cap_rows) {
        d->cap_rows = n;
        d->rows = xrealloc(d->rows, sizeof(Row) * (size_t)n);
        d->lab_p = xrealloc(d->lab_p, sizeof(double *) * (size_t)n);
        d->ref_p = xrealloc(d->ref_p, sizeof(double *) * (size_t)n);
        d->lines = xrealloc(d->lines, sizeof(long) * (size_t)n);
    }
    if (items > d->cap_items) {
        d->cap_items = items;
        d->lens = xrealloc(d->lens, sizeof(int) * (size_t)items);
        d->resp = xrealloc(d->resp, sizeof(int *) * (size_t)items);
        d->labels = xrealloc(d->labels, sizeof(double) * (size_t)items);
        d->ref = xrealloc(d->ref, sizeof(double) * (size_t)items);
    }
}

void train_data_take(TrainData *d, long epoch, long cursor, int n, const RefCache *ref, MicroLists *out) {
    epoch_order(d, epoch);
    int items = 0;
    for (int i = 0; i < n; i++) {
        int nr = d->ds->rows[d->perm[cursor + i]].n_resp;
        items += nr < d->list_size ? nr : d->list_size;
    }
    reserve(d, n, items);
    int *idx = xmalloc(sizeof(int) * (size_t)(items ? items : 1));
    for (int i = 0, at = 0; i < n; i++) {
        int r = d->perm[cursor + i];
        const DataRow *x = &d->ds->rows[r];
        int m = select_list(d, epoch, r, idx);
        for (int k = 0; k < m; k++) {
            d->resp[at + k] = x->resp[idx[k]], d->lens[at + k] = x->resp_len[idx[k]];
            d->labels[at + k] = x->scores[idx[k]];
            d->ref[at + k] = ref ? ref->logp[ref->offset[r] + idx[k]] : 0.0;
        }
        d->rows[i] = (Row){x->prompt_len, x->prompt, m, d->lens + at, (const int *const *)(d->resp + at)};
        d->lab_p[i] = d->labels + at, d->ref_p[i] = d->ref + at, d->lines[i] = x->line;
        at += m;
    }
    free(idx);
    *out = (MicroLists){n, d->rows, d->lab_p, ref ? d->ref_p : NULL, d->lines};
}
