/* progress.c: progress lines on stderr (progress.h). */
#include "core/progress.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "core/common.h"
#include "core/timer.h"

#define TTY_GAP 0.5 /* seconds between rewrites of a terminal line: the eye needs no more */

void progress_init(Progress *p, const char *cmd, const char *what, int on) {
    *p = (Progress){.cmd = cmd, .what = what, .on = on, .tty = isatty(fileno(stderr)), .interval = 30.0,
                    .clock = timer_now, .out = stderr, .shown_done = -1};
    const char *e = getenv("PPA_PROGRESS_SECONDS");
    if (e && *e) { /* every rank checks it: the same answer everywhere */
        char *end;
        errno = 0;
        double v = strtod(e, &end);
        if (*end || errno || !isfinite(v) || v < 0)
            ppa_die(2, "PPA_PROGRESS_SECONDS=%s: give the seconds between progress lines off a terminal, a number >= 0",
                    e);
        p->interval = v;
    }
}

void progress_start(Progress *p, long done0, long total) {
    if (!p->on) return;
    p->done0 = p->done = done0, p->total = total, p->shown_done = -1;
    p->t0 = p->shown = p->clock();
    p->text[0] = 0;
}

long progress_eta(const Progress *p, double now) {
    if (p->total <= 0 || p->done <= p->done0) return -1;
    if (p->done >= p->total) return 0;
    double elapsed = now - p->t0;
    if (!(elapsed > 0)) return -1;
    /* the whole run's rate: one quick unit moves it a little, never to "done" */
    double s = elapsed * (double)(p->total - p->done) / (double)(p->done - p->done0);
    return s < 1 ? 1 : s > 1e9 ? 1000000000L : (long)ceil(s);
}

/* a line for the state now: the first unit done, the end, or the interval passed */
static int due(const Progress *p, double now) {
    if (p->done == p->shown_done || p->done <= p->done0) return 0;
    if (p->shown_done < 0 || (p->total > 0 && p->done >= p->total)) return 1;
    double gap = p->tty && p->interval > TTY_GAP ? TTY_GAP : p->interval;
    return now - p->shown >= gap;
}

/* the width of the terminal out is, or 0 */
static int term_cols(FILE *out) {
    struct winsize w;
    return ioctl(fileno(out), TIOCGWINSZ, &w) == 0 ? w.ws_col : 0;
}

static void print_line(Progress *p, double now) {
    char eta[48] = "", head[128], line[512];
    long s = progress_eta(p, now);
    if (p->total > 0 && s < 0) snprintf(eta, sizeof eta, ", ETA -:--:--");
    else if (p->total > 0) snprintf(eta, sizeof eta, ", ETA %ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
    snprintf(head, sizeof head, "ppa %s: %s%s", p->cmd, p->what ? p->what : "", p->what ? " " : "");
    int keep = (int)strlen(p->text), cols = p->tty ? (p->cols ? p->cols : term_cols(p->out)) : 0;
    int room = cols - 1 - (int)strlen(head) - (int)strlen(eta); /* the last column left free: no wrap */
    if (cols > 0 && keep > room) {
        keep = room > 0 ? room : 0;
        while (keep > 0 && (p->text[keep - 1] == ' ' || p->text[keep - 1] == ',')) keep--; /* no dangling ", " */
    }
    int n = snprintf(line, sizeof line, "%s%.*s%s", head, keep, p->text, eta);
    if (n >= (int)sizeof line) n = (int)sizeof line - 1;
    if (p->tty) { /* rewritten in place; spaces cover what a longer line left */
        fprintf(p->out, "\r%s%*s", line, p->width > n ? p->width - n : 0, "");
        p->width = n, p->open = 1;
        if (p->total > 0 && p->done >= p->total) fputc('\n', p->out), p->open = 0, p->width = 0;
    } else {
        fprintf(p->out, "%s\n", line);
    }
    fflush(p->out);
    p->shown = now, p->shown_done = p->done;
}

void progress_update(Progress *p, long done, const char *fmt, ...) {
    if (!p->on) return;
    p->done = done;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->text, sizeof p->text, fmt, ap);
    va_end(ap);
    double now = p->clock();
    if (due(p, now)) print_line(p, now);
}

void progress_break(Progress *p) {
    if (!p->on || !p->open) return;
    fputc('\n', p->out);
    fflush(p->out);
    p->open = 0, p->width = 0;
}

void progress_end(Progress *p) {
    if (!p->on) return;
    if (p->done != p->shown_done && p->done > p->done0) print_line(p, p->clock());
    progress_break(p);
}
