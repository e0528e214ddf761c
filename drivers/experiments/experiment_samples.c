/* experiment_samples.c — the samples experiment (and the demo): sample complexity of three
 * models that share one initial network θ0 (per seed):
 *   ntk       the NTK min-norm interpolant on θ0's tangent features (Theorem 1, fixed features)
 *   adaptive  problem (16) on the same features with a selectable penalty (adaptive features)
 *   mlp       the network itself trained from θ0 by SGD (what the theory tries to explain)
 * Test error and relative test MSE against n, over several seeds (mean ± std). Every run is a
 * row of OUT/samples.csv (resumable, rowstore.h); the summary and figure are rebuilt from all
 * recorded rows at the end. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf_penalty.h"
#include "internal/exp_internal.h"

/* The models compared: the NTK baseline, one problem (16) run per penalty variant (the scale
 * axis), and the trained network. With one variant its rows are keyed "adaptive" (the default);
 * with several, "adaptive:SPEC". */
enum { MAXMETHODS = ATF_SAMPLES_MAXPEN + 2 };
typedef enum { KIND_NTK, KIND_ADAPTIVE, KIND_MLP } method_kind;

typedef struct {
    method_kind kind;
    const char *spec;     /* penalty variant (adaptive only) */
    char name[160];       /* row key part and summary name */
    char label[192];      /* figure legend */
} method;

/* The configuration with the data-dependent defaults resolved and the penalty variants built. */
typedef struct {
    atf_samples_config cfg;
    char variants[ATF_SAMPLES_MAXPEN][128];
    int nvariants;
} samples_plan;

static int list_methods(const samples_plan *pl, method *m)
{
    int n = 0, many = pl->nvariants > 1; /* short labels when the legend is long */
    m[n] = (method){KIND_NTK, NULL, "ntk", ""};
    snprintf(m[n].label, sizeof m[n].label, "%s", many ? "NTK min-norm" :
             "NTK min-norm (fixed features)");
    n++;
    for (int v = 0; v < pl->nvariants; v++, n++) {
        m[n] = (method){KIND_ADAPTIVE, pl->variants[v], "", ""};
        if (!many) {
            snprintf(m[n].name, sizeof m[n].name, "adaptive");
            snprintf(m[n].label, sizeof m[n].label, "problem (16) (adaptive)");
        } else {
            snprintf(m[n].name, sizeof m[n].name, "adaptive:%.120s", pl->variants[v]);
            snprintf(m[n].label, sizeof m[n].label, "(16) %.120s", pl->variants[v]);
        }
    }
    if (pl->cfg.train_mlp) {
        m[n] = (method){KIND_MLP, NULL, "mlp", "trained MLP"};
        n++;
    }
    return n;
}

void atf_samples_defaults(atf_samples_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->data = atf_data_options_default();
    cfg->data.n_test = 1000;
    cfg->arch.L = 0; /* the default network for the data */
    cfg->arch.param = ATF_PARAM_STANDARD;
    cfg->init = -1;
    int ns[] = {125, 250, 500, 1000, 2000};
    cfg->nn = 5;
    memcpy(cfg->ns, ns, sizeof ns);
    cfg->nseeds = 3;
    for (int s = 0; s < 3; s++)
        cfg->seeds[s] = (uint64_t)s + 1;
    snprintf(cfg->penalty, sizeof cfg->penalty, "sq:scale=auto");
    cfg->auto_fraction = 0.3;
    cfg->structure = ATF_GLOBAL_LAYER;
    cfg->max_iter = 3000;
    cfg->tol = 1e-5;
    cfg->train_mlp = 1;
    cfg->train = atf_train_default();
    cfg->train.lr = 0; /* by the initialisation */
    snprintf(cfg->out, sizeof cfg->out, "out/samples");
}

void atf_demo_defaults(atf_samples_config *cfg)
{
    atf_samples_defaults(cfg);
    cfg->train.epochs = 100;
    snprintf(cfg->out, sizeof cfg->out, "out/demo");
    snprintf(cfg->title, sizeof cfg->title, "atf demo: synthetic multi-index task (d = 16, "
             "r = 2), NTK vs problem (16) vs MLP");
}

