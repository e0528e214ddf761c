/* penalty_parse.c — the spec-string grammar of docs/penalties.md, its canonical format, and the
 * structural predicates (convexity, nuclear) of a parsed penalty.
 *
 *     penalty := term | term "+" term        (spaces around "+" allowed)
 *     term    := family [ ":" key "=" number { "," key "=" number } ]
 *
 * In a template (atf_penalty_parse_template) the scale may also be `auto`: scale=auto.
 *
 * Numbers are read with strtod, so a term is ended by the first character strtod does not
 * consume: "pow:p=1e+3" is one term, not two. */
#include "atf_penalty.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *name;
    atf_family family;
} family_name;

static const family_name FAMILY_NAMES[] = {
    {"fixed", ATF_FAMILY_FIXED}, {"sq", ATF_FAMILY_SQ},       {"abs", ATF_FAMILY_ABS},
    {"pow", ATF_FAMILY_POW},     {"zsq", ATF_FAMILY_ZSQ},     {"logsq", ATF_FAMILY_LOGSQ},
    {"nuclear", ATF_FAMILY_NUCLEAR}, {"balanced", ATF_FAMILY_BALANCED},
};
#define N_FAMILIES (sizeof FAMILY_NAMES / sizeof FAMILY_NAMES[0])

int atf_penalty_family_count(void)
{
    return (int)N_FAMILIES;
}

const char *atf_penalty_family_name(int i)
{
    return i >= 0 && i < (int)N_FAMILIES ? FAMILY_NAMES[i].name : NULL;
}

static const char *family_to_name(atf_family f)
{
    for (size_t i = 0; i < N_FAMILIES; ++i)
        if (FAMILY_NAMES[i].family == f)
            return FAMILY_NAMES[i].name;
    return "?";
}

static atf_omega omega_fixed(void)
{
    atf_omega w = {ATF_FAMILY_FIXED, 0.0, 1.0, 0};
    return w;
}

atf_penalty atf_penalty_default(void)
{
    atf_penalty pen = {{ATF_FAMILY_SQ, 0.0, 1.0, 0}, omega_fixed()};
    return pen;
}

/* ---------------------------------------------------------------- parsing ---------- */

typedef struct {
    const char *spec; /* whole string, for messages */
    const char *s;    /* cursor */
    char *err;
    int allow_auto;   /* a template: scale=auto is accepted */
} cursor;

static void skip_spaces(cursor *c)
{
    while (*c->s && isspace((unsigned char)*c->s))
        ++c->s;
}

static atf_error fail(const cursor *c, const char *why)
{
    atf_errorf(c->err, "penalty \"%s\": %s", c->spec, why);
    return ATF_E_INPUT;
}

static size_t word_length(const char *s)
{
    size_t n = 0;
    while (isalnum((unsigned char)s[n]) || s[n] == '_')
        ++n;
    return n;
}

static atf_error parse_family(cursor *c, atf_omega *w)
{
    size_t n = word_length(c->s);
    if (n == 0) {
        if (*c->s == '\0' || *c->s == '+')
            return fail(c, "empty term (expected a family: fixed, sq, abs, pow, zsq, logsq, "
                           "nuclear, balanced)");
        char why[96];
        snprintf(why, sizeof why, "unexpected character '%c' where a family name should start",
                 *c->s);
        return fail(c, why);
    }
    for (size_t i = 0; i < N_FAMILIES; ++i) {
        if (strlen(FAMILY_NAMES[i].name) == n && strncmp(FAMILY_NAMES[i].name, c->s, n) == 0) {
            w->family = FAMILY_NAMES[i].family;
            w->p = 0.0;
            w->scale = 1.0;
            w->auto_scale = 0;
            c->s += n;
            return ATF_OK;
        }
    }
    char why[160];
    snprintf(why, sizeof why,
             "unknown family \"%.*s\" (expected fixed, sq, abs, pow, zsq, logsq, nuclear or "
             "balanced)",
             (int)(n > 40 ? 40 : n), c->s);
    return fail(c, why);
}

/* 1 if the cursor is at the word "auto" (followed by the end, ',', '+' or a space). */
static int at_auto(const cursor *c)
{
    return strncmp(c->s, "auto", 4) == 0 && word_length(c->s) == 4;
}

/* Reads "key=number" at the cursor into *key (copied, truncated) and *value; "scale=auto" sets
 * *is_auto instead (accepted in templates only). */
