/* atf_tangent.h — tangent features of ReLU MLPs: data, networks, factored Jacobians, training,
 * problems and kernels (SPEC §5–§7).
 *
 * The pipeline: a data source and target choice (atf_data_options) give a task (train/test
 * sets with targets); an MLP (created from a seed, read, or trained) gives per-layer factored
 * Jacobians G_{m,ℓ} = h_i δ_mᵀ (atf_jacobian), from which atf_tangent_problem builds the factored
 * problem (16) that `atf solve` solves. The kernel functions evaluate the NTK, the exact adapted
 * kernel of eq. 7, the paper's eq. 17, Theorem 1's kernel, the label kernel, path-averaged
 * kernels of a trained network, and their alignments.
 *
 * Conventions: matrices are row-major doubles; row m = i·C + k of anything with M = N·C rows
 * belongs to example i, output k. Layers are numbered ℓ = 1..L in block names (W1, b1, ...) and
 * 0..L−1 in arrays and MLP files (/W0, /b0, ...). Every random choice takes a seed; the same seed
 * gives the same bits. The library never prints (training reports through a callback). */
#ifndef ATF_TANGENT_H
#define ATF_TANGENT_H

#include <signal.h>
#include <stdint.h>

#include "atf_error.h"
#include "atf_problem.h"
#include "atf_result.h"

#define ATF_MAX_LAYERS 16
#define ATF_MAX_CLASSES 64
#define ATF_PATHLEN 1024

/* ---------------------------------------------------------------------------------------------
 * Seeded random numbers: xoshiro256** seeded through splitmix64. Normals by Marsaglia's polar
 * method with a logarithm built from IEEE basic operations only, so the bits never depend on
 * the platform's libm.
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    uint64_t s[4];
    int has_spare;
    double spare;
} atf_rng;

void atf_rng_seed(atf_rng *rng, uint64_t seed);
uint64_t atf_rng_u64(atf_rng *rng);
double atf_rng_uniform(atf_rng *rng);               /* [0, 1), 53 random bits */
uint64_t atf_rng_below(atf_rng *rng, uint64_t n);   /* uniform in [0, n), n ≥ 1, unbiased */
double atf_rng_normal(atf_rng *rng);                /* N(0, 1) */
void atf_rng_shuffle(atf_rng *rng, int n, int *a);  /* Fisher–Yates, in place */

/* ---------------------------------------------------------------------------------------------
 * Data.
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    int N, D, C;
    double *X;    /* [N × D] */
    double *Y;    /* [N × C] targets (NULL until targets are set) */
    int *labels;  /* [N] class index into the task's class list, or NULL */
} atf_dataset;

void atf_dataset_free(atf_dataset *ds); /* frees the arrays and zeroes the struct */

/* An IDX file (LeCun's format, unsigned-byte data only), plain or gzip-compressed (detected from
 * the content, not the name). Every error names the file and the reason (bad magic, truncated,
 * size mismatch, corrupt gzip stream). */
typedef struct {
    int ndims;
    int dims[4];
    int64_t count;        /* product of dims */
    unsigned char *data;  /* [count] */
} atf_idx;

atf_error atf_idx_read(const char *path, atf_idx *out, char *err);
void atf_idx_free(atf_idx *idx);

/* Synthetic multi-index task (SPEC §8): x ~ N(0, I_d), z = U x with U ∈ R^{r×d} random
 * orthonormal rows, y = g(z) + noise·ε with
 *     g(z) = ( He2(z_1)/√2 + He3(z_r)/√6 + Σ_{j<r} z_j z_{j+1} ) / √(r+1),
 * He2(t) = t² − 1, He3(t) = t³ − 3t; every term has mean 0 and variance 1 and the terms are
 * uncorrelated, so Var g = 1. U is drawn first from the seed, then the n examples. */
typedef struct {
    int d, r;
    double noise;
} atf_synthetic;

atf_error atf_synthetic_make(const atf_synthetic *s, int n, uint64_t seed, atf_dataset *out,
                             char *err);

/* Read a user data set (SPEC §6: /X [N, D], /Y [N, C], optional /labels [N] int). */
atf_error atf_dataset_read_h5(const char *path, atf_dataset *out, char *err);

