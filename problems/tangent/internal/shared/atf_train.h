/* atf_train.h — models trained by gradient descent from one θ0 (docs/tangent.md, "Training").
 *
 * Three models share the network θ0 (atf_mlp.h) and are trained by the same loop:
 *
 *   network      f(x; θ), θ = θ0 + δ, every weight and bias trained;
 *   linearized   f_lin(x) = f(x; θ0) + ⟨∇_θ f(x; θ0), δ⟩ over every weight and bias, trained on δ
 *                (forward-mode JVP through the network at θ0, activation derivatives frozen at
 *                θ0; its backward is backpropagation at θ0; no M × P Jacobian is stored);
 *   factorized   the linearisation with layer ℓ's change ΔW_ℓ = M1_ℓ W_ℓ M2_ℓ (P×P, P×Q, Q×Q) and
 *                bias change Δb_ℓ = M2_ℓᵀ b_ℓ, from M1 = M2 = I, W = 0, b = 0; all factors trained
 *                (the output layer's M2 optionally).
 *
 * All three change layer ℓ by a matrix B_ℓ (atf_model_delta): δW_ℓ for the first two and
 * M1 W M2 for the factorised one, the B_ℓ of problem (16) (docs/math.md).
 *
 * Optimisers: SGD with PyTorch's momentum (v ← μv + g, θ ← θ − ηv) or Adam (PyTorch's form,
 * defaults β = (0.9, 0.999), ε = 1e-8); learning rate constant or cosine per epoch
 * η_e = η(1 + cos(πe/E))/2. Loss: squared, mean_i ‖f(x_i) − y_i‖²/C (PyTorch's MSELoss), or
 * softmax cross-entropy of the labels, mean_i −log softmax(f(x_i))[y_i] (atf_loss.h). Optional
 * explicit penalty on the factorised model: μ Σ_ℓ (Σ_j ω1(s_j(M1_ℓ)) + Σ_j ω2(s_j(M2_ℓ)) +
 * ‖W_ℓ‖²), the objective of problem (16) for the pair (ω1, ω2).
 *
 * Protocol (labelled in every output): the training pool's last n_val rows are a validation
 * split; of the other rows, a fixed subset (the first n_train) or, with resampling, a new random
 * n_train-subset every epoch (the authors' loader); the model kept is that of the final epoch,
 * of the best validation epoch or of the best test epoch ("test-selected"), with patience. "Best"
 * is the lowest error (ties: lower loss) when the split has labels, else the lowest loss.
 *
 * Bit-reproducible for a seed on a given machine and BLAS. The library never prints: progress
 * goes through a callback. */
#ifndef ATF_TRAIN_H
#define ATF_TRAIN_H

#include <signal.h>
#include <stdint.h>

#include "atf_error.h"
#include "atf_loss.h"
#include "atf_mlp.h"
#include "atf_penalty.h"
#include "atf_problem.h"
#include "atf_result.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * Models.
 * ------------------------------------------------------------------------------------------- */

typedef enum { ATF_MODEL_NETWORK = 0, ATF_MODEL_LINEARIZED, ATF_MODEL_FACTORIZED } atf_model_kind;

/* "network", "linearized", "factorized" (parse also accepts "linearised", "factorised"). */
const char *atf_model_kind_name(atf_model_kind k);
atf_error atf_model_kind_parse(const char *text, atf_model_kind *out, char *err);

typedef struct {
    atf_model_kind kind;
    atf_mlp *theta0;  /* owned copy of the starting network */
    /* network: the current θ; linearized: δ (same shapes as θ0); factorized: NULL */
    atf_mlp *net;
    /* factorized, per layer ℓ = 0..L−1 (P = widths[ℓ], Q = widths[ℓ+1]), row-major:
     * M1 [P×P], W [P×Q], M2 [Q×Q], b [Q] (NULL where θ0's layer has no bias) */
    double *M1[ATF_MAX_LAYERS], *W[ATF_MAX_LAYERS], *M2[ATF_MAX_LAYERS], *b[ATF_MAX_LAYERS];
    int train_output_m2; /* factorized: 1 (default) trains the output layer's M2, 0 keeps it I */
} atf_model;

/* A model at its starting point: θ = θ0, δ = 0, or (I, 0, I, 0). */
atf_error atf_model_create(atf_model_kind kind, const atf_mlp *theta0, atf_model **out,
                           char *err);
void atf_model_free(atf_model *m);

/* F [N × C] = the model's outputs on X [N × D]. */
atf_error atf_model_forward(const atf_model *m, int N, const double *X, double *F, char *err);

/* Layer l's change from θ0 (l = 0..L−1): dW [P × Q] and db [Q] (db may be NULL; it is zeroed
 * where the layer has no bias). network: θ − θ0; linearized: δ; factorized: M1 W M2, M2ᵀ b.
 * B_ℓ = dW is the matrix of problem (16). */
void atf_model_delta(const atf_model *m, int l, double *dW, double *db);

/* The trained network: the network model's θ, or θ0 + B for the linear models (whose outputs
 * are not that network's: for them it is only the point θ0 + δ). NULL if out of memory. */
