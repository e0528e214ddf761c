/* test_baseline_cg.c — the NTK baseline by preconditioned CG (method cg, solver/cg.c and
 * solver/linsys/pcg.c) against the Gram baseline (method baseline), which is exact:
 *  - factored blocks with C = 1 and C = 3, dense and sparse blocks alone and mixed: B to 1e-8
 *    relative, the objective to 1e-9, the constraint residual and the stationarity certificate,
 *    for every preconditioner (none, block Jacobi, nystrom, nystrom-block, gram32, the default), and
 *    the default tolerance interpolates (relative residual ≤ 1e-8, status solved); a rank of
 *    300 (several blocks of pivots);
 *  - rows of very different scale (A and r × 1e3 and × 1e-3): the same B as the plain problem;
 *  - a rank-deficient but consistent A (repeated examples, and more rows than variables): solved,
 *    the Gram's eigen-path B;
 *  - inconsistent r (repeated examples with other targets, and more rows than variables with a
 *    random r): status infeasible, long before the step limit, finite numbers, a residual no
 *    smaller than the Gram's least-squares residual, and the message says why;
 *  - the step limit and the interrupt flag give honest statuses; r = 0 gives B = 0;
 *  - gram32 (the Gram in single precision, packed): odd and even M over several panels of
 *    columns, C = 1 and 3, the Gram's B in at most 6 steps (a misplaced entry of the packed
 *    array leaves CG hundreds); an interrupt before it ends the solve at step 0;
 *  - ADMM with its projection by PCG and gram32 (settings.linsys pcg, what it takes where
 *    the Gram does not fit): the Gram ADMM's iterations, objective and B for convex and
 *    nonconvex penalties and mixed blocks; an inconsistent r is a clear error, not a run;
 *  - reproducible (same seed, same B bit for bit), another seed gives the same B to 1e-8;
 *  - a second solve on the same solver, and the projection through CG (the pcg backend);
 *  - the chooser (auto, atf_linsys_choose): the Gram for small M, CG when the Gram does not fit;
 *  - atf_baseline, the library call, where the Gram does not fit this machine's available memory
 *    (M chosen from it): CG, solved, interpolating — not an out-of-memory error;
 *  - checkpoints of the LSQR solve: resumed from any state, after Ctrl-C or the step limit, the
 *    solve ends as the uninterrupted one, bit for bit; other solves' states refused. */
#include <lapacke.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atf_solver.h"
#include "atf_test.h"
#include "linsys.h"
#include "pcg.h"
#include "solver_fixtures.h"

typedef struct {
    atf_operator_kind kind;
    int rows, cols;
} shape;

static void fill_block(atf_test_rng *rng, atf_block *b, int N, int C)
{
    int M = N * C, len = b->rows * b->cols;
    if (b->kind == ATF_OP_FACTORED) {
        b->H = atf_test_new_normal(rng, (size_t)N * (size_t)b->rows);
        b->D = atf_test_new_normal(rng, (size_t)M * (size_t)b->cols);
    } else if (b->kind == ATF_OP_DENSE) {
        b->J = atf_test_new_normal(rng, (size_t)M * (size_t)len);
    } else {
        b->indptr = calloc((size_t)M + 1, sizeof *b->indptr);
        b->indices = malloc((size_t)M * (size_t)len * sizeof *b->indices);
        b->data = malloc((size_t)M * (size_t)len * sizeof *b->data);
        for (int m = 0; m < M; m++) {
            b->indptr[m + 1] = b->indptr[m];
            for (int j = 0; j < len; j++)
                if (atf_test_uniform(rng) < 0.5) {
                    b->indices[b->indptr[m + 1]] = j;
                    b->data[b->indptr[m + 1]++] = atf_test_symmetric(rng);
                }
        }
        b->nnz = b->indptr[M];
    }
}

static atf_problem *make_problem(uint64_t seed, int N, int C, const shape *sh, int nb)
{
    atf_test_rng rng;
    atf_test_rng_seed(&rng, seed);
    atf_problem *p = atf_problem_new(N, C, nb);
    free(p->r);
    p->r = atf_test_new_normal(&rng, (size_t)N * (size_t)C);
    for (int l = 0; l < nb; l++) {
        atf_block *b = &p->blocks[l];
        snprintf(b->name, sizeof b->name, "B%d", l + 1);
        b->kind = sh[l].kind;
        b->rows = sh[l].rows, b->cols = sh[l].cols;
        fill_block(&rng, b, N, C);
    }
    char err[ATF_ERRLEN];
    if (atf_problem_set_penalty(p, "sq", err) != ATF_OK) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    return p;
}

/* Example i + half copies example i (H rows, D rows, J rows, CSR rows, and r unless `other`,
 * which then gets other targets: inconsistent). */
static void repeat_examples(atf_problem *p, int other)
{
    int N = p->N, C = p->C, half = N / 2;
    for (int l = 0; l < p->nblocks; l++) {
        atf_block *b = &p->blocks[l];
        int len = b->rows * b->cols;
        for (int i = 0; i < half; i++) {
            if (b->kind == ATF_OP_FACTORED) {
                memcpy(b->H + (size_t)(i + half) * b->rows, b->H + (size_t)i * b->rows,
                       (size_t)b->rows * sizeof *b->H);
                memcpy(b->D + (size_t)(i + half) * C * b->cols, b->D + (size_t)i * C * b->cols,
                       (size_t)C * b->cols * sizeof *b->D);
            } else if (b->kind == ATF_OP_DENSE) {
                memcpy(b->J + (size_t)(i + half) * C * len, b->J + (size_t)i * C * len,
                       (size_t)C * len * sizeof *b->J);
            }
        }
    }
    for (int i = 0; i < half * C; i++)
        p->r[half * C + i] = other ? p->r[i] + 1.0 : p->r[i];
}

/* r = A x0 for a random x0: consistent whatever the rank of A. */
static void consistent_rhs(atf_problem *p, uint64_t seed)
{
    atf_test_rng rng;
    atf_test_rng_seed(&rng, seed);
    double **B = malloc((size_t)p->nblocks * sizeof *B);
    for (int l = 0; l < p->nblocks; l++)
        B[l] = atf_test_new_normal(&rng, (size_t)p->blocks[l].rows * p->blocks[l].cols);
    memset(p->r, 0, (size_t)p->M * sizeof *p->r);
    atf_problem_residual(p, B, p->r); /* A x0 − 0 */
    for (int l = 0; l < p->nblocks; l++)
        free(B[l]);
    free(B);
}

/* Solve with the Gram (opt NULL) or with CG under opt at relative tolerance eps, with hooks;
 * *e the error. */
static atf_result *solve_hooks(const atf_problem *p, const atf_cg_options *opt, double eps,
                               int max_iter, const atf_hooks *hooks, atf_error *e, char *err)
{
    atf_settings set = atf_settings_default();
    set.method = opt ? ATF_METHOD_CG : ATF_METHOD_BASELINE;
    if (eps > 0.0)
        set.eps_rel = eps;
    if (max_iter > 0)
        set.max_iter = max_iter;
    atf_solver *s = NULL;
    atf_result *res = NULL;
    *e = atf_solver_init(p, &set, hooks, &s, err);
    if (!*e && opt)
        *e = atf_sv_cg_configure(s, opt, err);
    if (!*e)
        *e = atf_solver_solve(s, &res, err);
    atf_solver_free(s);
    return *e ? NULL : res;
}

static atf_result *solve(const atf_problem *p, const atf_cg_options *opt, double eps, int max_iter,
                         volatile sig_atomic_t *flag, char *err)
{
    atf_hooks hooks = {.interrupt = flag};
    atf_error e;
    return solve_hooks(p, opt, eps, max_iter, &hooks, &e, err);
}

