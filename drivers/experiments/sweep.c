/* sweep.c — the sweep: problem (16) on one problem file over a grid.
 *
 * The grid is (penalty family × exponent p × scale γ) × structure (layer, diagonal, full), plus
 * any extra penalty specs, plus the NTK min-norm baseline as the reference row. Each run is
 * one row of OUT/sweep.csv and OUT/sweep.jsonl (rowstore.h: fsync per row, keyed by
 * "structure|penalty"), so an interrupted sweep resumes where it stopped. Runs of one structure
 * are warm-started from the previous run of that structure: a structure's runs are a chain.
 *
 * Several processes (io.ranks, mpirun -np K; docs/experiments.md, "Several processes") deal
 * whole chains, never single rows, so that every row is computed exactly as in one process:
 * the chains with a row still to record (the structures in the order given, then the baseline
 * row) go to the ranks in turn (sweep_chains). Every rank solves the baseline itself (its largest
 * singular value resolves scale=auto; an infeasible baseline stops every rank); the rank that
 * has the baseline chain records its row. Each rank appends to its part table and rank 0 moves
 * the rows into the table in grid order, then draws the figure and reports
 * (internal/rowstore_ranks.h, shared with the samples experiment). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atf_penalty.h"
#include "internal/rowstore_ranks.h"

enum { MAXLIST = ATF_SWEEP_MAXLIST, MAXRUNS = ATF_SWEEP_MAXRUNS };

typedef struct {
    char key[192];
    char spec[160];        /* as built, may contain scale=auto */
    char family[16];
    double p;
    char scale[32];
    atf_global_structure structure;
    const char *structure_name;
    int chain; /* the structure's place in the configuration's list (sweep_chains) */
} sweep_run;

static const char *structure_name(atf_global_structure s)
{
    return atf_structure_name(s);
}

/* ---- the configuration ---- */


/* A positive number (or, when allowed, "auto"). */
static atf_error positive(const char *what, const char *text, int auto_ok, double *out, char *err)
{
    char *end;
    *out = NAN;
    if (auto_ok && !strcmp(text, "auto"))
        return ATF_OK;
    double v = strtod(text, &end);
    if (!*text || *end || !isfinite(v) || !(v > 0)) {
        atf_errorf(err, "%s: '%s' is not a positive number%s", what, text,
                   auto_ok ? " or auto" : "");
        return ATF_E_USAGE;
    }
    *out = v;
    return ATF_OK;
}

atf_error atf_sweep_set_families(atf_sweep_config *cfg, const char *list, char *err)
{
    char items[MAXLIST][ATF_EXP_NAMELEN];
    int n;
    atf_error e = atf_exp_split_names("families", list, items, MAXLIST, &n, err);
    for (int i = 0; !e && i < n; i++) {
        int ok = 0; /* a sweep can run every family penalties/ knows */
        for (int k = 0; k < atf_penalty_family_count(); k++)
            ok |= !strcmp(items[i], atf_penalty_family_name(k));
        if (!ok) {
            atf_errorf(err, "families: unknown family '%s'", items[i]);
            return ATF_E_USAGE;
        }
        snprintf(cfg->families[i], sizeof cfg->families[i], "%.15s", items[i]);
    }
    if (!e)
        cfg->nfamilies = n;
    return e;
}

atf_error atf_sweep_set_ps(atf_sweep_config *cfg, const char *list, char *err)
{
    double ps[MAXLIST];
    int n;
    atf_error e = atf_parse_doubles(list, ps, MAXLIST, &n, "p", err);
    for (int i = 0; !e && i < n; i++)
        if (!(ps[i] > 0)) {
            atf_errorf(err, "p: exponents must be positive, got %g", ps[i]);
            e = ATF_E_USAGE;
        }
    if (!e) {
        memcpy(cfg->ps, ps, sizeof(double) * (size_t)n);
        cfg->np = n;
    }
    return e;
}

atf_error atf_sweep_set_scales(atf_sweep_config *cfg, const char *list, char *err)
{
    char items[MAXLIST][ATF_EXP_NAMELEN];
    int n;
    double g;
    atf_error e = atf_exp_split_names("scales", list, items, MAXLIST, &n, err);
    for (int i = 0; !e && i < n; i++)
        e = positive("scales", items[i], 1, &g, err);
    for (int i = 0; !e && i < n; i++)
        memcpy(cfg->scales[i], items[i], sizeof items[i]);
    if (!e)
        cfg->nscales = n;
    return e;
}

