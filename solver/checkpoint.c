/* checkpoint.c — the solver's saved state: what a state belongs to (its key), the check that a
 * state handed back is this solve's, and the files that keep states and preconditioner factors
 * (docs/formats.md, "Checkpoints" and "Preconditioner files"), on the storage layer
 * (problems/io/h5io.h).
 *
 * A key names the method and its state's version, the problem by its content's fingerprint, the
 * loss, the tolerance and every setting that shapes the iterates, and every block's penalty; a
 * method resumes only a state whose key is its own (atf_sv_checkpoint_is_ours). The states
 * themselves are the methods' (admm.c, newton.c, alm.c, linsys/pcg.c): each keeps a header of
 * its own, checked on resume before any arithmetic; here they are opaque.
 *
 * A checkpoint file: root attributes format "atf-checkpoint", version 1, key; dataset /state
 * [len], float64. The reader checks the format and that every number is finite. A
 * preconditioner file: format "atf-precond", its key, its meta numbers and a checksum beside the
 * float32 factor (see below). Both are written atomically: complete or absent. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "h5io.h"
#include "solver_internal.h"

/* A checkpoint key names the problem's fingerprint after this tag. */
#define FINGERPRINT_TAG "; problem "

atf_error atf_sv_checkpoint_key(atf_solver *s, const char *state, const atf_loss *loss,
                                double eps, const atf_loss *bridge_to, char *key, char *err)
{
    char *fp = s->fingerprint, spec[ATF_LOSS_SPECLEN];
    if (!fp[0]) /* a problem built in code has none stored: hashed once per solve */
        snprintf(fp, ATF_FINGERPRINT_LEN, "%s", s->prob->fingerprint);
    if (!fp[0] && atf_problem_fingerprint(s->prob, fp) != ATF_OK) {
        fp[0] = '\0';
        atf_errorf(err, "%s: checkpoint: cannot fingerprint the problem", state);
        return ATF_E_USAGE;
    }
    atf_loss_format(loss, spec, sizeof spec);
    int k = snprintf(key, ATF_CHECKPOINT_KEYLEN,
                     "%s" FINGERPRINT_TAG "%s; loss %s; structure %s; reduce %d; newton_rank %d; "
                     "eps_rel %.17g; variables %zu; penalties", state, fp, spec,
                     atf_structure_name(s->structure), s->set.reduce, s->set.newton_rank,
                     eps, s->n);
    for (int b = 0; b < s->prob->nblocks && k < ATF_CHECKPOINT_KEYLEN; b++)
        k += snprintf(key + k, ATF_CHECKPOINT_KEYLEN - (size_t)k, " %s",
                      s->prob->blocks[b].penalty_spec);
    if (bridge_to && k < ATF_CHECKPOINT_KEYLEN) {
        atf_loss_format(bridge_to, spec, sizeof spec);
        k += snprintf(key + k, ATF_CHECKPOINT_KEYLEN - (size_t)k, "; on the way to %s", spec);
    }
    if (k >= ATF_CHECKPOINT_KEYLEN) {
        atf_errorf(err, "%s: checkpoint: the solve's description is longer than %d bytes "
                        "(too many blocks)", state, ATF_CHECKPOINT_KEYLEN - 1);
        return ATF_E_USAGE;
    }
    return ATF_OK;
}

/* The fingerprint in a key ("" without the tag). */
static const char *key_fingerprint(const char *key)
{
    const char *at = strstr(key, FINGERPRINT_TAG);
    return at ? at + sizeof FINGERPRINT_TAG - 1 : "";
}

/* Whether two checkpoint keys differ only in the problem's fingerprint (the 32 hex digits after
 * the tag): the same solve of a problem whose numbers are not bit for bit the same. */
static int only_the_data_differ(const char *a, const char *b)
{
    const char *pa = strstr(a, FINGERPRINT_TAG), *pb = strstr(b, FINGERPRINT_TAG);
    if (!pa || !pb || pa - a != pb - b || strncmp(a, b, (size_t)(pa - a)) != 0)
        return 0;
    size_t fp = sizeof FINGERPRINT_TAG - 1 + ATF_FINGERPRINT_LEN - 1;
    return strlen(pa) >= fp && strlen(pb) >= fp && strcmp(pa + fp, pb + fp) == 0;
}

atf_error atf_sv_checkpoint_is_ours(const char *method, const atf_checkpoint *cp,
                                    const char *key, char *err)
{
    if (strcmp(cp->key, key) == 0)
        return ATF_OK;
    if (only_the_data_differ(cp->key, key)) {
        /* The common way to get here is rebuilding the problem on another machine: OpenBLAS
         * picks its kernels by CPU, and kernels round differently. Say so, since the rest of the
         * key is the same and "another solve's" would send the user looking in the wrong place. */
        atf_errorf(err, "%s: the checkpoint is for the same solve of a problem whose numbers "
                        "differ (problem fingerprint %.32s there, %.32s here): built again on "
                        "another machine or BLAS kernel? (OpenBLAS: OPENBLAS_CORETYPE)",
                   method, key_fingerprint(cp->key), key_fingerprint(key));
        return ATF_E_INPUT;
    }
    atf_errorf(err, "%s: the checkpoint is another solve's (it is for \"%.300s\"; this solve "
                    "is \"%.300s\")", method, cp->key, key);
    return ATF_E_INPUT;
}

/* ---- the files ---- */

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

int atf_sv_count_ok(double v, double max)
{
    return v >= 0.0 && v <= max && v == floor(v);
}
