/* cmd_path.c — `atf path PROBLEM.h5`: the regularisation path of problem (16) in λ (the path
 * of the experiments library, atf_path_run), filled from the command line here. Under mpirun
 * (docs/experiments.md, "The λ path over processes") every rank parses the same command line
 * and runs the path with the ranks (io.ranks); what every rank meets alike before the run (a bad
 * option) is said by rank 0 alone, and rank 0 alone checks (creates) the output directory. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "cmd_experiments.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: atf path PROBLEM.h5 --loss xent|squared --lambdas L1,L2,... -o DIR\n"
            "                [--validation-fraction F] [--seed S] [--penalty SPEC] [--tol EPS]\n"
            "                [--max-iter N] [--method M] [--no-reduce] [--verbose] [--quiet]\n"
            "                [--json]\n"
            "\n"
            "Solve problem (16) with the loss squared:lambda=L or xent:lambda=L for every L of\n"
            "the list, from the largest to the smallest (in whatever order they are given),\n"
            "each solve warm-started from the previous answer. Each lambda is scored on\n"
            "validation examples (--validation-fraction) or on the problem's test split and\n"
            "recorded as one row of DIR/path.csv and DIR/path.jsonl (status, method, objective,\n"
            "loss and penalty values, residuals, iterations, seconds, train / validation / test\n"
            "error and mean cross-entropy, effective ranks) with its result file\n"
            "DIR/lambda-<row>.h5 (atf predict reads it). The best lambda (minimal validation or\n"
            "test cross-entropy for xent, minimal error for squared; ties: the larger lambda) is\n"
            "named on stdout; the figure is DIR/path.{svg,png}. Ctrl-C stops the current solve\n"
            "(exit 130, nothing half-written); the same command resumes, skipping finished\n"
            "lambdas; a resumed run with other settings is refused.\n"
            "\n"
            "  --loss K               xent (softmax cross-entropy against /labels) or squared\n"
            "  --lambdas LIST         comma-separated, distinct, each a finite number > 0\n"
            "  -o, --out DIR          output directory (created if needed)\n"
            "  --validation-fraction F\n"
            "                         fit on the training examples less a seeded random\n"
            "                         fraction F in (0, 1) of them, score on those; DIR/fit.h5\n"
            "                         is then the fitted problem (with the test split) that\n"
            "                         the result files belong to. Default: score on /test\n"
            "  --seed S               seed of the validation examples (default 1)\n"
            "  --penalty SPEC         every block's penalty (default: the file's)\n"
            "  --tol EPS              the solver's relative tolerance (default 1e-6)\n"
            "  --max-iter N           iteration limit per lambda (default 10000)\n"
            "  --method M             passed to the solver (default auto: it picks the method\n"
            "                         for the loss; see atf solve --help)\n"
            "  --no-reduce            no exact subspace reduction of factored blocks (needed\n"
            "                         for a rank-deficient factor over several processes)\n"
            "  --verbose              the solver's iteration table on stderr\n"
            "  --quiet                no progress on stderr\n"
            "  --json                 one JSON line on stdout: best lambda, its error and\n"
            "                         cross-entropy, criterion, rows, seconds\n"
            "\n"
            "exit codes: 0 done, 2 bad input or usage, 130 interrupted (rows kept; re-run to\n"
            "            resume), 1 other failures\n");
}

enum {
    OPT_LOSS = ATF_CLI_OPT_FIRST, OPT_LAMBDAS, OPT_FRACTION, OPT_SEED, OPT_PENALTY, OPT_TOL,
    OPT_MAX_ITER, OPT_METHOD, OPT_NO_REDUCE, OPT_VERBOSE, OPT_QUIET, OPT_JSON
};

typedef struct {
    int quiet, has_loss, has_out;
} path_flags;

/* The library names an item ("lambdas: ..."); the command's message names the flag. */
static atf_error as_flag(atf_error e, char *err)
{
    if (e) {
        char inner[ATF_ERRLEN];
        snprintf(inner, sizeof inner, "%s", err);
        atf_errorf(err, "--%.*s", ATF_ERRLEN - 8, inner);
    }
    return e;
}

/* The path solves a penalized loss: the methods that do, or auto. */
static int penalized_method(const atf_method_info *in)
{
    return in->penalized;
}

static atf_error parse_fraction(const char *val, double *f, char *err)
{
    atf_error e = atf_cli_double("--validation-fraction", val, f, err);
    if (!e && !(*f > 0 && *f < 1)) {
        atf_errorf(err, "--validation-fraction: %s is not in (0, 1)", val);
        e = ATF_E_USAGE;
    }
    return e;
}

