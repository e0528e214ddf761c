/* newton.c — the penalized problem (16), min_x F(x) = Σ Ω̃(x) + g(x), g(x) = κ L(scale ∘ A'x), by
 * a semismooth Newton-CG method on the normal map (docs/record/solver.md §15), matrix-free.
 *
 * The iterate is a point z whose prox x = prox_{tΩ̃}(z) is the current answer; z − x ∈ t∂Ω̃(x),
 * so the normal map R(z) = z − x + t∇g(x) vanishes exactly at the stationary points, and R/t is
 * an element of ∂F(x). Its generalized Jacobian is I − J + t∇²g J with J the prox's Jacobian at
 * z (prox_jacobian.c). With d = J dz (the change of x) it splits into a symmetric system on the
 * subspace S where J is not zero,
 *
 *     (Λ + P_S ∇²g P_S) d = −P_S R / t,        Λ = (J⁻¹ − I)/t on S (the penalty's curvature),
 *
 * and dz = d − R − t ∇²g d, which needs no J⁻¹. ∇²g v = A'ᵀ (∇²ℓ (A'v)) costs one apply and one
 * adjoint (two GEMM passes per factored block); the system is solved inexactly by CG (forcing
 * term η = min(0.1, √res)). For smooth penalties d is Newton's direction for F in x, so
 * F(prox(z + α dz)) decreases for small α: a backtracking (Armijo) line search on F along that
 * path, and where it fails — the penalty's curvature is negative (nonconvex ω̃), or the model is
 * poor far from the answer — a proximal-gradient step with backtracking (penalized.c) takes its
 * place. Both decrease F, so F never increases, for convex and nonconvex penalties alike. After
 * NEWTON_GIVE_UP such fallbacks in a row the method says so and hands over to FISTA.
 *
 * From a warm start solved at a λ far from this one, with a nonconvex penalty, the solve goes
 * there through bridge λ (continuation, below).
 *
 * Stopping and certificate as FISTA's: the relative proximal-gradient residual at x with the
 * step t of the normal map (atf_pg_residual), ≤ eps_rel; the final certificates (pg residual,
 * stationarity, duality gap) come from atf_pg_certify. */
#include <cblas.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solver_newton.h"

#define ARMIJO 1e-4           /* sufficient decrease along the Newton path */
#define ROUNDING_SPAN 100.0  /* promises within this many roundings of F do not count */
#define LINE_SEARCH_STEPS 6   /* α = 1, 1/2, ..., 1/32, then a proximal-gradient step */
#define ETA_MAX 0.1           /* largest CG forcing term */
#define CG_MAX 500            /* CG steps per Newton step at most */
#define NEWTON_GIVE_UP 8      /* consecutive proximal-gradient fallbacks before FISTA takes over */
#define BURST_MAX 1000        /* FISTA iterations of one burst at most (fista_burst) */
#define BURST_STABLE 5        /* ... ending when the prox's support held this many iterations */
#define BURST_STABLE_MOVING 30 /* ... or this many once it changed during the burst */
/* Regularisation of the Newton system (Λ + ∇²g + μI), μ = σ · (mean Λ on S): the system is
 * singular where the penalty is linear and the loss flat (nuclear-norm directions in null(A)),
 * and a step that runs into a kink of the prox far from the answer (a singular value reaching
 * the prox's threshold) must be shortened. σ ≥ MU_REL · min(res, 1), so that μ → 0 with the
 * residual and the local convergence stays superlinear (the regularised semismooth Newton of
 * Li, Sun and Toh); like a Levenberg–Marquardt parameter σ doubles when the line search had to
 * shorten the step, grows by MU_GROW² when it failed, and shrinks by MU_GROW after a full step
 * (growing by 1/α instead stalled the ℓ1 case, diagonal structure + nuclear, at 500 steps).
 * A full step that lowered F but raised the residual counts as a failure too: σ grows by
 * MU_GROW² from the σ it was taken with (residual_rose). */
#define MU_REL 1e-2
/* The preconditioner (newton_precond.c): its rank, the subsample (1/NYSTROM_STRIDE of the
 * examples in whole chunks, at least NYSTROM_MIN_EXAMPLES of them) and how often it is rebuilt
 * for xent. Measured
 * on Fashion-MNIST (docs/record/solver.md §15, benchmarks/newton_scan.py): rank 100 on an eighth of
 * the examples, rebuilt every third step, took the fewest passes at N = 16 000 and 60 000; rank 50
 * or 200, or a quarter of the examples, cost more. Below N = 4 000 its sketches cost more than
 * its CG savings bring (N = 1 000: 16.3 against 7.1 CPU s without it; N = 500: 9.4 against 3.4);
 * at N = 4 000 it is even for xent + sq (20.8 / 19.7) and a clear win for nuclear (44 / 59), so
 * settings.newton_rank = −1 (auto, the default) means rank NYSTROM_AUTO_RANK (or
 * NYSTROM_AUTO_RANK_SQUARED) from NYSTROM_AUTO_MIN_N examples on and none below; K > 0 forces
 * rank K, 0 none. Problems with fewer than 4·NYSTROM_MIN_RANK variables go without. */
#define NYSTROM_AUTO_RANK 100
/* The squared loss's sketch is built once (its curvature does not move): a larger rank pays.
 * N = 60 000, squared + sq (first measured version, docs/record/solver.md §18): rank 100 678
 * passes, 314 s wall; rank 300 488 passes, 228 s. */
#define NYSTROM_AUTO_RANK_SQUARED 300
/* ... from this many examples on; the augmented Lagrangian's subproblems (alm.c) have it at every
 * N: one sketch serves all of them, whose σ makes the loss's curvature dominate (N = 500,
 * balanced+balanced interpolation: 4 031 passes to outer iteration 7 with it, 22 037 without). */
#define NYSTROM_AUTO_MIN_N 4000
#define NYSTROM_MIN_RANK 8
#define NYSTROM_STRIDE 8
#define NYSTROM_MIN_EXAMPLES 500
#define NYSTROM_PERIOD 3
/* With the automatic rank, xent's sketch grows to this rank once a Newton step's CG took more
 * passes (one per CG step saved, as the larger rank about halves CG's steps) than twice what
 * the larger sketch adds per step (2·(400 − 100)·(N/8)/N passes every third step: 25). Fashion-
 * MNIST N = 7 200, balanced+balanced, docs/record/results.md §7f: rank 400 halved CG's steps at
 * every λ tried; at 72 → 21.6 (about 20 CG steps a Newton step) its sketches cost more than that
 * saved (+52 % CPU), at 7.2 → 2.16 (about 100) 13 % less CPU, in the first stage of 2.16 → 0.72
 * half the passes. Growing when the CG count says so takes the better of the two. */
#define NYSTROM_GROWN_RANK 400
#define MU_GROW 4.0
#define MU_MAX 1e12

typedef struct {
    double *z, *x, *g, *R, *d, *Hd, *dz, *zt, *xt, *w, *xb; /* [n] */
    double *r, *y, *p, *Kp, *Hp;                            /* [n] CG */
    double *zx, *u, *zxt, *Ap;                              /* [M] */
    double *zx_sketch;    /* [M] the predictions the sketch was built at (a checkpoint's) */
    double t, F, loss, pen, res;
    int iter, cg_total, cg_last, fallbacks, in_a_row, backtracks, negative_curvature;
    double alpha;         /* the last step's α (0: a proximal-gradient fallback) */
    double sigma;         /* the regularisation's adaptive factor (see MU_REL) */
    atf_nystrom ny;       /* the preconditioner (newton_precond.c); ny.k = 0: none */
    int ny_age;           /* Newton steps since it was built */
    int ny_grow_to;       /* the rank it may grow to (NYSTROM_GROWN_RANK; 0: it does not) */
    int ny_grown_at;      /* the step it grew at (−1: it did not) */
    double weight;        /* the augmented Lagrangian's loss weight when the point's values were
                             last computed (0 before the first atf_newton_set_weight) */
    double ny_weight;     /* ... when the sketch was built (0: no sketch built) */
    int *support;         /* [vars] the support of x̄ (atf_sv_prox_support) */
    double start;
    int power_iterations;
    double last_checkpoint; /* atf_now() at the start, the resume or the last checkpoint */
    atf_sv_budget b;      /* the budget of the solve this run serves: its tolerance aims the
                             forcing term and the FISTA bursts, verbose its log lines */
} newton_state;

