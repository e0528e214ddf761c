/* factor_space.c — the factored method's space (solver_factored.h): Φ(U, V), its gradient and
 * Hessian products through the data, the factor penalty ψ, and the way between cores and
 * factors. All in work units.
 *
 * Products. A factored var's predictions are y_m = h_iᵀ U Vᵀ δ_m: T = H U (N × r), Z = T Vᵀ
 * (N × cols), then the row products with D — N·rows·r + N·cols·r multiply-adds and one read of
 * D, against N·rows·cols for a core. The gradient reuses S = Σ_k u_{iC+k} δ_{iC+k} (N × cols):
 * ∇_U = Hᵀ (S V), ∇_V = Sᵀ T. A Hessian product in a direction (dU, dV) has the Gauss–Newton
 * part through dZ = (H dU) Vᵀ + T dVᵀ and the curvature K (one read of D for all vars, as
 * atf_factored_hess), and the coupling through u: G dV and Gᵀ dU with G = Hᵀ S, formed as
 * Hᵀ (S dV) and Sᵀ (H dU). Other vars (dense, sparse) go through their core C = U Vᵀ and the
 * operator's own apply and adjoint, keeping G = A_vᵀ u. */
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "atf_shard.h"
#include "solver_factored.h"

static int factored(const atf_sv_var *v)
{
    return v->op.kind == ATF_OP_FACTORED;
}

/* C (m × n) = alpha·A·Bᵀ + beta·C for row-major A (m × k), B (n × k). */
static void gemm_nt(int m, int n, int k, double alpha, const double *A, const double *B,
                    double beta, double *C)
{
    if (m > 0 && n > 0)
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, alpha, A, k, B, k, beta,
                    C, n);
}

/* C (m × n) = alpha·A·B + beta·C for row-major A (m × k), B (k × n). */
static void gemm_nn(int m, int n, int k, double alpha, const double *A, const double *B,
                    double beta, double *C)
{
    if (m > 0 && n > 0)
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, alpha, A, k, B, n, beta,
                    C, n);
}

/* C (m × n) = alpha·Aᵀ·B + beta·C for row-major A (k × m), B (k × n). */
static void gemm_tn(int m, int n, int k, double alpha, const double *A, const double *B,
                    double beta, double *C)
{
    if (m > 0 && n > 0)
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, m, n, k, alpha, A, m, B, n, beta,
                    C, n);
}

/* ---- the factor penalty ψ(A) = ½ Σ_j ω̃(λ_j(AᵀA)) of one side ------------------------------
 * Its gradient is A Φ with Φ = Q diag(ω̃'(λ)) Qᵀ (AᵀA = Q diag(λ) Qᵀ), and its Hessian product
 * Δ Φ + A Q (Γ ∘ Qᵀ(ΔᵀA + AᵀΔ)Q) Qᵀ, Γ the divided differences of ω̃' at the λ (Daleckii–Krein).
 * For `nuclear` ψ = √γ ‖A‖²: Φ = 2√γ I, Γ = 0. A side's cache: Q, Γ, Φ (r × r each), λ, ω̃'. */

static size_t side_len(int r)
{
    return 3 * (size_t)r * (size_t)r + 2 * (size_t)r;
}

/* ω̃'' at λ ≥ 0 by a central difference (one-sided at 0). */
static double second_deriv(const atf_penalty *pen, double lam)
{
    double h = fmax(1e-6 * lam, 1e-12);
    if (lam < h)
        return (atf_penalty_deriv(pen, 2.0 * h) - atf_penalty_deriv(pen, h)) / h;
    return (atf_penalty_deriv(pen, lam + h) - atf_penalty_deriv(pen, lam - h)) / (2.0 * h);
}

/* The cache of side A (m × r) and ψ(A); −1 when the eigendecomposition failed. */
static double side_penalty(const atf_penalty *pen, int nuclear, double slope, const double *A,
                           int m, int r, double *cache)
{
    if (r == 0)
        return 0.0;
    if (nuclear)
        return 0.5 * slope * atf_dot(A, A, (size_t)m * r);
    double *Q = cache, *G = Q + (size_t)r * r, *Phi = G + (size_t)r * r, *lam = Phi + (size_t)r * r,
           *d1 = lam + r;
    gemm_tn(r, r, m, 1.0, A, A, 0.0, Q);
    if (LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'V', 'U', r, Q, r, lam) != 0)
        return NAN;
    double value = 0.0;
    for (int j = 0; j < r; j++) {
        lam[j] = fmax(lam[j], 0.0);
        value += 0.5 * atf_penalty_value(pen, lam[j], NULL);
        d1[j] = atf_penalty_deriv(pen, lam[j]);
    }
    for (int i = 0; i < r; i++)
        for (int j = 0; j < r; j++) {
            double dl = lam[i] - lam[j];
            G[(size_t)i * r + j] = fabs(dl) > 1e-10 * fmax(lam[i], lam[j])
                                       ? (d1[i] - d1[j]) / dl
                                       : second_deriv(pen, 0.5 * (lam[i] + lam[j]));
        }
    /* Φ = Q diag(d1) Qᵀ */
    for (int i = 0; i < r; i++)
        for (int j = 0; j <= i; j++) {
            double sum = 0.0;
            for (int k = 0; k < r; k++)
                sum += Q[(size_t)i * r + k] * d1[k] * Q[(size_t)j * r + k];
            Phi[(size_t)i * r + j] = Phi[(size_t)j * r + i] = sum;
        }
    return value;
}

/* gA += ∇ψ(A) = A Φ. */
static void side_gradient(int nuclear, double slope, const double *A, int m, int r,
                          const double *cache, double *gA)
{
    if (nuclear)
        cblas_daxpy(m * r, slope, A, 1, gA, 1);
    else
        gemm_nn(m, r, r, 1.0, A, cache + 2 * (size_t)r * r, 1.0, gA);
}

