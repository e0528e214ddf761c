/* cmd_features.c — `atf features`: data + an MLP → a factored atf-problem file (docs/cli.md).
 *
 * Under `mpirun -np K` (docs/record/solver.md §19, "Tangent features over processes") each rank
 * forms the features of its own examples only, the whole chunks atf_shard_range gives it (the cut
 * `mpirun -np K atf solve` reads), of the training and of the test split; rank 0 writes the file
 * with atf_problem_write_rows, pulling every other rank's rows of each H and D slice by slice
 * as the file and the fingerprint need them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf_cli.h"
#include "cli_tangent.h"
#include "atf_problem.h"
#include "atf_problem_rows.h"
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
        "                       uniform +-1/sqrt(fan_in); standard parameterisation only) |\n"
        "                       lecun (N(0, 1/fan_in), zero biases)\n"
        "output:\n"
        "  -o PROBLEM.h5        the problem file (written atomically)\n"
        "  --penalty SPEC       penalty of every block (default sq)\n"
        "  --save-mlp MLP.h5    also save the network\n"
        "  --json               print the summary as one line of JSON\n"
        "\n"
        "Under mpirun -np K (an MPI build) each rank forms the features of its own run of\n"
        "examples of both splits (the cut mpirun -np K atf solve reads) and rank 0 writes\n"
        "the file from every rank's rows, slice by slice; the data are loaded on every rank\n"
        "(docs/record/solver.md §19, \"Tangent features over processes\").\n");
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
    fprintf(atf_cli_stdout(), "features: %s%s%s: %d train + %d test examples, %d output%s, MLP %s (%s%s%s%s, %lld "
           "parameters), %d blocks, targets %s",
           t->source_name, t->nclasses ? " classes " : "", classes, t->train.N, t->test.N,
           p->C, p->C == 1 ? "" : "s", widths, atf_param_name(m->arch.param), relu ? "" : ", ",
           relu ? "" : acts, atf_arch_has_bias(&m->arch) ? ", bias" : "",
           (long long)atf_mlp_nparams(m), p->nblocks, atf_targets_name(t->targets));
    if (!isnan(t->teacher_accuracy))
        fprintf(atf_cli_stdout(), " (teacher accuracy %.1f%%)", 100.0 * t->teacher_accuracy);
    fprintf(atf_cli_stdout(), " -> %s\n", a->out);
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

/* ---- under mpirun: each rank forms the features of its own examples ----
 * Every rank loads the data and builds the network (both cheap next to the features), takes
 * its run of whole chunks of each split (atf_shard_range) and forms their problem chunk by chunk
 * (atf_tangent_problem_examples). Rank 0 gathers f0 (N·C numbers per split) and writes the file:
 * atf_problem_write_rows asks for each array in turn, and rank 0 asks each rank for its rows of
 * it (a request), which come in slices of at most ROWS_SLICE bytes, are checked, hashed and
 * written by hyperslab. The other ranks answer requests until rank 0 says stop. A failure is
 * agreed on (atf_cli_ranks_agree) at the three points where ranks wait for each other, and told
 * once: by rank 0 when every rank meets it alike, else by the lowest rank that met it. */

#define ROWS_SLICE ((int64_t)64 << 20)

static int64_t slice_rows(int64_t width)
{
    int64_t per = ROWS_SLICE / (int64_t)sizeof(double) / (width > 0 ? width : 1);
    return per < 1 ? 1 : per;
}

typedef struct {
    int N;              /* examples of the split (0: no such split) */
    int first, count;   /* this rank's */
    atf_problem *part;  /* their problem */
} split_part;

/* This rank's run of a split, named in a refusal (more ranks than chunks of examples). */
static atf_error take_share(const char *name, int N, const atf_exp_ranks *rk, split_part *sp,
                            char *err)
{
    char msg[ATF_ERRLEN];
    sp->N = N;
    if (N == 0)
        return ATF_OK;
    atf_error e = atf_shard_range(N, rk->rank, rk->size, &sp->first, &sp->count, msg);
    if (e)
        atf_errorf(err, "the %s split: %s (use fewer ranks)", name, msg);
    return e;
}

