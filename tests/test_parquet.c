/* test_parquet.c: the Parquet reader (io/parquet.h) and the inputs around it (io/records.h).
 *  1. Files written by an independent writer (parquet-wasm, arrow-rs's writer, from the npm registry) read back
 *     as the rows they were written from: the committed seeds (tests/fuzz/corpus/parquet, rows in
 *     tests/data/parquet/seed_rows.jsonl) and every file of the fetched fixture set
 *     (cache/parquetref/manifest.jsonl: codecs, page versions, encodings, row groups, nested columns), or are
 *     refused naming the unsupported feature the manifest says.
 *  2. Damaged files: every truncation, every single-byte change of a seed (three ways), and targeted lies (a
 *     footer length, a page's compressed and uncompressed sizes, a row count): never a crash (the asan build runs
 *     this too), every error names the file, every row read is a JSON object.
 *  3. Inputs of several files: a folder of shards, a comma list, a glob, positions across them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "io/json.h"
#include "io/parquet.h"
#include "io/records.h"

static const char *SEEDS[] = {"snappy", "zstd2", "gzip", "none2"};

/* JSON values equal as data: numbers exactly, objects whatever their key order */
static int same(const cJSON *a, const cJSON *b) {
    if (!a || !b) return a == b;
    if ((a->type & 0xff) != (b->type & 0xff)) return 0;
    if (cJSON_IsNumber(a)) return a->valuedouble == b->valuedouble;
    if (cJSON_IsString(a)) return !strcmp(a->valuestring, b->valuestring);
    if (cJSON_IsArray(a)) {
        const cJSON *x = a->child, *y = b->child;
        for (; x && y; x = x->next, y = y->next)
            if (!same(x, y)) return 0;
        return !x && !y;
    }
    if (cJSON_IsObject(a)) {
        if (cJSON_GetArraySize(a) != cJSON_GetArraySize(b)) return 0;
        for (const cJSON *x = a->child; x; x = x->next)
            if (!same(x, cJSON_GetObjectItemCaseSensitive(b, x->string))) return 0;
        return 1;
    }
    return 1; /* null, true, false */
}

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)len + 1);
    *n = fread(b, 1, (size_t)len, f);
    fclose(f);
    return b;
}

static void spit(const char *path, const void *b, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b, 1, n, f) != n || fclose(f)) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
}

/* the rows of a JSON Lines file, parsed */
static int read_lines(const char *path, cJSON **rows, int max) {
    size_t n;
    char *b = slurp(path, &n), *save = NULL;
    if (!b) return -1;
    b[n] = 0;
    int k = 0;
    for (char *l = strtok_r(b, "\n", &save); l && k < max; l = strtok_r(NULL, "\n", &save)) {
        char why[256];
        rows[k] = json_parse(l, strlen(l), why, sizeof why);
        if (rows[k]) k++;
    }
    free(b);
    return k;
}

/* reads path through the reader: -1 with err on a refusal; else the rows compared with want [n_want] */
static int read_compare(const char *path, cJSON **want, int n_want, int *n_rows, char *err, size_t errlen) {
    ParquetReader *r = parquet_open(path, err, errlen);
    *n_rows = 0;
    if (!r) return -1;
    const char *text;
    size_t len;
    int64_t row;
    int rc, mismatch = 0;
    while ((rc = parquet_next(r, &text, &len, &row, err, errlen)) == 1) {
        char why[256];
        cJSON *j = json_parse(text, len, why, sizeof why);
        CHECK(j && cJSON_IsObject(j), "%s row %lld: not a JSON object (%s)", path, (long long)row, why);
        CHECK(row == *n_rows + 1, "%s: row %lld after %d rows", path, (long long)row, *n_rows);
        if (want && (*n_rows >= n_want || !same(j, want[*n_rows]))) {
            char *s = cJSON_PrintUnformatted(j);
            if (!mismatch) fprintf(stderr, "%s row %d: read %s\n", path, *n_rows + 1, s);
            free(s);
            mismatch = 1;
        }
        cJSON_Delete(j);
        (*n_rows)++;
    }
    parquet_close(r);
    if (rc < 0) return -1;
    return mismatch || (want && *n_rows != n_want) ? 1 : 0;
}

