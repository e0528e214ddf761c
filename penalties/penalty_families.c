/* penalty_families.c — the eight families ω of docs/penalties.md and the quantities the effective-penalty
 * solver needs from them, all in the offset x = z − 1.
 *
 * Notation (docs/penalties.md): k(z) = z ω'(z); for the 1-D problem
 *     min_{z ≥ 1} ω(z) + v²/(z² + c)      (c = 0: value of ω̃, c = 2t: prox)
 * the derivative has the sign of h(z) − v² with h(z) = k(z)(z + c/z)²/2, which does not depend
 * on v. The turning points of h therefore cut [1, ∞) into pieces on which the stationarity
 * equation has at most one root, and they are computed here per family. */
#include "penalty_internal.h"

#include <float.h>
#include <math.h>

static const double LN2 = 0.69314718055994530942;

/* x − ln(1 + x) for x > −1 without the cancellation of the direct formula near 0 (balanced's
 * ω = γ(x(2 + x) − 2 ln(1 + x)) = γ(x² + 2(x − ln(1 + x))) is 2γx² + O(x³), and the argmin is
 * 1 + O(v²)). With s = x/(2 + x), ln(1 + x) = 2 atanh s and x − 2s = 2s²/(1 − s), so
 * x − ln(1 + x) = 2s²/(1 − s) − 2(s³/3 + s⁵/5 + …); for |x| ≤ 1/2, |s| ≤ 1/3 and the series
 * converges at least like 9^−k. */
static double x_minus_log1p(double x)
{
    if (!(fabs(x) <= 0.5))
        return x - log1p(x);
    const double s = x / (2.0 + x), s2 = s * s;
    double term = s * s2, series = 0.0;
    for (int k = 3; k < 80; k += 2, term *= s2) {
        const double add = term / k;
        series += add;
        if (!(fabs(add) > 1e-17 * fabs(series)))
            break;
    }
    return 2.0 * s2 / (1.0 - s) - 2.0 * series;
}

/* γ(x² + 2(x − ln(1 + x))), with γ applied before squaring: γx·x stays finite where x² alone
 * would overflow (γ = 1e-300, x = 1e225). */
static double balanced_x(double g, double x)
{
    return g * x * x + 2.0 * g * x_minus_log1p(x);
}

double pen_omega_x(const atf_omega *w, double x)
{
    const double g = w->scale;
    switch (w->family) {
    case ATF_FAMILY_FIXED: return x == 0.0 ? 0.0 : INFINITY;
    case ATF_FAMILY_SQ: return g * x * x;
    case ATF_FAMILY_ABS: return g * x;
    case ATF_FAMILY_POW: return g * pow(x, w->p);
    case ATF_FAMILY_ZSQ: return g * x * (2.0 + x);
    case ATF_FAMILY_LOGSQ: {
        double l = log1p(x);
        return g * l * l;
    }
    case ATF_FAMILY_NUCLEAR: return g * (1.0 + x) * (1.0 + x);
    case ATF_FAMILY_BALANCED: return balanced_x(g, x);
    }
    return NAN;
}

double atf_omega_value(const atf_omega *w, double z)
{
    const double g = w->scale;
    if (isnan(z))
        return z;
    switch (w->family) {
    case ATF_FAMILY_FIXED: return z == 1.0 ? 0.0 : INFINITY;
    case ATF_FAMILY_SQ: return g * (z - 1.0) * (z - 1.0);
    case ATF_FAMILY_ABS: return g * fabs(z - 1.0);
    case ATF_FAMILY_POW: return g * pow(fabs(z - 1.0), w->p);
    case ATF_FAMILY_ZSQ: return g * (z * z - 1.0);
    case ATF_FAMILY_LOGSQ: {
        if (!(z > 0.0))
            return INFINITY;
        double l = log(z);
        return g * l * l;
    }
    case ATF_FAMILY_NUCLEAR: /* γ z² on z > 0, closed at z = 0 (the factor of d = 0) */
        return z >= 0.0 ? g * z * z : INFINITY;
    case ATF_FAMILY_BALANCED: return z > 0.0 ? balanced_x(g, z - 1.0) : INFINITY;
    }
    return NAN;
}

