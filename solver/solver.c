/* solver.c — atf_solver_init / atf_solver_solve / atf_solver_free and the result assembly.
 *
 * init does everything that does not depend on the run: settings and problem validation, the
 * method/loss/structure check, the cores of the exact subspace reduction, the single
 * factorisation of AAᵀ with the least-squares point and the consistency decision, the warm start
 * mapped into the cores, and the data-scaled initial ρ. A penalized loss (squared, xent) skips
 * the factorisation: FISTA is matrix-free and the M × M Gram is never formed. solve runs the
 * method and fills a result with the blocks expanded back to their original shapes,
 * certificates, loss and penalty values, timings and Theorem 2 factors. */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solver_cg.h"
#include "solver_newton.h"

/* Relative constraint residual an answer may have before it is reported as solved: √ε, or the
 * consistency tolerance of the projection when that is looser (rank-deficient A). */
#define ANSWER_RESIDUAL_TOL 1.5e-8

/* The warm start's blocks mapped into the cores (C = Q_cᵀ B Q_r). atf_result_check guarantees
 * the same blocks, in the same order, with the same shapes. */
static atf_error map_warm_start(atf_solver *s, char *err)
{
    const atf_result *warm = s->hooks.warm;
    atf_error e = atf_result_check(warm, s->prob, "warm start", NULL, err);
    if (e != ATF_OK)
        return e;
    s->warm = malloc((s->n ? s->n : 1) * sizeof *s->warm);
    if (!s->warm) {
        atf_errorf(err, "warm start: out of memory");
        return ATF_E_NOMEM;
    }
    for (int l = 0; l < s->nvars; l++) {
        const atf_sv_var *v = &s->vars[l];
        if (atf_sv_restrict(v, warm->blocks[l].B, s->warm + v->off) != 0) {
            atf_errorf(err, "warm start: out of memory");
            return ATF_E_NOMEM;
        }
    }
    atf_sv_to_scaled(s, s->warm, s->n);
    for (size_t i = 0; i < s->n; i++)
        if (!isfinite(s->warm[i])) {
            atf_errorf(err, "warm start: non-finite values in /blocks/*/B");
            return ATF_E_INPUT;
        }
    return ATF_OK;
}

static int same_omega(const atf_omega *a, const atf_omega *b)
{
    return a->family == b->family && a->scale == b->scale &&
           (a->family != ATF_FAMILY_POW || a->p == b->p);
}

/* The `full` structure is one vector block with one penalty (the factors of atf_result_factors
 * need it too): every block must carry the same one. */
static atf_error check_full_penalty(const atf_problem *prob, char *err)
{
    const atf_block *first = &prob->blocks[0];
    for (int l = 1; l < prob->nblocks; l++) {
        const atf_block *b = &prob->blocks[l];
        if (!same_omega(&first->penalty.w1, &b->penalty.w1) ||
            !same_omega(&first->penalty.w2, &b->penalty.w2)) {
            atf_errorf(err, "structure full: blocks %s ('%s') and %s ('%s') have different "
                            "penalties, but all parameters form one vector block with one penalty "
                            "(override the penalty of every block)", first->name, first->penalty_spec,
                       b->name, b->penalty_spec);
            return ATF_E_USAGE;
        }
    }
    return ATF_OK;
}

/* The equilibrated data (rows scaled as `mode` says), their cores, and the factorisation with
 * the least-squares point and the consistency decision. */
static atf_error build(atf_solver *s, atf_sv_eq_mode mode, char *err)
{
    atf_error e = atf_sv_equilibrate_mode(s, mode, err);
    if (e == ATF_OK)
        e = atf_sv_vars_build(s, err);
    if (e == ATF_OK && s->set.method == ATF_METHOD_LP)
        e = atf_sv_lp_check(s, err);
    if (e == ATF_OK)
        e = atf_sv_prox_alloc(s, err);
    if (e == ATF_OK)
        e = atf_sv_proj_setup(s, err);
    return e;
}

/* The matrix-free methods: the data (rows scaled as `mode` says) and their cores, no projection,
 * no least-squares point; r counts as consistent (nothing is decided up front). */
static atf_error build_matrix_free(atf_solver *s, atf_sv_eq_mode mode, char *err)
{
    atf_error e = atf_sv_equilibrate_mode(s, mode, err);
    if (e == ATF_OK)
        e = atf_sv_vars_build(s, err);
    if (e == ATF_OK)
        e = atf_sv_prox_alloc(s, err);
    s->rnorm = e == ATF_OK ? atf_sv_norm(s->work.r, (size_t)s->work.M) : 0.0;
    s->consistent = 1;
    s->ls_residual = NAN;
    return e;
}

