/* plot.c — render atf_plot_figure descriptions with PLplot to SVG and PNG.
 *
 * PLplot keeps global state per stream, so each output file gets a fresh stream that is ended
 * before the next one starts; the drawing code is the same for both devices. Log axes are drawn
 * the PLplot way: the data are plotted as log10 values and the box options add "l". */
#include "plot.h"

#include <float.h>
#include <math.h>
#include <plplot.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atf_util.h"

/* Okabe–Ito palette (colour-blind safe); cmap0 indices 2.. are used for series. */
static const int palette[8][3] = {
    {0, 114, 178},  /* blue */
    {213, 94, 0},   /* vermillion */
    {0, 158, 115},  /* green */
    {204, 121, 167},/* purple */
    {230, 159, 0},  /* orange */
    {86, 180, 233}, /* sky */
    {0, 0, 0},      /* black */
    {140, 86, 75},  /* brown (Okabe–Ito's yellow is too pale on white) */
};
enum { COL_BG = 0, COL_FG = 1, COL_GRID = 10, COL_SERIES0 = 2, COL_BAND0 = 16 };

/* Hershey glyphs for markers: circle, cross, square, triangle, plus. */
static const char *const markers[] = {"", "#(840)", "#(846)", "#(841)", "#(842)", "#(845)"};

static void setup_colours(void)
{
    plscmap0n(24);
    plscol0(COL_BG, 255, 255, 255);
    plscol0(COL_FG, 0, 0, 0);
    for (int i = 0; i < 8; i++) {
        plscol0(COL_SERIES0 + i, palette[i][0], palette[i][1], palette[i][2]);
        plscol0a(COL_BAND0 + i, palette[i][0], palette[i][1], palette[i][2], 0.16);
    }
    plscol0(COL_GRID, 200, 200, 200);
}

static void set_colormap(int diverging)
{
    if (diverging) {
        PLFLT pos[3] = {0.0, 0.5, 1.0};
        PLFLT r[3] = {0.13, 1.0, 0.70}, g[3] = {0.40, 1.0, 0.09}, b[3] = {0.67, 1.0, 0.17};
        plscmap1l(1, 3, pos, r, g, b, NULL);
    } else { /* viridis, sampled at five points */
        PLFLT pos[5] = {0.0, 0.25, 0.5, 0.75, 1.0};
        PLFLT r[5] = {0.267, 0.231, 0.128, 0.369, 0.993};
        PLFLT g[5] = {0.005, 0.322, 0.567, 0.789, 0.906};
        PLFLT b[5] = {0.329, 0.546, 0.551, 0.383, 0.144};
        plscmap1l(1, 5, pos, r, g, b, NULL);
    }
}

static double axis_value(double v, int logscale)
{
    return logscale ? log10(v) : v;
}

static int usable(double v, int logscale)
{
    return isfinite(v) && (!logscale || v > 0);
}

/* Data range of the series on one axis (x if which == 0, else y with error bars). */
static void series_range(const atf_plot_panel *p, int which, double *lo, double *hi)
{
    int logscale = which ? p->logy : p->logx;
    *lo = DBL_MAX;
    *hi = -DBL_MAX;
    for (int s = 0; s < p->nseries; s++) {
        const atf_plot_series *ser = &p->series[s];
        for (int i = 0; i < ser->n; i++) {
            double v = which ? ser->y[i] : ser->x[i];
            double e = which && ser->yerr ? fabs(ser->yerr[i]) : 0.0;
            double cand[2] = {v - e, v + e};
            for (int c = 0; c < 2; c++) {
                double w = cand[c];
                if (logscale && w <= 0)
                    w = v; /* an error bar reaching below 0 must not break a log axis */
                if (!usable(w, logscale))
                    continue;
                *lo = fmin(*lo, axis_value(w, logscale));
                *hi = fmax(*hi, axis_value(w, logscale));
            }
        }
    }
    if (*lo > *hi) {
        *lo = 0;
        *hi = 1;
    }
    if (*hi - *lo < 1e-12 * fmax(1.0, fabs(*hi))) {
        *lo -= 0.5 * fmax(1e-3, fabs(*lo));
        *hi += 0.5 * fmax(1e-3, fabs(*hi));
    }
}

static void panel_limits(const atf_plot_panel *p, double lim[4])
{
    series_range(p, 0, &lim[0], &lim[1]);
    series_range(p, 1, &lim[2], &lim[3]);
    if (p->fixed_x) {
        lim[0] = axis_value(p->xmin, p->logx);
        lim[1] = axis_value(p->xmax, p->logx);
    } else if (!p->logx) {
        double pad = 0.03 * (lim[1] - lim[0]);
        lim[0] -= pad, lim[1] += pad;
    } else {
        lim[0] -= 0.05, lim[1] += 0.05;
    }
    if (p->fixed_y) {
        lim[2] = axis_value(p->ymin, p->logy);
        lim[3] = axis_value(p->ymax, p->logy);
    } else {
        double pad = 0.06 * (lim[3] - lim[2]);
        lim[2] -= pad, lim[3] += pad;
    }
}

static void set_line_style(const atf_plot_series *s)
{
    plcol0(COL_SERIES0 + (s->color & 7));
    plwidth(2.0);
    pllsty(s->dashed == 1 ? 3 : s->dashed == 2 ? 2 : 1);
}

/* One marker glyph (Hershey) at each point, at 0.6 of the text height. */
static void draw_markers(int marker, int n, const double *x, const double *y)
{
    if (marker < 1 || marker > 5 || n < 1)
        return;
    PLFLT def, ht;
    plgchr(&def, &ht);
    plschr(0, 0.6 * ht / def);
    plstring(n, x, y, markers[marker]);
    plschr(0, ht / def);
}

