/* kernel.c — NTK, exact adapted kernel (eq. 7), the paper's eq. 17, Theorem 1's kernel, outer
 * products and alignments (docs/math.md §6, docs/tangent.md §5).
 *
 * For a factored block the transformation W ↦ M̂1 W M̂2 maps the feature h δᵀ to M̂1 h δᵀ M̂2, so
 * K = (H M̂1² Hᵀ) ∘ (D M̂2² Dᵀ) expanded to rows, and with M̂1² = I + U diag(s1²−1) Uᵀ:
 * H M̂1² Hᵀ = H Hᵀ + (HU) diag(s1²−1) (HU)ᵀ — N × k products only, never P × P. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "atf_kernel.h"
#include "result_internal.h"

static atf_error oom(char *err, const char *what)
{
    atf_errorf(err, "kernel: out of memory (%s)", what);
    return ATF_E_NOMEM;
}

atf_error atf_kernel_ntk_block(const atf_block *b, double *K, char *err)
{
    if (b->kind == ATF_OP_FACTORED) {
        if (atf_factored_gram(b->N, b->C, b->rows, b->cols, b->H, b->D, 1.0, K))
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
    if (rb->layout == ATF_FACTORS_VECTOR) {
        atf_errorf(err, "result block %s: vector factors (structure full) couple all blocks: "
                   "use atf_kernel_adapted / atf_kernel_paper17 on the whole result", rb->name);
        return ATF_E_USAGE;
    }
    const char *missing = atf_kernel_factors_missing(rb);
    if (missing) {
        atf_errorf(err, "result block %s: %s", rb->name, missing);
        return ATF_E_INPUT;
    }
    return ATF_OK;
}

const char *atf_kernel_factors_missing(const atf_result_block *rb)
{
    if (!rb->s1 || !rb->s2)
        return "factors s1, s2 missing";
    if (rb->k != atfr_layout_k(rb->layout, rb->rows, rb->cols))
        return "factor vectors s1, s2 have the wrong length for the layout";
    if (rb->layout == ATF_FACTORS_SPECTRAL && (!rb->U || !rb->V))
        return "singular vectors U, V missing";
    return NULL;
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

/* ---- entrywise factors (diagonal structure): every entry j of B is its own 1×1 block, so M̂
 * multiplies entry j's tangent feature g_j (column j of A_b) by s1_j s2_j and
 * K = Σ_j (s1_j s2_j)² g_j g_jᵀ. The functions below add K += Σ_j w_j g_j g_jᵀ for any weights. */

/* Factored block: g_{(a,q)} has entries h_ia δ_mq, so
 *   K_mm' = Σ_q δ_mq δ_m'q [H diag(w_:q) Hᵀ]_ii'   (one N × N product per column q), or
 *   K_mm' = Σ_a h_ia h_i'a [D diag(w_a:) Dᵀ]_mm'   (one M × M product per row a);
 * the cheaper order is chosen. Neither forms the M × P·Q Jacobian. */
static atf_error entrywise_factored(const atf_block *b, const double *w, double *K)
{
    int N = b->N, C = b->C, M = b->M, P = b->rows, Q = b->cols;
    double by_cols = (double)Q * ((double)N * N * P + (double)M * M);
    double by_rows = (double)P * ((double)M * M * Q + (double)M * M);
    int cols = by_cols <= by_rows;
    int n = cols ? N : M, inner = cols ? P : Q; /* T is n × n, the weighted side n × inner */
    const double *X = cols ? b->H : b->D;
    double *Xw = malloc((size_t)n * inner * sizeof *Xw), *T = malloc((size_t)n * n * sizeof *T);
    if (!Xw || !T) {
        free(Xw);
        free(T);
        return ATF_E_NOMEM;
    }
    for (int t = 0; t < (cols ? Q : P); t++) {
        /* Xw = X diag(weights of column t (cols) or row t (rows)) */
        for (int i = 0; i < n; i++)
            for (int j = 0; j < inner; j++)
                Xw[(size_t)i * inner + j] =
                    X[(size_t)i * inner + j] * (cols ? w[(size_t)j * Q + t] : w[(size_t)t * Q + j]);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, inner, 1.0, Xw, inner, X,
                    inner, 0.0, T, n);
        for (int m = 0; m < M; m++) {
            for (int m2 = 0; m2 < M; m2++) {
                double v = cols ? T[(size_t)(m / C) * N + m2 / C] * b->D[(size_t)m * Q + t] *
                                      b->D[(size_t)m2 * Q + t]
                                : T[(size_t)m * M + m2] * b->H[(size_t)(m / C) * P + t] *
                                      b->H[(size_t)(m2 / C) * P + t];
                K[(size_t)m * M + m2] += v;
            }
        }
    }
    free(Xw);
    free(T);
    return ATF_OK;
}

