/* gram_dist.c — the M × M Gram G = Σ_l (H_l H_lᵀ ⊗ 1_C 1_Cᵀ) ∘ (D_l D_lᵀ) spread over
 * processes: the storage behind the cholesky and eigen backends under mpirun (admm, the Gram
 * baseline; docs/record/solver.md §19, "The Gram over processes").
 *
 * The command lays G out in ScaLAPACK's block-cyclic layout and factorises it (atf_dist_gram,
 * atf_problem.h); this file picks the block size, forms the process's tiles of the lower
 * triangle and agrees on every outcome. A block holds whole examples (nb a multiple of C), so a
 * tile is the Gram between two runs of examples: atf_factored_gram_tile, whose Hadamard step is
 * the one-process Gram's. Tile (I, J) needs the H and D rows of the examples of blocks I and J,
 * which other processes hold: the rows of the process's column blocks are fetched once (its grid
 * column's share, 1/npcol of the examples, the command's grid having npcol ≥ nprow), those of
 * its row blocks in rounds of at most ROUND_BYTES, each an exchange (atf_dist_gram.exchange),
 * so that no process holds every example's rows. Every allocation, check and factorisation is
 * agreed on (atf_sv_max) so that every process takes the same path. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gram.h"

/* Rows per block: the multiple of C from 64 up, ScaLAPACK's customary block size (its panel
 * factorisations and the GEMM updates between them balance between 32 and 128 on one core). */
#define NB_TARGET 64
/* The row blocks' H and D rows fetched per round. */
#define ROUND_BYTES ((size_t)64 << 20)

struct atf_sv_dgram {
    atf_dist_matrix m;
    const atf_dist_gram *h;
    int N, C, M, e;         /* e: examples per block */
    int blocks;             /* blocks along a side, ⌈M / nb⌉ */
    int lbr, lbc;           /* this process's row and column blocks */
    int group, rounds;      /* row blocks per round (every process's), rounds */
    int K, rank;
    int width;              /* Σ_l (P_l + C·Q_l): the doubles of one example's rows */
    int *first, *count;     /* [K] each process's examples */
    int *sc, *sd, *rc, *rd; /* [K] an exchange's counts and displacements, in examples */
    int *nlist, *lists;     /* [K], [K × blocks]: the blocks each process wants in an exchange */
};

static int ceil_div(int a, int b)
{
    return (a + b - 1) / b;
}

/* Whether any process met a failure (mine: this one did). */
static int any(const atf_solver *s, int mine)
{
    return atf_sv_max(s, mine ? 1.0 : 0.0) != 0.0;
}

static size_t local_len(const atf_dist_matrix *m)
{
    return (size_t)(m->lrows > 1 ? m->lrows : 1) * (size_t)m->lcols;
}

/* ---- which rows go where ---- */

/* The blocks process q wants: its grid column's (round −1) or, in round t, the row blocks
 * t·group … (t + 1)·group − 1 of its grid row. Returns their number. */
static int wanted(const struct atf_sv_dgram *d, int q, int round, int *list)
{
    int qrow = q / d->m.npcol, qcol = q % d->m.npcol, n = 0;
    if (round < 0) {
        for (int J = qcol; J < d->blocks; J += d->m.npcol)
            list[n++] = J;
        return n;
    }
    for (int ib = round * d->group; ib < (round + 1) * d->group; ib++) {
        int I = ib * d->m.nprow + qrow;
        if (I >= d->blocks)
            break;
        list[n++] = I;
    }
    return n;
}

/* The examples of blocks list[0 … n) within [lo, hi), in increasing order: their number, and
 * their rows (`width` doubles each, src holding those of lo, lo + 1, …) copied to out unless
 * out is NULL. */
static int pack(const struct atf_sv_dgram *d, const int *list, int n, int lo, int hi,
                const double *src, int width, double *out)
{
    int k = 0;
    for (int j = 0; j < n; j++) {
        int a = list[j] * d->e, b = a + d->e < d->N ? a + d->e : d->N;
        a = a > lo ? a : lo;
        b = b < hi ? b : hi;
        if (b <= a)
            continue;
        if (out)
            memcpy(out + (size_t)k * width, src + (size_t)(a - lo) * width,
                   (size_t)(b - a) * width * sizeof *out);
        k += b - a;
    }
    return k;
}

