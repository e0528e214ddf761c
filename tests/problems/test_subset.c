/* test_subset.c — atf_problem_select_examples: a problem of some of another's examples.
 *
 * A problem with a dense, a sparse (empty rows included) and a factored block, C = 3 outputs,
 * targets, initial outputs, labels, a test split and per-block penalties. For a selection in
 * a shuffled order with a repeated example, every array of the new problem must hold exactly
 * the rows of the chosen examples: r, y, f0, labels, and each block's operator, compared as the
 * densified operator (rows i·C + k of the original's dense matrix) and through apply on a
 * random B; names, indices, shapes, penalties and structures are kept, the test split is not.
 * Selecting every example in order must reproduce the original's fingerprint (the content is
 * the same), a real subset must not; bad selections are refused with one line. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf_problem.h"
#include "atf_test.h"

enum { N = 7, C = 3, M = N * C };

static void fill_dense(atf_test_rng *rng, atf_block *b)
{
    b->kind = ATF_OP_DENSE;
    b->J = atf_test_new_symmetric(rng, (size_t)b->M * b->rows * b->cols);
}

/* CSR with every third row empty and a few entries per other row. */
static void fill_sparse(atf_test_rng *rng, atf_block *b)
{
    int n = b->rows * b->cols, per = 2;
    b->kind = ATF_OP_SPARSE;
    b->indptr = malloc((size_t)(b->M + 1) * sizeof *b->indptr);
    b->indices = malloc((size_t)b->M * per * sizeof *b->indices);
    b->data = malloc((size_t)b->M * per * sizeof *b->data);
    int64_t p = 0;
    b->indptr[0] = 0;
    for (int m = 0; m < b->M; m++) {
        for (int q = 0; m % 3 != 2 && q < per; q++) {
            b->indices[p] = (int64_t)(atf_test_uniform(rng) * n) % n;
            b->data[p++] = atf_test_symmetric(rng);
        }
        b->indptr[m + 1] = p;
    }
    b->nnz = p;
}

static void fill_factored(atf_test_rng *rng, atf_block *b)
{
    b->kind = ATF_OP_FACTORED;
    b->H = atf_test_new_symmetric(rng, (size_t)b->N * b->rows);
    b->D = atf_test_new_symmetric(rng, (size_t)b->M * b->cols);
}

static void name_block(atf_block *b, const char *name, int rows, int cols, const char *pen)
{
    snprintf(b->name, sizeof b->name, "%s", name);
    b->rows = rows;
    b->cols = cols;
    b->index *= 10; /* indices need not be 0, 1, 2: they must be kept as they are */
    CHECK(atf_problem_set_penalty(&(atf_problem){.nblocks = 1, .blocks = b}, pen, NULL) == ATF_OK,
          "penalty %s", pen);
}

static atf_problem *make_split(atf_test_rng *rng, int n, int with_test)
{
    atf_problem *p = atf_problem_new(n, C, 3);
    name_block(&p->blocks[0], "dense", 2, 3, "sq");
    name_block(&p->blocks[1], "sparse", 3, 2, "pow:p=1.5,scale=0.1");
    name_block(&p->blocks[2], "factored", 4, 2, "zsq:scale=0.01");
    p->blocks[1].structure = ATF_STRUCT_DIAGONAL;
    fill_dense(rng, &p->blocks[0]);
    fill_sparse(rng, &p->blocks[1]);
    fill_factored(rng, &p->blocks[2]);
    atf_test_fill_symmetric(rng, (size_t)p->M, p->r);
    p->y = atf_test_new_symmetric(rng, (size_t)p->M);
    p->f0 = atf_test_new_symmetric(rng, (size_t)p->M);
    p->labels = malloc((size_t)n * sizeof *p->labels);
    for (int i = 0; i < n; i++)
        p->labels[i] = (i * 5 + 1) % C;
    if (with_test)
        p->test = make_split(rng, 4, 0);
    snprintf(p->prov.data_source, sizeof p->prov.data_source, "test:subset");
    return p;
}

/* Every row of the selection's arrays is the chosen example's row of the original's. */
static void check_rows(const atf_problem *p, const atf_problem *s, const int *idx, int n)
{
    CHECK(s->N == n && s->C == C && s->M == n * C && s->nblocks == p->nblocks, "sizes");
    CHECK(!s->test, "the test split is not carried");
    CHECK(!strcmp(s->prov.data_source, p->prov.data_source), "provenance copied");
    for (int j = 0; j < n; j++) {
        CHECK(s->labels[j] == p->labels[idx[j]], "labels[%d]", j);
        for (int k = 0; k < C; k++) {
            int a = j * C + k, b = idx[j] * C + k;
            CHECK(s->r[a] == p->r[b] && s->y[a] == p->y[b] && s->f0[a] == p->f0[b],
                  "r, y, f0 row %d (example %d, output %d)", a, idx[j], k);
        }
    }
}

