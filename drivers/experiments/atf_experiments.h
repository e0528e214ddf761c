/* atf_experiments.h — the experiment harness as a library (static library atf_experiments).
 *
 * Programs over atf: the paper's experiments, the penalty sweep and the demo, and the pieces
 * they are built from (docs/experiments.md):
 *   tables      rowstore.h: resumable CSV + JSON-lines tables, one fsync'ed row at a time
 *   figures     plot.h: grids of line and heat-map panels rendered with PLplot to SVG + PNG
 *   statistics  median, mean ± std, effective rank (stats.c); centering and scale=auto
 *               penalty specs (metrics.c)
 *   progress    a progress line with elapsed time and ETA                       (progress.c)
 *   experiments alignment (paper Fig. 1, 3), penalties (Fig. 2), samples (test error vs n)
 *   sweep       penalty family × parameter × scale × structure on one problem file
 *   demo        the samples experiment at its built-in small size
 *
 * No argv here: every experiment has a config struct, a defaults function that fills it and
 * a run function. A run returns ATF_OK or an error (with a one-line message in err, naming the
 * item, never a command-line flag); being stopped through io.interrupt is not an error: the run
 * returns ATF_OK with outcome->status = ATF_STATUS_INTERRUPTED and a message saying how to
 * resume. Exit codes belong to the programs (drivers/cli). Nothing is printed unless
 * io.report, io.progress or io.log ask. */
#ifndef ATF_EXPERIMENTS_H
#define ATF_EXPERIMENTS_H

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "atf_error.h"
#include "atf_problem.h"
#include "atf_result.h"
#include "atf_solver.h"
#include "atf_kernel.h"
#include "atf_train.h"
#include "plot.h"
#include "rowstore.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- what every run shares ---- */

/* Processes that share one run (the ranks of `mpirun -np K atf experiment samples`,
 * drivers/cli/cli_mpi.c): this one is `rank` of `size`; `max` replaces v[0 … n−1] by their
 * elementwise maximum over all of them (a collective call: every process makes it at the same
 * point). The experiments know nothing of MPI; a run without it has no ranks (NULL). */
typedef struct {
    int rank, size;
    void (*max)(void *ctx, int *v, int n);
    void *ctx;
    /* The path (atf_path_run) spreads the examples of its problem over the ranks, and needs
     * more (each collective, made by every process at the same point): `bcast` copies
     * buf[0 … bytes−1] of process 0 to every process; `gather` completes x: each process has
     * filled its own piece x[first … first + count − 1] (count may be 0; the pieces do not
     * overlap), and afterwards every process holds every piece; `processes` are the same ranks
     * as the solver's processes (atf_hooks.processes: sums, row gathers, maxima). */
    void (*bcast)(void *ctx, void *buf, int bytes);
    void (*gather)(void *ctx, double *x, int first, int count);
    const atf_processes *processes;
} atf_exp_ranks;

typedef struct {
    FILE *report;                     /* Markdown tables or the JSON summary line (NULL: none) */
    FILE *progress;                   /* progress line and what is being done (NULL: none) */
    FILE *log;                        /* warnings, runs that failed and were skipped (NULL: none) */
    int json;                         /* report one JSON line instead of tables */
    volatile sig_atomic_t *interrupt; /* nonzero asks the run to stop (NULL: never) */
    const atf_exp_ranks *ranks;       /* several processes share the run (NULL: this one alone;
                                         the samples experiment and the sweep spread their rows) */
} atf_exp_io;

/* How a run ended when it returned ATF_OK: ATF_STATUS_SOLVED, it completed;
 * ATF_STATUS_INTERRUPTED, stopped through io.interrupt (the rows recorded so far stay, the same
 * run resumes); ATF_STATUS_INFEASIBLE, the problem has no interpolant (the NTK baseline is
 * infeasible, so is every model). err then says why in one line. */
typedef struct {
    atf_status status;
    int rows;        /* rows in the run's table (earlier runs included) */
    int new_rows;    /* rows this run added */
} atf_exp_outcome;

