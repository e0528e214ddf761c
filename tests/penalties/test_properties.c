/* test_properties.c — the properties docs/penalties.md lists (Prop. 3 and 4) on grids for every family,
 * several scales and joints; closed forms (fixed, zsq, nuclear); tail exponents; the factor
 * identity; ω̃' against finite differences; convexity claims against second differences;
 * symmetry, prox_many, and extreme arguments (no NaN, sane bounds). */
#include "pen_test.h"

#include <float.h>
#include <string.h>

static double grid_v(int i, int n, double lo_exp, double hi_exp)
{
    return pow(10.0, lo_exp + (hi_exp - lo_exp) * i / n);
}

static int is_joint(const atf_penalty *pen)
{
    return pen->w1.family != ATF_FAMILY_FIXED && pen->w2.family != ATF_FAMILY_FIXED;
}

/* ω̃(0) = 0, ω̃ nondecreasing, ω̃(v) = v² + o(v²). */
static void check_value_shape(const char *spec, const atf_penalty *pen)
{
    double z = -1.0;
    CHECK(atf_penalty_value(pen, 0.0, &z) == 0.0 && z == 1.0, "%s: value(0) = 0 at z = 1", spec);
    CHECK(atf_penalty_prox(pen, 0.0, 1.0, NULL) == 0.0, "%s: prox(0) = 0", spec);
    double prev = 0.0;
    for (int i = 0; i <= 600; ++i) {
        const double v = grid_v(i, 600, -5.0, 7.0), w = atf_penalty_value(pen, v, &z);
        CHECK(w >= prev * (1.0 - 4.0 * DBL_EPSILON), "%s: value decreases at v = %g", spec, v);
        CHECK(w <= v * v * (1.0 + 4.0 * DBL_EPSILON) && w > 0.0 && z >= 1.0,
              "%s: 0 < value(%g) = %g <= v² with z = %g >= 1", spec, v, w, z);
        prev = w;
    }
    const double e3 = fabs(atf_penalty_value(pen, 1e-3, NULL) / 1e-6 - 1.0);
    const double e5 = fabs(atf_penalty_value(pen, 1e-5, NULL) / 1e-10 - 1.0);
    /* o(v²): small at 1e-5, or at least clearly shrinking (pow:p=4+pow:p=4 converges like v^(2/3)) */
    CHECK((e5 <= 1e-4 || e5 <= 0.1 * e3) && e5 <= e3 + 1e-15,
          "%s: value/v² -> 1 (errors %g at 1e-3, %g at 1e-5)", spec, e3, e5);
}

/* v² ↦ ω̃(v) is concave: second differences on uniform grids in u = v². */
static void check_concave_in_square(const char *spec, const atf_penalty *pen)
{
    static const double spans[] = {1e-2, 1.0, 1e2, 1e4, 1e8};
    for (size_t s = 0; s < sizeof spans / sizeof spans[0]; ++s) {
        const int n = 200;
        const double h = spans[s] / n;
        double g[201];
        for (int i = 0; i <= n; ++i)
            g[i] = atf_penalty_value(pen, sqrt(h * i), NULL);
        for (int i = 1; i < n; ++i) {
            const double second = g[i - 1] - 2.0 * g[i] + g[i + 1];
            CHECK(second <= 1e-13 * g[n], "%s: not concave in v² near u = %g (%g)", spec, h * i,
                  second / g[n]);
        }
    }
}

/* 0 ≤ prox(v) ≤ v and prox nondecreasing in v, for several steps. */
static void check_prox_shape(const char *spec, const atf_penalty *pen)
{
    static const double steps[] = {0.02, 0.5, 1.0, 5.0, 50.0};
    for (size_t k = 0; k < sizeof steps / sizeof steps[0]; ++k) {
        double prev = 0.0;
        for (int i = 0; i <= 1500; ++i) {
            const double v = grid_v(i, 1500, -4.0, 5.0), p = atf_penalty_prox(pen, v, steps[k], NULL);
            CHECK(p >= 0.0 && p <= v, "%s: prox_%g(%g) = %g outside [0, v]", spec, steps[k], v, p);
            CHECK(p >= prev * (1.0 - 1e-14), "%s: prox_%g not monotone at v = %.17g (%g < %g)",
                  spec, steps[k], v, p, prev);
            prev = p;
        }
    }
}

