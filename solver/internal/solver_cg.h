/* solver_cg.h — private to solver/: the NTK min-norm baseline by preconditioned CG on A'A'ᵀ
 * (baseline_cg.c) and its data-space preconditioners (cg_precond.c). docs/solver.md §9.1.
 *
 * The baseline B = Aᵀ(AAᵀ)⁻¹r is computed as x = A'ᵀλ with A'A'ᵀλ = r' on the solver's
 * equilibrated work problem (rows and variables scaled by powers of two, factored blocks reduced
 * to their cores: none of it moves the min-norm point). Each CG step costs one A'ᵀ and one A'
 * product; the M × M Gram is never formed. The preconditioner acts in data space (on λ): a
 * preconditioner in parameter space would change which solution has minimum norm. */
#ifndef ATF_SOLVER_CG_H
#define ATF_SOLVER_CG_H

#include <stdint.h>

#include "solver_internal.h"

/* Relative residual ‖A'x − r'‖/‖r'‖ the CG stops at when settings.eps_rel is larger: below the
 * 1.5e-8 every other method must reach before its answer is called solved (solver.c,
 * ANSWER_RESIDUAL_TOL), so that a CG baseline interpolates as the Gram baseline does. */
#define ATF_CG_TOL_MAX 1e-8
/* Relative residual of the inner solve for the stationarity certificate's candidate: any λ gives
 * a valid candidate A'ᵀλ ∈ range(A'ᵀ), the tolerance only decides how close the certificate is
 * to the one of the exact projection (1e-4: the Gram's value to about 1e-6 relative on MNIST,
 * at about half the steps of the main solve). */
#define ATF_CG_CERT_TOL 1e-8
/* Inconsistency: stop when every x with relative residual ≤ tol provably has norm at least this
 * many times the current iterate's (see baseline_cg.c, "The inconsistency certificate"). */
#define ATF_CG_INCONSISTENT_RATIO 1e6
/* The default seed of the randomly pivoted Cholesky (settings have none). */
#define ATF_CG_SEED 20230901u

/* Preconditioners of A'A'ᵀ (docs/solver.md §9.1 has the measurements behind the default). */
typedef enum {
    ATF_CG_PRECOND_DEFAULT = 0, /* the measured choice (ATF_CG_PRECOND_NYSTROM_BLOCK)          */
    ATF_CG_PRECOND_NONE,        /* plain CG                                                     */
    ATF_CG_PRECOND_JACOBI,      /* block Jacobi: per example the exact C × C diagonal block     */
    ATF_CG_PRECOND_NYSTROM,     /* F Fᵀ + μI, F from k steps of randomly pivoted Cholesky        */
    ATF_CG_PRECOND_NYSTROM_BLOCK, /* F Fᵀ + the C × C blocks of the residual AAᵀ − F Fᵀ (+ shift) */
    ATF_CG_PRECOND_GRAM32       /* the whole A'A'ᵀ (+ shift) in single precision, Cholesky-factored
                                   in rectangular full packed storage (2·M² bytes; one process) */
} atf_cg_precond;

/* "default", "none", "jacobi", "nystrom", "nystrom-block", "gram32"; NULL outside the enum. */
const char *atf_cg_precond_name(atf_cg_precond p);
/* ATF_OK and *p set, or ATF_E_INPUT for any other name. */
atf_error atf_cg_precond_parse(const char *name, atf_cg_precond *p);

/* The Krylov method of the main solve: LSQR in the P⁻¹ norm (default), or CG on A'A'ᵀ with
 * x = A'ᵀλ (Craig's method), kept for measurements; both use the same products. */
typedef enum { ATF_CG_KRYLOV_DEFAULT = 0, ATF_CG_KRYLOV_LSQR, ATF_CG_KRYLOV_CRAIG } atf_cg_krylov;

/* Internal options of the CG baseline, for tests and benchmarks (atf_sv_cg_configure). */
typedef struct {
    atf_cg_precond precond;
    atf_cg_krylov krylov;
    int rank;            /* rank k of the low-rank part; 0: from the memory budget */
    double budget_bytes; /* memory for the M × k factor; 0: the default budget */
    double shift_factor; /* μ (nystrom) or the block shift (nystrom-block) as a multiple of
                            the mean residual diagonal; 0: the default */
    uint64_t seed;       /* 0: ATF_CG_SEED */
} atf_cg_options;

