/* util.c — the small helpers every file of the solver shares: the names of the settings' enums
 * (linsys, precond), the verbose log, the stop flag, norms and finiteness, whether the
 * penalties are convex. Nothing here knows a method. */
#include <cblas.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "solver_internal.h"

static const char *const KIND_NAMES[] = {"auto", "direct", "pcg"};
static const char *const PRECOND_NAMES[] = {"auto", "none", "jacobi", "nystrom",
                                            "nystrom-block", "gram32"};
#define NAMES(a) (sizeof(a) / sizeof((a)[0]))

static const char *name_of(const char *const *names, size_t n, int v)
{
    return v >= 0 && (size_t)v < n ? names[v] : NULL;
}

static int index_of(const char *const *names, size_t n, const char *name)
{
    for (size_t i = 0; name && i < n; i++)
        if (!strcmp(name, names[i]))
            return (int)i;
    return -1;
}

const char *atf_linsys_kind_name(atf_linsys_kind k)
{
    return name_of(KIND_NAMES, NAMES(KIND_NAMES), (int)k);
}

atf_error atf_linsys_kind_parse(const char *name, atf_linsys_kind *k)
{
    int i = index_of(KIND_NAMES, NAMES(KIND_NAMES), name);
    if (i < 0)
        return ATF_E_INPUT;
    *k = (atf_linsys_kind)i;
    return ATF_OK;
}

const char *atf_precond_name(atf_precond p)
{
    return name_of(PRECOND_NAMES, NAMES(PRECOND_NAMES), (int)p);
}

atf_error atf_precond_parse(const char *name, atf_precond *p)
{
    int i = index_of(PRECOND_NAMES, NAMES(PRECOND_NAMES), name);
    if (i < 0)
        return ATF_E_INPUT;
    *p = (atf_precond)i;
    return ATF_OK;
}

void atf_sv_start(const atf_solver *s, double *x)
{
    if (s->warm)
        memcpy(x, s->warm, s->n * sizeof *x);
    else
        memset(x, 0, s->n * sizeof *x);
}

void atf_sv_log(const atf_solver *s, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (s->hooks.log)
        s->hooks.log(s->hooks.log_ctx, line);
    else
        fputs(line, stderr);
}

#define PROGRESS_INTERVAL 0.1 /* seconds between calls of hooks.progress */

void atf_sv_progress(atf_solver *s, atf_solve_progress p)
{
    if (!s->hooks.progress)
        return;
    double now = atf_now();
    if (now - s->progress_last < PROGRESS_INTERVAL)
        return;
    s->progress_last = now;
    p.seconds = now - s->solve_start;
    s->hooks.progress(s->hooks.progress_ctx, &p);
}

/* Over processes, one stop flag raised stops them all at the same step. */
int atf_sv_interrupted(const atf_solver *s)
{
    double raised = s->hooks.interrupt && *s->hooks.interrupt ? 1.0 : 0.0;
    return atf_sv_max(s, raised) != 0.0;
}

double atf_sv_norm(const double *x, size_t n)
{
    return n ? cblas_dnrm2((int)n, x, 1) : 0.0;
}

int atf_sv_all_convex(const atf_solver *s)
{
    if (s->structure == ATF_GLOBAL_FULL)
        return atf_penalty_is_convex(&s->full_pen);
    for (int l = 0; l < s->nvars; l++)
        if (!atf_penalty_is_convex(&s->vars[l].pen))
            return 0;
    return 1;
}

int atf_sv_all_finite(const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return 0;
    return 1;
}
