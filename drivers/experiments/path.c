/* path.c — the regularisation path: problem (16) with a loss for every λ of a list, on one
 * problem file (atf_experiments.h, docs/experiments.md).
 *
 * The λ are solved from the largest to the smallest, because a large λ is a heavily regularised,
 * cheap fit and its answer is a good start for the next smaller λ (warm starts: each solve
 * starts from the previous λ's B). Each λ is one row of OUT/path.csv and OUT/path.jsonl
 * (rowstore.h: fsync per row, keyed by λ) and one result file OUT/lambda-<row>.h5, written
 * before its row, so that a row always names a complete file. A resumed run skips the recorded
 * λ and starts the next one from the result file of the recorded row with the smallest λ above
 * it: exactly the start an uninterrupted run used, so both give the same table.
 *
 * Under ranks (io.ranks: `mpirun -np K atf path`) the examples are spread over the processes
 * as `atf solve` spreads them: each reads only its shard of the fitted, validation and test
 * examples, the solver runs over the ranks (atf_hooks.processes), the predictions are gathered
 * and scored as one process scores them, and rank 0 alone keeps the table and writes every
 * file. Every failure is agreed on at fixed points (agree), so that all ranks leave together
 * and one of them says why. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "atf_data.h"
#include "atf_features.h"
#include "atf_penalty.h"
#include "atf_shard.h"
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
    cfg->reduce = 1;
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
static atf_error distinct_keys(const char *what, const double *v, int n, char *err)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++) {
            char a[32], b[32];
            atf_path_key(v[i], a, sizeof a);
            atf_path_key(v[j], b, sizeof b);
            if (!strcmp(a, b)) {
                atf_errorf(err, "%s: %s is given twice", what, a);
                return ATF_E_USAGE;
            }
        }
    return ATF_OK;
}

atf_error atf_exp_parse_lambdas(const char *what, const char *list, double *v, int *n,
                                char *err)
{
    double w[ATF_PATH_MAXLAMBDAS];
    int k = 0;
    atf_error e = atf_parse_doubles(list, w, ATF_PATH_MAXLAMBDAS, &k, what, err);
    for (int i = 0; !e && i < k; i++)
        if (!(w[i] > 0)) {
            atf_errorf(err, "%s: %g is not > 0", what, w[i]);
            e = ATF_E_USAGE;
        }
    if (!e)
        e = distinct_keys(what, w, k, err);
    if (!e) {
        memcpy(v, w, sizeof(double) * (size_t)k);
        *n = k;
    }
    return e;
}

atf_error atf_path_set_lambdas(atf_path_config *cfg, const char *list, char *err)
{
    return atf_exp_parse_lambdas("lambdas", list, cfg->lambdas, &cfg->nlambdas, err);
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
    return distinct_keys("lambdas", cfg->lambdas, cfg->nlambdas, err);
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

/* The validation examples: a seeded random k = round(F·N) of the N training examples (at
 * least 1, and at least one left to fit); *idx receives all N, idx[0 … k−1] the validation
 * examples and idx[k … N−1] the fitted ones, each set in file order. */
static atf_error draw_validation(path_state *s, int N, int **idx, int *k, char *err)
{
    const atf_path_config *cfg = s->cfg;
    *idx = NULL;
    if (N < 2) {
        atf_errorf(err, "%s: %d training example: nothing to hold out for validation",
                   cfg->problem, N);
        return ATF_E_INPUT;
    }
    long kk = lround(cfg->validation_fraction * N);
    kk = kk < 1 ? 1 : kk > N - 1 ? N - 1 : kk;
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
    qsort(perm, (size_t)kk, sizeof *perm, cmp_int);
    qsort(perm + kk, (size_t)(N - kk), sizeof *perm, cmp_int);
    snprintf(s->split, sizeof s->split, "validation:fraction=%g,seed=%llu,examples=%ld",
             cfg->validation_fraction, (unsigned long long)cfg->seed, kk);
    *idx = perm;
    *k = (int)kk;
    return ATF_OK;
}

