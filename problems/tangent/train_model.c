/* train_model.c — the three models trained from one θ0 (atf_train.h): the network, its
 * linearisation and the factorised linearisation; their outputs, loss gradients (BLAS-3),
 * changes B_ℓ and the explicit penalty on the factors.
 *
 * One forward pass at a network θ keeps every layer input h_ℓ and the activation derivative
 * σ′(a_ℓ) at it. The network model runs it at θ, the linear models at θ0. The linear models
 * then push their change (ΔW_ℓ, Δb_ℓ) forward (the JVP with σ′ frozen at θ0):
 *     ȧ_ℓ = c_ℓ (ḣ_{ℓ−1} W0_ℓ + h_{ℓ−1} ΔW_ℓ) + Δb_ℓ,  ḣ_ℓ = σ′(a_ℓ) ∘ ȧ_ℓ,  ḣ_0 = 0,
 * f_lin = f(θ0) + ȧ_L; and its adjoint is backpropagation at θ0, which gives
 * G_ℓ = ∂L/∂ΔW_ℓ = c_ℓ h_{ℓ−1}ᵀ g_ℓ and g_b = 1ᵀ g_ℓ. The factorised model chains these through
 * ΔW = M1 W M2, Δb = M2ᵀ b: ∂M1 = G (W M2)ᵀ, ∂W = M1ᵀ G M2ᵀ, ∂M2 = (M1 W)ᵀ G + b g_bᵀ,
 * ∂b = M2 g_b. */
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "atf_train.h"
#include "atf_util.h"
#include "train_internal.h"

const char *atf_model_kind_name(atf_model_kind k)
{
    switch (k) {
    case ATF_MODEL_NETWORK: return "network";
    case ATF_MODEL_LINEARIZED: return "linearized";
    case ATF_MODEL_FACTORIZED: return "factorized";
    }
    return "?";
}

atf_error atf_model_kind_parse(const char *text, atf_model_kind *out, char *err)
{
    static const struct {
        const char *name;
        atf_model_kind kind;
    } names[] = {{"network", ATF_MODEL_NETWORK},       {"linearized", ATF_MODEL_LINEARIZED},
                 {"linearised", ATF_MODEL_LINEARIZED}, {"factorized", ATF_MODEL_FACTORIZED},
                 {"factorised", ATF_MODEL_FACTORIZED}};
    for (size_t i = 0; text && i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(text, names[i].name)) {
            *out = names[i].kind;
            return ATF_OK;
        }
    atf_errorf(err, "model '%s' unknown (expected network, linearized or factorized)",
               text ? text : "");
    return ATF_E_USAGE;
}

#define DIM(m, l) ((m)->theta0->arch.widths[(l)])

static void set_identity(int n, double *A)
{
    memset(A, 0, (size_t)n * n * sizeof *A);
    for (int i = 0; i < n; i++)
        A[(size_t)i * n + i] = 1.0;
}

void atf_model_free(atf_model *m)
{
    if (!m)
        return;
    atf_mlp_free(m->theta0);
    atf_mlp_free(m->net);
    for (int l = 0; l < ATF_MAX_LAYERS; l++) {
        free(m->M1[l]);
        free(m->W[l]);
        free(m->M2[l]);
        free(m->b[l]);
    }
    free(m);
}

static void zero_mlp(atf_mlp *n)
{
    for (int l = 0; l < n->arch.L; l++) {
        size_t Q = (size_t)n->arch.widths[l + 1];
        memset(n->W[l], 0, (size_t)n->arch.widths[l] * Q * sizeof(double));
        if (n->b[l])
            memset(n->b[l], 0, Q * sizeof(double));
    }
}

static int factors_alloc(atf_model *m)
{
    for (int l = 0; l < m->theta0->arch.L; l++) {
        size_t P = (size_t)DIM(m, l), Q = (size_t)DIM(m, l + 1);
        m->M1[l] = malloc(P * P * sizeof(double));
        m->W[l] = calloc(P * Q, sizeof(double));
        m->M2[l] = malloc(Q * Q * sizeof(double));
        if (m->theta0->b[l])
            m->b[l] = calloc(Q, sizeof(double));
        if (!m->M1[l] || !m->W[l] || !m->M2[l] || (m->theta0->b[l] && !m->b[l]))
            return -1;
        set_identity((int)P, m->M1[l]);
        set_identity((int)Q, m->M2[l]);
    }
    return 0;
}

