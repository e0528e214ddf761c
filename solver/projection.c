/* projection.c — the Euclidean projection onto {A'x = r'} and the least-squares point, through
 * the solver's linear system (linsys/).
 *
 * Π(V) = V − A'ᵀ(A'A'ᵀ)⁺(A'V − r') does not involve ρ, so the system is set up a single time,
 * whatever ADMM's ρ does later. A direct plan tries the chooser's backends in order (CHOLMOD for
 * all-sparse operators, the dense Cholesky factor, the eigendecomposition) and keeps the first
 * that serves and whose least-squares point A'ᵀ(A'A'ᵀ)⁺r' reproduces r' to √ε — the rank-
 * revealing eigendecomposition, last, is kept whatever its residual, and decides the
 * consistency of the constraints from it. A PCG plan solves to the projection's tolerance, from
 * the last projection's λ where the caller has one (ADMM), and does not decide consistency: an
 * r that its least-squares point cannot reproduce is an error here (the cg method certifies an
 * inconsistent r). Over processes (admm and the Gram baseline under mpirun) the dense Gram is
 * spread over them and factorised through the command's hooks, with the same rules, decided
 * alike on every process. */
#include <cblas.h>
#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gram.h"
#include "linsys.h"
#include "pcg.h"

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
        atf_linsys_solve(p->ls, p->s, NULL, 0.0, p->lambda);
        stacked_adjoint_sub(s, p->lambda, v);
    }
}

void atf_sv_project_from(atf_solver *s, double *v, const double *r, const double *from,
                         double *lam_out)
{
    atf_sv_proj *p = &s->proj;
    stacked_residual(s, v, r, p->s);
    atf_linsys_solve(p->ls, p->s, from, 0.0, p->lambda);
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


/* Least-squares point x_ls = Aᵀ(AAᵀ)⁺r with refinement, and its relative residual. */
static double least_squares_point(atf_solver *s, int refine)
{
    memset(s->x_ls, 0, s->n * sizeof *s->x_ls);
    atf_sv_project(s, s->x_ls, s->work.r, refine);
    double res = atf_sv_constraint_norm(s, s->x_ls, s->work.r);
    return s->rnorm > 0.0 ? res / s->rnorm : res;
}

/* A direct plan: the chooser's backends in order, the first that serves and reproduces r (the
 * last, rank-revealing, whatever its residual); *ls_res its least-squares residual. */
static atf_error direct_setup(atf_solver *s, double *ls_res, char *err)
{
    atf_sv_proj *p = &s->proj;
    int count = 0;
    const atf_linsys_backend *const *cand = atf_linsys_direct_candidates(s, &count);
    atf_linsys_params par = atf_linsys_params_of(&s->set);
    for (int c = 0; c < count; c++) {
        atf_error e = atf_linsys_open(s, cand[c], &par, &p->ls, err);
        if (e != ATF_OK)
            return e;
        if (p->ls->usable) {
            *ls_res = least_squares_point(s, 4);
            if (*ls_res <= ATF_LINSYS_FULL_RANK_CHECK || c == count - 1)
                return ATF_OK;
        }
        atf_linsys_free(p->ls); /* (nearly) singular for it: the next one decides */
        p->ls = NULL;
    }
    atf_errorf(err, "projection: no factorisation of AAᵀ could be made");
    return ATF_E_NUMERICAL;
}

/* A PCG plan for repeated projections (ADMM where only the single-precision Gram fits): its
 * preconditioner built now (gram32 unless another is asked for), the least-squares point by
 * one projection, which must reproduce r to 1.5 times the tolerance (else r may be
 * inconsistent, which the cg method decides: ATF_E_NUMERICAL). Consistency is not decided. */
static atf_error pcg_projection_setup(atf_solver *s, char *err)
{
    atf_sv_proj *p = &s->proj;
    atf_linsys_params par = atf_linsys_params_of(&s->set);
    if (par.precond == ATF_PRECOND_AUTO)
        par.precond = ATF_PRECOND_GRAM32;
    atf_error e = atf_linsys_open(s, &atf_linsys_pcg, &par, &p->ls, err);
    if (e == ATF_OK)
        e = atf_sv_cg_prepare(atf_linsys_pcg_engine(p->ls), err); /* its error, not plain CG's */
    if (e != ATF_OK)
        return e;
    s->ls_residual = least_squares_point(s, 0);
    double limit = 1.5 * p->ls->par.tol;
    if (!(s->ls_residual <= limit) && !atf_sv_interrupted(s)) {
        atf_errorf(err, "admm: the projection by CG reached a relative constraint residual of "
                        "%.2e at the min-norm point, over %.1e: r may be inconsistent (`atf "
                        "baseline --method cg` decides it)", s->ls_residual, limit);
        return ATF_E_NUMERICAL;
    }
    return ATF_OK;
}

atf_error atf_sv_proj_setup(atf_solver *s, atf_sv_proj_plan plan, char *err)
{
    atf_sv_proj *p = &s->proj;
    int M = s->prob->M;
    p->M = M;
    p->s = malloc((size_t)M * sizeof *p->s);
    p->lambda = malloc((size_t)M * sizeof *p->lambda);
    s->x_ls = calloc(s->n ? s->n : 1, sizeof *s->x_ls);
    if (atf_sv_max(s, p->s && p->lambda && s->x_ls ? 0.0 : 1.0) != 0.0) {
        atf_errorf(err, "projection: out of memory (M = %d, n = %zu)", M, s->n);
        return ATF_E_NOMEM;
    }
    s->rnorm = norm2(s->work.r, (size_t)M);
    s->consistent = 1, s->ls_residual = NAN;
    if (plan == ATF_SV_PROJ_KRYLOV) { /* the cg method: its run decides everything */
        atf_linsys_params par = atf_linsys_params_of(&s->set);
        return atf_linsys_open(s, &atf_linsys_pcg, &par, &p->ls, err);
    }
    if (plan == ATF_SV_PROJ_PCG)
        return pcg_projection_setup(s, err);
    double ls = INFINITY;
    atf_error e = direct_setup(s, &ls, err);
    if (e != ATF_OK)
        return e;
    s->ls_residual = ls;
    if (!isfinite(ls)) {
        atf_errorf(err, "projection: the least-squares point is not finite");
        return ATF_E_NUMERICAL;
    }
    s->consistent = s->ls_residual <= p->ls->feas_tol;
    return ATF_OK;
}

double atf_sv_feas_tol(const atf_solver *s)
{
    return s->proj.ls ? s->proj.ls->feas_tol : 0.0;
}

void atf_sv_proj_free(atf_sv_proj *p)
{
    atf_linsys_free(p->ls);
    free(p->s), free(p->lambda);
    memset(p, 0, sizeof *p);
}
