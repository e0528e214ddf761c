/* path.c — the regularisation path: problem (16) with a loss for every λ of a list, on one
 * problem file (atf_experiments.h, docs/experiments.md).
 *
 * The λ are solved from the largest to the smallest, because a large λ is a heavily regularised,
 * cheap fit and its answer is a good start for the next smaller λ (warm starts: each solve
 * starts from the previous λ's B). Each λ is one row of OUT/path.csv and OUT/path.jsonl
 * (rowstore.h: fsync per row, keyed by λ) and one result file OUT/lambda-<row>.h5, written
 * before its row, so that a row always names a complete file. A resumed run skips the recorded
 * λ and starts the next one from the result file of the recorded row with the smallest λ above
 * it: exactly the start an uninterrupted run used, so both give the same table. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "atf_data.h"
#include "atf_features.h"
#include "atf_penalty.h"
#include "internal/path_internal.h"

/* ---- configuration ---- */

void atf_path_key(double lambda, char *key, size_t len)
{
    atf_loss l = {ATF_LOSS_SQUARED, lambda};
    char spec[ATF_LOSS_SPECLEN];
    atf_loss_format(&l, spec, sizeof spec);
    snprintf(key, len, "%s", strchr(spec, '=') + 1); /* "squared:lambda=" is always there */
}

void atf_path_defaults(atf_path_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    snprintf(cfg->out, sizeof cfg->out, "out/path");
    cfg->loss = ATF_LOSS_XENT;
    cfg->seed = 1;
    cfg->tol = 1e-6;
    cfg->max_iter = 10000;
    cfg->method = ATF_METHOD_AUTO;
}

atf_error atf_path_set_loss(atf_path_config *cfg, const char *name, char *err)
{
    if (!strcmp(name, "xent") || !strcmp(name, "squared")) {
        cfg->loss = !strcmp(name, "xent") ? ATF_LOSS_XENT : ATF_LOSS_SQUARED;
        return ATF_OK;
    }
    atf_errorf(err, "loss: '%s' is not xent or squared (the lambdas come from their own list)",
               name);
    return ATF_E_USAGE;
}

/* λ must be distinct as keys too: two numbers with one text would share a row. */
static atf_error distinct_keys(const double *v, int n, char *err)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++) {
            char a[32], b[32];
            atf_path_key(v[i], a, sizeof a);
            atf_path_key(v[j], b, sizeof b);
            if (!strcmp(a, b)) {
                atf_errorf(err, "lambdas: %s is given twice", a);
                return ATF_E_USAGE;
            }
        }
    return ATF_OK;
}

atf_error atf_path_set_lambdas(atf_path_config *cfg, const char *list, char *err)
{
    double v[ATF_PATH_MAXLAMBDAS];
    int n = 0;
    atf_error e = atf_parse_doubles(list, v, ATF_PATH_MAXLAMBDAS, &n, "lambdas", err);
    for (int i = 0; !e && i < n; i++)
        if (!(v[i] > 0)) {
            atf_errorf(err, "lambdas: %g is not > 0", v[i]);
            e = ATF_E_USAGE;
        }
    if (!e)
        e = distinct_keys(v, n, err);
    if (!e) {
        memcpy(cfg->lambdas, v, sizeof(double) * (size_t)n);
        cfg->nlambdas = n;
    }
    return e;
}

atf_error atf_path_check(const atf_path_config *cfg, char *err)
{
    atf_penalty pen;
    if (!cfg->problem[0] || cfg->nlambdas < 1) {
        atf_errorf(err, "path: %s", cfg->problem[0] ? "no lambdas" : "no problem file");
        return ATF_E_USAGE;
    }
    if (cfg->loss != ATF_LOSS_XENT && cfg->loss != ATF_LOSS_SQUARED) {
        atf_errorf(err, "loss: the path needs xent or squared");
        return ATF_E_USAGE;
    }
    if (!(cfg->validation_fraction >= 0 && cfg->validation_fraction < 1)) {
        atf_errorf(err, "validation fraction: %g is not in (0, 1)", cfg->validation_fraction);
        return ATF_E_USAGE;
    }
    if (!(cfg->tol > 0) || !isfinite(cfg->tol) || cfg->max_iter < 1) {
        atf_errorf(err, "path: the tolerance and the iteration limit must be positive");
        return ATF_E_USAGE;
    }
    for (int i = 0; i < cfg->nlambdas; i++)
        if (!(cfg->lambdas[i] > 0) || !isfinite(cfg->lambdas[i])) {
            atf_errorf(err, "lambdas: %g is not a finite number > 0", cfg->lambdas[i]);
            return ATF_E_USAGE;
        }
    if (cfg->penalty[0] && atf_penalty_parse(cfg->penalty, &pen, err))
        return ATF_E_USAGE;
    return distinct_keys(cfg->lambdas, cfg->nlambdas, err);
}

