/* problem.c — in-memory problems: construction, release, validation, overrides. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf_problem.h"
#include "h5io.h"
#include "problem_internal.h"

/* ------------------------------------------------------------------ names */

const char *atfp_structure_name(atf_structure s)
{
    return s == ATF_STRUCT_DIAGONAL ? "diagonal" : "matrix";
}

const char *atfp_operator_name(atf_operator_kind k)
{
    switch (k) {
    case ATF_OP_DENSE: return "dense";
    case ATF_OP_SPARSE: return "sparse";
    case ATF_OP_FACTORED: return "factored";
    }
    return "unknown";
}

int atfp_structure_parse(const char *s, atf_structure *out)
{
    if (strcmp(s, "matrix") == 0)
        *out = ATF_STRUCT_MATRIX;
    else if (strcmp(s, "diagonal") == 0)
        *out = ATF_STRUCT_DIAGONAL;
    else
        return -1;
    return 0;
}

int atfp_operator_parse(const char *s, atf_operator_kind *out)
{
    if (strcmp(s, "dense") == 0)
        *out = ATF_OP_DENSE;
    else if (strcmp(s, "sparse") == 0)
        *out = ATF_OP_SPARSE;
    else if (strcmp(s, "factored") == 0)
        *out = ATF_OP_FACTORED;
    else
        return -1;
    return 0;
}

/* ------------------------------------------------------------------ shared checks */

atf_error atfp_check_finite(const char *what, const char *path, int rank, const int64_t *dims,
                            const double *x, char *err)
{
    int64_t n = 1;
    for (int a = 0; a < rank; a++)
        n *= dims[a];
    for (int64_t j = 0; j < n; j++) {
        if (!isfinite(x[j])) {
            char where[128];
            h5io_format_index(where, sizeof where, rank, dims, j);
            atf_errorf(err, "%s: %s: non-finite value %g at %s", what, path, x[j], where);
            return ATF_E_INPUT;
        }
    }
    return ATF_OK;
}

atf_error atfp_check_csr(const char *what, const char *path, int M, int64_t n, int64_t nnz,
                         const int64_t *indptr, const int64_t *indices, char *err)
{
    if (indptr[0] != 0) {
        atf_errorf(err, "%s: %s/J_indptr: starts at %lld, expected 0", what, path,
                   (long long)indptr[0]);
        return ATF_E_INPUT;
    }
    for (int m = 0; m < M; m++) {
        if (indptr[m + 1] < indptr[m]) {
            atf_errorf(err, "%s: %s/J_indptr: decreases at [%d] (%lld after %lld)", what, path,
                       m + 1, (long long)indptr[m + 1], (long long)indptr[m]);
            return ATF_E_INPUT;
        }
    }
    if (indptr[M] != nnz) {
        atf_errorf(err, "%s: %s/J_indptr: ends at %lld but J_indices has %lld entries (nnz)",
                   what, path, (long long)indptr[M], (long long)nnz);
        return ATF_E_INPUT;
    }
    for (int64_t p = 0; p < nnz; p++) {
        if (indices[p] < 0 || indices[p] >= n) {
            atf_errorf(err, "%s: %s/J_indices: value %lld at [%lld] outside [0, %lld) (rows·cols)",
                       what, path, (long long)indices[p], (long long)p, (long long)n);
            return ATF_E_INPUT;
        }
    }
    return ATF_OK;
}

atf_error atfp_check_name(const char *what, const char *name, char *err)
{
    size_t n = strnlen(name, ATF_NAMELEN);
    if (n == 0 || n >= ATF_NAMELEN || strchr(name, '/') || strcmp(name, ".") == 0) {
        atf_errorf(err, "%s: block name '%.*s': must be 1 to %d characters without '/'", what,
                   (int)n, name, ATF_NAMELEN - 1);
        return ATF_E_INPUT;
    }
    return ATF_OK;
}

