/* kernel_report.c — every kernel the inputs allow, per-layer parts, and all alignments. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf_kernel.h"
#include "h5io.h"

void atf_kernel_report_free(atf_kernel_report *r)
{
    for (int j = 0; j < ATF_MAX_KERNELS; j++)
        free(r->K[j]);
    free(r->blocks);
    free(r->cosine);
    free(r->cka);
    free(r->layer_cosine);
    free(r->layer_cka);
    memset(r, 0, sizeof *r);
}

/* Append a kernel (taking ownership of K) and return its index. */
static int push(atf_kernel_report *r, const char *name, double *K)
{
    int j = r->nkernels++;
    snprintf(r->names[j], sizeof r->names[j], "%s", name);
    r->K[j] = K;
    return j;
}

static const char *problem_name(const atf_kernel_inputs *in)
{
    return in->problem_name ? in->problem_name : "problem";
}

static const char *result_name(const atf_kernel_inputs *in)
{
    return in->result_name ? in->result_name : "result";
}

static double *zeros(int M)
{
    return calloc((size_t)M * M, sizeof(double));
}

/* Record block b's part Kb of kernel j against the label kernel. */
static void layer_alignment(atf_kernel_report *r, int b, int j, const double *Kb,
                            const double *label)
{
    r->layer_cosine[(size_t)b * ATF_MAX_KERNELS + j] = atf_kernel_cosine(r->M, Kb, label);
    r->layer_cka[(size_t)b * ATF_MAX_KERNELS + j] = atf_kernel_cka(r->M, Kb, label);
}

typedef atf_error (*block_kernel_fn)(const atf_block *b, const atf_result_block *rb, double *K,
                                     char *err);

static atf_error ntk_adapter(const atf_block *b, const atf_result_block *rb, double *K, char *err)
{
    (void)rb;
    return atf_kernel_ntk_block(b, K, err);
}

/* Sum of a per-block kernel over the blocks, with per-layer alignments against the label. */
static atf_error summed(atf_kernel_report *r, const atf_kernel_inputs *in, const char *name,
                        block_kernel_fn fn, const double *label, char *err)
{
    const atf_problem *p = in->problem;
    double *K = zeros(r->M), *Kb = zeros(r->M);
    atf_error e = K && Kb ? ATF_OK : ATF_E_NOMEM;
    for (int b = 0; !e && b < p->nblocks; b++) {
        memset(Kb, 0, (size_t)r->M * r->M * sizeof *Kb);
        e = fn(&p->blocks[b], in->result ? &in->result->blocks[b] : NULL, Kb, err);
        if (!e) {
            layer_alignment(r, b, r->nkernels, Kb, label);
            cblas_daxpy(r->M * r->M, 1.0, Kb, 1, K, 1);
        }
    }
    free(Kb);
    if (e) {
        free(K);
        return e;
    }
    push(r, name, K);
    return ATF_OK;
}

static int find(const atf_kernel_report *r, const char *name)
{
    for (int j = 0; j < r->nkernels; j++)
        if (!strcmp(r->names[j], name))
            return j;
    return -1;
}

static int vector_result(const atf_kernel_inputs *in)
{
    return in->result->nblocks > 0 && in->result->blocks[0].layout == ATF_FACTORS_VECTOR;
}

/* Eq. 7: per block (with per-layer alignments), or as a whole for vector factors (structure
 * full), whose blocks share one transformation and so have no per-block parts. */
static atf_error adapted(atf_kernel_report *r, const atf_kernel_inputs *in, const double *label,
                         char *err)
{
    if (!vector_result(in))
        return summed(r, in, "adapted", atf_kernel_adapted_block, label, err);
    double *K = zeros(r->M);
    if (!K)
        return ATF_E_NOMEM;
    atf_error e = atf_kernel_adapted(in->problem, in->result, K, err);
    if (e) {
        free(K);
        return e;
    }
    push(r, "adapted", K);
    return ATF_OK;
}

static atf_error paper17(atf_kernel_report *r, const atf_kernel_inputs *in, char *err)
{
    double *K = malloc((size_t)r->M * r->M * sizeof *K);
    if (!K)
        return ATF_E_NOMEM;
    memcpy(K, r->K[find(r, "K0")], (size_t)r->M * r->M * sizeof *K);
    atf_error e = atf_kernel_paper17(in->problem, in->result, K, err);
    if (e) {
        free(K);
        return e;
    }
    push(r, "paper17", K);
    return ATF_OK;
}

