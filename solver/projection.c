/* projection.c — Euclidean projection onto {A vec X = r}, factorised once.
 *
 * Π(V) = V − Aᵀ(AAᵀ)⁺(A vec V − r) does not involve ρ, so AAᵀ is factorised a single time at
 * setup, whatever ρ does later. Three factorisations, tried in this order:
 *  - all blocks sparse: CHOLMOD factors AAᵀ + βI straight from the sparse A (AAᵀ is never
 *    formed); a tiny β keeps the factorisation defined, iterative refinement removes its bias,
 *    and a singular AAᵀ (tiny pivot, or refinement that cannot reproduce r) goes to the dense path;
 *  - otherwise the dense Gram Σ_ℓ A_ℓA_ℓᵀ (Hadamard form for factored blocks) and dpotrf;
 *  - if the Gram is singular or too ill-conditioned (dpotrf fails, or its condition estimate is
 *    below M·ε, or the full-rank paths cannot reproduce r), an eigendecomposition with a
 *    relative cutoff gives the pseudo-inverse; consistency of the constraints is then decided
 *    from the residual of the least-squares point Aᵀ(AAᵀ)⁺r.
 * Over processes (method admm under mpirun) the dense Gram is spread over them in tiles and
 * factorised by ScaLAPACK through the command's hooks (gram_dist.c), with the same rules for
 * the Cholesky factor's acceptance and the eigenvalue cutoff, decided alike on every process. */
#include <cblas.h>
#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solver_cg.h"
#include "solver_gram.h"

/* Relative LS residual that the full-rank paths must reach on r to be trusted (√ε): above it
 * the factorisation is not accurate enough and the rank-revealing path takes over. */
#define FULL_RANK_CHECK 1.5e-8
/* CHOLMOD regularisation β relative to the largest diagonal entry of AAᵀ, and the smallest
 * accepted (min diag L / max diag L)²: a pivot within a factor 1000 of β means AAᵀ is singular
 * to working precision, and the rank-revealing dense path takes over. */
#define CHOLMOD_BETA_REL 1e-13
#define CHOLMOD_RCOND_MIN 1e-10
/* Bounds of the consistency tolerance of the eigen path (see eigen_feas_tol). */
#define FEAS_TOL_MIN 1e-10
#define FEAS_TOL_MAX 1e-2

static double norm2(const double *x, size_t n)
{
    return n ? cblas_dnrm2((int)n, x, 1) : 0.0;
}

/* y = A v − r (r may be NULL). Over processes (methods cg and admm) through the products of
 * operator.c, which gather the rows and sum the adjoint over the processes. */
static void stacked_residual(atf_solver *s, const double *v, const double *r, double *y)
{
    int M = s->prob->M;
    if (s->procs) {
        atf_sv_apply(s, v, y);
    } else {
        memset(y, 0, (size_t)M * sizeof *y);
        for (int l = 0; l < s->nvars; l++)
            atf_block_apply(&s->vars[l].op, v + s->vars[l].off, 1.0, y);
    }
    if (r)
        cblas_daxpy(M, -1.0, r, 1, y, 1);
}

/* v ← v − Aᵀλ (λ is negated in place). */
static void stacked_adjoint_sub(atf_solver *s, double *lambda, double *v)
{
    cblas_dscal(s->prob->M, -1.0, lambda, 1);
    if (!s->procs) {
        for (int l = 0; l < s->nvars; l++)
            atf_block_adjoint(&s->vars[l].op, lambda, 1.0, v + s->vars[l].off);
        return;
    }
    double *g = malloc((s->n ? s->n : 1) * sizeof *g);
    if (atf_sv_max(s, g ? 0.0 : 1.0) != 0.0) { /* NaN, as the products give out of memory */
        for (size_t i = 0; i < s->n; i++)
            v[i] = NAN;
        free(g);
        return;
    }
    atf_sv_adjoint(s, lambda, g);
    cblas_daxpy((int)s->n, 1.0, g, 1, v, 1);
    free(g);
}

/* λ = (AAᵀ)⁺ b. A non-finite b (a diverged iterate) gives λ = NaN without calling LAPACK or
 * CHOLMOD, so that the caller's finiteness checks see it and no solver routine gets NaN/Inf. */
