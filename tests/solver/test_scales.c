/* test_scales.c — units must not matter, and no method says `solved` for a wrong answer.
 *
 * One small problem with a factored, a dense and a sparse block, solved plain and with its data
 * multiplied by extreme factors (docs/record/solver.md §7):
 *  - all data (A and r) × 1e-150, 1e150, 1e-300, 1e300 (and × 2^-1000, below the normal range), and
 *    half of the rows (A and r) × 1e-12: the feasible set is unchanged, so every method must
 *    return the plain answer — same status, same B, same objective, a small constraint residual
 *    and certificate (the half-rows case was a false `infeasible`: rows 1e-12 smaller fell below
 *    the Gram's rank cutoff);
 *  - A alone or r alone × 1e-150, 1e-300, 1e300, and r denormal (× 1e-310): the solution moves.
 *    For the homogeneous cases it moves exactly — the NTK baseline (linear in r) and the
 *    `nuclear` penalty (ADMM on matrix blocks, and the LP on the diagonal structure) give
 *    B × f_r / f_A; for `sq` and `abs` (ADMM, and IRLS for `sq`) with small solutions
 *    ω̃(v) = v² + o(v²) makes the answer the baseline's. Everywhere: never infeasible, finite numbers, constraint residual at
 *    rounding level; `solved` only with a certificate;
 *  - beyond what doubles can represent in any units (`abs` with r × 1e300: ω̃'(σ)/σ ≈ 1e-400)
 *    the status must be honest (numerical_error with a message, not `solved`);
 *  - a penalty scale far above the solution (γ = 1e300) with r × 1e-150, 1e-300 and a denormal
 *    r × 1e-310: B = f_r × the plain B, `solved`, residual at rounding level (this was B = 0 with
 *    residual 1.0, and a false `infeasible`); far below it (γ = 1e-300, r × 1e300) a one-line
 *    error;
 *  - r = 0 from a warm start × 1, 1e-150, 1e150: B = 0 in the same iterations;
 *  - the LP's verdict is checked: on nearly dependent rows whose r the projection accepts as
 *    consistent (relative least-squares residual ~1e-9) GLPK finds no feasible point; that is a
 *    simplex failure, reported as numerical_error with a message, never `infeasible` or
 *    `solved`. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf_solver.h"
#include "atf_test.h"

enum { N = 6, C = 2, M = N * C };

/* Blocks: W1 factored 5 × 4, Jd dense 2 × 3, Sp sparse 3 × 2 (about half the entries). */
static atf_problem *base_problem(uint64_t seed, const char *penalty)
{
    atf_test_rng rng;
    atf_test_rng_seed(&rng, seed);
    atf_problem *p = atf_problem_new(N, C, 3);
    free(p->r);
    p->r = atf_test_new_normal(&rng, M);
    static const char *names[3] = {"W1", "Jd", "Sp"};
    static const int shape[3][2] = {{5, 4}, {2, 3}, {3, 2}};
    for (int l = 0; l < 3; l++) {
        atf_block *b = &p->blocks[l];
        snprintf(b->name, sizeof b->name, "%s", names[l]);
        b->rows = shape[l][0], b->cols = shape[l][1];
        int len = b->rows * b->cols;
        if (l == 0) {
            b->kind = ATF_OP_FACTORED;
            b->H = atf_test_new_normal(&rng, (size_t)N * (size_t)b->rows);
            b->D = atf_test_new_normal(&rng, (size_t)M * (size_t)b->cols);
        } else if (l == 1) {
            b->kind = ATF_OP_DENSE;
            b->J = atf_test_new_normal(&rng, (size_t)M * (size_t)len);
        } else {
            b->kind = ATF_OP_SPARSE;
            b->indptr = calloc(M + 1, sizeof *b->indptr);
            b->indices = malloc((size_t)M * (size_t)len * sizeof *b->indices);
            b->data = malloc((size_t)M * (size_t)len * sizeof *b->data);
            for (int m = 0; m < M; m++) {
                b->indptr[m + 1] = b->indptr[m];
                for (int j = 0; j < len; j++)
                    if (atf_test_uniform(&rng) < 0.5) {
                        b->indices[b->indptr[m + 1]] = j;
                        b->data[b->indptr[m + 1]++] = atf_test_symmetric(&rng);
                    }
            }
            b->nnz = b->indptr[M];
        }
    }
    char err[ATF_ERRLEN];
    if (atf_problem_set_penalty(p, penalty, err) != ATF_OK) {
        fprintf(stderr, "penalty %s: %s\n", penalty, err);
        exit(1);
    }
    return p;
}

