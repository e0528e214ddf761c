/* cmd_train.c — `atf train`: the network, its linearisation or the factorised linearisation
 * trained by SGD or Adam from one θ0 under a labelled protocol (atf_train.h), then saved. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf_cli.h"
#include "cli_tangent.h"
#include "cli_train.h"
#include "atf_solver.h"
#include "atf_features.h"
#include "atf_train.h"
#include "atf_report.h"
#include "atf_experiments.h"

static void usage(FILE *out)
{
    fprintf(out,
        "usage: atf train --data SRC -o OUT.h5 [--model network|linearized|factorized]\n"
        "                 [--init MLP0.h5 | --widths W --seed S --bias B --activation A\n"
        "                 --param P --init he|torch|lecun] [--optimizer sgd|adam] [--lr LR]\n"
        "                 [--lr-schedule cosine|constant] [--loss squared|xent] [--epochs E]\n"
        "                 [--batch B] [--stop best-val|final|test-selected] [--val N]\n"
        "                 [--patience K] [--sampling fixed|resample-each-epoch] [--pool N]\n"
        "                 [data options as for atf features] [--quiet] [--json]\n"
        "\n"
        "Trains one of three models from the same initial network theta0 (docs/tangent.md,\n"
        "\"Training\") and saves it atomically:\n"
        "  network     f(x; theta), every weight and bias trained;\n"
        "  linearized  f(x; theta0) + <grad f(x; theta0), delta> over every weight and bias;\n"
        "  factorized  the linearisation with layer l's change M1 W M2 (bias M2^T b), from\n"
        "              M1 = M2 = I, W = 0, b = 0, every factor trained.\n"
        "OUT.h5 is an MLP file for the network (as before) and a training file (B per layer,\n"
        "factors, diagnostics, history, settings and protocol; docs/formats.md) for the\n"
        "others. Bit-reproducible for given seeds on a given machine.\n"
        "\n"
        "Model and optimiser:\n"
        "  --model M           network (default), linearized or factorized\n"
        "  --init MLP0.h5      start from this network (else --widths/--seed/--bias/\n"
        "                      --activation/--param/--init he|torch|lecun as for atf features;\n"
        "                      lecun: W ~ N(0, 1/fan_in), zero biases; default widths\n"
        "                      D,128,128,C; with He-normal weights lr 0.1 can diverge)\n"
        "  --no-output-m2      factorized: keep the output layer's M2 = I\n"
        "  --optimizer O       sgd (default; PyTorch's momentum) or adam\n"
        "  --lr LR             default 0.1       --momentum MU  sgd, default 0.9\n"
        "  --beta1 B --beta2 B --adam-eps E   adam, defaults 0.9, 0.999, 1e-8\n"
        "  --lr-schedule S     cosine (default) or constant\n"
        "  --loss L            squared (default; mean ||f - y||^2 / C) or xent (softmax\n"
        "                      cross-entropy of the labels; needs 2 or more outputs)\n"
        "  --penalty SPEC      factorized: add mu * sum_l (sum omega1(s(M1)) + sum\n"
        "                      omega2(s(M2)) + ||W||^2), e.g. balanced+balanced (a `fixed`\n"
        "                      side keeps that factor = I); --penalty-weight MU, default 1\n"
        "  --epochs E          default 100       --batch B      default 32\n"
        "  --shuffle-seed S    minibatch order and resampling (default 1)\n"
        "Protocol (every output says which was used):\n"
        "  --stop S            best-val (default): keep the epoch with the lowest validation\n"
        "                      error (loss without labels); final: the last epoch;\n"
        "                      test-selected: the best test epoch (early stopping on the test\n"
        "                      set, as the paper's code; labelled test-selected)\n"
        "  --val N             validation examples, the last N of the training split (default\n"
        "                      n-train/10, at least 1, with best-val; 0 otherwise)\n"
        "  --patience K        stop K epochs after the best one (default 0: never early)\n"
        "  --eval-every K      score the validation and test splits every K epochs and at\n"
        "                      the last (default 1; selection sees only those epochs)\n"
        "  --sampling S        fixed (default): train on the first n-train - val examples;\n"
        "                      resample-each-epoch (the authors' loader): each epoch draws\n"
        "                      n-train - val examples anew from the pool\n"
        "  --resample-each-epoch  the same as --sampling resample-each-epoch\n"
        "  --pool N|all        the training split holds N examples (all: every example the\n"
        "                      test split leaves; default n-train); with resampling, the pool\n"
        "                      drawn from\n"
        "Comparison with problem (16):\n"
        "  --b16-problem P.h5 --b16-result R.h5   the tangent problem of the same theta0 and\n"
        "                      data (atf features --save-mlp) and its solution (atf solve): the\n"
        "                      cosine between B and B_16 per layer and overall, and the sum of\n"
        "                      the effective balanced+balanced penalty of both, in the report\n"
        "Output:\n"
        "  --record FILE       also write the training file (any model)\n"
        "  --checkpoint-every K  network: also write OUT.h5 every K epochs\n"
        "  --save-init MLP0.h5 save the initial network (for atf kernel --mlp0)\n"
        "  --quiet             no progress lines on stderr\n"
        "  --json              final report as one JSON line on stdout\n"
        "\n"
        "Ctrl-C stops after the current minibatch and saves the model (exit 130).\n");
}

typedef struct {
    atf_data_options data;
    atf_net_options net;
    atf_train_settings train;
    atf_model_kind model;
    const char *out, *save_init, *record, *b16_problem, *b16_result;
    char command[4096];
    long checkpoint_every;
    int quiet, json, no_output_m2;
    int n_train_given, pool, val; /* pool 0: n-train, −1: all; val −1: default */
} train_args;

