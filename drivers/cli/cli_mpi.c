/* cli_mpi.c — the `atf` command under mpirun (built with -Dmpi=enabled; docs/experiments.md
 * "Several processes"). MPI is started only when the process was launched by an MPI launcher
 * (its environment says so), so that the MPI build run by hand behaves as the default build.
 * Under K > 1 ranks, `atf experiment samples` and `atf demo` deal their points to the ranks
 * (drivers/experiments: atf_exp_ranks); every other command refuses to run K copies of itself. A
 * rank that fails ends the whole job (MPI_Abort) with its own one-line message. Without MPI
 * the same functions say "one process". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf_cli.h"

/* The failure being reported was met by every rank (agreed, or alike by construction): the
 * ranks end together and normally, with the failure's code. */
static int alike;

void atf_cli_ranks_alike(void)
{
    alike = 1;
}

#ifdef ATF_WITH_MPI
#include <mpi.h>

#include "atf_shard.h"
#include "cli_gram.h"

static atf_exp_ranks ranks;
static atf_processes processes;
static int started, failed;
static MPI_Datatype dd_type;
static MPI_Op dd_op;

/* The double-double sum of pairs (hi, lo), MPI's reduction operator for dd_type. */
static void dd_add(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    const double *a = in;
    double *b = inout;
    for (int j = 0; j < *len; j++)
        atf_dd_add_dd(&b[2 * j], &b[2 * j + 1], a[2 * j], a[2 * j + 1]);
}

/* Reduced at rank 0 in MPI's fixed order for this many ranks, then broadcast: every rank gets
 * the same bits (an all-reduce may add in a different order on each rank). */
static void processes_sum_dd(void *ctx, double *pairs, int64_t n)
{
    (void)ctx;
    for (int64_t at = 0; at < n; at += 1 << 28) { /* counts are ints */
        int len = (int)(n - at < (1 << 28) ? n - at : (1 << 28));
        double *p = pairs + 2 * at;
        if (ranks.rank == 0)
            MPI_Reduce(MPI_IN_PLACE, p, len, dd_type, dd_op, 0, MPI_COMM_WORLD);
        else
            MPI_Reduce(p, NULL, len, dd_type, dd_op, 0, MPI_COMM_WORLD);
        MPI_Bcast(p, len, dd_type, 0, MPI_COMM_WORLD);
    }
}

static void processes_gather(void *ctx, double *x, int N, int width)
{
    (void)ctx;
    int *counts = malloc((size_t)ranks.size * 2 * sizeof *counts), first, count;
    if (!counts) { /* no rank can go on alone */
        fprintf(stderr, "atf: rank %d: out of memory gathering rows\n", ranks.rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int r = 0; r < ranks.size; r++) {
        atf_shard_share(N, r, ranks.size, &first, &count); /* some may hold none */
        counts[r] = count * width;
        counts[ranks.size + r] = first * width;
    }
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, x, counts, counts + ranks.size, MPI_DOUBLE,
                   MPI_COMM_WORLD);
    free(counts);
}

