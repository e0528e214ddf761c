/* th5.c — private HDF5 helpers of the tangent module (see th5.h). */
#include "th5.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void th5_quiet_begin(th5_quiet *q)
{
    H5Eget_auto2(H5E_DEFAULT, &q->func, &q->data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

void th5_quiet_end(const th5_quiet *q)
{
    H5Eset_auto2(H5E_DEFAULT, q->func, q->data);
}

atf_error th5_open_read(const char *path, hid_t *file, char *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        atf_errorf(err, "%s: cannot open (%s)", path, strerror(errno));
        return ATF_E_INPUT;
    }
    fclose(f);
    if (H5Fis_hdf5(path) <= 0) {
        atf_errorf(err, "%s: not an HDF5 file", path);
        return ATF_E_INPUT;
    }
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG);
    *file = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    H5Pclose(fapl);
    if (*file < 0) {
        atf_errorf(err, "%s: HDF5 file cannot be opened (truncated or corrupt)", path);
        return ATF_E_INPUT;
    }
    return ATF_OK;
}

int th5_exists(hid_t file, const char *path)
{
    /* Check each component: H5Lexists fails on a missing intermediate group. */
    char buf[1024];
    size_t n = strlen(path);
    if (n >= sizeof buf)
        return 0;
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] == '/' || buf[i] == '\0') {
            char c = buf[i];
            buf[i] = '\0';
            if (H5Lexists(file, buf, H5P_DEFAULT) <= 0)
                return 0;
            buf[i] = c;
        }
    }
    return 1;
}

int th5_attr_exists(hid_t file, const char *obj, const char *name)
{
    return H5Aexists_by_name(file, obj, name, H5P_DEFAULT) > 0;
}

static atf_error open_numeric(hid_t file, const char *fname, const char *path, hid_t *dset,
                              H5T_class_t *cls, char *err)
{
    if (!th5_exists(file, path)) {
        atf_errorf(err, "%s: %s: missing", fname, path);
        return ATF_E_INPUT;
    }
    H5O_info_t info;
    if (H5Oget_info_by_name(file, path, &info, H5P_DEFAULT) < 0 || info.type != H5O_TYPE_DATASET) {
        atf_errorf(err, "%s: %s: not a dataset", fname, path);
        return ATF_E_INPUT;
    }
    *dset = H5Dopen2(file, path, H5P_DEFAULT);
    if (*dset < 0) {
        atf_errorf(err, "%s: %s: cannot open dataset", fname, path);
        return ATF_E_INPUT;
    }
    hid_t type = H5Dget_type(*dset);
    *cls = H5Tget_class(type);
    H5Tclose(type);
    if (*cls != H5T_INTEGER && *cls != H5T_FLOAT) {
        H5Dclose(*dset);
        atf_errorf(err, "%s: %s: not a numeric dataset", fname, path);
        return ATF_E_INPUT;
    }
    return ATF_OK;
}

atf_error th5_shape(hid_t file, const char *fname, const char *path, int rank, int64_t *dims,
                    char *err)
{
    hid_t dset;
    H5T_class_t cls;
    atf_error e = open_numeric(file, fname, path, &dset, &cls, err);
    if (e)
        return e;
    hid_t space = H5Dget_space(dset);
    int r = H5Sget_simple_extent_ndims(space);
    hsize_t h[8] = {0};
    if (r == rank)
        H5Sget_simple_extent_dims(space, h, NULL);
    H5Sclose(space);
    H5Dclose(dset);
    if (r != rank) {
        atf_errorf(err, "%s: %s: rank %d but expected %d", fname, path, r, rank);
        return ATF_E_INPUT;
    }
    for (int i = 0; i < rank; i++)
        dims[i] = (int64_t)h[i];
    return ATF_OK;
}

static atf_error read_all(hid_t file, const char *fname, const char *path, hid_t memtype,
                          int64_t n, void *buf, H5T_class_t *cls, char *err)
{
    hid_t dset;
    atf_error e = open_numeric(file, fname, path, &dset, cls, err);
    if (e)
        return e;
    hid_t space = H5Dget_space(dset);
    hssize_t count = H5Sget_simple_extent_npoints(space);
    H5Sclose(space);
    if (count != n) {
        H5Dclose(dset);
        atf_errorf(err, "%s: %s: %lld values but expected %lld", fname, path, (long long)count,
                   (long long)n);
        return ATF_E_INPUT;
    }
    herr_t st = n > 0 ? H5Dread(dset, memtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) : 0;
    H5Dclose(dset);
    if (st < 0) {
        atf_errorf(err, "%s: %s: read failed (truncated or corrupt file)", fname, path);
        return ATF_E_INPUT;
    }
    return ATF_OK;
}

