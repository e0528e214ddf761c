/* mlp.c — MLPs: architecture parsing, seeded initialisation, the flat constructor and
 * accessors, the forward pass with σ and σ′ kept for backward passes. */
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

atf_error atf_arch_parse_bias(const char *text, atf_arch *arch, char *err)
{
    long v[ATF_MAX_LAYERS];
    int n, all = text && (!strcmp(text, "1") || !strcmp(text, "all"));
    memset(arch->bias, 0, sizeof arch->bias);
    if (all || (text && (!strcmp(text, "0") || !strcmp(text, "none")))) {
        for (int l = 0; all && l < arch->L; l++)
            arch->bias[l] = 1;
        return ATF_OK;
    }
    /* "1" alone keeps its old meaning (every layer): the first layer alone is "layers:1" */
    if (text && !strncmp(text, "layers:", 7))
        text += 7;
    if (atf_parse_ints(text, 1, ATF_MAX_LAYERS, v, ATF_MAX_LAYERS, &n, "bias", err))
        return ATF_E_USAGE;
    for (int i = 0; i < n; i++) {
        if (arch->bias[v[i] - 1]) {
            atf_errorf(err, "bias: layer %ld listed twice", v[i]);
            return ATF_E_USAGE;
        }
        if (v[i] > arch->L) {
            atf_errorf(err, "bias: layer %ld listed but the network has %d layer%s", v[i],
                       arch->L, arch->L == 1 ? "" : "s");
            return ATF_E_USAGE;
        }
        arch->bias[v[i] - 1] = 1;
    }
    return ATF_OK;
}

int atf_arch_has_bias(const atf_arch *a)
{
    int n = 0;
    for (int l = 0; l < a->L; l++)
        n += a->bias[l] != 0;
    return n;
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

/* He gain g = gain² of the activation that follows layer l, as torch.nn.init.calculate_gain
 * (relu 2, leaky_relu 2/(1 + slope²), tanh 25/9, sigmoid and identity 1; gelu and softplus, which
 * torch does not list, as relu); 1 for the linear output layer. */
static double layer_gain(const atf_arch *a, int l)
{
    if (l >= a->L - 1)
        return 1.0;
    const atf_activation *s = &a->act[l];
    switch (s->kind) {
    case ATF_ACT_LEAKY_RELU:
        return 2.0 / (1.0 + s->slope * s->slope);
    case ATF_ACT_TANH:
        return 25.0 / 9.0;
    case ATF_ACT_SIGMOID:
    case ATF_ACT_IDENTITY:
        return 1.0;
    default:
        return 2.0;
    }
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
        if (arch->bias[l])
            m->b[l] = calloc(Q, sizeof(double));
        if (!m->W[l] || (arch->bias[l] && !m->b[l])) {
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
        n += (double)a->widths[l + 1] * (a->widths[l] + (a->bias[l] ? 1 : 0));
    return n * sizeof(double);
}

/* Activations set directly in the struct (not parsed) must still be valid. */
static atf_error check_activations(const atf_arch *a, char *err)
{
    for (int l = 0; l < a->L - 1; l++) {
        const atf_activation *s = &a->act[l];
        int ok = s->kind >= ATF_ACT_RELU && s->kind <= ATF_ACT_IDENTITY;
        if (s->kind == ATF_ACT_LEAKY_RELU)
            ok = isfinite(s->slope);
        if (s->kind == ATF_ACT_SOFTPLUS)
            ok = isfinite(s->beta) && s->beta > 0.0 && isfinite(s->threshold);
        if (!ok) {
            atf_errorf(err, "MLP: activation of layer %d is invalid", l + 1);
            return ATF_E_USAGE;
        }
    }
    return ATF_OK;
}

static atf_error check_arch(const atf_arch *a, char *err)
{
    if (a->L < 1 || a->L > ATF_MAX_LAYERS) {
        atf_errorf(err, "MLP: %d layers (expected 1 to %d)", a->L, ATF_MAX_LAYERS);
        return ATF_E_USAGE;
    }
    if (a->init != ATF_INIT_HE && a->param != ATF_PARAM_STANDARD) {
        atf_errorf(err, "MLP: init %s needs param standard",
                   a->init == ATF_INIT_TORCH ? "torch" : "lecun");
        return ATF_E_USAGE;
    }
    for (int l = 0; l <= a->L; l++) {
        if (a->widths[l] < 1) {
            atf_errorf(err, "MLP: width %d of layer %d is not positive", a->widths[l], l);
            return ATF_E_USAGE;
        }
    }
    for (int l = a->L; l < ATF_MAX_LAYERS; l++) {
        if (a->bias[l]) {
            atf_errorf(err, "bias: layer %d listed but the network has %d layer%s", l + 1, a->L,
                       a->L == 1 ? "" : "s");
            return ATF_E_USAGE;
        }
    }
    return check_activations(a, err);
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
        double gain = arch->init == ATF_INIT_LECUN ? 1.0 : layer_gain(arch, l);
        double std = arch->param == ATF_PARAM_NTK ? 1.0 : sqrt(gain / arch->widths[l]);
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
             (m->b[l] ? m->arch.widths[l + 1] : 0);
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
            break;
        }
        c->owned[l + 1] = A;
        c->h[l + 1] = A;
        if (!(c->dh[l + 1] = malloc((size_t)N * Q * sizeof(double)))) {
            mlp_cache_free(c);
            atf_errorf(err, "MLP forward: out of memory for %d examples", N);
            return ATF_E_NOMEM;
        }
        atf_activation_eval(&m->arch.act[l], (size_t)N * Q, A, A, c->dh[l + 1]);
    }
    return ATF_OK;
}

