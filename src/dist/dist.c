/* dist.c: MPI loaded at run time (dist.h). Open MPI's C ABI is declared
 * here for the few calls ppa makes (handles are pointers; the predefined
 * ones are the addresses of ompi_mpi_* objects), so building ppa needs no MPI
 * headers and running it alone needs no MPI library.
 *
 * The collective timeout (dist_set_timeout). A blocking MPI collective
 * waits for ever on a rank that stopped (SIGSTOP, a hung node) and cannot
 * say which rank it waits for. So each rank runs a watchdog thread:
 *  - every collective (and the end of the job) is bracketed by guard() and
 *    unguard(), which only record under a mutex which collective this rank
 *    is in, where it was called from, and since when: no message, so the
 *    collective itself is Open MPI's blocking one, unchanged (the same
 *    algorithm, hence the same sums in the same order and the same bytes;
 *    a non-blocking MPI_Iallreduce runs other algorithms, whose order of
 *    additions differs beyond 2 ranks).
 *  - the thread wakes every 0.1 s. It answers the other ranks' questions
 *    (a receive kept posted on a duplicate of MPI_COMM_WORLD, so nothing
 *    mixes with the collectives) with this rank's state: the number of the
 *    last collective it entered, whether it is inside it, and its kind.
 *  - when this rank has been in one collective longer than the timeout,
 *    its thread asks every other rank, waits ASK_S for the answers, and
 *    aborts the job (MPI_Abort) with a message naming the collective and
 *    each rank that did not arrive: silent (stopped, or its node gone),
 *    answering but not arrived (busy with its own work, or hung outside the
 *    collectives), still waiting in an earlier collective, or at another
 *    collective of the same number (a bug). So a stopped rank is named
 *    wherever it stopped, even inside the transfer, and a rank that is only
 *    slow is named as such, not as stopped.
 *    A rank that receives a question while it waits itself puts off its
 *    own diagnosis, and the ranks other than 0 look half a second later,
 *    so one rank speaks (rank 0 where it waits too), not all of them.
 * The thread calls MPI while the main thread is inside MPI, so ppa asks for
 * MPI_THREAD_MULTIPLE; where the library does not give it, the thread only
 * aborts, without naming ranks. At the end of the job a barrier under the
 * guard names a rank that never gets there; then the thread stops using MPI
 * and MPI_Finalize runs under a plain deadline.
 * Cost per collective: two mutex lock/unlock pairs; the thread's one
 * MPI_Test per 0.1 s. */
#include "dist/dist.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/common.h"
#include "core/timer.h"
#include "core/dynlib.h"

typedef void *Handle; /* MPI_Comm, MPI_Datatype, MPI_Op, MPI_Request */

enum { MPI_ANY_SOURCE_ = -1, MPI_THREAD_MULTIPLE_ = 3 }; /* Open MPI's values */

static struct {
    int (*Init_thread)(int *, char ***, int, int *);
    int (*Initialized)(int *);
    int (*Finalize)(void);
    int (*Comm_rank)(Handle, int *);
    int (*Comm_size)(Handle, int *);
    int (*Comm_dup)(Handle, Handle *);
    int (*Allreduce)(const void *, void *, int, Handle, Handle, Handle);
    int (*Bcast)(void *, int, Handle, int, Handle);
    int (*Allgatherv)(const void *, int, Handle, void *, const int *, const int *, Handle, Handle);
    int (*Barrier)(Handle);
    int (*Abort)(Handle, int);
    int (*Isend)(const void *, int, Handle, int, int, Handle, Handle *);
    int (*Irecv)(void *, int, Handle, int, int, Handle, Handle *);
    int (*Test)(Handle *, int *, void *); /* the status: NULL = MPI_STATUS_IGNORE */
    int (*Cancel)(Handle *);
    Handle world, f32, f64, byte, sum;
    Handle ctl; /* the watchdogs' questions and answers (a duplicate of world) */
    void *lib;
    int rank, size;
    int threads; /* MPI_THREAD_MULTIPLE was given: the watchdog may ask */
    int agreed;  /* every rank knows of the error this one dies of (dist_agreed_failure) */
    double sec, bytes, wait; /* dist_stats */
} M = {.size = 1};

