/* test_data.c: from read rows to the lists of each step (train/data.h):
 * truncation (prompt keeps its end, responses their start, never empty),
 * duplicates after truncation, missing labels, all-equal rows, and the list
 * rule (2 best + 2 worst + a seeded draw of the middle, sorted by label,
 * redrawn each epoch, a pure function of (seed, epoch, row) so that a resumed
 * run takes the same lists). Rows are built in memory. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/common.h"
#include "train/data.h"

/* a row: prompt ids 1..np, response k = ids (100 k + 1 ..), lens[k] tokens */
static DataRow make_row(int np, int n, const int *lens, const double *scores) {
    DataRow d = {0};
    d.id = strdup("r");
    d.prompt_len = np;
    d.prompt = xmalloc(sizeof(int) * (size_t)np);
    for (int i = 0; i < np; i++) d.prompt[i] = i + 1;
    d.n_resp = n;
    d.resp_len = xmalloc(sizeof(int) * (size_t)n);
    d.resp = xmalloc(sizeof(int *) * (size_t)n);
    d.scores = xmalloc(sizeof(double) * (size_t)n);
    for (int k = 0; k < n; k++) {
        d.resp_len[k] = lens[k], d.scores[k] = scores[k];
        d.resp[k] = xmalloc(sizeof(int) * (size_t)lens[k]);
        for (int i = 0; i < lens[k]; i++) d.resp[k][i] = 100 * (k + 1) + i;
    }
    return d;
}

static void set(DataSet *ds, DataRow *rows, int n) {
    memset(ds, 0, sizeof *ds);
    ds->rows = xmalloc(sizeof(DataRow) * (size_t)(n ? n : 1));
    memcpy(ds->rows, rows, sizeof(DataRow) * (size_t)n);
    ds->n = n;
}