/* A penalized loss: the data in the variable unit only (rows as they are: the loss sees the
 * predictions scale ∘ A'x, which undo any row scaling, so the iterates would not change while
 * a row-scaled copy would double the memory of A). */
static atf_error build_penalized(atf_solver *s, char *err)
{
    atf_error e = atf_loss_check(&s->set.loss, s->prob, "problem", err);
    return e == ATF_OK ? build_matrix_free(s, ATF_EQ_NONE, err) : e;
}

static int penalized(const atf_solver *s)
{
    return s->set.loss.kind != ATF_LOSS_INTERPOLATE;
}

/* The augmented Lagrangian: interpolation without the Gram. The row-equilibrated data (A'x = r'
 * is the same constraint; rows of very different sizes would otherwise weigh unevenly in σ‖·‖²);
 * consistency is not decided up front (no projection): an inconsistent r shows as a constraint
 * residual that σ cannot bring down. */
static atf_error build_alm(atf_solver *s, char *err)
{
    return build_matrix_free(s, ATF_EQ_ROWS, err);
}

static void release_build(atf_solver *s)
{
    atf_sv_vars_free(s);
    atf_sv_proj_free(&s->proj);
    memset(&s->proj, 0, sizeof s->proj);
    free(s->x_ls);
    s->x_ls = NULL;
    atf_sv_equilibrate_free(s);
}

/* Where ADMM's projection can factor the Gram (docs/solver.md §2.1): in double where it fits the
 * memory; else, on one process, by PCG with the Gram in single precision where that fits; else
 * nowhere. why says which and why (atf_sv_gram_fits's reason, and the single precision's size). */
typedef enum { GRAM_NOWHERE, GRAM_DOUBLE, GRAM_SINGLE } gram_room;

static gram_room room_for_gram(const atf_solver *s, char *why, size_t len)
{
    const atf_processes *procs = s->hooks.processes;
    double need = 0.0;
    if (atf_sv_gram_fits(s->prob, procs, 0, why, len))
        return GRAM_DOUBLE;
    if ((procs && procs->size > 1) || !atf_sv_cg_gram32_fits(s->prob->M, &need))
        return GRAM_NOWHERE;
    size_t used = strlen(why);
    snprintf(why + used, len - used, "; in single precision %.3g GiB",
             need / (1024.0 * 1024.0 * 1024.0));
    return GRAM_SINGLE;
}

/* ADMM's projection by PCG with the single-precision Gram as preconditioner where only that
 * fits; ATF_ADMM_PROJECTION=cg|gram decides instead, for the tests and measurements (ADMM's
 * iterates are the same either way, to the projection's tolerance). The reason goes into the
 * result's note. */
static int admm_projection_by_cg(atf_solver *s)
{
    const char *env = getenv("ATF_ADMM_PROJECTION");
    char why[200] = "";
    int cg;
    if (env && (!strcmp(env, "cg") || !strcmp(env, "gram"))) {
        cg = !strcmp(env, "cg");
        snprintf(why, sizeof why, "ATF_ADMM_PROJECTION=%s", env);
    } else {
        cg = room_for_gram(s, why, sizeof why) == GRAM_SINGLE;
    }
    if (cg) {
        size_t used = strlen(s->note);
        snprintf(s->note + used, sizeof s->note - used,
                 "%sadmm: projection by PCG with the single-precision Gram (%s)",
                 used ? "; " : "", why);
    }
    return cg;
}

/* Consistency is decided on the row-equilibrated data: rows of very different sizes would
 * otherwise fall below the rank cutoff of the Gram (rows × 1e-8 next to rows × 1: a false
 * `infeasible`). Inconsistent data are rebuilt with one common row factor, which keeps the
 * least-squares point and residual that are reported the unweighted ones (docs/solver.md §7). */
