/* result_io.c — result files (docs/formats.md): validation, atomic writer, strict reader.
 *
 * Root attributes: format "atf-result", version 1, status, method, structure and the run's
 * scalar metrics (which may be NaN: "not computed"). Per block /blocks/<name>: attributes
 * index, rows, cols, penalty, factors (layout) and datasets B [rows, cols], d, s1, sigma, s2 [k]
 * and, for the spectral layout, optional U [rows, k] and V [cols, k]. */
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "atf_result.h"
#include "atf_version.h"
#include "h5io.h"
#include "problem_internal.h"
#include "result_internal.h"

#define RESULT_FORMAT "atf-result"
#define RESULT_VERSION 1

/* Scalar metrics: file attribute name and field. The first `required` are docs/formats.md's. */
typedef struct {
    const char *name;
    size_t offset;
} metric;

static const metric metrics[] = {
    {"objective", offsetof(atf_result, info.objective)},
    {"primal_residual", offsetof(atf_result, info.primal_residual)},
    {"dual_residual", offsetof(atf_result, info.dual_residual)},
    {"constraint_residual", offsetof(atf_result, info.constraint_residual)},
    {"stationarity", offsetof(atf_result, info.stationarity)},
    {"solve_seconds", offsetof(atf_result, info.solve_seconds)},
    {"ls_residual", offsetof(atf_result, info.ls_residual)},
    {"setup_seconds", offsetof(atf_result, info.setup_seconds)},
    {"projection_seconds", offsetof(atf_result, info.projection_seconds)},
    {"prox_seconds", offsetof(atf_result, info.prox_seconds)},
    {"other_seconds", offsetof(atf_result, info.other_seconds)},
    {"loss_value", offsetof(atf_result, info.loss_value)},
    {"penalty_value", offsetof(atf_result, info.penalty_value)},
    {"pg_residual", offsetof(atf_result, info.pg_residual)},
    {"duality_gap", offsetof(atf_result, info.duality_gap)},
};
#define NMETRICS (int)(sizeof metrics / sizeof metrics[0])
#define NREQUIRED 6

static double *metric_field(atf_result *res, int j)
{
    return (double *)((char *)res + metrics[j].offset);
}

static double metric_value(const atf_result *res, int j)
{
    return *(const double *)((const char *)res + metrics[j].offset);
}

/* ------------------------------------------------------------------ validation */

static atf_error check_vector(const char *what, const char *gpath, const char *name,
                              const double *x, int64_t n, char *err)
{
    char item[H5IO_PATHLEN + 16];
    snprintf(item, sizeof item, "%s/%s", gpath, name);
    if (!x) {
        atf_errorf(err, "%s: %s: missing (NULL array)", what, item);
        return ATF_E_INPUT;
    }
    return atfp_check_finite(what, item, 1, &n, x, err);
}

/* Singular values are nonnegative; spectral ones also descend (as LAPACK returns them). */
static atf_error check_d(const char *what, const char *gpath, const atf_result_block *rb,
                         char *err)
{
    for (int j = 0; j < rb->k; j++) {
        if (rb->d[j] < 0) {
            atf_errorf(err, "%s: %s/d: negative value %g at [%d]", what, gpath, rb->d[j], j);
            return ATF_E_INPUT;
        }
        if (rb->layout == ATF_FACTORS_SPECTRAL && j > 0 && rb->d[j] > rb->d[j - 1]) {
            atf_errorf(err, "%s: %s/d: not descending at [%d] (%g after %g)", what, gpath, j,
                       rb->d[j], rb->d[j - 1]);
            return ATF_E_INPUT;
        }
    }
    return ATF_OK;
}

