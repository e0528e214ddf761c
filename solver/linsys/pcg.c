/* pcg.c — preconditioned Krylov solves with A'A'ᵀ on the solver's work problem, which is never
 * formed: the linear-system backend `pcg` (linsys.h) and the engine of the cg method (cg.c).
 *
 * Every step costs one A'ᵀ and one A' product and one application of a preconditioner
 * P ≈ A'A'ᵀ acting on λ (pcg_precond.c). A preconditioner in data space only weights the rows;
 * one in parameter space would change which solution has minimum norm.
 *
 *  - CG on A'A'ᵀλ = b (Craig's method: x_k the Euclidean projection of the solution onto the
 *    Krylov space) serves the solves whose b = A'v is consistent by construction: the backend's
 *    (the projection, the stationarity certificate's candidate) and, for measurements, the cg
 *    method's main solve (atf_cg_options.krylov).
 *  - LSQR on P^{-1/2}A' (Golub–Kahan in the P⁻¹ inner product on the data side) is the cg
 *    method's main solve: from x = 0 its iterates stay in range(A'ᵀ) and tend to the min-norm
 *    minimiser of ‖A'x − r'‖_{P⁻¹}, i.e. the min-norm interpolant when r' ∈ range(A'), and a
 *    weighted least-squares point otherwise, without the divergence of CG on A'A'ᵀ on
 *    inconsistent data. Its state is kept in checkpoints (hooks.checkpoint, hooks.resume).
 *
 * Stopping. Converged when the relative residual ‖b − A'x‖/‖b‖ ≤ tol, the recursive residual
 * being confirmed by one product with the true one (which replaces it when it does not agree,
 * and "stalled" when three such replacements in a row do not halve it).
 *
 * The inconsistency certificate. For any y ∈ R^M and any x with ‖A'x − b‖ ≤ tol‖b‖,
 *     yᵀb = yᵀA'x − yᵀ(A'x − b) ≤ ‖A'ᵀy‖‖x‖ + tol‖b‖‖y‖,
 * so ‖x‖ ≥ (yᵀb − tol‖b‖‖y‖)/‖A'ᵀy‖ =: bound. With y = P⁻¹(b − A'x_k) (LSQR) or y = z_k = P⁻¹ρ_k
 * (CG, where A'ᵀz_k = A'ᵀp_k − β_k A'ᵀp_{k−1} comes from products already made) the bound grows
 * without limit when b ∉ range(A') and can never exceed ‖x*‖ when b = A'x*. The run stops as
 * `infeasible` once it exceeds ATF_CG_INCONSISTENT_RATIO × ‖x_k‖ (always checked with exact
 * products): no interpolant to tol exists within a million times the norm reached, a true
 * statement in either case, and b is not in the range of A' to working precision. */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "linsys.h"
#include "pcg.h"

/* Consecutive true-residual replacements that do not halve the residual before "stalled". */
#define CG_STALL_REPLACEMENTS 3
/* Steps between exact confirmations of a recursive inconsistency test that failed. */
#define CG_CONFIRM_BACKOFF 10


/* Steps between measurements of the certificate during its solve, and the relative change
 * between two of them below which it has settled. Any candidate in range(A'ᵀ) gives a valid
 * certificate (an upper bound on the distance to stationarity), so stopping early only makes it
 * less tight: by at most about the change last seen. */
#define CERT_EVERY 25
#define CERT_SETTLED 1e-3

/* ---- setup ---- */

void atf_sv_cg_free(atf_sv_cg *c)
{
    if (!c)
        return;
    atf_sv_cg_precond_free(&c->pre);
    free(c->rho), free(c->z), free(c->p), free(c->gp), free(c->tmp), free(c->y), free(c->bs);
    free(c->bw), free(c->lam0);
    free(c->q), free(c->qprev), free(c->w), free(c->xbuf);
    free(c);
}

static atf_sv_cg *cg_alloc(atf_solver *s)
{
    atf_sv_cg *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->s = s;
    c->M = s->work.M;
    c->n = s->n;
    size_t M = (size_t)c->M, n = c->n ? c->n : 1;
    double **vm[] = {&c->rho, &c->z, &c->p, &c->gp, &c->tmp, &c->y, &c->bs, &c->bw, &c->lam0};
    double **vn[] = {&c->q, &c->qprev, &c->w, &c->xbuf};
    int ok = 1;
    for (size_t i = 0; i < sizeof vm / sizeof vm[0]; i++)
        ok &= (*vm[i] = malloc(M * sizeof(double))) != NULL;
    for (size_t i = 0; i < sizeof vn / sizeof vn[0]; i++)
        ok &= (*vn[i] = calloc(n, sizeof(double))) != NULL;
    if (!ok) {
        atf_sv_cg_free(c);
        return NULL;
    }
    return c;
}

