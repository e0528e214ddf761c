/* h5check.c — atf-h5check, the program that reads an HDF5 file before atf does (h5_checker.c).
 *
 *   atf-h5check CALLER_PID CPU_SECONDS FILE
 *
 * libhdf5 1.10 crashes or loops forever on some corrupt files, and a failed load of corrupt
 * metadata leaves state behind that its exit handler trips over. So before the library lets
 * libhdf5 parse a file in its own process, h5io_read_file runs this program on it under a time
 * limit: it parses every part of the file that atf's readers could touch, with the same calls,
 * and reports on its standard output one line:
 *
 *   "atf-h5check ok"                  every call succeeded: the file is safe to read
 *   "atf-h5check refused MESSAGE"     a call failed; MESSAGE is "FILE: ITEM: reason"
 *
 * If libhdf5 crashes or hangs here instead, no report comes and the caller refuses the file.
 *
 * What is read (a superset of what the readers of problems/, problems/tangent/ and solver/ do
 * through h5_read.c, in the same way): H5Fis_hdf5 and H5Fopen (strong close degree); from "/"
 * down, every group, listed as h5_walk.h lists a group (H5Gopen2, H5Gget_info, every member's
 * name by H5Lget_name_by_idx in name order: the readers' only way to list a group or to ask
 * whether a link exists), and every link in it (hard links, soft links that resolve, external
 * links); every object's attributes, listed as h5_walk.h lists them (H5Aiterate_by_name: the
 * readers' only way to ask whether an attribute exists), then each by name (H5Aexists_by_name,
 * H5Aopen_by_name, space, type; a one-element numeric one read as int64 and as double, a string
 * one read as the readers read variable- and fixed-length strings); every dataset's type and
 * shape, and the whole data of every integer or float dataset converted to double (and integer
 * ones to int64, single-precision ones to float as well), whole as the readers read it when it
 * fits one block, else in blocks of whole rows so that this process's memory stays small;
 * H5Fclose and H5close. Not read: the data of a dataset too large to allocate (the readers
 * allocate a dataset whole before libhdf5 reads it, and fail there), and the fill values of
 * storage never allocated (one element is read instead); see plan_data.
 *
 * While it reads the file, every heap block libhdf5 takes ends where an unreadable page
 * begins ("the guarded heap" below): libhdf5 1.10 reads past its buffers on some corrupt files,
 * and a read that the caller's heap might survive or not crashes this program always.
 *
 * The process protects itself against outliving its caller: PR_SET_PDEATHSIG (SIGKILL) and a
 * check that its parent is still CALLER_PID (the caller may have died before the prctl); and
 * RLIMIT_CPU = CPU_SECONDS (SIGXCPU, SIGKILL one second later) in case the caller's own
 * deadline never comes. No core files (RLIMIT_CORE = 0).
 *
 * Exit status: 0 with a report, 2 usage, 3 the caller is gone, 4 the report could not be
 * written. Only hdf5 and libc are linked. */
#define _GNU_SOURCE
#include <errno.h>
#include <hdf5.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "h5_walk.h"

#define MSGLEN 512             /* ATF_ERRLEN */
#define BLOCK_BYTES (32 << 20) /* at most this much data read at once */
#define MAX_DEPTH 64           /* deeper group nesting is refused */

typedef struct {
    const char *fname;
    hid_t file;
    char msg[MSGLEN];
    /* objects already visited, by file number and address (open addressing) */
    struct seen {
        unsigned long fileno;
        uint64_t addr;
        int used;
    } *seen;
    size_t nseen, capseen;
} checker;

static int fail(checker *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Record the first failure ("FILE: " + the formatted rest); always returns -1. */
static int fail(checker *c, const char *fmt, ...)
{
    if (c->msg[0])
        return -1;
    int n = snprintf(c->msg, sizeof c->msg, "%s: ", c->fname);
    if (n < 0 || (size_t)n >= sizeof c->msg)
        n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->msg + n, sizeof c->msg - (size_t)n, fmt, ap);
    va_end(ap);
    for (char *p = c->msg; *p; p++) /* one line */
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    return -1;
}

