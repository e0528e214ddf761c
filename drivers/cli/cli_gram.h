/* cli_gram.h — the projection's Gram over the ranks of `mpirun -np K atf solve --method admm`
 * (cli_gram.c, built with -Dmpi=enabled only), and the ScaLAPACK and BLACS symbols it calls:
 * Debian's libscalapack-openmpi-dev installs no header, so they are declared here. */
#ifndef ATF_CLI_GRAM_H
#define ATF_CLI_GRAM_H

#include <stddef.h>

#include "atf_problem.h"

/* The hooks of atf_dist_gram on MPI_COMM_WORLD, for the solver's atf_processes (cli_mpi.c). */
const atf_dist_gram *atf_cli_gram(void);

/* ---- BLACS (its C interface) ---- */
void Cblacs_get(int context, int what, int *val);
void Cblacs_gridinit(int *context, const char *order, int nprow, int npcol);
void Cblacs_gridinfo(int context, int *nprow, int *npcol, int *myrow, int *mycol);
void Cblacs_gridexit(int context);

/* ---- ScaLAPACK (Fortran: every argument by reference; gfortran passes the length of each
 * character argument after the others, as a size_t) ---- */
int numroc_(const int *n, const int *nb, const int *iproc, const int *isrcproc,
            const int *nprocs);
void descinit_(int *desc, const int *m, const int *n, const int *mb, const int *nb,
               const int *irsrc, const int *icsrc, const int *ictxt, const int *lld, int *info);
double pdlansy_(const char *norm, const char *uplo, const int *n, const double *a,
                const int *ia, const int *ja, const int *desca, double *work, size_t norm_len,
                size_t uplo_len);
void pdpotrf_(const char *uplo, const int *n, double *a, const int *ia, const int *ja,
              const int *desca, int *info, size_t uplo_len);
void pdpocon_(const char *uplo, const int *n, const double *a, const int *ia, const int *ja,
              const int *desca, const double *anorm, double *rcond, double *work,
              const int *lwork, int *iwork, const int *liwork, int *info, size_t uplo_len);
void pdpotrs_(const char *uplo, const int *n, const int *nrhs, const double *a, const int *ia,
              const int *ja, const int *desca, double *b, const int *ib, const int *jb,
              const int *descb, int *info, size_t uplo_len);
void pdsyevd_(const char *jobz, const char *uplo, const int *n, double *a, const int *ia,
              const int *ja, const int *desca, double *w, double *z, const int *iz,
              const int *jz, const int *descz, double *work, const int *lwork, int *iwork,
              const int *liwork, int *info, size_t jobz_len, size_t uplo_len);

#endif
