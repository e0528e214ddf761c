/* cmd_experiment.c — `atf experiment NAME`: the paper's experiments (alignment, penalties,
 * samples) of the experiments library, each filled from its command line here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf_util.h"
#include "cli_tangent.h"
#include "cli_train.h"
#include "cmd_experiments.h"

/* ---- what the experiment commands share ---- */

atf_exp_io atf_cli_exp_io(int json, int quiet)
{
    const atf_exp_ranks *rk = atf_cli_ranks();
    int first = !rk || rk->rank == 0; /* the report and the progress line are rank 0's */
    atf_exp_io io = {first ? atf_cli_stdout() : NULL, quiet || !first ? NULL : atf_cli_stderr(),
                     atf_cli_stderr(), json,
                     atf_cli_interrupt_flag(), rk};
    return io;
}

int atf_cli_exp_exit(const char *cmd, atf_error e, const atf_exp_outcome *o, const char *err)
{
    if (e)
        return atf_cli_fail(cmd, e, err);
    fflush(atf_cli_stdout());
    if (o->status != ATF_STATUS_SOLVED && err[0]) /* ranks other than 0 have nothing to add */
        fprintf(atf_cli_stderr(), "atf %s: %s\n", cmd, err);
    return atf_cli_status_exit_code(o->status);
}

atf_error atf_cli_exp_ns(const char *opt, const char *text, atf_samples_config *cfg, char *err)
{
    long v[ATF_SAMPLES_MAXN];
    int n;
    atf_error e = atf_parse_ints(text, 2, 1 << 24, v, ATF_SAMPLES_MAXN, &n, opt, err);
    for (int k = 0; !e && k < n; k++)
        cfg->ns[k] = (int)v[k];
    if (!e)
        cfg->nn = n;
    return e;
}

/* --seeds K (seeds 1..K) or, with list, --seed-list LIST. */
atf_error atf_cli_exp_seeds(const char *opt, const char *text, int list, atf_samples_config *cfg,
                            char *err)
{
    long v[ATF_SAMPLES_MAXSEEDS];
    int n = 0;
    atf_error e = list ? atf_parse_ints(text, 0, 1L << 40, v, ATF_SAMPLES_MAXSEEDS, &n, opt, err)
                       : atf_cli_int(opt, text, 1, ATF_SAMPLES_MAXSEEDS, &v[0], err);
    if (!list && !e) {
        n = (int)v[0];
        for (int k = 0; k < n; k++)
            v[k] = k + 1;
    }
    for (int k = 0; !e && k < n; k++)
        cfg->seeds[k] = (uint64_t)v[k];
    if (!e)
        cfg->nseeds = n;
    return e;
}

/* "--hidden 128,128": hidden widths (end widths 0, filled from the data later). */
static atf_error parse_hidden(const char *text, atf_arch *arch, char *err)
{
    long w[ATF_MAX_LAYERS];
    int n;
    atf_error e = atf_parse_ints(text, 1, 1 << 20, w, ATF_MAX_LAYERS - 1, &n, "--hidden", err);
    if (e)
        return e;
    arch->L = n + 1;
    arch->widths[0] = arch->widths[n + 1] = 0;
    for (int i = 0; i < n; i++)
        arch->widths[i + 1] = (int)w[i];
    return ATF_OK;
}

static atf_error parse_init(const char *text, int *init, char *err)
{
    if (strcmp(text, "he") && strcmp(text, "torch") && strcmp(text, "lecun")) {
        atf_errorf(err, "--init: '%s' (expected he, torch or lecun)", text);
        return ATF_E_USAGE;
    }
    *init = text[0] == 't' ? ATF_INIT_TORCH : text[0] == 'l' ? ATF_INIT_LECUN : ATF_INIT_HE;
    return ATF_OK;
}

/* A count ≥ 0. */
static atf_error parse_count(const char *opt, const char *text, int *out, char *err)
{
    long v;
    atf_error e = atf_cli_int(opt, text, 0, 100000000, &v, err);
    if (!e)
        *out = (int)v;
    return e;
}

static atf_error parse_positive(const char *opt, const char *text, double *out, char *err)
{
    atf_error e = atf_cli_double(opt, text, out, err);
    if (!e && !(*out > 0)) {
        atf_errorf(err, "%s must be positive", opt);
        e = ATF_E_USAGE;
    }
    return e;
}

/* ---- atf experiment penalties ---- */

static void penalties_usage(FILE *out)
{
    fprintf(out,
            "usage: atf experiment penalties [--penalty SPEC]... [--from A] [--to B] [--num K]\n"
            "                                [--t T] [--out DIR] [--json]\n"
            "\n"
            "Effective penalties (eq. 12) and prox maps, the paper's Figure 2. Default penalties:\n"
            "sq, abs and sq+abs (omega1 = (v-1)^2, omega2 = |v-1| and their joint penalty), always\n"
            "drawn against v^2. Writes DIR/penalties.csv (spec,v,omega_tilde,z,prox,s1,s2) and\n"
            "DIR/penalties.{svg,png} (default DIR out/penalties); prints the tail slopes\n"
            "d log omega_tilde / d log v between v = 1e2 and 1e3 (2 would be quadratic).\n"
            "  --from/--to/--num  grid of v for the linear panels (default 0, 5, 201)\n"
            "  --t T              prox step (default 1)\n");
}

