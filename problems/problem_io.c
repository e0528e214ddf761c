/* problem_io.c — problem files (docs/formats.md): strict reader and atomic writer.
 *
 * The reader checks every item as it reads it, so that a message names the first thing that
 * is wrong: FILE: ITEM: reason. Shapes are checked against the root and block attributes before
 * any data is read; values are checked for finiteness as they are read; CSR structure and
 * penalty strings are checked by the same helpers atf_problem_validate uses.
 *
 * atf_problem_read_shard reads the same items with the same checks, but of each factored
 * block only the rows of its examples (hyperslabs), and the test split not at all, unless the
 * fingerprint is asked for: then the dense and factored arrays of both splits are streamed
 * through the hash in slices of rows (stream_rows).
 *
 * atf_problem_write_rows writes a problem whose factored rows arrive in pieces from a source
 * (the processes of `mpirun -np K atf features`): the same items as atf_problem_write, the rows
 * written by hyperslab and hashed as they come, the fingerprint written last. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "atf_problem.h"
#include "atf_problem_rows.h"
#include "atf_version.h"
#include "h5io.h"
#include "problem_internal.h"

#define PROBLEM_FORMAT "atf-problem"
#define PROBLEM_VERSION 1

/* What each axis of an operator's arrays is, for shape messages. */
static const char *const H_DIMS[2] = {"samples", "rows"};
static const char *const D_DIMS[2] = {"samples·outputs", "cols"};
static const char *const J_DIMS[2] = {"samples·outputs", "rows·cols"};

/* How much of the operators' data a read takes. */
typedef enum {
    TAKE_ALL,    /* atf_problem_read: every array whole */
    TAKE_SHARD,  /* factored blocks only, the rows of examples first … first + count − 1 */
    TAKE_SHAPES  /* dense and factored arrays: shapes checked, data left in the file (a shard's
                    test split, whose data only the fingerprint streams); CSR arrays whole */
} take_kind;

typedef struct {
    take_kind kind;
    int first, count; /* TAKE_SHARD */
} take;

static const take TAKE_EVERYTHING = {TAKE_ALL, 0, 0};
static const take TAKE_NO_DATA = {TAKE_SHAPES, 0, 0};

/* ------------------------------------------------------------------ reading: pieces */

/* Optional [N, C] array such as /y or /f0; absent leaves *out NULL. */
static atf_error read_per_example(const h5io_reader *rd, const char *path, int N, int C,
                                  int required, double **out)
{
    *out = NULL;
    if (!required && !h5io_exists(rd->f, path))
        return ATF_OK;
    int64_t dims[2] = {N, C};
    static const char *const names[2] = {"samples", "outputs"};
    return h5io_read_checked(rd->f, rd->fname, path, 2, dims, names, out, rd->err);
}

static atf_error read_labels(const h5io_reader *rd, const char *path, int N, int **out)
{
    *out = NULL;
    if (!h5io_exists(rd->f, path))
        return ATF_OK;
    int64_t dims[1];
    atf_error e = h5io_shape(rd->f, rd->fname, path, 1, dims, rd->err);
    if (!e)
        e = h5io_expect_dim(rd->fname, path, 1, dims, 0, N, "samples", rd->err);
    return e ? e : h5io_read_ints(rd->f, rd->fname, path, N, out, rd->err);
}

static atf_error read_dense(const h5io_reader *rd, const char *gpath, atf_block *b,
                           const take *tk)
{
    char path[H5IO_PATHLEN];
    h5io_path(path, "%s/J", gpath);
    int64_t dims[2] = {b->M, (int64_t)b->rows * b->cols};
    if (tk->kind == TAKE_SHAPES)
        return h5io_check_shape(rd->f, rd->fname, path, 2, dims, J_DIMS, rd->err);
    return h5io_read_checked(rd->f, rd->fname, path, 2, dims, J_DIMS, &b->J, rd->err);
}

/* Rows row0 … row0 + n − 1 of the [*, dims[1]] array `path` into a fresh *out. */
static atf_error read_some_rows(const h5io_reader *rd, const char *path, const int64_t *dims,
                                int64_t row0, int64_t n, double **out)
{
    *out = NULL;
    if (n > (int64_t)(SIZE_MAX / sizeof(double)) / dims[1] ||
        !(*out = malloc((size_t)(n * dims[1]) * sizeof **out))) {
        atf_errorf(rd->err, "%s: %s: out of memory for %lld rows", rd->fname, path,
                   (long long)n);
        return ATF_E_NOMEM;
    }
    return h5io_read_rows(rd->f, rd->fname, path, dims, row0, n, *out, rd->err);
}

/* H [N, rows] and D [M, cols]; a shard keeps the rows of its examples, h_i for i = first …
 * first + count − 1 and δ_m for m = first·C … (first + count)·C − 1, and the block then has
 * N = count examples. */
static atf_error read_factored(const h5io_reader *rd, const char *gpath, atf_block *b,
                               const take *tk)
{
    char ph[H5IO_PATHLEN], pd[H5IO_PATHLEN];
    h5io_path(ph, "%s/H", gpath);
    h5io_path(pd, "%s/D", gpath);
    int64_t hd[2] = {b->N, b->rows}, dd[2] = {b->M, b->cols};
    atf_error e;
    switch (tk->kind) {
    case TAKE_ALL:
        if ((e = h5io_read_checked(rd->f, rd->fname, ph, 2, hd, H_DIMS, &b->H, rd->err)))
            return e;
        return h5io_read_checked(rd->f, rd->fname, pd, 2, dd, D_DIMS, &b->D, rd->err);
    case TAKE_SHAPES:
        if ((e = h5io_check_shape(rd->f, rd->fname, ph, 2, hd, H_DIMS, rd->err)))
            return e;
        return h5io_check_shape(rd->f, rd->fname, pd, 2, dd, D_DIMS, rd->err);
    case TAKE_SHARD: break;
    }
    int64_t C = b->C;
    if ((e = h5io_check_shape(rd->f, rd->fname, ph, 2, hd, H_DIMS, rd->err)) ||
        (e = read_some_rows(rd, ph, hd, tk->first, tk->count, &b->H)) ||
        (e = h5io_check_shape(rd->f, rd->fname, pd, 2, dd, D_DIMS, rd->err)) ||
        (e = read_some_rows(rd, pd, dd, tk->first * C, tk->count * C, &b->D)))
        return e;
    b->N = tk->count;
    b->M = tk->count * b->C;
    return ATF_OK;
}

