/* h5_read.c — the HDF5 readers.
 *
 * The readers of h5io.h and the small helpers every file of problems/io/ uses.
 *
 *   h5io_path, h5io_format_shape, h5io_format_index    paths and "[a, b]" for messages
 *   h5io_exists, h5io_attr_exists, h5io_require_group  links and groups (existence from the
 *                                                      lists atf-h5check makes: h5_walk.h)
 *   h5io_attr_int / _double / _size / _string / _string_or, h5io_check_format,
 *   h5io_check_version                                 scalar attributes
 *   h5io_shape, h5io_expect_dim, h5io_check_shape      the shape of a numeric dataset
 *   h5io_read_doubles / _checked / _floats / _rows / _int64s / _ints
 *                                                      the values of a numeric dataset
 *   h5io__strong_close_fapl, h5io__transfer_rows       shared with h5_driver.c, h5_write.c
 *                                                      (h5io_private.h)
 *   h5io__lists_begin, _end                            the lists of names kept during one read
 *                                                      (h5_file.c)
 *
 * Input: a file open for reading (hid_t) that atf-h5check has read without a failure
 * (h5io_read_file, h5_file.c), the file's name for messages, absolute HDF5 paths (an attribute
 * is named by its object's path and its name) and the caller's error buffer err (ATF_ERRLEN
 * bytes). Shapes passed in must already have been checked (h5io_shape) where a function says so.
 * Nothing here opens or closes a file.
 *
 * Ownership: an array returned through `out` (h5io_read_doubles, _checked, _int64s, _ints) is
 * malloc'ed here and belongs to the caller, who frees it; *out is NULL on every failure.
 * h5io_read_floats and h5io_read_rows fill the caller's buffer. Every HDF5 identifier opened here
 * is closed before the function returns, on every path. The lists of names kept during a read
 * are freed by h5io__lists_end.
 *
 * Failure: ATF_E_INPUT with one line "FILE: ITEM: reason" in err for a missing item, a wrong type
 * class, rank or extent, a value out of range or not finite (the first bad one named by its index
 * in the whole dataset) and a read libhdf5 refuses ("truncated or corrupt file"); ATF_E_NOMEM if
 * an array cannot be allocated. Nothing is printed: h5_file.c turns HDF5's error printer off for
 * the duration of a read. */
#include "h5io_private.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "h5_walk.h"

int h5io_path(char *buf, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, H5IO_PATHLEN, fmt, ap);
    va_end(ap);
    return (n < 0 || n >= H5IO_PATHLEN) ? -1 : 0;
}

void h5io_format_shape(char *buf, size_t len, int rank, const int64_t *dims)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int a = 0; a < rank && used < len; a++) {
        int n = snprintf(buf + used, len - used, "%s%lld", a ? ", " : "[", (long long)dims[a]);
        if (n < 0)
            return;
        used += (size_t)n;
    }
    if (used < len)
        snprintf(buf + used, len - used, rank ? "]" : "[]");
}

void h5io_format_index(char *buf, size_t len, int rank, const int64_t *dims, int64_t flat)
{
    int64_t idx[H5IO_MAXRANK];
    for (int a = rank - 1; a >= 0; a--) {
        idx[a] = dims[a] > 0 ? flat % dims[a] : 0;
        flat = dims[a] > 0 ? flat / dims[a] : 0;
    }
    h5io_format_shape(buf, len, rank, idx);
}

/* The file-access list every file is opened or created with (h5io_private.h). */
hid_t h5io__strong_close_fapl(void)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl >= 0 && H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG) < 0) {
        H5Pclose(fapl);
        return -1;
    }
    return fapl;
}

/* A name looked for among those a walk lists (h5_walk.h): the first len bytes of want. */
typedef struct {
    const char *want;
    size_t len;
} name_query;

static int is_wanted(const char *name, void *ctx)
{
    const name_query *q = ctx;
    return strlen(name) == q->len && memcmp(name, q->want, q->len) == 0;
}

/* ---- the lists of the file being read
 * A reader asks about the same groups and objects again and again (each attribute of a block
 * lists "/" and "/blocks" once more). Within h5io_read_file (h5io__lists_begin ... _end,
 * h5_file.c), each list is therefore made once, at its first question, by a whole walk (the
 * checker's own, h5_walk.h), and kept until the file is closed. Per thread: a read runs in its
 * caller's thread. */
