/* test_linsys.c — the linear systems with A Aᵀ behind one interface (solver/linsys/) and the one
 * chooser (atf_linsys_choose):
 *
 *  - every backend answers the same systems: a direct solve's λ reproduces b to rounding on a
 *    full-rank Gram (cholesky, cholmod), the pseudo-inverse's on a rank-deficient one (eigen),
 *    and PCG's to its tolerance, warm started or not; a non-finite b gives λ = NaN;
 *  - the direct candidates come in order: cholmod first for all-sparse operators only;
 *  - a solve names the backend that ran (atf_info.linsys): cholesky, eigen, cholmod, pcg, ""
 *    for the matrix-free methods; admm answers the same by every backend (to the projection's
 *    tolerance by PCG);
 *  - the chooser's rule: the Gram where it fits memory_fraction of the memory (for one solve
 *    up to gram_max_rows rows), PCG, or none (auto takes alm), and the settings that force it;
 *  - settings refused with a message: linsys and precond outside their enums, memory_fraction
 *    outside (0, 1], gram_max_rows < 0, the Gram baseline by PCG, cg by a factorisation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linsys.h"
#include "solver_fixtures.h"

/* A solver set up for admm on p with these systems (NULL on failure, said). */
static atf_solver *admm_solver(const atf_problem *p, atf_linsys_kind linsys, char *err)
{
    atf_settings set = atf_settings_default();
    set.method = ATF_METHOD_ADMM;
    set.linsys = linsys;
    atf_solver *s = NULL;
    atf_error e = atf_solver_init(p, &set, NULL, &s, err);
    CHECK(e == ATF_OK && s, "admm by %s: %s", atf_linsys_kind_name(linsys), err);
    return s;
}

/* ‖A'A'ᵀλ − b‖ / ‖b‖ on the solver's work operators. */
static double system_residual(atf_solver *s, const double *lambda, const double *b)
{
    int M = s->work.M;
    double *x = calloc(s->n ? s->n : 1, sizeof *x), *y = calloc((size_t)M, sizeof *y);
    atf_sv_adjoint(s, lambda, x);
    atf_sv_apply(s, x, y);
    double num = 0.0, den = 0.0;
    for (int m = 0; m < M; m++)
        num += (y[m] - b[m]) * (y[m] - b[m]), den += b[m] * b[m];
    free(x), free(y);
    return sqrt(num / den);
}

/* b = A'v for a random v: consistent by construction. */
static double *consistent_rhs(atf_solver *s, uint64_t seed)
{
    atf_test_rng rng;
    atf_test_rng_seed(&rng, seed);
    double *v = atf_test_new_normal(&rng, s->n), *b = calloc((size_t)s->work.M, sizeof *b);
    atf_sv_apply(s, v, b);
    free(v);
    return b;
}

/* Each backend opened by hand on the same problem solves the same consistent systems. */
static void test_backends_solve(void)
{
    const int shapes[2][2] = {{6, 5}, {4, 3}};
    atf_problem *p = factored(31, 8, 2, 2, shapes, "sq", 0); /* M = 16 < n = 42: full rank */
    char err[ATF_ERRLEN] = "";
    atf_solver *s = admm_solver(p, ATF_LINSYS_DIRECT, err);
    if (!s) {
        atf_problem_free(p);
        return;
    }
    int M = s->work.M;
    double *b = consistent_rhs(s, 5), *lam = calloc((size_t)M, sizeof *lam);
    const atf_linsys_backend *all[] = {&atf_linsys_cholesky, &atf_linsys_eigen, &atf_linsys_pcg};
    atf_settings set = atf_settings_default();
    set.precond = ATF_PRECOND_JACOBI;
    atf_linsys_params par = atf_linsys_params_of(&set);
    for (int k = 0; k < 3; k++) {
        atf_linsys *ls = NULL;
        atf_error e = atf_linsys_open(s, all[k], &par, &ls, err);
        CHECK(e == ATF_OK && ls && ls->usable, "%s: open: %s", all[k]->name, err);
        if (!ls)
            continue;
        atf_linsys_solve(ls, b, NULL, 0.0, lam);
        double res = system_residual(s, lam, b);
        double tol = all[k]->iterative ? 1e-7 : 1e-10;
        CHECK(res < tol, "%s: relative residual %.3e", all[k]->name, res);
        CHECK(!strcmp(ls->name, all[k]->name) && (ls->rank == M || all[k]->iterative),
              "%s: name %s, rank %d of %d", all[k]->name, ls->name, ls->rank, M);
        if (all[k]->iterative) { /* from the answer itself: at once, the same λ */
            double *again = calloc((size_t)M, sizeof *again);
            atf_linsys_solve(ls, b, lam, 0.0, again);
            CHECK(system_residual(s, again, b) < 1e-7, "pcg from a warm start");
            free(again);
        }
        b[0] = NAN;
        atf_linsys_solve(ls, b, NULL, 0.0, lam);
        CHECK(isnan(lam[0]) && isnan(lam[M - 1]), "%s: a non-finite b gives NaN", all[k]->name);
        free(b);
        b = consistent_rhs(s, 5);
        atf_linsys_free(ls);
    }
    int count = 0;
    const atf_linsys_backend *const *cand = atf_linsys_direct_candidates(s, &count);
    CHECK(count == 2 && cand[0] == &atf_linsys_cholesky && cand[1] == &atf_linsys_eigen,
          "factored blocks: the direct candidates are cholesky, eigen (%d)", count);
    free(b), free(lam);
    atf_solver_free(s);
    atf_problem_free(p);
}

