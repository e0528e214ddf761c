/* h5_file.c — whole HDF5 files.
 *
 * The whole-file entry points of h5io.h, which tie the other files of problems/io/ together:
 *
 *   h5io_check_file     stat and open the file, then run atf-h5check on it (h5_checker.c)
 *   h5io_read_file      h5io_check_file, then open the file read-only in this process, run the
 *                       caller's reader on it (h5_read.c's functions) and close it
 *   h5io_read_file_opt  the same, the checker optional (check = 0: a file already checked)
 *   h5io_write_file     reserve a temporary beside the target (atf_atomic_begin, atf_util.h),
 *                       write it through the writing driver with the caller's puts (h5_driver.c,
 *                       h5_write.c), rename it over the target only if every put succeeded
 *
 * Input: the file's path (also its name in messages), the caller's function and its context,
 * and the caller's error buffer err (ATF_ERRLEN bytes).
 *
 * Ownership: the HDF5 file is opened and closed here (strong close degree: closing it also
 * closes anything a reader left open); the reader gets it borrowed in an h5io_reader and must not
 * close it. ctx stays the caller's: a reader fills it, a writer only reads it. HDF5's automatic
 * error printing is off for the duration of a read or a write, and the caller's printer is put
 * back afterwards; nothing is printed.
 *
 * Failure: ATF_E_INPUT "FILE: cannot open: reason", "FILE: cannot open: is a directory", "FILE:
 * not an HDF5 file (empty file)" before anything else; then the checker's answer (h5_checker.c);
 * then "FILE: not an HDF5 file (no HDF5 signature)" or "FILE: cannot open as HDF5 (truncated or
 * corrupt file)"; then whatever the reader returns. A write fails with ATF_E_IO and the messages
 * of atf_atomic_begin / _commit and h5_driver.c; the temporary is then removed and the target is
 * untouched. */
#include "h5io_private.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* What can be said of a file before libhdf5 looks at it. */
static atf_error precheck(const char *path, char *err)
{
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
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        atf_errorf(err, "%s: cannot open: %s", path, strerror(errno));
        return ATF_E_INPUT;
    }
    close(fd);
    return ATF_OK;
}

/* Open a file h5io_check_file passed (its precheck included). */
static atf_error open_read(const char *path, hid_t *file, char *err)
{
    *file = -1;
    htri_t is_h5 = H5Fis_hdf5(path);
    if (is_h5 == 0) {
        atf_errorf(err, "%s: not an HDF5 file (no HDF5 signature)", path);
        return ATF_E_INPUT;
    }
    hid_t fapl = h5io__strong_close_fapl();
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

atf_error h5io_check_file(const char *path, char *err)
{
    atf_error e = precheck(path, err);
    if (e)
        return e;
    return h5io__check_run(path, err);
}

static atf_error read_here(const char *path, h5io_read_fn fn, void *ctx, char *err)
{
    h5io_reader rd = {-1, path, err};
    atf_error e = open_read(path, &rd.f, err);
    if (!e) {
        h5io__lists outer = h5io__lists_begin(rd.f);
        e = fn(&rd, ctx);
        h5io__lists_end(outer);
        H5Fclose(rd.f);
    }
    return e;
}

atf_error h5io_read_file(const char *path, h5io_read_fn fn, void *ctx, char *err)
{
    return h5io_read_file_opt(path, 1, fn, ctx, err);
}

atf_error h5io_read_file_opt(const char *path, int check, h5io_read_fn fn, void *ctx, char *err)
{
    /* Only a file the checker read completely is parsed here (that fills ctx); for any other
     * file the checker's message is the answer. Unchecked, the precheck alone still names a
     * missing, empty or unreadable file and a directory. */
    atf_error e = check ? h5io_check_file(path, err) : precheck(path, err);
    if (e)
        return e;
    quiet q;
    quiet_begin(&q);
    e = read_here(path, fn, ctx, err);
    quiet_end(&q);
    return e;
}

atf_error h5io_write_file(const char *path, h5io_put_fn fn, const void *ctx, char *err)
{
    quiet q;
    quiet_begin(&q);
    h5io_out out;
    memset(&out, 0, sizeof out);
    h5io_writer *w = &out.w;
    w->file = -1;
    atf_error e = atf_atomic_begin(&w->af, path, NULL, err);
    if (!e) {
        e = h5io__write_temporary(&out, fn, ctx, err);
        e = e ? e : atf_atomic_commit(&w->af, err);
        if (e)
            atf_atomic_abort(&w->af);
    }
    quiet_end(&q);
    return e;
}
