/* test_train.c — the models trained from one θ0 (atf_train.h) against independent references:
 * the factorised model equals the linearised one with δ = M1 W M2 (and at W = 0, where its
 * gradient on M vanishes), gradients of both linear models against central finite differences,
 * the linearisation against the network to first order, conservation of M1ᵀM1 − WWᵀ and
 * M2M2ᵀ − WᵀW under small-step full-batch gradient descent, SGD/Adam steps against steps
 * computed by hand, the penalty gradient, the protocol (selection, patience, resampling) and
 * same seed → same bits. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf_test.h"
#include "atf_train.h"
#include "train_internal.h"

static atf_test_rng trng;

/* How the factorised model's layers are taken in the passes: formed (0) or batch-side (1); the
 * tests of the factorised model run both. */
static int side = 0;

static model_work *new_work(const atf_model *m, int n)
{
    model_work *w = model_work_new(m, n);
    if (w)
        model_work_force_side(w, side);
    return w;
}

/* A network with widths w[0..L], biases on the layers flagged, the given hidden activation
 * and random biases (so that the bias paths are exercised). */
static atf_mlp *make_net(int L, const int *w, const int *bias, const char *act, atf_param param,
                         uint64_t seed)
{
    atf_arch a;
    memset(&a, 0, sizeof a);
    a.L = L;
    for (int l = 0; l <= L; l++)
        a.widths[l] = w[l];
    for (int l = 0; l < L; l++) {
        a.bias[l] = (unsigned char)bias[l];
        if (l < L - 1 && atf_activation_parse(act, &a.act[l], NULL))
            return NULL;
    }
    a.param = param;
    atf_mlp *m = NULL;
    if (atf_mlp_create(&a, seed, &m, NULL))
        return NULL;
    for (int l = 0; l < L; l++)
        for (int q = 0; m->b[l] && q < w[l + 1]; q++)
            m->b[l][q] = 0.3 * atf_test_symmetric(&trng);
    return m;
}

static void fill(size_t n, double *x, double scale)
{
    for (size_t i = 0; i < n; i++)
        x[i] = scale * atf_test_symmetric(&trng);
}

/* A data set of N rows: inputs, targets of width C and labels in 0..C−1. */
static atf_dataset make_data(int N, int D, int C)
{
    atf_dataset ds = {N, D, C, malloc(sizeof(double) * N * D), malloc(sizeof(double) * N * C),
                      malloc(sizeof(int) * N)};
    fill((size_t)N * D, ds.X, 1.0);
    fill((size_t)N * C, ds.Y, 1.0);
    for (int i = 0; i < N; i++)
        ds.labels[i] = (int)(atf_test_u64(&trng) % (uint64_t)C);
    return ds;
}

/* Random trained state: δ, or M1 = I + small, W, M2 = I + small, b. */
static void randomise(atf_model *m, double scale)
{
    for (int l = 0; l < m->theta0->arch.L; l++) {
        size_t P = (size_t)m->theta0->arch.widths[l], Q = (size_t)m->theta0->arch.widths[l + 1];
        if (m->kind != ATF_MODEL_FACTORIZED) {
            fill(P * Q, m->net->W[l], scale);
            if (m->net->b[l])
                fill(Q, m->net->b[l], scale);
            continue;
        }
        for (size_t i = 0; i < P * P; i++)
            m->M1[l][i] += 0.3 * scale * atf_test_symmetric(&trng);
        for (size_t i = 0; i < Q * Q; i++)
            m->M2[l][i] += 0.3 * scale * atf_test_symmetric(&trng);
        fill(P * Q, m->W[l], scale);
        if (m->b[l])
            fill(Q, m->b[l], scale);
    }
}

static double loss_of(const atf_model *m, const atf_dataset *ds, atf_loss_kind kind)
{
    double v = NAN;
    model_work *w = new_work(m, ds->N);
    if (w && model_loss_grad(m, w, ds->N, ds->X, ds->Y, ds->labels, kind, &v, NULL, NULL))
        v = NAN;
    model_work_free(w);
    return v;
}

/* ---- factorised = linearised ---- */

