/* solver_fixtures.c — small problems and helpers shared by the tests of the penalized methods
 * (test_penalized.c, test_newton.c). */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solver_fixtures.h"

/* Factored blocks of the given shapes, standard normal data; row m of D scaled by 10^e_m with
 * e_m ∈ {−spread … spread} (the equilibration must then matter), r likewise. A penalized fit
 * with rows 10^±s apart has a condition number ~10^4s: first-order methods need s ≤ 1. */
atf_problem *factored(uint64_t seed, int N, int C, int nb, const int (*shapes)[2],
                      const char *penalty, int spread)
{
    atf_test_rng rng;
    atf_test_rng_seed(&rng, seed);
    atf_problem *p = atf_problem_new(N, C, nb);
    double *rowscale = atf_test_alloc((size_t)p->M);
    for (int m = 0; m < p->M; m++)
        rowscale[m] = pow(10.0, (double)(atf_test_u64(&rng) % (uint64_t)(2 * spread + 1)) - spread);
    for (int m = 0; m < p->M; m++)
        p->r[m] = atf_test_normal(&rng) * rowscale[m];
    for (int l = 0; l < nb; l++) {
        atf_block *b = &p->blocks[l];
        snprintf(b->name, sizeof b->name, "W%d", l + 1);
        b->rows = shapes[l][0], b->cols = shapes[l][1];
        b->kind = ATF_OP_FACTORED;
        b->H = atf_test_new_normal(&rng, (size_t)N * (size_t)b->rows);
        b->D = atf_test_new_normal(&rng, (size_t)p->M * (size_t)b->cols);
        for (int m = 0; m < p->M; m++)
            cblas_dscal(b->cols, rowscale[m], b->D + (size_t)m * (size_t)b->cols, 1);
    }
    free(rowscale);
    char err[ATF_ERRLEN];
    if (atf_problem_set_penalty(p, penalty, err) != ATF_OK) {
        fprintf(stderr, "%s\n", err);
        exit(2);
    }
    return p;
}

/* Turn block l into a dense (or, with sparse, CSR with every other entry dropped) block. */
void make_dense(atf_problem *p, int l, int sparse)
{
    atf_block *b = &p->blocks[l];
    double *J = atf_block_dense(b);
    size_t len = (size_t)b->rows * (size_t)b->cols;
    free(b->H), free(b->D);
    b->H = b->D = NULL;
    if (!sparse) {
        b->kind = ATF_OP_DENSE;
        b->J = J;
        return;
    }
    b->kind = ATF_OP_SPARSE;
    b->indptr = calloc((size_t)p->M + 1, sizeof *b->indptr);
    b->indices = calloc((size_t)p->M * len, sizeof *b->indices);
    b->data = atf_test_alloc((size_t)p->M * len);
    int64_t nnz = 0;
    for (int m = 0; m < p->M; m++) {
        for (size_t j = 0; j < len; j++)
            if ((j + (size_t)m) % 2 == 0) {
                b->indices[nnz] = (int64_t)j;
                b->data[nnz++] = J[(size_t)m * len + j];
            }
        b->indptr[m + 1] = nnz;
    }
    b->nnz = nnz;
    free(J);
}

void add_labels(atf_problem *p, uint64_t seed, int with_f0)
{
    atf_test_rng rng;
    atf_test_rng_seed(&rng, seed);
    p->labels = malloc((size_t)p->N * sizeof *p->labels);
    for (int i = 0; i < p->N; i++)
        p->labels[i] = (int)(atf_test_u64(&rng) % (uint64_t)p->C);
    if (with_f0)
        p->f0 = atf_test_new_normal(&rng, (size_t)p->M);
}

/* The whole A [M × n] (problem units, blocks in order) and B stacked from a result. */
double *dense_A(const atf_problem *p, int *n_out)
{
    int n = (int)atf_problem_nvars(p);
    double *A = atf_test_alloc((size_t)p->M * (size_t)n);
    int off = 0;
    for (int l = 0; l < p->nblocks; l++) {
        const atf_block *b = &p->blocks[l];
        int len = b->rows * b->cols;
        double *J = atf_block_dense(b);
        for (int m = 0; m < p->M; m++)
            memcpy(A + (size_t)m * (size_t)n + (size_t)off, J + (size_t)m * (size_t)len,
                   (size_t)len * sizeof *A);
        free(J);
        off += len;
    }
    *n_out = n;
    return A;
}

double *stack_result(const atf_result *res, int n)
{
    double *x = atf_test_alloc((size_t)n);
    int off = 0;
    for (int l = 0; l < res->nblocks; l++) {
        int len = res->blocks[l].rows * res->blocks[l].cols;
        memcpy(x + off, res->blocks[l].B, (size_t)len * sizeof *x);
        off += len;
    }
    return x;
}

double rel_dist(const double *a, const double *b, size_t n)
{
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++)
        num += (a[i] - b[i]) * (a[i] - b[i]), den += b[i] * b[i];
    return sqrt(num / den);
}

atf_settings tight(double eps)
{
    atf_settings s = atf_settings_default();
    s.eps_rel = eps;
    s.eps_abs = 1e-14;
    s.max_iter = 20000;
    return s;
}


int keep_state(void *ctx, const atf_checkpoint *state)
{
    kept_states *k = ctx;
    if (k->count == k->fail_at)
        return 1;
    if (k->count == k->stop_at)
        *k->stop = 1;
    if (k->count < MAX_STATES) {
        atf_checkpoint *c = &k->states[k->count];
        *c = *state;
        c->data = malloc((size_t)state->len * sizeof *c->data);
        if (c->data)
            memcpy(c->data, state->data, (size_t)state->len * sizeof *c->data);
    }
    k->count++;
    return 0;
}

void kept_states_free(kept_states *k)
{
    for (int i = 0; i < k->count && i < MAX_STATES; i++)
        free(k->states[i].data);
    k->count = 0;
}

atf_result *solve_with_hooks(const atf_problem *p, const atf_settings *set, const atf_hooks *hooks,
                         atf_error *e, char *err)
{
    atf_result *res = NULL;
    *e = atf_solve(p, set, hooks, &res, err);
    return res;
}

int same_result(const atf_result *a, const atf_result *b, int n)
{
    double *ba = stack_result(a, n), *bb = stack_result(b, n);
    int same = ba && bb && memcmp(ba, bb, (size_t)n * sizeof *ba) == 0 &&
               a->info.status == b->info.status && a->info.iterations == b->info.iterations &&
               a->info.inner_iterations == b->info.inner_iterations &&
               a->info.fallback_steps == b->info.fallback_steps &&
               a->info.operator_passes == b->info.operator_passes &&
               memcmp(&a->info.objective, &b->info.objective, sizeof(double)) == 0 &&
               memcmp(&a->info.pg_residual, &b->info.pg_residual, sizeof(double)) == 0 &&
               memcmp(&a->info.stationarity, &b->info.stationarity, sizeof(double)) == 0;
    free(ba), free(bb);
    return same;
}
