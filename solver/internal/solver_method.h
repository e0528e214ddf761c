/* solver_method.h — private to solver/: a method as one unit. Not installed.
 *
 * Every method is one row of the table in methods.c: its public description (atf_method_info:
 * name, the losses it solves, whether it resumes, runs over processes, is matrix-free, takes a
 * warm start, solves linear systems with A Aᵀ), what atf_solver_init builds for it, and one
 * `run` function with one signature. Dispatch, the settings' checks, the result's name, the
 * status lines and the command line's lists read the table; nothing else says what a method
 * can do.
 *
 * A run is given its budget (atf_sv_budget) as an argument: the settings' limits when the user
 * asked for the method, a host method's own when it runs another (newton hands FISTA the
 * iterations it has left, the augmented Lagrangian gives its Newton subproblems theirs). A run
 * never writes to the solver's settings. */
#ifndef ATF_SOLVER_METHOD_H
#define ATF_SOLVER_METHOD_H

#include "solver_internal.h"

/* What a run may spend and must reach. */
typedef struct atf_sv_budget {
    int max_iter;  /* iterations: ADMM iterations, Newton steps, Krylov steps, outer steps */
    double eps;    /* the relative tolerance of its stopping test (settings.eps_rel) */
    int verbose;   /* its iteration table goes to the log */
    int log_every; /* a table row every this many iterations */
} atf_sv_budget;

/* The settings' budget (a run the user asked for). */
atf_sv_budget atf_sv_budget_of(const atf_settings *set);

/* What atf_solver_init builds for a method before its run. */
typedef enum {
    ATF_SV_DATA_PROJECTION = 0, /* rows equilibrated, the linear system A'A'ᵀ set up (a
                                   factorisation or PCG), the least-squares point and the
                                   consistency of r decided (admm, lp, baseline, irls) */
    ATF_SV_DATA_KRYLOV,         /* rows equilibrated, the PCG state as the linear system; the
                                   run decides consistency (cg) */
    ATF_SV_DATA_ROWS,           /* rows equilibrated, matrix-free (alm) */
    ATF_SV_DATA_PENALIZED       /* the variable unit only, the loss checked against the
                                   problem, matrix-free (newton, fista) */
} atf_sv_data;

/* What a method reports at its iteration limit, for the status line. */
typedef enum {
    ATF_SV_AT_LIMIT_RESIDUALS = 0, /* primal and dual residuals (admm, lp, baseline) */
    ATF_SV_AT_LIMIT_PG,            /* the proximal-gradient residual (newton, fista) */
    ATF_SV_AT_LIMIT_STEP,          /* the relative step, in primal_residual (irls) */
    ATF_SV_AT_LIMIT_CONSTRAINT     /* the relative constraint residual, in primal_residual,
                                      and the stationarity (alm) */
} atf_sv_at_limit;

/* Run the method from the solver's state (warm start, resume) to an answer x (work units, n
 * values): fill res->info's status, iterations, residuals and certificates. ATF_OK whenever
 * there is an answer, whatever its status; an error leaves nothing to report. */
typedef atf_error atf_sv_run_fn(atf_solver *s, const atf_sv_budget *b, atf_result *res,
                                double *x, char *err);

typedef struct atf_sv_method {
    atf_method_info info;
    atf_sv_data data;
    /* The only way it solves its systems (AUTO: as the chooser or the settings say): the Gram
     * baseline factorises, cg iterates; settings.linsys asking for the other is refused. */
    atf_linsys_kind linsys_only;
    /* The method's own requirements on the built variables, before the linear system is set
     * up (NULL: none): lp takes the diagonal structure with the nuclear penalty only. */
    atf_error (*check_vars)(const atf_solver *s, char *err);
    /* What the method derives from the built data once, at init, into s->method_data (NULL:
     * nothing): admm's ρ0 and the units of its tolerances. */
    atf_error (*prepare)(atf_solver *s, char *err);
    atf_sv_run_fn *run;
    atf_sv_at_limit at_limit;
    const char *breakdown_returns; /* what a numerical breakdown hands back (status line) */
    /* The status line of a result that is not solved, where the method says more than the
     * solver's own lines (NULL, or 0 returned: the solver's). */
    int (*status_text)(const atf_solver *s, const atf_result *res, char *err);
} atf_sv_method;

/* The names of the methods whose row `keep` accepts (ctx passed on), in the table's order,
 * joined as "a, b <conj> c" into buf (len bytes), for the messages that list them. */
typedef int atf_sv_method_keep(const atf_method_info *info, const void *ctx);
void atf_sv_method_list(atf_sv_method_keep *keep, const void *ctx, const char *conj, char *buf,
                        size_t len);

/* The row of method m (never AUTO: resolved before). NULL outside the table. */
const atf_sv_method *atf_sv_method_of(atf_method m);

/* ADMM's prepare: ρ0 = settings.rho · max(data scale, 2μ), μ the weak-convexity modulus of the
 * penalties over the range of the least-squares point's singular values, and the units of its
 * tolerances. */
atf_error atf_sv_admm_prepare(atf_solver *s, char *err);

/* The runs of the rows, one per method file (declared here so that the compiler checks each
 * definition against atf_sv_run_fn). */
atf_sv_run_fn atf_sv_admm_run, atf_sv_lp_run, atf_sv_baseline_run, atf_sv_fista_run,
    atf_sv_irls_run, atf_sv_newton_run, atf_sv_alm_run, atf_sv_cg_run, atf_sv_factored_run;

/* The factored method's requirements: the layer structure, every penalty with a factor form
 * (factored.c). */
atf_error atf_sv_factored_check(const atf_solver *s, char *err);

/* The cg method's status lines (cg.c). */
int atf_sv_cg_status_message(const atf_solver *s, const atf_result *res, char *err);


#endif