typedef struct kept_list {
    struct kept_list *next;
    int attrs;         /* the attributes of the object path (1), the members of the group (0) */
    h5walk_list names; /* as far as the walk went */
    char path[];
} kept_list;

static _Thread_local h5io__lists kept = {-1, NULL};

h5io__lists h5io__lists_begin(hid_t file)
{
    h5io__lists outer = kept;
    kept.file = file;
    kept.lists = NULL;
    return outer;
}

void h5io__lists_end(h5io__lists outer)
{
    for (kept_list *k = kept.lists, *next; k; k = next) {
        next = k->next;
        h5walk_list_free(&k->names);
        free(k);
    }
    kept = outer;
}

/* The kept list of path, made now if need be; NULL outside a read of file, or out of memory. */
static const h5walk_list *kept_list_of(hid_t file, const char *path, int attrs)
{
    if (file != kept.file)
        return NULL;
    for (kept_list *k = kept.lists; k; k = k->next)
        if (k->attrs == attrs && strcmp(k->path, path) == 0)
            return k->names.nomem ? NULL : &k->names;
    size_t len = strlen(path) + 1;
    kept_list *k = calloc(1, sizeof *k + len);
    if (!k)
        return NULL;
    memcpy(k->path, path, len);
    k->attrs = attrs;
    if (attrs)
        h5walk_attrs(file, path, h5walk_keep, &k->names);
    else
        h5walk_links(file, path, h5walk_keep, &k->names, NULL);
    k->next = kept.lists;
    kept.lists = k;
    return k->names.nomem ? NULL : &k->names;
}

/* 1 if the first len bytes of name are one of the members of the group path (attrs = 0) or of
 * the attributes of the object path (attrs = 1), as the checker's walk lists them. */
static int listed(hid_t file, const char *path, int attrs, const char *name, size_t len)
{
    name_query q = {name, len};
    const h5walk_list *l = kept_list_of(file, path, attrs);
    if (!l) /* no list kept: a walk that stops at the name */
        return (attrs ? h5walk_attrs(file, path, is_wanted, &q)
                      : h5walk_links(file, path, is_wanted, &q, NULL)) == H5WALK_STOPPED;
    for (size_t i = 0; i < l->n; i++)
        if (is_wanted(l->names[i], &q))
            return 1;
    return 0;
}

int h5io_exists(hid_t file, const char *path)
{
    /* Each component is looked for among the members of its group as atf-h5check listed them
     * (h5_walk.h), never asked of libhdf5 by name: a name the file lacks reaches no look-up the
     * checker did not make (issue 46). */
    char group[H5IO_PATHLEN];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof group || path[0] != '/')
        return 0;
    if (strcmp(path, "/") == 0)
        return 1;
    for (size_t start = 1, i = 1; i <= n; i++) {
        if (path[i] != '/' && path[i] != '\0')
            continue;
        if (i == start) /* an empty component: "//" or a trailing "/" */
            return 0;
        size_t glen = start > 1 ? start - 1 : 1; /* "/" or the path up to the component */
        memcpy(group, path, glen);
        group[glen] = '\0';
        if (!listed(file, group, 0, path + start, i - start))
            return 0;
        start = i + 1;
    }
    return 1;
}

int h5io_attr_exists(hid_t file, const char *obj, const char *name)
{
    /* from the object's list of attributes, as the checker listed it (not H5Aexists_by_name) */
    return h5io_exists(file, obj) && listed(file, obj, 1, name, strlen(name));
}

atf_error h5io_require_group(hid_t file, const char *fname, const char *path, char *err)
{
    if (!h5io_exists(file, path)) {
        atf_errorf(err, "%s: %s: missing (required group)", fname, path);
        return ATF_E_INPUT;
    }
    hid_t g = H5Gopen2(file, path, H5P_DEFAULT);
    if (g < 0) {
        atf_errorf(err, "%s: %s: not a group", fname, path);
        return ATF_E_INPUT;
    }
    H5Gclose(g);
    return ATF_OK;
}

