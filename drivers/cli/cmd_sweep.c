/* cmd_sweep.c — `atf sweep PROBLEM.h5`: penalty ablations on one problem file (the sweep of
 * the experiments library, atf_sweep_run), filled from the command line here. Under mpirun the
 * ranks (atf_cli_exp_io) share the run: the library deals the structures' warm-start chains,
 * rank 0 writes the table and reports, and a rank's own failure ends the job (atf_cli_fail). */
#include <stdio.h>
#include <string.h>

#include "cmd_experiments.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: atf sweep PROBLEM.h5 [--out DIR] [--families LIST] [--p LIST] [--scales LIST]\n"
            "                 [--structures LIST] [--penalty SPEC]... [--loss SPEC] [--tol EPS]\n"
            "                 [--max-iter N]\n"
            "                 [--auto-fraction Q] [--alignment-max M] [--center] [--quiet] [--json]\n"
            "\n"
            "Solve problem (16) on PROBLEM.h5 for every penalty family x parameter x structure and\n"
            "record one row per run in DIR/sweep.csv and DIR/sweep.jsonl (default DIR out/sweep):\n"
            "status, objective, iterations, seconds, residuals, stationarity, test error (when the\n"
            "file has a test split), effective rank of every block (singular values holding 90%%\n"
            "of the energy) and the alignment of the adapted kernel with the label kernel r r^T\n"
            "(and with K0). The first row is the NTK min-norm baseline. Re-running the same\n"
            "command skips finished rows (resume after Ctrl-C) and goes on with the rows an\n"
            "uninterrupted run would have written, bit for bit: each structure's runs are a chain\n"
            "of warm starts, whose last result waits in DIR/warm-I.h5 until the chain is done.\n"
            "Also writes DIR/sweep.{svg,png}\n"
            "(test error, or total effective rank without test data, against the scale).\n"
            "\n"
            "  --families LIST    comma-separated of sq, abs, pow, zsq, logsq, nuclear, fixed,\n"
            "                     balanced (default sq,abs,pow,zsq)\n"
            "  --p LIST           exponents for pow (default 0.5,1.5,3)\n"
            "  --scales LIST      scale values gamma, or 'auto' (default 1e-4,1e-3,1e-2,1e-1,1)\n"
            "  --structures LIST  of layer, diagonal, full (default layer,full)\n"
            "  --penalty SPEC     an extra penalty run as given (repeatable; ';'-free spec)\n"
            "  --loss SPEC        interpolate (default), squared:lambda=L or\n"
            "                     xent:lambda=L (method auto; rows add loss, loss_value and\n"
            "                     penalty_value; see atf solve --help)\n"
            "  --tol EPS          relative tolerance (default 1e-6)\n"
            "  --max-iter N       iteration limit per run (default 5000)\n"
            "  --auto-fraction Q  scale=auto means sqrt(gamma) = Q x the largest singular value\n"
            "                     of the baseline solution (default 0.3)\n"
            "  --alignment-max M  compute kernel alignments only when M <= this (default 4000)\n"
            "  --center           drop the initial function: r = y, predictions A vec B\n"
            "                     (needs /f0 in the file; f0 := 0 on both splits)\n");
}

enum {
    OPT_OUT = ATF_CLI_OPT_FIRST, OPT_FAMILIES, OPT_P, OPT_SCALES, OPT_STRUCTURES, OPT_PENALTY,
    OPT_TOL, OPT_MAX_ITER, OPT_AUTO_FRACTION, OPT_ALIGNMENT_MAX, OPT_CENTER, OPT_QUIET, OPT_JSON,
    OPT_LOSS
};

/* The library names a list by its item ("families: ..."); the command's message names the
 * flag ("--families: ..."). */
static atf_error as_flag(atf_error e, char *err)
{
    if (e) {
        char inner[ATF_ERRLEN];
        snprintf(inner, sizeof inner, "%s", err);
        atf_errorf(err, "--%.*s", ATF_ERRLEN - 8, inner);
    }
    return e;
}

