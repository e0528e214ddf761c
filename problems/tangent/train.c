/* train.c — minibatch SGD with momentum and a cosine schedule on the squared loss, and
 * evaluation of networks and predictions. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "atf_mlp.h"
#include "atf_util.h"
#include "mlp_internal.h"

static const double PI = 3.14159265358979323846;

atf_train_settings atf_train_default(void)
{
    atf_train_settings s;
    memset(&s, 0, sizeof s);
    s.epochs = 100;
    s.batch = 32;
    s.lr = 0.1;
    s.momentum = 0.9;
    s.seed = 1;
    return s;
}

static int argmax(int n, const double *v)
{
    int best = 0;
    for (int k = 1; k < n; k++)
        best = v[k] > v[best] ? k : best;
    return best;
}

double atf_prediction_error(int N, int C, const double *F, const double *Y)
{
    if (N <= 0)
        return NAN;
    int wrong = 0;
    for (int i = 0; i < N; i++) {
        const double *f = F + (size_t)i * C, *y = Y + (size_t)i * C;
        wrong += C == 1 ? (f[0] > 0.0) != (y[0] > 0.0) : argmax(C, f) != argmax(C, y);
    }
    return (double)wrong / N;
}

double atf_prediction_class_error(int N, int C, const double *F, const int *labels)
{
    if (N <= 0 || !labels)
        return NAN;
    int wrong = 0;
    for (int i = 0; i < N; i++) {
        const double *f = F + (size_t)i * C;
        int predicted = C == 1 ? f[0] > 0.0 : argmax(C, f);
        wrong += predicted != labels[i];
    }
    return (double)wrong / N;
}

static double squared_loss(int N, int C, const double *F, const double *Y)
{
    double s = 0.0;
    for (size_t i = 0; i < (size_t)N * C; i++)
        s += (F[i] - Y[i]) * (F[i] - Y[i]);
    return N > 0 ? s / ((double)N * C) : NAN;
}

atf_error atf_mlp_evaluate(const atf_mlp *m, const atf_dataset *ds, double *loss, double *error,
                           char *err)
{
    int C = m->arch.widths[m->arch.L];
    if (ds->N == 0) {
        if (loss)
            *loss = NAN;
        if (error)
            *error = NAN;
        return ATF_OK;
    }
    double *F = malloc((size_t)ds->N * C * sizeof *F);
    if (!F) {
        atf_errorf(err, "evaluate: out of memory");
        return ATF_E_NOMEM;
    }
    atf_error e = atf_mlp_forward(m, ds->N, ds->X, F, err);
    if (!e && loss)
        *loss = squared_loss(ds->N, C, F, ds->Y);
    if (!e && error)
        *error = atf_prediction_error(ds->N, C, F, ds->Y);
    free(F);
    return e;
}

/* Work space of one training run. */
typedef struct {
    int *perm;
    double *Xb, *Yb, *G, *Gprev, *grad;
    double *vW[ATF_MAX_LAYERS], *vb[ATF_MAX_LAYERS];
} train_work;

static void work_free(train_work *w, int L)
{
    free(w->perm);
    free(w->Xb);
    free(w->Yb);
    free(w->G);
    free(w->Gprev);
    free(w->grad);
    for (int l = 0; l < L; l++) {
        free(w->vW[l]);
        free(w->vb[l]);
    }
}

static int work_alloc(train_work *w, const atf_mlp *m, int N, int B)
{
    memset(w, 0, sizeof *w);
    const atf_arch *a = &m->arch;
    int maxw = 0;
    size_t maxpq = 0;
    for (int l = 0; l <= a->L; l++)
        maxw = a->widths[l] > maxw ? a->widths[l] : maxw;
    for (int l = 0; l < a->L; l++) {
        size_t pq = (size_t)a->widths[l] * a->widths[l + 1];
        maxpq = pq > maxpq ? pq : maxpq;
        w->vW[l] = calloc(pq, sizeof(double));
        w->vb[l] = a->bias ? calloc((size_t)a->widths[l + 1], sizeof(double)) : NULL;
        if (!w->vW[l] || (a->bias && !w->vb[l]))
            return -1;
    }
    w->perm = malloc((size_t)N * sizeof *w->perm);
    w->Xb = malloc((size_t)B * a->widths[0] * sizeof(double));
    w->Yb = malloc((size_t)B * a->widths[a->L] * sizeof(double));
    w->G = malloc((size_t)B * maxw * sizeof(double));
    w->Gprev = malloc((size_t)B * maxw * sizeof(double));
    w->grad = malloc(maxpq * sizeof(double));
    return w->perm && w->Xb && w->Yb && w->G && w->Gprev && w->grad ? 0 : -1;
}

/* v ← μ v + g; θ ← θ − η v */
static void momentum_step(size_t n, double *theta, double *v, const double *g, double lr,
                          double mu)
{
    for (size_t i = 0; i < n; i++) {
        v[i] = mu * v[i] + g[i];
        theta[i] -= lr * v[i];
    }
}

