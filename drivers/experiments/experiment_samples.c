/* experiment_samples.c — the samples experiment (and the demo): sample complexity of models
 * that share one initial network θ0 (per seed; atf_experiments.h lists them): the NTK min-norm
 * interpolant, problem (16) exactly and with the penalized cross-entropy, and the linearised,
 * factorised and full networks trained by gradient descent. Test error, relative test MSE and
 * test cross-entropy against n, over several seeds (mean ± std). Every run is a row of
 * OUT/samples.csv (resumable, rowstore.h); the summary and figure are rebuilt from all recorded
 * rows at the end. This file holds the plan, the grid, the summary and the figure; the models
 * themselves run in samples_models.c. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf_penalty.h"
#include "internal/rowstore_ranks.h"
#include "internal/samples_internal.h"

/* ---- the models ---- */

static const struct {
    const char *name;
    atf_samples_model flag;
    method_kind kind;
    const char *label; /* legend */
} MODELS[] = {
    {"ntk", ATF_SAMPLES_NTK, KIND_NTK, "NTK min-norm (fixed features)"},
    {"ntk-xent", ATF_SAMPLES_NTK_XENT, KIND_NTK_XENT, "NTK, cross-entropy (fixed features)"},
    {"ntk-ridge", ATF_SAMPLES_NTK_RIDGE, KIND_NTK_RIDGE, "NTK, ridge (fixed features)"},
    {"p16", ATF_SAMPLES_P16, KIND_P16, "problem (16) (adaptive)"},
    {"p16-xent", ATF_SAMPLES_P16_XENT, KIND_P16_XENT, "problem (16), cross-entropy"},
    {"p16-ridge", ATF_SAMPLES_P16_RIDGE, KIND_P16_RIDGE, "problem (16), squared loss"},
    {"ntk-sgd", ATF_SAMPLES_NTK_SGD, KIND_NTK_SGD, "linearised network, SGD"},
    {"factorized-sgd", ATF_SAMPLES_FACTORIZED_SGD, KIND_FACTORIZED_SGD,
     "factorised linearisation, SGD"},
    {"network", ATF_SAMPLES_NETWORK, KIND_NETWORK, "network, SGD"},
};
enum { NMODELS = sizeof MODELS / sizeof MODELS[0] };

atf_error atf_samples_parse_models(const char *list, unsigned *models, char *err)
{
    char items[NMODELS + 1][ATF_EXP_NAMELEN];
    int n;
    atf_error e = atf_exp_split_names("models", list, items, NMODELS + 1, &n, err);
    *models = 0;
    for (int i = 0; !e && i < n; i++) {
        int k = 0;
        while (k < NMODELS && strcmp(items[i], MODELS[k].name))
            k++;
        if (k == NMODELS || (*models & MODELS[k].flag)) {
            atf_errorf(err, "models: '%s' is %s (ntk, ntk-xent, ntk-ridge, ntk-sgd, p16, "
                       "p16-xent, p16-ridge, factorized-sgd, network)", items[i],
                       k == NMODELS ? "not a model" : "listed twice");
            e = ATF_E_USAGE;
        } else {
            *models |= MODELS[k].flag;
        }
    }
    return e;
}

static int samples_is_sgd(method_kind k)
{
    return k == KIND_NTK_SGD || k == KIND_FACTORIZED_SGD || k == KIND_NETWORK;
}

/* The kinds with one model per problem (16) variant. */
static int per_variant(method_kind k)
{
    return k == KIND_P16 || k == KIND_P16_XENT || k == KIND_P16_RIDGE;
}

/* One method per problem (16) variant of a kind ("p16" or "p16:SPEC" with several; p16-xent's
 * own variants when given; p16-ridge has p16's). */
static int list_variants(const samples_plan *pl, int model, method *m)
{
    int xent = MODELS[model].kind == KIND_P16_XENT;
    int ridge = MODELS[model].kind == KIND_P16_RIDGE;
    int nv = xent ? pl->nxent_variants : pl->nvariants;
    const char (*variants)[128] = xent ? pl->xent_variants : pl->variants;
    for (int v = 0; v < nv; v++) {
        m[v] = (method){MODELS[model].kind, variants[v], "", "", v == 0};
        if (nv == 1) {
            snprintf(m[v].name, sizeof m[v].name, "%s", MODELS[model].name);
            snprintf(m[v].label, sizeof m[v].label, "%s", MODELS[model].label);
        } else {
            snprintf(m[v].name, sizeof m[v].name, "%s:%.120s", MODELS[model].name, variants[v]);
            snprintf(m[v].label, sizeof m[v].label, "(16)%s %.120s",
                     xent ? " xent" : ridge ? " ridge" : "", variants[v]);
        }
    }
    return nv;
}

/* The methods in the order they run: the linear models first (the SGD models compare with
 * their solutions), then the trained ones. */