static void seeds(void) {
    cJSON *want[8];
    int n = read_lines("tests/data/parquet/seed_rows.jsonl", want, 8);
    CHECK(n == 3, "seed_rows.jsonl: %d rows", n);
    for (int s = 0; s < 4; s++) {
        char path[256], err[1024];
        int rows;
        snprintf(path, sizeof path, "tests/fuzz/corpus/parquet/%s.parquet", SEEDS[s]);
        int rc = read_compare(path, want, n, &rows, err, sizeof err);
        CHECK(rc == 0, "%s: %s", path, rc < 0 ? err : "rows differ from seed_rows.jsonl");
    }
    for (int i = 0; i < n; i++) cJSON_Delete(want[i]);
}

/* a damaged copy must be refused naming the file, or read as JSON objects: never a crash */
static int damaged(const char *path, const char *bytes, size_t n, int *errors) {
    spit(path, bytes, n);
    char err[1024];
    int rows;
    int rc = read_compare(path, NULL, 0, &rows, err, sizeof err);
    if (rc < 0) {
        (*errors)++;
        if (strncmp(err, path, strlen(path))) {
            CHECK(0, "an error without the file's name: %s", err);
            return -1;
        }
    }
    return rc;
}

static void hostile(const char *dir) {
    char base[256], path[300];
    snprintf(base, sizeof base, "tests/fuzz/corpus/parquet/snappy.parquet");
    snprintf(path, sizeof path, "%s/bad.parquet", dir);
    size_t n;
    char *good = slurp(base, &n), *b = malloc(n);
    CHECK(good && n > 100, "%s", base);
    if (!good) return;
    int errors = 0, tries = 0;
    for (size_t len = 0; len < n; len++, tries++) damaged(path, good, len, &errors);
    CHECK(errors == tries, "%d of %d truncations refused (every one must be)", errors, tries);
    errors = tries = 0;
    const unsigned char flips[3] = {0x01, 0x80, 0xff};
    for (size_t i = 0; i < n; i++)
        for (int f = 0; f < 3; f++, tries++) {
            memcpy(b, good, n);
            b[i] ^= (char)flips[f];
            damaged(path, b, n, &errors);
        }
    /* many bytes are string contents or statistics, whose changes read fine; headers and lengths do not */
    CHECK(errors > tries / 10, "only %d of %d single-byte changes refused", errors, tries);
    printf("damaged: %d of %d single-byte changes refused, the rest read as JSON objects\n", errors, tries);

    /* a footer length past the file */
    char err[1024];
    int rows;
    memcpy(b, good, n);
    b[n - 8] = (char)0xff, b[n - 7] = (char)0xff;
    spit(path, b, n);
    CHECK(read_compare(path, NULL, 0, &rows, err, sizeof err) < 0 && strstr(err, "the footer claims"), "footer: %s", err);
    /* the first page's header starts at byte 4: field 1 (type), 2 (uncompressed size), 3 (compressed size), each
     * a header byte 0x15 and a zigzag varint; lying sizes, kept at the same varint length */
    const unsigned char *u = (const unsigned char *)good;
    size_t at = 4, sizes[3];
    for (int f = 0; f < 3; f++) {
        CHECK(u[at] == 0x15, "page header field %d at byte %zu: 0x%02x", f + 1, at, u[at]);
        sizes[f] = ++at;
        while (u[at] & 0x80) at++;
        at++;
    }
    for (int f = 1; f < 3; f++) {
        memcpy(b, good, n);
        b[sizes[f]] ^= 0x02; /* the size +-1 (zigzag: bit 1 of the first byte) */
        spit(path, b, n);
        int rc = read_compare(path, NULL, 0, &rows, err, sizeof err);
        CHECK(rc < 0 && strstr(err, "column"), "page field %d changed: %s", f + 1, rc < 0 ? err : "read");
        printf("page %s size off by one: %s\n", f == 1 ? "uncompressed" : "compressed", err);
    }
    free(good), free(b);
}

