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

/* How a side's basis is decided (docs/record/solver.md §4). The QR with column pivoting of an
 * nr × nc factor (nr ≥ nc) costs about 4·nr·nc² flops, half of them in BLAS-2, plus a copy of
 * the factor; the Gram XᵀX costs nr·nc² flops in BLAS-3 (dsyrk) and nc² memory. So the Gram
 * decides first, and the QR runs only when the Gram cannot settle the question:
 *  - GRAM_KEEP_REL: an eigenvalue λ > 1e-10·λ_max means σ > 1e-5·σ_max. Every |R_kk| of any QR
 *    is at least σ_min, and the QR's cutoff is max(nr, nc)·ε·|R_11| ≤ max(nr, nc)·ε·σ_max
 *    (1.3e-11·σ_max at nr = 60 000): six orders below. The Gram's own rounding is about
 *    √nr·ε·λ_max (3e-14·λ_max at nr = 60 000), four orders below 1e-10. So a Gram whose
 *    eigenvalues all exceed it shows, with that margin, that the QR would keep every direction.
 *  - SKIP_FRACTION: at most k = #{λ ≤ 1e-10·λ_max} directions could go, i.e. a fraction k/nc of
 *    the block's variables. Below 5 % (and nr ≥ nc) the side is kept whole: the reduced factor
 *    X Q would be a second copy of the factor (the problem keeps its own) to save under 5 % of
 *    each iteration, and setup time for nothing (measured in docs/record/solver.md §4). Not
 *    reducing is always exact: the skipped directions are orthogonal to every constraint, the
 *    iterates have no component there (up to rounding, which only the penalty acts on), and the
 *    projection, its Gram and its consistency decision see the same A.
 *  - otherwise the eigenvectors of the small eigenvalues are the candidates to drop, checked on
 *    X itself with the QR's own test (verify_dropped); if they fail, the QR decides as before.
 * The Gram squares X: rows beyond 2^±GRAM_ROW_EXP (possible only for the penalized losses, which
 * share the caller's D unscaled) go to the QR, which does not square. */
#define GRAM_KEEP_REL 1e-10
#define SKIP_FRACTION 0.05
#define GRAM_ROW_EXP 400
#define VERIFY_PANEL 4096 /* rows of X per GEMM in the verification (bounds its workspace) */

/* Largest row norm of X (nr × nc): the |R_11| of the pivoted QR of Xᵀ. */
static double max_row_norm(const double *X, int nr, int nc)
{
    double big = 0.0;
    for (int i = 0; i < nr; i++)
        big = fmax(big, cblas_dnrm2(nc, X + (size_t)i * (size_t)nc, 1));
    return big;
}

/* The QR's rank cutoff on the diagonal of R, and the verification's on each row. */
static double qr_cutoff(int nr, int nc, double r11)
{
    return (double)(nr > nc ? nr : nc) * DBL_EPSILON * r11;
}

/* Orthonormal basis of the row space of X (nr × nc, row-major), i.e. of range(Xᵀ), from a QR
 * factorisation with column pivoting of Xᵀ. The rank counts the diagonal entries of R above
 * max(nr, nc)·ε·|R_11| (the usual rank-revealing threshold; at least 1 so that a block never
 * vanishes). *Qt receives the basis transposed (rank × nc, row-major), or NULL when the rank is
 * nc, in which case the side is not reduced. X must be finite (checked by the caller). */
static atf_error qr_basis(const double *X, int nr, int nc, int *rank, double **Qt,
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
    double tol = qr_cutoff(nr, nc, fabs(a[0]));
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

/* G = XᵀX (nc × nc, lower triangle, column-major; the upper triangle is zero), or NULL out of
 * memory. X row-major is Xᵀ column-major, so this is dsyrk of Xᵀ without a transpose. */
static double *gram_of(const double *X, int nr, int nc)
{
    double *G = calloc((size_t)nc * (size_t)nc, sizeof *G);
    if (G)
        cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, nc, nr, 1.0, X, nc, 0.0, G, nc);
    return G;
}

/* Ascending eigenvalues of the Gram into lam[nc]; with vectors = 1 the eigenvectors overwrite
 * G (column j is the eigenvector of lam[j]), otherwise G is left as it is. */
