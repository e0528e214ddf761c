/* util.c — the clock, the BLAS's name, atomic file writes and comma-separated number lists
 * (see atf_util.h). */
#define _GNU_SOURCE /* dladdr, RTLD_NOLOAD */
#include "atf_util.h"

#include <cblas.h>
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ time */

double atf_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ------------------------------------------------------------------ the BLAS */

/* Looked up rather than called, so that the library links with any BLAS (Debian's
 * alternatives can put the reference BLAS behind libblas.so.3), and looked up in the object
 * that holds cblas_dgemm: loaded by Python's ctypes, libatf's libraries are not in the global
 * scope that RTLD_DEFAULT searches. The answer does not change while the process runs:
 * computed once. */
const char *atf_blas_name(void)
{
    static char name[160];
    if (name[0])
        return name;
    const char *text = NULL;
    Dl_info where;
    void *lib = NULL, *gemm;
    void (*fn)(void) = (void (*)(void))cblas_dgemm;
    memcpy(&gemm, &fn, sizeof gemm); /* a function's address as dladdr takes it */
    if (dladdr(gemm, &where) &&
        where.dli_fname && (lib = dlopen(where.dli_fname, RTLD_LAZY | RTLD_NOLOAD))) {
        char *(*config)(void) = NULL;
        *(void **)(&config) = dlsym(lib, "openblas_get_config");
        text = config ? config() : NULL;
    }
    snprintf(name, sizeof name, "%s", text && text[0] ? text : "unknown");
    if (lib)
        dlclose(lib);
    return name;
}

/* ------------------------------------------------------------------ atomic files */

/* Create the temporary like any new file: mode 0666 less the umask (mkstemp's 0600 would
 * ignore the user's umask, and changing the umask to learn it is not thread-safe). O_EXCL makes
 * the name ours; the process id and an attempt counter keep concurrent writers of one target
 * and stale leftovers out of the way without any randomness. */
