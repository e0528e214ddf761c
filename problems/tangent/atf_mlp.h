/* atf_mlp.h — the second stage of the tangent pipeline: ReLU networks (docs/tangent.md §2).
 *
 * Architecture, creation from a seed, files, the forward pass, the network options the commands
 * share, training and evaluation. f(x) = W_Lᵀ h_{L−1}: a_ℓ = c_ℓ W_ℓᵀ h_{ℓ−1} + b_ℓ,
 * h_ℓ = relu(a_ℓ), h_0 = x, output a_L (no activation). Standard parameterisation: c_ℓ = 1 and
 * W_ℓ ~ N(0, g_ℓ/P_ℓ) (He-normal, g = 2 for hidden layers, 1 for the linear output layer);
 * NTK parameterisation: c_ℓ = √(g_ℓ/P_ℓ) and W_ℓ ~ N(0, 1), so both compute the same function
 * at initialisation from the same seed. Biases start at 0.
 *
 * Layers are numbered ℓ = 1..L in block names (W1, b1, ...) and 0..L−1 in arrays and MLP files
 * (/W0, /b0, ...). The library never prints (training reports through a callback). */
#ifndef ATF_MLP_H
#define ATF_MLP_H

#include <signal.h>
#include <stdint.h>

#include "atf_data.h"
#include "atf_error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ATF_MAX_LAYERS 16

typedef enum { ATF_PARAM_STANDARD = 0, ATF_PARAM_NTK } atf_param;

/* Initial weights: He-normal (default, as above) or PyTorch's nn.Linear default,
 * W, b ~ U(−1/√P_ℓ, 1/√P_ℓ) (variance 1/(3P_ℓ); standard parameterisation only). With the
 * latter the paper's SGD settings (lr 0.1, momentum 0.9) train the 10-class depth-5 MNIST
 * network, but measured on MNIST 2 vs 3 with 784-128-128-1 lr 0.1 still diverges in the first
 * epoch (docs/experiments.md: the alignment experiment uses lr 0.03); with He-normal weights
 * (NTK about 6× larger) lr 0.1 diverges on both. */
typedef enum { ATF_INIT_HE = 0, ATF_INIT_TORCH } atf_init;

struct atf_arch {
    int L;                            /* number of weight layers */
    int widths[ATF_MAX_LAYERS + 1];   /* widths[0] input D, widths[L] outputs C */
    int bias;                         /* 1: every layer has a bias */
    atf_param param;
    atf_init init;                    /* used by atf_mlp_create only (not stored in files) */
    char origin[ATF_PATHLEN];         /* for messages: the MLP file the widths were read from,
                                         "" when they come from the widths option */
};

/* Parse "784,128,128,1" (at least two positive widths, at most ATF_MAX_LAYERS layers) into
 * arch->L and arch->widths; bias and param are left as they are. */
atf_error atf_arch_parse_widths(const char *text, atf_arch *arch, char *err);
atf_error atf_param_parse(const char *text, atf_param *out, char *err);
const char *atf_param_name(atf_param p); /* "standard" or "ntk" */

/* Check that arch fits the task (input width D, output width C), filling zero end widths. The
 * message names the data item (an HDF5 file's /X or /Y, else the data source) and where the
 * widths came from (arch->origin, or the widths option). */
atf_error atf_arch_fit_task(atf_arch *arch, const atf_task *task, char *err);

typedef struct {
    atf_arch arch;
    double *W[ATF_MAX_LAYERS];  /* W[l] is widths[l] × widths[l+1] (input × output) */
    double *b[ATF_MAX_LAYERS];  /* b[l] has widths[l+1] entries, NULL without bias */
} atf_mlp;

/* Initialisation from a seed (weights drawn layer by layer, row-major, then the biases). */
atf_error atf_mlp_create(const atf_arch *arch, uint64_t seed, atf_mlp **out, char *err);
atf_mlp *atf_mlp_clone(const atf_mlp *m);  /* NULL if out of memory */
void atf_mlp_free(atf_mlp *m);
int64_t atf_mlp_nparams(const atf_mlp *m);
/* XXH3-128 fingerprint of a network (widths, bias, parameterisation and every W and b), as
 * recorded in a problem's `mlp_fingerprint` (out: ATF_FINGERPRINT_LEN bytes). */
atf_error atf_mlp_fingerprint(const atf_mlp *m, char *out);
double atf_mlp_scale(const atf_mlp *m, int l); /* c_ℓ of array layer l (0-based) */