enum {
    OPT_JSON = ATF_CLI_OPT_FIRST, OPT_OUT, OPT_PENALTY, OPT_FROM, OPT_TO, OPT_NUM, OPT_T,
    OPT_NO_MLP, OPT_CENTER, OPT_NS, OPT_SEEDS, OPT_SEED_LIST, OPT_INIT, OPT_HIDDEN, OPT_SCALES,
    OPT_AUTO_FRACTION, OPT_STRUCTURE, OPT_TOL, OPT_MAX_ITER, OPT_PATH_POINTS, OPT_LOSS,
    OPT_ACTIVATION, OPT_MODELS, OPT_XENT_LAMBDA, OPT_BIAS, OPT_XENT_LAMBDAS, OPT_XENT_PENALTIES,
    OPT_INTERPOLATE_MAX_N, OPT_ALIGN_EXAMPLES, OPT_PER_EXAMPLE, OPT_THRESHOLDS, OPT_PATIENCE_PATH,
    OPT_CHECKPOINT_EVERY, OPT_SOLVER_LOG, OPT_LINSYS, OPT_PRECOND,
    OPT_REPORT_ONLY, OPT_RIDGE_LAMBDA, OPT_RIDGE_LAMBDAS, OPT_RIDGE_PER_EXAMPLE,
    OPT_RIDGE_PATIENCE, OPT_THRESHOLD_METRIC
};

static atf_error penalties_option(int c, const char *val, atf_penalties_config *cfg, char *err)
{
    long v;
    atf_error e = ATF_OK;
    switch (c) {
    case OPT_JSON: cfg->io.json = 1; break;
    case OPT_OUT: snprintf(cfg->out, sizeof cfg->out, "%s", val); break;
    case OPT_FROM: e = atf_cli_double("--from", val, &cfg->from, err); break;
    case OPT_TO: e = atf_cli_double("--to", val, &cfg->to, err); break;
    case OPT_T: e = atf_cli_double("--t", val, &cfg->t, err); break;
    case OPT_NUM:
        e = atf_cli_int("--num", val, 2, 100000, &v, err);
        cfg->num = (int)v;
        break;
    case OPT_PENALTY:
        if (cfg->nspecs >= ATF_PENALTIES_MAX) {
            atf_errorf(err, "--penalty: at most %d", ATF_PENALTIES_MAX);
            return ATF_E_USAGE;
        }
        cfg->specs[cfg->nspecs++] = val;
        break;
    case 'h': break;
    default: e = ATF_E_USAGE; /* err from atf_cli_getopt */
    }
    return e;
}

static atf_error parse_penalties(int argc, char **argv, atf_penalties_config *cfg, char *err)
{
    static const struct option options[] = {
        {"penalty", required_argument, NULL, OPT_PENALTY}, {"from", required_argument, NULL, OPT_FROM},
        {"to", required_argument, NULL, OPT_TO}, {"num", required_argument, NULL, OPT_NUM},
        {"t", required_argument, NULL, OPT_T}, {"out", required_argument, NULL, OPT_OUT},
        {"json", no_argument, NULL, OPT_JSON}, ATF_CLI_HELP_OPTION, {NULL, 0, NULL, 0}};
    const char *cmd = "experiment penalties";
    atf_penalties_defaults(cfg);
    atf_cli_getopt_begin();
    int c;
    atf_error e = ATF_OK;
    while (!e && (c = atf_cli_getopt(cmd, argc, argv, "h", options, err)) != -1)
        e = penalties_option(c, optarg, cfg, err);
    if (!e)
        e = atf_cli_positionals(cmd, argc, argv, 0, 0, "", NULL, NULL, err);
    return e;
}

int atf_experiment_penalties(int argc, char **argv)
{
    const char *cmd = "experiment penalties";
    if (atf_cli_wants_help(argc, argv)) {
        penalties_usage(atf_cli_stdout());
        return 0;
    }
    char err[ATF_ERRLEN] = "";
    atf_penalties_config cfg;
    atf_exp_outcome o = {ATF_STATUS_SOLVED, 0, 0};
    atf_error e = parse_penalties(argc, argv, &cfg, err);
    if (!e)
        e = atf_penalties_check(&cfg, err);
    if (!e)
        e = atf_cli_output_dir(cfg.out, err);
    if (!e) {
        cfg.io = atf_cli_exp_io(cfg.io.json, 0);
        e = atf_penalties_run(&cfg, &o, err);
    }
    return atf_cli_exp_exit(cmd, e, &o, err);
}

/* ---- atf experiment samples ---- */

