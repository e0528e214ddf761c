/* problem_fixtures.h — problems built in code for the tests of problems/ (test_roundtrip.c,
 * test_problem_shard.c): a block's name, index, shape, kind and penalty, operator arrays of its
 * kind drawn from the test generator, and a bitwise comparison of two arrays. */
#ifndef ATF_PROBLEM_FIXTURES_H
#define ATF_PROBLEM_FIXTURES_H

#include <stddef.h>

#include "atf_problem.h"
#include "atf_test.h"

/* Name, index, shape, kind and (unless NULL) penalty spec of b; a spec that does not parse
 * ends the test (abort, with the parser's message: CHECK's tally is per file). */
void set_block(atf_block *b, const char *name, int index, int rows, int cols,
                       atf_operator_kind kind, const char *penalty);
/* Operator arrays of the block's kind for its N, C, M (sparse: 0, 1 or 2 entries per row). */
void fill_operator(atf_test_rng *rng, atf_block *b);
/* The same bytes (two NULLs count as the same; NULL and an array do not). */
int same_bits(const void *a, const void *b, size_t bytes);

#endif
