/* operators.c — the constraint operators A_b of docs/formats.md: apply, adjoint, Gram, dense.
 *
 * Dense blocks store A_b itself (J, M × n with n = rows·cols); sparse blocks store it in CSR;
 * factored blocks store H (N × rows) and D (M × cols) with (A_b vec B)_m = h_iᵀ B δ_m for
 * m = i·C + k. Factored blocks are never expanded: apply is one GEMM (H B) followed by row dot
 * products, the adjoint is one GEMM Hᵀ (Λ D), and the Gram is the Hadamard product of H Hᵀ
 * (expanded to rows) with D Dᵀ.
 *
 * Scratch space: factored apply/adjoint need N × cols doubles, Gram needs N × N plus a panel.
 * The functions return void (they run inside solver loops); if scratch cannot be allocated the
 * output is filled with NaN, which every caller's finiteness check turns into an error. */
#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "atf_problem.h"
#include "atf_shard.h"
#include "atf_util.h"

/* Rows of D Dᵀ (or J Jᵀ) computed per GEMM call in the Gram: bounds scratch to PANEL × M. */
#define GRAM_PANEL 256

static int64_t block_nvars(const atf_block *b)
{
    return (int64_t)b->rows * b->cols;
}

static void fill_nan(double *x, int64_t n)
{
    for (int64_t j = 0; j < n; j++)
        x[j] = NAN;
}

/* x = beta·x, with beta = 0 meaning "overwrite" (x may be uninitialised or hold NaN). */
static void scale_or_zero(double *x, int64_t n, double beta)
{
    if (beta == 0.0)
        memset(x, 0, (size_t)n * sizeof *x);
    else if (beta != 1.0)
        cblas_dscal((int)n, beta, x, 1);
}

/* ------------------------------------------------------------------ apply */

static void sparse_apply(const atf_block *b, const double *B, double *y)
{
    for (int m = 0; m < b->M; m++) {
        double s = 0.0;
        for (int64_t p = b->indptr[m]; p < b->indptr[m + 1]; p++)
            s += b->data[p] * B[b->indices[p]];
        y[m] += s;
    }
}

/* y[k] += ⟨δ_k, t⟩ for the C rows δ_k of one example's slab d (C × Q). */
static inline void slab_dot(int C, int Q, const double *restrict d, const double *restrict t,
                            double *restrict y)
{
    for (int k = 0; k < C; k++)
        y[k] += atf_dot(d + (size_t)k * Q, t, Q);
}

/* s = Σ_k λ_k δ_k (overwrites s, Q values) for one example's slab d (C × Q). */
static inline void slab_gather(int C, int Q, const double *restrict d,
                               const double *restrict lambda, double *restrict s)
{
    memset(s, 0, (size_t)Q * sizeof *s);
    for (int k = 0; k < C; k++) { /* in blocks of 8, which the compiler vectorizes at -O2 (each
                                     entry's arithmetic as in the plain loop) */
        const double *dk = d + (size_t)k * Q;
        double lk = lambda[k];
        int j = 0;
        for (; j + 8 <= Q; j += 8)
            for (int l = 0; l < 8; l++)
                s[j + l] += lk * dk[j + l];
        for (; j < Q; j++)
            s[j] += lk * dk[j];
    }
}

/* ---- atf's own threads: one arithmetic on any number of them ----
 * A product's work splits into independent pieces: the chunks' GEMMs with H (atf_shard.h) and
 * the per-example streams through D. A team of threads (as many as the BLAS was given) runs
 * them, each GEMM on one BLAS thread, and the chunks' sums are added in the chunks' order. A
 * GEMM split over the BLAS's own threads rounds some entries differently for another thread
 * count (OpenBLAS hands each thread's edge rows to edge kernels that add in another order), and
 * over a few thousand Newton-CG steps one thread and two ended 1e-7 apart; this way the bits
 * are the same on any number of threads and the same as a process's share under mpirun. */
#define TEAM_MAX 16
/* Below these a thread costs more than it saves (a thread is started for each piece, some
 * 20–50 µs): examples of a stream, multiply-adds of a chunk's GEMM, entries of the additions. */
