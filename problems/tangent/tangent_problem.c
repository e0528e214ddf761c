/* tangent_problem.c — the factored problem (16) of an MLP on a task (`atf features`; the file
 * layout is docs/formats.md "Problem file"), and of a run of a split's examples formed chunk by
 * chunk (atf_tangent_problem_examples: a process's part under `mpirun -np K atf features`). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf_features.h"

/* A problem over one split: r = y − f0, the Jacobian blocks moved (not copied) into it. */
static atf_error split_problem(const atf_mlp *m, const atf_dataset *ds, const atf_penalty *pen,
                               const char *spec, atf_problem **out, char *err)
{
    atf_jacobian J;
    atf_error e = atf_mlp_jacobian(m, ds->N, ds->X, &J, err);
    if (e)
        return e;
    atf_problem *p = calloc(1, sizeof *p);
    size_t M = (size_t)J.M;
    if (p) {
        p->N = J.N;
        p->C = J.C;
        p->M = J.M;
        p->r = malloc(M * sizeof *p->r);
        p->y = malloc(M * sizeof *p->y);
        p->blocks = calloc((size_t)J.nblocks, sizeof *p->blocks);
        if (ds->labels)
            p->labels = malloc((size_t)ds->N * sizeof *p->labels);
    }
    if (!p || !p->r || !p->y || !p->blocks || (ds->labels && !p->labels)) {
        atf_jacobian_free(&J);
        atf_problem_free(p);
        atf_errorf(err, "features: out of memory");
        return ATF_E_NOMEM;
    }
    memcpy(p->y, ds->Y, M * sizeof *p->y);
    for (size_t i = 0; i < M; i++)
        p->r[i] = ds->Y[i] - J.f[i];
    p->f0 = J.f;
    J.f = NULL;
    if (ds->labels)
        memcpy(p->labels, ds->labels, (size_t)ds->N * sizeof *p->labels);
    p->nblocks = J.nblocks;
    for (int b = 0; b < J.nblocks; b++) {
        atf_block *blk = &p->blocks[b];
        atf_jac_block *jb = &J.blocks[b];
        snprintf(blk->name, sizeof blk->name, "%s", jb->name);
        blk->index = b;
        blk->rows = jb->rows;
        blk->cols = jb->cols;
        blk->N = J.N;
        blk->C = J.C;
        blk->M = J.M;
        blk->penalty = *pen;
        snprintf(blk->penalty_spec, sizeof blk->penalty_spec, "%s", spec);
        blk->structure = ATF_STRUCT_MATRIX;
        blk->kind = ATF_OP_FACTORED;
        blk->H = jb->H;
        blk->D = jb->D;
        jb->H = jb->D = NULL;
    }
    atf_jacobian_free(&J);
    *out = p;
    return ATF_OK;
}

atf_error atf_mlp_fingerprint(const atf_mlp *m, char *out)
{
    atf_hasher *h = atf_hasher_new("atf-mlp-fingerprint-v1");
    atf_hasher_int(h, m->arch.L);
    atf_hasher_ints(h, m->arch.widths, m->arch.L + 1);
    /* ReLU networks with a bias on every layer or none hash as before activations and
     * per-layer biases existed (bias 0/1); any other network hashes the marker 2, its bias flags
     * and its activation specs, so the two kinds never collide. */
    char acts[ATF_MAX_LAYERS * ATF_ACTIVATION_SPECLEN];
    atf_arch_activation_specs(&m->arch, acts, sizeof acts);
    int nb = atf_arch_has_bias(&m->arch);
    int legacy = (nb == 0 || nb == m->arch.L) && (!acts[0] || !strcmp(acts, "relu"));
    atf_hasher_int(h, legacy ? nb > 0 : 2);
    if (!legacy) {
        for (int l = 0; l < m->arch.L; l++)
            atf_hasher_int(h, m->arch.bias[l]);
        atf_hasher_string(h, acts);
    }
    atf_hasher_string(h, atf_param_name(m->arch.param));
    for (int l = 0; l < m->arch.L; l++) {
        int P = m->arch.widths[l], Q = m->arch.widths[l + 1];
        atf_hasher_doubles(h, m->W[l], (int64_t)P * Q);
        if (m->b[l])
            atf_hasher_doubles(h, m->b[l], Q);
    }
    return atf_hasher_finish(h, out);
}

atf_error atf_tangent_problem(const atf_mlp *m, const atf_task *task, const char *penalty,
                              atf_problem **out, char *err)
{
    *out = NULL;
    atf_penalty pen;
    char spec[ATF_PENALTY_SPECLEN];
    atf_error e = atf_penalty_parse(penalty ? penalty : "sq", &pen, err);
    if (e)
        return e;
    atf_penalty_format(&pen, spec, sizeof spec);
    atf_arch arch = m->arch;
    if ((e = atf_arch_fit_task(&arch, task, err)))
        return e;
    atf_problem *p = NULL, *test = NULL;
    e = split_problem(m, &task->train, &pen, spec, &p, err);
    if (!e && task->test.N > 0) {
        e = split_problem(m, &task->test, &pen, spec, &test, err);
        if (!e)
            p->test = test;
    }
    if (!e)
        e = atf_problem_validate(p, "features", err);
    if (!e) { /* provenance that this function knows; the caller adds source, seed, command */
        p->prov.has_standardize = 1;
        p->prov.standardize = task->standardized;
        if ((e = atf_mlp_fingerprint(m, p->prov.mlp_fingerprint)) ||
            (e = atf_problem_fingerprint(p, p->fingerprint)))
            atf_errorf(err, "features: out of memory for the fingerprints");
    }
    if (e) {
        atf_problem_free(p);
        return e;
    }
    *out = p;
    return ATF_OK;
}

