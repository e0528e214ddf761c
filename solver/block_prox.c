/* block_prox.c — the proximal map of Σ_ℓ Ω̃_ℓ/ρ, block by block, and objective values.
 *
 * Spectral blocks: Σ_j ω̃(σ_j(·)) is absolutely symmetric, so its prox keeps the singular
 * vectors and applies the scalar prox to the singular values (docs/penalties.md; valid for nonconvex ω̃
 * because the scalar prox is monotone and so keeps their order and sign). A thin SVD
 * (dgesdd), the scalar prox with t = 1/ρ, and one GEMM over the singular values that stay
 * nonzero recompose the block. A row-major core is read as its column-major transpose, which
 * spares LAPACKE's row-major copies: dgesdd of Cᵀ returns V in `u` and Uᵀ in `vt`.
 * Vectors (one side of length 1) and the `full` structure: Σ_j ω̃(σ_j) = ω̃(‖·‖₂), so the prox
 * scales the vector. Diagonal blocks: the scalar prox on |C_ab| with the sign kept. */
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solver_internal.h"

static int is_matrix(const atf_sv_var *v)
{
    return v->kind == ATF_SV_SPECTRAL && v->k > 1;
}

atf_error atf_sv_prox_alloc(atf_solver *s, char *err)
{
    for (int l = 0; l < s->nvars; l++) {
        atf_sv_var *v = &s->vars[l];
        size_t k = (size_t)(v->k > 0 ? v->k : 1);
        v->s_prox = malloc(k * sizeof *v->s_prox);
        int ok = v->s_prox != NULL;
        if (v->kind == ATF_SV_ENTRYWISE) {
            v->a = malloc(v->len * sizeof *v->a);
            ok = ok && v->a;
        } else if (is_matrix(v)) {
            v->a = malloc(v->len * sizeof *v->a);
            v->s = malloc(k * sizeof *v->s);
            v->u = malloc((size_t)v->cols * k * sizeof *v->u);
            v->vt = malloc(k * (size_t)v->rows * sizeof *v->vt);
            v->iwork = malloc(8 * k * sizeof *v->iwork);
            double query = 0.0;
            ok = ok && v->a && v->s && v->u && v->vt && v->iwork &&
                 LAPACKE_dgesdd_work(LAPACK_COL_MAJOR, 'S', v->cols, v->rows, v->a, v->cols,
                                     v->s, v->u, v->cols, v->vt, v->k, &query, -1,
                                     v->iwork) == 0;
            v->lwork = (int)query + 1;
            v->work = ok ? malloc((size_t)v->lwork * sizeof *v->work) : NULL;
            ok = ok && v->work;
        }
        if (!ok) {
            atf_errorf(err, "block %s: out of memory for the SVD workspace (%d × %d core)",
                       v->orig->name, v->rows, v->cols);
            return ATF_E_NOMEM;
        }
    }
    return ATF_OK;
}

static int svd_finite(const atf_sv_var *v)
{
    size_t k = (size_t)v->k;
    return atf_sv_all_finite(v->s, k) && atf_sv_all_finite(v->u, (size_t)v->cols * k) &&
           atf_sv_all_finite(v->vt, k * (size_t)v->rows);
}

/* Divide and conquer (dgesdd) is the fast path. On large, strongly rank-deficient blocks it can
 * fail to converge or return non-finite vectors (seen: an unreduced 1024 × 1024 block of rank 50
 * in benchmarks/bench_solver); the QR-iteration SVD (dgesvd) is slower but robust, so it takes
 * over then. Its workspace is allocated per call: the fallback is rare.
 * A core with NaN or Inf never reaches LAPACK: dgesdd_work does not check its input and
 * iterated for over 600 s on one (`--loss squared:lambda=1e-308`), not bounded by any
 * iteration limit of ours, and no SVD of it would mean anything. */
int atf_sv_svd(atf_sv_var *v, const double *C)
{
    if (!atf_sv_all_finite(C, v->len))
        return ATF_SV_SVD_NONFINITE;
    memcpy(v->a, C, v->len * sizeof *v->a);
    int info = (int)LAPACKE_dgesdd_work(LAPACK_COL_MAJOR, 'S', v->cols, v->rows, v->a, v->cols,
                                        v->s, v->u, v->cols, v->vt, v->k, v->work, v->lwork,
                                        v->iwork);
    if (info == 0 && svd_finite(v))
        return 0;
    memcpy(v->a, C, v->len * sizeof *v->a);
    double *superb = malloc((size_t)(v->k > 1 ? v->k : 2) * sizeof *superb);
    if (!superb)
        return -1;
    info = (int)LAPACKE_dgesvd(LAPACK_COL_MAJOR, 'S', 'S', v->cols, v->rows, v->a, v->cols, v->s,
                               v->u, v->cols, v->vt, v->k, superb);
    free(superb);
    return info == 0 && svd_finite(v) ? 0 : (info ? info : -1);
}

/* z = prox_{tω̃(‖·‖)}(w): the norm shrinks by the scalar prox, the direction stays. */
static void prox_norm(const atf_penalty *pen, const double *w, double *z, size_t n, double t)
{
    double nw = n ? cblas_dnrm2((int)n, w, 1) : 0.0;
    double scale = nw > 0.0 ? atf_penalty_prox(pen, nw, t, NULL) / nw : 0.0;
    for (size_t i = 0; i < n; i++)
        z[i] = scale * w[i];
}