/* Per-example standardisation (paper B.1): each row of X to zero mean and unit variance
 * (a constant row becomes zero). */
void atf_standardize_rows(int N, int D, double *X);

/* ---------------------------------------------------------------------------------------------
 * Networks (SPEC §6 MLP format). f(x) = W_Lᵀ h_{L−1}: a_ℓ = c_ℓ W_ℓᵀ h_{ℓ−1} + b_ℓ,
 * h_ℓ = relu(a_ℓ), h_0 = x, output a_L (no activation). Standard parameterisation: c_ℓ = 1 and
 * W_ℓ ~ N(0, g_ℓ/P_ℓ) (He-normal, g = 2 for hidden layers, 1 for the linear output layer);
 * NTK parameterisation: c_ℓ = √(g_ℓ/P_ℓ) and W_ℓ ~ N(0, 1), so both compute the same function
 * at initialisation from the same seed. Biases start at 0.
 * ------------------------------------------------------------------------------------------- */

typedef enum { ATF_PARAM_STANDARD = 0, ATF_PARAM_NTK } atf_param;

/* Initial weights: He-normal (default, as above) or PyTorch's nn.Linear default,
 * W, b ~ U(−1/√P_ℓ, 1/√P_ℓ) (variance 1/(3P_ℓ); standard parameterisation only). With the
 * latter the paper's SGD settings (lr 0.1, momentum 0.9) train the 10-class depth-5 MNIST
 * network, but measured on MNIST 2 vs 3 with 784-128-128-1 lr 0.1 still diverges in the first
 * epoch (docs/experiments.md: the alignment experiment uses lr 0.03); with He-normal weights
 * (NTK about 6× larger) lr 0.1 diverges on both. */
typedef enum { ATF_INIT_HE = 0, ATF_INIT_TORCH } atf_init;

typedef struct {
    int L;                            /* number of weight layers */
    int widths[ATF_MAX_LAYERS + 1];   /* widths[0] input D, widths[L] outputs C */
    int bias;                         /* 1: every layer has a bias */
    atf_param param;
    atf_init init;                    /* used by atf_mlp_create only (not stored in files) */
    char origin[ATF_PATHLEN];         /* for messages: the MLP file the widths were read from,
                                         "" when they come from --widths */
} atf_arch;

/* Parse "784,128,128,1" (at least two positive widths, at most ATF_MAX_LAYERS layers) into
 * arch->L and arch->widths; bias and param are left as they are. */
atf_error atf_arch_parse_widths(const char *text, atf_arch *arch, char *err);
atf_error atf_param_parse(const char *text, atf_param *out, char *err);
const char *atf_param_name(atf_param p); /* "standard" or "ntk" */

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

/* Files (atomic write). The reader checks format, activation, shapes and finiteness and also
 * accepts 1-based names (/W1..) when /W0 is absent. */
atf_error atf_mlp_read(const char *path, atf_mlp **out, char *err);
atf_error atf_mlp_write(const char *path, const atf_mlp *m, char *err);

/* F [N × C] = f(X) for X [N × D], with batched GEMMs. */
atf_error atf_mlp_forward(const atf_mlp *m, int N, const double *X, double *F, char *err);

/* ---------------------------------------------------------------------------------------------
 * Factored Jacobians. For block W_ℓ, ∂f^{(k)}(x_i)/∂W_ℓ = h_i δ_mᵀ with h_i = c_ℓ h_{ℓ−1}(x_i)
 * (row i of H, N × P_ℓ) and δ_m = ∂f^{(k)}/∂a_ℓ (x_i) (row m = i·C + k of D, M × Q_ℓ); for the
 * bias block b_ℓ, H = 1 (N × 1). All outputs' cotangents are propagated together: one GEMM per
 * layer for all M rows. The P_ℓ·Q_ℓ Jacobian itself is never formed.
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

atf_error atf_mlp_jacobian(const atf_mlp *m, int N, const double *X, atf_jacobian *out,
                           char *err);
void atf_jacobian_free(atf_jacobian *J);

/* G [M × M] += alpha · (H1 H2ᵀ expanded to rows) ∘ (D1 D2ᵀ), the cross Gram of two factored
 * operators of the same shape (H [N × P], D [M × Q], M = N·C). With H1 = H2, D1 = D2 it is
 * A Aᵀ. `work` needs N² + M² doubles (NULL: allocated internally; returns ATF_E_NOMEM). */
