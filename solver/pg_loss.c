/* pg_loss.c — the loss of the penalized problem (16) in the solver's equilibrated units, with
 * its Bregman divergence and convex conjugate (docs/record/solver.md §14; the loss
 * itself (specs, values, gradients) is problems/loss.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solver_penalized.h"

/* ---- the loss in the solver's units ------------------------------------------------------ */

static double part_ratio(const atf_block *a, const atf_block *b, int m, double *bnorm)
{
    double na = 0.0, nb = 0.0;
    if (a->kind == ATF_OP_DENSE) {
        size_t len = (size_t)a->rows * (size_t)a->cols;
        na = atf_sv_norm(a->J + (size_t)m * len, len);
        nb = atf_sv_norm(b->J + (size_t)m * len, len);
    } else if (a->kind == ATF_OP_SPARSE) {
        size_t len = (size_t)(a->indptr[m + 1] - a->indptr[m]);
        na = atf_sv_norm(a->data + a->indptr[m], len);
        nb = atf_sv_norm(b->data + b->indptr[m], len);
    } else {
        int i = m / a->C;
        double ha = atf_sv_norm(a->H + (size_t)i * (size_t)a->rows, (size_t)a->rows);
        double hb = atf_sv_norm(b->H + (size_t)i * (size_t)b->rows, (size_t)b->rows);
        double da = atf_sv_norm(a->D + (size_t)m * (size_t)a->cols, (size_t)a->cols);
        double db = atf_sv_norm(b->D + (size_t)m * (size_t)b->cols, (size_t)b->cols);
        *bnorm = hb * db;
        return hb > 0.0 && db > 0.0 ? (ha / hb) * (da / db) : NAN;
    }
    *bnorm = nb;
    return nb > 0.0 ? na / nb : NAN;
}

/* A ratio of norms of two rows that differ by a power of two is that power up to rounding. */
static double snap_to_power_of_two(double x)
{
    double p = exp2(round(log2(x)));
    return fabs(x - p) <= 1e-12 * p ? p : x;
}

/* scale_m = ‖row m of the problem's A‖ / ‖row m of the work A‖ × 2^var_exp, read off the block
 * with the largest work part (zero rows: 2^var_exp, the equilibration leaves them alone), and
 * checked against r: the equilibration is a row scaling of A and r together. */
static atf_error row_scales(atf_solver *s, double *scale, char *err)
{
    const atf_problem *p = s->prob, *w = &s->work;
    double var_scale = ldexp(1.0, s->var_exp);
    /* the rows of the examples held (over processes, the others' scales are gathered) */
    int at = s->share.first * p->C, rows = s->share.count * p->C, bad = -1;
    for (int h = 0; h < rows && bad < 0; h++) {
        double best = 0.0, ratio = 1.0;
        for (int l = 0; l < p->nblocks; l++) {
            double bnorm = 0.0, q = part_ratio(&p->blocks[l], &w->blocks[l], h, &bnorm);
            if (isfinite(q) && q > 0.0 && bnorm > best)
                best = bnorm, ratio = q;
        }
        int m = at + h;
        scale[m] = snap_to_power_of_two(ratio) * var_scale;
        double back = scale[m] * w->r[m];
        if (fabs(back - p->r[m]) > 1e-12 * fabs(p->r[m]) + 1e-300) {
            atf_errorf(err, "solver: row %d: the equilibrated problem is not a row scaling of the "
                            "problem (r %.17g vs %.17g); the penalized losses need one", m,
                       p->r[m], back);
            bad = m;
        }
    }
    if (atf_sv_max(s, bad) >= 0) {
        if (bad < 0)
            atf_errorf(err, "solver: the equilibrated problem is not a row scaling of the "
                            "problem on another process's rows");
        return ATF_E_NUMERICAL;
    }
    atf_sv_gather(s, scale, p->C);
    return ATF_OK;
}

/* κ · 2^e / λ without forming an intermediate that leaves the range of doubles (κ and the row
 * scales are exact powers of two; 1/λ = (1/f)·2^−q with λ = f·2^q, f ∈ [1/2, 1)). */
static double over_lambda(const atf_pg_loss *pl, int e)
{
    int q;
    double f = frexp(pl->loss.lambda, &q);
    return ldexp(1.0 / f, pl->kappa_exp + e - q);
}

static int exponent_of_power(double p)
{
    int e;
    frexp(p, &e);
    return e - 1; /* p = 2^(e−1) exactly */
}