double atf_omega_deriv(const atf_omega *w, double z)
{
    const double g = w->scale, x = z - 1.0;
    if (isnan(z))
        return z;
    switch (w->family) {
    case ATF_FAMILY_FIXED: return NAN;
    case ATF_FAMILY_SQ: return 2.0 * g * x;
    case ATF_FAMILY_ABS: return x > 0.0 ? g : x < 0.0 ? -g : 0.0;
    case ATF_FAMILY_POW: return x == 0.0 ? 0.0 : copysign(g * w->p * pow(fabs(x), w->p - 1.0), x);
    case ATF_FAMILY_ZSQ: return 2.0 * g * z;
    case ATF_FAMILY_LOGSQ: return z > 0.0 ? 2.0 * g * log(z) / z : NAN;
    case ATF_FAMILY_NUCLEAR: return z >= 0.0 ? 2.0 * g * z : NAN;
    case ATF_FAMILY_BALANCED: return z > 0.0 ? 2.0 * g * (z - 1.0 / z) : NAN;
    }
    return NAN;
}

/* balanced: the root of x² + 2(x − ln(1 + x)) = q. The left side is increasing and convex on
 * x ≥ 0 and ≥ x², so Newton from x = √q descends monotonically onto the root. */
static double balanced_inv_x(double q)
{
    double x = sqrt(q);
    for (int it = 0; it < 200 && x > 0.0; ++it) {
        const double f = balanced_x(1.0, x) - q, df = 2.0 * x * (2.0 + x) / (1.0 + x);
        if (!(f > 0.0) || !(df > 0.0))
            return x;
        const double next = x - f / df;
        if (!(fabs(next - x) > 4.0 * DBL_EPSILON * x))
            return next;
        x = next;
    }
    return x;
}

double pen_omega_inv_x(const atf_omega *w, double y)
{
    const double q = y / w->scale;
    switch (w->family) {
    case ATF_FAMILY_FIXED: return 0.0;
    case ATF_FAMILY_SQ: return sqrt(q);
    case ATF_FAMILY_ABS: return q;
    case ATF_FAMILY_POW: return pow(q, 1.0 / w->p);
    case ATF_FAMILY_ZSQ: return q / (1.0 + sqrt(1.0 + q)); /* root of x(2 + x) = q */
    case ATF_FAMILY_LOGSQ: return expm1(sqrt(q));
    case ATF_FAMILY_NUCLEAR: return sqrt(q) > 1.0 ? sqrt(q) - 1.0 : 0.0;
    case ATF_FAMILY_BALANCED: return balanced_inv_x(q);
    }
    return NAN;
}

double pen_lnk_const(const atf_omega *w)
{
    const double lg = log(w->scale);
    switch (w->family) {
    case ATF_FAMILY_SQ:
    case ATF_FAMILY_ZSQ:
    case ATF_FAMILY_NUCLEAR:
    case ATF_FAMILY_BALANCED:
    case ATF_FAMILY_LOGSQ: return LN2 + lg;
    case ATF_FAMILY_POW: return lg + log(w->p);
    case ATF_FAMILY_ABS:
    case ATF_FAMILY_FIXED: return lg;
    }
    return NAN;
}

void pen_lnk(const atf_omega *w, double lnc, double y, double *lnk, double *e)
{
    const double x = exp(y), lz = log1p(x), xz = x / (1.0 + x);
    switch (w->family) {
    case ATF_FAMILY_SQ: /* k = 2γ x z */
        *lnk = lnc + y + lz;
        *e = 1.0 + xz;
        return;
    case ATF_FAMILY_ABS: /* k = γ z */
        *lnk = lnc + lz;
        *e = xz;
        return;
    case ATF_FAMILY_POW: /* k = γ p x^{p−1} z */
        *lnk = lnc + (w->p - 1.0) * y + lz;
        *e = (w->p - 1.0) + xz;
        return;
    case ATF_FAMILY_ZSQ: /* k = 2γ z² */
    case ATF_FAMILY_NUCLEAR:
        *lnk = lnc + 2.0 * lz;
        *e = 2.0 * xz;
        return;
    case ATF_FAMILY_LOGSQ: /* k = 2γ ln z; ln z / x → 1 as x → 0 */
        *lnk = lnc + (x > 0.0 ? log(lz) : y);
        *e = x > 0.0 ? xz / lz : 1.0;
        return;
    case ATF_FAMILY_BALANCED: /* k = 2γ(z² − 1) = 2γ x (2 + x) */
        *lnk = lnc + y + log(2.0 + x);
        *e = 1.0 + x / (2.0 + x);
        return;
    case ATF_FAMILY_FIXED:
        *lnk = INFINITY;
        *e = 0.0;
        return;
    }
}

