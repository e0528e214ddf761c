/* atf_solver.h — solve problem (16): min Σ_ℓ Ω̃_ℓ(B_ℓ) s.t. Σ_ℓ A_ℓ vec B_ℓ = r (docs/math.md),
 * or its penalized form min Σ_ℓ Ω̃_ℓ(B_ℓ) + L(f0 + A vec B) with settings.loss (atf_loss.h).
 *
 * SCS/OSQP style: fill an atf_settings (start from atf_settings_default), create a solver with
 * atf_solver_init (it validates, equilibrates the data by exact powers of two so that units do
 * not matter, reduces factored blocks to their exact subspace cores and factorises the
 * projection once), call atf_solver_solve as often as wanted, then
 * atf_solver_free. The settings are plain data; what a run is given besides them (where verbose
 * output goes, a warm start, a stop flag) is an optional atf_hooks. The solver never prints
 * unless settings.verbose is set (then it passes its iteration table to hooks.log, default
 * stderr). The solution (the blocks) and the solver's report (atf_info: status, residuals,
 * certificate, timings) come back in one atf_result as res->blocks and res->info. */
#ifndef ATF_SOLVER_H
#define ATF_SOLVER_H

#include <signal.h>
#include <stdio.h>

#include "atf_error.h"
#include "atf_loss.h"
#include "atf_problem.h"
#include "atf_result.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The methods (docs/solver.md, "Methods"). What each solves and may do is one row of the
 * solver's method table (atf_method_info_of); a result names the one that ran (atf_info.method).
 * The values are stable: a new method takes the next one. */
typedef enum {
    ATF_METHOD_AUTO = -1, /* the solver picks one of the methods, once, in atf_solver_init     */
    ATF_METHOD_ADMM = 0, /* Douglas–Rachford ADMM with over-relaxation (interpolation)          */
    ATF_METHOD_LP,       /* exact GLPK LP: diagonal structure + nuclear penalty only            */
    ATF_METHOD_BASELINE, /* NTK min-norm interpolant (Theorem 1) by a factorisation of A Aᵀ     */
    ATF_METHOD_FISTA,    /* accelerated proximal gradient on a penalized loss                   */
    ATF_METHOD_IRLS,     /* alternating adapted-kernel regression (interpolation)               */
    ATF_METHOD_NEWTON,   /* semismooth Newton-CG on a penalized loss (matrix-free)              */
    ATF_METHOD_ALM,      /* augmented Lagrangian for interpolation (matrix-free)                */
    ATF_METHOD_CG,       /* NTK min-norm interpolant by preconditioned Krylov steps on A Aᵀ     */
    ATF_METHOD_FACTORED  /* a penalized loss with every block as U Vᵀ (matrix-free)             */
} atf_method;

/* How a method treats a warm start (hooks.warm). */
typedef enum {
    ATF_WARM_IGNORED = 0, /* its answer does not depend on a start (baseline, cg, lp) */
    ATF_WARM_TAKEN = 1,   /* it starts there                                          */
    ATF_WARM_REFUSED = 2  /* it refuses one (irls: its monotone path starts at the
                             minimum-norm interpolant)                                */
} atf_warm_use;

/* How a method runs when the examples are spread over processes (hooks.processes). */
typedef enum {
    ATF_PROCS_NEVER = 0,  /* one process only                                              */
    ATF_PROCS_ALWAYS,     /* through products with the held examples, summed exactly        */
    ATF_PROCS_GRAM        /* where the command can spread the M × M Gram (atf_processes.gram) */
} atf_procs_use;

/* One row of the method table: what a method solves and may do. Static data, never freed. */
typedef struct {
    atf_method method;
    const char *name;        /* as in files, JSON and on the command line: "admm", ... */
    const char *summary;     /* one line: what it is and when it is the one to use */
    int interpolation;       /* solves the interpolation problem (loss interpolate) */
    int penalized;           /* solves the penalized losses (squared, xent) */
    int baseline;            /* computes the NTK min-norm interpolant (settings.baseline) */
    int resumable;           /* keeps and resumes checkpoints (hooks.checkpoint, hooks.resume) */
    int matrix_free;         /* works through products with A and Aᵀ only: never an M × M
                                matrix; its work is counted in passes over the data */
    int linsys;              /* solves linear systems with A Aᵀ (atf_info.linsys names how) */
    atf_warm_use warm;
    atf_procs_use processes;
} atf_method_info;

