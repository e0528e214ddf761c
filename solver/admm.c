/* admm.c — the method admm: the ADMM (Douglas–Rachford) loop and its iteration table
 * (docs/math.md; docs/record/solver.md §1–§7).
 *
 *   X⁺ = Π(Z − U);  X̂ = αX⁺ + (1−α)Z;  Z⁺ = prox_{Ω̃/ρ}(X̂ + U);  U⁺ = U + X̂ − Z⁺
 *
 * Stopping as in Boyd et al. / OSQP: ‖X − Z‖ ≤ ε_abs√n + ε_rel·max(‖X‖, ‖Z‖) and
 * ρ‖Z − Z_prev‖ ≤ ε_abs√n + ε_rel·‖ρU‖ — and then only if the certificate of the polished
 * point is ≤ ε_rel; if not, both tolerances shrink (certified) and the iteration goes on. ρ is rebalanced (OSQP's rule) from the two normalised
 * residuals, at most every RHO_PERIOD iterations and only when it would change by more than
 * RHO_FACTOR; the scaled dual U is rescaled so that ρU is unchanged. The projection does not
 * depend on ρ, so nothing is refactorised.
 *
 * Start: Z0 is the warm start or the least-squares (NTK min-norm) point, and U0 is the part of
 * ∇Ω̃(Z0)/ρ in range(Aᵀ) — the value U takes at a fixed point (there ρU ∈ ∂Ω̃(Z) and
 * U ∈ range(Aᵀ)), so a start near the solution is not spoiled by a zero dual.
 *
 * Nonconvex penalties get two safeguards (docs/record/solver.md §6): ρ never falls below the
 * weak-convexity bound through balancing, and a stalled run (cycle or rest point) switches to
 * α = 1 and a larger ρ.
 *
 * Checkpoints (hooks.checkpoint / hooks.resume, one process; docs/record/solver.md §2.2) are taken
 * at the top of an iteration: Z, U, the last X⁺ and the loop's bookkeeping are all the state there
 * is (the projection and ρ0 come from the problem again), so a resumed run takes the same
 * iterations to the same answer. */
#include <cblas.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linsys.h"
#include "pcg.h"

#define RHO_PERIOD 50   /* iterations between two changes of ρ, at least */
#define RHO_FACTOR 5.0  /* ρ changes only by more than this factor */
#define RHO_RANGE 1e6   /* ρ stays within [ρ0/RHO_RANGE, ρ0·RHO_RANGE] */
/* Singular values below this fraction of ‖Z0‖ count as zero in the initial dual (nuclear). */
#define WARM_RANK_CUT 1e-7
#define STALL_FLAT 1e-3 /* a window whose best merit is not 0.1% better than the last one stalled */
/* Weak convexity scan: ω̃' on a log grid of WEAK_GRID points over [WEAK_LO·V, WEAK_HI·V]. */
#define WEAK_GRID 600
#define WEAK_LO 1e-8
#define WEAK_HI 4.0
/* The residual test passed but the certificate of the polished point is above eps_rel: both
 * tolerances shrink by this factor and the iteration goes on (measured: Fashion-MNIST n = 2 000,
 * M = 20 000, balanced+balanced stopped with certificate 1.02–1.03e-6 at eps_rel = 1e-6). */
#define CERT_TIGHTEN 0.3

/* ADMM's own settings and what it derives from the data once, at atf_solver_init
 * (atf_sv_admm_prepare), kept for every solve of the same solver: its own part of the solver
 * (s->method_data). */
typedef struct {
    double alpha;         /* over-relaxation (settings.alpha) */
    double rho;           /* the multiplier of the data-scaled ρ0 (settings.rho) */
    double eps_abs;       /* the absolute tolerance (settings.eps_abs) */
    int adaptive_rho;     /* residual balancing (settings.adaptive_rho) */
    double rho0;          /* initial ρ (data-scaled, times settings.rho) */
    double rho_min;       /* floor of ρ from the weak convexity of nonconvex ω̃ (0 if convex) */
    double tol_unit_pri;  /* what ε_abs multiplies in the primal test: ‖x_ls‖ (data units) */
    double tol_unit_dual; /* ... and in the dual test: curvature scale × ‖x_ls‖ */
    int nonconvex;        /* some ω̃ is nonconvex */
    int curvature_underflow; /* ω̃'(σ)/σ at the least-squares point is not a normal double */
} admm_setup;

