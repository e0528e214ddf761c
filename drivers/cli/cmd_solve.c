/* cmd_solve.c — `atf solve PROBLEM.h5 -o RESULT.h5 [options]` (docs/cli.md).
 *
 * Reads a problem, applies the command-line overrides, runs the solver (iteration table on
 * stderr unless --quiet), writes the result atomically whenever one exists (also for statuses
 * infeasible, max_iterations and interrupted), prints a short summary on stderr and, with
 * --json, one JSON line on stdout. Exit codes: 0 solved, 2 bad input or usage, 3 infeasible,
 * 4 iteration limit, 130 interrupted by SIGINT, 1 other failures.
 *
 * `atf baseline` forwards here with argv[0] = "baseline" and `--method=auto`, so both commands
 * share one code path and name themselves correctly in messages; for baseline, --method takes
 * gram (method baseline), cg or auto (the solver's chooser decides once the problem is read,
 * and its reason opens the result's method note). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atf_cli.h"
#include "atf_solver.h"
#include "atf_report.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: atf solve PROBLEM.h5 -o RESULT.h5 [--penalty SPEC] [--loss SPEC]\n"
            "                 [--structure layer|diagonal|full]\n"
            "                 [--method M]\n"
            "                 [--tol EPS] [--eps-abs E] [--max-iter N] [--rho R] [--alpha A]\n"
            "                 [--no-reduce] [--no-adaptive-rho] [--warm RESULT.h5]\n"
            "                 [--newton-rank K] [--continuation R]\n"
            "                 [--linsys auto|direct|pcg] [--precond P]\n"
            "                 [--memory-fraction F] [--gram-max-rows N]\n"
            "                 [--checkpoint FILE [--checkpoint-every S]] [--precond-file F]\n"
            "                 [--log-every K] [--quiet] [--json]\n"
            "\n"
            "Solve problem (16): minimise the sum over blocks of the spectral penalty\n"
            "omega~(singular values of B) subject to the tangent-feature constraints, or,\n"
            "with --loss squared|xent, that penalty plus a loss of the predictions.\n"
            "\n"
            "  -o RESULT.h5        output file (written atomically; also for statuses\n"
            "                      infeasible, max_iterations and interrupted)\n"
            "  --penalty SPEC      override every block's penalty (see atf penalty --help)\n"
            "  --structure S       layer: blocks as in the file (default); diagonal: every\n"
            "                      parameter its own 1x1 block; full: one vector block\n"
            "  --loss SPEC         interpolate (default: A vec B = r exactly),\n"
            "                      squared:lambda=L (penalty + ||A vec B - r||^2 / 2L) or\n"
            "                      xent:lambda=L (penalty + softmax cross-entropy of the\n"
            "                      logits f0 + A vec B against /labels, summed, / L); L > 0\n"
            "  --method M          auto (default): newton for squared and xent; for\n"
            "                      interpolation admm where the M x M Gram fits in memory\n"
            "                      (in double, or on one process in single precision as\n"
            "                      the preconditioner of its projection by CG), alm\n"
            "                      otherwise (the choice and its reason are in the log,\n"
            "                      the JSON and the result's method_note); or one of the\n"
            "                      methods (atf methods: what each may do):\n");
    atf_cli_method_help(out, 24, NULL);
    fprintf(out,
            "  --tol EPS           relative tolerance eps_rel (default 1e-6; newton, fista:\n"
            "                      on the proximal-gradient residual, alm: on stationarity,\n"
            "                      irls: on the relative step)\n"
            "  --eps-abs E         absolute tolerance eps_abs (default 1e-8)\n"
            "  --max-iter N        iteration limit (default 10000)\n"
            "  --rho R             multiplier of the data-scaled initial rho (default 1)\n"
            "  --alpha A           over-relaxation in (0, 2) (default 1.6)\n"
            "  --no-reduce         no exact subspace reduction of factored blocks\n"
            "  --no-adaptive-rho   keep rho fixed\n"
            "  --warm RESULT.h5    start from an earlier result of the same problem (checked\n"
            "                      by fingerprint: a result of another problem is exit 2)\n"
            "  --newton-rank K     rank of newton's Nystrom preconditioner (and alm's\n"
            "                      subproblems'), 1 ... 2000, or 0 (none); default: rank\n"
            "                      100 (xent) or 300 (squared) from 4000 examples on,\n"
            "                      none below\n"
            "  --continuation R    newton from a --warm result solved at another lambda,\n"
            "                      nonconvex penalties: go there through lambdas at most a\n"
            "                      factor R apart, each solved to pg residual 1e-3 (default\n"
            "                      2; 0: straight to the lambda asked)\n"
            "  --linsys L          how the linear systems with A A^T are solved (admm's,\n"
            "                      irls's and lp's projection): auto (default: a\n"
            "                      factorisation where the Gram fits --memory-fraction of\n"
            "                      the available memory, else PCG where its single-\n"
            "                      precision Gram fits), direct (CHOLMOD for all-sparse\n"
            "                      blocks, else the dense Gram by Cholesky or, singular,\n"
            "                      by its eigendecomposition) or pcg (preconditioned CG,\n"
            "                      the Gram never formed); the result names the backend\n"
            "  --precond P         PCG's preconditioner: auto (default: gram32 for a\n"
            "                      projection, nystrom-block for one solve), none, jacobi,\n"
            "                      nystrom, nystrom-block or gram32\n"
            "  --memory-fraction F the fraction of the available memory a factorisation\n"
            "                      may take, in (0, 1] (default 0.75)\n"
            "  --gram-max-rows N   one solve (the baseline) factorises the Gram up to N\n"
            "                      rows, above it CG is faster (default 10000; 0: no bound)\n"
            "  --checkpoint FILE   newton, alm, admm: keep the solve's state in FILE every S\n"
            "                      seconds\n"
            "                      (--checkpoint-every, default 600); when FILE exists the\n"
            "                      solve goes on from it, to the answer the uninterrupted\n"
            "                      solve gives (bit for bit). Kept after Ctrl-C (with the\n"
            "                      step it stopped in: none is lost) and the iteration\n"
            "                      limit (run again, with a larger --max-iter), else\n"
            "                      removed once RESULT.h5 is written. One process only\n"
            "  --precond-file F    keep the single-precision Gram's factor (2 M^2 bytes) in F\n"
            "                      once built, and read it from F instead of building it when\n"
            "                      F exists (a solve resumed from --checkpoint): admm with its\n"
            "                      projection by CG, or --precond gram32. Removed\n"
            "                      once RESULT.h5 is written. One process only\n"
            "  --log-every K       iteration table row every K iterations (default 50)\n"
            "  --quiet             no iteration table and no summary on stderr\n"
            "  --json              one JSON line on stdout (status, loss, objective,\n"
            "                      loss_value, penalty_value, residuals, ...)\n"
            "\n"
            "exit codes: 0 solved, 2 bad input or usage, 3 infeasible, 4 iteration limit,\n"
            "            130 interrupted (Ctrl-C; the last iterate is written)\n");
}

typedef struct {
    const char *problem, *output, *penalty, *warm;
    const char *checkpoint;       /* --checkpoint FILE, or NULL */
    const char *precond_file;     /* --precond-file FILE, or NULL */
    double checkpoint_seconds;    /* --checkpoint-every */
    atf_settings set;
    int quiet, json;
    int baseline;                 /* the command is baseline */
    char command[ATF_COMMANDLEN]; /* recorded in the result */
} solve_args;

