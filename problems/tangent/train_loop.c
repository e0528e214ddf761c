/* train_loop.c — the training loop of the three models (atf_train.h): settings and their names,
 * the optimisers (SGD with PyTorch's momentum, Adam in PyTorch's form), the learning-rate
 * schedule, the protocol (fixed or resampled subsets, validation split, model selection,
 * patience) and evaluation. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "atf_shard.h"
#include "atf_train.h"
#include "atf_util.h"
#include "train_internal.h"

static const double PI = 3.14159265358979323846;

atf_train_settings atf_train_default(void)
{
    atf_train_settings s;
    memset(&s, 0, sizeof s);
    s.epochs = 100;
    s.batch = 32;
    s.lr = 0.1;
    s.momentum = 0.9;
    s.optimizer = ATF_OPT_SGD;
    s.beta1 = 0.9;
    s.beta2 = 0.999;
    s.eps = 1e-8;
    s.schedule = ATF_LR_COSINE;
    s.loss = ATF_LOSS_SQUARED;
    s.seed = 1;
    s.penalty = atf_penalty_default();
    s.penalty_weight = 1.0;
    s.sampling = ATF_SAMPLE_FIXED;
    s.stopping = ATF_STOP_FINAL;
    s.diagnostics = 1;
    s.eval_every = 1;
    return s;
}

/* ---- names ---- */

typedef struct {
    const char *name;
    int value;
} named;

static atf_error parse_named(const named *t, size_t n, const char *what, const char *expected,
                             const char *text, int *out, char *err)
{
    for (size_t i = 0; text && i < n; i++)
        if (!strcmp(text, t[i].name)) {
            *out = t[i].value;
            return ATF_OK;
        }
    atf_errorf(err, "%s '%s' unknown (expected %s)", what, text ? text : "", expected);
    return ATF_E_USAGE;
}

#define PARSE_NAMED(table, what, expected, text, out, err)                                  \
    do {                                                                                     \
        int v_;                                                                              \
        atf_error e_ = parse_named(table, sizeof table / sizeof table[0], what, expected,    \
                                   text, &v_, err);                                          \
        if (!e_)                                                                             \
            *(out) = v_;                                                                     \
        return e_;                                                                           \
    } while (0)

const char *atf_optimizer_name(atf_optimizer o) { return o == ATF_OPT_ADAM ? "adam" : "sgd"; }
const char *atf_lr_schedule_name(atf_lr_schedule s)
{
    return s == ATF_LR_CONSTANT ? "constant" : "cosine";
}
const char *atf_sampling_name(atf_sampling s)
{
    return s == ATF_SAMPLE_RESAMPLE ? "resample-each-epoch" : "fixed";
}
const char *atf_stopping_name(atf_stopping s)
{
    return s == ATF_STOP_BEST_VAL ? "best-val" : s == ATF_STOP_BEST_TEST ? "test-selected"
                                                                         : "final";
}

atf_error atf_optimizer_parse(const char *text, atf_optimizer *out, char *err)
{
    static const named t[] = {{"sgd", ATF_OPT_SGD}, {"adam", ATF_OPT_ADAM}};
    PARSE_NAMED(t, "optimizer", "sgd or adam", text, out, err);
}

atf_error atf_lr_schedule_parse(const char *text, atf_lr_schedule *out, char *err)
{
    static const named t[] = {{"cosine", ATF_LR_COSINE}, {"constant", ATF_LR_CONSTANT}};
    PARSE_NAMED(t, "lr-schedule", "cosine or constant", text, out, err);
}

atf_error atf_sampling_parse(const char *text, atf_sampling *out, char *err)
{
    static const named t[] = {{"fixed", ATF_SAMPLE_FIXED},
                              {"resample-each-epoch", ATF_SAMPLE_RESAMPLE},
                              {"resample", ATF_SAMPLE_RESAMPLE}};
    PARSE_NAMED(t, "sampling", "fixed or resample-each-epoch", text, out, err);
}

