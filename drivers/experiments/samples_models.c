/* samples_models.c — the models of the samples experiment on one (n, seed) point, each recorded
 * as one row: the NTK baseline, problem (16) solved exactly or with the penalized cross-entropy
 * loss, and the models trained by gradient descent from the same θ0 (atf_train.h) with the
 * configured protocol. Every row has the same columns (samples_base_row); a model leaves the
 * ones that do not apply to it at "-" or NaN. This file also holds the rows themselves (key,
 * columns, append, progress line): experiment_samples.c calls into it, never the other way. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf_penalty.h"
#include "internal/samples_internal.h"

/* ---- rows ---- */

void samples_row_key(char *key, size_t len, int n, uint64_t seed, const char *method)
{
    snprintf(key, len, "n=%d|seed=%llu|%s", n, (unsigned long long)seed, method);
}

void samples_base_row(atf_row *row, int n, uint64_t seed, const char *method,
                      const char *penalty)
{
    char key[256];
    samples_row_key(key, sizeof key, n, seed, method);
    atf_row_clear(row);
    atf_row_str(row, "key", key);
    atf_row_int(row, "n", n);
    atf_row_int(row, "seed", (long)seed);
    atf_row_str(row, "method", method);
    atf_row_str(row, "penalty", penalty);
    atf_row_str(row, "loss", "-");
    atf_row_str(row, "status", "-");
    static const char *numbers[] = {"test_error", "test_rel_mse", "test_xent", "train_residual"};
    for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++)
        atf_row_num(row, numbers[i], NAN);
    atf_row_int(row, "iterations", 0);
    atf_row_num(row, "objective", NAN);
    atf_row_num(row, "stationarity", NAN);
    atf_row_num(row, "seconds", NAN);
    atf_row_int(row, "selected_epoch", -1); /* models trained by gradient descent only */
    atf_row_str(row, "protocol", "-");
    atf_row_str(row, "trainer", "-");
    atf_row_num(row, "cos_p16", NAN);        /* cosine of B with problem (16)'s solution */
    atf_row_num(row, "omega_balanced", NAN); /* factorised model: Σ ω̃(σ(B)), balanced */
    atf_row_num(row, "drift", NAN);          /* factorised model: conservation drift */
}

atf_error samples_append(samples_state *s, const atf_row *row, char *err)
{
    atf_error e = atf_rowstore_append(s->out, row, err);
    s->new_rows += !e;
    atf_progress_step(s->prog);
    return e;
}

void samples_show(samples_state *s, const point *pt, const char *what, const char *detail)
{
    char line[240];
    snprintf(line, sizeof line, "n=%d seed=%llu: %s%.120s", pt->n, (unsigned long long)pt->seed,
             what, detail);
    atf_progress_show(s->prog, line);
}

static void score_fields(atf_row *row, const atf_test_metrics *tm)
{
    atf_row_num(row, "test_error", tm->error);
    atf_row_num(row, "test_rel_mse", tm->rel_mse);
    atf_row_num(row, "test_xent", tm->xent);
}

/* ---- the linear models: NTK baseline and problem (16) ---- */

static atf_error record_solution(samples_state *s, const point *pt, const atf_result *res,
                                 const char *method, const char *penalty, double secs, char *err)
{
    atf_test_metrics tm;
    atf_error e = atf_result_test_metrics(pt->prob, res, &tm, err);
    if (e)
        return e;
    atf_row row;
    samples_base_row(&row, pt->n, pt->seed, method, penalty);
    atf_row_str(&row, "loss", res->loss[0] ? res->loss : "interpolate");
    atf_row_str(&row, "status", atf_status_name(res->info.status));
    score_fields(&row, &tm);
    atf_row_num(&row, "train_residual", res->info.constraint_residual);
    atf_row_int(&row, "iterations", res->info.iterations);
    atf_row_num(&row, "objective", res->info.objective);
    atf_row_num(&row, "stationarity", res->info.stationarity);
    atf_row_num(&row, "seconds", secs);
    return samples_append(s, &row, err);
}

atf_error samples_record_ntk(samples_state *s, const point *pt, char *err)
{
    return record_solution(s, pt, pt->base, "ntk", "-", pt->base_seconds, err);
}