/* out += ∇²ψ(A) Δ; work: 3 r² doubles. */
static void side_hvp(int nuclear, double slope, const double *A, const double *Dl, int m, int r,
                     const double *cache, double *out, double *work)
{
    if (nuclear) {
        cblas_daxpy(m * r, slope, Dl, 1, out, 1);
        return;
    }
    const double *Q = cache, *G = Q + (size_t)r * r, *Phi = G + (size_t)r * r;
    double *W = work, *W2 = W + (size_t)r * r, *W3 = W2 + (size_t)r * r;
    gemm_nn(m, r, r, 1.0, Dl, Phi, 1.0, out);
    gemm_tn(r, r, m, 1.0, A, Dl, 0.0, W); /* AᵀΔ */
    for (int i = 0; i < r; i++) /* Ṡ = AᵀΔ + ΔᵀA */
        for (int j = 0; j < r; j++)
            W2[(size_t)i * r + j] = W[(size_t)i * r + j] + W[(size_t)j * r + i];
    gemm_nn(r, r, r, 1.0, W2, Q, 0.0, W3); /* Ṡ Q */
    gemm_tn(r, r, r, 1.0, Q, W3, 0.0, W);  /* Qᵀ Ṡ Q */
    for (size_t i = 0; i < (size_t)r * r; i++)
        W[i] *= G[i];
    gemm_nn(r, r, r, 1.0, Q, W, 0.0, W2);  /* Q (Γ∘·) */
    gemm_nt(r, r, r, 1.0, W2, Q, 0.0, W);  /* … Qᵀ */
    gemm_nn(m, r, r, 1.0, A, W, 1.0, out);
}

int atf_fs_penalty_factors(const atf_penalty *pen)
{
    if (atf_penalty_is_nuclear(pen))
        return 1;
    double g1 = pen->w1.family == ATF_FAMILY_FIXED ? 1.0 : pen->w1.scale;
    double g2 = pen->w2.family == ATF_FAMILY_FIXED ? g1 : pen->w2.scale;
    double lo = 0.5 * log(fmin(g1, g2)) - 14.0, hi = 0.5 * log(fmax(g1, g2)) + 14.0;
    enum { POINTS = 1201 };
    double f[3];
    for (int i = 0; i < POINTS; i++) {
        double t = lo + (hi - lo) * i / (POINTS - 1);
        f[0] = f[1], f[1] = f[2], f[2] = atf_penalty_value(pen, exp(t), NULL);
        if (!isfinite(f[2]))
            return 0;
        if (i >= 1 && f[2] < f[1] * (1.0 - 1e-12))
            return 0; /* not increasing */
        if (i >= 2 && f[0] - 2.0 * f[1] + f[2] < -1e-7 * (f[0] + f[1] + f[2]))
            return 0; /* not convex in log v */
    }
    return 1;
}

/* ---- the space ------------------------------------------------------------------------------ */

static void free_point(atf_fs_point *p)
{
    double *a[] = {p->x, p->z, p->u, p->T, p->Y, p->g, p->eig};
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++)
        free(a[i]);
    memset(p, 0, sizeof *p);
}

static int alloc_point(const atf_fs *fs, atf_fs_point *p)
{
    int M = fs->s->work.M, nv = fs->nv;
    size_t nf = fs->nf ? fs->nf : 1;
    p->x = calloc(nf, sizeof *p->x);
    p->g = calloc(nf, sizeof *p->g);
    p->z = calloc((size_t)M, sizeof *p->z);
    p->u = calloc((size_t)M, sizeof *p->u);
    p->T = calloc(fs->offT[nv] + 1, sizeof *p->T);
    p->Y = calloc(fs->offY[nv] + 1, sizeof *p->Y);
    p->eig = calloc(fs->offE[nv] + 1, sizeof *p->eig);
    return p->x && p->g && p->z && p->u && p->T && p->Y && p->eig ? 0 : -1;
}

void atf_fs_free(atf_fs *fs)
{
    free_point(&fs->cur);
    free_point(&fs->trial);
    double *a[] = {fs->zw, fs->dZ, fs->scratch, fs->yk, fs->slope, fs->pw, fs->lossi};
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++)
        free(a[i]);
    free(fs->r);
    free(fs->off);
    free(fs->offT);
    free(fs->offY);
    free(fs->offE);
    free(fs->nuclear);
    free(fs->ops);
    float *f[] = {fs->xs, fs->dxs, fs->oxs, fs->Ts, fs->dTs, fs->Ys, fs->dZs, fs->scs};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        free(f[i]);
    memset(fs, 0, sizeof *fs);
}

/* Offsets of the packed vector and the caches at the ranks fs->r; the scratch's length. */
static size_t lay_out(atf_fs *fs)
{
    const atf_solver *s = fs->s;
    size_t scratch = 0;
    fs->off[0] = fs->offT[0] = fs->offY[0] = fs->offE[0] = 0;
    for (int v = 0; v < fs->nv; v++) {
        const atf_sv_var *var = &s->vars[v];
        size_t r = (size_t)fs->r[v], N = (size_t)var->op.N, R = (size_t)var->rows,
               Q = (size_t)var->cols;
        fs->off[v + 1] = fs->off[v] + r * (R + Q);
        fs->offT[v + 1] = fs->offT[v] + (factored(var) ? N * r : 0);
        fs->offY[v + 1] = fs->offY[v] + (factored(var) ? N * Q : R * Q);
        fs->offE[v + 1] = fs->offE[v] + 2 * side_len((int)r);
        size_t need = (factored(var) ? N * Q + 2 * N * r : 2 * R * Q) +
                      (size_t)atf_block_work_size(&var->op);
        scratch = need > scratch ? need : scratch;
    }
    fs->nf = fs->off[fs->nv];
    return scratch;
}

