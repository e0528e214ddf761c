/* cmd_sweep.c — `atf sweep PROBLEM.h5`: penalty ablations on one problem file.
 *
 * The grid is (penalty family × exponent p × scale γ) × structure (layer, diagonal, full), plus
 * any explicit --penalty specs, plus the NTK min-norm baseline as the reference row. Each run is
 * one row of OUT/sweep.csv and OUT/sweep.jsonl (rowstore.h: fsync per row, keyed by
 * "structure|penalty"), so an interrupted sweep resumes where it stopped. Runs of one structure
 * are warm-started from the previous run of that structure. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf_cli.h"
#include "experiment.h"
#include "plot.h"
#include "rowstore.h"

enum { MAXLIST = 32, MAXRUNS = 2048 };

typedef struct {
    const char *problem;
    const char *out;
    char families[MAXLIST][16];
    int nfamilies;
    double ps[MAXLIST];
    int np;
    char scales[MAXLIST][32];
    int nscales;
    atf_global_structure structures[3];
    int nstructures;
    const char *extra[MAXLIST];
    int nextra;
    double tol;
    long max_iter;
    double auto_fraction;
    long align_max;
    int json, quiet, center;
} sweep_args;

typedef struct {
    char key[192];
    char spec[160];        /* as built, may contain scale=auto */
    char family[16];
    double p;
    char scale[32];
    atf_global_structure structure;
} sweep_run;

static const char *structure_name(atf_global_structure s)
{
    return s == ATF_GLOBAL_FULL ? "full" : s == ATF_GLOBAL_DIAGONAL ? "diagonal" : "layer";
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: atf sweep PROBLEM.h5 [--out DIR] [--families LIST] [--p LIST] [--scales LIST]\n"
            "                 [--structures LIST] [--penalty SPEC]... [--tol EPS] [--max-iter N]\n"
            "                 [--auto-fraction Q] [--alignment-max M] [--center] [--quiet] [--json]\n"
            "\n"
            "Solve problem (16) on PROBLEM.h5 for every penalty family x parameter x structure and\n"
            "record one row per run in DIR/sweep.csv and DIR/sweep.jsonl (default DIR out/sweep):\n"
            "status, objective, iterations, seconds, residuals, stationarity, test error (when the\n"
            "file has a test split), effective rank of every block (singular values holding 90%%\n"
            "of the energy) and the alignment of the adapted kernel with the label kernel r r^T\n"
            "(and with K0). The first row is the NTK min-norm baseline. Re-running the same\n"
            "command skips finished rows (resume after Ctrl-C). Also writes DIR/sweep.{svg,png}\n"
            "(test error, or total effective rank without test data, against the scale).\n"
            "\n"
            "  --families LIST    comma-separated of sq, abs, pow, zsq, logsq, nuclear, fixed\n"
            "                     (default sq,abs,pow,zsq)\n"
            "  --p LIST           exponents for pow (default 0.5,1.5,3)\n"
            "  --scales LIST      scale values gamma, or 'auto' (default 1e-4,1e-3,1e-2,1e-1,1)\n"
            "  --structures LIST  of layer, diagonal, full (default layer,full)\n"
            "  --penalty SPEC     an extra penalty run as given (repeatable; ';'-free spec)\n"
            "  --tol EPS          relative tolerance (default 1e-6)\n"
            "  --max-iter N       ADMM iteration limit per run (default 5000)\n"
            "  --auto-fraction Q  scale=auto means sqrt(gamma) = Q x the largest singular value\n"
            "                     of the baseline solution (default 0.3)\n"
            "  --alignment-max M  compute kernel alignments only when M <= this (default 4000)\n"
            "  --center           drop the initial function: r = y, predictions A vec B\n"
            "                     (needs /f0 in the file; f0 := 0 on both splits)\n");
}

static atf_error split_list(const char *opt, const char *text, char items[][32], int *n, char *err)
{
    *n = 0;
    if (!text || !*text) {
        atf_errorf(err, "%s: empty list", opt);
        return ATF_E_USAGE;
    }
    const char *p = text;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == 0 || len >= 32 || *n >= MAXLIST) {
            atf_errorf(err, "%s: bad list '%s'", opt, text);
            return ATF_E_USAGE;
        }
        memcpy(items[*n], p, len);
        items[*n][len] = '\0';
        (*n)++;
        p += len + (comma ? 1 : 0);
    }
    return ATF_OK;
}