atf_mlp *atf_model_network(const atf_model *m);

/* Number of trained parameters. */
int64_t atf_model_nparams(const atf_model *m);

/* ---------------------------------------------------------------------------------------------
 * Diagnostics of the factorised model, per layer.
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    /* conservation drift: ‖M1ᵀM1 − WWᵀ − I‖_F / ‖M1ᵀM1‖_F and
     * ‖M2M2ᵀ − WᵀW − bbᵀ − I‖_F / ‖M2M2ᵀ‖_F (bbᵀ where the layer has a bias b); 0 along exact
     * gradient flow from (I, 0, I, 0), O(η) over a fixed flow time for steps η */
    double drift1, drift2;
    /* Σ_j ω̃(σ_j(B)) under balanced+balanced (γ = 1), and under the given penalty when
     * atf_model_diagnostics got one (else NaN) */
    double omega_balanced, omega_penalty;
    double norm_B;  /* ‖B‖_F */
    int nsv;        /* min(P, Q) */
    /* singular values, descending (malloc'ed; atf_factor_diag_free): W and B [nsv], M1 [P],
     * M2 [Q] */
    double *sv_W, *sv_B, *sv_M1, *sv_M2;
    int P, Q;
} atf_factor_diag;

/* Diagnostics of factorised layer l; pen (may be NULL) adds omega_penalty. */
atf_error atf_model_diagnostics(const atf_model *m, int l, const atf_penalty *pen,
                                atf_factor_diag *out, char *err);
void atf_factor_diag_free(atf_factor_diag *d);

/* Only the two drifts of layer l (cheap: four GEMMs). */
void atf_model_drift(const atf_model *m, int l, double *drift1, double *drift2);

/* Cosine ⟨A, B⟩_F / (‖A‖_F ‖B‖_F) of two n-vectors (NaN if either is zero): compare B_SGD
 * (atf_model_delta) with a solution B_16 of problem (16). */
double atf_matrix_cosine(size_t n, const double *A, const double *B);

/* Any model against a solution of problem (16) on the same θ0 (a result of the tangent problem
 * of that network and data: blocks W1..WL, and b1.. where the problem has bias blocks), per
 * weight layer and over all weight layers together. */
typedef struct {
    int L;
    double cosine[ATF_MAX_LAYERS];        /* cos(B_SGD, B_16) of layer ℓ's weights */
    double norm_model[ATF_MAX_LAYERS], norm_result[ATF_MAX_LAYERS];   /* ‖B‖_F */
    double omega_model[ATF_MAX_LAYERS], omega_result[ATF_MAX_LAYERS]; /* Σ ω̃(σ(B)) */
    double cosine_all;                    /* every weight layer as one vector */
    double cosine_all_bias;               /* every weight and bias change as one vector (the
                                             result's bias blocks b1.. where it has them) */
    double omega_model_total, omega_result_total;
} atf_model_comparison;

/* ω̃ of pen (NULL: balanced+balanced, the split that gradient flow keeps). ATF_E_INPUT naming
 * the block when the result lacks a block W1..WL or its shape is not P × Q. */
atf_error atf_model_compare_result(const atf_model *m, const atf_result *res,
                                   const atf_penalty *pen, atf_model_comparison *out, char *err);

/* ---------------------------------------------------------------------------------------------
 * Training settings and protocol.
 * ------------------------------------------------------------------------------------------- */

typedef enum { ATF_OPT_SGD = 0, ATF_OPT_ADAM } atf_optimizer;
typedef enum { ATF_LR_COSINE = 0, ATF_LR_CONSTANT } atf_lr_schedule;
typedef enum { ATF_SAMPLE_FIXED = 0, ATF_SAMPLE_RESAMPLE } atf_sampling;
typedef enum { ATF_STOP_FINAL = 0, ATF_STOP_BEST_VAL, ATF_STOP_BEST_TEST } atf_stopping;

/* Names as in outputs and options: "sgd"/"adam", "cosine"/"constant",
 * "fixed"/"resample-each-epoch", "final"/"best-val"/"test-selected" (parse also accepts
 * "best-test"). */
const char *atf_optimizer_name(atf_optimizer o);
const char *atf_lr_schedule_name(atf_lr_schedule s);
const char *atf_sampling_name(atf_sampling s);
const char *atf_stopping_name(atf_stopping s);
atf_error atf_optimizer_parse(const char *text, atf_optimizer *out, char *err);
atf_error atf_lr_schedule_parse(const char *text, atf_lr_schedule *out, char *err);
atf_error atf_sampling_parse(const char *text, atf_sampling *out, char *err);
atf_error atf_stopping_parse(const char *text, atf_stopping *out, char *err);

typedef struct {
    int epoch, epochs;        /* epoch just finished (1-based) */
    double loss;              /* mean training loss over the epoch's minibatches */
    double lr;                /* learning rate used in that epoch */
    double val_loss, val_error, test_loss, test_error; /* NaN where there is no such split */
    int best_epoch;           /* the epoch selected so far (0: none) */
    double seconds, eta;      /* elapsed and estimated remaining seconds */
} atf_train_progress;

