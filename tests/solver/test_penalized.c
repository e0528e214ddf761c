/* test_penalized.c — the penalized problem (16) (squared and cross-entropy losses, FISTA) and
 * the IRLS alternation for interpolation, against references this test computes itself.
 *
 * Checks: loss specs (round trip, one-line refusals) and the problem checks of xent; the
 * cross-entropy value is stable and its gradient matches central differences; in the solver's
 * units the stacked gradient matches differences of the objective, the Bregman divergence the
 * plain difference, Fenchel–Young holds for the loss conjugate, and ω̃* matches a brute-force
 * supremum; the matrix-free FISTA equals the closed-form Gram solution B = Aᵀ(AAᵀ + 2λI)⁻¹r
 * of the Frobenius penalty with a squared loss (rows of very different scale, factored, dense
 * and sparse blocks); xent with nuclear and Frobenius penalties equals a long plain
 * proximal-gradient run on the dense A (own SVD soft-threshold and softmax) to 1e-6; λ → 0
 * approaches ADMM's interpolating solution; the duality gap and proximal-gradient residual are
 * small at the answer; IRLS never increases its objective (convex and nonconvex penalties) and
 * reaches ADMM's optimum on convex ones. */
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf_test.h"
#include "solver_penalized.h"

#include "solver_fixtures.h"

/* The penalized problem through the public API: settings.loss with method fista. */
static atf_error solve_hooked(const atf_problem *p, atf_settings set, atf_loss loss,
                              const atf_hooks *hooks, atf_result **res, char *err)
{
    set.loss = loss;
    set.method = ATF_METHOD_FISTA;
    return atf_solve(p, &set, hooks, res, err);
}

static atf_error solve_penalized(const atf_problem *p, atf_settings set, atf_loss loss,
                                 atf_result **res, char *err)
{
    return solve_hooked(p, set, loss, NULL, res, err);
}

/* ---- loss specs -------------------------------------------------------------------------- */

static void test_specs(void)
{
    const char *good[] = {"interpolate", "squared:lambda=0.01", "xent:lambda=1e-05",
                          "squared:lambda=3"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        atf_loss l, back;
        char err[ATF_ERRLEN] = "", buf[ATF_LOSS_SPECLEN];
        CHECK(atf_loss_parse(good[i], &l, err) == ATF_OK, "%s: %s", good[i], err);
        atf_loss_format(&l, buf, sizeof buf);
        CHECK(atf_loss_parse(buf, &back, err) == ATF_OK && back.kind == l.kind &&
                  back.lambda == l.lambda, "%s formats as %s, which does not read back", good[i],
              buf);
    }
    const char *bad[] = {"", "squared", "squared:", "squared:lambda=", "squared:lambda=0",
                         "xent:lambda=-1", "xent:lambda=inf", "xent:lambda=nan",
                         "squared:lambda=1x", "squared:lam=1", "hinge:lambda=1", "interpolatex",
                         "xent:lambda= 1", "squared:lambda=1,lambda=2"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        atf_loss l;
        char err[ATF_ERRLEN] = "";
        CHECK(atf_loss_parse(bad[i], &l, err) == ATF_E_INPUT, "'%s' accepted", bad[i]);
        CHECK(strncmp(err, "loss \"", 6) == 0 && !strchr(err, '\n'), "'%s': message '%s'",
              bad[i], err);
    }
    static const int shape[1][2] = {{2, 3}};
    atf_problem *p = factored(1, 4, 1, 1, shape, "sq", 0);
    atf_loss x = {ATF_LOSS_XENT, 1.0};
    char err[ATF_ERRLEN] = "";
    CHECK(atf_loss_check(&x, p, "p.h5", err) == ATF_E_INPUT && strstr(err, "2 outputs"),
          "xent with C = 1: %s", err);
    atf_problem_free(p);
    p = factored(1, 4, 3, 1, shape, "sq", 0);
    CHECK(atf_loss_check(&x, p, "p.h5", err) == ATF_E_INPUT && strstr(err, "/labels"),
          "xent without labels: %s", err);
    add_labels(p, 2, 0);
    p->labels[2] = 3;
    CHECK(atf_loss_check(&x, p, "p.h5", err) == ATF_E_INPUT && strstr(err, "example 2"),
          "label out of range: %s", err);
    atf_solver *s = NULL;
    atf_settings xs = atf_settings_default();
    xs.loss = x, xs.method = ATF_METHOD_FISTA;
    CHECK(atf_solver_init(p, &xs, NULL, &s, err) == ATF_E_INPUT && !s && strstr(err, "example 2"),
          "solver accepted a bad label: %s", err);
    p->labels[2] = 0;
    CHECK(atf_loss_check(&x, p, "p.h5", err) == ATF_OK, "%s", err);
    /* methods and losses go together: fista only with a penalized loss, the others only with
     * interpolate; irls takes no warm start */
    struct {
        atf_method method;
        atf_loss_kind kind;
        const char *says;
    } refused[] = {{ATF_METHOD_FISTA, ATF_LOSS_INTERPOLATE, "fista needs a penalized loss"},
                   {ATF_METHOD_ADMM, ATF_LOSS_SQUARED, "admm solves the interpolation"},
                   {ATF_METHOD_LP, ATF_LOSS_XENT, "needs method fista, newton or factored"},
                   {ATF_METHOD_BASELINE, ATF_LOSS_SQUARED, "needs method fista, newton or factored"},
                   {ATF_METHOD_IRLS, ATF_LOSS_XENT, "needs method fista, newton or factored"}};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        atf_settings mismatch = atf_settings_default();
        mismatch.method = refused[i].method;
        mismatch.loss = (atf_loss){refused[i].kind, refused[i].kind ? 1.0 : 0.0};
        s = NULL;
        CHECK(atf_solver_init(p, &mismatch, NULL, &s, err) == ATF_E_USAGE && !s &&
                  strstr(err, refused[i].says) && !strchr(err, '\n'),
              "method %s with loss %s: %s", atf_method_name(refused[i].method),
              atf_loss_name(refused[i].kind), err);
    }
    atf_settings zero = atf_settings_default();
    zero.loss = (atf_loss){ATF_LOSS_SQUARED, 0.0};
    zero.method = ATF_METHOD_FISTA;
    CHECK(atf_solver_init(p, &zero, NULL, &s, err) == ATF_E_USAGE && strstr(err, "lambda"),
          "lambda 0 accepted: %s", err);
    atf_problem_free(p);
}