static atf_error theorem1(atf_kernel_report *r, const atf_kernel_inputs *in, char *err)
{
    double *K = malloc((size_t)r->M * r->M * sizeof *K);
    if (!K)
        return ATF_E_NOMEM;
    atf_error e = atf_kernel_theorem1(in->problem, in->result, r->K[find(r, "K0")], K,
                                      &r->theorem1_s, err);
    if (e) {
        free(K);
        return e;
    }
    push(r, "theorem1", K);
    return ATF_OK;
}

/* X = H_W1 / c_1: block W1 holds the (scaled) network inputs. */
static atf_error recover_inputs(const atf_kernel_inputs *in, const atf_mlp *m, double **X,
                                char *err)
{
    const atf_problem *p = in->problem;
    const atf_block *w1 = NULL;
    for (int b = 0; b < p->nblocks; b++)
        if (!strcmp(p->blocks[b].name, "W1"))
            w1 = &p->blocks[b];
    if (!w1 || w1->kind != ATF_OP_FACTORED) {
        atf_errorf(err, "%s: /blocks/W1: no factored block W1 to recover the network inputs from "
                   "(network kernels need a problem written by atf features)", problem_name(in));
        return ATF_E_INPUT;
    }
    /* both networks run on these inputs (mlp0 for the /f0 check and the path's start) */
    const atf_mlp *nets[2] = {in->mlp0, in->mlp};
    const char *names[2] = {in->mlp0_name ? in->mlp0_name : "mlp0",
                            in->mlp_name ? in->mlp_name : "mlp"};
    for (int j = 0; j < 2; j++) {
        const atf_arch *a = nets[j] ? &nets[j]->arch : NULL;
        if (a && (w1->rows != a->widths[0] || p->C != a->widths[a->L])) {
            atf_errorf(err, "%s: the network maps %d -> %d but %s has inputs of dimension %d "
                       "and %d output%s", names[j], a->widths[0], a->widths[a->L],
                       problem_name(in), w1->rows, p->C, p->C == 1 ? "" : "s");
            return ATF_E_INPUT;
        }
    }
    size_t n = (size_t)p->N * w1->rows;
    *X = malloc(n * sizeof **X);
    if (!*X)
        return ATF_E_NOMEM;
    double c = atf_mlp_scale(m, 0);
    for (size_t i = 0; i < n; i++)
        (*X)[i] = w1->H[i] / c;
    return ATF_OK;
}

static atf_error check_f0(atf_kernel_report *r, const atf_kernel_inputs *in, const double *X,
                          char *err)
{
    const atf_problem *p = in->problem;
    const atf_mlp *m0 = in->mlp0;
    if (!p->f0)
        return ATF_OK;
    double *F = malloc((size_t)p->M * sizeof *F);
    if (!F)
        return ATF_E_NOMEM;
    atf_error e = atf_mlp_forward(m0, p->N, X, F, err);
    double diff = 0.0, scale = 1.0;
    for (int m = 0; !e && m < p->M; m++) {
        diff = fmax(diff, fabs(F[m] - p->f0[m]));
        scale = fmax(scale, fabs(p->f0[m]));
    }
    free(F);
    r->f0_check = diff;
    if (!e && diff > 1e-8 * scale) {
        atf_errorf(err, "%s: does not reproduce %s's /f0 (max difference %.3g): not the network "
                   "the problem was built from", in->mlp0_name ? in->mlp0_name : "mlp0",
                   problem_name(in), diff);
        e = ATF_E_INPUT;
    }
    return e;
}

/* A network kernel (NTK at θ, or the path average θ0 → θ) with per-layer alignments. */
static atf_error network_kernel(atf_kernel_report *r, const atf_kernel_inputs *in,
                                const double *X, const char *name, const double *label, char *err)
{
    const atf_mlp *m = in->mlp;
    int nb = m->arch.L + atf_arch_has_bias(&m->arch), M = r->M;
    double *K = zeros(M), *Kb = calloc((size_t)nb * M * M, sizeof *Kb);
    atf_error e = K && Kb ? ATF_OK : ATF_E_NOMEM;
    if (!e && !strcmp(name, "final"))
        e = atf_kernel_mlp(m, in->problem->N, X, K, Kb, err);
    else if (!e)
        e = atf_kernel_path_average(in->mlp0, m, in->problem->N, X,
                                    in->path_points > 0 ? in->path_points : 50, in->path_method,
                                    K, Kb, err);
    /* The network's blocks are W1, b1, W2, ... like the problem's when it came from atf features */
    for (int b = 0; !e && nb == r->nblocks && b < nb; b++)
        layer_alignment(r, b, r->nkernels, Kb + (size_t)b * M * M, label);
    free(Kb);
    if (e) {
        free(K);
        return e;
    }
    push(r, name, K);
    return ATF_OK;
}

