/* bench_prox.c — scalar prox throughput per penalty family (single thread).
 *
 * For each spec: n values v log-uniform in [1e-3, 1e3] (fixed, reproducible), step t ∈ {0.1, 1, 10}.
 * Two rates: single calls atf_penalty_prox, and atf_penalty_prox_many on the whole array
 * (which prepares the v-independent structure once per call). Rates use the thread's CPU time,
 * at least 0.2 s per cell. Usage:
 *     bench_prox [n]        (default n = 200000)
 * Prints a Markdown table of million prox calls per second. */
#include "atf_penalty.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* CPU time of this thread: the rate of one core even when the machine is shared. */
static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static volatile double sink;

static double rate_single(const atf_penalty *pen, const double *v, size_t n, double t)
{
    double acc = 0.0, t0 = now_seconds(), elapsed;
    size_t calls = 0;
    do {
        for (size_t i = 0; i < n; ++i)
            acc += atf_penalty_prox(pen, v[i], t, NULL);
        calls += n;
        elapsed = now_seconds() - t0;
    } while (elapsed < 0.2);
    sink = acc;
    return (double)calls / elapsed;
}

static double rate_many(const atf_penalty *pen, const double *v, double *work, size_t n, double t)
{
    double t0 = now_seconds(), elapsed;
    size_t calls = 0;
    do {
        memcpy(work, v, n * sizeof *v);
        atf_penalty_prox_many(pen, work, n, t);
        calls += n;
        elapsed = now_seconds() - t0;
    } while (elapsed < 0.2);
    sink = work[n / 2];
    return (double)calls / elapsed;
}

int main(int argc, char **argv)
{
    static const char *specs[] = {"fixed", "sq", "zsq", "pow:p=3", "nuclear", "abs",
                                  "pow:p=1.5", "pow:p=0.5", "logsq", "sq+sq", "sq+abs",
                                  "pow:p=4+pow:p=4", "logsq+zsq", "pow:p=0.5+sq",
                                  "balanced", "balanced+balanced"};
    static const double steps[] = {0.1, 1.0, 10.0};
    const size_t n = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 200000;
    double *v = malloc(n * sizeof *v), *work = malloc(n * sizeof *work);
    if (!v || !work || n == 0)
        return 1;
    for (size_t i = 0; i < n; ++i) /* log-uniform, deterministic (golden-ratio sequence) */
        v[i] = pow(10.0, -3.0 + 6.0 * fmod(0.6180339887498949 * (double)(i + 1), 1.0));
    printf("| penalty | t=0.1 single | t=0.1 many | t=1 single | t=1 many | t=10 single | t=10 many |\n");
    printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (size_t s = 0; s < sizeof specs / sizeof specs[0]; ++s) {
        atf_penalty pen;
        char err[ATF_ERRLEN];
        if (atf_penalty_parse(specs[s], &pen, err) != ATF_OK) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        /* the slow nested fallback gets fewer values */
        const size_t m = strstr(specs[s], "p=0.5+") ? (n < 2000 ? n : 2000) : n;
        printf("| `%s` |", specs[s]);
        for (size_t k = 0; k < sizeof steps / sizeof steps[0]; ++k)
            printf(" %.3g | %.3g |", 1e-6 * rate_single(&pen, v, m, steps[k]),
                   1e-6 * rate_many(&pen, v, work, m, steps[k]));
        printf("\n");
        fflush(stdout);
    }
    free(v);
    free(work);
    return 0;
}
