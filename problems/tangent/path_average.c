/* path_average.c — the path-averaged tangent kernel of a trained network (paper eq. 2 / 20).
 *
 * J̄_m = (1/T) Σ_t h_{t,i} δ_{t,m}ᵀ for block ℓ is a sum of T rank-one P × Q matrices, so K̄ can
 * be formed two ways (see atf_kernel.h for the cost model):
 *   materialise: J̄ (M × P·Q) in column panels, K̄ += J̄ J̄ᵀ by SYRK;
 *   Hadamard:    K̄ = T⁻² Σ_{t,t'} (H_t H_t'ᵀ) ∘ (D_t D_t'ᵀ), pairs t < t' counted twice.
 * The factors of all T points are kept stacked per block: Hs [N × T·P] holds H_t in columns
 * t·P.., Ds [M × T·Q] holds D_t in columns t·Q.. — so row i of Hs, seen as a T × P matrix, is
 * exactly what the materialising GEMM needs. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf_kernel.h"

#define PANEL_BUDGET ((size_t)1 << 24) /* doubles per materialised panel (128 MiB) */

atf_error atf_path_method_parse(const char *text, atf_path_method *out, char *err)
{
    if (!strcmp(text, "auto"))
        *out = ATF_PATH_AUTO;
    else if (!strcmp(text, "materialize"))
        *out = ATF_PATH_MATERIALIZE;
    else if (!strcmp(text, "hadamard"))
        *out = ATF_PATH_HADAMARD;
    else {
        atf_errorf(err, "path method: '%s' unknown (expected auto, materialize or hadamard)",
                   text);
        return ATF_E_USAGE;
    }
    return ATF_OK;
}

double atf_path_cost(atf_path_method method, int N, int C, int P, int Q, int T)
{
    double n = N, m = (double)N * C, p = P, q = Q, t = T;
    if (method == ATF_PATH_MATERIALIZE)
        return 2.0 * t * m * p * q + m * m * p * q;
    if (method == ATF_PATH_HADAMARD)
        return t * (t + 1.0) / 2.0 * (2.0 * n * n * p + 2.0 * m * m * q + 2.0 * m * m);
    double a = atf_path_cost(ATF_PATH_MATERIALIZE, N, C, P, Q, T);
    double b = atf_path_cost(ATF_PATH_HADAMARD, N, C, P, Q, T);
    return a < b ? a : b;
}

typedef struct {
    int rows, cols;
    double *Hs; /* [N × T·rows] */
    double *Ds; /* [M × T·cols] */
} stacked_block;

static void free_stacks(stacked_block *s, int n)
{
    for (int b = 0; s && b < n; b++) {
        free(s[b].Hs);
        free(s[b].Ds);
    }
    free(s);
}

static int same_arch(const atf_arch *a, const atf_arch *b)
{
    if (a->L != b->L || a->param != b->param)
        return 0;
    for (int l = 0; l <= a->L; l++)
        if (a->widths[l] != b->widths[l])
            return 0;
    for (int l = 0; l < a->L; l++)
        if (a->bias[l] != b->bias[l])
            return 0;
    char sa[ATF_MAX_LAYERS * ATF_ACTIVATION_SPECLEN], sb[sizeof sa];
    atf_arch_activation_specs(a, sa, sizeof sa);
    atf_arch_activation_specs(b, sb, sizeof sb);
    return !strcmp(sa, sb);
}

/* "widths 4,5,1, bias 0, relu, standard" (bias: 0, 1 or the layers, e.g. "layers:1,3") for
 * messages. */
static void describe_arch(const atf_arch *a, char *buf, size_t len)
{
    char acts[ATF_MAX_LAYERS * ATF_ACTIVATION_SPECLEN], bias[64] = "";
    int nb = atf_arch_has_bias(a);
    for (int l = 0, k = 0; nb > 0 && nb < a->L && l < a->L; l++)
        if (a->bias[l])
            k += snprintf(bias + k, sizeof bias - (size_t)k, "%s%d", k ? "," : "layers:", l + 1);
    if (!bias[0])
        snprintf(bias, sizeof bias, "%d", nb > 0);
    atf_arch_activation_specs(a, acts, sizeof acts);
    size_t n = (size_t)snprintf(buf, len, "widths ");
    for (int l = 0; l <= a->L && n < len; l++)
        n += (size_t)snprintf(buf + n, len - n, "%s%d", l ? "," : "", a->widths[l]);
    if (n < len)
        snprintf(buf + n, len - n, ", bias %s, %.100s%s%s", bias, acts, acts[0] ? ", " : "",
                 atf_param_name(a->param));
}

