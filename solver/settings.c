/* settings.c — defaults and validation of atf_settings (against the method table). */
#include <cblas.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "solver_method.h"

atf_settings atf_settings_default(void)
{
    atf_settings s = {
        .method = ATF_METHOD_AUTO,
        .loss = {ATF_LOSS_INTERPOLATE, 0.0},
        .structure = ATF_GLOBAL_LAYER,
        .max_iter = 10000,
        .eps_abs = 1e-8,
        .eps_rel = 1e-6,
        .alpha = 1.6,
        .rho = 1.0,
        .adaptive_rho = 1,
        .reduce = 1,
        .verbose = 0,
        .log_every = 50,
        .baseline = 0,
        .newton_rank = -1,
        .continuation = 2.0,
        .linsys = ATF_LINSYS_AUTO,
        .precond = ATF_PRECOND_AUTO,
        .memory_fraction = 0.75,
        .gram_max_rows = 10000,
    };
    return s;
}

static int solves_penalized(const atf_method_info *in, const void *ctx)
{
    (void)ctx;
    return in->penalized;
}

/* The loss is one the method's row says it solves (auto: any, resolved by atf_solver_init), and
 * a warm start one it does not refuse. */
static atf_error check_method_loss(const atf_settings *set, const atf_hooks *hooks, char *err)
{
    const atf_loss *loss = &set->loss;
    if (loss->kind != ATF_LOSS_INTERPOLATE && loss->kind != ATF_LOSS_SQUARED &&
        loss->kind != ATF_LOSS_XENT) {
        atf_errorf(err, "settings: unknown loss %d", (int)loss->kind);
        return ATF_E_USAGE;
    }
    if (loss->kind != ATF_LOSS_INTERPOLATE && !(loss->lambda > 0.0 && isfinite(loss->lambda))) {
        atf_errorf(err, "settings: loss %s: lambda = %g must be a finite number > 0",
                   atf_loss_name(loss->kind), loss->lambda);
        return ATF_E_USAGE;
    }
    if (set->method == ATF_METHOD_AUTO)
        return ATF_OK;
    const atf_method_info *in = atf_method_info_of(set->method);
    if (!in) {
        atf_errorf(err, "settings: method %d is not one of the solver's methods (atf_method)",
                   (int)set->method);
        return ATF_E_USAGE;
    }
    int penalized = loss->kind != ATF_LOSS_INTERPOLATE;
    char which[128];
    if (penalized && !in->penalized) {
        atf_sv_method_list(solves_penalized, NULL, "or", which, sizeof which);
        atf_errorf(err, "settings: method %s solves the interpolation problem only; the loss %s "
                        "needs method %s (or auto)", in->name, atf_loss_name(loss->kind), which);
        return ATF_E_USAGE;
    }
    if (!penalized && !in->interpolation) {
        atf_errorf(err, "settings: method %s needs a penalized loss (squared or xent), not "
                        "interpolate", in->name);
        return ATF_E_USAGE;
    }
    atf_linsys_kind only = atf_sv_method_of(set->method)->linsys_only;
    if (only != ATF_LINSYS_AUTO && set->linsys != ATF_LINSYS_AUTO && set->linsys != only) {
        atf_errorf(err, "settings: method %s solves its linear systems by %s only; linsys %s "
                        "is refused", in->name,
                   only == ATF_LINSYS_PCG ? "PCG (linsys pcg)" : "a factorisation (linsys direct)",
                   atf_linsys_kind_name(set->linsys));
        return ATF_E_USAGE;
    }
    if (hooks && hooks->warm && in->warm == ATF_WARM_REFUSED) {
        atf_errorf(err, "settings: method %s starts from the minimum-norm interpolant and takes "
                        "no warm start", in->name);
        return ATF_E_USAGE;
    }
    return ATF_OK;
}

/* Checkpoints: a state to resume and a nonnegative interval; not over processes (every rank
 * would hold part of the state). */