atf_error atf_factored_gram(int N, int C, int P, int Q, const double *H1, const double *H2,
                            const double *D1, const double *D2, double alpha, double *G,
                            double *work);

/* ---------------------------------------------------------------------------------------------
 * Tasks: a data source, class selection, sampling, split, standardisation and targets.
 * ------------------------------------------------------------------------------------------- */

typedef enum {
    ATF_TARGETS_AUTO = 0,      /* labels if the source has labels and no /Y, else given */
    ATF_TARGETS_LABELS,        /* ±1 for two classes (class list order: −1, +1), one-hot for more */
    ATF_TARGETS_GIVEN,         /* the source's Y (HDF5 /Y, synthetic g) */
    ATF_TARGETS_TEACHER,       /* best linear fit of the label targets on the last-layer
                                  features of an independent random network (paper B.1) */
    ATF_TARGETS_TEACHER_SIGN   /* its sign (C = 1) or one-hot argmax (C > 1) */
} atf_targets;

const char *atf_targets_name(atf_targets t);

typedef struct {
    char source[ATF_PATHLEN];  /* synthetic[:d=..,r=..,noise=..] | mnist[:DIR] |
                                  fashion-mnist[:DIR] | PATH.h5 */
    int nclasses;              /* 0: every class present, in increasing order */
    int classes[ATF_MAX_CLASSES];
    int n_train, n_test;       /* −1: default (500 / 500; HDF5: all / 0) */
    uint64_t seed;             /* image sampling and synthetic generation, default 1 (an HDF5
                                  file keeps its row order: train first, then test) */
    int standardize;           /* −1: default (on for mnist / fashion-mnist, off otherwise) */
    atf_targets targets;
    uint64_t teacher_seed;     /* default 99991 */
} atf_data_options;

atf_data_options atf_data_options_default(void);

/* Set one option by its command-line name (without dashes): data, classes ("2,3"), n-train,
 * n-test, data-seed, standardize ("1"/"0"), targets, teacher-seed. *used = 0 for names this
 * function does not know (then nothing changes), 1 otherwise; ATF_E_USAGE for bad values. */
atf_error atf_data_option(atf_data_options *o, const char *name, const char *value, int *used,
                          char *err);

typedef struct {
    atf_dataset train, test;        /* test.N may be 0; both have Y set */
    int nclasses;                   /* classes in the task (0: no labels) */
    int classes[ATF_MAX_CLASSES];   /* original label of class index j */
    atf_targets targets;            /* resolved (never AUTO) */
    double teacher_accuracy;        /* train accuracy of thresholded teacher targets vs labels,
                                       NaN without teacher */
    char source_name[64];           /* "mnist", "fashion-mnist", "synthetic", "hdf5" */
    char source[ATF_PATHLEN];       /* the --data value, for messages */
    int standardized;               /* 1 if the inputs were standardised per example */
} atf_task;

/* Load the task. `arch` is the architecture for teacher targets (hidden widths, bias, param;
 * its end widths may be 0 and are then taken from the data); NULL is allowed unless the
 * targets are teacher targets. Errors name the file/item/reason: unreadable or corrupt data,
 * a requested class absent from the data, too few examples, unknown source. */
atf_error atf_task_load(const atf_data_options *o, const atf_arch *arch, atf_task *task,
                        char *err);
void atf_task_free(atf_task *task);

/* Check that arch fits the task (input width D, output width C), filling zero end widths. The
 * message names the data item (an HDF5 file's /X or /Y, else the --data source) and where the
 * widths came from (arch->origin, or --widths). */
atf_error atf_arch_fit_task(atf_arch *arch, const atf_task *task, char *err);

/* Network options shared by the commands: read a network (--mlp) or create one from
 * --widths (default: hidden widths 128,128 with the ends taken from the data), --seed (default
 * 1), --bias, --param (standard|ntk) and --init (he|torch). */