atf_error atf_stopping_parse(const char *text, atf_stopping *out, char *err)
{
    static const named t[] = {{"final", ATF_STOP_FINAL},
                              {"best-val", ATF_STOP_BEST_VAL},
                              {"test-selected", ATF_STOP_BEST_TEST},
                              {"best-test", ATF_STOP_BEST_TEST}};
    PARSE_NAMED(t, "stopping", "final, best-val or test-selected", text, out, err);
}

/* ---- evaluation ---- */

static double model_error(int N, int C, const double *F, const atf_dataset *ds)
{
    if (ds->labels)
        return atf_prediction_class_error(N, C, F, ds->labels);
    return ds->Y && ds->C == C ? atf_prediction_error(N, C, F, ds->Y) : NAN;
}

/* This process's rows of an N-row split: all of them alone, its share of the split's chunks
 * (atf_shard_share) among processes. */
static void split_share(const atf_processes *pr, int N, int *first, int *count)
{
    if (pr)
        atf_shard_share(N, pr->rank, pr->size, first, count);
    else
        *first = 0, *count = N;
}

/* Loss and error of m on ds, from the outputs of a cache of θ0's pass over this process's rows
 * of ds (c) or from the forward pass (c NULL). Over processes each forms its rows and the rows
 * are gathered: every process then scores the same outputs. */
static atf_error evaluate_with(const atf_model *m, const atf_dataset *ds, model_eval_cache *c,
                               const atf_processes *pr, atf_loss_kind loss, double *loss_value,
                               double *error, char *err)
{
    if (loss_value)
        *loss_value = NAN;
    if (error)
        *error = NAN;
    if (!ds || ds->N <= 0)
        return ATF_OK;
    int C = m->theta0->arch.widths[m->theta0->arch.L], first, count;
    split_share(pr, ds->N, &first, &count);
    double *F = malloc((size_t)ds->N * C * sizeof *F);
    atf_error e = ATF_OK;
    if (!F)
        atf_errorf(err, "evaluate: out of memory for %d predictions", ds->N), e = ATF_E_NOMEM;
    else if (c)
        model_eval_cached(m, c, F);
    else
        e = model_forward_rows(m, ds->N, first, count, ds->X, F, err);
    if (pr) { /* every process leaves together, or every one scores the gathered rows */
        double worst = e;
        pr->max(pr->ctx, &worst, 1);
        if (worst != 0.0 && !e)
            atf_errorf(err, "evaluate: another process ran out of memory"), e = ATF_E_NOMEM;
        if (!e)
            pr->gather(pr->ctx, F, ds->N, C);
    }
    int have_targets = loss == ATF_LOSS_XENT ? ds->labels != NULL : ds->Y && ds->C == C;
    if (!e && loss_value && have_targets)
        *loss_value = model_loss_of(loss, ds->N, C, F, ds->Y, ds->labels, NULL);
    if (!e && error)
        *error = model_error(ds->N, C, F, ds);
    free(F);
    return e;
}

atf_error atf_model_evaluate(const atf_model *m, const atf_dataset *ds, atf_loss_kind loss,
                             double *loss_value, double *error, char *err)
{
    return evaluate_with(m, ds, NULL, NULL, loss, loss_value, error, err);
}

/* ---- checks ---- */

static int frozen_m1(const atf_train_settings *s)
{
    return s->use_penalty && s->penalty.w1.family == ATF_FAMILY_FIXED;
}

static int frozen_m2(const atf_train_settings *s)
{
    return s->use_penalty && s->penalty.w2.family == ATF_FAMILY_FIXED;
}

