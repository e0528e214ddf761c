/* operator.c — the stacked constraint operator A' of the solver's variables (the cores of
 * reduction.c, in the work units of equilibrate.c): z = A'x and g = A'ᵀu as the sum and the
 * concatenation of the blocks' own operators (problems/operators.c: per factored block two
 * GEMMs with H and D; the M × M Gram is never formed). Every matrix-free method goes through
 * these two functions, which count the passes over the data for the result, and share one
 * scratch (s->op_work) so that no pass allocates. */
#include <string.h>

#include "solver_internal.h"

/* z = Σ_l ops_l x_l and g_l = ops_lᵀ u through operators of the vars' shapes (the vars' own, or
 * a subsample's), in the shared scratch. */
static void apply_ops(atf_solver *s, const atf_block *const *ops, const double *x, double *z)
{
    for (int l = 0; l < s->nvars; l++)
        atf_block_apply_work(ops[l], x + s->vars[l].off, l ? 1.0 : 0.0, z, s->op_work);
}

static void adjoint_ops(atf_solver *s, const atf_block *const *ops, const double *u, double *g)
{
    for (int l = 0; l < s->nvars; l++)
        atf_block_adjoint_work(ops[l], u, 0.0, g + s->vars[l].off, s->op_work);
}

void atf_sv_apply(atf_solver *s, const double *x, double *z)
{
    apply_ops(s, s->op_ptrs, x, z);
    s->passes++;
}

void atf_sv_adjoint(atf_solver *s, const double *u, double *g)
{
    adjoint_ops(s, s->op_ptrs, u, g);
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
    apply_ops(s, ops, x, z);
    int C = ops[0]->C;
    for (int i = 0; i < ops[0]->N; i++)
        curv(ctx, i, z + (size_t)i * C, z + (size_t)i * C);
    adjoint_ops(s, ops, z, g);
}

/* Between the k columns (n × k, column-major) and the same side by side per var, as
 * atf_factored_hess takes them (var l's rows × k·cols at pack + k·off_l): to_pack copies the
 * columns into pack, else pack into the columns. */
static void move_columns(const atf_solver *s, int k, const double *src, double *dst, int to_pack)
{
    for (int l = 0; l < s->nvars; l++) {
        const atf_sv_var *v = &s->vars[l];
        for (int j = 0; j < k; j++)
            for (int p = 0; p < v->rows; p++) {
                size_t col = (size_t)j * s->n + v->off + (size_t)p * v->cols;
                size_t row = (size_t)k * v->off + ((size_t)p * k + j) * v->cols;
                memcpy(dst + (to_pack ? row : col), src + (to_pack ? col : row),
                       (size_t)v->cols * sizeof *dst);
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
    move_columns(s, k, X, pack, 1);
    for (int l = 0; l < s->nvars; l++)
        s->hess_x[l] = s->hess_g[l] = pack + (size_t)k * s->vars[l].off;
    atf_factored_hess(s->nvars, ops, k, s->hess_x, s->hess_g, curv, ctx, z, s->op_work);
    move_columns(s, k, pack, Y, 0);
}

void atf_sv_hess(atf_solver *s, atf_curvature_fn *curv, void *ctx, const double *x, double *z,
                 double *g)
{
    atf_sv_hess_ops(s, s->op_ptrs, curv, ctx, x, z, g);
    s->passes += 2;
}