/* One process: the validation examples and the fitted ones (with a copy of the test split) as
 * problems of their own. */
static atf_error validation_split(path_state *s, char *err)
{
    int *perm = NULL, k = 0, N = s->prob->N;
    atf_error e = draw_validation(s, N, &perm, &k, err);
    if (!e)
        e = atf_problem_select_examples(s->prob, perm, k, &s->val, err);
    if (!e)
        e = atf_problem_select_examples(s->prob, perm + k, N - k, &s->fit, err);
    if (!e)
        e = copy_test(s->prob->test, &s->fit->test, err);
    if (!e) /* computed once here, not by every solve's result */
        e = atf_problem_fingerprint(s->fit, s->fit->fingerprint);
    if (e == ATF_E_NOMEM)
        atf_errorf(err, "path: out of memory");
    free(perm);
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
    /* reduce=0 only when asked, so that rows recorded before the option existed still match */
    snprintf(s->solver, sizeof s->solver, "method=%s,tol=%g,max_iter=%d%s",
             atf_method_name(s->cfg->method), s->cfg->tol, s->cfg->max_iter,
             s->cfg->reduce ? "" : ",reduce=0");
}

/* Predictions need the targets and initial outputs (f0 + A vec B is scored against y);
 * ntest: the test split's examples (0: none). */
static atf_error check_scorable(const path_state *s, int ntest, char *err)
{
    const atf_problem *p = s->prob;
    if (!p->y || !p->f0) {
        atf_errorf(err, "%s: /%s: missing (the path scores the predictions f0 + A vec B against "
                   "the targets)", s->cfg->problem, p->y ? "f0" : "y");
        return ATF_E_INPUT;
    }
    if (!(s->cfg->validation_fraction > 0) && ntest < 1) {
        atf_errorf(err, "%s: /test: missing, and no validation fraction: nothing to score the "
                   "lambdas on", s->cfg->problem);
        return ATF_E_INPUT;
    }
    return ATF_OK;
}

/* The checks and settings every process makes on the problem as read: the penalty override,
 * the loss (xent without /labels: named by the file), what the λ are scored on. ntest: the test
 * split's examples (0: none). */
static atf_error check_problem(path_state *s, int ntest, char *err)
{
    const atf_path_config *cfg = s->cfg;
    atf_loss loss = {cfg->loss, 1.0};
    atf_error e = ATF_OK;
    if (cfg->penalty[0])
        e = atf_problem_set_penalty(s->prob, cfg->penalty, err);
    if (!e)
        e = atf_loss_check(&loss, s->prob, cfg->problem, err);
    if (!e)
        e = check_scorable(s, ntest, err);
    if (!e)
        describe_settings(s);
    return e;
}

/* A split as this process holds it: a whole problem, a shard of one, or NULL (none of it). */
static path_split split_of(const atf_problem *held, int N)
{
    path_split sp = {held, N, 0, 0};
    if (held) {
        sp.first = held->shard_first;
        sp.count = held->shard_count > 0 ? held->shard_count : held->N;
    }
    return sp;
}

static atf_error load_alone(path_state *s, char *err)
{
    const atf_path_config *cfg = s->cfg;
    atf_error e = atf_problem_read(cfg->problem, &s->prob, err);
    if (!e)
        e = check_problem(s, s->prob->test ? s->prob->test->N : 0, err);
    if (e)
        return e;
    memcpy(s->fingerprint, s->prob->fingerprint, sizeof s->fingerprint);
    if (!s->fingerprint[0] && atf_problem_fingerprint(s->prob, s->fingerprint)) {
        atf_errorf(err, "path: out of memory");
        return ATF_E_NOMEM;
    }
    if (s->validating) {
        if ((e = validation_split(s, err)))
            return e;
    } else {
        s->fit = s->prob; /* fitted as it is, scored on its test split */
        snprintf(s->split, sizeof s->split, "test");
    }
    const atf_problem *t = s->prob->test;
    s->train = split_of(s->fit, s->fit->N);
    s->valid = split_of(s->val, s->val ? s->val->N : 0);
    s->tested = split_of(t, t ? t->N : 0);
    return ATF_OK;
}

