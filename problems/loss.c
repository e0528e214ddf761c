/* loss.c — the loss of problem (16) and of the models trained by gradient descent: spec
 * strings, values and gradients (stable log-sum-exp for the softmax cross-entropy). The solver's
 * equilibrated form of the same loss is solver/pg_loss.c. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf_loss.h"

/* ---- spec strings ------------------------------------------------------------------------ */

atf_loss atf_loss_default(void)
{
    atf_loss l = {ATF_LOSS_INTERPOLATE, 0.0};
    return l;
}

const char *atf_loss_name(atf_loss_kind kind)
{
    switch (kind) {
    case ATF_LOSS_INTERPOLATE: return "interpolate";
    case ATF_LOSS_SQUARED: return "squared";
    case ATF_LOSS_XENT: return "xent";
    }
    return "?";
}

static atf_error bad_spec(const char *spec, const char *why, char *err)
{
    atf_errorf(err, "loss \"%.80s\": %s", spec, why);
    return ATF_E_INPUT;
}

/* "lambda=λ" at s, the whole rest of the string. */
static atf_error parse_lambda(const char *spec, const char *s, double *lambda, char *err)
{
    if (strncmp(s, "lambda=", 7) != 0)
        return bad_spec(spec, "expected lambda=NUMBER after ':' (the only key)", err);
    s += 7;
    char *end;
    double x = isspace((unsigned char)*s) ? NAN : strtod(s, &end);
    if (isnan(x) || end == s)
        return bad_spec(spec, "lambda= needs a number", err);
    if (*end != '\0')
        return bad_spec(spec, "unexpected text after the lambda value", err);
    if (!isfinite(x) || !(x > 0.0))
        return bad_spec(spec, "lambda must be a finite number > 0", err);
    *lambda = x;
    return ATF_OK;
}

atf_error atf_loss_parse(const char *spec, atf_loss *loss, char *err)
{
    if (!spec || !loss) {
        atf_errorf(err, "loss: no spec given");
        return ATF_E_INPUT;
    }
    if (strcmp(spec, "interpolate") == 0) {
        *loss = atf_loss_default();
        return ATF_OK;
    }
    static const struct {
        const char *name;
        atf_loss_kind kind;
    } fitted[] = {{"squared", ATF_LOSS_SQUARED}, {"xent", ATF_LOSS_XENT}};
    for (size_t i = 0; i < sizeof fitted / sizeof fitted[0]; i++) {
        size_t n = strlen(fitted[i].name);
        if (strncmp(spec, fitted[i].name, n) != 0 || (spec[n] != ':' && spec[n] != '\0'))
            continue;
        if (spec[n] == '\0')
            return bad_spec(spec, "needs :lambda=NUMBER (e.g. squared:lambda=0.01)", err);
        atf_loss l = {fitted[i].kind, 0.0};
        atf_error e = parse_lambda(spec, spec + n + 1, &l.lambda, err);
        if (e == ATF_OK)
            *loss = l;
        return e;
    }
    return bad_spec(spec, "unknown loss (expected interpolate, squared:lambda=λ or "
                          "xent:lambda=λ)", err);
}

/* Shortest %.Ng (N = 15..17) that reads back as exactly x (as the penalty specs do). */
static void format_number(double x, char *buf, size_t len)
{
    for (int digits = 15; digits <= 17; ++digits) {
        snprintf(buf, len, "%.*g", digits, x);
        if (strtod(buf, NULL) == x)
            return;
    }
}

int atf_loss_format(const atf_loss *loss, char *buf, size_t len)
{
    if (loss->kind == ATF_LOSS_INTERPOLATE)
        return snprintf(buf, len, "interpolate");
    char num[40];
    format_number(loss->lambda, num, sizeof num);
    return snprintf(buf, len, "%s:lambda=%s", atf_loss_name(loss->kind), num);
}

atf_error atf_loss_check(const atf_loss *loss, const atf_problem *prob, const char *what,
                         char *err)
{
    if (loss->kind != ATF_LOSS_XENT)
        return ATF_OK;
    if (prob->C < 2) {
        atf_errorf(err, "%s: outputs: the xent loss needs at least 2 outputs (classes), the "
                        "problem has %d", what, prob->C);
        return ATF_E_INPUT;
    }
    if (!prob->labels) {
        atf_errorf(err, "%s: /labels: missing (the xent loss needs the class of every example)",
                   what);
        return ATF_E_INPUT;
    }
    for (int i = 0; i < prob->N; i++)
        if (prob->labels[i] < 0 || prob->labels[i] >= prob->C) {
            atf_errorf(err, "%s: /labels: label %d of example %d is outside 0 … %d", what,
                       prob->labels[i], i, prob->C - 1);
            return ATF_E_INPUT;
        }
    return ATF_OK;
}

/* ---- values and gradients (problem units) ------------------------------------------------ */

/* −log softmax(z)[y] of one example's C logits; p (may be NULL) receives softmax(z). */
double atf_softmax_xent(int C, const double *z, int y, double *p)
{
    double mx = z[0];
    for (int k = 1; k < C; k++)
        mx = fmax(mx, z[k]);
    double sum = 0.0;
    for (int k = 0; k < C; k++)
        sum += exp(z[k] - mx);
    if (p)
        for (int k = 0; k < C; k++)
            p[k] = exp(z[k] - mx) / sum;
    return mx + log(sum) - z[y];
}

double atf_loss_value(const atf_loss *loss, int N, int C, const double *pred, const double *r,
                      const double *f0, const int *labels, double *grad)
{
    size_t M = (size_t)N * (size_t)C;
    double sum = 0.0;
    if (loss->kind == ATF_LOSS_SQUARED) {
        for (size_t m = 0; m < M; m++) {
            double d = pred[m] - r[m];
            sum += d * d;
            if (grad)
                grad[m] = d / loss->lambda;
        }
        return sum / (2.0 * loss->lambda);
    }
    if (loss->kind != ATF_LOSS_XENT)
        return NAN;
    double zbuf[64], *z = C <= 64 ? zbuf : malloc((size_t)C * sizeof *z);
    if (!z)
        return NAN;
    for (int i = 0; i < N; i++) {
        size_t o = (size_t)i * (size_t)C;
        for (int k = 0; k < C; k++)
            z[k] = (f0 ? f0[o + (size_t)k] : 0.0) + pred[o + (size_t)k];
        sum += atf_softmax_xent(C, z, labels[i], grad ? grad + o : NULL);
        if (grad) {
            grad[o + (size_t)labels[i]] -= 1.0;
            for (int k = 0; k < C; k++)
                grad[o + (size_t)k] /= loss->lambda;
        }
    }
    if (z != zbuf)
        free(z);
    return sum / loss->lambda;
}

double atf_loss_mean_xent(int N, int C, const double *logits, const int *labels)
{
    double sum = 0.0;
    for (int i = 0; i < N; i++)
        sum += atf_softmax_xent(C, logits + (size_t)i * (size_t)C, labels[i], NULL);
    return N > 0 ? sum / N : NAN;
}

double atf_loss_lipschitz(const atf_loss *loss)
{
    switch (loss->kind) {
    case ATF_LOSS_SQUARED: return 1.0 / loss->lambda;
    case ATF_LOSS_XENT: return 0.5 / loss->lambda;
    case ATF_LOSS_INTERPOLATE: return 0.0;
    }
    return 0.0;
}