static void gram_solve(atf_sv_proj *p, const double *b, double *lambda)
{
    int M = p->M;
    if (!atf_sv_all_finite(b, (size_t)M)) {
        for (int i = 0; i < M; i++)
            lambda[i] = NAN;
        return;
    }
    if (p->dist) { /* over processes (gram_dist.c) */
        atf_sv_dgram_solve(p->dist, p->kind == ATF_PROJ_EIGEN ? p->winv : NULL, b, lambda);
        return;
    }
    switch (p->kind) {
    case ATF_PROJ_CHOLESKY:
        memcpy(lambda, b, (size_t)M * sizeof *lambda);
        LAPACKE_dpotrs_work(LAPACK_COL_MAJOR, 'L', M, 1, p->gram, M, lambda, M);
        break;
    case ATF_PROJ_EIGEN: /* V diag(winv) Vᵀ b */
        cblas_dgemv(CblasColMajor, CblasTrans, M, M, 1.0, p->gram, M, b, 1, 0.0, p->t, 1);
        for (int i = 0; i < M; i++)
            p->t[i] *= p->winv[i];
        cblas_dgemv(CblasColMajor, CblasNoTrans, M, M, 1.0, p->gram, M, p->t, 1, 0.0, lambda,
                    1);
        break;
    case ATF_PROJ_CHOLMOD:
        memcpy(p->rhs->x, b, (size_t)M * sizeof *lambda);
        if (cholmod_l_solve2(CHOLMOD_A, p->F, p->rhs, NULL, &p->sol, NULL, &p->ws_y, &p->ws_e,
                             &p->cc))
            memcpy(lambda, p->sol->x, (size_t)M * sizeof *lambda);
        else /* only on allocation failure inside CHOLMOD; leave v unchanged */
            memset(lambda, 0, (size_t)M * sizeof *lambda);
        break;
    case ATF_PROJ_CG:
        atf_sv_cg_gram_solve(p->cg, b, lambda);
        break;
    }
}

void atf_sv_project(atf_solver *s, double *v, const double *r, int refine)
{
    atf_sv_proj *p = &s->proj;
    double previous = INFINITY;
    for (int pass = 0; pass <= refine; pass++) {
        stacked_residual(s, v, r, p->s);
        if (refine > 0) { /* refinement stops once rounding dominates */
            double now = norm2(p->s, (size_t)p->M);
            if (now == 0.0 || now > 0.5 * previous)
                break;
            previous = now;
        }
        gram_solve(p, p->s, p->lambda);
        stacked_adjoint_sub(s, p->lambda, v);
    }
}

void atf_sv_project_from(atf_solver *s, double *v, const double *r, const double *from,
                         double *lam_out)
{
    atf_sv_proj *p = &s->proj;
    if (p->kind != ATF_PROJ_CG || p->dist) {
        atf_sv_project(s, v, r, 0);
        return;
    }
    stacked_residual(s, v, r, p->s);
    if (atf_sv_all_finite(p->s, (size_t)p->M))
        atf_sv_cg_gram_solve_from(p->cg, p->s, from, p->lambda);
    else
        gram_solve(p, p->s, p->lambda); /* NaN, as gram_solve gives it */
    if (lam_out)
        memcpy(lam_out, p->lambda, (size_t)p->M * sizeof *lam_out);
    stacked_adjoint_sub(s, p->lambda, v);
}

double atf_sv_constraint_norm(atf_solver *s, const double *v, const double *r)
{
    double *w = s->proj.s ? s->proj.s : malloc((size_t)s->prob->M * sizeof *w);
    if (!w) /* the matrix-free methods set no projection up: a workspace of their own */
        return NAN;
    stacked_residual(s, v, r, w);
    double value = norm2(w, (size_t)s->prob->M);
    if (w != s->proj.s)
        free(w);
    return value;
}

/* ---- factorisations ---- */

/* The whole Gram Σ_ℓ A_ℓA_ℓᵀ in one process: p->gram (M × M). */
static atf_error whole_gram(atf_solver *s, double **g, size_t *len, char *err)
{
    int M = s->prob->M;
    atf_sv_proj *p = &s->proj;
    if (!p->gram)
        p->gram = malloc((size_t)M * (size_t)M * sizeof *p->gram);
    if (!p->gram) {
        atf_errorf(err, "projection: out of memory for the %d × %d Gram matrix", M, M);
        return ATF_E_NOMEM;
    }
    *g = p->gram;
    *len = (size_t)M * (size_t)M;
    memset(p->gram, 0, *len * sizeof *p->gram);
    for (int l = 0; l < s->nvars; l++)
        atf_block_gram(&s->vars[l].op, 1.0, p->gram);
    return ATF_OK;
}

