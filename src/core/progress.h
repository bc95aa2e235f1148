/* progress.h: the progress lines of the long commands on stderr, one mechanism and one format for all of them:
 *     ppa CMD: [WHAT ]TEXT, ETA h:mm:ss
 * TEXT is the caller's (its done/total first). On a terminal the line is rewritten in place (\r), at most twice a
 * second, and cut to the terminal's width at TEXT's end (a wrapped line cannot be rewritten); elsewhere (a file, a pipe, a batch job's log) a whole line at the first unit done, one every 30 s and one
 * at the end (done == total). The ETA is the work left at the rate of the whole run so far (units done since the
 * start over seconds since the start), never the last unit's alone: it does not fall to 0 while work remains.
 * PPA_PROGRESS_SECONDS=S sets the seconds between lines off a terminal (0: a line at every update). Core holds no
 * rank: a caller under MPI passes on = 0 on every rank but 0. */
#ifndef PPA_PROGRESS_H
#define PPA_PROGRESS_H

#include <stdio.h>

typedef struct {
    const char *cmd;       /* "ppa CMD: " */
    const char *what;      /* what is counted, after it (NULL: nothing) */
    int on;                /* 0: prints nothing (another rank of an MPI job) */
    int tty;               /* out is a terminal: one line rewritten in place */
    double interval;       /* seconds between lines off a terminal */
    double (*clock)(void); /* timer_now; a test's fake clock */
    FILE *out;             /* stderr; a test's file */
    long done0, total;     /* units done at the start (a resumed run), in all (<= 0: not known) */
    long done, shown_done; /* units done now, at the last line (-1: none yet) */
    double t0, shown;      /* the start's time, the last line's */
    int open, width;       /* a terminal line not yet ended, and its width */
    int cols;              /* the terminal's width (0: asked at each line); a longer line loses TEXT's end */
    char text[320];        /* the last update's TEXT */
} Progress;

/* A progress of command cmd about what (may be NULL); on = 0 prints nothing. Reads PPA_PROGRESS_SECONDS (a bad
 * value dies with exit status 2). */
void progress_init(Progress *p, const char *cmd, const char *what, int on);
/* The work starts now: done0 units already done (a resumed run), total units in all (<= 0: not known). */
void progress_start(Progress *p, long done0, long total);
/* done units so far, TEXT as printf's format says; prints a line when one is due. */
void progress_update(Progress *p, long done, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Seconds left at the run's rate so far (rounded up, so at least 1 while work remains), or -1 when not known
 * (no total, no unit done yet, no time passed). */
long progress_eta(const Progress *p, double now);
/* Ends a terminal line in progress, before other lines on stderr. */
void progress_break(Progress *p);
/* The last state's line when it was not printed yet (a total not known, the work cut short), and the terminal
 * line ended. */
void progress_end(Progress *p);

#endif
