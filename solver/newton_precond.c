/* newton_precond.c — a preconditioner for the Newton systems (Λ + ∇²g + μI) d = b of newton.c:
 * a randomized Nyström approximation of the loss curvature ∇²g on a subsample of the examples.
 *
 * The loss curvature of tangent features has a fast-decaying spectrum (the NTK's), while the
 * penalty's curvature Λ is of one size in most directions (ω̃'' = 2 near 0 for every family).
 * CG then spends its steps on the top of ∇²g's spectrum. ∇²g is a mean over examples, so its top
 * eigenvectors are those of the same sum over a subsample (every stride-th example, scaled by
 * N/n): k products with that smaller operator — cheap — give the rank-k Nyström approximation
 * U Λ̂ Uᵀ (Frangella, Tropp and Udell 2021, Algorithm 2.1: orthonormal test matrix, shifted
 * sketch, Cholesky, thin SVD), and the preconditioner
 *
 *     P⁻¹ = (λ̂_k + ρ) U (Λ̂ + ρI)⁻¹ Uᵀ + (I − U Uᵀ),      ρ = mean Λ on S + μ,
 *
 * which maps the top of the spectrum onto the bulk. newton.c masks it to S. */
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "solver_newton.h"

#define NYSTROM_SEED 0x5EED5EEDULL /* the test matrix's seed (documented, fixed) */
#define TWO_PI 6.283185307179586476925

void atf_nys_free(atf_nystrom *ny)
{
    for (int l = 0; ny->ops && l < ny->nvars; l++)
        if (ny->owns)
            atf_block_free_arrays(&ny->ops[l]);
    free(ny->ops), free(ny->op_ptrs), free(ny->examples), free(ny->Ap), free(ny->pack);
    free(ny->U), free(ny->lam), free(ny->Y), free(ny->W), free(ny->G);
    free(ny->tau), free(ny->work), free(ny->coef);
    memset(ny, 0, sizeof *ny);
}

/* The subsample's examples this process holds (all of them with one), ny->share: those among
 * the held examples, in chunks that follow the whole problem's (a chunk of the subsample is its
 * examples in one chunk of the problem), so that its sums do not depend on the processes. */
static void share_of_subsample(const atf_solver *s, atf_nystrom *ny)
{
    const atf_sv_share *own = &s->share;
    atf_sv_share *sh = &ny->share;
    int n = ny->n_examples, j0 = 0, chunk = atf_shard_chunk(s->work.N);
    while (j0 < n && ny->examples[j0] < own->first)
        j0++;
    int j1 = j0;
    while (j1 < n && ny->examples[j1] < own->first + own->count)
        j1++;
    sh->first = j0;
    sh->count = j1 - j0;
    sh->ncuts = 0;
    for (int j = j0; j < j1; j++)
        if (j == j0 || ny->examples[j] / chunk != ny->examples[j - 1] / chunk)
            sh->cuts[sh->ncuts++] = j - j0;
    sh->cuts[sh->ncuts] = sh->count;
}

/* The subsample is made of whole chunks of the problem (atf_shard_chunk: 32 examples and more),
 * `take` of them evenly spaced, enough to hold the examples asked for. Its products then sum over
 * chunks of the problem's own size, which a process holds whole, so the sketch does not depend on
 * the processes, and each chunk is one GEMM of the full product's shape. Every stride-th example
 * instead made each chunk of the subsample 4 examples at a stride of 8: a GEMM of inner size 4 and
 * a double-double sum of the whole output per chunk, most of a sketch's time (Fashion-MNIST,
 * N = 7 200: 30 % of it in those sums alone). Chunk i of the subsample is the problem's chunk
 * ⌊i·count/take⌋. */
static int subsample_chunks(int N, int wanted)
{
    int chunk = atf_shard_chunk(N), count = atf_shard_count(N);
    int take = (wanted + chunk - 1) / chunk;
    return take < count ? take : count;
}

