/* test_operators.c — the three constraint operators against an independently built dense A.
 *
 * For dense, sparse (with empty rows and duplicate entries) and factored blocks, with C = 1 and
 * C = 3, and for several shapes: the test builds A itself from its own definition (docs/formats.md:
 * row m = i·C + k, entry (a, c) of G_m at column a·cols + c) and checks, to 1e-12 relative,
 *   atf_block_dense = A,  apply = A x,  adjoint = Aᵀ λ,  gram = A Aᵀ,
 * each with beta = 0 on NaN-filled outputs (must overwrite) and beta ≠ 0 (must scale every
 * entry), plus ⟨A x, λ⟩ = ⟨x, Aᵀ λ⟩ and the summed residual of atf_problem_residual; and the
 * fused Hessian product atf_factored_hess of factored blocks against Aᵀ K A from the dense A's;
 * and, with N large enough for the per-example loops to run on several threads, the same on 1,
 * 2 and 3 BLAS threads (uneven ranges). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "atf_problem.h"
#include "atf_test.h"

static double *nan_vector(size_t n)
{
    double *x = malloc(n * sizeof *x);
    for (size_t j = 0; j < n; j++)
        x[j] = NAN;
    return x;
}

static void expect_close(const char *ctx, const char *what, const double *got, const double *ref,
                         size_t n)
{
    const double e = max_rel_diff(n, got, ref);
    CHECK(e <= 1e-12, "%s: %s (relative error %.3g)", ctx, what, e);
}

/* ---------------------------------------------------------------- block builders */

typedef struct {
    atf_block b;
    double *A; /* the test's own dense M × n matrix */
} case_t;

static void init_sizes(atf_block *b, int N, int C, int rows, int cols, atf_operator_kind k)
{
    memset(b, 0, sizeof *b);
    snprintf(b->name, sizeof b->name, "W");
    b->N = N;
    b->C = C;
    b->M = N * C;
    b->rows = rows;
    b->cols = cols;
    b->kind = k;
}

static case_t make_dense(atf_test_rng *rng, int N, int C, int rows, int cols)
{
    case_t t;
    init_sizes(&t.b, N, C, rows, cols, ATF_OP_DENSE);
    size_t n = (size_t)t.b.M * rows * cols;
    t.b.J = atf_test_new_symmetric(rng, n);
    t.A = malloc(n * sizeof *t.A);
    memcpy(t.A, t.b.J, n * sizeof *t.A);
    return t;
}

static case_t make_factored(atf_test_rng *rng, int N, int C, int rows, int cols)
{
    case_t t;
    init_sizes(&t.b, N, C, rows, cols, ATF_OP_FACTORED);
    int M = t.b.M, n = rows * cols;
    t.b.H = atf_test_new_symmetric(rng, (size_t)N * rows);
    t.b.D = atf_test_new_symmetric(rng, (size_t)M * cols);
    t.A = malloc((size_t)M * n * sizeof *t.A);
    for (int i = 0; i < N; i++)
        for (int k = 0; k < C; k++)
            for (int a = 0; a < rows; a++)
                for (int c = 0; c < cols; c++)
                    t.A[(size_t)(i * C + k) * n + a * cols + c] =
                        t.b.H[i * rows + a] * t.b.D[(i * C + k) * cols + c];
    return t;
}

/* Random CSR with empty rows (every third row) and duplicate column entries, which A sums. */
static case_t make_sparse(atf_test_rng *rng, int N, int C, int rows, int cols)
{
    case_t t;
    init_sizes(&t.b, N, C, rows, cols, ATF_OP_SPARSE);
    int M = t.b.M, n = rows * cols, per_row = 3;
    t.b.indptr = malloc((size_t)(M + 1) * sizeof *t.b.indptr);
    t.b.indices = malloc((size_t)M * per_row * sizeof *t.b.indices);
    t.b.data = malloc((size_t)M * per_row * sizeof *t.b.data);
    t.A = calloc((size_t)M * n, sizeof *t.A);
    int64_t p = 0;
    t.b.indptr[0] = 0;
    for (int m = 0; m < M; m++) {
        if (m % 3 != 1) {
            for (int q = 0; q < per_row; q++) {
                int64_t col = (int64_t)(atf_test_uniform(rng) * n) % n;
                if (q == 2)
                    col = t.b.indices[p - 1]; /* a duplicate */
                t.b.indices[p] = col;
                t.b.data[p] = atf_test_symmetric(rng);
                t.A[(size_t)m * n + col] += t.b.data[p];
                p++;
            }
        }
        t.b.indptr[m + 1] = p;
    }
    t.b.nnz = p;
    return t;
}