void atf_sv_lambda_message(const atf_loss *loss, const char *what, char *err)
{
    atf_errorf(err, "solver: loss %s:lambda=%g: the loss's weight 1/lambda relative to the penalty "
                    "is %s in double precision for this problem (use a lambda closer to the "
                    "data's scale; lambda -> 0 is --loss interpolate)", atf_loss_name(loss->kind),
               loss->lambda, what);
}

/* The work-unit weight of every row: κ·scale_m²/λ (the squared loss's curvature).
 * ATF_E_NUMERICAL, naming λ, when they are not representable: the penalized
 * problem's loss curvature relative to the penalty's is then beyond double precision (a λ so
 * small that the problem is interpolation, or so large that the loss vanishes). */
static atf_error row_weights(atf_pg_loss *pl, char *err)
{
    for (int m = 0; m < pl->M; m++) {
        int e = exponent_of_power(pl->scale[m]);
        pl->wsq[m] = over_lambda(pl, 2 * e);
        if (!(pl->wsq[m] > 0.0 && isfinite(pl->wsq[m]))) {
            atf_sv_lambda_message(&pl->loss, "not representable", err);
            return ATF_E_NUMERICAL;
        }
    }
    return ATF_OK;
}

atf_error atf_pg_loss_init(atf_solver *s, const atf_loss *loss, atf_pg_loss *pl, char *err)
{
    memset(pl, 0, sizeof *pl);
    pl->loss = *loss;
    pl->prob = s->prob;
    pl->N = s->prob->N, pl->C = s->prob->C, pl->M = s->prob->M;
    pl->kappa = ldexp(1.0, -s->obj_exp);
    pl->kappa_exp = -s->obj_exp;
    size_t M = (size_t)pl->M;
    pl->scale = malloc(M * sizeof *pl->scale);
    pl->pred = malloc(M * sizeof *pl->pred);
    pl->gpred = malloc(M * sizeof *pl->gpred);
    pl->wsq = malloc(M * sizeof *pl->wsq);
    if (!pl->scale || !pl->pred || !pl->gpred || !pl->wsq) {
        atf_pg_loss_free(pl);
        atf_errorf(err, "solver: out of memory for the loss workspace (%d rows)", pl->M);
        return ATF_E_NOMEM;
    }
    atf_error e = row_scales(s, pl->scale, err);
    if (e == ATF_OK && loss->kind == ATF_LOSS_SQUARED && loss->lambda == 0.0)
        atf_pg_loss_set_weight(pl, 1.0, s->work.r); /* the augmented Lagrangian's (alm.c) */
    else if (e == ATF_OK)
        e = row_weights(pl, err);
    if (e != ATF_OK) {
        atf_pg_loss_free(pl);
        return e;
    }
    if (loss->lambda > 0.0)
        for (int m = 0; m < pl->M; m++) {
            int q;
            frexp(pl->wsq[m], &q);
            s->loss_weight_exp = abs(q) > s->loss_weight_exp ? abs(q) : s->loss_weight_exp;
        }
    return ATF_OK;
}

void atf_pg_loss_set_weight(atf_pg_loss *pl, double weight, const double *target_work)
{
    pl->target_work = target_work;
    for (int m = 0; m < pl->M; m++)
        pl->wsq[m] = weight;
}

/* The work-unit squared loss of the augmented Lagrangian: Σ wsq/2 (z − target_work)². */
static double work_squared(const atf_pg_loss *pl, const double *z, double *grad)
{
    double v = 0.0;
    for (int m = 0; m < pl->M; m++) {
        double d = z[m] - pl->target_work[m];
        v += pl->wsq[m] * d * d;
        if (grad)
            grad[m] = pl->wsq[m] * d;
    }
    return 0.5 * v;
}

void atf_pg_loss_free(atf_pg_loss *pl)
{
    free(pl->scale), free(pl->pred), free(pl->gpred), free(pl->curv);
    free(pl->wsq);
    pl->scale = pl->pred = pl->gpred = pl->curv = pl->wsq = NULL;
}

atf_error atf_pg_loss_curvature(atf_pg_loss *pl, const double *z)
{
    if (pl->loss.kind != ATF_LOSS_XENT)
        return ATF_OK;
    if (!pl->curv && !(pl->curv = malloc((size_t)pl->M * sizeof *pl->curv)))
        return ATF_E_NOMEM;
    const atf_problem *p = pl->prob;
    for (int i = 0; i < pl->N; i++) {
        double *prob = pl->curv + (size_t)i * (size_t)pl->C;
        for (int k = 0; k < pl->C; k++) {
            size_t m = (size_t)i * (size_t)pl->C + (size_t)k;
            prob[k] = (p->f0 ? p->f0[m] : 0.0) + pl->scale[m] * z[m];
        }
        atf_softmax_xent(pl->C, prob, 0, prob);
    }
    return ATF_OK;
}

