/* cli_train.h — the options of the models trained by gradient descent (atf_train.h), shared by
 * `atf train` and `atf experiment samples`: one option table fragment and one handler, so both
 * accept the same options with the same messages.
 *
 * Use: put ATF_CLI_TRAIN_OPTIONS in the command's `struct option` table, plus the loss option
 * under the command's own name with code ATF_CLI_OPT_TRAIN_LOSS (`--loss` for train,
 * `--sgd-loss` for samples, whose --loss is problem (16)'s), and pass every code getopt returns
 * to atf_cli_train_option, which applies it (*used = 1) or leaves it to the command. */
#ifndef ATF_CLI_TRAIN_H
#define ATF_CLI_TRAIN_H

#include <getopt.h>

#include "atf_error.h"
#include "atf_train.h"

/* Option codes (above cli_tangent.h's). */
enum {
    ATF_CLI_OPT_OPTIMIZER = 0x1100,
    ATF_CLI_OPT_LR,
    ATF_CLI_OPT_MOMENTUM,
    ATF_CLI_OPT_BETA1,
    ATF_CLI_OPT_BETA2,
    ATF_CLI_OPT_ADAM_EPS,
    ATF_CLI_OPT_LR_SCHEDULE,
    ATF_CLI_OPT_EPOCHS,
    ATF_CLI_OPT_BATCH,
    ATF_CLI_OPT_SHUFFLE_SEED,
    ATF_CLI_OPT_STOP,
    ATF_CLI_OPT_VAL,
    ATF_CLI_OPT_PATIENCE,
    ATF_CLI_OPT_SAMPLING,
    ATF_CLI_OPT_RESAMPLE,
    ATF_CLI_OPT_POOL,
    ATF_CLI_OPT_EVAL_EVERY,
    ATF_CLI_OPT_TRAIN_LOSS
};

/* --optimizer sgd|adam, --lr LR, --momentum MU, --beta1 B, --beta2 B, --adam-eps E,
 * --lr-schedule cosine|constant, --epochs E, --batch B, --shuffle-seed S,
 * --stop final|best-val|test-selected, --val N, --patience K,
 * --sampling fixed|resample-each-epoch, --resample-each-epoch, --pool N|all, --eval-every K. */
#define ATF_CLI_TRAIN_OPTIONS                                                  \
    {"optimizer", required_argument, NULL, ATF_CLI_OPT_OPTIMIZER},             \
    {"lr", required_argument, NULL, ATF_CLI_OPT_LR},                           \
    {"momentum", required_argument, NULL, ATF_CLI_OPT_MOMENTUM},               \
    {"beta1", required_argument, NULL, ATF_CLI_OPT_BETA1},                     \
    {"beta2", required_argument, NULL, ATF_CLI_OPT_BETA2},                     \
    {"adam-eps", required_argument, NULL, ATF_CLI_OPT_ADAM_EPS},               \
    {"lr-schedule", required_argument, NULL, ATF_CLI_OPT_LR_SCHEDULE},         \
    {"epochs", required_argument, NULL, ATF_CLI_OPT_EPOCHS},                   \
    {"batch", required_argument, NULL, ATF_CLI_OPT_BATCH},                     \
    {"shuffle-seed", required_argument, NULL, ATF_CLI_OPT_SHUFFLE_SEED},       \
    {"stop", required_argument, NULL, ATF_CLI_OPT_STOP},                       \
    {"val", required_argument, NULL, ATF_CLI_OPT_VAL},                         \
    {"patience", required_argument, NULL, ATF_CLI_OPT_PATIENCE},               \
    {"sampling", required_argument, NULL, ATF_CLI_OPT_SAMPLING},               \
    {"resample-each-epoch", no_argument, NULL, ATF_CLI_OPT_RESAMPLE},          \
    {"pool", required_argument, NULL, ATF_CLI_OPT_POOL},                       \
    {"eval-every", required_argument, NULL, ATF_CLI_OPT_EVAL_EVERY}

/* Where the options without a field in atf_train_settings go: the number of validation
 * examples (--val; the command resolves its default) and the resampling pool (--pool N, or −1
 * for "all"). NULL: the command does not take that option. */
typedef struct {
    int *val;
    int *pool;
} atf_cli_train_extra;

/* Apply code c with its value to the settings t or to extra: *used = 1 if c is one of the codes
 * above, else 0 and nothing changes. Bad values: ATF_E_USAGE with a message naming the option. */
atf_error atf_cli_train_option(int c, const char *value, atf_train_settings *t,
                               atf_cli_train_extra extra, int *used, char *err);

/* A number in [lo, hi) ((lo, hi) with lo_open) for option opt; the message names the option and
 * the range. */
atf_error atf_cli_double_range(const char *opt, const char *v, double lo, int lo_open, double hi,
                               double *out, char *err);

#endif
