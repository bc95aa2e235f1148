/* golden_rows.h: the rows of the engine goldens (tests/fixtures/engine/rows_*.jsonl,
 * written by tests/ref/engine_ref.py --make-rows), for test_engine.c and test_bf16.c. */
#ifndef PPA_TEST_GOLDEN_ROWS_H
#define PPA_TEST_GOLDEN_ROWS_H

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "io/jsonl.h"
#include "model/llama.h"

typedef struct {
    int n;
    Row rows[8];
    int *lens[8], *prompt[8], **resp[8];
    double w[64]; /* the golden loss's weights, L = sum w logp; nw of them, one per response */
    int nw;
} GoldenRows;

static int *ints(const cJSON *a, int *n) {
    *n = cJSON_GetArraySize(a);
    int *v = malloc(sizeof(int) * (size_t)(*n ? *n : 1)), i = 0;
    for (const cJSON *it = a->child; it; it = it->next) v[i++] = it->valueint;
    return v;
}

static void read_golden_rows(const char *path, GoldenRows *g) {
    memset(g, 0, sizeof *g);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL, "open %s", path);
    if (!f) return;
    JsonlReader rd;
    jsonl_init(&rd, f, path);
    char *line;
    while (jsonl_next(&rd, &line) && g->n < 8) {
        cJSON *j = cJSON_Parse(line);
        int P, K = cJSON_GetArraySize(cJSON_GetObjectItem(j, "response_ids")), k = 0, nw;
        g->prompt[g->n] = ints(cJSON_GetObjectItem(j, "prompt_ids"), &P);
        g->lens[g->n] = malloc(sizeof(int) * (size_t)K);
        g->resp[g->n] = malloc(sizeof(int *) * (size_t)K);
        for (const cJSON *it = cJSON_GetObjectItem(j, "response_ids")->child; it; it = it->next, k++)
            g->resp[g->n][k] = ints(it, &g->lens[g->n][k]);
        const cJSON *w = cJSON_GetObjectItem(j, "weights");
        nw = 0;
        for (const cJSON *it = w->child; it; it = it->next) g->w[g->nw + nw++] = it->valuedouble;
        g->nw += nw;
        g->rows[g->n] = (Row){P, g->prompt[g->n], K, g->lens[g->n], (const int *const *)g->resp[g->n]};
        g->n++;
        cJSON_Delete(j);
    }
    jsonl_free(&rd);
    fclose(f);
}

static void free_golden_rows(GoldenRows *g) {
    for (int r = 0; r < g->n; r++) {
        for (int k = 0; k < g->rows[r].n_resp; k++) free(g->resp[r][k]);
        free(g->resp[r]), free(g->lens[r]), free(g->prompt[r]);
    }
}

#endif
