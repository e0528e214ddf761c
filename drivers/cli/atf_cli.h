/* atf_cli.h — the subcommands of the `atf` binary and the helpers they share.
 *
 * Each subcommand lives in drivers/cli/cmd_<name>.c and has the signature of atf_cmd_fn: it gets
 * the arguments after its name (argv[0] is the subcommand name) and returns the process exit code
 * (docs/cli.md: 0 solved, 2 bad input/usage, 3 infeasible, 4 iteration limit, 130 interrupted,
 * 1 other failures). */
#ifndef ATF_CLI_H
#define ATF_CLI_H

#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>

#include "atf_error.h"
#include "atf_experiments.h"
#include "atf_result.h"
#include "atf_solver.h"
#include "atf_report.h"

typedef int (*atf_cmd_fn)(int argc, char **argv);

/* `atf ARGS...` (argv[0] "atf"): the dispatch to the subcommand (cli_run.c); the exit code. */
int atf_cli_run(int argc, char **argv);

int atf_cmd_solve(int argc, char **argv);
int atf_cmd_baseline(int argc, char **argv);
int atf_cmd_penalty(int argc, char **argv);
int atf_cmd_demo(int argc, char **argv);
int atf_cmd_features(int argc, char **argv);
int atf_cmd_predict(int argc, char **argv);
int atf_cmd_train(int argc, char **argv);
int atf_cmd_kernel(int argc, char **argv);
int atf_cmd_experiment(int argc, char **argv);
int atf_cmd_sweep(int argc, char **argv);
int atf_cmd_path(int argc, char **argv);
int atf_cmd_methods(int argc, char **argv);

/* ---- shared helpers (drivers/cli/cli.c) ---- */

/* ---- Options: getopt_long, the same way in every command ----
 *
 * Every command parses its arguments with getopt_long over a `struct option` table (every long
 * option; short ones only where they exist, -o and -h). `--opt value` and `--opt=value` both
 * work, positional arguments may come before, between or after the options (GNU permutation:
 * getopt_long reorders argv, so record the command line BEFORE parsing), and `--` ends the
 * options; a long option may be shortened to an unambiguous prefix (getopt_long). Problems
 * with the options themselves are one line and exit 2:
 *   atf CMD: unknown option '--x' (atf CMD --help)
 *   atf CMD: option '--x' needs a value
 *   atf CMD: option '--x' takes no value
 *   atf CMD: option '--x' is ambiguous (--xa, --xb)
 * Bad values keep the messages of the strict parsers below ("--tol: 'x' is not a finite number").
 *
 * The pattern (a command with -o FILE, --json, --tol EPS and one positional argument):
 *
 *   enum { OPT_JSON = ATF_CLI_OPT_FIRST, OPT_TOL };
 *   static const struct option options[] = {
 *       {"output", required_argument, NULL, 'o'},
 *       {"json", no_argument, NULL, OPT_JSON},
 *       {"tol", required_argument, NULL, OPT_TOL},
 *       ATF_CLI_HELP_OPTION,
 *       {NULL, 0, NULL, 0}};
 *
 *   static atf_error parse_args(int argc, char **argv, my_args *a, char *err)
 *   {
 *       int c;
 *       atf_error e = ATF_OK;
 *       atf_cli_getopt_begin();
 *       while (!e && (c = atf_cli_getopt("mycmd", argc, argv, "o:h", options, err)) != -1) {
 *           switch (c) {
 *           case 'o': a->out = optarg; break;
 *           case OPT_JSON: a->json = 1; break;
 *           case OPT_TOL: e = atf_cli_double("--tol", optarg, &a->tol, err); break;
 *           case 'h': break; // atf_cli_wants_help (below) has seen it
 *           default: e = ATF_E_USAGE; // ATF_CLI_BAD_OPTION: err holds the message
 *           }
 *       }
 *       if (!e)
 *           e = atf_cli_positionals("mycmd", argc, argv, 1, 1, "INPUT", &a->input, NULL, err);
 *       return e;
 *   }
 *
 *   int atf_cmd_mycmd(int argc, char **argv)
 *   {
 *       if (atf_cli_wants_help(argc, argv)) { usage(stdout); return 0; } // help wins
 *       atf_cli_command_line(argc, argv, a.command, sizeof a.command); // before getopt permutes
 *       ... e = parse_args(argc, argv, &a, err); if (e) return atf_cli_fail("mycmd", e, err);
 *   }
 *
 * Commands that take the data and network options include ATF_CLI_DATA_OPTIONS and
 * ATF_CLI_NET_OPTIONS in their table and pass the codes to atf_cli_tangent_option (cli_tangent.h).
 */