static void samples_usage(FILE *out)
{
    fprintf(out,
            "usage: atf experiment samples [--data SOURCE] [--classes LIST] [--ns LIST]\n"
            "          [--seeds K | --seed-list LIST] [--n-test N] [--hidden LIST]\n"
            "          [--init he|torch|lecun] [--activation SPEC] [--bias[=LAYERS]]\n"
            "          [--models LIST]\n"
            "          [--penalty SPEC] [--loss SPEC] [--xent-lambda L] [--scales LIST]\n"
            "          [--xent-lambdas LIST [--xent-lambdas-per-example] [--xent-path-patience K]]\n"
            "          [--xent-penalties LIST] [--interpolate-max-n N] [--align-examples N]\n"
            "          [--ridge-lambda L | --ridge-lambdas LIST [--ridge-lambdas-per-example]\n"
            "           [--ridge-path-patience K]]\n"
            "          [--error-thresholds LIST [--threshold-metric auto|error|rel-mse]]\n"
            "          [--report-only]\n"
            "          [--auto-fraction Q] [--structure layer|diagonal|full] [--tol EPS]\n"
            "          [--max-iter N] [--sgd-loss squared|xent] [--optimizer sgd|adam] [--lr LR]\n"
            "          [--momentum MU] [--lr-schedule cosine|constant] [--epochs E] [--batch B]\n"
            "          [--stop final|best-val|test-selected] [--val N] [--patience K]\n"
            "          [--sampling fixed|resample-each-epoch] [--pool N] [--center] [--no-mlp]\n"
            "          [--checkpoint-every S] [--solver-log FILE] [--linsys L] [--precond P]\n"
            "          [--out DIR] [--json]\n"
            "\n"
            "Test error against the number of training examples n for models built on the same\n"
            "random network theta0 (one per seed). Rows go to DIR/samples.csv and .jsonl\n"
            "(resumable), mean +- std over seeds to DIR/samples_summary.csv and a Markdown table on\n"
            "stdout, the figure to DIR/samples.{svg,png} (default DIR out/samples).\n"
            "\n"
            "  --models LIST      any of (default ntk,p16,network):\n"
            "                       ntk             NTK min-norm interpolant (fixed features)\n"
            "                       p16             problem (16) solved exactly with PENALTY\n"
            "                                       and LOSS (adaptive features)\n"
            "                       p16-xent        problem (16) with loss xent:lambda=L\n"
            "                       ntk-xent        the linearised network's regularised\n"
            "                                       cross-entropy optimum (p16-xent with the\n"
            "                                       fixed penalty)\n"
            "                       p16-ridge       problem (16) with loss squared:lambda=L\n"
            "                       ntk-ridge       kernel ridge regression on the initial\n"
            "                                       tangent features (p16-ridge with the fixed\n"
            "                                       penalty)\n"
            "                       ntk-sgd         linearised network trained by SGD/Adam\n"
            "                       factorized-sgd  factorised linearisation M1 W M2, SGD/Adam\n"
            "                       network         the network trained by SGD/Adam\n"
            "  --data SOURCE      synthetic[:d=..,r=..,noise=..] (default), mnist[:DIR],\n"
            "                     fashion-mnist[:DIR] or a data set file; --classes, --targets,\n"
            "                     --standardize, --teacher-seed as for atf features\n"
            "  --ns LIST          training sizes (default 125,250,500,1000,2000)\n"
            "  --seeds K          seeds 1..K (default 3); --seed-list LIST for explicit seeds\n"
            "  --n-test N         test examples (default 1000)\n"
            "  --hidden LIST      hidden widths (default 128,128; mnist: 128,128,128,128)\n"
            "  --activation SPEC  after every hidden layer, or one per --hidden layer separated by\n"
            "                     ';' (default relu; the specs of atf features --help)\n"
            "  --bias[=LAYERS]    biases (default none): every layer, or a 1-based layer list\n"
            "                     (with --hidden), as for atf features\n"
            "  --init I           initial weights: he (He-normal, default for synthetic/HDF5\n"
            "                     data), torch (nn.Linear's default, default for mnist) or lecun\n"
            "  --penalty SPEC     problem (16) penalty (default sq:scale=auto); scale=auto sets\n"
            "                     sqrt(gamma) = Q x the largest singular value of the NTK solution\n"
            "  --loss SPEC        p16's loss: interpolate (default), squared:lambda=L or\n"
            "                     xent:lambda=L (method auto; see atf solve --help)\n"
            "  --xent-lambda L    p16-xent's and ntk-xent's lambda (default 1)\n"
            "  --xent-lambdas LIST  instead, a lambda path for p16-xent and ntk-xent: fit the\n"
            "                     first n - v examples for every lambda (largest first, warm\n"
            "                     starts) and keep the lowest cross-entropy on the last v of\n"
            "                     the n (v: --val, else n/10); rows record lambda and the\n"
            "                     validation scores\n"
            "  --xent-lambdas-per-example  the path's values are per fitted example: lambda\n"
            "                     = value x (n - v), the loss the mean cross-entropy / value\n"
            "  --checkpoint-every S  a problem (16) solve (newton, alm, admm) and the NTK\n"
            "                     interpolant's CG keep their state in\n"
            "                     DIR/solutions/*.partial.h5 every S seconds (default 600;\n"
            "                     -1: never); a re-run goes on from it to the same answer\n"
            "                     (admm by CG also keeps its factor, *.precond.h5)\n"
            "  --linsys L         problem (16)'s linear systems (ADMM's projection): auto,\n"
            "                     direct or pcg (see atf solve --help)\n"
            "  --precond P        PCG's preconditioner, for those and the NTK interpolant's\n"
            "                     CG: auto, none, jacobi, nystrom, nystrom-block, gram32\n"
            "  --solver-log FILE  append every problem (16), ntk-xent and NTK-interpolant\n"
            "                     solve's iteration table to FILE, under a line naming n,\n"
            "                     seed, model and lambda\n"
            "  --xent-path-patience K  the path stops once K lambda in a row have done worse\n"
            "                     on validation than the best (default 0: every lambda)\n"
            "  --xent-penalties LIST  p16-xent's penalties, ';'-separated, a model each\n"
            "                     (default: as p16)\n"
            "  --interpolate-max-n N|auto  ntk and interpolating p16 only for n <= N (auto:\n"
            "                     where n x outputs <= the network's parameters); other n get\n"
            "                     rows with status skipped (default: every n)\n"
            "  --align-examples N  the network's row also records, per layer, the alignment\n"
            "                     of its final NTK with K0 and with the first p16-xent model's\n"
            "                     adapted kernel (eq. 7) on the first N test examples\n"
            "  --ridge-lambda L   p16-ridge's and ntk-ridge's lambda (default 1)\n"
            "  --ridge-lambdas LIST  instead, a lambda path for p16-ridge and ntk-ridge, as\n"
            "                     --xent-lambdas, kept by the lowest validation MSE (rows:\n"
            "                     val_rel_mse, path_val_rel_mse); --ridge-lambdas-per-example\n"
            "                     (lambda = value x (n - v): the loss the mean squared error /\n"
            "                     value) and --ridge-path-patience K as for the xent path\n"
            "  --error-thresholds LIST  levels of the test error (or relative test MSE): the n\n"
            "                     at which each model reaches them (interpolated in log n, per\n"
            "                     seed and of the mean curve) and the ratios fixed / adaptive,\n"
            "                     in DIR/samples_complexity.csv, samples_ratios.csv and\n"
            "                     samples_complexity.{svg,png}\n"
            "  --threshold-metric M  what the levels are of: error, rel-mse, or auto (default:\n"
            "                     rel-mse for synthetic data, the built-in regression task,\n"
            "                     error otherwise)\n"
            "  --report-only      run nothing: the summary, figures and reports of the rows\n"
            "                     recorded in DIR (the listed models, every n recorded)\n"
            "  --scales LIST      the scale axis: run problem (16) once per value (numbers or\n"
            "                     auto), each a model of its own, e.g. --penalty zsq\n"
            "                     --scales 1e-4,1e-3,1e-2,1e-1,1,auto (at most 8)\n"
            "  --auto-fraction Q  (default 0.3)\n"
            "  --center           linear models without the initial function: r = y and\n"
            "                     predictions A vec B (f0 := 0; SGD models keep f0)\n"
            "Models trained by gradient descent (ntk-sgd, factorized-sgd, network; every row\n"
            "records its trainer and protocol):\n"
            "  --sgd-loss L       squared (default) or xent\n"
            "  --optimizer/--lr/--momentum/--beta1/--beta2/--adam-eps/--lr-schedule/--epochs/\n"
            "  --batch/--shuffle-seed  as for atf train (default sgd, lr 0.1 with --init torch\n"
            "                     and 0.01 otherwise, momentum 0.9, cosine, 100 epochs, batch 32)\n"
            "  --stop S           best-val (default: the best epoch on N validation examples\n"
            "                     carved from the n), final, or test-selected (the best test\n"
            "                     epoch: early stopping on the test set, labelled as such)\n"
            "  --val N            validation examples (default n/10 with best-val)\n"
            "  --patience K       stop K epochs after the best one (default 0: never early)\n"
            "  --sampling S       fixed (default: the n examples every model sees) or\n"
            "                     resample-each-epoch (--resample-each-epoch; a new n-subset of\n"
            "                     a pool of N training examples every epoch, the authors' loader)\n"
            "  --pool N|all       the training pool (default with resampling: all); with\n"
            "                     fixed sampling the n examples are its first n, so both\n"
            "                     samplings are scored on the same test examples\n"
            "  --no-mlp           the default models without the network\n");
}

