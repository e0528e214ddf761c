/* test_newton.c — the semismooth Newton-CG method of the penalized problem (16) (solver/newton.c)
 * and the generalized Jacobian of the blockwise prox it rests on (solver/prox_jacobian.c).
 *
 * Checks: the Jacobian applied to random directions against central differences of the prox
 * itself (atf_sv_prox), on spectral blocks wide, tall and square with distinct, tied and zero
 * singular values, on vectors, under the diagonal and full structures, for convex and nonconvex
 * penalties; the Λ and mask maps against their definition through J; Newton's optimum equals
 * FISTA's (objective 1e-8, B 1e-5) for convex penalties, both losses, factored, dense and
 * sparse blocks and the three structures; nonconvex penalties descend monotonically (the
 * iteration table's objective column) with statuses that match their certificates; data
 * scaled by 1e±150 (with λ and γ scaled so that the problem is the same) give the same status
 * and the correspondingly scaled solution; the augmented Lagrangian (solver/alm.c) reaches Gram
 * ADMM's interpolation optimum (objective 1e-8) on the same convex cases; checkpoints
 * (hooks.checkpoint / hooks.resume): a solve resumed from any state it handed out ends with the
 * uninterrupted solve's B, counts and certificates bit for bit (with and without the sketch, a
 * nonconvex penalty, both losses), another solve's or a damaged state is refused, a checkpoint
 * the caller cannot keep is an error, and the file round trip; one arithmetic on any number
 * of threads: newton (with the sketch), cg and fista on 1, 2 and 3 BLAS threads end with the
 * same B, counts and certificates bit for bit, and the BLAS's thread count is given back. */
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "solver_fixtures.h"
#include "solver_newton.h"

/* ---- the Jacobian against differences ------------------------------------------------------ */

/* Random orthonormal columns: Q (n × k, row-major) from the SVD of a random n × k matrix. */
static void orthonormal(atf_test_rng *rng, int n, int k, double *Q)
{
    double *A = atf_test_new_normal(rng, (size_t)n * (size_t)k), *s = atf_test_alloc((size_t)k);
    double *vt = atf_test_alloc((size_t)k * (size_t)k), *superb = atf_test_alloc((size_t)k + 1);
    LAPACKE_dgesvd(LAPACK_ROW_MAJOR, 'S', 'N', n, k, A, k, s, Q, k, vt, k, superb);
    free(A), free(s), free(vt), free(superb);
}

/* z = U diag(σ) Vᵀ for a rows × cols core with the given singular values (k of them). */
static void with_singular_values(atf_test_rng *rng, int rows, int cols, const double *sigma,
                                 double *z)
{
    int k = rows < cols ? rows : cols;
    double *U = atf_test_alloc((size_t)rows * (size_t)k), *V = atf_test_alloc((size_t)cols * (size_t)k);
    orthonormal(rng, rows, k, U);
    orthonormal(rng, cols, k, V);
    for (int a = 0; a < rows; a++)
        for (int b = 0; b < cols; b++) {
            double sum = 0.0;
            for (int j = 0; j < k; j++)
                sum += U[(size_t)a * (size_t)k + (size_t)j] * sigma[j] * V[(size_t)b * (size_t)k + (size_t)j];
            z[(size_t)a * (size_t)cols + (size_t)b] = sum;
        }
    free(U), free(V);
}

/* Singular values away from the kinks of the tested penalties: distinct, a tie and a zero. */
static const double SIGMAS[7] = {2.3, 1.1, 0.6, 0.6, 0.31, 0.07, 0.0};

static atf_solver *penalized_solver(const atf_problem *p, atf_global_structure structure)
{
    atf_settings set = atf_settings_default();
    set.loss = (atf_loss){ATF_LOSS_SQUARED, 1.0};
    set.method = ATF_METHOD_NEWTON;
    set.structure = structure;
    set.reduce = 0; /* the cores keep the blocks' shapes */
    atf_solver *s = NULL;
    char err[ATF_ERRLEN] = "";
    CHECK(atf_solver_init(p, &set, NULL, &s, err) == ATF_OK, "init: %s", err);
    return s;
}

/* ‖J h − (prox(z + εh) − prox(z − εh))/(2ε)‖ / ‖J h‖ at the point z for random directions. */
static double jacobian_error(atf_solver *s, atf_jac *jac, const double *z, double t,
                             atf_test_rng *rng)
{
    size_t n = s->n;
    double *h = atf_test_alloc(n), *Jh = atf_test_alloc(n), *up = atf_test_alloc(n);
    double *down = atf_test_alloc(n), *zp = atf_test_alloc(n), worst = 0.0;
    CHECK(atf_jac_build(s, jac, z, t, NULL) == 0, "jacobian build failed");
    for (int trial = 0; trial < 3; trial++) {
        atf_test_fill_normal(rng, n, h);
        atf_jac_apply(jac, ATF_JAC_THETA, h, ATF_JAC_THETA, NULL, Jh);
        double eps = 1e-6 * atf_sv_norm(z, n) / atf_sv_norm(h, n);
        for (size_t i = 0; i < n; i++)
            zp[i] = z[i] + eps * h[i];
        atf_sv_prox(s, zp, up, 1.0 / t);
        for (size_t i = 0; i < n; i++)
            zp[i] = z[i] - eps * h[i];
        atf_sv_prox(s, zp, down, 1.0 / t);
        double num = 0.0;
        for (size_t i = 0; i < n; i++) {
            double fd = (up[i] - down[i]) / (2.0 * eps);
            num += (fd - Jh[i]) * (fd - Jh[i]);
        }
        worst = fmax(worst, sqrt(num) / fmax(atf_sv_norm(Jh, n), 1e-300));
    }
    free(h), free(Jh), free(up), free(down), free(zp);
    return worst;
}

