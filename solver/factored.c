/* factored.c — the penalized problem (16) in factors (solver_factored.h): every core written
 * C = U Vᵀ at a rank found on the way, the smooth Φ(U, V) minimised by L-BFGS and then by
 * Newton-CG with a Kronecker-factored preconditioner, the answer certified in the cores as the
 * other penalized methods' (docs/solver.md, "factored").
 *
 * Ranks. The solve starts from B = 0 (or a warm start's cores, factored at their rank) with
 * the top singular directions of −∇g that the penalty does not hold at zero: a direction is
 * worth a column when its singular value exceeds ω̃'(0+) (2√γ for `nuclear`, 0 for the smooth
 * families) by GROW_MARGIN. Every CHECK_EVERY L-BFGS iterations (every Newton step) a check
 * forms the cores and the core gradient (one pass), the proximal-gradient residual (the
 * certificate's measure), and the violations outside the factors' spans: up to half the rank
 * (at least one) new columns per var, placed by one step of the quadratic model along them.
 * Columns whose singular value falls below PRUNE of the largest go. So the rank grows from
 * below and the passes, each costing N·(rows + cols)·r instead of N·rows·cols, stay cheap until
 * it is found.
 *
 * Phases. L-BFGS until a check finds the residual below NEWTON_AT (or not halved in LBFGS_SLOW
 * checks: ill-conditioned), then
 * Newton-CG steps (the full Hessian of Φ, whose extra columns' directions are then
 * nondegenerate, so they die fast), each checked, to eps. The answer is the cores, certified
 * by atf_pg_certify (pg residual with the step 1/L of the other methods, stationarity, duality
 * gap). Where the ranks make a pass in the factors cost as much as one over the cores (smooth
 * penalties: their answers are full rank), or the checks stall (in STALL_CHECKS checks neither
 * the residual halved nor Φ fell by STALL_DECREASE), the method
 * says so and newton continues from the cores with the budget left. */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solver_factored.h"
#include "solver_newton.h"

#define CHECK_EVERY 15     /* L-BFGS iterations between checks */
#define LBFGS_MEMORY 10
#define WOLFE_C1 1e-4
#define WOLFE_C2 0.9
#define LINE_SEARCH_MAX 20
#define NEWTON_AT 0.5      /* Newton-CG once the pg residual is below this, */
#define LBFGS_SLOW 3       /* ... or L-BFGS has not halved it in this many checks */
#define GROW_MARGIN 0.1    /* a violation counts above (1 + margin) ω̃'(0+), margin shrinking */
#define GROW_MIN 4         /* columns a var may gain per check: max(GROW_MIN, its rank) */
#define PRUNE 1e-3         /* columns below PRUNE of the largest singular value go ... */
#define PRUNE_UNTIL 1e-2   /* ... while the residual is above this; below, PRUNE_LATE */
#define PRUNE_LATE 1e-8
#define GROW_HALVINGS 30   /* halvings of the growth step at most */
#define SINGLE_FLOOR 1e-5 /* the checks' gradient in double below this pg residual */
#define CG_MAX 50          /* CG steps per Newton step */
#define PRECOND_PERIOD 3   /* Newton steps per rebuild of the preconditioner's second factors */
#define STALL_CHECKS 30    /* checks without progress before newton takes over: */
#define STALL_DECREASE 1e-3 /* the residual not halved and Φ not down by this fraction */

typedef struct {
    atf_solver *s;
    atf_pg_loss pl;
    atf_fs fs;
    atf_fs_precond *pc;
    atf_sv_budget b;
    double t;                       /* the pg residual's step 1/L */
    double step;                    /* the growth step along st->w */
    double *xB, *gB, *w, *xn, *xB0, *zB; /* [n] cores, core gradient, work; [M] */
    double *mS, *mY, *mrho;         /* L-BFGS pairs [LBFGS_MEMORY × nf] */
    int mcount, mhead;
    double *d, *cr, *cz, *cp, *cq;  /* [nf] */
    int *rank;                      /* [nvars] */
    float **Hs, **Ds;               /* [nvars] single-precision copies (NULL: none made) */
    int iter, lbfgs, newton, cg, checks, grown, newton_phase, since_newton_build;
    int exact_checks;               /* checks and Hessian products in double (all_double) */
    double pg, best_pg, mark_F;
    int best_check, mark_check;
    int left;                       /* L-BFGS iterations left of the run before the next check */
    int keeping;                    /* hooks.checkpoint is called (one process) */
    double start, last_checkpoint;
    char key[ATF_CHECKPOINT_KEYLEN];/* of this solve's checkpoints */
} fac_state;

/* ---- state ---------------------------------------------------------------------------------- */

/* From here on the checks and the Hessian products in double. */
static void all_double(fac_state *st)
{
    st->exact_checks = 1;
    st->fs.Hs = st->fs.Ds = NULL;
}


static void free_vectors(fac_state *st)
{
    double *a[] = {st->mS, st->mY, st->mrho, st->d, st->cr, st->cz, st->cp, st->cq};
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++)
        free(a[i]);
    st->mS = st->mY = st->mrho = st->d = st->cr = st->cz = st->cp = st->cq = NULL;
}

static void free_state(fac_state *st)
{
    free_vectors(st);
    atf_fs_free(&st->fs);
    atf_fs_precond_free(st->pc);
    atf_pg_loss_free(&st->pl);
    double *a[] = {st->xB, st->gB, st->w, st->xn, st->xB0, st->zB};
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++)
        free(a[i]);
    free(st->rank);
    for (int v = 0; st->Hs && v < st->s->nvars; v++)
        free(st->Hs[v]), free(st->Ds[v]);
    free(st->Hs), free(st->Ds);
}