static atf_error sweep_option(int c, const char *val, atf_sweep_config *cfg, int *quiet,
                              char *err)
{
    long v;
    atf_error e = ATF_OK;
    switch (c) {
    case OPT_OUT: snprintf(cfg->out, sizeof cfg->out, "%s", val); break;
    case OPT_FAMILIES: return as_flag(atf_sweep_set_families(cfg, val, err), err);
    case OPT_P: return as_flag(atf_sweep_set_ps(cfg, val, err), err);
    case OPT_SCALES: return as_flag(atf_sweep_set_scales(cfg, val, err), err);
    case OPT_STRUCTURES:
        return as_flag(atf_sweep_set_structures(cfg, val, err), err);
    case OPT_PENALTY:
        if (cfg->nextra >= ATF_SWEEP_MAXLIST) {
            atf_errorf(err, "--penalty: at most %d", ATF_SWEEP_MAXLIST);
            return ATF_E_USAGE;
        }
        cfg->extra[cfg->nextra++] = val;
        break;
    case OPT_LOSS: return as_flag(atf_loss_parse(val, &cfg->loss, err) ? ATF_E_USAGE : ATF_OK, err);
    case OPT_TOL: e = atf_cli_double("--tol", val, &cfg->tol, err); break;
    case OPT_MAX_ITER:
        e = atf_cli_int("--max-iter", val, 1, 100000000, &v, err);
        cfg->max_iter = (int)v;
        break;
    case OPT_AUTO_FRACTION: e = atf_cli_double("--auto-fraction", val, &cfg->auto_fraction, err); break;
    case OPT_ALIGNMENT_MAX:
        e = atf_cli_int("--alignment-max", val, 0, 1000000, &v, err);
        cfg->align_max = (int)v;
        break;
    case OPT_CENTER: cfg->center = 1; break;
    case OPT_QUIET: *quiet = 1; break;
    case OPT_JSON: cfg->io.json = 1; break;
    case 'h': break;
    default: e = ATF_E_USAGE; /* err from atf_cli_getopt */
    }
    return e;
}

static atf_error parse_sweep(int argc, char **argv, atf_sweep_config *cfg, int *quiet, char *err)
{
    static const struct option options[] = {
        {"out", required_argument, NULL, OPT_OUT},
        {"families", required_argument, NULL, OPT_FAMILIES},
        {"p", required_argument, NULL, OPT_P}, {"scales", required_argument, NULL, OPT_SCALES},
        {"structures", required_argument, NULL, OPT_STRUCTURES},
        {"penalty", required_argument, NULL, OPT_PENALTY}, {"tol", required_argument, NULL, OPT_TOL},
        {"loss", required_argument, NULL, OPT_LOSS},
        {"max-iter", required_argument, NULL, OPT_MAX_ITER},
        {"auto-fraction", required_argument, NULL, OPT_AUTO_FRACTION},
        {"alignment-max", required_argument, NULL, OPT_ALIGNMENT_MAX},
        {"center", no_argument, NULL, OPT_CENTER}, {"quiet", no_argument, NULL, OPT_QUIET},
        {"json", no_argument, NULL, OPT_JSON}, ATF_CLI_HELP_OPTION, {NULL, 0, NULL, 0}};
    const char *problem = NULL;
    atf_sweep_defaults(cfg);
    atf_cli_getopt_begin();
    int c;
    atf_error e = ATF_OK;
    while (!e && (c = atf_cli_getopt("sweep", argc, argv, "h", options, err)) != -1)
        e = sweep_option(c, optarg, cfg, quiet, err);
    if (!e)
        e = atf_cli_positionals("sweep", argc, argv, 1, 1, "PROBLEM.h5", &problem, NULL, err);
    if (!e && snprintf(cfg->problem, sizeof cfg->problem, "%s", problem) >=
                  (int)sizeof cfg->problem) {
        atf_errorf(err, "%s: path too long", problem);
        e = ATF_E_USAGE;
    }
    return e;
}

int atf_cmd_sweep(int argc, char **argv)
{
    if (atf_cli_wants_help(argc, argv)) {
        usage(atf_cli_stdout());
        return 0;
    }
    char err[ATF_ERRLEN] = "";
    static atf_sweep_config cfg; /* large */
    int quiet = 0;
    atf_exp_outcome o = {ATF_STATUS_SOLVED, 0, 0};
    atf_error e = parse_sweep(argc, argv, &cfg, &quiet, err);
    if (!e)
        e = atf_sweep_check(&cfg, err);
    if (!e)
        e = atf_cli_output_dir(cfg.out, err);
    if (!e) {
        cfg.io = atf_cli_exp_io(cfg.io.json, quiet);
        e = atf_sweep_run(&cfg, &o, err);
    }
    return atf_cli_exp_exit("sweep", e, &o, err);
}