atf_error atf_fs_init(atf_fs *fs, atf_solver *s, atf_pg_loss *pl, const int *r, char *err)
{
    memset(fs, 0, sizeof *fs);
    fs->s = s, fs->pl = pl, fs->nv = s->nvars;
    int nv = s->nvars, M = s->work.M;
    fs->r = malloc((size_t)nv * sizeof *fs->r);
    fs->nuclear = malloc((size_t)nv * sizeof *fs->nuclear);
    fs->slope = malloc((size_t)nv * sizeof *fs->slope);
    fs->ops = malloc((size_t)nv * sizeof *fs->ops);
    size_t *offs[] = {NULL, NULL, NULL, NULL};
    for (int i = 0; i < 4; i++)
        offs[i] = malloc((size_t)(nv + 1) * sizeof(size_t));
    fs->off = offs[0], fs->offT = offs[1], fs->offY = offs[2], fs->offE = offs[3];
    if (!fs->r || !fs->nuclear || !fs->slope || !fs->ops || !offs[0] || !offs[1] || !offs[2] ||
        !offs[3])
        goto nomem;
    fs->fused = 1;
    size_t dz = 0, kmax = 1;
    for (int v = 0; v < nv; v++) {
        const atf_sv_var *var = &s->vars[v];
        fs->r[v] = r[v];
        fs->nuclear[v] = atf_penalty_is_nuclear(&var->pen);
        fs->slope[v] = fs->nuclear[v] ? atf_penalty_deriv(&var->pen, 1.0) : 0.0;
        fs->fused = fs->fused && factored(var);
        fs->ops[v] = &var->op;
        size_t k = (size_t)(var->rows < var->cols ? var->rows : var->cols);
        kmax = k > kmax ? k : kmax;
        dz += factored(var) ? (size_t)var->op.N * var->cols : 0;
    }
    size_t scratch = lay_out(fs);
    fs->zw = calloc((size_t)M, sizeof *fs->zw);
    fs->yk = calloc((size_t)M, sizeof *fs->yk);
    fs->dZ = calloc(dz + 1, sizeof *fs->dZ);
    fs->scratch = calloc(scratch + 1, sizeof *fs->scratch);
    fs->pw = calloc(3 * kmax * kmax, sizeof *fs->pw);
    fs->lossi = calloc((size_t)s->work.N + 1, sizeof *fs->lossi);
    fs->fused = fs->fused && s->work.C <= 64;
    if (!fs->zw || !fs->yk || !fs->dZ || !fs->scratch || !fs->pw || !fs->lossi || alloc_point(fs, &fs->cur) ||
        alloc_point(fs, &fs->trial))
        goto nomem;
    return ATF_OK;
nomem:
    atf_fs_free(fs);
    atf_errorf(err, "factored: out of memory for the factors");
    return ATF_E_NOMEM;
}

/* ---- Φ and its gradient --------------------------------------------------------------------- */

/* One pass's multiply-adds through a factored var: in the factors at rank r, over the core. */
static double count_forward(const atf_sv_var *var, int r)
{
    return (double)var->op.N * (var->rows + var->cols) * r + (double)var->op.M * var->cols;
}

static double count_core(const atf_sv_var *var)
{
    return (double)var->op.N * var->rows * var->cols + (double)var->op.M * var->cols;
}

int atf_fs_dearer(const atf_fs *fs)
{
    double factors = 0.0, cores = 0.0;
    for (int v = 0; v < fs->nv; v++) {
        const atf_sv_var *var = &fs->s->vars[v];
        if (factored(var)) {
            factors += count_forward(var, fs->r[v]);
            cores += count_core(var);
        }
    }
    return cores > 0.0 && factors >= cores;
}

double atf_fs_core_passes(const atf_fs *fs)
{
    double core = 0.0, other = 0.0; /* one pass's multiply-adds: factored vars, the rest */
    for (int v = 0; v < fs->nv; v++) {
        const atf_sv_var *var = &fs->s->vars[v];
        if (factored(var))
            core += count_core(var);
        else if (var->op.kind == ATF_OP_SPARSE)
            other += (double)var->op.nnz;
        else
            other += (double)var->op.M * (double)var->len;
    }
    return (fs->flops + other * (double)fs->passes) / fmax(1.0, core + other);
}

/* The fused pass's per-example step: the example's predictions kept, its loss and gradient. */
typedef struct {
    atf_fs *fs;
    atf_fs_point *P;
} loss_job;

static void example_loss(void *ctx, int i, const double *y, double *u)
{
    loss_job *j = ctx;
    int C = j->fs->s->work.C;
    memcpy(j->P->z + (size_t)i * C, y, (size_t)C * sizeof *y);
    j->fs->lossi[i] = atf_pg_loss_example(j->fs->pl, i, y, u);
    memcpy(j->P->u + (size_t)i * C, u, (size_t)C * sizeof *u);
}

/* Predictions, loss and its gradient u, and each var's S (into P->Y): with every var factored
 * one read of D (the examples streamed once, the loss taken example by example), else the
 * apply, the loss, and the gathers. */
