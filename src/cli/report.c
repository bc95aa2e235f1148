/* report.c: the log's lines as TensorBoard scalars and as the card's final metrics (report.h). */
#include "cli/report.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "core/common.h"
#include "io/atomic.h"
#include "io/file.h"
#include "io/tfevents.h"
#include "template/jinja.h"

#define EVENTS_NAME "events.out.tfevents.ppa"

struct Report {
    const char *who;
    TfEvents *tb;        /* NULL without tensorboard */
    int fixed_time;      /* SOURCE_DATE_EPOCH was set: every wall_time is `when` */
    double when;
    cJSON *last;         /* tag -> last value */
    TfScalar *v;         /* the line's scalars */
    int n, cap;
    char *line;          /* a line being received by the tee */
    size_t len, line_cap;
    FILE *log;           /* the tee's target */
    int own;
    /* the run's summary (report_summary): every training line's, and this process's (not replayed) */
    int replaying;
    long step, lists, tokens, lists_run, tokens_run, steps_run;
    double loss;
    cJSON *eval_final, *eval_best; /* {"step": S, the eval line's numbers} */
};

int report_is_timing(const char *name) {
    size_t n = strlen(name);
    return (n >= 2 && !strcmp(name + n - 2, "_s")) || !strcmp(name, "comm_bytes") || !strcmp(name, "gpu_peak_gib");
}

static double wall_time(const Report *r) {
    if (r->fixed_time) return r->when;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void add_scalar(Report *r, const char *prefix, const char *name, double value) {
    size_t len = strlen(prefix) + strlen(name) + 2;
    char *tag = xmalloc(len);
    snprintf(tag, len, "%s/%s", prefix, name);
    if (r->n == r->cap) r->cap = r->cap * 2 + 16, r->v = xrealloc(r->v, sizeof *r->v * (size_t)r->cap);
    r->v[r->n++] = (TfScalar){tag, value};
    if (report_is_timing(name)) return;
    cJSON *old = cJSON_GetObjectItemCaseSensitive(r->last, tag);
    if (old) cJSON_SetNumberValue(old, value);
    else cJSON_AddNumberToObject(r->last, tag, value);
}

/* every number under obj, "prefix/name", nested objects as "prefix/name/inner" */
static void flatten(Report *r, const cJSON *obj, const char *prefix) {
    for (const cJSON *c = obj->child; c; c = c->next) {
        if (!c->string) continue;
        if (cJSON_IsNumber(c)) add_scalar(r, prefix, c->string, c->valuedouble);
        else if (cJSON_IsObject(c)) {
            size_t len = strlen(prefix) + strlen(c->string) + 2;
            char *inner = xmalloc(len);
            snprintf(inner, len, "%s/%s", prefix, c->string);
            flatten(r, c, inner);
            free(inner);
        }
    }
}

/* the eval line of the best ndcg so far (the paper's measure; the lowest loss when a line has no ndcg) */
static int better_eval(const cJSON *e, const cJSON *best) {
    if (!best) return 1;
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(e, "ndcg"), *b = cJSON_GetObjectItemCaseSensitive(best, "ndcg");
    if (cJSON_IsNumber(a) && cJSON_IsNumber(b)) return a->valuedouble > b->valuedouble;
    a = cJSON_GetObjectItemCaseSensitive(e, "loss"), b = cJSON_GetObjectItemCaseSensitive(best, "loss");
    return cJSON_IsNumber(a) && cJSON_IsNumber(b) && a->valuedouble < b->valuedouble;
}

static long count_of(const cJSON *j, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    return cJSON_IsNumber(v) ? (long)v->valuedouble : 0;
}

/* a training line's counts into the summary, or an eval line's numbers as the final (and maybe best) eval */
static void summary_line(Report *r, const cJSON *j, long step) {
    const cJSON *ev = cJSON_GetObjectItemCaseSensitive(j, "eval");
    if (cJSON_IsObject(ev)) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "step", (double)step);
        for (const cJSON *c = ev->child; c; c = c->next)
            if (cJSON_IsNumber(c) && !report_is_timing(c->string)) cJSON_AddNumberToObject(e, c->string, c->valuedouble);
        if (better_eval(e, r->eval_best)) cJSON_Delete(r->eval_best), r->eval_best = cJSON_Duplicate(e, 1);
        cJSON_Delete(r->eval_final), r->eval_final = e;
        return;
    }
    long lists = count_of(j, "lists") + count_of(j, "rows"), tokens = count_of(j, "tokens");
    const cJSON *loss = cJSON_GetObjectItemCaseSensitive(j, "loss");
    r->step = step, r->lists += lists, r->tokens += tokens;
    r->loss = cJSON_IsNumber(loss) ? loss->valuedouble : NAN;
    if (!r->replaying) r->lists_run += lists, r->tokens_run += tokens, r->steps_run++;
}

