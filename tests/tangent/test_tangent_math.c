/* test_tangent_math.c — the tangent module's math against independent references:
 * Jacobians vs central finite differences, Hadamard Grams vs materialised J Jᵀ, the exact
 * adapted kernel vs J M̂² Jᵀ formed densely, eq. 17 vs eq. 7, Theorem 1, path averaging (both
 * strategies vs a naive average), the generator's golden values and the alignments. */
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf_kernel.h"
#include "atf_test.h"

/* ---------------------------------------------------------------- generator */

static void test_rng(void)
{
    /* golden values of xoshiro256** seeded by splitmix64(42), computed independently */
    static const uint64_t golden[5] = {0x15780b2e0c2ec716ULL, 0x6104d9866d113a7eULL,
                                       0xae17533239e499a1ULL, 0xecb8ad4703b360a1ULL,
                                       0xfde6dc7fe2ec5e64ULL};
    atf_rng r;
    atf_rng_seed(&r, 42);
    for (int i = 0; i < 5; i++)
        CHECK(atf_rng_u64(&r) == golden[i], "rng value %d differs from the reference", i);
    /* the normal sampler is the polar method; its portable log agrees with libm's log */
    atf_rng a, b;
    atf_rng_seed(&a, 7);
    atf_rng_seed(&b, 7);
    double worst = 0.0, sum = 0.0, sum2 = 0.0;
    int n = 20000;
    for (int i = 0; i < n; i += 2) {
        double x = atf_rng_normal(&a), y = atf_rng_normal(&a);
        double u, v, q;
        do {
            u = 2.0 * atf_rng_uniform(&b) - 1.0;
            v = 2.0 * atf_rng_uniform(&b) - 1.0;
            q = u * u + v * v;
        } while (q >= 1.0 || q == 0.0);
        double f = sqrt(-2.0 * log(q) / q);
        worst = fmax(worst, fmax(fabs(x - u * f) / fabs(u * f), fabs(y - v * f) / fabs(v * f)));
        sum += x + y;
        sum2 += x * x + y * y;
    }
    CHECK(worst < 1e-14, "normal sampler differs from the libm polar method by %g", worst);
    CHECK(fabs(sum / n) < 0.05 && fabs(sum2 / n - 1.0) < 0.05, "normal moments %g %g", sum / n,
          sum2 / n);
    /* below(n) stays in range and shuffle is a permutation */
    int perm[50], seen[50] = {0};
    for (int i = 0; i < 50; i++)
        perm[i] = i;
    atf_rng_shuffle(&a, 50, perm);
    for (int i = 0; i < 50; i++)
        seen[perm[i]]++;
    for (int i = 0; i < 50; i++)
        CHECK(seen[i] == 1, "shuffle lost %d", i);
}

/* ---------------------------------------------------------------- Jacobians */

static double *param_ptr(atf_mlp *m, const atf_jac_block *jb, int a, int c)
{
    return jb->name[0] == 'b' ? &m->b[jb->layer][c]
                              : &m->W[jb->layer][(size_t)a * jb->cols + c];
}

