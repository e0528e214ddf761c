/* test_balanced.c — the family `balanced`, ω(z) = γ(z² − 1 − 2 ln z), against its closed forms
 * (docs/math.md, "The balanced penalty"):
 *  - single term: u = z*² = (1 + √(1 + 4v²/γ))/2, ω̃(v) = γ(2(u − 1) − ln u), ω̃' = 2v/u, and the
 *    tail ω̃ = 2√γ v − γ(1 + ln(v/√γ)) + O(1/v); the closed forms against a brute-force
 *    minimisation written here (golden section on the convex function of m = u − 1), the
 *    library against the closed forms, and the prox against the same brute force;
 *  - `balanced+balanced`: the ⊕ split is s1 = s2 = √z with value 2γ(z − 1 − ln z); the factors of
 *    d = σ(1 + σ²/γ) are s1 = s2 = √(1 + σ²/γ) and σ, ω̃(d) = γ(3p − 2 ln(1 + p)), p = σ²/γ,
 *    and ω̃'(d) = 2σ/(1 + p).
 *    At γ = 1 that is the conservation-law identity s² = 1 + σ², d = σ(1 + σ²); at γ ≠ 1 it is not;
 *  - gradient flow on b = m1 w m2 (one singular direction) from (1, 0, 1), integrated by RK4 with
 *    learning rate γ on w and 1 on m1, m2: m1² − w²/γ = m2² − w²/γ = 1 along the path, and the
 *    factors of `balanced:scale=γ+balanced:scale=γ` at d = b are (m1, w, m2) (both to the
 *    integrator's truncation error, a few 1e-9). */
#include "pen_test.h"

#include <float.h>

/* m − ln(1 + m) for m ≥ 0, by its Taylor series near 0 (no cancellation). */
static double m_minus_log1p(double m)
{
    if (m >= 0.1)
        return m - log1p(m);
    double term = m * m, sum = 0.0;
    for (int n = 2; n < 40 && fabs(term) > 1e-18 * sum; ++n, term *= -m)
        sum += term / n;
    return sum;
}

/* ---- brute force: golden section on a convex function of m ∈ [0, hi] ---------------------- */

typedef struct {
    double gamma, v, c;
} prox_problem;

/* F(m) = γ(u − 1 − ln u) + v²/(u + c), u = 1 + m: convex in u (F'' = γ/u² + 2v²/(u + c)³). */
static double objective(const prox_problem *p, double m)
{
    return p->gamma * m_minus_log1p(m) + p->v * p->v / (1.0 + m + p->c);
}

static double golden_min(const prox_problem *p, double hi, double *m_min)
{
    const double r = 0.6180339887498949;
    double a = 0.0, b = hi, x1 = b - r * (b - a), x2 = a + r * (b - a);
    double f1 = objective(p, x1), f2 = objective(p, x2);
    for (int it = 0; it < 400 && b - a > 1e-17 * (1.0 + b); ++it) {
        if (f1 <= f2) {
            b = x2, x2 = x1, f2 = f1;
            x1 = b - r * (b - a), f1 = objective(p, x1);
        } else {
            a = x1, x1 = x2, f1 = f2;
            x2 = a + r * (b - a), f2 = objective(p, x2);
        }
    }
    double best = 0.5 * (a + b), fbest = objective(p, best);
    const double f0 = objective(p, 0.0);
    if (f0 <= fbest) /* the boundary u = 1 */
        best = 0.0, fbest = f0;
    *m_min = best;
    return fbest;
}

/* ---- single term ---------------------------------------------------------------------------- */