void mlp_cache_free(mlp_cache *c)
{
    for (int l = 0; l < ATF_MAX_LAYERS; l++) {
        free(c->owned[l]);
        free(c->dh[l]);
    }
    free(c->out);
    memset(c, 0, sizeof *c);
}

void mlp_backprop_layer(const atf_mlp *m, int l, int R, int rows_per_example, const double *d,
                        const double *dh, double *d_prev)
{
    int P = m->arch.widths[l], Q = m->arch.widths[l + 1];
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, R, P, Q, atf_mlp_scale(m, l), d, Q,
                m->W[l], Q, 0.0, d_prev, P);
    for (int r = 0; r < R; r++) {
        const double *di = dh + (size_t)(r / rows_per_example) * P;
        double *row = d_prev + (size_t)r * P;
        /* σ′ = 0 (a ReLU's inactive unit) gives an exact +0, as a mask would */
        for (int p = 0; p < P; p++)
            row[p] = di[p] == 0.0 ? 0.0 : row[p] * di[p];
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

/* ---------------------------------------------------------------------------------------------
 * Flat constructor and accessors (for bindings).
 * ------------------------------------------------------------------------------------------- */

atf_error atf_mlp_new(int L, const int *widths, const int *bias, const char *const *activations,
                      const char *param, atf_mlp **out, char *err)
{
    *out = NULL;
    if (L < 1 || L > ATF_MAX_LAYERS || !widths) {
        atf_errorf(err, "MLP: %d layers (expected 1 to %d)", L, ATF_MAX_LAYERS);
        return ATF_E_USAGE;
    }
    atf_arch a;
    memset(&a, 0, sizeof a);
    a.L = L;
    for (int l = 0; l <= L; l++)
        a.widths[l] = widths[l];
    for (int l = 0; bias && l < L; l++) {
        if (bias[l] != 0 && bias[l] != 1) {
            atf_errorf(err, "bias: flag %d of layer %d (expected 0 or 1)", bias[l], l + 1);
            return ATF_E_USAGE;
        }
        a.bias[l] = (unsigned char)bias[l];
    }
    for (int l = 0; activations && l < L - 1; l++) {
        atf_error e = activations[l] ? atf_activation_parse(activations[l], &a.act[l], err)
                                     : ATF_OK;
        if (e)
            return e;
    }
    atf_error e = param ? atf_param_parse(param, &a.param, err) : ATF_OK;
    if (e || (e = check_arch(&a, err)))
        return e;
    if (!(*out = mlp_alloc(&a))) {
        atf_errorf(err, "MLP: out of memory (%.0f bytes for the weights)", mlp_weight_bytes(&a));
        return ATF_E_NOMEM;
    }
    return ATF_OK;
}

int atf_mlp_layers(const atf_mlp *m)
{
    return m->arch.L;
}

const char *atf_mlp_param_name(const atf_mlp *m)
{
    return atf_param_name(m->arch.param);
}

int atf_mlp_width(const atf_mlp *m, int l)
{
    return l >= 0 && l <= m->arch.L ? m->arch.widths[l] : -1;
}

double *atf_mlp_weight(atf_mlp *m, int l)
{
    return l >= 0 && l < m->arch.L ? m->W[l] : NULL;
}

double *atf_mlp_bias(atf_mlp *m, int l)
{
    return l >= 0 && l < m->arch.L ? m->b[l] : NULL;
}

int atf_mlp_activation_spec(const atf_mlp *m, int l, char *buf, size_t len)
{
    if (l < 0 || l >= m->arch.L - 1) {
        if (len)
            buf[0] = '\0';
        return -1;
    }
    return atf_activation_format(&m->arch.act[l], buf, len);
}
