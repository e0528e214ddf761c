/* experiment_penalties.c — the penalties experiment (paper Fig. 2).
 *
 * Tabulates the effective penalty ω̃ (eq. 12) of several penalties against v², on linear axes
 * (the paper's view) and on log–log axes (where the sub-quadratic tails show as slopes below 2),
 * and the proximal maps prox_{tω̃} that the solver applies to singular values. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf_penalty.h"
#include "internal/exp_internal.h"
#include "atf_report.h"

enum { NLOG = 121 }; /* points of the log–log panel, v from 0.1 to 100 */

static const char *const default_specs[] = {"sq", "abs", "sq+abs"};

void atf_penalties_defaults(atf_penalties_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->from = 0.0;
    cfg->to = 5.0;
    cfg->num = 201;
    cfg->t = 1.0;
    snprintf(cfg->out, sizeof cfg->out, "out/penalties");
}

/* The specs to draw: the configured ones, or the defaults. */
static int spec_list(const atf_penalties_config *cfg, const char **specs)
{
    int n = cfg->nspecs > 0 ? cfg->nspecs : 3;
    for (int k = 0; k < n; k++)
        specs[k] = cfg->nspecs > 0 ? cfg->specs[k] : default_specs[k];
    return n;
}

atf_error atf_penalties_check(const atf_penalties_config *cfg, char *err)
{
    if (cfg->nspecs < 0 || cfg->nspecs > ATF_PENALTIES_MAX) {
        atf_errorf(err, "penalties: at most %d", ATF_PENALTIES_MAX);
        return ATF_E_USAGE;
    }
    if (cfg->from < 0 || !(cfg->to > cfg->from) || !(cfg->t > 0) || cfg->num < 2 ||
        cfg->num > 100000) {
        atf_errorf(err, "penalties: need 0 <= from < to, t > 0 and 2 <= num <= 100000");
        return ATF_E_USAGE;
    }
    const char *specs[ATF_PENALTIES_MAX];
    int n = spec_list(cfg, specs);
    for (int k = 0; k < n; k++) {
        atf_penalty pen;
        if (atf_penalty_parse(specs[k], &pen, err))
            return ATF_E_USAGE;
    }
    return ATF_OK;
}

/* Everything tabulated: per spec (and the quadratic reference as the last curve) ω̃ and the
 * prox on the linear grid v, ω̃ on the log grid vl. */
typedef struct {
    int ns, n;
    const char *specs[ATF_PENALTIES_MAX];
    atf_penalty pens[ATF_PENALTIES_MAX];
    double *v, *vl, *w, *px, *wl;
} pen_tables;

static void free_tables(pen_tables *t)
{
    free(t->v), free(t->vl), free(t->w), free(t->px), free(t->wl);
}

static atf_error alloc_tables(const atf_penalties_config *cfg, pen_tables *t, char *err)
{
    memset(t, 0, sizeof *t);
    t->ns = spec_list(cfg, t->specs);
    t->n = cfg->num;
    for (int k = 0; k < t->ns; k++)
        if (atf_penalty_parse(t->specs[k], &t->pens[k], err))
            return ATF_E_USAGE;
    size_t n = (size_t)t->n, curves = (size_t)t->ns + 1;
    t->v = malloc(sizeof(double) * n);
    t->vl = malloc(sizeof(double) * NLOG);
    t->w = malloc(sizeof(double) * curves * n);
    t->px = malloc(sizeof(double) * curves * n);
    t->wl = malloc(sizeof(double) * curves * NLOG);
    if (!t->v || !t->vl || !t->w || !t->px || !t->wl) {
        atf_errorf(err, "penalties: out of memory");
        return ATF_E_NOMEM;
    }
    return ATF_OK;
}

