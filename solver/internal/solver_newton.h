/* solver_newton.h — private to solver/: the generalized Jacobian of the blockwise prox
 * (prox_jacobian.c) and the semismooth Newton-CG method for the penalized problem (16)
 * (newton.c). docs/record/solver.md §15 has the math.
 *
 * The prox of Σ Ω̃ acts var by var (block_prox.c). At a point z its generalized Jacobian J is
 * symmetric and diagonal in a rotated basis of each var:
 *  - spectral matrix vars (rows × cols, k = min > 1), thin SVD z = U diag(σ) Vᵀ: for a direction
 *    H with Ĥ = Uᵀ H V (k × k), J[H] = U (Ω¹ ∘ sym Ĥ + Ω² ∘ skew Ĥ) Vᵀ + ω³ on the part of H
 *    outside the k × k core, Ω¹_ij = (φ(σ_i) − φ(σ_j))/(σ_i − σ_j) (φ′ on ties),
 *    Ω²_ij = (φ(σ_i) + φ(σ_j))/(σ_i + σ_j), ω³_i = φ(σ_i)/σ_i (φ′(0) at 0), φ the scalar prox;
 *  - vectors (a side of length 1) and the `full` structure: radial φ′(ρ) and tangential
 *    φ(ρ)/ρ, ρ = ‖z‖;
 *  - diagonal-structure vars: φ′(|z_i|) per entry.
 * A "coefficient map" replaces every θ of that basis by f(θ) and applies it to a direction; the
 * Newton system uses f = 1 (J), the mask of S = {θ > θ_min} and the curvature
 * Λ = (1/θ − 1)/t on S (the effective Hessian of the penalty at prox(z)). */
#ifndef ATF_SOLVER_NEWTON_H
#define ATF_SOLVER_NEWTON_H

#include "solver_penalized.h"

typedef enum {
    ATF_JAC_SPECTRAL = 0, /* matrix var: rotated sym/skew/complement coefficients */
    ATF_JAC_NORM,         /* vector var: radial and tangential coefficients */
    ATF_JAC_ENTRYWISE     /* diagonal structure: one coefficient per entry */
} atf_jac_kind;

/* The coefficients of one map f(θ) for one var (layout as atf_jac_var's θ). */
typedef struct {
    double *c1, *c2; /* spectral: k × k (sym, skew) */
    double *c3;      /* spectral: k (complement); entrywise: len; norm: 2 (radial, tangential) */
} atf_jac_coef;

typedef struct {
    atf_jac_kind kind;
    int rows, cols, k;   /* the var's core shape (norm/entrywise: len × 1) */
    size_t off, len;     /* in the stacked vector (full structure: the whole vector) */
    /* spectral: thin SVD of z, row-major: U rows × k, Vt k × cols, σ descending */
    double *U, *Vt, *sigma, *phi, *dphi;
    double *u;           /* norm: the unit vector z/ρ [len] (NULL for ρ = 0) */
    atf_jac_coef theta;  /* the Jacobian's own coefficients */
    atf_jac_coef lam;    /* Λ = (1/θ − 1)/t on S, 0 off S */
    atf_jac_coef mask;   /* 1 on S, 0 off S */
    atf_jac_coef dinv;   /* 1/(Λ + c) on S, 0 off S (atf_jac_set_shift) */
    /* workspace of a map */
    double *T, *Hh, *X, *Y, *Hh2;
    double *a;           /* SVD input copy, LAPACK workspace */
    double *work;
    int lwork, *iwork;
} atf_jac_var;

typedef struct {
    int nvars;
    atf_jac_var *vars;
    double t;            /* the prox step the Jacobian was taken at */
    double theta_min;    /* θ at or below this is outside S */
    int nonconvex_coef;  /* some θ > 1 (Λ < 0: the penalty's curvature is negative there) */
} atf_jac;

/* Allocate the Jacobian storage for the solver's vars (one var over everything for the `full`
 * structure). ATF_E_NOMEM with a message. */
atf_error atf_jac_alloc(atf_solver *s, atf_jac *jac, char *err);
void atf_jac_free(atf_jac *jac);

/* The Jacobian of prox_{tΣΩ̃} at z (work units): SVDs of the spectral vars, the scalar prox and
 * its slope, the divided differences, the mask and Λ. x (may be NULL) receives prox(z) from the
 * same SVDs. Returns 0, or nonzero when an SVD failed or z is not finite (nothing is handed to
 * LAPACK then). */