static void check_single(void)
{
    static const double gammas[] = {1e-4, 0.3, 1.0, 7.0, 1e3};
    static const double steps[] = {1e-3, 0.4, 1.0, 30.0};
    double worst_closed = 0.0, worst_brute = 0.0, worst_prox = 0.0;
    for (size_t g = 0; g < sizeof gammas / sizeof gammas[0]; ++g) {
        const double gamma = gammas[g], rg = sqrt(gamma);
        char spec[64];
        snprintf(spec, sizeof spec, "balanced:scale=%.17g", gamma);
        const atf_penalty pen = parse_or_die(spec);
        for (int i = 0; i <= 120; ++i) {
            const double v = rg * pow(10.0, -4.0 + 9.0 * i / 120.0), q = v * v / gamma;
            const double um1 = 2.0 * q / (1.0 + sqrt(1.0 + 4.0 * q)), u = 1.0 + um1;
            const double closed = gamma * (2.0 * um1 - log1p(um1));
            double z;
            const double value = atf_penalty_value(&pen, v, &z);
            const double e_lib = fmax(rel_diff(value, closed), rel_diff(z * z, u));
            CHECK(e_lib <= 1e-12 && rel_diff(atf_penalty_deriv(&pen, v), 2.0 * v / u) <= 1e-12,
                  "%s at v = %g: value %.17g vs %.17g, z² %.17g vs %.17g", spec, v, value, closed,
                  z * z, u);
            /* the closed form is the minimum (and u its argmin): brute force over m = u − 1 */
            const prox_problem pv = {gamma, v, 0.0};
            double m_min;
            const double brute = golden_min(&pv, 2.0 * (1.0 + v / rg), &m_min);
            CHECK(rel_diff(brute, closed) <= 1e-12 && fabs(m_min - um1) <= 1e-6 * u,
                  "%s at v = %g: brute force %.17g (m %g) vs closed form %.17g (m %g)", spec, v,
                  brute, m_min, closed, um1);
            worst_closed = fmax(worst_closed, e_lib);
            worst_brute = fmax(worst_brute, rel_diff(brute, closed));
            for (size_t k = 0; k < sizeof steps / sizeof steps[0]; ++k) {
                const double t = steps[k];
                const prox_problem pp = {gamma, v, 2.0 * t};
                double mp;
                golden_min(&pp, 2.0 * (1.0 + v / rg), &mp);
                const double prox = atf_penalty_prox(&pen, v, t, NULL);
                const double ref = v * (1.0 + mp) / (1.0 + mp + 2.0 * t);
                /* the argmin of a flat minimum is known to ~√ε: compare the prox objectives */
                const double obj =
                    t * atf_penalty_value(&pen, prox, NULL) + 0.5 * (prox - v) * (prox - v);
                const double obj_ref = t * golden_min(&pp, 2.0 * (1.0 + v / rg), &mp);
                CHECK(rel_diff(obj, obj_ref) <= 1e-10 && rel_diff(prox, ref) <= 1e-6,
                      "%s prox_%g(%g) = %.17g (objective %.17g), brute force %.17g (%.17g)", spec,
                      t, v, prox, obj, ref, obj_ref);
                worst_prox = fmax(worst_prox, rel_diff(obj, obj_ref));
            }
        }
        /* tail: ω̃ = 2√γ v − γ(1 + ln(v/√γ)) + O(γ√γ/v) */
        const double v = 1e7 * rg, tail = 2.0 * rg * v - gamma * (1.0 + log(v / rg));
        CHECK(rel_diff(atf_penalty_value(&pen, v, NULL), tail) <= 1e-12, "%s: tail at %g", spec, v);
        /* small v: ω̃ = v² − v⁴/(2γ) + O(v⁶/γ²) */
        const double vs = 1e-3 * rg, small = vs * vs * (1.0 - 0.5 * vs * vs / gamma);
        CHECK(rel_diff(atf_penalty_value(&pen, vs, NULL), small) <= 1e-11, "%s: small v", spec);
    }
    /* regression: γx² overflowed as x·x before the scale (ω̃ was +∞; it is
     * 2√γ v − γ(1 + ln(v/√γ)) = 2e150) */
    const atf_penalty tiny = parse_or_die("balanced:scale=1e-300");
    CHECK(rel_diff(atf_penalty_value(&tiny, 1e300, NULL), 2e150) <= 1e-12,
          "balanced:scale=1e-300 at 1e300: %g", atf_penalty_value(&tiny, 1e300, NULL));
    printf("balanced: library vs closed form %.2g, brute force vs closed form %.2g, prox objective "
           "vs brute force %.2g (max relative)\n",
           worst_closed, worst_brute, worst_prox);
}

/* ---- balanced+balanced ---------------------------------------------------------------------- */

static void check_split(void)
{
    static const double gammas[] = {1.0, 0.3, 7.0};
    double worst = 0.0;
    for (size_t g = 0; g < sizeof gammas / sizeof gammas[0]; ++g) {
        const double gamma = gammas[g];
        char spec[96];
        snprintf(spec, sizeof spec, "balanced:scale=%.17g+balanced:scale=%.17g", gamma, gamma);
        const atf_penalty pen = parse_or_die(spec);
        for (int i = 0; i <= 60; ++i) { /* ⊕(z) = 2ω(√z) at s1 = s2 = √z */
            const double z = pow(10.0, 6.0 * i / 60.0);
            double s1, s2;
            const double j = atf_penalty_joint(&pen, z, &s1, &s2);
            CHECK(rel_diff(s1, sqrt(z)) <= 1e-12 && rel_diff(s2, sqrt(z)) <= 1e-12 &&
                      rel_diff(j, 2.0 * gamma * m_minus_log1p(z - 1.0)) <= 1e-12,
                  "%s: joint at %g is %.17g with split (%.17g, %.17g)", spec, z, j, s1, s2);
        }
        for (int i = 0; i <= 120; ++i) {
            const double sigma = pow(10.0, -4.0 + 7.0 * i / 120.0), p = sigma * sigma / gamma;
            const double d = sigma * (1.0 + p), s = sqrt(1.0 + p);
            double s1, sig, s2;
            atf_penalty_factors(&pen, d, &s1, &sig, &s2);
            const double value = atf_penalty_value(&pen, d, NULL);
            const double closed = gamma * (3.0 * p - 2.0 * log1p(p));
            /* ω̃'(d) = 2d/z² = 2σ/(1 + σ²/γ): largest (√γ) at σ = √γ, so ω̃ is convex on
             * [0, 2√γ] and concave beyond */
            const double slope = rel_diff(atf_penalty_deriv(&pen, d), 2.0 * sigma / (1.0 + p));
            const double e = fmax(fmax(fmax(rel_diff(s1, s), rel_diff(s2, s)), slope),
                                  fmax(rel_diff(sig, sigma), rel_diff(value, closed)));
            CHECK(e <= 1e-11, "%s at σ = %g (d = %g): factors (%.17g, %.17g, %.17g), value %.17g; "
                              "expected (%.17g, %.17g, %.17g), %.17g",
                  spec, sigma, d, s1, sig, s2, value, s, sigma, s, closed);
            worst = fmax(worst, e);
        }
        /* the γ = 1 identity s² = 1 + σ² holds only at γ = 1 */
        double s1, sig, s2;
        atf_penalty_factors(&pen, 2.0, &s1, &sig, &s2);
        const double miss = fabs(s1 * s1 - (1.0 + sig * sig));
        CHECK(gamma == 1.0 ? miss <= 1e-14 : miss > 0.1, "%s: s² − 1 − σ² = %g at d = 2", spec,
              miss);
    }
    printf("balanced+balanced: factors, value and slope vs the conservation-law split %.2g (max "
           "relative)\n",
           worst);
}