/* ---- the problem and its splits ---- */

static int cmp_int(const void *a, const void *b)
{
    return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

/* A copy of a whole test split (the fitted examples keep the file's test split). */
static atf_error copy_test(const atf_problem *test, atf_problem **out, char *err)
{
    *out = NULL;
    if (!test)
        return ATF_OK;
    int *all = malloc(sizeof(int) * (size_t)test->N);
    if (!all) {
        atf_errorf(err, "path: out of memory");
        return ATF_E_NOMEM;
    }
    for (int i = 0; i < test->N; i++)
        all[i] = i;
    atf_error e = atf_problem_select_examples(test, all, test->N, out, err);
    free(all);
    return e;
}

/* The validation examples: a seeded random K = round(F·N) of the N training examples (at
 * least 1, and at least one left to fit); both sets in file order. */
static atf_error validation_split(path_state *s, char *err)
{
    const atf_path_config *cfg = s->cfg;
    int N = s->prob->N;
    if (N < 2) {
        atf_errorf(err, "%s: %d training example: nothing to hold out for validation",
                   cfg->problem, N);
        return ATF_E_INPUT;
    }
    long k = lround(cfg->validation_fraction * N);
    k = k < 1 ? 1 : k > N - 1 ? N - 1 : k;
    int *perm = malloc(sizeof(int) * (size_t)N);
    if (!perm) {
        atf_errorf(err, "path: out of memory");
        return ATF_E_NOMEM;
    }
    for (int i = 0; i < N; i++)
        perm[i] = i;
    atf_rng rng;
    atf_rng_seed(&rng, cfg->seed);
    atf_rng_shuffle(&rng, N, perm);
    qsort(perm, (size_t)k, sizeof *perm, cmp_int);
    qsort(perm + k, (size_t)(N - k), sizeof *perm, cmp_int);
    atf_error e = atf_problem_select_examples(s->prob, perm, (int)k, &s->val, err);
    if (!e)
        e = atf_problem_select_examples(s->prob, perm + k, N - (int)k, &s->fit, err);
    if (!e)
        e = copy_test(s->prob->test, &s->fit->test, err);
    if (!e) /* computed once here, not by every solve's result */
        e = atf_problem_fingerprint(s->fit, s->fit->fingerprint);
    if (e == ATF_E_NOMEM)
        atf_errorf(err, "path: out of memory");
    free(perm);
    snprintf(s->split, sizeof s->split, "validation:fraction=%g,seed=%llu,examples=%ld",
             cfg->validation_fraction, (unsigned long long)cfg->seed, k);
    return e;
}

/* The penalty solved with, as the rows record it: the override, else the file's block
 * penalties ("W1=sq;W2=abs" when they differ). */
static void describe_penalty(const atf_problem *p, char *out, size_t len)
{
    int same = 1;
    for (int l = 1; l < p->nblocks; l++)
        same &= !strcmp(p->blocks[l].penalty_spec, p->blocks[0].penalty_spec);
    if (same) {
        snprintf(out, len, "%s", p->blocks[0].penalty_spec);
        return;
    }
    size_t n = 0;
    out[0] = '\0';
    for (int l = 0; l < p->nblocks && n < len; l++)
        n += (size_t)snprintf(out + n, len - n, "%s%s=%s", l ? ";" : "", p->blocks[l].name,
                              p->blocks[l].penalty_spec);
}

/* What every row records about the run besides its λ: the penalty and the solver settings
 * asked for. */
static void describe_settings(path_state *s)
{
    describe_penalty(s->prob, s->penalty, sizeof s->penalty);
    snprintf(s->solver, sizeof s->solver, "method=%s,tol=%g,max_iter=%d",
             atf_method_name(s->cfg->method), s->cfg->tol, s->cfg->max_iter);
}

/* Predictions need the targets and initial outputs (f0 + A vec B is scored against y). */
static atf_error check_scorable(const path_state *s, char *err)
{
    const atf_problem *p = s->prob;
    if (!p->y || !p->f0) {
        atf_errorf(err, "%s: /%s: missing (the path scores the predictions f0 + A vec B against "
                   "the targets)", s->cfg->problem, p->y ? "f0" : "y");
        return ATF_E_INPUT;
    }
    if (!(s->cfg->validation_fraction > 0) && (!p->test || p->test->N < 1)) {
        atf_errorf(err, "%s: /test: missing, and no validation fraction: nothing to score the "
                   "lambdas on", s->cfg->problem);
        return ATF_E_INPUT;
    }
    return ATF_OK;
}

static atf_error load_problem(path_state *s, char *err)
{
    const atf_path_config *cfg = s->cfg;
    atf_loss loss = {cfg->loss, 1.0};
    atf_error e = atf_problem_read(cfg->problem, &s->prob, err);
    if (!e && cfg->penalty[0])
        e = atf_problem_set_penalty(s->prob, cfg->penalty, err);
    if (!e) /* xent without /labels: named by the file */
        e = atf_loss_check(&loss, s->prob, cfg->problem, err);
    if (!e)
        e = check_scorable(s, err);
    if (e)
        return e;
    memcpy(s->fingerprint, s->prob->fingerprint, sizeof s->fingerprint);
    if (!s->fingerprint[0] && atf_problem_fingerprint(s->prob, s->fingerprint)) {
        atf_errorf(err, "path: out of memory");
        return ATF_E_NOMEM;
    }
    describe_settings(s);
    if (cfg->validation_fraction > 0)
        return validation_split(s, err);
    s->fit = s->prob; /* fitted as it is, scored on its test split */
    snprintf(s->split, sizeof s->split, "test");
    return ATF_OK;
}

/* ---- the table: what a resumed run must agree with ---- */

/* Every recorded row was written with this run's settings (else ATF_E_USAGE naming the table,
 * the column and both values): resuming with others would mix two paths in one table. */
static atf_error check_resume(const path_state *s, char *err)
{
    char kind[16];
    snprintf(kind, sizeof kind, "%s", atf_loss_name(s->cfg->loss));
    const char *cols[] = {"penalty", "split", "solver", "problem_fingerprint"};
    const char *mine[] = {s->penalty, s->split, s->solver, s->fingerprint};
    for (int i = 0; i < atf_rowstore_count(s->store); i++) {
        const atf_row *row = atf_rowstore_row(s->store, i);
        const char *loss = atf_row_get(row, "loss");
        if (!loss || strncmp(loss, kind, strlen(kind)) || loss[strlen(kind)] != ':') {
            atf_errorf(err, "%s: rows of loss %s, but this run's loss is %s (use another output "
                       "directory)", s->csv, loss ? loss : "(none)", kind);
            return ATF_E_USAGE;
        }
        for (int c = 0; c < 4; c++) {
            const char *got = atf_row_get(row, cols[c]);
            if (!got || strcmp(got, mine[c])) {
                atf_errorf(err, "%s: rows of %s %s, but this run's %s is %s (use another output "
                           "directory)", s->csv, cols[c], got ? got : "(none)", cols[c], mine[c]);
                return ATF_E_USAGE;
            }
        }
    }
    return ATF_OK;
}

/* With validation the fitted examples are the result files' problem: OUT/fit.h5, written with
 * the first result file of a table (and again if it went missing), so that it exists whenever a
 * row does. */
static atf_error write_fit(const path_state *s, char *err)
{
    char path[1100];
    if (!s->val)
        return ATF_OK;
    atf_error e = atf_exp_path(path, sizeof path, s->cfg->out, "fit.h5", err);
    if (e || (atf_rowstore_count(s->store) > 0 && access(path, F_OK) == 0))
        return e;
    return atf_problem_write(path, s->fit, err);
}

/* ---- one λ ---- */

typedef struct {
    atf_test_metrics train, val, test;
} path_metrics;

static const atf_test_metrics no_metrics = {NAN, NAN, NAN};

static atf_test_metrics split_metrics(const atf_split_eval *e)
{
    return e->N > 0 ? atf_prediction_metrics(e->N, e->C, e->f, e->y, e->labels) : no_metrics;
}

/* Error and cross-entropy of f0 + A vec B on the fitted examples, the validation examples and
 * the test split: the predictions of atf predict (atf_predict_result). */
static atf_error measure(const path_state *s, const atf_result *res, path_metrics *m, char *err)
{
    atf_predictions pr;
    m->train = m->val = m->test = no_metrics;
    atf_error e = atf_predict_result(s->fit, s->cfg->problem, res, NULL, &pr, err);
    if (e)
        return e;
    m->train = split_metrics(&pr.train);
    m->test = split_metrics(&pr.test);
    atf_predictions_free(&pr);
    if (!s->val)
        return ATF_OK;
    if ((e = atf_predict_result(s->val, s->cfg->problem, res, NULL, &pr, err)))
        return e;
    m->val = split_metrics(&pr.train);
    atf_predictions_free(&pr);
    return ATF_OK;
}

/* The recorded row the solve of λ starts from: the smallest λ above it among the rows whose
 * result was kept (solved or at the iteration limit); -1: none, a cold start. */
static int warm_row(const atf_rowstore *st, double lambda)
{
    int best = -1;
    double best_l = INFINITY;
    for (int i = 0; i < atf_rowstore_count(st); i++) {
        const atf_row *row = atf_rowstore_row(st, i);
        double l = atf_row_getnum(row, "lambda");
        const char *status = atf_row_get(row, "status");
        int kept = status && (!strcmp(status, "solved") || !strcmp(status, "max_iterations"));
        const char *file = atf_row_get(row, "result");
        if (kept && file && strcmp(file, "-") && l > lambda && l < best_l)
            best = i, best_l = l;
    }
    return best;
}

/* The warm start of λ: the result kept in memory when it is that row's, else the row's result
 * file (checked against the fitted problem). A missing or foreign file is a warning and a cold
 * start: the row's warm_from then says so. */
static const atf_result *warm_start(path_state *s, double lambda, char *from, size_t len)
{
    int i = warm_row(s->store, lambda);
    snprintf(from, len, "none");
    if (i < 0)
        return NULL;
    const atf_row *row = atf_rowstore_row(s->store, i);
    const char *key = atf_row_get(row, "key");
    if (!s->warm || strcmp(s->warm_key, key)) {
        char path[1100], err[ATF_ERRLEN] = "";
        atf_result_free(s->warm);
        s->warm = NULL;
        atf_error e = atf_exp_path(path, sizeof path, s->cfg->out, atf_row_get(row, "result"),
                                   err);
        if (!e)
            e = atf_result_read(path, &s->warm, err);
        if (!e)
            e = atf_result_match(s->warm, path, s->fit, s->cfg->problem, (char[ATF_ERRLEN]){0},
                                 err);
        if (!e)
            e = atf_result_check(s->warm, s->fit, path, s->cfg->problem, err);
        if (e) {
            atf_exp_log(&s->cfg->io, "path: warning: lambda %s starts cold: %s\n", key, err);
            atf_result_free(s->warm);
            s->warm = NULL;
            return NULL;
        }
        snprintf(s->warm_key, sizeof s->warm_key, "%s", key);
    }
    snprintf(from, len, "%s", key);
    return s->warm;
}

/* The solver's verbose output onto the progress stream. */
static void log_to_stream(void *stream, const char *text)
{
    fputs(text, stream);
}

static atf_settings path_settings(const path_state *s, double lambda)
{
    const atf_path_config *cfg = s->cfg;
    atf_settings set = atf_settings_default();
    set.loss = (atf_loss){cfg->loss, lambda};
    set.method = cfg->method; /* auto unless asked: the solver picks the method */
    set.eps_rel = cfg->tol;
    set.max_iter = cfg->max_iter;
    set.verbose = cfg->verbose && cfg->io.progress;
    return set;
}

/* One row: the λ, the solver's report, the scores and the effective ranks. */
static void fill_row(atf_row *row, const path_state *s, const char *key, double lambda,
                     const atf_result *res, const double secs[2], const path_metrics *m,
                     const char *warm_from, const char *result)
{
    atf_row_clear(row);
    atf_row_str(row, "key", key);
    atf_row_num(row, "lambda", lambda);
    atf_row_str(row, "loss", res->loss);
    atf_row_str(row, "status", atf_status_name(res->info.status));
    atf_row_str(row, "method", atf_method_name(res->info.method));
    atf_row_num(row, "objective", res->info.objective);
    atf_row_num(row, "loss_value", res->info.loss_value);
    atf_row_num(row, "penalty_value", res->info.penalty_value);
    atf_row_num(row, "pg_residual", res->info.pg_residual);
    atf_row_num(row, "duality_gap", res->info.duality_gap);
    atf_row_num(row, "stationarity", res->info.stationarity);
    atf_row_int(row, "iterations", res->info.iterations);
    atf_row_int(row, "operator_passes", res->info.operator_passes);
    atf_row_num(row, "seconds", secs[0]);
    atf_row_num(row, "cpu_seconds", secs[1]);
    atf_row_num(row, "setup_seconds", res->info.setup_seconds);
    atf_row_num(row, "train_error", m->train.error);
    atf_row_num(row, "train_xent", m->train.xent);
    atf_row_num(row, "val_error", m->val.error);
    atf_row_num(row, "val_xent", m->val.xent);
    atf_row_num(row, "test_error", m->test.error);
    atf_row_num(row, "test_xent", m->test.xent);
    atf_row_str(row, "warm_from", warm_from);
    atf_row_str(row, "result", result);
    for (int b = 0; b < res->nblocks; b++) {
        char name[ATF_ROW_NAMELEN];
        snprintf(name, sizeof name, "erank_%.40s", res->blocks[b].name);
        const atf_result_block *rb = &res->blocks[b];
        atf_row_int(row, name, rb->d ? atf_effective_rank(rb->d, rb->k, 0.9) : -1);
    }
    atf_row_str(row, "penalty", s->penalty);
    atf_row_str(row, "split", s->split);
    atf_row_str(row, "solver", s->solver);
    atf_row_str(row, "problem_fingerprint", s->fingerprint);
}

/* The result file of the next row, OUT/lambda-<row>.h5 (atomic), for answers worth keeping;
 * name receives its name in OUT, or "-". */
static atf_error write_result(path_state *s, atf_result *res, const atf_settings *set,
                              char *name, size_t len, char *err)
{
    char path[1100];
    snprintf(name, len, "-");
    if (res->info.status != ATF_STATUS_SOLVED && res->info.status != ATF_STATUS_MAX_ITERATIONS)
        return ATF_OK;
    char file[64];
    snprintf(file, sizeof file, "lambda-%d.h5", atf_rowstore_count(s->store));
    atf_error e = write_fit(s, err);
    if (!e)
        e = atf_exp_path(path, sizeof path, s->cfg->out, file, err);
    atf_result_record_run(res, set, s->cfg->penalty[0] ? s->cfg->penalty : NULL,
                          s->cfg->command[0] ? s->cfg->command : NULL);
    if (!e)
        e = atf_result_write(path, res, err);
    if (!e)
        snprintf(name, len, "%s", file);
    return e;
}

/* Keep a result as the next λ's start (the rule of warm_row: solved or iteration limit). */
static void keep_warm(path_state *s, const char *key, const char *file, atf_result *res)
{
    if (strcmp(file, "-")) {
        atf_result_free(s->warm);
        s->warm = res;
        snprintf(s->warm_key, sizeof s->warm_key, "%s", key);
    } else {
        atf_result_free(res);
    }
}

/* The line after a λ (progress "what"). */
static void describe_row(const path_state *s, const atf_row *row, char *buf, size_t len)
{
    const char *split = s->val ? "val" : "test";
    char ce[32], cx[32];
    snprintf(ce, sizeof ce, "%s_error", split);
    snprintf(cx, sizeof cx, "%s_xent", split);
    snprintf(buf, len, "lambda=%s: %s (%s) after %s iterations, %.1f s; %s error %.4f, "
             "cross-entropy %.4f", atf_row_get(row, "key"), atf_row_get(row, "status"),
             atf_row_get(row, "method"), atf_row_get(row, "iterations"),
             atf_row_getnum(row, "seconds"), s->val ? "validation" : "test",
             atf_row_getnum(row, ce), atf_row_getnum(row, cx));
}

/* Solve, score and record λ; an interrupted solve records nothing. *row receives the row. */
static atf_error run_lambda(path_state *s, double lambda, atf_row *row, char *err)
{
    char key[32], from[32], file[64];
    atf_path_key(lambda, key, sizeof key);
    atf_settings set = path_settings(s, lambda);
    atf_hooks hooks = {.log = log_to_stream, .log_ctx = s->cfg->io.progress,
                       .warm = warm_start(s, lambda, from, sizeof from),
                       .interrupt = s->cfg->io.interrupt};
    atf_result *res = NULL;
    double t0 = atf_now();
    clock_t c0 = clock();
    atf_error e = atf_solve(s->fit, &set, &hooks, &res, err);
    double secs[2] = {atf_now() - t0, (double)(clock() - c0) / CLOCKS_PER_SEC};
    if (e || res->info.status == ATF_STATUS_INTERRUPTED) {
        atf_result_free(res);
        return e;
    }
    path_metrics m;
    e = measure(s, res, &m, err);
    if (!e)
        e = write_result(s, res, &set, file, sizeof file, err);
    if (!e) {
        fill_row(row, s, key, lambda, res, secs, &m, from, file);
        e = atf_rowstore_append(s->store, row, err);
        s->ran += !e;
    }
    keep_warm(s, key, e ? "-" : file, res);
    return e;
}

/* ---- the runs ---- */

static int cmp_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

static void show_row(const path_state *s, atf_progress *prog, const atf_row *row)
{
    char what[256];
    describe_row(s, row, what, sizeof what);
    atf_progress_show(prog, what);
    if (prog->tty)
        atf_progress_break(prog); /* on a terminal each λ's line stays */
}

static atf_error run_all(path_state *s, char *err)
{
    const atf_path_config *cfg = s->cfg;
    double l[ATF_PATH_MAXLAMBDAS];
    int n = cfg->nlambdas, skipped = 0;
    memcpy(l, cfg->lambdas, sizeof(double) * (size_t)n);
    qsort(l, (size_t)n, sizeof *l, cmp_desc); /* from large to small, whatever the order given */
    char key[32];
    for (int i = 0; i < n; i++) {
        atf_path_key(l[i], key, sizeof key);
        skipped += atf_rowstore_has(s->store, key);
    }
    atf_progress prog;
    atf_progress_start(&prog, cfg->io.progress, n, skipped);
    atf_error e = ATF_OK;
    for (int i = 0; i < n && !e && !atf_exp_stopped(&cfg->io); i++) {
        atf_path_key(l[i], key, sizeof key);
        if (atf_rowstore_has(s->store, key))
            continue;
        if (prog.tty) { /* a terminal shows what runs; a log gets one line per λ, when done */
            char what[64];
            snprintf(what, sizeof what, "lambda=%s ...", key);
            atf_progress_show(&prog, what);
        }
        atf_row row;
        int before = s->ran;
        e = run_lambda(s, l[i], &row, err);
        if (!e && s->ran > before) {
            atf_progress_step(&prog);
            show_row(s, &prog, &row);
        }
    }
    if (e || atf_exp_stopped(&cfg->io))
        atf_progress_break(&prog);
    return atf_exp_stopped(&cfg->io) ? ATF_OK : e;
}

/* Open the table, check it was written with these settings, run the λ; the figure also after
 * an interruption. */
static atf_error path_table(path_state *s, atf_exp_outcome *outcome, atf_path_best *best,
                            char *err)
{
    atf_error e = atf_rowstore_open(s->csv, s->jsonl, "key", &s->store, err);
    if (!e)
        e = check_resume(s, err);
    if (!e)
        e = run_all(s, err);
    if (e)
        return e;
    atf_path_best_of(s, best);
    atf_path_figure(s, best);
    outcome->rows = atf_rowstore_count(s->store);
    outcome->new_rows = s->ran;
    if (atf_exp_stopped(&s->cfg->io)) {
        outcome->status = ATF_STATUS_INTERRUPTED;
        atf_errorf(err, "interrupted: %d rows recorded in %.300s; re-run the same command to "
                   "resume", outcome->rows, s->csv);
        return ATF_OK;
    }
    atf_path_report(s, best);
    return ATF_OK;
}

atf_error atf_path_run(const atf_path_config *cfg, atf_exp_outcome *outcome, atf_path_best *best,
                       char *err)
{
    path_state s;
    atf_path_best unused;
    memset(&s, 0, sizeof s);
    s.cfg = cfg;
    s.t0 = atf_now();
    memset(outcome, 0, sizeof *outcome);
    best = best ? best : &unused;
    memset(best, 0, sizeof *best);
    atf_error e = atf_path_check(cfg, err);
    if (!e)
        e = atf_exp_path(s.csv, sizeof s.csv, cfg->out, "path.csv", err);
    if (!e)
        e = atf_exp_path(s.jsonl, sizeof s.jsonl, cfg->out, "path.jsonl", err);
    if (!e)
        e = load_problem(&s, err);
    if (!e)
        e = atf_mkdir_p(cfg->out, err);
    if (!e)
        e = path_table(&s, outcome, best, err);
    if (s.store && atf_rowstore_count(s.store) == 0) { /* a run that recorded nothing (bad
                                                          settings, Ctrl-C) leaves no table */
        unlink(s.csv);
        unlink(s.jsonl);
    }
    atf_rowstore_close(s.store); /* removes the lock file, whatever happened */
    atf_result_free(s.warm);
    if (s.fit != s.prob)
        atf_problem_free(s.fit);
    atf_problem_free(s.val);
    atf_problem_free(s.prob);
    return e;
}