atf_error atf_sweep_set_structures(atf_sweep_config *cfg, const char *list, char *err)
{
    char items[MAXLIST][ATF_EXP_NAMELEN];
    int n;
    atf_error e = atf_exp_split_names("structures", list, items, MAXLIST, &n, err);
    if (!e && n > 3) {
        atf_errorf(err, "structures: at most layer, diagonal, full");
        e = ATF_E_USAGE;
    }
    for (int i = 0; !e && i < n; i++)
        if (atf_structure_parse(items[i], &cfg->structures[i])) {
            atf_errorf(err, "structures: unknown structure '%s' (layer, diagonal, full)",
                       items[i]);
            return ATF_E_USAGE;
        }
    if (!e)
        cfg->nstructures = n;
    return e;
}

void atf_sweep_defaults(atf_sweep_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    snprintf(cfg->out, sizeof cfg->out, "out/sweep");
    cfg->tol = 1e-6;
    cfg->max_iter = 5000;
    cfg->auto_fraction = 0.3;
    cfg->align_max = 4000;
    /* the default lists are valid: nothing to report */
    atf_sweep_set_families(cfg, "sq,abs,pow,zsq", NULL);
    atf_sweep_set_ps(cfg, "0.5,1.5,3", NULL);
    atf_sweep_set_scales(cfg, "1e-4,1e-3,1e-2,1e-1,1", NULL);
    atf_sweep_set_structures(cfg, "layer,full", NULL);
}

/* ---- the grid ---- */

static int add_run(sweep_run *runs, int n, atf_global_structure st, const char *spec,
                   const char *family, double p, const char *scale)
{
    if (n >= MAXRUNS)
        return n + 1; /* counted, so that the caller sees the overflow */
    sweep_run *r = &runs[n];
    memset(r, 0, sizeof *r);
    snprintf(r->spec, sizeof r->spec, "%s", spec);
    snprintf(r->family, sizeof r->family, "%s", family);
    r->p = p;
    snprintf(r->scale, sizeof r->scale, "%s", scale ? scale : "");
    r->structure = st;
    r->structure_name = structure_name(st);
    snprintf(r->key, sizeof r->key, "%s|%s", r->structure_name, spec);
    return n + 1;
}

/* The runs of one family in one structure: one per (p,) scale; `fixed` has neither. */
static int add_family(const atf_sweep_config *cfg, sweep_run *runs, int n,
                      atf_global_structure st, const char *fam)
{
    if (!strcmp(fam, "fixed"))
        return add_run(runs, n, st, "fixed", fam, NAN, NULL);
    int is_pow = !strcmp(fam, "pow");
    char spec[160];
    for (int k = 0; k < (is_pow ? cfg->np : 1); k++)
        for (int c = 0; c < cfg->nscales; c++) {
            if (is_pow)
                snprintf(spec, sizeof spec, "pow:p=%g,scale=%s", cfg->ps[k], cfg->scales[c]);
            else
                snprintf(spec, sizeof spec, "%s:scale=%s", fam, cfg->scales[c]);
            n = add_run(runs, n, st, spec, fam, is_pow ? cfg->ps[k] : NAN, cfg->scales[c]);
        }
    return n;
}

static atf_error build_runs(const atf_sweep_config *cfg, sweep_run *runs, int *nruns, char *err)
{
    int n = 0;
    for (int s = 0; s < cfg->nstructures; s++) {
        int first = n;
        for (int f = 0; f < cfg->nfamilies; f++)
            n = add_family(cfg, runs, n, cfg->structures[s], cfg->families[f]);
        for (int x = 0; x < cfg->nextra; x++)
            n = add_run(runs, n, cfg->structures[s], cfg->extra[x], "custom", NAN, NULL);
        for (int i = first; i < n && i < MAXRUNS; i++)
            runs[i].chain = s;
    }
    if (n > MAXRUNS) {
        atf_errorf(err, "the grid has more than %d runs: make it smaller", MAXRUNS);
        return ATF_E_USAGE;
    }
    for (int i = 0; i < n; i++)
        if (atf_check_auto_spec(runs[i].spec, err))
            return ATF_E_USAGE;
    *nruns = n;
    return ATF_OK;
}