/* ---- values and gradients ---------------------------------------------------------------- */

static void test_xent_gradient(void)
{
    atf_test_rng rng;
    atf_test_rng_seed(&rng, 11);
    int N = 5, C = 4, M = N * C;
    double *pred = atf_test_new_normal(&rng, (size_t)M), *f0 = atf_test_new_normal(&rng, (size_t)M);
    double grad[20], gp[20];
    int labels[5] = {0, 3, 1, 1, 2};
    atf_loss loss = {ATF_LOSS_XENT, 0.3};
    double v = atf_loss_value(&loss, N, C, pred, NULL, f0, labels, grad);
    /* an independent evaluation: the plain formula (safe for these small logits) */
    double ref = 0.0;
    for (int i = 0; i < N; i++) {
        double sum = 0.0;
        for (int k = 0; k < C; k++)
            sum += exp(f0[i * C + k] + pred[i * C + k]);
        ref += log(sum) - f0[i * C + labels[i]] - pred[i * C + labels[i]];
    }
    CHECK(rel_diff(v, ref / 0.3) < 1e-13, "xent %.17g vs %.17g", v, ref / 0.3);
    double worst = 0.0;
    for (int m = 0; m < M; m++) {
        double h = 1e-6, keep = pred[m];
        pred[m] = keep + h;
        double up = atf_loss_value(&loss, N, C, pred, NULL, f0, labels, NULL);
        pred[m] = keep - h;
        double down = atf_loss_value(&loss, N, C, pred, NULL, f0, labels, NULL);
        pred[m] = keep;
        worst = fmax(worst, fabs((up - down) / (2 * h) - grad[m]));
    }
    CHECK(worst < 1e-8, "xent gradient vs central differences: %.3g", worst);
    /* stability: logits of ±1000 give finite values and the same gradient as shifted ones */
    for (int m = 0; m < M; m++)
        pred[m] = 1000.0 * (m % 3 == 0 ? 1.0 : -1.0);
    v = atf_loss_value(&loss, N, C, pred, NULL, NULL, labels, grad);
    for (int m = 0; m < M; m++)
        pred[m] -= 990.0;
    double v2 = atf_loss_value(&loss, N, C, pred, NULL, NULL, labels, gp);
    CHECK(isfinite(v) && rel_diff(v, v2) < 1e-12 && max_rel_diff((size_t)M, grad, gp) < 1e-12,
          "xent at large logits: %.17g vs %.17g", v, v2);
    CHECK(atf_loss_lipschitz(&loss) == 0.5 / 0.3, "xent Lipschitz bound");
    /* the Hessian bound: ‖∇L(p + h d) − ∇L(p)‖ ≤ ‖h d‖/(2λ) for random d */
    for (int trial = 0; trial < 20; trial++) {
        atf_test_fill_normal(&rng, (size_t)M, pred);
        atf_loss_value(&loss, N, C, pred, NULL, f0, labels, grad);
        double d[20], nd = 0.0, ng = 0.0;
        atf_test_fill_normal(&rng, (size_t)M, d);
        for (int m = 0; m < M; m++)
            pred[m] += 0.5 * d[m], nd += 0.25 * d[m] * d[m];
        atf_loss_value(&loss, N, C, pred, NULL, f0, labels, gp);
        for (int m = 0; m < M; m++)
            ng += (gp[m] - grad[m]) * (gp[m] - grad[m]);
        CHECK(sqrt(ng) <= atf_loss_lipschitz(&loss) * sqrt(nd) * (1 + 1e-12),
              "xent gradient changes faster than the Lipschitz bound");
    }
    free(pred), free(f0);
}

/* In work units: ⟨∇F_loss(x), d⟩ against differences, Bregman against the plain difference,
 * Fenchel–Young for the conjugate, for both losses on a problem with spread row scales. */