/* ---- the watchdog ---- */

typedef enum { K_SUM, K_BCAST, K_GATHER, K_BARRIER, K_END } Kind;
static const char *const KIND_NAMES[] = {"all-reduce", "broadcast", "all-gather", "barrier", "end of the job"};
enum { TAG_ASK = 0x7A11, TAG_ANSWER = 0x7A12 }; /* below MPI_TAG_UB's guaranteed 32767 */
#define TICK_S 0.1  /* the thread's period */
#define ASK_S 2.0   /* how long a diagnosis waits for the answers: a live rank answers within a tick */
#define DEFER_S 5.0 /* a rank asked while it waits itself puts its own diagnosis off this long */
#define STAGGER_S 0.5 /* the ranks other than 0 look later: where all wait, rank 0 speaks */

/* a question (rank, seq: the asker's) or an answer: a rank's state */
typedef struct {
    long rank, seq, in, kind; /* seq: the collectives this rank entered; in: it is inside the last one */
} State;

/* what the main thread is doing, under mu; the thread reads it */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t wake; /* the thread's sleep, cut short by dist's exit */
    double limit;        /* seconds */
    long seq;            /* collectives entered */
    int in;              /* inside collective seq */
    Kind kind;
    const char *file; /* the call site; NULL for the end of the job */
    int line;
    double since, deadline;
    int closing, closed; /* the end of the job: the thread stops using MPI, and says so */
    int aborting;        /* the thread is aborting the job: the main thread goes no further */
} W = {.mu = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER, .limit = 600};

/* the thread's own: the question it waits for, the answers it sends, its diagnosis's questions and answers */
static struct {
    State q, mine, *out, *got; /* out, got: [size] */
    Handle q_req, *out_req, *ask_req, *got_req;
    char *out_busy, *done;
} T;

void dist_set_timeout(double seconds) {
    if (!(seconds > 0)) ppa_die(70, "the collective timeout must be > 0 seconds, found %g (internal: the options check it)", seconds);
    pthread_mutex_lock(&W.mu);
    W.limit = seconds;
    pthread_mutex_unlock(&W.mu);
}

double dist_timeout(void) {
    pthread_mutex_lock(&W.mu);
    double s = W.limit;
    pthread_mutex_unlock(&W.mu);
    return s;
}

/* the main thread enters collective kind (called from file:line; NULL: the end of the job) */
static void guard(Kind kind, const char *file, int line) {
    pthread_mutex_lock(&W.mu);
    W.seq++, W.in = 1, W.kind = kind, W.file = file, W.line = line;
    W.since = timer_now(), W.deadline = W.since + W.limit + (M.rank ? STAGGER_S : 0);
    pthread_mutex_unlock(&W.mu);
}

static void unguard(void) {
    pthread_mutex_lock(&W.mu);
    W.in = 0;
    int stop = W.aborting;
    pthread_mutex_unlock(&W.mu);
    while (stop) pause(); /* the launcher resumes stopped ranks before it ends them: this one must not go on */
}

/* "the all-reduce at src/train/trainer.c:94 (collective 57)" */
static const char *describe(Kind kind, const char *file, int line, long seq, char *buf, size_t len) {
    if (file) snprintf(buf, len, "the %s at %s:%d (collective %ld)", KIND_NAMES[kind], file, line, seq);
    else snprintf(buf, len, "the %s (collective %ld)", KIND_NAMES[kind], seq);
    return buf;
}

static void nap(double s) { nanosleep(&(struct timespec){(time_t)s, (long)((s - (double)(time_t)s) * 1e9)}, NULL); }

