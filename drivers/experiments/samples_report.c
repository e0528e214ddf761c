/* samples_report.c — what the samples experiment reports beyond the mean ± std table, from
 * every recorded row:
 *  - sample complexity (with error thresholds): for every model and level τ the n at which its
 *    test error (for the built-in regression task, its relative test MSE) reaches τ,
 *    interpolated linearly in log n between the two sizes around the
 *    first crossing — per seed (the same θ0 at every n) and from the mean curve — and for
 *    every pair of a fixed-feature model with an adaptive one the ratio n*_fixed / n*_adaptive
 *    (the "order of magnitude" of the paper, measured): OUT/samples_complexity.csv,
 *    OUT/samples_ratios.csv, OUT/samples_complexity.{svg,png};
 *  - the network's kernel alignments (with an alignment configured): per layer and over all
 *    layers, the cosine of its final NTK with K0 and with problem (16)'s adapted kernel against
 *    n: OUT/samples_alignment.csv, OUT/samples_alignment.{svg,png}.
 * experiment_samples.c calls it at the end of a run; it reads the rows only. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/samples_internal.h"

enum { MAXS = ATF_SAMPLES_MAXSEEDS, MAXN = ATF_SAMPLES_MAXN, MAXL = ATF_MAX_LAYERS + 1 };

/* One value per (method, seed, n) from the rows; NaN where there is none. */
typedef struct {
    int nm, nn, ns;
    double n[MAXN];
    uint64_t seed[MAXS];
    double v[SAMPLES_MAXMETHODS][MAXS][MAXN];
} grid_values;

static int index_of_n(const grid_values *g, double n)
{
    for (int i = 0; i < g->nn; i++)
        if (g->n[i] == n)
            return i;
    return -1;
}

/* The seed's slot, added when new (−1 when there are more seeds than slots). */
static int slot_of_seed(grid_values *g, uint64_t seed)
{
    for (int j = 0; j < g->ns; j++)
        if (g->seed[j] == seed)
            return j;
    if (g->ns == MAXS)
        return -1;
    g->seed[g->ns] = seed;
    return g->ns++;
}

static int index_of_method(const method *ms, int nm, const char *name)
{
    for (int k = 0; name && k < nm; k++)
        if (!strcmp(ms[k].name, name))
            return k;
    return -1;
}

/* g->v from the rows' `column` (a number), or with `part` ≥ 0 the part-th ';'-separated value
 * of a text column (the per-layer alignments). */
static void fill_values(const atf_rowstore *st, const method *ms, int nm, const double *ns,
                        int nn, const char *column, int part, grid_values *g)
{
    memset(g, 0, sizeof *g);
    g->nm = nm, g->nn = nn;
    memcpy(g->n, ns, sizeof(double) * (size_t)nn);
    for (int k = 0; k < nm; k++)
        for (int j = 0; j < MAXS; j++)
            for (int i = 0; i < MAXN; i++)
                g->v[k][j][i] = NAN;
    for (int r = 0; r < atf_rowstore_count(st); r++) {
        const atf_row *row = atf_rowstore_row(st, r);
        int k = index_of_method(ms, nm, atf_row_get(row, "method"));
        int i = index_of_n(g, atf_row_getnum(row, "n"));
        if (k < 0 || i < 0)
            continue;
        int j = slot_of_seed(g, (uint64_t)atf_row_getnum(row, "seed"));
        if (j < 0)
            continue;
        if (part < 0) {
            g->v[k][j][i] = atf_row_getnum(row, column);
            continue;
        }
        const char *text = atf_row_get(row, column);
        for (int p = 0; text && p < part; p++)
            text = (text = strchr(text, ';')) ? text + 1 : NULL;
        char *end;
        double x = text ? strtod(text, &end) : NAN;
        g->v[k][j][i] = text && end != text ? x : NAN;
    }
}

/* ---- sample complexity ---- */

typedef struct {
    double n;    /* the interpolated n, or the smallest n (below), or NaN (not reached) */
    int below;   /* the curve is at or under τ at its smallest n already */
} crossing;

/* The first crossing of τ by the curve e over the sizes n (NaN points skipped): between two
 * sizes with e above τ then at or under it, log n interpolated linearly in e. */