static atf_error setup(atf_solver *s, char *err)
{
    atf_error e = ATF_OK;
    if (s->set.structure == ATF_GLOBAL_FULL)
        e = check_full_penalty(s->prob, err);
    if (e == ATF_OK && penalized(s))
        e = build_penalized(s, err);
    else if (e == ATF_OK && s->set.method == ATF_METHOD_ALM)
        e = build_alm(s, err);
    else if (e == ATF_OK && s->set.method == ATF_METHOD_CG)
        e = atf_sv_cg_build(s, err); /* matrix-free: no Gram, consistency decided by the run */
    else if (e == ATF_OK && s->set.method == ATF_METHOD_ADMM && admm_projection_by_cg(s))
        e = atf_sv_cg_build_projection(s, err);
    else if (e == ATF_OK)
        e = build(s, ATF_EQ_ROWS, err);
    if (e == ATF_OK && !s->consistent) {
        release_build(s);
        e = build(s, ATF_EQ_COMMON, err);
    }
    if (e == ATF_OK && s->hooks.warm)
        e = map_warm_start(s, err);
    if (e == ATF_OK && s->set.method == ATF_METHOD_ADMM)
        atf_sv_rho_init(s);
    return e;
}

/* The method `auto` stands for (docs/solver.md "Choosing the method"), decided once here:
 * Newton for the penalized losses (faster to a certified point than FISTA at every size
 * measured), for interpolation ADMM on the M × M Gram where it fits the memory it needs,
 * estimated up front, then ADMM with its projection by PCG where the Gram fits in single
 * precision on one process, and otherwise the matrix-free augmented Lagrangian. */
static void resolve_auto(atf_solver *s)
{
    char why[200];
    if (s->set.baseline) {
        s->set.method = atf_baseline_method(s->prob, s->hooks.processes, why, sizeof why);
        snprintf(s->note, sizeof s->note, "auto: %s", why);
        return;
    }
    if (penalized(s)) {
        s->set.method = ATF_METHOD_NEWTON;
        snprintf(s->note, sizeof s->note, "auto: a penalized loss: newton");
        return;
    }
    /* ADMM: the Gram at any M, in double or as its projection's preconditioner in single
     * precision (admm_projection_by_cg then puts the reason into the note) */
    gram_room room = room_for_gram(s, why, sizeof why);
    s->set.method = room == GRAM_NOWHERE ? ATF_METHOD_ALM : ATF_METHOD_ADMM;
    if (room == GRAM_SINGLE)
        snprintf(s->note, sizeof s->note, "auto: admm");
    else
        snprintf(s->note, sizeof s->note, "auto: %s: %s", why, room == GRAM_DOUBLE ? "admm" : "alm");
}

atf_error atf_solver_init(const atf_problem *prob, const atf_settings *set,
                          const atf_hooks *hooks, atf_solver **out, char *err)
{
    double t0 = atf_now();
    if (!out || !prob) {
        atf_errorf(err, "atf_solver_init: problem and output pointer are required");
        return ATF_E_USAGE;
    }
    *out = NULL;
    atf_settings settings = set ? *set : atf_settings_default();
    atf_error e = atf_sv_settings_check(&settings, hooks, err);
    if (e != ATF_OK)
        return e;
    e = atf_problem_validate(prob, "problem", err);
    if (e != ATF_OK)
        return e;
    atf_solver *s = calloc(1, sizeof *s);
    if (!s) {
        atf_errorf(err, "solver: out of memory");
        return ATF_E_NOMEM;
    }
    s->prob = prob;
    s->set = settings;
    if (hooks)
        s->hooks = *hooks;
    s->requested = settings.method;
    if (s->set.method == ATF_METHOD_AUTO)
        resolve_auto(s);
    e = atf_sv_shards_init(s, err);
    if (e == ATF_OK)
        e = setup(s, err);
    if (e != ATF_OK) {
        atf_solver_free(s);
        return e;
    }
    s->t.setup = atf_now() - t0;
    *out = s;
    return ATF_OK;
}

void atf_solver_free(atf_solver *s)
{
    if (!s)
        return;
    release_build(s);
    free(s->warm);
    free(s);
}

/* The least-squares point, reported as it is (baseline, or an infeasible problem). */
static void least_squares_result(atf_solver *s, atf_result *res, double *x, atf_status status)
{
    memcpy(x, s->x_ls, s->n * sizeof *x);
    res->info.status = status;
    res->info.iterations = 0;
    res->info.primal_residual = 0.0;
    res->info.dual_residual = 0.0;
    double xn = s->n ? cblas_dnrm2((int)s->n, x, 1) : 0.0;
    res->info.stationarity = atf_sv_stationarity(s, x, NULL, 1e-12 * xn);
}

/* The result's blocks from the stacked x (expanded out of the cores), then objective,
 * constraint residual on the original operators, and the Theorem 2 factors. */
