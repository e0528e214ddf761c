/* experiment_samples.c — `atf experiment samples`: sample complexity of three models that share
 * one initial network θ0 (per seed):
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

#include "atf_cli.h"
#include "experiment.h"
#include "plot.h"
#include "rowstore.h"

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

static int list_methods(const atf_samples_config *cfg, method *m)
{
    int n = 0, many = cfg->nvariants > 1; /* short labels when the legend is long */
    m[n] = (method){KIND_NTK, NULL, "ntk", ""};
    snprintf(m[n].label, sizeof m[n].label, "%s", many ? "NTK min-norm" :
             "NTK min-norm (fixed features)");
    n++;
    for (int v = 0; v < cfg->nvariants; v++, n++) {
        m[n] = (method){KIND_ADAPTIVE, cfg->variants[v], "", ""};
        if (cfg->nvariants == 1) {
            snprintf(m[n].name, sizeof m[n].name, "adaptive");
            snprintf(m[n].label, sizeof m[n].label, "problem (16) (adaptive)");
        } else {
            snprintf(m[n].name, sizeof m[n].name, "adaptive:%.120s", cfg->variants[v]);
            snprintf(m[n].label, sizeof m[n].label, "(16) %.120s", cfg->variants[v]);
        }
    }
    if (cfg->train_mlp) {
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
    cfg->arch.L = 3;
    cfg->arch.widths[1] = cfg->arch.widths[2] = 128;
    cfg->arch.param = ATF_PARAM_STANDARD;
    int ns[] = {125, 250, 500, 1000, 2000};
    cfg->nn = 5;
    memcpy(cfg->ns, ns, sizeof ns);
    cfg->nseeds = 3;
    for (int s = 0; s < 3; s++)
        cfg->seeds[s] = (uint64_t)s + 1;
    snprintf(cfg->penalty, sizeof cfg->penalty, "sq:scale=auto");
    cfg->nvariants = 1;
    snprintf(cfg->variants[0], sizeof cfg->variants[0], "%s", cfg->penalty);
    cfg->auto_fraction = 0.3;
    cfg->structure = ATF_GLOBAL_LAYER;
    cfg->max_iter = 3000;
    cfg->tol = 1e-5;
    cfg->train_mlp = 1;
    cfg->center = 0;
    cfg->train = atf_train_default();
    cfg->train.lr = 0.01; /* the paper's 0.1 (MNIST) makes SGD diverge on the synthetic task */
    snprintf(cfg->out, sizeof cfg->out, "out/samples");
    cfg->title = "Test error against n";
}

/* ---- one (n, seed) ---- */

typedef struct {
    const atf_samples_config *cfg;
    atf_rowstore *store;
    atf_progress *prog;
    volatile sig_atomic_t *stop;
} samples_state;