static atf_error check_ranges(const atf_model *m, const atf_train_settings *s, char *err)
{
    if (s->epochs < 1 || s->batch < 1 || !(s->lr > 0.0) || !isfinite(s->lr)) {
        atf_errorf(err, "train: need epochs >= 1, batch >= 1 and a finite lr > 0");
        return ATF_E_USAGE;
    }
    if (s->optimizer == ATF_OPT_SGD && !(s->momentum >= 0.0 && s->momentum < 1.0)) {
        atf_errorf(err, "train: momentum %g (need 0 <= momentum < 1)", s->momentum);
        return ATF_E_USAGE;
    }
    if (s->optimizer == ATF_OPT_ADAM && !(s->beta1 >= 0.0 && s->beta1 < 1.0 && s->beta2 >= 0.0 &&
                                          s->beta2 < 1.0 && s->eps > 0.0 && isfinite(s->eps))) {
        atf_errorf(err, "train: adam needs 0 <= beta1, beta2 < 1 and eps > 0");
        return ATF_E_USAGE;
    }
    if (s->loss != ATF_LOSS_SQUARED && s->loss != ATF_LOSS_XENT) {
        atf_errorf(err, "train: the loss must be squared or xent");
        return ATF_E_USAGE;
    }
    if (s->use_penalty && m->kind != ATF_MODEL_FACTORIZED) {
        atf_errorf(err, "train: the explicit penalty applies to the factorized model only");
        return ATF_E_USAGE;
    }
    if (s->use_penalty && !(s->penalty_weight >= 0.0 && isfinite(s->penalty_weight))) {
        atf_errorf(err, "train: penalty weight %g (need a finite weight >= 0)", s->penalty_weight);
        return ATF_E_USAGE;
    }
    if (s->n_train < 0 || s->n_val < 0 || s->patience < 0 || s->eval_every < 0) {
        atf_errorf(err, "train: n_train, n_val, patience and eval_every must be >= 0");
        return ATF_E_USAGE;
    }
    if (s->patience > 0 && s->stopping == ATF_STOP_FINAL) {
        atf_errorf(err, "train: patience needs a selection (best-val or test-selected)");
        return ATF_E_USAGE;
    }
    return ATF_OK;
}

static atf_error check_data(const atf_model *m, const atf_dataset *pool, const atf_dataset *test,
                            const atf_train_settings *s, char *err)
{
    const atf_arch *a = &m->theta0->arch;
    int C = a->widths[a->L];
    if (!pool || pool->N < 1 || pool->D != a->widths[0]) {
        atf_errorf(err, "train: the network's input width is %d but the data has %d examples "
                   "of dimension %d", a->widths[0], pool ? pool->N : 0, pool ? pool->D : 0);
        return ATF_E_USAGE;
    }
    if (s->loss == ATF_LOSS_SQUARED && (!pool->Y || pool->C != C)) {
        atf_errorf(err, "train: the squared loss needs targets of width %d (the network's "
                   "outputs) but the data has %d", C, pool->Y ? pool->C : 0);
        return ATF_E_USAGE;
    }
    if (s->loss == ATF_LOSS_XENT) {
        if (C < 2 || !pool->labels) {
            atf_errorf(err, "train: the xent loss needs labels and at least 2 outputs (the "
                       "network has %d%s)", C, pool->labels ? "" : ", the data no labels");
            return ATF_E_USAGE;
        }
        for (int i = 0; i < pool->N; i++)
            if (pool->labels[i] < 0 || pool->labels[i] >= C) {
                atf_errorf(err, "train: label %d of example %d is not below the %d outputs",
                           pool->labels[i], i, C);
                return ATF_E_USAGE;
            }
    }
    int avail = pool->N - s->n_val, n = s->n_train ? s->n_train : avail;
    if (avail < 1 || n > avail) {
        atf_errorf(err, "train: %d training + %d validation examples requested but the pool "
                   "has %d", n, s->n_val, pool->N);
        return ATF_E_USAGE;
    }
    if (s->stopping == ATF_STOP_BEST_VAL && s->n_val < 1) {
        atf_errorf(err, "train: best-val selection needs a validation split (n_val >= 1)");
        return ATF_E_USAGE;
    }
    if (s->stopping == ATF_STOP_BEST_TEST && (!test || test->N < 1)) {
        atf_errorf(err, "train: test-selected stopping needs a test split");
        return ATF_E_USAGE;
    }
    if (test && test->N > 0 && test->D != a->widths[0]) {
        atf_errorf(err, "train: test examples have dimension %d, the network %d", test->D,
                   a->widths[0]);
        return ATF_E_USAGE;
    }
    return ATF_OK;
}

atf_error atf_train_check(const atf_model *m, const atf_dataset *pool, const atf_dataset *test,
                          const atf_train_settings *s, char *err)
{
    atf_error e = check_ranges(m, s, err);
    return e ? e : check_data(m, pool, test, s, err);
}

