/* penalty_internal.h — private helpers shared by the penalty sources (not part of the API).
 *
 * Everything here works in the offset x = z − 1 ≥ 0 rather than in z, so that departures from
 * z = 1 far below the spacing of doubles near 1 keep full relative precision (the argmin of
 * ω̃(v) is 1 + O(v²) for small v). */
#ifndef ATF_PENALTY_INTERNAL_H
#define ATF_PENALTY_INTERNAL_H

#include "atf_penalty.h"

/* ---- one family (penalty_families.c) ---------------------------------------------------- */

/* ω(1 + x) for x ≥ 0 (+∞ for `fixed` at x > 0). */
double pen_omega_x(const atf_omega *w, double x);

/* Largest x ≥ 0 with ω(1 + x) ≤ y (y ≥ 0); may be +∞ only through overflow. */
double pen_omega_inv_x(const atf_omega *w, double y);

/* k(z) = z ω'(z) at z = 1 + x, x = e^y > 0, as ln k and e = d ln k / d ln x.
 * Passing y = ln x (not x) keeps ln k finite when x underflows. */
void pen_lnk(const atf_omega *w, double y, double *lnk, double *e);

/* k(1+) = lim_{z↓1} z ω'(z): 0, a positive number, or +∞ (pow with p < 1, fixed). */
double pen_k_at_one(const atf_omega *w);

/* 1 if k(z) = z ω'(z) is nondecreasing on (1, ∞) (all families except pow with p < 1). */
int pen_k_monotone(const atf_omega *w);

/* Turning points of h(z) = k(z)(z + c/z)²/2 on x > 0 (at most two), increasing; returns their
 * count and sets *rising_first to 1 if h increases just right of x = 0. */
int pen_turning_points(const atf_omega *w, double c, double x_turn[2], int *rising_first);

/* ---- 1-D numerics (penalty_minimise.c) ---------------------------------------------------- */

/* f(y) and f'(y). */
typedef void (*pen_fdf)(void *ctx, double y, double *f, double *df);

/* Root of a function increasing on (lo, hi) (either end may be infinite) that is negative just
 * right of lo and positive just left of hi, by Newton's method safeguarded with bisection and
 * with a doubling search towards an infinite end; y0 ∈ (lo, hi) is the first iterate. */
double pen_root_increasing(pen_fdf fdf, void *ctx, double lo, double hi, double y0);

/* f(x). */
typedef double (*pen_fn)(void *ctx, double x);

/* Global minimum of f over [0, xmax] by a scan of x = 0 and a geometric grid from
 * xmax·1e-16 to xmax (per_decade points per decade), each discrete local minimum refined by
 * Brent's method. Ties go to the larger x. Returns the argmin; *fmin receives the minimum. */
double pen_global_min_scan(pen_fn f, void *ctx, double xmax, int per_decade, double *fmin);

#endif
