/* cg_precond.c — data-space preconditioners of G = A'A'ᵀ for the CG baseline (solver_cg.h),
 * built from the work operator without forming G.
 *
 *  - block Jacobi: per example i the exact C × C block G_ii = Σ_ℓ ‖h_iℓ‖² D_iℓ D_iℓᵀ (factored
 *    blocks; row dot products for dense and sparse ones), Cholesky-factored;
 *  - low rank + base: k columns of G chosen by randomly pivoted Cholesky (Chen, Epperly, Tropp,
 *    Webber 2023), in blocks with the rejection step of Epperly, Tropp, Webber 2024 ("Embrace
 *    rejection"), which samples exactly as the one-pivot-at-a-time algorithm while computing
 *    the columns by GEMM. G ≈ F Fᵀ (F is M × k), and P = F Fᵀ + B with B = μI (nystrom) or the
 *    C × C diagonal blocks of the residual G − F Fᵀ plus a shift (nystrom-block), applied by
 *    Woodbury: P⁻¹ = B⁻¹ − B⁻¹F (I + FᵀB⁻¹F)⁻¹ FᵀB⁻¹.
 *
 * A Gram column of a factored block is (H h_j) ∘ (D δ_s) expanded to rows (row m = i·C + c takes
 * the i-th entry of H h_j): O(N·P + M·Q) per column, computed for a block of pivots at once by two
 * GEMMs. The rank k comes from a memory budget for F (M·k doubles). Every random choice comes from
 * one seeded generator (splitmix64), so a run is reproducible. */
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "solver_cg.h"

/* Default memory for F: 1 GiB, at most an eighth of the available memory. */
#define CG_BUDGET_DEFAULT (1024.0 * 1024.0 * 1024.0)
/* Largest default rank (docs/solver.md §9.1: steps fall like k^-1/2, the build grows like M·k²). */
#define CG_RANK_MAX 1000
/* Pivots sampled per block of the randomly pivoted Cholesky. */
#define CG_PIVOT_BLOCK 128
/* A pivot whose residual diagonal is below this fraction of the mean diagonal of G is rounding:
 * G is (numerically) of lower rank there and the pivot is rejected. */
#define CG_PIVOT_MIN 1e-10
/* The residual trace below which G counts as exactly low rank (stop pivoting). */
#define CG_TRACE_MIN 1e-13
/* Default μ (nystrom) and block shift (nystrom-block) as multiples of the mean residual
 * diagonal (measured, docs/solver.md §9.1). */
#define CG_MU_FACTOR 1.0
#define CG_BLOCK_SHIFT_FACTOR 0.1
/* The smallest shift, relative to the mean diagonal of G: P⁻¹ amplifies the rounding that
 * enters null(A'ᵀ) (rank-deficient A) by at most its inverse (at 1e-12 CG on a consistent
 * rank-deficient problem diverged), while eigenvalues of G below it are still reached. Block
 * Jacobi uses it to keep a singular C × C block positive definite. */
#define CG_SHIFT_MIN 1e-6

static const char *const PRECOND_NAMES[] = {"default", "none", "jacobi", "nystrom",
                                            "nystrom-block"};

const char *atf_cg_precond_name(atf_cg_precond p)
{
    if ((int)p < 0 || (size_t)p >= sizeof PRECOND_NAMES / sizeof PRECOND_NAMES[0])
        return NULL;
    return PRECOND_NAMES[p];
}

atf_error atf_cg_precond_parse(const char *name, atf_cg_precond *p)
{
    for (size_t i = 0; name && i < sizeof PRECOND_NAMES / sizeof PRECOND_NAMES[0]; i++)
        if (!strcmp(name, PRECOND_NAMES[i])) {
            *p = (atf_cg_precond)i;
            return ATF_OK;
        }
    return ATF_E_INPUT;
}

/* ---- random numbers: splitmix64 (one seeded stream per build) ---- */

static uint64_t next_u64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static double next_unit(uint64_t *state)
{
    return (double)(next_u64(state) >> 11) * 0x1.0p-53;
}

