/* result_internal.h — helpers shared by result.c and result_io.c (private to problems/). */
#ifndef ATF_RESULT_INTERNAL_H
#define ATF_RESULT_INTERNAL_H

#include <stdint.h>

#include "atf_result.h"

/* "spectral", "entrywise", "vector" (the file attribute `factors`). */
const char *atfr_layout_name(atf_factor_layout l);
int atfr_layout_parse(const char *s, atf_factor_layout *out);

/* Length k of d, s1, σ, s2 for a layout and block shape. */
int64_t atfr_layout_k(atf_factor_layout l, int rows, int cols);

/* A result with nblocks zeroed blocks, metrics NaN, method ADMM, structure LAYER. NULL on NOMEM. */
atf_result *atfr_new(int nblocks);

#endif
