/* checkpoint_io.c — checkpoint files (docs/formats.md "Checkpoints"): the state a solver hands
 * out in the middle of a long solve, kept so that the solve can go on after an interruption;
 * and preconditioner files ("Preconditioner files"): a factor too costly to build again.
 *
 * Root attributes: format "atf-checkpoint", version 1, key (the solver's text naming what the
 * state belongs to); dataset /state [len], float64. The state is the solver's own (opaque here):
 * the reader checks the file's format and that every number is finite, the solver checks the
 * key and the length when it resumes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "atf_result.h"
#include "h5io.h"

#define CHECKPOINT_FORMAT "atf-checkpoint"
#define CHECKPOINT_VERSION 1

static void put_checkpoint(h5io_out *o, const void *ctx)
{
    const atf_checkpoint *cp = ctx;
    int64_t dims[1] = {cp->len};
    h5io_put_string(o, "/", "format", CHECKPOINT_FORMAT);
    h5io_put_int(o, "/", "version", CHECKPOINT_VERSION);
    h5io_put_string(o, "/", "key", cp->key);
    h5io_put_doubles(o, "/state", 1, dims, cp->data);
}

atf_error atf_checkpoint_write(const char *path, const atf_checkpoint *cp, char *err)
{
    if (!cp || cp->len < 1 || !cp->data) {
        atf_errorf(err, "%s: no checkpoint state to write", path);
        return ATF_E_INPUT;
    }
    for (int64_t i = 0; i < cp->len; i++)
        if (!isfinite(cp->data[i])) {
            atf_errorf(err, "%s: checkpoint state entry %lld is not finite", path,
                       (long long)i);
            return ATF_E_NUMERICAL;
        }
    return h5io_write_file(path, put_checkpoint, cp, err);
}

static atf_error read_checkpoint(const h5io_reader *rd, void *ctx)
{
    atf_checkpoint *cp = ctx;
    int64_t dims[1];
    atf_error e;
    if ((e = h5io_check_format(rd->f, rd->fname, CHECKPOINT_FORMAT, rd->err)) ||
        (e = h5io_check_version(rd->f, rd->fname, CHECKPOINT_VERSION, rd->err)) ||
        (e = h5io_attr_string(rd->f, rd->fname, "/", "key", cp->key, sizeof cp->key,
                              rd->err)) ||
        (e = h5io_shape(rd->f, rd->fname, "/state", 1, dims, rd->err)))
        return e;
    if (dims[0] < 1) {
        atf_errorf(rd->err, "%s: /state: empty", rd->fname);
        return ATF_E_INPUT;
    }
    if ((e = h5io_read_doubles(rd->f, rd->fname, "/state", 1, dims, &cp->data, rd->err)))
        return e;
    cp->len = dims[0];
    return ATF_OK;
}

atf_error atf_checkpoint_read(const char *path, atf_checkpoint *cp, char *err)
{
    memset(cp, 0, sizeof *cp);
    atf_error e = h5io_read_file(path, read_checkpoint, cp, err);
    if (e)
        atf_checkpoint_free(cp);
    return e;
}

void atf_checkpoint_free(atf_checkpoint *cp)
{
    if (!cp)
        return;
    free(cp->data);
    memset(cp, 0, sizeof *cp);
}

int atf_checkpoint_to_file(void *ctx, const atf_checkpoint *state)
{
    atf_checkpoint_file *f = ctx;
    return atf_checkpoint_write(f->path, state, f->err) != ATF_OK;
}

void atf_checkpoint_explain(const atf_checkpoint_file *sink, int resumed, atf_error e, char *err)
{
    if (e == ATF_E_IO && sink->err[0]) {
        snprintf(err, ATF_ERRLEN, "%s", sink->err);
    } else if (resumed && (e == ATF_E_INPUT || e == ATF_E_USAGE)) {
        char why[ATF_ERRLEN];
        snprintf(why, sizeof why, "%s", err);
        atf_errorf(err, "%s: %s (remove the file to solve from the start)", sink->path, why);
    }
}

/* ---- preconditioner files ----
 * Root attributes format "atf-precond", version 1, key, checksum (XXH3-64 of the factor's
 * bytes, 16 hex digits: a damaged factor would still be finite floats, and a preconditioner
 * built from it would fail in ways that point elsewhere); datasets /meta [ATF_PRECOND_META]
 * float64 and /factor [len] float32. */
