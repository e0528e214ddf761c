/* methods.c — the method table: one row per method, and the names and lists read from it.
 *
 * A row says what a method solves and may do (atf_method_info, public), what atf_solver_init
 * builds for it and which function runs it (atf_sv_method, solver_method.h). Adding a method is
 * an atf_method value (atf_solver.h), its file in solver/ (and in solver/meson.build), its run's
 * declaration (solver_method.h) and one row here (docs/architecture.md, "A solver method"). */
#include <stddef.h>
#include <string.h>

#include "solver_method.h"

static const atf_sv_method TABLE[] = {
    {.info = {ATF_METHOD_ADMM, "admm",
              "ADMM with the singular-value prox; its projection by a factorisation of AA^T, or "
              "by PCG where only the single-precision Gram fits",
              .interpolation = 1, .resumable = 1, .linsys = 1, .warm = ATF_WARM_TAKEN,
              .processes = ATF_PROCS_GRAM},
     .data = ATF_SV_DATA_PROJECTION, .prepare = atf_sv_admm_prepare, .run = atf_sv_admm_run,
     .at_limit = ATF_SV_AT_LIMIT_RESIDUALS, .breakdown_returns = "the least-squares point"},
    {.info = {ATF_METHOD_LP, "lp",
              "exact LP by GLPK's simplex: the diagonal structure with the nuclear penalty (l1 "
              "basis pursuit), for checks at modest size",
              .interpolation = 1, .linsys = 1, .warm = ATF_WARM_IGNORED,
              .processes = ATF_PROCS_NEVER},
     .data = ATF_SV_DATA_PROJECTION, .check_vars = atf_sv_lp_check, .run = atf_sv_lp_run,
     .at_limit = ATF_SV_AT_LIMIT_RESIDUALS, .breakdown_returns = "the least-squares point"},
    {.info = {ATF_METHOD_BASELINE, "baseline",
              "the NTK min-norm interpolant (Theorem 1) by a factorisation of AA^T: exact, any "
              "rank",
              .interpolation = 1, .baseline = 1, .linsys = 1, .warm = ATF_WARM_IGNORED,
              .processes = ATF_PROCS_GRAM},
     .data = ATF_SV_DATA_PROJECTION, .linsys_only = ATF_LINSYS_DIRECT,
     .run = atf_sv_baseline_run,
     .at_limit = ATF_SV_AT_LIMIT_RESIDUALS, .breakdown_returns = "the least-squares point"},
    {.info = {ATF_METHOD_FISTA, "fista",
              "accelerated proximal gradient with backtracking and adaptive restart, "
              "matrix-free",
              .penalized = 1, .matrix_free = 1, .warm = ATF_WARM_TAKEN,
              .processes = ATF_PROCS_ALWAYS},
     .data = ATF_SV_DATA_PENALIZED, .run = atf_sv_fista_run, .at_limit = ATF_SV_AT_LIMIT_PG,
     .breakdown_returns = "the last finite iterate (or B = 0)"},
    {.info = {ATF_METHOD_IRLS, "irls",
              "alternating adapted-kernel regression from the min-norm interpolant; its "
              "objective never increases",
              .interpolation = 1, .linsys = 1, .warm = ATF_WARM_REFUSED,
              .processes = ATF_PROCS_NEVER},
     .data = ATF_SV_DATA_PROJECTION, .run = atf_sv_irls_run, .at_limit = ATF_SV_AT_LIMIT_STEP,
     .breakdown_returns = "the last iterate"},
    {.info = {ATF_METHOD_NEWTON, "newton",
              "semismooth Newton-CG with a Nystrom preconditioner, matrix-free; FISTA goes on "
              "where its line search keeps failing",
              .penalized = 1, .resumable = 1, .matrix_free = 1, .warm = ATF_WARM_TAKEN,
              .processes = ATF_PROCS_ALWAYS},
     .data = ATF_SV_DATA_PENALIZED, .run = atf_sv_newton_run, .at_limit = ATF_SV_AT_LIMIT_PG,
     .breakdown_returns = "the last finite iterate (or B = 0)"},
    {.info = {ATF_METHOD_ALM, "alm",
              "augmented Lagrangian with Newton subproblems: interpolation without the Gram",
              .interpolation = 1, .resumable = 1, .matrix_free = 1, .warm = ATF_WARM_TAKEN,
              .processes = ATF_PROCS_ALWAYS},
     .data = ATF_SV_DATA_ROWS, .run = atf_sv_alm_run, .at_limit = ATF_SV_AT_LIMIT_CONSTRAINT,
     .breakdown_returns = "the least-squares point"},
    {.info = {ATF_METHOD_CG, "cg",
              "the NTK min-norm interpolant by preconditioned LSQR on AA^T, which is never "
              "formed",
              .interpolation = 1, .baseline = 1, .resumable = 1, .matrix_free = 1, .linsys = 1,
              .warm = ATF_WARM_IGNORED, .processes = ATF_PROCS_ALWAYS},
     .data = ATF_SV_DATA_KRYLOV, .linsys_only = ATF_LINSYS_PCG, .run = atf_sv_cg_run,
     .at_limit = ATF_SV_AT_LIMIT_RESIDUALS,
     .breakdown_returns = "the least-squares point", .status_text = atf_sv_cg_status_message},
    {.info = {ATF_METHOD_FACTORED, "factored",
              "every block as U V^T at a rank grown from below: L-BFGS, then Newton-CG with a "
              "Kronecker preconditioner on the factors, certified on B; penalties whose "
              "omega~(e^t) is convex (all but pow with small p), layer structure",
              .penalized = 1, .resumable = 1, .matrix_free = 1, .warm = ATF_WARM_TAKEN,
              .processes = ATF_PROCS_NEVER},
     .data = ATF_SV_DATA_PENALIZED, .check_vars = atf_sv_factored_check,
     .run = atf_sv_factored_run, .at_limit = ATF_SV_AT_LIMIT_PG,
     .breakdown_returns = "the last finite iterate (or B = 0)"},
};
#define NMETHODS (int)(sizeof TABLE / sizeof TABLE[0])

