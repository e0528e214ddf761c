/* test_extremes.c — the penalty calculus far from unit scale, which the solver relies on after
 * equilibration (docs/record/solver.md §7, docs/penalties.md "Extreme arguments").
 *
 *  - no NaN anywhere: every family and joint of PEN_SPECS and `nuclear`, with its scale
 *    multiplied by 1e-300 … 1e300, at v = 0 and v from 1e-300 to 1e300, steps t from 1e-300 to
 *    1e300: ω̃(v) ≥ 0, ω̃'(v) ≥ 0, 0 ≤ prox ≤ v, and factors that are not NaN (+∞ is an honest
 *    overflow: ω̃(1e300) = 1e600 for `fixed`);
 *  - the scaling identity of the solver's variable scaling, exact for powers of two c = 2^k:
 *    ω̃_γ(c v) = c² ω̃_{γ/c²}(v) and prox_{tω̃_γ}(c v) = c·prox_{tω̃_{γ/c²}}(v);
 *  - regressions: zsq:scale=1e-300 at v = 1e300 is 2√γ v − γ = 2e150 (was NaN: v/√γ
 *    overflowed), and the prox of abs:scale=1.2e-271 at v = 1e14 with t = 1e197 keeps v (the
 *    branch comparison multiplied two denominators of 1e197·1e199 and overflowed to z = 1). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pen_test.h"

/* spec with every term's scale multiplied by g (a term without scale= has scale 1) */
static atf_penalty scaled_penalty(const char *spec, double g)
{
    atf_penalty pen = parse_or_die(spec);
    if (pen.w1.family != ATF_FAMILY_FIXED)
        pen.w1.scale *= g;
    if (pen.w2.family != ATF_FAMILY_FIXED)
        pen.w2.scale *= g;
    return pen;
}

static void check_no_nan(const char *spec)
{
    static const double gs[] = {1e-300, 1e-100, 1.0, 1e100, 1e300};
    static const double ts[] = {1e-300, 1.0, 1e300};
    for (size_t gi = 0; gi < sizeof gs / sizeof gs[0]; gi++) {
        atf_penalty pen = scaled_penalty(spec, gs[gi]);
        for (int e = -301; e <= 300; e += 15) {
            double v = e < -300 ? 0.0 : pow(10.0, e);
            double z, value = atf_penalty_value(&pen, v, &z), d = atf_penalty_deriv(&pen, v);
            CHECK(value >= 0.0 && d >= 0.0 && !isnan(z), "%s ×%g: ω̃(%g) = %g, ω̃' = %g, z = %g",
                  spec, gs[gi], v, value, d, z);
            double s1, sigma, s2;
            atf_penalty_factors(&pen, v, &s1, &sigma, &s2);
            CHECK(!isnan(s1) && !isnan(sigma) && !isnan(s2), "%s ×%g: factors of %g: %g %g %g",
                  spec, gs[gi], v, s1, sigma, s2);
            for (size_t ti = 0; ti < sizeof ts / sizeof ts[0]; ti++) {
                double p = atf_penalty_prox(&pen, v, ts[ti], NULL);
                CHECK(p >= 0.0 && p <= v, "%s ×%g: prox_%g(%g) = %g", spec, gs[gi], ts[ti], v, p);
            }
        }
    }
}

static void check_scaling_identity(const char *spec)
{
    static const int ks[] = {-400, -60, 60, 400};
    static const double vs[] = {0.03, 0.7, 2.0, 40.0};
    atf_penalty base = parse_or_die(spec);
    for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
        double c = ldexp(1.0, ks[ki]);
        /* base is the problem's penalty, inner the one of the variable scaled by 1/c */
        atf_penalty inner = scaled_penalty(spec, ldexp(1.0, -2 * ks[ki]));
        for (size_t vi = 0; vi < sizeof vs / sizeof vs[0]; vi++) {
            double v = vs[vi];
            double lhs = atf_penalty_value(&base, c * v, NULL);
            double rhs = ldexp(atf_penalty_value(&inner, v, NULL), 2 * ks[ki]);
            if (isfinite(lhs) && isfinite(rhs) && lhs > DBL_MIN)
                CHECK(rel_diff(lhs, rhs) < 1e-9, "%s, c = 2^%d: ω̃(cv) = %.15g, c²ω̃_{γ/c²}(v) = %.15g",
                      spec, ks[ki], lhs, rhs);
            double pl = atf_penalty_prox(&base, c * v, 0.8, NULL);
            double pr = c * atf_penalty_prox(&inner, v, 0.8, NULL);
            CHECK(rel_diff(pl, pr) < 1e-9 || fabs(pl - pr) < 1e-12 * c * v,
                  "%s, c = 2^%d, v = %g: prox %.15g vs %.15g", spec, ks[ki], v, pl, pr);
        }
    }
}

static void check_regressions(void)
{
    atf_penalty zsq = parse_or_die("zsq:scale=1e-300");
    CHECK(rel_diff(atf_penalty_value(&zsq, 1e300, NULL), 2e150) < 1e-12,
          "zsq:scale=1e-300 at 1e300: %g", atf_penalty_value(&zsq, 1e300, NULL));
    atf_penalty abs_tail = parse_or_die("abs:scale=1.2e-271");
    double p = atf_penalty_prox(&abs_tail, 1e14, 1e197, NULL);
    CHECK(p > 0.9e14, "abs:scale=1.2e-271: prox_1e197(1e14) = %g, expected about 0.99e14", p);
}

int main(void)
{
    for (size_t i = 0; i < N_PEN_SPECS; i++) {
        check_no_nan(PEN_SPECS[i]);
        check_scaling_identity(PEN_SPECS[i]);
    }
    check_no_nan("nuclear");
    check_no_nan("nuclear:scale=4");
    check_regressions();
    return atf_test_finish("test_extremes");
}