static void test_work_units(void)
{
    static const int shapes[2][2] = {{3, 4}, {4, 2}};
    atf_problem *p = factored(5, 5, 3, 2, shapes, "sq", 3);
    add_labels(p, 6, 1);
    make_dense(p, 1, 0);
    atf_loss losses[2] = {{ATF_LOSS_SQUARED, 0.7}, {ATF_LOSS_XENT, 0.7}};
    for (int li = 0; li < 2; li++) {
        atf_solver *s = NULL;
        char err[ATF_ERRLEN] = "";
        atf_settings set = atf_settings_default();
        set.loss = losses[li], set.method = ATF_METHOD_FISTA;
        CHECK(atf_solver_init(p, &set, NULL, &s, err) == ATF_OK, "%s", err);
        if (!s)
            continue;
        atf_pg_loss pl;
        CHECK(atf_pg_loss_init(s, &losses[li], &pl, err) == ATF_OK, "%s", err);
        atf_test_rng rng;
        atf_test_rng_seed(&rng, 9);
        size_t n = s->n;
        int M = p->M;
        double *x = atf_test_new_normal(&rng, n), *d = atf_test_new_normal(&rng, n);
        double *z = atf_test_alloc((size_t)M), *u = atf_test_alloc((size_t)M);
        double *g = atf_test_alloc(n), *z1 = atf_test_alloc((size_t)M);
        cblas_dscal((int)n, 0.01, x, 1);
        atf_sv_apply(s, x, z);
        double v0 = atf_pg_loss_eval(&pl, z, u);
        atf_sv_adjoint(s, u, g);
        double h = 1e-6 * atf_sv_norm(x, n) / atf_sv_norm(d, n);
        for (size_t i = 0; i < n; i++)
            x[i] += h * d[i];
        atf_sv_apply(s, x, z1);
        double up = atf_pg_loss_eval(&pl, z1, NULL);
        for (size_t i = 0; i < n; i++)
            x[i] -= 2 * h * d[i];
        atf_sv_apply(s, x, z1);
        double down = atf_pg_loss_eval(&pl, z1, NULL);
        double dd = cblas_ddot((int)n, g, 1, d, 1);
        CHECK(fabs((up - down) / (2 * h) - dd) < 1e-6 * fabs(dd) + 1e-12 * v0,
              "%s: directional derivative %.12g vs differences %.12g", atf_loss_name(losses[li].kind),
              dd, (up - down) / (2 * h));
        /* Bregman vs the plain difference at a moderate step */
        for (size_t i = 0; i < n; i++)
            x[i] += h * d[i] + 0.05 * d[i] * atf_sv_norm(x, n) / atf_sv_norm(d, n);
        atf_sv_apply(s, x, z1);
        double v1 = atf_pg_loss_eval(&pl, z1, NULL), lin = 0.0;
        for (int m = 0; m < M; m++)
            lin += u[m] * (z1[m] - z[m]);
        double plain = v1 - v0 - lin, breg = atf_pg_loss_bregman(&pl, z, z1);
        CHECK(breg >= 0.0 && fabs(breg - plain) < 1e-8 * fabs(v0) + 1e-6 * breg,
              "%s: Bregman %.12g vs plain %.12g", atf_loss_name(losses[li].kind), breg, plain);
        /* Fenchel–Young: φ(z) + φ*(∇φ(z)) = ⟨∇φ(z), z⟩ */
        double conj = atf_pg_loss_conjugate(&pl, u), inner = cblas_ddot(M, u, 1, z, 1);
        CHECK(fabs(v0 + conj - inner) < 1e-10 * (fabs(v0) + fabs(conj) + fabs(inner)),
              "%s: Fenchel–Young %.15g + %.15g vs %.15g", atf_loss_name(losses[li].kind), v0,
              conj, inner);
        /* and the Fenchel–Young inequality at another point */
        CHECK(v1 + conj >= cblas_ddot(M, u, 1, z1, 1) - 1e-10 * fabs(v1 + conj),
              "%s: Fenchel–Young inequality fails", atf_loss_name(losses[li].kind));
        free(x), free(d), free(z), free(u), free(g), free(z1);
        atf_pg_loss_free(&pl);
        atf_solver_free(s);
    }
    atf_problem_free(p);
}

/* ω̃*(u) against max over a fine v grid of uv − ω̃(v) (refined around the best grid point). */
static void test_omega_conjugate(void)
{
    const char *specs[] = {"fixed", "sq", "sq:scale=0.3", "zsq:scale=2", "pow:p=3",
                           "pow:p=4+pow:p=4", "nuclear:scale=0.5"};
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        atf_penalty pen;
        char err[ATF_ERRLEN];
        atf_penalty_parse(specs[i], &pen, err);
        double bound = atf_penalty_deriv(&pen, 1e12); /* slope far out: sup of the domain */
        double us[] = {0.1, 0.7, 1.5, fmin(0.9 * bound, 20.0), 3.0};
        for (size_t j = 0; j < sizeof us / sizeof us[0]; j++) {
            double u = us[j], best = 0.0, vbest = 0.0;
            for (int k = 0; k <= 20000; k++) { /* v from 1e-6 to 1e8 */
                double v = pow(10.0, -6.0 + 14.0 * k / 20000.0);
                double f = u * v - atf_penalty_value(&pen, v, NULL);
                if (f > best)
                    best = f, vbest = v;
            }
            for (int k = -2000; k <= 2000; k++) { /* refine */
                double v = vbest * (1.0 + 1e-6 * k), f = u * v - atf_penalty_value(&pen, v, NULL);
                best = fmax(best, f);
            }
            double c = atf_pg_omega_conjugate(&pen, u);
            if (u > bound * (1 + 1e-9)) {
                CHECK(isinf(c) || best > 1e3, "%s: u = %g beyond the slope bound but ω̃* = %g",
                      specs[i], u, c);
                continue;
            }
            CHECK(isfinite(c) && c >= best - 1e-9 * (1 + best) && c - best < 1e-6 * (1 + best),
                  "%s: ω̃*(%g) = %.12g vs brute force %.12g", specs[i], u, c, best);
        }
    }
}