static atf_error read_sparse(const h5io_reader *rd, const char *gpath, atf_block *b)
{
    char pp[H5IO_PATHLEN], pi[H5IO_PATHLEN], pd[H5IO_PATHLEN];
    h5io_path(pp, "%s/J_indptr", gpath);
    h5io_path(pi, "%s/J_indices", gpath);
    h5io_path(pd, "%s/J_data", gpath);
    int64_t dp[1], di[1], dd[1];
    atf_error e = h5io_shape(rd->f, rd->fname, pp, 1, dp, rd->err);
    if (!e)
        e = h5io_expect_dim(rd->fname, pp, 1, dp, 0, (int64_t)b->M + 1, "samples·outputs + 1",
                            rd->err);
    if (!e)
        e = h5io_shape(rd->f, rd->fname, pi, 1, di, rd->err);
    if (!e)
        e = h5io_shape(rd->f, rd->fname, pd, 1, dd, rd->err);
    if (!e)
        e = h5io_expect_dim(rd->fname, pd, 1, dd, 0, di[0], "the length of J_indices", rd->err);
    if (e)
        return e;
    b->nnz = di[0];
    if ((e = h5io_read_int64s(rd->f, rd->fname, pp, dp[0], &b->indptr, rd->err)) ||
        (e = h5io_read_int64s(rd->f, rd->fname, pi, di[0], &b->indices, rd->err)) ||
        (e = h5io_read_doubles(rd->f, rd->fname, pd, 1, dd, &b->data, rd->err)))
        return e;
    return atfp_check_csr(rd->fname, gpath, b->M, (int64_t)b->rows * b->cols, b->nnz, b->indptr,
                          b->indices, rd->err);
}

/* rows, cols, operator and the operator's datasets of the group gpath (as much of them as tk
 * takes); b->N/C/M are set. */
static atf_error read_operator(const h5io_reader *rd, const char *gpath, atf_block *b,
                               const take *tk)
{
    atf_error e = h5io_require_group(rd->f, rd->fname, gpath, rd->err);
    if (!e)
        e = h5io_attr_size(rd->f, rd->fname, gpath, "rows", &b->rows, rd->err);
    if (!e)
        e = h5io_attr_size(rd->f, rd->fname, gpath, "cols", &b->cols, rd->err);
    if (!e)
        e = atfp_check_block_size(rd->fname, gpath, b->rows, b->cols, rd->err);
    char op[32];
    if (!e)
        e = h5io_attr_string(rd->f, rd->fname, gpath, "operator", op, sizeof op, rd->err);
    if (e)
        return e;
    if (atfp_operator_parse(op, &b->kind) != 0) {
        atf_errorf(rd->err, "%s: %s attribute 'operator': unknown operator '%s' (expected dense, "
                   "sparse or factored)", rd->fname, gpath, op);
        return ATF_E_INPUT;
    }
    if (tk->kind == TAKE_SHARD && b->kind != ATF_OP_FACTORED) {
        atf_errorf(rd->err, "%s: block '%s' is %s; only factored blocks can be read as a shard",
                   rd->fname, b->name, op);
        return ATF_E_INPUT;
    }
    switch (b->kind) {
    case ATF_OP_DENSE: return read_dense(rd, gpath, b, tk);
    case ATF_OP_SPARSE: return read_sparse(rd, gpath, b);
    case ATF_OP_FACTORED: return read_factored(rd, gpath, b, tk);
    }
    return ATF_E_INPUT;
}

static atf_error read_training_block(const h5io_reader *rd, const atf_problem *p, atf_block *b,
                                     const take *tk)
{
    char gpath[H5IO_PATHLEN];
    h5io_path(gpath, "/blocks/%s", b->name);
    b->N = p->N;
    b->C = p->C;
    b->M = p->M;
    int64_t index;
    atf_error e = h5io_require_group(rd->f, rd->fname, gpath, rd->err);
    if (!e)
        e = h5io_attr_int(rd->f, rd->fname, gpath, "index", &index, rd->err);
    if (e)
        return e;
    if (index < INT_MIN || index > INT_MAX) {
        atf_errorf(rd->err, "%s: %s attribute 'index': %lld does not fit a 32-bit integer",
                   rd->fname, gpath, (long long)index);
        return ATF_E_INPUT;
    }
    b->index = (int)index;
    char structure[32];
    if ((e = h5io_attr_string_or(rd->f, rd->fname, gpath, "penalty", "sq", b->penalty_spec,
                                 sizeof b->penalty_spec, rd->err)) ||
        (e = atfp_parse_penalty(rd->fname, gpath, b->penalty_spec, &b->penalty, rd->err)) ||
        (e = h5io_attr_string_or(rd->f, rd->fname, gpath, "structure", "matrix", structure,
                                 sizeof structure, rd->err)))
        return e;
    if (atfp_structure_parse(structure, &b->structure) != 0) {
        atf_errorf(rd->err, "%s: %s attribute 'structure': unknown structure '%s' (expected "
                   "matrix or diagonal)", rd->fname, gpath, structure);
        return ATF_E_INPUT;
    }
    return read_operator(rd, gpath, b, tk);
}

