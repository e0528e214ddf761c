/* test_factored.c — the factored method of the penalized problem (16) (solver/factored.c,
 * solver/factor_space.c, solver/factor_precond.c).
 *
 * Checks: the factored optimum equals newton's (objective 1e-8, B 1e-6, both certified to
 * 1e-10) for every convex penalty it covers, both losses, factored blocks and factored + dense +
 * sparse blocks; the ranks it reports are those of newton's B; rank growth and shrinkage: a
 * cold start (rank 0, grown) and a warm start at full rank (another penalty's answer, pruned)
 * reach the same certified point and ranks; nonconvex penalties with a factor form descend
 * monotonically (the iteration table's objective column, the newton rows of a hand-over
 * included) with statuses that match their certificates and no duality gap; the refusals (the
 * diagonal and full structures, a block with the diagonal structure, a penalty without a factor
 * form); on blocks wide enough for low ranks, the factored iterations carry the solve to the end
 * (no newton hand-over), also with a dense block; a preset interrupt; the iteration limit
 * reported honestly; checkpoints: resumed from
 * any state it handed out (or stopped by an interrupt) the solve ends as the uninterrupted one,
 * bit for bit, and another solve's or a damaged state is refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solver_fixtures.h"

static atf_result *solve_as(const atf_problem *p, atf_method method, atf_loss loss, double eps,
                            const atf_hooks *hooks, char *err)
{
    atf_settings set = tight(eps);
    set.method = method, set.loss = loss, set.max_iter = 2000;
    atf_result *res = NULL;
    atf_error e = atf_solve(p, &set, hooks, &res, err);
    CHECK(e == ATF_OK && res, "%s: %s", atf_method_name(method), err);
    return e == ATF_OK ? res : NULL;
}

/* The numerical rank of every block of a result (singular values above 1e-6 of the largest of
 * all blocks). */
static void ranks_of(const atf_result *res, int *rank)
{
    double top = 0.0;
    for (int l = 0; l < res->nblocks; l++)
        top = fmax(top, res->blocks[l].k ? res->blocks[l].d[0] : 0.0);
    for (int l = 0; l < res->nblocks; l++) {
        const atf_result_block *b = &res->blocks[l];
        rank[l] = 0;
        for (int j = 0; j < b->k; j++)
            rank[l] += b->d[j] > 1e-6 * top;
    }
}

/* The ranks in the method note ("factored: ranks 3, 1, 2; …"), count of them. */
static int ranks_noted(const atf_result *res, int *rank, int max)
{
    const char *at = strstr(res->info.method_note, "factored: ranks");
    if (!at)
        return 0;
    at += strlen("factored: ranks");
    int count = 0, used = 0;
    while (count < max && sscanf(at, " %d%n", &rank[count], &used) == 1) {
        count++, at += used;
        if (*at != ',')
            break;
        at++;
    }
    return count;
}

static void same_point(const atf_result *a, const atf_result *b, int n, const char *what)
{
    double *ba = stack_result(a, n), *bb = stack_result(b, n);
    double dobj = fabs(a->info.objective - b->info.objective) / fabs(b->info.objective);
    double db = rel_dist(ba, bb, (size_t)n);
    CHECK(a->info.status == ATF_STATUS_SOLVED && b->info.status == ATF_STATUS_SOLVED,
          "%s: statuses %s, %s (pg %.3g, %.3g)", what, atf_status_name(a->info.status),
          atf_status_name(b->info.status), a->info.pg_residual, b->info.pg_residual);
    CHECK(dobj < 1e-8 && db < 1e-6, "%s: objective %.15g vs %.15g (%.2g), B %.2g", what,
          a->info.objective, b->info.objective, dobj, db);
    free(ba), free(bb);
}

/* ---- the convex penalties: newton's optimum ---------------------------------------------- */

