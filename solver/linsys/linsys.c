/* linsys.c — the chooser of the linear systems A'A'ᵀ λ = b (linsys.h): the memory model, the
 * single `auto` rule, the order of the direct backends, and the generic open, solve and free
 * that every backend goes through.
 *
 * The memory model is measured (docs/solver.md, "Linear systems"): the dense path's peak is
 * 76 MiB + 8.70·M² bytes (the Gram, LAPACK's workspace, the projection's vectors), plus the
 * equilibrated copy of the operators; gram32 keeps 4·M(M+1)/2 bytes of single-precision factor
 * beside the operators. Either may take settings.memory_fraction of the memory available when
 * the solver is set up. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "linsys.h"
#include "pcg.h"

#define GRAM_BYTES_PER_ENTRY 8.7
#define GRAM_BYTES_FIXED (76.0 * 1024.0 * 1024.0)
#define GIB (1024.0 * 1024.0 * 1024.0)

/* ---- the memory model ---- */

double atf_linsys_available_bytes(void)
{
    long pages = sysconf(_SC_AVPHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (double)pages * (double)size : 0.0;
}

/* The operator arrays (the equilibrated copy the solver keeps). */
static double operator_bytes(const atf_problem *prob)
{
    double bytes = 0.0;
    for (int l = 0; l < prob->nblocks; l++) {
        const atf_block *b = &prob->blocks[l];
        bytes += b->kind == ATF_OP_FACTORED
                     ? 8.0 * ((double)b->N * b->rows + (double)b->M * b->cols)
                 : b->kind == ATF_OP_DENSE ? 8.0 * (double)b->M * b->rows * b->cols
                                           : 12.0 * (double)b->nnz + 8.0 * (b->M + 1);
    }
    return bytes;
}

/* The bytes this machine needs for the dense path: all of it in one process; over processes
 * (shards) the Gram's tiles are spread evenly and each holds its examples' operator arrays, so
 * a machine running `local` of the `size` processes needs local/size of the whole. */
static double gram_bytes(const atf_problem *prob, const atf_processes *procs)
{
    double M = prob->M, share = 1.0, copies = 1.0;
    if (procs) {
        int local = procs->local > 0 && procs->local <= procs->size ? procs->local : procs->size;
        share = (double)local / procs->size, copies = local;
    }
    return share * GRAM_BYTES_PER_ENTRY * M * M + copies * GRAM_BYTES_FIXED +
           copies * operator_bytes(prob);
}

int atf_linsys_gram_fits(const atf_problem *prob, const atf_processes *procs, double fraction,
                         int max_rows, char *why, size_t len)
{
    procs = procs && procs->size > 1 ? procs : NULL;
    if (procs && !procs->gram) {
        if (why && len)
            snprintf(why, len, "M = %d: the examples are spread over processes, and this build "
                     "cannot spread the Gram", prob->M);
        return 0;
    }
    double M = prob->M, need = gram_bytes(prob, procs), avail = atf_linsys_available_bytes();
    double refuse = need <= fraction * avail ? 0.0 : 1.0;
    if (procs) /* every process must take the same path: one that does not fit decides */
        procs->max(procs->ctx, &refuse, 1);
    int fits = refuse == 0.0, gram = fits && (max_rows <= 0 || prob->M <= max_rows);
    if (!why || !len)
        return gram;
    char where[96] = "";
    if (procs)
        snprintf(where, sizeof where, " on this machine (%d of %d processes)",
                 procs->local > 0 ? procs->local : procs->size, procs->size);
    if (!fits)
        snprintf(why, len, "M = %d: the Gram needs %.3g GiB (8.7 B x M^2)%s, over %.0f%% of the "
                 "%.3g GiB available", prob->M, need / GIB, where, 100 * fraction, avail / GIB);
    else if (!gram)
        snprintf(why, len, "M = %d > %d: the Gram (%.3g GiB%s, %.2g flops) is slower than CG",
                 prob->M, max_rows, need / GIB, where, M * M * M / 3.0);
    else
        snprintf(why, len, "M = %d: the Gram needs %.3g GiB%s of %.3g GiB available", prob->M,
                 need / GIB, where, avail / GIB);
    return gram;
}

int atf_linsys_gram32_fits(const atf_problem *prob, double fraction, double *need_bytes)
{
    double M = prob->M, avail = atf_linsys_available_bytes();
    double need = M * (M + 1.0) / 2.0 * sizeof(float) + operator_bytes(prob);
    if (need_bytes)
        *need_bytes = need;
    return avail > 0.0 && need <= fraction * avail;
}

/* ---- the rule ---- */

atf_ls_plan atf_linsys_choose(const atf_problem *prob, const atf_processes *procs,
                              const atf_settings *set, int repeated, char *why, size_t len)
{
    if (set->linsys != ATF_LINSYS_AUTO) {
        if (why && len)
            snprintf(why, len, "linsys %s", atf_linsys_kind_name(set->linsys));
        return set->linsys == ATF_LINSYS_PCG ? ATF_LS_PLAN_PCG : ATF_LS_PLAN_DIRECT;
    }
    int max_rows = repeated ? 0 : set->gram_max_rows;
    if (atf_linsys_gram_fits(prob, procs, set->memory_fraction, max_rows, why, len))
        return ATF_LS_PLAN_DIRECT;
    if (!repeated)
        return ATF_LS_PLAN_PCG;
    double need = 0.0;
    if ((procs && procs->size > 1) || !atf_linsys_gram32_fits(prob, set->memory_fraction, &need))
        return ATF_LS_PLAN_NONE;
    size_t used = why ? strlen(why) : 0;
    if (why && used < len)
        snprintf(why + used, len - used, "; in single precision %.3g GiB", need / GIB);
    return ATF_LS_PLAN_PCG;
}

const atf_linsys_backend *const *atf_linsys_direct_candidates(const atf_solver *s, int *count)
{
    static const atf_linsys_backend *const sparse[] = {&atf_linsys_cholmod, &atf_linsys_cholesky,
                                                       &atf_linsys_eigen};
    static const atf_linsys_backend *const dense[] = {&atf_linsys_cholesky, &atf_linsys_eigen};
    int all_sparse = !s->procs;
    for (int l = 0; l < s->nvars && all_sparse; l++)
        all_sparse = s->vars[l].op.kind == ATF_OP_SPARSE;
    *count = all_sparse ? 3 : 2;
    return all_sparse ? sparse : dense;
}

/* ---- a system ---- */

atf_linsys_params atf_linsys_params_of(const atf_settings *set)
{
    atf_linsys_params par = {set->precond, fmin(set->eps_rel, ATF_CG_TOL_MAX), set->max_iter,
                             set->memory_fraction, set->eps_rel, set->verbose};
    return par;
}

atf_error atf_linsys_open(atf_solver *s, const atf_linsys_backend *backend,
                          const atf_linsys_params *par, atf_linsys **out, char *err)
{
    *out = NULL;
    atf_linsys *ls = calloc(1, sizeof *ls);
    if (atf_sv_max(s, ls ? 0.0 : 1.0) != 0.0) {
        free(ls);
        atf_errorf(err, "linsys: out of memory");
        return ATF_E_NOMEM;
    }
    ls->backend = backend;
    ls->s = s;
    ls->M = s->work.M;
    ls->spread = s->procs != NULL;
    ls->rank = -1;
    ls->par = *par;
    snprintf(ls->name, sizeof ls->name, "%s%s", ls->spread && !backend->iterative ?
             "dist-" : "", backend->name);
    atf_error e = backend->setup(ls, err);
    if (e != ATF_OK) {
        atf_linsys_free(ls);
        return e;
    }
    *out = ls;
    return ATF_OK;
}

void atf_linsys_solve(atf_linsys *ls, const double *b, const double *warm, double tol,
                      double *lambda)
{
    if (!atf_sv_all_finite(b, (size_t)ls->M)) { /* a diverged iterate: NaN, nothing called */
        for (int i = 0; i < ls->M; i++)
            lambda[i] = NAN;
        return;
    }
    ls->backend->solve(ls, b, warm, tol, lambda);
}

void atf_linsys_free(atf_linsys *ls)
{
    if (!ls)
        return;
    ls->backend->free(ls);
    free(ls);
}

struct atf_sv_cg *atf_linsys_pcg_engine(const atf_linsys *ls)
{
    return ls && ls->backend == &atf_linsys_pcg ? ls->state : NULL;
}