/* The table is in the order of the enum: row m is method m (tests/solver/test_solver_api.c). */

const atf_sv_method *atf_sv_method_of(atf_method m)
{
    return (int)m >= 0 && (int)m < NMETHODS ? &TABLE[m] : NULL;
}

int atf_method_count(void)
{
    return NMETHODS;
}

const atf_method_info *atf_method_info_of(atf_method m)
{
    const atf_sv_method *row = atf_sv_method_of(m);
    return row ? &row->info : NULL;
}

const char *atf_method_name(atf_method m)
{
    if (m == ATF_METHOD_AUTO)
        return "auto";
    const atf_sv_method *row = atf_sv_method_of(m);
    return row ? row->info.name : "unknown";
}

atf_error atf_method_parse(const char *name, atf_method *m)
{
    if (!name)
        return ATF_E_INPUT;
    if (!strcmp(name, "auto")) {
        *m = ATF_METHOD_AUTO;
        return ATF_OK;
    }
    for (int j = 0; j < NMETHODS; j++)
        if (!strcmp(name, TABLE[j].info.name)) {
            *m = TABLE[j].info.method;
            return ATF_OK;
        }
    return ATF_E_INPUT;
}

void atf_sv_method_list(atf_sv_method_keep *keep, const void *ctx, const char *conj, char *buf,
                        size_t len)
{
    int count = 0, n = 0;
    for (int m = 0; m < NMETHODS; m++)
        count += keep(&TABLE[m].info, ctx) != 0;
    size_t used = 0;
    buf[0] = '\0';
    for (int m = 0; m < NMETHODS && used < len; m++) {
        if (!keep(&TABLE[m].info, ctx))
            continue;
        n++;
        int k = snprintf(buf + used, len - used, "%s%s%s%s", n == 1 ? "" : n == count ? " " : ", ",
                         n > 1 && n == count ? conj : "", n > 1 && n == count ? " " : "",
                         TABLE[m].info.name);
        used += k > 0 ? (size_t)k : 0;
    }
}

atf_sv_budget atf_sv_budget_of(const atf_settings *set)
{
    atf_sv_budget b = {set->max_iter, set->eps_rel, set->verbose, set->log_every};
    return b;
}