static void draw_series(const atf_plot_panel *p, const atf_plot_series *s)
{
    double *x = malloc(sizeof(double) * (size_t)(s->n > 0 ? s->n : 1));
    double *y = malloc(sizeof(double) * (size_t)(s->n > 0 ? s->n : 1));
    double *lo = malloc(sizeof(double) * (size_t)(s->n > 0 ? s->n : 1));
    double *hi = malloc(sizeof(double) * (size_t)(s->n > 0 ? s->n : 1));
    if (!x || !y || !lo || !hi)
        goto done;
    int k = 0;
    for (int i = 0; i < s->n; i++) {
        if (!usable(s->x[i], p->logx) || !usable(s->y[i], p->logy))
            continue;
        x[k] = axis_value(s->x[i], p->logx);
        y[k] = axis_value(s->y[i], p->logy);
        double e = s->yerr ? fabs(s->yerr[i]) : 0.0;
        double l = s->y[i] - e, h = s->y[i] + e;
        lo[k] = usable(l, p->logy) ? axis_value(l, p->logy) : y[k];
        hi[k] = axis_value(h, p->logy);
        k++;
    }
    if (s->band && s->yerr && k > 1) { /* the spread as a shaded band under the line */
        size_t len = sizeof(double) * 2 * (size_t)k;
        double *px = malloc(len), *py = malloc(len);
        if (px && py) {
            for (int i = 0; i < k; i++) {
                px[i] = x[i], py[i] = hi[i];
                px[2 * k - 1 - i] = x[i], py[2 * k - 1 - i] = lo[i];
            }
            plcol0(COL_BAND0 + (s->color & 7));
            plfill(2 * k, px, py);
        }
        free(px), free(py);
    }
    set_line_style(s);
    if (!s->no_line && k > 1)
        plline(k, x, y);
    pllsty(1);
    plwidth(1.5);
    if (s->yerr && k > 0 && !(s->band && k > 1))
        plerry(k, x, lo, hi);
    draw_markers(s->marker, k, x, y);
done:
    free(x), free(y), free(lo), free(hi);
}

/* The viewport's width (vertical = 0) or height in millimetres. */
static double viewport_extent_mm(int vertical)
{
    PLFLT sx0, sx1, sy0, sy1, vx0, vx1, vy0, vy1;
    plgspa(&sx0, &sx1, &sy0, &sy1);
    plgvpd(&vx0, &vx1, &vy0, &vy1);
    return vertical ? (vy1 - vy0) * (sy1 - sy0) : (vx1 - vx0) * (sx1 - sx0);
}

/* The legend is drawn here rather than by pllegend: pllegend sizes its box from PLplot's own
 * string lengths, which the svg device does not have (its boxes ran across the whole panel and
 * over the y labels while the PNG's fitted), and the corner that covers the fewest data must
 * be chosen with the box that is then drawn. One geometry serves both. */
typedef struct {
    int n, ncol, nrow;
    const atf_plot_series *entry[ATF_PLOT_MAXSERIES];
    double text_scale;        /* of the current character height */
    double w, h;              /* box, as fractions of the viewport's width and height */
    double pad, sym, gap, colgap, row, colw; /* in millimetres */
    double mm_x, mm_y;        /* the viewport's size in millimetres */
} legend_geom;

enum { LEGEND_OFFSET_PERMILLE = 20 }; /* the box's distance from the frame: 2 % of the viewport */

/* Text widths. PLplot can size text only for the devices that draw it themselves (the svg
 * device cannot), so the figures measure their own: with the advance widths of DejaVu Sans,
 * the sans-serif of pngcairo here and, among the usual sans-serif faces an SVG viewer picks, a
 * wide one. Units of 1/2048 em for the printable ASCII characters ' ' .. '~'; any other
 * character counts as a lower-case letter. PLplot's character height is 0.73 em: a digit (0.636
 * em) measured 16 px in the PNG at a height of 18.5 px, and "NTK, cross-entropy (fixed
 * features)" 391 px against the 17.6 em of this table at 16.6 px. */
static const unsigned short dejavu_advance[95] = {
    651,  821,  942,  1716, 1303, 1946, 1597, 563,  799,  799,  1024, 1716, 651,  739,  651,  690,
    1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 690,  690,  1716, 1716, 1716, 1087,
    2048, 1401, 1405, 1430, 1577, 1294, 1178, 1587, 1540, 604,  604,  1343, 1141, 1767, 1532, 1612,
    1235, 1612, 1423, 1300, 1251, 1499, 1401, 2025, 1403, 1251, 1403, 799,  690,  799,  1716, 1024,
    1024, 1255, 1300, 1126, 1300, 1260, 721,  1300, 1298, 569,  569,  1186, 569,  1995, 1298, 1253,
    1300, 1300, 842,  1067, 803,  1298, 1212, 1675, 1212, 1212, 1075, 1303, 690,  1303, 1716};
#define EM_PER_HEIGHT 1.37

/* Width in millimetres of `text` set at a character height of ht millimetres. */
static double text_width(const char *text, double ht)
{
    double units = 0.0;
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        if ((*c & 0xC0) == 0x80)
            continue; /* a UTF-8 continuation byte */
        units += *c >= 32 && *c < 127 ? dejavu_advance[*c - 32] : 1300;
    }
    return units / 2048.0 * EM_PER_HEIGHT * ht;
}

