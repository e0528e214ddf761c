/* test_problem_shard.c — atf_problem_read_shard: a process's rows of a problem file.
 *
 * A problem of N = 37 examples, C = 3 outputs and three factored blocks (their names in another
 * order than their indices, penalties and a diagonal structure), targets, initial outputs,
 * labels and a test split whose blocks are factored, dense and sparse, is written once. Shards
 * of several ranges, the whole one included, must hold exactly (bit for bit) the rows of H and
 * D of their examples that atf_problem_read gives, and every example's r, y, f0 and labels; no
 * test split; the same fingerprint as the full reader (streamed from the file), also for a file
 * without test split and for one edited after it was written. Also: fingerprint = 0 and
 * check = 0 (the checker is not run), non-finite values refused with the full reader's words,
 * bad ranges (ATF_E_USAGE), dense and sparse blocks (ATF_E_INPUT), and the functions that need
 * the whole problem refusing a shard.
 *
 * Usage: test_problem_shard DIR (a scratch directory; files are created and removed there). */
#include <hdf5.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atf_problem.h"
#include "atf_test.h"
#include "problem_fixtures.h"

enum { N = 37, C = 3, NT = 11 };

/* ---------------------------------------------------------------- building problems */

static atf_problem *make_problem(uint64_t seed, int with_test, atf_operator_kind first_kind)
{
    atf_test_rng rng;
    atf_test_rng_seed(&rng, seed);
    atf_problem *p = atf_problem_new(N, C, 3);
    atf_test_fill_symmetric(&rng, (size_t)p->M, p->r);
    p->y = atf_test_new_symmetric(&rng, (size_t)p->M);
    p->f0 = atf_test_new_symmetric(&rng, (size_t)p->M);
    p->labels = malloc((size_t)N * sizeof *p->labels);
    for (int i = 0; i < N; i++)
        p->labels[i] = (i * 5 + 1) % C;
    /* sorted by index, which is not the names' order (the reader lists members by name) */
    set_block(&p->blocks[0], "z_first", 0, 4, 3, first_kind, "sq+abs");
    set_block(&p->blocks[1], "m_mid", 2, 5, 2, ATF_OP_FACTORED, "pow:p=1.5,scale=0.1");
    set_block(&p->blocks[2], "a_last", 7, 1, 3, ATF_OP_FACTORED, "sq");
    p->blocks[1].structure = ATF_STRUCT_DIAGONAL;
    for (int l = 0; l < 3; l++)
        fill_operator(&rng, &p->blocks[l]);
    snprintf(p->prov.data_source, sizeof p->prov.data_source, "test:shard");
    p->prov.has_data_seed = 1;
    p->prov.data_seed = 99;
    if (with_test) {
        static const atf_operator_kind kinds[3] = {ATF_OP_FACTORED, ATF_OP_DENSE, ATF_OP_SPARSE};
        atf_problem *t = atf_problem_new(NT, C, 3);
        t->y = atf_test_new_symmetric(&rng, (size_t)t->M);
        t->f0 = atf_test_new_symmetric(&rng, (size_t)t->M);
        for (int m = 0; m < t->M; m++)
            t->r[m] = t->y[m] - t->f0[m];
        t->labels = malloc((size_t)NT * sizeof *t->labels);
        for (int i = 0; i < NT; i++)
            t->labels[i] = i % C;
        for (int l = 0; l < 3; l++) {
            const atf_block *b = &p->blocks[l];
            set_block(&t->blocks[l], b->name, b->index, b->rows, b->cols, kinds[l],
                      b->penalty_spec);
            t->blocks[l].structure = b->structure;
            fill_operator(&rng, &t->blocks[l]);
        }
        p->test = t;
    }
    return p;
}

static void write_problem(const char *path, atf_problem *p)
{
    char err[ATF_ERRLEN] = "";
    CHECK(atf_problem_write(path, p, err) == ATF_OK, "write %s: %s", path, err);
    atf_problem_free(p);
}

static atf_problem *read_full(const char *path)
{
    char err[ATF_ERRLEN] = "";
    atf_problem *p = NULL;
    CHECK(atf_problem_read(path, &p, err) == ATF_OK, "read %s: %s", path, err);
    return p;
}