static void test_factorized_equals_linearized(void)
{
    const int w[] = {5, 4, 3, 2}, bias[] = {1, 0, 1};
    atf_mlp *net = make_net(3, w, bias, "tanh", ATF_PARAM_STANDARD, 3);
    atf_dataset ds = make_data(7, 5, 2);
    atf_model *fac = NULL, *lin = NULL;
    atf_model_create(ATF_MODEL_FACTORIZED, net, &fac, NULL);
    atf_model_create(ATF_MODEL_LINEARIZED, net, &lin, NULL);
    double F0[14], Ff[14], Fl[14];
    atf_mlp_forward(net, 7, ds.X, F0, NULL);
    atf_model_forward(fac, 7, ds.X, Ff, NULL);
    atf_model_forward(lin, 7, ds.X, Fl, NULL);
    CHECK(max_rel_diff(14, Ff, F0) < 1e-15 && max_rel_diff(14, Fl, F0) < 1e-15,
          "at the start both linear models must output f0");
    /* at (I, 0, I, 0): ∂M1 = ∂M2 = 0 and ∂W, ∂b equal the linearised model's gradient */
    for (int kind = 0; kind < 2; kind++) {
        atf_loss_kind lk = kind ? ATF_LOSS_XENT : ATF_LOSS_SQUARED;
        model_grad gf, gl;
        model_grad_alloc(fac, &gf);
        model_grad_alloc(lin, &gl);
        model_work *wf = new_work(fac, 7), *wl = new_work(lin, 7);
        double vf, vl;
        model_loss_grad(fac, wf, 7, ds.X, ds.Y, ds.labels, lk, &vf, &gf, NULL);
        model_loss_grad(lin, wl, 7, ds.X, ds.Y, ds.labels, lk, &vl, &gl, NULL);
        CHECK(vf == vl, "losses at the start differ: %g vs %g", vf, vl);
        for (int l = 0; l < 3; l++) {
            size_t P = (size_t)w[l], Q = (size_t)w[l + 1];
            double mx = 0.0;
            for (size_t i = 0; i < P * P; i++)
                mx = fmax(mx, fabs(gf.M1[l][i]));
            for (size_t i = 0; i < Q * Q; i++)
                mx = fmax(mx, fabs(gf.M2[l][i]));
            CHECK(mx == 0.0, "layer %d: gradient on M at W = 0 is %g, not 0", l, mx);
            CHECK(max_rel_diff(P * Q, gf.W[l], gl.W[l]) < 1e-14,
                  "layer %d: dL/dW of the factorised model differs from dL/ddelta", l);
            if (bias[l])
                CHECK(max_rel_diff(Q, gf.b[l], gl.b[l]) < 1e-14, "layer %d: bias gradient", l);
        }
        model_grad_free(&gf);
        model_grad_free(&gl);
        model_work_free(wf);
        model_work_free(wl);
    }
    /* at a random point: the factorised model is the linearised one with δ = (M1 W M2, M2ᵀ b) */
    randomise(fac, 0.5);
    for (int l = 0; l < 3; l++)
        atf_model_delta(fac, l, lin->net->W[l], lin->net->b[l]);
    atf_model_forward(fac, 7, ds.X, Ff, NULL);
    atf_model_forward(lin, 7, ds.X, Fl, NULL);
    CHECK(max_rel_diff(14, Ff, Fl) < 1e-13, "factorised vs linearised with delta = M1 W M2: %g",
          max_rel_diff(14, Ff, Fl));
    CHECK(rel_diff(loss_of(fac, &ds, ATF_LOSS_XENT), loss_of(lin, &ds, ATF_LOSS_XENT)) < 1e-13,
          "side %d: factorised loss differs from the linearised one with delta = M1 W M2", side);
    atf_model_free(fac);
    atf_model_free(lin);
    atf_mlp_free(net);
    atf_dataset_free(&ds);
}

/* ---- gradients against central differences ---- */

static void check_block_fd(atf_model *m, const atf_dataset *ds, atf_loss_kind lk,
                           const char *what)
{
    model_grad g;
    model_grad_alloc(m, &g);
    model_work *w = new_work(m, ds->N);
    double v;
    model_loss_grad(m, w, ds->N, ds->X, ds->Y, ds->labels, lk, &v, &g, NULL);
    param_block blocks[MODEL_MAX_BLOCKS];
    int nb = model_blocks(m, &g, 0, 0, blocks);
    double worst = 0.0;
    for (int k = 0; k < nb; k++)
        for (size_t i = 0; i < blocks[k].n; i += 1 + blocks[k].n / 7) {
            double keep = blocks[k].p[i], h = 1e-5;
            blocks[k].p[i] = keep + h;
            double up = loss_of(m, ds, lk);
            blocks[k].p[i] = keep - h;
            double down = loss_of(m, ds, lk);
            blocks[k].p[i] = keep;
            double fd = (up - down) / (2 * h), an = blocks[k].g[i];
            double err = fabs(fd - an) / fmax(1e-3, fmax(fabs(fd), fabs(an)));
            worst = fmax(worst, err);
        }
    CHECK(worst < 1e-6, "%s: gradient vs central differences: worst relative error %g", what,
          worst);
    model_grad_free(&g);
    model_work_free(w);
}