static atf_error parse_families(const char *text, sweep_args *a, char *err)
{
    char items[MAXLIST][32];
    int n;
    atf_error e = split_list("--families", text, items, &n, err);
    if (e)
        return e;
    static const char *known[] = {"sq", "abs", "pow", "zsq", "logsq", "nuclear", "fixed"};
    for (int i = 0; i < n; i++) {
        int ok = 0;
        for (size_t k = 0; k < sizeof known / sizeof *known; k++)
            ok |= !strcmp(items[i], known[k]);
        if (!ok) {
            atf_errorf(err, "--families: unknown family '%s'", items[i]);
            return ATF_E_USAGE;
        }
        snprintf(a->families[i], sizeof a->families[i], "%.15s", items[i]);
    }
    a->nfamilies = n;
    return ATF_OK;
}

static atf_error parse_ps(const char *text, sweep_args *a, char *err)
{
    char items[MAXLIST][32];
    int n;
    atf_error e = split_list("--p", text, items, &n, err);
    for (int i = 0; !e && i < n; i++) {
        e = atf_cli_double("--p", items[i], &a->ps[i], err);
        if (!e && !(a->ps[i] > 0)) {
            atf_errorf(err, "--p: exponents must be positive, got %s", items[i]);
            e = ATF_E_USAGE;
        }
    }
    a->np = n;
    return e;
}

static atf_error parse_scales(const char *text, sweep_args *a, char *err)
{
    atf_error e = split_list("--scales", text, a->scales, &a->nscales, err);
    for (int i = 0; !e && i < a->nscales; i++) {
        if (!strcmp(a->scales[i], "auto"))
            continue;
        double g;
        e = atf_cli_double("--scales", a->scales[i], &g, err);
        if (!e && !(g > 0)) {
            atf_errorf(err, "--scales: scales must be positive, got %s", a->scales[i]);
            e = ATF_E_USAGE;
        }
    }
    return e;
}

static atf_error parse_structures(const char *text, sweep_args *a, char *err)
{
    char items[MAXLIST][32];
    int n;
    atf_error e = split_list("--structures", text, items, &n, err);
    if (e)
        return e;
    if (n > 3) {
        atf_errorf(err, "--structures: at most layer, diagonal, full");
        return ATF_E_USAGE;
    }
    for (int i = 0; i < n; i++) {
        if (!strcmp(items[i], "layer"))
            a->structures[i] = ATF_GLOBAL_LAYER;
        else if (!strcmp(items[i], "diagonal"))
            a->structures[i] = ATF_GLOBAL_DIAGONAL;
        else if (!strcmp(items[i], "full"))
            a->structures[i] = ATF_GLOBAL_FULL;
        else {
            atf_errorf(err, "--structures: unknown structure '%s' (layer, diagonal, full)",
                       items[i]);
            return ATF_E_USAGE;
        }
    }
    a->nstructures = n;
    return ATF_OK;
}

