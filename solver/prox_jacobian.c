/* prox_jacobian.c — the generalized Jacobian of the blockwise prox of Σ Ω̃ (solver_newton.h).
 *
 * For a spectral matrix var with thin SVD z = U diag(σ) Vᵀ and φ the scalar prox of tω̃, the
 * prox is U diag(φ(σ)) Vᵀ and its (Clarke) Jacobian acts on a direction H through Ĥ = Uᵀ H V
 * (Ding, Sun, Sun and Toh 2018; Lewis and Sendov 2001):
 *
 *     J[H] = U (Ω¹ ∘ sym Ĥ + Ω² ∘ skew Ĥ) Vᵀ + ω³ ∘ (the part of H outside span U ⊗ span V)
 *
 * with divided differences Ω¹_ij = (φ_i − φ_j)/(σ_i − σ_j) (φ′ where σ_i = σ_j),
 * Ω²_ij = (φ_i + φ_j)/(σ_i + σ_j) (φ′(0) where both are 0) and ω³_i = φ_i/σ_i (φ′(0) at 0).
 * Outside the core, for rows ≥ cols, the part is (I − UUᵀ) H V with row scale ω³ on V's index;
 * for rows < cols, U Uᵀ H (I − VVᵀ) with ω³ on U's index. Only matrices of the block's size are
 * formed (four GEMMs of rows·cols·k per map), never the Jacobian itself.
 *
 * The same rotation applies any coefficient map f(θ): J (f = θ), the projector onto
 * S = {θ > θ_min} and the penalty curvature Λ = (1/θ − 1)/t on S, which is what the Newton
 * system needs (for smooth ω̃, J = (I + t∇²Ω̃)⁻¹ at prox(z), so Λ = ∇²Ω̃ there). */
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solver_newton.h"

/* Singular values closer than this (relative) count as equal in the divided differences: the
 * cancellation error of φ_i − φ_j is then at most about 1e-16/1e-7 relative. */
#define TIE_REL 1e-7
/* θ at or below this is outside S (the prox is flat there to working precision). */
#define THETA_MIN 1e-8

static size_t coef_len(const atf_jac_var *v)
{
    return v->kind == ATF_JAC_SPECTRAL ? (size_t)v->k * (size_t)v->k : 0;
}

static size_t coef3_len(const atf_jac_var *v)
{
    return v->kind == ATF_JAC_SPECTRAL ? (size_t)v->k : v->kind == ATF_JAC_NORM ? 2 : v->len;
}

static int coef_alloc(const atf_jac_var *v, atf_jac_coef *c)
{
    size_t n12 = coef_len(v), n3 = coef3_len(v);
    c->c1 = n12 ? calloc(n12, sizeof *c->c1) : NULL;
    c->c2 = n12 ? calloc(n12, sizeof *c->c2) : NULL;
    c->c3 = calloc(n3 ? n3 : 1, sizeof *c->c3);
    return c->c3 && (!n12 || (c->c1 && c->c2));
}

static void coef_free(atf_jac_coef *c)
{
    free(c->c1), free(c->c2), free(c->c3);
}

static int spectral_alloc(atf_jac_var *v)
{
    size_t k = (size_t)v->k, big = (size_t)(v->rows > v->cols ? v->rows : v->cols) * k;
    v->U = malloc((size_t)v->rows * k * sizeof *v->U);
    v->Vt = malloc(k * (size_t)v->cols * sizeof *v->Vt);
    v->sigma = malloc(k * sizeof *v->sigma);
    v->phi = malloc(k * sizeof *v->phi);
    v->dphi = malloc(k * sizeof *v->dphi);
    v->T = malloc(big * sizeof *v->T);
    v->Y = malloc(big * sizeof *v->Y);
    v->Hh = malloc(k * k * sizeof *v->Hh);
    v->Hh2 = malloc(k * k * sizeof *v->Hh2);
    v->X = malloc(big * sizeof *v->X); /* second input's T, then the core */
    v->a = malloc(v->len * sizeof *v->a);
    v->iwork = malloc(8 * k * sizeof *v->iwork);
    if (!v->U || !v->Vt || !v->sigma || !v->phi || !v->dphi || !v->T || !v->Y || !v->Hh ||
        !v->Hh2 || !v->X || !v->a || !v->iwork)
        return 0;
    double query = 0.0;
    if (LAPACKE_dgesdd_work(LAPACK_COL_MAJOR, 'S', v->cols, v->rows, v->a, v->cols, v->sigma,
                            v->Vt, v->cols, v->U, v->k, &query, -1, v->iwork) != 0)
        return 0;
    v->lwork = (int)query + 1;
    v->work = malloc((size_t)v->lwork * sizeof *v->work);
    return v->work != NULL;
}

