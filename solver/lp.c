/* lp.c — the exact LP method for the diagonal structure with the `nuclear` penalty.
 *
 * With 1×1 blocks the nuclear penalty is a weighted ℓ1 norm, Σ_ℓ 2√γ_ℓ Σ|x|, so problem (16)
 * is basis pursuit: min wᵀ(x⁺ + x⁻) s.t. A(x⁺ − x⁻) = r, x± ≥ 0. GLPK's primal simplex solves it
 * with tolerances tightened to 1e-10; the optimal vertex x_B = A_B⁻¹r comes out of its LU
 * factorisation with a residual at rounding level. (glp_exact was tried: from the optimal basis it
 * returned the same vertex with a larger residual, about 1e-10 against 1e-15, so it is not
 * used.) The row
 * duals λ give the optimality certificate Aᵀλ ∈ ∂(w‖x‖₁) (reduced costs w ∓ Aᵀλ ≥ 0, zero on
 * the basic columns). Constraint rows are materialised (atf_block_dense for factored blocks),
 * so this is an independent check of ADMM for problems of modest size, not a large-scale
 * method. */
#include <glpk.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solver_method.h"

/* Primal and dual feasibility tolerances of the simplex (GLPK's defaults are 1e-7). */
#define LP_TOLERANCE 1e-10
/* Largest stationarity of an answer reported as solved: the LP is exact, so its duals certify
 * the vertex to rounding (about 1e-15 on equilibrated data); far above that, something failed. */
#define LP_CERTIFICATE_TOL 1e-6

static int is_entrywise(const atf_sv_var *v)
{
    return v->kind == ATF_SV_ENTRYWISE || (v->rows == 1 && v->cols == 1);
}

atf_error atf_sv_lp_check(const atf_solver *s, char *err)
{
    if (s->structure == ATF_GLOBAL_FULL) {
        atf_errorf(err, "method lp solves only the diagonal structure with the nuclear penalty "
                        "(l1 basis pursuit), not the full structure");
        return ATF_E_USAGE;
    }
    for (int l = 0; l < s->nvars; l++) {
        const atf_sv_var *v = &s->vars[l];
        if (!is_entrywise(v)) {
            atf_errorf(err, "method lp solves only the diagonal structure with the nuclear "
                            "penalty (l1 basis pursuit): block %s has structure matrix "
                            "(use structure diagonal)", v->orig->name);
            return ATF_E_USAGE;
        }
        if (!atf_penalty_is_nuclear(&v->pen)) {
            atf_errorf(err, "method lp solves only the diagonal structure with the nuclear "
                            "penalty (l1 basis pursuit): block %s has penalty '%s' "
                            "(use penalty nuclear)", v->orig->name, v->orig->penalty_spec);
            return ATF_E_USAGE;
        }
    }
    return ATF_OK;
}

typedef struct {
    int *ia, *ja;
    double *ar;
    size_t ne, cap;
} triplets;

static int push(triplets *t, int row, int col, double a)
{
    if (t->ne + 1 >= t->cap) { /* GLPK's arrays are 1-based: slot 0 stays unused */
        size_t cap = t->cap ? 2 * t->cap : 1024;
        int *ia = realloc(t->ia, cap * sizeof *ia);
        if (ia)
            t->ia = ia;
        int *ja = realloc(t->ja, cap * sizeof *ja);
        if (ja)
            t->ja = ja;
        double *ar = realloc(t->ar, cap * sizeof *ar);
        if (ar)
            t->ar = ar;
        if (!ia || !ja || !ar)
            return -1;
        t->cap = cap;
    }
    t->ne++;
    t->ia[t->ne] = row;
    t->ja[t->ne] = col;
    t->ar[t->ne] = a;
    return 0;
}

/* Columns j (x⁺) and n + j (x⁻) for every nonzero a_mj of the var's rows. */
static int load_var(const atf_sv_var *v, int M, int n, triplets *t)
{
    const atf_block *b = &v->op;
    int base = (int)v->off;
    if (b->kind == ATF_OP_SPARSE) {
        for (int m = 0; m < M; m++)
            for (int64_t k = b->indptr[m]; k < b->indptr[m + 1]; k++) {
                int j = base + (int)b->indices[k];
                if (push(t, m + 1, j + 1, b->data[k]) || push(t, m + 1, n + j + 1, -b->data[k]))
                    return -1;
            }
        return 0;
    }
    double *dense = b->kind == ATF_OP_DENSE ? b->J : atf_block_dense(b);
    if (!dense)
        return -1;
    int rc = 0;
    for (int m = 0; m < M && !rc; m++)
        for (size_t c = 0; c < v->len && !rc; c++) {
            double a = dense[(size_t)m * v->len + c];
            if (a != 0.0) {
                int j = base + (int)c;
                rc = push(t, m + 1, j + 1, a) || push(t, m + 1, n + j + 1, -a);
            }
        }
    if (dense != b->J)
        free(dense);
    return rc;
}