atf_error atf_model_create(atf_model_kind kind, const atf_mlp *theta0, atf_model **out,
                           char *err)
{
    *out = NULL;
    atf_model *m = calloc(1, sizeof *m);
    if (!m || !(m->theta0 = atf_mlp_clone(theta0))) {
        atf_model_free(m);
        atf_errorf(err, "model: out of memory for a copy of the network");
        return ATF_E_NOMEM;
    }
    m->kind = kind;
    m->train_output_m2 = 1;
    int failed = 0;
    if (kind == ATF_MODEL_FACTORIZED) {
        failed = factors_alloc(m);
    } else {
        failed = !(m->net = atf_mlp_clone(theta0));
        if (!failed && kind == ATF_MODEL_LINEARIZED)
            zero_mlp(m->net);
    }
    if (failed) {
        atf_model_free(m);
        atf_errorf(err, "model: out of memory for the %s model's parameters",
                   atf_model_kind_name(kind));
        return ATF_E_NOMEM;
    }
    *out = m;
    return ATF_OK;
}

int64_t atf_model_nparams(const atf_model *m)
{
    if (m->kind != ATF_MODEL_FACTORIZED)
        return atf_mlp_nparams(m->net);
    int64_t n = 0;
    int L = m->theta0->arch.L;
    for (int l = 0; l < L; l++) {
        int64_t P = DIM(m, l), Q = DIM(m, l + 1);
        n += P * P + P * Q + (m->b[l] ? Q : 0) + (l < L - 1 || m->train_output_m2 ? Q * Q : 0);
    }
    return n;
}

/* ---- the passes ---- */

struct model_work {
    int nmax;
    double *h[ATF_MAX_LAYERS];  /* layer inputs h_1..h_{L−1} [nmax × widths[l]] */
    double *d[ATF_MAX_LAYERS];  /* σ′(a) at those inputs */
    double *out, *F, *GF;       /* [nmax × C]: outputs at the pass's θ, model outputs, ∂L/∂F */
    double *t0, *t1, *g0, *g1;  /* tangents and cotangents [nmax × max width] */
    double *dW[ATF_MAX_LAYERS], *db[ATF_MAX_LAYERS]; /* factorised: ΔW_ℓ, Δb_ℓ */
    double *tmp;                /* [max P·Q] */
    model_grad G;               /* factorised: ∂L/∂ΔW_ℓ, ∂L/∂Δb_ℓ */
    /* factorised layers taken batch-side (batch_side[ℓ]): h M1 [n × P], h M1 W [n × Q] and
     * the cotangent g_ℓ [n × Q] of the layer's output */
    int batch_side[ATF_MAX_LAYERS];
    int force_side; /* −1: choose per layer; 0: always formed; 1: always batch-side */
    double *hM1[ATF_MAX_LAYERS], *hM1W[ATF_MAX_LAYERS], *gl[ATF_MAX_LAYERS];
};

void model_work_free(model_work *w)
{
    if (!w)
        return;
    for (int l = 0; l < ATF_MAX_LAYERS; l++) {
        free(w->h[l]);
        free(w->d[l]);
        free(w->dW[l]);
        free(w->db[l]);
        free(w->hM1[l]);
        free(w->hM1W[l]);
        free(w->gl[l]);
    }
    free(w->out);
    free(w->F);
    free(w->GF);
    free(w->t0);
    free(w->t1);
    free(w->g0);
    free(w->g1);
    free(w->tmp);
    model_grad_free(&w->G);
    free(w);
}

model_work *model_work_new(const atf_model *m, int nmax)
{
    model_work *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    const atf_arch *a = &m->theta0->arch;
    int L = a->L, C = a->widths[L], maxw = 0, fail = 0;
    size_t maxpq = 1, n = (size_t)(nmax > 0 ? nmax : 1);
    w->nmax = nmax;
    w->force_side = -1;
    for (int l = 0; l <= L; l++)
        maxw = a->widths[l] > maxw ? a->widths[l] : maxw;
    for (int l = 1; l < L; l++) {
        fail |= !(w->h[l] = malloc(n * a->widths[l] * sizeof(double)));
        fail |= !(w->d[l] = malloc(n * a->widths[l] * sizeof(double)));
    }
    for (int l = 0; l < L; l++) {
        size_t pq = (size_t)a->widths[l] * a->widths[l + 1];
        maxpq = pq > maxpq ? pq : maxpq;
        if (m->kind == ATF_MODEL_FACTORIZED) {
            size_t P = (size_t)a->widths[l], Q = (size_t)a->widths[l + 1];
            fail |= !(w->dW[l] = malloc(pq * sizeof(double)));
            if (m->b[l])
                fail |= !(w->db[l] = malloc(Q * sizeof(double)));
            fail |= !(w->hM1[l] = malloc(n * P * sizeof(double)));
            fail |= !(w->hM1W[l] = malloc(n * Q * sizeof(double)));
            fail |= !(w->gl[l] = malloc(n * Q * sizeof(double)));
        }
    }
    fail |= !(w->out = malloc(n * C * sizeof(double)));
    fail |= !(w->F = malloc(n * C * sizeof(double)));
    fail |= !(w->GF = malloc(n * C * sizeof(double)));
    fail |= !(w->t0 = malloc(n * maxw * sizeof(double)));
    fail |= !(w->t1 = malloc(n * maxw * sizeof(double)));
    fail |= !(w->g0 = malloc(n * maxw * sizeof(double)));
    fail |= !(w->g1 = malloc(n * maxw * sizeof(double)));
    fail |= !(w->tmp = malloc(maxpq * sizeof(double)));
    if (m->kind == ATF_MODEL_FACTORIZED)
        fail |= model_grad_alloc(m, &w->G) != 0;
    if (fail) {
        model_work_free(w);
        return NULL;
    }
    return w;
}