/* --interpolate-max-n: a count, or auto (−1: where n × outputs ≤ the network's parameters). */
static atf_error parse_interpolate_max_n(const char *val, int *out, char *err)
{
    if (!strcmp(val, "auto")) {
        *out = -1;
        return ATF_OK;
    }
    return parse_count("--interpolate-max-n", val, out, err);
}

/* --threshold-metric: auto, error or rel-mse. */
static atf_error parse_threshold_metric(const char *val, atf_threshold_metric *out, char *err)
{
    static const char *names[] = {"auto", "error", "rel-mse"};
    for (int i = 0; i < 3; i++)
        if (!strcmp(val, names[i])) {
            *out = (atf_threshold_metric)i;
            return ATF_OK;
        }
    atf_errorf(err, "--threshold-metric: '%s' is not one of auto, error, rel-mse", val);
    return ATF_E_USAGE;
}

/* Options that set a sampling or model setting of the samples experiment. */
static atf_error samples_model_option(int c, const char *val, atf_samples_config *cfg, char *err)
{
    long v;
    atf_error e = ATF_OK;
    switch (c) {
    case OPT_NS: return atf_cli_exp_ns("--ns", val, cfg, err);
    case OPT_SEEDS: return atf_cli_exp_seeds("--seeds", val, 0, cfg, err);
    case OPT_SEED_LIST: return atf_cli_exp_seeds("--seed-list", val, 1, cfg, err);
    case OPT_INIT: return parse_init(val, &cfg->init, err);
    case OPT_HIDDEN: return parse_hidden(val, &cfg->arch, err);
    case OPT_PENALTY: snprintf(cfg->penalty, sizeof cfg->penalty, "%s", val); break;
    case OPT_LOSS:
        if (atf_loss_parse(val, &cfg->loss, err))
            e = ATF_E_USAGE;
        break;
    case OPT_SCALES: return atf_samples_set_scales(cfg, val, err);
    case OPT_AUTO_FRACTION: return parse_positive("--auto-fraction", val, &cfg->auto_fraction, err);
    case OPT_STRUCTURE:
        if (atf_structure_parse(val, &cfg->structure)) {
            atf_errorf(err, "--structure: '%s' (expected layer, diagonal or full)", val);
            e = ATF_E_USAGE;
        }
        break;
    case OPT_TOL: return parse_positive("--tol", val, &cfg->tol, err);
    case OPT_MAX_ITER:
        e = atf_cli_int("--max-iter", val, 1, 100000000, &v, err);
        cfg->max_iter = (int)v;
        break;
    default: e = ATF_E_USAGE;
    }
    return e;
}