/* ---- memory ---- */

static double available_bytes(void)
{
    long pages = sysconf(_SC_AVPHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (double)pages * (double)size : 0.0;
}

int atf_sv_cg_default_rank(int M, double budget_bytes)
{
    double budget = budget_bytes > 0.0 ? budget_bytes : CG_BUDGET_DEFAULT;
    double avail = available_bytes();
    if (budget_bytes <= 0.0 && avail > 0.0)
        budget = fmin(budget, avail / 8.0);
    double k = floor(budget / (8.0 * (double)(M > 0 ? M : 1)));
    k = fmin(k, (double)CG_RANK_MAX);
    return (int)fmax(0.0, fmin(k, (double)M));
}

/* ---- exact pieces of G: the C × C example blocks and columns ---- */

/* blk_i += the C × C block of one operator at example i (lower triangle, column-major). */
static void block_of_op(const atf_block *b, int i, double *blk, double *w)
{
    int C = b->C, n = b->rows * b->cols;
    if (b->kind == ATF_OP_FACTORED) {
        const double *h = b->H + (size_t)i * (size_t)b->rows;
        double hn = cblas_ddot(b->rows, h, 1, h, 1);
        cblas_dsyrk(CblasColMajor, CblasLower, CblasTrans, C, b->cols, hn,
                    b->D + (size_t)i * (size_t)C * (size_t)b->cols, b->cols, 1.0, blk, C);
    } else if (b->kind == ATF_OP_DENSE) {
        cblas_dsyrk(CblasColMajor, CblasLower, CblasTrans, C, n, 1.0,
                    b->J + (size_t)i * (size_t)C * (size_t)n, n, 1.0, blk, C);
    } else {
        for (int a = 0; a < C; a++) { /* row a scattered into w, dotted with rows a..C-1 */
            int m = i * C + a;
            for (int64_t p = b->indptr[m]; p < b->indptr[m + 1]; p++)
                w[b->indices[p]] += b->data[p];
            for (int c = a; c < C; c++) {
                double sum = 0.0;
                for (int64_t p = b->indptr[i * C + c]; p < b->indptr[i * C + c + 1]; p++)
                    sum += b->data[p] * w[b->indices[p]];
                blk[(size_t)a * C + c] += sum;
            }
            for (int64_t p = b->indptr[m]; p < b->indptr[m + 1]; p++)
                w[b->indices[p]] = 0.0;
        }
    }
}

/* The N blocks G_ii of G (lower triangles). */
static int example_blocks(atf_solver *s, double *blk)
{
    int N = s->work.N, C = s->work.C;
    size_t wlen = 1;
    for (int l = 0; l < s->nvars; l++)
        if (s->vars[l].op.kind == ATF_OP_SPARSE)
            wlen = fmax(wlen, s->vars[l].len);
    double *w = calloc(wlen, sizeof *w);
    if (!w)
        return -1;
    memset(blk, 0, (size_t)N * (size_t)C * (size_t)C * sizeof *blk);
    for (int i = 0; i < N; i++)
        for (int l = 0; l < s->nvars; l++)
            block_of_op(&s->vars[l].op, i, blk + (size_t)i * C * C, w);
    free(w);
    return 0;
}

/* cols (M × b, column-major) += the columns S of one factored operator's Gram:
 * (H H[j]ᵀ)[m div C] · (D D[S]ᵀ)[m], j = S div C. */
static int factored_columns(const atf_block *b, const int *S, int nb, double *cols)
{
    int N = b->N, C = b->C, M = b->M, P = b->rows, Q = b->cols;
    double *hs = malloc((size_t)nb * (size_t)P * sizeof *hs);
    double *ds = malloc((size_t)nb * (size_t)Q * sizeof *ds);
    double *X = malloc((size_t)N * (size_t)nb * sizeof *X);
    double *Y = malloc((size_t)M * (size_t)nb * sizeof *Y);
    int st = -1;
    if (hs && ds && X && Y) {
        for (int t = 0; t < nb; t++) {
            memcpy(hs + (size_t)t * P, b->H + (size_t)(S[t] / C) * P, (size_t)P * sizeof *hs);
            memcpy(ds + (size_t)t * Q, b->D + (size_t)S[t] * Q, (size_t)Q * sizeof *ds);
        }
        cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, N, nb, P, 1.0, b->H, P, hs, P, 0.0,
                    X, N);
        cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, M, nb, Q, 1.0, b->D, Q, ds, Q, 0.0,
                    Y, M);
        for (int t = 0; t < nb; t++) {
            const double *x = X + (size_t)t * N, *y = Y + (size_t)t * M;
            double *c = cols + (size_t)t * M;
            for (int m = 0; m < M; m++)
                c[m] += x[m / C] * y[m];
        }
        st = 0;
    }
    free(hs), free(ds), free(X), free(Y);
    return st;
}

