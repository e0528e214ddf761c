/* h5io_private.h — what the files of problems/io/ share.
 *
 * The few functions one file of problems/io/ defines for another, behind h5io.h. Only the files
 * of this folder include this header (it lies beside h5io.h, in the folder problems_io_inc names,
 * but no other file may include it), and nothing here is exported from libatf.so. The names
 * carry a double underscore, as libhdf5's own package-private functions do, to tell them from
 * h5io.h's interface.
 *
 *   h5io__strong_close_fapl   h5_read.c     used by h5_file.c (reading), h5_driver.c (writing)
 *   h5io__lists_begin, _end   h5_read.c     used by h5_file.c (reading)
 *   h5io__transfer_rows       h5_read.c     used by h5io_read_rows and h5_write.c's h5io_put_rows
 *   h5io__write_temporary     h5_driver.c   used by h5_file.c's h5io_write_file
 *   h5io__check_run           h5_checker.c  used by h5_file.c's h5io_check_file */
#ifndef ATF_H5IO_PRIVATE_H
#define ATF_H5IO_PRIVATE_H

#include "h5io.h"

/* A file-access property list with the "strong" close degree (closing the file also closes
 * anything left open in it), for the caller to close; negative if libhdf5 cannot make one. */
hid_t h5io__strong_close_fapl(void);

/* The lists of names of the file being read (h5_read.c: h5io_exists and h5io_attr_exists make
 * each list once per read and keep it): begin after the file is opened, end before it is closed,
 * in the same thread; begin returns the lists of a read around this one, for end to put back. */
typedef struct {
    hid_t file; /* -1: none */
    void *lists;
} h5io__lists;
h5io__lists h5io__lists_begin(hid_t file);
void h5io__lists_end(h5io__lists outer);

/* Rows row0 … row0 + nrows − 1 of the open file's 2-D numeric dataset `path` of shape dims, as
 * doubles, read into buf (write = 0) or written from it (write = 1) as a hyperslab: libhdf5
 * touches those rows only. The range must already be checked. Negative on any failure, the
 * dataset's close included; nothing is reported. */
herr_t h5io__transfer_rows(hid_t file, const char *path, const int64_t *dims, int64_t row0,
                           int64_t nrows, double *buf, int write);

/* Create the HDF5 file over the temporary o->w.af.tmp that atf_atomic_begin reserved, through
 * the writing driver (h5_driver.c), run fn(o, ctx) and close the file. ATF_OK only if the file
 * was created, every put succeeded, the file was closed and the driver recorded no failure; else
 * ATF_E_IO with the message in err. The temporary stays the caller's to commit or remove. */
atf_error h5io__write_temporary(h5io_out *o, h5io_put_fn fn, const void *ctx, char *err);

/* Find atf-h5check and run it on `path` (which precheck in h5_file.c has found to be a
 * non-empty regular file that can be opened), under its time and CPU limits; the answer of
 * h5io_check_file once that precheck passed (h5_checker.c states the messages). */
atf_error h5io__check_run(const char *path, char *err);

#endif