static crossing first_crossing(const double *n, const double *e, int nn, double tau)
{
    int prev = -1;
    for (int i = 0; i < nn; i++) {
        if (!isfinite(e[i]))
            continue;
        if (e[i] <= tau) {
            if (prev < 0)
                return (crossing){n[i], 1};
            double t = (e[prev] - tau) / (e[prev] - e[i]);
            return (crossing){exp(log(n[prev]) + t * (log(n[i]) - log(n[prev]))), 0};
        }
        prev = i;
    }
    return (crossing){NAN, 0};
}

typedef struct {
    crossing mean;          /* of the mean curve */
    double nmax;            /* the largest n of the mean curve (NaN: none) */
    crossing seed[MAXS];
    int seeds, reached;     /* seeds with a curve, and those that reach τ */
    double geomean, lo, hi; /* over the seeds that reach τ */
} complexity;

static complexity complexity_of(const grid_values *g, int k, double tau)
{
    complexity c;
    memset(&c, 0, sizeof c);
    double mean[MAXN];
    c.nmax = NAN;
    for (int i = 0; i < g->nn; i++) {
        double s = 0.0;
        int cnt = 0;
        for (int j = 0; j < g->ns; j++)
            if (isfinite(g->v[k][j][i]))
                s += g->v[k][j][i], cnt++;
        mean[i] = cnt ? s / cnt : NAN;
        if (cnt)
            c.nmax = isfinite(c.nmax) ? fmax(c.nmax, g->n[i]) : g->n[i];
    }
    c.mean = first_crossing(g->n, mean, g->nn, tau);
    double logsum = 0.0;
    c.lo = INFINITY, c.hi = -INFINITY;
    for (int j = 0; j < g->ns; j++) {
        int any = 0;
        for (int i = 0; i < g->nn; i++)
            any |= isfinite(g->v[k][j][i]);
        if (!any)
            continue;
        c.seeds++;
        c.seed[j] = first_crossing(g->n, g->v[k][j], g->nn, tau);
        if (isfinite(c.seed[j].n)) {
            c.reached++;
            logsum += log(c.seed[j].n);
            c.lo = fmin(c.lo, c.seed[j].n), c.hi = fmax(c.hi, c.seed[j].n);
        }
    }
    c.geomean = c.reached ? exp(logsum / c.reached) : NAN;
    if (!c.reached)
        c.lo = c.hi = NAN;
    return c;
}

static const char *censor(const crossing *c)
{
    return c->below ? "below" : isfinite(c->n) ? "interpolated" : "not reached";
}

static int is_adaptive(method_kind k)
{
    return k == KIND_P16 || k == KIND_P16_XENT || k == KIND_P16_RIDGE ||
           k == KIND_FACTORIZED_SGD || k == KIND_NETWORK;
}

/* What the levels are of: the column, and its name on the figures and the table. */
static const char *level_column(const samples_plan *pl)
{
    return pl->rel_mse_levels ? "test_rel_mse" : "test_error";
}

static const char *level_name(const samples_plan *pl)
{
    return pl->rel_mse_levels ? "relative test MSE" : "test error";
}

typedef struct {
    char *text;
    size_t len, cap;
} text_buf;

