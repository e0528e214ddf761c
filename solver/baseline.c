/* baseline.c — the method baseline: the NTK min-norm interpolant of Theorem 1, B = Aᵀ(AAᵀ)⁻¹r,
 * by a factorisation of AAᵀ (its public conveniences atf_baseline and atf_baseline_hooks are
 * atf_solve with settings.baseline: solver.c).
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