/* 1 if (fileno, addr) was seen before; else remembers it and returns 0 (-1: out of memory). */
static int seen_before(checker *c, unsigned long fileno, uint64_t addr)
{
    if (2 * (c->nseen + 1) > c->capseen) {
        size_t cap = c->capseen ? 2 * c->capseen : 64;
        struct seen *t = calloc(cap, sizeof *t);
        if (!t)
            return -1;
        for (size_t i = 0; i < c->capseen; i++) {
            if (!c->seen[i].used)
                continue;
            size_t h = (size_t)((c->seen[i].addr * 0x9e3779b97f4a7c15ull) ^ c->seen[i].fileno);
            while (t[h % cap].used)
                h++;
            t[h % cap] = c->seen[i];
        }
        free(c->seen);
        c->seen = t;
        c->capseen = cap;
    }
    size_t h = (size_t)((addr * 0x9e3779b97f4a7c15ull) ^ fileno);
    for (;; h++) {
        struct seen *s = &c->seen[h % c->capseen];
        if (!s->used) {
            s->used = 1;
            s->fileno = fileno;
            s->addr = addr;
            c->nseen++;
            return 0;
        }
        if (s->fileno == fileno && s->addr == addr)
            return 1;
    }
}

/* "a/b" joined as the readers build paths ("/" + name at the root). */
static char *join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (!p)
        return NULL;
    memcpy(p, dir, a);
    size_t k = a;
    if (a == 0 || dir[a - 1] != '/')
        p[k++] = '/';
    memcpy(p + k, name, b + 1);
    return p;
}

/* ------------------------------------------------------------------ attributes */

static int read_string_attr(checker *c, hid_t a, hid_t ftype, const char *obj, const char *name)
{
    int st = 0;
    if (H5Tis_variable_str(ftype) > 0) {
        hid_t mt = H5Tcopy(H5T_C_S1);
        char *s = NULL;
        if (mt < 0 || H5Tset_size(mt, H5T_VARIABLE) < 0 ||
            H5Tset_cset(mt, H5Tget_cset(ftype)) < 0 || H5Aread(a, mt, &s) < 0)
            st = -1;
        if (s)
            H5free_memory(s);
        if (mt >= 0)
            H5Tclose(mt);
    } else {
        size_t size = H5Tget_size(ftype);
        char *tmp = size ? calloc(size + 1, 1) : NULL;
        hid_t mt = tmp ? H5Tcopy(ftype) : -1;
        if (mt < 0 || H5Aread(a, mt, tmp) < 0 || H5Tget_strpad(ftype) < 0)
            st = -1;
        if (mt >= 0)
            H5Tclose(mt);
        free(tmp);
    }
    return st ? fail(c, "%s attribute '%s': cannot read (corrupt file)", obj, name) : 0;
}

static int check_attr(checker *c, const char *obj, const char *name)
{
    if (H5Aexists_by_name(c->file, obj, name, H5P_DEFAULT) <= 0)
        return fail(c, "%s attribute '%s': cannot look it up (corrupt file)", obj, name);
    hid_t a = H5Aopen_by_name(c->file, obj, name, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0)
        return fail(c, "%s attribute '%s': cannot open (corrupt file)", obj, name);
    int st = 0;
    hid_t space = H5Aget_space(a);
    hssize_t npoints = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
    if (space >= 0)
        H5Sclose(space);
    hid_t t = H5Aget_type(a);
    H5T_class_t cls = t >= 0 ? H5Tget_class(t) : H5T_NO_CLASS;
    if (npoints < 0 || t < 0 || cls == H5T_NO_CLASS) {
        st = fail(c, "%s attribute '%s': cannot read its shape or type (corrupt file)", obj,
                  name);
    } else if (npoints == 1) { /* what the readers read: single values */
        if (cls == H5T_INTEGER || cls == H5T_FLOAT) {
            int64_t i64;
            double d;
            if ((cls == H5T_INTEGER && H5Aread(a, H5T_NATIVE_INT64, &i64) < 0) ||
                H5Aread(a, H5T_NATIVE_DOUBLE, &d) < 0)
                st = fail(c, "%s attribute '%s': cannot read (corrupt file)", obj, name);
        } else if (cls == H5T_STRING) {
            st = read_string_attr(c, a, t, obj, name);
        }
    }
    if (t >= 0)
        H5Tclose(t);
    H5Aclose(a);
    return st;
}

/* Every attribute of obj, listed as the readers list them (h5_walk.h), then each read. */
static int check_attrs(checker *c, const char *obj)
{
    h5walk_list l = {NULL, 0, 0, 0};
    h5walk_status ws = h5walk_attrs(c->file, obj, h5walk_keep, &l);
    int st = l.nomem ? fail(c, "%s: out of memory", obj)
             : ws != H5WALK_DONE ? fail(c, "%s: cannot list its attributes (corrupt file)", obj)
                                 : 0;
    for (size_t i = 0; i < l.n && !st; i++)
        st = check_attr(c, obj, l.names[i]);
    h5walk_list_free(&l);
    return st;
}

