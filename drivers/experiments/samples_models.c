/* samples_models.c — the models of the samples experiment on one (n, seed) point, each recorded
 * as one row: the NTK baseline, problem (16) solved exactly or with the penalized cross-entropy
 * loss, and the models trained by gradient descent from the same θ0 (atf_train.h) with the
 * configured protocol. Every row has the same columns (samples_base_row); a model leaves the
 * ones that do not apply to it at "-" or NaN. This file also holds the rows themselves (key,
 * columns, append, progress line): experiment_samples.c calls into it, never the other way. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atf_kernel.h"
#include "atf_penalty.h"
#include "atf_shard.h"
#include "internal/samples_internal.h"

/* ---- rows ---- */

void samples_row_key(char *key, size_t len, int n, uint64_t seed, const char *method)
{
    snprintf(key, len, "n=%d|seed=%llu|%s", n, (unsigned long long)seed, method);
}

void samples_base_row(const samples_plan *pl, atf_row *row, int n, uint64_t seed,
                      const char *method, const char *penalty)
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
    if (!pl->extended)
        return;
    atf_row_num(row, "lambda", NAN);          /* the λ kept by the path */
    atf_row_str(row, "lambda_path", "-");     /* the path's λ grid */
    atf_row_num(row, "val_error", NAN);       /* on the validation rows: the kept λ or epoch */
    atf_row_num(row, "val_xent", NAN);
    atf_row_str(row, "path_val_xent", "-");   /* "λ:cross-entropy;…" over the path */
    if (pl->ridge_columns) {                  /* the squared-loss path's: */
        atf_row_num(row, "val_rel_mse", NAN); /* the kept λ's relative validation MSE */
        atf_row_str(row, "path_val_rel_mse", "-"); /* "λ:relative MSE;…" over the path */
    }
    atf_row_num(row, "align_k0_all", NAN);    /* the network: its final NTK against K0 and */
    atf_row_num(row, "align_adapted_all", NAN); /* against the adapted kernel, all layers,  */
    atf_row_str(row, "align_k0", "-");        /* and per layer "a1;a2;…"                    */
    atf_row_str(row, "align_adapted", "-");
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

/* A row's numbers of a solution: its status, the test metrics, the solver's figures. */
static atf_error solution_fields(const point *pt, const atf_result *res, double secs,
                                 atf_row *row, char *err)
{
    atf_test_metrics tm;
    atf_error e = atf_result_metrics_on(pt->test, res, &tm, err);
    if (e)
        return e;
    atf_row_str(row, "loss", res->loss[0] ? res->loss : "interpolate");
    atf_row_str(row, "status", atf_status_name(res->info.status));
    score_fields(row, &tm);
    atf_row_num(row, "train_residual", res->info.constraint_residual);
    atf_row_int(row, "iterations", res->info.iterations);
    atf_row_num(row, "objective", res->info.objective);
    atf_row_num(row, "stationarity", res->info.stationarity);
    atf_row_num(row, "seconds", secs);
    return ATF_OK;
}

/* The row of an interpolating model where the point does not interpolate (n·C above the
 * network's parameters, or above --interpolate-max-n): status `skipped`, no numbers. */
static atf_error record_skipped(samples_state *s, const point *pt, const char *method,
                                char *err)
{
    atf_row row;
    samples_base_row(s->plan, &row, pt->n, pt->seed, method, "-");
    atf_row_str(&row, "loss", "interpolate");
    atf_row_str(&row, "status", "skipped");
    return samples_append(s, &row, err);
}

atf_error samples_record_ntk(samples_state *s, const point *pt, char *err)
{
    if (!pt->interpolate)
        return record_skipped(s, pt, "ntk", err);
    atf_row row;
    samples_base_row(s->plan, &row, pt->n, pt->seed, "ntk", "-");
    atf_error e = solution_fields(pt, pt->base, pt->base_seconds, &row, err);
    return e ? e : samples_append(s, &row, err);
}

/* The penalty a model is solved with: ntk-xent's and ntk-ridge's `fixed`, else its variant
 * with scale=auto resolved from the NTK interpolant. */