static int dense_columns(const atf_block *b, const int *S, int nb, double *cols)
{
    int n = b->rows * b->cols;
    double *js = malloc((size_t)nb * (size_t)n * sizeof *js);
    if (!js)
        return -1;
    for (int t = 0; t < nb; t++)
        memcpy(js + (size_t)t * n, b->J + (size_t)S[t] * n, (size_t)n * sizeof *js);
    cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, b->M, nb, n, 1.0, b->J, n, js, n, 1.0,
                cols, b->M);
    free(js);
    return 0;
}

static int sparse_columns(const atf_block *b, const int *S, int nb, double *cols)
{
    double *w = calloc((size_t)b->rows * (size_t)b->cols, sizeof *w);
    if (!w)
        return -1;
    for (int t = 0; t < nb; t++) {
        int s = S[t];
        for (int64_t p = b->indptr[s]; p < b->indptr[s + 1]; p++)
            w[b->indices[p]] += b->data[p];
        double *c = cols + (size_t)t * b->M;
        for (int m = 0; m < b->M; m++) {
            double sum = 0.0;
            for (int64_t p = b->indptr[m]; p < b->indptr[m + 1]; p++)
                sum += b->data[p] * w[b->indices[p]];
            c[m] += sum;
        }
        for (int64_t p = b->indptr[s]; p < b->indptr[s + 1]; p++)
            w[b->indices[p]] = 0.0;
    }
    free(w);
    return 0;
}

/* cols (M × nb, column-major) = G[:, S]. */
static int gram_columns(atf_solver *s, const int *S, int nb, double *cols)
{
    memset(cols, 0, (size_t)s->work.M * (size_t)nb * sizeof *cols);
    for (int l = 0; l < s->nvars; l++) {
        const atf_block *b = &s->vars[l].op;
        int st = b->kind == ATF_OP_FACTORED ? factored_columns(b, S, nb, cols)
                 : b->kind == ATF_OP_DENSE  ? dense_columns(b, S, nb, cols)
                                            : sparse_columns(b, S, nb, cols);
        if (st != 0)
            return st;
    }
    return 0;
}

/* ---- randomly pivoted Cholesky, blocks with rejection ---- */

typedef struct {
    int M, kmax, k;
    double *F, *d, *cum, *cols, *H, *H0;
    int *S, *T;
    uint64_t rng;
    double thr; /* smallest residual diagonal accepted as a pivot */
} rpc_state;

/* nb indices drawn independently with probability ∝ d (inverse CDF on the cumulative sums). */
static void sample_pivots(rpc_state *r, int nb)
{
    double total = 0.0;
    for (int m = 0; m < r->M; m++)
        r->cum[m] = (total += r->d[m]);
    for (int t = 0; t < nb; t++) {
        double u = next_unit(&r->rng) * total;
        int lo = 0, hi = r->M - 1;
        while (lo < hi) {
            int mid = lo + (hi - lo) / 2;
            if (r->cum[mid] > u)
                hi = mid;
            else
                lo = mid + 1;
        }
        while (lo > 0 && r->d[lo] <= 0.0) /* never a row the residual has emptied */
            lo--;
        r->S[t] = lo;
    }
}