/* One value of the dataset `item` (rank 2) of the file set to v, as h5py would edit it. */
static void poke(const char *file, const char *item, hsize_t i, hsize_t j, double v)
{
    hid_t f = H5Fopen(file, H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t d = f >= 0 ? H5Dopen2(f, item, H5P_DEFAULT) : -1;
    hid_t fs = d >= 0 ? H5Dget_space(d) : -1;
    hsize_t start[2] = {i, j}, count[2] = {1, 1};
    hid_t ms = H5Screate_simple(2, count, NULL);
    herr_t st = -1;
    if (fs >= 0 && H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) >= 0)
        st = H5Dwrite(d, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, &v);
    H5Sclose(ms);
    if (fs >= 0)
        H5Sclose(fs);
    if (d >= 0)
        H5Dclose(d);
    if (f >= 0)
        H5Fclose(f);
    CHECK(st >= 0, "poke %s %s[%llu, %llu]", file, item, (unsigned long long)i,
          (unsigned long long)j);
}

/* ---------------------------------------------------------------- comparisons */

/* s is the shard [first, first + count) of full: its own rows of H and D, the rest whole. */
static void compare_shard(const char *ctx, const atf_problem *full, const atf_problem *s,
                          int first, int count, atf_test_rng *rng)
{
    size_t m = (size_t)full->M * sizeof(double);
    CHECK(s->N == full->N && s->C == full->C && s->M == full->M && s->nblocks == full->nblocks,
          "%s: sizes %d, %d, %d, %d blocks", ctx, s->N, s->C, s->M, s->nblocks);
    CHECK(s->shard_first == first && s->shard_count == count, "%s: shard %d, %d", ctx,
          s->shard_first, s->shard_count);
    CHECK(!s->test, "%s: no test split", ctx);
    CHECK(same_bits(s->r, full->r, m) && same_bits(s->y, full->y, m) &&
              same_bits(s->f0, full->f0, m),
          "%s: r, y, f0 whole", ctx);
    CHECK(same_bits(s->labels, full->labels, (size_t)full->N * sizeof(int)), "%s: labels whole",
          ctx);
    CHECK(!strcmp(s->prov.data_source, full->prov.data_source) && s->prov.has_data_seed &&
              s->prov.data_seed == 99 && !strcmp(s->prov.atf_version, full->prov.atf_version),
          "%s: provenance", ctx);
    if (s->nblocks != full->nblocks)
        return;
    for (int l = 0; l < s->nblocks; l++) {
        const atf_block *a = &full->blocks[l], *b = &s->blocks[l];
        CHECK(!strcmp(a->name, b->name) && a->index == b->index && a->rows == b->rows &&
                  a->cols == b->cols && a->kind == b->kind && a->structure == b->structure &&
                  !strcmp(a->penalty_spec, b->penalty_spec),
              "%s: block %s: description", ctx, a->name);
        CHECK(b->N == count && b->C == C && b->M == count * C, "%s: block %s: N %d, M %d", ctx,
              a->name, b->N, b->M);
        CHECK(!b->J && !b->indptr && !b->indices && !b->data, "%s: block %s: only H, D", ctx,
              a->name);
        CHECK(same_bits(b->H, a->H + (size_t)first * a->rows,
                   (size_t)count * a->rows * sizeof(double)),
              "%s: block %s: H rows %d … %d", ctx, a->name, first, first + count - 1);
        CHECK(same_bits(b->D, a->D + (size_t)first * C * a->cols,
                   (size_t)count * C * a->cols * sizeof(double)),
              "%s: block %s: D rows", ctx, a->name);
        /* the shard's operator is the full one's rows of its examples */
        size_t w = (size_t)a->rows * a->cols;
        double *B = atf_test_new_normal(rng, w), *ya = atf_test_alloc((size_t)full->M),
               *yb = atf_test_alloc((size_t)count * C);
        atf_block_apply(a, B, 0.0, ya);
        atf_block_apply(b, B, 0.0, yb);
        CHECK(max_rel_diff((size_t)count * C, yb, ya + (size_t)first * C) <= 1e-14,
              "%s: block %s: apply", ctx, a->name);
        free(B), free(ya), free(yb);
    }
}

/* ---------------------------------------------------------------- tests */