/* A × fa (through D, J and the CSR values) and r × fr, in place. */
static void scale_problem(atf_problem *p, double fa, double fr)
{
    for (int m = 0; m < M; m++)
        p->r[m] *= fr;
    for (int l = 0; l < p->nblocks; l++) {
        atf_block *b = &p->blocks[l];
        size_t n = b->kind == ATF_OP_FACTORED ? (size_t)M * (size_t)b->cols
                   : b->kind == ATF_OP_DENSE  ? (size_t)M * (size_t)b->rows * (size_t)b->cols
                                              : (size_t)b->nnz;
        double *x = b->kind == ATF_OP_FACTORED ? b->D : b->kind == ATF_OP_DENSE ? b->J : b->data;
        for (size_t i = 0; i < n; i++)
            x[i] *= fa;
    }
}

/* Rows m < M/2 of A and r × f (a row scaling: the feasible set stays). */
static void scale_half_rows(atf_problem *p, double f)
{
    for (int m = 0; m < M / 2; m++) {
        p->r[m] *= f;
        for (int l = 0; l < p->nblocks; l++) {
            atf_block *b = &p->blocks[l];
            if (b->kind == ATF_OP_FACTORED)
                for (int j = 0; j < b->cols; j++)
                    b->D[(size_t)m * (size_t)b->cols + (size_t)j] *= f;
            else if (b->kind == ATF_OP_DENSE)
                for (int j = 0; j < b->rows * b->cols; j++)
                    b->J[(size_t)m * (size_t)(b->rows * b->cols) + (size_t)j] *= f;
            else
                for (int64_t k = b->indptr[m]; k < b->indptr[m + 1]; k++)
                    b->data[k] *= f;
        }
    }
}

typedef struct {
    const char *name, *penalty;
    atf_method method;
    atf_global_structure structure;
    int homogeneous; /* B scales exactly with f_r / f_A */
} method_case;

static const method_case METHODS[] = {
    {"admm sq", "sq", ATF_METHOD_ADMM, ATF_GLOBAL_LAYER, 0},
    {"admm abs", "abs", ATF_METHOD_ADMM, ATF_GLOBAL_LAYER, 0},
    {"admm nuclear", "nuclear", ATF_METHOD_ADMM, ATF_GLOBAL_LAYER, 1},
    {"lp", "nuclear", ATF_METHOD_LP, ATF_GLOBAL_DIAGONAL, 1},
    {"baseline", "sq", ATF_METHOD_BASELINE, ATF_GLOBAL_LAYER, 1}, /* index BASELINE: the reference */
    {"irls sq", "sq", ATF_METHOD_IRLS, ATF_GLOBAL_LAYER, 0},
    {"cg", "sq", ATF_METHOD_CG, ATF_GLOBAL_LAYER, 1}, /* the baseline by CG, to 1e-13 */
    {"alm sq", "sq", ATF_METHOD_ALM, ATF_GLOBAL_LAYER, 0},
    {"alm nuclear", "nuclear", ATF_METHOD_ALM, ATF_GLOBAL_LAYER, 1},
};
enum { NMETHODS = sizeof METHODS / sizeof METHODS[0], BASELINE = 4 };

/* Solve the base problem with A × fa, r × fr, and (half_rows ≠ 1) the first half of the rows
 * × half_rows. */
static atf_error solve_rows(const method_case *mc, double fa, double fr, double half_rows,
                            atf_result **out, char *err)
{
    atf_problem *p = base_problem(7, mc->penalty);
    scale_problem(p, fa, fr);
    if (half_rows != 1.0)
        scale_half_rows(p, half_rows);
    atf_settings set = atf_settings_default();
    set.method = mc->method;
    set.structure = mc->structure;
    set.max_iter = 3000;
    if (mc->method == ATF_METHOD_CG)
        set.eps_rel = 1e-13; /* the comparisons below are at rounding level */
    atf_error e = atf_solve(p, &set, NULL, out, err);
    atf_problem_free(p);
    return e;
}

static atf_error solve(const method_case *mc, double fa, double fr, atf_result **out, char *err)
{
    return solve_rows(mc, fa, fr, 1.0, out, err);
}