/* ---- the experiments ---- */

/* `samples` (and the demo): test error against n of models that share one initial network θ0
 * per seed (docs/experiments.md):
 *   ntk             the NTK min-norm interpolant (fixed features)
 *   ntk-sgd         the linearised network f0 + ⟨∇f(θ0), δ⟩ trained by gradient descent
 *   p16             problem (16) solved exactly (one model per penalty variant: the penalty, or one
 *                   per scale of the scale axis; interpolation, or the loss of `loss`)
 *   p16-xent        problem (16) with the penalized cross-entropy loss xent:lambda=xent_lambda
 *                   (one model per xent_penalties entry, else per penalty variant), or with λ
 *                   chosen by a path on validation rows (xent_lambdas)
 *   ntk-xent        the linearised network's regularised cross-entropy optimum: p16-xent with
 *                   the `fixed` penalty (exists at every n, unlike the interpolant)
 *   p16-ridge       problem (16) with the penalized squared loss squared:lambda=ridge_lambda
 *                   (one model per penalty variant, as p16), or with λ chosen by a path on
 *                   validation rows (ridge_lambdas), scored by the validation MSE
 *   ntk-ridge       kernel ridge regression on the initial tangent features: p16-ridge with
 *                   the `fixed` penalty
 *   factorized-sgd  the factorised linearisation M1 W M2 trained by gradient descent
 *   network         the network itself trained by gradient descent
 * Rows in OUT/samples.csv (resumable), summary OUT/samples_summary.csv, figure
 * OUT/samples.{svg,png}. */
enum { ATF_SAMPLES_MAXN = 16, ATF_SAMPLES_MAXSEEDS = 16, ATF_SAMPLES_MAXPEN = 8 };
enum { ATF_PATH_MAXLAMBDAS = 64 }; /* λ of a path (atf_path_config, and the samples' path) */
enum { ATF_SAMPLES_MAXTHRESHOLDS = 8 };

typedef enum {
    ATF_SAMPLES_NTK = 1 << 0,
    ATF_SAMPLES_NTK_SGD = 1 << 1,
    ATF_SAMPLES_P16 = 1 << 2,
    ATF_SAMPLES_P16_XENT = 1 << 3,
    ATF_SAMPLES_FACTORIZED_SGD = 1 << 4,
    ATF_SAMPLES_NETWORK = 1 << 5,
    ATF_SAMPLES_NTK_XENT = 1 << 6,
    ATF_SAMPLES_P16_RIDGE = 1 << 7,
    ATF_SAMPLES_NTK_RIDGE = 1 << 8
} atf_samples_model;

/* The levels of the sample complexity are of the test error, or of the relative test MSE
 * (auto: the relative MSE for the built-in regression task, synthetic data, else the error). */
typedef enum {
    ATF_THRESHOLD_AUTO, ATF_THRESHOLD_ERROR, ATF_THRESHOLD_REL_MSE
} atf_threshold_metric;

/* A comma list of the names above into a set of ATF_SAMPLES_* flags (ATF_E_USAGE naming
 * "models" for an unknown or repeated name or an empty list). */
atf_error atf_samples_parse_models(const char *list, unsigned *models, char *err);