static int var_alloc(atf_jac_var *v)
{
    int ok = coef_alloc(v, &v->theta) && coef_alloc(v, &v->lam) && coef_alloc(v, &v->mask) &&
             coef_alloc(v, &v->dinv);
    if (ok && v->kind == ATF_JAC_SPECTRAL)
        ok = spectral_alloc(v);
    if (ok && v->kind == ATF_JAC_NORM)
        ok = (v->u = malloc((v->len ? v->len : 1) * sizeof *v->u)) != NULL;
    return ok;
}

atf_error atf_jac_alloc(atf_solver *s, atf_jac *jac, char *err)
{
    memset(jac, 0, sizeof *jac);
    int full = s->structure == ATF_GLOBAL_FULL;
    jac->nvars = full ? 1 : s->nvars;
    jac->theta_min = THETA_MIN;
    jac->vars = calloc((size_t)jac->nvars, sizeof *jac->vars);
    if (!jac->vars)
        goto nomem;
    for (int l = 0; l < jac->nvars; l++) {
        atf_jac_var *v = &jac->vars[l];
        if (full) {
            v->kind = ATF_JAC_NORM, v->off = 0, v->len = s->n;
        } else {
            const atf_sv_var *sv = &s->vars[l];
            v->off = sv->off, v->len = sv->len, v->rows = sv->rows, v->cols = sv->cols;
            v->k = sv->k;
            v->kind = sv->kind == ATF_SV_ENTRYWISE                  ? ATF_JAC_ENTRYWISE
                      : sv->kind == ATF_SV_SPECTRAL && sv->k > 1 ? ATF_JAC_SPECTRAL
                                                                  : ATF_JAC_NORM;
        }
        if (!var_alloc(v))
            goto nomem;
    }
    return ATF_OK;
nomem:
    atf_jac_free(jac);
    atf_errorf(err, "newton: out of memory for the prox Jacobian of %d blocks", s->nvars);
    return ATF_E_NOMEM;
}

void atf_jac_free(atf_jac *jac)
{
    for (int l = 0; jac->vars && l < jac->nvars; l++) {
        atf_jac_var *v = &jac->vars[l];
        coef_free(&v->theta), coef_free(&v->lam), coef_free(&v->mask), coef_free(&v->dinv);
        free(v->U), free(v->Vt), free(v->sigma), free(v->phi), free(v->dphi), free(v->u);
        free(v->T), free(v->Y), free(v->Hh), free(v->Hh2), free(v->X), free(v->a);
        free(v->work), free(v->iwork);
    }
    free(jac->vars);
    memset(jac, 0, sizeof *jac);
}

/* ---- building --------------------------------------------------------------------------- */

static const atf_penalty *var_penalty(const atf_solver *s, int l)
{
    return s->structure == ATF_GLOBAL_FULL ? &s->full_pen : &s->vars[l].pen;
}

/* Thin SVD of the row-major core C into U (rows × k), σ, Vt (k × cols), row-major: dgesdd of the
 * column-major transpose Cᵀ returns V (cols × k, col-major = Vᵀ row-major) and Uᵀ. */