static atf_error alloc_state(newton_state *st, size_t n, int M, int nvars)
{
    size_t bn = (n ? n : 1) * sizeof(double), bm = (size_t)M * sizeof(double);
    double **vn[] = {&st->z, &st->x, &st->g, &st->R, &st->d, &st->Hd, &st->dz, &st->zt,
                     &st->xt, &st->w, &st->xb, &st->r, &st->y, &st->p, &st->Kp, &st->Hp};
    double **vm[] = {&st->zx, &st->u, &st->zxt, &st->Ap, &st->zx_sketch};
    int ok = (st->support = calloc((size_t)nvars + 1, sizeof *st->support)) != NULL;
    for (size_t i = 0; i < sizeof vn / sizeof vn[0]; i++)
        ok = (*vn[i] = calloc(1, bn)) != NULL && ok;
    for (size_t i = 0; i < sizeof vm / sizeof vm[0]; i++)
        ok = (*vm[i] = calloc(1, bm)) != NULL && ok;
    return ok ? ATF_OK : ATF_E_NOMEM;
}

static void free_state(newton_state *st)
{
    double *v[] = {st->z, st->x, st->g, st->R, st->d, st->Hd, st->dz, st->zt, st->xt, st->w,
                   st->xb, st->r, st->y, st->p, st->Kp, st->Hp, st->zx, st->u, st->zxt, st->Ap,
                   st->zx_sketch};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        free(v[i]);
    free(st->support);
}

/* ---- the pieces ----------------------------------------------------------------------------- */

/* F at x (predictions zx): the penalty from the singular values the last prox kept. */
static double objective_of_prox(atf_solver *s, atf_pg_loss *pl, const double *x,
                                const double *zx, double *pen, double *loss)
{
    *pen = atf_sv_prox_objective(s, x);
    *loss = atf_pg_loss_eval(pl, zx, NULL);
    return *pen + *loss;
}

/* Hp = ∇²g p = A'ᵀ ∇²ℓ A' p (two passes). */
static void hess_vec(atf_solver *s, atf_pg_loss *pl, newton_state *st, const double *p,
                     double *Hp)
{
    atf_sv_hess(s, atf_pg_loss_curv, pl, p, st->Ap, Hp);
}

/* y = P⁻¹ r: the Nyström preconditioner where there is one, else (Λ + μ)⁻¹ on S — the system's
 * exact inverse off the range of ∇²g, whose rank is at most M, so CG spends its steps on that
 * range alone. Where the penalty's curvature varies (nuclear, balanced, the flat families) this
 * takes steps off CG and costs no pass: the new user's problem of docs/record/solver.md §20
 * (N = 500, balanced+balanced, newton) went from 393 CG steps and 899 passes to 302 and 718;
 * for `sq`, whose Λ is nearly one number, it is CG's own steps scaled. */
static void precondition(atf_jac *jac, atf_nystrom *ny, const double *r, double *y)
{
    if (ny)
        atf_nys_apply(ny, jac, r, y);
    else
        atf_jac_apply(jac, ATF_JAC_DINV, r, ATF_JAC_DINV, NULL, y);
}

/* CG on (Λ + P_S ∇²g P_S) d = rhs (in st->r on entry), d and Hd = ∇²g d out. Stops at the
 * relative residual η, at CG_MAX steps, on the interrupt flag, or on nonpositive curvature
 * (then d is the last iterate with positive curvature; at the first step the right-hand side
 * itself, scaled by t: a proximal-gradient-like direction). Returns the CG steps taken. */
static int conjugate_gradient(atf_solver *s, atf_pg_loss *pl, atf_jac *jac, newton_state *st,
                              double eta, double mu)
{
    size_t n = s->n;
    atf_nystrom *ny = st->ny.prepared ? &st->ny : NULL;
    memset(st->d, 0, n * sizeof *st->d);
    memset(st->Hd, 0, n * sizeof *st->Hd);
    double rnorm0 = atf_sv_norm(st->r, n);
    if (!ny)
        atf_jac_set_shift(jac, mu);
    precondition(jac, ny, st->r, st->y);
    memcpy(st->p, st->y, n * sizeof *st->p);
    double rr = atf_dot(st->r, st->y, n);
    int k = 0;
    while (k < CG_MAX && !atf_sv_interrupted(s)) {
        hess_vec(s, pl, st, st->p, st->Hp);
        atf_jac_apply(jac, ATF_JAC_LAMBDA, st->p, ATF_JAC_MASK, st->Hp, st->Kp);
        cblas_daxpy((int)n, mu, st->p, 1, st->Kp, 1);
        k++;
        double pKp = atf_dot(st->p, st->Kp, n);
        if (!(pKp > 0.0)) { /* negative curvature (nonconvex ω̃) or breakdown */
            st->negative_curvature++;
            if (k == 1) {
                for (size_t i = 0; i < n; i++)
                    st->d[i] = jac->t * st->p[i], st->Hd[i] = jac->t * st->Hp[i];
            }
            break;
        }
        double alpha = rr / pKp;
        cblas_daxpy((int)n, alpha, st->p, 1, st->d, 1);
        cblas_daxpy((int)n, alpha, st->Hp, 1, st->Hd, 1);
        cblas_daxpy((int)n, -alpha, st->Kp, 1, st->r, 1);
        if (atf_sv_norm(st->r, n) <= eta * rnorm0)
            break;
        precondition(jac, ny, st->r, st->y);
        double rr_next = atf_dot(st->r, st->y, n);
        double beta = rr_next / rr;
        rr = rr_next;
        for (size_t i = 0; i < n; i++)
            st->p[i] = st->y[i] + beta * st->p[i];
    }
    return k;
}

/* The forcing term: superlinear near the answer, and no tighter than the last step needs. */
static double forcing(double res, double eps)
{
    double eta = fmin(ETA_MAX, sqrt(res));
    return fmin(0.5, fmax(eta, 0.2 * eps / res));
}

/* Accept the trial (zt, xt, zxt) as the new point: gradient at it. */
static void accept(atf_solver *s, atf_pg_loss *pl, newton_state *st, double F, double pen,
                   double loss)
{
    size_t n = s->n;
    int M = pl->M;
    memcpy(st->z, st->zt, n * sizeof *st->z);
    memcpy(st->x, st->xt, n * sizeof *st->x);
    memcpy(st->zx, st->zxt, (size_t)M * sizeof *st->zx);
    st->F = F, st->pen = pen, st->loss = loss;
    atf_pg_loss_eval(pl, st->zx, st->u);
    atf_sv_adjoint(s, st->u, st->g);
}

/* Backtracking along z + α dz: 1 when a point with sufficient decrease was found (accepted). */
static int line_search(atf_solver *s, atf_pg_loss *pl, newton_state *st, double slope)
{
    size_t n = s->n;
    if (!(slope < 0.0))
        return 0;
    /* Near the answer the decrease a step promises, about |slope|, is below the rounding of F
     * itself: F's differences then carry no information and rounding alone would reject good
     * steps. F sums M + n terms, so its rounding is about ε·√(M + n)·|F| (FM 60 000, squared:
     * a full step from pg residual 1.7e-6 promised 2e-14 and F rose by 14 ulps, 1.4e-14
     * relative; a fixed 1e-14 slack refused it and seven proximal-gradient steps followed).
     * Where the promise is within ROUNDING_SPAN of that, a rise of F within it is accepted. */
    double noise = DBL_EPSILON * sqrt((double)pl->M + (double)n) * fabs(st->F);
    double slack = fabs(slope) <= ROUNDING_SPAN * noise ? noise : 0.0;
    double alpha = 1.0;
    for (int k = 0; k < LINE_SEARCH_STEPS; k++, alpha *= 0.5) {
        for (size_t i = 0; i < n; i++)
            st->zt[i] = st->z[i] + alpha * st->dz[i];
        double t0 = atf_now();
        atf_sv_prox(s, st->zt, st->xt, 1.0 / st->t);
        s->t.prox += atf_now() - t0;
        atf_sv_apply(s, st->xt, st->zxt);
        double pen, loss, F = objective_of_prox(s, pl, st->xt, st->zxt, &pen, &loss);
        if (isfinite(F) && F <= st->F + ARMIJO * alpha * slope + slack) {
            st->alpha = alpha;
            accept(s, pl, st, F, pen, loss);
            return 1;
        }
    }
    return 0;
}

