/* irls.c — alternating adapted-kernel regression for interpolation (the paper's problem (4)):
 *
 *   minimise Ω(M̂) + ‖W‖²  subject to  Σ_ℓ ⟨G_m, M̂1 W_ℓ M̂2⟩ = r_m.
 *
 * For fixed M̂ the W-step is a weighted minimum-norm problem: with the weighted operator
 * Ã (rows vec(M̂1 G_m M̂2)), W = Ãᵀλ with K_M λ = r and K_M = Ã Ãᵀ; for factored blocks
 * Ã has the factors H M̂1 and D M̂2, so K_M = Σ_ℓ (H M̂1² Hᵀ) ∘ (D M̂2² Dᵀ) and the new
 * B = M̂1 W M̂2 = M̂1² (Σ_m λ_m G_m) M̂2². The M̂-step recovers the factors of B (eq. 15) from its
 * SVD: M̂1 = I + U diag(s1 − 1) Uᵀ, M̂2 = I + V diag(s2 − 1) Vᵀ. Vector blocks (and the `full`
 * structure) take the scalar z = s1·s2 of their norm, diagonal blocks one z per entry.
 * Start M̂ = I: the first B is the NTK minimum-norm interpolant.
 *
 * Monotonicity: Σ Ω̃(B_{k+1}) ≤ Ω(M̂_k) + ‖W_{k+1}‖² ≤ Ω(M̂_k) + ‖W_k‖² = Σ Ω̃(B_k), since ω̃ is
 * the minimum over factorisations and W_k is feasible for the W-step. In floating point (an
 * ill-conditioned K_M, the rank cut of its pseudo-inverse, the final projection) the computed
 * step can still increase the objective (beyond the rounding of its evaluation, 1e-14
 * relative); then the safeguard searches the feasible segment
 * B_k + α(B_{k+1} − B_k), α = 1/2, 1/4, …, for a point that does not, and stops if none does.
 * Everything runs on the cores of the subspace reduction (exact, as for ADMM), in work units. */
#include <cblas.h>
#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solver_penalized.h"

#define SAFEGUARD_HALVINGS 20
/* Σ Ω̃ is a sum of many terms: a new point may evaluate up to a few ulps above an equal
 * objective. Only a larger rise counts as an increase that the safeguard must repair. */
#define ROUNDING_SLACK 1e-14
#define STALL_CERTIFIED 1e-6 /* a rest point of the safeguard counts as solved below this */
#define CERTIFY_FACTOR 100.0 /* a small step counts as converged where stationarity <= 100 eps_rel */
#define CERTIFY_FLOOR 1e-8
#define PINV_CUTOFF 1e-13 /* eigenvalues of K_M below this × the largest count as zero */

/* The weighted operator of one var. */
typedef struct {
    atf_block op;        /* factored (H M̂1, D M̂2) or dense (rows vec(M̂1 G_m M̂2) or z ∘ G_m) */
    double *H, *D, *J;   /* owned arrays of op */
    double *M1, *M2;     /* spectral matrix vars: M̂1 [r × r], M̂2 [c × c] row-major */
    double *z;           /* otherwise: weights [len] (B = z ∘ W) */
} wvar;

static void wvar_free(wvar *w)
{
    free(w->H), free(w->D), free(w->J), free(w->M1), free(w->M2), free(w->z);
    memset(w, 0, sizeof *w);
}

static int is_matrix(const atf_sv_var *v)
{
    return v->kind == ATF_SV_SPECTRAL && v->k > 1;
}

/* M̂ = I + Σ_j (s_j − 1) q_j q_jᵀ with q_j = the columns of Q (n × k, element (a, j) at
 * Q[a·qa + j·qj]). */
static double *factor_matrix(int n, int k, const double *Q, size_t qa, size_t qj,
                             const double *sv)
{
    double *Mh = calloc((size_t)n * (size_t)n, sizeof *Mh);
    if (!Mh)
        return NULL;
    for (int a = 0; a < n; a++)
        Mh[(size_t)a * (size_t)n + (size_t)a] = 1.0;
    for (int j = 0; j < k; j++) {
        double c = sv[j] - 1.0;
        if (c == 0.0)
            continue;
        for (int a = 0; a < n; a++) {
            double qa_j = c * Q[(size_t)a * qa + (size_t)j * qj];
            for (int b = 0; b < n; b++)
                Mh[(size_t)a * (size_t)n + (size_t)b] += qa_j * Q[(size_t)b * qa + (size_t)j * qj];
        }
    }
    return Mh;
}

