/* baseline.c — the NTK min-norm interpolant of Theorem 1: B = Aᵀ(AAᵀ)⁻¹r.
 *
 * It is the least-squares point the projection machinery computes at setup anyway (the
 * projection of 0 onto {A vec B = r}, with refinement), reported under the blocks' own penalties
 * with its objective, certificates and Theorem 2 factors. Factored blocks are reduced as for
 * ADMM: the min-norm point lies in range(Aᵀ), inside the reduced subspace, so it is unchanged. */
#include "solver_internal.h"
#include "internal/solver_cg.h"

/* The Gram wherever it fits the memory (as always: the same bits at every size it served),
 * and preconditioned CG where it does not (M = 80 000 needs 51 GB), instead of failing there. */
atf_error atf_baseline_hooks(const atf_problem *prob, const atf_hooks *hooks, atf_result **out,
                             char *err)
{
    atf_settings set = atf_settings_default();
    set.method = atf_sv_gram_fits(prob, NULL, 0, NULL, 0) ? ATF_METHOD_BASELINE : ATF_METHOD_CG;
    set.verbose = hooks && hooks->log; /* a log asked for is a log wanted: no settings here */
    return atf_solve(prob, &set, hooks, out, err);
}

atf_error atf_baseline(const atf_problem *prob, atf_result **out, char *err)
{
    return atf_baseline_hooks(prob, NULL, out, err);
}
