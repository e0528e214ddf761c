/* cmd_features.c — `atf features`: data + an MLP → a factored atf-problem file (docs/cli.md). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "atf_cli.h"
#include "cli_tangent.h"
#include "atf_problem.h"
#include "atf_solver.h"
#include "atf_features.h"
#include "atf_report.h"

static void usage(FILE *out)
{
    fprintf(out,
        "usage: atf features --data SRC -o PROBLEM.h5 [options]\n"
        "\n"
        "Writes the tangent-feature problem (16) of an MLP at its weights: factored blocks W1..WL\n"
        "(and b_l for the layers with a bias) with H = layer inputs and D = df/da (it carries\n"
        "sigma'(a)), r = y - f0, /y, /f0,\n"
        "/labels and the held-out split as /test.\n"
        "\n"
        "data:\n"
        "  --data SRC           synthetic[:d=16,r=2,noise=0] | mnist[:DIR] | fashion-mnist[:DIR]\n"
        "                       | FILE.h5; without DIR, ROOT/mnist or ROOT/fashion-mnist of the\n"
        "                       first data root that has it: the ':'-separated directories of\n"
        "                       $ATF_DATA if set, else data/ of atf's repository (where\n"
        "                       scripts/fetch_mnist.sh puts MNIST) and /usr/share/datasets\n"
        "  --classes 2,3        keep these classes (label order: first -> -1, second -> +1)\n"
        "  --n-train N --n-test N   sizes (default 500 / 500; HDF5 file: all / 0); --n-train 0:\n"
        "                       every example the test split leaves\n"
        "  --data-seed S        sampling / synthetic seed (default 1)\n"
        "  --standardize | --no-standardize   per-image zero mean, unit variance\n"
        "                       (default on for mnist and fashion-mnist; off: pixels x/255)\n"
        "  --split S            pooled (default: train and test drawn from all images) or\n"
        "                       official (train from train-*, test from t10k-*: 60 000 /\n"
        "                       10 000 for fashion-mnist)\n"
        "  --targets T          labels | given | teacher | teacher-sign (default: labels when\n"
        "                       the data has labels only, else given)\n"
        "  --teacher-seed S     seed of the independent teacher network (default 99991)\n"
        "network:\n"
        "  --mlp MLP.h5         use this network, or create one with:\n"
        "  --widths 784,128,128,1   layer widths (default D,128,128,C)\n"
        "  --seed S             initialisation seed (default 1)\n"
        "  --bias[=LAYERS]      layers have biases (default: none, as in the paper): --bias or\n"
        "                       --bias=all every layer, --bias=1,3 layers 1 and 3 (1-based;\n"
        "                       --bias=layers:1 the first alone), --bias=0 none\n"
        "  --activation SPEC    after every hidden layer, or one SPEC per hidden layer separated\n"
        "                       by ';' (default relu): relu | leaky_relu[:slope=0.01] | tanh |\n"
        "                       sigmoid | gelu | softplus[:beta=1,threshold=20] | identity\n"
        "                       (PyTorch's functions)\n"
        "  --param P            standard | ntk (default standard)\n"
        "  --init I             he (He-normal, default) | torch (PyTorch's nn.Linear default,\n"
        "                       uniform +-1/sqrt(fan_in); standard parameterisation only)\n"
        "output:\n"
        "  -o PROBLEM.h5        the problem file (written atomically)\n"
        "  --penalty SPEC       penalty of every block (default sq)\n"
        "  --save-mlp MLP.h5    also save the network\n"
        "  --json               print the summary as one line of JSON\n");
}

typedef struct {
    atf_data_options data;
    atf_net_options net;
    const char *out, *penalty, *save_mlp;
    int json;
    char command[ATF_COMMANDLEN]; /* recorded in the problem file */
} features_args;

enum { OPT_PENALTY = ATF_CLI_OPT_FIRST, OPT_SAVE_MLP, OPT_JSON };