static atf_error check_checkpoint_hooks(const atf_hooks *hooks, char *err)
{
    if (!hooks)
        return ATF_OK;
    if (hooks->checkpoint && !(hooks->checkpoint_seconds >= 0.0)) {
        atf_errorf(err, "hooks: checkpoint_seconds = %g, must be zero or more",
                   hooks->checkpoint_seconds);
        return ATF_E_USAGE;
    }
    if (hooks->resume && (hooks->resume->len < 1 || !hooks->resume->data)) {
        atf_errorf(err, "hooks: the checkpoint to resume holds no state");
        return ATF_E_USAGE;
    }
    if (hooks->resume && hooks->processes) {
        atf_errorf(err, "hooks: a checkpoint cannot be resumed over processes (one process "
                        "only)");
        return ATF_E_USAGE;
    }
    return ATF_OK;
}

atf_error atf_sv_settings_check(const atf_settings *set, const atf_hooks *hooks, char *err)
{
    const atf_method_info *in = atf_method_info_of(set->method);
    if (set->baseline && set->method != ATF_METHOD_AUTO && in && !in->baseline) {
        atf_errorf(err, "settings: the baseline is computed by auto, baseline (the Gram) or cg, "
                        "not %s", in->name);
        return ATF_E_USAGE;
    }
    atf_error e = check_method_loss(set, hooks, err);
    if (e != ATF_OK)
        return e;
    if (set->structure != ATF_GLOBAL_LAYER && set->structure != ATF_GLOBAL_DIAGONAL &&
        set->structure != ATF_GLOBAL_FULL) {
        atf_errorf(err, "settings: unknown structure %d", (int)set->structure);
        return ATF_E_USAGE;
    }
    if (set->newton_rank < -1 || set->newton_rank > 2000) {
        atf_errorf(err, "settings: newton_rank = %d, must be -1 (auto), 0 (none) … 2000",
                   set->newton_rank);
        return ATF_E_USAGE;
    }
    if (!(set->continuation == 0.0 || (set->continuation >= 1.0 && isfinite(set->continuation)))) {
        atf_errorf(err, "settings: continuation = %g, must be 0 (none) or a finite ratio ≥ 1",
                   set->continuation);
        return ATF_E_USAGE;
    }
    if ((int)set->linsys < 0 || !atf_linsys_kind_name(set->linsys)) {
        atf_errorf(err, "settings: linsys %d is not one of auto, direct, pcg", (int)set->linsys);
        return ATF_E_USAGE;
    }
    if ((int)set->precond < 0 || !atf_precond_name(set->precond)) {
        atf_errorf(err, "settings: precond %d is not one of auto, none, jacobi, nystrom, "
                        "nystrom-block, gram32", (int)set->precond);
        return ATF_E_USAGE;
    }
    if (!(set->memory_fraction > 0.0 && set->memory_fraction <= 1.0)) {
        atf_errorf(err, "settings: memory_fraction = %g, must lie in (0, 1]",
                   set->memory_fraction);
        return ATF_E_USAGE;
    }
    if (set->gram_max_rows < 0) {
        atf_errorf(err, "settings: gram_max_rows = %d, must be 0 (no bound) or more",
                   set->gram_max_rows);
        return ATF_E_USAGE;
    }
    if (set->max_iter < 1) {
        atf_errorf(err, "settings: max_iter = %d, must be at least 1", set->max_iter);
        return ATF_E_USAGE;
    }
    if (!(set->eps_abs >= 0.0) || !(set->eps_rel >= 0.0) || !isfinite(set->eps_abs) ||
        !isfinite(set->eps_rel) || set->eps_abs + set->eps_rel <= 0.0) {
        atf_errorf(err, "settings: tolerances eps_abs = %g, eps_rel = %g must be finite, "
                        "nonnegative and not both zero", set->eps_abs, set->eps_rel);
        return ATF_E_USAGE;
    }
    if (!(set->alpha > 0.0 && set->alpha < 2.0)) {
        atf_errorf(err, "settings: alpha = %g, over-relaxation must lie in (0, 2)", set->alpha);
        return ATF_E_USAGE;
    }
    if (!(set->rho > 0.0) || !isfinite(set->rho)) {
        atf_errorf(err, "settings: rho = %g, must be positive and finite", set->rho);
        return ATF_E_USAGE;
    }
    if (set->log_every < 1) {
        atf_errorf(err, "settings: log_every = %d, must be at least 1", set->log_every);
        return ATF_E_USAGE;
    }
    return check_checkpoint_hooks(hooks, err);
}
