/* cmd_train.c — `atf train`: minibatch SGD with momentum and a cosine schedule, then save. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "atf_cli.h"
#include "cli_tangent.h"
#include "atf_solver.h"
#include "atf_features.h"

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

enum {
    OPT_EPOCHS = ATF_CLI_OPT_FIRST,
    OPT_BATCH,
    OPT_LR,
    OPT_MOMENTUM,
    OPT_SHUFFLE_SEED,
    OPT_CHECKPOINT_EVERY,
    OPT_SAVE_INIT,
    OPT_QUIET,
    OPT_JSON
};

static const struct option options[] = {
    ATF_CLI_DATA_OPTIONS,
    ATF_CLI_NET_OPTIONS,
    {"output", required_argument, NULL, 'o'},
    {"epochs", required_argument, NULL, OPT_EPOCHS},
    {"batch", required_argument, NULL, OPT_BATCH},
    {"lr", required_argument, NULL, OPT_LR},
    {"momentum", required_argument, NULL, OPT_MOMENTUM},
    {"shuffle-seed", required_argument, NULL, OPT_SHUFFLE_SEED},
    {"checkpoint-every", required_argument, NULL, OPT_CHECKPOINT_EVERY},
    {"save-init", required_argument, NULL, OPT_SAVE_INIT},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"json", no_argument, NULL, OPT_JSON},
    ATF_CLI_HELP_OPTION,
    {NULL, 0, NULL, 0}};

/* --lr LR > 0 and --momentum MU in [0, 1). */
static atf_error parse_rate(const char *opt, const char *v, double lo, int lo_open, double hi,
                            double *out, char *err)
{
    double x;
    if (atf_cli_double(opt, v, &x, err))
        return ATF_E_USAGE;
    if ((lo_open ? x <= lo : x < lo) || x >= hi) {
        atf_errorf(err, "%s: %s out of range (lr > 0, 0 <= momentum < 1)", opt, v);
        return ATF_E_USAGE;
    }
    *out = x;
    return ATF_OK;
}

static atf_error parse_count(const char *opt, const char *v, long hi, int *out, char *err)
{
    long n;
    atf_error e = atf_cli_int(opt, v, 1, hi, &n, err);
    if (!e)
        *out = (int)n;
    return e;
}

static atf_error apply_option(int c, const char *val, train_args *a, char *err)
{
    atf_train_settings *t = &a->train;
    long n;
    int used = 0;
    atf_error e = ATF_OK;
    switch (c) {
    case 'o': a->out = val; break;
    case OPT_SAVE_INIT: a->save_init = val; break;
    case OPT_QUIET: a->quiet = 1; break;
    case OPT_JSON: a->json = 1; break;
    case OPT_EPOCHS: return parse_count("--epochs", val, 1000000, &t->epochs, err);
    case OPT_BATCH: return parse_count("--batch", val, 1L << 30, &t->batch, err);
    case OPT_LR: return parse_rate("--lr", val, 0.0, 1, INFINITY, &t->lr, err);
    case OPT_MOMENTUM: return parse_rate("--momentum", val, 0.0, 0, 1.0, &t->momentum, err);
    case OPT_SHUFFLE_SEED:
        if (!(e = atf_cli_int("--shuffle-seed", val, 0, 0x7fffffffL, &n, err)))
            t->seed = (uint64_t)n;
        return e;
    case OPT_CHECKPOINT_EVERY:
        return atf_cli_int("--checkpoint-every", val, 1, 1000000, &a->checkpoint_every, err);
    case 'h': break; /* atf_cli_wants_help has seen it */
    case ATF_CLI_OPT_INIT: /* --init MLP0.h5: the starting network, as --mlp; he|torch below */
        if (strcmp(val, "he") && strcmp(val, "torch"))
            return atf_net_option(&a->net, "mlp", val, err);
        /* fall through */
    default:
        e = atf_cli_tangent_option(c, val, &a->data, &a->net, &used, err);
        if (!e && !used) /* ATF_CLI_BAD_OPTION: err holds the message */
            e = ATF_E_USAGE;
    }
    return e;
}

static atf_error parse_args(int argc, char **argv, train_args *a, char *err)
{
    atf_error e = ATF_OK;
    int c;
    atf_cli_getopt_begin();
    while (!e && (c = atf_cli_getopt("train", argc, argv, "o:h", options, err)) != -1)
        e = apply_option(c, optarg, a, err);
    if (!e)
        e = atf_cli_positionals("train", argc, argv, 0, 0, "", NULL, NULL, err);
    if (!e)
        e = atf_cli_add_data_dirs(&a->data, err);
    if (!e && !a->out) {
        atf_errorf(err, "missing -o MLP.h5");
        e = ATF_E_USAGE;
    }
    return e;
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
    /* training stopped early by Ctrl-C returns ATF_OK with the model as it is */
    int interrupted = !te && *a->train.interrupt;
    e = te;
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
    return interrupted ? atf_cli_status_exit_code(ATF_STATUS_INTERRUPTED) : 0;
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
    atf_error e = parse_args(argc, argv, &a, err);
    if (e)
        return atf_cli_fail("train", e, err);
    return run(&a);
}
