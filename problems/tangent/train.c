/* train.c — evaluation of networks and predictions (the training itself is in train_model.c
 * and train_loop.c, atf_train.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "atf_loss.h"
#include "atf_mlp.h"

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

/* mean_i ‖f_i − y_i‖² / C: the squared loss of atf_loss.h with λ = N·C/2 */
static double squared_loss(int N, int C, const double *F, const double *Y)
{
    atf_loss spec = {ATF_LOSS_SQUARED, 0.5 * (double)N * C};
    return N > 0 ? atf_loss_value(&spec, N, C, F, Y, NULL, NULL, NULL) : NAN;
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
