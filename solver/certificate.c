/* certificate.c — first-order optimality certificates that need no reference solution.
 *
 * A feasible B is a KKT point of min Ω̃(B) s.t. A vec B = r iff some subgradient of Ω̃ at B lies
 * in range(Aᵀ). For differentiable ω̃ the gradient is unique, G = Σ U diag(ω̃'(σ)) Vᵀ per block
 * (entrywise ω̃'(|B_ab|) sign B_ab for diagonal blocks, ω̃'(‖β‖) β/‖β‖ for the full vector),
 * and the certificate is its relative distance from range(Aᵀ): ‖G − P G‖/‖G‖ with
 * P = Aᵀ(AAᵀ)⁺A — computed as the distance of a candidate (P G, or the ADMM dual) from the
 * gradients allowed when singular values up to the answer's accuracy tau count as zero (see
 * zero_bound; for P G never larger than ‖G − P G‖, and equal to it when tau is far below the
 * penalty's scale). `nuclear` is not differentiable at 0, so there the certificate is the
 * relative distance of a candidate Y ∈ range(Aᵀ) (the ADMM dual ρU projected onto range(Aᵀ),
 * or the LP duals Aᵀλ) from the subdifferential 2√γ·∂‖B‖_*: {2√γ(U_r V_rᵀ + W) : U_rᵀW = 0,
 * W V_r = 0, ‖W‖₂ ≤ 1}. All of it is computed on the cores, which is exact: B = Q_c C Q_rᵀ has
 * the singular vectors of C rotated by Q_c, Q_r, and range(Aᵀ) lies in that subspace. */
#include <cblas.h>
#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solver_internal.h"

int atf_sv_any_nuclear(const atf_solver *s)
{
    if (s->structure == ATF_GLOBAL_FULL)
        return atf_penalty_is_nuclear(&s->full_pen);
    for (int l = 0; l < s->nvars; l++)
        if (atf_penalty_is_nuclear(&s->vars[l].pen))
            return 1;
    return 0;
}

/* ω̃'(v), with the nuclear subgradient taken as 0 on values at most tau (treated as zero). */
static double deriv(const atf_penalty *pen, double v, double tau)
{
    if (atf_penalty_is_nuclear(pen) && !(v > tau))
        return 0.0;
    return v > 0.0 ? atf_penalty_deriv(pen, v) : 0.0;
}

static void norm_gradient(const atf_penalty *pen, const double *x, double *g, size_t n,
                          double tau)
{
    double nx = atf_sv_norm(x, n);
    double scale = nx > 0.0 ? deriv(pen, nx, tau) / nx : 0.0;
    for (size_t i = 0; i < n; i++)
        g[i] = scale * x[i];
}

/* Gᵀ = V diag(ω̃'(σ)) Uᵀ (column-major view of the row-major G). */
static int spectral_gradient(atf_sv_var *v, const double *x, double *g, double tau)
{
    int info = atf_sv_svd(v, x);
    if (info != 0)
        return info;
    for (int j = 0; j < v->k; j++)
        cblas_dscal(v->cols, deriv(&v->pen, v->s[j], tau), v->u + (size_t)j * (size_t)v->cols,
                    1);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, v->cols, v->rows, v->k, 1.0, v->u,
                v->cols, v->vt, v->k, 0.0, g, v->cols);
    return 0;
}

double atf_sv_gradient(atf_solver *s, const double *x, double *g, double tau_abs)
{
    if (s->structure == ATF_GLOBAL_FULL) {
        norm_gradient(&s->full_pen, x, g, s->n, tau_abs);
        return atf_sv_norm(g, s->n);
    }
    for (int l = 0; l < s->nvars; l++) {
        atf_sv_var *v = &s->vars[l];
        const double *xv = x + v->off;
        double *gv = g + v->off;
        if (v->kind == ATF_SV_ENTRYWISE) {
            for (size_t i = 0; i < v->len; i++)
                gv[i] = copysign(deriv(&v->pen, fabs(xv[i]), tau_abs), xv[i]);
        } else if (v->k <= 1) {
            norm_gradient(&v->pen, xv, gv, v->len, tau_abs);
        } else if (spectral_gradient(v, xv, gv, tau_abs) != 0) {
            return NAN;
        }
    }
    return atf_sv_norm(g, s->n);
}

/* ---- distance from the nuclear subdifferential ---- */

static double pos(double a)
{
    return a > 0.0 ? a : 0.0;
}

/* What a subgradient must be at a singular value (or |entry|, or norm) s: ω̃'(s) when s > tau;
 * at most `bound` in magnitude when s ≤ tau counts as zero. For `nuclear` both are 2√γ. For a
 * differentiable ω̃ the bound is the largest ω̃' over [0, tau] (taken at tau and at s): values
 * below tau are zero to the accuracy of the answer, and there the certificate accepts any slope
 * ω̃ takes on [0, tau]. When tau is far below the scale of ω̃ this is ω̃'(s) ≈ 2s, i.e. the plain
 * gradient; far out in the tail (σ/√γ ≈ 1e150, where ω̃ is the nuclear norm to machine
 * precision) it is what makes the certificate meaningful at all. */
