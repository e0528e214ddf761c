/* cmd_experiment.c — `atf experiment NAME`: dispatch to the paper's experiments. */
#include <stdio.h>
#include <string.h>

#include "atf_cli.h"
#include "experiment.h"

typedef struct {
    const char *name;
    atf_cmd_fn fn;
    const char *summary;
} experiment;

static const experiment experiments[] = {
    {"alignment", atf_experiment_alignment,
     "paper Fig. 1/3: kernel alignment of trained networks vs problem (16)"},
    {"penalties", atf_experiment_penalties,
     "paper Fig. 2: effective penalties and their prox maps"},
    {"samples", atf_experiment_samples,
     "test error vs n: NTK min-norm, problem (16) and the trained network"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: atf experiment NAME [OPTIONS]   (atf experiment NAME --help)\n\n");
    for (size_t i = 0; i < sizeof experiments / sizeof *experiments; i++)
        fprintf(out, "  %-10s %s\n", experiments[i].name, experiments[i].summary);
    fprintf(out, "\nEach writes CSV/JSON tables and SVG+PNG figures into its --out directory\n"
                 "and prints progress on stderr; --json prints a one-line summary on stdout.\n");
}

int atf_cmd_experiment(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof experiments / sizeof *experiments; i++)
        if (!strcmp(argv[1], experiments[i].name))
            return experiments[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "atf experiment: unknown experiment '%s' (atf experiment --help)\n", argv[1]);
    return 2;
}