static atf_error model_penalty(const samples_state *s, const point *pt, const method *m,
                               char *spec, size_t len, char *err)
{
    if (m->kind == KIND_NTK_XENT || m->kind == KIND_NTK_RIDGE) {
        snprintf(spec, len, "fixed");
        return ATF_OK;
    }
    double vmax = pt->base ? atf_result_max_singular(pt->base) : NAN;
    return atf_resolve_auto_scale(m->spec, vmax, s->plan->cfg.auto_fraction, spec, len, NULL,
                                  err);
}

/* The hooks of a solve that keeps its checkpoints in sink->path (NULL: none) every
 * checkpoint_seconds and goes on from the state an earlier run left there (read into from). */
static atf_error checkpoint_hooks(const atf_samples_config *cfg, atf_checkpoint_file *sink,
                                  atf_checkpoint *from, atf_hooks *hooks, char *err)
{
    if (sink->path && cfg->checkpoint_seconds >= 0.0) {
        hooks->checkpoint = atf_checkpoint_to_file, hooks->checkpoint_ctx = sink;
        hooks->checkpoint_seconds = cfg->checkpoint_seconds;
    }
    atf_error e = ATF_OK;
    if (sink->path && access(sink->path, F_OK) == 0 &&
        !(e = atf_checkpoint_read(sink->path, from, err)))
        hooks->resume = from;
    return e;
}

/* DIR/solutions/…NAME.precond.h5 beside NAME.partial.h5: the factor of the preconditioner a
 * solve with checkpoints keeps (hooks.precond_file: admm's projection by PCG), so that a
 * resumed solve reads it instead of building it again (at n = 8 000, most of an hour). */
static void precond_path(const char *partial, char *path, size_t len)
{
    size_t k = strlen(partial), tail = strlen(".partial.h5");
    if (k >= tail && !strcmp(partial + k - tail, ".partial.h5"))
        snprintf(path, len, "%.*s.precond.h5", (int)(k - tail), partial);
    else
        snprintf(path, len, "%s.precond.h5", partial);
}

/* The answer is kept: the checkpoints and the kept factor of its solve are not needed. */
static void forget_partial(const char *partial)
{
    char precond[1500];
    precond_path(partial, precond, sizeof precond);
    remove(partial);
    remove(precond);
}

/* One solve, shown on the progress line as the point's model m with detail. partial (NULL:
 * none) is the file of its checkpoints: written every checkpoint_seconds while the solve runs,
 * read back when an earlier run left one (the solve then goes on from there, to the same answer
 * bit for bit, and the progress line says so). The caller removes it once the answer is kept. */
static atf_error solve_one(samples_state *s, const point *pt, atf_problem *prob, const method *m,
                           double lambda, const char *detail, const atf_result *warm,
                           const char *partial, atf_result **res, char *err)
{
    const atf_samples_config *cfg = &s->plan->cfg;
    atf_settings set = atf_settings_default();
    set.structure = cfg->structure;
    set.loss = samples_model_loss(cfg, m->kind, lambda); /* the method: auto, resolved by the solver */
    set.max_iter = cfg->max_iter;
    set.eps_rel = cfg->tol;
    set.linsys = cfg->linsys;
    set.precond = cfg->precond;
    atf_hooks hooks = {.interrupt = s->io->interrupt, .warm = warm};
    char precond[1500];
    if (partial && cfg->checkpoint_seconds >= 0.0) {
        precond_path(partial, precond, sizeof precond);
        hooks.precond_file = precond;
    }
    atf_checkpoint_file sink = {partial, ""};
    atf_checkpoint from = {0};
    *res = NULL;
    atf_error e = checkpoint_hooks(cfg, &sink, &from, &hooks, err);
    if (e)
        return e;
    const char *resumed = hooks.resume ? ", resumed from its checkpoint" : "";
    char shown[160];
    snprintf(shown, sizeof shown, "%s%s", detail, resumed);
    samples_show(s, pt, m->name, shown);
    if (s->solver_log) {
        set.verbose = 1, set.log_every = 1;
        hooks.log = atf_exp_log_to, hooks.log_ctx = s->solver_log;
        fprintf(s->solver_log, "== n=%d seed=%llu %s, lambda %.6g%s\n", pt->n,
                (unsigned long long)pt->seed, m->name, lambda, resumed);
    }
    e = atf_solve(prob, &set, &hooks, res, err);
    if (e)
        atf_checkpoint_explain(&sink, hooks.resume != NULL, e, err);
    atf_checkpoint_free(&from);
    return e;
}

