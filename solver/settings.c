/* settings.c — defaults and validation of atf_settings, and small shared helpers. */
#include <cblas.h>
#include <math.h>

#include "solver_internal.h"

atf_settings atf_settings_default(void)
{
    atf_settings s = {
        .method = ATF_METHOD_ADMM,
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
        .log = NULL,
        .warm = NULL,
        .interrupt = NULL,
    };
    return s;
}

atf_error atf_sv_settings_check(const atf_settings *set, char *err)
{
    if (set->method != ATF_METHOD_ADMM && set->method != ATF_METHOD_LP &&
        set->method != ATF_METHOD_BASELINE) {
        atf_errorf(err, "settings: method %s (%d) is not one of admm, lp, baseline",
                   atf_method_name(set->method), (int)set->method);
        return ATF_E_USAGE;
    }
    if (set->structure != ATF_GLOBAL_LAYER && set->structure != ATF_GLOBAL_DIAGONAL &&
        set->structure != ATF_GLOBAL_FULL) {
        atf_errorf(err, "settings: unknown structure %d", (int)set->structure);
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
    return ATF_OK;
}

double atf_sv_norm(const double *x, size_t n)
{
    return n ? cblas_dnrm2((int)n, x, 1) : 0.0;
}

int atf_sv_all_finite(const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return 0;
    return 1;
}