/* The legend's entries and box for the current viewport and character height; n = 0 without a
 * labelled series. */
static void legend_layout(const atf_plot_panel *p, legend_geom *g)
{
    memset(g, 0, sizeof *g);
    for (int s = 0; s < p->nseries; s++)
        if (p->series[s].label && *p->series[s].label)
            g->entry[g->n++] = &p->series[s];
    if (!g->n || p->legend == ATF_LEGEND_NONE) {
        g->n = 0;
        return;
    }
    g->ncol = g->n > 4 ? 2 : 1; /* long legends in two columns */
    g->nrow = (g->n + g->ncol - 1) / g->ncol;
    g->text_scale = g->ncol > 1 ? 0.65 : 0.75;
    PLFLT def, ht;
    plgchr(&def, &ht);
    g->mm_x = viewport_extent_mm(0), g->mm_y = viewport_extent_mm(1);
    double th = g->text_scale * ht;
    g->pad = 0.5 * th, g->sym = 3.0 * th, g->gap = 0.6 * th, g->colgap = 1.5 * th;
    g->row = 1.5 * th;
    double longest = 0.0;
    for (int i = 0; i < g->n; i++)
        longest = fmax(longest, text_width(g->entry[i]->label, th));
    g->colw = g->sym + g->gap + longest;
    double w = 2 * g->pad + g->ncol * g->colw + (g->ncol - 1) * g->colgap;
    double h = 2 * g->pad + g->nrow * g->row;
    g->w = g->mm_x > 0 ? w / g->mm_x : 1.0;
    g->h = g->mm_y > 0 ? h / g->mm_y : 1.0;
}

/* The box's lower-left corner in viewport fractions. */
static void legend_origin(const legend_geom *g, atf_legend_pos pos, double *x, double *y)
{
    double off = LEGEND_OFFSET_PERMILLE / 1000.0;
    int right = pos == ATF_LEGEND_TOP_RIGHT || pos == ATF_LEGEND_BOTTOM_RIGHT;
    int top = pos == ATF_LEGEND_TOP_RIGHT || pos == ATF_LEGEND_TOP_LEFT;
    *x = right ? 1.0 - off - g->w : off;
    *y = top ? 1.0 - off - g->h : off;
}

/* Where a series' value (k = 0) or the end of its spread (k = -1, +1) lies as a fraction of
 * the panel's height; NAN where the log axis cannot show it. */
static double value_fraction(const atf_plot_panel *p, const atf_plot_series *ser, int i, int k,
                             const double lim[4])
{
    double v = ser->y[i] + k * (ser->yerr ? fabs(ser->yerr[i]) : 0.0);
    if (k && !usable(v, p->logy))
        v = ser->y[i]; /* a spread reaching below 0 is drawn from the value on a log axis */
    return (axis_value(v, p->logy) - lim[2]) / (lim[3] - lim[2]);
}

/* How much of the data a legend at `pos` would cover: points inside its box grown by half a
 * character (a marker's size), all in viewport fractions — the markers, 16 samples along every
 * line segment, and the ends of the spread at the points and, for a band, along its edges. */
static int points_in_corner(const atf_plot_panel *p, const legend_geom *g, const double lim[4],
                            atf_legend_pos pos)
{
    if (!g->n)
        return 0;
    double x0, y0;
    legend_origin(g, pos, &x0, &y0);
    double mx = g->pad / g->mm_x, my = g->pad / g->mm_y;
    double bx0 = x0 - mx, bx1 = x0 + g->w + mx, by0 = y0 - my, by1 = y0 + g->h + my;
    int count = 0;
    for (int s = 0; s < p->nseries; s++) {
        const atf_plot_series *ser = &p->series[s];
        int spread = ser->yerr != NULL;
        double px = NAN, py[3] = {NAN, NAN, NAN};
        for (int i = 0; i < ser->n; i++) {
            if (!usable(ser->x[i], p->logx) || !usable(ser->y[i], p->logy))
                continue;
            double fx = (axis_value(ser->x[i], p->logx) - lim[0]) / (lim[1] - lim[0]), fy[3];
            for (int k = -1; k <= 1; k++)
                fy[k + 1] = value_fraction(p, ser, i, k, lim);
            for (int k = -1; k <= 1; k++) {
                if (k && !spread)
                    continue;
                int joined = isfinite(px) && (k ? ser->band : !ser->no_line);
                int steps = joined ? 16 : 0;
                for (int j = 0; j <= steps; j++) {
                    double t = steps ? (double)j / steps : 1.0;
                    double qx = joined ? px + t * (fx - px) : fx;
                    double qy = joined ? py[k + 1] + t * (fy[k + 1] - py[k + 1]) : fy[k + 1];
                    count += qx > bx0 && qx < bx1 && qy > by0 && qy < by1;
                }
            }
            px = fx;
            memcpy(py, fy, sizeof py);
        }
    }
    return count;
}

static atf_legend_pos best_corner(const atf_plot_panel *p, const legend_geom *g,
                                  const double lim[4])
{
    static const atf_legend_pos order[4] = {ATF_LEGEND_TOP_RIGHT, ATF_LEGEND_TOP_LEFT,
                                            ATF_LEGEND_BOTTOM_LEFT, ATF_LEGEND_BOTTOM_RIGHT};
    atf_legend_pos best = order[0];
    int fewest = -1;
    for (int k = 0; k < 4; k++) {
        int c = points_in_corner(p, g, lim, order[k]);
        if (fewest < 0 || c < fewest)
            fewest = c, best = order[k];
    }
    return best;
}

