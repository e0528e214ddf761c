/* atf_cli_host.h — the `atf` command run inside another program's process (libatf_cli.so: the
 * Python package's atf.path, atf.sweep, atf.train and atf.cli run through it).
 *
 * atf_cli_host_run(argc, argv, host) runs `atf ARGS...` (argv[0] is "atf", as main's) with the
 * code the program runs, so tables, files and results are the program's bit for bit. What differs
 * is what only a process of its own may do: its output goes to the host's write callbacks (out:
 * what the program prints on stdout — the JSON line, tables; err: stderr — progress lines,
 * iteration tables, messages), each called with whole pieces from the thread that runs the
 * command or from its progress ticker; a stop is the host's flag (when it becomes nonzero the
 * command stops as after Ctrl-C, keeping what it has, exit 130), never a signal handler; no
 * BLAS-kernel restart and no MPI. Returns the program's exit code (docs/cli.md). One command at a
 * time per process (the commands keep large static configurations): the host serialises calls.
 * Nothing is owned; host and its callbacks must outlive the call. */
#ifndef ATF_CLI_HOST_H
#define ATF_CLI_HOST_H

#include <signal.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*atf_cli_write_fn)(void *ctx, const char *text, size_t len);

typedef struct {
    atf_cli_write_fn out;               /* stdout's text (NULL: dropped) */
    atf_cli_write_fn err;               /* stderr's text (NULL: dropped) */
    void *ctx;                          /* passed to both */
    volatile sig_atomic_t *interrupt;   /* the host's stop flag (NULL: none) */
} atf_cli_host;

int atf_cli_host_run(int argc, char **argv, const atf_cli_host *host);

#ifdef __cplusplus
}
#endif

#endif
