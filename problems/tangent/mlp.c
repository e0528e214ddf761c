/* mlp.c — ReLU MLPs: architecture parsing, seeded initialisation, forward pass. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "atf_mlp.h"
#include "atf_util.h"
#include "mlp_internal.h"

atf_error atf_arch_parse_widths(const char *text, atf_arch *arch, char *err)
{
    long v[ATF_MAX_LAYERS + 1];
    int n;
    if (atf_parse_ints(text, 1, 1 << 24, v, ATF_MAX_LAYERS + 1, &n, "widths", err))
        return ATF_E_USAGE;
    if (n < 2) {
        atf_errorf(err, "widths: '%s' needs at least an input and an output width",
                   text ? text : "");
        return ATF_E_USAGE;
    }
    for (int i = 0; i < n; i++)
        arch->widths[i] = (int)v[i];
    arch->L = n - 1;
    return ATF_OK;
}

atf_error atf_param_parse(const char *text, atf_param *out, char *err)
{
    if (text && !strcmp(text, "standard"))
        *out = ATF_PARAM_STANDARD;
    else if (text && !strcmp(text, "ntk"))
        *out = ATF_PARAM_NTK;
    else {
        atf_errorf(err, "parameterization '%s' unknown (expected standard or ntk)",
                   text ? text : "");
        return ATF_E_USAGE;
    }
    return ATF_OK;
}

const char *atf_param_name(atf_param p)
{
    return p == ATF_PARAM_NTK ? "ntk" : "standard";
}

/* He gain: 2 for layers followed by a ReLU, 1 for the linear output layer. */
static double layer_gain(const atf_arch *a, int l)
{
    return l < a->L - 1 ? 2.0 : 1.0;
}

double atf_mlp_scale(const atf_mlp *m, int l)
{
    if (m->arch.param != ATF_PARAM_NTK)
        return 1.0;
    return sqrt(layer_gain(&m->arch, l) / m->arch.widths[l]);
}

static atf_mlp *mlp_alloc(const atf_arch *arch)
{
    atf_mlp *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->arch = *arch;
    for (int l = 0; l < arch->L; l++) {
        size_t P = (size_t)arch->widths[l], Q = (size_t)arch->widths[l + 1];
        m->W[l] = calloc(P * Q, sizeof(double));
        if (arch->bias)
            m->b[l] = calloc(Q, sizeof(double));
        if (!m->W[l] || (arch->bias && !m->b[l])) {
            atf_mlp_free(m);
            return NULL;
        }
    }
    return m;
}

double mlp_weight_bytes(const atf_arch *a)
{
    double n = 0.0;
    for (int l = 0; l < a->L; l++)
        n += (double)a->widths[l + 1] * (a->widths[l] + (a->bias ? 1 : 0));
    return n * sizeof(double);
}

static atf_error check_arch(const atf_arch *a, char *err)
{
    if (a->L < 1 || a->L > ATF_MAX_LAYERS) {
        atf_errorf(err, "MLP: %d layers (expected 1 to %d)", a->L, ATF_MAX_LAYERS);
        return ATF_E_USAGE;
    }
    if (a->init == ATF_INIT_TORCH && a->param != ATF_PARAM_STANDARD) {
        atf_errorf(err, "MLP: init torch needs param standard");
        return ATF_E_USAGE;
    }
    for (int l = 0; l <= a->L; l++) {
        if (a->widths[l] < 1) {
            atf_errorf(err, "MLP: width %d of layer %d is not positive", a->widths[l], l);
            return ATF_E_USAGE;
        }
    }
    return ATF_OK;
}

atf_error atf_mlp_create(const atf_arch *arch, uint64_t seed, atf_mlp **out, char *err)
{
    *out = NULL;
    atf_error e = check_arch(arch, err);
    if (e)
        return e;
    atf_mlp *m = mlp_alloc(arch);
    if (!m) {
        atf_errorf(err, "MLP: out of memory (%.0f bytes for the weights)", mlp_weight_bytes(arch));
        return ATF_E_NOMEM;
    }
    atf_rng rng;
    atf_rng_seed(&rng, seed);
    if (arch->init == ATF_INIT_TORCH) {
        for (int l = 0; l < arch->L; l++) {
            size_t Q = (size_t)arch->widths[l + 1], n = (size_t)arch->widths[l] * Q;
            double bound = 1.0 / sqrt((double)arch->widths[l]);
            for (size_t i = 0; i < n; i++)
                m->W[l][i] = bound * (2.0 * atf_rng_uniform(&rng) - 1.0);
            for (size_t q = 0; m->b[l] && q < Q; q++)
                m->b[l][q] = bound * (2.0 * atf_rng_uniform(&rng) - 1.0);
        }
        *out = m;
        return ATF_OK;
    }
    for (int l = 0; l < arch->L; l++) {
        size_t n = (size_t)arch->widths[l] * arch->widths[l + 1];
        double std = arch->param == ATF_PARAM_NTK ? 1.0
                                                  : sqrt(layer_gain(arch, l) / arch->widths[l]);
        for (size_t i = 0; i < n; i++)
            m->W[l][i] = std * atf_rng_normal(&rng);
    }
    *out = m;
    return ATF_OK;
}

