/* kernel.c — NTK, exact adapted kernel (eq. 7), the paper's eq. 17, Theorem 1's kernel, outer
 * products and alignments (SPEC §5).
 *
 * For a factored block the transformation W ↦ M̂1 W M̂2 maps the feature h δᵀ to M̂1 h δᵀ M̂2, so
 * K = (H M̂1² Hᵀ) ∘ (D M̂2² Dᵀ) expanded to rows, and with M̂1² = I + U diag(s1²−1) Uᵀ:
 * H M̂1² Hᵀ = H Hᵀ + (HU) diag(s1²−1) (HU)ᵀ — N × k products only, never P × P. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "atf_tangent.h"

static atf_error oom(char *err, const char *what)
{
    atf_errorf(err, "kernel: out of memory (%s)", what);
    return ATF_E_NOMEM;
}

atf_error atf_kernel_ntk_block(const atf_block *b, double *K, char *err)
{
    if (b->kind == ATF_OP_FACTORED) {
        if (atf_factored_gram(b->N, b->C, b->rows, b->cols, b->H, b->H, b->D, b->D, 1.0, K, NULL))
            return oom(err, b->name);
        return ATF_OK;
    }
    atf_block_gram(b, 1.0, K);
    return ATF_OK;
}

static atf_error check_factors(const atf_block *b, const atf_result_block *rb, char *err)
{
    if (rb->rows != b->rows || rb->cols != b->cols || strcmp(rb->name, b->name) != 0) {
        atf_errorf(err, "kernel: result block %s (%d x %d) does not match problem block %s "
                   "(%d x %d)", rb->name, rb->rows, rb->cols, b->name, b->rows, b->cols);
        return ATF_E_INPUT;
    }
    if (!rb->U || !rb->V || !rb->s1 || !rb->s2) {
        atf_errorf(err, "kernel: result block %s: singular vectors or factors missing", rb->name);
        return ATF_E_INPUT;
    }
    return ATF_OK;
}

/* S [n × n] = A Aᵀ + (A X) diag(w) (A X)ᵀ with A [n × p], X [p × k]. */
static atf_error side_gram(int n, int p, int k, const double *A, const double *X,
                           const double *w, double *S)
{
    double *AX = malloc((size_t)n * (k > 0 ? k : 1) * sizeof *AX);
    double *AXw = malloc((size_t)n * (k > 0 ? k : 1) * sizeof *AXw);
    if (!AX || !AXw) {
        free(AX);
        free(AXw);
        return ATF_E_NOMEM;
    }
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, k, p, 1.0, A, p, X, k, 0.0, AX, k);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < k; j++)
            AXw[(size_t)i * k + j] = AX[(size_t)i * k + j] * w[j];
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, p, 1.0, A, p, A, p, 0.0, S, n);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, k, 1.0, AXw, k, AX, k, 1.0, S, n);
    free(AX);
    free(AXw);
    return ATF_OK;
}

static double *squares_minus_one(int k, const double *s)
{
    double *w = malloc((size_t)(k > 0 ? k : 1) * sizeof *w);
    for (int j = 0; w && j < k; j++)
        w[j] = s[j] * s[j] - 1.0;
    return w;
}

static atf_error adapted_factored(const atf_block *b, const atf_result_block *rb, double *K,
                                  char *err)
{
    int N = b->N, M = b->M, C = b->C, k = rb->k;
    double *S1 = malloc((size_t)N * N * sizeof *S1), *S2 = malloc((size_t)M * M * sizeof *S2);
    double *w1 = squares_minus_one(k, rb->s1), *w2 = squares_minus_one(k, rb->s2);
    atf_error e = ATF_OK;
    if (!S1 || !S2 || !w1 || !w2 || side_gram(N, b->rows, k, b->H, rb->U, w1, S1) ||
        side_gram(M, b->cols, k, b->D, rb->V, w2, S2)) {
        e = oom(err, b->name);
    } else {
        for (int a = 0; a < M; a++)
            for (int c = 0; c < M; c++)
                K[(size_t)a * M + c] += S1[(size_t)(a / C) * N + c / C] * S2[(size_t)a * M + c];
    }
    free(S1);
    free(S2);
    free(w1);
    free(w2);
    return e;
}

/* Row-wise G ← G + U diag(a1) Uᵀ G, then G ← G + G V diag(a2) Vᵀ for every row G (P × Q) of J:
 * applies M̂1 · M̂2 with a = s − 1 (so the Gram of the result carries M̂²). */
