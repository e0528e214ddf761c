/* solver_internal.h — private to solver/: the stacked variable, the projection and the
 * helpers the solver files share. Not installed, not part of the API.
 *
 * The ADMM variable is the concatenation of one "var" per problem block. A var is the block's
 * core: for a factored block that is reduced (docs/math.md §7) it is C with B = Q_c C Q_rᵀ, otherwise
 * B itself. Its operator `op` is an ordinary atf_block (a reduced copy for reduced blocks, a
 * shallow copy of the problem's block otherwise), so the problems/ operators serve both. */
#ifndef ATF_SOLVER_INTERNAL_H
#define ATF_SOLVER_INTERNAL_H

#include <stddef.h>

#include "atf_shard.h"
#include "atf_solver.h"
#include "atf_util.h" /* atf_now */

/* How a var's penalty acts on it. */
typedef enum {
    ATF_SV_SPECTRAL = 0, /* Σ_j ω̃(σ_j(C)) — prox on singular values            */
    ATF_SV_ENTRYWISE,    /* Σ_ab ω̃(|C_ab|) — diagonal structure              */
    ATF_SV_GLOBAL_NORM   /* part of the `full` vector: ω̃(‖all vars‖₂)       */
} atf_sv_kind;

typedef struct {
    const atf_block *orig; /* the problem's block (shape rows_orig × cols_orig) */
    atf_block op;          /* operator on the core; shares arrays with orig unless reduced */
    double *Hred, *Dred;   /* owned reduced factors (H Q_c, D Q_r) or NULL */
    double *Qct;           /* Q_cᵀ [rows × orig rows] row-major, NULL = identity */
    double *Qrt;           /* Q_rᵀ [cols × orig cols] row-major, NULL = identity */
    int rows, cols;        /* core shape */
    size_t off, len;       /* position and length (rows·cols) in the stacked vector */
    atf_sv_kind kind;
    atf_penalty pen;
    /* SVD workspace (spectral matrix vars): the row-major core is read as its column-major
     * transpose, so dgesdd returns V (cols × k) in `u` and Uᵀ (k × rows) in `vt`. */
    int k;                 /* min(rows, cols) */
    double *a, *s, *u, *vt, *work;
    int lwork, *iwork;
    double *s_prox;        /* singular values after the last prox (objective for the log) */
} atf_sv_var;

/* How atf_sv_proj_setup sets the linear system up (projection.c). */
typedef enum {
    ATF_SV_PROJ_DIRECT = 0, /* a factorisation (the chooser's backends in order); the
                               least-squares point, and r's consistency from it */
    ATF_SV_PROJ_PCG,        /* PCG for repeated projections: its preconditioner built now, the
                               least-squares point checked; consistency not decided */
    ATF_SV_PROJ_KRYLOV      /* PCG for the cg method, which decides everything in its run */
} atf_sv_proj_plan;

/* The projection onto {A'x = r'} through the solver's linear system (linsys/linsys.h). */
typedef struct {
    struct atf_linsys *ls; /* NULL: none set up (the matrix-free methods) */
    int M;
    double *s, *lambda;    /* workspace [M] */
} atf_sv_proj;

typedef struct {
    double setup, projection, prox;
} atf_sv_times;

typedef enum {
    ATF_EQ_ROWS = 0, /* every row of A and r by its own power of two */
    ATF_EQ_COMMON,   /* all rows by one power of two (least squares of inconsistent r kept) */
    ATF_EQ_NONE      /* rows as they are, only the variable unit (the penalized losses, whose
                        predictions undo any row scaling: A is then shared, not copied) */
} atf_sv_eq_mode;

/* Which examples of a set of operators this process holds (operator.c): first … first + count − 1,
 * in chunks cuts[0 … ncuts] counted from `first` (atf_shard.h). */
typedef struct {
    int first, count, ncuts;
    int cuts[ATF_SHARD_MAX_CUTS];
} atf_sv_share;