/* Names of the members of a blocks group, allocated as blocks with only the name set. */
static atf_error list_blocks(const h5io_reader *rd, const char *gpath, atf_block **out, int *count)
{
    *out = NULL;
    *count = 0;
    atf_error e = h5io_require_group(rd->f, rd->fname, gpath, rd->err);
    if (e)
        return e;
    hid_t g = H5Gopen2(rd->f, gpath, H5P_DEFAULT);
    H5G_info_t info;
    if (g < 0 || H5Gget_info(g, &info) < 0) {
        if (g >= 0)
            H5Gclose(g);
        atf_errorf(rd->err, "%s: %s: cannot list its members (corrupt file)", rd->fname, gpath);
        return ATF_E_INPUT;
    }
    if (info.nlinks == 0 || info.nlinks > INT_MAX) {
        H5Gclose(g);
        atf_errorf(rd->err, "%s: %s: %s", rd->fname, gpath,
                   info.nlinks ? "too many blocks" : "no blocks");
        return ATF_E_INPUT;
    }
    atf_block *blocks = calloc(info.nlinks, sizeof *blocks);
    if (!blocks) {
        H5Gclose(g);
        atf_errorf(rd->err, "%s: %s: out of memory", rd->fname, gpath);
        return ATF_E_NOMEM;
    }
    for (hsize_t i = 0; i < info.nlinks && !e; i++) {
        char name[H5IO_PATHLEN];
        ssize_t n = H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof name,
                                       H5P_DEFAULT);
        if (n < 0) {
            atf_errorf(rd->err, "%s: %s: cannot read member %llu (corrupt file)", rd->fname,
                       gpath, (unsigned long long)i);
            e = ATF_E_INPUT;
        } else if (n >= ATF_NAMELEN) {
            atf_errorf(rd->err, "%s: %s/%s: block name longer than %d characters", rd->fname,
                       gpath, name, ATF_NAMELEN - 1);
            e = ATF_E_INPUT;
        } else {
            memcpy(blocks[i].name, name, (size_t)n + 1);
        }
    }
    H5Gclose(g);
    *out = blocks;
    *count = (int)info.nlinks;
    return e;
}

static int by_index(const void *a, const void *b)
{
    int ia = ((const atf_block *)a)->index, ib = ((const atf_block *)b)->index;
    return (ia > ib) - (ia < ib);
}

static atf_error read_training_blocks(const h5io_reader *rd, atf_problem *p, const take *tk)
{
    atf_error e = list_blocks(rd, "/blocks", &p->blocks, &p->nblocks);
    for (int l = 0; l < p->nblocks && !e; l++)
        e = read_training_block(rd, p, &p->blocks[l], tk);
    if (e)
        return e;
    qsort(p->blocks, (size_t)p->nblocks, sizeof *p->blocks, by_index);
    for (int l = 1; l < p->nblocks; l++) {
        if (p->blocks[l].index == p->blocks[l - 1].index) {
            atf_errorf(rd->err, "%s: /blocks/%s attribute 'index': %d is also the index of "
                       "block %s", rd->fname, p->blocks[l].name, p->blocks[l].index,
                       p->blocks[l - 1].name);
            return ATF_E_INPUT;
        }
    }
    return ATF_OK;
}

/* ------------------------------------------------------------------ reading: test split */

static atf_error read_test_blocks(const h5io_reader *rd, const atf_problem *p, atf_problem *t,
                                  const take *tk)
{
    int count;
    atf_error e = list_blocks(rd, "/test/blocks", &t->blocks, &count);
    t->nblocks = count;
    if (e)
        return e;
    for (int l = 0; l < p->nblocks; l++) {
        char gpath[H5IO_PATHLEN];
        h5io_path(gpath, "/test/blocks/%s", p->blocks[l].name);
        if (!h5io_exists(rd->f, gpath)) {
            atf_errorf(rd->err, "%s: %s: missing (every training block needs its test block)",
                       rd->fname, gpath);
            return ATF_E_INPUT;
        }
    }
    if (count != p->nblocks) {
        atf_errorf(rd->err, "%s: /test/blocks: %d blocks but /blocks has %d", rd->fname, count,
                   p->nblocks);
        return ATF_E_INPUT;
    }
    /* Same order as the training blocks; every name exists, counts agree, so a permutation. */
    for (int l = 0; l < p->nblocks; l++) {
        atf_block *b = &t->blocks[l];
        const atf_block *tb = &p->blocks[l];
        memset(b, 0, sizeof *b);
        memcpy(b->name, tb->name, sizeof b->name);
        b->index = tb->index;
        b->penalty = tb->penalty;
        memcpy(b->penalty_spec, tb->penalty_spec, sizeof b->penalty_spec);
        b->structure = tb->structure;
        b->N = t->N;
        b->C = t->C;
        b->M = t->M;
        char gpath[H5IO_PATHLEN];
        h5io_path(gpath, "/test/blocks/%s", b->name);
        if ((e = read_operator(rd, gpath, b, tk)))
            return e;
        if (b->rows != tb->rows || b->cols != tb->cols) {
            atf_errorf(rd->err, "%s: %s: rows × cols = %d × %d but /blocks/%s is %d × %d",
                       rd->fname, gpath, b->rows, b->cols, tb->name, tb->rows, tb->cols);
            return ATF_E_INPUT;
        }
    }
    return ATF_OK;
}

/* The split /test as p->test; tk: TAKE_ALL, TAKE_SHAPES (the shard's fingerprint) or
 * TAKE_SHARD (atf_problem_read_test_shard). */