/* ------------------------------------------------------------------ datasets */

/* Read the selection [start, start + count) of d (file space fs) as mtype into buf. */
static int read_block(hid_t d, hid_t fs, hid_t mtype, int rank, const hsize_t *start,
                      const hsize_t *count, void *buf)
{
    hsize_t n = 1;
    for (int a = 0; a < rank; a++)
        n *= count[a];
    if (H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) < 0)
        return -1;
    hid_t ms = H5Screate_simple(1, &n, NULL);
    if (ms < 0)
        return -1;
    herr_t st = H5Dread(d, mtype, ms, fs, H5P_DEFAULT, buf);
    H5Sclose(ms);
    return st < 0 ? -1 : 0;
}

/* The whole data of d as mtype (8-byte values), block by block: whole rows along the first
 * axis `k` whose trailing extent fits BLOCK_BYTES, one index at a time on the axes before. */
static int read_all_blocks(hid_t d, hid_t fs, hid_t mtype, int rank, const hsize_t *dims,
                           hsize_t chunk0, void *buf)
{
    int k = 0;
    hsize_t tail = 1; /* elements of one index of axis k */
    for (int a = rank - 1; a >= 0; a--) {
        if (a < rank - 1) {
            if (dims[a + 1] > (BLOCK_BYTES / 8) / tail)
                break;
            tail *= dims[a + 1];
        }
        k = a;
    }
    hsize_t rows = (BLOCK_BYTES / 8) / tail; /* tail <= BLOCK_BYTES / 8: at least 1 */
    if (k == 0 && chunk0 > 0 && rows > chunk0)
        rows -= rows % chunk0; /* whole chunks */
    if (rows == 0)
        rows = 1;
    hsize_t start[H5S_MAX_RANK] = {0}, count[H5S_MAX_RANK];
    for (int a = 0; a < rank; a++)
        count[a] = a < k ? 1 : dims[a];
    for (;;) {
        for (hsize_t r = 0; r < dims[k]; r += rows) {
            start[k] = r;
            count[k] = dims[k] - r < rows ? dims[k] - r : rows;
            if (read_block(d, fs, mtype, rank, start, count, buf) < 0)
                return -1;
        }
        start[k] = 0;
        int a = k - 1; /* next index on the axes before k (odometer) */
        while (a >= 0 && ++start[a] >= dims[a])
            start[a--] = 0;
        if (a < 0)
            return 0;
    }
}

/* Read one element (the first) of d as mtype: the conversion path of the dataset's type, and
 * its fill value where no storage is allocated. */
static int read_one(hid_t d, hid_t fs, hid_t mtype, int rank, void *buf)
{
    hsize_t start[H5S_MAX_RANK] = {0}, count[H5S_MAX_RANK];
    for (int a = 0; a < rank; a++)
        count[a] = 1;
    return read_block(d, fs, mtype, rank, start, count, buf);
}

typedef enum { DATA_NONE, DATA_ONE, DATA_ALL } data_plan;

/* How much of a numeric dataset of n elements to read. The readers allocate the whole dataset
 * (8 bytes an element) before libhdf5 reads any of it: a dataset larger than RAM + swap, which
 * Linux refuses to allocate, is never read by them, nor here. Storage that was never allocated
 * (contiguous, or chunked without a single chunk) holds nothing of the file: one element shows
 * its type conversion and fill value. Everything else is read whole. */
static int plan_data(checker *c, const char *path, hid_t d, int rank, hssize_t n,
                     hsize_t *chunk0, data_plan *plan)
{
    *plan = DATA_ALL;
    *chunk0 = 0;
    struct sysinfo si;
    if (sysinfo(&si) == 0) {
        double memory = ((double)si.totalram + (double)si.totalswap) * (double)si.mem_unit;
        if ((double)n * 8.0 > memory) {
            *plan = DATA_NONE;
            return 0;
        }
    }
    hid_t dcpl = H5Dget_create_plist(d);
    H5D_layout_t layout = dcpl >= 0 ? H5Pget_layout(dcpl) : H5D_LAYOUT_ERROR;
    int st = 0;
    if (layout == H5D_LAYOUT_ERROR) {
        st = fail(c, "%s: cannot read its storage layout (corrupt file)", path);
    } else if (layout == H5D_CONTIGUOUS || layout == H5D_CHUNKED) {
        hsize_t cd[H5S_MAX_RANK];
        if (layout == H5D_CHUNKED && rank > 0 && H5Pget_chunk(dcpl, rank, cd) == rank)
            *chunk0 = cd[0];
        /* walks the whole chunk index; 0 is also its answer on failure: ask the error stack */
        H5Eclear2(H5E_DEFAULT);
        hsize_t stored = H5Dget_storage_size(d);
        if (stored == 0 && H5Eget_num(H5E_DEFAULT) > 0)
            st = fail(c, "%s: cannot read its storage size (corrupt file)", path);
        else if (stored == 0 && (layout == H5D_CHUNKED || H5Pget_external_count(dcpl) == 0))
            *plan = DATA_ONE;
    }
    if (dcpl >= 0)
        H5Pclose(dcpl);
    return st;
}