typedef struct {
    atf_data_options data;          /* task (data source, classes, n_test, targets, ...) */
    atf_arch arch;                  /* hidden widths (end widths 0: from the data); L = 0:
                                       128,128 (mnist, fashion-mnist: 128,128,128,128) */
    int init;                       /* ATF_INIT_*, or -1: torch for mnist and fashion-mnist,
                                       he otherwise */
    int ns[ATF_SAMPLES_MAXN], nn;   /* training-set sizes */
    uint64_t seeds[ATF_SAMPLES_MAXSEEDS];
    int nseeds;
    char penalty[128];              /* problem (16) penalty; may contain scale=auto */
    char scales[ATF_SAMPLES_MAXPEN][32]; /* the scale axis: numbers or "auto" (nscales = 0: */
    int nscales;                         /* the penalty as given)                           */
    double auto_fraction;           /* scale=auto: √γ = fraction × largest baseline singular value */
    atf_global_structure structure;
    atf_linsys_kind linsys;         /* problem (16)'s linear systems (ADMM's projection):
                                       default auto (atf_solver.h) */
    atf_precond precond;            /* PCG's preconditioner (problem (16)'s projection by PCG
                                       and the NTK interpolant by CG): default auto */
    atf_loss loss;                  /* problem (16)'s loss: interpolate (default, ADMM) or a
                                       penalized loss (FISTA; rows then carry a `loss` column) */
    int max_iter;
    double tol;
    int train_mlp;                  /* also train the network (0: NTK and problem (16) only);
                                       used only when models = 0 */
    unsigned models;                /* ATF_SAMPLES_* flags; 0: ntk, p16 and (train_mlp) network */
    double xent_lambda;             /* p16-xent's λ (default 1) */
    double xent_lambdas[ATF_PATH_MAXLAMBDAS]; /* nxent_lambdas > 0: the cross-entropy models    */
    int nxent_lambdas;                        /* (p16-xent, ntk-xent) fit the first n − v
                                                 examples for every λ of this list, largest
                                                 first, each warm-started from the last, and keep
                                                 the λ of the lowest cross-entropy on the v
                                                 validation examples (the SGD models' v, the last
                                                 of the n) */
    double checkpoint_seconds;                /* problem (16)'s Newton solves keep their state
                                                 in DIR/solutions/NAME.partial.h5 every this many
                                                 seconds (default 600; < 0: never) and a re-run
                                                 goes on from it, to the same result bit for
                                                 bit (docs/experiments.md) */
    int xent_path_patience;                   /* > 0: the path stops once this many λ in a
                                                 row have had a higher validation cross-entropy
                                                 than the best (the smaller λ, the costlier
                                                 the solve); 0: every λ */
    int xent_lambdas_per_example;             /* the path's λ are per fitted example: λ =
                                                 value × (n − v), so that the loss is the mean
                                                 cross-entropy / value at every n */
    double ridge_lambda;            /* p16-ridge's and ntk-ridge's λ (default 1) */
    double ridge_lambdas[ATF_PATH_MAXLAMBDAS]; /* nridge_lambdas > 0: the squared-loss models */
    int nridge_lambdas;                        /* (p16-ridge, ntk-ridge) on a λ path as the
                                                  cross-entropy models', scored by the MSE on
                                                  the validation rows */
    int ridge_path_patience;                   /* as xent_path_patience, for that path */
    int ridge_lambdas_per_example;             /* λ = value × (n − v): the loss is the mean
                                                  squared error / value at every n */
    char xent_penalties[ATF_SAMPLES_MAXPEN][128]; /* p16-xent's penalties, a model each (none: */
    int nxent_penalties;                          /* the penalty variants, as p16)             */
    int interpolate_max_n;          /* ntk and interpolating p16 run only for n ≤ this (0: no
                                       bound; -1: where n·C ≤ the network's parameter count);
                                       a larger n gets rows with status `skipped` */
    double thresholds[ATF_SAMPLES_MAXTHRESHOLDS]; /* test-error levels: the n at which each */
    int nthresholds;                /* model reaches them, and the ratios fixed / adaptive
                                       (OUT/samples_complexity.csv, samples_ratios.csv) */
    atf_threshold_metric threshold_metric; /* what the levels are of (default auto) */
    int report_only;                /* run nothing: the summary, figures and reports of the
                                       rows recorded (of the plan's models, at any n) */
    int align_examples;             /* > 0: the network's row also records, per layer, the
                                       alignment of its final NTK with K0 and with the first
                                       p16-xent model's adapted kernel (eq. 7), on the first
                                       align_examples test examples */
    int center;                     /* f0 := 0 in the linear models (r = y) */
    atf_train_settings train;       /* the models trained by gradient descent (ntk-sgd,
                                       factorized-sgd, network) with their protocol; lr ≤ 0:
                                       0.1 with the torch initialisation, else 0.01. With
                                       best-val stopping and n_val = 0, n_val = n/10 (carved from
                                       the n examples); with resampling the pool is the whole
                                       training set (n_pool rows) and n_train = n */
    int n_pool;                     /* the training pool (−1: every training example of the
                                       data set; 0: with fixed sampling, just the n examples;
                                       with resampling, as −1). With fixed sampling a pool only
                                       fixes the test set: the n examples are its first n */
    char out[1024];                 /* output directory */
    char solver_log[1024];          /* "": none; else every problem (16) solve's iteration
                                       table (the solver's verbose output, a row per Newton
                                       step), appended to this file under a line naming the
                                       (n, seed), model and λ */
    char title[256];                /* figure title ("": one naming the data and penalty) */
    atf_exp_io io;
} atf_samples_config;

