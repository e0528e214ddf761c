/* solver_penalized.h — private to solver/: the penalized problem (16) solved by FISTA
 * (fista.c), its loss in the solver's units (pg_loss.c), and the IRLS alternation for
 * interpolation (irls.c). docs/record/solver.md §14 has the math.
 *
 * Units. The solver works on the problem in its own units (equilibrate.c, mode ATF_EQ_NONE:
 * E_m = 0 and the operator arrays shared, unless H rows are far from unit size; in general row
 * m of A and r multiplied by 2^(−E_m)) and the variables by 2^(−k), so that with
 * scale_m = 2^(E_m + k) the problem's predictions are p = scale ∘ (A' x) for the work operator
 * A' and the work variable x, and Σ Ω̃(B) = 2^obj_exp Σ Ω̃'(x). The penalized objective in work
 * units is therefore F(x) = Σ Ω̃'(x) + κ L(scale ∘ A'x) with κ = 2^(−obj_exp); every value the
 * solver reports is multiplied back by 2^obj_exp. */
#ifndef ATF_SOLVER_PENALIZED_H
#define ATF_SOLVER_PENALIZED_H

#include "atf_loss.h"
#include "solver_method.h"

/* The loss of a solver in work units. */
typedef struct {
    atf_loss loss;
    const atf_problem *prob; /* the caller's problem: r, f0, labels in its own units */
    const double *target_work; /* [M] or NULL: the augmented Lagrangian's subproblems, a squared
                                  loss Σ wsq/2 (z − target_work)² wholly in work units
                                  (atf_pg_loss_set_weight; λ is then unused) */
    int N, C, M;
    double *scale;           /* [M] prediction of the problem = scale_m × work prediction */
    double kappa;            /* work objective = κ × the problem's objective */
    int kappa_exp;           /* κ = 2^kappa_exp */
    double *wsq;             /* [M] κ scale_m²/λ, formed exactly (pg_loss.c: over_lambda) */
    double *pred, *gpred;    /* workspace [M] */
    double *curv;            /* xent: softmax probabilities at the point of the last
                                atf_pg_loss_curvature [M] (NULL until then) */
} atf_pg_loss;

/* ---- pg_loss.c ---- */
/* Builds the scales from the problem and s->work (a row scaling: checked, not assumed). A squared
 * loss with λ = 0 is the augmented Lagrangian's (alm.c): weight 1 and target r' in work units,
 * changed with atf_pg_loss_set_weight. */
atf_error atf_pg_loss_init(atf_solver *s, const atf_loss *loss, atf_pg_loss *pl, char *err);
/* The one message for a λ beyond the arithmetic: "solver: loss L:lambda=λ: the loss's weight
 * 1/lambda relative to the penalty is <what> in double precision for this problem (…)". */
void atf_sv_lambda_message(const atf_loss *loss, const char *what, char *err);
void atf_pg_loss_free(atf_pg_loss *pl);
/* Make a squared loss the augmented Lagrangian's subproblem loss (weight/2)‖z − target_work‖²,
 * weight and target in work units (not owned): no λ, so no quotient that the problem's units could
 * push out of the range of doubles. */
void atf_pg_loss_set_weight(atf_pg_loss *pl, double weight, const double *target_work);
/* κ L(scale ∘ z) and its gradient with respect to z (grad may be NULL). */
double atf_pg_loss_eval(atf_pg_loss *pl, const double *z, double *grad);
/* The same for example i alone (z, grad: its C values; at most 64 classes, else NaN): the
 * summands of atf_pg_loss_eval, for products that stream the examples once. */
double atf_pg_loss_example(const atf_pg_loss *pl, int i, const double *z, double *grad);
/* Bregman divergence κ[L(z1) − L(z0) − ⟨∇L(z0), z1 − z0⟩] ≥ 0, computed without the
 * cancellation of the plain difference (for the backtracking test near convergence). */
double atf_pg_loss_bregman(atf_pg_loss *pl, const double *z0, const double *z1);
/* Fix the point z [M] (work predictions) whose curvature atf_pg_loss_hess applies: the softmax
 * probabilities for xent (nothing to store for squared). ATF_E_NOMEM only. */
atf_error atf_pg_loss_curvature(atf_pg_loss *pl, const double *z);
/* out = ∇²ℓ(z) v at the point of the last atf_pg_loss_curvature: κ scale² v / λ (squared); per
 * example κ/λ · S (diag p − p pᵀ) S v, S = diag(scale) (xent). With examples = NULL over all M
 * rows; else over the C rows of each of the n examples listed (v, out [n·C], in that order).
 * out may be v. */
void atf_pg_loss_hess(const atf_pg_loss *pl, const int *examples, int n, const double *v,
                      double *out);
/* The same at one example, as an atf_curvature_fn (ctx: the atf_pg_loss) for atf_sv_hess. */
void atf_pg_loss_curv(void *ctx, int example, const double *y, double *u);
/* v ← Lip(L)·κ scale² v / λ (the bound on ∇²ℓ that gives the step 1/L). */
void atf_pg_loss_lipschitz_weight(const atf_pg_loss *pl, double *v);
/* Conjugate (κ L(scale ∘ ·))*(u) at the dual point u [M]; +∞ outside its domain. */
double atf_pg_loss_conjugate(atf_pg_loss *pl, const double *u);

/* ---- duality.c: conjugates and the duality gap ---- */
/* (F − max_θ D(θ)) / |F| for convex penalties, NaN otherwise: the Fenchel dual bound at the
 * candidates θ ∇ℓ(A'x), θ ∈ [0, 1]; u = ∇ℓ(A'x) [M], g = A'ᵀu [n], F in work units. */