atf_error atfp_check_block_size(const char *what, const char *path, int64_t rows, int64_t cols,
                                char *err)
{
    if (rows <= 0 || cols <= 0 || rows > INT_MAX || cols > INT_MAX) {
        atf_errorf(err, "%s: %s: rows = %lld, cols = %lld: sizes must be positive 32-bit integers",
                   what, path, (long long)rows, (long long)cols);
        return ATF_E_INPUT;
    }
    if (rows * cols > INT_MAX) {
        atf_errorf(err, "%s: %s: rows·cols = %lld exceeds the BLAS limit %d", what, path,
                   (long long)(rows * cols), INT_MAX);
        return ATF_E_INPUT;
    }
    return ATF_OK;
}

atf_error atfp_parse_penalty(const char *what, const char *path, const char *spec,
                             atf_penalty *pen, char *err)
{
    char reason[ATF_ERRLEN];
    reason[0] = '\0';
    if (atf_penalty_parse(spec, pen, reason) != ATF_OK) {
        atf_errorf(err, "%s: %s attribute 'penalty': %s", what, path,
                   reason[0] ? reason : "invalid penalty");
        return ATF_E_INPUT;
    }
    return ATF_OK;
}

atf_error atfp_refuse_shard(const atf_problem *prob, const char *what, const char *needs,
                            char *err)
{
    if (!prob || prob->shard_count <= 0)
        return ATF_OK;
    atf_errorf(err, "%s: a shard of examples %d … %d; %s needs the whole problem", what,
               prob->shard_first, prob->shard_first + prob->shard_count - 1, needs);
    return ATF_E_USAGE;
}

/* ------------------------------------------------------------------ construction */

atf_problem *atf_problem_new(int N, int C, int nblocks)
{
    if (N <= 0 || C <= 0 || nblocks <= 0 || (int64_t)N * C > INT_MAX)
        return NULL;
    atf_problem *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->N = N;
    p->C = C;
    p->M = N * C;
    p->nblocks = nblocks;
    p->r = calloc((size_t)p->M, sizeof *p->r);
    p->blocks = calloc((size_t)nblocks, sizeof *p->blocks);
    if (!p->r || !p->blocks) {
        atf_problem_free(p);
        return NULL;
    }
    for (int l = 0; l < nblocks; l++) {
        atf_block *b = &p->blocks[l];
        b->index = l;
        b->N = N;
        b->C = C;
        b->M = p->M;
        b->penalty = atf_penalty_default();
        snprintf(b->penalty_spec, sizeof b->penalty_spec, "sq");
    }
    return p;
}

static void block_free(atf_block *b)
{
    free(b->J);
    free(b->indptr);
    free(b->indices);
    free(b->data);
    free(b->H);
    free(b->D);
    b->J = b->data = b->H = b->D = NULL;
    b->indptr = b->indices = NULL;
}

void atf_problem_free(atf_problem *prob)
{
    if (!prob)
        return;
    if (prob->blocks)
        for (int l = 0; l < prob->nblocks; l++)
            block_free(&prob->blocks[l]);
    free(prob->blocks);
    free(prob->r);
    free(prob->y);
    free(prob->f0);
    free(prob->labels);
    atf_problem_free(prob->test);
    free(prob);
}

/* ------------------------------------------------------------------ validation */

static atf_error require_array(const char *what, const char *path, const void *p, char *err)
{
    if (p)
        return ATF_OK;
    atf_errorf(err, "%s: %s: missing (NULL array)", what, path);
    return ATF_E_INPUT;
}

