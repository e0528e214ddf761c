/* linsys.h — private to solver/: the linear systems A'A'ᵀ λ = b of the solver's work problem
 * behind one interface (on the model of SCS's linsys.h), and the one chooser of how to solve
 * them. Not installed.
 *
 * A'A'ᵀ is the M × M Gram of the equilibrated, reduced constraint operator (s->vars over
 * s->work's rows). The projection onto {A'x = r'} (projection.c) and the least-squares point,
 * the stationarity certificate's candidate, and the cg method's steps all solve with it. A
 * backend sets itself up once (a factorisation, or a preconditioner) and then solves as often
 * as asked; every backend is one file:
 *
 *   cholesky.c   the dense Gram, LAPACK's Cholesky (spread over processes: ScaLAPACK's)
 *   eigen.c      the dense Gram's eigendecomposition with a relative cutoff: the
 *                pseudo-inverse of a singular or ill-conditioned Gram, any rank
 *   cholmod.c    all-sparse operators: CHOLMOD's factor of A'A'ᵀ + βI from A' itself
 *   pcg.c        preconditioned CG on A'A'ᵀ, never formed (pcg_precond.c: its preconditioners)
 *   gram.c       the dense Gram that cholesky and eigen factorise: whole in one process, or its
 *                tiles spread over the processes (gram_dist.c)
 *
 * The chooser (linsys.c) owns the memory model and the single `auto` rule, with their
 * thresholds as settings (atf_settings.linsys, precond, memory_fraction, gram_max_rows;
 * docs/solver.md, "Linear systems"): which kind a solve takes, and the backends a direct solve
 * tries in order (projection.c keeps the first whose least-squares point passes).
 *
 * Ownership: atf_linsys_open allocates, atf_linsys_free releases; a backend's state is its own.
 * Failure: setup returns an atf_error with a one-line message; solve cannot fail (a non-finite
 * b gives λ = NaN without calling LAPACK, CHOLMOD or the Krylov loop). Over processes every
 * function is collective and agreed: each process takes the same path. */
#ifndef ATF_LINSYS_H
#define ATF_LINSYS_H

#include "solver_internal.h"

typedef struct atf_linsys atf_linsys;

/* What a system is set up with (projection.c takes them from the settings). */
typedef struct atf_linsys_params_ {
    atf_precond precond;    /* iterative: the preconditioner (AUTO: nystrom-block) */
    double tol;             /* iterative: a solve's relative residual */
    int max_steps;          /* iterative: a solve's steps at most */
    double memory_fraction; /* what a factor may take of the available memory (gram32) */
    double eps_rel;         /* the solve's relative tolerance, named in the keys of kept factors */
    int verbose;            /* the setup's lines go to the log */
} atf_linsys_params;

typedef struct {
    const char *name;  /* atf_info.linsys ("dist-" in front when spread over processes) */
    const char *description; /* for logs: "dense Cholesky", ... */
    int iterative;     /* solves to a tolerance, from a start, and stops at the interrupt flag */
    /* Prepare for the solver's work operators: factorise, or build what the solves need. ATF_OK
     * with ls->usable = 1 when it can serve; ATF_OK with usable = 0 when it cannot serve this
     * problem (a singular or too ill-conditioned Gram for a Cholesky factor, a pivot of
     * CHOLMOD's within its bound of β): the next backend is tried. Any error is final. */
    atf_error (*setup)(atf_linsys *ls, char *err);
    /* λ = (A'A'ᵀ)⁺ b: exactly up to the factorisation's rounding (direct), or to relative
     * residual tol (iterative; tol ≤ 0: the system's own, ls->tol) from the start λ0 = warm
     * (NULL: from 0). b is finite (atf_linsys_solve checks); warm may alias lambda. */
    void (*solve)(atf_linsys *ls, const double *b, const double *warm, double tol,
                  double *lambda);
    void (*free)(atf_linsys *ls);
} atf_linsys_backend;