/* What a numeric dataset is, and how much of it to read. */
typedef struct {
    H5T_class_t cls;
    size_t size; /* of one element in the file */
    int rank;
    hsize_t dims[H5S_MAX_RANK];
    hssize_t n;
    data_plan plan;
    hsize_t chunk0;
} data_shape;

/* The data of d read as mtype into buf (8 bytes an element, BLOCK_BYTES at most) the way the
 * readers read it: a dataset that fits one block whole (H5S_ALL, as h5io_read_doubles, _int64s
 * and _floats do), a larger one block by block (hyperslabs, as a shard's rows are read), one
 * element of storage never allocated. */
static int read_as(hid_t d, hid_t fs, hid_t mtype, const data_shape *ds, void *buf)
{
    if (ds->plan == DATA_ONE && ds->rank > 0)
        return read_one(d, fs, mtype, ds->rank, buf);
    if (ds->rank == 0 || ds->n <= BLOCK_BYTES / 8)
        return H5Dread(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0 ? -1 : 0;
    return read_all_blocks(d, fs, mtype, ds->rank, ds->dims, ds->chunk0, buf);
}

/* As doubles; integers also as int64 (h5io_read_int64s), single-precision floats also as
 * floats (h5io_read_floats). */
static int read_data(checker *c, const char *path, hid_t d, hid_t fs, const data_shape *ds)
{
    size_t bytes = ds->plan == DATA_ONE      ? 8
                   : ds->n < BLOCK_BYTES / 8 ? (size_t)ds->n * 8
                                             : BLOCK_BYTES;
    void *buf = malloc(bytes);
    if (!buf)
        return fail(c, "%s: out of memory", path);
    int st = read_as(d, fs, H5T_NATIVE_DOUBLE, ds, buf);
    if (!st && ds->cls == H5T_INTEGER)
        st = read_as(d, fs, H5T_NATIVE_INT64, ds, buf);
    if (!st && ds->cls == H5T_FLOAT && ds->size == sizeof(float))
        st = read_as(d, fs, H5T_NATIVE_FLOAT, ds, buf);
    free(buf);
    return st ? fail(c, "%s: cannot read data (truncated or corrupt file)", path) : 0;
}

static int check_dataset(checker *c, const char *path)
{
    hid_t d = H5Dopen2(c->file, path, H5P_DEFAULT);
    if (d < 0)
        return fail(c, "%s: cannot open the dataset (corrupt file)", path);
    int st = 0;
    data_shape ds = {H5T_NO_CLASS, 0, -1, {0}, -1, DATA_NONE, 0};
    hid_t t = H5Dget_type(d);
    if (t >= 0) {
        ds.cls = H5Tget_class(t);
        ds.size = H5Tget_size(t);
        H5Tclose(t);
    }
    hid_t fs = H5Dget_space(d);
    ds.rank = fs >= 0 ? H5Sget_simple_extent_ndims(fs) : -1;
    ds.n = ds.rank >= 0 ? H5Sget_simple_extent_npoints(fs) : -1;
    if (ds.cls == H5T_NO_CLASS || ds.rank < 0 || ds.rank > H5S_MAX_RANK || ds.n < 0 ||
        H5Sget_simple_extent_dims(fs, ds.dims, NULL) < 0)
        st = fail(c, "%s: cannot read its type or shape (corrupt file)", path);
    else if ((ds.cls == H5T_INTEGER || ds.cls == H5T_FLOAT) && ds.n > 0)
        st = plan_data(c, path, d, ds.rank, ds.n, &ds.chunk0, &ds.plan);
    if (!st && ds.plan != DATA_NONE)
        st = read_data(c, path, d, fs, &ds);
    if (fs >= 0)
        H5Sclose(fs);
    if (H5Dclose(d) < 0)
        st = fail(c, "%s: cannot close the dataset (corrupt file)", path);
    return st;
}

/* ------------------------------------------------------------------ the tree */

typedef struct {
    H5O_type_t type;
    unsigned long fileno;
    uint64_t addr;
} object_info;

static int get_info(checker *c, const char *path, object_info *oi)
{
#if H5_VERSION_GE(1, 12, 0)
    H5O_info2_t info;
    if (H5Oget_info_by_name3(c->file, path, &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0)
        return -1;
    uint64_t addr = 0; /* the token's leading bytes: an address for native files */
    memcpy(&addr, &info.token, sizeof addr < sizeof info.token ? sizeof addr : sizeof info.token);
    oi->addr = addr;
#else
    H5O_info_t info;
    if (H5Oget_info_by_name2(c->file, path, &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0)
        return -1;
    oi->addr = (uint64_t)info.addr;
#endif
    oi->type = info.type;
    oi->fileno = info.fileno;
    return 0;
}

static int check_object(checker *c, const char *path, int depth);

typedef struct {
    checker *c;
    const char *path;
    int depth;
} group_walk;

/* One member of a group being walked: checked at once (nonzero stops the walk). */
static int check_member(const char *name, void *ctx)
{
    group_walk *w = ctx;
    char *child = join(w->path, name);
    if (!child)
        return fail(w->c, "%s: out of memory", w->path);
    int st = check_object(w->c, child, w->depth + 1);
    free(child);
    return st;
}

/* Every member of a group, listed as the readers list a group (h5_walk.h). */
static int check_group(checker *c, const char *path, int depth)
{
    if (depth > MAX_DEPTH)
        return fail(c, "%s: groups nested more than %d deep", path, MAX_DEPTH);
    group_walk w = {c, path, depth};
    hsize_t bad = 0;
    switch (h5walk_links(c->file, path, check_member, &w, &bad)) {
    case H5WALK_DONE: return 0;
    case H5WALK_STOPPED: return -1; /* check_member said why */
    case H5WALK_NO_NAME:
        return fail(c, "%s: cannot read member %llu (corrupt file)", path,
                    (unsigned long long)bad);
    case H5WALK_NOMEM: return fail(c, "%s: out of memory", path);
    case H5WALK_NO_LIST: break;
    }
    return fail(c, "%s: cannot list its members (corrupt file)", path);
}

/* The link `path` and, if it leads to an object, that object (once per object). */
static int check_object(checker *c, const char *path, int depth)
{
    if (strcmp(path, "/") != 0) {
        H5L_info_t li;
        if (H5Lget_info(c->file, path, &li, H5P_DEFAULT) < 0)
            return fail(c, "%s: cannot read the link (corrupt file)", path);
        if (li.type == H5L_TYPE_SOFT) {
            /* a soft link that resolves to nothing is not read by anyone: skip it (looking
             * names up loads no corrupt metadata) */
            if (H5Oexists_by_name(c->file, path, H5P_DEFAULT) <= 0)
                return 0;
        } else if (li.type == H5L_TYPE_EXTERNAL) {
            if (H5Oexists_by_name(c->file, path, H5P_DEFAULT) <= 0)
                return fail(c, "%s: external link that cannot be followed", path);
        } else if (li.type != H5L_TYPE_HARD) {
            return 0; /* user-defined link types: libhdf5 cannot follow them */
        }
    }
    object_info oi;
    if (get_info(c, path, &oi) < 0)
        return fail(c, "%s: cannot read the object header (corrupt file)", path);
    int again = seen_before(c, oi.fileno, oi.addr);
    if (again < 0)
        return fail(c, "%s: out of memory", path);
    if (again)
        return 0;
    if (check_attrs(c, path))
        return -1;
    if (oi.type == H5O_TYPE_GROUP)
        return check_group(c, path, depth);
    if (oi.type == H5O_TYPE_DATASET)
        return check_dataset(c, path);
    return 0; /* named datatypes: nothing the readers open */
}

static int check_file(checker *c)
{
    htri_t is_h5 = H5Fis_hdf5(c->fname);
    if (is_h5 == 0) {
        snprintf(c->msg, sizeof c->msg, "%s: not an HDF5 file (no HDF5 signature)", c->fname);
        return -1;
    }
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl < 0 || H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG) < 0 || is_h5 < 0 ||
        (c->file = H5Fopen(c->fname, H5F_ACC_RDONLY, fapl)) < 0) {
        if (fapl >= 0)
            H5Pclose(fapl);
        snprintf(c->msg, sizeof c->msg, "%s: cannot open as HDF5 (truncated or corrupt file)",
                 c->fname);
        return -1;
    }
    H5Pclose(fapl);
    int st = check_object(c, "/", 0);
    if (H5Fclose(c->file) < 0)
        st = fail(c, "cannot close the file (corrupt file)");
    return st;
}

/* ------------------------------------------------------------------ the guarded heap
 *
 * libhdf5 1.10 reads past the end of its heap buffers on some corrupt files: an attribute
 * message whose sizes point past its object header (the attribute's data is copied from
 * beyond it, under every call that decodes the header's attributes), an integer type whose bit
 * offset lies outside its size (H5T__conv_i_i), a global-heap object longer than its collection
 * (H5HG_read). What lies there decides what happens next: nothing, a garbage value that a reader
 * then refuses ("rows: 0 is not a positive 32-bit size") or a crash. The checker and the reader
 * make the same reads, but their heaps differ, so a file this program read without harm could
 * still crash a reader (issue 46: a SIGSEGV in one release build, a clear refusal in another;
 * the measurements are in docs/formats.md, "Corrupt files").
 *
 * So while it reads the file, this program gives every heap block its own pages, placed so that
 * the block ends where HEAP_GAP bytes that cannot be read begin: a read that starts past the end
 * of a block, by up to HEAP_GAP bytes, crashes this program whatever the caller's heap, and a
 * checker that crashed is a refusal (h5_checker.c). HEAP_GAP (256 KB) is larger than the
 * farthest a damaged attribute message can send libhdf5 (its three sizes are 16-bit: under
 * 200 KB past the message). A block is aligned only as its size requires (natural_align): on
 * x86 it ends exactly where the unreadable bytes begin, so that a read of even one byte past it
 * is caught (elsewhere, blocks are aligned to at least 8 bytes, and a read of up to 7 bytes past
 * a block whose size is not a multiple of 8 is not). A read before a block is not caught.
 *
 * The pages come from one reservation of address space (nothing committed until used; a
 * quarter of the process's limit of address space if there is one: heap_reserve); freed blocks
 * of up to HEAP_CLASSES pages are kept for blocks of the same number of pages, larger ones are
 * given back. Outside the file's read (libhdf5's start and end), and whenever no page can be had
 * (no reservation, the reservation used up, max_small_runs runs made for small blocks, which
 * keeps the mappings well below the kernel's limit), blocks come from glibc's allocator as
 * usual: a failure of the guard never fails the check. Every block, guarded or not, is preceded
 * by its size and where its memory starts; glibc's replaceable allocator functions are all
 * defined here (the glibc manual, "Replacing malloc"). Only with glibc on Linux, and not in an
 * AddressSanitizer build, whose allocator does its own checks. */
#if defined(__linux__) && defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__)
#define GUARDED_HEAP 1
#endif

#ifdef GUARDED_HEAP
/* glibc's allocator under the names it exports for allocators built over it */
extern void *__libc_memalign(size_t align, size_t size);
extern void __libc_free(void *p);

#define HEAP_RESERVE ((size_t)1 << 40) /* bytes of address space asked for (then 1/4, ...) */
#define HEAP_GAP ((size_t)1 << 18)     /* unreadable bytes after every block */
#define HEAP_CLASSES 32                /* freed blocks of 1 ... 32 pages are reused */
#define HEAP_SMALL_RUNS 8192           /* runs of pages made for them, at most */
#if defined(__x86_64__) || defined(__i386__)
#define HEAP_MIN_ALIGN 1 /* x86 reads and writes a scalar at any address */
#else
#define HEAP_MIN_ALIGN 8
#endif

typedef struct {
    size_t size; /* asked for */
    char *start; /* guarded: its first page; else what glibc returned */
} block_head;

static struct {
    atomic_flag lock;
    atomic_int on;        /* reading the file: new blocks are guarded */
    char *base, *end;     /* the reservation (base NULL: none) */
    char *next;           /* its first page never used */
    size_t page;
    size_t small_runs;    /* runs made read-write for blocks of up to HEAP_CLASSES pages */
    size_t max_small_runs;
    char *free_pages[HEAP_CLASSES + 1]; /* freed blocks by pages, linked by their first word */
} heap = {ATOMIC_FLAG_INIT, 0, NULL, NULL, NULL, 0, 0, 0, {NULL}};

static void heap_lock(void)
{
    while (atomic_flag_test_and_set_explicit(&heap.lock, memory_order_acquire)) {
    }
}

static void heap_unlock(void)
{
    atomic_flag_clear_explicit(&heap.lock, memory_order_release);
}

static block_head *head_of(void *p)
{
    return (block_head *)p - 1;
}

static int guarded(const void *p)
{
    return heap.base && (const char *)p >= heap.base && (const char *)p < heap.end;
}

/* pages (read-write) followed by HEAP_GAP bytes that are not: a freed run of that length, else
 * new address space; NULL when there is none. */
static char *take_pages(size_t pages)
{
    char *start = NULL;
    heap_lock();
    if (pages <= HEAP_CLASSES && heap.free_pages[pages]) {
        start = heap.free_pages[pages];
        memcpy(&heap.free_pages[pages], start, sizeof start);
        heap_unlock();
        return start;
    }
    /* Every run is a mapping of its own and its gap another: past max_small_runs (a file of
     * very many objects) small blocks come from glibc, which needs mappings too. */
    size_t stride = pages * heap.page + HEAP_GAP;
    int small = pages <= HEAP_CLASSES;
    if ((size_t)(heap.end - heap.next) >= stride &&
        (!small || heap.small_runs < heap.max_small_runs)) {
        start = heap.next;
        heap.next += stride;
        heap.small_runs += small ? 1 : 0;
    }
    heap_unlock();
    if (start && mprotect(start, pages * heap.page, PROT_READ | PROT_WRITE) != 0)
        start = NULL; /* e.g. the limit of mappings: this run of pages stays unused */
    return start;
}

static void give_pages(char *start, size_t pages)
{
    if (pages > HEAP_CLASSES) { /* back to the kernel; the addresses are not used again */
        mmap(start, pages * heap.page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
             MAP_FIXED, -1, 0);
        return;
    }
    heap_lock();
    memcpy(start, &heap.free_pages[pages], sizeof start);
    heap.free_pages[pages] = start;
    heap_unlock();
}

/* The alignment a block of `size` bytes needs: that of the largest power of two dividing its
 * size, up to 16 (an array of any type, a struct with its padding, is a multiple of its type's
 * alignment), so that the block can end exactly where the unreadable bytes begin. */
static size_t natural_align(size_t size)
{
    size_t a = size & (~size + 1); /* the lowest bit set; 0 for 0 */
    return a == 0 || a > 16 ? 16 : a < HEAP_MIN_ALIGN ? HEAP_MIN_ALIGN : a;
}

/* A block that ends where HEAP_GAP unreadable bytes begin; NULL if no page can be had. */
static void *guarded_block(size_t align, size_t size)
{
    if (align < natural_align(size))
        align = natural_align(size);
    if (align > heap.page || size > HEAP_RESERVE / 64)
        return NULL;
    size_t pages = (size + align + sizeof(block_head) + heap.page - 1) / heap.page;
    char *start = take_pages(pages);
    if (!start)
        return NULL;
    uintptr_t end = (uintptr_t)(start + pages * heap.page);
    char *p = (char *)((end - size) & ~(uintptr_t)(align - 1));
    head_of(p)->size = size;
    head_of(p)->start = start;
    return p;
}

static void *glibc_block(size_t align, size_t size)
{
    if (align < sizeof(block_head))
        align = sizeof(block_head);
    if (size > SIZE_MAX - align)
        return NULL;
    char *raw = __libc_memalign(align, size + align);
    if (!raw)
        return NULL;
    head_of(raw + align)->size = size;
    head_of(raw + align)->start = raw;
    return raw + align;
}

static void *heap_alloc(size_t align, size_t size)
{
    while (align & (align - 1)) /* as glibc: up to a power of two */
        align += align & -align;
    void *p = atomic_load(&heap.on) ? guarded_block(align, size) : NULL;
    if (!p)
        p = glibc_block(align, size);
    if (!p)
        errno = ENOMEM;
    return p;
}

/* HEAP_SMALL_RUNS, or a quarter of the kernel's limit of mappings if that is less. */
static size_t max_small_runs(void)
{
    long limit = 0;
    FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
    if (f) {
        if (fscanf(f, "%ld", &limit) != 1)
            limit = 0;
        fclose(f);
    }
    return limit > 0 && (size_t)limit / 4 < HEAP_SMALL_RUNS ? (size_t)limit / 4 : HEAP_SMALL_RUNS;
}

/* HEAP_RESERVE, or a quarter of the limit of this process's address space if that is less
 * (reserved address space counts against it; the rest is libhdf5's, unguarded or not). */
static size_t heap_reserve(void)
{
    struct rlimit as;
    if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY &&
        as.rlim_cur / 4 < HEAP_RESERVE)
        return (size_t)(as.rlim_cur / 4);
    return HEAP_RESERVE;
}

