/* bench_timing.h — what the benchmarks time with: the process's CPU seconds (all BLAS threads)
 * beside the wall clock (atf_now), and medians over interleaved repetitions. */
#ifndef ATF_BENCH_TIMING_H
#define ATF_BENCH_TIMING_H

#include <stdlib.h>
#include <time.h>

static inline double bench_cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of x[0 … n−1] (sorted in place). */
static inline double bench_median(double *x, int n)
{
    qsort(x, (size_t)n, sizeof *x, bench_cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

#endif
