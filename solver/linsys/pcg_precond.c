/* pcg_precond.c — data-space preconditioners of G = A'A'ᵀ for PCG (pcg.h), built from the work
 * operator without forming G.
 *
 *  - block Jacobi: per example i the exact C × C block G_ii = Σ_ℓ ‖h_iℓ‖² D_iℓ D_iℓᵀ (factored
 *    blocks; row dot products for dense and sparse ones), Cholesky-factored;
 *  - low rank + base: k columns of G chosen by randomly pivoted Cholesky (Chen, Epperly, Tropp,
 *    Webber 2023), in blocks with the rejection step of Epperly, Tropp, Webber 2024 ("Embrace
 *    rejection"), which samples exactly as the one-pivot-at-a-time algorithm while computing
 *    the columns by GEMM. G ≈ F Fᵀ (F is M × k), and P = F Fᵀ + B with B = μI (nystrom) or the
 *    C × C diagonal blocks of the residual G − F Fᵀ plus a shift (nystrom-block), applied by
 *    Woodbury: P⁻¹ = B⁻¹ − B⁻¹F (I + FᵀB⁻¹F)⁻¹ FᵀB⁻¹;
 *  - gram32: all of G, formed a panel of columns at a time in double and kept in single
 *    precision (M(M+1)/2 floats, LAPACK's rectangular full packed storage), plus a shift of
 *    10⁻⁶ of its mean diagonal, Cholesky-factored by LAPACK (spftrf). Its rounding (about 10⁻⁷
 *    relative) leaves CG a handful of steps where the low-rank preconditioners take hundreds
 *    (docs/record/solver.md §9.1); it is for one process, where the double Gram of the Gram path
 *    does not fit but a quarter of it does.
 *
 * A Gram column of a factored block is (H h_j) ∘ (D δ_s) expanded to rows (row m = i·C + c takes
 * the i-th entry of H h_j): O(N·P + M·Q) per column, computed for a block of pivots at once by two
 * GEMMs. The rank k comes from a memory budget for F (M·k doubles). Every random choice comes from
 * one seeded generator (splitmix64), so a run is reproducible.
 *
 * Over processes (docs/record/solver.md §19, "The CG baseline over processes") the vars' operators
 * are views of the examples this process holds (operator.c), rows m0 … m0 + Mh − 1 of the M.
 * Whatever lies along the rows is formed for the held rows only: the example blocks and their
 * factors, the Gram columns, the rows of F, and in every application B⁻¹ and F t; the results are
 * gathered. Every BLAS call on rows runs chunk by chunk over the chunks of atf_shard.h, whose cut
 * depends on N only, so that one process and any number of them make the same calls on the same
 * data. What every process needs whole is completed exactly: the diagonal of the residual (the
 * pivots are drawn from it; gathered), the pivots' rows of H, D, F and of the residual columns
 * (each process fills the rows it holds and zeros elsewhere, and the sum over the processes is
 * exact); the k × k core Fᵀ B⁻¹ F and the k coefficients Fᵀu of an application are summed over the
 * chunks and the processes in double-double (atf_sv_sum_dd). Every process thus builds and
 * applies the preconditioner with the bits of one process alone, drawing the same pivots from
 * the one seeded generator. */
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "linsys.h"
#include "pcg.h"

/* Default memory for F: 1 GiB, at most an eighth of the available memory. */
#define CG_BUDGET_DEFAULT (1024.0 * 1024.0 * 1024.0)
/* Largest default rank (docs/record/solver.md §9.1: steps fall like k^-1/2, the build grows like
 * M·k²). */
#define CG_RANK_MAX 1000
/* Pivots sampled per block of the randomly pivoted Cholesky. */
#define CG_PIVOT_BLOCK 128
/* A pivot whose residual diagonal is below this fraction of the mean diagonal of G is rounding:
 * G is (numerically) of lower rank there and the pivot is rejected. */
#define CG_PIVOT_MIN 1e-10
/* The residual trace below which G counts as exactly low rank (stop pivoting). */
#define CG_TRACE_MIN 1e-13
/* Default μ (nystrom) and block shift (nystrom-block) as multiples of the mean residual
 * diagonal (measured, docs/record/solver.md §9.1). */
#define CG_MU_FACTOR 1.0
#define CG_BLOCK_SHIFT_FACTOR 0.1
/* The smallest shift, relative to the mean diagonal of G: P⁻¹ amplifies the rounding that
 * enters null(A'ᵀ) (rank-deficient A) by at most its inverse (at 1e-12 CG on a consistent
 * rank-deficient problem diverged), while eigenvalues of G below it are still reached. Block
 * Jacobi uses it to keep a singular C × C block positive definite. */
#define CG_SHIFT_MIN 1e-6
/* gram32: columns of G formed per panel, and the largest shift (relative to the mean diagonal)
 * tried when the single-precision factorisation meets a nonpositive pivot; beyond it the factor
 * would no longer be a close preconditioner. */
#define CG_G32_PANEL 128
#define CG_G32_SHIFT_MAX 1e-2
/* The numbers a gram32 factor file keeps beside the factor (atf_precond_state.meta). */
enum { G32_META_SHIFT, G32_META_TRACE };
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