/* Draws the legend in the viewport's unit square (the world window is put back after). */
static void draw_legend(const legend_geom *g, atf_legend_pos where)
{
    if (!g->n) /* no labelled series, or ATF_LEGEND_NONE */
        return;
    PLFLT wx0, wx1, wy0, wy1, def, ht;
    plgvpw(&wx0, &wx1, &wy0, &wy1);
    plgchr(&def, &ht);
    plwind(0.0, 1.0, 0.0, 1.0);
    double x0, y0;
    legend_origin(g, where, &x0, &y0);
    PLFLT bx[5] = {x0, x0 + g->w, x0 + g->w, x0, x0};
    PLFLT by[5] = {y0, y0, y0 + g->h, y0 + g->h, y0};
    plcol0(COL_BG);
    plfill(4, bx, by);
    plcol0(COL_FG);
    plwidth(1.0);
    plline(5, bx, by);
    for (int i = 0; i < g->n; i++) {
        const atf_plot_series *s = g->entry[i];
        int row = i / g->ncol, col = i % g->ncol;
        double left = x0 + (g->pad + col * (g->colw + g->colgap)) / g->mm_x;
        double yc = y0 + g->h - (g->pad + (row + 0.5) * g->row) / g->mm_y;
        PLFLT lx[2] = {left, left + g->sym / g->mm_x}, ly[2] = {yc, yc};
        set_line_style(s);
        if (!s->no_line)
            plline(2, lx, ly);
        pllsty(1);
        PLFLT mx = 0.5 * (lx[0] + lx[1]);
        draw_markers(s->marker, 1, &mx, &ly[0]);
        plcol0(COL_FG);
        plschr(0, g->text_scale * ht / def);
        plptex(lx[1] + g->gap / g->mm_x, yc, 1.0, 0.0, 0.0, s->label);
        plschr(0, ht / def);
    }
    plwind(wx0, wx1, wy0, wy1);
}

/* Viewport of a panel inside its grid cell (normalised page coordinates): room on the left for
 * the y tick labels and the y label, below for the x ones, above for the title, and on the
 * right of heat maps for the colour bar and its labels. */
typedef struct {
    double x0, x1, y0, y1;
} cell;

static void panel_viewport(const cell *c, double left_chars, double right_chars)
{
    /* Margins in character heights (the labels' own unit), converted to page fractions; a
     * margin never takes more than a third of the cell. */
    PLFLT def, ht, x0, x1, y0, y1;
    plgchr(&def, &ht);
    plgspa(&x0, &x1, &y0, &y1);
    double w = c->x1 - c->x0, h = c->y1 - c->y0;
    double cw = ht / (x1 - x0), chh = ht / (y1 - y0);
    plvpor(c->x0 + fmin(left_chars * cw, 0.33 * w), c->x1 - fmin(right_chars * cw, 0.33 * w),
           c->y0 + fmin(4.9 * chh, 0.33 * h), c->y1 - fmin(2.7 * chh, 0.25 * h));
}


/* Text centred above the viewport (disp character heights off it), made smaller when wider
 * than `width` (a fraction of the page): long panel titles must not reach the neighbours. */
static void fitted_title(const char *text, double disp, double width)
{
    PLFLT def, ht, x0, x1, y0, y1;
    plgchr(&def, &ht);
    plgspa(&x0, &x1, &y0, &y1);
    double avail = width * (x1 - x0), len = text_width(text, ht);
    if (len > avail && len > 0)
        plschr(0, ht / def * avail / len);
    plmtex("t", disp, 0.5, 0.5, text);
    plschr(0, ht / def);
}

/* Axis labels and the title at fixed distances (in character heights) from the viewport; the
 * title at most as wide as the panel's cell. */
static void draw_labels(const atf_plot_panel *p, const cell *c, double ylabel_disp)
{
    plcol0(COL_FG);
    PLFLT vx0, vx1, vy0, vy1;
    plgvpd(&vx0, &vx1, &vy0, &vy1);
    double mid = 0.5 * (vx0 + vx1); /* the title is centred on the viewport, not the cell */
    if (p->title)
        fitted_title(p->title, 1.2, 1.94 * fmin(mid - c->x0, c->x1 - mid));
    if (p->xlabel)
        plmtex("b", 3.1, 0.5, 0.5, p->xlabel);
    if (p->ylabel)
        plmtex("l", ylabel_disp, 0.5, 0.5, p->ylabel);
}

/* A log axis spanning fewer than three decades gets few or no PLplot labels (it labels powers of
 * ten only): label it by hand at 1-2-5 (1..9 within one decade, 1-3 beyond one and a half)
 * multiples, with grid lines. */
static int short_log_axis(double lo, double hi)
{
    return hi - lo < 3.0;
}

static void format_tick(double v, char *buf, size_t len)
{
    if (v >= 1e-3 && v < 1e5)
        snprintf(buf, len, "%g", v);
    else
        snprintf(buf, len, "%.0e", v);
}

static double nice_step(double raw);

enum { MAXTICKS = 40 };

/* The values labelled on a short log axis [lo, hi] (log10 units): 1-2-5 multiples (1..9 within
 * 0.6 of a decade, 1-2-3-5 within one, 1-2-5 within one and a half, 1-3 beyond, where on x "500"
 * and "1000" would run into each other; a y axis, whose labels are stacked, keeps 1-2-5 up to
 * two and a half decades: a legend's headroom must not leave the data with one label); when
 * fewer than two of those fall inside (a range like 1.05 .. 1.6), evenly spaced round values
 * instead. Returns their number. */