static atf_error finish(atf_solver *s, atf_result *res, const double *x, char *err)
{
    const atf_problem *prob = s->prob;
    double **Bs = malloc((size_t)prob->nblocks * sizeof *Bs);
    double *resid = malloc((size_t)prob->M * sizeof *resid);
    if (!Bs || !resid) {
        free(Bs), free(resid);
        atf_errorf(err, "result: out of memory");
        return ATF_E_NOMEM;
    }
    for (int l = 0; l < s->nvars; l++) {
        Bs[l] = res->blocks[l].B;
        if (atf_sv_expand(&s->vars[l], x + s->vars[l].off, Bs[l]) != 0) {
            free(Bs), free(resid);
            atf_errorf(err, "result: out of memory expanding block %s", s->vars[l].orig->name);
            return ATF_E_NOMEM;
        }
        atf_sv_unscale(s, Bs[l], (size_t)prob->blocks[l].rows * (size_t)prob->blocks[l].cols);
    }
    res->info.penalty_value = atf_sv_unscale_objective(s, atf_sv_objective(s, x));
    res->info.objective = res->info.penalty_value;
    atf_sv_residual(s, Bs, resid);
    double cres = cblas_dnrm2(prob->M, resid, 1), rnorm = cblas_dnrm2(prob->M, prob->r, 1);
    res->info.constraint_residual = rnorm > 0.0 ? cres / rnorm : cres;
    if (res->info.status == ATF_STATUS_SOLVED && !penalized(s) && rnorm > 0.0 &&
        !(res->info.constraint_residual <= 1e-6)) {
        /* the work units held the answer, the problem's units cannot (e.g. B ~ 1e-460) */
        snprintf(s->check, sizeof s->check, "the answer is not representable in the problem's "
                 "units (relative constraint residual %.3e there)", res->info.constraint_residual);
        res->info.status = ATF_STATUS_NUMERICAL_ERROR;
    }
    res->info.ls_residual = s->ls_residual;
    if (penalized(s)) { /* the loss of the answer, on the problem's own data and units */
        for (int m = 0; m < prob->M; m++)
            resid[m] += prob->r[m]; /* A vec B */
        res->info.loss_value = atf_loss_value(&s->set.loss, prob->N, prob->C, resid, prob->r,
                                         prob->f0, prob->labels, NULL);
        res->info.objective = res->info.loss_value + res->info.penalty_value;
    }
    free(Bs), free(resid);
    return atf_result_factors(res, prob, err);
}

/* What replaces an answer that failed: the least-squares point for interpolation, B = 0 (the
 * predictions f0) for a penalized loss, which has no least-squares point. */
static const char *fallback_name(const atf_solver *s)
{
    return penalized(s) ? "B = 0" : "the least-squares point";
}

/* The fallback point in place of an answer that failed, with status numerical_error. */
static void fall_back(atf_solver *s, atf_result *res, double *x)
{
    int iterations = res->info.iterations;
    if (penalized(s)) {
        memset(x, 0, s->n * sizeof *x);
        res->info.status = ATF_STATUS_NUMERICAL_ERROR;
        res->info.stationarity = res->info.pg_residual = res->info.duality_gap = NAN;
    } else {
        least_squares_result(s, res, x, ATF_STATUS_NUMERICAL_ERROR);
    }
    res->info.iterations = iterations;
}

/* A penalized answer has no constraint to check; it must be finite and carry a finite
 * proximal-gradient residual (its certificate). */
static void check_penalized_answer(atf_solver *s, atf_result *res, double *x)
{
    if (atf_sv_all_finite(x, s->n) && isfinite(res->info.pg_residual) && !isnan(res->info.stationarity))
        return;
    snprintf(s->check, sizeof s->check, "%s returned a point without a finite certificate",
             atf_method_name(res->info.method));
    fall_back(s, res, x);
}

/* No method reports `solved` for an answer that does not satisfy the constraints or has no
 * finite certificate: its residual is measured again on the (equilibrated) data it solved. */
static void check_answer(atf_solver *s, atf_result *res, double *x)
{
    if (res->info.status != ATF_STATUS_SOLVED)
        return;
    if (penalized(s)) {
        check_penalized_answer(s, res, x);
        return;
    }
    double cres = atf_sv_constraint_norm(s, x, s->work.r);
    if (s->rnorm > 0.0)
        cres /= s->rnorm;
    double tol = fmax(ANSWER_RESIDUAL_TOL, s->proj.feas_tol);
    if (!(cres <= tol))
        snprintf(s->check, sizeof s->check, "%s returned a point with relative constraint "
                 "residual %.3e (tolerance %.1e)", atf_method_name(res->info.method), cres, tol);
    else if (!atf_sv_all_finite(x, s->n) || isnan(res->info.stationarity))
        snprintf(s->check, sizeof s->check, "%s returned a point without a finite certificate",
                 atf_method_name(res->info.method));
    else
        return;
    fall_back(s, res, x);
}