int atf_jac_build(atf_solver *s, atf_jac *jac, const double *z, double t, double *x);

/* Restrict J to the support of x̄ = prox(x − t∇g) (support: atf_sv_prox_support of x̄ right
 * after that prox): singular values (entries, vectors) that the proximal-gradient step sets to
 * zero leave S. */
void atf_jac_restrict(atf_solver *s, atf_jac *jac, const int *support, const double *xbar);

/* Which coefficients a map uses. */
typedef enum { ATF_JAC_THETA = 0, ATF_JAC_LAMBDA, ATF_JAC_MASK, ATF_JAC_DINV } atf_jac_which;

/* out = f(h) [n] for the map `which` (J, Λ or the mask of S) applied to the stacked direction h.
 * With h2 (may be NULL) and which2, out = f(h) + f2(h2) (one rotation back for both). */
void atf_jac_apply(atf_jac *jac, atf_jac_which which, const double *h, atf_jac_which which2,
                   const double *h2, double *out);

/* The map ATF_JAC_DINV: 1/(Λ + c) on S, 0 off S (c > 0; where Λ + c ≤ 0, nonconvex ω̃, 1/c). */
void atf_jac_set_shift(atf_jac *jac, double c);

/* Σ over S of (1/θ − 1)/t: the mean penalty curvature on S (for a preconditioner's shift), and
 * the dimension of S, summed over vars. */
void atf_jac_lambda_stats(const atf_jac *jac, double *mean, double *dim);

/* ---- newton_precond.c: Nyström preconditioner from a subsample of the examples ---- */
typedef struct {
    int nvars, n_examples, k, owns, ready, prepared;
    size_t n;
    atf_block *ops;      /* the vars' operators on the subsample (copies when owns) */
    const atf_block **op_ptrs; /* [nvars] &ops[l] */
    const atf_pg_loss *pl;     /* the loss being sketched (atf_nys_build) */
    int *examples;       /* [n_examples] the examples of the subsample (every stride-th) */
    atf_sv_share share;  /* those of them this process holds, and their chunks */
    int batch;           /* columns sketched per pass over the subsample (atf_sv_hess_many) */
    double *Ap;          /* [n_examples·C·batch] */
    double *pack;        /* [n·batch] the columns side by side per var */
    double *U, *Y;       /* n × k, column-major: the eigenvectors, and the sketch workspace */
    double *lam;         /* k eigenvalues, descending */
    double *W;           /* n × k: D⁻¹ U S^½ (atf_nys_prepare) */
    double *G;           /* k × k: Cholesky factor of I + S^½ Uᵀ D⁻¹ U S^½ */
    double *tau, *work, *coef;
    double passes;       /* work in full passes over the data (subsample products count n/N) */
} atf_nystrom;

/* A preconditioner of rank `rank` on `examples` examples (all of them when ≥ N).
 * ATF_E_NOMEM with a message. */
atf_error atf_nys_init(atf_solver *s, atf_nystrom *ny, int examples, int rank, char *err);
void atf_nys_free(atf_nystrom *ny);
/* The same preconditioner at a larger rank (not built: ready = 0). ATF_E_NOMEM leaves it as it
 * was, arrays perhaps larger. */
atf_error atf_nys_resize(atf_nystrom *ny, int rank);
/* Sketch the loss curvature at the point of the last atf_pg_loss_curvature: k products with the
 * subsample's Hessian and the Nyström factors. 0, or −1 (non-finite, Cholesky failure): then
 * ready stays 0 and the caller goes without. */
int atf_nys_build(atf_solver *s, atf_pg_loss *pl, atf_nystrom *ny);
/* The preconditioner P = D + U S Uᵀ of the system (Λ + ∇²g + μI) at the Jacobian jac: D = Λ + μ +
 * λ̂_k on S (diagonal in the prox's rotated basis: atf_jac_set_shift), S = diag(λ̂ − λ̂_k) the
 * sketch's excess over its smallest eigenvalue. Forms D⁻¹U S^½ (k Jacobian maps) and the k × k
 * Cholesky factor of Woodbury's capacitance matrix. 0, or −1 (then it is not used). */
int atf_nys_prepare(atf_nystrom *ny, atf_jac *jac, double mu);
/* out = P⁻¹ v = D⁻¹v − D⁻¹U S^½ (I + S^½UᵀD⁻¹US^½)⁻¹ S^½ Uᵀ D⁻¹ v (zero off S). */
void atf_nys_apply(atf_nystrom *ny, atf_jac *jac, const double *v, double *out);