double pen_y_guess(const atf_omega *w, double lnc, double lv2, double c)
{
    /* h ≈ k(1+x)(1 + c)²/2 for small x, h ≈ k(1+x) x²/2 for large x (x² ≫ c) */
    const double small = lv2 + LN2 - 2.0 * log1p(c) - lnc, large = lv2 + LN2 - lnc;
    switch (w->family) {
    case ATF_FAMILY_SQ: return fmin(small, large / 4.0);      /* k ≈ 2γ x, resp. 2γ x² */
    case ATF_FAMILY_LOGSQ: return fmin(small, large / 2.0);   /* k ≈ 2γ x, resp. 2γ ln x */
    case ATF_FAMILY_POW:
        if (w->p > 1.0) /* k ≈ γ p x^{p−1}, resp. γ p x^p */
            return fmin(small / (w->p - 1.0), large / (w->p + 2.0));
        return large / (w->p + 2.0);
    case ATF_FAMILY_ABS: return large / 3.0; /* k ≈ γ x */
    case ATF_FAMILY_BALANCED: return fmin(small - LN2, large / 4.0); /* k ≈ 4γ x, resp. 2γ x² */
    default: return 0.0;
    }
}

double pen_k_at_one(const atf_omega *w)
{
    switch (w->family) {
    case ATF_FAMILY_FIXED: return INFINITY;
    case ATF_FAMILY_SQ:
    case ATF_FAMILY_BALANCED:
    case ATF_FAMILY_LOGSQ: return 0.0;
    case ATF_FAMILY_ABS: return w->scale;
    case ATF_FAMILY_POW: return w->p > 1.0 ? 0.0 : w->p == 1.0 ? w->scale : INFINITY;
    case ATF_FAMILY_ZSQ:
    case ATF_FAMILY_NUCLEAR: return 2.0 * w->scale;
    }
    return NAN;
}

int pen_k_monotone(const atf_omega *w)
{
    return !(w->family == ATF_FAMILY_POW && w->p < 1.0);
}

/* Solves ln(γp) + (p−1) y + ln(1 + e^y) = l for y = ln x (pow, p > 1). The left side is convex
 * and increasing in y, so Newton started right of the root descends monotonically onto it. */
static double pow_k_inverse_y(double lgp, double p, double l)
{
    const double u = l - lgp;
    /* right of the root: φ(u/(p−1)) = ln(1 + e^y) > 0, and φ(max(u/p, 0) + 1) ≥ p > 0 */
    double y = fmin(u / (p - 1.0), fmax(u / p, 0.0) + 1.0);
    for (int it = 0; it < 100; ++it) {
        const double x = exp(y);
        const double phi = (p - 1.0) * y + log1p(x) - u, dphi = (p - 1.0) + x / (1.0 + x);
        if (!(phi > 0.0))
            return y;
        const double next = y - phi / dphi;
        if (!(fabs(next - y) > 2.0 * DBL_EPSILON * (1.0 + fabs(y))))
            return next;
        y = next;
    }
    return y;
}

void pen_k_inverse(const atf_omega *w, double lnc, double l, double *x, double *r)
{
    *x = 0.0;
    *r = 0.0;
    switch (w->family) {
    case ATF_FAMILY_SQ: { /* 2γ a x = λ: x(1 + x) = q */
        const double q = exp(l - lnc);
        *x = q < 1e200 ? 2.0 * q / (1.0 + sqrt(1.0 + 4.0 * q)) : sqrt(q);
        *r = *x / (2.0 * *x + 1.0);
        return;
    }
    case ATF_FAMILY_POW:
        if (w->p > 1.0) {
            const double y = pow_k_inverse_y(lnc, w->p, l);
            *x = exp(y);
            *r = *x / (*x + (w->p - 1.0) * (1.0 + *x));
            return;
        }
        /* p = 1 is abs; p < 1 is not k-monotone and never gets here */
        /* fall through */
    case ATF_FAMILY_ABS: /* γ a = λ */
        if (l >= lnc) {
            *x = expm1(l - lnc);
            *r = 1.0;
        }
        return;
    case ATF_FAMILY_ZSQ: /* 2γ a² = λ */
    case ATF_FAMILY_NUCLEAR:
        if (l >= lnc) {
            *x = expm1(0.5 * (l - lnc));
            *r = 0.5;
        }
        return;
    case ATF_FAMILY_LOGSQ: { /* 2γ ln a = λ */
        const double s = exp(l - lnc);
        *x = expm1(s);
        *r = s;
        return;
    }
    case ATF_FAMILY_BALANCED: { /* 2γ x(2 + x) = λ; r = d ln z/dl = (z² − 1)/(2z²) */
        const double q = exp(l - lnc);
        *x = q < 1e200 ? q / (1.0 + sqrt(1.0 + q)) : sqrt(q);
        *r = 0.5 * (*x / (1.0 + *x)) * ((2.0 + *x) / (1.0 + *x));
        return;
    }
    case ATF_FAMILY_FIXED: return;
    }
}