/* max |B − B_ref| / max |B_ref| over every block. */
static double b_diff(const atf_result *a, const atf_result *ref)
{
    double d = 0.0;
    for (int l = 0; l < a->nblocks; l++) {
        size_t n = (size_t)a->blocks[l].rows * (size_t)a->blocks[l].cols;
        d = fmax(d, max_rel_diff(n, a->blocks[l].B, ref->blocks[l].B));
    }
    return d;
}

static int result_finite(const atf_result *r)
{
    if (!isfinite(r->info.objective) || !isfinite(r->info.constraint_residual))
        return 0;
    for (int l = 0; l < r->nblocks; l++)
        for (int j = 0; j < r->blocks[l].rows * r->blocks[l].cols; j++)
            if (!isfinite(r->blocks[l].B[j]))
                return 0;
    return 1;
}

static const atf_cg_options PRECONDS[] = {
    {.precond = ATF_PRECOND_AUTO},
    {.precond = ATF_PRECOND_NONE},
    {.precond = ATF_PRECOND_JACOBI},
    {.precond = ATF_PRECOND_NYSTROM, .rank = 4},
    {.precond = ATF_PRECOND_NYSTROM_BLOCK, .rank = 4},
    {.precond = ATF_PRECOND_AUTO, .krylov = ATF_CG_KRYLOV_CRAIG}, /* consistent r only */
    {.precond = ATF_PRECOND_GRAM32},
};
enum { NPRE = sizeof PRECONDS / sizeof PRECONDS[0] };

/* Every preconditioner against the Gram on one problem. */
static void check_against_gram(const char *name, const atf_problem *p)
{
    char err[ATF_ERRLEN];
    atf_result *ref = solve(p, NULL, 0.0, 0, NULL, err);
    CHECK(ref && ref->info.status == ATF_STATUS_SOLVED, "%s: gram: %s", name, ref ? "" : err);
    if (!ref)
        return;
    for (int i = 0; i < NPRE; i++) {
        const char *pn = atf_precond_name(PRECONDS[i].precond);
        atf_result *r = solve(p, &PRECONDS[i], 1e-13, 0, NULL, err);
        CHECK(r != NULL, "%s %s: %s", name, pn, err);
        if (!r)
            continue;
        CHECK(r->info.status == ATF_STATUS_SOLVED && !strcmp(r->info.method, "cg"),
              "%s %s: status %s", name, pn, atf_status_name(r->info.status));
        CHECK(b_diff(r, ref) < 1e-8, "%s %s: B differs from the Gram's by %.3e", name, pn,
              b_diff(r, ref));
        CHECK(rel_diff(r->info.objective, ref->info.objective) < 1e-9, "%s %s: objective %.15g vs %.15g",
              name, pn, r->info.objective, ref->info.objective);
        CHECK(r->info.constraint_residual < 1e-10, "%s %s: constraint residual %.3e", name, pn,
              r->info.constraint_residual);
        /* the candidate comes from an inner solve to 1e-8 (ATF_CG_CERT_TOL; at 1e-4 a
         * rank-deficient case with Jacobi stopped at a certificate of 4.8e-4) */
        CHECK(fabs(r->info.stationarity - ref->info.stationarity) < 1e-3 * ref->info.stationarity + 1e-4,
              "%s %s: stationarity %.6e vs the Gram's %.6e", name, pn, r->info.stationarity,
              ref->info.stationarity);
        CHECK(result_finite(r), "%s %s: non-finite output", name, pn);
        CHECK(r->info.iterations > 0 && r->info.inner_iterations >= r->info.iterations &&
                  r->info.operator_passes >= 2 * r->info.iterations,
              "%s %s: %d steps, %d inner, %d passes", name, pn, r->info.iterations,
              r->info.inner_iterations, r->info.operator_passes);
        CHECK(strstr(r->info.method_note, pn) != NULL || PRECONDS[i].precond == ATF_PRECOND_AUTO,
              "%s %s: note '%s'", name, pn, r->info.method_note);
        atf_result_free(r);
    }
    /* the default tolerance interpolates as every other method must */
    atf_cg_options def = {0};
    atf_result *r = solve(p, &def, 0.0, 0, NULL, err);
    CHECK(r && r->info.status == ATF_STATUS_SOLVED && r->info.constraint_residual <= 1.5e-8 &&
              b_diff(r, ref) < 1e-5,
          "%s default tol: %s, residual %.3e, B diff %.3e", name,
          r ? atf_status_name(r->info.status) : err, r ? r->info.constraint_residual : NAN,
          r ? b_diff(r, ref) : NAN);
    atf_result_free(r);
    atf_result_free(ref);
}

static void test_against_gram(void)
{
    const shape fac1[] = {{ATF_OP_FACTORED, 12, 6}, {ATF_OP_FACTORED, 6, 1}};
    const shape fac3[] = {{ATF_OP_FACTORED, 10, 6}, {ATF_OP_FACTORED, 6, 3}};
    const shape mixed[] = {{ATF_OP_FACTORED, 8, 4}, {ATF_OP_DENSE, 3, 4}, {ATF_OP_SPARSE, 4, 4}};
    const shape dense[] = {{ATF_OP_DENSE, 5, 6}};
    const shape sparse[] = {{ATF_OP_SPARSE, 6, 6}};
    struct {
        const char *name;
        int N, C, nb;
        const shape *sh;
    } cases[] = {{"factored C=1", 30, 1, 2, fac1}, {"factored C=3", 20, 3, 2, fac3},
                 {"mixed C=2", 15, 2, 3, mixed},   {"dense C=2", 10, 2, 1, dense},
                 {"sparse C=1", 20, 1, 1, sparse}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        atf_problem *p = make_problem(100 + c, cases[c].N, cases[c].C, cases[c].sh, cases[c].nb);
        check_against_gram(cases[c].name, p);
        atf_problem_free(p);
    }
}

/* gram32 on problems whose M is odd and even and spans several panels of 128 columns (the
 * first straddles the two parts of the packed array): the Gram's B, in a handful of steps. */
static void test_gram32(void)
{
    const shape fac1[] = {{ATF_OP_FACTORED, 30, 20}, {ATF_OP_FACTORED, 20, 1}};
    const shape fac3[] = {{ATF_OP_FACTORED, 30, 20}, {ATF_OP_FACTORED, 20, 3}};
    const shape mixed[] = {{ATF_OP_FACTORED, 20, 12}, {ATF_OP_DENSE, 3, 4}, {ATF_OP_SPARSE, 4, 4}};
    struct {
        const char *name;
        int N, C, nb;
        const shape *sh;
    } cases[] = {{"gram32, M = 131 (odd), C = 1", 131, 1, 2, fac1},
                 {"gram32, M = 130 (even), C = 1", 130, 1, 2, fac1},
                 {"gram32, M = 261 (odd), C = 3", 87, 3, 2, fac3},
                 {"gram32, M = 258 (even), C = 2, mixed blocks", 129, 2, 3, mixed}};
    atf_cg_options g = {.precond = ATF_PRECOND_GRAM32};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        atf_problem *p = make_problem(300 + c, cases[c].N, cases[c].C, cases[c].sh, cases[c].nb);
        char err[ATF_ERRLEN];
        atf_result *ref = solve(p, NULL, 0.0, 0, NULL, err);
        atf_result *r = solve(p, &g, 1e-13, 0, NULL, err);
        CHECK(ref && r && r->info.status == ATF_STATUS_SOLVED, "%s: %s", cases[c].name,
              r ? atf_status_name(r->info.status) : err);
        if (ref && r) {
            CHECK(b_diff(r, ref) < 1e-8, "%s: B differs from the Gram's by %.3e", cases[c].name,
                  b_diff(r, ref));
            CHECK(r->info.iterations <= 6, "%s: %d steps", cases[c].name, r->info.iterations);
            CHECK(strstr(r->info.method_note, "gram32 preconditioner (single precision") != NULL,
                  "%s: note '%s'", cases[c].name, r->info.method_note);
        }
        atf_result_free(r);
        atf_result_free(ref);
        volatile sig_atomic_t flag = 1;
        r = solve(p, &g, 0.0, 0, &flag, err);
        CHECK(r && r->info.status == ATF_STATUS_INTERRUPTED && r->info.iterations == 0 &&
                  result_finite(r),
              "%s, interrupted: %s", cases[c].name, r ? atf_status_name(r->info.status) : err);
        atf_result_free(r);
        atf_problem_free(p);
    }
}