/* The operator arrays of one block, for a split with N examples. */
static atf_error validate_operator(const char *what, const char *path, const atf_block *b,
                                   char *err)
{
    char item[H5IO_PATHLEN + 16];
    int64_t n = (int64_t)b->rows * b->cols;
    atf_error e = ATF_OK;
    switch (b->kind) {
    case ATF_OP_DENSE: {
        int64_t dims[2] = {b->M, n};
        snprintf(item, sizeof item, "%s/J", path);
        if ((e = require_array(what, item, b->J, err)))
            return e;
        return atfp_check_finite(what, item, 2, dims, b->J, err);
    }
    case ATF_OP_SPARSE: {
        snprintf(item, sizeof item, "%s/J_indptr", path);
        if ((e = require_array(what, item, b->indptr, err)))
            return e;
        if (b->nnz < 0) {
            atf_errorf(err, "%s: %s: nnz = %lld is negative", what, path, (long long)b->nnz);
            return ATF_E_INPUT;
        }
        if (b->nnz > 0) {
            snprintf(item, sizeof item, "%s/J_indices", path);
            if ((e = require_array(what, item, b->indices, err)))
                return e;
            snprintf(item, sizeof item, "%s/J_data", path);
            if ((e = require_array(what, item, b->data, err)))
                return e;
        }
        if ((e = atfp_check_csr(what, path, b->M, n, b->nnz, b->indptr, b->indices, err)))
            return e;
        snprintf(item, sizeof item, "%s/J_data", path);
        return atfp_check_finite(what, item, 1, &b->nnz, b->data, err);
    }
    case ATF_OP_FACTORED: {
        int64_t hd[2] = {b->N, b->rows}, dd[2] = {b->M, b->cols};
        snprintf(item, sizeof item, "%s/H", path);
        if ((e = require_array(what, item, b->H, err)) ||
            (e = atfp_check_finite(what, item, 2, hd, b->H, err)))
            return e;
        snprintf(item, sizeof item, "%s/D", path);
        if ((e = require_array(what, item, b->D, err)))
            return e;
        return atfp_check_finite(what, item, 2, dd, b->D, err);
    }
    }
    atf_errorf(err, "%s: %s attribute 'operator': unknown kind %d", what, path, (int)b->kind);
    return ATF_E_INPUT;
}

static atf_error validate_block(const char *what, const atf_problem *p, const atf_block *b,
                                char *err)
{
    atf_error e = atfp_check_name(what, b->name, err);
    if (e)
        return e;
    char path[H5IO_PATHLEN];
    snprintf(path, sizeof path, "/blocks/%s", b->name);
    /* a shard's blocks hold its examples only */
    int n = p->shard_count > 0 ? p->shard_count : p->N;
    if (b->N != n || b->C != p->C || b->M != n * p->C) {
        atf_errorf(err, "%s: %s: block sizes N = %d, C = %d, M = %d differ from the %s's "
                   "%d, %d, %d", what, path, b->N, b->C, b->M,
                   p->shard_count > 0 ? "shard" : "problem", n, p->C, n * p->C);
        return ATF_E_INPUT;
    }
    if (p->shard_count > 0 && b->kind != ATF_OP_FACTORED) {
        atf_errorf(err, "%s: block '%s' is %s; only factored blocks can be read as a shard",
                   what, b->name, atfp_operator_name(b->kind));
        return ATF_E_INPUT;
    }
    if ((e = atfp_check_block_size(what, path, b->rows, b->cols, err)))
        return e;
    if (b->structure != ATF_STRUCT_MATRIX && b->structure != ATF_STRUCT_DIAGONAL) {
        atf_errorf(err, "%s: %s attribute 'structure': unknown value %d", what, path,
                   (int)b->structure);
        return ATF_E_INPUT;
    }
    if (b->penalty_spec[0]) { /* an empty spec means "use b->penalty as set in code" */
        atf_penalty pen;
        if (strnlen(b->penalty_spec, ATF_PENALTY_SPECLEN) >= ATF_PENALTY_SPECLEN) {
            atf_errorf(err, "%s: %s attribute 'penalty': not terminated", what, path);
            return ATF_E_INPUT;
        }
        if ((e = atfp_parse_penalty(what, path, b->penalty_spec, &pen, err)))
            return e;
    }
    return validate_operator(what, path, b, err);
}

