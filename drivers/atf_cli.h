/* atf_cli.h — the subcommands of the `atf` binary and the helpers they share.
 *
 * Each subcommand lives in drivers/cmd_<name>.c and has the signature of atf_cmd_fn: it gets the
 * arguments after its name (argv[0] is the subcommand name) and returns the process exit code
 * (SPEC §6: 0 solved, 2 bad input/usage, 3 infeasible, 4 iteration limit, 130 interrupted). */
#ifndef ATF_CLI_H
#define ATF_CLI_H

#include <signal.h>
#include <stdio.h>

#include "atf_error.h"

typedef int (*atf_cmd_fn)(int argc, char **argv);

int atf_cmd_solve(int argc, char **argv);
int atf_cmd_baseline(int argc, char **argv);
int atf_cmd_penalty(int argc, char **argv);
int atf_cmd_demo(int argc, char **argv);
int atf_cmd_features(int argc, char **argv);
int atf_cmd_predict(int argc, char **argv);
int atf_cmd_train(int argc, char **argv);
int atf_cmd_kernel(int argc, char **argv);

/* ---- shared helpers (drivers/cli.c) ---- */

/* 1 if any argument after the subcommand name is --help or -h. */
int atf_cli_wants_help(int argc, char **argv);

/* Print "atf CMD: message" on stderr and return the exit code of e. */
int atf_cli_fail(const char *cmd, atf_error e, const char *msg);

/* Strict number parsing for option values; on failure write a message naming the option. */
atf_error atf_cli_int(const char *opt, const char *text, long lo, long hi, long *out, char *err);
atf_error atf_cli_double(const char *opt, const char *text, double *out, char *err);

/* SIGINT handling: installs a handler that sets the returned flag (first Ctrl-C asks the solver
 * to stop and write its last iterate; a second one kills the process). */
volatile sig_atomic_t *atf_cli_interrupt_flag(void);

/* Wall-clock seconds (monotonic). */
double atf_cli_now(void);

#endif