/* Jacobians at the T points of the segment, stacked per block. */
static atf_error collect(const atf_mlp *m0, const atf_mlp *m1, int N, const double *X, int T,
                         stacked_block **out, int *nblocks, char *err)
{
    atf_mlp *theta = atf_mlp_clone(m0);
    stacked_block *st = NULL;
    atf_error e = theta ? ATF_OK : ATF_E_NOMEM;
    int nb = 0;
    for (int t = 0; !e && t < T; t++) {
        atf_mlp_interpolate(m0, m1, T > 1 ? (double)t / (T - 1) : 0.0, theta);
        atf_jacobian J;
        if ((e = atf_mlp_jacobian(theta, N, X, &J, err)))
            break;
        if (!st) {
            nb = J.nblocks;
            st = calloc((size_t)nb, sizeof *st);
            for (int b = 0; st && b < nb; b++) {
                st[b].rows = J.blocks[b].rows;
                st[b].cols = J.blocks[b].cols;
                st[b].Hs = malloc((size_t)N * T * st[b].rows * sizeof(double));
                st[b].Ds = malloc((size_t)J.M * T * st[b].cols * sizeof(double));
                if (!st[b].Hs || !st[b].Ds)
                    e = ATF_E_NOMEM;
            }
            if (!st)
                e = ATF_E_NOMEM;
        }
        for (int b = 0; !e && b < nb; b++) {
            int P = st[b].rows, Q = st[b].cols;
            for (int i = 0; i < N; i++)
                memcpy(st[b].Hs + (size_t)i * T * P + (size_t)t * P, J.blocks[b].H + (size_t)i * P,
                       (size_t)P * sizeof(double));
            for (int m = 0; m < J.M; m++)
                memcpy(st[b].Ds + (size_t)m * T * Q + (size_t)t * Q, J.blocks[b].D + (size_t)m * Q,
                       (size_t)Q * sizeof(double));
        }
        atf_jacobian_free(&J);
    }
    atf_mlp_free(theta);
    if (e) {
        free_stacks(st, nb);
        if (e == ATF_E_NOMEM)
            atf_errorf(err, "path average: out of memory for %d points", T);
        return e;
    }
    *out = st;
    *nblocks = nb;
    return ATF_OK;
}

/* Kb [M × M] = J̄ J̄ᵀ, J̄ built in panels of pr parameter rows. */
static atf_error materialize(const stacked_block *s, int N, int C, int T, double *Kb)
{
    int M = N * C, P = s->rows, Q = s->cols;
    size_t per_row = (size_t)M * Q;
    int pr = (int)(PANEL_BUDGET / (per_row ? per_row : 1));
    pr = pr < 1 ? 1 : (pr > P ? P : pr);
    double *Jp = malloc((size_t)M * pr * Q * sizeof *Jp);
    if (!Jp)
        return ATF_E_NOMEM;
    memset(Kb, 0, (size_t)M * M * sizeof *Kb);
    for (int p0 = 0; p0 < P; p0 += pr) {
        int w = P - p0 < pr ? P - p0 : pr;
        for (int m = 0; m < M; m++) {
            /* J̄_m[p0.., :] (w × Q) = (1/T) Hs_iᵀ (w × T) · Ds_m (T × Q) */
            const double *Hi = s->Hs + (size_t)(m / C) * T * P + p0;
            const double *Dm = s->Ds + (size_t)m * T * Q;
            cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, w, Q, T, 1.0 / T, Hi, P, Dm, Q,
                        0.0, Jp + (size_t)m * w * Q, Q);
        }
        cblas_dsyrk(CblasRowMajor, CblasUpper, CblasNoTrans, M, w * Q, 1.0, Jp, w * Q, 1.0, Kb,
                    M);
    }
    for (int a = 0; a < M; a++)
        for (int b = 0; b < a; b++)
            Kb[(size_t)a * M + b] = Kb[(size_t)b * M + a];
    free(Jp);
    return ATF_OK;
}

