/* test_progress.c: the progress lines (core/progress.h) on a fake clock: the ETA follows the whole run's rate after
 * every unit (never the last unit's, never 0 while work remains), the lines off a terminal (the first unit, every
 * interval, the end) and on one (\r, rewritten in place), a resumed count, an unknown total, a rank that is off. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/progress.h"

static double now_s; /* the fake clock */
static double fake_clock(void) { return now_s; }

/* a progress writing to a temporary file, at time 0 */
static FILE *open_progress(Progress *p, int tty, double interval, long done0, long total) {
    FILE *f = tmpfile();
    now_s = 0;
    progress_init(p, "test", "units", 1);
    p->clock = fake_clock, p->out = f, p->tty = tty, p->interval = interval;
    progress_start(p, done0, total);
    return f;
}

/* what f holds (malloc'd) */
static char *contents(FILE *f) {
    fflush(f);
    long n = ftell(f);
    char *s = calloc((size_t)n + 1, 1);
    rewind(f);
    if (fread(s, 1, (size_t)n, f) != (size_t)n) s[0] = 0;
    return s;
}

static int count(const char *s, const char *what) {
    int n = 0;
    for (const char *at = s; (at = strstr(at, what)); at += strlen(what)) n++;
    return n;
}

/* the rule: seconds so far x units left / units done, rounded up; 1 at least while work remains; 0 at the end */
static long rule(double elapsed, long done0, long done, long total) {
    if (done >= total) return 0;
    double s = elapsed * (double)(total - done) / (double)(done - done0);
    return s < 1 ? 1 : (long)ceil(s);
}

/* units of very different durations: the ETA after each one is the rule, and never 0 before the end */
static void eta_follows_the_run(void) {
    Progress p;
    FILE *f = open_progress(&p, 0, 30, 0, 20);
    CHECK(progress_eta(&p, now_s) == -1, "no ETA before the first unit");
    static const double took[20] = {10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 0.001, 0.001, 60, 0.5, 0.5, 0.5, 30, 0.01,
                                     0.01, 0.01};
    long last = -1;
    int jumped = 0;
    for (long u = 1; u <= 20; u++) {
        now_s += took[u - 1];
        progress_update(&p, u, "%ld/20 units", u);
        long eta = progress_eta(&p, now_s), want = rule(now_s, 0, u, 20);
        CHECK(eta == want, "unit %ld: ETA %ld s, the whole run's rate gives %ld s", u, eta, want);
        if (u < 20) CHECK(eta >= 1, "unit %ld: ETA %ld s while %ld units remain", u, eta, 20 - u);
        if (u == 11) /* a unit of 1 ms after ten of 10 s: the last unit's rate would say 9 ms */
            CHECK(eta >= 80, "after a quick unit the ETA stays near 9 units x 9.1 s: %ld s", eta);
        if (last > 0 && u < 20 && eta * 10 < last) jumped = 1;
        last = eta;
    }
    CHECK(!jumped, "the ETA never fell to a tenth from one unit to the next while work remained");
    CHECK(progress_eta(&p, now_s) == 0, "ETA 0 at the end");
    fclose(f);
}

/* off a terminal: the first unit, one line per interval, the end; each a whole line with the ETA as h:mm:ss */
static void lines_off_a_terminal(void) {
    Progress p;
    FILE *f = open_progress(&p, 0, 30, 0, 100);
    for (long u = 1; u <= 100; u++) {
        now_s += 1;
        progress_update(&p, u, "%ld/100 units", u);
    }
    progress_end(&p);
    char *s = contents(f);
    /* t = 1 (first), 31, 61, 91 (every 30 s), 100 (the end) */
    CHECK(count(s, "\n") == 5, "5 lines off a terminal at 30 s in 100 s, got %d:\n%s", count(s, "\n"), s);
    CHECK(!strchr(s, '\r'), "no carriage return off a terminal");
    CHECK(!strncmp(s, "ppa test: units 1/100 units, ETA 0:01:39\n", 41), "the first line: %.60s", s);
    CHECK(strstr(s, "ppa test: units 31/100 units, ETA 0:01:09\n") != NULL, "the line at 31 s:\n%s", s);
    CHECK(strstr(s, "ppa test: units 100/100 units, ETA 0:00:00\n") != NULL, "the last line: done == total");
    free(s);
    fclose(f);

    f = open_progress(&p, 0, 0, 0, 4); /* interval 0: a line per unit */
    for (long u = 1; u <= 4; u++) now_s += 3600, progress_update(&p, u, "%ld/4", u);
    progress_end(&p);
    s = contents(f);
    CHECK(count(s, "\n") == 4, "interval 0: a line per unit, got %d", count(s, "\n"));
    CHECK(strstr(s, "ppa test: units 1/4, ETA 3:00:00\n") != NULL, "hours in h:mm:ss:\n%s", s);
    free(s);
    fclose(f);
}

