/* h5_driver.c — the writing file driver.
 *
 * The HDF5 file driver ("atf-writer") through which libhdf5 writes every file of atf, and the
 * temporary-file writer it serves, h5io__write_temporary (h5io_private.h), which
 * h5io_write_file (h5_file.c) calls between reserving a temporary and renaming it.
 *
 * libhdf5 (1.10) cannot recover from a failed write: after one, H5Fclose frees the file but
 * leaves its identifier registered, and the library's exit handler (H5_term_library) crashes on
 * it when the process ends. And a write past the file-size limit (ulimit -f) raises SIGXFSZ,
 * which ends the process unless it is ignored. So libhdf5 never writes a file itself here: it
 * writes through this driver, a POSIX driver like its "sec2" (the same layout features, so the
 * same bytes) that never reports a failure to libhdf5. It never writes past RLIMIT_FSIZE (no
 * SIGXFSZ is ever raised: it stops at the limit and takes that as EFBIG). After the first failure
 * it records errno in the writer's state and pretends success: raw data is dropped, metadata is
 * kept in memory (libhdf5 may read it back before it closes the file), and reads see the file
 * overlaid with that metadata. libhdf5 then closes the file cleanly; h5io_write_file reports the
 * failure and removes the temporary.
 *
 * Input: h5io__write_temporary gets an h5io_out whose w.af (atf_util.h's atomic file) has reserved
 * the temporary w.af.tmp, the caller's put function and its context. It creates the HDF5 file
 * there (strong close degree, this driver, the driver's state being o->w.state), runs the puts
 * and closes the file.
 *
 * Ownership: the driver owns its file descriptor and the metadata kept after a failure, both
 * released when libhdf5 closes the file. The driver class is registered with libhdf5 once per
 * process (again if libhdf5 was closed and reopened), under a lock. The temporary file stays the
 * caller's: atf_atomic_commit renames it, atf_atomic_abort removes it.
 *
 * Failure: the driver's callbacks fail only for an address libhdf5 never allocated; every failure
 * of the file is recorded in the state (the first one: errno, and whether it was the file-size
 * limit). h5io__write_temporary returns ATF_E_IO with "FILE: cannot write ITEM: reason" (the first
 * failed put, "(file size limit exceeded)" added when that was the cause), "FILE: cannot write:
 * reason" (while libhdf5 flushed or closed the file), "FILE: cannot create the HDF5 file TMP" or
 * "FILE: cannot close the temporary file TMP: reason". */
#include "h5io_private.h"

#include <H5FDpublic.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct wd_overlay {
    struct wd_overlay *next;
    haddr_t addr;
    size_t size;
    unsigned char data[];
} wd_overlay;

typedef struct {
    H5FD_t pub; /* first: what libhdf5 sees */
    int fd;
    haddr_t eoa, eof;
    dev_t dev;
    ino_t ino;
    rlim_t fsize;            /* RLIMIT_FSIZE when the file was opened */
    h5io_write_state *state; /* the writer's: the first failure */
    wd_overlay *overlay;     /* metadata written after a failure, oldest first */
    wd_overlay **tail;
} wd_file;

#define WD_MAXADDR ((((haddr_t)1) << (8 * sizeof(off_t) - 1)) - 1)

static void wd_fail(wd_file *f, int errnum, int fsize_limit)
{
    if (f->state->errnum)
        return;
    f->state->errnum = errnum ? errnum : EIO;
    f->state->fsize_limit = fsize_limit;
}

static void *wd_fapl_copy(const void *fa)
{
    h5io_write_state **p = malloc(sizeof *p);
    if (p)
        *p = *(h5io_write_state *const *)fa;
    return p;
}

static herr_t wd_fapl_free(void *fa)
{
    free(fa);
    return 0;
}

static H5FD_t *wd_open(const char *name, unsigned flags, hid_t fapl, haddr_t maxaddr)
{
    (void)maxaddr;
    h5io_write_state *const *info = H5Pget_driver_info(fapl);
    if (!info || !*info)
        return NULL;
    int o = O_CLOEXEC | ((flags & H5F_ACC_RDWR) ? O_RDWR : O_RDONLY);
    o |= (flags & H5F_ACC_TRUNC) ? O_TRUNC : 0;
    o |= (flags & H5F_ACC_CREAT) ? O_CREAT : 0;
    o |= (flags & H5F_ACC_EXCL) ? O_EXCL : 0;
    int fd = open(name, o, 0666);
    struct stat st;
    wd_file *f = fd >= 0 && fstat(fd, &st) == 0 ? calloc(1, sizeof *f) : NULL;
    struct rlimit lim;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    f->fd = fd;
    f->eof = (haddr_t)st.st_size;
    f->dev = st.st_dev;
    f->ino = st.st_ino;
    f->fsize = getrlimit(RLIMIT_FSIZE, &lim) == 0 ? lim.rlim_cur : RLIM_INFINITY;
    f->state = *info;
    f->tail = &f->overlay;
    return &f->pub;
}

