/* state.c: checkpoint folders with optimizer state (state.h). */
#define _XOPEN_SOURCE 700
#include "train/state.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/common.h"
#include "io/file.h"
#include "core/hash.h"
#include "io/atomic.h"
#include "io/json.h"
#include "io/jsonl.h"
#include "io/safetensors.h"
#include "model/lora.h"



static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

int remove_tree(const char *path) {
    struct stat sb;
    if (lstat(path, &sb) != 0) return errno == ENOENT ? 0 : -1;
    return nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int write_text(FILE *f, const void *ctx) { return fputs(ctx, f) < 0 ? -1 : 0; }

static int name_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* {"file": "hash", ...} of every file of dir but the state file, in name order */
static cJSON *checksums(const char *dir, char *err, size_t errlen) {
    DIR *d = opendir(dir);
    if (!d) return ppa_fail(err, errlen, "%s: %s", dir, strerror(errno)), NULL;
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && strcmp(e->d_name, "ppa_state.json")) {
            names = xrealloc(names, sizeof(char *) * (n + 1));
            names[n++] = strdup(e->d_name);
        }
    closedir(d);
    qsort(names, n, sizeof(char *), name_cmp);
    cJSON *c = cJSON_CreateObject();
    for (size_t i = 0; i < n; i++) {
        char *path = ppa_path_join(dir, names[i]), hex[32];
        int ok;
        snprintf(hex, sizeof hex, "%016" PRIx64, hash64_file(path, &ok));
        if (ok) cJSON_AddStringToObject(c, names[i], hex);
        else ppa_fail(err, errlen, "%s: cannot read it back", path);
        free(path), free(names[i]);
        if (!ok) {
            for (size_t k = i + 1; k < n; k++) free(names[k]);
            free(names);
            cJSON_Delete(c);
            return NULL;
        }
    }
    free(names);
    return c;
}

/* The state file's own checksum: of its other fields, printed compactly in their order. A parse of the file gives
 * the same numbers and strings back, so the reader recomputes it from what it read (tamper evidence, not a
 * signature: it catches an edited step, cursor or checksum list, not someone who recomputes it). */
static void state_self_sum(const cJSON *j, char hex[32]) {
    char *s = cJSON_PrintUnformatted(j);
    if (!s) ppa_die(1, "out of memory");
    snprintf(hex, 32, "%016" PRIx64, hash64(s, strlen(s), 0x70706173746174ULL));
    free(s);
}

#define STATE_FORMAT 2 /* 1: before the state file covered itself (refused: its step and cursor are not checked) */

static char *state_json(const TrainState *st, cJSON *sums) {
    cJSON *j = cJSON_CreateObject();
    char seed[32];
    snprintf(seed, sizeof seed, "%" PRIu64, st->seed);
    cJSON_AddNumberToObject(j, "format", STATE_FORMAT);
    cJSON_AddNumberToObject(j, "step", (double)st->step);
    cJSON_AddNumberToObject(j, "epoch", (double)st->epoch);
    cJSON_AddNumberToObject(j, "cursor", (double)st->cursor);
    cJSON_AddStringToObject(j, "seed", seed);
    cJSON_AddStringToObject(j, "gemm_kernel", st->kernel);
    cJSON_AddNumberToObject(j, "gemm_threads", st->threads);
    cJSON_AddNumberToObject(j, "ranks", st->ranks > 0 ? st->ranks : 1);
    cJSON *o = st->options ? cJSON_Parse(st->options) : NULL;
    cJSON_AddItemToObject(j, "options", o ? o : cJSON_CreateObject());
    cJSON_AddItemToObject(j, "checksums", sums); /* of the other files: a resume verifies them */
    char self[32];
    state_self_sum(j, self);
    cJSON_AddStringToObject(j, "state_checksum", self);
    char *s = cJSON_Print(j);
    cJSON_Delete(j);
    size_t n = strlen(s);
    s = xrealloc(s, n + 2);
    s[n] = '\n', s[n + 1] = 0;
    return s;
}

