/* cmd_kernel.c — `atf kernel`: NTK, adapted, eq. 17, Theorem 1, label, final and path-averaged
 * kernels of a problem (and networks) with their cosine and centered alignments (docs/cli.md). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "atf_cli.h"
#include "atf_result.h"
#include "atf_solver.h"
#include "atf_kernel.h"
#include "atf_report.h"

static void usage(FILE *out)
{
    fprintf(out,
        "usage: atf kernel PROBLEM.h5 [RESULT.h5] -o KERNELS.h5 [--mlp0 MLP0.h5] [--mlp MLP.h5]\n"
        "                  [--path-points T] [--path-method auto|materialize|hadamard] [--json]\n"
        "\n"
        "Kernels over the problem's M = N*C training rows:\n"
        "  K0            the NTK at theta0 (sum over blocks of Hadamard Grams)\n"
        "  adapted       with RESULT: the exact adapted kernel of eq. 7, K = sum_l\n"
        "                (H M1^2 H^T) o (D M2^2 D^T), M1^2 = I + U diag(s1^2 - 1) U^T\n"
        "  paper17       with RESULT: eq. 17 as printed in the paper (drops cross terms; equals\n"
        "                eq. 7 only for vector blocks) - for comparison\n"
        "  theorem1      with RESULT: K0 + (s^2 - 1) |beta|^-2 K_label (Theorem 1, eq. 9)\n"
        "  label         (y - f0)(y - f0)^T\n"
        "  final         with --mlp: the NTK of the trained network\n"
        "  path_average  with --mlp0 and --mlp: the path-averaged kernel (eq. 2) over T points\n"
        "                (default 50, as in the paper's Appendix B.1)\n"
        "The network inputs are taken from the problem's block W1; --mlp0 must reproduce /f0.\n"
        "RESULT must come from PROBLEM (same fingerprint; else exit 2, docs/formats.md).\n"
        "\n"
        "Prints the cosine similarity <K,K'>/(|K||K'|) (the paper's Figure 1 number) and the\n"
        "centered kernel alignment between all pairs, and per layer against the label kernel.\n"
        "  -o KERNELS.h5   /K0, /adapted, ... and /alignment/{cosine,cka,layer_*} (atomic)\n"
        "  --json          the tables as one JSON line on stdout\n");
}

static json_t *matrix_json(int rows, int cols, const double *v)
{
    json_t *m = json_array();
    for (int a = 0; a < rows; a++) {
        json_t *row = json_array();
        for (int b = 0; b < cols; b++)
            json_array_append_new(row, atf_json_number(v[a * cols + b]));
        json_array_append_new(m, row);
    }
    return m;
}

static void print_json(const atf_kernel_report *r)
{
    json_t *o = json_object(), *kernels = json_array(), *blocks = json_array();
    for (int j = 0; j < r->nkernels; j++)
        json_array_append_new(kernels, atf_json_text(r->names[j]));
    for (int b = 0; b < r->nblocks; b++)
        json_array_append_new(blocks, atf_json_text(r->blocks[b]));
    json_object_set_new(o, "status", json_string("ok"));
    json_object_set_new(o, "rows", json_integer(r->M));
    json_object_set_new(o, "kernels", kernels);
    json_object_set_new(o, "blocks", blocks);
    json_object_set_new(o, "cosine", matrix_json(r->nkernels, r->nkernels, r->cosine));
    json_object_set_new(o, "cka", matrix_json(r->nkernels, r->nkernels, r->cka));
    json_object_set_new(o, "layer_cosine_label",
                        matrix_json(r->nblocks, r->nkernels, r->layer_cosine));
    json_object_set_new(o, "layer_cka_label", matrix_json(r->nblocks, r->nkernels, r->layer_cka));
    if (isfinite(r->theorem1_s))
        json_object_set_new(o, "theorem1_s", json_real(r->theorem1_s));
    atf_cli_print_json(o);
}

static void print_table(const char *title, int rows, char (*row_names)[16], const char *const *rn,
                        const atf_kernel_report *r, const double *v)
{
    fprintf(atf_cli_stdout(), "\n%s\n%-14s", title, "");
    for (int j = 0; j < r->nkernels; j++)
        fprintf(atf_cli_stdout(), " %12s", r->names[j]);
    fprintf(atf_cli_stdout(), "\n");
    for (int a = 0; a < rows; a++) {
        fprintf(atf_cli_stdout(), "%-14s", row_names ? row_names[a] : rn[a]);
        for (int j = 0; j < r->nkernels; j++) {
            double x = v[a * r->nkernels + j];
            if (isfinite(x))
                fprintf(atf_cli_stdout(), " %12.4f", x);
            else
                fprintf(atf_cli_stdout(), " %12s", "-");
        }
        fprintf(atf_cli_stdout(), "\n");
    }
}

static void print_text(const atf_kernel_report *r, const char *out)
{
    fprintf(atf_cli_stdout(), "kernel: %d rows, kernels:", r->M);
    for (int j = 0; j < r->nkernels; j++)
        fprintf(atf_cli_stdout(), " %s", r->names[j]);
    fprintf(atf_cli_stdout(), " -> %s\n", out);
    if (isfinite(r->theorem1_s))
        fprintf(atf_cli_stdout(), "theorem 1: s = %.6g\n", r->theorem1_s);
    print_table("cosine similarity <K,K'>/(|K||K'|)", r->nkernels, (char(*)[16])r->names, NULL, r,
                r->cosine);
    print_table("centered kernel alignment (Cortes et al. 2012)", r->nkernels,
                (char(*)[16])r->names, NULL, r, r->cka);
    const char *rn[256];
    int nb = r->nblocks < 256 ? r->nblocks : 256;
    for (int b = 0; b < nb; b++)
        rn[b] = r->blocks[b];
    print_table("per layer: cosine similarity of the layer's part with the label kernel", nb, NULL,
                rn, r, r->layer_cosine);
    print_table("per layer: centered alignment with the label kernel", nb, NULL, rn, r,
                r->layer_cka);
}

typedef struct {
    const char *pos[2], *out, *mlp0, *mlp;
    int npos, json;
    long T;
    atf_path_method method;
} kernel_args;

enum { OPT_MLP0 = ATF_CLI_OPT_FIRST, OPT_MLP, OPT_PATH_POINTS, OPT_PATH_METHOD, OPT_JSON };

static const struct option options[] = {
    {"output", required_argument, NULL, 'o'},
    {"mlp0", required_argument, NULL, OPT_MLP0},
    {"mlp", required_argument, NULL, OPT_MLP},
    {"path-points", required_argument, NULL, OPT_PATH_POINTS},
    {"path-method", required_argument, NULL, OPT_PATH_METHOD},
    {"json", no_argument, NULL, OPT_JSON},
    ATF_CLI_HELP_OPTION,
    {NULL, 0, NULL, 0}};

static atf_error apply_option(int c, const char *val, kernel_args *a, char *err)
{
    switch (c) {
    case 'o': a->out = val; break;
    case OPT_MLP0: a->mlp0 = val; break;
    case OPT_MLP: a->mlp = val; break;
    case OPT_PATH_POINTS: return atf_cli_int("--path-points", val, 1, 100000, &a->T, err);
    case OPT_PATH_METHOD: return atf_path_method_parse(val, &a->method, err);
    case OPT_JSON: a->json = 1; break;
    case 'h': break; /* atf_cli_wants_help has seen it */
    default: return ATF_E_USAGE; /* ATF_CLI_BAD_OPTION: err holds the message */
    }
    return ATF_OK;
}

