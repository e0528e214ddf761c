/* fista.c — the penalized problem (16), min_x F(x) = Σ Ω̃(x) + g(x) with g(x) = κ L(scale ∘ A'x),
 * by accelerated proximal gradient (FISTA), matrix-free (docs/solver.md, "Penalized problem").
 *
 *   y = x_k + β_k (x_k − x_{k−1}),   x_{k+1} = prox_{tΩ̃}(y − t ∇g(y)),   ∇g(y) = A'ᵀ ∇ℓ(A'y)
 *
 * A'y is a linear combination of the stored A'x_k, so an iteration costs one apply (A'x_{k+1})
 * and one adjoint (per factored block two GEMMs each; the M × M Gram is never formed) plus the
 * blockwise SVD of the prox. Backtracking (Beck–Teboulle) accepts t when the Bregman divergence
 * of g between y and x_{k+1} is at most ‖x_{k+1} − y‖²/(2t), computed without cancellation
 * (pg_loss.c); t grows by 1/0.9 before every step (as TFOCS does), with the classic momentum
 * β_k = (θ_k − 1)/θ_{k+1}, θ_{k+1} = (1 + √(1 + 4θ_k²))/2.
 * Adaptive restart (O'Donoghue–Candès): the gradient scheme resets the momentum when it points
 * against the step (⟨y − x_{k+1}, x_{k+1} − x_k⟩ > 0), and a momentum step that would increase F
 * (beyond rounding) is discarded and replaced by a plain proximal-gradient step from x_k, so F
 * never increases (which also keeps nonconvex penalties safe).
 *
 * Stopping: the relative proximal-gradient residual at a point x with step t,
 *     res(x) = ‖G‖ / max(‖∇g(x)‖, ‖G − ∇g(x)‖),   G = (x − prox_{tΩ̃}(x − t∇g(x)))/t,
 * (G − ∇g(x) ∈ ∂Ω̃ at the prox point: res compares the two terms of 0 ∈ ∇g + ∂Ω̃ that must
 * cancel) is ≤ eps_rel. The residual of each step is measured at y; once it is small, the next
 * step starts at y = x_k (no momentum), so the residual that stops the run is the one of the
 * returned point itself. */
#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solver_penalized.h"

#define STEP_GROW (1.0 / 0.9) /* t grows by this before each step */
#define STEP_SHRINK 0.5       /* backtracking factor */
#define MAX_BACKTRACK 60
#define POWER_ITERATIONS 12   /* at most, for the first step 1/L */
#define POWER_RTOL 1e-2       /* ... stopping once the estimate grows by less than this */
#define GOLDEN_STEPS 60
/* A momentum step may raise F by rounding (1e-16 relative) near the optimum; only more than
 * this counts as an increase that discards the step. */
#define RESTART_SLACK 1e-13       /* golden-section steps of the 1-D maximisations */

/* ---- conjugate of the penalty ------------------------------------------------------------ */

/* Maximum of a unimodal f on [lo, hi] by golden section; returns the value. */
static double golden_max(double (*f)(const void *, double), const void *ctx, double lo,
                         double hi)
{
    const double r = 0.6180339887498949;
    double a = lo, b = hi, c = b - r * (b - a), d = a + r * (b - a);
    double fc = f(ctx, c), fd = f(ctx, d);
    for (int i = 0; i < GOLDEN_STEPS * 2 && b - a > 1e-15 * fabs(b); i++) {
        if (fc < fd) {
            a = c, c = d, fc = fd;
            d = a + r * (b - a), fd = f(ctx, d);
        } else {
            b = d, d = c, fd = fc;
            c = b - r * (b - a), fc = f(ctx, c);
        }
    }
    return fmax(fmax(fc, fd), fmax(f(ctx, lo), f(ctx, hi)));
}

typedef struct {
    const atf_penalty *pen;
    double a; /* u²/4 */
} conj_ctx;

/* ψ(z) = a z² − (ω1 ⊕ ω2)(z) on z ≥ 1 (−∞ where ω is +∞). */
static double conj_psi(const void *ctx, double z)
{
    const conj_ctx *c = ctx;
    double w = atf_penalty_joint(c->pen, z, NULL, NULL);
    return isfinite(w) ? c->a * z * z - w : -INFINITY;
}