/* M̂1, M̂2 of a matrix var from the SVD of its core (factor recovery, eq. 15). */
static int matrix_factors(atf_sv_var *v, const double *C, wvar *w)
{
    if (atf_sv_svd(v, C) != 0)
        return -1;
    int k = v->k;
    double *s1 = malloc((size_t)k * sizeof *s1), *s2 = malloc((size_t)k * sizeof *s2);
    if (!s1 || !s2) {
        free(s1), free(s2);
        return -1;
    }
    for (int j = 0; j < k; j++)
        atf_penalty_factors(&v->pen, v->s[j], &s1[j], NULL, &s2[j]);
    /* U[a, j] = vt[j + a·k] (vt is Uᵀ column-major), V[b, j] = u[b + j·cols] */
    w->M1 = factor_matrix(v->rows, k, v->vt, (size_t)k, 1, s1);
    w->M2 = factor_matrix(v->cols, k, v->u, 1, (size_t)v->cols, s2);
    free(s1), free(s2);
    return w->M1 && w->M2 ? 0 : -1;
}

/* out = A M (A: n × p, M: p × p, both row-major). */
static double *times_square(const double *A, int n, int p, const double *Msq)
{
    double *out = malloc((size_t)n * (size_t)p * sizeof *out);
    if (out)
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, p, p, 1.0, A, p, Msq, p, 0.0,
                    out, p);
    return out;
}

/* The weighted operator of a matrix var: factored stays factored, else rows M̂1 G_m M̂2. */
static int weight_matrix_var(const atf_sv_var *v, wvar *w)
{
    const atf_block *b = &v->op;
    w->op = *b;
    int r = v->rows, c = v->cols;
    if (b->kind == ATF_OP_FACTORED) {
        w->H = times_square(b->H, b->N, r, w->M1);
        w->D = times_square(b->D, b->M, c, w->M2);
        w->op.H = w->H, w->op.D = w->D;
        return w->H && w->D ? 0 : -1;
    }
    double *J = atf_block_dense(b), *T = malloc((size_t)r * (size_t)c * sizeof *T);
    if (!J || !T) {
        free(J), free(T);
        return -1;
    }
    for (int m = 0; m < b->M; m++) {
        double *G = J + (size_t)m * v->len;
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r, c, r, 1.0, w->M1, r, G, c, 0.0,
                    T, c);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r, c, c, 1.0, T, c, w->M2, c, 0.0,
                    G, c);
    }
    free(T);
    w->J = J;
    w->op.kind = ATF_OP_DENSE;
    w->op.J = J;
    return 0;
}

/* Weights z (one per entry) of a var whose penalty acts on norms or entries: B = z ∘ W. */
static int weight_entries(const atf_sv_var *v, wvar *w)
{
    const atf_block *b = &v->op;
    w->op = *b;
    if (b->kind == ATF_OP_FACTORED && v->kind != ATF_SV_ENTRYWISE) { /* one z: scale H */
        size_t nh = (size_t)b->N * (size_t)v->rows;
        if (!(w->H = malloc(nh * sizeof *w->H)))
            return -1;
        for (size_t i = 0; i < nh; i++)
            w->H[i] = w->z[0] * b->H[i];
        w->op.H = w->H;
        return 0;
    }
    double *J = atf_block_dense(b);
    if (!J)
        return -1;
    for (int m = 0; m < b->M; m++)
        for (size_t j = 0; j < v->len; j++)
            J[(size_t)m * v->len + j] *= w->z[j];
    w->J = J;
    w->op.kind = ATF_OP_DENSE;
    w->op.J = J;
    return 0;
}

static double factor_z(const atf_penalty *pen, double d)
{
    double s1, s2;
    atf_penalty_factors(pen, d, &s1, NULL, &s2);
    return s1 * s2;
}

/* The weighted operators of all vars at the point x (M̂ from x's factors). */
static int build_weights(atf_solver *s, const double *x, wvar *ws)
{
    double zfull = s->structure == ATF_GLOBAL_FULL
                       ? factor_z(&s->full_pen, atf_sv_norm(x, s->n)) : 1.0;
    for (int l = 0; l < s->nvars; l++) {
        atf_sv_var *v = &s->vars[l];
        const double *xv = x + v->off;
        wvar *w = &ws[l];
        if (is_matrix(v)) {
            if (matrix_factors(v, xv, w) != 0 || weight_matrix_var(v, w) != 0)
                return -1;
            continue;
        }
        if (!(w->z = malloc(v->len * sizeof *w->z)))
            return -1;
        double zv = s->structure == ATF_GLOBAL_FULL ? zfull
                    : v->kind == ATF_SV_ENTRYWISE ? 0.0
                                                  : factor_z(&v->pen, atf_sv_norm(xv, v->len));
        for (size_t j = 0; j < v->len; j++)
            w->z[j] = v->kind == ATF_SV_ENTRYWISE ? factor_z(&v->pen, fabs(xv[j])) : zv;
        if (weight_entries(v, w) != 0)
            return -1;
    }
    return 0;
}

