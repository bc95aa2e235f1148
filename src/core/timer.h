/* timer.h: monotonic wall-clock time for benchmarks and progress lines. */
#ifndef PPA_TIMER_H
#define PPA_TIMER_H

double timer_now(void); /* seconds since an arbitrary origin */

#endif