static atf_error samples_option(int c, const char *val, atf_samples_config *cfg, char *err)
{
    int used = 0;
    switch (c) {
    case OPT_JSON: cfg->io.json = 1; return ATF_OK;
    case OPT_NO_MLP: cfg->train_mlp = 0; return ATF_OK;
    case OPT_CENTER: cfg->center = 1; return ATF_OK;
    case OPT_OUT: snprintf(cfg->out, sizeof cfg->out, "%s", val); return ATF_OK;
    case OPT_MODELS: return atf_samples_parse_models(val, &cfg->models, err);
    case OPT_XENT_LAMBDA: return parse_positive("--xent-lambda", val, &cfg->xent_lambda, err);
    case OPT_XENT_LAMBDAS: return atf_samples_set_xent_lambdas(cfg, val, err);
    case OPT_PER_EXAMPLE: cfg->xent_lambdas_per_example = 1; return ATF_OK;
    case OPT_THRESHOLDS: return atf_samples_set_thresholds(cfg, val, err);
    case OPT_REPORT_ONLY: cfg->report_only = 1; return ATF_OK;
    case OPT_PATIENCE_PATH:
        return parse_count("--xent-path-patience", val, &cfg->xent_path_patience, err);
    case OPT_CHECKPOINT_EVERY:
        return atf_cli_double("--checkpoint-every", val, &cfg->checkpoint_seconds, err);
    case OPT_SOLVER_LOG: snprintf(cfg->solver_log, sizeof cfg->solver_log, "%s", val); return ATF_OK;
    case OPT_LINSYS:
        if (atf_linsys_kind_parse(val, &cfg->linsys) == ATF_OK)
            return ATF_OK;
        atf_errorf(err, "--linsys: '%s' is not one of auto, direct, pcg", val);
        return ATF_E_USAGE;
    case OPT_PRECOND:
        if (atf_precond_parse(val, &cfg->precond) == ATF_OK)
            return ATF_OK;
        atf_errorf(err, "--precond: '%s' is not one of auto, none, jacobi, nystrom, "
                        "nystrom-block, gram32", val);
        return ATF_E_USAGE;
    case OPT_XENT_PENALTIES: return atf_samples_set_xent_penalties(cfg, val, err);
    case OPT_RIDGE_LAMBDA: return parse_positive("--ridge-lambda", val, &cfg->ridge_lambda, err);
    case OPT_RIDGE_LAMBDAS: return atf_samples_set_ridge_lambdas(cfg, val, err);
    case OPT_RIDGE_PER_EXAMPLE: cfg->ridge_lambdas_per_example = 1; return ATF_OK;
    case OPT_RIDGE_PATIENCE:
        return parse_count("--ridge-path-patience", val, &cfg->ridge_path_patience, err);
    case OPT_THRESHOLD_METRIC: return parse_threshold_metric(val, &cfg->threshold_metric, err);
    case OPT_INTERPOLATE_MAX_N: return parse_interpolate_max_n(val, &cfg->interpolate_max_n, err);
    case OPT_ALIGN_EXAMPLES: return parse_count("--align-examples", val, &cfg->align_examples, err);
    case 'h': return ATF_OK;
    }
    if (c >= ATF_CLI_OPT_OPTIMIZER) {
        atf_cli_train_extra extra = {&cfg->train.n_val, &cfg->n_pool};
        atf_error e = atf_cli_train_option(c, val, &cfg->train, extra, &used, err);
        return e ? e : used ? ATF_OK : ATF_E_USAGE;
    }
    if (c >= ATF_CLI_OPT_DATA) {
        atf_error e = atf_cli_tangent_option(c, val, &cfg->data, NULL, &used, err);
        return e ? e : used ? ATF_OK : ATF_E_USAGE;
    }
    return samples_model_option(c, val, cfg, err);
}