double atf_pg_duality_gap(atf_solver *s, atf_pg_loss *pl, const double *u, const double *g,
                          double F);
/* (Σ Ω̃')*(v) = Σ_j ω̃*(σ_j(v)) blockwise (Lewis), ω̃*(u) = sup_{z≥1} u²z²/4 − ω(z); +∞ outside
 * the domain. Exact only for convex ω̃ (unimodal sup); NaN when some ω̃ is nonconvex. */
double atf_pg_penalty_conjugate(atf_solver *s, const double *v);
/* ω̃*(u) of one penalty (see above). */
double atf_pg_omega_conjugate(const atf_penalty *pen, double u);

/* What a run of a penalized method (FISTA, Newton) measures beyond what it writes into the
 * result (atf_solver_solve copies pg_residual and duality_gap into it; loss and penalty values
 * are measured again on the answer by the result assembly). */
typedef struct atf_pg_info {
    double loss_value;     /* L(f0 + A vec B) in the problem's units */
    double penalty_value;  /* Σ Ω̃(B) */
    double objective;      /* their sum */
    double pg_residual;    /* relative proximal-gradient residual at the answer */
    double duality_gap;    /* (F − dual bound)/|F|, NaN when some ω̃ is nonconvex */
    double step;           /* last accepted step t (work units) */
    int iterations, restarts, backtracks;
} atf_pg_info;

/* ---- penalized.c: what FISTA and Newton share ---- */
/* Start step 1/L, L = κ Lip(L) ‖S A'‖² with ‖S A'‖² from at most 12 power iterations (a lower
 * bound, so the step may still be too long: the backtracking corrects it). Workspace w [n],
 * zw [M]; *iterations receives the power iterations used. */
double atf_pg_first_step(atf_solver *s, atf_pg_loss *pl, double *w, double *zw, int *iterations);
/* One proximal-gradient step from y (predictions zy = A'y, gradient g at y) with backtracking
 * (Beck–Teboulle, on the Bregman divergence): t grows by 1/0.9 first and halves until accepted.
 * Sets xn, zn = A'xn and *t; w [n] is workspace; counts backtracks. 0, or −1 when no step length
 * satisfied the test (numerical trouble). */
int atf_pg_step(atf_solver *s, atf_pg_loss *pl, const double *y, const double *zy,
                const double *g, double *t, double *w, double *xn, double *zn, int *backtracks);
/* The relative proximal-gradient residual of the step y → xn (gradient g at y, step t):
 * ‖G‖ / max(‖g‖, ‖G − g‖), G = (y − xn)/t; NaN if anything is non-finite. */
double atf_pg_residual(const double *y, const double *xn, const double *g, double t, size_t n);

/* Certificates at the answer x (predictions zx = A'x, objective F, step t): the
 * proximal-gradient residual of one step from x and the duality gap into info, the
 * stationarity (relative distance of −∇g(x) from ∂Ω̃(x)) into res. u [M], g, w, xn [n] are
 * workspace (u, g hold ∇ℓ(A'x) and ∇g(x) on return). */
void atf_pg_certify(atf_solver *s, atf_pg_loss *pl, const double *x, const double *zx,
                    double t, double F, double *u, double *g, double *w, double *xn,
                    atf_pg_info *info, atf_result *res);

/* FISTA on F from x (work units, in: the start, out: the answer) on a solver set up for a
 * penalized loss (atf_solver_init with settings.loss, method fista: no projection), within the
 * budget b (solver_method.h: its iterations, tolerance and table). res gets status, iterations,
 * objective (problem units), stationarity (relative distance of −∇L from ∂Ω̃ at the answer). */
atf_error atf_sv_fista(atf_solver *s, const atf_loss *loss, const atf_sv_budget *b,
                       atf_result *res, double *x, atf_pg_info *info, char *err);

/* A run of FISTA iterations inside another method (Newton's globalisation, newton.c): from x
 * (predictions zx, objective F = pen + loss, step t), at most max_iter iterations, without
 * certificates, stopping early when the prox's supports (ranks) have not changed for `stable`
 * iterations (0: never) or the step's residual is ≤ eps. In/out: x, zx, F, pen, loss, t. */
typedef struct {
    double *x, *zx;
    double F, pen, loss, t;
    double eps; /* the residual that certifies a point (the host's tolerance) */
    int max_iter, stable, backtracks;
    int stable_moving; /* the window once the support has changed in the burst (≤ stable: none) */
} atf_pg_burst;
/* Returns the iterations run, or −1 on numerical trouble (b unchanged then). */
int atf_sv_fista_burst(atf_solver *s, atf_pg_loss *pl, atf_pg_burst *b);

/* ---- irls.c: alternating adapted-kernel regression for interpolation ---- */
typedef struct {
    int iterations;
    int safeguarded;   /* iterations where the full step would have increased Σ Ω̃ */
    double objective;  /* Σ Ω̃(B) at the answer (problem units) */
    double first_objective; /* at the first iterate (the NTK min-norm point) */
    double max_increase;    /* largest relative increase of Σ Ω̃ between accepted iterates */
} atf_irls_info;

/* From the min-norm point (M̂ = I), alternate the weighted min-norm solve and the factor
 * recovery within the budget b; x receives the answer (work units). Needs the projection
 * (atf_solver_init with an interpolate loss); the method's run (atf_sv_irls_run) calls it. */
atf_error atf_sv_irls(atf_solver *s, const atf_sv_budget *b, atf_result *res, double *x,
                      atf_irls_info *info, char *err);

#endif