static atf_error network_kernels(atf_kernel_report *r, const atf_kernel_inputs *in,
                                 const double *label, char *err)
{
    const atf_mlp *any = in->mlp ? in->mlp : in->mlp0;
    if (!any)
        return ATF_OK;
    double *X = NULL;
    atf_error e = recover_inputs(in, any, &X, err);
    if (!e && in->mlp0)
        e = check_f0(r, in, X, err);
    if (!e && in->mlp)
        e = network_kernel(r, in, X, "final", label, err);
    if (!e && in->mlp && in->mlp0)
        e = network_kernel(r, in, X, "path_average", label, err);
    free(X);
    return e;
}

static atf_error alignments(atf_kernel_report *r)
{
    int nk = r->nkernels, nb = r->nblocks;
    r->cosine = malloc((size_t)nk * nk * sizeof *r->cosine);
    r->cka = malloc((size_t)nk * nk * sizeof *r->cka);
    if (!r->cosine || !r->cka)
        return ATF_E_NOMEM;
    for (int a = 0; a < nk; a++) {
        for (int b = a; b < nk; b++) {
            double c = atf_kernel_cosine(r->M, r->K[a], r->K[b]);
            double k = atf_kernel_cka(r->M, r->K[a], r->K[b]);
            r->cosine[a * nk + b] = r->cosine[b * nk + a] = c;
            r->cka[a * nk + b] = r->cka[b * nk + a] = k;
        }
    }
    /* compact the per-layer tables from stride ATF_MAX_KERNELS to nk */
    for (int b = 0; b < nb; b++) {
        for (int j = 0; j < nk; j++) {
            r->layer_cosine[b * nk + j] = r->layer_cosine[b * ATF_MAX_KERNELS + j];
            r->layer_cka[b * nk + j] = r->layer_cka[b * ATF_MAX_KERNELS + j];
        }
    }
    return ATF_OK;
}

/* Spectral factors without singular vectors (results that did not store U, V) are recomputed;
 * afterwards every block must carry what its layout needs, else the result file is named. */
static atf_error ensure_factors(const atf_kernel_inputs *in, char *err)
{
    atf_result *res = in->result;
    for (int b = 0; b < res->nblocks; b++) {
        const atf_result_block *rb = &res->blocks[b];
        if (rb->layout == ATF_FACTORS_SPECTRAL && (!rb->U || !rb->V)) {
            atf_error e = atf_result_factors(res, in->problem, err);
            if (e)
                return e;
            break;
        }
    }
    for (int b = 0; b < res->nblocks; b++) {
        const char *missing = atf_kernel_factors_missing(&res->blocks[b]);
        if (missing) {
            atf_errorf(err, "%s: /blocks/%s: %s", result_name(in), res->blocks[b].name,
                       missing);
            return ATF_E_INPUT;
        }
    }
    return ATF_OK;
}

static atf_error compute(const atf_kernel_inputs *in, atf_kernel_report *r, double **label,
                         char *err)
{
    const atf_problem *p = in->problem;
    atf_error e = ATF_OK;
    if (in->result && !(e = atf_result_check(in->result, p, result_name(in), problem_name(in),
                                             err)))
        e = ensure_factors(in, err);
    if (e)
        return e;
    if (!(*label = zeros(r->M)))
        return ATF_E_NOMEM;
    atf_kernel_outer(r->M, p->r, *label);
    if ((e = summed(r, in, "K0", ntk_adapter, *label, err)))
        return e;
    if (in->result) {
        if ((e = adapted(r, in, *label, err)) ||
            (e = paper17(r, in, err)) || (e = theorem1(r, in, err)))
            return e;
    }
    push(r, "label", *label);
    const double *lab = *label;
    *label = NULL;
    if ((e = network_kernels(r, in, lab, err)))
        return e;
    return alignments(r);
}

