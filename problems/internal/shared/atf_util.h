/* atf_util.h — the small services every part of atf shares, one implementation each:
 * the clock, a dot product that repeats on any number of threads, atomic file writes and
 * strict comma-separated number lists.
 *
 * No printing; failures are one-line messages "FILE: reason" or "WHAT: reason" in err
 * (ATF_ERRLEN bytes). */
#ifndef ATF_UTIL_H
#define ATF_UTIL_H

#include <stddef.h>

#include "atf_error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- time ---- */

/* Seconds on the monotonic clock (CLOCK_MONOTONIC): differences are elapsed wall time,
 * unaffected by changes of the system time. The only timer of the library and its programs. */
double atf_now(void);

/* ---- the BLAS ----
 * What BLAS this process runs, as the library reports itself: OpenBLAS's configuration line
 * (version, build options and the kernel it chose for this CPU, or the one OPENBLAS_CORETYPE
 * pinned), e.g. "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY SkylakeX MAX_THREADS=64";
 * "unknown" for a BLAS that does not say. Kernels round differently, so two machines can give
 * other last bits: written with every problem and result (docs/formats.md). */
const char *atf_blas_name(void);

/* ---- sums ----
 * ⟨a, b⟩ over n values in eight independent lanes, added in a fixed order. The BLAS's ddot is
 * not used for the solvers' sums: OpenBLAS splits a ddot of more than 10 000 entries over its
 * threads and adds the threads' parts, so the same run on one thread and on two gave other
 * last bits, and after a few thousand CG steps another B (1e-7 apart). Eight lanes keep the
 * loop in vector registers (a single running sum waits on each addition, ~4× slower). */
static inline double atf_dot(const double *restrict a, const double *restrict b, size_t n)
{
    double acc[8] = {0.0};
    size_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (int u = 0; u < 8; u++)
            acc[u] += a[j + u] * b[j + u];
    double tail = 0.0;
    for (; j < n; j++)
        tail += a[j] * b[j];
    return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) +
           tail;
}

/* ---- atomic files ----
 * A file is replaced atomically by writing a temporary in the same directory and renaming it
 * over the target: readers see the old file or the new one, never a part. The temporary is
 * named TARGET.tmp.PID.N and created exclusively (O_EXCL), so that concurrent writers of one
 * target never share one, and with mode 0666 less the umask (like any new file). On any
 * failure the temporary is removed and the old file stays as it was. */

#define ATF_PATH_MAX 4096

typedef struct {
    char path[ATF_PATH_MAX]; /* the target */
    char tmp[ATF_PATH_MAX];  /* the reserved temporary; "" when none is held */
} atf_atomic_file;

/* Reserve a temporary next to `path` (created empty). With fd non-NULL *fd is an open,
 * write-only descriptor of it that the caller closes; with fd NULL it is closed here (for
 * writers that open the file by name, e.g. libhdf5 or PLplot, possibly in another process).
 * ATF_E_IO "PATH: cannot create a temporary file next to it: reason" on failure. */
atf_error atf_atomic_begin(atf_atomic_file *af, const char *path, int *fd, char *err);

/* The temporary is complete (and closed by its writer): sync it, rename it over the target and
 * sync the directory. On failure (ATF_E_IO) the temporary is removed. */
atf_error atf_atomic_commit(atf_atomic_file *af, char *err);

/* Give up: remove the temporary, if one is held (safe to call more than once). */
void atf_atomic_abort(atf_atomic_file *af);

/* Write len bytes of text to path atomically (the three calls above around one write).
 * ATF_E_IO "PATH: cannot write: reason"; ATF_E_NOMEM never (no allocation). */
atf_error atf_write_text_atomic(const char *path, const char *text, size_t len, char *err);

/* mkdir -p: create path and its missing parents (mode 0777 less the umask). ATF_E_IO, with
 * the directory and the reason, if one cannot be created or exists as a non-directory. */
atf_error atf_mkdir_p(const char *path, char *err);

/* ---- comma-separated lists ----
 * Strict: items separated by single commas, no empty item (",", "1,,2", "1,"), no spaces or
 * other characters around numbers, at least one item and at most max. Messages name the list
 * by `what` ("widths", "--ns", ...) and quote the offending item: "WHAT: 'x' is not an integer",
 * "WHAT: 7 is outside [1, 5]", "WHAT: empty item in '1,,2'", "WHAT: at most 4 values".
 * ATF_E_USAGE on failure (*n is then unspecified). */

/* Decimal integers in [lo, hi]. */
atf_error atf_parse_ints(const char *text, long lo, long hi, long *vals, int max, int *n,
                         const char *what, char *err);

/* Finite numbers (strtod syntax; inf and nan are refused). */
atf_error atf_parse_doubles(const char *text, double *vals, int max, int *n, const char *what,
                            char *err);

#ifdef __cplusplus
}
#endif

#endif
