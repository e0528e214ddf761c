/* atf_shard.h — sums over examples that do not depend on how the examples are spread over
 * processes (docs/solver.md, "Several processes"). Internal: problems/, solver/ and atf's own
 * programs (drivers/cli/cli_mpi.c combines the processes' partial sums with atf_dd_add_dd).
 *
 * A sum over examples is formed chunk by chunk (atf_shard_chunk: the cut depends on N only),
 * and the chunks' partial sums are accumulated in double-double arithmetic (a value hi + lo
 * carried to about 106 bits). Which process holds which chunks then changes only the order of
 * the double-double additions, whose errors are some 2⁻¹⁰⁶ of the sum: rounded to one double
 * (hi), the total is the same for any number of processes except where the exact sum lies
 * within that distance of a rounding boundary. */
#ifndef ATF_SHARD_H
#define ATF_SHARD_H

#include "atf_problem.h"

/* (hi, lo) += x (TwoSum, then renormalised: hi is the double nearest hi + lo). */
static inline void atf_dd_add(double *hi, double *lo, double x)
{
    double s = *hi + x, bv = s - *hi;
    double e = ((*hi - (s - bv)) + (x - bv)) + *lo;
    double h = s + e;
    *lo = e - (h - s);
    *hi = h;
}

/* (hi, lo) += x elementwise over n entries (arrays that do not overlap). The chunk sums of a
 * pass add a few hundred such vectors: the loop is vectorised (-fopenmp-simd), which changes no
 * bit, each entry's operations being the same. */
static inline void atf_dd_add_vec(size_t n, double *restrict hi, double *restrict lo,
                                  const double *restrict x)
{
#pragma omp simd
    for (size_t j = 0; j < n; j++)
        atf_dd_add(&hi[j], &lo[j], x[j]);
}

/* (hi, lo) += (xh, xl). */
static inline void atf_dd_add_dd(double *hi, double *lo, double xh, double xl)
{
    double s = *hi + xh, bv = s - *hi;
    double e = ((*hi - (s - bv)) + (xh - bv)) + (*lo + xl);
    double h = s + e;
    *lo = e - (h - s);
    *hi = h;
}

/* A process's chunks are given as cuts: chunk t is the held examples cuts[t] … cuts[t+1] − 1
 * (ncuts chunks, ncuts + 1 cuts, at most ATF_SHARD_MAX_CUTS). atf_shard_uniform_cuts writes
 * those of n examples in chunks of `chunk` and returns ncuts. */
#define ATF_SHARD_MAX_CUTS 258
int atf_shard_uniform_cuts(int n, int chunk, int *cuts);

/* ---- atf's own threads (operators.c) ----
 * The products run on a team of threads, as many as the BLAS was given (at most 16), each GEMM
 * on one BLAS thread, so that their bits do not depend on the number of threads.
 * atf_serial_begin sets the BLAS to one thread until the matching atf_serial_end (regions
 * nest; the count the BLAS had is restored at the outermost end) and returns the team's size:
 * a solver whose every BLAS call must give the same bits on any number of threads runs inside
 * one. atf_team_size: the team's size now. */
int atf_serial_begin(void);
void atf_serial_end(void);
int atf_team_size(void);

/* Apply of a factored block over the examples it holds (a view), y = beta·y + A x (beta = 0
 * overwrites): the GEMM with H chunk by chunk (cuts), the same bits whichever process holds the
 * chunk. work: N × cols. */
void atf_shard_apply(const atf_block *b, const int *cuts, int ncuts, const double *B,
                     double beta, double *y, double *work);

/* Adjoint of a factored block over the examples it holds (a view: N and M its own): the
 * chunks' partial sums of Hᵀ Λ D in double-double, hi and lo (rows × cols each, overwritten).
 * lambda holds the block's own rows (b->M of them). work: atf_shard_adjoint_work_size doubles. */
int64_t atf_shard_adjoint_work_size(const atf_block *b);
void atf_shard_adjoint_dd(const atf_block *b, const int *cuts, int ncuts,
                          const double *lambda, double *hi, double *lo, double *work);

/* atf_factored_hess over the examples the blocks hold (a view: N = the examples held, example
 * `first` of the whole problem onwards) in the chunks `cuts`: the curvature is asked for
 * example first + i, y holds the held examples' rows only, and the G_l come as
 * double-double pairs (G[l], Glo[l]). work: atf_shard_hess_work_size doubles (Glo = NULL:
 * the low parts are dropped, in atf_factored_hess_work_size doubles). */
int64_t atf_shard_hess_work_size(int nb, const atf_block *const *b, int k);
void atf_shard_hess_dd(int nb, const atf_block *const *b, const int *cuts, int ncuts, int first,
                       int k,
                       const double *const *X, double *const *G, double *const *Glo,
                       atf_curvature_fn *curv, void *ctx, double *y, double *work);

/* fn(ctx, i0, i1) over contiguous ranges covering examples 0 … N − 1, one range a member of the
 * team (the caller's thread takes the first; none below 512 examples a thread): for loops
 * whose every example writes only its own outputs, so the split changes no result. */
void atf_for_examples(int N, void (*fn)(void *ctx, int i0, int i1), void *ctx);

/* The per-example steps of the products through factored blocks, for a method that forms its
 * own T = H X (the factored method's low-rank products), over the examples the blocks hold:
 * y_m += ⟨T_i, δ_m⟩ (T: N × cols); S_i = Σ_k λ_{iC+k} δ_{iC+k} (S: N × cols, overwritten); and
 * both through blocks b[0 … nb) with the curvature in between, D read once: T holds the blocks'
 * T_l (N × k·cols_l, row i the k vectors side by side) one after the other, y_i = Σ_l D_li t_li,
 * u_i = K_i y_i for example first + i (curv NULL: u = y), and T_l's row i ← D_liᵀ u_i; y [M·k]
 * holds u on return, example i's k vectors together at y + i·k·C. */
void atf_factored_rows_dot(const atf_block *b, const double *T, double *y);
void atf_factored_rows_gather(const atf_block *b, const double *lambda, double *S);
void atf_factored_rows_curv(int nb, const atf_block *const *b, int k, int first, double *T,
                            atf_curvature_fn *curv, void *ctx, double *y);

/* A tile of a factored block's Gram (H Hᵀ ⊗ 1_C 1_Cᵀ) ∘ (D Dᵀ), for a Gram spread over
 * processes (solver/gram_dist.c): between the na examples of Ha (na × P) and Da (na·C × Q) and
 * the nb examples of Hb, Db (row-major, whole examples), added to T: T[a·ldt + b] += the entry
 * of rows a of Da and b of Db, for a < na·C, b < nb·C. The same Hadamard step as the whole
 * Gram's panels (atf_factored_gram). work: atf_factored_gram_tile_work(na, nb, C) doubles. */
int64_t atf_factored_gram_tile_work(int na, int nb, int C);
void atf_factored_gram_tile(int C, int P, int Q, int na, const double *Ha, const double *Da,
                            int nb, const double *Hb, const double *Db, double *T, int ldt,
                            double *work);

/* The per-example arrays of p (from atf_problem_new(n, prob->C, …), whose zeroed r is
 * replaced): r, y, f0 (C per example) and labels (one per example) of prob's examples
 * idx[0 … n−1] — prob's whole arrays, which a shard keeps whole too. 0, or −1 out of memory
 * (p then holds what was made, for atf_problem_free). */
int atf_problem_pick_example_arrays(const atf_problem *prob, atf_problem *p, const int *idx,
                                    int n);

#endif