static int subsample_chunk(int N, int take, int i)
{
    return (int)((int64_t)i * atf_shard_count(N) / take);
}

static int subsample_size(int N, int take)
{
    int chunk = atf_shard_chunk(N), n = 0;
    for (int i = 0; i < take; i++) {
        int first = subsample_chunk(N, take, i) * chunk;
        n += first + chunk < N ? chunk : N - first;
    }
    return n;
}

/* The subsample's examples, operators copied (or the solver's own when it is every example, or
 * views of no example when this process holds none of them). */
static int select(atf_solver *s, atf_nystrom *ny, int take)
{
    int N = s->work.N, chunk = atf_shard_chunk(N);
    ny->nvars = s->nvars;
    ny->ops = calloc((size_t)s->nvars, sizeof *ny->ops);
    ny->op_ptrs = malloc((size_t)s->nvars * sizeof *ny->op_ptrs);
    ny->examples = malloc((size_t)ny->n_examples * sizeof *ny->examples);
    if (!ny->ops || !ny->op_ptrs || !ny->examples)
        return -1;
    for (int l = 0; l < s->nvars; l++)
        ny->op_ptrs[l] = &ny->ops[l];
    for (int i = 0, j = 0; i < take; i++) {
        int first = subsample_chunk(N, take, i) * chunk;
        int end = first + chunk < N ? first + chunk : N;
        for (int e = first; e < end; e++)
            ny->examples[j++] = e;
    }
    share_of_subsample(s, ny);
    const atf_sv_share *sh = &ny->share;
    ny->owns = ny->n_examples < N && sh->count > 0;
    int *local = ny->owns ? malloc((size_t)sh->count * sizeof *local) : NULL;
    if (ny->owns && !local)
        return -1;
    for (int j = 0; ny->owns && j < sh->count; j++)
        local[j] = ny->examples[sh->first + j] - s->share.first;
    for (int l = 0; l < s->nvars; l++) {
        if (!ny->owns) {
            ny->ops[l] = s->vars[l].op;
            ny->ops[l].N = sh->count, ny->ops[l].M = sh->count * ny->ops[l].C;
        } else if (atf_block_select_examples(&s->vars[l].op, local, sh->count, &ny->ops[l]) !=
                   ATF_OK) {
            free(local);
            return -1;
        }
    }
    free(local);
    return 0;
}

atf_error atf_nys_init(atf_solver *s, atf_nystrom *ny, int examples, int rank, char *err)
{
    memset(ny, 0, sizeof *ny);
    size_t n = s->n;
    int N = s->work.N, C = s->work.C;
    int take = subsample_chunks(N, examples > 0 ? examples : 1);
    ny->n_examples = subsample_size(N, take);
    ny->k = rank < (int)n ? rank : (int)n;
    ny->n = n;
    size_t k = (size_t)ny->k;
    /* columns sketched together: as many as the solver's scratch holds for the subsample */
    ny->batch = N / ny->n_examples < ny->k ? N / ny->n_examples : ny->k;
    ny->Ap = malloc((size_t)ny->n_examples * (size_t)C * (size_t)ny->batch * sizeof *ny->Ap);
    ny->pack = malloc(n * (size_t)ny->batch * sizeof *ny->pack);
    ny->U = malloc(n * k * sizeof *ny->U);
    ny->Y = malloc(n * k * sizeof *ny->Y);
    ny->lam = malloc(k * sizeof *ny->lam);
    ny->tau = malloc(k * sizeof *ny->tau);
    ny->coef = malloc(k * sizeof *ny->coef);
    ny->work = malloc(k * k * sizeof *ny->work);
    ny->W = malloc(n * k * sizeof *ny->W);
    ny->G = malloc(k * k * sizeof *ny->G);
    if (ny->k < 1 || !ny->Ap || !ny->pack || !ny->U || !ny->Y || !ny->lam || !ny->tau ||
        !ny->coef || !ny->work || !ny->W || !ny->G || select(s, ny, take) != 0) {
        atf_nys_free(ny);
        atf_errorf(err, "newton: out of memory for the preconditioner (rank %d, %d examples)",
                   rank, examples);
        return ATF_E_NOMEM;
    }
    return ATF_OK;
}