/* ω̃*(u) = sup_v |u|v − ω̃(v) = sup_{z≥1} u²z²/4 − ω(z) (exchange the sup over v and the min
 * over z in ω̃(v) = min_z ω(z) + v²/z²). For convex ω̃, ω'(z)/z is nondecreasing, so
 * ψ'(z) = z(u²/2 − ω'(z)/z) changes sign at most once: ψ is unimodal. */
double atf_pg_omega_conjugate(const atf_penalty *pen, double u)
{
    double a = 0.25 * u * u;
    if (atf_penalty_is_nuclear(pen)) {
        double bound = atf_penalty_deriv(pen, 1.0); /* 2√γ */
        return fabs(u) <= bound ? 0.0 : INFINITY;
    }
    if (pen->w1.family == ATF_FAMILY_FIXED && pen->w2.family == ATF_FAMILY_FIXED)
        return a;
    if (a == 0.0)
        return 0.0;
    conj_ctx c = {pen, a};
    double z = 1.0, fz = conj_psi(&c, 1.0);
    for (;;) { /* bracket the maximum: double z while ψ increases */
        if (z > 1e150)
            return INFINITY; /* ψ grows without bound: u is outside dom ω̃* */
        double f2 = conj_psi(&c, 2.0 * z);
        if (!(f2 > fz))
            break;
        z *= 2.0, fz = f2;
    }
    return golden_max(conj_psi, &c, z > 1.0 ? 0.5 * z : 1.0, 2.0 * z);
}

/* The arguments of ω̃* in (Σ Ω̃)*(v): singular values (spectral), |entries| (diagonal), norms
 * (vectors, `full`). They scale with v, so the dual search computes them once. */
typedef struct {
    int nparts;
    const atf_penalty **pen;
    double **vals;
    size_t *count;
} conj_args;

static void conj_args_free(conj_args *ca)
{
    for (int i = 0; i < ca->nparts; i++)
        free(ca->vals[i]);
    free(ca->pen), free(ca->vals), free(ca->count);
}

static int conj_args_build(atf_solver *s, const double *v, conj_args *ca)
{
    int parts = s->set.structure == ATF_GLOBAL_FULL ? 1 : s->nvars;
    ca->nparts = parts;
    ca->pen = calloc((size_t)parts, sizeof *ca->pen);
    ca->vals = calloc((size_t)parts, sizeof *ca->vals);
    ca->count = calloc((size_t)parts, sizeof *ca->count);
    if (!ca->pen || !ca->vals || !ca->count)
        return -1;
    if (s->set.structure == ATF_GLOBAL_FULL) {
        ca->pen[0] = &s->full_pen;
        ca->count[0] = 1;
        if (!(ca->vals[0] = malloc(sizeof(double))))
            return -1;
        ca->vals[0][0] = atf_sv_norm(v, s->n);
        return 0;
    }
    for (int l = 0; l < s->nvars; l++) {
        atf_sv_var *var = &s->vars[l];
        const double *vv = v + var->off;
        ca->pen[l] = &var->pen;
        size_t n = var->kind == ATF_SV_ENTRYWISE ? var->len : var->k > 1 ? (size_t)var->k : 1;
        ca->count[l] = n;
        if (!(ca->vals[l] = malloc(n * sizeof(double))))
            return -1;
        if (var->kind == ATF_SV_ENTRYWISE) {
            for (size_t i = 0; i < n; i++)
                ca->vals[l][i] = fabs(vv[i]);
        } else if (var->k > 1) {
            if (atf_sv_svd(var, vv) != 0)
                return -1;
            memcpy(ca->vals[l], var->s, n * sizeof(double));
        } else {
            ca->vals[l][0] = atf_sv_norm(vv, var->len);
        }
    }
    return 0;
}

static double conj_args_value(const conj_args *ca, double theta)
{
    double sum = 0.0;
    for (int i = 0; i < ca->nparts && isfinite(sum); i++)
        for (size_t j = 0; j < ca->count[i] && isfinite(sum); j++)
            sum += atf_pg_omega_conjugate(ca->pen[i], theta * ca->vals[i][j]);
    return sum;
}

static int all_convex(const atf_solver *s)
{
    if (s->set.structure == ATF_GLOBAL_FULL)
        return atf_penalty_is_convex(&s->full_pen);
    for (int l = 0; l < s->nvars; l++)
        if (!atf_penalty_is_convex(&s->vars[l].pen))
            return 0;
    return 1;
}

double atf_pg_penalty_conjugate(atf_solver *s, const double *v)
{
    if (!all_convex(s))
        return NAN;
    conj_args ca = {0};
    double value = conj_args_build(s, v, &ca) == 0 ? conj_args_value(&ca, 1.0) : NAN;
    conj_args_free(&ca);
    return value;
}

