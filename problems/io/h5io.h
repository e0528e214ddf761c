/* h5io.h — the storage layer: the HDF5 helpers every file format of atf is written on (the
 * problems, results, networks and training files of problems/ and problems/tangent/, the
 * solver's checkpoints and preconditioner files); not installed, not part of the API, on the
 * include path of atf's modules only (meson's problems_io_inc). Implemented in problems/io/:
 * h5_read.c (readers), h5_write.c (writers),
 * h5_driver.c (the writing file driver), h5_checker.c (running atf-h5check, h5check.c) and
 * h5_file.c (whole files).
 *
 * Readers check presence, type class, rank and finiteness and write one-line messages of the
 * form "FILE: ITEM: reason" into err (ATF_ERRLEN bytes). Items are absolute HDF5 paths; an
 * attribute is named "PATH attribute 'NAME'". Writers produce what h5py produces by default:
 * int64 and float64 scalars, variable-length UTF-8 strings, contiguous little-endian arrays.
 * Files are opened with the "strong" close degree so that closing a file also closes anything
 * an error path left open. */
#ifndef ATF_H5IO_H
#define ATF_H5IO_H

#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>

#include "atf_error.h"
#include "atf_util.h"

#define H5IO_MAXRANK 4
#define H5IO_PATHLEN 512