/* One admm solve of p with these systems: the result (NULL on failure). */
static atf_result *admm_by(const atf_problem *p, atf_linsys_kind linsys, char *err)
{
    atf_settings set = atf_settings_default();
    set.method = ATF_METHOD_ADMM, set.linsys = linsys;
    atf_result *res = NULL;
    atf_error e = atf_solve(p, &set, NULL, &res, err);
    CHECK(e == ATF_OK && res && res->info.status == ATF_STATUS_SOLVED, "admm by %s: %s %s",
          atf_linsys_kind_name(linsys), atf_error_name(e), err);
    return res;
}

/* The result names the backend; the answer does not depend on it. */
static void test_backend_named(void)
{
    char err[ATF_ERRLEN] = "";
    const int shapes[2][2] = {{6, 5}, {4, 3}};
    atf_problem *p = factored(41, 8, 2, 2, shapes, "zsq:scale=0.5", 0);
    atf_result *direct = admm_by(p, ATF_LINSYS_AUTO, err);
    atf_result *pcg = admm_by(p, ATF_LINSYS_PCG, err);
    if (direct && pcg) {
        int n = 42;
        double *a = stack_result(direct, n), *b = stack_result(pcg, n);
        CHECK(!strcmp(direct->info.linsys, "cholesky") && !strcmp(pcg->info.linsys, "pcg") &&
                  strstr(pcg->info.method_note, "projection by PCG"),
              "linsys %s and %s; note '%s'", direct->info.linsys, pcg->info.linsys,
              pcg->info.method_note);
        CHECK(rel_dist(b, a, (size_t)n) < 1e-5, "admm by cholesky and by pcg: %.3e apart",
              rel_dist(b, a, (size_t)n));
        free(a), free(b);
    }
    atf_result_free(direct), atf_result_free(pcg);
    /* all-sparse blocks: cholmod first */
    make_dense(p, 0, 1), make_dense(p, 1, 1);
    atf_result *sparse = admm_by(p, ATF_LINSYS_DIRECT, err);
    CHECK(sparse && !strcmp(sparse->info.linsys, "cholmod"), "sparse blocks: linsys %s",
          sparse ? sparse->info.linsys : "-");
    atf_result_free(sparse);
    atf_problem_free(p);
    /* a rank-deficient Gram (two examples the same): the eigendecomposition */
    p = factored(43, 8, 1, 1, (const int[][2]){{4, 3}}, "sq", 0); /* M = 8 rows, rank ≤ 8 */
    memcpy(p->blocks[0].H + 4, p->blocks[0].H, 4 * sizeof(double));
    memcpy(p->blocks[0].D + 3, p->blocks[0].D, 3 * sizeof(double));
    p->r[1] = p->r[0];
    atf_result *rankdef = admm_by(p, ATF_LINSYS_AUTO, err);
    CHECK(rankdef && !strcmp(rankdef->info.linsys, "eigen"), "rank-deficient: linsys %s",
          rankdef ? rankdef->info.linsys : "-");
    atf_result_free(rankdef);
    /* the matrix-free methods solve none */
    atf_settings set = atf_settings_default();
    set.loss = (atf_loss){ATF_LOSS_SQUARED, 1.0};
    atf_result *res = NULL;
    CHECK(atf_solve(p, &set, NULL, &res, err) == ATF_OK && res && res->info.linsys[0] == '\0',
          "newton: linsys '%s' %s", res ? res->info.linsys : "-", err);
    atf_result_free(res);
    atf_problem_free(p);
}

