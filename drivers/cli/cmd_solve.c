/* cmd_solve.c — `atf solve PROBLEM.h5 -o RESULT.h5 [options]` (SPEC §6).
 *
 * Reads a problem, applies the command-line overrides, runs the solver (iteration table on
 * stderr unless --quiet), writes the result atomically whenever one exists (also for statuses
 * infeasible, max_iterations and interrupted), prints a short summary on stderr and, with
 * --json, one JSON line on stdout. Exit codes: 0 solved, 2 bad input or usage, 3 infeasible,
 * 4 iteration limit, 130 interrupted by SIGINT, 1 other failures.
 *
 * `atf baseline` forwards here with argv[0] = "baseline" and `--method baseline`, so both
 * commands share one code path and name themselves correctly in messages. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atf_cli.h"
#include "atf_solver.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: atf solve PROBLEM.h5 -o RESULT.h5 [--penalty SPEC]\n"
            "                 [--structure layer|diagonal|full] [--method admm|lp]\n"
            "                 [--tol EPS] [--eps-abs E] [--max-iter N] [--rho R] [--alpha A]\n"
            "                 [--no-reduce] [--no-adaptive-rho] [--warm RESULT.h5]\n"
            "                 [--log-every K] [--quiet] [--json]\n"
            "\n"
            "Solve problem (16): minimise the sum over blocks of the spectral penalty\n"
            "omega~(singular values of B) subject to the tangent-feature constraints.\n"
            "\n"
            "  -o RESULT.h5        output file (written atomically; also for statuses\n"
            "                      infeasible, max_iterations and interrupted)\n"
            "  --penalty SPEC      override every block's penalty (see atf penalty --help)\n"
            "  --structure S       layer: blocks as in the file (default); diagonal: every\n"
            "                      parameter its own 1x1 block; full: one vector block\n"
            "  --method M          admm (default) or lp (exact GLPK; diagonal + nuclear only)\n"
            "  --tol EPS           relative tolerance eps_rel (default 1e-6)\n"
            "  --eps-abs E         absolute tolerance eps_abs (default 1e-8)\n"
            "  --max-iter N        iteration limit (default 10000)\n"
            "  --rho R             multiplier of the data-scaled initial rho (default 1)\n"
            "  --alpha A           over-relaxation in (0, 2) (default 1.6)\n"
            "  --no-reduce         no exact subspace reduction of factored blocks\n"
            "  --no-adaptive-rho   keep rho fixed\n"
            "  --warm RESULT.h5    start from an earlier result of the same problem (checked\n"
            "                      by fingerprint: a result of another problem is exit 2)\n"
            "  --log-every K       iteration table row every K iterations (default 50)\n"
            "  --quiet             no iteration table and no summary on stderr\n"
            "  --json              one JSON line on stdout (status, objective, residuals, ...)\n"
            "\n"
            "exit codes: 0 solved, 2 bad input or usage, 3 infeasible, 4 iteration limit,\n"
            "            130 interrupted (Ctrl-C; the last iterate is written)\n");
}

typedef struct {
    const char *problem, *output, *penalty, *warm;
    atf_settings set;
    int quiet, json, help;
    char command[ATF_COMMANDLEN]; /* recorded in the result */
} solve_args;

static atf_error parse_structure(const char *v, atf_global_structure *s, char *err)
{
    if (v && !strcmp(v, "layer"))
        *s = ATF_GLOBAL_LAYER;
    else if (v && !strcmp(v, "diagonal"))
        *s = ATF_GLOBAL_DIAGONAL;
    else if (v && !strcmp(v, "full"))
        *s = ATF_GLOBAL_FULL;
    else {
        atf_errorf(err, "--structure: '%s' is not one of layer, diagonal, full", v ? v : "");
        return ATF_E_USAGE;
    }
    return ATF_OK;
}

static atf_error parse_method(const char *v, atf_method *m, char *err)
{
    if (v && !strcmp(v, "admm"))
        *m = ATF_METHOD_ADMM;
    else if (v && !strcmp(v, "lp"))
        *m = ATF_METHOD_LP;
    else if (v && !strcmp(v, "baseline"))
        *m = ATF_METHOD_BASELINE;
    else {
        atf_errorf(err, "--method: '%s' is not one of admm, lp", v ? v : "");
        return ATF_E_USAGE;
    }
    return ATF_OK;
}