int atf_sv_cg_default_rank(int M, double budget_bytes)
{
    double budget = budget_bytes > 0.0 ? budget_bytes : CG_BUDGET_DEFAULT;
    double avail = atf_linsys_available_bytes();
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
        double hn = atf_dot(h, h, (size_t)b->rows);
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

/* The held examples' blocks G_ii (lower triangles), count × C × C. */
static int example_blocks(atf_solver *s, double *blk)
{
    int N = s->share.count, C = s->work.C;
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

/* ---- over processes ---- */

/* The worst outcome over the processes (0 done, -1 out of memory, -2 not positive definite), so
 * that every process leaves at the same point. */
static int agree(const atf_solver *s, int st)
{
    return -(int)atf_sv_max(s, -(double)st);
}

/* x[n], each process having filled what it holds and zeros elsewhere: the exact sum over the
 * processes (every value comes from one of them). The low parts are the room reserved by
 * reserve_dd; nothing to do with one process. */
static void complete(atf_solver *s, double *x, size_t n)
{
    double *lo = atf_sv_dd_low(s, n);
    if (lo)
        memset(lo, 0, n * sizeof *lo);
    atf_sv_sum_dd(s, x, lo, n);
}

/* Room for n double-double values in the solver's scratch (atf_sv_dd_low), so that the sums of
 * the build and of every application need no allocation; -1 when it cannot be had. */
static int reserve_dd(atf_solver *s, size_t n)
{
    return atf_sv_dd_low(s, n ? n : 1) ? 0 : -1;
}

/* ---- the columns of G at a block of pivots ---- */

/* cols (Mh × nb, column-major: the held rows) += the columns of one factored operator's Gram at
 * the pivots whose H rows are hs (P × nb) and D rows ds (Q × nb): (H hs)[m div C] · (D ds)[m],
 * chunk by chunk, from the example of held row row0 on (the rows above it are left alone).
 * X, Y: chunk × nb and chunk·C × nb scratch. */
static void factored_columns(const atf_block *b, const atf_sv_share *sh, const double *hs,
                             const double *ds, int nb, int row0, double *cols, int ld, double *X,
                             double *Y)
{
    int C = b->C, P = b->rows, Q = b->cols, e0 = row0 / C;
    for (int c = 0; c < sh->ncuts; c++) {
        int i0 = sh->cuts[c] > e0 ? sh->cuts[c] : e0, ni = sh->cuts[c + 1] - i0;
        if (ni <= 0)
            continue;
        int r0 = i0 * C, nr = ni * C;
        cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, ni, nb, P, 1.0,
                    b->H + (size_t)i0 * P, P, hs, P, 0.0, X, ni);
        cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, nr, nb, Q, 1.0,
                    b->D + (size_t)r0 * Q, Q, ds, Q, 0.0, Y, nr);
        for (int t = 0; t < nb; t++) {
            const double *x = X + (size_t)t * ni, *y = Y + (size_t)t * nr;
            double *col = cols + (size_t)t * ld + r0;
            for (int e = 0; e < ni; e++) /* an example's C rows share its x */
                for (int q = 0; q < C; q++)
                    col[(size_t)e * C + q] += x[e] * y[(size_t)e * C + q];
        }
    }
}

/* Dense and sparse blocks (one process only: a shard's blocks are factored): all M rows. */
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

/* ---- randomly pivoted Cholesky, blocks with rejection ---- */

typedef struct {
    atf_solver *s;
    int M, kmax, k;  /* M: all rows */
    int Mh, m0;      /* the rows held, from m0 on */
    int row0;        /* the factored columns' rows before it are not formed (gram32 keeps only
                        the lower triangle: row0 is the panel's first column); 0 in RPCholesky */
    double *F;       /* Mh × kmax: the held rows of F */
    double *d, *cum; /* [M] the residual diagonal (whole on every process) */
    double *cols;    /* Mh × nb: the held rows of the candidates' residual columns */
    double *piv;     /* the candidates' rows: per factored var H (P × nb) and D (Q × nb), then
                        the rows of F (nb × k); then the residual block's rows (nb × nb) */
    double *X, *Y;   /* a chunk's products (factored_columns) */
    double *H, *H0;
    int *S, *T;
    uint64_t rng;
    double thr; /* smallest residual diagonal accepted as a pivot */
} rpc_state;

/* Doubles of the candidates' H and D rows in piv (factored vars). */
static size_t factor_rows_len(const atf_solver *s, int nb)
{
    size_t n = 0;
    for (int l = 0; l < s->nvars; l++)
        if (s->vars[l].op.kind == ATF_OP_FACTORED)
            n += (size_t)nb * (size_t)(s->vars[l].op.rows + s->vars[l].op.cols);
    return n;
}

/* Whether global row m is held, and where (its held index in *at). */
static int holds(const rpc_state *r, int m, int *at)
{
    *at = m - r->m0;
    return *at >= 0 && *at < r->Mh;
}

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

/* The candidates' rows of every factored var's H and D, and of F, into piv, whoever holds
 * them. */
static void candidate_rows(rpc_state *r, int nb)
{
    atf_solver *s = r->s;
    int C = s->work.C, first = s->share.first, at;
    size_t len = factor_rows_len(s, nb) + (size_t)nb * (size_t)r->k;
    memset(r->piv, 0, len * sizeof *r->piv);
    double *p = r->piv;
    for (int l = 0; l < s->nvars; l++) {
        const atf_block *b = &s->vars[l].op;
        if (b->kind != ATF_OP_FACTORED)
            continue;
        int P = b->rows, Q = b->cols;
        for (int t = 0; t < nb; t++)
            if (holds(r, r->S[t], &at)) {
                memcpy(p + (size_t)t * P, b->H + (size_t)(r->S[t] / C - first) * P,
                       (size_t)P * sizeof *p);
                memcpy(p + (size_t)nb * P + (size_t)t * Q, b->D + (size_t)at * Q,
                       (size_t)Q * sizeof *p);
            }
        p += (size_t)nb * (size_t)(P + Q);
    }
    for (int t = 0; t < nb; t++) /* F[S, :] (nb × k) */
        if (holds(r, r->S[t], &at))
            for (int j = 0; j < r->k; j++)
                p[(size_t)j * nb + t] = r->F[(size_t)j * r->Mh + at];
    complete(s, r->piv, len);
}