static void check_block(const atf_block *pb, const atf_block *sb, const int *idx, int n,
                        atf_test_rng *rng)
{
    CHECK(!strcmp(pb->name, sb->name) && pb->index == sb->index && pb->rows == sb->rows &&
              pb->cols == sb->cols && pb->kind == sb->kind && pb->structure == sb->structure,
          "block %s: description", pb->name);
    CHECK(!strcmp(pb->penalty_spec, sb->penalty_spec), "block %s: penalty %s", pb->name,
          sb->penalty_spec);
    CHECK(sb->N == n && sb->C == C && sb->M == n * C, "block %s: sizes", pb->name);
    size_t w = (size_t)pb->rows * pb->cols;
    double *A = atf_block_dense(pb), *S = atf_block_dense(sb);
    double *B = atf_test_new_normal(rng, w), *yp = atf_test_alloc(M), *ys = atf_test_alloc(M);
    atf_block_apply(pb, B, 0.0, yp);
    atf_block_apply(sb, B, 0.0, ys);
    for (int j = 0; j < n; j++)
        for (int k = 0; k < C; k++) {
            size_t a = (size_t)j * C + k, b = (size_t)idx[j] * C + k;
            CHECK(!memcmp(S + a * w, A + b * w, w * sizeof *S), "block %s: row %zu of %zu",
                  pb->name, a, b);
            CHECK(rel_diff(ys[a], yp[b]) <= 1e-15, "block %s: apply row %zu", pb->name, a);
        }
    free(A), free(S), free(B), free(yp), free(ys);
}

static void test_selection(atf_test_rng *rng)
{
    atf_problem *p = make_split(rng, N, 1);
    char err[ATF_ERRLEN] = "";
    CHECK(atf_problem_validate(p, "original", err) == ATF_OK, "original: %s", err);
    const int idx[] = {5, 0, 3, 3, 6};
    const int n = (int)(sizeof idx / sizeof idx[0]);
    atf_problem *s = NULL;
    CHECK(atf_problem_select_examples(p, idx, n, &s, err) == ATF_OK, "select: %s", err);
    if (!s)
        return;
    CHECK(atf_problem_validate(s, "selection", err) == ATF_OK, "selection invalid: %s", err);
    check_rows(p, s, idx, n);
    for (int l = 0; l < p->nblocks; l++)
        check_block(&p->blocks[l], &s->blocks[l], idx, n, rng);
    CHECK(s->fingerprint[0] == '\0', "fingerprint left to be computed");
    /* all the examples in order: the same content, the same fingerprint (test splits aside) */
    int all[N];
    for (int i = 0; i < N; i++)
        all[i] = i;
    atf_problem *same = NULL, *test_copy = NULL;
    char fp[ATF_FINGERPRINT_LEN], fs[ATF_FINGERPRINT_LEN], fsub[ATF_FINGERPRINT_LEN];
    CHECK(atf_problem_select_examples(p, all, N, &same, err) == ATF_OK, "all: %s", err);
    const int tidx[] = {0, 1, 2, 3};
    CHECK(atf_problem_select_examples(p->test, tidx, 4, &test_copy, err) == ATF_OK, "test: %s",
          err);
    same->test = test_copy; /* a copy of the test split makes the whole problem again */
    atf_problem_fingerprint(p, fp);
    atf_problem_fingerprint(same, fs);
    atf_problem_fingerprint(s, fsub);
    CHECK(!strcmp(fp, fs), "every example with a copied test split: fingerprint %s vs %s", fs,
          fp);
    CHECK(strcmp(fp, fsub) != 0, "a subset has another fingerprint");
    atf_problem_free(same);
    atf_problem_free(s);
    atf_problem_free(p);
}

static void test_refusals(atf_test_rng *rng)
{
    atf_problem *p = make_split(rng, N, 0), *s = (atf_problem *)p;
    char err[ATF_ERRLEN] = "";
    const int out_of_range[] = {1, N}, negative[] = {-1};
    CHECK(atf_problem_select_examples(p, out_of_range, 2, &s, err) == ATF_E_USAGE && !s &&
              strstr(err, "index 7 (entry 1)") && !strchr(err, '\n'),
          "index N: '%s'", err);
    CHECK(atf_problem_select_examples(p, negative, 1, &s, err) == ATF_E_USAGE && !s,
          "index -1: '%s'", err);
    CHECK(atf_problem_select_examples(p, negative, 0, &s, err) == ATF_E_USAGE && !s &&
              strstr(err, "0 examples"),
          "no examples: '%s'", err);
    CHECK(atf_problem_select_examples(NULL, negative, 1, &s, err) == ATF_E_USAGE && !s,
          "no problem: '%s'", err);
    atf_problem_free(p);
}

int main(void)
{
    atf_test_rng rng;
    atf_test_rng_seed(&rng, 20240611);
    test_selection(&rng);
    test_refusals(&rng);
    return atf_test_finish("test_subset");
}