/* The table has a row for every method m = 0 … atf_method_count() − 1, in the order of
 * atf_method (ATF_METHOD_AUTO, which stands for one of them, has none). */
int atf_method_count(void);
/* The row of method m; NULL for ATF_METHOD_AUTO and values outside the enum. */
const atf_method_info *atf_method_info_of(atf_method m);
/* The method's name ("auto" for ATF_METHOD_AUTO; "unknown" outside the enum). */
const char *atf_method_name(atf_method m);
/* ATF_OK and *m set for a method's name or "auto"; ATF_E_INPUT (no message: the caller names
 * the item) for any other text. */
atf_error atf_method_parse(const char *name, atf_method *m);

/* How the linear systems with A Aᵀ are solved (the projection of admm, irls and lp, the Gram
 * baseline; docs/solver.md, "Linear systems"). The result names the backend that ran
 * (atf_info.linsys). */
typedef enum {
    ATF_LINSYS_AUTO = 0, /* the chooser: a factorisation where the Gram fits memory_fraction of
                            the available memory (one solve: up to gram_max_rows rows), else
                            PCG (repeated solves: where the single-precision Gram fits) */
    ATF_LINSYS_DIRECT,   /* factorise A Aᵀ: CHOLMOD for all-sparse operators, else the dense Gram
                            by Cholesky, or by its eigendecomposition where it is singular or
                            too ill-conditioned; spread over processes under mpirun */
    ATF_LINSYS_PCG       /* preconditioned CG on A Aᵀ, which is never formed (precond) */
} atf_linsys_kind;

/* "auto", "direct", "pcg"; NULL outside the enum. */
const char *atf_linsys_kind_name(atf_linsys_kind k);
/* ATF_OK and *k set, or ATF_E_INPUT (no message) for any other text. */
atf_error atf_linsys_kind_parse(const char *name, atf_linsys_kind *k);

/* The preconditioner of PCG on A Aᵀ (docs/solver.md, "Linear systems"). */
typedef enum {
    ATF_PRECOND_AUTO = 0,     /* gram32 for a projection solved every iteration (admm),
                                 nystrom-block for one solve (the cg baseline) */
    ATF_PRECOND_NONE,         /* plain CG */
    ATF_PRECOND_JACOBI,       /* per example the exact C × C diagonal block */
    ATF_PRECOND_NYSTROM,      /* F Fᵀ + μI, F from randomly pivoted Cholesky */
    ATF_PRECOND_NYSTROM_BLOCK,/* F Fᵀ + the C × C blocks of the residual (+ a shift) */
    ATF_PRECOND_GRAM32        /* the whole A Aᵀ (+ a shift) in single precision, Cholesky-
                                 factored (2·M² bytes; one process) */
} atf_precond;

/* "auto", "none", "jacobi", "nystrom", "nystrom-block", "gram32"; NULL outside the enum. */
const char *atf_precond_name(atf_precond p);
/* ATF_OK and *p set, or ATF_E_INPUT (no message) for any other text. */
atf_error atf_precond_parse(const char *name, atf_precond *p);