/* on a terminal: \r and one line rewritten, padded over a longer one, ended at done == total */
static void lines_on_a_terminal(void) {
    Progress p;
    FILE *f = open_progress(&p, 1, 30, 0, 3);
    now_s = 1, progress_update(&p, 1, "1/3 a long text");
    now_s = 2, progress_update(&p, 2, "2/3");
    now_s = 2.1, progress_update(&p, 2, "2/3 again"); /* nothing new done: no line */
    now_s = 3, progress_update(&p, 3, "3/3");
    progress_end(&p);
    char *s = contents(f);
    CHECK(count(s, "\r") == 3, "three rewrites, got %d: %s", count(s, "\r"), s);
    CHECK(count(s, "\n") == 1 && s[strlen(s) - 1] == '\n', "one newline, at the end: %s", s);
    CHECK(strstr(s, "\rppa test: units 2/3, ETA 0:00:01     ") != NULL, "a shorter line covers the longer: %s", s);
    free(s);
    fclose(f);

    f = open_progress(&p, 1, 30, 0, 1000); /* at most twice a second: units of 1/64 s (exact), a line per 32 */
    for (long u = 1; u <= 1000; u++) now_s += 1.0 / 64, progress_update(&p, u, "%ld", u);
    s = contents(f);
    CHECK(count(s, "\r") == 33, "units 1, 33, ..., 993 and the last: %d", count(s, "\r"));
    free(s);
    fclose(f);

    f = open_progress(&p, 1, 30, 0, 10); /* a narrow terminal: TEXT's end is cut, the ETA kept */
    p.cols = 40;
    now_s = 1, progress_update(&p, 1, "1/10 rows, and much more to say");
    s = contents(f);
    CHECK(!strcmp(s, "\rppa test: units 1/10 rows, ETA 0:00:09"), "cut to 39 columns: '%s'", s);
    free(s);
    fclose(f);

    f = open_progress(&p, 1, 30, 0, 10); /* break: another line starts on its own */
    now_s = 1, progress_update(&p, 1, "1/10");
    progress_break(&p);
    progress_break(&p);
    s = contents(f);
    CHECK(count(s, "\n") == 1, "break ends the open line once: %s", s);
    free(s);
    fclose(f);
}

/* a resumed run counts its rate from its own start; an unknown total has no ETA and its end line comes at the end */
static void resumed_and_unknown(void) {
    Progress p;
    FILE *f = open_progress(&p, 0, 30, 50, 100);
    now_s = 10, progress_update(&p, 51, "51/100");
    CHECK(progress_eta(&p, now_s) == 490, "resumed at 50: 10 s for 1 unit, 49 left: %ld", progress_eta(&p, now_s));
    fclose(f);

    f = open_progress(&p, 0, 30, 0, 0);
    for (long u = 1; u <= 5; u++) now_s += 1, progress_update(&p, u, "%ld rows", u);
    CHECK(progress_eta(&p, now_s) == -1, "no ETA without a total");
    progress_end(&p);
    char *s = contents(f);
    CHECK(!strcmp(s, "ppa test: units 1 rows\nppa test: units 5 rows\n"), "the first and the end:\n%s", s);
    free(s);
    fclose(f);

    f = open_progress(&p, 0, 0, 0, 10);
    p.on = 0; /* another rank */
    now_s = 1, progress_update(&p, 1, "1/10");
    progress_end(&p);
    s = contents(f);
    CHECK(!s[0], "a progress that is off prints nothing: %s", s);
    free(s);
    fclose(f);
}

static void the_knob(void) {
    Progress p;
    setenv("PPA_PROGRESS_SECONDS", "0", 1);
    progress_init(&p, "test", NULL, 1);
    CHECK(p.interval == 0, "PPA_PROGRESS_SECONDS=0: %g", p.interval);
    setenv("PPA_PROGRESS_SECONDS", "2.5", 1);
    progress_init(&p, "test", NULL, 1);
    CHECK(p.interval == 2.5, "PPA_PROGRESS_SECONDS=2.5: %g", p.interval);
    unsetenv("PPA_PROGRESS_SECONDS");
    progress_init(&p, "test", NULL, 1);
    CHECK(p.interval == 30, "30 s by default: %g", p.interval);
}

int main(void) {
    eta_follows_the_run();
    lines_off_a_terminal();
    lines_on_a_terminal();
    resumed_and_unknown();
    the_knob();
    return check_report("test_progress");
}