/* The dense Gram: whole in one process, this process's tiles over processes (gram_dist.c);
 * non-finite entries are refused on every process alike. */
static atf_error dense_gram(atf_solver *s, char *err)
{
    double *g = NULL;
    size_t len = 0;
    atf_error e = s->procs ? atf_sv_dgram_form(s, &g, &len, err) : whole_gram(s, &g, &len, err);
    if (e != ATF_OK)
        return e;
    if (atf_sv_max(s, atf_sv_all_finite(g, len) ? 0.0 : 1.0) != 0.0) {
        atf_errorf(err, "projection: the Gram matrix AAᵀ has non-finite entries");
        return ATF_E_NUMERICAL;
    }
    return ATF_OK;
}

/* dpotrf and dpocon on the whole Gram: 0, or LAPACK's nonzero info. */
static int whole_cholesky(atf_sv_proj *p, double *rcond)
{
    int M = p->M;
    double anorm = LAPACKE_dlansy(LAPACK_COL_MAJOR, '1', 'L', M, p->gram, M);
    lapack_int info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', M, p->gram, M);
    if (info == 0)
        info = LAPACKE_dpocon(LAPACK_COL_MAJOR, 'L', M, p->gram, M, anorm, rcond);
    return (int)info;
}

/* Cholesky of the dense Gram (in one process, or ScaLAPACK's over processes, decided alike on
 * every one). Returns 1 if it succeeded and is well enough conditioned: its condition estimate
 * above M·ε. */
static int try_cholesky(atf_solver *s)
{
    atf_sv_proj *p = &s->proj;
    double rcond = 0.0;
    if ((s->procs ? atf_sv_dgram_cholesky(s, &rcond) : whole_cholesky(p, &rcond)) != 0)
        return 0;
    p->kind = ATF_PROJ_CHOLESKY;
    p->rank = p->M;
    p->kappa = rcond > 0.0 ? 1.0 / rcond : INFINITY;
    return rcond > (double)p->M * DBL_EPSILON;
}

/* Consistency tolerance of the eigen path. For a consistent r = A x0 with x0 the min-norm
 * solution, the part of r on a dropped eigenvector u is |uᵀA x0| ≤ ‖Aᵀu‖‖x0‖ with
 * ‖Aᵀu‖² = uᵀ(AAᵀ)u ≲ 2·cutoff·λ_max (dropped eigenvalue plus the eigensolver's backward error)
 * and ‖x0‖ ≤ ‖r‖/√λ_min,kept. Hence a consistent problem has relative LS residual at most
 * √(n_dropped · 2·cutoff · λ_max/λ_min,kept); ten times that bound (clamped to
 * [1e-10, 1e-2]) separates rounding from a genuine inconsistency. */
static double eigen_feas_tol(double cutoff, double kappa_kept, int ndrop)
{
    double tol = 10.0 * sqrt((double)ndrop * 2.0 * cutoff * kappa_kept);
    return fmin(FEAS_TOL_MAX, fmax(FEAS_TOL_MIN, tol));
}

/* The pseudo-inverse's spectrum from the eigenvalues w (ascending), one process's or ScaLAPACK's:
 * winv, the rank, the cutoff and the consistency tolerance. */
static void eigen_rule(atf_sv_proj *p, const double *w)
{
    int M = p->M;
    /* dsyevd is backward stable: eigenvalues below about M·ε·λ_max cannot be told from 0. */
    double lmax = fmax(w[M - 1], 0.0);
    p->cutoff = (double)(M > 10 ? M : 10) * DBL_EPSILON;
    double lmin_kept = lmax;
    p->rank = 0;
    for (int i = 0; i < M; i++) {
        int keep = lmax > 0.0 && w[i] > p->cutoff * lmax;
        p->winv[i] = keep ? 1.0 / w[i] : 0.0;
        if (keep) {
            p->rank++;
            lmin_kept = fmin(lmin_kept, w[i]);
        }
    }
    p->kind = ATF_PROJ_EIGEN;
    p->kappa = lmax > 0.0 ? lmax / lmin_kept : 1.0;
    p->feas_tol = eigen_feas_tol(p->cutoff, p->kappa, M - p->rank);
}