/* λ = K⁺ r: Cholesky, or the eigendecomposition with a relative cutoff when K is singular.
 * K is overwritten. */
static int solve_kernel(double *K, int M, const double *r, double *lambda)
{
    if (!atf_sv_all_finite(K, (size_t)M * (size_t)M) || !atf_sv_all_finite(r, (size_t)M))
        return -1; /* LAPACK never sees NaN or Inf */
    double *L = malloc((size_t)M * (size_t)M * sizeof *L);
    if (!L)
        return -1;
    memcpy(L, K, (size_t)M * (size_t)M * sizeof *L);
    memcpy(lambda, r, (size_t)M * sizeof *lambda);
    if (LAPACKE_dposv(LAPACK_COL_MAJOR, 'L', M, 1, L, M, lambda, M) == 0 &&
        atf_sv_all_finite(lambda, (size_t)M)) {
        free(L);
        return 0;
    }
    free(L);
    double *w = malloc((size_t)M * sizeof *w), *t = malloc((size_t)M * sizeof *t);
    int ok = w && t && LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'V', 'L', M, K, M, w) == 0;
    if (ok) {
        double cut = PINV_CUTOFF * fmax(w[M - 1], 0.0);
        cblas_dgemv(CblasColMajor, CblasTrans, M, M, 1.0, K, M, r, 1, 0.0, t, 1);
        for (int j = 0; j < M; j++)
            t[j] = w[j] > cut ? t[j] / w[j] : 0.0;
        cblas_dgemv(CblasColMajor, CblasNoTrans, M, M, 1.0, K, M, t, 1, 0.0, lambda, 1);
    }
    free(w), free(t);
    return ok ? 0 : -1;
}

/* B = M̂1 W M̂2 (or z ∘ W) with W = Ãᵀλ, into x. */
static int weighted_point(atf_solver *s, wvar *ws, const double *lambda, double *x)
{
    for (int l = 0; l < s->nvars; l++) {
        atf_sv_var *v = &s->vars[l];
        wvar *w = &ws[l];
        double *xv = x + v->off;
        atf_block_adjoint(&w->op, lambda, 0.0, xv);
        if (w->z) {
            for (size_t j = 0; j < v->len; j++)
                xv[j] *= w->z[j];
            continue;
        }
        int r = v->rows, c = v->cols;
        double *T = malloc(v->len * sizeof *T);
        if (!T)
            return -1;
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r, c, r, 1.0, w->M1, r, xv, c, 0.0,
                    T, c);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r, c, c, 1.0, T, c, w->M2, c, 0.0,
                    xv, c);
        free(T);
    }
    return 0;
}

/* One W-step from the factors of x: the new point in xn (projected onto A x = r). */
static int w_step(atf_solver *s, const double *x, double *xn, double *K, double *lambda)
{
    int M = s->work.M, rc = -1;
    wvar *ws = calloc((size_t)s->nvars, sizeof *ws);
    if (!ws)
        return -1;
    if (build_weights(s, x, ws) != 0)
        goto done;
    memset(K, 0, (size_t)M * (size_t)M * sizeof *K);
    for (int l = 0; l < s->nvars; l++)
        atf_block_gram(&ws[l].op, 1.0, K);
    if (solve_kernel(K, M, s->work.r, lambda) != 0 || weighted_point(s, ws, lambda, xn) != 0)
        goto done;
    atf_sv_project(s, xn, s->work.r, 1); /* feasibility to machine precision */
    rc = atf_sv_all_finite(xn, s->n) ? 0 : -1;
done:
    for (int l = 0; l < s->nvars; l++)
        wvar_free(&ws[l]);
    free(ws);
    return rc;
}

/* The safeguard: the largest α = 2^−j with F(x + α(xn − x)) ≤ F(x), into xn. Returns F there,
 * or NAN when no α works. */
static double safeguard(atf_solver *s, const double *x, double *xn, double *trial, double F)
{
    size_t n = s->n;
    for (int j = 1; j <= SAFEGUARD_HALVINGS; j++) {
        double alpha = ldexp(1.0, -j);
        for (size_t i = 0; i < n; i++)
            trial[i] = x[i] + alpha * (xn[i] - x[i]);
        double Ft = atf_sv_objective(s, trial);
        if (Ft <= F) {
            memcpy(xn, trial, n * sizeof *xn);
            return Ft;
        }
    }
    return NAN;
}

/* A small step alone does not make a solution: on strongly nonconvex penalties (e.g. `abs` with
 * a tiny scale) IRLS can creep in steps below eps_rel while still far from a stationary point
 * (seen: step 1e-6 at stationarity 0.2). So a small step ends the run only where the
 * stationarity certificate confirms it; otherwise IRLS goes on (and may end at the limit). */
static double stationarity_at(atf_solver *s, const double *x)
{
    return atf_sv_stationarity(s, x, NULL, 1e-12 * atf_sv_norm(x, s->n));
}