/* ---- squared loss: FISTA against the closed form of the Frobenius penalty ------------------ */

/* B = Aᵀα, (AAᵀ + 2λI)α = r minimises ‖B‖²_F + (1/2λ)‖AB − r‖²: the Gram path. */
static double *ridge_reference(const atf_problem *p, double lambda, int n)
{
    int M = p->M;
    double *K = atf_test_alloc((size_t)M * (size_t)M), *alpha = atf_test_alloc((size_t)M);
    memset(K, 0, (size_t)M * (size_t)M * sizeof *K);
    for (int l = 0; l < p->nblocks; l++)
        atf_block_gram(&p->blocks[l], 1.0, K);
    for (int m = 0; m < M; m++)
        K[(size_t)m * (size_t)M + (size_t)m] += 2.0 * lambda;
    memcpy(alpha, p->r, (size_t)M * sizeof *alpha);
    LAPACKE_dposv(LAPACK_ROW_MAJOR, 'L', M, 1, K, M, alpha, 1);
    double *x = atf_test_alloc((size_t)n);
    int off = 0;
    for (int l = 0; l < p->nblocks; l++) {
        atf_block_adjoint(&p->blocks[l], alpha, 0.0, x + off);
        off += p->blocks[l].rows * p->blocks[l].cols;
    }
    free(K), free(alpha);
    return x;
}

static void test_squared_vs_gram(void)
{
    static const int shapes[3][2] = {{12, 9}, {9, 3}, {3, 4}};
    /* variant 0: factored, 1: factored + dense + sparse, 2 and 3: factored under the `full` and
     * `diagonal` structures (the Frobenius penalty is the same function under all three) */
    for (int variant = 0; variant < 4; variant++) {
        atf_problem *p = factored(21 + (uint64_t)(variant % 2), 7, 3, 3, shapes, "fixed", 1);
        if (variant == 1) {
            make_dense(p, 1, 0);
            make_dense(p, 2, 1);
        }
        double lambdas[] = {1.0, 1e-2};
        for (int li = 0; li < 2; li++) {
            atf_loss loss = {ATF_LOSS_SQUARED, lambdas[li]};
            atf_settings set = tight(1e-8);
            set.structure = variant == 2 ? ATF_GLOBAL_FULL
                            : variant == 3 ? ATF_GLOBAL_DIAGONAL : ATF_GLOBAL_LAYER;
            atf_result *res = NULL;
            char err[ATF_ERRLEN] = "";
            atf_error e = solve_penalized(p, set, loss, &res, err);
            CHECK(e == ATF_OK, "variant %d λ %g: %s", variant, lambdas[li], err);
            if (!res)
                continue;
            CHECK(res->info.status == ATF_STATUS_SOLVED, "variant %d λ %g: not solved: %s", variant,
                  lambdas[li], err);
            char spec[ATF_LOSS_SPECLEN];
            atf_loss_format(&loss, spec, sizeof spec);
            CHECK(!strcmp(res->info.method, "fista") && strcmp(res->loss, spec) == 0 &&
                      isnan(res->info.ls_residual), "variant %d: method %s, loss '%s'", variant,
                  res->info.method, res->loss);
            int n;
            double *A = dense_A(p, &n), *ref = ridge_reference(p, lambdas[li], n);
            double *x = stack_result(res, n), *resid = atf_test_alloc((size_t)p->M);
            memcpy(resid, p->r, (size_t)p->M * sizeof *resid);
            cblas_dgemv(CblasRowMajor, CblasNoTrans, p->M, n, 1.0, A, n, x, 1, -1.0, resid, 1);
            double loss_v = cblas_ddot(p->M, resid, 1, resid, 1) / (2 * lambdas[li]);
            double pen_v = cblas_ddot(n, x, 1, x, 1);
            memcpy(resid, p->r, (size_t)p->M * sizeof *resid);
            cblas_dgemv(CblasRowMajor, CblasNoTrans, p->M, n, 1.0, A, n, ref, 1, -1.0, resid, 1);
            double ref_obj = cblas_ddot(p->M, resid, 1, resid, 1) / (2 * lambdas[li]) +
                             cblas_ddot(n, ref, 1, ref, 1);
            CHECK(rel_diff(res->info.objective, ref_obj) < 1e-9,
                  "variant %d λ %g: objective %.15g vs Gram %.15g", variant, lambdas[li],
                  res->info.objective, ref_obj);
            CHECK(rel_dist(x, ref, (size_t)n) < 1e-6, "variant %d λ %g: B differs by %.3g",
                  variant, lambdas[li], rel_dist(x, ref, (size_t)n));
            CHECK(rel_diff(res->info.loss_value, loss_v) < 1e-9 &&
                      rel_diff(res->info.penalty_value, pen_v) < 1e-9,
                  "variant %d: reported loss %.15g / penalty %.15g vs %.15g / %.15g", variant,
                  res->info.loss_value, res->info.penalty_value, loss_v, pen_v);
            CHECK(rel_diff(res->info.objective, res->info.loss_value + res->info.penalty_value) < 1e-14,
                  "objective is not loss + penalty");
            CHECK(res->info.pg_residual <= 1e-8 && res->info.stationarity < 1e-7,
                  "variant %d: pg residual %.3g, stationarity %.3g", variant, res->info.pg_residual,
                  res->info.stationarity);
            CHECK(res->info.duality_gap >= -1e-12 && res->info.duality_gap < 1e-9,
                  "variant %d λ %g: duality gap %.3g", variant, lambdas[li], res->info.duality_gap);
            free(A), free(ref), free(x), free(resid);
            atf_result_free(res);
        }
        atf_problem_free(p);
    }
}

