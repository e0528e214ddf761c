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
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "linsys.h"
#include "solver_method.h"
#include "solver_penalized.h"

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

/* The equilibrated data (rows scaled as `mode` says), their cores, and the linear system set up
 * as `plan` says (a factorisation with the least-squares point and the consistency decision). */
static atf_error build(atf_solver *s, atf_sv_eq_mode mode, atf_sv_proj_plan plan, char *err)
{
    atf_error e = atf_sv_equilibrate_mode(s, mode, err);
    if (e == ATF_OK)
        e = atf_sv_vars_build(s, err);
    if (e == ATF_OK && s->method->check_vars)
        e = s->method->check_vars(s, err);
    if (e == ATF_OK)
        e = atf_sv_prox_alloc(s, err);
    if (e == ATF_OK)
        e = atf_sv_proj_setup(s, plan, err);
    return e;
}

/* The matrix-free methods: the data (rows scaled as `mode` says) and their cores, no projection,
 * no least-squares point; r counts as consistent (nothing is decided up front). */
static atf_error build_matrix_free(atf_solver *s, atf_sv_eq_mode mode, char *err)
{
    atf_error e = atf_sv_equilibrate_mode(s, mode, err);
    if (e == ATF_OK)
        e = atf_sv_vars_build(s, err);
    if (e == ATF_OK && s->method->check_vars)
        e = s->method->check_vars(s, err);
    if (e == ATF_OK)
        e = atf_sv_prox_alloc(s, err);
    s->rnorm = e == ATF_OK ? atf_sv_norm(s->work.r, (size_t)s->work.M) : 0.0;
    s->consistent = 1;
    s->ls_residual = NAN;
    return e;
}

static int penalized(const atf_solver *s)
{
    return s->loss.kind != ATF_LOSS_INTERPOLATE;
}

/* A penalized loss: the data in the variable unit only (rows as they are: the loss sees the
 * predictions scale ∘ A'x, which undo any row scaling, so the iterates would not change while
 * a row-scaled copy would double the memory of A). */