/* ------------------------------------------------------------------ examples in chunks */

/* A problem of N examples shaped like part (sizes, blocks, labels or none), its arrays
 * allocated and not filled. */
static atf_error alloc_like(const atf_problem *part, int N, atf_problem **out, char *err)
{
    atf_problem *p = calloc(1, sizeof *p);
    size_t M = (size_t)N * part->C;
    if (p) {
        p->N = N;
        p->C = part->C;
        p->M = (int)M;
        p->r = malloc(M * sizeof *p->r);
        p->y = malloc(M * sizeof *p->y);
        p->f0 = malloc(M * sizeof *p->f0);
        p->labels = part->labels ? malloc((size_t)N * sizeof *p->labels) : NULL;
        p->blocks = calloc((size_t)part->nblocks, sizeof *p->blocks);
    }
    int ok = p && p->r && p->y && p->f0 && (!part->labels || p->labels) && p->blocks;
    if (ok) {
        p->nblocks = part->nblocks;
        for (int b = 0; b < part->nblocks && ok; b++) {
            atf_block *blk = &p->blocks[b];
            *blk = part->blocks[b]; /* name, index, sizes, penalty, structure, kind */
            blk->N = N;
            blk->M = (int)M;
            blk->H = malloc((size_t)N * blk->rows * sizeof(double));
            blk->D = malloc(M * blk->cols * sizeof(double));
            ok = blk->H && blk->D;
        }
    }
    if (!ok) {
        atf_problem_free(p);
        atf_errorf(err, "features: out of memory for %d examples", N);
        return ATF_E_NOMEM;
    }
    *out = p;
    return ATF_OK;
}

/* part's examples as examples i0 … i0 + part->N − 1 of all. */
static void copy_rows(atf_problem *all, const atf_problem *part, int i0)
{
    size_t C = (size_t)part->C, at = (size_t)i0 * C, n = (size_t)part->M;
    memcpy(all->r + at, part->r, n * sizeof *all->r);
    memcpy(all->y + at, part->y, n * sizeof *all->y);
    memcpy(all->f0 + at, part->f0, n * sizeof *all->f0);
    if (part->labels)
        memcpy(all->labels + i0, part->labels, (size_t)part->N * sizeof *all->labels);
    for (int b = 0; b < part->nblocks; b++) {
        const atf_block *src = &part->blocks[b];
        atf_block *dst = &all->blocks[b];
        memcpy(dst->H + (size_t)i0 * src->rows, src->H,
               (size_t)part->N * src->rows * sizeof(double));
        memcpy(dst->D + at * src->cols, src->D, n * src->cols * sizeof(double));
    }
}

atf_error atf_tangent_problem_examples(const atf_mlp *m, const atf_dataset *ds, int chunk,
                                       const char *penalty, const char *what, atf_problem **out,
                                       char *err)
{
    *out = NULL;
    if (!what)
        what = "features";
    int D = m->arch.widths[0], C = m->arch.widths[m->arch.L];
    if (ds->N < 1 || chunk < 1 || ds->D != D || ds->C != C || !ds->X || !ds->Y) {
        atf_errorf(err, "%s: %d examples with %d inputs and %d outputs in chunks of %d: need an "
                   "example, chunks of at least one and the network's %d inputs and %d outputs",
                   what, ds->N, ds->D, ds->C, chunk, D, C);
        return ATF_E_USAGE;
    }
    atf_penalty pen;
    char spec[ATF_PENALTY_SPECLEN];
    atf_error e = atf_penalty_parse(penalty ? penalty : "sq", &pen, err);
    if (e)
        return e;
    atf_penalty_format(&pen, spec, sizeof spec);
    atf_problem *all = NULL;
    for (int i0 = 0; i0 < ds->N && !e; i0 += chunk) {
        int n = ds->N - i0 < chunk ? ds->N - i0 : chunk;
        atf_dataset part = {n, D, C, ds->X + (size_t)i0 * D, ds->Y + (size_t)i0 * C,
                            ds->labels ? ds->labels + i0 : NULL};
        atf_problem *p = NULL;
        if ((e = split_problem(m, &part, &pen, spec, &p, err)))
            break;
        if (!all && n == ds->N) { /* one chunk: the whole */
            all = p;
            break;
        }
        if (!all)
            e = alloc_like(p, ds->N, &all, err);
        if (!e)
            copy_rows(all, p, i0);
        atf_problem_free(p);
    }
    if (!e)
        e = atf_problem_validate(all, what, err);
    if (e) {
        atf_problem_free(all);
        return e;
    }
    *out = all;
    return ATF_OK;
}