atf_error atf_samples_set_scales(atf_samples_config *cfg, const char *list, char *err)
{
    char items[ATF_SAMPLES_MAXPEN][ATF_EXP_NAMELEN];
    int n;
    atf_error e = atf_exp_split_names("scales", list, items, ATF_SAMPLES_MAXPEN, &n, err);
    for (int i = 0; !e && i < n; i++)
        memcpy(cfg->scales[i], items[i], sizeof items[i]);
    if (!e)
        cfg->nscales = n;
    return e;
}

/* The penalties to run: the penalty itself, or one per scale (the scale axis), each set
 * through the parsed penalty (atf_penalty_with_scale) with the scale's text kept as given: it
 * names the model in the rows ("adaptive:zsq:scale=1e-3"), so the keys of recorded tables stay. */
static atf_error build_variants(const atf_samples_config *cfg, samples_plan *pl, char *err)
{
    pl->nvariants = cfg->nscales > 0 ? cfg->nscales : 1;
    if (cfg->nscales <= 0)
        snprintf(pl->variants[0], sizeof pl->variants[0], "%s", cfg->penalty);
    for (int v = 0; v < cfg->nscales; v++) {
        const char *scale = cfg->scales[v];
        char *end;
        double g = strtod(scale, &end);
        if (strcmp(scale, "auto") && (!*scale || *end || !isfinite(g) || !(g > 0))) {
            atf_errorf(err, "scales: '%s' is not a positive number or auto", scale);
            return ATF_E_USAGE;
        }
        if (atf_penalty_with_scale(cfg->penalty, scale, pl->variants[v], sizeof pl->variants[v],
                                   err))
            return ATF_E_USAGE;
    }
    for (int v = 0; v < pl->nvariants; v++)
        if (atf_check_auto_spec(pl->variants[v], err))
            return ATF_E_USAGE;
    return ATF_OK;
}

static atf_error check_sizes(const atf_samples_config *cfg, char *err)
{
    if (cfg->nn < 1 || cfg->nn > ATF_SAMPLES_MAXN || cfg->nseeds < 1 ||
        cfg->nseeds > ATF_SAMPLES_MAXSEEDS || cfg->nscales > ATF_SAMPLES_MAXPEN) {
        atf_errorf(err, "samples: 1..%d sizes, 1..%d seeds and at most %d scales",
                   ATF_SAMPLES_MAXN, ATF_SAMPLES_MAXSEEDS, ATF_SAMPLES_MAXPEN);
        return ATF_E_USAGE;
    }
    for (int i = 0; i < cfg->nn; i++)
        if (cfg->ns[i] < 2) {
            atf_errorf(err, "samples: training sizes must be at least 2, got %d", cfg->ns[i]);
            return ATF_E_USAGE;
        }
    if (!(cfg->tol > 0) || !(cfg->auto_fraction > 0) || cfg->max_iter < 1) {
        atf_errorf(err, "samples: tolerance, auto fraction and iteration limit must be positive");
        return ATF_E_USAGE;
    }
    return ATF_OK;
}

/* The data-dependent defaults (the paper's depth-5 PyTorch networks on image data). */
static void resolve_defaults(atf_samples_config *cfg)
{
    int image = atf_exp_image_data(&cfg->data);
    if (cfg->arch.L == 0) {
        int hidden = image ? 4 : 2;
        cfg->arch.L = hidden + 1;
        cfg->arch.widths[0] = cfg->arch.widths[hidden + 1] = 0;
        for (int i = 1; i <= hidden; i++)
            cfg->arch.widths[i] = 128;
    }
    cfg->arch.init = cfg->init >= 0 ? (atf_init)cfg->init : image ? ATF_INIT_TORCH : ATF_INIT_HE;
    if (!(cfg->train.lr > 0)) /* paper B.1 with PyTorch's initialisation; He diverges at 0.1 */
        cfg->train.lr = cfg->arch.init == ATF_INIT_TORCH ? 0.1 : 0.01;
    if (!cfg->title[0])
        snprintf(cfg->title, sizeof cfg->title,
                 "Sample complexity on %.60s: NTK vs problem (16) [%.100s]%s", cfg->data.source,
                 cfg->penalty, cfg->train_mlp ? " vs trained MLP" : "");
}