/* A proximal-gradient step from x (monotone for every penalty). 0, or −1 on numerical trouble. */
static int fallback_step(atf_solver *s, atf_pg_loss *pl, newton_state *st)
{
    if (atf_pg_step(s, pl, st->x, st->zx, st->g, &st->t, st->w, st->xt, st->zxt,
                    &st->backtracks) != 0)
        return -1;
    double pen, loss, F = objective_of_prox(s, pl, st->xt, st->zxt, &pen, &loss);
    if (!isfinite(F))
        return -1;
    memcpy(st->zt, st->w, s->n * sizeof *st->zt); /* w = x − t g: the prox input */
    st->alpha = 0.0;
    st->fallbacks++;
    st->in_a_row++;
    accept(s, pl, st, F, pen, loss);
    return 0;
}

/* Where the Newton model broke down (the line search shortened the step or failed: the support
 * of the prox — a block's rank, a diagonal block's nonzeros — is still changing, and every
 * change is a kink the model does not see), FISTA iterations move the support: until it has
 * been the same for BURST_STABLE iterations — BURST_STABLE_MOVING once it changed during the
 * burst: a support that is moving settles in steps, with pauses; Newton steps taken in a pause
 * fail at the next move (nuclear + xent, Fashion-MNIST N = 4 000: windows of 5 / 10 / 20 / 30 /
 * 50 after a change took 923 / 752 / 772 / 681 / 718 passes with up to 1 000 iterations a
 * burst; 50 a burst, the old cap, 1 028 with the window 10) — at most BURST_MAX. They decrease
 * F as FISTA's own (restarts keep it monotone). A proximal-gradient step then gives the pair z, x = prox(z) that
 * the next Newton step starts from. 0, or −1 on numerical trouble. */
static int fista_burst(atf_solver *s, atf_pg_loss *pl, newton_state *st)
{
    atf_pg_burst b = {.x = st->x, .zx = st->zx, .F = st->F, .pen = st->pen, .loss = st->loss,
                      .t = st->t, .eps = st->b.eps, .max_iter = BURST_MAX, .stable = BURST_STABLE,
                      .stable_moving = BURST_STABLE_MOVING};
    int it = atf_sv_fista_burst(s, pl, &b);
    st->backtracks += b.backtracks;
    if (it < 0)
        return fallback_step(s, pl, st);
    st->F = b.F, st->pen = b.pen, st->loss = b.loss, st->t = b.t;
    st->fallbacks += it;
    atf_pg_loss_eval(pl, st->zx, st->u); /* the gradient at the burst's last point */
    atf_sv_adjoint(s, st->u, st->g);
    return fallback_step(s, pl, st);
}

/* After a full Newton step, one proximal-gradient step: the support moves with the true gradient
 * at the Newton point, where the model's linearised gradient would switch on directions that
 * the answer does not have (seen with `nuclear`: ranks 18 → 35 at α = 1). Nuclear + xent on
 * Fashion-MNIST N = 4 000: 1 113 → 949 passes; `sq`: within ±4 %. */
static int pg_after(atf_solver *s, atf_pg_loss *pl, newton_state *st)
{
    int r = fallback_step(s, pl, st);
    st->fallbacks--, st->in_a_row = 0, st->alpha = 1.0; /* part of the Newton step */
    return r;
}

/* The relative proximal-gradient residual at x with the current t (one prox). */
static double residual_at_x(atf_solver *s, newton_state *st)
{
    size_t n = s->n;
    for (size_t i = 0; i < n; i++)
        st->w[i] = st->x[i] - st->t * st->g[i];
    double t0 = atf_now();
    atf_sv_prox(s, st->w, st->xb, 1.0 / st->t);
    s->t.prox += atf_now() - t0;
    return atf_pg_residual(st->x, st->xb, st->g, st->t, n);
}

/* The Nyström sketch of the loss curvature: for xent every NYSTROM_PERIOD Newton steps (the
 * curvature moves with the point, but a sketch a few steps old still preconditions well: on
 * Fashion-MNIST N = 16 000, CG steps 241 → 86 when rebuilt every step, 99 every third step, 207
 * built once; every third step had the fewest passes, 312 against 521), once for the squared
 * loss (its curvature is constant). */
/* Whether the next Newton step builds the sketch afresh (the rule of refresh_preconditioner,
 * and the steps a checkpoint may be taken at). */
static int sketch_built_next(const newton_state *st, const atf_pg_loss *pl)
{
    return st->ny.k >= 1 && (!st->ny.ready || (pl->loss.kind == ATF_LOSS_XENT &&
                                               st->ny_age + 1 >= NYSTROM_PERIOD));
}

/* Whether the sketch grows at the top of this step (NYSTROM_GROWN_RANK's rule). */
static int sketch_grows(const atf_solver *s, const newton_state *st)
{
    if (st->ny.k < 1 || st->ny_grow_to <= st->ny.k)
        return 0;
    double added = 2.0 * (st->ny_grow_to - st->ny.k) * st->ny.n_examples / s->work.N /
                   NYSTROM_PERIOD;
    return st->cg_last > 2.0 * added;
}

/* Whether this step builds the sketch afresh: as it was due, or grown. */
static int sketch_fresh_next(const atf_solver *s, const newton_state *st, const atf_pg_loss *pl)
{
    return sketch_built_next(st, pl) || sketch_grows(s, st);
}

/* The sketch at the larger rank (built by this step; out of memory, it stays as it is). */
static void grow_preconditioner(atf_solver *s, newton_state *st)
{
    int from = st->ny.k;
    if (atf_nys_resize(&st->ny, st->ny_grow_to) != ATF_OK) {
        st->ny_grow_to = 0;
        return;
    }
    st->ny_grown_at = st->iter;
    if (st->b.verbose)
        atf_sv_log(s, "atf newton: the preconditioner's rank grows from %d to %d (the last step "
                      "took %d CG steps)\n", from, st->ny.k, st->cg_last);
}

static void refresh_preconditioner(atf_solver *s, atf_pg_loss *pl, newton_state *st)
{
    if (sketch_grows(s, st))
        grow_preconditioner(s, st);
    if (!sketch_built_next(st, pl)) {
        st->ny_age += st->ny.ready && pl->loss.kind == ATF_LOSS_XENT;
        return;
    }
    st->ny_age = 0;
    if (atf_nys_build(s, pl, &st->ny) == 0) { /* on failure ny.ready stays 0: CG goes without */
        st->ny_weight = st->weight;
        memcpy(st->zx_sketch, st->zx, (size_t)pl->M * sizeof *st->zx_sketch);
    }
}

/* What a Newton step changes before its line search, kept at its top: a step stopped there
 * (the interrupt flag, raised while CG ran) is undone to it, so that the state a checkpoint then
 * keeps is the top of the step and the resumed solve takes the step in full. */
typedef struct {
    double sigma;
    int ny_age, ny_rebuilt, ny_k, ny_grown_at, cg_last, negative_curvature;
    long passes;
    double sketch_passes;
} step_top;

static step_top step_top_of(const atf_solver *s, const atf_pg_loss *pl, const newton_state *st)
{
    return (step_top){.sigma = st->sigma, .ny_age = st->ny_age,
                      .ny_rebuilt = sketch_fresh_next(s, st, pl), .ny_k = st->ny.k,
                      .ny_grown_at = st->ny_grown_at, .cg_last = st->cg_last,
                      .negative_curvature = st->negative_curvature, .passes = s->passes,
                      .sketch_passes = st->ny.passes};
}

/* Back to the top of the step; a sketch built in it is built again by the next one (its top
 * said so: sketch_fresh_next), and one grown in it grows again there (its arrays stay larger,
 * which is harmless). */
static void undo_step(atf_solver *s, newton_state *st, const step_top *top)
{
    st->ny.k = top->ny_k, st->ny_grown_at = top->ny_grown_at;
    st->sigma = top->sigma, st->ny_age = top->ny_age, st->cg_last = top->cg_last;
    st->negative_curvature = top->negative_curvature;
    s->passes = top->passes, st->ny.passes = top->sketch_passes;
    if (top->ny_rebuilt)
        st->ny.ready = 0, st->ny.prepared = 0;
}

/* One Newton step from (z, x). 0 on success (a step was taken), −1 on numerical trouble, 1 when
 * the interrupt flag stopped it before the line search (the state is then its top's). */
