/* path_report.c — what the regularisation path says about its table: the best λ, the figure
 * (error and cross-entropy against λ) and the report (Markdown or one JSON line). Everything
 * here reads the recorded rows, so a resumed run reports the whole table. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/path_internal.h"

/* ---- the best λ ---- */

void atf_path_criterion_column(const path_state *s, char *col, size_t len)
{
    snprintf(col, len, "%s_%s", s->validating ? "val" : "test",
             s->cfg->loss == ATF_LOSS_XENT ? "xent" : "error");
}

/* Minimal criterion among the rows whose result was kept; ties go to the larger λ (the more
 * regularised fit). */
void atf_path_best_of(const path_state *s, atf_path_best *best)
{
    char col[32], ce[32], cx[32];
    const char *split = s->validating ? "val" : "test";
    atf_path_criterion_column(s, col, sizeof col);
    snprintf(ce, sizeof ce, "%s_error", split);
    snprintf(cx, sizeof cx, "%s_xent", split);
    memset(best, 0, sizeof *best);
    snprintf(best->criterion, sizeof best->criterion, "%s %s",
             s->validating ? "validation" : "test",
             s->cfg->loss == ATF_LOSS_XENT ? "cross-entropy" : "error");
    double bv = INFINITY;
    for (int i = 0; i < atf_rowstore_count(s->store); i++) {
        const atf_row *row = atf_rowstore_row(s->store, i);
        double v = atf_row_getnum(row, col), l = atf_row_getnum(row, "lambda");
        const char *file = atf_row_get(row, "result");
        if (!isfinite(v) || !file || !strcmp(file, "-"))
            continue;
        if (best->found && !(v < bv || (v == bv && l > best->lambda)))
            continue;
        best->found = 1;
        bv = v;
        best->lambda = l;
        best->error = atf_row_getnum(row, ce);
        best->xent = atf_row_getnum(row, cx);
        snprintf(best->key, sizeof best->key, "%s", atf_row_get(row, "key"));
        atf_exp_path(best->result, sizeof best->result, s->cfg->out, file, NULL);
    }
}

/* ---- the rows by λ ---- */

enum { NCOLS = 6 };
static const char *const metric_cols[NCOLS] = {"train_error", "val_error", "test_error",
                                               "train_xent", "val_xent", "test_xent"};

typedef struct {
    int n;
    double *lambda;       /* ascending */
    double *v[NCOLS];     /* metric_cols at each λ */
    int *row;             /* the table row */
} path_points;

/* Row indices by ascending λ (insertion sort: a path has a few dozen rows). */
static void sort_rows(const atf_rowstore *st, int *idx, int n)
{
    for (int i = 1; i < n; i++) {
        int r = idx[i], j = i - 1;
        double l = atf_row_getnum(atf_rowstore_row(st, r), "lambda");
        while (j >= 0 && atf_row_getnum(atf_rowstore_row(st, idx[j]), "lambda") > l) {
            idx[j + 1] = idx[j];
            j--;
        }
        idx[j + 1] = r;
    }
}

static void points_free(path_points *p)
{
    free(p->lambda);
    free(p->row);
    for (int c = 0; c < NCOLS; c++)
        free(p->v[c]);
}

/* The rows sorted by ascending λ; -1 when memory is short. */
static int points_of(const atf_rowstore *st, path_points *p)
{
    memset(p, 0, sizeof *p);
    int n = atf_rowstore_count(st);
    size_t sz = (size_t)(n > 0 ? n : 1);
    p->lambda = malloc(sz * sizeof(double));
    p->row = malloc(sz * sizeof(int));
    int bad = !p->lambda || !p->row;
    for (int c = 0; c < NCOLS; c++)
        bad |= !(p->v[c] = malloc(sz * sizeof(double)));
    if (bad) {
        points_free(p);
        return -1;
    }
    for (int i = 0; i < n; i++)
        p->row[i] = i;
    sort_rows(st, p->row, n);
    for (int i = 0; i < n; i++) {
        const atf_row *row = atf_rowstore_row(st, p->row[i]);
        p->lambda[i] = atf_row_getnum(row, "lambda");
        for (int c = 0; c < NCOLS; c++)
            p->v[c][i] = atf_row_getnum(row, metric_cols[c]);
    }
    p->n = n;
    return 0;
}