static void test_gradients(void)
{
    const int w[] = {4, 5, 3, 3}, bias[] = {1, 1, 0};
    const char *acts[] = {"tanh", "softplus", "gelu"};
    for (int a = 0; a < 3; a++) {
        atf_param param = a == 1 ? ATF_PARAM_NTK : ATF_PARAM_STANDARD;
        atf_mlp *net = make_net(3, w, bias, acts[a], param, 10 + a);
        atf_dataset ds = make_data(6, 4, 3);
        for (int kind = 0; kind < 3; kind++) {
            atf_model *m = NULL;
            atf_model_create((atf_model_kind)kind, net, &m, NULL);
            randomise(m, 0.4);
            char what[96];
            snprintf(what, sizeof what, "%s, %s, squared, side %d", atf_model_kind_name(m->kind),
                     acts[a], side);
            check_block_fd(m, &ds, ATF_LOSS_SQUARED, what);
            snprintf(what, sizeof what, "%s, %s, xent, side %d", atf_model_kind_name(m->kind),
                     acts[a], side);
            check_block_fd(m, &ds, ATF_LOSS_XENT, what);
            atf_model_free(m);
        }
        atf_mlp_free(net);
        atf_dataset_free(&ds);
    }
}

/* ---- the penalty's gradient ---- */

static void test_penalty_gradient(void)
{
    const int w[] = {4, 3, 2}, bias[] = {0, 1};
    atf_mlp *net = make_net(2, w, bias, "relu", ATF_PARAM_STANDARD, 21);
    atf_model *m = NULL;
    atf_model_create(ATF_MODEL_FACTORIZED, net, &m, NULL);
    randomise(m, 0.5);
    atf_penalty pen;
    atf_penalty_parse("balanced:scale=0.7+sq:scale=2", &pen, NULL);
    model_grad g;
    model_grad_alloc(m, &g);
    double v;
    model_penalty(m, &pen, 0.3, 0, 0, &v, &g, NULL);
    param_block blocks[MODEL_MAX_BLOCKS];
    int nb = model_blocks(m, &g, 0, 0, blocks);
    double worst = 0.0;
    for (int k = 0; k < nb; k++)
        for (size_t i = 0; i < blocks[k].n; i++) {
            double keep = blocks[k].p[i], h = 1e-6, up, down;
            blocks[k].p[i] = keep + h;
            model_penalty(m, &pen, 0.3, 0, 0, &up, NULL, NULL);
            blocks[k].p[i] = keep - h;
            model_penalty(m, &pen, 0.3, 0, 0, &down, NULL, NULL);
            blocks[k].p[i] = keep;
            double fd = (up - down) / (2 * h);
            worst = fmax(worst, fabs(fd - blocks[k].g[i]) / fmax(1e-3, fabs(fd)));
        }
    CHECK(worst < 1e-6, "penalty gradient vs central differences: %g", worst);
    model_grad_free(&g);
    atf_model_free(m);
    atf_mlp_free(net);
}

/* ---- the linearisation is the network to first order ---- */

static void test_first_order(void)
{
    const int w[] = {3, 6, 4, 2}, bias[] = {1, 1, 1};
    atf_mlp *net = make_net(3, w, bias, "tanh", ATF_PARAM_STANDARD, 31);
    atf_dataset ds = make_data(5, 3, 2);
    atf_model *lin = NULL, *nm = NULL;
    atf_model_create(ATF_MODEL_LINEARIZED, net, &lin, NULL);
    atf_model_create(ATF_MODEL_NETWORK, net, &nm, NULL);
    atf_model *dir = NULL;
    atf_model_create(ATF_MODEL_LINEARIZED, net, &dir, NULL);
    randomise(dir, 1.0);
    double gap[2];
    for (int k = 0; k < 2; k++) {
        double eps = k ? 5e-4 : 1e-3;
        for (int l = 0; l < 3; l++) {
            size_t P = (size_t)w[l], Q = (size_t)w[l + 1];
            for (size_t i = 0; i < P * Q; i++) {
                lin->net->W[l][i] = eps * dir->net->W[l][i];
                nm->net->W[l][i] = net->W[l][i] + eps * dir->net->W[l][i];
            }
            for (size_t q = 0; q < Q; q++) {
                lin->net->b[l][q] = eps * dir->net->b[l][q];
                nm->net->b[l][q] = net->b[l][q] + eps * dir->net->b[l][q];
            }
        }
        double Fl[10], Fn[10];
        atf_model_forward(lin, 5, ds.X, Fl, NULL);
        atf_model_forward(nm, 5, ds.X, Fn, NULL);
        gap[k] = 0.0;
        for (int i = 0; i < 10; i++)
            gap[k] = fmax(gap[k], fabs(Fl[i] - Fn[i]));
    }
    double ratio = gap[0] / gap[1];
    CHECK(ratio > 3.8 && ratio < 4.2 && gap[0] < 1e-4,
          "f(theta0 + eps delta) - f_lin must be O(eps^2): gaps %g, %g (ratio %g)", gap[0],
          gap[1], ratio);
    atf_model_free(lin);
    atf_model_free(nm);
    atf_model_free(dir);
    atf_mlp_free(net);
    atf_dataset_free(&ds);
}

