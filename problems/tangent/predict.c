/* predict.c — predictions and their metrics for solutions and networks (one f0 rule, see
 * atf_features.h), and their files. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "atf_features.h"
#include "h5io.h"
#include "atf_loss.h"

/* Every number reported for predictions F against y (and labels): one implementation for `atf
 * predict`, the experiments' test metrics, networks and linear models. rel_mse is a ratio of
 * sums (the mean of y over all N·C entries). */
static void prediction_metrics(int N, int C, const double *F, const double *y, const int *labels,
                               atf_split_eval *s)
{
    s->mse = s->rel_mse = s->error = s->class_error = NAN;
    if (N <= 0)
        return;
    size_t M = (size_t)N * C;
    double mean = 0.0, var = 0.0, sq = 0.0;
    for (size_t i = 0; i < M; i++)
        mean += y[i];
    mean /= (double)M;
    for (size_t i = 0; i < M; i++) {
        var += (y[i] - mean) * (y[i] - mean);
        sq += (F[i] - y[i]) * (F[i] - y[i]);
    }
    s->mse = sq / (double)M;
    s->rel_mse = var > 0 ? sq / var : NAN;
    s->error = atf_prediction_error(N, C, F, y);
    s->class_error = atf_prediction_class_error(N, C, F, labels);
}

/* The test metrics of the predictions F [N × C] whose metrics s holds (labels may be NULL). */
static atf_test_metrics test_metrics_of(const atf_split_eval *s, int N, int C, const double *F,
                                        const int *labels)
{
    atf_test_metrics t = {labels ? s->class_error : s->error, s->rel_mse, NAN};
    if (N > 0 && labels && C >= 2)
        t.xent = atf_loss_mean_xent(N, C, F, labels);
    return t;
}

atf_test_metrics atf_prediction_metrics(int N, int C, const double *F, const double *y,
                                        const int *labels)
{
    atf_split_eval s;
    prediction_metrics(N, C, F, y, labels, &s);
    return test_metrics_of(&s, N, C, F, labels);
}

static void fill_metrics(atf_split_eval *s)
{
    prediction_metrics(s->N, s->C, s->f, s->y, s->labels, s);
}

/* Allocate f, y (copied) and labels (copied when given). */
static atf_error split_alloc(atf_split_eval *s, int N, int C, const double *y, const int *labels,
                             char *err)
{
    memset(s, 0, sizeof *s);
    s->N = N;
    s->C = C;
    size_t n = (size_t)(N > 0 ? N : 1) * C;
    s->f = calloc(n, sizeof *s->f);
    s->y = malloc(n * sizeof *s->y);
    s->labels = labels ? malloc((size_t)(N > 0 ? N : 1) * sizeof *s->labels) : NULL;
    if (!s->f || !s->y || (labels && !s->labels)) {
        atf_errorf(err, "predict: out of memory for %d x %d predictions", N, C);
        return ATF_E_NOMEM;
    }
    if (y)
        memcpy(s->y, y, (size_t)N * C * sizeof *s->y);
    if (labels)
        memcpy(s->labels, labels, (size_t)N * sizeof *s->labels);
    return ATF_OK;
}

/* f = f0 + Σ_ℓ A_ℓ vec B_ℓ over one split, by the f0 rule of atf_features.h: f0 first, then the
 * blocks in order (the test split shares the result's B); `where` names the split's group in
 * messages ("" for the root, "/test"). */
static atf_error predict_split(const atf_problem *p, const atf_result *res, const char *prob_name,
                               const char *where, atf_split_eval *s, char *err)
{
    if (!p->y || !p->f0) {
        atf_errorf(err, "%s: %s/%s: missing (the problem's targets and initial outputs are needed "
                   "for predictions)", prob_name, where, p->y ? "f0" : "y");
        return ATF_E_INPUT;
    }
    if (res->nblocks != p->nblocks) {
        atf_errorf(err, "%s: %s: %d blocks but the result has %d", prob_name,
                   *where ? where : "/blocks", p->nblocks, res->nblocks);
        return ATF_E_INPUT;
    }
    atf_error e = split_alloc(s, p->N, p->C, p->y, p->labels, err);
    if (e)
        return e;
    memcpy(s->f, p->f0, (size_t)p->M * sizeof *s->f);
    for (int l = 0; l < p->nblocks; l++)
        atf_block_apply(&p->blocks[l], res->blocks[l].B, 1.0, s->f);
    fill_metrics(s);
    return ATF_OK;
}