/* *a grown to len doubles (realloc: its contents kept); 0 when out of memory (*a as it was). */
static int grow_array(double **a, size_t len)
{
    double *p = realloc(*a, len * sizeof *p);
    if (p)
        *a = p;
    return p != NULL;
}

atf_error atf_nys_resize(atf_nystrom *ny, int rank)
{
    size_t n = ny->n, k = (size_t)(rank < (int)n ? rank : (int)n);
    double **nk[] = {&ny->U, &ny->Y, &ny->W}, **kk[] = {&ny->work, &ny->G};
    double **k1[] = {&ny->lam, &ny->tau, &ny->coef};
    int ok = k >= 1;
    for (size_t i = 0; ok && i < sizeof nk / sizeof nk[0]; i++)
        ok = grow_array(nk[i], n * k);
    for (size_t i = 0; ok && i < sizeof kk / sizeof kk[0]; i++)
        ok = grow_array(kk[i], k * k);
    for (size_t i = 0; ok && i < sizeof k1 / sizeof k1[0]; i++)
        ok = grow_array(k1[i], k);
    if (!ok) /* the arrays grown so far are larger than k needs, which is harmless */
        return ATF_E_NOMEM;
    ny->k = (int)k, ny->ready = 0, ny->prepared = 0; /* batch stays: it is init's, as resumed */
    return ATF_OK;
}

/* The loss curvature at the subsample's j-th example (an atf_curvature_fn). */
static void sub_curv(void *ctx, int j, const double *y, double *u)
{
    const atf_nystrom *ny = ctx;
    atf_pg_loss_hess(ny->pl, &ny->examples[j], 1, y, u);
}

/* Y = (N/n) A_sᵀ ∇²ℓ_s A_s X on the subsample for the k columns of X (n × k, column-major),
 * ny->batch of them per pass over the subsample (its operators fit the solver's scratch). */
static void sub_hess(atf_solver *s, atf_nystrom *ny, int k, const double *X, double *Y)
{
    size_t n = ny->n;
    for (int j = 0; j < k; j += ny->batch) {
        int kc = k - j < ny->batch ? k - j : ny->batch;
        atf_sv_hess_many(s, ny->op_ptrs, &ny->share, kc, sub_curv, ny, X + (size_t)j * n,
                         Y + (size_t)j * n,
                         ny->Ap, ny->pack);
    }
    for (int j = 0; j < k; j++)
        cblas_dscal((int)n, (double)s->work.N / ny->n_examples, Y + (size_t)j * n, 1);
    ny->passes += 2.0 * k * ny->n_examples / s->work.N;
}

/* Ω ← an orthonormal n × k test matrix (seeded Gaussian, then Cholesky QR: Ω R⁻¹ with
 * RᵀR = ΩᵀΩ, all BLAS-3; a Gaussian n × k with n ≫ k is well conditioned). Column-major. */
static int test_matrix(atf_nystrom *ny, double *Om)
{
    size_t n = ny->n, k = (size_t)ny->k;
    uint64_t seed = NYSTROM_SEED;
    for (size_t i = 0; i < n * k; i += 2) { /* Box–Muller from xorshift64 */
        double u1, u2;
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        u1 = ((double)(seed >> 11) + 0.5) / 9007199254740992.0;
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        u2 = ((double)(seed >> 11) + 0.5) / 9007199254740992.0;
        double r = sqrt(-2.0 * log(u1));
        Om[i] = r * cos(TWO_PI * u2);
        if (i + 1 < n * k)
            Om[i + 1] = r * sin(TWO_PI * u2);
    }
    cblas_dsyrk(CblasColMajor, CblasUpper, CblasTrans, (int)k, (int)n, 1.0, Om, (int)n, 0.0,
                ny->work, (int)k);
    if (LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'U', (int)k, ny->work, (int)k) != 0)
        return 0;
    cblas_dtrsm(CblasColMajor, CblasRight, CblasUpper, CblasNoTrans, CblasNonUnit, (int)n, (int)k,
                1.0, ny->work, (int)k, Om, (int)n);
    return 1;
}