struct atf_solver {
    const atf_problem *prob; /* the caller's problem (results and residuals are reported on it) */
    atf_problem work;        /* its equilibrated copy, which every method solves (equilibrate.c) */
    unsigned char *work_owns;/* per block: which of J, data, H, D `work` owns (EQ_OWN_*); an
                                array the scaling leaves as it is is the problem's own, shared */
    atf_sv_eq_mode eq_mode;  /* how the rows of `work` were scaled */
    int var_exp;             /* B = 2^var_exp · B' between the problem's and the work units */
    int obj_exp;             /* objective = 2^obj_exp × the work problem's (2·var_exp, or
                                var_exp when every block is nuclear: homogeneous of degree 1) */
    atf_settings set;        /* set.method is the method that runs (auto resolved); what the
                                setup and the chooser read, the methods their own settings */
    atf_global_structure structure; /* how the vars are laid out (settings.structure) */
    atf_loss loss;           /* the loss every method solves (settings.loss) */
    atf_hooks hooks;         /* the caller's log, warm start and stop flag (zeroed: none) */
    atf_method requested;    /* the method asked for (may be ATF_METHOD_AUTO) */
    const struct atf_sv_method *method; /* the row of the method that runs (solver_method.h) */
    char note[256];          /* why this method (auto), copied into every result */
    char fingerprint[ATF_FINGERPRINT_LEN]; /* the problem's, for checkpoint keys: its stored
                                one, else computed once ("" until then) */
    int nvars;
    atf_sv_var *vars;
    size_t n;              /* length of the stacked (reduced) variable */
    int64_t n_orig;        /* Σ rows·cols of the problem */
    atf_penalty full_pen;  /* penalty of the `full` structure */
    atf_sv_proj proj;
    double rnorm;          /* ‖r‖ */
    double *x_ls;          /* min-norm least-squares point Aᵀ(AAᵀ)⁺r (stacked) */
    double ls_residual;    /* ‖A x_ls − r‖ / ‖r‖ */
    int consistent;        /* r ∈ range(A) up to feas_tol */
    double *warm;          /* warm start mapped into the cores (stacked), or NULL */
    void *method_data;     /* what the method derived at init (its row's prepare), one
                              allocation the solver frees; NULL: nothing */
    char check[ATF_ERRLEN];/* why a method's answer failed the final check ("" if it passed) */
    long passes;           /* applications of A' or A'ᵀ since the last solve began (operator.c) */
    double *op_work;       /* scratch of the vars' operators, for one pass or a fused Hessian
                              product (operator.c): the larger of max atf_block_work_size and
                              atf_factored_hess_work_size, grown by a wider product */
    int64_t op_work_len;
    const atf_block **op_ptrs; /* [nvars] the vars' operators, and the X and G arrays a fused */
    const double **hess_x;     /* Hessian product hands atf_factored_hess ([nvars] each) */
    double **hess_g;
    double **hess_lo;          /* [nvars] low parts of the G_l over processes (operator.c) */
    /* examples spread over processes (operator.c; docs/solver.md "Several processes"): the
     * problem is a shard, the vars' operators views of the examples held (their N and M the
     * held ones'), every vector over the rows of the problem whole on every process */
    const atf_processes *procs;       /* NULL: one process, everything held */
    atf_sv_share share;               /* the held examples and their chunks */
    double *dd;                       /* dd_len double-double pairs to sum, then dd_len low
                                         parts (operator.c) */
    size_t dd_len;
    atf_sv_times t;
    int loss_weight_exp;   /* the largest |log2| of a penalized loss's row weights κ·s²/λ
                              (pg_loss.c; 0 without one): far from 0, a breakdown is said to be
                              λ's, in the words of the weight check */
    double solve_start;    /* atf_now() when atf_solver_solve began */
    double progress_last;  /* when hooks.progress was last called (−∞: not yet) */
};

