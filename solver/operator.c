/* operator.c — the stacked constraint operator A' of the solver's variables (the cores of
 * reduction.c, in the work units of equilibrate.c): z = A'x and g = A'ᵀu as the sum and the
 * concatenation of the blocks' own operators (problems/operators.c: per factored block two
 * GEMMs with H and D; the M × M Gram is never formed). Every matrix-free method goes through
 * these two functions, which count the passes over the data for the result, and share one
 * scratch (s->op_work) so that no pass allocates. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solver_internal.h"

/* ---- examples spread over processes ----
 * A shard's blocks hold the rows of the examples this process holds; the vars' operators are
 * views of them (N and M the held examples'), so that the products of problems/operators.c run
 * on them unchanged. What the products give is placed in vectors over all rows (every process
 * keeps every such vector whole: a few times 8·M bytes) and completed: an apply's rows are
 * gathered, a sum over examples (adjoint, Hessian product) is formed chunk by chunk in
 * double-double and the processes' pairs are added (atf_shard.h), the same bits everywhere, so
 * that every process takes the same steps as the others and as one process alone. */

atf_error atf_sv_shards_init(atf_solver *s, char *err)
{
    const atf_problem *p = s->prob;
    const atf_processes *pr = s->hooks.processes;
    s->procs = pr && pr->size > 1 ? pr : NULL;
    if (!s->procs) {
        if (p->shard_count > 0 && p->shard_count < p->N) {
            atf_errorf(err, "solver: the problem is a shard (examples %d … %d of %d) but no "
                       "processes share it", p->shard_first, p->shard_first + p->shard_count - 1,
                       p->N);
            return ATF_E_USAGE;
        }
        atf_sv_share_of(s, &s->share);
        return ATF_OK;
    }
    int first, count;
    atf_error e = atf_shard_range(p->N, pr->rank, pr->size, &first, &count, err);
    if (e)
        return e;
    if (p->shard_count != count || p->shard_first != first) {
        atf_errorf(err, "solver: process %d of %d holds examples %d … %d, not its shard %d … %d",
                   pr->rank, pr->size, p->shard_first, p->shard_first + p->shard_count - 1,
                   first, first + count - 1);
        return ATF_E_USAGE;
    }
    for (int l = 0; l < p->nblocks; l++)
        if (p->blocks[l].kind != ATF_OP_FACTORED) {
            atf_errorf(err, "solver: block %s is not factored; only factored blocks run over "
                       "several processes", p->blocks[l].name);
            return ATF_E_USAGE;
        }
    atf_sv_share_of(s, &s->share);
    return ATF_OK;
}

void atf_sv_share_of(const atf_solver *s, atf_sv_share *sh)
{
    const atf_problem *p = s->prob;
    sh->first = s->procs ? p->shard_first : 0;
    sh->count = s->procs ? p->shard_count : p->N;
    sh->ncuts = atf_shard_uniform_cuts(sh->count, atf_shard_chunk(p->N), sh->cuts);
}

void atf_sv_shards_views(atf_solver *s)
{
    if (!s->procs)
        return;
    for (int l = 0; l < s->nvars; l++) {
        s->vars[l].op.N = s->share.count;
        s->vars[l].op.M = s->share.count * s->vars[l].op.C;
    }
}

void atf_sv_gather(const atf_solver *s, double *x, int width)
{
    if (s->procs)
        s->procs->gather(s->procs->ctx, x, s->prob->N, width);
}

double atf_sv_max(const atf_solver *s, double v)
{
    if (s->procs)
        s->procs->max(s->procs->ctx, &v, 1);
    return v;
}

/* y (the share's rows) = beta·y + b x for an operator over the share's examples, a factored one
 * chunk by chunk (atf_shard_apply): each chunk's GEMM then has the shape it has in one process,
 * whichever process holds the chunk. One GEMM over all the rows held does the same sums row by
 * row, but OpenBLAS takes another kernel for small products (below 10⁶ multiply-adds on
 * SkylakeX), and the share of a small problem can fall below that where the whole problem does
 * not: its rows then differed in their last bits (docs/record/solver.md §19, "The CG baseline
 * over processes"). work: atf_block_work_size(b) doubles, or NULL. */
static void apply_share(const atf_sv_share *sh, const atf_block *b, const double *x,
                        double beta, double *y, double *work)
{
    if (b->kind != ATF_OP_FACTORED || b->N != sh->count) {
        atf_block_apply_work(b, x, beta, y, work);
        return;
    }
    double *own = work ? NULL : malloc((size_t)atf_block_work_size(b) * sizeof *own);
    if (work || own)
        atf_shard_apply(b, sh->cuts, sh->ncuts, x, beta, y, work ? work : own);
    else /* no scratch: NaN, which the callers' checks report */
        for (int m = 0; m < b->M; m++)
            y[m] = NAN;
    free(own);
}