/* The space at st->rank with the factors x (balanced, packed at those ranks), evaluated. */
static atf_error enter(fac_state *st, const double *x, char *err)
{
    free_vectors(st);
    long passes = st->fs.passes;
    double flops = st->fs.flops;
    atf_fs_free(&st->fs);
    atf_error e = atf_fs_init(&st->fs, st->s, &st->pl, st->rank, err);
    if (e != ATF_OK)
        return e;
    st->fs.passes = passes, st->fs.flops = flops;
    size_t nf = st->fs.nf ? st->fs.nf : 1;
    double **v[] = {&st->d, &st->cr, &st->cz, &st->cp, &st->cq};
    int ok = 1;
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        ok = (*v[i] = calloc(nf, sizeof(double))) != NULL && ok;
    st->mS = calloc(nf * LBFGS_MEMORY, sizeof *st->mS);
    st->mY = calloc(nf * LBFGS_MEMORY, sizeof *st->mY);
    st->mrho = calloc(LBFGS_MEMORY, sizeof *st->mrho);
    st->mcount = st->mhead = 0;
    if (!ok || !st->mS || !st->mY || !st->mrho) {
        atf_errorf(err, "factored: out of memory for %zu factor values", nf);
        return ATF_E_NOMEM;
    }
    atf_fs_eval(&st->fs, x);
    if (atf_fs_accept(&st->fs) ||
        (st->Hs && !st->exact_checks && atf_fs_single(&st->fs, (const float *const *)st->Hs,
                                 (const float *const *)st->Ds))) {
        atf_errorf(err, "factored: out of memory for the loss's curvature");
        return ATF_E_NOMEM;
    }
    return ATF_OK;
}

/* Single-precision copies of every var's H and D for the Hessian products, when every var is
 * factored (else none: the products stay double). */
static atf_error single_copies(fac_state *st, char *err)
{
    atf_solver *s = st->s;
    for (int v = 0; v < s->nvars; v++)
        if (s->vars[v].op.kind != ATF_OP_FACTORED || s->work.C > 64)
            return ATF_OK;
    size_t nv = s->nvars > 0 ? (size_t)s->nvars : 1;
    st->Hs = calloc(nv, sizeof *st->Hs);
    st->Ds = calloc(nv, sizeof *st->Ds);
    if (!st->Hs || !st->Ds)
        goto nomem;
    for (int v = 0; v < s->nvars; v++) {
        const atf_block *b = &s->vars[v].op;
        size_t nh = (size_t)b->N * b->rows, nd = (size_t)b->M * b->cols;
        st->Hs[v] = malloc(nh * sizeof(float));
        st->Ds[v] = malloc(nd * sizeof(float));
        if (!st->Hs[v] || !st->Ds[v])
            goto nomem;
        for (size_t i = 0; i < nh; i++)
            st->Hs[v][i] = (float)b->H[i];
        for (size_t i = 0; i < nd; i++)
            st->Ds[v][i] = (float)b->D[i];
    }
    return ATF_OK;
nomem:
    atf_errorf(err, "factored: out of memory for the single-precision copies of the data");
    return ATF_E_NOMEM;
}

/* ---- L-BFGS --------------------------------------------------------------------------------- */

/* d = −H g by the two-loop recursion over the stored pairs (the first step scaled to move x by
 * a tenth of its size, or by the gradient's, from 0). */
static void lbfgs_direction(fac_state *st)
{
    size_t nf = st->fs.nf;
    const double *g = st->fs.cur.g;
    double *q = st->d, alpha[LBFGS_MEMORY];
    memcpy(q, g, nf * sizeof *q);
    for (int k = 0; k < st->mcount; k++) {
        int j = (st->mhead - 1 - k + LBFGS_MEMORY) % LBFGS_MEMORY;
        alpha[j] = st->mrho[j] * atf_dot(st->mS + j * nf, q, nf);
        cblas_daxpy((int)nf, -alpha[j], st->mY + j * nf, 1, q, 1);
    }
    if (st->mcount > 0) {
        int j = (st->mhead - 1 + LBFGS_MEMORY) % LBFGS_MEMORY;
        const double *yj = st->mY + j * nf;
        cblas_dscal((int)nf, atf_dot(st->mS + j * nf, yj, nf) / atf_dot(yj, yj, nf), q, 1);
    } else {
        double gn = sqrt(atf_dot(g, g, nf)), xn = sqrt(atf_dot(st->fs.cur.x, st->fs.cur.x, nf));
        cblas_dscal((int)nf, gn > 0.0 ? fmin(1.0, (xn > 0.0 ? 0.1 * xn : 1.0) / gn) : 1.0, q, 1);
    }
    for (int k = st->mcount - 1; k >= 0; k--) {
        int j = (st->mhead - 1 - k + LBFGS_MEMORY) % LBFGS_MEMORY;
        double beta = st->mrho[j] * atf_dot(st->mY + j * nf, q, nf);
        cblas_daxpy((int)nf, alpha[j] - beta, st->mS + j * nf, 1, q, 1);
    }
    cblas_dscal((int)nf, -1.0, q, 1);
}

static void lbfgs_remember(fac_state *st, const double *xold, const double *gold)
{
    size_t nf = st->fs.nf;
    double *s = st->mS + st->mhead * nf, *y = st->mY + st->mhead * nf;
    for (size_t i = 0; i < nf; i++)
        s[i] = st->fs.cur.x[i] - xold[i], y[i] = st->fs.cur.g[i] - gold[i];
    double sy = atf_dot(s, y, nf);
    if (!(sy > 1e-12 * sqrt(atf_dot(s, s, nf) * atf_dot(y, y, nf))))
        return; /* no curvature along the step: keep the pairs as they are */
    st->mrho[st->mhead] = 1.0 / sy;
    st->mhead = (st->mhead + 1) % LBFGS_MEMORY;
    st->mcount += st->mcount < LBFGS_MEMORY;
}

/* A step along d satisfying the Wolfe conditions (bisection and doubling); the accepted point
 * becomes current. 0, or −1 when none was found (the current point stays). */
static int wolfe_step(fac_state *st, double *xtry)
{
    atf_fs *fs = &st->fs;
    size_t nf = fs->nf;
    double F0 = fs->cur.F, slope = atf_dot(fs->cur.g, st->d, nf);
    if (!(slope < 0.0)) { /* not a descent direction: steepest descent, memory cleared */
        st->mcount = 0;
        for (size_t i = 0; i < nf; i++)
            st->d[i] = -fs->cur.g[i];
        slope = atf_dot(fs->cur.g, st->d, nf);
        if (!(slope < 0.0))
            return -1;
    }
    double step = 1.0, lo = 0.0, hi = INFINITY;
    for (int k = 0; k < LINE_SEARCH_MAX; k++) {
        for (size_t i = 0; i < nf; i++)
            xtry[i] = fs->cur.x[i] + step * st->d[i];
        atf_fs_eval(fs, xtry);
        double Ft = fs->trial.F;
        if (!isfinite(Ft) || Ft > F0 + WOLFE_C1 * step * slope)
            hi = step;
        else if (atf_dot(fs->trial.g, st->d, nf) < WOLFE_C2 * slope)
            lo = step;
        else
            return atf_fs_accept(fs) ? -1 : 0;
        step = isinf(hi) ? 2.0 * step : 0.5 * (lo + hi);
    }
    if (lo > 0.0) { /* sufficient decrease at lo, curvature not met: take it */
        for (size_t i = 0; i < nf; i++)
            xtry[i] = fs->cur.x[i] + lo * st->d[i];
        atf_fs_eval(fs, xtry);
        if (isfinite(fs->trial.F) && fs->trial.F <= F0)
            return atf_fs_accept(fs) ? -1 : 0;
    }
    return -1;
}