/* ---- under ranks: every process holds its shard of each split ---- */

/* The largest error over the ranks, so that every rank leaves at the same point (a collective
 * call); the lowest rank that met that error keeps its message in err, the others' err is
 * emptied, so that the job says it once (a failure every rank meets alike: rank 0). Alone: e. */
static atf_error agree(const path_state *s, atf_error e, char *err)
{
    const atf_exp_ranks *rk = s->ranks;
    if (!rk)
        return e;
    int v = e ? (int)e * 65536 + (65535 - rk->rank) : 0;
    rk->max(rk->ctx, &v, 1);
    if (v && 65535 - v % 65536 != rk->rank && err)
        err[0] = '\0';
    return (atf_error)(v / 65536);
}

/* Examples [*first, *first + *count) of a split of N examples that is scored, not solved: the
 * solver's cut (atf_shard_range) when the split has a chunk for every rank, else its chunks one
 * per rank from rank 0 on (the ranks beyond them hold none). */
static void score_range(int N, int rank, int size, int *first, int *count)
{
    if (atf_shard_range(N, rank, size, first, count, NULL) == ATF_OK)
        return;
    int c = atf_shard_chunk(N), nch = atf_shard_count(N);
    *first = rank < nch ? rank * c : 0;
    *count = rank < nch ? (N - *first < c ? N - *first : c) : 0;
}

/* Rank 0 checks the file (atf-h5check) and reads its sizes — the training examples and the
 * test split's (0: none) — and tells every rank: no other rank reads a file nobody checked. */
static atf_error ranks_sizes(path_state *s, int sizes[2], char *err)
{
    const char *file = s->cfg->problem;
    atf_error e = ATF_OK;
    sizes[0] = sizes[1] = 0;
    if (s->ranks->rank == 0) {
        atf_problem *head = NULL, *t = NULL;
        e = atf_problem_read_shard(file, 0, 1, 1, 0, &head, err);
        if (!e)
            e = atf_problem_read_test_shard(file, 0, 1, 0, &t, err);
        if (!e) {
            sizes[0] = head->N;
            sizes[1] = t ? t->N : 0;
        }
        atf_problem_free(head);
        atf_problem_free(t);
    }
    if ((e = agree(s, e, err)))
        return e;
    s->ranks->bcast(s->ranks->ctx, sizes, (int)(2 * sizeof *sizes));
    return ATF_OK;
}

/* The values of the examples idx[0 … n−1], `per` of them per example. */
/* A shard of the problem of the examples idx[0 … n−1] of the file (ascending: what
 * atf_problem_select_examples gives one process): its examples first … first + count − 1,
 * picked from `cover`, a shard of the file that holds their rows; the r, y, f0 and labels of
 * all n examples, the provenance and the blocks' penalties are prob's (a shard of the same
 * file, with the override). */
static atf_error select_shard(const path_state *s, const atf_problem *cover, const int *idx,
                              int n, int first, int count, atf_problem **out, char *err)
{
    const atf_problem *src = s->prob;
    int C = src->C;
    atf_problem *p = atf_problem_new(n, C, src->nblocks);
    int *local = malloc(sizeof(int) * (size_t)count);
    int bad = !p || !local || atf_problem_pick_example_arrays(src, p, idx, n) != 0;
    for (int j = 0; !bad && j < count; j++)
        local[j] = idx[first + j] - cover->shard_first;
    for (int l = 0; !bad && l < src->nblocks; l++) {
        atf_block *b = &p->blocks[l];
        bad = atf_block_select_examples(&cover->blocks[l], local, count, b) != ATF_OK;
        b->penalty = src->blocks[l].penalty;
        memcpy(b->penalty_spec, src->blocks[l].penalty_spec, sizeof b->penalty_spec);
        b->structure = src->blocks[l].structure;
    }
    free(local);
    if (bad) {
        atf_problem_free(p);
        atf_errorf(err, "path: out of memory for %d of %d examples", count, n);
        return ATF_E_NOMEM;
    }
    p->shard_first = first;
    p->shard_count = count;
    p->prov = src->prov;
    *out = p;
    return ATF_OK;
}