static atf_error ensure_preconditioner(atf_sv_cg *c, char *err);

atf_error atf_sv_cg_configure(atf_solver *s, const atf_cg_options *opt, char *err)
{
    atf_sv_cg *c = s ? atf_linsys_pcg_engine(s->proj.ls) : NULL;
    if (!c || !opt) {
        atf_errorf(err, "cg: the solver's linear systems are not solved by PCG");
        return ATF_E_USAGE;
    }
    c->opt = *opt;
    c->built = 0;
    return ATF_OK;
}

int atf_sv_cg_steps(const atf_solver *s)
{
    atf_sv_cg *c = s ? atf_linsys_pcg_engine(s->proj.ls) : NULL;
    return c ? c->total_steps : 0;
}

const atf_cg_report *atf_sv_cg_last(const atf_solver *s)
{
    atf_sv_cg *c = s ? atf_linsys_pcg_engine(s->proj.ls) : NULL;
    return c ? &c->last : NULL;
}

atf_error atf_sv_cg_prepare(atf_sv_cg *c, char *err)
{
    return ensure_preconditioner(c, err);
}

static atf_error ensure_preconditioner(atf_sv_cg *c, char *err)
{
    if (c->built)
        return ATF_OK;
    atf_error e = atf_sv_cg_precond_build(c->s, &c->opt, c->par, &c->pre, err);
    c->built = e == ATF_OK;
    return e;
}

/* ---- PCG ---- */

/* ‖b − A'x‖/‖b‖ into tmp (one pass). */
static double true_residual(atf_sv_cg *c, const atf_pcg_job *job)
{
    atf_sv_apply(c->s, job->x, c->tmp);
    for (int m = 0; m < c->M; m++)
        c->tmp[m] = job->b[m] - c->tmp[m];
    return atf_sv_norm(c->tmp, (size_t)c->M) / job->bn;
}

/* The certificate of the header with y = z (current P⁻¹ρ): ‖A'ᵀz‖ from the recursion
 * q − β·qprev, or (exact) from one adjoint pass. 1 when the bound exceeds the ratio. */
static int inconsistent(atf_sv_cg *c, const atf_pcg_job *job, double beta, int exact,
                        atf_cg_report *rep)
{
    double xn = atf_sv_norm(job->x, c->n);
    double num = atf_dot(c->z, job->b, (size_t)c->M) -
                 job->tol * job->bn * atf_sv_norm(c->z, (size_t)c->M);
    if (!(xn > 0.0) || !(num > 0.0))
        return 0;
    double wn;
    if (exact) {
        atf_sv_adjoint(c->s, c->z, c->w);
        wn = atf_sv_norm(c->w, c->n);
    } else {
        double sum = 0.0;
        for (size_t i = 0; i < c->n; i++) {
            double v = c->q[i] - beta * c->qprev[i];
            sum += v * v;
        }
        wn = sqrt(sum);
    }
    if (!(wn * ATF_CG_INCONSISTENT_RATIO * xn <= num))
        return 0;
    rep->bound = wn > 0.0 ? num / wn : INFINITY;
    return 1;
}

static void log_header(const atf_sv_cg *c, const atf_pcg_job *job)
{
    const atf_solver *s = c->s;
    atf_sv_log(s, "atf cg: %d rows, %zu variables (%lld before reduction), preconditioner %s",
            c->M, c->n, (long long)s->n_orig, atf_precond_name(c->pre.kind));
    if (c->pre.k > 0)
        atf_sv_log(s, " rank %d (residual trace %.1f%%, shift %.2e)", c->pre.k,
                100.0 * c->pre.trace_res / c->pre.trace0, c->pre.shift);
    else if (c->pre.kind == ATF_PRECOND_GRAM32)
        atf_sv_log(s, " (single precision, shift %.2e of the mean diagonal)",
                c->pre.shift * c->pre.M / c->pre.trace0);
    atf_sv_log(s, ", built in %.2f s\natf cg: tol %.1e (relative residual), max %d steps\n",
            c->pre.seconds, job->tol, job->max_steps);
    atf_sv_log(s, "%8s %12s %12s %9s %9s\n", "step", "rel res", "|x| work", "time(s)", "ETA(s)");
}

/* A table row; the ETA extrapolates the residual's decay since the previous row. */
/* The cg method's own solve is the run a display follows (a projection's solves inside ADMM are
 * not: ADMM reports its iterations). */
static void progress(atf_sv_cg *c, const atf_pcg_job *job, int k, double rr)
{
    if (job->shown)
        atf_sv_progress(c->s, (atf_solve_progress){.method = "cg", .iteration = k,
                                             .max_iterations = job->max_steps, .measure = rr,
                                             .tolerance = job->tol, .passes = c->s->passes});
}