/* the optimizer file and the state file into dir */
static int write_state_files(const char *dir, const AdamW *opt, const TrainState *st, char *err, size_t errlen) {
    int64_t shape[1] = {(int64_t)opt->n};
    StWriteTensor t[2] = {{"exp_avg", 1, shape, opt->m}, {"exp_avg_sq", 1, shape, opt->v}};
    char *path = ppa_path_join(dir, "optimizer.safetensors");
    int rc = st_write(path, t, 2, ST_F32, err, errlen);
    free(path);
    if (rc) return -1;
    cJSON *sums = checksums(dir, err, errlen);
    if (!sums) return -1;
    char *js = state_json(st, sums);
    path = ppa_path_join(dir, "ppa_state.json");
    rc = atomic_write(path, write_text, js, err, errlen);
    free(js), free(path);
    return rc;
}

/* 1 if s is ".partial", or ".partial.tmp.PID" (PID digits: the folder checkpoint_folder builds it in) */
static int partial_suffix(const char *s) {
    if (strncmp(s, ".partial", 8)) return 0;
    s += 8;
    if (!*s) return 1;
    if (strncmp(s, ".tmp.", 5)) return 0;
    const char *p = s + 5, *q = p;
    while (*q >= '0' && *q <= '9') q++;
    return q > p && !*q;
}

/* exactly the names ppa gives a save in progress: checkpoint-STEP.partial (STEP digits) and .final.partial, each
 * perhaps with .tmp.PID; a user's file that merely starts alike is not ppa's */
static int partial_name(const char *name) {
    if (!strncmp(name, ".final", 6)) return partial_suffix(name + 6);
    if (strncmp(name, "checkpoint-", 11)) return 0;
    const char *p = name + 11, *q = p;
    while (*q >= '0' && *q <= '9') q++;
    return q > p && partial_suffix(q);
}

int state_clean_partials(const char *out, char *err, size_t errlen) {
    DIR *d = opendir(out);
    if (!d) return 0;
    struct dirent *e;
    int rc = 0;
    while (!rc && (e = readdir(d)))
        if (partial_name(e->d_name)) {
            char *path = ppa_path_join(out, e->d_name);
            if (remove_tree(path)) rc = ppa_fail(err, errlen, "%s: cannot remove a stale partial save: %s", path, strerror(errno));
            free(path);
        }
    closedir(d);
    return rc;
}

int state_save(const char *out, const Model *m, const AdamW *opt, const TrainState *st, const char *tokenizer_dir,
               char *path, size_t pathlen, char *err, size_t errlen) {
    char name[64];
    snprintf(name, sizeof name, "checkpoint-%ld", st->step);
    char *final = ppa_path_join(out, name);
    size_t pn = strlen(final) + 16;
    char *partial = xmalloc(pn);
    snprintf(partial, pn, "%s.partial", final);
    struct stat sb;
    int rc = state_clean_partials(out, err, errlen);
    if (rc)
        ; /* err says why */
    else if (remove_tree(partial))
        rc = ppa_fail(err, errlen, "%s: cannot remove a stale partial checkpoint: %s", partial, strerror(errno));
    else if (stat(final, &sb) == 0)
        rc = ppa_fail(err, errlen, "%s: already exists (refusing to overwrite a checkpoint)", final);
    else if ((model_lora(m) ? lora_save(m, partial, tokenizer_dir, err, errlen) : model_save(m, partial, 0, tokenizer_dir, err, errlen)))
        rc = -1;
    if (!rc && PPA_TEST_HOOK("PPA_TEST_DIE_IN_SAVE")) _exit(9); /* tests: a kill in the middle of a save */
    if (!rc && write_state_files(partial, opt, st, err, errlen)) rc = -1;
    if (!rc && rename(partial, final)) rc = ppa_fail(err, errlen, "%s: rename to %s failed: %s", partial, final, strerror(errno));
    if (!rc) rc = fsync_parent(final, err, errlen);
    if (!rc && path) snprintf(path, pathlen, "%s", final);
    free(final), free(partial);
    return rc;
}

