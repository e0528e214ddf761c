/* alm.c — problem (16) with exact interpolation, min Σ Ω̃(B) s.t. A vec B = r, by an augmented
 * Lagrangian whose subproblems are the penalized problem with the squared loss, solved by the
 * matrix-free Newton method (newton.c) — no M × M Gram, so no limit from M (docs/record/solver.md
 * §16).
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
 * Subproblems are solved to a tolerance that follows the outer residuals (inexact ALM).
 *
 * Checkpoints (hooks.checkpoint / hooks.resume) are taken at the top of a Newton step of any
 * subproblem (one outer iteration can take hours): the multiplier, σ and the outer bookkeeping,
 * then the Newton run's state (newton.c). Its sketch is not kept (n × rank numbers): it is built
 * again at the σ it was first built at and scaled through the same σ's, so a resumed solve is
 * the uninterrupted one bit for bit. */
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
#define ALM_STATE "alm state 1"

typedef struct {
    const atf_sv_budget *b;     /* the run's: outer iterations, tolerance, verbose */
    double *y, *target, *resid; /* [M] multiplier, shifted target, A'x − r' (work units) */
    double *weight;             /* [M] row scale / the largest (exact powers of two ≤ 1) */
    double sigma, feas, feas_prev, stationarity, eps_inner;
    int outer, newton_steps;
    int steps_before;           /* the Newton run's steps when this subproblem began */
    double start;
    atf_solver *s;              /* for the checkpoints (save_state) */
    atf_newton *nw;
    int resumed;                /* the subproblem under way is a checkpoint's */
    char key[ATF_CHECKPOINT_KEYLEN]; /* of this solve's checkpoints */
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
            atf_structure_name(s->structure));
    atf_sv_log(s, "atf alm: sigma0 %.3e (work units), eps_rel %.1e, constraint tolerance %.1e\n",
            a->sigma, a->b->eps, ALM_FEAS);
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
        return atf_newton_init(s, &loss, a->b, nw, err);
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

/* ---- checkpoints ----------------------------------------------------------------------------
 * Inside outer iteration `outer`, at the top of a Newton step: the header below, the multiplier
 * y [M] (the subproblem's target is r' − y/σ), then the Newton run's state. At the iteration
 * limit, outer is max_iter + 1: the top of the subproblem that did not start. */
enum { AL_MAGIC, AL_VERSION, AL_M, AL_OUTER, AL_SIGMA, AL_STEPS_BEFORE, AL_FEAS, AL_FEAS_PREV,
       AL_STATIONARITY, AL_EPS_INNER, AL_NEWTON_STEPS, AL_ELAPSED, AL_SKETCH_SIGMA, AL_HEADER };
#define AL_MAGIC_VALUE 2.4163e7 /* "ATF ALM state", any fixed value that is not a count */
#define AL_VERSION_VALUE 1.0
#define AL_CHAIN_MAX 64         /* σ values from the sketch's to the subproblem's at most */

static size_t state_len(const atf_solver *s)
{
    return AL_HEADER + (size_t)s->work.M + atf_newton_state_len(s);
}

/* The Newton run's host checkpoint (atf_newton_checkpoint_by): 0, or −1 when the caller could
 * not keep the state (the run then ends, and atf_newton_checkpoint_failed says why). */
static int save_state(void *ctx)
{
    alm_state *a = ctx;
    atf_solver *s = a->s;
    int M = s->work.M;
    atf_checkpoint cp = {.len = (int64_t)state_len(s)};
    memcpy(cp.key, a->key, sizeof cp.key);
    double *h = cp.data = malloc((size_t)cp.len * sizeof *cp.data);
    if (!h)
        return -1;
    h[AL_MAGIC] = AL_MAGIC_VALUE, h[AL_VERSION] = AL_VERSION_VALUE, h[AL_M] = M;
    h[AL_OUTER] = a->outer, h[AL_SIGMA] = a->sigma, h[AL_STEPS_BEFORE] = a->steps_before;
    h[AL_FEAS] = a->feas, h[AL_STATIONARITY] = a->stationarity;
    h[AL_FEAS_PREV] = isinf(a->feas_prev) ? -1.0 : a->feas_prev; /* a state is finite */
    h[AL_EPS_INNER] = a->eps_inner, h[AL_NEWTON_STEPS] = a->newton_steps;
    h[AL_ELAPSED] = atf_now() - a->start, h[AL_SKETCH_SIGMA] = atf_newton_sketch_weight(a->nw);
    memcpy(h + AL_HEADER, a->y, (size_t)M * sizeof *h);
    atf_newton_state_save(s, a->nw, h + AL_HEADER + M);
    int r = s->hooks.checkpoint(s->hooks.checkpoint_ctx, &cp);
    free(cp.data);
    if (r != 0)
        return -1;
    if (a->b->verbose)
        atf_sv_log(s, "atf alm: checkpoint kept in outer iteration %d, Newton step %d\n",
                   a->outer, atf_newton_steps(a->nw));
    return 0;
}