/* ---- optimisers ---- */

typedef struct {
    int nblocks;
    param_block blocks[MODEL_MAX_BLOCKS];
    double *v[MODEL_MAX_BLOCKS]; /* SGD momentum buffer / Adam second moment */
    double *m[MODEL_MAX_BLOCKS]; /* Adam first moment */
    long step;
} optimizer_state;

static void optimizer_free(optimizer_state *o)
{
    for (int k = 0; k < o->nblocks; k++) {
        free(o->v[k]);
        free(o->m[k]);
    }
}

static int optimizer_init(optimizer_state *o, atf_model *m, const model_grad *g,
                          const atf_train_settings *s)
{
    memset(o, 0, sizeof *o);
    o->nblocks = model_blocks(m, g, frozen_m1(s), frozen_m2(s), o->blocks);
    int fail = 0;
    for (int k = 0; k < o->nblocks; k++) {
        fail |= !(o->v[k] = calloc(o->blocks[k].n, sizeof(double)));
        if (s->optimizer == ATF_OPT_ADAM)
            fail |= !(o->m[k] = calloc(o->blocks[k].n, sizeof(double)));
    }
    return fail ? -1 : 0;
}

/* SGD: v ← μv + g, θ ← θ − ηv (PyTorch). Adam (PyTorch): m ← β1 m + (1−β1) g,
 * v ← β2 v + (1−β2) g², θ ← θ − (η/(1−β1^t)) m / (√v/√(1−β2^t) + ε). */
static void optimizer_step(optimizer_state *o, const atf_train_settings *s, double lr)
{
    o->step++;
    double bc1 = 1.0 - pow(s->beta1, (double)o->step);
    double bc2 = sqrt(1.0 - pow(s->beta2, (double)o->step));
    for (int k = 0; k < o->nblocks; k++) {
        double *p = o->blocks[k].p, *v = o->v[k], *mm = o->m[k];
        const double *g = o->blocks[k].g;
        size_t n = o->blocks[k].n;
        if (s->optimizer == ATF_OPT_SGD) {
            for (size_t i = 0; i < n; i++) {
                v[i] = s->momentum * v[i] + g[i];
                p[i] -= lr * v[i];
            }
            continue;
        }
        double step = lr / bc1;
        for (size_t i = 0; i < n; i++) {
            mm[i] = s->beta1 * mm[i] + (1.0 - s->beta1) * g[i];
            v[i] = s->beta2 * v[i] + (1.0 - s->beta2) * g[i] * g[i];
            p[i] -= step * mm[i] / (sqrt(v[i]) / bc2 + s->eps);
        }
    }
}

static double epoch_lr(const atf_train_settings *s, int epoch)
{
    if (s->schedule == ATF_LR_CONSTANT)
        return s->lr;
    return s->lr * 0.5 * (1.0 + cos(PI * epoch / s->epochs));
}

/* ---- the loop ---- */

typedef struct {
    const atf_train_settings *s;
    const atf_dataset *pool, *test;
    atf_dataset train_view, val_view; /* rows of the pool (not owned) */
    int n, avail;                     /* examples per epoch, pool rows outside validation */
    int *perm;                        /* [avail] */
    double *Xb, *Yb;
    int *lb;
    model_grad grad;
    model_work *work;
    optimizer_state opt;
    atf_rng rng;
    model_eval_cache *val_cache, *test_cache; /* linear models: θ0's pass over the splits
                                                 (this process's rows of them) */
    const atf_processes *procs;               /* NULL: one process */
    /* a minibatch's gradient in chunks (minibatch_gradient): the trained arrays' gradients and
     * the loss in double-double, hi and lo [ntrained + 1], and as pairs for the processes */
    size_t ntrained;
    double *dd_hi, *dd_lo, *pairs;
    atf_model *best;
    double best_error, best_loss;
    int best_epoch;
    atf_train_epoch *history;
} train_run;

/* Rows [from, from + n) of ds, sharing its arrays. */
static atf_dataset rows_view(const atf_dataset *ds, int from, int n)
{
    atf_dataset v = *ds;
    v.N = n;
    v.X = ds->X + (size_t)from * ds->D;
    v.Y = ds->Y ? ds->Y + (size_t)from * ds->C : NULL;
    v.labels = ds->labels ? ds->labels + from : NULL;
    return v;
}

