/* atf_result.h — solutions of problem (16) and their files (docs/math.md §5–6, docs/formats.md).
 *
 * A result holds per block the solution B, its singular values d (descending) and the Theorem 2
 * factors s1, σ, s2 (eq. 15), plus the run's status and certificates. The solver fills it; the
 * file functions read and write it. Ownership: atf_result_free releases everything. */
#ifndef ATF_RESULT_H
#define ATF_RESULT_H

#include "atf_error.h"
#include "atf_problem.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Room for a method's or a linear-system backend's name, with its terminating NUL. */
#define ATF_METHOD_NAMELEN 24

/* How a solve ended. Every status comes with a result (the solver returns ATF_OK and the
 * result; errors are failures only): solved; max_iterations (the last iterate); infeasible (the
 * least-squares point); interrupted (the last iterate); numerical_error (the least-squares
 * point, when an iteration broke down). */
typedef enum {
    ATF_STATUS_SOLVED = 0,
    ATF_STATUS_MAX_ITERATIONS,
    ATF_STATUS_INFEASIBLE,
    ATF_STATUS_INTERRUPTED,
    ATF_STATUS_NUMERICAL_ERROR
} atf_status;

/* "solved", "max_iterations", "infeasible", "interrupted", "numerical_error" */
const char *atf_status_name(atf_status s);
atf_error atf_status_parse(const char *name, atf_status *s);

/* The global block structure a result was solved with (file attribute `structure`). */
typedef enum {
    ATF_GLOBAL_LAYER = 0, /* each block as in the file (matrix or diagonal)     */
    ATF_GLOBAL_DIAGONAL,  /* every parameter its own 1×1 block (Appendix A.1)   */
    ATF_GLOBAL_FULL       /* all parameters one vector block (Theorem 1)        */
} atf_global_structure;

/* "layer", "diagonal", "full"; "unknown" outside the enum. */
const char *atf_structure_name(atf_global_structure s);
/* ATF_OK and *s set, or ATF_E_INPUT (no message: the caller names the item) for any other text. */
atf_error atf_structure_parse(const char *name, atf_global_structure *s);

/* How a block's factors are laid out (file attribute `factors`):
 * - SPECTRAL (matrix blocks): k = min(rows, cols) singular values d (descending) of B with U, V.
 * - ENTRYWISE (diagonal structure: every entry its own 1×1 block): k = rows·cols, d_j = |B_j| in
 *   row-major entry order (not sorted, so that entry j keeps its own s1_j, σ_j, s2_j); U, V NULL.
 * - VECTOR (global `full` structure: all parameters one vector block): k = 1, d = ‖(B_1..B_L)‖₂
 *   over all blocks, and every block repeats the same d, s1, σ, s2; U, V NULL. */
typedef enum {
    ATF_FACTORS_SPECTRAL = 0,
    ATF_FACTORS_ENTRYWISE,
    ATF_FACTORS_VECTOR
} atf_factor_layout;

typedef struct {
    char name[ATF_NAMELEN];
    int rows, cols;
    char penalty_spec[ATF_PENALTY_SPECLEN];
    double *B;      /* [rows × cols] row-major */
    atf_factor_layout layout; /* see above; SPECTRAL unless the structure says otherwise */
    int k;          /* length of the four vectors below: min(rows, cols) for SPECTRAL */
    double *d;      /* singular values of B, descending */
    double *s1;     /* left factor singular values (M̂1 = U S1 Uᵀ) */
    double *sigma;  /* Ŵ singular values, σ = d / (s1 s2) */
    double *s2;     /* right factor singular values (M̂2 = V S2 Vᵀ) */
    double *U;      /* [rows × k] left singular vectors of B (optional in files, NULL if absent) */
    double *V;      /* [cols × k] right singular vectors of B (optional, NULL if absent) */
} atf_result_block;

/* The solver's report on a run (as SCS's ScsInfo / OSQP's OSQPInfo, kept apart from the
 * solution): how it ended, its residuals and certificate, its work and its time. */