static double slope(const atf_penalty *pen, double s)
{
    return atf_penalty_is_nuclear(pen) ? atf_penalty_deriv(pen, 1.0) : atf_penalty_deriv(pen, s);
}

static double zero_bound(const atf_penalty *pen, double s, double tau)
{
    return fmax(slope(pen, s), slope(pen, tau));
}

/* dist² of y from ∂ω̃(‖·‖₂) at x (a vector, or the whole `full` vector). */
static double norm_dist2(const atf_penalty *pen, const double *x, const double *y, size_t n,
                         double tau, double unit)
{
    double nx = atf_sv_norm(x, n);
    if (!(nx > tau)) {
        double excess = pos(atf_sv_norm(y, n) - zero_bound(pen, nx, tau)) / unit;
        return excess * excess;
    }
    double c = slope(pen, nx), d2 = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = (y[i] - c * (x[i] / nx)) / unit;
        d2 += d * d;
    }
    return d2;
}

static double entrywise_dist2(const atf_penalty *pen, const double *x, const double *y, size_t n,
                              double tau, double unit)
{
    double d2 = 0.0;
    for (size_t i = 0; i < n; i++) {
        double s = fabs(x[i]);
        double d = (s > tau ? y[i] - copysign(slope(pen, s), x[i])
                            : pos(fabs(y[i]) - zero_bound(pen, s, tau))) / unit;
        d2 += d * d;
    }
    return d2;
}

/* dist² of Y from the subdifferential of Σ ω̃(σ_j(·)) at X = U diag(σ) Vᵀ, with
 * r = #{σ_j > tau}: split Y in X's singular bases; the block Y11 on (U_r, V_r) must equal
 * diag(ω̃'(σ_j)) (c·I for nuclear), the off-diagonal blocks Y12, Y21 must vanish, and
 * Ŷ = (I − U_rU_rᵀ) Y (I − V_rV_rᵀ) must have spectral norm ≤ the zero bound c (its distance to
 * that ball clips its singular values at c). Every part is formed explicitly and its norm taken, so
 * no squared norms are subtracted (that would lose half the digits of a small distance).
 * Column-major views: Ỹ = Yᵀ (m = cols × n = rows), V_r the first r columns of v->u, U_rᵀ the
 * first r rows of v->vt; the r × r block computed is Y11ᵀ. Returns NaN on failure. */
static double spectral_dist2(atf_sv_var *v, const double *x, const double *y, double tau,
                             double unit)
{
    if (atf_sv_svd(v, x) != 0)
        return NAN;
    int m = v->cols, n = v->rows, k = v->k, r = 0;
    while (r < k && v->s[r] > tau)
        r++;
    double c = slope(&v->pen, tau); /* the bound on the zero part */
    for (int j = r; j < k; j++)
        c = fmax(c, slope(&v->pen, v->s[j]));
    size_t rr = (size_t)(r ? r : 1);
    double *W = malloc(v->len * sizeof *W);
    double *A1 = malloc((size_t)m * rr * sizeof *A1);  /* Ỹ U_r            (m × r) */
    double *A2 = malloc(rr * (size_t)n * sizeof *A2);  /* V_rᵀ Ỹ           (r × n) */
    double *Y11 = malloc(rr * rr * sizeof *Y11);       /* V_rᵀ Ỹ U_r       (r × r) */
    double *T = malloc((size_t)m * rr * sizeof *T);    /* (I − V_rV_rᵀ) A1 (m × r) */
    double *sv = malloc((size_t)k * sizeof *sv);
    double d2 = NAN;
    if (!W || !A1 || !A2 || !Y11 || !T || !sv)
        goto done;
    memcpy(W, y, v->len * sizeof *W);
    double inner = 0.0;
    if (r > 0) {
        cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, m, r, n, 1.0, y, m, v->vt, k, 0.0,
                    A1, m);
        cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, r, n, m, 1.0, v->u, m, y, m, 0.0,
                    A2, r);
        cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, r, r, m, 1.0, v->u, m, A1, m, 0.0,
                    Y11, r);
        memcpy(T, A1, (size_t)m * (size_t)r * sizeof *T);
        cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, r, r, -1.0, v->u, m, Y11, r,
                    1.0, T, m);
        double y12 = atf_sv_norm(T, (size_t)m * (size_t)r) / unit;
        /* Ŷᵀ = Ỹ − V_r A2 − T U_rᵀ, before A2 becomes its own off-diagonal part */
        cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, n, r, -1.0, v->u, m, A2, r,
                    1.0, W, m);
        cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, n, r, -1.0, T, m, v->vt, k,
                    1.0, W, m);
        /* Y21ᵀ part: A2 − Y11ᵀ U_rᵀ */
        cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, r, n, r, -1.0, Y11, r, v->vt, k,
                    1.0, A2, r);
        double y21 = atf_sv_norm(A2, (size_t)r * (size_t)n) / unit;
        for (int j = 0; j < r; j++)
            Y11[(size_t)j * (size_t)r + (size_t)j] -= slope(&v->pen, v->s[j]);
        double e11 = atf_sv_norm(Y11, (size_t)r * (size_t)r) / unit;
        inner = e11 * e11 + y12 * y12 + y21 * y21;
    }
    /* a non-finite candidate has no distance; LAPACK never sees it (dgesdd can hang on NaN) */
    if (!atf_sv_all_finite(W, v->len) ||
        LAPACKE_dgesdd(LAPACK_COL_MAJOR, 'N', m, n, W, m, sv, NULL, 1, NULL, 1) != 0)
        goto done;
    double outer = 0.0;
    for (int j = 0; j < k; j++)
        outer += (pos(sv[j] - c) / unit) * (pos(sv[j] - c) / unit);
    d2 = inner + outer;