typedef struct {
    atf_method method;     /* AUTO (default: the solver picks, docs/solver.md "Choosing the
                              method"); interpolation: ADMM, ALM, LP, BASELINE, CG or IRLS;
                              a penalized loss: NEWTON, FISTA or FACTORED */
    atf_loss loss;         /* interpolate (default), squared:lambda=λ or xent:lambda=λ */
    atf_global_structure structure;
    int max_iter;          /* default 10000 */
    double eps_abs;        /* default 1e-8, in data units: multiplies ‖x_ls‖ (√n × RMS entry of the
                              least-squares point) in the primal test, × the curvature in the dual */
    double eps_rel;        /* default 1e-6 (`atf solve --tol` sets this) */
    double alpha;          /* over-relaxation, default 1.6 */
    double rho;            /* multiplier of the data-scaled initial penalty parameter
                              ρ0 = rho·⟨∇Ω̃(B0), B0⟩/‖B0‖² at the least-squares point B0;
                              default 1 (docs/record/solver.md §6) */
    int adaptive_rho;      /* residual balancing, default 1 */
    int reduce;            /* exact subspace reduction of factored blocks, default 1 */
    int verbose;           /* iteration table on log, default 0 */
    int log_every;         /* table row every k iterations, default 50 */
    int baseline;          /* 1: the NTK min-norm interpolant (Theorem 1) instead of problem (16);
                              method AUTO picks the Gram (ATF_METHOD_BASELINE) or CG, default 0 */
    int newton_rank;       /* rank of the Nyström preconditioner of method NEWTON (and of ALM's
                              subproblems), 0 … 2000 (0: none), or −1 (default): auto, rank
                              100 (xent) or 300 (squared) from N = 4 000 examples on, none
                              below (docs/record/solver.md §15) */
    double continuation;   /* method NEWTON from a warm start solved at another λ (hooks.warm's
                              loss, same kind) with a nonconvex penalty: the largest ratio of
                              consecutive λ, the bridges between solved to a pg residual of
                              1e-3 first; default 2; 0 (or 1): none (docs/record/solver.md §15) */
    atf_linsys_kind linsys;/* how the systems with A Aᵀ are solved; default AUTO */
    atf_precond precond;   /* PCG's preconditioner; default AUTO */
    double memory_fraction;/* a factorisation (the Gram in double, or gram32's in single
                              precision) may take this fraction of the available memory;
                              default 0.75, in (0, 1] */
    int gram_max_rows;     /* one solve (the baseline under auto) factorises the Gram up to this
                              many rows; above it CG is the faster (measured); default 10000;
                              0: no bound */
} atf_settings;

atf_settings atf_settings_default(void);

/* A solver's state in the middle of a long solve (the resumable methods: atf_method_info), kept so
 * that the solve can go on after an interruption: the solver hands it to hooks.checkpoint and
 * takes it back as hooks.resume. The state is opaque outside the solver; key
 * names what it belongs to (the method, the problem's fingerprint, the loss, the penalties and
 * the settings that shape the iterates), and a solver resumes only a state of its own key. */
#define ATF_CHECKPOINT_KEYLEN 1024
typedef struct {
    char key[ATF_CHECKPOINT_KEYLEN];
    int64_t len;  /* doubles in data */
    double *data; /* owned by whoever filled it (atf_checkpoint_read: the caller, freed by
                     atf_checkpoint_free) */
} atf_checkpoint;

/* Checkpoint files (docs/formats.md "Checkpoints"): atomic write; the reader checks the format,
 * the version and that every number of the state is finite. */
atf_error atf_checkpoint_write(const char *path, const atf_checkpoint *cp, char *err);
atf_error atf_checkpoint_read(const char *path, atf_checkpoint *cp, char *err);
void atf_checkpoint_free(atf_checkpoint *cp);
/* A solver's checkpoint hook (atf_hooks.checkpoint) that writes every state to one file:
 * ctx is an atf_checkpoint_file; on failure it returns nonzero with the reason in err. */
typedef struct {
    const char *path;
    char err[ATF_ERRLEN];
} atf_checkpoint_file;
int atf_checkpoint_to_file(void *ctx, const atf_checkpoint *state);
/* The message of a solve that returned e while writing its checkpoints to sink (resumed: it
 * started from the state in sink->path): the writer's own reason when the file could not be
 * written; the file named, and what to do, when its state was refused (ATF_E_INPUT or
 * ATF_E_USAGE); else err (ATF_ERRLEN bytes) as it is. */
void atf_checkpoint_explain(const atf_checkpoint_file *sink, int resumed, atf_error e, char *err);

/* A preconditioner's factor kept on disk beside a long solve (atf_hooks.precond_file;
 * docs/formats.md "Preconditioner files"), so that a solve resumed from a checkpoint reads it
 * instead of building it again (gram32 at M = 80 000: 12.8 GB, most of an hour to form and
 * factor). key names what it belongs to, as a checkpoint's key does; meta holds the numbers the
 * factor comes with (gram32: its shift and the Gram's trace). */