/* FISTA from the warm start, or from B = 0 (the predictions f0). */
static atf_error run_fista(atf_solver *s, atf_result *res, double *x, char *err)
{
    if (s->warm)
        memcpy(x, s->warm, s->n * sizeof *x);
    else
        memset(x, 0, s->n * sizeof *x);
    atf_pg_info info;
    atf_error e = atf_sv_fista(s, &s->set.loss, res, x, &info, err);
    res->info.pg_residual = info.pg_residual;
    res->info.duality_gap = info.duality_gap;
    return e;
}

/* Newton-CG from the warm start or B = 0; where its line search kept failing it says so and
 * FISTA continues from its last point with the iterations left. */
static atf_error run_newton(atf_solver *s, atf_result *res, double *x, char *err)
{
    if (s->warm)
        memcpy(x, s->warm, s->n * sizeof *x);
    else
        memset(x, 0, s->n * sizeof *x);
    atf_pg_info info;
    int gave_up = 0;
    atf_error e = atf_sv_newton(s, &s->set.loss, res, x, &info, &gave_up, err);
    res->info.pg_residual = info.pg_residual;
    res->info.duality_gap = info.duality_gap;
    if (e != ATF_OK || !gave_up)
        return e;
    int steps = res->info.iterations, cg = res->info.inner_iterations, fallbacks = res->info.fallback_steps;
    size_t used = strlen(res->info.method_note);
    snprintf(res->info.method_note + used, sizeof res->info.method_note - used,
             "%snewton: the line search failed %d times in a row after %d steps (pg residual "
             "%.2e): fista continued from there", used ? "; " : "", fallbacks, steps,
             info.pg_residual);
    int budget = s->set.max_iter;
    s->set.max_iter = budget - steps > 1 ? budget - steps : 1;
    e = atf_sv_fista(s, &s->set.loss, res, x, &info, err);
    s->set.max_iter = budget;
    res->info.pg_residual = info.pg_residual;
    res->info.duality_gap = info.duality_gap;
    res->info.iterations += steps;
    res->info.inner_iterations = cg;
    res->info.fallback_steps = fallbacks;
    return e;
}

static atf_error run_method(atf_solver *s, atf_result *res, double *x, char *err)
{
    if (!s->consistent) { /* r ∉ range(A): report the least-squares point */
        least_squares_result(s, res, x, ATF_STATUS_INFEASIBLE);
        return ATF_OK;
    }
    if (s->hooks.resume && s->set.method != ATF_METHOD_NEWTON &&
        s->set.method != ATF_METHOD_ALM && s->set.method != ATF_METHOD_CG &&
        s->set.method != ATF_METHOD_ADMM) {
        atf_errorf(err, "a checkpoint can only be resumed by method newton, alm, cg or admm "
                        "(this solve's method is %s)", atf_method_name(s->set.method));
        return ATF_E_USAGE;
    }
    switch (s->set.method) {
    case ATF_METHOD_ADMM: return atf_sv_admm(s, res, x, err);
    case ATF_METHOD_LP: return atf_sv_lp(s, res, x, err);
    case ATF_METHOD_BASELINE:
        least_squares_result(s, res, x, ATF_STATUS_SOLVED);
        return ATF_OK;
    case ATF_METHOD_FISTA: return run_fista(s, res, x, err);
    case ATF_METHOD_IRLS: {
        atf_irls_info info;
        return atf_sv_irls(s, res, x, &info, err);
    }
    case ATF_METHOD_NEWTON: return run_newton(s, res, x, err);
    case ATF_METHOD_ALM: return atf_sv_alm(s, res, x, err);
    case ATF_METHOD_CG: return atf_sv_baseline_cg(s, res, x, err);
    case ATF_METHOD_AUTO: /* resolved by atf_solver_init */
        break;
    }
    atf_errorf(err, "solver: unknown method");
    return ATF_E_USAGE;
}

/* The methods that work through A and Aᵀ products only (their work is counted in passes). */
static int matrix_free(atf_method m)
{
    return m == ATF_METHOD_FISTA || m == ATF_METHOD_NEWTON || m == ATF_METHOD_ALM ||
           m == ATF_METHOD_CG;
}