static atf_error make_plan(const atf_samples_config *cfg, samples_plan *pl, char *err)
{
    pl->cfg = *cfg;
    atf_error e = check_sizes(cfg, err);
    if (!e)
        e = build_variants(cfg, pl, err);
    if (!e)
        resolve_defaults(&pl->cfg);
    return e;
}

atf_error atf_samples_check(const atf_samples_config *cfg, char *err)
{
    static samples_plan pl; /* large; the check runs once per process */
    return make_plan(cfg, &pl, err);
}

/* ---- one (n, seed) ---- */

typedef struct {
    const samples_plan *plan;
    const atf_exp_io *io;
    atf_rowstore *store;
    atf_progress *prog;
    int new_rows;
    atf_status status; /* solved, or why the grid stopped: an infeasible baseline */
} samples_state;

/* The models of one (n, seed): the task, θ0, its tangent problem and the NTK baseline. */
typedef struct {
    int n;
    uint64_t seed;
    atf_task task;
    atf_mlp *m0;
    atf_problem *prob;
    atf_result *base;
    double base_seconds;
} point;

static void row_key(char *key, size_t len, int n, uint64_t seed, const char *method)
{
    snprintf(key, len, "n=%d|seed=%llu|%s", n, (unsigned long long)seed, method);
}

static int recorded(const samples_state *s, int n, uint64_t seed, const char *method)
{
    char key[256];
    row_key(key, sizeof key, n, seed, method);
    return atf_rowstore_has(s->store, key);
}

static void base_row(atf_row *row, int n, uint64_t seed, const char *method, const char *penalty)
{
    char key[256];
    row_key(key, sizeof key, n, seed, method);
    atf_row_clear(row);
    atf_row_str(row, "key", key);
    atf_row_int(row, "n", n);
    atf_row_int(row, "seed", (long)seed);
    atf_row_str(row, "method", method);
    atf_row_str(row, "penalty", penalty);
}

/* With a penalized loss every row says which loss its model fits (interpolation tables keep
 * their columns): the loss spec of a result, "-" for the trained network. */
static void loss_field(const samples_state *s, atf_row *row, const char *loss)
{
    if (s->plan->cfg.loss.kind != ATF_LOSS_INTERPOLATE)
        atf_row_str(row, "loss", loss[0] ? loss : "interpolate");
}

static void result_fields(atf_row *row, const atf_result *res, double secs,
                          const atf_test_metrics *tm)
{
    atf_row_str(row, "status", atf_status_name(res->status));
    atf_row_num(row, "test_error", tm->error);
    atf_row_num(row, "test_rel_mse", tm->rel_mse);
    atf_row_num(row, "train_residual", res->constraint_residual);
    atf_row_int(row, "iterations", res->iterations);
    atf_row_num(row, "objective", res->objective);
    atf_row_num(row, "stationarity", res->stationarity);
    atf_row_num(row, "seconds", secs);
}

static atf_error append(samples_state *s, const atf_row *row, char *err)
{
    atf_error e = atf_rowstore_append(s->store, row, err);
    s->new_rows += !e;
    atf_progress_step(s->prog);
    return e;
}

static atf_error record_solution(samples_state *s, const point *pt, const atf_result *res,
                                 const char *method, const char *penalty, double secs, char *err)
{
    atf_test_metrics tm;
    atf_error e = atf_result_test_metrics(pt->prob, res, &tm, err);
    if (e)
        return e;
    atf_row row;
    base_row(&row, pt->n, pt->seed, method, penalty);
    loss_field(s, &row, res->loss);
    result_fields(&row, res, secs, &tm);
    return append(s, &row, err);
}

static void show(samples_state *s, const point *pt, const char *what, const char *detail)
{
    char line[200];
    snprintf(line, sizeof line, "n=%d seed=%llu: %s%.60s", pt->n, (unsigned long long)pt->seed,
             what, detail);
    atf_progress_show(s->prog, line);
}