static void run_free(train_run *r)
{
    free(r->perm);
    free(r->Xb);
    free(r->Yb);
    free(r->lb);
    model_grad_free(&r->grad);
    model_work_free(r->work);
    optimizer_free(&r->opt);
    atf_model_free(r->best);
    model_eval_cache_free(r->val_cache);
    model_eval_cache_free(r->test_cache);
    free(r->history);
    free(r->dd_hi);
    free(r->dd_lo);
    free(r->pairs);
}

/* The double-double accumulators of a chunked minibatch gradient (one pass: none needed). */
static int dd_alloc(train_run *r)
{
    r->ntrained = 0;
    for (int k = 0; k < r->opt.nblocks; k++)
        r->ntrained += r->opt.blocks[k].n;
    size_t n = r->ntrained + 1;
    r->dd_hi = malloc(n * sizeof *r->dd_hi);
    r->dd_lo = malloc(n * sizeof *r->dd_lo);
    r->pairs = r->procs ? malloc(2 * n * sizeof *r->pairs) : NULL;
    return !r->dd_hi || !r->dd_lo || (r->procs && !r->pairs) ? -1 : 0;
}

/* The linear models' θ0 pass over this process's rows of a split (NULL: none kept). */
static model_eval_cache *split_cache(const train_run *r, const atf_model *m,
                                     const atf_dataset *ds)
{
    int first = 0, count = 0;
    if (ds)
        split_share(r->procs, ds->N, &first, &count);
    return model_eval_cache_new(m, ds, first, count);
}

static atf_error run_init(train_run *r, atf_model *m, const atf_dataset *pool,
                          const atf_dataset *test, const atf_train_settings *s, char *err)
{
    memset(r, 0, sizeof *r);
    r->s = s;
    r->procs = s->processes && s->processes->size > 1 ? s->processes : NULL;
    r->pool = pool;
    r->test = test && test->N > 0 ? test : NULL;
    r->avail = pool->N - s->n_val;
    r->n = s->n_train ? s->n_train : r->avail;
    /* fixed: the first n rows; resampling draws from all rows outside the validation split */
    r->train_view = rows_view(pool, 0, s->sampling == ATF_SAMPLE_FIXED ? r->n : r->avail);
    r->val_view = rows_view(pool, r->avail, s->n_val);
    int B = s->batch < r->n ? s->batch : r->n, D = pool->D, C = pool->C > 0 ? pool->C : 1;
    r->perm = malloc((size_t)r->avail * sizeof *r->perm);
    r->Xb = malloc((size_t)B * D * sizeof(double));
    r->Yb = malloc((size_t)B * C * sizeof(double));
    r->lb = malloc((size_t)B * sizeof(int));
    r->history = calloc((size_t)s->epochs, sizeof *r->history);
    r->work = model_work_new(m, B);
    int fail = !r->perm || !r->Xb || !r->Yb || !r->lb || !r->history || !r->work ||
               model_grad_alloc(m, &r->grad) || optimizer_init(&r->opt, m, &r->grad, s) ||
               dd_alloc(r);
    if (!fail && s->stopping != ATF_STOP_FINAL)
        fail = !(r->best = model_clone(m));
    if (fail) {
        atf_errorf(err, "train: out of memory for the %s model's training state",
                   atf_model_kind_name(m->kind));
        return ATF_E_NOMEM;
    }
    /* optional (NULL: evaluate by the forward pass): the same numbers, less work per epoch */
    r->val_cache = split_cache(r, m, &r->val_view);
    r->test_cache = split_cache(r, m, r->test);
    for (int i = 0; i < r->avail; i++)
        r->perm[i] = i;
    atf_rng_seed(&r->rng, s->seed);
    r->best_error = r->best_loss = INFINITY;
    return ATF_OK;
}