static void status_message(const atf_solver *s, const atf_result *res, char *err)
{
    if (res->info.method == ATF_METHOD_CG && atf_sv_cg_status_message(s, res, err))
        return;
    switch (res->info.status) {
    case ATF_STATUS_SOLVED: break;
    case ATF_STATUS_INFEASIBLE:
        atf_errorf(err, "the constraints are inconsistent (r is not in the range of A): relative "
                        "least-squares residual %.3e above the tolerance %.1e; the "
                        "least-squares point is returned", s->ls_residual, s->proj.feas_tol);
        break;
    case ATF_STATUS_MAX_ITERATIONS:
        if (res->info.method == ATF_METHOD_FISTA)
            atf_errorf(err, "fista stopped at the iteration limit %d (pg residual %.3e); the "
                            "last iterate is returned", res->info.iterations, res->info.pg_residual);
        else if (res->info.method == ATF_METHOD_IRLS)
            atf_errorf(err, "irls stopped at the iteration limit %d (relative step %.3e); the "
                            "last iterate is returned", res->info.iterations, res->info.primal_residual);
        else
            atf_errorf(err, "%s stopped at the iteration limit %d (primal residual %.3e, dual "
                            "residual %.3e); the last iterate is returned",
                       atf_method_name(res->info.method), res->info.iterations, res->info.primal_residual,
                       res->info.dual_residual);
        break;
    case ATF_STATUS_INTERRUPTED:
        atf_errorf(err, "%s interrupted after %d iterations; the last iterate is returned",
                   atf_method_name(res->info.method), res->info.iterations);
        break;
    case ATF_STATUS_NUMERICAL_ERROR:
        if (s->check[0]) {
            atf_errorf(err, "%s; %s is returned", s->check, fallback_name(s));
            break;
        }
        atf_errorf(err, "%s broke down numerically after %d iterations; %s is returned",
                   atf_method_name(res->info.method), res->info.iterations,
                   res->info.method == ATF_METHOD_FISTA || res->info.method == ATF_METHOD_NEWTON
                       ? "the last finite iterate (or B = 0)"
                   : res->info.method == ATF_METHOD_IRLS ? "the last iterate"
                                                    : "the least-squares point");
        break;
    }
}

atf_error atf_solver_solve(atf_solver *s, atf_result **out, char *err)
{
    if (!s || !out) {
        atf_errorf(err, "atf_solver_solve: solver and output pointer are required");
        return ATF_E_USAGE;
    }
    *out = NULL;
    double t0 = atf_now();
    s->t.projection = s->t.prox = 0.0;
    atf_result *res = atf_result_alloc(s->prob);
    double *x = malloc((s->n ? s->n : 1) * sizeof *x);
    if (!res || !x) {
        atf_result_free(res), free(x);
        atf_errorf(err, "solver: out of memory for the result");
        return ATF_E_NOMEM;
    }
    res->info.method = s->set.method;
    res->structure = s->set.structure;
    snprintf(res->info.method_note, sizeof res->info.method_note, "%s", s->note);
    atf_loss_format(&s->set.loss, res->loss, sizeof res->loss); /* the whole spec, with λ */
    s->check[0] = '\0';
    s->passes = 0;
    atf_error e = run_method(s, res, x, err);
    if (matrix_free(res->info.method))
        res->info.operator_passes = s->passes > INT_MAX ? INT_MAX : (int)s->passes;
    if (e == ATF_OK) {
        check_answer(s, res, x);
        e = finish(s, res, x, err);
    }
    free(x);
    if (e != ATF_OK) {
        atf_result_free(res);
        return e;
    }
    res->info.setup_seconds = s->t.setup;
    res->info.projection_seconds = s->t.projection;
    res->info.prox_seconds = s->t.prox;
    res->info.solve_seconds = s->t.setup + (atf_now() - t0);
    res->info.other_seconds = fmax(0.0, res->info.solve_seconds - res->info.setup_seconds -
                                        res->info.projection_seconds - res->info.prox_seconds);
    *out = res;
    status_message(s, res, err);
    return ATF_OK;
}

atf_error atf_solve(const atf_problem *prob, const atf_settings *set, const atf_hooks *hooks,
                    atf_result **out, char *err)
{
    atf_solver *s = NULL;
    if (out)
        *out = NULL;
    atf_error e = atf_solver_init(prob, set, hooks, &s, err);
    if (e != ATF_OK)
        return e;
    e = atf_solver_solve(s, out, err);
    atf_solver_free(s);
    return e;
}