static atf_error parse_structure(const char *v, atf_global_structure *s, char *err)
{
    if (atf_structure_parse(v, s) != ATF_OK) {
        atf_errorf(err, "--structure: '%s' is not one of layer, diagonal, full", v ? v : "");
        return ATF_E_USAGE;
    }
    return ATF_OK;
}

/* atf baseline --method gram|cg|auto. */
static atf_error parse_baseline_method(const char *v, solve_args *a, char *err)
{
    if (v && !strcmp(v, "auto"))
        a->set.method = ATF_METHOD_AUTO; /* the library picks the Gram or CG */
    else if (v && !strcmp(v, "gram"))
        a->set.method = ATF_METHOD_BASELINE;
    else if (v && !strcmp(v, "cg"))
        a->set.method = ATF_METHOD_CG;
    else {
        atf_errorf(err, "--method: '%s' is not one of gram, cg, auto", v ? v : "");
        return ATF_E_USAGE;
    }
    return ATF_OK;
}

static atf_error parse_loss(const char *v, atf_loss *loss, char *err)
{
    char msg[ATF_ERRLEN];
    if (atf_loss_parse(v, loss, msg) == ATF_OK)
        return ATF_OK;
    atf_errorf(err, "--loss: %s", msg);
    return ATF_E_USAGE;
}