static int newton_step(atf_solver *s, atf_pg_loss *pl, atf_jac *jac, newton_state *st)
{
    size_t n = s->n;
    double t = st->t;
    step_top top = step_top_of(s, pl, st);
    atf_sv_prox_support(s, st->xb, st->support); /* of x̄, the last prox (residual_at_x) */
    if (atf_jac_build(s, jac, st->z, t, NULL) != 0 || atf_pg_loss_curvature(pl, st->zx) != 0)
        return fallback_step(s, pl, st);
    atf_jac_restrict(s, jac, st->support, st->xb);
    for (size_t i = 0; i < n; i++)
        st->R[i] = st->z[i] - st->x[i] + t * st->g[i];
    atf_jac_apply(jac, ATF_JAC_MASK, st->R, ATF_JAC_MASK, NULL, st->r);
    cblas_dscal((int)n, -1.0 / t, st->r, 1);
    double lam_mean, dim;
    atf_jac_lambda_stats(jac, &lam_mean, &dim);
    st->sigma = fmax(st->sigma, MU_REL * fmin(st->res, 1.0));
    double mu = st->sigma * (lam_mean > 0.0 ? lam_mean : 1.0 / t);
    refresh_preconditioner(s, pl, st);
    if (st->ny.ready)
        atf_nys_prepare(&st->ny, jac, mu);
    st->cg_last = conjugate_gradient(s, pl, jac, st, forcing(st->res, st->b.eps), mu);
    if (atf_sv_interrupted(s)) {
        undo_step(s, st, &top);
        return 1;
    }
    st->cg_total += st->cg_last;
    for (size_t i = 0; i < n; i++)
        st->dz[i] = st->d[i] - st->R[i] - t * st->Hd[i];
    double slope = atf_dot(st->R, st->d, n) / t;
    if (line_search(s, pl, st, slope)) {
        st->in_a_row = 0;
        if (st->alpha == 1.0) {
            st->sigma /= MU_GROW;
            return pg_after(s, pl, st);
        }
        st->sigma = fmin(2.0 * st->sigma, MU_MAX);
        return fista_burst(s, pl, st);
    }
    st->sigma = fmin(fmax(st->sigma, MU_REL) * MU_GROW * MU_GROW, MU_MAX);
    return fista_burst(s, pl, st);
}

/* After a full Newton step that lowered F but raised the residual by more than RESIDUAL_ROSE
 * (from `before` to st->res), σ becomes MU_GROW² times the σ that step was taken with
 * (newton_step divided it by MU_GROW), as after a failed line search. Without this, from a
 * nonconvex penalty's long shallow valley the steps alternated: a long one (‖d‖ 3–6) raised the residual 2–6×, the floor
 * MU_REL·res rose with it and gave a short step that lowered it 3.6–5×, after which σ fell back
 * to the floor and the next step was long again (Fashion-MNIST N = 7 200, balanced+balanced,
 * xent λ 2.16 → 0.72, first continuation stage: 31 Newton steps and 12 826 passes; with this,
 * 10 steps and 3 202 passes; docs/record/results.md §7f). Growing σ by MU_GROW only equals the
 * floor's own rise and changed nothing. Those rises were 2–6×. After a step that a large σ has made
 * tiny, the proximal-gradient step that follows it moves the residual by 0.02–1 %, up about as
 * often as down; counting those rises too sent σ up 16× each time, to MU_MAX, where the steps
 * did nothing (Fashion-MNIST n = 30 000, λ 2.7: 100 Newton steps
 * at pg residual 4.24e-4, docs/record/solver.md §15). */
#define RESIDUAL_ROSE 1.5
static void residual_rose(newton_state *st, double before)
{
    if (st->alpha == 1.0 && st->res > RESIDUAL_ROSE * before)
        st->sigma = fmin(st->sigma * MU_GROW * MU_GROW * MU_GROW, MU_MAX);
}

/* ---- the run ------------------------------------------------------------------------------ */

static void log_header(atf_solver *s, const atf_loss *loss, const newton_state *st)
{
    char spec[ATF_LOSS_SPECLEN];
    atf_loss_format(loss, spec, sizeof spec);
    atf_sv_log(s, "atf newton: loss %s, %d blocks, %zu variables (%lld before reduction), %d rows, "
               "structure %s\n",
            spec, s->nvars, s->n, (long long)s->n_orig, s->prob->M,
            atf_structure_name(s->structure));
    atf_sv_log(s, "atf newton: prox step %.3e (1/L bound, %d power iterations), eps_rel %.1e, "
               "max_iter %d\n", st->t, st->power_iterations, st->b.eps, st->b.max_iter);
    atf_sv_log(s, "%6s %14s %13s %13s %10s %6s %8s %8s %9s %8s\n", "iter", "objective", "loss",
            "penalty", "pg res", "cg", "step", "passes", "time(s)", "sigma");
}

static void log_row(atf_solver *s, const newton_state *st)
{
    char step[16];
    if (st->iter == 0)
        snprintf(step, sizeof step, "-");
    else if (st->alpha > 0.0)
        snprintf(step, sizeof step, "%.3g", st->alpha);
    else
        snprintf(step, sizeof step, "pg");
    atf_sv_log(s, "%6d %14.7e %13.6e %13.6e %10.3e %6d %8s %8ld %9.2f %8.1e\n", st->iter,
            atf_sv_unscale_objective(s, st->F), atf_sv_unscale_objective(s, st->loss),
            atf_sv_unscale_objective(s, st->pen), st->res, st->cg_last, step, s->passes,
            atf_now() - st->start, st->sigma);
}

/* The start: one proximal-gradient step from x0 gives a pair z, x = prox(z). */
static atf_error start(atf_solver *s, atf_pg_loss *pl, newton_state *st, const double *x0)
{
    size_t n = s->n;
    memcpy(st->x, x0, n * sizeof *st->x);
    atf_sv_apply(s, st->x, st->zx);
    st->pen = atf_sv_objective(s, st->x);
    st->loss = atf_pg_loss_eval(pl, st->zx, st->u);
    st->F = st->pen + st->loss;
    atf_sv_adjoint(s, st->u, st->g);
    st->t = atf_pg_first_step(s, pl, st->w, st->zxt, &st->power_iterations);
    if (!isfinite(st->F))
        return ATF_E_NUMERICAL;
    int fallbacks = st->fallbacks; /* those of earlier stages (continuation) */
    if (fallback_step(s, pl, st) != 0)
        return ATF_E_NUMERICAL;
    st->fallbacks = fallbacks, st->in_a_row = 0; /* the start is not a fallback */
    return ATF_OK;
}

struct atf_newton {
    atf_pg_loss pl;
    atf_jac jac;
    newton_state st;
    int started;
    int checkpointing;   /* hooks.checkpoint is called (atf_sv_newton, one process) */
    int checkpoint_failed;
    int limit_kept; /* the state at the solve's iteration limit is kept (by this or an earlier
                     * stage, which later stages, started with no steps left, must not replace) */
    int (*host_save)(void *ctx); /* the host's checkpoint (atf_newton_checkpoint_by), or NULL */
    void *host_ctx;
    char key[ATF_CHECKPOINT_KEYLEN]; /* of this solve's checkpoints (checkpoint_key) */
};

atf_error atf_newton_init(atf_solver *s, const atf_loss *loss, const atf_sv_budget *b,
                          atf_newton **out, char *err)
{
    *out = NULL;
    atf_newton *nw = calloc(1, sizeof *nw);
    if (!nw) {
        atf_errorf(err, "newton: out of memory");
        return ATF_E_NOMEM;
    }
    atf_error e = atf_pg_loss_init(s, loss, &nw->pl, err);
    if (e != ATF_OK) {
        free(nw);
        return e;
    }
    if ((e = atf_jac_alloc(s, &nw->jac, err)) != ATF_OK) {
        atf_pg_loss_free(&nw->pl), free(nw);
        return e;
    }
    if (alloc_state(&nw->st, s->n, nw->pl.M, s->nvars) != ATF_OK) {
        atf_newton_free(nw);
        atf_errorf(err, "newton: out of memory for %zu variables and %d rows", s->n, nw->pl.M);
        return ATF_E_NOMEM;
    }
    int rank = s->set.newton_rank;
    int alm = loss->kind == ATF_LOSS_SQUARED && loss->lambda == 0.0; /* its subproblems' loss */
    if (rank < 0) /* auto */
        rank = s->work.N < NYSTROM_AUTO_MIN_N && !alm ? 0
               : loss->kind == ATF_LOSS_SQUARED      ? NYSTROM_AUTO_RANK_SQUARED
                                                     : NYSTROM_AUTO_RANK;
    int ny_rank = (int)(s->n / 4 < (size_t)rank ? s->n / 4 : (size_t)rank);
    int ny_examples = s->work.N / NYSTROM_STRIDE;
    if (ny_examples < NYSTROM_MIN_EXAMPLES)
        ny_examples = NYSTROM_MIN_EXAMPLES;
    if (ny_rank >= NYSTROM_MIN_RANK &&
        (e = atf_nys_init(s, &nw->st.ny, ny_examples, ny_rank, err)) != ATF_OK) {
        atf_newton_free(nw);
        return e;
    }
    int grow_to = (int)(s->n / 4 < (size_t)NYSTROM_GROWN_RANK ? s->n / 4 : NYSTROM_GROWN_RANK);
    if (s->set.newton_rank < 0 && loss->kind == ATF_LOSS_XENT && nw->st.ny.k >= 1 &&
        grow_to > nw->st.ny.k)
        nw->st.ny_grow_to = grow_to;
    nw->st.ny_grown_at = -1;
    nw->st.b = *b;
    *out = nw;
    return ATF_OK;
}