#define ATF_PRECOND_META 4
typedef struct {
    char key[ATF_CHECKPOINT_KEYLEN];
    int64_t len;  /* floats in data */
    float *data;  /* the caller's, never freed here */
    double meta[ATF_PRECOND_META];
} atf_precond_state;
/* Atomic write (the file is complete or absent); every number must be finite. */
atf_error atf_precond_write(const char *path, const atf_precond_state *pc, char *err);
/* Into pc->data (pc->len floats, the caller's) and pc->meta, when the file's key is pc->key and
 * its length pc->len; ATF_E_INPUT naming the file and what differs otherwise, as for a damaged
 * file (format, version, non-finite values). */
atf_error atf_precond_read(const char *path, atf_precond_state *pc, char *err);

/* Where verbose output goes: called with pieces of the iteration table (each ends a line or
 * continues the previous piece), in the thread that called atf_solver_init/atf_solver_solve. */
typedef void (*atf_log_fn)(void *ctx, const char *text);

/* What a solve has reached, for a progress display (hooks.progress). The run is done when
 * measure ≤ tolerance (both in the method's own units: Newton's, FISTA's and factored's
 * proximal-gradient residual, CG's relative residual; ADMM's and the augmented Lagrangian's
 * largest ratio of a residual to its tolerance, against 1). */
typedef struct {
    const char *method;   /* the method now running (after a hand-over, the one handed to) */
    int iteration;        /* its steps so far (Newton steps, iterations, CG steps) */
    int max_iterations;   /* its limit */
    double measure;       /* NaN until known */
    double tolerance;
    long passes;          /* passes over the data since the solve began */
    double seconds;       /* since the solve began */
} atf_solve_progress;

/* Called from the thread that called atf_solver_solve, at most every 0.1 s while a method
 * steps; a display throttles further as it likes. */
typedef void (*atf_solve_progress_fn)(void *ctx, const atf_solve_progress *p);

/* atf_processes (the processes that share the examples of one problem) is defined in
 * atf_problem.h, beside the cut of the examples into shards. */

/* What a run is given besides its settings; every member optional (zero/NULL: none), nothing
 * owned; everything pointed to must outlive the solver. */
typedef struct {
    atf_log_fn log;        /* verbose output; NULL → stderr */
    void *log_ctx;         /* passed to log */
    const atf_result *warm;/* warm start (same block shapes as the problem) */
    volatile sig_atomic_t *interrupt; /* when it becomes nonzero the solver stops with status
                                         interrupted and returns the last iterate */
    const atf_processes *processes; /* the problem is a shard of a job spread over processes
                                       (the methods whose row says so: atf_method_info);
                                       NULL: one process */
    /* Checkpoints of a long solve (the resumable methods: atf_method_info; one process;
     * docs/solver.md, "Checkpoints"): once at least checkpoint_seconds (≥ 0) have passed since
     * the start or the last checkpoint, at the top of the next step (Newton's, LSQR's, an ADMM
     * iteration), the solver calls checkpoint(ctx, state) with its state (valid during the
     * call); and once more at the top of the step in which the interrupt flag stops it, so
     * that no finished step is lost. A nonzero return ends the solve with ATF_E_IO. resume: go
     * on from such a state instead of the start (hooks.warm is then not used); ATF_E_INPUT if
     * it is another solve's (its key differs: another problem, loss, penalty or setting). The
     * resumed solve ends where the uninterrupted one would have, with the same iterate, counts
     * and certificates (not the same times). Under processes neither is used (the call refuses
     * resume). */
    int (*checkpoint)(void *ctx, const atf_checkpoint *state);
    void *checkpoint_ctx;
    double checkpoint_seconds;
    const atf_checkpoint *resume;
    /* A file for the preconditioner's factor of a long solve (gram32, which admm's projection
     * by PCG and `cg` with precond gram32 build: 2·M² bytes, most of an hour at M = 80 000).
     * The factor is written there once it is built, and read from there instead of built when
     * the file exists and is this solve's (ATF_E_INPUT if it is another's or damaged). A factor
     * that cannot be written leaves the solve going (the verbose log says why). NULL: none.
     * One process. */
    const char *precond_file;
    atf_solve_progress_fn progress; /* where the solve stands, for a display; NULL: none */
    void *progress_ctx;       /* passed to progress */
} atf_hooks;

