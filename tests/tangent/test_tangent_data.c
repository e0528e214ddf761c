/* test_tangent_data.c — the tangent library's options, data directories and prediction rule:
 *  - options set by name (atf_data_option, atf_net_option): values, unknown names, messages that
 *    name the option and never a command-line flag;
 *  - the data-directory search for mnist: no directory, the first root holding the files wins,
 *    the message lists every directory searched, the working directory is not searched;
 *  - the f0 rule: predictions of a result are f0 + Σ A_ℓ vec B_ℓ against y, recomputed here from
 *    dense operators, the same numbers from atf_predict_result and atf_result_test_metrics, and
 *    a split without /f0 refused.
 * Usage: test_tangent_data SCRATCH_DIR */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atf_features.h"
#include "atf_test.h"

/* ---------------------------------------------------------------- options by name */

static void test_options(void)
{
    char err[ATF_ERRLEN];
    atf_data_options d = atf_data_options_default();
    CHECK(atf_data_option(&d, "classes", "2,3", err) == ATF_OK && d.nclasses == 2 &&
              d.classes[1] == 3, "classes 2,3");
    CHECK(atf_data_option(&d, "n-train", "40", err) == ATF_OK && d.n_train == 40, "n-train");
    CHECK(atf_data_option(&d, "standardize", "0", err) == ATF_OK && d.standardize == 0,
          "standardize 0");
    CHECK(atf_data_option(&d, "targets", "teacher-sign", err) == ATF_OK &&
              d.targets == ATF_TARGETS_TEACHER_SIGN, "targets");
    CHECK(atf_data_option(&d, "classes", "2,2", err) == ATF_E_USAGE &&
              !strncmp(err, "classes: ", 9) && !strstr(err, "--"), "duplicate class: '%s'", err);
    CHECK(atf_data_option(&d, "data-seed", "-1", err) == ATF_E_USAGE &&
              !strncmp(err, "data-seed: ", 11), "negative seed: '%s'", err);
    CHECK(atf_data_option(&d, "no-such", "1", err) == ATF_E_USAGE && strstr(err, "no-such"),
          "unknown data option: '%s'", err);
    atf_net_options n = atf_net_options_default();
    CHECK(atf_net_option(&n, "widths", "4,8,1", err) == ATF_OK && n.have_widths &&
              n.arch.L == 2 && n.arch.widths[1] == 8, "widths");
    CHECK(atf_net_option(&n, "bias", "1", err) == ATF_OK && !strcmp(n.bias, "1"), "bias");
    CHECK(atf_net_option(&n, "widths", "4,,1", err) == ATF_E_USAGE &&
              !strncmp(err, "widths: ", 8) && !strstr(err, "--"), "bad widths: '%s'", err);
    CHECK(atf_net_option(&n, "init", "xavier", err) == ATF_E_USAGE && !strstr(err, "--"),
          "bad init: '%s'", err);
    CHECK(atf_net_option(&n, "classes", "1", err) == ATF_E_USAGE, "a data name is not a net one");
    for (int j = 0; j < ATF_MAX_DATA_DIRS; j++)
        CHECK(atf_data_add_dir(&d, "/x", err) == ATF_OK, "data dir %d", j);
    CHECK(atf_data_add_dir(&d, "/y", err) == ATF_E_USAGE && d.ndata_dirs == ATF_MAX_DATA_DIRS,
          "one data directory too many: '%s'", err);
}

/* ---------------------------------------------------------------- data directories */

static void write_bytes(const char *path, const unsigned char *head, size_t nhead,
                        const unsigned char *body, size_t nbody)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL, "cannot write %s", path);
    if (!f)
        return;
    fwrite(head, 1, nhead, f);
    fwrite(body, 1, nbody, f);
    fclose(f);
}

