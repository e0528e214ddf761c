/* penalty_internal.h — private helpers shared by the penalty sources (not part of the API).
 *
 * Everything here works in the offset x = z − 1 ≥ 0 rather than in z, so that departures from
 * z = 1 far below the spacing of doubles near 1 keep full relative precision (the argmin of
 * ω̃(v) is 1 + O(v²) for small v).
 *
 * All effective-penalty quantities reduce to the minimisation over (a, b) ≥ 1 of
 *     F(a, b) = ω1(a) + ω2(b) + v²/(a²b² + c)     (c = 0: value of ω̃;  c = 2t: prox of tω̃)
 * and the "plans" below hold what about that problem does not depend on v, so that a batch of
 * values (atf_penalty_prox_many) prepares it once. */
#ifndef ATF_PENALTY_INTERNAL_H
#define ATF_PENALTY_INTERNAL_H

#include "atf_penalty.h"

/* ---- one family (penalty_families.c) ---------------------------------------------------- */

/* ω(1 + x) for x ≥ 0 (+∞ for `fixed` at x > 0). */
double pen_omega_x(const atf_omega *w, double x);

/* Largest x ≥ 0 with ω(1 + x) ≤ y (y ≥ 0); may be +∞ only through overflow. */
double pen_omega_inv_x(const atf_omega *w, double y);

/* k(z) = z ω'(z) at z = 1 + x, x = e^y > 0, as ln k and e = d ln k / d ln x, with
 * lnc = pen_lnk_const(w) computed once. Passing y = ln x (not x) keeps ln k finite when x
 * underflows. */
double pen_lnk_const(const atf_omega *w);
void pen_lnk(const atf_omega *w, double lnc, double y, double *lnk, double *e);

/* A first iterate y = ln x for h(1 + x) = v² (lv2 = 2 ln v) from the small- and large-x
 * asymptotes of h; only a starting point for Newton. */
double pen_y_guess(const atf_omega *w, double lnc, double lv2, double c);

/* k(1+) = lim_{z↓1} z ω'(z): 0, a positive number, or +∞ (pow with p < 1, fixed). */
double pen_k_at_one(const atf_omega *w);

/* 1 if k(z) = z ω'(z) is nondecreasing on (1, ∞) (all families except pow with p < 1). */
int pen_k_monotone(const atf_omega *w);

/* Inverse of k for a k-monotone family: the offset x of the z ≥ 1 with k(z) = e^l (x = 0
 * while e^l ≤ k(1+)), and r = d ln z / d l (0 there); lnc = pen_lnk_const(w). */
void pen_k_inverse(const atf_omega *w, double lnc, double l, double *x, double *r);

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
 * xmax·1e-16 to xmax (per_decade points per decade), the lowest discrete local minima refined
 * by Brent's method. Ties go to the larger x. Returns the argmin; *fmin receives the minimum. */
double pen_global_min_scan(pen_fn f, void *ctx, double xmax, int per_decade, double *fmin);

/* F(z_b) − F(z_a) for F(z) = Ω(z) + v²/(z² + c) given Ω at both points and the offsets
 * x = z − 1, without forming the two (nearly equal) values; *scale receives the magnitude of
 * the terms, for a rounding tolerance. */
double pen_gain(double omega_a, double omega_b, double xa, double xb, double v, double c,
                double *scale);

/* 1 if the candidate b (larger z) should replace a: F(b) ≤ F(a) up to rounding. The prox
 * then takes the larger branch where the argmin jumps, which keeps it monotone in v. */
int pen_prefer_larger(double omega_a, double omega_b, double xa, double xb, double v, double c);

/* ---- single family (penalty_single.c) ----------------------------------------------------- */

typedef struct {
    atf_omega w;
    double c;
    double lnc;      /* pen_lnk_const(w) */
    double ln_h_one; /* ln h(1+), may be ±∞ */
    int n_turn;
    double x_turn[2];
    int rising_first;
} pen_curve1;

void pen_curve1_init(pen_curve1 *cv, const atf_omega *w, double c);

/* argmin over x ≥ 0 of ω(1 + x) + v²/((1 + x)² + c), for v > 0. */
double pen_curve1_argmin(const pen_curve1 *cv, double v);

/* ---- joint penalty (penalty_joint.c) ------------------------------------------------------ */

#define PEN_JOINT_MAX_TURN 8

/* The joint problem parametrised by l = ln λ, λ = k1(a) = k2(b) (both k-monotone). */
typedef struct {
    atf_omega w1, w2;
    double lnc1, lnc2; /* pen_lnk_const of each */
    double c;
    double l0;       /* below l0 both factors stay at 1 */
    double ln_h_one; /* ln h(1+) */
    int n_turn;
    double l_turn[PEN_JOINT_MAX_TURN];
    int rising_first;
} pen_jcurve;

void pen_jcurve_init(pen_jcurve *jc, const atf_omega *w1, const atf_omega *w2, double c);

/* argmin offsets (x1, x2) for v > 0. */
void pen_jcurve_argmin(const pen_jcurve *jc, double v, double *x1, double *x2);

/* The same for any pair, by a global scan over a with the exact single-family inner problem
 * over b (used when a family has non-monotone k: pow with p < 1). */
void pen_joint_nested_argmin(const atf_omega *w1, const atf_omega *w2, double v, double c,
                             double *x1, double *x2);

/* (ω1 ⊕ ω2)(1 + xv) for two non-fixed families; *xa receives the offset of the split a. */
double pen_oplus(const atf_omega *w1, const atf_omega *w2, double xv, double *xa);

#endif