/* The st->left L-BFGS iterations of a run (fewer at the iteration limit, when interrupted, or
 * when a line search fails: then none are left); returns those taken, −1 when the line search
 * failed at once. */
static int lbfgs_run(fac_state *st)
{
    size_t nf = st->fs.nf;
    double *xold = st->cp, *gold = st->cq, *xtry = st->cr;
    int k = 0;
    for (; st->left > 0 && st->iter < st->b.max_iter && !atf_sv_interrupted(st->s); k++) {
        lbfgs_direction(st);
        memcpy(xold, st->fs.cur.x, nf * sizeof *xold);
        memcpy(gold, st->fs.cur.g, nf * sizeof *gold);
        if (wolfe_step(st, xtry)) {
            st->left = 0;
            return k == 0 ? -1 : k;
        }
        lbfgs_remember(st, xold, gold);
        st->iter++, st->lbfgs++, st->left--;
    }
    return k;
}

/* ---- Newton-CG ------------------------------------------------------------------------------ */

/* d ≈ −∇²Φ⁻¹ g by preconditioned CG to ‖r‖ ≤ eta ‖g‖, stopping at negative curvature (the
 * preconditioned gradient when it meets it at once). Returns the CG steps. */
static int newton_direction(fac_state *st, double eta)
{
    atf_fs *fs = &st->fs;
    size_t nf = fs->nf;
    const double *g = fs->cur.g;
    double *x = st->d, *r = st->cr, *z = st->cz, *p = st->cp, *q = st->cq;
    memset(x, 0, nf * sizeof *x);
    for (size_t i = 0; i < nf; i++)
        r[i] = -g[i];
    atf_fs_precond_apply(fs, st->pc, r, z);
    memcpy(p, z, nf * sizeof *p);
    double rz = atf_dot(r, z, nf), tol = eta * sqrt(atf_dot(g, g, nf));
    int k = 0;
    while (k < CG_MAX) {
        atf_fs_hvp(fs, p, q);
        k++;
        double pq = atf_dot(p, q, nf);
        if (!(pq > 1e-14 * atf_dot(p, p, nf))) {
            if (k == 1) /* negative curvature at once: the preconditioned gradient */
                memcpy(x, p, nf * sizeof *x);
            break;
        }
        double a = rz / pq;
        cblas_daxpy((int)nf, a, p, 1, x, 1);
        cblas_daxpy((int)nf, -a, q, 1, r, 1);
        if (sqrt(atf_dot(r, r, nf)) <= tol)
            break;
        atf_fs_precond_apply(fs, st->pc, r, z);
        double rz2 = atf_dot(r, z, nf);
        for (size_t i = 0; i < nf; i++)
            p[i] = z[i] + (rz2 / rz) * p[i];
        rz = rz2;
    }
    return k;
}

/* One Newton step with an Armijo backtracking; 0, or −1 when no step decreased Φ. */
static int newton_step(fac_state *st, char *err, atf_error *e)
{
    atf_fs *fs = &st->fs;
    size_t nf = fs->nf;
    int refresh = st->since_newton_build++ % PRECOND_PERIOD == 0;
    if ((*e = atf_fs_precond_build(fs, &st->pc, refresh, err)) != ATF_OK)
        return -1;
    /* forcing: √pg far away (superlinear), and no tighter than the target needs near it */
    double eta = fmin(0.5, sqrt(fmax(st->pg, 0.0)));
    eta = fmax(eta, fmin(0.5, 0.3 * st->b.eps / fmax(st->pg, 1e-300)));
    int k = newton_direction(st, eta);
    st->cg += k;
    double slope = atf_dot(fs->cur.g, st->d, nf), F0 = fs->cur.F;
    if (!(slope < 0.0))
        return -1;
    double *xtry = st->cr;
    for (double a = 1.0; a > 1e-9; a *= 0.5) {
        for (size_t i = 0; i < nf; i++)
            xtry[i] = fs->cur.x[i] + a * st->d[i];
        atf_fs_eval(fs, xtry);
        if (isfinite(fs->trial.F) && fs->trial.F <= F0 + WOLFE_C1 * a * slope) {
            st->iter++, st->newton++;
            return atf_fs_accept(fs) ? -1 : 0;
        }
    }
    return -1;
}

/* ---- checks: the certificate's residual, growth and pruning --------------------------------- */

/* The proximal-gradient residual at the current factors' cores (st->xB, st->gB hold the cores
 * and the core gradient on return). */
static double residual_now(fac_state *st)
{
    atf_solver *s = st->s;
    atf_fs_cores(&st->fs, st->fs.cur.x, st->xB);
    if (st->Hs && !st->exact_checks)
        atf_fs_core_gradient_single(&st->fs, st->gB);
    else
        atf_fs_core_gradient(&st->fs, st->gB);
    for (size_t i = 0; i < s->n; i++)
        st->w[i] = st->xB[i] - st->t * st->gB[i];
    double t0 = atf_now();
    atf_sv_prox(s, st->w, st->xn, 1.0 / st->t);
    s->t.prox += atf_now() - t0;
    return atf_pg_residual(st->xB, st->xn, st->gB, st->t, s->n);
}

/* The step s* of the quadratic model of F along E (stacked, in w): slope −Σ(σ − τ)² given, the
 * loss's curvature ⟨A'E, K A'E⟩ (one pass) and the penalty's 2Σ(σ − τ)² for the smooth
 * families (ω̃ ≈ v² at 0). */