int state_read_moments(const char *dir, AdamW *opt, char *err, size_t errlen) {
    char *path = ppa_path_join(dir, "optimizer.safetensors");
    StSet s;
    if (st_open(&s, path, err, errlen)) return free(path), -1;
    const char *names[2] = {"exp_avg", "exp_avg_sq"};
    float *dst[2] = {opt->m, opt->v};
    int rc = 0;
    for (int i = 0; i < 2 && !rc; i++) {
        const StTensor *t = st_find(&s, names[i]);
        if (!t || t->ndim != 1 || t->shape[0] != (int64_t)opt->n || t->dtype != ST_F32)
            rc = ppa_fail(err, errlen, "%s: tensor %s: expected F32 [%zu] (the model has %zu parameters)", path, names[i],
                      opt->n, opt->n);
        else
            st_to_f32(t, dst[i]);
        for (size_t k = 0; k < opt->n && !rc; k++) /* Adam's moments: finite, the second never negative */
            if (!isfinite(dst[i][k]) || (i == 1 && dst[i][k] < 0))
                rc = ppa_fail(err, errlen, "%s: %s[%zu] = %g is not a valid moment%s", path, names[i], k, dst[i][k],
                          i == 1 ? " (finite, >= 0)" : " (finite)");
    }
    st_close(&s);
    free(path);
    return rc;
}

/* A count of the state file into *out: a whole number from 0 to hi. The
 * range comes before the cast (out of range it is undefined behaviour), and
 * a negative cursor would index before the epoch's lists. */
static int whole_in(const cJSON *v, double hi, long *out) {
    double x = v->valuedouble;
    if (!(x >= 0 && x <= hi) || x != floor(x)) return -1;
    *out = (long)x;
    return 0;
}

#define STATE_MAX_COUNT 9007199254740992.0 /* 2^53: every count below it is exact in JSON (a double) */
#define STATE_MAX_THREADS 65536.0

/* the files listed in the state's checksums, as they were written (path: the state file) */
static int verify_checksums(const char *path, const cJSON *sums, char *err, size_t errlen) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    else snprintf(dir, sizeof dir, ".");
    if (!cJSON_IsObject(sums)) return ppa_fail(err, errlen, "%s: \"checksums\" must be an object", path);
    for (const cJSON *c = sums->child; c; c = c->next) {
        if (!cJSON_IsString(c) || strchr(c->string, '/'))
            return ppa_fail(err, errlen, "%s: checksums: \"%s\" is not a file's hash", path, c->string);
        char *file = ppa_path_join(dir, c->string), hex[32];
        int ok;
        snprintf(hex, sizeof hex, "%016" PRIx64, hash64_file(file, &ok));
        int same = ok && !strcmp(hex, c->valuestring);
        if (!same) ppa_fail(err, errlen, "%s: %s since the checkpoint was written (checksum %s, now %s): the checkpoint is "
                        "corrupt; resume from another one", file, ok ? "changed" : "unreadable", c->valuestring,
                        ok ? hex : "none");
        free(file);
        if (!same) return -1;
    }
    return 0;
}