#define ROWS_MIN_PER_THREAD 512
#define GEMM_MIN_PER_THREAD ((int64_t)1 << 20)
#define ADD_MIN_PER_THREAD ((int64_t)1 << 18)

static pthread_mutex_t serial_lock = PTHREAD_MUTEX_INITIALIZER;
static int serial_depth, serial_blas_threads;

static int clamp_team(int T)
{
    return T < 1 ? 1 : T > TEAM_MAX ? TEAM_MAX : T;
}

int atf_serial_begin(void)
{
    pthread_mutex_lock(&serial_lock);
    if (serial_depth++ == 0) {
        serial_blas_threads = openblas_get_num_threads();
        if (serial_blas_threads != 1)
            openblas_set_num_threads(1);
    }
    int team = clamp_team(serial_blas_threads);
    pthread_mutex_unlock(&serial_lock);
    return team;
}

void atf_serial_end(void)
{
    pthread_mutex_lock(&serial_lock);
    if (serial_depth > 0 && --serial_depth == 0 && serial_blas_threads != 1)
        openblas_set_num_threads(serial_blas_threads);
    pthread_mutex_unlock(&serial_lock);
}

int atf_team_size(void)
{
    pthread_mutex_lock(&serial_lock);
    int T = serial_depth ? serial_blas_threads : openblas_get_num_threads();
    pthread_mutex_unlock(&serial_lock);
    return clamp_team(T);
}

typedef void team_fn(void *ctx, int t, int T);
typedef struct {
    team_fn *fn;
    void *ctx;
    int t, T;
} team_member;

static void *team_thread(void *arg)
{
    team_member *m = arg;
    m->fn(m->ctx, m->t, m->T);
    return NULL;
}

/* fn(ctx, t, T) for t = 0 … T − 1, member 0 on the caller's thread; a member whose thread
 * cannot be had runs on the caller's after the others. */
static void team_run(int T, team_fn *fn, void *ctx)
{
    T = clamp_team(T);
    team_member m[TEAM_MAX];
    pthread_t th[TEAM_MAX];
    int started[TEAM_MAX] = {0};
    for (int t = 0; t < T; t++)
        m[t] = (team_member){fn, ctx, t, T};
    for (int t = 1; t < T; t++)
        started[t] = pthread_create(&th[t], NULL, team_thread, &m[t]) == 0;
    fn(ctx, 0, T);
    for (int t = 1; t < T; t++) {
        if (started[t])
            pthread_join(th[t], NULL);
        else
            fn(ctx, t, T);
    }
}

/* Member t of T takes the t-th of T contiguous runs of 0 … n − 1. */
static int run_start(int64_t n, int t, int T)
{
    return (int)(n * t / T);
}

typedef void rows_fn(void *ctx, int i0, int i1);
typedef struct {
    rows_fn *fn;
    void *ctx;
    int n;
} runs_job;

static void runs_part(void *arg, int t, int T)
{
    const runs_job *j = arg;
    j->fn(j->ctx, run_start(j->n, t, T), run_start(j->n, t + 1, T));
}

/* Every example's outputs are its own, so the split does not change them. */
void atf_for_examples(int N, void (*fn)(void *ctx, int i0, int i1), void *ctx)
{
    int T = atf_team_size();
    if (T > N / ROWS_MIN_PER_THREAD)
        T = N / ROWS_MIN_PER_THREAD > 1 ? N / ROWS_MIN_PER_THREAD : 1;
    runs_job j = {fn, ctx, N};
    team_run(T, runs_part, &j);
}

/* Members for `pieces` pieces of work `each`, at least `least` of it a member. */
static int members_for(int pieces, int64_t each, int64_t least)
{
    int T = atf_team_size();
    int64_t worth = pieces * each / least;
    if (T > worth)
        T = (int)worth;
    if (T > pieces)
        T = pieces;
    return T > 1 ? T : 1;
}

/* The examples of the largest of ncuts chunks cut as evenly as atf_shard_uniform_cuts does. */
static int64_t chunk_examples(const int *cuts, int ncuts)
{
    return ncuts ? ((int64_t)cuts[ncuts] - cuts[0] + ncuts - 1) / ncuts : 0;
}