static int samples_list_methods(const samples_plan *pl, method *m)
{
    int n = 0;
    for (int k = 0; k < NMODELS; k++) {
        if (!(pl->cfg.models & MODELS[k].flag))
            continue;
        if (per_variant(MODELS[k].kind)) {
            n += list_variants(pl, k, m + n);
        } else {
            m[n] = (method){MODELS[k].kind, NULL, "", "", 1};
            snprintf(m[n].name, sizeof m[n].name, "%s", MODELS[k].name);
            snprintf(m[n].label, sizeof m[n].label, "%s", MODELS[k].label);
            n++;
        }
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
    cfg->checkpoint_seconds = 600.0;
    cfg->train_mlp = 1;
    cfg->models = 0; /* ntk, p16 and the network */
    cfg->xent_lambda = 1.0;
    cfg->ridge_lambda = 1.0;
    cfg->train = atf_train_default();
    cfg->train.lr = 0; /* by the initialisation */
    cfg->train.stopping = ATF_STOP_BEST_VAL; /* validation rows carved from the n examples */
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

atf_error atf_samples_set_thresholds(atf_samples_config *cfg, const char *list, char *err)
{
    double v[ATF_SAMPLES_MAXTHRESHOLDS];
    int n = 0;
    atf_error e = atf_parse_doubles(list, v, ATF_SAMPLES_MAXTHRESHOLDS, &n, "error-thresholds",
                                    err);
    for (int i = 0; !e && i < n; i++)
        if (!(v[i] > 0 && isfinite(v[i]))) { /* a level of the error ≥ 1: make_plan */
            atf_errorf(err, "error-thresholds: %g is not positive", v[i]);
            e = ATF_E_USAGE;
        }
    if (!e) {
        memcpy(cfg->thresholds, v, sizeof(double) * (size_t)n);
        cfg->nthresholds = n;
    }
    return e;
}

atf_error atf_samples_set_xent_lambdas(atf_samples_config *cfg, const char *list, char *err)
{
    return atf_exp_parse_lambdas("xent-lambdas", list, cfg->xent_lambdas, &cfg->nxent_lambdas,
                                 err);
}

atf_error atf_samples_set_ridge_lambdas(atf_samples_config *cfg, const char *list, char *err)
{
    return atf_exp_parse_lambdas("ridge-lambdas", list, cfg->ridge_lambdas, &cfg->nridge_lambdas,
                                 err);
}

atf_error atf_samples_set_xent_penalties(atf_samples_config *cfg, const char *list, char *err)
{
    int n = 0;
    const char *at = list;
    while (at) {
        const char *end = strchr(at, ';');
        size_t len = end ? (size_t)(end - at) : strlen(at);
        if (n == ATF_SAMPLES_MAXPEN || len == 0 || len >= sizeof cfg->xent_penalties[0]) {
            atf_errorf(err, "xent-penalties: %s", n == ATF_SAMPLES_MAXPEN ? "more than 8 penalties"
                       : len ? "a penalty spec is too long" : "an empty penalty spec");
            return ATF_E_USAGE;
        }
        snprintf(cfg->xent_penalties[n], sizeof cfg->xent_penalties[n], "%.*s", (int)len, at);
        if (atf_check_auto_spec(cfg->xent_penalties[n], err))
            return ATF_E_USAGE;
        n++;
        at = end ? end + 1 : NULL;
    }
    cfg->nxent_penalties = n;
    return ATF_OK;
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
    pl->nxent_variants = cfg->nxent_penalties > 0 ? cfg->nxent_penalties : pl->nvariants;
    for (int v = 0; v < pl->nxent_variants; v++)
        memcpy(pl->xent_variants[v], cfg->nxent_penalties > 0 ? cfg->xent_penalties[v]
                                                               : pl->variants[v], 128);
    return ATF_OK;
}

/* A λ grid as the rows record it, largest first ("-": no path). */
static void describe_path(samples_path_grid p, char *out, size_t len)
{
    double l[ATF_PATH_MAXLAMBDAS];
    int n = p.n;
    memcpy(l, p.values, sizeof(double) * (size_t)n);
    snprintf(out, len, n && p.per_example ? "per-example:" : n ? "" : "-");
    for (int i = 0; i < n; i++) {
        int top = i;
        for (int j = i + 1; j < n; j++)
            top = l[j] > l[top] ? j : top;
        double t = l[i];
        l[i] = l[top], l[top] = t;
        char key[32];
        atf_path_key(l[i], key, sizeof key);
        size_t at = strlen(out);
        if (at < len)
            snprintf(out + at, len - at, "%s%s", i ? "," : "", key);
    }
    size_t at = strlen(out);
    if (n && p.patience > 0 && at < len)
        snprintf(out + at, len - at, ";patience=%d", p.patience);
}

static atf_error check_sizes(const atf_samples_config *cfg, char *err)
{
    if (cfg->align_examples < 0 || cfg->interpolate_max_n < -1) {
        atf_errorf(err, "samples: the alignment examples and the largest interpolating n must "
                   "not be negative");
        return ATF_E_USAGE;
    }
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
    if (!(cfg->tol > 0) || !(cfg->auto_fraction > 0) || cfg->max_iter < 1 ||
        !(cfg->xent_lambda > 0) || !isfinite(cfg->xent_lambda) || !(cfg->ridge_lambda > 0) ||
        !isfinite(cfg->ridge_lambda)) {
        atf_errorf(err, "samples: tolerance, auto fraction, iteration limit and the "
                   "cross-entropy and ridge lambdas must be positive");
        return ATF_E_USAGE;
    }
    int pool = cfg->n_pool;
    if (cfg->train.sampling == ATF_SAMPLE_RESAMPLE && !pool &&
        !strncmp(cfg->data.source, "synthetic", 9)) {
        atf_errorf(err, "samples: resampling synthetic data needs a pool size (pool)");
        return ATF_E_USAGE;
    }
    for (int i = 0; i < cfg->nn; i++)
        if (pool > 0 && pool < cfg->ns[i] + cfg->train.n_val) {
            atf_errorf(err, "samples: a pool of %d examples cannot resample n = %d (+ %d "
                       "validation)", pool, cfg->ns[i], cfg->train.n_val);
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
    if (!cfg->models)
        cfg->models = ATF_SAMPLES_NTK | ATF_SAMPLES_P16 | (cfg->train_mlp ? ATF_SAMPLES_NETWORK : 0);
    int p16 = (cfg->models & (ATF_SAMPLES_P16 | ATF_SAMPLES_P16_XENT)) != 0;
    if (!cfg->title[0])
        snprintf(cfg->title, sizeof cfg->title, "Sample complexity on %.60s%s%.100s%s",
                 cfg->data.source, p16 ? ": NTK vs problem (16) [" : "", p16 ? cfg->penalty : "",
                 p16 ? "]" : "");
}

/* Whether the sample complexity's levels are of the relative test MSE: as asked, or (auto)
 * for the built-in regression task. Levels of the error must be under 1. */
static atf_error level_metric(const atf_samples_config *cfg, int *rel_mse, char *err)
{
    *rel_mse = cfg->threshold_metric == ATF_THRESHOLD_REL_MSE ||
               (cfg->threshold_metric == ATF_THRESHOLD_AUTO &&
                !strncmp(cfg->data.source, "synthetic", 9));
    for (int i = 0; i < cfg->nthresholds && !*rel_mse; i++)
        if (!(cfg->thresholds[i] < 1)) {
            atf_errorf(err, "error-thresholds: %g is not in (0, 1) (levels of the test error)",
                       cfg->thresholds[i]);
            return ATF_E_USAGE;
        }
    return ATF_OK;
}

static atf_error make_plan(const atf_samples_config *cfg, samples_plan *pl, char *err)
{
    pl->cfg = *cfg;
    atf_error e = check_sizes(cfg, err);
    if (!e)
        e = build_variants(cfg, pl, err);
    if (!e)
        e = level_metric(cfg, &pl->rel_mse_levels, err);
    if (!e)
        resolve_defaults(&pl->cfg);
    pl->ridge_columns = cfg->nridge_lambdas > 0;
    pl->extended = cfg->nxent_lambdas > 0 || cfg->align_examples > 0 || pl->ridge_columns;
    describe_path(samples_path_of(cfg, KIND_NTK_XENT), pl->lambda_path, sizeof pl->lambda_path);
    describe_path(samples_path_of(cfg, KIND_NTK_RIDGE), pl->ridge_lambda_path,
                  sizeof pl->ridge_lambda_path);
    return e;
}

atf_error atf_samples_check(const atf_samples_config *cfg, char *err)
{
    static samples_plan pl; /* large; the check runs once per process */
    return make_plan(cfg, &pl, err);
}

/* ---- one (n, seed) ---- */

/* The name a table written before the models had their names used for this method (problem
 * (16) was "adaptive[:SPEC]", the network "mlp"); 0 if none. */
static int legacy_name(const char *method, char *out, size_t len)
{
    if (!strncmp(method, "p16", 3) && (!method[3] || method[3] == ':'))
        snprintf(out, len, "adaptive%s", method + 3);
    else if (!strcmp(method, "network"))
        snprintf(out, len, "mlp");
    else
        return 0;
    return 1;
}

/* The keys a row of (n, seed, method) may have: under the method's name, and under its old one
 * (legacy_name); returns how many (1 or 2). */
static int row_keys(int n, uint64_t seed, const char *method, char keys[2][256])
{
    char old[180];
    samples_row_key(keys[0], sizeof keys[0], n, seed, method);
    if (!legacy_name(method, old, sizeof old))
        return 1;
    samples_row_key(keys[1], sizeof keys[1], n, seed, old);
    return 2;
}

/* 1 when the row's key is that of (n, seed, method) under the method's name or its old one. */
static int key_matches(const char *key, int n, uint64_t seed, const char *method)
{
    char keys[2][256];
    int k = row_keys(n, seed, method, keys);
    for (int i = 0; i < k; i++)
        if (!strcmp(key, keys[i]))
            return 1;
    return 0;
}

static int in_store(const atf_rowstore *st, int n, uint64_t seed, const char *method)
{
    char keys[2][256];
    int k = row_keys(n, seed, method, keys);
    for (int i = 0; i < k; i++)
        if (atf_rowstore_has(st, keys[i]))
            return 1;
    return 0;
}

/* The number of (n, seed, method) in the grid: (i·nseeds + j)·nm + k for ns[i], seeds[j] and
 * the k-th of samples_list_methods; −1 outside the grid. */
static long recorded_index(const samples_plan *pl, int n, uint64_t seed, const char *name)
{
    const atf_samples_config *cfg = &pl->cfg;
    method ms[SAMPLES_MAXMETHODS];
    int nm = samples_list_methods(pl, ms), i = 0, j = 0, k = 0;
    while (i < cfg->nn && cfg->ns[i] != n)
        i++;
    while (j < cfg->nseeds && cfg->seeds[j] != seed)
        j++;
    while (k < nm && strcmp(ms[k].name, name))
        k++;
    return i < cfg->nn && j < cfg->nseeds && k < nm ? ((long)i * cfg->nseeds + j) * nm + k : -1;
}

static int samples_recorded(const samples_state *s, int n, uint64_t seed, const char *method)
{
    if (s->done) {
        long at = recorded_index(s->plan, n, seed, method);
        if (at >= 0 && s->done[at])
            return 1;
        return s->out && in_store(s->out, n, seed, method);
    }
    return in_store(s->store, n, seed, method);
}

/* What a point needs. The penalized models (p16-xent, ntk-xent, p16-ridge, ntk-ridge) with a
 * λ path fit the first n − v examples (pt->pfit); every other linear model fits the n examples
 * (pt->prob): the NTK and interpolating problem (16) only where the point interpolates. The
 * baseline: for the NTK, and for the scale of scale=auto penalties. */
static int has_xent_models(const samples_plan *pl)
{
    return (pl->cfg.models & (ATF_SAMPLES_P16_XENT | ATF_SAMPLES_NTK_XENT)) != 0;
}

static int has_ridge_models(const samples_plan *pl)
{
    return (pl->cfg.models & (ATF_SAMPLES_P16_RIDGE | ATF_SAMPLES_NTK_RIDGE)) != 0;
}

/* Some model of the plan is on a λ path (and needs pt->pfit). */
static int needs_path_problem(const samples_plan *pl)
{
    return (pl->cfg.nxent_lambdas > 0 && has_xent_models(pl)) ||
           (pl->cfg.nridge_lambdas > 0 && has_ridge_models(pl));
}

static int interpolating_p16(const samples_plan *pl)
{
    return (pl->cfg.models & ATF_SAMPLES_P16) && pl->cfg.loss.kind == ATF_LOSS_INTERPOLATE;
}

/* Some model's penalty has scale=auto: resolved from the NTK interpolant of the n examples. */
static int has_auto_scale(const samples_plan *pl)
{
    int auto_scale = 0;
    unsigned p16 = ATF_SAMPLES_P16 | ATF_SAMPLES_P16_RIDGE;
    for (int v = 0; v < pl->nvariants; v++)
        auto_scale |= (pl->cfg.models & p16) && strstr(pl->variants[v], "scale=auto") != NULL;
    for (int v = 0; v < pl->nxent_variants; v++)
        auto_scale |= (pl->cfg.models & ATF_SAMPLES_P16_XENT) &&
                      strstr(pl->xent_variants[v], "scale=auto") != NULL;
    return auto_scale;
}

static int needs_problem(const samples_plan *pl, int interpolate)
{
    const atf_samples_config *cfg = &pl->cfg;
    int xent_whole = has_xent_models(pl) && cfg->nxent_lambdas == 0;
    int ridge_whole = has_ridge_models(pl) && cfg->nridge_lambdas == 0;
    int p16_loss = (cfg->models & ATF_SAMPLES_P16) && cfg->loss.kind != ATF_LOSS_INTERPOLATE;
    int interp = (cfg->models & ATF_SAMPLES_NTK) || interpolating_p16(pl);
    return xent_whole || ridge_whole || p16_loss ||
           ((interp || has_auto_scale(pl)) && interpolate);
}

static int needs_baseline(const samples_state *s, const point *pt)
{
    const samples_plan *pl = s->plan;
    int auto_scale = has_auto_scale(pl);
    /* a resumed point whose ntk row is recorded needs it only for scale=auto (at n = 8 000 it
     * is an hour and more of CG) */
    int ntk = (pl->cfg.models & ATF_SAMPLES_NTK) && !samples_recorded(s, pt->n, pt->seed, "ntk");
    return pt->interpolate && (ntk || auto_scale);
}

/* Whether the interpolating models run at n: n·C within the network's parameters (bound −1),
 * n within the bound (> 0), or always (0). */
static int interpolates(const atf_samples_config *cfg, int n, int C, int64_t params)
{
    if (cfg->interpolate_max_n > 0)
        return n <= cfg->interpolate_max_n;
    return cfg->interpolate_max_n == 0 || (int64_t)n * C <= params;
}

/* The task of a point: n examples, or with resampling or a given pool the whole pool (n_pool
 * rows, −1: every training example of the data set) of which the linear models (and with fixed
 * sampling every model) fit the first n. The test examples follow the training rows drawn, so a
 * given pool gives both samplings the same test set. */
static atf_error load_task(const samples_plan *pl, point *pt, atf_arch *arch, char *err)
{
    const atf_samples_config *cfg = &pl->cfg;
    atf_data_options dopt = cfg->data;
    int pooled = cfg->train.sampling == ATF_SAMPLE_RESAMPLE || cfg->n_pool != 0;
    dopt.n_train = !pooled ? pt->n : cfg->n_pool > 0 ? cfg->n_pool : 0; /* 0: all */
    dopt.seed = pt->seed;
    atf_error e = atf_task_load(&dopt, arch, &pt->task, err);
    if (!e && pt->task.train.N < pt->n) {
        atf_errorf(err, "%s: a pool of %d training examples is smaller than n = %d",
                   cfg->data.source, pt->task.train.N, pt->n);
        e = ATF_E_USAGE;
    }
    pt->fit = pt->task;
    pt->fit.train.N = pt->n;
    return e;
}

/* The problems of the λ path: the first n − v examples with the last v as their test split
 * (scored as validation), and the test examples as a problem of their own when pt->prob does
 * not carry them. */
static atf_error path_problems(const samples_plan *pl, point *pt, char *err)
{
    atf_error e = ATF_OK;
    if (needs_path_problem(pl)) {
        if (pt->n_val < 1 || pt->n_val >= pt->n) {
            atf_errorf(err, "samples: the lambda path at n = %d needs validation examples "
                       "(%d) and examples to fit", pt->n, pt->n_val);
            return ATF_E_USAGE;
        }
        atf_task view = pt->fit;
        view.train.N = pt->n - pt->n_val;
        view.test = pt->fit.train; /* the rows n − v … n − 1 of the n */
        view.test.N = pt->n_val;
        view.test.X += (size_t)(pt->n - pt->n_val) * view.test.D;
        view.test.Y += (size_t)(pt->n - pt->n_val) * view.test.C;
        if (view.test.labels)
            view.test.labels += pt->n - pt->n_val;
        e = atf_tangent_problem(pt->m0, &view, "sq", &pt->pfit, err);
    }
    if (!e && pt->prob)
        pt->test = pt->prob->test;
    else if (!e && pt->task.test.N > 0) {
        e = atf_tangent_problem_examples(pt->m0, &pt->task.test,
                                         atf_shard_chunk(pt->task.test.N), "sq", "test split",
                                         &pt->owned_test, err);
        pt->test = pt->owned_test;
    }
    if (!e && pt->test && pl->cfg.center)
        atf_problem_center(pt->owned_test ? pt->owned_test : pt->prob->test);
    if (!e && pt->pfit && pl->cfg.center) {
        atf_problem_center(pt->pfit);
        atf_problem_center(pt->pfit->test);
    }
    return e;
}

/* Task, θ0, tangent problems and NTK baseline of one (n, seed), as far as the models need
 * them. */
static atf_error build_point(samples_state *s, point *pt, char *err)
{
    const samples_plan *pl = s->plan;
    atf_arch arch = pl->cfg.arch;
    samples_show(s, pt, "features", "");
    atf_error e = load_task(pl, pt, &arch, err);
    if (!e)
        e = atf_arch_fit_task(&arch, &pt->task, err);
    if (!e)
        e = atf_mlp_create(&arch, pt->seed, &pt->m0, err);
    if (e)
        return e;
    pt->interpolate = interpolates(&pl->cfg, pt->n, pt->task.train.C, atf_mlp_nparams(pt->m0));
    pt->n_val = samples_validation_rows(&pl->cfg.train, pt->n);
    if (needs_problem(pl, pt->interpolate))
        e = atf_tangent_problem(pt->m0, &pt->fit, "sq", &pt->prob, err);
    if (!e && pt->prob && pl->cfg.center) {
        atf_problem_center(pt->prob);
        atf_problem_center(pt->prob->test);
    }
    if (!e)
        e = path_problems(pl, pt, err);
    double t0 = atf_now();
    if (!e && needs_baseline(s, pt)) /* CG at n = 8 000: two hours, with checkpoints */
        e = samples_baseline(s, pt, err);
    pt->base_seconds = atf_now() - t0;
    return e;
}

static void free_point(point *pt)
{
    atf_result_free(pt->p16[0]);
    atf_result_free(pt->p16[1]);
    atf_result_free(pt->base);
    atf_problem_free(pt->prob);
    atf_problem_free(pt->pfit);
    atf_problem_free(pt->owned_test);
    atf_mlp_free(pt->m0);
    atf_task_free(&pt->task);
}

/* The first method of a kind (NULL: none in the plan). */
static const method *first_of(const method *ms, int nm, method_kind kind)
{
    for (int k = 0; k < nm; k++)
        if (ms[k].kind == kind)
            return &ms[k];
    return NULL;
}

/* The solutions the models still to run compare with: problem (16)'s of the SGD models' loss
 * for their cosine, the first p16-xent's for the network's alignment. */
static atf_error needed_solutions(samples_state *s, point *pt, const method *ms, int nm,
                                  char *err)
{
    const atf_samples_config *cfg = &s->plan->cfg;
    int linear_sgd = 0, network = 0;
    for (int k = 0; k < nm; k++)
        if (!samples_recorded(s, pt->n, pt->seed, ms[k].name)) {
            linear_sgd |= ms[k].kind == KIND_NTK_SGD || ms[k].kind == KIND_FACTORIZED_SGD;
            network |= ms[k].kind == KIND_NETWORK && cfg->align_examples > 0;
        }
    int xent = cfg->train.loss == ATF_LOSS_XENT;
    const method *cmp = first_of(ms, nm, xent ? KIND_P16_XENT : KIND_P16);
    const method *align = first_of(ms, nm, KIND_P16_XENT);
    atf_error e = ATF_OK;
    if (linear_sgd && cmp && (xent || pt->interpolate || cfg->loss.kind != ATF_LOSS_INTERPOLATE))
        e = samples_need_p16(s, pt, cmp, err);
    if (!e && network && align)
        e = samples_need_p16(s, pt, align, err);
    return e;
}

/* The models of one (n, seed) not yet recorded, in the order of the plan. */
static atf_error run_models(samples_state *s, point *pt, const method *ms, int nm, char *err)
{
    atf_error e = ATF_OK;
    int compared = 0;
    for (int k = 0; k < nm && !e && !atf_exp_stopped(s->io); k++) {
        if (samples_recorded(s, pt->n, pt->seed, ms[k].name))
            continue;
        if (samples_is_sgd(ms[k].kind) && !compared++)
            e = needed_solutions(s, pt, ms, nm, err);
        if (e)
            break;
        if (ms[k].kind == KIND_NTK)
            e = samples_record_ntk(s, pt, err);
        else if (samples_is_sgd(ms[k].kind))
            e = samples_run_sgd(s, pt, &ms[k], err);
        else
            e = samples_run_p16(s, pt, &ms[k], err);
    }
    return e;
}

static atf_error run_point(samples_state *s, int n, uint64_t seed, char *err)
{
    method ms[SAMPLES_MAXMETHODS];
    int nm = samples_list_methods(s->plan, ms), todo = 0;
    for (int k = 0; k < nm; k++)
        todo += !samples_recorded(s, n, seed, ms[k].name);
    if (!todo)
        return ATF_OK;
    point pt;
    memset(&pt, 0, sizeof pt);
    pt.n = n;
    pt.seed = seed;
    atf_error e = build_point(s, &pt, err);
    atf_status base = pt.base ? pt.base->info.status : ATF_STATUS_SOLVED;
    if (!e && base != ATF_STATUS_SOLVED && base != ATF_STATUS_INTERRUPTED) /* no interpolant */
        s->status = base;
    else if (!e && base == ATF_STATUS_SOLVED) /* interrupted: the stop flag ends the run */
        e = run_models(s, &pt, ms, nm, err);
    int complete = !e && !atf_exp_stopped(s->io);
    for (int k = 0; k < nm && complete; k++)
        complete = samples_recorded(s, n, seed, ms[k].name);
    for (int k = 0; k < nm && complete; k++) /* the point is done: its solutions are not needed */
        if (ms[k].first && (ms[k].kind == KIND_P16 || ms[k].kind == KIND_P16_XENT))
            samples_drop_solution(s, &pt, &ms[k]);
    free_point(&pt);
    return atf_exp_stopped(s->io) ? ATF_OK : e; /* what failed because of the stop is no error */
}

/* ---- summary: mean ± std over seeds for every (n, method) ---- */

/* The per-row numbers summarised; γ comes from the recorded penalty, the rest from columns. */
enum { MET_ERROR, MET_MSE, MET_XENT, MET_EPOCH, MET_SECONDS, MET_GAMMA, NMET };
static const char *const MET_COLUMN[NMET] = {"test_error", "test_rel_mse", "test_xent",
                                             "selected_epoch", "seconds", NULL};

typedef struct {
    int nm, nn;                /* the methods; the sizes: the grid's and those of recorded rows */
    method m[SAMPLES_MAXMETHODS];
    double mean[ATF_SAMPLES_MAXN][SAMPLES_MAXMETHODS][NMET];
    double sd[ATF_SAMPLES_MAXN][SAMPLES_MAXMETHODS][NMET];
    int count[ATF_SAMPLES_MAXN][SAMPLES_MAXMETHODS];
    char statuses[ATF_SAMPLES_MAXN][SAMPLES_MAXMETHODS][64]; /* e.g. "solved 4; max_iterations 1" */
    double n[ATF_SAMPLES_MAXN];
    int xent; /* the second metric shown is the test cross-entropy (else the relative MSE) */
} summary;

/* The γ a row's problem (16) was solved with (its recorded, resolved penalty); NaN if none. */
static double row_gamma(const atf_row *row)
{
    atf_penalty pen;
    const char *spec = atf_row_get(row, "penalty");
    return spec && !atf_penalty_parse(spec, &pen, NULL) ? pen.w1.scale : NAN;
}

static double row_metric(const atf_row *row, int k)
{
    if (k == MET_GAMMA)
        return row_gamma(row);
    double v = atf_row_getnum(row, MET_COLUMN[k]);
    return k == MET_EPOCH && v < 0 ? NAN : v; /* −1: not a model trained by gradient descent */
}

/* The metrics of the recorded rows of one (n, method), whatever their seed (the runs of
 * another grid on the same table count too): v[metric][run]. A `skipped` row has none. */
static int collect(const atf_rowstore *st, int n, const char *method,
                   double v[NMET][ATF_SAMPLES_MAXSEEDS])
{
    int c = 0;
    for (int r = 0; r < atf_rowstore_count(st) && c < ATF_SAMPLES_MAXSEEDS; r++) {
        const atf_row *row = atf_rowstore_row(st, r);
        const char *status = atf_row_get(row, "status");
        if (atf_row_getnum(row, "n") != n || (status && !strcmp(status, "skipped")) ||
            !key_matches(atf_row_get(row, "key"), n, (uint64_t)atf_row_getnum(row, "seed"),
                         method))
            continue;
        for (int k = 0; k < NMET; k++)
            v[k][c] = row_metric(row, k);
        c++;
    }
    return c;
}

/* "status k; …" over the recorded rows of one (n, method), skipped ones included. */
static void count_statuses(const atf_rowstore *st, int n, const char *method, char *out,
                           size_t len)
{
    char names[8][32];
    int counts[8], kinds = 0;
    for (int r = 0; r < atf_rowstore_count(st); r++) {
        const atf_row *row = atf_rowstore_row(st, r);
        const char *status = atf_row_get(row, "status");
        if (!status || atf_row_getnum(row, "n") != n ||
            !key_matches(atf_row_get(row, "key"), n, (uint64_t)atf_row_getnum(row, "seed"),
                         method))
            continue;
        int k = 0;
        while (k < kinds && strcmp(names[k], status))
            k++;
        if (k == kinds && kinds < 8) {
            snprintf(names[kinds], sizeof names[kinds], "%s", status);
            counts[kinds++] = 0;
        }
        counts[k < 8 ? k : 7]++;
    }
    out[0] = '\0';
    for (int k = 0; k < kinds; k++) {
        size_t at = strlen(out);
        snprintf(out + at, len - at, "%s%s %d", k ? "; " : "", names[k], counts[k]);
    }
}

/* The sizes summarised, ascending: the grid's and those of the plan's models' recorded rows
 * (one table may hold several runs' grids, e.g. more seeds at the smaller n). */
static int summary_sizes(const atf_samples_config *cfg, const atf_rowstore *st,
                         const method *ms, int nm, double *n)
{
    int nn = 0;
    for (int i = 0; i < cfg->nn; i++)
        n[nn++] = cfg->ns[i];
    for (int r = 0; r < atf_rowstore_count(st) && nn < ATF_SAMPLES_MAXN; r++) {
        const atf_row *row = atf_rowstore_row(st, r);
        const char *method = atf_row_get(row, "method");
        double x = atf_row_getnum(row, "n");
        int known = 0, ours = 0;
        for (int i = 0; i < nn; i++)
            known |= n[i] == x;
        for (int k = 0; method && k < nm; k++)
            ours |= !strcmp(ms[k].name, method);
        if (!known && ours && x >= 2)
            n[nn++] = x;
    }
    for (int i = 1; i < nn; i++)
        for (int j = i; j > 0 && n[j] < n[j - 1]; j--) {
            double t = n[j];
            n[j] = n[j - 1], n[j - 1] = t;
        }
    return nn;
}

/* The second panel shows the test cross-entropy when some model is trained by or solved with
 * the cross-entropy (and the rows have it: the classes are known). */
static int shows_xent(const samples_plan *pl)
{
    const atf_samples_config *cfg = &pl->cfg;
    return (cfg->models & (ATF_SAMPLES_P16_XENT | ATF_SAMPLES_NTK_XENT)) ||
           ((cfg->models & (ATF_SAMPLES_NTK_SGD | ATF_SAMPLES_FACTORIZED_SGD |
                            ATF_SAMPLES_NETWORK)) && cfg->train.loss == ATF_LOSS_XENT);
}

static void summarize(const samples_plan *pl, const atf_rowstore *st, summary *sm)
{
    const atf_samples_config *cfg = &pl->cfg;
    memset(sm, 0, sizeof *sm);
    sm->nm = samples_list_methods(pl, sm->m);
    sm->nn = summary_sizes(cfg, st, sm->m, sm->nm, sm->n);
    int any_xent = 0;
    for (int i = 0; i < sm->nn; i++) {
        for (int k = 0; k < sm->nm; k++) {
            double v[NMET][ATF_SAMPLES_MAXSEEDS];
            int c = collect(st, (int)sm->n[i], sm->m[k].name, v);
            sm->count[i][k] = c;
            count_statuses(st, (int)sm->n[i], sm->m[k].name, sm->statuses[i][k],
                           sizeof sm->statuses[i][k]);
            for (int j = 0; j < NMET; j++)
                atf_mean_std(v[j], c, &sm->mean[i][k][j], &sm->sd[i][k][j]);
            if (!sm->m[k].spec || !strstr(sm->m[k].spec, "scale=auto"))
                sm->mean[i][k][MET_GAMMA] = NAN;
            any_xent |= isfinite(sm->mean[i][k][MET_XENT]);
        }
    }
    sm->xent = any_xent && shows_xent(pl);
}

static atf_error write_summary(const atf_samples_config *cfg, const summary *sm, char *err)
{
    /* a line: the method (≤ 159 characters, ≤ 320 quoted), 9 numbers, separators */
    char *text = malloc(256 + (size_t)sm->nn * sm->nm * 720), path[1100];
    if (!text) {
        atf_errorf(err, "out of memory");
        return ATF_E_NOMEM;
    }
    int len = sprintf(text, "n,method,runs,test_error_mean,test_error_std,test_rel_mse_mean,"
                            "test_rel_mse_std,test_xent_mean,test_xent_std,"
                            "selected_epoch_mean,seconds_mean,statuses\n");
    for (int i = 0; i < sm->nn; i++)
        for (int k = 0; k < sm->nm; k++) {
            char method[2 * sizeof sm->m[k].name + 3];
            const double *mu = sm->mean[i][k], *sd = sm->sd[i][k];
            atf_csv_field(sm->m[k].name, method, sizeof method);
            char statuses[2 * sizeof sm->statuses[i][k] + 3];
            atf_csv_field(sm->statuses[i][k][0] ? sm->statuses[i][k] : "-", statuses,
                          sizeof statuses);
            len += sprintf(text + len, "%d,%s,%d,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.4g,%.4g,%s\n",
                           (int)sm->n[i], method, sm->count[i][k], mu[MET_ERROR], sd[MET_ERROR],
                           mu[MET_MSE], sd[MET_MSE], mu[MET_XENT], sd[MET_XENT],
                           mu[MET_EPOCH], mu[MET_SECONDS], statuses);
        }
    atf_error e = atf_exp_path(path, sizeof path, cfg->out, "samples_summary.csv", err);
    if (!e)
        e = atf_write_text_atomic(path, text, strlen(text), err);
    free(text);
    return e;
}

/* Markdown table: one error and one relative-MSE (or cross-entropy) column per model. */
static void print_table(const summary *sm, int nn, FILE *f)
{
    int second = sm->xent ? MET_XENT : MET_MSE;
    fprintf(f, "| n |");
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < sm->nm; k++)
            fprintf(f, " %s %s |", sm->m[k].name,
                    !pass ? "error" : sm->xent ? "test xent" : "rel. MSE");
    fprintf(f, " seeds |\n|---|");
    for (int k = 0; k < 2 * sm->nm; k++)
        fprintf(f, "---|");
    fprintf(f, "---|\n");
    for (int i = 0; i < nn; i++) {
        fprintf(f, "| %d |", (int)sm->n[i]);
        for (int pass = 0; pass < 2; pass++)
            for (int k = 0; k < sm->nm; k++) {
                int j = pass ? second : MET_ERROR;
                fprintf(f, " %.4f ± %.4f |", sm->mean[i][k][j], sm->sd[i][k][j]);
            }
        int seeds = 0; /* the most runs of a model at this n (a skipped model has none) */
        for (int k = 0; k < sm->nm; k++)
            seeds = sm->count[i][k] > seeds ? sm->count[i][k] : seeds;
        fprintf(f, " %d |\n", seeds);
    }
}

/* The JSON summary line: files, and the errors at the largest n. */
static void print_json(const atf_samples_config *cfg, const summary *sm, int rows, FILE *f)
{
    atf_row sum;
    char path[1200];
    int last = sm->nn - 1;
    atf_row_clear(&sum);
    atf_row_str(&sum, "status", "done");
    atf_row_int(&sum, "rows", rows);
    snprintf(path, sizeof path, "%s/samples.csv", cfg->out);
    atf_row_str(&sum, "csv", path);
    snprintf(path, sizeof path, "%s/samples_summary.csv", cfg->out);
    atf_row_str(&sum, "summary", path);
    snprintf(path, sizeof path, "%s/samples.svg", cfg->out);
    atf_row_str(&sum, "figure", path);
    atf_row_int(&sum, "largest_n", (long)sm->n[last]);
    for (int k = 0; k < sm->nm; k++) {
        char name[ATF_ROW_NAMELEN];
        snprintf(name, sizeof name, "%.38s_error", sm->m[k].name);
        atf_row_num(&sum, name, sm->mean[last][k][MET_ERROR]);
        snprintf(name, sizeof name, "%.38s_rel_mse", sm->m[k].name);
        atf_row_num(&sum, name, sm->mean[last][k][MET_MSE]);
        if (sm->xent) {
            snprintf(name, sizeof name, "%.38s_xent", sm->m[k].name);
            atf_row_num(&sum, name, sm->mean[last][k][MET_XENT]);
        }
    }
    char *line = atf_row_json_line(&sum);
    if (line)
        fputs(line, f);
    free(line);
}

/* ---- figure: test error and relative MSE (or cross-entropy) against n, a series per model ---- */

typedef struct {
    double mean[2][SAMPLES_MAXMETHODS][ATF_SAMPLES_MAXN], sd[2][SAMPLES_MAXMETHODS][ATF_SAMPLES_MAXN];
} series_data;

static void fill_series_data(const summary *sm, int nn, series_data *d)
{
    int metric[2] = {MET_ERROR, sm->xent ? MET_XENT : MET_MSE};
    for (int p = 0; p < 2; p++)
        for (int k = 0; k < sm->nm; k++)
            for (int i = 0; i < nn; i++) {
                d->mean[p][k][i] = sm->mean[i][k][metric[p]];
                d->sd[p][k][i] = sm->sd[i][k][metric[p]];
            }
}

/* The points of scale=auto models say which γ they resolved to (mean over seeds): notes on
 * the test-error panel. */
static void gamma_notes(const summary *sm, int nn, const series_data *d, atf_plot_panel *pl)
{
    static char text[ATF_PLOT_MAXNOTES][32];
    for (int k = 0; k < sm->nm; k++)
        for (int i = 0; i < nn && pl->nnotes < ATF_PLOT_MAXNOTES; i++)
            if (isfinite(sm->mean[i][k][MET_GAMMA])) {
                snprintf(text[pl->nnotes], sizeof text[0], "γ=%.2g", sm->mean[i][k][MET_GAMMA]);
                pl->notes[pl->nnotes] =
                    (atf_plot_note){sm->n[i], d->mean[0][k][i], text[pl->nnotes]};
                pl->nnotes++;
            }
}

static atf_error samples_figure(const atf_samples_config *cfg, int stacked, const summary *sm,
                                char *err)
{
    static series_data d;
    fill_series_data(sm, sm->nn, &d);
    atf_plot_panel panels[2];
    memset(panels, 0, sizeof panels);
    int labelled = strncmp(cfg->data.source, "synthetic", 9) != 0;
    const char *ylab[2] = {"test error", sm->xent ? "test cross-entropy" : "relative test MSE"};
    const char *titles[2] = {labelled ? "test classification error (mean, band ± std over seeds)"
                                      : "sign error of the regression (mean, band ± std)",
                             sm->xent ? "mean test cross-entropy (mean, band ± std over seeds)"
                                      : "test MSE / Var(y) (mean, band ± std over seeds)"};
    for (int p = 0; p < 2; p++) {
        atf_plot_panel *pl = &panels[p];
        *pl = (atf_plot_panel){.kind = ATF_PANEL_LINES, .title = titles[p],
                               .xlabel = "training examples n", .ylabel = ylab[p], .logx = 1,
                               .logy = 1, .legend = ATF_LEGEND_AUTO};
        for (int k = 0; k < sm->nm && k < ATF_PLOT_MAXSERIES; k++) {
            /* fixed features dashed, adaptive ones and the network solid: the comparison */
            method_kind kd = sm->m[k].kind;
            int fixed = samples_is_fixed(kd);
            pl->series[pl->nseries++] = (atf_plot_series){
                sm->m[k].label, sm->n, d.mean[p][k], d.sd[p][k], sm->nn, k % 8,
                fixed ? 1 : k / 8 ? 2 : 0, 1 + k % 5, 0, 1}; /* the seeds' spread as a band */
        }
    }
    gamma_notes(sm, sm->nn, &d, &panels[0]);
    /* many models (the scale axis): panels stacked, full width, so the legend fits */
    atf_plot_figure fig = {cfg->title, stacked ? 1 : 2, stacked ? 2 : 1, stacked ? 1300 : 1500,
                           stacked ? 1250 : 620, 2, panels, 0};
    char base[1100];
    atf_error e = atf_exp_path(base, sizeof base, cfg->out, "samples", err);
    return e ? e : atf_plot_save(&fig, base, err);
}

/* ---- the run ---- */

/* What a recorded row says its model did, against what this run would do: the same loss and,
 * for the models trained by gradient descent, the same trainer and protocol. */
static void expected_labels(const samples_plan *pl, method_kind kind, char *loss, char *trainer,
                            char *protocol, size_t len)
{
    const atf_samples_config *cfg = &pl->cfg;
    const atf_train_settings *t = &cfg->train;
    trainer[0] = protocol[0] = '\0';
    if (kind == KIND_NTK) {
        snprintf(loss, len, "interpolate");
    } else if (samples_on_path(cfg, kind)) {
        loss[0] = '\0'; /* λ is the path's choice: the path is checked (lambda_path) */
    } else if (kind == KIND_P16 || samples_is_xent(kind) || samples_is_ridge(kind)) {
        atf_loss l = samples_model_loss(cfg, kind, samples_path_of(cfg, kind).single);
        atf_loss_format(&l, loss, len);
    } else {
        snprintf(loss, len, "%s", atf_loss_name(t->loss));
        samples_trainer_label(t, trainer, len);
        snprintf(protocol, len, "%s/%s/", atf_sampling_name(t->sampling),
                 atf_stopping_name(t->stopping));
    }
}

static int in_grid(const atf_samples_config *cfg, double n)
{
    for (int i = 0; i < cfg->nn; i++)
        if (cfg->ns[i] == n)
            return 1;
    return 0;
}

/* The plan's model whose row this is (under its name or its old one); NULL: another model's. */
static const method *row_method(const method *ms, int nm, const atf_row *row)
{
    const char *key = atf_row_get(row, "key");
    for (int k = 0; key && k < nm; k++)
        if (key_matches(key, (int)atf_row_getnum(row, "n"),
                        (uint64_t)atf_row_getnum(row, "seed"), ms[k].name))
            return &ms[k];
    return NULL;
}

/* A table resumed must have been written by the same models: ATF_E_USAGE naming the table, the
 * row and both labels otherwise. Only the rows of this grid's sizes and models are this run's
 * to check: one table may gather runs of other sizes with other settings (a smaller batch at
 * the smallest n, another epoch cap at the largest) and of other models (a trainer of their
 * own), each row saying what it did. */
static atf_error check_table(const samples_plan *pl, const atf_rowstore *st, const char *table,
                             char *err)
{
    if (pl->cfg.report_only)
        return ATF_OK; /* nothing runs: nothing to mix */
    method ms[SAMPLES_MAXMETHODS];
    int nm = samples_list_methods(pl, ms);
    for (int i = 0; i < atf_rowstore_count(st); i++) {
        const atf_row *row = atf_rowstore_row(st, i);
        const method *m;
        const char *got[4];
        char want[4][ATF_ROW_VALUELEN];
        if (!atf_row_get(row, "method") || !in_grid(&pl->cfg, atf_row_getnum(row, "n")) ||
            !(m = row_method(ms, nm, row)))
            continue; /* another model's row: not this run's */
        expected_labels(pl, m->kind, want[0], want[1], want[2], sizeof want[0]);
        /* the penalized models' λ path (a table written without one has no such column) */
        snprintf(want[3], sizeof want[3], "%s", samples_lambda_path(pl, m->kind));
        int on_path = samples_on_path(&pl->cfg, m->kind);
        const char *what[4] = {"loss", "trainer", "protocol", "lambda_path"};
        for (int k = 0; k < 4; k++) {
            got[k] = atf_row_get(row, what[k]);
            if (k == 3 && !got[k] && on_path)
                got[k] = "-"; /* written without the path's columns */
            if (!got[k] || !want[k][0] || (k < 3 && !strcmp(got[k], "-")))
                continue;
            /* the protocol's validation count depends on n: its prefix must match */
            int differs = k == 2 ? strncmp(got[k], want[k], strlen(want[k]))
                                 : strcmp(got[k], want[k]);
            if (differs) {
                atf_errorf(err, "%s: row %s has %s %s, but this run's is %s (use another output "
                           "directory)", table, atf_row_get(row, "key"), what[k], got[k],
                           want[k]);
                return ATF_E_USAGE;
            }
        }
    }
    return ATF_OK;
}


/* Whether point (i, j) of the grid is this process's: with ranks the points are dealt in turn. */
static int own_point(const samples_state *s, int i, int j)
{
    const atf_exp_ranks *rk = s->io->ranks;
    return !rk || (i * s->plan->cfg.nseeds + j) % rk->size == rk->rank;
}

/* The runs of this process's points (*total) and how many of them are recorded. */
static int count_recorded(const samples_state *s, int *total)
{
    const atf_samples_config *cfg = &s->plan->cfg;
    method ms[SAMPLES_MAXMETHODS];
    int nm = samples_list_methods(s->plan, ms), done = 0;
    *total = 0;
    for (int i = 0; i < cfg->nn; i++)
        for (int j = 0; j < cfg->nseeds; j++)
            for (int k = 0; k < nm && own_point(s, i, j); k++) {
                done += samples_recorded(s, cfg->ns[i], cfg->seeds[j], ms[k].name);
                ++*total;
            }
    return done;
}

static atf_error run_grid(samples_state *s, char *err)
{
    const atf_samples_config *cfg = &s->plan->cfg;
    int total, done = count_recorded(s, &total);
    atf_progress_start(s->prog, s->io->progress, total, done);
    atf_error e = ATF_OK;
    for (int i = 0; !e && i < cfg->nn; i++)
        for (int j = 0; !e && j < cfg->nseeds && !atf_exp_stopped(s->io) &&
                        s->status == ATF_STATUS_SOLVED; j++)
            if (own_point(s, i, j))
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
        e = samples_figure(cfg, sm.nm > 4, &sm, err);
    if (e)
        return e;
    if (s->io->report && s->io->json)
        print_json(cfg, &sm, atf_rowstore_count(s->store), s->io->report);
    else if (s->io->report)
        print_table(&sm, sm.nn, s->io->report);
    e = samples_report(s->plan, s->store, sm.m, sm.nm, sm.n, sm.nn,
                       s->io->json ? NULL : s->io->report, err);
    if (e)
        return e;
    atf_exp_note(s->io, "rows in %s/samples.csv, summary in %s/samples_summary.csv, figure "
                "%s/samples.svg\n", cfg->out, cfg->out, cfg->out);
    return ATF_OK;
}

/* ---- one run shared by several processes (io.ranks; internal/rowstore_ranks.h) ----
 * The points (n, seed) are dealt in turn (own_point); each process appends its rows to its own
 * part table OUT/samples.part-R.{csv,jsonl}, and rank 0 moves them into OUT/samples.{csv,jsonl}
 * in the grid's order (recorded_index) when every process is done, or stopped. A run killed
 * before that leaves the part tables: the next run moves their rows in first, whatever the
 * number of processes, so no finished row is lost or written twice. */

/* The grid row of a key, as recorded_index numbers them; −1 outside the grid. The old names of
 * the models (legacy_name) stand for today's. */
static long samples_key_index(void *ctx, const char *key)
{
    const samples_plan *pl = ctx;
    int n, at = 0;
    unsigned long long seed;
    if (sscanf(key, "n=%d|seed=%llu|%n", &n, &seed, &at) != 2 || !at)
        return -1;
    const char *m = key + at;
    char name[200];
    if (!strncmp(m, "adaptive", 8) && (!m[8] || m[8] == ':'))
        snprintf(name, sizeof name, "p16%.190s", m + 8);
    else
        snprintf(name, sizeof name, "%.190s", strcmp(m, "mlp") ? m : "network");
    return key_matches(key, n, seed, name) ? recorded_index(pl, n, seed, name) : -1;
}

static atf_error samples_check_table(void *ctx, const atf_rowstore *st, const char *table,
                                     char *err)
{
    return check_table(ctx, st, table, err);
}

/* --solver-log: the file the solves' iteration tables are appended to (line-buffered, so that
 * a long solve can be followed as it runs). */
static atf_error open_solver_log(samples_state *s, char *err)
{
    const char *path = s->plan->cfg.solver_log;
    if (!path[0])
        return ATF_OK;
    if (!(s->solver_log = fopen(path, "a"))) {
        atf_errorf(err, "--solver-log: %.900s: %s", path, strerror(errno));
        return ATF_E_IO;
    }
    setvbuf(s->solver_log, NULL, _IOLBF, 0);
    return ATF_OK;
}

/* Alone, or as one of several processes (rank 0 reports the shared run): rank 0 opens and
 * checks the table, moves what earlier runs left in part tables and tells every process which
 * runs are recorded; each runs its points; when all are done (or stopped) rank 0 moves the rows
 * in. A failure of this process returns at once (the caller ends the whole job with its
 * message); rank 0's failure before the start is every process's (the others return it with
 * err ""). */
atf_error atf_samples_run(const atf_samples_config *config, atf_exp_outcome *outcome, char *err)
{
    static samples_plan plan; /* large (the configuration and its variants) */
    char csv[1100];
    memset(outcome, 0, sizeof *outcome);
    atf_error e = make_plan(config, &plan, err);
    if (!e)
        e = atf_exp_path(csv, sizeof csv, config->out, "samples.csv", err);
    if (!e)
        e = atf_mkdir_p(config->out, err);
    method ms[SAMPLES_MAXMETHODS];
    int nm = e ? 0 : samples_list_methods(&plan, ms);
    exp_grid g = {config->out, "samples", (long)plan.cfg.nn * plan.cfg.nseeds * nm,
                  samples_key_index, samples_check_table, &plan};
    exp_shared sh;
    e = exp_shared_open(&sh, &g, config->io.ranks, e, err);
    /* a run with a λ path's columns may resume a table written without them, and the other
     * way round (rowstore.h): the steps of one study write one table */
    if (!e && sh.store)
        atf_rowstore_take_new_columns(sh.store);
    if (!e && sh.out && sh.out != sh.store)
        atf_rowstore_take_new_columns(sh.out);
    atf_progress prog;
    samples_state s = {.plan = &plan, .io = &config->io, .store = sh.store, .out = sh.out,
                       .done = sh.done, .prog = &prog, .status = ATF_STATUS_SOLVED};
    if (!e && !plan.cfg.report_only && (!sh.ranks || sh.ranks->rank == 0))
        e = open_solver_log(&s, err);
    if (!e && !plan.cfg.report_only)
        e = run_grid(&s, err);
    if (s.solver_log)
        fclose(s.solver_log);
    int stopped = atf_exp_stopped(s.io);
    if (!e) {
        int end[2] = {stopped, s.status != ATF_STATUS_SOLVED ? (int)s.status : 0};
        e = exp_shared_end(&sh, &g, end, 2, err);
        s.out = sh.out;
        stopped = end[0];
        if (end[1])
            s.status = (atf_status)end[1];
    }
    if (!e && sh.ranks && sh.ranks->rank != 0) { /* rank 0 reports the shared run */
        outcome->status = s.status != ATF_STATUS_SOLVED ? s.status
                          : stopped ? ATF_STATUS_INTERRUPTED : ATF_STATUS_SOLVED;
        err[0] = '\0';
    } else if (!e && s.status != ATF_STATUS_SOLVED) {
        outcome->status = s.status;
        if (!err[0])
            atf_errorf(err, "the NTK baseline is %s: no model interpolates",
                       atf_status_name(s.status));
    } else if (!e && stopped) {
        outcome->status = ATF_STATUS_INTERRUPTED;
        atf_errorf(err, "interrupted: %d rows recorded in %.300s; re-run the same command to "
                   "resume", atf_rowstore_count(s.store), csv);
    } else if (!e) {
        e = finish(&s, err);
    }
    outcome->rows = sh.store ? atf_rowstore_count(sh.store) : 0;
    outcome->new_rows = exp_shared_added(&sh, s.new_rows);
    exp_shared_close(&sh);
    return e;
}
