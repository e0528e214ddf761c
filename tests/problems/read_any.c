/* read_any.c — test driver: read one HDF5 file of any kind atf reads, through the public API
 * (checker first, then the in-process reader), for the checker-then-read fuzz
 * (test_h5_fuzz.py).
 *
 *   read_any problem FILE          atf_problem_read, then (if it read) the shard readers:
 *                                  atf_problem_read_shard of the first half of the examples
 *                                  with the whole file's fingerprint (hyperslabs), and
 *                                  atf_problem_read_test_shard of the test split's first half
 *   read_any result FILE           atf_result_read
 *   read_any checkpoint FILE       atf_checkpoint_read
 *   read_any precond FILE KEY LEN  atf_precond_read of LEN floats under KEY
 *   read_any mlp FILE              atf_mlp_read
 *   read_any data FILE             atf_dataset_read_h5
 *
 * Exit status as the atf command's: 0 read, 2 refused as bad input (the library's message on
 * stderr, one line), 1 any other failure. A signal is what the fuzz looks for. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf_data.h"
#include "atf_mlp.h"
#include "atf_problem.h"
#include "atf_result.h"
#include "atf_solver.h"

static int exit_code(atf_error e, const char *err)
{
    if (e)
        fprintf(stderr, "%s\n", err);
    return e == ATF_OK ? 0 : (e == ATF_E_USAGE || e == ATF_E_INPUT) ? 2 : 1;
}

/* Half of n, at least 1 (a shard is never empty). */
static int half(int n)
{
    return n / 2 > 0 ? n / 2 : 1;
}

static atf_error read_problem(const char *path, char *err)
{
    atf_problem *p = NULL, *s = NULL, *t = NULL;
    atf_error e = atf_problem_read(path, &p, err);
    if (!e && p->blocks[0].kind == ATF_OP_FACTORED) /* only factored blocks read as shards */
        e = atf_problem_read_shard(path, 0, half(p->N), 1, 1, &s, err);
    if (!e && s && p->test)
        e = atf_problem_read_test_shard(path, 0, half(p->test->N), 1, &t, err);
    atf_problem_free(t);
    atf_problem_free(s);
    atf_problem_free(p);
    return e;
}

static atf_error read_precond(const char *path, const char *key, const char *len, char *err)
{
    atf_precond_state pc;
    memset(&pc, 0, sizeof pc);
    snprintf(pc.key, sizeof pc.key, "%s", key);
    pc.len = strtoll(len, NULL, 10);
    pc.data = pc.len > 0 ? calloc((size_t)pc.len, sizeof *pc.data) : NULL;
    if (!pc.data) {
        snprintf(err, ATF_ERRLEN, "%s: bad length %s", path, len);
        return ATF_E_USAGE;
    }
    atf_error e = atf_precond_read(path, &pc, err);
    free(pc.data);
    return e;
}

static atf_error read_one(const char *kind, const char *path, int argc, char **argv, char *err)
{
    if (!strcmp(kind, "problem"))
        return read_problem(path, err);
    if (!strcmp(kind, "result")) {
        atf_result *r = NULL;
        atf_error e = atf_result_read(path, &r, err);
        atf_result_free(r);
        return e;
    }
    if (!strcmp(kind, "checkpoint")) {
        atf_checkpoint cp;
        atf_error e = atf_checkpoint_read(path, &cp, err);
        atf_checkpoint_free(&cp);
        return e;
    }
    if (!strcmp(kind, "precond") && argc == 5)
        return read_precond(path, argv[3], argv[4], err);
    if (!strcmp(kind, "mlp")) {
        atf_mlp *m = NULL;
        atf_error e = atf_mlp_read(path, &m, err);
        atf_mlp_free(m);
        return e;
    }
    if (!strcmp(kind, "data")) {
        atf_dataset d;
        atf_error e = atf_dataset_read_h5(path, &d, err);
        atf_dataset_free(&d);
        return e;
    }
    snprintf(err, ATF_ERRLEN, "read_any: unknown kind '%s' (or missing KEY LEN)", kind);
    return ATF_E_USAGE;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: read_any KIND FILE [KEY LEN]\n");
        return 2;
    }
    char err[ATF_ERRLEN] = "";
    return exit_code(read_one(argv[1], argv[2], argc, argv, err), err);
}