/* What a preconditioned CG run did (one solve of A'A'ᵀλ = b). */
typedef enum {
    ATF_CG_CONVERGED = 0, /* relative residual ≤ tol (the true residual, measured again) */
    ATF_CG_INCONSISTENT,  /* b is not in range(A') to working precision (certified)    */
    ATF_CG_LIMIT,         /* step limit                                               */
    ATF_CG_STALLED,       /* the true residual stopped decreasing above tol           */
    ATF_CG_INTERRUPTED,   /* settings.interrupt                                       */
    ATF_CG_BREAKDOWN      /* a non-positive or non-finite curvature pᵀA'A'ᵀp          */
} atf_cg_outcome;

typedef struct {
    atf_cg_outcome outcome;
    int steps;
    int replacements;  /* true-residual checks that replaced the recursive residual */
    double rel_res;    /* ‖b − A'x‖/‖b‖ of the returned point (measured, not recursive) */
    double bound;      /* inconsistency: every x with relative residual ≤ tol has ‖x‖ ≥ bound */
    double xnorm;      /* ‖x‖ */
    double seconds;
} atf_cg_report;

typedef struct atf_sv_cg atf_sv_cg;

/* ---- cg_precond.c ---- */
/* The preconditioner state: built lazily by atf_sv_cg_precond_build, applied by
 * atf_sv_cg_precond_apply (out = P⁻¹ v over all M rows; out may not alias v). Over processes
 * (docs/solver.md §19) each holds the rows of F and the blocks of its own examples (the rows
 * m0 … m0 + Mh − 1, the examples held by the solver's share; one process holds all), and both
 * functions are collective: every process calls them in the same order and gets the same
 * bits as one process alone. */
typedef struct {
    atf_cg_precond kind;   /* resolved (never DEFAULT) */
    atf_solver *s;         /* whose processes and share of the examples */
    int M, N, C;           /* all rows and examples */
    int Mh, Nh, m0;        /* the rows and examples held, from row m0 (example m0 / C) on */
    int k;                 /* rank of F (0: none) */
    double *F;             /* [Mh × k] column-major: the held rows of F, A'A'ᵀ ≈ F Fᵀ on the
                              pivots */
    double *S;             /* [k × k] Cholesky factor (lower) of I + Fᵀ B⁻¹ F */
    double *blk;           /* [Nh × C × C] Cholesky factors (lower, column-major) of the held
                              C × C blocks B_i of the base part, or NULL when B = μI */
    double mu;             /* B = μI when blk is NULL */
    double shift;          /* what was added to the blocks (nystrom-block, jacobi) */
    double trace0, trace_res; /* trace of A'A'ᵀ and of the residual A'A'ᵀ − F Fᵀ */
    float *rfp;            /* gram32: the Cholesky factor of A'A'ᵀ + shift·I, M(M+1)/2 floats in
                              LAPACK's rectangular full packed layout (TRANSR 'N', UPLO 'L') */
    float *v32;            /* gram32: [M] the right-hand side of an application */
    int factored;          /* gram32: the factor is complete (an interrupt can end the build) */
    double *u, *t;         /* workspace [Mh], [2k] */
    double seconds;        /* time to build */
} atf_cg_pre;

atf_error atf_sv_cg_precond_build(atf_solver *s, const atf_cg_options *opt, atf_cg_pre *pre,
                                  char *err);
void atf_sv_cg_precond_apply(atf_cg_pre *pre, const double *v, double *out);
void atf_sv_cg_precond_free(atf_cg_pre *pre);
/* Whether gram32's single-precision Gram of M rows (4·M(M+1)/2 bytes, in *need_bytes) fits 90 %
 * of the available memory. */
int atf_sv_cg_gram32_fits(int M, double *need_bytes);
/* x ← (L Lᵀ)⁻¹ x for a Cholesky factor L of order M in LAPACK's rectangular full packed storage
 * (TRANSR 'N', UPLO 'L': spftrf's output), as spftrs with one right-hand side computes it, by
 * level-2 BLAS (gram32's application; tests and benchmarks). */
