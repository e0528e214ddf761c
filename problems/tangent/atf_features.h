/* atf_features.h — the third stage of the tangent pipeline: tangent features (docs/tangent.md §3,
 * §4).
 *
 * Per-layer factored Jacobians of a network G_{m,ℓ} = h_i δ_mᵀ (atf_jacobian), the factored
 * problem (16) they give on a task (atf_tangent_problem, solved by `atf solve`), and the
 * predictions of a solution or a network with their test metrics. Row m = i·C + k of anything
 * with M = N·C rows belongs to example i, output k. */
#ifndef ATF_FEATURES_H
#define ATF_FEATURES_H

#include "atf_data.h"
#include "atf_error.h"
#include "atf_mlp.h"
#include "atf_problem.h"
#include "atf_result.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * Factored Jacobians. For block W_ℓ, ∂f^{(k)}(x_i)/∂W_ℓ = h_i δ_mᵀ with h_i = c_ℓ h_{ℓ−1}(x_i)
 * (row i of H, N × P_ℓ) and δ_m = ∂f^{(k)}/∂a_ℓ (x_i) (row m = i·C + k of D, M × Q_ℓ); for the
 * bias block b_ℓ, H = 1 (N × 1). All outputs' cotangents are propagated together: one GEMM per
 * layer for all M rows. The P_ℓ·Q_ℓ Jacobian itself is never formed; its Gram is
 * atf_factored_gram (atf_problem.h).
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    char name[ATF_NAMELEN];  /* "W1", "b1", "W2", ... in this order */
    int layer;               /* array layer l (0-based) */
    int rows, cols;          /* P, Q (bias: 1, Q) */
    double *H;               /* [N × rows] */
    double *D;               /* [M × cols] */
} atf_jac_block;

typedef struct {
    int N, C, M, nblocks;
    double *f;               /* [N × C] outputs at the parameters */
    atf_jac_block *blocks;
} atf_jacobian;

/* The Jacobian of N examples, formed in chunks of atf_shard_chunk(N) examples (a cut that
 * depends on N only; see atf_mlp_jacobian_chunks). */
atf_error atf_mlp_jacobian(const atf_mlp *m, int N, const double *X, atf_jacobian *out,
                           char *err);
/* The same, `chunk` examples at a time from the first (chunk ≥ N: one piece). A BLAS product's
 * rows depend on how many rows it has (OpenBLAS picks other kernels for other sizes), so parts
 * formed apart agree bit for bit only if they are formed in the same chunks: a run of whole
 * chunks of atf_shard_chunk(N) (a process's atf_shard_range) formed with that chunk gives every
 * example the bits atf_mlp_jacobian gives it among all N. ATF_E_USAGE for N < 1 or chunk < 1. */
atf_error atf_mlp_jacobian_chunks(const atf_mlp *m, int N, const double *X, int chunk,
                                  atf_jacobian *out, char *err);
void atf_jacobian_free(atf_jacobian *J);

/* ---------------------------------------------------------------------------------------------
 * The tangent problem (`atf features`, docs/formats.md "Problem file").
 * ------------------------------------------------------------------------------------------- */

/* The factored problem of m at its weights on the task: blocks W1.. (and b1.. with bias) with
 * H, D from atf_mlp_jacobian, penalty `penalty` (NULL: "sq") on every block, r = y − f0, /y,
 * /f0, /labels, and the test split as prob->test (when task->test.N > 0). */
atf_error atf_tangent_problem(const atf_mlp *m, const atf_task *task, const char *penalty,
                              atf_problem **out, char *err);

/* The factored problem of m on the examples of ds alone (blocks, r = y − f0, y, f0, labels of
 * ds->N examples; no test split, provenance or fingerprint), its Jacobian formed `chunk`
 * examples at a time (atf_mlp_jacobian_chunks). With ds a run of whole chunks of a split of N
 * examples and chunk = atf_shard_chunk(N) (a process's atf_shard_range, `mpirun -np K atf
 * features`), every example has the bits atf_tangent_problem gives it. Checked with
 * atf_problem_validate; `what` (NULL: "features") opens its messages. ATF_E_USAGE for no
 * example, chunk < 1 or inputs and outputs that do not fit m. */