typedef struct {
    atf_status status;
    char method[ATF_METHOD_NAMELEN]; /* the method that computed it ("admm", "newton", ...; the
                                     solver's table, atf_solver.h:
                                     atf_method_info_of) */
    char linsys[ATF_METHOD_NAMELEN]; /* the backend of the linear systems with A Aᵀ it solved:
                                     "cholesky", "eigen", "cholmod", "pcg", "dist-cholesky",
                                     "dist-eigen"; "" when it solved none (matrix-free) */
    double objective;             /* Σ_ℓ Ω̃_ℓ(B_ℓ), plus the loss value for penalized losses */
    int iterations;
    double primal_residual;       /* ‖X − Z‖ at exit */
    double dual_residual;         /* ρ‖Z − Z_prev‖ at exit */
    double constraint_residual;   /* ‖A vec B − r‖ / ‖r‖ */
    double stationarity;          /* relative distance of ∇Ω̃(B) from range(Aᵀ) */
    double ls_residual;           /* least-squares residual ‖A x_ls − r‖/‖r‖ (infeasible runs) */
    /* Penalized losses (`loss` of the result is not "interpolate"): objective = loss_value +
     * penalty_value. NaN where they do not apply (interpolation has no loss value). */
    double loss_value;            /* L(f0 + A vec B) of the loss spec, in the problem's units */
    double penalty_value;         /* Σ_ℓ Ω̃_ℓ(B_ℓ) (interpolation: the objective itself) */
    double pg_residual;           /* FISTA, Newton: relative proximal-gradient residual at the
                                     answer */
    double duality_gap;           /* FISTA, Newton, convex penalties: (F − dual bound)/|F| */
    /* Work of the matrix-free methods (FISTA, Newton, ALM, CG); -1 where not counted. */
    int operator_passes;          /* applications of A or of Aᵀ (each one pass over the data) */
    int inner_iterations;         /* CG steps (Newton, ALM, CG) */
    int fallback_steps;           /* Newton steps replaced by proximal-gradient steps */
    char method_note[256];        /* why this method (auto) and what it fell back to; "" none */
    double solve_seconds;
    double setup_seconds, projection_seconds, prox_seconds, other_seconds;
} atf_info;

/* A result: the solution (per block B and its factors) and, apart from it, the solver's info,
 * then the provenance of the run. */
typedef struct {
    atf_global_structure structure; /* layer, diagonal or full: how the blocks are laid out */
    int nblocks;
    atf_result_block *blocks;     /* the solution */
    atf_info info;                /* the solver's report */
    /* Provenance and the run's settings (docs/formats.md "Provenance"); "" / NaN / -1 mean "not
     * recorded" (files of earlier versions, results built in code) and are not written. */
    char problem_fingerprint[ATF_FINGERPRINT_LEN]; /* the fingerprint of the problem solved */
    char loss[64];                 /* loss spec, e.g. "interpolate" (the constraints hold
                                      exactly); as long as problems/atf_loss.h's specs */
    char penalty_override[ATF_PENALTY_SPECLEN]; /* the penalty override (atf
                                                  solve --penalty), "" if the file's were used */
    double tol, eps_abs, rho, alpha;
    int max_iter, reduce, adaptive_rho;
    char atf_version[32];
    char command[ATF_COMMANDLEN];
} atf_result;

/* Allocate a result with blocks shaped like prob's (B zeroed, vectors allocated; diagonal-
 * structure blocks get the ENTRYWISE layout), method and linsys "" (the solver sets them) and
 * structure LAYER. NULL on NOMEM. */
atf_result *atf_result_alloc(const atf_problem *prob);
void atf_result_free(atf_result *res);

/* Fill d, s1, σ, s2 (and U, V) of every block from its B and its penalty (thin SVD + eq. 15):
 * the result block's penalty spec when set (what it was solved with), else the problem's. The layout follows res->structure (FULL → VECTOR, DIAGONAL → ENTRYWISE) and
 * each block's structure; vectors are reallocated when k changes. Errors: ATF_E_INPUT if res
 * does not fit prob, ATF_E_NUMERICAL for non-finite B or an SVD failure, ATF_E_USAGE for
 * `full` with differing penalties (one vector block has one penalty), ATF_E_NOMEM. */
atf_error atf_result_factors(atf_result *res, const atf_problem *prob, char *err);

/* Files: atomic write; the reader validates format, version, shapes and finiteness of the
 * arrays (the scalar metrics may be NaN, meaning "not computed"). */
atf_error atf_result_write(const char *path, const atf_result *res, char *err);
atf_error atf_result_read(const char *path, atf_result **out, char *err);

/* Whether a result was computed from this problem, by fingerprint: ATF_OK when they agree;
 * ATF_E_INPUT naming both files when they differ; ATF_OK with a one-line note (what is missing)
 * when the result records no problem fingerprint (an earlier atf wrote it). note (ATF_ERRLEN
 * bytes) is "" when there is nothing to say. */
atf_error atf_result_match(const atf_result *res, const char *res_path, const atf_problem *prob,
                           const char *prob_path, char *note, char *err);

/* A one-line note when a problem file's stored fingerprint differs from its content (the file
 * was edited after atf wrote it; its content's fingerprint is what results record and are
 * checked against), else "". note: ATF_ERRLEN bytes. */
void atf_problem_note(const atf_problem *prob, const char *prob_path, char *note);

/* Check that a result fits a problem (same block names and shapes); for --warm and kernels.
 * res_name and prob_name (usually the file names; NULL: "result", "the problem") name the two
 * in the message, e.g. "r.h5: /blocks: block 0 is 'W2' but p.h5's block 0 is 'W1'". */
atf_error atf_result_check(const atf_result *res, const atf_problem *prob, const char *res_name,
                           const char *prob_name, char *err);

#ifdef __cplusplus
}
#endif

#endif