typedef struct {
    const train_args *args;
    atf_progress prog; /* the throttled progress line (progress.c), NULL stream when quiet */
} progress_ctx;

static void append_error(char *buf, size_t len, const char *name, double v)
{
    size_t n = strlen(buf);
    if (isfinite(v) && n < len)
        snprintf(buf + n, len - n, "  %s %.4f", name, v);
}

/* Under mpirun every rank trains the same model on its share of each minibatch (docs/tangent.md,
 * "Training over processes"); rank 0 alone shows progress, writes and reports. */
static int rank(void)
{
    const atf_exp_ranks *rk = atf_cli_ranks();
    return rk ? rk->rank : 0;
}

/* Every epoch updates the progress line; progress.c decides what is written. */
static atf_error on_epoch(const atf_train_progress *p, const atf_model *m, void *ctx_)
{
    progress_ctx *ctx = ctx_;
    const train_args *a = ctx->args;
    if (ctx->prog.to) {
        char what[200];
        snprintf(what, sizeof what, "epoch %4d/%d  loss %.6e  lr %.4g", p->epoch, p->epochs,
                 p->loss, p->lr);
        append_error(what, sizeof what, "val err", p->val_error);
        append_error(what, sizeof what, "test err", p->test_error);
        if (a->train.stopping != ATF_STOP_FINAL)
            snprintf(what + strlen(what), sizeof what - strlen(what), "  best %d",
                     p->best_epoch);
        atf_progress_set_done(&ctx->prog, p->epoch);
        atf_progress_show(&ctx->prog, what);
    }
    if (a->checkpoint_every > 0 && p->epoch % a->checkpoint_every == 0 && p->epoch < p->epochs) {
        char err[ATF_ERRLEN] = "";
        int tell;
        /* under ranks rank 0 writes, and every rank leaves training alike if that failed */
        atf_error e = rank() == 0 ? atf_mlp_write(a->out, m->net, err) : ATF_OK;
        if ((e = atf_cli_ranks_agree(e, &tell))) {
            atf_progress_break(&ctx->prog);
            if (tell)
                fprintf(atf_cli_stderr(), "atf train: checkpoint: %s\n", err);
            return e;
        }
    }
    return ATF_OK;
}

enum {
    OPT_CHECKPOINT_EVERY = ATF_CLI_OPT_FIRST,
    OPT_SAVE_INIT,
    OPT_QUIET,
    OPT_JSON,
    OPT_MODEL,
    OPT_NO_OUTPUT_M2,
    OPT_PENALTY,
    OPT_PENALTY_WEIGHT,
    OPT_RECORD,
    OPT_B16_PROBLEM,
    OPT_B16_RESULT
};