/* ⊕ is nondecreasing with (ω1 ⊕ ω2)(1) = 0 and s1·s2 = v, s1, s2 ≥ 1. */
static void check_oplus_shape(const char *spec, const atf_penalty *pen)
{
    double s1, s2;
    CHECK(atf_penalty_joint(pen, 1.0, &s1, &s2) == 0.0 && s1 == 1.0 && s2 == 1.0,
          "%s: joint(1) = 0 at s1 = s2 = 1", spec);
    double prev = 0.0;
    for (int i = 1; i <= 400; ++i) {
        const double v = grid_v(i, 400, 0.0, 5.0), j = atf_penalty_joint(pen, v, &s1, &s2);
        CHECK(j >= prev * (1.0 - 1e-14), "%s: joint decreases at %g", spec, v);
        CHECK(s1 >= 1.0 && s2 >= 1.0 - 1e-15 && rel_diff(s1 * s2, v) <= 4.0 * DBL_EPSILON,
              "%s: joint split at %g: s1 = %g, s2 = %g", spec, v, s1, s2);
        const double direct = atf_omega_value(&pen->w1, s1) + atf_omega_value(&pen->w2, s2);
        CHECK(rel_diff(direct, j) <= 1e-12, "%s: joint(%g) = %g but ω1(s1) + ω2(s2) = %g", spec,
              v, j, direct);
        prev = j;
    }
    CHECK(isinf(atf_penalty_joint(pen, 0.5, NULL, NULL)), "%s: joint below 1 is +inf", spec);
}

/* ω1(s1) + ω2(s2) + σ² = ω̃(d) and s1 s2 σ = d. */
static void check_factors(const char *spec, const atf_penalty *pen)
{
    for (int i = 0; i <= 300; ++i) {
        const double d = i == 0 ? 0.0 : grid_v(i, 300, -6.0, 6.0);
        double s1, sigma, s2, z;
        atf_penalty_factors(pen, d, &s1, &sigma, &s2);
        const double value = atf_penalty_value(pen, d, &z);
        const double sum = atf_omega_value(&pen->w1, s1) + atf_omega_value(&pen->w2, s2) + sigma * sigma;
        CHECK(rel_diff(sum, value) <= 1e-13, "%s: factors at d = %g: %.17g vs value %.17g", spec,
              d, sum, value);
        CHECK(rel_diff(s1 * s2 * sigma, d) <= 8.0 * DBL_EPSILON, "%s: s1 s2 sigma != d at %g",
              spec, d);
        CHECK(rel_diff(s1 * s2, z) <= 4.0 * DBL_EPSILON, "%s: s1 s2 != argmin z at %g", spec, d);
    }
}

/* ω̃' = 2v/z² against central differences, skipping points where z jumps. */
static void check_derivative(const char *spec, const atf_penalty *pen)
{
    CHECK(atf_penalty_deriv(pen, 0.0) == 0.0, "%s: deriv(0) = 0", spec);
    for (int i = 0; i <= 200; ++i) {
        const double v = grid_v(i, 200, -3.0, 4.0), h = 1e-5 * v;
        double za, zb;
        const double wa = atf_penalty_value(pen, v - h, &za), wb = atf_penalty_value(pen, v + h, &zb);
        if (rel_diff(za, zb) > 1e-3) /* a jump of the argmin: ω̃' is discontinuous here */
            continue;
        const double fd = (wb - wa) / (2.0 * h), d = atf_penalty_deriv(pen, v);
        CHECK(rel_diff(fd, d) <= 1e-6, "%s: deriv(%g) = %.12g, finite difference %.12g", spec, v,
              d, fd);
    }
}

/* is_convex against second differences of ω̃ on a wide relative grid: convex penalties show
 * none below rounding, nonconvex ones show a clearly negative one somewhere. */