atf_error th5_read_doubles(hid_t file, const char *fname, const char *path, int64_t n,
                           double **out, char *err)
{
    double *buf = malloc((size_t)(n > 0 ? n : 1) * sizeof *buf);
    if (!buf) {
        atf_errorf(err, "%s: %s: out of memory", fname, path);
        return ATF_E_NOMEM;
    }
    H5T_class_t cls;
    atf_error e = read_all(file, fname, path, H5T_NATIVE_DOUBLE, n, buf, &cls, err);
    for (int64_t i = 0; !e && i < n; i++) {
        if (!isfinite(buf[i])) {
            atf_errorf(err, "%s: %s: non-finite value at flat index %lld", fname, path,
                       (long long)i);
            e = ATF_E_INPUT;
        }
    }
    if (e) {
        free(buf);
        return e;
    }
    *out = buf;
    return ATF_OK;
}

atf_error th5_read_ints(hid_t file, const char *fname, const char *path, int64_t n, int **out,
                        char *err)
{
    int *buf = malloc((size_t)(n > 0 ? n : 1) * sizeof *buf);
    if (!buf) {
        atf_errorf(err, "%s: %s: out of memory", fname, path);
        return ATF_E_NOMEM;
    }
    H5T_class_t cls;
    atf_error e = read_all(file, fname, path, H5T_NATIVE_INT, n, buf, &cls, err);
    if (!e && cls != H5T_INTEGER) {
        atf_errorf(err, "%s: %s: expected an integer dataset", fname, path);
        e = ATF_E_INPUT;
    }
    if (e) {
        free(buf);
        return e;
    }
    *out = buf;
    return ATF_OK;
}

static atf_error open_attr(hid_t file, const char *fname, const char *obj, const char *name,
                           hid_t *attr, char *err)
{
    if (!th5_exists(file, obj) && strcmp(obj, "/") != 0) {
        atf_errorf(err, "%s: %s: missing", fname, obj);
        return ATF_E_INPUT;
    }
    if (!th5_attr_exists(file, obj, name)) {
        atf_errorf(err, "%s: %s attribute '%s': missing", fname, obj, name);
        return ATF_E_INPUT;
    }
    *attr = H5Aopen_by_name(file, obj, name, H5P_DEFAULT, H5P_DEFAULT);
    if (*attr < 0) {
        atf_errorf(err, "%s: %s attribute '%s': cannot open", fname, obj, name);
        return ATF_E_INPUT;
    }
    return ATF_OK;
}

atf_error th5_attr_string(hid_t file, const char *fname, const char *obj, const char *name,
                          char *buf, size_t len, char *err)
{
    hid_t attr;
    atf_error e = open_attr(file, fname, obj, name, &attr, err);
    if (e)
        return e;
    hid_t type = H5Aget_type(attr);
    int ok = H5Tget_class(type) == H5T_STRING;
    if (ok && H5Tis_variable_str(type) > 0) {
        char *s = NULL;
        hid_t mt = H5Tcopy(H5T_C_S1);
        H5Tset_size(mt, H5T_VARIABLE);
        H5Tset_cset(mt, H5Tget_cset(type));
        ok = H5Aread(attr, mt, &s) >= 0 && s;
        if (ok)
            snprintf(buf, len, "%s", s);
        if (s) {
            hid_t space = H5Aget_space(attr);
            H5Dvlen_reclaim(mt, space, H5P_DEFAULT, &s);
            H5Sclose(space);
        }
        H5Tclose(mt);
    } else if (ok) {
        size_t size = H5Tget_size(type);
        char *tmp = calloc(size + 1, 1);
        ok = tmp && H5Aread(attr, type, tmp) >= 0;
        if (ok)
            snprintf(buf, len, "%s", tmp);
        free(tmp);
    }
    H5Tclose(type);
    H5Aclose(attr);
    if (!ok) {
        atf_errorf(err, "%s: %s attribute '%s': not a string", fname, obj, name);
        return ATF_E_INPUT;
    }
    return ATF_OK;
}

atf_error th5_attr_int(hid_t file, const char *fname, const char *obj, const char *name,
                       int64_t *v, char *err)
{
    hid_t attr;
    atf_error e = open_attr(file, fname, obj, name, &attr, err);
    if (e)
        return e;
    hid_t type = H5Aget_type(attr);
    H5T_class_t cls = H5Tget_class(type);
    hid_t space = H5Aget_space(attr);
    hssize_t npts = H5Sget_simple_extent_npoints(space);
    H5Sclose(space);
    H5Tclose(type);
    double d = NAN;
    int ok = (cls == H5T_INTEGER || cls == H5T_FLOAT) && npts == 1 &&
             H5Aread(attr, H5T_NATIVE_DOUBLE, &d) >= 0;
    H5Aclose(attr);
    if (!ok || !isfinite(d) || d != floor(d) || fabs(d) > 9.0e15) {
        atf_errorf(err, "%s: %s attribute '%s': not an integer", fname, obj, name);
        return ATF_E_INPUT;
    }
    *v = (int64_t)d;
    return ATF_OK;
}