static atf_error gram_eigen(double *G, int nc, double *lam, int vectors, const char *what,
                            char *err)
{
    size_t size = (size_t)nc * (size_t)nc;
    double *work = vectors ? G : malloc(size * sizeof *work);
    if (!work) {
        atf_errorf(err, "%s: out of memory for the Gram eigenvalues (%d × %d)", what, nc, nc);
        return ATF_E_NOMEM;
    }
    if (!vectors)
        memcpy(work, G, size * sizeof *work);
    lapack_int info = LAPACKE_dsyevd(LAPACK_COL_MAJOR, vectors ? 'V' : 'N', 'L', nc, work, nc,
                                     lam);
    if (!vectors)
        free(work);
    if (info != 0) {
        atf_errorf(err, "%s: eigendecomposition of the %d × %d Gram failed (info %d)", what, nc,
                   nc, (int)info);
        return ATF_E_NUMERICAL;
    }
    return ATF_OK;
}

/* The QR's own test on the candidate directions: every row x_i of X must have
 * ‖Z_dropᵀ x_i‖ ≤ max(nr, nc)·ε·max_i‖x_i‖ (Z_drop: k orthonormal vectors, row-major k × nc;
 * r11 = max_i‖x_i‖).
 * The pivoted QR keeps a direction exactly when the largest remaining column of Xᵀ — the
 * largest part of a row of X off the kept space — exceeds that cutoff; an accepted basis
 * therefore changes every constraint row by at most the QR's relative cutoff. Returns 1 if the
 * candidates pass, 0 if not, −1 out of memory. */
static int verify_dropped(const double *X, int nr, int nc, double r11, const double *Zdrop,
                          int k)
{
    double tol = qr_cutoff(nr, nc, r11);
    int panel = nr < VERIFY_PANEL ? nr : VERIFY_PANEL;
    double *T = malloc((size_t)panel * (size_t)k * sizeof *T);
    if (!T)
        return -1;
    int ok = 1;
    for (int i0 = 0; ok && i0 < nr; i0 += panel) {
        int rows = nr - i0 < panel ? nr - i0 : panel;
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, k, nc, 1.0,
                    X + (size_t)i0 * (size_t)nc, nc, Zdrop, nc, 0.0, T, k);
        for (int i = 0; ok && i < rows; i++)
            ok = cblas_dnrm2(k, T + (size_t)i * (size_t)k, 1) <= tol;
    }
    free(T);
    return ok;
}

/* The Gram route for a side that must be reduced: eigenvectors of G, the k of the smallest
 * eigenvalues verified as droppable. On success *Qt holds the other nc − k (row-major) and
 * *rule is GRAM; when the verification fails *Qt stays NULL and *rule is QR_FALLBACK. */
static atf_error gram_basis(const double *X, int nr, int nc, double r11, double *G,
                            double *lam, int k, int *rank, double **Qt, atf_sv_basis_rule *rule,
                            const char *what, char *err)
{
    atf_error e = gram_eigen(G, nc, lam, 1, what, err);
    if (e != ATF_OK)
        return e;
    /* column j of the column-major G is eigenvector j: the first k columns are Z_drop as k
     * row-major rows, the rest are Q_cᵀ row-major */
    int ok = verify_dropped(X, nr, nc, r11, G, k);
    if (ok < 0) {
        atf_errorf(err, "%s: out of memory verifying the subspace basis", what);
        return ATF_E_NOMEM;
    }
    *rule = ok ? ATF_SV_BASIS_GRAM : ATF_SV_BASIS_QR_FALLBACK;
    if (!ok)
        return ATF_OK;
    int r = nc - k;
    double *q = malloc((size_t)r * (size_t)nc * sizeof *q);
    if (!q) {
        atf_errorf(err, "%s: out of memory for the subspace basis (%d × %d)", what, r, nc);
        return ATF_E_NOMEM;
    }
    memcpy(q, G + (size_t)k * (size_t)nc, (size_t)r * (size_t)nc * sizeof *q);
    *Qt = q;
    *rank = r;
    return ATF_OK;
}

/* The Gram's verdict on a tall side (nr ≥ nc): FULL_RANK, SKIPPED, or GRAM (to be reduced by
 * gram_basis with G, lam and the count k of small eigenvalues); QR if λ_max is not positive. */