/* gram32's solve through the packed factor against LAPACK's spftrs, odd and even orders (the
 * two layouts of the packed array), down to 1 and 2. */
static void test_rfp_solve(void)
{
    const int orders[] = {1, 2, 3, 8, 131, 130, 257};
    for (size_t c = 0; c < sizeof orders / sizeof orders[0]; c++) {
        int M = orders[c];
        size_t len = (size_t)M * (M + 1) / 2;
        float *full = calloc((size_t)M * M, sizeof *full), *rfp = malloc(len * sizeof *rfp);
        float *x = malloc((size_t)M * sizeof *x), *y = malloc((size_t)M * sizeof *y);
        atf_test_rng rng;
        atf_test_rng_seed(&rng, 77 + (uint64_t)M);
        for (int j = 0; j < M; j++) /* diagonally dominant: well conditioned */
            for (int i = j; i < M; i++)
                full[i + (size_t)j * M] = i == j ? (float)M : (float)(0.5 * atf_test_symmetric(&rng));
        for (int i = 0; i < M; i++)
            x[i] = y[i] = (float)atf_test_symmetric(&rng);
        lapack_int info = LAPACKE_strttf(LAPACK_COL_MAJOR, 'N', 'L', M, full, M, rfp);
        if (!info)
            info = LAPACKE_spftrf(LAPACK_COL_MAJOR, 'N', 'L', M, rfp);
        CHECK(info == 0, "rfp solve, M = %d: the factorisation failed (%d)", M, (int)info);
        LAPACKE_spftrs(LAPACK_COL_MAJOR, 'N', 'L', M, 1, rfp, x, M);
        atf_sv_cg_rfp_solve(M, rfp, y);
        double diff = 0.0, size = 0.0;
        for (int i = 0; i < M; i++)
            diff = fmax(diff, fabs((double)x[i] - y[i])), size = fmax(size, fabs((double)x[i]));
        CHECK(diff <= 1e-5 * size, "rfp solve, M = %d: %.3e from spftrs (size %.3e)", M, diff,
              size);
        free(full), free(rfp), free(x), free(y);
    }
}

/* The linear systems of a projection named "cg" (by PCG) or "gram" (a factorisation). */
static atf_linsys_kind linsys_of(const char *projection)
{
    return strcmp(projection, "cg") == 0 ? ATF_LINSYS_PCG : ATF_LINSYS_DIRECT;
}

/* ADMM on problem (16) interpolation with the projection through the Gram or through PCG. */
static atf_result *solve_admm(const atf_problem *p, const char *projection, atf_error *e,
                              char *err)
{
    atf_settings set = atf_settings_default();
    set.method = ATF_METHOD_ADMM;
    set.linsys = linsys_of(projection);
    atf_solver *s = NULL;
    atf_result *res = NULL;
    *e = atf_solver_init(p, &set, NULL, &s, err);
    if (!*e)
        *e = atf_solver_solve(s, &res, err);
    atf_solver_free(s);
    return *e ? NULL : res;
}

static void test_admm_by_cg(void)
{
    const shape fac3[] = {{ATF_OP_FACTORED, 30, 20}, {ATF_OP_FACTORED, 20, 3}};
    const shape mixed[] = {{ATF_OP_FACTORED, 20, 12}, {ATF_OP_DENSE, 3, 4}, {ATF_OP_SPARSE, 4, 4}};
    struct {
        const char *name, *penalty;
        int N, C, nb;
        const shape *sh;
    } cases[] = {{"admm by cg, nuclear, M = 261", "nuclear", 87, 3, 2, fac3},
                 {"admm by cg, balanced+balanced, M = 261", "balanced+balanced", 87, 3, 2, fac3},
                 {"admm by cg, sq, mixed blocks, M = 130", "sq", 65, 2, 3, mixed}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        atf_problem *p = make_problem(400 + c, cases[c].N, cases[c].C, cases[c].sh, cases[c].nb);
        char err[ATF_ERRLEN];
        atf_error e;
        CHECK(atf_problem_set_penalty(p, cases[c].penalty, err) == ATF_OK, "%s: %s",
              cases[c].name, err);
        atf_result *ref = solve_admm(p, "gram", &e, err);
        CHECK(ref && ref->info.status == ATF_STATUS_SOLVED, "%s, gram: %s", cases[c].name,
              ref ? atf_status_name(ref->info.status) : err);
        atf_result *r = solve_admm(p, "cg", &e, err);
        CHECK(r && r->info.status == ATF_STATUS_SOLVED, "%s: %s", cases[c].name,
              r ? atf_status_name(r->info.status) : err);
        if (ref && r) {
            CHECK(rel_diff(r->info.objective, ref->info.objective) < 1e-9,
                  "%s: objective %.15g vs the Gram's %.15g", cases[c].name, r->info.objective,
                  ref->info.objective);
            CHECK(b_diff(r, ref) < 1e-6, "%s: B differs from the Gram ADMM's by %.3e",
                  cases[c].name, b_diff(r, ref));
            CHECK(abs(r->info.iterations - ref->info.iterations) <= 2,
                  "%s: %d iterations against the Gram's %d", cases[c].name, r->info.iterations,
                  ref->info.iterations);
            CHECK(r->info.constraint_residual < 1e-9 && r->info.stationarity <= 1e-6,
                  "%s: constraint residual %.3e, stationarity %.3e", cases[c].name,
                  r->info.constraint_residual, r->info.stationarity);
            CHECK(strstr(r->info.method_note, "projection by PCG") != NULL, "%s: note '%s'",
                  cases[c].name, r->info.method_note);
            /* every iteration projects once, each PCG step costs two passes */
            CHECK(r->info.inner_iterations >= r->info.iterations &&
                      r->info.operator_passes >= 2 * r->info.inner_iterations,
                  "%s: %d PCG steps, %d passes over %d iterations", cases[c].name,
                  r->info.inner_iterations, r->info.operator_passes, r->info.iterations);
            CHECK(ref->info.inner_iterations < 0, "%s: the Gram's run counts %d PCG steps",
                  cases[c].name, ref->info.inner_iterations);
        }
        atf_result_free(r);
        atf_result_free(ref);
        atf_problem_free(p);
    }
    /* inconsistent r: the Gram decides it (infeasible); PCG cannot reach the tolerance at the
     * min-norm point and says so in one line */
    atf_problem *p = make_problem(409, 40, 3, fac3, 2);
    repeat_examples(p, 1);
    char err[ATF_ERRLEN] = "";
    atf_error e;
    atf_result *ref = solve_admm(p, "gram", &e, err);
    CHECK(ref && ref->info.status == ATF_STATUS_INFEASIBLE, "inconsistent, gram: %s",
          ref ? atf_status_name(ref->info.status) : err);
    atf_result_free(ref);
    atf_result *r = solve_admm(p, "cg", &e, err);
    CHECK(!r && e == ATF_E_NUMERICAL && strstr(err, "inconsistent") && !strchr(err, '\n'),
          "inconsistent, cg: %s, '%s'", r ? atf_status_name(r->info.status) : "error", err);
    atf_result_free(r);
    atf_problem_free(p);
}