/* max_j |B_j − f·B0_j| / max_j |f·B0_j|, f·B0 formed entry by entry (f may be tiny or huge). */
static double scaled_distance(const atf_result *a, const atf_result *ref, double f)
{
    double num = 0.0, den = 0.0;
    for (int l = 0; l < a->nblocks; l++)
        for (int j = 0; j < a->blocks[l].rows * a->blocks[l].cols; j++) {
            double want = f * ref->blocks[l].B[j];
            num = fmax(num, fabs(a->blocks[l].B[j] - want));
            den = fmax(den, fabs(want));
        }
    return den > 0.0 ? num / den : num;
}

static int all_finite(const atf_result *a)
{
    for (int l = 0; l < a->nblocks; l++)
        for (int j = 0; j < a->blocks[l].rows * a->blocks[l].cols; j++)
            if (!isfinite(a->blocks[l].B[j]))
                return 0;
    return isfinite(a->info.constraint_residual) && !isnan(a->info.objective);
}

/* Tolerance on B relative to the reference: tight for the direct methods, the ADMM stopping
 * tolerance otherwise (the scaled data differ from the plain ones by rounding). */
static double b_tolerance(const method_case *mc)
{
    return mc->method == ATF_METHOD_ADMM || mc->method == ATF_METHOD_IRLS ||
                   mc->method == ATF_METHOD_ALM
               ? 1e-5
               : 1e-9;
}

/* The relative constraint residual an answer must reach: rounding for the methods that project
 * or factor, the augmented Lagrangian's stopping test (ALM_FEAS, 1e-9) otherwise. */
static double residual_tolerance(const method_case *mc, double fr)
{
    if (mc->method == ATF_METHOD_ALM)
        return 1e-9;
    return fr < DBL_MIN ? 1e-11 : 1e-12; /* a denormal r carries only ~13 digits itself */
}

static void test_all_data(atf_result *const plain[NMETHODS])
{
    /* the last entry: half of the rows × 1e-12 (factor 1 for the rest) */
    static const double factors[] = {1e-150, 1e150, 1e-300, 1e300, 0x1p-1000, 1.0};
    enum { NF = sizeof factors / sizeof factors[0] };
    for (int k = 0; k < NF; k++)
        for (int i = 0; i < NMETHODS; i++) {
            const method_case *mc = &METHODS[i];
            atf_result *res = NULL;
            char err[ATF_ERRLEN] = "";
            atf_error e = solve_rows(mc, factors[k], factors[k], k == NF - 1 ? 1e-12 : 1.0, &res,
                                     err);
            CHECK(e == ATF_OK && res, "%s, all data × %g: %s", mc->name, factors[k], err);
            if (!res)
                continue;
            CHECK(res->info.status == plain[i]->info.status, "%s, all data × %g: status %s, plain %s",
                  mc->name, factors[k], atf_status_name(res->info.status),
                  atf_status_name(plain[i]->info.status));
            CHECK(scaled_distance(res, plain[i], 1.0) < b_tolerance(mc),
                  "%s, all data × %g: B differs from the plain B by %.3g", mc->name, factors[k],
                  scaled_distance(res, plain[i], 1.0));
            CHECK(rel_diff(res->info.objective, plain[i]->info.objective) < 10 * b_tolerance(mc),
                  "%s, all data × %g: objective %.12g, plain %.12g", mc->name, factors[k],
                  res->info.objective, plain[i]->info.objective);
            CHECK(res->info.constraint_residual < residual_tolerance(mc, 1.0),
                  "%s, all data × %g: residual %.3g",
                  mc->name, factors[k], res->info.constraint_residual);
            CHECK(res->info.stationarity <= fmax(1e-6, 10 * plain[i]->info.stationarity),
                  "%s, all data × %g: stationarity %.3g, plain %.3g", mc->name, factors[k],
                  res->info.stationarity, plain[i]->info.stationarity);
            atf_result_free(res);
        }
}

/* A alone or r alone scaled: homogeneous cases move exactly by f_r / f_A; sq and abs with a
 * small solution are the baseline's; every answer is feasible, finite and certified. */