/* ---- settings.c (the checks) and util.c (the helpers) ---- */
atf_error atf_sv_settings_check(const atf_settings *set, const atf_hooks *hooks, char *err);
/* Verbose output: formats and passes the text to hooks.log (stderr without one). */
void atf_sv_log(const atf_solver *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Where the solve stands, to hooks.progress (none: nothing): p's method, iteration, limit,
 * measure, tolerance and passes are the caller's, the seconds are filled in here. At most every
 * 0.1 s (a caller's step may take microseconds), the first call always. */
void atf_sv_progress(atf_solver *s, atf_solve_progress p);
/* Whether the caller's stop flag is raised. */
int atf_sv_interrupted(const atf_solver *s);

/* ---- checkpoint.c ---- */
/* Checkpoint keys: what a state belongs to: `state` (the method and its state's
 * version, and any setting of the method's own that shapes the iterates), the problem's
 * fingerprint, the loss, eps, the settings that shape the iterates and every block's penalty
 * (bridge_to: the loss a continuation's stage leads to, or NULL). */
atf_error atf_sv_checkpoint_key(atf_solver *s, const char *state, const atf_loss *loss,
                                double eps, const atf_loss *bridge_to, char *key, char *err);
/* ATF_OK when the checkpoint cp has this solve's key; else ATF_E_INPUT with the message
 * "<method>: the checkpoint is another solve's (…)". */
atf_error atf_sv_checkpoint_is_ours(const char *method, const atf_checkpoint *cp,
                                    const char *key, char *err);
/* Whether a state's count v is a whole number in [0, max]: checked before a resume casts it
 * (a damaged header's 2³¹ would overflow an int). */
int atf_sv_count_ok(double v, double max);

/* ---- small helpers (util.c) ---- */
/* x [n] ← the warm start mapped into the cores, or B = 0 without one (the start of the methods
 * that take a warm start from B = 0). */
void atf_sv_start(const atf_solver *s, double *x);
/* Euclidean norm of n values (0 for n = 0). */
double atf_sv_norm(const double *x, size_t n);
/* 1 if all n values are finite (no NaN, no ±Inf). */
int atf_sv_all_finite(const double *x, size_t n);
/* 1 if every block's penalty (the full structure's one penalty) is convex. */
int atf_sv_all_convex(const atf_solver *s);

/* ---- equilibrate.c ---- */
/* Build s->work: rows of A and r scaled by powers of two to unit size (each row, or all rows by
 * one common factor), the variables by 2^var_exp (penalty scales γ by 2^(−2·var_exp)); exact,
 * see equilibrate.c. atf_sv_equilibrate_free releases it (safe to call twice). */
atf_error atf_sv_equilibrate_mode(atf_solver *s, atf_sv_eq_mode mode, char *err);
/* The same with every row by its own factor (ATF_EQ_ROWS). */
atf_error atf_sv_equilibrate(atf_solver *s, char *err);
void atf_sv_equilibrate_free(atf_solver *s);
/* x ← 2^var_exp x (work units to the problem's) and back; the objective by 2^obj_exp. */
void atf_sv_unscale(const atf_solver *s, double *x, size_t n);
void atf_sv_to_scaled(const atf_solver *s, double *x, size_t n);
double atf_sv_unscale_objective(const atf_solver *s, double objective);
/* Work-unit primal residuals (distances in B), dual residuals (gradients) and ρ in the problem's
 * units, for the result and the iteration table. */
double atf_sv_unscale_primal(const atf_solver *s, double v);
double atf_sv_unscale_dual(const atf_solver *s, double v);
double atf_sv_unscale_rho(const atf_solver *s, double rho);

/* ---- reduction.c ---- */
/* Build the vars (cores and their operators) of prob under the settings. */
atf_error atf_sv_vars_build(atf_solver *s, char *err);
void atf_sv_vars_free(atf_solver *s);
/* How the basis of one side (H or D) of a factored block was decided (docs/record/solver.md §4). */
typedef enum {
    ATF_SV_BASIS_FULL_RANK = 0, /* the Gram XᵀX proves full column rank: not reduced, no QR */
    ATF_SV_BASIS_SKIPPED,       /* at most 5 % of the directions could go: kept whole, no QR */
    ATF_SV_BASIS_GRAM,          /* reduced with the Gram's eigenvectors, verified on X */
    ATF_SV_BASIS_QR,            /* decided by the pivoted QR (wide X, X = 0, or forced) */
    ATF_SV_BASIS_QR_FALLBACK    /* the Gram's candidates failed the verification: the QR */
} atf_sv_basis_rule;
typedef enum {
    ATF_SV_BASIS_AUTO = 0, /* the rule of docs/record/solver.md §4 */
    ATF_SV_BASIS_FORCE_QR, /* the QR alone (the reference the tests compare with) */
    ATF_SV_BASIS_NO_SKIP   /* the rule without the skip of small reductions */
} atf_sv_basis_how;
/* Orthonormal basis of range(Xᵀ) for X (nr × nc, row-major): *Qt (rank × nc, row-major,
 * malloc'd) or NULL when the side is kept whole (*rank = nc). Non-finite X is refused. */
atf_error atf_sv_row_basis(const double *X, int nr, int nc, atf_sv_basis_how how, int *rank,
                           double **Qt, atf_sv_basis_rule *rule, const char *what, char *err);
/* B (orig shape) of var v from its core C; C from B. 0 on success, -1 out of memory. */
int atf_sv_expand(const atf_sv_var *v, const double *C, double *B);
int atf_sv_restrict(const atf_sv_var *v, const double *B, double *C);

/* ---- operator.c: examples spread over processes ---- */
/* Check a shard against the processes (s->hooks.processes) and the settings, and set s->procs
 * and s->share (everything held without processes). */
atf_error atf_sv_shards_init(atf_solver *s, char *err);
/* After the vars are built: their operators become views of the held examples. */
void atf_sv_shards_views(atf_solver *s);
/* x [N × width], each process having filled its own examples' rows: all of them everywhere. */
void atf_sv_gather(const atf_solver *s, double *x, int width);
/* res = A vec(B) − r on the caller's problem (atf_problem_residual over processes). */
void atf_sv_residual(const atf_solver *s, double *const *Bs, double *res);
/* Room for n low parts of double-double values (NULL: out of memory), and hi[j] (n values) ←
 * the sum over the processes of (hi[j], lo[j]) (NaN everywhere when lo is NULL anywhere; hi
 * as it is with one process). */
double *atf_sv_dd_low(atf_solver *s, size_t n);
void atf_sv_sum_dd(atf_solver *s, double *hi, const double *lo, size_t n);
/* The largest v over the processes (v itself with one). */
double atf_sv_max(const atf_solver *s, double v);
/* Examples first … first + count − 1 of a problem's N in chunks (a share of the whole). */
void atf_sv_share_of(const atf_solver *s, atf_sv_share *sh);

/* ---- operator.c: the stacked operator of all vars (work units) ---- */
/* z = A' x [M] and g = A'ᵀ u [n]; each call counts one pass over the data in s->passes. */
void atf_sv_apply(atf_solver *s, const double *x, double *z);
void atf_sv_adjoint(atf_solver *s, const double *u, double *g);
/* 1 if the operators ops[0 … n) are all factored: the fused Hessian product applies. */
int atf_sv_fusable(int n, const atf_block *const *ops);
/* g = A'ᵀ K A' x [n], K the loss curvature curv applies per example; z [M] is scratch (K A'x on
 * return). Two passes, and one read of the data when every var is factored (atf_factored_hess).
 * atf_sv_hess_ops does the same through other operators of the vars' shapes (a subsample's:
 * at most N examples), counting nothing. */
void atf_sv_hess(atf_solver *s, atf_curvature_fn *curv, void *ctx, const double *x, double *z,
                 double *g);
void atf_sv_hess_ops(atf_solver *s, const atf_block *const *ops, const atf_sv_share *share,
                     atf_curvature_fn *curv, void *ctx, const double *x, double *z, double *g);
/* The same for the k columns of X (n × k, column-major) into Y, with ops' k·N examples fitting
 * the scratch (k·N_ops ≤ the vars' N): through atf_factored_hess when the ops are factored (D
 * read once for all k, the GEMMs k times wider), column by column otherwise. z: M_ops·k
 * doubles, pack: n·k. */
void atf_sv_hess_many(atf_solver *s, const atf_block *const *ops, const atf_sv_share *share,
                      int k, atf_curvature_fn *curv, void *ctx, const double *X, double *Y,
                      double *z, double *pack);

/* ---- projection.c ---- */
/* Set the linear system up once as `plan` says; the least-squares point x_ls and the
 * consistency of r (direct), or its check (PCG); s->rnorm. */
atf_error atf_sv_proj_setup(atf_solver *s, atf_sv_proj_plan plan, char *err);
/* The relative least-squares residual above which r ∉ range(A) (0 without a system). */
double atf_sv_feas_tol(const atf_solver *s);
void atf_sv_proj_free(atf_sv_proj *p);
/* v ← Π(v) = v − Aᵀ(AAᵀ)⁺(A v − r) with `refine` extra correction steps (0: one solve);
 * with r = NULL the projection onto null(A), so v − Π(v) is the part in range(Aᵀ). */
void atf_sv_project(atf_solver *s, double *v, const double *r, int refine);
/* One projection (refine 0) that by PCG starts from λ0 = from [M] (the λ of a projection of a
 * nearby vector, ADMM's last; NULL: from 0) and leaves its own λ in lam_out [M] (may be from;
 * NULL: not wanted). Other projections solve directly and ignore both. */
void atf_sv_project_from(atf_solver *s, double *v, const double *r, const double *from,
                         double *lam_out);
/* ‖A v − r‖ (absolute) with workspace proj.s. */
double atf_sv_constraint_norm(atf_solver *s, const double *v, const double *r);

/* ---- block_prox.c ---- */
/* Workspace for the SVDs of spectral matrix vars. */
atf_error atf_sv_prox_alloc(atf_solver *s, char *err);
/* z ← prox_{Ω̃/ρ}(w), blockwise; w is left intact. */
void atf_sv_prox(atf_solver *s, const double *w, double *z, double rho);
/* Thin SVD of the core C of var v into v->s (descending), v->u, v->vt; 0 on success, the LAPACK
 * info (or −1) on failure, ATF_SV_SVD_NONFINITE at once (LAPACK not called) if C has NaN/Inf. */
#define ATF_SV_SVD_NONFINITE (-1000)
int atf_sv_svd(atf_sv_var *v, const double *C);
/* Objective Σ Ω̃ of the stacked point x (SVDs of every spectral var). */
double atf_sv_objective(atf_solver *s, const double *x);
/* The support of z, the output of the last atf_sv_prox: per var the rank kept (spectral), the
 * nonzero entries (diagonal structure) or 1/0 (vectors; the `full` structure writes count[0]). */
void atf_sv_prox_support(const atf_solver *s, const double *z, int *count);
/* Objective of z from the singular values kept by the last prox (cheap, for the log). */
double atf_sv_prox_objective(atf_solver *s, const double *z);

/* ---- certificate.c ---- */
/* Gradient ∇Ω̃(x) (nuclear: the subgradient 2√γ U_r V_rᵀ with the rank cut at `tau_rel`
 * relative to the largest singular value and `tau_abs`) into g; returns its norm. */
double atf_sv_gradient(atf_solver *s, const double *x, double *g, double tau_abs);
/* Stationarity certificate at x: the relative distance of the candidate y (which must lie in
 * range(Aᵀ)) from ∂Ω̃(x), singular values (or entries) of x at most tau_abs counting as zero
 * (there any slope ω̃ takes on [0, tau_abs] is accepted). y = NULL uses P G (P the projection
 * onto range(Aᵀ)); for smooth penalties that is ‖G − P G‖/‖G‖ up to that allowance. */
double atf_sv_stationarity(atf_solver *s, const double *x, const double *y, double tau_abs);
int atf_sv_any_nuclear(const atf_solver *s);
/* The least-squares point x_ls into x, reported as it is with `status` (the baseline's answer,
 * an infeasible problem's, a fallback's): no iterations, zero ADMM residuals, its stationarity. */
void atf_sv_least_squares_result(atf_solver *s, atf_result *res, double *x, atf_status status);

/* Data-scaled initial ρ: ⟨∇Ω̃(B0), B0⟩ / ‖B0‖² at the least-squares point (2 if undefined). */
double atf_sv_rho_scale(atf_solver *s);

/* ---- lp.c ---- */
/* The diagonal structure with the nuclear penalty only (ATF_E_USAGE naming the block). */
atf_error atf_sv_lp_check(const atf_solver *s, char *err);

#endif