/* The file rows that cover the examples idx[first … first + count − 1] (ascending), as a shard
 * of the file; fingerprint: also the whole file's (streamed). */
static atf_error read_cover(const path_state *s, const int *idx, int first, int count,
                            int fingerprint, atf_problem **out, char *err)
{
    int lo = idx[first], hi = idx[first + count - 1];
    return atf_problem_read_shard(s->cfg->problem, lo, hi - lo + 1, 0, fingerprint, out, err);
}

/* This process's shard of the validation examples idx[0 … k−1] (NULL when it holds none). */
static atf_error read_validation(path_state *s, const int *idx, int k, char *err)
{
    int first, count;
    score_range(k, s->ranks->rank, s->ranks->size, &first, &count);
    if (count < 1)
        return ATF_OK;
    atf_problem *cover = NULL;
    atf_error e = read_cover(s, idx, first, count, 0, &cover, err);
    if (!e)
        e = select_shard(s, cover, idx, k, first, count, &s->val, err);
    atf_problem_free(cover);
    return e;
}

/* Rank 0's fingerprints — the file's and (validation) the fitted examples', computed from the
 * file as fit.h5 will be written — for every rank's rows and results. */
static atf_error ranks_fingerprints(path_state *s, char *err)
{
    atf_error e = ATF_OK;
    if (s->ranks->rank == 0) {
        memcpy(s->fingerprint, s->prob->fingerprint, sizeof s->fingerprint);
        if (s->fit != s->prob)
            e = atf_problem_copy_examples(s->prob, s->cfg->problem, s->fit_idx, s->nfit, NULL,
                                          s->fit->fingerprint, err);
    }
    if ((e = agree(s, e, err)))
        return e;
    s->ranks->bcast(s->ranks->ctx, s->fingerprint, (int)sizeof s->fingerprint);
    memcpy(s->prob->fingerprint, s->fingerprint, sizeof s->fingerprint);
    if (s->fit != s->prob)
        s->ranks->bcast(s->ranks->ctx, s->fit->fingerprint, (int)sizeof s->fit->fingerprint);
    return ATF_OK;
}

/* Every rank reads its shards: of the solved examples by the solver's cut (the training split,
 * or with validation its fitted examples: the file rows that cover them, picked in memory), of
 * the validation examples and of the test split by score_range. Rank 0 first checks the file
 * and later streams it through the fingerprints. */