static atf_error transform_rows(int M, int P, int Q, int k, double *J, const double *U,
                                const double *a1, const double *V, const double *a2)
{
    double *T = malloc((size_t)(k > 0 ? k : 1) * (P > Q ? P : Q) * sizeof *T);
    if (!T)
        return ATF_E_NOMEM;
    for (int m = 0; m < M; m++) {
        double *G = J + (size_t)m * P * Q;
        /* T [k × Q] = diag(a1) Uᵀ G;  G += U T */
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, k, Q, P, 1.0, U, k, G, Q, 0.0, T, Q);
        for (int j = 0; j < k; j++)
            cblas_dscal(Q, a1[j], T + (size_t)j * Q, 1);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, P, Q, k, 1.0, U, k, T, Q, 1.0, G, Q);
        /* T [P × k] = G V diag(a2);  G += T Vᵀ */
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, P, k, Q, 1.0, G, Q, V, k, 0.0, T, k);
        for (int i = 0; i < P; i++)
            for (int j = 0; j < k; j++)
                T[(size_t)i * k + j] *= a2[j];
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, P, Q, k, 1.0, T, k, V, k, 1.0, G, Q);
    }
    free(T);
    return ATF_OK;
}

static atf_error adapted_dense(const atf_block *b, const atf_result_block *rb, double *K,
                               char *err)
{
    int M = b->M, P = b->rows, Q = b->cols, k = rb->k;
    double *J = atf_block_dense(b);
    double *a1 = malloc((size_t)(k > 0 ? k : 1) * sizeof *a1);
    double *a2 = malloc((size_t)(k > 0 ? k : 1) * sizeof *a2);
    atf_error e = ATF_OK;
    if (!J || !a1 || !a2) {
        e = oom(err, b->name);
    } else {
        for (int j = 0; j < k; j++) {
            a1[j] = rb->s1[j] - 1.0;
            a2[j] = rb->s2[j] - 1.0;
        }
        if (transform_rows(M, P, Q, k, J, rb->U, a1, rb->V, a2))
            e = oom(err, b->name);
        else
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, M, P * Q, 1.0, J, P * Q, J,
                        P * Q, 1.0, K, M);
    }
    free(J);
    free(a1);
    free(a2);
    return e;
}

atf_error atf_kernel_adapted_block(const atf_block *b, const atf_result_block *rb, double *K,
                                   char *err)
{
    atf_error e = check_factors(b, rb, err);
    if (e)
        return e;
    return b->kind == ATF_OP_FACTORED ? adapted_factored(b, rb, K, err)
                                      : adapted_dense(b, rb, K, err);
}

/* Gv [M × k]: column j is A_b vec(u_j v_jᵀ). */
static atf_error rank_one_images(const atf_block *b, const atf_result_block *rb, double *Gv)
{
    int N = b->N, M = b->M, C = b->C, P = b->rows, Q = b->cols, k = rb->k;
    if (b->kind == ATF_OP_FACTORED) {
        /* (A vec(u vᵀ))_m = (h_i·u)(δ_m·v) */
        double *HU = malloc((size_t)N * k * sizeof *HU);
        if (!HU)
            return ATF_E_NOMEM;
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, k, P, 1.0, b->H, P, rb->U, k,
                    0.0, HU, k);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, k, Q, 1.0, b->D, Q, rb->V, k,
                    0.0, Gv, k);
        for (int m = 0; m < M; m++)
            for (int j = 0; j < k; j++)
                Gv[(size_t)m * k + j] *= HU[(size_t)(m / C) * k + j];
        free(HU);
        return ATF_OK;
    }
    double *uv = malloc((size_t)P * Q * sizeof *uv), *g = malloc((size_t)M * sizeof *g);
    if (!uv || !g) {
        free(uv);
        free(g);
        return ATF_E_NOMEM;
    }
    for (int j = 0; j < k; j++) {
        for (int p = 0; p < P; p++)
            for (int q = 0; q < Q; q++)
                uv[(size_t)p * Q + q] = rb->U[(size_t)p * k + j] * rb->V[(size_t)q * k + j];
        atf_block_apply(b, uv, 0.0, g);
        for (int m = 0; m < M; m++)
            Gv[(size_t)m * k + j] = g[m];
    }
    free(uv);
    free(g);
    return ATF_OK;
}

atf_error atf_kernel_paper17_block(const atf_block *b, const atf_result_block *rb, double *K,
                                   char *err)
{
    atf_error e = check_factors(b, rb, err);
    if (e)
        return e;
    int M = b->M, k = rb->k;
    double *Gv = malloc((size_t)M * (k > 0 ? k : 1) * sizeof *Gv);
    double *Gw = malloc((size_t)M * (k > 0 ? k : 1) * sizeof *Gw);
    if (!Gv || !Gw || rank_one_images(b, rb, Gv)) {
        free(Gv);
        free(Gw);
        return oom(err, b->name);
    }
    for (int m = 0; m < M; m++)
        for (int j = 0; j < k; j++)
            Gw[(size_t)m * k + j] =
                Gv[(size_t)m * k + j] * (rb->s1[j] * rb->s1[j] * rb->s2[j] * rb->s2[j] - 1.0);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, M, k, 1.0, Gw, k, Gv, k, 1.0, K, M);
    free(Gv);
    free(Gw);
    return ATF_OK;
}

void atf_kernel_outer(int M, const double *v, double *K)
{
    for (int a = 0; a < M; a++)
        for (int c = 0; c < M; c++)
            K[(size_t)a * M + c] = v[a] * v[c];
}

