/* fingerprint.c — content fingerprints (XXH3-128, libxxhash) of problems and networks.
 *
 * The hash runs over a canonical byte form so that it does not depend on the host or on how the
 * file stores the arrays: integers as int64 little-endian, doubles as binary64 little-endian,
 * strings as their length then their bytes. A problem's stream is, in this order: the domain tag
 * "atf-problem-fingerprint-v1"; N, C, the number of blocks; r [M]; per block in index order its
 * name, rows, cols, operator name, operator data (dense: J; sparse: nnz, J_indptr, J_indices,
 * J_data; factored: H, D) and structure name; then 0 (no test split) or 1 followed by the test
 * split's N, its y and f0 [N × C], 0 or 1 + its labels, and per block name, rows, cols, operator
 * name and operator data. docs/formats.md describes the same list. atfp_fingerprint holds that
 * order once; atf_problem_fingerprint hashes the arrays in memory, atf_problem_read_shard
 * streams the dense and factored arrays from the file in slices of rows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "atf_problem.h"
#include "problem_internal.h"

struct atf_hasher {
    XXH3_state_t *state;
};

/* Values are converted to little-endian in chunks of this many 8-byte words. */
#define CHUNK 1024

static int host_is_little_endian(void)
{
    const uint16_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    return first == 1;
}

atf_hasher *atf_hasher_new(const char *domain)
{
    atf_hasher *h = malloc(sizeof *h);
    if (!h)
        return NULL;
    h->state = XXH3_createState();
    if (!h->state || XXH3_128bits_reset(h->state) == XXH_ERROR) {
        XXH3_freeState(h->state);
        free(h);
        return NULL;
    }
    atf_hasher_string(h, domain);
    return h;
}

/* n 8-byte words (int64 or binary64 bit patterns) in little-endian byte order. */
static void update_words(atf_hasher *h, const void *words, int64_t n)
{
    if (!h || n <= 0)
        return;
    if (host_is_little_endian()) {
        XXH3_128bits_update(h->state, words, (size_t)n * 8);
        return;
    }
    const unsigned char *src = words;
    unsigned char buf[CHUNK * 8];
    for (int64_t done = 0; done < n;) {
        int64_t k = n - done < CHUNK ? n - done : CHUNK;
        for (int64_t j = 0; j < k; j++)
            for (int b = 0; b < 8; b++)
                buf[8 * j + b] = src[8 * (done + j) + 7 - b];
        XXH3_128bits_update(h->state, buf, (size_t)k * 8);
        done += k;
    }
}

void atf_hasher_int(atf_hasher *h, int64_t v)
{
    update_words(h, &v, 1);
}

void atf_hasher_string(atf_hasher *h, const char *s)
{
    size_t n = strlen(s);
    atf_hasher_int(h, (int64_t)n);
    if (h)
        XXH3_128bits_update(h->state, s, n);
}

void atf_hasher_doubles(atf_hasher *h, const double *x, int64_t n)
{
    update_words(h, x, n);
}

void atf_hasher_int64s(atf_hasher *h, const int64_t *x, int64_t n)
{
    update_words(h, x, n);
}

void atf_hasher_ints(atf_hasher *h, const int *x, int64_t n)
{
    int64_t buf[CHUNK];
    for (int64_t done = 0; done < n;) {
        int64_t k = n - done < CHUNK ? n - done : CHUNK;
        for (int64_t j = 0; j < k; j++)
            buf[j] = x[done + j];
        update_words(h, buf, k);
        done += k;
    }
}

atf_error atf_hasher_finish(atf_hasher *h, char *out)
{
    out[0] = '\0';
    if (!h)
        return ATF_E_NOMEM;
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits_digest(h->state));
    for (int j = 0; j < 16; j++)
        snprintf(out + 2 * j, 3, "%02x", c.digest[j]);
    XXH3_freeState(h->state);
    free(h);
    return ATF_OK;
}

/* ------------------------------------------------------------------ problems */

/* The row-major arrays of a block (dense J, factored H and D): from memory, or from the
 * caller's source (atfp_fingerprint). */
static atf_error hash_rows(atf_hasher *h, const atfp_fp_source *src, const atf_problem *split,
                           int test, const atf_block *b, const char *array, const double *x,
                           int64_t n)
{
    if (src)
        return src->rows(src->ctx, h, split, test, b, array);
    atf_hasher_doubles(h, x, n);
    return ATF_OK;
}

static atf_error hash_operator(atf_hasher *h, const atfp_fp_source *src, const atf_problem *split,
                               int test, const atf_block *b)
{
    atf_hasher_string(h, b->name);
    atf_hasher_int(h, b->rows);
    atf_hasher_int(h, b->cols);
    atf_hasher_string(h, atfp_operator_name(b->kind));
    atf_error e = ATF_OK;
    switch (b->kind) {
    case ATF_OP_DENSE:
        e = hash_rows(h, src, split, test, b, "J", b->J, (int64_t)b->M * b->rows * b->cols);
        break;
    case ATF_OP_SPARSE:
        atf_hasher_int(h, b->nnz);
        atf_hasher_int64s(h, b->indptr, (int64_t)b->M + 1);
        atf_hasher_int64s(h, b->indices, b->nnz);
        atf_hasher_doubles(h, b->data, b->nnz);
        break;
    case ATF_OP_FACTORED:
        e = hash_rows(h, src, split, test, b, "H", b->H, (int64_t)b->N * b->rows);
        if (!e)
            e = hash_rows(h, src, split, test, b, "D", b->D, (int64_t)b->M * b->cols);
        break;
    }
    return e;
}

static atf_error hash_test(atf_hasher *h, const atfp_fp_source *src, const atf_problem *t)
{
    atf_hasher_int(h, t->N);
    atf_hasher_doubles(h, t->y, t->y ? t->M : 0);
    atf_hasher_doubles(h, t->f0, t->f0 ? t->M : 0);
    atf_hasher_int(h, t->labels != NULL);
    if (t->labels)
        atf_hasher_ints(h, t->labels, t->N);
    atf_error e = ATF_OK;
    for (int l = 0; l < t->nblocks && !e; l++)
        e = hash_operator(h, src, t, 1, &t->blocks[l]);
    return e;
}

atf_error atfp_fingerprint(const atf_problem *prob, const atfp_fp_source *src, char *out)
{
    out[0] = '\0';
    atf_hasher *h = atf_hasher_new("atf-problem-fingerprint-v1");
    if (!h)
        return ATF_E_NOMEM; /* before the source is asked for anything */
    atf_hasher_int(h, prob->N);
    atf_hasher_int(h, prob->C);
    atf_hasher_int(h, prob->nblocks);
    atf_hasher_doubles(h, prob->r, prob->M);
    atf_error e = ATF_OK;
    for (int l = 0; l < prob->nblocks && !e; l++) {
        e = hash_operator(h, src, prob, 0, &prob->blocks[l]);
        atf_hasher_string(h, atfp_structure_name(prob->blocks[l].structure));
    }
    if (!e) {
        atf_hasher_int(h, prob->test != NULL);
        if (prob->test)
            e = hash_test(h, src, prob->test);
    }
    char digest[ATF_FINGERPRINT_LEN];
    atf_error f = atf_hasher_finish(h, digest);
    if (!e && !f)
        memcpy(out, digest, sizeof digest);
    return e ? e : f;
}

atf_error atf_problem_fingerprint(const atf_problem *prob, char *out)
{
    out[0] = '\0';
    if (prob->shard_count > 0)
        return ATF_E_USAGE; /* the rows of the other examples are not in memory */
    return atfp_fingerprint(prob, NULL, out);
}