/* The verbose log of a solve, kept (hooks.log). */
typedef struct {
    char text[1 << 16];
    size_t len;
} log_text;

static void keep_log(void *ctx, const char *piece)
{
    log_text *l = ctx;
    int k = snprintf(l->text + l->len, sizeof l->text - l->len, "%s", piece);
    if (k > 0)
        l->len = l->len + (size_t)k < sizeof l->text ? l->len + (size_t)k : sizeof l->text - 1;
}

/* ADMM (projection by the Gram or by PCG: settings.linsys) with these hooks; the log kept in
 * *log when given. */
static atf_result *admm_hooks(const atf_problem *p, const char *projection, int max_iter,
                              atf_hooks hooks, log_text *log, atf_error *e, char *err)
{
    atf_settings set = atf_settings_default();
    set.method = ATF_METHOD_ADMM;
    set.linsys = linsys_of(projection);
    if (max_iter > 0)
        set.max_iter = max_iter;
    if (log) {
        log->len = 0, log->text[0] = '\0';
        set.verbose = 1, hooks.log = keep_log, hooks.log_ctx = log;
    }
    return solve_with_hooks(p, &set, &hooks, e, err);
}

/* ADMM's checkpoints: a state at the top of every iteration; the run resumed from any of them,
 * after a stop or at the iteration limit ends where the uninterrupted one does, bit for bit;
 * states of another solve or damaged ones are refused. By PCG, the gram32 factor is kept in
 * hooks.precond_file and read back by the resumed runs (the same factor: the same bits), and
 * another Gram's factor is refused. */
static void admm_checkpoint_case(const char *projection, atf_problem *p, atf_problem *other,
                                 const char *precond)
{
    char err[ATF_ERRLEN] = "";
    int n = (int)atf_problem_nvars(p), by_cg = !strcmp(projection, "cg");
    atf_error e;
    static log_text log;
    atf_result *plain = admm_hooks(p, projection, 0, (atf_hooks){0}, NULL, &e, err);
    CHECK(plain && plain->info.status == ATF_STATUS_SOLVED && plain->info.iterations > 8,
          "admm checkpoints (%s): the plain solve (%s, %d iterations)", projection, err,
          plain ? plain->info.iterations : -1);
    if (!plain)
        return;
    static kept_states k;
    k = (kept_states){.fail_at = -1, .stop_at = -1};
    remove(precond);
    atf_hooks every = {.checkpoint = keep_state, .checkpoint_ctx = &k, .precond_file = precond};
    atf_result *kept = admm_hooks(p, projection, 0, every, &log, &e, err);
    CHECK(kept && same_result(plain, kept, n) && k.count == plain->info.iterations,
          "admm checkpoints (%s): checkpoints changed the solve or their number (%d states, %d "
          "iterations; %s)", projection, k.count, plain->info.iterations, err);
    CHECK(by_cg == (access(precond, F_OK) == 0 && strstr(log.text, "factor kept in") != NULL),
          "admm checkpoints (%s): the factor file %s", projection,
          by_cg ? "was not written" : "was written without gram32");
    for (int i = 0; i < k.count && i < MAX_STATES; i += k.count / 5 + 1) {
        atf_hooks from = {.resume = &k.states[i], .precond_file = precond};
        atf_result *res = admm_hooks(p, projection, 0, from, &log, &e, err);
        CHECK(res && same_result(plain, res, n), "admm checkpoints (%s): resumed at state %d of "
              "%d: %s (%d iterations)", projection, i, k.count, err,
              res ? res->info.iterations : -1);
        CHECK(!by_cg || strstr(log.text, "factor read from"), "admm checkpoints (cg): resumed "
              "at state %d without reading the kept factor", i);
        atf_result_free(res);
    }
    /* Ctrl-C, then go on. The flag rises while the state at the top of iteration j + 1 is kept:
     * by the Gram that iteration runs whole; by PCG it is undone (its projection was cut short) */
    for (int j = 2; j < k.count; j += k.count / 2) {
        volatile sig_atomic_t flag = 0;
        static kept_states stop;
        stop = (kept_states){.fail_at = -1, .stop_at = j, .stop = &flag};
        atf_hooks hooks = {.checkpoint = keep_state, .checkpoint_ctx = &stop, .interrupt = &flag};
        atf_result *cut = admm_hooks(p, projection, 0, hooks, NULL, &e, err);
        CHECK(cut && cut->info.status == ATF_STATUS_INTERRUPTED && stop.count == j + 2 &&
                  cut->info.iterations == j + !by_cg &&
                  isnan(cut->info.stationarity) == by_cg,
              "admm checkpoints (%s): stopped at state %d: %s, %d states", projection, j,
              cut ? atf_status_name(cut->info.status) : err, stop.count);
        atf_hooks from = {.resume = &stop.states[stop.count - 1]};
        atf_result *res = stop.count == j + 2 ? admm_hooks(p, projection, 0, from, NULL, &e, err)
                                              : NULL;
        CHECK(res && same_result(plain, res, n), "admm checkpoints (%s): resumed after the stop "
              "at %d: %s", projection, j, err);
        atf_result_free(cut), atf_result_free(res);
        kept_states_free(&stop);
    }
    { /* the iteration limit keeps the state it stopped at */
        static kept_states lim;
        lim = (kept_states){.fail_at = -1, .stop_at = -1};
        atf_hooks hooks = {.checkpoint = keep_state, .checkpoint_ctx = &lim,
                           .checkpoint_seconds = 1e9};
        atf_result *cut = admm_hooks(p, projection, 3, hooks, NULL, &e, err);
        atf_hooks from = {.resume = &lim.states[0]};
        atf_result *res = lim.count == 1 ? admm_hooks(p, projection, 0, from, NULL, &e, err)
                                         : NULL;
        CHECK(cut && cut->info.status == ATF_STATUS_MAX_ITERATIONS && lim.count == 1 && res &&
                  same_result(plain, res, n),
              "admm checkpoints (%s): the iteration limit: %d states kept, then %s", projection,
              lim.count, err);
        atf_result_free(cut), atf_result_free(res);
        kept_states_free(&lim);
    }
    if (k.count > 2) { /* the flag up before ADMM begins: by PCG it cut the setup short (the
                           factor, the least-squares point, ρ0), so no state is kept (one of
                           iteration 0 would be another start); a resumed state is read and
                           returned, and none is kept either */
        volatile sig_atomic_t flag = 1;
        static kept_states none;
        none = (kept_states){.fail_at = -1, .stop_at = -1};
        atf_hooks hooks = {.checkpoint = keep_state, .checkpoint_ctx = &none, .interrupt = &flag};
        atf_result *cut = admm_hooks(p, projection, 0, hooks, NULL, &e, err);
        CHECK(cut && cut->info.status == ATF_STATUS_INTERRUPTED && cut->info.iterations == 0 &&
                  none.count == 0,
              "admm checkpoints (%s): stopped before the first iteration: %s, %d states kept",
              projection, cut ? atf_status_name(cut->info.status) : err, none.count);
        hooks.resume = &k.states[2];
        atf_result *res = admm_hooks(p, projection, 0, hooks, NULL, &e, err);
        CHECK(res && res->info.status == ATF_STATUS_INTERRUPTED && res->info.iterations == 2 &&
                  none.count == 0,
              "admm checkpoints (%s): resumed with the flag up: %s after %d iterations, %d "
              "states kept", projection, res ? atf_status_name(res->info.status) : err,
              res ? res->info.iterations : -1, none.count);
        atf_result_free(cut), atf_result_free(res);
        kept_states_free(&none);
    }
    { /* a state that cannot be kept ends the solve */
        static kept_states fail;
        fail = (kept_states){.fail_at = 3, .stop_at = -1};
        atf_hooks hooks = {.checkpoint = keep_state, .checkpoint_ctx = &fail};
        atf_result *res = admm_hooks(p, projection, 0, hooks, NULL, &e, err);
        CHECK(!res && e == ATF_E_IO && strstr(err, "could not be kept"),
              "admm checkpoints (%s): a refused state: %d, %s", projection, (int)e, err);
        atf_result_free(res);
        kept_states_free(&fail);
    }
    if (k.count > 0) {
        atf_settings set = atf_settings_default();
        set.method = ATF_METHOD_ADMM, set.alpha = 1.5;
        set.linsys = linsys_of(projection);
        atf_hooks from = {.resume = &k.states[0]};
        atf_result *res = solve_with_hooks(p, &set, &from, &e, err);
        CHECK(!res && e == ATF_E_INPUT && strstr(err, "another solve") && strstr(err, "alpha"),
              "admm checkpoints (%s): another alpha's state: %d, %s", projection, (int)e, err);
        atf_result_free(res);
        atf_checkpoint damaged = k.states[0];
        damaged.len--;
        from.resume = &damaged;
        res = admm_hooks(p, projection, 0, from, NULL, &e, err);
        CHECK(!res && e == ATF_E_INPUT && strstr(err, "not an ADMM state") && !strchr(err, '\n'),
              "admm checkpoints (%s): a damaged state: %d, %s", projection, (int)e, err);
        atf_result_free(res);
    }
    if (by_cg) { /* another problem's factor (the same shape) */
        atf_hooks hooks = {.precond_file = precond};
        atf_result *res = admm_hooks(other, projection, 0, hooks, NULL, &e, err);
        CHECK(!res && e == ATF_E_INPUT && strstr(err, precond) && strstr(err, "another solve") &&
                  !strchr(err, '\n'),
              "admm checkpoints (cg): another problem's factor: %d, %s", (int)e, err);
        atf_result_free(res);
        FILE *f = fopen(precond, "r+b"); /* a damaged factor file */
        if (f) {
            fseek(f, 0, SEEK_END);
            long size = ftell(f);
            fseek(f, size / 2, SEEK_SET);
            fputs("damage", f);
            fclose(f);
        }
        hooks.precond_file = precond;
        res = admm_hooks(p, projection, 0, hooks, NULL, &e, err);
        CHECK(!res && e == ATF_E_INPUT && strstr(err, precond) && !strchr(err, '\n'),
              "admm checkpoints (cg): a damaged factor file: %d, %s", (int)e, err);
        atf_result_free(res);
    }
    remove(precond);
    atf_result_free(plain), atf_result_free(kept);
    kept_states_free(&k);
}

