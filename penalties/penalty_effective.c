/* penalty_effective.c — the public calculus of atf_penalty.h: ω̃, ω̃', prox, factor recovery
 * and ⊕, dispatched to the single-family solver (penalty_single.c), the joint curve
 * (penalty_joint.c) or the closed forms of `fixed`, `zsq` and `nuclear`.
 *
 * Everything reduces to the argmin over (a, b) ≥ 1 of ω1(a) + ω2(b) + v²/(a²b² + c):
 *   value   ω̃(v)  = that minimum with c = 0, z = ab its argmin;
 *   deriv   ω̃'(v) = 2v/z² (envelope theorem);
 *   prox    with c = 2t: d = v z²/(z² + 2t) (the minimiser over d for the optimal z);
 *   factors s1 = a, s2 = b, σ = d/z for the value problem at v = d.
 * Negative arguments are handled by symmetry (ω̃ even, prox odd). */
#include "penalty_internal.h"

#include <math.h>

typedef enum {
    PLAN_TRIVIAL,   /* z = 1 always: fixed (+ fixed) */
    PLAN_SINGLE_1,  /* ω2 = fixed: z = a */
    PLAN_SINGLE_2,  /* ω1 = fixed: z = b */
    PLAN_JOINT,     /* two k-monotone families: the λ-curve */
    PLAN_NESTED     /* a family with non-monotone k: nested global scan */
} plan_kind;

typedef struct {
    plan_kind kind;
    const atf_penalty *pen;
    double c;
    pen_curve1 single;
    pen_jcurve joint;
} plan;

/* Everything about the problem that does not depend on v. */
static void plan_init(plan *pl, const atf_penalty *pen, double c)
{
    const int fixed1 = pen->w1.family == ATF_FAMILY_FIXED;
    const int fixed2 = pen->w2.family == ATF_FAMILY_FIXED;
    pl->pen = pen;
    pl->c = c;
    if (fixed1 && fixed2) {
        pl->kind = PLAN_TRIVIAL;
    } else if (fixed2 || fixed1) {
        pl->kind = fixed2 ? PLAN_SINGLE_1 : PLAN_SINGLE_2;
        pen_curve1_init(&pl->single, fixed2 ? &pen->w1 : &pen->w2, c);
    } else if (pen_k_monotone(&pen->w1) && pen_k_monotone(&pen->w2)) {
        pl->kind = PLAN_JOINT;
        pen_jcurve_init(&pl->joint, &pen->w1, &pen->w2, c);
    } else {
        pl->kind = PLAN_NESTED;
    }
}

typedef struct {
    double x1, x2; /* a = 1 + x1, b = 1 + x2 */
} split;

static split plan_argmin(const plan *pl, double v)
{
    split s = {0.0, 0.0};
    if (!(v > 0.0))
        return s;
    switch (pl->kind) {
    case PLAN_TRIVIAL: break;
    case PLAN_SINGLE_1: s.x1 = pen_curve1_argmin(&pl->single, v); break;
    case PLAN_SINGLE_2: s.x2 = pen_curve1_argmin(&pl->single, v); break;
    case PLAN_JOINT: pen_jcurve_argmin(&pl->joint, v, &s.x1, &s.x2); break;
    case PLAN_NESTED:
        pen_joint_nested_argmin(&pl->pen->w1, &pl->pen->w2, v, pl->c, &s.x1, &s.x2);
        break;
    }
    return s;
}

static split pair_argmin(const atf_penalty *pen, double v, double c)
{
    plan pl;
    plan_init(&pl, pen, c);
    return plan_argmin(&pl, v);
}

static double split_z(split s)
{
    return (1.0 + s.x1) * (1.0 + s.x2);
}

/* ---- nuclear: ω = γ z² on z > 0, ω̃ = 2√γ v --------------------------------------------- */

static double nuclear_sqrt_gamma(const atf_penalty *pen)
{
    return sqrt(pen->w1.family == ATF_FAMILY_NUCLEAR ? pen->w1.scale : pen->w2.scale);
}

static double nuclear_prox(double r, double v, double t, double *z)
{
    const double u = v / r - 2.0 * t; /* z² + 2t = v/√γ */
    if (z)
        *z = u > 0.0 ? sqrt(u) : 0.0;
    return v > 2.0 * r * t ? v - 2.0 * r * t : 0.0;
}

/* ---- public API ------------------------------------------------------------------------- */

double atf_penalty_value(const atf_penalty *pen, double v, double *z)
{
    v = fabs(v);
    if (atf_penalty_is_nuclear(pen)) {
        const double r = nuclear_sqrt_gamma(pen);
        if (z)
            *z = sqrt(v / r);
        return 2.0 * r * v;
    }
    const split s = pair_argmin(pen, v, 0.0);
    const double zz = split_z(s);
    if (z)
        *z = zz;
    return pen_omega_x(&pen->w1, s.x1) + pen_omega_x(&pen->w2, s.x2) + (v / zz) * (v / zz);
}

double atf_penalty_deriv(const atf_penalty *pen, double v)
{
    const double sign = v < 0.0 ? -1.0 : 1.0;
    v = fabs(v);
    if (atf_penalty_is_nuclear(pen)) /* at 0: the least-norm subgradient */
        return v > 0.0 ? sign * 2.0 * nuclear_sqrt_gamma(pen) : 0.0;
    const double z = split_z(pair_argmin(pen, v, 0.0));
    return sign * 2.0 * (v / z) / z;
}