static void post_question(void) {
    if (M.Irecv(&T.q, (int)sizeof T.q, M.byte, MPI_ANY_SOURCE_, TAG_ASK, M.ctl, &T.q_req))
        ppa_die(1, "MPI_Irecv failed (the watchdog)");
}

/* answers every question that came, with this rank's state; a question while this rank waits itself puts its own
 * diagnosis off (the asker speaks) */
static void answer(void) {
    for (int r = 0; r < M.size; r++) {
        int flag = 0;
        if (T.out_busy[r] && !M.Test(&T.out_req[r], &flag, NULL) && flag) T.out_busy[r] = 0;
    }
    for (;;) {
        int flag = 0;
        if (M.Test(&T.q_req, &flag, NULL) || !flag) return;
        int from = (int)T.q.rank;
        post_question();
        if (from < 0 || from >= M.size || T.out_busy[from]) continue; /* the last answer to it is still going out */
        pthread_mutex_lock(&W.mu);
        T.out[from] = (State){M.rank, W.seq, W.in, W.kind};
        if (W.in && W.deadline < timer_now() + DEFER_S) W.deadline = timer_now() + DEFER_S;
        pthread_mutex_unlock(&W.mu);
        if (!M.Isend(&T.out[from], (int)sizeof(State), M.byte, from, TAG_ANSWER, M.ctl, &T.out_req[from]))
            T.out_busy[from] = 1;
    }
}

/* appends to buf [len] at *at, never past its end */
__attribute__((format(printf, 4, 5))) static void add(char *buf, size_t len, size_t *at, const char *fmt, ...) {
    if (*at + 1 >= len) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf + *at, len - *at, fmt, ap);
    va_end(ap);
    if (k > 0) *at = *at + (size_t)k < len ? *at + (size_t)k : len - 1;
}

/* The timeout passed in collective seq: asks every rank where it is, names those that did not arrive, and aborts
 * the job. Runs on the watchdog thread. A rank past this collective (at a later one, or out of it) is not named:
 * a collective can end on some ranks (a broadcast's root) while others still wait in it. */