static int any_finite(const double *v, int n)
{
    for (int i = 0; i < n; i++)
        if (isfinite(v[i]))
            return 1;
    return 0;
}

/* ---- the figure ---- */

typedef struct {
    double best_x[2][2], best_y[2][2];
    char best_label[64];
    char title[320];
} path_plot;

/* The series of one panel: train, validation, test of one metric (offset 0: error, 3:
 * cross-entropy) on one y scale from (just below) 0, both being nonnegative, with the top 40 %
 * left empty for the legend, and the best λ as a vertical line up to the data's top. */
static void fill_panel(atf_plot_panel *p, const path_points *pts, int offset, path_plot *pp,
                       int pi, const atf_path_best *best)
{
    static const char *const names[3] = {"train", "validation", "test"};
    static const int colours[3] = {0, 1, 2}, dashes[3] = {1, 0, 2}, marks[3] = {1, 3, 4};
    double hi = 0.0;
    for (int k = 0; k < 3; k++) {
        const double *v = pts->v[offset + k];
        if (!any_finite(v, pts->n))
            continue;
        p->series[p->nseries++] = (atf_plot_series){names[k], pts->lambda, v, NULL, pts->n,
                                                    colours[k], dashes[k], marks[k], 0, 0};
        for (int i = 0; i < pts->n; i++)
            if (isfinite(v[i]))
                hi = fmax(hi, v[i]);
    }
    hi = hi > 0 ? hi : 1.0;
    p->fixed_y = 1;
    p->ymax = hi / 0.6;
    p->ymin = -0.03 * p->ymax; /* markers at 0 (a fitted training set) drawn whole */
    if (!best->found || !p->nseries)
        return;
    pp->best_x[pi][0] = pp->best_x[pi][1] = best->lambda;
    pp->best_y[pi][0] = p->ymin;
    pp->best_y[pi][1] = 1.05 * hi;
    p->series[p->nseries++] = (atf_plot_series){pp->best_label, pp->best_x[pi], pp->best_y[pi],
                                                NULL, 2, 6, 1, 0, 0, 0};
}

/* Both panels share the λ axis: the same range, whatever data each has. */
static void share_x(atf_plot_panel *panels, int np, const path_points *pts)
{
    double lo = pts->lambda[0], hi = pts->lambda[pts->n - 1];
    double pad = lo < hi ? pow(hi / lo, 0.05) : 2.0;
    for (int k = 0; k < np; k++) {
        panels[k].fixed_x = 1;
        panels[k].xmin = lo / pad;
        panels[k].xmax = hi * pad;
    }
}

static int path_panels(const path_points *pts, const atf_path_best *best, path_plot *pp,
                       atf_plot_panel *panels)
{
    static const char *const titles[2] = {"error", "mean cross-entropy"};
    static const char *const ylabels[2] = {"classification error", "cross-entropy"};
    int np = 0;
    for (int k = 0; k < 2; k++) {
        atf_plot_panel *p = &panels[np];
        *p = (atf_plot_panel){.kind = ATF_PANEL_LINES, .title = titles[k], .xlabel = "λ",
                              .ylabel = ylabels[k], .logx = 1, .legend = ATF_LEGEND_AUTO};
        fill_panel(p, pts, 3 * k, pp, np, best);
        np += p->nseries > 0;
    }
    if (np)
        share_x(panels, np, pts);
    return np;
}

/* OUT/path.{svg,png}: written atomically and checked like the tables, so a figure that could
 * not be written whole fails the run. */
