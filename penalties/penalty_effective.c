/* penalty_effective.c — ⊕, ω̃, ω̃', prox and factor recovery (SPEC §2, docs/penalties.md).
 *
 * Every quantity reduces to a minimisation over (a, b) ≥ 1 of
 *     ω1(a) + ω2(b) + v²/(a²b² + c)          (c = 0: value of ω̃;  c = 2t: prox of tω̃)
 * which for a single term is the 1-D problem in z = a. There the derivative has the sign of
 * h(z) − v², h(z) = k(z)(z + c/z)²/2, k = z ω'(z), and h does not depend on v: between the
 * turning points of h (penalty_families.c) the stationarity equation has at most one root,
 * found by safeguarded Newton in y = ln(z − 1). The candidates (z = 1 and every root where h
 * crosses v² upwards) are compared and ties go to the larger z. */
#include "penalty_internal.h"

#include <float.h>
#include <math.h>

static const double LN2 = 0.69314718055994530942;

/* ---- one family: the curve of the 1-D problem for a fixed c ---------------------------- */

typedef struct {
    atf_omega w;
    double c;
    double ln_h_one; /* ln h(1+), may be ±∞ */
    int n_turn;
    double x_turn[2];
    int rising_first;
} curve1;

static void curve1_init(curve1 *cv, const atf_omega *w, double c)
{
    cv->w = *w;
    cv->c = c;
    const double k1 = pen_k_at_one(w);
    cv->ln_h_one = k1 == 0.0 ? -INFINITY : log(k1) + 2.0 * log1p(c) - LN2;
    cv->n_turn = pen_turning_points(w, c, cv->x_turn, &cv->rising_first);
}

typedef struct {
    const curve1 *cv;
    double lv2; /* 2 ln v */
} psi_ctx;

/* ψ(y) = ln h(1 + e^y) − 2 ln v and dψ/dy. */
static void psi_fdf(void *ctx, double y, double *f, double *df)
{
    const psi_ctx *p = ctx;
    double lnk, e;
    pen_lnk(&p->cv->w, y, &lnk, &e);
    const double x = exp(y), z = 1.0 + x, cz = p->cv->c / z;
    *f = lnk + 2.0 * log(z + cz) - LN2 - p->lv2;
    *df = e + (x / z) * 2.0 * (z - cz) / (z + cz);
}

static double psi_at(const psi_ctx *p, double x)
{
    double f, df;
    psi_fdf((void *)p, log(x), &f, &df);
    return f;
}

/* F(1 + xb) − F(1 + xa) for F(z) = ω(z) + v²/(z² + c), without the cancellation of forming
 * both values; *scale receives the size of the terms (for a rounding tolerance). */
static double curve1_gain(const atf_omega *w, double v, double c, double xa, double xb,
                          double *scale)
{
    const double za = 1.0 + xa, zb = 1.0 + xb;
    const double oa = pen_omega_x(w, xa), ob = pen_omega_x(w, xb);
    const double fit = v * v * ((xb - xa) * (2.0 + xa + xb)) / ((za * za + c) * (zb * zb + c));
    *scale = fabs(oa) + fabs(ob) + fabs(fit);
    return (ob - oa) - fit;
}

/* Among candidates sorted by increasing x, the global minimiser; ties to the larger x. */
static double pick_best(const atf_omega *w, double v, double c, const double *cand, int n)
{
    double best = cand[0];
    for (int i = 1; i < n; ++i) {
        double scale, gain = curve1_gain(w, v, c, best, cand[i], &scale);
        if (gain <= 8.0 * DBL_EPSILON * scale)
            best = cand[i];
    }
    return best;
}

static double zsq_argmin(const atf_omega *w, double v, double c)
{
    /* min γ u + v²/(u + c) over u = z² ≥ 1: u = max(1, v/√γ − c) */
    const double um1 = v / sqrt(w->scale) - c - 1.0;
    return um1 > 0.0 ? um1 / (sqrt(1.0 + um1) + 1.0) : 0.0;
}