/* Every process's wanted blocks in `round`, and the examples this process sends to and receives
 * from each; returns the examples it sends in all (*got: receives). */
static int plan(struct atf_sv_dgram *d, int round, int *got)
{
    int lo = d->first[d->rank], hi = lo + d->count[d->rank], sent = 0;
    const int *mine = d->lists + (size_t)d->rank * d->blocks;
    for (int q = 0; q < d->K; q++)
        d->nlist[q] = wanted(d, q, round, d->lists + (size_t)q * d->blocks);
    *got = 0;
    for (int q = 0; q < d->K; q++) {
        d->sc[q] = pack(d, d->lists + (size_t)q * d->blocks, d->nlist[q], lo, hi, NULL, 0, NULL);
        d->rc[q] = pack(d, mine, d->nlist[d->rank], d->first[q], d->first[q] + d->count[q], NULL,
                        0, NULL);
        d->sd[q] = sent, d->rd[q] = *got;
        sent += d->sc[q], *got += d->rc[q];
    }
    return sent;
}

/* dst = the planned examples' rows of one array (src: the held examples' rows), via send. */
static void exchange(const struct atf_sv_dgram *d, const double *src, int width, double *send,
                     double *dst)
{
    int lo = d->first[d->rank], hi = lo + d->count[d->rank];
    for (int q = 0; q < d->K; q++)
        pack(d, d->lists + (size_t)q * d->blocks, d->nlist[q], lo, hi, src, width,
             send + (size_t)d->sd[q] * width);
    d->h->exchange(d->h->ctx, width, send, d->sc, d->sd, dst, d->rc, d->rd);
}

/* The planned examples' (n of them) H and D rows of every var into buf: var l's H (n × P_l),
 * then its D (n·C × Q_l), then var l + 1's. */
static void fetch(const atf_solver *s, const struct atf_sv_dgram *d, int n, double *send,
                  double *buf)
{
    for (int l = 0; l < s->nvars; l++) {
        const atf_block *b = &s->vars[l].op;
        exchange(d, b->H, b->rows, send, buf);
        buf += (size_t)n * b->rows;
        exchange(d, b->D, b->C * b->cols, send, buf);
        buf += (size_t)n * b->C * b->cols;
    }
}

/* ---- the tiles ---- */

/* Round t's tiles of the lower triangle: every column block J against the round's row blocks
 * I ≥ J, from the column blocks' rows (cols, nc examples) and the round's (rows, nr). */
static void round_tiles(const atf_solver *s, struct atf_sv_dgram *d, int t, const double *cols,
                        int nc, const double *rows, int nr, double *work)
{
    const atf_dist_matrix *m = &d->m;
    int nb = m->nb, C = d->C, lld = m->lrows > 1 ? m->lrows : 1;
    int ib_end = (t + 1) * d->group < d->lbr ? (t + 1) * d->group : d->lbr;
    int row_end = ib_end * nb < m->lrows ? ib_end * nb : m->lrows;
    for (int jb = 0; jb < d->lbc; jb++) {
        int J = jb * m->npcol + m->mycol, ib = t * d->group;
        while (ib < ib_end && ib * m->nprow + m->myrow < J)
            ib++;
        if (ib >= ib_end)
            continue;
        int na = (J + 1) * d->e < d->N ? d->e : d->N - J * d->e; /* J's examples */
        int ca = jb * d->e, ra = (ib - t * d->group) * d->e, nrow = (row_end - ib * nb) / C;
        double *T = m->a + (size_t)ib * nb + (size_t)jb * nb * lld;
        const double *c = cols, *r = rows;
        for (int l = 0; l < s->nvars; l++) {
            int P = s->vars[l].op.rows, Q = s->vars[l].op.cols;
            const double *Dc = c + (size_t)nc * P, *Dr = r + (size_t)nr * P;
            atf_factored_gram_tile(C, P, Q, na, c + (size_t)ca * P, Dc + (size_t)ca * C * Q,
                                   nrow, r + (size_t)ra * P, Dr + (size_t)ra * C * Q, T, lld,
                                   work);
            c += (size_t)nc * (P + C * Q), r += (size_t)nr * (P + C * Q);
        }
    }
}

