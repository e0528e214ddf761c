/* path_internal.h — what the regularisation path's files share: path.c (configuration, splits,
 * the solves and their rows) and path_report.c (the best λ, the figure, the report). Not
 * installed. */
#ifndef ATF_PATH_INTERNAL_H
#define ATF_PATH_INTERNAL_H

#include "exp_internal.h"

/* One split the λ are scored on, as this process holds it: alone the whole split; under ranks
 * a shard of it (its factored rows of examples first … first + count − 1, and the y, f0 and
 * labels of all N), or nothing (held NULL: the split has fewer chunks than there are ranks). */
typedef struct {
    const atf_problem *held; /* NULL: none of it here, or no such split */
    int N;                   /* the split's examples (0: no such split) */
    int first, count;        /* the examples held */
} path_split;

typedef struct {
    const atf_path_config *cfg;
    const atf_exp_ranks *ranks; /* several processes share the examples (NULL: this one
                                   alone; docs/experiments.md "The λ path over processes") */
    atf_problem *prob;       /* the problem file, with the penalty override; under ranks this
                                process's shard of it (with validation: the file rows that
                                cover its fitted examples, their rows released once fit is
                                made; r, y, f0 and labels are always whole) */
    atf_problem *fit;        /* what is solved: prob itself, or (validation) its fitted
                                examples with a copy of the test split (under ranks a shard of
                                them, by the solver's cut, without the test split) */
    atf_problem *val;        /* the validation examples (under ranks this process's shard of
                                them, NULL if it holds none); NULL: scored on the test split */
    atf_problem *test;       /* under ranks: this process's shard of the test split (NULL:
                                none held, or none); alone the test split is prob's */
    int validating;          /* scored on validation examples (else on the test split) */
    int *fit_idx, nfit;      /* under ranks with validation: the fitted examples' rows of the
                                file, ascending (fit.h5 is copied from the file by them) */
    path_split train, valid, tested; /* the three scored splits as held here */
    int stopped;             /* stopped through io.interrupt (agreed by every rank) */
    char split[128];         /* "test" or "validation:fraction=F,seed=S,examples=K" */
    char penalty[ATF_ROW_VALUELEN]; /* the penalty solved with, as recorded in the rows */
    char solver[ATF_ROW_VALUELEN];  /* method, tol and iteration limit asked for */
    char fingerprint[ATF_FINGERPRINT_LEN]; /* the problem file's content */
    char csv[1100], jsonl[1100];
    atf_rowstore *store;
    atf_result *warm;        /* the last result solved in this run: the next λ's start */
    char warm_key[32];       /* its λ */
    int ran;                 /* rows this run added */
    double t0;               /* start of the run */
} path_state;

/* The column a path is judged by: "val_" or "test_" + "xent" (xent) or "error" (squared). */
void atf_path_criterion_column(const path_state *s, char *col, size_t len);

/* The best row of the table (best->found = 0 when no row has a finite criterion). */
void atf_path_best_of(const path_state *s, atf_path_best *best);

/* OUT/path.{svg,png}: error and cross-entropy against λ, the best λ marked. A failure is a
 * warning on io.log (the rows are the record). */
atf_error atf_path_figure(const path_state *s, const atf_path_best *best, char *err);

/* A Markdown table of the rows (descending λ) and the best λ on io.report, or one JSON line. */
void atf_path_report(const path_state *s, const atf_path_best *best);

#endif