atf_error atf_sweep_check(const atf_sweep_config *cfg, char *err)
{
    static sweep_run runs[MAXRUNS];
    int n;
    if (!cfg->problem[0]) {
        atf_errorf(err, "sweep: no problem file");
        return ATF_E_USAGE;
    }
    if (!(cfg->tol > 0) || !(cfg->auto_fraction > 0) || cfg->max_iter < 1 ||
        cfg->nextra > MAXLIST) {
        atf_errorf(err, "sweep: tolerance, auto fraction and iteration limit must be positive "
                   "(at most %d extra penalties)", MAXLIST);
        return ATF_E_USAGE;
    }
    return build_runs(cfg, runs, &n, err);
}

/* ---- per-run measurements ---- */

typedef struct {
    double label, k0;
} alignments;

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


/* One row: what was run, the solver's report, the measurements and the effective rank of every
 * block (singular values holding 90% of the energy). */
static void fill_row(atf_row *row, const atf_sweep_config *cfg, const atf_problem *prob,
                     const sweep_run *run, double gamma, const atf_result *res, double seconds,
                     int warm, const atf_test_metrics *tm, const alignments *al)
{
    atf_row_clear(row);
    atf_row_str(row, "key", run->key);
    atf_row_str(row, "structure", run->structure_name);
    atf_row_str(row, "penalty", run->spec);
    if (cfg->loss.kind != ATF_LOSS_INTERPOLATE) { /* interpolation tables keep their columns */
        atf_row_str(row, "loss", res->loss[0] ? res->loss : "interpolate");
        atf_row_num(row, "loss_value", res->info.loss_value);
        atf_row_num(row, "penalty_value", res->info.penalty_value);
    }
    atf_row_str(row, "family", run->family);
    atf_row_num(row, "p", run->p);
    atf_row_str(row, "scale", run->scale[0] ? run->scale : "nan");
    atf_row_num(row, "gamma", gamma);
    atf_row_str(row, "status", atf_status_name(res->info.status));
    atf_row_num(row, "objective", res->info.objective);
    atf_row_int(row, "iterations", res->info.iterations);
    atf_row_num(row, "seconds", seconds);
    atf_row_num(row, "primal_residual", res->info.primal_residual);
    atf_row_num(row, "dual_residual", res->info.dual_residual);
    atf_row_num(row, "constraint_residual", res->info.constraint_residual);
    atf_row_num(row, "stationarity", res->info.stationarity);
    atf_row_num(row, "test_error", tm->error);
    atf_row_num(row, "test_rel_mse", tm->rel_mse);
    atf_row_num(row, "test_xent", tm->xent);
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
                         int align_max, atf_test_metrics *tm, alignments *al, char *err)
{
    atf_error e = atf_result_test_metrics(prob, res, tm, err);
    if (!e)
        e = kernel_alignments(prob, res, st, align_max, al, err);
    return e;
}

/* ---- the figure: test error (or total effective rank) against the scale ---- */

typedef struct {
    double xs[3][ATF_PLOT_MAXSERIES][MAXLIST], ys[3][ATF_PLOT_MAXSERIES][MAXLIST];
    char labels[3][ATF_PLOT_MAXSERIES][48];
    char notes[3][ATF_PLOT_MAXNOTES][48];
    char titles[3][48];
    int use_test;  /* the rows have a test error (else: total effective rank) */
} sweep_plot;

/* What a row contributes to the figure: its test error, or Σ of its effective ranks. */
static double row_y(const atf_row *row, int use_test)
{
    if (use_test)
        return atf_row_getnum(row, "test_error");
    double y = 0.0;
    for (int f = 0; f < row->nfields; f++)
        if (!strncmp(row->names[f], "erank_", 6))
            y += atf_row_getnum(row, row->names[f]);
    return y;
}

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

/* The series of panel `pi` a row belongs to ("family" or "family p=P"), created on first use;
 * -1 when the panel is full. */
static int series_of(sweep_plot *sp, atf_plot_panel *p, int pi, const atf_row *row)
{
    char label[48];
    double pp = atf_row_getnum(row, "p");
    if (isfinite(pp))
        snprintf(label, sizeof label, "%s p=%g", atf_row_get(row, "family"), pp);
    else
        snprintf(label, sizeof label, "%s", atf_row_get(row, "family"));
    int k = 0;
    while (k < p->nseries && strcmp(sp->labels[pi][k], label))
        k++;
    if (k < p->nseries)
        return k;
    if (k == ATF_PLOT_MAXSERIES)
        return -1;
    snprintf(sp->labels[pi][k], 48, "%s", label);
    p->series[k] = (atf_plot_series){sp->labels[pi][k], sp->xs[pi][k], sp->ys[pi][k], NULL, 0,
                                     k % 8, k / 8, 1 + k % 5, 0, 0};
    p->nseries++;
    return k;
}

