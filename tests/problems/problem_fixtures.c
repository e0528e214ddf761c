/* problem_fixtures.c — see problem_fixtures.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "problem_fixtures.h"

void set_block(atf_block *b, const char *name, int index, int rows, int cols,
                       atf_operator_kind kind, const char *penalty)
{
    snprintf(b->name, sizeof b->name, "%s", name);
    b->index = index;
    b->rows = rows;
    b->cols = cols;
    b->kind = kind;
    if (penalty) {
        snprintf(b->penalty_spec, sizeof b->penalty_spec, "%s", penalty);
        char err[ATF_ERRLEN];
        if (atf_penalty_parse(penalty, &b->penalty, err) != ATF_OK) { /* a broken fixture */
            fprintf(stderr, "FAIL fixture: penalty %s: %s\n", penalty, err);
            abort();
        }
    }
}

void fill_operator(atf_test_rng *rng, atf_block *b)
{
    int64_t n = (int64_t)b->rows * b->cols;
    switch (b->kind) {
    case ATF_OP_DENSE:
        b->J = atf_test_new_symmetric(rng, (size_t)(b->M * n));
        break;
    case ATF_OP_FACTORED:
        b->H = atf_test_new_symmetric(rng, (size_t)b->N * b->rows);
        b->D = atf_test_new_symmetric(rng, (size_t)b->M * b->cols);
        break;
    case ATF_OP_SPARSE:
        b->indptr = malloc((size_t)(b->M + 1) * sizeof *b->indptr);
        b->indices = malloc((size_t)b->M * 2 * sizeof *b->indices);
        b->data = atf_test_new_symmetric(rng, (size_t)b->M * 2);
        b->nnz = 0;
        b->indptr[0] = 0;
        for (int m = 0; m < b->M; m++) {
            for (int q = 0; q < (m % 3); q++) /* 0, 1 or 2 entries per row */
                b->indices[b->nnz++] = (m * 7 + q * 5) % n;
            b->indptr[m + 1] = b->nnz;
        }
        break;
    }
}

int same_bits(const void *a, const void *b, size_t bytes)
{
    if (!a || !b)
        return a == b;
    return memcmp(a, b, bytes) == 0;
}