static double model_step(fac_state *st, double slope, double pen_curv)
{
    atf_solver *s = st->s;
    atf_sv_apply(s, st->w, st->zB);
    double *K = st->fs.zw;
    atf_pg_loss_hess(&st->pl, NULL, 0, st->zB, K);
    double curv = atf_dot(st->zB, K, (size_t)s->work.M) + pen_curv;
    return curv > 0.0 ? -slope / curv : 0.0;
}

/* The violating directions of every var (gradient st->gB at the current point) into st->w
 * (E = Σ (σ_j − τ) a_j b_jᵀ per var), the ranks st->rank raised by their count (*grew) and
 * st->step the quadratic model's step along E. The margin shrinks with the residual, so that
 * near the answer every real violation is taken. */
static atf_error grow(fac_state *st, int *grew, char *err)
{
    double margin = GROW_MARGIN * fmin(1.0, st->pg / NEWTON_AT);
    atf_solver *s = st->s;
    atf_fs *fs = &st->fs;
    memset(st->w, 0, s->n * sizeof *st->w);
    double slope = 0.0, pen_curv = 0.0;
    *grew = 0;
    for (int v = 0; v < s->nvars; v++) {
        const atf_sv_var *var = &s->vars[v];
        int r = fs->r[v], kk = var->rows < var->cols ? var->rows : var->cols;
        int kmax = r > GROW_MIN ? r : GROW_MIN;
        kmax = kmax < kk - r ? kmax : kk - r;
        if (kmax <= 0)
            continue;
        double tau = fs->slope[v], *a = malloc((size_t)var->rows * kmax * sizeof *a),
               *b = malloc((size_t)var->cols * kmax * sizeof *b),
               *sv = malloc((size_t)kmax * sizeof *sv);
        int k = 0;
        int ok = a && b && sv &&
                 atf_fs_violations(fs, v, fs->cur.x, st->gB + var->off, tau * (1.0 + margin),
                                   kmax, &k, a, b, sv) == 0;
        for (int j = 0; ok && j < k; j++) { /* E_v += (σ_j − τ) a_j b_jᵀ */
            double c = sv[j] - tau;
            cblas_dger(CblasRowMajor, var->rows, var->cols, c, a + j, kmax, b + j, kmax,
                       st->w + var->off, var->cols);
            slope -= c * c;
            pen_curv += fs->nuclear[v] ? 0.0 : 2.0 * c * c;
        }
        free(a), free(b), free(sv);
        if (!ok) {
            atf_errorf(err, "factored: block %s: the SVD of its gradient failed", var->orig->name);
            return ATF_E_NUMERICAL;
        }
        st->rank[v] = r + k;
        *grew += k;
    }
    st->step = *grew ? model_step(st, slope, pen_curv) : 0.0;
    return ATF_OK;
}

/* The cores st->xB factored at st->rank (pruned) and entered. */
static atf_error refactor(fac_state *st, char *err)
{
    size_t need = 0;
    for (int v = 0; v < st->s->nvars; v++)
        need += (size_t)st->rank[v] * (st->s->vars[v].rows + st->s->vars[v].cols);
    double *x = malloc((need ? need : 1) * sizeof *x);
    if (!x || atf_fs_balanced(st->s, st->xB, st->pg > PRUNE_UNTIL ? PRUNE : PRUNE_LATE,
                              st->rank, x)) {
        free(x);
        atf_errorf(err, "factored: the SVD of a core failed (out of memory or no convergence)");
        return x ? ATF_E_NUMERICAL : ATF_E_NOMEM;
    }
    atf_error e = enter(st, x, err);
    free(x);
    return e;
}

/* Whether a column of some var fell below PRUNE of its largest (then the cores are refactored
 * at the ranks that remain). */
static int prunable(const fac_state *st)
{
    const atf_fs *fs = &st->fs;
    for (int v = 0; v < fs->nv; v++) {
        int r = fs->r[v], R = st->s->vars[v].rows, Q = st->s->vars[v].cols;
        const double *U = fs->cur.x + fs->off[v], *V = U + (size_t)R * r;
        double top = 0.0, low = INFINITY;
        for (int j = 0; j < r; j++) {
            double c = cblas_dnrm2(R, U + j, r) * cblas_dnrm2(Q, V + j, r);
            top = fmax(top, c), low = fmin(low, c);
        }
        if (r > 1 && low < (st->pg > PRUNE_UNTIL ? PRUNE : PRUNE_LATE) * top)
            return 1;
    }
    return 0;
}

/* ---- the log -------------------------------------------------------------------------------- */

static int total_rank(const fac_state *st)
{
    int sum = 0;
    for (int v = 0; v < st->s->nvars; v++)
        sum += st->fs.r[v];
    return sum;
}

/* Passes over the data so far: the method's own (B-space) and the factor products. */
static long passes_now(const fac_state *st)
{
    return st->s->passes + st->fs.passes;
}

static void log_header(fac_state *st)
{
    atf_solver *s = st->s;
    char spec[ATF_LOSS_SPECLEN];
    atf_loss_format(&s->loss, spec, sizeof spec);
    atf_sv_log(s, "atf factored: loss %s, %d blocks, %zu variables (%lld before reduction), %d "
               "rows\n", spec, s->nvars, s->n, (long long)s->n_orig, s->prob->M);
    atf_sv_log(s, "atf factored: prox step %.3e (1/L bound), eps_rel %.1e, max_iter %d\n", st->t,
               st->b.eps, st->b.max_iter);
    atf_sv_log(s, "%6s %7s %14s %10s %6s %6s %8s %9s\n", "iter", "phase", "objective", "pg res",
               "rank", "cg", "passes", "time(s)");
}

static void log_row(fac_state *st)
{
    if (!st->b.verbose || st->checks % (st->b.log_every > 0 ? st->b.log_every : 1))
        return;
    atf_sv_log(st->s, "%6d %7s %14.7e %10.3e %6d %6d %8ld %9.2f\n", st->iter,
               st->newton_phase ? "newton" : "lbfgs",
               atf_sv_unscale_objective(st->s, st->fs.cur.F), st->pg, total_rank(st), st->cg,
               passes_now(st), atf_now() - st->start);
}

/* ---- the run -------------------------------------------------------------------------------- */