static void test_admm_checkpoints(void)
{
    const shape fac3[] = {{ATF_OP_FACTORED, 30, 20}, {ATF_OP_FACTORED, 20, 3}};
    atf_problem *p = make_problem(431, 87, 3, fac3, 2), *other = make_problem(432, 87, 3, fac3, 2);
    char err[ATF_ERRLEN], dir[] = "/tmp/atf_admm_ckpt_XXXXXX", precond[64];
    CHECK(atf_problem_set_penalty(p, "balanced+balanced", err) == ATF_OK &&
              atf_problem_set_penalty(other, "balanced+balanced", err) == ATF_OK, "%s", err);
    if (mkdtemp(dir)) {
        snprintf(precond, sizeof precond, "%s/factor.h5", dir);
        admm_checkpoint_case("gram", p, other, precond);
        admm_checkpoint_case("cg", p, other, precond);
        rmdir(dir);
    } else {
        CHECK(0, "mkdtemp failed");
    }
    atf_problem_free(p), atf_problem_free(other);
}

/* A rank beyond one block of pivots (128): several rounds of the randomly pivoted Cholesky with
 * its rejection step, a residual trace that shrinks, and the Woodbury core of rank 300. */
static void test_pivot_blocks(void)
{
    const shape fac[] = {{ATF_OP_FACTORED, 30, 20}, {ATF_OP_FACTORED, 20, 2}};
    atf_problem *p = make_problem(71, 200, 2, fac, 2); /* M = 400, n = 640 */
    char err[ATF_ERRLEN];
    atf_result *ref = solve(p, NULL, 0.0, 0, NULL, err);
    const atf_precond kinds[] = {ATF_PRECOND_NYSTROM, ATF_PRECOND_NYSTROM_BLOCK};
    for (int i = 0; ref && i < 2; i++) {
        atf_cg_options o = {.precond = kinds[i], .rank = 300};
        atf_result *r = solve(p, &o, 1e-13, 0, NULL, err);
        CHECK(r && r->info.status == ATF_STATUS_SOLVED && b_diff(r, ref) < 1e-8 &&
                  strstr(r->info.method_note, "rank 300") != NULL,
              "rank 300 %s: %s, B diff %.3e, note '%s'", atf_precond_name(kinds[i]),
              r ? atf_status_name(r->info.status) : err, r ? b_diff(r, ref) : NAN,
              r ? r->info.method_note : "");
        atf_result_free(r);
    }
    CHECK(ref != NULL, "rank 300: gram: %s", err);
    atf_result_free(ref);
    atf_problem_free(p);
}

/* Rows (A and r) × 1e3 and × 1e-3 describe the same affine set: the plain problem's B. */
static void test_row_scales(void)
{
    const shape mixed[] = {{ATF_OP_FACTORED, 8, 4}, {ATF_OP_DENSE, 3, 4}, {ATF_OP_SPARSE, 4, 4}};
    atf_problem *plain = make_problem(7, 15, 2, mixed, 3);
    atf_problem *p = make_problem(7, 15, 2, mixed, 3);
    for (int m = 0; m < p->M; m++) {
        double f = m % 3 == 0 ? 1e3 : m % 3 == 1 ? 1e-3 : 1.0;
        p->r[m] *= f;
        for (int l = 0; l < p->nblocks; l++) {
            atf_block *b = &p->blocks[l];
            if (b->kind == ATF_OP_FACTORED)
                for (int j = 0; j < b->cols; j++)
                    b->D[(size_t)m * b->cols + j] *= f;
            else if (b->kind == ATF_OP_DENSE)
                for (int j = 0; j < b->rows * b->cols; j++)
                    b->J[(size_t)m * b->rows * b->cols + j] *= f;
            else
                for (int64_t k = b->indptr[m]; k < b->indptr[m + 1]; k++)
                    b->data[k] *= f;
        }
    }
    check_against_gram("rows x 1e3 and 1e-3", p);
    char err[ATF_ERRLEN];
    atf_cg_options def = {0};
    atf_result *a = solve(plain, NULL, 0.0, 0, NULL, err), *b = solve(p, &def, 1e-13, 0, NULL, err);
    CHECK(a && b && b_diff(b, a) < 1e-8, "scaled rows: B differs from the plain problem's by %.3e",
          a && b ? b_diff(b, a) : NAN);
    atf_result_free(a), atf_result_free(b);
    atf_problem_free(plain), atf_problem_free(p);
}