/* Λ = (J⁻¹ − I)/t on S: J (t Λ h + h) = h for h in S, and the mask is idempotent. */
static double lambda_error(atf_solver *s, atf_jac *jac, atf_test_rng *rng)
{
    size_t n = s->n;
    double *h = atf_test_new_normal(rng, n), *hs = atf_test_alloc(n), *lh = atf_test_alloc(n);
    double *back = atf_test_alloc(n);
    atf_jac_apply(jac, ATF_JAC_MASK, h, ATF_JAC_MASK, NULL, hs);
    atf_jac_apply(jac, ATF_JAC_LAMBDA, hs, ATF_JAC_MASK, hs, lh); /* Λ hs + hs */
    for (size_t i = 0; i < n; i++)
        lh[i] = jac->t * lh[i] + (1.0 - jac->t) * hs[i]; /* t Λ hs + hs */
    atf_jac_apply(jac, ATF_JAC_THETA, lh, ATF_JAC_THETA, NULL, back);
    double err = 0.0;
    for (size_t i = 0; i < n; i++)
        err += (back[i] - hs[i]) * (back[i] - hs[i]);
    double rel = sqrt(err) / fmax(atf_sv_norm(hs, n), 1e-300);
    free(h), free(hs), free(lh), free(back);
    return rel;
}

static void test_jacobian(void)
{
    static const int shapes[5][2] = {{4, 7}, {7, 4}, {5, 5}, {1, 6}, {6, 1}};
    const char *pens[] = {"sq", "sq:scale=0.01", "zsq:scale=0.5", "nuclear:scale=0.04", "fixed",
                          "pow:p=3", "balanced", "abs:scale=0.1", "sq+sq", "logsq:scale=0.1",
                          "balanced+balanced"};
    atf_global_structure structures[3] = {ATF_GLOBAL_LAYER, ATF_GLOBAL_DIAGONAL, ATF_GLOBAL_FULL};
    atf_test_rng rng;
    atf_test_rng_seed(&rng, 2024);
    for (size_t pi = 0; pi < sizeof pens / sizeof pens[0]; pi++) {
        atf_problem *p = factored(3, 12, 2, 5, shapes, pens[pi], 0);
        for (int si = 0; si < 3; si++) {
            atf_solver *s = penalized_solver(p, structures[si]);
            atf_jac jac;
            char err[ATF_ERRLEN] = "";
            if (!s || atf_jac_alloc(s, &jac, err) != ATF_OK) {
                CHECK(0, "%s", err);
                atf_solver_free(s);
                continue;
            }
            double *z = atf_test_alloc(s->n);
            for (int l = 0; l < s->nvars; l++) {
                const atf_sv_var *v = &s->vars[l];
                with_singular_values(&rng, v->rows, v->cols, SIGMAS, z + v->off);
            }
            for (double t = 0.05; t < 2.0; t *= 4.0) {
                double e = jacobian_error(s, &jac, z, t, &rng);
                CHECK(e < 2e-6, "%s, structure %s, t %g: J h vs differences of the prox: %.3g",
                      pens[pi], atf_structure_name(structures[si]), t, e);
                double le = lambda_error(s, &jac, &rng);
                CHECK(le < 1e-9, "%s, structure %s, t %g: J (tΛ + I) ≠ I on S: %.3g", pens[pi],
                      atf_structure_name(structures[si]), t, le);
            }
            free(z);
            atf_jac_free(&jac);
            atf_solver_free(s);
        }
        atf_problem_free(p);
    }
}

/* ---- the Nyström preconditioner against dense algebra ---------------------------------------- */

/* On a problem whose loss curvature has rank M = 6 below the sketch's rank 10, the sketch on all
 * examples reproduces ∇²g (formed densely column by column through A', the loss Hessian and
 * A'ᵀ); and the Woodbury solve P⁻¹v of newton_precond.c satisfies P (P⁻¹v) = v with P = Λ + μ +
 * λ̂_k + P_S U diag(λ̂ − λ̂_k) Uᵀ P_S assembled here from the maps, for both losses. */
