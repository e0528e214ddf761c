/* h5io.c — private HDF5 helpers of problems/ and problems/tangent/ (see h5io.h). */
#include "h5io.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ misc */

/* The caller's HDF5 error printer, put back when a whole-file call ends. */
typedef struct {
    H5E_auto2_t func;
    void *data;
} quiet;

static void quiet_begin(quiet *q)
{
    q->func = NULL;
    q->data = NULL;
    H5Eget_auto2(H5E_DEFAULT, &q->func, &q->data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

static void quiet_end(const quiet *q)
{
    H5Eset_auto2(H5E_DEFAULT, q->func, q->data);
}

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

/* ------------------------------------------------------------------ reading */

static hid_t strong_close_fapl(void)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl >= 0 && H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG) < 0) {
        H5Pclose(fapl);
        return -1;
    }
    return fapl;
}

static atf_error open_read(const char *path, hid_t *file, char *err)
{
    *file = -1;
    struct stat st;
    if (stat(path, &st) != 0) {
        atf_errorf(err, "%s: cannot open: %s", path, strerror(errno));
        return ATF_E_INPUT;
    }
    if (S_ISDIR(st.st_mode)) {
        atf_errorf(err, "%s: cannot open: is a directory", path);
        return ATF_E_INPUT;
    }
    if (st.st_size == 0) {
        atf_errorf(err, "%s: not an HDF5 file (empty file)", path);
        return ATF_E_INPUT;
    }
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        atf_errorf(err, "%s: cannot open: %s", path, strerror(errno));
        return ATF_E_INPUT;
    }
    close(fd);
    htri_t is_h5 = H5Fis_hdf5(path);
    if (is_h5 == 0) {
        atf_errorf(err, "%s: not an HDF5 file (no HDF5 signature)", path);
        return ATF_E_INPUT;
    }
    hid_t fapl = strong_close_fapl();
    hid_t f = (is_h5 > 0 && fapl >= 0) ? H5Fopen(path, H5F_ACC_RDONLY, fapl) : -1;
    if (fapl >= 0)
        H5Pclose(fapl);
    if (f < 0) {
        atf_errorf(err, "%s: cannot open as HDF5 (truncated or corrupt file)", path);
        return ATF_E_INPUT;
    }
    *file = f;
    return ATF_OK;
}

int h5io_exists(hid_t file, const char *path)
{
    char part[H5IO_PATHLEN];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof part)
        return 0;
    if (strcmp(path, "/") == 0)
        return 1;
    /* H5Lexists fails (rather than answering 0) when an intermediate link is missing. */
    for (size_t i = 1; i <= n; i++) {
        if (path[i] != '/' && path[i] != '\0')
            continue;
        memcpy(part, path, i);
        part[i] = '\0';
        if (H5Lexists(file, part, H5P_DEFAULT) <= 0)
            return 0;
    }
    return 1;
}

int h5io_attr_exists(hid_t file, const char *obj, const char *name)
{
    return h5io_exists(file, obj) && H5Aexists_by_name(file, obj, name, H5P_DEFAULT) > 0;
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
    double *x = buf;
    for (int64_t j = 0; j < n; j++) {
        if (!isfinite(x[j])) {
            char where[128];
            h5io_format_index(where, sizeof where, rank, dims, j);
            atf_errorf(err, "%s: %s: non-finite value %g at %s", fname, path, x[j], where);
            free(x);
            return ATF_E_INPUT;
        }
    }
    *out = x;
    return ATF_OK;
}