/* The pool rows rows[0 … n) into the batch arrays. */
static void gather_batch(train_run *r, const int *rows, int n)
{
    const atf_dataset *ds = r->pool;
    int D = ds->D, C = ds->C;
    for (int k = 0; k < n; k++) {
        memcpy(r->Xb + (size_t)k * D, ds->X + (size_t)rows[k] * D, (size_t)D * sizeof(double));
        if (ds->Y)
            memcpy(r->Yb + (size_t)k * C, ds->Y + (size_t)rows[k] * C,
                   (size_t)C * sizeof(double));
        if (ds->labels)
            r->lb[k] = ds->labels[rows[k]];
    }
}

/* Loss and gradient (into r->grad) of rows[0 … n), part of a minibatch of nb rows. */
static atf_error part_gradient(train_run *r, const atf_model *m, const int *rows, int n, int nb,
                               double *loss, char *err)
{
    const atf_dataset *ds = r->pool;
    gather_batch(r, rows, n);
    return model_loss_grad_part(m, r->work, n, nb, r->Xb, ds->Y ? r->Yb : NULL,
                                ds->labels ? r->lb : NULL, r->s->loss, loss, &r->grad, err);
}

/* The chunks' sums (dd_hi, dd_lo) as the trained arrays' gradients and the loss, after adding
 * those of the other processes (pairs reduced at one and broadcast: the same bits everywhere). */
static void dd_finish(train_run *r, double *loss)
{
    size_t n = r->ntrained + 1;
    if (r->procs) {
        for (size_t i = 0; i < n; i++) {
            r->pairs[2 * i] = r->dd_hi[i];
            r->pairs[2 * i + 1] = r->dd_lo[i];
        }
        r->procs->sum_dd(r->procs->ctx, r->pairs, (int64_t)n);
        for (size_t i = 0; i < n; i++)
            r->dd_hi[i] = r->pairs[2 * i];
    }
    size_t off = 0;
    for (int k = 0; k < r->opt.nblocks; k++) {
        memcpy(r->opt.blocks[k].g, r->dd_hi + off, r->opt.blocks[k].n * sizeof(double));
        off += r->opt.blocks[k].n;
    }
    *loss = r->dd_hi[r->ntrained];
}

/* The loss and gradient of a minibatch of nb rows (docs/tangent.md, "Training over
 * processes"). The batch is cut as a problem's examples are (atf_shard_chunk(nb), a cut that
 * depends on nb only); each chunk's terms of the batch mean are formed by one pass and the
 * chunks' are added in double-double; over processes each takes its share of the chunks and the
 * pairs are summed over them, so that one process and any number give the same bits. A batch of
 * one chunk (nb ≤ 32) in one process is the plain pass. */
static atf_error minibatch_gradient(train_run *r, const atf_model *m, const int *rows, int nb,
                                    double *loss, char *err)
{
    int chunk = atf_shard_chunk(nb), first, count;
    if (!r->procs && nb <= chunk)
        return part_gradient(r, m, rows, nb, nb, loss, err);
    split_share(r->procs, nb, &first, &count);
    size_t n = r->ntrained + 1;
    memset(r->dd_hi, 0, n * sizeof *r->dd_hi);
    memset(r->dd_lo, 0, n * sizeof *r->dd_lo);
    atf_error e = ATF_OK;
    for (int i = first; !e && i < first + count; i += chunk) {
        int part = first + count - i < chunk ? first + count - i : chunk;
        double value = NAN;
        e = part_gradient(r, m, rows + i, part, nb, &value, err);
        size_t off = 0;
        for (int k = 0; !e && k < r->opt.nblocks; k++) {
            atf_dd_add_vec(r->opt.blocks[k].n, r->dd_hi + off, r->dd_lo + off,
                           r->opt.blocks[k].g);
            off += r->opt.blocks[k].n;
        }
        if (!e)
            atf_dd_add(&r->dd_hi[r->ntrained], &r->dd_lo[r->ntrained], value);
    }
    if (!e)
        dd_finish(r, loss);
    return e;
}