static void test_jacobian_fd(int bias, atf_param param)
{
    atf_arch arch = {.L = 3, .widths = {5, 7, 6, 3}, .bias = {bias, bias, bias}, .param = param};
    atf_mlp *m = NULL;
    char err[ATF_ERRLEN];
    CHECK(atf_mlp_create(&arch, 11, &m, err) == ATF_OK, "create: %s", err);
    atf_test_rng rng;
    atf_test_rng_seed(&rng, 5);
    for (int l = 0; bias && l < arch.L; l++) /* nonzero biases so their effect is visible */
        for (int q = 0; q < arch.widths[l + 1]; q++)
            m->b[l][q] = 0.1 * atf_test_normal(&rng);
    int N = 4, C = 3;
    double *X = atf_test_new_normal(&rng, (size_t)N * 5);
    atf_jacobian J;
    CHECK(atf_mlp_jacobian(m, N, X, &J, err) == ATF_OK, "jacobian: %s", err);
    CHECK(J.nblocks == (bias ? 6 : 3), "nblocks %d", J.nblocks);
    double F[12], Fp[12], Fm[12];
    atf_mlp_forward(m, N, X, F, err);
    CHECK(max_rel_diff(12, J.f, F) == 0.0, "jacobian outputs differ from forward");
    const double h = 1e-5;
    for (int b = 0; b < J.nblocks; b++) {
        const atf_jac_block *jb = &J.blocks[b];
        double worst = 0.0, scale = 0.0;
        for (int a = 0; a < jb->rows; a++) {
            for (int c = 0; c < jb->cols; c++) {
                double *w = param_ptr(m, jb, a, c), w0 = *w;
                *w = w0 + h;
                atf_mlp_forward(m, N, X, Fp, err);
                *w = w0 - h;
                atf_mlp_forward(m, N, X, Fm, err);
                *w = w0;
                for (int mm = 0; mm < N * C; mm++) {
                    double fd = (Fp[mm] - Fm[mm]) / (2 * h);
                    double an = jb->H[(size_t)(mm / C) * jb->rows + a] * jb->D[(size_t)mm * jb->cols + c];
                    worst = fmax(worst, fabs(fd - an));
                    scale = fmax(scale, fabs(an));
                }
            }
        }
        CHECK(worst <= 1e-6 * scale, "bias %d param %s block %s: FD error %g (scale %g)", bias,
              atf_param_name(param), jb->name, worst, scale);
        CHECK(scale > 0.0, "block %s has a zero Jacobian", jb->name);
    }
    atf_jacobian_free(&J);
    atf_mlp_free(m);
    free(X);
}

/* ---------------------------------------------------------------- Grams and adapted kernels */

/* Dense rows: row m = vec(h_i δ_mᵀ) row-major. */
static double *materialise(int N, int C, int P, int Q, const double *H, const double *D)
{
    int M = N * C;
    double *J = malloc((size_t)M * P * Q * sizeof *J);
    for (int m = 0; m < M; m++)
        for (int a = 0; a < P; a++)
            for (int c = 0; c < Q; c++)
                J[((size_t)m * P + a) * Q + c] = H[(size_t)(m / C) * P + a] * D[(size_t)m * Q + c];
    return J;
}

static double *naive_gram(int M, int n, const double *J)
{
    double *K = calloc((size_t)M * M, sizeof *K);
    for (int a = 0; a < M; a++)
        for (int b = 0; b < M; b++)
            for (int j = 0; j < n; j++)
                K[(size_t)a * M + b] += J[(size_t)a * n + j] * J[(size_t)b * n + j];
    return K;
}

static void orthonormal(atf_test_rng *rng, int n, int k, double *Q)
{
    for (int i = 0; i < n * k; i++)
        Q[i] = atf_test_normal(rng);
    double tau[64];
    LAPACKE_dgeqrf(LAPACK_ROW_MAJOR, n, k, Q, k, tau);
    LAPACKE_dorgqr(LAPACK_ROW_MAJOR, n, k, k, Q, k, tau);
}

static atf_block factored_block(int N, int C, int P, int Q, double *H, double *D)
{
    atf_block b;
    memset(&b, 0, sizeof b);
    snprintf(b.name, sizeof b.name, "W1");
    b.rows = P;
    b.cols = Q;
    b.N = N;
    b.C = C;
    b.M = N * C;
    b.kind = ATF_OP_FACTORED;
    b.H = H;
    b.D = D;
    b.penalty = atf_penalty_default();
    snprintf(b.penalty_spec, sizeof b.penalty_spec, "sq");
    return b;
}

/* M̂ = I + X diag(s − 1) Xᵀ formed densely (n × n), the reference only. */
static double *dense_transform(int n, int k, const double *X, const double *s)
{
    double *T = calloc((size_t)n * n, sizeof *T);
    for (int i = 0; i < n; i++) {
        T[(size_t)i * n + i] = 1.0;
        for (int j = 0; j < n; j++)
            for (int r = 0; r < k; r++)
                T[(size_t)i * n + j] += X[(size_t)i * k + r] * (s[r] - 1.0) * X[(size_t)j * k + r];
    }
    return T;
}

