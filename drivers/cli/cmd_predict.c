/* cmd_predict.c — `atf predict`: test predictions and errors of a solution (any method) or of
 * a network. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "atf_cli.h"
#include "cli_tangent.h"
#include "atf_result.h"
#include "atf_solver.h"
#include "atf_features.h"
#include "atf_report.h"

static void usage(FILE *out)
{
    fprintf(out,
        "usage: atf predict PROBLEM.h5 RESULT.h5 [--json] [-o PRED.h5]\n"
        "       atf predict --mlp MLP.h5 --data SRC [data options] [--json] [-o PRED.h5]\n"
        "\n"
        "First form: predictions f = f0 + sum_l A_l vec B_l of a result of `atf solve` or\n"
        "`atf baseline` on the problem's /test split (and its training rows, as a check).\n"
        "The result must come from this problem: a result whose problem_fingerprint differs\n"
        "from the problem's fingerprint is refused (exit 2; docs/formats.md, Provenance).\n"
        "Second form: a network's outputs on a task built with the same data options as\n"
        "`atf features` / `atf train` (--classes, --n-train, --n-test, --data-seed,\n"
        "--standardize, --targets, --teacher-seed).\n"
        "\n"
        "Reports the mean squared error, the error rate (sign agreement with y for one output,\n"
        "argmax agreement for several) and, with labels, the class error and (for two or more\n"
        "outputs) the mean softmax cross-entropy of the predictions as logits (xent).\n"
        "\n"
        "  -o PRED.h5    write /train/f, /train/y, /test/f, /test/y and the metrics\n"
        "  --json        one JSON line on stdout\n");
}

/* Mean softmax cross-entropy of the predictions (as logits) against the labels: NaN without
 * labels, with one output, or with a label outside 0 … C−1. */
static double split_xent(const atf_split_eval *s)
{
    if (!s->labels || s->C < 2 || s->N <= 0)
        return NAN;
    for (int i = 0; i < s->N; i++)
        if (s->labels[i] < 0 || s->labels[i] >= s->C)
            return NAN;
    return atf_loss_mean_xent(s->N, s->C, s->f, s->labels);
}

static json_t *split_json(const atf_split_eval *s)
{
    json_t *o = json_object();
    json_object_set_new(o, "samples", json_integer(s->N));
    json_object_set_new(o, "mse", atf_json_number(s->mse));
    json_object_set_new(o, "error", atf_json_number(s->error));
    json_object_set_new(o, "class_error", atf_json_number(s->class_error));
    json_object_set_new(o, "xent", atf_json_number(split_xent(s)));
    return o;
}

static void print_split_text(const char *name, const atf_split_eval *s)
{
    fprintf(atf_cli_stdout(), "%-5s  %6d  %12.6g  %8.4f", name, s->N, s->mse, s->error);
    if (isfinite(s->class_error))
        fprintf(atf_cli_stdout(), "  %11.4f", s->class_error);
    double xent = split_xent(s);
    if (isfinite(xent))
        fprintf(atf_cli_stdout(), "  %9.4f", xent);
    fprintf(atf_cli_stdout(), "\n");
}

static void report(const atf_predictions *pr, const char *what, int json)
{
    if (json) {
        json_t *o = json_object();
        json_object_set_new(o, "status", json_string("ok"));
        json_object_set_new(o, "source", atf_json_text(what));
        json_object_set_new(o, "train", split_json(&pr->train));
        if (pr->test.N > 0)
            json_object_set_new(o, "test", split_json(&pr->test));
        atf_cli_print_json(o);
        return;
    }
    fprintf(atf_cli_stdout(), "predict: %s\nsplit  samples           mse     error  class_error%s\n", what,
           isfinite(split_xent(&pr->train)) ? "       xent" : "");
    print_split_text("train", &pr->train);
    if (pr->test.N > 0)
        print_split_text("test", &pr->test);
    else
        fprintf(atf_cli_stdout(), "(no /test split: training fit only)\n");
}

static int finish(atf_predictions *pr, const char *what, const char *out, int json)
{
    char err[ATF_ERRLEN] = "";
    atf_error e = out ? atf_predictions_write(out, pr, err) : ATF_OK;
    if (!e)
        report(pr, what, json);
    atf_predictions_free(pr);
    return e ? atf_cli_fail("predict", e, err) : 0;
}