/* DIR/solutions/n=N_seed=S_METHOD.h5 (the method's characters other than letters, digits and
 * "+-.=" as "_"): the solution a later model of the point compares with. */
static atf_error solution_path(const samples_state *s, const point *pt, const char *method,
                               char *path, size_t len, char *err)
{
    char name[300];
    int k = snprintf(name, sizeof name, "solutions/n=%d_seed=%llu_", pt->n,
                     (unsigned long long)pt->seed);
    for (const char *c = method; *c && k < (int)sizeof name - 4; c++)
        name[k++] = (char)(isalnum((unsigned char)*c) || strchr("+-.=", *c) ? *c : '_');
    snprintf(name + k, sizeof name - (size_t)k, ".h5");
    return atf_exp_path(path, len, s->plan->cfg.out, name, err);
}

/* DIR/solutions/n=N_seed=S_NAME.partial.h5: the checkpoints of the solve whose answer is kept
 * as NAME (the directory made when missing). */
static atf_error partial_path(const samples_state *s, const point *pt, const char *name,
                              char *path, size_t len, char *err)
{
    char dir[1100], partial[sizeof ((method *)0)->name + 64];
    snprintf(partial, sizeof partial, "%s.partial", name);
    atf_error e = atf_exp_path(dir, sizeof dir, s->plan->cfg.out, "solutions", err);
    if (!e)
        e = atf_mkdir_p(dir, err);
    return e ? e : solution_path(s, pt, partial, path, len, err);
}

/* The point's NTK min-norm interpolant (the baseline's rule: the Gram where it fits, else CG,
 * whose LSQR solve keeps its state in DIR/solutions/n=N_seed=S_ntk.partial.h5 every
 * checkpoint_seconds and goes on from there after an interruption, to the same answer bit for
 * bit); the file goes once the solve has ended other than interrupted, unless a stop came. */
atf_error samples_baseline(samples_state *s, point *pt, char *err)
{
    const atf_samples_config *cfg = &s->plan->cfg;
    char partial[1400];
    atf_checkpoint from = {0};
    atf_checkpoint_file sink = {partial, ""};
    atf_hooks hooks = {.interrupt = s->io->interrupt};
    atf_error e = partial_path(s, pt, "ntk", partial, sizeof partial, err);
    if (!e)
        e = checkpoint_hooks(cfg, &sink, &from, &hooks, err);
    if (e)
        return e;
    char shown[96];
    snprintf(shown, sizeof shown, " (the min-norm interpolant)%s",
             hooks.resume ? ", resumed from its checkpoint" : "");
    samples_show(s, pt, "ntk", shown);
    if (s->solver_log) {
        hooks.log = atf_exp_log_to, hooks.log_ctx = s->solver_log;
        fprintf(s->solver_log, "== n=%d seed=%llu ntk%s\n", pt->n, (unsigned long long)pt->seed,
                shown);
    }
    atf_settings set = atf_settings_default();
    set.baseline = 1, set.precond = cfg->precond, set.verbose = hooks.log != NULL;
    e = atf_solve(pt->prob, &set, &hooks, &pt->base, err);
    if (e)
        atf_checkpoint_explain(&sink, hooks.resume != NULL, e, err);
    else if (pt->base->info.status != ATF_STATUS_INTERRUPTED && !atf_exp_stopped(s->io))
        forget_partial(partial); /* kept after a stop that came once the solve had ended (in its
                            certificate, say): no row is recorded then, and a re-run goes on
                            from the last state to the same answer instead of from the start */
    atf_checkpoint_free(&from);
    return e;
}

/* Writes res as DIR/solutions/n=N_seed=S_NAME.h5 (the directory made when missing). */
static atf_error write_solution(const samples_state *s, const point *pt, const char *name,
                                const atf_result *res, char *err)
{
    char path[1400], dir[1100];
    atf_error e = atf_exp_path(dir, sizeof dir, s->plan->cfg.out, "solutions", err);
    if (!e)
        e = atf_mkdir_p(dir, err);
    if (!e)
        e = solution_path(s, pt, name, path, sizeof path, err);
    return e ? e : atf_result_write(path, res, err);
}

/* The λ of the model's path from the largest down (each solve starts from the last one's
 * answer); per example, the values times the fitted examples. */
