/* operator.c — the stacked constraint operator A' of the solver's variables (the cores of
 * reduction.c, in the work units of equilibrate.c): z = A'x and g = A'ᵀu as the sum and the
 * concatenation of the blocks' own operators (problems/operators.c: per factored block two
 * GEMMs with H and D; the M × M Gram is never formed). Every matrix-free method goes through
 * these two functions, which count the passes over the data for the result, and share one
 * scratch (s->op_work) so that no pass allocates. */
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
        atf_factored_hess(s->nvars, ops, s->hess_x, s->hess_g, curv, ctx, z, s->op_work);
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

void atf_sv_hess(atf_solver *s, atf_curvature_fn *curv, void *ctx, const double *x, double *z,
                 double *g)
{
    atf_sv_hess_ops(s, s->op_ptrs, curv, ctx, x, z, g);
    s->passes += 2;
}