static int spectral_svd(atf_jac_var *v, const double *C)
{
    if (!atf_sv_all_finite(C, v->len))
        return -1; /* LAPACK never sees NaN or Inf */
    memcpy(v->a, C, v->len * sizeof *v->a);
    int info = (int)LAPACKE_dgesdd_work(LAPACK_COL_MAJOR, 'S', v->cols, v->rows, v->a, v->cols,
                                        v->sigma, v->Vt, v->cols, v->U, v->k, v->work, v->lwork,
                                        v->iwork);
    if (info == 0 && atf_sv_all_finite(v->sigma, (size_t)v->k))
        return 0;
    memcpy(v->a, C, v->len * sizeof *v->a); /* dgesdd may fail to converge: the QR SVD */
    double *superb = malloc((size_t)v->k * sizeof *superb);
    if (!superb)
        return -1;
    info = (int)LAPACKE_dgesvd(LAPACK_COL_MAJOR, 'S', 'S', v->cols, v->rows, v->a, v->cols,
                               v->sigma, v->Vt, v->cols, v->U, v->k, superb);
    free(superb);
    return info == 0 && atf_sv_all_finite(v->sigma, (size_t)v->k) ? 0 : -1;
}

static int tie(double a, double b)
{
    return fabs(a - b) <= TIE_REL * fmax(fabs(a), fabs(b));
}

/* Ω¹, Ω², ω³ from σ, φ, φ′ (φ′(0) = dphi0). */
static void spectral_theta(atf_jac_var *v, double dphi0)
{
    int k = v->k;
    const double *s = v->sigma, *phi = v->phi, *dphi = v->dphi;
    for (int i = 0; i < k; i++) {
        for (int j = 0; j < k; j++) {
            size_t ij = (size_t)i * (size_t)k + (size_t)j;
            v->theta.c1[ij] = tie(s[i], s[j]) ? 0.5 * (dphi[i] + dphi[j])
                                              : (phi[i] - phi[j]) / (s[i] - s[j]);
            double sum = s[i] + s[j];
            v->theta.c2[ij] = sum > 0.0 ? (phi[i] + phi[j]) / sum : dphi0;
        }
        v->theta.c3[i] = s[i] > 0.0 ? phi[i] / s[i] : dphi0;
    }
}

static int build_spectral(atf_jac_var *v, const atf_penalty *pen, const double *z, double t,
                          double *x)
{
    if (spectral_svd(v, z) != 0)
        return -1;
    int k = v->k;
    memcpy(v->phi, v->sigma, (size_t)k * sizeof *v->phi);
    atf_penalty_prox_many(pen, v->phi, (size_t)k, t);
    for (int i = 0; i < k; i++)
        v->dphi[i] = atf_penalty_prox_slope(pen, v->sigma[i], t);
    spectral_theta(v, atf_penalty_prox_slope(pen, 0.0, t));
    if (x) { /* x = U diag(φ) Vᵀ, with Y as U diag(φ) */
        for (int r = 0; r < v->rows; r++)
            for (int i = 0; i < k; i++)
                v->Y[(size_t)r * (size_t)k + (size_t)i] = v->U[(size_t)r * (size_t)k + (size_t)i] * v->phi[i];
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, v->rows, v->cols, k, 1.0, v->Y, k,
                    v->Vt, v->cols, 0.0, x, v->cols);
    }
    return 0;
}

static int build_norm(atf_jac_var *v, const atf_penalty *pen, const double *z, double t,
                      double *x)
{
    if (!atf_sv_all_finite(z, v->len))
        return -1;
    double rho = atf_sv_norm(z, v->len), phi = atf_penalty_prox(pen, rho, t, NULL);
    double d0 = atf_penalty_prox_slope(pen, 0.0, t);
    v->theta.c3[0] = rho > 0.0 ? atf_penalty_prox_slope(pen, rho, t) : d0;
    v->theta.c3[1] = rho > 0.0 ? phi / rho : d0;
    for (size_t i = 0; i < v->len; i++)
        v->u[i] = rho > 0.0 ? z[i] / rho : 0.0;
    if (x)
        for (size_t i = 0; i < v->len; i++)
            x[i] = phi * v->u[i];
    return 0;
}

static int build_entrywise(atf_jac_var *v, const atf_penalty *pen, const double *z, double t,
                           double *x)
{
    if (!atf_sv_all_finite(z, v->len))
        return -1;
    for (size_t i = 0; i < v->len; i++) {
        v->theta.c3[i] = atf_penalty_prox_slope(pen, z[i], t);
        if (x)
            x[i] = atf_penalty_prox(pen, z[i], t, NULL);
    }
    return 0;
}