atf_error atf_path_figure(const path_state *s, const atf_path_best *best, char *err)
{
    static path_plot pp;
    path_points pts;
    atf_plot_panel panels[2];
    char base[1100];
    if (atf_rowstore_count(s->store) < 1)
        return ATF_OK;
    if (points_of(s->store, &pts)) {
        atf_errorf(err, "%s: out of memory for the figure", s->cfg->out);
        return ATF_E_NOMEM;
    }
    snprintf(pp.best_label, sizeof pp.best_label, "best λ = %s", best->key);
    int np = path_panels(&pts, best, &pp, panels);
    const char *file = strrchr(s->cfg->problem, '/');
    file = file ? file + 1 : s->cfg->problem;
    snprintf(pp.title, sizeof pp.title, "atf path on %.100s: %s loss, penalty %.60s; best λ by "
             "%s", file, atf_loss_name(s->cfg->loss), s->penalty, best->criterion);
    atf_plot_figure fig = {pp.title, np, 1, np == 1 ? 900 : 1400, 620, np, panels, 0};
    atf_error e = np ? atf_exp_path(base, sizeof base, s->cfg->out, "path", err) : ATF_OK;
    if (np && !e)
        e = atf_plot_save(&fig, base, err);
    points_free(&pts);
    return e;
}

/* ---- the report ---- */

static void json_report(const path_state *s, const atf_path_best *best)
{
    atf_row sum;
    atf_row_clear(&sum);
    atf_row_str(&sum, "status", "done");
    atf_row_str(&sum, "loss", atf_loss_name(s->cfg->loss));
    atf_row_str(&sum, "criterion", best->criterion);
    atf_row_str(&sum, "best_lambda", best->found ? best->key : "nan");
    atf_row_num(&sum, "best_error", best->found ? best->error : NAN);
    atf_row_num(&sum, "best_xent", best->found ? best->xent : NAN);
    atf_row_str(&sum, "best_result", best->found ? best->result : "-");
    atf_row_int(&sum, "rows", atf_rowstore_count(s->store));
    atf_row_int(&sum, "new_rows", s->ran);
    atf_row_num(&sum, "seconds", atf_now() - s->t0);
    atf_row_str(&sum, "csv", s->csv);
    atf_row_str(&sum, "jsonl", s->jsonl);
    char *line = atf_row_json_line(&sum);
    if (line)
        fputs(line, s->cfg->io.report);
    free(line);
}

/* The Markdown table: the columns of the splits the rows have. */
static void markdown_report(const path_state *s, const atf_path_best *best)
{
    FILE *f = s->cfg->io.report;
    path_points pts;
    if (points_of(s->store, &pts))
        return;
    int show[NCOLS];
    fprintf(f, "| lambda | status | method | iterations | seconds |");
    for (int c = 0; c < NCOLS; c++)
        if ((show[c] = any_finite(pts.v[c], pts.n)))
            fprintf(f, " %s |", metric_cols[c]);
    fprintf(f, "\n|---|---|---|---|---|");
    for (int c = 0; c < NCOLS; c++)
        fprintf(f, "%s", show[c] ? "---|" : "");
    fprintf(f, "\n");
    for (int i = pts.n - 1; i >= 0; i--) { /* descending λ, the order they were solved in */
        const atf_row *row = atf_rowstore_row(s->store, pts.row[i]);
        fprintf(f, "| %s | %s | %s | %s | %.2f |", atf_row_get(row, "key"),
                atf_row_get(row, "status"), atf_row_get(row, "method"),
                atf_row_get(row, "iterations"), atf_row_getnum(row, "seconds"));
        for (int c = 0; c < NCOLS; c++)
            if (show[c])
                fprintf(f, " %.4f |", pts.v[c][i]);
        fprintf(f, "\n");
    }
    if (best->found)
        fprintf(f, "\nbest lambda = %s by minimal %s: error %.4f, cross-entropy %.4f (%s)\n",
                best->key, best->criterion, best->error, best->xent, best->result);
    else
        fprintf(f, "\nno best lambda: no row has a finite %s\n", best->criterion);
    points_free(&pts);
}

void atf_path_report(const path_state *s, const atf_path_best *best)
{
    if (!s->cfg->io.report)
        return;
    if (s->cfg->io.json)
        json_report(s, best);
    else
        markdown_report(s, best);
    fflush(s->cfg->io.report);
}
