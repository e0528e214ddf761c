/* experiment.h — the experiment, sweep and demo commands and the helpers they share
 * (drivers only; see docs/experiments.md).
 *
 *   atf experiment alignment   paper Fig. 1 and 3: real network vs problem (16) kernels
 *   atf experiment penalties   paper Fig. 2: effective penalties and prox maps
 *   atf experiment samples     test error against n: NTK min-norm, problem (16), trained MLP
 *   atf sweep                  penalty × scale × structure ablations on a problem file
 *   atf demo                   the samples experiment at a small built-in size */
#ifndef ATF_EXPERIMENT_H
#define ATF_EXPERIMENT_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "atf_error.h"
#include "atf_problem.h"
#include "atf_result.h"
#include "atf_solver.h"
#include "atf_tangent.h"

int atf_cmd_experiment(int argc, char **argv);
int atf_cmd_sweep(int argc, char **argv);

int atf_experiment_alignment(int argc, char **argv);
int atf_experiment_penalties(int argc, char **argv);
int atf_experiment_samples(int argc, char **argv);

/* ---- the sample-complexity experiment, shared with `atf demo` ---- */

enum { ATF_SAMPLES_MAXN = 16, ATF_SAMPLES_MAXSEEDS = 16, ATF_SAMPLES_MAXPEN = 8 };

typedef struct {
    atf_data_options data;          /* task (data source, classes, n_test, targets, ...) */
    atf_arch arch;                  /* network widths (end widths 0: from the data) */
    int ns[ATF_SAMPLES_MAXN], nn;   /* training-set sizes */
    uint64_t seeds[ATF_SAMPLES_MAXSEEDS];
    int nseeds;
    char penalty[128];              /* problem (16) penalty; may contain scale=auto */
    char variants[ATF_SAMPLES_MAXPEN][128]; /* penalties actually run: the penalty, or one per */
    int nvariants;                          /* --scales value (the scale axis)                */
    double auto_fraction;           /* scale=auto: √γ = fraction × largest baseline singular value */
    atf_global_structure structure;
    int max_iter;
    double tol;
    int train_mlp;                  /* also train the network (0: NTK and problem (16) only) */
    int center;                     /* f0 := 0 in the linear models (r = y) */
    atf_train_settings train;
    char out[1024];                 /* output directory */
    const char *title;              /* figure title */
    int json;                       /* one-line JSON summary on stdout */
} atf_samples_config;

/* Defaults for a data source name ("synthetic", "mnist", ...). */
void atf_samples_defaults(atf_samples_config *cfg);

/* Run every (n, seed) not yet in OUT/samples.csv, then write the summary table
 * (OUT/samples_summary.csv, a Markdown table on stdout) and the figure OUT/samples.{svg,png}.
 * Returns the exit code. */
int atf_samples_run(const atf_samples_config *cfg, const char *cmd);

/* "--hidden 128,128": hidden widths into arch (end widths 0, filled from the data later). */
atf_error atf_parse_hidden(const char *text, atf_arch *arch, char *err);

/* ---- helpers (experiment_util.c) ---- */

/* Comma-separated integers in [lo, hi], at most max of them, into vals; *n receives the count. */
atf_error atf_parse_list(const char *opt, const char *text, long lo, long hi, long *vals, int max,
                         int *n, char *err);

/* mkdir -p. */
atf_error atf_mkdir_p(const char *path, char *err);

/* Write text to path atomically (temporary file in the same directory, then rename). */
atf_error atf_write_text(const char *path, const char *text, char *err);

/* Smallest number of the values d (any order, e.g. singular values) whose largest ones hold
 * `energy` (e.g. 0.9) of Σ d²; 0 when all are zero. */
int atf_effective_rank(const double *d, int k, double energy);

/* Largest singular value over the result's blocks. */
double atf_result_max_singular(const atf_result *res);

/* Replace every "scale=auto" in spec by scale=γ with √γ = fraction · dmax (out has outlen bytes);
 * *gamma (may be NULL) receives γ, or NaN when spec has no "scale=auto". */
atf_error atf_resolve_auto_scale(const char *spec, double dmax, double fraction, char *out,
                                 size_t outlen, double *gamma, char *err);

/* The spec with every term's scale set to `scale` (a number or "auto"): "sq" -> "sq:scale=S",
 * "pow:p=1.5" -> "pow:p=1.5,scale=S", "zsq:scale=1" -> "zsq:scale=S". Spaces around '+' must not
 * be used. */
atf_error atf_penalty_with_scale(const char *spec, const char *scale, char *out, size_t outlen,
                                 char *err);

/* Test metrics of a result on prob->test: predictions F = f0 + Σ_ℓ A_ℓ vec B_ℓ; `error` is the
 * class error against labels (or sign / argmax agreement with y without labels), `rel_mse` is
 * mean (F − y)² / mean (y − ȳ)². NaN without a test split. */
typedef struct {
    double error, rel_mse;
} atf_test_metrics;

atf_error atf_result_test_metrics(const atf_problem *prob, const atf_result *res,
                                  atf_test_metrics *out, char *err);

/* Centering: drop the initial function from the linear model of a problem (one split): r = y and
 * f0 := 0, so predictions are A vec B. With He initialisation f0 is as large as the targets and
 * acts as noise on every prediction of a linearised model (the trained network can undo it, a
 * linear model cannot); equivalent to linearising the symmetrised network f_θ − f_θ0. NULL is
 * allowed. */
void atf_problem_center(atf_problem *p);

/* Metrics of given predictions F [N × C] on a split with targets y and optional labels. */
atf_test_metrics atf_metrics_of(int N, int C, const double *F, const double *y, const int *labels);

/* Progress line on stderr: "[=====>     ] 3/12  1m20s elapsed, ETA 4m10s  what". Rewrites one
 * line on a terminal, prints one line per update otherwise. */
typedef struct {
    int total, done, skipped;
    double t0;
    int tty;
} atf_progress;

void atf_progress_start(atf_progress *p, int total, int skipped);
void atf_progress_show(atf_progress *p, const char *what);
void atf_progress_step(atf_progress *p);
void atf_progress_end(atf_progress *p);

/* Median of n values (copies; NaN for n = 0). */
double atf_median(const double *v, int n);
/* Mean and sample standard deviation of the finite values among n (NaN when none). */
void atf_mean_std(const double *v, int n, double *mean, double *std);

#endif
