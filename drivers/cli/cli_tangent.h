/* cli_tangent.h — the data and network options shared by the commands that build a task and a
 * network (features, train, predict, the experiments): one option table fragment and one
 * handler, so that every such command accepts the same options with the same messages.
 *
 * Use: put ATF_CLI_DATA_OPTIONS and ATF_CLI_NET_OPTIONS in the command's `struct option` table
 * (atf_cli.h shows the pattern) and pass every code getopt returns to atf_cli_tangent_option
 * first; it applies the option (*used = 1) or leaves it to the command (*used = 0):
 *
 *   default:
 *       e = atf_cli_tangent_option(c, optarg, &a->data, &a->net, &used, err);
 *       if (!e && !used) e = ATF_E_USAGE; // ATF_CLI_BAD_OPTION: err holds the message
 */
#ifndef ATF_CLI_TANGENT_H
#define ATF_CLI_TANGENT_H

#include <getopt.h>

#include "atf_error.h"
#include "atf_mlp.h"

/* Option codes (above the commands' own codes, which start at ATF_CLI_OPT_FIRST). */
enum {
    ATF_CLI_OPT_DATA = 0x1000,
    ATF_CLI_OPT_CLASSES,
    ATF_CLI_OPT_N_TRAIN,
    ATF_CLI_OPT_N_TEST,
    ATF_CLI_OPT_DATA_SEED,
    ATF_CLI_OPT_STANDARDIZE,
    ATF_CLI_OPT_NO_STANDARDIZE,
    ATF_CLI_OPT_TARGETS,
    ATF_CLI_OPT_TEACHER_SEED,
    ATF_CLI_OPT_SPLIT,
    ATF_CLI_OPT_MLP,
    ATF_CLI_OPT_WIDTHS,
    ATF_CLI_OPT_SEED,
    ATF_CLI_OPT_BIAS,
    ATF_CLI_OPT_PARAM,
    ATF_CLI_OPT_INIT,
    ATF_CLI_OPT_ACTIVATION
};

/* The data options: --data SRC, --classes LIST, --n-train N, --n-test N, --data-seed S,
 * --standardize, --no-standardize, --targets T, --teacher-seed S, --split pooled|official. */
#define ATF_CLI_DATA_OPTIONS                                             \
    {"data", required_argument, NULL, ATF_CLI_OPT_DATA},                 \
    {"classes", required_argument, NULL, ATF_CLI_OPT_CLASSES},           \
    {"n-train", required_argument, NULL, ATF_CLI_OPT_N_TRAIN},           \
    {"n-test", required_argument, NULL, ATF_CLI_OPT_N_TEST},             \
    {"data-seed", required_argument, NULL, ATF_CLI_OPT_DATA_SEED},       \
    {"standardize", no_argument, NULL, ATF_CLI_OPT_STANDARDIZE},         \
    {"no-standardize", no_argument, NULL, ATF_CLI_OPT_NO_STANDARDIZE},   \
    {"targets", required_argument, NULL, ATF_CLI_OPT_TARGETS},           \
    {"teacher-seed", required_argument, NULL, ATF_CLI_OPT_TEACHER_SEED}, \
    {"split", required_argument, NULL, ATF_CLI_OPT_SPLIT}

/* The network options: --mlp FILE, --widths LIST, --seed S, --bias[=all|none|LAYERS],
 * --activation SPEC[;SPEC...], --param P, --init I. (--bias takes its value only in the
 * --bias=VALUE form: a bare --bias means every layer.) */
#define ATF_CLI_NET_OPTIONS                                              \
    {"mlp", required_argument, NULL, ATF_CLI_OPT_MLP},                   \
    {"widths", required_argument, NULL, ATF_CLI_OPT_WIDTHS},             \
    {"seed", required_argument, NULL, ATF_CLI_OPT_SEED},                 \
    {"bias", optional_argument, NULL, ATF_CLI_OPT_BIAS},                 \
    {"activation", required_argument, NULL, ATF_CLI_OPT_ACTIVATION},     \
    {"param", required_argument, NULL, ATF_CLI_OPT_PARAM},               \
    {"init", required_argument, NULL, ATF_CLI_OPT_INIT}

/* Apply option code c with its value (optarg; NULL for the flags) to the data options d or the
 * network options n: *used = 1 if c is one of the codes above, else 0 and nothing changes (d or
 * n may be NULL for a command that takes only the other kind: their codes are then not used).
 * Bad values: ATF_E_USAGE with a message naming the option. */
atf_error atf_cli_tangent_option(int c, const char *value, atf_data_options *d,
                                 atf_net_options *n, int *used, char *err);

/* Give the data options the data roots to search (atf_cli_data_roots: $ATF_DATA, or the
 * repository's data/ and /usr/share/datasets), so that `--data mnist` works from any working
 * directory. Call it once on the options before atf_task_load. */
atf_error atf_cli_add_data_dirs(atf_data_options *d, char *err);

#endif