static void test_against_newton(void)
{
    static const int shapes[3][2] = {{7, 5}, {5, 4}, {4, 1}};
    const char *convex[] = {"sq", "zsq:scale=0.1", "nuclear:scale=0.01", "nuclear:scale=0.2",
                            "pow:p=3", "fixed", "balanced"};
    atf_loss losses[2] = {{ATF_LOSS_SQUARED, 0.5}, {ATF_LOSS_XENT, 0.5}};
    for (int kind = 0; kind < 2; kind++) /* factored; factored + dense + sparse */
        for (size_t pi = 0; pi < sizeof convex / sizeof convex[0]; pi++) {
            atf_problem *p = factored(140 + pi, 16, 3, 3, shapes, convex[pi], 1);
            add_labels(p, 150 + pi, 1);
            if (kind) {
                make_dense(p, 1, 0);
                make_dense(p, 2, 1);
            }
            int n = (int)atf_problem_nvars(p);
            for (int li = 0; li < 2; li++) {
                char what[160], err[ATF_ERRLEN] = "";
                snprintf(what, sizeof what, "%s blocks, %s, loss %s", kind ? "mixed" : "factored",
                         convex[pi], atf_loss_name(losses[li].kind));
                atf_result *nw = solve_as(p, ATF_METHOD_NEWTON, losses[li], 1e-10, NULL, err);
                atf_result *fa = solve_as(p, ATF_METHOD_FACTORED, losses[li], 1e-10, NULL, err);
                if (nw && fa) {
                    same_point(fa, nw, n, what);
                    CHECK(fa->info.pg_residual <= 1e-10 && fa->info.duality_gap < 1e-9 &&
                              fa->info.stationarity < 1e-8,
                          "%s: certificates pg %.3g gap %.3g stationarity %.3g", what,
                          fa->info.pg_residual, fa->info.duality_gap, fa->info.stationarity);
                    CHECK(strcmp(fa->info.method, "factored") == 0 &&
                              fa->info.operator_passes > 0 && fa->info.iterations > 0,
                          "%s: method %s, passes %ld", what, fa->info.method,
                          (long)fa->info.operator_passes);
                    /* nuclear: B's ranks are newton's (singular values above 1e-6 of the
                     * largest; the factors may keep columns below that the certificate passes) */
                    if (strncmp(convex[pi], "nuclear", 7) == 0) {
                        int want[3], got[3];
                        ranks_of(nw, want), ranks_of(fa, got);
                        CHECK(got[0] == want[0] && got[1] == want[1] && got[2] == want[2],
                              "%s: ranks %d, %d, %d, newton's %d, %d, %d (\"%s\")", what,
                              got[0], got[1], got[2], want[0], want[1], want[2],
                              fa->info.method_note);
                    }
                }
                atf_result_free(nw), atf_result_free(fa);
            }
            atf_problem_free(p);
        }
}

/* Blocks wide enough for the answer's ranks to keep the factors cheaper than B: the factored
 * iterations carry the solve to its certificate (no newton hand-over), to newton's optimum;
 * with a dense second block the Hessian products take the unfused, double-precision path. */
static void test_wide(void)
{
    static const int shapes[2][2] = {{30, 20}, {20, 3}};
    const struct {
        const char *pen;
        atf_loss loss;
    } cases[] = {{"nuclear:scale=0.05", {ATF_LOSS_XENT, 0.2}},
                 {"nuclear:scale=0.2", {ATF_LOSS_XENT, 0.2}},
                 {"nuclear:scale=1", {ATF_LOSS_XENT, 0.2}},
                 {"nuclear:scale=0.2", {ATF_LOSS_SQUARED, 0.2}}};
    for (int kind = 0; kind < 2; kind++)
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            atf_problem *p = factored(91, 24, 2, 2, shapes, cases[c].pen, 0);
            add_labels(p, 92, 1);
            if (kind)
                make_dense(p, 1, 0);
            char what[128], err[ATF_ERRLEN] = "";
            snprintf(what, sizeof what, "wide %s blocks, %s, %s", kind ? "mixed" : "factored",
                     cases[c].pen, atf_loss_name(cases[c].loss.kind));
            atf_result *nw = solve_as(p, ATF_METHOD_NEWTON, cases[c].loss, 1e-10, NULL, err);
            atf_result *fa = solve_as(p, ATF_METHOD_FACTORED, cases[c].loss, 1e-10, NULL, err);
            if (nw && fa) {
                same_point(fa, nw, (int)atf_problem_nvars(p), what);
                CHECK(strstr(fa->info.method_note, "factored: ranks") &&
                          !strstr(fa->info.method_note, "newton continued"),
                      "%s: not the factored iterations to the end (\"%s\")", what,
                      fa->info.method_note);
            }
            atf_result_free(nw), atf_result_free(fa);
            atf_problem_free(p);
        }
}

/* ---- ranks: grown from zero, pruned from full ----------------------------------------------- */