/* The loss of a problem (16) model: the configuration's (p16) or cross-entropy (p16-xent). */
static atf_loss p16_loss(const atf_samples_config *cfg, method_kind kind)
{
    if (kind == KIND_P16)
        return cfg->loss;
    return (atf_loss){ATF_LOSS_XENT, cfg->xent_lambda};
}

atf_error samples_run_p16(samples_state *s, point *pt, const method *m, char *err)
{
    const atf_samples_config *cfg = &s->plan->cfg;
    char spec[256];
    double vmax = pt->base ? atf_result_max_singular(pt->base) : NAN;
    atf_error e = atf_resolve_auto_scale(m->spec, vmax, cfg->auto_fraction, spec, sizeof spec,
                                         NULL, err);
    if (!e)
        e = atf_problem_set_penalty(pt->prob, spec, err);
    if (e)
        return e;
    samples_show(s, pt, m->kind == KIND_P16 ? "problem (16) " : "problem (16) xent ", m->spec);
    atf_settings set = atf_settings_default();
    set.structure = cfg->structure;
    set.loss = p16_loss(cfg, m->kind); /* the method: auto, resolved by the solver */
    set.max_iter = cfg->max_iter;
    set.eps_rel = cfg->tol;
    atf_hooks hooks = {.interrupt = s->io->interrupt};
    atf_result *res = NULL;
    double t0 = atf_now();
    e = atf_solve(pt->prob, &set, &hooks, &res, err);
    double secs = atf_now() - t0;
    if (res && res->info.status == ATF_STATUS_INTERRUPTED)
        e = ATF_OK; /* not recorded: a re-run solves it again */
    else if (res) /* any status is a result worth a row (an iteration limit included) */
        e = record_solution(s, pt, res, m->name, spec, secs, err);
    atf_result **keep = &pt->p16[m->kind == KIND_P16_XENT];
    if (!e && res && !*keep && res->info.status != ATF_STATUS_INTERRUPTED) {
        *keep = res; /* the first solution of its kind stays for the SGD models' cosine */
        res = NULL;
    }
    atf_result_free(res);
    return e;
}

/* ---- the models trained by gradient descent ---- */

void samples_trainer_label(const atf_train_settings *t, char *buf, size_t len)
{
    snprintf(buf, len, "%s:lr=%g,batch=%d,epochs=%d,%s", atf_optimizer_name(t->optimizer), t->lr,
             t->batch, t->epochs, atf_lr_schedule_name(t->schedule));
}

static atf_model_kind model_kind(method_kind k)
{
    return k == KIND_NTK_SGD ? ATF_MODEL_LINEARIZED
         : k == KIND_FACTORIZED_SGD ? ATF_MODEL_FACTORIZED : ATF_MODEL_NETWORK;
}

/* Validation rows: the configured number, or n/10 (at least 1) for best-val stopping. */
static int validation_rows(const atf_train_settings *t, int n)
{
    if (t->n_val > 0 || t->stopping != ATF_STOP_BEST_VAL)
        return t->n_val;
    return n / 10 > 1 ? n / 10 : 1;
}

typedef struct {
    samples_state *s;
    const point *pt;
    const char *name;
} epoch_ctx;

/* Every epoch updates the progress line; progress.c decides what is written (throttled). */
static atf_error on_epoch(const atf_train_progress *p, const atf_model *m, void *ctx)
{
    (void)m;
    const epoch_ctx *c = ctx;
    char detail[160];
    snprintf(detail, sizeof detail, " epoch %d/%d, loss %.3g%s", p->epoch, p->epochs, p->loss,
             p->best_epoch > 0 ? ", selected so far: " : "");
    if (p->best_epoch > 0)
        snprintf(detail + strlen(detail), sizeof detail - strlen(detail), "%d", p->best_epoch);
    samples_show(c->s, c->pt, c->name, detail);
    return ATF_OK;
}

/* Factorised model: Σ_ℓ Σ_j ω̃(σ_j(B_ℓ)) under balanced+balanced and the largest relative drift
 * of the conserved quantities over the layers. */
static atf_error factor_fields(atf_row *row, const atf_model *m, char *err)
{
    double omega = 0.0, drift = 0.0;
    for (int l = 0; l < m->theta0->arch.L; l++) {
        atf_factor_diag d;
        atf_error e = atf_model_diagnostics(m, l, NULL, &d, err);
        if (e)
            return e;
        omega += d.omega_balanced;
        drift = fmax(drift, fmax(d.drift1, d.drift2));
        atf_factor_diag_free(&d);
    }
    atf_row_num(row, "omega_balanced", omega);
    atf_row_num(row, "drift", drift);
    return ATF_OK;
}