/* θ = (1−t) θ0 + t θ1 into out (all three of the same architecture). */
void atf_mlp_interpolate(const atf_mlp *m0, const atf_mlp *m1, double t, atf_mlp *out);

/* Files (docs/formats.md "MLP file"; atomic write). The reader checks format, activation,
 * shapes and finiteness and also accepts 1-based names (/W1..) when /W0 is absent. */
atf_error atf_mlp_read(const char *path, atf_mlp **out, char *err);
atf_error atf_mlp_write(const char *path, const atf_mlp *m, char *err);

/* F [N × C] = f(X) for X [N × D], with batched GEMMs. */
atf_error atf_mlp_forward(const atf_mlp *m, int N, const double *X, double *F, char *err);

/* ---------------------------------------------------------------------------------------------
 * Network options shared by the commands: read a network (mlp) or create one from widths
 * (default: hidden widths 128,128 with the ends taken from the data), seed (default 1), bias,
 * param (standard|ntk) and init (he|torch).
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    char mlp_path[ATF_PATHLEN];  /* non-empty: read this network */
    int have_widths;
    atf_arch arch;
    uint64_t seed;
    int seed_given;
} atf_net_options;

atf_net_options atf_net_options_default(void);

/* Set one option by name: mlp, widths, seed, bias ("1"/"0"), param, init. ATF_E_USAGE for an
 * unknown name or a bad value, as atf_data_option. */
atf_error atf_net_option(atf_net_options *o, const char *name, const char *value, char *err);

/* The architecture the options describe (reads the mlp file if given); end widths may be 0
 * (taken from the data by atf_arch_fit_task). */
atf_error atf_net_arch(const atf_net_options *o, atf_arch *arch, char *err);

/* The network for a task: read (and checked against the task) or created from the seed. */
atf_error atf_net_build(const atf_net_options *o, const atf_task *task, atf_mlp **out, char *err);

/* ---------------------------------------------------------------------------------------------
 * Training: minibatch SGD with (PyTorch-style) momentum v ← μv + g, θ ← θ − η_e v, cosine
 * schedule η_e = η (1 + cos(π e / E)) / 2 per epoch e = 0..E−1, on the squared loss
 * mean_i ‖f(x_i) − y_i‖² / C (PyTorch's MSELoss). Examples are reshuffled every epoch from the
 * seed; the trained weights are bit-identical for a seed on a given machine and BLAS.
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    int epoch, epochs;       /* epoch just finished (1-based) */
    double loss;             /* mean training loss over the epoch's minibatches */
    double lr;               /* learning rate used in that epoch */
    double seconds, eta;     /* elapsed and estimated remaining seconds */
} atf_train_progress;

typedef struct {
    int epochs;              /* default 100 */
    int batch;               /* default 32 */
    double lr;               /* default 0.1 */
    double momentum;         /* default 0.9 */
    uint64_t seed;           /* shuffling, default 1 */
    /* called after every epoch; a nonzero return stops training with that error */
    atf_error (*progress)(const atf_train_progress *p, const atf_mlp *m, void *ctx);
    void *ctx;
    /* optional: when it becomes nonzero, training stops before the next batch and returns
     * ATF_OK with the model as it is (the caller, who owns the flag, knows it stopped early) */
    volatile sig_atomic_t *interrupt;
} atf_train_settings;

atf_train_settings atf_train_default(void);

/* Train m in place on (X, Y) of ds. *final_loss (may be NULL) receives the full-batch loss
 * after training. */
atf_error atf_mlp_train(atf_mlp *m, const atf_dataset *ds, const atf_train_settings *s,
                        double *final_loss, char *err);

/* ---------------------------------------------------------------------------------------------
 * Evaluation.
 * ------------------------------------------------------------------------------------------- */

/* Full-batch loss mean_i ‖f(x_i) − y_i‖² / C and classification error: sign agreement with
 * Y for C = 1, argmax agreement for C > 1. Either output may be NULL. */
atf_error atf_mlp_evaluate(const atf_mlp *m, const atf_dataset *ds, double *loss, double *error,
                           char *err);

/* Error of predictions F [N × C] against targets Y: sign (C = 1) or argmax (C > 1) mismatch
 * rate; and against class indices (C = 1: f > 0 means class 1). Used for networks and for
 * linear models alike (atf_features.h). */
double atf_prediction_error(int N, int C, const double *F, const double *Y);
double atf_prediction_class_error(int N, int C, const double *F, const int *labels);

#ifdef __cplusplus
}
#endif

#endif