static atf_error parse_args(int argc, char **argv, sweep_args *a, char *err)
{
    memset(a, 0, sizeof *a);
    a->out = "out/sweep";
    a->tol = 1e-6;
    a->max_iter = 5000;
    a->auto_fraction = 0.3;
    a->align_max = 4000;
    atf_error e = parse_families("sq,abs,pow,zsq", a, err);
    if (!e)
        e = parse_ps("0.5,1.5,3", a, err);
    if (!e)
        e = parse_scales("1e-4,1e-3,1e-2,1e-1,1", a, err);
    if (!e)
        e = parse_structures("layer,full", a, err);
    for (int i = 1; !e && i < argc; i++) {
        const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = 1;
        if (!strcmp(opt, "--out"))
            a->out = val;
        else if (!strcmp(opt, "--families"))
            e = parse_families(val, a, err);
        else if (!strcmp(opt, "--p"))
            e = parse_ps(val, a, err);
        else if (!strcmp(opt, "--scales"))
            e = parse_scales(val, a, err);
        else if (!strcmp(opt, "--structures"))
            e = parse_structures(val, a, err);
        else if (!strcmp(opt, "--penalty")) {
            if (a->nextra >= MAXLIST) {
                atf_errorf(err, "--penalty: at most %d", MAXLIST);
                return ATF_E_USAGE;
            }
            a->extra[a->nextra++] = val;
        } else if (!strcmp(opt, "--tol"))
            e = atf_cli_double(opt, val, &a->tol, err);
        else if (!strcmp(opt, "--max-iter"))
            e = atf_cli_int(opt, val, 1, 100000000, &a->max_iter, err);
        else if (!strcmp(opt, "--auto-fraction"))
            e = atf_cli_double(opt, val, &a->auto_fraction, err);
        else if (!strcmp(opt, "--alignment-max"))
            e = atf_cli_int(opt, val, 0, 1000000, &a->align_max, err);
        else {
            takes = 0;
            if (!strcmp(opt, "--json"))
                a->json = 1;
            else if (!strcmp(opt, "--quiet"))
                a->quiet = 1;
            else if (!strcmp(opt, "--center"))
                a->center = 1;
            else if (opt[0] == '-' && opt[1]) {
                atf_errorf(err, "unknown option '%s' (atf sweep --help)", opt);
                return ATF_E_USAGE;
            } else if (!a->problem)
                a->problem = opt;
            else {
                atf_errorf(err, "unexpected argument '%s'", opt);
                return ATF_E_USAGE;
            }
        }
        if (takes) {
            if (!val) {
                atf_errorf(err, "%s needs a value", opt);
                return ATF_E_USAGE;
            }
            i++;
        }
    }
    if (e)
        return e;
    if (!a->problem) {
        atf_errorf(err, "missing PROBLEM.h5 (atf sweep --help)");
        return ATF_E_USAGE;
    }
    if (!(a->tol > 0) || !(a->auto_fraction > 0)) {
        atf_errorf(err, "--tol and --auto-fraction must be positive");
        return ATF_E_USAGE;
    }
    return ATF_OK;
}

/* Validate a spec by parsing it with any scale=auto replaced by a placeholder scale. */
static atf_error check_spec(const char *spec, char *err)
{
    char resolved[256];
    atf_penalty pen;
    atf_error e = atf_resolve_auto_scale(spec, 1.0, 1.0, resolved, sizeof resolved, NULL, err);
    if (!e)
        e = atf_penalty_parse(resolved, &pen, err);
    if (e)
        return ATF_E_USAGE;
    return ATF_OK;
}

static int add_run(sweep_run *runs, int n, atf_global_structure st, const char *spec,
                   const char *family, double p, const char *scale)
{
    if (n >= MAXRUNS)
        return n;
    sweep_run *r = &runs[n];
    memset(r, 0, sizeof *r);
    snprintf(r->spec, sizeof r->spec, "%s", spec);
    snprintf(r->family, sizeof r->family, "%s", family);
    r->p = p;
    snprintf(r->scale, sizeof r->scale, "%s", scale ? scale : "");
    r->structure = st;
    snprintf(r->key, sizeof r->key, "%s|%s", structure_name(st), spec);
    return n + 1;
}

static atf_error build_runs(const sweep_args *a, sweep_run *runs, int *nruns, char *err)
{
    int n = 0;
    char spec[160];
    for (int s = 0; s < a->nstructures; s++) {
        atf_global_structure st = a->structures[s];
        for (int f = 0; f < a->nfamilies; f++) {
            const char *fam = a->families[f];
            if (!strcmp(fam, "fixed")) {
                n = add_run(runs, n, st, "fixed", fam, NAN, NULL);
                continue;
            }
            int np = !strcmp(fam, "pow") ? a->np : 1;
            for (int k = 0; k < np; k++)
                for (int c = 0; c < a->nscales; c++) {
                    if (!strcmp(fam, "pow"))
                        snprintf(spec, sizeof spec, "pow:p=%g,scale=%s", a->ps[k], a->scales[c]);
                    else
                        snprintf(spec, sizeof spec, "%s:scale=%s", fam, a->scales[c]);
                    n = add_run(runs, n, st, spec, fam, !strcmp(fam, "pow") ? a->ps[k] : NAN,
                                a->scales[c]);
                }
        }
        for (int x = 0; x < a->nextra; x++)
            n = add_run(runs, n, st, a->extra[x], "custom", NAN, NULL);
    }
    if (n >= MAXRUNS) {
        atf_errorf(err, "the grid has more than %d runs: make it smaller", MAXRUNS);
        return ATF_E_USAGE;
    }
    for (int i = 0; i < n; i++)
        if (check_spec(runs[i].spec, err))
            return ATF_E_USAGE;
    *nruns = n;
    return ATF_OK;
}