atf_error h5io_read_checked(hid_t file, const char *fname, const char *path, int rank,
                            const int64_t *dims, const char *const *dim_names, double **out,
                            char *err)
{
    *out = NULL;
    int64_t got[H5IO_MAXRANK];
    atf_error e = h5io_shape(file, fname, path, rank, got, err);
    for (int a = 0; a < rank && !e; a++)
        e = h5io_expect_dim(fname, path, rank, got, a, dims[a], dim_names[a], err);
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

/* ------------------------------------------------------------------ writing */

static atf_error create_hdf5_temporary(h5io_writer *w, char *err)
{
    hid_t fapl = strong_close_fapl();
    w->file = fapl >= 0 ? H5Fcreate(w->af.tmp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl) : -1;
    if (fapl >= 0)
        H5Pclose(fapl);
    if (w->file < 0) {
        atf_errorf(err, "%s: cannot create the HDF5 file %s", w->af.path, w->af.tmp);
        return ATF_E_IO;
    }
    return ATF_OK;
}

static int write_group(hid_t file, const char *path)
{
    errno = 0;
    hid_t g = H5Gcreate2(file, path, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0)
        return -1;
    return H5Gclose(g) < 0 ? -1 : 0;
}

static int write_attr(hid_t file, const char *obj, const char *name, hid_t ftype, hid_t mtype,
                      const void *v)
{
    errno = 0;
    hid_t space = H5Screate(H5S_SCALAR);
    if (space < 0)
        return -1;
    hid_t a = H5Acreate_by_name(file, obj, name, ftype, space, H5P_DEFAULT, H5P_DEFAULT,
                                H5P_DEFAULT);
    herr_t st = a >= 0 ? H5Awrite(a, mtype, v) : -1;
    if (a >= 0 && H5Aclose(a) < 0)
        st = -1;
    H5Sclose(space);
    return st < 0 ? -1 : 0;
}

static int write_attr_int(hid_t file, const char *obj, const char *name, int64_t v)
{
    return write_attr(file, obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &v);
}

static int write_attr_double(hid_t file, const char *obj, const char *name, double v)
{
    return write_attr(file, obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &v);
}

static int write_attr_string(hid_t file, const char *obj, const char *name, const char *v)
{
    /* A variable-length UTF-8 scalar, as h5py stores a Python str. */
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t < 0)
        return -1;
    int st = -1;
    if (H5Tset_size(t, H5T_VARIABLE) >= 0 && H5Tset_cset(t, H5T_CSET_UTF8) >= 0)
        st = write_attr(file, obj, name, t, t, &v);
    H5Tclose(t);
    return st;
}