static void test_ranges(const char *path)
{
    atf_test_rng rng;
    atf_test_rng_seed(&rng, 7);
    atf_problem *full = read_full(path);
    if (!full)
        return;
    CHECK(full->fingerprint_state == ATF_FINGERPRINT_MATCHES, "full read: state %d",
          full->fingerprint_state);
    static const int ranges[][2] = {{0, N}, {0, 1}, {N - 1, 1}, {5, 10}, {12, 25}, {17, 3}};
    for (size_t r = 0; r < sizeof ranges / sizeof *ranges; r++) {
        int first = ranges[r][0], count = ranges[r][1];
        for (int mode = 0; mode < 4; mode++) {
            int check = mode & 1, fp = mode >> 1;
            char ctx[96], err[ATF_ERRLEN] = "";
            snprintf(ctx, sizeof ctx, "shard %d + %d (check %d, fingerprint %d)", first, count,
                     check, fp);
            atf_problem *s = NULL;
            atf_error e = atf_problem_read_shard(path, first, count, check, fp, &s, err);
            CHECK(e == ATF_OK && s, "%s: %s", ctx, err);
            if (!s)
                continue;
            compare_shard(ctx, full, s, first, count, &rng);
            if (fp)
                CHECK(!strcmp(s->fingerprint, full->fingerprint) &&
                          s->fingerprint_state == ATF_FINGERPRINT_MATCHES,
                      "%s: fingerprint %s (state %d), full reader %s", ctx, s->fingerprint,
                      s->fingerprint_state, full->fingerprint);
            else
                CHECK(s->fingerprint[0] == '\0' &&
                          s->fingerprint_state == ATF_FINGERPRINT_ABSENT,
                      "%s: no fingerprint: '%s', state %d", ctx, s->fingerprint,
                      s->fingerprint_state);
            CHECK(atf_problem_validate(s, "shard", err) == ATF_OK, "%s: validate: %s", ctx,
                  err);
            atf_problem_free(s);
        }
    }
    atf_problem_free(full);
}

/* Files without a test split, and edited after atf wrote them: the same fingerprint as the
 * full reader, and the same verdict on the stored one. */
static void test_fingerprints(const char *dir)
{
    char path[4200], err[ATF_ERRLEN] = "";
    snprintf(path, sizeof path, "%s/no_test.h5", dir);
    write_problem(path, make_problem(11, 0, ATF_OP_FACTORED));
    atf_problem *full = read_full(path), *s = NULL;
    CHECK(atf_problem_read_shard(path, 30, 7, 1, 1, &s, err) == ATF_OK, "no test: %s", err);
    CHECK(full && s && !strcmp(s->fingerprint, full->fingerprint) &&
              s->fingerprint_state == ATF_FINGERPRINT_MATCHES,
          "no test split: fingerprint %s vs %s", s ? s->fingerprint : "-",
          full ? full->fingerprint : "-");
    atf_problem_free(full);
    atf_problem_free(s);
    unlink(path);

    snprintf(path, sizeof path, "%s/edited.h5", dir);
    write_problem(path, make_problem(12, 1, ATF_OP_FACTORED));
    poke(path, "/blocks/m_mid/D", 100, 1, 0.125);  /* outside the shard read below */
    poke(path, "/test/blocks/m_mid/J", 4, 3, -2.5); /* the test split's dense block */
    full = read_full(path);
    s = NULL;
    CHECK(atf_problem_read_shard(path, 0, 10, 1, 1, &s, err) == ATF_OK, "edited: %s", err);
    CHECK(full && full->fingerprint_state == ATF_FINGERPRINT_DIFFERS, "edited: full state %d",
          full ? (int)full->fingerprint_state : -1);
    CHECK(full && s && !strcmp(s->fingerprint, full->fingerprint) &&
              s->fingerprint_state == ATF_FINGERPRINT_DIFFERS,
          "edited: fingerprint %s (state %d) vs %s", s ? s->fingerprint : "-",
          s ? (int)s->fingerprint_state : -1, full ? full->fingerprint : "-");
    atf_problem_free(full);
    atf_problem_free(s);
    unlink(path);
}

/* A non-finite value is refused in the full reader's words wherever a shard reads it: in its
 * own rows, or in the stream of the fingerprint (other rows, the test split). */