static int path_lambdas(const atf_samples_config *cfg, method_kind kind, int fitted, double *l)
{
    samples_path_grid p = samples_path_of(cfg, kind);
    int n = p.n;
    for (int i = 0; i < n; i++) { /* 14 digits: 1e-4 × 1800 is 0.18, not 0.18000000000000002 */
        char text[32];
        snprintf(text, sizeof text, "%.14g", p.values[i] * (p.per_example ? fitted : 1));
        l[i] = strtod(text, NULL);
    }
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && l[j] > l[j - 1]; j--) {
            double t = l[j];
            l[j] = l[j - 1], l[j - 1] = t;
        }
    return n;
}

/* The name of one solved λ of a path whose row is not recorded yet, for solution_path
 * (DIR/solutions/n=N_seed=S_METHOD_lambda=KEY.h5): a path interrupted between its λ resumes
 * after the last one solved. */
static void step_name(const method *m, const char *key, char *name, size_t len)
{
    snprintf(name, len, "%s_lambda=%s", m->name, key);
}

/* The path's solution at λ: read back when an earlier run solved it, else solved (from the
 * last λ's answer) and written before it is used, so that what follows is the same either way. */
static atf_error path_step(samples_state *s, point *pt, const method *m, double lambda,
                           const char *key, const char *detail, const atf_result *warm,
                           atf_result **res, char *err)
{
    char path[1400], partial[1400], name[sizeof m->name + 48];
    step_name(m, key, name, sizeof name);
    atf_error e = solution_path(s, pt, name, path, sizeof path, err);
    if (!e && access(path, F_OK) == 0)
        return atf_result_read(path, res, err);
    if (!e)
        e = partial_path(s, pt, name, partial, sizeof partial, err);
    if (!e)
        e = solve_one(s, pt, pt->pfit, m, lambda, detail, warm, partial, res, err);
    if (e || (*res)->info.status == ATF_STATUS_INTERRUPTED)
        return e;
    if (!(e = write_solution(s, pt, name, *res, err)))
        forget_partial(partial);
    return e;
}

/* Removes DIR/solutions/n=N_seed=S_NAME.h5 (absent already, or never written: nothing to do). */
static void remove_solution(const samples_state *s, const point *pt, const char *name)
{
    char path[1400], err[ATF_ERRLEN];
    if (!solution_path(s, pt, name, path, sizeof path, err))
        remove(path);
}

/* Once the row is recorded nothing reads the path's solutions again. */
static void drop_path_steps(const samples_state *s, const point *pt, const method *m)
{
    double l[ATF_PATH_MAXLAMBDAS];
    int nl = path_lambdas(&s->plan->cfg, m->kind, pt->n - pt->n_val, l);
    for (int i = 0; i < nl; i++) {
        char key[32], name[sizeof m->name + 48];
        atf_path_key(l[i], key, sizeof key);
        step_name(m, key, name, sizeof name);
        remove_solution(s, pt, name);
    }
}

typedef struct {
    double lambda;            /* the kept λ */
    atf_test_metrics val;     /* its validation scores */
    char scores[ATF_ROW_VALUELEN]; /* "λ:score;…" */
} path_choice;

/* What a path is scored by on the validation rows: its own loss — the cross-entropy, or for the
 * squared-loss models the relative MSE (the MSE over the validation targets' variance). */
static double path_score(method_kind kind, const atf_test_metrics *v)
{
    return samples_is_ridge(kind) ? v->rel_mse : v->xent;
}

/* The λ path of a penalized model on the first n − v examples: every λ solved (largest first,
 * warm-started), scored on the v validation examples (path_score); *best the solution of the
 * lowest score (ties: the larger λ, met first). An interrupted solve leaves *best NULL (nothing
 * is recorded; a re-run reads back the λ solved, path_step, and goes on). */