static glp_prob *build_lp(const atf_solver *s, triplets *t)
{
    int M = s->prob->M, n = (int)s->n;
    glp_prob *lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MIN);
    glp_add_rows(lp, M);
    for (int m = 0; m < M; m++)
        glp_set_row_bnds(lp, m + 1, GLP_FX, s->work.r[m], s->work.r[m]);
    glp_add_cols(lp, 2 * n);
    for (int l = 0; l < s->nvars; l++) {
        const atf_sv_var *v = &s->vars[l];
        double w = atf_penalty_deriv(&v->pen, 1.0); /* 2√γ */
        for (size_t c = 0; c < v->len; c++) {
            int j = (int)(v->off + c);
            glp_set_col_bnds(lp, j + 1, GLP_LO, 0.0, 0.0);
            glp_set_col_bnds(lp, n + j + 1, GLP_LO, 0.0, 0.0);
            glp_set_obj_coef(lp, j + 1, w);
            glp_set_obj_coef(lp, n + j + 1, w);
        }
    }
    for (int l = 0; l < s->nvars; l++)
        if (load_var(&s->vars[l], M, n, t)) {
            glp_delete_prob(lp);
            return NULL;
        }
    glp_load_matrix(lp, (int)t->ne, t->ia, t->ja, t->ar);
    return lp;
}

/* The simplex runs to its optimal vertex: no iteration budget applies. */
atf_error atf_sv_lp_run(atf_solver *s, const atf_sv_budget *b, atf_result *res, double *x,
                        char *err)
{
    (void)b;
    int M = s->prob->M, n = (int)s->n;
    if (s->n > (size_t)(1 << 29)) {
        atf_errorf(err, "method lp: %zu variables are too many for GLPK", s->n);
        return ATF_E_USAGE;
    }
    triplets t = {0};
    glp_prob *lp = build_lp(s, &t);
    if (!lp) {
        free(t.ia), free(t.ja), free(t.ar);
        atf_errorf(err, "method lp: out of memory materialising the %d constraint rows", M);
        return ATF_E_NOMEM;
    }
    free(t.ia), free(t.ja), free(t.ar);
    glp_smcp parm;
    glp_init_smcp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    parm.tol_bnd = LP_TOLERANCE;
    parm.tol_dj = LP_TOLERANCE;
    int rc = glp_simplex(lp, &parm);

    int status = glp_get_status(lp);
    res->info.iterations = glp_get_it_cnt(lp);
    if (rc != 0 || (status != GLP_OPT && status != GLP_NOFEAS)) {
        glp_delete_prob(lp);
        res->info.status = ATF_STATUS_NUMERICAL_ERROR;
        memcpy(x, s->x_ls, s->n * sizeof *x);
        res->info.stationarity = atf_sv_stationarity(s, x, NULL, 0.0);
        return ATF_OK;
    }
    if (status == GLP_NOFEAS) { /* the LP runs only when r ∈ range(A): a simplex failure */
        glp_delete_prob(lp);
        snprintf(s->check, sizeof s->check, "method lp: GLPK found no feasible point, but the "
                 "least-squares point satisfies the constraints (relative residual %.3e)",
                 s->ls_residual);
        res->info.status = ATF_STATUS_NUMERICAL_ERROR;
        memcpy(x, s->x_ls, s->n * sizeof *x);
        res->info.stationarity = atf_sv_stationarity(s, x, NULL, 0.0);
        return ATF_OK;
    }
    for (int j = 0; j < n; j++)
        x[j] = glp_get_col_prim(lp, j + 1) - glp_get_col_prim(lp, n + j + 1);
    double *y = calloc((size_t)(n ? n : 1), sizeof *y);
    double *lambda = malloc((size_t)M * sizeof *lambda);
    if (!y || !lambda) {
        free(y), free(lambda);
        glp_delete_prob(lp);
        atf_errorf(err, "method lp: out of memory for the dual certificate");
        return ATF_E_NOMEM;
    }
    for (int m = 0; m < M; m++)
        lambda[m] = glp_get_row_dual(lp, m + 1);
    glp_delete_prob(lp);
    for (int l = 0; l < s->nvars; l++) /* y = Aᵀλ */
        atf_block_adjoint(&s->vars[l].op, lambda, 1.0, y + s->vars[l].off);
    double xmax = 0.0;
    for (int j = 0; j < n; j++)
        xmax = fmax(xmax, fabs(x[j]));
    res->info.status = ATF_STATUS_SOLVED;
    res->info.primal_residual = 0.0;
    res->info.dual_residual = 0.0;
    res->info.stationarity = atf_sv_stationarity(s, x, y, 1e-12 * xmax);
    free(y), free(lambda);
    if (!(res->info.stationarity <= LP_CERTIFICATE_TOL)) { /* the duals do not prove the vertex optimal */
        snprintf(s->check, sizeof s->check, "method lp: the GLPK duals do not certify the "
                 "vertex (stationarity %.3e, tolerance %.0e)", res->info.stationarity,
                 LP_CERTIFICATE_TOL);
        res->info.status = ATF_STATUS_NUMERICAL_ERROR;
        memcpy(x, s->x_ls, s->n * sizeof *x);
        res->info.stationarity = atf_sv_stationarity(s, x, NULL, 0.0);
    }
    return ATF_OK;
}