static int create_exclusive(char *tmp, size_t len, const char *path)
{
    for (int attempt = 0; attempt < 100; attempt++) {
        snprintf(tmp, len, "%s.tmp.%ld.%d", path, (long)getpid(), attempt);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    errno = EEXIST;
    return -1;
}

atf_error atf_atomic_begin(atf_atomic_file *af, const char *path, int *fd, char *err)
{
    af->tmp[0] = '\0';
    size_t n = path ? strlen(path) : 0;
    if (n == 0 || n + 40 >= sizeof af->tmp) {
        atf_errorf(err, "%s: output path empty or too long", path ? path : "");
        af->path[0] = '\0';
        return ATF_E_IO;
    }
    memcpy(af->path, path, n + 1);
    /* Same directory as the target, so that rename() is atomic. */
    int f = create_exclusive(af->tmp, sizeof af->tmp, path);
    if (f < 0) {
        atf_errorf(err, "%s: cannot create a temporary file next to it: %s", path,
                   strerror(errno));
        af->tmp[0] = '\0';
        return ATF_E_IO;
    }
    if (fd)
        *fd = f;
    else
        close(f);
    return ATF_OK;
}

void atf_atomic_abort(atf_atomic_file *af)
{
    if (af->tmp[0])
        unlink(af->tmp);
    af->tmp[0] = '\0';
}

static int fsync_path(const char *path, int flags)
{
    int fd = open(path, flags | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int st = fsync(fd);
    close(fd);
    return st;
}

static void sync_parent_dir(const char *path)
{
    char dir[ATF_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    /* Best effort: some file systems refuse fsync on directories; the rename already happened. */
    fsync_path(dir, O_RDONLY | O_DIRECTORY);
}

atf_error atf_atomic_commit(atf_atomic_file *af, char *err)
{
    const char *what = NULL;
    if (!af->tmp[0]) {
        atf_errorf(err, "%s: no temporary file to put in place", af->path);
        return ATF_E_IO;
    }
    if (fsync_path(af->tmp, O_RDONLY) != 0)
        what = "sync";
    else if (rename(af->tmp, af->path) != 0)
        what = "rename";
    if (what) {
        int saved = errno;
        atf_errorf(err, "%s: cannot %s the temporary file %s: %s", af->path, what, af->tmp,
                   strerror(saved));
        atf_atomic_abort(af);
        return ATF_E_IO;
    }
    af->tmp[0] = '\0';
    sync_parent_dir(af->path);
    return ATF_OK;
}

/* 0 when all len bytes are written, else -1 with errno set. */
static int write_all(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

atf_error atf_write_text_atomic(const char *path, const char *text, size_t len, char *err)
{
    atf_atomic_file af;
    int fd = -1;
    atf_error e = atf_atomic_begin(&af, path, &fd, err);
    if (e)
        return e;
    int bad = write_all(fd, text, len);
    int saved = errno;
    if (close(fd) != 0 && !bad) {
        bad = 1;
        saved = errno;
    }
    if (bad) {
        atf_errorf(err, "%s: cannot write: %s", path, strerror(saved));
        atf_atomic_abort(&af);
        return ATF_E_IO;
    }
    return atf_atomic_commit(&af, err);
}

/* ------------------------------------------------------------------ comma-separated lists */

/* The item at p (up to the next comma or the end) for messages, at most 40 characters. */
static void item_text(const char *p, char *buf, size_t len)
{
    size_t n = strcspn(p, ",");
    snprintf(buf, len, "%.*s%s", (int)(n > 40 ? 40 : n), p, n > 40 ? "..." : "");
}

/* Checks shared by both parsers; returns the end of the item at p (a comma or '\0'), or NULL
 * with a message when the list is empty, an item is empty or there are too many items. */
static const char *next_item(const char *text, const char *p, int count, int max,
                             const char *what, char *err)
{
    size_t n = strcspn(p, ",");
    if (!*text) {
        atf_errorf(err, "%s: empty list", what);
        return NULL;
    }
    if (n == 0) {
        atf_errorf(err, "%s: empty item in '%.200s'", what, text);
        return NULL;
    }
    if (count >= max) {
        atf_errorf(err, "%s: at most %d values", what, max);
        return NULL;
    }
    return p + n;
}

/* After an item ending at `end`: the start of the next one, or NULL at the end of the list. */
static const char *after_item(const char *end)
{
    return *end == ',' ? end + 1 : NULL;
}

atf_error atf_parse_ints(const char *text, long lo, long hi, long *vals, int max, int *n,
                         const char *what, char *err)
{
    char item[48];
    *n = 0;
    text = text ? text : "";
    for (const char *p = text; p;) {
        const char *stop = next_item(text, p, *n, max, what, err);
        if (!stop)
            return ATF_E_USAGE;
        char *end = NULL;
        errno = 0;
        long v = isspace((unsigned char)*p) ? 0 : strtol(p, &end, 10);
        item_text(p, item, sizeof item);
        if (isspace((unsigned char)*p) || end != stop) {
            atf_errorf(err, "%s: '%s' is not an integer", what, item);
            return ATF_E_USAGE;
        }
        if (errno == ERANGE || v < lo || v > hi) {
            atf_errorf(err, "%s: %s is outside [%ld, %ld]", what, item, lo, hi);
            return ATF_E_USAGE;
        }
        vals[(*n)++] = v;
        p = after_item(stop);
    }
    return ATF_OK;
}

atf_error atf_parse_doubles(const char *text, double *vals, int max, int *n, const char *what,
                            char *err)
{
    char item[48];
    *n = 0;
    text = text ? text : "";
    for (const char *p = text; p;) {
        const char *stop = next_item(text, p, *n, max, what, err);
        if (!stop)
            return ATF_E_USAGE;
        char *end = NULL;
        errno = 0;
        double v = isspace((unsigned char)*p) ? 0.0 : strtod(p, &end);
        item_text(p, item, sizeof item);
        if (isspace((unsigned char)*p) || end != stop || errno == ERANGE || !isfinite(v)) {
            atf_errorf(err, "%s: '%s' is not a finite number", what, item);
            return ATF_E_USAGE;
        }
        vals[(*n)++] = v;
        p = after_item(stop);
    }
    return ATF_OK;
}

/* ---- directories ---- */

atf_error atf_mkdir_p(const char *path, char *err)
{
    char buf[1024];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        atf_errorf(err, "%s: path too long", path);
        return ATF_E_USAGE;
    }
    for (char *p = buf + 1;; p++) {
        int end = *p == '\0';
        if (*p == '/' || end) {
            *p = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST) {
                atf_errorf(err, "%s: cannot create directory: %s", buf, strerror(errno));
                return ATF_E_IO;
            }
            struct stat st;
            if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode)) {
                atf_errorf(err, "%s: exists and is not a directory", buf);
                return ATF_E_IO;
            }
            if (end)
                break;
            *p = '/';
        }
    }
    return ATF_OK;
}
