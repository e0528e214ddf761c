/* result.c — results in memory: status and structure names, allocation, the fit check and factor
 * recovery (docs/math.md §5–6: singular values of each B and the eq. 15 split d = s1·σ·s2). */
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf_result.h"
#include "result_internal.h"

/* ------------------------------------------------------------------ status */

static const char *const status_names[] = {"solved", "max_iterations", "infeasible",
                                           "interrupted", "numerical_error"};
#define NSTATUS (int)(sizeof status_names / sizeof status_names[0])

const char *atf_status_name(atf_status s)
{
    return ((int)s >= 0 && (int)s < NSTATUS) ? status_names[s] : "unknown";
}

atf_error atf_status_parse(const char *name, atf_status *s)
{
    for (int j = 0; j < NSTATUS; j++) {
        if (strcmp(name, status_names[j]) == 0) {
            *s = (atf_status)j;
            return ATF_OK;
        }
    }
    return ATF_E_INPUT;
}

/* ------------------------------------------------------------------ structures */

static const char *const structure_names[] = {"layer", "diagonal", "full"};
#define NSTRUCTURE (int)(sizeof structure_names / sizeof structure_names[0])

const char *atf_structure_name(atf_global_structure s)
{
    return ((int)s >= 0 && (int)s < NSTRUCTURE) ? structure_names[s] : "unknown";
}

atf_error atf_structure_parse(const char *name, atf_global_structure *s)
{
    for (int j = 0; name && j < NSTRUCTURE; j++) {
        if (strcmp(name, structure_names[j]) == 0) {
            *s = (atf_global_structure)j;
            return ATF_OK;
        }
    }
    return ATF_E_INPUT;
}

/* ------------------------------------------------------------------ layouts */

static const char *const layout_names[] = {"spectral", "entrywise", "vector"};

const char *atfr_layout_name(atf_factor_layout l)
{
    return ((int)l >= 0 && (int)l < 3) ? layout_names[l] : "unknown";
}

int atfr_layout_parse(const char *s, atf_factor_layout *out)
{
    for (int j = 0; j < 3; j++) {
        if (strcmp(s, layout_names[j]) == 0) {
            *out = (atf_factor_layout)j;
            return 0;
        }
    }
    return -1;
}

int64_t atfr_layout_k(atf_factor_layout l, int rows, int cols)
{
    switch (l) {
    case ATF_FACTORS_SPECTRAL: return rows < cols ? rows : cols;
    case ATF_FACTORS_ENTRYWISE: return (int64_t)rows * cols;
    case ATF_FACTORS_VECTOR: return 1;
    }
    return -1;
}

/* ------------------------------------------------------------------ allocation */

static void free_factors(atf_result_block *rb)
{
    free(rb->d);
    free(rb->s1);
    free(rb->sigma);
    free(rb->s2);
    free(rb->U);
    free(rb->V);
    rb->d = rb->s1 = rb->sigma = rb->s2 = rb->U = rb->V = NULL;
}

/* (Re)allocate the factor vectors for `layout` (U, V too when with_uv and spectral). */
static int set_layout(atf_result_block *rb, atf_factor_layout layout, int with_uv)
{
    free_factors(rb);
    int64_t k = atfr_layout_k(layout, rb->rows, rb->cols);
    rb->layout = layout;
    rb->k = (int)k;
    size_t n = k > 0 ? (size_t)k : 1;
    rb->d = calloc(n, sizeof *rb->d);
    rb->s1 = calloc(n, sizeof *rb->s1);
    rb->sigma = calloc(n, sizeof *rb->sigma);
    rb->s2 = calloc(n, sizeof *rb->s2);
    if (with_uv && layout == ATF_FACTORS_SPECTRAL) {
        rb->U = calloc((size_t)rb->rows * n, sizeof *rb->U);
        rb->V = calloc((size_t)rb->cols * n, sizeof *rb->V);
        if (!rb->U || !rb->V)
            return -1;
    }
    return (rb->d && rb->s1 && rb->sigma && rb->s2) ? 0 : -1;
}

