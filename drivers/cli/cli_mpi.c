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

#ifdef ATF_WITH_MPI
#include <mpi.h>

static atf_exp_ranks ranks;
static int started, failed;

void atf_cli_ranks_failed(void)
{
    failed = 1;
}

static void ranks_max(void *ctx, int *v, int n)
{
    (void)ctx;
    MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
}

/* Launched by mpirun/mpiexec (Open MPI or a PMI/PMIx launcher)? */
static int launched(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK");
}

void atf_cli_ranks_begin(int *argc, char ***argv)
{
    if (!launched() || MPI_Init(argc, argv) != MPI_SUCCESS)
        return;
    started = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &ranks.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks.size);
    ranks.max = ranks_max;
}

const atf_exp_ranks *atf_cli_ranks(void)
{
    return started && ranks.size > 1 ? &ranks : NULL;
}

int atf_cli_ranks_end(int code)
{
    if (!started)
        return code;
    if (ranks.size > 1 && failed) { /* this rank failed: the job ends with it */
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