static atf_error init_state(fac_state *st, atf_solver *s, const atf_sv_budget *b, char *err)
{
    memset(st, 0, sizeof *st);
    st->s = s, st->b = *b, st->start = atf_now(), st->best_pg = INFINITY;
    st->mark_F = INFINITY;
    atf_error e = atf_pg_loss_init(s, &s->loss, &st->pl, err);
    if (e != ATF_OK)
        return e;
    size_t n = s->n ? s->n : 1, M = (size_t)s->work.M;
    double **v[] = {&st->xB, &st->gB, &st->w, &st->xn, &st->xB0};
    int ok = 1;
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        ok = (*v[i] = calloc(n, sizeof(double))) != NULL && ok;
    st->zB = calloc(M ? M : 1, sizeof *st->zB);
    st->rank = calloc((size_t)s->nvars + 1, sizeof *st->rank);
    if (!ok || !st->zB || !st->rank) {
        atf_errorf(err, "factored: out of memory");
        return ATF_E_NOMEM;
    }
    return single_copies(st, err);
}

static atf_error add_columns(fac_state *st, char *err);

/* The step 1/L of the certificate, as the other penalized methods take it. */
static void first_step(fac_state *st)
{
    int its;
    st->t = st->Hs ? atf_fs_first_step_single(&st->fs, st->w, st->zB)
                   : atf_pg_first_step(st->s, &st->pl, st->w, st->zB, &its);
}

/* The start: a warm start's cores at their rank, else B = 0 and its first violations. */
static atf_error start_factors(fac_state *st, const double *x0, char *err)
{
    atf_solver *s = st->s;
    int warm = atf_sv_norm(x0, s->n) > 0.0;
    for (int v = 0; v < s->nvars; v++)
        st->rank[v] = warm ? (s->vars[v].rows < s->vars[v].cols ? s->vars[v].rows
                                                                 : s->vars[v].cols)
                           : 0;
    memcpy(st->xB, x0, s->n * sizeof *x0);
    atf_error e = refactor(st, err);
    if (e != ATF_OK || warm)
        return e;
    st->pg = INFINITY; /* (the growth's margin at its widest) */
    atf_fs_core_gradient(&st->fs, st->gB);
    int grew;
    if ((e = grow(st, &grew, err)) != ATF_OK || !grew)
        return e;
    return add_columns(st, err);
}

/* The cores plus the model's step along the violations (st->w), factored at the raised ranks:
 * the step halves until Φ is below what it was (the quadratic model may overshoot), so the
 * objective never rises. */
static atf_error add_columns(fac_state *st, char *err)
{
    atf_solver *s = st->s;
    double before = st->fs.cur.F;
    int *rank = malloc((size_t)s->nvars * sizeof *rank);
    if (!rank) {
        atf_errorf(err, "factored: out of memory");
        return ATF_E_NOMEM;
    }
    memcpy(rank, st->rank, (size_t)s->nvars * sizeof *rank);
    memcpy(st->xB0, st->xB, s->n * sizeof *st->xB0);
    atf_error e = ATF_OK;
    for (int k = 0; k < GROW_HALVINGS && e == ATF_OK; k++, st->step *= 0.5) {
        memcpy(st->rank, rank, (size_t)s->nvars * sizeof *rank);
        for (size_t i = 0; i < s->n; i++)
            st->xB[i] = st->xB0[i] + st->step * st->w[i];
        e = refactor(st, err);
        if (e == ATF_OK && st->fs.cur.F <= before)
            break;
    }
    free(rank);
    return e;
}

/* One check after a phase's work: the residual, then the answer, growth, pruning or the
 * switch to Newton. *done: certified. */
static atf_error check(fac_state *st, int *done, char *err)
{
    st->checks++;
    st->pg = residual_now(st);
    log_row(st);
    atf_sv_progress(st->s, (atf_solve_progress){.method = "factored", .iteration = st->iter,
                                          .max_iterations = st->b.max_iter, .measure = st->pg,
                                          .tolerance = st->b.eps, .passes = passes_now(st)});
    *done = st->pg <= st->b.eps;
    if (*done)
        return ATF_OK;
    if (st->pg <= 0.5 * st->best_pg)
        st->best_pg = st->pg, st->best_check = st->checks;
    double F = st->fs.cur.F; /* progress: the residual halved or Φ down by STALL_DECREASE */
    if (st->checks == st->best_check || F <= st->mark_F - STALL_DECREASE * fabs(st->mark_F))
        st->mark_F = F, st->mark_check = st->checks;
    int grew = 0;
    atf_error e = grow(st, &grew, err);
    if (e == ATF_OK && grew)
        e = add_columns(st, err);
    else if (e == ATF_OK && prunable(st))
        e = refactor(st, err);
    st->grown += grew;
    if (e == ATF_OK)
        st->newton_phase = st->pg < NEWTON_AT || st->checks - st->best_check >= LBFGS_SLOW;
    return e;
}

/* The certificate at the cores of the current factors (one apply, one adjoint, the prox). */
static void certify(fac_state *st, atf_pg_info *info, atf_result *res, double *x)
{
    atf_solver *s = st->s;
    atf_fs_cores(&st->fs, st->fs.cur.x, x);
    atf_sv_apply(s, x, st->zB);
    double pen = atf_sv_objective(s, x), loss = atf_pg_loss_eval(&st->pl, st->zB, NULL);
    memset(info, 0, sizeof *info);
    atf_pg_certify(s, &st->pl, x, st->zB, st->t, pen + loss, st->fs.zw, st->gB, st->w, st->xn,
                   info, res);
    info->loss_value = atf_sv_unscale_objective(s, loss);
    info->penalty_value = atf_sv_unscale_objective(s, pen);
    info->objective = atf_sv_unscale_objective(s, pen + loss);
    info->step = st->t;
    info->iterations = st->iter;
    res->info.objective = info->objective;
}

static void note(const fac_state *st, atf_result *res)
{
    char *out = res->info.method_note;
    size_t len = sizeof res->info.method_note, used = strlen(out);
    int k = snprintf(out + used, len - used, "%sfactored: ranks", used ? "; " : "");
    for (int v = 0; v < st->s->nvars && k > 0 && used + (size_t)k < len; v++)
        k += snprintf(out + used + k, len - used - (size_t)k, "%s %d", v ? "," : "", st->fs.r[v]);
    if (k > 0 && used + (size_t)k < len)
        snprintf(out + used + k, len - used - (size_t)k, "; %d L-BFGS and %d Newton steps; "
                 "%ld passes (%ld in the factors), the work of %.0f passes over the cores",
                 st->lbfgs, st->newton, passes_now(st), st->fs.passes,
                 (double)st->s->passes + atf_fs_core_passes(&st->fs));
}

