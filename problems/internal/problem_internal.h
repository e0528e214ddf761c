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

/* ---- shards (atf_problem_read_shard) ---- */

/* ATF_OK for a problem that holds every example; for a shard ATF_E_USAGE with
 * "WHAT: a shard of examples a … b; NEEDS needs the whole problem". */
atf_error atfp_refuse_shard(const atf_problem *prob, const char *what, const char *needs,
                            char *err);

/* The fingerprint's hashing order (fingerprint.c; docs/formats.md "Provenance") over a
 * problem whose dense and factored arrays may not be in memory: `rows` then hashes, in their
 * row-major order, all the values of the array `array` ("J", "H" or "D") of block b of `split`
 * (prob, test = 0, or prob->test, test = 1): split->N or split->M rows, whatever b holds. A
 * source's error ends the hash (its message is the source's to write). */
typedef struct {
    atf_error (*rows)(void *ctx, atf_hasher *h, const atf_problem *split, int test,
                      const atf_block *b, const char *array);
    void *ctx;
} atfp_fp_source;

/* The fingerprint of prob into out[ATF_FINGERPRINT_LEN] ("" on failure): the arrays in memory
 * when src is NULL (atf_problem_fingerprint), else the dense and factored ones from src.
 * ATF_E_NOMEM when the hasher cannot be made (src is then never called), else src's error. */
atf_error atfp_fingerprint(const atf_problem *prob, const atfp_fp_source *src, char *out);

#endif