/* ---- duality gap ------------------------------------------------------------------------- */

/* Dual candidates u_θ = θ ∇ℓ(A'x), θ ∈ [0, 1] (θ = 1 is the one Fenchel–Young makes exact at
 * the optimum; smaller θ bring −A'ᵀu_θ inside dom Ω̃* for penalties of bounded slope, e.g.
 * nuclear). D(θ) = −ℓ*(θu) − Ω̃*(−θ A'ᵀu) is concave in θ and maximised by golden section. */
typedef struct {
    atf_pg_loss *pl;
    const conj_args *ca;
    const double *u;
    double *scratch;
} dual_ctx;

static double dual_value(const void *ctx, double theta)
{
    const dual_ctx *d = ctx;
    int M = d->pl->M;
    for (int m = 0; m < M; m++)
        d->scratch[m] = theta * d->u[m];
    double value = -atf_pg_loss_conjugate(d->pl, d->scratch) - conj_args_value(d->ca, theta);
    return isnan(value) ? -INFINITY : value;
}

/* (F(x) − max_θ D(θ)) / |F(x)| for convex penalties, NaN otherwise. u = ∇ℓ(A'x) [M],
 * g = A'ᵀu [n]; F in work units. */
static double duality_gap(atf_solver *s, atf_pg_loss *pl, const double *u, const double *g,
                          double F)
{
    if (!all_convex(s))
        return NAN;
    size_t n = s->n;
    double *v = malloc((n ? n : 1) * sizeof *v), *scratch = malloc((size_t)pl->M * sizeof *v);
    conj_args ca = {0};
    double gap = NAN;
    if (!v || !scratch)
        goto done;
    for (size_t i = 0; i < n; i++)
        v[i] = -g[i];
    if (conj_args_build(s, v, &ca) != 0)
        goto done;
    dual_ctx d = {pl, &ca, u, scratch};
    double best = dual_value(&d, 1.0);
    best = fmax(best, golden_max(dual_value, &d, 0.0, 1.0));
    gap = (F - best) / fmax(fabs(F), DBL_MIN);
done:
    conj_args_free(&ca);
    free(v), free(scratch);
    return gap;
}

/* ---- the iteration ----------------------------------------------------------------------- */

typedef struct {
    double *x, *xprev, *y, *w, *g, *xn;  /* [n] */
    double *zx, *zprev, *zy, *zn, *u;    /* [M] */
    double t, theta, F, loss, pen;
    double res;          /* residual of the last step (at y) */
    int momentum;        /* 0: the next step starts at y = x */
    int iter, restarts, backtracks;
    int power_iterations;  /* used by the first step */
    double start;
    /* ETA: the time per iteration and the residual's decay since the last log row */
    int eta_iter;
    double eta_res, eta_time;
} fista_state;

static FILE *log_stream(const atf_solver *s)
{
    return s->set.log ? s->set.log : stderr;
}

static double objective_units(const atf_solver *s, double v)
{
    return atf_sv_unscale_objective(s, v);
}

static void log_header(atf_solver *s, const atf_loss *loss, const fista_state *st)
{
    char spec[ATF_LOSS_SPECLEN];
    atf_loss_format(loss, spec, sizeof spec);
    FILE *f = log_stream(s);
    fprintf(f, "atf fista: loss %s, %d blocks, %zu variables (%lld before reduction), %d rows, "
               "structure %s\n",
            spec, s->nvars, s->n, (long long)s->n_orig, s->prob->M,
            atf_structure_name(s->set.structure));
    fprintf(f, "atf fista: first step %.3e (1/L bound, %d power iterations), eps_rel %.1e, "
               "max_iter %d\n", st->t, st->power_iterations, s->set.eps_rel, s->set.max_iter);
    fprintf(f, "%8s %14s %13s %13s %10s %10s %8s %9s %9s\n", "iter", "objective", "loss",
            "penalty", "pg res", "step", "restarts", "time(s)", "ETA(s)");
}

/* Seconds left: the recent seconds per iteration (between the last two table rows, or since
 * the first iteration began for the first row) times the iterations left — those the residual's recent decay
 * rate needs to reach eps_rel, capped by the iteration budget; the whole budget while the
 * residual does not decrease. */
