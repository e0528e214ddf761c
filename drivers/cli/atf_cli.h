/* atf_cli.h — the subcommands of the `atf` binary and the helpers they share.
 *
 * Each subcommand lives in drivers/cmd_<name>.c and has the signature of atf_cmd_fn: it gets the
 * arguments after its name (argv[0] is the subcommand name) and returns the process exit code
 * (SPEC §6: 0 solved, 2 bad input/usage, 3 infeasible, 4 iteration limit, 130 interrupted). */
#ifndef ATF_CLI_H
#define ATF_CLI_H

#include <jansson.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>

#include "atf_error.h"
#include "atf_result.h"

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

/* Output locations, checked before any work so that an unwritable output fails at once with
 * exit 2 (usage), the same in every command. atf_cli_check_output: an output file can be
 * written atomically at PATH (its directory exists and is writable, PATH is not a directory).
 * atf_cli_output_dir: an output directory exists or is created (with its parents) and is
 * writable. */
atf_error atf_cli_check_output(const char *path, char *err);
atf_error atf_cli_output_dir(const char *dir, char *err);

/* SIGINT handling: installs a handler that sets the returned flag (first Ctrl-C asks the solver
 * to stop and write its last iterate; a second one kills the process). */
volatile sig_atomic_t *atf_cli_interrupt_flag(void);

/* Wall-clock seconds (monotonic). */
double atf_cli_now(void);

/* The command line of this run, "atf CMD ARG..." (argv as a subcommand gets it), with arguments
 * a shell would split or expand single-quoted; recorded in the files atf writes. */
void atf_cli_command_line(int argc, char **argv, char *out, size_t len);

/* A one-line note on stderr when a problem file was edited after atf wrote it (its stored
 * fingerprint differs from its content, which is what counts). */
void atf_cli_note_problem(const char *cmd, const atf_problem *prob, const char *prob_path);

/* Refuse a result computed from another problem (ATF_E_INPUT, the message names both files);
 * when the check cannot be made (no fingerprint in the result) or the problem file was edited,
 * print a one-line note on stderr saying so. */
atf_error atf_cli_check_pair(const char *cmd, const atf_result *res, const char *res_path,
                             const atf_problem *prob, const char *prob_path, char *err);

/* Print a JSON value as one line on stdout (jansson: properly escaped) and release it. */
void atf_cli_print_json(json_t *v);

#endif
