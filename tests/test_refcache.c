/* test_refcache.c: the reference cache: its log-probs equal one forward per
 * row whatever the batching, it round-trips through the file bit for bit, a
 * damaged file is refused, and every key mismatch is named. Also hash64. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "core/common.h"
#include "core/hash.h"
#include "core/rng.h"
#include "train/refcache.h"

static const char *CONFIG =
    "{\"model_type\": \"qwen2\", \"vocab_size\": 61, \"hidden_size\": 32, \"intermediate_size\": 48,"
    " \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2,"
    " \"rms_norm_eps\": 1e-6, \"tie_word_embeddings\": true}";

static Model *tiny_model(uint64_t seed) {
    ModelConfig c;
    char err[1024];
    if (model_config_parse(&c, CONFIG, "tiny", err, sizeof err)) ppa_die(1, "%s", err);
    Model *m = model_new(&c, seed, err, sizeof err);
    if (!m) ppa_die(1, "%s", err);
    return m;
}

/* n random rows: prompt 1..12 tokens, 2..5 responses of 1..9 tokens */
static DataRow *random_rows(int n, PpaRng *rng) {
    DataRow *rows = calloc((size_t)n, sizeof *rows);
    for (int r = 0; r < n; r++) {
        DataRow *d = &rows[r];
        d->prompt_len = 1 + (int)(rng_uniform(rng) * 12);
        d->prompt = malloc(sizeof(int) * (size_t)d->prompt_len);
        for (int i = 0; i < d->prompt_len; i++) d->prompt[i] = (int)(rng_uniform(rng) * 61);
        d->n_resp = 2 + (int)(rng_uniform(rng) * 4);
        d->resp_len = malloc(sizeof(int) * (size_t)d->n_resp);
        d->resp = malloc(sizeof(int *) * (size_t)d->n_resp);
        for (int k = 0; k < d->n_resp; k++) {
            d->resp_len[k] = 1 + (int)(rng_uniform(rng) * 9);
            d->resp[k] = malloc(sizeof(int) * (size_t)d->resp_len[k]);
            for (int i = 0; i < d->resp_len[k]; i++) d->resp[k][i] = (int)(rng_uniform(rng) * 61);
        }
    }
    return rows;
}

static void free_rows(DataRow *rows, int n) {
    for (int r = 0; r < n; r++) {
        for (int k = 0; k < rows[r].n_resp; k++) free(rows[r].resp[k]);
        free(rows[r].prompt), free(rows[r].resp_len), free(rows[r].resp);
    }
    free(rows);
}

static void test_matches_forward(Model *m, const DataRow *rows, int n) {
    RefCache one, many;
    refcache_compute(&one, m, rows, n, 1, NULL);    /* a row per batch */
    refcache_compute(&many, m, rows, n, 400, NULL); /* several rows per batch */
    double worst = 0;
    int counts_ok = 1;
    for (int r = 0; r < n; r++) {
        double lp[8];
        int ns[8];
        Row row = {rows[r].prompt_len, rows[r].prompt, rows[r].n_resp, rows[r].resp_len,
                   (const int *const *)rows[r].resp};
        char err[256];
        Batch *b = batch_new(m, &row, 1, err, sizeof err);
        model_forward(m, b, lp, ns);
        batch_free(b);
        for (int k = 0; k < rows[r].n_resp; k++) {
            int i = one.offset[r] + k;
            worst = fmax(worst, fmax(fabs(one.logp[i] - lp[k]), fabs(many.logp[i] - lp[k])));
            counts_ok &= one.n_scored[i] == ns[k] && many.n_scored[i] == rows[r].resp_len[k];
        }
    }
    CHECK(worst <= 1e-5, "cached log-probs equal one forward per row (worst %.3g)", worst);
    CHECK(counts_ok, "scored-token counts are the response lengths");
    refcache_free(&one), refcache_free(&many);
}

static long file_size(const char *p) {
    FILE *f = fopen(p, "rb");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
}