enum {
    OPT_PENALTY = ATF_CLI_OPT_FIRST,
    OPT_LOSS,
    OPT_STRUCTURE,
    OPT_METHOD,
    OPT_TOL,
    OPT_EPS_ABS,
    OPT_MAX_ITER,
    OPT_RHO,
    OPT_ALPHA,
    OPT_NO_REDUCE,
    OPT_NO_ADAPTIVE_RHO,
    OPT_WARM,
    OPT_CHECKPOINT,
    OPT_CHECKPOINT_EVERY,
    OPT_PRECOND_FILE,
    OPT_LOG_EVERY,
    OPT_NEWTON_RANK,
    OPT_CONTINUATION,
    OPT_LINSYS,
    OPT_PRECOND,
    OPT_MEMORY_FRACTION,
    OPT_GRAM_MAX_ROWS,
    OPT_JSON
};

static const struct option options[] = {
    {"output", required_argument, NULL, 'o'},
    {"penalty", required_argument, NULL, OPT_PENALTY},
    {"loss", required_argument, NULL, OPT_LOSS},
    {"structure", required_argument, NULL, OPT_STRUCTURE},
    {"method", required_argument, NULL, OPT_METHOD},
    {"tol", required_argument, NULL, OPT_TOL},
    {"eps-abs", required_argument, NULL, OPT_EPS_ABS},
    {"max-iter", required_argument, NULL, OPT_MAX_ITER},
    {"rho", required_argument, NULL, OPT_RHO},
    {"alpha", required_argument, NULL, OPT_ALPHA},
    {"no-reduce", no_argument, NULL, OPT_NO_REDUCE},
    {"no-adaptive-rho", no_argument, NULL, OPT_NO_ADAPTIVE_RHO},
    {"warm", required_argument, NULL, OPT_WARM},
    {"checkpoint", required_argument, NULL, OPT_CHECKPOINT},
    {"checkpoint-every", required_argument, NULL, OPT_CHECKPOINT_EVERY},
    {"precond-file", required_argument, NULL, OPT_PRECOND_FILE},
    {"log-every", required_argument, NULL, OPT_LOG_EVERY},
    {"newton-rank", required_argument, NULL, OPT_NEWTON_RANK},
    {"continuation", required_argument, NULL, OPT_CONTINUATION},
    {"linsys", required_argument, NULL, OPT_LINSYS},
    {"precond", required_argument, NULL, OPT_PRECOND},
    {"memory-fraction", required_argument, NULL, OPT_MEMORY_FRACTION},
    {"gram-max-rows", required_argument, NULL, OPT_GRAM_MAX_ROWS},
    {"quiet", no_argument, NULL, 'q'},
    {"json", no_argument, NULL, OPT_JSON},
    ATF_CLI_HELP_OPTION,
    {NULL, 0, NULL, 0}};