static void free_case(case_t *t)
{
    free(t->b.J);
    free(t->b.indptr);
    free(t->b.indices);
    free(t->b.data);
    free(t->b.H);
    free(t->b.D);
    free(t->A);
}

/* ---------------------------------------------------------------- references */

static void ref_apply(const double *A, int M, int n, const double *x, double *y)
{
    for (int m = 0; m < M; m++) {
        long double s = 0;
        for (int j = 0; j < n; j++)
            s += (long double)A[(size_t)m * n + j] * x[j];
        y[m] = (double)s;
    }
}

static void ref_adjoint(const double *A, int M, int n, const double *l, double *x)
{
    for (int j = 0; j < n; j++) {
        long double s = 0;
        for (int m = 0; m < M; m++)
            s += (long double)A[(size_t)m * n + j] * l[m];
        x[j] = (double)s;
    }
}

static void ref_gram(const double *A, int M, int n, double *G)
{
    for (int m = 0; m < M; m++)
        for (int q = 0; q < M; q++) {
            long double s = 0;
            for (int j = 0; j < n; j++)
                s += (long double)A[(size_t)m * n + j] * A[(size_t)q * n + j];
            G[(size_t)m * M + q] = (double)s;
        }
}

static double dot(const double *a, const double *b, size_t n)
{
    long double s = 0;
    for (size_t j = 0; j < n; j++)
        s += (long double)a[j] * b[j];
    return (double)s;
}

/* ---------------------------------------------------------------- checks */

static void check_case(atf_test_rng *rng, const char *ctx, case_t *t)
{
    const atf_block *b = &t->b;
    int M = b->M, n = b->rows * b->cols;
    double *x = atf_test_new_symmetric(rng, (size_t)n);
    double *lam = atf_test_new_symmetric(rng, (size_t)M);
    double *ref = malloc((size_t)(M > n ? M : n) * M * sizeof *ref);

    double *A = atf_block_dense(b);
    expect_close(ctx, "atf_block_dense", A, t->A, (size_t)M * n);
    free(A);

    /* apply: beta = 0 overwrites NaN, beta = -0.5 scales the old y */
    double *y = nan_vector((size_t)M);
    ref_apply(t->A, M, n, x, ref);
    atf_block_apply(b, x, 0.0, y);
    expect_close(ctx, "apply beta=0", y, ref, (size_t)M);
    double *y0 = atf_test_new_symmetric(rng, (size_t)M);
    memcpy(y, y0, (size_t)M * sizeof *y);
    for (int m = 0; m < M; m++)
        ref[m] += -0.5 * y0[m];
    atf_block_apply(b, x, -0.5, y);
    expect_close(ctx, "apply beta=-0.5", y, ref, (size_t)M);

    /* adjoint */
    double *B = nan_vector((size_t)n);
    ref_adjoint(t->A, M, n, lam, ref);
    atf_block_adjoint(b, lam, 0.0, B);
    expect_close(ctx, "adjoint beta=0", B, ref, (size_t)n);
    double *B0 = atf_test_new_symmetric(rng, (size_t)n);
    memcpy(B, B0, (size_t)n * sizeof *B);
    for (int j = 0; j < n; j++)
        ref[j] += 2.0 * B0[j];
    atf_block_adjoint(b, lam, 2.0, B);
    expect_close(ctx, "adjoint beta=2", B, ref, (size_t)n);

    /* ⟨A x, λ⟩ = ⟨x, Aᵀ λ⟩ with the library on both sides */
    atf_block_apply(b, x, 0.0, y);
    atf_block_adjoint(b, lam, 0.0, B);
    double lhs = dot(y, lam, (size_t)M), rhs = dot(x, B, (size_t)n);
    double scale = fmax(fabs(lhs), 1e-300);
    CHECK(fabs(lhs - rhs) / scale <= 1e-12, "%s: adjoint identity <Ax,l> = <x,A^T l> (relative "
          "error %.3g)", ctx, fabs(lhs - rhs) / scale);

    /* Gram: beta = 0 on NaN; beta = 3 on a non-symmetric G (both triangles scaled) */
    size_t MM = (size_t)M * M;
    double *G = nan_vector(MM);
    ref_gram(t->A, M, n, ref);
    atf_block_gram(b, 0.0, G);
    expect_close(ctx, "gram beta=0", G, ref, MM);
    double *G0 = atf_test_new_symmetric(rng, MM);
    memcpy(G, G0, MM * sizeof *G);
    for (size_t j = 0; j < MM; j++)
        ref[j] += 3.0 * G0[j];
    atf_block_gram(b, 3.0, G);
    expect_close(ctx, "gram beta=3", G, ref, MM);

    free(x);
    free(lam);
    free(ref);
    free(y);
    free(y0);
    free(B);
    free(B0);
    free(G);
    free(G0);
}