/* A scale=auto point is drawn at its resolved γ and says so. */
static void note_auto(sweep_plot *sp, atf_plot_panel *p, int pi, double g, double y)
{
    if (p->nnotes >= ATF_PLOT_MAXNOTES)
        return;
    char *text = sp->notes[pi][p->nnotes];
    snprintf(text, 48, "auto: γ=%.2g", g);
    p->notes[p->nnotes++] = (atf_plot_note){g, y, text};
}

/* The grid rows of one structure as series against γ. */
static void fill_structure_panel(sweep_plot *sp, atf_plot_panel *p, int pi, const char *sname,
                                 const atf_rowstore *st)
{
    for (int i = 0; i < atf_rowstore_count(st); i++) {
        const atf_row *row = atf_rowstore_row(st, i);
        double g = atf_row_getnum(row, "gamma");
        if (strcmp(atf_row_get(row, "structure"), sname) || !isfinite(g))
            continue;
        int k = series_of(sp, p, pi, row);
        if (k < 0 || p->series[k].n >= MAXLIST)
            continue;
        double y = row_y(row, sp->use_test);
        sp->xs[pi][k][p->series[k].n] = g;
        sp->ys[pi][k][p->series[k].n] = y;
        p->series[k].n++;
        if (!strcmp(atf_row_get(row, "scale"), "auto"))
            note_auto(sp, p, pi, g, y);
    }
    for (int k = 0; k < p->nseries; k++) /* rows come in grid order, `auto` last */
        sort_by_x(sp->xs[pi][k], sp->ys[pi][k], p->series[k].n);
}

/* The NTK baseline as a dashed line across the panel's γ range. */
static void add_baseline(sweep_plot *sp, atf_plot_panel *p, int pi, double base_y)
{
    int k = p->nseries;
    if (!k || !isfinite(base_y) || k >= ATF_PLOT_MAXSERIES)
        return;
    double lo = DBL_MAX, hi = -DBL_MAX;
    for (int j = 0; j < k; j++)
        for (int i = 0; i < p->series[j].n; i++) {
            lo = fmin(lo, sp->xs[pi][j][i]);
            hi = fmax(hi, sp->xs[pi][j][i]);
        }
    sp->xs[pi][k][0] = lo, sp->xs[pi][k][1] = hi;
    sp->ys[pi][k][0] = sp->ys[pi][k][1] = base_y;
    p->series[k] = (atf_plot_series){"NTK baseline", sp->xs[pi][k], sp->ys[pi][k], NULL, 2, 6, 1,
                                     0, 0, 0};
    p->nseries++;
}

/* One panel per structure that has rows; returns the number of panels. */
static int sweep_panels(const atf_rowstore *st, const atf_sweep_config *cfg, sweep_plot *sp,
                        atf_plot_panel *panels)
{
    double base_y = NAN;
    sp->use_test = 0;
    for (int i = 0; i < atf_rowstore_count(st); i++)
        sp->use_test |= isfinite(atf_row_getnum(atf_rowstore_row(st, i), "test_error"));
    for (int i = 0; i < atf_rowstore_count(st); i++)
        if (!strcmp(atf_row_get(atf_rowstore_row(st, i), "key"), "baseline"))
            base_y = row_y(atf_rowstore_row(st, i), sp->use_test);
    int np = 0;
    for (int s = 0; s < cfg->nstructures; s++) {
        atf_plot_panel *p = &panels[np];
        const char *sname = structure_name(cfg->structures[s]);
        memset(p, 0, sizeof *p);
        snprintf(sp->titles[np], sizeof sp->titles[np], "structure: %s", sname);
        *p = (atf_plot_panel){.kind = ATF_PANEL_LINES, .title = sp->titles[np],
                              .xlabel = "scale γ",
                              .ylabel = sp->use_test ? "test error" : "Σ effective rank",
                              .logx = 1, .legend = ATF_LEGEND_AUTO};
        fill_structure_panel(sp, p, np, sname, st);
        add_baseline(sp, p, np, base_y);
        np += p->nseries > 0;
    }
    return np;
}