/* The chooser's rule, with its thresholds as settings. */
static void test_chooser(void)
{
    const int shapes[1][2] = {{30, 12}};
    atf_problem *p = factored(51, 30, 2, 1, shapes, "sq", 0); /* M = 60 rows, 360 unknowns */
    atf_settings set = atf_settings_default();
    char why[256] = "";
    CHECK(atf_linsys_choose(p, NULL, &set, 0, why, sizeof why) == ATF_LS_PLAN_DIRECT &&
              strstr(why, "M = 60"),
          "one solve, M = 60: '%s'", why);
    set.gram_max_rows = 50;
    CHECK(atf_linsys_choose(p, NULL, &set, 0, why, sizeof why) == ATF_LS_PLAN_PCG &&
              strstr(why, "M = 60 > 50"),
          "one solve above gram_max_rows: '%s'", why);
    CHECK(atf_linsys_choose(p, NULL, &set, 1, why, sizeof why) == ATF_LS_PLAN_DIRECT,
          "repeated solves ignore gram_max_rows: '%s'", why);
    set.gram_max_rows = 0;
    CHECK(atf_linsys_choose(p, NULL, &set, 0, why, sizeof why) == ATF_LS_PLAN_DIRECT,
          "gram_max_rows 0: no bound: '%s'", why);
    set.memory_fraction = 1e-12; /* nothing fits */
    CHECK(atf_linsys_choose(p, NULL, &set, 1, why, sizeof why) == ATF_LS_PLAN_NONE &&
              strstr(why, "GiB"),
          "repeated, nothing fits: '%s'", why);
    CHECK(atf_linsys_choose(p, NULL, &set, 0, why, sizeof why) == ATF_LS_PLAN_PCG,
          "one solve, nothing fits: cg: '%s'", why);
    set.linsys = ATF_LINSYS_DIRECT; /* asked for: taken as asked */
    CHECK(atf_linsys_choose(p, NULL, &set, 1, why, sizeof why) == ATF_LS_PLAN_DIRECT &&
              strstr(why, "linsys direct"),
          "linsys direct: '%s'", why);
    /* auto picks the method from the plan */
    char err[ATF_ERRLEN] = "";
    set = atf_settings_default();
    set.memory_fraction = 1e-12;
    atf_result *res = NULL;
    CHECK(atf_solve(p, &set, NULL, &res, err) == ATF_OK && res &&
              !strcmp(res->info.method, "alm") && strstr(res->info.method_note, "alm"),
          "auto with nothing fitting: method %s, note '%s' (%s)", res ? res->info.method : "-",
          res ? res->info.method_note : "", err);
    atf_result_free(res), res = NULL;
    set = atf_settings_default();
    set.baseline = 1, set.gram_max_rows = 50;
    CHECK(atf_solve(p, &set, NULL, &res, err) == ATF_OK && res && !strcmp(res->info.method, "cg")
              && !strcmp(res->info.linsys, "pcg"),
          "the baseline above gram_max_rows: %s by %s (%s)", res ? res->info.method : "-",
          res ? res->info.linsys : "-", err);
    atf_result_free(res), res = NULL;
    set.gram_max_rows = 10000;
    CHECK(atf_solve(p, &set, NULL, &res, err) == ATF_OK && res &&
              !strcmp(res->info.method, "baseline") && !strcmp(res->info.linsys, "cholesky"),
          "the baseline below gram_max_rows: %s by %s (%s)", res ? res->info.method : "-",
          res ? res->info.linsys : "-", err);
    atf_result_free(res);
    atf_problem_free(p);
}

/* Settings a solver refuses, each with a message naming the setting. */
static void test_refusals(void)
{
    const int shapes[1][2] = {{5, 4}};
    atf_problem *p = factored(61, 10, 1, 1, shapes, "sq", 0);
    struct {
        const char *what, *says;
        atf_settings set;
    } bad[7];
    for (int i = 0; i < 7; i++)
        bad[i].set = atf_settings_default();
    bad[0].what = "linsys 7", bad[0].says = "linsys", bad[0].set.linsys = (atf_linsys_kind)7;
    bad[1].what = "precond 9", bad[1].says = "precond", bad[1].set.precond = (atf_precond)9;
    bad[2].what = "memory_fraction 0", bad[2].says = "memory_fraction";
    bad[2].set.memory_fraction = 0.0;
    bad[3].what = "memory_fraction 1.5", bad[3].says = "memory_fraction";
    bad[3].set.memory_fraction = 1.5;
    bad[4].what = "gram_max_rows -1", bad[4].says = "gram_max_rows";
    bad[4].set.gram_max_rows = -1;
    bad[5].what = "baseline by pcg", bad[5].says = "baseline solves its linear systems by a fact";
    bad[5].set.method = ATF_METHOD_BASELINE, bad[5].set.linsys = ATF_LINSYS_PCG;
    bad[6].what = "cg by a factorisation", bad[6].says = "cg solves its linear systems by PCG";
    bad[6].set.method = ATF_METHOD_CG, bad[6].set.linsys = ATF_LINSYS_DIRECT;
    for (int i = 0; i < 7; i++) {
        char err[ATF_ERRLEN] = "";
        atf_solver *s = NULL;
        atf_error e = atf_solver_init(p, &bad[i].set, NULL, &s, err);
        CHECK(e == ATF_E_USAGE && !s && strstr(err, bad[i].says) && !strchr(err, '\n'),
              "%s: %s: %s", bad[i].what, atf_error_name(e), err);
        atf_solver_free(s);
    }
    atf_linsys_kind k;
    atf_precond pc;
    CHECK(atf_linsys_kind_parse("pcg", &k) == ATF_OK && k == ATF_LINSYS_PCG &&
              atf_linsys_kind_parse("PCG", &k) == ATF_E_INPUT &&
              atf_precond_parse("nystrom-block", &pc) == ATF_OK &&
              pc == ATF_PRECOND_NYSTROM_BLOCK && atf_precond_parse("default", &pc) &&
              !atf_linsys_kind_name((atf_linsys_kind)3) && !atf_precond_name((atf_precond)-1),
          "names and parsers");
    atf_problem_free(p);
}

int main(void)
{
    test_backends_solve();
    test_backend_named();
    test_chooser();
    test_refusals();
    return atf_test_finish("test_linsys");
}