static int log_tick_values(double lo, double hi, int yaxis, double *vals)
{
    static const double steps13[] = {1, 3}, steps125[] = {1, 2, 5}, steps1235[] = {1, 2, 3, 5},
                        steps19[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    double span = hi - lo;
    const double *steps = span < 0.6 ? steps19 : span < 1.0 ? steps1235
                        : span < (yaxis ? 2.5 : 1.5) ? steps125 : steps13;
    int nsteps = steps == steps19 ? 9 : steps == steps1235 ? 4 : steps == steps125 ? 3 : 2, n = 0;
    for (int k = (int)floor(lo) - 1; k <= (int)ceil(hi) && n < MAXTICKS; k++)
        for (int j = 0; j < nsteps && n < MAXTICKS; j++) {
            double v = steps[j] * pow(10.0, k), w = log10(v);
            if (w >= lo && w <= hi)
                vals[n++] = v;
        }
    if (n >= 2)
        return n;
    double a = pow(10.0, lo), b = pow(10.0, hi), step = nice_step((b - a) / 4.0);
    n = 0;
    for (double v = ceil(a / step) * step; step > 0 && v <= b && n < MAXTICKS; v += step)
        vals[n++] = v;
    return n;
}

/* Whether a label covering [a, b] (viewport fractions) comes within gap of one already placed. */
static int label_collides(const double (*placed)[2], int n, double a, double b, double gap)
{
    for (int i = 0; i < n; i++)
        if (a < placed[i][1] + gap && b > placed[i][0] - gap)
            return 1;
    return 0;
}

/* Grid lines at every value, labels where they fit: the powers of ten first, then the others,
 * each skipped when it would come too close to one placed — on x within a digit's width
 * (narrow panels: 10000 and 30000 ran together in the six-panel alignment figure, and with half
 * a digit's gap 1000, 3000 and 10000 still read as one number there), on y within 0.8 of a
 * character's height (0.09 sat just under 0.1 in a panel spanning 0.085 … 0.25). */
static void manual_log_labels(int yaxis, double lo, double hi)
{
    double vals[MAXTICKS], placed[MAXTICKS][2];
    int n = log_tick_values(lo, hi, yaxis, vals), nplaced = 0;
    PLFLT xmin, xmax, ymin, ymax;
    plgvpw(&xmin, &xmax, &ymin, &ymax);
    PLFLT def, ht;
    plgchr(&def, &ht);
    double span_mm = viewport_extent_mm(yaxis);
    double gap = span_mm > 0 ? (yaxis ? 0.8 * ht : text_width("0", ht)) / span_mm : 0.0;
    plcol0(COL_GRID);
    plwidth(0.5);
    for (int i = 0; i < n; i++) {
        double w = log10(vals[i]);
        PLFLT gx[2] = {w, w}, gy[2] = {ymin, ymax};
        if (yaxis)
            gx[0] = xmin, gx[1] = xmax, gy[0] = gy[1] = w;
        plline(2, gx, gy);
    }
    plcol0(COL_FG);
    plwidth(1.0);
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n; i++) {
            double w = log10(vals[i]), pos = (w - lo) / (hi - lo);
            int power = fabs(w - round(w)) < 1e-9;
            if (power != (pass == 0))
                continue;
            char label[32];
            format_tick(vals[i], label, sizeof label);
            double extent = yaxis ? ht : text_width(label, ht);
            double half = span_mm > 0 ? 0.5 * extent / span_mm : 0.0;
            if (label_collides((const double (*)[2])placed, nplaced, pos - half, pos + half, gap))
                continue;
            placed[nplaced][0] = pos - half, placed[nplaced][1] = pos + half, nplaced++;
            if (yaxis)
                plmtex("lv", 0.7, pos, 1.0, label);
            else
                plmtex("b", 1.6, pos, 0.5, label);
        }
}

/* Characters of the widest y tick label: the y label goes just beyond it, so that neither
 * touches the other. PLplot writes linear labels with the decimals the step needs; log labels
 * are 10^k (about four characters wide), manual ones come from format_tick. */
static int ytick_chars(const atf_plot_panel *p, const double lim[4], double step, int manual)
{
    char buf[32];
    int widest = 1;
    if (p->logy && !manual)
        return 4;
    if (p->logy) {
        double vals[MAXTICKS];
        int n = log_tick_values(lim[2], lim[3], 1, vals);
        for (int i = 0; i < n; i++) {
            format_tick(vals[i], buf, sizeof buf);
            widest = fmax(widest, (int)strlen(buf));
        }
        return widest;
    }
    if (!(step > 0))
        return 4;
    int decimals = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
    for (double v = ceil(lim[2] / step) * step; v <= lim[3] + 1e-9 * step; v += step) {
        snprintf(buf, sizeof buf, "%.*f", decimals, fabs(v) < 1e-12 * step ? 0.0 : v);
        widest = fmax(widest, (int)strlen(buf));
    }
    return widest;
}

/* Distance of the y label from the axis, in character heights (a digit is about 0.85 wide,
 * and the labels sit about one height off the axis). */
static double ylabel_offset(const atf_plot_panel *p, const double lim[4], double step, int manual)
{
    return 2.0 + 0.85 * ytick_chars(p, lim, step, manual);
}