/* cols (Mh × nb) = the held rows of G[:, S] − F F[S, :]ᵀ (of the factored blocks only the rows
 * from row0's example on). */
static int residual_columns(rpc_state *r, int nb)
{
    atf_solver *s = r->s;
    const atf_sv_share *sh = &s->share;
    int C = s->work.C;
    memset(r->cols, 0, (size_t)r->Mh * (size_t)nb * sizeof *r->cols);
    const double *p = r->piv;
    for (int l = 0; l < s->nvars; l++) {
        const atf_block *b = &s->vars[l].op;
        int st = 0;
        if (b->kind == ATF_OP_FACTORED) {
            factored_columns(b, sh, p, p + (size_t)nb * b->rows, nb, r->row0, r->cols, r->Mh, r->X,
                             r->Y);
            p += (size_t)nb * (size_t)(b->rows + b->cols);
        } else {
            st = b->kind == ATF_OP_DENSE ? dense_columns(b, r->S, nb, r->cols)
                                         : sparse_columns(b, r->S, nb, r->cols);
        }
        if (st != 0)
            return st;
    }
    if (r->k > 0) /* p: F[S, :] */
        for (int c = 0; c < sh->ncuts; c++) {
            int r0 = sh->cuts[c] * C, nr = (sh->cuts[c + 1] - sh->cuts[c]) * C;
            cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, nr, nb, r->k, -1.0, r->F + r0,
                        r->Mh, p, nb, 1.0, r->cols + r0, r->Mh);
        }
    return 0;
}

/* The residual block on S (nb × nb, column-major), symmetrised, into H0 and H: its rows of the
 * residual columns, whoever holds them. */