static void check_convexity_claim(const char *spec, const atf_penalty *pen)
{
    double most_negative = 0.0;
    for (int i = 0; i <= 400; ++i) {
        const double v = grid_v(i, 400, -3.0, 7.0), h = 0.05 * v;
        const double a = atf_penalty_value(pen, v - h, NULL), b = atf_penalty_value(pen, v, NULL),
                     c = atf_penalty_value(pen, v + h, NULL);
        const double second = (a - 2.0 * b + c) / b;
        if (second < most_negative)
            most_negative = second;
    }
    if (atf_penalty_is_convex(pen))
        CHECK(most_negative >= -1e-12, "%s claims convex but has second difference %g", spec,
              most_negative);
    else
        CHECK(most_negative < -1e-6, "%s claims nonconvex but the worst second difference is %g",
              spec, most_negative);
}

static void check_symmetry_and_batch(const char *spec, const atf_penalty *pen)
{
    double vals[64], batch[64];
    for (int i = 0; i < 64; ++i)
        vals[i] = batch[i] = (i % 2 ? -1.0 : 1.0) * grid_v(i, 63, -3.0, 3.0);
    atf_penalty_prox_many(pen, batch, 64, 0.0);
    for (int i = 0; i < 64; ++i)
        CHECK(batch[i] == vals[i] && atf_penalty_prox(pen, vals[i], 0.0, NULL) == vals[i],
              "%s: a zero step is the identity", spec);
    atf_penalty_prox_many(pen, batch, 64, 0.7);
    for (int i = 0; i < 64; ++i) {
        const double v = vals[i];
        CHECK(batch[i] == atf_penalty_prox(pen, v, 0.7, NULL), "%s: prox_many differs at %g", spec, v);
        CHECK(atf_penalty_value(pen, -v, NULL) == atf_penalty_value(pen, v, NULL), "%s: value even", spec);
        CHECK(atf_penalty_prox(pen, -v, 0.7, NULL) == -atf_penalty_prox(pen, v, 0.7, NULL),
              "%s: prox odd", spec);
        CHECK(atf_penalty_deriv(pen, -v) == -atf_penalty_deriv(pen, v), "%s: deriv odd", spec);
    }
}

/* ---- closed forms -------------------------------------------------------------------------- */

static void check_closed_forms(void)
{
    static const double gammas[] = {1e-4, 0.3, 1.0, 7.0, 1e3};
    static const double steps[] = {1e-3, 0.4, 1.0, 30.0};
    for (size_t g = 0; g < sizeof gammas / sizeof gammas[0]; ++g) {
        const double gamma = gammas[g], r = sqrt(gamma);
        char spec[64];
        snprintf(spec, sizeof spec, "zsq:scale=%.17g", gamma);
        const atf_penalty zsq = parse_or_die(spec);
        snprintf(spec, sizeof spec, "nuclear:scale=%.17g", gamma);
        const atf_penalty nuc = parse_or_die(spec);
        const atf_penalty fixed = parse_or_die("fixed");
        for (int i = 0; i <= 300; ++i) {
            const double v = grid_v(i, 300, -4.0, 5.0);
            const double huber = v <= r ? v * v : 2.0 * r * v - gamma;
            CHECK(rel_diff(atf_penalty_value(&zsq, v, NULL), huber) <= 1e-12, "zsq:%g value(%g)", gamma, v);
            CHECK(rel_diff(atf_penalty_value(&nuc, v, NULL), 2.0 * r * v) <= 1e-12, "nuclear value");
            CHECK(rel_diff(atf_penalty_value(&fixed, v, NULL), v * v) <= 1e-15, "fixed value");
            CHECK(rel_diff(atf_penalty_deriv(&zsq, v), v <= r ? 2.0 * v : 2.0 * r) <= 1e-12,
                  "zsq:%g deriv(%g)", gamma, v);
            CHECK(rel_diff(atf_penalty_deriv(&nuc, v), 2.0 * r) <= 1e-12, "nuclear deriv");
            double s1, sigma, s2;
            atf_penalty_factors(&nuc, v, &s1, &sigma, &s2);
            CHECK(rel_diff(s1, sqrt(v / r)) <= 1e-14 && s2 == 1.0 &&
                      rel_diff(gamma * s1 * s1 + sigma * sigma, 2.0 * r * v) <= 1e-13,
                  "nuclear factors at %g", v);
            for (size_t k = 0; k < sizeof steps / sizeof steps[0]; ++k) {
                const double t = steps[k], u = fmax(1.0, v / r - 2.0 * t);
                CHECK(rel_diff(atf_penalty_prox(&zsq, v, t, NULL), v * u / (u + 2.0 * t)) <= 1e-12,
                      "zsq:%g prox_%g(%g)", gamma, t, v);
                const double pn = atf_penalty_prox(&nuc, v, t, NULL), en = fmax(v - 2.0 * r * t, 0.0);
                CHECK(fabs(pn - en) <= 1e-12 * v, "nuclear:%g prox_%g(%g) = %g, expected %g", gamma,
                      t, v, pn, en);
                CHECK(rel_diff(atf_penalty_prox(&fixed, v, t, NULL), v / (1.0 + 2.0 * t)) <= 1e-15,
                      "fixed prox");
            }
        }
        double s1, sigma, s2;
        atf_penalty_factors(&nuc, 0.0, &s1, &sigma, &s2);
        CHECK(s1 == 0.0 && sigma == 0.0 && s2 == 1.0, "nuclear factors at d = 0 are (0, 0, 1)");
        CHECK(atf_penalty_deriv(&nuc, 0.0) == 0.0, "nuclear deriv(0) is the least-norm subgradient 0");
        CHECK(rel_diff(atf_penalty_joint(&nuc, 0.25, &s1, &s2), gamma / 16.0) <= 1e-15 &&
                  s1 == 0.25 && s2 == 1.0,
              "nuclear joint is γ v² with s1 = v on v ≥ 0");
    }
}

