/* fista.c — the penalized problem (16), min_x F(x) = Σ Ω̃(x) + g(x) with g(x) = κ L(scale ∘ A'x),
 * by accelerated proximal gradient (FISTA), matrix-free (docs/record/solver.md §14.
 *
 *   y = x_k + β_k (x_k − x_{k−1}),   x_{k+1} = prox_{tΩ̃}(y − t ∇g(y)),   ∇g(y) = A'ᵀ ∇ℓ(A'y)
 *
 * A'y is a linear combination of the stored A'x_k, so an iteration costs one apply (A'x_{k+1})
 * and one adjoint (per factored block two GEMMs each; the M × M Gram is never formed) plus the
 * blockwise SVD of the prox. Backtracking (Beck–Teboulle) accepts t when the Bregman divergence
 * of g between y and x_{k+1} is at most ‖x_{k+1} − y‖²/(2t), computed without cancellation
 * (pg_loss.c); t grows by 1/0.9 before every step (as TFOCS does), with the classic momentum
 * β_k = (θ_k − 1)/θ_{k+1}, θ_{k+1} = (1 + √(1 + 4θ_k²))/2.
 * Adaptive restart (O'Donoghue–Candès): the gradient scheme resets the momentum when it points
 * against the step (⟨y − x_{k+1}, x_{k+1} − x_k⟩ > 0), and a momentum step that would increase F
 * (beyond rounding) is discarded and replaced by a plain proximal-gradient step from x_k, so F
 * never increases (which also keeps nonconvex penalties safe).
 *
 * Stopping: the relative proximal-gradient residual at a point x with step t,
 *     res(x) = ‖G‖ / max(‖∇g(x)‖, ‖G − ∇g(x)‖),   G = (x − prox_{tΩ̃}(x − t∇g(x)))/t,
 * (G − ∇g(x) ∈ ∂Ω̃ at the prox point: res compares the two terms of 0 ∈ ∇g + ∂Ω̃ that must
 * cancel) is ≤ eps_rel. The residual of each step is measured at y; once it is small, the next
 * step starts at y = x_k (no momentum), so the residual that stops the run is the one of the
 * returned point itself. */
#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solver_method.h"
#include "solver_penalized.h"

/* A momentum step may raise F by rounding (1e-16 relative) near the optimum; only more than
 * this counts as an increase that discards the step. */
#define RESTART_SLACK 1e-13

/* ---- the iteration ----------------------------------------------------------------------- */

typedef struct {
    double *x, *xprev, *y, *w, *g, *xn;  /* [n] */
    double *zx, *zprev, *zy, *zn, *u;    /* [M] */
    double t, theta, F, loss, pen;
    double res;          /* residual of the last step (at y) */
    double eps;          /* the residual that certifies a point (the run's tolerance) */
    int max_iter;        /* the run's iteration budget (for the ETA) */
    int momentum;        /* 0: the next step starts at y = x */
    int iter, restarts, backtracks;
    int power_iterations;  /* used by the first step */
    double start;
    /* ETA: the time per iteration and the residual's decay since the last log row */
    int eta_iter;
    double eta_res, eta_time;
} fista_state;

static double objective_units(const atf_solver *s, double v)
{
    return atf_sv_unscale_objective(s, v);
}

static void log_header(atf_solver *s, const atf_loss *loss, const fista_state *st)
{
    char spec[ATF_LOSS_SPECLEN];
    atf_loss_format(loss, spec, sizeof spec);
    atf_sv_log(s, "atf fista: loss %s, %d blocks, %zu variables (%lld before reduction), %d rows, "
               "structure %s\n",
            spec, s->nvars, s->n, (long long)s->n_orig, s->prob->M,
            atf_structure_name(s->structure));
    atf_sv_log(s, "atf fista: first step %.3e (1/L bound, %d power iterations), eps_rel %.1e, "
               "max_iter %d\n", st->t, st->power_iterations, st->eps, st->max_iter);
    atf_sv_log(s, "%8s %14s %13s %13s %10s %10s %8s %9s %9s\n", "iter", "objective", "loss",
            "penalty", "pg res", "step", "restarts", "time(s)", "ETA(s)");
}