static atf_error validate_block(const char *what, const atf_result_block *rb, char *err)
{
    atf_error e = atfp_check_name(what, rb->name, err);
    if (e)
        return e;
    char gpath[H5IO_PATHLEN];
    h5io_path(gpath, "/blocks/%s", rb->name);
    if ((e = atfp_check_block_size(what, gpath, rb->rows, rb->cols, err)))
        return e;
    atf_penalty pen;
    if (strnlen(rb->penalty_spec, ATF_PENALTY_SPECLEN) >= ATF_PENALTY_SPECLEN) {
        atf_errorf(err, "%s: %s attribute 'penalty': not terminated", what, gpath);
        return ATF_E_INPUT;
    }
    if ((e = atfp_parse_penalty(what, gpath, rb->penalty_spec, &pen, err)))
        return e;
    int64_t n = (int64_t)rb->rows * rb->cols, k = atfr_layout_k(rb->layout, rb->rows, rb->cols);
    if (k < 0 || rb->k != k) {
        atf_errorf(err, "%s: %s: %d factor values but the %s layout of a %d × %d block has %lld",
                   what, gpath, rb->k, atfr_layout_name(rb->layout), rb->rows, rb->cols,
                   (long long)k);
        return ATF_E_INPUT;
    }
    if ((e = check_vector(what, gpath, "B", rb->B, n, err)) ||
        (e = check_vector(what, gpath, "d", rb->d, k, err)) ||
        (e = check_vector(what, gpath, "s1", rb->s1, k, err)) ||
        (e = check_vector(what, gpath, "sigma", rb->sigma, k, err)) ||
        (e = check_vector(what, gpath, "s2", rb->s2, k, err)) ||
        (e = check_d(what, gpath, rb, err)))
        return e;
    if ((rb->U || rb->V) && rb->layout != ATF_FACTORS_SPECTRAL) {
        atf_errorf(err, "%s: %s: U and V exist only for the spectral layout, not %s", what,
                   gpath, atfr_layout_name(rb->layout));
        return ATF_E_INPUT;
    }
    if (rb->U && (e = check_vector(what, gpath, "U", rb->U, rb->rows * k, err)))
        return e;
    if (rb->V && (e = check_vector(what, gpath, "V", rb->V, rb->cols * k, err)))
        return e;
    return ATF_OK;
}

/* A method's name as the solver's table spells them: lower-case letters, digits and '-', not
 * empty (which methods exist is the solver's business, not the file's: a result of a method
 * this build does not know still reads). */
static int method_name_ok(const char *name, size_t len)
{
    size_t n = strnlen(name, len);
    if (n == 0 || n == len)
        return 0;
    for (size_t j = 0; j < n; j++)
        if (!((name[j] >= 'a' && name[j] <= 'z') || (name[j] >= '0' && name[j] <= '9') ||
              name[j] == '-'))
            return 0;
    return 1;
}

static atf_error validate_result(const atf_result *res, const char *what, char *err)
{
    if ((int)res->info.status < 0 || (int)res->info.status > ATF_STATUS_NUMERICAL_ERROR) {
        atf_errorf(err, "%s: / attribute 'status': unknown status %d", what, (int)res->info.status);
        return ATF_E_INPUT;
    }
    if (!method_name_ok(res->info.method, sizeof res->info.method)) {
        atf_errorf(err, "%s: / attribute 'method': '%.*s' is not a method's name", what,
                   (int)sizeof res->info.method, res->info.method);
        return ATF_E_INPUT;
    }
    if (!strcmp(atf_structure_name(res->structure), "unknown")) {
        atf_errorf(err, "%s: / attribute 'structure': unknown structure %d", what,
                   (int)res->structure);
        return ATF_E_INPUT;
    }
    if (res->info.iterations < 0) {
        atf_errorf(err, "%s: / attribute 'iterations': %d is negative", what, res->info.iterations);
        return ATF_E_INPUT;
    }
    if (res->nblocks <= 0 || !res->blocks) {
        atf_errorf(err, "%s: /blocks: no blocks", what);
        return ATF_E_INPUT;
    }
    atf_error e;
    for (int l = 0; l < res->nblocks; l++) {
        if ((e = validate_block(what, &res->blocks[l], err)))
            return e;
        for (int j = 0; j < l; j++) {
            if (strcmp(res->blocks[j].name, res->blocks[l].name) == 0) {
                atf_errorf(err, "%s: /blocks/%s: duplicate block name", what, res->blocks[l].name);
                return ATF_E_INPUT;
            }
        }
    }
    return ATF_OK;
}

/* ------------------------------------------------------------------ writing */

