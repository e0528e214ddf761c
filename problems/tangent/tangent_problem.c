/* tangent_problem.c — the factored problem (16) of an MLP on a task (`atf features`; the file
 * layout is docs/formats.md "Problem file"), and of a run of a split's examples
 * (atf_tangent_problem_examples: a process's part under `mpirun -np K atf features`). Both form
 * the Jacobian in the chunks of atf_shard_chunk(N) of the whole split, so a part has the bits of
 * the whole (atf_mlp_jacobian_chunks). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf_features.h"

/* A problem over one split, its Jacobian formed `chunk` examples at a time: r = y − f0, the
 * Jacobian blocks moved (not copied) into it. */
static atf_error split_problem(const atf_mlp *m, const atf_dataset *ds, int chunk,
                               const atf_penalty *pen, const char *spec, atf_problem **out,
                               char *err)
{
    atf_jacobian J;
    atf_error e = atf_mlp_jacobian_chunks(m, ds->N, ds->X, chunk, &J, err);
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

/* Every block's penalty (NULL: "sq") and its canonical spec. */
static atf_error parse_penalty(const char *penalty, atf_penalty *pen, char *spec, char *err)
{
    atf_error e = atf_penalty_parse(penalty ? penalty : "sq", pen, err);
    if (!e)
        atf_penalty_format(pen, spec, ATF_PENALTY_SPECLEN);
    return e;
}

atf_error atf_tangent_problem(const atf_mlp *m, const atf_task *task, const char *penalty,
                              atf_problem **out, char *err)
{
    *out = NULL;
    atf_penalty pen;
    char spec[ATF_PENALTY_SPECLEN];
    atf_error e = parse_penalty(penalty, &pen, spec, err);
    if (e)
        return e;
    atf_arch arch = m->arch;
    if ((e = atf_arch_fit_task(&arch, task, err)))
        return e;
    atf_problem *p = NULL, *test = NULL;
    e = split_problem(m, &task->train, atf_shard_chunk(task->train.N), &pen, spec, &p, err);
    if (!e && task->test.N > 0) {
        e = split_problem(m, &task->test, atf_shard_chunk(task->test.N), &pen, spec, &test, err);
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

/* ------------------------------------------------------------------ a run of examples */

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
    atf_error e = parse_penalty(penalty, &pen, spec, err);
    if (e)
        return e;
    atf_problem *all = NULL;
    e = split_problem(m, ds, chunk, &pen, spec, &all, err);
    if (!e)
        e = atf_problem_validate(all, what, err);
    if (e) {
        atf_problem_free(all);
        return e;
    }
    *out = all;
    return ATF_OK;
}
