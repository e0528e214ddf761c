/* atf_data.h — the first stage of the tangent pipeline: data (docs/tangent.md §1).
 *
 * Seeded random numbers, IDX files, data sets (HDF5, synthetic), per-example standardisation and
 * tasks: a data source and target choice (atf_data_options) give train/test sets with targets
 * (atf_task). The networks that use a task are in atf_mlp.h.
 *
 * Conventions: matrices are row-major doubles; every random choice takes a seed and the same
 * seed gives the same bits. The library never prints, and never looks for data relative to the
 * working directory: the directories to search are options (atf_data_add_dir). */
#ifndef ATF_DATA_H
#define ATF_DATA_H

#include <stdint.h>

#include "atf_error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ATF_MAX_CLASSES 64
#define ATF_PATHLEN 1024
#define ATF_MAX_DATA_DIRS 8

/* The architecture of a network (atf_mlp.h); a task needs one only for teacher targets. */
typedef struct atf_arch atf_arch;

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
 * Data sets.
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

/* Synthetic multi-index task (docs/tangent.md §1): x ~ N(0, I_d), z = U x with U ∈ R^{r×d}
 * random orthonormal rows, y = g(z) + noise·ε with
 *     g(z) = ( He2(z_1)/√2 + He3(z_r)/√6 + Σ_{j<r} z_j z_{j+1} ) / √(r+1),
 * He2(t) = t² − 1, He3(t) = t³ − 3t; every term has mean 0 and variance 1 and the terms are
 * uncorrelated, so Var g = 1. U is drawn first from the seed, then the n examples. */
typedef struct {
    int d, r;
    double noise;
} atf_synthetic;

atf_error atf_synthetic_make(const atf_synthetic *s, int n, uint64_t seed, atf_dataset *out,
                             char *err);

/* Read a user data set (docs/formats.md "Dataset file": /X [N, D], /Y [N, C], optional
 * /labels [N] int). */
atf_error atf_dataset_read_h5(const char *path, atf_dataset *out, char *err);

/* Per-example standardisation (paper B.1): each row of X to zero mean and unit variance
 * (a constant row becomes zero). */
void atf_standardize_rows(int N, int D, double *X);

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
    int n_train, n_test;       /* −1: default (500 / 500; HDF5: all / 0); n_train 0: every
                                  example the test split leaves */
    uint64_t seed;             /* image sampling and synthetic generation, default 1 (an HDF5
                                  file keeps its row order: train first, then test) */
    int standardize;           /* −1: default (on for mnist / fashion-mnist, off otherwise;
                                  off, pixels are x/255) */
    int official_split;        /* mnist / fashion-mnist: 1 draws the training examples from the
                                  train-* files only and the test examples from t10k-* (the data
                                  set's own split); 0 (default) draws both from all images */
    atf_targets targets;
    uint64_t teacher_seed;     /* default 99991 */
    /* Data roots searched, in this order, for mnist and fashion-mnist without :DIR: the first
     * ROOT/mnist (ROOT/fashion-mnist) holding the train-* files is used. Empty by default: the
     * caller decides where data lives (the CLI: $ATF_DATA, the repository's data/,
     * /usr/share/datasets). */
    int ndata_dirs;
    char data_dirs[ATF_MAX_DATA_DIRS][ATF_PATHLEN];
} atf_data_options;

atf_data_options atf_data_options_default(void);

/* Set one option by name: data, classes ("2,3"), n-train, n-test, data-seed, teacher-seed,
 * targets, standardize ("1"/"0"), split ("pooled"/"official"). ATF_E_USAGE for an unknown name or a bad value; messages name
 * the option ("classes: class 3 listed twice"). */
atf_error atf_data_option(atf_data_options *o, const char *name, const char *value, char *err);

/* Append a data root to o->data_dirs (ATF_E_USAGE when empty, too long or one too many). */
atf_error atf_data_add_dir(atf_data_options *o, const char *dir, char *err);

typedef struct {
    atf_dataset train, test;        /* test.N may be 0; both have Y set */
    int nclasses;                   /* classes in the task (0: no labels) */
    int classes[ATF_MAX_CLASSES];   /* original label of class index j */
    atf_targets targets;            /* resolved (never AUTO) */
    double teacher_accuracy;        /* train accuracy of thresholded teacher targets vs labels,
                                       NaN without teacher */
    char source_name[64];           /* "mnist", "fashion-mnist", "synthetic", "hdf5" */
    char source[ATF_PATHLEN];       /* the data source as given, for messages */
    char data_dir[ATF_PATHLEN];     /* the IDX directory used (mnist, fashion-mnist), else "" */
    int standardized;               /* 1 if the inputs were standardised per example */
} atf_task;

/* Load the task. `arch` is the architecture for teacher targets (hidden widths, bias, param;
 * its end widths may be 0 and are then taken from the data); NULL is allowed unless the
 * targets are teacher targets. Errors name the file/item/reason: unreadable or corrupt data,
 * missing IDX files (with every directory searched), a requested class absent from the data,
 * too few examples, unknown source. */
atf_error atf_task_load(const atf_data_options *o, const atf_arch *arch, atf_task *task,
                        char *err);
void atf_task_free(atf_task *task);

#ifdef __cplusplus
}
#endif

#endif
