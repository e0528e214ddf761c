/* gram.c — the dense Gram Σ_ℓ A'_ℓA'_ℓᵀ (Hadamard form for factored blocks) that the cholesky
 * and eigen backends factorise: whole in one process, this process's tiles over processes
 * (gram_dist.c). Formed again by each backend that needs it (a factorisation overwrites it). */
#include <stdlib.h>
#include <string.h>

#include "gram.h"

/* The whole Gram in one process. */
static atf_error whole_gram(atf_solver *s, atf_dense_gram *g, char *err)
{
    int M = s->prob->M;
    if (!g->whole)
        g->whole = malloc((size_t)M * (size_t)M * sizeof *g->whole);
    if (!g->whole) {
        atf_errorf(err, "projection: out of memory for the %d × %d Gram matrix", M, M);
        return ATF_E_NOMEM;
    }
    g->a = g->whole;
    g->len = (size_t)M * (size_t)M;
    memset(g->whole, 0, g->len * sizeof *g->whole);
    for (int l = 0; l < s->nvars; l++)
        atf_block_gram(&s->vars[l].op, 1.0, g->whole);
    return ATF_OK;
}

atf_error atf_dense_gram_form(atf_solver *s, atf_dense_gram *g, char *err)
{
    g->M = s->prob->M;
    atf_error e = s->procs ? atf_sv_dgram_form(s, &g->dist, &g->a, &g->len, err)
                           : whole_gram(s, g, err);
    if (e != ATF_OK)
        return e;
    if (atf_sv_max(s, atf_sv_all_finite(g->a, g->len) ? 0.0 : 1.0) != 0.0) {
        atf_errorf(err, "projection: the Gram matrix AAᵀ has non-finite entries");
        return ATF_E_NUMERICAL;
    }
    return ATF_OK;
}

void atf_dense_gram_free(atf_dense_gram *g)
{
    free(g->whole);
    atf_sv_dgram_free(g->dist);
    memset(g, 0, sizeof *g);
}