void atf_samples_defaults(atf_samples_config *cfg);
/* The λ path of the cross-entropy models from a comma list of distinct λ > 0, and p16-xent's
 * penalties from a ';' list of specs (scale=auto allowed); ATF_E_USAGE naming "xent-lambdas"
 * or "xent-penalties" for a bad list. */
atf_error atf_samples_set_xent_lambdas(atf_samples_config *cfg, const char *list, char *err);
atf_error atf_samples_set_xent_penalties(atf_samples_config *cfg, const char *list, char *err);
/* The λ path of the squared-loss models (p16-ridge, ntk-ridge), as xent_lambdas (ATF_E_USAGE
 * naming "ridge-lambdas"). */
atf_error atf_samples_set_ridge_lambdas(atf_samples_config *cfg, const char *list, char *err);
/* The sample-complexity levels from a comma list of positive numbers: test errors in (0, 1), or
 * relative test MSEs (any positive level) when the levels are of the relative MSE (ATF_E_USAGE
 * naming "error-thresholds"; levels of the error ≥ 1 are refused when the run is planned). */
atf_error atf_samples_set_thresholds(atf_samples_config *cfg, const char *list, char *err);
/* The scale axis from a comma list of positive numbers and "auto" (ATF_E_USAGE naming
 * "scales" for a bad list). */
atf_error atf_samples_set_scales(atf_samples_config *cfg, const char *list, char *err);
/* The demo: the defaults at the built-in size (synthetic task, out/demo, its own title). */
void atf_demo_defaults(atf_samples_config *cfg);
/* ATF_E_USAGE when the configuration cannot run (bad penalty or scale, sizes, tolerances). */
atf_error atf_samples_check(const atf_samples_config *cfg, char *err);
/* Run every (n, seed) not yet in OUT/samples.csv, then write the summary, the figure and the
 * report (a Markdown table, or a JSON line with io.json). */
atf_error atf_samples_run(const atf_samples_config *cfg, atf_exp_outcome *outcome, char *err);

/* `penalties` (paper Fig. 2): effective penalties ω̃ (eq. 12) and prox maps on a grid of v.
 * OUT/penalties.csv and OUT/penalties.{svg,png}; the report gives the tail slopes. */
enum { ATF_PENALTIES_MAX = 8 };

typedef struct {
    const char *specs[ATF_PENALTIES_MAX]; /* nspecs = 0: sq, abs and sq+abs */
    int nspecs;
    double from, to;                      /* grid of v for the linear panels */
    int num;
    double t;                             /* prox step */
    char out[1024];
    atf_exp_io io;
} atf_penalties_config;

void atf_penalties_defaults(atf_penalties_config *cfg);
atf_error atf_penalties_check(const atf_penalties_config *cfg, char *err);
atf_error atf_penalties_run(const atf_penalties_config *cfg, atf_exp_outcome *outcome, char *err);

/* `alignment` (paper Fig. 1 and 3): networks trained on teacher targets y and sign(y) from
 * one θ0, their path-averaged kernels against the label kernel, and problem (16)'s adapted
 * kernel against them, block by block. OUT/alignment.csv, OUT/alignment_summary.json,
 * OUT/alignment_kernels.{svg,png}, OUT/alignment_residual.{svg,png}. */