static _Noreturn void diagnose(long seq, Kind kind, const char *file, int line, double waited, double limit) {
    enum { SILENT, LATE, EARLIER, ELSEWHERE, N_CLASS };
    static const char *const WHY[N_CLASS][2] = {
        {"which does not answer (stopped, or its node is gone)",
         "which do not answer (stopped, or their nodes are gone)"},
        {"which answers but did not arrive (busy with its own work, or hung outside the collectives)",
         "which answer but did not arrive (busy with their own work, or hung outside the collectives)"},
        {"which still waits in an earlier collective", "which still wait in earlier collectives"},
        {"which is at another collective of the same number (the ranks' collectives differ: a bug in ppa)",
         "which are at other collectives of the same number (the ranks' collectives differ: a bug in ppa)"}};
    int R = M.size, n[N_CLASS] = {0};
    char *cls = xcalloc((size_t)R, 1), what[512], msg[4096];
    if (M.threads) { /* ask */
        T.mine = (State){M.rank, seq, 1, kind};
        memset(T.done, 0, (size_t)R);
        for (int r = 0; r < R; r++) {
            if (r == M.rank) continue;
            if (M.Irecv(&T.got[r], (int)sizeof(State), M.byte, r, TAG_ANSWER, M.ctl, &T.got_req[r]) ||
                M.Isend(&T.mine, (int)sizeof T.mine, M.byte, r, TAG_ASK, M.ctl, &T.ask_req[r]))
                T.done[r] = 2; /* could not ask: counted silent */
        }
        for (double end = timer_now() + ASK_S; timer_now() < end;) {
            int left = 0;
            answer(); /* another rank may be asking too */
            for (int r = 0; r < R; r++) {
                int flag = 0;
                if (r == M.rank || T.done[r]) continue;
                if (!M.Test(&T.got_req[r], &flag, NULL) && flag) T.done[r] = 1;
                else left++;
            }
            if (!left) break;
            nap(0.01);
        }
        for (int r = 0; r < R; r++) {
            const State *s = &T.got[r];
            if (r == M.rank) continue;
            int c = T.done[r] != 1                   ? SILENT
                    : s->seq < seq                   ? (s->in ? EARLIER : LATE)
                    : s->seq > seq || !s->in         ? -1 /* past it */
                    : s->kind != (long)kind          ? ELSEWHERE
                                                     : -1; /* here */
            if (c >= 0) cls[r] = (char)(c + 1), n[c]++;
        }
    }
    size_t at = 0;
    add(msg, sizeof msg, &at, "%s waited %.1f s (--collective-timeout %g)",
        describe(kind, file, line, seq, what, sizeof what), waited, limit);
    if (!M.threads)
        add(msg, sizeof msg, &at, ": this MPI library gives no MPI_THREAD_MULTIPLE, so ppa cannot ask the ranks which "
                                  "one is missing (stopped or hung)");
    else if (!n[SILENT] && !n[LATE] && !n[EARLIER] && !n[ELSEWHERE])
        add(msg, sizeof msg, &at, ": every rank arrived and answers: the transfer itself takes longer than the timeout "
                                  "(a slow or broken network?)");
    for (int c = 0, shown = 0; c < N_CLASS; c++) {
        if (!n[c]) continue;
        add(msg, sizeof msg, &at, "%s rank%s ", shown++ ? ", and for" : " for", n[c] > 1 ? "s" : "");
        for (int r = 0, k = 0; r < R; r++) { /* "1", "1 and 3", "1, 3 and 5"; at most 8 named */
            if (cls[r] != c + 1) continue;
            if (++k > 8) {
                add(msg, sizeof msg, &at, " and %d more", n[c] - 8);
                break;
            }
            add(msg, sizeof msg, &at, "%s%d", k == 1 ? "" : k == n[c] ? " and " : ", ", r);
        }
        add(msg, sizeof msg, &at, ", %s", WHY[c][n[c] > 1]);
    }
    pthread_mutex_lock(&W.mu);
    W.aborting = 1;
    pthread_mutex_unlock(&W.mu);
    fprintf(stderr, "ppa[rank %d]: %s: aborting the job; a training run's last checkpoint stays resumable (--resume)\n",
            M.rank, msg);
    fflush(stderr);
    M.Abort(M.world, 1);
    _exit(1); /* MPI_Abort does not return; if it does, leave anyway: the launcher stops the rest */
}

/* the end of the job: the thread stops using MPI (its posted receive cancelled, its answers out), under W.mu */
static void leave_mpi(void) {
    int flag = 0;
    M.Cancel(&T.q_req);
    for (double end = timer_now() + 1; timer_now() < end && !M.Test(&T.q_req, &flag, NULL) && !flag;) nap(1e-3);
    for (int r = 0; r < M.size; r++)
        for (double end = timer_now() + 1; T.out_busy[r] && timer_now() < end; nap(1e-3))
            if (!M.Test(&T.out_req[r], &flag, NULL) && flag) T.out_busy[r] = 0;
}

static void *watch(void *arg) {
    (void)arg;
    if (M.threads) post_question();
    pthread_mutex_lock(&W.mu);
    for (;;) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until); /* the condition variable's clock (dist_init) */
        until.tv_nsec += (long)(TICK_S * 1e9);
        if (until.tv_nsec >= 1000000000) until.tv_sec++, until.tv_nsec -= 1000000000;
        if (!W.closing || W.closed) pthread_cond_timedwait(&W.wake, &W.mu, &until); /* or earlier: one more look */
        if (W.closing && !W.closed) {
            if (M.threads) leave_mpi();
            W.closed = 1;
            pthread_cond_broadcast(&W.wake);
        }
        double now = timer_now(), waited = now - W.since, limit = W.limit;
        int fire = W.in && now > W.deadline, asking = M.threads && !W.closed;
        long seq = W.seq;
        Kind kind = W.kind;
        const char *file = W.file;
        int line = W.line;
        pthread_mutex_unlock(&W.mu);
        if (fire && asking) diagnose(seq, kind, file, line, waited, limit);
        if (fire) { /* no rank to ask (inside MPI_Finalize, or no MPI_THREAD_MULTIPLE) */
            if (W.closed) {
                fprintf(stderr, "ppa[rank %d]: the end of the job: MPI_Finalize waited %.1f s for the other ranks "
                                "(--collective-timeout %g): leaving without it, the launcher stops the job\n",
                        M.rank, waited, limit);
                fflush(stderr);
                _exit(1); /* no MPI call inside MPI_Finalize: the launcher notices the exit and stops the rest */
            }
            diagnose(seq, kind, file, line, waited, limit);
        }
        if (asking) answer();
        pthread_mutex_lock(&W.mu);
    }
    return NULL;
}