/* First code for a command's own long-only options (above every character code). */
#define ATF_CLI_OPT_FIRST 0x100
/* Code atf_cli_getopt returns for a bad option (unknown, missing value, ...); err says which. */
#define ATF_CLI_BAD_OPTION '?'
/* The --help / -h entry of every table. */
#define ATF_CLI_HELP_OPTION {"help", no_argument, NULL, 'h'}

/* Start a parse: GNU re-initialisation (optind = 0) and no messages from getopt (opterr = 0). */
void atf_cli_getopt_begin(void);

/* getopt_long(argc, argv, shortopts, longopts) (":" is put in front of shortopts here, after a
 * leading '+' that stops at the first positional argument, as main.c does), except
 * that a bad option returns ATF_CLI_BAD_OPTION with the one-line message above in err
 * (without the "atf CMD: " prefix that atf_cli_fail adds). The value is in optarg. */
int atf_cli_getopt(const char *cmd, int argc, char **argv, const char *shortopts,
                   const struct option *longopts, char *err);

/* The positional arguments left after the options (argv[optind..argc)): between min and max of
 * them, stored in out[0..max) (unused entries NULL); *n (may be NULL) receives their count.
 * Too few: "missing ARGUMENT (atf CMD --help)" with `what` naming them; too many: "unexpected
 * argument 'X'". */
atf_error atf_cli_positionals(const char *cmd, int argc, char **argv, int min, int max,
                              const char *what, const char **out, int *n, char *err);

/* 1 if any argument after the subcommand name (before a "--") is --help or -h: help wins over
 * every other argument, as it always has. */
int atf_cli_wants_help(int argc, char **argv);

/* ---- Exit codes (only here: the library returns errors and statuses, not exit codes) ----
 * 0 solved, 2 bad input or usage, 3 infeasible, 4 iteration limit, 130 interrupted, 1 other. */
int atf_cli_exit_code(atf_error e);
int atf_cli_status_exit_code(atf_status s);

/* Print "atf CMD: message" on stderr and return the exit code of e. */
int atf_cli_fail(const char *cmd, atf_error e, const char *msg);
/* A failure every rank meets alike (the options, the data every rank reads): told once, by
 * rank 0, and the ranks end together (atf_cli_ranks_alike). One process: atf_cli_fail. */
int atf_cli_fail_alike(const char *cmd, atf_error e, const char *msg);

/* Strict number parsing for option values; on failure write a message naming the option
 * (ATF_E_USAGE). */
atf_error atf_cli_int(const char *opt, const char *text, long lo, long hi, long *out, char *err);
atf_error atf_cli_double(const char *opt, const char *text, double *out, char *err);

/* Output locations, checked before any work so that an unwritable output fails at once with
 * exit 2 (usage), the same in every command. atf_cli_check_output: an output file can be
 * written atomically at PATH (its directory exists and is writable, PATH is not a directory).
 * atf_cli_output_dir: an output directory exists or is created (with its parents) and is
 * writable. */
atf_error atf_cli_check_output(const char *path, char *err);
atf_error atf_cli_output_dir(const char *dir, char *err);

/* ---- Data directories (independent of the working directory) ----
 * The data roots the data sets are searched in (ROOT/mnist, ROOT/fashion-mnist), in order:
 * if the environment variable ATF_DATA is set and not empty, its ':'-separated directories and
 * nothing else (an explicit choice never falls back to another copy of the data); otherwise the
 * data/ folder of the repository the atf binary was built in (BUILD/drivers/atf → BUILD/../data), the
 * source repository's data/ (ATF_SOURCE_DATA, defined at compile time) and
 * /usr/share/datasets (Debian's dataset-* packages). The same directory is listed once.
 * Writes up to max paths of ATF_CLI_PATHLEN bytes into roots; returns their count. */
#define ATF_CLI_PATHLEN 1024
int atf_cli_data_roots(char (*roots)[ATF_CLI_PATHLEN], int max);

