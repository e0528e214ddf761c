/* activation.c — elementwise activations: specs, their canonical form, values and derivatives.
 *
 * Every function and derivative is computed as PyTorch 1.13 computes it on the CPU in double
 * precision (the forward kernels of torch.nn.{ReLU, LeakyReLU, Tanh, Sigmoid, GELU, Softplus} and
 * their autograd backward formulas), so networks and their Jacobians agree with torch to rounding:
 *   relu        x > 0 ? x : 0                      σ′ = x > 0 ? 1 : 0
 *   leaky_relu  x > 0 ? x : slope·x                σ′ = x > 0 ? 1 : slope
 *   tanh        tanh x                             σ′ = 1 − tanh²x
 *   sigmoid     1 / (1 + e^{−x})                   σ′ = (1 − s) s
 *   gelu        x · ½ (1 + erf(x/√2))              σ′ = Φ(x) + x φ(x)
 *   softplus    βx > t ? x : log1p(e^{βx}) / β     σ′ = βx > t ? 1 : z/(z + 1), z = e^{βx}
 *   identity    x                                  σ′ = 1 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf_mlp.h"

#define SQRT1_2 0.70710678118654752440        /* 1/√2, as M_SQRT1_2 */
#define INV_SQRT_2PI 0.39894228040143267794   /* 1/√(2π) = M_2_SQRTPI · M_SQRT1_2 · 0.5 */
#define DEFAULT_SLOPE 0.01
#define DEFAULT_BETA 1.0
#define DEFAULT_THRESHOLD 20.0

static const char *const kind_names[] = {"relu", "leaky_relu", "tanh", "sigmoid", "gelu",
                                         "softplus", "identity"};
#define NKINDS ((int)(sizeof kind_names / sizeof kind_names[0]))

/* One "key=value" parameter of a spec; the value must be a finite number. */
static atf_error parse_param(const char *spec, const char *item, atf_activation *a, char *err)
{
    const char *eq = strchr(item, '=');
    size_t klen = eq ? (size_t)(eq - item) : strlen(item);
    char *end;
    double v = eq ? strtod(eq + 1, &end) : NAN;
    if (!eq || eq[1] == '\0' || *end != '\0' || !isfinite(v)) {
        atf_errorf(err, "activation: '%s': '%s' is not KEY=NUMBER", spec, item);
        return ATF_E_USAGE;
    }
    if (a->kind == ATF_ACT_LEAKY_RELU && klen == 5 && !strncmp(item, "slope", 5))
        a->slope = v;
    else if (a->kind == ATF_ACT_SOFTPLUS && klen == 4 && !strncmp(item, "beta", 4) && v > 0)
        a->beta = v;
    else if (a->kind == ATF_ACT_SOFTPLUS && klen == 9 && !strncmp(item, "threshold", 9))
        a->threshold = v;
    else if (a->kind == ATF_ACT_SOFTPLUS && klen == 4 && !strncmp(item, "beta", 4)) {
        atf_errorf(err, "activation: '%s': beta must be positive", spec);
        return ATF_E_USAGE;
    } else {
        atf_errorf(err, "activation: '%s': unknown parameter '%.*s' (%s)", spec, (int)klen, item,
                   a->kind == ATF_ACT_LEAKY_RELU ? "leaky_relu takes slope"
                   : a->kind == ATF_ACT_SOFTPLUS ? "softplus takes beta and threshold"
                                                 : "this activation takes none");
        return ATF_E_USAGE;
    }
    return ATF_OK;
}

atf_error atf_activation_parse(const char *spec, atf_activation *out, char *err)
{
    char buf[ATF_ACTIVATION_SPECLEN];
    if (!spec || snprintf(buf, sizeof buf, "%s", spec) >= (int)sizeof buf) {
        atf_errorf(err, "activation: '%.40s...': spec too long", spec ? spec : "");
        return ATF_E_USAGE;
    }
    char *params = strchr(buf, ':');
    if (params)
        *params++ = '\0';
    atf_activation a = {ATF_ACT_RELU, DEFAULT_SLOPE, DEFAULT_BETA, DEFAULT_THRESHOLD};
    int k = 0;
    while (k < NKINDS && strcmp(buf, kind_names[k]))
        k++;
    if (k == NKINDS) {
        atf_errorf(err, "activation: '%s' unknown (expected relu, leaky_relu[:slope=S], tanh, "
                   "sigmoid, gelu, softplus[:beta=B,threshold=T] or identity)", spec);
        return ATF_E_USAGE;
    }
    a.kind = (atf_activation_kind)k;
    if (params && *params == '\0') {
        atf_errorf(err, "activation: '%s': empty parameter list", spec);
        return ATF_E_USAGE;
    }
    for (char *item = params; item;) {
        char *next = strchr(item, ',');
        if (next)
            *next++ = '\0';
        atf_error e = parse_param(spec, item, &a, err);
        if (e)
            return e;
        item = next;
    }
    *out = a;
    return ATF_OK;
}