static herr_t wd_close(H5FD_t *pub)
{
    wd_file *f = (wd_file *)pub;
    while (f->overlay) {
        wd_overlay *next = f->overlay->next;
        free(f->overlay);
        f->overlay = next;
    }
    if (close(f->fd) != 0)
        wd_fail(f, errno, 0);
    free(f);
    return 0;
}

static int wd_cmp(const H5FD_t *a, const H5FD_t *b)
{
    const wd_file *x = (const wd_file *)a, *y = (const wd_file *)b;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    if (x->ino != y->ino)
        return x->ino < y->ino ? -1 : 1;
    return 0;
}

static herr_t wd_query(const H5FD_t *pub, unsigned long *flags)
{
    (void)pub;
    /* sec2's layout features, so that files come out as sec2 would write them */
    *flags = H5FD_FEAT_AGGREGATE_METADATA | H5FD_FEAT_ACCUMULATE_METADATA | H5FD_FEAT_DATA_SIEVE |
             H5FD_FEAT_AGGREGATE_SMALLDATA;
    return 0;
}

static haddr_t wd_get_eoa(const H5FD_t *pub, H5FD_mem_t type)
{
    (void)type;
    return ((const wd_file *)pub)->eoa;
}

static herr_t wd_set_eoa(H5FD_t *pub, H5FD_mem_t type, haddr_t addr)
{
    (void)type;
    ((wd_file *)pub)->eoa = addr;
    return 0;
}

static haddr_t wd_get_eof(const H5FD_t *pub, H5FD_mem_t type)
{
    (void)type;
    return ((const wd_file *)pub)->eof;
}

static herr_t wd_get_handle(H5FD_t *pub, hid_t fapl, void **handle)
{
    (void)fapl;
    *handle = &((wd_file *)pub)->fd;
    return 0;
}

static herr_t wd_read(H5FD_t *pub, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size,
                      void *buf)
{
    (void)type;
    (void)dxpl;
    wd_file *f = (wd_file *)pub;
    if (addr > WD_MAXADDR || size > WD_MAXADDR - addr)
        return -1; /* an address libhdf5 never allocated: its own bug, not an I/O failure */
    unsigned char *p = buf;
    size_t done = 0;
    while (done < size) { /* after a failure too: what was written before is in the file */
        ssize_t n = pread(f->fd, p + done, size - done, (off_t)(addr + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n < 0)
                wd_fail(f, errno, 0);
            break;
        }
        done += (size_t)n;
    }
    if (done < size)
        memset(p + done, 0, size - done); /* past the end of the file, or unreadable */
    for (const wd_overlay *o = f->overlay; o; o = o->next) {
        if (o->addr >= addr + size || o->addr + o->size <= addr)
            continue;
        haddr_t lo = o->addr > addr ? o->addr : addr;
        haddr_t hi = o->addr + o->size < addr + size ? o->addr + o->size : addr + size;
        memcpy(p + (lo - addr), o->data + (lo - o->addr), (size_t)(hi - lo));
    }
    return 0;
}