static void row_key(char *key, size_t len, int n, uint64_t seed, const char *method)
{
    snprintf(key, len, "n=%d|seed=%llu|%s", n, (unsigned long long)seed, method);
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

static atf_error record_solution(samples_state *s, const atf_problem *prob, const atf_result *res,
                                 int n, uint64_t seed, const char *method, const char *penalty,
                                 double secs, char *err)
{
    atf_test_metrics tm;
    atf_error e = atf_result_test_metrics(prob, res, &tm, err);
    if (e)
        return e;
    atf_row row;
    base_row(&row, n, seed, method, penalty);
    result_fields(&row, res, secs, &tm);
    return atf_rowstore_append(s->store, &row, err);
}

static atf_error run_adaptive(samples_state *s, atf_problem *prob, double dmax, int n,
                              uint64_t seed, const method *m, char *err)
{
    const atf_samples_config *cfg = s->cfg;
    char spec[256];
    atf_error e = atf_resolve_auto_scale(m->spec, dmax, cfg->auto_fraction, spec, sizeof spec,
                                         NULL, err);
    if (!e)
        e = atf_problem_set_penalty(prob, spec, err);
    if (e)
        return e;
    atf_settings set = atf_settings_default();
    set.structure = cfg->structure;
    set.max_iter = cfg->max_iter;
    set.eps_rel = cfg->tol;
    set.interrupt = s->stop;
    atf_result *res = NULL;
    double t0 = atf_cli_now();
    e = atf_solve(prob, &set, &res, err);
    double secs = atf_cli_now() - t0;
    if (res && res->status == ATF_STATUS_INTERRUPTED)
        e = ATF_E_INTERRUPTED;
    else if (res)
        e = record_solution(s, prob, res, n, seed, m->name, spec, secs, err);
    atf_result_free(res);
    return e;
}

static atf_error run_mlp(samples_state *s, const atf_mlp *m0, const atf_task *task, int n,
                         uint64_t seed, char *err)
{
    atf_mlp *m = atf_mlp_clone(m0);
    if (!m) {
        atf_errorf(err, "out of memory");
        return ATF_E_NOMEM;
    }
    atf_train_settings ts = s->cfg->train;
    ts.seed = seed;
    ts.interrupt = s->stop;
    double loss = NAN, t0 = atf_cli_now();
    atf_error e = atf_mlp_train(m, &task->train, &ts, &loss, err);
    double secs = atf_cli_now() - t0;
    atf_test_metrics tm = {NAN, NAN};
    if (!e && task->test.N > 0) {
        double *F = malloc(sizeof(double) * (size_t)task->test.N * (size_t)task->test.C);
        if (!F) {
            atf_errorf(err, "out of memory");
            e = ATF_E_NOMEM;
        } else {
            e = atf_mlp_forward(m, task->test.N, task->test.X, F, err);
            if (!e)
                tm = atf_metrics_of(task->test.N, task->test.C, F, task->test.Y,
                                    task->test.labels);
            free(F);
        }
    }
    if (!e) {
        atf_row row;
        base_row(&row, n, seed, "mlp", "-");
        atf_row_str(&row, "status", isfinite(loss) ? "trained" : "diverged");
        atf_row_num(&row, "test_error", tm.error);
        atf_row_num(&row, "test_rel_mse", tm.rel_mse);
        atf_row_num(&row, "train_residual", loss);
        atf_row_int(&row, "iterations", ts.epochs);
        atf_row_num(&row, "objective", NAN);
        atf_row_num(&row, "stationarity", NAN);
        atf_row_num(&row, "seconds", secs);
        e = atf_rowstore_append(s->store, &row, err);
    }
    atf_mlp_free(m);
    return e;
}

static atf_error run_point(samples_state *s, int n, uint64_t seed, char *err)
{
    const atf_samples_config *cfg = s->cfg;
    method ms[MAXMETHODS];
    int nm = list_methods(cfg, ms), todo = 0;
    char key[256];
    for (int k = 0; k < nm; k++) {
        row_key(key, sizeof key, n, seed, ms[k].name);
        todo += !atf_rowstore_has(s->store, key);
    }
    if (!todo)
        return ATF_OK;
    char what[160];
    snprintf(what, sizeof what, "n=%d seed=%llu: features", n, (unsigned long long)seed);
    atf_progress_show(s->prog, what);

    atf_data_options dopt = cfg->data;
    dopt.n_train = n;
    dopt.seed = seed;
    atf_task task;
    memset(&task, 0, sizeof task);
    atf_arch arch = cfg->arch;
    atf_mlp *m0 = NULL;
    atf_problem *prob = NULL;
    atf_result *base = NULL;
    atf_error e = atf_task_load(&dopt, &arch, &task, err);
    if (!e)
        e = atf_arch_fit_task(&arch, &task, err);
    if (!e)
        e = atf_mlp_create(&arch, seed, &m0, err);
    if (!e)
        e = atf_tangent_problem(m0, &task, "sq", &prob, err);
    if (!e && cfg->center) {
        atf_problem_center(prob);
        atf_problem_center(prob->test);
    }
    /* The baseline is needed by every method's bookkeeping (scale=auto), so it always runs. */
    double t0 = atf_cli_now();
    if (!e)
        e = atf_baseline(prob, &base, err);
    double secs = atf_cli_now() - t0;
    row_key(key, sizeof key, n, seed, "ntk");
    if (!e && !atf_rowstore_has(s->store, key)) {
        e = record_solution(s, prob, base, n, seed, "ntk", "-", secs, err);
        atf_progress_step(s->prog);
    }
    for (int k = 0; k < nm && !e; k++) {
        row_key(key, sizeof key, n, seed, ms[k].name);
        if (ms[k].kind != KIND_ADAPTIVE || atf_rowstore_has(s->store, key))
            continue;
        snprintf(what, sizeof what, "n=%d seed=%llu: problem (16) %.60s", n,
                 (unsigned long long)seed, ms[k].spec);
        atf_progress_show(s->prog, what);
        e = run_adaptive(s, prob, atf_result_max_singular(base), n, seed, &ms[k], err);
        atf_progress_step(s->prog);
    }
    row_key(key, sizeof key, n, seed, "mlp");
    if (!e && cfg->train_mlp && !atf_rowstore_has(s->store, key)) {
        snprintf(what, sizeof what, "n=%d seed=%llu: training", n, (unsigned long long)seed);
        atf_progress_show(s->prog, what);
        e = run_mlp(s, m0, &task, n, seed, err);
        atf_progress_step(s->prog);
    }
    atf_result_free(base);
    atf_problem_free(prob);
    atf_mlp_free(m0);
    atf_task_free(&task);
    return e;
}

/* ---- summary: mean ± std over seeds for every (n, method) ---- */

typedef struct {
    int nm;
    method m[MAXMETHODS];
    double err_mean[ATF_SAMPLES_MAXN][MAXMETHODS], err_std[ATF_SAMPLES_MAXN][MAXMETHODS];
    double mse_mean[ATF_SAMPLES_MAXN][MAXMETHODS], mse_std[ATF_SAMPLES_MAXN][MAXMETHODS];
    double secs[ATF_SAMPLES_MAXN][MAXMETHODS];
    int count[ATF_SAMPLES_MAXN][MAXMETHODS];
    double n[ATF_SAMPLES_MAXN];
} summary;

static void summarize(const atf_samples_config *cfg, const atf_rowstore *st, summary *sm)
{
    memset(sm, 0, sizeof *sm);
    sm->nm = list_methods(cfg, sm->m);
    for (int i = 0; i < cfg->nn; i++) {
        sm->n[i] = cfg->ns[i];
        for (int k = 0; k < sm->nm; k++) {
            double ev[ATF_SAMPLES_MAXSEEDS], mv[ATF_SAMPLES_MAXSEEDS], tv[ATF_SAMPLES_MAXSEEDS];
            int c = 0;
            for (int s = 0; s < cfg->nseeds; s++) {
                char key[256];
                row_key(key, sizeof key, cfg->ns[i], cfg->seeds[s], sm->m[k].name);
                for (int r = 0; r < atf_rowstore_count(st); r++) {
                    const atf_row *row = atf_rowstore_row(st, r);
                    if (!strcmp(atf_row_get(row, "key"), key)) {
                        ev[c] = atf_row_getnum(row, "test_error");
                        mv[c] = atf_row_getnum(row, "test_rel_mse");
                        tv[c] = atf_row_getnum(row, "seconds");
                        c++;
                    }
                }
            }
            sm->count[i][k] = c;
            atf_mean_std(ev, c, &sm->err_mean[i][k], &sm->err_std[i][k]);
            atf_mean_std(mv, c, &sm->mse_mean[i][k], &sm->mse_std[i][k]);
            double sd;
            atf_mean_std(tv, c, &sm->secs[i][k], &sd);
        }
    }
}

static atf_error write_summary(const atf_samples_config *cfg, const summary *sm, char *err)
{
    /* a line: the method (≤ 159 characters, ≤ 320 quoted), 7 numbers, separators */
    char *text = malloc(128 + (size_t)cfg->nn * sm->nm * 520);
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
    char path[1200];
    snprintf(path, sizeof path, "%s/samples_summary.csv", cfg->out);
    atf_error e = atf_write_text(path, text, err);
    free(text);
    return e;
}

/* Markdown table: one error and one relative-MSE column per model. */
static void print_table(const atf_samples_config *cfg, const summary *sm)
{
    static const char *short_name[3] = {"NTK", "problem (16)", "MLP"};
    printf("| n |");
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < sm->nm; k++) {
            const method *m = &sm->m[k];
            if (m->kind == KIND_ADAPTIVE && cfg->nvariants > 1)
                printf(" (16) %s %s |", m->spec, pass ? "rel. MSE" : "error");
            else
                printf(" %s %s |", short_name[m->kind], pass ? "rel. MSE" : "error");
        }
    printf(" seeds |\n|---|");
    for (int k = 0; k < 2 * sm->nm; k++)
        printf("---|");
    printf("---|\n");
    for (int i = 0; i < cfg->nn; i++) {
        printf("| %d |", cfg->ns[i]);
        for (int k = 0; k < sm->nm; k++)
            printf(" %.4f ± %.4f |", sm->err_mean[i][k], sm->err_std[i][k]);
        for (int k = 0; k < sm->nm; k++)
            printf(" %.4f ± %.4f |", sm->mse_mean[i][k], sm->mse_std[i][k]);
        printf(" %d |\n", sm->count[i][0]);
    }
}