static atf_error run_path(samples_state *s, point *pt, const method *m, atf_result **best,
                          path_choice *pc, char *err)
{
    double l[ATF_PATH_MAXLAMBDAS];
    int nl = path_lambdas(&s->plan->cfg, m->kind, pt->n - pt->n_val, l), len = 0, stopped = 0;
    int patience = samples_path_of(&s->plan->cfg, m->kind).patience, worse = 0;
    atf_result *last = NULL;
    double best_score = INFINITY;
    *best = NULL;
    pc->scores[0] = '\0';
    atf_error e = ATF_OK;
    for (int i = 0; i < nl && !e && !stopped && !(patience > 0 && worse >= patience); i++) {
        char key[32], detail[96];
        atf_path_key(l[i], key, sizeof key);
        snprintf(detail, sizeof detail, " lambda %s (%d of %d)", key, i + 1, nl);
        atf_result *res = NULL;
        e = path_step(s, pt, m, l[i], key, detail, last, &res, err);
        if (!e && res->info.status == ATF_STATUS_INTERRUPTED) {
            stopped = 1;
            atf_result_free(res);
            break;
        }
        atf_test_metrics v = {NAN, NAN, NAN};
        if (!e)
            e = atf_result_test_metrics(pt->pfit, res, &v, err); /* its /test: validation */
        double score = path_score(m->kind, &v);
        if (!e && len < (int)sizeof pc->scores)
            len += snprintf(pc->scores + len, sizeof pc->scores - (size_t)len, "%s%s:%.4g",
                            i ? ";" : "", key, score);
        /* ownership: res becomes the last (the next warm start) and may become the best */
        atf_result *prev = last;
        last = res;
        worse = !e && score < best_score ? 0 : worse + 1;
        if (!e && score < best_score) {
            best_score = score;
            pc->lambda = l[i], pc->val = v;
            if (*best && *best != prev)
                atf_result_free(*best);
            *best = res;
        }
        if (prev && prev != *best)
            atf_result_free(prev);
    }
    if (last != *best)
        atf_result_free(last);
    if (e || stopped) { /* no row: a re-run solves the same path again, the same way */
        atf_result_free(*best);
        *best = NULL;
        return e;
    }
    if (!*best) {
        atf_errorf(err, "%s: n=%d seed=%llu: no lambda of the path gave a finite validation "
                   "%s", m->name, pt->n, (unsigned long long)pt->seed,
                   samples_is_ridge(m->kind) ? "MSE" : "cross-entropy");
        return ATF_E_NUMERICAL;
    }
    return ATF_OK;
}

/* One solve of the model: on the n examples at the configured λ, or its λ path. *res NULL:
 * interrupted. */
static atf_error solve_model(samples_state *s, point *pt, const method *m, atf_result **res,
                             path_choice *pc, char *err)
{
    char spec[256];
    atf_problem *prob = samples_on_path(&s->plan->cfg, m->kind) ? pt->pfit : pt->prob;
    atf_error e = model_penalty(s, pt, m, spec, sizeof spec, err);
    if (!e)
        e = atf_problem_set_penalty(prob, spec, err);
    if (e)
        return e;
    if (prob == pt->pfit)
        return run_path(s, pt, m, res, pc, err);
    char partial[1400];
    e = partial_path(s, pt, m->name, partial, sizeof partial, err);
    if (!e)
        e = solve_one(s, pt, prob, m, samples_path_of(&s->plan->cfg, m->kind).single, "", NULL,
                      partial, res, err);
    if (!e && *res && (*res)->info.status != ATF_STATUS_INTERRUPTED)
        forget_partial(partial); /* answered (a re-run that finds no row solves it again, the
                                    same) */
    if (*res && (*res)->info.status == ATF_STATUS_INTERRUPTED) {
        atf_result_free(*res); /* not recorded: a re-run solves it again */
        *res = NULL;
    }
    return e;
}

/* The row of a solved model (any status is a result worth a row: an iteration limit too). */
static atf_error record_model(samples_state *s, const point *pt, const method *m,
                              const atf_result *res, const path_choice *pc, double secs,
                              char *err)
{
    const atf_samples_config *cfg = &s->plan->cfg;
    atf_row row;
    samples_base_row(s->plan, &row, pt->n, pt->seed, m->name, res->blocks[0].penalty_spec);
    atf_error e = solution_fields(pt, res, secs, &row, err);
    if (e || !samples_on_path(cfg, m->kind))
        return e ? e : samples_append(s, &row, err);
    int ridge = samples_is_ridge(m->kind);
    atf_row_num(&row, "lambda", pc->lambda);
    atf_row_str(&row, "lambda_path", samples_lambda_path(s->plan, m->kind));
    atf_row_num(&row, "val_error", pc->val.error);
    atf_row_num(&row, "val_xent", pc->val.xent);
    atf_row_str(&row, ridge ? "path_val_rel_mse" : "path_val_xent", pc->scores);
    if (ridge)
        atf_row_num(&row, "val_rel_mse", pc->val.rel_mse);
    return samples_append(s, &row, err);
}