/* ---- conservation under small-step full-batch gradient descent ---- */

static double max_drift_after(const atf_mlp *net, const atf_dataset *ds, double lr, int epochs)
{
    atf_model *m = NULL;
    atf_model_create(ATF_MODEL_FACTORIZED, net, &m, NULL);
    atf_train_settings s = atf_train_default();
    s.epochs = epochs;
    s.batch = ds->N;
    s.lr = lr;
    s.momentum = 0.0;
    s.schedule = ATF_LR_CONSTANT;
    atf_train_report rep;
    double worst = NAN;
    if (!atf_model_train(m, ds, NULL, &s, &rep, NULL)) {
        worst = 0.0;
        for (int l = 0; l < net->arch.L; l++) {
            double d1, d2;
            atf_model_drift(m, l, &d1, &d2);
            worst = fmax(worst, fmax(d1, d2));
        }
        atf_train_report_free(&rep);
    }
    atf_model_free(m);
    return worst;
}

/* K1 = M1ᵀM1 − WWᵀ (P×P) and K2 = M2M2ᵀ − WᵀW − bbᵀ (Q×Q) of layer l. */
static void conserved(const atf_model *m, int l, double *K1, double *K2)
{
    int P = m->theta0->arch.widths[l], Q = m->theta0->arch.widths[l + 1];
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, P, P, P, 1.0, m->M1[l], P, m->M1[l], P,
                0.0, K1, P);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, P, P, Q, -1.0, m->W[l], Q, m->W[l], Q,
                1.0, K1, P);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Q, Q, Q, 1.0, m->M2[l], Q, m->M2[l], Q,
                0.0, K2, Q);
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Q, Q, P, -1.0, m->W[l], Q, m->W[l], Q,
                1.0, K2, Q);
    if (m->b[l])
        cblas_dger(CblasRowMajor, Q, Q, -1.0, m->b[l], 1, m->b[l], 1, K2, Q);
}

static void one_step_identity(const atf_mlp *net, const atf_dataset *dsp);

static void test_conservation(void)
{
    const int w[] = {4, 6, 3}, bias[] = {0, 1};
    atf_mlp *net = make_net(2, w, bias, "tanh", ATF_PARAM_STANDARD, 41);
    atf_dataset ds = make_data(8, 4, 3);
    /* the same flow time with half the step: each step adds O(η²), so the drift halves */
    double d1 = max_drift_after(net, &ds, 2e-3, 100), d2 = max_drift_after(net, &ds, 1e-3, 200);
    CHECK(d1 / d2 > 1.8 && d1 / d2 < 2.2, "drift must be O(step): %g at lr 2e-3, %g at 1e-3",
          d1, d2);
    double d3 = max_drift_after(net, &ds, 1e-6, 200);
    CHECK(d3 < 1e-8, "conserved quantities drift by %g under gradient descent with lr 1e-6", d3);
    /* one plain gradient step changes K1 by exactly η²(∂M1ᵀ∂M1 − ∂W∂Wᵀ) and K2 by
     * η²(∂M2∂M2ᵀ − ∂Wᵀ∂W − ∂b∂bᵀ): the first-order terms cancel identically (gradient flow
     * conserves K), so the measured change must match this to rounding */
    for (side = 0; side < 2; side++)
        one_step_identity(net, &ds);
    side = -1;
    atf_mlp_free(net);
    atf_dataset_free(&ds);
}