static atf_error need_value(const char *opt, const char *val, char *err)
{
    if (val)
        return ATF_OK;
    atf_errorf(err, "%s: missing value", opt);
    return ATF_E_USAGE;
}

/* One option with its value (if it takes one); *used tells whether the value was consumed. */
static atf_error parse_option(const char *opt, const char *val, solve_args *a, int *used,
                              char *err)
{
    atf_settings *s = &a->set;
    long n = 0;
    atf_error e = ATF_OK;
    *used = 1;
    if (!strcmp(opt, "-o") || !strcmp(opt, "--output")) {
        if (!(e = need_value(opt, val, err)))
            a->output = val;
    } else if (!strcmp(opt, "--penalty")) {
        if (!(e = need_value(opt, val, err)))
            a->penalty = val;
    } else if (!strcmp(opt, "--warm")) {
        if (!(e = need_value(opt, val, err)))
            a->warm = val;
    } else if (!strcmp(opt, "--structure")) {
        e = parse_structure(val, &s->structure, err);
    } else if (!strcmp(opt, "--method")) {
        e = parse_method(val, &s->method, err);
    } else if (!strcmp(opt, "--tol")) {
        e = atf_cli_double(opt, val, &s->eps_rel, err);
    } else if (!strcmp(opt, "--eps-abs")) {
        e = atf_cli_double(opt, val, &s->eps_abs, err);
    } else if (!strcmp(opt, "--rho")) {
        e = atf_cli_double(opt, val, &s->rho, err);
    } else if (!strcmp(opt, "--alpha")) {
        e = atf_cli_double(opt, val, &s->alpha, err);
    } else if (!strcmp(opt, "--max-iter")) {
        if (!(e = atf_cli_int(opt, val, 1, 1000000000L, &n, err)))
            s->max_iter = (int)n;
    } else if (!strcmp(opt, "--log-every")) {
        if (!(e = atf_cli_int(opt, val, 1, 1000000000L, &n, err)))
            s->log_every = (int)n;
    } else {
        *used = 0;
        if (!strcmp(opt, "--no-reduce"))
            s->reduce = 0;
        else if (!strcmp(opt, "--no-adaptive-rho"))
            s->adaptive_rho = 0;
        else if (!strcmp(opt, "--quiet") || !strcmp(opt, "-q"))
            a->quiet = 1;
        else if (!strcmp(opt, "--json"))
            a->json = 1;
        else if (!strcmp(opt, "--help") || !strcmp(opt, "-h"))
            a->help = 1;
        else {
            atf_errorf(err, "unknown option '%s' (atf solve --help)", opt);
            e = ATF_E_USAGE;
        }
    }
    return e;
}

static atf_error parse_args(int argc, char **argv, solve_args *a, char *err)
{
    memset(a, 0, sizeof *a);
    a->set = atf_settings_default();
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (arg[0] != '-' || arg[1] == '\0') {
            if (a->problem) {
                atf_errorf(err, "unexpected argument '%s' (one problem file)", arg);
                return ATF_E_USAGE;
            }
            a->problem = arg;
            continue;
        }
        char opt[64];
        const char *eq = strchr(arg, '='), *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (eq && !strncmp(arg, "--", 2) && (size_t)(eq - arg) < sizeof opt) { /* --opt=value */
            snprintf(opt, sizeof opt, "%.*s", (int)(eq - arg), arg);
            val = eq + 1;
        } else {
            snprintf(opt, sizeof opt, "%s", arg);
            eq = NULL;
        }
        int used = 0;
        atf_error e = parse_option(opt, val, a, &used, err);
        if (e)
            return e;
        if (used && !eq)
            i++;
        else if (!used && eq) {
            atf_errorf(err, "%s takes no value", opt);
            return ATF_E_USAGE;
        }
    }
    if (a->help)
        return ATF_OK;
    if (!a->problem) {
        atf_errorf(err, "missing PROBLEM.h5 (atf %s --help)", argv[0]);
        return ATF_E_USAGE;
    }
    if (!a->output) {
        atf_errorf(err, "missing -o RESULT.h5 (atf %s --help)", argv[0]);
        return ATF_E_USAGE;
    }
    return ATF_OK;
}

