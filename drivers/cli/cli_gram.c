/* cli_gram.c — the projection's Gram over the ranks of `mpirun -np K atf solve --method admm`
 * (the MPI build only; docs/record/solver.md §19, "The Gram over processes"): the hooks of
 * atf_dist_gram (atf_problem.h) with BLACS and ScaLAPACK on MPI_COMM_WORLD.
 *
 * The grid is nprow × npcol, nprow the largest divisor of K not above √K, so npcol ≥ nprow: the
 * solver keeps the rows of its grid column's blocks while it forms its tiles, 1/npcol of the
 * examples. BLACS numbers it row-major (rank r at row r / npcol, column r mod npcol), as
 * atf_dist_matrix says. The Cholesky factor is pdpotrf's, its condition estimate pdpocon's, the
 * eigenvectors pdsyevd's; a solve is pdpotrs, or two local products with the eigenvectors.
 * Whatever the ranks must all have is summed at rank 0 and broadcast (MPI_Reduce, MPI_Bcast),
 * so that every rank gets the same bits; every allocation before a collective step is agreed
 * on first (MPI_Allreduce), so that no rank waits in a step another one skipped. */
#include <cblas.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "cli_gram.h"

/* What open makes: the grid, the matrix's and an M-vector's descriptors, and the workspace of
 * a solve, allocated once so that a solve cannot fail. */
typedef struct {
    int ctxt;
    int desc[9];  /* the matrix */
    int descb[9]; /* an M-vector along its rows (on grid column 0) */
    double *bl;   /* [max(1, lrows)] the local rows of a vector */
    double *y;    /* [max(1, lcols)] the local columns of a vector */
    double *full; /* [M] a vector summed over the ranks */
} gram_handle;

static const int ONE = 1, ZERO = 0;

/* 1 on every rank when every rank is ok. */
static int all_ok(int ok)
{
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return ok;
}