/* ⊕ of a single term and of fixed + ω: the term itself, split (v, 1) resp. (1, v). */
static void check_single_joint(void)
{
    const atf_penalty left = parse_or_die("pow:p=1.5,scale=2"), right = parse_or_die("fixed+pow:p=1.5,scale=2");
    for (int i = 0; i <= 40; ++i) {
        const double v = grid_v(i, 40, 0.0, 4.0), expect = 2.0 * pow(v - 1.0, 1.5);
        double s1, s2;
        const double a = atf_penalty_joint(&left, v, &s1, &s2);
        CHECK(rel_diff(a, expect) <= 1e-14 && s1 == v && s2 == 1.0, "single joint at %g", v);
        const double b = atf_penalty_joint(&right, v, &s1, &s2);
        CHECK(rel_diff(b, expect) <= 1e-14 && s1 == 1.0 && s2 == v, "fixed+pow joint at %g", v);
        double f1, sig, f2;
        atf_penalty_factors(&right, v, &f1, &sig, &f2);
        CHECK(f1 == 1.0 && f2 >= 1.0, "fixed+pow factors put the adaptation in s2 at %g", v);
        CHECK(atf_penalty_value(&left, v, NULL) == atf_penalty_value(&right, v, NULL) &&
                  atf_penalty_prox(&left, v, 3.0, NULL) == atf_penalty_prox(&right, v, 3.0, NULL),
              "fixed+ω equals ω at %g", v);
    }
}

/* Tail exponents by the log-slope of ω̃ at large v. */
static void check_tails(void)
{
    static const struct {
        const char *spec;
        double slope;
    } table[] = {
        {"sq", 1.0},           {"sq:scale=0.01", 1.0},  {"sq:scale=100", 1.0},
        {"abs", 2.0 / 3.0},    {"abs:scale=5", 2.0 / 3.0},
        {"pow:p=0.5", 0.4},    {"pow:p=1.5", 3.0 / 3.5}, {"pow:p=3", 1.2},
        {"zsq", 1.0},          {"sq+sq", 2.0 / 3.0},    {"pow:p=4+pow:p=4", 1.0},
        {"balanced", 1.0},     {"balanced+balanced", 2.0 / 3.0},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; ++i) {
        const atf_penalty pen = parse_or_die(table[i].spec);
        const double v1 = 1e11, v2 = 1e12;
        const double slope = log(atf_penalty_value(&pen, v2, NULL) / atf_penalty_value(&pen, v1, NULL)) /
                             log(v2 / v1);
        CHECK(fabs(slope - table[i].slope) <= 2e-3, "%s: tail log-slope %.6f, expected %.6f",
              table[i].spec, slope, table[i].slope);
    }
    /* sq: ω̃(v) → 2√γ v (the constant too) */
    const atf_penalty sq = parse_or_die("sq:scale=4");
    CHECK(rel_diff(atf_penalty_value(&sq, 1e8, NULL), 2.0 * 2.0 * 1e8) <= 1e-3, "sq tail 2√γ v");
}