atf_error atf_kernel_report_compute(const atf_kernel_inputs *in, atf_kernel_report *r, char *err)
{
    memset(r, 0, sizeof *r);
    const atf_problem *p = in->problem;
    r->M = p->M;
    r->nblocks = p->nblocks;
    r->theorem1_s = NAN;
    r->f0_check = NAN;
    r->blocks = calloc((size_t)p->nblocks, sizeof *r->blocks);
    size_t nl = (size_t)p->nblocks * ATF_MAX_KERNELS;
    r->layer_cosine = malloc(nl * sizeof *r->layer_cosine);
    r->layer_cka = malloc(nl * sizeof *r->layer_cka);
    if (!r->blocks || !r->layer_cosine || !r->layer_cka) {
        atf_kernel_report_free(r);
        atf_errorf(err, "kernel: out of memory");
        return ATF_E_NOMEM;
    }
    for (size_t i = 0; i < nl; i++)
        r->layer_cosine[i] = r->layer_cka[i] = NAN;
    for (int b = 0; b < p->nblocks; b++)
        snprintf(r->blocks[b], ATF_NAMELEN, "%s", p->blocks[b].name);
    double *label = NULL;
    atf_error e = compute(in, r, &label, err);
    free(label);
    if (e) {
        if (e == ATF_E_NOMEM)
            atf_errorf(err, "kernel: out of memory for %d x %d kernels", r->M, r->M);
        atf_kernel_report_free(r);
    }
    return e;
}

static void join_names(char *buf, size_t len, int n, const char *names, size_t stride)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int j = 0; j < n && used < len; j++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", j ? "," : "", names + j * stride);
}

/* A report and its kernel and block names joined with commas (the /alignment attributes). */
typedef struct {
    const atf_kernel_report *r;
    char kernels[ATF_MAX_KERNELS * 16 + 16];
    char *blocks;
} kernel_file;

static void put_tables(h5io_out *o, const kernel_file *kf)
{
    const atf_kernel_report *r = kf->r;
    int64_t kk[2] = {r->nkernels, r->nkernels}, bk[2] = {r->nblocks, r->nkernels};
    h5io_put_group(o, "/alignment");
    h5io_put_string(o, "/alignment", "kernels", kf->kernels);
    h5io_put_string(o, "/alignment", "blocks", kf->blocks);
    h5io_put_doubles(o, "/alignment/cosine", 2, kk, r->cosine);
    h5io_put_doubles(o, "/alignment/cka", 2, kk, r->cka);
    h5io_put_doubles(o, "/alignment/layer_cosine_label", 2, bk, r->layer_cosine);
    h5io_put_doubles(o, "/alignment/layer_cka_label", 2, bk, r->layer_cka);
}

static void put_kernels(h5io_out *o, const void *ctx)
{
    const kernel_file *kf = ctx;
    const atf_kernel_report *r = kf->r;
    int64_t dims[2] = {r->M, r->M};
    h5io_put_string(o, "/", "format", "atf-kernels");
    h5io_put_int(o, "/", "version", 1);
    h5io_put_int(o, "/", "rows", r->M);
    h5io_put_double(o, "/", "theorem1_s", r->theorem1_s);
    for (int j = 0; j < r->nkernels; j++) {
        char name[H5IO_PATHLEN];
        h5io_path(name, "/%s", r->names[j]);
        h5io_put_doubles(o, name, 2, dims, r->K[j]);
    }
    put_tables(o, kf);
}

atf_error atf_kernel_report_write(const char *path, const atf_kernel_report *r, char *err)
{
    kernel_file kf = {.r = r};
    size_t len = (size_t)r->nblocks * ATF_NAMELEN + 1;
    if (!(kf.blocks = malloc(len))) {
        atf_errorf(err, "%s: out of memory for the block names", path);
        return ATF_E_NOMEM;
    }
    join_names(kf.kernels, sizeof kf.kernels, r->nkernels, r->names[0], sizeof r->names[0]);
    join_names(kf.blocks, len, r->nblocks, r->blocks[0], ATF_NAMELEN);
    atf_error e = h5io_write_file(path, put_kernels, &kf, err);
    free(kf.blocks);
    return e;
}
