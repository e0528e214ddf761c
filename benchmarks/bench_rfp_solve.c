/* bench_rfp_solve.c — one application of the gram32 preconditioner (docs/record/solver.md §2.1): a
 * solve with a Cholesky factor of order M kept in single precision in LAPACK's rectangular full
 * packed storage, by LAPACK's spftrs (strsm and sgemm, which pack the factor on every call)
 * against atf's level-2 route (atf_sv_cg_rfp_solve: strsv and sgemv on the packed blocks).
 *
 * The floor: reading the factor twice (a solve goes forward and back through it), timed as two
 * sgemv over the same M(M+1)/2 floats viewed as a matrix. The factor is a synthetic one (unit
 * diagonal, entries of 1e-6 below it): the time does not depend on the values, and a real
 * spftrf at M = 20 000 would take longer than the benchmark. The two solves' results are
 * compared (the largest difference relative to the largest entry).
 *
 * Each is timed --reps times, interleaved (floor, spftrs, atf, floor, …); the table has the
 * medians of wall and CPU seconds (CPU time of the process: all BLAS threads) and the ratios.
 *
 * usage: bench_rfp_solve [M] [--reps K]     defaults: M = 20000, K = 5
 *        (threads: OPENBLAS_NUM_THREADS) */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <lapacke.h>

#include "atf_util.h"
#include "pcg.h"
#include "bench_timing.h"

/* The synthetic factor L (unit diagonal, ±1e-6 below it), packed by LAPACK (strttf) into the
 * layout spftrf writes. Returns 0, or -1 when the full triangle (4·M² bytes) does not fit. */
static int synthetic_factor(int M, float *rfp)
{
    float *full = malloc((size_t)M * (size_t)M * sizeof *full);
    if (!full)
        return -1;
    uint64_t z = 12345;
    for (int j = 0; j < M; j++)
        for (int i = j; i < M; i++) {
            z = z * 6364136223846793005ULL + 1442695040888963407ULL;
            full[i + (size_t)j * M] =
                i == j ? 1.0f : (float)(1e-6 * ((double)(z >> 11) / 9007199254740992.0 - 0.5));
        }
    lapack_int info = LAPACKE_strttf(LAPACK_COL_MAJOR, 'N', 'L', M, full, M, rfp);
    free(full);
    return info == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    int M = 20000, reps = 5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else
            M = atoi(argv[i]);
    }
    if (M < 2 || reps < 1) {
        fprintf(stderr, "usage: bench_rfp_solve [M >= 2] [--reps K >= 1]\n");
        return 2;
    }
    size_t len = (size_t)M * (M + 1) / 2;
    float *rfp = malloc(len * sizeof *rfp), *b = malloc((size_t)M * sizeof *b);
    float *x = malloc((size_t)M * sizeof *x), *y = malloc((size_t)M * sizeof *y);
    float *g = malloc((size_t)(M + 1) * sizeof *g);
    double *t = malloc(6 * (size_t)reps * sizeof *t);
    if (!rfp || !b || !x || !y || !g || !t || synthetic_factor(M, rfp) != 0) {
        fprintf(stderr, "bench_rfp_solve: out of memory for M = %d (%.1f GB)\n", M,
                (double)(len + (size_t)M * M) * 4e-9);
        return 2;
    }
    for (int i = 0; i < M; i++)
        b[i] = (float)sin(0.1 * i);
    int rows = M % 2 ? M : M + 1, cols = (int)(len / (size_t)rows); /* the array as a matrix */
    double *fw = t, *fc = t + reps, *lw = t + 2 * reps, *lc = t + 3 * reps, *aw = t + 4 * reps,
           *ac = t + 5 * reps;
    for (int r = 0; r < reps; r++) {
        double w0 = atf_now(), c0 = bench_cpu_now();
        cblas_sgemv(CblasColMajor, CblasNoTrans, rows, cols, 1.0f, rfp, rows, b, 1, 0.0f, g, 1);
        cblas_sgemv(CblasColMajor, CblasTrans, rows, cols, 1.0f, rfp, rows, g, 1, 0.0f, y, 1);
        fw[r] = atf_now() - w0, fc[r] = bench_cpu_now() - c0;
        memcpy(x, b, (size_t)M * sizeof *x);
        w0 = atf_now(), c0 = bench_cpu_now();
        LAPACKE_spftrs_work(LAPACK_COL_MAJOR, 'N', 'L', M, 1, rfp, x, M);
        lw[r] = atf_now() - w0, lc[r] = bench_cpu_now() - c0;
        memcpy(y, b, (size_t)M * sizeof *y);
        w0 = atf_now(), c0 = bench_cpu_now();
        atf_sv_cg_rfp_solve(M, rfp, y);
        aw[r] = atf_now() - w0, ac[r] = bench_cpu_now() - c0;
    }
    double diff = 0.0, size = 0.0;
    for (int i = 0; i < M; i++)
        diff = fmax(diff, fabs((double)x[i] - y[i])), size = fmax(size, fabs((double)x[i]));
    double f = bench_median(fw, reps), l = bench_median(lw, reps), a = bench_median(aw, reps);
    printf("gram32 solve, M = %d (factor %.2f GB), medians of %d interleaved runs\n", M,
           (double)len * 4e-9, reps);
    printf("| route | wall s | CPU s | × floor |\n|---|---|---|---|\n");
    printf("| floor: two sgemv over the factor | %.4f | %.4f | 1.00 |\n", f, bench_median(fc, reps));
    printf("| LAPACK spftrs | %.4f | %.4f | %.2f |\n", l, bench_median(lc, reps), l / f);
    printf("| atf (strsv, sgemv) | %.4f | %.4f | %.2f |\n", a, bench_median(ac, reps), a / f);
    printf("spftrs / atf: %.2f; results apart by %.1e of the largest entry\n", l / a,
           size > 0.0 ? diff / size : diff);
    free(rfp), free(b), free(x), free(y), free(g), free(t);
    return 0;
}
