/* duality.c — the duality gap of the penalized problem (16) for convex penalties: the convex
 * conjugates of the effective penalties (ω̃*, and Σ Ω̃* through singular values) and the dual
 * bound maximised over the scaled gradient (docs/record/solver.md §14.3 "Certificates"). */
#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solver_penalized.h"

#define GOLDEN_STEPS 60 /* golden-section steps of the 1-D maximisations */

/* ---- conjugate of the penalty ------------------------------------------------------------ */

/* Maximum of a unimodal f on [lo, hi] by golden section; returns the value. */
static double golden_max(double (*f)(const void *, double), const void *ctx, double lo,
                         double hi)
{
    const double r = 0.6180339887498949;
    double a = lo, b = hi, c = b - r * (b - a), d = a + r * (b - a);
    double fc = f(ctx, c), fd = f(ctx, d);
    for (int i = 0; i < GOLDEN_STEPS * 2 && b - a > 1e-15 * fabs(b); i++) {
        if (fc < fd) {
            a = c, c = d, fc = fd;
            d = a + r * (b - a), fd = f(ctx, d);
        } else {
            b = d, d = c, fd = fc;
            c = b - r * (b - a), fc = f(ctx, c);
        }
    }
    return fmax(fmax(fc, fd), fmax(f(ctx, lo), f(ctx, hi)));
}

typedef struct {
    const atf_penalty *pen;
    double a; /* u²/4 */
} conj_ctx;

/* ψ(z) = a z² − (ω1 ⊕ ω2)(z) on z ≥ 1 (−∞ where ω is +∞). */
static double conj_psi(const void *ctx, double z)
{
    const conj_ctx *c = ctx;
    double w = atf_penalty_joint(c->pen, z, NULL, NULL);
    return isfinite(w) ? c->a * z * z - w : -INFINITY;
}

/* ω̃*(u) = sup_v |u|v − ω̃(v) = sup_{z≥1} u²z²/4 − ω(z) (exchange the sup over v and the min
 * over z in ω̃(v) = min_z ω(z) + v²/z²). For convex ω̃, ω'(z)/z is nondecreasing, so
 * ψ'(z) = z(u²/2 − ω'(z)/z) changes sign at most once: ψ is unimodal. */
double atf_pg_omega_conjugate(const atf_penalty *pen, double u)
{
    double a = 0.25 * u * u;
    if (atf_penalty_is_nuclear(pen)) {
        double bound = atf_penalty_deriv(pen, 1.0); /* 2√γ */
        return fabs(u) <= bound ? 0.0 : INFINITY;
    }
    if (pen->w1.family == ATF_FAMILY_FIXED && pen->w2.family == ATF_FAMILY_FIXED)
        return a;
    if (a == 0.0)
        return 0.0;
    conj_ctx c = {pen, a};
    double z = 1.0, fz = conj_psi(&c, 1.0);
    for (;;) { /* bracket the maximum: double z while ψ increases */
        if (z > 1e150)
            return INFINITY; /* ψ grows without bound: u is outside dom ω̃* */
        double f2 = conj_psi(&c, 2.0 * z);
        if (!(f2 > fz))
            break;
        z *= 2.0, fz = f2;
    }
    return golden_max(conj_psi, &c, z > 1.0 ? 0.5 * z : 1.0, 2.0 * z);
}

/* The arguments of ω̃* in (Σ Ω̃)*(v): singular values (spectral), |entries| (diagonal), norms
 * (vectors, `full`). They scale with v, so the dual search computes them once. */
typedef struct {
    int nparts;
    const atf_penalty **pen;
    double **vals;
    size_t *count;
} conj_args;

static void conj_args_free(conj_args *ca)
{
    for (int i = 0; i < ca->nparts; i++)
        free(ca->vals[i]);
    free(ca->pen), free(ca->vals), free(ca->count);
}

