/* cmd_methods.c — `atf methods [--json]`: the solver's method table (docs/cli.md): what each
 * method solves and may do, read from the library (atf_method_info_of), so the list can never
 * differ from what `atf solve --method` and the library take. */
#include <stdio.h>

#include "atf_cli.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: atf methods [--json]\n"
            "\n"
            "The solver's methods, one row of its method table each: what a method solves\n"
            "(interpolation, the penalized losses squared and xent, or the NTK baseline) and\n"
            "whether it resumes checkpoints, runs over processes (always, or where the Gram\n"
            "can be spread), works matrix-free, solves linear systems with A A^T (the\n"
            "backend a result names as linsys) and takes a warm start. --method auto picks\n"
            "one of them (docs/solver.md, \"Methods\"). --json prints the table as one line.\n");
}

static const struct option options[] = {
    {"json", no_argument, NULL, 'j'},
    ATF_CLI_HELP_OPTION,
    {NULL, 0, NULL, 0}};

static const char *procs_name(atf_procs_use p)
{
    return p == ATF_PROCS_ALWAYS ? "always" : p == ATF_PROCS_GRAM ? "gram" : "no";
}

static const char *warm_name(atf_warm_use w)
{
    return w == ATF_WARM_TAKEN ? "taken" : w == ATF_WARM_REFUSED ? "refused" : "ignored";
}

static json_t *row_json(const atf_method_info *in)
{
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(in->name));
    json_object_set_new(o, "summary", json_string(in->summary));
    json_object_set_new(o, "interpolation", json_boolean(in->interpolation));
    json_object_set_new(o, "penalized", json_boolean(in->penalized));
    json_object_set_new(o, "baseline", json_boolean(in->baseline));
    json_object_set_new(o, "resumable", json_boolean(in->resumable));
    json_object_set_new(o, "matrix_free", json_boolean(in->matrix_free));
    json_object_set_new(o, "linsys", json_boolean(in->linsys));
    json_object_set_new(o, "warm", json_string(warm_name(in->warm)));
    json_object_set_new(o, "processes", json_string(procs_name(in->processes)));
    return o;
}

static void print_table(void)
{
    fprintf(atf_cli_stdout(), "%-9s %-14s %-8s %-10s %-12s %-7s %s\n", "method", "solves", "resumes", "processes",
           "matrix-free", "linsys", "warm start");
    for (int m = 0; m < atf_method_count(); m++) {
        const atf_method_info *in = atf_method_info_of((atf_method)m);
        fprintf(atf_cli_stdout(), "%-9s %-14s %-8s %-10s %-12s %-7s %s\n", in->name, atf_cli_method_solves(in),
               in->resumable ? "yes" : "no", procs_name(in->processes),
               in->matrix_free ? "yes" : "no", in->linsys ? "yes" : "no", warm_name(in->warm));
    }
    fprintf(atf_cli_stdout(), "\n");
    atf_cli_method_help(atf_cli_stdout(), 0, NULL);
}

int atf_cmd_methods(int argc, char **argv)
{
    if (atf_cli_wants_help(argc, argv)) {
        usage(atf_cli_stdout());
        return 0;
    }
    char err[ATF_ERRLEN] = "";
    int json = 0, c;
    atf_error e = ATF_OK;
    atf_cli_getopt_begin();
    while (!e && (c = atf_cli_getopt("methods", argc, argv, "h", options, err)) != -1)
        if (c == 'j')
            json = 1;
        else if (c != 'h')
            e = ATF_E_USAGE; /* ATF_CLI_BAD_OPTION: err holds the message */
    if (!e)
        e = atf_cli_positionals("methods", argc, argv, 0, 0, "", NULL, NULL, err);
    if (e)
        return atf_cli_fail("methods", e, err);
    if (!json) {
        print_table();
        return 0;
    }
    json_t *rows = json_array();
    for (int m = 0; m < atf_method_count(); m++)
        json_array_append_new(rows, row_json(atf_method_info_of((atf_method)m)));
    atf_cli_print_json(rows);
    return 0;
}
