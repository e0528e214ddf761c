/* test_guards.c — no LAPACK routine of the solver ever receives NaN or Inf.
 *
 * dgesdd_work does not check its input; on a non-finite matrix it iterated for over 600 s
 * (`atf solve --loss squared:lambda=1e-308`), beyond any iteration limit. Checked here:
 *  - atf_sv_svd on a core holding NaN, +Inf or −Inf returns ATF_SV_SVD_NONFINITE at once (an
 *    alarm ends the test if it does not return), and a finite core still gets its SVD;
 *  - the subspace basis of a factor with NaN is refused with a message naming the factor;
 *  - ADMM from a warm start so large that its first projection overflows (the largest that is finite in the solver's units): the
 *    iterate turns non-finite inside the loop, and the answer must be status numerical_error
 *    with the feasible least-squares point, a finite certificate (never NaN) and a message —
 *    promptly, for a matrix block (prox through the SVD) as well as a vector one. The blocks are
 *    not reduced (P ≤ N, Q ≤ M, full rank), so the warm start enters unrotated. */
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atf_test.h"
#include "solver_internal.h"

/* Seconds any single check may take before the alarm kills the test (a hang in LAPACK). */
#define HANG_SECONDS 60

/* One factored block P × Q, N examples, C outputs, standard normal data. */
static atf_problem *factored(uint64_t seed, int N, int C, int P, int Q, const char *penalty)
{
    atf_test_rng rng;
    atf_test_rng_seed(&rng, seed);
    atf_problem *p = atf_problem_new(N, C, 1);
    free(p->r);
    p->r = atf_test_new_normal(&rng, (size_t)p->M);
    atf_block *b = &p->blocks[0];
    snprintf(b->name, sizeof b->name, "W1");
    b->rows = P, b->cols = Q, b->kind = ATF_OP_FACTORED;
    b->H = atf_test_new_normal(&rng, (size_t)N * (size_t)P);
    b->D = atf_test_new_normal(&rng, (size_t)p->M * (size_t)Q);
    char err[ATF_ERRLEN];
    if (atf_problem_set_penalty(p, penalty, err) != ATF_OK) {
        fprintf(stderr, "penalty %s: %s\n", penalty, err);
        exit(1);
    }
    return p;
}

static void test_svd_refuses_nonfinite(void)
{
    atf_problem *p = factored(3, 12, 2, 6, 5, "sq");
    atf_settings set = atf_settings_default();
    atf_solver *s = NULL;
    char err[ATF_ERRLEN] = "";
    CHECK(atf_solver_init(p, &set, NULL, &s, err) == ATF_OK, "init: %s", err);
    if (!s) {
        atf_problem_free(p);
        return;
    }
    atf_sv_var *v = &s->vars[0];
    CHECK(v->k > 1 && v->kind == ATF_SV_SPECTRAL, "the block is not a spectral matrix var");
    double *C = malloc(v->len * sizeof *C);
    static const double bad[] = {NAN, INFINITY, -INFINITY};
    for (int t = 0; t < 3; t++) {
        for (size_t i = 0; i < v->len; i++)
            C[i] = (double)(i % 7) - 3.0;
        C[v->len / 2] = bad[t];
        alarm(HANG_SECONDS);
        int info = atf_sv_svd(v, C);
        alarm(0);
        CHECK(info == ATF_SV_SVD_NONFINITE, "SVD of a core with %g: returned %d", bad[t], info);
    }
    for (size_t i = 0; i < v->len; i++)
        C[i] = (double)(i % 7) - 3.0;
    CHECK(atf_sv_svd(v, C) == 0 && isfinite(v->s[0]) && v->s[0] > 0.0,
          "SVD of a finite core failed");
    free(C);
    atf_solver_free(s);
    atf_problem_free(p);
}

static void test_basis_refuses_nonfinite(void)
{
    double X[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, NAN};
    int rank = 0;
    double *Qt = NULL;
    atf_sv_basis_rule rule;
    char err[ATF_ERRLEN] = "";
    for (int how = ATF_SV_BASIS_AUTO; how <= ATF_SV_BASIS_NO_SKIP; how++) {
        atf_error e = atf_sv_row_basis(X, 4, 3, (atf_sv_basis_how)how, &rank, &Qt, &rule,
                                       "block W1: H", err);
        CHECK(e == ATF_E_NUMERICAL && Qt == NULL, "basis of a factor with NaN: error %d", (int)e);
        CHECK(strstr(err, "block W1: H") && strstr(err, "non-finite"), "message '%s'", err);
    }
}

/* The warm start of every block: ±big in a fixed pattern. */
static atf_result *huge_warm_start(const atf_problem *p, double big)
{
    atf_result *w = atf_result_alloc(p);
    for (int l = 0; l < w->nblocks; l++)
        for (int j = 0; j < w->blocks[l].rows * w->blocks[l].cols; j++)
            w->blocks[l].B[j] = j % 3 ? big : -big;
    return w;
}

static int all_finite_blocks(const atf_result *r)
{
    for (int l = 0; l < r->nblocks; l++)
        for (int j = 0; j < r->blocks[l].rows * r->blocks[l].cols; j++)
            if (!isfinite(r->blocks[l].B[j]))
                return 0;
    return 1;
}

static void test_admm_diverged_iterate(int N, int C, int P, int Q, const char *what)
{
    atf_problem *p = factored(5, N, C, P, Q, "sq");
    atf_settings set = atf_settings_default();
    set.max_iter = 50;
    atf_result *res = NULL, *warm = NULL;
    char err[ATF_ERRLEN] = "";
    atf_error e = ATF_E_INPUT;
    /* the largest warm start that is still finite in the solver's units (2^−var_exp B) */
    for (double big = 8e307; e == ATF_E_INPUT && big > 1e300; big /= 2.0) {
        atf_result_free(warm);
        warm = huge_warm_start(p, big);
        atf_hooks hooks = {.warm = warm};
        alarm(HANG_SECONDS);
        e = atf_solve(p, &set, &hooks, &res, err);
        alarm(0);
    }
    CHECK(e == ATF_OK && res, "%s: %s", what, err);
    if (res) {
        CHECK(res->info.status == ATF_STATUS_NUMERICAL_ERROR, "%s: status %s (%s)", what,
              atf_status_name(res->info.status), err);
        CHECK(!isnan(res->info.stationarity), "%s: NaN certificate", what);
        CHECK(all_finite_blocks(res) && isfinite(res->info.objective) &&
                  res->info.constraint_residual < 1e-12,
              "%s: not the feasible least-squares point (residual %.3g)", what,
              res->info.constraint_residual);
        CHECK(strstr(err, "numerically") != NULL, "%s: message '%s'", what, err);
    }
    atf_result_free(res);
    atf_result_free(warm);
    atf_problem_free(p);
}

int main(void)
{
    test_svd_refuses_nonfinite();
    test_basis_refuses_nonfinite();
    test_admm_diverged_iterate(8, 2, 6, 5, "admm, matrix block 6 × 5, N = 8, C = 2");
    test_admm_diverged_iterate(6, 1, 6, 1, "admm, vector block 6 × 1, N = 6, C = 1");
    return atf_test_finish("test_guards");
}