static void put(text_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void put(text_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (!b->text || need < 0)
        return;
    if (b->len + (size_t)need + 1 > b->cap) {
        size_t cap = 2 * (b->cap + (size_t)need + 1);
        char *t = realloc(b->text, cap);
        if (!t) {
            free(b->text);
            b->text = NULL;
            return;
        }
        b->text = t, b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->text + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    b->len += (size_t)need;
}

static atf_error write_text(const atf_samples_config *cfg, const char *name, text_buf *b,
                            char *err)
{
    char path[1100];
    if (!b->text) {
        atf_errorf(err, "%s/%s: out of memory", cfg->out, name);
        return ATF_E_NOMEM;
    }
    atf_error e = atf_exp_path(path, sizeof path, cfg->out, name, err);
    if (!e)
        e = atf_write_text_atomic(path, b->text, b->len, err);
    free(b->text);
    b->text = NULL;
    return e;
}

static void method_field(const method *m, char *out, size_t len)
{
    atf_csv_field(m->name, out, len);
}

static atf_error complexity_table(const atf_samples_config *cfg, const grid_values *g,
                                  const method *ms, char *err)
{
    text_buf b = {malloc(4096), 0, 4096};
    put(&b, "method,threshold,n_star_mean_curve,mean_curve,seeds,seeds_reached,"
            "n_star_geomean,n_star_min,n_star_max\n");
    for (int k = 0; k < g->nm; k++)
        for (int t = 0; t < cfg->nthresholds; t++) {
            complexity c = complexity_of(g, k, cfg->thresholds[t]);
            char name[2 * sizeof ms[k].name + 3];
            method_field(&ms[k], name, sizeof name);
            put(&b, "%s,%g,%.6g,%s,%d,%d,%.6g,%.6g,%.6g\n", name, cfg->thresholds[t],
                c.mean.n, censor(&c.mean), c.seeds, c.reached, c.geomean, c.lo, c.hi);
        }
    return write_text(cfg, "samples_complexity.csv", &b, err);
}

/* The ratio of two seeds' crossings, NaN unless both are interpolated (not censored). */
static double ratio_of(const crossing *a, const crossing *b)
{
    return !a->below && !b->below && isfinite(a->n) && isfinite(b->n) ? a->n / b->n : NAN;
}

/* Where the mean curve's n* lies: [n, n] when interpolated, (0, smallest n] when already
 * under the level there, (largest n, ∞) when not reached; empty (NaN) without a curve. */
static void n_star_interval(const complexity *c, double *lo, double *hi)
{
    if (c->mean.below)
        *lo = 0.0, *hi = c->mean.n;
    else if (isfinite(c->mean.n))
        *lo = *hi = c->mean.n;
    else
        *lo = c->nmax, *hi = isfinite(c->nmax) ? INFINITY : NAN;
}

/* The interval of n*_fixed / n*_adaptive of the mean curves: a bound where one of them is
 * censored (a model not reaching the level within the sizes run is at least that much slower:
 * the measured form of "an order of magnitude" when only one of the two gets there). */
static void ratio_interval(const complexity *cf, const complexity *ca, double *lo, double *hi)
{
    double flo, fhi, alo, ahi;
    n_star_interval(cf, &flo, &fhi);
    n_star_interval(ca, &alo, &ahi);
    if (isnan(flo) || isnan(alo)) {
        *lo = *hi = NAN;
        return;
    }
    *lo = ahi > 0 && isfinite(ahi) ? flo / ahi : 0.0;
    *hi = alo > 0 ? fhi / alo : INFINITY;
}

static atf_error ratio_table(const atf_samples_config *cfg, const grid_values *g,
                             const method *ms, char *err)
{
    text_buf b = {malloc(4096), 0, 4096};
    put(&b, "fixed,adaptive,threshold,ratio_mean_curves,seeds_both,ratio_geomean_seeds,"
            "ratio_min,ratio_max,ratio_mean_lo,ratio_mean_hi\n");
    for (int f = 0; f < g->nm; f++)
        for (int a = 0; a < g->nm && samples_is_fixed(ms[f].kind); a++) {
            if (!is_adaptive(ms[a].kind))
                continue;
            for (int t = 0; t < cfg->nthresholds; t++) {
                complexity cf = complexity_of(g, f, cfg->thresholds[t]);
                complexity ca = complexity_of(g, a, cfg->thresholds[t]);
                double logsum = 0.0, lo = INFINITY, hi = -INFINITY;
                int both = 0;
                for (int j = 0; j < g->ns; j++) {
                    double r = ratio_of(&cf.seed[j], &ca.seed[j]);
                    if (isfinite(r))
                        both++, logsum += log(r), lo = fmin(lo, r), hi = fmax(hi, r);
                }
                char fn[2 * sizeof ms[f].name + 3], an[2 * sizeof ms[a].name + 3];
                method_field(&ms[f], fn, sizeof fn);
                method_field(&ms[a], an, sizeof an);
                double rlo, rhi;
                ratio_interval(&cf, &ca, &rlo, &rhi);
                put(&b, "%s,%s,%g,%.6g,%d,%.6g,%.6g,%.6g,%.6g,%.6g\n", fn, an,
                    cfg->thresholds[t], ratio_of(&cf.mean, &ca.mean), both,
                    both ? exp(logsum / both) : NAN, both ? lo : NAN, both ? hi : NAN, rlo, rhi);
            }
        }
    return write_text(cfg, "samples_ratios.csv", &b, err);
}

/* The fixed-feature model the figure measures every adaptive one against: ntk-xent or
 * ntk-ridge (they exist at every n), else ntk-sgd, else ntk; −1 without one. */
static int reference_fixed(const grid_values *g, const method *ms)
{
    static const method_kind order[] = {KIND_NTK_XENT, KIND_NTK_RIDGE, KIND_NTK_SGD, KIND_NTK};
    for (size_t o = 0; o < sizeof order / sizeof order[0]; o++)
        for (int k = 0; k < g->nm; k++)
            if (ms[k].kind == order[o])
                return k;
    return -1;
}

/* The smallest and largest error level: the x range both complexity panels share. */
static void level_range(const atf_samples_config *cfg, double *lo, double *hi)
{
    *lo = *hi = cfg->thresholds[0];
    for (int t = 1; t < cfg->nthresholds; t++)
        *lo = fmin(*lo, cfg->thresholds[t]), *hi = fmax(*hi, cfg->thresholds[t]);
}

/* The ratio panel: n*_fixed / n*_adaptive of the mean curves against the level, for every
 * adaptive model against the reference fixed one and for the authors' pair (ntk-sgd,
 * factorized-sgd); a circle or square where both reach the level, a triangle where only the
 * adaptive one does within the sizes run (a lower bound), a cross where only the fixed one
 * does (an upper bound). Returns whether there is anything to draw. */
static int ratio_panel(const atf_samples_config *cfg, const grid_values *g, const method *ms,
                       const char *what, atf_plot_panel *p)
{
    static char xlabel[64];
    snprintf(xlabel, sizeof xlabel, "%s level", what);
    enum { MAXPAIRS = 8, NT = ATF_SAMPLES_MAXTHRESHOLDS };
    static char labels[MAXPAIRS][2 * sizeof ms->name + 4];
    static double x[MAXPAIRS][3][NT], y[MAXPAIRS][3][NT], refx[2], refy[2][2];
    int ref = reference_fixed(g, ms), sgd = -1, fact = -1, np = 0;
    double top = 0.0, bottom = 1.0;
    for (int k = 0; k < g->nm; k++)
        sgd = ms[k].kind == KIND_NTK_SGD ? k : sgd,
        fact = ms[k].kind == KIND_FACTORIZED_SGD ? k : fact;
    int pairs[MAXPAIRS][2];
    for (int a = 0; ref >= 0 && a < g->nm && np < MAXPAIRS; a++)
        if (is_adaptive(ms[a].kind))
            pairs[np][0] = ref, pairs[np++][1] = a;
    if (sgd >= 0 && fact >= 0 && sgd != ref && np < MAXPAIRS)
        pairs[np][0] = sgd, pairs[np++][1] = fact;
    static char title[sizeof ms->name + 96];
    snprintf(title, sizeof title, "n of %s / n of each model (triangle: at least, cross: at "
             "most)", ref >= 0 ? ms[ref].name : "-");
    *p = (atf_plot_panel){.kind = ATF_PANEL_LINES, .title = title,
                          .xlabel = xlabel, .ylabel = "ratio of the n needed",
                          .logy = 1, .legend = ATF_LEGEND_AUTO};
    int drawn = 0;
    for (int q = 0; q < np && p->nseries + 3 <= ATF_PLOT_MAXSERIES - 2; q++) {
        int f = pairs[q][0], a = pairs[q][1], cnt[3] = {0, 0, 0};
        for (int t = 0; t < cfg->nthresholds; t++) {
            complexity cf = complexity_of(g, f, cfg->thresholds[t]);
            complexity ca = complexity_of(g, a, cfg->thresholds[t]);
            double lo, hi;
            ratio_interval(&cf, &ca, &lo, &hi);
            int kind = lo == hi ? 0 : isinf(hi) && lo > 0 ? 1 : lo == 0 && isfinite(hi) ? 2 : -1;
            if (kind >= 0 && isfinite(kind == 2 ? hi : lo))
                x[q][kind][cnt[kind]] = cfg->thresholds[t],
                y[q][kind][cnt[kind]++] = kind == 2 ? hi : lo;
        }
        if (f == ref)
            snprintf(labels[q], sizeof labels[q], "%s", ms[a].name);
        else
            snprintf(labels[q], sizeof labels[q], "%s / %s", ms[f].name, ms[a].name);
        /* the colour of the adaptive model; the authors' pair (against ntk-sgd) squares */
        int color = a % 8, marker[3] = {f == ref ? 1 : 3, 4, 2};
        for (int kind = 0; kind < 3; kind++)
            if (cnt[kind])
                p->series[p->nseries++] = (atf_plot_series){
                    kind == 0 || (!cnt[0] && kind == 1) || (!cnt[0] && !cnt[1]) ? labels[q]
                                                                                 : NULL,
                    x[q][kind], y[q][kind], NULL, cnt[kind], color, kind == 2, marker[kind],
                    kind > 0, 0};
        drawn += cnt[0] + cnt[1] + cnt[2];
        for (int kind = 0; kind < 3; kind++)
            for (int t = 0; t < cnt[kind]; t++)
                top = fmax(top, y[q][kind][t]), bottom = fmin(bottom, y[q][kind][t]);
    }
    /* a decade above 10 and the data for the legend, so that it covers neither */
    p->fixed_y = 1, p->ymin = fmin(0.1, bottom / 2), p->ymax = fmax(2000.0, 40 * top);
    if (!drawn)
        return 0;
    level_range(cfg, &refx[0], &refx[1]);
    refy[0][0] = refy[0][1] = 1.0, refy[1][0] = refy[1][1] = 10.0;
    p->series[p->nseries++] = (atf_plot_series){"1 (the same n)", refx, refy[0], NULL, 2, 7, 2,
                                                0, 0, 0};
    p->series[p->nseries++] = (atf_plot_series){"10 (an order of magnitude)", refx, refy[1],
                                                NULL, 2, 7, 1, 0, 0, 0};
    return 1;
}

/* n* against the error level: a line per model from its mean curve, a marker per seed. */
static atf_error complexity_figure(const atf_samples_config *cfg, const grid_values *g,
                                   const method *ms, const char *what, char *err)
{
    static char title[128], xlabel[64], figtitle[128];
    snprintf(title, sizeof title, "n at which the %s reaches the level (line: mean curve; "
             "markers: seeds)", what);
    snprintf(xlabel, sizeof xlabel, "%s level", what);
    snprintf(figtitle, sizeof figtitle, "Sample complexity: the n at which each model reaches a "
             "%s", what);
    static double x[SAMPLES_MAXMETHODS][ATF_SAMPLES_MAXTHRESHOLDS];
    static double y[SAMPLES_MAXMETHODS][ATF_SAMPLES_MAXTHRESHOLDS];
    static double xs[SAMPLES_MAXMETHODS][MAXS * ATF_SAMPLES_MAXTHRESHOLDS];
    static double ys[SAMPLES_MAXMETHODS][MAXS * ATF_SAMPLES_MAXTHRESHOLDS];
    atf_plot_panel panel = {.kind = ATF_PANEL_LINES,
                            .title = title, .xlabel = xlabel, .ylabel = "training examples n",
                            .logy = 1, .legend = ATF_LEGEND_AUTO};
    for (int k = 0; k < g->nm && panel.nseries + 2 <= ATF_PLOT_MAXSERIES; k++) {
        int nl = 0, np = 0;
        for (int t = 0; t < cfg->nthresholds; t++) {
            complexity c = complexity_of(g, k, cfg->thresholds[t]);
            if (isfinite(c.mean.n) && !c.mean.below)
                x[k][nl] = cfg->thresholds[t], y[k][nl++] = c.mean.n;
            for (int j = 0; j < g->ns; j++)
                if (isfinite(c.seed[j].n) && !c.seed[j].below)
                    xs[k][np] = cfg->thresholds[t], ys[k][np++] = c.seed[j].n;
        }
        if (!nl && !np)
            continue;
        panel.series[panel.nseries++] = (atf_plot_series){ms[k].label, x[k], y[k], NULL, nl,
                                                          k % 8, k / 8, 1 + k % 5, 0, 0};
        panel.series[panel.nseries++] = (atf_plot_series){NULL, xs[k], ys[k], NULL, np, k % 8,
                                                          0, 1 + k % 5, 1, 0};
    }
    if (!panel.nseries)
        return ATF_OK;
    static atf_plot_panel panels[2];
    double lo, hi;
    level_range(cfg, &lo, &hi);
    double pad = 0.05 * (hi - lo) + 1e-3;
    panel.fixed_x = 1, panel.xmin = lo - pad, panel.xmax = hi + pad; /* both panels: the levels */
    panels[0] = panel;
    int np = 1 + ratio_panel(cfg, g, ms, what, &panels[1]);
    panels[1].fixed_x = 1, panels[1].xmin = panel.xmin, panels[1].xmax = panel.xmax;
    /* stacked, full width: the legends of eight models and seven pairs fit beside the data */
    atf_plot_figure fig = {figtitle,
                           1, np, 1300, 40 + 620 * np, np, panels, 0};
    char base[1100];
    atf_error e = atf_exp_path(base, sizeof base, cfg->out, "samples_complexity", err);
    return e ? e : atf_plot_save(&fig, base, err);
}

/* ---- kernel alignments of the network ---- */

typedef struct {
    double k0[MAXL][MAXN], k0sd[MAXL][MAXN], ad[MAXL][MAXN], adsd[MAXL][MAXN];
    int seeds[MAXN];
    int layers;
} alignments;

static void mean_over_seeds(const grid_values *g, int k, int i, double *mean, double *sd,
                            int *count)
{
    double v[MAXS];
    int c = 0;
    for (int j = 0; j < g->ns; j++)
        if (isfinite(g->v[k][j][i]))
            v[c++] = g->v[k][j][i];
    atf_mean_std(v, c, mean, sd);
    if (count)
        *count = c;
}

/* Layer l (0: all layers) of the network's rows, k the network's method. */
static void alignment_layer(const atf_rowstore *st, const method *ms, int nm, const double *ns,
                            int nn, int k, int l, alignments *a)
{
    static grid_values g0, ga;
    fill_values(st, ms, nm, ns, nn, l ? "align_k0" : "align_k0_all", l ? l - 1 : -1, &g0);
    fill_values(st, ms, nm, ns, nn, l ? "align_adapted" : "align_adapted_all", l ? l - 1 : -1,
                &ga);
    for (int i = 0; i < nn; i++) {
        mean_over_seeds(&g0, k, i, &a->k0[l][i], &a->k0sd[l][i], l ? NULL : &a->seeds[i]);
        mean_over_seeds(&ga, k, i, &a->ad[l][i], &a->adsd[l][i], NULL);
    }
}

static atf_error alignment_figure(const atf_samples_config *cfg, const alignments *a,
                                  const double *ns, int nn, char *err)
{
    static char titles[MAXL][64];
    atf_plot_panel panels[MAXL];
    int np = 0;
    for (int l = 1; l <= a->layers + 1 && np < MAXL; l++) {
        int at = l <= a->layers ? l : 0; /* the layers, then all of them */
        if (at)
            snprintf(titles[np], sizeof titles[np], "layer %d", at);
        else
            snprintf(titles[np], sizeof titles[np], "all layers");
        atf_plot_panel *p = &panels[np++];
        *p = (atf_plot_panel){.kind = ATF_PANEL_LINES, .title = titles[np - 1],
                              .xlabel = "training examples n",
                              .ylabel = "cosine with the final NTK", .logx = 1,
                              .legend = at ? ATF_LEGEND_NONE : ATF_LEGEND_AUTO,
                              .fixed_y = 1, .ymin = 0.0, .ymax = 1.0};
        p->series[p->nseries++] = (atf_plot_series){"K0", ns, a->k0[at],
                                                    a->k0sd[at], nn, 0, 1, 1, 0, 1};
        p->series[p->nseries++] = (atf_plot_series){"adapted (eq. 7)", ns,
                                                    a->ad[at], a->adsd[at], nn, 1, 0, 3, 0, 1};
    }
    int cols = np > 3 ? 3 : np, rows = (np + cols - 1) / cols;
    atf_plot_figure fig = {"Cosine of the trained network's final NTK with K0 and with problem "
                           "(16)'s adapted kernel (mean ± std over seeds)",
                           cols, rows, 520 * cols, 420 * rows + 60, np, panels, 0};
    char base[1100];
    atf_error e = atf_exp_path(base, sizeof base, cfg->out, "samples_alignment", err);
    return e ? e : atf_plot_save(&fig, base, err);
}

static atf_error alignment_report(const atf_samples_config *cfg, const atf_rowstore *st,
                                  const method *ms, int nm, const double *ns, int nn, char *err)
{
    int k = 0;
    while (k < nm && ms[k].kind != KIND_NETWORK)
        k++;
    if (k == nm || cfg->align_examples <= 0)
        return ATF_OK;
    static alignments a;
    memset(&a, 0, sizeof a);
    a.layers = 0;
    for (int r = 0; r < atf_rowstore_count(st); r++) { /* the layers the rows have */
        const char *t = atf_row_get(atf_rowstore_row(st, r), "align_k0");
        int c = t && strcmp(t, "-") ? 1 : 0;
        for (; t && *t; t++)
            c += *t == ';';
        a.layers = c > a.layers ? c : a.layers;
    }
    a.layers = a.layers < MAXL - 1 ? a.layers : MAXL - 1;
    for (int l = 0; l <= a.layers; l++)
        alignment_layer(st, ms, nm, ns, nn, k, l, &a);
    text_buf b = {malloc(4096), 0, 4096};
    put(&b, "n,layer,seeds,k0_mean,k0_std,adapted_mean,adapted_std\n");
    for (int i = 0; i < nn; i++)
        for (int l = 1; l <= a.layers + 1; l++) {
            int at = l <= a.layers ? l : 0;
            char layer[16];
            snprintf(layer, sizeof layer, at ? "%d" : "all", at);
            put(&b, "%g,%s,%d,%.6g,%.6g,%.6g,%.6g\n", ns[i], layer, a.seeds[i], a.k0[at][i],
                a.k0sd[at][i], a.ad[at][i], a.adsd[at][i]);
        }
    atf_error e = write_text(cfg, "samples_alignment.csv", &b, err);
    return e ? e : alignment_figure(cfg, &a, ns, nn, err);
}

/* ---- the report ---- */

static void print_complexity(const atf_samples_config *cfg, const grid_values *g,
                             const method *ms, const char *what, FILE *f)
{
    fprintf(f, "\nn at which the %s reaches the level (mean curve; seeds' geometric "
               "mean [range], reached/seeds):\n\n| model |", what);
    for (int t = 0; t < cfg->nthresholds; t++)
        fprintf(f, " %g |", cfg->thresholds[t]);
    fprintf(f, "\n|---|");
    for (int t = 0; t < cfg->nthresholds; t++)
        fprintf(f, "---|");
    fprintf(f, "\n");
    for (int k = 0; k < g->nm; k++) {
        fprintf(f, "| %s |", ms[k].name);
        for (int t = 0; t < cfg->nthresholds; t++) {
            complexity c = complexity_of(g, k, cfg->thresholds[t]);
            if (c.mean.below)
                fprintf(f, " ≤ %.0f |", c.mean.n);
            else if (!isfinite(c.mean.n))
                fprintf(f, " not reached |");
            else
                fprintf(f, " %.0f; %.0f [%.0f, %.0f], %d/%d |", c.mean.n, c.geomean, c.lo, c.hi,
                        c.reached, c.seeds);
        }
        fprintf(f, "\n");
    }
}

atf_error samples_report(const samples_plan *pl, const atf_rowstore *st, const method *ms,
                         int nm, const double *ns, int nn, FILE *report, char *err)
{
    const atf_samples_config *cfg = &pl->cfg;
    atf_error e = ATF_OK;
    if (cfg->nthresholds > 0) {
        static grid_values g;
        fill_values(st, ms, nm, ns, nn, level_column(pl), -1, &g);
        e = complexity_table(cfg, &g, ms, err);
        if (!e)
            e = ratio_table(cfg, &g, ms, err);
        if (!e)
            e = complexity_figure(cfg, &g, ms, level_name(pl), err);
        if (!e && report && !cfg->io.json)
            print_complexity(cfg, &g, ms, level_name(pl), report);
    }
    return e ? e : alignment_report(cfg, st, ms, nm, ns, nn, err);
}