/* fn(ctx, c0, c1) over runs of the chunks 0 … ncuts − 1, one run a member (chunks whose
 * outputs are their own; madds: an example's multiply-adds). */
static void for_chunks(const int *cuts, int ncuts, int64_t madds, rows_fn *fn, void *ctx)
{
    runs_job j = {fn, ctx, ncuts};
    team_run(members_for(ncuts, chunk_examples(cuts, ncuts) * madds, GEMM_MIN_PER_THREAD),
             runs_part, &j);
}

typedef struct {
    int C, Q;
    const double *D, *in;
    double *out;
} rows_job;

static void rows_dot_range(void *ctx, int i0, int i1)
{
    const rows_job *j = ctx;
    for (int i = i0; i < i1; i++)
        slab_dot(j->C, j->Q, j->D + (size_t)i * j->C * j->Q, j->in + (size_t)i * j->Q,
                 j->out + (size_t)i * j->C);
}

static void rows_gather_range(void *ctx, int i0, int i1)
{
    const rows_job *j = ctx;
    for (int i = i0; i < i1; i++)
        slab_gather(j->C, j->Q, j->D + (size_t)i * j->C * j->Q, j->in + (size_t)i * j->C,
                    j->out + (size_t)i * j->Q);
}

/* y_i += D_i t_i for each example i: D_i is the C × Q slab of D's rows i·C … i·C + C − 1. */
static void rows_dot(int N, int C, int Q, const double *D, const double *T, double *y)
{
    rows_job j = {C, Q, D, T, y};
    atf_for_examples(N, rows_dot_range, &j);
}

/* S_i = D_iᵀ λ_i for each example i (overwrites S, N × Q). */
static void rows_gather(int N, int C, int Q, const double *D, const double *lambda, double *S)
{
    rows_job j = {C, Q, D, lambda, S};
    atf_for_examples(N, rows_gather_range, &j);
}

/* The caller's scratch, or a fresh one (freed by release_scratch) when work is NULL. */
static double *take_scratch(const atf_block *b, double *work)
{
    return work ? work : malloc((size_t)atf_block_work_size(b) * sizeof(double));
}

static void release_scratch(double *scratch, const double *work)
{
    if (scratch != work)
        free(scratch);
}

static void products_chunks(void *arg, int c0, int c1);

typedef struct {
    int nb;
    const atf_block *const *b;
    const int *cuts;
    int k;
    const double *const *X;
    double *T;
} products_job;

void atf_shard_apply(const atf_block *b, const int *cuts, int ncuts, const double *B,
                     double beta, double *y, double *work)
{
    /* T = H B (N × cols) chunk by chunk (the fused product's first step, for one vector); then
     * y_m += ⟨T_i, δ_m⟩. */
    scale_or_zero(y, b->M, beta);
    atf_serial_begin();
    products_job j = {1, &b, cuts, 1, &B, work};
    for_chunks(cuts, ncuts, (int64_t)b->rows * b->cols, products_chunks, &j);
    rows_dot(b->N, b->C, b->cols, b->D, work, y);
    atf_serial_end();
}

static void factored_apply(const atf_block *b, const double *B, double *y, double *work)
{
    double *T = take_scratch(b, work);
    if (!T) {
        fill_nan(y, b->M);
        return;
    }
    int cuts[ATF_SHARD_MAX_CUTS];
    int ncuts = atf_shard_uniform_cuts(b->N, atf_shard_chunk(b->N), cuts);
    atf_shard_apply(b, cuts, ncuts, B, 1.0, y, T);
    release_scratch(T, work);
}

/* Apply needs N × cols; the adjoint that and three rows × cols arrays (a chunk's product, and
 * the double-double sum). */
int64_t atf_block_work_size(const atf_block *b)
{
    return b->kind == ATF_OP_FACTORED ? atf_shard_adjoint_work_size(b) + 2 * block_nvars(b) : 0;
}

void atf_block_apply(const atf_block *b, const double *B, double beta, double *y)
{
    atf_block_apply_work(b, B, beta, y, NULL);
}