/* Open a scalar (or one-element) attribute; on failure write the message and return -1. */
static hid_t open_scalar_attr(hid_t file, const char *fname, const char *obj, const char *name,
                              char *err)
{
    if (!h5io_attr_exists(file, obj, name)) {
        atf_errorf(err, "%s: %s attribute '%s': missing", fname, obj, name);
        return -1;
    }
    hid_t a = H5Aopen_by_name(file, obj, name, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0) {
        atf_errorf(err, "%s: %s attribute '%s': cannot open (corrupt file)", fname, obj, name);
        return -1;
    }
    hid_t space = H5Aget_space(a);
    hssize_t npoints = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
    if (space >= 0)
        H5Sclose(space);
    if (npoints != 1) {
        atf_errorf(err, "%s: %s attribute '%s': expected a single value, found %lld", fname, obj,
                   name, (long long)npoints);
        H5Aclose(a);
        return -1;
    }
    return a;
}

/* Open a scalar attribute of integer or float type; otherwise write "expected WHAT" and
 * return -1. */
static hid_t open_numeric_attr(hid_t file, const char *fname, const char *obj, const char *name,
                               const char *what, H5T_class_t *cls, char *err)
{
    hid_t a = open_scalar_attr(file, fname, obj, name, err);
    if (a < 0)
        return -1;
    hid_t t = H5Aget_type(a);
    *cls = t >= 0 ? H5Tget_class(t) : H5T_NO_CLASS;
    if (t >= 0)
        H5Tclose(t);
    if (*cls != H5T_INTEGER && *cls != H5T_FLOAT) {
        atf_errorf(err, "%s: %s attribute '%s': expected %s, found a non-numeric type", fname,
                   obj, name, what);
        H5Aclose(a);
        return -1;
    }
    return a;
}

/* Read the open attribute a as mtype into v and close it. */
static atf_error read_attr_as(hid_t a, hid_t mtype, void *v, const char *fname, const char *obj,
                              const char *name, char *err)
{
    herr_t st = H5Aread(a, mtype, v);
    H5Aclose(a);
    if (st < 0) {
        atf_errorf(err, "%s: %s attribute '%s': cannot read (corrupt file)", fname, obj, name);
        return ATF_E_INPUT;
    }
    return ATF_OK;
}

atf_error h5io_attr_int(hid_t file, const char *fname, const char *obj, const char *name,
                        int64_t *v, char *err)
{
    H5T_class_t c;
    hid_t a = open_numeric_attr(file, fname, obj, name, "an integer", &c, err);
    if (a < 0)
        return ATF_E_INPUT;
    if (c == H5T_INTEGER)
        return read_attr_as(a, H5T_NATIVE_INT64, v, fname, obj, name, err);
    double x = NAN;
    atf_error e = read_attr_as(a, H5T_NATIVE_DOUBLE, &x, fname, obj, name, err);
    if (e)
        return e;
    /* h5py users may store sizes as floats: accept exactly integral values only. */
    if (!(isfinite(x) && x == floor(x) && fabs(x) < 9.007199254740992e15)) {
        atf_errorf(err, "%s: %s attribute '%s': expected an integer, found %g", fname, obj, name,
                   x);
        return ATF_E_INPUT;
    }
    *v = (int64_t)x;
    return ATF_OK;
}

atf_error h5io_attr_double(hid_t file, const char *fname, const char *obj, const char *name,
                           double *v, char *err)
{
    H5T_class_t c;
    hid_t a = open_numeric_attr(file, fname, obj, name, "a number", &c, err);
    if (a < 0)
        return ATF_E_INPUT;
    return read_attr_as(a, H5T_NATIVE_DOUBLE, v, fname, obj, name, err);
}

atf_error h5io_attr_size(hid_t file, const char *fname, const char *obj, const char *name,
                         int *v, char *err)
{
    int64_t x;
    atf_error e = h5io_attr_int(file, fname, obj, name, &x, err);
    if (e)
        return e;
    if (x <= 0 || x > INT_MAX) {
        atf_errorf(err, "%s: %s attribute '%s': %lld is not a positive 32-bit size", fname, obj,
                   name, (long long)x);
        return ATF_E_INPUT;
    }
    *v = (int)x;
    return ATF_OK;
}