atf_result *atfr_new(int nblocks)
{
    atf_result *res = calloc(1, sizeof *res);
    if (!res)
        return NULL;
    res->info.status = ATF_STATUS_SOLVED;
    res->structure = ATF_GLOBAL_LAYER;
    /* NaN marks "not computed"; the solver overwrites what it measures. */
    res->info.objective = res->info.primal_residual = res->info.dual_residual = NAN;
    res->info.constraint_residual = res->info.stationarity = res->info.ls_residual = NAN;
    res->info.loss_value = res->info.penalty_value = res->info.pg_residual = res->info.duality_gap = NAN;
    res->tol = res->eps_abs = res->rho = res->alpha = NAN; /* settings: not recorded */
    res->max_iter = res->reduce = res->adaptive_rho = -1;
    res->info.operator_passes = res->info.inner_iterations = res->info.fallback_steps = -1; /* not counted */
    res->nblocks = nblocks;
    res->blocks = calloc(nblocks > 0 ? (size_t)nblocks : 1, sizeof *res->blocks);
    if (!res->blocks) {
        free(res);
        return NULL;
    }
    return res;
}

atf_result *atf_result_alloc(const atf_problem *prob)
{
    atf_result *res = atfr_new(prob->nblocks);
    if (!res)
        return NULL;
    /* A result knows which problem it solves: the fingerprint read with the file, else that of
     * the content (problems built in code). */
    if (prob->fingerprint[0])
        memcpy(res->problem_fingerprint, prob->fingerprint, sizeof res->problem_fingerprint);
    else if (atf_problem_fingerprint(prob, res->problem_fingerprint) != ATF_OK) {
        atf_result_free(res);
        return NULL;
    }
    for (int l = 0; l < prob->nblocks; l++) {
        const atf_block *b = &prob->blocks[l];
        atf_result_block *rb = &res->blocks[l];
        memcpy(rb->name, b->name, sizeof rb->name);
        rb->rows = b->rows;
        rb->cols = b->cols;
        if (b->penalty_spec[0])
            memcpy(rb->penalty_spec, b->penalty_spec, sizeof rb->penalty_spec);
        else
            atf_penalty_format(&b->penalty, rb->penalty_spec, sizeof rb->penalty_spec);
        rb->B = calloc((size_t)b->rows * (size_t)b->cols, sizeof *rb->B);
        atf_factor_layout layout =
            b->structure == ATF_STRUCT_DIAGONAL ? ATF_FACTORS_ENTRYWISE : ATF_FACTORS_SPECTRAL;
        if (!rb->B || set_layout(rb, layout, 0) != 0) {
            atf_result_free(res);
            return NULL;
        }
    }
    return res;
}

void atf_result_free(atf_result *res)
{
    if (!res)
        return;
    for (int l = 0; l < res->nblocks && res->blocks; l++) {
        free(res->blocks[l].B);
        free_factors(&res->blocks[l]);
    }
    free(res->blocks);
    free(res);
}

/* ------------------------------------------------------------------ fit check */