static void put_block(h5io_out *o, const atf_result_block *rb, int index)
{
    char gpath[H5IO_PATHLEN], path[H5IO_PATHLEN];
    h5io_path(gpath, "/blocks/%s", rb->name);
    h5io_put_group(o, gpath);
    h5io_put_int(o, gpath, "index", index);
    h5io_put_int(o, gpath, "rows", rb->rows);
    h5io_put_int(o, gpath, "cols", rb->cols);
    h5io_put_string(o, gpath, "penalty", rb->penalty_spec);
    h5io_put_string(o, gpath, "factors", atfr_layout_name(rb->layout));
    int64_t shape[2] = {rb->rows, rb->cols}, k = rb->k;
    h5io_path(path, "%s/B", gpath);
    h5io_put_doubles(o, path, 2, shape, rb->B);
    const char *const names[4] = {"d", "s1", "sigma", "s2"};
    const double *const vecs[4] = {rb->d, rb->s1, rb->sigma, rb->s2};
    for (int j = 0; j < 4; j++) {
        h5io_path(path, "%s/%s", gpath, names[j]);
        h5io_put_doubles(o, path, 1, &k, vecs[j]);
    }
    int64_t ud[2] = {rb->rows, k}, vd[2] = {rb->cols, k};
    h5io_path(path, "%s/U", gpath);
    if (rb->U)
        h5io_put_doubles(o, path, 2, ud, rb->U);
    h5io_path(path, "%s/V", gpath);
    if (rb->V)
        h5io_put_doubles(o, path, 2, vd, rb->V);
}

/* Provenance and settings: only what was recorded ("" / NaN / negative: not recorded). */
static void put_run(h5io_out *o, const atf_result *res)
{
    h5io_put_string(o, "/", "atf_version", atf_version());
    h5io_put_string(o, "/", "blas", atf_blas_name());
    const struct {
        const char *name, *value;
    } strings[] = {{"problem_fingerprint", res->problem_fingerprint}, {"loss", res->loss},
                   {"penalty_override", res->penalty_override}, {"command", res->command},
                   {"method_note", res->info.method_note}, {"linsys", res->info.linsys}};
    for (size_t j = 0; j < sizeof strings / sizeof strings[0]; j++)
        if (strings[j].value[0])
            h5io_put_string(o, "/", strings[j].name, strings[j].value);
    const struct {
        const char *name;
        double value;
    } numbers[] = {{"tol", res->tol}, {"eps_abs", res->eps_abs}, {"rho", res->rho},
                   {"alpha", res->alpha}};
    for (size_t j = 0; j < sizeof numbers / sizeof numbers[0]; j++)
        if (!isnan(numbers[j].value))
            h5io_put_double(o, "/", numbers[j].name, numbers[j].value);
    const struct {
        const char *name;
        int value;
    } ints[] = {{"max_iter", res->max_iter}, {"reduce", res->reduce},
                {"adaptive_rho", res->adaptive_rho}, {"operator_passes", res->info.operator_passes},
                {"inner_iterations", res->info.inner_iterations},
                {"fallback_steps", res->info.fallback_steps}};
    for (size_t j = 0; j < sizeof ints / sizeof ints[0]; j++)
        if (ints[j].value >= 0)
            h5io_put_int(o, "/", ints[j].name, ints[j].value);
}

static void put_result(h5io_out *o, const void *ctx)
{
    const atf_result *res = ctx;
    h5io_put_string(o, "/", "format", RESULT_FORMAT);
    h5io_put_int(o, "/", "version", RESULT_VERSION);
    h5io_put_string(o, "/", "status", atf_status_name(res->info.status));
    h5io_put_string(o, "/", "method", res->info.method);
    h5io_put_string(o, "/", "structure", atf_structure_name(res->structure));
    h5io_put_int(o, "/", "iterations", res->info.iterations);
    for (int j = 0; j < NMETRICS; j++)
        h5io_put_double(o, "/", metrics[j].name, metric_value(res, j));
    put_run(o, res);
    h5io_put_group(o, "/blocks");
    for (int l = 0; l < res->nblocks; l++)
        put_block(o, &res->blocks[l], l);
}

atf_error atf_result_write(const char *path, const atf_result *res, char *err)
{
    if (!res) {
        atf_errorf(err, "%s: no result to write (NULL)", path);
        return ATF_E_INPUT;
    }
    atf_error e = validate_result(res, path, err);
    return e ? e : h5io_write_file(path, put_result, res, err);
}

/* ------------------------------------------------------------------ reading */