/* One minibatch step on pool rows rows[0..nb). */
static atf_error train_step(train_run *r, atf_model *m, const int *rows, int nb, double lr,
                            double *loss, char *err)
{
    const atf_train_settings *s = r->s;
    atf_error e = minibatch_gradient(r, m, rows, nb, loss, err);
    if (!e && s->use_penalty) {
        double pv;
        e = model_penalty(m, &s->penalty, s->penalty_weight, frozen_m1(s), frozen_m2(s), &pv,
                          &r->grad, err);
    }
    if (!e)
        optimizer_step(&r->opt, s, lr);
    return e;
}

/* The interrupt flag, raised on any process: every one stops before the same batch. */
static int interrupted(const train_run *r)
{
    double v = r->s->interrupt && *r->s->interrupt;
    if (r->procs)
        r->procs->max(r->procs->ctx, &v, 1);
    return v != 0.0;
}

/* The epoch's rows: the fixed subset reshuffled, or a new n-subset of the pool. */
static void epoch_rows(train_run *r)
{
    int pick = r->s->sampling == ATF_SAMPLE_FIXED ? r->n : r->avail;
    atf_rng_shuffle(&r->rng, pick, r->perm);
}

static atf_error run_epoch(train_run *r, atf_model *m, double lr, double *mean_loss,
                           int *stopped, char *err)
{
    const atf_train_settings *s = r->s;
    int B = s->batch < r->n ? s->batch : r->n;
    double sum = 0.0;
    atf_error e = ATF_OK;
    epoch_rows(r);
    for (int start = 0; !e && start < r->n; start += B) {
        if (interrupted(r)) {
            *stopped = 1;
            return ATF_OK;
        }
        int nb = r->n - start < B ? r->n - start : B;
        double loss = NAN;
        e = train_step(r, m, r->perm + start, nb, lr, &loss, err);
        sum += loss * nb;
    }
    *mean_loss = sum / r->n;
    return e;
}

/* Evaluate the splits after an epoch, record the line and update the selection. */
static atf_error after_epoch(train_run *r, atf_model *m, int epoch, atf_train_epoch *line,
                             char *err)
{
    const atf_train_settings *s = r->s;
    line->val_loss = line->val_error = line->test_loss = line->test_error = NAN;
    /* the splits are scored every eval_every epochs and at the last one */
    int scored = s->eval_every <= 1 || epoch % s->eval_every == 0 || epoch == s->epochs;
    atf_error e = ATF_OK;
    if (scored)
        e = evaluate_with(m, &r->val_view, r->val_cache, r->procs, s->loss, &line->val_loss,
                          &line->val_error, err);
    if (scored && !e)
        e = evaluate_with(m, r->test, r->test_cache, r->procs, s->loss, &line->test_loss,
                          &line->test_error, err);
    int L = m->theta0->arch.L;
    for (int l = 0; l < ATF_MAX_LAYERS; l++) {
        line->drift1[l] = line->drift2[l] = NAN;
        if (l < L && m->kind == ATF_MODEL_FACTORIZED && s->diagnostics)
            atf_model_drift(m, l, &line->drift1[l], &line->drift2[l]);
    }
    if (e || !scored || s->stopping == ATF_STOP_FINAL)
        return e;
    /* classification (labels): the error, ties broken by the loss; regression: the loss */
    const atf_dataset *sel = s->stopping == ATF_STOP_BEST_VAL ? &r->val_view : r->test;
    double loss_now = s->stopping == ATF_STOP_BEST_VAL ? line->val_loss : line->test_loss;
    double err_now = !sel->labels ? loss_now
                     : s->stopping == ATF_STOP_BEST_VAL ? line->val_error : line->test_error;
    if (isnan(err_now))
        err_now = INFINITY;
    if (isnan(loss_now))
        loss_now = INFINITY;
    if (err_now < r->best_error || (err_now == r->best_error && loss_now < r->best_loss)) {
        r->best_error = err_now;
        r->best_loss = loss_now;
        r->best_epoch = epoch;
        model_copy_state(r->best, m);
    }
    return ATF_OK;
}

