/* rowstore_ranks.c — one table written by the processes of one run: each rank's part table, and
 * rank 0 moving the part tables into the table in the grid's order (internal/rowstore_ranks.h;
 * used by the samples experiment and the sweep). */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/rowstore_ranks.h"

enum { MAXPARTS = 1024, PATHLEN = 1100 };

/* OUT/NAME.csv and OUT/NAME.jsonl, or with a suffix (".part-R") the part table's. */
static atf_error table_paths(const exp_grid *g, const char *suffix, char *csv, char *jsonl,
                             char *err)
{
    char name[256];
    snprintf(name, sizeof name, "%.200s%s.csv", g->name, suffix);
    atf_error e = atf_exp_path(csv, PATHLEN, g->dir, name, err);
    snprintf(name, sizeof name, "%.200s%s.jsonl", g->name, suffix);
    return e ? e : atf_exp_path(jsonl, PATHLEN, g->dir, name, err);
}

/* NAME.part-….csv */
static int is_part(const char *file, const char *name)
{
    size_t n = strlen(name), len = strlen(file);
    return !strncmp(file, name, n) && !strncmp(file + n, ".part-", 6) && len > n + 10 &&
           !strcmp(file + len - 4, ".csv");
}

static void jsonl_of(const char *csv, char *jsonl)
{
    snprintf(jsonl, PATHLEN, "%.*sjsonl", (int)strlen(csv) - 3, csv);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* Every part table in OUT, in the order of their names, opened and checked; their CSV paths in
 * paths. parts[0 … *n−1] are NULL or open, whatever happened. */
static atf_error open_parts(const exp_grid *g, atf_rowstore **parts, char (*paths)[PATHLEN],
                            int *n, char *err)
{
    *n = 0;
    DIR *d = opendir(g->dir);
    if (!d) {
        atf_errorf(err, "%s: cannot list the directory", g->dir);
        return ATF_E_IO;
    }
    atf_error e = ATF_OK;
    for (struct dirent *f; !e && (f = readdir(d));) {
        if (!is_part(f->d_name, g->name))
            continue;
        if (*n == MAXPARTS) {
            atf_errorf(err, "%s: more than %d part tables (%s.part-...)", g->dir, MAXPARTS,
                       g->name);
            e = ATF_E_INPUT;
            break;
        }
        e = atf_exp_path(paths[*n], PATHLEN, g->dir, f->d_name, err);
        *n += !e;
    }
    closedir(d);
    qsort(paths, (size_t)*n, PATHLEN, by_name);
    for (int p = 0; p < *n; p++)
        parts[p] = NULL;
    for (int p = 0; !e && p < *n; p++) {
        char jsonl[PATHLEN];
        jsonl_of(paths[p], jsonl);
        e = atf_rowstore_open(paths[p], jsonl, "key", &parts[p], err);
        if (!e && g->check)
            e = g->check(g->ctx, parts[p], paths[p], err);
    }
    return e;
}

/* A row of a part table and where it goes: its grid row (LONG_MAX outside the grid: after the
 * grid's rows), then the part table's and the row's order. */
typedef struct {
    long at;
    int part, row;
} part_ref;

static int by_place(const void *a, const void *b)
{
    const part_ref *x = a, *y = b;
    if (x->at != y->at)
        return x->at < y->at ? -1 : 1;
    if (x->part != y->part)
        return x->part < y->part ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

static long key_index(const exp_grid *g, const atf_row *row, const char *field)
{
    const char *key = atf_row_get(row, field);
    return key ? g->index(g->ctx, key) : -1;
}

/* Every row of the part tables not yet in the table, appended in the grid's order (rows outside
 * the grid after them); then the part tables are removed. On a failure they stay (a later run
 * moves what is still missing: nothing is written twice). */
static atf_error merge_parts(exp_shared *sh, const exp_grid *g, char *err)
{
    static atf_rowstore *parts[MAXPARTS];
    static char paths[MAXPARTS][PATHLEN];
    int np = 0;
    atf_error e = open_parts(g, parts, paths, &np, err);
    long nref = 0;
    for (int p = 0; !e && p < np; p++)
        nref += atf_rowstore_count(parts[p]);
    part_ref *refs = NULL;
    char *marked = NULL; /* grid rows in the table */
    if (!e && nref > 0) {
        refs = malloc(sizeof *refs * (size_t)nref);
        marked = calloc((size_t)g->nrows + 1, 1);
        if (!refs || !marked) {
            atf_errorf(err, "%s: out of memory merging %ld rows", g->dir, nref);
            e = ATF_E_NOMEM;
        }
    }
    if (!e && nref > 0) {
        for (int r = 0; r < atf_rowstore_count(sh->store); r++) {
            long at = key_index(g, atf_rowstore_row(sh->store, r), "key");
            if (at >= 0 && at < g->nrows)
                marked[at] = 1;
        }
        long k = 0;
        for (int p = 0; p < np; p++)
            for (int r = 0; r < atf_rowstore_count(parts[p]); r++) {
                long at = key_index(g, atf_rowstore_row(parts[p], r), "key");
                refs[k++] = (part_ref){at >= 0 && at < g->nrows ? at : LONG_MAX, p, r};
            }
        qsort(refs, (size_t)nref, sizeof *refs, by_place);
    }
    for (long k = 0; !e && k < nref; k++) {
        const atf_row *row = atf_rowstore_row(parts[refs[k].part], refs[k].row);
        const char *key = atf_row_get(row, "key");
        long at = refs[k].at;
        if (!key || (at != LONG_MAX ? marked[at] : atf_rowstore_has(sh->store, key)))
            continue; /* recorded, or met before in another part table */
        e = atf_rowstore_append(sh->store, row, err);
        if (!e && at != LONG_MAX)
            marked[at] = 1;
        sh->moved += !e;
    }
    for (int p = 0; p < np; p++) {
        atf_rowstore_close(parts[p]);
        if (!e) { /* moved: the part table goes, with its JSON lines copy */
            char jsonl[PATHLEN];
            jsonl_of(paths[p], jsonl);
            remove(paths[p]);
            remove(jsonl);
        }
    }
    free(refs);
    free(marked);
    return e;
}

atf_error exp_shared_open(exp_shared *sh, const exp_grid *g, const atf_exp_ranks *ranks,
                          atf_error before, char *err)
{
    memset(sh, 0, sizeof *sh);
    sh->ranks = ranks && ranks->size > 1 ? ranks : NULL;
    const atf_exp_ranks *rk = sh->ranks;
    if (!rk && before)
        return before;
    /* [0]: rank 0's failure, [1]: another process's failure before the start, then done */
    sh->flags = calloc((size_t)g->nrows + 2, sizeof *sh->flags);
    if (!sh->flags) {
        atf_errorf(err, "%s: out of memory", g->dir);
        return ATF_E_NOMEM;
    }
    sh->done = sh->flags + 2;
    char csv[PATHLEN], jsonl[PATHLEN];
    atf_error e = before;
    if (!e && (!rk || rk->rank == 0)) {
        e = table_paths(g, "", csv, jsonl, err);
        if (!e)
            e = atf_rowstore_open(csv, jsonl, "key", &sh->store, err);
        if (!e && g->check)
            e = g->check(g->ctx, sh->store, csv, err);
        if (!e)
            e = merge_parts(sh, g, err);
        for (int r = 0; !e && r < atf_rowstore_count(sh->store); r++) {
            long at = key_index(g, atf_rowstore_row(sh->store, r), "key");
            if (at >= 0 && at < g->nrows)
                sh->flags[2 + at] = 1;
        }
    }
    if (!rk) {
        sh->out = sh->store;
        return e;
    }
    sh->flags[rk->rank == 0 ? 0 : 1] = (int)e;
    rk->max(rk->ctx, sh->flags, (int)g->nrows + 2);
    /* rank 0 says why it failed; else each process that failed says why */
    atf_error agreed = (atf_error)(sh->flags[0] ? sh->flags[0] : sh->flags[1]);
    if (agreed && (rk->rank != 0 || !sh->flags[0]) && (sh->flags[0] || !e))
        err[0] = '\0';
    if (agreed)
        return e && (rk->rank == 0 || !sh->flags[0]) ? e : agreed;
    char suffix[32];
    snprintf(suffix, sizeof suffix, ".part-%d", rk->rank);
    e = table_paths(g, suffix, csv, jsonl, err);
    if (!e)
        e = atf_rowstore_open(csv, jsonl, "key", &sh->out, err);
    return e;
}

int exp_shared_recorded(const exp_shared *sh, long i, const char *key)
{
    return (sh->done && i >= 0 && sh->done[i]) || (sh->out && atf_rowstore_has(sh->out, key));
}

atf_error exp_shared_end(exp_shared *sh, const exp_grid *g, int *agree, int n, char *err)
{
    const atf_exp_ranks *rk = sh->ranks;
    if (!rk)
        return ATF_OK;
    atf_rowstore_close(sh->out); /* rank 0 opens every part table next */
    sh->out = NULL;
    rk->max(rk->ctx, agree, n);
    return rk->rank == 0 ? merge_parts(sh, g, err) : ATF_OK;
}

int exp_shared_added(const exp_shared *sh, int appended)
{
    return sh->moved + (sh->ranks ? 0 : appended);
}

void exp_shared_close(exp_shared *sh)
{
    if (sh->out != sh->store)
        atf_rowstore_close(sh->out);
    atf_rowstore_close(sh->store);
    free(sh->flags);
    memset(sh, 0, sizeof *sh);
}