/* The penalized losses solve on the problem's own operator arrays (no equilibrated copy: the
 * loss undoes any row scaling), except for H rows far from unit size, which are still scaled
 * (a copy) without changing the answer; interpolation keeps its row-scaled copy. */
static void test_shared_operator(void)
{
    static const int shapes[3][2] = {{12, 9}, {9, 3}, {3, 4}};
    atf_problem *p = factored(31, 7, 3, 3, shapes, "fixed", 1);
    make_dense(p, 1, 0);
    make_dense(p, 2, 1);
    atf_loss loss = {ATF_LOSS_SQUARED, 0.5};
    char err[ATF_ERRLEN] = "";
    for (int interp = 0; interp < 2; interp++) {
        atf_settings set = atf_settings_default();
        if (!interp)
            set.loss = loss, set.method = ATF_METHOD_FISTA;
        atf_solver *s = NULL;
        CHECK(atf_solver_init(p, &set, NULL, &s, err) == ATF_OK, "%s", err);
        if (!s)
            continue;
        const atf_block *w = s->work.blocks, *b = p->blocks;
        int shared = w[0].H == b[0].H && w[0].D == b[0].D && w[1].J == b[1].J &&
                     w[2].data == b[2].data;
        int copied = w[0].D != b[0].D && w[1].J != b[1].J && w[2].data != b[2].data;
        CHECK(interp ? copied : shared, "%s: operator arrays %s", interp ? "admm" : "fista",
              interp ? "not copied (rows 10^±1 apart need scaling)" : "copied");
        atf_solver_free(s);
    }
    atf_result *ref = NULL, *res = NULL;
    atf_settings set = tight(1e-9);
    CHECK(solve_penalized(p, set, loss, &ref, err) == ATF_OK && ref, "%s", err);
    /* H × 2^200, D × 2^−200: A is the same, but its H rows are far from unit size */
    atf_block *b0 = &p->blocks[0];
    for (size_t i = 0; i < (size_t)p->N * (size_t)b0->rows; i++)
        b0->H[i] = ldexp(b0->H[i], 200);
    for (size_t i = 0; i < (size_t)p->M * (size_t)b0->cols; i++)
        b0->D[i] = ldexp(b0->D[i], -200);
    atf_settings fs = atf_settings_default();
    fs.loss = loss, fs.method = ATF_METHOD_FISTA;
    atf_solver *s = NULL;
    CHECK(atf_solver_init(p, &fs, NULL, &s, err) == ATF_OK && s, "%s", err);
    if (s)
        CHECK(s->work.blocks[0].H != b0->H && s->work.blocks[1].J == p->blocks[1].J,
              "H rows of size 2^200: H is scaled (a copy), the other blocks stay shared");
    atf_solver_free(s);
    CHECK(solve_penalized(p, set, loss, &res, err) == ATF_OK && res, "%s", err);
    if (ref && res)
        CHECK(res->info.status == ATF_STATUS_SOLVED && rel_diff(res->info.objective, ref->info.objective) < 1e-9,
              "H × 2^200: objective %.15g vs %.15g", res->info.objective, ref->info.objective);
    atf_result_free(ref), atf_result_free(res);
    atf_problem_free(p);
}

/* A preset interrupt stops before the first step with B = 0; the iteration limit is reported
 * with a message; the table (with loss, penalty, ETA) is written only when verbose. */
static void test_run_control(void)
{
    static const int shape[1][2] = {{4, 3}};
    atf_problem *p = factored(81, 5, 2, 1, shape, "sq", 1);
    atf_loss loss = {ATF_LOSS_SQUARED, 0.1};
    atf_settings set = tight(1e-10);
    volatile sig_atomic_t stop = 1;
    atf_hooks hooks = {.interrupt = &stop};
    atf_result *res = NULL;
    char err[ATF_ERRLEN] = "";
    CHECK(solve_hooked(p, set, loss, &hooks, &res, err) == ATF_OK && res &&
              res->info.status == ATF_STATUS_INTERRUPTED && res->info.iterations == 0 &&
              res->blocks[0].B[0] == 0.0, "preset interrupt: %s", err);
    atf_result_free(res);
    set.max_iter = 3;
    FILE *log = tmpfile();
    hooks = (atf_hooks){.log = atf_test_log_to, .log_ctx = log};
    set.verbose = 1, set.log_every = 1;
    CHECK(solve_hooked(p, set, loss, &hooks, &res, err) == ATF_OK &&
              strstr(err, "iteration limit 3"), "iteration limit: %s", err);
    CHECK(res && res->info.status == ATF_STATUS_MAX_ITERATIONS && res->info.iterations == 3 && isfinite(res->info.objective), "iteration limit result");
    atf_result_free(res);
    char text[4096] = "";
    rewind(log);
    size_t got = fread(text, 1, sizeof text - 1, log);
    text[got] = '\0';
    CHECK(strstr(text, "atf fista: loss squared:lambda=0.1") && strstr(text, "ETA(s)") &&
              strstr(text, "penalty") && strstr(text, "max_iterations after 3 iterations"),
          "log: %s", text);
    fclose(log);
    atf_problem_free(p);
}