static int write_dataset(hid_t file, const char *path, int rank, const int64_t *dims,
                         hid_t ftype, hid_t mtype, const void *data)
{
    errno = 0;
    hsize_t hd[H5IO_MAXRANK];
    int64_t n = 1;
    for (int a = 0; a < rank; a++) {
        hd[a] = (hsize_t)dims[a];
        n *= dims[a];
    }
    hid_t space = H5Screate_simple(rank, hd, NULL);
    if (space < 0)
        return -1;
    hid_t d = H5Dcreate2(file, path, ftype, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    herr_t st = d >= 0 ? 0 : -1;
    if (d >= 0 && n > 0)
        st = H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
    if (d >= 0 && H5Dclose(d) < 0)
        st = -1;
    H5Sclose(space);
    return st < 0 ? -1 : 0;
}

static int write_doubles(hid_t file, const char *path, int rank, const int64_t *dims,
                       const double *data)
{
    return write_dataset(file, path, rank, dims, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, data);
}

static int write_int64s(hid_t file, const char *path, int64_t n, const int64_t *data)
{
    return write_dataset(file, path, 1, &n, H5T_STD_I64LE, H5T_NATIVE_INT64, data);
}

static int write_ints(hid_t file, const char *path, int64_t n, const int *data)
{
    return write_dataset(file, path, 1, &n, H5T_STD_I64LE, H5T_NATIVE_INT, data);
}

/* ------------------------------------------------------------------ sticky output */

static void note(h5io_out *o, int st, const char *obj, const char *attr)
{
    if (st >= 0 || o->failed[0])
        return;
    o->saved_errno = errno;
    if (attr)
        snprintf(o->failed, sizeof o->failed, "%s attribute '%s'", obj, attr);
    else
        snprintf(o->failed, sizeof o->failed, "%s", obj);
}

void h5io_put_group(h5io_out *o, const char *path)
{
    if (!o->failed[0])
        note(o, write_group(o->w.file, path), path, NULL);
}

void h5io_put_int(h5io_out *o, const char *obj, const char *name, int64_t v)
{
    if (!o->failed[0])
        note(o, write_attr_int(o->w.file, obj, name, v), obj, name);
}

void h5io_put_double(h5io_out *o, const char *obj, const char *name, double v)
{
    if (!o->failed[0])
        note(o, write_attr_double(o->w.file, obj, name, v), obj, name);
}

void h5io_put_string(h5io_out *o, const char *obj, const char *name, const char *v)
{
    if (!o->failed[0])
        note(o, write_attr_string(o->w.file, obj, name, v), obj, name);
}

void h5io_put_doubles(h5io_out *o, const char *path, int rank, const int64_t *dims,
                      const double *data)
{
    if (!o->failed[0])
        note(o, write_doubles(o->w.file, path, rank, dims, data), path, NULL);
}

void h5io_put_int64s(h5io_out *o, const char *path, int64_t n, const int64_t *data)
{
    if (!o->failed[0])
        note(o, write_int64s(o->w.file, path, n, data), path, NULL);
}

void h5io_put_ints(h5io_out *o, const char *path, int64_t n, const int *data)
{
    if (!o->failed[0])
        note(o, write_ints(o->w.file, path, n, data), path, NULL);
}

/* In the writing child: create the HDF5 file over the reserved temporary, run the puts and
 * close it. Every failure is reported; the parent removes the temporary. */
typedef struct {
    h5io_out out;
    h5io_put_fn fn;
    const void *ctx;
} write_job;

static atf_error write_temporary(void *arg, char *err)
{
    write_job *job = arg;
    h5io_out *o = &job->out;
    o->saved_errno = 0;
    o->failed[0] = '\0';
    atf_error e = create_hdf5_temporary(&o->w, err);
    if (e)
        return e;
    job->fn(o, job->ctx);
    herr_t closed = H5Fclose(o->w.file);
    o->w.file = -1;
    if (o->failed[0]) {
        atf_errorf(err, "%s: cannot write %s%s%s", o->w.af.path, o->failed,
                   o->saved_errno ? ": " : "", o->saved_errno ? strerror(o->saved_errno) : "");
        return ATF_E_IO;
    }
    if (closed < 0) {
        int saved = errno;
        atf_errorf(err, "%s: cannot close the temporary file %s%s%s", o->w.af.path,
                   o->w.af.tmp, saved ? ": " : "", saved ? strerror(saved) : "");
        return ATF_E_IO;
    }
    return ATF_OK;
}

/* ------------------------------------------------------------------ child processes */

/* libhdf5 (1.10) is not safe against every input: a corrupt length in a file overflows a heap
 * buffer (H5HG_read), some corrupt metadata makes it loop forever (H5HG_read -> H5C_protect),
 * and after a failed write H5Fclose frees the file but leaves its identifier registered, so that
 * the library's exit handler (H5_term_library) crashes on it. No HDF5 call can undo any of this
 * once it happened in our process. Hence every whole-file operation runs in a forked child that
 * ends with _exit (no exit handlers run there): a read first runs there under a time limit
 * and is repeated here only if it finished; a write runs there only, and this process merely
 * renames (or removes) the temporary. The child reports through a pipe; a child that dies or
 * exits without reporting crashed. */

typedef atf_error (*child_fn)(void *arg, char *err);

typedef enum { CHILD_FINISHED, CHILD_DIED, CHILD_TIMED_OUT, CHILD_NOT_STARTED } child_end;

typedef struct {
    child_end end;
    atf_error e;          /* CHILD_FINISHED: what the function returned */
    int sig;              /* CHILD_DIED: the signal that ended it, 0 if none */
    int errnum;           /* CHILD_NOT_STARTED: why */
    char msg[ATF_ERRLEN]; /* CHILD_FINISHED: the function's message */
} child_outcome;

#define CHILD_MAGIC 0x61746631 /* "atf1" */

/* One write of less than PIPE_BUF bytes: atomic. */
typedef struct {
    int magic;
    int e;
    char msg[ATF_ERRLEN];
} child_report;

/* Sanitizer builds: a child that returns an error checks for leaks on that error path (the
 * parent does not repeat a read that failed, and _exit skips the check at exit). */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define CHILD_LEAK_CHECK() __lsan_do_recoverable_leak_check()
#else
#define CHILD_LEAK_CHECK() 0
#endif

static _Noreturn void child_main(int fd, child_fn fn, void *arg, int silent)
{
    int saved_stderr = -1;
    if (silent) { /* what a crash prints (e.g. a sanitizer report) is replaced by our message */
        int nul = open("/dev/null", O_WRONLY);
        saved_stderr = dup(STDERR_FILENO);
        if (nul >= 0) {
            dup2(nul, STDERR_FILENO);
            close(nul);
        }
    }
    child_report rep;
    memset(&rep, 0, sizeof rep);
    rep.e = (int)fn(arg, rep.msg);
    rep.magic = CHILD_MAGIC;
    if (saved_stderr >= 0)
        dup2(saved_stderr, STDERR_FILENO);
    int leaked = rep.e != ATF_OK && CHILD_LEAK_CHECK();
    ssize_t n;
    do
        n = write(fd, &rep, sizeof rep);
    while (n < 0 && errno == EINTR);
    _exit(n == (ssize_t)sizeof rep && !leaked ? 0 : 1);
}

/* Wait for the child's exit status; 0 if it cannot be had (SIGCHLD ignored reaps by itself). */
static int reap(pid_t pid)
{
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            return 0;
    }
    return status;
}