static double eta_seconds(atf_solver *s, fista_state *st, double now)
{
    double eta = NAN;
    if (st->iter > st->eta_iter) {
        double per_iter = (now - st->eta_time) / (st->iter - st->eta_iter);
        double left = (double)(s->set.max_iter - st->iter);
        if (st->res <= s->set.eps_rel) {
            left = 0.0;
        } else if (st->eta_iter > 0 && st->res > 0.0 && st->eta_res > 0.0) {
            double rate = log(st->eta_res / st->res) / (st->iter - st->eta_iter);
            if (rate > 0.0)
                left = fmin(log(st->res / s->set.eps_rel) / rate, left);
        }
        eta = left * per_iter;
    }
    st->eta_iter = st->iter, st->eta_res = st->res, st->eta_time = now;
    return eta;
}

static void log_row(atf_solver *s, fista_state *st)
{
    double now = atf_now() - st->start, eta = eta_seconds(s, st, now);
    char etabuf[24];
    if (isfinite(eta))
        snprintf(etabuf, sizeof etabuf, "%9.1f", eta);
    else
        snprintf(etabuf, sizeof etabuf, "%9s", "?");
    fprintf(log_stream(s), "%8d %14.7e %13.6e %13.6e %10.3e %10.3e %8d %9.2f %s\n", st->iter,
            objective_units(s, st->F), objective_units(s, st->loss), objective_units(s, st->pen),
            st->res, st->t, st->restarts, now, etabuf);
}

/* Start step: 1/L with L = κ Lip(L) ‖S A'‖², ‖S A'‖² from a few power iterations (a lower bound,
 * so the step may still be too long: the backtracking corrects it). */
static double first_step(atf_solver *s, atf_pg_loss *pl, fista_state *st)
{
    size_t n = s->n;
    uint64_t seed = 0x9E3779B97F4A7C15ULL;
    for (size_t i = 0; i < n; i++) {
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        st->w[i] = (double)(seed >> 11) / 9007199254740992.0 - 0.5;
    }
    double lambda_max = 0.0;
    st->power_iterations = 0;
    for (int it = 0; it < POWER_ITERATIONS; it++) {
        double nw = atf_sv_norm(st->w, n);
        if (!(nw > 0.0))
            break;
        cblas_dscal((int)n, 1.0 / nw, st->w, 1);
        atf_sv_apply(s, st->w, st->zn);
        for (int m = 0; m < pl->M; m++)
            st->zn[m] *= pl->scale[m] * pl->scale[m];
        atf_sv_adjoint(s, st->zn, st->w);
        double previous = lambda_max;
        lambda_max = atf_sv_norm(st->w, n);
        st->power_iterations++;
        if (lambda_max - previous <= POWER_RTOL * lambda_max)
            break; /* settled: the backtracking absorbs the rest */
    }
    double L = pl->kappa * atf_loss_lipschitz(&pl->loss) * lambda_max;
    return L > 0.0 && isfinite(L) ? 1.0 / L : 1.0;
}

static double dist(const double *a, const double *b, size_t n)
{
    double sum = 0.0;
    for (size_t i = 0; i < n; i++)
        sum += (a[i] - b[i]) * (a[i] - b[i]);
    return sqrt(sum);
}

static void swap(double **a, double **b)
{
    double *t = *a;
    *a = *b;
    *b = t;
}

/* The relative proximal-gradient residual of the step y → xn with gradient g at y. */
static double pg_residual(const double *y, const double *xn, const double *g, double t,
                          size_t n)
{
    double G2 = 0.0, xi2 = 0.0, g2 = 0.0;
    for (size_t i = 0; i < n; i++) {
        double G = (y[i] - xn[i]) / t;
        G2 += G * G, xi2 += (G - g[i]) * (G - g[i]), g2 += g[i] * g[i];
    }
    double scale = sqrt(fmax(g2, xi2));
    return scale > 0.0 ? sqrt(G2) / scale : 0.0;
}

/* One proximal-gradient step from y (gradient g, loss value ly at zy) with backtracking: xn, zn
 * and t are set. Returns 0, or -1 when no step length satisfied the test (numerical trouble). */
