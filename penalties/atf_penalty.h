/* atf_penalty.h — the scalar penalty calculus of docs/penalties.md.
 *
 * A penalty is a pair (ω1, ω2) of families; a single spec term sets ω1 and leaves ω2 = `fixed`.
 * From it follow the joint penalty ω1 ⊕ ω2 (eq. 11), the effective penalty ω̃ (eq. 12), its
 * derivative, the proximal map of t·ω̃ (by the 1-D reduction in z) and the factor recovery of
 * eq. 15. All minimisations are global over possibly nonconvex 1-D functions.
 *
 * Thread-safe: every function is pure given its arguments. No printing. */
#ifndef ATF_PENALTY_H
#define ATF_PENALTY_H

#include <stddef.h>

#include "atf_error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ATF_PENALTY_SPECLEN 128

typedef enum {
    ATF_FAMILY_FIXED = 0, /* χ{1}: 0 at z = 1, +∞ elsewhere            */
    ATF_FAMILY_SQ,        /* γ (z−1)²                                 */
    ATF_FAMILY_ABS,       /* γ |z−1|                                  */
    ATF_FAMILY_POW,       /* γ |z−1|^p, p > 0                          */
    ATF_FAMILY_ZSQ,       /* γ (z²−1)            (spectral Huber)      */
    ATF_FAMILY_LOGSQ,     /* γ (ln z)²                                */
    ATF_FAMILY_NUCLEAR,   /* γ z² on z > 0       (nuclear norm limit)  */
    ATF_FAMILY_BALANCED   /* γ (z² − 1 − 2 ln z) (gradient-flow split) */
} atf_family;

typedef struct {
    atf_family family;
    double p;       /* exponent for ATF_FAMILY_POW, else unused */
    double scale;   /* γ > 0, default 1 */
    int auto_scale; /* 1: `scale=auto` in a template (scale is then 1 until resolved) */
} atf_omega;

typedef struct {
    atf_omega w1; /* left transformation M1 */
    atf_omega w2; /* right transformation M2; family FIXED for a single term */
} atf_penalty;

/* Parse a spec string (docs/penalties.md grammar: `sq`, `pow:p=1.5,scale=0.1`, `sq + abs`, ...).
 * Errors (ATF_E_INPUT, message names the spec and the reason): unknown family or key, p ≤ 0,
 * scale ≤ 0, non-finite numbers, `nuclear` joined with `+`, empty terms. `fixed + ω` equals ω. */
atf_error atf_penalty_parse(const char *spec, atf_penalty *pen, char *err);

/* A template: atf_penalty_parse that also accepts `scale=auto` in any term, marking the term
 * (auto_scale = 1, scale = 1) for a caller that resolves it with atf_penalty_set_scale (e.g. from
 * a baseline solution). atf_penalty_parse refuses `scale=auto`. */
atf_error atf_penalty_parse_template(const char *spec, atf_penalty *pen, char *err);

/* Canonical spec string (round-trips through atf_penalty_parse, and through
 * atf_penalty_parse_template when a term is marked `scale=auto`). Returns chars needed. */
int atf_penalty_format(const atf_penalty *pen, char *buf, size_t len);

/* 1 if a term is marked `scale=auto`. */
int atf_penalty_has_auto_scale(const atf_penalty *pen);

/* Set the scale γ of every term that has one: every term except `fixed` (χ{1} ignores its
 * scale), and a `fixed` term only when it is marked `scale=auto`; clears the auto marks. The
 * families stay, so the parser's rules (p > 0, `nuclear` never joined) still hold.
 * ATF_E_USAGE (pen unchanged) unless γ is finite and > 0. */
atf_error atf_penalty_set_scale(atf_penalty *pen, double gamma);

/* Mark the same terms `scale=auto` (scale 1 until resolved): the template of a scale axis. */
void atf_penalty_set_auto_scale(atf_penalty *pen);

/* Resolve a template: the terms marked `scale=auto` get scale γ (the others keep theirs) and
 * lose the mark. ATF_E_USAGE (pen unchanged) unless γ is finite and > 0. */
atf_error atf_penalty_resolve_auto_scale(atf_penalty *pen, double gamma);

/* The families, in the parser's table order: count and name of the i-th (NULL outside
 * [0, count)). */
int atf_penalty_family_count(void);
const char *atf_penalty_family_name(int i);

/* Default penalty `sq`. */
atf_penalty atf_penalty_default(void);

/* 1 if ω̃ is convex; stationarity then certifies optimality. Criterion (docs/penalties.md):
 * ω̃'(v) = 2v/z*² is nondecreasing iff ω'(z)/z is nondecreasing on (1, ∞). Convex: fixed, sq,
 * zsq, nuclear, balanced, pow with p ≥ 2, `fixed + ω` / `ω + fixed` with ω convex, and pow-like
 * joints (sq = pow 2) with p1 p2/(p1 + p2) ≥ 2 (e.g. pow:p=4+pow:p=4). Not convex: abs, logsq,
 * pow with p < 2, and every other joint (sq+sq and balanced+balanced included). */