void atf_newton_free(atf_newton *nw)
{
    if (!nw)
        return;
    atf_nys_free(&nw->st.ny);
    free_state(&nw->st);
    atf_jac_free(&nw->jac);
    atf_pg_loss_free(&nw->pl);
    free(nw);
}

void atf_newton_set_weight(atf_solver *s, atf_newton *nw, double weight, const double *target)
{
    atf_pg_loss_set_weight(&nw->pl, weight, target);
    newton_state *st = &nw->st;
    double ratio = st->weight > 0.0 ? weight / st->weight : 1.0; /* the curvature grows by this */
    st->weight = weight;
    if (!nw->started)
        return;
    st->t /= ratio;
    if (st->ny.ready) /* the squared loss's curvature is the sketched one times the ratio */
        for (int j = 0; j < st->ny.k; j++)
            st->ny.lam[j] *= ratio;
    st->sigma = 0.0;
    st->loss = atf_pg_loss_eval(&nw->pl, st->zx, st->u);
    st->F = st->pen + st->loss;
    atf_sv_adjoint(s, st->u, st->g);
    /* keep x = prox(z) for the new step t: z = x + t·(the old subgradient (z − x)/t_old) */
    for (size_t i = 0; i < s->n; i++)
        st->z[i] = st->x[i] + (st->z[i] - st->x[i]) / ratio;
}

/* ---- checkpoints (hooks.checkpoint, hooks.resume) -------------------------------------------
 * At the top of a Newton step the state is the pair z, x = prox(z) with its step t, the values
 * F, penalty and loss at x, the regularisation's σ and the counters: everything else a step
 * uses is recomputed from them (A'x, the gradient, the residual, the prox's Jacobian) except
 * the Nyström sketch, which is rebuilt every NYSTROM_PERIOD steps from the point of the step.
 * The sketch (n × rank doubles) is a function of the predictions it was built at (M doubles)
 * and a fixed seed, so Newton's own state (version 2) ends with its age and those predictions,
 * and the resumed solve builds the same sketch again from them; where the next step builds it
 * afresh anyway (or there is none) the age is −1 and the predictions are left out. A state can
 * therefore be taken at the top of any step, and everything after it is the same, bit for bit.
 * The core (header, z, x: atf_newton_state_save) is what a host (alm.c) keeps, with version 1;
 * a version-1 state of Newton's own, from before the sketch was kept (taken only where the next
 * step rebuilds it), is still resumed. */
enum { CP_MAGIC, CP_VERSION, CP_N, CP_T, CP_SIGMA, CP_ALPHA, CP_F, CP_PEN, CP_LOSS, CP_ITER,
       CP_CG_TOTAL, CP_CG_LAST, CP_FALLBACKS, CP_IN_A_ROW, CP_BACKTRACKS, CP_NEGATIVE,
       CP_POWER, CP_PASSES, CP_SKETCH_PASSES, CP_ELAPSED, CP_HEADER };
#define CP_MAGIC_VALUE 5.0412e7 /* "ATF Newton state", any fixed value that is not a count */
#define CP_VERSION_VALUE 1.0    /* the core alone */
#define CP_VERSION_SKETCH 2.0   /* the core, then the sketch's age and predictions */
/* after the core: the sketch's age, its rank and the step it grew at (−1: it did not); then,
 * when the age is 0 or more, zx [M] */
enum { SK_AGE, SK_RANK, SK_GROWN_AT, SK_HEADER };

size_t atf_newton_state_len(const atf_solver *s)
{
    return CP_HEADER + 2 * s->n;
}

/* Whether a checkpoint is taken before this step: someone keeps one and the interval has
 * passed (any step will do: a host rebuilds the sketch itself, atf_newton_rebuild_sketch, and
 * Newton's own state keeps the sketch's predictions). */
static int checkpoint_due(const atf_solver *s, const atf_newton *nw)
{
    return (nw->host_save || nw->checkpointing) &&
           atf_now() - nw->st.last_checkpoint >= s->hooks.checkpoint_seconds;
}

/* The sketch's age in Newton's own state: −1 where the next step builds it afresh (or there is
 * none), else the steps since it was built at zx_sketch. */
static int sketch_age(const atf_solver *s, const newton_state *st, const atf_pg_loss *pl)
{
    return st->ny.k < 1 || !st->ny.ready || sketch_fresh_next(s, st, pl) ? -1 : st->ny_age;
}

static size_t own_state_len(const atf_solver *s, const atf_newton *nw, int age)
{
    return atf_newton_state_len(s) + SK_HEADER + (age >= 0 ? (size_t)nw->pl.M : 0);
}

void atf_newton_state_save(const atf_solver *s, const atf_newton *nw, double *h)
{
    const newton_state *st = &nw->st;
    size_t n = s->n;
    h[CP_MAGIC] = CP_MAGIC_VALUE, h[CP_VERSION] = CP_VERSION_VALUE, h[CP_N] = (double)n;
    h[CP_T] = st->t, h[CP_SIGMA] = st->sigma, h[CP_ALPHA] = st->alpha;
    h[CP_F] = st->F, h[CP_PEN] = st->pen, h[CP_LOSS] = st->loss;
    h[CP_ITER] = st->iter, h[CP_CG_TOTAL] = st->cg_total, h[CP_CG_LAST] = st->cg_last;
    h[CP_FALLBACKS] = st->fallbacks, h[CP_IN_A_ROW] = st->in_a_row;
    h[CP_BACKTRACKS] = st->backtracks, h[CP_NEGATIVE] = st->negative_curvature;
    h[CP_POWER] = st->power_iterations, h[CP_PASSES] = (double)s->passes;
    h[CP_SKETCH_PASSES] = st->ny.passes, h[CP_ELAPSED] = atf_now() - st->start;
    memcpy(h + CP_HEADER, st->z, n * sizeof *h);
    memcpy(h + CP_HEADER + n, st->x, n * sizeof *h);
}

static int save_checkpoint(atf_solver *s, atf_newton *nw)
{
    newton_state *st = &nw->st;
    int age = sketch_age(s, st, &nw->pl);
    atf_checkpoint cp = {.len = (int64_t)own_state_len(s, nw, age)};
    memcpy(cp.key, nw->key, sizeof cp.key);
    cp.data = malloc((size_t)cp.len * sizeof *cp.data);
    if (!cp.data)
        return -1;
    atf_newton_state_save(s, nw, cp.data);
    double *tail = cp.data + atf_newton_state_len(s);
    cp.data[CP_VERSION] = CP_VERSION_SKETCH;
    tail[SK_AGE] = age, tail[SK_RANK] = st->ny.k, tail[SK_GROWN_AT] = st->ny_grown_at;
    if (age >= 0)
        memcpy(tail + SK_HEADER, st->zx_sketch, (size_t)nw->pl.M * sizeof *tail);
    int r = s->hooks.checkpoint(s->hooks.checkpoint_ctx, &cp);
    free(cp.data);
    if (r == 0 && st->b.verbose)
        atf_sv_log(s, "atf newton: checkpoint kept at step %d\n", st->iter);
    return r == 0 ? 0 : -1;
}


/* What a Newton checkpoint belongs to: the method and its state's version, the problem's
 * content, the loss, every block's penalty and the settings that shape the iterates. */
static atf_error checkpoint_key(atf_solver *s, const atf_loss *loss, double eps,
                                const atf_loss *bridge_to, char *key, char *err)
{
    return atf_sv_checkpoint_key(s, "newton state 1", loss, eps, bridge_to, key, err);
}