static void log_row(atf_sv_cg *c, const atf_pcg_job *job, int k, double rr, double t0, double *prev)
{
    double now = atf_now() - t0, eta = NAN;
    if (prev[0] > 0.0 && rr < prev[1] && rr > job->tol) {
        double per_step = (now - prev[2]) / (k - prev[0]);
        double steps = (k - prev[0]) * log(rr / job->tol) / log(prev[1] / rr);
        eta = per_step * fmin(steps, job->max_steps - k);
    }
    char eta_text[32] = "        -";
    if (isfinite(eta))
        snprintf(eta_text, sizeof eta_text, "%9.1f", eta);
    atf_sv_log(c->s, "%8d %12.5e %12.5e %9.2f %s\n", k, rr, atf_sv_norm(job->x, c->n),
            now, eta_text);
    prev[0] = k, prev[1] = rr, prev[2] = now;
}

/* The update of one step after q = A'ᵀp: x, λ and ρ move by α; returns the recursive relative
 * residual, or -1 on a breakdown (curvature not positive and finite). */
static double step_update(atf_sv_cg *c, const atf_pcg_job *job, double rz)
{
    double pgp = atf_dot(c->q, c->q, c->n), alpha = rz / pgp;
    if (!(pgp > 0.0) || !isfinite(alpha))
        return -1.0;
    atf_sv_apply(c->s, c->q, c->gp);
    cblas_daxpy((int)c->n, alpha, c->q, 1, job->x, 1);
    if (job->lam)
        cblas_daxpy(c->M, alpha, c->p, 1, job->lam, 1);
    cblas_daxpy(c->M, -alpha, c->gp, 1, c->rho, 1);
    return atf_sv_norm(c->rho, (size_t)c->M) / job->bn;
}

/* After the recursive residual reached tol: the true residual decides. Returns 1 when done
 * (outcome set), 0 to go on with the true residual in place of the recursive one. */
static int confirm_converged(atf_sv_cg *c, const atf_pcg_job *job, atf_cg_report *rep, double *res,
                             double *best, int *stale)
{
    double tr = true_residual(c, job);
    rep->rel_res = tr;
    if (tr <= job->tol) {
        rep->outcome = ATF_CG_CONVERGED;
        return 1;
    }
    memcpy(res, c->tmp, (size_t)c->M * sizeof *res);
    rep->replacements++;
    *stale = tr > 0.5 * *best ? *stale + 1 : 0;
    *best = fmin(*best, tr);
    if (*stale >= CG_STALL_REPLACEMENTS) {
        rep->outcome = ATF_CG_STALLED;
        return 1;
    }
    return 0;
}

/* The next direction: z = P⁻¹ρ, p = z + βp; returns the new ρᵀz and β. */
static double next_direction(atf_sv_cg *c, double rz, double *beta)
{
    atf_sv_cg_precond_apply(&c->pre, c->rho, c->z);
    double rz_new = atf_dot(c->rho, c->z, (size_t)c->M);
    *beta = rz_new / rz;
    for (int m = 0; m < c->M; m++)
        c->p[m] = c->z[m] + *beta * c->p[m];
    double *t = c->q;
    c->q = c->qprev;
    c->qprev = t;
    return rz_new;
}


/* The caller's measure of the current candidate; 1 once it agrees with the previous measurement
 * to CERT_SETTLED. */
static int certificate_settled(atf_sv_cg *c, const atf_pcg_job *job)
{
    for (size_t i = 0; i < c->n; i++)
        job->cert_y[i] = ldexp(job->x[i], job->exponent);
    double prev = *job->cert;
    *job->cert = job->cert_measure(job->cert_ctx, job->cert_y);
    return isfinite(prev) && fabs(*job->cert - prev) <= CERT_SETTLED * *job->cert;
}