/* Sizes, right-hand side and the optional per-example arrays of one split. */
static atf_error validate_sizes(const char *what, const char *prefix, const atf_problem *p,
                                char *err)
{
    if (p->N <= 0 || p->C <= 0 || (int64_t)p->N * p->C != p->M) {
        atf_errorf(err, "%s: %s: samples = %d, outputs = %d, M = %d: need positive sizes with "
                   "M = samples·outputs", what, prefix[0] ? prefix : "/", p->N, p->C, p->M);
        return ATF_E_INPUT;
    }
    char item[64];
    int64_t m = p->M, nc[2] = {p->N, p->C};
    atf_error e;
    snprintf(item, sizeof item, "%s/r", prefix);
    if ((e = require_array(what, item, p->r, err)) ||
        (e = atfp_check_finite(what, item, 1, &m, p->r, err)))
        return e;
    snprintf(item, sizeof item, "%s/y", prefix);
    if (p->y && (e = atfp_check_finite(what, item, 2, nc, p->y, err)))
        return e;
    snprintf(item, sizeof item, "%s/f0", prefix);
    if (p->f0 && (e = atfp_check_finite(what, item, 2, nc, p->f0, err)))
        return e;
    if (p->nblocks <= 0 || !p->blocks) {
        atf_errorf(err, "%s: %s/blocks: no blocks", what, prefix);
        return ATF_E_INPUT;
    }
    return ATF_OK;
}

static atf_error validate_unique(const char *what, const atf_problem *p, char *err)
{
    for (int l = 0; l < p->nblocks; l++) {
        for (int j = 0; j < l; j++) {
            if (strcmp(p->blocks[j].name, p->blocks[l].name) == 0) {
                atf_errorf(err, "%s: /blocks/%s: duplicate block name", what, p->blocks[l].name);
                return ATF_E_INPUT;
            }
        }
        if (l > 0 && p->blocks[l].index <= p->blocks[l - 1].index) {
            atf_errorf(err, "%s: /blocks/%s attribute 'index': %d does not follow %d of block "
                       "%s (blocks must be sorted by distinct index)", what, p->blocks[l].name,
                       p->blocks[l].index, p->blocks[l - 1].index, p->blocks[l - 1].name);
            return ATF_E_INPUT;
        }
    }
    return ATF_OK;
}

/* The held-out split: its own N, the training C, y and f0 required, same blocks. */
static atf_error validate_test(const char *what, const atf_problem *p, char *err)
{
    const atf_problem *t = p->test;
    atf_error e = validate_sizes(what, "/test", t, err);
    if (e)
        return e;
    if (t->C != p->C) {
        atf_errorf(err, "%s: /test: outputs = %d but the training split has outputs = %d", what,
                   t->C, p->C);
        return ATF_E_INPUT;
    }
    if (!t->y || !t->f0) {
        atf_errorf(err, "%s: /test/%s: missing (the test split needs y and f0)", what,
                   t->y ? "f0" : "y");
        return ATF_E_INPUT;
    }
    if (t->test) {
        atf_errorf(err, "%s: /test/test: a test split cannot have its own test split", what);
        return ATF_E_INPUT;
    }
    if (t->nblocks != p->nblocks) {
        atf_errorf(err, "%s: /test/blocks: %d blocks but the training split has %d", what,
                   t->nblocks, p->nblocks);
        return ATF_E_INPUT;
    }
    for (int l = 0; l < t->nblocks; l++) {
        const atf_block *b = &t->blocks[l], *tb = &p->blocks[l];
        char path[H5IO_PATHLEN];
        snprintf(path, sizeof path, "/test/blocks/%.*s", ATF_NAMELEN, b->name);
        if (strncmp(b->name, tb->name, ATF_NAMELEN) != 0) {
            atf_errorf(err, "%s: %s: test block %d is named '%.*s' but training block %d is '%s'",
                       what, path, l, ATF_NAMELEN, b->name, l, tb->name);
            return ATF_E_INPUT;
        }
        if (b->rows != tb->rows || b->cols != tb->cols) {
            atf_errorf(err, "%s: %s: shape %d × %d but the training block is %d × %d", what,
                       path, b->rows, b->cols, tb->rows, tb->cols);
            return ATF_E_INPUT;
        }
        if (b->N != t->N || b->C != t->C || b->M != t->M) {
            atf_errorf(err, "%s: %s: block sizes N = %d, C = %d, M = %d differ from the test "
                       "split's %d, %d, %d", what, path, b->N, b->C, b->M, t->N, t->C, t->M);
            return ATF_E_INPUT;
        }
        if ((e = validate_operator(what, path, b, err)))
            return e;
    }
    return ATF_OK;
}