static int core_header_ok(const atf_solver *s, const double *h, int64_t len, double version)
{
    if ((size_t)len < atf_newton_state_len(s) || h[CP_MAGIC] != CP_MAGIC_VALUE ||
        h[CP_VERSION] != version || h[CP_N] != (double)s->n || !(h[CP_T] > 0.0))
        return 0;
    static const int counts[] = {CP_ITER, CP_CG_TOTAL, CP_CG_LAST, CP_FALLBACKS, CP_IN_A_ROW,
                                 CP_BACKTRACKS, CP_NEGATIVE, CP_POWER};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        if (!atf_sv_count_ok(h[counts[i]], INT_MAX))
            return 0;
    return atf_sv_count_ok(h[CP_PASSES], 1e15) && h[CP_SKETCH_PASSES] >= 0.0;
}

static atf_error not_a_state(const atf_solver *s, int64_t len, char *err)
{
    atf_errorf(err, "newton: the checkpoint's state is not a Newton state of %zu variables "
                    "(%lld numbers, or its header is damaged)", s->n, (long long)len);
    return ATF_E_INPUT;
}

/* The core's values; the sketch is built by the next step (ready = 0) unless load_own builds
 * it from the state's predictions. */
static void load_core(atf_solver *s, atf_newton *nw, const double *h)
{
    newton_state *st = &nw->st;
    size_t n = s->n;
    st->t = h[CP_T], st->sigma = h[CP_SIGMA], st->alpha = h[CP_ALPHA];
    st->F = h[CP_F], st->pen = h[CP_PEN], st->loss = h[CP_LOSS];
    st->iter = (int)h[CP_ITER], st->cg_total = (int)h[CP_CG_TOTAL];
    st->cg_last = (int)h[CP_CG_LAST], st->fallbacks = (int)h[CP_FALLBACKS];
    st->in_a_row = (int)h[CP_IN_A_ROW], st->backtracks = (int)h[CP_BACKTRACKS];
    st->negative_curvature = (int)h[CP_NEGATIVE], st->power_iterations = (int)h[CP_POWER];
    st->ny.passes = h[CP_SKETCH_PASSES];
    st->ny.ready = 0, st->ny_age = 0; /* rebuilt by the next step, as it was then */
    memcpy(st->z, h + CP_HEADER, n * sizeof *st->z);
    memcpy(st->x, h + CP_HEADER + n, n * sizeof *st->x);
    atf_sv_apply(s, st->x, st->zx);
    atf_pg_loss_eval(&nw->pl, st->zx, st->u);
    atf_sv_adjoint(s, st->u, st->g);
    s->passes = (long)h[CP_PASSES];
    st->start = atf_now() - h[CP_ELAPSED];
    st->last_checkpoint = atf_now();
    nw->started = 1;
}

atf_error atf_newton_state_load(atf_solver *s, atf_newton *nw, const double *h, int64_t len,
                                char *err)
{
    if ((size_t)len != atf_newton_state_len(s) || !core_header_ok(s, h, len, CP_VERSION_VALUE))
        return not_a_state(s, len, err);
    load_core(s, nw, h);
    return ATF_OK;
}

/* A sketch built again for a resume: its passes are the resume's own work, not counted, so the
 * counts stay the uninterrupted solve's (the sketch's products count in ny.passes only). */
static int build_uncounted(atf_solver *s, atf_pg_loss *pl, atf_nystrom *ny)
{
    double passes = ny->passes;
    int r = atf_nys_build(s, pl, ny);
    ny->passes = passes;
    return r;
}

/* The sketch built `age` steps ago, built again from the predictions it was built at. */
static int sketch_from(atf_solver *s, atf_newton *nw, const double *zx, int age)
{
    newton_state *st = &nw->st;
    atf_pg_loss *pl = &nw->pl;
    memcpy(st->zx_sketch, zx, (size_t)pl->M * sizeof *st->zx_sketch);
    int r = atf_pg_loss_curvature(pl, st->zx_sketch) != ATF_OK ? -1
                                                                : build_uncounted(s, pl, &st->ny);
    if (r != 0)
        return -1;
    st->ny_weight = st->weight, st->ny_age = age;
    return 0;
}

/* Newton's own state: version 2 (the core, the sketch's age and, when 0 or more, its
 * predictions) or version 1 (the core alone). */
static atf_error load_own(atf_solver *s, atf_newton *nw, const double *h, int64_t len, char *err)
{
    if (core_header_ok(s, h, len, CP_VERSION_VALUE))
        return atf_newton_state_load(s, nw, h, len, err);
    size_t core = atf_newton_state_len(s);
    if (!core_header_ok(s, h, len, CP_VERSION_SKETCH) || (size_t)len < core + SK_HEADER)
        return not_a_state(s, len, err);
    newton_state *st = &nw->st;
    double age = h[core + SK_AGE], rank = h[core + SK_RANK], grown_at = h[core + SK_GROWN_AT];
    int grown = rank != st->ny.k;
    int valid = (age == -1.0 || (age >= 0.0 && age < NYSTROM_PERIOD && age == floor(age) &&
                                 st->ny.k >= 1)) &&
                (!grown || (rank == (double)st->ny_grow_to && grown_at >= 0.0 &&
                            grown_at <= h[CP_ITER] && grown_at == floor(grown_at)));
    if (!valid || (size_t)len != own_state_len(s, nw, valid ? (int)age : -1))
        return not_a_state(s, len, err);
    if (grown && atf_nys_resize(&st->ny, (int)rank) != ATF_OK) {
        atf_errorf(err, "newton: out of memory for the checkpoint's preconditioner (rank %d)",
                   (int)rank);
        return ATF_E_NOMEM;
    }
    st->ny_grown_at = grown ? (int)grown_at : -1;
    load_core(s, nw, h);
    if (age >= 0.0 && sketch_from(s, nw, h + core + SK_HEADER, (int)age) != 0) {
        atf_errorf(err, "newton: the checkpoint's preconditioner could not be built again");
        return ATF_E_NUMERICAL;
    }
    return ATF_OK;
}

/* The state of a checkpoint in place of start(): the point's values as accept() computes them. */
static atf_error resume(atf_solver *s, atf_newton *nw, const atf_checkpoint *cp, char *err)
{
    atf_error e = atf_sv_checkpoint_is_ours("newton", cp, nw->key, err);
    if (e == ATF_OK)
        e = load_own(s, nw, cp->data, cp->len, err);
    if (e == ATF_OK && nw->st.b.verbose)
        atf_sv_log(s, "atf newton: resumed from a checkpoint at step %d (%.0f s into the "
                      "solve)\n", nw->st.iter, cp->data[CP_ELAPSED]);
    return e;
}

double atf_newton_sketch_weight(const atf_newton *nw)
{
    return nw->st.ny.ready ? nw->st.ny_weight : 0.0;
}

int atf_newton_rebuild_sketch(atf_solver *s, atf_newton *nw, const double *weights, int count)
{
    newton_state *st = &nw->st;
    atf_pg_loss *pl = &nw->pl;
    if (count < 1 || st->ny.k < 1)
        return -1;
    const double *target = pl->target_work;
    atf_pg_loss_set_weight(pl, weights[0], target);
    int r = build_uncounted(s, pl, &st->ny);
    atf_pg_loss_set_weight(pl, st->weight, target);
    if (r != 0)
        return -1;
    st->ny_weight = weights[0], st->ny_age = 0;
    for (int i = 1; i < count; i++) { /* as atf_newton_set_weight scaled it */
        double ratio = weights[i] / weights[i - 1];
        for (int j = 0; j < st->ny.k; j++)
            st->ny.lam[j] *= ratio;
    }
    return 0;
}

void atf_newton_checkpoint_by(atf_newton *nw, int (*save)(void *ctx), void *ctx)
{
    nw->host_save = save, nw->host_ctx = ctx;
}

int atf_newton_checkpoint_failed(const atf_newton *nw)
{
    return nw->checkpoint_failed;
}

/* The host's checkpoint or Newton's own; the interval counts from here. */
static int take_checkpoint(atf_solver *s, atf_newton *nw)
{
    int r = nw->host_save ? nw->host_save(nw->host_ctx) : save_checkpoint(s, nw);
    nw->st.last_checkpoint = atf_now();
    return r;
}

/* Stopped by the interrupt flag at the top of a step: the state there is kept whatever the
 * interval, so that a run stopped by Ctrl-C loses none of its steps. */
static atf_status stopped(atf_solver *s, atf_newton *nw)
{
    if ((nw->host_save || nw->checkpointing) && take_checkpoint(s, nw) != 0)
        nw->checkpoint_failed = 1;
    return ATF_STATUS_INTERRUPTED;
}