/* Dense and sparse blocks: K += (J diag(w)) Jᵀ, weighting J in column panels. */
static atf_error entrywise_dense(const atf_block *b, const double *w, double *K)
{
    enum { PANEL = 256 };
    int M = b->M;
    size_t n = (size_t)b->rows * b->cols;
    double *J = atf_block_dense(b), *Jw = malloc((size_t)M * PANEL * sizeof *Jw);
    if (!J || !Jw) {
        free(J);
        free(Jw);
        return ATF_E_NOMEM;
    }
    for (size_t c0 = 0; c0 < n; c0 += PANEL) {
        int width = (int)(n - c0 < PANEL ? n - c0 : PANEL);
        for (int m = 0; m < M; m++)
            for (int j = 0; j < width; j++)
                Jw[(size_t)m * width + j] = J[(size_t)m * n + c0 + j] * w[c0 + j];
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, M, width, 1.0, Jw, width,
                    J + c0, (int)n, 1.0, K, M);
    }
    free(J);
    free(Jw);
    return ATF_OK;
}

/* K += Σ_j ((s1_j s2_j)² − minus_one) g_j g_jᵀ: eq. 7 (minus_one = 0) or eq. 17's part without
 * K0 (minus_one = 1), which coincide up to K0 because 1×1 blocks have no cross terms. */
static atf_error adapted_entrywise(const atf_block *b, const atf_result_block *rb, int minus_one,
                                   double *K, char *err)
{
    double *w = malloc((size_t)rb->k * sizeof *w);
    if (!w)
        return oom(err, b->name);
    for (int j = 0; j < rb->k; j++) {
        double s = rb->s1[j] * rb->s2[j];
        w[j] = s * s - minus_one;
    }
    atf_error e = b->kind == ATF_OP_FACTORED ? entrywise_factored(b, w, K)
                                             : entrywise_dense(b, w, K);
    free(w);
    return e ? oom(err, b->name) : ATF_OK;
}