static void expect_same_refusal(const char *ctx, const char *path, int first, int count, int fp,
                                const char *full_err)
{
    char err[ATF_ERRLEN] = "";
    atf_problem *s = NULL;
    atf_error e = atf_problem_read_shard(path, first, count, 1, fp, &s, err);
    CHECK(e == ATF_E_INPUT && !s && !strcmp(err, full_err), "%s: %d '%s', full reader '%s'",
          ctx, (int)e, err, full_err);
    atf_problem_free(s);
}

static void test_non_finite(const char *dir)
{
    char path[4200], err[ATF_ERRLEN] = "", full_err[ATF_ERRLEN] = "";
    snprintf(path, sizeof path, "%s/nan.h5", dir);
    write_problem(path, make_problem(13, 1, ATF_OP_FACTORED));
    poke(path, "/blocks/z_first/H", 30, 1, NAN);
    atf_problem *p = NULL;
    CHECK(atf_problem_read(path, &p, full_err) == ATF_E_INPUT &&
              strstr(full_err, "/blocks/z_first/H: non-finite value nan at [30, 1]"),
          "full reader: '%s'", full_err);
    atf_problem_free(p);
    expect_same_refusal("H, the shard's rows", path, 28, 5, 0, full_err);
    expect_same_refusal("H, in the fingerprint's stream", path, 0, 5, 1, full_err);
    CHECK(atf_problem_read_shard(path, 0, 5, 1, 0, &p, err) == ATF_OK,
          "rows not read, no fingerprint: %s", err);
    atf_problem_free(p);

    write_problem(path, make_problem(13, 1, ATF_OP_FACTORED));
    poke(path, "/test/blocks/m_mid/J", 20, 7, INFINITY);
    p = NULL;
    CHECK(atf_problem_read(path, &p, full_err) == ATF_E_INPUT &&
              strstr(full_err, "/test/blocks/m_mid/J: non-finite value inf at [20, 7]"),
          "full reader: '%s'", full_err);
    atf_problem_free(p);
    expect_same_refusal("test J, in the fingerprint's stream", path, 3, 4, 1, full_err);
    p = NULL;
    CHECK(atf_problem_read_shard(path, 3, 4, 1, 0, &p, err) == ATF_OK,
          "test split not read without fingerprint: %s", err);
    atf_problem_free(p);
    unlink(path);
}

static void test_bad_ranges(const char *path)
{
    static const int bad[][2] = {{-1, 3}, {0, 0}, {4, -2}, {35, 3}, {N, 1}, {0, N + 1},
                                 {INT_MAX, 1}, {1, INT_MAX}};
    for (size_t r = 0; r < sizeof bad / sizeof *bad; r++) {
        char err[ATF_ERRLEN] = "";
        atf_problem *s = (atf_problem *)path; /* must be set to NULL */
        atf_error e = atf_problem_read_shard(path, bad[r][0], bad[r][1], 1, 1, &s, err);
        CHECK(e == ATF_E_USAGE && !s && strstr(err, path) && !strchr(err, '\n'),
              "range %d + %d: %d '%s'", bad[r][0], bad[r][1], (int)e, err);
    }
    char err[ATF_ERRLEN] = "";
    atf_problem *s = NULL;
    atf_problem_read_shard(path, 35, 3, 0, 0, &s, err);
    CHECK(strstr(err, "a shard of 3 examples from example 35") &&
              strstr(err, "0 … 36 (samples = 37)"),
          "the sizes named: '%s'", err);
}

static void test_other_kinds(const char *dir)
{
    static const struct {
        atf_operator_kind kind;
        const char *words;
    } cases[] = {{ATF_OP_DENSE, "block 'z_first' is dense; only factored blocks can be read "
                                "as a shard"},
                 {ATF_OP_SPARSE, "block 'z_first' is sparse; only factored blocks can be read "
                                 "as a shard"}};
    char path[4200];
    snprintf(path, sizeof path, "%s/kinds.h5", dir);
    for (size_t c = 0; c < 2; c++) {
        write_problem(path, make_problem(14, 1, cases[c].kind));
        char err[ATF_ERRLEN] = "";
        atf_problem *s = NULL;
        atf_error e = atf_problem_read_shard(path, 0, 5, 1, 1, &s, err);
        CHECK(e == ATF_E_INPUT && !s && strstr(err, path) && strstr(err, cases[c].words) &&
                  !strchr(err, '\n'),
              "%s block: %d '%s'", cases[c].words + 16, (int)e, err);
    }
    unlink(path);
}

