/* test_roundtrip.c — problem and result files written and read back bit-exactly, factor
 * recovery, validation of in-memory objects and the atomic-write guarantee.
 *
 * Usage: test_roundtrip DIR (a scratch directory; files are created and removed there). */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atf_problem.h"
#include "atf_result.h"
#include "atf_test.h"
#include "problem_fixtures.h"

/* ---------------------------------------------------------------- building problems */

/* Three blocks (factored, dense, sparse) and, with Nt > 0, a test split; the numbers are drawn
 * from the test generator seeded with `seed`. */
static atf_problem *make_problem(uint64_t seed, int N, int C, int Nt)
{
    atf_test_rng rng;
    atf_test_rng_seed(&rng, seed);
    atf_problem *p = atf_problem_new(N, C, 3);
    for (int m = 0; m < p->M; m++)
        p->r[m] = atf_test_symmetric(&rng);
    p->y = atf_test_new_symmetric(&rng, (size_t)p->M);
    p->f0 = atf_test_new_symmetric(&rng, (size_t)p->M);
    p->labels = malloc((size_t)N * sizeof *p->labels);
    for (int i = 0; i < N; i++)
        p->labels[i] = (i * 37) % 10 - 3;
    set_block(&p->blocks[0], "W1", 0, 4, 3, ATF_OP_FACTORED, "sq+abs");
    set_block(&p->blocks[1], "dense_block", 5, 2, 3, ATF_OP_DENSE, "pow:p=1.5,scale=0.25");
    set_block(&p->blocks[2], "sp", 9, 3, 3, ATF_OP_SPARSE, "nuclear");
    p->blocks[2].structure = ATF_STRUCT_DIAGONAL;
    for (int l = 0; l < 3; l++)
        fill_operator(&rng, &p->blocks[l]);
    if (Nt > 0) {
        atf_problem *t = atf_problem_new(Nt, C, 3);
        t->y = atf_test_new_symmetric(&rng, (size_t)t->M);
        t->f0 = atf_test_new_symmetric(&rng, (size_t)t->M);
        for (int m = 0; m < t->M; m++)
            t->r[m] = t->y[m] - t->f0[m];
        t->labels = malloc((size_t)Nt * sizeof *t->labels);
        for (int i = 0; i < Nt; i++)
            t->labels[i] = i % 2;
        for (int l = 0; l < 3; l++) {
            const atf_block *b = &p->blocks[l];
            /* the reader gives test blocks the training block's penalty and structure */
            set_block(&t->blocks[l], b->name, b->index, b->rows, b->cols, b->kind,
                      b->penalty_spec);
            t->blocks[l].structure = b->structure;
            fill_operator(&rng, &t->blocks[l]);
        }
        p->test = t;
    }
    return p;
}

/* ---------------------------------------------------------------- comparisons */

static void compare_operator(const char *ctx, const atf_block *a, const atf_block *b)
{
    size_t n = (size_t)a->rows * a->cols, d = sizeof(double);
    CHECK(a->kind == b->kind && a->rows == b->rows && a->cols == b->cols, "%s: kind/shape", ctx);
    CHECK(a->N == b->N && a->C == b->C && a->M == b->M, "%s: sizes", ctx);
    if (a->kind != b->kind)
        return;
    switch (a->kind) {
    case ATF_OP_DENSE:
        CHECK(same_bits(a->J, b->J, (size_t)a->M * n * d), "%s: J differs", ctx);
        break;
    case ATF_OP_FACTORED:
        CHECK(same_bits(a->H, b->H, (size_t)a->N * a->rows * d), "%s: H differs", ctx);
        CHECK(same_bits(a->D, b->D, (size_t)a->M * a->cols * d), "%s: D differs", ctx);
        break;
    case ATF_OP_SPARSE:
        CHECK(a->nnz == b->nnz, "%s: nnz", ctx);
        if (a->nnz != b->nnz)
            return;
        CHECK(same_bits(a->indptr, b->indptr, (size_t)(a->M + 1) * sizeof(int64_t)),
              "%s: indptr differs", ctx);
        CHECK(!a->nnz || same_bits(a->indices, b->indices, (size_t)a->nnz * sizeof(int64_t)),
              "%s: indices differ", ctx);
        CHECK(!a->nnz || same_bits(a->data, b->data, (size_t)a->nnz * d), "%s: data differs",
              ctx);
        break;
    }
}