/* ---- turning points ---------------------------------------------------------------------- */

/* A convex function on [0, ∞) that tends to +∞, with its first two derivatives. */
typedef void (*convex_fn)(const void *ctx, double x, double *f, double *d1, double *d2);

/* Newton on a convex function from a start where f > 0 and the iteration moves monotonically
 * towards the root (left of the minimum from the left, right of it from the right). */
static double convex_newton(convex_fn fn, const void *ctx, double x)
{
    for (int it = 0; it < 200; ++it) {
        double f, d1, d2;
        fn(ctx, x, &f, &d1, &d2);
        if (!(f > 0.0) || d1 == 0.0)
            return x;
        double next = x - f / d1;
        if (!isfinite(next))
            return x;
        if (!(fabs(next - x) > 4.0 * DBL_EPSILON * fabs(x)))
            return next;
        x = next;
    }
    return x;
}

/* Root of f' (increasing) for a convex fn with f'(0) < 0: Newton on f' from the right. */
static double convex_argmin(convex_fn fn, const void *ctx)
{
    double x = 1.0, f, d1, d2;
    fn(ctx, x, &f, &d1, &d2);
    for (int it = 0; it < 2000 && d1 <= 0.0; ++it, fn(ctx, x, &f, &d1, &d2))
        x *= 2.0;
    for (int it = 0; it < 200; ++it) {
        fn(ctx, x, &f, &d1, &d2);
        if (!(d1 > 0.0) || !(d2 > 0.0))
            return x;
        double next = x - d1 / d2;
        if (!isfinite(next))
            return x;
        if (!(fabs(next - x) > 4.0 * DBL_EPSILON * fabs(x)))
            return next;
        x = next;
    }
    return x;
}

/* A point right of every root (f > 0 there and f increasing). */
static double convex_right(convex_fn fn, const void *ctx, double from)
{
    double x = from > 1.0 ? 2.0 * from : 2.0, f, d1, d2;
    fn(ctx, x, &f, &d1, &d2);
    for (int it = 0; it < 2000 && !(f > 0.0 && d1 > 0.0); ++it, fn(ctx, x, &f, &d1, &d2))
        x *= 2.0;
    return x;
}

/* Roots on x > 0 of a convex fn with fn → +∞; returns the count and the sign just right of 0. */
static int convex_roots(convex_fn fn, const void *ctx, double roots[2], int *positive_at_zero)
{
    double f0, d0, dd0;
    fn(ctx, 0.0, &f0, &d0, &dd0);
    if (f0 < 0.0 || (f0 == 0.0 && d0 < 0.0)) { /* one root, where fn climbs through zero */
        *positive_at_zero = 0;
        roots[0] = convex_newton(fn, ctx, convex_right(fn, ctx, 1.0));
        return 1;
    }
    *positive_at_zero = 1;
    if (d0 >= 0.0)
        return 0;
    double xm = convex_argmin(fn, ctx), fm, dm, ddm;
    fn(ctx, xm, &fm, &dm, &ddm);
    if (!(fm < 0.0))
        return 0;
    roots[0] = convex_newton(fn, ctx, 0.0);
    roots[1] = convex_newton(fn, ctx, convex_right(fn, ctx, xm));
    return 2;
}

/* pow (and abs = pow p=1, sq = pow p=2): d ln h / d ln z has the sign of the cubic
 * (z − 1)(z² + c)·D = (p−1)(1+c) + (3p + (p−2)c) x + 3(p+1) x² + (p+2) x³, convex on x ≥ 0. */
typedef struct {
    double a0, a1, a2, a3;
} cubic;

static void cubic_eval(const void *ctx, double x, double *f, double *d1, double *d2)
{
    const cubic *q = ctx;
    *f = q->a0 + x * (q->a1 + x * (q->a2 + x * q->a3));
    *d1 = q->a1 + x * (2.0 * q->a2 + x * 3.0 * q->a3);
    *d2 = 2.0 * q->a2 + 6.0 * q->a3 * x;
}