static atf_error run_adaptive(samples_state *s, point *pt, const method *m, char *err)
{
    const atf_samples_config *cfg = &s->plan->cfg;
    char spec[256];
    atf_error e = atf_resolve_auto_scale(m->spec, atf_result_max_singular(pt->base),
                                         cfg->auto_fraction, spec, sizeof spec, NULL, err);
    if (!e)
        e = atf_problem_set_penalty(pt->prob, spec, err);
    if (e)
        return e;
    show(s, pt, "problem (16) ", m->spec);
    atf_settings set = atf_settings_default();
    set.structure = cfg->structure;
    set.loss = cfg->loss;
    if (cfg->loss.kind != ATF_LOSS_INTERPOLATE)
        set.method = ATF_METHOD_FISTA;
    set.max_iter = cfg->max_iter;
    set.eps_rel = cfg->tol;
    set.interrupt = s->io->interrupt;
    atf_result *res = NULL;
    double t0 = atf_now();
    e = atf_solve(pt->prob, &set, &res, err);
    double secs = atf_now() - t0;
    if (res && res->status == ATF_STATUS_INTERRUPTED)
        e = ATF_OK; /* not recorded: a re-run solves it again */
    else if (res) /* any status is a result worth a row (an iteration limit included) */
        e = record_solution(s, pt, res, m->name, spec, secs, err);
    atf_result_free(res);
    return e;
}

/* Test metrics of a network on the task's test split (NaN without one). */
static atf_error mlp_test_metrics(const atf_mlp *m, const atf_task *task, atf_test_metrics *tm,
                                  char *err)
{
    *tm = (atf_test_metrics){NAN, NAN};
    if (task->test.N <= 0)
        return ATF_OK;
    double *F = malloc(sizeof(double) * (size_t)task->test.N * (size_t)task->test.C);
    if (!F) {
        atf_errorf(err, "out of memory");
        return ATF_E_NOMEM;
    }
    atf_error e = atf_mlp_forward(m, task->test.N, task->test.X, F, err);
    if (!e)
        *tm = atf_prediction_metrics(task->test.N, task->test.C, F, task->test.Y,
                                     task->test.labels);
    free(F);
    return e;
}

static atf_error run_mlp(samples_state *s, const point *pt, char *err)
{
    atf_mlp *m = atf_mlp_clone(pt->m0);
    if (!m) {
        atf_errorf(err, "out of memory");
        return ATF_E_NOMEM;
    }
    show(s, pt, "training", "");
    atf_train_settings ts = s->plan->cfg.train;
    ts.seed = pt->seed;
    ts.interrupt = s->io->interrupt;
    double loss = NAN, t0 = atf_now();
    atf_error e = atf_mlp_train(m, &pt->task.train, &ts, &loss, err);
    double secs = atf_now() - t0;
    atf_test_metrics tm;
    if (atf_exp_stopped(s->io)) { /* stopped early: a partly trained network is no row */
        atf_mlp_free(m);
        return ATF_OK;
    }
    if (!e)
        e = mlp_test_metrics(m, &pt->task, &tm, err);
    if (!e) {
        atf_row row;
        base_row(&row, pt->n, pt->seed, "mlp", "-");
        loss_field(s, &row, "-");
        atf_row_str(&row, "status", isfinite(loss) ? "trained" : "diverged");
        atf_row_num(&row, "test_error", tm.error);
        atf_row_num(&row, "test_rel_mse", tm.rel_mse);
        atf_row_num(&row, "train_residual", loss);
        atf_row_int(&row, "iterations", ts.epochs);
        atf_row_num(&row, "objective", NAN);
        atf_row_num(&row, "stationarity", NAN);
        atf_row_num(&row, "seconds", secs);
        e = append(s, &row, err);
    }
    atf_mlp_free(m);
    return e;
}

/* Task, θ0, tangent problem and NTK baseline of one (n, seed). The baseline is needed by every
 * method's bookkeeping (scale=auto), so it always runs. */
static atf_error build_point(samples_state *s, point *pt, char *err)
{
    const atf_samples_config *cfg = &s->plan->cfg;
    atf_data_options dopt = cfg->data;
    dopt.n_train = pt->n;
    dopt.seed = pt->seed;
    atf_arch arch = cfg->arch;
    show(s, pt, "features", "");
    atf_error e = atf_task_load(&dopt, &arch, &pt->task, err);
    if (!e)
        e = atf_arch_fit_task(&arch, &pt->task, err);
    if (!e)
        e = atf_mlp_create(&arch, pt->seed, &pt->m0, err);
    if (!e)
        e = atf_tangent_problem(pt->m0, &pt->task, "sq", &pt->prob, err);
    if (!e && cfg->center) {
        atf_problem_center(pt->prob);
        atf_problem_center(pt->prob->test);
    }
    double t0 = atf_now();
    if (!e)
        e = atf_baseline(pt->prob, &pt->base, err);
    pt->base_seconds = atf_now() - t0;
    return e;
}