/* one logged line: its scalars at its step; 0, or -1 with the events file's reason printed */
static int report_line(Report *r, const char *text, size_t n) {
    cJSON *j = cJSON_ParseWithLength(text, n);
    const cJSON *step = cJSON_GetObjectItemCaseSensitive(j, "step");
    int rc = 0;
    if (cJSON_IsObject(j) && cJSON_IsNumber(step)) { /* other lines (the closing summary) carry no step to plot at */
        summary_line(r, j, (long)step->valuedouble);
        r->n = 0;
        for (const cJSON *c = j->child; c; c = c->next) {
            if (c == step || !c->string) continue;
            if (!strcmp(c->string, "eval") && cJSON_IsObject(c)) flatten(r, c, "eval");
            else if (cJSON_IsNumber(c)) add_scalar(r, "train", c->string, c->valuedouble);
            else if (cJSON_IsObject(c)) {
                size_t len = strlen(c->string) + 7;
                char *inner = xmalloc(len);
                snprintf(inner, len, "train/%s", c->string);
                flatten(r, c, inner);
                free(inner);
            }
        }
        char err[4400];
        if (r->tb && r->n && tfevents_write(r->tb, (long)step->valuedouble, wall_time(r), r->v, r->n, err, sizeof err)) {
            fprintf(stderr, "ppa %s: %s\n", r->who, err);
            rc = -1;
        }
        for (int i = 0; i < r->n; i++) free((char *)r->v[i].tag);
    }
    cJSON_Delete(j);
    return rc;
}

/* "OUT/runs", created when missing (a file or a link there is refused) */
static char *runs_folder(const TrainOptions *o, const char *who) {
    char *dir = ppa_path_join(o->out, "runs");
    struct stat sb;
    if (mkdir(dir, 0777) && errno != EEXIST) ppa_die(1, "%s: cannot create %s: %s", who, dir, strerror(errno));
    if (lstat(dir, &sb) || !S_ISDIR(sb.st_mode))
        ppa_die(2, "%s: %s is %s, not a folder: the TensorBoard files go there (--report-to); move it away", who, dir,
                S_ISLNK(sb.st_mode) ? "a symbolic link" : file_kind(sb.st_mode));
    return dir;
}

/* the lines before this run, as the log keeps them (replay NULL: none) */
static void replay_log(Report *r, const char *replay, const char *events) {
    if (!replay) return;
    char err[4400];
    FILE *in = file_open_regular(replay, err, sizeof err);
    if (!in) ppa_die(2, "%s: cannot read the log to resume: %s", r->who, err);
    char *line = NULL;
    size_t cap = 0;
    r->replaying = 1;
    for (ssize_t len; (len = getline(&line, &cap, in)) > 0;)
        if (report_line(r, line, (size_t)len)) ppa_die(1, "%s: cannot write the TensorBoard file %s", r->who, events);
    r->replaying = 0;
    free(line);
    fclose(in);
}