atf_error atf_kernel_theorem1(const atf_problem *p, const atf_result *res, const double *K0,
                              double *K, double *s_out, char *err)
{
    if (res->nblocks != p->nblocks || res->nblocks < 1) {
        atf_errorf(err, "kernel: result has %d blocks but the problem %d", res->nblocks,
                   p->nblocks);
        return ATF_E_INPUT;
    }
    atf_penalty pen;
    atf_error e = atf_penalty_parse(res->blocks[0].penalty_spec[0] ? res->blocks[0].penalty_spec
                                                                   : p->blocks[0].penalty_spec,
                                    &pen, err);
    if (e)
        return e;
    size_t M = (size_t)p->M;
    double *Ab = calloc(M, sizeof *Ab);
    if (!Ab)
        return oom(err, "theorem 1");
    double norm2 = 0.0;
    for (int l = 0; l < p->nblocks; l++) {
        const atf_result_block *rb = &res->blocks[l];
        for (size_t i = 0; i < (size_t)rb->rows * rb->cols; i++)
            norm2 += rb->B[i] * rb->B[i];
        atf_block_apply(&p->blocks[l], rb->B, 1.0, Ab);
    }
    double s1 = 1.0, s2 = 1.0;
    atf_penalty_factors(&pen, sqrt(norm2), &s1, NULL, &s2);
    double s = s1 * s2, coef = norm2 > 0.0 ? (s * s - 1.0) / norm2 : 0.0;
    for (size_t a = 0; a < M; a++)
        for (size_t c = 0; c < M; c++)
            K[a * M + c] = K0[a * M + c] + coef * Ab[a] * Ab[c];
    if (s_out)
        *s_out = s;
    free(Ab);
    return ATF_OK;
}

double atf_kernel_cosine(int n, const double *K1, const double *K2)
{
    double dot = 0.0, n1 = 0.0, n2 = 0.0;
    for (size_t i = 0; i < (size_t)n * n; i++) {
        dot += K1[i] * K2[i];
        n1 += K1[i] * K1[i];
        n2 += K2[i] * K2[i];
    }
    return n1 > 0.0 && n2 > 0.0 ? dot / sqrt(n1 * n2) : NAN;
}

/* Row means r, column means c and grand mean g of an n × n matrix. */
static void means(int n, const double *K, double *r, double *c, double *g)
{
    memset(c, 0, (size_t)n * sizeof *c);
    *g = 0.0;
    for (int a = 0; a < n; a++) {
        double s = 0.0;
        for (int b = 0; b < n; b++) {
            s += K[(size_t)a * n + b];
            c[b] += K[(size_t)a * n + b];
        }
        r[a] = s / n;
        *g += s;
    }
    for (int b = 0; b < n; b++)
        c[b] /= n;
    *g /= (double)n * n;
}

/* Centering on the fly (K − r1ᵀ − 1cᵀ + g) avoids the cancellation of the expanded formula
 * when a kernel has a large constant part, as ReLU NTKs do. */
double atf_kernel_cka(int n, const double *K1, const double *K2)
{
    double *buf = malloc((size_t)4 * n * sizeof *buf);
    if (!buf)
        return NAN;
    double *r1 = buf, *c1 = buf + n, *r2 = buf + 2 * n, *c2 = buf + 3 * n, g1, g2;
    means(n, K1, r1, c1, &g1);
    means(n, K2, r2, c2, &g2);
    double dot = 0.0, n1 = 0.0, n2 = 0.0;
    for (int a = 0; a < n; a++) {
        for (int b = 0; b < n; b++) {
            double x = K1[(size_t)a * n + b] - r1[a] - c1[b] + g1;
            double y = K2[(size_t)a * n + b] - r2[a] - c2[b] + g2;
            dot += x * y;
            n1 += x * x;
            n2 += y * y;
        }
    }
    free(buf);
    return n1 > 0.0 && n2 > 0.0 ? dot / sqrt(n1 * n2) : NAN;
}

atf_error atf_kernel_mlp(const atf_mlp *m, int N, const double *X, double *K, double *K_blocks,
                         char *err)
{
    atf_jacobian J;
    atf_error e = atf_mlp_jacobian(m, N, X, &J, err);
    if (e)
        return e;
    size_t MM = (size_t)J.M * J.M;
    double *work = malloc(((size_t)N * N + MM) * sizeof *work);
    if (!work) {
        atf_jacobian_free(&J);
        return oom(err, "network NTK");
    }
    for (int b = 0; b < J.nblocks; b++) {
        const atf_jac_block *jb = &J.blocks[b];
        atf_factored_gram(N, J.C, jb->rows, jb->cols, jb->H, jb->H, jb->D, jb->D, 1.0, K, work);
        if (K_blocks) {
            memset(K_blocks + b * MM, 0, MM * sizeof *K_blocks);
            atf_factored_gram(N, J.C, jb->rows, jb->cols, jb->H, jb->H, jb->D, jb->D, 1.0,
                              K_blocks + b * MM, work);
        }
    }
    free(work);
    atf_jacobian_free(&J);
    return ATF_OK;
}