static int predict_result(const char *prob_path, const char *res_path, const char *out, int json)
{
    char err[ATF_ERRLEN] = "";
    atf_problem *p = NULL;
    atf_result *res = NULL;
    atf_predictions pr;
    atf_error e = atf_problem_read(prob_path, &p, err);
    if (!e)
        e = atf_result_read(res_path, &res, err);
    if (!e)
        e = atf_cli_check_pair("predict", res, res_path, p, prob_path, err);
    if (!e)
        e = atf_predict_result(p, prob_path, res, res_path, &pr, err);
    char what[64];
    snprintf(what, sizeof what, "%s result", res ? res->info.method : "");
    atf_problem_free(p);
    atf_result_free(res);
    if (e)
        return atf_cli_fail("predict", e, err);
    return finish(&pr, what, out, json);
}

static int predict_mlp(const atf_data_options *d, const atf_net_options *n, const char *out,
                       int json)
{
    char err[ATF_ERRLEN] = "";
    atf_arch arch;
    atf_task task;
    atf_mlp *m = NULL;
    atf_predictions pr;
    atf_error e = atf_net_arch(n, &arch, err);
    if (e)
        return atf_cli_fail("predict", e, err);
    if ((e = atf_task_load(d, &arch, &task, err)))
        return atf_cli_fail("predict", e, err);
    e = atf_net_build(n, &task, &m, err);
    if (!e)
        e = atf_predict_mlp(m, &task, &pr, err);
    atf_mlp_free(m);
    atf_task_free(&task);
    if (e)
        return atf_cli_fail("predict", e, err);
    return finish(&pr, "network", out, json);
}

enum { OPT_JSON = ATF_CLI_OPT_FIRST };

static const struct option options[] = {
    ATF_CLI_DATA_OPTIONS,
    ATF_CLI_NET_OPTIONS,
    {"output", required_argument, NULL, 'o'},
    {"json", no_argument, NULL, OPT_JSON},
    ATF_CLI_HELP_OPTION,
    {NULL, 0, NULL, 0}};

typedef struct {
    atf_data_options data;
    atf_net_options net;
    const char *pos[2], *out;
    int npos, json, data_given;
} predict_args;

static atf_error apply_option(int c, const char *val, predict_args *a, char *err)
{
    int used = 0;
    atf_error e = ATF_OK;
    switch (c) {
    case 'o': a->out = val; break;
    case OPT_JSON: a->json = 1; break;
    case 'h': break; /* atf_cli_wants_help has seen it */
    default:
        a->data_given |= c == ATF_CLI_OPT_DATA;
        e = atf_cli_tangent_option(c, val, &a->data, &a->net, &used, err);
        if (!e && !used) /* ATF_CLI_BAD_OPTION: err holds the message */
            e = ATF_E_USAGE;
    }
    return e;
}

static atf_error parse_args(int argc, char **argv, predict_args *a, char *err)
{
    atf_error e = ATF_OK;
    int c;
    atf_cli_getopt_begin();
    while (!e && (c = atf_cli_getopt("predict", argc, argv, "o:h", options, err)) != -1)
        e = apply_option(c, optarg, a, err);
    if (!e)
        e = atf_cli_positionals("predict", argc, argv, 0, 2, "PROBLEM.h5 RESULT.h5", a->pos,
                                &a->npos, err);
    if (e)
        return e;
    if (a->net.mlp_path[0] && (a->npos || !a->data_given)) {
        atf_errorf(err, "--mlp needs --data and takes no PROBLEM/RESULT files");
        return ATF_E_USAGE;
    }
    if (!a->net.mlp_path[0] && a->npos != 2) {
        atf_errorf(err, "expected PROBLEM.h5 RESULT.h5 (or --mlp MLP.h5 --data SRC)");
        return ATF_E_USAGE;
    }
    return atf_cli_add_data_dirs(&a->data, err);
}

int atf_cmd_predict(int argc, char **argv)
{
    if (atf_cli_wants_help(argc, argv)) {
        usage(atf_cli_stdout());
        return 0;
    }
    predict_args a = {atf_data_options_default(), atf_net_options_default(), {NULL, NULL}, NULL,
                      0, 0, 0};
    char err[ATF_ERRLEN] = "";
    atf_error e = parse_args(argc, argv, &a, err);
    if (!e && a.out)
        e = atf_cli_check_output(a.out, err);
    if (e)
        return atf_cli_fail("predict", e, err);
    if (a.net.mlp_path[0])
        return predict_mlp(&a.data, &a.net, a.out, a.json);
    return predict_result(a.pos[0], a.pos[1], a.out, a.json);
}