/* A shard (atf_problem_read_shard): examples shard_first … shard_first + shard_count − 1 of
 * the N, without a test split; shard_count = 0 is a whole problem. */
static atf_error validate_shard(const char *what, const atf_problem *p, char *err)
{
    if (p->shard_count == 0 && p->shard_first == 0)
        return ATF_OK;
    if (p->shard_count < 1 || p->shard_first < 0 ||
        p->shard_first > p->N - p->shard_count) {
        atf_errorf(err, "%s: a shard of %d examples from example %d: outside the problem's "
                   "examples 0 … %d", what, p->shard_count, p->shard_first, p->N - 1);
        return ATF_E_INPUT;
    }
    if (p->test) {
        atf_errorf(err, "%s: /test: a shard of examples %d … %d has no test split", what,
                   p->shard_first, p->shard_first + p->shard_count - 1);
        return ATF_E_INPUT;
    }
    return ATF_OK;
}

atf_error atf_problem_validate(const atf_problem *prob, const char *what, char *err)
{
    if (!what)
        what = "problem";
    if (!prob) {
        atf_errorf(err, "%s: no problem (NULL)", what);
        return ATF_E_INPUT;
    }
    atf_error e = validate_sizes(what, "", prob, err);
    if (e)
        return e;
    if ((e = validate_shard(what, prob, err)))
        return e;
    for (int l = 0; l < prob->nblocks; l++)
        if ((e = validate_block(what, prob, &prob->blocks[l], err)))
            return e;
    if ((e = validate_unique(what, prob, err)))
        return e;
    return prob->test ? validate_test(what, prob, err) : ATF_OK;
}

/* ------------------------------------------------------------------ overrides */

atf_error atf_problem_set_penalty(atf_problem *prob, const char *spec, char *err)
{
    if (!spec)
        return ATF_OK;
    if (strlen(spec) >= ATF_PENALTY_SPECLEN) {
        atf_errorf(err, "penalty '%.40s...': longer than %d characters", spec,
                   ATF_PENALTY_SPECLEN - 1);
        return ATF_E_USAGE;
    }
    atf_penalty pen;
    atf_error e = atf_penalty_parse(spec, &pen, err);
    if (e)
        return e;
    for (int l = 0; l < prob->nblocks; l++) {
        prob->blocks[l].penalty = pen;
        snprintf(prob->blocks[l].penalty_spec, ATF_PENALTY_SPECLEN, "%s", spec);
    }
    return ATF_OK;
}

void atf_problem_set_structure(atf_problem *prob, atf_structure s)
{
    if ((int)s < 0)
        return;
    for (int l = 0; l < prob->nblocks; l++)
        prob->blocks[l].structure = s;
}

int64_t atf_problem_nvars(const atf_problem *prob)
{
    int64_t n = 0;
    for (int l = 0; l < prob->nblocks; l++)
        n += (int64_t)prob->blocks[l].rows * prob->blocks[l].cols;
    return n;
}
