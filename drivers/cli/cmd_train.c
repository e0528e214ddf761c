/* cmd_train.c — `atf train`: minibatch SGD with momentum and a cosine schedule, then save. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "atf_cli.h"
#include "atf_solver.h"
#include "atf_tangent.h"

static void usage(FILE *out)
{
    fprintf(out,
        "usage: atf train --data SRC -o MLP.h5 [--init MLP0.h5 | --widths W --seed S --bias\n"
        "                 --param P] [--epochs E] [--batch B] [--lr LR] [--momentum MU]\n"
        "                 [--shuffle-seed S] [--checkpoint-every K] [--save-init MLP0.h5]\n"
        "                 [data options as for atf features] [--quiet] [--json]\n"
        "\n"
        "Trains an MLP on the squared loss mean ||f(x) - y||^2 / C by minibatch SGD with\n"
        "momentum and a cosine learning-rate schedule (paper B.1: lr 0.1, momentum 0.9) and\n"
        "saves it atomically. Bit-reproducible for given seeds on a given machine.\n"
        "\n"
        "  --init MLP0.h5      start from this network (else --widths/--seed/--bias/--param/\n"
        "                      --init he|torch as for atf features; default widths D,128,128,C;\n"
        "                      with He-normal weights lr 0.1 can diverge: use --init torch,\n"
        "                      PyTorch's default initialisation, or a smaller --lr)\n"
        "  --epochs E          default 100       --batch B     default 32\n"
        "  --lr LR             default 0.1       --momentum MU default 0.9\n"
        "  --shuffle-seed S    minibatch order (default 1)\n"
        "  --checkpoint-every K  also write MLP.h5 every K epochs\n"
        "  --save-init MLP0.h5 save the initial network (for atf kernel --mlp0)\n"
        "  --quiet             no progress lines on stderr\n"
        "  --json              final report as one JSON line on stdout\n"
        "\n"
        "Ctrl-C stops after the current minibatch and saves the weights (exit 130).\n");
}

typedef struct {
    atf_data_options data;
    atf_net_options net;
    atf_train_settings train;
    const char *out, *save_init;
    long checkpoint_every;
    int quiet, json;
} train_args;

typedef struct {
    const train_args *args;
    int last_printed;
    double last_time;
} progress_ctx;

static atf_error on_epoch(const atf_train_progress *p, const atf_mlp *m, void *ctx_)
{
    progress_ctx *ctx = ctx_;
    const train_args *a = ctx->args;
    int every = p->epochs >= 20 ? p->epochs / 20 : 1;
    if (!a->quiet && (p->epoch % every == 0 || p->epoch == p->epochs || p->epoch == 1 ||
                      p->seconds - ctx->last_time > 5.0)) {
        fprintf(stderr, "epoch %4d/%d  loss %.6e  lr %.4g  elapsed %.1fs  eta %.1fs\n", p->epoch,
                p->epochs, p->loss, p->lr, p->seconds, p->eta);
        ctx->last_time = p->seconds;
    }
    if (a->checkpoint_every > 0 && p->epoch % a->checkpoint_every == 0 && p->epoch < p->epochs) {
        char err[ATF_ERRLEN] = "";
        atf_error e = atf_mlp_write(a->out, m, err);
        if (e) {
            fprintf(stderr, "atf train: checkpoint: %s\n", err);
            return e;
        }
    }
    return ATF_OK;
}

static int parse_number(const char *opt, const char *v, train_args *a, char *err)
{
    long n;
    double x;
    if (!strcmp(opt, "--epochs"))
        return atf_cli_int(opt, v, 1, 1000000, &n, err) ? -1 : (a->train.epochs = (int)n, 0);
    if (!strcmp(opt, "--batch"))
        return atf_cli_int(opt, v, 1, 1 << 30, &n, err) ? -1 : (a->train.batch = (int)n, 0);
    if (!strcmp(opt, "--shuffle-seed"))
        return atf_cli_int(opt, v, 0, 0x7fffffffL, &n, err) ? -1 : (a->train.seed = (uint64_t)n, 0);
    if (!strcmp(opt, "--checkpoint-every"))
        return atf_cli_int(opt, v, 1, 1000000, &a->checkpoint_every, err) ? -1 : 0;
    if (atf_cli_double(opt, v, &x, err))
        return -1;
    if (!strcmp(opt, "--lr") && x > 0.0)
        a->train.lr = x;
    else if (!strcmp(opt, "--momentum") && x >= 0.0 && x < 1.0)
        a->train.momentum = x;
    else {
        atf_errorf(err, "%s: %s out of range (lr > 0, 0 <= momentum < 1)", opt, v);
        return -1;
    }
    return 0;
}

static int parse_args(int argc, char **argv, train_args *a, char *err)
{
    static const char *numeric[] = {"--epochs", "--batch", "--lr", "--momentum",
                                    "--shuffle-seed", "--checkpoint-every"};
    for (int i = 1; i < argc; i++) {
        const char *opt = argv[i];
        int used = 0;
        int is_file = i + 1 < argc && strcmp(argv[i + 1], "he") && strcmp(argv[i + 1], "torch");
        if (!strcmp(opt, "--init") && is_file) { /* the starting network, as --mlp */
            if (atf_net_option(&a->net, "mlp", argv[++i], &used, err))
                return -1;
            continue;
        }
        if (atf_tangent_arg(argc, argv, &i, &a->data, &a->net, &used, err))
            return -1;
        if (used)
            continue;
        int is_numeric = 0;
        for (size_t k = 0; k < sizeof numeric / sizeof numeric[0]; k++)
            is_numeric |= !strcmp(opt, numeric[k]);
        if (is_numeric || !strcmp(opt, "-o") || !strcmp(opt, "--save-init")) {
            if (i + 1 >= argc) {
                atf_errorf(err, "%s needs a value", opt);
                return -1;
            }
            const char *v = argv[++i];
            if (!strcmp(opt, "-o"))
                a->out = v;
            else if (!strcmp(opt, "--save-init"))
                a->save_init = v;
            else if (parse_number(opt, v, a, err))
                return -1;
        } else if (!strcmp(opt, "--quiet")) {
            a->quiet = 1;
        } else if (!strcmp(opt, "--json")) {
            a->json = 1;
        } else {
            atf_errorf(err, "unknown option or argument '%s' (atf train --help)", opt);
            return -1;
        }
    }
    if (!a->out) {
        atf_errorf(err, "missing -o MLP.h5");
        return -1;
    }
    return 0;
}

