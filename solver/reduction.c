/* reduction.c — the stacked variable and the exact subspace reduction of factored blocks.
 *
 * For a factored block every G_m = h_i δ_mᵀ has its columns in span(Q_c) = range(Hᵀ) and its
 * rows in span(Q_r) = range(Dᵀ). Replacing B by Q_c Q_cᵀ B Q_r Q_rᵀ keeps every constraint and
 * does not increase any singular value, so for a spectral (rotation-invariant) penalty an
 * optimum has the form B = Q_c C Q_rᵀ and the core problem in C is again factored, with
 * H Q_c and D Q_r (docs/math.md §7). Entrywise penalties are not rotation invariant: diagonal-structure
 * blocks are never reduced. Under the `full` structure the penalty depends on ‖B‖_F only, which
 * the same argument covers, so every factored block is reduced there. */
#include <cblas.h>
#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solver_internal.h"

/* Orthonormal basis of the row space of X (nr × nc, row-major), i.e. of range(Xᵀ), from a QR
 * factorisation with column pivoting of Xᵀ. The rank counts the diagonal entries of R above
 * max(nr, nc)·ε·|R_11| (the usual rank-revealing threshold; at least 1 so that a block never
 * vanishes). *Qt receives the basis transposed (rank × nc, row-major), or NULL when the rank is
 * nc, in which case the side is not reduced. */
static atf_error row_space_basis(const double *X, int nr, int nc, int *rank, double **Qt,
                                 const char *what, char *err)
{
    *Qt = NULL;
    *rank = nc;
    size_t size = (size_t)nr * (size_t)nc;
    int kmin = nr < nc ? nr : nc;
    double *a = malloc(size * sizeof *a); /* X row-major = Xᵀ column-major (nc × nr) */
    double *tau = malloc((size_t)kmin * sizeof *tau);
    lapack_int *jpvt = calloc((size_t)nr, sizeof *jpvt);
    if (!a || !tau || !jpvt) {
        free(a), free(tau), free(jpvt);
        atf_errorf(err, "%s: out of memory for the subspace basis (%d × %d)", what, nc, nr);
        return ATF_E_NOMEM;
    }
    memcpy(a, X, size * sizeof *a);
    lapack_int info = LAPACKE_dgeqp3(LAPACK_COL_MAJOR, nc, nr, a, nc, jpvt, tau);
    if (info != 0) {
        free(a), free(tau), free(jpvt);
        atf_errorf(err, "%s: QR with column pivoting failed (info %d)", what, (int)info);
        return ATF_E_NUMERICAL;
    }
    double tol = (double)(nr > nc ? nr : nc) * DBL_EPSILON * fabs(a[0]);
    int r = 0;
    while (r < kmin && fabs(a[(size_t)r + (size_t)r * (size_t)nc]) > tol)
        r++;
    if (r == 0)
        r = 1;
    free(jpvt);
    if (r == nc) {
        free(a), free(tau);
        return ATF_OK;
    }
    info = LAPACKE_dorgqr(LAPACK_COL_MAJOR, nc, r, r, a, nc, tau);
    free(tau);
    if (info != 0) {
        free(a);
        atf_errorf(err, "%s: forming the orthonormal basis failed (info %d)", what, (int)info);
        return ATF_E_NUMERICAL;
    }
    /* The first r columns of Q (nc × r column-major) are Qᵀ row-major (r × nc). */
    *Qt = a;
    *rank = r;
    return ATF_OK;
}

/* X (nr × nc) times the basis: Xred = X Qtᵀ (nr × r). */
static double *reduce_factor(const double *X, int nr, int nc, const double *Qt, int r)
{
    double *out = malloc((size_t)nr * (size_t)r * sizeof *out);
    if (out)
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nr, r, nc, 1.0, X, nc, Qt, nc, 0.0,
                    out, r);
    return out;
}

static atf_error reduce_block(atf_sv_var *v, char *err)
{
    const atf_block *b = v->orig;
    char what[ATF_NAMELEN + 32];
    snprintf(what, sizeof what, "block %s: H", b->name);
    int r = b->rows, c = b->cols;
    atf_error e = row_space_basis(b->H, b->N, b->rows, &r, &v->Qct, what, err);
    if (e != ATF_OK)
        return e;
    snprintf(what, sizeof what, "block %s: D", b->name);
    e = row_space_basis(b->D, b->M, b->cols, &c, &v->Qrt, what, err);
    if (e != ATF_OK)
        return e;
    if (v->Qct) {
        v->Hred = reduce_factor(b->H, b->N, b->rows, v->Qct, r);
        if (!v->Hred)
            goto nomem;
        v->op.H = v->Hred;
    }
    if (v->Qrt) {
        v->Dred = reduce_factor(b->D, b->M, b->cols, v->Qrt, c);
        if (!v->Dred)
            goto nomem;
        v->op.D = v->Dred;
    }
    v->rows = v->op.rows = r;
    v->cols = v->op.cols = c;
    return ATF_OK;
nomem:
    atf_errorf(err, "block %s: out of memory for the reduced factors", b->name);
    return ATF_E_NOMEM;
}