/* Seconds left: the recent seconds per iteration (between the last two table rows, or since
 * the first iteration began for the first row) times the iterations left — those the residual's recent decay
 * rate needs to reach eps_rel, capped by the iteration budget; the whole budget while the
 * residual does not decrease. */
static double eta_seconds(fista_state *st, double now)
{
    double eta = NAN;
    if (st->iter > st->eta_iter) {
        double per_iter = (now - st->eta_time) / (st->iter - st->eta_iter);
        double left = (double)(st->max_iter - st->iter);
        if (st->res <= st->eps) {
            left = 0.0;
        } else if (st->eta_iter > 0 && st->res > 0.0 && st->eta_res > 0.0) {
            double rate = log(st->eta_res / st->res) / (st->iter - st->eta_iter);
            if (rate > 0.0)
                left = fmin(log(st->res / st->eps) / rate, left);
        }
        eta = left * per_iter;
    }
    st->eta_iter = st->iter, st->eta_res = st->res, st->eta_time = now;
    return eta;
}

static void log_row(atf_solver *s, fista_state *st)
{
    double now = atf_now() - st->start, eta = eta_seconds(st, now);
    char etabuf[24];
    if (isfinite(eta))
        snprintf(etabuf, sizeof etabuf, "%9.1f", eta);
    else
        snprintf(etabuf, sizeof etabuf, "%9s", "?");
    atf_sv_log(s, "%8d %14.7e %13.6e %13.6e %10.3e %10.3e %8d %9.2f %s\n", st->iter,
            objective_units(s, st->F), objective_units(s, st->loss), objective_units(s, st->pen),
            st->res, st->t, st->restarts, now, etabuf);
}

static void swap(double **a, double **b)
{
    double *t = *a;
    *a = *b;
    *b = t;
}

/* One step. Returns 1 when the point the step started from is certified (no momentum, residual
 * ≤ eps_rel: it stays the answer), −1 on numerical trouble, 0 to go on. */
static int iterate(atf_solver *s, atf_pg_loss *pl, fista_state *st)
{
    size_t n = s->n;
    int M = pl->M;
    double theta_next = 0.5 * (1.0 + sqrt(1.0 + 4.0 * st->theta * st->theta));
    double beta = st->momentum ? (st->theta - 1.0) / theta_next : 0.0;
    for (size_t i = 0; i < n; i++)
        st->y[i] = st->x[i] + beta * (st->x[i] - st->xprev[i]);
    for (int m = 0; m < M; m++)
        st->zy[m] = st->zx[m] + beta * (st->zx[m] - st->zprev[m]);
    atf_pg_loss_eval(pl, st->zy, st->u);
    atf_sv_adjoint(s, st->u, st->g);
    double t_before = st->t;
    if (atf_pg_step(s, pl, st->y, st->zy, st->g, &st->t, st->w, st->xn, st->zn,
                    &st->backtracks) != 0)
        return -1;
    double pen = atf_sv_prox_objective(s, st->xn);
    double loss = atf_pg_loss_eval(pl, st->zn, NULL);
    double F = pen + loss;
    if (!isfinite(F))
        return -1;
    st->res = atf_pg_residual(st->y, st->xn, st->g, st->t, n);
    if (beta == 0.0 && st->res <= st->eps) /* y = x itself is certified */
        return 1;
    if (beta != 0.0 && F > st->F + RESTART_SLACK * fabs(st->F)) {
        /* the momentum step increased F: discard it, no momentum next time */
        st->restarts++;
        st->momentum = 0;
        st->theta = 1.0;
        st->t = t_before;
        return 0;
    }
    /* gradient scheme: momentum pointing against the step direction is reset */
    double turn = 0.0;
    for (size_t i = 0; i < n; i++)
        turn += (st->y[i] - st->xn[i]) * (st->xn[i] - st->x[i]);
    int reset = beta != 0.0 && turn > 0.0;
    st->restarts += reset;
    swap(&st->xprev, &st->x), swap(&st->x, &st->xn);
    swap(&st->zprev, &st->zx), swap(&st->zx, &st->zn);
    st->F = F, st->loss = loss, st->pen = pen;
    st->theta = reset ? 1.0 : theta_next;
    /* a small residual at y: certify x next time by a step without momentum */
    st->momentum = !(st->res <= st->eps);
    if (!st->momentum)
        st->theta = 1.0;
    return 0;
}

