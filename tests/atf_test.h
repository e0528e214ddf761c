/* atf_test.h — the scaffolding every C test of atf shares, header-only (static inline) so that
 * each test stays a single executable:
 *
 *   CHECK(cond, fmt, ...)   counts a check; when cond is false, prints "FAIL file:line: message"
 *                           on stderr (the first ATF_TEST_MAX_PRINTED failures only) and counts
 *                           a failure. The message arguments are evaluated only on failure.
 *   atf_test_finish(name)   prints "NAME: N checks, F failures" and returns the exit code
 *                           (0 when nothing failed): `return atf_test_finish("test_x");`.
 *   rel_diff(a, b)          |a − b| / max(|a|, |b|), 0 when both are 0.
 *   max_rel_diff(n, x, ref) max |x − ref| / max |ref| over arrays; NaN when either holds a NaN,
 *                           so that every comparison with a tolerance, < or >, fails on it.
 *
 * and one deterministic generator for test inputs, atf_test_rng (xorshift64*), with its state
 * in a struct the test owns: every test seeds its own, nothing is shared or hidden. It is
 * deliberately not the library's atf_rng, so that inputs do not depend on the code under test.
 *
 * The check tally is per executable (one static per translation unit, and a test is one). */
#ifndef ATF_TEST_H
#define ATF_TEST_H

#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- checks ------------------------------------------------------------------------------ */

/* Beyond this many failures only the count grows: one broken invariant in a loop must not bury
 * the others. */
#define ATF_TEST_MAX_PRINTED 40

/* One tally per test program, shared by its files (a test and its fixtures: a weak definition
 * in each, merged by the linker), so that a failed check in a fixture fails the program. */
typedef struct {
    long checks, failures;
} atf_test_tally_t;
#if defined(__GNUC__)
__attribute__((weak)) atf_test_tally_t atf_test_tally;
#else
static atf_test_tally_t atf_test_tally;
#endif

#if defined(__GNUC__)
#define ATF_TEST_PRINTF(fmt_index, first_arg) __attribute__((format(printf, fmt_index, first_arg)))
#else
#define ATF_TEST_PRINTF(fmt_index, first_arg)
#endif

static inline void atf_test_fail(const char *file, int line, const char *fmt, ...)
    ATF_TEST_PRINTF(3, 4);

/* Records one failed check (the count was already taken by CHECK). */
static inline void atf_test_fail(const char *file, int line, const char *fmt, ...)
{
    if (++atf_test_tally.failures > ATF_TEST_MAX_PRINTED)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL %s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* A macro, not a function, for __FILE__/__LINE__ and so that the message arguments (often a
 * costly norm) are only computed when the check fails. */
#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        ++atf_test_tally.checks;                                                               \
        if (!(cond))                                                                           \
            atf_test_fail(__FILE__, __LINE__, __VA_ARGS__);                                    \
    } while (0)

/* Atomic writes' temporaries (TARGET.tmp.PID.N, atf_util.h) left in a directory. */
static inline int atf_test_count_temporaries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strstr(e->d_name, ".tmp.") != NULL;
    if (d)
        closedir(d);
    return n;
}

/* A solver log hook (atf_hooks.log) writing to the FILE* passed as its context. */
static inline void atf_test_log_to(void *stream, const char *text)
{
    fputs(text, (FILE *)stream);
}

/* The summary line on stdout; the process exit code. */
static inline int atf_test_finish(const char *name)
{
    if (atf_test_tally.failures > ATF_TEST_MAX_PRINTED)
        fprintf(stderr, "(%ld more failures not shown)\n",
                atf_test_tally.failures - ATF_TEST_MAX_PRINTED);
    printf("%s: %ld checks, %ld failures\n", name, atf_test_tally.checks,
           atf_test_tally.failures);
    return atf_test_tally.failures == 0 ? 0 : 1;
}

/* ---- differences ------------------------------------------------------------------------- */

static inline double rel_diff(double a, double b)
{
    const double s = fmax(fabs(a), fabs(b));
    return s > 0.0 ? fabs(a - b) / s : 0.0;
}

/* max |x − ref| / max |ref|. A zero reference gives 0 for an exact match and +inf otherwise;
 * NaN in either array gives NaN (fmax alone would silently skip it). */
static inline double max_rel_diff(size_t n, const double *x, const double *ref)
{
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double d = fabs(x[i] - ref[i]);
        if (isnan(d))
            return NAN;
        num = fmax(num, d);
        den = fmax(den, fabs(ref[i]));
    }
    if (den > 0.0)
        return num / den;
    return num > 0.0 ? INFINITY : 0.0;
}

/* ---- the test generator ------------------------------------------------------------------ */

typedef struct {
    uint64_t state; /* never 0 */
} atf_test_rng;

/* Any seed, small ones included: splitmix64 spreads it over the 64 bits (xorshift started from
 * a sparse state such as 1 gives small numbers for a while). */
static inline void atf_test_rng_seed(atf_test_rng *rng, uint64_t seed)
{
    uint64_t z = seed + 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    rng->state = z != 0 ? z : 0x9E3779B97F4A7C15ULL; /* the one seed that maps to 0 */
}

/* xorshift64* (Vigna 2016): 64 bits per step, the high ones the best. */
static inline uint64_t atf_test_u64(atf_test_rng *rng)
{
    rng->state ^= rng->state >> 12;
    rng->state ^= rng->state << 25;
    rng->state ^= rng->state >> 27;
    return rng->state * 2685821657736338717ULL;
}

/* Uniform in the open interval (0, 1): (k + ½) / 2⁵² for the top 52 bits k, exact in double,
 * never 0 (safe for log) nor 1, and symmetric: u and 1 − u are equally likely. */
static inline double atf_test_uniform(atf_test_rng *rng)
{
    return ((double)(atf_test_u64(rng) >> 12) + 0.5) / 4503599627370496.0;
}

/* Uniform in (−1, 1), symmetric about 0 (2u − 1 is exact). */
static inline double atf_test_symmetric(atf_test_rng *rng)
{
    return 2.0 * atf_test_uniform(rng) - 1.0;
}

/* Standard normal by Box–Muller; one value per two uniforms (simplicity over speed). */
static inline double atf_test_normal(atf_test_rng *rng)
{
    const double radius = sqrt(-2.0 * log(atf_test_uniform(rng)));
    return radius * cos(6.283185307179586 * atf_test_uniform(rng));
}

static inline void atf_test_fill_symmetric(atf_test_rng *rng, size_t n, double *x)
{
    for (size_t i = 0; i < n; i++)
        x[i] = atf_test_symmetric(rng);
}

static inline void atf_test_fill_normal(atf_test_rng *rng, size_t n, double *x)
{
    for (size_t i = 0; i < n; i++)
        x[i] = atf_test_normal(rng);
}

/* malloc that ends the test (exit code 2, not a test failure) when memory runs out. */
static inline double *atf_test_alloc(size_t n)
{
    double *x = malloc((n > 0 ? n : 1) * sizeof *x);
    if (!x) {
        fprintf(stderr, "test: out of memory for %zu doubles\n", n);
        exit(2);
    }
    return x;
}

/* New arrays of n uniform (−1, 1) resp. standard normal values; the caller frees them. */
static inline double *atf_test_new_symmetric(atf_test_rng *rng, size_t n)
{
    double *x = atf_test_alloc(n);
    atf_test_fill_symmetric(rng, n, x);
    return x;
}

static inline double *atf_test_new_normal(atf_test_rng *rng, size_t n)
{
    double *x = atf_test_alloc(n);
    atf_test_fill_normal(rng, n, x);
    return x;
}

#endif