static void report(const solve_args *a, const atf_result *res)
{
    if (!a->quiet) {
        char text[1024];
        atf_result_summary(res, text, sizeof text);
        fprintf(stderr, "%s: %s", a->output, text);
    }
    if (a->json) {
        atf_cli_print_json(atf_result_json_object(res));
    }
}

/* Problem (with the --penalty override) and warm start, each checked; errors name the file. */
static atf_error load(const char *cmd, const solve_args *a, atf_problem **prob,
                      atf_result **warm, char *err)
{
    atf_error e = atf_cli_check_output(a->output, err);
    if (!e)
        e = atf_problem_read(a->problem, prob, err);
    if (!e && !a->warm)
        atf_cli_note_problem(cmd, *prob, a->problem);
    if (!e && a->penalty)
        e = atf_problem_set_penalty(*prob, a->penalty, err);
    if (!e && a->warm)
        e = atf_result_read(a->warm, warm, err);
    if (!e && a->warm)
        e = atf_cli_check_pair(cmd, *warm, a->warm, *prob, a->problem, err);
    if (!e && a->warm)
        e = atf_result_check(*warm, *prob, a->warm, a->problem, err);
    return e;
}

static int run(const char *cmd, solve_args *a)
{
    char err[ATF_ERRLEN] = "";
    atf_problem *prob = NULL;
    atf_result *warm = NULL, *res = NULL;
    atf_solver *solver = NULL;
    int code = 0;
    atf_error e = load(cmd, a, &prob, &warm, err);
    if (e) {
        code = atf_cli_fail(cmd, e, err);
        goto done;
    }
    a->set.warm = warm;
    a->set.verbose = !a->quiet;
    a->set.log = stderr;
    a->set.interrupt = atf_cli_interrupt_flag();
    e = atf_solver_init(prob, &a->set, &solver, err);
    if (e) {
        char msg[ATF_ERRLEN + 64];
        snprintf(msg, sizeof msg, "%s: %s", a->problem, err);
        code = atf_cli_fail(cmd, e, msg);
        goto done;
    }
    atf_error status = atf_solver_solve(solver, &res, err);
    if (!res) { /* a failure, not a status: nothing to write */
        code = atf_cli_fail(cmd, status, err);
        goto done;
    }
    if (status == ATF_E_NUMERICAL) { /* exit 1 writes nothing: an existing output stays */
        char msg[ATF_ERRLEN + 4200];
        snprintf(msg, sizeof msg, "%s: %s; %s not written", a->problem, err, a->output);
        code = atf_cli_fail(cmd, status, msg);
        goto done;
    }
    char werr[ATF_ERRLEN] = "";
    atf_result_record_run(res, &a->set, a->penalty, a->command);
    atf_error we = atf_result_write(a->output, res, werr);
    if (we) {
        code = atf_cli_fail(cmd, we, werr);
        goto done;
    }
    if (status)
        fprintf(stderr, "atf %s: %s: %s\n", cmd, a->problem, err);
    report(a, res);
    code = atf_error_exit_code(status);
done:
    atf_result_free(res);
    atf_solver_free(solver);
    atf_result_free(warm);
    atf_problem_free(prob);
    return code;
}

int atf_cmd_solve(int argc, char **argv)
{
    const char *cmd = argc > 0 ? argv[0] : "solve";
    char err[ATF_ERRLEN] = "";
    solve_args a;
    atf_error e = parse_args(argc, argv, &a, err);
    if (e)
        return atf_cli_fail(cmd, e, err);
    if (a.help) {
        usage(stdout);
        return 0;
    }
    /* `atf baseline` appends "--method baseline" to what the user typed: record the latter */
    int typed = !strcmp(cmd, "baseline") && argc >= 2 ? argc - 2 : argc;
    atf_cli_command_line(typed, argv, a.command, sizeof a.command);
    return run(cmd, &a);
}