static void test_rank_deficient(void)
{
    const shape fac3[] = {{ATF_OP_FACTORED, 10, 6}, {ATF_OP_FACTORED, 6, 3}};
    atf_problem *p = make_problem(11, 20, 3, fac3, 2);
    repeat_examples(p, 0); /* AAᵀ has rank ≤ 30 of 60 */
    check_against_gram("repeated examples", p);
    atf_problem_free(p);
    const shape small[] = {{ATF_OP_FACTORED, 5, 3}, {ATF_OP_DENSE, 2, 3}};
    p = make_problem(12, 14, 2, small, 2); /* 28 rows, 21 variables */
    consistent_rhs(p, 13);
    check_against_gram("more rows than variables, r = A x0", p);
    atf_problem_free(p);
}

static void check_infeasible(const char *name, const atf_problem *p)
{
    char err[ATF_ERRLEN];
    atf_result *ref = solve(p, NULL, 0.0, 0, NULL, err);
    CHECK(ref && ref->info.status == ATF_STATUS_INFEASIBLE, "%s: the Gram says %s", name,
          ref ? atf_status_name(ref->info.status) : err);
    for (int i = 0; i < NPRE; i++) {
        const char *pn = atf_precond_name(PRECONDS[i].precond);
        if (PRECONDS[i].krylov == ATF_CG_KRYLOV_CRAIG)
            continue; /* CG on AAᵀ diverges on inconsistent data: LSQR decides */
        err[0] = '\0';
        atf_result *r = solve(p, &PRECONDS[i], 0.0, 5000, NULL, err);
        CHECK(r && r->info.status == ATF_STATUS_INFEASIBLE, "%s %s: status %s (%s)", name, pn,
              r ? atf_status_name(r->info.status) : "none", err);
        if (!r)
            continue;
        CHECK(r->info.iterations < 1000, "%s %s: %d steps to decide", name, pn, r->info.iterations);
        CHECK(result_finite(r) && !isnan(r->info.stationarity), "%s %s: non-finite output", name, pn);
        CHECK(strstr(err, "inconsistent") != NULL, "%s %s: message '%s'", name, pn, err);
        if (ref)
            CHECK(r->info.constraint_residual >= ref->info.constraint_residual * (1.0 - 1e-6) &&
                      r->info.constraint_residual < 10.0 * ref->info.constraint_residual,
                  "%s %s: residual %.6e, the Gram's least-squares residual %.6e", name, pn,
                  r->info.constraint_residual, ref->info.constraint_residual);
        atf_result_free(r);
    }
    atf_result_free(ref);
}

static void test_inconsistent(void)
{
    const shape fac3[] = {{ATF_OP_FACTORED, 10, 6}, {ATF_OP_FACTORED, 6, 3}};
    atf_problem *p = make_problem(21, 20, 3, fac3, 2);
    repeat_examples(p, 1);
    check_infeasible("repeated examples, other targets", p);
    atf_problem_free(p);
    const shape small[] = {{ATF_OP_FACTORED, 5, 3}, {ATF_OP_DENSE, 2, 3}};
    p = make_problem(22, 14, 2, small, 2); /* 28 rows, 21 variables, random r */
    check_infeasible("more rows than variables", p);
    atf_problem_free(p);
}

static void test_limits(void)
{
    const shape fac3[] = {{ATF_OP_FACTORED, 10, 6}, {ATF_OP_FACTORED, 6, 3}};
    atf_problem *p = make_problem(31, 20, 3, fac3, 2);
    char err[ATF_ERRLEN] = "";
    atf_cg_options none = {.precond = ATF_PRECOND_NONE};
    atf_result *r = solve(p, &none, 0.0, 3, NULL, err);
    CHECK(r && r->info.status == ATF_STATUS_MAX_ITERATIONS && r->info.iterations == 3 && result_finite(r) &&
              strstr(err, "step limit 3") != NULL,
          "step limit: %s, %d steps, '%s'", r ? atf_status_name(r->info.status) : "none",
          r ? r->info.iterations : -1, err);
    atf_result_free(r);
    volatile sig_atomic_t flag = 1;
    r = solve(p, &none, 0.0, 0, &flag, err);
    CHECK(r && r->info.status == ATF_STATUS_INTERRUPTED && r->info.iterations == 0 && result_finite(r),
          "interrupt: %s", r ? atf_status_name(r->info.status) : err);
    atf_result_free(r);
    /* the flag also ends the preconditioner's pivoting (at M = 72 000 it ran 20 s past a
     * Ctrl-C): raised before it, no pivot is taken (the note names no rank), and the solve
     * stops at its first step */
    for (int k = 3; k < 5; k++) {
        r = solve(p, &PRECONDS[k], 0.0, 0, &flag, err);
        CHECK(r && r->info.status == ATF_STATUS_INTERRUPTED && r->info.iterations == 0 &&
                  result_finite(r) && strstr(r->info.method_note, "rank") == NULL,
              "interrupt, %s preconditioner: %s, note '%s'", k == 3 ? "nystrom" : "nystrom-block",
              r ? atf_status_name(r->info.status) : err, r ? r->info.method_note : "");
        atf_result_free(r);
    }
    memset(p->r, 0, (size_t)p->M * sizeof *p->r); /* r = 0: B = 0 at once */
    r = solve(p, &none, 0.0, 0, NULL, err);
    CHECK(r && r->info.status == ATF_STATUS_SOLVED && r->info.iterations == 0 && r->info.objective == 0.0,
          "r = 0: %s, %d steps", r ? atf_status_name(r->info.status) : err, r ? r->info.iterations : -1);
    atf_result_free(r);
    atf_problem_free(p);
}

static void test_reproducible(void)
{
    const shape fac3[] = {{ATF_OP_FACTORED, 10, 6}, {ATF_OP_FACTORED, 6, 3}};
    atf_problem *p = make_problem(41, 20, 3, fac3, 2);
    char err[ATF_ERRLEN];
    atf_cg_options o = {.precond = ATF_PRECOND_NYSTROM_BLOCK, .rank = 8};
    atf_result *a = solve(p, &o, 1e-13, 0, NULL, err), *b = solve(p, &o, 1e-13, 0, NULL, err);
    o.seed = 7;
    atf_result *c = solve(p, &o, 1e-13, 0, NULL, err);
    CHECK(a && b && c, "reproducible: %s", err);
    if (a && b && c) {
        CHECK(b_diff(a, b) == 0.0 && a->info.iterations == b->info.iterations,
              "same seed: B differs by %.3e", b_diff(a, b));
        CHECK(b_diff(a, c) < 1e-8, "another seed: B differs by %.3e", b_diff(a, c));
    }
    atf_result_free(a), atf_result_free(b), atf_result_free(c);
    atf_problem_free(p);
}