static void test_file(Model *m, DataRow *rows, int n, const char *dir) {
    char path[256], err[512], why[256];
    snprintf(path, sizeof path, "%s/ref.cache", dir);
    RefCache c, back;
    refcache_compute(&c, m, rows, n, 300, NULL);
    c.key = (RefKey){refkey_weights(m), refkey_tokens(rows, n), 77, "chatml", 1024, 512};
    CHECK(refcache_save(&c, path, err, sizeof err) == 0, "save: %s", err);
    CHECK(refcache_load(&back, path, err, sizeof err) == 0, "load: %s", err);
    size_t nr = (size_t)c.offset[n];
    CHECK(back.n_rows == n && !memcmp(back.logp, c.logp, sizeof(double) * nr) &&
              !memcmp(back.n_scored, c.n_scored, sizeof(int) * nr),
          "the cache round-trips bit for bit");
    RefKey want = c.key;
    CHECK(refcache_check(&back, &want, rows, n, why, sizeof why) == 0, "matching key accepted: %s", why);
    want.weights ^= 1;
    CHECK(refcache_check(&back, &want, rows, n, why, sizeof why) && strstr(why, "weights"), "other weights named: %s", why);
    want = c.key, want.data_file = 78;
    CHECK(refcache_check(&back, &want, rows, n, why, sizeof why) && strstr(why, "data file"), "data change named: %s", why);
    want = c.key, snprintf(want.template_name, sizeof want.template_name, "llama3");
    CHECK(refcache_check(&back, &want, rows, n, why, sizeof why) && strstr(why, "template"), "template named: %s", why);
    want = c.key, want.max_length = 512;
    CHECK(refcache_check(&back, &want, rows, n, why, sizeof why) && strstr(why, "max-length"), "truncation named: %s", why);
    rows[0].prompt[0] = (rows[0].prompt[0] + 1) % 61;
    want = c.key, want.tokens = refkey_tokens(rows, n);
    CHECK(want.tokens != c.key.tokens, "the token hash sees one changed id");
    CHECK(refcache_check(&back, &want, rows, n, why, sizeof why) && strstr(why, "token ids"), "tokens named: %s", why);
    refcache_free(&back);
    /* damaged files: one byte flipped in the payload, one byte cut off */
    long size = file_size(path);
    FILE *f = fopen(path, "r+b");
    fseek(f, size - 20, SEEK_SET);
    int ch = fgetc(f);
    fseek(f, size - 20, SEEK_SET);
    fputc(ch ^ 0x40, f);
    fclose(f);
    CHECK(refcache_load(&back, path, err, sizeof err) && strstr(err, "damaged"), "a flipped byte is refused: %s", err);
    CHECK(refcache_save(&c, path, err, sizeof err) == 0, "save again: %s", err);
    CHECK(truncate(path, size - 1) == 0, "truncate");
    CHECK(refcache_load(&back, path, err, sizeof err) && strstr(err, "truncated"), "a cut file is refused: %s", err);
    snprintf(path, sizeof path, "%s/missing.cache", dir);
    CHECK(refcache_load(&back, path, err, sizeof err) && strstr(err, "missing.cache"), "a missing file is named: %s", err);
    refcache_free(&c);
}

static void test_hash(void) {
    unsigned char buf[300];
    for (int i = 0; i < 300; i++) buf[i] = (unsigned char)(i * 7);
    uint64_t h = hash64(buf, 300, 0);
    int distinct = 1;
    for (int i = 0; i < 300; i++) { /* every single-bit change of every byte position changes the hash */
        buf[i] ^= 1;
        distinct &= hash64(buf, 300, 0) != h;
        buf[i] ^= 1;
    }
    CHECK(distinct, "hash64 changes with any byte");
    CHECK(hash64(buf, 299, 0) != hash64(buf, 300, 0), "hash64 depends on the length");
    CHECK(hash64(buf, 300, 1) != h && hash64(buf, 300, 0) == h, "seeded, repeatable");
}

int main(void) {
    char dir[] = "/tmp/ppa_refcache_XXXXXX";
    if (!mkdtemp(dir)) return 2;
    test_hash();
    PpaRng rng;
    rng_seed(&rng, 21);
    int n = 12;
    DataRow *rows = random_rows(n, &rng);
    Model *m = tiny_model(5);
    test_matches_forward(m, rows, n);
    test_file(m, rows, n, dir);
    Model *m2 = tiny_model(6);
    CHECK(refkey_weights(m2) != refkey_weights(m), "other weights, other key");
    model_free(m2);
    model_free(m);
    free_rows(rows, n);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd)) return 2;
    return check_report("test_refcache");
}
