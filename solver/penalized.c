/* penalized.c — what the methods of the penalized problem (16) share (FISTA, Newton): the first
 * step 1/L, the proximal-gradient step with backtracking, the relative proximal-gradient
 * residual and the certificates of an answer (docs/record/solver.md §14.3). All in work units: the
 * objective is F(x) = Σ Ω̃'(x) + g(x), g(x) = κ L(scale ∘ A'x). */
#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "solver_penalized.h"

#define POWER_ITERATIONS 12 /* at most, for the first step 1/L */
#define POWER_RTOL 1e-2     /* ... stopping once the estimate grows by less than this */
#define STEP_GROW (1.0 / 0.9) /* t grows by this before each step */
#define STEP_SHRINK 0.5       /* backtracking factor */
#define MAX_BACKTRACK 60

double atf_pg_first_step(atf_solver *s, atf_pg_loss *pl, double *w, double *zw, int *iterations)
{
    size_t n = s->n;
    uint64_t seed = 0x9E3779B97F4A7C15ULL;
    for (size_t i = 0; i < n; i++) {
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        w[i] = (double)(seed >> 11) / 9007199254740992.0 - 0.5;
    }
    double lambda_max = 0.0;
    *iterations = 0;
    for (int it = 0; it < POWER_ITERATIONS; it++) {
        double nw = atf_sv_norm(w, n);
        if (!(nw > 0.0) || !isfinite(nw))
            break;
        cblas_dscal((int)n, 1.0 / nw, w, 1);
        atf_sv_apply(s, w, zw);
        atf_pg_loss_lipschitz_weight(pl, zw);
        atf_sv_adjoint(s, zw, w);
        double previous = lambda_max;
        lambda_max = atf_sv_norm(w, n);
        ++*iterations;
        if (lambda_max - previous <= POWER_RTOL * lambda_max)
            break; /* settled: the backtracking absorbs the rest */
    }
    return lambda_max > 0.0 && isfinite(lambda_max) ? 1.0 / lambda_max : 1.0;
}

static double dist(const double *a, const double *b, size_t n)
{
    double sum = 0.0;
    for (size_t i = 0; i < n; i++)
        sum += (a[i] - b[i]) * (a[i] - b[i]);
    return sqrt(sum);
}

int atf_pg_step(atf_solver *s, atf_pg_loss *pl, const double *y, const double *zy,
                const double *g, double *t, double *w, double *xn, double *zn, int *backtracks)
{
    size_t n = s->n;
    double step = *t * STEP_GROW;
    for (int k = 0; k < MAX_BACKTRACK; k++) {
        for (size_t i = 0; i < n; i++)
            w[i] = y[i] - step * g[i];
        double t0 = atf_now();
        atf_sv_prox(s, w, xn, 1.0 / step);
        s->t.prox += atf_now() - t0;
        atf_sv_apply(s, xn, zn);
        double dx = dist(xn, y, n);
        double breg = atf_pg_loss_bregman(pl, zy, zn);
        if (breg <= dx * dx / (2.0 * step) || dx <= 1e-15 * atf_sv_norm(y, n)) {
            *t = step;
            return 0;
        }
        ++*backtracks;
        step *= STEP_SHRINK;
    }
    return -1;
}

double atf_pg_residual(const double *y, const double *xn, const double *g, double t, size_t n)
{
    double G2 = 0.0, xi2 = 0.0, g2 = 0.0;
    for (size_t i = 0; i < n; i++) {
        double G = (y[i] - xn[i]) / t;
        G2 += G * G, xi2 += (G - g[i]) * (G - g[i]), g2 += g[i] * g[i];
    }
    double scale = sqrt(fmax(g2, xi2));
    if (!isfinite(G2) || !isfinite(scale))
        return NAN;
    return scale > 0.0 ? sqrt(G2) / scale : 0.0;
}

void atf_pg_certify(atf_solver *s, atf_pg_loss *pl, const double *x, const double *zx,
                    double t, double F, double *u, double *g, double *w, double *xn,
                    atf_pg_info *info, atf_result *res)
{
    size_t n = s->n;
    atf_pg_loss_eval(pl, zx, u);
    atf_sv_adjoint(s, u, g);
    for (size_t i = 0; i < n; i++)
        w[i] = x[i] - t * g[i];
    atf_sv_prox(s, w, xn, 1.0 / t);
    info->pg_residual = atf_pg_residual(x, xn, g, t, n);
    for (size_t i = 0; i < n; i++)
        w[i] = -g[i];
    double tau = 1e-9 * atf_sv_norm(x, n);
    res->info.stationarity = atf_sv_stationarity(s, x, w, tau);
    info->duality_gap = atf_pg_duality_gap(s, pl, u, g, F);
}
