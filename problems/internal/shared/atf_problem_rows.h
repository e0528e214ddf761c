/* atf_problem_rows.h — a problem file written in pieces: the rows of its factored blocks arrive
 * slice by slice (from the processes of `mpirun -np K atf features`, docs/record/solver.md §19
 * "Tangent features over processes") and go to the file as HDF5 hyperslabs, so that the writer
 * never holds a whole H or D. Internal: problems/ and atf's own programs (drivers/cli). */
#ifndef ATF_PROBLEM_ROWS_H
#define ATF_PROBLEM_ROWS_H

#include <stdint.h>

#include "atf_problem.h"

/* Where the rows of the array being written go (atf_problem_write_rows hands it to the
 * source). */
typedef struct atf_rows_out atf_rows_out;

/* The next n rows of the array, row-major (n × width doubles, width as the source was told):
 * checked finite (ATF_E_INPUT names the value's index in the whole array), hashed for the
 * fingerprint and written by hyperslab. More rows than the array has is ATF_E_USAGE. Once the
 * writing has failed (a value, or the file itself: a full disk, ...) every call returns that
 * error at once (ATF_E_IO for the file, whose message the writer gives at the end): the source
 * should then stop and return it. */
atf_error atf_rows_put(atf_rows_out *out, const double *rows, int64_t n);

typedef struct {
    /* Put all `nrows` rows (of `width` values) of the array `array` ("H" or "D") of block
     * number `block` (0-based, in index order) of the training split (test = 0) or of the test
     * split (test = 1) through atf_rows_put, in order, in slices of any size. Called once per
     * array, in the order of the file and of the fingerprint: the training blocks in order, H
     * then D of each, then the test split's. A nonzero return ends the writing: either an
     * error atf_rows_put returned, or the source's own, with its message in err. */
    atf_error (*rows)(void *ctx, int test, int block, const char *array, int64_t nrows,
                      int64_t width, atf_rows_out *out, char *err);
    void *ctx;
} atf_rows_source;

/* Write `head` to `path` as atf_problem_write writes a whole problem — atomically, the same
 * items and values, the fingerprint of the whole content — except that the rows of every H and
 * D come from `src`. head holds everything else whole: N, C, M, r, y, f0, labels, provenance,
 * its blocks (name, index, rows, cols, penalty, structure; all factored; their N, C, M, H and
 * D are not read: the split's sizes count) and head->test the same for the test split
 * (r, y and f0 required). head is checked first as atf_problem_validate checks a problem
 * (ATF_E_INPUT, nothing written); a failure of the source or of a row (ATF_E_INPUT for a
 * non-finite value) leaves no file, as does a failed write (ATF_E_IO). fingerprint (may be
 * NULL) receives the fingerprint written, ATF_FINGERPRINT_LEN bytes ("" on failure). */
atf_error atf_problem_write_rows(const char *path, const atf_problem *head,
                                 const atf_rows_source *src, char *fingerprint, char *err);

#endif