/* Reference adapted kernel: rows T_m = M̂1 G_m M̂2, K = T Tᵀ (dense n × n transforms). */
static double *dense_adapted(int N, int C, int P, int Q, int k, const double *H, const double *D,
                             const double *U, const double *s1, const double *V, const double *s2)
{
    int M = N * C;
    double *J = materialise(N, C, P, Q, H, D);
    double *M1 = dense_transform(P, k, U, s1), *M2 = dense_transform(Q, k, V, s2);
    double *T = malloc((size_t)M * P * Q * sizeof *T), *tmp = malloc((size_t)P * Q * sizeof *tmp);
    for (int m = 0; m < M; m++) {
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, P, Q, P, 1.0, M1, P,
                    J + (size_t)m * P * Q, Q, 0.0, tmp, Q);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, P, Q, Q, 1.0, tmp, Q, M2, Q, 0.0,
                    T + (size_t)m * P * Q, Q);
    }
    double *K = naive_gram(M, P * Q, T);
    free(J);
    free(M1);
    free(M2);
    free(T);
    free(tmp);
    return K;
}

static void test_grams_and_adapted(void)
{
    atf_test_rng rng;
    atf_test_rng_seed(&rng, 3);
    char err[ATF_ERRLEN];
    int N = 5, C = 2, P = 6, Q = 4, M = N * C, k = 4;
    double *H = atf_test_new_normal(&rng, (size_t)N * P);
    double *D = atf_test_new_normal(&rng, (size_t)M * Q);
    atf_block b = factored_block(N, C, P, Q, H, D);

    /* Hadamard Gram = materialised J Jᵀ */
    double *J = materialise(N, C, P, Q, H, D);
    double *Kref = naive_gram(M, P * Q, J);
    double *K = calloc((size_t)M * M, sizeof *K);
    CHECK(atf_kernel_ntk_block(&b, K, err) == ATF_OK, "ntk: %s", err);
    CHECK(max_rel_diff((size_t)M * M, K, Kref) < 1e-13, "Hadamard Gram vs J J^T: %g",
          max_rel_diff((size_t)M * M, K, Kref));

    /* exact adapted kernel = J M̂² Jᵀ formed densely (factored and dense operators) */
    double U[6 * 4], V[4 * 4], s1[4] = {3.0, 1.5, 1.2, 1.0}, s2[4] = {2.0, 1.0, 1.7, 1.1};
    orthonormal(&rng, P, k, U);
    orthonormal(&rng, Q, k, V);
    atf_result_block rb;
    memset(&rb, 0, sizeof rb);
    snprintf(rb.name, sizeof rb.name, "W1");
    rb.rows = P;
    rb.cols = Q;
    rb.k = k;
    rb.U = U;
    rb.V = V;
    rb.s1 = s1;
    rb.s2 = s2;
    double *Kad_ref = dense_adapted(N, C, P, Q, k, H, D, U, s1, V, s2);
    double *Kad = calloc((size_t)M * M, sizeof *Kad);
    CHECK(atf_kernel_adapted_block(&b, &rb, Kad, err) == ATF_OK, "adapted: %s", err);
    CHECK(max_rel_diff((size_t)M * M, Kad, Kad_ref) < 1e-12, "adapted (factored) vs dense: %g",
          max_rel_diff((size_t)M * M, Kad, Kad_ref));
    atf_block bd = b;
    bd.kind = ATF_OP_DENSE;
    bd.J = J;
    bd.H = bd.D = NULL;
    double *Kdd = calloc((size_t)M * M, sizeof *Kdd);
    CHECK(atf_kernel_adapted_block(&bd, &rb, Kdd, err) == ATF_OK, "adapted dense: %s", err);
    CHECK(max_rel_diff((size_t)M * M, Kdd, Kad_ref) < 1e-12,
          "adapted (dense operator) vs dense: %g", max_rel_diff((size_t)M * M, Kdd, Kad_ref));

    /* eq. 17 drops cross terms: for this matrix block it differs from eq. 7 */
    double *K17 = calloc((size_t)M * M, sizeof *K17);
    atf_kernel_ntk_block(&b, K17, err);
    atf_kernel_paper17_block(&b, &rb, K17, err);
    CHECK(max_rel_diff((size_t)M * M, K17, Kad_ref) > 1e-2,
          "eq. 17 unexpectedly equals eq. 7 for a matrix block (%g)",
          max_rel_diff((size_t)M * M, K17, Kad_ref));
    double *K17d = calloc((size_t)M * M, sizeof *K17d);
    atf_kernel_ntk_block(&b, K17d, err);
    atf_kernel_paper17_block(&bd, &rb, K17d, err);
    CHECK(max_rel_diff((size_t)M * M, K17d, K17) < 1e-12, "eq. 17 dense vs factored operator");

    /* ... but for a vector block (Q = 1) the two agree */
    double *Dv = atf_test_new_normal(&rng, (size_t)M), Vv[1] = {1.0}, s2v[1] = {1.0};
    double s1v[1] = {2.5};
    double Uv[6];
    orthonormal(&rng, P, 1, Uv);
    atf_block bv = factored_block(N, C, P, 1, H, Dv);
    atf_result_block rv = rb;
    rv.cols = 1;
    rv.k = 1;
    rv.U = Uv;
    rv.V = Vv;
    rv.s1 = s1v;
    rv.s2 = s2v;
    double *A7 = calloc((size_t)M * M, sizeof *A7), *A17 = calloc((size_t)M * M, sizeof *A17);
    atf_kernel_adapted_block(&bv, &rv, A7, err);
    atf_kernel_ntk_block(&bv, A17, err);
    atf_kernel_paper17_block(&bv, &rv, A17, err);
    CHECK(max_rel_diff((size_t)M * M, A17, A7) < 1e-13, "eq. 17 vs eq. 7 for a vector block: %g",
          max_rel_diff((size_t)M * M, A17, A7));

    free(H);
    free(D);
    free(J);
    free(Kref);
    free(K);
    free(Kad_ref);
    free(Kad);
    free(Kdd);
    free(K17);
    free(K17d);
    free(Dv);
    free(A7);
    free(A17);
}