/* The activation after layer l in place on a [n values], with its derivative in d. */
static void activate(const atf_mlp *net, int l, size_t n, double *a, double *d)
{
    atf_activation_eval(&net->arch.act[l], n, a, a, d);
}

static const double *layer_input(const model_work *w, int l, const double *X)
{
    return l == 0 ? X : w->h[l];
}

/* Forward pass at net on X [n × D]: w->h, w->d and w->out. */
static void forward_at(const atf_mlp *net, model_work *w, int n, const double *X)
{
    int L = net->arch.L;
    for (int l = 0; l < L; l++) {
        int P = net->arch.widths[l], Q = net->arch.widths[l + 1];
        double *A = l < L - 1 ? w->h[l + 1] : w->out;
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, Q, P, atf_mlp_scale(net, l),
                    layer_input(w, l, X), P, net->W[l], Q, 0.0, A, Q);
        if (net->b[l])
            for (int i = 0; i < n; i++)
                cblas_daxpy(Q, 1.0, net->b[l], 1, A + (size_t)i * Q, 1);
        if (l < L - 1)
            activate(net, l, (size_t)n * Q, A, w->d[l + 1]);
    }
}

/* c_ℓ h ΔW_ℓ [n × Q] into A for the factorised layer l taken batch-side: (h M1) W M2, keeping
 * h M1 and h M1 W for the gradients. */
static void factor_change_batch(const atf_model *m, model_work *w, int l, int n, const double *h,
                                double c, double *A)
{
    int P = DIM(m, l), Q = DIM(m, l + 1);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, P, P, 1.0, h, P, m->M1[l], P, 0.0,
                w->hM1[l], P);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, Q, P, 1.0, w->hM1[l], P, m->W[l],
                Q, 0.0, w->hM1W[l], Q);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, Q, Q, c, w->hM1W[l], Q, m->M2[l],
                Q, 0.0, A, Q);
}

/* Linear models: w->F = f(θ0) + the JVP of the change (after forward_at(θ0)): δ for the
 * linearised model; for the factorised one ΔW_ℓ = w->dW[ℓ] or, batch-side, (h M1) W M2. */
static void tangent_forward(const atf_model *m, model_work *w, int n, const double *X)
{
    const atf_mlp *theta0 = m->theta0;
    int L = theta0->arch.L, fac = m->kind == ATF_MODEL_FACTORIZED;
    double *const *dW = fac ? w->dW : m->net->W;
    double *const *db = fac ? w->db : m->net->b;
    double *t = NULL, *spare = w->t0;
    for (int l = 0; l < L; l++) {
        int P = theta0->arch.widths[l], Q = theta0->arch.widths[l + 1];
        double c = atf_mlp_scale(theta0, l);
        double *A = l < L - 1 ? spare : w->F;
        if (fac && w->batch_side[l])
            factor_change_batch(m, w, l, n, layer_input(w, l, X), c, A);
        else
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, Q, P, c,
                        layer_input(w, l, X), P, dW[l], Q, 0.0, A, Q);
        if (t)
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, Q, P, c, t, P,
                        theta0->W[l], Q, 1.0, A, Q);
        if (db[l])
            for (int i = 0; i < n; i++)
                cblas_daxpy(Q, 1.0, db[l], 1, A + (size_t)i * Q, 1);
        if (l < L - 1) {
            const double *d = w->d[l + 1];
            for (size_t i = 0; i < (size_t)n * Q; i++)
                A[i] *= d[i];
            spare = A == w->t0 ? w->t1 : w->t0;
            t = A;
        }
    }
    int C = theta0->arch.widths[L];
    cblas_daxpy(n * C, 1.0, w->out, 1, w->F, 1);
}

/* Backpropagation of w->GF through net (after forward_at(net)): gW[ℓ] = c_ℓ h_{ℓ−1}ᵀ g_ℓ and
 * gb[ℓ] = 1ᵀ g_ℓ (where gb[ℓ] is not NULL); with keep (factorised model), the layers taken
 * batch-side keep g_ℓ in w->gl[ℓ] instead of forming gW[ℓ]. */