/* The eigenpairs of B Bᵀ for B (n × k, in Y): from the k × k Gram BᵀB = W diag(s²) Wᵀ,
 * U = B W diag(1/s) (directions with s² at the rounding level of the largest are dropped by
 * zeroing their column: the preconditioner then leaves them alone). ν is subtracted from s². */
static int eigen_from_sketch(atf_nystrom *ny, double nu)
{
    size_t n = ny->n;
    int k = ny->k;
    cblas_dsyrk(CblasColMajor, CblasUpper, CblasTrans, k, (int)n, 1.0, ny->Y, (int)n, 0.0,
                ny->work, k);
    if (LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'V', 'U', k, ny->work, k, ny->tau) != 0)
        return 0;
    double top = ny->tau[k - 1];
    /* dsyevd sorts ascending: column j of the output is the (k−1−j)-th eigenvector */
    for (int j = 0; j < k; j++) {
        int src = k - 1 - j;
        double s2 = ny->tau[src];
        double inv = s2 > 1e-14 * top ? 1.0 / sqrt(s2) : 0.0;
        ny->lam[j] = inv > 0.0 ? fmax(s2 - nu, 0.0) : 0.0;
        cblas_dscal(k, inv, ny->work + (size_t)src * (size_t)k, 1);
    }
    for (int j = 0; j < k / 2; j++) /* descending order of the columns of W diag(1/s) */
        cblas_dswap(k, ny->work + (size_t)j * (size_t)k, 1,
                    ny->work + (size_t)(k - 1 - j) * (size_t)k, 1);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)n, k, k, 1.0, ny->Y, (int)n,
                ny->work, k, 0.0, ny->U, (int)n);
    return 1;
}

#define NU_RETRIES 3   /* larger shifts tried when the sketch's Gram is not positive definite */
#define NU_GROW 1e3

/* work = ΩᵀY (k × k), symmetrised against rounding. */
static void shifted_gram(atf_nystrom *ny, const double *Om)
{
    int k = ny->k;
    cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, k, k, (int)ny->n, 1.0, Om, (int)ny->n,
                ny->Y, (int)ny->n, 0.0, ny->work, k);
    for (int i = 0; i < k; i++)
        for (int j = i + 1; j < k; j++)
            ny->work[(size_t)i + (size_t)j * k] = ny->work[(size_t)j + (size_t)i * k] =
                0.5 * (ny->work[(size_t)i + (size_t)j * k] + ny->work[(size_t)j + (size_t)i * k]);
}