void atf_block_apply_work(const atf_block *b, const double *B, double beta, double *y,
                          double *work)
{
    scale_or_zero(y, b->M, beta);
    switch (b->kind) {
    case ATF_OP_DENSE:
        cblas_dgemv(CblasRowMajor, CblasNoTrans, b->M, (int)block_nvars(b), 1.0, b->J,
                    (int)block_nvars(b), B, 1, 1.0, y, 1);
        break;
    case ATF_OP_SPARSE:
        sparse_apply(b, B, y);
        break;
    case ATF_OP_FACTORED:
        factored_apply(b, B, y, work);
        break;
    }
}

/* ------------------------------------------------------------------ adjoint */

static void sparse_adjoint(const atf_block *b, const double *lambda, double *B)
{
    for (int m = 0; m < b->M; m++)
        for (int64_t p = b->indptr[m]; p < b->indptr[m + 1]; p++)
            B[b->indices[p]] += b->data[p] * lambda[m];
}

/* Σ over the chunks of Hᵀ S (rows × cols), chunk t being examples cuts[t] … cuts[t+1] − 1 of
 * the n held: each chunk's GEMM into a buffer, added to (hi, lo) in double-double in the
 * chunks' order (atf_shard.h: the same sum whichever process holds which chunk). The team runs
 * a round of chunks' GEMMs at once, one buffer a member (T, and more when they can be had),
 * then the round's additions split by entries: every entry sees the same additions in the same
 * order for any team. No chunk (n = 0): zero. */
typedef struct {
    const int *cuts;
    int P, Q;
    const double *H, *S;
    double *buf[TEAM_MAX];
    double *hi, *lo;
    size_t len;
    int first; /* the round: chunks first … first + count − 1 */
    int count;
} sums_job;

static int chunk_size(const sums_job *j, int c)
{
    return j->cuts[c + 1] - j->cuts[c];
}

static void sums_gemm(void *arg, int t, int T)
{
    (void)T;
    const sums_job *j = arg;
    int c = j->first + t, i0 = j->cuts[c], m = chunk_size(j, c);
    if (m > 0) /* the first chunk straight into hi */
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, j->P, j->Q, m, 1.0,
                    j->H + (size_t)i0 * j->P, j->P, j->S + (size_t)i0 * j->Q, j->Q, 0.0,
                    c ? j->buf[t] : j->hi, j->Q);
}

static void sums_add(void *arg, int t, int T)
{
    const sums_job *j = arg;
    size_t e0 = (size_t)run_start((int64_t)j->len, t, T);
    size_t e1 = (size_t)run_start((int64_t)j->len, t + 1, T);
    for (int u = 0; u < j->count; u++) {
        int c = j->first + u;
        if (c > 0 && chunk_size(j, c) > 0)
            atf_dd_add_vec(e1 - e0, j->hi + e0, j->lo + e0, j->buf[u] + e0);
    }
}

static void chunk_sums(const int *cuts, int ncuts, int P, int Q, const double *H,
                       const double *S, double *T, double *hi, double *lo)
{
    sums_job j = {cuts, P, Q, H, S, {T}, hi, lo, (size_t)P * (size_t)Q, 0, 0};
    memset(hi, 0, j.len * sizeof *hi);
    memset(lo, 0, j.len * sizeof *lo);
    /* a round at a time, one chunk a member: worth it when one chunk is */
    int64_t madds = chunk_examples(cuts, ncuts) * P * Q;
    int team = madds >= GEMM_MIN_PER_THREAD ? members_for(ncuts, 1, 1) : 1;
    double *more = team > 1 ? malloc((size_t)(team - 1) * j.len * sizeof *more) : NULL;
    if (!more) /* one buffer: the same sums, one chunk at a time */
        team = 1;
    for (int u = 1; u < team; u++)
        j.buf[u] = more + (size_t)(u - 1) * j.len;
    for (j.first = 0; j.first < ncuts; j.first += team) {
        j.count = ncuts - j.first < team ? ncuts - j.first : team;
        team_run(j.count, sums_gemm, &j);
        team_run(members_for(j.count, (int64_t)j.len, ADD_MIN_PER_THREAD), sums_add, &j);
    }
    free(more);
}