static atf_error samples_figure(const atf_samples_config *cfg, const summary *sm, char *err)
{
    static double em[MAXMETHODS][ATF_SAMPLES_MAXN], es[MAXMETHODS][ATF_SAMPLES_MAXN],
        mm[MAXMETHODS][ATF_SAMPLES_MAXN], ms[MAXMETHODS][ATF_SAMPLES_MAXN];
    for (int k = 0; k < sm->nm; k++)
        for (int i = 0; i < cfg->nn; i++) {
            em[k][i] = sm->err_mean[i][k];
            es[k][i] = sm->err_std[i][k];
            mm[k][i] = sm->mse_mean[i][k];
            ms[k][i] = sm->mse_std[i][k];
        }
    atf_plot_panel panels[2];
    memset(panels, 0, sizeof panels);
    const char *ylab[2] = {"test error", "relative test MSE"};
    int labelled = strncmp(cfg->data.source, "synthetic", 9) != 0;
    const char *titles[2] = {labelled ? "test classification error (mean ± std over seeds)"
                                      : "sign error of the regression (mean ± std)",
                             "test MSE / Var(y) (mean ± std over seeds)"};
    for (int p = 0; p < 2; p++) {
        atf_plot_panel *pl = &panels[p];
        pl->kind = ATF_PANEL_LINES;
        pl->title = titles[p];
        pl->xlabel = "training examples n";
        pl->ylabel = ylab[p];
        pl->logx = 1;
        pl->logy = 1;
        pl->legend = ATF_LEGEND_AUTO;
        for (int k = 0; k < sm->nm && k < ATF_PLOT_MAXSERIES; k++)
            pl->series[pl->nseries++] = (atf_plot_series){
                sm->m[k].label, sm->n, p ? mm[k] : em[k], p ? ms[k] : es[k], cfg->nn, k % 8,
                k / 8, 1 + k % 5, 0};
    }
    /* many models (the scale axis): panels stacked, full width, so the legend fits */
    int stacked = cfg->nvariants > 1;
    atf_plot_figure fig = {cfg->title, stacked ? 1 : 2, stacked ? 2 : 1, stacked ? 1300 : 1500,
                           stacked ? 1250 : 620, 2, panels, 0};
    char base[1200];
    snprintf(base, sizeof base, "%s/samples", cfg->out);
    return atf_plot_save(&fig, base, err);
}