/* The rejection step on the nb × nb residual block H (column-major): candidate t is accepted with
 * probability (its residual diagonal given the pivots accepted before it) / d[S_t], which makes
 * the accepted sequence that of one-at-a-time RPCholesky. Returns the number accepted (in T). */
static int accept_pivots(rpc_state *r, int nb, int room)
{
    int na = 0;
    for (int t = 0; t < nb && na < room; t++) {
        double h = r->H[(size_t)t * nb + t];
        if (!(h > r->thr) || next_unit(&r->rng) * r->d[r->S[t]] >= h)
            continue;
        r->T[na++] = t;
        double sq = sqrt(h);
        for (int j = t + 1; j < nb; j++) { /* Schur complement of the later candidates */
            double lj = r->H[(size_t)t * nb + j] / sq;
            for (int i = j; i < nb; i++)
                r->H[(size_t)j * nb + i] -= lj * r->H[(size_t)t * nb + i] / sq;
        }
    }
    return na;
}

/* Append the accepted columns to F: F_new = cols[:, T] L⁻ᵀ with L the Cholesky factor of the
 * residual block on T; d loses the squares of the new columns. Returns the number appended. */
static int append_columns(rpc_state *r, int nb, int na)
{
    if (na == 0)
        return 0;
    double *L = r->H0 + (size_t)nb * nb; /* scratch after H0 */
    for (int a = 0; a < na; a++)
        for (int b = 0; b < na; b++)
            L[(size_t)b * na + a] = r->H0[(size_t)r->T[b] * nb + r->T[a]];
    lapack_int info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', na, L, na);
    if (info > 0) /* keep the leading part that is positive definite */
        return info > 1 ? append_columns(r, nb, (int)info - 1) : 0;
    if (info < 0)
        return 0;
    double *Fn = r->F + (size_t)r->k * r->M;
    for (int a = 0; a < na; a++)
        memcpy(Fn + (size_t)a * r->M, r->cols + (size_t)r->T[a] * r->M, (size_t)r->M * sizeof *Fn);
    cblas_dtrsm(CblasColMajor, CblasRight, CblasLower, CblasTrans, CblasNonUnit, r->M, na, 1.0,
                L, na, Fn, r->M);
    for (int a = 0; a < na; a++) {
        const double *f = Fn + (size_t)a * r->M;
        for (int m = 0; m < r->M; m++)
            r->d[m] = fmax(0.0, r->d[m] - f[m] * f[m]);
        r->d[r->S[r->T[a]]] = 0.0;
    }
    return na;
}

/* One block: nb candidates, their residual columns and the rejection step. */
static int rpc_block(atf_solver *s, rpc_state *r, int nb)
{
    sample_pivots(r, nb);
    if (gram_columns(s, r->S, nb, r->cols) != 0)
        return -1;
    if (r->k > 0) { /* residual columns: G[:, S] − F F[S, :]ᵀ */
        double *fs = r->H; /* nb × k rows of F at S, borrowed scratch (nb·k ≤ nb·kmax) */
        for (int t = 0; t < nb; t++)
            for (int j = 0; j < r->k; j++)
                fs[(size_t)j * nb + t] = r->F[(size_t)j * r->M + r->S[t]];
        cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, r->M, nb, r->k, -1.0, r->F, r->M,
                    fs, nb, 1.0, r->cols, r->M);
    }
    for (int a = 0; a < nb; a++) /* the residual block on S, symmetrised */
        for (int b = 0; b < nb; b++)
            r->H0[(size_t)b * nb + a] = 0.5 * (r->cols[(size_t)b * r->M + r->S[a]] +
                                               r->cols[(size_t)a * r->M + r->S[b]]);
    memcpy(r->H, r->H0, (size_t)nb * nb * sizeof *r->H);
    int na = accept_pivots(r, nb, r->kmax - r->k);
    r->k += append_columns(r, nb, na);
    return 0;
}

/* F (M × k) with k ≤ kmax: stops early when the residual trace is at rounding level (G has
 * lower rank) or when blocks stop adding pivots. Returns -1 out of memory. */