static void test_preconditioner(void)
{
    static const int shapes[2][2] = {{6, 5}, {5, 3}};
    atf_loss losses[2] = {{ATF_LOSS_SQUARED, 0.7}, {ATF_LOSS_XENT, 0.7}};
    atf_test_rng rng;
    atf_test_rng_seed(&rng, 77);
    for (int li = 0; li < 2; li++) {
        atf_problem *p = factored(31, 3, 2, 2, shapes, "sq:scale=0.2", 0);
        add_labels(p, 32, 1);
        atf_settings set = atf_settings_default();
        set.loss = losses[li], set.method = ATF_METHOD_NEWTON, set.reduce = 0;
        atf_solver *s = NULL;
        atf_pg_loss pl;
        atf_jac jac;
        atf_nystrom ny;
        char err[ATF_ERRLEN] = "";
        memset(&ny, 0, sizeof ny);
        int ok = atf_solver_init(p, &set, NULL, &s, err) == ATF_OK &&
                 atf_pg_loss_init(s, &set.loss, &pl, err) == ATF_OK;
        ok = ok && atf_jac_alloc(s, &jac, err) == ATF_OK;
        ok = ok && atf_nys_init(s, &ny, p->N, 10, err) == ATF_OK;
        CHECK(ok, "preconditioner setup: %s", err);
        if (!ok) {
            atf_solver_free(s), atf_problem_free(p);
            continue;
        }
        size_t n = s->n, M = (size_t)p->M;
        double *x = atf_test_new_normal(&rng, n), *zx = atf_test_alloc(M);
        double *e = atf_test_alloc(n), *col = atf_test_alloc(M), *Hd = atf_test_alloc(n * n);
        double *Nd = atf_test_alloc(n * n);
        atf_sv_apply(s, x, zx);
        atf_pg_loss_curvature(&pl, zx);
        for (size_t j = 0; j < n; j++) { /* column j of ∇²g = A'ᵀ ∇²ℓ A' e_j */
            memset(e, 0, n * sizeof *e);
            e[j] = 1.0;
            atf_sv_apply(s, e, col);
            atf_pg_loss_hess(&pl, NULL, 0, col, col);
            atf_sv_adjoint(s, col, Hd + j * n);
        }
        CHECK(atf_nys_build(s, &pl, &ny) == 0 && ny.ready, "%s: the sketch failed",
              atf_loss_name(losses[li].kind));
        for (size_t i = 0; i < n; i++) /* U diag(λ̂) Uᵀ, U column-major n × k */
            for (size_t j = 0; j < n; j++) {
                double sum = 0.0;
                for (int q = 0; q < ny.k; q++)
                    sum += ny.U[q * n + i] * ny.lam[q] * ny.U[q * n + j];
                Nd[j * n + i] = sum;
            }
        CHECK(rel_dist(Nd, Hd, n * n) < 1e-8, "%s: the Nyström sketch of a rank-%d curvature "
              "differs from the dense one by %.3g", atf_loss_name(losses[li].kind), (int)M,
              rel_dist(Nd, Hd, n * n));
        /* the Woodbury solve at a Jacobian with zeros, ties and a shrunken support */
        double *z = atf_test_new_normal(&rng, n), *v0 = atf_test_new_normal(&rng, n);
        double *v = atf_test_alloc(n), *w = atf_test_alloc(n), *Pw = atf_test_alloc(n);
        double *Uw = atf_test_alloc((size_t)ny.k), *us = atf_test_alloc(n);
        double mu = 0.3;
        CHECK(atf_jac_build(s, &jac, z, 0.5, NULL) == 0 && atf_nys_prepare(&ny, &jac, mu) == 0,
              "%s: prepare failed", atf_loss_name(losses[li].kind));
        atf_jac_apply(&jac, ATF_JAC_MASK, v0, ATF_JAC_MASK, NULL, v);
        atf_nys_apply(&ny, &jac, v, w);
        atf_jac_apply(&jac, ATF_JAC_LAMBDA, w, ATF_JAC_MASK, w, Pw); /* Λw + w */
        double lk = ny.lam[ny.k - 1];
        for (size_t i = 0; i < n; i++)
            Pw[i] += (mu + lk - 1.0) * w[i];
        for (int q = 0; q < ny.k; q++) {
            double dot = 0.0;
            for (size_t i = 0; i < n; i++)
                dot += ny.U[q * n + i] * w[i];
            Uw[q] = (ny.lam[q] - lk) * dot;
        }
        for (size_t i = 0; i < n; i++) {
            us[i] = 0.0;
            for (int q = 0; q < ny.k; q++)
                us[i] += ny.U[q * n + i] * Uw[q];
        }
        atf_jac_apply(&jac, ATF_JAC_MASK, us, ATF_JAC_MASK, NULL, e); /* P_S U S Uᵀ w */
        for (size_t i = 0; i < n; i++)
            Pw[i] += e[i];
        CHECK(rel_dist(Pw, v, n) < 1e-10, "%s: P (P⁻¹ v) differs from v by %.3g",
              atf_loss_name(losses[li].kind), rel_dist(Pw, v, n));
        free(x), free(zx), free(e), free(col), free(Hd), free(Nd), free(z), free(v0), free(v);
        free(w), free(Pw), free(Uw), free(us);
        atf_nys_free(&ny);
        atf_jac_free(&jac);
        atf_pg_loss_free(&pl);
        atf_solver_free(s);
        atf_problem_free(p);
    }
}

