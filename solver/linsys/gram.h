/* gram.h — private to solver/: the dense Gram A'A'ᵀ that the cholesky and eigen backends
 * factorise (gram.c): whole in one process, or its tiles spread over the processes in
 * ScaLAPACK's block-cyclic layout (gram_dist.c; docs/record/solver.md §19, "The Gram over
 * processes"). Over processes every function is collective and agreed: every process returns the
 * same code and takes the same path. Ownership: the backend that forms a Gram frees it. */
#ifndef ATF_SOLVER_GRAM_H
#define ATF_SOLVER_GRAM_H

#include "solver_internal.h"

/* Full-rank factorisations (CHOLMOD's, the dense Cholesky factor) are trusted only where their
 * least-squares point reproduces r to this relative residual (√ε); above it the rank-revealing
 * eigendecomposition takes over (projection.c). It is also their consistency tolerance. */
#define ATF_LINSYS_FULL_RANK_CHECK 1.5e-8
/* Above this condition number a projection through the dense Gram takes one refinement pass:
 * unrefined, it carries the factorisation's rounding into every iterate, and one pass takes it
 * to about ε, so that the answer does not depend on how the Gram was factorised (LAPACK in one
 * process, ScaLAPACK's tiles over K processes). Measured, one process against K = 2 unrefined:
 * B apart by 2e-13 at condition 3.7e6 and by 4e-9 at 3.9e10 (about 5e-4·κ·ε); refined, 5e-15
 * and 5e-13. Below it the difference stays under 1e-13 and the pass (one apply, one adjoint,
 * one solve: up to 1.8x an ADMM iteration's time) is skipped. */
#define ATF_LINSYS_REFINE_KAPPA 1e6

typedef struct {
    int M;
    double *whole;              /* one process: the M × M Gram (its lower triangle, then the
                                   factor or the eigenvectors), column-major */
    struct atf_sv_dgram *dist;  /* over processes: this process's tiles (gram_dist.c) */
    double *a;                  /* what was formed: whole, or the tiles */
    size_t len;                 /* ... and its doubles */
} atf_dense_gram;

/* Form (again) Σ_l A_l A_lᵀ of the solver's vars: the lower triangle, whole in one process, this
 * process's tiles over processes (laid out at the first call). Non-finite entries are refused
 * on every process alike: ATF_E_NUMERICAL; ATF_E_NOMEM; ATF_E_USAGE (a grid not laid out as
 * atf_dist_matrix says). */
atf_error atf_dense_gram_form(atf_solver *s, atf_dense_gram *g, char *err);
void atf_dense_gram_free(atf_dense_gram *g);

/* ---- gram_dist.c: the tiles over processes ---- */
/* Form the lower triangle of the Gram Σ_l A_l A_lᵀ of the vars (views of the held examples) as
 * this process's tiles, laid out in *d at the first call (atf_dist_gram.open), from the rows
 * the process holds and those the others send it; *local and *len: the tiles' storage (the
 * rest zero). ATF_E_NOMEM, ATF_E_USAGE (a grid not laid out as atf_dist_matrix says). */
atf_error atf_sv_dgram_form(atf_solver *s, struct atf_sv_dgram **d, double **local,
                            size_t *len, char *err);
/* The Cholesky factor in place, and the reciprocal condition number (the smallest estimate over
 * the processes). 0, or nonzero when some process's factorisation or estimate failed. */
int atf_sv_dgram_cholesky(atf_solver *s, struct atf_sv_dgram *d, double *rcond);
/* The eigenvectors in place and the eigenvalues into w[M] (ascending). ATF_E_NUMERICAL. */
atf_error atf_sv_dgram_eigen(atf_solver *s, struct atf_sv_dgram *d, double *w, char *err);
/* x = G⁻¹ b after the Cholesky factor (winv NULL), x = V diag(winv) Vᵀ b after the eigenvectors;
 * x the same bits on every process. */
void atf_sv_dgram_solve(const struct atf_sv_dgram *d, const double *winv, const double *b,
                        double *x);
void atf_sv_dgram_free(struct atf_sv_dgram *d);

#endif