static atf_sv_kind var_kind(const atf_settings *set, const atf_block *b)
{
    if (set->structure == ATF_GLOBAL_FULL)
        return ATF_SV_GLOBAL_NORM;
    if (set->structure == ATF_GLOBAL_DIAGONAL || b->structure == ATF_STRUCT_DIAGONAL)
        return ATF_SV_ENTRYWISE;
    return ATF_SV_SPECTRAL;
}

atf_error atf_sv_vars_build(atf_solver *s, char *err)
{
    const atf_problem *prob = &s->work; /* the equilibrated data */
    s->nvars = prob->nblocks;
    s->vars = calloc((size_t)prob->nblocks, sizeof *s->vars);
    if (!s->vars) {
        atf_errorf(err, "solver: out of memory for %d blocks", prob->nblocks);
        return ATF_E_NOMEM;
    }
    size_t off = 0;
    for (int l = 0; l < prob->nblocks; l++) {
        atf_sv_var *v = &s->vars[l];
        const atf_block *b = &prob->blocks[l];
        v->orig = b;
        v->op = *b;
        v->rows = b->rows;
        v->cols = b->cols;
        v->pen = b->penalty;
        v->kind = var_kind(&s->set, b);
        if (s->set.reduce && b->kind == ATF_OP_FACTORED && v->kind != ATF_SV_ENTRYWISE) {
            atf_error e = reduce_block(v, err);
            if (e != ATF_OK)
                return e;
        }
        v->k = v->rows < v->cols ? v->rows : v->cols;
        v->len = (size_t)v->rows * (size_t)v->cols;
        v->off = off;
        off += v->len;
    }
    s->n = off;
    s->n_orig = atf_problem_nvars(prob);
    s->full_pen = prob->blocks[0].penalty;
    return ATF_OK;
}

void atf_sv_vars_free(atf_solver *s)
{
    if (!s->vars)
        return;
    for (int l = 0; l < s->nvars; l++) {
        atf_sv_var *v = &s->vars[l];
        free(v->Hred), free(v->Dred), free(v->Qct), free(v->Qrt);
        free(v->a), free(v->s), free(v->u), free(v->vt), free(v->work), free(v->iwork);
        free(v->s_prox);
    }
    free(s->vars);
    s->vars = NULL;
}

/* B = Q_c C Q_rᵀ (orig shape) with identity sides where not reduced. */
int atf_sv_expand(const atf_sv_var *v, const double *C, double *B)
{
    int P = v->orig->rows, Q = v->orig->cols, r = v->rows, c = v->cols;
    if (!v->Qct && !v->Qrt) {
        memcpy(B, C, v->len * sizeof *B);
        return 0;
    }
    if (!v->Qct) { /* B = C Q_rᵀ */
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, P, Q, c, 1.0, C, c, v->Qrt, Q,
                    0.0, B, Q);
        return 0;
    }
    if (!v->Qrt) { /* B = Q_c C */
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, P, Q, r, 1.0, v->Qct, P, C, Q,
                    0.0, B, Q);
        return 0;
    }
    double *T = malloc((size_t)r * (size_t)Q * sizeof *T); /* C Q_rᵀ */
    if (!T)
        return -1;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r, Q, c, 1.0, C, c, v->Qrt, Q, 0.0,
                T, Q);
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, P, Q, r, 1.0, v->Qct, P, T, Q, 0.0, B,
                Q);
    free(T);
    return 0;
}

/* C = Q_cᵀ B Q_r. */
int atf_sv_restrict(const atf_sv_var *v, const double *B, double *C)
{
    int P = v->orig->rows, Q = v->orig->cols, r = v->rows, c = v->cols;
    if (!v->Qct && !v->Qrt) {
        memcpy(C, B, v->len * sizeof *C);
        return 0;
    }
    if (!v->Qct) { /* C = B Q_r */
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, P, c, Q, 1.0, B, Q, v->Qrt, Q, 0.0,
                    C, c);
        return 0;
    }
    if (!v->Qrt) { /* C = Q_cᵀ B */
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r, Q, P, 1.0, v->Qct, P, B, Q,
                    0.0, C, Q);
        return 0;
    }
    double *T = malloc((size_t)P * (size_t)c * sizeof *T); /* B Q_r */
    if (!T)
        return -1;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, P, c, Q, 1.0, B, Q, v->Qrt, Q, 0.0, T,
                c);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r, c, P, 1.0, v->Qct, P, T, c, 0.0, C,
                c);
    free(T);
    return 0;
}