/* ---- Newton against FISTA -------------------------------------------------------------------- */

static atf_result *solve_with(const atf_problem *p, atf_method method, atf_loss loss,
                              atf_global_structure structure, double eps, int rank)
{
    atf_settings set = tight(eps);
    set.method = method, set.loss = loss, set.structure = structure;
    set.newton_rank = rank;
    set.max_iter = method == ATF_METHOD_FISTA ? 200000 : 500;
    atf_result *res = NULL;
    char err[ATF_ERRLEN] = "";
    CHECK(atf_solve(p, &set, NULL, &res, err) == ATF_OK && res, "%s: %s", atf_method_name(method),
          err);
    return res;
}

/* rank: the Newton preconditioner's (−1: auto, which means none at these sizes; > 0 forces it) */
static void compare(const atf_problem *p, atf_loss loss, atf_global_structure structure,
                    int rank, const char *what)
{
    atf_result *f = solve_with(p, ATF_METHOD_FISTA, loss, structure, 1e-10, -1);
    atf_result *nw = solve_with(p, ATF_METHOD_NEWTON, loss, structure, 1e-10, rank);
    if (f && nw) {
        int n = (int)atf_problem_nvars(p);
        double *bf = stack_result(f, n), *bn = stack_result(nw, n);
        double dobj = fabs(nw->info.objective - f->info.objective) / fabs(f->info.objective);
        double db = rel_dist(bn, bf, (size_t)n);
        CHECK(f->info.status == ATF_STATUS_SOLVED && nw->info.status == ATF_STATUS_SOLVED,
              "%s: statuses fista %s, newton %s", what, atf_status_name(f->info.status),
              atf_status_name(nw->info.status));
        CHECK(dobj < 1e-8 && db < 1e-5, "%s: objective %.15g vs fista %.15g (%.2g), B %.2g",
              what, nw->info.objective, f->info.objective, dobj, db);
        CHECK(nw->info.pg_residual <= 1e-10 && nw->info.duality_gap < 1e-9,
              "%s: newton certificates pg %.3g gap %.3g", what, nw->info.pg_residual,
              nw->info.duality_gap);
        CHECK(nw->info.operator_passes > 0 && nw->info.inner_iterations >= 0,
              "%s: work not counted", what);
        free(bf), free(bn);
    }
    atf_result_free(f), atf_result_free(nw);
}

static void test_against_fista(void)
{
    static const int shapes[3][2] = {{6, 5}, {5, 3}, {3, 1}};
    const char *convex[] = {"sq", "zsq:scale=0.1", "nuclear:scale=0.01", "pow:p=3", "fixed"};
    atf_loss losses[2] = {{ATF_LOSS_SQUARED, 0.5}, {ATF_LOSS_XENT, 0.5}};
    atf_global_structure structures[3] = {ATF_GLOBAL_LAYER, ATF_GLOBAL_DIAGONAL, ATF_GLOBAL_FULL};
    for (int kind = 0; kind < 2; kind++) { /* factored; factored + dense + sparse */
        for (size_t pi = 0; pi < sizeof convex / sizeof convex[0]; pi++) {
            atf_problem *p = factored(40 + pi, 14, 3, 3, shapes, convex[pi], 0);
            add_labels(p, 50 + pi, 1);
            if (kind) {
                make_dense(p, 1, 0);
                make_dense(p, 2, 1);
            }
            for (int li = 0; li < 2; li++)
                for (int si = 0; si < 3; si++) {
                    if (structures[si] == ATF_GLOBAL_FULL && pi == 2)
                        continue; /* `full` + nuclear is ‖β‖: covered by the vector blocks */
                    char what[160];
                    /* the mixed blocks with the Nyström preconditioner forced (rank 8) */
                    int rank = kind ? 8 : -1;
                    snprintf(what, sizeof what, "%s blocks, %s, loss %s, structure %s, rank %d",
                             kind ? "mixed" : "factored", convex[pi],
                             atf_loss_name(losses[li].kind), atf_structure_name(structures[si]),
                             rank);
                    compare(p, losses[li], structures[si], rank, what);
                }
            atf_problem_free(p);
        }
    }
}

/* ---- interpolation: the augmented Lagrangian against Gram ADMM ----------------------------- */

static atf_result *interpolate_with(const atf_problem *p, atf_method method,
                                    atf_global_structure structure)
{
    atf_settings set = tight(1e-10);
    set.method = method, set.structure = structure, set.max_iter = 100000;
    atf_result *res = NULL;
    char err[ATF_ERRLEN] = "";
    CHECK(atf_solve(p, &set, NULL, &res, err) == ATF_OK && res, "%s: %s", atf_method_name(method),
          err);
    return res;
}

/* Convex penalties, factored and mixed blocks, the three structures: the same optimum to 1e-8
 * in the objective, both certified. */