static void compare_split(const char *ctx, const atf_problem *a, const atf_problem *b)
{
    CHECK(a->N == b->N && a->C == b->C && a->M == b->M, "%s: sizes", ctx);
    CHECK(a->nblocks == b->nblocks, "%s: nblocks", ctx);
    if (a->N != b->N || a->C != b->C || a->nblocks != b->nblocks)
        return;
    size_t d = sizeof(double);
    CHECK(same_bits(a->r, b->r, (size_t)a->M * d), "%s: r differs", ctx);
    CHECK(same_bits(a->y, b->y, (size_t)a->M * d), "%s: y differs", ctx);
    CHECK(same_bits(a->f0, b->f0, (size_t)a->M * d), "%s: f0 differs", ctx);
    CHECK(same_bits(a->labels, b->labels, (size_t)a->N * sizeof(int)), "%s: labels", ctx);
    for (int l = 0; l < a->nblocks; l++) {
        const atf_block *x = &a->blocks[l], *y = &b->blocks[l];
        char bctx[128];
        snprintf(bctx, sizeof bctx, "%s block %s", ctx, x->name);
        CHECK(strcmp(x->name, y->name) == 0, "%s: name %s", bctx, y->name);
        CHECK(x->index == y->index, "%s: index", bctx);
        CHECK(x->structure == y->structure, "%s: structure", bctx);
        CHECK(strcmp(x->penalty_spec, y->penalty_spec) == 0, "%s: penalty '%s'", bctx,
              y->penalty_spec);
        compare_operator(bctx, x, y);
    }
}

/* ---------------------------------------------------------------- tests */

static void test_problem_roundtrip(const char *dir, int C)
{
    char path[4096], err[ATF_ERRLEN];
    snprintf(path, sizeof path, "%s/roundtrip_C%d.h5", dir, C);
    atf_problem *p = make_problem((uint64_t)C, 7, C, 4);
    atf_error e = atf_problem_validate(p, "built", err);
    CHECK(e == ATF_OK, "validate built problem: %s", err);
    e = atf_problem_write(path, p, err);
    CHECK(e == ATF_OK, "write: %s", err);
    atf_problem *q = NULL;
    e = atf_problem_read(path, &q, err);
    CHECK(e == ATF_OK && q, "read back: %s", err);
    if (q) {
        compare_split("problem", p, q);
        CHECK(q->test != NULL, "test split lost");
        if (q->test)
            compare_split("test split", p->test, q->test);
        CHECK(atf_problem_nvars(q) == 12 + 6 + 9, "nvars %lld", (long long)atf_problem_nvars(q));
    }
    atf_problem_free(q);
    atf_problem_free(p);
    unlink(path);
}