int atf_samples_run(const atf_samples_config *cfg, const char *cmd)
{
    char err[ATF_ERRLEN] = "";
    char csv[1200], jsonl[1200];
    snprintf(csv, sizeof csv, "%s/samples.csv", cfg->out);
    snprintf(jsonl, sizeof jsonl, "%s/samples.jsonl", cfg->out);
    samples_state s = {cfg, NULL, NULL, atf_cli_interrupt_flag()};
    atf_error e = atf_cli_output_dir(cfg->out, err);
    if (!e)
        e = atf_rowstore_open(csv, jsonl, "key", &s.store, err);
    if (e)
        return atf_cli_fail(cmd, e, err);

    method ms[MAXMETHODS];
    int nm = list_methods(cfg, ms);
    int total = cfg->nn * cfg->nseeds * nm, done = 0;
    for (int i = 0; i < cfg->nn; i++)
        for (int j = 0; j < cfg->nseeds; j++)
            for (int k = 0; k < nm; k++) {
                char key[256];
                row_key(key, sizeof key, cfg->ns[i], cfg->seeds[j], ms[k].name);
                done += atf_rowstore_has(s.store, key);
            }
    atf_progress prog;
    atf_progress_start(&prog, total, done);
    s.prog = &prog;
    for (int i = 0; !e && i < cfg->nn; i++)
        for (int j = 0; !e && j < cfg->nseeds; j++) {
            if (*s.stop)
                e = ATF_E_INTERRUPTED;
            else
                e = run_point(&s, cfg->ns[i], cfg->seeds[j], err);
        }
    if (e == ATF_E_INTERRUPTED)
        snprintf(err, sizeof err, "interrupted: %d rows recorded in %.300s; re-run the same "
                 "command to resume", atf_rowstore_count(s.store), csv);
    if (e) {
        atf_rowstore_close(s.store);
        if (prog.tty)
            fputc('\n', stderr);
        return atf_cli_fail(cmd, e, err);
    }
    atf_progress_end(&prog);
    summary sm;
    summarize(cfg, s.store, &sm);
    e = write_summary(cfg, &sm, err);
    if (!e)
        e = samples_figure(cfg, &sm, err);
    if (!e) {
        if (cfg->json) {
            atf_row sum;
            char path[1200];
            int last = cfg->nn - 1;
            atf_row_clear(&sum);
            atf_row_str(&sum, "status", "done");
            atf_row_int(&sum, "rows", atf_rowstore_count(s.store));
            atf_row_str(&sum, "csv", csv);
            snprintf(path, sizeof path, "%s/samples_summary.csv", cfg->out);
            atf_row_str(&sum, "summary", path);
            snprintf(path, sizeof path, "%s/samples.svg", cfg->out);
            atf_row_str(&sum, "figure", path);
            atf_row_int(&sum, "largest_n", cfg->ns[last]);
            for (int k = 0; k < sm.nm; k++) {
                char name[ATF_ROW_NAMELEN];
                snprintf(name, sizeof name, "%.38s_error", sm.m[k].name);
                atf_row_num(&sum, name, sm.err_mean[last][k]);
                snprintf(name, sizeof name, "%.38s_rel_mse", sm.m[k].name);
                atf_row_num(&sum, name, sm.mse_mean[last][k]);
            }
            char *line = atf_row_json_line(&sum);
            if (line)
                fputs(line, stdout);
            free(line);
        } else {
            print_table(cfg, &sm);
            fprintf(stderr, "%s: rows in %s, summary in %s/samples_summary.csv, figure %s/samples.svg\n",
                    cmd, csv, cfg->out, cfg->out);
        }
    }
    atf_rowstore_close(s.store);
    return e ? atf_cli_fail(cmd, e, err) : 0;
}