/* Entrywise factors (diagonal structure): K = J diag((s1 s2)²) Jᵀ, for factored blocks in both
 * summation orders (C = 1 sums over rows of B, C = 2 over columns here) and for a dense operator;
 * eq. 17 adds the same minus K0. Blocks lacking factors are refused with a message. */
static void test_entrywise(int C)
{
    atf_test_rng rng;
    atf_test_rng_seed(&rng, 21 + (uint64_t)C);
    char err[ATF_ERRLEN];
    int N = 4, P = 3, Q = 5, M = N * C, n = P * Q;
    double *H = atf_test_new_normal(&rng, (size_t)N * P);
    double *D = atf_test_new_normal(&rng, (size_t)M * Q);
    double s1[15], s2[15], S[15];
    for (int j = 0; j < n; j++) {
        s1[j] = 1.0 + fabs(atf_test_normal(&rng));
        s2[j] = 1.0 + 0.5 * fabs(atf_test_normal(&rng));
        S[j] = s1[j] * s1[j] * s2[j] * s2[j];
    }
    atf_block b = factored_block(N, C, P, Q, H, D);
    double *J = materialise(N, C, P, Q, H, D);
    double *Kref = calloc((size_t)M * M, sizeof *Kref), *K0 = naive_gram(M, n, J);
    for (int a = 0; a < M; a++)
        for (int c = 0; c < M; c++)
            for (int j = 0; j < n; j++)
                Kref[(size_t)a * M + c] += J[(size_t)a * n + j] * S[j] * J[(size_t)c * n + j];
    atf_result_block rb;
    memset(&rb, 0, sizeof rb);
    snprintf(rb.name, sizeof rb.name, "W1");
    rb.rows = P;
    rb.cols = Q;
    rb.layout = ATF_FACTORS_ENTRYWISE;
    rb.k = n;
    rb.s1 = s1;
    rb.s2 = s2;
    double *K = calloc((size_t)M * M, sizeof *K), *Kd = calloc((size_t)M * M, sizeof *Kd);
    double *K17 = malloc((size_t)M * M * sizeof *K17);
    memcpy(K17, K0, (size_t)M * M * sizeof *K17);
    CHECK(atf_kernel_adapted_block(&b, &rb, K, err) == ATF_OK, "entrywise: %s", err);
    CHECK(max_rel_diff((size_t)M * M, K, Kref) < 1e-13, "entrywise factored (C = %d) vs "
          "J diag(S) J^T: %g", C, max_rel_diff((size_t)M * M, K, Kref));
    atf_block bd = b;
    bd.kind = ATF_OP_DENSE;
    bd.J = J;
    bd.H = bd.D = NULL;
    CHECK(atf_kernel_adapted_block(&bd, &rb, Kd, err) == ATF_OK, "entrywise dense: %s", err);
    CHECK(max_rel_diff((size_t)M * M, Kd, Kref) < 1e-13, "entrywise dense vs J diag(S) J^T: %g",
          max_rel_diff((size_t)M * M, Kd, Kref));
    CHECK(atf_kernel_paper17_block(&b, &rb, K17, err) == ATF_OK, "entrywise eq. 17: %s", err);
    CHECK(max_rel_diff((size_t)M * M, K17, Kref) < 1e-13, "entrywise eq. 17 vs eq. 7: %g",
          max_rel_diff((size_t)M * M, K17, Kref));
    /* refusals name the block and what is missing */
    rb.s2 = NULL;
    CHECK(atf_kernel_adapted_block(&b, &rb, K, err) == ATF_E_INPUT &&
              strstr(err, "W1") && strstr(err, "s1, s2 missing"), "missing s2: %s", err);
    rb.s2 = s2;
    rb.layout = ATF_FACTORS_SPECTRAL;
    CHECK(atf_kernel_adapted_block(&b, &rb, K, err) == ATF_E_INPUT, "spectral k = %d accepted",
          n);
    rb.k = 3;
    CHECK(atf_kernel_adapted_block(&b, &rb, K, err) == ATF_E_INPUT &&
              strstr(err, "U, V missing"), "spectral without U, V: %s", err);
    rb.layout = ATF_FACTORS_VECTOR;
    rb.k = 1;
    CHECK(atf_kernel_adapted_block(&b, &rb, K, err) == ATF_E_USAGE &&
              strstr(err, "atf_kernel_adapted"), "vector block alone: %s", err);
    free(H);
    free(D);
    free(J);
    free(Kref);
    free(K0);
    free(K);
    free(Kd);
    free(K17);
}