static atf_error alloc_state(fista_state *st, size_t n, int M)
{
    size_t bn = (n ? n : 1) * sizeof(double), bm = (size_t)M * sizeof(double);
    double **vn[] = {&st->x, &st->xprev, &st->y, &st->w, &st->g, &st->xn};
    double **vm[] = {&st->zx, &st->zprev, &st->zy, &st->zn, &st->u};
    int ok = 1;
    for (size_t i = 0; i < sizeof vn / sizeof vn[0]; i++)
        ok = (*vn[i] = calloc(1, bn)) != NULL && ok;
    for (size_t i = 0; i < sizeof vm / sizeof vm[0]; i++)
        ok = (*vm[i] = calloc(1, bm)) != NULL && ok;
    return ok ? ATF_OK : ATF_E_NOMEM;
}

static void free_state(fista_state *st)
{
    free(st->x), free(st->xprev), free(st->y), free(st->w), free(st->g), free(st->xn);
    free(st->zx), free(st->zprev), free(st->zy), free(st->zn), free(st->u);
}

/* Iterations until the supports of the prox (nv counts) have been the same `stable` times in a
 * row — `stable_moving` times once they have changed during the burst (*same < 0: nothing seen
 * yet; *moved: a change seen). */
static int support_settled(atf_solver *s, const double *x, int nv, int *last, int *now, int *same,
                           int *moved, const atf_pg_burst *b)
{
    atf_sv_prox_support(s, x, now);
    int seen = *same >= 0, equal = seen && memcmp(last, now, (size_t)nv * sizeof *now) == 0;
    if (seen && !equal)
        *moved = 1;
    memcpy(last, now, (size_t)nv * sizeof *now);
    *same = equal ? *same + 1 : 0;
    int window = *moved && b->stable_moving > b->stable ? b->stable_moving : b->stable;
    return window > 0 && *same >= window;
}

int atf_sv_fista_burst(atf_solver *s, atf_pg_loss *pl, atf_pg_burst *b)
{
    fista_state st = {.theta = 1.0, .start = atf_now(), .t = b->t, .F = b->F, .pen = b->pen,
                      .loss = b->loss, .res = INFINITY, .eps = b->eps, .max_iter = b->max_iter};
    size_t n = s->n;
    int nv = s->structure == ATF_GLOBAL_FULL ? 1 : s->nvars;
    int *last = calloc((size_t)nv, sizeof *last), *now = calloc((size_t)nv, sizeof *now);
    if (!last || !now || alloc_state(&st, n, pl->M) != ATF_OK) {
        free(last), free(now), free_state(&st);
        return -1;
    }
    memcpy(st.x, b->x, n * sizeof *st.x);
    memcpy(st.zx, b->zx, (size_t)pl->M * sizeof *st.zx);
    int same = -1, moved = 0, it = 0, done = 0;
    while (it < b->max_iter && !atf_sv_interrupted(s)) {
        done = iterate(s, pl, &st);
        it++;
        if (done != 0 || support_settled(s, st.x, nv, last, now, &same, &moved, b))
            break;
    }
    if (done >= 0) {
        memcpy(b->x, st.x, n * sizeof *st.x);
        memcpy(b->zx, st.zx, (size_t)pl->M * sizeof *st.zx);
        b->F = st.F, b->pen = st.pen, b->loss = st.loss, b->t = st.t;
    }
    b->backtracks += st.backtracks;
    free(last), free(now), free_state(&st);
    return done < 0 ? -1 : it;
}