/* One minibatch step on rows perm[0..nb); returns the batch loss. */
static atf_error sgd_step(atf_mlp *m, const atf_dataset *ds, const int *rows, int nb,
                          double lr, double mu, train_work *w, double *loss, char *err)
{
    const atf_arch *a = &m->arch;
    int D = a->widths[0], C = a->widths[a->L];
    for (int r = 0; r < nb; r++) {
        memcpy(w->Xb + (size_t)r * D, ds->X + (size_t)rows[r] * D, (size_t)D * sizeof(double));
        memcpy(w->Yb + (size_t)r * C, ds->Y + (size_t)rows[r] * C, (size_t)C * sizeof(double));
    }
    mlp_cache c;
    atf_error e = mlp_forward_cache(m, nb, w->Xb, &c, err);
    if (e)
        return e;
    *loss = squared_loss(nb, C, c.out, w->Yb);
    double scale = 2.0 / ((double)nb * C); /* d/df of mean ‖f − y‖² / C */
    for (size_t i = 0; i < (size_t)nb * C; i++)
        w->G[i] = scale * (c.out[i] - w->Yb[i]);
    for (int l = a->L - 1; l >= 0; l--) {
        int P = a->widths[l], Q = a->widths[l + 1];
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, P, Q, nb, atf_mlp_scale(m, l),
                    c.h[l], P, w->G, Q, 0.0, w->grad, Q);
        if (l > 0) /* with the weights before this step's update */
            mlp_backprop_layer(m, l, nb, 1, w->G, c.h[l], w->Gprev);
        momentum_step((size_t)P * Q, m->W[l], w->vW[l], w->grad, lr, mu);
        if (m->b[l]) {
            for (int q = 0; q < Q; q++) {
                double s = 0.0;
                for (int r = 0; r < nb; r++)
                    s += w->G[(size_t)r * Q + q];
                w->grad[q] = s;
            }
            momentum_step((size_t)Q, m->b[l], w->vb[l], w->grad, lr, mu);
        }
        double *t = w->G;
        w->G = w->Gprev;
        w->Gprev = t;
    }
    mlp_cache_free(&c);
    return ATF_OK;
}

static atf_error check_settings(const atf_mlp *m, const atf_dataset *ds,
                                const atf_train_settings *s, char *err)
{
    if (s->epochs < 1 || s->batch < 1 || !(s->lr > 0.0) || !(s->momentum >= 0.0) ||
        !(s->momentum < 1.0)) {
        atf_errorf(err, "train: need epochs >= 1, batch >= 1, lr > 0 and 0 <= momentum < 1");
        return ATF_E_USAGE;
    }
    if (ds->N < 1 || !ds->Y) {
        atf_errorf(err, "train: no training examples with targets");
        return ATF_E_USAGE;
    }
    if (ds->D != m->arch.widths[0] || ds->C != m->arch.widths[m->arch.L]) {
        atf_errorf(err, "train: network maps %d -> %d but the data has dimension %d and %d "
                   "outputs", m->arch.widths[0], m->arch.widths[m->arch.L], ds->D, ds->C);
        return ATF_E_USAGE;
    }
    return ATF_OK;
}

atf_error atf_mlp_train(atf_mlp *m, const atf_dataset *ds, const atf_train_settings *s,
                        double *final_loss, char *err)
{
    atf_error e = check_settings(m, ds, s, err);
    if (e)
        return e;
    int B = s->batch < ds->N ? s->batch : ds->N;
    train_work w;
    if (work_alloc(&w, m, ds->N, B)) {
        work_free(&w, m->arch.L);
        atf_errorf(err, "train: out of memory");
        return ATF_E_NOMEM;
    }
    atf_rng rng;
    atf_rng_seed(&rng, s->seed);
    for (int i = 0; i < ds->N; i++)
        w.perm[i] = i;
    double t0 = atf_now();
    int stopped = 0; /* the interrupt flag was raised: keep the model as it is (not an error) */
    for (int epoch = 0; !e && !stopped && epoch < s->epochs; epoch++) {
        double lr = s->lr * 0.5 * (1.0 + cos(PI * epoch / s->epochs));
        atf_rng_shuffle(&rng, ds->N, w.perm);
        double loss_sum = 0.0;
        for (int start = 0; !e && start < ds->N; start += B) {
            if (s->interrupt && *s->interrupt) {
                stopped = 1;
                break;
            }
            int nb = ds->N - start < B ? ds->N - start : B;
            double loss;
            e = sgd_step(m, ds, w.perm + start, nb, lr, s->momentum, &w, &loss, err);
            loss_sum += loss * nb;
        }
        if (!e && !isfinite(loss_sum)) {
            atf_errorf(err, "train: loss diverged in epoch %d (lower the learning rate)",
                       epoch + 1);
            e = ATF_E_NUMERICAL;
        }
        if (!e && !stopped && s->progress) {
            double elapsed = atf_now() - t0;
            atf_train_progress p = {epoch + 1, s->epochs, loss_sum / ds->N, lr, elapsed,
                                    elapsed / (epoch + 1) * (s->epochs - epoch - 1)};
            e = s->progress(&p, m, s->ctx);
        }
    }
    work_free(&w, m->arch.L);
    if (!e && final_loss)
        e = atf_mlp_evaluate(m, ds, final_loss, NULL, err);
    return e;
}