static void loss_pass(atf_fs *fs, atf_fs_point *P)
{
    atf_solver *s = fs->s;
    double *sc = fs->scratch;
    if (fs->fused) {
        for (int v = 0; v < fs->nv; v++) {
            const atf_sv_var *var = &s->vars[v];
            int r = fs->r[v], R = var->rows, Q = var->cols, N = var->op.N;
            const double *U = P->x + fs->off[v], *V = U + (size_t)R * r;
            double *T = P->T + fs->offT[v], *Z = P->Y + fs->offY[v];
            gemm_nn(N, r, R, 1.0, var->op.H, U, 0.0, T);
            gemm_nt(N, Q, r, 1.0, T, V, 0.0, Z);
            if (r == 0)
                memset(Z, 0, (size_t)N * Q * sizeof *Z);
        }
        loss_job job = {fs, P};
        atf_factored_rows_curv(fs->nv, fs->ops, 1, 0, P->Y, example_loss, &job, fs->yk);
        P->loss = 0.0;
        for (int i = 0; i < s->work.N; i++)
            P->loss += fs->lossi[i];
        fs->passes++;
        return;
    }
    memset(P->z, 0, (size_t)s->work.M * sizeof *P->z);
    for (int v = 0; v < fs->nv; v++) {
        const atf_sv_var *var = &s->vars[v];
        int r = fs->r[v], R = var->rows, Q = var->cols, N = var->op.N;
        const double *U = P->x + fs->off[v], *V = U + (size_t)R * r;
        double *C = sc;
        if (factored(var)) {
            double *T = P->T + fs->offT[v];
            gemm_nn(N, r, R, 1.0, var->op.H, U, 0.0, T);
            gemm_nt(N, Q, r, 1.0, T, V, 0.0, C);
            if (r == 0)
                memset(C, 0, (size_t)N * Q * sizeof *C);
            atf_factored_rows_dot(&var->op, C, P->z);
        } else {
            gemm_nt(R, Q, r, 1.0, U, V, 0.0, C);
            if (r == 0)
                memset(C, 0, (size_t)R * Q * sizeof *C);
            atf_block_apply_work(&var->op, C, 1.0, P->z, C + (size_t)R * Q * 2);
        }
    }
    P->loss = atf_pg_loss_eval(fs->pl, P->z, P->u);
    for (int v = 0; v < fs->nv; v++) {
        const atf_sv_var *var = &s->vars[v];
        double *Y = P->Y + fs->offY[v];
        if (factored(var))
            atf_factored_rows_gather(&var->op, P->u, Y);
        else
            atf_block_adjoint_work(&var->op, P->u, 0.0, Y, sc);
    }
    fs->passes += 2;
}

void atf_fs_eval(atf_fs *fs, const double *x)
{
    atf_solver *s = fs->s;
    atf_fs_point *P = &fs->trial;
    if (x != P->x)
        memcpy(P->x, x, fs->nf * sizeof *x);
    loss_pass(fs, P);
    double *sc = fs->scratch;
    P->pen = 0.0;
    for (int v = 0; v < fs->nv; v++) { /* gradients */
        const atf_sv_var *var = &s->vars[v];
        int r = fs->r[v], R = var->rows, Q = var->cols, N = var->op.N;
        const double *U = P->x + fs->off[v], *V = U + (size_t)R * r;
        double *gU = P->g + fs->off[v], *gV = gU + (size_t)R * r, *Y = P->Y + fs->offY[v];
        double *eU = P->eig + fs->offE[v], *eV = eU + side_len(r);
        if (factored(var)) {
            gemm_nn(N, r, Q, 1.0, Y, V, 0.0, sc);                  /* S V */
            gemm_tn(R, r, N, 1.0, var->op.H, sc, 0.0, gU);         /* Hᵀ S V */
            gemm_tn(Q, r, N, 1.0, Y, P->T + fs->offT[v], 0.0, gV); /* Sᵀ T */
        } else {
            gemm_nn(R, r, Q, 1.0, Y, V, 0.0, gU);
            gemm_tn(Q, r, R, 1.0, Y, U, 0.0, gV);
        }
        fs->flops += 2.0 * count_forward(var, r);
        P->pen += side_penalty(&var->pen, fs->nuclear[v], fs->slope[v], U, R, r, eU) +
                  side_penalty(&var->pen, fs->nuclear[v], fs->slope[v], V, Q, r, eV);
        side_gradient(fs->nuclear[v], fs->slope[v], U, R, r, eU, gU);
        side_gradient(fs->nuclear[v], fs->slope[v], V, Q, r, eV, gV);
    }
    P->F = P->pen + P->loss;
}

static void to_single(const double *a, float *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (float)a[i];
}

int atf_fs_accept(atf_fs *fs)
{
    atf_fs_point t = fs->cur;
    fs->cur = fs->trial;
    fs->trial = t;
    if (fs->Hs) {
        to_single(fs->cur.x, fs->xs, fs->nf);
        to_single(fs->cur.T, fs->Ts, fs->offT[fs->nv]);
        to_single(fs->cur.Y, fs->Ys, fs->offY[fs->nv]);
    }
    return atf_pg_loss_curvature(fs->pl, fs->cur.z) == ATF_OK ? 0 : -1;
}

/* ---- Hessian products in single precision ---------------------------------------------------
 * The Newton systems are solved inexactly (CG to a relative residual of 1e-3 … 0.5), so their
 * products need not be exact to the last bit: on single-precision copies of H, D and the
 * point, the GEMMs run at twice the speed and the stream through D moves half the bytes
 * (docs/record/solver.md §20). The curvature K and the penalty's part stay double; below a pg
 * residual of 1e-5 the method goes back to double (factored.c, all_double). */

static void sgemm(int ta, int tb, int m, int n, int k, float alpha, const float *A, int lda,
                  const float *B, int ldb, float beta, float *C)
{
    if (m > 0 && n > 0)
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    m, n, k, alpha, A, lda, B, ldb, beta, C, n);
}

/* ⟨a, b⟩ over n floats in eight lanes (fixed order: results repeat). */
static inline double dot_f(const float *restrict a, const float *restrict b, int n)
{
    float acc[8] = {0.0f};
    int j = 0;
    for (; j + 8 <= n; j += 8)
        for (int u = 0; u < 8; u++)
            acc[u] += a[j + u] * b[j + u];
    double sum = 0.0;
    for (; j < n; j++)
        sum += (double)a[j] * b[j];
    for (int u = 0; u < 8; u++)
        sum += acc[u];
    return sum;
}

/* y[k] += ⟨δ_k, t⟩ over one example's C × Q slab d, and t ← Σ_k u_k δ_k. */
static void slab_dot_single(int C, int Q, const float *restrict d, const float *restrict t,
                            double *restrict y)
{
    for (int k = 0; k < C; k++)
        y[k] += dot_f(d + (size_t)k * Q, t, Q);
}

static void slab_gather_single(int C, int Q, const float *restrict d, const double *restrict u,
                               float *restrict t)
{
    memset(t, 0, (size_t)Q * sizeof *t);
    for (int k = 0; k < C; k++) { /* in blocks of 8, which the compiler vectorizes at -O2 */
        float uk = (float)u[k];
        const float *dk = d + (size_t)k * Q;
        int j = 0;
        for (; j + 8 <= Q; j += 8)
            for (int l = 0; l < 8; l++)
                t[j + l] += uk * dk[j + l];
        for (; j < Q; j++)
            t[j] += uk * dk[j];
    }
}