/* --activation for the samples networks, applied once --hidden is known: one spec for every
 * hidden layer (whatever their number) or one per --hidden layer. */
static atf_error samples_activation(const char *text, atf_samples_config *cfg, char *err)
{
    if (!text)
        return ATF_OK;
    int L = cfg->arch.L;
    if (L == 0 && strchr(text, ';')) {
        atf_errorf(err, "--activation: '%s': one spec per hidden layer needs --hidden", text);
        return ATF_E_USAGE;
    }
    atf_error e = atf_activations_parse(text, L ? L : ATF_MAX_LAYERS, cfg->arch.act, err);
    if (e && !strncmp(err, "activation:", 11)) {
        char msg[ATF_ERRLEN];
        snprintf(msg, sizeof msg, "--%s", err);
        snprintf(err, ATF_ERRLEN, "%s", msg);
    }
    return e;
}

/* --bias for the samples networks: all or none whatever the depth, a layer list once --hidden
 * is known. */
static atf_error samples_bias(const char *text, atf_samples_config *cfg, char *err)
{
    if (!text)
        return ATF_OK;
    atf_arch a = cfg->arch;
    if (a.L == 0)
        a.L = ATF_MAX_LAYERS; /* the default depth is known only later: all or none */
    atf_error e = atf_arch_parse_bias(text, &a, err);
    int listed = strcmp(text, "all") && strcmp(text, "none") && strcmp(text, "1") &&
                 strcmp(text, "0");
    if (!e && cfg->arch.L == 0 && listed) {
        atf_errorf(err, "--bias: '%s': a list of layers needs --hidden", text);
        return ATF_E_USAGE;
    }
    if (e) {
        char msg[ATF_ERRLEN];
        snprintf(msg, sizeof msg, "--bias: %s", err);
        snprintf(err, ATF_ERRLEN, "%s", msg);
        return ATF_E_USAGE;
    }
    memcpy(cfg->arch.bias, a.bias, sizeof a.bias);
    return ATF_OK;
}

static atf_error parse_samples(int argc, char **argv, atf_samples_config *cfg, char *err)
{
    static const struct option options[] = {
        ATF_CLI_DATA_OPTIONS,
        {"ns", required_argument, NULL, OPT_NS}, {"seeds", required_argument, NULL, OPT_SEEDS},
        {"seed-list", required_argument, NULL, OPT_SEED_LIST},
        {"hidden", required_argument, NULL, OPT_HIDDEN}, {"init", required_argument, NULL, OPT_INIT},
        {"activation", required_argument, NULL, OPT_ACTIVATION},
        {"bias", optional_argument, NULL, OPT_BIAS},
        {"penalty", required_argument, NULL, OPT_PENALTY},
        {"loss", required_argument, NULL, OPT_LOSS},
        {"scales", required_argument, NULL, OPT_SCALES},
        {"auto-fraction", required_argument, NULL, OPT_AUTO_FRACTION},
        {"structure", required_argument, NULL, OPT_STRUCTURE},
        {"tol", required_argument, NULL, OPT_TOL}, {"max-iter", required_argument, NULL, OPT_MAX_ITER},
        {"models", required_argument, NULL, OPT_MODELS},
        {"xent-lambda", required_argument, NULL, OPT_XENT_LAMBDA},
        {"xent-lambdas", required_argument, NULL, OPT_XENT_LAMBDAS},
        {"xent-lambdas-per-example", no_argument, NULL, OPT_PER_EXAMPLE},
        {"error-thresholds", required_argument, NULL, OPT_THRESHOLDS},
        {"report-only", no_argument, NULL, OPT_REPORT_ONLY},
        {"xent-path-patience", required_argument, NULL, OPT_PATIENCE_PATH},
        {"checkpoint-every", required_argument, NULL, OPT_CHECKPOINT_EVERY},
        {"solver-log", required_argument, NULL, OPT_SOLVER_LOG},
        {"linsys", required_argument, NULL, OPT_LINSYS},
        {"precond", required_argument, NULL, OPT_PRECOND},
        {"xent-penalties", required_argument, NULL, OPT_XENT_PENALTIES},
        {"ridge-lambda", required_argument, NULL, OPT_RIDGE_LAMBDA},
        {"ridge-lambdas", required_argument, NULL, OPT_RIDGE_LAMBDAS},
        {"ridge-lambdas-per-example", no_argument, NULL, OPT_RIDGE_PER_EXAMPLE},
        {"ridge-path-patience", required_argument, NULL, OPT_RIDGE_PATIENCE},
        {"threshold-metric", required_argument, NULL, OPT_THRESHOLD_METRIC},
        {"interpolate-max-n", required_argument, NULL, OPT_INTERPOLATE_MAX_N},
        {"align-examples", required_argument, NULL, OPT_ALIGN_EXAMPLES},
        {"sgd-loss", required_argument, NULL, ATF_CLI_OPT_TRAIN_LOSS}, ATF_CLI_TRAIN_OPTIONS,
        {"center", no_argument, NULL, OPT_CENTER}, {"no-mlp", no_argument, NULL, OPT_NO_MLP},
        {"out", required_argument, NULL, OPT_OUT}, {"json", no_argument, NULL, OPT_JSON},
        ATF_CLI_HELP_OPTION, {NULL, 0, NULL, 0}};
    const char *cmd = "experiment samples";
    atf_samples_defaults(cfg);
    atf_cli_getopt_begin();
    int c;
    const char *activation = NULL, *bias = NULL;
    atf_error e = ATF_OK;
    while (!e && (c = atf_cli_getopt(cmd, argc, argv, "h", options, err)) != -1) {
        if (c == OPT_ACTIVATION)
            activation = optarg;
        else if (c == OPT_BIAS)
            bias = optarg ? optarg : "all";
        else
            e = samples_option(c, optarg, cfg, err);
    }
    if (!e)
        e = samples_activation(activation, cfg, err);
    if (!e)
        e = samples_bias(bias, cfg, err);
    if (!e)
        e = atf_cli_positionals(cmd, argc, argv, 0, 0, "", NULL, NULL, err);
    if (!e)
        e = atf_cli_add_data_dirs(&cfg->data, err);
    return e;
}