Report *report_open(const TrainOptions *o, const char *who, const char *replay) {
    Report *r = xcalloc(1, sizeof *r);
    r->who = who;
    r->last = cJSON_CreateObject();
    char ignored[256], err[4400];
    int bits = options_report_to(o->report_to, ignored, sizeof ignored, err, sizeof err);
    if (bits < 0) ppa_die(2, "%s: --report-to %s", who, err); /* the options checked it: cannot happen */
    if (!bits) {
        replay_log(r, replay, NULL);
        return r;
    }
    const char *sde = getenv("SOURCE_DATE_EPOCH");
    if (sde && *sde) {
        long long when;
        if (jinja_source_date(&when, err, sizeof err)) ppa_die(2, "%s: %s", who, err);
        r->fixed_time = 1, r->when = (double)when;
    }
    char *dir = runs_folder(o, who), *path = ppa_path_join(dir, EVENTS_NAME);
    if (bits & REPORT_WANDB)
        fprintf(stderr, "ppa %s: note: report_to wandb: ppa does not talk to Weights & Biases; it writes TensorBoard "
                        "files to %s, which `wandb sync --sync-tensorboard %s` imports into a W&B run\n", who, dir, dir);
    if (!(r->tb = tfevents_create(path, wall_time(r), err, sizeof err))) ppa_die(1, "%s: %s", who, err);
    replay_log(r, replay, path);
    free(dir), free(path);
    return r;
}

static ssize_t tee_write(void *cookie, const char *buf, size_t n) {
    Report *r = cookie;
    if (fwrite(buf, 1, n, r->log) != n || fflush(r->log)) return -1;
    for (size_t i = 0; i < n; i++) {
        if (r->len == r->line_cap) r->line_cap = r->line_cap * 2 + 256, r->line = xrealloc(r->line, r->line_cap);
        r->line[r->len++] = buf[i];
        if (buf[i] != '\n') continue;
        size_t len = r->len;
        r->len = 0;
        if (report_line(r, r->line, len)) {
            errno = EIO;
            return -1;
        }
    }
    return (ssize_t)n;
}

static int tee_close(void *cookie) {
    Report *r = cookie;
    int rc = r->own ? fclose(r->log) : fflush(r->log);
    r->log = NULL;
    return rc ? -1 : 0;
}

FILE *report_tee(Report *r, FILE *log, int own) {
    r->log = log, r->own = own;
    FILE *f = fopencookie(r, "w", (cookie_io_functions_t){NULL, tee_write, NULL, tee_close});
    if (!f) ppa_die(1, "%s: out of memory", r->who);
    return f;
}

const cJSON *report_last(const Report *r) { return r->last; }

static void add_num(cJSON *o, const char *key, double v) { /* null when not finite, as JSON has no NaN */
    cJSON_AddItemToObject(o, key, isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull());
}

cJSON *report_summary(const Report *r, double runtime_s) {
    cJSON *s = cJSON_CreateObject();
    int rows = !strcmp(r->who, "sft"); /* sft trains on rows, the others on lists */
    cJSON_AddNumberToObject(s, "steps", (double)r->step);
    cJSON_AddNumberToObject(s, rows ? "rows" : "lists", (double)r->lists);
    cJSON_AddNumberToObject(s, "tokens", (double)r->tokens);
    add_num(s, "train_loss", r->loss);
    cJSON_AddNumberToObject(s, "steps_this_run", (double)r->steps_run);
    cJSON_AddNumberToObject(s, rows ? "rows_this_run" : "lists_this_run", (double)r->lists_run);
    cJSON_AddItemToObject(s, "final_eval", r->eval_final ? cJSON_Duplicate(r->eval_final, 1) : cJSON_CreateNull());
    cJSON_AddItemToObject(s, "best_eval", r->eval_best ? cJSON_Duplicate(r->eval_best, 1) : cJSON_CreateNull());
    /* timings last, as in the log: the only fields that differ between identical runs */
    add_num(s, "runtime_s", runtime_s);
    add_num(s, rows ? "rows_per_s" : "lists_per_s", runtime_s > 0 ? (double)r->lists_run / runtime_s : 0);
    add_num(s, "tokens_per_s", runtime_s > 0 ? (double)r->tokens_run / runtime_s : 0);
    return s;
}

