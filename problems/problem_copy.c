/* problem_copy.c — a problem file made of some examples of another, copied slice by slice
 * (atf_problem_copy_examples, atf_problem.h). `mpirun -np K atf path --validation-fraction`
 * writes its fitted problem (DIR/fit.h5) so: no rank holds the whole H or D of the fitted
 * examples, and rank 0 streams their rows from the problem file instead.
 *
 * The copy is the problem atf_problem_select_examples gives (with the file's test split whole),
 * described in memory without its rows; each factored array's rows come from the source file
 * in slices: the file rows that cover a slice of the chosen examples (at most SLICE_EXAMPLES of
 * them, at most SLICE_BYTES read), read as one HDF5 hyperslab and picked in memory. The slices go
 * to atf_problem_write_rows (atf_problem_rows.h: checked, hashed and written by hyperslab, the
 * items and the fingerprint of atf_problem_write) or, for the fingerprint alone, through the
 * fingerprint's own order (atfp_fingerprint). */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "atf_problem.h"
#include "atf_problem_rows.h"
#include "atf_shard.h"
#include "h5io.h"
#include "problem_internal.h"

#ifndef SLICE_EXAMPLES
#define SLICE_EXAMPLES 512
#endif
#ifndef SLICE_BYTES
#define SLICE_BYTES ((int64_t)64 << 20)
#endif

typedef struct {
    const atf_problem *copy; /* what is written: sizes, r, y, f0, labels, blocks; no rows */
    const int *idx;          /* the chosen training examples (rows of the source) */
    int nsrc;                /* the source's training examples */
    const h5io_reader *rd;   /* the source, open (inside h5io_read_file_opt) */
    int failed;              /* the reading failed (its message is written) */
} copy_job;

/* Where a slice of rows goes: the file being written, or the hash. */
typedef atf_error (*rows_sink)(void *ctx, const double *rows, int64_t n);

/* Example j of the split's copy: its example in the source. */
static int source_example(const copy_job *job, int test, int j)
{
    return test ? j : job->idx[j];
}

/* All rows of the array `array` ("H": one row per example, "D": C rows) of block b of the
 * copy's training (test = 0) or test split, in the copy's order, slice by slice to sink. The
 * source's messages name the source ("FILE: /blocks/W1/H: ..."), into err. */
static atf_error stream_array(copy_job *job, int test, const atf_block *b, const char *array,
                              rows_sink sink, void *sctx, char *err)
{
    const h5io_reader *rd = job->rd;
    const atf_problem *split = test ? job->copy->test : job->copy;
    static const char *const H_DIMS[2] = {"samples", "rows"};
    static const char *const D_DIMS[2] = {"samples·outputs", "cols"};
    int is_h = !strcmp(array, "H");
    int64_t per = is_h ? 1 : split->C, width = is_h ? b->rows : b->cols;
    int n = split->N, nsrc = test ? split->N : job->nsrc;
    int64_t dims[2] = {(int64_t)nsrc * per, width};
    char path[H5IO_PATHLEN];
    h5io_path(path, "%s/blocks/%s/%s", test ? "/test" : "", b->name, array);
    atf_error e = h5io_check_shape(rd->f, rd->fname, path, 2, dims, is_h ? H_DIMS : D_DIMS, err);
    /* a slice reads at most max_span source examples: SLICE_BYTES, yet at least one */
    int64_t max_span = SLICE_BYTES / (int64_t)sizeof(double) / (per * width);
    max_span = max_span < 1 ? 1 : max_span > nsrc ? nsrc : max_span;
    size_t row_bytes = (size_t)(per * width) * sizeof(double);
    double *cover = NULL, *out = NULL;
    if (!e && (!(cover = malloc((size_t)max_span * row_bytes)) ||
               !(out = malloc((size_t)max_span * row_bytes)))) {
        atf_errorf(err, "%s: %s: out of memory for a slice of %lld examples", rd->fname, path,
                   (long long)max_span);
        e = ATF_E_NOMEM;
    }
    for (int j0 = 0; !e && j0 < n;) {
        int lo = source_example(job, test, j0), hi = lo, j1 = j0 + 1;
        while (j1 < n && j1 - j0 < SLICE_EXAMPLES) { /* grow the slice while its cover fits */
            int x = source_example(job, test, j1);
            int nlo = x < lo ? x : lo, nhi = x > hi ? x : hi;
            if ((int64_t)nhi - nlo + 1 > max_span)
                break;
            lo = nlo, hi = nhi, j1++;
        }
        e = h5io_read_rows(rd->f, rd->fname, path, dims, lo * per, (hi - lo + 1) * per, cover,
                           err);
        for (int j = j0; !e && j < j1; j++)
            memcpy((char *)out + (size_t)(j - j0) * row_bytes,
                   (char *)cover + (size_t)(source_example(job, test, j) - lo) * row_bytes,
                   row_bytes);
        if (!e)
            e = sink(sctx, out, (j1 - j0) * per);
        j0 = j1;
    }
    job->failed |= e != ATF_OK; /* its message is written (the writer's own, for its sink) */
    free(cover);
    free(out);
    return e;
}

/* ---- the file: atf_problem_write_rows's source ---- */

static atf_error put_sink(void *ctx, const double *rows, int64_t n)
{
    return atf_rows_put(ctx, rows, n);
}

static atf_error rows_to_file(void *ctx, int test, int block, const char *array, int64_t nrows,
                              int64_t width, atf_rows_out *out, char *err)
{
    copy_job *job = ctx;
    (void)nrows;
    (void)width; /* the copy's shapes, which stream_array derives alike */
    const atf_problem *split = test ? job->copy->test : job->copy;
    return stream_array(job, test, &split->blocks[block], array, put_sink, out, err);
}