static void tabulate(const atf_penalties_config *cfg, pen_tables *t)
{
    int n = t->n, ns = t->ns;
    for (int i = 0; i < n; i++)
        t->v[i] = cfg->from + (cfg->to - cfg->from) * i / (n - 1);
    for (int i = 0; i < NLOG; i++)
        t->vl[i] = pow(10.0, -1.0 + 3.0 * i / (NLOG - 1));
    for (int k = 0; k < ns; k++) {
        for (int i = 0; i < n; i++) {
            t->w[k * n + i] = atf_penalty_value(&t->pens[k], t->v[i], NULL);
            t->px[k * n + i] = atf_penalty_prox(&t->pens[k], t->v[i], cfg->t, NULL);
        }
        for (int i = 0; i < NLOG; i++)
            t->wl[k * NLOG + i] = atf_penalty_value(&t->pens[k], t->vl[i], NULL);
    }
    for (int i = 0; i < n; i++) { /* the quadratic reference v² and its prox v/(1+2t) */
        t->w[ns * n + i] = t->v[i] * t->v[i];
        t->px[ns * n + i] = t->v[i] / (1.0 + 2.0 * cfg->t);
    }
    for (int i = 0; i < NLOG; i++)
        t->wl[ns * NLOG + i] = t->vl[i] * t->vl[i];
}

/* OUT/penalties.csv: spec,v,omega_tilde,z,prox,s1,s2 for every spec and v. */
static atf_error write_csv(const atf_penalties_config *cfg, const pen_tables *t, char *err)
{
    size_t cap = 256, len = 0; /* a line: the spec quoted (≤ 2×+2), 6 numbers, separators */
    for (int k = 0; k < t->ns; k++)
        cap += (size_t)t->n * (2 * strlen(t->specs[k]) + 2 + 6 * 18 + 8);
    char *csv = malloc(cap), path[1100];
    if (!csv) {
        atf_errorf(err, "penalties: out of memory");
        return ATF_E_NOMEM;
    }
    len += (size_t)snprintf(csv + len, cap - len, "spec,v,omega_tilde,z,prox,s1,s2\n");
    for (int k = 0; k < t->ns; k++)
        for (int i = 0; i < t->n; i++) {
            double z, s1, s2, v = t->v[i];
            atf_penalty_value(&t->pens[k], v, &z);
            atf_penalty_joint(&t->pens[k], z, &s1, &s2);
            len += (size_t)atf_csv_field(t->specs[k], csv + len, cap - len);
            len += (size_t)snprintf(csv + len, cap - len, ",%.10g,%.10g,%.10g,%.10g,%.10g,%.10g\n",
                                    v, t->w[k * t->n + i], z, t->px[k * t->n + i], s1, s2);
        }
    atf_error e = atf_exp_path(path, sizeof path, cfg->out, "penalties.csv", err);
    if (!e)
        e = atf_write_text_atomic(path, csv, strlen(csv), err);
    free(csv);
    return e;
}

static void fill_panel(atf_plot_panel *pl, const pen_tables *t, int p)
{
    const double *x = p == 1 ? t->vl : t->v;
    int m = p == 1 ? NLOG : t->n;
    const double *ybase = p == 0 ? t->w : p == 1 ? t->wl : t->px;
    pl->kind = ATF_PANEL_LINES;
    pl->xlabel = "v";
    pl->logx = pl->logy = p == 1;
    pl->legend = p == 1 ? ATF_LEGEND_BOTTOM_RIGHT : ATF_LEGEND_TOP_LEFT;
    for (int k = 0; k <= t->ns; k++)
        pl->series[pl->nseries++] = (atf_plot_series){
            k < t->ns ? t->specs[k] : (p == 2 ? "v/(1+2t)  (v²)" : "v²"), x,
            ybase + (size_t)k * m, NULL, m, k < t->ns ? k : 6, k < t->ns ? 0 : 1, 0, 0, 0};
    if (p == 0) { /* clip the quadratic so the sub-quadratic curves stay readable */
        double top = 0;
        for (int k = 0; k < t->ns; k++)
            top = fmax(top, t->w[k * t->n + t->n - 1]);
        pl->fixed_y = 1;
        pl->ymin = 0;
        pl->ymax = 1.15 * fmax(top, 1.0);
    }
}