static void free_point(point *pt)
{
    atf_result_free(pt->base);
    atf_problem_free(pt->prob);
    atf_mlp_free(pt->m0);
    atf_task_free(&pt->task);
}

/* The models of one (n, seed) not yet recorded, in order: NTK, every variant, the network. */
static atf_error run_models(samples_state *s, point *pt, const method *ms, int nm, char *err)
{
    atf_error e = ATF_OK;
    if (!recorded(s, pt->n, pt->seed, "ntk"))
        e = record_solution(s, pt, pt->base, "ntk", "-", pt->base_seconds, err);
    for (int k = 0; k < nm && !e && !atf_exp_stopped(s->io); k++)
        if (ms[k].kind == KIND_ADAPTIVE && !recorded(s, pt->n, pt->seed, ms[k].name))
            e = run_adaptive(s, pt, &ms[k], err);
    if (!e && !atf_exp_stopped(s->io) && s->plan->cfg.train_mlp &&
        !recorded(s, pt->n, pt->seed, "mlp"))
        e = run_mlp(s, pt, err);
    return e;
}

static atf_error run_point(samples_state *s, int n, uint64_t seed, char *err)
{
    method ms[MAXMETHODS];
    int nm = list_methods(s->plan, ms), todo = 0;
    for (int k = 0; k < nm; k++)
        todo += !recorded(s, n, seed, ms[k].name);
    if (!todo)
        return ATF_OK;
    point pt;
    memset(&pt, 0, sizeof pt);
    pt.n = n;
    pt.seed = seed;
    atf_error e = build_point(s, &pt, err);
    if (!e && pt.base->status != ATF_STATUS_SOLVED) /* no interpolant: no model has one */
        s->status = pt.base->status;
    else if (!e)
        e = run_models(s, &pt, ms, nm, err);
    free_point(&pt);
    return atf_exp_stopped(s->io) ? ATF_OK : e; /* what failed because of the stop is no error */
}

/* ---- summary: mean ± std over seeds for every (n, method) ---- */

typedef struct {
    int nm;
    method m[MAXMETHODS];
    double err_mean[ATF_SAMPLES_MAXN][MAXMETHODS], err_std[ATF_SAMPLES_MAXN][MAXMETHODS];
    double mse_mean[ATF_SAMPLES_MAXN][MAXMETHODS], mse_std[ATF_SAMPLES_MAXN][MAXMETHODS];
    double secs[ATF_SAMPLES_MAXN][MAXMETHODS];
    double gamma[ATF_SAMPLES_MAXN][MAXMETHODS]; /* mean resolved γ of a scale=auto model */
    int count[ATF_SAMPLES_MAXN][MAXMETHODS];
    double n[ATF_SAMPLES_MAXN];
} summary;

/* The γ a row's problem (16) was solved with (its recorded, resolved penalty); NaN if none. */
static double row_gamma(const atf_row *row)
{
    atf_penalty pen;
    const char *spec = atf_row_get(row, "penalty");
    return spec && !atf_penalty_parse(spec, &pen, NULL) ? pen.w1.scale : NAN;
}

/* Test error, relative MSE, seconds and γ of the recorded rows of one (n, method), over seeds. */
static int collect(const atf_samples_config *cfg, const atf_rowstore *st, int n,
                   const char *method, double *ev, double *mv, double *tv, double *gv)
{
    int c = 0;
    for (int s = 0; s < cfg->nseeds; s++) {
        char key[256];
        row_key(key, sizeof key, n, cfg->seeds[s], method);
        for (int r = 0; r < atf_rowstore_count(st); r++) {
            const atf_row *row = atf_rowstore_row(st, r);
            if (strcmp(atf_row_get(row, "key"), key))
                continue;
            ev[c] = atf_row_getnum(row, "test_error");
            mv[c] = atf_row_getnum(row, "test_rel_mse");
            tv[c] = atf_row_getnum(row, "seconds");
            gv[c] = row_gamma(row);
            c++;
        }
    }
    return c;
}

