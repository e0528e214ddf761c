/* solver_fixtures.c — small problems and helpers shared by the tests of the penalized methods
 * (test_penalized.c, test_newton.c). */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solver_fixtures.h"

/* Factored blocks of the given shapes, standard normal data; row m of D scaled by 10^e_m with
 * e_m ∈ {−spread … spread} (the equilibration must then matter), r likewise. A penalized fit
 * with rows 10^±s apart has a condition number ~10^4s: first-order methods need s ≤ 1. */
atf_problem *factored(uint64_t seed, int N, int C, int nb, const int (*shapes)[2],
                      const char *penalty, int spread)
{
    atf_test_rng rng;
    atf_test_rng_seed(&rng, seed);
    atf_problem *p = atf_problem_new(N, C, nb);
    double *rowscale = atf_test_alloc((size_t)p->M);
    for (int m = 0; m < p->M; m++)
        rowscale[m] = pow(10.0, (double)(atf_test_u64(&rng) % (uint64_t)(2 * spread + 1)) - spread);
    for (int m = 0; m < p->M; m++)
        p->r[m] = atf_test_normal(&rng) * rowscale[m];
    for (int l = 0; l < nb; l++) {
        atf_block *b = &p->blocks[l];
        snprintf(b->name, sizeof b->name, "W%d", l + 1);
        b->rows = shapes[l][0], b->cols = shapes[l][1];
        b->kind = ATF_OP_FACTORED;
        b->H = atf_test_new_normal(&rng, (size_t)N * (size_t)b->rows);
        b->D = atf_test_new_normal(&rng, (size_t)p->M * (size_t)b->cols);
        for (int m = 0; m < p->M; m++)
            cblas_dscal(b->cols, rowscale[m], b->D + (size_t)m * (size_t)b->cols, 1);
    }
    free(rowscale);
    char err[ATF_ERRLEN];
    if (atf_problem_set_penalty(p, penalty, err) != ATF_OK) {
        fprintf(stderr, "%s\n", err);
        exit(2);
    }
    return p;
}

/* Turn block l into a dense (or, with sparse, CSR with every other entry dropped) block. */
void make_dense(atf_problem *p, int l, int sparse)
{
    atf_block *b = &p->blocks[l];
    double *J = atf_block_dense(b);
    size_t len = (size_t)b->rows * (size_t)b->cols;
    free(b->H), free(b->D);
    b->H = b->D = NULL;
    if (!sparse) {
        b->kind = ATF_OP_DENSE;
        b->J = J;
        return;
    }
    b->kind = ATF_OP_SPARSE;
    b->indptr = calloc((size_t)p->M + 1, sizeof *b->indptr);
    b->indices = calloc((size_t)p->M * len, sizeof *b->indices);
    b->data = atf_test_alloc((size_t)p->M * len);
    int64_t nnz = 0;
    for (int m = 0; m < p->M; m++) {
        for (size_t j = 0; j < len; j++)
            if ((j + (size_t)m) % 2 == 0) {
                b->indices[nnz] = (int64_t)j;
                b->data[nnz++] = J[(size_t)m * len + j];
            }
        b->indptr[m + 1] = nnz;
    }
    b->nnz = nnz;
    free(J);
}

void add_labels(atf_problem *p, uint64_t seed, int with_f0)
{
    atf_test_rng rng;
    atf_test_rng_seed(&rng, seed);
    p->labels = malloc((size_t)p->N * sizeof *p->labels);
    for (int i = 0; i < p->N; i++)
        p->labels[i] = (int)(atf_test_u64(&rng) % (uint64_t)p->C);
    if (with_f0)
        p->f0 = atf_test_new_normal(&rng, (size_t)p->M);
}

/* The whole A [M × n] (problem units, blocks in order) and B stacked from a result. */
double *dense_A(const atf_problem *p, int *n_out)
{
    int n = (int)atf_problem_nvars(p);
    double *A = atf_test_alloc((size_t)p->M * (size_t)n);
    int off = 0;
    for (int l = 0; l < p->nblocks; l++) {
        const atf_block *b = &p->blocks[l];
        int len = b->rows * b->cols;
        double *J = atf_block_dense(b);
        for (int m = 0; m < p->M; m++)
            memcpy(A + (size_t)m * (size_t)n + (size_t)off, J + (size_t)m * (size_t)len,
                   (size_t)len * sizeof *A);
        free(J);
        off += len;
    }
    *n_out = n;
    return A;
}