/* ---- cross-entropy: FISTA against a long plain proximal-gradient run -------------------- */

/* Reference on the dense A: one matrix block (rows × cols) with penalty nuclear:scale=γ (prox:
 * soft-threshold of the singular values by 2√γ t) or `fixed` (ω̃ = v², prox v/(1 + 2t)). */
static double ref_objective(const double *A, const double *x, int M, int n, const atf_problem *p,
                            double lambda, int rows, int cols, double gamma, int nuclear,
                            double *grad)
{
    double *z = atf_test_alloc((size_t)M), *gz = atf_test_alloc((size_t)M);
    cblas_dgemv(CblasRowMajor, CblasNoTrans, M, n, 1.0, A, n, x, 1, 0.0, z, 1);
    double loss = 0.0;
    for (int i = 0; i < p->N; i++) {
        double mx = -INFINITY, sum = 0.0;
        const double *zi = z + i * p->C;
        double logit[16] = {0};
        for (int k = 0; k < p->C; k++)
            logit[k] = zi[k] + (p->f0 ? p->f0[i * p->C + k] : 0.0), mx = fmax(mx, logit[k]);
        for (int k = 0; k < p->C; k++)
            sum += exp(logit[k] - mx);
        loss += mx + log(sum) - logit[p->labels[i]];
        for (int k = 0; k < p->C; k++)
            gz[i * p->C + k] = (exp(logit[k] - mx) / sum - (k == p->labels[i])) / lambda;
    }
    if (grad)
        cblas_dgemv(CblasRowMajor, CblasTrans, M, n, 1.0, A, n, gz, 1, 0.0, grad, 1);
    double pen = 0.0;
    if (nuclear) {
        double a[64], sv[8], superb[8];
        memcpy(a, x, (size_t)n * sizeof *a);
        LAPACKE_dgesvd(LAPACK_ROW_MAJOR, 'N', 'N', rows, cols, a, cols, sv, NULL, 1, NULL, 1,
                       superb);
        for (int j = 0; j < (rows < cols ? rows : cols); j++)
            pen += 2.0 * sqrt(gamma) * sv[j];
    } else {
        pen = cblas_ddot(n, x, 1, x, 1);
    }
    free(z), free(gz);
    return loss / lambda + pen;
}

static void ref_prox(double *x, int rows, int cols, double t, double gamma, int nuclear)
{
    int n = rows * cols;
    if (!nuclear) {
        for (int i = 0; i < n; i++)
            x[i] /= 1.0 + 2.0 * t;
        return;
    }
    int k = rows < cols ? rows : cols;
    double a[64], sv[8], U[64], VT[64], superb[8];
    memcpy(a, x, (size_t)n * sizeof *a);
    LAPACKE_dgesvd(LAPACK_ROW_MAJOR, 'S', 'S', rows, cols, a, cols, sv, U, k, VT, cols, superb);
    memset(x, 0, (size_t)n * sizeof *x);
    for (int j = 0; j < k; j++) {
        double s = fmax(sv[j] - 2.0 * sqrt(gamma) * t, 0.0);
        for (int a1 = 0; a1 < rows; a1++)
            for (int b1 = 0; b1 < cols; b1++)
                x[a1 * cols + b1] += s * U[a1 * k + j] * VT[j * cols + b1];
    }
}

static void test_xent_reference(void)
{
    static const int shape[1][2] = {{3, 4}};
    const char *pens[] = {"nuclear:scale=0.04", "fixed"};
    for (int pi = 0; pi < 2; pi++) {
        int nuclear = pi == 0;
        atf_problem *p = factored(31, 6, 3, 1, shape, pens[pi], 0);
        add_labels(p, 32, 1);
        make_dense(p, 0, 0);
        double lambda = 0.5, gamma = 0.04;
        atf_loss loss = {ATF_LOSS_XENT, lambda};
        atf_settings set = tight(1e-11);
        atf_result *res = NULL;
        char err[ATF_ERRLEN] = "";
        CHECK(solve_penalized(p, set, loss, &res, err) == ATF_OK && res &&
                  res->info.status == ATF_STATUS_SOLVED, "%s: %s", pens[pi], err);
        int n, M = p->M;
        double *A = dense_A(p, &n);
        /* plain proximal gradient with t = 1/L, L = ‖A‖²/(2λ) */
        double a[18 * 12], sv[12], superb[12];
        memcpy(a, A, (size_t)M * (size_t)n * sizeof *a);
        LAPACKE_dgesvd(LAPACK_ROW_MAJOR, 'N', 'N', M, n, a, n, sv, NULL, 1, NULL, 1, superb);
        double t = 2.0 * lambda / (sv[0] * sv[0]);
        double x[12] = {0}, g[12];
        double obj = 0.0;
        for (int it = 0; it < 60000; it++) {
            obj = ref_objective(A, x, M, n, p, lambda, 3, 4, gamma, nuclear, g);
            for (int i = 0; i < n; i++)
                x[i] -= t * g[i];
            ref_prox(x, 3, 4, t, gamma, nuclear);
        }
        obj = ref_objective(A, x, M, n, p, lambda, 3, 4, gamma, nuclear, NULL);
        if (res) {
            double *xb = stack_result(res, n);
            double mine = ref_objective(A, xb, M, n, p, lambda, 3, 4, gamma, nuclear, NULL);
            CHECK(rel_diff(res->info.objective, mine) < 1e-10,
                  "%s: reported objective %.15g, recomputed %.15g", pens[pi], res->info.objective,
                  mine);
            CHECK(rel_diff(res->info.objective, obj) < 1e-6 && res->info.objective <= obj * (1 + 1e-12),
                  "%s: FISTA %.15g vs reference %.15g", pens[pi], res->info.objective, obj);
            CHECK(rel_dist(xb, x, (size_t)n) < 1e-4, "%s: B differs from the reference by %.3g",
                  pens[pi], rel_dist(xb, x, (size_t)n));
            CHECK(res->info.duality_gap >= -1e-12 && res->info.duality_gap < 1e-8, "%s: duality gap %.3g",
                  pens[pi], res->info.duality_gap);
            free(xb);
        }
        free(A);
        atf_result_free(res);
        atf_problem_free(p);
    }
}