static void summarize(const samples_plan *pl, const atf_rowstore *st, summary *sm)
{
    const atf_samples_config *cfg = &pl->cfg;
    memset(sm, 0, sizeof *sm);
    sm->nm = list_methods(pl, sm->m);
    for (int i = 0; i < cfg->nn; i++) {
        sm->n[i] = cfg->ns[i];
        for (int k = 0; k < sm->nm; k++) {
            double ev[ATF_SAMPLES_MAXSEEDS], mv[ATF_SAMPLES_MAXSEEDS], tv[ATF_SAMPLES_MAXSEEDS],
                gv[ATF_SAMPLES_MAXSEEDS];
            int c = collect(cfg, st, cfg->ns[i], sm->m[k].name, ev, mv, tv, gv);
            double sd;
            sm->gamma[i][k] = NAN;
            if (sm->m[k].kind == KIND_ADAPTIVE && strstr(sm->m[k].spec, "scale=auto"))
                atf_mean_std(gv, c, &sm->gamma[i][k], &sd);
            sm->count[i][k] = c;
            atf_mean_std(ev, c, &sm->err_mean[i][k], &sm->err_std[i][k]);
            atf_mean_std(mv, c, &sm->mse_mean[i][k], &sm->mse_std[i][k]);
            atf_mean_std(tv, c, &sm->secs[i][k], &sd);
        }
    }
}

static atf_error write_summary(const atf_samples_config *cfg, const summary *sm, char *err)
{
    /* a line: the method (≤ 159 characters, ≤ 320 quoted), 7 numbers, separators */
    char *text = malloc(128 + (size_t)cfg->nn * sm->nm * 520), path[1100];
    if (!text) {
        atf_errorf(err, "out of memory");
        return ATF_E_NOMEM;
    }
    int len = sprintf(text, "n,method,runs,test_error_mean,test_error_std,test_rel_mse_mean,"
                            "test_rel_mse_std,seconds_mean\n");
    for (int i = 0; i < cfg->nn; i++)
        for (int k = 0; k < sm->nm; k++) {
            char method[2 * sizeof sm->m[k].name + 3];
            atf_csv_field(sm->m[k].name, method, sizeof method);
            len += sprintf(text + len, "%d,%s,%d,%.6g,%.6g,%.6g,%.6g,%.4g\n", cfg->ns[i], method,
                           sm->count[i][k], sm->err_mean[i][k], sm->err_std[i][k],
                           sm->mse_mean[i][k], sm->mse_std[i][k], sm->secs[i][k]);
        }
    atf_error e = atf_exp_path(path, sizeof path, cfg->out, "samples_summary.csv", err);
    if (!e)
        e = atf_write_text_atomic(path, text, strlen(text), err);
    free(text);
    return e;
}

/* Markdown table: one error and one relative-MSE column per model. */
static void print_table(const samples_plan *pl, const summary *sm, FILE *f)
{
    static const char *short_name[3] = {"NTK", "problem (16)", "MLP"};
    fprintf(f, "| n |");
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < sm->nm; k++) {
            const method *m = &sm->m[k];
            if (m->kind == KIND_ADAPTIVE && pl->nvariants > 1)
                fprintf(f, " (16) %s %s |", m->spec, pass ? "rel. MSE" : "error");
            else
                fprintf(f, " %s %s |", short_name[m->kind], pass ? "rel. MSE" : "error");
        }
    fprintf(f, " seeds |\n|---|");
    for (int k = 0; k < 2 * sm->nm; k++)
        fprintf(f, "---|");
    fprintf(f, "---|\n");
    for (int i = 0; i < pl->cfg.nn; i++) {
        fprintf(f, "| %d |", pl->cfg.ns[i]);
        for (int k = 0; k < sm->nm; k++)
            fprintf(f, " %.4f ± %.4f |", sm->err_mean[i][k], sm->err_std[i][k]);
        for (int k = 0; k < sm->nm; k++)
            fprintf(f, " %.4f ± %.4f |", sm->mse_mean[i][k], sm->mse_std[i][k]);
        fprintf(f, " %d |\n", sm->count[i][0]);
    }
}