/* ---- command line ---- */

static void usage(FILE *out)
{
    fprintf(out,
            "usage: atf experiment samples [--data SOURCE] [--classes LIST] [--ns LIST]\n"
            "          [--seeds K | --seed-list LIST] [--n-test N] [--hidden LIST] [--init he|torch]\n"
            "          [--penalty SPEC] [--scales LIST] [--auto-fraction Q]\n"
            "          [--structure layer|diagonal|full]\n"
            "          [--tol EPS] [--max-iter N] [--epochs E] [--batch B] [--lr LR]\n"
            "          [--momentum MU] [--center] [--no-mlp] [--out DIR] [--json]\n"
            "\n"
            "Test error against the number of training examples n for three models built on the\n"
            "same random network theta0 (one per seed): the NTK min-norm interpolant (fixed tangent\n"
            "features), problem (16) with PENALTY (adaptive features), and the network trained\n"
            "from theta0 by SGD. Rows go to DIR/samples.csv and .jsonl (resumable), mean +- std\n"
            "over seeds to DIR/samples_summary.csv and a Markdown table on stdout, the figure to\n"
            "DIR/samples.{svg,png} (default DIR out/samples).\n"
            "\n"
            "  --data SOURCE      synthetic[:d=..,r=..,noise=..] (default), mnist[:DIR],\n"
            "                     fashion-mnist[:DIR] or a data set file; --classes, --targets,\n"
            "                     --standardize, --teacher-seed as for atf features\n"
            "  --ns LIST          training sizes (default 125,250,500,1000,2000)\n"
            "  --seeds K          seeds 1..K (default 3); --seed-list LIST for explicit seeds\n"
            "  --n-test N         test examples (default 1000)\n"
            "  --hidden LIST      hidden widths (default 128,128; mnist: 128,128,128,128)\n"
            "  --init he|torch    initial weights: He-normal (default for synthetic/HDF5 data) or\n"
            "                     PyTorch's nn.Linear default (default for mnist, as in the paper)\n"
            "  --penalty SPEC     problem (16) penalty (default sq:scale=auto); scale=auto sets\n"
            "                     sqrt(gamma) = Q x the largest singular value of the NTK solution\n"
            "  --scales LIST      the scale axis: run problem (16) once per value (numbers or\n"
            "                     auto), each a model of its own, e.g. --penalty zsq\n"
            "                     --scales 1e-4,1e-3,1e-2,1e-1,1,auto (at most 8)\n"
            "  --auto-fraction Q  (default 0.3)\n"
            "  --center           linear models without the initial function: r = y and\n"
            "                     predictions A vec B (f0 := 0; the network is trained as is)\n"
            "  --epochs/--batch/--lr/--momentum   SGD for the MLP (default 100, 32, lr 0.1\n"
            "                     (paper B.1) with --init torch and 0.01 with he, momentum 0.9)\n");
}

