/* factor_precond.c — a Kronecker-factored preconditioner of the factored method's Hessian
 * (solver_factored.h), block-diagonal over the vars and the two sides.
 *
 * For a factored var, U's block of the Gauss–Newton Hessian is Σ_i h_i h_iᵀ ⊗ Ṽ_iᵀ K_i Ṽ_i
 * (Ṽ_i = D_i V, the C × r rows of example i), taken as (Hᵀ H) ⊗ (Σ_i Ṽ_iᵀ K_i Ṽ_i)/N; V's block
 * Σ_i D_iᵀ K_i D_i ⊗ t_i t_iᵀ (t_i = (H U)_i) as (Σ_i c_i D_iᵀ K_i D_i) ⊗ (Σ_i t_i t_iᵀ)/Σ_i c_i
 * with c_i = ‖t_i‖². Each side adds the penalty's mean curvature μ and is inverted through the
 * eigendecompositions of its two factors: X ↦ Q_A [(Q_Aᵀ X Q_B) ⊘ (α βᵀ + μ)] Q_Bᵀ. Hᵀ H is
 * decomposed once; D's weighted factor (M·cols² multiply-adds) only when asked; the r × r
 * factors at every build (docs/record/solver.md §20). Other vars are scaled by 1/μ. */
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solver_factored.h"

typedef struct {
    int r, rows, cols;
    double *QA, *alpha;  /* Hᵀ H = QA diag(alpha) QAᵀ (rows × rows), kept across builds */
    double *QV, *gamma;  /* Σ c_i D_iᵀ K_i D_i (cols × cols) */
    double *QBu, *betaU; /* r × r factors of the U and V sides */
    double *QBv, *betaV;
    double mu;
} kron_var;

struct atf_fs_precond {
    int nv;
    kron_var *k;
    double *work, *apply_work;
    size_t work_len, apply_len;
};

void atf_fs_precond_free(atf_fs_precond *pc)
{
    if (!pc)
        return;
    for (int v = 0; v < pc->nv; v++) {
        kron_var *k = &pc->k[v];
        double *a[] = {k->QA, k->alpha, k->QV, k->gamma, k->QBu, k->betaU, k->QBv, k->betaV};
        for (size_t i = 0; i < sizeof a / sizeof a[0]; i++)
            free(a[i]);
    }
    free(pc->k);
    free(pc->work);
    free(pc->apply_work);
    free(pc);
}

/* Q ← eigenvectors of the symmetric n × n S (row-major, overwritten), lam ← its eigenvalues
 * (negative ones, rounding, set to 0). 0 or −1. */
static int eig(int n, double *S, double *lam)
{
    if (n == 0)
        return 0;
    if (LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'V', 'U', n, S, n, lam) != 0)
        return -1;
    for (int i = 0; i < n; i++)
        lam[i] = fmax(lam[i], 0.0);
    return 0;
}

static int grow(double **p, size_t n)
{
    double *q = realloc(*p, (n ? n : 1) * sizeof *q);
    if (!q)
        return -1;
    *p = q;
    return 0;
}

/* Σ_i c_i D_iᵀ K_i D_i into A (cols × cols), examples in chunks: K_i applied to the cols
 * columns of D_i at once (the curvature of example i repeated over a transposed slab). */
static int weighted_outer(const atf_fs *fs, const atf_sv_var *var, const double *c, double *A)
{
    const atf_block *b = &var->op;
    int C = b->C, Q = b->cols, chunk = 256;
    double *KD = malloc((size_t)chunk * C * Q * sizeof *KD),
           *t = malloc(2 * (size_t)C * Q * sizeof *t);
    int *idx = malloc((size_t)Q * sizeof *idx);
    if (!KD || !t || !idx) {
        free(KD), free(t), free(idx);
        return -1;
    }
    memset(A, 0, (size_t)Q * Q * sizeof *A);
    for (int i0 = 0; i0 < b->N; i0 += chunk) {
        int n = b->N - i0 < chunk ? b->N - i0 : chunk;
        const double *D = b->D + (size_t)i0 * C * Q;
        for (int i = 0; i < n; i++) {
            const double *Di = D + (size_t)i * C * Q;
            double *Ki = KD + (size_t)i * C * Q, *Kt = t + (size_t)C * Q;
            for (int k = 0; k < C; k++) /* t = D_iᵀ: cols vectors of C values */
                for (int j = 0; j < Q; j++)
                    t[(size_t)j * C + k] = Di[(size_t)k * Q + j];
            for (int j = 0; j < Q; j++)
                idx[j] = i0 + i;
            atf_pg_loss_hess(fs->pl, idx, Q, t, Kt);
            for (int k = 0; k < C; k++)
                for (int j = 0; j < Q; j++)
                    Ki[(size_t)k * Q + j] = c[i0 + i] * Kt[(size_t)j * C + k];
        }
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Q, Q, n * C, 1.0, D, Q, KD, Q, 1.0,
                    A, Q);
    }
    free(KD), free(t), free(idx);
    return 0;
}