int atf_shard_uniform_cuts(int n, int chunk, int *cuts)
{
    int t = 0;
    for (int i = 0; i < n; i += chunk)
        cuts[t++] = i;
    cuts[t] = n;
    return t;
}

int64_t atf_shard_adjoint_work_size(const atf_block *b)
{
    return (int64_t)b->N * b->cols + block_nvars(b);
}

void atf_shard_adjoint_dd(const atf_block *b, const int *cuts, int ncuts,
                          const double *lambda, double *hi, double *lo, double *work)
{
    /* S = Λ D (N × cols): row i gathers Σ_k λ_{iC+k} δ_{iC+k}; then Σ over chunks of Hᵀ S. */
    double *S = work, *T = work + (size_t)b->N * b->cols;
    atf_serial_begin();
    rows_gather(b->N, b->C, b->cols, b->D, lambda, S);
    chunk_sums(cuts, ncuts, b->rows, b->cols, b->H, S, T, hi, lo);
    atf_serial_end();
}

static void factored_adjoint(const atf_block *b, const double *lambda, double *B, double *work)
{
    /* B += hi, with the double-double pair in the scratch after the shard's own. */
    double *S = take_scratch(b, work);
    if (!S) {
        fill_nan(B, block_nvars(b));
        return;
    }
    int64_t n = block_nvars(b);
    double *hi = S + atf_shard_adjoint_work_size(b), *lo = hi + n;
    int cuts[ATF_SHARD_MAX_CUTS];
    int ncuts = atf_shard_uniform_cuts(b->N, atf_shard_chunk(b->N), cuts);
    atf_shard_adjoint_dd(b, cuts, ncuts, lambda, hi, lo, S);
    for (int64_t j = 0; j < n; j++)
        B[j] += hi[j];
    release_scratch(S, work);
}

void atf_block_adjoint(const atf_block *b, const double *lambda, double beta, double *B)
{
    atf_block_adjoint_work(b, lambda, beta, B, NULL);
}

void atf_block_adjoint_work(const atf_block *b, const double *lambda, double beta, double *B,
                            double *work)
{
    scale_or_zero(B, block_nvars(b), beta);
    switch (b->kind) {
    case ATF_OP_DENSE:
        cblas_dgemv(CblasRowMajor, CblasTrans, b->M, (int)block_nvars(b), 1.0, b->J,
                    (int)block_nvars(b), lambda, 1, 1.0, B, 1);
        break;
    case ATF_OP_SPARSE:
        sparse_adjoint(b, lambda, B);
        break;
    case ATF_OP_FACTORED:
        factored_adjoint(b, lambda, B, work);
        break;
    }
}

/* ------------------------------------------------------------------ Hessian */

/* The per-example products T_l (N × k·cols_l each), then a chunk's product and the low parts
 * of the double-double sums, as large as the largest G_l. */
static int64_t hess_products_size(int nb, const atf_block *const *b, int k)
{
    int64_t w = 0;
    for (int l = 0; l < nb; l++)
        w += (int64_t)b[l]->N * b[l]->cols * k;
    return w;
}

static int64_t largest_g(int nb, const atf_block *const *b, int k)
{
    int64_t g = 0;
    for (int l = 0; l < nb; l++)
        if (block_nvars(b[l]) * k > g)
            g = block_nvars(b[l]) * k;
    return g;
}

int64_t atf_shard_hess_work_size(int nb, const atf_block *const *b, int k)
{
    return hess_products_size(nb, b, k) + largest_g(nb, b, k);
}

int64_t atf_factored_hess_work_size(int nb, const atf_block *const *b, int k)
{
    return atf_shard_hess_work_size(nb, b, k) + largest_g(nb, b, k);
}

/* Per example i, with T_l's row i holding the k vectors t_li^(j) (cols_l each) side by side
 * (T_l = N × k·cols_l, one after the other from T): y_i^(j) = Σ_l D_li t_li^(j), u = K_i y (no
 * curv: u = y), then s_li^(j) = D_liᵀ u_i^(j) over t_li^(j). */