static int certified(const atf_sv_budget *b, double stationarity)
{
    return stationarity <= fmax(CERTIFY_FACTOR * b->eps, CERTIFY_FLOOR);
}

atf_error atf_sv_irls(atf_solver *s, const atf_sv_budget *b, atf_result *res, double *x,
                      atf_irls_info *info, char *err)
{
    size_t n = s->n, bn = (n ? n : 1) * sizeof(double);
    int M = s->work.M;
    double *K = malloc((size_t)M * (size_t)M * sizeof *K), *lambda = malloc((size_t)M * sizeof *K);
    double *xn = malloc(bn), *trial = malloc(bn);
    memset(info, 0, sizeof *info);
    atf_error e = ATF_OK;
    if (!K || !lambda || !xn || !trial) {
        atf_errorf(err, "irls: out of memory for the %d × %d kernel", M, M);
        e = ATF_E_NOMEM;
        goto done;
    }
    double start = atf_now();
    memcpy(x, s->x_ls, n * sizeof *x); /* M̂ = I: the NTK minimum-norm interpolant */
    double F = atf_sv_objective(s, x);
    info->first_objective = atf_sv_unscale_objective(s, F);
    if (b->verbose)
        atf_sv_log(s, "atf irls: %d blocks, %zu variables, %d constraints\n%8s %14s "
                               "%10s %9s\n", s->nvars, n, M, "iter", "objective", "rel step",
                "time(s)");
    res->info.status = ATF_STATUS_MAX_ITERATIONS;
    int iter;
    double step = NAN;
    double cert = NAN; /* stationarity of the current x, once computed */
    for (iter = 1; iter <= b->max_iter; iter++) {
        if (atf_sv_interrupted(s)) {
            iter--;
            res->info.status = ATF_STATUS_INTERRUPTED;
            break;
        }
        if (w_step(s, x, xn, K, lambda) != 0) {
            res->info.status = ATF_STATUS_NUMERICAL_ERROR;
            break;
        }
        double Fn = atf_sv_objective(s, xn);
        if (!(Fn <= F + ROUNDING_SLACK * fabs(F))) {
            info->max_increase = fmax(info->max_increase, (Fn - F) / fmax(fabs(F), DBL_MIN));
            info->safeguarded++;
            Fn = safeguard(s, x, xn, trial, F);
            if (isnan(Fn)) { /* no decrease along the segment: x is where the method rests */
                res->info.status = ATF_STATUS_SOLVED; /* if certified below, else numerical_error */
                step = 0.0;
                break;
            }
        }
        double d2 = 0.0;
        for (size_t i = 0; i < n; i++)
            d2 += (xn[i] - x[i]) * (xn[i] - x[i]);
        step = sqrt(d2) / fmax(atf_sv_norm(xn, n), DBL_MIN);
        memcpy(x, xn, n * sizeof *x);
        F = Fn;
        int done = step <= b->eps;
        if (b->verbose && (done || iter == 1 || iter % b->log_every == 0))
            atf_sv_log(s, "%8d %14.7e %10.3e %9.3f\n", iter,
                    atf_sv_unscale_objective(s, F), step, atf_now() - start);
        atf_sv_progress(s, (atf_solve_progress){.method = "irls", .iteration = iter,
                                          .max_iterations = b->max_iter, .measure = step,
                                          .tolerance = b->eps, .passes = s->passes});
        cert = done ? stationarity_at(s, x) : NAN;
        if (done && certified(b, cert)) {
            res->info.status = ATF_STATUS_SOLVED;
            break;
        }
    }
    if (iter > b->max_iter)
        iter = b->max_iter;
    res->info.iterations = iter;
    res->info.primal_residual = step;
    res->info.dual_residual = NAN;
    res->info.stationarity = isnan(cert) ? stationarity_at(s, x) : cert;
    if (res->info.status == ATF_STATUS_SOLVED && step == 0.0 && !(res->info.stationarity <= STALL_CERTIFIED))
        res->info.status = ATF_STATUS_NUMERICAL_ERROR; /* stalled away from a stationary point */
    info->iterations = iter;
    info->objective = atf_sv_unscale_objective(s, F);
    if (b->verbose)
        atf_sv_log(s, "atf irls: %s after %d iterations, objective %.9e, stationarity "
                               "%.3e, %d safeguarded steps, %.3f s\n",
                atf_status_name(res->info.status), iter, info->objective, res->info.stationarity,
                info->safeguarded, atf_now() - start);
done:
    free(K), free(lambda), free(xn), free(trial);
    return e;
}

atf_error atf_sv_irls_run(atf_solver *s, const atf_sv_budget *b, atf_result *res, double *x,
                          char *err)
{
    atf_irls_info info;
    return atf_sv_irls(s, b, res, x, &info, err);
}