atf_error atf_result_check(const atf_result *res, const atf_problem *prob, const char *res_name,
                           const char *prob_name, char *err)
{
    const char *what = res_name ? res_name : "result";
    char theirs[ATF_ERRLEN / 2];
    if (prob_name)
        snprintf(theirs, sizeof theirs, "%s's", prob_name);
    else
        snprintf(theirs, sizeof theirs, "the problem's");
    if (res->nblocks != prob->nblocks) {
        atf_errorf(err, "%s: /blocks: %d blocks but %s has %d", what, res->nblocks,
                   prob_name ? prob_name : "the problem", prob->nblocks);
        return ATF_E_INPUT;
    }
    for (int l = 0; l < res->nblocks; l++) {
        const atf_result_block *rb = &res->blocks[l];
        const atf_block *b = &prob->blocks[l];
        if (strncmp(rb->name, b->name, ATF_NAMELEN) != 0) {
            atf_errorf(err, "%s: /blocks: block %d is '%.*s' but %s block %d is '%s'", what, l,
                       ATF_NAMELEN, rb->name, theirs, l, b->name);
            return ATF_E_INPUT;
        }
        if (rb->rows != b->rows || rb->cols != b->cols) {
            atf_errorf(err, "%s: /blocks/%s/B: shape [%d, %d] but %s block is %d × %d", what,
                       b->name, rb->rows, rb->cols, theirs, b->rows, b->cols);
            return ATF_E_INPUT;
        }
    }
    return ATF_OK;
}

/* ------------------------------------------------------------------ factors */

static int same_penalty(const atf_penalty *a, const atf_penalty *b)
{
    const atf_omega *wa[2] = {&a->w1, &a->w2}, *wb[2] = {&b->w1, &b->w2};
    for (int j = 0; j < 2; j++) {
        if (wa[j]->family != wb[j]->family || wa[j]->scale != wb[j]->scale)
            return 0;
        if (wa[j]->family == ATF_FAMILY_POW && wa[j]->p != wb[j]->p)
            return 0;
    }
    return 1;
}

static void split_all(atf_result_block *rb, const atf_penalty *pen)
{
    for (int j = 0; j < rb->k; j++)
        atf_penalty_factors(pen, rb->d[j], &rb->s1[j], &rb->sigma[j], &rb->s2[j]);
}

static int finite_array(const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return 0;
    return 1;
}

static int svd_finite(const atf_result_block *rb, const double *VT)
{
    size_t k = (size_t)rb->k;
    return finite_array(rb->d, k) && finite_array(rb->U, (size_t)rb->rows * k) &&
           finite_array(VT, k * (size_t)rb->cols);
}

/* Thin SVD B = U diag(d) Vᵀ by divide and conquer; B itself is kept (a copy is factorised). */
static atf_error spectral_factors(atf_result_block *rb, const atf_penalty *pen, char *err)
{
    if (set_layout(rb, ATF_FACTORS_SPECTRAL, 1) != 0) {
        atf_errorf(err, "result block %s: out of memory for its factors", rb->name);
        return ATF_E_NOMEM;
    }
    int m = rb->rows, n = rb->cols, k = rb->k;
    double *A = malloc((size_t)m * n * sizeof *A), *VT = malloc((size_t)k * n * sizeof *VT);
    if (!A || !VT) {
        free(A);
        free(VT);
        atf_errorf(err, "result block %s: out of memory for its SVD", rb->name);
        return ATF_E_NOMEM;
    }
    memcpy(A, rb->B, (size_t)m * n * sizeof *A);
    lapack_int info = LAPACKE_dgesdd(LAPACK_ROW_MAJOR, 'S', m, n, A, n, rb->d, rb->U, k, VT, n);
    if (info != 0 || !svd_finite(rb, VT)) {
        /* divide and conquer can fail on large, strongly rank-deficient blocks: fall back to
         * the slower, robust QR-iteration SVD */
        double *superb = malloc((size_t)(k > 1 ? k : 2) * sizeof *superb);
        memcpy(A, rb->B, (size_t)m * n * sizeof *A);
        info = superb ? LAPACKE_dgesvd(LAPACK_ROW_MAJOR, 'S', 'S', m, n, A, n, rb->d, rb->U, k,
                                       VT, n, superb)
                      : -1;
        free(superb);
        if (info == 0 && !svd_finite(rb, VT))
            info = -1;
    }
    if (info == 0)
        for (int j = 0; j < k; j++)
            for (int c = 0; c < n; c++)
                rb->V[(size_t)c * k + j] = VT[(size_t)j * n + c];
    free(A);
    free(VT);
    if (info != 0) {
        atf_errorf(err, "result block %s: SVD of B failed (dgesdd and dgesvd, info = %d)", rb->name,
                   (int)info);
        return ATF_E_NUMERICAL;
    }
    split_all(rb, pen);
    return ATF_OK;
}