typedef struct {
    atf_data_options data;          /* default mnist, classes 2,3, 500 + 500 examples */
    atf_net_options net;            /* default init torch */
    atf_train_settings train;       /* lr ≤ 0: 0.03 with torch init, 0.01 with he */
    int path_points;
    char penalty[128];
    double auto_fraction, tol;
    int max_iter;
    char out[1024];
    atf_exp_io io;
} atf_alignment_config;

void atf_alignment_defaults(atf_alignment_config *cfg);
atf_error atf_alignment_check(const atf_alignment_config *cfg, char *err);
atf_error atf_alignment_run(const atf_alignment_config *cfg, atf_exp_outcome *outcome,
                            char *err);

/* ---- the sweep: problem (16) on one problem file over a grid ---- */

enum { ATF_SWEEP_MAXLIST = 32, ATF_SWEEP_MAXRUNS = 2048 };

typedef struct {
    char problem[1024];
    char out[1024];
    char families[ATF_SWEEP_MAXLIST][16]; /* penalty families (fixed: one run, no scale) */
    int nfamilies;
    double ps[ATF_SWEEP_MAXLIST];          /* exponents of pow */
    int np;
    char scales[ATF_SWEEP_MAXLIST][32];    /* numbers or "auto" */
    int nscales;
    atf_global_structure structures[3];
    int nstructures;
    const char *extra[ATF_SWEEP_MAXLIST];  /* penalties run as given */
    int nextra;
    atf_loss loss;                         /* interpolate (default, ADMM) or a penalized loss
                                              (FISTA; rows then carry loss columns) */
    double tol;
    int max_iter;
    double auto_fraction;
    int align_max;                         /* kernel alignments only when M ≤ this */
    int center;
    atf_exp_io io;
} atf_sweep_config;

void atf_sweep_defaults(atf_sweep_config *cfg);
/* Parse and check a comma list into the config (names the list: "families", "p", ...). */
atf_error atf_sweep_set_families(atf_sweep_config *cfg, const char *list, char *err);
atf_error atf_sweep_set_ps(atf_sweep_config *cfg, const char *list, char *err);
atf_error atf_sweep_set_scales(atf_sweep_config *cfg, const char *list, char *err);
atf_error atf_sweep_set_structures(atf_sweep_config *cfg, const char *list, char *err);
atf_error atf_sweep_check(const atf_sweep_config *cfg, char *err);
/* Baseline row first, then every grid run not yet in OUT/sweep.csv; the figure
 * OUT/sweep.{svg,png} also after an interruption. The table's lock file is gone when it
 * returns, whatever happened. */
atf_error atf_sweep_run(const atf_sweep_config *cfg, atf_exp_outcome *outcome, char *err);

/* ---- the regularisation path: problem (16) with a loss over λ on one problem file ---- */

/* Problem (16) with the loss squared:lambda=λ or xent:lambda=λ for every λ of a list, from the
 * largest to the smallest, each solve warm-started from the previous λ's answer. Every λ is
 * scored on validation examples carved from the training split (validation_fraction > 0: a
 * seeded random subset, the rest is fitted) or on the problem's test split, and is one row of
 * OUT/path.csv and OUT/path.jsonl (keyed by λ; resumable) with its result file
 * OUT/lambda-<row>.h5; the figure OUT/path.{svg,png}; the best λ: minimal validation (or test)
 * cross-entropy for xent, minimal error for squared (docs/experiments.md). With validation the
 * fitted examples (with the test split) are also written, OUT/fit.h5: the result files' problem. */
