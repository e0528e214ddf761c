/* penalty_joint.c — the joint penalty ω1 ⊕ ω2 and the 2-D problem
 *     min over a, b ≥ 1 of  ω1(a) + ω2(b) + v²/(a²b² + c).
 *
 * When both k_i(s) = s ω_i'(s) are nondecreasing (every family but pow with p < 1), the split
 * of z = ab is unique and characterised by k1(a) = k2(b) =: λ, because
 *     d/da [ω1(a) + ω2(z/a)] = (k1(a) − k2(z/a))/a
 * increases in a. Then k⊕(z) = z ⊕'(z) = λ (envelope theorem), and the whole problem becomes a
 * curve in l = ln λ: a(l) = k1⁻¹(e^l), b(l) = k2⁻¹(e^l) in closed form for most families, z = ab
 * increasing in l, and the stationarity condition of the single-family case reads
 *     ψ(l) = l + 2 ln(z + c/z) − ln 2 − 2 ln v = 0,   ψ'(l) = 1 + 2B(1 − c/z²)/(1 + c/z²)
 * with B = d ln z / dl ≥ 0. Hence ψ increases wherever z ≥ √c — everywhere for c ≤ 1, and for
 * the value (c = 0) — and only the arc z < √c of a prox with t > 1/2 can hold turning points,
 * which need 2B > 1; they are located once per (penalty, t) by an adaptive march.
 *
 * Families with non-monotone k (pow p < 1) go through a nested global scan instead. */
#include "penalty_internal.h"

#include <float.h>
#include <math.h>

static const double LN2 = 0.69314718055994530942;

typedef struct {
    double x1, x2; /* offsets of a and b */
    double x;      /* offset of z = ab */
    double B;      /* d ln z / dl */
} jpoint;

static jpoint jcurve_at(const pen_jcurve *jc, double l)
{
    jpoint p;
    double r1, r2;
    pen_k_inverse(&jc->w1, jc->lnc1, l, &p.x1, &r1);
    pen_k_inverse(&jc->w2, jc->lnc2, l, &p.x2, &r2);
    p.x = p.x1 + p.x2 + p.x1 * p.x2;
    p.B = r1 + r2;
    return p;
}

/* The slope ψ'(l) at a point of the curve. */
static double jcurve_slope(const pen_jcurve *jc, const jpoint *p)
{
    const double z = 1.0 + p->x, cz2 = jc->c / z / z;
    return 1.0 + 2.0 * p->B * (1.0 - cz2) / (1.0 + cz2);
}

/* ---- turning points ------------------------------------------------------------------------ */

typedef struct {
    const pen_jcurve *jc;
    double target; /* ln z to reach */
} lnz_ctx;

static void lnz_fdf(void *ctx, double l, double *f, double *df)
{
    const lnz_ctx *q = ctx;
    const jpoint p = jcurve_at(q->jc, l);
    *f = log1p(p.x) - q->target;
    *df = p.B;
}

/* l at which z(l) = 1 + xz (xz > 0). */
static double jcurve_l_of_x(const pen_jcurve *jc, double xz)
{
    lnz_ctx q = {jc, log1p(xz)};
    const double lo = jc->l0; /* z = 1 there, below the target */
    const double hi = INFINITY;
    const double guess = isfinite(lo) ? lo + 1.0 : LN2 + log(fmax(jc->w1.scale, jc->w2.scale));
    return pen_root_increasing(lnz_fdf, &q, lo, hi, guess);
}