typedef struct {
    const atf_sv_budget *b;
    const admm_setup *a;
    double *z, *u, *w, *zprev;
    double *xc;   /* the polished point whose certificate was checked (the answer if solved) */
    double *lam;  /* [M] by PCG: the λ of the last iteration's projection, where the next one
                     starts (NULL: a direct projection, which needs no start) */
    int lam_ready; /* lam holds one */
    double rho, alpha;
    double pri, dual, eps_pri, eps_dual;
    double tighten, cert; /* factor on both tolerances (1, then CERT_TIGHTEN^k); xc's certificate */
    int iter;
    double start;
    int rows; /* the table's rows are due: some process is verbose (each row's constraint
                 residual is a product, which every process must take part in) */
    /* stagnation guard: best merit max(pri/eps_pri, dual/eps_dual) per window of RHO_PERIOD */
    double window_best, previous_best;
    int window_start;
    int last_change; /* the iteration ρ last changed at */
    /* checkpoints */
    int checkpointing;        /* hooks.checkpoint is called */
    int checkpoint_failed;    /* the run ended because a state could not be kept */
    int first;                /* the first iteration of this run (1, or after the resumed one) */
    double last_checkpoint;   /* when the last state was kept (or the run began) */
    int cg_before, cg0;       /* PCG steps of the iterations before a resume; the count at start */
    double passes_before;     /* passes over the data before the resume (since ADMM began) */
    long passes0;             /* s->passes when ADMM began (after the setup) */
    int cg_cut;               /* PCG steps and passes of iterations an interrupt cut short */
    long passes_cut;
    struct admm_top *top;     /* the state at the top of the iteration (projection by PCG) */
    char key[ATF_CHECKPOINT_KEYLEN];
} admm_state;

/* By PCG an interrupt can cut a projection short, and an iteration that used it is not ADMM's:
 * the state at the top of each iteration is copied, and an iteration during which the flag rose
 * is undone (the stop keeps, and returns, the state before it). */
typedef struct admm_top {
    admm_state st;
    double *z, *u, *x, *lam;
    int cg;      /* PCG steps, */
    long passes; /* and passes at the top */
} admm_top;

/* ‖a − b‖, scaled by the largest difference so that squares neither overflow nor underflow. */
static double dist(const double *a, const double *b, size_t n)
{
    double big = 0.0, d2 = 0.0;
    for (size_t i = 0; i < n; i++)
        big = fmax(big, fabs(a[i] - b[i]));
    if (!(big > 0.0) || !isfinite(big))
        return big;
    for (size_t i = 0; i < n; i++)
        d2 += ((a[i] - b[i]) / big) * ((a[i] - b[i]) / big);
    return big * sqrt(d2);
}

/* The projection is iterative (PCG): it can be cut short, and it starts from the last λ. */
static int by_pcg(const atf_solver *s)
{
    return s->proj.ls->backend->iterative;
}

/* Refinement passes of the projections in the loop: what the backend needs for its answers to
 * be exact to rounding (linsys.h, atf_linsys.refine). */
static int in_loop_refinement(const atf_solver *s)
{
    return s->proj.ls->refine;
}

static void log_header(const atf_solver *s, const admm_state *st)
{
    atf_sv_log(s, "atf admm: %d blocks, %zu variables (%lld before reduction), %d constraints, "
               "structure %s\n",
            s->nvars, s->n, (long long)s->n_orig, s->prob->M,
            atf_structure_name(s->structure));
    if (by_pcg(s)) /* no Gram: no rank or condition number known */
        atf_sv_log(s, "atf admm: projection by %s, no Gram in double; ",
                   s->proj.ls->backend->description);
    else
        atf_sv_log(s, "atf admm: projection by %s, rank %d, condition %.1e (%d refinement "
                   "passes); ", s->proj.ls->backend->description, s->proj.ls->rank,
                   s->proj.ls->kappa, in_loop_refinement(s));
    atf_sv_log(s, "rho0 %.3e (floor %.3e), alpha %.2f, eps_abs %.1e, eps_rel %.1e, "
               "max_iter %d\n", atf_sv_unscale_rho(s, st->a->rho0),
            atf_sv_unscale_rho(s, st->a->rho_min), st->a->alpha, st->a->eps_abs, st->b->eps,
            st->b->max_iter);
    atf_sv_log(s, "atf admm: equilibrated: %s, variables in units of 2^%d "
               "(docs/record/solver.md §7)\n",
            s->eq_mode == ATF_EQ_ROWS ? "each row by its own power of two"
                                      : "all rows by one power of two",
            s->var_exp);
    atf_sv_log(s, "%8s %14s %10s %10s %10s %10s %9s\n", "iter", "objective", "pri res", "dual res",
            "constr(Z)", "rho", "time(s)");
}

static void log_row(atf_solver *s, const admm_state *st)
{
    double obj = atf_sv_prox_objective(s, st->z);
    double cres = atf_sv_constraint_norm(s, st->z, s->work.r);
    if (s->rnorm > 0.0)
        cres /= s->rnorm;
    if (st->b->verbose)
        atf_sv_log(s, "%8d %14.7e %10.3e %10.3e %10.3e %10.3e %9.3f\n", st->iter,
            atf_sv_unscale_objective(s, obj), atf_sv_unscale_primal(s, st->pri),
            atf_sv_unscale_dual(s, st->dual), cres, atf_sv_unscale_rho(s, st->rho),
            atf_now() - st->start);
}

static void log_summary(const atf_solver *s, const atf_result *res, const admm_state *st)
{
    /* The clock of a resumed solve counts its earlier runs; the projection and prox times are
     * this process's, so the line says so rather than pair a total with parts of one run. */
    atf_sv_log(s, "atf admm: %s after %d iterations: pri res %.3e (tol %.3e), dual res %.3e "
            "(tol %.3e), %.3f s (%sprojection %.3f s, prox %.3f s)\n",
            atf_status_name(res->info.status), st->iter, atf_sv_unscale_primal(s, st->pri),
            atf_sv_unscale_primal(s, st->eps_pri), atf_sv_unscale_dual(s, st->dual),
            atf_sv_unscale_dual(s, st->eps_dual), atf_now() - st->start,
            st->first > 1 ? "this run: " : "", s->t.projection, s->t.prox);
}

