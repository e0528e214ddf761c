/* pen_test.h — tiny assertion helpers and the shared list of penalties for the penalty tests.
 * Header-only (static functions) so each test stays a single executable. */
#ifndef PEN_TEST_H
#define PEN_TEST_H

#include "atf_penalty.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int pen_test_failures = 0;
static int pen_test_checks = 0;

/* Records one check; prints the formatted message when it fails (at most 40 messages). */
static void check(int ok, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void check(int ok, const char *fmt, ...)
{
    ++pen_test_checks;
    if (ok)
        return;
    if (++pen_test_failures <= 40) {
        va_list ap;
        va_start(ap, fmt);
        fputs("FAIL: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
}

static inline int finish(const char *name)
{
    printf("%s: %d checks, %d failures\n", name, pen_test_checks, pen_test_failures);
    return pen_test_failures == 0 ? 0 : 1;
}

static inline atf_penalty parse_or_die(const char *spec)
{
    atf_penalty pen;
    char err[ATF_ERRLEN];
    if (atf_penalty_parse(spec, &pen, err) != ATF_OK) {
        fprintf(stderr, "cannot parse %s: %s\n", spec, err);
        exit(1);
    }
    return pen;
}

static inline double rel_diff(double a, double b)
{
    const double s = fmax(fabs(a), fabs(b));
    return s > 0.0 ? fabs(a - b) / s : 0.0;
}

/* Every family, several scales, and joints (nuclear excluded: it is outside the ω class). */
static const char *const PEN_SPECS[] = {
    "fixed", "sq", "sq:scale=0.01", "sq:scale=100", "abs", "abs:scale=0.1", "abs:scale=10",
    "pow:p=0.5", "pow:p=0.5,scale=3", "pow:p=1.5", "pow:p=2.5,scale=0.2", "pow:p=3", "zsq",
    "zsq:scale=0.05", "zsq:scale=20", "logsq", "logsq:scale=0.1", "logsq:scale=10",
    "sq+sq", "sq+abs", "abs+abs:scale=3", "fixed+abs", "fixed+sq:scale=4", "logsq+zsq",
    "pow:p=4+pow:p=4", "zsq:scale=0.3+sq", "pow:p=1.5+logsq:scale=2", "pow:p=0.5+sq",
};
#define N_PEN_SPECS (sizeof PEN_SPECS / sizeof PEN_SPECS[0])

#endif