typedef struct {
    char mlp_path[ATF_PATHLEN];  /* non-empty: read this network */
    int have_widths;
    atf_arch arch;
    uint64_t seed;
    int seed_given;
} atf_net_options;

atf_net_options atf_net_options_default(void);

/* Set one option by name (mlp, widths, seed, bias ("1"/"0"), param, init); *used as for
 * atf_data_option. */
atf_error atf_net_option(atf_net_options *o, const char *name, const char *value, int *used,
                         char *err);

/* The architecture the options describe (reads the --mlp file if given); end widths may be 0
 * (taken from the data by atf_arch_fit_task). */
atf_error atf_net_arch(const atf_net_options *o, atf_arch *arch, char *err);

/* The network for a task: read (and checked against the task) or created from the seed. */
atf_error atf_net_build(const atf_net_options *o, const atf_task *task, atf_mlp **out, char *err);

/* Command-line helper of the tangent commands: if argv[*i] is a data or network option
 * (--NAME VALUE for the names above, or one of the flags --bias, --standardize,
 * --no-standardize), apply it, advance *i past its value and set *used = 1; otherwise
 * *used = 0 and nothing changes. d or n may be NULL to accept only the other kind. */
atf_error atf_tangent_arg(int argc, char **argv, int *i, atf_data_options *d, atf_net_options *n,
                          int *used, char *err);

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
    volatile sig_atomic_t *interrupt; /* optional: stop (ATF_E_INTERRUPTED) when nonzero */
} atf_train_settings;

atf_train_settings atf_train_default(void);

/* Train m in place on (X, Y) of ds. *final_loss (may be NULL) receives the full-batch loss
 * after training. */
atf_error atf_mlp_train(atf_mlp *m, const atf_dataset *ds, const atf_train_settings *s,
                        double *final_loss, char *err);

/* Full-batch loss mean_i ‖f(x_i) − y_i‖² / C and classification error: sign agreement with
 * Y for C = 1, argmax agreement for C > 1. Either output may be NULL. */
atf_error atf_mlp_evaluate(const atf_mlp *m, const atf_dataset *ds, double *loss, double *error,
                           char *err);

/* Error of predictions F [N × C] against targets Y: sign (C = 1) or argmax (C > 1) mismatch
 * rate; and against class indices (C = 1: f > 0 means class 1). */
double atf_prediction_error(int N, int C, const double *F, const double *Y);
double atf_prediction_class_error(int N, int C, const double *F, const int *labels);

/* ---------------------------------------------------------------------------------------------
 * Problems (SPEC §6 `atf features`).
 * ------------------------------------------------------------------------------------------- */

/* The factored problem of m at its weights on the task: blocks W1.. (and b1.. with bias) with
 * H, D from atf_mlp_jacobian, penalty `penalty` (NULL: "sq") on every block, r = y − f0, /y,
 * /f0, /labels, and the test split as prob->test (when task->test.N > 0). */
atf_error atf_tangent_problem(const atf_mlp *m, const atf_task *task, const char *penalty,
                              atf_problem **out, char *err);

/* ---------------------------------------------------------------------------------------------
 * Predictions: f(x) = f0(x) + Σ_ℓ A_ℓ(x) vec B_ℓ for a solution, or a network's outputs.
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    int N, C;
    double *f;          /* [N × C] predictions */
    double *y;          /* [N × C] targets */
    int *labels;        /* [N] class indices or NULL */
    double mse;         /* mean over N·C entries of (f − y)² */
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

/* ---------------------------------------------------------------------------------------------
 * Kernels (SPEC §5). All kernels are M × M over the rows m = i·C + k of a problem. `K` outputs
 * are accumulated (K += ...) so per-block kernels can be summed; zero them first.
 * ------------------------------------------------------------------------------------------- */

/* K += A_b A_bᵀ (the block's NTK; factored blocks as a Hadamard product). */
atf_error atf_kernel_ntk_block(const atf_block *b, double *K, char *err);