/* Notes next to their points, slightly above and to the right. */
static void draw_notes(const atf_plot_panel *p, const double lim[4])
{
    PLFLT def, ht;
    plgchr(&def, &ht);
    plschr(0, 0.75 * ht / def);
    plcol0(COL_FG);
    for (int i = 0; i < p->nnotes && i < ATF_PLOT_MAXNOTES; i++) {
        const atf_plot_note *n = &p->notes[i];
        if (!n->text || !usable(n->x, p->logx) || !usable(n->y, p->logy))
            continue;
        /* inside the frame (text is clipped to it): left of points in the right half, below
         * points near the top */
        double x = axis_value(n->x, p->logx), y = axis_value(n->y, p->logy);
        int right = x > lim[0] + 0.5 * (lim[1] - lim[0]);
        int top = y > lim[2] + 0.85 * (lim[3] - lim[2]);
        x += (right ? -0.015 : 0.015) * (lim[1] - lim[0]);
        y += (top ? -0.06 : 0.03) * (lim[3] - lim[2]);
        plptex(x, y, 1.0, 0.0, right ? 1.0 : 0.0, n->text);
    }
    plschr(0, ht / def);
}

/* The 1-2-5 multiple of a power of ten at or above `raw`: at most about five labelled ticks on a
 * linear y axis, whose labels are drawn along the axis and would otherwise overlap. */
static double nice_step(double raw)
{
    if (!(raw > 0) || !isfinite(raw))
        return 0.0;
    double p10 = pow(10.0, floor(log10(raw))), f = raw / p10;
    return (f <= 1.0 ? 1.0 : f <= 2.0 ? 2.0 : f <= 5.0 ? 5.0 : 10.0) * p10;
}

/* The limits of panel_limits grown above or below the curves until the legend's box (as laid
 * out in the current viewport) covers none of them, when even the emptiest corner has data;
 * *where gets the corner. */
static void lines_limits(const atf_plot_panel *p, double lim[4], atf_legend_pos *where)
{
    *where = p->legend;
    if (*where != ATF_LEGEND_AUTO)
        return;
    legend_geom g;
    legend_layout(p, &g);
    *where = best_corner(p, &g, lim);
    int top = *where == ATF_LEGEND_TOP_LEFT || *where == ATF_LEGEND_TOP_RIGHT;
    for (int k = 0; k < 12 && !p->fixed_y && points_in_corner(p, &g, lim, *where) > 0; k++) {
        double grow = 0.15 * (lim[3] - lim[2]);
        if (top)
            lim[3] += grow;
        else
            lim[2] -= grow;
    }
}

/* The ticks' steps and the y label's distance for the limits, and the viewport they leave. */
static double lines_viewport(const atf_plot_panel *p, const cell *c, const double lim[4],
                             double *xtick, double *ytick)
{
    *xtick = p->logx ? ceil((lim[1] - lim[0]) / 6.0) : 0.0;
    *ytick = p->logy ? ceil((lim[3] - lim[2]) / 6.0) : nice_step((lim[3] - lim[2]) / 5.0);
    double ylabel = ylabel_offset(p, lim, *ytick, p->logy && short_log_axis(lim[2], lim[3]));
    panel_viewport(c, ylabel + 1.4, 1.5);
    return ylabel;
}

/* Grid, tick marks and tick labels (y labels horizontal: rotated numbers read badly). On a log
 * axis the world unit is a decade: every decade is labelled up to six, then fewer; short log
 * axes get 1-2-5 labels by hand. */
static void draw_axes(const atf_plot_panel *p, const double lim[4], double xtick, double ytick)
{
    int manual_x = p->logx && short_log_axis(lim[0], lim[1]);
    int manual_y = p->logy && short_log_axis(lim[2], lim[3]);
    char xopt[16] = "bcst", yopt[16] = "bcstv";
    strcat(xopt, manual_x ? "" : "n");
    strcat(yopt, manual_y ? "" : "n");
    strcat(xopt, p->logx ? "l" : "");
    strcat(yopt, p->logy ? "l" : "");
    plcol0(COL_GRID);
    plwidth(0.5);
    plbox(p->logx ? "gh" : "g", xtick, 0, p->logy ? "gh" : "g", ytick, 0);
    if (manual_x)
        manual_log_labels(0, lim[0], lim[1]);
    if (manual_y)
        manual_log_labels(1, lim[2], lim[3]);
    plcol0(COL_FG);
    plwidth(1.0);
    plbox(xopt, xtick, 0, yopt, ytick, 0);
}

static void draw_lines_panel(const atf_plot_panel *p, const cell *c)
{
    double lim[4];
    atf_legend_pos where;
    double xtick, ytick;
    panel_limits(p, lim); /* a first viewport, in which the legend's box is measured */
    lines_viewport(p, c, lim, &xtick, &ytick);
    lines_limits(p, lim, &where);
    double ylabel = lines_viewport(p, c, lim, &xtick, &ytick);
    plwind(lim[0], lim[1], lim[2], lim[3]);
    draw_axes(p, lim, xtick, ytick);
    for (int s = 0; s < p->nseries; s++)
        draw_series(p, &p->series[s]);
    draw_notes(p, lim);
    draw_labels(p, c, ylabel);
    legend_geom g;
    legend_layout(p, &g);
    draw_legend(&g, where);
}

static void heat_range(const atf_plot_panel *p, double *lo, double *hi)
{
    if (p->fixed_z) {
        *lo = p->zmin;
        *hi = p->zmax;
        return;
    }
    *lo = DBL_MAX, *hi = -DBL_MAX;
    for (long i = 0; i < (long)p->rows * p->cols; i++)
        if (isfinite(p->z[i])) {
            *lo = fmin(*lo, p->z[i]);
            *hi = fmax(*hi, p->z[i]);
        }
    if (*lo > *hi)
        *lo = 0, *hi = 1;
    if (p->diverging) {
        double m = fmax(fabs(*lo), fabs(*hi));
        *lo = -m, *hi = m;
    }
    if (*hi <= *lo)
        *hi = *lo + 1;
}