void report_close(Report *r) {
    if (!r) return;
    char err[4400];
    if (tfevents_close(r->tb, err, sizeof err)) ppa_die(1, "%s: %s", r->who, err);
    cJSON_Delete(r->last), cJSON_Delete(r->eval_final), cJSON_Delete(r->eval_best);
    free(r->v), free(r->line);
    free(r);
}

/* "12 steps, 48 lists, 9,000 tokens in 3.2 s (15.0 lists/s); loss -0.83; eval ndcg 0.91 at step 12 (best 0.93 at
 * step 6)" */
static void summary_text(const cJSON *s, const char *who, char *buf, size_t n) {
    double v[6];
    int rows = !strcmp(who, "sft");
    const char *keys[6] = {"steps", rows ? "rows" : "lists", "tokens", "runtime_s", rows ? "rows_per_s" : "lists_per_s", "train_loss"};
    for (int i = 0; i < 6; i++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(s, keys[i]);
        v[i] = cJSON_IsNumber(x) ? x->valuedouble : NAN;
    }
    int at = snprintf(buf, n, "ppa %s: summary: %.0f steps, %.0f %s, %.0f tokens; this run %.1f s (%.2f %s/s); train loss %.6g",
                      who, v[0], v[1], rows ? "rows" : "lists", v[2], v[3], v[4], rows ? "rows" : "lists", v[5]);
    const cJSON *fe = cJSON_GetObjectItemCaseSensitive(s, "final_eval"), *be = cJSON_GetObjectItemCaseSensitive(s, "best_eval");
    const char *metric = cJSON_GetObjectItemCaseSensitive(fe, "ndcg") ? "ndcg" : "loss";
    const cJSON *f1 = cJSON_GetObjectItemCaseSensitive(fe, metric), *b1 = cJSON_GetObjectItemCaseSensitive(be, metric);
    const cJSON *fs = cJSON_GetObjectItemCaseSensitive(fe, "step"), *bs = cJSON_GetObjectItemCaseSensitive(be, "step");
    if (at > 0 && (size_t)at < n && cJSON_IsNumber(f1) && cJSON_IsNumber(b1) && cJSON_IsNumber(fs) && cJSON_IsNumber(bs))
        snprintf(buf + at, n - (size_t)at, "; eval %s %.6g at step %.0f (best %.6g at step %.0f)", metric, f1->valuedouble,
                 fs->valuedouble, b1->valuedouble, bs->valuedouble);
}

void report_finish(Report *r, FILE *log, const char *dir, double runtime_s) {
    cJSON *s = report_summary(r, runtime_s);
    char *text = cJSON_PrintUnformatted(s), *pretty = cJSON_Print(s), err[4400], line[1024];
    if (!text || !pretty) ppa_die(1, "%s: out of memory", r->who);
    /* the log's last line: no "step", so neither TensorBoard nor a resume (which keeps step lines) takes it */
    if (fprintf(log, "{\"summary\": %s}\n", text) < 0 || fflush(log))
        ppa_die(1, "%s: cannot write the summary to the log: %s", r->who, strerror(errno));
    size_t n = strlen(pretty);
    pretty = xrealloc(pretty, n + 2);
    pretty[n] = '\n', pretty[n + 1] = 0;
    char *path = ppa_path_join(dir, "summary.json");
    if (atomic_write_bytes(path, pretty, n + 1, err, sizeof err)) ppa_die(1, "%s: %s", r->who, err);
    summary_text(s, r->who, line, sizeof line);
    fprintf(stderr, "%s\n", line);
    free(path), free(text), free(pretty);
    cJSON_Delete(s);
}