/* ---- the job ---- */

void dist_stats(double *seconds, double *bytes, double *wait) { *seconds = M.sec, *bytes = M.bytes, *wait = M.wait; }

/* a barrier before a timed collective: the time ranks wait for the slowest one is counted apart from the
 * collective's own (on a shared or noisy machine the wait can be most of it) */
static void wait_for_all(void) {
    double t0 = timer_now();
    if (M.Barrier(M.world)) ppa_die(1, "MPI_Barrier failed");
    M.wait += timer_now() - t0;
}

/* a launcher's mark: Open MPI's mpirun, a PMIx or PMI-2 launcher (srun) */
static int launched(void) {
    const char *v = getenv("OMPI_COMM_WORLD_SIZE");
    if (!v) v = getenv("PMIX_SIZE");
    if (!v) v = getenv("PMI_SIZE");
    if (!v && getenv("PMIX_RANK")) v = "2";
    return v && atoi(v) > 1;
}

static void finalize(void);

static _Noreturn void abort_job(int status) {
    if (M.agreed) { /* every rank dies of this error: each says why before the job ends (no MPI_Abort's race) */
        finalize();
        _exit(status);
    }
    M.Abort(M.world, status ? status : 1);
    _exit(status); /* MPI_Abort does not return; if it does, leave anyway (common.h: the leak convention) */
}

/* At exit: a barrier under the guard (a rank that never comes is named), then the watchdog leaves MPI alone and
 * MPI_Finalize runs under its deadline only. */
static void finalize(void) {
    int up = 0;
    if (!M.Initialized || M.Initialized(&up) || !up) return;
    if (M.size > 1) {
        guard(K_END, NULL, 0);
        if (M.Barrier(M.world)) ppa_die(1, "MPI_Barrier failed (the end of the job)");
        pthread_mutex_lock(&W.mu);
        W.closing = 1;
        pthread_cond_broadcast(&W.wake);
        while (!W.closed) pthread_cond_wait(&W.wake, &W.mu);
        W.since = timer_now(), W.deadline = W.since + W.limit; /* MPI_Finalize's own */
        pthread_mutex_unlock(&W.mu);
    }
    M.Finalize();
    if (M.size > 1) unguard();
}

void dist_agreed_failure(void) { M.agreed = 1; }
int dist_failure_agreed(void) { return M.agreed; }

/* a fatal error in a one-process MPI job (ppa_die skips atexit handlers): MPI_Finalize, then the end */
static _Noreturn void end_alone(int status) {
    finalize();
    _exit(status);
}

#define LOAD(name, sym)                                                                                                \
    if (!(*(void **)&M.name = dlsym(M.lib, sym))) {                                                                    \
        snprintf(err, errlen, "%s has no %s: ppa needs Open MPI's libmpi (openmpi-bin)", lib, sym);                    \
        return -1;                                                                                                     \
    }