/* OUT/sweep.{svg,png} from every recorded row, written atomically and checked like the
 * tables: a figure that could not be written whole fails the run. */
static atf_error sweep_figure(const atf_rowstore *st, const atf_sweep_config *cfg, char *err)
{
    static sweep_plot sp;
    atf_plot_panel panels[3];
    int np = sweep_panels(st, cfg, &sp, panels);
    char title[256], base[1100];
    if (!np)
        return ATF_OK;
    atf_error e = atf_exp_path(base, sizeof base, cfg->out, "sweep", err);
    if (e)
        return e;
    const char *file = strrchr(cfg->problem, '/') ? strrchr(cfg->problem, '/') + 1 : cfg->problem;
    snprintf(title, sizeof title, "atf sweep on %.120s%s: %s against the penalty scale", file,
             cfg->center ? " (centered)" : "", sp.use_test ? "test error" : "effective rank");
    atf_plot_figure fig = {title, np, 1, np == 1 ? 950 : 720 * np, 620, np, panels, 0};
    return atf_plot_save(&fig, base, err);
}

/* ---- the runs ---- */

typedef struct {
    const atf_sweep_config *cfg;
    const sweep_run *runs;
    int nruns;
    atf_problem *prob;
    exp_shared sh;       /* the table; with ranks, sh.out is this process's part table */
    int own[4];          /* own[c]: this process runs chain c (sweep_chains) */
    double dmax;         /* largest singular value of the baseline (scale=auto) */
    int ran;             /* rows this process appended */
    atf_result *warm[3]; /* last result of each structure: the next run's start */
    int warm_run[3];     /* the run whose result warm[] is (its file warm-I.h5), or −1 */
    atf_status status;   /* solved, or why the sweep stopped: an infeasible baseline (then
                            every run is), or interrupted */
    int baseline_stopped; /* the baseline stopped at the interrupt flag (agreed over the
                             processes): no run starts */
} sweep_state;

/* The table's rows in their order: row 0 is the baseline, row 1 + i is runs[i]; −1 for a key
 * outside the grid. */
static long sweep_key_index(void *ctx, const char *key)
{
    const sweep_state *s = ctx;
    if (!strcmp(key, "baseline"))
        return 0;
    for (int i = 0; i < s->nruns; i++)
        if (!strcmp(s->runs[i].key, key))
            return 1 + i;
    return -1;
}

/* A table (or part table) resumed must have been written with this run's loss. */
static atf_error sweep_check_table(void *ctx, const atf_rowstore *st, const char *table,
                                   char *err)
{
    const sweep_state *s = ctx;
    return atf_exp_check_loss(st, &s->cfg->loss, table, err);
}

static int recorded(sweep_state *s, const char *key)
{
    return exp_shared_recorded(&s->sh, sweep_key_index(s, key), key);
}

/* The chains: one per structure, in the order given (its runs in grid order, each warm-started
 * from the previous one of the chain), then the baseline row. With ranks the chains that still
 * have a row to record are dealt in turn, the j-th of them to rank j mod K, so that every row
 * is computed exactly as in one process; alone, every chain is this process's. */
static void sweep_chains(sweep_state *s)
{
    const atf_exp_ranks *rk = s->sh.ranks;
    int nst = s->cfg->nstructures, j = 0;
    for (int c = 0; c <= nst; c++) {
        int pending = c == nst && !recorded(s, "baseline");
        for (int i = 0; i < s->nruns && c < nst && !pending; i++)
            pending = s->runs[i].chain == c && !recorded(s, s->runs[i].key);
        s->own[c] = !rk || (pending && j % rk->size == rk->rank);
        j += pending;
    }
}

/* The baseline: solved by every process (its largest singular value resolves scale=auto, and
 * an infeasible baseline ends the sweep), recorded by the one that has its chain. */