atf_error atf_predict_result(const atf_problem *p, const char *prob_name, const atf_result *res,
                             const char *res_name, atf_predictions *out, char *err)
{
    memset(out, 0, sizeof *out);
    if (!prob_name)
        prob_name = "problem";
    atf_error e = atf_result_check(res, p, res_name, prob_name, err);
    if (!e)
        e = predict_split(p, res, prob_name, "", &out->train, err);
    if (!e && p->test)
        e = predict_split(p->test, res, prob_name, "/test", &out->test, err);
    if (e)
        atf_predictions_free(out);
    return e;
}

static atf_error predict_net_split(const atf_mlp *m, const atf_dataset *ds, atf_split_eval *s,
                                   char *err)
{
    int C = m->arch.widths[m->arch.L];
    atf_error e = split_alloc(s, ds->N, C, ds->Y, ds->labels, err);
    if (!e && ds->N > 0)
        e = atf_mlp_forward(m, ds->N, ds->X, s->f, err);
    if (!e)
        fill_metrics(s);
    return e;
}

atf_error atf_predict_mlp(const atf_mlp *m, const atf_task *task, atf_predictions *out,
                          char *err)
{
    memset(out, 0, sizeof *out);
    atf_arch arch = m->arch;
    atf_error e = atf_arch_fit_task(&arch, task, err);
    if (!e)
        e = predict_net_split(m, &task->train, &out->train, err);
    if (!e && task->test.N > 0)
        e = predict_net_split(m, &task->test, &out->test, err);
    if (e)
        atf_predictions_free(out);
    return e;
}

static void split_free(atf_split_eval *s)
{
    free(s->f);
    free(s->y);
    free(s->labels);
    memset(s, 0, sizeof *s);
}

void atf_predictions_free(atf_predictions *pr)
{
    split_free(&pr->train);
    split_free(&pr->test);
}

static void put_split(h5io_out *o, const char *group, const atf_split_eval *s)
{
    char path[H5IO_PATHLEN];
    int64_t dims[2] = {s->N, s->C};
    h5io_put_group(o, group);
    h5io_path(path, "%s/f", group);
    h5io_put_doubles(o, path, 2, dims, s->f);
    h5io_path(path, "%s/y", group);
    h5io_put_doubles(o, path, 2, dims, s->y);
    h5io_path(path, "%s/labels", group);
    if (s->labels)
        h5io_put_ints(o, path, s->N, s->labels);
    h5io_put_int(o, group, "samples", s->N);
    h5io_put_double(o, group, "mse", s->mse);
    h5io_put_double(o, group, "error", s->error);
    h5io_put_double(o, group, "class_error", s->class_error);
}

static void put_predictions(h5io_out *o, const void *ctx)
{
    const atf_predictions *pr = ctx;
    h5io_put_string(o, "/", "format", "atf-predictions");
    h5io_put_int(o, "/", "version", 1);
    put_split(o, "/train", &pr->train);
    if (pr->test.N > 0)
        put_split(o, "/test", &pr->test);
}

atf_error atf_predictions_write(const char *path, const atf_predictions *pr, char *err)
{
    return h5io_write_file(path, put_predictions, pr, err);
}

static atf_error split_metrics(const atf_problem *split, const char *where,
                               const atf_result *res, atf_test_metrics *out, char *err)
{
    *out = (atf_test_metrics){NAN, NAN, NAN};
    if (!split || split->N <= 0)
        return ATF_OK;
    atf_split_eval s;
    memset(&s, 0, sizeof s);
    atf_error e = predict_split(split, res, "problem", where, &s, err);
    if (!e)
        *out = test_metrics_of(&s, s.N, s.C, s.f, s.labels);
    split_free(&s);
    return e;
}

atf_error atf_result_test_metrics(const atf_problem *prob, const atf_result *res,
                                  atf_test_metrics *out, char *err)
{
    return split_metrics(prob->test, "/test", res, out, err);
}

atf_error atf_result_metrics_on(const atf_problem *examples, const atf_result *res,
                                atf_test_metrics *out, char *err)
{
    return split_metrics(examples, "", res, out, err);
}