/* Copy a string read from the file into buf, refusing what does not fit. */
static atf_error copy_string(const char *s, size_t n, char *buf, size_t len, const char *fname,
                             const char *obj, const char *name, char *err)
{
    if (n >= len) {
        atf_errorf(err, "%s: %s attribute '%s': string longer than %zu characters", fname, obj,
                   name, len - 1);
        return ATF_E_INPUT;
    }
    memcpy(buf, s, n);
    buf[n] = '\0';
    return ATF_OK;
}

static atf_error read_vlen_string(hid_t a, hid_t ftype, char *buf, size_t len, const char *fname,
                                  const char *obj, const char *name, char *err)
{
    hid_t mt = H5Tcopy(H5T_C_S1);
    char *s = NULL;
    herr_t st = -1;
    if (mt >= 0 && H5Tset_size(mt, H5T_VARIABLE) >= 0 &&
        H5Tset_cset(mt, H5Tget_cset(ftype)) >= 0)
        st = H5Aread(a, mt, &s);
    if (mt >= 0)
        H5Tclose(mt);
    if (st < 0 || !s) {
        if (s)
            H5free_memory(s);
        atf_errorf(err, "%s: %s attribute '%s': cannot read (corrupt file)", fname, obj, name);
        return ATF_E_INPUT;
    }
    atf_error e = copy_string(s, strlen(s), buf, len, fname, obj, name, err);
    H5free_memory(s);
    return e;
}

static atf_error read_fixed_string(hid_t a, hid_t ftype, char *buf, size_t len,
                                   const char *fname, const char *obj, const char *name,
                                   char *err)
{
    size_t size = H5Tget_size(ftype);
    char *tmp = size ? calloc(size + 1, 1) : NULL;
    if (!tmp) {
        atf_errorf(err, "%s: %s attribute '%s': cannot read (corrupt file)", fname, obj, name);
        return size ? ATF_E_NOMEM : ATF_E_INPUT;
    }
    hid_t mt = H5Tcopy(ftype);
    herr_t st = mt >= 0 ? H5Aread(a, mt, tmp) : -1;
    if (mt >= 0)
        H5Tclose(mt);
    if (st < 0) {
        free(tmp);
        atf_errorf(err, "%s: %s attribute '%s': cannot read (corrupt file)", fname, obj, name);
        return ATF_E_INPUT;
    }
    size_t n = strnlen(tmp, size);
    if (H5Tget_strpad(ftype) == H5T_STR_SPACEPAD)
        while (n > 0 && tmp[n - 1] == ' ')
            n--;
    atf_error e = copy_string(tmp, n, buf, len, fname, obj, name, err);
    free(tmp);
    return e;
}

atf_error h5io_attr_string(hid_t file, const char *fname, const char *obj, const char *name,
                           char *buf, size_t len, char *err)
{
    hid_t a = open_scalar_attr(file, fname, obj, name, err);
    if (a < 0)
        return ATF_E_INPUT;
    hid_t ftype = H5Aget_type(a);
    atf_error e;
    if (ftype < 0 || H5Tget_class(ftype) != H5T_STRING) {
        atf_errorf(err, "%s: %s attribute '%s': expected a string", fname, obj, name);
        e = ATF_E_INPUT;
    } else if (H5Tis_variable_str(ftype) > 0) {
        e = read_vlen_string(a, ftype, buf, len, fname, obj, name, err);
    } else {
        e = read_fixed_string(a, ftype, buf, len, fname, obj, name, err);
    }
    if (ftype >= 0)
        H5Tclose(ftype);
    H5Aclose(a);
    return e;
}

atf_error h5io_attr_string_or(hid_t file, const char *fname, const char *obj, const char *name,
                              const char *dflt, char *buf, size_t len, char *err)
{
    if (h5io_attr_exists(file, obj, name))
        return h5io_attr_string(file, fname, obj, name, buf, len, err);
    snprintf(buf, len, "%s", dflt);
    return ATF_OK;
}

atf_error h5io_check_format(hid_t file, const char *fname, const char *format, char *err)
{
    char got[64];
    atf_error e = h5io_attr_string(file, fname, "/", "format", got, sizeof got, err);
    if (e)
        return e;
    if (strcmp(got, format) != 0) {
        atf_errorf(err, "%s: / attribute 'format': '%s', expected '%s'", fname, got, format);
        return ATF_E_INPUT;
    }
    return ATF_OK;
}