static void rows_example(int nb, const atf_block *const *b, int k, int i, int first,
                         double *T, atf_curvature_fn *curv, void *ctx, double *y)
{
    const int N = b[0]->N, C = b[0]->C;
    double *yi = y + (size_t)i * k * C;
    memset(yi, 0, (size_t)k * C * sizeof *yi);
    const double *Tl = T;
    for (int l = 0; l < nb; l++) {
        int Q = b[l]->cols;
        const double *d = b[l]->D + (size_t)i * C * Q, *t = Tl + (size_t)i * k * Q;
        for (int j = 0; j < k; j++)
            slab_dot(C, Q, d, t + (size_t)j * Q, yi + (size_t)j * C);
        Tl += (size_t)N * k * Q;
    }
    for (int j = 0; curv && j < k; j++)
        curv(ctx, first + i, yi + (size_t)j * C, yi + (size_t)j * C);
    double *Sl = T;
    for (int l = 0; l < nb; l++) {
        int Q = b[l]->cols;
        const double *d = b[l]->D + (size_t)i * C * Q;
        double *t = Sl + (size_t)i * k * Q;
        for (int j = 0; j < k; j++)
            slab_gather(C, Q, d, yi + (size_t)j * C, t + (size_t)j * Q);
        Sl += (size_t)N * k * Q;
    }
}

typedef struct {
    int nb;
    const atf_block *const *b;
    int k, first;
    double *T;
    atf_curvature_fn *curv;
    void *ctx;
    double *y;
} curv_job;

static void curv_range(void *arg, int i0, int i1)
{
    const curv_job *j = arg;
    for (int i = i0; i < i1; i++)
        rows_example(j->nb, j->b, j->k, i, j->first, j->T, j->curv, j->ctx, j->y);
}

void atf_factored_rows_curv(int nb, const atf_block *const *b, int k, int first, double *T,
                            atf_curvature_fn *curv, void *ctx, double *y)
{
    curv_job job = {nb, b, k, first, T, curv, ctx, y};
    atf_for_examples(b[0]->N, curv_range, &job);
}

void atf_factored_rows_dot(const atf_block *b, const double *T, double *y)
{
    rows_dot(b->N, b->C, b->cols, b->D, T, y);
}

void atf_factored_rows_gather(const atf_block *b, const double *lambda, double *S)
{
    rows_gather(b->N, b->C, b->cols, b->D, lambda, S);
}

/* T_l = H_l [X_l^(1) … X_l^(k)] (N × k·cols_l) on the chunks c0 … c1 − 1. */
static void products_chunks(void *arg, int c0, int c1)
{
    const products_job *j = arg;
    const int N = j->b[0]->N;
    double *T = j->T;
    for (int l = 0; l < j->nb; l++) {
        const atf_block *b = j->b[l];
        int kQ = j->k * b->cols;
        for (int c = c0; c < c1; c++)
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, j->cuts[c + 1] - j->cuts[c],
                        kQ, b->rows, 1.0, b->H + (size_t)j->cuts[c] * b->rows, b->rows,
                        j->X[l], kQ, 0.0, T + (size_t)j->cuts[c] * kQ, kQ);
        T += (size_t)N * kQ;
    }
}

void atf_shard_hess_dd(int nb, const atf_block *const *b, const int *cuts, int ncuts, int first,
                       int k,
                       const double *const *X, double *const *G, double *const *Glo,
                       atf_curvature_fn *curv, void *ctx, double *y, double *work)
{
    const int N = b[0]->N;
    double *chunk_T = work + hess_products_size(nb, b, k);
    atf_serial_begin();
    /* the T_l chunk by chunk: each GEMM then has the shape it has in one process, whichever
     * process holds the chunk (a GEMM over a shard's rows could meet another of the BLAS's
     * kernels, as the apply once did: docs/record/solver.md §19) */
    products_job pj = {nb, b, cuts, k, X, work};
    int64_t per_example = 0;
    for (int l = 0; l < nb; l++)
        per_example += (int64_t)b[l]->rows * b[l]->cols * k;
    for_chunks(cuts, ncuts, per_example, products_chunks, &pj);
    atf_factored_rows_curv(nb, b, k, first, work, curv, ctx, y);
    double *T = work;
    for (int l = 0; l < nb; l++) { /* G_l = H_lᵀ S_l, chunk by chunk */
        int kQ = k * b[l]->cols;
        double *lo = Glo ? Glo[l] : chunk_T + largest_g(nb, b, k);
        chunk_sums(cuts, ncuts, b[l]->rows, kQ, b[l]->H, T, chunk_T, G[l], lo);
        T += (size_t)N * kQ;
    }
    atf_serial_end();
}