static int largest_info(int info)
{
    MPI_Allreduce(MPI_IN_PLACE, &info, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return info;
}

/* x = the sum over the ranks of full (M values), the same bits on every rank. */
static void sum_to_all(double *full, int M, double *x)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Reduce(rank == 0 ? MPI_IN_PLACE : full, full, M, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Bcast(full, M, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    memcpy(x, full, (size_t)M * sizeof *x);
}

static int grid_rows(int K)
{
    int rows = 1;
    for (int d = 1; d * d <= K; d++)
        if (K % d == 0)
            rows = d;
    return rows;
}

/* The global index of local index i of a side cut in blocks of nb over p grid places, at
 * place c (the first block on place 0). */
static int global_of(int i, int nb, int c, int p)
{
    return ((i / nb) * p + c) * nb + i % nb;
}

static int lld_of(const atf_dist_matrix *m)
{
    return m->lrows > 1 ? m->lrows : 1;
}

static void release(gram_handle *g)
{
    if (g)
        free(g->bl), free(g->y), free(g->full);
    free(g);
}

static int gram_open(void *ctx, int M, atf_dist_matrix *m)
{
    (void)ctx;
    int K, ctxt, info;
    MPI_Comm_size(MPI_COMM_WORLD, &K);
    Cblacs_get(-1, 0, &ctxt); /* the system context: MPI_COMM_WORLD */
    Cblacs_gridinit(&ctxt, "Row", grid_rows(K), K / grid_rows(K));
    Cblacs_gridinfo(ctxt, &m->nprow, &m->npcol, &m->myrow, &m->mycol);
    m->lrows = numroc_(&M, &m->nb, &m->myrow, &ZERO, &m->nprow);
    m->lcols = numroc_(&M, &m->nb, &m->mycol, &ZERO, &m->npcol);
    gram_handle *g = calloc(1, sizeof *g);
    if (g) {
        g->bl = malloc((size_t)lld_of(m) * sizeof *g->bl);
        g->y = malloc((size_t)(m->lcols > 1 ? m->lcols : 1) * sizeof *g->y);
        g->full = malloc((size_t)M * sizeof *g->full);
    }
    m->handle = g;
    if (!g || !g->bl || !g->y || !g->full) { /* the solver agrees, then every rank closes */
        release(g);
        m->handle = NULL;
        Cblacs_gridexit(ctxt);
        return 1;
    }
    g->ctxt = ctxt;
    int lld = lld_of(m);
    descinit_(g->desc, &M, &M, &m->nb, &m->nb, &ZERO, &ZERO, &ctxt, &lld, &info);
    descinit_(g->descb, &M, &ONE, &m->nb, &m->nb, &ZERO, &ZERO, &ctxt, &lld, &info);
    return 0;
}

static void gram_close(void *ctx, atf_dist_matrix *m)
{
    (void)ctx;
    gram_handle *g = m->handle;
    if (!g)
        return;
    Cblacs_gridexit(g->ctxt);
    release(g);
    m->handle = NULL;
}

/* pdpocon's workspace (a query every rank makes), and room for pdlansy's ('1' norm, lower:
 * 2·Np0 + Nq0 + LDW with LDW ≤ Np0 + nb), allocated and agreed on. */
static int condition_workspace(const atf_dist_matrix *m, const gram_handle *g, double **work,
                               int *lwork, int **iwork, int *liwork)
{
    int M = g->desc[2], query = -1, info, iq = 0;
    double wq = 0.0, anorm = 1.0, rcond;
    pdpocon_("L", &M, m->a, &ONE, &ONE, g->desc, &anorm, &rcond, &wq, &query, &iq, &query,
             &info, 1);
    int lansy = 3 * m->lrows + m->lcols + m->nb;
    *lwork = (int)wq > lansy ? (int)wq : lansy;
    *liwork = iq > 1 ? iq : 1;
    *work = malloc((size_t)*lwork * sizeof **work);
    *iwork = malloc((size_t)*liwork * sizeof **iwork);
    return all_ok(*work && *iwork);
}

static int gram_cholesky(void *ctx, atf_dist_matrix *m, double *rcond)
{
    (void)ctx;
    const gram_handle *g = m->handle;
    int M = g->desc[2], lwork, liwork, *iwork = NULL, info = -1;
    double *work = NULL;
    if (condition_workspace(m, g, &work, &lwork, &iwork, &liwork)) {
        double anorm = pdlansy_("1", "L", &M, m->a, &ONE, &ONE, g->desc, work, 1, 1);
        pdpotrf_("L", &M, m->a, &ONE, &ONE, g->desc, &info, 1);
        if (largest_info(info != 0) == 0) /* pdpotrf's info is global: agreed all the same */
            pdpocon_("L", &M, m->a, &ONE, &ONE, g->desc, &anorm, rcond, work, &lwork, iwork,
                     &liwork, &info, 1);
    }
    free(work), free(iwork);
    return info;
}

static int gram_eigen(void *ctx, atf_dist_matrix *m, double *w)
{
    (void)ctx;
    const gram_handle *g = m->handle;
    int M = g->desc[2], query = -1, info = -1, iq = 0;
    double wq = 0.0;
    pdsyevd_("V", "L", &M, m->a, &ONE, &ONE, g->desc, w, m->a, &ONE, &ONE, g->desc, &wq, &query,
             &iq, &query, &info, 1, 1);
    int lwork = (int)wq + 1, liwork = iq > 1 ? iq : 1;
    size_t local = (size_t)lld_of(m) * (size_t)m->lcols;
    double *z = malloc((local ? local : 1) * sizeof *z);
    double *work = malloc((size_t)lwork * sizeof *work);
    int *iwork = malloc((size_t)liwork * sizeof *iwork);
    info = -1;
    if (all_ok(z && work && iwork)) {
        pdsyevd_("V", "L", &M, m->a, &ONE, &ONE, g->desc, w, z, &ONE, &ONE, g->desc, work,
                 &lwork, iwork, &liwork, &info, 1, 1);
        memcpy(m->a, z, local * sizeof *z);
    }
    free(z), free(work), free(iwork);
    return largest_info(info != 0);
}

/* The local rows (rows = 1) or columns of the M-vector v into part. */
static void local_part(const atf_dist_matrix *m, int rows, const double *v, double *part)
{
    int n = rows ? m->lrows : m->lcols;
    for (int i = 0; i < n; i++)
        part[i] = v[rows ? global_of(i, m->nb, m->myrow, m->nprow)
                         : global_of(i, m->nb, m->mycol, m->npcol)];
}

/* x = the M-vector whose local rows (rows = 1) or columns are part (zero elsewhere), summed over
 * the ranks. */
static void whole(const atf_dist_matrix *m, gram_handle *g, int rows, const double *part,
                  double *x)
{
    int M = g->desc[2], n = rows ? m->lrows : m->lcols;
    memset(g->full, 0, (size_t)M * sizeof *g->full);
    for (int i = 0; i < n; i++)
        g->full[rows ? global_of(i, m->nb, m->myrow, m->nprow)
                     : global_of(i, m->nb, m->mycol, m->npcol)] = part[i];
    sum_to_all(g->full, M, x);
}

static void gram_solve(void *ctx, const atf_dist_matrix *m, const double *winv, const double *b,
                       double *x)
{
    (void)ctx;
    gram_handle *g = m->handle;
    int M = g->desc[2], info;
    if (!winv) { /* the vector lives on grid column 0, whose entries are the only nonzero ones */
        local_part(m, 1, b, g->bl);
        pdpotrs_("L", &M, &ONE, m->a, &ONE, &ONE, g->desc, g->bl, &ONE, &ONE, g->descb, &info, 1);
        if (m->mycol != 0)
            memset(g->bl, 0, (size_t)m->lrows * sizeof *g->bl);
        whole(m, g, 1, g->bl, x);
        return;
    }
    /* t = Vᵀ b (each rank its columns' sums over its rows), t ∘ winv, then x = V t */
    local_part(m, 1, b, g->bl);
    cblas_dgemv(CblasColMajor, CblasTrans, m->lrows, m->lcols, 1.0, m->a, lld_of(m), g->bl, 1,
                0.0, g->y, 1);
    whole(m, g, 0, g->y, x);
    for (int i = 0; i < M; i++)
        x[i] *= winv[i];
    local_part(m, 0, x, g->y);
    cblas_dgemv(CblasColMajor, CblasNoTrans, m->lrows, m->lcols, 1.0, m->a, lld_of(m), g->y, 1,
                0.0, g->bl, 1);
    whole(m, g, 1, g->bl, x);
}

static void gram_exchange(void *ctx, int width, const double *send, const int *scount,
                          const int *sdispl, double *recv, const int *rcount, const int *rdispl)
{
    (void)ctx;
    MPI_Datatype row;
    MPI_Type_contiguous(width, MPI_DOUBLE, &row);
    MPI_Type_commit(&row);
    MPI_Alltoallv(send, scount, sdispl, row, recv, rcount, rdispl, row, MPI_COMM_WORLD);
    MPI_Type_free(&row);
}

static const atf_dist_gram hooks = {gram_open, gram_cholesky, gram_eigen, gram_solve,
                                    gram_close, gram_exchange, NULL};

const atf_dist_gram *atf_cli_gram(void)
{
    return &hooks;
}
