/* cli_run.c — the `atf` command's dispatch to its subcommands (atf_cli_run), and the same run in
 * another program's process (atf_cli_host_run, atf_cli_host.h: the Python package's atf.path,
 * atf.sweep, atf.train and atf.cli), where the streams are the host's and so is the stop flag. */
#define _GNU_SOURCE /* fopencookie */
#include <stdio.h>
#include <string.h>

#include "atf_cli.h"
#include "atf_cli_host.h"
#include "atf_version.h"

typedef struct {
    const char *name;
    atf_cmd_fn fn;
    const char *summary;
} atf_command;

static const atf_command commands[] = {
    {"solve", atf_cmd_solve, "solve problem (16) for a problem file (Newton, ADMM, ALM, LP, ...)"},
    {"baseline", atf_cmd_baseline, "NTK min-norm interpolant (Theorem 1) of a problem file"},
    {"penalty", atf_cmd_penalty, "tabulate a penalty: effective penalty, argmin, prox, factors"},
    {"features", atf_cmd_features, "tangent-feature problem of an MLP on a data set"},
    {"train", atf_cmd_train, "train an MLP by SGD with momentum and save it"},
    {"predict", atf_cmd_predict, "test predictions and errors of a solution or baseline"},
    {"kernel", atf_cmd_kernel, "NTK, adapted and label kernels and their alignment"},
    {"experiment", atf_cmd_experiment, "the paper's experiments: alignment, penalties, samples"},
    {"sweep", atf_cmd_sweep, "penalty x scale x structure ablations on a problem file"},
    {"path", atf_cmd_path, "regularisation path in lambda of a penalized loss, best lambda"},
    {"demo", atf_cmd_demo, "built-in example: adaptive vs NTK min-norm (no download)"},
    {"methods", atf_cmd_methods, "the solver's methods and what each may do"},
};
static const size_t ncommands = sizeof commands / sizeof commands[0];

static void usage(FILE *out)
{
    fprintf(out,
            "usage: atf COMMAND [ARGS...]   (atf COMMAND --help for its options)\n"
            "\n"
            "atf solves the structured regression of the adaptive tangent feature theory\n"
            "(LeJeune & Alemohammad, arXiv 2308.15478, eq. 16).\n\ncommands:\n");
    for (size_t i = 0; i < ncommands; i++)
        fprintf(out, "  %-11s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nexit codes: 0 solved, 2 bad input or usage, 3 infeasible,\n"
                 "            4 iteration limit (result written), 130 interrupted (last iterate written)\n"
                 "environment: ATF_DATA  ':'-separated data roots for --data mnist and\n"
                 "            fashion-mnist (see atf features --help)\n"
                 "            OPENBLAS_CORETYPE  OpenBLAS kernel; when unset and OpenBLAS does\n"
                 "            not know the CPU, atf sets it (SkylakeX or Haswell) and restarts\n");
}

enum { OPT_VERSION = ATF_CLI_OPT_FIRST };

/* The options before the command ('+': the first non-option is the command, and what follows
 * it belongs to the command). */
static const struct option options[] = {
    {"version", no_argument, NULL, OPT_VERSION},
    ATF_CLI_HELP_OPTION,
    {NULL, 0, NULL, 0}};

/* Under several MPI ranks, the commands that share their work: the row-wise experiments deal
 * their rows to the ranks; solve, baseline (cg), path and features spread the examples over
 * them, train every minibatch. Any other command would run K times over the same outputs. */
static int shares_work(int argc, char **argv, int at)
{
    static const char *const shared[] = {"baseline", "demo", "features", "path", "solve",
                                         "sweep", "train"};
    for (size_t i = 0; i < sizeof shared / sizeof *shared; i++)
        if (!strcmp(argv[at], shared[i]))
            return 1;
    return !strcmp(argv[at], "experiment") && at + 1 < argc && !strcmp(argv[at + 1], "samples");
}

int atf_cli_run(int argc, char **argv)
{
    char err[ATF_ERRLEN] = "";
    int c;
    atf_cli_getopt_begin();
    while ((c = atf_cli_getopt("", argc, argv, "+h", options, err)) != -1) {
        if (c == 'h') {
            usage(atf_cli_stdout());
            return 0;
        }
        if (c == OPT_VERSION) {
            fprintf(atf_cli_stdout(), "atf %s\n", atf_version()); /* the library's version */
            return 0;
        }
        fprintf(atf_cli_stderr(), "atf: %s\n", err);
        return atf_cli_exit_code(ATF_E_USAGE);
    }
    if (optind >= argc) {
        usage(atf_cli_stderr());
        return atf_cli_exit_code(ATF_E_USAGE);
    }
    const char *name = argv[optind];
    if (!strcmp(name, "help")) {
        usage(atf_cli_stdout());
        return 0;
    }
    const atf_exp_ranks *rk = atf_cli_ranks();
    if (rk && !shares_work(argc, argv, optind)) {
        if (rk->rank == 0)
            fprintf(atf_cli_stderr(), "atf %s: runs as one process; under mpirun with %d ranks only solve, "
                    "baseline, features, path, train, sweep, demo and experiment samples share "
                    "their work (docs/solver.md, \"Several processes\")\n",
                    name, rk->size);
        return atf_cli_exit_code(ATF_E_USAGE); /* every rank: the job ends normally, code 2 */
    }
    for (size_t i = 0; i < ncommands; i++)
        if (!strcmp(name, commands[i].name))
            return commands[i].fn(argc - optind, argv + optind);
    fprintf(atf_cli_stderr(), "atf: unknown command '%s' (atf --help lists the commands)\n", name);
    return atf_cli_exit_code(ATF_E_USAGE);
}

/* ---- in another program's process ---- */

typedef struct {
    atf_cli_write_fn fn;
    void *ctx;
} host_stream;

static ssize_t host_write(void *cookie, const char *buf, size_t len)
{
    const host_stream *s = cookie;
    if (s->fn && len)
        s->fn(s->ctx, buf, len);
    return (ssize_t)len;
}

/* A stream whose text goes to fn: line-buffered, so that progress lines arrive as written. */
static FILE *host_file(host_stream *s)
{
    FILE *f = fopencookie(s, "w", (cookie_io_functions_t){.write = host_write});
    if (f)
        setvbuf(f, NULL, _IOLBF, 0);
    return f;
}

int atf_cli_host_run(int argc, char **argv, const atf_cli_host *host)
{
    host_stream out = {host ? host->out : NULL, host ? host->ctx : NULL};
    host_stream err = {host ? host->err : NULL, host ? host->ctx : NULL};
    FILE *fo = host_file(&out), *fe = host_file(&err);
    if (!fo || !fe) {
        if (fo)
            fclose(fo);
        if (fe)
            fclose(fe);
        return atf_cli_exit_code(ATF_E_NOMEM);
    }
    atf_cli_host_begin(fo, fe, host ? host->interrupt : NULL);
    int code = atf_cli_run(argc, argv);
    atf_cli_host_end();
    fclose(fo);
    fclose(fe);
    return code;
}