/* Reserve the address space (once) and guard the blocks from now on (on = 1), or stop. */
static void heap_guard(int on)
{
    if (on && !heap.base) {
        heap.page = (size_t)sysconf(_SC_PAGESIZE);
        heap.max_small_runs = max_small_runs();
        for (size_t n = heap_reserve(); n >= ((size_t)1 << 24) && !heap.base; n /= 4) {
            void *p = mmap(NULL, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
                           0);
            if (p != MAP_FAILED) {
                heap.next = heap.base = p;
                heap.end = heap.base + n;
            }
        }
    }
    atomic_store(&heap.on, on);
}

void free(void *p)
{
    if (!p)
        return;
    block_head *h = head_of(p);
    if (!guarded(p)) {
        __libc_free(h->start);
        return;
    }
    size_t used = (size_t)((char *)p + h->size - h->start);
    give_pages(h->start, (used + heap.page - 1) / heap.page);
}

void *malloc(size_t size)
{
    return heap_alloc(0, size); /* no alignment asked for: the block's own (guarded_block) */
}

void *calloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = heap_alloc(0, n * size);
    if (p) /* reused pages are not zero */
        memset(p, 0, n * size);
    return p;
}

void *realloc(void *p, size_t size)
{
    if (!p)
        return malloc(size);
    if (size == 0) { /* as glibc */
        free(p);
        return NULL;
    }
    void *q = malloc(size);
    if (q) {
        size_t old = head_of(p)->size;
        memcpy(q, p, old < size ? old : size);
        free(p);
    }
    return q;
}