static int parse_state(const char *path, const char *text, TrainState *st, char *err, size_t errlen) {
    char why[512];
    cJSON *j = json_parse(text, strlen(text), why, sizeof why);
    if (!j) return ppa_fail(err, errlen, "%s: %s", path, why);
    const cJSON *step = cJSON_GetObjectItemCaseSensitive(j, "step"), *ep = cJSON_GetObjectItemCaseSensitive(j, "epoch");
    const cJSON *cur = cJSON_GetObjectItemCaseSensitive(j, "cursor"), *seed = cJSON_GetObjectItemCaseSensitive(j, "seed");
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(j, "gemm_kernel"), *th = cJSON_GetObjectItemCaseSensitive(j, "gemm_threads");
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(j, "options");
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(j, "format"), *self = cJSON_GetObjectItemCaseSensitive(j, "state_checksum");
    if (j && (!cJSON_IsNumber(fmt) || fmt->valuedouble != STATE_FORMAT)) {
        char *v = fmt ? cJSON_PrintUnformatted(fmt) : NULL;
        ppa_fail(err, errlen, "%s: format %s is not one this ppa reads (format %d)%s", path, v ? v : "(absent)", STATE_FORMAT,
                 cJSON_IsNumber(fmt) && fmt->valuedouble == 1 ? ": a checkpoint of an older ppa, whose state file has no "
                 "checksum of its own; resume it with the ppa that wrote it, or start the run again" : "");
        free(v), cJSON_Delete(j);
        return -1;
    }
    if (j) {
        char want[32], *got = cJSON_IsString(self) ? strdup(self->valuestring) : NULL;
        cJSON_DeleteItemFromObjectCaseSensitive(j, "state_checksum");
        state_self_sum(j, want);
        int same = got && !strcmp(got, want);
        free(got);
        if (!same) {
            cJSON_Delete(j);
            return ppa_fail(err, errlen, "%s does not match its checksum (state_checksum): the checkpoint was changed after "
                            "ppa wrote it; resume from another checkpoint", path);
        }
    }
    if (!j || !cJSON_IsNumber(step) || !cJSON_IsNumber(ep) || !cJSON_IsNumber(cur) || !cJSON_IsString(seed) ||
        !cJSON_IsString(k) || !cJSON_IsNumber(th) || !cJSON_IsObject(o)) {
        cJSON_Delete(j);
        return ppa_fail(err, errlen, "%s: not a ppa training state (step, epoch, cursor, seed, gemm_kernel, gemm_threads, "
                    "options expected)", path);
    }
    long threads;
    if (whole_in(step, STATE_MAX_COUNT, &st->step) || whole_in(ep, STATE_MAX_COUNT, &st->epoch) ||
        whole_in(cur, STATE_MAX_COUNT, &st->cursor) || whole_in(th, STATE_MAX_THREADS, &threads)) {
        cJSON_Delete(j);
        return ppa_fail(err, errlen, "%s: step, epoch and cursor must be whole numbers from 0 to 2^53, gemm_threads "
                    "from 0 to %.0f", path, STATE_MAX_THREADS);
    }
    st->seed = strtoull(seed->valuestring, NULL, 10);
    snprintf(st->kernel, sizeof st->kernel, "%s", k->valuestring);
    st->threads = (int)threads;
    const cJSON *rk = cJSON_GetObjectItemCaseSensitive(j, "ranks");
    long ranks = 1;
    if (rk && whole_in(rk, STATE_MAX_THREADS, &ranks)) { /* older states have none: one process */
        cJSON_Delete(j);
        return ppa_fail(err, errlen, "%s: ranks must be a whole number from 1 to %.0f", path, STATE_MAX_THREADS);
    }
    st->ranks = ranks < 1 ? 1 : (int)ranks;
    st->options = cJSON_PrintUnformatted(o);
    const cJSON *sums = cJSON_GetObjectItemCaseSensitive(j, "checksums");
    int rc = verify_checksums(path, sums, err, errlen);
    cJSON_Delete(j);
    return rc;
}

int state_read(const char *dir, TrainState *st, char *err, size_t errlen) {
    memset(st, 0, sizeof *st);
    char *path = ppa_path_join(dir, "ppa_state.json");
    char why[4400];
    FILE *f = file_open_regular(path, why, sizeof why);
    if (!f) {
        ppa_fail(err, errlen, "%s (is %s a checkpoint-STEP folder written by ppa train?)", why, dir);
        free(path);
        return -1;
    }
    char *text = NULL;
    size_t cap = 0, n = 0, got;
    char buf[4096];
    while ((got = fread(buf, 1, sizeof buf, f)) > 0) {
        if (n + got + 1 > cap) text = xrealloc(text, cap = 2 * (n + got + 1));
        memcpy(text + n, buf, got), n += got;
    }
    fclose(f);
    int rc = text ? 0 : ppa_fail(err, errlen, "%s: empty", path);
    if (!rc) text[n] = 0, rc = parse_state(path, text, st, err, errlen);
    free(text), free(path);
    return rc;
}

int state_load(const char *dir, AdamW *opt, TrainState *st, char *err, size_t errlen) {
    return state_read(dir, st, err, errlen) ? -1 : state_read_moments(dir, opt, err, errlen);
}

void state_free(TrainState *st) {
    free(st->options);
    st->options = NULL;
}