static atf_error parse_setting(cursor *c, char key[16], double *value, int *is_auto)
{
    *is_auto = 0;
    size_t n = word_length(c->s);
    if (n == 0)
        return fail(c, "empty setting (expected key=number after ':' or ',')");
    snprintf(key, 16, "%.*s", (int)(n > 15 ? 15 : n), c->s);
    if (n > 15)
        return fail(c, "unknown key (keys are p and scale)");
    c->s += n;
    if (*c->s != '=') {
        char why[96];
        snprintf(why, sizeof why, "key %s must be followed by '=' and a number", key);
        return fail(c, why);
    }
    ++c->s;
    if (strcmp(key, "scale") == 0 && at_auto(c)) {
        if (!c->allow_auto)
            return fail(c, "scale=auto is not accepted here (only where a template is resolved "
                           "from a baseline solution)");
        c->s += 4;
        *is_auto = 1;
        *value = 1.0;
        return ATF_OK;
    }
    char *end;
    double x = isspace((unsigned char)*c->s) ? 0.0 : strtod(c->s, &end);
    if (isspace((unsigned char)*c->s) || end == c->s) {
        char why[96];
        snprintf(why, sizeof why, "%s= needs a number", key);
        return fail(c, why);
    }
    if (!isfinite(x)) {
        char why[128];
        snprintf(why, sizeof why, "%s=%.*s is not a finite number", key,
                 (int)(end - c->s > 40 ? 40 : end - c->s), c->s);
        return fail(c, why);
    }
    c->s = end;
    *value = x;
    return ATF_OK;
}

static atf_error apply_setting(cursor *c, atf_omega *w, const char *key, double value,
                               int is_auto, int *seen_p, int *seen_scale)
{
    char why[160];
    if (strcmp(key, "p") == 0) {
        if (w->family != ATF_FAMILY_POW) {
            snprintf(why, sizeof why, "key p does not apply to family %s (only pow takes p)",
                     family_to_name(w->family));
            return fail(c, why);
        }
        if (*seen_p)
            return fail(c, "key p given twice");
        if (!(value > 0.0)) {
            snprintf(why, sizeof why, "p must be > 0 (got %.17g)", value);
            return fail(c, why);
        }
        *seen_p = 1;
        w->p = value;
        return ATF_OK;
    }
    if (strcmp(key, "scale") == 0) {
        if (*seen_scale)
            return fail(c, "key scale given twice");
        if (!(value > 0.0)) {
            snprintf(why, sizeof why, "scale must be > 0 (got %.17g)", value);
            return fail(c, why);
        }
        *seen_scale = 1;
        w->scale = value;
        w->auto_scale = is_auto;
        return ATF_OK;
    }
    snprintf(why, sizeof why, "unknown key \"%s\" (keys are p for pow, and scale)", key);
    return fail(c, why);
}

static atf_error parse_term(cursor *c, atf_omega *w)
{
    atf_error e = parse_family(c, w);
    if (e != ATF_OK)
        return e;
    int seen_p = 0, seen_scale = 0;
    if (*c->s == ':') {
        do {
            ++c->s; /* past ':' or ',' */
            char key[16];
            double value;
            int is_auto;
            if ((e = parse_setting(c, key, &value, &is_auto)) != ATF_OK)
                return e;
            if ((e = apply_setting(c, w, key, value, is_auto, &seen_p, &seen_scale)) != ATF_OK)
                return e;
        } while (*c->s == ',');
    }
    if (w->family == ATF_FAMILY_POW && !seen_p)
        return fail(c, "family pow requires p (e.g. pow:p=1.5)");
    return ATF_OK;
}