/* The JSON summary line: files, and the errors at the largest n. */
static void print_json(const atf_samples_config *cfg, const summary *sm, int rows, FILE *f)
{
    atf_row sum;
    char path[1200];
    int last = cfg->nn - 1;
    atf_row_clear(&sum);
    atf_row_str(&sum, "status", "done");
    atf_row_int(&sum, "rows", rows);
    snprintf(path, sizeof path, "%s/samples.csv", cfg->out);
    atf_row_str(&sum, "csv", path);
    snprintf(path, sizeof path, "%s/samples_summary.csv", cfg->out);
    atf_row_str(&sum, "summary", path);
    snprintf(path, sizeof path, "%s/samples.svg", cfg->out);
    atf_row_str(&sum, "figure", path);
    atf_row_int(&sum, "largest_n", cfg->ns[last]);
    for (int k = 0; k < sm->nm; k++) {
        char name[ATF_ROW_NAMELEN];
        snprintf(name, sizeof name, "%.38s_error", sm->m[k].name);
        atf_row_num(&sum, name, sm->err_mean[last][k]);
        snprintf(name, sizeof name, "%.38s_rel_mse", sm->m[k].name);
        atf_row_num(&sum, name, sm->mse_mean[last][k]);
    }
    char *line = atf_row_json_line(&sum);
    if (line)
        fputs(line, f);
    free(line);
}

/* ---- figure: test error and relative MSE against n, one series per model ---- */

typedef struct {
    double em[MAXMETHODS][ATF_SAMPLES_MAXN], es[MAXMETHODS][ATF_SAMPLES_MAXN];
    double mm[MAXMETHODS][ATF_SAMPLES_MAXN], ms[MAXMETHODS][ATF_SAMPLES_MAXN];
} series_data;

static void fill_series_data(const summary *sm, int nn, series_data *d)
{
    for (int k = 0; k < sm->nm; k++)
        for (int i = 0; i < nn; i++) {
            d->em[k][i] = sm->err_mean[i][k];
            d->es[k][i] = sm->err_std[i][k];
            d->mm[k][i] = sm->mse_mean[i][k];
            d->ms[k][i] = sm->mse_std[i][k];
        }
}

/* The points of scale=auto models say which γ they resolved to (mean over seeds): notes on
 * the test-error panel. */
static void gamma_notes(const summary *sm, int nn, const series_data *d, atf_plot_panel *pl)
{
    static char text[ATF_PLOT_MAXNOTES][32];
    for (int k = 0; k < sm->nm; k++)
        for (int i = 0; i < nn && pl->nnotes < ATF_PLOT_MAXNOTES; i++)
            if (isfinite(sm->gamma[i][k])) {
                snprintf(text[pl->nnotes], sizeof text[0], "γ=%.2g", sm->gamma[i][k]);
                pl->notes[pl->nnotes] = (atf_plot_note){sm->n[i], d->em[k][i], text[pl->nnotes]};
                pl->nnotes++;
            }
}

static atf_error samples_figure(const atf_samples_config *cfg, int stacked, const summary *sm,
                                char *err)
{
    static series_data d;
    fill_series_data(sm, cfg->nn, &d);
    atf_plot_panel panels[2];
    memset(panels, 0, sizeof panels);
    int labelled = strncmp(cfg->data.source, "synthetic", 9) != 0;
    const char *ylab[2] = {"test error", "relative test MSE"};
    const char *titles[2] = {labelled ? "test classification error (mean ± std over seeds)"
                                      : "sign error of the regression (mean ± std)",
                             "test MSE / Var(y) (mean ± std over seeds)"};
    for (int p = 0; p < 2; p++) {
        atf_plot_panel *pl = &panels[p];
        *pl = (atf_plot_panel){.kind = ATF_PANEL_LINES, .title = titles[p],
                               .xlabel = "training examples n", .ylabel = ylab[p], .logx = 1,
                               .logy = 1, .legend = ATF_LEGEND_AUTO};
        for (int k = 0; k < sm->nm && k < ATF_PLOT_MAXSERIES; k++)
            pl->series[pl->nseries++] = (atf_plot_series){
                sm->m[k].label, sm->n, p ? d.mm[k] : d.em[k], p ? d.ms[k] : d.es[k], cfg->nn,
                k % 8, k / 8, 1 + k % 5, 0};
    }
    gamma_notes(sm, cfg->nn, &d, &panels[0]);
    /* many models (the scale axis): panels stacked, full width, so the legend fits */
    atf_plot_figure fig = {cfg->title, stacked ? 1 : 2, stacked ? 2 : 1, stacked ? 1300 : 1500,
                           stacked ? 1250 : 620, 2, panels, 0};
    char base[1100];
    atf_error e = atf_exp_path(base, sizeof base, cfg->out, "samples", err);
    return e ? e : atf_plot_save(&fig, base, err);
}

