/* eigen.c — the backend `eigen`: the pseudo-inverse of the dense Gram from its
 * eigendecomposition (LAPACK's dsyevd in one process; ScaLAPACK's over processes,
 * `dist-eigen`), with a relative cutoff below which eigenvalues count as zero. It serves any
 * rank: it is the last of the direct backends (projection.c), and it decides how far from
 * range(A') a consistent r can lie (the consistency tolerance, from the dropped spectrum). */
#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "gram.h"
#include "linsys.h"

/* Bounds of the consistency tolerance (see feas_tol). */
#define FEAS_TOL_MIN 1e-10
#define FEAS_TOL_MAX 1e-2

typedef struct {
    atf_dense_gram g; /* then the eigenvectors */
    double *winv;     /* 1/λ on the kept spectrum, 0 on the dropped one */
    double *t;        /* workspace [M] */
    double cutoff;    /* the relative eigenvalue cutoff used */
} eigen_state;

/* Consistency tolerance. For a consistent r = A x0 with x0 the min-norm solution, the part of r
 * on a dropped eigenvector u is |uᵀA x0| ≤ ‖Aᵀu‖‖x0‖ with ‖Aᵀu‖² = uᵀ(AAᵀ)u ≲ 2·cutoff·λ_max
 * (dropped eigenvalue plus the eigensolver's backward error) and ‖x0‖ ≤ ‖r‖/√λ_min,kept. Hence a
 * consistent problem has relative LS residual at most √(n_dropped · 2·cutoff · λ_max/λ_min,kept);
 * ten times that bound (clamped to [1e-10, 1e-2]) separates rounding from a genuine
 * inconsistency. */
static double feas_tol(double cutoff, double kappa_kept, int ndrop)
{
    double tol = 10.0 * sqrt((double)ndrop * 2.0 * cutoff * kappa_kept);
    return fmin(FEAS_TOL_MAX, fmax(FEAS_TOL_MIN, tol));
}

/* The pseudo-inverse's spectrum from the eigenvalues w (ascending), one process's or
 * ScaLAPACK's: winv, the rank, the cutoff and the consistency tolerance. */
static void cutoff_rule(atf_linsys *ls, eigen_state *st, const double *w)
{
    int M = ls->M;
    /* dsyevd is backward stable: eigenvalues below about M·ε·λ_max cannot be told from 0. */
    double lmax = fmax(w[M - 1], 0.0);
    st->cutoff = (double)(M > 10 ? M : 10) * DBL_EPSILON;
    double lmin_kept = lmax;
    ls->rank = 0;
    for (int i = 0; i < M; i++) {
        int keep = lmax > 0.0 && w[i] > st->cutoff * lmax;
        st->winv[i] = keep ? 1.0 / w[i] : 0.0;
        if (keep) {
            ls->rank++;
            lmin_kept = fmin(lmin_kept, w[i]);
        }
    }
    ls->kappa = lmax > 0.0 ? lmax / lmin_kept : 1.0;
    ls->feas_tol = feas_tol(st->cutoff, ls->kappa, M - ls->rank);
}

static atf_error whole_eigen(atf_dense_gram *g, double *w, char *err)
{
    lapack_int info = LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'V', 'L', g->M, g->whole, g->M, w);
    if (info != 0) {
        atf_errorf(err, "projection: eigendecomposition of AAᵀ failed (info %d)", (int)info);
        return ATF_E_NUMERICAL;
    }
    return ATF_OK;
}

static atf_error eigen_setup(atf_linsys *ls, char *err)
{
    atf_solver *s = ls->s;
    eigen_state *st = calloc(1, sizeof *st);
    if (atf_sv_max(s, st ? 0.0 : 1.0) != 0.0) {
        free(st);
        atf_errorf(err, "projection: out of memory");
        return ATF_E_NOMEM;
    }
    ls->state = st;
    atf_error e = atf_dense_gram_form(s, &st->g, err);
    if (e != ATF_OK)
        return e;
    int M = ls->M;
    double *w = malloc((size_t)M * sizeof *w);
    st->winv = malloc((size_t)M * sizeof *st->winv);
    st->t = malloc((size_t)M * sizeof *st->t);
    if (atf_sv_max(s, w && st->winv && st->t ? 0.0 : 1.0) != 0.0) {
        free(w);
        atf_errorf(err, "projection: out of memory for the eigendecomposition");
        return ATF_E_NOMEM;
    }
    e = s->procs ? atf_sv_dgram_eigen(s, st->g.dist, w, err) : whole_eigen(&st->g, w, err);
    if (e == ATF_OK) {
        cutoff_rule(ls, st, w);
        ls->refine = ls->kappa > ATF_LINSYS_REFINE_KAPPA;
        ls->usable = 1;
    }
    free(w);
    return e;
}

static void eigen_solve(atf_linsys *ls, const double *b, const double *warm, double tol,
                        double *lambda)
{
    (void)warm, (void)tol; /* exact up to the eigenvectors' rounding */
    eigen_state *st = ls->state;
    int M = ls->M;
    if (st->g.dist) {
        atf_sv_dgram_solve(st->g.dist, st->winv, b, lambda);
        return;
    }
    /* V diag(winv) Vᵀ b */
    cblas_dgemv(CblasColMajor, CblasTrans, M, M, 1.0, st->g.whole, M, b, 1, 0.0, st->t, 1);
    for (int i = 0; i < M; i++)
        st->t[i] *= st->winv[i];
    cblas_dgemv(CblasColMajor, CblasNoTrans, M, M, 1.0, st->g.whole, M, st->t, 1, 0.0, lambda,
                1);
}

static void eigen_free(atf_linsys *ls)
{
    eigen_state *st = ls->state;
    if (st) {
        atf_dense_gram_free(&st->g);
        free(st->winv), free(st->t);
    }
    free(st);
    ls->state = NULL;
}

const atf_linsys_backend atf_linsys_eigen = {"eigen", "eigendecomposition", 0,
                                             eigen_setup, eigen_solve, eigen_free};