/* The problem of this rank's examples of ds. The inputs of the other examples are never read:
 * this rank's rows of X are moved to its front and the rest given back (ds->X then holds them
 * only, until it is freed after use). */
static atf_error form_part(const features_args *a, const atf_mlp *m, const char *name,
                           atf_dataset *ds, split_part *sp, char *err)
{
    if (sp->N == 0)
        return ATF_OK;
    size_t D = (size_t)ds->D;
    memmove(ds->X, ds->X + (size_t)sp->first * D, (size_t)sp->count * D * sizeof *ds->X);
    double *x = realloc(ds->X, (size_t)sp->count * D * sizeof *x);
    if (x)
        ds->X = x;
    atf_dataset mine = {sp->count, ds->D, ds->C, ds->X, ds->Y + (size_t)sp->first * ds->C,
                        ds->labels ? ds->labels + sp->first : NULL};
    char what[128]; /* its messages count rows from its first example */
    snprintf(what, sizeof what, "features: %s examples %d … %d (rows from example %d)", name,
             sp->first, sp->first + sp->count - 1, sp->first);
    atf_error e = atf_tangent_problem_examples(m, &mine, atf_shard_chunk(sp->N), a->penalty,
                                               what, &sp->part, err);
    free(ds->X); /* no longer needed */
    ds->X = NULL;
    return e;
}

/* Room at rank 0 for f0 of every example of a split (before the ranks agree to go on). */
static atf_error f0_room(const atf_exp_ranks *rk, const atf_dataset *ds, double **f0, char *err)
{
    if (rk->rank != 0 || ds->N == 0)
        return ATF_OK;
    if (!(*f0 = malloc((size_t)ds->N * ds->C * sizeof **f0))) {
        atf_errorf(err, "features: out of memory for f0 of %d examples", ds->N);
        return ATF_E_NOMEM;
    }
    return ATF_OK;
}

/* f0 of every example of a split into rank 0's f0 (from each rank's part). */
static void gather_f0(const atf_exp_ranks *rk, const split_part *sp, double *f0)
{
    if (sp->N == 0)
        return;
    size_t C = (size_t)sp->part->C;
    if (rk->rank != 0) {
        atf_cli_ranks_send(0, sp->part->f0, (size_t)sp->count * C * sizeof(double));
        return;
    }
    int first, count;
    for (int r = 0; r < rk->size; r++) {
        atf_shard_range(sp->N, r, rk->size, &first, &count, NULL);
        if (r == 0)
            memcpy(f0, sp->part->f0, (size_t)count * C * sizeof *f0);
        else
            atf_cli_ranks_recv(r, f0 + (size_t)first * C, (size_t)count * C * sizeof *f0);
    }
}

/* The whole split as atf_problem_write_rows takes it: r = y − f0, y, f0 (taken over), labels
 * and the blocks' names, sizes and penalties (their rows stay with the ranks). */
static atf_error make_head(const atf_dataset *ds, const split_part *sp, double **f0,
                           atf_problem **out, char *err)
{
    const atf_problem *part = sp->part;
    size_t M = (size_t)sp->N * part->C;
    atf_problem *p = calloc(1, sizeof *p);
    if (p) {
        p->N = sp->N;
        p->C = part->C;
        p->M = (int)M;
        p->f0 = *f0;
        *f0 = NULL;
        p->r = malloc(M * sizeof *p->r);
        p->y = malloc(M * sizeof *p->y);
        p->labels = ds->labels ? malloc((size_t)sp->N * sizeof *p->labels) : NULL;
        p->blocks = calloc((size_t)part->nblocks, sizeof *p->blocks);
    }
    if (!p || !p->r || !p->y || (ds->labels && !p->labels) || !p->blocks) {
        atf_problem_free(p);
        atf_errorf(err, "features: out of memory for the %d examples' targets", sp->N);
        return ATF_E_NOMEM;
    }
    memcpy(p->y, ds->Y, M * sizeof *p->y);
    for (size_t i = 0; i < M; i++)
        p->r[i] = ds->Y[i] - p->f0[i];
    if (ds->labels)
        memcpy(p->labels, ds->labels, (size_t)sp->N * sizeof *p->labels);
    p->nblocks = part->nblocks;
    for (int b = 0; b < part->nblocks; b++) {
        p->blocks[b] = part->blocks[b];
        p->blocks[b].N = p->N;
        p->blocks[b].M = p->M;
        p->blocks[b].H = p->blocks[b].D = NULL;
    }
    *out = p;
    return ATF_OK;
}