static void backward_at(const atf_mlp *net, model_work *w, int n, const double *X,
                        double *const *gW, double *const *gb, int keep)
{
    int L = net->arch.L;
    const double *g = w->GF;
    double *next = w->g0;
    for (int l = L - 1; l >= 0; l--) {
        int P = net->arch.widths[l], Q = net->arch.widths[l + 1];
        double c = atf_mlp_scale(net, l);
        if (keep && w->batch_side[l])
            memcpy(w->gl[l], g, (size_t)n * Q * sizeof *g);
        else
            cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, P, Q, n, c,
                        layer_input(w, l, X), P, g, Q, 0.0, gW[l], Q);
        if (gb[l]) {
            memset(gb[l], 0, (size_t)Q * sizeof(double));
            for (int i = 0; i < n; i++)
                cblas_daxpy(Q, 1.0, g + (size_t)i * Q, 1, gb[l], 1);
        }
        if (l > 0) {
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, P, Q, c, g, Q, net->W[l], Q,
                        0.0, next, P);
            const double *d = w->d[l];
            for (size_t i = 0; i < (size_t)n * P; i++)
                next[i] *= d[i];
            g = next;
            next = next == w->g0 ? w->g1 : w->g0;
        }
    }
}

/* ΔW_ℓ = M1 W M2 and Δb_ℓ = M2ᵀ b of every layer into w->dW, w->db. */
static void form_factorized_delta(const atf_model *m, model_work *w)
{
    for (int l = 0; l < m->theta0->arch.L; l++) {
        int P = DIM(m, l), Q = DIM(m, l + 1);
        if (m->b[l])
            cblas_dgemv(CblasRowMajor, CblasTrans, Q, Q, 1.0, m->M2[l], Q, m->b[l], 1, 0.0,
                        w->db[l], 1);
        if (w->batch_side[l])
            continue;
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, P, Q, Q, 1.0, m->W[l], Q,
                    m->M2[l], Q, 0.0, w->tmp, Q);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, P, Q, P, 1.0, m->M1[l], P, w->tmp,
                    Q, 0.0, w->dW[l], Q);
    }
}

/* Per layer, the cheaper of the two exact ways for a batch of n rows: forming ΔW = M1 W M2 and
 * G = ∂L/∂ΔW (O(P²Q + PQ²) a step, independent of n) or multiplying the batch through the
 * factors (O(n(P² + PQ + Q²))). */
static void choose_sides(const atf_model *m, model_work *w, int n)
{
    for (int l = 0; l < m->theta0->arch.L; l++) {
        double P = DIM(m, l), Q = DIM(m, l + 1);
        double formed = 4.0 * (P * P * Q + P * Q * Q) + 2.0 * n * P * Q;
        double batch = 2.0 * n * P * P + 3.0 * n * P * Q + 3.0 * n * Q * Q;
        w->batch_side[l] = w->force_side >= 0 ? w->force_side : batch < formed;
    }
}

void model_work_force_side(model_work *w, int side)
{
    w->force_side = side;
}

/* The factor gradients of layer l taken batch-side, from g_ℓ (w->gl), h M1 and h M1 W:
 * ∂M1 = c hᵀ (g M2ᵀ Wᵀ), ∂W = c (h M1)ᵀ (g M2ᵀ), ∂M2 = c (h M1 W)ᵀ g + b g_bᵀ, ∂b = M2 g_b. */
static void factor_gradients_batch(const atf_model *m, model_work *w, int l, int n,
                                   const double *h, model_grad *grad)
{
    int P = DIM(m, l), Q = DIM(m, l + 1);
    double c = atf_mlp_scale(m->theta0, l);
    const double *g = w->gl[l], *gb = w->G.b[l];
    double *u = w->t0, *v = w->t1; /* free after the forward pass: [n × max width] */
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, Q, Q, 1.0, g, Q, m->M2[l], Q, 0.0, u,
                Q);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, P, Q, 1.0, u, Q, m->W[l], Q, 0.0, v,
                P);
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, P, P, n, c, h, P, v, P, 0.0,
                grad->M1[l], P);
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, P, Q, n, c, w->hM1[l], P, u, Q, 0.0,
                grad->W[l], Q);
    if (l < m->theta0->arch.L - 1 || m->train_output_m2) {
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Q, Q, n, c, w->hM1W[l], Q, g, Q,
                    0.0, grad->M2[l], Q);
        if (m->b[l])
            cblas_dger(CblasRowMajor, Q, Q, 1.0, m->b[l], 1, gb, 1, grad->M2[l], Q);
    }
    if (m->b[l])
        cblas_dgemv(CblasRowMajor, CblasNoTrans, Q, Q, 1.0, m->M2[l], Q, gb, 1, 0.0, grad->b[l],
                    1);
}

