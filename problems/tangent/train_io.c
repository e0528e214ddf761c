/* train_io.c — the training file (docs/formats.md "Training file"): settings and protocol as
 * root attributes, θ0, B per layer, the factors and their diagnostics, the history. Written
 * atomically through h5io (the HDF5 part in a child process); everything that can fail
 * (diagnostics, memory) is computed before. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf_train.h"
#include "atf_version.h"
#include "h5io.h"

typedef struct {
    const atf_model *m;
    const atf_train_settings *s;
    const atf_train_report *r;
    const atf_attr *prov;
    int nprov;
    double *dW[ATF_MAX_LAYERS], *db[ATF_MAX_LAYERS];
    atf_factor_diag diag[ATF_MAX_LAYERS];
    double *hist;             /* [epochs_run] scratch for one history column */
    double *drift1, *drift2;  /* factorized: [epochs_run × L] */
} train_file;

static void put_mlp_arrays(h5io_out *o, const char *group, const atf_mlp *n)
{
    char path[H5IO_PATHLEN];
    h5io_put_group(o, group);
    for (int l = 0; l < n->arch.L; l++) {
        int64_t dims[2] = {n->arch.widths[l], n->arch.widths[l + 1]};
        h5io_path(path, "%s/W%d", group, l);
        h5io_put_doubles(o, path, 2, dims, n->W[l]);
        if (n->b[l]) {
            h5io_path(path, "%s/b%d", group, l);
            h5io_put_doubles(o, path, 1, dims + 1, n->b[l]);
        }
    }
}

static void put_settings(h5io_out *o, const train_file *f)
{
    const atf_train_settings *s = f->s;
    const atf_train_report *r = f->r;
    char buf[ATF_PENALTY_SPECLEN];
    h5io_put_string(o, "/", "format", "atf-train");
    h5io_put_int(o, "/", "version", 1);
    h5io_put_string(o, "/", "atf_version", ATF_VERSION);
    h5io_put_string(o, "/", "model", atf_model_kind_name(f->m->kind));
    h5io_put_string(o, "/", "optimizer", atf_optimizer_name(s->optimizer));
    h5io_put_double(o, "/", "lr", s->lr);
    h5io_put_string(o, "/", "lr_schedule", atf_lr_schedule_name(s->schedule));
    if (s->optimizer == ATF_OPT_SGD) {
        h5io_put_double(o, "/", "momentum", s->momentum);
    } else {
        h5io_put_double(o, "/", "beta1", s->beta1);
        h5io_put_double(o, "/", "beta2", s->beta2);
        h5io_put_double(o, "/", "eps", s->eps);
    }
    h5io_put_string(o, "/", "loss", atf_loss_name(s->loss));
    h5io_put_int(o, "/", "batch", s->batch);
    h5io_put_int(o, "/", "epochs", s->epochs);
    h5io_put_int(o, "/", "seed", (int64_t)s->seed);
    h5io_put_string(o, "/", "sampling", atf_sampling_name(s->sampling));
    h5io_put_string(o, "/", "stopping", atf_stopping_name(s->stopping));
    h5io_put_int(o, "/", "patience", s->patience);
    h5io_put_int(o, "/", "eval_every", s->eval_every > 1 ? s->eval_every : 1);
    h5io_put_int(o, "/", "n_train", r->n_train);
    h5io_put_int(o, "/", "n_val", r->n_val);
    h5io_put_int(o, "/", "n_pool", r->n_pool);
    if (s->use_penalty)
        atf_penalty_format(&s->penalty, buf, sizeof buf);
    h5io_put_string(o, "/", "penalty", s->use_penalty ? buf : "none");
    h5io_put_double(o, "/", "penalty_weight", s->use_penalty ? s->penalty_weight : 0.0);
    if (f->m->kind == ATF_MODEL_FACTORIZED)
        h5io_put_int(o, "/", "train_output_m2", f->m->train_output_m2);
    h5io_put_int(o, "/", "epochs_run", r->epochs_run);
    h5io_put_int(o, "/", "selected_epoch", r->selected_epoch);
    h5io_put_int(o, "/", "interrupted", r->interrupted);
    h5io_put_int(o, "/", "stopped_by_patience", r->stopped_by_patience);
    h5io_put_double(o, "/", "train_loss", r->train_loss);
    h5io_put_double(o, "/", "train_error", r->train_error);
    h5io_put_double(o, "/", "val_loss", r->val_loss);
    h5io_put_double(o, "/", "val_error", r->val_error);
    h5io_put_double(o, "/", "test_loss", r->test_loss);
    h5io_put_double(o, "/", "test_error", r->test_error);
    for (int i = 0; i < f->nprov; i++)
        h5io_put_string(o, "/", f->prov[i].name, f->prov[i].value ? f->prov[i].value : "");
}

