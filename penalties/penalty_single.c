/* penalty_single.c — the 1-D problem of one family:
 *     min over z = 1 + x ≥ 1 of  F(z) = ω(z) + v²/(z² + c).
 *
 * F'(z) has the sign of h(z) − v² with h(z) = k(z)(z + c/z)²/2 and k = z ω'(z). h does not
 * depend on v; its turning points (penalty_families.c) cut x ≥ 0 into pieces on which h is
 * monotone. The local minima of F are z = 1 when h(1+) ≥ v², and the points where h crosses v²
 * upwards, at most one per rising piece; each is found by safeguarded Newton on
 *     ψ(y) = ln h(1 + e^y) − 2 ln v,    y = ln x,
 * which is close to linear in y at both ends (x → 0 and x → ∞), so Newton converges in a few
 * steps from anywhere. The candidates are then compared (ties to the larger z). */
#include "penalty_internal.h"

#include <math.h>

static const double LN2 = 0.69314718055994530942;

void pen_curve1_init(pen_curve1 *cv, const atf_omega *w, double c)
{
    cv->w = *w;
    cv->c = c;
    cv->lnc = pen_lnk_const(w);
    const double k1 = pen_k_at_one(w);
    cv->ln_h_one = k1 == 0.0 ? -INFINITY : log(k1) + 2.0 * log1p(c) - LN2;
    cv->n_turn = pen_turning_points(w, c, cv->x_turn, &cv->rising_first);
}

typedef struct {
    const pen_curve1 *cv;
    double lv2; /* 2 ln v */
} psi_ctx;

/* ψ(y) and dψ/dy = d ln k/d ln x + (x/z)·2(1 − c/z²)/(1 + c/z²). */
static void psi_fdf(void *ctx, double y, double *f, double *df)
{
    const psi_ctx *p = ctx;
    double lnk, e;
    pen_lnk(&p->cv->w, p->cv->lnc, y, &lnk, &e);
    const double x = exp(y), z = 1.0 + x, cz = p->cv->c / z, cz2 = cz / z;
    *f = lnk + 2.0 * log(z + cz) - LN2 - p->lv2;
    *df = e + (x / z) * 2.0 * (1.0 - cz2) / (1.0 + cz2);
}

static double psi_at(const psi_ctx *p, double x)
{
    double f, df;
    psi_fdf((void *)p, log(x), &f, &df);
    return f;
}

/* spectral Huber: min γ u + v²/(u + c) over u = z² ≥ 1 is u = max(1, v/√γ − c). When v/√γ
 * overflows (v = 1e300 with γ = 1e-300) c is negligible beside it and z = √v / γ^¼ directly. */
static double zsq_argmin(const atf_omega *w, double v, double c)
{
    const double ratio = v / sqrt(w->scale);
    if (isinf(ratio))
        return sqrt(v) / sqrt(sqrt(w->scale)) - 1.0;
    const double um1 = ratio - c - 1.0;
    return um1 > 0.0 ? um1 / (sqrt(1.0 + um1) + 1.0) : 0.0;
}

/* balanced, value problem (c = 0): in u = z² the stationarity γ(1 − 1/u) = v²/u² is the
 * quadratic γu² − γu − v² = 0, so u = (1 + √(1 + 4q))/2 with q = v²/γ (docs/math.md). For
 * v/√γ > 1e150, q would overflow; there u = r + 1/2 + O(1/r) with r = v/√γ. */
static double balanced_value_argmin(const atf_omega *w, double v)
{
    const double r = v / sqrt(w->scale);
    if (isinf(r))
        return sqrt(v) / sqrt(sqrt(w->scale)) - 1.0;
    const double um1 = r > 1e150 ? r - 0.5 : 2.0 * r * r / (1.0 + sqrt(1.0 + 4.0 * r * r));
    return um1 / (sqrt(1.0 + um1) + 1.0);
}

/* A first Newton iterate inside the piece (lo, hi) of y = ln x. */
static double piece_guess(const psi_ctx *p, double lo, double hi)
{
    const double y = pen_y_guess(&p->cv->w, p->cv->lnc, p->lv2, p->cv->c);
    if (y > lo && y < hi)
        return y;
    if (isinf(lo) && isinf(hi))
        return 0.0;
    if (isinf(lo))
        return hi - 1.0;
    if (isinf(hi))
        return lo + 1.0;
    return 0.5 * (lo + hi);
}

double pen_curve1_argmin(const pen_curve1 *cv, double v)
{
    if (cv->w.family == ATF_FAMILY_FIXED)
        return 0.0;
    if (cv->w.family == ATF_FAMILY_ZSQ)
        return zsq_argmin(&cv->w, v, cv->c);
    if (cv->w.family == ATF_FAMILY_BALANCED && cv->c == 0.0)
        return balanced_value_argmin(&cv->w, v);
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
            cand[ncand++] = exp(pen_root_increasing(psi_fdf, &p, lo, hi, piece_guess(&p, lo, hi)));
        }
    }
    if (ncand == 0)
        return 0.0;
    double best = cand[0];
    for (int i = 1; i < ncand; ++i)
        if (pen_prefer_larger(pen_omega_x(&cv->w, best), pen_omega_x(&cv->w, cand[i]), best,
                              cand[i], v, cv->c))
            best = cand[i];
    return best;
}