/* The loop; rep->outcome, steps and (when measured) rel_res are set. */
static void pcg_loop(atf_sv_cg *c, const atf_pcg_job *job, atf_cg_report *rep, double t0)
{
    double rz, beta = 0.0, best = INFINITY, prev[3] = {0.0, 0.0, 0.0};
    int stale = 0, next_confirm = 2;
    memcpy(c->rho, job->b, (size_t)c->M * sizeof *c->rho);
    atf_sv_cg_precond_apply(&c->pre, c->rho, c->z);
    memcpy(c->p, c->z, (size_t)c->M * sizeof *c->p);
    rz = atf_dot(c->rho, c->z, (size_t)c->M);
    for (int k = 1;; k++) {
        if (k > job->max_steps) {
            rep->outcome = ATF_CG_LIMIT;
            return;
        }
        if (atf_sv_interrupted(c->s)) {
            rep->outcome = ATF_CG_INTERRUPTED;
            return;
        }
        atf_sv_adjoint(c->s, c->p, c->q);
        c->total_steps++;
        if (k >= next_confirm && inconsistent(c, job, beta, 0, rep)) {
            if (inconsistent(c, job, beta, 1, rep)) {
                rep->outcome = ATF_CG_INCONSISTENT;
                return;
            }
            next_confirm = k + CG_CONFIRM_BACKOFF;
        }
        double rr = step_update(c, job, rz);
        if (rr < 0.0) {
            rep->outcome = inconsistent(c, job, beta, 1, rep) ? ATF_CG_INCONSISTENT
                                                              : ATF_CG_BREAKDOWN;
            return;
        }
        rep->steps = k;
        if (job->log && (k % job->log == 0 || k == 1))
            log_row(c, job, k, rr, t0, prev);
        progress(c, job, k, rr);
        if (rr <= job->tol && confirm_converged(c, job, rep, c->rho, &best, &stale))
            return;
        if (job->cert_measure && k % CERT_EVERY == 0 && certificate_settled(c, job)) {
            rep->outcome = ATF_CG_CONVERGED; /* to the certificate's accuracy */
            rep->rel_res = rr;
            return;
        }
        rz = next_direction(c, rz, &beta);
    }
}

/* ---- LSQR in the P⁻¹ norm (the main solve) ----
 *
 * Golub–Kahan bidiagonalisation of A' in the inner product ⟨u, u'⟩ = uᵀP⁻¹u' on the data side
 * (Arioli 2013; LSQR of Paige and Saunders on P^{-1/2}A'): per step one A' product, one A'ᵀ
 * product and one P⁻¹ application, as CG. From x0 = 0 the iterates stay in range(A'ᵀ) and
 * converge to the min-norm minimiser of ‖A'x − b‖_{P⁻¹}: the min-norm interpolant when b is
 * in range(A'), a weighted least-squares point otherwise, without the divergence CG on A'A'ᵀ
 * shows on inconsistent data. The Euclidean residual r = b − A'x is kept by recursion
 * (A'w_k from A'v_k, which the bidiagonalisation computes anyway) and confirmed by a true one. */
typedef struct {
    double alpha, beta, phibar, rhobar, cs, coef; /* bidiagonal, rotation, direction state */
    double *t, *sv, *aw, *r, *v, *w;          /* t, P⁻¹t, A'w, r [M]; v, w [n] */
} lsqr_state;

/* β t = b with ‖t‖_{P⁻¹} = 1 (sv = P⁻¹t), α v = A'ᵀ sv. */
static void lsqr_start(atf_sv_cg *c, const atf_pcg_job *job, lsqr_state *st)
{
    size_t M = (size_t)c->M;
    st->t = c->rho, st->sv = c->z, st->aw = c->p, st->r = c->gp, st->v = c->q, st->w = c->qprev;
    memcpy(st->t, job->b, M * sizeof *st->t);
    atf_sv_cg_precond_apply(&c->pre, st->t, st->sv);
    st->beta = sqrt(fmax(atf_dot(st->t, st->sv, M), 0.0));
    cblas_dscal((int)M, 1.0 / st->beta, st->t, 1);
    cblas_dscal((int)M, 1.0 / st->beta, st->sv, 1);
    atf_sv_adjoint(c->s, st->sv, st->v);
    st->alpha = atf_sv_norm(st->v, c->n);
    if (st->alpha > 0.0)
        cblas_dscal((int)c->n, 1.0 / st->alpha, st->v, 1);
    memcpy(st->w, st->v, c->n * sizeof *st->w);
    memcpy(st->r, job->b, M * sizeof *st->r);
    memset(st->aw, 0, M * sizeof *st->aw);
    st->phibar = st->beta, st->rhobar = st->alpha, st->coef = 0.0, st->cs = 0.0;
}