static double piece_guess(double L, double R)
{
    if (L == 0.0 && isinf(R))
        return 0.0;
    if (L == 0.0)
        return fmin(0.0, log(R) - 1.0);
    if (isinf(R))
        return fmax(0.0, log(L) + 1.0);
    return 0.5 * (log(L) + log(R));
}

/* argmin over x ≥ 0 of ω(1 + x) + v²/((1 + x)² + c), v > 0. */
static double curve1_argmin(const curve1 *cv, double v)
{
    if (cv->w.family == ATF_FAMILY_FIXED)
        return 0.0;
    if (cv->w.family == ATF_FAMILY_ZSQ)
        return zsq_argmin(&cv->w, v, cv->c);
    psi_ctx p = {cv, 2.0 * log(v)};
    double edge[4], cand[3];
    int nedge = 0, ncand = 0;
    edge[nedge++] = 0.0;
    for (int i = 0; i < cv->n_turn; ++i)
        edge[nedge++] = cv->x_turn[i];
    edge[nedge++] = INFINITY;
    if (cv->ln_h_one >= p.lv2) /* h(1+) ≥ v²: F increases off z = 1, a local minimum */
        cand[ncand++] = 0.0;
    int rising = cv->rising_first;
    for (int i = 0; i + 1 < nedge; ++i, rising = !rising) {
        if (!rising)
            continue;
        const double L = edge[i], R = edge[i + 1];
        const double fL = L == 0.0 ? cv->ln_h_one - p.lv2 : psi_at(&p, L);
        const double fR = isinf(R) ? INFINITY : psi_at(&p, R);
        if (fL < 0.0 && fR > 0.0) {
            const double lo = L == 0.0 ? -INFINITY : log(L), hi = isinf(R) ? INFINITY : log(R);
            cand[ncand++] = exp(pen_root_increasing(psi_fdf, &p, lo, hi, piece_guess(L, R)));
        }
    }
    if (ncand == 0)
        return 0.0;
    return pick_best(&cv->w, v, cv->c, cand, ncand);
}

/* ---- the pair (a, b) ---------------------------------------------------------------------- */

typedef struct {
    double x1, x2; /* a = 1 + x1, b = 1 + x2 */
} split;

static double single_argmin(const atf_omega *w, double v, double c)
{
    curve1 cv;
    curve1_init(&cv, w, c);
    return curve1_argmin(&cv, v);
}

typedef struct {
    const atf_penalty *pen;
    double v, c;
} nest_ctx;

/* For fixed a the inner problem over b is a single-family problem with v/a and c/a². */
static double nest_inner(const nest_ctx *n, double x1)
{
    const double a = 1.0 + x1;
    return single_argmin(&n->pen->w2, n->v / a, n->c / (a * a));
}

static double nest_objective(void *ctx, double x1)
{
    const nest_ctx *n = ctx;
    const double x2 = nest_inner(n, x1), z = (1.0 + x1) * (1.0 + x2);
    return pen_omega_x(&n->pen->w1, x1) + pen_omega_x(&n->pen->w2, x2) +
           n->v * n->v / (z * z + n->c);
}

static split joint_argmin(const atf_penalty *pen, double v, double c)
{
    nest_ctx n = {pen, v, c};
    double xmax = pen_omega_inv_x(&pen->w1, v * v / (1.0 + c)), fmin;
    if (!(xmax < 1e150))
        xmax = 1e150;
    split s;
    s.x1 = pen_global_min_scan(nest_objective, &n, xmax, 24, &fmin);
    s.x2 = nest_inner(&n, s.x1);
    return s;
}