static void test_alm(void)
{
    static const int shapes[3][2] = {{6, 5}, {5, 3}, {3, 1}};
    const char *convex[] = {"sq", "zsq:scale=0.1", "nuclear:scale=0.01", "pow:p=3"};
    atf_global_structure structures[3] = {ATF_GLOBAL_LAYER, ATF_GLOBAL_DIAGONAL, ATF_GLOBAL_FULL};
    for (int kind = 0; kind < 2; kind++)
        for (size_t pi = 0; pi < sizeof convex / sizeof convex[0]; pi++) {
            atf_problem *p = factored(60 + pi, 9, 2, 3, shapes, convex[pi], 0);
            if (kind) {
                make_dense(p, 1, 0);
                make_dense(p, 2, 1);
            }
            for (int si = 0; si < 3; si++) {
                if (structures[si] == ATF_GLOBAL_FULL && pi == 2)
                    continue;
                /* diagonal + nuclear is ℓ1 basis pursuit: the exact LP (ADMM stalls there
                 * at max_iterations with a stationarity of ~1e-4) */
                atf_method ref = structures[si] == ATF_GLOBAL_DIAGONAL && pi == 2
                                     ? ATF_METHOD_LP
                                     : ATF_METHOD_ADMM;
                atf_result *ad = interpolate_with(p, ref, structures[si]);
                atf_result *al = interpolate_with(p, ATF_METHOD_ALM, structures[si]);
                if (ad && al) {
                    double dobj = fabs(al->info.objective - ad->info.objective) / fabs(ad->info.objective);
                    CHECK(ad->info.status == ATF_STATUS_SOLVED && al->info.status == ATF_STATUS_SOLVED &&
                              dobj < 1e-8 && al->info.constraint_residual < 1.5e-8 &&
                              al->info.stationarity <= 1e-10,
                          "alm, %s blocks, %s, structure %s: %s objective %.15g vs %s %.15g "
                          "(%.2g), residual %.2g, stationarity %.2g",
                          kind ? "mixed" : "factored", convex[pi],
                          atf_structure_name(structures[si]), atf_status_name(al->info.status),
                          al->info.objective, atf_method_name(ref), ad->info.objective, dobj, al->info.constraint_residual,
                          al->info.stationarity);
                }
                atf_result_free(ad), atf_result_free(al);
            }
            atf_problem_free(p);
        }
}

/* ---- nonconvex penalties: monotone, honest ------------------------------------------------ */

static void test_nonconvex(void)
{
    static const int shapes[2][2] = {{8, 6}, {6, 2}};
    const char *pens[] = {"abs:scale=0.05", "logsq:scale=0.05", "pow:p=1.5,scale=0.05", "sq+sq",
                          "balanced+balanced", "sq+abs"};
    atf_loss losses[2] = {{ATF_LOSS_SQUARED, 0.2}, {ATF_LOSS_XENT, 0.2}};
    for (size_t pi = 0; pi < sizeof pens / sizeof pens[0]; pi++)
        for (int li = 0; li < 2; li++) {
            atf_problem *p = factored(70 + pi, 20, 2, 2, shapes, pens[pi], 0);
            add_labels(p, 80 + pi, 1);
            atf_settings set = tight(1e-9);
            set.method = ATF_METHOD_NEWTON, set.loss = losses[li], set.max_iter = 300;
            char what[96];
            snprintf(what, sizeof what, "newton, %s, %s", pens[pi], atf_loss_name(losses[li].kind));
            check_nonconvex_run(p, set, what);
            atf_problem_free(p);
        }
}

/* ---- checkpoints: a resumed solve is the uninterrupted one, bit for bit ----------------------- */


static void checkpoint_case(atf_method method, const char *pen, atf_loss loss, int rank,
                            int min_states, double warm_lambda)
{
    static const int shapes[2][2] = {{8, 6}, {6, 2}};
    checkpoint_case_on(method, pen, loss, rank, min_states, warm_lambda, 24, shapes, NULL);
}

/* The automatic rank (N ≥ 4 000 examples): 100, grown to 126 (a quarter of the 504 variables)
 * once a step's CG takes more than its threshold (here 4 CG steps: the larger sketch adds 2·26
 * columns on an eighth of the examples every third step); the states before and after the
 * growth, and a stop in the step that grows, resume to the uninterrupted solve bit for bit.
 * The rank forced to 100 does not grow. */
static void checkpoint_growth(void)
{
    static const int shapes[2][2] = {{40, 12}, {12, 2}};
    atf_loss xent = {ATF_LOSS_XENT, 0.5};
    checkpoint_case_on(ATF_METHOD_NEWTON, "balanced+balanced", xent, -1, 3, 0.0, 4000, shapes,
                       "preconditioner rank 126 from step");
    checkpoint_case_on(ATF_METHOD_NEWTON, "balanced+balanced", xent, 100, 3, 0.0, 4000, shapes,
                       NULL);
    /* through a continuation's bridges: a grown rank carries into the next stage */
    checkpoint_case_on(ATF_METHOD_NEWTON, "balanced+balanced", xent, -1, 3, 5.0, 4000, shapes,
                       "preconditioner rank 126 from step");
}