/* Kb = T⁻² Σ_{t,t'} (H_t H_t'ᵀ) ∘ (D_t D_t'ᵀ). */
static atf_error hadamard(const stacked_block *s, int N, int C, int T, double *Kb)
{
    int M = N * C, P = s->rows, Q = s->cols;
    double *HH = malloc((size_t)N * N * sizeof *HH), *DD = malloc((size_t)M * M * sizeof *DD);
    double *S = calloc((size_t)M * M, sizeof *S);
    if (!HH || !DD || !S) {
        free(HH);
        free(DD);
        free(S);
        return ATF_E_NOMEM;
    }
    memset(Kb, 0, (size_t)M * M * sizeof *Kb);
    for (int t = 0; t < T; t++) {
        for (int u = t; u < T; u++) {
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, N, P, 1.0, s->Hs + (size_t)t * P,
                        T * P, s->Hs + (size_t)u * P, T * P, 0.0, HH, N);
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, M, Q, 1.0, s->Ds + (size_t)t * Q,
                        T * Q, s->Ds + (size_t)u * Q, T * Q, 0.0, DD, M);
            double *target = u == t ? Kb : S; /* off-diagonal pairs are added twice below */
            for (int a = 0; a < M; a++)
                for (int b = 0; b < M; b++)
                    target[(size_t)a * M + b] += HH[(size_t)(a / C) * N + b / C] * DD[(size_t)a * M + b];
        }
    }
    double w = 1.0 / ((double)T * T);
    for (int a = 0; a < M; a++)
        for (int b = 0; b < M; b++)
            Kb[(size_t)a * M + b] = w * (Kb[(size_t)a * M + b] + S[(size_t)a * M + b] +
                                         S[(size_t)b * M + a]);
    free(HH);
    free(DD);
    free(S);
    return ATF_OK;
}

atf_error atf_kernel_path_average(const atf_mlp *m0, const atf_mlp *m1, int N, const double *X,
                                  int T, atf_path_method method, double *K, double *K_blocks,
                                  char *err)
{
    if (T < 1) {
        atf_errorf(err, "path average: %d path points (need T >= 1)", T);
        return ATF_E_USAGE;
    }
    if (!same_arch(&m0->arch, &m1->arch)) {
        char a0[256], a1[256];
        describe_arch(&m0->arch, a0, sizeof a0);
        describe_arch(&m1->arch, a1, sizeof a1);
        atf_errorf(err, "%s: architecture %s but %s has %s (the path average needs one "
                   "architecture)", m1->arch.origin[0] ? m1->arch.origin : "trained network", a1,
                   m0->arch.origin[0] ? m0->arch.origin : "the initial network", a0);
        return ATF_E_INPUT;
    }
    int C = m0->arch.widths[m0->arch.L], M = N * C, nb = 0;
    stacked_block *st = NULL;
    atf_error e = collect(m0, m1, N, X, T, &st, &nb, err);
    if (e)
        return e;
    double *Kb = malloc((size_t)M * M * sizeof *Kb);
    if (!Kb)
        e = ATF_E_NOMEM;
    for (int b = 0; !e && b < nb; b++) {
        atf_path_method use = method;
        if (use == ATF_PATH_AUTO)
            use = atf_path_cost(ATF_PATH_MATERIALIZE, N, C, st[b].rows, st[b].cols, T) <=
                          atf_path_cost(ATF_PATH_HADAMARD, N, C, st[b].rows, st[b].cols, T)
                      ? ATF_PATH_MATERIALIZE
                      : ATF_PATH_HADAMARD;
        e = use == ATF_PATH_MATERIALIZE ? materialize(&st[b], N, C, T, Kb)
                                        : hadamard(&st[b], N, C, T, Kb);
        if (e)
            break;
        cblas_daxpy(M * M, 1.0, Kb, 1, K, 1);
        if (K_blocks)
            memcpy(K_blocks + (size_t)b * M * M, Kb, (size_t)M * M * sizeof *Kb);
    }
    if (e == ATF_E_NOMEM)
        atf_errorf(err, "path average: out of memory");
    free(Kb);
    free_stacks(st, nb);
    return e;
}