static int backtracking_step(atf_solver *s, atf_pg_loss *pl, fista_state *st)
{
    size_t n = s->n;
    double t = st->t * STEP_GROW;
    for (int k = 0; k < MAX_BACKTRACK; k++) {
        for (size_t i = 0; i < n; i++)
            st->w[i] = st->y[i] - t * st->g[i];
        double t0 = atf_now();
        atf_sv_prox(s, st->w, st->xn, 1.0 / t);
        s->t.prox += atf_now() - t0;
        atf_sv_apply(s, st->xn, st->zn);
        double dx = dist(st->xn, st->y, n);
        double breg = atf_pg_loss_bregman(pl, st->zy, st->zn);
        if (breg <= dx * dx / (2.0 * t) || dx <= 1e-15 * atf_sv_norm(st->y, n)) {
            st->t = t;
            return 0;
        }
        st->backtracks++;
        t *= STEP_SHRINK;
    }
    return -1;
}

/* One step. Returns 1 when the point the step started from is certified (no momentum, residual
 * ≤ eps_rel: it stays the answer), −1 on numerical trouble, 0 to go on. */
static int iterate(atf_solver *s, atf_pg_loss *pl, fista_state *st)
{
    size_t n = s->n;
    int M = pl->M;
    double theta_next = 0.5 * (1.0 + sqrt(1.0 + 4.0 * st->theta * st->theta));
    double beta = st->momentum ? (st->theta - 1.0) / theta_next : 0.0;
    for (size_t i = 0; i < n; i++)
        st->y[i] = st->x[i] + beta * (st->x[i] - st->xprev[i]);
    for (int m = 0; m < M; m++)
        st->zy[m] = st->zx[m] + beta * (st->zx[m] - st->zprev[m]);
    atf_pg_loss_eval(pl, st->zy, st->u);
    atf_sv_adjoint(s, st->u, st->g);
    double t_before = st->t;
    if (backtracking_step(s, pl, st) != 0)
        return -1;
    double pen = atf_sv_prox_objective(s, st->xn);
    double loss = atf_pg_loss_eval(pl, st->zn, NULL);
    double F = pen + loss;
    if (!isfinite(F))
        return -1;
    st->res = pg_residual(st->y, st->xn, st->g, st->t, n);
    if (beta == 0.0 && st->res <= s->set.eps_rel) /* y = x itself is certified */
        return 1;
    if (beta != 0.0 && F > st->F + RESTART_SLACK * fabs(st->F)) {
        /* the momentum step increased F: discard it, no momentum next time */
        st->restarts++;
        st->momentum = 0;
        st->theta = 1.0;
        st->t = t_before;
        return 0;
    }
    /* gradient scheme: momentum pointing against the step direction is reset */
    double turn = 0.0;
    for (size_t i = 0; i < n; i++)
        turn += (st->y[i] - st->xn[i]) * (st->xn[i] - st->x[i]);
    int reset = beta != 0.0 && turn > 0.0;
    st->restarts += reset;
    swap(&st->xprev, &st->x), swap(&st->x, &st->xn);
    swap(&st->zprev, &st->zx), swap(&st->zx, &st->zn);
    st->F = F, st->loss = loss, st->pen = pen;
    st->theta = reset ? 1.0 : theta_next;
    /* a small residual at y: certify x next time by a step without momentum */
    st->momentum = !(st->res <= s->set.eps_rel);
    if (!st->momentum)
        st->theta = 1.0;
    return 0;
}

static atf_error alloc_state(fista_state *st, size_t n, int M)
{
    size_t bn = (n ? n : 1) * sizeof(double), bm = (size_t)M * sizeof(double);
    double **vn[] = {&st->x, &st->xprev, &st->y, &st->w, &st->g, &st->xn};
    double **vm[] = {&st->zx, &st->zprev, &st->zy, &st->zn, &st->u};
    int ok = 1;
    for (size_t i = 0; i < sizeof vn / sizeof vn[0]; i++)
        ok = (*vn[i] = calloc(1, bn)) != NULL && ok;
    for (size_t i = 0; i < sizeof vm / sizeof vm[0]; i++)
        ok = (*vm[i] = calloc(1, bm)) != NULL && ok;
    return ok ? ATF_OK : ATF_E_NOMEM;
}

static void free_state(fista_state *st)
{
    free(st->x), free(st->xprev), free(st->y), free(st->w), free(st->g), free(st->xn);
    free(st->zx), free(st->zprev), free(st->zy), free(st->zn), free(st->u);
}

/* Certificates at the answer x: the proximal-gradient residual of one step from x, the
 * stationarity (relative distance of −∇g(x) from ∂Ω̃(x)) and the duality gap. */