/* atf_problem_residual sums all blocks and subtracts r. */
static void check_residual(atf_test_rng *rng, int N, int C)
{
    case_t c[3] = {make_dense(rng, N, C, 2, 3), make_sparse(rng, N, C, 3, 2),
                   make_factored(rng, N, C, 4, 2)};
    atf_problem p;
    memset(&p, 0, sizeof p);
    p.N = N;
    p.C = C;
    p.M = N * C;
    p.nblocks = 3;
    p.blocks = malloc(3 * sizeof *p.blocks);
    p.r = atf_test_new_symmetric(rng, (size_t)p.M);
    double *Bs[3], *ref = malloc((size_t)p.M * sizeof *ref), *part = malloc((size_t)p.M * sizeof *part);
    for (int m = 0; m < p.M; m++)
        ref[m] = -p.r[m];
    for (int l = 0; l < 3; l++) {
        p.blocks[l] = c[l].b;
        int n = c[l].b.rows * c[l].b.cols;
        Bs[l] = atf_test_new_symmetric(rng, (size_t)n);
        ref_apply(c[l].A, p.M, n, Bs[l], part);
        for (int m = 0; m < p.M; m++)
            ref[m] += part[m];
    }
    double *res = nan_vector((size_t)p.M);
    atf_problem_residual(&p, Bs, res);
    char ctx[64];
    snprintf(ctx, sizeof ctx, "residual N=%d C=%d", N, C);
    expect_close(ctx, "atf_problem_residual", res, ref, (size_t)p.M);
    for (int l = 0; l < 3; l++) {
        free(Bs[l]);
        free_case(&c[l]);
    }
    free(p.blocks);
    free(p.r);
    free(ref);
    free(part);
    free(res);
}

/* A random symmetric C × C curvature per example (the test's K), applied as atf_curvature_fn. */
typedef struct {
    int C;
    const double *K; /* [N × C × C] */
} curv_t;

static void apply_curv(void *ctx, int i, const double *y, double *u)
{
    const curv_t *c = ctx;
    double tmp[8];
    for (int a = 0; a < c->C; a++) {
        tmp[a] = 0.0;
        for (int b = 0; b < c->C; b++)
            tmp[a] += c->K[((size_t)i * c->C + a) * c->C + b] * y[b];
    }
    memcpy(u, tmp, (size_t)c->C * sizeof *u); /* u may be y */
}

/* Blocks of widths 1, 9 (one lane group and a tail) and 17, k vectors at once:
 * G_l^(j) = A_lᵀ K Σ_l' A_l' X_l'^(j), each X_l, G_l holding the k matrices side by side. */