/* The file: written and read back exactly; a truncated file is refused with its name. */
static void checkpoint_file(void)
{
    char path[] = "/tmp/atf_checkpoint_XXXXXX", err[ATF_ERRLEN] = "";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp");
    if (fd < 0)
        return;
    close(fd);
    double data[5] = {1.0, -2.5, 3e-300, 1e300, 0.0};
    atf_checkpoint cp = {.key = "newton state 1; test", .len = 5, .data = data}, back;
    CHECK(atf_checkpoint_write(path, &cp, err) == ATF_OK, "write: %s", err);
    CHECK(atf_checkpoint_read(path, &back, err) == ATF_OK && back.len == 5 &&
              memcmp(back.data, data, sizeof data) == 0 && strcmp(back.key, cp.key) == 0,
          "read back: %s", err);
    atf_checkpoint_free(&back);
    data[2] = NAN;
    CHECK(atf_checkpoint_write(path, &cp, err) == ATF_E_NUMERICAL, "a NaN state was written");
    CHECK(truncate(path, 100) == 0, "truncate");
    atf_error e = atf_checkpoint_read(path, &back, err);
    CHECK(e != ATF_OK && strstr(err, path) && !back.data, "a truncated file was read (%s)", err);
    remove(path);
}

/* A state whose regularisation factor σ (header entry 4) is at its cap, 1e12, where a step is
 * about 1e-12 of a proximal-gradient step: the resumed solve shrinks σ step by step and ends
 * solved, a few dozen steps after the plain solve. (Counting every small rise of the residual,
 * those the proximal-gradient step after such a step makes, held σ at the cap for good at
 * Fashion-MNIST n = 30 000: 100 steps at pg residual 4.24e-4. These small problems recover
 * under that rule too: the case guards the recovery, not the rule.) */
static void sigma_at_its_cap(const char *pen, atf_loss loss, int rank, int N,
                             const int (*shapes)[2])
{
    atf_problem *p = factored(91, N, 2, 2, shapes, pen, 0);
    add_labels(p, 92, 1);
    atf_settings set = tight(1e-9);
    set.method = ATF_METHOD_NEWTON, set.loss = loss, set.newton_rank = rank, set.max_iter = 300;
    char err[ATF_ERRLEN] = "";
    atf_error e;
    kept_states k = {.fail_at = -1, .stop_at = -1};
    atf_hooks hooks = {.checkpoint = keep_state, .checkpoint_ctx = &k};
    atf_result *plain = solve_with_hooks(p, &set, &hooks, &e, err), *res = NULL;
    CHECK(plain && plain->info.status == ATF_STATUS_SOLVED && k.count >= 1,
          "sigma at its cap, %s: the plain solve (%s)", pen, err);
    if (plain && k.count >= 1) {
        k.states[0].data[4] = 1e12;
        atf_hooks from = {.resume = &k.states[0]};
        res = solve_with_hooks(p, &set, &from, &e, err);
        CHECK(e == ATF_OK && res && res->info.status == ATF_STATUS_SOLVED &&
                  res->info.pg_residual <= 1e-9 &&
                  res->info.iterations <= plain->info.iterations + 40,
              "sigma at its cap, %s: resumed, %s after %d steps (the plain solve %d), pg "
              "residual %.3g (%s)", pen, res ? atf_status_name(res->info.status) : "-",
              res ? res->info.iterations : -1, plain->info.iterations,
              res ? res->info.pg_residual : NAN, err);
    }
    kept_states_free(&k);
    atf_result_free(plain), atf_result_free(res);
    atf_problem_free(p);
}