static void put_history(h5io_out *o, train_file *f)
{
    const atf_train_report *r = f->r;
    int E = r->epochs_run, L = f->m->theta0->arch.L;
    int64_t dims[2] = {E, L};
    h5io_put_group(o, "/history");
    static const char *names[] = {"loss", "lr", "val_loss", "val_error", "test_loss",
                                  "test_error"};
    for (int c = 0; c < 6 && E > 0; c++) {
        for (int e = 0; e < E; e++) {
            const atf_train_epoch *h = &r->history[e];
            double v[6] = {h->loss, h->lr, h->val_loss, h->val_error, h->test_loss,
                           h->test_error};
            f->hist[e] = v[c];
        }
        char path[H5IO_PATHLEN];
        h5io_path(path, "/history/%s", names[c]);
        h5io_put_doubles(o, path, 1, dims, f->hist);
    }
    if (f->m->kind != ATF_MODEL_FACTORIZED || E == 0)
        return;
    h5io_put_doubles(o, "/history/drift1", 2, dims, f->drift1);
    h5io_put_doubles(o, "/history/drift2", 2, dims, f->drift2);
}

static void put_layers(h5io_out *o, const train_file *f)
{
    const atf_model *m = f->m;
    char path[H5IO_PATHLEN];
    h5io_put_group(o, "/B");
    if (m->kind == ATF_MODEL_FACTORIZED) {
        h5io_put_group(o, "/factors");
        h5io_put_group(o, "/diagnostics");
    }
    for (int l = 0; l < m->theta0->arch.L; l++) {
        int64_t P = m->theta0->arch.widths[l], Q = m->theta0->arch.widths[l + 1];
        int64_t pq[2] = {P, Q}, pp[2] = {P, P}, qq[2] = {Q, Q};
        h5io_path(path, "/B/W%d", l + 1); /* 1-based block names, as in problems */
        h5io_put_doubles(o, path, 2, pq, f->dW[l]);
        if (m->theta0->b[l]) {
            h5io_path(path, "/B/b%d", l + 1);
            h5io_put_doubles(o, path, 1, &Q, f->db[l]);
        }
        if (m->kind != ATF_MODEL_FACTORIZED)
            continue;
        h5io_path(path, "/factors/M1_%d", l + 1);
        h5io_put_doubles(o, path, 2, pp, m->M1[l]);
        h5io_path(path, "/factors/W%d", l + 1);
        h5io_put_doubles(o, path, 2, pq, m->W[l]);
        h5io_path(path, "/factors/M2_%d", l + 1);
        h5io_put_doubles(o, path, 2, qq, m->M2[l]);
        if (m->b[l]) {
            h5io_path(path, "/factors/b%d", l + 1);
            h5io_put_doubles(o, path, 1, &Q, m->b[l]);
        }
        const atf_factor_diag *d = &f->diag[l];
        char g[H5IO_PATHLEN];
        int64_t k = d->nsv;
        h5io_path(g, "/diagnostics/W%d", l + 1);
        h5io_put_group(o, g);
        h5io_put_double(o, g, "drift1", d->drift1);
        h5io_put_double(o, g, "drift2", d->drift2);
        h5io_put_double(o, g, "omega_balanced", d->omega_balanced);
        h5io_put_double(o, g, "omega_penalty", d->omega_penalty);
        h5io_put_double(o, g, "norm_B", d->norm_B);
        h5io_path(path, "%s/sv_W", g);
        h5io_put_doubles(o, path, 1, &k, d->sv_W);
        h5io_path(path, "%s/sv_B", g);
        h5io_put_doubles(o, path, 1, &k, d->sv_B);
        h5io_path(path, "%s/sv_M1", g);
        h5io_put_doubles(o, path, 1, &P, d->sv_M1);
        h5io_path(path, "%s/sv_M2", g);
        h5io_put_doubles(o, path, 1, &Q, d->sv_M2);
    }
}