/* Rank 0's source of rows: its own from memory, the other ranks' asked for and received. */
typedef struct {
    const atf_exp_ranks *rk;
    const split_part *split[2]; /* training, test */
    double *slice;
    size_t cap; /* doubles */
} pull_ctx;

static atf_error pull_rows(void *ctx, int test, int block, const char *array, int64_t nrows,
                           int64_t width, atf_rows_out *out, char *err)
{
    (void)nrows; /* the ranks' runs add up to it (atf_rows_put checks the count) */
    pull_ctx *pc = ctx;
    const split_part *sp = pc->split[test];
    int is_h = !strcmp(array, "H"), C = sp->part->C;
    int64_t per = slice_rows(width);
    if ((size_t)(per * width) > pc->cap) { /* before any rank is asked */
        free(pc->slice);
        pc->cap = 0;
        if (!(pc->slice = malloc((size_t)(per * width) * sizeof *pc->slice))) {
            atf_errorf(err, "features: out of memory for a slice of %lld rows",
                       (long long)per);
            return ATF_E_NOMEM;
        }
        pc->cap = (size_t)(per * width);
    }
    atf_error e = ATF_OK;
    for (int r = 0; r < pc->rk->size && !e; r++) {
        int first, count;
        atf_shard_range(sp->N, r, pc->rk->size, &first, &count, NULL);
        int64_t rows = is_h ? count : (int64_t)count * C;
        if (r == 0) {
            const atf_block *b = &sp->part->blocks[block];
            e = atf_rows_put(out, is_h ? b->H : b->D, rows);
            continue;
        }
        int req[3] = {test, block, is_h ? 0 : 1};
        atf_cli_ranks_send(r, req, sizeof req);
        for (int64_t at = 0; at < rows; at += per) { /* all of them: rank r sends them all */
            int64_t n = rows - at < per ? rows - at : per;
            atf_cli_ranks_recv(r, pc->slice, (size_t)(n * width) * sizeof *pc->slice);
            if (!e)
                e = atf_rows_put(out, pc->slice, n);
        }
    }
    return e;
}

/* Another rank: send the rows rank 0 asks for, slice by slice, until it says stop. */
static void serve_rows(const split_part *split[2])
{
    for (;;) {
        int req[3];
        atf_cli_ranks_recv(0, req, sizeof req);
        if (req[0] < 0)
            return;
        const atf_problem *p = split[req[0]]->part;
        const atf_block *b = &p->blocks[req[1]];
        const double *x = req[2] ? b->D : b->H;
        int64_t width = req[2] ? b->cols : b->rows, rows = req[2] ? p->M : p->N;
        int64_t per = slice_rows(width);
        for (int64_t at = 0; at < rows; at += per) {
            int64_t n = rows - at < per ? rows - at : per;
            atf_cli_ranks_send(0, x + at * width, (size_t)(n * width) * sizeof *x);
        }
    }
}

/* Rank 0: the heads, the file from every rank's rows, the network; fingerprint for the
 * summary. */
static atf_error write_from_ranks(const features_args *a, const atf_exp_ranks *rk,
                                  const atf_task *task, const atf_mlp *m,
                                  const split_part *split[2], double *f0[2], atf_problem **head,
                                  char *err)
{
    atf_problem *test = NULL;
    atf_error e = make_head(&task->train, split[0], &f0[0], head, err);
    if (!e && split[1]->N > 0 && !(e = make_head(&task->test, split[1], &f0[1], &test, err)))
        (*head)->test = test;
    if (!e) {
        atf_provenance *pv = &(*head)->prov;
        record_provenance(a, task, pv);
        pv->has_standardize = 1;
        pv->standardize = task->standardized;
        if (atf_mlp_fingerprint(m, pv->mlp_fingerprint)) {
            atf_errorf(err, "features: out of memory for the fingerprints");
            e = ATF_E_NOMEM;
        }
    }
    if (!e) {
        pull_ctx pc = {rk, {split[0], split[1]}, NULL, 0};
        atf_rows_source src = {pull_rows, &pc};
        e = atf_problem_write_rows(a->out, *head, &src, (*head)->fingerprint, err);
        free(pc.slice);
    }
    if (!e && a->save_mlp)
        e = atf_mlp_write(a->save_mlp, m, err);
    return e;
}