/* SIGINT handling. atf_cli_catch_sigint, first thing in main: a Ctrl-C ends the process with
 * exit 130 (an interrupted run) until a command watches the flag. atf_cli_interrupt_flag: the
 * command watches it from now on (first Ctrl-C asks the solver to stop and write its last
 * iterate; a second one kills the process). */
void atf_cli_catch_sigint(void);
volatile sig_atomic_t *atf_cli_interrupt_flag(void);

/* Where the commands write: stdout and stderr, or the host's streams between
 * atf_cli_host_begin and atf_cli_host_end (atf_cli_host.h), where the stop flag is the host's
 * too (atf_cli_interrupt_flag then installs no handler). */
FILE *atf_cli_stdout(void);
FILE *atf_cli_stderr(void);
void atf_cli_host_begin(FILE *out, FILE *err, volatile sig_atomic_t *interrupt);
void atf_cli_host_end(void);
/* The solver's log hook (atf_hooks.log): its text on atf_cli_stderr(). */
void atf_cli_log(void *ctx, const char *text);

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

/* ---- the solver's methods, as the method table has them (cli_methods.c) ---- */
/* Which methods a command's --method takes (NULL: every one). */
typedef int atf_cli_method_keep(const atf_method_info *info);
/* --method: "auto" or the name of a method that `keep` takes; ATF_E_USAGE otherwise, the message
 * listing them ("--method: 'x' is not one of auto, admm, ..."). */
atf_error atf_cli_parse_method(const char *val, atf_cli_method_keep *keep, atf_method *m,
                               char *err);
/* Their help: one entry per method, its name at column `indent`, then what it solves and its
 * summary, wrapped to 80 columns. */
void atf_cli_method_help(FILE *out, int indent, atf_cli_method_keep *keep);
/* What a method solves, as help and lists say it: "interpolation", "squared, xent", "the
 * baseline". */
const char *atf_cli_method_solves(const atf_method_info *info);
/* text wrapped to 80 columns: the first line continues at column `at` (already printed), the
 * others start at column `indent`. Ends with a newline. */
void atf_cli_wrap(FILE *out, int at, int indent, const char *text);

/* Before anything else in main(): when OpenBLAS fell back to its generic kernels on a CPU it does
 * not recognise, set OPENBLAS_CORETYPE to the kernel the CPU supports and execute the command
 * again (cli_blas.c). Returns only when nothing is to be done or the re-execution failed. */
void atf_cli_blas_kernel(char **argv);

/* ---- several processes (cli_mpi.c) ----
 * begin: start MPI when an MPI launcher started this process (MPI build only); ranks: the
 * ranks sharing the run when there are several (else NULL); end: the exit code, after ending
 * MPI — a rank that reported a failure of its own ends the whole job (MPI_Abort) instead, so
 * that ranks still working do not run on; failures every rank agreed on end normally. */
void atf_cli_ranks_begin(int *argc, char ***argv);
const atf_exp_ranks *atf_cli_ranks(void);
int atf_cli_ranks_end(int code);
/* This rank has reported a failure of its own (atf_cli_fail): atf_cli_ranks_end ends the job
 * (MPI_Abort) — unless atf_cli_ranks_alike says every rank met it (atf_cli_ranks_agree says so
 * itself), when all end through MPI_Finalize with its code. */
void atf_cli_ranks_failed(void);
void atf_cli_ranks_alike(void);
/* The ranks as the solver's processes (sums of double-double pairs reduced at rank 0 and
 * broadcast, rows gathered, maxima), NULL without several ranks; and bytes broadcast from rank 0
 * (nothing without several ranks). */
const atf_processes *atf_cli_processes(void);
void atf_cli_ranks_bcast(void *buf, int bytes);
/* Bytes sent to, or received from, rank `peer` (several ranks only; without them nothing
 * happens). Between two ranks, messages arrive in the order they were sent. */
void atf_cli_ranks_send(int peer, const void *buf, size_t bytes);
void atf_cli_ranks_recv(int peer, void *buf, size_t bytes);
/* A failure agreed on: every rank calls it at the same point with its own error (ATF_OK for
 * none) and gets the largest code over the ranks, so that all leave at the same point with the
 * same code; *tell is 1 on the rank that tells it — the lowest rank that met that error (a
 * failure every rank meets alike is told by rank 0 alone). Without several ranks: e, *tell = 1. */
atf_error atf_cli_ranks_agree(atf_error e, int *tell);

#endif