typedef struct atf_solver atf_solver;

/* The problem must outlive the solver. Errors: ATF_E_USAGE (method/loss/structure/penalty
 * combination refused, e.g. lp without diagonal+nuclear, fista with interpolate, admm with a
 * penalized loss), ATF_E_INPUT (also a problem that cannot carry the loss: xent without
 * /labels), ATF_E_NOMEM, ATF_E_NUMERICAL. A penalized loss never forms the M × M Gram. */
atf_error atf_solver_init(const atf_problem *prob, const atf_settings *set,
                          const atf_hooks *hooks, atf_solver **out, char *err);

/* Solve. The solver owns its result: whenever a result exists it returns ATF_OK and *out
 * receives it (newly allocated, caller frees), WHATEVER its status: solved, infeasible (the
 * least-squares point), max_iterations and interrupted (the last iterate), numerical_error (the
 * least-squares point). The status is only in (*out)->status; when it is not solved, err (if
 * given) receives a one-line explanation. Any other return is a failure (ATF_E_USAGE,
 * ATF_E_NOMEM, ATF_E_NUMERICAL...) and *out is NULL:
 *     if ((e = atf_solver_solve(s, &res, err))) fail(e, err);
 *     else switch (res->status) { ... } */
atf_error atf_solver_solve(atf_solver *solver, atf_result **out, char *err);

void atf_solver_free(atf_solver *solver);

/* Convenience: init + solve + free (returns as atf_solver_init, then as atf_solver_solve). */
atf_error atf_solve(const atf_problem *prob, const atf_settings *set, const atf_hooks *hooks,
                    atf_result **out, char *err);

/* NTK min-norm baseline (Theorem 1): B = Aᵀ(AAᵀ)⁻¹ r, reported with its objective under the
 * blocks' own penalties, its factors, and its certificates — as atf_solve with settings.baseline
 * and the default settings: by the M × M Gram where it fits the available memory and
 * M ≤ gram_max_rows (method baseline), else by preconditioned CG (method cg). Returns as
 * atf_solve: ATF_OK with status solved, or infeasible when r is not in the range of A. */
atf_error atf_baseline(const atf_problem *prob, atf_result **out, char *err);
/* The same with the solver's hooks (optional, as atf_solve's): the CG path can run for hours
 * (M = 80 000: two), stops at the flag with status interrupted, keeps and resumes checkpoints
 * (the Gram path keeps none and refuses a resume); hooks.log receives the iteration table. It
 * starts from B = 0 whatever the warm start (the min-norm point does not depend on one). */
atf_error atf_baseline_hooks(const atf_problem *prob, const atf_hooks *hooks, atf_result **out,
                             char *err);
/* ---- reporting (formatting only: the library never prints) ---- */

/* The result as one line of JSON into buf: status, method, structure, loss (the spec; null when
 * not recorded), iterations, objective, loss_value, penalty_value, primal_residual,
 * dual_residual, constraint_residual, stationarity, pg_residual, duality_gap, ls_residual,
 * seconds and the time split (setup/projection/prox/other_seconds), and problem_fingerprint
 * when recorded; non-finite numbers are null. */
/* The same as one line of text into buf; returns the length it needs (as snprintf). */
int atf_result_json(const atf_result *res, char *buf, size_t len);

/* Record a run's provenance in its result before it is written: the solver settings, the
 * --penalty override (NULL: none), the command line (NULL: none), and loss "interpolate" unless
 * the result already names its loss. */
void atf_result_record_run(atf_result *res, const atf_settings *set, const char *penalty_override,
                           const char *command);

/* Short human summary (a few lines, newline-terminated): status, objective, residuals,
 * certificate and time. Returns the length snprintf would need. */
int atf_result_summary(const atf_result *res, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