/* One option c with its value (optarg). */
static atf_error apply_option(int c, const char *val, solve_args *a, char *err)
{
    atf_settings *s = &a->set;
    long n = 0;
    atf_error e = ATF_OK;
    switch (c) {
    case 'o': a->output = val; break;
    case OPT_PENALTY: a->penalty = val; break;
    case OPT_WARM: a->warm = val; break;
    case OPT_CHECKPOINT: a->checkpoint = val; break;
    case OPT_PRECOND_FILE: a->precond_file = val; break;
    case OPT_CHECKPOINT_EVERY:
        if (!(e = atf_cli_double("--checkpoint-every", val, &a->checkpoint_seconds, err)) &&
            !(a->checkpoint_seconds >= 0.0)) {
            atf_errorf(err, "--checkpoint-every: %s is not a number of seconds >= 0", val);
            e = ATF_E_USAGE;
        }
        return e;
    case OPT_STRUCTURE: return parse_structure(val, &s->structure, err);
    case OPT_METHOD:
        return a->baseline ? parse_baseline_method(val, a, err)
                           : atf_cli_parse_method(val, NULL, &s->method, err);
    case OPT_LOSS: return parse_loss(val, &s->loss, err);
    case OPT_TOL: return atf_cli_double("--tol", val, &s->eps_rel, err);
    case OPT_EPS_ABS: return atf_cli_double("--eps-abs", val, &s->eps_abs, err);
    case OPT_RHO: return atf_cli_double("--rho", val, &s->rho, err);
    case OPT_ALPHA: return atf_cli_double("--alpha", val, &s->alpha, err);
    case OPT_MAX_ITER:
        if (!(e = atf_cli_int("--max-iter", val, 1, 1000000000L, &n, err)))
            s->max_iter = (int)n;
        return e;
    case OPT_LOG_EVERY:
        if (!(e = atf_cli_int("--log-every", val, 1, 1000000000L, &n, err)))
            s->log_every = (int)n;
        return e;
    case OPT_NEWTON_RANK:
        if (!(e = atf_cli_int("--newton-rank", val, 0, 2000, &n, err)))
            s->newton_rank = (int)n;
        return e;
    case OPT_CONTINUATION: return atf_cli_double("--continuation", val, &s->continuation, err);
    case OPT_LINSYS:
        if (atf_linsys_kind_parse(val, &s->linsys) == ATF_OK)
            return ATF_OK;
        atf_errorf(err, "--linsys: '%s' is not one of auto, direct, pcg", val ? val : "");
        return ATF_E_USAGE;
    case OPT_PRECOND:
        if (atf_precond_parse(val, &s->precond) == ATF_OK)
            return ATF_OK;
        atf_errorf(err, "--precond: '%s' is not one of auto, none, jacobi, nystrom, "
                        "nystrom-block, gram32", val ? val : "");
        return ATF_E_USAGE;
    case OPT_MEMORY_FRACTION:
        if (!(e = atf_cli_double("--memory-fraction", val, &s->memory_fraction, err)) &&
            !(s->memory_fraction > 0.0 && s->memory_fraction <= 1.0)) {
            atf_errorf(err, "--memory-fraction: %s is not in (0, 1]", val);
            e = ATF_E_USAGE;
        }
        return e;
    case OPT_GRAM_MAX_ROWS:
        if (!(e = atf_cli_int("--gram-max-rows", val, 0, 1000000000L, &n, err)))
            s->gram_max_rows = (int)n;
        return e;
    case OPT_NO_REDUCE: s->reduce = 0; break;
    case OPT_NO_ADAPTIVE_RHO: s->adaptive_rho = 0; break;
    case 'q': a->quiet = 1; break;
    case OPT_JSON: a->json = 1; break;
    case 'h': break; /* atf_cli_wants_help has seen it */
    default: return ATF_E_USAGE; /* ATF_CLI_BAD_OPTION: err holds the message */
    }
    return ATF_OK;
}

static atf_error parse_args(int argc, char **argv, solve_args *a, char *err)
{
    const char *cmd = argv[0];
    memset(a, 0, sizeof *a);
    a->set = atf_settings_default();
    a->baseline = !strcmp(cmd, "baseline");
    a->set.baseline = a->baseline; /* the NTK interpolant instead of problem (16) */
    a->checkpoint_seconds = 600.0;
    atf_error e = ATF_OK;
    int c;
    atf_cli_getopt_begin();
    while (!e && (c = atf_cli_getopt(cmd, argc, argv, "o:qh", options, err)) != -1)
        e = apply_option(c, optarg, a, err);
    if (e)
        return e;
    if ((e = atf_cli_positionals(cmd, argc, argv, 1, 1, "PROBLEM.h5", &a->problem, NULL, err)))
        return e;
    if (!a->output) {
        atf_errorf(err, "missing -o RESULT.h5 (atf %s --help)", cmd);
        return ATF_E_USAGE;
    }
    if ((a->checkpoint || a->precond_file) && atf_cli_processes()) {
        atf_errorf(err, "%s: one process only (not under mpirun)",
                   a->checkpoint ? "--checkpoint" : "--precond-file");
        return ATF_E_USAGE;
    }
    return ATF_OK;
}

static void report(const solve_args *a, const atf_result *res)
{
    if (!a->quiet) {
        char text[1024];
        atf_result_summary(res, text, sizeof text);
        fprintf(atf_cli_stderr(), "%s: %s", a->output, text);
    }
    if (a->json) {
        atf_cli_print_json(atf_result_json_object(res));
    }
}

/* Problem (with the --penalty override) and warm start, each checked; errors name the file. */
/* ---- under mpirun: each rank reads and solves its shard of the examples ----
 * Rank 0 checks the output and the file first (atf-h5check) and computes the fingerprint, so
 * that no rank parses a file nobody has checked; the other ranks then read their shards
 * unchecked. A failure every rank meets alike is told by rank 0 alone; one a rank meets on its
 * own (its rows) by that rank, which ends the job (atf_cli_fail). */

static int teller = 1; /* this rank tells the failure agreed on (rank 0 when there is none) */