static void test_validation(void)
{
    char err[ATF_ERRLEN];
    atf_problem *p = make_problem(10, 5, 2, 0);
    /* Each mutation must be refused with a message naming the item. */
    p->blocks[0].H[7] = NAN;
    CHECK(atf_problem_validate(p, "mem", err) == ATF_E_INPUT && strstr(err, "/blocks/W1/H") &&
              strstr(err, "[1, 3]"), "NaN in H: %s", err);
    p->blocks[0].H[7] = 0.5;
    p->blocks[2].indptr[3] = 100;
    CHECK(atf_problem_validate(p, "mem", err) == ATF_E_INPUT && strstr(err, "J_indptr"),
          "CSR: %s", err);
    p->blocks[2].indptr[3] = 3; /* rows hold 0, 1, 2, 0, 1, 2, ... entries */
    CHECK(atf_problem_validate(p, "mem", err) == ATF_OK, "restored CSR refused: %s", err);
    p->blocks[2].indices[1] = 9;
    CHECK(atf_problem_validate(p, "mem", err) == ATF_E_INPUT && strstr(err, "J_indices") &&
              strstr(err, "value 9 at [1]"), "column out of range: %s", err);
    p->blocks[2].indices[1] = 8;
    p->blocks[2].nnz--;
    CHECK(atf_problem_validate(p, "mem", err) == ATF_E_INPUT && strstr(err, "nnz"),
          "indptr end vs nnz: %s", err);
    p->blocks[2].nnz++;
    atf_problem_free(p);

    p = make_problem(11, 5, 2, 0);
    snprintf(p->blocks[1].penalty_spec, ATF_PENALTY_SPECLEN, "pow:p=-1");
    CHECK(atf_problem_validate(p, "mem", err) == ATF_E_INPUT && strstr(err, "penalty"),
          "bad penalty: %s", err);
    snprintf(p->blocks[1].penalty_spec, ATF_PENALTY_SPECLEN, "sq");
    p->blocks[1].index = 0;
    CHECK(atf_problem_validate(p, "mem", err) == ATF_E_INPUT && strstr(err, "index"),
          "index order: %s", err);
    p->blocks[1].index = 5;
    snprintf(p->blocks[1].name, ATF_NAMELEN, "W1");
    CHECK(atf_problem_validate(p, "mem", err) == ATF_E_INPUT && strstr(err, "duplicate"),
          "duplicate name: %s", err);
    snprintf(p->blocks[1].name, ATF_NAMELEN, "a/b");
    CHECK(atf_problem_validate(p, "mem", err) == ATF_E_INPUT, "slash in name: %s", err);
    atf_problem_free(p);

    /* overrides */
    p = make_problem(12, 3, 1, 0);
    CHECK(atf_problem_set_penalty(p, "zsq:scale=2", err) == ATF_OK, "set_penalty: %s", err);
    for (int l = 0; l < p->nblocks; l++)
        CHECK(strcmp(p->blocks[l].penalty_spec, "zsq:scale=2") == 0 &&
                  p->blocks[l].penalty.w1.family == ATF_FAMILY_ZSQ &&
                  p->blocks[l].penalty.w1.scale == 2.0, "penalty override of block %d", l);
    CHECK(atf_problem_set_penalty(p, "nonsense", err) != ATF_OK, "bad override accepted");
    CHECK(strcmp(p->blocks[0].penalty_spec, "zsq:scale=2") == 0, "failed override changed spec");
    atf_problem_set_structure(p, ATF_STRUCT_DIAGONAL);
    for (int l = 0; l < p->nblocks; l++)
        CHECK(p->blocks[l].structure == ATF_STRUCT_DIAGONAL, "structure override");
    atf_problem_set_structure(p, (atf_structure)-1);
    CHECK(p->blocks[0].structure == ATF_STRUCT_DIAGONAL, "structure -1 must keep");
    atf_problem_free(p);
}

static void test_atomic(const char *dir)
{
    char path[4096], err[ATF_ERRLEN];
    snprintf(path, sizeof path, "%s/atomic.h5", dir);
    atf_problem *p = make_problem(13, 4, 1, 0);
    CHECK(atf_problem_write(path, p, err) == ATF_OK, "write: %s", err);
    struct stat before, after;
    stat(path, &before);

    /* An invalid problem is refused before anything is created: the old file stays. */
    p->r[0] = INFINITY;
    CHECK(atf_problem_write(path, p, err) == ATF_E_INPUT && strstr(err, "/r"), "inf r: %s", err);
    p->r[0] = 0.0;
    stat(path, &after);
    CHECK(before.st_ino == after.st_ino && before.st_size == after.st_size,
          "refused write touched the file");

    /* rename onto a directory fails after the HDF5 file was written: no temporary remains. */
    atf_error e_dir;
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/occupied", dir);
    mkdir(sub, 0755);
    snprintf(path, sizeof path, "%.4000s/inner", sub);
    unlink(path); /* a leftover of an interrupted run */
    CHECK(mkdir(path, 0755) == 0, "cannot create the directory %s", path);
    e_dir = atf_problem_write(path, p, err);
    CHECK(e_dir == ATF_E_IO && strstr(err, "inner"),
          "write onto a directory: %d %s", (int)e_dir, err);
    CHECK(atf_test_count_temporaries(sub) == 0, "temporary file left behind in %s", sub);
    rmdir(path);
    rmdir(sub);

    /* A missing directory: ATF_E_IO naming the path. */
    snprintf(path, sizeof path, "%s/no/such/dir/x.h5", dir);
    CHECK(atf_problem_write(path, p, err) == ATF_E_IO && strstr(err, "no/such"), "%s", err);
    CHECK(atf_test_count_temporaries(dir) == 0, "temporary file left behind in %s", dir);
    atf_problem_free(p);
    snprintf(path, sizeof path, "%s/atomic.h5", dir);
    unlink(path);
}