/* ---- λ → 0 and IRLS against ADMM ---------------------------------------------------------- */

static atf_result *admm_solution_in(const atf_problem *p, atf_global_structure structure)
{
    atf_settings set = tight(1e-11);
    set.structure = structure;
    atf_result *res = NULL;
    char err[ATF_ERRLEN] = "";
    atf_error e = atf_solve(p, &set, NULL, &res, err);
    CHECK(e == ATF_OK && res && res->info.status == ATF_STATUS_SOLVED, "admm: %s", err);
    return res;
}

static atf_result *admm_solution(const atf_problem *p)
{
    return admm_solution_in(p, ATF_GLOBAL_LAYER);
}

/* As λ → 0 the penalized solution tends to the interpolating one (distance O(λ) for a
 * strongly convex penalty); the penalty value stays below the interpolant's. */
static void lambda_limit(const char *penalty, const double *lambdas, int count, double ratio,
                         double final)
{
    static const int shapes[2][2] = {{5, 4}, {4, 2}};
    atf_problem *p = factored(41, 4, 2, 2, shapes, penalty, 0);
    atf_result *ref = admm_solution(p);
    int n = (int)atf_problem_nvars(p);
    double *xr = ref ? stack_result(ref, n) : NULL;
    double prev = INFINITY;
    for (int li = 0; li < count && xr; li++) {
        atf_loss loss = {ATF_LOSS_SQUARED, lambdas[li]};
        atf_settings set = tight(1e-9);
        atf_result *res = NULL;
        char err[ATF_ERRLEN] = "";
        CHECK(solve_penalized(p, set, loss, &res, err) == ATF_OK && res &&
                  res->info.status == ATF_STATUS_SOLVED, "%s λ %g: %s", penalty, lambdas[li], err);
        if (!res)
            continue;
        double *x = stack_result(res, n), d = rel_dist(x, xr, (size_t)n);
        CHECK(d < ratio * prev, "%s λ %g: distance to the interpolant %.3g (previous %.3g)",
              penalty, lambdas[li], d, prev);
        CHECK(res->info.penalty_value <= ref->info.objective * (1 + 1e-9),
              "%s λ %g: penalty %.12g above the interpolant's %.12g", penalty, lambdas[li],
              res->info.penalty_value, ref->info.objective);
        prev = d;
        free(x);
        atf_result_free(res);
    }
    CHECK(prev < final, "%s λ = %g: still %.3g away from the interpolant", penalty,
          lambdas[count - 1], prev);
    free(xr);
    atf_result_free(ref);
    atf_problem_free(p);
}

static void test_lambda_limit(void)
{
    const double lambdas[] = {1e-1, 1e-2, 1e-3};
    lambda_limit("fixed", lambdas, 3, 0.2, 1e-3);
    lambda_limit("sq:scale=0.5", lambdas, 2, 0.2, 1e-2);
}

/* IRLS with at most `iters` iterations: objective (problem units) and the result. */
static double irls_run_in(const atf_problem *p, atf_global_structure structure, int iters,
                          atf_irls_info *info, atf_result **out)
{
    atf_settings set = tight(1e-10);
    set.max_iter = iters;
    set.structure = structure;
    atf_solver *s = NULL;
    char err[ATF_ERRLEN] = "";
    CHECK(atf_solver_init(p, &set, NULL, &s, err) == ATF_OK, "%s", err);
    if (!s)
        return NAN;
    atf_result *res = atf_result_alloc(p);
    double *x = atf_test_alloc(s->n);
    atf_sv_budget budget = atf_sv_budget_of(&set);
    atf_error e = atf_sv_irls(s, &budget, res, x, info, err);
    CHECK(e == ATF_OK, "irls: %s", err);
    for (int l = 0; l < s->nvars; l++) {
        atf_sv_expand(&s->vars[l], x + s->vars[l].off, res->blocks[l].B);
        atf_sv_unscale(s, res->blocks[l].B, (size_t)p->blocks[l].rows * (size_t)p->blocks[l].cols);
    }
    free(x);
    atf_solver_free(s);
    if (out)
        *out = res;
    else
        atf_result_free(res);
    return info->objective;
}