int atf_penalty_is_convex(const atf_penalty *pen);

/* 1 for the `nuclear` family (nondifferentiable at 0: the solver uses the subdifferential). */
int atf_penalty_is_nuclear(const atf_penalty *pen);

/* ω(z) of one family (may be +INFINITY). The formulas of docs/penalties.md for any z; logsq and
 * balanced are +∞ for z ≤ 0, and nuclear is γ z² on z ≥ 0 (closed at 0, the factor of d = 0) and
 * +∞ below. */
double atf_omega_value(const atf_omega *w, double z);

/* ω'(z) of one family where ω is finite (the derivative that gradient methods on a factor M use
 * through Σ_j ω(s_j(M))): sq 2γ(z−1), abs γ sign(z−1) (0 at 1), pow γp|z−1|^(p−1) sign(z−1),
 * zsq and nuclear 2γz, logsq 2γ ln(z)/z, balanced 2γ(z − 1/z); NaN for `fixed` and outside the
 * domain. */
double atf_omega_deriv(const atf_omega *w, double z);

/* Joint penalty (ω1 ⊕ ω2)(v) for v ≥ 1 (eq. 11); s1, s2 (may be NULL) receive the split
 * z and v/z with s1·s2 = v. For a single term s1 = v, s2 = 1; for `fixed + ω` s1 = 1, s2 = v.
 * Below 1 there is no admissible split: +∞ with s1 = s2 = 1 (except `nuclear`, γ v² for v ≥ 0). */
double atf_penalty_joint(const atf_penalty *pen, double v, double *s1, double *s2);

/* Effective penalty ω̃(v) = min_{z≥1} (ω1⊕ω2)(z) + v²/z² for v ≥ 0 (eq. 12); z (may be NULL)
 * receives the argmin (the larger one on a tie). ω̃ is even: negative v give ω̃(|v|). For
 * `nuclear`, 2√γ v with z = sqrt(v/√γ) over z > 0 (so z < 1 is possible). */
double atf_penalty_value(const atf_penalty *pen, double v, double *z);

/* Derivative ω̃'(v) = 2v / z*² (envelope theorem), odd in v; for `nuclear` the subgradient
 * 2√γ (v > 0) and 0, the least-norm subgradient, at v = 0. */
double atf_penalty_deriv(const atf_penalty *pen, double v);

/* prox_{tω̃}(v) for v ≥ 0, t > 0: v z*²/(z*² + 2t) with z* = argmin_{z≥1} ω(z) + v²/(z²+2t);
 * z (may be NULL) receives z*. Monotone in v; where the argmin jumps the larger branch is taken.
 * Odd in v; t ≤ 0 gives the identity. For `nuclear` max(v − 2√γ t, 0) with
 * z* = sqrt(max(v/√γ − 2t, 0)). */
double atf_penalty_prox(const atf_penalty *pen, double v, double t, double *z);

/* Slope φ'(v) of the prox φ(v) = prox_{tω̃}(v) (the scalar ingredient of the prox's generalized
 * Jacobian, docs/record/solver.md §15), even in v. Closed forms for `fixed` (1/(1 + 2t)), `zsq`
 * (1/(1 + 2t) below the kink, 1 above) and `nuclear` (0 below the threshold 2√γ·t, 1 above);
 * φ'(0) = 1/(1 + 2t) for every other family (ω̃(v) = v² + o(v²)); elsewhere a central difference
 * of the exact prox (relative accuracy about 1e-9), one-sided where φ has a kink or a jump (a
 * nonconvex ω̃), taking the side of smaller slope — an element of the limiting Jacobian wherever
 * one exists. t ≤ 0 gives 1 (the identity). */
double atf_penalty_prox_slope(const atf_penalty *pen, double v, double t);

/* Apply the prox to n values in place (e.g. singular values); the same numbers as n calls of
 * atf_penalty_prox, but the part of the work that does not depend on v is done once. */
void atf_penalty_prox_many(const atf_penalty *pen, double *v, size_t n, double t);

/* Factor recovery (eq. 15) for a singular value d ≥ 0: s1·s2 = z = argmin of ω̃(d), σ = d/z,
 * so that ω1(s1) + ω2(s2) + σ² = ω̃(d). Any output pointer may be NULL. For `nuclear`
 * s1 = sqrt(d/√γ), s2 = 1, σ = sqrt(d√γ); at d = 0 the infimum is only approached as z → 0
 * and we return its limit s1 = σ = 0, s2 = 1 (ω(0) = 0, so the identity still holds). */
void atf_penalty_factors(const atf_penalty *pen, double d, double *s1, double *sigma, double *s2);

#ifdef __cplusplus
}
#endif

#endif
