/* cmd_baseline.c — `atf baseline PROBLEM.h5 -o RESULT.h5 [--method gram|cg|auto]
 * [--max-iter N] [--no-reduce] [--checkpoint FILE [--checkpoint-every S]] [--json] [--quiet]`
 * (docs/cli.md).
 *
 * The NTK min-norm interpolant B = Aᵀ(AAᵀ)⁻¹r (Theorem 1), with its objective under the blocks'
 * own penalties, its certificates and factors, by the M × M Gram (gram: method baseline) or by
 * preconditioned CG (cg), or whichever fits (auto, the default: the chooser). It shares
 * the code path of `atf solve`: this file only checks the options a baseline accepts and
 * forwards (cmd_solve.c reads --method gram|cg|auto for the command baseline). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf_cli.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: atf baseline PROBLEM.h5 -o RESULT.h5 [--method gram|cg|auto]\n"
            "                    [--max-iter N] [--no-reduce] [--precond P]\n"
            "                    [--memory-fraction F] [--gram-max-rows N]\n"
            "                    [--checkpoint FILE [--checkpoint-every S]] [--json] [--quiet]\n"
            "\n"
            "NTK min-norm interpolant (Theorem 1): B = A^T (A A^T)^-1 r, the projection of 0\n"
            "onto the constraints, reported with its objective under the blocks' penalties,\n"
            "constraint residual, stationarity certificate and Theorem 2 factors.\n"
            "\n"
            "  -o RESULT.h5   output file (written atomically)\n"
            "  --method M     gram: factorise the M x M Gram A A^T (exact; memory 8.7 bytes\n"
            "                 x M^2); cg: preconditioned conjugate gradients on A A^T, never\n"
            "                 formed (relative constraint residual 1e-8); auto (default):\n"
            "                 gram when it fits --memory-fraction of the available memory\n"
            "                 and M <= --gram-max-rows, else cg (the reason is the\n"
            "                 result's method note)\n"
            "  --precond P    cg's preconditioner: auto (default: nystrom-block), none,\n"
            "                 jacobi, nystrom, nystrom-block or gram32 (the whole A A^T in\n"
            "                 single precision: 2 M^2 bytes)\n"
            "  --memory-fraction F  the fraction of the available memory the Gram may take,\n"
            "                 in (0, 1] (default 0.75)\n"
            "  --gram-max-rows N  auto factorises the Gram up to N rows, above it cg is\n"
            "                 faster (default 10000; 0: no bound)\n"
            "  --max-iter N   cg: step limit (default 10000; exit 4 when reached)\n"
            "  --no-reduce    no exact subspace reduction of factored blocks (needed for a\n"
            "                 rank-deficient factor over several processes)\n"
            "  --checkpoint FILE  cg: keep the solve's state in FILE every S seconds\n"
            "                 (--checkpoint-every, default 600); when FILE exists the solve\n"
            "                 goes on from it, to the answer the uninterrupted solve gives\n"
            "                 (bit for bit). Kept after Ctrl-C and the step limit, else\n"
            "                 removed once RESULT.h5 is written. The Gram keeps none (gram\n"
            "                 with an existing FILE is exit 2). One process only\n"
            "  --json         one JSON line on stdout\n"
            "  --quiet        no progress or summary on stderr\n"
            "\n"
            "exit codes: 0 solved, 2 bad input or usage, 3 infeasible (least-squares point\n"
            "            written), 4 step limit (cg; last iterate written), 130 interrupted\n");
}

enum { OPT_JSON = ATF_CLI_OPT_FIRST, OPT_METHOD, OPT_MAX_ITER, OPT_NO_REDUCE, OPT_CHECKPOINT,
       OPT_CHECKPOINT_EVERY, OPT_PRECOND, OPT_MEMORY_FRACTION, OPT_GRAM_MAX_ROWS };

/* The options a baseline accepts (a subset of atf solve's). */
static const struct option options[] = {
    {"output", required_argument, NULL, 'o'},
    {"json", no_argument, NULL, OPT_JSON},
    {"method", required_argument, NULL, OPT_METHOD},
    {"max-iter", required_argument, NULL, OPT_MAX_ITER},
    {"no-reduce", no_argument, NULL, OPT_NO_REDUCE},
    {"checkpoint", required_argument, NULL, OPT_CHECKPOINT},
    {"checkpoint-every", required_argument, NULL, OPT_CHECKPOINT_EVERY},
    {"precond", required_argument, NULL, OPT_PRECOND},
    {"memory-fraction", required_argument, NULL, OPT_MEMORY_FRACTION},
    {"gram-max-rows", required_argument, NULL, OPT_GRAM_MAX_ROWS},
    {"quiet", no_argument, NULL, 'q'},
    ATF_CLI_HELP_OPTION,
    {NULL, 0, NULL, 0}};

/* Refuse an option a baseline does not take (getopt reorders argv: give it a copy). */
static atf_error check_options(int argc, char **argv, char *err)
{
    atf_cli_getopt_begin();
    for (int c; (c = atf_cli_getopt("baseline", argc, argv, "o:qh", options, err)) != -1;)
        if (c == ATF_CLI_BAD_OPTION)
            return ATF_E_USAGE;
    return ATF_OK;
}

int atf_cmd_baseline(int argc, char **argv)
{
    if (atf_cli_wants_help(argc, argv)) {
        usage(atf_cli_stdout());
        return 0;
    }
    char err[ATF_ERRLEN] = "";
    char **args = malloc((size_t)(argc + 2) * sizeof *args);
    if (!args)
        return atf_cli_fail("baseline", ATF_E_NOMEM, "out of memory");
    memcpy(args, argv, (size_t)argc * sizeof *args);
    atf_error e = check_options(argc, args, err);
    if (e) {
        free(args);
        return atf_cli_fail_alike("baseline", e, err);
    }
    /* atf solve --method=auto (cmd_solve.c reads gram|cg|auto for the command baseline; a
     * --method the user typed comes later and wins) with the arguments as typed (atf solve
     * records them without the inserted option) */
    args[0] = "baseline";
    args[1] = "--method=auto";
    memcpy(args + 2, argv + 1, (size_t)(argc - 1) * sizeof *args);
    args[argc + 1] = NULL;
    int code = atf_cmd_solve(argc + 1, args);
    free(args);
    return code;
}
