/* cholesky.c — the backend `cholesky`: the dense Gram factorised by LAPACK's dpotrf in one
 * process, by ScaLAPACK's through the command's atf_dist_gram hooks over processes
 * (`dist-cholesky`). It serves only a Gram whose reciprocal condition estimate is above M·ε:
 * a singular or nearly singular one goes to the eigendecomposition (eigen.c), decided alike on
 * every process. */
#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gram.h"
#include "linsys.h"

/* dpotrf and dpocon on the whole Gram: 0, or LAPACK's nonzero info. */
static int whole_cholesky(atf_dense_gram *g, double *rcond)
{
    int M = g->M;
    double anorm = LAPACKE_dlansy(LAPACK_COL_MAJOR, '1', 'L', M, g->whole, M);
    lapack_int info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', M, g->whole, M);
    if (info == 0)
        info = LAPACKE_dpocon(LAPACK_COL_MAJOR, 'L', M, g->whole, M, anorm, rcond);
    return (int)info;
}

static atf_error cholesky_setup(atf_linsys *ls, char *err)
{
    atf_solver *s = ls->s;
    atf_dense_gram *g = calloc(1, sizeof *g);
    if (atf_sv_max(s, g ? 0.0 : 1.0) != 0.0) {
        free(g);
        atf_errorf(err, "projection: out of memory");
        return ATF_E_NOMEM;
    }
    ls->state = g;
    atf_error e = atf_dense_gram_form(s, g, err);
    if (e != ATF_OK)
        return e;
    double rcond = 0.0;
    if ((s->procs ? atf_sv_dgram_cholesky(s, g->dist, &rcond) : whole_cholesky(g, &rcond)) != 0)
        return ATF_OK; /* not positive definite: usable stays 0 */
    ls->rank = ls->M;
    ls->kappa = rcond > 0.0 ? 1.0 / rcond : INFINITY;
    ls->feas_tol = ATF_LINSYS_FULL_RANK_CHECK;
    ls->refine = ls->kappa > ATF_LINSYS_REFINE_KAPPA;
    ls->usable = rcond > (double)ls->M * DBL_EPSILON;
    return ATF_OK;
}

static void cholesky_solve(atf_linsys *ls, const double *b, const double *warm, double tol,
                           double *lambda)
{
    (void)warm, (void)tol; /* exact up to the factor's rounding */
    atf_dense_gram *g = ls->state;
    if (g->dist) {
        atf_sv_dgram_solve(g->dist, NULL, b, lambda);
        return;
    }
    memcpy(lambda, b, (size_t)ls->M * sizeof *lambda);
    LAPACKE_dpotrs_work(LAPACK_COL_MAJOR, 'L', ls->M, 1, g->whole, ls->M, lambda, ls->M);
}

static void cholesky_free(atf_linsys *ls)
{
    if (ls->state)
        atf_dense_gram_free(ls->state);
    free(ls->state);
    ls->state = NULL;
}

const atf_linsys_backend atf_linsys_cholesky = {"cholesky", "dense Cholesky", 0,
                                                cholesky_setup, cholesky_solve, cholesky_free};