void atf_sv_residual(const atf_solver *s, double *const *Bs, double *res)
{
    const atf_problem *p = s->prob;
    size_t at = (size_t)s->share.first * p->C, rows = (size_t)s->share.count * p->C;
    for (size_t m = 0; m < rows; m++)
        res[at + m] = -p->r[at + m];
    for (int l = 0; l < p->nblocks; l++) {
        atf_block view = p->blocks[l];
        view.N = s->share.count, view.M = (int)rows;
        apply_share(&s->share, &view, Bs[l], 1.0, res + at, NULL);
    }
    atf_sv_gather(s, res, p->C);
}

/* Room for n double-double pairs in s->dd, and after them for n low parts (atf_sv_dd_low). */
static double *dd_room(atf_solver *s, size_t n)
{
    if (n > s->dd_len) {
        double *d = realloc(s->dd, 3 * n * sizeof *d);
        if (!d)
            return NULL;
        s->dd = d, s->dd_len = n;
    }
    return s->dd;
}

double *atf_sv_dd_low(atf_solver *s, size_t n)
{
    return dd_room(s, n) ? s->dd + 2 * n : NULL;
}

/* hi[j] (n values) ← the sum over the processes of the pairs (hi[j], lo[j]), lo being NULL when
 * there was no memory for it (atf_sv_dd_low): then NaN, which the callers' finiteness checks
 * report, on every process alike (the maximum of a flag agrees on it first). */
void atf_sv_sum_dd(atf_solver *s, double *hi, const double *lo, size_t n)
{
    double *dd = s->dd;
    double short_of_memory = atf_sv_max(s, lo ? 0.0 : 1.0);
    if (short_of_memory != 0.0) {
        for (size_t j = 0; j < n; j++)
            hi[j] = NAN;
        return;
    }
    if (!s->procs) /* one process: hi is the sum already */
        return;
    for (size_t j = 0; j < n; j++)
        dd[2 * j] = hi[j], dd[2 * j + 1] = lo[j];
    s->procs->sum_dd(s->procs->ctx, dd, (int64_t)n);
    for (size_t j = 0; j < n; j++)
        hi[j] = dd[2 * j];
}

/* ---- the products ---- */

/* z = Σ_l ops_l x_l and g_l = ops_lᵀ u through operators of the vars' shapes (the vars' own, or
 * a subsample's), in the shared scratch; the vars' own (sh: the share) chunk by chunk. */
static void apply_ops(atf_solver *s, const atf_block *const *ops, const atf_sv_share *sh,
                      const double *x, double *z)
{
    double *zs = z + (size_t)s->share.first * ops[0]->C;
    for (int l = 0; l < s->nvars; l++)
        if (sh)
            apply_share(sh, ops[l], x + s->vars[l].off, l ? 1.0 : 0.0, zs, s->op_work);
        else
            atf_block_apply_work(ops[l], x + s->vars[l].off, l ? 1.0 : 0.0, zs, s->op_work);
    atf_sv_gather(s, z, ops[0]->C);
}

static void adjoint_ops(atf_solver *s, const atf_block *const *ops, const double *u, double *g)
{
    if (!s->procs) {
        for (int l = 0; l < s->nvars; l++)
            atf_block_adjoint_work(ops[l], u, 0.0, g + s->vars[l].off, s->op_work);
        return;
    }
    /* the low parts of the sums in s->dd, until atf_sv_sum_dd adds the processes' pairs */
    const atf_sv_share *sh = &s->share;
    const double *us = u + (size_t)sh->first * ops[0]->C;
    double *lo = atf_sv_dd_low(s, s->n);
    for (int l = 0; lo && l < s->nvars; l++)
        atf_shard_adjoint_dd(ops[l], sh->cuts, sh->ncuts, us, g + s->vars[l].off,
                             lo + s->vars[l].off, s->op_work);
    atf_sv_sum_dd(s, g, lo, s->n);
}

void atf_sv_apply(atf_solver *s, const double *x, double *z)
{
    apply_ops(s, s->op_ptrs, &s->share, x, z);
    s->passes++;
}

void atf_sv_adjoint(atf_solver *s, const double *u, double *g)
{
    adjoint_ops(s, s->op_ptrs, u, g);
    s->passes++;
}

int atf_sv_fusable(int n, const atf_block *const *ops)
{
    for (int l = 0; l < n; l++)
        if (ops[l]->kind != ATF_OP_FACTORED)
            return 0;
    return n > 0;
}

