/* samples_internal.h — what the two files of the samples experiment share: the plan (the models
 * to compare), the state of a run, one (n, seed) point, and what samples_models.c provides (the
 * rows and the model runners). The dependency points one way: experiment_samples.c (plan, grid,
 * summary, figure) calls samples_models.c; samples_models.c calls nothing of
 * experiment_samples.c. */
#ifndef ATF_SAMPLES_INTERNAL_H
#define ATF_SAMPLES_INTERNAL_H

#include "exp_internal.h"

/* The models compared: the NTK baseline; problem (16) per penalty variant (the scale axis),
 * exact and with the cross-entropy loss; the models trained by gradient descent. A model's row
 * key is its name ("p16", or "p16:SPEC" with several variants). Tables written before the
 * models had these names keyed problem (16) "adaptive[:SPEC]" and the network "mlp"; those keys
 * are read as "p16[:SPEC]" and "network". */
enum { SAMPLES_MAXMETHODS = 3 * ATF_SAMPLES_MAXPEN + 5 };
typedef enum {
    KIND_NTK, KIND_P16, KIND_P16_XENT, KIND_NTK_SGD, KIND_FACTORIZED_SGD, KIND_NETWORK,
    KIND_NTK_XENT, KIND_P16_RIDGE, KIND_NTK_RIDGE
} method_kind;

/* The penalized models on a λ path (or at one λ): the cross-entropy ones (p16-xent, ntk-xent)
 * and the squared-loss ones (p16-ridge, ntk-ridge); the ntk- ones solve with `fixed`. */
static inline int samples_is_xent(method_kind k)
{
    return k == KIND_P16_XENT || k == KIND_NTK_XENT;
}
static inline int samples_is_ridge(method_kind k)
{
    return k == KIND_P16_RIDGE || k == KIND_NTK_RIDGE;
}

/* One family's λ path as the configuration gives it (n = 0: none, one λ on all n). */
typedef struct {
    const double *values;
    int n, per_example, patience;
    double single;        /* the λ without a path */
} samples_path_grid;

static inline samples_path_grid samples_path_of(const atf_samples_config *cfg, method_kind k)
{
    if (samples_is_ridge(k))
        return (samples_path_grid){cfg->ridge_lambdas, cfg->nridge_lambdas,
                                   cfg->ridge_lambdas_per_example, cfg->ridge_path_patience,
                                   cfg->ridge_lambda};
    return (samples_path_grid){cfg->xent_lambdas, cfg->nxent_lambdas,
                               cfg->xent_lambdas_per_example, cfg->xent_path_patience,
                               cfg->xent_lambda};
}

/* Whether the model's λ comes from its loss's path on the fitted examples (else one λ on all
 * n): a penalized model whose family has a path. */
static inline int samples_on_path(const atf_samples_config *cfg, method_kind k)
{
    return (samples_is_xent(k) || samples_is_ridge(k)) && samples_path_of(cfg, k).n > 0;
}

/* The loss of a problem (16) model: the configuration's (p16), or cross-entropy or the squared
 * loss at λ. */
static inline atf_loss samples_model_loss(const atf_samples_config *cfg, method_kind k,
                                          double lambda)
{
    if (k == KIND_P16)
        return cfg->loss;
    return (atf_loss){samples_is_ridge(k) ? ATF_LOSS_SQUARED : ATF_LOSS_XENT, lambda};
}

/* Fixed features (the NTK models, ntk-sgd) against adaptive ones (problem (16) in any form,
 * factorised SGD, the network). */
static inline int samples_is_fixed(method_kind k)
{
    return k == KIND_NTK || k == KIND_NTK_XENT || k == KIND_NTK_RIDGE || k == KIND_NTK_SGD;
}

typedef struct {
    method_kind kind;
    const char *spec;     /* penalty variant (problem (16) only) */
    char name[160];       /* row key part and summary name */
    char label[192];      /* figure legend */
    int first;            /* the first variant of its kind: its solution is the one later
                             models compare with */
} method;

/* The configuration with the data-dependent defaults resolved and the penalty variants built. */
typedef struct {
    atf_samples_config cfg; /* cfg.models resolved (never 0) */
    char variants[ATF_SAMPLES_MAXPEN][128];
    int nvariants;
    char xent_variants[ATF_SAMPLES_MAXPEN][128]; /* p16-xent's: cfg.xent_penalties, else the */
    int nxent_variants;                          /* variants                                */
    /* the rows have the columns of the λ path and the kernel alignment (a λ path or an
     * alignment is configured; tables written without them keep their columns), and with a
     * squared-loss path those of its validation MSE (ridge_columns) */
    int extended, ridge_columns;
    char lambda_path[ATF_ROW_VALUELEN]; /* the λ grid as the rows record it ("-": none) */
    char ridge_lambda_path[ATF_ROW_VALUELEN]; /* the same for the squared-loss models */
    int rel_mse_levels;                 /* the sample complexity's levels are of the relative
                                           test MSE (else of the test error) */
} samples_plan;