static void put_train_file(h5io_out *o, const void *ctx)
{
    train_file *f = (train_file *)ctx;
    put_settings(o, f);
    put_mlp_arrays(o, "/theta0", f->m->theta0);
    if (f->m->kind == ATF_MODEL_NETWORK)
        put_mlp_arrays(o, "/network", f->m->net);
    put_layers(o, f);
    put_history(o, f);
}

static void file_free(train_file *f)
{
    for (int l = 0; l < ATF_MAX_LAYERS; l++) {
        free(f->dW[l]);
        free(f->db[l]);
        atf_factor_diag_free(&f->diag[l]);
    }
    free(f->hist);
    free(f->drift1);
    free(f->drift2);
}

atf_error atf_train_write(const char *path, const atf_model *m, const atf_train_settings *s,
                          const atf_train_report *r, const atf_attr *provenance, int nprov,
                          char *err)
{
    train_file f;
    memset(&f, 0, sizeof f);
    f.m = m;
    f.s = s;
    f.r = r;
    f.prov = provenance;
    f.nprov = nprov;
    atf_error e = ATF_OK;
    f.hist = malloc((size_t)(r->epochs_run > 0 ? r->epochs_run : 1) * sizeof *f.hist);
    if (!f.hist)
        e = ATF_E_NOMEM;
    int E = r->epochs_run, L = m->theta0->arch.L;
    if (!e && m->kind == ATF_MODEL_FACTORIZED && E > 0) {
        f.drift1 = malloc((size_t)E * L * sizeof(double));
        f.drift2 = malloc((size_t)E * L * sizeof(double));
        if (!f.drift1 || !f.drift2)
            e = ATF_E_NOMEM;
        for (int ep = 0; !e && ep < E; ep++)
            for (int l = 0; l < L; l++) {
                f.drift1[(size_t)ep * L + l] = r->history[ep].drift1[l];
                f.drift2[(size_t)ep * L + l] = r->history[ep].drift2[l];
            }
    }
    for (int l = 0; !e && l < m->theta0->arch.L; l++) {
        size_t P = (size_t)m->theta0->arch.widths[l], Q = (size_t)m->theta0->arch.widths[l + 1];
        f.dW[l] = malloc(P * Q * sizeof(double));
        f.db[l] = malloc(Q * sizeof(double));
        if (!f.dW[l] || !f.db[l]) {
            e = ATF_E_NOMEM;
            break;
        }
        atf_model_delta(m, l, f.dW[l], f.db[l]);
        if (m->kind == ATF_MODEL_FACTORIZED &&
            (e = atf_model_diagnostics(m, l, s->use_penalty ? &s->penalty : NULL, &f.diag[l],
                                       err)))
            break;
    }
    if (e == ATF_E_NOMEM)
        atf_errorf(err, "%s: out of memory for the training file's contents", path);
    if (!e)
        e = h5io_write_file(path, put_train_file, &f, err);
    file_free(&f);
    return e;
}