typedef struct {
    const atf_fs *fs;
    float *Z;         /* the vars' N × cols arrays, one after the other */
    double *y;        /* [M] NULL: the curvature in between (a Hessian product) */
    int gather;       /* 1: Z ← Dᵀ y (from y, or from K y in the Hessian product) */
} rows_single_job;

/* Per example: y = Σ_v D_vi z_vi; then (a Hessian product) u = K_i y and z_vi ← D_viᵀ u, or
 * only the rows y (an apply), or only z_vi ← D_viᵀ y_i (an adjoint). */
static void rows_single(void *ctx, int i0, int i1)
{
    const rows_single_job *j = ctx;
    const atf_fs *fs = j->fs;
    int C = fs->s->work.C, N = fs->s->work.N;
    double buf[64];
    for (int i = i0; i < i1; i++) {
        double *y = j->y ? j->y + (size_t)i * C : buf;
        if (!j->y || !j->gather) {
            memset(y, 0, (size_t)C * sizeof *y);
            const float *z = j->Z;
            for (int v = 0; v < fs->nv; v++) {
                int Q = fs->s->vars[v].cols;
                slab_dot_single(C, Q, fs->Ds[v] + (size_t)i * C * Q, z + (size_t)i * Q, y);
                z += (size_t)N * Q;
            }
        }
        if (!j->y)
            atf_pg_loss_curv(fs->pl, i, y, y);
        if (!j->gather)
            continue;
        float *z = j->Z;
        for (int v = 0; v < fs->nv; v++) {
            int Q = fs->s->vars[v].cols;
            slab_gather_single(C, Q, fs->Ds[v] + (size_t)i * C * Q, y, z + (size_t)i * Q);
            z += (size_t)N * Q;
        }
    }
}

static void rows_pass_single(const atf_fs *fs, float *Z, double *y, int gather)
{
    rows_single_job job = {fs, Z, y, gather};
    atf_for_examples(fs->s->work.N, rows_single, &job);
}

/* out = ∇²Φ dx with the loss's parts in single precision (every var factored). */
static void hvp_single(atf_fs *fs, const double *dx, double *out)
{
    atf_solver *s = fs->s;
    int N = s->work.N;
    to_single(dx, fs->dxs, fs->nf);
    float *dZ = fs->dZs;
    for (int v = 0; v < fs->nv; v++) { /* dZ = (H dU) Vᵀ + T dVᵀ */
        const atf_sv_var *var = &s->vars[v];
        int r = fs->r[v], R = var->rows, Q = var->cols;
        const float *V = fs->xs + fs->off[v] + (size_t)R * r, *dU = fs->dxs + fs->off[v],
                    *dV = dU + (size_t)R * r;
        float *dT = fs->dTs + fs->offT[v];
        sgemm(0, 0, N, r, R, 1.0f, fs->Hs[v], R, dU, r, 0.0f, dT);
        sgemm(0, 1, N, Q, r, 1.0f, dT, r, V, r, 0.0f, dZ);
        sgemm(0, 1, N, Q, r, 1.0f, fs->Ts + fs->offT[v], r, dV, r, 1.0f, dZ);
        if (r == 0)
            memset(dZ, 0, (size_t)N * Q * sizeof *dZ);
        dZ += (size_t)N * Q;
    }
    rows_pass_single(fs, fs->dZs, NULL, 1);
    const float *S = fs->dZs;
    for (int v = 0; v < fs->nv; v++) { /* the loss's part of oU and oV */
        const atf_sv_var *var = &s->vars[v];
        int r = fs->r[v], R = var->rows, Q = var->cols;
        const float *V = fs->xs + fs->off[v] + (size_t)R * r, *dV = fs->dxs + fs->off[v] +
                                                                    (size_t)R * r;
        const float *Y = fs->Ys + fs->offY[v], *T = fs->Ts + fs->offT[v],
                    *dT = fs->dTs + fs->offT[v];
        float *oU = fs->oxs + fs->off[v], *oV = oU + (size_t)R * r, *sc = fs->scs;
        sgemm(0, 0, N, r, Q, 1.0f, S, Q, V, r, 0.0f, sc);
        sgemm(0, 0, N, r, Q, 1.0f, Y, Q, dV, r, 1.0f, sc);
        sgemm(1, 0, R, r, N, 1.0f, fs->Hs[v], R, sc, r, 0.0f, oU);
        sgemm(1, 0, Q, r, N, 1.0f, S, Q, T, r, 0.0f, oV);
        sgemm(1, 0, Q, r, N, 1.0f, Y, Q, dT, r, 1.0f, oV);
        S += (size_t)N * Q;
    }
    for (size_t i = 0; i < fs->nf; i++)
        out[i] = fs->oxs[i];
    for (int v = 0; v < fs->nv; v++) { /* the penalty's part, in double */
        const atf_sv_var *var = &s->vars[v];
        int r = fs->r[v], R = var->rows, Q = var->cols;
        const double *U = fs->cur.x + fs->off[v], *V = U + (size_t)R * r;
        const double *dU = dx + fs->off[v], *dV = dU + (size_t)R * r;
        const double *eU = fs->cur.eig + fs->offE[v], *eV = eU + side_len(r);
        double *oU = out + fs->off[v], *oV = oU + (size_t)R * r;
        side_hvp(fs->nuclear[v], fs->slope[v], U, dU, R, r, eU, oU, fs->pw);
        side_hvp(fs->nuclear[v], fs->slope[v], V, dV, Q, r, eV, oV, fs->pw);
        fs->flops += 2.0 * count_forward(var, r);
    }
    fs->passes += 2;
}

