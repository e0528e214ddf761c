/* cmd_demo.c — `atf demo`: the built-in example behind `bash scripts/demo.sh`.
 *
 * The sample-complexity experiment at a small size on the synthetic multi-index task (no
 * download): NTK min-norm regression on the tangent features of a random ReLU network against
 * problem (16) on the same features, and the trained network, at a few n. A table on stdout and
 * a figure in OUT (default out/demo). Deterministic for its seeds; resumable like the
 * experiment (re-running reuses the rows already in OUT/samples.csv). */
#include <stdio.h>
#include <string.h>

#include "atf_cli.h"
#include "experiment.h"

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

int atf_cmd_demo(int argc, char **argv)
{
    static atf_samples_config cfg;
    atf_samples_defaults(&cfg);
    int ns[] = {125, 250, 500, 1000, 2000};
    cfg.nn = 5;
    memcpy(cfg.ns, ns, sizeof ns);
    cfg.nseeds = 3;
    cfg.data.n_test = 1000;
    cfg.train.epochs = 100;
    snprintf(cfg.out, sizeof cfg.out, "out/demo");
    cfg.title = "atf demo: synthetic multi-index task (d = 16, r = 2), NTK vs problem (16) vs MLP";
    char err[ATF_ERRLEN] = "";
    for (int i = 1; i < argc; i++) {
        const char *opt = argv[i];
        if (!strcmp(opt, "--help") || !strcmp(opt, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(opt, "--json")) {
            cfg.json = 1;
        } else if (!strcmp(opt, "--no-mlp")) {
            cfg.train_mlp = 0;
        } else if (!strcmp(opt, "--out") && i + 1 < argc) {
            snprintf(cfg.out, sizeof cfg.out, "%s", argv[++i]);
        } else if (!strcmp(opt, "--seeds") && i + 1 < argc) {
            long k;
            if (atf_cli_int(opt, argv[++i], 1, ATF_SAMPLES_MAXSEEDS, &k, err))
                return atf_cli_fail("demo", ATF_E_USAGE, err);
            cfg.nseeds = (int)k;
            for (int s = 0; s < cfg.nseeds; s++)
                cfg.seeds[s] = (uint64_t)s + 1;
        } else if (!strcmp(opt, "--ns") && i + 1 < argc) {
            long v[ATF_SAMPLES_MAXN];
            int n;
            if (atf_parse_list(opt, argv[++i], 2, 1 << 24, v, ATF_SAMPLES_MAXN, &n, err))
                return atf_cli_fail("demo", ATF_E_USAGE, err);
            for (int k = 0; k < n; k++)
                cfg.ns[k] = (int)v[k];
            cfg.nn = n;
        } else if (!strcmp(opt, "--epochs") && i + 1 < argc) {
            long k;
            if (atf_cli_int(opt, argv[++i], 1, 1000000, &k, err))
                return atf_cli_fail("demo", ATF_E_USAGE, err);
            cfg.train.epochs = (int)k;
        } else {
            atf_errorf(err, "unknown or incomplete option '%s' (atf demo --help)", opt);
            return atf_cli_fail("demo", ATF_E_USAGE, err);
        }
    }
    return atf_samples_run(&cfg, "demo");
}