/* The λ grid a penalized model's rows record ("-": none), "" for the other models. */
static inline const char *samples_lambda_path(const samples_plan *pl, method_kind k)
{
    return samples_is_ridge(k) ? pl->ridge_lambda_path : samples_is_xent(k) ? pl->lambda_path : "";
}

typedef struct {
    const samples_plan *plan;
    const atf_exp_io *io;
    atf_rowstore *store;     /* the table (samples.csv): what is recorded */
    atf_rowstore *out;       /* where this process appends (with ranks: its own part table) */
    const int *done;         /* the (point, method) runs recorded at the start, as
                                recorded_index numbers them, the same on every rank
                                (exp_shared.done; NULL: ask the store) */
    atf_progress *prog;
    FILE *solver_log;        /* cfg.solver_log opened for appending (rank 0), or NULL */
    int new_rows;
    atf_status status; /* solved, or why the grid stopped: an infeasible baseline */
} samples_state;

/* One (n, seed): the task (with resampling, the whole pool), θ0, the tangent problem on the
 * first n training rows and the NTK baseline (each only when a model needs it). */
typedef struct {
    int n;
    uint64_t seed;
    atf_task task;
    atf_task fit;          /* view of task with train.N = n (shares task's arrays) */
    atf_mlp *m0;
    int interpolate;       /* the interpolating models run at this n (else `skipped` rows) */
    int n_val;             /* validation rows: the last n_val of the n (the SGD models' and
                              the λ path's) */
    atf_problem *prob;     /* the n examples' problem with the test split; NULL when no model
                              solves on all n */
    atf_problem *pfit;     /* with a λ path (of either loss): the first n − n_val examples'
                              problem, its test split the validation examples; else NULL */
    const atf_problem *test; /* the test examples as a problem (prob's /test, or owned_test) */
    atf_problem *owned_test;
    atf_result *base;      /* NULL unless the NTK or scale=auto needs it */
    double base_seconds;
    atf_result *p16[2];    /* the first exact and cross-entropy problem (16) solutions (kept for
                              the SGD models' cosine and the network's alignment; loaded from
                              their files, or solved again, when a resumed run needs them) */
} point;

/* ---- samples_models.c: rows ---- */
/* "n=N|seed=S|METHOD": the key of a row. */
void samples_row_key(char *key, size_t len, int n, uint64_t seed, const char *method);
/* A row with the columns every row has, filled with "-" / NaN; the runners set theirs. With
 * plan->extended also the λ path's and the alignment's columns. */
void samples_base_row(const samples_plan *pl, atf_row *row, int n, uint64_t seed,
                      const char *method, const char *penalty);
/* Append a row and advance the progress line by one run. */
atf_error samples_append(samples_state *s, const atf_row *row, char *err);
/* The progress line "n=N seed=S: WHAT DETAIL" (throttled by progress.c: call it freely). */
void samples_show(samples_state *s, const point *pt, const char *what, const char *detail);

/* The validation rows of a point (the last of its n): the SGD models' (--val, or n/10 with
 * best-val stopping), or n/10 (at least 1) when they have none — the λ path needs some. */
int samples_validation_rows(const atf_train_settings *t, int n);
/* The point's NTK min-norm interpolant into pt->base, its CG solve checkpointed to
 * DIR/solutions/n=N_seed=S_ntk.partial.h5 (samples_models.c). */
atf_error samples_baseline(samples_state *s, point *pt, char *err);

/* ---- samples_models.c: the models ---- */
/* The NTK baseline's row (pt->base). */
atf_error samples_record_ntk(samples_state *s, const point *pt, char *err);
/* Problem (16) (exact or cross-entropy, with or without the λ path) of one variant, or the
 * cross-entropy optimum of the linearised network (ntk-xent); a `skipped` row for an
 * interpolating model where the point does not interpolate. */
atf_error samples_run_p16(samples_state *s, point *pt, const method *m, char *err);
/* pt->p16[xent] — the solution of m, the first method of its kind — when a later model of this
 * point needs it and this run has not solved it: read from the solution file the run that
 * recorded its row wrote, or solved again (no row). */
atf_error samples_need_p16(samples_state *s, point *pt, const method *m, char *err);
/* Remove m's solution file of the point (once every model of the point has its row, nothing
 * reads it again; a model added to the plan later solves it again). */
void samples_drop_solution(const samples_state *s, const point *pt, const method *m);
/* "sgd:lr=0.01,batch=50,epochs=100,constant": how a model was trained (rows' trainer column). */
void samples_trainer_label(const atf_train_settings *t, char *buf, size_t len);
/* A model trained by gradient descent from θ0 with the configuration's protocol. */
atf_error samples_run_sgd(samples_state *s, point *pt, const method *m, char *err);

/* ---- samples_report.c ---- */
/* The sample complexity (with error thresholds) and the network's kernel alignments (with an
 * alignment) from every recorded row of the methods ms at the sizes ns: their CSV files and
 * figures in OUT, and (unless JSON is asked for) a Markdown table on report (may be NULL). */
atf_error samples_report(const samples_plan *pl, const atf_rowstore *st, const method *ms,
                         int nm, const double *ns, int nn, FILE *report, char *err);

#endif