static atf_error run_baseline(sweep_state *s, char *err)
{
    static const sweep_run baseline = {"baseline", "-", "baseline", NAN, "", ATF_GLOBAL_LAYER,
                                       "ntk", -1};
    atf_result *res = NULL;
    double t0 = atf_now();
    atf_hooks hooks = {.interrupt = s->cfg->io.interrupt};
    atf_error e = atf_baseline_hooks(s->prob, &hooks, &res, err);
    if (e)
        return e;
    if (res->info.status == ATF_STATUS_INTERRUPTED) { /* nothing recorded; the runs wait */
        atf_result_free(res);
        s->baseline_stopped = 1;
        return ATF_OK;
    }
    if (res->info.status != ATF_STATUS_SOLVED) { /* infeasible: so is every run (err says why) */
        s->status = res->info.status;
        atf_result_free(res);
        return ATF_OK;
    }
    double secs = atf_now() - t0;
    s->dmax = atf_result_max_singular(res);
    if (s->own[s->cfg->nstructures] && !recorded(s, "baseline")) {
        atf_test_metrics tm;
        alignments al;
        e = measure(s->prob, res, ATF_GLOBAL_LAYER, s->cfg->align_max, &tm, &al, err);
        if (!e) {
            atf_row row;
            fill_row(&row, s->cfg, s->prob, &baseline, NAN, res, secs, 0, &tm, &al);
            e = atf_rowstore_append(s->sh.out, &row, err);
            s->ran += !e;
        }
    }
    atf_result_free(res);
    return e;
}

/* Solve one grid point (warm-started); *res is NULL when the solver gave no result. */
static atf_error solve_run(sweep_state *s, const sweep_run *run, double *gamma,
                           atf_result **res, double *secs, char *err)
{
    char resolved[256];
    *res = NULL;
    atf_error e = atf_resolve_auto_scale(run->spec, s->dmax, s->cfg->auto_fraction, resolved,
                                         sizeof resolved, gamma, err);
    if (!e && isnan(*gamma) && run->scale[0])
        *gamma = strtod(run->scale, NULL);
    if (!e)
        e = atf_problem_set_penalty(s->prob, resolved, err);
    if (e)
        return e;
    atf_settings set = atf_settings_default();
    set.loss = s->cfg->loss; /* the method: auto, resolved by the solver */
    set.structure = run->structure;
    set.eps_rel = s->cfg->tol;
    set.max_iter = s->cfg->max_iter;
    atf_hooks hooks = {.warm = s->warm[run->structure], .interrupt = s->cfg->io.interrupt};
    double t0 = atf_now();
    e = atf_solve(s->prob, &set, &hooks, res, err);
    *secs = atf_now() - t0;
    return *res ? ATF_OK : e; /* any status is a result; its status goes into the row */
}

/* ---- the warm starts, kept across a stop ----
 * A chain's runs start from its last kept result (solved or at the limit). So that a resumed
 * sweep starts its next run where the uninterrupted one would, that result is kept in
 * OUT/warm-I.h5 (I: the run's place in the grid) while the chain has runs to go: written before
 * the run's row is appended and the chain's previous file removed after it, so that a stop
 * anywhere leaves the file of the chain's last kept recorded run. The last run of a chain
 * removes it. */

static int kept(const atf_result *res)
{
    return res->info.status == ATF_STATUS_SOLVED || res->info.status == ATF_STATUS_MAX_ITERATIONS;
}

static int warm_path(const sweep_state *s, int i, char *path, size_t len)
{
    char name[32], err[ATF_ERRLEN];
    snprintf(name, sizeof name, "warm-%d.h5", i);
    return atf_exp_path(path, len, s->cfg->out, name, err) == ATF_OK;
}

static void drop_warm_file(const sweep_state *s, int i)
{
    char path[1100];
    if (i >= 0 && warm_path(s, i, path, sizeof path))
        remove(path);
}

static int last_of_chain(const sweep_state *s, int i)
{
    for (int j = i + 1; j < s->nruns; j++)
        if (s->runs[j].chain == s->runs[i].chain)
            return 0;
    return 1;
}

/* Before run i of a chain whose warm start is not in hand (a resumed sweep): the file of the
 * chain's last recorded run that has one, if its result fits the problem. */
static void restore_warm(sweep_state *s, int i)
{
    const sweep_run *run = &s->runs[i];
    if (s->warm[run->structure])
        return;
    for (int j = i - 1; j >= 0; j--) {
        char path[1100], err[ATF_ERRLEN];
        if (s->runs[j].chain != run->chain || !recorded(s, s->runs[j].key) ||
            !warm_path(s, j, path, sizeof path) || access(path, F_OK) != 0)
            continue;
        atf_result *res = NULL;
        if (atf_result_read(path, &res, err) == ATF_OK &&
            atf_result_check(res, s->prob, path, s->cfg->problem, err) == ATF_OK) {
            s->warm[run->structure] = res, s->warm_run[run->structure] = j;
        } else {
            atf_result_free(res);
        }
        return;
    }
}