static int rpcholesky(atf_solver *s, atf_cg_pre *pre, int kmax, uint64_t seed, double *d)
{
    int M = pre->M, nb = kmax < CG_PIVOT_BLOCK ? kmax : CG_PIVOT_BLOCK;
    rpc_state r = {.M = M, .kmax = kmax, .d = d, .rng = seed};
    size_t hsize = (size_t)nb * (size_t)(nb > kmax ? nb : kmax);
    r.F = malloc((size_t)M * (size_t)kmax * sizeof *r.F);
    r.cum = malloc((size_t)M * sizeof *r.cum);
    r.cols = malloc((size_t)M * (size_t)nb * sizeof *r.cols);
    r.H = malloc(hsize * sizeof *r.H);
    r.H0 = malloc(2 * (size_t)nb * (size_t)nb * sizeof *r.H0);
    r.S = malloc((size_t)nb * sizeof *r.S);
    r.T = malloc((size_t)nb * sizeof *r.T);
    int st = r.F && r.cum && r.cols && r.H && r.H0 && r.S && r.T ? 0 : -1;
    r.thr = CG_PIVOT_MIN * pre->trace0 / M;
    for (int idle = 0; st == 0 && r.k < kmax && idle < 8;) {
        double tr = 0.0;
        for (int m = 0; m < M; m++)
            tr += d[m];
        if (!(tr > CG_TRACE_MIN * pre->trace0))
            break;
        int before = r.k;
        st = rpc_block(s, &r, nb < kmax - r.k ? nb : kmax - r.k);
        idle = r.k == before ? idle + 1 : 0;
    }
    free(r.cum), free(r.cols), free(r.H), free(r.H0), free(r.S), free(r.T);
    if (st != 0) {
        free(r.F);
        return -1;
    }
    pre->F = r.F;
    pre->k = r.k;
    return 0;
}

/* ---- the base part B and the Woodbury core ---- */

/* Cholesky of every C × C block (lower); a block that is not numerically positive definite
 * (a row of zeros, rows that repeat) is factored again from its copy with a growing shift. */
static int factor_blocks(atf_cg_pre *pre)
{
    int C = pre->C;
    double *copy = malloc((size_t)C * C * sizeof *copy);
    if (!copy)
        return -1;
    for (int i = 0; i < pre->N; i++) {
        double *b = pre->blk + (size_t)i * C * C;
        memcpy(copy, b, (size_t)C * C * sizeof *copy);
        double add = 1e-14 * fmax(pre->trace0 / pre->M, pre->shift);
        while (LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', C, b, C) != 0) {
            memcpy(b, copy, (size_t)C * C * sizeof *b);
            for (int a = 0; a < C; a++)
                b[(size_t)a * C + a] += add;
            add *= 100.0;
        }
    }
    free(copy);
    return 0;
}

/* out = B⁻¹ v (out may alias v). */
static void base_solve(const atf_cg_pre *pre, const double *v, double *out)
{
    if (!pre->blk) {
        for (int m = 0; m < pre->M; m++)
            out[m] = v[m] / pre->mu;
        return;
    }
    int C = pre->C;
    for (int i = 0; i < pre->N; i++) {
        const double *L = pre->blk + (size_t)i * C * C;
        const double *vi = v + (size_t)i * C;
        double *o = out + (size_t)i * C;
        for (int a = 0; a < C; a++) { /* L y = v */
            double sum = vi[a];
            for (int b = 0; b < a; b++)
                sum -= L[(size_t)b * C + a] * o[b];
            o[a] = sum / L[(size_t)a * C + a];
        }
        for (int a = C - 1; a >= 0; a--) { /* Lᵀ o = y */
            double sum = o[a];
            for (int b = a + 1; b < C; b++)
                sum -= L[(size_t)a * C + b] * o[b];
            o[a] = sum / L[(size_t)a * C + a];
        }
    }
}