/* The augmented Lagrangian's subproblems are Newton's: a display names both. */
static const char *progress_name(const atf_solver *s)
{
    return strcmp(s->method->info.name, "alm") == 0 ? "alm (newton)" : "newton";
}

atf_status atf_newton_run(atf_solver *s, atf_newton *nw, const double *x0, double eps,
                          int max_iter, int verbose, int *gave_up)
{
    newton_state *st = &nw->st;
    atf_pg_loss *pl = &nw->pl;
    *gave_up = 0;
    if (!nw->started) {
        if (!(st->start > 0.0)) /* else the time of earlier stages counts (continuation) */
            st->start = atf_now();
        st->last_checkpoint = atf_now();
        if (start(s, pl, st, x0) != ATF_OK)
            return ATF_STATUS_NUMERICAL_ERROR;
        nw->started = 1;
        if (verbose)
            log_header(s, &pl->loss, st);
    }
    atf_status status = ATF_STATUS_MAX_ITERATIONS;
    for (int it = 0; status == ATF_STATUS_MAX_ITERATIONS; it++, st->iter++) {
        double before = st->res;
        st->res = residual_at_x(s, st);
        if (it > 0) /* (a resumed or continued run's first residual has no step behind it) */
            residual_rose(st, before);
        if (verbose)
            log_row(s, st);
        atf_sv_progress(s, (atf_solve_progress){.method = progress_name(s), .iteration = st->iter,
                                          .max_iterations = st->iter - it + max_iter,
                                          .measure = st->res, .tolerance = eps,
                                          .passes = s->passes});
        if (st->res <= eps)
            return ATF_STATUS_SOLVED;
        if (isnan(st->res))
            return ATF_STATUS_NUMERICAL_ERROR;
        if (atf_sv_interrupted(s))
            return stopped(s, nw);
        if (it >= max_iter) { /* the solve's own limit: its state is kept, to go on from */
            if (nw->checkpointing && !nw->limit_kept && take_checkpoint(s, nw) != 0)
                nw->checkpoint_failed = 1;
            nw->limit_kept = nw->checkpointing;
            break;
        }
        if (st->in_a_row >= NEWTON_GIVE_UP) {
            *gave_up = 1;
            break;
        }
        if (checkpoint_due(s, nw) && take_checkpoint(s, nw) != 0) {
            nw->checkpoint_failed = 1;
            return ATF_STATUS_INTERRUPTED;
        }
        int stepped = newton_step(s, pl, &nw->jac, st);
        if (stepped > 0)
            return stopped(s, nw);
        if (stepped < 0)
            status = ATF_STATUS_NUMERICAL_ERROR;
    }
    return status;
}

const double *atf_newton_point(const atf_newton *nw)
{
    return nw->st.x;
}

atf_pg_loss *atf_newton_loss(atf_newton *nw)
{
    return &nw->pl;
}

int atf_newton_steps(const atf_newton *nw)
{
    return nw->st.iter;
}

int atf_newton_cg_steps(const atf_newton *nw)
{
    return nw->st.cg_total;
}

int atf_newton_fallbacks(const atf_newton *nw)
{
    return nw->st.fallbacks;
}

long atf_newton_sketch_passes(const atf_newton *nw)
{
    return lround(nw->st.ny.passes);
}

static void report(atf_solver *s, const newton_state *st, const atf_pg_info *info,
                   atf_status status, atf_result *res)
{
    res->info.status = status;
    res->info.iterations = st->iter;
    res->info.objective = atf_sv_unscale_objective(s, st->F);
    res->info.primal_residual = res->info.dual_residual = NAN;
    res->info.inner_iterations = st->cg_total;
    res->info.fallback_steps = st->fallbacks;
    if (st->b.verbose)
        atf_sv_log(s, "atf newton: %s after %d Newton steps (%d CG steps, %d "
                               "proximal-gradient fallbacks, %ld passes): loss %.9e, penalty "
                               "%.9e, objective %.9e; pg residual %.3e, stationarity %.3e, "
                               "duality gap %.3e, %.2f s\n",
                atf_status_name(status), st->iter, st->cg_total, st->fallbacks, s->passes,
                info->loss_value, info->penalty_value, info->objective, info->pg_residual,
                res->info.stationarity, info->duality_gap, atf_now() - st->start);
}

/* ---- continuation (settings.continuation) -----------------------------------------------------
 * From a warm start solved at another λ, a nonconvex penalty's Newton method spends most of its
 * steps finding the new λ's basin (docs/record/solver.md §15: n = 7 200, balanced+balanced, 7.2 →
 * 2.16 straight: 34 steps, 5 517 passes; through 3.94 to 1e-3: 16 steps, 3 627 passes, the same
 * answer; two bridges cost more). Through λ at most a factor `continuation` apart, each solved
 * loosely (BRIDGE_EPS) from the last, every stage starts near its basin. The stages carry the
 * counters (Newton, CG and fallback steps, passes, time) so that the solve reports its whole
 * work, and each stage checkpoints under a key of its own, so a resumed solve goes on in the
 * stage it was in. */
#define BRIDGE_EPS 1e-3
#define BRIDGES_MAX 16

typedef struct {
    int iter, cg_total, fallbacks, backtracks, negative_curvature;
    double start;
    int ny_rank, ny_grown_at;
    int limit_kept; /* atf_newton's */
} newton_carry;

static void carry_out(const atf_newton *nw, newton_carry *c)
{
    const newton_state *st = &nw->st;
    *c = (newton_carry){st->iter, st->cg_total, st->fallbacks, st->backtracks,
                        st->negative_curvature, st->start, st->ny.k, st->ny_grown_at,
                        nw->limit_kept};
}

/* ... and the sketch's rank, where an earlier stage grew it (out of memory: it stays). */
static void carry_in(newton_state *st, const newton_carry *c)
{
    st->iter = c->iter, st->cg_total = c->cg_total, st->fallbacks = c->fallbacks;
    st->backtracks = c->backtracks, st->negative_curvature = c->negative_curvature;
    st->start = c->start;
    if (c->ny_rank > st->ny.k && c->ny_rank == st->ny_grow_to &&
        atf_nys_resize(&st->ny, c->ny_rank) == ATF_OK)
        st->ny_grown_at = c->ny_grown_at;
}

/* The λ between the warm start's and loss's: λw (λ/λw)^(k/K), k = 1 … K − 1, K = ⌈|ln(λ/λw)| /
 * ln R⌉ (6 digits); none when continuation is off, there is no warm start or it was solved for
 * another kind of loss (or interpolation), or every penalty is convex. */
static int bridges(const atf_solver *s, const atf_loss *loss, double *lam)
{
    double R = s->set.continuation;
    const atf_result *w = s->hooks.warm;
    atf_loss wl;
    char err[ATF_ERRLEN];
    if (!(R > 1.0) || !w || atf_loss_parse(w->loss, &wl, err) != ATF_OK ||
        wl.kind != loss->kind || wl.kind == ATF_LOSS_INTERPOLATE || atf_sv_all_convex(s))
        return 0;
    double q = log(loss->lambda / wl.lambda);
    int K = (int)ceil(fabs(q) / log(R) - 1e-9);
    K = K < 1 ? 1 : K > BRIDGES_MAX + 1 ? BRIDGES_MAX + 1 : K;
    for (int k = 1; k < K; k++) {
        char text[32];
        snprintf(text, sizeof text, "%.6g", wl.lambda * exp(q * k / K));
        lam[k - 1] = strtod(text, NULL);
    }
    return K - 1;
}

/* The stage a resumed solve goes on in: the bridge whose key is the state's, else the last. */
static atf_error resumed_stage(atf_solver *s, const atf_sv_budget *b, const atf_loss *loss,
                               const double *lam, int nb, int *stage, char *err)
{
    *stage = nb;
    for (int k = 0; k < nb && s->hooks.resume; k++) {
        char key[ATF_CHECKPOINT_KEYLEN];
        atf_loss bl = {loss->kind, lam[k]};
        atf_error e = checkpoint_key(s, &bl, fmax(BRIDGE_EPS, b->eps), loss, key, err);
        if (e)
            return e;
        if (strcmp(key, s->hooks.resume->key) == 0) {
            *stage = k;
            break;
        }
    }
    return ATF_OK;
}