static const struct option options[] = {
    ATF_CLI_DATA_OPTIONS,
    ATF_CLI_NET_OPTIONS,
    {"output", required_argument, NULL, 'o'},
    {"penalty", required_argument, NULL, OPT_PENALTY},
    {"save-mlp", required_argument, NULL, OPT_SAVE_MLP},
    {"json", no_argument, NULL, OPT_JSON},
    ATF_CLI_HELP_OPTION,
    {NULL, 0, NULL, 0}};

static atf_error apply_option(int c, const char *val, features_args *a, char *err)
{
    int used = 0;
    atf_error e = ATF_OK;
    switch (c) {
    case 'o': a->out = val; break;
    case OPT_PENALTY: a->penalty = val; break;
    case OPT_SAVE_MLP: a->save_mlp = val; break;
    case OPT_JSON: a->json = 1; break;
    case 'h': break; /* atf_cli_wants_help has seen it */
    default:
        e = atf_cli_tangent_option(c, val, &a->data, &a->net, &used, err);
        if (!e && !used) /* ATF_CLI_BAD_OPTION: err holds the message */
            e = ATF_E_USAGE;
    }
    return e;
}

static atf_error parse_args(int argc, char **argv, features_args *a, char *err)
{
    atf_error e = ATF_OK;
    int c;
    atf_cli_getopt_begin();
    while (!e && (c = atf_cli_getopt("features", argc, argv, "o:h", options, err)) != -1)
        e = apply_option(c, optarg, a, err);
    if (!e)
        e = atf_cli_positionals("features", argc, argv, 0, 0, "", NULL, NULL, err);
    if (!e)
        e = atf_cli_add_data_dirs(&a->data, err);
    if (!e && !a->out) {
        atf_errorf(err, "missing -o PROBLEM.h5");
        e = ATF_E_USAGE;
    }
    return e;
}

static void print_json(const features_args *a, const atf_task *t, const atf_mlp *m,
                       const atf_problem *p)
{
    json_t *o = json_object(), *classes = json_array(), *widths = json_array();
    for (int j = 0; j < t->nclasses; j++)
        json_array_append_new(classes, json_integer(t->classes[j]));
    for (int l = 0; l <= m->arch.L; l++)
        json_array_append_new(widths, json_integer(m->arch.widths[l]));
    json_object_set_new(o, "status", json_string("ok"));
    json_object_set_new(o, "output", atf_json_text(a->out));
    json_object_set_new(o, "source", atf_json_text(t->source_name));
    json_object_set_new(o, "classes", classes);
    json_object_set_new(o, "n_train", json_integer(t->train.N));
    json_object_set_new(o, "n_test", json_integer(t->test.N));
    json_object_set_new(o, "outputs", json_integer(p->C));
    json_object_set_new(o, "rows", json_integer(p->M));
    json_object_set_new(o, "blocks", json_integer(p->nblocks));
    json_object_set_new(o, "parameters", json_integer(atf_mlp_nparams(m)));
    json_object_set_new(o, "widths", widths);
    char acts[ATF_MAX_LAYERS * ATF_ACTIVATION_SPECLEN];
    atf_arch_activation_specs(&m->arch, acts, sizeof acts);
    json_object_set_new(o, "activation", atf_json_text(acts[0] ? acts : "relu"));
    json_t *bias = json_array();
    for (int l = 0; l < m->arch.L; l++)
        if (m->arch.bias[l])
            json_array_append_new(bias, json_integer(l + 1));
    json_object_set_new(o, "bias_layers", bias);
    json_object_set_new(o, "targets", atf_json_text(atf_targets_name(t->targets)));
    if (!isnan(t->teacher_accuracy))
        json_object_set_new(o, "teacher_accuracy", json_real(t->teacher_accuracy));
    json_object_set_new(o, "fingerprint", atf_json_text(p->fingerprint));
    atf_cli_print_json(o);
}