static atf_error gram_verdict(double *G, int nc, double *lam, int *k, atf_sv_basis_rule *rule,
                              const char *what, char *err)
{
    atf_error e = gram_eigen(G, nc, lam, 0, what, err);
    if (e != ATF_OK)
        return e;
    double lmax = lam[nc - 1];
    if (!(lmax > 0.0)) {
        *rule = ATF_SV_BASIS_QR;
        return ATF_OK;
    }
    *k = 0;
    while (*k < nc && lam[*k] <= GRAM_KEEP_REL * lmax)
        (*k)++;
    *rule = *k == 0                            ? ATF_SV_BASIS_FULL_RANK
            : *k < SKIP_FRACTION * (double)nc ? ATF_SV_BASIS_SKIPPED
                                               : ATF_SV_BASIS_GRAM;
    return ATF_OK;
}

static int lower_finite(const double *G, int nc)
{
    for (int j = 0; j < nc; j++)
        if (!atf_sv_all_finite(G + (size_t)j * (size_t)nc + j, (size_t)(nc - j)))
            return 0;
    return 1;
}

atf_error atf_sv_row_basis(const double *X, int nr, int nc, atf_sv_basis_how how, int *rank,
                           double **Qt, atf_sv_basis_rule *rule, const char *what, char *err)
{
    *Qt = NULL;
    *rank = nc;
    *rule = ATF_SV_BASIS_QR;
    if (!atf_sv_all_finite(X, (size_t)nr * (size_t)nc)) { /* never hand LAPACK NaN or Inf */
        atf_errorf(err, "%s: non-finite entries in the factor (%d × %d)", what, nr, nc);
        return ATF_E_NUMERICAL;
    }
    /* a wide factor has rank ≤ nr < nc: a reduction is certain and its QR costs O(nr²·nc),
     * less than the nc × nc Gram; X = 0 keeps one direction (the QR's rule), so that the block
     * never vanishes */
    double r11 = how == ATF_SV_BASIS_FORCE_QR || nr < nc ? 0.0 : max_row_norm(X, nr, nc);
    if (!(r11 > ldexp(1.0, -GRAM_ROW_EXP) && r11 < ldexp(1.0, GRAM_ROW_EXP)))
        return qr_basis(X, nr, nc, rank, Qt, what, err);
    double *G = gram_of(X, nr, nc), *lam = malloc((size_t)nc * sizeof *lam);
    atf_error e = ATF_OK;
    int k = 0;
    if (!G || !lam) {
        atf_errorf(err, "%s: out of memory for the %d × %d Gram", what, nc, nc);
        e = ATF_E_NOMEM;
    } else if (!lower_finite(G, nc)) {
        atf_errorf(err, "%s: the Gram XᵀX (%d × %d) has non-finite entries", what, nc, nc);
        e = ATF_E_NUMERICAL;
    } else {
        e = gram_verdict(G, nc, lam, &k, rule, what, err);
    }
    if (e == ATF_OK && *rule == ATF_SV_BASIS_SKIPPED && how == ATF_SV_BASIS_NO_SKIP)
        *rule = ATF_SV_BASIS_GRAM;
    if (e == ATF_OK && *rule == ATF_SV_BASIS_GRAM)
        e = gram_basis(X, nr, nc, r11, G, lam, k, rank, Qt, rule, what, err);
    free(G), free(lam);
    if (e == ATF_OK && (*rule == ATF_SV_BASIS_QR || *rule == ATF_SV_BASIS_QR_FALLBACK))
        e = qr_basis(X, nr, nc, rank, Qt, what, err);
    return e;
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

/* Over processes no process holds a whole factor: the Gram XᵀX of the rows held (nr of them)
 * is summed over the processes and its verdict taken; a factor that proves of full rank, or
 * whose reduction would be skipped anyway, is kept whole, as one process keeps it. A reduction
 * needs the whole factor: refused. */
static atf_error shard_verdict(atf_solver *s, const double *X, int nr, int nc, const char *what,
                               char *err)
{
    double *G = gram_of(X, nr, nc), *lam = malloc((size_t)nc * sizeof *lam);
    double *lo = atf_sv_dd_low(s, (size_t)nc * nc);
    if (lo)
        memset(lo, 0, (size_t)nc * nc * sizeof *lo);
    double missing = atf_sv_max(s, G && lam && lo ? 0.0 : 1.0);
    atf_error e = ATF_OK;
    atf_sv_basis_rule rule = ATF_SV_BASIS_QR;
    int k = 0;
    double r11 = atf_sv_max(s, max_row_norm(X, nr, nc));
    if (missing != 0.0) {
        atf_errorf(err, "%s: out of memory for the %d × %d Gram", what, nc, nc);
        e = ATF_E_NOMEM;
    } else {
        atf_sv_sum_dd(s, G, lo, (size_t)nc * nc);
        if (!(r11 > ldexp(1.0, -GRAM_ROW_EXP) && r11 < ldexp(1.0, GRAM_ROW_EXP)) ||
            !lower_finite(G, nc))
            rule = ATF_SV_BASIS_QR;
        else
            e = gram_verdict(G, nc, lam, &k, &rule, what, err);
    }
    if (e == ATF_OK && rule != ATF_SV_BASIS_FULL_RANK && rule != ATF_SV_BASIS_SKIPPED) {
        atf_errorf(err, "%s: not of full rank (or too far from unit size to tell), and its "
                   "subspace reduction needs the whole factor: solve it in one process, or "
                   "with --no-reduce", what);
        e = ATF_E_USAGE;
    }
    free(G), free(lam);
    return e;
}

static atf_error reduce_shard_block(atf_solver *s, atf_sv_var *v, char *err)
{
    const atf_block *b = v->orig;
    char what[ATF_NAMELEN + 32];
    snprintf(what, sizeof what, "block %s: H", b->name);
    atf_error e = shard_verdict(s, b->H, s->share.count, b->rows, what, err);
    snprintf(what, sizeof what, "block %s: D", b->name);
    return e ? e : shard_verdict(s, b->D, s->share.count * b->C, b->cols, what, err);
}

static atf_error reduce_block(atf_sv_var *v, char *err)
{
    const atf_block *b = v->orig;
    char what[ATF_NAMELEN + 32];
    atf_sv_basis_rule rule;
    snprintf(what, sizeof what, "block %s: H", b->name);
    int r = b->rows, c = b->cols;
    atf_error e = atf_sv_row_basis(b->H, b->N, b->rows, ATF_SV_BASIS_AUTO, &r, &v->Qct, &rule,
                                   what, err);
    if (e != ATF_OK)
        return e;
    snprintf(what, sizeof what, "block %s: D", b->name);
    e = atf_sv_row_basis(b->D, b->M, b->cols, ATF_SV_BASIS_AUTO, &c, &v->Qrt, &rule, what, err);
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

static atf_sv_kind var_kind(atf_global_structure structure, const atf_block *b)
{
    if (structure == ATF_GLOBAL_FULL)
        return ATF_SV_GLOBAL_NORM;
    if (structure == ATF_GLOBAL_DIAGONAL || b->structure == ATF_STRUCT_DIAGONAL)
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
        v->kind = var_kind(s->structure, b);
        if (s->set.reduce && b->kind == ATF_OP_FACTORED && v->kind != ATF_SV_ENTRYWISE) {
            atf_error e = s->procs ? reduce_shard_block(s, v, err) : reduce_block(v, err);
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
    s->op_ptrs = malloc((size_t)s->nvars * sizeof *s->op_ptrs);
    s->hess_x = malloc((size_t)s->nvars * sizeof *s->hess_x);
    s->hess_g = malloc((size_t)s->nvars * sizeof *s->hess_g);
    s->hess_lo = malloc((size_t)s->nvars * sizeof *s->hess_lo);
    atf_sv_shards_views(s);
    int64_t work = 1;
    for (int l = 0; s->op_ptrs && l < s->nvars; l++) {
        int64_t w = atf_block_work_size(&s->vars[l].op);
        work = w > work ? w : work;
        s->op_ptrs[l] = &s->vars[l].op;
    }
    if (s->op_ptrs && atf_sv_fusable(s->nvars, s->op_ptrs)) {
        int64_t w = atf_factored_hess_work_size(s->nvars, s->op_ptrs, 1);
        work = w > work ? w : work;
    }
    s->op_work = malloc((size_t)work * sizeof *s->op_work);
    s->op_work_len = work;
    if (!s->op_work || !s->op_ptrs || !s->hess_x || !s->hess_g || !s->hess_lo) {
        atf_errorf(err, "solver: out of memory for %lld doubles of operator scratch",
                   (long long)work);
        return ATF_E_NOMEM;
    }
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
    free(s->op_work), free(s->op_ptrs), free(s->hess_x), free(s->hess_g), free(s->hess_lo);
    free(s->dd);
    s->dd = NULL;
    s->dd_len = 0;
    s->hess_lo = NULL;
    s->op_work = NULL;
    s->op_ptrs = NULL;
    s->hess_x = NULL;
    s->hess_g = NULL;
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