/* logsq: with s = ln z the sign of D is that of R(s) = (1 + 2s) e^{2s} + c (1 − 2s), convex
 * in s; we let the convex solver work in s and convert to x = e^s − 1 afterwards. */
static void logsq_eval(const void *ctx, double s, double *f, double *d1, double *d2)
{
    const double c = *(const double *)ctx, e2 = exp(2.0 * s);
    *f = (1.0 + 2.0 * s) * e2 + c * (1.0 - 2.0 * s);
    *d1 = 4.0 * (1.0 + s) * e2 - 2.0 * c;
    *d2 = (12.0 + 8.0 * s) * e2;
}

int pen_turning_points(const atf_omega *w, double c, double x_turn[2], int *rising_first)
{
    *rising_first = 1;
    if (w->family == ATF_FAMILY_SQ || w->family == ATF_FAMILY_POW || w->family == ATF_FAMILY_ABS) {
        const double p = w->family == ATF_FAMILY_SQ ? 2.0 : w->family == ATF_FAMILY_ABS ? 1.0 : w->p;
        cubic q = {(p - 1.0) * (1.0 + c), 3.0 * p + (p - 2.0) * c, 3.0 * (p + 1.0), p + 2.0};
        if (q.a0 >= 0.0 && q.a1 >= 0.0) /* all coefficients ≥ 0: h increases on x > 0 */
            return 0;
        return convex_roots(cubic_eval, &q, x_turn, rising_first);
    }
    if (w->family == ATF_FAMILY_LOGSQ && c > 2.0) { /* R'(0) = 4 − 2c ≥ 0 means no root */
        int n = convex_roots(logsq_eval, &c, x_turn, rising_first);
        for (int i = 0; i < n; ++i)
            x_turn[i] = expm1(x_turn[i]);
        return n;
    }
    /* fixed, zsq, nuclear; logsq with c ≤ 2; balanced, whose d ln k/d ln z = 2z²/(z² − 1) > 2
     * outweighs 2(z² − c)/(z² + c) > −2, so h increases for every c */
    return 0;
}

/* ---- structural predicates ------------------------------------------------------------- */

/* The exponent a pow-like family behaves like at z → ∞, or 0 for the others. */
static double pow_exponent(const atf_omega *w)
{
    switch (w->family) {
    case ATF_FAMILY_SQ: return 2.0;
    case ATF_FAMILY_ABS: return 1.0;
    case ATF_FAMILY_POW: return w->p;
    default: return 0.0;
    }
}

/* ω̃'(v) = 2v/z*², and along the stationarity curve v/z² = sqrt(k(z)/(2z²)); so ω̃ is convex iff
 * k(z)/z² = ω'(z)/z is nondecreasing on (1, ∞) (docs/penalties.md, "Convexity"). */
static int single_is_convex(const atf_omega *w)
{
    switch (w->family) {
    case ATF_FAMILY_FIXED:
    case ATF_FAMILY_SQ:
    case ATF_FAMILY_ZSQ:
    case ATF_FAMILY_BALANCED: /* ω'(z)/z = 2γ(1 − 1/z²) */
    case ATF_FAMILY_NUCLEAR: return 1;
    case ATF_FAMILY_POW: return w->p >= 2.0;
    case ATF_FAMILY_ABS:
    case ATF_FAMILY_LOGSQ: return 0;
    }
    return 0;
}

int atf_penalty_is_convex(const atf_penalty *pen)
{
    if (pen->w2.family == ATF_FAMILY_FIXED)
        return single_is_convex(&pen->w1);
    if (pen->w1.family == ATF_FAMILY_FIXED)
        return single_is_convex(&pen->w2);
    /* For a joint, d ln k⊕ / d ln z = 1/(1/ε1 + 1/ε2) with ε_i = d ln k_i / d ln z_i. pow-like
     * families have ε > p decreasing to p, so the joint is convex iff p1 p2/(p1 + p2) ≥ 2;
     * zsq (ε = 2), balanced (ε = 2z²/(z² − 1) ↓ 2), logsq (ε → 0) and abs give ε⊕ < 2 at large z
     * whatever they are joined with. */
    const double p1 = pow_exponent(&pen->w1), p2 = pow_exponent(&pen->w2);
    if (p1 <= 1.0 || p2 <= 1.0)
        return 0;
    return p1 * p2 / (p1 + p2) >= 2.0;
}

int atf_penalty_is_nuclear(const atf_penalty *pen)
{
    return pen->w1.family == ATF_FAMILY_NUCLEAR || pen->w2.family == ATF_FAMILY_NUCLEAR;
}
