/* cmd_penalty.c — `atf penalty SPEC`: tabulate a penalty as CSV (docs/cli.md).
 *
 * Columns: v, ω̃(v), z (argmin of ω̃), prox_{tω̃}(v), and the factor split s1, s2 of z. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "atf_cli.h"
#include "atf_penalty.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: atf penalty SPEC [--from A] [--to B] [--num K] [--log] [--t T]\n"
            "\n"
            "Print CSV with header v,omega_tilde,z,prox,s1,s2 for K values of v from A to B\n"
            "(defaults 0, 5, 101; --log spaces them geometrically and needs A > 0).\n"
            "omega_tilde is the effective penalty (eq. 12), z its argmin, prox the proximal\n"
            "map of t*omega_tilde (step T, default 1), s1*s2 = z the joint-penalty split.\n"
            "\n"
            "SPEC: sq | abs | pow:p=P | zsq | logsq | fixed | nuclear | balanced, each with\n"
            "      optional scale=G; two terms joined by '+' form the joint penalty (eq. 11).\n"
            "      balanced is G*(z^2 - 1 - 2 ln z); balanced+balanced is the split that\n"
            "      gradient flow on M1 W M2 from (I, 0, I) keeps (docs/math.md).\n"
            "      Examples: sq   pow:p=1.5,scale=0.1   sq+abs   zsq:scale=1e-4\n");
}

typedef struct {
    const char *spec;
    double from, to, t;
    long num;
    int geometric;
} penalty_args;

enum { OPT_FROM = ATF_CLI_OPT_FIRST, OPT_TO, OPT_NUM, OPT_LOG, OPT_T };

static const struct option options[] = {
    {"from", required_argument, NULL, OPT_FROM},
    {"to", required_argument, NULL, OPT_TO},
    {"num", required_argument, NULL, OPT_NUM},
    {"log", no_argument, NULL, OPT_LOG},
    {"t", required_argument, NULL, OPT_T},
    ATF_CLI_HELP_OPTION,
    {NULL, 0, NULL, 0}};

static atf_error apply_option(int c, const char *val, penalty_args *a, char *err)
{
    switch (c) {
    case OPT_FROM: return atf_cli_double("--from", val, &a->from, err);
    case OPT_TO: return atf_cli_double("--to", val, &a->to, err);
    case OPT_T: return atf_cli_double("--t", val, &a->t, err);
    case OPT_NUM: return atf_cli_int("--num", val, 1, 100000000, &a->num, err);
    case OPT_LOG: a->geometric = 1; return ATF_OK;
    case 'h': return ATF_OK; /* atf_cli_wants_help has seen it */
    default: return ATF_E_USAGE; /* ATF_CLI_BAD_OPTION: err holds the message */
    }
}

static atf_error parse_args(int argc, char **argv, penalty_args *a, char *err)
{
    *a = (penalty_args){NULL, 0.0, 5.0, 1.0, 101, 0};
    atf_error e = ATF_OK;
    int c;
    atf_cli_getopt_begin();
    while (!e && (c = atf_cli_getopt("penalty", argc, argv, "h", options, err)) != -1)
        e = apply_option(c, optarg, a, err);
    if (!e)
        e = atf_cli_positionals("penalty", argc, argv, 1, 1, "SPEC", &a->spec, NULL, err);
    if (e)
        return e;
    if (a->from < 0 || a->to < a->from) {
        atf_errorf(err, "--from/--to: need 0 <= A <= B, got %g, %g", a->from, a->to);
        return ATF_E_USAGE;
    }
    if (a->geometric && a->from <= 0) {
        atf_errorf(err, "--log needs --from > 0");
        return ATF_E_USAGE;
    }
    if (a->t <= 0) {
        atf_errorf(err, "--t: the prox step must be positive, got %g", a->t);
        return ATF_E_USAGE;
    }
    return ATF_OK;
}

static double grid_point(const penalty_args *a, long j)
{
    if (a->num == 1 || j == 0)
        return a->from;
    if (j == a->num - 1)
        return a->to;
    double f = (double)j / (double)(a->num - 1);
    if (a->geometric) /* in logarithms: to/from overflows for --from 1e-300 --to 1e300 */
        return exp(log(a->from) + f * (log(a->to) - log(a->from)));
    return a->from + f * (a->to - a->from);
}

int atf_cmd_penalty(int argc, char **argv)
{
    if (atf_cli_wants_help(argc, argv)) {
        usage(atf_cli_stdout());
        return 0;
    }
    char err[ATF_ERRLEN] = "";
    penalty_args a;
    atf_error e = parse_args(argc, argv, &a, err);
    if (e)
        return atf_cli_fail("penalty", e, err);
    atf_penalty pen;
    e = atf_penalty_parse(a.spec, &pen, err);
    if (e)
        return atf_cli_fail("penalty", e, err);

    fprintf(atf_cli_stdout(), "v,omega_tilde,z,prox,s1,s2\n");
    for (long j = 0; j < a.num; j++) {
        double v = grid_point(&a, j), z = 1.0, s1 = 1.0, s2 = 1.0;
        double value = atf_penalty_value(&pen, v, &z);
        double prox = atf_penalty_prox(&pen, v, a.t, NULL);
        atf_penalty_factors(&pen, v, &s1, NULL, &s2);
        fprintf(atf_cli_stdout(), "%.17g,%.17g,%.17g,%.17g,%.17g,%.17g\n", v, value, z, prox, s1, s2);
    }
    return 0;
}