/* Λ and the mask from θ. */
static void derive(atf_jac_coef *theta, atf_jac_coef *lam, atf_jac_coef *mask, size_t n12,
                  size_t n3, double t, double theta_min, int *nonconvex)
{
    for (int part = 0; part < 3; part++) {
        const double *th = part == 0 ? theta->c1 : part == 1 ? theta->c2 : theta->c3;
        double *l = part == 0 ? lam->c1 : part == 1 ? lam->c2 : lam->c3;
        double *m = part == 0 ? mask->c1 : part == 1 ? mask->c2 : mask->c3;
        size_t n = part < 2 ? n12 : n3;
        for (size_t i = 0; i < n; i++) {
            int in = th[i] > theta_min;
            m[i] = in ? 1.0 : 0.0;
            l[i] = in ? (1.0 / th[i] - 1.0) / t : 0.0;
            if (th[i] > 1.0 + 1e-12)
                *nonconvex = 1;
        }
    }
}

int atf_jac_build(atf_solver *s, atf_jac *jac, const double *z, double t, double *x)
{
    jac->t = t;
    jac->nonconvex_coef = 0;
    for (int l = 0; l < jac->nvars; l++) {
        atf_jac_var *v = &jac->vars[l];
        const atf_penalty *pen = var_penalty(s, l);
        const double *zv = z + v->off;
        double *xv = x ? x + v->off : NULL;
        int st = v->kind == ATF_JAC_SPECTRAL ? build_spectral(v, pen, zv, t, xv)
                 : v->kind == ATF_JAC_NORM   ? build_norm(v, pen, zv, t, xv)
                                             : build_entrywise(v, pen, zv, t, xv);
        if (st != 0)
            return st;
        derive(&v->theta, &v->lam, &v->mask, coef_len(v), coef3_len(v), t, jac->theta_min,
               &jac->nonconvex_coef);
    }
    return 0;
}

/* Restrict the Jacobian to the support of x̄ (the proximal-gradient point of the current x):
 * where the prox-gradient step zeroes a singular value (an entry, a vector), the Newton model
 * treats it as zero too, as projected Newton methods treat the variables that the gradient step
 * holds at a bound (Bertsekas 1982). Only ever removes directions from S. */
static void restrict_var(atf_solver *s, atf_jac *jac, int l, int keep, const double *xbar)
{
    atf_jac_var *v = &jac->vars[l];
    if (v->kind == ATF_JAC_SPECTRAL) {
        int active = 0;
        while (active < v->k && v->phi[active] > 0.0)
            active++;
        if (keep >= active)
            return;
        for (int i = keep; i < v->k; i++)
            v->phi[i] = v->dphi[i] = 0.0;
        spectral_theta(v, atf_penalty_prox_slope(var_penalty(s, l), 0.0, jac->t));
    } else if (v->kind == ATF_JAC_NORM) {
        if (keep)
            return;
        v->theta.c3[0] = v->theta.c3[1] = 0.0;
    } else {
        for (size_t i = 0; i < v->len; i++)
            if (xbar[v->off + i] == 0.0)
                v->theta.c3[i] = 0.0;
    }
    derive(&v->theta, &v->lam, &v->mask, coef_len(v), coef3_len(v), jac->t, jac->theta_min,
           &jac->nonconvex_coef);
}

void atf_jac_restrict(atf_solver *s, atf_jac *jac, const int *support, const double *xbar)
{
    for (int l = 0; l < jac->nvars; l++)
        restrict_var(s, jac, l, support[l], xbar);
}

/* ---- applying a map ------------------------------------------------------------------------ */

static const atf_jac_coef *coef_of(const atf_jac_var *v, atf_jac_which w)
{
    switch (w) {
    case ATF_JAC_LAMBDA: return &v->lam;
    case ATF_JAC_MASK: return &v->mask;
    case ATF_JAC_DINV: return &v->dinv;
    case ATF_JAC_THETA: break;
    }
    return &v->theta;
}

