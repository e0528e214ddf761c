/* atf_mlp.h — the second stage of the tangent pipeline: MLPs (docs/tangent.md §2).
 *
 * Architecture, creation from a seed, files, the forward pass, the network options the commands
 * share and evaluation (training: atf_train.h). f(x) = W_Lᵀ h_{L−1}: a_ℓ = c_ℓ W_ℓᵀ h_{ℓ−1} + b_ℓ,
 * h_ℓ = σ_ℓ(a_ℓ), h_0 = x, output a_L (no activation), b_ℓ only on the layers that have one.
 * Standard parameterisation: c_ℓ = 1 and W_ℓ ~ N(0, g_ℓ/P_ℓ) (He-normal; g_ℓ = gain² of σ_ℓ as
 * torch.nn.init.calculate_gain: 2 for relu, gelu and softplus, 2/(1+slope²) for leaky_relu,
 * 25/9 for tanh, 1 for sigmoid, identity and the linear output layer);
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
/* ATF_INIT_LECUN: LeCun-normal W ~ N(0, 1/P_ℓ) and zero biases (JAX/Flax's default, the
 * authors' networks; standard parameterisation only). */
typedef enum { ATF_INIT_HE = 0, ATF_INIT_TORCH, ATF_INIT_LECUN } atf_init;

/* Elementwise activations, the same functions as PyTorch's modules (double precision):
 * relu (σ′(0) = 0), leaky_relu (x ≥ 0 ? x : slope·x, default slope 0.01; σ′(0) = 1 as torch's
 * autograd), tanh, sigmoid, gelu (exact: x Φ(x) with erf), softplus (log(1 + e^{βx})/β, and x
 * itself where βx > threshold; defaults β = 1, threshold 20) and identity. */
typedef enum {
    ATF_ACT_RELU = 0,
    ATF_ACT_LEAKY_RELU,
    ATF_ACT_TANH,
    ATF_ACT_SIGMOID,
    ATF_ACT_GELU,
    ATF_ACT_SOFTPLUS,
    ATF_ACT_IDENTITY
} atf_activation_kind;

typedef struct {
    atf_activation_kind kind;
    double slope;             /* leaky_relu */
    double beta, threshold;   /* softplus */
} atf_activation;

#define ATF_ACTIVATION_SPECLEN 96

/* Specs: relu | leaky_relu[:slope=s] | tanh | sigmoid | gelu | softplus[:beta=b,threshold=t] |
 * identity. Unknown names, parameters or values (slope and threshold finite, beta finite and
 * positive) are ATF_E_USAGE with the message "activation: ...". */
atf_error atf_activation_parse(const char *spec, atf_activation *out, char *err);
/* The canonical spec (parameters always written for leaky_relu and softplus, in %.17g, so it
 * parses back to the same numbers). Returns snprintf's count. */
int atf_activation_format(const atf_activation *a, char *buf, size_t len);
/* h = σ(x) and dh = σ′(x) elementwise over n entries; either output may be NULL, and h may be
 * x itself (in place). */
void atf_activation_eval(const atf_activation *a, size_t n, const double *x, double *h,
                         double *dh);
/* One spec for every hidden layer ("tanh") or one per hidden layer separated by ';'
 * ("tanh;gelu", L−1 of them) into act[0..L−2]. */
atf_error atf_activations_parse(const char *text, int L, atf_activation *act, char *err);

struct atf_arch {
    int L;                            /* number of weight layers */
    int widths[ATF_MAX_LAYERS + 1];   /* widths[0] input D, widths[L] outputs C */
    unsigned char bias[ATF_MAX_LAYERS]; /* bias[l] = 1: array layer l has a bias b_l */
    atf_activation act[ATF_MAX_LAYERS]; /* act[l] follows array layer l, l = 0..L−2 (zero:
                                           relu); the output layer has none */
    atf_param param;
    atf_init init;                    /* used by atf_mlp_create only (not stored in files) */
    char origin[ATF_PATHLEN];         /* for messages: the MLP file the widths were read from,
                                         "" when they come from the widths option */
};