atf_error atf_kernel_adapted_block(const atf_block *b, const atf_result_block *rb, double *K,
                                   char *err)
{
    atf_error e = check_factors(b, rb, err);
    if (e)
        return e;
    if (rb->layout == ATF_FACTORS_ENTRYWISE)
        return adapted_entrywise(b, rb, 0, K, err);
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
    if (rb->layout == ATF_FACTORS_ENTRYWISE)
        return adapted_entrywise(b, rb, 1, K, err);
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

/* g = Σ_ℓ A_ℓ vec B_ℓ (the result's change of the outputs, f − f0 on the training rows) and
 * ‖β‖² over all blocks (res fits p: the callers check). */
static atf_error beta_image(const atf_problem *p, const atf_result *res, double **g,
                            double *norm2, char *err)
{
    *g = calloc((size_t)p->M, sizeof **g);
    if (!*g)
        return oom(err, "A beta");
    *norm2 = 0.0;
    for (int l = 0; l < p->nblocks; l++) {
        const atf_result_block *rb = &res->blocks[l];
        for (size_t i = 0; i < (size_t)rb->rows * rb->cols; i++)
            *norm2 += rb->B[i] * rb->B[i];
        atf_block_apply(&p->blocks[l], rb->B, 1.0, *g);
    }
    return ATF_OK;
}

/* K = a·K0 + c‖β‖⁻² g gᵀ (K0 given) or K += a·Σ_ℓ A_ℓA_ℓᵀ + c‖β‖⁻² g gᵀ (K0 NULL): the
 * kernels of one vector block β, whose transformation is I + (s − 1) ββᵀ/‖β‖² up to a scalar. */
static atf_error vector_kernel(const atf_problem *p, const atf_result *res, const double *K0,
                               double a, double c, double *K, char *err)
{
    double *g = NULL, norm2 = 0.0;
    atf_error e = beta_image(p, res, &g, &norm2, err);
    if (e)
        return e;
    size_t M = (size_t)p->M;
    double coef = norm2 > 0.0 ? c / norm2 : 0.0;
    if (K0) {
        for (size_t i = 0; i < M * M; i++)
            K[i] = a * K0[i];
    } else if (a != 0.0) {
        double *Kn = calloc(M * M, sizeof *Kn);
        for (int l = 0; Kn && !e && l < p->nblocks; l++)
            e = atf_kernel_ntk_block(&p->blocks[l], Kn, err);
        if (!Kn)
            e = oom(err, "NTK");
        if (!e)
            cblas_daxpy((int)(M * M), a, Kn, 1, K, 1);
        free(Kn);
    }
    if (!e)
        cblas_dger(CblasRowMajor, (int)M, (int)M, coef, g, 1, g, 1, K, (int)M);
    free(g);
    return e;
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
    double norm2 = 0.0;
    for (int l = 0; l < p->nblocks; l++)
        for (size_t i = 0; i < (size_t)res->blocks[l].rows * res->blocks[l].cols; i++)
            norm2 += res->blocks[l].B[i] * res->blocks[l].B[i];
    double s1 = 1.0, s2 = 1.0;
    atf_penalty_factors(&pen, sqrt(norm2), &s1, NULL, &s2);
    double s = s1 * s2;
    if (s_out)
        *s_out = s;
    return vector_kernel(p, res, K0, 1.0, s * s - 1.0, K, err);
}

/* A result with the VECTOR layout (all blocks, same factors) or none of it (0). */
static int vector_layout(const atf_problem *p, const atf_result *res, char *err, atf_error *e)
{
    int nvec = 0;
    for (int l = 0; l < res->nblocks; l++)
        nvec += res->blocks[l].layout == ATF_FACTORS_VECTOR;
    *e = ATF_OK;
    if (nvec == 0)
        return 0;
    if (nvec != res->nblocks || res->nblocks != p->nblocks) {
        atf_errorf(err, "result: %d of %d blocks have vector factors (structure full needs all)",
                   nvec, res->nblocks);
        *e = ATF_E_INPUT;
        return 0;
    }
    for (int l = 0; l < res->nblocks; l++) {
        const atf_result_block *rb = &res->blocks[l];
        const char *missing = atf_kernel_factors_missing(rb);
        if (missing || rb->s1[0] != res->blocks[0].s1[0] || rb->s2[0] != res->blocks[0].s2[0]) {
            atf_errorf(err, "result block %s: %s", rb->name,
                       missing ? missing : "vector factors s1, s2 differ from the first block's");
            *e = ATF_E_INPUT;
            return 0;
        }
    }
    return 1;
}

/* A vector block β (P_total × 1) has M̂1 = I + (s1 − 1) ββᵀ/‖β‖² and the 1×1 M̂2 = s2, so
 * M̂² = s2² (I + (s1² − 1) ββᵀ/‖β‖²) and eq. 7 gives s2² (K0 + (s1² − 1)‖β‖⁻² g gᵀ). */
atf_error atf_kernel_adapted(const atf_problem *p, const atf_result *res, double *K, char *err)
{
    atf_error e;
    if (vector_layout(p, res, err, &e)) {
        double s1 = res->blocks[0].s1[0], s2 = res->blocks[0].s2[0];
        return vector_kernel(p, res, NULL, s2 * s2, s2 * s2 * (s1 * s1 - 1.0), K, err);
    }
    for (int l = 0; !e && l < p->nblocks; l++)
        e = atf_kernel_adapted_block(&p->blocks[l], &res->blocks[l], K, err);
    return e;
}

/* For a vector block eq. 17 has the one term (s1² s2² − 1) ĝ ĝᵀ with ĝ = g/‖β‖. */
atf_error atf_kernel_paper17(const atf_problem *p, const atf_result *res, double *K, char *err)
{
    atf_error e;
    if (vector_layout(p, res, err, &e)) {
        double s = res->blocks[0].s1[0] * res->blocks[0].s2[0];
        return vector_kernel(p, res, NULL, 0.0, s * s - 1.0, K, err);
    }
    for (int l = 0; !e && l < p->nblocks; l++)
        e = atf_kernel_paper17_block(&p->blocks[l], &res->blocks[l], K, err);
    return e;
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
    for (int b = 0; !e && b < J.nblocks; b++) {
        const atf_jac_block *jb = &J.blocks[b];
        if (atf_factored_gram(N, J.C, jb->rows, jb->cols, jb->H, jb->D, 1.0, K) ||
            (K_blocks && atf_factored_gram(N, J.C, jb->rows, jb->cols, jb->H, jb->D, 0.0,
                                           K_blocks + b * MM)))
            e = oom(err, "network NTK");
    }
    atf_jacobian_free(&J);
    return e;
}