atf_error atf_parse_hidden(const char *text, atf_arch *arch, char *err)
{
    long w[ATF_MAX_LAYERS];
    int n;
    atf_error e = atf_parse_list("--hidden", text, 1, 1 << 20, w, ATF_MAX_LAYERS - 1, &n, err);
    if (e)
        return e;
    arch->L = n + 1;
    arch->widths[0] = 0;
    for (int i = 0; i < n; i++)
        arch->widths[i + 1] = (int)w[i];
    arch->widths[n + 1] = 0;
    return ATF_OK;
}

static atf_error parse_structure(const char *text, atf_global_structure *s, char *err)
{
    if (text && !strcmp(text, "layer"))
        *s = ATF_GLOBAL_LAYER;
    else if (text && !strcmp(text, "diagonal"))
        *s = ATF_GLOBAL_DIAGONAL;
    else if (text && !strcmp(text, "full"))
        *s = ATF_GLOBAL_FULL;
    else {
        atf_errorf(err, "--structure: '%s' (expected layer, diagonal or full)", text ? text : "");
        return ATF_E_USAGE;
    }
    return ATF_OK;
}

/* The penalties to run: the penalty itself, or one copy per --scales value (the scale axis);
 * each must parse (with scale=auto replaced by a placeholder). */
static atf_error build_variants(atf_samples_config *cfg, const char *scales, char *err)
{
    cfg->nvariants = 0;
    if (!scales) {
        snprintf(cfg->variants[0], sizeof cfg->variants[0], "%s", cfg->penalty);
        cfg->nvariants = 1;
    } else {
        char buf[512];
        snprintf(buf, sizeof buf, "%s", scales);
        for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
            if (cfg->nvariants == ATF_SAMPLES_MAXPEN) {
                atf_errorf(err, "--scales: at most %d values", ATF_SAMPLES_MAXPEN);
                return ATF_E_USAGE;
            }
            double g;
            if (strcmp(tok, "auto") && (atf_cli_double("--scales", tok, &g, err) || !(g > 0))) {
                atf_errorf(err, "--scales: '%s' is not a positive number or auto", tok);
                return ATF_E_USAGE;
            }
            char *v = cfg->variants[cfg->nvariants++];
            if (atf_penalty_with_scale(cfg->penalty, tok, v, sizeof cfg->variants[0], err))
                return ATF_E_USAGE;
        }
        if (!cfg->nvariants) {
            atf_errorf(err, "--scales: empty list");
            return ATF_E_USAGE;
        }
    }
    for (int v = 0; v < cfg->nvariants; v++) {
        atf_penalty pen;
        char probe[256];
        if (atf_resolve_auto_scale(cfg->variants[v], 1.0, 1.0, probe, sizeof probe, NULL, err) ||
            atf_penalty_parse(probe, &pen, err))
            return ATF_E_USAGE;
    }
    return ATF_OK;
}