static void test_one_side(atf_result *const plain[NMETHODS])
{
    static const struct {
        double fa, fr, ratio; /* ratio = fr / fa, written out: it may not be representable as a
                                 quotient computed in double (1e-310 is denormal) */
        int small;            /* the solution is tiny: ω̃(v) = v² to machine precision */
    } cases[] = {
        {1e-150, 1.0, 1e150, 0}, {1.0, 1e-150, 1e-150, 1}, {1e-300, 1.0, 1e300, 0},
        {1.0, 1e-300, 1e-300, 1}, {1e300, 1.0, 1e-300, 1},  {1.0, 1e-310, 1e-310, 1},
    };
    const atf_result *baseline = plain[BASELINE];
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        for (int i = 0; i < NMETHODS; i++) {
            const method_case *mc = &METHODS[i];
            if (!mc->homogeneous && !cases[k].small)
                continue; /* the deep tail: test_tail */
            atf_result *res = NULL;
            char err[ATF_ERRLEN] = "";
            atf_error e = solve(mc, cases[k].fa, cases[k].fr, &res, err);
            CHECK(e == ATF_OK && res, "%s, A × %g, r × %g: %s", mc->name, cases[k].fa,
                  cases[k].fr, err);
            if (!res)
                continue;
            const atf_result *ref = mc->homogeneous ? plain[i] : baseline;
            CHECK(res->info.status == ref->info.status, "%s, A × %g, r × %g: status %s", mc->name,
                  cases[k].fa, cases[k].fr, atf_status_name(res->info.status));
            CHECK(scaled_distance(res, ref, cases[k].ratio) < b_tolerance(mc),
                  "%s, A × %g, r × %g: B differs from the scaled reference by %.3g", mc->name,
                  cases[k].fa, cases[k].fr, scaled_distance(res, ref, cases[k].ratio));
            CHECK(res->info.constraint_residual < residual_tolerance(mc, cases[k].fr),
                  "%s, A × %g, r × %g: residual %.3g", mc->name, cases[k].fa, cases[k].fr,
                  res->info.constraint_residual);
            CHECK(all_finite(res), "%s, A × %g, r × %g: non-finite numbers", mc->name,
                  cases[k].fa, cases[k].fr);
            atf_result_free(res);
        }
}

/* sq and abs far out in their tails (σ/√γ ≈ 1e150): a feasible, finite answer and an honest
 * status; `solved` only with a small certificate. Beyond the range of doubles (abs, r × 1e300:
 * the curvature ω̃'(σ)/σ ≈ 1e-400 in any units) the answer is numerical_error with a message. */
static void test_tail(void)
{
    static const struct {
        int method; /* index into METHODS */
        double fa, fr;
    } cases[] = {{0, 1.0, 1e150}, {0, 1e-150, 1.0}, {1, 1.0, 1e150}, {1, 1e-150, 1.0}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const method_case *mc = &METHODS[cases[k].method];
        atf_result *res = NULL;
        char err[ATF_ERRLEN] = "";
        atf_error e = solve(mc, cases[k].fa, cases[k].fr, &res, err);
        CHECK(e == ATF_OK && res && (res->info.status == ATF_STATUS_SOLVED ||
                                     res->info.status == ATF_STATUS_MAX_ITERATIONS),
              "%s, A × %g, r × %g: %s", mc->name,
              cases[k].fa, cases[k].fr, err);
        if (!res)
            continue;
        CHECK(all_finite(res) && res->info.constraint_residual < 1e-12,
              "%s, A × %g, r × %g: residual %.3g", mc->name, cases[k].fa, cases[k].fr,
              res->info.constraint_residual);
        CHECK(res->info.status != ATF_STATUS_SOLVED || res->info.stationarity < 1e-4,
              "%s, A × %g, r × %g: solved with stationarity %.3g", mc->name, cases[k].fa,
              cases[k].fr, res->info.stationarity);
        atf_result_free(res);
    }
    atf_result *res = NULL;
    char err[ATF_ERRLEN] = "";
    atf_error e = solve(&METHODS[1], 1.0, 1e300, &res, err);
    CHECK(e == ATF_OK && res && res->info.status == ATF_STATUS_NUMERICAL_ERROR,
          "abs, r × 1e300: error %d, status %s", (int)e,
          res ? atf_status_name(res->info.status) : "none");
    CHECK(strstr(err, "curvature") != NULL, "abs, r × 1e300: message '%s'", err);
    CHECK(res && all_finite(res) && res->info.constraint_residual < 1e-12,
          "abs, r × 1e300: the returned point is not the feasible least-squares point");
    atf_result_free(res);
}