/* The U side's small factor (Σ_i Ṽ_iᵀ K_i Ṽ_i)/N into B (r × r); work: 2·M·r + 2·C doubles. */
static void u_small(const atf_fs *fs, const atf_sv_var *var, const double *V, int r, double *B,
                    double *work)
{
    const atf_block *b = &var->op;
    int C = b->C, M = b->M;
    double *DV = work, *KDV = work + (size_t)M * r, *y = KDV + (size_t)M * r;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, r, b->cols, 1.0, b->D, b->cols, V,
                r, 0.0, DV, r);
    for (int i = 0; i < b->N; i++)
        for (int j = 0; j < r; j++) {
            for (int k = 0; k < C; k++)
                y[k] = DV[((size_t)i * C + k) * r + j];
            atf_pg_loss_curv(fs->pl, i, y, y + C);
            for (int k = 0; k < C; k++)
                KDV[((size_t)i * C + k) * r + j] = y[C + k];
        }
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, r, r, M, 1.0 / b->N, DV, r, KDV, r, 0.0,
                B, r);
}

/* The penalty's mean curvature of var v at the current point. */
static double mean_curvature(const atf_fs *fs, int v)
{
    int r = fs->r[v];
    if (fs->nuclear[v] || r == 0)
        return fs->nuclear[v] ? fs->slope[v] : 1.0;
    const double *e = fs->cur.eig + fs->offE[v];
    double sum = 0.0;
    for (int side = 0; side < 2; side++) {
        const double *d1 = e + side * (3 * (size_t)r * r + 2 * (size_t)r) + 3 * (size_t)r * r + r;
        for (int j = 0; j < r; j++)
            sum += d1[j];
    }
    return fmax(sum / (2.0 * r), 1e-12);
}

static int build_var(atf_fs *fs, atf_fs_precond *pc, int v, int refresh_outer)
{
    const atf_sv_var *var = &fs->s->vars[v];
    kron_var *k = &pc->k[v];
    int r = fs->r[v], R = var->rows, Q = var->cols, N = var->op.N;
    k->mu = mean_curvature(fs, v);
    k->r = r;
    if (var->op.kind != ATF_OP_FACTORED || r == 0)
        return 0;
    if (!k->QA) { /* Hᵀ H, once */
        if (grow(&k->QA, (size_t)R * R) || grow(&k->alpha, (size_t)R))
            return -1;
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, R, R, N, 1.0, var->op.H, R,
                    var->op.H, R, 0.0, k->QA, R);
        if (eig(R, k->QA, k->alpha))
            return -1;
        fs->flops += (double)N * R * R;
    }
    const double *U = fs->cur.x + fs->off[v], *V = U + (size_t)R * r;
    const double *T = fs->cur.T + fs->offT[v];
    size_t need = 2 * (size_t)var->op.M * r + 2 * (size_t)var->op.C + (size_t)N;
    if (need > pc->work_len && grow(&pc->work, need))
        return -1;
    pc->work_len = need > pc->work_len ? need : pc->work_len;
    size_t apply = 2 * (size_t)(R > Q ? R : Q) * r;
    if (apply > pc->apply_len && grow(&pc->apply_work, apply))
        return -1;
    pc->apply_len = apply > pc->apply_len ? apply : pc->apply_len;
    if (grow(&k->QBu, (size_t)r * r) || grow(&k->betaU, (size_t)r) ||
        grow(&k->QBv, (size_t)r * r) || grow(&k->betaV, (size_t)r))
        return -1;
    u_small(fs, var, V, r, k->QBu, pc->work);
    fs->flops += (double)var->op.M * Q * r;
    double *c = pc->work, csum = 0.0;
    for (int i = 0; i < N; i++)
        csum += (c[i] = atf_dot(T + (size_t)i * r, T + (size_t)i * r, (size_t)r));
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, r, r, N, 1.0 / fmax(csum, 1e-300), T, r,
                T, r, 0.0, k->QBv, r);
    if (eig(r, k->QBu, k->betaU) || eig(r, k->QBv, k->betaV))
        return -1;
    if (refresh_outer || !k->QV) {
        if (grow(&k->QV, (size_t)Q * Q) || grow(&k->gamma, (size_t)Q) ||
            weighted_outer(fs, var, c, k->QV) || eig(Q, k->QV, k->gamma))
            return -1;
        fs->flops += (double)var->op.M * Q * Q;
    }
    return 0;
}

/* *pcp, made empty when NULL. */
static atf_error precond_made(const atf_fs *fs, atf_fs_precond **pcp, char *err)
{
    if (*pcp)
        return ATF_OK;
    atf_fs_precond *pc = calloc(1, sizeof *pc);
    if (pc && !(pc->k = calloc((size_t)fs->nv, sizeof *pc->k))) {
        free(pc);
        pc = NULL;
    }
    if (!pc) {
        atf_errorf(err, "factored: out of memory for the preconditioner");
        return ATF_E_NOMEM;
    }
    pc->nv = fs->nv;
    *pcp = pc;
    return ATF_OK;
}

