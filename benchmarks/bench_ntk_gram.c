/* bench_ntk_gram.c — NTK Gram matrix of a 784-128-128-1 ReLU MLP (no bias, seed 1) on the first
 * N MNIST digits of data/mnist (standardised per image), two ways side by side:
 *   factored:     forward + batched backward (H, D per layer), then Σ_ℓ (H Hᵀ) ∘ (D Dᵀ);
 *   materialised: the per-layer Jacobians J_ℓ (N × P·Q) formed from H and D, then Σ_ℓ J_ℓ J_ℓᵀ
 *                 (SYRK) — what a generic per-example-gradient code does.
 * Reports seconds of each stage and the max relative difference of the two Grams.
 * Usage: bench_ntk_gram [N ...]   (default 500 2000; data from scripts/fetch_mnist.sh) */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf_features.h"
#include "atf_util.h"

static int load_digits(int N, double **X, char *err)
{
    atf_idx idx;
    const char *path = "data/mnist/train-images-idx3-ubyte";
    if (atf_idx_read(path, &idx, err)) {
        fprintf(stderr, "bench_ntk_gram: %s (run scripts/fetch_mnist.sh from the repository)\n",
                err);
        return -1;
    }
    if (idx.ndims != 3 || idx.dims[0] < N || idx.dims[1] * idx.dims[2] != 784) {
        fprintf(stderr, "bench_ntk_gram: %s has fewer than %d 28x28 digits\n", path, N);
        atf_idx_free(&idx);
        return -1;
    }
    *X = malloc((size_t)N * 784 * sizeof **X);
    for (size_t i = 0; i < (size_t)N * 784; i++)
        (*X)[i] = idx.data[i] / 255.0;
    atf_standardize_rows(N, 784, *X);
    atf_idx_free(&idx);
    return 0;
}

/* Σ_ℓ J_ℓ J_ℓᵀ with J_ℓ row i = vec(h_i δ_iᵀ) formed explicitly (C = 1). */
static int materialised_gram(const atf_jacobian *J, double *K, double *t_build, double *t_gram)
{
    int N = J->N;
    *t_build = *t_gram = 0.0;
    for (int b = 0; b < J->nblocks; b++) {
        const atf_jac_block *jb = &J->blocks[b];
        size_t PQ = (size_t)jb->rows * jb->cols;
        double t0 = atf_now();
        double *Jd = malloc((size_t)N * PQ * sizeof *Jd);
        if (!Jd)
            return -1;
        for (int i = 0; i < N; i++)
            for (int a = 0; a < jb->rows; a++)
                for (int c = 0; c < jb->cols; c++)
                    Jd[(size_t)i * PQ + (size_t)a * jb->cols + c] =
                        jb->H[(size_t)i * jb->rows + a] * jb->D[(size_t)i * jb->cols + c];
        double t1 = atf_now();
        cblas_dsyrk(CblasRowMajor, CblasUpper, CblasNoTrans, N, (int)PQ, 1.0, Jd, (int)PQ, 1.0,
                    K, N);
        *t_gram += atf_now() - t1;
        *t_build += t1 - t0;
        free(Jd);
    }
    for (int a = 0; a < N; a++)
        for (int c = 0; c < a; c++)
            K[(size_t)a * N + c] = K[(size_t)c * N + a];
    return 0;
}

static int bench(int N, const atf_mlp *m)
{
    char err[ATF_ERRLEN];
    double *X = NULL;
    if (load_digits(N, &X, err))
        return -1;
    size_t NN = (size_t)N * N;
    double *Kf = calloc(NN, sizeof *Kf), *Km = calloc(NN, sizeof *Km);
    atf_jacobian J;
    double t0 = atf_now();
    if (atf_mlp_jacobian(m, N, X, &J, err)) {
        fprintf(stderr, "bench_ntk_gram: %s\n", err);
        return -1;
    }
    double t_jac = atf_now() - t0;
    t0 = atf_now();
    for (int b = 0; b < J.nblocks; b++)
        atf_factored_gram(N, 1, J.blocks[b].rows, J.blocks[b].cols, J.blocks[b].H, J.blocks[b].D,
                          1.0, Kf);
    double t_had = atf_now() - t0, t_build, t_gram;
    if (materialised_gram(&J, Km, &t_build, &t_gram)) {
        fprintf(stderr, "bench_ntk_gram: out of memory materialising N = %d\n", N);
        return -1;
    }
    double diff = 0.0, scale = 0.0;
    for (size_t i = 0; i < NN; i++) {
        diff = fmax(diff, fabs(Kf[i] - Km[i]));
        scale = fmax(scale, fabs(Km[i]));
    }
    printf("%5d  %10.3f  %10.3f  %10.3f  %12.3f  %12.3f  %12.3f  %9.1e\n", N, t_jac, t_had,
           t_jac + t_had, t_build, t_gram, t_jac + t_build + t_gram, diff / scale);
    atf_jacobian_free(&J);
    free(X);
    free(Kf);
    free(Km);
    return 0;
}

int main(int argc, char **argv)
{
    atf_arch arch = {.L = 3, .widths = {784, 128, 128, 1}, .bias = {0},
                     .param = ATF_PARAM_STANDARD};
    atf_mlp *m = NULL;
    char err[ATF_ERRLEN];
    if (atf_mlp_create(&arch, 1, &m, err)) {
        fprintf(stderr, "bench_ntk_gram: %s\n", err);
        return 1;
    }
    printf("NTK Gram of a 784-128-128-1 MLP (%lld parameters), seconds\n",
           (long long)atf_mlp_nparams(m));
    printf("%5s  %10s  %10s  %10s  %12s  %12s  %12s  %9s\n", "N", "jacobian", "hadamard",
           "total", "materialise", "J J^T", "total", "rel.diff");
    int rc = 0;
    if (argc > 1) {
        for (int i = 1; i < argc && !rc; i++)
            rc = bench(atoi(argv[i]), m);
    } else {
        rc = bench(500, m);
        if (!rc)
            rc = bench(2000, m);
    }
    atf_mlp_free(m);
    return rc ? 1 : 0;
}