/* μ = max(0, −inf ω̃'') estimated by finite differences of ω̃' on a log grid up to vmax.
 * For ρ > μ the prox objective t·ω̃(d) + ½(d − v)² is strongly convex, so the prox is single
 * valued and continuous; below it the prox jumps and nonconvex ADMM can cycle (observed:
 * `abs` vector blocks from a cold start 2-cycle at ρ ≈ μ/2 and converge at ρ ≥ 2μ). A concave
 * kink of ω̃ (e.g. pow with p < 1) shows up as a large μ. */
static double weak_convexity(const atf_penalty *pen, double vmax)
{
    if (atf_penalty_is_convex(pen) || !(vmax > 0.0))
        return 0.0;
    double ratio = pow(WEAK_HI / WEAK_LO, 1.0 / WEAK_GRID);
    double v0 = WEAK_LO * vmax, d0 = atf_penalty_deriv(pen, v0), mu = 0.0;
    for (int i = 1; i <= WEAK_GRID; i++) {
        double v1 = v0 * ratio, d1 = atf_penalty_deriv(pen, v1);
        if (isfinite(d0) && isfinite(d1))
            mu = fmax(mu, (d0 - d1) / (v1 - v0));
        v0 = v1;
        d0 = d1;
    }
    return mu;
}

/* ρ0 from the data (atf_sv_rho_scale) and, for nonconvex penalties, the weak-convexity bound
 * 2μ that guard_stagnation and rebalance respect, into a. */
static void rho_setup(atf_solver *s, admm_setup *a)
{
    /* ‖B0‖_F bounds every singular value, entry and norm of the least-squares point */
    double vmax = atf_sv_norm(s->x_ls, s->n), mu = 0.0;
    if (s->structure == ATF_GLOBAL_FULL)
        mu = weak_convexity(&s->full_pen, vmax);
    else
        for (int l = 0; l < s->nvars; l++)
            mu = fmax(mu, weak_convexity(&s->vars[l].pen, vmax));
    a->rho_min = a->rho * 2.0 * mu;
    double curvature = atf_sv_rho_scale(s);
    a->curvature_underflow = curvature == 0.0;
    if (a->curvature_underflow)
        curvature = 2.0; /* unused: the run refuses to iterate */
    a->rho0 = a->rho * curvature;
    /* ε_abs is measured in the data's own units: ε_abs·√n times the RMS entry of the
     * least-squares point (and of its penalty gradient for the dual). A bare ε_abs·√n would
     * dominate the relative term on large problems (making --tol inert) and would make the
     * stopping point depend on how r and the features are scaled. B0 = 0 only when r = 0
     * (the equilibration keeps a nonzero r far above the denormal range); then the start is
     * the only size there is (a warm start; without one every iterate is exactly 0 and any
     * unit will do). */
    double warm = s->warm ? atf_sv_norm(s->warm, s->n) : 0.0;
    double unit = vmax > 0.0 ? vmax : warm > 0.0 ? warm : 1.0;
    a->tol_unit_pri = unit;
    a->tol_unit_dual = curvature * unit;
    a->nonconvex = !atf_sv_all_convex(s);
}

atf_error atf_sv_admm_prepare(atf_solver *s, char *err)
{
    admm_setup *a = calloc(1, sizeof *a);
    if (!a) {
        atf_errorf(err, "admm: out of memory");
        return ATF_E_NOMEM;
    }
    a->alpha = s->set.alpha, a->rho = s->set.rho, a->eps_abs = s->set.eps_abs;
    a->adaptive_rho = s->set.adaptive_rho;
    rho_setup(s, a);
    s->method_data = a;
    return ATF_OK;
}

/* U0 = P ∇Ω̃(Z0) / ρ (P the projection onto range(Aᵀ)); w is scratch. */
static void initial_dual(atf_solver *s, admm_state *st)
{
    size_t n = s->n;
    atf_sv_gradient(s, st->z, st->u, WARM_RANK_CUT * atf_sv_norm(st->z, n));
    for (size_t i = 0; i < n; i++)
        if (!isfinite(st->u[i])) {
            memset(st->u, 0, n * sizeof *st->u);
            return;
        }
    memcpy(st->w, st->u, n * sizeof *st->w);
    atf_sv_project(s, st->w, NULL, in_loop_refinement(s)); /* w = G − P G */
    for (size_t i = 0; i < n; i++)
        st->u[i] = (st->u[i] - st->w[i]) / st->rho;
}

static void project_timed(atf_solver *s, double *v, int refine)
{
    double t0 = atf_now();
    atf_sv_project(s, v, s->work.r, refine);
    s->t.projection += atf_now() - t0;
}

