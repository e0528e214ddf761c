/* subset.c — a problem made of some of another problem's examples (atf_problem.h).
 *
 * Used to carve validation examples out of a training split (atf path): every per-example array
 * keeps the rows of the chosen examples, in the order given. Example i owns rows m = i·C + k of
 * r, y, f0, of a dense J and of a sparse CSR matrix, row i of every factored H and rows i·C + k of
 * every factored D, and labels[i]. Everything else (names, shapes, penalties, structures,
 * provenance) is copied as it is. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "atf_problem.h"
#include "atf_shard.h"
#include "problem_internal.h"

/* Copy `width` doubles per unit for the units (examples, or example rows when per = C) of the
 * chosen examples: out row j·per + k = in row idx[j]·per + k. */
static double *gather_rows(const double *in, const int *idx, int n, int per, size_t width)
{
    if (!in)
        return NULL;
    size_t chunk = (size_t)per * width;
    double *out = malloc((size_t)n * chunk * sizeof *out);
    if (!out)
        return NULL;
    for (int j = 0; j < n; j++)
        memcpy(out + (size_t)j * chunk, in + (size_t)idx[j] * chunk, chunk * sizeof *out);
    return out;
}

/* The CSR rows of the chosen examples (rows idx[j]·C … idx[j]·C + C − 1, in order). */
static int select_sparse(const atf_block *in, atf_block *out, const int *idx, int n)
{
    int C = in->C, M = n * C;
    out->indptr = malloc(((size_t)M + 1) * sizeof *out->indptr);
    if (!out->indptr)
        return -1;
    out->indptr[0] = 0;
    for (int j = 0; j < n; j++)
        for (int k = 0; k < C; k++) {
            int64_t m = (int64_t)idx[j] * C + k, row = (int64_t)j * C + k;
            out->indptr[row + 1] = out->indptr[row] + (in->indptr[m + 1] - in->indptr[m]);
        }
    out->nnz = out->indptr[M];
    /* malloc(0) may return NULL: one spare entry keeps "no memory" unambiguous */
    out->indices = malloc(((size_t)out->nnz + 1) * sizeof *out->indices);
    out->data = malloc(((size_t)out->nnz + 1) * sizeof *out->data);
    if (!out->indices || !out->data)
        return -1;
    for (int j = 0; j < n; j++)
        for (int k = 0; k < C; k++) {
            int64_t m = (int64_t)idx[j] * C + k, row = (int64_t)j * C + k;
            int64_t len = in->indptr[m + 1] - in->indptr[m];
            memcpy(out->indices + out->indptr[row], in->indices + in->indptr[m],
                   (size_t)len * sizeof *out->indices);
            memcpy(out->data + out->indptr[row], in->data + in->indptr[m],
                   (size_t)len * sizeof *out->data);
        }
    return 0;
}

void atf_block_free_arrays(atf_block *b)
{
    free(b->J), free(b->indptr), free(b->indices), free(b->data), free(b->H), free(b->D);
    b->J = b->data = b->H = b->D = NULL;
    b->indptr = b->indices = NULL;
}

/* One block's description and the operator rows of the chosen examples. */
static int select_block(const atf_block *in, atf_block *out, const int *idx, int n)
{
    size_t width = (size_t)in->rows * (size_t)in->cols;
    *out = *in; /* name, index, shape, penalty, structure, kind; the arrays are replaced below */
    out->N = n;
    out->M = n * in->C;
    out->J = out->data = out->H = out->D = NULL;
    out->indptr = out->indices = NULL;
    out->nnz = 0;
    switch (in->kind) {
    case ATF_OP_DENSE:
        out->J = gather_rows(in->J, idx, n, in->C, width);
        return out->J ? 0 : -1;
    case ATF_OP_SPARSE: return select_sparse(in, out, idx, n);
    case ATF_OP_FACTORED:
        out->H = gather_rows(in->H, idx, n, 1, (size_t)in->rows);
        out->D = gather_rows(in->D, idx, n, in->C, (size_t)in->cols);
        return out->H && out->D ? 0 : -1;
    }
    return -1;
}

static atf_error check_selection(const atf_problem *prob, const int *idx, int n, char *err)
{
    if (!prob || !prob->r || prob->N <= 0) {
        atf_errorf(err, "select examples: no problem (NULL or without examples)");
        return ATF_E_USAGE;
    }
    /* its indices are the whole problem's, its rows only some of them */
    atf_error e = atfp_refuse_shard(prob, "select examples", "selecting examples", err);
    if (e)
        return e;
    if (n < 1 || !idx || (int64_t)n * prob->C > INT_MAX) {
        atf_errorf(err, "select examples: %d examples of %d outputs: need 1 to %d examples", n,
                   prob->C, INT_MAX / prob->C);
        return ATF_E_USAGE;
    }
    for (int j = 0; j < n; j++)
        if (idx[j] < 0 || idx[j] >= prob->N) {
            atf_errorf(err, "select examples: index %d (entry %d) is outside [0, %d)", idx[j], j,
                       prob->N);
            return ATF_E_USAGE;
        }
    return ATF_OK;
}

int atf_problem_pick_example_arrays(const atf_problem *prob, atf_problem *p, const int *idx,
                                    int n)
{
    free(p->r); /* atf_problem_new's zeroed r */
    p->r = gather_rows(prob->r, idx, n, prob->C, 1);
    p->y = gather_rows(prob->y, idx, n, prob->C, 1);
    p->f0 = gather_rows(prob->f0, idx, n, prob->C, 1);
    if (!p->r || (prob->y && !p->y) || (prob->f0 && !p->f0))
        return -1;
    if (prob->labels) {
        p->labels = malloc((size_t)n * sizeof *p->labels);
        if (!p->labels)
            return -1;
        for (int j = 0; j < n; j++)
            p->labels[j] = prob->labels[idx[j]];
    }
    return 0;
}

atf_error atf_block_select_examples(const atf_block *b, const int *idx, int n, atf_block *out)
{
    if (n < 1 || !idx || (int64_t)n * b->C > INT_MAX)
        return ATF_E_INPUT;
    for (int j = 0; j < n; j++)
        if (idx[j] < 0 || idx[j] >= b->N)
            return ATF_E_INPUT;
    if (select_block(b, out, idx, n) != 0) {
        atf_block_free_arrays(out);
        return ATF_E_NOMEM;
    }
    return ATF_OK;
}

atf_error atf_problem_select_examples(const atf_problem *prob, const int *idx, int n,
                                      atf_problem **out, char *err)
{
    *out = NULL;
    atf_error e = check_selection(prob, idx, n, err);
    if (e)
        return e;
    atf_problem *p = atf_problem_new(n, prob->C, prob->nblocks);
    int bad = !p || atf_problem_pick_example_arrays(prob, p, idx, n);
    for (int l = 0; !bad && l < prob->nblocks; l++)
        bad = select_block(&prob->blocks[l], &p->blocks[l], idx, n);
    if (bad) {
        atf_problem_free(p);
        atf_errorf(err, "select examples: out of memory for %d of %d examples", n, prob->N);
        return ATF_E_NOMEM;
    }
    p->prov = prob->prov;
    p->fingerprint[0] = '\0'; /* other content: whoever needs it computes it */
    *out = p;
    return ATF_OK;
}
