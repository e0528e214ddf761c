/* pcg.h — private to solver/: preconditioned Krylov solves with A'A'ᵀ (pcg.c), the linear-
 * system backend `pcg` and the engine of the cg method (cg.c), and their data-space
 * preconditioners (pcg_precond.c). docs/solver.md, "Linear systems".
 *
 * The NTK baseline B = Aᵀ(AAᵀ)⁻¹r is computed as x = A'ᵀλ with A'A'ᵀλ = r' on the solver's
 * equilibrated work problem (rows and variables scaled by powers of two, factored blocks reduced
 * to their cores: none of it moves the min-norm point). Each step costs one A'ᵀ and one A'
 * product; the M × M Gram is never formed. The preconditioner acts in data space (on λ): a
 * preconditioner in parameter space would change which solution has minimum norm.
 *
 * Ownership: the engine (atf_sv_cg) belongs to its linear system (atf_linsys_open with the
 * backend atf_linsys_pcg; atf_linsys_pcg_engine reaches it); the preconditioner to the engine. */
#ifndef ATF_SOLVER_PCG_H
#define ATF_SOLVER_PCG_H

#include <stdint.h>

#include "solver_method.h"

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

/* The preconditioners are the public atf_precond (atf_solver.h; their names: atf_precond_name).
 * AUTO is resolved when the preconditioner is built: nystrom-block (the measured choice for one
 * solve, docs/solver.md "Linear systems"), or gram32 where the chooser asks for it. */

/* The Krylov method of the main solve: LSQR in the P⁻¹ norm (default), or CG on A'A'ᵀ with
 * x = A'ᵀλ (Craig's method), kept for measurements; both use the same products. */
typedef enum { ATF_CG_KRYLOV_DEFAULT = 0, ATF_CG_KRYLOV_LSQR, ATF_CG_KRYLOV_CRAIG } atf_cg_krylov;