/* One iteration; x receives X⁺. */
static void iterate(atf_solver *s, admm_state *st, double *x)
{
    size_t n = s->n;
    double alpha = st->alpha;
    int refine = in_loop_refinement(s);
    for (size_t i = 0; i < n; i++)
        x[i] = st->z[i] - st->u[i];
    if (st->lam) { /* by PCG from the last λ: as the iterates settle, it is nearly this one */
        double t0 = atf_now();
        atf_sv_project_from(s, x, s->work.r, st->lam_ready ? st->lam : NULL, st->lam);
        st->lam_ready = 1;
        s->t.projection += atf_now() - t0;
    } else {
        project_timed(s, x, refine);
    }
    for (size_t i = 0; i < n; i++) /* w = X̂ + U */
        st->w[i] = alpha * x[i] + (1.0 - alpha) * st->z[i] + st->u[i];
    double *tmp = st->zprev;
    st->zprev = st->z;
    st->z = tmp;
    double t0 = atf_now();
    atf_sv_prox(s, st->w, st->z, st->rho);
    s->t.prox += atf_now() - t0;
    for (size_t i = 0; i < n; i++) /* U⁺ = U + X̂ − Z⁺ = w − Z⁺ */
        st->u[i] = st->w[i] - st->z[i];
}

static void residuals(const atf_solver *s, admm_state *st, const double *x)
{
    size_t n = s->n;
    /* the units come from the unreduced least-squares point: the reduction is exact (the
     * iterates are the same up to the rotation by Q_c, Q_r), so the stopping rule must not
     * depend on it either */
    st->pri = dist(x, st->z, n);
    st->dual = st->rho * dist(st->z, st->zprev, n);
    double scale_pri = fmax(atf_sv_norm(x, n), atf_sv_norm(st->z, n));
    double scale_dual = st->rho * atf_sv_norm(st->u, n);
    const admm_setup *a = st->a;
    st->eps_pri = st->tighten * (a->eps_abs * a->tol_unit_pri + st->b->eps * scale_pri);
    st->eps_dual = st->tighten * (a->eps_abs * a->tol_unit_dual + st->b->eps * scale_dual);
}

static void set_rho(const atf_solver *s, admm_state *st, double rho_new)
{
    cblas_dscal((int)s->n, st->rho / rho_new, st->u, 1); /* keep ρU */
    st->rho = rho_new;
}

/* OSQP-style balancing: ρ ← ρ·√(pri_rel / dual_rel). Returns 1 if ρ changed. */
static int rebalance(const atf_solver *s, admm_state *st, const double *x)
{
    size_t n = s->n;
    double scale_pri = fmax(atf_sv_norm(x, n), atf_sv_norm(st->z, n));
    double scale_dual = st->rho * atf_sv_norm(st->u, n);
    if (!(scale_pri > 0.0) || !(scale_dual > 0.0) || !(st->dual > 0.0) || !(st->pri > 0.0))
        return 0;
    double ratio = sqrt((st->pri / scale_pri) / (st->dual / scale_dual));
    /* with a nonconvex ω̃, ρ may fall below ρ0 only down to the weak-convexity bound */
    const admm_setup *a = st->a;
    double lowest = a->nonconvex ? fmin(a->rho0, a->rho_min) : a->rho0 / RHO_RANGE;
    double rho_new = fmin(a->rho0 * RHO_RANGE, fmax(lowest, st->rho * ratio));
    if (!(rho_new > RHO_FACTOR * st->rho || rho_new < st->rho / RHO_FACTOR))
        return 0;
    set_rho(s, st, rho_new);
    return 1;
}

/* With a nonconvex ω̃ a small ρ can leave ADMM in a cycle or at a spurious rest point (the
 * prox jumps where ρ < μ), and over-relaxation makes that likelier. The data-scaled ρ0 and the
 * given α are kept as long as the residuals improve; when the best merit of a whole window is
 * not 0.1% better than the previous window's (a cycle or rest point repeats it; a cycle that
 * drifts outwards makes it worse), α drops to 1 (plain Douglas–Rachford) and ρ grows by
 * RHO_FACTOR towards the weak-convexity bound 2μ (never beyond it: a large ρ makes ADMM crawl).
 * Seen at M = 80 000 (balanced+balanced, ρ0 = 0.63·2μ): a 2-cycle whose residual grew by 1% an
 * iteration, which a test for equal windows never caught. Counting worse windows as stalls too
 * took tests/solver/study_nonconvex.py from 11 runs not converged and 186 228 iterations to 9
 * and 131 122 (docs/record/solver.md §6). Residual balancing stays free afterwards. Returns 1 if ρ
 * changed. */
static int guard_stagnation(const atf_solver *s, admm_state *st)
{
    double merit = fmax(st->pri / fmax(st->eps_pri, DBL_MIN),
                        st->dual / fmax(st->eps_dual, DBL_MIN));
    st->window_best = fmin(st->window_best, merit);
    if (st->iter - st->window_start < RHO_PERIOD)
        return 0;
    int stalled = st->window_best >= (1.0 - STALL_FLAT) * st->previous_best;
    st->previous_best = st->window_best;
    st->window_best = INFINITY;
    st->window_start = st->iter;
    if (!stalled || !st->a->nonconvex)
        return 0;
    st->alpha = fmin(st->alpha, 1.0);
    if (st->rho >= st->a->rho_min)
        return 0;
    set_rho(s, st, fmin(st->a->rho_min, RHO_FACTOR * st->rho));
    return 1;
}