static atf_error build_penalized(atf_solver *s, char *err)
{
    atf_error e = atf_loss_check(&s->loss, s->prob, "problem", err);
    return e == ATF_OK ? build_matrix_free(s, ATF_EQ_NONE, err) : e;
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

/* How a method that projects solves its systems (the chooser's rule for systems solved every
 * iteration; the Gram baseline always factorises): by PCG the note says why. A plan of none
 * (nothing fits) still factorises: the method was asked for by name. */
static atf_sv_proj_plan projection_plan(atf_solver *s)
{
    if (s->set.method == ATF_METHOD_BASELINE)
        return ATF_SV_PROJ_DIRECT;
    char why[200] = "";
    if (atf_linsys_choose(s->prob, s->hooks.processes, &s->set, 1, why, sizeof why) !=
        ATF_LS_PLAN_PCG)
        return ATF_SV_PROJ_DIRECT;
    size_t used = strlen(s->note);
    snprintf(s->note + used, sizeof s->note - used, "%s%s: projection by PCG with the %s (%s)",
             used ? "; " : "", s->method->info.name,
             s->set.precond == ATF_PRECOND_AUTO || s->set.precond == ATF_PRECOND_GRAM32
                 ? "single-precision Gram" : atf_precond_name(s->set.precond), why);
    return ATF_SV_PROJ_PCG;
}

/* Consistency is decided on the row-equilibrated data: rows of very different sizes would
 * otherwise fall below the rank cutoff of the Gram (rows × 1e-8 next to rows × 1: a false
 * `infeasible`). Inconsistent data are rebuilt with one common row factor, which keeps the
 * least-squares point and residual that are reported the unweighted ones (docs/record/solver.md
 * §7). */
static atf_error setup(atf_solver *s, char *err)
{
    atf_error e = ATF_OK;
    if (s->structure == ATF_GLOBAL_FULL)
        e = check_full_penalty(s->prob, err);
    if (e != ATF_OK)
        return e;
    switch (s->method->data) {
    case ATF_SV_DATA_PENALIZED: e = build_penalized(s, err); break;
    case ATF_SV_DATA_ROWS: e = build_alm(s, err); break;
    case ATF_SV_DATA_KRYLOV: /* no Gram: consistency decided by the run */
        e = build(s, ATF_EQ_ROWS, ATF_SV_PROJ_KRYLOV, err);
        break;
    case ATF_SV_DATA_PROJECTION: e = build(s, ATF_EQ_ROWS, projection_plan(s), err); break;
    }
    if (e == ATF_OK && !s->consistent) {
        release_build(s);
        e = build(s, ATF_EQ_COMMON, ATF_SV_PROJ_DIRECT, err);
    }
    if (e == ATF_OK && s->hooks.warm)
        e = map_warm_start(s, err);
    if (e == ATF_OK && s->method->prepare)
        e = s->method->prepare(s, err);
    return e;
}

/* A `balanced` penalty (alone, or joined with `balanced` or `fixed`). */
static int is_balanced(const atf_penalty *pen)
{
    return pen->w1.family == ATF_FAMILY_BALANCED && (pen->w2.family == ATF_FAMILY_BALANCED ||
                                                     pen->w2.family == ATF_FAMILY_FIXED);
}

/* Where the factored method is measured faster than newton (docs/record/solver.md §20, §22):
 * every block `nuclear` (its answer low rank), or, with cross-entropy, every block `balanced`
 * (the factors' L-BFGS brings newton to where its steps are full: Fashion-MNIST N = 500 and
 * 4 000, `balanced+balanced`, 0.67 and 0.82 of newton's passes alone, the same objective) unless
 * from a warm start, where newton's λ continuation is the measured path (docs/record/results.md
 * §7f); each with the matrix structure, the layer structure, one process, and no newton state to
 * resume.
 * why: the reason. */
static int factored_pays(const atf_solver *s, char *why, size_t len)
{
    const char *no = NULL;
    int nuclear = 1, balanced = s->loss.kind == ATF_LOSS_XENT;
    for (int l = 0; l < s->prob->nblocks; l++) {
        nuclear = nuclear && atf_penalty_is_nuclear(&s->prob->blocks[l].penalty);
        balanced = balanced && is_balanced(&s->prob->blocks[l].penalty);
        if (s->prob->blocks[l].structure != ATF_STRUCT_MATRIX)
            no = "a block has not the matrix structure";
    }
    if (!no && !nuclear && !balanced)
        no = s->loss.kind == ATF_LOSS_XENT ? "a block is neither nuclear nor balanced"
                                           : "a block is not nuclear";
    if (!no && !nuclear && s->hooks.warm) /* (the λ paths: newton's continuation, measured) */
        no = "balanced from a warm start";
    if (!no && s->set.structure != ATF_GLOBAL_LAYER)
        no = "the structure is not layer";
    if (!no && s->hooks.resume && strncmp(s->hooks.resume->key, "factored state", 14) != 0)
        no = "the checkpoint to resume is newton's";
    if (!no && s->hooks.processes && s->hooks.processes->size > 1)
        no = "several processes (factored runs in one)";
    if (no)
        snprintf(why, len, "newton (%s)", no);
    else
        snprintf(why, len, nuclear ? "every block nuclear: factored (the rank found in the factors)"
                                   : "every block balanced, cross-entropy: factored (then newton)");
    return no == NULL;
}

/* The method `auto` stands for (docs/solver.md "Choosing the method"), decided once here:
 * for the penalized losses factored where factored_pays, else Newton (faster to a certified
 * point than FISTA at every size measured); for interpolation ADMM where the chooser finds a
 * way to solve its projections (a factorisation, or PCG with the single-precision Gram as
 * preconditioner; projection_plan then says which), otherwise the matrix-free augmented
 * Lagrangian; for the baseline the Gram where the chooser factorises it for one solve, else CG. */
static void resolve_auto(atf_solver *s)
{
    char why[200] = "";
    if (s->set.baseline) {
        atf_ls_plan plan = atf_linsys_choose(s->prob, s->hooks.processes, &s->set, 0, why,
                                             sizeof why);
        s->set.method = plan == ATF_LS_PLAN_DIRECT ? ATF_METHOD_BASELINE : ATF_METHOD_CG;
        snprintf(s->note, sizeof s->note, "auto: %s", why);
        return;
    }
    if (penalized(s)) {
        char factored_why[160];
        int factored = factored_pays(s, factored_why, sizeof factored_why);
        s->set.method = factored ? ATF_METHOD_FACTORED : ATF_METHOD_NEWTON;
        snprintf(s->note, sizeof s->note, "auto: a penalized loss: %s", factored_why);
        return;
    }
    atf_ls_plan plan = atf_linsys_choose(s->prob, s->hooks.processes, &s->set, 1, why,
                                         sizeof why);
    s->set.method = plan == ATF_LS_PLAN_NONE ? ATF_METHOD_ALM : ATF_METHOD_ADMM;
    if (plan == ATF_LS_PLAN_PCG)
        snprintf(s->note, sizeof s->note, "auto: admm");
    else
        snprintf(s->note, sizeof s->note, "auto: %s: %s", why,
                 plan == ATF_LS_PLAN_DIRECT ? "admm" : "alm");
}

/* Whether a method runs over these processes (ctx: whether they can spread the Gram). */
static int runs_over(const atf_method_info *in, const void *ctx)
{
    int gram = *(const int *)ctx;
    return in->processes == ATF_PROCS_ALWAYS || (in->processes == ATF_PROCS_GRAM && gram);
}

/* The method's row says whether it runs over processes: the matrix-free ones through the
 * products alone, the Gram methods (admm, the Gram baseline) where the command can spread the
 * Gram's factorisation over them (atf_processes.gram: ScaLAPACK; linsys/gram_dist.c). */
static atf_error check_processes(const atf_solver *s, char *err)
{
    const atf_processes *pr = s->hooks.processes;
    if (!pr || pr->size <= 1)
        return ATF_OK;
    const atf_method_info *in = &s->method->info;
    int gram = pr->gram != NULL;
    if (runs_over(in, &gram))
        return ATF_OK;
    char which[160];
    atf_sv_method_list(runs_over, &gram, "and", which, sizeof which);
    atf_errorf(err, "solver: method %s%s does not run over several processes (%s do)", in->name,
               s->requested == ATF_METHOD_AUTO ? " (the choice of auto)" : "", which);
    return ATF_E_USAGE;
}

/* The methods that run over processes take the same steps on any number of threads as a
 * process of mpirun does (atf_shard.h, "atf's own threads"): every BLAS call of theirs on one
 * thread, the products on atf's team. The others keep the BLAS's threads (a Gram's
 * factorisation is the BLAS's own parallel work). */
static int one_arithmetic(const atf_solver *s)
{
    return s->method && s->method->info.processes == ATF_PROCS_ALWAYS;
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
    s->structure = settings.structure;
    s->loss = settings.loss;
    if (hooks)
        s->hooks = *hooks;
    s->requested = settings.method;
    if (s->set.method == ATF_METHOD_AUTO)
        resolve_auto(s);
    s->method = atf_sv_method_of(s->set.method);
    int serial = one_arithmetic(s);
    if (serial)
        atf_serial_begin();
    e = check_processes(s, err);
    if (e == ATF_OK)
        e = atf_sv_shards_init(s, err);
    if (e == ATF_OK)
        e = setup(s, err);
    if (serial)
        atf_serial_end();
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
    free(s->method_data);
    free(s);
}

/* Why an answer the work units held fails in the problem's units: its entries fall below the
 * normal range of doubles, where they keep fewer significant bits than the constraints need
 * (r ~ 1e-318), or out of range altogether. The cure is the units: r and B scale together. */
static void unrepresentable(atf_solver *s, const atf_result *res, double *const *Bs)
{
    double bmax = 0.0;
    for (int l = 0; l < s->nvars; l++) {
        const atf_block *b = &s->prob->blocks[l];
        size_t len = (size_t)b->rows * (size_t)b->cols;
        for (size_t i = 0; i < len; i++)
            bmax = fmax(bmax, fabs(Bs[l][i]));
    }
    const char *why = bmax < DBL_MIN ? ": its entries lie below the normal range of doubles "
                                       "(subnormal), where they keep too few significant bits"
                                     : "";
    snprintf(s->check, sizeof s->check, "the answer is not representable in the problem's units "
             "(largest |B| %.3e, relative constraint residual %.3e there)%s; scale r by a power "
             "of two (B scales with it)", bmax, res->info.constraint_residual, why);
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
        unrepresentable(s, res, Bs);
        res->info.status = ATF_STATUS_NUMERICAL_ERROR;
    }
    res->info.ls_residual = s->ls_residual;
    if (penalized(s)) { /* the loss of the answer, on the problem's own data and units */
        for (int m = 0; m < prob->M; m++)
            resid[m] += prob->r[m]; /* A vec B */
        res->info.loss_value = atf_loss_value(&s->loss, prob->N, prob->C, resid, prob->r,
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
        atf_sv_least_squares_result(s, res, x, ATF_STATUS_NUMERICAL_ERROR);
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
             res->info.method);
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
    double tol = fmax(ANSWER_RESIDUAL_TOL, atf_sv_feas_tol(s));
    if (!(cres <= tol))
        snprintf(s->check, sizeof s->check, "%s returned a point with relative constraint "
                 "residual %.3e (tolerance %.1e)", res->info.method, cres, tol);
    else if (!atf_sv_all_finite(x, s->n) || isnan(res->info.stationarity))
        snprintf(s->check, sizeof s->check, "%s returned a point without a finite certificate",
                 res->info.method);
    else
        return;
    fall_back(s, res, x);
}

static int resumable(const atf_method_info *in, const void *ctx)
{
    (void)ctx;
    return in->resumable;
}

static atf_error run_method(atf_solver *s, atf_result *res, double *x, char *err)
{
    if (!s->consistent) { /* r ∉ range(A): report the least-squares point */
        atf_sv_least_squares_result(s, res, x, ATF_STATUS_INFEASIBLE);
        return ATF_OK;
    }
    if (s->hooks.resume && !s->method->info.resumable) {
        char which[128];
        atf_sv_method_list(resumable, NULL, "or", which, sizeof which);
        atf_errorf(err, "a checkpoint can only be resumed by method %s (this solve's method is "
                        "%s)", which, s->method->info.name);
        return ATF_E_USAGE;
    }
    atf_sv_budget budget = atf_sv_budget_of(&s->set);
    return s->method->run(s, &budget, res, x, err);
}

/* The status line at the iteration limit: what the method measures there. */
static void limit_message(const atf_solver *s, const atf_result *res, char *err)
{
    const atf_info *in = &res->info;
    switch (s->method->at_limit) {
    case ATF_SV_AT_LIMIT_PG:
        atf_errorf(err, "%s stopped at the iteration limit %d (pg residual %.3e); the last "
                        "iterate is returned", in->method, in->iterations, in->pg_residual);
        return;
    case ATF_SV_AT_LIMIT_STEP:
        atf_errorf(err, "%s stopped at the iteration limit %d (relative step %.3e); the last "
                        "iterate is returned", in->method, in->iterations, in->primal_residual);
        return;
    case ATF_SV_AT_LIMIT_CONSTRAINT:
        atf_errorf(err, "%s stopped at the iteration limit %d (relative constraint residual "
                        "%.3e, stationarity %.3e); the last iterate is returned", in->method,
                   in->iterations, in->primal_residual, in->stationarity);
        return;
    case ATF_SV_AT_LIMIT_RESIDUALS: break;
    }
    atf_errorf(err, "%s stopped at the iteration limit %d (primal residual %.3e, dual residual "
                    "%.3e); the last iterate is returned", in->method, in->iterations,
               in->primal_residual, in->dual_residual);
}

/* A loss weight 2^±500 from 1 leaves a few hundred binary orders for the rest of the arithmetic:
 * a breakdown there is λ's (1e-300 breaks down; 5e-324 is refused before the start). */
#define LAMBDA_EXTREME_EXP 500

static void status_message(const atf_solver *s, const atf_result *res, char *err)
{
    if (s->method->status_text && s->method->status_text(s, res, err))
        return;
    switch (res->info.status) {
    case ATF_STATUS_SOLVED: break;
    case ATF_STATUS_INFEASIBLE:
        atf_errorf(err, "the constraints are inconsistent (r is not in the range of A): relative "
                        "least-squares residual %.3e above the tolerance %.1e; the "
                        "least-squares point is returned", s->ls_residual, atf_sv_feas_tol(s));
        break;
    case ATF_STATUS_MAX_ITERATIONS: limit_message(s, res, err); break;
    case ATF_STATUS_INTERRUPTED:
        atf_errorf(err, "%s interrupted after %d iterations; the last iterate is returned",
                   res->info.method, res->info.iterations);
        break;
    case ATF_STATUS_NUMERICAL_ERROR:
        if (s->check[0]) {
            atf_errorf(err, "%s; %s is returned", s->check, fallback_name(s));
            break;
        }
        if (s->loss_weight_exp > LAMBDA_EXTREME_EXP) { /* the weight check's words */
            atf_sv_lambda_message(&s->loss, "too far from 1 to solve", err);
            break;
        }
        atf_errorf(err, "%s broke down numerically after %d iterations; %s is returned",
                   res->info.method, res->info.iterations, s->method->breakdown_returns);
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
    snprintf(res->info.method, sizeof res->info.method, "%s", s->method->info.name);
    if (s->proj.ls)
        snprintf(res->info.linsys, sizeof res->info.linsys, "%s", s->proj.ls->name);
    res->structure = s->structure;
    snprintf(res->info.method_note, sizeof res->info.method_note, "%s", s->note);
    atf_loss_format(&s->loss, res->loss, sizeof res->loss); /* the whole spec, with λ */
    s->check[0] = '\0';
    s->passes = 0;
    s->solve_start = t0;
    s->progress_last = -INFINITY;
    int serial = one_arithmetic(s);
    if (serial)
        atf_serial_begin();
    atf_error e = run_method(s, res, x, err);
    if (s->method->info.matrix_free)
        res->info.operator_passes = s->passes > INT_MAX ? INT_MAX : (int)s->passes;
    if (e == ATF_OK) {
        check_answer(s, res, x);
        e = finish(s, res, x, err);
    }
    if (serial)
        atf_serial_end();
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

/* The chooser's rule for one solve (the settings' defaults): the Gram where it fits the memory
 * and M ≤ gram_max_rows, preconditioned CG otherwise. */
atf_error atf_baseline_hooks(const atf_problem *prob, const atf_hooks *hooks, atf_result **out,
                             char *err)
{
    atf_settings set = atf_settings_default();
    set.baseline = 1; /* method auto: the baseline's rule */
    set.verbose = hooks && hooks->log; /* a log asked for is a log wanted: no settings here */
    return atf_solve(prob, &set, hooks, out, err);
}

atf_error atf_baseline(const atf_problem *prob, atf_result **out, char *err)
{
    return atf_baseline_hooks(prob, NULL, out, err);
}