/* Which solution of the point a model's answer is kept as: the first variant of problem (16)
 * and of p16-xent (the SGD models' cosine, the network's alignment), whichever model this run
 * happens to solve first; NULL for the others, which nothing compares with. */
static atf_result **kept_slot(point *pt, const method *m)
{
    if (!m->first || (m->kind != KIND_P16 && m->kind != KIND_P16_XENT))
        return NULL;
    return &pt->p16[m->kind == KIND_P16_XENT];
}

atf_error samples_run_p16(samples_state *s, point *pt, const method *m, char *err)
{
    if (m->kind == KIND_P16 && s->plan->cfg.loss.kind == ATF_LOSS_INTERPOLATE && !pt->interpolate)
        return record_skipped(s, pt, m->name, err);
    atf_result *res = NULL;
    path_choice pc = {NAN, {NAN, NAN, NAN}, ""};
    double t0 = atf_now();
    atf_error e = solve_model(s, pt, m, &res, &pc, err);
    double secs = atf_now() - t0;
    atf_result **keep = kept_slot(pt, m);
    int kept = !e && res && keep && !*keep;
    if (kept) /* written before the row: a row's solution is always there for a re-run */
        e = write_solution(s, pt, m->name, res, err);
    if (!e && res)
        e = record_model(s, pt, m, res, &pc, secs, err);
    if (!e && res && samples_on_path(&s->plan->cfg, m->kind))
        drop_path_steps(s, pt, m);
    if (!e && kept) {
        *keep = res;
        res = NULL;
    }
    atf_result_free(res);
    return e;
}

void samples_drop_solution(const samples_state *s, const point *pt, const method *m)
{
    remove_solution(s, pt, m->name);
}