/* ---------------------------------------------------------------- results */

/* ‖B − U diag(d) Vᵀ‖ / ‖B‖ and the eq. 15 identities per factor. */
static void check_spectral(const atf_result_block *rb, const atf_penalty *pen)
{
    int m = rb->rows, n = rb->cols, k = rb->k;
    CHECK(k == (m < n ? m : n) && rb->U && rb->V, "%s: spectral layout", rb->name);
    if (!rb->U || !rb->V)
        return;
    double num = 0, den = 0;
    for (int a = 0; a < m; a++)
        for (int c = 0; c < n; c++) {
            double s = 0;
            for (int j = 0; j < k; j++)
                s += rb->U[a * k + j] * rb->d[j] * rb->V[c * k + j];
            num += (s - rb->B[a * n + c]) * (s - rb->B[a * n + c]);
            den += rb->B[a * n + c] * rb->B[a * n + c];
        }
    CHECK(sqrt(num) <= 1e-12 * sqrt(den), "%s: U d V^T != B (%g)", rb->name, sqrt(num / den));
    for (int j = 0; j < k; j++) {
        CHECK(j == 0 || rb->d[j] <= rb->d[j - 1], "%s: d not descending", rb->name);
        double lhs = atf_omega_value(&pen->w1, rb->s1[j]) + atf_omega_value(&pen->w2, rb->s2[j]) +
                     rb->sigma[j] * rb->sigma[j];
        double rhs = atf_penalty_value(pen, rb->d[j], NULL);
        CHECK(fabs(lhs - rhs) <= 1e-9 * fmax(1, rhs), "%s: eq. 15 at d=%g: %g vs %g", rb->name,
              rb->d[j], lhs, rhs);
        CHECK(fabs(rb->s1[j] * rb->sigma[j] * rb->s2[j] - rb->d[j]) <= 1e-9 * fmax(1, rb->d[j]),
              "%s: s1 sigma s2 != d", rb->name);
    }
}

static void compare_results(const atf_result *a, const atf_result *b)
{
    CHECK(a->info.status == b->info.status && !strcmp(a->info.method, b->info.method) &&
              a->structure == b->structure && a->info.iterations == b->info.iterations,
          "result header differs");
    CHECK(same_bits(&a->info.objective, &b->info.objective, sizeof(double)) &&
              same_bits(&a->info.primal_residual, &b->info.primal_residual, sizeof(double)) &&
              same_bits(&a->info.dual_residual, &b->info.dual_residual, sizeof(double)) &&
              same_bits(&a->info.constraint_residual, &b->info.constraint_residual, sizeof(double)) &&
              same_bits(&a->info.stationarity, &b->info.stationarity, sizeof(double)) &&
              same_bits(&a->info.ls_residual, &b->info.ls_residual, sizeof(double)) &&
              same_bits(&a->info.solve_seconds, &b->info.solve_seconds, sizeof(double)) &&
              same_bits(&a->info.setup_seconds, &b->info.setup_seconds, sizeof(double)) &&
              same_bits(&a->info.projection_seconds, &b->info.projection_seconds, sizeof(double)) &&
              same_bits(&a->info.prox_seconds, &b->info.prox_seconds, sizeof(double)) &&
              same_bits(&a->info.other_seconds, &b->info.other_seconds, sizeof(double)),
          "result metrics differ");
    CHECK(a->nblocks == b->nblocks, "nblocks");
    for (int l = 0; l < a->nblocks && l < b->nblocks; l++) {
        const atf_result_block *x = &a->blocks[l], *y = &b->blocks[l];
        size_t d = sizeof(double), n = (size_t)x->rows * x->cols, k = (size_t)x->k;
        CHECK(strcmp(x->name, y->name) == 0 && x->rows == y->rows && x->cols == y->cols &&
                  x->k == y->k && x->layout == y->layout &&
                  strcmp(x->penalty_spec, y->penalty_spec) == 0, "block %d header", l);
        if (x->k != y->k || x->rows != y->rows || x->cols != y->cols)
            continue;
        CHECK(same_bits(x->B, y->B, n * d) && same_bits(x->d, y->d, k * d) &&
                  same_bits(x->s1, y->s1, k * d) && same_bits(x->sigma, y->sigma, k * d) &&
                  same_bits(x->s2, y->s2, k * d), "block %s arrays differ", x->name);
        CHECK(same_bits(x->U, y->U, x->rows * k * d) && same_bits(x->V, y->V, x->cols * k * d),
              "block %s U/V differ", x->name);
    }
}