/* ---- the run ---- */

static int count_recorded(const samples_state *s)
{
    const atf_samples_config *cfg = &s->plan->cfg;
    method ms[MAXMETHODS];
    int nm = list_methods(s->plan, ms), done = 0;
    for (int i = 0; i < cfg->nn; i++)
        for (int j = 0; j < cfg->nseeds; j++)
            for (int k = 0; k < nm; k++)
                done += recorded(s, cfg->ns[i], cfg->seeds[j], ms[k].name);
    return done;
}

static atf_error run_grid(samples_state *s, char *err)
{
    const atf_samples_config *cfg = &s->plan->cfg;
    method ms[MAXMETHODS];
    int total = cfg->nn * cfg->nseeds * list_methods(s->plan, ms);
    atf_progress_start(s->prog, s->io->progress, total, count_recorded(s));
    atf_error e = ATF_OK;
    for (int i = 0; !e && i < cfg->nn; i++)
        for (int j = 0; !e && j < cfg->nseeds && !atf_exp_stopped(s->io) &&
                        s->status == ATF_STATUS_SOLVED; j++)
            e = run_point(s, cfg->ns[i], cfg->seeds[j], err);
    if (e || atf_exp_stopped(s->io) || s->status != ATF_STATUS_SOLVED)
        atf_progress_break(s->prog);
    else
        atf_progress_end(s->prog);
    return e;
}

/* Summary table, figure and report from every recorded row. */
static atf_error finish(const samples_state *s, char *err)
{
    static summary sm;
    const atf_samples_config *cfg = &s->plan->cfg;
    summarize(s->plan, s->store, &sm);
    atf_error e = write_summary(cfg, &sm, err);
    if (!e)
        e = samples_figure(cfg, s->plan->nvariants > 1, &sm, err);
    if (e)
        return e;
    if (s->io->report && s->io->json)
        print_json(cfg, &sm, atf_rowstore_count(s->store), s->io->report);
    else if (s->io->report)
        print_table(s->plan, &sm, s->io->report);
    atf_exp_note(s->io, "rows in %s/samples.csv, summary in %s/samples_summary.csv, figure "
                "%s/samples.svg\n", cfg->out, cfg->out, cfg->out);
    return ATF_OK;
}

atf_error atf_samples_run(const atf_samples_config *config, atf_exp_outcome *outcome, char *err)
{
    static samples_plan plan; /* large (the configuration and its variants) */
    char csv[1100], jsonl[1100];
    memset(outcome, 0, sizeof *outcome);
    atf_error e = make_plan(config, &plan, err);
    if (!e)
        e = atf_exp_path(csv, sizeof csv, config->out, "samples.csv", err);
    if (!e)
        e = atf_exp_path(jsonl, sizeof jsonl, config->out, "samples.jsonl", err);
    if (!e)
        e = atf_mkdir_p(config->out, err);
    atf_progress prog;
    samples_state s = {&plan, &config->io, NULL, &prog, 0, ATF_STATUS_SOLVED};
    if (!e)
        e = atf_rowstore_open(csv, jsonl, "key", &s.store, err);
    if (!e)
        e = atf_exp_check_loss(s.store, &config->loss, csv, err);
    if (!e)
        e = run_grid(&s, err);
    if (!e && s.status != ATF_STATUS_SOLVED) {
        outcome->status = s.status;
        if (!err[0])
            atf_errorf(err, "the NTK baseline is %s: no model interpolates",
                       atf_status_name(s.status));
    } else if (!e && atf_exp_stopped(s.io)) {
        outcome->status = ATF_STATUS_INTERRUPTED;
        atf_errorf(err, "interrupted: %d rows recorded in %.300s; re-run the same command to "
                   "resume", atf_rowstore_count(s.store), csv);
    } else if (!e) {
        e = finish(&s, err);
    }
    outcome->rows = s.store ? atf_rowstore_count(s.store) : 0;
    outcome->new_rows = s.new_rows;
    atf_rowstore_close(s.store);
    return e;
}