/* One step: the next pair of bidiagonalisation vectors, the plane rotation, and x, r, w. */
static void lsqr_step(atf_sv_cg *c, const atf_pcg_job *job, lsqr_state *st)
{
    size_t M = (size_t)c->M, n = c->n;
    atf_sv_apply(c->s, st->v, c->tmp); /* A'v_k */
    for (size_t m = 0; m < M; m++) {
        st->aw[m] = c->tmp[m] - st->coef * st->aw[m]; /* A'w_k */
        st->t[m] = c->tmp[m] - st->alpha * st->t[m];
    }
    atf_sv_cg_precond_apply(&c->pre, st->t, st->sv);
    st->beta = sqrt(fmax(atf_dot(st->t, st->sv, M), 0.0));
    if (st->beta > 0.0) {
        cblas_dscal((int)M, 1.0 / st->beta, st->t, 1);
        cblas_dscal((int)M, 1.0 / st->beta, st->sv, 1);
    }
    atf_sv_adjoint(c->s, st->sv, c->w);
    for (size_t i = 0; i < n; i++)
        st->v[i] = c->w[i] - st->beta * st->v[i];
    st->alpha = atf_sv_norm(st->v, n);
    if (st->alpha > 0.0)
        cblas_dscal((int)n, 1.0 / st->alpha, st->v, 1);
    double rho = hypot(st->rhobar, st->beta), cs = st->rhobar / rho, sn = st->beta / rho;
    double phi = cs * st->phibar, step = phi / rho;
    st->rhobar = -cs * st->alpha;
    st->cs = cs;
    st->phibar = sn * st->phibar;
    cblas_daxpy((int)n, step, st->w, 1, job->x, 1);
    cblas_daxpy((int)M, -step, st->aw, 1, st->r, 1);
    st->coef = sn * st->alpha / rho; /* θ/ρ */
    for (size_t i = 0; i < n; i++)
        st->w[i] = st->v[i] - st->coef * st->w[i];
}

/* The certificate of the header with y = P⁻¹(b − A'x), the true residual (two passes). */
static int lsqr_inconsistent(atf_sv_cg *c, const atf_pcg_job *job, atf_cg_report *rep)
{
    double xn = atf_sv_norm(job->x, c->n);
    true_residual(c, job);
    atf_sv_cg_precond_apply(&c->pre, c->tmp, c->y);
    double num = atf_dot(c->y, job->b, (size_t)c->M) -
                 job->tol * job->bn * atf_sv_norm(c->y, (size_t)c->M);
    if (!(xn > 0.0) || !(num > 0.0))
        return 0;
    atf_sv_adjoint(c->s, c->y, c->w);
    double wn = atf_sv_norm(c->w, c->n);
    if (!(wn * ATF_CG_INCONSISTENT_RATIO * xn <= num))
        return 0;
    rep->bound = wn > 0.0 ? num / wn : INFINITY;
    return 1;
}

/* ‖P^{-1/2}r‖² / ‖A'ᵀP⁻¹r‖ ≈ the bound from LSQR's own estimates (no pass): worth an exact
 * check when it exceeds the ratio. */
static int lsqr_suspect(const lsqr_state *st, double xn)
{
    double normal = st->phibar * st->alpha * fabs(st->cs); /* ‖A'ᵀP⁻¹r‖ (Paige–Saunders) */
    return xn > 0.0 && st->phibar * st->phibar >= ATF_CG_INCONSISTENT_RATIO * xn * normal;
}

/* The bookkeeping of the stopping tests, kept with the state. */
typedef struct {
    int k;                  /* the step about to be taken */
    int stale, next_confirm;
    double best;
} lsqr_book;

/* ---- checkpoints of the main LSQR solve (hooks.checkpoint, hooks.resume) ----
 * At the top of a step the state is the step's number, the bidiagonalisation's scalars and
 * vectors (t, P⁻¹t, A'w, r [M]; v, w [n]), x [n] and the stopping tests' bookkeeping; the
 * preconditioner is a function of the problem, its options and a fixed seed, and is built again
 * on resume (its kind, rank and seed are in the key). So a state can be taken at the top of any
 * step and the resumed solve ends with the uninterrupted one's x, counts and certificate, bit
 * for bit. The x and r kept are those of the scaled right-hand side (pcg), whose exponent the
 * header keeps to check. */
enum { LS_MAGIC, LS_VERSION, LS_M, LS_N, LS_EXPONENT, LS_STEP, LS_TOTAL, LS_PASSES,
       LS_REPLACEMENTS, LS_STALE, LS_NEXT_CONFIRM, LS_BEST, LS_ALPHA, LS_BETA, LS_PHIBAR,
       LS_RHOBAR, LS_CS, LS_COEF, LS_ELAPSED, LS_HEADER };
#define LS_MAGIC_VALUE 5.0412e8 /* "ATF LSQR state": any fixed value that is not a count */
#define LS_VERSION_VALUE 1.0

static size_t lsqr_state_len(const atf_sv_cg *c)
{
    return LS_HEADER + 3 * c->n + 4 * (size_t)c->M;
}

/* The vectors of a state after its header, in their order x, v, w [n], t, sv, aw, r [M]: into
 * the state (save) or from it. */