/* Theorem 1: a one-block vector problem, the adapted kernel with the result's factors equals
 * K0 + (s² − 1) ‖β‖⁻² (Aβ)(Aβ)ᵀ. */
static void test_theorem1(void)
{
    atf_test_rng rng;
    atf_test_rng_seed(&rng, 9);
    char err[ATF_ERRLEN];
    int N = 6, C = 1, P = 9, M = N;
    atf_problem *p = calloc(1, sizeof *p);
    p->N = N;
    p->C = C;
    p->M = M;
    p->r = atf_test_new_normal(&rng, (size_t)M);
    p->nblocks = 1;
    p->blocks = calloc(1, sizeof *p->blocks);
    /* two statements: the order of two draws among one call's arguments is unspecified */
    double *H = atf_test_new_normal(&rng, (size_t)N * P);
    double *D = atf_test_new_normal(&rng, (size_t)M);
    p->blocks[0] = factored_block(N, C, P, 1, H, D);
    CHECK(atf_problem_validate(p, "theorem1", err) == ATF_OK, "validate: %s", err);
    atf_result *res = atf_result_alloc(p);
    for (int i = 0; i < P; i++)
        res->blocks[0].B[i] = 2.0 * atf_test_normal(&rng);
    CHECK(atf_result_factors(res, p, err) == ATF_OK, "factors: %s", err);
    double *K0 = calloc((size_t)M * M, sizeof *K0), *Kad = calloc((size_t)M * M, sizeof *Kad);
    double *Kt = calloc((size_t)M * M, sizeof *Kt), s = 0.0;
    atf_kernel_ntk_block(&p->blocks[0], K0, err);
    CHECK(atf_kernel_adapted_block(&p->blocks[0], &res->blocks[0], Kad, err) == ATF_OK,
          "adapted: %s", err);
    CHECK(atf_kernel_theorem1(p, res, K0, Kt, &s, err) == ATF_OK, "theorem1: %s", err);
    CHECK(s > 1.0, "theorem 1: s = %g should exceed 1 for a nonzero beta", s);
    CHECK(max_rel_diff((size_t)M * M, Kt, Kad) < 1e-12, "theorem 1 vs adapted kernel: %g",
          max_rel_diff((size_t)M * M, Kt, Kad));
    /* and s is the argmin of ω(z) + ‖β‖²/z² for ω = (z − 1)²: derivative zero there */
    double nb2 = 0.0;
    for (int i = 0; i < P; i++)
        nb2 += res->blocks[0].B[i] * res->blocks[0].B[i];
    double grad = 2.0 * (s - 1.0) - 2.0 * nb2 / (s * s * s);
    CHECK(fabs(grad) < 1e-6 * (1.0 + nb2), "theorem 1: s is not stationary (%g)", grad);
    free(K0);
    free(Kad);
    free(Kt);
    atf_result_free(res);
    atf_problem_free(p);
}