enum { HEAT_MAXCELLS = 128 };

/* Mean of the finite values in the fx × fy tile at column x0, row y0. */
static double pooled(const atf_plot_panel *p, int x0, int y0, int fx, int fy)
{
    double sum = 0.0;
    int n = 0;
    for (int y = y0; y < y0 + fy && y < p->rows; y++)
        for (int x = x0; x < x0 + fx && x < p->cols; x++) {
            double v = p->z[(long)y * p->cols + x];
            if (isfinite(v))
                sum += v, n++;
        }
    return n ? sum / n : NAN;
}

/* The colour bar right of a heat map, labels horizontal. */
static void draw_colorbar(const atf_plot_panel *p, double lo, double hi)
{
    PLINT n_values[1] = {2};
    PLFLT range[2] = {lo, hi};
    const PLFLT *values[1] = {range};
    const char *axis_opts[1] = {"bcvtm"};
    PLFLT ticks[1] = {0.0};
    PLINT sub_ticks[1] = {0};
    PLINT label_opts[1] = {PL_COLORBAR_LABEL_BOTTOM};
    const char *labels[1] = {p->zlabel ? p->zlabel : ""};
    PLFLT w, h;
    plcolorbar(&w, &h, PL_COLORBAR_IMAGE,
               PL_POSITION_RIGHT | PL_POSITION_OUTSIDE | PL_POSITION_VIEWPORT,
               0.03, 0.0, 0.04, 0.85, COL_BG, COL_FG, 1, 0.0, 1.0, 0, 0.0, 1, label_opts,
               labels, 1, axis_opts, ticks, sub_ticks, n_values, (PLFLT_MATRIX)values);
}

/* Large maps are average-pooled to at most HEAT_MAXCELLS per side (the SVG device writes one
 * polygon per cell). PLplot wants idata[ix][iy]: the column index is x. NULL without memory. */
static PLFLT **pooled_image(const atf_plot_panel *p, int *nx, int *ny)
{
    int fx = (p->cols + HEAT_MAXCELLS - 1) / HEAT_MAXCELLS;
    int fy = (p->rows + HEAT_MAXCELLS - 1) / HEAT_MAXCELLS;
    *nx = (p->cols + fx - 1) / fx, *ny = (p->rows + fy - 1) / fy;
    PLFLT **idata = calloc((size_t)*nx, sizeof(PLFLT *));
    for (int ix = 0; idata && ix < *nx; ix++) {
        if (!(idata[ix] = malloc(sizeof(PLFLT) * (size_t)*ny))) {
            for (int k = 0; k < ix; k++)
                free(idata[k]);
            free(idata);
            return NULL;
        }
        for (int iy = 0; iy < *ny; iy++)
            idata[ix][iy] = pooled(p, ix * fx, iy * fy, fx, fy);
    }
    return idata;
}

/* The step of a heat map's x labels: the round step at which its widest label and a digit's gap
 * fit between neighbours (PLplot's own choice ran "0 10 20 30 40 50" together in a quarter of
 * a page). */
static double heatmap_xtick(int cols)
{
    PLFLT def, ht;
    plgchr(&def, &ht);
    char widest[16];
    snprintf(widest, sizeof widest, "%d", cols);
    double width_mm = viewport_extent_mm(0);
    double slot = text_width(widest, ht) + 2.0 * text_width("0", ht);
    return width_mm > 0 ? nice_step(cols * slot / width_mm) : 0.0;
}

static void draw_heatmap_panel(const atf_plot_panel *p, const cell *c)
{
    double lo, hi;
    int nx, ny;
    heat_range(p, &lo, &hi);
    PLFLT **idata = pooled_image(p, &nx, &ny);
    if (!idata)
        return;
    set_colormap(p->diverging);
    char rows[16];
    snprintf(rows, sizeof rows, "%d", p->rows);
    double ylabel = 2.0 + 0.85 * (double)strlen(rows);
    panel_viewport(c, ylabel + 1.4, 7.5); /* the bar (or a neighbour's) and its labels */
    plwind(0, p->cols, 0, p->rows);
    plimagefr((PLFLT_MATRIX)idata, nx, ny, 0, p->cols, 0, p->rows, -DBL_MAX, DBL_MAX, lo, hi,
              NULL, NULL);
    plcol0(COL_FG);
    plbox("bcnst", heatmap_xtick(p->cols), 0, "bcnstv", 0, 0);
    draw_labels(p, c, ylabel);
    if (!p->no_colorbar)
        draw_colorbar(p, lo, hi);
    for (int ix = 0; ix < nx; ix++)
        free(idata[ix]);
    free(idata);
}

static atf_error check_figure(const atf_plot_figure *fig, char *err)
{
    if (fig->ncols < 1 || fig->nrows < 1 || fig->npanels < 1 ||
        fig->npanels > fig->ncols * fig->nrows || fig->width < 100 || fig->height < 100) {
        atf_errorf(err, "plot: inconsistent figure (%d panels in %d x %d, %d x %d px)",
                   fig->npanels, fig->ncols, fig->nrows, fig->width, fig->height);
        return ATF_E_USAGE;
    }
    for (int i = 0; i < fig->npanels; i++) {
        const atf_plot_panel *p = &fig->panels[i];
        if (p->kind == ATF_PANEL_HEATMAP && (!p->z || p->rows < 1 || p->cols < 1)) {
            atf_errorf(err, "plot: panel %d: heat map without data", i);
            return ATF_E_USAGE;
        }
        if (p->kind == ATF_PANEL_LINES && (p->nseries < 0 || p->nseries > ATF_PLOT_MAXSERIES)) {
            atf_errorf(err, "plot: panel %d: %d series (at most %d)", i, p->nseries,
                       ATF_PLOT_MAXSERIES);
            return ATF_E_USAGE;
        }
    }
    return ATF_OK;
}