/* Smallest l with B(l) > 1/2 in [lo, hi] (B is nondecreasing; B(hi) > 1/2). */
static double jcurve_l_of_half_slope(const pen_jcurve *jc, double lo, double hi)
{
    if (isinf(lo)) {
        double step = 1.0;
        for (lo = hi - step; jcurve_at(jc, lo).B > 0.5 && step < 1e4; lo = hi - step)
            step *= 2.0;
    }
    if (jcurve_at(jc, lo).B > 0.5)
        return lo;
    for (int it = 0; it < 200 && hi - lo > 4.0 * DBL_EPSILON * (1.0 + fabs(lo)); ++it) {
        const double mid = lo + 0.5 * (hi - lo);
        if (jcurve_at(jc, mid).B > 0.5)
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}

/* Where ψ' changes sign in (lo, hi] (bisection on the sign; ψ' may jump where a factor
 * leaves 1). */
static double jcurve_sign_change(const pen_jcurve *jc, double lo, double hi)
{
    jpoint p = jcurve_at(jc, lo);
    const int lo_rising = jcurve_slope(jc, &p) > 0.0;
    for (int it = 0; it < 200 && hi - lo > 4.0 * DBL_EPSILON * (1.0 + fabs(lo)); ++it) {
        const double mid = lo + 0.5 * (hi - lo);
        p = jcurve_at(jc, mid);
        if ((jcurve_slope(jc, &p) > 0.0) == lo_rising)
            lo = mid;
        else
            hi = mid;
    }
    return lo + 0.5 * (hi - lo);
}

/* March over [from, to] with steps small against the variation of ψ' = 1 − 2AB
 * (A = (c − z²)/(c + z²) = tanh(ln(√c/z)) moves by at most B per unit l; for these families
 * B moves by at most about B per unit l, apart from upward jumps where a factor leaves 1).
 * `rising` is the direction of ψ just left of `from`. */
static void jcurve_march(pen_jcurve *jc, double from, double to, int rising)
{
    jpoint p = jcurve_at(jc, from);
    double slope = jcurve_slope(jc, &p), l = from;
    if ((slope > 0.0) != rising) /* a jump of B right at `from` */
        jc->l_turn[jc->n_turn++] = from;
    for (int step = 0; step < 100000 && l < to && jc->n_turn < PEN_JOINT_MAX_TURN; ++step) {
        const double B = p.B > 1e-3 ? p.B : 1e-3;
        double dl = fmin(0.25, 0.05 / B);
        dl = fmin(dl, fmax(fabs(slope), 0.05) / (2.0 * B * (B + 1.0)));
        const double next = fmin(l + dl, to);
        const jpoint q = jcurve_at(jc, next);
        const double next_slope = jcurve_slope(jc, &q);
        if ((next_slope > 0.0) != (slope > 0.0))
            jc->l_turn[jc->n_turn++] = jcurve_sign_change(jc, l, next);
        l = next, p = q, slope = next_slope;
    }
}

void pen_jcurve_init(pen_jcurve *jc, const atf_omega *w1, const atf_omega *w2, double c)
{
    jc->w1 = *w1;
    jc->w2 = *w2;
    jc->lnc1 = pen_lnk_const(w1);
    jc->lnc2 = pen_lnk_const(w2);
    jc->c = c;
    const double k1 = fmin(pen_k_at_one(w1), pen_k_at_one(w2));
    jc->l0 = k1 > 0.0 ? log(k1) : -INFINITY;
    jc->ln_h_one = jc->l0 + 2.0 * log1p(c) - LN2;
    jc->n_turn = 0;
    jc->rising_first = 1;
    if (!(c > 1.0)) /* z ≥ 1 ≥ √c: ψ increases everywhere */
        return;
    const double l_c = jcurve_l_of_x(jc, sqrt(c) - 1.0); /* z(l_c) = √c */
    if (!(jcurve_at(jc, l_c).B > 0.5)) /* B ≤ 1/2 on the whole arc: ψ' > 0 */
        return;
    const double from = jcurve_l_of_half_slope(jc, jc->l0, l_c);
    if (from <= jc->l0) { /* the first piece starts falling if ψ'(l0+) < 0 */
        const jpoint p = jcurve_at(jc, from);
        jc->rising_first = jcurve_slope(jc, &p) > 0.0;
    }
    jcurve_march(jc, from, l_c, jc->rising_first); /* ψ' > 0 on (l0, from) */
}

/* ---- the argmin ---------------------------------------------------------------------------- */

typedef struct {
    const pen_jcurve *jc;
    double lv2;
} jpsi_ctx;

static void jpsi_fdf(void *ctx, double l, double *f, double *df)
{
    const jpsi_ctx *q = ctx;
    const jpoint p = jcurve_at(q->jc, l);
    const double z = 1.0 + p.x;
    *f = l + 2.0 * log(z + q->jc->c / z) - LN2 - q->lv2;
    *df = jcurve_slope(q->jc, &p);
}

static double jpsi_at(const jpsi_ctx *q, double l)
{
    double f, df;
    jpsi_fdf((void *)q, l, &f, &df);
    return f;
}

static double jpoint_omega(const pen_jcurve *jc, const jpoint *p)
{
    return pen_omega_x(&jc->w1, p->x1) + pen_omega_x(&jc->w2, p->x2);
}

void pen_jcurve_argmin(const pen_jcurve *jc, double v, double *x1, double *x2)
{
    jpsi_ctx q = {jc, 2.0 * log(v)};
    double edge[PEN_JOINT_MAX_TURN + 2];
    int nedge = 0;
    edge[nedge++] = jc->l0;
    for (int i = 0; i < jc->n_turn; ++i)
        edge[nedge++] = jc->l_turn[i];
    edge[nedge++] = INFINITY;
    jpoint best = {0.0, 0.0, 0.0, 0.0};
    int have = jc->ln_h_one >= q.lv2; /* z = 1 is a local minimum */
    int rising = jc->rising_first;
    for (int i = 0; i + 1 < nedge; ++i, rising = !rising) {
        if (!rising)
            continue;
        const double L = edge[i], R = edge[i + 1];
        const double fL = i == 0 ? jc->ln_h_one - q.lv2 : jpsi_at(&q, L);
        const double fR = isinf(R) ? INFINITY : jpsi_at(&q, R);
        if (!(fL < 0.0 && fR > 0.0))
            continue;
        /* first iterate: the small-z solution l = 2 ln v + ln 2 − 2 ln(1 + c), kept inside */
        double guess = q.lv2 + LN2 - 2.0 * log1p(jc->c);
        if (!(guess > L && guess < R))
            guess = isinf(L) ? R - 1.0 : isinf(R) ? L + 1.0 : L + 0.5 * (R - L);
        const jpoint p = jcurve_at(jc, pen_root_increasing(jpsi_fdf, &q, L, R, guess));
        if (!have || pen_prefer_larger(jpoint_omega(jc, &best), jpoint_omega(jc, &p), best.x,
                                       p.x, v, jc->c))
            best = p;
        have = 1;
    }
    *x1 = best.x1;
    *x2 = best.x2;
}

/* ---- nested fallback ----------------------------------------------------------------------- */

typedef struct {
    const atf_omega *w1, *w2;
    double v, c;
} nest_ctx;

/* For fixed a the problem over b is a single-family problem with v/a and c/a². */
static double nest_inner(const nest_ctx *n, double x1)
{
    const double a = 1.0 + x1;
    pen_curve1 cv;
    pen_curve1_init(&cv, n->w2, n->c / (a * a));
    return pen_curve1_argmin(&cv, n->v / a);
}

static double nest_objective(void *ctx, double x1)
{
    const nest_ctx *n = ctx;
    const double x2 = nest_inner(n, x1), z = (1.0 + x1) * (1.0 + x2);
    return pen_omega_x(n->w1, x1) + pen_omega_x(n->w2, x2) + n->v * n->v / (z * z + n->c);
}

static void nested_scan(const atf_omega *w1, const atf_omega *w2, double v, double c,
                        double *x1, double *x2)
{
    nest_ctx n = {w1, w2, v, c};
    /* ω1(a) ≤ F(a, b) ≤ F(1, 1) = v²/(1 + c) bounds the search */
    double xmax = pen_omega_inv_x(w1, v * v / (1.0 + c)), fmin;
    if (!(xmax < 1e150))
        xmax = 1e150;
    *x1 = pen_global_min_scan(nest_objective, &n, xmax, 24, &fmin);
    *x2 = nest_inner(&n, *x1);
}

/* ---- the threshold below which (a, b) = (1, 1) ---------------------------------------------
 * F(x; v) − F(0; v) = Ω(x) − Ω(0) + v²·(1/(z² + c) − 1/(1 + c)) has its last term ≤ 0 (z ≥ 1)
 * and falling with v: if (1, 1) is the minimiser at v, it is at every smaller v. So the
 * minimiser is (1, 1) exactly for v ≤ v0(ω1, ω2, c), found once by bisection with the scan
 * itself and kept per thread. A prox applied entry by entry (structure diagonal: every weight
 * of a layer, 18 560 on a 6-example 16-128-128-1 network) then scans only the entries above the
 * threshold, where a nonconvex penalty leaves few (24 s for one ADMM iteration before). */

static int at_origin(const atf_omega *w1, const atf_omega *w2, double v, double c)
{
    double x1, x2;
    nested_scan(w1, w2, v, c, &x1, &x2);
    return x1 == 0.0 && x2 == 0.0;
}

static double origin_threshold(const atf_omega *w1, const atf_omega *w2, double c)
{
    double lo = 0.0, hi = 1.0;
    while (hi < 1e300 && at_origin(w1, w2, hi, c))
        lo = hi, hi *= 16.0;
    if (lo == 0.0) { /* below 1: down to where it holds, or none (v0 = 0) */
        while (hi > 1e-300 && !at_origin(w1, w2, hi, c))
            hi /= 16.0;
        if (!(hi > 1e-300))
            return 0.0;
        lo = hi, hi *= 16.0;
    }
    for (int it = 0; it < 64 && hi - lo > 4.0 * DBL_EPSILON * hi; it++) {
        const double mid = lo + 0.5 * (hi - lo);
        if (at_origin(w1, w2, mid, c))
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static int same_omega(const atf_omega *a, const atf_omega *b)
{
    return a->family == b->family && a->p == b->p && a->scale == b->scale;
}

#define THRESHOLD_CACHE 8

static double nested_threshold(const atf_omega *w1, const atf_omega *w2, double c)
{
    static _Thread_local struct {
        atf_omega w1, w2;
        double c, v0;
        int used;
    } cache[THRESHOLD_CACHE];
    static _Thread_local int next;
    for (int i = 0; i < THRESHOLD_CACHE; i++)
        if (cache[i].used && cache[i].c == c && same_omega(&cache[i].w1, w1) &&
            same_omega(&cache[i].w2, w2))
            return cache[i].v0;
    const double v0 = origin_threshold(w1, w2, c);
    cache[next].w1 = *w1, cache[next].w2 = *w2, cache[next].c = c, cache[next].v0 = v0;
    cache[next].used = 1;
    next = (next + 1) % THRESHOLD_CACHE;
    return v0;
}

void pen_joint_nested_argmin(const atf_omega *w1, const atf_omega *w2, double v, double c,
                             double *x1, double *x2)
{
    if (v <= nested_threshold(w1, w2, c)) {
        *x1 = *x2 = 0.0;
        return;
    }
    nested_scan(w1, w2, v, c, x1, x2);
}

/* ---- ω1 ⊕ ω2 ------------------------------------------------------------------------------- */

typedef struct {
    const atf_omega *w1, *w2;
    double xv; /* v − 1 */
} oplus_ctx;

static double oplus_objective(void *ctx, double xa)
{
    const oplus_ctx *o = ctx;
    const double xb = (o->xv - xa) / (1.0 + xa); /* b = v/a in offsets */
    return pen_omega_x(o->w1, xa) + pen_omega_x(o->w2, xb > 0.0 ? xb : 0.0);
}

double pen_oplus(const atf_omega *w1, const atf_omega *w2, double xv, double *xa)
{
    if (!(xv > 0.0)) {
        *xa = 0.0;
        return 0.0;
    }
    if (pen_k_monotone(w1) && pen_k_monotone(w2)) { /* the split with k1(a) = k2(b) */
        pen_jcurve jc;
        pen_jcurve_init(&jc, w1, w2, 0.0);
        const jpoint p = jcurve_at(&jc, jcurve_l_of_x(&jc, xv));
        /* a from the curve, b = v/a exactly, so that a·b = v */
        *xa = p.x1 < xv ? p.x1 : xv;
        return oplus_objective(&(oplus_ctx){w1, w2, xv}, *xa);
    }
    oplus_ctx o = {w1, w2, xv};
    double value;
    *xa = pen_global_min_scan(oplus_objective, &o, xv, 24, &value);
    return value;
}
