/* pen_test.h — what the penalty tests share beyond tests/atf_test.h: parse_or_die and the list
 * of penalties every property is checked on. Header-only so each test stays one executable. */
#ifndef PEN_TEST_H
#define PEN_TEST_H

#include "atf_penalty.h"
#include "atf_test.h"

#include <stdio.h>
#include <stdlib.h>

/* A spec the test itself wrote must parse: anything else is a broken test, not a failure. */
static inline atf_penalty parse_or_die(const char *spec)
{
    atf_penalty pen;
    char err[ATF_ERRLEN];
    if (atf_penalty_parse(spec, &pen, err) != ATF_OK) {
        fprintf(stderr, "cannot parse %s: %s\n", spec, err);
        exit(1);
    }
    return pen;
}

/* Every family, several scales, and joints (nuclear excluded: it is outside the ω class). */
static const char *const PEN_SPECS[] = {
    "fixed", "sq", "sq:scale=0.01", "sq:scale=100", "abs", "abs:scale=0.1", "abs:scale=10",
    "pow:p=0.5", "pow:p=0.5,scale=3", "pow:p=1.5", "pow:p=2.5,scale=0.2", "pow:p=3", "zsq",
    "zsq:scale=0.05", "zsq:scale=20", "logsq", "logsq:scale=0.1", "logsq:scale=10",
    "sq+sq", "sq+abs", "abs+abs:scale=3", "fixed+abs", "fixed+sq:scale=4", "logsq+zsq",
    "pow:p=4+pow:p=4", "zsq:scale=0.3+sq", "pow:p=1.5+logsq:scale=2", "pow:p=0.5+sq",
    "balanced", "balanced:scale=0.05", "balanced:scale=20", "balanced+balanced",
    "balanced:scale=3+balanced:scale=3", "balanced+sq", "pow:p=0.5+balanced",
    "pow:p=0.5+pow:p=0.5",
};
#define N_PEN_SPECS (sizeof PEN_SPECS / sizeof PEN_SPECS[0])

#endif