static void check_hess(atf_test_rng *rng, int N, int C, int k)
{
    enum { NB = 3 };
    static const int shape[NB][2] = {{3, 1}, {2, 9}, {4, 17}};
    case_t c[NB];
    const atf_block *b[NB];
    double *X[NB], *G[NB];
    int M = N * C;
    double *K = atf_test_new_symmetric(rng, (size_t)N * C * C);
    for (int i = 0; i < N; i++) /* symmetric, as a loss's curvature is */
        for (int a = 0; a < C; a++)
            for (int q = 0; q < a; q++)
                K[((size_t)i * C + a) * C + q] = K[((size_t)i * C + q) * C + a];
    curv_t cv = {C, K};
    for (int l = 0; l < NB; l++) {
        c[l] = make_factored(rng, N, C, shape[l][0], shape[l][1]);
        b[l] = &c[l].b;
        X[l] = atf_test_new_symmetric(rng, (size_t)k * shape[l][0] * shape[l][1]);
        G[l] = nan_vector((size_t)k * shape[l][0] * shape[l][1]);
    }
    double *work = malloc((size_t)atf_factored_hess_work_size(NB, b, k) * sizeof *work);
    double *z = nan_vector((size_t)M * k);
    atf_factored_hess(NB, b, k, (const double *const *)X, G, apply_curv, &cv, z, work);
    double *y = malloc((size_t)M * sizeof *y), *u = malloc((size_t)M * sizeof *u);
    double *part = malloc((size_t)M * sizeof *part), *xj = malloc(4 * 17 * sizeof *xj);
    double *ref = malloc(4 * 17 * sizeof *ref), *got = malloc(4 * 17 * sizeof *got);
    char ctx[64];
    for (int j = 0; j < k; j++) {
        snprintf(ctx, sizeof ctx, "hess N=%d C=%d vector %d of %d", N, C, j + 1, k);
        memset(y, 0, (size_t)M * sizeof *y);
        for (int l = 0; l < NB; l++) { /* y = Σ_l A_l X_l^(j) from the dense A's */
            int P = shape[l][0], Q = shape[l][1];
            for (int p = 0; p < P; p++)
                memcpy(xj + p * Q, X[l] + ((size_t)p * k + j) * Q, (size_t)Q * sizeof *xj);
            ref_apply(c[l].A, M, P * Q, xj, part);
            for (int m = 0; m < M; m++)
                y[m] += part[m];
        }
        for (int i = 0; i < N; i++) {
            apply_curv(&cv, i, y + (size_t)i * C, u + (size_t)i * C);
            expect_close(ctx, "atf_factored_hess: y holds K A x", z + ((size_t)i * k + j) * C,
                         u + (size_t)i * C, (size_t)C);
        }
        for (int l = 0; l < NB; l++) {
            int P = shape[l][0], Q = shape[l][1];
            ref_adjoint(c[l].A, M, P * Q, u, ref);
            for (int p = 0; p < P; p++)
                memcpy(got + p * Q, G[l] + ((size_t)p * k + j) * Q, (size_t)Q * sizeof *got);
            expect_close(ctx, "atf_factored_hess: G_l = A_l^T K A x", got, ref, (size_t)P * Q);
        }
    }
    for (int l = 0; l < NB; l++) {
        free(X[l]), free(G[l]);
        free_case(&c[l]);
    }
    free(K), free(y), free(u), free(part), free(xj), free(ref), free(got), free(work), free(z);
}

/* Factored apply, adjoint and the fused product with N = 2 000 (≥ 512 examples a thread, 63
 * chunks) on 1, 2 and 3 threads: against the dense A, and the same bits on every count (the
 * chunks' GEMMs on atf's team, each on one BLAS thread), which is given back afterwards. */