/* One plain gradient step changes the conserved quantities by exactly the η² terms. */
static void one_step_identity(const atf_mlp *net, const atf_dataset *dsp)
{
    const int w[] = {4, 6, 3};
    atf_dataset ds = *dsp;
    atf_model *m = NULL;
    atf_model_create(ATF_MODEL_FACTORIZED, net, &m, NULL);
    randomise(m, 0.5);
    model_grad g;
    model_grad_alloc(m, &g);
    model_work *wk = new_work(m, ds.N);
    double v, eta = 1e-3;
    model_loss_grad(m, wk, ds.N, ds.X, ds.Y, ds.labels, ATF_LOSS_XENT, &v, &g, NULL);
    double K1a[2][36], K2a[2][36], K1b[2][36], K2b[2][36];
    for (int l = 0; l < 2; l++)
        conserved(m, l, K1a[l], K2a[l]);
    param_block blocks[MODEL_MAX_BLOCKS];
    int nb = model_blocks(m, &g, 0, 0, blocks);
    for (int k = 0; k < nb; k++)
        for (size_t i = 0; i < blocks[k].n; i++)
            blocks[k].p[i] -= eta * blocks[k].g[i];
    for (int l = 0; l < 2; l++) {
        int P = w[l], Q = w[l + 1];
        conserved(m, l, K1b[l], K2b[l]);
        double E1[36], E2[36], D1[36], D2[36];
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, P, P, P, eta * eta, g.M1[l], P,
                    g.M1[l], P, 0.0, E1, P);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, P, P, Q, -eta * eta, g.W[l], Q,
                    g.W[l], Q, 1.0, E1, P);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Q, Q, Q, eta * eta, g.M2[l], Q,
                    g.M2[l], Q, 0.0, E2, Q);
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Q, Q, P, -eta * eta, g.W[l], Q,
                    g.W[l], Q, 1.0, E2, Q);
        if (g.b[l])
            cblas_dger(CblasRowMajor, Q, Q, -eta * eta, g.b[l], 1, g.b[l], 1, E2, Q);
        for (int i = 0; i < P * P; i++)
            D1[i] = K1b[l][i] - K1a[l][i];
        for (int i = 0; i < Q * Q; i++)
            D2[i] = K2b[l][i] - K2a[l][i];
        /* K is O(1) and its change O(η²): rounding of K leaves ~1e-16/η² relative */
        CHECK(max_rel_diff((size_t)P * P, D1, E1) < 1e-7 &&
                  max_rel_diff((size_t)Q * Q, D2, E2) < 1e-7,
              "side %d, layer %d: one step changes the conserved quantities by other than eta^2 "
              "terms (%g, %g)", side, l, max_rel_diff((size_t)P * P, D1, E1),
              max_rel_diff((size_t)Q * Q, D2, E2));
    }
    model_grad_free(&g);
    model_work_free(wk);
    atf_model_free(m);
}

/* ---- optimiser steps against steps computed by hand ---- */

/* One-layer network f = x W + b on the squared loss: g_W = Xᵀ G, g_b = 1ᵀ G,
 * G = 2 (X W + 1 bᵀ − Y) / (N C). */
static void hand_gradient(int N, int D, int C, const double *X, const double *Y, const double *W,
                          const double *b, double *gW, double *gb)
{
    memset(gW, 0, sizeof(double) * D * C);
    memset(gb, 0, sizeof(double) * C);
    for (int i = 0; i < N; i++)
        for (int k = 0; k < C; k++) {
            double f = b[k];
            for (int d = 0; d < D; d++)
                f += X[i * D + d] * W[d * C + k];
            double G = 2.0 * (f - Y[i * C + k]) / (N * C);
            gb[k] += G;
            for (int d = 0; d < D; d++)
                gW[d * C + k] += X[i * D + d] * G;
        }
}

static void test_optimizer_steps(void)
{
    enum { N = 6, D = 3, C = 2 };
    const int w[] = {D, C}, bias[] = {1};
    atf_mlp *net = make_net(1, w, bias, "relu", ATF_PARAM_STANDARD, 51);
    atf_dataset ds = make_data(N, D, C);
    for (int opt = 0; opt < 2; opt++) {
        atf_train_settings s = atf_train_default();
        s.epochs = 3;
        s.batch = N;
        s.lr = 0.05;
        s.momentum = 0.7;
        s.schedule = ATF_LR_CONSTANT;
        s.optimizer = opt ? ATF_OPT_ADAM : ATF_OPT_SGD;
        atf_model *m = NULL;
        atf_model_create(ATF_MODEL_NETWORK, net, &m, NULL);
        atf_model_train(m, &ds, NULL, &s, NULL, NULL);
        /* by hand */
        double W[D * C], b[C], gW[D * C], gb[C], vW[D * C] = {0}, vb[C] = {0}, mW[D * C] = {0},
                                                 mb[C] = {0};
        memcpy(W, net->W[0], sizeof W);
        memcpy(b, net->b[0], sizeof b);
        for (int t = 1; t <= 3; t++) {
            hand_gradient(N, D, C, ds.X, ds.Y, W, b, gW, gb);
            double *p[2] = {W, b}, *g[2] = {gW, gb}, *v[2] = {vW, vb}, *mm[2] = {mW, mb};
            int n[2] = {D * C, C};
            for (int k = 0; k < 2; k++)
                for (int i = 0; i < n[k]; i++) {
                    if (!opt) {
                        v[k][i] = 0.7 * v[k][i] + g[k][i];
                        p[k][i] -= 0.05 * v[k][i];
                    } else {
                        mm[k][i] = 0.9 * mm[k][i] + 0.1 * g[k][i];
                        v[k][i] = 0.999 * v[k][i] + 0.001 * g[k][i] * g[k][i];
                        double mhat = mm[k][i] / (1 - pow(0.9, t));
                        double vhat = v[k][i] / (1 - pow(0.999, t));
                        p[k][i] -= 0.05 * mhat / (sqrt(vhat) + 1e-8);
                    }
                }
        }
        CHECK(max_rel_diff(D * C, m->net->W[0], W) < 1e-12 &&
                  max_rel_diff(C, m->net->b[0], b) < 1e-12,
              "%s: three steps differ from the hand computation (W %g, b %g)",
              opt ? "adam" : "sgd", max_rel_diff(D * C, m->net->W[0], W),
              max_rel_diff(C, m->net->b[0], b));
        atf_model_free(m);
    }
    atf_mlp_free(net);
    atf_dataset_free(&ds);
}