static atf_error path_option(int c, const char *val, atf_path_config *cfg, path_flags *fl,
                             char *err)
{
    long v;
    atf_error e = ATF_OK;
    switch (c) {
    case 'o':
        fl->has_out = 1;
        if (snprintf(cfg->out, sizeof cfg->out, "%s", val) >= (int)sizeof cfg->out) {
            atf_errorf(err, "-o: '%.40s...': path too long", val);
            e = ATF_E_USAGE;
        }
        break;
    case OPT_LOSS:
        fl->has_loss = 1;
        return as_flag(atf_path_set_loss(cfg, val, err), err);
    case OPT_LAMBDAS: return as_flag(atf_path_set_lambdas(cfg, val, err), err);
    case OPT_FRACTION: return parse_fraction(val, &cfg->validation_fraction, err);
    case OPT_SEED:
        e = atf_cli_int("--seed", val, 0, LONG_MAX, &v, err);
        cfg->seed = (uint64_t)v;
        break;
    case OPT_PENALTY:
        if (snprintf(cfg->penalty, sizeof cfg->penalty, "%s", val) >= (int)sizeof cfg->penalty) {
            atf_errorf(err, "--penalty: longer than %d characters", ATF_PENALTY_SPECLEN - 1);
            e = ATF_E_USAGE;
        }
        break;
    case OPT_TOL: e = atf_cli_double("--tol", val, &cfg->tol, err); break;
    case OPT_MAX_ITER:
        e = atf_cli_int("--max-iter", val, 1, 1000000000L, &v, err);
        cfg->max_iter = (int)v;
        break;
    case OPT_METHOD: return atf_cli_parse_method(val, penalized_method, &cfg->method, err);
    case OPT_NO_REDUCE: cfg->reduce = 0; break;
    case OPT_VERBOSE: cfg->verbose = 1; break;
    case OPT_QUIET: fl->quiet = 1; break;
    case OPT_JSON: cfg->io.json = 1; break;
    case 'h': break; /* atf_cli_wants_help has seen it */
    default: e = ATF_E_USAGE; /* err from atf_cli_getopt */
    }
    return e;
}

/* What has no default must be given. */
static atf_error require(const atf_path_config *cfg, const path_flags *fl, char *err)
{
    const char *missing = !fl->has_loss ? "--loss xent|squared"
                          : !cfg->nlambdas ? "--lambdas LIST"
                          : !fl->has_out   ? "-o DIR"
                                           : NULL;
    if (!missing)
        return ATF_OK;
    atf_errorf(err, "missing %s (atf path --help)", missing);
    return ATF_E_USAGE;
}

static atf_error parse_path(int argc, char **argv, atf_path_config *cfg, path_flags *fl,
                            char *err)
{
    static const struct option options[] = {
        {"out", required_argument, NULL, 'o'}, {"loss", required_argument, NULL, OPT_LOSS},
        {"lambdas", required_argument, NULL, OPT_LAMBDAS},
        {"validation-fraction", required_argument, NULL, OPT_FRACTION},
        {"seed", required_argument, NULL, OPT_SEED},
        {"penalty", required_argument, NULL, OPT_PENALTY},
        {"tol", required_argument, NULL, OPT_TOL},
        {"max-iter", required_argument, NULL, OPT_MAX_ITER},
        {"method", required_argument, NULL, OPT_METHOD},
        {"no-reduce", no_argument, NULL, OPT_NO_REDUCE},
        {"verbose", no_argument, NULL, OPT_VERBOSE}, {"quiet", no_argument, NULL, OPT_QUIET},
        {"json", no_argument, NULL, OPT_JSON}, ATF_CLI_HELP_OPTION, {NULL, 0, NULL, 0}};
    const char *problem = NULL;
    atf_cli_getopt_begin();
    int c;
    atf_error e = ATF_OK;
    while (!e && (c = atf_cli_getopt("path", argc, argv, "o:h", options, err)) != -1)
        e = path_option(c, optarg, cfg, fl, err);
    if (!e)
        e = atf_cli_positionals("path", argc, argv, 1, 1, "PROBLEM.h5", &problem, NULL, err);
    if (!e && snprintf(cfg->problem, sizeof cfg->problem, "%s", problem) >=
                  (int)sizeof cfg->problem) {
        atf_errorf(err, "%s: path too long", problem);
        e = ATF_E_USAGE;
    }
    return e ? e : require(cfg, fl, err);
}

/* Under ranks: rank 0 checks the output directory and tells every rank how that went (its
 * message is rank 0's alone); alone: the check. */
static atf_error output_dir(const atf_path_config *cfg, char *err)
{
    const atf_exp_ranks *rk = atf_cli_ranks();
    if (!rk)
        return atf_cli_output_dir(cfg->out, err);
    int v = rk->rank == 0 ? (int)atf_cli_output_dir(cfg->out, err) : 0;
    rk->bcast(rk->ctx, &v, (int)sizeof v);
    return (atf_error)v;
}

int atf_cmd_path(int argc, char **argv)
{
    const atf_exp_ranks *rk = atf_cli_ranks();
    if (atf_cli_wants_help(argc, argv)) {
        if (!rk || rk->rank == 0)
            usage(atf_cli_stdout());
        return 0;
    }
    char err[ATF_ERRLEN] = "";
    static atf_path_config cfg; /* large */
    path_flags fl = {0, 0, 0};
    atf_exp_outcome o = {ATF_STATUS_SOLVED, 0, 0};
    atf_path_defaults(&cfg);
    atf_cli_command_line(argc, argv, cfg.command, sizeof cfg.command); /* before getopt */
    atf_error e = parse_path(argc, argv, &cfg, &fl, err);
    if (!e)
        e = atf_path_check(&cfg, err);
    if (e && rk && rk->rank != 0) /* the same command line: rank 0 says it */
        err[0] = '\0';
    if (!e)
        e = output_dir(&cfg, err);
    if (!e) {
        cfg.io = atf_cli_exp_io(cfg.io.json, fl.quiet);
        e = atf_path_run(&cfg, &o, NULL, err);
    }
    return atf_cli_exp_exit("path", e, &o, err);
}