/* Stationarity at X with the dual candidate P(ρU) ∈ range(Aᵀ); for smooth penalties also with
 * P∇Ω̃(X), and the better of the two counts (either one in range(Aᵀ) close to ∂Ω̃(X) certifies
 * X: P∇Ω̃ is the classic ‖G − PG‖/‖G‖, the dual is the one that works far out in a tail, where
 * ω̃ is the nuclear norm to machine precision). Singular values of X below 2‖X − Z‖ are zero
 * in Z (Weyl), hence treated as zero. */
static double admm_certificate(atf_solver *s, admm_state *st, const double *x)
{
    size_t n = s->n;
    memcpy(st->w, st->u, n * sizeof *st->w);
    atf_sv_project(s, st->w, NULL, 1); /* w = U − P U */
    for (size_t i = 0; i < n; i++)
        st->w[i] = st->rho * (st->u[i] - st->w[i]);
    double tau = 2.0 * st->pri + 1e-12 * atf_sv_norm(x, n);
    double dual = atf_sv_stationarity(s, x, st->w, tau);
    if (atf_sv_any_nuclear(s))
        return dual;
    double gradient = atf_sv_stationarity(s, x, NULL, tau);
    return isnan(dual) ? gradient : fmin(dual, gradient);
}

/* The residual test has passed: is the answer certified? The iterate is polished as the answer
 * would be (into xc) and its certificate must be ≤ eps_rel; a NaN certificate (nothing to
 * improve by iterating) is left to check_answer. Otherwise the tolerances tighten and the run
 * goes on: `solved` means certified, not only small residuals. */
static int certified(atf_solver *s, admm_state *st, const double *x)
{
    memcpy(st->xc, x, s->n * sizeof *x);
    project_timed(s, st->xc, 3);
    st->cert = admm_certificate(s, st, st->xc);
    if (!(st->cert > st->b->eps))
        return 1;
    st->tighten *= CERT_TIGHTEN;
    if (st->b->verbose)
        atf_sv_log(s, "atf admm: iteration %d: certificate %.3e > eps_rel %.1e; tolerances "
                   "tightened to %.1e of the set ones\n", st->iter, st->cert, st->b->eps,
                   st->tighten);
    return 0;
}

/* ---- checkpoints ----------------------------------------------------------------------------
 * At the top of iteration `done` + 1: the header below, then Z, U and the last X⁺ [n each] and,
 * by PCG, the last projection's λ [M] (where the next one starts). A state is finite: an
 * infinite merit (none yet) is kept as −1. */
enum { AD_MAGIC, AD_VERSION, AD_N, AD_DONE, AD_RHO, AD_ALPHA, AD_TIGHTEN, AD_CERT, AD_PRI,
       AD_DUAL, AD_EPS_PRI, AD_EPS_DUAL, AD_WINDOW_BEST, AD_PREVIOUS_BEST, AD_WINDOW_START,
       AD_LAST_CHANGE, AD_ELAPSED, AD_CG_STEPS, AD_PASSES, AD_LAM_LEN, AD_LAM_READY,
       AD_HEADER };
#define AD_MAGIC_VALUE 2.4160e7 /* "ATF ADMM state", any fixed value that is not a count */
#define AD_VERSION_VALUE 1.0

static double finite_or(double v) { return isfinite(v) ? v : -1.0; }
static double back_from(double v) { return v < 0.0 ? INFINITY : v; }

/* The numbers of a state: λ only by PCG. */
static size_t state_len(const atf_solver *s, const admm_state *st)
{
    return AD_HEADER + 3 * s->n + (st->lam ? (size_t)s->work.M : 0);
}

/* The projections' PCG steps of the iterations so far (those before a resume with them, those
 * an interrupt cut short without them), and their passes over the data since ADMM began. */
static int cg_steps_so_far(const atf_solver *s, const admm_state *st)
{
    return st->cg_before + atf_sv_cg_steps(s) - st->cg0 - st->cg_cut;
}
static double passes_so_far(const atf_solver *s, const admm_state *st)
{
    return st->passes_before + (double)(s->passes - st->passes0 - st->passes_cut);
}

/* The key: the method, its state's version and the settings of its own that shape the
 * iterates, then what every checkpoint key names (atf_sv_checkpoint_key). The projection's kind
 * is not in it: by the Gram or by PCG the iterates agree to rounding, and a state kept by one
 * may go on with the other when the memory differs. */
static atf_error admm_key(atf_solver *s, admm_state *st, char *err)
{
    char state[256];
    snprintf(state, sizeof state, "admm state 1; rho %.17g; alpha %.17g; eps_abs %.17g; "
             "adaptive_rho %d", st->a->rho, st->a->alpha, st->a->eps_abs, st->a->adaptive_rho);
    return atf_sv_checkpoint_key(s, state, &s->loss, st->b->eps, NULL, st->key, err);
}

/* Hands the state at the top of iteration done + 1 to hooks.checkpoint: 0, or −1 when the
 * caller could not keep it. */