/* The training settings of one model at one point; *pool is the data it trains on. */
static atf_train_settings sgd_settings(const atf_samples_config *cfg, const point *pt,
                                       const atf_dataset **pool)
{
    atf_train_settings ts = cfg->train;
    ts.seed = pt->seed;
    ts.n_val = validation_rows(&cfg->train, pt->n);
    if (ts.sampling == ATF_SAMPLE_RESAMPLE) { /* a new n-subset of the whole pool per epoch */
        ts.n_train = pt->n;
        *pool = &pt->task.train;
    } else { /* the n examples every model sees, validation rows carved from them */
        ts.n_train = 0;
        *pool = &pt->fit.train;
    }
    return ts;
}

static atf_error sgd_row(samples_state *s, const point *pt, const method *m,
                         const atf_model *model, const atf_train_settings *ts,
                         const atf_train_report *rep, double secs, char *err)
{
    const atf_dataset *test = &pt->task.test;
    double *F = malloc(sizeof(double) * ((size_t)test->N * (size_t)test->C + 1));
    if (!F) {
        atf_errorf(err, "out of memory");
        return ATF_E_NOMEM;
    }
    atf_test_metrics tm = {NAN, NAN, NAN};
    atf_error e = test->N > 0 ? atf_model_forward(model, test->N, test->X, F, err) : ATF_OK;
    if (!e && test->N > 0)
        tm = atf_prediction_metrics(test->N, test->C, F, test->Y, test->labels);
    free(F);
    if (e)
        return e;
    atf_row row;
    char text[128];
    samples_base_row(&row, pt->n, pt->seed, m->name, "-");
    atf_row_str(&row, "loss", atf_loss_name(ts->loss));
    atf_row_str(&row, "status", isfinite(rep->train_loss) ? "trained" : "diverged");
    score_fields(&row, &tm);
    atf_row_num(&row, "train_residual", rep->train_loss);
    atf_row_int(&row, "iterations", rep->epochs_run);
    atf_row_num(&row, "seconds", secs);
    atf_row_int(&row, "selected_epoch", rep->selected_epoch);
    snprintf(text, sizeof text, "%s/%s/val=%d", atf_sampling_name(ts->sampling),
             atf_stopping_name(ts->stopping), rep->n_val);
    atf_row_str(&row, "protocol", text);
    samples_trainer_label(ts, text, sizeof text);
    atf_row_str(&row, "trainer", text);
    const atf_result *b16 = pt->p16[ts->loss == ATF_LOSS_XENT];
    atf_model_comparison cmp;
    if (m->kind != KIND_NETWORK && b16 &&
        !(e = atf_model_compare_result(model, b16, NULL, &cmp, err)))
        atf_row_num(&row, "cos_p16", cmp.cosine_all_bias);
    if (!e && m->kind == KIND_FACTORIZED_SGD)
        e = factor_fields(&row, model, err);
    return e ? e : samples_append(s, &row, err);
}

atf_error samples_run_sgd(samples_state *s, point *pt, const method *m, char *err)
{
    const atf_samples_config *cfg = &s->plan->cfg;
    atf_model *model = NULL;
    atf_error e = atf_model_create(model_kind(m->kind), pt->m0, &model, err);
    if (e)
        return e;
    const atf_dataset *pool;
    atf_train_settings ts = sgd_settings(cfg, pt, &pool);
    epoch_ctx ctx = {s, pt, m->name};
    ts.progress = on_epoch;
    ts.ctx = &ctx;
    ts.interrupt = s->io->interrupt;
    const atf_dataset *test = pt->task.test.N > 0 ? &pt->task.test : NULL;
    atf_train_report rep;
    memset(&rep, 0, sizeof rep);
    double t0 = atf_now();
    e = atf_model_train(model, pool, test, &ts, &rep, err);
    double secs = atf_now() - t0;
    /* stopped early: a partly trained model is no row (a re-run trains it again) */
    if (!e && !rep.interrupted && !atf_exp_stopped(s->io))
        e = sgd_row(s, pt, m, model, &ts, &rep, secs, err);
    atf_train_report_free(&rep);
    atf_model_free(model);
    return e;
}