double *stack_result(const atf_result *res, int n)
{
    double *x = atf_test_alloc((size_t)n);
    int off = 0;
    for (int l = 0; l < res->nblocks; l++) {
        int len = res->blocks[l].rows * res->blocks[l].cols;
        memcpy(x + off, res->blocks[l].B, (size_t)len * sizeof *x);
        off += len;
    }
    return x;
}

double rel_dist(const double *a, const double *b, size_t n)
{
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++)
        num += (a[i] - b[i]) * (a[i] - b[i]), den += b[i] * b[i];
    return sqrt(num / den);
}

atf_settings tight(double eps)
{
    atf_settings s = atf_settings_default();
    s.eps_rel = eps;
    s.eps_abs = 1e-14;
    s.max_iter = 20000;
    return s;
}


int keep_state(void *ctx, const atf_checkpoint *state)
{
    kept_states *k = ctx;
    if (k->count == k->fail_at)
        return 1;
    if (k->count == k->stop_at)
        *k->stop = 1;
    if (k->count < MAX_STATES) {
        atf_checkpoint *c = &k->states[k->count];
        *c = *state;
        c->data = malloc((size_t)state->len * sizeof *c->data);
        if (c->data)
            memcpy(c->data, state->data, (size_t)state->len * sizeof *c->data);
    }
    k->count++;
    return 0;
}

void kept_states_free(kept_states *k)
{
    for (int i = 0; i < k->count && i < MAX_STATES; i++)
        free(k->states[i].data);
    k->count = 0;
}

atf_result *solve_with_hooks(const atf_problem *p, const atf_settings *set, const atf_hooks *hooks,
                         atf_error *e, char *err)
{
    atf_result *res = NULL;
    *e = atf_solve(p, set, hooks, &res, err);
    return res;
}

int same_result(const atf_result *a, const atf_result *b, int n)
{
    double *ba = stack_result(a, n), *bb = stack_result(b, n);
    int same = ba && bb && memcmp(ba, bb, (size_t)n * sizeof *ba) == 0 &&
               a->info.status == b->info.status && a->info.iterations == b->info.iterations &&
               a->info.inner_iterations == b->info.inner_iterations &&
               a->info.fallback_steps == b->info.fallback_steps &&
               a->info.operator_passes == b->info.operator_passes &&
               memcmp(&a->info.objective, &b->info.objective, sizeof(double)) == 0 &&
               memcmp(&a->info.pg_residual, &b->info.pg_residual, sizeof(double)) == 0 &&
               memcmp(&a->info.stationarity, &b->info.stationarity, sizeof(double)) == 0;
    free(ba), free(bb);
    return same;
}

/* The objective column of the tables in the log (factored: "iter phase objective …"; newton:
 * "iter objective …"), in order; returns the count. */
static int objectives_logged(FILE *log, double *out, int max)
{
    char line[512];
    int count = 0;
    rewind(log);
    while (fgets(line, sizeof line, log) && count < max) {
        int iter;
        char phase[16];
        double obj;
        if (sscanf(line, "%d %15s %lf", &iter, phase, &obj) == 3 &&
            (strcmp(phase, "lbfgs") == 0 || strcmp(phase, "newton") == 0))
            out[count++] = obj;
        else if (sscanf(line, "%d %lf", &iter, &obj) == 2)
            out[count++] = obj;
    }
    return count;
}