static atf_error parse_args(int argc, char **argv, kernel_args *a, char *err)
{
    atf_error e = ATF_OK;
    int c;
    atf_cli_getopt_begin();
    while (!e && (c = atf_cli_getopt("kernel", argc, argv, "o:h", options, err)) != -1)
        e = apply_option(c, optarg, a, err);
    if (!e)
        e = atf_cli_positionals("kernel", argc, argv, 1, 2, "PROBLEM.h5", a->pos, &a->npos, err);
    if (!e && !a->out) {
        atf_errorf(err, "expected PROBLEM.h5 [RESULT.h5] -o KERNELS.h5");
        e = ATF_E_USAGE;
    }
    return e;
}

static atf_error load(const kernel_args *a, atf_problem **p, atf_result **res, atf_mlp **m0,
                      atf_mlp **m, char *err)
{
    atf_error e = atf_problem_read(a->pos[0], p, err);
    if (!e && a->npos == 2)
        e = atf_result_read(a->pos[1], res, err);
    if (!e && a->npos == 2)
        e = atf_cli_check_pair("kernel", *res, a->pos[1], *p, a->pos[0], err);
    if (!e && a->mlp0)
        e = atf_mlp_read(a->mlp0, m0, err);
    if (!e && a->mlp)
        e = atf_mlp_read(a->mlp, m, err);
    return e;
}

int atf_cmd_kernel(int argc, char **argv)
{
    if (atf_cli_wants_help(argc, argv)) {
        usage(atf_cli_stdout());
        return 0;
    }
    kernel_args a;
    memset(&a, 0, sizeof a);
    a.T = 50;
    char err[ATF_ERRLEN] = "";
    atf_error e = parse_args(argc, argv, &a, err);
    if (e)
        return atf_cli_fail("kernel", e, err);
    atf_problem *p = NULL;
    atf_result *res = NULL;
    atf_mlp *m0 = NULL, *m = NULL;
    atf_kernel_report r;
    e = atf_cli_check_output(a.out, err);
    if (!e)
        e = load(&a, &p, &res, &m0, &m, err);
    if (!e) {
        atf_kernel_inputs in = {p, res, m0, m, (int)a.T, a.method,
                                a.pos[0], a.npos == 2 ? a.pos[1] : NULL, a.mlp0, a.mlp};
        e = atf_kernel_report_compute(&in, &r, err);
    }
    if (!e) {
        e = atf_kernel_report_write(a.out, &r, err);
        if (!e && a.json)
            print_json(&r);
        else if (!e)
            print_text(&r, a.out);
        atf_kernel_report_free(&r);
    }
    atf_problem_free(p);
    atf_result_free(res);
    atf_mlp_free(m0);
    atf_mlp_free(m);
    return e ? atf_cli_fail("kernel", e, err) : 0;
}