/* Read the report until end of file, or until the time limit (limit <= 0: none). */
static int read_report(int fd, double limit, child_report *rep, size_t *got)
{
    double deadline = atf_now() + limit;
    char *buf = (char *)rep;
    *got = 0;
    for (;;) {
        int ms = -1;
        if (limit > 0) {
            double left = deadline - atf_now();
            if (left <= 0)
                return -1;
            ms = left > 1e6 ? 1000000000 : (int)ceil(left * 1000.0);
        }
        struct pollfd p = {fd, POLLIN, 0};
        int r = poll(&p, 1, ms);
        if (r < 0 && errno != EINTR)
            return 0;
        if (r <= 0) /* interrupted or not yet: look at the clock again */
            continue;
        char sink[64];
        ssize_t n = *got < sizeof *rep ? read(fd, buf + *got, sizeof *rep - *got)
                                       : read(fd, sink, sizeof sink);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return 0;
        if (*got < sizeof *rep)
            *got += (size_t)n;
        else
            *got = sizeof *rep + 1; /* more than a report: not ours */
    }
}

static void run_in_child(child_fn fn, void *arg, double limit, int silent, child_outcome *out)
{
    memset(out, 0, sizeof *out);
    int fds[2];
    if (pipe(fds) != 0) {
        out->end = CHILD_NOT_STARTED;
        out->errnum = errno;
        return;
    }
    /* A program started meanwhile by another thread must not hold the pipe open. */
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    fcntl(fds[1], F_SETFD, FD_CLOEXEC);
    pid_t pid = fork();
    if (pid < 0) {
        out->end = CHILD_NOT_STARTED;
        out->errnum = errno;
        close(fds[0]);
        close(fds[1]);
        return;
    }
    if (pid == 0) {
        close(fds[0]);
        child_main(fds[1], fn, arg, silent);
    }
    close(fds[1]);
    child_report rep;
    size_t got = 0;
    int finished = read_report(fds[0], limit, &rep, &got) == 0;
    close(fds[0]);
    if (!finished)
        kill(pid, SIGKILL);
    int status = reap(pid);
    if (!finished) {
        out->end = CHILD_TIMED_OUT;
    } else if (got == sizeof rep && rep.magic == CHILD_MAGIC) {
        out->end = CHILD_FINISHED;
        out->e = (atf_error)rep.e;
        memcpy(out->msg, rep.msg, sizeof out->msg);
        out->msg[sizeof out->msg - 1] = '\0';
    } else {
        out->end = CHILD_DIED;
        out->sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    }
}

/* ------------------------------------------------------------------ whole files */

typedef struct {
    const char *path;
    h5io_read_fn fn;
    void *ctx;
} read_job;

static atf_error read_here(void *arg, char *err)
{
    read_job *job = arg;
    h5io_reader rd = {-1, job->path, err};
    atf_error e = open_read(job->path, &rd.f, err);
    if (!e) {
        e = job->fn(&rd, job->ctx);
        H5Fclose(rd.f);
    }
    return e;
}

/* Time limit of the trial read: generous for a legitimate file (reading runs at hundreds of MB/s;
 * the limit allows 60 s plus 1 s per 10 MB), or ATF_H5_CHECK_SECONDS. */