static atf_error finish(train_run *r, atf_model *m, atf_train_report *rep, int epochs_run,
                        char *err)
{
    const atf_train_settings *s = r->s;
    rep->epochs_run = epochs_run;
    rep->selected_epoch = epochs_run;
    if (s->stopping != ATF_STOP_FINAL && r->best_epoch > 0) {
        model_copy_state(m, r->best);
        rep->selected_epoch = r->best_epoch;
    }
    rep->n_train = r->n;
    rep->n_val = s->n_val;
    rep->n_pool = r->pool->N;
    atf_error e = evaluate_with(m, &r->train_view, NULL, r->procs, s->loss, &rep->train_loss,
                                &rep->train_error, err);
    if (!e)
        e = evaluate_with(m, &r->val_view, NULL, r->procs, s->loss, &rep->val_loss,
                          &rep->val_error, err);
    if (!e)
        e = evaluate_with(m, r->test, NULL, r->procs, s->loss, &rep->test_loss,
                          &rep->test_error, err);
    rep->history = r->history;
    r->history = NULL;
    return e;
}

void atf_train_report_free(atf_train_report *r)
{
    if (!r)
        return;
    free(r->history);
    memset(r, 0, sizeof *r);
}

atf_error atf_model_train(atf_model *m, const atf_dataset *pool, const atf_dataset *test,
                          const atf_train_settings *s, atf_train_report *report, char *err)
{
    atf_train_report local;
    atf_train_report *rep = report ? report : &local;
    memset(rep, 0, sizeof *rep);
    atf_error e = atf_train_check(m, pool, test, s, err);
    if (e)
        return e;
    train_run r;
    if ((e = run_init(&r, m, pool, test, s, err))) {
        run_free(&r);
        return e;
    }
    double t0 = atf_now();
    int epoch = 0, stopped = 0;
    while (!e && !stopped && epoch < s->epochs) {
        atf_train_epoch *line = &r.history[epoch];
        line->lr = epoch_lr(s, epoch);
        e = run_epoch(&r, m, line->lr, &line->loss, &stopped, err);
        if (e || stopped)
            break;
        if (!isfinite(line->loss)) {
            atf_errorf(err, "train: loss diverged in epoch %d (lower the learning rate)",
                       epoch + 1);
            e = ATF_E_NUMERICAL;
            break;
        }
        epoch++;
        if ((e = after_epoch(&r, m, epoch, line, err)))
            break;
        int patience_hit = s->patience > 0 && epoch - r.best_epoch >= s->patience;
        if (s->progress) {
            double elapsed = atf_now() - t0;
            atf_train_progress p = {epoch, s->epochs, line->loss, line->lr, line->val_loss,
                                    line->val_error, line->test_loss, line->test_error,
                                    s->stopping == ATF_STOP_FINAL ? epoch : r.best_epoch,
                                    elapsed, elapsed / epoch * (s->epochs - epoch)};
            if (patience_hit)
                p.eta = 0.0;
            e = s->progress(&p, m, s->ctx);
        }
        if (!e && patience_hit) {
            rep->stopped_by_patience = 1;
            break;
        }
    }
    rep->interrupted = stopped;
    if (!e)
        e = finish(&r, m, rep, epoch, err);
    run_free(&r);
    if (!report)
        atf_train_report_free(&local);
    return e;
}

atf_error atf_mlp_train(atf_mlp *net, const atf_dataset *ds, const atf_train_settings *s,
                        double *final_loss, char *err)
{
    atf_model *m = NULL;
    atf_error e = atf_model_create(ATF_MODEL_NETWORK, net, &m, err);
    if (e)
        return e;
    atf_train_settings t = *s;
    t.sampling = ATF_SAMPLE_FIXED;
    t.n_train = t.n_val = t.patience = 0;
    t.stopping = ATF_STOP_FINAL;
    atf_train_report rep;
    e = atf_model_train(m, ds, NULL, &t, &rep, err);
    if (!e) {
        for (int l = 0; l < net->arch.L; l++) {
            size_t Q = (size_t)net->arch.widths[l + 1];
            memcpy(net->W[l], m->net->W[l], (size_t)net->arch.widths[l] * Q * sizeof(double));
            if (net->b[l])
                memcpy(net->b[l], m->net->b[l], Q * sizeof(double));
        }
        if (final_loss)
            *final_loss = rep.train_loss;
    }
    atf_train_report_free(&rep);
    atf_model_free(m);
    return e;
}