void atf_sv_cg_rfp_solve(int M, const float *rfp, float *x);
/* The default rank of the low-rank part for M rows (memory budget, capped). */
int atf_sv_cg_default_rank(int M, double budget_bytes);

/* ---- baseline_cg.c ---- */
/* Method cg at atf_solver_init: the row-equilibrated work problem and its cores, the SVD
 * workspace, the PCG state in s->proj (kind ATF_PROJ_CG, so that the generic projection, the
 * stationarity certificate and the least-squares fallback of solver.c work through CG), and
 * no Gram. Consistency is decided by each solve (s->consistent stays 1). */
atf_error atf_sv_cg_build(atf_solver *s, char *err);
/* Method admm where the Gram does not fit: the work problem as atf_sv_cg_build makes it, the
 * projection by PCG with the gram32 preconditioner (or ATF_CG_PRECOND's), and the least-squares
 * point x_ls (the min-norm interpolant) from it. ATF_E_NUMERICAL when the PCG cannot bring the
 * constraint residual of that point to the check before `solved` (an inconsistent r: the CG
 * baseline, which certifies it, is the method for that question). */
atf_error atf_sv_cg_build_projection(atf_solver *s, char *err);
/* PCG steps taken on the solver's CG state so far (0 without one); ADMM reports the difference
 * over its run as inner_iterations. */
int atf_sv_cg_steps(const atf_solver *s);
/* Internal options (preconditioner, rank, seed) before the next solve; ATF_E_USAGE when the
 * solver was not initialised for method cg. */
atf_error atf_sv_cg_configure(atf_solver *s, const atf_cg_options *opt, char *err);
void atf_sv_cg_free(atf_sv_cg *c);
/* λ ≈ (A'A'ᵀ)⁺ b by PCG to the projection tolerance (gram_solve of projection.c). */
void atf_sv_cg_gram_solve(atf_sv_cg *c, const double *b, double *lambda);
/* The same from λ0 (from; NULL: 0): the correction δ of A'A'ᵀδ = b − A'A'ᵀλ0 (two passes more)
 * to the same tolerance relative to ‖b‖, λ = λ0 + δ. From a λ0 near the answer (ADMM's last
 * projection's, as its iterates settle) it takes fewer PCG steps. from may alias lambda. */
void atf_sv_cg_gram_solve_from(atf_sv_cg *c, const double *b, const double *from,
                               double *lambda);
/* The method: x = A'ᵀλ, A'A'ᵀλ = r' by PCG; fills status, iterations, inner_iterations,
 * operator_passes, primal_residual (the relative constraint residual), stationarity and the
 * method note. */
atf_error atf_sv_baseline_cg(atf_solver *s, atf_result *res, double *x, char *err);
/* The status line of a CG result that is not solved (infeasible, max_iterations, a breakdown);
 * 0 when solver.c's generic message applies. */
int atf_sv_cg_status_message(const atf_solver *s, const atf_result *res, char *err);
/* The last run's report (tests, benchmarks). */
const atf_cg_report *atf_sv_cg_last(const atf_solver *s);
/* Whether a Gram path (the baseline's Cholesky, ADMM's projection) fits this problem: its peak
 * memory ≈ 8.7 bytes × M² (docs/solver.md §14.6) plus the operator arrays against 75% of the
 * available memory, and M ≤ max_m (the baseline's measured crossover with CG; ≤ 0: no bound);
 * why (len bytes) receives the reason with numbers. procs (NULL: one process): the examples are
 * spread over processes, each holding its share of the Gram (none without procs->gram); the
 * processes sharing this machine must fit, and all agree (collective). */
int atf_sv_gram_fits(const atf_problem *prob, const atf_processes *procs, int max_m, char *why,
                     size_t len);
/* The baseline's method under auto: ATF_METHOD_BASELINE (the M × M Gram, exact, any rank) when
 * atf_sv_gram_fits, else ATF_METHOD_CG (docs/solver.md §9.1); why as atf_sv_gram_fits. */
atf_method atf_baseline_method(const atf_problem *prob, const atf_processes *procs, char *why,
                               size_t len);

#endif