/* Chain G = ∂L/∂ΔW_ℓ and g_b = ∂L/∂Δb_ℓ (in w->G) through the factors of layer l. */
static void factor_gradients(const atf_model *m, model_work *w, int l, model_grad *grad)
{
    int P = DIM(m, l), Q = DIM(m, l + 1);
    const double *G = w->G.W[l], *gb = w->G.b[l];
    /* ∂M1 = G (W M2)ᵀ */
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, P, Q, Q, 1.0, m->W[l], Q, m->M2[l], Q,
                0.0, w->tmp, Q);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, P, P, Q, 1.0, G, Q, w->tmp, Q, 0.0,
                grad->M1[l], P);
    /* ∂W = M1ᵀ G M2ᵀ */
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, P, Q, P, 1.0, m->M1[l], P, G, Q, 0.0,
                w->tmp, Q);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, P, Q, Q, 1.0, w->tmp, Q, m->M2[l], Q,
                0.0, grad->W[l], Q);
    /* ∂M2 = (M1 W)ᵀ G + b g_bᵀ (skipped when the output layer's M2 stays I) */
    if (l < m->theta0->arch.L - 1 || m->train_output_m2) {
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, P, Q, P, 1.0, m->M1[l], P,
                    m->W[l], Q, 0.0, w->tmp, Q);
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Q, Q, P, 1.0, w->tmp, Q, G, Q, 0.0,
                    grad->M2[l], Q);
        if (m->b[l])
            cblas_dger(CblasRowMajor, Q, Q, 1.0, m->b[l], 1, gb, 1, grad->M2[l], Q);
    }
    /* ∂b = M2 g_b */
    if (m->b[l])
        cblas_dgemv(CblasRowMajor, CblasNoTrans, Q, Q, 1.0, m->M2[l], Q, gb, 1, 0.0, grad->b[l],
                    1);
}

double model_loss_of(atf_loss_kind loss, int n, int C, const double *F, const double *Y,
                     const int *labels, double *G)
{
    return model_loss_of_part(loss, n, n, C, F, Y, labels, G);
}

double model_loss_of_part(atf_loss_kind loss, int n, int n_mean, int C, const double *F,
                          const double *Y, const int *labels, double *G)
{
    if (n <= 0 || n_mean <= 0)
        return NAN;
    atf_loss spec = {loss, loss == ATF_LOSS_XENT ? (double)n_mean : 0.5 * (double)n_mean * C};
    return atf_loss_value(&spec, n, C, F, Y, NULL, labels, G);
}

/* The model's outputs on X into w->F (w->out for the network). */
static const double *model_outputs(const atf_model *m, model_work *w, int n, const double *X,
                                   int form)
{
    if (m->kind == ATF_MODEL_NETWORK) {
        forward_at(m->net, w, n, X);
        return w->out;
    }
    forward_at(m->theta0, w, n, X);
    if (m->kind == ATF_MODEL_FACTORIZED && form) {
        choose_sides(m, w, n);
        form_factorized_delta(m, w);
    }
    tangent_forward(m, w, n, X);
    return w->F;
}

atf_error model_loss_grad(const atf_model *m, model_work *w, int n, const double *X,
                          const double *Y, const int *labels, atf_loss_kind loss, double *value,
                          model_grad *grad, char *err)
{
    return model_loss_grad_part(m, w, n, n, X, Y, labels, loss, value, grad, err);
}

atf_error model_loss_grad_part(const atf_model *m, model_work *w, int n, int n_mean,
                               const double *X, const double *Y, const int *labels,
                               atf_loss_kind loss, double *value, model_grad *grad, char *err)
{
    if (n > w->nmax) {
        atf_errorf(err, "model: batch of %d rows but work space for %d", n, w->nmax);
        return ATF_E_USAGE;
    }
    int C = m->theta0->arch.widths[m->theta0->arch.L];
    const double *F = model_outputs(m, w, n, X, 1);
    *value = model_loss_of_part(loss, n, n_mean, C, F, Y, labels, grad ? w->GF : NULL);
    if (!grad)
        return ATF_OK;
    if (m->kind == ATF_MODEL_NETWORK) {
        backward_at(m->net, w, n, X, grad->W, grad->b, 0);
    } else if (m->kind == ATF_MODEL_LINEARIZED) {
        backward_at(m->theta0, w, n, X, grad->W, grad->b, 0);
    } else {
        backward_at(m->theta0, w, n, X, w->G.W, w->G.b, 1);
        for (int l = 0; l < m->theta0->arch.L; l++) {
            if (w->batch_side[l])
                factor_gradients_batch(m, w, l, n, layer_input(w, l, X), grad);
            else
                factor_gradients(m, w, l, grad);
        }
    }
    return ATF_OK;
}

atf_error atf_model_forward(const atf_model *m, int N, const double *X, double *F, char *err)
{
    return model_forward_rows(m, N, 0, N, X, F, err);
}

/* In the chunks of atf_shard_chunk(N) (problems/shard.c), a cut that depends on N only: every
 * GEMM then has the same shape whichever process computes it, and whichever rows it shares
 * with, so that the outputs are the same bits over any number of processes. */