/* y = A' vec(C) [M] for the stacked cores C in single precision (Z: Σ N·cols floats). */
static void apply_single(const atf_fs *fs, const float *C, float *Z, double *y)
{
    float *Zv = Z;
    for (int v = 0; v < fs->nv; v++) {
        const atf_sv_var *var = &fs->s->vars[v];
        int N = var->op.N;
        sgemm(0, 0, N, var->cols, var->rows, 1.0f, fs->Hs[v], var->rows, C + var->off, var->cols,
              0.0f, Zv);
        Zv += (size_t)N * var->cols;
    }
    rows_pass_single(fs, Z, y, 0);
}

/* G = A'ᵀ u (stacked cores, single precision) from u [M] (Z: Σ N·cols floats). */
static void adjoint_single(const atf_fs *fs, double *u, float *Z, float *G)
{
    rows_pass_single(fs, Z, u, 1);
    const float *Zv = Z;
    for (int v = 0; v < fs->nv; v++) {
        const atf_sv_var *var = &fs->s->vars[v];
        int N = var->op.N;
        sgemm(1, 0, var->rows, var->cols, N, 1.0f, fs->Hs[v], var->rows, Zv, var->cols, 0.0f,
              G + var->off);
        Zv += (size_t)N * var->cols;
    }
}

double atf_fs_first_step_single(atf_fs *fs, double *w, double *zw)
{
    atf_solver *s = fs->s;
    size_t n = s->n;
    float *X = malloc((n ? n : 1) * sizeof *X), *Z = fs->dZs;
    if (!X)
        return NAN;
    uint64_t seed = 0x9E3779B97F4A7C15ULL; /* the start of atf_pg_first_step */
    for (size_t i = 0; i < n; i++) {
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        w[i] = (double)(seed >> 11) / 9007199254740992.0 - 0.5;
    }
    double lambda_max = 0.0;
    for (int it = 0; it < 12; it++) { /* as atf_pg_first_step: at most 12, to 1 % */
        double nw = atf_sv_norm(w, n);
        if (!(nw > 0.0) || !isfinite(nw))
            break;
        for (size_t i = 0; i < n; i++)
            X[i] = (float)(w[i] / nw);
        apply_single(fs, X, Z, zw);
        atf_pg_loss_lipschitz_weight(fs->pl, zw);
        adjoint_single(fs, zw, Z, X);
        for (size_t i = 0; i < n; i++)
            w[i] = X[i];
        double previous = lambda_max;
        lambda_max = atf_sv_norm(w, n);
        fs->passes += 2;
        if (lambda_max - previous <= 1e-2 * lambda_max)
            break;
    }
    free(X);
    return lambda_max > 0.0 && isfinite(lambda_max) ? 1.0 / lambda_max : 1.0;
}

void atf_fs_core_gradient_single(atf_fs *fs, double *g)
{
    float *G = malloc((fs->s->n ? fs->s->n : 1) * sizeof *G);
    if (!G) { /* (no room for the single-precision gradient: the double one) */
        atf_fs_core_gradient(fs, g);
        return;
    }
    const float *Y = fs->Ys;
    for (int v = 0; v < fs->nv; v++) {
        const atf_sv_var *var = &fs->s->vars[v];
        sgemm(1, 0, var->rows, var->cols, var->op.N, 1.0f, fs->Hs[v], var->rows, Y, var->cols,
              0.0f, G + var->off);
        Y += (size_t)var->op.N * var->cols;
    }
    for (size_t i = 0; i < fs->s->n; i++)
        g[i] = G[i];
    free(G);
    fs->passes++;
}

int atf_fs_single(atf_fs *fs, const float *const *H, const float *const *D)
{
    if (!fs->fused)
        return 0;
    size_t dz = 0, sc = 1;
    for (int v = 0; v < fs->nv; v++) {
        dz += (size_t)fs->s->vars[v].op.N * fs->s->vars[v].cols;
        size_t need = (size_t)fs->s->vars[v].op.N * (fs->r[v] ? fs->r[v] : 1);
        sc = need > sc ? need : sc;
    }
    size_t nf = fs->nf ? fs->nf : 1;
    fs->xs = malloc(nf * sizeof *fs->xs);
    fs->dxs = malloc(nf * sizeof *fs->dxs);
    fs->oxs = malloc(nf * sizeof *fs->oxs);
    fs->Ts = malloc((fs->offT[fs->nv] + 1) * sizeof *fs->Ts);
    fs->dTs = malloc((fs->offT[fs->nv] + 1) * sizeof *fs->dTs);
    fs->Ys = malloc((fs->offY[fs->nv] + 1) * sizeof *fs->Ys);
    fs->dZs = malloc((dz + 1) * sizeof *fs->dZs);
    fs->scs = malloc(sc * sizeof *fs->scs);
    if (!fs->xs || !fs->dxs || !fs->oxs || !fs->Ts || !fs->dTs || !fs->Ys || !fs->dZs ||
        !fs->scs)
        return -1;
    fs->Hs = H, fs->Ds = D;
    to_single(fs->cur.x, fs->xs, fs->nf);
    to_single(fs->cur.T, fs->Ts, fs->offT[fs->nv]);
    to_single(fs->cur.Y, fs->Ys, fs->offY[fs->nv]);
    return 0;
}

/* ---- Hessian products ----------------------------------------------------------------------- */

/* The direction's predictions into fs->yk (and the factored vars' dZ into fs->dZ, their H dU
 * into dT): the Gauss–Newton forward half. */