atf_error h5io_check_version(hid_t file, const char *fname, int64_t version, char *err)
{
    int64_t got;
    atf_error e = h5io_attr_int(file, fname, "/", "version", &got, err);
    if (e)
        return e;
    if (got != version) {
        atf_errorf(err, "%s: / attribute 'version': %lld, this program reads version %lld", fname,
                   (long long)got, (long long)version);
        return ATF_E_INPUT;
    }
    return ATF_OK;
}

static const char *class_name(H5T_class_t c)
{
    switch (c) {
    case H5T_STRING: return "string";
    case H5T_COMPOUND: return "compound";
    case H5T_ENUM: return "enum";
    case H5T_VLEN: return "variable-length";
    case H5T_ARRAY: return "array";
    case H5T_BITFIELD: return "bitfield";
    case H5T_OPAQUE: return "opaque";
    case H5T_REFERENCE: return "reference";
    case H5T_TIME: return "time";
    default: return "unknown";
    }
}

/* Open a dataset of integer or float type; on failure write the message and return -1. */
static hid_t open_numeric(hid_t file, const char *fname, const char *path, H5T_class_t *cls,
                          char *err)
{
    if (!h5io_exists(file, path)) {
        atf_errorf(err, "%s: %s: missing (required dataset)", fname, path);
        return -1;
    }
    hid_t d = H5Dopen2(file, path, H5P_DEFAULT);
    if (d < 0) {
        atf_errorf(err, "%s: %s: not a dataset", fname, path);
        return -1;
    }
    hid_t t = H5Dget_type(d);
    H5T_class_t c = t >= 0 ? H5Tget_class(t) : H5T_NO_CLASS;
    if (t >= 0)
        H5Tclose(t);
    if (c != H5T_INTEGER && c != H5T_FLOAT) {
        atf_errorf(err, "%s: %s: has %s type, expected numbers", fname, path, class_name(c));
        H5Dclose(d);
        return -1;
    }
    *cls = c;
    return d;
}

atf_error h5io_shape(hid_t file, const char *fname, const char *path, int rank, int64_t *dims,
                     char *err)
{
    H5T_class_t cls;
    hid_t d = open_numeric(file, fname, path, &cls, err);
    if (d < 0)
        return ATF_E_INPUT;
    hid_t space = H5Dget_space(d);
    int nd = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
    hsize_t hd[H5IO_MAXRANK] = {0};
    if (nd == rank && rank <= H5IO_MAXRANK)
        H5Sget_simple_extent_dims(space, hd, NULL);
    if (space >= 0)
        H5Sclose(space);
    H5Dclose(d);
    if (nd < 0) {
        atf_errorf(err, "%s: %s: cannot read its shape (corrupt file)", fname, path);
        return ATF_E_INPUT;
    }
    if (nd != rank) {
        atf_errorf(err, "%s: %s: rank %d, expected rank %d", fname, path, nd, rank);
        return ATF_E_INPUT;
    }
    for (int a = 0; a < rank; a++) {
        if (hd[a] > (hsize_t)INT64_MAX) {
            atf_errorf(err, "%s: %s: extent too large", fname, path);
            return ATF_E_INPUT;
        }
        dims[a] = (int64_t)hd[a];
    }
    return ATF_OK;
}

atf_error h5io_expect_dim(const char *fname, const char *path, int rank, const int64_t *dims,
                          int axis, int64_t expected, const char *what, char *err)
{
    if (dims[axis] == expected)
        return ATF_OK;
    char shape[128];
    h5io_format_shape(shape, sizeof shape, rank, dims);
    atf_errorf(err, "%s: %s: shape %s but %s = %lld", fname, path, shape, what,
               (long long)expected);
    return ATF_E_INPUT;
}

/* Number of elements, or -1 if it overflows an allocation of `elsize`-byte values. */
static int64_t element_count(int rank, const int64_t *dims, size_t elsize)
{
    int64_t n = 1;
    for (int a = 0; a < rank; a++) {
        if (dims[a] < 0 || (dims[a] > 0 && n > INT64_MAX / dims[a]))
            return -1;
        n *= dims[a];
    }
    if ((uint64_t)n > SIZE_MAX / elsize)
        return -1;
    return n;
}

