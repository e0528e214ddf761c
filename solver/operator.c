/* operator.c — the stacked constraint operator A' of the solver's variables (the cores of
 * reduction.c, in the work units of equilibrate.c): z = A'x and g = A'ᵀu as the sum and the
 * concatenation of the blocks' own operators (problems/operators.c: per factored block two
 * GEMMs with H and D; the M × M Gram is never formed). Every matrix-free method goes through
 * these two functions, which count the passes over the data for the result, and share one
 * scratch (s->op_work) so that no pass allocates. */
#include <string.h>

#include "solver_internal.h"

void atf_sv_apply(atf_solver *s, const double *x, double *z)
{
    for (int l = 0; l < s->nvars; l++)
        atf_block_apply_work(&s->vars[l].op, x + s->vars[l].off, l ? 1.0 : 0.0, z,
                             s->op_work);
    s->passes++;
}

void atf_sv_adjoint(atf_solver *s, const double *u, double *g)
{
    for (int l = 0; l < s->nvars; l++)
        atf_block_adjoint_work(&s->vars[l].op, u, 0.0, g + s->vars[l].off, s->op_work);
    s->passes++;
}

int atf_sv_fusable(int n, const atf_block *const *ops)
{
    for (int l = 0; l < n; l++)
        if (ops[l]->kind != ATF_OP_FACTORED)
            return 0;
    return n > 0;
}

void atf_sv_hess_ops(atf_solver *s, const atf_block *const *ops, atf_curvature_fn *curv,
                     void *ctx, const double *x, double *z, double *g)
{
    if (atf_sv_fusable(s->nvars, ops)) {
        for (int l = 0; l < s->nvars; l++) {
            s->hess_x[l] = x + s->vars[l].off;
            s->hess_g[l] = g + s->vars[l].off;
        }
        atf_factored_hess(s->nvars, ops, 1, s->hess_x, s->hess_g, curv, ctx, z, s->op_work);
        return;
    }
    for (int l = 0; l < s->nvars; l++)
        atf_block_apply_work(ops[l], x + s->vars[l].off, l ? 1.0 : 0.0, z, s->op_work);
    int C = ops[0]->C;
    for (int i = 0; i < ops[0]->N; i++)
        curv(ctx, i, z + (size_t)i * C, z + (size_t)i * C);
    for (int l = 0; l < s->nvars; l++)
        atf_block_adjoint_work(ops[l], z, 0.0, g + s->vars[l].off, s->op_work);
}

/* The k columns X (n × k, column-major) side by side per var, as atf_factored_hess takes them
 * (var l's rows × k·cols at pack + k·off_l); unpack = 1 the way back. */
static void pack_columns(const atf_solver *s, int k, double *X, double *pack, int unpack)
{
    for (int l = 0; l < s->nvars; l++) {
        const atf_sv_var *v = &s->vars[l];
        double *P = pack + (size_t)k * v->off;
        for (int j = 0; j < k; j++)
            for (int p = 0; p < v->rows; p++) {
                double *col = X + (size_t)j * s->n + v->off + (size_t)p * v->cols;
                double *row = P + ((size_t)p * k + j) * v->cols;
                memcpy(unpack ? col : row, unpack ? row : col, (size_t)v->cols * sizeof *col);
            }
    }
}

void atf_sv_hess_many(atf_solver *s, const atf_block *const *ops, int k, atf_curvature_fn *curv,
                      void *ctx, const double *X, double *Y, double *z, double *pack)
{
    if (k == 1 || !atf_sv_fusable(s->nvars, ops)) {
        for (int j = 0; j < k; j++)
            atf_sv_hess_ops(s, ops, curv, ctx, X + (size_t)j * s->n, z, Y + (size_t)j * s->n);
        return;
    }
    pack_columns(s, k, (double *)X, pack, 0);
    for (int l = 0; l < s->nvars; l++)
        s->hess_x[l] = s->hess_g[l] = pack + (size_t)k * s->vars[l].off;
    atf_factored_hess(s->nvars, ops, k, s->hess_x, s->hess_g, curv, ctx, z, s->op_work);
    pack_columns(s, k, Y, pack, 1);
}

void atf_sv_hess(atf_solver *s, atf_curvature_fn *curv, void *ctx, const double *x, double *z,
                 double *g)
{
    atf_sv_hess_ops(s, s->op_ptrs, curv, ctx, x, z, g);
    s->passes += 2;
}