static void lsqr_vectors(const atf_sv_cg *c, const atf_pcg_job *job, const lsqr_state *st,
                         double *state, int save)
{
    double *vec[] = {job->x, st->v, st->w, st->t, st->sv, st->aw, st->r};
    double *at = state + LS_HEADER;
    for (int i = 0; i < 7; i++) {
        size_t len = i < 3 ? c->n : (size_t)c->M;
        memcpy(save ? at : vec[i], save ? vec[i] : at, len * sizeof *at);
        at += len;
    }
}

/* Hands the state at the top of step bk->k to hooks.checkpoint; 0, or −1 when the caller could
 * not keep it (or out of memory). */
static int lsqr_save(atf_sv_cg *c, const atf_pcg_job *job, const lsqr_state *st,
                     const lsqr_book *bk, const atf_cg_report *rep, int exponent)
{
    atf_solver *s = c->s;
    atf_checkpoint cp = {.len = (int64_t)lsqr_state_len(c)};
    memcpy(cp.key, c->key, sizeof cp.key);
    double *h = cp.data = malloc((size_t)cp.len * sizeof *cp.data);
    if (!h)
        return -1;
    h[LS_MAGIC] = LS_MAGIC_VALUE, h[LS_VERSION] = LS_VERSION_VALUE;
    h[LS_M] = c->M, h[LS_N] = (double)c->n, h[LS_EXPONENT] = exponent;
    h[LS_STEP] = bk->k, h[LS_TOTAL] = c->total_steps, h[LS_PASSES] = (double)s->passes;
    h[LS_REPLACEMENTS] = rep->replacements, h[LS_STALE] = bk->stale;
    h[LS_NEXT_CONFIRM] = bk->next_confirm, h[LS_BEST] = isfinite(bk->best) ? bk->best : -1.0;
    h[LS_ALPHA] = st->alpha, h[LS_BETA] = st->beta, h[LS_PHIBAR] = st->phibar;
    h[LS_RHOBAR] = st->rhobar, h[LS_CS] = st->cs, h[LS_COEF] = st->coef;
    h[LS_ELAPSED] = c->elapsed0 + (atf_now() - c->start);
    lsqr_vectors(c, job, st, h, 1);
    int r = s->hooks.checkpoint(s->hooks.checkpoint_ctx, &cp);
    free(cp.data);
    c->last_checkpoint = atf_now();
    if (r == 0 && job->log)
        atf_sv_log(s, "atf cg: checkpoint kept at step %d\n", bk->k);
    return r == 0 ? 0 : -1;
}

/* Whether hooks.resume is a state of this solve's shape (its key was checked before). */
/* Every number of an LSQR state is in work units, where b has norm below 1: magnitudes beyond
 * 2^500 (a damaged file's 1e300) cannot come from a solve, and would overflow its first step. */
#define LS_STATE_MAX 0x1p500

static int lsqr_numbers_in_range(const atf_checkpoint *cp)
{
    for (int64_t i = 0; i < cp->len; i++)
        if (!(fabs(cp->data[i]) <= LS_STATE_MAX))
            return 0;
    return 1;
}

int atf_sv_cg_state_ok(const atf_sv_cg *c, const atf_checkpoint *cp, int exponent)
{
    const double *h = cp->data;
    return cp->len == (int64_t)lsqr_state_len(c) && lsqr_numbers_in_range(cp) &&
           h[LS_MAGIC] == LS_MAGIC_VALUE &&
           h[LS_VERSION] == LS_VERSION_VALUE && h[LS_M] == c->M && h[LS_N] == (double)c->n &&
           h[LS_EXPONENT] == exponent && h[LS_STEP] >= 1.0 &&
           atf_sv_count_ok(h[LS_STEP], INT_MAX) && atf_sv_count_ok(h[LS_TOTAL], INT_MAX) &&
           atf_sv_count_ok(h[LS_PASSES], 1e15) && atf_sv_count_ok(h[LS_REPLACEMENTS], INT_MAX) &&
           atf_sv_count_ok(h[LS_STALE], INT_MAX) && atf_sv_count_ok(h[LS_NEXT_CONFIRM], INT_MAX);
}

/* The state of c->resume_from in place of lsqr_start (checked by checkpoints_begin). */
static void lsqr_load(atf_sv_cg *c, const atf_pcg_job *job, lsqr_state *st, lsqr_book *bk,
                      atf_cg_report *rep)
{
    atf_solver *s = c->s;
    double *h = c->resume_from->data;
    st->t = c->rho, st->sv = c->z, st->aw = c->p, st->r = c->gp, st->v = c->q, st->w = c->qprev;
    bk->k = (int)h[LS_STEP], c->total_steps = (int)h[LS_TOTAL], s->passes = (long)h[LS_PASSES];
    rep->replacements = (int)h[LS_REPLACEMENTS], rep->steps = bk->k - 1;
    bk->stale = (int)h[LS_STALE], bk->next_confirm = (int)h[LS_NEXT_CONFIRM];
    bk->best = h[LS_BEST] < 0.0 ? INFINITY : h[LS_BEST];
    st->alpha = h[LS_ALPHA], st->beta = h[LS_BETA], st->phibar = h[LS_PHIBAR];
    st->rhobar = h[LS_RHOBAR], st->cs = h[LS_CS], st->coef = h[LS_COEF];
    c->elapsed0 = h[LS_ELAPSED];
    lsqr_vectors(c, job, st, h, 0);
    if (job->log)
        atf_sv_log(s, "atf cg: resumed from a checkpoint at step %d (%.0f s into the solve)\n",
                   bk->k, c->elapsed0);
}