/* ---- the fingerprint alone: atfp_fingerprint's source ---- */

typedef struct {
    atf_hasher *h;
    int64_t width;
} hash_sink_ctx;

static atf_error hash_sink(void *ctx, const double *rows, int64_t n)
{
    hash_sink_ctx *hs = ctx;
    atf_hasher_doubles(hs->h, rows, n * hs->width);
    return ATF_OK;
}

static atf_error rows_to_hash(void *ctx, atf_hasher *h, const atf_problem *split, int test,
                              const atf_block *b, const char *array)
{
    copy_job *job = ctx;
    (void)split; /* the copy's, as stream_array finds it */
    hash_sink_ctx hs = {h, !strcmp(array, "H") ? b->rows : b->cols};
    return stream_array(job, test, b, array, hash_sink, &hs, job->rd->err);
}

/* ---- the copy ---- */

typedef struct {
    copy_job job;
    const char *path;
    char *fingerprint;
} copy_run;

static atf_error copy_in_source(const h5io_reader *rd, void *ctx)
{
    copy_run *run = ctx;
    run->job.rd = rd;
    if (run->path) {
        atf_rows_source src = {rows_to_file, &run->job};
        return atf_problem_write_rows(run->path, run->job.copy, &src, run->fingerprint, rd->err);
    }
    atfp_fp_source fs = {rows_to_hash, &run->job};
    atf_error e = atfp_fingerprint(run->job.copy, &fs, run->fingerprint);
    if (e && !run->job.failed)
        atf_errorf(rd->err, "%s: out of memory for the fingerprint of a copy", rd->fname);
    return e;
}

/* The values of the examples idx[0 … n−1], `per` of them per example. */
/* The copy without its rows: what atf_problem_select_examples gives, but blocks without
 * arrays (N, C, M the copy's), and the source's test split as read in test (its rows released:
 * the test split is copied whole from the file). */
static atf_error describe_copy(const atf_problem *head, const int *idx, int n, atf_problem *test,
                               atf_problem **out, char *err)
{
    int C = head->C;
    atf_problem *p = atf_problem_new(n, C, head->nblocks);
    int bad = !p || atf_problem_pick_example_arrays(head, p, idx, n) != 0;
    if (bad) {
        atf_problem_free(p);
        atf_errorf(err, "copy examples: out of memory for %d of %d examples", n, head->N);
        return ATF_E_NOMEM;
    }
    for (int l = 0; l < head->nblocks; l++) {
        atf_block *b = &p->blocks[l];
        *b = head->blocks[l]; /* name, index, shape, penalty, structure, kind */
        b->N = n;
        b->C = C;
        b->M = n * C;
        b->J = b->data = b->H = b->D = NULL;
        b->indptr = b->indices = NULL;
        b->nnz = 0;
    }
    p->prov = head->prov;
    if (test) {
        for (int l = 0; l < test->nblocks; l++) {
            atf_block_free_arrays(&test->blocks[l]);
            test->blocks[l].N = test->N;
            test->blocks[l].M = test->M;
        }
        test->shard_first = test->shard_count = 0;
        p->test = test;
    }
    *out = p;
    return ATF_OK;
}

static atf_error check_copy(const atf_problem *head, const char *source, const int *idx, int n,
                            char *err)
{
    if (!head || !source || !head->r || head->N <= 0 || head->nblocks <= 0) {
        atf_errorf(err, "copy examples: no problem (NULL or without examples)");
        return ATF_E_USAGE;
    }
    if (n < 1 || !idx || (int64_t)n * head->C > INT_MAX) {
        atf_errorf(err, "%s: copy of %d examples of %d outputs: need 1 to %d examples", source, n,
                   head->C, INT_MAX / head->C);
        return ATF_E_USAGE;
    }
    for (int j = 0; j < n; j++)
        if (idx[j] < 0 || idx[j] >= head->N) {
            atf_errorf(err, "%s: copy of examples: index %d (entry %d) is outside [0, %d)",
                       source, idx[j], j, head->N);
            return ATF_E_USAGE;
        }
    for (int l = 0; l < head->nblocks; l++)
        if (head->blocks[l].kind != ATF_OP_FACTORED) {
            atf_errorf(err, "%s: block '%s' is %s; only factored blocks are copied slice by "
                       "slice", source, head->blocks[l].name,
                       atfp_operator_name(head->blocks[l].kind));
            return ATF_E_INPUT;
        }
    return ATF_OK;
}

atf_error atf_problem_copy_examples(const atf_problem *head, const char *source, const int *idx,
                                    int n, const char *path, char *fingerprint, char *err)
{
    char fp[ATF_FINGERPRINT_LEN] = "";
    if (fingerprint)
        fingerprint[0] = '\0';
    atf_error e = check_copy(head, source, idx, n, err);
    atf_problem *test = NULL, *copy = NULL;
    if (!e) /* the test split's y, f0, labels and blocks (one example's rows, released) */
        e = atf_problem_read_test_shard(source, 0, 1, 0, &test, err);
    if (!e)
        e = describe_copy(head, idx, n, test, &copy, err);
    else
        atf_problem_free(test);
    if (e)
        return e;
    copy_run run = {{copy, idx, head->N, NULL, 0}, path, fp};
    e = h5io_read_file_opt(source, 0, copy_in_source, &run, err);
    if (!e && fingerprint)
        memcpy(fingerprint, fp, sizeof fp);
    atf_problem_free(copy); /* with the test split */
    return e;
}