static atf_error whole_eigen(atf_sv_proj *p, double *w, char *err)
{
    lapack_int info = LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'V', 'L', p->M, p->gram, p->M, w);
    if (info != 0) {
        atf_errorf(err, "projection: eigendecomposition of AAᵀ failed (info %d)", (int)info);
        return ATF_E_NUMERICAL;
    }
    return ATF_OK;
}

static atf_error eigen_factor(atf_solver *s, char *err)
{
    atf_sv_proj *p = &s->proj;
    double *w = malloc((size_t)p->M * sizeof *w);
    if (!p->winv)
        p->winv = malloc((size_t)p->M * sizeof *p->winv);
    if (atf_sv_max(s, w && p->winv ? 0.0 : 1.0) != 0.0) {
        free(w);
        atf_errorf(err, "projection: out of memory for the eigendecomposition");
        return ATF_E_NOMEM;
    }
    atf_error e = s->procs ? atf_sv_dgram_eigen(s, w, err) : whole_eigen(p, w, err);
    if (e == ATF_OK)
        eigen_rule(p, w);
    free(w);
    return e;
}

static atf_error dense_setup(atf_solver *s, char *err)
{
    atf_error e = dense_gram(s, err);
    if (e != ATF_OK)
        return e;
    if (try_cholesky(s))
        return ATF_OK;
    e = dense_gram(s, err); /* dpotrf overwrote it */
    if (e != ATF_OK)
        return e;
    return eigen_factor(s, err);
}

static void cholmod_release(atf_sv_proj *p)
{
    if (!p->cc_started)
        return;
    cholmod_l_free_sparse(&p->A, &p->cc);
    cholmod_l_free_factor(&p->F, &p->cc);
    cholmod_l_free_dense(&p->rhs, &p->cc);
    cholmod_l_free_dense(&p->sol, &p->cc);
    cholmod_l_free_dense(&p->ws_y, &p->cc);
    cholmod_l_free_dense(&p->ws_e, &p->cc);
    cholmod_l_finish(&p->cc);
    p->cc_started = 0;
}

/* A (M × n) goes to CHOLMOD as triplets (duplicate CSR entries are summed by the conversion),
 * and CHOLMOD factors AAᵀ + βI from it. Returns ATF_OK with kind CHOLMOD, or ATF_OK with
 * cc_started == 0 when the factor is unusable (not positive definite, or a pivot within
 * CHOLMOD_RCOND_MIN of β: singular to working precision), leaving the choice to the dense path. */
static atf_error cholmod_setup(atf_solver *s, char *err)
{
    atf_sv_proj *p = &s->proj;
    int M = s->prob->M;
    int64_t nnz = 0;
    for (int l = 0; l < s->nvars; l++)
        nnz += s->vars[l].op.nnz;
    cholmod_l_start(&p->cc);
    p->cc_started = 1;
    p->cc.print = 0;
    cholmod_triplet *T = cholmod_l_allocate_triplet((size_t)M, s->n, (size_t)(nnz > 0 ? nnz : 1),
                                                    0, CHOLMOD_REAL, &p->cc);
    if (!T)
        goto nomem;
    SuiteSparse_long *ti = T->i, *tj = T->j;
    double *tx = T->x, maxdiag = 0.0;
    size_t pos = 0;
    for (int m = 0; m < M; m++) {
        double diag = 0.0;
        for (int l = 0; l < s->nvars; l++) {
            const atf_block *b = &s->vars[l].op;
            for (int64_t k = b->indptr[m]; k < b->indptr[m + 1]; k++) {
                ti[pos] = m;
                tj[pos] = (SuiteSparse_long)(b->indices[k] + (int64_t)s->vars[l].off);
                tx[pos++] = b->data[k];
                diag += b->data[k] * b->data[k];
            }
        }
        maxdiag = fmax(maxdiag, diag);
    }
    T->nnz = pos;
    p->A = cholmod_l_triplet_to_sparse(T, pos, &p->cc);
    cholmod_l_free_triplet(&T, &p->cc);
    if (!p->A)
        goto nomem;
    p->beta = CHOLMOD_BETA_REL * (maxdiag > 0.0 ? maxdiag : 1.0);
    p->F = cholmod_l_analyze(p->A, &p->cc);
    if (!p->F)
        goto nomem;
    double beta[2] = {p->beta, 0.0};
    if (!cholmod_l_factorize_p(p->A, beta, NULL, 0, p->F, &p->cc) ||
        p->cc.status != CHOLMOD_OK || p->F->minor < p->F->n) {
        if (p->cc.status == CHOLMOD_OUT_OF_MEMORY)
            goto nomem;
        cholmod_release(p); /* not positive definite: the dense path decides */
        return ATF_OK;
    }
    if (cholmod_l_rcond(p->F, &p->cc) < CHOLMOD_RCOND_MIN) {
        cholmod_release(p); /* singular up to β: the dense path decides */
        return ATF_OK;
    }
    p->rhs = cholmod_l_allocate_dense((size_t)M, 1, (size_t)M, CHOLMOD_REAL, &p->cc);
    if (!p->rhs)
        goto nomem;
    p->kind = ATF_PROJ_CHOLMOD;
    p->rank = M;
    return ATF_OK;
nomem:
    cholmod_release(p);
    atf_errorf(err, "projection: CHOLMOD ran out of memory factorising AAᵀ (M = %d, nnz = %lld)",
               M, (long long)nnz);
    return ATF_E_NOMEM;
}