static double irls_run(const atf_problem *p, int iters, atf_irls_info *info, atf_result **out)
{
    return irls_run_in(p, ATF_GLOBAL_LAYER, iters, info, out);
}

/* The weights of vector (`full`) and entrywise (`diagonal`) structures. */
static void test_irls_structures(void)
{
    static const int shapes[2][2] = {{4, 3}, {3, 1}};
    atf_global_structure structures[2] = {ATF_GLOBAL_FULL, ATF_GLOBAL_DIAGONAL};
    for (int i = 0; i < 2; i++) {
        atf_problem *p = factored(71 + (uint64_t)i, 4, 2, 2, shapes, "zsq:scale=0.02", 1);
        make_dense(p, 1, 1);
        atf_result *ref = admm_solution_in(p, structures[i]), *res = NULL;
        atf_irls_info info;
        double obj = irls_run_in(p, structures[i], 3000, &info, &res);
        if (ref && res)
            CHECK(rel_diff(obj, ref->info.objective) < 1e-6 && info.safeguarded == 0,
                  "structure %d: IRLS %.12g vs ADMM %.12g (%d iterations, %d safeguarded, max rise %.3g)", i,
                  obj, ref->info.objective, info.iterations, info.safeguarded, info.max_increase);
        atf_result_free(ref), atf_result_free(res);
        atf_problem_free(p);
    }
}

static void test_irls(void)
{
    static const int shapes[2][2] = {{6, 5}, {5, 3}};
    const char *convex[] = {"sq:scale=0.3", "zsq:scale=0.05", "pow:p=3,scale=0.2"};
    for (int i = 0; i < 3; i++) {
        atf_problem *p = factored(51 + (uint64_t)i, 5, 2, 2, shapes, "sq", 2);
        char err[ATF_ERRLEN];
        atf_problem_set_penalty(p, convex[i], err);
        if (i == 2)
            make_dense(p, 1, 0);
        atf_result *ref = admm_solution(p), *res = NULL;
        atf_irls_info info;
        double obj = irls_run(p, 2000, &info, &res);
        if (ref && res) {
            int n = (int)atf_problem_nvars(p);
            double *x = stack_result(res, n), *xr = stack_result(ref, n);
            CHECK(rel_diff(obj, ref->info.objective) < 1e-6, "%s: IRLS %.12g vs ADMM %.12g",
                  convex[i], obj, ref->info.objective);
            CHECK(rel_dist(x, xr, (size_t)n) < 1e-4, "%s: IRLS B differs from ADMM's by %.3g",
                  convex[i], rel_dist(x, xr, (size_t)n));
            CHECK(res->info.status == ATF_STATUS_SOLVED && res->info.stationarity < 1e-6,
                  "%s: status %d, stationarity %.3g after %d iterations", convex[i],
                  (int)res->info.status, res->info.stationarity, info.iterations);
            /* the same run through the public API (method irls) */
            atf_settings set = tight(1e-10);
            set.max_iter = 2000, set.method = ATF_METHOD_IRLS;
            atf_result *api = NULL;
            char e2[ATF_ERRLEN] = "";
            CHECK(atf_solve(p, &set, NULL, &api, e2) == ATF_OK && api &&
                      api->info.status == ATF_STATUS_SOLVED && !strcmp(api->info.method, "irls") &&
                      rel_diff(api->info.objective, obj) < 1e-12 && api->info.constraint_residual < 1e-10 &&
                      strcmp(api->loss, "interpolate") == 0 && isnan(api->info.loss_value) &&
                      api->info.penalty_value == api->info.objective,
                  "%s: atf_solve with method irls: %s", convex[i], e2);
            atf_result_free(api);
            free(x), free(xr);
        }
        atf_result_free(ref), atf_result_free(res);
        atf_problem_free(p);
    }
    /* monotone: the objective after k iterations never exceeds the one after k − 1 */
    const char *all[] = {"sq:scale=0.3", "abs:scale=0.1", "logsq:scale=0.05", "sq+sq:scale=0.2"};
    for (int i = 0; i < 4; i++) {
        atf_problem *p = factored(61 + (uint64_t)i, 5, 2, 2, shapes, all[i], 2);
        atf_irls_info info;
        double prev = INFINITY, first = NAN;
        for (int k = 1; k <= 12; k++) {
            double obj = irls_run(p, k, &info, NULL);
            if (k == 1)
                first = info.first_objective;
            CHECK(obj <= prev * (1 + 1e-13) && obj <= first * (1 + 1e-13),
                  "%s: objective rose from %.15g to %.15g at iteration %d", all[i], prev, obj, k);
            prev = obj;
        }
        CHECK(prev < first, "%s: IRLS made no progress (%.12g from %.12g)", all[i], prev, first);
        atf_problem_free(p);
    }
}

int main(void)
{
    test_specs();
    test_xent_gradient();
    test_work_units();
    test_omega_conjugate();
    test_squared_vs_gram();
    test_shared_operator();
    test_run_control();
    test_xent_reference();
    test_lambda_limit();
    test_irls();
    test_irls_structures();
    return atf_test_finish("test_penalized");
}