#define PRECOND_FORMAT "atf-precond"
#define PRECOND_VERSION 1

static void checksum(const atf_precond_state *pc, char hex[17])
{
    snprintf(hex, 17, "%016llx",
             (unsigned long long)XXH3_64bits(pc->data, (size_t)pc->len * sizeof *pc->data));
}

static void put_precond(h5io_out *o, const void *ctx)
{
    const atf_precond_state *pc = ctx;
    int64_t nmeta = ATF_PRECOND_META;
    char sum[17];
    checksum(pc, sum);
    h5io_put_string(o, "/", "format", PRECOND_FORMAT);
    h5io_put_int(o, "/", "version", PRECOND_VERSION);
    h5io_put_string(o, "/", "key", pc->key);
    h5io_put_string(o, "/", "checksum", sum);
    h5io_put_doubles(o, "/meta", 1, &nmeta, pc->meta);
    h5io_put_floats(o, "/factor", pc->len, pc->data);
}

atf_error atf_precond_write(const char *path, const atf_precond_state *pc, char *err)
{
    if (!pc || pc->len < 1 || !pc->data) {
        atf_errorf(err, "%s: no preconditioner to write", path);
        return ATF_E_INPUT;
    }
    for (int i = 0; i < ATF_PRECOND_META; i++)
        if (!isfinite(pc->meta[i])) {
            atf_errorf(err, "%s: preconditioner number %d is not finite", path, i);
            return ATF_E_NUMERICAL;
        }
    for (int64_t i = 0; i < pc->len; i++)
        if (!isfinite(pc->data[i])) {
            atf_errorf(err, "%s: preconditioner entry %lld is not finite", path, (long long)i);
            return ATF_E_NUMERICAL;
        }
    return h5io_write_file(path, put_precond, pc, err);
}

static atf_error read_precond(const h5io_reader *rd, void *ctx)
{
    atf_precond_state *pc = ctx;
    char key[ATF_CHECKPOINT_KEYLEN], stored[32], sum[17];
    int64_t nmeta = ATF_PRECOND_META;
    double *meta = NULL;
    atf_error e;
    if ((e = h5io_check_format(rd->f, rd->fname, PRECOND_FORMAT, rd->err)) ||
        (e = h5io_check_version(rd->f, rd->fname, PRECOND_VERSION, rd->err)) ||
        (e = h5io_attr_string(rd->f, rd->fname, "/", "key", key, sizeof key, rd->err)) ||
        (e = h5io_attr_string(rd->f, rd->fname, "/", "checksum", stored, sizeof stored,
                              rd->err)))
        return e;
    if (strcmp(key, pc->key) != 0) {
        atf_errorf(rd->err, "%s: the preconditioner is another solve's (it is for \"%.300s\"; "
                            "this solve is \"%.300s\")", rd->fname, key, pc->key);
        return ATF_E_INPUT;
    }
    if ((e = h5io_check_shape(rd->f, rd->fname, "/factor", 1, &pc->len,
                              (const char *const[]){"this solve's factor length"}, rd->err)) ||
        (e = h5io_read_checked(rd->f, rd->fname, "/meta", 1, &nmeta,
                               (const char *const[]){"the numbers a factor comes with"}, &meta,
                               rd->err)))
        return e;
    memcpy(pc->meta, meta, sizeof pc->meta);
    free(meta);
    if ((e = h5io_read_floats(rd->f, rd->fname, "/factor", pc->len, pc->data, rd->err)))
        return e;
    checksum(pc, sum);
    if (strcmp(sum, stored) != 0) {
        atf_errorf(rd->err, "%s: /factor: its checksum is %s, the file's is %.20s (a damaged "
                            "file: remove it and the factor is built again)", rd->fname, sum,
                   stored);
        return ATF_E_INPUT;
    }
    return ATF_OK;
}

atf_error atf_precond_read(const char *path, atf_precond_state *pc, char *err)
{
    return h5io_read_file(path, read_precond, pc, err);
}
