/* checkpoint_io.c — checkpoint files (docs/formats.md "Checkpoints"): the state a solver hands
 * out in the middle of a long solve, kept so that the solve can go on after an interruption.
 *
 * Root attributes: format "atf-checkpoint", version 1, key (the solver's text naming what the
 * state belongs to); dataset /state [len], float64. The state is the solver's own (opaque here):
 * the reader checks the file's format and that every number is finite, the solver checks the
 * key and the length when it resumes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