void *reallocarray(void *p, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, n * size);
}

void *memalign(size_t align, size_t size)
{
    return heap_alloc(align, size);
}

void *aligned_alloc(size_t align, size_t size)
{
    return heap_alloc(align, size);
}

int posix_memalign(void **out, size_t align, size_t size)
{
    if (align < sizeof(void *) || (align & (align - 1)))
        return EINVAL;
    void *p = heap_alloc(align, size);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

void *valloc(size_t size)
{
    return heap_alloc((size_t)sysconf(_SC_PAGESIZE), size);
}

void *pvalloc(size_t size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return heap_alloc(page, (size + page - 1) / page * page);
}

size_t malloc_usable_size(void *p)
{
    return p ? head_of(p)->size : 0;
}
#else
static void heap_guard(int on)
{
    (void)on;
}
#endif

/* ------------------------------------------------------------------ main */

static int write_all(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

static int parse_long(const char *s, long lo, long hi, long *v)
{
    char *end = NULL;
    errno = 0;
    long x = strtol(s, &end, 10);
    if (errno || end == s || *end || x < lo || x > hi)
        return -1;
    *v = x;
    return 0;
}

int main(int argc, char **argv)
{
    long caller, cpu;
    if (argc != 4 || parse_long(argv[1], 1, LONG_MAX, &caller) ||
        parse_long(argv[2], 1, 1L << 30, &cpu) || !argv[3][0]) {
        fprintf(stderr, "usage: atf-h5check CALLER_PID CPU_SECONDS FILE (run by libatf)\n");
        return 2;
    }
    /* Die with the caller; if it died already, the parent is someone else now. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != (pid_t)caller)
        return 3;
    struct rlimit lim = {(rlim_t)cpu, (rlim_t)cpu + 1};
    setrlimit(RLIMIT_CPU, &lim);
    struct rlimit nocore = {0, 0};
    setrlimit(RLIMIT_CORE, &nocore);

    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    checker c;
    memset(&c, 0, sizeof c);
    c.fname = argv[3];
    c.file = -1;
    heap_guard(1); /* from the file's first byte to its close */
    int st = check_file(&c);
    heap_guard(0);
    free(c.seen);
    if (st && !c.msg[0])
        fail(&c, "cannot read (corrupt file)");
    if (!st)
        H5close(); /* the library's exit handler runs before "ok" is said */
    char line[MSGLEN + 64];
    int n = st ? snprintf(line, sizeof line, "atf-h5check refused %s\n", c.msg)
               : snprintf(line, sizeof line, "atf-h5check ok\n");
    if (n < 0 || (size_t)n >= sizeof line)
        n = (int)strlen(line);
    return write_all(STDOUT_FILENO, line, (size_t)n) == 0 ? 0 : 4;
}