/* Read the whole dataset into a fresh buffer of memory type mt. */
static atf_error read_all(hid_t file, const char *fname, const char *path, hid_t mt,
                          size_t elsize, int64_t n, void **out, char *err)
{
    *out = NULL;
    void *buf = malloc(n > 0 ? (size_t)n * elsize : 1);
    if (!buf) {
        atf_errorf(err, "%s: %s: out of memory for %lld values", fname, path, (long long)n);
        return ATF_E_NOMEM;
    }
    hid_t d = H5Dopen2(file, path, H5P_DEFAULT);
    herr_t st = d >= 0 ? 0 : -1;
    if (d >= 0 && n > 0)
        st = H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
    if (d >= 0)
        H5Dclose(d);
    if (st < 0) {
        free(buf);
        atf_errorf(err, "%s: %s: cannot read data (truncated or corrupt file)", fname, path);
        return ATF_E_INPUT;
    }
    *out = buf;
    return ATF_OK;
}

/* The n values x[0 … n) are the dataset's (of shape dims) from flat index `offset` on: every
 * one must be finite; the message names the first bad one by its index in the whole dataset. */
static atf_error check_finite(const char *fname, const char *path, int rank, const int64_t *dims,
                              int64_t offset, const double *x, int64_t n, char *err)
{
    for (int64_t j = 0; j < n; j++) {
        if (!isfinite(x[j])) {
            char where[128];
            h5io_format_index(where, sizeof where, rank, dims, offset + j);
            atf_errorf(err, "%s: %s: non-finite value %g at %s", fname, path, x[j], where);
            return ATF_E_INPUT;
        }
    }
    return ATF_OK;
}

atf_error h5io_read_doubles(hid_t file, const char *fname, const char *path, int rank,
                            const int64_t *dims, double **out, char *err)
{
    *out = NULL;
    int64_t n = element_count(rank, dims, sizeof(double));
    if (n < 0) {
        atf_errorf(err, "%s: %s: too large to read", fname, path);
        return ATF_E_INPUT;
    }
    void *buf;
    atf_error e = read_all(file, fname, path, H5T_NATIVE_DOUBLE, sizeof(double), n, &buf, err);
    if (e)
        return e;
    if ((e = check_finite(fname, path, rank, dims, 0, buf, n, err))) {
        free(buf);
        return e;
    }
    *out = buf;
    return ATF_OK;
}

atf_error h5io_read_floats(hid_t file, const char *fname, const char *path, int64_t n, float *out,
                           char *err)
{
    hid_t d = H5Dopen2(file, path, H5P_DEFAULT);
    hid_t t = d >= 0 ? H5Dget_type(d) : -1;
    int single = t >= 0 && H5Tget_class(t) == H5T_FLOAT && H5Tget_size(t) == sizeof(float);
    herr_t st = d >= 0 ? 0 : -1;
    if (single && n > 0)
        st = H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, out);
    if (t >= 0)
        H5Tclose(t);
    if (d >= 0)
        H5Dclose(d);
    if (d >= 0 && !single) {
        atf_errorf(err, "%s: %s: expected float32 values", fname, path);
        return ATF_E_INPUT;
    }
    if (st < 0) {
        atf_errorf(err, "%s: %s: cannot read data (truncated or corrupt file)", fname, path);
        return ATF_E_INPUT;
    }
    for (int64_t j = 0; j < n; j++)
        if (!isfinite(out[j])) {
            atf_errorf(err, "%s: %s: non-finite value %g at [%lld]", fname, path, (double)out[j],
                       (long long)j);
            return ATF_E_INPUT;
        }
    return ATF_OK;
}

/* Rows row0 … row0 + nrows − 1 of the 2-D double dataset `path` as a hyperslab of the file's
 * dataspace, to or from a memory space of just their size (libhdf5 then reads or writes those
 * rows only). Negative on any failure, the dataset's close included. */
