/* report.c — text forms of a result for the command line: one JSON line, a human summary.
 * The library formats into caller buffers and never prints. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "atf_solver.h"

/* JSON has no NaN/Infinity: write null for them. */
static int json_number(char *buf, size_t len, const char *key, double v)
{
    if (!isfinite(v))
        return snprintf(buf, len, "\"%s\":null", key);
    return snprintf(buf, len, "\"%s\":%.17g", key, v);
}

typedef struct {
    char *buf;
    size_t len, used;
} sink;

static void add(sink *k, int n)
{
    if (n > 0)
        k->used += (size_t)n;
}

static char *at(sink *k)
{
    return k->used < k->len ? k->buf + k->used : NULL;
}

static size_t room(sink *k)
{
    return k->used < k->len ? k->len - k->used : 0;
}

int atf_result_json(const atf_result *res, char *buf, size_t len)
{
    sink k = {buf, len, 0};
    add(&k, snprintf(at(&k), room(&k),
                     "{\"status\":\"%s\",\"method\":\"%s\",\"structure\":\"%s\","
                     "\"iterations\":%d",
                     atf_status_name(res->status), res->method, res->structure,
                     res->iterations));
    const struct {
        const char *key;
        double v;
    } fields[] = {
        {"objective", res->objective},
        {"primal_residual", res->primal_residual},
        {"dual_residual", res->dual_residual},
        {"constraint_residual", res->constraint_residual},
        {"stationarity", res->stationarity},
        {"ls_residual", res->ls_residual},
        {"seconds", res->solve_seconds},
        {"setup_seconds", res->setup_seconds},
        {"projection_seconds", res->projection_seconds},
        {"prox_seconds", res->prox_seconds},
        {"other_seconds", res->other_seconds},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        add(&k, snprintf(at(&k), room(&k), ","));
        add(&k, json_number(at(&k), room(&k), fields[i].key, fields[i].v));
    }
    add(&k, snprintf(at(&k), room(&k), "}"));
    return (int)k.used;
}

/* A certificate this large on a converged ADMM run means the residual tests accepted a point whose
 * small singular values are still polluted (docs/solver.md §6): say so rather than stay silent. */
#define SUMMARY_CERTIFICATE_NOTE 1e-3

int atf_result_summary(const atf_result *res, char *buf, size_t len)
{
    sink k = {buf, len, 0};
    add(&k, snprintf(at(&k), room(&k),
                     "status %s (method %s, structure %s) after %d iterations\n"
                     "  objective %.10g\n"
                     "  constraint residual %.3e, stationarity %.3e, primal %.3e, dual %.3e, "
                     "least-squares residual %.3e\n"
                     "  time %.3f s (setup %.3f, projection %.3f, prox/SVD %.3f, other %.3f)\n",
                     atf_status_name(res->status), res->method, res->structure, res->iterations,
                     res->objective, res->constraint_residual, res->stationarity,
                     res->primal_residual, res->dual_residual, res->ls_residual,
                     res->solve_seconds, res->setup_seconds, res->projection_seconds,
                     res->prox_seconds, res->other_seconds));
    if (res->status == ATF_STATUS_SOLVED && !strcmp(res->method, "admm") &&
        res->stationarity > SUMMARY_CERTIFICATE_NOTE)
        add(&k, snprintf(at(&k), room(&k),
                         "  note: stationarity %.1e is large: the point is not yet stationary; "
                         "tighten --tol (docs/solver.md §6)\n",
                         res->stationarity));
    return (int)k.used;
}