atf_error samples_need_p16(samples_state *s, point *pt, const method *m, char *err)
{
    atf_result **keep = kept_slot(pt, m);
    if (!keep || *keep)
        return ATF_OK;
    char path[1400];
    atf_error e = solution_path(s, pt, m->name, path, sizeof path, err);
    if (!e && access(path, F_OK) == 0)
        return atf_result_read(path, keep, err);
    if (e)
        return e;
    /* a table from before the solution files: solve it again, the same way */
    path_choice pc;
    e = solve_model(s, pt, m, keep, &pc, err);
    if (!e && *keep && samples_on_path(&s->plan->cfg, m->kind))
        drop_path_steps(s, pt, m);
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

int samples_validation_rows(const atf_train_settings *t, int n)
{
    int v = validation_rows(t, n);
    return v > 0 ? v : n / 10 > 1 ? n / 10 : 1;
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

/* ---- the network's kernels: its final NTK against K0 and the adapted kernel ---- */

typedef struct {
    int M, nb, L;
    size_t mm;
    double *Kt_blocks;            /* [nb × M × M] the trained network's NTK, per block */
    double *K[3];                 /* [M × M] a layer's (or all layers') kernel: final, K0,
                                     adapted */
    double *all[3];               /* [M × M] the same over all layers */
    double *block;                /* [M × M] one block's K0 or adapted kernel */
} align_work;

static void align_free(align_work *w)
{
    free(w->Kt_blocks), free(w->block);
    for (int k = 0; k < 3; k++)
        free(w->K[k]), free(w->all[k]);
}

static atf_error align_alloc(align_work *w, int M, int nb, char *err)
{
    memset(w, 0, sizeof *w);
    w->M = M, w->nb = nb, w->mm = (size_t)M * M;
    w->Kt_blocks = calloc((size_t)nb * w->mm, sizeof(double));
    w->block = malloc(w->mm * sizeof(double));
    int ok = w->Kt_blocks && w->block;
    for (int k = 0; k < 3; k++) {
        w->K[k] = malloc(w->mm * sizeof(double));
        w->all[k] = calloc(w->mm, sizeof(double));
        ok = ok && w->K[k] && w->all[k];
    }
    if (ok)
        return ATF_OK;
    atf_errorf(err, "alignment: out of memory for %d x %d kernels", M, M);
    return ATF_E_NOMEM;
}

static void add_to(size_t n, double *dst, const double *src)
{
    for (size_t i = 0; i < n; i++)
        dst[i] += src[i];
}

/* The layer (1-based) a block belongs to, by its name: W3 and b3 are layer 3. */
static int block_layer(const atf_block *b)
{
    return atoi(b->name + 1);
}

/* Layer l's kernels (the blocks of layer l summed) into w->K, and added to w->all. */
static atf_error layer_kernels(align_work *w, const atf_problem *ap, const atf_result *b16,
                               int l, char *err)
{
    for (int k = 0; k < 3; k++)
        memset(w->K[k], 0, w->mm * sizeof(double));
    atf_error e = ATF_OK;
    for (int b = 0; b < ap->nblocks && !e; b++) {
        if (block_layer(&ap->blocks[b]) != l)
            continue;
        add_to(w->mm, w->K[0], w->Kt_blocks + (size_t)b * w->mm);
        e = atf_kernel_ntk_block(&ap->blocks[b], w->K[1], err);
        if (!e && b16) {
            memset(w->block, 0, w->mm * sizeof(double));
            e = atf_kernel_adapted_block(&ap->blocks[b], &b16->blocks[b], w->block, err);
            add_to(w->mm, w->K[2], w->block);
        }
    }
    for (int k = 0; k < 3 && !e; k++)
        add_to(w->mm, w->all[k], w->K[k]);
    return e;
}

static void append_value(char *buf, size_t len, double v)
{
    size_t n = strlen(buf);
    if (n < len)
        snprintf(buf + n, len - n, "%s%.4f", n ? ";" : "", v);
}

/* The alignments (cosines, docs/math.md §6) of the trained network's NTK with K0 and with the
 * adapted kernel (eq. 7) of the first p16-xent solution, per layer and over all layers, on
 * the first align_examples test examples: columns align_k0[_all], align_adapted[_all]. */
static atf_error alignment_fields(samples_state *s, const point *pt, const atf_mlp *net,
                                  atf_row *row, char *err)
{
    atf_dataset ds = pt->task.test;
    ds.N = s->plan->cfg.align_examples < ds.N ? s->plan->cfg.align_examples : ds.N;
    if (ds.N < 1)
        return ATF_OK;
    atf_result *b16 = pt->p16[1];
    atf_problem *ap = NULL;
    align_work w;
    memset(&w, 0, sizeof w);
    atf_error e = atf_tangent_problem_examples(pt->m0, &ds, atf_shard_chunk(ds.N), "sq",
                                               "alignment", &ap, err);
    if (!e)
        e = align_alloc(&w, ap->M, ap->nblocks, err);
    if (!e && b16 && atf_kernel_factors_missing(&b16->blocks[0]))
        e = atf_result_factors(b16, ap, err);
    if (!e)
        e = atf_kernel_mlp(net, ds.N, ds.X, w.all[0], w.Kt_blocks, err);
    if (!e)
        memset(w.all[0], 0, w.mm * sizeof(double)); /* summed again layer by layer below */
    char k0[ATF_ROW_VALUELEN] = "", adapted[ATF_ROW_VALUELEN] = "";
    for (int l = 1; !e && l <= pt->m0->arch.L; l++) {
        e = layer_kernels(&w, ap, b16, l, err);
        append_value(k0, sizeof k0, atf_kernel_cosine(w.M, w.K[0], w.K[1]));
        append_value(adapted, sizeof adapted,
                     b16 ? atf_kernel_cosine(w.M, w.K[0], w.K[2]) : NAN);
    }
    if (!e) {
        atf_row_str(row, "align_k0", k0);
        atf_row_str(row, "align_adapted", adapted);
        atf_row_num(row, "align_k0_all", atf_kernel_cosine(w.M, w.all[0], w.all[1]));
        atf_row_num(row, "align_adapted_all",
                    b16 ? atf_kernel_cosine(w.M, w.all[0], w.all[2]) : NAN);
    }
    align_free(&w);
    atf_problem_free(ap);
    return e;
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
    samples_base_row(s->plan, &row, pt->n, pt->seed, m->name, "-");
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
    if (!e && s->plan->extended) {
        atf_row_num(&row, "val_error", rep->val_error);
        atf_row_num(&row, "val_xent", ts->loss == ATF_LOSS_XENT ? rep->val_loss : NAN);
    }
    if (!e && m->kind == KIND_NETWORK && s->plan->cfg.align_examples > 0)
        e = alignment_fields(s, pt, model->net, &row, err);
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