static atf_error load_ranks(path_state *s, char *err)
{
    const atf_path_config *cfg = s->cfg;
    const atf_exp_ranks *rk = s->ranks;
    int sizes[2], *idx = NULL, k = 0, first = 0, count = 0;
    atf_error e = ranks_sizes(s, sizes, err);
    if (e)
        return e;
    int N = sizes[0], ntest = sizes[1];
    if (s->validating) {
        e = draw_validation(s, N, &idx, &k, err);
    } else {
        snprintf(s->split, sizeof s->split, "test");
    }
    const int *fit_idx = idx ? idx + k : NULL;
    int nfit = N - k;
    if (!e && (e = atf_shard_range(nfit, rk->rank, rk->size, &first, &count, err))) {
        char inner[ATF_ERRLEN];
        snprintf(inner, sizeof inner, "%s", err);
        atf_errorf(err, "%s: the %s examples: %.*s", cfg->problem, idx ? "fitted" : "training",
                   ATF_ERRLEN / 2, inner);
    }
    if (!e && idx)
        e = read_cover(s, fit_idx, first, count, rk->rank == 0, &s->prob, err);
    else if (!e)
        e = atf_problem_read_shard(cfg->problem, first, count, 0, rk->rank == 0, &s->prob, err);
    if (!e)
        e = check_problem(s, ntest, err);
    if (!e && idx)
        e = select_shard(s, s->prob, fit_idx, nfit, first, count, &s->fit, err);
    else if (!e)
        s->fit = s->prob;
    if (!e && idx)
        e = read_validation(s, idx, k, err);
    int tf, tc;
    score_range(ntest, rk->rank, rk->size, &tf, &tc);
    if (!e && tc > 0)
        e = atf_problem_read_test_shard(cfg->problem, tf, tc, 0, &s->test, err);
    if (!e && idx) { /* the fitted examples' rows of the file, for fit.h5 */
        memmove(idx, idx + k, sizeof *idx * (size_t)nfit);
        s->fit_idx = idx;
        s->nfit = nfit;
        idx = NULL;
    }
    free(idx);
    if ((e = agree(s, e, err)) || (e = ranks_fingerprints(s, err)))
        return e;
    if (s->fit != s->prob) /* prob's rows are in fit now; prob is the file's description */
        for (int l = 0; l < s->prob->nblocks; l++)
            atf_block_free_arrays(&s->prob->blocks[l]);
    s->train = split_of(s->fit, nfit);
    s->valid = split_of(s->val, k);
    s->tested = split_of(s->test, ntest);
    return ATF_OK;
}

static atf_error load_problem(path_state *s, char *err)
{
    return s->ranks ? load_ranks(s, err) : load_alone(s, err);
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
    if (!s->validating)
        return ATF_OK;
    atf_error e = atf_exp_path(path, sizeof path, s->cfg->out, "fit.h5", err);
    if (e || (atf_rowstore_count(s->store) > 0 && access(path, F_OK) == 0))
        return e;
    if (s->ranks) /* no rank holds the whole fit: copied from the file slice by slice */
        return atf_problem_copy_examples(s->prob, s->cfg->problem, s->fit_idx, s->nfit, path,
                                         NULL, err);
    return atf_problem_write(path, s->fit, err);
}

/* ---- one λ ---- */

typedef struct {
    atf_test_metrics train, val, test;
} path_metrics;

static const atf_test_metrics no_metrics = {NAN, NAN, NAN};

/* f (the rows of the examples b holds, whole chunks of a split of N examples from a multiple of
 * the chunk on) += A_b vec B: a factored block chunk by chunk (atf_shard_chunk(N)), so that each
 * chunk's GEMM has the shape it has in one process whichever process holds it (OpenBLAS takes
 * another kernel for small products, whose last bits differ: docs/record/solver.md §19); other
 * kinds (one process only) whole. */
static void apply_chunks(const atf_block *b, int N, const double *B, double *f)
{
    if (b->kind != ATF_OP_FACTORED) {
        atf_block_apply(b, B, 1.0, f);
        return;
    }
    int c = atf_shard_chunk(N);
    for (int i0 = 0; i0 < b->N; i0 += c) {
        atf_block chunk = *b;
        chunk.N = b->N - i0 < c ? b->N - i0 : c;
        chunk.M = chunk.N * b->C;
        chunk.H = b->H + (size_t)i0 * b->rows;
        chunk.D = b->D + (size_t)i0 * b->C * b->cols;
        atf_block_apply(&chunk, B, 1.0, f + (size_t)i0 * b->C);
    }
}

/* Error and cross-entropy of the predictions f0 + A vec B on one split, computed as
 * atf_predict_result computes them (f0, then every block's rows added in order by
 * atf_block_apply; here chunk by chunk) and scored by atf_prediction_metrics. Under ranks every
 * process computes the predictions of the examples it holds and they are gathered (a collective
 * call, made for every split by every rank): each prediction is the same bits whoever computes
 * it, and so are the scores. */