/* One Newton solve of loss to eps from x with the counters of the stages before (c; updated),
 * resumed from hooks.resume when resume_here; *out the solve (the caller frees it, also on
 * error). bridge_to: the loss this stage is on the way to (NULL: the last stage). keep: its
 * states go to hooks.checkpoint (not after an interrupted bridge: the last stage's start is
 * not where the uninterrupted solve goes on from, and its state would replace the bridge's). */
static atf_error run_stage(atf_solver *s, const atf_sv_budget *b, const atf_loss *loss,
                           const atf_loss *bridge_to, double eps, const double *x,
                           int resume_here, int keep, newton_carry *c, atf_newton **out,
                           atf_status *status, int *gave_up, char *err)
{
    atf_error e = atf_newton_init(s, loss, b, out, err);
    if (e != ATF_OK)
        return e;
    atf_newton *nw = *out;
    nw->checkpointing = keep && !s->hooks.processes && s->hooks.checkpoint;
    if ((nw->checkpointing || resume_here) &&
        ((e = checkpoint_key(s, loss, eps, bridge_to, nw->key, err)) ||
         (resume_here && (e = resume(s, nw, s->hooks.resume, err)))))
        return e;
    if (nw->started && b->verbose) /* resumed: atf_newton_run does not start it */
        log_header(s, loss, &nw->st);
    if (!nw->started)
        carry_in(&nw->st, c);
    nw->limit_kept = c->limit_kept;
    *status = atf_newton_run(s, nw, x, eps, b->max_iter - nw->st.iter, b->verbose, gave_up);
    if (nw->checkpoint_failed) {
        atf_errorf(err, "newton: the checkpoint at step %d could not be kept", nw->st.iter);
        return ATF_E_IO;
    }
    carry_out(nw, c);
    s->passes += atf_newton_sketch_passes(nw);
    nw->st.ny.passes = 0.0; /* counted */
    return ATF_OK;
}

/* The bridges from the warm start (x) to loss, from stage `first` on; x is the last one's
 * answer (unchanged where a bridge broke down). An interrupted bridge ends them (*stopped = 1)
 * and leaves the interrupt flag set: the last stage then stops at its first check, with its own
 * certificate. */
static atf_error run_bridges(atf_solver *s, const atf_sv_budget *b, const atf_loss *loss,
                             const double *lam, int nb, int first, double *x, newton_carry *c,
                             int *stopped, char *err)
{
    for (int k = first; k < nb; k++) {
        atf_loss bl = {loss->kind, lam[k]};
        double eps = fmax(BRIDGE_EPS, b->eps);
        if (b->verbose)
            atf_sv_log(s, "atf newton: continuation, stage %d of %d: lambda %g on the way to "
                          "%g, to pg residual %.0e\n", k + 1, nb + 1, lam[k], loss->lambda, eps);
        atf_newton *nw = NULL;
        atf_status status;
        int gave_up;
        atf_error e = run_stage(s, b, &bl, loss, eps, x, s->hooks.resume && k == first, 1, c,
                                &nw, &status, &gave_up, err);
        if (e == ATF_OK && nw->started && atf_sv_all_finite(nw->st.x, s->n))
            memcpy(x, nw->st.x, s->n * sizeof *x);
        atf_newton_free(nw);
        if (e != ATF_OK || status == ATF_STATUS_INTERRUPTED) {
            *stopped = e == ATF_OK;
            return e;
        }
    }
    return ATF_OK;
}

/* The note of a solve whose sketch grew (NYSTROM_GROWN_RANK). */
static void growth_note(atf_result *res, const newton_state *st)
{
    char *note = res->info.method_note;
    size_t len = sizeof res->info.method_note, used = strlen(note);
    if (used + 1 < len)
        snprintf(note + used, len - used, "%snewton: preconditioner rank %d from step %d",
                 used ? "; " : "", st->ny.k, st->ny_grown_at);
}

/* The note of a solve that went through bridges. */
static void continuation_note(atf_result *res, const atf_loss *loss, const double *lam, int nb,
                              double eps)
{
    char *note = res->info.method_note;
    size_t len = sizeof res->info.method_note, used = strlen(note);
    int k = snprintf(note + used, len - used, "%snewton: continuation from the warm start's "
                     "lambda to %g through", used ? "; " : "", loss->lambda);
    for (int i = 0; i < nb && k >= 0 && used + (size_t)k < len; i++)
        k += snprintf(note + used + k, len - used - (size_t)k, "%s %g", i ? "," : "", lam[i]);
    if (k >= 0 && used + (size_t)k < len)
        snprintf(note + used + k, len - used - (size_t)k, " (each to pg residual %.0e)", eps);
}

atf_error atf_sv_newton(atf_solver *s, const atf_loss *loss, const atf_sv_budget *b,
                        atf_result *res, double *x, atf_pg_info *info, int *gave_up, char *err)
{
    double lam[BRIDGES_MAX];
    int nb = bridges(s, loss, lam), first = 0, bridge_stopped = 0;
    newton_carry c = {0};
    atf_error e = s->hooks.resume ? resumed_stage(s, b, loss, lam, nb, &first, err) : ATF_OK;
    if (e == ATF_OK && first < nb)
        e = run_bridges(s, b, loss, lam, nb, first, x, &c, &bridge_stopped, err);
    if (e != ATF_OK)
        return e;
    atf_newton *nw = NULL;
    atf_status status;
    e = run_stage(s, b, loss, NULL, b->eps, x, s->hooks.resume && first == nb,
                  !bridge_stopped, &c, &nw, &status, gave_up, err);
    if (e != ATF_OK) {
        atf_newton_free(nw);
        return e;
    }
    memset(info, 0, sizeof *info);
    newton_state *st = &nw->st;
    atf_pg_loss *pl = &nw->pl;
    if (!nw->started || (status == ATF_STATUS_NUMERICAL_ERROR &&
                         !atf_sv_all_finite(st->x, s->n))) {
        memset(st->x, 0, s->n * sizeof *st->x); /* never hand out NaN: B = 0, i.e. f = f0 */
        atf_sv_apply(s, st->x, st->zx);
        st->pen = atf_sv_objective(s, st->x);
        st->loss = atf_pg_loss_eval(pl, st->zx, NULL);
        st->F = st->pen + st->loss;
        st->t = st->t > 0.0 ? st->t : 1.0;
    }
    atf_pg_certify(s, pl, st->x, st->zx, st->t, st->F, st->u, st->g, st->w, st->xb, info, res);
    memcpy(x, st->x, s->n * sizeof *x);
    info->loss_value = atf_sv_unscale_objective(s, st->loss);
    info->penalty_value = atf_sv_unscale_objective(s, st->pen);
    info->objective = atf_sv_unscale_objective(s, st->F);
    info->step = st->t;
    info->iterations = st->iter;
    info->backtracks = st->backtracks;
    report(s, st, info, status, res);
    if (nb > 0)
        continuation_note(res, loss, lam, nb, fmax(BRIDGE_EPS, b->eps));
    if (st->ny_grown_at >= 0)
        growth_note(res, st);
    atf_newton_free(nw);
    return ATF_OK;
}

/* The method: Newton-CG from the warm start or B = 0; where its line search kept failing it
 * says so and FISTA continues from its last point with the iterations left of the budget. */
atf_error atf_sv_newton_run(atf_solver *s, const atf_sv_budget *b, atf_result *res, double *x,
                            char *err)
{
    atf_sv_start(s, x);
    atf_pg_info info;
    int gave_up = 0;
    atf_error e = atf_sv_newton(s, &s->loss, b, res, x, &info, &gave_up, err);
    res->info.pg_residual = info.pg_residual;
    res->info.duality_gap = info.duality_gap;
    if (e != ATF_OK || !gave_up)
        return e;
    int steps = res->info.iterations, cg = res->info.inner_iterations;
    int fallbacks = res->info.fallback_steps;
    size_t used = strlen(res->info.method_note);
    snprintf(res->info.method_note + used, sizeof res->info.method_note - used,
             "%snewton: the line search failed %d times in a row after %d steps (pg residual "
             "%.2e): fista continued from there", used ? "; " : "", fallbacks, steps,
             info.pg_residual);
    atf_sv_budget rest = *b;
    rest.max_iter = b->max_iter - steps > 1 ? b->max_iter - steps : 1;
    e = atf_sv_fista(s, &s->loss, &rest, res, x, &info, err);
    res->info.pg_residual = info.pg_residual;
    res->info.duality_gap = info.duality_gap;
    res->info.iterations += steps;
    res->info.inner_iterations = cg;
    res->info.fallback_steps = fallbacks;
    return e;
}