/* One solver, solved twice (once infeasible), and its projection through CG. */
static void test_solver_reuse(void)
{
    const shape fac3[] = {{ATF_OP_FACTORED, 10, 6}, {ATF_OP_FACTORED, 6, 3}};
    atf_problem *p = make_problem(51, 20, 3, fac3, 2);
    repeat_examples(p, 1);
    atf_settings set = atf_settings_default();
    set.method = ATF_METHOD_CG;
    char err[ATF_ERRLEN];
    atf_solver *s = NULL;
    atf_result *a = NULL, *b = NULL;
    CHECK(atf_solver_init(p, &set, NULL, &s, err) == ATF_OK, "init: %s", err);
    if (s && atf_solver_solve(s, &a, err) == ATF_OK && atf_solver_solve(s, &b, err) == ATF_OK) {
        CHECK(a->info.status == ATF_STATUS_INFEASIBLE && b->info.status == a->info.status &&
                  b_diff(a, b) == 0.0 && a->info.operator_passes == b->info.operator_passes,
              "second solve: %s then %s", atf_status_name(a->info.status), atf_status_name(b->info.status));
    } else {
        CHECK(0, "solve: %s", err);
    }
    atf_result_free(a), atf_result_free(b);
    atf_solver_free(s);
    atf_problem_free(p);
    p = make_problem(52, 20, 3, fac3, 2);
    s = NULL;
    CHECK(atf_solver_init(p, &set, NULL, &s, err) == ATF_OK, "init: %s", err);
    if (s) { /* the projection of 0 onto {A'x = r'} through PCG: an interpolant */
        double *v = calloc(s->n, sizeof *v);
        atf_sv_project(s, v, s->work.r, 2);
        double res = atf_sv_constraint_norm(s, v, s->work.r) / s->rnorm;
        CHECK(atf_linsys_pcg_engine(s->proj.ls) && res < 1e-8,
              "projection through CG: residual %.3e", res);
        free(v);
    }
    atf_solver_free(s);
    atf_problem_free(p);
}

/* The chooser's plan for one solve (the baseline) under the default settings. */
static atf_ls_plan baseline_plan(const atf_problem *p, char *why, size_t len)
{
    atf_settings set = atf_settings_default();
    return atf_linsys_choose(p, NULL, &set, 0, why, len);
}

static void test_auto_choice(void)
{
    const shape fac3[] = {{ATF_OP_FACTORED, 10, 6}, {ATF_OP_FACTORED, 6, 3}};
    atf_problem *p = make_problem(61, 20, 3, fac3, 2);
    char why[256] = "";
    CHECK(baseline_plan(p, why, sizeof why) == ATF_LS_PLAN_DIRECT && strstr(why, "M = 60"),
          "auto, M = 60: '%s'", why);
    atf_problem_free(p);
    /* M = 10⁶ rows (no operator data: only the sizes are read): 8.7 TB of Gram */
    atf_problem *big = atf_problem_new(100000, 10, 1);
    big->blocks[0].kind = ATF_OP_FACTORED;
    big->blocks[0].rows = 784, big->blocks[0].cols = 128;
    CHECK(baseline_plan(big, why, sizeof why) == ATF_LS_PLAN_PCG && strstr(why, "GiB"),
          "auto, M = 1e6: '%s'", why);
    atf_problem_free(big);
    atf_problem *mid = atf_problem_new(2000, 10, 1); /* M = 20 000: fits, but past the crossover */
    mid->blocks[0].kind = ATF_OP_FACTORED;
    mid->blocks[0].rows = 784, mid->blocks[0].cols = 128;
    CHECK(baseline_plan(mid, why, sizeof why) == ATF_LS_PLAN_PCG && strstr(why, "M = 20000"),
          "auto, M = 20000: '%s'", why);
    atf_problem_free(mid);
}

/* M rows whose Gram (8.7 bytes × M²) is 1.3 times the 75 % of the available memory that
 * atf_baseline may give it (the chooser, solver/linsys/linsys.c), so that it must take CG. One
 * factored block with 1.5 M parameters (well conditioned, random). Skipped, saying so, where the
 * memory makes that problem itself too large for a test (M > 80 000). */