/* ---- newton.c ---- */
/* A Newton run that outlives one solve: the augmented Lagrangian (alm.c) changes the loss's weight
 * and target between its subproblems and continues from the same point. */
typedef struct atf_newton atf_newton;
/* b: the budget of the solve the run serves (its tolerance aims the forcing term and the FISTA
 * bursts; verbose, its log lines); atf_newton_run takes its own limits. */
atf_error atf_newton_init(atf_solver *s, const atf_loss *loss, const atf_sv_budget *b,
                          atf_newton **out, char *err);
void atf_newton_free(atf_newton *nw);
/* The squared loss (weight/2)‖A'x − target‖² of the next runs, wholly in work units (target not
 * owned; atf_pg_loss_set_weight); the point stays (its values are recomputed), the step t and the
 * sketch scale with the weight. */
void atf_newton_set_weight(atf_solver *s, atf_newton *nw, double weight, const double *target);
/* Newton steps until the relative proximal-gradient residual is ≤ eps (solved), max_iter steps,
 * the interrupt flag, a numerical failure, or NEWTON_GIVE_UP fallbacks in a row (*gave_up).
 * The first run starts from x0 (work units), later ones continue. The table goes to the log
 * with verbose. */
atf_status atf_newton_run(atf_solver *s, atf_newton *nw, const double *x0, double eps,
                          int max_iter, int verbose, int *gave_up);
/* The current point (work units, n values). */
const double *atf_newton_point(const atf_newton *nw);
/* The loss in use, the Newton steps, CG steps and fallbacks so far, and the preconditioner's
 * passes (subsample products counted as fractions of a full pass). */
atf_pg_loss *atf_newton_loss(atf_newton *nw);
int atf_newton_steps(const atf_newton *nw);
int atf_newton_cg_steps(const atf_newton *nw);
int atf_newton_fallbacks(const atf_newton *nw);
long atf_newton_sketch_passes(const atf_newton *nw);
/* Checkpoints of a solve built on a Newton run (the augmented Lagrangian's): the run's state is
 * atf_newton_state_len numbers (newton.c's header, then z and x), saved between runs and loaded
 * in place of the first run's start (the point's values recomputed at the loss's current
 * weight and target; ATF_E_INPUT, with a message, for a state of another length or a damaged
 * header). The sketch is not in the state: atf_newton_sketch_weight is the loss weight it was
 * built at (0: none), and atf_newton_rebuild_sketch builds it again at weights[0] and scales
 * it by each weights[i]/weights[i−1] in turn, as atf_newton_set_weight did, so that the resumed
 * run is the uninterrupted one bit for bit (0, or −1 when it could not be built). Keys:
 * atf_sv_checkpoint_key (solver_internal.h). */
size_t atf_newton_state_len(const atf_solver *s);
/* The host's checkpoint: once hooks.checkpoint_seconds have passed since the run's start, its
 * load or the last call, atf_newton_run calls save(ctx) at the top of a Newton step (where
 * atf_newton_state_save's state is complete: a run loaded from it takes the same steps, given
 * the same sketch); a nonzero return ends the run with status interrupted. */
void atf_newton_checkpoint_by(atf_newton *nw, int (*save)(void *ctx), void *ctx);
/* Whether the run ended because a checkpoint (its own or the host's) could not be kept. */
int atf_newton_checkpoint_failed(const atf_newton *nw);
void atf_newton_state_save(const atf_solver *s, const atf_newton *nw, double *state);
atf_error atf_newton_state_load(atf_solver *s, atf_newton *nw, const double *state, int64_t len,
                                char *err);
double atf_newton_sketch_weight(const atf_newton *nw);
int atf_newton_rebuild_sketch(atf_solver *s, atf_newton *nw, const double *weights, int count);

/* Semismooth Newton-CG on F from x (work units; in: the start, out: the answer) on a solver set up
 * for a penalized loss, within the budget b. res gets status, iterations (Newton steps),
 * objective (problem units), stationarity, inner_iterations (CG steps) and fallback_steps.
 * *gave_up is set when the line search failed NEWTON_GIVE_UP times in a row (the method's run,
 * atf_sv_newton_run, then hands over to FISTA from x). */
atf_error atf_sv_newton(atf_solver *s, const atf_loss *loss, const atf_sv_budget *b,
                        atf_result *res, double *x, atf_pg_info *info, int *gave_up, char *err);

#endif