/* Run i's result is the chain's next warm start (its file written first) or is dropped. */
static atf_error save_warm(sweep_state *s, int i, const atf_result *res, char *err)
{
    char path[1100];
    if (!kept(res) || last_of_chain(s, i))
        return ATF_OK;
    if (!warm_path(s, i, path, sizeof path)) {
        atf_errorf(err, "sweep: the warm start's file name in %s is too long", s->cfg->out);
        return ATF_E_USAGE;
    }
    return atf_result_write(path, res, err);
}

static void keep_warm(sweep_state *s, int i, atf_result *res)
{
    const sweep_run *run = &s->runs[i];
    if (!kept(res)) {
        atf_result_free(res);
    } else {
        atf_result_free(s->warm[run->structure]);
        s->warm[run->structure] = res;
        drop_warm_file(s, s->warm_run[run->structure]);
        s->warm_run[run->structure] = i;
    }
    if (last_of_chain(s, i)) /* the chain is done: its warm start is needed no more */
        drop_warm_file(s, s->warm_run[run->structure]);
}

static atf_error run_one(sweep_state *s, int i, char *err)
{
    const sweep_run *run = &s->runs[i];
    double gamma = NAN, secs = 0.0;
    atf_result *res = NULL;
    restore_warm(s, i);
    atf_error e = solve_run(s, run, &gamma, &res, &secs, err);
    if (e || res->info.status == ATF_STATUS_INTERRUPTED) { /* an interrupted run is not recorded */
        atf_result_free(res);
        return e;
    }
    atf_test_metrics tm;
    alignments al;
    e = measure(s->prob, res, run->structure, s->cfg->align_max, &tm, &al, err);
    if (!e)
        e = save_warm(s, i, res, err);
    if (!e) {
        atf_row row;
        fill_row(&row, s->cfg, s->prob, run, gamma, res, secs, s->warm[run->structure] != NULL,
                 &tm, &al);
        e = atf_rowstore_append(s->sh.out, &row, err);
        s->ran += !e;
    }
    if (e) {
        atf_result_free(res);
        return e;
    }
    keep_warm(s, i, res);
    return ATF_OK;
}

/* The runs of this process's chains not yet recorded, in grid order. */
static atf_error run_all(sweep_state *s, char *err)
{
    const atf_exp_io *io = &s->cfg->io;
    int total = 0, skipped = 0;
    for (int i = 0; i < s->nruns; i++)
        if (s->own[s->runs[i].chain]) {
            total++;
            skipped += recorded(s, s->runs[i].key);
        }
    atf_progress prog;
    atf_progress_start(&prog, io->progress, total, skipped);
    atf_error e = ATF_OK;
    for (int i = 0; i < s->nruns && !e && !atf_exp_stopped(io); i++) {
        const sweep_run *run = &s->runs[i];
        if (!s->own[run->chain] || recorded(s, run->key))
            continue;
        atf_progress_show(&prog, run->key);
        e = run_one(s, i, err);
        if (e && e != ATF_E_NOMEM && e != ATF_E_IO && !atf_exp_stopped(io)) {
            /* a run that fails on its own (e.g. a factorisation breaks down) is reported and
             * skipped, not recorded: a re-run tries it again */
            atf_progress_break(&prog);
            atf_exp_log(io, "sweep: %s: %s\n", run->key, err);
            e = ATF_OK;
        }
        atf_progress_step(&prog);
    }
    if (!e && !atf_exp_stopped(io))
        atf_progress_end(&prog);
    else
        atf_progress_break(&prog);
    return atf_exp_stopped(io) ? ATF_OK : e;
}

/* The problem file, centered when asked (both splits: f0 := 0). */
static atf_error load_problem(const atf_sweep_config *cfg, atf_problem **prob, char *err)
{
    atf_error e = atf_problem_read(cfg->problem, prob, err);
    if (!e)
        e = atf_loss_check(&cfg->loss, *prob, cfg->problem, err);
    if (e || !cfg->center)
        return e;
    if (!(*prob)->f0) {
        atf_errorf(err, "%s: centering needs /f0 in the problem file", cfg->problem);
        return ATF_E_INPUT;
    }
    atf_problem_center(*prob);
    atf_problem_center((*prob)->test);
    return ATF_OK;
}