static void test_baseline_fallback(void)
{
    long pages = sysconf(_SC_AVPHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    double avail = pages > 0 && size > 0 ? (double)pages * (double)size : 0.0;
    int C = 10, M = (int)ceil(sqrt(1.3 * 0.75 * avail / 8.7) / C) * C, N = M / C;
    if (M > 80000 || M <= 0) {
        printf("test_baseline_fallback: skipped: %.3g GiB available would need M = %d\n",
               avail / (1024.0 * 1024.0 * 1024.0), M);
        return;
    }
    int side = (int)ceil(sqrt(1.5 * M));
    const shape one[] = {{ATF_OP_FACTORED, side, side}};
    atf_problem *p = make_problem(71, N, C, one, 1);
    char why[256] = "", err[ATF_ERRLEN] = "";
    CHECK(baseline_plan(p, why, sizeof why) == ATF_LS_PLAN_PCG && strstr(why, "GiB"),
          "fallback, M = %d: auto chose the Gram: '%s'", M, why);
    atf_result *res = NULL;
    atf_error e = atf_baseline(p, &res, err);
    CHECK(e == ATF_OK && res, "fallback, M = %d: atf_baseline failed: %s", M, err);
    if (res) {
        printf("test_baseline_fallback: M = %d, %.3g GiB available: %s, %s, %d steps, "
               "constraint residual %.2e\n", M, avail / (1024.0 * 1024.0 * 1024.0),
               res->info.method, atf_status_name(res->info.status),
               res->info.iterations, res->info.constraint_residual);
        CHECK(!strcmp(res->info.method, "cg") && res->info.status == ATF_STATUS_SOLVED &&
                  res->info.constraint_residual <= 1.5e-8, /* the check before `solved` */
              "fallback, M = %d: method %s, status %s, constraint residual %.3e", M,
              res->info.method, atf_status_name(res->info.status),
              res->info.constraint_residual);
        atf_result_free(res);
    }
    /* the same call with a stop flag already raised: CG stops before its first step — unless
     * the available memory grew meanwhile (other processes on a shared machine ended), so that
     * the Gram fits now: atf_baseline then rightly takes it, and there is nothing to check */
    if (baseline_plan(p, NULL, 0) == ATF_LS_PLAN_DIRECT) {
        printf("test_baseline_fallback: the flag's case skipped: the Gram fits the memory now "
               "available\n");
        atf_problem_free(p);
        return;
    }
    volatile sig_atomic_t flag = 1;
    atf_hooks hooks = {.interrupt = &flag};
    res = NULL;
    e = atf_baseline_hooks(p, &hooks, &res, err);
    CHECK(e == ATF_OK && res && !strcmp(res->info.method, "cg") &&
              res->info.status == ATF_STATUS_INTERRUPTED && res->info.iterations == 0,
          "fallback, M = %d, flag raised: %s, method %s", M,
          res ? atf_status_name(res->info.status) : err,
          res ? res->info.method : "-");
    atf_result_free(res);
    atf_problem_free(p);
}

/* Checkpoints of the LSQR solve (one preconditioner): kept at every step, the solve is the
 * plain one; resumed from each state, stopped by the flag at a few, and stopped by the step
 * limit and run again with a larger one, it ends with the plain solve's B, counts and
 * certificate, bit for bit; another tolerance's, a shortened, a Craig and an unkept checkpoint
 * are refused. */
static void checkpoint_case(const char *what, const atf_problem *p, const atf_cg_options *opt)
{
    char err[ATF_ERRLEN] = "";
    int n = (int)atf_problem_nvars(p);
    atf_error e;
    atf_hooks none = {0};
    atf_result *plain = solve_hooks(p, opt, 0.0, 0, &none, &e, err);
    CHECK(plain && plain->info.status == ATF_STATUS_SOLVED && plain->info.iterations > 8,
          "%s: the plain solve (%s, %d steps)", what, err, plain ? plain->info.iterations : -1);
    static kept_states k;
    k = (kept_states){.fail_at = -1, .stop_at = -1};
    atf_hooks every = {.checkpoint = keep_state, .checkpoint_ctx = &k};
    atf_result *kept = solve_hooks(p, opt, 0.0, 0, &every, &e, err);
    CHECK(plain && kept && same_result(plain, kept, n) && k.count == plain->info.iterations,
          "%s: checkpoints changed the solve or their number (%d states, %d steps; %s)", what,
          k.count, plain ? plain->info.iterations : -1, err);
    for (int i = 0; plain && i < k.count && i < MAX_STATES; i++) {
        atf_hooks from = {.resume = &k.states[i]};
        atf_result *res = solve_hooks(p, opt, 0.0, 0, &from, &e, err);
        CHECK(res && same_result(plain, res, n), "%s: resumed at state %d of %d: %s (%d steps)",
              what, i, k.count, err, res ? res->info.iterations : -1);
        atf_result_free(res);
    }
    for (int j = 1; plain && j < k.count; j += k.count / 3 + 1) { /* Ctrl-C, then go on */
        volatile sig_atomic_t flag = 0;
        static kept_states stop;
        stop = (kept_states){.fail_at = -1, .stop_at = j, .stop = &flag};
        atf_hooks hooks = {.checkpoint = keep_state, .checkpoint_ctx = &stop, .interrupt = &flag};
        atf_result *cut = solve_hooks(p, opt, 0.0, 0, &hooks, &e, err);
        CHECK(cut && cut->info.status == ATF_STATUS_INTERRUPTED && stop.count == j + 2,
              "%s: stopped at state %d: %s, %d states", what, j,
              cut ? atf_status_name(cut->info.status) : err, stop.count);
        atf_hooks from = {.resume = &stop.states[stop.count - 1]};
        atf_result *res = stop.count == j + 2 ? solve_hooks(p, opt, 0.0, 0, &from, &e, err) : NULL;
        CHECK(res && same_result(plain, res, n), "%s: resumed after the stop at %d: %s", what,
              j, err);
        atf_result_free(cut), atf_result_free(res);
        kept_states_free(&stop);
    }
    if (plain && k.count > 2) { /* the step limit keeps the state it stopped at */
        static kept_states lim;
        lim = (kept_states){.fail_at = -1, .stop_at = -1};
        atf_hooks hooks = {.checkpoint = keep_state, .checkpoint_ctx = &lim,
                           .checkpoint_seconds = 1e9};
        atf_result *cut = solve_hooks(p, opt, 0.0, 2, &hooks, &e, err);
        atf_hooks from = {.resume = &lim.states[0]};
        atf_result *res = lim.count == 1 ? solve_hooks(p, opt, 0.0, 0, &from, &e, err) : NULL;
        CHECK(cut && cut->info.status == ATF_STATUS_MAX_ITERATIONS && lim.count == 1 && res &&
                  same_result(plain, res, n),
              "%s: the step limit: %d states kept, then %s", what, lim.count, err);
        atf_result_free(cut), atf_result_free(res);
        kept_states_free(&lim);
    }
    if (k.count > 0) {
        atf_hooks from = {.resume = &k.states[0]};
        atf_result *res = solve_hooks(p, opt, 1e-9, 0, &from, &e, err);
        CHECK(!res && e == ATF_E_INPUT && strstr(err, "another solve"),
              "%s: another tolerance's state: %d, %s", what, (int)e, err);
        atf_checkpoint damaged = k.states[0];
        damaged.len--;
        from.resume = &damaged;
        res = solve_hooks(p, opt, 0.0, 0, &from, &e, err);
        CHECK(!res && e == ATF_E_INPUT && strstr(err, "not an LSQR state"),
              "%s: a shortened state: %d, %s", what, (int)e, err);
        atf_cg_options craig = *opt;
        craig.krylov = ATF_CG_KRYLOV_CRAIG;
        from.resume = &k.states[0];
        res = solve_hooks(p, &craig, 0.0, 0, &from, &e, err);
        CHECK(!res && e == ATF_E_USAGE && strstr(err, "LSQR"), "%s: craig resumed: %d, %s",
              what, (int)e, err);
        atf_result_free(res);
    }
    static kept_states refuse;
    refuse = (kept_states){.fail_at = 3, .stop_at = -1};
    atf_hooks failing = {.checkpoint = keep_state, .checkpoint_ctx = &refuse};
    atf_result *res = solve_hooks(p, opt, 0.0, 0, &failing, &e, err);
    CHECK(!res && e == ATF_E_IO && strstr(err, "checkpoint at step 4"),
          "%s: a state the caller could not keep: %d, %s", what, (int)e, err);
    kept_states_free(&refuse), kept_states_free(&k);
    atf_result_free(plain), atf_result_free(kept);
}

static void test_checkpoints(void)
{
    const shape fac3[] = {{ATF_OP_FACTORED, 10, 6}, {ATF_OP_FACTORED, 6, 3}};
    atf_problem *p = make_problem(51, 20, 3, fac3, 2);
    checkpoint_case("checkpoints, no preconditioner", p, &PRECONDS[1]);
    checkpoint_case("checkpoints, nystrom-block rank 4", p, &PRECONDS[4]);
    atf_problem_free(p);
}

/* The certificate's inner solve ends once the certificate settles (cg.c, CERT_SETTLED),
 * long before 1e-8 when the NTK point is far from stationary under the blocks' penalties (sq):
 * the value stays within the Gram's exact one to 2e-3 and costs fewer steps than the main solve
 * (it ran to twice the main steps before: 800 against 748 on Fashion-MNIST, n = 2 000). Under
 * `fixed` the NTK point is stationary: the certificate keeps falling and must not stop high. */
static void test_certificate_settles(void)
{
    const shape fac[] = {{ATF_OP_FACTORED, 30, 12}, {ATF_OP_FACTORED, 12, 3}};
    atf_problem *p = make_problem(61, 120, 3, fac, 2);
    char err[ATF_ERRLEN];
    const atf_cg_options *none = &PRECONDS[1];
    for (int k = 0; k < 2; k++) {
        const char *pen = k ? "fixed" : "sq";
        CHECK(atf_problem_set_penalty(p, pen, err) == ATF_OK, "%s: %s", pen, err);
        atf_result *ref = solve(p, NULL, 0.0, 0, NULL, err);
        atf_result *r = solve(p, none, 0.0, 0, NULL, err);
        CHECK(ref && r && r->info.status == ATF_STATUS_SOLVED, "%s: %s", pen, err);
        if (ref && r) {
            int main_steps = r->info.iterations, cert_steps = r->info.inner_iterations - main_steps;
            CHECK(main_steps > 100, "%s: only %d main steps (the case needs a long solve)", pen,
                  main_steps);
            if (k == 0)
                CHECK(fabs(r->info.stationarity - ref->info.stationarity) <
                              2e-3 * ref->info.stationarity &&
                          cert_steps < main_steps,
                      "sq: certificate %.6e (Gram %.6e) after %d steps (main %d)",
                      r->info.stationarity, ref->info.stationarity, cert_steps, main_steps);
            else
                CHECK(r->info.stationarity < 1e-6 && ref->info.stationarity < 1e-6,
                      "fixed: certificate %.3e (Gram %.3e) after %d steps: the stationary point "
                      "must keep a small certificate", r->info.stationarity,
                      ref->info.stationarity, cert_steps);
        }
        atf_result_free(ref);
        atf_result_free(r);
    }
    atf_problem_free(p);
}

int main(void)
{
    test_against_gram();
    test_pivot_blocks();
    test_gram32();
    test_rfp_solve();
    test_admm_by_cg();
    test_admm_checkpoints();
    test_row_scales();
    test_rank_deficient();
    test_inconsistent();
    test_limits();
    test_reproducible();
    test_solver_reuse();
    test_auto_choice();
    test_baseline_fallback();
    test_checkpoints();
    test_certificate_settles();
    return atf_test_finish("test_baseline_cg");
}