atf_error atf_sv_fista(atf_solver *s, const atf_loss *loss, const atf_sv_budget *b,
                       atf_result *res, double *x, atf_pg_info *info, char *err)
{
    atf_pg_loss pl;
    atf_error e = atf_pg_loss_init(s, loss, &pl, err);
    if (e != ATF_OK)
        return e;
    fista_state st = {.theta = 1.0, .start = atf_now(), .eps = b->eps, .max_iter = b->max_iter};
    memset(info, 0, sizeof *info);
    if (alloc_state(&st, s->n, pl.M) != ATF_OK) {
        free_state(&st), atf_pg_loss_free(&pl);
        atf_errorf(err, "fista: out of memory for %zu variables and %d rows", s->n, pl.M);
        return ATF_E_NOMEM;
    }
    size_t n = s->n;
    memcpy(st.x, x, n * sizeof *x);
    atf_sv_apply(s, st.x, st.zx);
    st.pen = atf_sv_objective(s, st.x);
    st.loss = atf_pg_loss_eval(&pl, st.zx, NULL);
    st.F = st.pen + st.loss;
    st.t = atf_pg_first_step(s, &pl, st.w, st.zn, &st.power_iterations);
    st.res = INFINITY;
    if (b->verbose)
        log_header(s, loss, &st);
    atf_status status = ATF_STATUS_MAX_ITERATIONS;
    st.eta_time = atf_now() - st.start; /* the iterations start here (after the first step) */
    for (st.iter = 1; st.iter <= b->max_iter; st.iter++) {
        if (atf_sv_interrupted(s)) {
            st.iter--;
            status = ATF_STATUS_INTERRUPTED;
            break;
        }
        int done = iterate(s, &pl, &st);
        status = done > 0 ? ATF_STATUS_SOLVED
                          : done < 0 ? ATF_STATUS_NUMERICAL_ERROR : ATF_STATUS_MAX_ITERATIONS;
        if (b->verbose && (done || st.iter == 1 || st.iter % b->log_every == 0 ||
                           st.iter == b->max_iter))
            log_row(s, &st);
        atf_sv_progress(s, (atf_solve_progress){.method = "fista", .iteration = st.iter,
                                          .max_iterations = b->max_iter, .measure = st.res,
                                          .tolerance = b->eps, .passes = s->passes});
        if (done)
            break;
    }
    if (st.iter > b->max_iter)
        st.iter = b->max_iter;
    if (status == ATF_STATUS_NUMERICAL_ERROR && !atf_sv_all_finite(st.x, n)) {
        memset(st.x, 0, n * sizeof *st.x); /* never hand out NaN: B = 0, i.e. f = f0 */
        atf_sv_apply(s, st.x, st.zx);
        st.pen = atf_sv_objective(s, st.x);
        st.loss = atf_pg_loss_eval(&pl, st.zx, NULL);
        st.F = st.pen + st.loss;
    }
    atf_pg_certify(s, &pl, st.x, st.zx, st.t, st.F, st.u, st.g, st.w, st.xn, info, res);
    memcpy(x, st.x, n * sizeof *x);
    res->info.status = status;
    res->info.iterations = st.iter;
    res->info.objective = objective_units(s, st.F);
    res->info.primal_residual = res->info.dual_residual = NAN;
    info->loss_value = objective_units(s, st.loss);
    info->penalty_value = objective_units(s, st.pen);
    info->objective = res->info.objective;
    info->step = st.t;
    info->iterations = st.iter;
    info->restarts = st.restarts;
    info->backtracks = st.backtracks;
    if (b->verbose)
        atf_sv_log(s, "atf fista: %s after %d iterations: loss %.9e, penalty %.9e, "
                               "objective %.9e; pg residual %.3e, stationarity %.3e, duality "
                               "gap %.3e; %d restarts, %d backtracks, %.2f s\n",
                atf_status_name(status), st.iter, info->loss_value, info->penalty_value,
                info->objective, info->pg_residual, res->info.stationarity, info->duality_gap,
                st.restarts, st.backtracks, atf_now() - st.start);
    free_state(&st);
    atf_pg_loss_free(&pl);
    return ATF_OK;
}

/* The method: FISTA from the warm start, or from B = 0 (the predictions f0). */
atf_error atf_sv_fista_run(atf_solver *s, const atf_sv_budget *b, atf_result *res, double *x,
                           char *err)
{
    atf_sv_start(s, x);
    atf_pg_info info;
    atf_error e = atf_sv_fista(s, &s->loss, b, res, x, &info, err);
    res->info.pg_residual = info.pg_residual;
    res->info.duality_gap = info.duality_gap;
    return e;
}