void atf_pg_loss_hess(const atf_pg_loss *pl, const int *examples, int n, const double *v,
                      double *out)
{
    const int C = pl->C;
    if (!examples)
        n = pl->N;
    for (int j = 0; j < n; j++) {
        size_t o = (size_t)(examples ? examples[j] : j) * (size_t)C; /* the example's rows */
        const double *vj = v + (size_t)j * (size_t)C;
        double *oj = out + (size_t)j * (size_t)C;
        if (pl->loss.kind != ATF_LOSS_XENT) {
            for (int k = 0; k < C; k++)
                oj[k] = pl->wsq[o + k] * vj[k];
            continue;
        }
        /* κ/λ · S (diag p − p pᵀ) S v = w_k p_k (v_k − Σ_i p_i (s_i/s_k) v_i), w_k = κ s_k²/λ; the
         * ratios s_i/s_k are exact powers of two (1 unless rows of one example were scaled
         * apart). In place (out may be v): the mean is taken before anything is written. */
        const double *prob = pl->curv + o, *scale = pl->scale + o;
        double mean = 0.0; /* Σ_i p_i (s_i/s_0) v_i */
        for (int i = 0; i < C; i++)
            mean += prob[i] * (scale[i] == scale[0] ? vj[i] : scale[i] / scale[0] * vj[i]);
        for (int k = 0; k < C; k++) {
            double mk = scale[k] == scale[0] ? mean : scale[0] / scale[k] * mean;
            oj[k] = pl->wsq[o + k] * prob[k] * (vj[k] - mk);
        }
    }
}

void atf_pg_loss_curv(void *ctx, int example, const double *y, double *u)
{
    atf_pg_loss_hess(ctx, &example, 1, y, u);
}

void atf_pg_loss_lipschitz_weight(const atf_pg_loss *pl, double *v)
{
    double lip = pl->loss.kind == ATF_LOSS_XENT ? 0.5 : 1.0; /* ‖diag p − ppᵀ‖ ≤ 1/2 */
    for (int m = 0; m < pl->M; m++)
        v[m] *= lip * pl->wsq[m];
}

double atf_pg_loss_eval(atf_pg_loss *pl, const double *z, double *grad)
{
    if (pl->target_work)
        return work_squared(pl, z, grad);
    size_t M = (size_t)pl->M;
    for (size_t m = 0; m < M; m++)
        pl->pred[m] = pl->scale[m] * z[m];
    const atf_problem *p = pl->prob;
    double v = atf_loss_value(&pl->loss, pl->N, pl->C, pl->pred, p->r, p->f0, p->labels,
                              grad ? pl->gpred : NULL);
    if (grad)
        for (size_t m = 0; m < M; m++)
            grad[m] = ldexp(pl->gpred[m], pl->kappa_exp + exponent_of_power(pl->scale[m]));
    return pl->kappa * v;
}

double atf_pg_loss_example(const atf_pg_loss *pl, int i, const double *z, double *grad)
{
    const int C = pl->C;
    size_t o = (size_t)i * (size_t)C;
    if (pl->target_work) {
        double v = 0.0;
        for (int k = 0; k < C; k++) {
            double d = z[k] - pl->target_work[o + k];
            v += pl->wsq[o + k] * d * d;
            grad[k] = pl->wsq[o + k] * d;
        }
        return 0.5 * v;
    }
    double pred[64], g[64];
    if (C > 64)
        return NAN; /* (more classes than a stack slab: the caller's whole-problem path) */
    for (int k = 0; k < C; k++)
        pred[k] = pl->scale[o + k] * z[k];
    const atf_problem *p = pl->prob;
    double v = atf_loss_value(&pl->loss, 1, C, pred, p->r + o, p->f0 ? p->f0 + o : NULL,
                              p->labels ? p->labels + i : NULL, g);
    for (int k = 0; k < C; k++)
        grad[k] = ldexp(g[k], pl->kappa_exp + exponent_of_power(pl->scale[o + k]));
    return pl->kappa * v;
}

/* e^d − 1 − d ≥ 0 to full relative precision (the series where the subtraction would cancel). */
static double exp_excess(double d)
{
    if (fabs(d) < 1e-3)
        return d * d * (0.5 + d * (1.0 / 6.0 + d * (1.0 / 24.0 + d / 120.0)));
    return expm1(d) - d;
}