static void test_prepare(void) {
    DataRow rows[6];
    /* 0: long prompt (10) and a long response (8): 18 > 12, prompt keeps its last 4, room 8 */
    rows[0] = make_row(10, 2, (int[]){3, 8}, (double[]){1, 0});
    /* 1: a 20-token response is cut to 12 - 3 = 9 (its start kept) */
    rows[1] = make_row(3, 2, (int[]){20, 2}, (double[]){0, 1});
    /* 2: two responses equal after the cut (their first 9 tokens differ: ids by k), a NaN label */
    rows[2] = make_row(3, 3, (int[]){2, 2, 2}, (double[]){1, NAN, 0});
    /* 3: all labels equal: no ranking */
    rows[3] = make_row(2, 3, (int[]){1, 2, 3}, (double[]){0.5, 0.5, 0.5});
    /* 4: one response left once the NaN goes */
    rows[4] = make_row(2, 2, (int[]){1, 2}, (double[]){NAN, 0.5});
    /* 5: identical responses (same ids): the later one goes, then too few */
    rows[5] = make_row(2, 2, (int[]){4, 4}, (double[]){1, 0});
    memcpy(rows[5].resp[1], rows[5].resp[0], sizeof(int) * 4);
    DataSet ds;
    set(&ds, rows, 6);
    PrepStats st;
    char err[256];
    CHECK(data_prepare(&ds, 12, 4, &st, err, sizeof err) == 0, "prepare: %s", err);
    CHECK(ds.n == 3, "3 rows kept (%d)", ds.n);
    const DataRow *a = &ds.rows[0], *b = &ds.rows[1], *c = &ds.rows[2];
    CHECK(a->prompt_len == 4 && a->prompt[0] == 7 && a->prompt[3] == 10, "a long prompt keeps its last 4 tokens (keep_end)");
    CHECK(a->resp_len[0] == 3 && a->resp_len[1] == 8, "responses that fit stay whole");
    CHECK(b->prompt_len == 3 && b->resp_len[0] == 9 && b->resp[0][8] == 108 && b->resp_len[1] == 2,
          "a long response keeps its first max_length - prompt tokens");
    CHECK(c->n_resp == 2 && c->scores[0] == 1 && c->scores[1] == 0, "a response without a label is removed");
    CHECK(st.truncated_prompts == 1 && st.truncated_responses == 1, "truncations counted (%ld, %ld)", st.truncated_prompts,
          st.truncated_responses);
    CHECK(st.masked_responses == 2 && st.duplicate_responses == 1, "unlabelled (%ld) and duplicate (%ld) responses counted",
          st.masked_responses, st.duplicate_responses);
    CHECK(st.dropped_equal == 1 && st.dropped_few == 2, "rows dropped: all equal %ld, fewer than 2 %ld", st.dropped_equal,
          st.dropped_few);
    for (int r = 0; r < ds.n; r++)
        for (int k = 0; k < ds.rows[r].n_resp; k++)
            CHECK(ds.rows[r].resp_len[k] >= 1 && ds.rows[r].prompt_len + ds.rows[r].resp_len[k] <= 12,
                  "row %d response %d: 1..max_length tokens", r, k);
    data_free(&ds);

    /* responses that become identical after the cut: one is removed */
    rows[0] = make_row(2, 3, (int[]){30, 31, 2}, (double[]){1, 0.5, 0});
    memcpy(rows[0].resp[1], rows[0].resp[0], sizeof(int) * 30);
    set(&ds, rows, 1);
    CHECK(data_prepare(&ds, 12, 4, &st, err, sizeof err) == 0 && ds.n == 1 && ds.rows[0].n_resp == 2 &&
              st.duplicate_responses == 1,
          "responses identical after truncation: the later one is removed (%d responses)", ds.n ? ds.rows[0].n_resp : 0);
    data_free(&ds);

    rows[0] = make_row(2, 2, (int[]){1, 1}, (double[]){1, 1});
    set(&ds, rows, 1);
    CHECK(data_prepare(&ds, 12, 4, &st, err, sizeof err) == -1 &&
              !strcmp(err, "gives no list: of its 1 row, 1 has all labels equal and 0 have fewer than 2 labelled, distinct "
                           "responses"),
          "nothing left, with the counts: %s", err);
    data_free(&ds);
    set(&ds, rows, 0); /* an empty file is not "all labels equal" */
    CHECK(data_prepare(&ds, 12, 4, &st, err, sizeof err) == -1 && !strcmp(err, "holds no rows"), "no rows at all: %s", err);
    data_free(&ds);
    set(&ds, rows, 0);
    ds.skipped = 3;
    CHECK(data_prepare(&ds, 12, 4, &st, err, sizeof err) == -1 &&
              !strcmp(err, "holds no valid rows: its 3 lines were all skipped (--skip-invalid)"),
          "every line skipped: %s", err);
    data_free(&ds);
    rows[0] = make_row(2, 2, (int[]){1, 1}, (double[]){1, 0});
    set(&ds, rows, 1);
    CHECK(data_prepare(&ds, 12, 12, &st, err, sizeof err) == -1 && strstr(err, "max-prompt-length"),
          "max_prompt_length must be below max_length: %s", err);
    data_free(&ds);
}

/* the labels of the lists of one epoch, row by row */
static void lists_of(TrainData *td, long epoch, long n, double *lab, int *len, int *rowid) {
    for (long c = 0, at = 0; c < n; c++) {
        MicroLists ml;
        train_data_take(td, epoch, c, 1, NULL, &ml);
        len[c] = ml.rows[0].n_resp;
        rowid[c] = ml.rows[0].prompt_len; /* rows below differ by prompt length */
        for (int k = 0; k < len[c]; k++) lab[at + k] = ml.labels[0][k];
        at += len[c];
    }
}

