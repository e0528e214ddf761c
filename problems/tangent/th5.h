/* th5.h — private HDF5 helpers of the tangent module (MLP, data set and kernel files).
 *
 * Readers write "FILE: ITEM: reason" messages; writers go to a temporary file in the target's
 * directory that th5_commit renames over the target, so a failure never leaves a half file.
 * HDF5's own error printing is switched off around every call (the library must not print). */
#ifndef ATF_TH5_H
#define ATF_TH5_H

#include <hdf5.h>
#include <stdint.h>

#include "atf_error.h"

typedef struct {
    H5E_auto2_t func;
    void *data;
} th5_quiet;

void th5_quiet_begin(th5_quiet *q);
void th5_quiet_end(const th5_quiet *q);

/* ---- reading ---- */
atf_error th5_open_read(const char *path, hid_t *file, char *err);
int th5_exists(hid_t file, const char *path);
/* Shape of a numeric dataset of rank `rank` (dims receives the extents). */
atf_error th5_shape(hid_t file, const char *fname, const char *path, int rank, int64_t *dims,
                    char *err);
/* Whole numeric dataset as doubles (n values), every one finite. *out is malloc'ed. */
atf_error th5_read_doubles(hid_t file, const char *fname, const char *path, int64_t n,
                           double **out, char *err);
/* Whole integer dataset as ints (n values); float types refused. */
atf_error th5_read_ints(hid_t file, const char *fname, const char *path, int64_t n, int **out,
                        char *err);
atf_error th5_attr_string(hid_t file, const char *fname, const char *obj, const char *name,
                          char *buf, size_t len, char *err);
atf_error th5_attr_int(hid_t file, const char *fname, const char *obj, const char *name,
                       int64_t *v, char *err);
int th5_attr_exists(hid_t file, const char *obj, const char *name);

/* ---- writing ---- */
typedef struct {
    hid_t file;
    char path[4096];
    char tmp[4096];
} th5_writer;

atf_error th5_create(th5_writer *w, const char *path, char *err);
atf_error th5_commit(th5_writer *w, char *err);
void th5_abort(th5_writer *w);

/* Each returns 0 on success, −1 on failure. */
int th5_write_group(hid_t file, const char *path);
int th5_write_doubles(hid_t file, const char *path, int rank, const int64_t *dims,
                      const double *data);
int th5_write_ints(hid_t file, const char *path, int64_t n, const int *data);
int th5_write_attr_string(hid_t file, const char *obj, const char *name, const char *v);
int th5_write_attr_int(hid_t file, const char *obj, const char *name, int64_t v);
int th5_write_attr_double(hid_t file, const char *obj, const char *name, double v);

#endif