void atf_jac_set_shift(atf_jac *jac, double c)
{
    for (int l = 0; l < jac->nvars; l++) {
        atf_jac_var *v = &jac->vars[l];
        size_t n12 = coef_len(v), n3 = coef3_len(v);
        for (int part = 0; part < 3; part++) {
            const double *lam = part == 0 ? v->lam.c1 : part == 1 ? v->lam.c2 : v->lam.c3;
            const double *m = part == 0 ? v->mask.c1 : part == 1 ? v->mask.c2 : v->mask.c3;
            double *d = part == 0 ? v->dinv.c1 : part == 1 ? v->dinv.c2 : v->dinv.c3;
            size_t n = part < 2 ? n12 : n3;
            for (size_t i = 0; i < n; i++)
                d[i] = m[i] > 0.0 ? 1.0 / (lam[i] + c > 0.0 ? lam[i] + c : c) : 0.0;
        }
    }
}

/* T and Ĥ = Uᵀ H V of a direction H: T = H V (rows ≥ cols) or T = Uᵀ H (rows < cols). */
static void rotate(const atf_jac_var *v, const double *H, double *T, double *Hh)
{
    int r = v->rows, c = v->cols, k = v->k;
    if (r >= c) {
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, r, k, c, 1.0, H, c, v->Vt, c, 0.0,
                    T, k);
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, k, k, r, 1.0, v->U, k, T, k, 0.0,
                    Hh, k);
    } else {
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, k, c, r, 1.0, v->U, k, H, c, 0.0, T,
                    c);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, k, k, c, 1.0, T, c, v->Vt, c, 0.0,
                    Hh, k);
    }
}

/* Core X += c1 ∘ sym Ĥ + c2 ∘ skew Ĥ − (the core part of the complement map: Ĥ diag(c3) for
 * rows ≥ cols, diag(c3) Ĥ for rows < cols; zero when the block is square). */
static void core_add(const atf_jac_var *v, const atf_jac_coef *c, const double *Hh, double *X)
{
    int k = v->k, square = v->rows == v->cols, tall = v->rows >= v->cols;
    for (int i = 0; i < k; i++)
        for (int j = 0; j < k; j++) {
            size_t ij = (size_t)i * (size_t)k + (size_t)j, ji = (size_t)j * (size_t)k + (size_t)i;
            double sym = 0.5 * (Hh[ij] + Hh[ji]), skew = 0.5 * (Hh[ij] - Hh[ji]);
            double val = c->c1[ij] * sym + c->c2[ij] * skew;
            if (!square)
                val -= Hh[ij] * c->c3[tall ? j : i];
            X[ij] += val;
        }
}

/* Y += the complement scaled: T diag(c3) (rows ≥ cols: T is rows × k) or diag(c3) T (rows < cols:
 * T is k × cols). */
static void complement_add(const atf_jac_var *v, const atf_jac_coef *c, const double *T,
                           double *Y)
{
    int r = v->rows, cl = v->cols, k = v->k;
    if (r == cl)
        return;
    if (r > cl) {
        for (int a = 0; a < r; a++)
            for (int j = 0; j < k; j++)
                Y[(size_t)a * (size_t)k + (size_t)j] += T[(size_t)a * (size_t)k + (size_t)j] * c->c3[j];
    } else {
        for (int i = 0; i < k; i++)
            for (int b = 0; b < cl; b++)
                Y[(size_t)i * (size_t)cl + (size_t)b] += c->c3[i] * T[(size_t)i * (size_t)cl + (size_t)b];
    }
}