static void certify(atf_solver *s, atf_pg_loss *pl, fista_state *st, atf_pg_info *info,
                    atf_result *res)
{
    size_t n = s->n;
    atf_pg_loss_eval(pl, st->zx, st->u);
    atf_sv_adjoint(s, st->u, st->g);
    for (size_t i = 0; i < n; i++)
        st->w[i] = st->x[i] - st->t * st->g[i];
    atf_sv_prox(s, st->w, st->xn, 1.0 / st->t);
    info->pg_residual = pg_residual(st->x, st->xn, st->g, st->t, n);
    for (size_t i = 0; i < n; i++)
        st->w[i] = -st->g[i];
    double tau = 1e-9 * atf_sv_norm(st->x, n);
    res->stationarity = atf_sv_stationarity(s, st->x, st->w, tau);
    info->duality_gap = duality_gap(s, pl, st->u, st->g, st->F);
}

atf_error atf_sv_fista(atf_solver *s, const atf_loss *loss, atf_result *res, double *x,
                       atf_pg_info *info, char *err)
{
    atf_pg_loss pl;
    atf_error e = atf_pg_loss_init(s, loss, &pl, err);
    if (e != ATF_OK)
        return e;
    fista_state st = {.theta = 1.0, .start = atf_now()};
    memset(info, 0, sizeof *info);
    if (alloc_state(&st, s->n, pl.M) != ATF_OK) {
        free_state(&st), atf_pg_loss_free(&pl);
        atf_errorf(err, "fista: out of memory for %zu variables and %d rows", s->n, pl.M);
        return ATF_E_NOMEM;
    }
    size_t n = s->n;
    memcpy(st.x, x, n * sizeof *x);
    atf_sv_apply(s, st.x, st.zx);
    st.pen = atf_sv_objective(s, st.x);
    st.loss = atf_pg_loss_eval(&pl, st.zx, NULL);
    st.F = st.pen + st.loss;
    st.t = first_step(s, &pl, &st);
    st.res = INFINITY;
    if (s->set.verbose)
        log_header(s, loss, &st);
    atf_status status = ATF_STATUS_MAX_ITERATIONS;
    const atf_settings *set = &s->set;
    st.eta_time = atf_now() - st.start; /* the iterations start here (after the first step) */
    for (st.iter = 1; st.iter <= set->max_iter; st.iter++) {
        if (set->interrupt && *set->interrupt) {
            st.iter--;
            status = ATF_STATUS_INTERRUPTED;
            break;
        }
        int done = iterate(s, &pl, &st);
        status = done > 0 ? ATF_STATUS_SOLVED
                          : done < 0 ? ATF_STATUS_NUMERICAL_ERROR : ATF_STATUS_MAX_ITERATIONS;
        if (set->verbose && (done || st.iter == 1 || st.iter % set->log_every == 0 ||
                             st.iter == set->max_iter))
            log_row(s, &st);
        if (done)
            break;
    }
    if (st.iter > set->max_iter)
        st.iter = set->max_iter;
    if (status == ATF_STATUS_NUMERICAL_ERROR && !atf_sv_all_finite(st.x, n)) {
        memset(st.x, 0, n * sizeof *st.x); /* never hand out NaN: B = 0, i.e. f = f0 */
        atf_sv_apply(s, st.x, st.zx);
        st.pen = atf_sv_objective(s, st.x);
        st.loss = atf_pg_loss_eval(&pl, st.zx, NULL);
        st.F = st.pen + st.loss;
    }
    certify(s, &pl, &st, info, res);
    memcpy(x, st.x, n * sizeof *x);
    res->status = status;
    res->iterations = st.iter;
    res->objective = objective_units(s, st.F);
    res->primal_residual = res->dual_residual = NAN;
    info->loss_value = objective_units(s, st.loss);
    info->penalty_value = objective_units(s, st.pen);
    info->objective = res->objective;
    info->step = st.t;
    info->iterations = st.iter;
    info->restarts = st.restarts;
    info->backtracks = st.backtracks;
    if (set->verbose)
        fprintf(log_stream(s), "atf fista: %s after %d iterations: loss %.9e, penalty %.9e, "
                               "objective %.9e; pg residual %.3e, stationarity %.3e, duality "
                               "gap %.3e; %d restarts, %d backtracks, %.2f s\n",
                atf_status_name(status), st.iter, info->loss_value, info->penalty_value,
                info->objective, info->pg_residual, res->stationarity, info->duality_gap,
                st.restarts, st.backtracks, atf_now() - st.start);
    free_state(&st);
    atf_pg_loss_free(&pl);
    return ATF_OK;
}