/* Write size bytes at addr, never past the file-size limit; 0 or -1 (the failure recorded). */
static int wd_pwrite(wd_file *f, haddr_t addr, size_t size, const unsigned char *p)
{
    size_t allowed = size;
    int limited = 0;
    if (f->fsize != RLIM_INFINITY && addr + size > (haddr_t)f->fsize) {
        allowed = addr < (haddr_t)f->fsize ? (size_t)((haddr_t)f->fsize - addr) : 0;
        limited = 1;
    }
    size_t done = 0;
    while (done < allowed) {
        ssize_t n = pwrite(f->fd, p + done, allowed - done, (off_t)(addr + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            wd_fail(f, n < 0 ? errno : EIO, 0);
            return -1;
        }
        done += (size_t)n;
    }
    if (limited) {
        wd_fail(f, EFBIG, 1);
        return -1;
    }
    return 0;
}

static herr_t wd_write(H5FD_t *pub, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size,
                       const void *buf)
{
    (void)dxpl;
    wd_file *f = (wd_file *)pub;
    if (addr > WD_MAXADDR || size > WD_MAXADDR - addr)
        return -1;
    if (!f->state->errnum && wd_pwrite(f, addr, size, buf) == 0) {
        if (addr + size > f->eof)
            f->eof = addr + size;
        return 0;
    }
    /* failed: raw data is dropped, metadata kept for libhdf5 to read back */
    if (type != H5FD_MEM_DRAW && size > 0) {
        wd_overlay *o = malloc(sizeof *o + size);
        if (o) {
            o->next = NULL;
            o->addr = addr;
            o->size = size;
            memcpy(o->data, buf, size);
            *f->tail = o;
            f->tail = &o->next;
        }
    }
    return 0;
}

static herr_t wd_truncate(H5FD_t *pub, hid_t dxpl, hbool_t closing)
{
    (void)dxpl;
    (void)closing;
    wd_file *f = (wd_file *)pub;
    if (f->eoa == f->eof)
        return 0;
    if (!f->state->errnum) {
        if (f->fsize != RLIM_INFINITY && f->eoa > (haddr_t)f->fsize)
            wd_fail(f, EFBIG, 1); /* ftruncate past the limit raises SIGXFSZ */
        else if (ftruncate(f->fd, (off_t)f->eoa) != 0)
            wd_fail(f, errno, 0);
    }
    f->eof = f->eoa;
    return 0;
}

static const H5FD_class_t wd_class = {
#if H5_VERSION_GE(1, 13, 0) /* untested: Debian 12 has 1.10 */
    .version = H5FD_CLASS_VERSION,
    .value = (H5FD_class_value_t)(H5_VFD_RESERVED + 161),
#endif
    .name = "atf-writer",
    .maxaddr = WD_MAXADDR,
    .fc_degree = H5F_CLOSE_WEAK,
    .fapl_size = sizeof(h5io_write_state *),
    .fapl_copy = wd_fapl_copy,
    .fapl_free = wd_fapl_free,
    .open = wd_open,
    .close = wd_close,
    .cmp = wd_cmp,
    .query = wd_query,
    .get_eoa = wd_get_eoa,
    .set_eoa = wd_set_eoa,
    .get_eof = wd_get_eof,
    .get_handle = wd_get_handle,
    .read = wd_read,
    .write = wd_write,
    .truncate = wd_truncate,
    .fl_map = H5FD_FLMAP_DICHOTOMY,
};

/* The driver's identifier, registered once (again if libhdf5 was closed and reopened). */
static hid_t wd_driver(void)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static hid_t id = -1;
    pthread_mutex_lock(&lock);
    if (id < 0 || H5Iget_type(id) != H5I_VFL)
        id = H5FDregister(&wd_class);
    hid_t out = id;
    pthread_mutex_unlock(&lock);
    return out;
}

static atf_error create_hdf5_temporary(h5io_writer *w, char *err)
{
    h5io_write_state *state = &w->state;
    hid_t fapl = h5io__strong_close_fapl();
    hid_t drv = fapl >= 0 ? wd_driver() : -1;
    w->file = drv >= 0 && H5Pset_driver(fapl, drv, &state) >= 0
                  ? H5Fcreate(w->af.tmp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl)
                  : -1;
    if (fapl >= 0)
        H5Pclose(fapl);
    if (w->file < 0) {
        atf_errorf(err, "%s: cannot create the HDF5 file %s", w->af.path, w->af.tmp);
        return ATF_E_IO;
    }
    return ATF_OK;
}

/* Create the HDF5 file over the reserved temporary, run the puts and close it. Every failure is
 * reported; the caller removes the temporary. */
atf_error h5io__write_temporary(h5io_out *o, h5io_put_fn fn, const void *ctx, char *err)
{
    o->saved_errno = 0;
    o->failed[0] = '\0';
    atf_error e = create_hdf5_temporary(&o->w, err);
    if (e)
        return e;
    fn(o, ctx);
    herr_t closed = H5Fclose(o->w.file);
    int close_errno = errno;
    o->w.file = -1;
    const h5io_write_state *s = &o->w.state;
    const char *why = s->fsize_limit ? " (file size limit exceeded)" : "";
    if (o->failed[0]) {
        atf_errorf(err, "%s: cannot write %s%s%s%s", o->w.af.path, o->failed,
                   o->saved_errno ? ": " : "", o->saved_errno ? strerror(o->saved_errno) : "",
                   o->saved_errno == s->errnum ? why : "");
        return ATF_E_IO;
    }
    if (s->errnum) { /* while libhdf5 flushed its caches or closed the file */
        atf_errorf(err, "%s: cannot write: %s%s", o->w.af.path, strerror(s->errnum), why);
        return ATF_E_IO;
    }
    if (closed < 0) {
        atf_errorf(err, "%s: cannot close the temporary file %s%s%s", o->w.af.path,
                   o->w.af.tmp, close_errno ? ": " : "", close_errno ? strerror(close_errno) : "");
        return ATF_E_IO;
    }
    return ATF_OK;
}
