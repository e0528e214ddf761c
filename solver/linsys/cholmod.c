/* cholmod.c — the backend `cholmod`: all-sparse operators in one process. CHOLMOD factors
 * A'A'ᵀ + βI straight from the sparse A' (A'A'ᵀ is never formed); a tiny β keeps the
 * factorisation defined, iterative refinement in the projection removes its bias. A singular
 * A'A'ᵀ — a factorisation that is not positive definite, a pivot within CHOLMOD_RCOND_MIN of β,
 * or (projection.c) refinement that cannot reproduce r — leaves the problem to the dense
 * backends. */
#include <cholmod.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gram.h"
#include "linsys.h"

/* β relative to the largest diagonal entry of A'A'ᵀ, and the smallest accepted
 * (min diag L / max diag L)²: a pivot within a factor 1000 of β means A'A'ᵀ is singular to
 * working precision. */
#define CHOLMOD_BETA_REL 1e-13
#define CHOLMOD_RCOND_MIN 1e-10
/* Refinement passes per projection in a loop: they remove β's bias. */
#define CHOLMOD_REFINE 2

typedef struct {
    cholmod_common cc;
    int cc_started;
    cholmod_sparse *A;
    cholmod_factor *F;
    cholmod_dense *rhs, *sol, *ws_y, *ws_e;
    double beta;
} cholmod_state;

static void release(cholmod_state *p)
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

/* A' (M × n, nnz entries) to CHOLMOD as triplets (duplicate CSR entries are summed by the
 * conversion); the largest diagonal entry of A'A'ᵀ into *maxdiag. NULL when out of memory. */
static cholmod_sparse *sparse_rows(atf_solver *s, cholmod_state *p, int64_t nnz,
                                   double *maxdiag)
{
    int M = s->prob->M;
    cholmod_triplet *T = cholmod_l_allocate_triplet((size_t)M, s->n, (size_t)(nnz > 0 ? nnz : 1),
                                                    0, CHOLMOD_REAL, &p->cc);
    if (!T)
        return NULL;
    SuiteSparse_long *ti = T->i, *tj = T->j;
    double *tx = T->x;
    size_t pos = 0;
    *maxdiag = 0.0;
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
        *maxdiag = fmax(*maxdiag, diag);
    }
    T->nnz = pos;
    cholmod_sparse *A = cholmod_l_triplet_to_sparse(T, pos, &p->cc);
    cholmod_l_free_triplet(&T, &p->cc);
    return A;
}

static atf_error backend_setup(atf_linsys *ls, char *err)
{
    atf_solver *s = ls->s;
    int M = ls->M;
    cholmod_state *p = calloc(1, sizeof *p);
    if (!p) {
        atf_errorf(err, "projection: out of memory");
        return ATF_E_NOMEM;
    }
    ls->state = p;
    cholmod_l_start(&p->cc);
    p->cc_started = 1;
    p->cc.print = 0;
    double maxdiag = 0.0;
    int64_t nnz = 0;
    for (int l = 0; l < s->nvars; l++)
        nnz += s->vars[l].op.nnz;
    p->A = sparse_rows(s, p, nnz, &maxdiag);
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
        release(p); /* not positive definite: the dense backends decide */
        return ATF_OK;
    }
    if (cholmod_l_rcond(p->F, &p->cc) < CHOLMOD_RCOND_MIN) {
        release(p); /* singular up to β: the dense backends decide */
        return ATF_OK;
    }
    p->rhs = cholmod_l_allocate_dense((size_t)M, 1, (size_t)M, CHOLMOD_REAL, &p->cc);
    if (!p->rhs)
        goto nomem;
    ls->rank = M;
    ls->feas_tol = ATF_LINSYS_FULL_RANK_CHECK;
    ls->refine = CHOLMOD_REFINE;
    ls->usable = 1;
    return ATF_OK;
nomem:
    release(p);
    atf_errorf(err, "projection: CHOLMOD ran out of memory factorising AAᵀ (M = %d, nnz = %lld)",
               M, (long long)nnz);
    return ATF_E_NOMEM;
}

static void backend_solve(atf_linsys *ls, const double *b, const double *warm, double tol,
                          double *lambda)
{
    (void)warm, (void)tol; /* the projection refines */
    cholmod_state *p = ls->state;
    int M = ls->M;
    memcpy(p->rhs->x, b, (size_t)M * sizeof *lambda);
    if (cholmod_l_solve2(CHOLMOD_A, p->F, p->rhs, NULL, &p->sol, NULL, &p->ws_y, &p->ws_e,
                         &p->cc))
        memcpy(lambda, p->sol->x, (size_t)M * sizeof *lambda);
    else /* only on allocation failure inside CHOLMOD; leave v unchanged */
        memset(lambda, 0, (size_t)M * sizeof *lambda);
}

static void backend_free(atf_linsys *ls)
{
    if (ls->state)
        release(ls->state);
    free(ls->state);
    ls->state = NULL;
}

const atf_linsys_backend atf_linsys_cholmod = {"cholmod", "CHOLMOD", 0,
                                               backend_setup, backend_solve, backend_free};