/* ---- per-run measurements ---- */

typedef struct {
    double label, k0;
} alignments;

/* Cosine of the adapted kernel with the label kernel r rᵀ and with K0. Layer structure: eq. 7
 * from every block's factors; full: Theorem 1; diagonal (no per-entry kernel in the tangent
 * module) and oversized problems: NaN. */
static atf_error kernel_alignments(const atf_problem *prob, const atf_result *res,
                                   atf_global_structure st, long align_max, alignments *out,
                                   char *err)
{
    out->label = out->k0 = NAN;
    int M = prob->M;
    if (M > align_max || st == ATF_GLOBAL_DIAGONAL)
        return ATF_OK;
    for (int b = 0; b < prob->nblocks; b++)
        if (prob->blocks[b].structure == ATF_STRUCT_DIAGONAL)
            return ATF_OK;
    size_t mm = (size_t)M * (size_t)M;
    double *K0 = calloc(mm, sizeof(double)), *K = calloc(mm, sizeof(double));
    double *L = malloc(sizeof(double) * mm);
    atf_error e = ATF_OK;
    if (!K0 || !K || !L) {
        atf_errorf(err, "alignment: out of memory for %d x %d kernels", M, M);
        e = ATF_E_NOMEM;
        goto done;
    }
    for (int b = 0; !e && b < prob->nblocks; b++)
        e = atf_kernel_ntk_block(&prob->blocks[b], K0, err);
    if (!e && st == ATF_GLOBAL_FULL)
        e = atf_kernel_theorem1(prob, res, K0, K, NULL, err);
    else
        for (int b = 0; !e && b < prob->nblocks; b++)
            e = atf_kernel_adapted_block(&prob->blocks[b], &res->blocks[b], K, err);
    if (e)
        goto done;
    atf_kernel_outer(M, prob->r, L);
    out->label = atf_kernel_cosine(M, K, L);
    out->k0 = atf_kernel_cosine(M, K, K0);
done:
    free(K0), free(K), free(L);
    return e;
}

static void fill_row(atf_row *row, const atf_problem *prob, const char *key, const char *structure,
                     const char *spec, const char *family, double p, const char *scale,
                     double gamma, const atf_result *res, double seconds, int warm,
                     const atf_test_metrics *tm, const alignments *al)
{
    atf_row_clear(row);
    atf_row_str(row, "key", key);
    atf_row_str(row, "structure", structure);
    atf_row_str(row, "penalty", spec);
    atf_row_str(row, "family", family);
    atf_row_num(row, "p", p);
    atf_row_str(row, "scale", scale && *scale ? scale : "nan");
    atf_row_num(row, "gamma", gamma);
    atf_row_str(row, "status", atf_status_name(res->status));
    atf_row_num(row, "objective", res->objective);
    atf_row_int(row, "iterations", res->iterations);
    atf_row_num(row, "seconds", seconds);
    atf_row_num(row, "primal_residual", res->primal_residual);
    atf_row_num(row, "dual_residual", res->dual_residual);
    atf_row_num(row, "constraint_residual", res->constraint_residual);
    atf_row_num(row, "stationarity", res->stationarity);
    atf_row_num(row, "test_error", tm->error);
    atf_row_num(row, "test_rel_mse", tm->rel_mse);
    atf_row_num(row, "align_label", al->label);
    atf_row_num(row, "align_k0", al->k0);
    atf_row_int(row, "warm", warm);
    for (int b = 0; b < res->nblocks; b++) {
        char name[ATF_ROW_NAMELEN];
        snprintf(name, sizeof name, "erank_%.40s", prob->blocks[b].name);
        const atf_result_block *rb = &res->blocks[b];
        atf_row_int(row, name, rb->d ? atf_effective_rank(rb->d, rb->k, 0.9) : -1);
    }
}

static atf_error measure(const atf_problem *prob, const atf_result *res, atf_global_structure st,
                         long align_max, atf_test_metrics *tm, alignments *al, char *err)
{
    atf_error e = atf_result_test_metrics(prob, res, tm, err);
    if (!e)
        e = kernel_alignments(prob, res, st, align_max, al, err);
    return e;
}

