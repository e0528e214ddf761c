/* alm.c — problem (16) with exact interpolation, min Σ Ω̃(B) s.t. A vec B = r, by an augmented
 * Lagrangian whose subproblems are the penalized problem with the squared loss, solved by the
 * matrix-free Newton method (newton.c) — no M × M Gram, so no limit from M (docs/solver.md §16).
 *
 *     L_σ(x, y) = Σ Ω̃(x) + yᵀ(A x − r) + (σ/2)‖A x − r‖²
 *               = Σ Ω̃(x) + (σ/2)‖A x − (r − y/σ)‖² + const,
 *
 * so each subproblem is `squared:lambda=1/σ` with the shifted target r − y/σ, warm-started from
 * the last point (the Newton context keeps its point, step and preconditioner across them: the
 * squared loss's curvature only scales with σ). Then y ← y + σ(A x − r), which is the loss's
 * gradient ∇_p at the subproblem's answer; σ grows by ALM_GROW whenever the constraint residual
 * did not fall by ALM_DECREASE. Stop when the relative constraint residual is ≤ ALM_FEAS and the
 * stationarity certificate (the relative distance of −Aᵀy from ∂Ω̃(x), as for ADMM) is ≤ eps_rel.
 * Subproblems are solved to a tolerance that follows the outer residuals (inexact ALM). */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solver_newton.h"

#define ALM_FEAS 1e-9       /* relative constraint residual of an answer (solver.c checks 1.5e-8) */
#define ALM_GROW 10.0       /* σ growth when the residual did not fall enough */
#define ALM_DECREASE 0.25   /* ... enough: by this factor */
#define ALM_SIGMA0 10.0     /* σ0 = ALM_SIGMA0 × (the penalty's curvature 2) / ‖A‖² */
#define ALM_INNER_MAX 200   /* Newton steps per subproblem at most */

typedef struct {
    double *y, *target, *pred; /* [M] multiplier, shifted target, predictions (problem units) */
    double sigma, rnorm, feas, feas_prev, stationarity, eps_inner;
    int outer, newton_steps;
    double start;
} alm_state;

static FILE *log_stream(const atf_solver *s)
{
    return s->set.log ? s->set.log : stderr;
}

/* The predictions A vec B of the work point x in the problem's units, and the relative
 * constraint residual ‖A vec B − r‖ / ‖r‖. */
static double constraint_residual(atf_solver *s, const atf_pg_loss *pl, const double *x,
                                  alm_state *a)
{
    atf_sv_apply(s, x, a->pred);
    double sum = 0.0;
    for (int m = 0; m < pl->M; m++) {
        a->pred[m] *= pl->scale[m];
        double d = a->pred[m] - s->prob->r[m];
        sum += d * d;
    }
    return a->rnorm > 0.0 ? sqrt(sum) / a->rnorm : sqrt(sum);
}

static void log_header(atf_solver *s, const alm_state *a)
{
    FILE *f = log_stream(s);
    fprintf(f, "atf alm: %d blocks, %zu variables (%lld before reduction), %d rows, structure "
               "%s; subproblems by newton\n",
            s->nvars, s->n, (long long)s->n_orig, s->prob->M,
            atf_structure_name(s->set.structure));
    fprintf(f, "atf alm: sigma0 %.3e, eps_rel %.1e, constraint tolerance %.1e\n", a->sigma,
            s->set.eps_rel, ALM_FEAS);
    fprintf(f, "%5s %14s %11s %11s %11s %10s %7s %8s %9s\n", "outer", "penalty", "constraint",
            "stationary", "sigma", "inner tol", "newton", "passes", "time(s)");
}

static void log_row(atf_solver *s, const alm_state *a, double penalty)
{
    fprintf(log_stream(s), "%5d %14.7e %11.3e %11.3e %11.3e %10.2e %7d %8ld %9.2f\n", a->outer,
            penalty, a->feas, a->stationarity, a->sigma, a->eps_inner, a->newton_steps,
            s->passes, atf_now() - a->start);
}

/* σ0 from the data: the loss's curvature σ‖A‖² at ALM_SIGMA0 times the penalty's, 2 (ω̃ = v²
 * near 0 for every family), with ‖A‖² in problem units from the first step's power iteration. */
static double initial_sigma(atf_solver *s, atf_pg_loss *pl, double *w, double *zw)
{
    int it;
    double t = atf_pg_first_step(s, pl, w, zw, &it); /* 1/L, L = ‖S A'‖²·κ/λ at λ = 1 */
    return ALM_SIGMA0 * 2.0 * t;
}

static void set_target(const atf_solver *s, alm_state *a)
{
    for (int m = 0; m < s->prob->M; m++)
        a->target[m] = s->prob->r[m] - a->y[m] / a->sigma;
}

