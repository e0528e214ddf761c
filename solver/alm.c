/* alm.c — problem (16) with exact interpolation, min Σ Ω̃(B) s.t. A vec B = r, by an augmented
 * Lagrangian whose subproblems are the penalized problem with the squared loss, solved by the
 * matrix-free Newton method (newton.c) — no M × M Gram, so no limit from M (docs/solver.md §16).
 *
 * Everything happens in work units (rows of A and r scaled to unit size by powers of two, the
 * variables by 2^var_exp; solver.c, equilibrate.c): A' x = r' is the same constraint, and
 *
 *     L_σ(x, y) = Σ Ω̃'(x) + yᵀ(A'x − r') + (σ/2)‖A'x − r'‖²
 *               = Σ Ω̃'(x) + (σ/2)‖A'x − (r' − y/σ)‖² + const,
 *
 * so each subproblem is the squared loss with weight σ and the shifted target r' − y/σ
 * (atf_pg_loss_set_weight), warm-started from the last point (the Newton context keeps its point,
 * step and preconditioner: the loss's curvature only scales with σ). Then y ← y + σ(A'x − r'),
 * and σ grows by ALM_GROW whenever the constraint residual did not fall by ALM_DECREASE. Stop when
 * the relative constraint residual (in work units and in the problem's, from power-of-two ratios
 * of the row scales: no quotient leaves the range of doubles) is ≤ ALM_FEAS and the stationarity
 * certificate (the relative distance of −A'ᵀy from ∂Ω̃'(x), as for ADMM) is ≤ eps_rel.
 * Subproblems are solved to a tolerance that follows the outer residuals (inexact ALM). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solver_newton.h"

#define ALM_FEAS 1e-9       /* relative constraint residual of an answer (solver.c checks 1.5e-8) */
#define ALM_GROW 10.0       /* σ growth when the residual did not fall enough */
#define ALM_DECREASE 0.25   /* ... enough: by this factor */
#define ALM_SIGMA0 20.0     /* σ0 = ALM_SIGMA0 / ‖A'‖² (the penalty's curvature near 0 is 2) */
#define ALM_INNER_MAX 200   /* Newton steps per subproblem at most */

typedef struct {
    double *y, *target, *resid; /* [M] multiplier, shifted target, A'x − r' (work units) */
    double *weight;             /* [M] row scale / the largest (exact powers of two ≤ 1) */
    double sigma, feas, feas_prev, stationarity, eps_inner;
    int outer, newton_steps;
    double start;
} alm_state;

/* ‖v‖ / ‖w‖, 0/0 = 0 and v/0 = ‖v‖ (r = 0: the residual is absolute). */
static double ratio(double v, double w)
{
    return w > 0.0 ? v / w : v;
}

/* resid = A'x − r'; the relative constraint residual, the larger of the work-unit one and the
 * problem-unit one (rows weighted by their scale relative to the largest). */
static double constraint_residual(atf_solver *s, const double *x, alm_state *a)
{
    const double *r = s->work.r;
    atf_sv_apply(s, x, a->resid);
    double dw = 0.0, rw = 0.0, dp = 0.0, rp = 0.0;
    for (int m = 0; m < s->work.M; m++) {
        a->resid[m] -= r[m];
        double d = a->resid[m], dpm = a->weight[m] * d, rpm = a->weight[m] * r[m];
        dw += d * d, rw += r[m] * r[m], dp += dpm * dpm, rp += rpm * rpm;
    }
    return fmax(ratio(sqrt(dw), sqrt(rw)), ratio(sqrt(dp), sqrt(rp)));
}

static void log_header(atf_solver *s, const alm_state *a)
{
    atf_sv_log(s, "atf alm: %d blocks, %zu variables (%lld before reduction), %d rows, structure "
               "%s; subproblems by newton\n",
            s->nvars, s->n, (long long)s->n_orig, s->prob->M,
            atf_structure_name(s->set.structure));
    atf_sv_log(s, "atf alm: sigma0 %.3e (work units), eps_rel %.1e, constraint tolerance %.1e\n",
            a->sigma, s->set.eps_rel, ALM_FEAS);
    atf_sv_log(s, "%5s %14s %11s %11s %11s %10s %7s %8s %9s\n", "outer", "penalty", "constraint",
            "stationary", "sigma", "inner tol", "newton", "passes", "time(s)");
}

static void log_row(atf_solver *s, const alm_state *a, double penalty)
{
    atf_sv_log(s, "%5d %14.7e %11.3e %11.3e %11.3e %10.2e %7d %8ld %9.2f\n", a->outer,
            penalty, a->feas, a->stationarity, a->sigma, a->eps_inner, a->newton_steps,
            s->passes, atf_now() - a->start);
}

static void set_target(const atf_solver *s, alm_state *a)
{
    for (int m = 0; m < s->work.M; m++)
        a->target[m] = s->work.r[m] - a->y[m] / a->sigma;
}

static atf_error alloc_state(alm_state *a, int M)
{
    a->y = calloc((size_t)M, sizeof *a->y);
    a->target = malloc((size_t)M * sizeof *a->target);
    a->resid = malloc((size_t)M * sizeof *a->resid);
    a->weight = malloc((size_t)M * sizeof *a->weight);
    return a->y && a->target && a->resid && a->weight ? ATF_OK : ATF_E_NOMEM;
}

static void free_state(alm_state *a)
{
    free(a->y), free(a->target), free(a->resid), free(a->weight);
}

/* The row scales relative to the largest: exact powers of two in (0, 1]. */
static void row_weights(const atf_pg_loss *pl, double *weight)
{
    int top = INT_MIN;
    for (int m = 0; m < pl->M; m++) {
        int e;
        frexp(pl->scale[m], &e);
        top = e > top ? e : top;
    }
    for (int m = 0; m < pl->M; m++) {
        int e;
        double f = frexp(pl->scale[m], &e);
        weight[m] = ldexp(f, e - top);
    }
}