typedef struct {
    char problem[1024];
    char out[1024];
    atf_loss_kind loss;                   /* ATF_LOSS_SQUARED or ATF_LOSS_XENT */
    double lambdas[ATF_PATH_MAXLAMBDAS];  /* in any order, distinct, > 0 */
    int nlambdas;
    double validation_fraction;           /* 0: score on the test split; else in (0, 1) */
    uint64_t seed;                        /* draws the validation examples (default 1) */
    char penalty[ATF_PENALTY_SPECLEN];    /* every block's penalty; "": the file's */
    double tol;                           /* the solver's eps_rel (default 1e-6) */
    int max_iter;                         /* per λ (default 10000) */
    atf_method method;                    /* passed to the solver (default ATF_METHOD_AUTO) */
    int reduce;                           /* the solver's exact subspace reduction (default 1;
                                             0 for a rank-deficient factor over processes) */
    int verbose;                          /* the solver's iteration table on io.progress */
    char command[ATF_COMMANDLEN];         /* recorded in the result files ("": none) */
    atf_exp_io io;
} atf_path_config;

/* The best row of a path table: its λ, what it was chosen by and its scores. */
typedef struct {
    int found;              /* 0: no row has a finite criterion yet */
    double lambda;
    char key[32];           /* λ as the table's key */
    char criterion[48];     /* e.g. "validation cross-entropy", "test error" */
    double error, xent;     /* on the scored split (validation, else test) */
    char result[1100];      /* its result file */
} atf_path_best;

void atf_path_defaults(atf_path_config *cfg);
/* "xent" or "squared" (ATF_E_USAGE naming "loss" otherwise; λ comes from the list). */
atf_error atf_path_set_loss(atf_path_config *cfg, const char *name, char *err);
/* A comma list of distinct finite λ > 0 (ATF_E_USAGE naming "lambdas"). */
atf_error atf_path_set_lambdas(atf_path_config *cfg, const char *list, char *err);
/* ATF_E_USAGE when the configuration cannot run (no problem or λ, fraction outside (0, 1),
 * tolerance, iteration limit, penalty). */
atf_error atf_path_check(const atf_path_config *cfg, char *err);
/* Every λ not yet in OUT/path.csv, then the figure (also after an interruption) and the report
 * (a Markdown table and the best λ, or one JSON line with io.json). best (may be NULL) receives
 * the best row of the table. ATF_E_INPUT for a problem that cannot be scored (no test split
 * and no validation fraction, no targets, xent without labels) or a table written with other
 * settings. */
atf_error atf_path_run(const atf_path_config *cfg, atf_exp_outcome *outcome, atf_path_best *best,
                       char *err);

/* ---- statistics (stats.c) ---- */

/* Median of n values (copies; NaN for n = 0). */
double atf_median(const double *v, int n);
/* Mean and sample standard deviation of the finite values among n (NaN when none). */
void atf_mean_std(const double *v, int n, double *mean, double *std);
/* Smallest number of the values d (any order, e.g. singular values) whose largest ones hold
 * `energy` (e.g. 0.9) of Σ d²; 0 when all are zero. */
int atf_effective_rank(const double *d, int k, double energy);
/* Largest singular value over the result's blocks. */
double atf_result_max_singular(const atf_result *res);

/* ---- centering (metrics.c) ---- */

/* Test metrics: atf_test_metrics, atf_result_test_metrics and atf_prediction_metrics (the one
 * implementation of predictions and their f0 rule) are the tangent library's: atf_features.h.
 *
 * Centering: drop the initial function from the linear model of a problem (one split): r = y and
 * f0 := 0, so predictions are A vec B. With He initialisation f0 is as large as the targets and
 * acts as noise on every prediction of a linearised model (the trained network can undo it, a
 * linear model cannot); equivalent to linearising the symmetrised network f_θ − f_θ0. NULL is
 * allowed. */
void atf_problem_center(atf_problem *p);

/* ---- penalty specs with scale=auto (metrics.c) ---- */

/* The penalty a run solves: spec parsed as a template (atf_penalty_parse_template); the terms
 * that say scale=auto get γ = (fraction · dmax)² rounded to 6 significant digits
 * (atf_penalty_resolve_auto_scale) and out receives the canonical spec (atf_penalty_format),
 * otherwise the spec as given. *gamma (may be NULL) receives γ, or NaN when spec has no scale=auto.
 * ATF_E_INPUT for a bad spec or dmax, fraction ≤ 0; ATF_E_USAGE when out (outlen) is short. */