static atf_error read_header(const h5io_reader *rd, atf_result *res)
{
    char status[32];
    int64_t iterations;
    atf_error e;
    if ((e = h5io_check_format(rd->f, rd->fname, RESULT_FORMAT, rd->err)) ||
        (e = h5io_check_version(rd->f, rd->fname, RESULT_VERSION, rd->err)) ||
        (e = h5io_attr_string(rd->f, rd->fname, "/", "status", status, sizeof status, rd->err)))
        return e;
    if (atf_status_parse(status, &res->info.status) != ATF_OK) {
        atf_errorf(rd->err, "%s: / attribute 'status': unknown status '%s'", rd->fname, status);
        return ATF_E_INPUT;
    }
    char structure[16];
    if ((e = h5io_attr_string(rd->f, rd->fname, "/", "method", res->info.method,
                              sizeof res->info.method, rd->err)) ||
        (e = h5io_attr_string_or(rd->f, rd->fname, "/", "structure", "layer", structure,
                                 sizeof structure, rd->err)) ||
        (e = h5io_attr_int(rd->f, rd->fname, "/", "iterations", &iterations, rd->err)))
        return e;
    if (!method_name_ok(res->info.method, sizeof res->info.method)) {
        atf_errorf(rd->err, "%s: / attribute 'method': '%s' is not a method's name (lower-case "
                   "letters, digits and '-')", rd->fname, res->info.method);
        return ATF_E_INPUT;
    }
    if (atf_structure_parse(structure, &res->structure) != ATF_OK) {
        atf_errorf(rd->err, "%s: / attribute 'structure': '%s' is not layer, diagonal or full",
                   rd->fname, structure);
        return ATF_E_INPUT;
    }
    if (iterations < 0 || iterations > INT_MAX) {
        atf_errorf(rd->err, "%s: / attribute 'iterations': %lld is not a count", rd->fname,
                   (long long)iterations);
        return ATF_E_INPUT;
    }
    res->info.iterations = (int)iterations;
    for (int j = 0; j < NMETRICS && !e; j++) {
        if (j >= NREQUIRED && !h5io_attr_exists(rd->f, "/", metrics[j].name))
            continue; /* keeps atfr_new's default */
        e = h5io_attr_double(rd->f, rd->fname, "/", metrics[j].name, metric_field(res, j),
                             rd->err);
    }
    return e;
}

/* Optional integer setting (≥ 0 when recorded; -1 when absent). */
static atf_error read_setting_int(const h5io_reader *rd, const char *name, int *out)
{
    if (!h5io_attr_exists(rd->f, "/", name))
        return ATF_OK;
    int64_t v;
    atf_error e = h5io_attr_int(rd->f, rd->fname, "/", name, &v, rd->err);
    if (!e && (v < 0 || v > INT_MAX)) {
        atf_errorf(rd->err, "%s: / attribute '%s': %lld is not a count", rd->fname, name,
                   (long long)v);
        e = ATF_E_INPUT;
    }
    if (!e)
        *out = (int)v;
    return e;
}

/* Provenance and settings: all optional (files of earlier versions have none). */
static atf_error read_run(const h5io_reader *rd, atf_result *res)
{
    const struct {
        const char *name;
        char *buf;
        size_t len;
    } strings[] = {
        {"problem_fingerprint", res->problem_fingerprint, sizeof res->problem_fingerprint},
        {"loss", res->loss, sizeof res->loss},
        {"penalty_override", res->penalty_override, sizeof res->penalty_override},
        {"atf_version", res->atf_version, sizeof res->atf_version},
        {"command", res->command, sizeof res->command},
        {"method_note", res->info.method_note, sizeof res->info.method_note},
        {"linsys", res->info.linsys, sizeof res->info.linsys}};
    atf_error e = ATF_OK;
    for (size_t j = 0; j < sizeof strings / sizeof strings[0] && !e; j++)
        e = h5io_attr_string_or(rd->f, rd->fname, "/", strings[j].name, "", strings[j].buf,
                                strings[j].len, rd->err);
    const struct {
        const char *name;
        double *v;
    } numbers[] = {{"tol", &res->tol}, {"eps_abs", &res->eps_abs}, {"rho", &res->rho},
                   {"alpha", &res->alpha}};
    for (size_t j = 0; j < sizeof numbers / sizeof numbers[0] && !e; j++)
        if (h5io_attr_exists(rd->f, "/", numbers[j].name))
            e = h5io_attr_double(rd->f, rd->fname, "/", numbers[j].name, numbers[j].v, rd->err);
    if (!e)
        e = read_setting_int(rd, "max_iter", &res->max_iter);
    if (!e)
        e = read_setting_int(rd, "reduce", &res->reduce);
    if (!e)
        e = read_setting_int(rd, "adaptive_rho", &res->adaptive_rho);
    if (!e)
        e = read_setting_int(rd, "operator_passes", &res->info.operator_passes);
    if (!e)
        e = read_setting_int(rd, "inner_iterations", &res->info.inner_iterations);
    if (!e)
        e = read_setting_int(rd, "fallback_steps", &res->info.fallback_steps);
    return e;
}