static const struct option options[] = {
    ATF_CLI_DATA_OPTIONS,
    ATF_CLI_NET_OPTIONS,
    ATF_CLI_TRAIN_OPTIONS,
    {"loss", required_argument, NULL, ATF_CLI_OPT_TRAIN_LOSS},
    {"output", required_argument, NULL, 'o'},
    {"checkpoint-every", required_argument, NULL, OPT_CHECKPOINT_EVERY},
    {"save-init", required_argument, NULL, OPT_SAVE_INIT},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"json", no_argument, NULL, OPT_JSON},
    {"model", required_argument, NULL, OPT_MODEL},
    {"no-output-m2", no_argument, NULL, OPT_NO_OUTPUT_M2},
    {"penalty", required_argument, NULL, OPT_PENALTY},
    {"penalty-weight", required_argument, NULL, OPT_PENALTY_WEIGHT},
    {"record", required_argument, NULL, OPT_RECORD},
    {"b16-problem", required_argument, NULL, OPT_B16_PROBLEM},
    {"b16-result", required_argument, NULL, OPT_B16_RESULT},
    ATF_CLI_HELP_OPTION,
    {NULL, 0, NULL, 0}};

/* The options of this command alone (the model, its penalty, the outputs); *used = 0 for the
 * others. */
static atf_error own_option(int c, const char *val, train_args *a, int *used, char *err)
{
    atf_train_settings *t = &a->train;
    *used = 1;
    switch (c) {
    case OPT_MODEL: return atf_model_kind_parse(val, &a->model, err);
    case OPT_NO_OUTPUT_M2: a->no_output_m2 = 1; return ATF_OK;
    case OPT_PENALTY:
        t->use_penalty = 1;
        return atf_penalty_parse(val, &t->penalty, err) ? ATF_E_USAGE : ATF_OK;
    case OPT_PENALTY_WEIGHT:
        return atf_cli_double_range("--penalty-weight", val, 0.0, 0, INFINITY,
                                    &t->penalty_weight, err);
    case 'o': a->out = val; return ATF_OK;
    case OPT_SAVE_INIT: a->save_init = val; return ATF_OK;
    case OPT_RECORD: a->record = val; return ATF_OK;
    case OPT_B16_PROBLEM: a->b16_problem = val; return ATF_OK;
    case OPT_B16_RESULT: a->b16_result = val; return ATF_OK;
    case OPT_QUIET: a->quiet = 1; return ATF_OK;
    case OPT_JSON: a->json = 1; return ATF_OK;
    case OPT_CHECKPOINT_EVERY:
        return atf_cli_int("--checkpoint-every", val, 1, 1000000, &a->checkpoint_every, err);
    }
    *used = 0;
    return ATF_OK;
}

static atf_error apply_option(int c, const char *val, train_args *a, char *err)
{
    int used = 0;
    atf_error e = own_option(c, val, a, &used, err);
    if (!e && !used)
        e = atf_cli_train_option(c, val, &a->train, (atf_cli_train_extra){&a->val, &a->pool},
                                 &used, err);
    if (e || used || c == 'h') /* 'h': atf_cli_wants_help has seen it */
        return e;
    if (c == ATF_CLI_OPT_INIT && strcmp(val, "he") && strcmp(val, "torch") &&
        strcmp(val, "lecun")) /* --init MLP0.h5: the starting network, as --mlp */
        return atf_net_option(&a->net, "mlp", val, err);
    a->n_train_given |= c == ATF_CLI_OPT_N_TRAIN;
    e = atf_cli_tangent_option(c, val, &a->data, &a->net, &used, err);
    if (!e && !used) /* ATF_CLI_BAD_OPTION: err holds the message */
        e = ATF_E_USAGE;
    return e;
}

static atf_error check_combination(const train_args *a, char *err)
{
    if (!a->out) {
        atf_errorf(err, "missing -o OUT.h5");
        return ATF_E_USAGE;
    }
    if (a->checkpoint_every > 0 && a->model != ATF_MODEL_NETWORK) {
        atf_errorf(err, "--checkpoint-every: only for --model network");
        return ATF_E_USAGE;
    }
    if (a->train.use_penalty && a->model != ATF_MODEL_FACTORIZED) {
        atf_errorf(err, "--penalty: only for --model factorized");
        return ATF_E_USAGE;
    }
    if (a->no_output_m2 && a->model != ATF_MODEL_FACTORIZED) {
        atf_errorf(err, "--no-output-m2: only for --model factorized");
        return ATF_E_USAGE;
    }
    if (a->train.patience > 0 && a->train.stopping == ATF_STOP_FINAL) {
        atf_errorf(err, "--patience: needs --stop best-val or test-selected");
        return ATF_E_USAGE;
    }
    if (!a->b16_problem != !a->b16_result) {
        atf_errorf(err, "--b16-problem and --b16-result go together");
        return ATF_E_USAGE;
    }
    if (a->pool > 0 && a->n_train_given && a->data.n_train > a->pool) {
        atf_errorf(err, "--n-train %d exceeds --pool %d", a->data.n_train, a->pool);
        return ATF_E_USAGE;
    }
    return ATF_OK;
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
    if (!e)
        e = check_combination(a, err);
    return e;
}

