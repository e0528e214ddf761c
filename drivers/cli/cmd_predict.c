/* cmd_predict.c — `atf predict`: test predictions and errors of a solution (any method) or of
 * a network. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "atf_cli.h"
#include "atf_result.h"
#include "atf_solver.h"
#include "atf_tangent.h"

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
        "argmax agreement for several) and, with labels, the class error.\n"
        "\n"
        "  -o PRED.h5    write /train/f, /train/y, /test/f, /test/y and the metrics\n"
        "  --json        one JSON line on stdout\n");
}

static json_t *split_json(const atf_split_eval *s)
{
    json_t *o = json_object();
    json_object_set_new(o, "samples", json_integer(s->N));
    json_object_set_new(o, "mse", atf_json_number(s->mse));
    json_object_set_new(o, "error", atf_json_number(s->error));
    json_object_set_new(o, "class_error", atf_json_number(s->class_error));
    return o;
}

static void print_split_text(const char *name, const atf_split_eval *s)
{
    printf("%-5s  %6d  %12.6g  %8.4f", name, s->N, s->mse, s->error);
    if (isfinite(s->class_error))
        printf("  %11.4f", s->class_error);
    printf("\n");
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
    printf("predict: %s\nsplit  samples           mse     error  class_error\n", what);
    print_split_text("train", &pr->train);
    if (pr->test.N > 0)
        print_split_text("test", &pr->test);
    else
        printf("(no /test split: training fit only)\n");
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
    snprintf(what, sizeof what, "%s result", res ? res->method : "");
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

int atf_cmd_predict(int argc, char **argv)
{
    atf_data_options d = atf_data_options_default();
    atf_net_options n = atf_net_options_default();
    const char *pos[2] = {NULL, NULL}, *out = NULL;
    int npos = 0, json = 0, data_given = 0;
    char err[ATF_ERRLEN] = "";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        int used = 0;
        data_given |= !strcmp(a, "--data");
        if (atf_tangent_arg(argc, argv, &i, &d, &n, &used, err))
            return atf_cli_fail("predict", ATF_E_USAGE, err);
        if (used)
            continue;
        if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "-o")) {
            if (i + 1 >= argc)
                return atf_cli_fail("predict", ATF_E_USAGE, "-o needs a value");
            out = argv[++i];
        } else if (a[0] != '-' && npos < 2) {
            pos[npos++] = a;
        } else {
            atf_errorf(err, "unknown option or argument '%s' (atf predict --help)", a);
            return atf_cli_fail("predict", ATF_E_USAGE, err);
        }
    }
    atf_error oe = out ? atf_cli_check_output(out, err) : ATF_OK;
    if (oe)
        return atf_cli_fail("predict", oe, err);
    if (n.mlp_path[0]) {
        if (npos || !data_given)
            return atf_cli_fail("predict", ATF_E_USAGE,
                                "--mlp needs --data and takes no PROBLEM/RESULT files");
        return predict_mlp(&d, &n, out, json);
    }
    if (npos != 2)
        return atf_cli_fail("predict", ATF_E_USAGE,
                            "expected PROBLEM.h5 RESULT.h5 (or --mlp MLP.h5 --data SRC)");
    return predict_result(pos[0], pos[1], out, json);
}