/* K += A_b M̂² A_bᵀ (eq. 7), by the result block's factor layout (see atf_result.h):
 *  - SPECTRAL: M̂ acts as W ↦ M̂1 W M̂2 with M̂1² = I + U diag(s1² − 1) Uᵀ and
 *    M̂2² = I + V diag(s2² − 1) Vᵀ (U, V, s1, s2 must be filled: see atf_result_factors).
 *    Factored blocks: (H Hᵀ + (HU) diag(s1²−1) (HU)ᵀ) ∘ (D Dᵀ + ...); dense and sparse blocks
 *    through their rows. Never forms a P×P or Q×Q matrix.
 *  - ENTRYWISE (diagonal structure): entry j is its own 1×1 block, M̂ scales its feature g_j by
 *    s1_j s2_j: K += Σ_j (s1_j s2_j)² g_j g_jᵀ. Factored blocks: Σ_q (H diag(S_:q) Hᵀ) ∘ δ_q δ_qᵀ
 *    or Σ_a h_a h_aᵀ ∘ (D diag(S_a:) Dᵀ), whichever is cheaper (no M × P·Q Jacobian).
 *  - VECTOR: refused (ATF_E_USAGE); the blocks share one transformation, see
 *    atf_kernel_adapted. */
atf_error atf_kernel_adapted_block(const atf_block *b, const atf_result_block *rb, double *K,
                                   char *err);

/* K += Σ_j (s1_j² s2_j² − 1) g_j g_jᵀ with g_j = A_b vec(u_j v_jᵀ): the paper's eq. 17 without
 * K0 (add the block's NTK for the printed formula). Equals eq. 7 for vector blocks only, and
 * for ENTRYWISE blocks (1×1 blocks, u = v = 1), which it accepts too; VECTOR as above. */
atf_error atf_kernel_paper17_block(const atf_block *b, const atf_result_block *rb, double *K,
                                   char *err);

/* The whole result (any layout; the only entry for VECTOR results, structure full):
 * K += eq. 7 and K += eq. 17's part without K0. For VECTOR factors β = (B_1..B_L) is one
 * P_total × 1 block, M̂1 = I + (s1 − 1) ββᵀ/‖β‖², M̂2 = s2 (1 × 1), so eq. 7 is
 * s2² (K0 + (s1² − 1) ‖β‖⁻² (Aβ)(Aβ)ᵀ) — Theorem 1's kernel when s2 = 1 — and eq. 17 adds
 * (s1² s2² − 1) ‖β‖⁻² (Aβ)(Aβ)ᵀ. Other layouts: the sum of the block functions. */
atf_error atf_kernel_adapted(const atf_problem *p, const atf_result *res, double *K, char *err);
atf_error atf_kernel_paper17(const atf_problem *p, const atf_result *res, double *K, char *err);

/* NULL if rb carries every factor its layout needs for the kernels, else what is missing
 * ("singular vectors U, V missing", ...). */
const char *atf_kernel_factors_missing(const atf_result_block *rb);

/* Theorem 1 (eq. 9): K = K0 + (s² − 1) ‖β‖⁻² (Aβ)(Aβ)ᵀ with β all blocks of the result as one
 * vector and s = argmin_{z≥1} ω(z) + ‖β‖²/z² for the penalty of the first block. Writes K. */
atf_error atf_kernel_theorem1(const atf_problem *p, const atf_result *res, const double *K0,
                              double *K, double *s_out, char *err);

/* K = v vᵀ (M × M), e.g. the label kernel with v = f − f0. */
void atf_kernel_outer(int M, const double *v, double *K);

/* ⟨K1, K2⟩_F / (‖K1‖_F ‖K2‖_F), and the centered alignment of Cortes et al. (2012): the same
 * after centering both with I − 11ᵀ/n. NaN when a norm is zero. */
double atf_kernel_cosine(int n, const double *K1, const double *K2);
double atf_kernel_cka(int n, const double *K1, const double *K2);

/* NTK of a network on X: K [M × M] = Σ_blocks, plus each block's part in K_blocks
 * [nblocks × M × M] when non-NULL (nblocks as in atf_mlp_jacobian). */
atf_error atf_kernel_mlp(const atf_mlp *m, int N, const double *X, double *K, double *K_blocks,
                         char *err);