static void test_ranks(void)
{
    static const int shapes[2][2] = {{12, 9}, {9, 3}};
    atf_loss losses[2] = {{ATF_LOSS_SQUARED, 0.3}, {ATF_LOSS_XENT, 0.3}};
    for (int li = 0; li < 2; li++) {
        atf_problem *p = factored(160 + li, 30, 3, 2, shapes, "nuclear:scale=0.05", 0);
        add_labels(p, 170 + li, 1);
        int n = (int)atf_problem_nvars(p);
        char err[ATF_ERRLEN] = "";
        /* the full-rank start: the answer of a smooth penalty on the same problem */
        atf_problem *q = factored(160 + li, 30, 3, 2, shapes, "sq", 0);
        add_labels(q, 170 + li, 1);
        atf_result *full = solve_as(q, ATF_METHOD_NEWTON, losses[li], 1e-8, NULL, err);
        atf_result *cold = solve_as(p, ATF_METHOD_FACTORED, losses[li], 1e-10, NULL, err);
        atf_hooks warm = {.warm = full};
        atf_result *hot = full ? solve_as(p, ATF_METHOD_FACTORED, losses[li], 1e-10, &warm, err)
                               : NULL;
        if (full && cold && hot) {
            int rf[2], rc[2], rh[2];
            ranks_of(full, rf);
            CHECK(rf[0] == 9 && rf[1] == 3, "the smooth answer's ranks %d, %d (not full)", rf[0],
                  rf[1]);
            ranks_of(cold, rc), ranks_of(hot, rh);
            int grown = ranks_noted(cold, rf, 2) == 2; /* the factors' ranks, noted */
            CHECK(grown && rc[0] == rh[0] && rc[1] == rh[1] && rc[0] < 9,
                  "%s: ranks cold %d, %d, warm from full %d, %d (noted: %d)",
                  atf_loss_name(losses[li].kind), rc[0], rc[1], rh[0], rh[1], grown);
            same_point(hot, cold, n, "warm start at full rank against the cold start");
        }
        atf_result_free(full), atf_result_free(cold), atf_result_free(hot);
        atf_problem_free(p), atf_problem_free(q);
    }
}

/* ---- nonconvex penalties: monotone, honest ------------------------------------------------- */

static void test_nonconvex(void)
{
    static const int shapes[2][2] = {{8, 6}, {6, 2}};
    const char *pens[] = {"abs:scale=0.05", "logsq:scale=0.05", "pow:p=1.5,scale=0.05", "sq+sq",
                          "balanced+balanced"};
    atf_loss losses[2] = {{ATF_LOSS_SQUARED, 0.2}, {ATF_LOSS_XENT, 0.2}};
    for (size_t pi = 0; pi < sizeof pens / sizeof pens[0]; pi++)
        for (int li = 0; li < 2; li++) {
            atf_problem *p = factored(180 + pi, 20, 2, 2, shapes, pens[pi], 0);
            add_labels(p, 190 + pi, 1);
            atf_settings set = tight(1e-9);
            set.method = ATF_METHOD_FACTORED, set.loss = losses[li], set.max_iter = 400;
            char what[96];
            snprintf(what, sizeof what, "factored, %s, %s", pens[pi],
                     atf_loss_name(losses[li].kind));
            check_nonconvex_run(p, set, what);
            atf_problem_free(p);
        }
}

/* ---- refusals, interrupt, limit -------------------------------------------------------------- */

static void refused(const atf_problem *p, atf_global_structure structure, const char *want)
{
    atf_settings set = atf_settings_default();
    set.method = ATF_METHOD_FACTORED, set.structure = structure;
    set.loss = (atf_loss){ATF_LOSS_SQUARED, 1.0};
    atf_result *res = NULL;
    char err[ATF_ERRLEN] = "";
    atf_error e = atf_solve(p, &set, NULL, &res, err);
    CHECK(e == ATF_E_USAGE && !res && strstr(err, want) && !strchr(err, '\n'),
          "refusal \"%s\": error %d \"%s\"", want, (int)e, err);
    atf_result_free(res);
}