/* ROOT/mnist/train-{images,labels}: 20 images of 2×2 pixels, labels alternating 0, 1. */
static void write_mnist(const char *root)
{
    char dir[1200], path[1300];
    snprintf(dir, sizeof dir, "%s/mnist", root);
    mkdir(root, 0755);
    mkdir(dir, 0755);
    unsigned char images[20 * 4], labels[20];
    for (int i = 0; i < 20; i++) {
        labels[i] = (unsigned char)(i % 2);
        for (int p = 0; p < 4; p++)
            images[i * 4 + p] = (unsigned char)(17 * i + 50 * p + 3);
    }
    const unsigned char ihead[16] = {0, 0, 8, 3, 0, 0, 0, 20, 0, 0, 0, 2, 0, 0, 0, 2};
    const unsigned char lhead[8] = {0, 0, 8, 1, 0, 0, 0, 20};
    snprintf(path, sizeof path, "%s/train-images-idx3-ubyte", dir);
    write_bytes(path, ihead, sizeof ihead, images, sizeof images);
    snprintf(path, sizeof path, "%s/train-labels-idx1-ubyte", dir);
    write_bytes(path, lhead, sizeof lhead, labels, sizeof labels);
}

static void test_data_dirs(const char *scratch)
{
    char err[ATF_ERRLEN], empty[1100], full[1100];
    snprintf(empty, sizeof empty, "%s/empty_root", scratch);
    snprintf(full, sizeof full, "%s/full_root", scratch);
    mkdir(empty, 0755);
    write_mnist(full);
    atf_data_options d = atf_data_options_default();
    atf_data_option(&d, "data", "mnist", err);
    atf_data_option(&d, "n-train", "10", err);
    atf_data_option(&d, "n-test", "4", err);
    atf_task task;
    /* no directory: refused even though ./data/mnist might exist (the CWD is not searched) */
    CHECK(atf_task_load(&d, NULL, &task, err) == ATF_E_INPUT &&
              strstr(err, "no data directory"), "no data directory: '%s'", err);
    /* only a root without the files: the message names the directory searched */
    atf_data_add_dir(&d, empty, err);
    CHECK(atf_task_load(&d, NULL, &task, err) == ATF_E_INPUT && strstr(err, empty) &&
              strstr(err, "train-images-idx3-ubyte"), "not found: '%s'", err);
    /* the second root holds the files: it is used and recorded */
    atf_data_add_dir(&d, full, err);
    atf_error e = atf_task_load(&d, NULL, &task, err);
    CHECK(e == ATF_OK, "load from the second root: '%s'", err);
    if (!e) {
        char want[1200];
        snprintf(want, sizeof want, "%s/mnist", full);
        CHECK(!strcmp(task.data_dir, want), "data_dir '%s'", task.data_dir);
        CHECK(task.train.N == 10 && task.test.N == 4 && task.train.D == 4 && task.nclasses == 2,
              "task sizes %d %d %d %d", task.train.N, task.test.N, task.train.D, task.nclasses);
        atf_task_free(&task);
    }
    /* an explicit mnist:DIR ignores the roots and names DIR when it fails */
    char src[1200];
    snprintf(src, sizeof src, "mnist:%s", empty);
    atf_data_option(&d, "data", src, err);
    CHECK(atf_task_load(&d, NULL, &task, err) == ATF_E_INPUT && strstr(err, empty),
          "explicit directory: '%s'", err);
    /* two roots without the files: both are listed */
    atf_data_options d2 = atf_data_options_default();
    atf_data_option(&d2, "data", "fashion-mnist", err);
    atf_data_add_dir(&d2, empty, err);
    atf_data_add_dir(&d2, full, err);
    CHECK(atf_task_load(&d2, NULL, &task, err) == ATF_E_INPUT &&
              strstr(err, "empty_root/fashion-mnist") && strstr(err, "full_root/fashion-mnist"),
          "both roots listed: '%s'", err);
}

/* ---------------------------------------------------------------- the f0 rule */

/* f = f0 + Σ_ℓ A_ℓ vec B_ℓ of one split, from dense operators (independent of predict.c). */
static void dense_predictions(const atf_problem *p, const atf_result *res, double *f)
{
    for (int m = 0; m < p->M; m++)
        f[m] = p->f0[m];
    for (int l = 0; l < p->nblocks; l++) {
        double *A = atf_block_dense(&p->blocks[l]);
        int64_t n = (int64_t)p->blocks[l].rows * p->blocks[l].cols;
        for (int m = 0; m < p->M; m++)
            for (int64_t j = 0; j < n; j++)
                f[m] += A[(size_t)m * n + j] * res->blocks[l].B[j];
        free(A);
    }
}