/* Above this centred logit change the series form's e^d may overflow (e^709 ≈ DBL_MAX). */
#define BREGMAN_EXP_MAX 700.0

double atf_pg_loss_bregman(atf_pg_loss *pl, const double *z0, const double *z1)
{
    const atf_problem *p = pl->prob;
    int C = pl->C;
    double sum = 0.0;
    if (pl->loss.kind == ATF_LOSS_SQUARED) {
        for (int m = 0; m < pl->M; m++) {
            double d = z1[m] - z0[m];
            sum += pl->wsq[m] * d * d;
        }
        return 0.5 * sum;
    }
    /* xent: per example LSE(ℓ + δ) − LSE(ℓ) − ⟨softmax(ℓ), δ⟩ = log(1 + Σ_k p_k φ(d_k)) with
     * d = δ − ⟨p, δ⟩ and φ(d) = e^d − 1 − d (Σ_k p_k d_k = 0); the linear −ℓ_y parts cancel. */
    double *prob = pl->pred, *delta = pl->gpred; /* rows of one example at a time */
    for (int i = 0; i < pl->N; i++) {
        size_t o = (size_t)i * (size_t)C;
        for (int k = 0; k < C; k++) {
            size_t m = o + (size_t)k;
            prob[k] = (p->f0 ? p->f0[m] : 0.0) + pl->scale[m] * z0[m];
            delta[k] = pl->scale[m] * (z1[m] - z0[m]);
        }
        atf_softmax_xent(C, prob, 0, prob);
        double mean = 0.0, excess = 0.0, top = -INFINITY;
        for (int k = 0; k < C; k++)
            mean += prob[k] * delta[k];
        for (int k = 0; k < C; k++)
            if (prob[k] > 0.0) /* a class of probability 0 adds nothing (not 0·∞) */
                top = fmax(top, delta[k] - mean);
        if (top < BREGMAN_EXP_MAX) {
            for (int k = 0; k < C; k++)
                if (prob[k] > 0.0)
                    excess += prob[k] * exp_excess(delta[k] - mean);
            sum += log1p(excess);
        } else { /* e^d would overflow: log Σ_k p_k e^{d_k} (= log(1 + Σ p_k φ(d_k))) by LSE */
            for (int k = 0; k < C; k++)
                if (prob[k] > 0.0)
                    excess += exp(log(prob[k]) + (delta[k] - mean) - top);
            sum += top + log(excess);
        }
    }
    return sum * over_lambda(pl, 0);
}

/* Conjugates (docs/record/solver.md §14): with a_m = κ scale_m²/λ the squared loss is
 * Σ a_m/2 (z_m − r_m/scale_m)², so φ*(u) = Σ u_m²/(2a_m) + u_m r_m/scale_m. For xent with
 * c = κ/λ and q = u/(scale·c), φ*(u) = c Σ_i Σ_k p_ik ln p_ik − Σ_m (u_m/scale_m) f0_m where
 * p_i = e_{y_i} + q_i must lie in the probability simplex (+∞ otherwise). */
#define SIMPLEX_TOL 1e-9
double atf_pg_loss_conjugate(atf_pg_loss *pl, const double *u)
{
    const atf_problem *p = pl->prob;
    double sum = 0.0;
    if (pl->loss.kind == ATF_LOSS_SQUARED) {
        for (int m = 0; m < pl->M; m++) {
            double t = pl->target_work ? pl->target_work[m] : p->r[m] / pl->scale[m];
            sum += u[m] * (u[m] / (2.0 * pl->wsq[m])) + u[m] * t;
        }
        return sum;
    }
    double c = over_lambda(pl, 0), entropy = 0.0;
    for (int i = 0; i < pl->N; i++) {
        double total = 0.0;
        for (int k = 0; k < pl->C; k++) {
            size_t m = (size_t)i * (size_t)pl->C + (size_t)k;
            /* u_m / (κ scale_m / λ) without forming that weight (it may underflow) */
            int ql;
            double f = frexp(pl->loss.lambda, &ql);
            double q = ldexp(u[m] * f, ql - pl->kappa_exp - exponent_of_power(pl->scale[m])) +
                       (k == p->labels[i] ? 1.0 : 0.0);
            if (q < -SIMPLEX_TOL)
                return INFINITY;
            total += q;
            if (q > 0.0)
                entropy += q * log(q);
            if (p->f0)
                sum -= u[m] / pl->scale[m] * p->f0[m];
        }
        if (fabs(total - 1.0) > SIMPLEX_TOL)
            return INFINITY;
    }
    return c * entropy + sum;
}