static atf_error read_test(const h5io_reader *rd, atf_problem *p, const take *tk)
{
    if (!h5io_exists(rd->f, "/test"))
        return ATF_OK;
    atf_error e = h5io_require_group(rd->f, rd->fname, "/test", rd->err);
    if (e)
        return e;
    atf_problem *t = calloc(1, sizeof *t);
    if (!t) {
        atf_errorf(rd->err, "%s: /test: out of memory", rd->fname);
        return ATF_E_NOMEM;
    }
    p->test = t;
    t->C = p->C;
    if ((e = h5io_attr_size(rd->f, rd->fname, "/test", "samples", &t->N, rd->err)))
        return e;
    if (h5io_attr_exists(rd->f, "/test", "outputs")) {
        int C;
        if ((e = h5io_attr_size(rd->f, rd->fname, "/test", "outputs", &C, rd->err)))
            return e;
        if (C != p->C) {
            atf_errorf(rd->err, "%s: /test attribute 'outputs': %d but the root has outputs = %d",
                       rd->fname, C, p->C);
            return ATF_E_INPUT;
        }
    }
    if ((int64_t)t->N * t->C > INT_MAX) {
        atf_errorf(rd->err, "%s: /test: samples·outputs exceeds 2^31 - 1", rd->fname);
        return ATF_E_INPUT;
    }
    t->M = t->N * t->C;
    if ((e = read_per_example(rd, "/test/y", t->N, t->C, 1, &t->y)) ||
        (e = read_per_example(rd, "/test/f0", t->N, t->C, 1, &t->f0)) ||
        (e = read_labels(rd, "/test/labels", t->N, &t->labels)))
        return e;
    t->r = malloc((size_t)t->M * sizeof *t->r);
    if (!t->r) {
        atf_errorf(rd->err, "%s: /test: out of memory", rd->fname);
        return ATF_E_NOMEM;
    }
    for (int m = 0; m < t->M; m++)
        t->r[m] = t->y[m] - t->f0[m];
    return read_test_blocks(rd, p, t, tk);
}

/* ------------------------------------------------------------------ reading: root */

static atf_error read_header(const h5io_reader *rd, atf_problem *p)
{
    atf_error e;
    if ((e = h5io_check_format(rd->f, rd->fname, PROBLEM_FORMAT, rd->err)) ||
        (e = h5io_check_version(rd->f, rd->fname, PROBLEM_VERSION, rd->err)))
        return e;
    p->C = 1;
    if ((e = h5io_attr_size(rd->f, rd->fname, "/", "samples", &p->N, rd->err)) ||
        (h5io_attr_exists(rd->f, "/", "outputs") &&
         (e = h5io_attr_size(rd->f, rd->fname, "/", "outputs", &p->C, rd->err))))
        return e;
    if ((int64_t)p->N * p->C > INT_MAX) {
        atf_errorf(rd->err, "%s: /: samples·outputs = %lld exceeds 2^31 - 1", rd->fname,
                   (long long)p->N * p->C);
        return ATF_E_INPUT;
    }
    p->M = p->N * p->C;
    return ATF_OK;
}

/* ------------------------------------------------------------------ reading: provenance */

/* The stored fingerprint goes to a buffer of STORED_LEN bytes: a value of another length is not
 * an error, it simply differs from the content's. */
#define STORED_LEN 256

static atf_error read_provenance(const h5io_reader *rd, atf_provenance *pv, char *stored)
{
    atf_error e;
    if ((e = h5io_attr_string_or(rd->f, rd->fname, "/", "fingerprint", "", stored, STORED_LEN,
                                 rd->err)) ||
        (e = h5io_attr_string_or(rd->f, rd->fname, "/", "atf_version", "", pv->atf_version,
                                 sizeof pv->atf_version, rd->err)) ||
        (e = h5io_attr_string_or(rd->f, rd->fname, "/", "command", "", pv->command,
                                 sizeof pv->command, rd->err)) ||
        (e = h5io_attr_string_or(rd->f, rd->fname, "/", "data_source", "", pv->data_source,
                                 sizeof pv->data_source, rd->err)) ||
        (e = h5io_attr_string_or(rd->f, rd->fname, "/", "mlp_fingerprint", "",
                                 pv->mlp_fingerprint, sizeof pv->mlp_fingerprint, rd->err)))
        return e;
    pv->has_data_seed = h5io_attr_exists(rd->f, "/", "data_seed");
    if (pv->has_data_seed &&
        (e = h5io_attr_int(rd->f, rd->fname, "/", "data_seed", &pv->data_seed, rd->err)))
        return e;
    pv->has_standardize = h5io_attr_exists(rd->f, "/", "standardize");
    if (pv->has_standardize) {
        int64_t v;
        if ((e = h5io_attr_int(rd->f, rd->fname, "/", "standardize", &v, rd->err)))
            return e;
        pv->standardize = v != 0;
    }
    return ATF_OK;
}

/* The stored attribute only tells whether the file changed since atf wrote it
 * (docs/formats.md: an edited file is still read, by its content). */
static void compare_fingerprint(atf_problem *p, const char *stored)
{
    p->fingerprint_state = !stored[0] ? ATF_FINGERPRINT_ABSENT
                           : !strcmp(stored, p->fingerprint) ? ATF_FINGERPRINT_MATCHES
                                                             : ATF_FINGERPRINT_DIFFERS;
}

/* The fingerprint of what was read. */
static atf_error set_fingerprint(const h5io_reader *rd, atf_problem *p, const char *stored)
{
    if (atf_problem_fingerprint(p, p->fingerprint) != ATF_OK) {
        atf_errorf(rd->err, "%s: out of memory for its fingerprint", rd->fname);
        return ATF_E_NOMEM;
    }
    compare_fingerprint(p, stored);
    return ATF_OK;
}

/* /r, /y, /f0 and /labels: every example's, in a shard too. */
static atf_error read_examples(const h5io_reader *rd, atf_problem *p)
{
    int64_t m = p->M;
    static const char *const rname[1] = {"samples·outputs"};
    atf_error e;
    if ((e = h5io_read_checked(rd->f, rd->fname, "/r", 1, &m, rname, &p->r, rd->err)) ||
        (e = read_per_example(rd, "/y", p->N, p->C, 0, &p->y)) ||
        (e = read_per_example(rd, "/f0", p->N, p->C, 0, &p->f0)))
        return e;
    return read_labels(rd, "/labels", p->N, &p->labels);
}

static atf_error read_problem(const h5io_reader *rd, void *ctx)
{
    atf_problem *p = ctx;
    atf_error e;
    if ((e = read_header(rd, p)) ||
        (e = read_examples(rd, p)) ||
        (e = read_training_blocks(rd, p, &TAKE_EVERYTHING)) ||
        (e = read_test(rd, p, &TAKE_EVERYTHING)))
        return e;
    char stored[STORED_LEN];
    if ((e = read_provenance(rd, &p->prov, stored)))
        return e;
    return set_fingerprint(rd, p, stored);
}