atf_error model_forward_rows(const atf_model *m, int N, int first, int count, const double *X,
                             double *F, char *err)
{
    int chunk = atf_shard_chunk(N);
    int C = m->theta0->arch.widths[m->theta0->arch.L], D = m->theta0->arch.widths[0];
    if (count <= 0)
        return ATF_OK;
    model_work *w = model_work_new(m, count < chunk ? count : chunk);
    if (!w) {
        atf_errorf(err, "model: out of memory for the forward pass");
        return ATF_E_NOMEM;
    }
    /* the factorised model's ΔW = M1 W M2 is formed once for all chunks */
    model_work_force_side(w, 0);
    for (int i = first; i < first + count; i += chunk) {
        int n = first + count - i < chunk ? first + count - i : chunk;
        const double *out = model_outputs(m, w, n, X + (size_t)i * D, i == first);
        memcpy(F + (size_t)i * C, out, (size_t)n * C * sizeof *F);
    }
    model_work_free(w);
    return ATF_OK;
}

/* ---- evaluation of a fixed split for the linear models ---- */

/* θ0's pass over a split never changes, so the linear models keep its layer inputs, σ′ and
 * outputs per chunk and only push their change forward at every evaluation. The cache holds
 * the rows first … first + N − 1 of the split, in its chunks (model_forward_rows). */
struct model_eval_cache {
    int N, nchunks, chunk, first;
    const double *X;
    double *h[ATF_MAX_LAYERS], *d[ATF_MAX_LAYERS], *out; /* [N × width], whole split */
    model_work *w;
};

#define EVAL_CACHE_MAX_BYTES (512.0 * 1024 * 1024)

void model_eval_cache_free(model_eval_cache *c)
{
    if (!c)
        return;
    for (int l = 0; l < ATF_MAX_LAYERS; l++) {
        free(c->h[l]);
        free(c->d[l]);
    }
    free(c->out);
    model_work_free(c->w);
    free(c);
}

/* Point the work space's θ0 pass at chunk k of the cache (or back at its own arrays). */
static void swap_pass(model_eval_cache *c, int L, int k, double **save_h, double **save_d,
                      double **save_out, int restore, const atf_arch *a)
{
    model_work *w = c->w;
    for (int l = 1; l < L; l++) {
        if (restore) {
            w->h[l] = save_h[l];
            w->d[l] = save_d[l];
        } else {
            save_h[l] = w->h[l];
            save_d[l] = w->d[l];
            w->h[l] = c->h[l] + (size_t)k * c->chunk * a->widths[l];
            w->d[l] = c->d[l] + (size_t)k * c->chunk * a->widths[l];
        }
    }
    if (restore) {
        w->out = *save_out;
    } else {
        *save_out = w->out;
        w->out = c->out + (size_t)k * c->chunk * a->widths[L];
    }
}

model_eval_cache *model_eval_cache_new(const atf_model *m, const atf_dataset *ds, int first,
                                       int count)
{
    const atf_arch *a = &m->theta0->arch;
    int L = a->L;
    if (m->kind == ATF_MODEL_NETWORK || !ds || ds->N <= 0 || count <= 0)
        return NULL;
    double bytes = 0.0;
    for (int l = 1; l < L; l++)
        bytes += 2.0 * count * a->widths[l] * sizeof(double);
    if (bytes > EVAL_CACHE_MAX_BYTES)
        return NULL;
    model_eval_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->N = count;
    c->first = first;
    c->X = ds->X + (size_t)first * ds->D;
    c->chunk = atf_shard_chunk(ds->N);
    c->chunk = count < c->chunk ? count : c->chunk;
    c->nchunks = (count + c->chunk - 1) / c->chunk;
    int fail = !(c->w = model_work_new(m, c->chunk));
    for (int l = 1; !fail && l < L; l++) {
        fail |= !(c->h[l] = malloc((size_t)count * a->widths[l] * sizeof(double)));
        fail |= !(c->d[l] = malloc((size_t)count * a->widths[l] * sizeof(double)));
    }
    if (!fail)
        fail = !(c->out = malloc((size_t)count * a->widths[L] * sizeof(double)));
    if (fail) {
        model_eval_cache_free(c);
        return NULL;
    }
    model_work_force_side(c->w, 0);
    double *save_h[ATF_MAX_LAYERS], *save_d[ATF_MAX_LAYERS], *save_out;
    for (int k = 0; k < c->nchunks; k++) {
        int n = c->N - k * c->chunk < c->chunk ? c->N - k * c->chunk : c->chunk;
        swap_pass(c, L, k, save_h, save_d, &save_out, 0, a);
        forward_at(m->theta0, c->w, n, c->X + (size_t)k * c->chunk * a->widths[0]);
        swap_pass(c, L, k, save_h, save_d, &save_out, 1, a);
    }
    return c;
}

