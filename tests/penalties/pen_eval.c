/* pen_eval.c — helper for test_scipy.py: reads lines "SPEC V T" from stdin and prints
 * "value z prox s1 sigma s2 joint_at_z" with %.17g, or "error MESSAGE" for a bad spec. */
#include "atf_penalty.h"

#include <stdio.h>
#include <string.h>

int main(void)
{
    char line[512];
    while (fgets(line, sizeof line, stdin)) {
        char spec[256];
        double v, t;
        if (sscanf(line, "%255s %lf %lf", spec, &v, &t) != 3)
            continue;
        atf_penalty pen;
        char err[ATF_ERRLEN];
        if (atf_penalty_parse(spec, &pen, err) != ATF_OK) {
            printf("error %s\n", err);
            continue;
        }
        double z, s1, sigma, s2;
        const double value = atf_penalty_value(&pen, v, &z);
        const double prox = atf_penalty_prox(&pen, v, t, NULL);
        atf_penalty_factors(&pen, v, &s1, &sigma, &s2);
        const double joint = atf_penalty_joint(&pen, z, NULL, NULL);
        printf("%.17g %.17g %.17g %.17g %.17g %.17g %.17g\n", value, z, prox, s1, sigma, s2, joint);
    }
    return 0;
}
