/* solver_gram.h — private to solver/: the projection's M × M Gram spread over processes
 * (gram_dist.c; docs/solver.md §19, "The Gram over processes"). Every function is collective
 * and agreed: every process returns the same code and takes the same path. */
#ifndef ATF_SOLVER_GRAM_H
#define ATF_SOLVER_GRAM_H

#include "solver_internal.h"

/* Form the lower triangle of the Gram Σ_l A_l A_lᵀ of the vars (views of the held examples) as
 * this process's tiles of s->proj.dist, laid out on the first call (atf_dist_gram.open), from
 * the rows the process holds and those the others send it; *local and *len: the tiles' storage
 * (the rest zero). ATF_E_NOMEM, ATF_E_USAGE (a grid not laid out as atf_dist_matrix says). */
atf_error atf_sv_dgram_form(atf_solver *s, double **local, size_t *len, char *err);
/* The Cholesky factor in place, and the reciprocal condition number (the smallest estimate over
 * the processes). 0, or nonzero when some process's factorisation or estimate failed. */
int atf_sv_dgram_cholesky(atf_solver *s, double *rcond);
/* The eigenvectors in place and the eigenvalues into w[M] (ascending). ATF_E_NUMERICAL. */
atf_error atf_sv_dgram_eigen(atf_solver *s, double *w, char *err);
/* x = G⁻¹ b after the Cholesky factor (winv NULL), x = V diag(winv) Vᵀ b after the eigenvectors;
 * x the same bits on every process. */
void atf_sv_dgram_solve(const struct atf_sv_dgram *d, const double *winv, const double *b,
                        double *x);
void atf_sv_dgram_free(struct atf_sv_dgram *d);

#endif