int atf_nys_build(atf_solver *s, atf_pg_loss *pl, atf_nystrom *ny)
{
    size_t n = ny->n;
    int k = ny->k;
    ny->ready = 0;
    double *Om = ny->U; /* the test matrix lives in U until the eigenvectors replace it */
    ny->pl = pl;
    if (!test_matrix(ny, Om))
        return -1;
    sub_hess(s, ny, k, Om, ny->Y);
    if (!atf_sv_all_finite(ny->Y, n * (size_t)k))
        return -1;
    /* shift ν = ε‖Y‖ (Y_ν = Y + νΩ keeps ΩᵀY_ν positive definite), C = chol(ΩᵀY_ν),
     * B = Y_ν C⁻¹ (Frangella, Tropp and Udell 2021, Algorithm 2.1). When the curvature's rank is
     * below k (few examples, xent's C − 1 per example) rounding can leave ΩᵀY_ν indefinite at
     * that ν: up to NU_RETRIES times the shift grows by NU_GROW. */
    double nu = 2.2e-16 * sqrt((double)n) * atf_sv_norm(ny->Y, n * (size_t)k), added = 0.0;
    int factored = 0;
    for (int attempt = 0; attempt <= NU_RETRIES && !factored; attempt++, nu *= NU_GROW) {
        cblas_daxpy((int)(n * (size_t)k), nu - added, Om, 1, ny->Y, 1);
        added = nu;
        shifted_gram(ny, Om);
        factored = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'U', k, ny->work, k) == 0;
    }
    nu = added;
    if (!factored)
        return -1;
    cblas_dtrsm(CblasColMajor, CblasRight, CblasUpper, CblasNoTrans, CblasNonUnit, (int)n, k, 1.0,
                ny->work, k, ny->Y, (int)n);
    if (!eigen_from_sketch(ny, nu))
        return -1;
    ny->ready = 1;
    return 0;
}

int atf_nys_prepare(atf_nystrom *ny, atf_jac *jac, double mu)
{
    size_t n = ny->n;
    int k = ny->k;
    ny->prepared = 0;
    if (!ny->ready)
        return -1;
    double floor = ny->lam[k - 1];
    atf_jac_set_shift(jac, mu + floor);
    for (int j = 0; j < k; j++) { /* W_j = D⁻¹ U_j √(λ̂_j − λ̂_k) */
        double sj = sqrt(fmax(ny->lam[j] - floor, 0.0));
        atf_jac_apply(jac, ATF_JAC_DINV, ny->U + (size_t)j * n, ATF_JAC_DINV, NULL,
                      ny->W + (size_t)j * n);
        cblas_dscal((int)n, sj, ny->W + (size_t)j * n, 1);
        ny->coef[j] = sj;
    }
    /* G = I + S^½ Uᵀ W (= I + S^½ Uᵀ D⁻¹ U S^½, symmetric positive definite) */
    cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, k, k, (int)n, 1.0, ny->U, (int)n, ny->W,
                (int)n, 0.0, ny->G, k);
    for (int i = 0; i < k; i++)
        for (int j = 0; j <= i; j++) {
            double v = 0.5 * (ny->coef[i] * ny->G[(size_t)i + (size_t)j * k] +
                              ny->coef[j] * ny->G[(size_t)j + (size_t)i * k]);
            ny->G[(size_t)i + (size_t)j * k] = ny->G[(size_t)j + (size_t)i * k] =
                v + (i == j ? 1.0 : 0.0);
        }
    if (LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', k, ny->G, k) != 0)
        return -1;
    ny->prepared = 1;
    return 0;
}

void atf_nys_apply(atf_nystrom *ny, atf_jac *jac, const double *v, double *out)
{
    size_t n = ny->n;
    int k = ny->k;
    atf_jac_apply(jac, ATF_JAC_DINV, v, ATF_JAC_DINV, NULL, out); /* D⁻¹ v */
    if (!ny->prepared)
        return;
    /* Woodbury: out −= W G⁻¹ Wᵀ v (Wᵀv = S^½ Uᵀ D⁻¹ v since D⁻¹ is symmetric) */
    cblas_dgemv(CblasColMajor, CblasTrans, (int)n, k, 1.0, ny->W, (int)n, v, 1, 0.0, ny->coef, 1);
    cblas_dtrsv(CblasColMajor, CblasLower, CblasNoTrans, CblasNonUnit, k, ny->G, k, ny->coef, 1);
    cblas_dtrsv(CblasColMajor, CblasLower, CblasTrans, CblasNonUnit, k, ny->G, k, ny->coef, 1);
    cblas_dgemv(CblasColMajor, CblasNoTrans, (int)n, k, -1.0, ny->W, (int)n, ny->coef, 1, 1.0, out,
                1);
}