/* the fetched fixtures: each file's rows equal its JSON Lines twin, or the file is refused as expected */
static void manifest(void) {
    const char *m = "cache/parquetref/manifest.jsonl";
    cJSON *entries[512];
    int n = read_lines(m, entries, 512);
    CHECK(n > 0, "%s: missing or empty (make fixtures)", m);
    int ok = 0, refused = 0;
    for (int i = 0; i < n; i++) {
        const cJSON *e = entries[i], *file = cJSON_GetObjectItem(e, "file"), *twin = cJSON_GetObjectItem(e, "jsonl"),
                    *expect = cJSON_GetObjectItem(e, "expect");
        if (!cJSON_IsString(file) || !cJSON_IsString(expect)) {
            CHECK(0, "%s entry %d: no file or expect", m, i + 1);
            continue;
        }
        char path[512], tpath[512], err[1024];
        snprintf(path, sizeof path, "cache/parquetref/%s", file->valuestring);
        int rows;
        if (!strcmp(expect->valuestring, "ok")) {
            cJSON *want[4096];
            snprintf(tpath, sizeof tpath, "cache/parquetref/%s", cJSON_IsString(twin) ? twin->valuestring : "");
            int nw = read_lines(tpath, want, 4096);
            CHECK(nw >= 0, "%s: no twin %s", path, tpath);
            int rc = read_compare(path, want, nw, &rows, err, sizeof err);
            CHECK(rc == 0, "%s: %s", path, rc < 0 ? err : "rows differ from its JSON Lines twin");
            ok += rc == 0;
            for (int k = 0; k < nw; k++) cJSON_Delete(want[k]);
        } else {
            int rc = read_compare(path, NULL, 0, &rows, err, sizeof err);
            CHECK(rc < 0 && strstr(err, expect->valuestring), "%s: expected a refusal naming '%s', got %s", path,
                  expect->valuestring, rc < 0 ? err : "rows");
            refused += rc < 0;
        }
    }
    printf("fixtures: %d files read as their twins, %d refused by name\n", ok, refused);
    for (int i = 0; i < n; i++) cJSON_Delete(entries[i]);
}

/* several files as one input: positions run on, and name their file and row */
static void inputs(const char *dir) {
    char a[300], b[300], list[700], where[600], err[1024];
    snprintf(a, sizeof a, "%s/shards", dir);
    mkdir(a, 0700);
    size_t n;
    char *pq = slurp("tests/fuzz/corpus/parquet/gzip.parquet", &n);
    snprintf(a, sizeof a, "%s/shards/train-00000-of-00002.parquet", dir);
    spit(a, pq, n);
    snprintf(b, sizeof b, "%s/shards/train-00001-of-00002.jsonl", dir);
    spit(b, "{\"x\": 1}\n\n{\"x\": 2}\n", 18);
    free(pq);
    snprintf(list, sizeof list, "%s/shards", dir);
    RecordReader *r = records_open(list, err, sizeof err);
    CHECK(r != NULL, "folder: %s", err);
    const char *text;
    size_t len;
    long loc, locs[8];
    int k = 0;
    while (r && records_next(r, &text, &len, &loc) == 1 && k < 8) locs[k++] = loc;
    records_close(r);
    CHECK(k == 5, "folder: %d records (3 rows + 2 lines)", k);
    CHECK(k == 5 && locs[0] == 1 && locs[2] == 3 && locs[3] == 4 && locs[4] == 6, "positions run on across files");
    records_where(list, 6, where, sizeof where);
    CHECK(strstr(where, "train-00001-of-00002.jsonl:3") != NULL, "where 6: %s", where);
    records_where(list, 2, where, sizeof where);
    CHECK(strstr(where, "train-00000-of-00002.parquet:row 2") != NULL, "where 2: %s", where);
    /* a comma list and a glob give the same records */
    snprintf(list, sizeof list, "%s,%s", a, b);
    r = records_open(list, err, sizeof err);
    k = 0;
    while (r && records_next(r, &text, &len, &loc) == 1) k++;
    records_close(r);
    CHECK(k == 5, "comma list: %d records", k);
    snprintf(list, sizeof list, "%s/shards/train-*", dir);
    r = records_open(list, err, sizeof err);
    k = 0;
    while (r && records_next(r, &text, &len, &loc) == 1) k++;
    records_close(r);
    CHECK(k == 5, "glob: %d records", k);
    /* a folder of two splits is refused, naming them */
    snprintf(b, sizeof b, "%s/shards/test-00000-of-00001.jsonl", dir);
    spit(b, "{\"x\": 3}\n", 9);
    snprintf(list, sizeof list, "%s/shards", dir);
    r = records_open(list, err, sizeof err);
    CHECK(!r && strstr(err, "several splits") && strstr(err, "'test'") && strstr(err, "'train'"), "splits: %s", r ? "opened" : err);
    records_close(r);
    snprintf(list, sizeof list, "%s/nothing-*.parquet", dir);
    r = records_open(list, err, sizeof err);
    CHECK(!r && strstr(err, "no file matches"), "empty glob: %s", r ? "opened" : err);
    records_close(r);
}

int main(void) {
    char dir[64];
    snprintf(dir, sizeof dir, "%s/ppa-test-parquet-XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
    seeds();
    inputs(dir);
    hostile(dir);
    manifest();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) fprintf(stderr, "cannot remove %s\n", dir);
    printf("test_parquet: %d passed, %d failed\n", check_passed, check_failed);
    return check_failed != 0;
}