atf_error atf_problem_read(const char *path, atf_problem **out, char *err)
{
    *out = NULL;
    atf_problem *p = calloc(1, sizeof *p);
    if (!p) {
        atf_errorf(err, "%s: out of memory", path);
        return ATF_E_NOMEM;
    }
    atf_error e = h5io_read_file(path, read_problem, p, err);
    if (e) {
        atf_problem_free(p);
        return e;
    }
    *out = p;
    return ATF_OK;
}

/* ------------------------------------------------------------------ reading: a shard */

/* The fingerprint streams each dense or factored array through the hash in slices of at most
 * this many bytes (at least one row), each read as a hyperslab. */
#ifndef SHARD_SLICE_BYTES
#define SHARD_SLICE_BYTES ((int64_t)64 << 20)
#endif

typedef struct {
    const h5io_reader *rd;
    int failed; /* stream_rows wrote the message */
} stream_src;

/* atfp_fp_source.rows: every row of the array, from the file, slice after slice. */
static atf_error stream_rows(void *ctx, atf_hasher *h, const atf_problem *split, int test,
                             const atf_block *b, const char *array)
{
    stream_src *src = ctx;
    const h5io_reader *rd = src->rd;
    char path[H5IO_PATHLEN];
    h5io_path(path, "%s/blocks/%s/%s", test ? "/test" : "", b->name, array);
    int64_t dims[2] = {split->M, b->cols};
    const char *const *names = D_DIMS;
    if (!strcmp(array, "H")) {
        dims[0] = split->N;
        dims[1] = b->rows;
        names = H_DIMS;
    } else if (!strcmp(array, "J")) {
        dims[1] = (int64_t)b->rows * b->cols;
        names = J_DIMS;
    }
    atf_error e = h5io_check_shape(rd->f, rd->fname, path, 2, dims, names, rd->err);
    int64_t per = SHARD_SLICE_BYTES / (int64_t)sizeof(double) / dims[1];
    per = per < 1 ? 1 : per > dims[0] ? dims[0] : per;
    double *slice = NULL;
    if (!e && !(slice = malloc((size_t)(per * dims[1]) * sizeof *slice))) {
        atf_errorf(rd->err, "%s: %s: out of memory for a slice of %lld rows (fingerprint)",
                   rd->fname, path, (long long)per);
        e = ATF_E_NOMEM;
    }
    for (int64_t row0 = 0; !e && row0 < dims[0]; row0 += per) {
        int64_t n = dims[0] - row0 < per ? dims[0] - row0 : per;
        if (!(e = h5io_read_rows(rd->f, rd->fname, path, dims, row0, n, slice, rd->err)))
            atf_hasher_doubles(h, slice, n * dims[1]);
    }
    free(slice);
    src->failed = e != ATF_OK;
    return e;
}

/* The whole file's fingerprint for a shard p: the test split is read without its dense and
 * factored data (TAKE_SHAPES) for as long as the hash runs, those arrays of both splits are
 * streamed from the file. */
static atf_error shard_fingerprint(const h5io_reader *rd, atf_problem *p, const char *stored)
{
    atf_error e = read_test(rd, p, &TAKE_NO_DATA);
    if (!e) {
        stream_src src = {rd, 0};
        atfp_fp_source fs = {stream_rows, &src};
        if ((e = atfp_fingerprint(p, &fs, p->fingerprint)) && !src.failed)
            atf_errorf(rd->err, "%s: out of memory for its fingerprint", rd->fname);
    }
    atf_problem_free(p->test);
    p->test = NULL;
    if (!e)
        compare_fingerprint(p, stored);
    return e;
}

typedef struct {
    atf_problem *p;
    take tk;
    int fingerprint;
} shard_job;

static atf_error read_shard(const h5io_reader *rd, void *ctx)
{
    shard_job *job = ctx;
    atf_problem *p = job->p;
    atf_error e = read_header(rd, p);
    if (e)
        return e;
    if (job->tk.first > p->N - job->tk.count) {
        atf_errorf(rd->err, "%s: a shard of %d examples from example %d: the file has examples "
                   "0 … %d (samples = %d)", rd->fname, job->tk.count, job->tk.first, p->N - 1,
                   p->N);
        return ATF_E_USAGE;
    }
    if ((e = read_examples(rd, p)) ||
        (e = read_training_blocks(rd, p, &job->tk)))
        return e;
    p->shard_first = job->tk.first;
    p->shard_count = job->tk.count;
    char stored[STORED_LEN];
    if ((e = read_provenance(rd, &p->prov, stored)))
        return e;
    if (job->fingerprint)
        return shard_fingerprint(rd, p, stored);
    p->fingerprint[0] = '\0'; /* not computed, so nothing compared with the stored one */
    p->fingerprint_state = ATF_FINGERPRINT_ABSENT;
    return ATF_OK;
}

/* Read a shard's job from path: examples first … first + count − 1 of `split` ("" or
 * "/test"), by fn; *out the problem read (NULL on failure). */
static atf_error read_shard_job(const char *path, const char *split, int first, int count,
                                int check, int fingerprint, h5io_read_fn fn, atf_problem **out,
                                char *err)
{
    *out = NULL;
    if (first < 0 || count < 1) {
        atf_errorf(err, "%s: %s%sa shard of %d examples from example %d: need a first example "
                   "≥ 0 and at least one example", path, split, *split ? ": " : "", count, first);
        return ATF_E_USAGE;
    }
    atf_problem *p = calloc(1, sizeof *p);
    if (!p) {
        atf_errorf(err, "%s: out of memory", path);
        return ATF_E_NOMEM;
    }
    shard_job job = {p, {TAKE_SHARD, first, count}, fingerprint};
    atf_error e = h5io_read_file_opt(path, check, fn, &job, err);
    if (e) {
        atf_problem_free(p);
        return e;
    }
    *out = p;
    return ATF_OK;
}

atf_error atf_problem_read_shard(const char *path, int first, int count, int check,
                                 int fingerprint, atf_problem **out, char *err)
{
    return read_shard_job(path, "", first, count, check, fingerprint, read_shard, out, err);
}