/* A checkpoint before step bk->k: when one is kept and the interval has passed, and always at a
 * stop (the interrupt or the step limit: no finished step is lost). 0, or −1 (the solve ends). */
static int lsqr_checkpoint(atf_sv_cg *c, const atf_pcg_job *job, const lsqr_state *st,
                           const lsqr_book *bk, const atf_cg_report *rep, int exponent, int stop)
{
    if (!job->main_solve || !c->checkpointing ||
        (!stop && atf_now() - c->last_checkpoint < c->s->hooks.checkpoint_seconds))
        return 0;
    if (lsqr_save(c, job, st, bk, rep, exponent) == 0)
        return 0;
    c->checkpoint_failed = 1;
    return -1;
}

static void lsqr_loop(atf_sv_cg *c, const atf_pcg_job *job, atf_cg_report *rep, double t0,
                      int exponent)
{
    lsqr_state st;
    lsqr_book bk = {.k = 1, .next_confirm = 1, .best = INFINITY};
    double prev[3] = {0.0, 0.0, 0.0};
    if (job->main_solve && c->resume_from)
        lsqr_load(c, job, &st, &bk, rep);
    else
        lsqr_start(c, job, &st);
    for (;; bk.k++) {
        int k = bk.k, stop = k > job->max_steps || atf_sv_interrupted(c->s);
        if (lsqr_checkpoint(c, job, &st, &bk, rep, exponent, stop) != 0) {
            rep->outcome = ATF_CG_INTERRUPTED;
            return;
        }
        if (stop) {
            rep->outcome = k > job->max_steps ? ATF_CG_LIMIT : ATF_CG_INTERRUPTED;
            return;
        }
        lsqr_step(c, job, &st);
        c->total_steps++;
        rep->steps = k;
        double rr = atf_sv_norm(st.r, (size_t)c->M) / job->bn;
        if (!isfinite(rr)) {
            rep->outcome = ATF_CG_BREAKDOWN;
            return;
        }
        if (job->log && (k % job->log == 0 || k == 1))
            log_row(c, job, k, rr, t0, prev);
        progress(c, job, k, rr);
        if ((rr <= job->tol || st.beta == 0.0) &&
            confirm_converged(c, job, rep, st.r, &bk.best, &bk.stale))
            return;
        if (k >= bk.next_confirm &&
            (st.alpha == 0.0 || lsqr_suspect(&st, atf_sv_norm(job->x, c->n)))) {
            if (lsqr_inconsistent(c, job, rep)) {
                rep->outcome = ATF_CG_INCONSISTENT;
                return;
            }
            bk.next_confirm = k + CG_CONFIRM_BACKOFF;
        }
    }
}

/* x (and λ) × 2^e, exactly: back from the units of b / 2^e. */
static void unscale(atf_sv_cg *c, const atf_pcg_job *job, int e, atf_cg_report *rep)
{
    for (size_t i = 0; i < c->n; i++)
        job->x[i] = ldexp(job->x[i], e);
    for (int m = 0; job->lam && m < c->M; m++)
        job->lam[m] = ldexp(job->lam[m], e);
    rep->bound = ldexp(rep->bound, e);
}

/* The solve runs on b / 2^e with ‖b / 2^e‖ in [½, 1) (a copy, exact): the scalars of CG and
 * LSQR are squares of vectors of b's size (10^±300 after the equilibration of §7 when the
 * penalty limits the variable unit), which would overflow or underflow. */