static int conj_args_build(atf_solver *s, const double *v, conj_args *ca)
{
    int parts = s->structure == ATF_GLOBAL_FULL ? 1 : s->nvars;
    ca->nparts = parts;
    ca->pen = calloc((size_t)parts, sizeof *ca->pen);
    ca->vals = calloc((size_t)parts, sizeof *ca->vals);
    ca->count = calloc((size_t)parts, sizeof *ca->count);
    if (!ca->pen || !ca->vals || !ca->count)
        return -1;
    if (s->structure == ATF_GLOBAL_FULL) {
        ca->pen[0] = &s->full_pen;
        ca->count[0] = 1;
        if (!(ca->vals[0] = malloc(sizeof(double))))
            return -1;
        ca->vals[0][0] = atf_sv_norm(v, s->n);
        return 0;
    }
    for (int l = 0; l < s->nvars; l++) {
        atf_sv_var *var = &s->vars[l];
        const double *vv = v + var->off;
        ca->pen[l] = &var->pen;
        size_t n = var->kind == ATF_SV_ENTRYWISE ? var->len : var->k > 1 ? (size_t)var->k : 1;
        ca->count[l] = n;
        if (!(ca->vals[l] = malloc(n * sizeof(double))))
            return -1;
        if (var->kind == ATF_SV_ENTRYWISE) {
            for (size_t i = 0; i < n; i++)
                ca->vals[l][i] = fabs(vv[i]);
        } else if (var->k > 1) {
            if (atf_sv_svd(var, vv) != 0)
                return -1;
            memcpy(ca->vals[l], var->s, n * sizeof(double));
        } else {
            ca->vals[l][0] = atf_sv_norm(vv, var->len);
        }
    }
    return 0;
}

static double conj_args_value(const conj_args *ca, double theta)
{
    double sum = 0.0;
    for (int i = 0; i < ca->nparts && isfinite(sum); i++)
        for (size_t j = 0; j < ca->count[i] && isfinite(sum); j++)
            sum += atf_pg_omega_conjugate(ca->pen[i], theta * ca->vals[i][j]);
    return sum;
}

double atf_pg_penalty_conjugate(atf_solver *s, const double *v)
{
    if (!atf_sv_all_convex(s))
        return NAN;
    conj_args ca = {0};
    double value = conj_args_build(s, v, &ca) == 0 ? conj_args_value(&ca, 1.0) : NAN;
    conj_args_free(&ca);
    return value;
}

/* ---- duality gap ------------------------------------------------------------------------- */

/* Dual candidates u_θ = θ ∇ℓ(A'x), θ ∈ [0, 1] (θ = 1 is the one Fenchel–Young makes exact at
 * the optimum; smaller θ bring −A'ᵀu_θ inside dom Ω̃* for penalties of bounded slope, e.g.
 * nuclear). D(θ) = −ℓ*(θu) − Ω̃*(−θ A'ᵀu) is concave in θ and maximised by golden section. */
typedef struct {
    atf_pg_loss *pl;
    const conj_args *ca;
    const double *u;
    double *scratch;
} dual_ctx;

static double dual_value(const void *ctx, double theta)
{
    const dual_ctx *d = ctx;
    int M = d->pl->M;
    for (int m = 0; m < M; m++)
        d->scratch[m] = theta * d->u[m];
    double value = -atf_pg_loss_conjugate(d->pl, d->scratch) - conj_args_value(d->ca, theta);
    return isnan(value) ? -INFINITY : value;
}

/* (F(x) − max_θ D(θ)) / |F(x)| for convex penalties, NaN otherwise. u = ∇ℓ(A'x) [M],
 * g = A'ᵀu [n]; F in work units. */
double atf_pg_duality_gap(atf_solver *s, atf_pg_loss *pl, const double *u, const double *g,
                          double F)
{
    if (!atf_sv_all_convex(s))
        return NAN;
    size_t n = s->n;
    double *v = malloc((n ? n : 1) * sizeof *v), *scratch = malloc((size_t)pl->M * sizeof *v);
    conj_args ca = {0};
    double gap = NAN;
    if (!v || !scratch)
        goto done;
    for (size_t i = 0; i < n; i++)
        v[i] = -g[i];
    if (conj_args_build(s, v, &ca) != 0)
        goto done;
    dual_ctx d = {pl, &ca, u, scratch};
    double best = dual_value(&d, 1.0);
    best = fmax(best, golden_max(dual_value, &d, 0.0, 1.0));
    gap = (F - best) / fmax(fabs(F), DBL_MIN);
done:
    conj_args_free(&ca);
    free(v), free(scratch);
    return gap;
}