/* Least-squares point x_ls = Aᵀ(AAᵀ)⁺r with refinement, and its relative residual. */
static double least_squares_point(atf_solver *s)
{
    memset(s->x_ls, 0, s->n * sizeof *s->x_ls);
    atf_sv_project(s, s->x_ls, s->work.r, 4);
    double res = atf_sv_constraint_norm(s, s->x_ls, s->work.r);
    return s->rnorm > 0.0 ? res / s->rnorm : res;
}

static int all_sparse(const atf_solver *s)
{
    for (int l = 0; l < s->nvars; l++)
        if (s->vars[l].op.kind != ATF_OP_SPARSE)
            return 0;
    return 1;
}

atf_error atf_sv_proj_setup(atf_solver *s, char *err)
{
    atf_sv_proj *p = &s->proj;
    int M = s->prob->M;
    p->M = M;
    p->s = malloc((size_t)M * sizeof *p->s);
    p->lambda = malloc((size_t)M * sizeof *p->lambda);
    p->t = malloc((size_t)M * sizeof *p->t);
    s->x_ls = malloc((s->n ? s->n : 1) * sizeof *s->x_ls);
    if (atf_sv_max(s, p->s && p->lambda && p->t && s->x_ls ? 0.0 : 1.0) != 0.0) {
        atf_errorf(err, "projection: out of memory (M = %d, n = %zu)", M, s->n);
        return ATF_E_NOMEM;
    }
    s->rnorm = norm2(s->work.r, (size_t)M);
    p->feas_tol = FULL_RANK_CHECK;
    double ls = INFINITY;
    if (all_sparse(s)) {
        atf_error e = cholmod_setup(s, err);
        if (e != ATF_OK)
            return e;
        if (p->cc_started) {
            ls = least_squares_point(s);
            if (ls > FULL_RANK_CHECK) { /* refinement did not converge: AAᵀ (nearly) singular */
                cholmod_release(p);
                ls = INFINITY;
            }
        }
    }
    if (!p->cc_started) {
        atf_error e = dense_setup(s, err);
        if (e != ATF_OK)
            return e;
        ls = least_squares_point(s);
        if (p->kind == ATF_PROJ_CHOLESKY && ls > FULL_RANK_CHECK) {
            e = dense_gram(s, err);
            if (e == ATF_OK)
                e = eigen_factor(s, err);
            if (e != ATF_OK)
                return e;
            ls = least_squares_point(s);
        }
    }
    s->ls_residual = ls;
    if (!isfinite(ls)) {
        atf_errorf(err, "projection: the least-squares point is not finite");
        return ATF_E_NUMERICAL;
    }
    s->consistent = s->ls_residual <= p->feas_tol;
    return ATF_OK;
}

void atf_sv_proj_free(atf_sv_proj *p)
{
    cholmod_release(p);
    atf_sv_cg_free(p->cg);
    p->cg = NULL;
    atf_sv_dgram_free(p->dist);
    p->dist = NULL;
    free(p->gram), free(p->winv), free(p->s), free(p->lambda), free(p->t);
    p->gram = p->winv = p->s = p->lambda = p->t = NULL;
}