static void prox_entrywise(atf_sv_var *v, const double *w, double *z, double t)
{
    for (size_t i = 0; i < v->len; i++)
        v->a[i] = fabs(w[i]);
    atf_penalty_prox_many(&v->pen, v->a, v->len, t);
    for (size_t i = 0; i < v->len; i++)
        z[i] = copysign(v->a[i], w[i]);
}

/* Zᵀ = V diag(prox(σ)) Uᵀ over the singular values that stay positive. Returns the LAPACK info
 * (nonzero: the SVD did not converge, z is set to NaN so that the caller notices). */
static int prox_spectral(atf_sv_var *v, const double *w, double *z, double t)
{
    int info = atf_sv_svd(v, w);
    if (info != 0) {
        for (size_t i = 0; i < v->len; i++)
            z[i] = NAN;
        return info;
    }
    memcpy(v->s_prox, v->s, (size_t)v->k * sizeof *v->s_prox);
    atf_penalty_prox_many(&v->pen, v->s_prox, (size_t)v->k, t);
    int kept = 0; /* the prox is monotone, so the positive values lead */
    while (kept < v->k && v->s_prox[kept] > 0.0)
        kept++;
    if (kept == 0) {
        memset(z, 0, v->len * sizeof *z);
        return 0;
    }
    for (int j = 0; j < kept; j++)
        cblas_dscal(v->cols, v->s_prox[j], v->u + (size_t)j * (size_t)v->cols, 1);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, v->cols, v->rows, kept, 1.0, v->u,
                v->cols, v->vt, v->k, 0.0, z, v->cols);
    return 0;
}

void atf_sv_prox(atf_solver *s, const double *w, double *z, double rho)
{
    double t = 1.0 / rho;
    if (s->structure == ATF_GLOBAL_FULL) {
        prox_norm(&s->full_pen, w, z, s->n, t);
        return;
    }
    for (int l = 0; l < s->nvars; l++) {
        atf_sv_var *v = &s->vars[l];
        const double *wv = w + v->off;
        double *zv = z + v->off;
        if (v->kind == ATF_SV_ENTRYWISE)
            prox_entrywise(v, wv, zv, t);
        else if (is_matrix(v))
            prox_spectral(v, wv, zv, t);
        else
            prox_norm(&v->pen, wv, zv, v->len, t);
    }
}

static double sum_values(const atf_penalty *pen, const double *v, size_t n, int absolute)
{
    double sum = 0.0;
    for (size_t i = 0; i < n; i++)
        sum += atf_penalty_value(pen, absolute ? fabs(v[i]) : v[i], NULL);
    return sum;
}

static double norm_value(const atf_penalty *pen, const double *x, size_t n)
{
    double nx = n ? cblas_dnrm2((int)n, x, 1) : 0.0;
    return atf_penalty_value(pen, nx, NULL);
}

double atf_sv_objective(atf_solver *s, const double *x)
{
    if (s->structure == ATF_GLOBAL_FULL)
        return norm_value(&s->full_pen, x, s->n);
    double sum = 0.0;
    for (int l = 0; l < s->nvars; l++) {
        atf_sv_var *v = &s->vars[l];
        const double *xv = x + v->off;
        if (v->kind == ATF_SV_ENTRYWISE)
            sum += sum_values(&v->pen, xv, v->len, 1);
        else if (!is_matrix(v))
            sum += norm_value(&v->pen, xv, v->len);
        else if (atf_sv_svd(v, xv) != 0)
            return NAN;
        else
            sum += sum_values(&v->pen, v->s, (size_t)v->k, 0);
    }
    return sum;
}

double atf_sv_prox_objective(atf_solver *s, const double *z)
{
    if (s->structure == ATF_GLOBAL_FULL)
        return norm_value(&s->full_pen, z, s->n);
    double sum = 0.0;
    for (int l = 0; l < s->nvars; l++) {
        atf_sv_var *v = &s->vars[l];
        const double *zv = z + v->off;
        if (v->kind == ATF_SV_ENTRYWISE)
            sum += sum_values(&v->pen, zv, v->len, 1);
        else if (!is_matrix(v))
            sum += norm_value(&v->pen, zv, v->len);
        else
            sum += sum_values(&v->pen, v->s_prox, (size_t)v->k, 0);
    }
    return sum;
}

void atf_sv_prox_support(const atf_solver *s, const double *z, int *count)
{
    if (s->structure == ATF_GLOBAL_FULL) {
        count[0] = atf_sv_norm(z, s->n) > 0.0;
        return;
    }
    for (int l = 0; l < s->nvars; l++) {
        const atf_sv_var *v = &s->vars[l];
        int c = 0;
        if (is_matrix(v)) {
            while (c < v->k && v->s_prox[c] > 0.0)
                c++;
        } else {
            for (size_t i = 0; i < v->len; i++)
                c += z[v->off + i] != 0.0;
            if (v->kind != ATF_SV_ENTRYWISE)
                c = c > 0;
        }
        count[l] = c;
    }
}