int dist_init(char *err, size_t errlen) {
    if (!launched()) return 0;
    const char *lib = "libmpi.so.40";
    /* RTLD_GLOBAL: Open MPI loads its own components, which need libmpi's symbols */
    char e[512];
    if (!(M.lib = dynlib_open(lib, RTLD_NOW | RTLD_GLOBAL, e, sizeof e))) {
        snprintf(err, errlen, "started by an MPI launcher, but %s does not load (%s): install openmpi-bin", lib, e);
        return -1;
    }
    LOAD(Init_thread, "MPI_Init_thread") LOAD(Initialized, "MPI_Initialized") LOAD(Finalize, "MPI_Finalize")
    LOAD(Comm_rank, "MPI_Comm_rank") LOAD(Comm_size, "MPI_Comm_size") LOAD(Comm_dup, "MPI_Comm_dup")
    LOAD(Allreduce, "MPI_Allreduce") LOAD(Bcast, "MPI_Bcast") LOAD(Allgatherv, "MPI_Allgatherv")
    LOAD(Barrier, "MPI_Barrier") LOAD(Abort, "MPI_Abort") LOAD(Isend, "MPI_Isend") LOAD(Irecv, "MPI_Irecv")
    LOAD(Test, "MPI_Test") LOAD(Cancel, "MPI_Cancel")
    LOAD(world, "ompi_mpi_comm_world") LOAD(f32, "ompi_mpi_float") LOAD(f64, "ompi_mpi_double")
    LOAD(byte, "ompi_mpi_byte") LOAD(sum, "ompi_mpi_op_sum")
    int given = 0;
    if (M.Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE_, &given)) {
        snprintf(err, errlen, "MPI_Init failed");
        return -1;
    }
    M.Comm_rank(M.world, &M.rank);
    M.Comm_size(M.world, &M.size);
    atexit(finalize);
    if (M.size == 1) ppa_die_setup(-1, end_alone); /* a fatal error skips atexit: MPI_Finalize still runs */
    if (M.size > 1) {
        ppa_die_setup(M.rank, abort_job);
        M.threads = given >= MPI_THREAD_MULTIPLE_;
        if (M.threads && M.Comm_dup(M.world, &M.ctl)) ppa_die(1, "MPI_Comm_dup failed");
        size_t R = (size_t)M.size;
        T.out = xcalloc(R, sizeof(State)), T.got = xcalloc(R, sizeof(State));
        T.out_req = xcalloc(R, sizeof(Handle)), T.ask_req = xcalloc(R, sizeof(Handle));
        T.got_req = xcalloc(R, sizeof(Handle));
        T.out_busy = xcalloc(R, 1), T.done = xcalloc(R, 1);
        pthread_condattr_t ca; /* the thread's ticks on the monotonic clock, as timer_now */
        if (pthread_condattr_init(&ca) || pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) ||
            pthread_cond_init(&W.wake, &ca))
            ppa_die(1, "cannot set up the collectives' watchdog");
        pthread_condattr_destroy(&ca);
        pthread_t t;
        int e = pthread_create(&t, NULL, watch, NULL);
        if (e || (e = pthread_detach(t))) ppa_die(1, "cannot start the collectives' watchdog thread (%s)", strerror(e));
    }
    return 0;
}
#undef LOAD

int dist_rank(void) { return M.rank; }
int dist_size(void) { return M.size; }

void dist_share(long n, int r, long *lo, long *hi) {
    *lo = n * r / M.size;
    *hi = n * (r + 1) / M.size;
}

/* MPI counts are int: large buffers go in pieces */
enum { PIECE = 1 << 28 };

static void sum(void *buf, size_t n, size_t size, Handle type, const char *file, int line) {
    if (M.size < 2) return;
    guard(K_SUM, file, line);
    wait_for_all();
    double t0 = timer_now();
    M.bytes += (double)(n * size);
    for (size_t at = 0; at < n; at += PIECE) {
        size_t k = n - at < PIECE ? n - at : PIECE;
        if (M.Allreduce((const void *)1 /* MPI_IN_PLACE */, (char *)buf + at * size, (int)k, type, M.sum, M.world))
            ppa_die(1, "MPI_Allreduce failed");
    }
    M.sec += timer_now() - t0;
    unguard();
}

