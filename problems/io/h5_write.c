/* h5_write.c — the HDF5 writers (h5io_out).
 *
 * The writers of h5io.h: the puts of the sticky output h5io_out.
 *
 *   h5io_put_group                                     a group
 *   h5io_put_int / _double / _string                   a scalar attribute: int64, float64,
 *                                                      variable-length UTF-8 (as h5py writes)
 *   h5io_put_doubles / _int64s / _floats / _ints       a contiguous little-endian dataset,
 *                                                      written whole
 *   h5io_put_array, h5io_put_rows                      an array written in pieces: created
 *                                                      without data, then whole rows at a time
 *                                                      (hyperslabs; never whole in memory)
 *   h5io_put_fail                                      the output failed for the caller's reason
 *
 * Input: an h5io_out whose file h5io_write_file (h5_file.c) has created over a temporary through
 * the writing driver (h5_driver.c); absolute HDF5 paths; the caller's values, only read during
 * the put and never kept.
 *
 * Ownership: every HDF5 identifier a put opens is closed before it returns; the file belongs to
 * h5io_write_file.
 *
 * Failure is sticky: the first put that fails (libhdf5 refuses it, or the driver under it has
 * recorded a failed write in o->w.state) names its item in o->failed ("PATH" or "PATH attribute
 * 'NAME'"), with the errno of the failure in o->saved_errno, and every later put is a no-op; a
 * writer is thus one straight sequence of puts, checked once at the end. Nothing here returns an
 * error or writes a message: h5io_write_file turns o->failed into "FILE: cannot write ITEM:
 * reason" and removes the temporary. */
#include "h5io_private.h"

#include <errno.h>
#include <stdio.h>

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

static int write_floats(hid_t file, const char *path, int64_t n, const float *data)
{
    return write_dataset(file, path, 1, &n, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, data);
}

static int write_ints(hid_t file, const char *path, int64_t n, const int *data)
{
    return write_dataset(file, path, 1, &n, H5T_STD_I64LE, H5T_NATIVE_INT, data);
}

/* After a put: a failure of libhdf5 (st < 0), or of the file under it (the driver records it
 * and libhdf5 carries on: see h5_driver.c), is charged to this item. */
static void note(h5io_out *o, int st, const char *obj, const char *attr)
{
    if (o->failed[0] || (st >= 0 && !o->w.state.errnum))
        return;
    o->saved_errno = o->w.state.errnum ? o->w.state.errnum : errno;
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

void h5io_put_floats(h5io_out *o, const char *path, int64_t n, const float *data)
{
    if (!o->failed[0])
        note(o, write_floats(o->w.file, path, n, data), path, NULL);
}

void h5io_put_ints(h5io_out *o, const char *path, int64_t n, const int *data)
{
    if (!o->failed[0])
        note(o, write_ints(o->w.file, path, n, data), path, NULL);
}

/* ---- an array written in pieces (atf_problem_write_rows) ---- */

/* A float64 dataset [dims[0], dims[1]] created without data (contiguous, as write_dataset's:
 * its space is allocated at the first write). */
static int create_array(hid_t file, const char *path, const int64_t *dims)
{
    errno = 0;
    hsize_t hd[2] = {(hsize_t)dims[0], (hsize_t)dims[1]};
    hid_t space = H5Screate_simple(2, hd, NULL);
    if (space < 0)
        return -1;
    hid_t d = H5Dcreate2(file, path, H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT,
                         H5P_DEFAULT);
    herr_t st = d >= 0 ? 0 : -1;
    if (d >= 0 && H5Dclose(d) < 0)
        st = -1;
    H5Sclose(space);
    return st < 0 ? -1 : 0;
}

void h5io_put_array(h5io_out *o, const char *path, const int64_t *dims)
{
    if (!o->failed[0])
        note(o, create_array(o->w.file, path, dims), path, NULL);
}

static int write_rows(hid_t file, const char *path, const int64_t *dims, int64_t row0,
                      int64_t nrows, const double *data)
{
    errno = 0;
    if (row0 < 0 || nrows < 0 || row0 > dims[0] - nrows)
        return -1;
    if (nrows == 0 || dims[1] == 0)
        return 0;
    return h5io__transfer_rows(file, path, dims, row0, nrows, (double *)data, 1) < 0 ? -1 : 0;
}

void h5io_put_rows(h5io_out *o, const char *path, const int64_t *dims, int64_t row0,
                   int64_t nrows, const double *data)
{
    if (!o->failed[0])
        note(o, write_rows(o->w.file, path, dims, row0, nrows, data), path, NULL);
}

void h5io_put_fail(h5io_out *o, const char *item)
{
    if (!o->failed[0])
        snprintf(o->failed, sizeof o->failed, "%s", item);
}
