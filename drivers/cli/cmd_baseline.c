/* cmd_baseline.c — `atf baseline PROBLEM.h5 -o RESULT.h5 [--json] [--quiet]` (SPEC §6).
 *
 * The NTK min-norm interpolant B = Aᵀ(AAᵀ)⁻¹r (Theorem 1), with its objective under the blocks'
 * own penalties, its certificates and factors. It shares the code path of `atf solve`
 * (method baseline): this file only checks the options a baseline accepts and forwards. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf_cli.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: atf baseline PROBLEM.h5 -o RESULT.h5 [--json] [--quiet]\n"
            "\n"
            "NTK min-norm interpolant (Theorem 1): B = A^T (A A^T)^-1 r, the projection of 0\n"
            "onto the constraints, reported with its objective under the blocks' penalties,\n"
            "constraint residual, stationarity certificate and Theorem 2 factors.\n"
            "\n"
            "  -o RESULT.h5   output file (written atomically)\n"
            "  --json         one JSON line on stdout\n"
            "  --quiet        no summary on stderr\n"
            "\n"
            "exit codes: 0 solved, 2 bad input or usage, 3 infeasible (least-squares point\n"
            "            written)\n");
}

static int takes_value(const char *arg)
{
    return !strcmp(arg, "-o") || !strcmp(arg, "--output");
}

static int allowed(const char *arg)
{
    static const char *const flags[] = {"--json", "--quiet", "-q"};
    if (takes_value(arg) || !strncmp(arg, "--output=", 9))
        return 1;
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        if (!strcmp(arg, flags[i]))
            return 1;
    return 0;
}

int atf_cmd_baseline(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        }
        if (argv[i][0] == '-' && argv[i][1] != '\0' && !allowed(argv[i])) {
            char msg[256];
            snprintf(msg, sizeof msg, "unknown option '%.100s' (atf baseline --help)", argv[i]);
            return atf_cli_fail("baseline", ATF_E_USAGE, msg);
        }
        if (takes_value(argv[i]))
            i++;
    }
    char **args = malloc((size_t)(argc + 3) * sizeof *args);
    if (!args)
        return atf_cli_fail("baseline", ATF_E_NOMEM, "out of memory");
    args[0] = "baseline";
    for (int i = 1; i < argc; i++)
        args[i] = argv[i];
    args[argc] = "--method";
    args[argc + 1] = "baseline";
    args[argc + 2] = NULL;
    int code = atf_cmd_solve(argc + 2, args);
    free(args);
    return code;
}