herr_t h5io__transfer_rows(hid_t file, const char *path, const int64_t *dims, int64_t row0,
                           int64_t nrows, double *buf, int write)
{
    hsize_t start[2] = {(hsize_t)row0, 0}, count[2] = {(hsize_t)nrows, (hsize_t)dims[1]};
    hid_t d = H5Dopen2(file, path, H5P_DEFAULT);
    hid_t fs = d >= 0 ? H5Dget_space(d) : -1;
    hid_t ms = H5Screate_simple(2, count, NULL);
    herr_t st = -1;
    if (fs >= 0 && ms >= 0 &&
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) >= 0)
        st = write ? H5Dwrite(d, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, buf)
                   : H5Dread(d, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, buf);
    if (ms >= 0)
        H5Sclose(ms);
    if (fs >= 0)
        H5Sclose(fs);
    if (d >= 0 && H5Dclose(d) < 0)
        st = -1;
    return st;
}

atf_error h5io_read_rows(hid_t file, const char *fname, const char *path, const int64_t *dims,
                         int64_t row0, int64_t nrows, double *out, char *err)
{
    if (row0 < 0 || nrows < 0 || row0 > dims[0] - nrows || dims[1] < 0) {
        atf_errorf(err, "%s: %s: rows %lld … %lld outside its %lld rows", fname, path,
                   (long long)row0, (long long)(row0 + nrows - 1), (long long)dims[0]);
        return ATF_E_INPUT;
    }
    if (nrows == 0 || dims[1] == 0)
        return ATF_OK;
    herr_t st = h5io__transfer_rows(file, path, dims, row0, nrows, out, 0);
    if (st < 0) {
        atf_errorf(err, "%s: %s: cannot read rows %lld … %lld (truncated or corrupt file)", fname,
                   path, (long long)row0, (long long)(row0 + nrows - 1));
        return ATF_E_INPUT;
    }
    return check_finite(fname, path, 2, dims, row0 * dims[1], out, nrows * dims[1], err);
}

atf_error h5io_check_shape(hid_t file, const char *fname, const char *path, int rank,
                           const int64_t *dims, const char *const *dim_names, char *err)
{
    int64_t got[H5IO_MAXRANK];
    atf_error e = h5io_shape(file, fname, path, rank, got, err);
    for (int a = 0; a < rank && !e; a++)
        e = h5io_expect_dim(fname, path, rank, got, a, dims[a], dim_names[a], err);
    return e;
}

atf_error h5io_read_checked(hid_t file, const char *fname, const char *path, int rank,
                            const int64_t *dims, const char *const *dim_names, double **out,
                            char *err)
{
    *out = NULL;
    atf_error e = h5io_check_shape(file, fname, path, rank, dims, dim_names, err);
    return e ? e : h5io_read_doubles(file, fname, path, rank, dims, out, err);
}

atf_error h5io_read_int64s(hid_t file, const char *fname, const char *path, int64_t n,
                           int64_t **out, char *err)
{
    *out = NULL;
    H5T_class_t cls;
    hid_t d = open_numeric(file, fname, path, &cls, err);
    if (d < 0)
        return ATF_E_INPUT;
    H5Dclose(d);
    if (cls != H5T_INTEGER) {
        atf_errorf(err, "%s: %s: has floating-point type, expected integers", fname, path);
        return ATF_E_INPUT;
    }
    if (element_count(1, &n, sizeof(int64_t)) < 0) {
        atf_errorf(err, "%s: %s: too large to read", fname, path);
        return ATF_E_INPUT;
    }
    void *buf;
    atf_error e = read_all(file, fname, path, H5T_NATIVE_INT64, sizeof(int64_t), n, &buf, err);
    if (e)
        return e;
    *out = buf;
    return ATF_OK;
}

atf_error h5io_read_ints(hid_t file, const char *fname, const char *path, int64_t n, int **out,
                         char *err)
{
    *out = NULL;
    int64_t *raw;
    atf_error e = h5io_read_int64s(file, fname, path, n, &raw, err);
    if (e)
        return e;
    int *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    if (!v) {
        free(raw);
        atf_errorf(err, "%s: %s: out of memory for %lld values", fname, path, (long long)n);
        return ATF_E_NOMEM;
    }
    for (int64_t i = 0; i < n; i++) {
        if (raw[i] < INT_MIN || raw[i] > INT_MAX) {
            atf_errorf(err, "%s: %s: value %lld at [%lld] does not fit a 32-bit integer", fname,
                       path, (long long)raw[i], (long long)i);
            free(raw);
            free(v);
            return ATF_E_INPUT;
        }
        v[i] = (int)raw[i];
    }
    free(raw);
    *out = v;
    return ATF_OK;
}