void atf_factored_hess(int nb, const atf_block *const *b, int k, const double *const *X,
                       double *const *G, atf_curvature_fn *curv, void *ctx, double *y,
                       double *work)
{
    /* G_l = hi; the low parts go to the scratch after the shard's own and are dropped. */
    int cuts[ATF_SHARD_MAX_CUTS];
    int ncuts = atf_shard_uniform_cuts(b[0]->N, atf_shard_chunk(b[0]->N), cuts);
    atf_shard_hess_dd(nb, b, cuts, ncuts, 0, k, X, G, NULL, curv, ctx, y, work);
}

/* ------------------------------------------------------------------ Gram */

/* G[m][m'] and G[m'][m] = beta·G + v; beta = 0 overwrites. */
static void gram_store(double *G, int M, int m, int mp, double beta, double v)
{
    double *a = G + (size_t)m * M + mp;
    *a = beta == 0.0 ? v : beta * *a + v;
    if (mp != m) {
        double *t = G + (size_t)mp * M + m;
        *t = beta == 0.0 ? v : beta * *t + v;
    }
}

/* S (r × w, row-major, leading dimension lds) = W ∘ (Xa Xbᵀ) for Xa (r × k) and Xb (w × k),
 * row-major, where W[a][b] = HH[((ra + a)/C)·ldh + (cb + b)/C] (the examples' H Hᵀ, a row a of
 * S being row ra + a of the examples HH's rows begin with, b likewise) or W = 1 when HH is NULL:
 * the Gram's panels in one process and its tiles over processes (atf_factored_gram_tile). */
static void hadamard_product(int r, int w, int k, const double *Xa, const double *Xb,
                             const double *HH, int ldh, int C, int ra, int cb, double *S, int lds)
{
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, r, w, k, 1.0, Xa, k, Xb, k, 0.0, S, lds);
    if (!HH)
        return;
    for (int a = 0; a < r; a++) {
        const double *h = HH + (size_t)((ra + a) / C) * ldh;
        double *row = S + (size_t)a * lds;
        for (int b = 0; b < w; b++)
            row[b] *= h[(cb + b) / C];
    }
}

/* G = beta·G + W ∘ (X Xᵀ) for X (M × k row-major), with W[m][m'] = HH[i][i'] (upper triangle of
 * the N × N matrix H Hᵀ, i = m / C) or W = 1 when HH is NULL. The upper triangle of X Xᵀ is
 * computed in row panels by GEMM and mirrored. Returns -1 if scratch is unavailable. */
static int gram_panels(const double *X, int M, int k, const double *HH, int N, int C,
                       double beta, double *G)
{
    int R = M < GRAM_PANEL ? M : GRAM_PANEL;
    double *S = malloc((size_t)R * (size_t)M * sizeof *S);
    if (!S)
        return -1;
    for (int m0 = 0; m0 < M; m0 += R) {
        int r = M - m0 < R ? M - m0 : R;
        int width = M - m0;
        const double *HHp = HH ? HH + (size_t)(m0 / C) * N + m0 / C : NULL;
        hadamard_product(r, width, k, X + (size_t)m0 * k, X + (size_t)m0 * k, HHp, N, C,
                         m0 % C, m0 % C, S, width);
        for (int a = 0; a < r; a++)
            for (int mp = m0 + a; mp < M; mp++)
                gram_store(G, M, m0 + a, mp, beta, S[(size_t)a * width + (mp - m0)]);
    }
    free(S);
    return 0;
}

int64_t atf_factored_gram_tile_work(int na, int nb, int C)
{
    return (int64_t)na * nb * (1 + (int64_t)C * C);
}

