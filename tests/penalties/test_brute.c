/* test_brute.c — the library against an independent brute force written here from the
 * definitions alone (its own ω formulas, dense log grids, golden-section refinement):
 *   ω̃(v) = min_{z≥1} ⊕(z) + v²/z²,   ⊕(z) = min_{1≤a≤z} ω1(a) + ω2(z/a),
 *   min_d t ω̃(d) + ½(d − v)² = t · min_{z≥1} ⊕(z) + v²/(z² + 2t).
 * Agreement to 1e-9 relative for ω̃, ⊕ and the prox objective, for every family and joint of
 * PEN_SPECS, and global optimality of the returned prox over a dense grid of d. */
#include "pen_test.h"

#include <float.h>
#include <string.h>

/* ---- reference ω, in the offset x = z − 1 ------------------------------------------------- */

static double ref_omega(const atf_omega *w, double x)
{
    const double g = w->scale;
    switch (w->family) {
    case ATF_FAMILY_FIXED: return x == 0.0 ? 0.0 : INFINITY;
    case ATF_FAMILY_SQ: return g * x * x;
    case ATF_FAMILY_ABS: return g * x;
    case ATF_FAMILY_POW: return g * pow(x, w->p);
    case ATF_FAMILY_ZSQ: return g * x * (2.0 + x); /* z² − 1 */
    case ATF_FAMILY_LOGSQ: return g * log1p(x) * log1p(x);
    case ATF_FAMILY_BALANCED: { /* z² − 1 − 2 ln z = x² + 2(x − ln(1 + x)) */
        double d = x - log1p(x);
        if (x < 0.1) { /* x − ln(1 + x) = Σ_{n≥2} (−1)^n xⁿ/n, summed without cancellation */
            double term = x * x, sum = 0.0;
            for (int n = 2; n < 40 && fabs(term) > 1e-18 * sum; ++n, term *= -x)
                sum += term / n;
            d = sum;
        }
        return g * (x * x + 2.0 * d);
    }
    case ATF_FAMILY_NUCLEAR: break;
    }
    return NAN;
}

/* ---- reference minimiser: dense log grid + golden section ---------------------------------- */

typedef double (*fn1)(const void *ctx, double x);

#define GRID_PER_DECADE 20
#define GRID_DECADES 16
#define GRID_N (GRID_PER_DECADE * GRID_DECADES + 1)
#define GRID_ROUNDS 3

static double golden(fn1 f, const void *ctx, double a, double b, double *xmin)
{
    const double r = 0.6180339887498949;
    double x1 = b - r * (b - a), x2 = a + r * (b - a), f1 = f(ctx, x1), f2 = f(ctx, x2);
    for (int it = 0; it < 200 && b - a > 1e-12 * (fabs(a) + fabs(b)) + 1e-300; ++it) {
        if (f1 <= f2) {
            b = x2, x2 = x1, f2 = f1;
            x1 = b - r * (b - a), f1 = f(ctx, x1);
        } else {
            a = x1, x1 = x2, f1 = f2;
            x2 = a + r * (b - a), f2 = f(ctx, x2);
        }
    }
    *xmin = f1 <= f2 ? x1 : x2;
    return fmin(f1, f2);
}

/* min over x ∈ [0, X] of f: x = 0 and X·10^(−16..0) (20 per decade); the 3 lowest discrete
 * minima refined by golden section between their neighbours. */
static double brute_min(fn1 f, const void *ctx, double X, double *argmin)
{
    double xs[GRID_N + 1], fs[GRID_N + 1];
    xs[0] = 0.0, fs[0] = f(ctx, 0.0);
    for (int j = 1; j <= GRID_N; ++j) {
        xs[j] = X * pow(10.0, -(double)(GRID_N - j) / GRID_PER_DECADE);
        fs[j] = f(ctx, xs[j]);
    }
    double best = INFINITY, best_x = 0.0;
    for (int round = 0; round < GRID_ROUNDS; ++round) {
        int jmin = -1;
        for (int j = 0; j <= GRID_N; ++j) {
            const int local = (j == 0 || fs[j] <= fs[j - 1]) && (j == GRID_N || fs[j] <= fs[j + 1]);
            if (local && isfinite(fs[j]) && (jmin < 0 || fs[j] < fs[jmin]))
                jmin = j;
        }
        if (jmin < 0)
            break;
        double x, fx = golden(f, ctx, xs[jmin > 0 ? jmin - 1 : 0], xs[jmin < GRID_N ? jmin + 1 : GRID_N], &x);
        if (fs[jmin] < fx)
            fx = fs[jmin], x = xs[jmin];
        if (fx < best)
            best = fx, best_x = x;
        fs[jmin] = INFINITY; /* next round: the next basin */
    }
    if (argmin)
        *argmin = best_x;
    return best;
}

/* ---- reference ⊕ and the 1-D problem ---------------------------------------------------------- */

typedef struct {
    const atf_penalty *pen;
    double xz; /* z − 1 */
} split_ctx;

static double split_objective(const void *ctx, double xa)
{
    const split_ctx *s = ctx;
    const double xb = (s->xz - xa) / (1.0 + xa);
    return ref_omega(&s->pen->w1, xa) + ref_omega(&s->pen->w2, xb > 0.0 ? xb : 0.0);
}