/* ---- checkpoints (hooks.checkpoint, hooks.resume) -------------------------------------------
 * At the top of the loop the state is the factors (at their ranks), the L-BFGS pairs, the
 * cols-side factors the next preconditioner build may reuse, the step t, the counters and the
 * L-BFGS iterations left of a run: the current point's values, the gradient and the caches are
 * recomputed from the factors as the run computed them. So a state can be taken at the top of
 * any iteration (an interrupted L-BFGS run goes on where it stopped), and everything after it
 * is the same, bit for bit. A state is also kept at the iteration limit (the top of the next
 * iteration: run again with a larger limit). Infinite marks (before the first check) are kept
 * as −1. A newton hand-over keeps no checkpoints of its own: resumed, the solve reaches it
 * again. */
enum { CP_MAGIC, CP_VERSION, CP_NVARS, CP_NF, CP_T, CP_PG, CP_BEST_PG, CP_MARK_F, CP_ITER,
       CP_LBFGS, CP_NEWTON, CP_CG, CP_CHECKS, CP_GROWN, CP_PHASE, CP_SINCE_BUILD, CP_EXACT,
       CP_BEST_CHECK, CP_MARK_CHECK, CP_ELAPSED, CP_LEFT, CP_MCOUNT, CP_MHEAD, CP_PASSES,
       CP_FS_PASSES, CP_FS_FLOPS, CP_PRECOND_LEN, CP_HEADER };
#define CP_MAGIC_VALUE 5.0413e7 /* "ATF factored state", a fixed value that is not a count */
#define CP_VERSION_VALUE 1.0

static double finite_mark(double v)
{
    return isinf(v) ? -1.0 : v;
}

static double mark_back(double v)
{
    return v < 0.0 ? INFINITY : v;
}

static int checkpoint_due(const fac_state *st)
{
    return st->keeping && atf_now() - st->last_checkpoint >= st->s->hooks.checkpoint_seconds;
}

static size_t state_len(const fac_state *st, size_t precond_len)
{
    size_t nf = st->fs.nf;
    return CP_HEADER + (size_t)st->s->nvars + nf + 2 * LBFGS_MEMORY * nf + LBFGS_MEMORY +
           precond_len;
}

static void save_header(const fac_state *st, double *h, size_t precond_len)
{
    h[CP_MAGIC] = CP_MAGIC_VALUE, h[CP_VERSION] = CP_VERSION_VALUE;
    h[CP_NVARS] = st->s->nvars, h[CP_NF] = (double)st->fs.nf, h[CP_T] = st->t;
    h[CP_PG] = finite_mark(st->pg), h[CP_BEST_PG] = finite_mark(st->best_pg);
    h[CP_MARK_F] = finite_mark(st->mark_F);
    h[CP_ITER] = st->iter, h[CP_LBFGS] = st->lbfgs, h[CP_NEWTON] = st->newton;
    h[CP_CG] = st->cg, h[CP_CHECKS] = st->checks, h[CP_GROWN] = st->grown;
    h[CP_PHASE] = st->newton_phase, h[CP_SINCE_BUILD] = st->since_newton_build;
    h[CP_EXACT] = st->exact_checks, h[CP_BEST_CHECK] = st->best_check;
    h[CP_MARK_CHECK] = st->mark_check, h[CP_ELAPSED] = atf_now() - st->start;
    h[CP_LEFT] = st->left, h[CP_MCOUNT] = st->mcount, h[CP_MHEAD] = st->mhead;
    h[CP_PASSES] = (double)st->s->passes, h[CP_FS_PASSES] = (double)st->fs.passes;
    h[CP_FS_FLOPS] = st->fs.flops, h[CP_PRECOND_LEN] = (double)precond_len;
}

/* The state to hooks.checkpoint; ATF_E_IO when the caller could not keep it. */
static atf_error keep_state(fac_state *st, char *err)
{
    size_t nf = st->fs.nf, plen = atf_fs_precond_saved_len(&st->fs, st->pc);
    atf_checkpoint cp = {.len = (int64_t)state_len(st, plen)};
    memcpy(cp.key, st->key, sizeof cp.key);
    cp.data = malloc((size_t)cp.len * sizeof *cp.data);
    if (!cp.data) {
        atf_errorf(err, "factored: out of memory for a checkpoint");
        return ATF_E_NOMEM;
    }
    double *h = cp.data, *at = h + CP_HEADER;
    save_header(st, h, plen);
    for (int v = 0; v < st->s->nvars; v++)
        *at++ = st->fs.r[v];
    memcpy(at, st->fs.cur.x, nf * sizeof *at), at += nf;
    memcpy(at, st->mS, LBFGS_MEMORY * nf * sizeof *at), at += LBFGS_MEMORY * nf;
    memcpy(at, st->mY, LBFGS_MEMORY * nf * sizeof *at), at += LBFGS_MEMORY * nf;
    memcpy(at, st->mrho, LBFGS_MEMORY * sizeof *at), at += LBFGS_MEMORY;
    atf_fs_precond_save(&st->fs, st->pc, at);
    int r = st->s->hooks.checkpoint(st->s->hooks.checkpoint_ctx, &cp);
    free(cp.data);
    st->last_checkpoint = atf_now();
    if (r != 0) {
        atf_errorf(err, "factored: the checkpoint at step %d could not be kept", st->iter);
        return ATF_E_IO;
    }
    if (st->b.verbose)
        atf_sv_log(st->s, "atf factored: checkpoint kept at step %d\n", st->iter);
    return ATF_OK;
}