static void test_f0_rule(void)
{
    char err[ATF_ERRLEN];
    atf_data_options d = atf_data_options_default();
    atf_data_option(&d, "data", "synthetic:d=3,r=2", err);
    atf_data_option(&d, "n-train", "12", err);
    atf_data_option(&d, "n-test", "9", err);
    atf_net_options n = atf_net_options_default();
    atf_net_option(&n, "widths", "3,5,1", err);
    atf_net_option(&n, "bias", "1", err);
    atf_task task;
    atf_mlp *m = NULL;
    atf_problem *p = NULL;
    atf_error e = atf_task_load(&d, NULL, &task, err);
    if (!e)
        e = atf_net_build(&n, &task, &m, err);
    if (!e)
        e = atf_tangent_problem(m, &task, NULL, &p, err);
    CHECK(e == ATF_OK, "building the problem: %s", err);
    if (e)
        return;
    atf_result *res = atf_result_alloc(p);
    atf_test_rng rng;
    atf_test_rng_seed(&rng, 12345);
    for (int l = 0; l < p->nblocks; l++)
        for (int64_t j = 0; j < (int64_t)p->blocks[l].rows * p->blocks[l].cols; j++)
            res->blocks[l].B[j] = 0.3 * atf_test_normal(&rng);
    const atf_problem *t = p->test;
    double *f = malloc((size_t)t->M * sizeof *f);
    dense_predictions(t, res, f);
    atf_predictions pr;
    e = atf_predict_result(p, "p.h5", res, "r.h5", &pr, err);
    CHECK(e == ATF_OK, "predict: %s", err);
    if (!e) {
        CHECK(max_rel_diff((size_t)t->M, pr.test.f, f) < 1e-13, "test predictions differ");
        double sq = 0.0, mean = 0.0, var = 0.0;
        for (int i = 0; i < t->M; i++)
            mean += t->y[i] / t->M;
        for (int i = 0; i < t->M; i++) {
            sq += (f[i] - t->y[i]) * (f[i] - t->y[i]);
            var += (t->y[i] - mean) * (t->y[i] - mean);
        }
        CHECK(rel_diff(pr.test.mse, sq / t->M) < 1e-12, "mse %g vs %g", pr.test.mse, sq / t->M);
        CHECK(rel_diff(pr.test.rel_mse, sq / var) < 1e-12, "rel_mse");
        atf_test_metrics tm;
        CHECK(atf_result_test_metrics(p, res, &tm, err) == ATF_OK, "test metrics: %s", err);
        /* the same code: bit-identical numbers; synthetic data has no labels, so the test
         * error is the sign disagreement with y */
        CHECK(tm.rel_mse == pr.test.rel_mse && tm.error == pr.test.error, "metrics differ");
        atf_test_metrics direct = atf_prediction_metrics(t->N, t->C, pr.test.f, t->y, NULL);
        CHECK(direct.rel_mse == tm.rel_mse && direct.error == tm.error, "direct metrics");
        atf_predictions_free(&pr);
    }
    /* f0 is never assumed to be 0: a split without it is refused, naming the item */
    free(p->test->f0);
    p->test->f0 = NULL;
    atf_test_metrics tm;
    CHECK(atf_result_test_metrics(p, res, &tm, err) == ATF_E_INPUT && strstr(err, "/test/f0") &&
              isnan(tm.error), "missing /test/f0: '%s'", err);
    free(f);
    atf_result_free(res);
    atf_problem_free(p);
    atf_mlp_free(m);
    atf_task_free(&task);
}

int main(int argc, char **argv)
{
    const char *scratch = argc > 1 ? argv[1] : "scratch_tangent_data";
    if (mkdir(scratch, 0755) && errno != EEXIST) {
        fprintf(stderr, "test_tangent_data: cannot create %s\n", scratch);
        return 1;
    }
    test_options();
    test_data_dirs(scratch);
    test_f0_rule();
    return atf_test_finish("test_tangent_data");
}