static atf_error parse_spec(const char *spec, int allow_auto, atf_penalty *pen, char *err)
{
    cursor c = {spec ? spec : "", spec ? spec : "", err, allow_auto};
    atf_omega w[2] = {omega_fixed(), omega_fixed()};
    int nterms = 0;
    skip_spaces(&c);
    if (*c.s == '\0')
        return fail(&c, "empty spec (expected e.g. sq, abs, pow:p=1.5, sq+sq)");
    for (;;) {
        if (nterms == 2)
            return fail(&c, "more than two terms (a penalty is one term or term+term)");
        atf_error e = parse_term(&c, &w[nterms]);
        if (e != ATF_OK)
            return e;
        ++nterms;
        skip_spaces(&c);
        if (*c.s == '\0')
            break;
        if (*c.s == ',')
            return fail(&c, "unexpected ',' (settings follow ':', e.g. sq:scale=2)");
        if (*c.s != '+') {
            char why[128];
            snprintf(why, sizeof why,
                     "unexpected character '%c' after a term (expected '+' or the end)", *c.s);
            return fail(&c, why);
        }
        ++c.s;
        skip_spaces(&c);
        if (*c.s == '\0')
            return fail(&c, "empty term after '+'");
    }
    if (nterms == 2 && (w[0].family == ATF_FAMILY_NUCLEAR || w[1].family == ATF_FAMILY_NUCLEAR))
        return fail(&c, "nuclear cannot be joined with '+' (it is a limit case, not an omega on "
                        "[1, inf))");
    if (pen) {
        pen->w1 = w[0];
        pen->w2 = w[1];
    }
    return ATF_OK;
}

atf_error atf_penalty_parse(const char *spec, atf_penalty *pen, char *err)
{
    return parse_spec(spec, 0, pen, err);
}

atf_error atf_penalty_parse_template(const char *spec, atf_penalty *pen, char *err)
{
    return parse_spec(spec, 1, pen, err);
}

/* ---------------------------------------------------------------- editing ---------- */

int atf_penalty_has_auto_scale(const atf_penalty *pen)
{
    return pen->w1.auto_scale || pen->w2.auto_scale;
}

/* The terms a scale applies to (see atf_penalty_set_scale). */
static int takes_scale(const atf_omega *w)
{
    return w->family != ATF_FAMILY_FIXED || w->auto_scale;
}

atf_error atf_penalty_set_scale(atf_penalty *pen, double gamma)
{
    if (!(gamma > 0.0) || !isfinite(gamma))
        return ATF_E_USAGE;
    atf_omega *terms[2] = {&pen->w1, &pen->w2};
    for (int i = 0; i < 2; ++i)
        if (takes_scale(terms[i])) {
            terms[i]->scale = gamma;
            terms[i]->auto_scale = 0;
        }
    return ATF_OK;
}

atf_error atf_penalty_resolve_auto_scale(atf_penalty *pen, double gamma)
{
    if (!(gamma > 0.0) || !isfinite(gamma))
        return ATF_E_USAGE;
    atf_omega *terms[2] = {&pen->w1, &pen->w2};
    for (int i = 0; i < 2; ++i)
        if (terms[i]->auto_scale) {
            terms[i]->scale = gamma;
            terms[i]->auto_scale = 0;
        }
    return ATF_OK;
}

void atf_penalty_set_auto_scale(atf_penalty *pen)
{
    atf_omega *terms[2] = {&pen->w1, &pen->w2};
    for (int i = 0; i < 2; ++i)
        if (takes_scale(terms[i])) {
            terms[i]->scale = 1.0;
            terms[i]->auto_scale = 1;
        }
}

/* ---------------------------------------------------------------- formatting ------- */

/* Shortest %.Ng (N = 15..17) that reads back as exactly x. */
static void format_number(double x, char *buf, size_t len)
{
    for (int digits = 15; digits <= 17; ++digits) {
        snprintf(buf, len, "%.*g", digits, x);
        if (strtod(buf, NULL) == x)
            return;
    }
}

static void format_term(const atf_omega *w, char *buf, size_t len)
{
    char p[40] = "", scale[40] = "";
    if (w->family == ATF_FAMILY_POW) {
        strcpy(p, ":p=");
        format_number(w->p, p + 3, sizeof p - 3);
    }
    if (w->auto_scale || w->scale != 1.0) {
        strcpy(scale, w->family == ATF_FAMILY_POW ? ",scale=" : ":scale=");
        if (w->auto_scale)
            strcpy(scale + 7, "auto");
        else
            format_number(w->scale, scale + 7, sizeof scale - 7);
    }
    snprintf(buf, len, "%s%s%s", family_to_name(w->family), p, scale);
}

int atf_penalty_format(const atf_penalty *pen, char *buf, size_t len)
{
    char left[ATF_PENALTY_SPECLEN], right[ATF_PENALTY_SPECLEN];
    format_term(&pen->w1, left, sizeof left);
    if (pen->w2.family == ATF_FAMILY_FIXED && pen->w2.scale == 1.0 && !pen->w2.auto_scale)
        return snprintf(buf, len, "%s", left);
    format_term(&pen->w2, right, sizeof right);
    return snprintf(buf, len, "%s+%s", left, right);
}