static void processes_max(void *ctx, double *x, int64_t n)
{
    (void)ctx;
    MPI_Allreduce(MPI_IN_PLACE, x, (int)n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
}

const atf_processes *atf_cli_processes(void)
{
    return atf_cli_ranks() ? &processes : NULL;
}

void atf_cli_ranks_bcast(void *buf, int bytes)
{
    if (atf_cli_ranks())
        MPI_Bcast(buf, bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
}

void atf_cli_ranks_failed(void)
{
    failed = 1;
}

/* Point to point (atf features: the rows go to rank 0), in messages of at most 1 GB (MPI
 * counts are ints); between two ranks they arrive in the order sent. */
#define P2P_TAG 4242
#define P2P_PIECE ((size_t)1 << 30)

void atf_cli_ranks_send(int peer, const void *buf, size_t bytes)
{
    const char *p = buf;
    for (size_t at = 0; at < bytes; at += P2P_PIECE) {
        size_t n = bytes - at < P2P_PIECE ? bytes - at : P2P_PIECE;
        MPI_Send(p + at, (int)n, MPI_BYTE, peer, P2P_TAG, MPI_COMM_WORLD);
    }
}

void atf_cli_ranks_recv(int peer, void *buf, size_t bytes)
{
    char *p = buf;
    for (size_t at = 0; at < bytes; at += P2P_PIECE) {
        size_t n = bytes - at < P2P_PIECE ? bytes - at : P2P_PIECE;
        MPI_Recv(p + at, (int)n, MPI_BYTE, peer, P2P_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}

static void ranks_max(void *ctx, int *v, int n)
{
    (void)ctx;
    MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
}

static void ranks_bcast(void *ctx, void *buf, int bytes)
{
    (void)ctx;
    MPI_Bcast(buf, bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
}

/* Every rank's piece x[first … first + count − 1] to every rank: the pieces' places first
 * (an all-gather of two ints), then the pieces themselves (Allgatherv in place). */
static void ranks_gather(void *ctx, double *x, int first, int count)
{
    (void)ctx;
    int mine[2] = {first, count};
    int *all = malloc((size_t)ranks.size * 4 * sizeof *all);
    if (!all) { /* no rank can go on alone */
        fprintf(stderr, "atf: rank %d: out of memory gathering rows\n", ranks.rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int *counts = all + 2 * ranks.size, *displs = all + 3 * ranks.size;
    MPI_Allgather(mine, 2, MPI_INT, all, 2, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < ranks.size; r++) {
        displs[r] = all[2 * r];
        counts[r] = all[2 * r + 1];
    }
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, x, counts, displs, MPI_DOUBLE,
                   MPI_COMM_WORLD);
    free(all);
}

/* Launched by mpirun/mpiexec (Open MPI or a PMI/PMIx launcher)? */
static int launched(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK");
}

/* The ranks that share this one's memory (MPI's shared-memory split of the job). */
static int ranks_on_this_machine(void)
{
    MPI_Comm node;
    int local = ranks.size;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) ==
        MPI_SUCCESS) {
        MPI_Comm_size(node, &local);
        MPI_Comm_free(&node);
    }
    return local;
}

void atf_cli_ranks_begin(int *argc, char ***argv)
{
    if (!launched() || MPI_Init(argc, argv) != MPI_SUCCESS)
        return;
    started = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &ranks.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks.size);
    ranks.max = ranks_max;
    MPI_Type_contiguous(2, MPI_DOUBLE, &dd_type);
    MPI_Type_commit(&dd_type);
    MPI_Op_create(dd_add, 1, &dd_op);
    processes = (atf_processes){ranks.rank, ranks.size, processes_sum_dd, processes_gather,
                                processes_max, NULL, atf_cli_gram(), /* admm's Gram: cli_gram.c */
                                ranks_on_this_machine()};
    ranks.bcast = ranks_bcast; /* the path's (drivers/experiments/path.c) */
    ranks.gather = ranks_gather;
    ranks.processes = &processes;
}

const atf_exp_ranks *atf_cli_ranks(void)
{
    return started && ranks.size > 1 ? &ranks : NULL;
}

int atf_cli_ranks_end(int code)
{
    if (!started)
        return code;
    /* This rank failed on its own: the others may be waiting in a collective, so the job ends
     * with it. A failure every rank met ends through MPI_Finalize on every rank, since an
     * abort racing the others' finalisation can leave mpirun crashed or hung. */
    if (ranks.size > 1 && failed && !alike) {
        fflush(NULL);
        MPI_Abort(MPI_COMM_WORLD, code);
    }
    MPI_Finalize();
    return code;
}
#else
void atf_cli_ranks_failed(void)
{
}

void atf_cli_ranks_send(int peer, const void *buf, size_t bytes)
{
    (void)peer;
    (void)buf;
    (void)bytes;
}

void atf_cli_ranks_recv(int peer, void *buf, size_t bytes)
{
    (void)peer;
    (void)buf;
    (void)bytes;
}

const atf_processes *atf_cli_processes(void)
{
    return NULL;
}

void atf_cli_ranks_bcast(void *buf, int bytes)
{
    (void)buf;
    (void)bytes;
}

void atf_cli_ranks_begin(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
}

const atf_exp_ranks *atf_cli_ranks(void)
{
    return NULL;
}

int atf_cli_ranks_end(int code)
{
    return code;
}
#endif

/* Both builds: the agreement is a maximum over the ranks (atf_exp_ranks.max). The code carries
 * the error in its high part and 65535 − rank in its low part, so that the maximum is the
 * largest error and, among the ranks that met it, the lowest rank. */
atf_error atf_cli_ranks_agree(atf_error e, int *tell)
{
    const atf_exp_ranks *rk = atf_cli_ranks();
    if (!rk) {
        *tell = 1;
        return e;
    }
    int v = e ? (int)e * 65536 + (65535 - rk->rank) : 0;
    rk->max(rk->ctx, &v, 1);
    *tell = v && 65535 - v % 65536 == rk->rank;
    if (v)
        atf_cli_ranks_alike();
    return (atf_error)(v / 65536);
}