/* The scratch grown to n doubles (a subsample's product of k vectors may need more than the
 * vars' own); NULL if it cannot be. */
static double *work_room(atf_solver *s, int64_t n)
{
    if (n > s->op_work_len) {
        double *w = realloc(s->op_work, (size_t)n * sizeof *w);
        if (!w)
            return NULL;
        s->op_work = w, s->op_work_len = n;
    }
    return s->op_work;
}

/* The fused product of k vectors over the share's examples: G_l = hess_g[l] (summed over the
 * processes), z holding the share's rows. */
static void hess_fused(atf_solver *s, const atf_block *const *ops, const atf_sv_share *sh,
                       int k, atf_curvature_fn *curv, void *ctx, double *z)
{
    double *zs = z + (size_t)sh->first * k * ops[0]->C;
    size_t len = (size_t)k * s->n; /* the G_l lie one after the other from hess_g[0] */
    if (!work_room(s, atf_factored_hess_work_size(s->nvars, ops, k))) {
        atf_sv_sum_dd(s, s->hess_g[0], NULL, len); /* NaN, agreed on by every process */
        return;
    }
    /* the share's chunks (a subsample's follow the problem's); over processes the low parts of
     * the sums are kept and the processes' pairs added (a share of no example adds zero) */
    double *lo = s->procs ? atf_sv_dd_low(s, len) : NULL;
    for (int l = 0; lo && l < s->nvars; l++)
        s->hess_lo[l] = lo + (size_t)k * s->vars[l].off;
    if (!s->procs || lo)
        atf_shard_hess_dd(s->nvars, ops, sh->cuts, sh->ncuts, sh->first, k, s->hess_x,
                          s->hess_g, lo ? s->hess_lo : NULL, curv, ctx, zs, s->op_work);
    if (s->procs)
        atf_sv_sum_dd(s, s->hess_g[0], lo, len);
}

void atf_sv_hess_ops(atf_solver *s, const atf_block *const *ops, const atf_sv_share *share,
                     atf_curvature_fn *curv, void *ctx, const double *x, double *z, double *g)
{
    if (atf_sv_fusable(s->nvars, ops)) {
        for (int l = 0; l < s->nvars; l++) {
            s->hess_x[l] = x + s->vars[l].off;
            s->hess_g[l] = g + s->vars[l].off;
        }
        hess_fused(s, ops, share ? share : &s->share, 1, curv, ctx, z);
        return;
    }
    apply_ops(s, ops, NULL, x, z);
    int C = ops[0]->C;
    for (int i = 0; i < ops[0]->N; i++)
        curv(ctx, i, z + (size_t)i * C, z + (size_t)i * C);
    adjoint_ops(s, ops, z, g);
}

/* Between the k columns (n × k, column-major) and the same side by side per var, as
 * atf_factored_hess takes them (var l's rows × k·cols at pack + k·off_l): to_pack copies the
 * columns into pack, else pack into the columns. */
static void move_columns(const atf_solver *s, int k, const double *src, double *dst, int to_pack)
{
    for (int l = 0; l < s->nvars; l++) {
        const atf_sv_var *v = &s->vars[l];
        for (int j = 0; j < k; j++)
            for (int p = 0; p < v->rows; p++) {
                size_t col = (size_t)j * s->n + v->off + (size_t)p * v->cols;
                size_t row = (size_t)k * v->off + ((size_t)p * k + j) * v->cols;
                memcpy(dst + (to_pack ? row : col), src + (to_pack ? col : row),
                       (size_t)v->cols * sizeof *dst);
            }
    }
}

void atf_sv_hess_many(atf_solver *s, const atf_block *const *ops, const atf_sv_share *share,
                      int k, atf_curvature_fn *curv, void *ctx, const double *X, double *Y,
                      double *z, double *pack)
{
    if (k == 1 || !atf_sv_fusable(s->nvars, ops)) {
        for (int j = 0; j < k; j++)
            atf_sv_hess_ops(s, ops, share, curv, ctx, X + (size_t)j * s->n, z,
                            Y + (size_t)j * s->n);
        return;
    }
    move_columns(s, k, X, pack, 1);
    for (int l = 0; l < s->nvars; l++)
        s->hess_x[l] = s->hess_g[l] = pack + (size_t)k * s->vars[l].off;
    hess_fused(s, ops, share ? share : &s->share, k, curv, ctx, z);
    move_columns(s, k, pack, Y, 0);
}

void atf_sv_hess(atf_solver *s, atf_curvature_fn *curv, void *ctx, const double *x, double *z,
                 double *g)
{
    atf_sv_hess_ops(s, s->op_ptrs, NULL, curv, ctx, x, z, g);
    s->passes += 2;
}