/* S = chol(I + Fᵀ B⁻¹ F), accumulated over panels of examples as (L⁻¹F)ᵀ(L⁻¹F). */
static int woodbury_core(atf_cg_pre *pre)
{
    int M = pre->M, k = pre->k, C = pre->C;
    pre->S = calloc((size_t)k * (size_t)k, sizeof *pre->S);
    if (!pre->S)
        return -1;
    for (int j = 0; j < k; j++)
        pre->S[(size_t)j * k + j] = 1.0;
    if (!pre->blk) {
        cblas_dsyrk(CblasColMajor, CblasLower, CblasTrans, k, M, 1.0 / pre->mu, pre->F, M, 1.0,
                    pre->S, k);
    } else {
        int rows = (4096 / C > 0 ? 4096 / C : 1) * C;
        double *V = malloc((size_t)rows * (size_t)k * sizeof *V);
        if (!V)
            return -1;
        for (int m0 = 0; m0 < M; m0 += rows) {
            int nr = M - m0 < rows ? M - m0 : rows;
            for (int j = 0; j < k; j++)
                memcpy(V + (size_t)j * nr, pre->F + (size_t)j * M + m0, (size_t)nr * sizeof *V);
            for (int i0 = 0; i0 < nr; i0 += C)
                cblas_dtrsm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasNonUnit, C, k,
                            1.0, pre->blk + (size_t)((m0 + i0) / C) * C * C, C, V + i0, nr);
            cblas_dsyrk(CblasColMajor, CblasLower, CblasTrans, k, nr, 1.0, V, nr, 1.0, pre->S, k);
        }
        free(V);
    }
    return LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', k, pre->S, k) == 0 ? 0 : -2;
}

/* The blocks of the residual G − F Fᵀ plus the shift (nystrom-block), or of G (jacobi). */
static int residual_blocks(atf_solver *s, atf_cg_pre *pre)
{
    int C = pre->C;
    pre->blk = malloc((size_t)pre->N * (size_t)C * (size_t)C * sizeof *pre->blk);
    if (!pre->blk || example_blocks(s, pre->blk) != 0)
        return -1;
    for (int i = 0; i < pre->N; i++) {
        double *b = pre->blk + (size_t)i * C * C;
        if (pre->k > 0)
            cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, C, pre->k, -1.0,
                        pre->F + (size_t)i * C, pre->M, 1.0, b, C);
        for (int a = 0; a < C; a++)
            b[(size_t)a * C + a] += pre->shift;
    }
    return factor_blocks(pre);
}

/* diag(G) from the example blocks (no second pass over the data). */
static int gram_diagonal(atf_solver *s, atf_cg_pre *pre, double *d)
{
    int C = pre->C;
    double *blk = malloc((size_t)pre->N * (size_t)C * (size_t)C * sizeof *blk);
    if (!blk || example_blocks(s, blk) != 0) {
        free(blk);
        return -1;
    }
    pre->trace0 = 0.0;
    for (int m = 0; m < pre->M; m++) {
        d[m] = blk[(size_t)(m / C) * C * C + (size_t)(m % C) * (C + 1)];
        pre->trace0 += d[m];
    }
    free(blk);
    return 0;
}

static atf_error build_low_rank(atf_solver *s, const atf_cg_options *opt, atf_cg_pre *pre,
                                char *err)
{
    double *d = malloc((size_t)pre->M * sizeof *d);
    int k = opt->rank > 0 ? (opt->rank < pre->M ? opt->rank : pre->M)
                          : atf_sv_cg_default_rank(pre->M, opt->budget_bytes);
    int st = d ? gram_diagonal(s, pre, d) : -1;
    if (st == 0 && k > 0)
        st = rpcholesky(s, pre, k, opt->seed ? opt->seed : ATF_CG_SEED, d);
    if (st == 0) {
        pre->trace_res = 0.0;
        for (int m = 0; m < pre->M; m++)
            pre->trace_res += d[m];
        double f = opt->shift_factor > 0.0 ? opt->shift_factor
                   : pre->kind == ATF_CG_PRECOND_NYSTROM ? CG_MU_FACTOR
                                                         : CG_BLOCK_SHIFT_FACTOR;
        pre->mu = pre->shift = fmax(f * pre->trace_res / pre->M,
                                    CG_SHIFT_MIN * pre->trace0 / pre->M);
    }
    free(d);
    if (st == 0 && pre->kind == ATF_CG_PRECOND_NYSTROM_BLOCK)
        st = residual_blocks(s, pre);
    if (st == 0 && pre->k > 0)
        st = woodbury_core(pre);
    if (st == -2) {
        atf_errorf(err, "cg: the preconditioner's core I + FᵀB⁻¹F (rank %d) is not positive "
                        "definite", pre->k);
        return ATF_E_NUMERICAL;
    }
    if (st != 0) {
        atf_errorf(err, "cg: out of memory for the preconditioner (M = %d, rank %d)", pre->M, k);
        return ATF_E_NOMEM;
    }
    return ATF_OK;
}