static int keep_state(atf_solver *s, admm_state *st, const double *x, int done)
{
    size_t n = s->n;
    atf_checkpoint cp = {.len = (int64_t)state_len(s, st)};
    memcpy(cp.key, st->key, sizeof cp.key);
    double *h = cp.data = malloc((size_t)cp.len * sizeof *cp.data);
    if (!h)
        return -1;
    h[AD_MAGIC] = AD_MAGIC_VALUE, h[AD_VERSION] = AD_VERSION_VALUE, h[AD_N] = (double)n;
    h[AD_DONE] = done, h[AD_RHO] = st->rho, h[AD_ALPHA] = st->alpha, h[AD_TIGHTEN] = st->tighten;
    h[AD_CERT] = finite_or(st->cert), h[AD_PRI] = finite_or(st->pri);
    h[AD_DUAL] = finite_or(st->dual), h[AD_EPS_PRI] = st->eps_pri, h[AD_EPS_DUAL] = st->eps_dual;
    h[AD_WINDOW_BEST] = finite_or(st->window_best);
    h[AD_PREVIOUS_BEST] = finite_or(st->previous_best);
    h[AD_WINDOW_START] = st->window_start, h[AD_LAST_CHANGE] = st->last_change;
    h[AD_ELAPSED] = atf_now() - st->start;
    h[AD_CG_STEPS] = cg_steps_so_far(s, st), h[AD_PASSES] = passes_so_far(s, st);
    h[AD_LAM_LEN] = st->lam ? s->work.M : 0, h[AD_LAM_READY] = st->lam_ready;
    memcpy(h + AD_HEADER, st->z, n * sizeof *h);
    memcpy(h + AD_HEADER + n, st->u, n * sizeof *h);
    memcpy(h + AD_HEADER + 2 * n, x, n * sizeof *h);
    if (st->lam)
        memcpy(h + AD_HEADER + 3 * n, st->lam, (size_t)s->work.M * sizeof *h);
    int r = atf_sv_all_finite(h, (size_t)cp.len) ? s->hooks.checkpoint(s->hooks.checkpoint_ctx,
                                                                        &cp)
                                                  : -1;
    free(cp.data);
    st->last_checkpoint = atf_now();
    if (r == 0 && st->b->verbose)
        atf_sv_log(s, "atf admm: checkpoint kept after iteration %d\n", done);
    return r == 0 ? 0 : -1;
}

static int state_ok(const atf_solver *s, const admm_state *st, const atf_checkpoint *cp)
{
    const double *h = cp->data;
    return cp->len == (int64_t)state_len(s, st) && h[AD_MAGIC] == AD_MAGIC_VALUE &&
           h[AD_VERSION] == AD_VERSION_VALUE && h[AD_N] == (double)s->n &&
           atf_sv_count_ok(h[AD_DONE], st->b->max_iter) && h[AD_RHO] > 0.0 &&
           h[AD_TIGHTEN] > 0.0 && h[AD_TIGHTEN] <= 1.0 &&
           atf_sv_count_ok(h[AD_WINDOW_START], h[AD_DONE]) &&
           atf_sv_count_ok(h[AD_LAST_CHANGE], h[AD_DONE]) &&
           atf_sv_count_ok(h[AD_CG_STEPS], INT_MAX) && h[AD_PASSES] >= 0.0 &&
           h[AD_LAM_LEN] == (st->lam ? s->work.M : 0) &&
           (h[AD_LAM_READY] == 0.0 || h[AD_LAM_READY] == 1.0);
}

/* Go on from hooks.resume (its key checked): the bookkeeping, Z, U and X⁺. */
static atf_error resume_state(atf_solver *s, admm_state *st, double *x, char *err)
{
    const atf_checkpoint *cp = s->hooks.resume;
    atf_error e = atf_sv_checkpoint_is_ours("admm", cp, st->key, err);
    if (e)
        return e;
    if (!state_ok(s, st, cp)) {
        atf_errorf(err, "admm: the checkpoint's state is not an ADMM state of %zu variables "
                        "%s(%lld numbers, or its header is damaged)", s->n,
                   st->lam ? "and a projection by PCG " : "", (long long)cp->len);
        return ATF_E_INPUT;
    }
    const double *h = cp->data;
    size_t n = s->n;
    st->iter = (int)h[AD_DONE], st->first = st->iter + 1;
    st->rho = h[AD_RHO], st->alpha = h[AD_ALPHA], st->tighten = h[AD_TIGHTEN];
    st->cert = h[AD_CERT] < 0.0 ? NAN : h[AD_CERT];
    st->pri = back_from(h[AD_PRI]), st->dual = back_from(h[AD_DUAL]);
    st->eps_pri = h[AD_EPS_PRI], st->eps_dual = h[AD_EPS_DUAL];
    st->window_best = back_from(h[AD_WINDOW_BEST]);
    st->previous_best = back_from(h[AD_PREVIOUS_BEST]);
    st->window_start = (int)h[AD_WINDOW_START], st->last_change = (int)h[AD_LAST_CHANGE];
    st->start = atf_now() - h[AD_ELAPSED];
    st->cg_before = (int)h[AD_CG_STEPS], st->passes_before = h[AD_PASSES];
    memcpy(st->z, h + AD_HEADER, n * sizeof *st->z);
    memcpy(st->u, h + AD_HEADER + n, n * sizeof *st->u);
    memcpy(x, h + AD_HEADER + 2 * n, n * sizeof *x);
    if (st->lam) {
        memcpy(st->lam, h + AD_HEADER + 3 * n, (size_t)s->work.M * sizeof *st->lam);
        st->lam_ready = h[AD_LAM_READY] != 0.0;
    }
    if (st->b->verbose)
        atf_sv_log(s, "atf admm: resumed from a checkpoint after iteration %d (%.0f s into the "
                      "solve)\n", st->iter, h[AD_ELAPSED]);
    return ATF_OK;
}