/* Examples per epoch and validation rows from the options and the loaded split. */
static atf_error protocol_sizes(train_args *a, const atf_task *task, char *err)
{
    int pool = task->train.N;
    int n = a->n_train_given && a->data.n_train > 0 ? a->data.n_train : pool; /* 0: all */
    int val = a->val >= 0 ? a->val
              : a->train.stopping == ATF_STOP_BEST_VAL ? (n / 10 > 1 ? n / 10 : 1) : 0;
    if (n > pool) {
        atf_errorf(err, "--n-train %d exceeds the %d examples of the training split", n, pool);
        return ATF_E_USAGE;
    }
    if (val >= n) {
        atf_errorf(err, "--val %d leaves no training examples of %d", val, n);
        return ATF_E_USAGE;
    }
    a->train.n_train = n - val;
    a->train.n_val = val;
    return ATF_OK;
}

static void describe(const train_args *a)
{
    const atf_train_settings *t = &a->train;
    fprintf(atf_cli_stderr(), "train: %s model, %s lr %g (%s), %s loss, %s sampling of %d examples, "
            "stop %s", atf_model_kind_name(a->model), atf_optimizer_name(t->optimizer), t->lr,
            atf_lr_schedule_name(t->schedule), atf_loss_name(t->loss),
            atf_sampling_name(t->sampling), t->n_train, atf_stopping_name(t->stopping));
    if (t->n_val)
        fprintf(atf_cli_stderr(), ", %d validation examples", t->n_val);
    if (t->patience)
        fprintf(atf_cli_stderr(), ", patience %d", t->patience);
    fprintf(atf_cli_stderr(), "\n");
}

/* The comparison with (16) as a JSON object. */
static json_t *comparison_json(const atf_model_comparison *c)
{
    json_t *o = json_object(), *cos = json_array();
    for (int l = 0; l < c->L; l++)
        json_array_append_new(cos, atf_json_number(c->cosine[l]));
    json_object_set_new(o, "cosine", cos);
    json_object_set_new(o, "cosine_all", atf_json_number(c->cosine_all));
    json_object_set_new(o, "omega_balanced_model", atf_json_number(c->omega_model_total));
    json_object_set_new(o, "omega_balanced_b16", atf_json_number(c->omega_result_total));
    return o;
}

static void report(const train_args *a, const atf_train_report *r, const atf_model_comparison *c)
{
    const atf_train_settings *t = &a->train;
    if (a->json) {
        json_t *o = json_object();
        json_object_set_new(o, "status", json_string(r->interrupted ? "interrupted" : "ok"));
        json_object_set_new(o, "output", atf_json_text(a->out));
        json_object_set_new(o, "model", json_string(atf_model_kind_name(a->model)));
        json_object_set_new(o, "optimizer", json_string(atf_optimizer_name(t->optimizer)));
        json_object_set_new(o, "lr", atf_json_number(t->lr));
        json_object_set_new(o, "lr_schedule", json_string(atf_lr_schedule_name(t->schedule)));
        json_object_set_new(o, "loss", json_string(atf_loss_name(t->loss)));
        json_object_set_new(o, "sampling", json_string(atf_sampling_name(t->sampling)));
        json_object_set_new(o, "stopping", json_string(atf_stopping_name(t->stopping)));
        json_object_set_new(o, "test_selected", json_boolean(t->stopping == ATF_STOP_BEST_TEST));
        json_object_set_new(o, "n_train", json_integer(r->n_train));
        json_object_set_new(o, "n_val", json_integer(r->n_val));
        json_object_set_new(o, "n_pool", json_integer(r->n_pool));
        json_object_set_new(o, "patience", json_integer(t->patience));
        json_object_set_new(o, "eval_every", json_integer(t->eval_every));
        json_object_set_new(o, "epochs", json_integer(t->epochs));
        json_object_set_new(o, "epochs_run", json_integer(r->epochs_run));
        json_object_set_new(o, "selected_epoch", json_integer(r->selected_epoch));
        json_object_set_new(o, "train_loss", atf_json_number(r->train_loss));
        json_object_set_new(o, "train_error", atf_json_number(r->train_error));
        json_object_set_new(o, "val_loss", atf_json_number(r->val_loss));
        json_object_set_new(o, "val_error", atf_json_number(r->val_error));
        json_object_set_new(o, "test_loss", atf_json_number(r->test_loss));
        json_object_set_new(o, "test_error", atf_json_number(r->test_error));
        if (c)
            json_object_set_new(o, "b16", comparison_json(c));
        atf_cli_print_json(o);
        return;
    }
    fprintf(atf_cli_stdout(), "train: %s: %s model, epoch %d of %d kept (%s, %s sampling), train loss %.6e, "
           "train error %.4f", a->out, atf_model_kind_name(a->model), r->selected_epoch,
           r->epochs_run, atf_stopping_name(t->stopping), atf_sampling_name(t->sampling),
           r->train_loss, r->train_error);
    if (r->n_val > 0)
        fprintf(atf_cli_stdout(), ", val error %.4f", r->val_error);
    if (isfinite(r->test_loss) || isfinite(r->test_error))
        fprintf(atf_cli_stdout(), ", test loss %.6g, test error %.4f", r->test_loss, r->test_error);
    if (c)
        fprintf(atf_cli_stdout(), ", cos(B, B_16) %.4f, sum omega~ %.6g vs B_16 %.6g", c->cosine_all,
               c->omega_model_total, c->omega_result_total);
    fprintf(atf_cli_stdout(), "%s\n", r->interrupted ? " (interrupted)" : "");
}

