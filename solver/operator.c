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