static void test_checkpoints(void)
{
    atf_loss xent = {ATF_LOSS_XENT, 0.2}, squared = {ATF_LOSS_SQUARED, 0.2};
    /* xent with the sketch (rebuilt every third step: states at steps 0, 3, 6, …), nonconvex */
    checkpoint_case(ATF_METHOD_NEWTON, "balanced+balanced", xent, 8, 2, 0.0);
    checkpoint_case(ATF_METHOD_NEWTON, "sq", xent, 8, 2, 0.0);
    /* without a sketch every step is one; the squared loss's is built once: step 0 only */
    checkpoint_case(ATF_METHOD_NEWTON, "nuclear:scale=0.01", xent, 0, 3, 0.0);
    checkpoint_case(ATF_METHOD_NEWTON, "sq", squared, 8, 1, 0.0);
    /* from the answer at 10 λ: three bridges, then λ; a resumed solve goes on in its stage */
    checkpoint_case(ATF_METHOD_NEWTON, "balanced+balanced", xent, 8, 4, 2.0);
    checkpoint_case(ATF_METHOD_NEWTON, "sq+sq", squared, 0, 4, 2.0);
    /* interpolation by the augmented Lagrangian: a state at every Newton step of every
     * subproblem; with the sketch (built again at its σ and scaled through the σ's since),
     * without, and a nonconvex penalty */
    atf_loss interpolate = {ATF_LOSS_INTERPOLATE, 0.0};
    checkpoint_case(ATF_METHOD_ALM, "sq", interpolate, 8, 3, 0.0);
    checkpoint_case(ATF_METHOD_ALM, "balanced+balanced", interpolate, 8, 3, 0.0);
    checkpoint_case(ATF_METHOD_ALM, "nuclear:scale=0.01", interpolate, 0, 3, 0.0);
    checkpoint_growth();
    checkpoint_file();
    /* the state at the iteration limit (newton with the sketch; alm) */
    static const int limit_shapes[2][2] = {{8, 6}, {6, 2}};
    atf_problem *p = factored(93, 24, 2, 2, limit_shapes, "balanced+balanced", 0);
    add_labels(p, 94, 1);
    atf_settings set = tight(1e-9);
    set.method = ATF_METHOD_NEWTON, set.loss = xent, set.newton_rank = 8, set.max_iter = 300;
    checkpoint_at_limit_on(p, set, 7, 3, "newton at its limit");
    set.method = ATF_METHOD_ALM, set.loss = interpolate;
    checkpoint_at_limit_on(p, set, 3, 1, "alm at its limit");
    atf_problem_free(p);
    static const int small[2][2] = {{8, 6}, {6, 2}}, large[2][2] = {{40, 12}, {12, 2}};
    sigma_at_its_cap("balanced+balanced", xent, 8, 24, small);
    sigma_at_its_cap("sq", squared, 0, 24, small);
    sigma_at_its_cap("balanced+balanced", xent, -1, 4000, large);
}

/* ---- continuation ---------------------------------------------------------------------------- */

/* From the answer at λ = 2: through bridges where the penalty is nonconvex and continuation is
 * on, straight to λ = 0.2 otherwise; every answer certified; a ratio below 1 refused. */
static void test_continuation(void)
{
    static const int shapes[2][2] = {{8, 6}, {6, 2}};
    const char *pens[2] = {"balanced+balanced", "sq"};
    for (int c = 0; c < 2; c++) {
        atf_problem *p = factored(93, 24, 2, 2, shapes, pens[c], 0);
        add_labels(p, 94, 1);
        atf_settings set = tight(1e-9);
        set.method = ATF_METHOD_NEWTON, set.loss = (atf_loss){ATF_LOSS_XENT, 2.0};
        char err[ATF_ERRLEN] = "";
        atf_error e;
        atf_result *warm = solve_with_hooks(p, &set, NULL, &e, err);
        atf_hooks hooks = {.warm = warm};
        set.loss.lambda = 0.2;
        for (int off = 0; off < 2 && warm; off++) {
            set.continuation = off ? 0.0 : 2.0;
            atf_result *res = solve_with_hooks(p, &set, &hooks, &e, err);
            int bridged = res && strstr(res->info.method_note, "continuation") != NULL;
            CHECK(res && res->info.status == ATF_STATUS_SOLVED && res->info.pg_residual <= 1e-9,
                  "continuation %g, %s: %s", set.continuation, pens[c], err);
            CHECK(bridged == (c == 0 && !off), "continuation %g, %s: bridged %d (note \"%s\")",
                  set.continuation, pens[c], bridged, res ? res->info.method_note : "");
            atf_result_free(res);
        }
        set.continuation = 0.5;
        atf_result *res = solve_with_hooks(p, &set, &hooks, &e, err);
        CHECK(e == ATF_E_USAGE && !res && strstr(err, "continuation"),
              "continuation 0.5 accepted (%d: %s)", (int)e, err);
        atf_result_free(warm);
        atf_problem_free(p);
    }
}

/* ---- units --------------------------------------------------------------------------------- */

/* Multiply every operator (and r when with_r) by c. */
static void scale_problem(atf_problem *p, double c, int with_r)
{
    if (with_r)
        cblas_dscal(p->M, c, p->r, 1);
    for (int l = 0; l < p->nblocks; l++) {
        atf_block *b = &p->blocks[l];
        if (b->kind == ATF_OP_FACTORED)
            cblas_dscal(b->M * b->cols, c, b->D, 1);
        else if (b->kind == ATF_OP_DENSE)
            cblas_dscal(b->M * b->rows * b->cols, c, b->J, 1);
        else
            cblas_dscal((int)b->nnz, c, b->data, 1);
    }
    p->fingerprint[0] = '\0';
}

/* squared: A, r × c and λ × c² is the same problem (same B); xent: A × c, γ / c², λ × c² has
 * the solution B / c and the objective F / c². */