static atf_error alloc_state(alm_state *a, int M)
{
    a->y = calloc((size_t)M, sizeof *a->y);
    a->target = malloc((size_t)M * sizeof *a->target);
    a->pred = malloc((size_t)M * sizeof *a->pred);
    return a->y && a->target && a->pred ? ATF_OK : ATF_E_NOMEM;
}

static void free_state(alm_state *a)
{
    free(a->y), free(a->target), free(a->pred);
}

/* The certificates of the point x with the multiplier y: stationarity from −A'ᵀ(κ scale y) (the
 * candidate in range(Aᵀ)), in work units; res gets objective, constraint and stationarity. */
static double stationarity(atf_solver *s, const atf_pg_loss *pl, const double *x,
                           const alm_state *a, double *u, double *g)
{
    for (int m = 0; m < pl->M; m++)
        u[m] = -ldexp(a->y[m], pl->kappa_exp) * pl->scale[m];
    atf_sv_adjoint(s, u, g);
    double tau = 1e-9 * atf_sv_norm(x, s->n);
    return atf_sv_stationarity(s, x, g, tau);
}

atf_error atf_sv_alm(atf_solver *s, atf_result *res, double *x, char *err)
{
    atf_loss loss = {ATF_LOSS_SQUARED, 1.0};
    atf_newton *nw = NULL;
    alm_state a = {.start = atf_now()};
    size_t n = s->n;
    int M = s->prob->M;
    double *u = malloc((size_t)M * sizeof *u), *g = malloc((n ? n : 1) * sizeof *g);
    atf_error e = u && g ? alloc_state(&a, M) : ATF_E_NOMEM;
    if (e == ATF_OK)
        e = atf_newton_init(s, &loss, &nw, err);
    else
        atf_errorf(err, "alm: out of memory for %d rows", M);
    if (e != ATF_OK) {
        free(u), free(g), free_state(&a);
        return e;
    }
    a.rnorm = cblas_dnrm2(M, s->prob->r, 1);
    a.sigma = initial_sigma(s, atf_newton_loss(nw), g, u);
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
        if ((e = atf_newton_set_loss(s, nw, 1.0 / a.sigma, a.target, err)) != ATF_OK)
            break;
        int gave_up = 0, before = atf_newton_steps(nw);
        atf_status st = atf_newton_run(s, nw, x, a.eps_inner, ALM_INNER_MAX, 0, &gave_up);
        a.newton_steps += atf_newton_steps(nw) - before;
        memcpy(x, atf_newton_point(nw), n * sizeof *x);
        if (st == ATF_STATUS_INTERRUPTED || st == ATF_STATUS_NUMERICAL_ERROR) {
            status = st;
            break;
        }
        a.feas = constraint_residual(s, atf_newton_loss(nw), x, &a);
        for (int m = 0; m < M; m++) /* y ← y + σ(A x − r) */
            a.y[m] += a.sigma * (a.pred[m] - s->prob->r[m]);
        a.stationarity = stationarity(s, atf_newton_loss(nw), x, &a, u, g);
        if (s->set.verbose)
            log_row(s, &a, atf_sv_unscale_objective(s, atf_sv_objective(s, x)));
        if (a.feas <= ALM_FEAS && a.stationarity <= s->set.eps_rel &&
            st == ATF_STATUS_SOLVED) {
            status = ATF_STATUS_SOLVED;
            break;
        }
        if (a.feas > ALM_DECREASE * a.feas_prev)
            a.sigma *= ALM_GROW;
        a.feas_prev = a.feas;
        /* the subproblems' accuracy follows the outer residuals */
        a.eps_inner = fmax(0.1 * s->set.eps_rel, fmin(a.eps_inner, 0.1 * fmax(a.feas,
                                                                               a.stationarity)));
    }
    if (a.outer > s->set.max_iter)
        a.outer = s->set.max_iter;
    res->status = e == ATF_OK ? status : ATF_STATUS_NUMERICAL_ERROR;
    res->iterations = a.outer;
    res->inner_iterations = atf_newton_cg_steps(nw);
    res->fallback_steps = atf_newton_fallbacks(nw);
    res->primal_residual = a.feas;
    res->dual_residual = NAN;
    res->stationarity = a.stationarity;
    s->passes += atf_newton_sketch_passes(nw);
    if (s->set.verbose)
        fprintf(log_stream(s), "atf alm: %s after %d outer iterations (%d Newton steps, %d CG "
                               "steps, %ld passes): constraint residual %.3e, stationarity "
                               "%.3e, sigma %.3e, %.2f s\n",
                atf_status_name(res->status), a.outer, a.newton_steps, res->inner_iterations,
                s->passes, a.feas, a.stationarity, a.sigma, atf_now() - a.start);
    atf_newton_free(nw);
    free(u), free(g), free_state(&a);
    return e == ATF_E_NOMEM ? e : ATF_OK;
}