/* ---- gradient flow on b = m1 w m2 ------------------------------------------------------------ */

typedef struct {
    double m1, w, m2;
} factors3;

/* dθ/dt = −η ∇θ ½(m1 w m2 − T)², η = 1 on m1, m2 and γ on w. */
static factors3 flow_rhs(factors3 f, double gamma, double target)
{
    const double r = f.m1 * f.w * f.m2 - target;
    factors3 d = {-r * f.w * f.m2, -gamma * r * f.m1 * f.m2, -r * f.m1 * f.w};
    return d;
}

static factors3 axpy(factors3 f, double h, factors3 d)
{
    factors3 g = {f.m1 + h * d.m1, f.w + h * d.w, f.m2 + h * d.m2};
    return g;
}

static void check_gradient_flow(void)
{
    static const double gammas[] = {1.0, 0.3, 7.0};
    static const double targets[] = {0.5, 3.0, 20.0};
    const double dt = 2.5e-4; /* dt · (largest rate ≈ 330) ≈ 0.08 */
    double worst_law = 0.0, worst_split = 0.0;
    for (size_t g = 0; g < sizeof gammas / sizeof gammas[0]; ++g)
        for (size_t k = 0; k < sizeof targets / sizeof targets[0]; ++k) {
            const double gamma = gammas[g], target = targets[k];
            char spec[96];
            snprintf(spec, sizeof spec, "balanced:scale=%.17g+balanced:scale=%.17g", gamma, gamma);
            const atf_penalty pen = parse_or_die(spec);
            factors3 f = {1.0, 0.0, 1.0};
            for (int step = 1; step <= 400000; ++step) { /* t = 100 */
                const factors3 k1 = flow_rhs(f, gamma, target);
                const factors3 k2 = flow_rhs(axpy(f, 0.5 * dt, k1), gamma, target);
                const factors3 k3 = flow_rhs(axpy(f, 0.5 * dt, k2), gamma, target);
                const factors3 k4 = flow_rhs(axpy(f, dt, k3), gamma, target);
                f.m1 += dt / 6.0 * (k1.m1 + 2.0 * k2.m1 + 2.0 * k3.m1 + k4.m1);
                f.w += dt / 6.0 * (k1.w + 2.0 * k2.w + 2.0 * k3.w + k4.w);
                f.m2 += dt / 6.0 * (k1.m2 + 2.0 * k2.m2 + 2.0 * k3.m2 + k4.m2);
                if (step % 40000 != 0)
                    continue;
                const double law = fmax(fabs(f.m1 * f.m1 - f.w * f.w / gamma - 1.0),
                                        fabs(f.m2 * f.m2 - f.w * f.w / gamma - 1.0));
                double s1, sig, s2;
                atf_penalty_factors(&pen, f.m1 * f.w * f.m2, &s1, &sig, &s2);
                const double split =
                    fmax(fmax(rel_diff(s1, f.m1), rel_diff(s2, f.m2)), rel_diff(sig, f.w));
                /* RK4 conserves the law to its truncation error (≈ 4e-9 at the stiffest case);
                 * the factors must agree with the path to within that */
                CHECK(law <= 1e-8 && split <= 1e-12 + law,
                      "flow γ=%g T=%g t=%g: law residual %g, factors (%.17g, %.17g, %.17g) vs "
                      "path (%.17g, %.17g, %.17g)",
                      gamma, target, step * dt, law, s1, sig, s2, f.m1, f.w, f.m2);
                worst_law = fmax(worst_law, law);
                worst_split = fmax(worst_split, split);
            }
            CHECK(fabs(f.m1 * f.w * f.m2 - target) <= 1e-6 * target, "flow γ=%g T=%g converged",
                  gamma, target);
        }
    printf("gradient flow: conservation-law residual %.2g, factors vs path %.2g (max)\n", worst_law,
           worst_split);
}

int main(void)
{
    check_single();
    check_split();
    check_gradient_flow();
    return atf_test_finish("test_balanced");
}