/* The shortest of %.15g..%.17g that reads back as v. */
static void format_number(double v, char *buf, size_t len)
{
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, len, "%.*g", digits, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

int atf_activation_format(const atf_activation *a, char *buf, size_t len)
{
    int k = (int)a->kind;
    const char *name = k >= 0 && k < NKINDS ? kind_names[k] : "unknown";
    char x[32], y[32];
    if (a->kind == ATF_ACT_LEAKY_RELU && a->slope != DEFAULT_SLOPE) {
        format_number(a->slope, x, sizeof x);
        return snprintf(buf, len, "%s:slope=%s", name, x);
    }
    if (a->kind == ATF_ACT_SOFTPLUS &&
        (a->beta != DEFAULT_BETA || a->threshold != DEFAULT_THRESHOLD)) {
        format_number(a->beta, x, sizeof x);
        format_number(a->threshold, y, sizeof y);
        return snprintf(buf, len, "%s:beta=%s,threshold=%s", name, x, y);
    }
    return snprintf(buf, len, "%s", name);
}

/* GELU as torch's CPU kernel (exact form) and its backward: Φ(x) + x φ(x). */
static void gelu(size_t n, const double *x, double *h, double *dh)
{
    for (size_t i = 0; i < n; i++) {
        double v = x[i], cdf = 0.5 * (1.0 + erf(v * SQRT1_2));
        if (dh)
            dh[i] = cdf + v * (INV_SQRT_2PI * exp(-0.5 * v * v));
        if (h)
            h[i] = v * 0.5 * (1.0 + erf(v * SQRT1_2));
    }
}

static void softplus(double beta, double threshold, size_t n, const double *x, double *h,
                     double *dh)
{
    for (size_t i = 0; i < n; i++) {
        double v = x[i], bx = v * beta, z = exp(bx);
        int linear = bx > threshold;
        if (dh)
            dh[i] = linear ? 1.0 : z / (z + 1.0);
        if (h)
            h[i] = linear ? v : log1p(z) / beta;
    }
}

/* Each case computes dh before h because h may be x itself. */
void atf_activation_eval(const atf_activation *a, size_t n, const double *x, double *h,
                         double *dh)
{
    switch (a->kind) {
    case ATF_ACT_GELU:
        gelu(n, x, h, dh);
        return;
    case ATF_ACT_SOFTPLUS:
        softplus(a->beta, a->threshold, n, x, h, dh);
        return;
    default:
        break;
    }
    for (size_t i = 0; i < n; i++) {
        double v = x[i], y, d;
        switch (a->kind) {
        case ATF_ACT_LEAKY_RELU:
            y = v > 0.0 ? v : v * a->slope;
            d = v > 0.0 ? 1.0 : a->slope;
            break;
        case ATF_ACT_TANH:
            y = tanh(v);
            d = 1.0 - y * y;
            break;
        case ATF_ACT_SIGMOID:
            y = 1.0 / (1.0 + exp(-v));
            d = (1.0 - y) * y;
            break;
        case ATF_ACT_IDENTITY:
            y = v;
            d = 1.0;
            break;
        default: /* relu */
            y = v > 0.0 ? v : 0.0;
            d = v > 0.0 ? 1.0 : 0.0;
            break;
        }
        if (dh)
            dh[i] = d;
        if (h)
            h[i] = y;
    }
}

atf_error atf_activations_parse(const char *text, int L, atf_activation *act, char *err)
{
    int hidden = L - 1, n = 1;
    for (const char *s = text; *s; s++)
        n += *s == ';';
    if (n != 1 && n != hidden) {
        atf_errorf(err, "activation: '%s' has %d specs but the network has %d hidden layer%s "
                   "(give one spec, or one per hidden layer separated by ';')", text, n, hidden,
                   hidden == 1 ? "" : "s");
        return ATF_E_USAGE;
    }
    atf_activation parsed[ATF_MAX_LAYERS];
    const char *s = text;
    for (int i = 0; i < n; i++) {
        const char *end = strchr(s, ';');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        char spec[ATF_ACTIVATION_SPECLEN];
        if (len >= sizeof spec) {
            atf_errorf(err, "activation: '%.40s...': spec too long", s);
            return ATF_E_USAGE;
        }
        memcpy(spec, s, len);
        spec[len] = '\0';
        atf_error e = atf_activation_parse(spec, &parsed[i], err);
        if (e)
            return e;
        s = end ? end + 1 : s + len;
    }
    for (int l = 0; l < hidden; l++)
        act[l] = parsed[n == 1 ? 0 : l];
    return ATF_OK;
}

int atf_arch_activation_specs(const atf_arch *a, char *buf, size_t len)
{
    char spec[ATF_ACTIVATION_SPECLEN];
    int all_same = 1;
    for (int l = 1; l < a->L - 1; l++) {
        char first[ATF_ACTIVATION_SPECLEN];
        atf_activation_format(&a->act[0], first, sizeof first);
        atf_activation_format(&a->act[l], spec, sizeof spec);
        all_same &= !strcmp(first, spec);
    }
    size_t n = 0;
    if (len)
        buf[0] = '\0';
    for (int l = 0; l < (all_same ? (a->L > 1 ? 1 : 0) : a->L - 1); l++) {
        atf_activation_format(&a->act[l], spec, sizeof spec);
        n += (size_t)snprintf(buf + (n < len ? n : len), n < len ? len - n : 0, "%s%s",
                              l ? ";" : "", spec);
    }
    return (int)n;
}