static void report(const train_args *a, double loss, const atf_predictions *pr, int interrupted)
{
    if (a->json) {
        json_t *o = json_object();
        json_object_set_new(o, "status", json_string(interrupted ? "interrupted" : "ok"));
        json_object_set_new(o, "output", atf_json_text(a->out));
        json_object_set_new(o, "epochs", json_integer(a->train.epochs));
        json_object_set_new(o, "train_loss", atf_json_number(loss));
        if (pr->test.N > 0) {
            json_object_set_new(o, "test_mse", atf_json_number(pr->test.mse));
            json_object_set_new(o, "test_error", atf_json_number(pr->test.error));
            if (isfinite(pr->test.class_error))
                json_object_set_new(o, "test_class_error", json_real(pr->test.class_error));
        }
        json_object_set_new(o, "train_error", atf_json_number(pr->train.error));
        atf_cli_print_json(o);
        return;
    }
    printf("train: %s: final train loss %.6e, train error %.4f", a->out, loss, pr->train.error);
    if (pr->test.N > 0) {
        printf(", test mse %.6g, test error %.4f", pr->test.mse, pr->test.error);
        if (isfinite(pr->test.class_error))
            printf(", test class error %.4f", pr->test.class_error);
    }
    printf("%s\n", interrupted ? " (interrupted)" : "");
}

static int run(train_args *a)
{
    char err[ATF_ERRLEN] = "";
    atf_arch arch;
    atf_task task;
    atf_mlp *m = NULL;
    int teacher = a->data.targets == ATF_TARGETS_TEACHER ||
                  a->data.targets == ATF_TARGETS_TEACHER_SIGN;
    if (teacher && !a->net.mlp_path[0] && a->net.seed == a->data.teacher_seed)
        return atf_cli_fail("train", ATF_E_USAGE,
                            "--seed equals --teacher-seed: the teacher must be an independent "
                            "network");
    atf_error e = atf_cli_check_output(a->out, err);
    if (!e && a->save_init)
        e = atf_cli_check_output(a->save_init, err);
    if (!e)
        e = atf_net_arch(&a->net, &arch, err);
    if (e)
        return atf_cli_fail("train", e, err);
    if ((e = atf_task_load(&a->data, &arch, &task, err)))
        return atf_cli_fail("train", e, err);
    e = atf_net_build(&a->net, &task, &m, err);
    if (!e && a->save_init)
        e = atf_mlp_write(a->save_init, m, err);
    progress_ctx ctx = {a, 0, 0.0};
    a->train.progress = on_epoch;
    a->train.ctx = &ctx;
    a->train.interrupt = atf_cli_interrupt_flag();
    double loss = NAN;
    atf_error te = e ? e : atf_mlp_train(m, &task.train, &a->train, &loss, err);
    int interrupted = te == ATF_E_INTERRUPTED;
    e = interrupted ? ATF_OK : te;
    if (!e)
        e = atf_mlp_write(a->out, m, err);
    atf_predictions pr;
    if (!e)
        e = atf_predict_mlp(m, &task, &pr, err);
    if (!e) {
        if (interrupted)
            loss = pr.train.mse;
        report(a, loss, &pr, interrupted);
        atf_predictions_free(&pr);
    }
    atf_mlp_free(m);
    atf_task_free(&task);
    if (e)
        return atf_cli_fail("train", e, err);
    return interrupted ? atf_error_exit_code(ATF_E_INTERRUPTED) : 0;
}

int atf_cmd_train(int argc, char **argv)
{
    if (atf_cli_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    train_args a;
    memset(&a, 0, sizeof a);
    a.data = atf_data_options_default();
    a.net = atf_net_options_default();
    a.train = atf_train_default();
    char err[ATF_ERRLEN] = "";
    if (parse_args(argc, argv, &a, err))
        return atf_cli_fail("train", ATF_E_USAGE, err);
    return run(&a);
}
