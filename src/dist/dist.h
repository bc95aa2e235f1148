/* dist.h: ranks of one job over MPI, for data parallelism. ppa started by a
 * launcher (mpirun, mpiexec, srun: they set OMPI_COMM_WORLD_SIZE, PMIX_RANK
 * or PMI_SIZE) loads Open MPI's libmpi.so.40 at run time and joins the job;
 * started alone it never touches MPI and is rank 0 of 1 (no start-up cost,
 * no library needed). Every call below is then a no-op or a copy.
 *
 * Collectives are called by every rank in the same order (the trainer's
 * steps are the same everywhere). A rank that stops with an error
 * (ppa_die) aborts the whole job through MPI_Abort, so the others never
 * wait on a rank that is gone; one killed by a signal is noticed by the
 * launcher, which stops the rest.
 *
 * A rank that stops answering (SIGSTOP, a hang, a node the launcher does
 * not notice is gone) is found by a timeout: no collective, nor the end of
 * the job, waits longer than dist_set_timeout's seconds (10 minutes by
 * default, as PyTorch's process groups) before the job is aborted with a
 * message naming the collective (its kind, call site and number) and the
 * ranks that did not arrive. dist.c says how (a watchdog thread that asks
 * the other ranks' watchdogs where they are) and what it costs.
 *
 * Open MPI's ABI (handles are pointers to its predefined objects, looked up
 * by name): Debian's openmpi-bin / libopenmpi3. */
#ifndef PPA_DIST_H
#define PPA_DIST_H

#include <stddef.h>

/* Joins the job when a launcher started this process; 0, or -1 with err
 * (libmpi missing, MPI_Init failed). Call once, early in main. */
int dist_init(char *err, size_t errlen);
int dist_rank(void);
int dist_size(void);
/* what is rank r's share [*lo, *hi) of n items in rank order (contiguous, sizes differing by at most 1) */
void dist_share(long n, int r, long *lo, long *hi);

/* The longest a collective waits for the other ranks, in seconds (> 0; 600 until set), from the moment this rank
 * enters it to the moment the transfer ends; then the job is aborted, naming the ranks that did not arrive. Set it
 * before the first collective, with the same value on every rank (--collective-timeout). Without MPI it is only
 * kept. */
void dist_set_timeout(double seconds);
double dist_timeout(void);

/* The collectives below name their call site (FILE, LINE) in a timeout's message: call them through the macros. */

/* In place over every rank: the element-wise sum (each rank gets the same
 * bytes: Open MPI's reductions of float are commutative-exact for 2 ranks;
 * beyond that see dist.c). */
void dist_sum_f32_at(float *buf, size_t n, const char *file, int line);
void dist_sum_f64_at(double *buf, size_t n, const char *file, int line);
#define dist_sum_f32(buf, n) dist_sum_f32_at((buf), (n), __FILE__, __LINE__)
#define dist_sum_f64(buf, n) dist_sum_f64_at((buf), (n), __FILE__, __LINE__)
/* root's bytes to every rank */
void dist_bcast_at(void *buf, size_t bytes, int root, const char *file, int line);
#define dist_bcast(buf, bytes, root) dist_bcast_at((buf), (bytes), (root), __FILE__, __LINE__)
/* Every rank's part, concatenated in rank order, into all (on every rank):
 * rank r gives counts[r] elements (its own from mine). */
void dist_allgather_f64_at(const double *mine, double *all, const long *counts, const char *file, int line);
void dist_allgather_f32_at(const float *mine, float *all, const long *counts, const char *file, int line);
#define dist_allgather_f64(mine, all, counts) dist_allgather_f64_at((mine), (all), (counts), __FILE__, __LINE__)
#define dist_allgather_f32(mine, all, counts) dist_allgather_f32_at((mine), (all), (counts), __FILE__, __LINE__)
/* Every rank's n bytes, concatenated in rank order, into *all (malloc'ed, *total bytes) on every rank: the output
 * of a command whose rows were divided, in input order. */
void dist_gather_bytes_at(const char *mine, size_t n, char **all, size_t *total, const char *file, int line);
#define dist_gather_bytes(mine, n, all, total) dist_gather_bytes_at((mine), (n), (all), (total), __FILE__, __LINE__)
/* Every rank's text of n bytes (empty: nothing to say) gathered: the first rank's non-empty one copied into out
 * (outlen bytes) and that rank returned, or -1 when every rank's is empty; the same on every rank. A vote in which a
 * rank that cannot go on says why. */
int dist_first_text_at(const char *mine, size_t n, char *out, size_t outlen, const char *file, int line);
#define dist_first_text(mine, n, out, outlen) dist_first_text_at((mine), (n), (out), (outlen), __FILE__, __LINE__)
void dist_barrier_at(const char *file, int line);
#define dist_barrier() dist_barrier_at(__FILE__, __LINE__)
/* since the start: seconds spent in the reductions and all-gathers above and the bytes this rank gave them; wait:
 * seconds spent before them waiting for the other ranks to arrive (a barrier each: imbalance, not transfer) */
void dist_stats(double *seconds, double *bytes, double *wait);
/* Every rank knows of the error this rank is about to die of (the ranks agreed on it, as the trainer's step vote
 * does): a fatal error then ends the job after every rank said why (a barrier under the collective timeout, then
 * MPI_Finalize), not with MPI_Abort, which may kill a rank before it prints. */
void dist_agreed_failure(void);
int dist_failure_agreed(void); /* 1 once dist_agreed_failure was called */
/* Stops every rank of the job with status (MPI_Abort); alone, exit(status). */
_Noreturn void dist_abort(int status);

#endif