static atf_error score(const path_state *s, const path_split *sp, const atf_result *res,
                       atf_test_metrics *m, char *err)
{
    *m = no_metrics;
    if (sp->N < 1)
        return ATF_OK;
    int C = s->fit->C;
    double *F = malloc((size_t)sp->N * C * sizeof *F);
    atf_error e = F ? ATF_OK : ATF_E_NOMEM;
    if (!F)
        atf_errorf(err, "path: out of memory for %d x %d predictions", sp->N, C);
    if ((e = agree(s, e, err))) { /* every rank, before the gather */
        free(F);
        return e;
    }
    const atf_problem *p = sp->held;
    if (p && sp->count > 0) {
        double *f = F + (size_t)sp->first * C;
        memcpy(f, p->f0 + (size_t)sp->first * C, (size_t)sp->count * C * sizeof *f);
        for (int l = 0; l < p->nblocks; l++)
            apply_chunks(&p->blocks[l], sp->N, res->blocks[l].B, f);
    }
    if (s->ranks)
        s->ranks->gather(s->ranks->ctx, F, sp->first * C, sp->count * C);
    if (p) /* y and labels are every example's, in a shard too */
        *m = atf_prediction_metrics(sp->N, C, F, p->y, p->labels);
    free(F);
    return ATF_OK;
}

