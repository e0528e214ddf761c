/* main.c — the `atf` program: what only a process of its own does (signals, the BLAS kernel, MPI
 * ranks), then the command (cli_run.c). */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "atf_cli.h"
#include "atf_version.h"

int main(int argc, char **argv)
{
    /* A write beyond the file-size limit fails with EFBIG instead of killing the process, so
     * that the atomic writers remove their temporaries and the tables their locks, and the
     * command says which file it could not write (exit 1). */
    signal(SIGXFSZ, SIG_IGN);
    atf_cli_catch_sigint(); /* a Ctrl-C at any time is exit 130, never death by the signal */
    atf_cli_blas_kernel(argv);
    atf_cli_ranks_begin(&argc, &argv);
    return atf_cli_ranks_end(atf_cli_run(argc, argv));
}
