/* baseline.c — the NTK min-norm interpolant of Theorem 1: B = Aᵀ(AAᵀ)⁻¹r.
 *
 * It is the least-squares point the projection machinery computes at setup anyway (the
 * projection of 0 onto {A vec B = r}, with refinement), reported under the blocks' own penalties
 * with its objective, certificates and Theorem 2 factors. Factored blocks are reduced as for
 * ADMM: the min-norm point lies in range(Aᵀ), inside the reduced subspace, so it is unchanged. */
#include "solver_internal.h"

atf_error atf_baseline(const atf_problem *prob, atf_result **out, char *err)
{
    atf_settings set = atf_settings_default();
    set.method = ATF_METHOD_BASELINE;
    return atf_solve(prob, &set, NULL, out, err);
}