static int exit_handler(const char *msg)
{
    (void)msg;
    return 0; /* let PLplot return instead of calling exit(); the missing file reports it */
}

static void render(const atf_plot_figure *fig, const char *device, const char *path)
{
    plsexit(exit_handler);
    plsdev(device);
    plsfnam(path);
    plspage(0, 0, fig->width, fig->height, 0, 0);
    setup_colours();
    plinit();
    plfontld(1);
    pladv(0);
    /* The grid is laid out by hand: PLplot's subpages misplace colour bars. */
    double top = fig->title && *fig->title ? 1.0 - fmin(0.12, 80.0 / fig->height) : 1.0;
    double cw = 1.0 / fig->ncols, ch = top / fig->nrows;
    double px = fmin((double)fig->width / fig->ncols, (double)fig->height / fig->nrows);
    double fs = fig->font_scale > 0 ? fig->font_scale : 1.0;
    plschr(0, fs * fmin(1.0, fmax(0.6, px / 600.0)));
    for (int i = 0; i < fig->npanels; i++) {
        int col = i % fig->ncols, row = i / fig->ncols;
        cell c = {col * cw, (col + 1) * cw, top - (row + 1) * ch, top - row * ch};
        if (fig->panels[i].kind == ATF_PANEL_HEATMAP)
            draw_heatmap_panel(&fig->panels[i], &c);
        else
            draw_lines_panel(&fig->panels[i], &c);
    }
    if (top < 1.0) {
        plvpor(0.0, 1.0, top, 1.0);
        plwind(0, 1, 0, 1);
        plcol0(COL_FG);
        plschr(0, fmin(1.1, fmax(0.7, px / 550.0)));
        fitted_title(fig->title, -1.6, 0.95); /* inside the page */
    }
    plend();
}

/* Whether the rendered file is whole: PLplot does not report a failed write (a full disk, the
 * file-size limit: it goes on and leaves a cut file), so the file's end is checked — an SVG
 * closes its root element, a PNG ends with the IEND chunk after its signature. */
static int complete_figure(const char *path, const char *ext)
{
    static const unsigned char png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    static const unsigned char png_end[12] = {0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60,
                                              0x82};
    unsigned char head[8] = {0}, tail[64];
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    size_t nh = fread(head, 1, sizeof head, f);
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    long from = size > (long)sizeof tail ? size - (long)sizeof tail : 0;
    size_t nt = size > 0 && fseek(f, from, SEEK_SET) == 0 ? fread(tail, 1, sizeof tail, f) : 0;
    int read_ok = !ferror(f);
    fclose(f);
    if (!read_ok || size <= 0 || nt != (size_t)(size - from))
        return 0;
    if (!strcmp(ext, "png"))
        return nh == sizeof head && !memcmp(head, png_sig, sizeof png_sig) &&
               nt >= sizeof png_end && !memcmp(tail + nt - sizeof png_end, png_end,
                                               sizeof png_end);
    while (nt > 0 && (tail[nt - 1] == '\n' || tail[nt - 1] == ' ' || tail[nt - 1] == '\r'))
        nt--;
    return nt >= 6 && !memcmp(tail + nt - 6, "</svg>", 6);
}

int atf_plot_png_available(void)
{
    /* The cairo driver is a run-time plugin; asking PLplot for its device list is the test. */
    const char **menu = NULL, **devs = NULL;
    int n = 64;
    menu = malloc(sizeof(char *) * (size_t)n);
    devs = malloc(sizeof(char *) * (size_t)n);
    int found = 0;
    if (menu && devs) {
        plgFileDevs(&menu, &devs, &n);
        for (int i = 0; i < n; i++)
            if (devs[i] && !strcmp(devs[i], "pngcairo"))
                found = 1;
    }
    free(menu);
    free(devs);
    return found;
}

static atf_error render_to(const atf_plot_figure *fig, const char *device, const char *base,
                           const char *ext, char *err)
{
    char final[ATF_PATH_MAX];
    if (snprintf(final, sizeof final, "%s.%s", base, ext) >= (int)sizeof final) {
        atf_errorf(err, "%s: path too long", base);
        return ATF_E_IO;
    }
    /* PLplot writes the reserved temporary by name; it goes in place only when complete. */
    atf_atomic_file af;
    atf_error e = atf_atomic_begin(&af, final, NULL, err);
    if (e)
        return e;
    render(fig, device, af.tmp);
    if (!complete_figure(af.tmp, ext)) {
        atf_atomic_abort(&af);
        atf_errorf(err, "%s: could not write the figure (PLplot device %s: the file is missing "
                   "or cut short; a full disk or a file-size limit?)", final, device);
        return ATF_E_IO;
    }
    return atf_atomic_commit(&af, err);
}

atf_error atf_plot_save(const atf_plot_figure *fig, const char *base, char *err)
{
    atf_error e = check_figure(fig, err);
    if (e)
        return e;
    e = render_to(fig, "svg", base, "svg", err);
    if (!e && atf_plot_png_available())
        e = render_to(fig, "pngcairo", base, "png", err);
    return e;
}