int atf_experiment_samples(int argc, char **argv)
{
    const char *cmd = "experiment samples";
    if (atf_cli_wants_help(argc, argv)) {
        samples_usage(atf_cli_stdout());
        return 0;
    }
    char err[ATF_ERRLEN] = "";
    static atf_samples_config cfg; /* large */
    atf_exp_outcome o = {ATF_STATUS_SOLVED, 0, 0};
    atf_error e = parse_samples(argc, argv, &cfg, err);
    if (!e)
        e = atf_samples_check(&cfg, err);
    if (!e)
        e = atf_cli_output_dir(cfg.out, err);
    if (!e) {
        cfg.io = atf_cli_exp_io(cfg.io.json, 0);
        e = atf_samples_run(&cfg, &o, err);
    }
    return atf_cli_exp_exit(cmd, e, &o, err);
}

/* ---- atf experiment alignment ---- */

static void alignment_usage(FILE *out)
{
    fprintf(out,
            "usage: atf experiment alignment [--data mnist[:DIR]] [--classes 2,3] [--n-train 500]\n"
            "          [--n-test 500] [--teacher-seed S] [--widths 784,128,128,1] [--seed S]\n"
            "          [--bias[=LAYERS]] [--activation SPEC] [--init torch|he]\n"
            "          [--epochs E] [--batch B] [--lr LR] [--momentum MU] [--path-points T]\n"
            "          [--penalty SPEC] [--auto-fraction Q] [--tol EPS] [--max-iter N]\n"
            "          [--out DIR] [--json]\n"
            "\n"
            "Paper Fig. 1 and 3. Targets y = best linear fit of the +-1 labels on the last-layer\n"
            "features of an independent random network, and sign(y); one network trained on each\n"
            "from the same theta0 (SGD, momentum, cosine schedule). Reports the teacher's accuracy,\n"
            "the cosine similarity of each network's path-averaged kernel (T points on the line\n"
            "theta0 -> theta) with its label kernel, and how well problem (16) solved on theta0's\n"
            "tangent features predicts that kernel (eq. 7), per layer, against K0. Writes\n"
            "DIR/alignment.csv, DIR/alignment_summary.json, DIR/alignment_kernels.{svg,png} (Fig. 1)\n"
            "and DIR/alignment_residual.{svg,png} (Fig. 3); default DIR out/alignment.\n"
            "  defaults: --init torch (PyTorch's nn.Linear initialisation, as the paper), --epochs 200,\n"
            "            --batch 32, --lr 0.03 (0.01 with --init he; the paper's 0.1 diverges here),\n"
            "            --momentum 0.9, --path-points 50,\n"
            "            --penalty sq:scale=auto, --auto-fraction 0.3\n");
}