static void print_summary(const features_args *a, const atf_task *t, const atf_mlp *m,
                          const atf_problem *p)
{
    if (a->json) {
        print_json(a, t, m, p);
        return;
    }
    char classes[256] = "";
    for (int j = 0, n = 0; j < t->nclasses && n < (int)sizeof classes - 16; j++)
        n += snprintf(classes + n, sizeof classes - n, "%s%d", j ? "," : "", t->classes[j]);
    char widths[256] = "";
    for (int l = 0, n = 0; l <= m->arch.L; l++)
        n += snprintf(widths + n, sizeof widths - n, "%s%d", l ? "," : "", m->arch.widths[l]);
    char acts[ATF_MAX_LAYERS * ATF_ACTIVATION_SPECLEN]; /* shown unless relu */
    atf_arch_activation_specs(&m->arch, acts, sizeof acts);
    int relu = !acts[0] || !strcmp(acts, "relu");
    printf("features: %s%s%s: %d train + %d test examples, %d output%s, MLP %s (%s%s%s%s, %lld "
           "parameters), %d blocks, targets %s",
           t->source_name, t->nclasses ? " classes " : "", classes, t->train.N, t->test.N,
           p->C, p->C == 1 ? "" : "s", widths, atf_param_name(m->arch.param), relu ? "" : ", ",
           relu ? "" : acts, atf_arch_has_bias(&m->arch) ? ", bias" : "",
           (long long)atf_mlp_nparams(m), p->nblocks, atf_targets_name(t->targets));
    if (!isnan(t->teacher_accuracy))
        printf(" (teacher accuracy %.1f%%)", 100.0 * t->teacher_accuracy);
    printf(" -> %s\n", a->out);
}

/* What only the command knows: its command line, the data source and, where it is used (image
 * sampling, synthetic data; a user's HDF5 file keeps its order), the seed. */
static void record_provenance(const features_args *a, const atf_task *t, atf_provenance *pv)
{
    snprintf(pv->command, sizeof pv->command, "%s", a->command);
    snprintf(pv->data_source, sizeof pv->data_source, "%s", a->data.source);
    pv->has_data_seed = strcmp(t->source_name, "hdf5") != 0;
    pv->data_seed = (int64_t)a->data.seed;
}

static int run(features_args *a)
{
    char err[ATF_ERRLEN] = "";
    atf_arch arch;
    atf_task task;
    atf_mlp *m = NULL;
    atf_problem *p = NULL;
    int teacher = a->data.targets == ATF_TARGETS_TEACHER ||
                  a->data.targets == ATF_TARGETS_TEACHER_SIGN;
    if (teacher && !a->net.mlp_path[0] && a->net.seed == a->data.teacher_seed)
        return atf_cli_fail("features", ATF_E_USAGE,
                            "--seed equals --teacher-seed: the teacher must be an independent "
                            "network");
    atf_error e = atf_cli_check_output(a->out, err);
    if (!e && a->save_mlp)
        e = atf_cli_check_output(a->save_mlp, err);
    if (!e)
        e = atf_net_arch(&a->net, &arch, err);
    if (e)
        return atf_cli_fail("features", e, err);
    if ((e = atf_task_load(&a->data, &arch, &task, err)))
        return atf_cli_fail("features", e, err);
    e = atf_net_build(&a->net, &task, &m, err);
    if (!e)
        e = atf_tangent_problem(m, &task, a->penalty, &p, err);
    if (!e)
        record_provenance(a, &task, &p->prov);
    if (!e)
        e = atf_problem_write(a->out, p, err);
    if (!e && a->save_mlp)
        e = atf_mlp_write(a->save_mlp, m, err);
    if (!e)
        print_summary(a, &task, m, p);
    atf_problem_free(p);
    atf_mlp_free(m);
    atf_task_free(&task);
    return e ? atf_cli_fail("features", e, err) : 0;
}

int atf_cmd_features(int argc, char **argv)
{
    if (atf_cli_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    features_args a = {atf_data_options_default(), atf_net_options_default(), NULL, NULL, NULL,
                       0, ""};
    atf_cli_command_line(argc, argv, a.command, sizeof a.command); /* before getopt reorders */
    char err[ATF_ERRLEN] = "";
    atf_error e = parse_args(argc, argv, &a, err);
    if (e)
        return atf_cli_fail("features", e, err);
    return run(&a);
}