static atf_error penalties_figure(const atf_penalties_config *cfg, const pen_tables *t, char *err)
{
    atf_plot_panel panels[3];
    memset(panels, 0, sizeof panels);
    char ptitle[64], base[1100];
    snprintf(ptitle, sizeof ptitle, "prox of t·ω̃, t = %g", cfg->t);
    const char *titles[3] = {"effective penalty ω̃(v)", "log–log: sub-quadratic tails", ptitle};
    const char *ylabels[3] = {"ω̃(v)", "ω̃(v)", "prox(v)"};
    for (int p = 0; p < 3; p++) {
        fill_panel(&panels[p], t, p);
        panels[p].title = titles[p];
        panels[p].ylabel = ylabels[p];
    }
    atf_plot_figure fig = {"Effective penalties (paper Fig. 2)", 3, 1, 1800, 560, 3, panels, 0};
    atf_error e = atf_exp_path(base, sizeof base, cfg->out, "penalties", err);
    return e ? e : atf_plot_save(&fig, base, err);
}

/* Slope of log ω̃ against log v between v1 and v2. */
static double tail_slope(const atf_penalty *pen, double v1, double v2)
{
    return (log(atf_penalty_value(pen, v2, NULL)) - log(atf_penalty_value(pen, v1, NULL))) /
           (log(v2) - log(v1));
}

static void report_json(const atf_penalties_config *cfg, const pen_tables *t)
{
    json_t *o = json_object(), *slopes = json_object();
    char path[1100];
    for (int k = 0; k < t->ns; k++)
        json_object_set_new(slopes, t->specs[k], atf_json_number(tail_slope(&t->pens[k], 1e2, 1e3)));
    json_object_set_new(o, "status", json_string("done"));
    snprintf(path, sizeof path, "%s/penalties.csv", cfg->out);
    json_object_set_new(o, "csv", atf_json_text(path));
    snprintf(path, sizeof path, "%s/penalties.svg", cfg->out);
    json_object_set_new(o, "figure", atf_json_text(path));
    json_object_set_new(o, "tail_slopes", slopes);
    char *line = atf_json_line(o);
    if (line)
        fprintf(cfg->io.report, "%s\n", line);
    free(line);
    json_decref(o);
}

static void report_table(const atf_penalties_config *cfg, const pen_tables *t)
{
    FILE *f = cfg->io.report;
    fprintf(f, "| penalty | ω̃(1) | ω̃(5) | tail slope (v = 1e2..1e3) |\n|---|---|---|---|\n");
    for (int k = 0; k < t->ns; k++)
        fprintf(f, "| `%s` | %.4f | %.4f | %.3f |\n", t->specs[k],
                atf_penalty_value(&t->pens[k], 1.0, NULL),
                atf_penalty_value(&t->pens[k], 5.0, NULL), tail_slope(&t->pens[k], 1e2, 1e3));
    fprintf(f, "| v² | 1 | 25 | 2 |\n");
}

atf_error atf_penalties_run(const atf_penalties_config *cfg, atf_exp_outcome *outcome, char *err)
{
    memset(outcome, 0, sizeof *outcome);
    pen_tables t;
    memset(&t, 0, sizeof t);
    atf_error e = atf_penalties_check(cfg, err);
    if (!e)
        e = atf_mkdir_p(cfg->out, err);
    if (!e)
        e = alloc_tables(cfg, &t, err);
    if (!e) {
        tabulate(cfg, &t);
        e = write_csv(cfg, &t, err);
    }
    if (!e)
        e = penalties_figure(cfg, &t, err);
    if (!e && cfg->io.report)
        (cfg->io.json ? report_json : report_table)(cfg, &t);
    if (!e)
        outcome->rows = outcome->new_rows = t.ns * t.n;
    free_tables(&t);
    return e;
}