/* ---- extremes: v 1e-12..1e8, γ 1e-8..1e4, t 1e-8..1e8 --------------------------------------- */

static void check_extremes(void)
{
    static const char *const families[] = {"sq", "abs", "pow:p=0.5", "pow:p=1.5", "pow:p=3",
                                           "zsq", "logsq", "fixed", "nuclear", "balanced"};
    static const double gammas[] = {1e-8, 1e-4, 1.0, 1e2, 1e4};
    static const double steps[] = {1e-8, 1e-3, 1.0, 1e3, 1e8};
    for (size_t f = 0; f < sizeof families / sizeof families[0]; ++f)
        for (size_t g = 0; g < sizeof gammas / sizeof gammas[0]; ++g)
            for (int joint = 0; joint < 3; ++joint) {
                char spec[128];
                const char *sep = strchr(families[f], ':') ? "," : ":";
                if (joint == 1 && strcmp(families[f], "nuclear") != 0)
                    snprintf(spec, sizeof spec, "sq+%s%sscale=%g", families[f], sep, gammas[g]);
                else if (joint == 2 && strcmp(families[f], "nuclear") != 0)
                    snprintf(spec, sizeof spec, "%s%sscale=%g+abs", families[f], sep, gammas[g]);
                else if (joint == 0)
                    snprintf(spec, sizeof spec, "%s%sscale=%g", families[f], sep, gammas[g]);
                else
                    continue;
                if (joint && strstr(spec, "p=0.5") && g % 2) /* the slow nested path: fewer */
                    continue;
                const atf_penalty pen = parse_or_die(spec);
                for (int e = -12; e <= 8; e += 2) {
                    const double v = pow(10.0, e);
                    double z;
                    const double w = atf_penalty_value(&pen, v, &z), d = atf_penalty_deriv(&pen, v);
                    CHECK(isfinite(w) && w >= 0.0 && isfinite(z) && isfinite(d) && d >= 0.0,
                          "%s: value/deriv at %g not finite: %g %g %g", spec, v, w, z, d);
                    if (!atf_penalty_is_nuclear(&pen))
                        CHECK(w <= v * v * (1.0 + 1e-15) && z >= 1.0 && d <= 2.0 * v * (1.0 + 1e-15),
                              "%s: bounds at %g: value %g z %g deriv %g", spec, v, w, z, d);
                    double s1, sigma, s2;
                    atf_penalty_factors(&pen, v, &s1, &sigma, &s2);
                    const double sum = atf_omega_value(&pen.w1, s1) + atf_omega_value(&pen.w2, s2) +
                                       sigma * sigma;
                    CHECK(rel_diff(sum, w) <= 1e-12 && rel_diff(s1 * s2 * sigma, v) <= 1e-15,
                          "%s: factor identity at %g (%g vs %g)", spec, v, sum, w);
                    for (size_t k = 0; k < sizeof steps / sizeof steps[0]; ++k) {
                        const double p = atf_penalty_prox(&pen, v, steps[k], &z);
                        CHECK(isfinite(p) && p >= 0.0 && p <= v && isfinite(z),
                              "%s: prox_%g(%g) = %g (z %g)", spec, steps[k], v, p, z);
                    }
                }
            }
}

int main(void)
{
    for (size_t i = 0; i < N_PEN_SPECS; ++i) {
        const char *spec = PEN_SPECS[i];
        const atf_penalty pen = parse_or_die(spec);
        check_value_shape(spec, &pen);
        check_concave_in_square(spec, &pen);
        check_prox_shape(spec, &pen);
        if (is_joint(&pen))
            check_oplus_shape(spec, &pen);
        check_factors(spec, &pen);
        check_derivative(spec, &pen);
        check_convexity_claim(spec, &pen);
        check_symmetry_and_batch(spec, &pen);
    }
    check_closed_forms();
    check_single_joint();
    check_tails();
    check_extremes();
    return atf_test_finish("test_properties");
}