/* Parse "784,128,128,1" (at least two positive widths, at most ATF_MAX_LAYERS layers) into
 * arch->L and arch->widths; bias and param are left as they are. */
atf_error atf_arch_parse_widths(const char *text, atf_arch *arch, char *err);
/* Bias flags from "1" or "all" (every layer), "0" or "none", or a 1-based layer list "1,3", also
 * written "layers:1,3" ("layers:1" is the first layer alone, since "1" means every layer), for
 * the arch->L layers of arch (set the widths first); layers beyond arch->L are refused. */
atf_error atf_arch_parse_bias(const char *text, atf_arch *arch, char *err);
int atf_arch_has_bias(const atf_arch *a);   /* number of layers with a bias */
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
/* XXH3-128 fingerprint of a network (widths, bias, activations, parameterisation and every W and
 * b; an all-relu network with bias on all or no layers hashes as before activations existed), as
 * recorded in a problem's `mlp_fingerprint` (out: ATF_FINGERPRINT_LEN bytes). */
atf_error atf_mlp_fingerprint(const atf_mlp *m, char *out);
double atf_mlp_scale(const atf_mlp *m, int l); /* c_ℓ of array layer l (0-based) */

/* Flat constructors and accessors (for bindings, e.g. the Python package's ctypes layer).
 * atf_mlp_new: zero weights; bias [L] 0/1 flags (NULL: none); activations [L−1] specs (NULL or
 * NULL entries: relu); param "standard"|"ntk" (NULL: standard). */
atf_error atf_mlp_new(int L, const int *widths, const int *bias, const char *const *activations,
                      const char *param, atf_mlp **out, char *err);
int atf_mlp_layers(const atf_mlp *m);
const char *atf_mlp_param_name(const atf_mlp *m); /* "standard" or "ntk" */
int atf_mlp_width(const atf_mlp *m, int l);   /* l = 0..L; -1 out of range */
double *atf_mlp_weight(atf_mlp *m, int l);    /* widths[l] × widths[l+1], row-major (input ×
                                                 output); NULL out of range */
double *atf_mlp_bias(atf_mlp *m, int l);      /* NULL when layer l has no bias */
/* The canonical spec of the activation after layer l (l = 0..L−2); -1 (and "") otherwise. */
int atf_mlp_activation_spec(const atf_mlp *m, int l, char *buf, size_t len);
/* All activations as the MLP file's attribute: one spec when they are all equal, else L−1
 * specs joined by ';' ("" for L = 1). */
int atf_arch_activation_specs(const atf_arch *a, char *buf, size_t len);

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
    atf_arch arch;               /* widths, param, init (bias and activations: below) */
    char bias[64];               /* the bias option as given ("" = none); applied with the widths */
    char activation[ATF_MAX_LAYERS * ATF_ACTIVATION_SPECLEN]; /* "" = relu */
    uint64_t seed;
    int seed_given;
} atf_net_options;

atf_net_options atf_net_options_default(void);

/* Set one option by name: mlp, widths, seed, bias ("1"/"0" or a 1-based layer list "1,3"),
 * activation (one spec or L−1 specs separated by ';'), param, init. ATF_E_USAGE for an
 * unknown name or a bad value, as atf_data_option. */
atf_error atf_net_option(atf_net_options *o, const char *name, const char *value, char *err);

/* The architecture the options describe (reads the mlp file if given); end widths may be 0
 * (taken from the data by atf_arch_fit_task). */
atf_error atf_net_arch(const atf_net_options *o, atf_arch *arch, char *err);

/* The network for a task: read (and checked against the task) or created from the seed. */
atf_error atf_net_build(const atf_net_options *o, const atf_task *task, atf_mlp **out, char *err);

/* Training (the network and its linearisations, optimisers, protocols) is in atf_train.h. */

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