static void test_results(const char *dir)
{
    char path[4096], err[ATF_ERRLEN];
    snprintf(path, sizeof path, "%s/result.h5", dir);
    atf_problem *p = make_problem(14, 5, 2, 0);
    atf_result *res = atf_result_alloc(p);
    CHECK(res && res->nblocks == 3, "alloc");
    CHECK(res->blocks[2].layout == ATF_FACTORS_ENTRYWISE && res->blocks[2].k == 9,
          "diagonal block alloc layout");
    atf_test_rng rng;
    atf_test_rng_seed(&rng, 15);
    for (int l = 0; l < res->nblocks; l++)
        for (int j = 0; j < res->blocks[l].rows * res->blocks[l].cols; j++)
            res->blocks[l].B[j] = 3 * atf_test_symmetric(&rng);
    res->info.status = ATF_STATUS_MAX_ITERATIONS;
    snprintf(res->info.method, sizeof res->info.method, "lp");
    res->info.iterations = 123;
    res->info.objective = 1.25;
    res->info.primal_residual = 1e-9;
    res->info.dual_residual = 2e-9;
    res->info.constraint_residual = 3e-15;
    res->info.stationarity = 4e-7;
    res->info.solve_seconds = 0.5; /* ls_residual stays NaN: "not computed" must round-trip */
    CHECK(atf_result_factors(res, p, err) == ATF_OK, "factors: %s", err);
    check_spectral(&res->blocks[0], &p->blocks[0].penalty);
    check_spectral(&res->blocks[1], &p->blocks[1].penalty);
    const atf_result_block *dg = &res->blocks[2];
    CHECK(dg->layout == ATF_FACTORS_ENTRYWISE && !dg->U && !dg->V, "entrywise layout");
    for (int j = 0; j < dg->k; j++)
        CHECK(dg->d[j] == fabs(dg->B[j]), "entrywise d[%d]", j);

    CHECK(atf_result_write(path, res, err) == ATF_OK, "write result: %s", err);
    atf_result *back = NULL;
    CHECK(atf_result_read(path, &back, err) == ATF_OK, "read result: %s", err);
    if (back) {
        compare_results(res, back);
        CHECK(isnan(back->info.ls_residual), "NaN metric lost");
        CHECK(atf_result_check(back, p, "back", NULL, err) == ATF_OK, "check: %s", err);
    }
    atf_result_free(back);

    /* structure full: one vector block, same d = ‖β‖ in every block */
    res->structure = ATF_GLOBAL_FULL;
    CHECK(atf_result_factors(res, p, err) == ATF_E_USAGE, "full with mixed penalties: %s", err);
    atf_problem_set_penalty(p, "sq", err);
    CHECK(atf_result_factors(res, p, err) == ATF_OK, "full factors: %s", err);
    double ss = 0;
    for (int l = 0; l < res->nblocks; l++)
        for (int j = 0; j < res->blocks[l].rows * res->blocks[l].cols; j++)
            ss += res->blocks[l].B[j] * res->blocks[l].B[j];
    for (int l = 0; l < res->nblocks; l++)
        CHECK(res->blocks[l].k == 1 && res->blocks[l].layout == ATF_FACTORS_VECTOR &&
                  fabs(res->blocks[l].d[0] - sqrt(ss)) <= 1e-12 * sqrt(ss), "vector block %d", l);
    CHECK(atf_result_write(path, res, err) == ATF_OK, "write vector result: %s", err);
    CHECK(atf_result_read(path, &back, err) == ATF_OK, "read vector result: %s", err);
    if (back)
        compare_results(res, back);
    atf_result_free(back);

    /* mismatches */
    snprintf(res->blocks[1].name, ATF_NAMELEN, "other");
    CHECK(atf_result_check(res, p, "res.h5", "p.h5", err) == ATF_E_INPUT &&
              strstr(err, "other") && strstr(err, "dense_block") && strstr(err, "res.h5: ") &&
              strstr(err, "p.h5's"), "name mismatch: %s", err);
    CHECK(atf_result_factors(res, p, err) == ATF_E_INPUT, "factors on a mismatch");
    snprintf(res->blocks[1].name, ATF_NAMELEN, "dense_block");
    res->blocks[1].B[0] = NAN;
    CHECK(atf_result_factors(res, p, err) == ATF_E_NUMERICAL && strstr(err, "dense_block"),
          "NaN B: %s", err);
    CHECK(atf_result_write(path, res, err) == ATF_E_INPUT && strstr(err, "/blocks/dense_block/B"),
          "writing NaN B: %s", err);

    atf_result_free(res);
    atf_problem_free(p);
    unlink(path);

    CHECK(strcmp(atf_status_name(ATF_STATUS_NUMERICAL_ERROR), "numerical_error") == 0, "name");
    atf_status s;
    CHECK(atf_status_parse("infeasible", &s) == ATF_OK && s == ATF_STATUS_INFEASIBLE, "parse");
    CHECK(atf_status_parse("done", &s) == ATF_E_INPUT, "parse bad");
    /* structures: names round-trip through their parser, nothing else parses (the methods'
     * names are the solver's: tests/solver/test_solver_api.c) */
    for (int g = ATF_GLOBAL_LAYER; g <= ATF_GLOBAL_FULL; g++) {
        atf_global_structure back_g = ATF_GLOBAL_LAYER;
        CHECK(atf_structure_parse(atf_structure_name((atf_global_structure)g), &back_g) ==
                      ATF_OK && back_g == (atf_global_structure)g, "structure %d round trip", g);
    }
    atf_global_structure bad_g;
    CHECK(atf_structure_parse("layers", &bad_g) == ATF_E_INPUT &&
              !strcmp(atf_structure_name((atf_global_structure)-1), "unknown"),
          "structure parser accepts bad text");
}