/* ---------------------------------------------------------------- path averaging */

static void test_path_average(int bias)
{
    char err[ATF_ERRLEN];
    atf_arch arch = {.L = 3, .widths = {4, 5, 6, 2}, .bias = {bias, bias, bias},
                     .param = ATF_PARAM_STANDARD};
    atf_mlp *m0 = NULL, *m1 = NULL, *d = NULL;
    atf_mlp_create(&arch, 1, &m0, err);
    atf_mlp_create(&arch, 2, &d, err);
    m1 = atf_mlp_clone(m0);
    for (int l = 0; l < arch.L; l++) { /* θ1 = θ0 + 0.5 · random direction */
        for (int i = 0; i < arch.widths[l] * arch.widths[l + 1]; i++)
            m1->W[l][i] += 0.5 * d->W[l][i];
        for (int q = 0; bias && q < arch.widths[l + 1]; q++)
            m1->b[l][q] = 0.3 * (q - 1);
    }
    atf_test_rng rng;
    atf_test_rng_seed(&rng, 4);
    int N = 5, C = 2, M = N * C, T = 4;
    double *X = atf_test_new_normal(&rng, (size_t)N * 4);
    size_t MM = (size_t)M * M;
    double *Km = calloc(MM, sizeof *Km), *Kh = calloc(MM, sizeof *Kh), *Kref = calloc(MM, 8);
    CHECK(atf_kernel_path_average(m0, m1, N, X, T, ATF_PATH_MATERIALIZE, Km, NULL, err) == ATF_OK,
          "materialize: %s", err);
    CHECK(atf_kernel_path_average(m0, m1, N, X, T, ATF_PATH_HADAMARD, Kh, NULL, err) == ATF_OK,
          "hadamard: %s", err);
    CHECK(max_rel_diff(MM, Km, Kh) < 1e-12, "path average: strategies differ by %g",
          max_rel_diff(MM, Km, Kh));

    /* naive reference: average the dense per-block Jacobians over t = j/(T−1), then J̄ J̄ᵀ */
    atf_mlp *th = atf_mlp_clone(m0);
    atf_jacobian J;
    atf_mlp_jacobian(m0, N, X, &J, err);
    int nb = J.nblocks;
    atf_jacobian_free(&J);
    for (int b = 0; b < nb; b++) {
        double *avg = NULL;
        int P = 0, Q = 0;
        for (int t = 0; t < T; t++) {
            atf_mlp_interpolate(m0, m1, (double)t / (T - 1), th);
            atf_mlp_jacobian(th, N, X, &J, err);
            P = J.blocks[b].rows;
            Q = J.blocks[b].cols;
            double *Jd = materialise(N, C, P, Q, J.blocks[b].H, J.blocks[b].D);
            if (!avg)
                avg = calloc((size_t)M * P * Q, sizeof *avg);
            for (size_t i = 0; i < (size_t)M * P * Q; i++)
                avg[i] += Jd[i] / T;
            free(Jd);
            atf_jacobian_free(&J);
        }
        double *Kb = naive_gram(M, P * Q, avg);
        for (size_t i = 0; i < MM; i++)
            Kref[i] += Kb[i];
        free(Kb);
        free(avg);
    }
    CHECK(max_rel_diff(MM, Km, Kref) < 1e-12, "path average vs naive average: %g",
          max_rel_diff(MM, Km, Kref));

    /* T = 1 is the NTK at θ0 */
    double *K1 = calloc(MM, sizeof *K1), *K0 = calloc(MM, sizeof *K0);
    atf_kernel_path_average(m0, m1, N, X, 1, ATF_PATH_AUTO, K1, NULL, err);
    atf_kernel_mlp(m0, N, X, K0, NULL, err);
    CHECK(max_rel_diff(MM, K1, K0) < 1e-13, "T = 1 differs from K0: %g", max_rel_diff(MM, K1, K0));
    CHECK(atf_kernel_path_average(m0, m1, N, X, 0, ATF_PATH_AUTO, K1, NULL, err) == ATF_E_USAGE,
          "T = 0 accepted");
    CHECK(atf_path_cost(ATF_PATH_AUTO, 500, 1, 784, 128, 50) ==
              fmin(atf_path_cost(ATF_PATH_MATERIALIZE, 500, 1, 784, 128, 50),
                   atf_path_cost(ATF_PATH_HADAMARD, 500, 1, 784, 128, 50)),
          "auto cost is not the minimum");

    free(X);
    free(Km);
    free(Kh);
    free(Kref);
    free(K1);
    free(K0);
    atf_mlp_free(m0);
    atf_mlp_free(m1);
    atf_mlp_free(d);
    atf_mlp_free(th);
}