static void test_units(void)
{
    static const int shapes[2][2] = {{6, 5}, {5, 2}};
    const double scales[2] = {1e150, 1e-150};
    for (int li = 0; li < 2; li++)
        for (int ci = 0; ci < 2; ci++) {
            double c = scales[ci];
            int xent = li == 1;
            atf_problem *p = factored(90, 16, 2, 2, shapes, "sq:scale=0.3", 1);
            atf_problem *q = factored(90, 16, 2, 2, shapes, "sq:scale=0.3", 1);
            add_labels(p, 91, 1), add_labels(q, 91, 1);
            atf_loss loss = {xent ? ATF_LOSS_XENT : ATF_LOSS_SQUARED, 0.4};
            atf_loss qloss = {loss.kind, 0.4 * c * c};
            scale_problem(q, c, !xent);
            char spec[64], err[ATF_ERRLEN] = "";
            snprintf(spec, sizeof spec, "sq:scale=%.17g", 0.3 / (c * c));
            if (xent)
                CHECK(atf_problem_set_penalty(q, spec, err) == ATF_OK, "%s", err);
            atf_result *a = solve_with(p, ATF_METHOD_NEWTON, loss, ATF_GLOBAL_LAYER, 1e-10, 8);
            atf_result *b = solve_with(q, ATF_METHOD_NEWTON, qloss, ATF_GLOBAL_LAYER, 1e-10, 8);
            if (a && b) {
                int n = (int)atf_problem_nvars(p);
                double *ba = stack_result(a, n), *bb = stack_result(b, n);
                double back = xent ? c : 1.0, objscale = xent ? 1.0 / (c * c) : 1.0;
                cblas_dscal(n, back, bb, 1);
                CHECK(a->info.status == b->info.status && a->info.status == ATF_STATUS_SOLVED,
                      "%s × %g: statuses %s / %s", atf_loss_name(loss.kind), c,
                      atf_status_name(a->info.status), atf_status_name(b->info.status));
                CHECK(rel_dist(bb, ba, (size_t)n) < 1e-7 &&
                          fabs(b->info.objective / objscale - a->info.objective) < 1e-9 * fabs(a->info.objective),
                      "%s × %g: B differs by %.3g, objective %.15g vs %.15g",
                      atf_loss_name(loss.kind), c, rel_dist(bb, ba, (size_t)n),
                      b->info.objective / objscale, a->info.objective);
                free(ba), free(bb);
            }
            atf_result_free(a), atf_result_free(b);
            atf_problem_free(p), atf_problem_free(q);
        }
}

/* ---- one arithmetic on any number of threads ----------------------------------------------- */

static atf_result *solve_on_threads(const atf_problem *p, atf_settings set, int threads)
{
    openblas_set_num_threads(threads);
    atf_result *res = NULL;
    char err[ATF_ERRLEN] = "";
    CHECK(atf_solve(p, &set, NULL, &res, err) == ATF_OK && res, "%d threads: %s", threads, err);
    CHECK(openblas_get_num_threads() == threads, "the BLAS's %d threads not given back (%d)",
          threads, openblas_get_num_threads());
    return res;
}

/* 1 100 examples: 35 chunks, and the per-example streams split (≥ 512 examples a thread); a
 * block of 200 × 160, whose chunks' GEMMs are large enough to be shared by the team. */
static void test_threads(void)
{
    static const int shapes[3][2] = {{200, 160}, {20, 10}, {10, 3}};
    int saved = openblas_get_num_threads();
    atf_problem *p = factored(77, 1100, 3, 3, shapes, "zsq:scale=0.1", 0);
    add_labels(p, 78, 1);
    make_dense(p, 2, 0); /* a dense block too: its GEMV on one BLAS thread */
    int n = (int)atf_problem_nvars(p);
    atf_settings sets[3] = {tight(1e-10), tight(1e-10), tight(1e-10)};
    /* a few steps each (the limit is a status like any other: bit for bit too) */
    sets[0].method = ATF_METHOD_NEWTON, sets[0].newton_rank = 8, sets[0].max_iter = 4;
    sets[0].loss = (atf_loss){ATF_LOSS_XENT, 0.5};
    sets[1].method = ATF_METHOD_CG, sets[1].max_iter = 40;
    sets[2].method = ATF_METHOD_FISTA, sets[2].max_iter = 30;
    sets[2].loss = (atf_loss){ATF_LOSS_SQUARED, 0.5};
    for (int k = 0; k < 3; k++) {
        atf_result *one = solve_on_threads(p, sets[k], 1);
        for (int threads = 2; one && threads <= 3; threads++) {
            atf_result *many = solve_on_threads(p, sets[k], threads);
            CHECK(many && same_result(one, many, n), "%s on %d threads: not the one-thread solve "
                  "bit for bit (objective %.17g vs %.17g, passes %d vs %d)",
                  atf_method_name(sets[k].method), threads, many ? many->info.objective : NAN,
                  one->info.objective, many ? many->info.operator_passes : -1,
                  one->info.operator_passes);
            atf_result_free(many);
        }
        atf_result_free(one);
    }
    openblas_set_num_threads(saved);
    atf_problem_free(p);
}

int main(void)
{
    test_threads();
    test_jacobian();
    test_preconditioner();
    test_against_fista();
    test_alm();
    test_nonconvex();
    test_units();
    test_checkpoints();
    test_continuation();
    return atf_test_finish("test_newton");
}