/* σ0 from the data: ALM_SIGMA0 / ‖A'‖², ‖A'‖² by the first step's power iteration at the loss's
 * initial weight 1 (atf_pg_loss_init with λ = 0). */
static double initial_sigma(atf_solver *s, atf_newton *nw, double *w, double *zw)
{
    int it;
    return ALM_SIGMA0 * atf_pg_first_step(s, atf_newton_loss(nw), w, zw, &it);
}

/* The stationarity certificate of x with the multiplier y: −A'ᵀy against ∂Ω̃'(x). */
static double stationarity(atf_solver *s, const double *x, const alm_state *a, double *u,
                           double *g)
{
    for (int m = 0; m < s->work.M; m++)
        u[m] = -a->y[m];
    atf_sv_adjoint(s, u, g);
    double tau = 1e-9 * atf_sv_norm(x, s->n);
    return atf_sv_stationarity(s, x, g, tau);
}

static atf_error alm_alloc(atf_solver *s, alm_state *a, atf_newton **nw, double **u, double **g,
                           char *err)
{
    atf_loss loss = {ATF_LOSS_SQUARED, 0.0}; /* λ = 0: weights set in work units (below) */
    size_t n = s->n;
    int M = s->work.M;
    *u = malloc((size_t)M * sizeof **u);
    *g = malloc((n ? n : 1) * sizeof **g);
    atf_error e = *u && *g ? alloc_state(a, M) : ATF_E_NOMEM;
    if (e == ATF_OK)
        return atf_newton_init(s, &loss, nw, err);
    atf_errorf(err, "alm: out of memory for %d rows", M);
    return e;
}

/* One outer iteration's bookkeeping after its subproblem: residuals, multiplier, σ, accuracy. */
static void update(atf_solver *s, alm_state *a, const double *x, double *u, double *g)
{
    a->feas = constraint_residual(s, x, a);
    for (int m = 0; m < s->work.M; m++) /* y ← y + σ(A'x − r') */
        a->y[m] += a->sigma * a->resid[m];
    a->stationarity = stationarity(s, x, a, u, g);
}

static void next_sigma(alm_state *a, double eps_rel)
{
    if (a->feas > ALM_DECREASE * a->feas_prev)
        a->sigma *= ALM_GROW;
    a->feas_prev = a->feas;
    /* the subproblems' accuracy follows the outer residuals */
    a->eps_inner = fmax(0.1 * eps_rel, fmin(a->eps_inner, 0.1 * fmax(a->feas, a->stationarity)));
}

atf_error atf_sv_alm(atf_solver *s, atf_result *res, double *x, char *err)
{
    atf_newton *nw = NULL;
    alm_state a = {.start = atf_now()};
    double *u = NULL, *g = NULL;
    atf_error e = alm_alloc(s, &a, &nw, &u, &g, err);
    if (e != ATF_OK) {
        atf_newton_free(nw), free(u), free(g), free_state(&a);
        return e;
    }
    size_t n = s->n;
    row_weights(atf_newton_loss(nw), a.weight);
    a.sigma = initial_sigma(s, nw, g, u);
    a.eps_inner = 1e-1;
    a.feas_prev = INFINITY;
    if (s->set.verbose)
        log_header(s, &a);
    if (s->warm)
        memcpy(x, s->warm, n * sizeof *x);
    else
        memset(x, 0, n * sizeof *x);
    atf_status status = ATF_STATUS_MAX_ITERATIONS;
    for (a.outer = 1; a.outer <= s->set.max_iter; a.outer++) {
        set_target(s, &a);
        atf_newton_set_weight(s, nw, a.sigma, a.target);
        int gave_up = 0, before = atf_newton_steps(nw);
        atf_status st = atf_newton_run(s, nw, x, a.eps_inner, ALM_INNER_MAX, 0, &gave_up);
        a.newton_steps += atf_newton_steps(nw) - before;
        memcpy(x, atf_newton_point(nw), n * sizeof *x);
        if (st == ATF_STATUS_INTERRUPTED || st == ATF_STATUS_NUMERICAL_ERROR) {
            status = st;
            break;
        }
        update(s, &a, x, u, g);
        if (s->set.verbose)
            log_row(s, &a, atf_sv_unscale_objective(s, atf_sv_objective(s, x)));
        if (a.feas <= ALM_FEAS && a.stationarity <= s->set.eps_rel &&
            st == ATF_STATUS_SOLVED) {
            status = ATF_STATUS_SOLVED;
            break;
        }
        next_sigma(&a, s->set.eps_rel);
    }
    if (a.outer > s->set.max_iter)
        a.outer = s->set.max_iter;
    res->info.status = status;
    res->info.iterations = a.outer;
    res->info.inner_iterations = atf_newton_cg_steps(nw);
    res->info.fallback_steps = atf_newton_fallbacks(nw);
    res->info.primal_residual = a.feas;
    res->info.dual_residual = NAN;
    res->info.stationarity = a.stationarity;
    s->passes += atf_newton_sketch_passes(nw);
    if (s->set.verbose)
        atf_sv_log(s, "atf alm: %s after %d outer iterations (%d Newton steps, %d CG "
                               "steps, %ld passes): constraint residual %.3e, stationarity "
                               "%.3e, sigma %.3e, %.2f s\n",
                atf_status_name(res->info.status), a.outer, a.newton_steps, res->info.inner_iterations,
                s->passes, a.feas, a.stationarity, a.sigma, atf_now() - a.start);
    atf_newton_free(nw);
    free(u), free(g), free_state(&a);
    return ATF_OK;
}