void model_eval_cached(const atf_model *m, model_eval_cache *c, double *F)
{
    const atf_arch *a = &m->theta0->arch;
    int L = a->L, C = a->widths[L];
    double *save_h[ATF_MAX_LAYERS], *save_d[ATF_MAX_LAYERS], *save_out;
    for (int k = 0; k < c->nchunks; k++) {
        int n = c->N - k * c->chunk < c->chunk ? c->N - k * c->chunk : c->chunk;
        if (k == 0 && m->kind == ATF_MODEL_FACTORIZED) {
            choose_sides(m, c->w, n);
            form_factorized_delta(m, c->w);
        }
        swap_pass(c, L, k, save_h, save_d, &save_out, 0, a);
        tangent_forward(m, c->w, n, c->X + (size_t)k * c->chunk * a->widths[0]);
        swap_pass(c, L, k, save_h, save_d, &save_out, 1, a);
        memcpy(F + ((size_t)c->first + (size_t)k * c->chunk) * C, c->w->F,
               (size_t)n * C * sizeof *F);
    }
}

/* ---- gradients and trained blocks ---- */

void model_grad_free(model_grad *g)
{
    for (int l = 0; l < ATF_MAX_LAYERS; l++) {
        free(g->W[l]);
        free(g->b[l]);
        free(g->M1[l]);
        free(g->M2[l]);
    }
    memset(g, 0, sizeof *g);
}

int model_grad_alloc(const atf_model *m, model_grad *g)
{
    memset(g, 0, sizeof *g);
    int fail = 0, fac = m->kind == ATF_MODEL_FACTORIZED;
    for (int l = 0; l < m->theta0->arch.L; l++) {
        size_t P = (size_t)DIM(m, l), Q = (size_t)DIM(m, l + 1);
        fail |= !(g->W[l] = calloc(P * Q, sizeof(double)));
        if (m->theta0->b[l])
            fail |= !(g->b[l] = calloc(Q, sizeof(double)));
        if (fac) {
            fail |= !(g->M1[l] = calloc(P * P, sizeof(double)));
            fail |= !(g->M2[l] = calloc(Q * Q, sizeof(double)));
        }
    }
    if (fail)
        model_grad_free(g);
    return fail ? -1 : 0;
}

int model_blocks(atf_model *m, const model_grad *g, int frozen_m1, int frozen_m2,
                 param_block *out)
{
    int k = 0, L = m->theta0->arch.L;
    for (int l = 0; l < L; l++) {
        size_t P = (size_t)DIM(m, l), Q = (size_t)DIM(m, l + 1);
        if (m->kind != ATF_MODEL_FACTORIZED) {
            out[k++] = (param_block){m->net->W[l], g->W[l], P * Q};
            if (m->net->b[l])
                out[k++] = (param_block){m->net->b[l], g->b[l], Q};
            continue;
        }
        if (!frozen_m1)
            out[k++] = (param_block){m->M1[l], g->M1[l], P * P};
        out[k++] = (param_block){m->W[l], g->W[l], P * Q};
        if (!frozen_m2 && (l < L - 1 || m->train_output_m2))
            out[k++] = (param_block){m->M2[l], g->M2[l], Q * Q};
        if (m->b[l])
            out[k++] = (param_block){m->b[l], g->b[l], Q};
    }
    return k;
}

/* ---- the explicit penalty ---- */

/* Σ_j ω(s_j(M)) of an n × n matrix and, with grad, μ U diag(ω′(s)) Vᵀ added to grad. */
static atf_error omega_of_matrix(const atf_omega *om, int n, const double *M, double mu,
                                 double *grad, double *value, char *err)
{
    size_t nn = (size_t)n * n;
    double *A = malloc(nn * sizeof *A), *U = malloc(nn * sizeof *U),
           *VT = malloc(nn * sizeof *VT), *s = malloc((size_t)n * sizeof *s);
    atf_error e = ATF_OK;
    if (!A || !U || !VT || !s) {
        atf_errorf(err, "penalty: out of memory for the SVD of a %d x %d factor", n, n);
        e = ATF_E_NOMEM;
    } else {
        memcpy(A, M, nn * sizeof *A);
        if (LAPACKE_dgesdd(LAPACK_ROW_MAJOR, 'A', n, n, A, n, s, U, n, VT, n) != 0) {
            atf_errorf(err, "penalty: the SVD of a %d x %d factor did not converge", n, n);
            e = ATF_E_NUMERICAL;
        }
    }
    if (!e) {
        double sum = 0.0;
        for (int j = 0; j < n; j++) {
            sum += atf_omega_value(om, s[j]);
            double dj = mu * atf_omega_deriv(om, s[j]);
            for (int i = 0; i < n; i++)
                U[(size_t)i * n + j] *= dj;
        }
        *value = sum;
        if (grad)
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, U, n, VT, n,
                        1.0, grad, n);
    }
    free(A);
    free(U);
    free(VT);
    free(s);
    return e;
}