typedef struct {
    int epochs;               /* default 100 */
    int batch;                /* default 32 */
    double lr;                /* default 0.1 */
    double momentum;          /* SGD, default 0.9 */
    atf_optimizer optimizer;  /* default SGD */
    double beta1, beta2, eps; /* Adam, default 0.9, 0.999, 1e-8 */
    atf_lr_schedule schedule; /* default cosine */
    atf_loss_kind loss;       /* ATF_LOSS_SQUARED (default) or ATF_LOSS_XENT */
    uint64_t seed;            /* minibatch order and resampling, default 1 */
    /* factorized only: the explicit penalty μ Σ (ω1(s(M1)) + ω2(s(M2)) + ‖W‖²) */
    int use_penalty;
    atf_penalty penalty;
    double penalty_weight;    /* μ, default 1 */
    /* protocol */
    atf_sampling sampling;    /* default fixed */
    int n_train;              /* training examples per epoch; 0 (default): every pool row not
                                 in the validation split */
    int n_val;                /* validation rows at the end of the pool, default 0 */
    atf_stopping stopping;    /* default final */
    int patience;             /* stop this many epochs after the best one (0: never early) */
    int diagnostics;          /* factorized: record the drifts every epoch (default 1) */
    int eval_every;           /* score the validation and test splits every this many epochs
                                 and at the last (default 1; selection and patience see only
                                 scored epochs; the history has NaN in between) */
    /* called after every epoch; a nonzero return stops training with that error */
    atf_error (*progress)(const atf_train_progress *p, const atf_model *m, void *ctx);
    void *ctx;
    /* optional: when it becomes nonzero, training stops before the next batch and returns
     * ATF_OK with the model as it is (the report says so) */
    volatile sig_atomic_t *interrupt;
    /* optional: processes that share every minibatch and every scored split (`mpirun -np K atf
     * train`; docs/tangent.md, "Training over processes"): each forms its share of the chunks,
     * and every process ends with the same bits as one process alone. Every process makes the
     * same calls with the same data, settings and seed. NULL: one process. */
    const atf_processes *processes;
} atf_train_settings;

atf_train_settings atf_train_default(void);

/* One line per epoch. */
typedef struct {
    double loss, lr, val_loss, val_error, test_loss, test_error;
    double drift1[ATF_MAX_LAYERS], drift2[ATF_MAX_LAYERS]; /* factorized; else NaN */
} atf_train_epoch;

typedef struct {
    int epochs_run;           /* epochs completed */
    int selected_epoch;       /* the epoch whose model was kept (0: the starting point) */
    int interrupted;          /* the interrupt flag stopped training */
    int stopped_by_patience;
    int n_train, n_val;       /* as used */
    int n_pool;               /* rows of the pool (resampling draws from n_pool − n_val) */
    /* of the kept model, full batch (NaN where there is no such split) */
    double train_loss, train_error, val_loss, val_error, test_loss, test_error;
    atf_train_epoch *history; /* [epochs_run], malloc'ed */
} atf_train_report;

void atf_train_report_free(atf_train_report *r);

/* Check the settings against a model and its data (ranges, loss and outputs, labels for
 * cross-entropy, a test split for test selection, n_train + n_val within the pool). */
atf_error atf_train_check(const atf_model *m, const atf_dataset *pool, const atf_dataset *test,
                          const atf_train_settings *s, char *err);

/* Train m in place on the pool (the task's training split) with the protocol of s; test
 * (may be NULL or empty) is evaluated every epoch. report (may be NULL) receives the summary and
 * the history. */
atf_error atf_model_train(atf_model *m, const atf_dataset *pool, const atf_dataset *test,
                          const atf_train_settings *s, atf_train_report *report, char *err);

/* The loss of the settings' kind and the error of m on ds (class error when ds has labels,
 * else sign/argmax agreement with Y). Either output may be NULL; NaN for an empty set. */
atf_error atf_model_evaluate(const atf_model *m, const atf_dataset *ds, atf_loss_kind loss,
                             double *loss_value, double *error, char *err);

/* The network alone (compatibility): the network model with s on the whole of ds, kept at the
 * final epoch; m is updated in place. *final_loss (may be NULL) receives the full-batch loss. */
atf_error atf_mlp_train(atf_mlp *m, const atf_dataset *ds, const atf_train_settings *s,
                        double *final_loss, char *err);

/* ---------------------------------------------------------------------------------------------
 * Results: one HDF5 file (docs/formats.md "Training file") with the settings and protocol as
 * attributes, the history, B per layer and, for the factorised model, its factors and
 * diagnostics. provenance (may be NULL) is a list of string attributes written at the root
 * (name, value pairs; e.g. command, data_source).
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    const char *name, *value;
} atf_attr;

atf_error atf_train_write(const char *path, const atf_model *m, const atf_train_settings *s,
                          const atf_train_report *r, const atf_attr *provenance, int nprov,
                          char *err);

#ifdef __cplusplus
}
#endif

#endif