/* The checkpoints of this run, when the caller keeps or resumes them (one process). None are
 * kept when the interrupt flag already stands: it cut the setup short (the Gram's factor, the
 * least-squares point and ρ0 from it), so a state of iteration 0 would hold a start that is not
 * this solve's, and a run resumed from it would go on to another answer. The solve then stops
 * at its first check, and the caller's state (a resumed one is read, and returned) stays. */
static atf_error checkpoints_begin(atf_solver *s, admm_state *st, char *err)
{
    if (!s->hooks.checkpoint && !s->hooks.resume)
        return ATF_OK;
    if (s->procs) {
        atf_errorf(err, "admm: checkpoints are kept in one process only");
        return ATF_E_USAGE;
    }
    atf_error e = admm_key(s, st, err);
    st->checkpointing = !e && s->hooks.checkpoint && !atf_sv_interrupted(s);
    return e;
}

static void remember_top(const atf_solver *s, admm_state *st, const double *x)
{
    admm_top *top = st->top;
    size_t bytes = s->n * sizeof *x;
    top->st = *st;
    memcpy(top->z, st->z, bytes), memcpy(top->u, st->u, bytes), memcpy(top->x, x, bytes);
    if (st->lam)
        memcpy(top->lam, st->lam, (size_t)s->work.M * sizeof *st->lam);
    top->cg = atf_sv_cg_steps(s), top->passes = s->passes;
}

static void back_to_top(const atf_solver *s, admm_state *st, double *x)
{
    admm_top *top = st->top;
    size_t bytes = s->n * sizeof *x;
    int cg_cut = atf_sv_cg_steps(s) - top->cg;
    long passes_cut = s->passes - top->passes;
    *st = top->st; /* the buffers as they were paired then (iterate swaps z and zprev) */
    st->cg_cut += cg_cut, st->passes_cut += passes_cut;
    memcpy(st->z, top->z, bytes), memcpy(st->u, top->u, bytes), memcpy(x, top->x, bytes);
    if (st->lam)
        memcpy(st->lam, top->lam, (size_t)s->work.M * sizeof *st->lam);
}

static atf_status run(atf_solver *s, admm_state *st, double *x)
{
    const atf_sv_budget *b = st->b;
    for (st->iter = st->first; st->iter <= b->max_iter; st->iter++) {
        int stop = atf_sv_interrupted(s);
        if (st->checkpointing &&
            (stop || atf_now() - st->last_checkpoint >= s->hooks.checkpoint_seconds) &&
            keep_state(s, st, x, st->iter - 1) != 0) {
            st->iter--;
            st->checkpoint_failed = 1;
            return ATF_STATUS_INTERRUPTED;
        }
        if (stop) {
            st->iter--;
            return ATF_STATUS_INTERRUPTED;
        }
        if (st->top)
            remember_top(s, st, x);
        iterate(s, st, x);
        residuals(s, st, x);
        int done = st->pri <= st->eps_pri && st->dual <= st->eps_dual;
        int solved = done && isfinite(st->pri) && isfinite(st->dual) && certified(s, st, x);
        if (st->top && atf_sv_interrupted(s)) { /* undone: the next top keeps and stops */
            back_to_top(s, st, x);
            st->iter--;
            continue;
        }
        if (!isfinite(st->pri) || !isfinite(st->dual))
            return ATF_STATUS_NUMERICAL_ERROR;
        if (st->rows && (done || st->iter == 1 || st->iter % b->log_every == 0 ||
                         st->iter == b->max_iter))
            log_row(s, st);
        atf_sv_progress(s, (atf_solve_progress){.method = "admm", .iteration = st->iter,
                                          .max_iterations = b->max_iter,
                                          .measure = fmax(st->pri / st->eps_pri,
                                                          st->dual / st->eps_dual),
                                          .tolerance = 1.0, .passes = s->passes});
        if (solved)
            return ATF_STATUS_SOLVED;
        if (!st->a->adaptive_rho)
            continue;
        if (guard_stagnation(s, st) ||
            (st->iter - st->last_change >= RHO_PERIOD && rebalance(s, st, x)))
            st->last_change = st->iter;
    }
    st->iter = b->max_iter;
    /* the state at the limit, so that a run with a larger limit goes on from here */
    if (st->checkpointing && keep_state(s, st, x, st->iter) != 0)
        st->checkpoint_failed = 1;
    return ATF_STATUS_MAX_ITERATIONS;
}