/* Path-averaged tangent kernel (paper eq. 2 / 20): J̄ = (1/T) Σ_t ∇f_{θ_t} with
 * θ_t = θ0 + t_j (θ − θ0), t_j = j/(T−1) (T = 1: t = 0); K̄ = Σ_ℓ J̄_ℓ J̄_ℓᵀ.
 *  - MATERIALIZE: build J̄_ℓ (M × P·Q) in column panels and accumulate SYRKs:
 *      cost T·M·P·Q + M²·P·Q flops, memory M · panel.
 *  - HADAMARD: K̄_ℓ = T⁻² Σ_{t,t'} (H_t H_t'ᵀ) ∘ (D_t D_t'ᵀ) over pairs t ≤ t':
 *      cost T(T+1)/2 · (N²·P + M²·Q + M²) flops, memory T·(N·P + M·Q).
 *  - AUTO picks the smaller cost per block. */
typedef enum { ATF_PATH_AUTO = 0, ATF_PATH_MATERIALIZE, ATF_PATH_HADAMARD } atf_path_method;

atf_error atf_path_method_parse(const char *text, atf_path_method *out, char *err);

atf_error atf_kernel_path_average(const atf_mlp *m0, const atf_mlp *m1, int N, const double *X,
                                  int T, atf_path_method method, double *K, double *K_blocks,
                                  char *err);

/* The flop estimates used by AUTO for one block (exposed for tests and docs). */
double atf_path_cost(atf_path_method method, int N, int C, int P, int Q, int T);

/* ---------------------------------------------------------------------------------------------
 * Kernel reports (`atf kernel`): every kernel available from the inputs and their alignments.
 * Kernels, in this order when present: K0 (NTK at θ0), adapted (eq. 7), paper17 (eq. 17 as
 * printed: K0 + Σ_j (s1²s2² − 1) g_j g_jᵀ), theorem1, label ((f − f0)(f − f0)ᵀ with f − f0 = r),
 * final (NTK of the trained network), path_average.
 * ------------------------------------------------------------------------------------------- */

#define ATF_MAX_KERNELS 8

typedef struct {
    const atf_problem *problem; /* required */
    atf_result *result;         /* optional; U, V are filled by atf_result_factors if absent */
    const atf_mlp *mlp0;        /* optional: the network the problem was built from */
    const atf_mlp *mlp;         /* optional: the trained network (final and path kernels) */
    int path_points;            /* T for the path average (default 50 when 0) */
    atf_path_method path_method;
    /* names for messages, usually the file names (NULL: "problem", "result", "--mlp0", "--mlp") */
    const char *problem_name, *result_name, *mlp0_name, *mlp_name;
} atf_kernel_inputs;

typedef struct {
    int M, nkernels, nblocks;
    char names[ATF_MAX_KERNELS][16];
    double *K[ATF_MAX_KERNELS];  /* [M × M] */
    char (*blocks)[ATF_NAMELEN]; /* [nblocks] */
    double *cosine, *cka;        /* [nkernels × nkernels] */
    double *layer_cosine;        /* [nblocks × nkernels]: block ℓ's part of kernel j against the
                                    label kernel (NaN for kernels without per-block parts) */
    double *layer_cka;
    double theorem1_s;           /* s of Theorem 1 (NaN without a result) */
    double f0_check;             /* max |f_θ0(X) − f0| when mlp0 is given, else NaN */
} atf_kernel_report;

/* The inputs X of the networks are recovered from the problem's block W1 (H = c_1 X); with
 * mlp0 the function checks that f_θ0(X) reproduces the problem's /f0. */
atf_error atf_kernel_report_compute(const atf_kernel_inputs *in, atf_kernel_report *out,
                                    char *err);
/* HDF5: one dataset per kernel (/K0, /adapted, ...), /alignment/cosine, /alignment/cka and
 * /alignment/layer_cosine_label, /alignment/layer_cka_label with attributes `kernels` and
 * `blocks` (comma-separated names); root attribute format = "atf-kernels". Atomic. */
atf_error atf_kernel_report_write(const char *path, const atf_kernel_report *r, char *err);
void atf_kernel_report_free(atf_kernel_report *r);

#endif
