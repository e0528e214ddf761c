/* report.c — text forms of a result for the command line: one JSON line (jansson), a human
 * summary, and the run's provenance. The library formats into caller buffers and never prints. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf_solver.h"
#include "atf_report.h"

json_t *atf_json_number(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

json_t *atf_json_text(const char *s)
{
    json_t *t = json_string(s ? s : "");
    if (t)
        return t;
    /* Not UTF-8 (e.g. a Latin-1 file name): keep the ASCII bytes and mark the others. */
    char *copy = strdup(s);
    if (!copy)
        return NULL;
    for (char *c = copy; *c; c++)
        if ((unsigned char)*c >= 0x80)
            *c = '?';
    t = json_string(copy);
    free(copy);
    return t;
}

char *atf_json_line(const json_t *v)
{
    /* JSON_ENCODE_ANY: scalars too; the default real precision (17 digits) round-trips. */
    return v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
}

/* json_object_set_new ignores a NULL value (out of memory): the key is then missing. */
json_t *atf_result_json_object(const atf_result *res)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "status", atf_json_text(atf_status_name(res->info.status)));
    json_object_set_new(o, "method", atf_json_text(res->info.method));
    json_object_set_new(o, "linsys", res->info.linsys[0] ? atf_json_text(res->info.linsys)
                                                         : json_null());
    json_object_set_new(o, "structure", json_string(atf_structure_name(res->structure)));
    json_object_set_new(o, "loss", res->loss[0] ? atf_json_text(res->loss) : json_null());
    json_object_set_new(o, "iterations", json_integer(res->info.iterations));
    const struct {
        const char *key;
        double v;
    } fields[] = {
        {"objective", res->info.objective},
        {"loss_value", res->info.loss_value},
        {"penalty_value", res->info.penalty_value},
        {"primal_residual", res->info.primal_residual},
        {"dual_residual", res->info.dual_residual},
        {"constraint_residual", res->info.constraint_residual},
        {"stationarity", res->info.stationarity},
        {"pg_residual", res->info.pg_residual},
        {"duality_gap", res->info.duality_gap},
        {"ls_residual", res->info.ls_residual},
        {"seconds", res->info.solve_seconds},
        {"setup_seconds", res->info.setup_seconds},
        {"projection_seconds", res->info.projection_seconds},
        {"prox_seconds", res->info.prox_seconds},
        {"other_seconds", res->info.other_seconds},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        json_object_set_new(o, fields[i].key, atf_json_number(fields[i].v));
    const struct {
        const char *key;
        int v;
    } counts[] = {{"operator_passes", res->info.operator_passes},
                  {"inner_iterations", res->info.inner_iterations},
                  {"fallback_steps", res->info.fallback_steps}};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) /* -1: not counted */
        json_object_set_new(o, counts[i].key,
                            counts[i].v >= 0 ? json_integer(counts[i].v) : json_null());
    json_object_set_new(o, "method_note", atf_json_text(res->info.method_note));
    if (res->problem_fingerprint[0])
        json_object_set_new(o, "problem_fingerprint", atf_json_text(res->problem_fingerprint));
    return o;
}

int atf_result_json(const atf_result *res, char *buf, size_t len)
{
    json_t *o = atf_result_json_object(res);
    char *text = atf_json_line(o);
    json_decref(o);
    int n = snprintf(buf, len, "%s", text ? text : "{\"status\":null}");
    free(text);
    return n;
}

void atf_result_record_run(atf_result *res, const atf_settings *set, const char *penalty_override,
                           const char *command)
{
    if (!res->loss[0]) /* a solver that fits a penalized loss records its own spec */
        snprintf(res->loss, sizeof res->loss, "interpolate");
    snprintf(res->penalty_override, sizeof res->penalty_override, "%s",
             penalty_override ? penalty_override : "");
    snprintf(res->command, sizeof res->command, "%s", command ? command : "");
    res->tol = set->eps_rel;
    res->eps_abs = set->eps_abs;
    res->rho = set->rho;
    res->alpha = set->alpha;
    res->max_iter = set->max_iter;
    res->reduce = set->reduce != 0;
    res->adaptive_rho = set->adaptive_rho != 0;
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

/* A certificate this large on a converged ADMM run means the residual tests accepted a point whose
 * small singular values are still polluted (docs/record/solver.md §6): say so rather than stay
 * silent. */
#define SUMMARY_CERTIFICATE_NOTE 1e-3

int atf_result_summary(const atf_result *res, char *buf, size_t len)
{
    sink k = {buf, len, 0};
    add(&k, snprintf(at(&k), room(&k),
                     "status %s (method %s%s%s, structure %s) after %d iterations\n"
                     "  objective %.10g\n"
                     "  constraint residual %.3e, stationarity %.3e",
                     atf_status_name(res->info.status), res->info.method,
                     res->info.linsys[0] ? " by " : "", res->info.linsys,
                     atf_structure_name(res->structure), res->info.iterations,
                     res->info.objective, res->info.constraint_residual, res->info.stationarity));
    /* the measures of the method's own stopping test, where it has them (NaN: it has none) */
    const char *names[3] = {"primal", "dual", "least-squares residual"};
    double vals[3] = {res->info.primal_residual, res->info.dual_residual, res->info.ls_residual};
    for (int j = 0; j < 3; j++)
        if (!isnan(vals[j]))
            add(&k, snprintf(at(&k), room(&k), ", %s %.3e", names[j], vals[j]));
    add(&k, snprintf(at(&k), room(&k),
                     "\n  time %.3f s (setup %.3f, projection %.3f, prox/SVD %.3f, other %.3f)\n",
                     res->info.solve_seconds, res->info.setup_seconds, res->info.projection_seconds,
                     res->info.prox_seconds, res->info.other_seconds));
    if (!isnan(res->info.loss_value)) /* a penalized loss: its parts and FISTA's certificates */
        add(&k, snprintf(at(&k), room(&k),
                         "  loss %s: loss %.10g + penalty %.10g = objective %.10g\n"
                         "  proximal-gradient residual %.3e, duality gap %.3e\n",
                         res->loss[0] ? res->loss : "?", res->info.loss_value, res->info.penalty_value,
                         res->info.objective, res->info.pg_residual, res->info.duality_gap));
    if (res->info.operator_passes >= 0)
        add(&k, snprintf(at(&k), room(&k), "  work: %d passes over the data (A or Aᵀ)%s",
                         res->info.operator_passes, res->info.inner_iterations >= 0 ? "" : "\n"));
    if (res->info.operator_passes >= 0 && res->info.inner_iterations >= 0) {
        add(&k, snprintf(at(&k), room(&k), ", %d CG steps", res->info.inner_iterations));
        if (res->info.fallback_steps >= 0) /* -1: not counted (the CG baseline has none) */
            add(&k, snprintf(at(&k), room(&k), ", %d fallback steps", res->info.fallback_steps));
        add(&k, snprintf(at(&k), room(&k), "\n"));
    }
    if (res->info.method_note[0])
        add(&k, snprintf(at(&k), room(&k), "  note: %s\n", res->info.method_note));
    if (res->info.status == ATF_STATUS_SOLVED && !strcmp(res->info.method, "admm") &&
        res->info.stationarity > SUMMARY_CERTIFICATE_NOTE)
        add(&k, snprintf(at(&k), room(&k),
                         "  note: stationarity %.1e is large: the point is not yet stationary; "
                         "tighten the relative tolerance eps_rel (docs/record/solver.md §6)\n",
                         res->info.stationarity));
    return (int)k.used;
}