/* A shard of the test split: the training blocks' names, indices, penalties and shapes (their
 * data left in the file), then /test with the rows of its examples first … first + count − 1
 * (TAKE_SHARD), after checking that it has them. */
static atf_error read_test_shard(const h5io_reader *rd, void *ctx)
{
    shard_job *job = ctx;
    atf_problem *p = job->p;
    atf_error e = read_header(rd, p);
    if (!e)
        e = read_training_blocks(rd, p, &TAKE_NO_DATA);
    if (e || !h5io_exists(rd->f, "/test"))
        return e;
    int n = 0;
    if ((e = h5io_require_group(rd->f, rd->fname, "/test", rd->err)) ||
        (e = h5io_attr_size(rd->f, rd->fname, "/test", "samples", &n, rd->err)))
        return e;
    if (job->tk.first > n - job->tk.count) {
        atf_errorf(rd->err, "%s: /test: a shard of %d examples from example %d: the test split "
                   "has examples 0 … %d (samples = %d)", rd->fname, job->tk.count,
                   job->tk.first, n - 1, n);
        return ATF_E_USAGE;
    }
    return read_test(rd, p, &job->tk);
}

atf_error atf_problem_read_test_shard(const char *path, int first, int count, int check,
                                      atf_problem **out, char *err)
{
    *out = NULL;
    atf_problem *p;
    atf_error e = read_shard_job(path, "/test", first, count, check, 0, read_test_shard, &p, err);
    if (!e && p->test) { /* the split alone, as a shard of its own examples */
        *out = p->test;
        p->test = NULL;
        (*out)->shard_first = first;
        (*out)->shard_count = count;
    }
    atf_problem_free(p);
    return e;
}

/* ------------------------------------------------------------------ writing */

static void put_operator(h5io_out *o, const char *gpath, const atf_block *b)
{
    char path[H5IO_PATHLEN];
    h5io_put_int(o, gpath, "rows", b->rows);
    h5io_put_int(o, gpath, "cols", b->cols);
    h5io_put_string(o, gpath, "operator", atfp_operator_name(b->kind));
    switch (b->kind) {
    case ATF_OP_DENSE: {
        int64_t dims[2] = {b->M, (int64_t)b->rows * b->cols};
        h5io_path(path, "%s/J", gpath);
        h5io_put_doubles(o, path, 2, dims, b->J);
        break;
    }
    case ATF_OP_SPARSE:
        h5io_path(path, "%s/J_indptr", gpath);
        h5io_put_int64s(o, path, (int64_t)b->M + 1, b->indptr);
        h5io_path(path, "%s/J_indices", gpath);
        h5io_put_int64s(o, path, b->nnz, b->indices);
        h5io_path(path, "%s/J_data", gpath);
        h5io_put_doubles(o, path, 1, &b->nnz, b->data);
        break;
    case ATF_OP_FACTORED: {
        int64_t hd[2] = {b->N, b->rows}, dd[2] = {b->M, b->cols};
        h5io_path(path, "%s/H", gpath);
        h5io_put_doubles(o, path, 2, hd, b->H);
        h5io_path(path, "%s/D", gpath);
        h5io_put_doubles(o, path, 2, dd, b->D);
        break;
    }
    }
}

/* /y, /f0 and /labels of a split under prefix ("" or "/test"). */
static void put_examples(h5io_out *o, const char *prefix, const atf_problem *p)
{
    char path[H5IO_PATHLEN];
    int64_t nc[2] = {p->N, p->C};
    h5io_path(path, "%s/y", prefix);
    if (p->y)
        h5io_put_doubles(o, path, 2, nc, p->y);
    h5io_path(path, "%s/f0", prefix);
    if (p->f0)
        h5io_put_doubles(o, path, 2, nc, p->f0);
    h5io_path(path, "%s/labels", prefix);
    if (p->labels)
        h5io_put_ints(o, path, p->N, p->labels);
}

/* The group of a training block with its index, penalty and structure (not its operator). */
static void put_training_group(h5io_out *o, const char *gpath, const atf_block *b)
{
    char spec[ATF_PENALTY_SPECLEN];
    h5io_put_group(o, gpath);
    h5io_put_int(o, gpath, "index", b->index);
    if (b->penalty_spec[0])
        snprintf(spec, sizeof spec, "%s", b->penalty_spec);
    else
        atf_penalty_format(&b->penalty, spec, sizeof spec);
    h5io_put_string(o, gpath, "penalty", spec);
    h5io_put_string(o, gpath, "structure", atfp_structure_name(b->structure));
}

static void put_training_block(h5io_out *o, const atf_block *b)
{
    char gpath[H5IO_PATHLEN];
    h5io_path(gpath, "/blocks/%s", b->name);
    put_training_group(o, gpath, b);
    put_operator(o, gpath, b);
}

static void put_operator_arrays(h5io_out *o, const char *gpath, const atf_block *b, int N,
                                int M);

/* The test split; its factored arrays created empty (atf_problem_write_rows fills them) or
 * written whole. */
static void put_test(h5io_out *o, const atf_problem *t, int empty)
{
    h5io_put_group(o, "/test");
    h5io_put_int(o, "/test", "samples", t->N);
    h5io_put_int(o, "/test", "outputs", t->C);
    put_examples(o, "/test", t);
    h5io_put_group(o, "/test/blocks");
    for (int l = 0; l < t->nblocks; l++) {
        char gpath[H5IO_PATHLEN];
        h5io_path(gpath, "/test/blocks/%s", t->blocks[l].name);
        h5io_put_group(o, gpath);
        if (empty)
            put_operator_arrays(o, gpath, &t->blocks[l], t->N, t->M);
        else
            put_operator(o, gpath, &t->blocks[l]);
    }
}

typedef struct {
    const atf_problem *prob;
    char fingerprint[ATF_FINGERPRINT_LEN];
} problem_out;