/* A penalty scale far above the solution: γ = 1e300, so the plain solution (B ~ 1) already sits
 * at 1e-150·√γ, where ω̃(v) = v² to machine precision, and with r × 1e-300 or a denormal r × 1e-310
 * it sits 1e-450 … 1e-460·√γ deep. The problem is then homogeneous: B = f_r × the plain B. The
 * variable unit that keeps γ/c² representable (c ≥ √γ·2^−450) made r/c underflow: r × 1e-310 was
 * `solved` at B = 0 with constraint residual 1.0 (r/c = 0 looks like r = 0), and r × 1e-300 a
 * false `infeasible` (r/c denormal, its lost digits read as an inconsistency). */
static void test_deep_quadratic(void)
{
    static const method_case cases[] = {
        {"admm sq:scale=1e300", "sq:scale=1e300", ATF_METHOD_ADMM, ATF_GLOBAL_LAYER, 0},
        {"admm abs:scale=1e300", "abs:scale=1e300", ATF_METHOD_ADMM, ATF_GLOBAL_LAYER, 0},
        {"admm sq+sq:scale=1e300", "sq:scale=1e300+sq:scale=1e300", ATF_METHOD_ADMM,
         ATF_GLOBAL_LAYER, 0},
        {"baseline sq:scale=1e300", "sq:scale=1e300", ATF_METHOD_BASELINE, ATF_GLOBAL_LAYER, 0},
        {"irls sq:scale=1e300", "sq:scale=1e300", ATF_METHOD_IRLS, ATF_GLOBAL_LAYER, 0},
    };
    static const double fr[] = {1e-150, 1e-300, 1e-310};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const method_case *mc = &cases[i];
        atf_result *plain = NULL;
        char err[ATF_ERRLEN] = "";
        CHECK(solve(mc, 1.0, 1.0, &plain, err) == ATF_OK && plain &&
                  plain->info.status == ATF_STATUS_SOLVED,
              "%s, plain: %s", mc->name, err);
        if (!plain)
            continue;
        for (size_t k = 0; k < sizeof fr / sizeof fr[0]; k++) {
            atf_result *res = NULL;
            err[0] = '\0';
            atf_error e = solve(mc, 1.0, fr[k], &res, err);
            CHECK(e == ATF_OK && res && res->info.status == ATF_STATUS_SOLVED, "%s, r × %g: %s",
                  mc->name, fr[k], err);
            if (!res)
                continue;
            CHECK(scaled_distance(res, plain, fr[k]) < 1e-9,
                  "%s, r × %g: B differs from the plain B × f_r by %.3g", mc->name, fr[k],
                  scaled_distance(res, plain, fr[k]));
            CHECK(res->info.constraint_residual < (fr[k] < DBL_MIN ? 1e-11 : 1e-12) && all_finite(res),
                  "%s, r × %g: residual %.3g", mc->name, fr[k], res->info.constraint_residual);
            atf_result_free(res);
        }
        atf_result_free(plain);
    }
}

/* The other end has no such way out: r × 1e300 with γ = 1e-300 puts the solution 1e450·√γ
 * deep in the tail, where no units hold both B and γ/c² (the tail of ω̃ is not one power law
 * for every family, so γ cannot be capped there). A one-line error instead of "the
 * least-squares point is not finite". */
static void test_tail_beyond_range(void)
{
    static const method_case mc = {"admm sq:scale=1e-300", "sq:scale=1e-300", ATF_METHOD_ADMM,
                                   ATF_GLOBAL_LAYER, 0};
    atf_result *res = NULL;
    char err[ATF_ERRLEN] = "";
    atf_error e = solve(&mc, 1.0, 1e300, &res, err);
    CHECK(e == ATF_E_NUMERICAL && !res, "%s, r × 1e300: error %d", mc.name, (int)e);
    CHECK(strstr(err, "beyond the range of doubles") != NULL, "%s, r × 1e300: message '%s'",
          mc.name, err);
    atf_result_free(res);
}

/* r = 0 from a warm start B_w × f under `nuclear` (homogeneous: the iterates scale with f): the
 * answer is B = 0, reached in the same iterations for every f. With r = 0 the least-squares
 * point is 0, so neither r nor B0 gives a unit: ε_abs multiplied the absolute √n (from
 * B_w × 1e-150 ADMM stopped at once, far from 0 relatively), and from B_w × 1e150 the absolute
 * constraint residual (~1e134 of rounding) failed the final check. The unit is now the warm
 * start's. */
