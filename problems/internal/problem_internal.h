/* problem_internal.h — checks shared by the problem reader and atf_problem_validate
 * (private to problems/). `what` names the file or object in messages; `path` is the HDF5 path
 * of the item (e.g. "/blocks/W1/J_indptr"). */
#ifndef ATF_PROBLEM_INTERNAL_H
#define ATF_PROBLEM_INTERNAL_H

#include <stdint.h>

#include "atf_problem.h"

/* First non-finite value of x (rank ≤ 4, row-major) → ATF_E_INPUT naming its index. */
atf_error atfp_check_finite(const char *what, const char *path, int rank, const int64_t *dims,
                            const double *x, char *err);

/* CSR structure of an M × n matrix: indptr has M+1 entries, starts at 0, never decreases and
 * ends at nnz; every column index lies in [0, n). `path` is the block's group. */
atf_error atfp_check_csr(const char *what, const char *path, int M, int64_t n, int64_t nnz,
                         const int64_t *indptr, const int64_t *indices, char *err);

/* A block name usable as an HDF5 link name: non-empty, shorter than ATF_NAMELEN, no '/',
 * not "." (the reader also gets names from the file, so this guards both directions). */
atf_error atfp_check_name(const char *what, const char *name, char *err);

/* Sizes of a block: rows, cols > 0 and rows·cols within the 32-bit BLAS limit. */
atf_error atfp_check_block_size(const char *what, const char *path, int64_t rows, int64_t cols,
                                char *err);

/* Parse a penalty spec for a block, passing on the parser's reason. */
atf_error atfp_parse_penalty(const char *what, const char *path, const char *spec,
                             atf_penalty *pen, char *err);

/* "matrix"/"diagonal" and "dense"/"sparse"/"factored". */
const char *atfp_structure_name(atf_structure s);
const char *atfp_operator_name(atf_operator_kind k);
int atfp_structure_parse(const char *s, atf_structure *out);
int atfp_operator_parse(const char *s, atf_operator_kind *out);

#endif