atf_error model_penalty(const atf_model *m, const atf_penalty *pen, double mu, int frozen_m1,
                        int frozen_m2, double *value, model_grad *grad, char *err)
{
    double total = 0.0;
    int L = m->theta0->arch.L;
    atf_error e = ATF_OK;
    for (int l = 0; !e && l < L; l++) {
        int P = DIM(m, l), Q = DIM(m, l + 1);
        double v1 = 0.0, v2 = 0.0;
        if (!frozen_m1)
            e = omega_of_matrix(&pen->w1, P, m->M1[l], mu, grad ? grad->M1[l] : NULL, &v1, err);
        if (!e && !frozen_m2 && (l < L - 1 || m->train_output_m2))
            e = omega_of_matrix(&pen->w2, Q, m->M2[l], mu, grad ? grad->M2[l] : NULL, &v2, err);
        double w2 = atf_dot(m->W[l], m->W[l], (size_t)P * Q);
        if (grad)
            cblas_daxpy(P * Q, 2.0 * mu, m->W[l], 1, grad->W[l], 1);
        total += v1 + v2 + w2;
    }
    *value = mu * total;
    return e;
}

/* ---- changes, copies ---- */

void atf_model_delta(const atf_model *m, int l, double *dW, double *db)
{
    int P = DIM(m, l), Q = DIM(m, l + 1);
    size_t pq = (size_t)P * Q;
    const double *b0 = m->theta0->b[l];
    if (m->kind == ATF_MODEL_FACTORIZED) {
        double *tmp = malloc(pq * sizeof *tmp);
        if (tmp) { /* M1 (W M2) */
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, P, Q, Q, 1.0, m->W[l], Q,
                        m->M2[l], Q, 0.0, tmp, Q);
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, P, Q, P, 1.0, m->M1[l], P,
                        tmp, Q, 0.0, dW, Q);
        } else { /* the same product one row at a time: no work space needed */
            memset(dW, 0, pq * sizeof *dW);
            for (int p = 0; p < P; p++)
                for (int k = 0; k < P; k++)
                    cblas_dgemv(CblasRowMajor, CblasTrans, Q, Q, m->M1[l][(size_t)p * P + k],
                                m->M2[l], Q, m->W[l] + (size_t)k * Q, 1, 1.0,
                                dW + (size_t)p * Q, 1);
        }
        free(tmp);
        if (db && m->b[l])
            cblas_dgemv(CblasRowMajor, CblasTrans, Q, Q, 1.0, m->M2[l], Q, m->b[l], 1, 0.0, db,
                        1);
    } else {
        int net = m->kind == ATF_MODEL_NETWORK;
        for (size_t i = 0; i < pq; i++)
            dW[i] = m->net->W[l][i] - (net ? m->theta0->W[l][i] : 0.0);
        for (int q = 0; db && b0 && q < Q; q++)
            db[q] = m->net->b[l][q] - (net ? b0[q] : 0.0);
    }
    if (db && !b0)
        memset(db, 0, (size_t)Q * sizeof *db);
}

atf_mlp *atf_model_network(const atf_model *m)
{
    if (m->kind == ATF_MODEL_NETWORK)
        return atf_mlp_clone(m->net);
    atf_mlp *out = atf_mlp_clone(m->theta0);
    if (!out)
        return NULL;
    for (int l = 0; l < out->arch.L; l++) {
        int P = DIM(m, l), Q = DIM(m, l + 1);
        double *dW = malloc((size_t)P * Q * sizeof *dW), *db = malloc((size_t)Q * sizeof *db);
        if (!dW || !db) {
            free(dW);
            free(db);
            atf_mlp_free(out);
            return NULL;
        }
        atf_model_delta(m, l, dW, db);
        cblas_daxpy(P * Q, 1.0, dW, 1, out->W[l], 1);
        if (out->b[l])
            cblas_daxpy(Q, 1.0, db, 1, out->b[l], 1);
        free(dW);
        free(db);
    }
    return out;
}

static void copy_array(double *dst, const double *src, size_t n)
{
    if (dst && src)
        memcpy(dst, src, n * sizeof *dst);
}

void model_copy_state(atf_model *dst, const atf_model *src)
{
    for (int l = 0; l < src->theta0->arch.L; l++) {
        size_t P = (size_t)DIM(src, l), Q = (size_t)DIM(src, l + 1);
        if (src->net) {
            copy_array(dst->net->W[l], src->net->W[l], P * Q);
            copy_array(dst->net->b[l], src->net->b[l], Q);
        }
        copy_array(dst->M1[l], src->M1[l], P * P);
        copy_array(dst->W[l], src->W[l], P * Q);
        copy_array(dst->M2[l], src->M2[l], Q * Q);
        copy_array(dst->b[l], src->b[l], Q);
    }
    dst->train_output_m2 = src->train_output_m2;
}

atf_model *model_clone(const atf_model *m)
{
    atf_model *c = NULL;
    if (atf_model_create(m->kind, m->theta0, &c, NULL))
        return NULL;
    model_copy_state(c, m);
    return c;
}