/* The header's counts and sizes, checked before any arithmetic. */
static int header_ok(const fac_state *st, const double *h, int64_t len)
{
    if (len < CP_HEADER || h[CP_MAGIC] != CP_MAGIC_VALUE || h[CP_VERSION] != CP_VERSION_VALUE ||
        h[CP_NVARS] != st->s->nvars || !atf_sv_count_ok(h[CP_NF], 1e15) || !(h[CP_T] > 0.0) ||
        !atf_sv_count_ok(h[CP_PRECOND_LEN], 1e15) || !atf_sv_count_ok(h[CP_MCOUNT], LBFGS_MEMORY) ||
        !atf_sv_count_ok(h[CP_MHEAD], LBFGS_MEMORY - 1) || !atf_sv_count_ok(h[CP_LEFT], CHECK_EVERY) ||
        !atf_sv_count_ok(h[CP_PHASE], 1) || !atf_sv_count_ok(h[CP_EXACT], 1))
        return 0;
    int counts[] = {CP_ITER, CP_LBFGS, CP_NEWTON, CP_CG, CP_CHECKS, CP_GROWN, CP_SINCE_BUILD,
                    CP_BEST_CHECK, CP_MARK_CHECK};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        if (!atf_sv_count_ok(h[counts[i]], INT_MAX))
            return 0;
    return atf_sv_count_ok(h[CP_PASSES], 1e15) && atf_sv_count_ok(h[CP_FS_PASSES], 1e15) &&
           h[CP_FS_FLOPS] >= 0.0;
}

static void load_header(fac_state *st, const double *h)
{
    st->t = h[CP_T], st->pg = mark_back(h[CP_PG]), st->best_pg = mark_back(h[CP_BEST_PG]);
    st->mark_F = mark_back(h[CP_MARK_F]);
    st->iter = (int)h[CP_ITER], st->lbfgs = (int)h[CP_LBFGS], st->newton = (int)h[CP_NEWTON];
    st->cg = (int)h[CP_CG], st->checks = (int)h[CP_CHECKS], st->grown = (int)h[CP_GROWN];
    st->newton_phase = (int)h[CP_PHASE], st->since_newton_build = (int)h[CP_SINCE_BUILD];
    st->exact_checks = (int)h[CP_EXACT], st->best_check = (int)h[CP_BEST_CHECK];
    st->mark_check = (int)h[CP_MARK_CHECK], st->left = (int)h[CP_LEFT];
    st->s->passes = (long)h[CP_PASSES];
}

static atf_error not_a_state(const fac_state *st, int64_t len, char *err)
{
    atf_errorf(err, "factored: the checkpoint's state is not a factored state of %d blocks "
                    "(%lld numbers, or its header is damaged)", st->s->nvars, (long long)len);
    return ATF_E_INPUT;
}

/* The state of a checkpoint in place of the start. */
static atf_error resume(fac_state *st, const atf_checkpoint *cp, char *err)
{
    atf_error e = atf_sv_checkpoint_is_ours("factored", cp, st->key, err);
    if (e != ATF_OK)
        return e;
    const double *h = cp->data;
    atf_solver *s = st->s;
    if (!header_ok(st, h, cp->len))
        return not_a_state(st, cp->len, err);
    size_t nf = 0;
    for (int v = 0; v < s->nvars; v++) {
        double r = h[CP_HEADER + v];
        int k = s->vars[v].rows < s->vars[v].cols ? s->vars[v].rows : s->vars[v].cols;
        if (!atf_sv_count_ok(r, k))
            return not_a_state(st, cp->len, err);
        st->rank[v] = (int)r;
        nf += (size_t)st->rank[v] * (s->vars[v].rows + s->vars[v].cols);
    }
    size_t plen = (size_t)h[CP_PRECOND_LEN];
    if (nf != (size_t)h[CP_NF] ||
        (size_t)cp->len != CP_HEADER + (size_t)s->nvars + nf + 2 * LBFGS_MEMORY * nf +
                               LBFGS_MEMORY + plen)
        return not_a_state(st, cp->len, err);
    const double *at = h + CP_HEADER + s->nvars;
    if ((e = enter(st, at, err)) != ATF_OK)
        return e;
    at += nf;
    memcpy(st->mS, at, LBFGS_MEMORY * nf * sizeof *at), at += LBFGS_MEMORY * nf;
    memcpy(st->mY, at, LBFGS_MEMORY * nf * sizeof *at), at += LBFGS_MEMORY * nf;
    memcpy(st->mrho, at, LBFGS_MEMORY * sizeof *at), at += LBFGS_MEMORY;
    st->mcount = (int)h[CP_MCOUNT], st->mhead = (int)h[CP_MHEAD];
    if ((e = atf_fs_precond_load(&st->fs, &st->pc, at, plen, err)) != ATF_OK)
        return e;
    load_header(st, h);
    if (st->exact_checks)
        all_double(st);
    st->fs.passes = (long)h[CP_FS_PASSES], st->fs.flops = h[CP_FS_FLOPS];
    st->start = atf_now() - h[CP_ELAPSED];
    if (st->b.verbose)
        atf_sv_log(s, "atf factored: resumed from a checkpoint at step %d (%.0f s into the "
                      "solve)\n", st->iter, h[CP_ELAPSED]);
    return ATF_OK;
}

/* This solve's key, when it keeps or resumes checkpoints (one process). */
static atf_error checkpoint_setup(fac_state *st, char *err)
{
    atf_solver *s = st->s;
    st->last_checkpoint = atf_now();
    if ((!s->hooks.checkpoint && !s->hooks.resume) || s->hooks.processes)
        return ATF_OK;
    st->keeping = s->hooks.checkpoint != NULL;
    return atf_sv_checkpoint_key(s, "factored state 1", &s->loss, st->b.eps, NULL, st->key, err);
}

/* The loop; *status the outcome (MAX_ITERATIONS also when newton is to go on: *stalled 1 when
 * the checks stalled, 2 when the ranks make a pass in the factors dearer than one over B). */