static atf_error read_array(const h5io_reader *rd, const char *gpath, const char *name, int rank,
                            const int64_t *dims, const char *const *what, double **out)
{
    char path[H5IO_PATHLEN];
    h5io_path(path, "%s/%s", gpath, name);
    return h5io_read_checked(rd->f, rd->fname, path, rank, dims, what, out, rd->err);
}

static atf_error read_block(const h5io_reader *rd, atf_result_block *rb, int64_t *index)
{
    char gpath[H5IO_PATHLEN], layout[32];
    h5io_path(gpath, "/blocks/%s", rb->name);
    atf_error e = h5io_require_group(rd->f, rd->fname, gpath, rd->err);
    if (!e)
        e = h5io_attr_size(rd->f, rd->fname, gpath, "rows", &rb->rows, rd->err);
    if (!e)
        e = h5io_attr_size(rd->f, rd->fname, gpath, "cols", &rb->cols, rd->err);
    if (!e)
        e = atfp_check_block_size(rd->fname, gpath, rb->rows, rb->cols, rd->err);
    if (!e)
        e = h5io_attr_string(rd->f, rd->fname, gpath, "penalty", rb->penalty_spec,
                             sizeof rb->penalty_spec, rd->err);
    if (!e)
        e = h5io_attr_string_or(rd->f, rd->fname, gpath, "factors", "spectral", layout,
                                sizeof layout, rd->err);
    if (!e && h5io_attr_exists(rd->f, gpath, "index"))
        e = h5io_attr_int(rd->f, rd->fname, gpath, "index", index, rd->err);
    if (e)
        return e;
    if (atfr_layout_parse(layout, &rb->layout) != 0) {
        atf_errorf(rd->err, "%s: %s attribute 'factors': unknown layout '%s' (expected "
                   "spectral, entrywise or vector)", rd->fname, gpath, layout);
        return ATF_E_INPUT;
    }
    int64_t k = atfr_layout_k(rb->layout, rb->rows, rb->cols);
    rb->k = (int)k;
    int64_t bd[2] = {rb->rows, rb->cols}, ud[2] = {rb->rows, k}, vd[2] = {rb->cols, k};
    static const char *const bnames[2] = {"rows", "cols"};
    static const char *const unames[2] = {"rows", "k"};
    static const char *const vnames[2] = {"cols", "k"};
    static const char *const knames[1] = {"k (from rows, cols and factors)"};
    if ((e = read_array(rd, gpath, "B", 2, bd, bnames, &rb->B)) ||
        (e = read_array(rd, gpath, "d", 1, &k, knames, &rb->d)) ||
        (e = read_array(rd, gpath, "s1", 1, &k, knames, &rb->s1)) ||
        (e = read_array(rd, gpath, "sigma", 1, &k, knames, &rb->sigma)) ||
        (e = read_array(rd, gpath, "s2", 1, &k, knames, &rb->s2)))
        return e;
    char path[H5IO_PATHLEN];
    h5io_path(path, "%s/U", gpath);
    if (h5io_exists(rd->f, path) && (e = read_array(rd, gpath, "U", 2, ud, unames, &rb->U)))
        return e;
    h5io_path(path, "%s/V", gpath);
    if (h5io_exists(rd->f, path) && (e = read_array(rd, gpath, "V", 2, vd, vnames, &rb->V)))
        return e;
    if (!rb->U != !rb->V) {
        atf_errorf(rd->err, "%s: %s/%s: missing (U and V come together)", rd->fname, gpath,
                   rb->U ? "V" : "U");
        return ATF_E_INPUT;
    }
    return ATF_OK;
}

/* Block order: by the `index` attribute when every block has one, else by name. */
typedef struct {
    int64_t index;
    atf_result_block block;
} indexed_block;

static int by_index(const void *a, const void *b)
{
    int64_t ia = ((const indexed_block *)a)->index, ib = ((const indexed_block *)b)->index;
    return (ia > ib) - (ia < ib);
}