atf_mlp *atf_mlp_clone(const atf_mlp *src)
{
    atf_mlp *m = mlp_alloc(&src->arch);
    if (!m)
        return NULL;
    for (int l = 0; l < src->arch.L; l++) {
        size_t P = (size_t)src->arch.widths[l], Q = (size_t)src->arch.widths[l + 1];
        memcpy(m->W[l], src->W[l], P * Q * sizeof(double));
        if (src->b[l])
            memcpy(m->b[l], src->b[l], Q * sizeof(double));
    }
    return m;
}

void atf_mlp_free(atf_mlp *m)
{
    if (!m)
        return;
    for (int l = 0; l < ATF_MAX_LAYERS; l++) {
        free(m->W[l]);
        free(m->b[l]);
    }
    free(m);
}

int64_t atf_mlp_nparams(const atf_mlp *m)
{
    int64_t n = 0;
    for (int l = 0; l < m->arch.L; l++)
        n += (int64_t)m->arch.widths[l] * m->arch.widths[l + 1] +
             (m->arch.bias ? m->arch.widths[l + 1] : 0);
    return n;
}

void atf_mlp_interpolate(const atf_mlp *m0, const atf_mlp *m1, double t, atf_mlp *out)
{
    for (int l = 0; l < m0->arch.L; l++) {
        size_t Q = (size_t)m0->arch.widths[l + 1], n = (size_t)m0->arch.widths[l] * Q;
        for (size_t i = 0; i < n; i++)
            out->W[l][i] = (1.0 - t) * m0->W[l][i] + t * m1->W[l][i];
        for (size_t i = 0; m0->b[l] && i < Q; i++)
            out->b[l][i] = (1.0 - t) * m0->b[l][i] + t * m1->b[l][i];
    }
}

/* A [N × Q] = c_l · Hin [N × P] W[l] + 1 b[l]ᵀ */
static void layer_affine(const atf_mlp *m, int l, int N, const double *Hin, double *A)
{
    int P = m->arch.widths[l], Q = m->arch.widths[l + 1];
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, Q, P, atf_mlp_scale(m, l), Hin, P,
                m->W[l], Q, 0.0, A, Q);
    if (m->b[l])
        for (int i = 0; i < N; i++)
            for (int q = 0; q < Q; q++)
                A[(size_t)i * Q + q] += m->b[l][q];
}

atf_error mlp_forward_cache(const atf_mlp *m, int N, const double *X, mlp_cache *c, char *err)
{
    memset(c, 0, sizeof *c);
    c->N = N;
    c->h[0] = X;
    int L = m->arch.L;
    for (int l = 0; l < L; l++) {
        size_t Q = (size_t)m->arch.widths[l + 1];
        double *A = malloc((size_t)N * Q * sizeof *A);
        if (!A) {
            mlp_cache_free(c);
            atf_errorf(err, "MLP forward: out of memory for %d examples", N);
            return ATF_E_NOMEM;
        }
        layer_affine(m, l, N, c->h[l], A);
        if (l == L - 1) {
            c->out = A;
        } else {
            for (size_t i = 0; i < (size_t)N * Q; i++)
                A[i] = A[i] > 0.0 ? A[i] : 0.0;
            c->owned[l + 1] = A;
            c->h[l + 1] = A;
        }
    }
    return ATF_OK;
}

void mlp_cache_free(mlp_cache *c)
{
    for (int l = 0; l < ATF_MAX_LAYERS; l++)
        free(c->owned[l]);
    free(c->out);
    memset(c, 0, sizeof *c);
}

void mlp_backprop_layer(const atf_mlp *m, int l, int R, int rows_per_example, const double *d,
                        const double *h, double *d_prev)
{
    int P = m->arch.widths[l], Q = m->arch.widths[l + 1];
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, R, P, Q, atf_mlp_scale(m, l), d, Q,
                m->W[l], Q, 0.0, d_prev, P);
    for (int r = 0; r < R; r++) {
        const double *hi = h + (size_t)(r / rows_per_example) * P;
        double *row = d_prev + (size_t)r * P;
        for (int p = 0; p < P; p++)
            if (!(hi[p] > 0.0))
                row[p] = 0.0;
    }
}

atf_error atf_mlp_forward(const atf_mlp *m, int N, const double *X, double *F, char *err)
{
    mlp_cache c;
    atf_error e = mlp_forward_cache(m, N, X, &c, err);
    if (e)
        return e;
    memcpy(F, c.out, (size_t)N * m->arch.widths[m->arch.L] * sizeof *F);
    mlp_cache_free(&c);
    return ATF_OK;
}