static void put_provenance(h5io_out *o, const problem_out *po)
{
    const atf_provenance *pv = &po->prob->prov;
    h5io_put_string(o, "/", "fingerprint", po->fingerprint);
    h5io_put_string(o, "/", "atf_version", atf_version());
    h5io_put_string(o, "/", "blas", atf_blas_name());
    if (pv->command[0])
        h5io_put_string(o, "/", "command", pv->command);
    if (pv->data_source[0])
        h5io_put_string(o, "/", "data_source", pv->data_source);
    if (pv->has_data_seed)
        h5io_put_int(o, "/", "data_seed", pv->data_seed);
    if (pv->has_standardize)
        h5io_put_int(o, "/", "standardize", pv->standardize);
    if (pv->mlp_fingerprint[0])
        h5io_put_string(o, "/", "mlp_fingerprint", pv->mlp_fingerprint);
}

static void put_problem(h5io_out *o, const void *ctx)
{
    const problem_out *po = ctx;
    const atf_problem *p = po->prob;
    int64_t m = p->M;
    h5io_put_string(o, "/", "format", PROBLEM_FORMAT);
    h5io_put_int(o, "/", "version", PROBLEM_VERSION);
    h5io_put_int(o, "/", "samples", p->N);
    h5io_put_int(o, "/", "outputs", p->C);
    put_provenance(o, po);
    h5io_put_doubles(o, "/r", 1, &m, p->r);
    put_examples(o, "", p);
    h5io_put_group(o, "/blocks");
    for (int l = 0; l < p->nblocks; l++)
        put_training_block(o, &p->blocks[l]);
    if (p->test)
        put_test(o, p->test, 0);
}

atf_error atf_problem_write(const char *path, const atf_problem *prob, char *err)
{
    atf_error e = atfp_refuse_shard(prob, path, "writing a problem file", err);
    if (!e)
        e = atf_problem_validate(prob, path, err);
    if (e)
        return e;
    /* Always from the content being written, never copied from what was read: a file rewritten
     * after an edit gets the fingerprint of its new content. */
    problem_out po = {prob, ""};
    if (atf_problem_fingerprint(prob, po.fingerprint) != ATF_OK) {
        atf_errorf(err, "%s: out of memory for its fingerprint", path);
        return ATF_E_NOMEM;
    }
    return h5io_write_file(path, put_problem, &po, err);
}

/* ------------------------------------------------------------------ writing in pieces */

typedef struct {
    const atf_problem *head;
    const atf_rows_source *src;
    const char *fname;
    h5io_out *o;
    atf_error e;          /* the first failure of a row or of the source (the file's: o->failed) */
    char msg[ATF_ERRLEN]; /* its message */
    char fingerprint[ATF_FINGERPRINT_LEN];
} rows_job;

struct atf_rows_out {
    rows_job *job;
    atf_hasher *h;
    char path[H5IO_PATHLEN];
    int64_t dims[2];
    int64_t next; /* rows written so far */
};

atf_error atf_rows_put(atf_rows_out *out, const double *rows, int64_t n)
{
    rows_job *job = out->job;
    if (job->e)
        return job->e;
    if (job->o->failed[0])
        return ATF_E_IO; /* the writer says why at the end */
    int64_t w = out->dims[1];
    if (n < 0 || n > out->dims[0] - out->next) {
        atf_errorf(job->msg, "%s: %s: %lld more rows after %lld of its %lld", job->fname,
                   out->path, (long long)n, (long long)out->next, (long long)out->dims[0]);
        return job->e = ATF_E_USAGE;
    }
    for (int64_t k = 0; k < n * w; k++) {
        if (!isfinite(rows[k])) {
            char where[128];
            h5io_format_index(where, sizeof where, 2, out->dims, out->next * w + k);
            atf_errorf(job->msg, "%s: %s: non-finite value %g at %s", job->fname, out->path,
                       rows[k], where);
            return job->e = ATF_E_INPUT;
        }
    }
    atf_hasher_doubles(out->h, rows, n * w);
    h5io_put_rows(job->o, out->path, out->dims, out->next, n, rows);
    out->next += n;
    return job->o->failed[0] ? ATF_E_IO : ATF_OK;
}

/* atfp_fp_source.rows: the array's rows from the caller's source, hashed and written. */
static atf_error rows_from_source(void *ctx, atf_hasher *h, const atf_problem *split, int test,
                                  const atf_block *b, const char *array)
{
    rows_job *job = ctx;
    atf_rows_out out = {job, h, "", {0, 0}, 0};
    int is_h = !strcmp(array, "H");
    out.dims[0] = is_h ? split->N : split->M;
    out.dims[1] = is_h ? b->rows : b->cols;
    h5io_path(out.path, "%s/blocks/%s/%s", test ? "/test" : "", b->name, array);
    char msg[ATF_ERRLEN] = "";
    atf_error e = job->src->rows(job->src->ctx, test, (int)(b - split->blocks), array,
                                 out.dims[0], out.dims[1], &out, msg);
    if (e && !job->e && !job->o->failed[0]) { /* the source's own failure */
        job->e = e;
        atf_errorf(job->msg, "%s", msg[0] ? msg : atf_error_name(e));
    }
    if (!e) /* a source that went on after atf_rows_put refused */
        e = job->e ? job->e : job->o->failed[0] ? ATF_E_IO : ATF_OK;
    if (!e && out.next != out.dims[0]) {
        atf_errorf(job->msg, "%s: %s: the source gave %lld of its %lld rows", job->fname,
                   out.path, (long long)out.next, (long long)out.dims[0]);
        e = job->e = ATF_E_USAGE;
    }
    return e;
}

/* rows, cols, operator and the empty H [N, rows] and D [M, cols] of a factored block. */
static void put_operator_arrays(h5io_out *o, const char *gpath, const atf_block *b, int N,
                                int M)
{
    char path[H5IO_PATHLEN];
    int64_t hd[2] = {N, b->rows}, dd[2] = {M, b->cols};
    h5io_put_int(o, gpath, "rows", b->rows);
    h5io_put_int(o, gpath, "cols", b->cols);
    h5io_put_string(o, gpath, "operator", atfp_operator_name(ATF_OP_FACTORED));
    h5io_path(path, "%s/H", gpath);
    h5io_put_array(o, path, hd);
    h5io_path(path, "%s/D", gpath);
    h5io_put_array(o, path, dd);
}