/* ---- protocol: selection, patience, resampling, reproducibility ---- */

static atf_error count_epochs(const atf_train_progress *p, const atf_model *m, void *ctx)
{
    (void)m;
    int *seen = ctx;
    *seen = p->epoch;
    return ATF_OK;
}

static void test_protocol(void)
{
    const int w[] = {4, 8, 3}, bias[] = {1, 1};
    atf_mlp *net = make_net(2, w, bias, "relu", ATF_PARAM_STANDARD, 61);
    atf_dataset pool = make_data(40, 4, 3), test = make_data(15, 4, 3);
    atf_train_settings s = atf_train_default();
    s.epochs = 12;
    s.batch = 5;
    s.lr = 0.05;
    s.loss = ATF_LOSS_XENT;
    s.n_train = 20;
    s.n_val = 10;
    s.stopping = ATF_STOP_BEST_VAL;
    s.patience = 3;
    int seen = 0;
    s.progress = count_epochs;
    s.ctx = &seen;
    for (int kind = 0; kind < 3; kind++)
        for (int resample = 0; resample < 2; resample++) {
            s.sampling = resample ? ATF_SAMPLE_RESAMPLE : ATF_SAMPLE_FIXED;
            atf_model *a = NULL, *b = NULL;
            atf_model_create((atf_model_kind)kind, net, &a, NULL);
            atf_model_create((atf_model_kind)kind, net, &b, NULL);
            atf_train_report ra, rb;
            char err[ATF_ERRLEN] = "";
            atf_error e = atf_model_train(a, &pool, &test, &s, &ra, err);
            CHECK(!e, "%s: %s", atf_model_kind_name(a->kind), err);
            atf_model_train(b, &pool, &test, &s, &rb, NULL);
            CHECK(seen == ra.epochs_run, "progress saw %d epochs, report %d", seen,
                  ra.epochs_run);
            /* the kept model is the best validation epoch, and its error is the history's */
            double best = INFINITY;
            for (int e2 = 0; e2 < ra.epochs_run; e2++)
                best = fmin(best, ra.history[e2].val_error);
            CHECK(ra.selected_epoch >= 1 && ra.history[ra.selected_epoch - 1].val_error == best,
                  "%s: selected epoch %d is not a best validation epoch",
                  atf_model_kind_name(a->kind), ra.selected_epoch);
            CHECK(ra.val_error == best, "%s: kept model's validation error %g, best %g",
                  atf_model_kind_name(a->kind), ra.val_error, best);
            CHECK(!ra.stopped_by_patience || ra.epochs_run - ra.selected_epoch == 3,
                  "patience: stopped %d epochs after the best", ra.epochs_run - ra.selected_epoch);
            CHECK(ra.n_train == 20 && ra.n_val == 10, "sizes %d, %d", ra.n_train, ra.n_val);
            /* same seed, same bits */
            int same = ra.epochs_run == rb.epochs_run;
            for (int l = 0; same && l < 2; l++) {
                size_t P = (size_t)w[l], Q = (size_t)w[l + 1];
                double *da = malloc(sizeof(double) * P * Q), *db = malloc(sizeof(double) * P * Q);
                atf_model_delta(a, l, da, NULL);
                atf_model_delta(b, l, db, NULL);
                same = !memcmp(da, db, sizeof(double) * P * Q);
                free(da);
                free(db);
            }
            CHECK(same, "%s (%s): same seed gave different weights", atf_model_kind_name(a->kind),
                  atf_sampling_name(s.sampling));
            atf_train_report_free(&ra);
            atf_train_report_free(&rb);
            atf_model_free(a);
            atf_model_free(b);
        }
    /* the refusals */
    atf_model *m = NULL;
    atf_model_create(ATF_MODEL_NETWORK, net, &m, NULL);
    char err[ATF_ERRLEN] = "";
    atf_train_settings bad = s;
    bad.n_val = 0;
    CHECK(atf_model_train(m, &pool, &test, &bad, NULL, err) == ATF_E_USAGE &&
              strstr(err, "validation"),
          "best-val without a validation split must be refused: '%s'", err);
    bad = s;
    bad.stopping = ATF_STOP_BEST_TEST;
    CHECK(atf_model_train(m, &pool, NULL, &bad, NULL, err) == ATF_E_USAGE && strstr(err, "test"),
          "test selection without a test split must be refused: '%s'", err);
    bad = s;
    bad.n_train = 35;
    CHECK(atf_model_train(m, &pool, &test, &bad, NULL, err) == ATF_E_USAGE,
          "n_train + n_val beyond the pool must be refused");
    bad = s;
    bad.use_penalty = 1;
    CHECK(atf_model_train(m, &pool, &test, &bad, NULL, err) == ATF_E_USAGE,
          "a penalty on the network model must be refused");
    atf_model_free(m);
    atf_mlp_free(net);
    atf_dataset_free(&pool);
    atf_dataset_free(&test);
}

