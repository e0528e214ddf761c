/* baseline.c — the NTK min-norm interpolant of Theorem 1: B = Aᵀ(AAᵀ)⁻¹r.
 *
 * It is the least-squares point the projection machinery computes at setup anyway (the
 * projection of 0 onto {A vec B = r}, with refinement), reported under the blocks' own penalties
 * with its objective, certificates and Theorem 2 factors. Factored blocks are reduced as for
 * ADMM: the min-norm point lies in range(Aᵀ), inside the reduced subspace, so it is unchanged. */
#include "solver_method.h"

/* The method: the least-squares point set up with the linear system (no iterations). */
atf_error atf_sv_baseline_run(atf_solver *s, const atf_sv_budget *b, atf_result *res, double *x,
                              char *err)
{
    (void)b, (void)err;
    atf_sv_least_squares_result(s, res, x, ATF_STATUS_SOLVED);
    return ATF_OK;
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