static void put_rows_problem(h5io_out *o, const void *ctx)
{
    rows_job *job = (rows_job *)ctx; /* ours: atf_problem_write_rows's */
    const atf_problem *p = job->head, *t = p->test;
    job->o = o;
    int64_t m = p->M;
    char gpath[H5IO_PATHLEN];
    h5io_put_string(o, "/", "format", PROBLEM_FORMAT);
    h5io_put_int(o, "/", "version", PROBLEM_VERSION);
    h5io_put_int(o, "/", "samples", p->N);
    h5io_put_int(o, "/", "outputs", p->C);
    h5io_put_doubles(o, "/r", 1, &m, p->r);
    put_examples(o, "", p);
    h5io_put_group(o, "/blocks");
    for (int l = 0; l < p->nblocks; l++) {
        h5io_path(gpath, "/blocks/%s", p->blocks[l].name);
        put_training_group(o, gpath, &p->blocks[l]);
        put_operator_arrays(o, gpath, &p->blocks[l], p->N, p->M);
    }
    if (t)
        put_test(o, t, 1);
    if (o->failed[0])
        return; /* the source is not asked for anything */
    /* the fingerprint's order is the file's: it asks the source for each array in turn */
    atfp_fp_source fs = {rows_from_source, job};
    atf_error e = atfp_fingerprint(p, &fs, job->fingerprint);
    if (e && !job->e && !o->failed[0]) { /* the hasher could not be made */
        job->e = e;
        atf_errorf(job->msg, "%s: out of memory for its fingerprint", job->fname);
    }
    if (job->e) {
        h5io_put_fail(o, "rows"); /* no file: job->msg says why */
        return;
    }
    problem_out po = {p, ""};
    memcpy(po.fingerprint, job->fingerprint, sizeof po.fingerprint);
    put_provenance(o, &po);
}

/* A split of a head checked as atf_problem_validate checks a problem: as a shard of one
 * example whose blocks hold zero rows (what atf_problem_validate reads of H and D), the rows
 * themselves being checked as they come. */
static atf_error check_head_split(const char *what, const atf_problem *p, char *err)
{
    if (p->nblocks <= 0 || !p->blocks || p->C <= 0)
        return atf_problem_validate(p, what, err); /* its message */
    int64_t need = 1;
    for (int l = 0; l < p->nblocks; l++) {
        const atf_block *b = &p->blocks[l];
        if (b->kind != ATF_OP_FACTORED) {
            atf_errorf(err, "%s: block '%s' is %s; only factored blocks are written in pieces",
                       what, b->name, atfp_operator_name(b->kind));
            return ATF_E_INPUT;
        }
        int64_t n = b->rows > (int64_t)p->C * b->cols ? b->rows : (int64_t)p->C * b->cols;
        need = n > need ? n : need;
    }
    double *zeros = need < INT_MAX ? calloc((size_t)need, sizeof *zeros) : NULL;
    atf_block *blocks = malloc((size_t)p->nblocks * sizeof *blocks);
    atf_error e = ATF_E_NOMEM;
    if (zeros && blocks) {
        atf_problem shell = *p;
        shell.test = NULL;
        shell.shard_first = 0;
        shell.shard_count = 1;
        shell.blocks = blocks;
        for (int l = 0; l < p->nblocks; l++) {
            blocks[l] = p->blocks[l];
            blocks[l].N = 1;
            blocks[l].C = p->C;
            blocks[l].M = p->C;
            blocks[l].H = blocks[l].D = zeros;
        }
        e = atf_problem_validate(&shell, what, err);
    } else {
        atf_errorf(err, "%s: out of memory", what);
    }
    free(blocks);
    free(zeros);
    return e;
}

static atf_error check_head(const char *path, const atf_problem *p, char *err)
{
    if (!p) {
        atf_errorf(err, "%s: no problem (NULL)", path);
        return ATF_E_INPUT;
    }
    atf_error e = check_head_split(path, p, err);
    const atf_problem *t = p->test;
    if (e || !t)
        return e;
    char what[H5IO_PATHLEN + 32];
    snprintf(what, sizeof what, "%s (/test)", path);
    if ((e = check_head_split(what, t, err)))
        return e;
    if (t->C != p->C || !t->y || !t->f0 || t->test || t->nblocks != p->nblocks) {
        atf_errorf(err, "%s: /test: %s", path,
                   t->C != p->C ? "outputs differ from the training split's"
                   : !t->y || !t->f0 ? "missing y or f0 (the test split needs both)"
                   : t->test ? "a test split cannot have its own test split"
                             : "its blocks differ in number from the training split's");
        return ATF_E_INPUT;
    }
    for (int l = 0; l < t->nblocks; l++) {
        const atf_block *b = &t->blocks[l], *tb = &p->blocks[l];
        if (strcmp(b->name, tb->name) || b->rows != tb->rows || b->cols != tb->cols) {
            atf_errorf(err, "%s: /test/blocks/%s: test block %d differs from training block '%s' "
                       "in name or shape", path, b->name, l, tb->name);
            return ATF_E_INPUT;
        }
    }
    return ATF_OK;
}

atf_error atf_problem_write_rows(const char *path, const atf_problem *head,
                                 const atf_rows_source *src, char *fingerprint, char *err)
{
    if (fingerprint)
        fingerprint[0] = '\0';
    atf_error e = check_head(path, head, err);
    if (e)
        return e;
    rows_job job = {head, src, path, NULL, ATF_OK, "", ""};
    e = h5io_write_file(path, put_rows_problem, &job, err);
    if (job.e) { /* a row or the source, not the file: their message */
        atf_errorf(err, "%s", job.msg);
        return job.e;
    }
    if (!e && fingerprint)
        memcpy(fingerprint, job.fingerprint, ATF_FINGERPRINT_LEN);
    return e;
}