static void report(const sweep_state *s, int added, const char *csv, const char *jsonl)
{
    const atf_exp_io *io = &s->cfg->io;
    int rows = atf_rowstore_count(s->sh.store);
    if (io->json && io->report) {
        atf_row sum;
        atf_row_clear(&sum);
        atf_row_str(&sum, "status", "done");
        atf_row_int(&sum, "rows", rows);
        atf_row_int(&sum, "new_rows", added);
        atf_row_str(&sum, "csv", csv);
        atf_row_str(&sum, "jsonl", jsonl);
        char *line = atf_row_json_line(&sum);
        if (line)
            fputs(line, io->report);
        free(line);
    } else {
        atf_exp_note(io, "sweep: %d rows in %s (%d new)\n", rows, csv, added);
    }
}

/* The baseline and this process's chains; then (with ranks, once every process is done or
 * stopped) the rows moved into the table, and from it, by rank 0 alone, the figure (also after
 * an interruption) and the report. A failure of this process returns at once: the caller ends
 * the job with its message. */
static atf_error sweep_table(sweep_state *s, const exp_grid *g, const char *csv,
                             const char *jsonl, atf_exp_outcome *outcome, char *err)
{
    sweep_chains(s);
    atf_error e = run_baseline(s, err);
    if (!e && s->status == ATF_STATUS_SOLVED && !s->baseline_stopped)
        e = run_all(s, err);
    if (e)
        return e;
    int end[2] = {atf_exp_stopped(&s->cfg->io),
                  s->status != ATF_STATUS_SOLVED ? (int)s->status : 0};
    e = exp_shared_end(&s->sh, g, end, 2, err);
    if (end[1])
        s->status = (atf_status)end[1];
    outcome->rows = s->sh.store ? atf_rowstore_count(s->sh.store) : 0;
    outcome->new_rows = exp_shared_added(&s->sh, s->ran);
    if (e)
        return e;
    if (s->sh.ranks && s->sh.ranks->rank != 0) { /* rank 0 reports the shared run */
        outcome->status = s->status != ATF_STATUS_SOLVED ? s->status
                          : end[0] ? ATF_STATUS_INTERRUPTED : ATF_STATUS_SOLVED;
        err[0] = '\0';
        return ATF_OK;
    }
    if (s->status != ATF_STATUS_SOLVED) {
        outcome->status = s->status;
        if (!err[0])
            atf_errorf(err, "%s: the NTK baseline is %s: so is every run", s->cfg->problem,
                       atf_status_name(s->status));
        return ATF_OK;
    }
    if (end[0]) {
        outcome->status = ATF_STATUS_INTERRUPTED;
        atf_errorf(err, "interrupted: %d rows recorded in %.300s; re-run the same command to "
                   "resume", outcome->rows, csv);
    }
    e = sweep_figure(s->sh.store, s->cfg, err);
    if (e)
        return e;
    if (outcome->status == ATF_STATUS_SOLVED)
        report(s, outcome->new_rows, csv, jsonl);
    return ATF_OK;
}

atf_error atf_sweep_run(const atf_sweep_config *cfg, atf_exp_outcome *outcome, char *err)
{
    static sweep_run runs[MAXRUNS];
    char csv[1100], jsonl[1100];
    sweep_state s;
    memset(&s, 0, sizeof s);
    s.cfg = cfg;
    s.runs = runs;
    s.status = ATF_STATUS_SOLVED;
    for (int k = 0; k < 3; k++)
        s.warm_run[k] = -1;
    memset(outcome, 0, sizeof *outcome);
    atf_error e = atf_sweep_check(cfg, err);
    if (!e)
        e = build_runs(cfg, runs, &s.nruns, err);
    if (!e)
        e = atf_exp_path(csv, sizeof csv, cfg->out, "sweep.csv", err);
    if (!e)
        e = atf_exp_path(jsonl, sizeof jsonl, cfg->out, "sweep.jsonl", err);
    if (!e)
        e = atf_mkdir_p(cfg->out, err);
    if (!e)
        e = load_problem(cfg, &s.prob, err);
    exp_grid g = {cfg->out, "sweep", (long)s.nruns + 1, sweep_key_index, sweep_check_table, &s};
    e = exp_shared_open(&s.sh, &g, cfg->io.ranks, e, err);
    if (!e)
        e = sweep_table(&s, &g, csv, jsonl, outcome, err);
    exp_shared_close(&s.sh); /* removes the lock files, whatever happened */
    for (int k = 0; k < 3; k++)
        atf_result_free(s.warm[k]);
    atf_problem_free(s.prob);
    return e;
}