static atf_error damaged(const atf_solver *s, const atf_checkpoint *cp, char *err)
{
    atf_errorf(err, "alm: the checkpoint's state is not an augmented Lagrangian state of %d rows "
                    "and %zu variables (%lld numbers, or its header is damaged)",
               s->work.M, s->n, (long long)cp->len);
    return ATF_E_INPUT;
}

/* The σ's the sketch went through: from the one it was built at, ×ALM_GROW, up to the
 * subproblem's (next_sigma's products, so the same numbers); 0 if `last` is not among them. */
static int sigma_chain(double built, double last, double *chain)
{
    int count = 0;
    for (double w = built; count < AL_CHAIN_MAX && w <= last; w *= ALM_GROW) {
        chain[count++] = w;
        if (w == last)
            return count;
    }
    return 0;
}

/* Go on from hooks.resume: the outer bookkeeping, y, the subproblem's loss, the Newton run and
 * its sketch. */
static atf_error resume_state(atf_solver *s, alm_state *a, atf_newton *nw, char *err)
{
    const atf_checkpoint *cp = s->hooks.resume;
    const double *h = cp->data;
    int M = s->work.M;
    atf_error e = atf_sv_checkpoint_is_ours("alm", cp, a->key, err);
    if (e)
        return e;
    if ((size_t)cp->len != state_len(s) || h[AL_MAGIC] != AL_MAGIC_VALUE ||
        h[AL_VERSION] != AL_VERSION_VALUE || h[AL_M] != M || !(h[AL_OUTER] >= 1.0) ||
        !atf_sv_count_ok(h[AL_OUTER], a->b->max_iter + 1.0) || !(h[AL_SIGMA] > 0.0) ||
        !atf_sv_count_ok(h[AL_STEPS_BEFORE], INT_MAX) ||
        !atf_sv_count_ok(h[AL_NEWTON_STEPS], INT_MAX) || !(h[AL_SKETCH_SIGMA] >= 0.0))
        return damaged(s, cp, err);
    double chain[AL_CHAIN_MAX];
    int nchain = h[AL_SKETCH_SIGMA] > 0.0 ? sigma_chain(h[AL_SKETCH_SIGMA], h[AL_SIGMA], chain)
                                          : -1;
    if (nchain == 0)
        return damaged(s, cp, err);
    a->outer = (int)h[AL_OUTER], a->sigma = h[AL_SIGMA], a->steps_before = (int)h[AL_STEPS_BEFORE];
    a->feas = h[AL_FEAS], a->stationarity = h[AL_STATIONARITY];
    a->feas_prev = h[AL_FEAS_PREV] < 0.0 ? INFINITY : h[AL_FEAS_PREV];
    a->eps_inner = h[AL_EPS_INNER], a->newton_steps = (int)h[AL_NEWTON_STEPS];
    memcpy(a->y, h + AL_HEADER, (size_t)M * sizeof *a->y);
    set_target(s, a);
    atf_newton_set_weight(s, nw, a->sigma, a->target); /* not started: the loss only */
    e = atf_newton_state_load(s, nw, h + AL_HEADER + M, cp->len - AL_HEADER - M, err);
    if (e)
        return e;
    int done = atf_newton_steps(nw) - a->steps_before;
    if (done < 0 || done > ALM_INNER_MAX)
        return damaged(s, cp, err);
    if (nchain > 0 && atf_newton_rebuild_sketch(s, nw, chain, nchain) != 0) {
        atf_errorf(err, "alm: the checkpoint's preconditioner could not be built again");
        return ATF_E_NUMERICAL;
    }
    a->start = atf_now() - h[AL_ELAPSED];
    a->resumed = 1;
    if (a->b->verbose)
        atf_sv_log(s, "atf alm: resumed from a checkpoint in outer iteration %d, Newton step %d "
                      "(%.0f s into the solve)\n", a->outer, atf_newton_steps(nw), h[AL_ELAPSED]);
    return ATF_OK;
}

/* The start: σ0 from the data, x from the warm start or 0 — or the checkpoint's state. */
static atf_error alm_start(atf_solver *s, alm_state *a, atf_newton *nw, double *x, double *u,
                           double *g, char *err)
{
    a->s = s, a->nw = nw;
    if (!s->hooks.processes && s->hooks.checkpoint)
        atf_newton_checkpoint_by(nw, save_state, a);
    if (!s->hooks.processes && (s->hooks.checkpoint || s->hooks.resume)) {
        atf_error e = atf_sv_checkpoint_key(s, ALM_STATE, &s->loss, a->b->eps, NULL,
                                            a->key, err);
        if (e)
            return e;
    }
    row_weights(atf_newton_loss(nw), a->weight);
    if (s->hooks.resume) {
        atf_error e = resume_state(s, a, nw, err);
        if (e == ATF_OK)
            memcpy(x, atf_newton_point(nw), s->n * sizeof *x);
        if (e == ATF_OK && a->b->verbose)
            log_header(s, a);
        return e;
    }
    a->outer = 1;
    a->sigma = initial_sigma(s, nw, g, u);
    a->eps_inner = 1e-1;
    a->feas_prev = INFINITY;
    if (a->b->verbose)
        log_header(s, a);
    atf_sv_start(s, x);
    return ATF_OK;
}