struct atf_linsys {
    const atf_linsys_backend *backend;
    atf_solver *s;
    int M;
    int usable;        /* setup: the backend serves this problem */
    int spread;        /* the Gram's tiles are spread over processes */
    int rank;          /* numerical rank of A'A'ᵀ (−1: not known, iterative) */
    double kappa;      /* its estimated condition number (0: not known) */
    double feas_tol;   /* relative least-squares residual above which r ∉ range(A'): √ε for
                          the full-rank factorisations, from the dropped spectrum for eigen, the
                          solve's tolerance for PCG */
    int refine;        /* the refinement passes a projection through it needs for its answers
                          to be exact to rounding, whatever the factorisation: CHOLMOD's β
                          bias 2; an ill-conditioned dense Gram 1 (ATF_LINSYS_REFINE_KAPPA);
                          else 0 */
    atf_linsys_params par; /* as set up (par.tol: an iterative solve's default tolerance) */
    void *state;       /* the backend's own */
    char name[ATF_METHOD_NAMELEN]; /* the backend's name as the result records it */
};

/* The backends. */
extern const atf_linsys_backend atf_linsys_cholesky, atf_linsys_eigen, atf_linsys_cholmod,
    atf_linsys_pcg;

/* ---- the chooser (linsys.c) ---- */

/* How the systems of a solve are solved. */
typedef enum {
    ATF_LS_PLAN_DIRECT = 0, /* a factorisation: cholmod (all-sparse), cholesky, eigen */
    ATF_LS_PLAN_PCG,        /* preconditioned CG */
    ATF_LS_PLAN_NONE        /* neither fits: the matrix-free augmented Lagrangian instead */
} atf_ls_plan;

/* The single rule (settings.linsys AUTO; DIRECT and PCG are taken as asked): a factorisation
 * where the dense Gram fits settings.memory_fraction of the available memory — for one solve
 * (`repeated` 0: the baseline) only up to settings.gram_max_rows rows, above which CG is the
 * faster; else, where the systems repeat (`repeated` 1: ADMM's projection every iteration),
 * PCG with the single-precision Gram as its preconditioner where that fits, on one process;
 * else PCG for one solve, and none for repeated ones. why (len bytes) receives the reason with
 * its numbers. procs: the examples' processes (NULL: one); collective, the same on every one. */
atf_ls_plan atf_linsys_choose(const atf_problem *prob, const atf_processes *procs,
                              const atf_settings *set, int repeated, char *why, size_t len);

/* Whether the dense Gram (8.7 bytes × M² with its workspace, and the equilibrated copy of the
 * operators) fits `fraction` of the available memory, with `max_rows` rows at most (≤ 0: no
 * bound); over processes each machine holds its share (collective). why as above. */
int atf_linsys_gram_fits(const atf_problem *prob, const atf_processes *procs, double fraction,
                         int max_rows, char *why, size_t len);
/* Whether the single-precision Gram of gram32 (4·M(M+1)/2 bytes, and the operators) fits
 * `fraction` of the available memory; *need_bytes receives what it needs. */
int atf_linsys_gram32_fits(const atf_problem *prob, double fraction, double *need_bytes);
/* The memory this machine has available (bytes; 0 when it cannot tell). */
double atf_linsys_available_bytes(void);

/* The backends a direct plan tries, in order: cholmod (when every var is sparse, in one
 * process), cholesky, eigen. *count receives their number. */
const atf_linsys_backend *const *atf_linsys_direct_candidates(const atf_solver *s, int *count);

/* ---- a system (linsys.c) ---- */

/* The parameters the settings give (precond as asked; AUTO is resolved by the preconditioner:
 * projection.c asks for gram32 where the systems repeat). */
atf_linsys_params atf_linsys_params_of(const atf_settings *set);
/* Open and set up `backend` for the solver's work operators; *out is NULL on error. A system
 * whose backend cannot serve (usable 0) is returned as it is, for the caller to free. */
atf_error atf_linsys_open(atf_solver *s, const atf_linsys_backend *backend,
                          const atf_linsys_params *par, atf_linsys **out, char *err);
/* λ = (A'A'ᵀ)⁺ b as the backend solves it (tol ≤ 0: the system's own; warm: NULL, or a start
 * for an iterative backend); a non-finite b gives λ = NaN. */
void atf_linsys_solve(atf_linsys *ls, const double *b, const double *warm, double tol,
                      double *lambda);
void atf_linsys_free(atf_linsys *ls);

/* The PCG engine of an iterative system (linsys/pcg.h), NULL for a direct one. */
struct atf_sv_cg *atf_linsys_pcg_engine(const atf_linsys *ls);

#endif
