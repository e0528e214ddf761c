/* metrics.c — centering of a problem, and penalty specs with scale=auto (resolved from the NTK
 * baseline's largest singular value). Test metrics are the tangent library's (atf_features.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/exp_internal.h"
#include "atf_penalty.h"

/* γ = (fraction · dmax)², rounded to 6 significant digits: the resolved spec stays short and
 * the runs recorded before penalty specs were edited through the parser keep their γ. */
static double auto_gamma(double dmax, double fraction)
{
    char text[32];
    snprintf(text, sizeof text, "%.6g", fraction * dmax * fraction * dmax);
    return strtod(text, NULL);
}

atf_error atf_resolve_auto_scale(const char *spec, double dmax, double fraction, char *out,
                                 size_t outlen, double *gamma, char *err)
{
    atf_penalty pen;
    double g = NAN;
    atf_error e = atf_penalty_parse_template(spec, &pen, err);
    if (e)
        return e;
    int n;
    if (atf_penalty_has_auto_scale(&pen)) {
        g = auto_gamma(dmax, fraction);
        if (!(dmax > 0) || !(fraction > 0) || atf_penalty_resolve_auto_scale(&pen, g)) {
            atf_errorf(err, "penalty '%s': scale=auto needs a baseline with a nonzero singular "
                       "value and a positive fraction", spec);
            return ATF_E_INPUT;
        }
        n = atf_penalty_format(&pen, out, outlen);
    } else { /* nothing to resolve: the spec as given */
        n = snprintf(out, outlen, "%s", spec);
    }
    if (n < 0 || (size_t)n >= outlen) {
        atf_errorf(err, "penalty '%s': too long", spec);
        return ATF_E_USAGE;
    }
    if (gamma)
        *gamma = g;
    return ATF_OK;
}

atf_error atf_check_auto_spec(const char *spec, char *err)
{
    atf_penalty pen;
    return atf_penalty_parse_template(spec, &pen, err) ? ATF_E_USAGE : ATF_OK;
}

atf_error atf_penalty_with_scale(const char *spec, const char *scale, char *out, size_t outlen,
                                 char *err)
{
    static const char marker[] = "scale=auto";
    atf_penalty pen;
    char tmpl[256];
    if (atf_penalty_parse_template(spec, &pen, err))
        return ATF_E_USAGE;
    atf_penalty_set_auto_scale(&pen); /* every term that takes a scale: "scale=auto" */
    int n = atf_penalty_format(&pen, tmpl, sizeof tmpl);
    size_t used = 0;
    out[0] = '\0';
    const char *p = tmpl;
    while (n >= 0 && (size_t)n < sizeof tmpl) { /* each "scale=auto" becomes "scale=SCALE" */
        const char *hit = strstr(p, marker);
        size_t keep = hit ? (size_t)(hit - p) : strlen(p);
        int w = snprintf(out + used, outlen - used, "%.*s%s%s", (int)keep, p, hit ? "scale=" : "",
                         hit ? scale : "");
        if (w < 0 || (size_t)w >= outlen - used)
            break;
        used += (size_t)w;
        if (!hit)
            return ATF_OK;
        p = hit + sizeof marker - 1;
    }
    atf_errorf(err, "penalty '%s' with scale=%s: too long", spec, scale);
    return ATF_E_USAGE;
}

void atf_problem_center(atf_problem *p)
{
    if (!p)
        return;
    p->fingerprint[0] = '\0'; /* r changes: results must not claim the file's content */
    for (int m = 0; m < p->M; m++) {
        double f0 = p->f0 ? p->f0[m] : 0.0;
        p->r[m] += f0;
        if (p->f0)
            p->f0[m] = 0.0;
    }
}

atf_error atf_exp_split_names(const char *what, const char *text, char items[][ATF_EXP_NAMELEN],
                              int max, int *n, char *err)
{
    *n = 0;
    if (!text || !*text) {
        atf_errorf(err, "%s: empty list", what);
        return ATF_E_USAGE;
    }
    for (const char *p = text; *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == 0 || len >= ATF_EXP_NAMELEN || *n >= max) {
            atf_errorf(err, "%s: bad list '%s'", what, text);
            return ATF_E_USAGE;
        }
        memcpy(items[*n], p, len);
        items[*n][len] = '\0';
        (*n)++;
        p += len + (comma ? 1 : 0);
    }
    return ATF_OK;
}