/* The largest error code over the ranks, so that every rank leaves at the same point; the
 * lowest rank that met it is the one to tell it. */
static atf_error agreed(atf_error e)
{
    const atf_exp_ranks *rk = atf_cli_ranks();
    atf_error all = atf_cli_ranks_agree(e, &teller);
    if (!all)
        teller = !rk || rk->rank == 0;
    return all;
}

static int rank(void)
{
    const atf_exp_ranks *rk = atf_cli_ranks();
    return rk ? rk->rank : 0;
}

/* This rank's shard: rank 0 checks the file (atf-h5check) while reading the sizes, then every
 * rank reads its own examples unchecked, rank 0 streaming the whole content for the
 * fingerprint. */
static atf_error read_shard(const solve_args *a, atf_problem **prob, char *err)
{
    const atf_exp_ranks *rk = atf_cli_ranks();
    atf_error e = ATF_OK;
    int N = 0, first, count;
    if (rk->rank == 0) {
        atf_problem *head = NULL;
        e = atf_problem_read_shard(a->problem, 0, 1, 1, 0, &head, err);
        N = e ? 0 : head->N;
        atf_problem_free(head);
    }
    if ((e = agreed(e)))
        return e;
    atf_cli_ranks_bcast(&N, sizeof N);
    e = atf_shard_range(N, rk->rank, rk->size, &first, &count, err);
    if (!e)
        e = atf_problem_read_shard(a->problem, first, count, 0, rk->rank == 0, prob, err);
    return agreed(e);
}

/* The problem: whole in one process; under ranks this rank's shard, with rank 0's fingerprint. */
static atf_error read_problem(const solve_args *a, atf_problem **prob, char *err)
{
    if (!atf_cli_ranks())
        return atf_problem_read(a->problem, prob, err);
    atf_error e = read_shard(a, prob, err);
    if (!e) {
        atf_cli_ranks_bcast((*prob)->fingerprint, sizeof (*prob)->fingerprint);
        atf_cli_ranks_bcast(&(*prob)->fingerprint_state, sizeof (*prob)->fingerprint_state);
    }
    return e;
}

/* Problem (with the --penalty override) and warm start, each checked; errors name the file.
 * Under ranks, rank 0 checks the output and tells the note. */
static atf_error load(const char *cmd, const solve_args *a, atf_problem **prob,
                      atf_result **warm, char *err)
{
    /* every file the run may write, before any work (a checkpoint's first write may come
     * hours in; a resumed one exists and is rewritten in place) */
    const char *outputs[3] = {a->output, a->checkpoint, a->precond_file};
    atf_error e = ATF_OK;
    for (int i = 0; i < 3 && !e && rank() == 0; i++)
        if (outputs[i])
            e = atf_cli_check_output(outputs[i], err);
    if ((e = agreed(e)) || (e = read_problem(a, prob, err)))
        return e;
    if (rank() == 0 && !a->warm)
        atf_cli_note_problem(cmd, *prob, a->problem);
    if (a->penalty)
        e = atf_problem_set_penalty(*prob, a->penalty, err);
    if (!e) /* e.g. xent without /labels: named by the file */
        e = atf_loss_check(&a->set.loss, *prob, a->problem, err);
    if (!e && a->warm)
        e = atf_result_read(a->warm, warm, err);
    if (!e && a->warm)
        e = atf_cli_check_pair(cmd, *warm, a->warm, *prob, a->problem, err);
    if (!e && a->warm)
        e = atf_result_check(*warm, *prob, a->warm, a->problem, err);
    return agreed(e);
}

/* A failure: told by the rank agreed on (rank 0 for one every rank meets alike: the solver's,
 * which all ranks meet at the same step), quiet elsewhere. Those of loading were agreed on
 * (agreed()), so the ranks end together; a solver's failure ends the job from the rank that
 * tells it, in case some rank did not meet it and waits in a collective. */
static int fail_alike(const char *cmd, atf_error e, char *msg, int agreed_on)
{
    if (!teller)
        msg[0] = '\0';
    if (agreed_on)
        atf_cli_ranks_alike();
    return atf_cli_fail(cmd, e, msg);
}

