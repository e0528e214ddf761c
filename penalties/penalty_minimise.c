/* penalty_minimise.c — the two 1-D workhorses of the penalty calculus: a safeguarded Newton
 * root finder for increasing functions on possibly unbounded intervals, and a global
 * minimiser (grid scan + Brent) for the rare problems without exploitable structure. */
#include "penalty_internal.h"

#include <float.h>
#include <math.h>

#define ROOT_TOL (2.0 * DBL_EPSILON)
#define QUADRATIC_STOP 1e-9

double pen_root_increasing(pen_fdf fdf, void *ctx, double lo, double hi, double y0)
{
    double y = y0, reach = 1.0, dy = INFINITY, dy_old = INFINITY;
    for (int it = 0; it < 500; ++it) {
        double f, df;
        fdf(ctx, y, &f, &df);
        if (f == 0.0)
            return y;
        if (f < 0.0)
            lo = y;
        else
            hi = y;
        const int bounded = isfinite(lo) && isfinite(hi);
        const double newton = y - f / df;
        /* Newton is accepted inside the bracket, and (once bracketed) only while it at least
         * halves the step before last, as in Numerical Recipes' rtsafe. */
        const int accept = df > 0.0 && isfinite(newton) && newton > lo && newton < hi &&
                           (!bounded || fabs(newton - y) < 0.5 * fabs(dy_old));
        double next = newton;
        if (!accept) {
            if (bounded) {
                next = lo + 0.5 * (hi - lo);
            } else if (isinf(lo)) {
                next = hi - reach;
                reach *= 2.0;
            } else {
                next = lo + reach;
                reach *= 2.0;
            }
        }
        dy_old = dy;
        dy = next - y;
        /* Newton converges quadratically and f''/f' = O(1) for the functions of logarithms
         * solved here: after an accepted step below 1e-9 the next one would be below
         * rounding, so it is not taken */
        if ((accept && fabs(dy) <= QUADRATIC_STOP) || fabs(dy) <= ROOT_TOL * (1.0 + fabs(y)))
            return next;
        if (bounded && hi - lo <= ROOT_TOL * (1.0 + fabs(lo)))
            return lo + 0.5 * (hi - lo);
        y = next;
    }
    return y;
}

/* Brent's minimiser (golden section with parabolic steps) on [a, b]. */
static double brent_min(pen_fn f, void *ctx, double a, double b, double *fmin)
{
    const double golden = 0.38196601125010515;
    double x = a + golden * (b - a), w = x, v = x;
    double fx = f(ctx, x), fw = fx, fv = fx;
    double d = 0.0, e = 0.0;
    for (int it = 0; it < 300; ++it) {
        const double m = 0.5 * (a + b);
        const double tol = sqrt(DBL_EPSILON) * fabs(x) + 1e-300, t2 = 2.0 * tol;
        if (fabs(x - m) <= t2 - 0.5 * (b - a))
            break;
        double p = 0.0, q = 0.0, r = 0.0;
        if (fabs(e) > tol) {
            r = (x - w) * (fx - fv);
            q = (x - v) * (fx - fw);
            p = (x - v) * q - (x - w) * r;
            q = 2.0 * (q - r);
            if (q > 0.0)
                p = -p;
            else
                q = -q;
            r = e;
            e = d;
        }
        if (fabs(p) < fabs(0.5 * q * r) && p > q * (a - x) && p < q * (b - x)) {
            d = p / q;
            const double u = x + d;
            if (u - a < t2 || b - u < t2)
                d = x < m ? tol : -tol;
        } else {
            e = x < m ? b - x : a - x;
            d = golden * e;
        }
        const double u = x + (fabs(d) >= tol ? d : d > 0.0 ? tol : -tol);
        const double fu = f(ctx, u);
        if (fu <= fx) {
            if (u < x)
                b = x;
            else
                a = x;
            v = w, fv = fw;
            w = x, fw = fx;
            x = u, fx = fu;
        } else {
            if (u < x)
                a = u;
            else
                b = u;
            if (fu <= fw || w == x) {
                v = w, fv = fw;
                w = u, fw = fu;
            } else if (fu <= fv || v == x || v == w) {
                v = u, fv = fu;
            }
        }
    }
    *fmin = fx;
    return x;
}

#define SCAN_DECADES 16
#define SCAN_MAX_POINTS (SCAN_DECADES * 64 + 2)
#define SCAN_REFINE 6

double pen_global_min_scan(pen_fn f, void *ctx, double xmax, int per_decade, double *fmin)
{
    if (per_decade > 64)
        per_decade = 64;
    const int n = SCAN_DECADES * per_decade + 1; /* grid points besides x = 0 */
    double xs[SCAN_MAX_POINTS], fs[SCAN_MAX_POINTS];
    xs[0] = 0.0;
    fs[0] = f(ctx, 0.0);
    for (int j = 1; j <= n; ++j) {
        xs[j] = xmax * pow(10.0, -(double)(n - j) / per_decade);
        fs[j] = f(ctx, xs[j]);
    }
    /* discrete local minima, the SCAN_REFINE lowest ones (larger x first among equals) */
    int pick[SCAN_REFINE], npick = 0;
    for (int j = n; j >= 0; --j) {
        const int is_min = (j == 0 || fs[j] <= fs[j - 1]) && (j == n || fs[j] <= fs[j + 1]);
        if (!is_min)
            continue;
        if (npick < SCAN_REFINE) {
            pick[npick++] = j;
            continue;
        }
        int worst = 0;
        for (int i = 1; i < npick; ++i)
            if (fs[pick[i]] > fs[pick[worst]])
                worst = i;
        if (fs[j] < fs[pick[worst]])
            pick[worst] = j;
    }
    double best_x = xs[n], best_f = fs[n];
    for (int j = 0; j <= n; ++j) /* best grid point, ties to the larger x */
        if (fs[j] <= best_f)
            best_x = xs[j], best_f = fs[j];
    for (int i = 0; i < npick; ++i) {
        const int j = pick[i];
        const double lo = xs[j > 0 ? j - 1 : 0], hi = xs[j < n ? j + 1 : n];
        double fu, u = brent_min(f, ctx, lo, hi, &fu);
        if (fu < best_f || (fu == best_f && u > best_x))
            best_x = u, best_f = fu;
    }
    *fmin = best_f;
    return best_x;
}

double pen_gain(double omega_a, double omega_b, double xa, double xb, double v, double c,
                double *scale)
{
    const double za = 1.0 + xa, zb = 1.0 + xb;
    /* v²/(za² + c) − v²/(zb² + c) = v · v/(za² + c) · (zb² − za²)/(zb² + c), with
     * zb² − za² = (xb − xa)(2 + xa + xb); every factor is formed so that nothing overflows or
     * underflows before the product (a step t = 1e197 with z ~ 1e99 occurs on badly scaled data,
     * where the plain product of the two denominators overflowed and hid the better branch) */
    const double fit_a = (v / za) / (za + c / za);
    const double rise = ((xb - xa) / zb) * ((2.0 + xa + xb) / zb) / (1.0 + (c / zb) / zb);
    const double fit = (v * rise) * fit_a;
    *scale = fabs(omega_a) + fabs(omega_b) + fabs(fit);
    return (omega_b - omega_a) - fit;
}

int pen_prefer_larger(double omega_a, double omega_b, double xa, double xb, double v, double c)
{
    double scale;
    const double gain = pen_gain(omega_a, omega_b, xa, xb, v, c, &scale);
    return gain <= 8.0 * DBL_EPSILON * scale;
}