atf_error th5_create(th5_writer *w, const char *path, char *err)
{
    w->file = -1;
    if (snprintf(w->path, sizeof w->path, "%s", path) >= (int)sizeof w->path ||
        snprintf(w->tmp, sizeof w->tmp, "%s.tmp-XXXXXX", path) >= (int)sizeof w->tmp) {
        atf_errorf(err, "%s: path too long", path);
        return ATF_E_USAGE;
    }
    int fd = mkstemp(w->tmp);
    if (fd < 0) {
        atf_errorf(err, "%s: cannot create a temporary file next to it (%s)", path,
                   strerror(errno));
        return ATF_E_IO;
    }
    mode_t mask = umask(0); /* mkstemp makes 0600; give the file the usual permissions */
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    close(fd);
    w->file = H5Fcreate(w->tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (w->file < 0) {
        unlink(w->tmp);
        atf_errorf(err, "%s: cannot create HDF5 file", path);
        return ATF_E_IO;
    }
    return ATF_OK;
}

atf_error th5_commit(th5_writer *w, char *err)
{
    herr_t st = H5Fclose(w->file);
    w->file = -1;
    if (st < 0) {
        unlink(w->tmp);
        atf_errorf(err, "%s: cannot finish writing", w->path);
        return ATF_E_IO;
    }
    if (rename(w->tmp, w->path) != 0) {
        int e = errno;
        unlink(w->tmp);
        atf_errorf(err, "%s: cannot rename temporary file into place (%s)", w->path, strerror(e));
        return ATF_E_IO;
    }
    return ATF_OK;
}

void th5_abort(th5_writer *w)
{
    if (w->file >= 0)
        H5Fclose(w->file);
    w->file = -1;
    unlink(w->tmp);
}

int th5_write_group(hid_t file, const char *path)
{
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    hid_t g = H5Gcreate2(file, path, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    H5Pclose(lcpl);
    if (g < 0)
        return -1;
    H5Gclose(g);
    return 0;
}

static int write_array(hid_t file, const char *path, hid_t filetype, hid_t memtype, int rank,
                       const hsize_t *dims, const void *data)
{
    hid_t space = H5Screate_simple(rank, dims, NULL);
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    hid_t dset = H5Dcreate2(file, path, filetype, space, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    H5Pclose(lcpl);
    H5Sclose(space);
    if (dset < 0)
        return -1;
    hsize_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= dims[i];
    herr_t st = n ? H5Dwrite(dset, memtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) : 0;
    H5Dclose(dset);
    return st < 0 ? -1 : 0;
}

int th5_write_doubles(hid_t file, const char *path, int rank, const int64_t *dims,
                      const double *data)
{
    hsize_t h[8];
    for (int i = 0; i < rank; i++)
        h[i] = (hsize_t)dims[i];
    return write_array(file, path, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, rank, h, data);
}

int th5_write_ints(hid_t file, const char *path, int64_t n, const int *data)
{
    hsize_t h = (hsize_t)n;
    return write_array(file, path, H5T_STD_I64LE, H5T_NATIVE_INT, 1, &h, data);
}

static int write_attr(hid_t file, const char *obj, const char *name, hid_t filetype,
                      hid_t memtype, const void *v)
{
    hid_t space = H5Screate(H5S_SCALAR);
    hid_t attr = H5Acreate_by_name(file, obj, name, filetype, space, H5P_DEFAULT, H5P_DEFAULT,
                                   H5P_DEFAULT);
    H5Sclose(space);
    if (attr < 0)
        return -1;
    herr_t st = H5Awrite(attr, memtype, v);
    H5Aclose(attr);
    return st < 0 ? -1 : 0;
}

int th5_write_attr_string(hid_t file, const char *obj, const char *name, const char *v)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
    int rc = write_attr(file, obj, name, t, t, &v);
    H5Tclose(t);
    return rc;
}

int th5_write_attr_int(hid_t file, const char *obj, const char *name, int64_t v)
{
    return write_attr(file, obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &v);
}

int th5_write_attr_double(hid_t file, const char *obj, const char *name, double v)
{
    return write_attr(file, obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &v);
}