static void test_lists(void) {
    enum { N = 40 };
    DataRow rows[N];
    for (int r = 0; r < N; r++) { /* row r: prompt of r + 1 tokens, 9 responses (5 for odd r) with labels 0..n-1 shuffled */
        int n = r % 2 ? 5 : 9, lens[9];
        double sc[9];
        for (int k = 0; k < n; k++) lens[k] = 1 + k % 3, sc[k] = (double)((k * 2 + r) % n);
        rows[r] = make_row(r + 1, n, lens, sc);
    }
    DataSet ds;
    set(&ds, rows, N);
    TrainData *td = train_data_new(&ds, 6, 42), *td2 = train_data_new(&ds, 6, 42);
    CHECK(train_data_lists(td) == N, "one list per row and epoch");
    double lab0[N * 9], lab1[N * 9], lab2[N * 9];
    int len0[N], len1[N], len2[N], id0[N], id1[N], id2[N];
    lists_of(td, 0, N, lab0, len0, id0);
    int perm_ok = 1, rule_ok = 1, seen[N] = {0};
    for (int c = 0, at = 0; c < N; c++) {
        int r = id0[c] - 1, n = rows[r].n_resp;
        seen[r]++;
        int want = n > 6 ? 6 : n;
        if (len0[c] != want) rule_ok = 0;
        for (int k = 1; k < len0[c]; k++)
            if (!(lab0[at + k - 1] > lab0[at + k])) rule_ok = 0; /* sorted by label, descending */
        if (n == 9 && !(lab0[at] == 8 && lab0[at + 1] == 7 && lab0[at + 4] == 1 && lab0[at + 5] == 0)) rule_ok = 0;
        at += len0[c];
    }
    for (int r = 0; r < N; r++) perm_ok &= seen[r] == 1;
    CHECK(perm_ok, "an epoch visits every row once");
    CHECK(rule_ok, "a list keeps the 2 best and the 2 worst (list size 6 of 9), sorted by label; short rows stay whole");
    /* the same (seed, epoch) from another TrainData, and out of order: the same lists */
    lists_of(td2, 1, N, lab1, len1, id1);
    lists_of(td2, 0, N, lab2, len2, id2);
    CHECK(!memcmp(id0, id2, sizeof id0) && !memcmp(len0, len2, sizeof len0) && !memcmp(lab0, lab2, sizeof(double) * 6 * N / 2),
          "lists are a pure function of (seed, epoch, cursor): a resumed run takes the same");
    CHECK(memcmp(id0, id1, sizeof id0), "each epoch visits the rows in another order");
    int middle_differs = 0;
    for (int c = 0; c < N; c++) /* the same row in epochs 0 and 1 */
        for (int d = 0; d < N; d++)
            if (id1[d] == id0[c] && rows[id0[c] - 1].n_resp == 9) {
                int at0 = 0, at1 = 0;
                for (int i = 0; i < c; i++) at0 += len0[i];
                for (int i = 0; i < d; i++) at1 += len1[i];
                middle_differs += memcmp(lab0 + at0 + 2, lab1 + at1 + 2, sizeof(double) * 2) != 0;
            }
    CHECK(middle_differs > 3, "the middle of a list is redrawn each epoch (%d of %d rows)", middle_differs, N / 2);
    train_data_free(td2);
    td2 = train_data_new(&ds, 6, 43);
    lists_of(td2, 0, N, lab1, len1, id1);
    CHECK(memcmp(id0, id1, sizeof id0), "another seed, another order");
    train_data_free(td2);
    td2 = train_data_new(&ds, 2, 42);
    lists_of(td2, 0, N, lab1, len1, id1);
    int pair_ok = 1;
    for (int c = 0; c < N; c++)
        pair_ok &= len1[c] == 2 && lab1[2 * c] == rows[id1[c] - 1].n_resp - 1 && lab1[2 * c + 1] == 0;
    CHECK(pair_ok, "list size 2: the best and the worst");
    train_data_free(td2);
    train_data_free(td);
    data_free(&ds);
}

int main(void) {
    test_prepare();
    test_lists();
    return check_report("test_data");
}