static void apply_spectral(atf_jac_var *v, const atf_jac_coef *c, const double *h,
                           const atf_jac_coef *c2, const double *h2, double *out)
{
    int r = v->rows, cl = v->cols, k = v->k;
    size_t kk = (size_t)k * (size_t)k, big = (size_t)(r > cl ? r : cl) * (size_t)k;
    double *core = v->Y; /* k × k core first, then reused */
    rotate(v, h, v->T, v->Hh);
    if (h2)
        rotate(v, h2, v->X, v->Hh2);
    memset(core, 0, kk * sizeof *core);
    core_add(v, c, v->Hh, core);
    if (h2)
        core_add(v, c2, v->Hh2, core);
    memcpy(v->Hh, core, kk * sizeof *core); /* the core, kept in Hh */
    memset(v->Y, 0, big * sizeof *v->Y);
    complement_add(v, c, v->T, v->Y);
    if (h2)
        complement_add(v, c2, v->X, v->Y);
    if (r >= cl) { /* out = (U core + Y) Vᵀ */
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r, k, k, 1.0, v->U, k, v->Hh, k,
                    1.0, v->Y, k);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r, cl, k, 1.0, v->Y, k, v->Vt,
                    cl, 0.0, out, cl);
    } else { /* out = U (core Vᵀ + Y) */
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, k, cl, k, 1.0, v->Hh, k, v->Vt,
                    cl, 1.0, v->Y, cl);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r, cl, k, 1.0, v->U, k, v->Y, cl,
                    0.0, out, cl);
    }
}

static void apply_norm(const atf_jac_var *v, const atf_jac_coef *c, const double *h,
                       double *out, int add)
{
    double a = atf_dot(v->u, h, (size_t)v->len);
    for (size_t i = 0; i < v->len; i++) {
        double radial = a * v->u[i];
        double val = c->c3[0] * radial + c->c3[1] * (h[i] - radial);
        out[i] = add ? out[i] + val : val;
    }
}

static void apply_entrywise(const atf_jac_var *v, const atf_jac_coef *c, const double *h,
                            double *out, int add)
{
    for (size_t i = 0; i < v->len; i++)
        out[i] = add ? out[i] + c->c3[i] * h[i] : c->c3[i] * h[i];
}

void atf_jac_apply(atf_jac *jac, atf_jac_which which, const double *h, atf_jac_which which2,
                   const double *h2, double *out)
{
    for (int l = 0; l < jac->nvars; l++) {
        atf_jac_var *v = &jac->vars[l];
        const atf_jac_coef *c = coef_of(v, which), *c2 = coef_of(v, which2);
        const double *hv = h + v->off, *h2v = h2 ? h2 + v->off : NULL;
        double *ov = out + v->off;
        if (v->kind == ATF_JAC_SPECTRAL) {
            apply_spectral(v, c, hv, c2, h2v, ov);
        } else if (v->kind == ATF_JAC_NORM) {
            apply_norm(v, c, hv, ov, 0);
            if (h2v)
                apply_norm(v, c2, h2v, ov, 1);
        } else {
            apply_entrywise(v, c, hv, ov, 0);
            if (h2v)
                apply_entrywise(v, c2, h2v, ov, 1);
        }
    }
}

/* How many directions each coefficient stands for. */
static void stats_spectral(const atf_jac_var *v, double *sum, double *dim)
{
    int k = v->k, other = (v->rows > v->cols ? v->rows : v->cols) - k;
    for (int i = 0; i < k; i++) {
        for (int j = i; j < k; j++) {
            size_t ij = (size_t)i * (size_t)k + (size_t)j;
            *sum += v->lam.c1[ij] + (j > i ? v->lam.c2[ij] : 0.0);
            *dim += v->mask.c1[ij] + (j > i ? v->mask.c2[ij] : 0.0);
        }
        *sum += other * v->lam.c3[i];
        *dim += other * v->mask.c3[i];
    }
}

void atf_jac_lambda_stats(const atf_jac *jac, double *mean, double *dim)
{
    double sum = 0.0, d = 0.0;
    for (int l = 0; l < jac->nvars; l++) {
        const atf_jac_var *v = &jac->vars[l];
        if (v->kind == ATF_JAC_SPECTRAL) {
            stats_spectral(v, &sum, &d);
        } else if (v->kind == ATF_JAC_NORM) {
            sum += v->lam.c3[0] + (double)(v->len ? v->len - 1 : 0) * v->lam.c3[1];
            d += v->mask.c3[0] + (double)(v->len ? v->len - 1 : 0) * v->mask.c3[1];
        } else {
            for (size_t i = 0; i < v->len; i++)
                sum += v->lam.c3[i], d += v->mask.c3[i];
        }
    }
    *mean = d > 0.0 ? sum / d : 0.0;
    *dim = d;
}