done:
    free(W), free(A1), free(A2), free(Y11), free(T), free(sv);
    return d2;
}

/* Σ over blocks of dist²(y_ℓ, ∂Ω̃_ℓ(x_ℓ)) / unit², with values at most tau counted as zero.
 * Every difference is divided by unit (the size of the gradient) before it is squared: squares
 * of gradients far from 1 (e.g. 1e-185, on badly scaled data) would underflow to a false 0. */
static double subdifferential_dist2(atf_solver *s, const double *x, const double *y, double tau,
                                    double unit)
{
    if (s->structure == ATF_GLOBAL_FULL)
        return norm_dist2(&s->full_pen, x, y, s->n, tau, unit);
    double d2 = 0.0;
    for (int l = 0; l < s->nvars; l++) {
        atf_sv_var *v = &s->vars[l];
        const double *xv = x + v->off, *yv = y + v->off;
        if (v->kind == ATF_SV_ENTRYWISE)
            d2 += entrywise_dist2(&v->pen, xv, yv, v->len, tau, unit);
        else if (v->k <= 1)
            d2 += norm_dist2(&v->pen, xv, yv, v->len, tau, unit);
        else
            d2 += spectral_dist2(v, xv, yv, tau, unit);
    }
    return d2;
}

double atf_sv_stationarity(atf_solver *s, const double *x, const double *y, double tau_abs)
{
    size_t n = s->n;
    double *g = malloc((n ? n : 1) * sizeof *g);
    double *h = malloc((n ? n : 1) * sizeof *h);
    double result = NAN;
    if (!g || !h)
        goto done;
    double gnorm = atf_sv_gradient(s, x, g, tau_abs);
    if (!isfinite(gnorm))
        goto done;
    if (!y) { /* candidate P G */
        memcpy(h, g, n * sizeof *h);
        atf_sv_project(s, h, NULL, 1);
        for (size_t i = 0; i < n; i++)
            h[i] = g[i] - h[i];
        y = h;
    }
    double scale = fmax(atf_sv_norm(y, n), gnorm);
    result = sqrt(subdifferential_dist2(s, x, y, tau_abs, scale > 0.0 ? scale : 1.0));
done:
    free(g), free(h);
    return result;
}

/* Used by admm.c for ρ0; kept here with the other gradient code. Returns 0 when the curvature
 * ⟨∇Ω̃(B0), B0⟩/‖B0‖² of a nonzero B0 is below the normal range of doubles: it is invariant
 * under the variable scaling of equilibrate.c (ω̃'(v)/v does not change with the units), so
 * then no choice of units brings the problem into range. */
double atf_sv_rho_scale(atf_solver *s)
{
    size_t n = s->n;
    double *g = malloc((n ? n : 1) * sizeof *g);
    double scale = 2.0; /* ω̃(v) = v² + o(v²): curvature 2 at the origin */
    double xn = atf_sv_norm(s->x_ls, n);
    if (g && xn > 0.0) {
        /* ⟨g, x/‖x‖⟩/‖x‖: no squares of ‖x‖, which may overflow or underflow */
        atf_sv_gradient(s, s->x_ls, g, 0.0);
        double num = 0.0;
        for (size_t i = 0; i < n; i++)
            num += g[i] * (s->x_ls[i] / xn);
        if (num > 0.0 && isfinite(num / xn))
            scale = num / xn >= DBL_MIN ? num / xn : 0.0;
        else if (num == 0.0 && atf_sv_norm(g, n) < DBL_MIN)
            scale = 0.0; /* the gradient underflowed */
    }
    free(g);
    return scale;
}

/* The least-squares point as an answer: its stationarity is its certificate. */
void atf_sv_least_squares_result(atf_solver *s, atf_result *res, double *x, atf_status status)
{
    memcpy(x, s->x_ls, s->n * sizeof *x);
    res->info.status = status;
    res->info.iterations = 0;
    res->info.primal_residual = 0.0;
    res->info.dual_residual = 0.0;
    double xn = s->n ? cblas_dnrm2((int)s->n, x, 1) : 0.0;
    res->info.stationarity = atf_sv_stationarity(s, x, NULL, 1e-12 * xn);
}