double atf_penalty_prox(const atf_penalty *pen, double v, double t, double *z)
{
    const double sign = v < 0.0 ? -1.0 : 1.0;
    v = fabs(v);
    if (!(t > 0.0)) { /* the prox of a zero step is the identity */
        if (z)
            *z = 1.0;
        return sign * v;
    }
    if (atf_penalty_is_nuclear(pen))
        return sign * nuclear_prox(nuclear_sqrt_gamma(pen), v, t, z);
    const double c = 2.0 * t;
    const double zz = split_z(pair_argmin(pen, v, c));
    if (z)
        *z = zz;
    return sign * v / (1.0 + c / (zz * zz));
}

void atf_penalty_prox_many(const atf_penalty *pen, double *v, size_t n, double t)
{
    if (!(t > 0.0))
        return;
    if (atf_penalty_is_nuclear(pen)) {
        const double r = nuclear_sqrt_gamma(pen);
        for (size_t i = 0; i < n; ++i)
            v[i] = (v[i] < 0.0 ? -1.0 : 1.0) * nuclear_prox(r, fabs(v[i]), t, NULL);
        return;
    }
    const double c = 2.0 * t;
    plan pl;
    plan_init(&pl, pen, c);
    for (size_t i = 0; i < n; ++i) {
        const double vi = fabs(v[i]), z = split_z(plan_argmin(&pl, vi));
        v[i] = (v[i] < 0.0 ? -1.0 : 1.0) * vi / (1.0 + c / (z * z));
    }
}

/* Relative step of the numerical slope: the prox is exact to about 1e-15 relative, so a central
 * difference over ±1e-5·v is good to about 1e-9 (checked against smaller and larger steps). */
#define SLOPE_STEP 1e-5
/* One-sided slopes that differ by more than this (relative) mark a kink or a jump of φ. */
#define SLOPE_KINK 0.1

static double zsq_slope(const atf_penalty *pen, double v, double t)
{
    const atf_omega *w = pen->w1.family == ATF_FAMILY_ZSQ ? &pen->w1 : &pen->w2;
    /* spectral Huber: ω̃ = v² up to √γ, then linear; φ = v/(1 + 2t) while that is ≤ √γ */
    return v < sqrt(w->scale) * (1.0 + 2.0 * t) ? 1.0 / (1.0 + 2.0 * t) : 1.0;
}

static int single_zsq(const atf_penalty *pen)
{
    return (pen->w1.family == ATF_FAMILY_ZSQ && pen->w2.family == ATF_FAMILY_FIXED) ||
           (pen->w2.family == ATF_FAMILY_ZSQ && pen->w1.family == ATF_FAMILY_FIXED);
}

double atf_penalty_prox_slope(const atf_penalty *pen, double v, double t)
{
    v = fabs(v);
    if (!(t > 0.0))
        return 1.0;
    if (atf_penalty_is_nuclear(pen))
        return v > 2.0 * nuclear_sqrt_gamma(pen) * t ? 1.0 : 0.0;
    if (v == 0.0 || (pen->w1.family == ATF_FAMILY_FIXED && pen->w2.family == ATF_FAMILY_FIXED))
        return 1.0 / (1.0 + 2.0 * t);
    if (single_zsq(pen))
        return zsq_slope(pen, v, t);
    const double h = SLOPE_STEP * v;
    const double lo = atf_penalty_prox(pen, v - h, t, NULL), mid = atf_penalty_prox(pen, v, t, NULL);
    const double hi = atf_penalty_prox(pen, v + h, t, NULL);
    const double left = (mid - lo) / h, right = (hi - mid) / h;
    if (fabs(right - left) <= SLOPE_KINK * (fabs(right) + fabs(left)))
        return (hi - lo) / (2.0 * h);
    return fabs(left) < fabs(right) ? left : right;
}

void atf_penalty_factors(const atf_penalty *pen, double d, double *s1, double *sigma, double *s2)
{
    const double sign = d < 0.0 ? -1.0 : 1.0;
    d = fabs(d);
    double a, b;
    if (atf_penalty_is_nuclear(pen)) {
        /* z = sqrt(d/√γ) over z > 0; at d = 0 the infimum is the limit z → 0: s1 = σ = 0 */
        a = sqrt(d / nuclear_sqrt_gamma(pen));
        b = 1.0;
    } else {
        const split s = pair_argmin(pen, d, 0.0);
        a = 1.0 + s.x1;
        b = 1.0 + s.x2;
    }
    if (s1)
        *s1 = a;
    if (s2)
        *s2 = b;
    if (sigma)
        *sigma = a > 0.0 ? sign * (d / a) / b : 0.0;
}

double atf_penalty_joint(const atf_penalty *pen, double v, double *s1, double *s2)
{
    double a, b, value;
    if (atf_penalty_is_nuclear(pen) && v >= 0.0) { /* γ z² lives on z > 0, not on [1, ∞) */
        a = v, b = 1.0;
        value = atf_omega_value(pen->w1.family == ATF_FAMILY_NUCLEAR ? &pen->w1 : &pen->w2, v);
    } else if (!(v >= 1.0)) { /* no split a·b = v with a, b ≥ 1 */
        a = b = 1.0;
        value = INFINITY;
    } else if (pen->w2.family == ATF_FAMILY_FIXED) {
        a = v, b = 1.0;
        value = atf_omega_value(&pen->w1, v);
    } else if (pen->w1.family == ATF_FAMILY_FIXED) {
        a = 1.0, b = v;
        value = atf_omega_value(&pen->w2, v);
    } else {
        double xa;
        value = pen_oplus(&pen->w1, &pen->w2, v - 1.0, &xa);
        a = 1.0 + xa;
        b = v / a;
    }
    if (s1)
        *s1 = a;
    if (s2)
        *s2 = b;
    return value;
}
