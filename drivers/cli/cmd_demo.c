/* cmd_demo.c — `atf demo`: the built-in example behind `bash scripts/demo.sh`.
 *
 * The samples experiment of the experiments library at its demo size (atf_demo_defaults) on
 * the synthetic multi-index task (no download): NTK min-norm regression on the tangent
 * features of a random ReLU network against problem (16) on the same features, and the trained
 * network, at a few n. A table on stdout and a figure in OUT (default out/demo). Deterministic
 * for its seeds; resumable like the experiment (re-running reuses the rows already in
 * OUT/samples.csv). */
#include <stdio.h>
#include <string.h>

#include "cmd_experiments.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: atf demo [--out DIR] [--seeds K] [--ns LIST] [--epochs E] [--no-mlp] [--json]\n"
            "\n"
            "Built-in demo (no download, under a minute on 2 cores): on the synthetic multi-index\n"
            "task (x in R^16, target g(Ux) with U of rank 2), compares NTK min-norm regression on\n"
            "the tangent features of a random 16-128-128-1 ReLU network (fixed features) with\n"
            "problem (16) on the same features (adaptive features, penalty sq:scale=auto) and\n"
            "with the network trained by SGD, at n = 125, 250, 500, 1000, 2000 (3 seeds, 1000\n"
            "test points). Prints a Markdown table of test error and relative test MSE and writes\n"
            "DIR/samples.{svg,png}, DIR/samples_summary.csv and the per-run rows (default DIR\n"
            "out/demo). --ns, --seeds and --epochs change the sizes (e.g. for a quick check).\n"
            "The same experiment with every option: atf experiment samples --help.\n");
}

enum { OPT_OUT = ATF_CLI_OPT_FIRST, OPT_SEEDS, OPT_NS, OPT_EPOCHS, OPT_NO_MLP, OPT_JSON };

static atf_error demo_option(int c, const char *val, atf_samples_config *cfg, char *err)
{
    long k;
    atf_error e = ATF_OK;
    switch (c) {
    case OPT_OUT: snprintf(cfg->out, sizeof cfg->out, "%s", val); break;
    case OPT_SEEDS: return atf_cli_exp_seeds("--seeds", val, 0, cfg, err);
    case OPT_NS: return atf_cli_exp_ns("--ns", val, cfg, err);
    case OPT_EPOCHS:
        e = atf_cli_int("--epochs", val, 1, 1000000, &k, err);
        cfg->train.epochs = (int)k;
        break;
    case OPT_NO_MLP: cfg->train_mlp = 0; break;
    case OPT_JSON: cfg->io.json = 1; break;
    case 'h': break;
    default: e = ATF_E_USAGE; /* err from atf_cli_getopt */
    }
    return e;
}

int atf_cmd_demo(int argc, char **argv)
{
    static const struct option options[] = {
        {"out", required_argument, NULL, OPT_OUT}, {"seeds", required_argument, NULL, OPT_SEEDS},
        {"ns", required_argument, NULL, OPT_NS}, {"epochs", required_argument, NULL, OPT_EPOCHS},
        {"no-mlp", no_argument, NULL, OPT_NO_MLP}, {"json", no_argument, NULL, OPT_JSON},
        ATF_CLI_HELP_OPTION, {NULL, 0, NULL, 0}};
    if (atf_cli_wants_help(argc, argv)) {
        usage(atf_cli_stdout());
        return 0;
    }
    static atf_samples_config cfg; /* large */
    char err[ATF_ERRLEN] = "";
    atf_exp_outcome o = {ATF_STATUS_SOLVED, 0, 0};
    atf_demo_defaults(&cfg);
    atf_cli_getopt_begin();
    int c;
    atf_error e = ATF_OK;
    while (!e && (c = atf_cli_getopt("demo", argc, argv, "h", options, err)) != -1)
        e = demo_option(c, optarg, &cfg, err);
    if (!e)
        e = atf_cli_positionals("demo", argc, argv, 0, 0, "", NULL, NULL, err);
    if (!e)
        e = atf_samples_check(&cfg, err);
    if (!e)
        e = atf_cli_output_dir(cfg.out, err);
    if (!e) {
        cfg.io = atf_cli_exp_io(cfg.io.json, 0);
        e = atf_samples_run(&cfg, &o, err);
    }
    return atf_cli_exp_exit("demo", e, &o, err);
}