static int run_ranks(features_args *a)
{
    const atf_exp_ranks *rk = atf_cli_ranks();
    char err[ATF_ERRLEN] = "";
    atf_arch arch;
    atf_task task;
    memset(&task, 0, sizeof task);
    atf_mlp *m = NULL;
    atf_problem *head = NULL;
    split_part tr = {0, 0, 0, NULL}, te = {0, 0, 0, NULL};
    const split_part *split[2] = {&tr, &te};
    double *f0[2] = {NULL, NULL};
    int tell = 1, teacher = a->data.targets == ATF_TARGETS_TEACHER ||
                        a->data.targets == ATF_TARGETS_TEACHER_SIGN;
    atf_error e = ATF_OK;
    if (teacher && !a->net.mlp_path[0] && a->net.seed == a->data.teacher_seed) {
        atf_errorf(err, "--seed equals --teacher-seed: the teacher must be an independent "
                   "network");
        e = ATF_E_USAGE;
    }
    if (!e && rk->rank == 0) /* rank 0 writes */
        e = atf_cli_check_output(a->out, err);
    if (!e && rk->rank == 0 && a->save_mlp)
        e = atf_cli_check_output(a->save_mlp, err);
    if (!e)
        e = atf_net_arch(&a->net, &arch, err);
    if (!e)
        e = atf_task_load(&a->data, &arch, &task, err);
    if (!e)
        e = atf_net_build(&a->net, &task, &m, err);
    if (!e)
        e = take_share("training", task.train.N, rk, &tr, err);
    if (!e)
        e = take_share("test", task.test.N, rk, &te, err);
    if (!e)
        e = form_part(a, m, "training", &task.train, &tr, err);
    if (!e)
        e = form_part(a, m, "test", &task.test, &te, err);
    if (!e)
        e = f0_room(rk, &task.train, &f0[0], err);
    if (!e)
        e = f0_room(rk, &task.test, &f0[1], err);
    if ((e = atf_cli_ranks_agree(e, &tell)))
        goto done;
    gather_f0(rk, &tr, f0[0]);
    gather_f0(rk, &te, f0[1]);
    if (rk->rank == 0) {
        e = write_from_ranks(a, rk, &task, m, split, f0, &head, err);
        int stop[3] = {-1, 0, 0};
        for (int r = 1; r < rk->size; r++)
            atf_cli_ranks_send(r, stop, sizeof stop);
    } else {
        serve_rows(split);
    }
    if ((e = atf_cli_ranks_agree(e, &tell)))
        goto done;
    if (rk->rank == 0)
        print_summary(a, &task, m, head);
done:
    free(f0[0]);
    free(f0[1]);
    atf_problem_free(head);
    atf_problem_free(tr.part);
    atf_problem_free(te.part);
    atf_mlp_free(m);
    atf_task_free(&task);
    if (e && tell && !err[0]) /* a failure without its words: name it at least */
        snprintf(err, sizeof err, "%s", atf_error_name(e));
    return e ? atf_cli_fail("features", e, tell ? err : "") : 0;
}

int atf_cmd_features(int argc, char **argv)
{
    const atf_exp_ranks *rk = atf_cli_ranks();
    if (atf_cli_wants_help(argc, argv)) {
        if (!rk || rk->rank == 0)
            usage(atf_cli_stdout());
        return 0;
    }
    features_args a = {atf_data_options_default(), atf_net_options_default(), NULL, NULL, NULL,
                       0, ""};
    atf_cli_command_line(argc, argv, a.command, sizeof a.command); /* before getopt reorders */
    char err[ATF_ERRLEN] = "";
    int tell;
    atf_error e = parse_args(argc, argv, &a, err);
    if ((e = atf_cli_ranks_agree(e, &tell))) /* every rank alike: told once */
        return atf_cli_fail("features", e, tell ? err : "");
    return rk ? run_ranks(&a) : run(&a);
}