atf_error atf_sv_admm_run(atf_solver *s, const atf_sv_budget *b, atf_result *res, double *x,
                          char *err)
{
    size_t n = s->n, bytes = (n ? n : 1) * sizeof(double);
    const admm_setup *a = s->method_data;
    admm_state st = {.b = b, .a = a, .rho = a->rho0, .alpha = a->alpha, .start = atf_now(),
                     .window_best = INFINITY, .previous_best = INFINITY, .tighten = 1.0,
                     .first = 1, .cert = NAN};
    st.z = malloc(bytes), st.u = malloc(bytes), st.w = malloc(bytes), st.zprev = malloc(bytes);
    st.xc = malloc(bytes);
    size_t mbytes = (size_t)(s->work.M > 0 ? s->work.M : 1) * sizeof(double);
    if (by_pcg(s))
        st.lam = malloc(mbytes);
    admm_top top = {0};
    if (by_pcg(s) && s->hooks.interrupt) { /* only PCG can be cut short */
        top.z = malloc(bytes), top.u = malloc(bytes), top.x = malloc(bytes);
        top.lam = malloc(mbytes);
        st.top = &top;
    }
    int top_ok = !st.top || (top.z && top.u && top.x && top.lam);
    top_ok &= !by_pcg(s) || st.lam != NULL;
    st.rows = atf_sv_max(s, b->verbose ? 1.0 : 0.0) != 0.0;
    atf_error e = ATF_OK;
    if (atf_sv_max(s, st.z && st.u && st.w && st.zprev && st.xc && top_ok ? 0.0 : 1.0) != 0.0) {
        atf_errorf(err, "admm: out of memory for %zu variables", n);
        e = ATF_E_NOMEM;
        goto done;
    }
    if (a->curvature_underflow) {
        snprintf(s->check, sizeof s->check, "admm: the penalty's curvature ω̃'(σ)/σ at the "
                 "least-squares point is below the range of doubles (singular values too far "
                 "beyond the penalty's scale γ, in any units), so the iteration cannot be run");
        res->info.status = ATF_STATUS_NUMERICAL_ERROR;
        memcpy(x, s->x_ls, n * sizeof *x);
        res->info.stationarity = atf_sv_stationarity(s, x, NULL, 0.0);
        goto done;
    }
    st.passes0 = s->passes; /* the start's projections count as iterations' passes do */
    if ((e = checkpoints_begin(s, &st, err)))
        goto done;
    if (s->hooks.resume) {
        if ((e = resume_state(s, &st, x, err)))
            goto done;
    } else {
        memcpy(st.z, s->warm ? s->warm : s->x_ls, n * sizeof *st.z);
        memcpy(x, st.z, n * sizeof *x); /* the iterate returned if stopped before iteration 1 */
        project_timed(s, x, 1);
        initial_dual(s, &st);
    }
    if (b->verbose)
        log_header(s, &st);
    st.cg0 = atf_sv_cg_steps(s), st.last_checkpoint = atf_now();
    res->info.status = run(s, &st, x);
    /* Stopped by the flag, which still stands: PCG would stop at once, so neither the polish nor
     * the certificate can be computed (X⁺ of the last whole iteration is already projected). */
    int stopped_by_cg = res->info.status == ATF_STATUS_INTERRUPTED && by_pcg(s);
    if (st.checkpoint_failed) {
        atf_errorf(err, "admm: the checkpoint after iteration %d could not be kept", st.iter);
        e = ATF_E_IO;
        goto done;
    }
    if (res->info.status == ATF_STATUS_NUMERICAL_ERROR || !atf_sv_all_finite(x, n)) {
        res->info.status = ATF_STATUS_NUMERICAL_ERROR;
        memcpy(x, s->x_ls, n * sizeof *x); /* never hand out NaN: fall back to a feasible point */
    } else if (res->info.status == ATF_STATUS_SOLVED) {
        memcpy(x, st.xc, n * sizeof *x); /* polished and certified (certified) */
    } else if (!stopped_by_cg) {
        project_timed(s, x, 3); /* polish: feasibility to machine precision */
    }
    res->info.iterations = st.iter;
    if (by_pcg(s)) { /* the projections' PCG steps and passes over the data */
        res->info.inner_iterations = cg_steps_so_far(s, &st);
        double passes = passes_so_far(s, &st) + (double)st.passes0; /* with the setup's */
        res->info.operator_passes = passes > INT_MAX ? INT_MAX : (int)passes;
    }
    res->info.primal_residual = atf_sv_unscale_primal(s, st.pri);
    res->info.dual_residual = atf_sv_unscale_dual(s, st.dual);
    if (res->info.status == ATF_STATUS_NUMERICAL_ERROR)
        res->info.stationarity = atf_sv_stationarity(s, x, NULL, 0.0);
    else if (stopped_by_cg)
        res->info.stationarity = NAN; /* not computed: its projections would stop at once */
    else
        res->info.stationarity = res->info.status == ATF_STATUS_SOLVED ? st.cert
                                                                      : admm_certificate(s, &st, x);
    if (b->verbose)
        log_summary(s, res, &st);
done:
    free(st.z), free(st.u), free(st.w), free(st.zprev), free(st.xc);
    free(top.z), free(top.u), free(top.x), free(top.lam), free(st.lam);
    return e;
}