/* The largest send and the largest round (examples) of all the exchanges. */
static void exchange_sizes(struct atf_sv_dgram *d, int *send, int *round)
{
    int got;
    *send = plan(d, -1, &got), *round = 0;
    for (int t = 0; t < d->rounds; t++) {
        int sent = plan(d, t, &got);
        *send = sent > *send ? sent : *send;
        *round = got > *round ? got : *round;
    }
}

static int widest(const atf_solver *s)
{
    int w = 1;
    for (int l = 0; l < s->nvars; l++) {
        const atf_block *b = &s->vars[l].op;
        w = b->rows > w ? b->rows : w;
        w = b->C * b->cols > w ? b->C * b->cols : w;
    }
    return w;
}

static atf_error fill_tiles(const atf_solver *s, struct atf_sv_dgram *d, char *err)
{
    int send_n, round_n, cols_n = d->m.lcols / d->C;
    exchange_sizes(d, &send_n, &round_n);
    size_t cols_len = (size_t)cols_n * d->width, rows_len = (size_t)round_n * d->width;
    size_t send_len = (size_t)send_n * widest(s);
    size_t work_len = (size_t)atf_factored_gram_tile_work(d->e, round_n, d->C);
    double *buf = malloc((cols_len + rows_len + send_len + work_len + 1) * sizeof *buf);
    if (any(s, !buf)) {
        free(buf);
        atf_errorf(err, "projection: out of memory for the rows that form a process's tiles of "
                   "the %d x %d Gram (%.3g GB on this one)", d->M, d->M,
                   8e-9 * (double)(cols_len + rows_len + send_len + work_len));
        return ATF_E_NOMEM;
    }
    double *cols = buf, *rows = cols + cols_len, *send = rows + rows_len, *work = send + send_len;
    int got;
    plan(d, -1, &got);
    fetch(s, d, got, send, cols);
    for (int t = 0; t < d->rounds; t++) {
        plan(d, t, &got);
        fetch(s, d, got, send, rows);
        round_tiles(s, d, t, cols, cols_n, rows, got, work);
    }
    free(buf);
    return ATF_OK;
}

/* ---- the layout ---- */

static void release(struct atf_sv_dgram *d)
{
    free(d->m.a);
    free(d->first);
    free(d);
}

/* The grid the command made must be the one the tiles are placed by (atf_dist_matrix). */
static int grid_as_documented(const struct atf_sv_dgram *d)
{
    const atf_dist_matrix *m = &d->m;
    return m->nprow >= 1 && m->npcol >= 1 && m->nprow * m->npcol == d->K &&
           m->myrow == d->rank / m->npcol && m->mycol == d->rank % m->npcol &&
           m->lrows >= 0 && m->lcols >= 0 && m->lrows % d->C == 0 && m->lcols % d->C == 0;
}

static void sizes(const atf_solver *s, struct atf_sv_dgram *d)
{
    d->N = s->prob->N, d->C = s->prob->C, d->M = s->prob->M;
    d->K = s->procs->size, d->rank = s->procs->rank;
    d->h = s->procs->gram;
    d->m.nb = d->C * ceil_div(NB_TARGET, d->C);
    d->e = d->m.nb / d->C;
    d->blocks = ceil_div(d->M, d->m.nb);
    d->width = 0;
    for (int l = 0; l < s->nvars; l++)
        d->width += s->vars[l].op.rows + d->C * s->vars[l].op.cols;
}

/* The round size, which every process shares: the rows of `group` blocks within ROUND_BYTES. */
static void rounds_of(struct atf_sv_dgram *d)
{
    const atf_dist_matrix *m = &d->m;
    d->lbr = ceil_div(m->lrows, m->nb), d->lbc = ceil_div(m->lcols, m->nb);
    int most = ceil_div(d->blocks, m->nprow); /* the most row blocks a process has */
    size_t per_block = (size_t)d->e * d->width * sizeof(double);
    size_t g = ROUND_BYTES / (per_block ? per_block : 1);
    d->group = g < 1 ? 1 : g > (size_t)most ? most : (int)g;
    d->rounds = ceil_div(most, d->group);
}