static void residual_block(rpc_state *r, int nb)
{
    double *B = r->piv; /* the candidates' rows are used up */
    size_t len = (size_t)nb * (size_t)nb;
    int at;
    memset(B, 0, len * sizeof *B);
    for (int a = 0; a < nb; a++)
        if (holds(r, r->S[a], &at))
            for (int b = 0; b < nb; b++)
                B[(size_t)b * nb + a] = r->cols[(size_t)b * r->Mh + at];
    complete(r->s, B, len);
    for (int a = 0; a < nb; a++)
        for (int b = 0; b < nb; b++)
            r->H0[(size_t)b * nb + a] = 0.5 * (B[(size_t)b * nb + a] + B[(size_t)a * nb + b]);
    memcpy(r->H, r->H0, len * sizeof *r->H);
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
 * residual block on T (the held rows, chunk by chunk); d loses the squares of the new columns
 * and is gathered. Returns the number appended. */
static int append_columns(rpc_state *r, int nb, int na)
{
    if (na == 0)
        return 0;
    atf_solver *s = r->s;
    const atf_sv_share *sh = &s->share;
    int C = s->work.C, Mh = r->Mh;
    double *L = r->H0 + (size_t)nb * nb; /* scratch after H0 */
    for (int a = 0; a < na; a++)
        for (int b = 0; b < na; b++)
            L[(size_t)b * na + a] = r->H0[(size_t)r->T[b] * nb + r->T[a]];
    lapack_int info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', na, L, na);
    if (info > 0) /* keep the leading part that is positive definite */
        return info > 1 ? append_columns(r, nb, (int)info - 1) : 0;
    if (info < 0)
        return 0;
    double *Fn = r->F + (size_t)r->k * Mh;
    for (int a = 0; a < na; a++)
        memcpy(Fn + (size_t)a * Mh, r->cols + (size_t)r->T[a] * Mh, (size_t)Mh * sizeof *Fn);
    for (int c = 0; c < sh->ncuts; c++) {
        int r0 = sh->cuts[c] * C, nr = (sh->cuts[c + 1] - sh->cuts[c]) * C;
        cblas_dtrsm(CblasColMajor, CblasRight, CblasLower, CblasTrans, CblasNonUnit, nr, na, 1.0,
                    L, na, Fn + r0, Mh);
    }
    double *dh = r->d + r->m0;
    for (int a = 0; a < na; a++) {
        const double *f = Fn + (size_t)a * Mh;
        for (int m = 0; m < Mh; m++)
            dh[m] = fmax(0.0, dh[m] - f[m] * f[m]);
        r->d[r->S[r->T[a]]] = 0.0;
    }
    atf_sv_gather(s, r->d, C);
    return na;
}

/* One block: nb candidates, their residual columns and the rejection step. */
static int rpc_block(rpc_state *r, int nb)
{
    sample_pivots(r, nb);
    candidate_rows(r, nb);
    if (residual_columns(r, nb) != 0)
        return -1;
    residual_block(r, nb);
    int na = accept_pivots(r, nb, r->kmax - r->k);
    r->k += append_columns(r, nb, na);
    return 0;
}

static void rpc_free(rpc_state *r)
{
    free(r->cum), free(r->cols), free(r->piv), free(r->X), free(r->Y), free(r->H), free(r->H0);
    free(r->S), free(r->T);
}

/* F (the held rows, Mh × k) with k ≤ kmax: stops early when the residual trace is at rounding
 * level (G has lower rank) or when blocks stop adding pivots. Returns -1 out of memory. */
static int rpcholesky(atf_solver *s, atf_cg_pre *pre, int kmax, uint64_t seed, double *d)
{
    int M = pre->M, Mh = pre->Mh, nb = kmax < CG_PIVOT_BLOCK ? kmax : CG_PIVOT_BLOCK;
    int chunk = atf_shard_chunk(s->work.N), C = pre->C;
    rpc_state r = {.s = s, .M = M, .kmax = kmax, .Mh = Mh, .m0 = pre->m0, .d = d, .rng = seed};
    size_t cand = factor_rows_len(s, nb) + (size_t)nb * (size_t)kmax;
    size_t piv = cand > (size_t)nb * nb ? cand : (size_t)nb * nb;
    r.F = malloc((size_t)Mh * (size_t)kmax * sizeof *r.F);
    r.cum = malloc((size_t)M * sizeof *r.cum);
    r.cols = malloc((size_t)Mh * (size_t)nb * sizeof *r.cols);
    r.piv = malloc(piv * sizeof *r.piv);
    r.X = malloc((size_t)chunk * (size_t)nb * sizeof *r.X);
    r.Y = malloc((size_t)chunk * (size_t)C * (size_t)nb * sizeof *r.Y);
    r.H = malloc((size_t)nb * (size_t)nb * sizeof *r.H);
    r.H0 = malloc(2 * (size_t)nb * (size_t)nb * sizeof *r.H0);
    r.S = malloc((size_t)nb * sizeof *r.S);
    r.T = malloc((size_t)nb * sizeof *r.T);
    int st = r.F && r.cum && r.cols && r.piv && r.X && r.Y && r.H && r.H0 && r.S && r.T ? 0 : -1;
    if (st == 0)
        st = reserve_dd(s, piv);
    st = agree(s, st);
    r.thr = CG_PIVOT_MIN * pre->trace0 / M;
    /* An interrupt ends the pivoting (a build of rank 1 000 at M = 72 000 took 20 s, and under
     * a Ctrl-C it ran to its end): the rank reached so far still gives a preconditioner, and
     * the solve that follows stops at its first step. The flag is agreed over the processes. */
    for (int idle = 0; st == 0 && r.k < kmax && idle < 8 && !atf_sv_interrupted(s);) {
        double tr = 0.0;
        for (int m = 0; m < M; m++)
            tr += d[m];
        if (!(tr > CG_TRACE_MIN * pre->trace0))
            break;
        int before = r.k;
        st = rpc_block(&r, nb < kmax - r.k ? nb : kmax - r.k);
        idle = r.k == before ? idle + 1 : 0;
    }
    rpc_free(&r);
    if (st != 0) {
        free(r.F);
        return -1;
    }
    pre->F = r.F;
    pre->k = r.k;
    return 0;
}

/* ---- the base part B and the Woodbury core ---- */

/* Cholesky of every held C × C block (lower); a block that is not numerically positive definite
 * (a row of zeros, rows that repeat) is factored again from its copy with a growing shift. */
static int factor_blocks(atf_cg_pre *pre)
{
    int C = pre->C;
    double *copy = malloc((size_t)C * C * sizeof *copy);
    if (!copy)
        return -1;
    for (int i = 0; i < pre->Nh; i++) {
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

/* out = B⁻¹ v on the held rows (Mh values; out may alias v). */
static void base_solve(const atf_cg_pre *pre, const double *v, double *out)
{
    if (!pre->blk) {
        for (int m = 0; m < pre->Mh; m++)
            out[m] = v[m] / pre->mu;
        return;
    }
    int C = pre->C;
    for (int i = 0; i < pre->Nh; i++) {
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

/* S = chol(I + Fᵀ B⁻¹ F): per chunk the product (L⁻¹F)ᵀ(L⁻¹F) of its rows (F/√μ without
 * blocks), the chunks' lower triangles summed in double-double and over the processes. */
static int woodbury_core(atf_solver *s, atf_cg_pre *pre)
{
    const atf_sv_share *sh = &s->share;
    int k = pre->k, C = pre->C, Mh = pre->Mh, rows = atf_shard_chunk(s->work.N) * C;
    size_t kk = (size_t)k * (size_t)k;
    pre->S = calloc(kk, sizeof *pre->S);
    double *V = malloc((size_t)rows * (size_t)k * sizeof *V);
    double *T = malloc(kk * sizeof *T);
    double *lo = reserve_dd(s, kk) == 0 ? atf_sv_dd_low(s, kk) : NULL;
    int st = agree(s, pre->S && V && T && lo ? 0 : -1);
    if (st == 0) {
        memset(lo, 0, kk * sizeof *lo);
        for (int c = 0; c < sh->ncuts; c++) {
            int r0 = sh->cuts[c] * C, nr = (sh->cuts[c + 1] - sh->cuts[c]) * C;
            for (int j = 0; j < k; j++)
                memcpy(V + (size_t)j * nr, pre->F + (size_t)j * Mh + r0, (size_t)nr * sizeof *V);
            for (int i0 = 0; pre->blk && i0 < nr; i0 += C)
                cblas_dtrsm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasNonUnit, C, k,
                            1.0, pre->blk + (size_t)((r0 + i0) / C) * C * C, C, V + i0, nr);
            double *out = c ? T : pre->S;
            cblas_dsyrk(CblasColMajor, CblasLower, CblasTrans, k, nr,
                        pre->blk ? 1.0 : 1.0 / pre->mu, V, nr, 0.0, out, k);
            for (int j = 0; c && j < k; j++)
                for (int i = j; i < k; i++)
                    atf_dd_add(&pre->S[(size_t)j * k + i], &lo[(size_t)j * k + i],
                               T[(size_t)j * k + i]);
        }
        atf_sv_sum_dd(s, pre->S, lo, kk);
        for (int j = 0; j < k; j++)
            pre->S[(size_t)j * k + j] += 1.0;
        st = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', k, pre->S, k) == 0 ? 0 : -2;
    }
    free(V), free(T);
    return st;
}

/* The held blocks of the residual G − F Fᵀ plus the shift (nystrom-block), or of G (jacobi),
 * factored. */
static int residual_blocks(atf_solver *s, atf_cg_pre *pre)
{
    int C = pre->C;
    pre->blk = malloc((size_t)pre->Nh * (size_t)C * (size_t)C * sizeof *pre->blk);
    if (!pre->blk || example_blocks(s, pre->blk) != 0)
        return -1;
    for (int i = 0; i < pre->Nh; i++) {
        double *b = pre->blk + (size_t)i * C * C;
        if (pre->k > 0)
            cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, C, pre->k, -1.0,
                        pre->F + (size_t)i * C, pre->Mh, 1.0, b, C);
        for (int a = 0; a < C; a++)
            b[(size_t)a * C + a] += pre->shift;
    }
    return factor_blocks(pre);
}

/* diag(G) (all M rows, d) from the held example blocks, gathered, and its trace. */
static int gram_diagonal(atf_solver *s, atf_cg_pre *pre, double *d)
{
    int C = pre->C;
    double *blk = malloc((size_t)pre->Nh * (size_t)C * (size_t)C * sizeof *blk);
    int st = agree(s, d && blk && example_blocks(s, blk) == 0 ? 0 : -1);
    if (st == 0) {
        for (int m = 0; m < pre->Mh; m++)
            d[pre->m0 + m] = blk[(size_t)(m / C) * C * C + (size_t)(m % C) * (C + 1)];
        atf_sv_gather(s, d, C);
        pre->trace0 = 0.0;
        for (int m = 0; m < pre->M; m++)
            pre->trace0 += d[m];
    }
    free(blk);
    return st;
}

/* ---- gram32: the whole Gram in single precision ---- */

/* Where G[i][j] (i ≥ j) lies in LAPACK's rectangular full packed array (TRANSR 'N', UPLO 'L'):
 * the first n1 = M − ⌊M/2⌋ columns of the lower triangle as they are (one row down when M is
 * even; leading dimension M + 1, else M), the trailing triangle's lower part transposed into the
 * rows above them. */
static size_t rfp_at(int M, int i, int j)
{
    int n1 = M - M / 2, odd = M % 2;
    size_t lda = (size_t)(odd ? M : M + 1);
    if (j < n1)
        return (size_t)j * lda + (size_t)(i + !odd);
    return (size_t)(i - n1 + odd) * lda + (size_t)(j - n1);
}

/* The lower part of the panel's columns j0 … j0 + nb − 1 (cols: M × nb, column-major), plus the
 * shift on the diagonal, into the packed array: a column of the leading part at a time, and in
 * the trailing part a row at a time (each is contiguous there). */
static void rfp_store(float *rfp, int M, const double *cols, int j0, int nb, double shift)
{
    int n1 = M - M / 2;
    for (int t = 0; t < nb && j0 + t < n1; t++) {
        int j = j0 + t;
        const double *c = cols + (size_t)t * M;
        float *out = rfp + rfp_at(M, j, j);
        for (int i = j; i < M; i++)
            out[i - j] = (float)c[i];
        out[0] = (float)(c[j] + shift);
    }
    int t0 = j0 < n1 ? n1 - j0 : 0;
    for (int i = j0 + t0; t0 < nb && i < M; i++) {
        float *out = rfp + rfp_at(M, i, j0 + t0);
        for (int t = t0; t < nb && j0 + t <= i; t++)
            out[t - t0] = (float)(cols[(size_t)t * M + i] + (i == j0 + t ? shift : 0.0));
    }
}

/* G, a panel at a time, into the packed array with the shift. Returns 1 when an interrupt ended
 * it, -1 out of memory. */
static int gram32_fill(atf_solver *s, atf_cg_pre *pre, double shift)
{
    int M = pre->M, nb = M < CG_G32_PANEL ? M : CG_G32_PANEL, chunk = atf_shard_chunk(s->work.N);
    rpc_state r = {.s = s, .M = M, .Mh = M};
    r.cols = malloc((size_t)M * (size_t)nb * sizeof *r.cols);
    r.piv = malloc((factor_rows_len(s, nb) + 1) * sizeof *r.piv);
    r.X = malloc((size_t)chunk * (size_t)nb * sizeof *r.X);
    r.Y = malloc((size_t)chunk * (size_t)pre->C * (size_t)nb * sizeof *r.Y);
    r.S = malloc((size_t)nb * sizeof *r.S);
    int st = r.cols && r.piv && r.X && r.Y && r.S ? 0 : -1;
    for (int j0 = 0; st == 0 && j0 < M; j0 += nb) {
        int w = M - j0 < nb ? M - j0 : nb;
        for (int t = 0; t < w; t++)
            r.S[t] = j0 + t;
        r.row0 = j0;
        candidate_rows(&r, w); /* k = 0: the pivots' H and D rows only */
        st = residual_columns(&r, w);
        if (st == 0)
            rfp_store(pre->rfp, M, r.cols, j0, w, shift);
        if (st == 0 && atf_sv_interrupted(s))
            st = 1;
    }
    rpc_free(&r);
    return st;
}


/* The packed factor as a preconditioner file holds it, under this solve's key. */
static atf_precond_state gram32_file_state(const atf_cg_pre *pre, const char *key)
{
    atf_precond_state pc = {.len = (int64_t)pre->M * ((int64_t)pre->M + 1) / 2,
                            .data = pre->rfp};
    snprintf(pc.key, sizeof pc.key, "%s", key);
    return pc;
}

/* The factor of G + shift·I from hooks.precond_file (its key checked against this solve's, its
 * trace against the Gram's diagonal just computed: another Gram's factor is refused). */
static atf_error read_gram32(atf_solver *s, atf_cg_pre *pre, const char *key, char *err)
{
    const char *path = s->hooks.precond_file;
    int M = pre->M;
    atf_precond_state pc = gram32_file_state(pre, key);
    double t0 = atf_now();
    atf_error e = atf_precond_read(path, &pc, err);
    if (e)
        return e;
    double trace = pc.meta[G32_META_TRACE];
    if (!(fabs(trace - pre->trace0) <= 1e-10 * fabs(pre->trace0)) ||
        !(pc.meta[G32_META_SHIFT] > 0.0)) {
        atf_errorf(err, "%s: the preconditioner is of another Gram (trace %.17g, this one's "
                        "%.17g)", path, trace, pre->trace0);
        return ATF_E_INPUT;
    }
    pre->shift = pc.meta[G32_META_SHIFT];
    pre->factored = 1;
    if (pre->par->verbose)
        atf_sv_log(s, "atf cg: gram32: the factor read from %s in %.1f s (shift %.1e of the mean "
                      "diagonal)\n", path, atf_now() - t0, pre->shift * M / pre->trace0);
    return ATF_OK;
}

/* The factor just built into hooks.precond_file; a failure is said in the verbose log and the
 * solve goes on (the factor is only a saving of time for a resumed solve). */
static void keep_gram32(atf_solver *s, const atf_cg_pre *pre, const char *key)
{
    atf_precond_state pc = gram32_file_state(pre, key);
    pc.meta[G32_META_SHIFT] = pre->shift;
    pc.meta[G32_META_TRACE] = pre->trace0;
    char why[ATF_ERRLEN];
    double t0 = atf_now();
    atf_error e = atf_precond_write(s->hooks.precond_file, &pc, why);
    if (pre->par->verbose && e)
        atf_sv_log(s, "atf cg: gram32: the factor was not kept (%s)\n", why);
    else if (pre->par->verbose)
        atf_sv_log(s, "atf cg: gram32: the factor kept in %s in %.1f s\n",
                   s->hooks.precond_file, atf_now() - t0);
}

/* The factor of G + shift·I in single precision, the shift growing tenfold from 10⁻⁶ of the mean
 * diagonal while the factorisation meets a nonpositive pivot (G is formed again each time: the
 * factorisation overwrites it). One process: the packed array is not spread. */
static atf_error build_gram32(atf_solver *s, atf_cg_pre *pre, char *err)
{
    int M = pre->M;
    if (pre->Nh != pre->N) {
        atf_errorf(err, "cg: the gram32 preconditioner holds all of A'A'ᵀ and needs one process, "
                        "not %d", s->procs ? s->procs->size : 1);
        return ATF_E_USAGE;
    }
    size_t len = (size_t)M * ((size_t)M + 1) / 2;
    double need;
    if (!atf_linsys_gram32_fits(&s->work, pre->par->memory_fraction, &need)) {
        atf_errorf(err, "cg: the gram32 preconditioner needs %.1f GB for the single-precision "
                        "Gram (M = %d), over %.0f%% of the %.1f GB available", need / 1e9, M,
                   100.0 * pre->par->memory_fraction, atf_linsys_available_bytes() / 1e9);
        return ATF_E_NOMEM;
    }
    double *d = malloc((size_t)M * sizeof *d);
    pre->rfp = malloc(len * sizeof *pre->rfp);
    pre->v32 = malloc((size_t)M * sizeof *pre->v32);
    int st = d && pre->rfp && pre->v32 ? gram_diagonal(s, pre, d) : -1;
    free(d);
    double mean = pre->trace0 / M, shift = CG_SHIFT_MIN * mean, t0 = atf_now();
    char key[ATF_CHECKPOINT_KEYLEN] = "";
    if (st == 0 && s->hooks.precond_file) {
        atf_error e = atf_sv_checkpoint_key(s, "gram32 factor 1", &s->loss, pre->par->eps_rel,
                                            NULL, key, err);
        if (!e && access(s->hooks.precond_file, F_OK) == 0)
            e = read_gram32(s, pre, key, err);
        if (e || pre->factored)
            return e;
    }
    if (pre->par->verbose)
        atf_sv_log(s, "atf cg: gram32: the Gram in single precision (M = %d, %.2f GB), then "
                      "its Cholesky factor (%.2g flops, one LAPACK call)\n",
                   M, need / 1e9, (double)M * M * M / 3.0);
    double fill_s = 0.0, factor_s = 0.0; /* the last attempt's */
    while (st == 0) {
        double t1 = atf_now();
        st = gram32_fill(s, pre, shift);
        if (st != 0)
            break;
        double t2 = atf_now();
        fill_s = t2 - t1;
        lapack_int info = LAPACKE_spftrf_work(LAPACK_COL_MAJOR, 'N', 'L', M, pre->rfp);
        factor_s = atf_now() - t2;
        if (info == 0) {
            pre->factored = 1;
            break;
        }
        if (info < 0 || (shift *= 10.0) > CG_G32_SHIFT_MAX * mean) {
            atf_errorf(err, "cg: the single-precision Gram (M = %d) is not positive definite "
                            "with a shift of %.1e of its mean diagonal", M, shift / 10.0 / mean);
            return ATF_E_NUMERICAL;
        }
    }
    pre->shift = shift;
    if (st == 0 && pre->par->verbose)
        atf_sv_log(s, "atf cg: gram32: formed and factored in %.1f s (the last attempt: formed "
                      "in %.1f s, factored in %.1f s; shift %.1e of the mean diagonal)\n",
                   atf_now() - t0, fill_s, factor_s, shift / mean);
    if (st == 0 && s->hooks.precond_file)
        keep_gram32(s, pre, key);
    if (st < 0) {
        atf_errorf(err, "cg: out of memory for the gram32 preconditioner (M = %d: %.1f GB)", M,
                   need / 1e9);
        return ATF_E_NOMEM;
    }
    return ATF_OK; /* st = 1: interrupted, not factored; the solve stops at its first step */
}

/* x ← (L Lᵀ)⁻¹ x for the Cholesky factor L in the packed array (spftrf's output, rfp_at's
 * layout): L = [L11 0; L21 U22ᵀ] with L11 (n1 × n1, lower) and L21 (n2 × n1) where the leading
 * columns were, and U22 (n2 × n2, upper) where the trailing triangle was. LAPACK's spftrs does
 * the same through strsm and sgemm, which for one right-hand side copy (pack) the whole factor
 * on every call: 68 % of an ADMM iteration at M = 80 000 went to those copies. Level-2 BLAS
 * reads each entry once: 2.82× faster at M = 20 000 (bench_rfp_solve,
 * docs/record/solver.md §2.1). */
void atf_sv_cg_rfp_solve(int M, const float *rfp, float *x)
{
    int n2 = M / 2, n1 = M - n2, odd = M % 2, lda = odd ? M : M + 1;
    const float *l11 = rfp + !odd, *l21 = rfp + n1 + !odd, *u22 = rfp + (odd ? M : 0);
    float *x1 = x, *x2 = x + n1;
    cblas_strsv(CblasColMajor, CblasLower, CblasNoTrans, CblasNonUnit, n1, l11, lda, x1, 1);
    cblas_sgemv(CblasColMajor, CblasNoTrans, n2, n1, -1.0f, l21, lda, x1, 1, 1.0f, x2, 1);
    cblas_strsv(CblasColMajor, CblasUpper, CblasTrans, CblasNonUnit, n2, u22, lda, x2, 1);
    cblas_strsv(CblasColMajor, CblasUpper, CblasNoTrans, CblasNonUnit, n2, u22, lda, x2, 1);
    cblas_sgemv(CblasColMajor, CblasTrans, n2, n1, -1.0f, l21, lda, x2, 1, 1.0f, x1, 1);
    cblas_strsv(CblasColMajor, CblasLower, CblasTrans, CblasNonUnit, n1, l11, lda, x1, 1);
}

/* out = (G + shift·I)⁻¹ v through the single-precision factor, v scaled to at most 1 in size
 * first (a power of two) so that no value leaves the range of floats; the identity before the
 * factor is complete. */
static void gram32_apply(atf_cg_pre *pre, const double *v, double *out)
{
    int M = pre->M, e;
    double big = 0.0;
    for (int m = 0; m < M; m++)
        big = fmax(big, fabs(v[m]));
    if (!pre->factored || !(big > 0.0) || !isfinite(big)) {
        memcpy(out, v, (size_t)M * sizeof *out);
        return;
    }
    frexp(big, &e);
    for (int m = 0; m < M; m++)
        pre->v32[m] = (float)ldexp(v[m], -e);
    atf_sv_cg_rfp_solve(M, pre->rfp, pre->v32);
    for (int m = 0; m < M; m++)
        out[m] = ldexp((double)pre->v32[m], e);
}

static atf_error build_low_rank(atf_solver *s, const atf_cg_options *opt, atf_cg_pre *pre,
                                char *err)
{
    double *d = malloc((size_t)pre->M * sizeof *d);
    int k = opt->rank > 0 ? (opt->rank < pre->M ? opt->rank : pre->M)
                          : atf_sv_cg_default_rank(pre->M, opt->budget_bytes);
    k = (int)-atf_sv_max(s, -(double)k); /* the available memory may differ between processes */
    int st = gram_diagonal(s, pre, d);
    if (st == 0 && k > 0)
        st = rpcholesky(s, pre, k, opt->seed ? opt->seed : ATF_CG_SEED, d);
    if (st == 0) {
        pre->trace_res = 0.0;
        for (int m = 0; m < pre->M; m++)
            pre->trace_res += d[m];
        double f = opt->shift_factor > 0.0 ? opt->shift_factor
                   : pre->kind == ATF_PRECOND_NYSTROM ? CG_MU_FACTOR
                                                         : CG_BLOCK_SHIFT_FACTOR;
        pre->mu = pre->shift = fmax(f * pre->trace_res / pre->M,
                                    CG_SHIFT_MIN * pre->trace0 / pre->M);
    }
    free(d);
    if (st == 0 && pre->kind == ATF_PRECOND_NYSTROM_BLOCK)
        st = agree(s, residual_blocks(s, pre));
    if (st == 0 && pre->k > 0)
        st = woodbury_core(s, pre);
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

atf_error atf_sv_cg_precond_build(atf_solver *s, const atf_cg_options *opt,
                                  const atf_linsys_params *par, atf_cg_pre *pre, char *err)
{
    double t0 = atf_now();
    atf_sv_cg_precond_free(pre);
    pre->par = par;
    pre->kind = opt->precond == ATF_PRECOND_AUTO ? ATF_PRECOND_NYSTROM_BLOCK
                                                       : opt->precond;
    pre->s = s;
    pre->M = s->work.M, pre->N = s->work.N, pre->C = s->work.C;
    pre->Nh = s->share.count, pre->Mh = s->share.count * pre->C;
    pre->m0 = s->share.first * pre->C;
    atf_error e = ATF_OK;
    if (pre->kind == ATF_PRECOND_JACOBI) {
        double *d = malloc((size_t)pre->M * sizeof *d);
        int st = gram_diagonal(s, pre, d);
        free(d);
        pre->shift = CG_SHIFT_MIN * pre->trace0 / pre->M;
        if (st != 0 || agree(s, residual_blocks(s, pre)) != 0) {
            atf_errorf(err, "cg: out of memory for the block Jacobi preconditioner (N = %d, "
                            "C = %d)", pre->N, pre->C);
            e = ATF_E_NOMEM;
        }
    } else if (pre->kind == ATF_PRECOND_GRAM32) {
        e = build_gram32(s, pre, err);
    } else if (pre->kind != ATF_PRECOND_NONE) {
        e = build_low_rank(s, opt, pre, err);
    }
    pre->u = malloc((size_t)(pre->Mh > 0 ? pre->Mh : 1) * sizeof *pre->u);
    pre->t = malloc(2 * (size_t)(pre->k > 0 ? pre->k : 1) * sizeof *pre->t);
    int room = pre->u && pre->t && reserve_dd(s, (size_t)pre->k) == 0;
    if (e == ATF_OK && agree(s, room ? 0 : -1) != 0) {
        atf_errorf(err, "cg: out of memory for the preconditioner's workspace (M = %d)", pre->M);
        e = ATF_E_NOMEM;
    }
    pre->seconds = atf_now() - t0;
    return e;
}

/* t = Fᵀu (k values) over the held rows u, chunk by chunk in double-double and summed over the
 * processes. */
static void low_rank_coefficients(atf_cg_pre *pre, const double *u, double *t)
{
    atf_solver *s = pre->s;
    const atf_sv_share *sh = &s->share;
    int k = pre->k, C = pre->C;
    double *tc = pre->t + k, *lo = atf_sv_dd_low(s, (size_t)k);
    if (lo)
        memset(lo, 0, (size_t)k * sizeof *lo);
    for (int c = 0; c < sh->ncuts; c++) {
        int r0 = sh->cuts[c] * C, nr = (sh->cuts[c + 1] - sh->cuts[c]) * C;
        cblas_dgemv(CblasColMajor, CblasTrans, nr, k, 1.0, pre->F + r0, pre->Mh, u + r0, 1, 0.0,
                    c ? tc : t, 1);
        for (int j = 0; c && lo && j < k; j++)
            atf_dd_add(&t[j], &lo[j], tc[j]);
    }
    atf_sv_sum_dd(s, t, lo, (size_t)k);
}

void atf_sv_cg_precond_apply(atf_cg_pre *pre, const double *v, double *out)
{
    int Mh = pre->Mh, k = pre->k, C = pre->C;
    if (pre->kind == ATF_PRECOND_NONE) {
        memcpy(out, v, (size_t)pre->M * sizeof *out);
        return;
    }
    if (pre->kind == ATF_PRECOND_GRAM32) {
        gram32_apply(pre, v, out);
        return;
    }
    const double *vh = v + pre->m0;
    double *oh = out + pre->m0;
    if (k == 0) { /* block Jacobi, or a low-rank part that found no pivot */
        base_solve(pre, vh, oh);
        atf_sv_gather(pre->s, out, C);
        return;
    }
    const atf_sv_share *sh = &pre->s->share;
    base_solve(pre, vh, pre->u); /* u = B⁻¹v */
    low_rank_coefficients(pre, pre->u, pre->t);
    LAPACKE_dpotrs_work(LAPACK_COL_MAJOR, 'L', k, 1, pre->S, k, pre->t, k);
    for (int c = 0; c < sh->ncuts; c++) {
        int r0 = sh->cuts[c] * C, nr = (sh->cuts[c + 1] - sh->cuts[c]) * C;
        cblas_dgemv(CblasColMajor, CblasNoTrans, nr, k, 1.0, pre->F + r0, Mh, pre->t, 1, 0.0,
                    oh + r0, 1);
    }
    base_solve(pre, oh, oh); /* B⁻¹F S⁻¹FᵀB⁻¹v */
    for (int m = 0; m < Mh; m++)
        oh[m] = pre->u[m] - oh[m];
    atf_sv_gather(pre->s, out, C);
}

void atf_sv_cg_precond_free(atf_cg_pre *pre)
{
    free(pre->F), free(pre->S), free(pre->blk), free(pre->u), free(pre->t);
    free(pre->rfp), free(pre->v32);
    memset(pre, 0, sizeof *pre);
}