static void check_threads(atf_test_rng *rng)
{
    int saved = openblas_get_num_threads();
    case_t c = make_factored(rng, 2000, 3, 2, 9);
    const atf_block *b = &c.b;
    int M = b->M, n = 18;
    double *x = atf_test_new_symmetric(rng, (size_t)n);
    double *lam = atf_test_new_symmetric(rng, (size_t)M);
    double *K = calloc((size_t)2000 * 9, sizeof *K); /* K = I per example: Aᵀ A x */
    for (int i = 0; i < 2000; i++)
        for (int a = 0; a < 3; a++)
            K[(size_t)i * 9 + a * 4] = 1.0;
    curv_t cv = {3, K};
    double *ref = malloc((size_t)M * sizeof *ref), *z = malloc((size_t)M * sizeof *z);
    double *got[3], *first[3] = {NULL, NULL, NULL}; /* apply, adjoint, fused; at one thread */
    for (int T = 1; T <= 3; T++) {
        openblas_set_num_threads(T);
        char ctx[64];
        snprintf(ctx, sizeof ctx, "factored N=2000 C=3 2x9, %d thread(s)", T);
        got[0] = nan_vector((size_t)M), got[1] = nan_vector((size_t)n);
        got[2] = nan_vector((size_t)n);
        ref_apply(c.A, M, n, x, ref);
        atf_block_apply(b, x, 0.0, got[0]);
        expect_close(ctx, "apply", got[0], ref, (size_t)M);
        ref_adjoint(c.A, M, n, lam, ref);
        atf_block_adjoint(b, lam, 0.0, got[1]);
        expect_close(ctx, "adjoint", got[1], ref, (size_t)n);
        double *work = malloc((size_t)atf_factored_hess_work_size(1, &b, 1) * sizeof *work);
        atf_factored_hess(1, &b, 1, (const double *const *)&x, &got[2], apply_curv, &cv, z,
                          work);
        ref_apply(c.A, M, n, x, z);
        ref_adjoint(c.A, M, n, z, ref);
        expect_close(ctx, "fused product A^T A x", got[2], ref, (size_t)n);
        CHECK(openblas_get_num_threads() == T, "%s: the BLAS's threads not given back (%d)", ctx,
              openblas_get_num_threads());
        size_t len[3] = {(size_t)M, (size_t)n, (size_t)n};
        const char *what[3] = {"apply", "adjoint", "fused product"};
        for (int k = 0; k < 3; k++) {
            if (T == 1) {
                first[k] = got[k];
                continue;
            }
            CHECK(memcmp(got[k], first[k], len[k] * sizeof(double)) == 0,
                  "%s: %s differs from one thread's in its bits", ctx, what[k]);
            free(got[k]);
        }
        free(work);
    }
    openblas_set_num_threads(saved);
    for (int k = 0; k < 3; k++)
        free(first[k]);
    free(x), free(lam), free(ref), free(z), free(K);
    free_case(&c);
}

int main(void)
{
    atf_test_rng rng;
    atf_test_rng_seed(&rng, 1);
    /* Shapes include vectors (cols = 1, rows = 1) and wide/tall matrices; N = 90 with C = 3
     * makes M = 270 > the Gram's 256-row panel, so the panel loop is exercised. */
    static const int shapes[][3] = {{5, 4, 3}, {7, 1, 6}, {6, 8, 1}, {3, 2, 9}, {90, 3, 2}};
    static const int Cs[] = {1, 3};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        for (size_t c = 0; c < 2; c++) {
            int N = shapes[s][0], rows = shapes[s][1], cols = shapes[s][2], C = Cs[c];
            case_t cases[3] = {make_dense(&rng, N, C, rows, cols),
                               make_sparse(&rng, N, C, rows, cols),
                               make_factored(&rng, N, C, rows, cols)};
            static const char *const kinds[3] = {"dense", "sparse", "factored"};
            for (int k = 0; k < 3; k++) {
                char ctx[96];
                snprintf(ctx, sizeof ctx, "%s N=%d C=%d %dx%d", kinds[k], N, C, rows, cols);
                check_case(&rng, ctx, &cases[k]);
                free_case(&cases[k]);
            }
        }
    }
    check_residual(&rng, 6, 1);
    check_residual(&rng, 4, 3);
    check_hess(&rng, 7, 1, 1);
    check_hess(&rng, 11, 3, 1);
    check_hess(&rng, 11, 3, 4);
    check_threads(&rng);
    return atf_test_finish("operators");
}