/* Which pool rows an epoch trained on: with one-hot inputs (x_i = e_i) and a one-layer network
 * without bias, row i of W changes exactly when example i was in a batch. */
static void test_sampling_rows(void)
{
    enum { N = 20, VAL = 5, N_TRAIN = 6 };
    const int w[] = {N, 2}, bias[] = {0};
    atf_mlp *net = make_net(1, w, bias, "relu", ATF_PARAM_STANDARD, 81);
    atf_dataset pool = make_data(N, N, 2);
    memset(pool.X, 0, sizeof(double) * N * N);
    for (int i = 0; i < N; i++)
        pool.X[i * N + i] = 1.0;
    for (int resample = 0; resample < 2; resample++)
        for (int epochs = 1; epochs <= 3; epochs += 2) {
            atf_train_settings s = atf_train_default();
            s.epochs = epochs;
            s.batch = 4;
            s.lr = 0.1;
            s.n_train = N_TRAIN;
            s.n_val = VAL;
            s.sampling = resample ? ATF_SAMPLE_RESAMPLE : ATF_SAMPLE_FIXED;
            atf_model *m = NULL;
            atf_model_create(ATF_MODEL_NETWORK, net, &m, NULL);
            atf_model_train(m, &pool, NULL, &s, NULL, NULL);
            int used = 0, beyond = 0, in_val = 0;
            for (int i = 0; i < N; i++)
                if (m->net->W[0][2 * i] != net->W[0][2 * i] ||
                    m->net->W[0][2 * i + 1] != net->W[0][2 * i + 1]) {
                    used++;
                    beyond += i >= N_TRAIN;
                    in_val += i >= N - VAL;
                }
            CHECK(in_val == 0, "%s: trained on %d validation rows", atf_sampling_name(s.sampling),
                  in_val);
            if (!resample)
                CHECK(used == N_TRAIN && beyond == 0,
                      "fixed: trained on %d rows (%d beyond the first %d)", used, beyond, N_TRAIN);
            else if (epochs == 1)
                CHECK(used == N_TRAIN, "resampled: one epoch trained on %d rows, not %d", used,
                      N_TRAIN);
            else /* three draws of 6 of 15 rows: all alike has probability < 1e-6 */
                CHECK(used > N_TRAIN, "resampled: three epochs used only %d rows", used);
            atf_model_free(m);
        }
    atf_mlp_free(net);
    atf_dataset_free(&pool);
}

/* The linear models' cached θ0 pass gives the forward pass's bits, over several chunks. */
static void test_eval_cache(void)
{
    const int w[] = {3, 5, 4, 2}, bias[] = {1, 0, 1};
    atf_mlp *net = make_net(3, w, bias, "gelu", ATF_PARAM_NTK, 91);
    atf_dataset ds = make_data(2500, 3, 2);
    for (int kind = 1; kind < 3; kind++) {
        atf_model *m = NULL;
        atf_model_create((atf_model_kind)kind, net, &m, NULL);
        randomise(m, 0.4);
        model_eval_cache *c = model_eval_cache_new(m, &ds, 0, ds.N);
        double *F1 = malloc(sizeof(double) * 5000), *F2 = malloc(sizeof(double) * 5000);
        atf_model_forward(m, ds.N, ds.X, F1, NULL);
        if (c)
            model_eval_cached(m, c, F2);
        CHECK(c && !memcmp(F1, F2, sizeof(double) * 5000),
              "%s: cached evaluation differs from the forward pass", atf_model_kind_name(m->kind));
        randomise(m, 0.4); /* the cache holds θ0's pass only: a new state is seen */
        atf_model_forward(m, ds.N, ds.X, F1, NULL);
        if (c)
            model_eval_cached(m, c, F2);
        CHECK(c && !memcmp(F1, F2, sizeof(double) * 5000),
              "%s: cached evaluation after a change differs", atf_model_kind_name(m->kind));
        model_eval_cache_free(c);
        free(F1);
        free(F2);
        atf_model_free(m);
    }
    atf_mlp_free(net);
    atf_dataset_free(&ds);
}

/* ---- diagnostics ---- */