static void hvp_forward(atf_fs *fs, const double *dx, double *dT)
{
    atf_solver *s = fs->s;
    const atf_fs_point *P = &fs->cur;
    double *dZ = fs->dZ;
    memset(fs->yk, 0, (size_t)s->work.M * sizeof *fs->yk);
    for (int v = 0; v < fs->nv; v++) {
        const atf_sv_var *var = &s->vars[v];
        int r = fs->r[v], R = var->rows, Q = var->cols, N = var->op.N;
        const double *U = P->x + fs->off[v], *V = U + (size_t)R * r;
        const double *dU = dx + fs->off[v], *dV = dU + (size_t)R * r;
        if (factored(var)) {
            double *dTv = dT + fs->offT[v];
            gemm_nn(N, r, R, 1.0, var->op.H, dU, 0.0, dTv);
            gemm_nt(N, Q, r, 1.0, dTv, V, 0.0, dZ);
            gemm_nt(N, Q, r, 1.0, P->T + fs->offT[v], dV, 1.0, dZ);
            if (r == 0)
                memset(dZ, 0, (size_t)N * Q * sizeof *dZ);
            if (!fs->fused)
                atf_factored_rows_dot(&var->op, dZ, fs->yk);
            dZ += (size_t)N * Q;
        } else {
            double *dC = fs->scratch;
            gemm_nt(R, Q, r, 1.0, dU, V, 0.0, dC);
            gemm_nt(R, Q, r, 1.0, U, dV, 1.0, dC);
            if (r == 0)
                memset(dC, 0, (size_t)R * Q * sizeof *dC);
            atf_block_apply_work(&var->op, dC, 1.0, fs->yk, dC + (size_t)R * Q * 2);
        }
    }
}

/* out's share of var v: the loss's part (curvature rows in S or fs->yk) and the penalty's. */
static void hvp_var(atf_fs *fs, int v, const double *dx, const double *dT, const double *S,
                    double *out)
{
    const atf_sv_var *var = &fs->s->vars[v];
    const atf_fs_point *P = &fs->cur;
    int r = fs->r[v], R = var->rows, Q = var->cols, N = var->op.N;
    const double *U = P->x + fs->off[v], *V = U + (size_t)R * r;
    const double *dU = dx + fs->off[v], *dV = dU + (size_t)R * r, *Y = P->Y + fs->offY[v];
    double *oU = out + fs->off[v], *oV = oU + (size_t)R * r, *sc = fs->scratch;
    if (factored(var)) {
        gemm_nn(N, r, Q, 1.0, S, V, 0.0, sc);    /* S2 V + S dV */
        gemm_nn(N, r, Q, 1.0, Y, dV, 1.0, sc);
        gemm_tn(R, r, N, 1.0, var->op.H, sc, 0.0, oU);
        gemm_tn(Q, r, N, 1.0, S, P->T + fs->offT[v], 0.0, oV);  /* S2ᵀ T + Sᵀ dT */
        gemm_tn(Q, r, N, 1.0, Y, dT + fs->offT[v], 1.0, oV);
    } else {
        double *G2 = sc;
        atf_block_adjoint_work(&var->op, fs->yk, 0.0, G2, sc + (size_t)R * Q);
        gemm_nn(R, r, Q, 1.0, G2, V, 0.0, oU);
        gemm_nn(R, r, Q, 1.0, Y, dV, 1.0, oU);
        gemm_tn(Q, r, R, 1.0, G2, U, 0.0, oV);
        gemm_tn(Q, r, R, 1.0, Y, dU, 1.0, oV);
    }
    const double *eU = P->eig + fs->offE[v], *eV = eU + side_len(r);
    side_hvp(fs->nuclear[v], fs->slope[v], U, dU, R, r, eU, oU, fs->pw);
    side_hvp(fs->nuclear[v], fs->slope[v], V, dV, Q, r, eV, oV, fs->pw);
}

void atf_fs_hvp(atf_fs *fs, const double *dx, double *out)
{
    if (fs->Hs) {
        hvp_single(fs, dx, out);
        return;
    }
    atf_solver *s = fs->s;
    double *dT = fs->trial.T; /* free while no trial point is being evaluated */
    hvp_forward(fs, dx, dT);
    if (fs->fused)
        atf_factored_rows_curv(fs->nv, fs->ops, 1, 0, fs->dZ, atf_pg_loss_curv, fs->pl, fs->yk);
    else
        atf_pg_loss_hess(fs->pl, NULL, 0, fs->yk, fs->yk);
    double *S = fs->dZ;
    for (int v = 0; v < fs->nv; v++) {
        const atf_sv_var *var = &s->vars[v];
        double *Sv = S;
        if (factored(var) && !fs->fused)
            atf_factored_rows_gather(&var->op, fs->yk, Sv);
        hvp_var(fs, v, dx, dT, Sv, out);
        if (factored(var))
            S += (size_t)var->op.N * var->cols;
        fs->flops += 2.0 * count_forward(var, fs->r[v]);
    }
    fs->passes += 2;
}

/* ---- cores and factors ---------------------------------------------------------------------- */

void atf_fs_cores(const atf_fs *fs, const double *x, double *cores)
{
    for (int v = 0; v < fs->nv; v++) {
        const atf_sv_var *var = &fs->s->vars[v];
        int r = fs->r[v], R = var->rows, Q = var->cols;
        const double *U = x + fs->off[v], *V = U + (size_t)R * r;
        double *C = cores + var->off;
        if (r == 0)
            memset(C, 0, var->len * sizeof *C);
        else
            gemm_nt(R, Q, r, 1.0, U, V, 0.0, C);
    }
}

void atf_fs_core_gradient(atf_fs *fs, double *g)
{
    const atf_fs_point *P = &fs->cur;
    for (int v = 0; v < fs->nv; v++) {
        const atf_sv_var *var = &fs->s->vars[v];
        const double *Y = P->Y + fs->offY[v];
        if (factored(var)) {
            gemm_tn(var->rows, var->cols, var->op.N, 1.0, var->op.H, Y, 0.0, g + var->off);
            fs->flops += (double)var->op.N * var->rows * var->cols;
        } else {
            memcpy(g + var->off, Y, var->len * sizeof *g);
        }
    }
    fs->passes++;
}

/* Thin SVD of the row-major m × n matrix A (destroyed): A = Ua diag(d) Vt, Ua m × k, Vt k × n,
 * k = min(m, n). */