/* Build "a/b/c"-style paths into a fixed buffer (H5IO_PATHLEN); 0 on success, -1 if too long. */
int h5io_path(char *buf, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ---- reading (inside h5io_read_file) ---- */

/* 1 if the link `path` (absolute) exists, every component found among the members of its group;
 * 0 if not. 1 if the object `obj` exists and has an attribute `name`. Both answer from the lists
 * of names that atf-h5check made with the same calls (h5_walk.h), never by asking libhdf5 for a
 * name the file may lack: the only way a reader asks whether something exists. */
int h5io_exists(hid_t file, const char *path);
int h5io_attr_exists(hid_t file, const char *obj, const char *name);

/* Fail with "FILE: PATH: missing" unless the object exists and is a group. */
atf_error h5io_require_group(hid_t file, const char *fname, const char *path, char *err);

/* Scalar attributes. Integers may be stored as any integer type or as an integral float;
 * doubles as any float or integer type; strings as variable- or fixed-length ASCII/UTF-8
 * (a one-element array is accepted as a scalar). `len` is the buffer size of `buf`. */
atf_error h5io_attr_int(hid_t file, const char *fname, const char *obj, const char *name,
                        int64_t *v, char *err);
atf_error h5io_attr_double(hid_t file, const char *fname, const char *obj, const char *name,
                           double *v, char *err);
atf_error h5io_attr_string(hid_t file, const char *fname, const char *obj, const char *name,
                           char *buf, size_t len, char *err);
/* An optional string attribute: `dflt` when it is absent. */
atf_error h5io_attr_string_or(hid_t file, const char *fname, const char *obj, const char *name,
                              const char *dflt, char *buf, size_t len, char *err);
/* A size: an integer attribute in [1, INT_MAX]. */
atf_error h5io_attr_size(hid_t file, const char *fname, const char *obj, const char *name,
                         int *v, char *err);

/* The root attribute 'format' must be the string `format`, 'version' the integer `version`
 * (MLP files have no version, hence two functions). */
atf_error h5io_check_format(hid_t file, const char *fname, const char *format, char *err);
atf_error h5io_check_version(hid_t file, const char *fname, int64_t version, char *err);

/* Shape of a numeric dataset: fails unless `path` exists, is a dataset of integer or float
 * type and has rank `rank`; dims receives the extents. */
atf_error h5io_shape(hid_t file, const char *fname, const char *path, int rank, int64_t *dims,
                     char *err);

/* Fail with "FILE: PATH: shape [a, b] but WHAT = expected" unless dims[axis] == expected. */
atf_error h5io_expect_dim(const char *fname, const char *path, int rank, const int64_t *dims,
                          int axis, int64_t expected, const char *what, char *err);

/* Read a whole numeric dataset of the given (already checked) shape as doubles and require
 * every value to be finite (the message names the first bad index). *out is malloc'ed. */
atf_error h5io_read_doubles(hid_t file, const char *fname, const char *path, int rank,
                            const int64_t *dims, double **out, char *err);

/* A rank-1 float32 dataset of n values (its shape already checked with h5io_shape) into out,
 * caller-allocated (a large array is read where it will be used, never copied); every value
 * must be finite. Other types are refused: the values are a single-precision array's own. */
atf_error h5io_read_floats(hid_t file, const char *fname, const char *path, int64_t n, float *out,
                           char *err);

/* h5io_shape, then h5io_expect_dim on every axis (dim_names[a] says what dims[a] is). */
atf_error h5io_check_shape(hid_t file, const char *fname, const char *path, int rank,
                           const int64_t *dims, const char *const *dim_names, char *err);

/* h5io_check_shape, then h5io_read_doubles: an array whose shape the file's attributes fix. */
atf_error h5io_read_checked(hid_t file, const char *fname, const char *path, int rank,
                            const int64_t *dims, const char *const *dim_names, double **out,
                            char *err);

/* Rows row0 … row0 + nrows − 1 of a rank-2 numeric dataset of (already checked) shape dims,
 * as doubles into out [nrows × dims[1]], caller-allocated: a hyperslab of the file's dataspace,
 * so that libhdf5 reads those rows only. Every value must be finite (the message names the
 * index in the whole dataset, as h5io_read_doubles does). */
atf_error h5io_read_rows(hid_t file, const char *fname, const char *path, const int64_t *dims,
                         int64_t row0, int64_t nrows, double *out, char *err);

/* Read a rank-1 integer dataset of length n, already checked with h5io_shape (float types are
 * refused). The int version also refuses values outside the range of int. */
atf_error h5io_read_int64s(hid_t file, const char *fname, const char *path, int64_t n,
                           int64_t **out, char *err);
atf_error h5io_read_ints(hid_t file, const char *fname, const char *path, int64_t n, int **out,
                         char *err);

/* ---- writing (inside h5io_write_file) ---- */

/* The first failure of the file under libhdf5 (h5_driver.c's writing driver records it; libhdf5
 * never sees it). */
typedef struct {
    int errnum;      /* 0: none */
    int fsize_limit; /* the failure was the file-size limit (RLIMIT_FSIZE) */
} h5io_write_state;

typedef struct {
    hid_t file;
    atf_atomic_file af;     /* the target and its temporary (atf_util.h) */
    h5io_write_state state; /* after a failure every put is skipped */
} h5io_writer;

/* Sticky-error output: after the first failure every put is a no-op and `failed` names the
 * item, so that a writer is one straight sequence of puts. Strings are variable-length UTF-8
 * scalars, integers int64, numbers float64 (what h5py writes). */
typedef struct {
    h5io_writer w;
    int saved_errno;
    char failed[H5IO_PATHLEN + 64];
} h5io_out;

void h5io_put_group(h5io_out *o, const char *path);
void h5io_put_int(h5io_out *o, const char *obj, const char *name, int64_t v);
void h5io_put_double(h5io_out *o, const char *obj, const char *name, double v);
void h5io_put_string(h5io_out *o, const char *obj, const char *name, const char *v);
void h5io_put_doubles(h5io_out *o, const char *path, int rank, const int64_t *dims,
                      const double *data);
void h5io_put_int64s(h5io_out *o, const char *path, int64_t n, const int64_t *data);
void h5io_put_floats(h5io_out *o, const char *path, int64_t n, const float *data);
void h5io_put_ints(h5io_out *o, const char *path, int64_t n, const int *data);
/* An array written in pieces (a problem whose rows arrive from several processes,
 * atf_problem_write_rows): h5io_put_array creates the float64 dataset [dims[0], dims[1]] without
 * data, h5io_put_rows writes its rows row0 … row0 + nrows − 1 from data [nrows × dims[1]] as a
 * hyperslab (the whole array is never in memory). h5io_put_fail marks the output failed at
 * `item` for a reason of the caller's (it says why): nothing more is written and
 * h5io_write_file removes the temporary. */
void h5io_put_array(h5io_out *o, const char *path, const int64_t *dims);
void h5io_put_rows(h5io_out *o, const char *path, const int64_t *dims, int64_t row0,
                   int64_t nrows, const double *data);
void h5io_put_fail(h5io_out *o, const char *item);

/* ---- whole files ----
 * HDF5 prints its error stack by default; the library must not. The read and the write switch
 * that off for their duration and restore the caller's own HDF5 error handler afterwards. */

/* An open file, its name for messages and the caller's error buffer. */
typedef struct {
    hid_t f;
    const char *fname;
    char *err;
} h5io_reader;

typedef atf_error (*h5io_read_fn)(const h5io_reader *rd, void *ctx);
typedef void (*h5io_put_fn)(h5io_out *o, const void *ctx);

/* Open `path` read-only, run `fn` on it, close it. Missing or unreadable files, files that
 * are not HDF5 at all and HDF5 files that cannot be opened (truncated or corrupt) get their
 * own messages before `fn` runs.
 * libhdf5 crashes, loops forever or is left in a broken state by some corrupt files, so the
 * file is first read by the program atf-h5check (h5io_check_file); only a file it read without
 * any failure is then parsed in this process. */
atf_error h5io_read_file(const char *path, h5io_read_fn fn, void *ctx, char *err);

/* The same with the check optional: check = 0 does not run atf-h5check (only the stat and
 * open of the file that precede it), for a file that this or another process has already
 * checked (atf_problem_read_shard). check = 1 is h5io_read_file. */
atf_error h5io_read_file_opt(const char *path, int check, h5io_read_fn fn, void *ctx, char *err);

/* The check alone: run atf-h5check on `path` (started with posix_spawn, never fork) and wait
 * for it at most 3 s + 1 s per 50 MB of file (the environment variable ATF_H5_CHECK_SECONDS
 * overrides). The checker reads every group, link, attribute and numeric dataset of the file
 * with the calls the readers use (problems/io/h5check.c). ATF_OK if it read everything;
 * ATF_E_INPUT with its message if libhdf5 failed on some item ("FILE: ITEM: reason"), or
 * "FILE: refused: reading it did not finish within T s (a corrupt file can hang libhdf5)" /
 * "FILE: refused: reading it crashed libhdf5 (segmentation fault, signal 11)"; ATF_E_IO if
 * interrupted (SIGINT) or if the checker cannot be started.
 * The checker is the environment variable ATF_H5CHECK if set ("none": no check, ATF_OK), else
 * atf-h5check beside the file holding this code (libatf.so, or the program linked with
 * libatf.a), else the one of the build tree, else the installed one (libexecdir). If none is
 * found: ATF_E_IO "FILE: cannot check the file before reading it: the HDF5 checker atf-h5check
 * is not installed (set ATF_H5CHECK ...)", and nothing is read. */
atf_error h5io_check_file(const char *path, char *err);

/* Write `path` atomically: the puts of `fn` go to a temporary file in the same directory
 * (created like any new file, with the umask's mode), which is synced and renamed over `path`
 * only if every put succeeded ("FILE: cannot write ITEM: reason" otherwise, ATF_E_IO); on any
 * failure the temporary is removed and `path` is untouched. libhdf5 writes through a file driver
 * (h5_driver.c) that never lets it see a failed write (it cannot recover from one: its exit
 * handler crashes) and never writes past the file-size limit (no SIGXFSZ): the first failure is
 * recorded, the remaining puts are skipped and libhdf5 closes the file cleanly. In this
 * process, without a child. */
atf_error h5io_write_file(const char *path, h5io_put_fn fn, const void *ctx, char *err);

/* "[3, 2]" for messages; buf holds at least 64 bytes. */
void h5io_format_index(char *buf, size_t len, int rank, const int64_t *dims, int64_t flat);
void h5io_format_shape(char *buf, size_t len, int rank, const int64_t *dims);

#endif