size_t atf_fs_precond_saved_len(const atf_fs *fs, const atf_fs_precond *pc)
{
    size_t len = (size_t)fs->nv;
    for (int v = 0; pc && v < fs->nv; v++)
        if (pc->k[v].QV) {
            size_t Q = (size_t)fs->s->vars[v].cols;
            len += Q * Q + Q;
        }
    return len;
}

void atf_fs_precond_save(const atf_fs *fs, const atf_fs_precond *pc, double *out)
{
    for (int v = 0; v < fs->nv; v++) {
        const kron_var *k = pc ? &pc->k[v] : NULL;
        *out++ = k && k->QV ? 1.0 : 0.0;
        if (k && k->QV) {
            size_t Q = (size_t)fs->s->vars[v].cols;
            memcpy(out, k->QV, Q * Q * sizeof *out);
            memcpy(out + Q * Q, k->gamma, Q * sizeof *out);
            out += Q * Q + Q;
        }
    }
}

atf_error atf_fs_precond_load(const atf_fs *fs, atf_fs_precond **pcp, const double *in,
                              size_t len, char *err)
{
    size_t used = 0;
    for (int v = 0; v < fs->nv; v++) {
        size_t Q = (size_t)fs->s->vars[v].cols;
        if (used >= len || (in[used] != 0.0 && in[used] != 1.0) ||
            (in[used] == 1.0 && used + 1 + Q * Q + Q > len)) {
            atf_errorf(err, "factored: the checkpoint's preconditioner part is damaged (block "
                            "%s)", fs->s->vars[v].orig->name);
            return ATF_E_INPUT;
        }
        if (in[used++] == 0.0)
            continue;
        atf_error e = precond_made(fs, pcp, err);
        kron_var *k = e == ATF_OK ? &(*pcp)->k[v] : NULL;
        if (e != ATF_OK || grow(&k->QV, Q * Q) || grow(&k->gamma, Q)) {
            atf_errorf(err, "factored: out of memory for the preconditioner");
            return ATF_E_NOMEM;
        }
        memcpy(k->QV, in + used, Q * Q * sizeof *k->QV);
        memcpy(k->gamma, in + used + Q * Q, Q * sizeof *k->gamma);
        used += Q * Q + Q;
    }
    if (used != len) {
        atf_errorf(err, "factored: the checkpoint's preconditioner part has %zu numbers, %zu "
                        "expected", len, used);
        return ATF_E_INPUT;
    }
    return ATF_OK;
}

atf_error atf_fs_precond_build(atf_fs *fs, atf_fs_precond **pcp, int refresh_outer, char *err)
{
    atf_error e = precond_made(fs, pcp, err);
    if (e != ATF_OK)
        return e;
    atf_fs_precond *pc = *pcp;
    for (int v = 0; v < fs->nv; v++)
        if (build_var(fs, pc, v, refresh_outer)) {
            atf_errorf(err, "factored: the preconditioner of block %s could not be built (out of "
                       "memory, or a failed eigendecomposition)", fs->s->vars[v].orig->name);
            return ATF_E_NOMEM;
        }
    return ATF_OK;
}

/* out (m × r) = QA [(QAᵀ X QB) ⊘ (α βᵀ + μ)] QBᵀ; work: 2·m·r doubles. */
static void kron_solve(int m, int r, const double *QA, const double *alpha, const double *QB,
                       const double *beta, double mu, const double *X, double *out, double *work)
{
    double *W1 = work, *W2 = work + (size_t)m * r;
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, m, r, m, 1.0, QA, m, X, r, 0.0, W1, r);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, r, r, 1.0, W1, r, QB, r, 0.0, W2,
                r);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < r; j++)
            W2[(size_t)i * r + j] /= alpha[i] * beta[j] + mu;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, r, r, 1.0, W2, r, QB, r, 0.0, W1, r);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, r, m, 1.0, QA, m, W1, r, 0.0, out,
                r);
}

void atf_fs_precond_apply(const atf_fs *fs, const atf_fs_precond *pc, const double *in,
                          double *out)
{
    for (int v = 0; v < fs->nv; v++) {
        const atf_sv_var *var = &fs->s->vars[v];
        const kron_var *k = &pc->k[v];
        int r = fs->r[v], R = var->rows, Q = var->cols;
        size_t o = fs->off[v], len = (size_t)r * (R + Q);
        if (var->op.kind != ATF_OP_FACTORED || r != k->r || !k->QBu) {
            for (size_t i = 0; i < len; i++)
                out[o + i] = in[o + i] / k->mu;
            continue;
        }
        double *work = pc->apply_work;
        kron_solve(R, r, k->QA, k->alpha, k->QBu, k->betaU, k->mu, in + o, out + o, work);
        kron_solve(Q, r, k->QV, k->gamma, k->QBv, k->betaV, k->mu, in + o + (size_t)R * r,
                   out + o + (size_t)R * r, work);
    }
}