/* ---- the figure: test error (or total effective rank) against the scale ---- */

static void sort_by_x(double *x, double *y, int n)
{
    for (int i = 1; i < n; i++) { /* insertion sort: a series has a handful of points */
        double xi = x[i], yi = y[i];
        int j = i - 1;
        while (j >= 0 && x[j] > xi) {
            x[j + 1] = x[j];
            y[j + 1] = y[j];
            j--;
        }
        x[j + 1] = xi;
        y[j + 1] = yi;
    }
}

static void sweep_figure(const atf_rowstore *st, const sweep_args *a, const char *base)
{
    atf_plot_panel panels[3];
    static double xs[3][ATF_PLOT_MAXSERIES][MAXLIST], ys[3][ATF_PLOT_MAXSERIES][MAXLIST];
    static char labels[3][ATF_PLOT_MAXSERIES][48];
    int use_test = 0;
    double base_y = NAN;
    for (int i = 0; i < atf_rowstore_count(st); i++)
        use_test |= isfinite(atf_row_getnum(atf_rowstore_row(st, i), "test_error"));
    for (int i = 0; i < atf_rowstore_count(st); i++) {
        const atf_row *row = atf_rowstore_row(st, i);
        if (!strcmp(atf_row_get(row, "key"), "baseline")) {
            base_y = 0.0;
            if (use_test)
                base_y = atf_row_getnum(row, "test_error");
            else
                for (int f = 0; f < row->nfields; f++)
                    if (!strncmp(row->names[f], "erank_", 6))
                        base_y += atf_row_getnum(row, row->names[f]);
        }
    }
    memset(panels, 0, sizeof panels);
    int npanels = 0;
    for (int s = 0; s < a->nstructures; s++) {
        atf_plot_panel *p = &panels[npanels];
        const char *sname = structure_name(a->structures[s]);
        p->kind = ATF_PANEL_LINES;
        static char ptitle[3][48];
        snprintf(ptitle[npanels], sizeof ptitle[npanels], "structure: %s", sname);
        p->title = ptitle[npanels];
        p->xlabel = "scale γ";
        p->ylabel = use_test ? "test error" : "Σ effective rank";
        p->logx = 1;
        p->legend = ATF_LEGEND_AUTO;
        for (int i = 0; i < atf_rowstore_count(st); i++) {
            const atf_row *row = atf_rowstore_row(st, i);
            double g = atf_row_getnum(row, "gamma");
            if (strcmp(atf_row_get(row, "structure"), sname) || !isfinite(g))
                continue;
            char label[48];
            double pp = atf_row_getnum(row, "p");
            if (isfinite(pp))
                snprintf(label, sizeof label, "%s p=%g", atf_row_get(row, "family"), pp);
            else
                snprintf(label, sizeof label, "%s", atf_row_get(row, "family"));
            int k = 0;
            while (k < p->nseries && strcmp(labels[npanels][k], label))
                k++;
            if (k == p->nseries) {
                if (k == ATF_PLOT_MAXSERIES)
                    continue;
                snprintf(labels[npanels][k], 48, "%s", label);
                p->series[k] = (atf_plot_series){labels[npanels][k], xs[npanels][k],
                                                 ys[npanels][k], NULL, 0, k % 8, k / 8, 1 + k % 5, 0};
                p->nseries++;
            }
            atf_plot_series *ser = &p->series[k];
            if (ser->n >= MAXLIST)
                continue;
            double y = 0.0;
            if (use_test)
                y = atf_row_getnum(row, "test_error");
            else
                for (int f = 0; f < row->nfields; f++)
                    if (!strncmp(row->names[f], "erank_", 6))
                        y += atf_row_getnum(row, row->names[f]);
            xs[npanels][k][ser->n] = g;
            ys[npanels][k][ser->n] = y;
            ser->n++;
        }
        for (int k = 0; k < p->nseries; k++) /* rows come in grid order, `auto` last */
            sort_by_x(xs[npanels][k], ys[npanels][k], p->series[k].n);
        if (p->nseries && isfinite(base_y) && p->nseries < ATF_PLOT_MAXSERIES) {
            int k = p->nseries;
            double lo = DBL_MAX, hi = -DBL_MAX;
            for (int j = 0; j < k; j++)
                for (int i = 0; i < p->series[j].n; i++) {
                    lo = fmin(lo, xs[npanels][j][i]);
                    hi = fmax(hi, xs[npanels][j][i]);
                }
            xs[npanels][k][0] = lo, xs[npanels][k][1] = hi;
            ys[npanels][k][0] = ys[npanels][k][1] = base_y;
            p->series[k] = (atf_plot_series){"NTK baseline", xs[npanels][k], ys[npanels][k], NULL,
                                             2, 6, 1, 0, 0};
            p->nseries++;
        }
        if (p->nseries)
            npanels++;
    }
    if (!npanels)
        return;
    char title[256];
    const char *file = strrchr(a->problem, '/') ? strrchr(a->problem, '/') + 1 : a->problem;
    snprintf(title, sizeof title, "atf sweep on %.120s%s: %s against the penalty scale", file,
             a->center ? " (centered)" : "", use_test ? "test error" : "effective rank");
    atf_plot_figure fig = {title, npanels, 1, npanels == 1 ? 950 : 720 * npanels, 620, npanels,
                           panels, 0};
    char err[ATF_ERRLEN];
    if (atf_plot_save(&fig, base, err))
        fprintf(stderr, "atf sweep: warning: %s\n", err);
}