static double ref_oplus(const atf_penalty *pen, double xz)
{
    if (pen->w2.family == ATF_FAMILY_FIXED)
        return ref_omega(&pen->w1, xz);
    if (pen->w1.family == ATF_FAMILY_FIXED)
        return ref_omega(&pen->w2, xz);
    if (xz == 0.0)
        return 0.0;
    split_ctx s = {pen, xz};
    return brute_min(split_objective, &s, xz, NULL);
}

typedef struct {
    const atf_penalty *pen;
    double v, c;
} problem_ctx;

static double problem_objective(const void *ctx, double x)
{
    const problem_ctx *p = ctx;
    const double z = 1.0 + x;
    return ref_oplus(p->pen, x) + p->v * p->v / (z * z + p->c);
}

/* min_{z ≥ 1} ⊕(z) + v²/(z² + c) */
static double ref_problem(const atf_penalty *pen, double v, double c)
{
    problem_ctx p = {pen, v, c};
    /* ⊕(z*) ≤ F(z*) ≤ F(z) for any z: a coarse scan gives a bound, and the search interval
     * ends where ⊕ exceeds it */
    double bound = v * v / (1.0 + c);
    for (int k = 1; k <= 60; ++k)
        bound = fmin(bound, problem_objective(&p, pow(10.0, k / 3.0)));
    double X = 1e-12;
    while (ref_oplus(pen, X) < bound && X < 1e200)
        X *= 2.0;
    return brute_min(problem_objective, &p, X, NULL);
}

/* ---- the checks --------------------------------------------------------------------------- */

static const double VS[] = {1e-3, 0.01, 0.1, 0.3, 0.7, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 30.0, 100.0, 1e3, 1e4};
static const double VS_JOINT[] = {1e-3, 0.1, 0.7, 1.5, 3.0, 10.0, 100.0, 1e4};
static const double TS[] = {0.05, 1.0, 20.0};

/* Joints cost a nested brute force: fewer values. */
static size_t values_for(const atf_penalty *pen, const double **vs)
{
    if (pen->w1.family != ATF_FAMILY_FIXED && pen->w2.family != ATF_FAMILY_FIXED) {
        *vs = VS_JOINT;
        return sizeof VS_JOINT / sizeof VS_JOINT[0];
    }
    *vs = VS;
    return sizeof VS / sizeof VS[0];
}

static void check_value(const char *spec, const atf_penalty *pen)
{
    const double *vs;
    const size_t nv = values_for(pen, &vs);
    for (size_t i = 0; i < nv; ++i) {
        const double v = vs[i], ours = atf_penalty_value(pen, v, NULL), ref = ref_problem(pen, v, 0.0);
        CHECK(rel_diff(ours, ref) <= 1e-9, "%s: value(%g) = %.15g, brute force %.15g", spec, v, ours, ref);
    }
}

static void check_oplus(const char *spec, const atf_penalty *pen)
{
    for (int i = 0; i <= 24; ++i) {
        const double z = pow(10.0, i / 6.0);
        const double ours = atf_penalty_joint(pen, z, NULL, NULL), ref = ref_oplus(pen, z - 1.0);
        CHECK(rel_diff(ours, ref) <= 1e-9 || fabs(ours - ref) <= 1e-300, "%s: joint(%g) = %.15g, brute force %.15g",
              spec, z, ours, ref);
    }
}

/* The prox objective at the returned d, both terms by brute force, against the brute-force
 * minimum; then global optimality over a grid of d with the library's ω̃. */
static void check_prox(const char *spec, const atf_penalty *pen)
{
    const double *vs;
    const size_t nv = values_for(pen, &vs);
    /* the nested fallback (pow p < 1 in a joint) is slow: a coarser grid of d */
    const int nd = pen->w1.family == ATF_FAMILY_POW && pen->w1.p < 1.0 && pen->w2.family != ATF_FAMILY_FIXED ? 100 : 500;
    for (size_t k = 0; k < sizeof TS / sizeof TS[0]; ++k)
        for (size_t i = 0; i < nv; ++i) {
            const double t = TS[k], v = vs[i], d = atf_penalty_prox(pen, v, t, NULL);
            const double at_d = t * ref_problem(pen, d, 0.0) + 0.5 * (d - v) * (d - v);
            const double best = t * ref_problem(pen, v, 2.0 * t);
            CHECK(rel_diff(at_d, best) <= 1e-9, "%s: prox_%g(%g) = %.15g has objective %.15g, "
                  "brute-force minimum %.15g", spec, t, v, d, at_d, best);
            const double ours = t * atf_penalty_value(pen, d, NULL) + 0.5 * (d - v) * (d - v);
            double grid_min = INFINITY;
            for (int j = 0; j <= nd; ++j) {
                const double e = v * j / nd;
                grid_min = fmin(grid_min, t * atf_penalty_value(pen, e, NULL) + 0.5 * (e - v) * (e - v));
            }
            CHECK(ours <= grid_min * (1.0 + 1e-12), "%s: prox_%g(%g) objective %.15g above grid minimum %.15g",
                  spec, t, v, ours, grid_min);
        }
}

int main(void)
{
    for (size_t i = 0; i < N_PEN_SPECS; ++i) {
        const char *spec = PEN_SPECS[i];
        const atf_penalty pen = parse_or_die(spec);
        check_value(spec, &pen);
        if (pen.w1.family != ATF_FAMILY_FIXED && pen.w2.family != ATF_FAMILY_FIXED)
            check_oplus(spec, &pen);
        check_prox(spec, &pen);
    }
    return atf_test_finish("test_brute");
}