atf_error atf_sv_cg_precond_build(atf_solver *s, const atf_cg_options *opt, atf_cg_pre *pre,
                                  char *err)
{
    double t0 = atf_now();
    atf_sv_cg_precond_free(pre);
    pre->kind = opt->precond == ATF_CG_PRECOND_DEFAULT ? ATF_CG_PRECOND_NYSTROM_BLOCK
                                                       : opt->precond;
    pre->M = s->work.M, pre->N = s->work.N, pre->C = s->work.C;
    atf_error e = ATF_OK;
    if (pre->kind == ATF_CG_PRECOND_JACOBI) {
        double *d = malloc((size_t)pre->M * sizeof *d);
        int st = d ? gram_diagonal(s, pre, d) : -1;
        free(d);
        pre->shift = CG_SHIFT_MIN * pre->trace0 / pre->M;
        if (st != 0 || residual_blocks(s, pre) != 0) {
            atf_errorf(err, "cg: out of memory for the block Jacobi preconditioner (N = %d, "
                            "C = %d)", pre->N, pre->C);
            e = ATF_E_NOMEM;
        }
    } else if (pre->kind != ATF_CG_PRECOND_NONE) {
        e = build_low_rank(s, opt, pre, err);
    }
    pre->u = malloc((size_t)pre->M * sizeof *pre->u);
    pre->t = malloc((size_t)(pre->k > 0 ? pre->k : 1) * sizeof *pre->t);
    if (e == ATF_OK && (!pre->u || !pre->t)) {
        atf_errorf(err, "cg: out of memory for the preconditioner's workspace (M = %d)", pre->M);
        e = ATF_E_NOMEM;
    }
    pre->seconds = atf_now() - t0;
    return e;
}

void atf_sv_cg_precond_apply(atf_cg_pre *pre, const double *v, double *out)
{
    int M = pre->M, k = pre->k;
    if (pre->kind == ATF_CG_PRECOND_NONE) {
        memcpy(out, v, (size_t)M * sizeof *out);
        return;
    }
    if (k == 0) { /* block Jacobi, or a low-rank part that found no pivot */
        base_solve(pre, v, out);
        return;
    }
    base_solve(pre, v, pre->u); /* u = B⁻¹v */
    cblas_dgemv(CblasColMajor, CblasTrans, M, k, 1.0, pre->F, M, pre->u, 1, 0.0, pre->t, 1);
    LAPACKE_dpotrs_work(LAPACK_COL_MAJOR, 'L', k, 1, pre->S, k, pre->t, k);
    cblas_dgemv(CblasColMajor, CblasNoTrans, M, k, 1.0, pre->F, M, pre->t, 1, 0.0, out, 1);
    base_solve(pre, out, out); /* B⁻¹F S⁻¹FᵀB⁻¹v */
    for (int m = 0; m < M; m++)
        out[m] = pre->u[m] - out[m];
}

void atf_sv_cg_precond_free(atf_cg_pre *pre)
{
    free(pre->F), free(pre->S), free(pre->blk), free(pre->u), free(pre->t);
    memset(pre, 0, sizeof *pre);
}