void dist_sum_f32_at(float *buf, size_t n, const char *file, int line) {
    sum(buf, n, sizeof(float), M.f32, file, line);
}
void dist_sum_f64_at(double *buf, size_t n, const char *file, int line) {
    sum(buf, n, sizeof(double), M.f64, file, line);
}

void dist_bcast_at(void *buf, size_t bytes, int root, const char *file, int line) {
    if (M.size < 2) return;
    guard(K_BCAST, file, line);
    for (size_t at = 0; at < bytes; at += PIECE)
        if (M.Bcast((char *)buf + at, (int)(bytes - at < PIECE ? bytes - at : PIECE), M.byte, root, M.world))
            ppa_die(1, "MPI_Bcast failed");
    unguard();
}

static void allgather(const void *mine, void *all, const long *counts, size_t size, Handle type, const char *file,
                      int line) {
    if (M.size < 2) {
        memmove(all, mine, size * (size_t)counts[0]);
        return;
    }
    int *c = xmalloc(sizeof(int) * (size_t)M.size), *d = xmalloc(sizeof(int) * (size_t)M.size);
    long at = 0;
    for (int r = 0; r < M.size; r++) {
        if (counts[r] > INT_MAX || at > INT_MAX - counts[r])
            ppa_die(1, "an all-gather of %ld elements is more than MPI's int counts allow", at + counts[r]);
        c[r] = (int)counts[r], d[r] = (int)at, at += counts[r];
    }
    guard(K_GATHER, file, line);
    wait_for_all();
    double t0 = timer_now();
    if (M.Allgatherv(mine, c[M.rank], type, all, c, d, type, M.world)) ppa_die(1, "MPI_Allgatherv failed");
    M.sec += timer_now() - t0, M.bytes += (double)(size * (size_t)c[M.rank]);
    unguard();
    free(c), free(d);
}

void dist_allgather_f64_at(const double *mine, double *all, const long *counts, const char *file, int line) {
    allgather(mine, all, counts, sizeof(double), M.f64, file, line);
}
void dist_allgather_f32_at(const float *mine, float *all, const long *counts, const char *file, int line) {
    allgather(mine, all, counts, sizeof(float), M.f32, file, line);
}

void dist_gather_bytes_at(const char *mine, size_t n, char **all, size_t *total, const char *file, int line) {
    int R = M.size;
    double *len = xcalloc((size_t)R, sizeof(double));
    len[M.rank] = (double)n;
    sum(len, (size_t)R, sizeof(double), M.f64, file, line);
    long *counts = xmalloc(sizeof(long) * (size_t)R);
    *total = 0;
    for (int r = 0; r < R; r++) counts[r] = (long)len[r], *total += (size_t)counts[r];
    *all = xmalloc(*total ? *total : 1);
    allgather(mine, *all, counts, 1, M.byte, file, line);
    free(len), free(counts);
}

int dist_first_text_at(const char *mine, size_t n, char *out, size_t outlen, const char *file, int line) {
    char *all = NULL;
    size_t total = 0;
    if (M.size < 2) all = xmalloc(n ? n : 1), memcpy(all, mine, n);
    else dist_gather_bytes_at(mine, n, &all, &total, file, line);
    int first = -1;
    for (int r = 0; r < (M.size < 2 ? 1 : M.size) && first < 0; r++)
        if (n && all[(size_t)r * n]) first = r;
    if (first >= 0) snprintf(out, outlen, "%.*s", (int)n, all + (size_t)first * n);
    free(all);
    return first;
}

void dist_barrier_at(const char *file, int line) {
    if (M.size < 2) return;
    guard(K_BARRIER, file, line);
    if (M.Barrier(M.world)) ppa_die(1, "MPI_Barrier failed");
    unguard();
}

void dist_abort(int status) {
    if (M.size > 1) abort_job(status);
    ppa_exit_fatal(status);
}