static atf_error alignment_option(int c, const char *val, atf_alignment_config *a, char *err)
{
    long v;
    int used = 0;
    atf_error e = ATF_OK;
    switch (c) {
    case OPT_JSON: a->io.json = 1; break;
    case OPT_OUT: snprintf(a->out, sizeof a->out, "%s", val); break;
    case ATF_CLI_OPT_EPOCHS: case ATF_CLI_OPT_BATCH: case ATF_CLI_OPT_LR:
    case ATF_CLI_OPT_MOMENTUM: {
        int used;
        return atf_cli_train_option(c, val, &a->train, (atf_cli_train_extra){NULL, NULL}, &used,
                                    err);
    }
    case OPT_PATH_POINTS:
        e = atf_cli_int("--path-points", val, 1, 100000, &v, err);
        a->path_points = (int)v;
        break;
    case OPT_PENALTY: snprintf(a->penalty, sizeof a->penalty, "%s", val); break;
    case OPT_AUTO_FRACTION: return parse_positive("--auto-fraction", val, &a->auto_fraction, err);
    case OPT_TOL: return parse_positive("--tol", val, &a->tol, err);
    case OPT_MAX_ITER:
        e = atf_cli_int("--max-iter", val, 1, 100000000, &v, err);
        a->max_iter = (int)v;
        break;
    case 'h': break;
    default:
        e = atf_cli_tangent_option(c, val, &a->data, &a->net, &used, err);
        if (!e && !used)
            e = ATF_E_USAGE;
    }
    return e;
}

static atf_error parse_alignment(int argc, char **argv, atf_alignment_config *a, char *err)
{
    static const struct option options[] = {
        ATF_CLI_DATA_OPTIONS, ATF_CLI_NET_OPTIONS,
        {"epochs", required_argument, NULL, ATF_CLI_OPT_EPOCHS},
        {"batch", required_argument, NULL, ATF_CLI_OPT_BATCH},
        {"lr", required_argument, NULL, ATF_CLI_OPT_LR},
        {"momentum", required_argument, NULL, ATF_CLI_OPT_MOMENTUM},
        {"path-points", required_argument, NULL, OPT_PATH_POINTS},
        {"penalty", required_argument, NULL, OPT_PENALTY},
        {"auto-fraction", required_argument, NULL, OPT_AUTO_FRACTION},
        {"tol", required_argument, NULL, OPT_TOL}, {"max-iter", required_argument, NULL, OPT_MAX_ITER},
        {"out", required_argument, NULL, OPT_OUT}, {"json", no_argument, NULL, OPT_JSON},
        ATF_CLI_HELP_OPTION, {NULL, 0, NULL, 0}};
    const char *cmd = "experiment alignment";
    atf_alignment_defaults(a);
    atf_cli_getopt_begin();
    int c;
    atf_error e = ATF_OK;
    while (!e && (c = atf_cli_getopt(cmd, argc, argv, "h", options, err)) != -1)
        e = alignment_option(c, optarg, a, err);
    if (!e)
        e = atf_cli_positionals(cmd, argc, argv, 0, 0, "", NULL, NULL, err);
    if (!e)
        e = atf_cli_add_data_dirs(&a->data, err);
    return e;
}

int atf_experiment_alignment(int argc, char **argv)
{
    const char *cmd = "experiment alignment";
    if (atf_cli_wants_help(argc, argv)) {
        alignment_usage(atf_cli_stdout());
        return 0;
    }
    char err[ATF_ERRLEN] = "";
    static atf_alignment_config a; /* large */
    atf_exp_outcome o = {ATF_STATUS_SOLVED, 0, 0};
    atf_error e = parse_alignment(argc, argv, &a, err);
    if (!e)
        e = atf_alignment_check(&a, err);
    if (!e)
        e = atf_cli_output_dir(a.out, err);
    if (!e) {
        a.io = atf_cli_exp_io(a.io.json, 0);
        e = atf_alignment_run(&a, &o, err);
    }
    return atf_cli_exp_exit(cmd, e, &o, err);
}

/* ---- dispatch ---- */

typedef struct {
    const char *name;
    atf_cmd_fn fn;
    const char *summary;
} experiment;

static const experiment experiments[] = {
    {"alignment", atf_experiment_alignment,
     "paper Fig. 1/3: kernel alignment of trained networks vs problem (16)"},
    {"penalties", atf_experiment_penalties,
     "paper Fig. 2: effective penalties and their prox maps"},
    {"samples", atf_experiment_samples,
     "test error vs n: NTK min-norm, problem (16) and the trained network"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: atf experiment NAME [OPTIONS]   (atf experiment NAME --help)\n\n");
    for (size_t i = 0; i < sizeof experiments / sizeof *experiments; i++)
        fprintf(out, "  %-10s %s\n", experiments[i].name, experiments[i].summary);
    fprintf(out, "\nEach writes CSV/JSON tables and SVG+PNG figures into its --out directory\n"
                 "and prints progress on stderr; --json prints a one-line summary on stdout.\n");
}

int atf_cmd_experiment(int argc, char **argv)
{
    if (argc < 2) {
        usage(atf_cli_stderr());
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(atf_cli_stdout());
        return 0;
    }
    for (size_t i = 0; i < sizeof experiments / sizeof *experiments; i++)
        if (!strcmp(argv[1], experiments[i].name))
            return experiments[i].fn(argc - 1, argv + 1);
    fprintf(atf_cli_stderr(), "atf experiment: unknown experiment '%s' (atf experiment --help)\n", argv[1]);
    return 2;
}