/* ---- the command ---- */

typedef struct {
    const sweep_args *a;
    atf_problem *prob;
    atf_rowstore *store;
    double dmax;   /* largest singular value of the baseline (scale=auto) */
    volatile sig_atomic_t *stop;
    int ran;
} sweep_state;

static atf_error run_baseline(sweep_state *s, char *err)
{
    atf_result *res = NULL;
    double t0 = atf_cli_now();
    atf_error e = atf_baseline(s->prob, &res, err);
    if (e)
        return e;
    double secs = atf_cli_now() - t0;
    s->dmax = atf_result_max_singular(res);
    if (!atf_rowstore_has(s->store, "baseline")) {
        atf_test_metrics tm;
        alignments al;
        e = measure(s->prob, res, ATF_GLOBAL_LAYER, s->a->align_max, &tm, &al, err);
        if (!e) {
            atf_row row;
            fill_row(&row, s->prob, "baseline", "ntk", "-", "baseline", NAN, NULL, NAN, res,
                     secs, 0, &tm, &al);
            e = atf_rowstore_append(s->store, &row, err);
            s->ran++;
        }
    }
    atf_result_free(res);
    return e;
}

static atf_error run_one(sweep_state *s, const sweep_run *run, atf_result **warm, char *err)
{
    char resolved[256];
    double gamma;
    atf_error e = atf_resolve_auto_scale(run->spec, s->dmax, s->a->auto_fraction, resolved,
                                         sizeof resolved, &gamma, err);
    if (!e && isnan(gamma) && run->scale[0])
        gamma = strtod(run->scale, NULL);
    if (!e)
        e = atf_problem_set_penalty(s->prob, resolved, err);
    if (e)
        return e;
    atf_settings set = atf_settings_default();
    set.method = ATF_METHOD_ADMM;
    set.structure = run->structure;
    set.eps_rel = s->a->tol;
    set.max_iter = (int)s->a->max_iter;
    set.interrupt = s->stop;
    set.warm = *warm;
    atf_result *res = NULL;
    double t0 = atf_cli_now();
    e = atf_solve(s->prob, &set, &res, err);
    double secs = atf_cli_now() - t0;
    if (e == ATF_E_INTERRUPTED || (res && res->status == ATF_STATUS_INTERRUPTED)) {
        atf_result_free(res);
        return ATF_E_INTERRUPTED;
    }
    if (!res) /* a hard failure (bad input, numerical breakdown): recorded as a failed row */
        return e;
    atf_test_metrics tm;
    alignments al;
    atf_error em = measure(s->prob, res, run->structure, s->a->align_max, &tm, &al, err);
    if (em) {
        atf_result_free(res);
        return em;
    }
    atf_row row;
    fill_row(&row, s->prob, run->key, structure_name(run->structure), run->spec, run->family,
             run->p, run->scale, gamma, res, secs, *warm != NULL, &tm, &al);
    e = atf_rowstore_append(s->store, &row, err);
    s->ran++;
    if (res->status == ATF_STATUS_SOLVED || res->status == ATF_STATUS_MAX_ITERATIONS) {
        atf_result_free(*warm);
        *warm = res;
    } else {
        atf_result_free(res);
    }
    return e;
}