static atf_error read_blocks(const h5io_reader *rd, atf_result *res)
{
    atf_error e = h5io_require_group(rd->f, rd->fname, "/blocks", rd->err);
    if (e)
        return e;
    hid_t g = H5Gopen2(rd->f, "/blocks", H5P_DEFAULT);
    H5G_info_t info;
    herr_t st = g >= 0 ? H5Gget_info(g, &info) : -1;
    if (st < 0 || info.nlinks == 0 || info.nlinks > INT_MAX) {
        if (g >= 0)
            H5Gclose(g);
        atf_errorf(rd->err, "%s: /blocks: %s", rd->fname,
                   st < 0 ? "cannot list its members (corrupt file)" : "no blocks");
        return ATF_E_INPUT;
    }
    int n = (int)info.nlinks;
    indexed_block *ib = calloc((size_t)n, sizeof *ib);
    if (!ib) {
        H5Gclose(g);
        atf_errorf(rd->err, "%s: /blocks: out of memory", rd->fname);
        return ATF_E_NOMEM;
    }
    int indexed = 0;
    for (int l = 0; l < n && !e; l++) {
        char name[H5IO_PATHLEN];
        ssize_t len = H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, (hsize_t)l, name,
                                         sizeof name, H5P_DEFAULT);
        if (len < 0 || len >= ATF_NAMELEN) {
            atf_errorf(rd->err, "%s: /blocks: member %d: %s", rd->fname, l,
                       len < 0 ? "cannot read its name (corrupt file)" : "name too long");
            e = ATF_E_INPUT;
            break;
        }
        memcpy(ib[l].block.name, name, (size_t)len + 1);
        ib[l].index = INT64_MIN;
        e = read_block(rd, &ib[l].block, &ib[l].index);
        indexed += ib[l].index != INT64_MIN;
    }
    H5Gclose(g);
    if (!e && indexed == n) {
        qsort(ib, (size_t)n, sizeof *ib, by_index);
        for (int l = 1; l < n && !e; l++) {
            if (ib[l].index == ib[l - 1].index) {
                atf_errorf(rd->err, "%s: /blocks/%s attribute 'index': %lld is also the index "
                           "of block %s", rd->fname, ib[l].block.name, (long long)ib[l].index,
                           ib[l - 1].block.name);
                e = ATF_E_INPUT;
            }
        }
    }
    /* Hand the blocks (also partial ones, for atf_result_free) to the result by compacting the
     * array in place: element l moves down from offset l·sizeof *ib + 8 to l·sizeof *blocks. */
    atf_result_block *blocks = (atf_result_block *)(void *)ib;
    for (int l = 0; l < n; l++)
        memmove(&blocks[l], &ib[l].block, sizeof blocks[l]);
    free(res->blocks);
    res->blocks = blocks;
    res->nblocks = n;
    return e;
}

static atf_error read_result(const h5io_reader *rd, void *ctx)
{
    atf_result **out = ctx;
    atf_result *res = atfr_new(0);
    if (!res) {
        atf_errorf(rd->err, "%s: out of memory", rd->fname);
        return ATF_E_NOMEM;
    }
    atf_error e = read_header(rd, res);
    if (!e)
        e = read_run(rd, res);
    if (!e)
        e = read_blocks(rd, res);
    if (!e)
        e = validate_result(res, rd->fname, rd->err);
    if (e) {
        atf_result_free(res);
        return e;
    }
    *out = res;
    return ATF_OK;
}

atf_error atf_result_read(const char *path, atf_result **out, char *err)
{
    *out = NULL;
    return h5io_read_file(path, read_result, out, err);
}

/* ------------------------------------------------------------------ result ↔ problem */

atf_error atf_result_match(const atf_result *res, const char *res_path, const atf_problem *prob,
                           const char *prob_path, char *note, char *err)
{
    note[0] = '\0';
    if (res->problem_fingerprint[0] && prob->fingerprint[0] &&
        strcmp(res->problem_fingerprint, prob->fingerprint) != 0) {
        atf_errorf(err, "%s: / attribute 'problem_fingerprint': %s, but %s has fingerprint %s: "
                   "the result was computed from another problem", res_path,
                   res->problem_fingerprint, prob_path, prob->fingerprint);
        return ATF_E_INPUT;
    }
    if (!res->problem_fingerprint[0])
        atf_errorf(note, "note: %s has no problem_fingerprint (written by an earlier atf): "
                   "cannot check that it was computed from %s", res_path, prob_path);
    return ATF_OK;
}

void atf_problem_note(const atf_problem *prob, const char *prob_path, char *note)
{
    note[0] = '\0';
    if (prob->fingerprint_state == ATF_FINGERPRINT_DIFFERS)
        atf_errorf(note, "note: %s: its stored fingerprint does not match its content (edited "
                   "after atf wrote it); its content's fingerprint %s is used", prob_path,
                   prob->fingerprint);
}