static atf_error layout(atf_solver *s, struct atf_sv_dgram **dp, char *err)
{
    struct atf_sv_dgram *d = calloc(1, sizeof *d);
    int K = s->procs->size, *ints = NULL;
    if (d) {
        sizes(s, d);
        ints = malloc(((size_t)7 + d->blocks) * K * sizeof *ints);
    }
    if (any(s, !d || !ints)) {
        free(d), free(ints);
        atf_errorf(err, "projection: out of memory laying out the Gram over %d processes", K);
        return ATF_E_NOMEM;
    }
    d->first = ints, d->count = ints + K, d->sc = ints + 2 * K, d->sd = ints + 3 * K;
    d->rc = ints + 4 * K, d->rd = ints + 5 * K, d->nlist = ints + 6 * K, d->lists = ints + 7 * K;
    for (int q = 0; q < K; q++)
        atf_shard_range(d->N, q, K, &d->first[q], &d->count[q], NULL);
    if (any(s, d->h->open(d->h->ctx, d->M, &d->m) != 0)) {
        d->h->close(d->h->ctx, &d->m); /* every process: the grid is the processes' together */
        release(d);
        atf_errorf(err, "projection: out of memory laying out the Gram over %d processes", K);
        return ATF_E_NOMEM;
    }
    *dp = d;
    if (any(s, !grid_as_documented(d))) {
        atf_errorf(err, "projection: the processes' grid for the Gram is not laid out as "
                   "atf_dist_matrix says (rank r at grid row r / npcol, column r mod npcol)");
        return ATF_E_USAGE;
    }
    rounds_of(d);
    d->m.a = malloc(local_len(&d->m) * sizeof *d->m.a);
    if (any(s, !d->m.a)) {
        atf_errorf(err, "projection: out of memory for a process's tiles of the %d x %d Gram "
                   "(%.3g GB each over %d processes, 8·M²/K bytes)", d->M, d->M,
                   8e-9 * (double)d->M * d->M / K, K);
        return ATF_E_NOMEM;
    }
    return ATF_OK;
}

/* ---- what the projection asks ---- */

atf_error atf_sv_dgram_form(atf_solver *s, struct atf_sv_dgram **dp, double **local,
                            size_t *len, char *err)
{
    atf_error e = *dp ? ATF_OK : layout(s, dp, err);
    if (e != ATF_OK)
        return e;
    struct atf_sv_dgram *d = *dp;
    *len = local_len(&d->m);
    *local = d->m.a;
    memset(d->m.a, 0, *len * sizeof *d->m.a);
    return fill_tiles(s, d, err);
}

int atf_sv_dgram_cholesky(atf_solver *s, struct atf_sv_dgram *d, double *rcond)
{
    double rc = 0.0;
    int info = d->h->cholesky(d->h->ctx, &d->m, &rc);
    double v[2] = {info != 0 ? 1.0 : 0.0, rc == rc ? -rc : INFINITY};
    s->procs->max(s->procs->ctx, v, 2);
    *rcond = -v[1];
    return v[0] != 0.0;
}

atf_error atf_sv_dgram_eigen(atf_solver *s, struct atf_sv_dgram *d, double *w, char *err)
{
    if (any(s, d->h->eigen(d->h->ctx, &d->m, w) != 0)) {
        atf_errorf(err, "projection: eigendecomposition of AAᵀ over %d processes failed", d->K);
        return ATF_E_NUMERICAL;
    }
    s->procs->max(s->procs->ctx, w, d->M); /* the same bits everywhere, hence the same cutoff */
    return ATF_OK;
}

void atf_sv_dgram_solve(const struct atf_sv_dgram *d, const double *winv, const double *b,
                        double *x)
{
    d->h->solve(d->h->ctx, &d->m, winv, b, x);
}

void atf_sv_dgram_free(struct atf_sv_dgram *d)
{
    if (!d)
        return;
    d->h->close(d->h->ctx, &d->m);
    release(d);
}