static void test_refusals(void)
{
    static const int shapes[2][2] = {{5, 4}, {4, 2}};
    atf_problem *p = factored(200, 10, 2, 2, shapes, "nuclear", 0);
    refused(p, ATF_GLOBAL_DIAGONAL, "layer structure");
    refused(p, ATF_GLOBAL_FULL, "layer structure");
    char err[ATF_ERRLEN] = "";
    CHECK(atf_problem_set_penalty(p, "pow:p=0.5", err) == ATF_OK, "%s", err);
    refused(p, ATF_GLOBAL_LAYER, "has no factor form");
    atf_problem_free(p);
    /* interpolation is the augmented Lagrangian's or ADMM's */
    atf_problem *q = factored(201, 10, 2, 2, shapes, "nuclear", 0);
    atf_settings set = atf_settings_default();
    set.method = ATF_METHOD_FACTORED;
    atf_result *res = NULL;
    atf_error e = atf_solve(q, &set, NULL, &res, err);
    CHECK(e == ATF_E_USAGE && !res && strstr(err, "factored"), "interpolation: %d \"%s\"",
          (int)e, err);
    atf_problem_free(q);
}

static void test_stops(void)
{
    static const int shapes[2][2] = {{9, 7}, {7, 2}};
    atf_problem *p = factored(210, 24, 2, 2, shapes, "nuclear:scale=0.05", 0);
    add_labels(p, 211, 1);
    int n = (int)atf_problem_nvars(p);
    char err[ATF_ERRLEN] = "";
    volatile sig_atomic_t stop = 1;
    atf_hooks hooks = {.interrupt = &stop};
    atf_result *res = solve_as(p, ATF_METHOD_FACTORED, (atf_loss){ATF_LOSS_XENT, 0.3}, 1e-10,
                               &hooks, err);
    if (res) {
        double *b = stack_result(res, n), norm = 0.0;
        for (int i = 0; i < n; i++)
            norm += fabs(b[i]);
        CHECK(res->info.status == ATF_STATUS_INTERRUPTED && isfinite(res->info.pg_residual) &&
                  isfinite(norm),
              "preset interrupt: status %s, pg %.3g", atf_status_name(res->info.status),
              res->info.pg_residual);
        free(b);
    }
    atf_result_free(res);
    atf_settings set = tight(1e-12);
    set.method = ATF_METHOD_FACTORED, set.loss = (atf_loss){ATF_LOSS_XENT, 0.3};
    set.max_iter = 3;
    res = NULL;
    CHECK(atf_solve(p, &set, NULL, &res, err) == ATF_OK && res, "limit: %s", err);
    if (res)
        CHECK(res->info.status == ATF_STATUS_MAX_ITERATIONS && res->info.pg_residual > 1e-12 &&
                  isfinite(res->info.pg_residual) && res->info.iterations <= 3 + 1,
              "limit: status %s after %d steps, pg %.3g", atf_status_name(res->info.status),
              res->info.iterations, res->info.pg_residual);
    atf_result_free(res);
    atf_problem_free(p);
}

/* ---- checkpoints: a resumed solve is the uninterrupted one, bit for bit ---------------------- */

static void test_checkpoints(void)
{
    /* blocks wide enough that the answer's ranks keep the factors cheaper than B (on smaller
     * ones newton takes over at once); the squared case hands over to newton on the way, which
     * the resumed solves reach again */
    static const int shapes[2][2] = {{30, 20}, {20, 3}};
    atf_loss xent = {ATF_LOSS_XENT, 0.2}, squared = {ATF_LOSS_SQUARED, 0.2};
    checkpoint_case_on(ATF_METHOD_FACTORED, "nuclear:scale=0.05", xent, -1, 3, 0.0, 24, shapes,
                       "factored: ranks");
    checkpoint_case_on(ATF_METHOD_FACTORED, "nuclear:scale=0.2", xent, -1, 3, 0.0, 24, shapes,
                       "factored: ranks");
    checkpoint_case_on(ATF_METHOD_FACTORED, "nuclear:scale=0.05", squared, -1, 3, 0.0, 24, shapes,
                       "newton continued");
}

static void test_checkpoint_at_limit(void)
{
    static const int shapes[2][2] = {{30, 20}, {20, 3}};
    atf_problem *p = factored(91, 24, 2, 2, shapes, "nuclear:scale=0.05", 0);
    add_labels(p, 92, 1);
    atf_settings set = tight(1e-9);
    set.method = ATF_METHOD_FACTORED, set.loss = (atf_loss){ATF_LOSS_XENT, 0.2};
    set.max_iter = 300;
    checkpoint_at_limit_on(p, set, 31, 6, "factored");
    atf_problem_free(p);
}

int main(void)
{
    test_against_newton();
    test_wide();
    test_ranks();
    test_nonconvex();
    test_refusals();
    test_stops();
    test_checkpoints();
    test_checkpoint_at_limit();
    return atf_test_finish("test_factored");
}