/* A = Ua diag(d) Vt (m × n row-major, overwritten): divide and conquer, and the QR-iteration SVD
 * from a copy where that fails to converge (as it did on a 256 × 256 gradient of `zsq`; the
 * prox does the same: block_prox.c). Non-finite A is refused before LAPACK sees it. */
static int thin_svd(int m, int n, double *A, double *d, double *Ua, double *Vt)
{
    int k = m < n ? m : n;
    size_t len = (size_t)m * n;
    double *copy = malloc(len * sizeof *copy), *superb = malloc((size_t)(k > 1 ? k : 2) *
                                                                  sizeof *superb);
    int ok = copy && superb && atf_sv_all_finite(A, len);
    if (ok)
        memcpy(copy, A, len * sizeof *copy);
    ok = ok && (LAPACKE_dgesdd(LAPACK_ROW_MAJOR, 'S', m, n, A, n, d, Ua, k, Vt, n) == 0 ||
                LAPACKE_dgesvd(LAPACK_ROW_MAJOR, 'S', 'S', m, n, copy, n, d, Ua, k, Vt, n,
                               superb) == 0);
    free(copy), free(superb);
    return ok ? 0 : -1;
}

int atf_fs_balanced(const atf_solver *s, const double *cores, double drop, int *rank, double *x)
{
    size_t off = 0;
    for (int v = 0; v < s->nvars; v++) {
        const atf_sv_var *var = &s->vars[v];
        int R = var->rows, Q = var->cols, k = R < Q ? R : Q;
        double *A = malloc(var->len * sizeof *A), *d = malloc((size_t)k * sizeof *d);
        double *Ua = malloc((size_t)R * k * sizeof *Ua), *Vt = malloc((size_t)k * Q * sizeof *Vt);
        int ok = A && d && Ua && Vt;
        if (ok) {
            memcpy(A, cores + var->off, var->len * sizeof *A);
            ok = thin_svd(R, Q, A, d, Ua, Vt) == 0;
        }
        int keep = 0;
        while (ok && keep < k && keep < rank[v] && d[keep] > 0.0 && d[keep] > drop * d[0])
            keep++;
        double *U = x + off, *V = U + (size_t)R * keep;
        for (int i = 0; ok && i < R; i++)
            for (int j = 0; j < keep; j++)
                U[(size_t)i * keep + j] = Ua[(size_t)i * k + j] * sqrt(d[j]);
        for (int i = 0; ok && i < Q; i++)
            for (int j = 0; j < keep; j++)
                V[(size_t)i * keep + j] = Vt[(size_t)j * Q + i] * sqrt(d[j]);
        free(A), free(d), free(Ua), free(Vt);
        if (!ok)
            return -1;
        rank[v] = keep;
        off += (size_t)keep * (R + Q);
    }
    return 0;
}

/* Q (m × r) ← an orthonormal basis of the columns of A (m × r, r ≤ m); 0 or −1. */
static int orth(int m, int r, const double *A, double *Q)
{
    double *tau = malloc((size_t)(r ? r : 1) * sizeof *tau);
    if (!tau)
        return -1;
    memcpy(Q, A, (size_t)m * r * sizeof *Q);
    int ok = LAPACKE_dgeqrf(LAPACK_ROW_MAJOR, m, r, Q, r, tau) == 0 &&
             LAPACKE_dorgqr(LAPACK_ROW_MAJOR, m, r, r, Q, r, tau) == 0;
    free(tau);
    return ok ? 0 : -1;
}

/* G (m × n) ← G − B (Bᵀ G) for B (m × r) orthonormal (from the left); work: r·n doubles. */
static void project_out_left(int m, int n, int r, const double *B, double *G, double *work)
{
    gemm_tn(r, n, m, 1.0, B, G, 0.0, work);
    gemm_nn(m, n, r, -1.0, B, work, 1.0, G);
}

/* G (m × n) ← G − (G B) Bᵀ for B (n × r) orthonormal (from the right); work: m·r doubles. */
static void project_out_right(int m, int n, int r, const double *B, double *G, double *work)
{
    gemm_nn(m, r, n, 1.0, G, B, 0.0, work);
    gemm_nt(m, n, r, -1.0, work, B, 1.0, G);
}

int atf_fs_violations(const atf_fs *fs, int v, const double *x, const double *G, double thresh,
                      int kmax, int *k, double *a, double *b, double *sv)
{
    const atf_sv_var *var = &fs->s->vars[v];
    int r = fs->r[v], R = var->rows, Q = var->cols, kk = R < Q ? R : Q;
    const double *U = x + fs->off[v], *V = U + (size_t)R * r;
    size_t big = (size_t)(R > Q ? R : Q);
    double *W = malloc(var->len * sizeof *W), *Qb = malloc(big * (r ? r : 1) * sizeof *Qb),
           *work = malloc(big * (r ? r : 1) * sizeof *work), *d = malloc((size_t)kk * sizeof *d),
           *Ua = malloc((size_t)R * kk * sizeof *Ua), *Vt = malloc((size_t)kk * Q * sizeof *Vt);
    int ok = W && Qb && work && d && Ua && Vt;
    if (ok) {
        for (size_t i = 0; i < var->len; i++)
            W[i] = -G[i];
        if (r > 0 && (ok = orth(R, r, U, Qb) == 0))
            project_out_left(R, Q, r, Qb, W, work);
        if (r > 0 && ok && (ok = orth(Q, r, V, Qb) == 0))
            project_out_right(R, Q, r, Qb, W, work);
    }
    ok = ok && thin_svd(R, Q, W, d, Ua, Vt) == 0;
    int n = 0;
    while (ok && n < kmax && n < kk && d[n] > thresh) {
        for (int i = 0; i < R; i++)
            a[(size_t)i * kmax + n] = Ua[(size_t)i * kk + n];
        for (int i = 0; i < Q; i++)
            b[(size_t)i * kmax + n] = Vt[(size_t)n * Q + i];
        sv[n] = d[n];
        n++;
    }
    *k = n;
    free(W), free(Qb), free(work), free(d), free(Ua), free(Vt);
    return ok ? 0 : -1;
}