/* ---------------------------------------------------------------- fingerprints */

/* Fingerprint of p after `change` was applied to a fresh copy of make_problem(31, ...). */
static int fingerprint_changes(void (*change)(atf_problem *), const char *fp0, const char *what)
{
    atf_problem *p = make_problem(31, 5, 2, 3);
    change(p);
    char fp[ATF_FINGERPRINT_LEN];
    CHECK(atf_problem_fingerprint(p, fp) == ATF_OK, "%s: fingerprint", what);
    atf_problem_free(p);
    return strcmp(fp, fp0) != 0;
}

static void nudge_r(atf_problem *p) { p->r[3] = nextafter(p->r[3], 1e300); }
static void nudge_H(atf_problem *p) { p->blocks[0].H[1] = nextafter(p->blocks[0].H[1], -1e300); }
static void nudge_D(atf_problem *p) { p->blocks[0].D[2] *= 2; }
static void nudge_J(atf_problem *p) { p->blocks[1].J[4] = -p->blocks[1].J[4]; }
static void nudge_sparse(atf_problem *p) { p->blocks[2].data[0] += 1; }
static void move_sparse(atf_problem *p)
{
    atf_block *b = &p->blocks[2];
    b->indices[0] = (b->indices[0] + 1) % (b->rows * b->cols);
}
static void rename_block(atf_problem *p) { snprintf(p->blocks[1].name, ATF_NAMELEN, "dense_b"); }
static void restructure(atf_problem *p) { p->blocks[0].structure = ATF_STRUCT_DIAGONAL; }
static void nudge_test_y(atf_problem *p) { p->test->y[0] += 0.5; }
static void nudge_test_f0(atf_problem *p) { p->test->f0[1] += 0.5; }
static void relabel_test(atf_problem *p) { p->test->labels[0] += 1; }
static void nudge_test_op(atf_problem *p) { p->test->blocks[1].J[0] += 1; }
static void drop_test(atf_problem *p)
{
    atf_problem_free(p->test);
    p->test = NULL;
}
static void swap_blocks(atf_problem *p) /* the same blocks in another order */
{
    atf_block t = p->blocks[0];
    p->blocks[0] = p->blocks[1];
    p->blocks[1] = t;
}
/* Not part of the content hash: penalties (a solver setting) and the training y, f0, labels. */
static void repenalize(atf_problem *p)
{
    char err[ATF_ERRLEN];
    atf_problem_set_penalty(p, "nuclear", err);
}
static void nudge_y(atf_problem *p) { p->y[0] += 1; }
static void relabel(atf_problem *p) { p->labels[0] += 1; }
static void reindex(atf_problem *p) { p->blocks[2].index = 42; } /* order kept */