void check_nonconvex_run(const atf_problem *p, atf_settings set, const char *what)
{
    set.verbose = 1, set.log_every = 1;
    FILE *log = tmpfile();
    atf_hooks hooks = {.log = atf_test_log_to, .log_ctx = log};
    atf_result *res = NULL;
    char err[ATF_ERRLEN] = "";
    CHECK(log && atf_solve(p, &set, &hooks, &res, err) == ATF_OK, "%s: %s", what, err);
    if (res && log) {
        enum { MAX_ROWS = 4000 };
        double *obj = malloc(MAX_ROWS * sizeof *obj);
        int n = obj ? objectives_logged(log, obj, MAX_ROWS) : 0, rises = 0;
        for (int i = 1; i < n; i++)
            rises += obj[i] > obj[i - 1] * (1.0 + 1e-12) + 1e-300;
        CHECK(n >= 2 && rises == 0, "%s: the objective rose %d times in %d rows", what, rises, n);
        int solved = res->info.status == ATF_STATUS_SOLVED;
        double eps = set.eps_rel;
        CHECK(solved ? res->info.pg_residual <= eps : !(res->info.pg_residual <= eps),
              "%s: status %s with pg residual %.3g", what, atf_status_name(res->info.status),
              res->info.pg_residual);
        CHECK(isfinite(res->info.objective) && isfinite(res->info.stationarity),
              "%s: non-finite certificate", what);
        CHECK(isnan(res->info.duality_gap), "%s: a duality gap for a nonconvex penalty", what);
        free(obj);
    }
    if (log)
        fclose(log);
    atf_result_free(res);
}

/* ---- checkpoints: a resumed solve is the uninterrupted one, bit for bit ---- */

/* Whether the states' step counts (header entry 9) grow from state to state: a continuation's
 * stages carry the counts on, so the solve reports all of its work. */
static int steps_grow(const kept_states *k)
{
    for (int i = 1; i < k->count && i < MAX_STATES; i++)
        if (!(k->states[i].data[9] > k->states[i - 1].data[9]))
            return 0;
    return 1;
}

/* How many of the states are a continuation's bridges'. */
static int bridge_states(const kept_states *k)
{
    int count = 0;
    for (int i = 0; i < k->count && i < MAX_STATES; i++)
        count += strstr(k->states[i].key, "on the way to") != NULL;
    return count;
}

/* Stopped by the interrupt flag, raised by the checkpoint of a step (so the step's CG sees it
 * before its first iteration, and the step is undone): the solve ends interrupted with one more
 * state, the step's top again (the same numbers, the elapsed time apart), and resumed from it
 * ends as the uninterrupted solve. */
static void stop_case(const atf_problem *p, const atf_settings *set, const atf_result *warm,
                      const atf_result *plain, int stop_at, const char *what)
{
    volatile sig_atomic_t stop = 0;
    kept_states k = {.fail_at = -1, .stop_at = stop_at, .stop = &stop};
    atf_hooks hooks = {.checkpoint = keep_state, .checkpoint_ctx = &k, .warm = warm,
                       .interrupt = &stop};
    char err[ATF_ERRLEN] = "";
    atf_error e;
    int n = (int)atf_problem_nvars(p);
    atf_result *res = solve_with_hooks(p, set, &hooks, &e, err);
    const atf_checkpoint *top = &k.states[stop_at], *last = &k.states[k.count - 1];
    int same = k.count == stop_at + 2 && last->len == top->len &&
               strcmp(last->key, top->key) == 0;
    /* the elapsed times: Newton's header entry 19; ALM's entry 11, then Newton's after the
     * ALM header (13) and the multiplier (M) */
    int alm = set->method == ATF_METHOD_ALM;
    int64_t elapsed = alm ? 11 : 19, newton_elapsed = alm ? 13 + p->M + 19 : 19;
    for (int64_t i = 0; same && i < top->len; i++)
        same = i == elapsed || i == newton_elapsed ||
               memcmp(&top->data[i], &last->data[i], sizeof(double)) == 0;
    CHECK(e == ATF_OK && res && res->info.status == ATF_STATUS_INTERRUPTED && same,
          "%s: stopped at state %d: status %s, %d states, the last %s the step's top (%s)", what,
          stop_at, res ? atf_status_name(res->info.status) : "-", k.count,
          same ? "is" : "is not", err);
    atf_result_free(res);
    if (same) {
        atf_hooks from = {.resume = last, .warm = warm};
        res = solve_with_hooks(p, set, &from, &e, err);
        CHECK(e == ATF_OK && res && same_result(plain, res, n),
              "%s: resumed from the stop at state %d: not the uninterrupted solve (%s)", what,
              stop_at, err);
        atf_result_free(res);
    }
    kept_states_free(&k);
}

/* One case: the solve with checkpoints at every step equals the one without; resumed from each
 * of its states it ends the same, and so does one stopped at a few of them (stop_case);
 * another solve's state, the same solve's on other numbers (said apart), a damaged one and a
 * checkpoint the caller cannot keep are refused. warm_lambda > 0: every solve starts from the
 * answer at that λ, through the continuation's bridges (settings.continuation, default). */