void atf_factored_gram_tile(int C, int P, int Q, int na, const double *Ha, const double *Da,
                            int nb, const double *Hb, const double *Db, double *T, int ldt,
                            double *work)
{
    double *HH = work, *S = work + (size_t)na * nb;
    int w = nb * C;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, na, nb, P, 1.0, Ha, P, Hb, P, 0.0, HH,
                nb);
    hadamard_product(na * C, w, Q, Da, Db, HH, nb, C, 0, 0, S, w);
    for (int a = 0; a < na * C; a++)
        cblas_daxpy(w, 1.0, S + (size_t)a * w, 1, T + (size_t)a * ldt, 1);
}

static int sparse_gram(const atf_block *b, double beta, double *G)
{
    /* Row m scattered into a dense work vector, dotted with every later sparse row. */
    double *w = calloc((size_t)block_nvars(b), sizeof *w);
    if (!w)
        return -1;
    for (int m = 0; m < b->M; m++) {
        for (int64_t p = b->indptr[m]; p < b->indptr[m + 1]; p++)
            w[b->indices[p]] += b->data[p];
        for (int mp = m; mp < b->M; mp++) {
            double s = 0.0;
            for (int64_t p = b->indptr[mp]; p < b->indptr[mp + 1]; p++)
                s += b->data[p] * w[b->indices[p]];
            gram_store(G, b->M, m, mp, beta, s);
        }
        for (int64_t p = b->indptr[m]; p < b->indptr[m + 1]; p++)
            w[b->indices[p]] = 0.0;
    }
    free(w);
    return 0;
}

atf_error atf_factored_gram(int N, int C, int P, int Q, const double *H, const double *D,
                            double beta, double *G)
{
    int M = N * C;
    double *HH = calloc((size_t)N * (size_t)N, sizeof *HH);
    int st = -1;
    if (HH) {
        cblas_dsyrk(CblasRowMajor, CblasUpper, CblasNoTrans, N, P, 1.0, H, P, 0.0, HH, N);
        st = gram_panels(D, M, Q, HH, N, C, beta, G);
    }
    free(HH);
    if (st != 0) {
        fill_nan(G, (int64_t)M * M);
        return ATF_E_NOMEM;
    }
    return ATF_OK;
}

void atf_block_gram(const atf_block *b, double beta, double *G)
{
    int st = 0;
    switch (b->kind) {
    case ATF_OP_DENSE:
        st = gram_panels(b->J, b->M, (int)block_nvars(b), NULL, b->N, b->C, beta, G);
        break;
    case ATF_OP_SPARSE:
        st = sparse_gram(b, beta, G);
        break;
    case ATF_OP_FACTORED:
        atf_factored_gram(b->N, b->C, b->rows, b->cols, b->H, b->D, beta, G);
        return;
    }
    if (st != 0)
        fill_nan(G, (int64_t)b->M * b->M);
}

/* ------------------------------------------------------------------ dense, residual */

double *atf_block_dense(const atf_block *b)
{
    int64_t n = block_nvars(b);
    double *A = calloc((size_t)b->M * (size_t)n, sizeof *A);
    if (!A)
        return NULL;
    for (int m = 0; m < b->M; m++) {
        double *row = A + (size_t)m * n;
        switch (b->kind) {
        case ATF_OP_DENSE:
            memcpy(row, b->J + (size_t)m * n, (size_t)n * sizeof *row);
            break;
        case ATF_OP_SPARSE:
            for (int64_t p = b->indptr[m]; p < b->indptr[m + 1]; p++)
                row[b->indices[p]] += b->data[p];
            break;
        case ATF_OP_FACTORED: {
            /* G_m = h_i δ_mᵀ flattened row-major: entry (a, c) at a·cols + c. */
            const double *h = b->H + (size_t)(m / b->C) * b->rows;
            const double *delta = b->D + (size_t)m * b->cols;
            for (int a = 0; a < b->rows; a++)
                for (int c = 0; c < b->cols; c++)
                    row[(size_t)a * b->cols + c] = h[a] * delta[c];
            break;
        }
        }
    }
    return A;
}

void atf_problem_residual(const atf_problem *prob, double *const *Bs, double *res)
{
    for (int m = 0; m < prob->M; m++)
        res[m] = -prob->r[m];
    for (int l = 0; l < prob->nblocks; l++)
        atf_block_apply(&prob->blocks[l], Bs[l], 1.0, res);
}