static atf_error entrywise_factors(atf_result_block *rb, const atf_penalty *pen, char *err)
{
    if (set_layout(rb, ATF_FACTORS_ENTRYWISE, 0) != 0) {
        atf_errorf(err, "result block %s: out of memory for its factors", rb->name);
        return ATF_E_NOMEM;
    }
    for (int j = 0; j < rb->k; j++)
        rb->d[j] = fabs(rb->B[j]);
    split_all(rb, pen);
    return ATF_OK;
}

static atf_error vector_factors(atf_result *res, const atf_problem *prob, char *err)
{
    const atf_penalty *pen = &prob->blocks[0].penalty;
    for (int l = 1; l < prob->nblocks; l++) {
        if (!same_penalty(pen, &prob->blocks[l].penalty)) {
            atf_errorf(err, "structure full: blocks %s and %s have different penalties, but all "
                       "parameters form one vector block with one penalty",
                       prob->blocks[0].name, prob->blocks[l].name);
            return ATF_E_USAGE;
        }
    }
    /* ‖β‖₂ over all blocks, accumulated by hypot to avoid overflow of the squares. */
    double norm = 0.0;
    for (int l = 0; l < res->nblocks; l++) {
        const atf_result_block *rb = &res->blocks[l];
        for (int64_t j = 0; j < (int64_t)rb->rows * rb->cols; j++)
            norm = hypot(norm, rb->B[j]);
    }
    for (int l = 0; l < res->nblocks; l++) {
        atf_result_block *rb = &res->blocks[l];
        if (set_layout(rb, ATF_FACTORS_VECTOR, 0) != 0) {
            atf_errorf(err, "result block %s: out of memory for its factors", rb->name);
            return ATF_E_NOMEM;
        }
        rb->d[0] = norm;
        split_all(rb, pen);
    }
    return ATF_OK;
}

atf_error atf_result_factors(atf_result *res, const atf_problem *prob, char *err)
{
    atf_error e = atf_result_check(res, prob, NULL, NULL, err);
    if (e)
        return e;
    for (int l = 0; l < res->nblocks; l++) {
        const atf_result_block *rb = &res->blocks[l];
        int64_t n = (int64_t)rb->rows * rb->cols;
        for (int64_t j = 0; j < n; j++) {
            if (!isfinite(rb->B[j])) {
                atf_errorf(err, "result block %s: B has non-finite value %g at [%lld, %lld]",
                           rb->name, rb->B[j], (long long)(j / rb->cols),
                           (long long)(j % rb->cols));
                return ATF_E_NUMERICAL;
            }
        }
    }
    if (res->structure == ATF_GLOBAL_FULL)
        return vector_factors(res, prob, err);
    int diagonal = res->structure == ATF_GLOBAL_DIAGONAL;
    for (int l = 0; l < res->nblocks && !e; l++) {
        const atf_block *b = &prob->blocks[l];
        /* the penalty the result was solved with (it may differ from the problem file's when
         * `atf solve --penalty` overrode it): recomputing factors must not change s1, s2 */
        atf_penalty pen = b->penalty;
        const char *spec = res->blocks[l].penalty_spec;
        if (spec[0] && strcmp(spec, b->penalty_spec) != 0 && atf_penalty_parse(spec, &pen, err))
            return ATF_E_INPUT;
        if (diagonal || b->structure == ATF_STRUCT_DIAGONAL)
            e = entrywise_factors(&res->blocks[l], &pen, err);
        else
            e = spectral_factors(&res->blocks[l], &pen, err);
    }
    return e;
}