void checkpoint_case_on(atf_method method, const char *pen, atf_loss loss, int rank,
                               int min_states, double warm_lambda, int N,
                               const int (*shapes)[2], const char *note)
{
    atf_problem *p = factored(91, N, 2, 2, shapes, pen, 0);
    add_labels(p, 92, 1);
    int n = (int)atf_problem_nvars(p);
    atf_settings set = tight(1e-9);
    set.method = method, set.loss = loss, set.newton_rank = rank, set.max_iter = 300;
    char err[ATF_ERRLEN] = "", what[160];
    snprintf(what, sizeof what, "checkpoints, %s, %s, %s, rank %d, warm lambda %g",
             atf_method_name(method), pen, atf_loss_name(loss.kind), rank, warm_lambda);
    atf_error e;
    atf_result *warm = NULL;
    if (warm_lambda > 0.0) {
        atf_settings at = set;
        at.loss.lambda = warm_lambda;
        warm = solve_with_hooks(p, &at, NULL, &e, err);
        CHECK(warm && warm->info.status == ATF_STATUS_SOLVED, "%s: the warm start (%s)", what,
              err);
    }
    atf_hooks none = {.warm = warm};
    atf_result *plain = solve_with_hooks(p, &set, &none, &e, err);
    CHECK(plain && (note ? strstr(plain->info.method_note, note) != NULL
                         : strstr(plain->info.method_note, "preconditioner rank") == NULL),
          "%s: the note \"%s\" (expected %s)", what, plain ? plain->info.method_note : "",
          note ? note : "no growth");
    kept_states k = {.fail_at = -1, .stop_at = -1};
    atf_hooks hooks = {.checkpoint = keep_state, .checkpoint_ctx = &k, .warm = warm};
    atf_result *kept = solve_with_hooks(p, &set, &hooks, &e, err);
    CHECK(plain && kept && same_result(plain, kept, n),
          "%s: checkpoints changed the solve (%s)", what, err);
    CHECK(k.count >= min_states && k.count <= MAX_STATES, "%s: %d states kept, expected %d or more",
          what, k.count, min_states);
    if (warm) /* 10 = 2^3.3: three bridges, the states of each kept under its own key */
        CHECK(bridge_states(&k) >= 3 && bridge_states(&k) < k.count && steps_grow(&k) && plain &&
                  strstr(plain->info.method_note, "continuation"),
              "%s: %d of %d states from bridges (steps growing: %d); note \"%s\"", what,
              bridge_states(&k), k.count, steps_grow(&k), plain ? plain->info.method_note : "");
    for (int i = 0; i < k.count && i < MAX_STATES && plain; i++) {
        atf_hooks from = {.resume = &k.states[i], .warm = warm};
        atf_result *res = solve_with_hooks(p, &set, &from, &e, err);
        CHECK(e == ATF_OK && res && same_result(plain, res, n),
              "%s: resumed from state %d of %d: not the uninterrupted solve (%s; %d vs %d steps)",
              what, i, k.count, err, res ? res->info.iterations : -1, plain->info.iterations);
        atf_result_free(res);
    }
    for (int i = 0; plain && i < 4 && k.count > 1; i++) /* the first, the last and two between */
        stop_case(p, &set, warm, plain, i * (k.count - 2) / 3, what);
    if (k.count > 0) {
        atf_settings other = set; /* another λ; interpolation: another tolerance */
        other.loss.lambda *= 2.0;
        if (loss.kind == ATF_LOSS_INTERPOLATE)
            other.eps_rel *= 10.0;
        atf_hooks from = {.resume = &k.states[0], .warm = warm};
        atf_result *res = solve_with_hooks(p, &other, &from, &e, err);
        CHECK(e == ATF_E_INPUT && !res && strstr(err, "another solve"),
              "%s: another loss's state accepted (%d: %s)", what, (int)e, err);
        /* the same solve of a problem one ulp away (in use: rebuilt on another machine, whose
         * BLAS kernels round differently): refused, and the message says the numbers differ */
        if (!warm) { /* (a warm start's first state is a bridge's, another solve's on q) */
            atf_problem *q = factored(91, N, 2, 2, shapes, pen, 0);
            add_labels(q, 92, 1);
            q->r[0] = nextafter(q->r[0], INFINITY);
            res = solve_with_hooks(q, &set, &from, &e, err);
            CHECK(e == ATF_E_INPUT && !res && strstr(err, "numbers differ") &&
                      strstr(err, "OPENBLAS_CORETYPE") && !strstr(err, "another solve"),
                  "%s: a state of the same solve on other data (%d: %s)", what, (int)e, err);
            atf_problem_free(q);
        }
        atf_checkpoint damaged = k.states[0];
        damaged.len--;
        from.resume = &damaged;
        res = solve_with_hooks(p, &set, &from, &e, err);
        CHECK(e == ATF_E_INPUT && !res, "%s: a shortened state accepted (%d: %s)", what, (int)e,
              err);
        /* a header entry damaged (a count of 2³¹, or −1): refused, or (an entry that is no
         * count) a solve like any other; never an overflow (UBSan) or a crash */
        const atf_checkpoint *last = &k.states[k.count - 1];
        double *data = malloc((size_t)last->len * sizeof *data);
        static const double bad[2] = {2147483648.0, -1.0};
        for (int j = 0; data && j < 16 && j < last->len; j++)
            for (int v = 0; v < 2; v++) {
                memcpy(data, last->data, (size_t)last->len * sizeof *data);
                data[j] = bad[v];
                damaged = *last;
                damaged.data = data;
                from.resume = &damaged;
                res = solve_with_hooks(p, &set, &from, &e, err);
                CHECK(e == ATF_OK || e == ATF_E_INPUT || e == ATF_E_NUMERICAL,
                      "%s: header entry %d = %g: error %d (%s)", what, j, bad[v], (int)e, err);
                atf_result_free(res);
            }
        free(data);
    }
    kept_states refuse = {.fail_at = 0, .stop_at = -1};
    atf_hooks failing = {.checkpoint = keep_state, .checkpoint_ctx = &refuse, .warm = warm};
    atf_result *res = solve_with_hooks(p, &set, &failing, &e, err);
    CHECK(e == ATF_E_IO && !res && strstr(err, "checkpoint"),
          "%s: a checkpoint the caller could not keep was not an error (%d: %s)", what, (int)e,
          err);
    kept_states_free(&k);
    atf_result_free(plain), atf_result_free(kept), atf_result_free(warm);
    atf_problem_free(p);
}


