/* main.c — the `atf` command: dispatch to a subcommand. */
#include <stdio.h>
#include <string.h>

#include "atf_cli.h"
#include "experiment.h"

typedef struct {
    const char *name;
    atf_cmd_fn fn;
    const char *summary;
} atf_command;

static const atf_command commands[] = {
    {"solve", atf_cmd_solve, "solve problem (16) for a problem file (ADMM or exact LP)"},
    {"baseline", atf_cmd_baseline, "NTK min-norm interpolant (Theorem 1) of a problem file"},
    {"penalty", atf_cmd_penalty, "tabulate a penalty: effective penalty, argmin, prox, factors"},
    {"features", atf_cmd_features, "tangent-feature problem of an MLP on a data set"},
    {"train", atf_cmd_train, "train an MLP by SGD with momentum and save it"},
    {"predict", atf_cmd_predict, "test predictions and errors of a solution or baseline"},
    {"kernel", atf_cmd_kernel, "NTK, adapted and label kernels and their alignment"},
    {"experiment", atf_cmd_experiment, "the paper's experiments: alignment, penalties, samples"},
    {"sweep", atf_cmd_sweep, "penalty x scale x structure ablations on a problem file"},
    {"demo", atf_cmd_demo, "built-in example: adaptive vs NTK min-norm (no download)"},
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
                 "            4 iteration limit (result written), 130 interrupted (last iterate written)\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("atf %s\n", ATF_VERSION);
        return 0;
    }
    for (size_t i = 0; i < ncommands; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "atf: unknown command '%s' (atf --help lists the commands)\n", argv[1]);
    return 2;
}