/* What needs every example refuses a shard; validate checks it as one. */
static void test_whole_problem_needed(const char *dir, const char *path)
{
    char err[ATF_ERRLEN] = "", out[4200], fp[ATF_FINGERPRINT_LEN] = "x";
    atf_problem *s = NULL, *sel = NULL;
    CHECK(atf_problem_read_shard(path, 5, 10, 0, 0, &s, err) == ATF_OK, "shard: %s", err);
    if (!s)
        return;
    snprintf(out, sizeof out, "%s/rewritten.h5", dir);
    atf_error e = atf_problem_write(out, s, err);
    CHECK(e == ATF_E_USAGE && strstr(err, "a shard of examples 5 … 14;") &&
              strstr(err, "needs the whole problem") && access(out, F_OK) != 0,
          "write: %d '%s'", (int)e, err);
    CHECK(atf_problem_fingerprint(s, fp) == ATF_E_USAGE && fp[0] == '\0', "fingerprint '%s'",
          fp);
    const int idx[] = {5, 6};
    e = atf_problem_select_examples(s, idx, 2, &sel, err);
    CHECK(e == ATF_E_USAGE && !sel && strstr(err, "a shard of examples 5 … 14;"),
          "select: %d '%s'", (int)e, err);
    CHECK(atf_problem_validate(s, "shard", err) == ATF_OK, "validate: %s", err);
    s->shard_first = 30; /* 30 + 10 > N */
    CHECK(atf_problem_validate(s, "shard", err) == ATF_E_INPUT && strstr(err, "outside"),
          "validate, shard past N: '%s'", err);
    s->shard_first = 5;
    s->blocks[1].N = N; /* the block claims every example */
    CHECK(atf_problem_validate(s, "shard", err) == ATF_E_INPUT && strstr(err, "m_mid"),
          "validate, block sizes: '%s'", err);
    s->blocks[1].N = 10;
    atf_problem_free(s);
}

/* check = 0 does not run atf-h5check: with a checker that cannot be started, check = 1 fails
 * and check = 0 reads; a missing file is still named. */
static void test_unchecked(const char *dir, const char *path)
{
    const char *old = getenv("ATF_H5CHECK");
    char saved[4200] = "";
    if (old)
        snprintf(saved, sizeof saved, "%s", old);
    char nowhere[4300];
    snprintf(nowhere, sizeof nowhere, "%s/no-such-dir/atf-h5check", dir);
    setenv("ATF_H5CHECK", nowhere, 1);
    char err[ATF_ERRLEN] = "";
    atf_problem *s = NULL;
    CHECK(atf_problem_read_shard(path, 2, 3, 1, 1, &s, err) != ATF_OK && !s,
          "check = 1 without a checker read the file");
    CHECK(atf_problem_read_shard(path, 2, 3, 0, 1, &s, err) == ATF_OK && s,
          "check = 0: %s", err);
    atf_problem_free(s);
    s = NULL;
    char missing[4300];
    snprintf(missing, sizeof missing, "%s/missing.h5", dir);
    CHECK(atf_problem_read_shard(missing, 2, 3, 0, 1, &s, err) == ATF_E_INPUT && !s &&
              strstr(err, "missing.h5: cannot open"),
          "check = 0, missing file: '%s'", err);
    if (old)
        setenv("ATF_H5CHECK", saved, 1);
    else
        unsetenv("ATF_H5CHECK");
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_problem_shard SCRATCH_DIR\n");
        return 2;
    }
    char dir[4000], path[4200];
    snprintf(dir, sizeof dir, "%s/shard_scratch", argv[1]);
    mkdir(argv[1], 0755);
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/p.h5", dir);
    write_problem(path, make_problem(10, 1, ATF_OP_FACTORED));
    test_ranges(path);
    test_fingerprints(dir);
    test_non_finite(dir);
    test_bad_ranges(path);
    test_other_kinds(dir);
    test_whole_problem_needed(dir, path);
    test_unchecked(dir, path);
    unlink(path);
    rmdir(dir);
    return atf_test_finish("test_problem_shard");
}