/* At the solve's iteration limit the state at the top of the next subproblem is kept (outer =
 * max_iter + 1), so that a solve run again from it with a larger limit goes on as if it had
 * never stopped. */
static atf_error keep_at_limit(atf_solver *s, alm_state *a, char *err)
{
    if (!s->hooks.checkpoint || s->hooks.processes)
        return ATF_OK;
    set_target(s, a);
    atf_newton_set_weight(s, a->nw, a->sigma, a->target);
    a->steps_before = atf_newton_steps(a->nw);
    if (save_state(a) == 0)
        return ATF_OK;
    atf_errorf(err, "alm: the checkpoint at the iteration limit could not be kept");
    return ATF_E_IO;
}

atf_error atf_sv_alm_run(atf_solver *s, const atf_sv_budget *b, atf_result *res, double *x,
                         char *err)
{
    atf_newton *nw = NULL;
    alm_state a = {.b = b, .start = atf_now()};
    double *u = NULL, *g = NULL;
    atf_error e = alm_alloc(s, &a, &nw, &u, &g, err);
    if (e != ATF_OK) {
        atf_newton_free(nw), free(u), free(g), free_state(&a);
        return e;
    }
    size_t n = s->n;
    if ((e = alm_start(s, &a, nw, x, u, g, err)) != ATF_OK) {
        atf_newton_free(nw), free(u), free(g), free_state(&a);
        return e;
    }
    atf_status status = ATF_STATUS_MAX_ITERATIONS;
    for (; a.outer <= b->max_iter; a.outer++) {
        int inner_max = ALM_INNER_MAX;
        if (a.resumed) { /* the checkpoint's subproblem, its loss set by resume_state */
            inner_max -= atf_newton_steps(nw) - a.steps_before;
            a.resumed = 0;
        } else {
            set_target(s, &a);
            atf_newton_set_weight(s, nw, a.sigma, a.target);
            a.steps_before = atf_newton_steps(nw);
        }
        int gave_up = 0;
        atf_status st = atf_newton_run(s, nw, x, a.eps_inner, inner_max, 0, &gave_up);
        a.newton_steps += atf_newton_steps(nw) - a.steps_before;
        if (atf_newton_checkpoint_failed(nw)) {
            atf_newton_free(nw), free(u), free(g), free_state(&a);
            atf_errorf(err, "alm: the checkpoint in outer iteration %d could not be kept",
                       a.outer);
            return ATF_E_IO;
        }
        memcpy(x, atf_newton_point(nw), n * sizeof *x);
        if (st == ATF_STATUS_INTERRUPTED || st == ATF_STATUS_NUMERICAL_ERROR) {
            status = st;
            break;
        }
        update(s, &a, x, u, g);
        if (b->verbose)
            log_row(s, &a, atf_sv_unscale_objective(s, atf_sv_objective(s, x)));
        atf_sv_progress(s, (atf_solve_progress){.method = "alm", .iteration = a.outer,
                                          .max_iterations = b->max_iter,
                                          .measure = fmax(a.feas / ALM_FEAS,
                                                          a.stationarity / b->eps),
                                          .tolerance = 1.0, .passes = s->passes});
        if (a.feas <= ALM_FEAS && a.stationarity <= b->eps &&
            st == ATF_STATUS_SOLVED) {
            status = ATF_STATUS_SOLVED;
            break;
        }
        next_sigma(&a, b->eps);
    }
    if (status == ATF_STATUS_MAX_ITERATIONS && (e = keep_at_limit(s, &a, err)) != ATF_OK) {
        atf_newton_free(nw), free(u), free(g), free_state(&a);
        return e;
    }
    if (a.outer > b->max_iter)
        a.outer = b->max_iter;
    res->info.status = status;
    res->info.iterations = a.outer;
    res->info.inner_iterations = atf_newton_cg_steps(nw);
    res->info.fallback_steps = atf_newton_fallbacks(nw);
    res->info.primal_residual = a.feas;
    res->info.dual_residual = NAN;
    res->info.stationarity = a.stationarity;
    s->passes += atf_newton_sketch_passes(nw);
    if (b->verbose)
        atf_sv_log(s, "atf alm: %s after %d outer iterations (%d Newton steps, %d CG "
                               "steps, %ld passes): constraint residual %.3e, stationarity "
                               "%.3e, sigma %.3e, %.2f s\n",
                atf_status_name(res->info.status), a.outer, a.newton_steps, res->info.inner_iterations,
                s->passes, a.feas, a.stationarity, a.sigma, atf_now() - a.start);
    atf_newton_free(nw);
    free(u), free(g), free_state(&a);
    return ATF_OK;
}