static int run(const char *cmd, solve_args *a)
{
    char err[ATF_ERRLEN] = "";
    atf_problem *prob = NULL;
    atf_result *warm = NULL, *res = NULL;
    atf_solver *solver = NULL;
    atf_checkpoint from = {0};
    int code = 0;
    atf_error e = load(cmd, a, &prob, &warm, err);
    if (e) {
        code = fail_alike(cmd, e, err, 1);
        goto done;
    }
    a->set.verbose = !a->quiet && rank() == 0; /* the iteration table on stderr */
    atf_hooks hooks = {.log = atf_cli_log, .warm = warm, .interrupt = atf_cli_interrupt_flag(),
                       .processes = atf_cli_processes(), .precond_file = a->precond_file};
    atf_checkpoint_file sink = {a->checkpoint, ""};
    if (a->checkpoint) {
        hooks.checkpoint = atf_checkpoint_to_file, hooks.checkpoint_ctx = &sink;
        hooks.checkpoint_seconds = a->checkpoint_seconds;
        if (access(a->checkpoint, F_OK) == 0) {
            if ((e = atf_checkpoint_read(a->checkpoint, &from, err))) {
                code = fail_alike(cmd, e, err, 1);
                goto done;
            }
            hooks.resume = &from;
        }
    }
    e = atf_solver_init(prob, &a->set, &hooks, &solver, err);
    if (e) {
        char msg[ATF_ERRLEN + 64];
        snprintf(msg, sizeof msg, "%s: %s", a->problem, err);
        code = fail_alike(cmd, e, msg, 0);
        goto done;
    }
    e = atf_solver_solve(solver, &res, err);
    if (e) { /* a failure, not a status: nothing to write */
        atf_checkpoint_explain(&sink, hooks.resume != NULL, e, err);
        code = fail_alike(cmd, e, err, 0);
        goto done;
    }
    if (rank() != 0) { /* rank 0 writes and reports; every rank has the same result */
        code = atf_cli_status_exit_code(res->info.status);
        goto done;
    }
    if (res->info.status == ATF_STATUS_NUMERICAL_ERROR) { /* exit 1 writes nothing: an existing
                                                       output stays */
        char msg[ATF_ERRLEN + 4200];
        snprintf(msg, sizeof msg, "%s: %s; %s not written", a->problem, err, a->output);
        fprintf(atf_cli_stderr(), "atf %s: %s\n", cmd, msg);
        code = atf_cli_status_exit_code(res->info.status);
        goto done;
    }
    char werr[ATF_ERRLEN] = "";
    atf_result_record_run(res, &a->set, a->penalty, a->command);
    atf_error we = atf_result_write(a->output, res, werr);
    if (we) {
        code = atf_cli_fail(cmd, we, werr);
        goto done;
    }
    if (res->info.status != ATF_STATUS_INTERRUPTED &&
        res->info.status != ATF_STATUS_MAX_ITERATIONS) {
        if (a->checkpoint) /* RESULT.h5 holds the answer; else the next run goes on */
            remove(a->checkpoint);
        if (a->precond_file)
            remove(a->precond_file);
    }
    if (res->info.status != ATF_STATUS_SOLVED) /* err explains the status */
        fprintf(atf_cli_stderr(), "atf %s: %s: %s\n", cmd, a->problem, err);
    report(a, res);
    code = atf_cli_status_exit_code(res->info.status);
done:
    atf_checkpoint_free(&from);
    atf_result_free(res);
    atf_solver_free(solver);
    atf_result_free(warm);
    atf_problem_free(prob);
    return code;
}

/* The command line as the user typed it: `atf baseline` forwards here with "--method=auto"
 * inserted as argv[1], which is left out. */
static void typed_command(const char *cmd, int argc, char **argv, char *out, size_t len)
{
    if (strcmp(cmd, "baseline") || argc < 2) {
        atf_cli_command_line(argc, argv, out, len);
        return;
    }
    char *saved = argv[1];
    argv[1] = argv[0];
    atf_cli_command_line(argc - 1, argv + 1, out, len);
    argv[1] = saved;
}

int atf_cmd_solve(int argc, char **argv)
{
    const char *cmd = argc > 0 ? argv[0] : "solve";
    if (atf_cli_wants_help(argc, argv)) {
        usage(atf_cli_stdout());
        return 0;
    }
    char err[ATF_ERRLEN] = "";
    char command[ATF_COMMANDLEN];
    typed_command(cmd, argc, argv, command, sizeof command); /* before getopt reorders argv */
    solve_args a;
    atf_error e = parse_args(argc, argv, &a, err);
    if (e)
        return atf_cli_fail_alike(cmd, e, err);
    memcpy(a.command, command, sizeof a.command);
    return run(cmd, &a);
}
