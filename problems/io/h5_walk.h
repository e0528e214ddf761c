/* h5_walk.h — how atf lists the names in an HDF5 file: the links of a group and the attributes
 * of an object. Shared by the checker atf-h5check (h5check.c), which lists every group and
 * every object of a file this way and then reads each name it listed, and the readers of
 * h5_read.c, whose existence questions (h5io_exists, h5io_attr_exists) are answered from the
 * same lists, compared in memory.
 *
 * Why: a reader may ask for a name the file lacks (optional attributes such as 'outputs' or
 * 'penalty', optional datasets such as /test or /labels, the /W<L> after the last layer).
 * Asked of libhdf5 (H5Aexists_by_name, H5Lexists), such a question walks the whole damaged
 * list in a way the checker, which only opens the names a file has, never did (issue 46: a
 * SIGSEGV under H5Aexists_by_name in a reader, after the checker had passed the file). Answered
 * from a list made with exactly the checker's calls, it makes no call the checker did not make:
 * a reader touches libhdf5 by name only for names the checker listed, and so read, itself.
 * Keeping the two lists in this one header is what makes that hold for every future reader: a
 * reader has no other way to ask whether something exists.
 *
 * Only hdf5 and libc: the checker program links nothing else. Static inline functions: each of
 * the two programs that include this header has its own copy of the same code. */
#ifndef ATF_H5_WALK_H
#define ATF_H5_WALK_H

#include <hdf5.h>
#include <stdlib.h>
#include <string.h>

/* Called with each name in turn (NUL-terminated, valid during the call only); nonzero stops the
 * walk. */
typedef int (*h5walk_fn)(const char *name, void *ctx);

typedef enum {
    H5WALK_DONE = 0,     /* every name was given to fn */
    H5WALK_STOPPED = 1,  /* fn asked to stop */
    H5WALK_NO_LIST = -1, /* the group or the object could not be opened or listed */
    H5WALK_NO_NAME = -2, /* a name could not be read (*bad: its index) */
    H5WALK_NOMEM = -3    /* out of memory for a name */
} h5walk_status;

/* The links of the group `path` of `file`, in name order: H5Gopen2, H5Gget_info and, for each
 * member, H5Lget_name_by_idx (its length, then the name), the calls every reader that lists a
 * group makes (problem_io.c's list_blocks, result_io.c's read_blocks). */
static inline h5walk_status h5walk_links(hid_t file, const char *path, h5walk_fn fn,
                                         void *ctx, hsize_t *bad)
{
    hid_t g = H5Gopen2(file, path, H5P_DEFAULT);
    H5G_info_t info;
    if (g < 0 || H5Gget_info(g, &info) < 0) {
        if (g >= 0)
            H5Gclose(g);
        return H5WALK_NO_LIST;
    }
    h5walk_status st = H5WALK_DONE;
    for (hsize_t i = 0; i < info.nlinks && st == H5WALK_DONE; i++) {
        ssize_t len = H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, i, NULL, 0,
                                         H5P_DEFAULT);
        char *name = len > 0 ? malloc((size_t)len + 1) : NULL;
        if (len > 0 && !name) {
            st = H5WALK_NOMEM;
        } else if (!name || H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, i, name,
                                               (size_t)len + 1, H5P_DEFAULT) < 0) {
            st = H5WALK_NO_NAME;
            if (bad)
                *bad = i;
        } else if (fn(name, ctx)) {
            st = H5WALK_STOPPED;
        }
        free(name);
    }
    H5Gclose(g);
    return st;
}

typedef struct {
    h5walk_fn fn;
    void *ctx;
    int stopped;
} h5walk_attr_job;

static inline herr_t h5walk_attr_cb(hid_t loc, const char *name, const H5A_info_t *info,
                                    void *data)
{
    (void)loc;
    (void)info;
    h5walk_attr_job *job = data;
    job->stopped = job->fn(name, job->ctx) != 0;
    return job->stopped ? 1 : 0;
}

/* The attributes of the object `path` of `file`, in name order: one H5Aiterate_by_name (on a
 * damaged header it decodes every attribute message, as any look-up by name does). */
static inline h5walk_status h5walk_attrs(hid_t file, const char *path, h5walk_fn fn,
                                         void *ctx)
{
    h5walk_attr_job job = {fn, ctx, 0};
    herr_t st = H5Aiterate_by_name(file, path, H5_INDEX_NAME, H5_ITER_INC, NULL, h5walk_attr_cb,
                                   &job, H5P_DEFAULT);
    if (job.stopped)
        return H5WALK_STOPPED;
    return st < 0 ? H5WALK_NO_LIST : H5WALK_DONE;
}

/* The names a walk gave, in its order (h5walk_keep as the walk's fn; nomem: a name could not be
 * kept, the walk stopped there). */
typedef struct {
    char **names;
    size_t n, cap;
    int nomem;
} h5walk_list;

static inline int h5walk_keep(const char *name, void *ctx)
{
    h5walk_list *l = ctx;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        char **t = realloc(l->names, cap * sizeof *t);
        if (!t)
            return l->nomem = 1;
        l->names = t;
        l->cap = cap;
    }
    size_t len = strlen(name) + 1;
    if (!(l->names[l->n] = malloc(len)))
        return l->nomem = 1;
    memcpy(l->names[l->n++], name, len);
    return 0;
}

static inline void h5walk_list_free(h5walk_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->names[i]);
    free(l->names);
    l->names = NULL;
    l->n = l->cap = 0;
}

#endif