/* The scores of a result on the fitted examples, the validation examples and the test split. */
static atf_error measure(const path_state *s, const atf_result *res, path_metrics *m, char *err)
{
    m->train = m->val = m->test = no_metrics;
    atf_error e = score(s, &s->train, res, &m->train, err);
    if (!e)
        e = score(s, &s->valid, res, &m->val, err);
    if (!e)
        e = score(s, &s->tested, res, &m->test, err);
    return e;
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

/* What the table says about a λ: whether it is recorded, and the row its solve starts from
 * (key and result file; "": none, a cold start). The process that keeps the table (alone, or
 * rank 0) reads it and tells the others. */
typedef struct {
    int recorded;
    char from[32];
    char file[256];
} path_plan;

static void plan_of(const path_state *s, double lambda, const char *key, path_plan *pl)
{
    memset(pl, 0, sizeof *pl);
    if (s->store) {
        pl->recorded = atf_rowstore_has(s->store, key);
        int i = pl->recorded ? -1 : warm_row(s->store, lambda);
        if (i >= 0) {
            const atf_row *row = atf_rowstore_row(s->store, i);
            snprintf(pl->from, sizeof pl->from, "%s", atf_row_get(row, "key"));
            snprintf(pl->file, sizeof pl->file, "%s", atf_row_get(row, "result"));
        }
    }
    if (s->ranks)
        s->ranks->bcast(s->ranks->ctx, pl, (int)sizeof *pl);
}

/* The warm start of a λ: the result kept in memory when it is that row's, else the row's
 * result file (checked against the fitted problem; under ranks every rank reads it). A missing
 * or foreign file is a warning and a cold start — on every rank when any rank could not read
 * it (the lowest such rank says why): the row's warm_from then says so. */
static const atf_result *warm_start(path_state *s, const path_plan *pl, char *from, size_t len)
{
    snprintf(from, len, "none");
    if (!pl->from[0])
        return NULL;
    int failed = 0;
    char err[ATF_ERRLEN] = "";
    if (!s->warm || strcmp(s->warm_key, pl->from)) {
        char path[1100];
        atf_result_free(s->warm);
        s->warm = NULL;
        atf_error e = atf_exp_path(path, sizeof path, s->cfg->out, pl->file, err);
        if (!e)
            e = atf_result_read(path, &s->warm, err);
        if (!e)
            e = atf_result_match(s->warm, path, s->fit, s->cfg->problem, (char[ATF_ERRLEN]){0},
                                 err);
        if (!e)
            e = atf_result_check(s->warm, s->fit, path, s->cfg->problem, err);
        failed = e != ATF_OK;
    }
    if (agree(s, failed ? ATF_E_INPUT : ATF_OK, err)) {
        if (err[0])
            atf_exp_log(&s->cfg->io, "path: warning: lambda %s starts cold: %s\n", pl->from,
                        err);
        atf_result_free(s->warm);
        s->warm = NULL;
        return NULL;
    }
    snprintf(s->warm_key, sizeof s->warm_key, "%s", pl->from);
    snprintf(from, len, "%s", pl->from);
    return s->warm;
}

static atf_settings path_settings(const path_state *s, double lambda)
{
    const atf_path_config *cfg = s->cfg;
    atf_settings set = atf_settings_default();
    set.loss = (atf_loss){cfg->loss, lambda};
    set.method = cfg->method; /* auto unless asked: the solver picks the method */
    set.eps_rel = cfg->tol;
    set.max_iter = cfg->max_iter;
    set.reduce = cfg->reduce;
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
    atf_row_str(row, "method", res->info.method);
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
 * name receives its name in OUT, or "-". By the process that keeps the table. */
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

/* Keep a result as the next λ's start when its row names a result file (the rule of warm_row:
 * solved or iteration limit, and recorded). */
static void keep_warm(path_state *s, const char *key, int kept, atf_result *res)
{
    if (kept) {
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
    const char *split = s->validating ? "val" : "test";
    char ce[32], cx[32];
    snprintf(ce, sizeof ce, "%s_error", split);
    snprintf(cx, sizeof cx, "%s_xent", split);
    snprintf(buf, len, "lambda=%s: %s (%s) after %s iterations, %.1f s; %s error %.4f, "
             "cross-entropy %.4f", atf_row_get(row, "key"), atf_row_get(row, "status"),
             atf_row_get(row, "method"), atf_row_get(row, "iterations"),
             atf_row_getnum(row, "seconds"), s->validating ? "validation" : "test",
             atf_row_getnum(row, ce), atf_row_getnum(row, cx));
}

/* Solve, score and record λ; an interrupted solve records nothing. *row receives the row
 * (where the table is kept). Under ranks every rank solves and scores, rank 0 writes, and a
 * failure anywhere ends every rank here. */
static atf_error run_lambda(path_state *s, double lambda, const path_plan *pl, atf_row *row,
                            char *err)
{
    char key[32], from[32], file[64];
    atf_path_key(lambda, key, sizeof key);
    atf_settings set = path_settings(s, lambda);
    atf_hooks hooks = {.log = atf_exp_log_to, .log_ctx = s->cfg->io.progress,
                       .warm = warm_start(s, pl, from, sizeof from),
                       .interrupt = s->cfg->io.interrupt,
                       .processes = s->ranks ? s->ranks->processes : NULL};
    atf_result *res = NULL;
    double t0 = atf_now();
    clock_t c0 = clock();
    atf_error e = atf_solve(s->fit, &set, &hooks, &res, err);
    double secs[2] = {atf_now() - t0, (double)(clock() - c0) / CLOCKS_PER_SEC};
    if ((e = agree(s, e, err)) || res->info.status == ATF_STATUS_INTERRUPTED) {
        atf_result_free(res);
        return e;
    }
    path_metrics m;
    e = measure(s, res, &m, err);
    if (!e && s->store) {
        e = write_result(s, res, &set, file, sizeof file, err);
        if (!e) {
            fill_row(row, s, key, lambda, res, secs, &m, from, file);
            e = atf_rowstore_append(s->store, row, err);
            s->ran += !e;
        }
    }
    e = agree(s, e, err);
    atf_status st = res->info.status;
    keep_warm(s, key, !e && (st == ATF_STATUS_SOLVED || st == ATF_STATUS_MAX_ITERATIONS), res);
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

/* Stopped through io.interrupt — on any rank, so on every rank (a collective call under
 * ranks, made by all at the same points); remembered in s->stopped. */
static int stopped(path_state *s)
{
    int v = atf_exp_stopped(&s->cfg->io);
    if (s->ranks)
        s->ranks->max(s->ranks->ctx, &v, 1);
    s->stopped |= v;
    return v;
}

static atf_error run_all(path_state *s, char *err)
{
    const atf_path_config *cfg = s->cfg;
    double l[ATF_PATH_MAXLAMBDAS];
    int n = cfg->nlambdas, skipped = 0;
    memcpy(l, cfg->lambdas, sizeof(double) * (size_t)n);
    qsort(l, (size_t)n, sizeof *l, cmp_desc); /* from large to small, whatever the order given */
    char key[32];
    for (int i = 0; i < n && s->store; i++) {
        atf_path_key(l[i], key, sizeof key);
        skipped += atf_rowstore_has(s->store, key);
    }
    atf_progress prog;
    atf_progress_start(&prog, cfg->io.progress, n, skipped);
    atf_error e = ATF_OK;
    for (int i = 0; i < n && !e && !stopped(s); i++) {
        path_plan pl;
        atf_path_key(l[i], key, sizeof key);
        plan_of(s, l[i], key, &pl);
        if (pl.recorded)
            continue;
        if (prog.tty) { /* a terminal shows what runs; a log gets one line per λ, when done */
            char what[64];
            snprintf(what, sizeof what, "lambda=%s ...", key);
            atf_progress_show(&prog, what);
        }
        atf_row row;
        int before = s->ran;
        e = run_lambda(s, l[i], &pl, &row, err);
        if (!e && s->ran > before) {
            atf_progress_step(&prog);
            show_row(s, &prog, &row);
        }
    }
    int stop = stopped(s); /* every rank leaves the loop at the same point */
    atf_progress_break(&prog); /* the update kept back, if any; and the ticker stops */
    return stop ? ATF_OK : e;
}

/* Open the table, check it was written with these settings, run the λ; the figure also after
 * an interruption. Under ranks rank 0 alone keeps the table, draws and reports. */
static atf_error path_table(path_state *s, atf_exp_outcome *outcome, atf_path_best *best,
                            char *err)
{
    atf_error e = ATF_OK;
    if (!s->ranks || s->ranks->rank == 0) {
        e = atf_mkdir_p(s->cfg->out, err);
        if (!e)
            e = atf_rowstore_open(s->csv, s->jsonl, "key", &s->store, err);
        if (!e)
            e = check_resume(s, err);
    }
    if (!(e = agree(s, e, err)))
        e = run_all(s, err);
    if (e)
        return e;
    if (s->store) {
        atf_path_best_of(s, best);
        e = atf_path_figure(s, best, err);
        outcome->rows = atf_rowstore_count(s->store);
    }
    if ((e = agree(s, e, err))) /* a figure rank 0 could not write fails every rank */
        return e;
    outcome->new_rows = s->ran;
    if (!s->ranks) /* alone, a stop during the figure counts too */
        s->stopped |= atf_exp_stopped(&s->cfg->io);
    if (s->stopped) {
        outcome->status = ATF_STATUS_INTERRUPTED;
        err[0] = '\0'; /* ranks other than 0 have nothing to add */
        if (s->store)
            atf_errorf(err, "interrupted: %d rows recorded in %.300s; re-run the same command "
                       "to resume", outcome->rows, s->csv);
        return ATF_OK;
    }
    if (s->store)
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
    s.ranks = cfg->io.ranks && cfg->io.ranks->size > 1 ? cfg->io.ranks : NULL;
    s.validating = cfg->validation_fraction > 0;
    s.t0 = atf_now();
    memset(outcome, 0, sizeof *outcome);
    best = best ? best : &unused;
    memset(best, 0, sizeof *best);
    atf_error e = atf_path_check(cfg, err);
    if (!e)
        e = atf_exp_path(s.csv, sizeof s.csv, cfg->out, "path.csv", err);
    if (!e)
        e = atf_exp_path(s.jsonl, sizeof s.jsonl, cfg->out, "path.jsonl", err);
    if (!(e = agree(&s, e, err))) /* alike on every rank: rank 0 says it */
        e = load_problem(&s, err);
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
    atf_problem_free(s.test);
    atf_problem_free(s.prob);
    free(s.fit_idx);
    return e;
}