static atf_error iterate(fac_state *st, atf_status *status, int *stalled, char *err)
{
    atf_error e = ATF_OK;
    *stalled = 0;
    for (;;) {
        if (checkpoint_due(st) && (e = keep_state(st, err)) != ATF_OK)
            return e;
        if (atf_sv_interrupted(st->s)) { /* the state here kept whatever the interval */
            if (st->keeping && (e = keep_state(st, err)) != ATF_OK)
                return e;
            *status = ATF_STATUS_INTERRUPTED;
            return ATF_OK;
        }
        if (st->iter >= st->b.max_iter) { /* kept too: run again with a larger limit */
            if (st->keeping && (e = keep_state(st, err)) != ATF_OK)
                return e;
            *status = ATF_STATUS_MAX_ITERATIONS;
            return ATF_OK;
        }
        if (st->left > 0) {
            if (lbfgs_run(st) < 0) {
                st->mcount = 0; /* the line search failed: fresh memory, and Newton may help */
                st->newton_phase = st->pg < 1.0;
            }
            if (st->left > 0)
                continue; /* interrupted, or at the limit: the top decides */
        }
        int done = 0;
        if ((e = check(st, &done, err)) != ATF_OK)
            return e;
        if (done && (!st->Hs || st->exact_checks)) {
            *status = ATF_STATUS_SOLVED;
            return ATF_OK;
        }
        if (done) { /* the single-precision check says so: the double one decides */
            all_double(st);
            continue;
        }
        if (st->pg < SINGLE_FLOOR) /* float's rounding would hide the rest of the way */
            all_double(st);
        if (st->newton_phase && atf_fs_dearer(&st->fs)) { /* (L-BFGS may still prune) */
            *stalled = 2;
            *status = ATF_STATUS_MAX_ITERATIONS;
            return ATF_OK;
        }
        if (st->checks - st->mark_check >= STALL_CHECKS) {
            *stalled = 1;
            *status = ATF_STATUS_MAX_ITERATIONS;
            return ATF_OK;
        }
        if (!st->newton_phase)
            st->left = CHECK_EVERY;
        else if (newton_step(st, err, &e) && e == ATF_OK)
            st->newton_phase = 0, st->left = CHECK_EVERY; /* no decrease: L-BFGS again */
        if (e != ATF_OK)
            return e;
    }
}

/* Where the checks stalled (why: iterate's *stalled), newton from the cores, with the
 * iterations left. */
static atf_error hand_over(fac_state *st, int why, atf_result *res, double *x,
                           atf_pg_info *info, char *err)
{
    atf_solver *s = st->s;
    /* the hand-over first, then the factors' figures: a note cut at its length keeps the why */
    size_t used = strlen(res->info.method_note);
    if (why == 2)
        snprintf(res->info.method_note + used, sizeof res->info.method_note - used,
                 "%sfactored, then newton continued (a pass in the factors dearer than one over "
                 "B at these ranks; pg residual %.2e after %d steps)",
                 used ? "; " : "", st->pg, st->iter);
    else
        snprintf(res->info.method_note + used, sizeof res->info.method_note - used,
                 "%sfactored, then newton continued (the pg residual stalled at %.2e after %d "
                 "steps)", used ? "; " : "", st->pg, st->iter);
    note(st, res);
    atf_fs_cores(&st->fs, st->fs.cur.x, x);
    s->passes += st->fs.passes;
    st->fs.passes = 0;
    atf_sv_budget rest = st->b;
    rest.max_iter = st->b.max_iter - st->iter > 1 ? st->b.max_iter - st->iter : 1;
    int gave_up = 0;
    atf_hooks hooks = s->hooks; /* (newton's states would be another method's: none kept) */
    s->hooks.checkpoint = NULL, s->hooks.resume = NULL;
    atf_error e = atf_sv_newton(s, &s->loss, &rest, res, x, info, &gave_up, err);
    s->hooks = hooks;
    res->info.iterations += st->iter;
    res->info.inner_iterations += st->cg;
    return e;
}

atf_error atf_sv_factored_run(atf_solver *s, const atf_sv_budget *b, atf_result *res,
                              double *x, char *err)
{
    fac_state st;
    atf_error e = init_state(&st, s, b, err);
    atf_sv_start(s, x);
    if (e == ATF_OK)
        e = checkpoint_setup(&st, err);
    if (e == ATF_OK && s->hooks.resume && st.key[0]) {
        e = resume(&st, s->hooks.resume, err);
    } else if (e == ATF_OK) {
        e = start_factors(&st, x, err);
        if (e == ATF_OK)
            first_step(&st);
    }
    if (e == ATF_OK && b->verbose)
        log_header(&st);
    atf_status status = ATF_STATUS_MAX_ITERATIONS;
    int stalled = 0;
    if (e == ATF_OK)
        e = iterate(&st, &status, &stalled, err);
    atf_pg_info info;
    if (e == ATF_OK && stalled)
        e = hand_over(&st, stalled, res, x, &info, err);
    else if (e == ATF_OK) {
        certify(&st, &info, res, x);
        if (status == ATF_STATUS_SOLVED && !(info.pg_residual <= b->eps))
            status = ATF_STATUS_MAX_ITERATIONS; /* (the cores' own residual decides) */
        res->info.status = status;
        res->info.iterations = st.iter;
        res->info.inner_iterations = st.cg;
        res->info.primal_residual = res->info.dual_residual = NAN;
        note(&st, res);
        s->passes += st.fs.passes;
        if (b->verbose)
            atf_sv_log(s, "atf factored: %s after %d steps (%d L-BFGS, %d Newton, %d CG), ranks "
                       "%d in all, %ld passes: objective %.9e; pg residual %.3e, stationarity "
                       "%.3e, duality gap %.3e, %.2f s\n", atf_status_name(status), st.iter,
                       st.lbfgs, st.newton, st.cg, total_rank(&st), s->passes, info.objective,
                       info.pg_residual, res->info.stationarity, info.duality_gap,
                       atf_now() - st.start);
    }
    if (e == ATF_OK) {
        res->info.pg_residual = info.pg_residual;
        res->info.duality_gap = info.duality_gap;
    }
    free_state(&st);
    return e;
}

atf_error atf_sv_factored_check(const atf_solver *s, char *err)
{
    if (s->structure != ATF_GLOBAL_LAYER) {
        atf_errorf(err, "factored: the layer structure only (structure %s: use newton)",
                   atf_structure_name(s->structure));
        return ATF_E_USAGE;
    }
    for (int v = 0; v < s->nvars; v++) {
        const atf_sv_var *var = &s->vars[v];
        if (var->kind != ATF_SV_SPECTRAL) {
            atf_errorf(err, "factored: block %s has the diagonal structure (use newton)",
                       var->orig->name);
            return ATF_E_USAGE;
        }
        if (!atf_fs_penalty_factors(&var->pen)) {
            char spec[ATF_PENALTY_SPECLEN];
            atf_penalty_format(&var->orig->penalty, spec, sizeof spec);
            atf_errorf(err, "factored: block %s: penalty %s has no factor form (t -> "
                       "omega~(e^t) is not convex; use newton)", var->orig->name, spec);
            return ATF_E_USAGE;
        }
    }
    return ATF_OK;
}