static atf_error run_all(sweep_state *s, const sweep_run *runs, int nruns, char *err)
{
    int skipped = 0;
    for (int i = 0; i < nruns; i++)
        skipped += atf_rowstore_has(s->store, runs[i].key);
    atf_progress prog;
    atf_progress_start(&prog, nruns, skipped);
    atf_result *warm[3] = {NULL, NULL, NULL};
    atf_error e = ATF_OK;
    for (int i = 0; i < nruns && !e; i++) {
        const sweep_run *run = &runs[i];
        if (atf_rowstore_has(s->store, run->key))
            continue;
        if (*s->stop) {
            e = ATF_E_INTERRUPTED;
            break;
        }
        if (!s->a->quiet)
            atf_progress_show(&prog, run->key);
        e = run_one(s, run, &warm[run->structure], err);
        if (e && e != ATF_E_INTERRUPTED && e != ATF_E_NOMEM && e != ATF_E_IO) {
            /* a run that fails on its own (e.g. a factorisation breaks down) is reported and
             * skipped, not recorded: a re-run tries it again */
            fprintf(stderr, "%satf sweep: %s: %s\n", prog.tty ? "\n" : "", run->key, err);
            e = ATF_OK;
        }
        atf_progress_step(&prog);
    }
    if (!s->a->quiet && !e)
        atf_progress_end(&prog);
    for (int k = 0; k < 3; k++)
        atf_result_free(warm[k]);
    return e;
}

int atf_cmd_sweep(int argc, char **argv)
{
    char err[ATF_ERRLEN] = "";
    if (atf_cli_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    sweep_args a;
    atf_error e = parse_args(argc, argv, &a, err);
    static sweep_run runs[MAXRUNS];
    int nruns = 0;
    if (!e)
        e = build_runs(&a, runs, &nruns, err);
    if (e)
        return atf_cli_fail("sweep", e, err);

    sweep_state s = {&a, NULL, NULL, 0.0, atf_cli_interrupt_flag(), 0};
    char csv[1100], jsonl[1100], fig[1100];
    snprintf(csv, sizeof csv, "%s/sweep.csv", a.out);
    snprintf(jsonl, sizeof jsonl, "%s/sweep.jsonl", a.out);
    snprintf(fig, sizeof fig, "%s/sweep", a.out);
    e = atf_cli_output_dir(a.out, err);
    if (!e)
        e = atf_problem_read(a.problem, &s.prob, err);
    if (!e && a.center) {
        if (!s.prob->f0) {
            atf_errorf(err, "%s: --center needs /f0 in the problem file", a.problem);
            e = ATF_E_INPUT;
        } else {
            atf_problem_center(s.prob);
            atf_problem_center(s.prob->test);
        }
    }
    if (!e)
        e = atf_rowstore_open(csv, jsonl, "key", &s.store, err);
    if (!e)
        e = run_baseline(&s, err);
    if (!e)
        e = run_all(&s, runs, nruns, err);
    if (e == ATF_E_INTERRUPTED)
        snprintf(err, sizeof err, "interrupted: %d rows recorded in %.300s; re-run the same "
                 "command to resume", s.store ? atf_rowstore_count(s.store) : 0, csv);
    if (!e || e == ATF_E_INTERRUPTED) {
        if (s.store)
            sweep_figure(s.store, &a, fig);
    }
    if (!e && a.json) {
        atf_row sum;
        atf_row_clear(&sum);
        atf_row_str(&sum, "status", "done");
        atf_row_int(&sum, "rows", atf_rowstore_count(s.store));
        atf_row_int(&sum, "new_rows", s.ran);
        atf_row_str(&sum, "csv", csv);
        atf_row_str(&sum, "jsonl", jsonl);
        char *line = atf_row_json_line(&sum);
        if (line)
            fputs(line, stdout);
        free(line);
    } else if (!e && !a.quiet) {
        fprintf(stderr, "atf sweep: %d rows in %s (%d new)\n", atf_rowstore_count(s.store), csv,
                s.ran);
    }
    atf_rowstore_close(s.store);
    atf_problem_free(s.prob);
    return e ? atf_cli_fail("sweep", e, err) : 0;
}