/* The solution of (16) to compare with, checked before training: the result must be the
 * problem's and the problem must have been built from this run's θ0. */
static atf_error load_b16(const train_args *a, const atf_model *m, atf_result **res, char *err)
{
    atf_problem *prob = NULL;
    char fp[ATF_FINGERPRINT_LEN] = "";
    atf_error e = atf_problem_read(a->b16_problem, &prob, err);
    if (!e)
        e = atf_result_read(a->b16_result, res, err);
    if (!e)
        e = atf_cli_check_pair("train", *res, a->b16_result, prob, a->b16_problem, err);
    if (!e)
        e = atf_mlp_fingerprint(m->theta0, fp);
    if (!e && strcmp(prob->prov.mlp_fingerprint, fp)) {
        atf_errorf(err, "%s: mlp_fingerprint: the problem was built from another network than "
                   "this run's theta0 (use the same network options, or --init the problem's "
                   "--save-mlp file)", a->b16_problem);
        e = ATF_E_INPUT;
    }
    atf_problem_free(prob);
    return e;
}

static atf_error write_outputs(const train_args *a, const atf_model *m, const atf_task *task,
                               const atf_train_report *r, char *err)
{
    char fp[ATF_FINGERPRINT_LEN] = "", seed[32], std[8];
    atf_mlp_fingerprint(m->theta0, fp);
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)a->data.seed);
    snprintf(std, sizeof std, "%d", task->standardized);
    const atf_attr prov[] = {{"command", a->command},
                             {"data_source", task->source},
                             {"data_seed", seed},
                             {"standardize", std},
                             {"targets", atf_targets_name(task->targets)},
                             {"theta0_fingerprint", fp}};
    int nprov = (int)(sizeof prov / sizeof prov[0]);
    atf_error e = a->model == ATF_MODEL_NETWORK
                      ? atf_mlp_write(a->out, m->net, err)
                      : atf_train_write(a->out, m, &a->train, r, prov, nprov, err);
    if (!e && a->record)
        e = atf_train_write(a->record, m, &a->train, r, prov, nprov, err);
    return e;
}

static atf_error load(train_args *a, atf_task *task, atf_model **model, char *err)
{
    atf_arch arch;
    atf_mlp *m0 = NULL;
    int n_user = a->data.n_train; /* with --pool the split holds the pool, not n-train */
    if (a->pool)
        a->data.n_train = a->pool > 0 ? a->pool : 0;
    atf_error e = atf_net_arch(&a->net, &arch, err);
    if (!e)
        e = atf_task_load(&a->data, &arch, task, err);
    a->data.n_train = n_user;
    if (e)
        return e;
    e = atf_net_build(&a->net, task, &m0, err);
    if (!e && a->save_init)
        e = atf_mlp_write(a->save_init, m0, err);
    if (!e)
        e = atf_model_create(a->model, m0, model, err);
    if (!e)
        (*model)->train_output_m2 = !a->no_output_m2;
    atf_mlp_free(m0);
    if (!e)
        e = protocol_sizes(a, task, err);
    return e;
}

/* The outputs are rank 0's to check; everything else every rank does alike. The comparison's
 * files are read by rank 0 alone (the problem may be large). */