/* Stopped at the iteration limit, the solve keeps its state there (one state, checkpoints
 * being otherwise due never); run again from it with set's larger limit it ends as the
 * uninterrupted solve, bit for bit. Limits 1, 1 + step, … up to `last`. */
void checkpoint_at_limit_on(const atf_problem *p, atf_settings set, int last, int step,
                            const char *what)
{
    int n = (int)atf_problem_nvars(p);
    char err[ATF_ERRLEN] = "";
    atf_error e;
    atf_result *plain = solve_with_hooks(p, &set, NULL, &e, err);
    CHECK(plain, "%s: %s", what, err);
    for (int limit = 1; limit <= last && plain; limit += step) {
        kept_states k = {.fail_at = -1, .stop_at = -1};
        atf_hooks hooks = {.checkpoint = keep_state, .checkpoint_ctx = &k,
                           .checkpoint_seconds = 1e9};
        atf_settings short_set = set;
        short_set.max_iter = limit;
        atf_result *cut = solve_with_hooks(p, &short_set, &hooks, &e, err), *res = NULL;
        CHECK(cut && cut->info.status == ATF_STATUS_MAX_ITERATIONS && k.count == 1,
              "%s, limit %d: status %s, %d states kept", what, limit,
              cut ? atf_status_name(cut->info.status) : "-", k.count);
        if (k.count >= 1) {
            atf_hooks from = {.resume = &k.states[k.count - 1]};
            res = solve_with_hooks(p, &set, &from, &e, err);
            CHECK(res && same_result(plain, res, n),
                  "%s, limit %d: resumed with the larger limit, not the uninterrupted solve (%s)",
                  what, limit, err);
        }
        atf_result_free(cut), atf_result_free(res);
        kept_states_free(&k);
    }
    atf_result_free(plain);
}
