/* plot.h — a small PLplot wrapper for the experiment figures (part of atf_experiments.h).
 *
 * A figure is a grid of panels; each panel is either a set of line/marker series on linear or
 * logarithmic axes (with optional error bars and a legend) or a heat map with a colour bar.
 * The caller describes the figure in plain structs (nothing is drawn until atf_plot_save) and
 * atf_plot_save renders it twice: BASE.svg (PLplot's built-in svg device) and BASE.png (cairo),
 * each written to a temporary file and renamed, so a figure is either complete or absent.
 * White background, black axes, colour-blind-safe line colours. */
#ifndef ATF_PLOT_H
#define ATF_PLOT_H

#include "atf_error.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { ATF_PLOT_MAXSERIES = 24, ATF_PLOT_MAXNOTES = 16 };

/* A text next to one data point (e.g. what a point's x value was resolved from). */
typedef struct {
    double x, y;        /* data coordinates of the point */
    const char *text;
} atf_plot_note;

typedef struct {
    const char *label;  /* legend text; NULL or "" keeps the series out of the legend */
    const double *x, *y;
    const double *yerr; /* optional ± error bars (NULL for none) */
    int n;
    int color;          /* index into the palette, 0..7 */
    int dashed;         /* 0 solid line, 1 dashed, 2 dotted */
    int marker;         /* 0 none, else a marker: 1 circle, 2 cross, 3 square, 4 triangle, 5 plus */
    int no_line;        /* 1: markers only */
    int band;           /* 1: yerr drawn as a shaded band (the series' colour, translucent)
                           instead of error bars */
} atf_plot_series;

typedef enum { ATF_PANEL_LINES = 0, ATF_PANEL_HEATMAP } atf_panel_kind;

typedef enum {
    ATF_LEGEND_TOP_RIGHT = 0,
    ATF_LEGEND_TOP_LEFT,
    ATF_LEGEND_BOTTOM_RIGHT,
    ATF_LEGEND_BOTTOM_LEFT,
    ATF_LEGEND_NONE,
    ATF_LEGEND_AUTO     /* the corner that covers the fewest data points */
} atf_legend_pos;

typedef struct {
    atf_panel_kind kind;
    const char *title, *xlabel, *ylabel;
    /* lines */
    int logx, logy;                     /* logarithmic axes (non-positive values are skipped) */
    int fixed_x, fixed_y;               /* 1: use the limits below instead of the data range */
    double xmin, xmax, ymin, ymax;
    atf_legend_pos legend;
    int nseries;
    atf_plot_series series[ATF_PLOT_MAXSERIES];
    int nnotes;
    atf_plot_note notes[ATF_PLOT_MAXNOTES];
    /* heat map: z is rows × cols row-major, row 0 drawn at the bottom */
    const double *z;
    int rows, cols;
    int fixed_z;                        /* 1: colour range [zmin, zmax], else the data range */
    double zmin, zmax;
    int diverging;                      /* blue–white–red, symmetric around 0 */
    const char *zlabel;                 /* colour-bar caption */
    int no_colorbar;                    /* 1: no colour bar (a neighbour with the same colour
                                           range carries it) */
} atf_plot_panel;

typedef struct {
    const char *title;    /* figure title above the grid (may be NULL) */
    int ncols, nrows;     /* grid of panels, filled row by row */
    int width, height;    /* pixels of the PNG (the SVG has the same aspect) */
    int npanels;
    atf_plot_panel *panels;
    double font_scale;    /* text size multiplier (0 means 1) for dense grids */
} atf_plot_figure;

/* Render fig to BASE.svg and BASE.png. Errors: ATF_E_USAGE for an inconsistent description,
 * ATF_E_IO when a file cannot be written. */
atf_error atf_plot_save(const atf_plot_figure *fig, const char *base, char *err);

/* Whether the PNG device (cairo) is available; without it only the SVG is written. */
int atf_plot_png_available(void);

#ifdef __cplusplus
}
#endif

#endif