static void test_zero_r_warm(const atf_result *plain_nuclear)
{
    static const double f[] = {1.0, 1e-150, 1e150};
    int iterations[3] = {0};
    for (int k = 0; k < 3; k++) {
        atf_problem *p = base_problem(7, "nuclear");
        scale_problem(p, 1.0, 0.0);
        atf_result *warm = atf_result_alloc(p);
        for (int l = 0; l < warm->nblocks; l++)
            for (int j = 0; j < warm->blocks[l].rows * warm->blocks[l].cols; j++)
                warm->blocks[l].B[j] = f[k] * plain_nuclear->blocks[l].B[j];
        atf_settings set = atf_settings_default();
        atf_hooks hooks = {.warm = warm};
        atf_result *res = NULL;
        char err[ATF_ERRLEN] = "";
        atf_error e = atf_solve(p, &set, &hooks, &res, err);
        CHECK(e == ATF_OK && res && res->info.status == ATF_STATUS_SOLVED, "r = 0, warm × %g: %s",
              f[k], err);
        if (res) {
            iterations[k] = res->info.iterations;
            /* relative to the start: B ≈ 0 to the stopping tolerance */
            CHECK(scaled_distance(res, plain_nuclear, 0.0) < 1e-5 * f[k] && all_finite(res),
                  "r = 0, warm × %g: B not 0 (max entry %.3g)", f[k],
                  scaled_distance(res, plain_nuclear, 0.0));
            CHECK(iterations[k] == iterations[0], "r = 0, warm × %g: %d iterations, %d at f = 1",
                  f[k], iterations[k], iterations[0]);
        }
        atf_result_free(res);
        atf_result_free(warm);
        atf_problem_free(p);
    }
}

/* Row 3 = row 2 + 1e-9 noise, r_3 = r_2 + 1e-9: consistent to the projection, not to GLPK. */
static void test_lp_verdict_checked(void)
{
    for (uint64_t seed = 1; seed <= 3; seed++) {
        atf_test_rng rng;
        atf_test_rng_seed(&rng, seed);
        atf_problem *p = atf_problem_new(3, 1, 1);
        atf_block *b = &p->blocks[0];
        snprintf(b->name, sizeof b->name, "Jd");
        b->rows = 2, b->cols = 2, b->kind = ATF_OP_DENSE, b->structure = ATF_STRUCT_DIAGONAL;
        b->J = atf_test_new_normal(&rng, 12);
        for (int j = 0; j < 4; j++)
            b->J[8 + j] = b->J[4 + j] + 1e-9 * atf_test_symmetric(&rng);
        for (int m = 0; m < 3; m++)
            p->r[m] = atf_test_symmetric(&rng);
        p->r[2] = p->r[1] + 1e-9;
        char err[ATF_ERRLEN] = "";
        CHECK(atf_problem_set_penalty(p, "nuclear", err) == ATF_OK, "%s", err);
        atf_settings set = atf_settings_default();
        set.method = ATF_METHOD_LP;
        set.structure = ATF_GLOBAL_DIAGONAL;
        atf_result *res = NULL;
        atf_error e = atf_solve(p, &set, NULL, &res, err);
        CHECK(e == ATF_OK && res && res->info.status == ATF_STATUS_NUMERICAL_ERROR,
              "seed %d: error %d, status %s (%s)", (int)seed, (int)e,
              res ? atf_status_name(res->info.status) : "none", err);
        CHECK(strstr(err, "GLPK found no feasible point") != NULL, "seed %d: message '%s'",
              (int)seed, err);
        CHECK(res && all_finite(res) && res->info.constraint_residual < 1e-6,
              "seed %d: the least-squares point is not returned", (int)seed);
        atf_result_free(res);
        atf_problem_free(p);
    }
}

int main(void)
{
    atf_result *plain[NMETHODS] = {0};
    for (int i = 0; i < NMETHODS; i++) {
        char err[ATF_ERRLEN] = "";
        atf_error e = solve(&METHODS[i], 1.0, 1.0, &plain[i], err);
        CHECK(e == ATF_OK && plain[i] && plain[i]->info.status == ATF_STATUS_SOLVED,
              "%s, plain: %s", METHODS[i].name, err);
        if (!plain[i])
            return atf_test_finish("test_scales");
    }
    test_all_data(plain);
    test_one_side(plain);
    test_tail();
    test_deep_quadratic();
    test_tail_beyond_range();
    test_zero_r_warm(plain[2]);
    test_lp_verdict_checked();
    for (int i = 0; i < NMETHODS; i++)
        atf_result_free(plain[i]);
    return atf_test_finish("test_scales");
}