/* argmin over (a, b) ≥ 1 of ω1(a) + ω2(b) + v²/(a²b² + c), v ≥ 0 (not nuclear). */
static split pair_argmin(const atf_penalty *pen, double v, double c)
{
    split s = {0.0, 0.0};
    if (!(v > 0.0))
        return s;
    if (pen->w2.family == ATF_FAMILY_FIXED)
        s.x1 = single_argmin(&pen->w1, v, c);
    else if (pen->w1.family == ATF_FAMILY_FIXED)
        s.x2 = single_argmin(&pen->w2, v, c);
    else
        s = joint_argmin(pen, v, c);
    return s;
}

static double split_z(split s)
{
    return (1.0 + s.x1) * (1.0 + s.x2);
}

/* ---- public API ------------------------------------------------------------------------- */

static double nuclear_sqrt_gamma(const atf_penalty *pen)
{
    return sqrt(pen->w1.family == ATF_FAMILY_NUCLEAR ? pen->w1.scale : pen->w2.scale);
}

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
    if (atf_penalty_is_nuclear(pen))
        return v > 0.0 ? sign * 2.0 * nuclear_sqrt_gamma(pen) : 0.0;
    const double z = split_z(pair_argmin(pen, v, 0.0));
    return sign * 2.0 * v / (z * z);
}

double atf_penalty_prox(const atf_penalty *pen, double v, double t, double *z)
{
    const double sign = v < 0.0 ? -1.0 : 1.0;
    v = fabs(v);
    if (atf_penalty_is_nuclear(pen)) {
        const double r = nuclear_sqrt_gamma(pen), u = v / r - 2.0 * t;
        if (z)
            *z = u > 0.0 ? sqrt(u) : 0.0;
        return v > 2.0 * r * t ? sign * (v - 2.0 * r * t) : 0.0;
    }
    const double c = 2.0 * t;
    const double zz = split_z(pair_argmin(pen, v, c));
    if (z)
        *z = zz;
    return sign * v / (1.0 + c / (zz * zz));
}

void atf_penalty_prox_many(const atf_penalty *pen, double *v, size_t n, double t)
{
    for (size_t i = 0; i < n; ++i)
        v[i] = atf_penalty_prox(pen, v[i], t, NULL);
}

void atf_penalty_factors(const atf_penalty *pen, double d, double *s1, double *sigma, double *s2)
{
    const double sign = d < 0.0 ? -1.0 : 1.0;
    d = fabs(d);
    double a, b;
    if (atf_penalty_is_nuclear(pen)) {
        /* z = sqrt(d/√γ) over z > 0; at d = 0 the infimum is the limit z → 0 (s1 = σ = 0). */
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
        *sigma = a > 0.0 ? sign * d / (a * b) : 0.0;
}

/* ---- the joint penalty ⊕ ------------------------------------------------------------------ */

typedef struct {
    const atf_penalty *pen;
    double xv; /* v − 1 */
} oplus_ctx;

static double oplus_objective(void *ctx, double xa)
{
    const oplus_ctx *o = ctx;
    const double xb = (o->xv - xa) / (1.0 + xa); /* b = v/a, written in offsets */
    return pen_omega_x(&o->pen->w1, xa) + pen_omega_x(&o->pen->w2, xb > 0.0 ? xb : 0.0);
}

double atf_penalty_joint(const atf_penalty *pen, double v, double *s1, double *s2)
{
    double a, b, value;
    if (!(v >= 1.0)) { /* no split a·b = v with a, b ≥ 1 */
        a = b = 1.0;
        value = INFINITY;
    } else if (pen->w2.family == ATF_FAMILY_FIXED) {
        a = v, b = 1.0;
        value = atf_omega_value(&pen->w1, v);
    } else if (pen->w1.family == ATF_FAMILY_FIXED) {
        a = 1.0, b = v;
        value = atf_omega_value(&pen->w2, v);
    } else {
        oplus_ctx o = {pen, v - 1.0};
        const double xa = pen_global_min_scan(oplus_objective, &o, o.xv, 24, &value);
        a = 1.0 + xa;
        b = v / a;
    }
    if (s1)
        *s1 = a;
    if (s2)
        *s2 = b;
    return value;
}