static void test_diagnostics(void)
{
    const int w[] = {5, 3, 2}, bias[] = {0, 0};
    atf_mlp *net = make_net(2, w, bias, "relu", ATF_PARAM_STANDARD, 71);
    atf_model *m = NULL;
    atf_model_create(ATF_MODEL_FACTORIZED, net, &m, NULL);
    /* a balanced point: W = σ e1 e1ᵀ, M1 = I + (s − 1) e1 e1ᵀ, M2 likewise, s² = 1 + σ²; then
     * B has the one singular value σ(1 + σ²) and the drifts are 0 */
    double sigma = 0.8, s = sqrt(1 + sigma * sigma);
    m->W[0][0] = sigma;
    m->M1[0][0] = s;
    m->M2[0][0] = s;
    atf_factor_diag d;
    atf_error e = atf_model_diagnostics(m, 0, NULL, &d, NULL);
    CHECK(!e, "diagnostics failed");
    if (!e) {
        CHECK(d.drift1 < 1e-15 && d.drift2 < 1e-15, "drifts %g %g at a balanced point", d.drift1,
              d.drift2);
        CHECK(rel_diff(d.sv_B[0], sigma * (1 + sigma * sigma)) < 1e-14 && d.sv_B[1] == 0.0,
              "singular value of B %g, expected %g", d.sv_B[0], sigma * (1 + sigma * sigma));
        atf_penalty bal;
        atf_penalty_parse("balanced+balanced", &bal, NULL);
        double want = atf_penalty_value(&bal, d.sv_B[0], NULL);
        CHECK(rel_diff(d.omega_balanced, want) < 1e-14, "omega_balanced %g vs %g",
              d.omega_balanced, want);
        /* eq. 15 for balanced+balanced gives back the same factors */
        double s1, sg, s2;
        atf_penalty_factors(&bal, d.sv_B[0], &s1, &sg, &s2);
        CHECK(rel_diff(s1, s) < 1e-8 && rel_diff(sg, sigma) < 1e-8 && rel_diff(s2, s) < 1e-8,
              "the balanced split of d: s1 %g sigma %g s2 %g, expected %g %g %g", s1, sg, s2, s,
              sigma, s);
        atf_factor_diag_free(&d);
    }
    /* against a "solution" whose blocks are 2 B_ℓ: cosine 1, norms and ω̃ of 2B */
    randomise(m, 0.5);
    atf_result_block blocks[2];
    memset(blocks, 0, sizeof blocks);
    double B1[15], B2[6];
    atf_model_delta(m, 0, B1, NULL);
    atf_model_delta(m, 1, B2, NULL);
    double nB1 = cblas_dnrm2(15, B1, 1);
    cblas_dscal(15, 2.0, B1, 1);
    cblas_dscal(6, 2.0, B2, 1);
    snprintf(blocks[0].name, sizeof blocks[0].name, "W1");
    snprintf(blocks[1].name, sizeof blocks[1].name, "W2");
    blocks[0].rows = 5, blocks[0].cols = 3, blocks[0].B = B1;
    blocks[1].rows = 3, blocks[1].cols = 2, blocks[1].B = B2;
    atf_result res;
    memset(&res, 0, sizeof res);
    res.nblocks = 2;
    res.blocks = blocks;
    atf_model_comparison cmp;
    e = atf_model_compare_result(m, &res, NULL, &cmp, NULL);
    CHECK(!e && rel_diff(cmp.cosine[0], 1.0) < 1e-14 && rel_diff(cmp.cosine[1], 1.0) < 1e-14 &&
              rel_diff(cmp.cosine_all, 1.0) < 1e-14 &&
              rel_diff(cmp.norm_result[0], 2.0 * nB1) < 1e-14 &&
              rel_diff(cmp.norm_model[0], nB1) < 1e-14,
          "comparison with 2B: cosines %g %g %g", cmp.cosine[0], cmp.cosine[1], cmp.cosine_all);
    CHECK(cmp.omega_result[0] > cmp.omega_model[0] && cmp.omega_model[0] > 0.0,
          "omega of 2B must exceed that of B: %g vs %g", cmp.omega_result[0], cmp.omega_model[0]);
    char err[ATF_ERRLEN] = "";
    snprintf(blocks[1].name, sizeof blocks[1].name, "b2");
    CHECK(atf_model_compare_result(m, &res, NULL, &cmp, err) == ATF_E_INPUT &&
              strstr(err, "W2") && strstr(err, "missing"),
          "a result without block W2 must be refused: '%s'", err);
    double A[4] = {1, 2, 3, 4}, B[4] = {2, 4, 6, 8};
    CHECK(rel_diff(atf_matrix_cosine(4, A, B), 1.0) < 1e-15, "cosine of parallel matrices");
    atf_model_free(m);
    atf_mlp_free(net);
}

int main(void)
{
    atf_test_rng_seed(&trng, 2026);
    for (side = 0; side < 2; side++) {
        test_factorized_equals_linearized();
        test_gradients();
    }
    side = -1;
    test_penalty_gradient();
    test_first_order();
    test_conservation();
    test_optimizer_steps();
    test_protocol();
    test_sampling_rows();
    test_eval_cache();
    test_diagnostics();
    return atf_test_finish("test_train");
}
