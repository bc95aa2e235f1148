/* report.c: the log's lines as TensorBoard scalars and as the card's final metrics (report.h). */
#include "cli/report.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "core/common.h"
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

/* one logged line: its scalars at its step; 0, or -1 with the events file's reason printed */
static int report_line(Report *r, const char *text, size_t n) {
    cJSON *j = cJSON_ParseWithLength(text, n);
    const cJSON *step = cJSON_GetObjectItemCaseSensitive(j, "step");
    int rc = 0;
    if (cJSON_IsObject(j) && cJSON_IsNumber(step)) { /* other lines (none today) carry no step to plot at */
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

Report *report_open(const TrainOptions *o, const char *who, const char *replay) {
    Report *r = xcalloc(1, sizeof *r);
    r->who = who;
    r->last = cJSON_CreateObject();
    char ignored[256], err[4400];
    int bits = options_report_to(o->report_to, ignored, sizeof ignored, err, sizeof err);
    if (bits < 0) ppa_die(2, "%s: --report-to %s", who, err); /* the options checked it: cannot happen */
    if (!bits) return r;
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
    if (replay) { /* the lines before this run, as the log keeps them */
        FILE *in = file_open_regular(replay, err, sizeof err);
        if (!in) ppa_die(2, "%s: cannot read the log to resume: %s", who, err);
        char *line = NULL;
        size_t cap = 0;
        for (ssize_t len; (len = getline(&line, &cap, in)) > 0;)
            if (report_line(r, line, (size_t)len)) ppa_die(1, "%s: cannot write the TensorBoard file %s", who, path);
        free(line);
        fclose(in);
    }
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

void report_close(Report *r) {
    if (!r) return;
    char err[4400];
    if (tfevents_close(r->tb, err, sizeof err)) ppa_die(1, "%s: %s", r->who, err);
    cJSON_Delete(r->last);
    free(r->v), free(r->line);
    free(r);
}