static atf_error parse_samples_args(int argc, char **argv, atf_samples_config *cfg, char *err)
{
    atf_samples_defaults(cfg);
    int hidden_given = 0, lr_given = 0, init_given = 0;
    const char *scales = NULL;
    for (int i = 1; i < argc; i++) {
        const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(opt, "--json")) {
            cfg->json = 1;
            continue;
        }
        if (!strcmp(opt, "--no-mlp")) {
            cfg->train_mlp = 0;
            continue;
        }
        if (!strcmp(opt, "--center")) {
            cfg->center = 1;
            continue;
        }
        if (opt[0] != '-' || opt[1] != '-') {
            atf_errorf(err, "unexpected argument '%s'", opt);
            return ATF_E_USAGE;
        }
        if (!val) {
            atf_errorf(err, "%s needs a value", opt);
            return ATF_E_USAGE;
        }
        i++;
        int used = 0;
        atf_error e = atf_data_option(&cfg->data, opt + 2, val, &used, err);
        if (e)
            return e;
        if (used)
            continue;
        long v, list[ATF_SAMPLES_MAXN];
        int n;
        if (!strcmp(opt, "--ns")) {
            e = atf_parse_list(opt, val, 2, 1 << 24, list, ATF_SAMPLES_MAXN, &n, err);
            for (int k = 0; !e && k < n; k++)
                cfg->ns[k] = (int)list[k];
            if (!e)
                cfg->nn = n;
        } else if (!strcmp(opt, "--seeds")) {
            e = atf_cli_int(opt, val, 1, ATF_SAMPLES_MAXSEEDS, &v, err);
            for (int k = 0; !e && k < v; k++)
                cfg->seeds[k] = (uint64_t)k + 1;
            if (!e)
                cfg->nseeds = (int)v;
        } else if (!strcmp(opt, "--seed-list")) {
            e = atf_parse_list(opt, val, 0, 1L << 40, list, ATF_SAMPLES_MAXSEEDS, &n, err);
            for (int k = 0; !e && k < n; k++)
                cfg->seeds[k] = (uint64_t)list[k];
            if (!e)
                cfg->nseeds = n;
        } else if (!strcmp(opt, "--init")) {
            if (!strcmp(val, "he") || !strcmp(val, "torch")) {
                cfg->arch.init = val[0] == 't' ? ATF_INIT_TORCH : ATF_INIT_HE;
                init_given = 1;
            } else {
                atf_errorf(err, "--init: '%s' (expected he or torch)", val);
                e = ATF_E_USAGE;
            }
        } else if (!strcmp(opt, "--hidden")) {
            e = atf_parse_hidden(val, &cfg->arch, err);
            hidden_given = 1;
        } else if (!strcmp(opt, "--penalty")) {
            snprintf(cfg->penalty, sizeof cfg->penalty, "%s", val);
        } else if (!strcmp(opt, "--scales")) {
            scales = val;
        } else if (!strcmp(opt, "--auto-fraction")) {
            e = atf_cli_double(opt, val, &cfg->auto_fraction, err);
            if (!e && !(cfg->auto_fraction > 0)) {
                atf_errorf(err, "--auto-fraction must be positive");
                e = ATF_E_USAGE;
            }
        } else if (!strcmp(opt, "--structure")) {
            e = parse_structure(val, &cfg->structure, err);
        } else if (!strcmp(opt, "--tol")) {
            e = atf_cli_double(opt, val, &cfg->tol, err);
        } else if (!strcmp(opt, "--max-iter")) {
            e = atf_cli_int(opt, val, 1, 100000000, &v, err);
            cfg->max_iter = (int)v;
        } else if (!strcmp(opt, "--epochs")) {
            e = atf_cli_int(opt, val, 1, 1000000, &v, err);
            cfg->train.epochs = (int)v;
        } else if (!strcmp(opt, "--batch")) {
            e = atf_cli_int(opt, val, 1, 1 << 20, &v, err);
            cfg->train.batch = (int)v;
        } else if (!strcmp(opt, "--lr")) {
            e = atf_cli_double(opt, val, &cfg->train.lr, err);
            lr_given = 1;
        } else if (!strcmp(opt, "--momentum")) {
            e = atf_cli_double(opt, val, &cfg->train.momentum, err);
        } else if (!strcmp(opt, "--out")) {
            snprintf(cfg->out, sizeof cfg->out, "%s", val);
        } else {
            atf_errorf(err, "unknown option '%s' (atf experiment samples --help)", opt);
            return ATF_E_USAGE;
        }
        if (e)
            return e;
    }
    int image_data = !strncmp(cfg->data.source, "mnist", 5) ||
                     !strncmp(cfg->data.source, "fashion-mnist", 13);
    if (image_data && !hidden_given) /* the paper's depth-5, width-128 network */
        atf_parse_hidden("128,128,128,128", &cfg->arch, err);
    if (image_data && !init_given) /* the paper's PyTorch networks */
        cfg->arch.init = ATF_INIT_TORCH;
    if (!lr_given) /* paper B.1 with PyTorch's initialisation; He-normal diverges at 0.1 */
        cfg->train.lr = cfg->arch.init == ATF_INIT_TORCH ? 0.1 : 0.01;
    atf_error e = build_variants(cfg, scales, err);
    if (e)
        return e;
    if (!(cfg->tol > 0) || !(cfg->train.lr > 0)) {
        atf_errorf(err, "--tol and --lr must be positive");
        return ATF_E_USAGE;
    }
    return ATF_OK;
}

int atf_experiment_samples(int argc, char **argv)
{
    if (atf_cli_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    char err[ATF_ERRLEN] = "";
    static atf_samples_config cfg;
    atf_error e = parse_samples_args(argc, argv, &cfg, err);
    if (e)
        return atf_cli_fail("experiment samples", e, err);
    static char title[256];
    snprintf(title, sizeof title, "Sample complexity on %.60s: NTK vs problem (16) [%.100s]%s",
             cfg.data.source, cfg.penalty, cfg.train_mlp ? " vs trained MLP" : "");
    cfg.title = title;
    return atf_samples_run(&cfg, "experiment samples");
}
