/* cli_train.c — the options of the models trained by gradient descent (cli_train.h): option
 * codes → atf_train_settings. */
#include "cli_train.h"
#include "atf_cli.h"

#include <math.h>
#include <string.h>

atf_error atf_cli_double_range(const char *opt, const char *v, double lo, int lo_open, double hi,
                               double *out, char *err)
{
    double x;
    if (atf_cli_double(opt, v, &x, err))
        return ATF_E_USAGE;
    if ((lo_open ? x <= lo : x < lo) || x >= hi) {
        atf_errorf(err, "%s: %s out of range (%s %g%s)", opt, v, lo_open ? ">" : ">=", lo,
                   isfinite(hi) ? ", below the upper limit" : "");
        return ATF_E_USAGE;
    }
    *out = x;
    return ATF_OK;
}

static atf_error parse_count(const char *opt, const char *v, long lo, long hi, int *out,
                             char *err)
{
    long n;
    atf_error e = atf_cli_int(opt, v, lo, hi, &n, err);
    if (!e)
        *out = (int)n;
    return e;
}

static atf_error parse_loss(const char *v, atf_loss_kind *out, char *err)
{
    if (!strcmp(v, "squared") || !strcmp(v, "xent")) {
        *out = v[0] == 's' ? ATF_LOSS_SQUARED : ATF_LOSS_XENT;
        return ATF_OK;
    }
    atf_errorf(err, "loss '%s' unknown (expected squared or xent)", v);
    return ATF_E_USAGE;
}

/* The optimiser options; *used = 0 for the others. */
static atf_error optimizer_option(int c, const char *v, atf_train_settings *t, int *used,
                                  char *err)
{
    *used = 1;
    switch (c) {
    case ATF_CLI_OPT_OPTIMIZER: return atf_optimizer_parse(v, &t->optimizer, err);
    case ATF_CLI_OPT_LR: return atf_cli_double_range("--lr", v, 0.0, 1, INFINITY, &t->lr, err);
    case ATF_CLI_OPT_MOMENTUM: return atf_cli_double_range("--momentum", v, 0.0, 0, 1.0, &t->momentum, err);
    case ATF_CLI_OPT_BETA1: return atf_cli_double_range("--beta1", v, 0.0, 0, 1.0, &t->beta1, err);
    case ATF_CLI_OPT_BETA2: return atf_cli_double_range("--beta2", v, 0.0, 0, 1.0, &t->beta2, err);
    case ATF_CLI_OPT_ADAM_EPS: return atf_cli_double_range("--adam-eps", v, 0.0, 1, INFINITY, &t->eps, err);
    case ATF_CLI_OPT_LR_SCHEDULE: return atf_lr_schedule_parse(v, &t->schedule, err);
    case ATF_CLI_OPT_EPOCHS: return parse_count("--epochs", v, 1, 1000000, &t->epochs, err);
    case ATF_CLI_OPT_BATCH: return parse_count("--batch", v, 1, 1L << 30, &t->batch, err);
    case ATF_CLI_OPT_TRAIN_LOSS: return parse_loss(v, &t->loss, err);
    }
    *used = 0;
    return ATF_OK;
}

/* --pool N, or "all" (−1): every example the test split leaves. */
static atf_error parse_pool(const char *v, int *pool, char *err)
{
    if (!strcmp(v, "all")) {
        *pool = -1;
        return ATF_OK;
    }
    return parse_count("--pool", v, 1, 1L << 30, pool, err);
}

atf_error atf_cli_train_option(int c, const char *v, atf_train_settings *t,
                               atf_cli_train_extra extra, int *used, char *err)
{
    atf_error e = optimizer_option(c, v, t, used, err);
    if (e || *used)
        return e;
    long n;
    *used = 1;
    switch (c) {
    case ATF_CLI_OPT_SHUFFLE_SEED:
        if (!(e = atf_cli_int("--shuffle-seed", v, 0, 0x7fffffffL, &n, err)))
            t->seed = (uint64_t)n;
        return e;
    case ATF_CLI_OPT_STOP: return atf_stopping_parse(v, &t->stopping, err);
    case ATF_CLI_OPT_VAL:
        if (extra.val)
            return parse_count("--val", v, 0, 1L << 30, extra.val, err);
        break;
    case ATF_CLI_OPT_EVAL_EVERY:
        return parse_count("--eval-every", v, 1, 1000000, &t->eval_every, err);
    case ATF_CLI_OPT_PATIENCE: return parse_count("--patience", v, 0, 1000000, &t->patience, err);
    case ATF_CLI_OPT_SAMPLING: return atf_sampling_parse(v, &t->sampling, err);
    case ATF_CLI_OPT_RESAMPLE: t->sampling = ATF_SAMPLE_RESAMPLE; return ATF_OK;
    case ATF_CLI_OPT_POOL:
        if (extra.pool)
            return parse_pool(v, extra.pool, err);
        break;
    }
    *used = 0;
    return ATF_OK;
}