/* ---------------------------------------------------------------- alignments */

static void test_alignment(void)
{
    int n = 3;
    double A[9] = {2, 1, 0, 1, 3, 1, 0, 1, 4}, B[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    /* ⟨A, I⟩ = 9, ‖A‖² = 4+9+16+2+2 = 33, ‖I‖² = 3 */
    CHECK(fabs(atf_kernel_cosine(n, A, B) - 9.0 / sqrt(99.0)) < 1e-15, "cosine");
    double Ac[9], Bc[9], r[3] = {0}, g = 0.0; /* centered copies, then cosine */
    for (int i = 0; i < 9; i++)
        g += A[i] / 9.0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            r[i] += A[i * 3 + j] / 3.0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            Ac[i * 3 + j] = A[i * 3 + j] - r[i] - r[j] + g;
            Bc[i * 3 + j] = (i == j) - 1.0 / 3.0;
        }
    CHECK(fabs(atf_kernel_cka(n, A, B) - atf_kernel_cosine(n, Ac, Bc)) < 1e-15, "cka");
    CHECK(fabs(atf_kernel_cka(n, A, A) - 1.0) < 1e-15, "cka self");
}

int main(void)
{
    test_rng();
    for (int bias = 0; bias <= 1; bias++) {
        test_jacobian_fd(bias, ATF_PARAM_STANDARD);
        test_jacobian_fd(bias, ATF_PARAM_NTK);
        test_path_average(bias);
    }
    test_grams_and_adapted();
    test_entrywise(1);
    test_entrywise(2);
    test_theorem1();
    test_alignment();
    return atf_test_finish("tangent_math");
}