atf_error atf_resolve_auto_scale(const char *spec, double dmax, double fraction, char *out,
                                 size_t outlen, double *gamma, char *err);
/* The spec with the scale of every term that takes one set to the text `scale` (a number or
 * "auto"), through the parsed struct and its formatter: "sq" -> "sq:scale=S", "pow:p=1.5" ->
 * "pow:p=1.5,scale=S" (the scale text kept as given: it names a model of the scale axis).
 * ATF_E_USAGE for a bad spec or when out (outlen) is short. */
atf_error atf_penalty_with_scale(const char *spec, const char *scale, char *out, size_t outlen,
                                 char *err);
/* ATF_E_USAGE unless spec parses as a template (scale=auto allowed). */
atf_error atf_check_auto_spec(const char *spec, char *err);

/* ---- progress (progress.c) ---- */

/* "[=====>     ] 3/12  1m20s elapsed, ETA 4m10s  what" on `to` (NULL: silent). The one
 * throttled progress mechanism of the drivers (experiments, `atf train`, per-epoch callbacks):
 * callers may call atf_progress_show as often as they like (every epoch, every item).
 * On a terminal the line is redrawn in place, at most every ATF_PROGRESS_TTY_INTERVAL seconds;
 * off a terminal (a log file, a pipe) a line is written only when ATF_PROGRESS_LOG_INTERVAL
 * seconds have passed since the last one, plus the first, the one that reaches done == total
 * and the final one (atf_progress_end, or atf_progress_break after an interruption), whatever
 * the rate of the updates. An update not written is kept, and a ticker thread writes it once
 * its interval has passed, so that a long step that makes no further update (one λ of a path
 * solved for an hour) is named while it runs; on a terminal the ticker also redraws the line
 * every ATF_PROGRESS_TTY_REFRESH seconds, so that the elapsed time moves. Every
 * atf_progress_start is matched by atf_progress_end or atf_progress_break (which stop the
 * ticker) before the atf_progress goes out of scope; updates may follow a break. */
#define ATF_PROGRESS_TTY_INTERVAL 0.1
#define ATF_PROGRESS_TTY_REFRESH 1.0
#define ATF_PROGRESS_LOG_INTERVAL 5.0
typedef struct {
    int total, done, skipped;
    double t0;
    int tty;
    FILE *to;
    double last;      /* time of the last line written (or redrawn) */
    int lines;        /* lines written (redraws on a terminal) */
    int open;         /* a terminal line drawn without its newline */
    int pending;      /* an update not written yet (its text in what) */
    int final_shown;  /* the line with done == total was written */
    char what[256];   /* the last update's text */
    pthread_mutex_t mu;   /* guards all of the above once the ticker runs */
    pthread_cond_t wake;  /* an update was kept back, or the ticker must stop */
    pthread_t ticker;
    int ticking, closing; /* the ticker runs; it is asked to stop */
} atf_progress;

void atf_progress_start(atf_progress *p, FILE *to, int total, int skipped);
void atf_progress_show(atf_progress *p, const char *what);
void atf_progress_step(atf_progress *p);
/* Sets the runs done (e.g. the epoch reached); the next update shows it. */
void atf_progress_set_done(atf_progress *p, int done);
/* The final line ("done", unless the line at done == total is already written); on a terminal
 * it stays. */
void atf_progress_end(atf_progress *p);
/* Write the update kept back, if any, and end the line on a terminal (so that a message can
 * follow, or after an interrupted run). */
void atf_progress_break(atf_progress *p);

/* ---- files ---- */

/* Directories and atomic writes of whole files: atf_mkdir_p, atf_write_text_atomic
 * (problems/atf_util.h). */

#ifdef __cplusplus
}
#endif

#endif