/* Internal options of the CG baseline, for tests and benchmarks (atf_sv_cg_configure). */
typedef struct {
    atf_precond precond;
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

/* ---- pcg_precond.c ---- */
/* The preconditioner state: built lazily by atf_sv_cg_precond_build, applied by
 * atf_sv_cg_precond_apply (out = P⁻¹ v over all M rows; out may not alias v). Over processes
 * (docs/record/solver.md §19) each holds the rows of F and the blocks of its own examples (the rows
 * m0 … m0 + Mh − 1, the examples held by the solver's share; one process holds all), and both
 * functions are collective: every process calls them in the same order and gets the same
 * bits as one process alone. */
typedef struct {
    atf_precond kind;   /* resolved (never DEFAULT) */
    atf_solver *s;         /* whose processes and share of the examples */
    const struct atf_linsys_params_ *par; /* the system's parameters */
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

/* par: the system's parameters (gram32's memory and its kept file's key, the setup's log). */
atf_error atf_sv_cg_precond_build(atf_solver *s, const atf_cg_options *opt,
                                  const struct atf_linsys_params_ *par, atf_cg_pre *pre,
                                  char *err);
void atf_sv_cg_precond_apply(atf_cg_pre *pre, const double *v, double *out);
void atf_sv_cg_precond_free(atf_cg_pre *pre);
/* x ← (L Lᵀ)⁻¹ x for a Cholesky factor L of order M in LAPACK's rectangular full packed storage
 * (TRANSR 'N', UPLO 'L': spftrf's output), as spftrs with one right-hand side computes it, by
 * level-2 BLAS (gram32's application; tests and benchmarks). */
void atf_sv_cg_rfp_solve(int M, const float *rfp, float *x);
/* The default rank of the low-rank part for M rows (memory budget, capped). */
int atf_sv_cg_default_rank(int M, double budget_bytes);

/* ---- pcg.c: the engine ---- */
/* The LSQR state's key tag (the checkpoint key's first words: checkpoint.c). */
#define ATF_CG_LSQR_STATE "lsqr state 1"

struct atf_sv_cg {
    atf_solver *s;
    atf_cg_options opt;
    atf_cg_pre pre;
    int built;              /* pre matches opt */
    const struct atf_linsys_params_ *par; /* the system's parameters */
    double tol;             /* the relative residual of a solve of the backend (projection) */
    int max_steps;          /* ... and its steps at most */
    int M;
    size_t n;
    double *rho, *z, *p, *gp, *tmp, *y, *bs; /* [M] */
    double *bw, *lam0;      /* [M] atf_sv_cg_gram_solve_from: b − A'A'ᵀλ0, and λ0 */
    double *q, *qprev, *w, *xbuf;   /* [n] */
    int total_steps;        /* PCG steps since the last solve began (with the certificate's) */
    atf_cg_report last;     /* the last main solve */
    /* checkpoints of the main LSQR solve (hooks.checkpoint / hooks.resume, one process) */
    char key[ATF_CHECKPOINT_KEYLEN];
    int checkpointing;      /* hooks.checkpoint is called */
    int checkpoint_failed;  /* the caller could not keep a state: the solve ends, ATF_E_IO */
    double last_checkpoint; /* atf_now() at the start, the resume or the last checkpoint */
    double elapsed0;        /* seconds of the solve before its resume (0: none) */
    double start;           /* atf_now() when the main solve began */
    const atf_checkpoint *resume_from; /* the checked state the main solve goes on from, or NULL */
};

/* One PCG solve of A'A'ᵀλ = b. */
typedef struct {
    const double *b;
    double bn, tol;
    int max_steps;
    int log;                /* a table row every `log` steps (0: no table) */
    int lsqr;               /* LSQR in the P⁻¹ norm instead of CG on A'A'ᵀ (no λ then) */
    int main_solve;         /* the baseline's own solve: checkpoints are kept and resumed */
    int shown;              /* the cg method's own solve: hooks.progress follows it */
    double *x;              /* [n] A'ᵀλ (required) */
    double *lam;            /* [M] λ, or NULL */
    /* The certificate's solve: the caller's measure of the candidate x (unscaled into cert_y
     * [n]) is taken every CERT_EVERY steps, and the solve ends once two in a row agree to
     * CERT_SETTLED; the last value in *cert (NAN until measured). NULL: none. */
    double (*cert_measure)(void *ctx, const double *y);
    void *cert_ctx;
    double *cert_y, *cert;
    int exponent;           /* b was scaled by 2^-exponent (set by atf_sv_cg_solve) */
} atf_pcg_job;

/* A solve (job: its right-hand side, tolerance and step limit, CG or LSQR, the main solve's
 * checkpoints, the certificate's test): x (and λ) from 0 — or from the main solve's resumed
 * state —, scaled internally by a power of two so that no scalar overflows; rep reports it. */
void atf_sv_cg_solve(atf_sv_cg *c, const atf_pcg_job *job, atf_cg_report *rep);
/* Build the preconditioner asked for (c->opt) unless built: ATF_OK, or its error (no memory,
 * gram32 that does not fit or is not positive definite). */
atf_error atf_sv_cg_prepare(atf_sv_cg *c, char *err);
/* Whether a checkpoint's state is an LSQR state of this engine's shape, with the right-hand
 * side's exponent (the state's key is checked apart). */
int atf_sv_cg_state_ok(const atf_sv_cg *c, const atf_checkpoint *cp, int exponent);
/* PCG steps taken on the solver's PCG engine so far (0 without one); ADMM reports the difference
 * over its run as inner_iterations. */
int atf_sv_cg_steps(const atf_solver *s);
/* Internal options (preconditioner, rank, seed) before the next solve; ATF_E_USAGE when the
 * solver's linear systems are not solved by PCG. */
atf_error atf_sv_cg_configure(atf_solver *s, const atf_cg_options *opt, char *err);
void atf_sv_cg_free(atf_sv_cg *c);
/* λ ≈ (A'A'ᵀ)⁺ b by PCG to the engine's tolerance (the backend's solve). */
void atf_sv_cg_gram_solve(atf_sv_cg *c, const double *b, double *lambda);
/* The same from λ0 (from; NULL: 0): the correction δ of A'A'ᵀδ = b − A'A'ᵀλ0 (two passes more)
 * to the same tolerance relative to ‖b‖, λ = λ0 + δ. From a λ0 near the answer (ADMM's last
 * projection's, as its iterates settle) it takes fewer PCG steps. from may alias lambda. */
void atf_sv_cg_gram_solve_from(atf_sv_cg *c, const double *b, const double *from,
                               double *lambda);
/* The last main solve's report (tests, benchmarks). */
const atf_cg_report *atf_sv_cg_last(const atf_solver *s);

#endif