static atf_error prepare(train_args *a, atf_task *task, atf_model **m, atf_result **b16,
                         char *err)
{
    int lead = rank() == 0, tell;
    atf_error e = lead ? atf_cli_check_output(a->out, err) : ATF_OK;
    if (!e && lead && a->save_init)
        e = atf_cli_check_output(a->save_init, err);
    if (!e && lead && a->record)
        e = atf_cli_check_output(a->record, err);
    if (!e)
        e = load(a, task, m, err);
    if (!e)
        e = atf_train_check(*m, &task->train, &task->test, &a->train, err);
    if (!e && lead && a->b16_problem)
        e = load_b16(a, *m, b16, err);
    e = atf_cli_ranks_agree(e, &tell);
    if (e && !tell)
        err[0] = '\0';
    return e;
}

/* Rank 0 writes; the other ranks learn whether that worked, so that all end alike. */
static atf_error finish(const train_args *a, atf_model *m, const atf_task *task,
                        const atf_train_report *r, atf_result *b16, char *err)
{
    atf_model_comparison cmp;
    atf_error e = ATF_OK;
    int tell;
    if (rank() == 0 && b16)
        e = atf_model_compare_result(m, b16, NULL, &cmp, err);
    if (!e && rank() == 0)
        e = write_outputs(a, m, task, r, err);
    if (!e && rank() == 0)
        report(a, r, a->b16_result ? &cmp : NULL);
    e = atf_cli_ranks_agree(e, &tell);
    if (e && !tell)
        err[0] = '\0';
    return e;
}

static int run(train_args *a)
{
    char err[ATF_ERRLEN] = "";
    atf_task task;
    memset(&task, 0, sizeof task);
    atf_model *m = NULL;
    int teacher = a->data.targets == ATF_TARGETS_TEACHER ||
                  a->data.targets == ATF_TARGETS_TEACHER_SIGN;
    if (teacher && !a->net.mlp_path[0] && a->net.seed == a->data.teacher_seed)
        return atf_cli_fail_alike("train", ATF_E_USAGE,
                                  "--seed equals --teacher-seed: the teacher must be an "
                                  "independent network");
    atf_result *b16 = NULL;
    atf_error e = prepare(a, &task, &m, &b16, err);
    int quiet = a->quiet || rank() != 0;
    progress_ctx ctx = {a, {0}};
    atf_progress_start(&ctx.prog, quiet ? NULL : atf_cli_stderr(), a->train.epochs, 0);
    a->train.progress = on_epoch;
    a->train.ctx = &ctx;
    a->train.interrupt = atf_cli_interrupt_flag();
    a->train.processes = atf_cli_processes();
    atf_train_report r;
    memset(&r, 0, sizeof r);
    if (!e && !quiet)
        describe(a);
    if (!e) {
        e = atf_model_train(m, &task.train, &task.test, &a->train, &r, err);
        if (e || r.interrupted)
            atf_progress_break(&ctx.prog); /* the state reached, before the message */
        else
            atf_progress_end(&ctx.prog);
    } else {
        atf_progress_break(&ctx.prog);
    }
    if (!e)
        e = finish(a, m, &task, &r, b16, err);
    else if (rank() != 0) /* the library's failures are met by every rank alike */
        err[0] = '\0';
    atf_result_free(b16);
    int interrupted = r.interrupted;
    atf_train_report_free(&r);
    atf_model_free(m);
    atf_task_free(&task);
    if (e) { /* agreed, or the library's, which every rank meets alike */
        atf_cli_ranks_alike();
        return atf_cli_fail("train", e, err);
    }
    return interrupted ? atf_cli_status_exit_code(ATF_STATUS_INTERRUPTED) : 0;
}

int atf_cmd_train(int argc, char **argv)
{
    if (atf_cli_wants_help(argc, argv)) {
        usage(atf_cli_stdout());
        return 0;
    }
    train_args a;
    memset(&a, 0, sizeof a);
    a.data = atf_data_options_default();
    a.net = atf_net_options_default();
    a.train = atf_train_default();
    a.train.stopping = ATF_STOP_BEST_VAL; /* the fair default for the command */
    a.model = ATF_MODEL_NETWORK;
    a.val = -1;
    atf_cli_command_line(argc, argv, a.command, sizeof a.command);
    char err[ATF_ERRLEN] = "";
    atf_error e = parse_args(argc, argv, &a, err);
    if (e)
        return atf_cli_fail_alike("train", e, err);
    return run(&a);
}