atf_error atf_tangent_problem_examples(const atf_mlp *m, const atf_dataset *ds, int chunk,
                                       const char *penalty, const char *what, atf_problem **out,
                                       char *err);

/* ---------------------------------------------------------------------------------------------
 * Predictions and test metrics.
 *
 * The f0 rule (the one rule for every prediction of a linear model, `atf predict` and the
 * experiments alike): on a split of a problem the model predicts
 *     f = f0 + Σ_ℓ A_ℓ vec B_ℓ        (f0 first, then the blocks in order)
 * with f0 the split's /f0 — the network's outputs at θ0, or 0 after centering — and is scored
 * against the split's /y. Both must be present: every problem from atf_tangent_problem has them
 * (r = y − f0) and the problem reader requires them on /test; a split without them is an
 * ATF_E_INPUT error naming the problem's item. f0 is never assumed to be 0.
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    int N, C;
    double *f;          /* [N × C] predictions */
    double *y;          /* [N × C] targets */
    int *labels;        /* [N] class indices or NULL */
    double mse;         /* mean over the N·C entries of (f − y)² */
    double rel_mse;     /* Σ (f − y)² / Σ (y − ȳ)², ȳ the mean of all N·C targets: 1 for
                           predicting the mean; NaN when y is constant */
    double error;       /* sign (C = 1) or argmax (C > 1) disagreement with y */
    double class_error; /* disagreement with the labels (NaN without labels) */
} atf_split_eval;

typedef struct {
    atf_split_eval train, test; /* test.N = 0 when there is no test split */
} atf_predictions;

/* Predictions of a result (any method) on the problem's training rows and its /test split.
 * prob_name and res_name (the file names; NULL: "problem", "result") name them in messages. */
atf_error atf_predict_result(const atf_problem *p, const char *prob_name, const atf_result *res,
                             const char *res_name, atf_predictions *out, char *err);
/* Predictions of a network on a task's train and test sets. */
atf_error atf_predict_mlp(const atf_mlp *m, const atf_task *task, atf_predictions *out,
                          char *err);
void atf_predictions_free(atf_predictions *pr);
/* HDF5: /train/f, /train/y, (/train/labels), same under /test, metrics as group attributes
 * (mse, error, class_error); root attribute format = "atf-predictions". Atomic. */
atf_error atf_predictions_write(const char *path, const atf_predictions *pr, char *err);

/* The numbers the experiments report for a test split: `error` is the class error against the
 * labels when the split has labels, else the sign / argmax disagreement with y; `rel_mse` as in
 * atf_split_eval; `xent` the mean softmax cross-entropy of the predictions taken as logits
 * (atf_loss_mean_xent; labels and C ≥ 2 only, else NaN). NaN for an empty or absent split. */
typedef struct {
    double error, rel_mse, xent;
} atf_test_metrics;

/* Test metrics of predictions F [N × C] against targets y and (may be NULL) class indices. */
atf_test_metrics atf_prediction_metrics(int N, int C, const double *F, const double *y,
                                        const int *labels);

/* Test metrics of a result on prob->test (NaN without a test split): the same rule and code as
 * atf_predict_result, without keeping the predictions. */
atf_error atf_result_test_metrics(const atf_problem *prob, const atf_result *res,
                                  atf_test_metrics *out, char *err);
/* The same numbers for the examples of a problem of their own (its training rows; e.g. a
 * validation split formed with atf_tangent_problem_examples); NaN for no example. */
atf_error atf_result_metrics_on(const atf_problem *examples, const atf_result *res,
                                atf_test_metrics *out, char *err);

#ifdef __cplusplus
}
#endif

#endif