void atf_sv_cg_solve(atf_sv_cg *c, const atf_pcg_job *job_in, atf_cg_report *rep)
{
    double t0 = atf_now();
    atf_pcg_job job = *job_in;
    int e = 0;
    frexp(job.bn, &e);
    job.exponent = e;
    memset(rep, 0, sizeof *rep);
    rep->rel_res = NAN;
    memset(job.x, 0, c->n * sizeof *job.x);
    if (job.lam)
        memset(job.lam, 0, (size_t)c->M * sizeof *job.lam);
    if (job.bn > 0.0) {
        for (int m = 0; m < c->M; m++)
            c->bs[m] = ldexp(job.b[m], -e);
        job.b = c->bs;
        job.bn = atf_sv_norm(c->bs, (size_t)c->M);
    }
    if (job.log)
        log_header(c, &job);
    if (job.bn == 0.0)
        rep->outcome = ATF_CG_CONVERGED, rep->rel_res = 0.0;
    else if (job.lsqr)
        lsqr_loop(c, &job, rep, t0, e);
    else
        pcg_loop(c, &job, rep, t0);
    if (isnan(rep->rel_res) || rep->outcome == ATF_CG_INCONSISTENT)
        rep->rel_res = job.bn > 0.0 ? true_residual(c, &job) : 0.0;
    unscale(c, &job, e, rep);
    rep->xnorm = atf_sv_norm(job.x, c->n);
    rep->seconds = atf_now() - t0;
}

/* λ with ‖b − A'A'ᵀλ‖ ≤ tol·bn (bn = ‖b‖) by PCG. */
static void gram_solve_to(atf_sv_cg *c, const double *b, double bn, double tol, double *lambda)
{
    char err[ATF_ERRLEN];
    if (ensure_preconditioner(c, err) != ATF_OK) { /* out of memory: plain CG still works */
        atf_cg_options plain = c->opt;
        plain.precond = ATF_PRECOND_NONE;
        atf_sv_cg_precond_build(c->s, &plain, c->par, &c->pre, err);
    }
    atf_pcg_job job = {.b = b, .bn = bn, .tol = tol, .max_steps = c->max_steps, .x = c->xbuf,
                   .lam = lambda};
    atf_cg_report rep;
    atf_sv_cg_solve(c, &job, &rep);
}

void atf_sv_cg_gram_solve(atf_sv_cg *c, const double *b, double *lambda)
{
    gram_solve_to(c, b, atf_sv_norm(b, (size_t)c->M), c->tol, lambda);
}

void atf_sv_cg_gram_solve_from(atf_sv_cg *c, const double *b, const double *from,
                               double *lambda)
{
    size_t M = (size_t)c->M;
    double bn = atf_sv_norm(b, M);
    if (!from || !(bn > 0.0)) {
        atf_sv_cg_gram_solve(c, b, lambda);
        return;
    }
    atf_sv_adjoint(c->s, from, c->xbuf); /* bw = b − A'A'ᵀλ0 */
    atf_sv_apply(c->s, c->xbuf, c->bw);
    for (size_t m = 0; m < M; m++)
        c->bw[m] = b[m] - c->bw[m];
    double rn = atf_sv_norm(c->bw, M), tol = c->tol;
    if (!(rn > tol * bn)) { /* λ0 solves it already (or b − A'A'ᵀλ0 is not finite: from 0) */
        if (isfinite(rn)) {
            memmove(lambda, from, M * sizeof *lambda);
            return;
        }
        atf_sv_cg_gram_solve(c, b, lambda);
        return;
    }
    memcpy(c->lam0, from, M * sizeof *c->lam0); /* from may be lambda */
    gram_solve_to(c, c->bw, rn, tol * bn / rn, lambda);
    for (size_t m = 0; m < M; m++)
        lambda[m] += c->lam0[m];
}


/* ---- the backend `pcg` ---- */

static atf_error pcg_setup(atf_linsys *ls, char *err)
{
    atf_solver *s = ls->s;
    atf_sv_cg *c = cg_alloc(s);
    if (!c) {
        atf_errorf(err, "cg: out of memory for the workspace (M = %d, n = %zu)", s->work.M, s->n);
        return ATF_E_NOMEM;
    }
    ls->state = c;
    ls->feas_tol = ls->par.tol;
    c->par = &ls->par;
    c->tol = ls->par.tol, c->max_steps = ls->par.max_steps;
    c->opt.precond = ls->par.precond;
    ls->usable = 1;
    return ATF_OK;
}

static void pcg_solve(atf_linsys *ls, const double *b, const double *warm, double tol,
                      double *lambda)
{
    atf_sv_cg *c = ls->state;
    double saved = c->tol;
    if (tol > 0.0)
        c->tol = tol;
    if (warm)
        atf_sv_cg_gram_solve_from(c, b, warm, lambda);
    else
        atf_sv_cg_gram_solve(c, b, lambda);
    c->tol = saved;
}

static void pcg_free(atf_linsys *ls)
{
    atf_sv_cg_free(ls->state);
    ls->state = NULL;
}

const atf_linsys_backend atf_linsys_pcg = {"pcg", "preconditioned CG", 1, pcg_setup,
                                           pcg_solve, pcg_free};