static double read_limit(const char *path)
{
    const char *env = getenv("ATF_H5_CHECK_SECONDS");
    if (env && *env) {
        char *end = NULL;
        double v = strtod(env, &end);
        if (!*end && v > 0 && isfinite(v))
            return v;
    }
    struct stat st;
    double bytes = stat(path, &st) == 0 ? (double)st.st_size : 0.0;
    return 60.0 + bytes / 10e6;
}

static atf_error refuse_unsafe(const char *path, const child_outcome *c, double limit, char *err)
{
    if (c->end == CHILD_NOT_STARTED) {
        atf_errorf(err, "%s: cannot start the process that checks the file: %s", path,
                   strerror(c->errnum));
        return c->errnum == ENOMEM ? ATF_E_NOMEM : ATF_E_IO;
    }
    if (c->end == CHILD_DIED && c->sig == SIGINT) {
        atf_errorf(err, "%s: interrupted while reading", path);
        return ATF_E_IO; /* the program that raised SIGINT knows it was interrupted */
    }
    if (c->end == CHILD_DIED && c->sig == SIGKILL) { /* not by us: the kernel's OOM killer */
        atf_errorf(err, "%s: the process reading the file was killed (out of memory?)", path);
        return ATF_E_NOMEM;
    }
    char why[128];
    if (c->end == CHILD_TIMED_OUT)
        snprintf(why, sizeof why, "it did not finish within %.4g s", limit);
    else if (c->sig)
        snprintf(why, sizeof why, "it crashed: %s", strsignal(c->sig));
    else
        snprintf(why, sizeof why, "it crashed");
    atf_errorf(err, "%s: the HDF5 library cannot read this file safely (%s): the file is corrupt",
               path, why);
    return ATF_E_INPUT;
}

atf_error h5io_read_file(const char *path, h5io_read_fn fn, void *ctx, char *err)
{
    quiet q;
    quiet_begin(&q);
    read_job job = {path, fn, ctx};
    double limit = read_limit(path);
    child_outcome trial;
    run_in_child(read_here, &job, limit, 1, &trial);
    /* Only a file the trial read completely is read here (that fills ctx); for any other file
     * the trial's message is the answer and this process never lets libhdf5 parse it (a failed
     * load of corrupt metadata leaves libhdf5 state behind that its exit handler reports). */
    atf_error e = trial.e;
    if (trial.end != CHILD_FINISHED)
        e = refuse_unsafe(path, &trial, limit, err);
    else if (e != ATF_OK)
        atf_errorf(err, "%s", trial.msg);
    else
        e = read_here(&job, err);
    quiet_end(&q);
    return e;
}

static atf_error refuse_write(const h5io_writer *w, const child_outcome *c, char *err)
{
    if (c->end == CHILD_NOT_STARTED) {
        atf_errorf(err, "%s: cannot start the process that writes the file: %s", w->af.path,
                   strerror(c->errnum));
        return c->errnum == ENOMEM ? ATF_E_NOMEM : ATF_E_IO;
    }
    if (c->sig == SIGXFSZ)
        atf_errorf(err, "%s: cannot write: %s (file size limit exceeded)", w->af.path,
                   strerror(EFBIG));
    else if (c->sig == SIGINT)
        atf_errorf(err, "%s: interrupted while writing", w->af.path);
    else
        atf_errorf(err, "%s: the HDF5 library crashed while writing it (%s)", w->af.path,
                   c->sig ? strsignal(c->sig) : "no report");
    return ATF_E_IO; /* after SIGINT too: the program that raised it knows */
}

atf_error h5io_write_file(const char *path, h5io_put_fn fn, const void *ctx, char *err)
{
    quiet q;
    quiet_begin(&q);
    write_job job;
    memset(&job, 0, sizeof job);
    job.fn = fn;
    job.ctx = ctx;
    h5io_writer *w = &job.out.w;
    w->file = -1;
    /* Reserved in this process, so that it can always remove it. */
    atf_error e = atf_atomic_begin(&w->af, path, NULL, err);
    if (!e) {
        child_outcome c;
        run_in_child(write_temporary, &job, 0.0, 0, &c);
        if (c.end != CHILD_FINISHED)
            e = refuse_write(w, &c, err);
        else if ((e = c.e))
            atf_errorf(err, "%s", c.msg);
        e = e ? e : atf_atomic_commit(&w->af, err);
        if (e)
            atf_atomic_abort(&w->af);
    }
    quiet_end(&q);
    return e;
}