static void test_fingerprints(const char *dir)
{
    char path[4096], err[ATF_ERRLEN], fp0[ATF_FINGERPRINT_LEN], fp1[ATF_FINGERPRINT_LEN];
    snprintf(path, sizeof path, "%s/fingerprint.h5", dir);
    atf_problem *p = make_problem(31, 5, 2, 3);
    CHECK(atf_problem_fingerprint(p, fp0) == ATF_OK && strlen(fp0) == 32 &&
              strspn(fp0, "0123456789abcdef") == 32, "fingerprint form '%s'", fp0);
    CHECK(atf_problem_fingerprint(p, fp1) == ATF_OK && !strcmp(fp0, fp1), "not deterministic");

    static const struct {
        void (*change)(atf_problem *);
        const char *what;
        int changes;
    } cases[] = {
        {nudge_r, "r (one ulp)", 1}, {nudge_H, "factored H (one ulp)", 1},
        {nudge_D, "factored D", 1}, {nudge_J, "dense J", 1}, {nudge_sparse, "sparse data", 1},
        {move_sparse, "sparse index", 1}, {rename_block, "block name", 1},
        {restructure, "block structure", 1}, {nudge_test_y, "test y", 1},
        {nudge_test_f0, "test f0", 1}, {relabel_test, "test labels", 1},
        {nudge_test_op, "test operator", 1}, {drop_test, "no test split", 1},
        {swap_blocks, "block order", 1}, {repenalize, "penalty", 0}, {nudge_y, "training y", 0},
        {relabel, "training labels", 0}, {reindex, "index value (same order)", 0},
    };
    for (size_t j = 0; j < sizeof cases / sizeof cases[0]; j++)
        CHECK(fingerprint_changes(cases[j].change, fp0, cases[j].what) == cases[j].changes,
              "%s: fingerprint %s", cases[j].what, cases[j].changes ? "unchanged" : "changed");

    /* write → read: the reader recomputes the same value and finds it stored; provenance kept */
    snprintf(p->prov.command, sizeof p->prov.command, "atf features -o 'a b.h5'");
    snprintf(p->prov.data_source, sizeof p->prov.data_source, "synthetic:d=4");
    p->prov.has_data_seed = 1;
    p->prov.data_seed = 1234567890123LL;
    p->prov.has_standardize = 1;
    p->prov.standardize = 0;
    snprintf(p->prov.mlp_fingerprint, sizeof p->prov.mlp_fingerprint, "%s", fp1);
    CHECK(atf_problem_write(path, p, err) == ATF_OK, "write: %s", err);
    atf_problem *q = NULL;
    CHECK(atf_problem_read(path, &q, err) == ATF_OK, "read: %s", err);
    if (q) {
        CHECK(!strcmp(q->fingerprint, fp0), "read fingerprint %s, want %s", q->fingerprint, fp0);
        CHECK(q->fingerprint_state == ATF_FINGERPRINT_MATCHES, "state %d", q->fingerprint_state);
        CHECK(!strcmp(q->prov.command, p->prov.command) &&
                  !strcmp(q->prov.data_source, "synthetic:d=4") && q->prov.has_data_seed &&
                  q->prov.data_seed == 1234567890123LL && q->prov.has_standardize &&
                  q->prov.standardize == 0 && !strcmp(q->prov.mlp_fingerprint, fp1) &&
                  q->prov.atf_version[0], "provenance lost");
        /* a rewrite of what was read gives the same file fingerprint */
        CHECK(atf_problem_write(path, q, err) == ATF_OK, "rewrite: %s", err);
        atf_problem *q2 = NULL;
        CHECK(atf_problem_read(path, &q2, err) == ATF_OK && !strcmp(q2->fingerprint, fp0) &&
                  q2->fingerprint_state == ATF_FINGERPRINT_MATCHES, "rewrite: %s", err);
        atf_problem_free(q2);
    }

    /* results carry it through their files; atf_result_match compares */
    atf_result *res = q ? atf_result_alloc(q) : NULL;
    CHECK(res && !strcmp(res->problem_fingerprint, fp0), "result without the fingerprint");
    if (res) {
        snprintf(res->info.method, sizeof res->info.method, "admm");
        snprintf(res->loss, sizeof res->loss, "interpolate");
        snprintf(res->penalty_override, sizeof res->penalty_override, "pow:p=1.5,scale=2");
        res->tol = 1e-7;
        res->max_iter = 77;
        res->reduce = 0;
        CHECK(atf_result_factors(res, q, err) == ATF_OK, "factors: %s", err);
        snprintf(path, sizeof path, "%s/fingerprint_result.h5", dir);
        CHECK(atf_result_write(path, res, err) == ATF_OK, "write result: %s", err);
        atf_result *back = NULL;
        CHECK(atf_result_read(path, &back, err) == ATF_OK, "read result: %s", err);
        char note[ATF_ERRLEN];
        if (back) {
            CHECK(!strcmp(back->problem_fingerprint, fp0) && !strcmp(back->loss, "interpolate") &&
                      !strcmp(back->penalty_override, "pow:p=1.5,scale=2") && back->tol == 1e-7 &&
                      back->max_iter == 77 && back->reduce == 0 && back->adaptive_rho == -1 &&
                      isnan(back->rho) && back->atf_version[0], "settings lost");
            CHECK(atf_result_match(back, "r.h5", q, "p.h5", note, err) == ATF_OK && !note[0],
                  "match: %s", err);
            atf_problem *other = make_problem(32, 5, 2, 3);
            CHECK(atf_result_match(back, "r.h5", other, "other.h5", note, err) == ATF_OK,
                  "a problem built in code has no fingerprint to compare");
            CHECK(atf_problem_fingerprint(other, other->fingerprint) == ATF_OK, "fingerprint");
            CHECK(atf_result_match(back, "r.h5", other, "other.h5", note, err) == ATF_E_INPUT &&
                      strstr(err, "r.h5: ") && strstr(err, "other.h5") && strstr(err, fp0),
                  "mismatch: %s", err);
            atf_problem_free(other);
            back->problem_fingerprint[0] = '\0';
            CHECK(atf_result_match(back, "r.h5", q, "p.h5", note, err) == ATF_OK &&
                      strstr(note, "problem_fingerprint") && strstr(note, "r.h5"),
                  "no note for a result without fingerprint: '%s'", note);
        }
        atf_result_free(back);
        unlink(path);
    }
    atf_result_free(res);
    atf_problem_free(q);
    atf_problem_free(p);
    snprintf(path, sizeof path, "%s/fingerprint.h5", dir);
    unlink(path);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_roundtrip SCRATCH_DIR\n");
        return 2;
    }
    char dir[4000];
    snprintf(dir, sizeof dir, "%s/roundtrip_scratch", argv[1]);
    mkdir(dir, 0755);
    test_problem_roundtrip(dir, 1);
    test_problem_roundtrip(dir, 3);
    test_validation();
    test_atomic(dir);
    test_results(dir);
    test_fingerprints(dir);
    rmdir(dir);
    return atf_test_finish("roundtrip");
}
