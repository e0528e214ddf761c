/* cg.c — the method cg: the NTK min-norm interpolant of Theorem 1 without the M × M Gram
 * (docs/solver.md, "Methods"): x = A'ᵀλ with A'A'ᵀλ = r' by preconditioned LSQR (the PCG
 * engine, linsys/pcg.c), its stationarity certificate, its checkpoints and its status lines.
 *
 * The answer's relative residual is at most min(eps_rel, 1e-8): below the 1.5e-8 every other
 * method must reach before its answer is called solved (solver.c), so that the CG baseline
 * interpolates as the Gram baseline does. r ∉ range(A) to working precision ends the run as
 * `infeasible`, certified (pcg.c, "The inconsistency certificate"). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linsys.h"
#include "pcg.h"


static atf_status status_of(atf_cg_outcome o)
{
    switch (o) {
    case ATF_CG_CONVERGED: return ATF_STATUS_SOLVED;
    case ATF_CG_INCONSISTENT: return ATF_STATUS_INFEASIBLE;
    case ATF_CG_LIMIT:
    case ATF_CG_STALLED: return ATF_STATUS_MAX_ITERATIONS;
    case ATF_CG_INTERRUPTED: return ATF_STATUS_INTERRUPTED;
    case ATF_CG_BREAKDOWN: break;
    }
    return ATF_STATUS_NUMERICAL_ERROR;
}

/* The stationarity certificate (docs/record/solver.md §5) with the candidate y = A'ᵀλ, A'A'ᵀλ = A'G
 * solved by PCG to ATF_CG_CERT_TOL or until the certificate settles (CERT_SETTLED): y lies in
 * range(A'ᵀ) whatever the accuracy of λ, so the certificate is a valid one (at worst slightly
 * larger than with the exact P G). For the baseline's own point it measures how far the NTK
 * interpolant is from stationary under the blocks' penalties, usually far (0.36 on the
 * Fashion-MNIST study's balanced+balanced), and settles long before the solve would reach
 * 10⁻⁸; a point that is stationary has a certificate that keeps falling, so it runs on. */
/* The stationarity of the answer x with a candidate y (the certificate's measure). */
typedef struct {
    atf_solver *s;
    const double *x;
    double tau;
} cert_point;

static double stationarity_with(void *ctx, const double *y)
{
    const cert_point *cp = ctx;
    return atf_sv_stationarity(cp->s, cp->x, y, cp->tau);
}

static double certificate(atf_sv_cg *c, const double *x, int max_steps)
{
    atf_solver *s = c->s;
    double *g = malloc((c->n ? c->n : 1) * sizeof *g);
    double *y = malloc((c->n ? c->n : 1) * sizeof *y);
    double *yu = malloc((c->n ? c->n : 1) * sizeof *yu);
    double *b = malloc((size_t)c->M * sizeof *b);
    double cert = NAN;
    if (g && y && yu && b && isfinite(atf_sv_gradient(s, x, g, 0.0))) {
        atf_sv_apply(s, g, b);
        cert_point at = {s, x, 1e-12 * atf_sv_norm(x, c->n)};
        atf_pcg_job job = {.b = b, .bn = atf_sv_norm(b, (size_t)c->M), .tol = ATF_CG_CERT_TOL,
                           .max_steps = max_steps, .x = y, .cert_measure = stationarity_with,
                           .cert_ctx = &at, .cert_y = yu, .cert = &cert};
        atf_cg_report rep;
        atf_sv_cg_solve(c, &job, &rep);
        if (rep.outcome != ATF_CG_CONVERGED || !isfinite(cert) || rep.rel_res <= job.tol)
            cert = atf_sv_stationarity(s, x, y, 1e-12 * atf_sv_norm(x, c->n));
    }
    free(g), free(y), free(yu), free(b);
    return cert;
}

/* After the reason auto gave, if any ("auto: ...; cg: ..."). */
static void method_note(const atf_sv_cg *c, const atf_cg_report *rep, atf_result *res)
{
    const atf_cg_pre *pre = &c->pre;
    size_t used = strlen(res->info.method_note);
    int len = (int)used + snprintf(res->info.method_note + used,
                                   sizeof res->info.method_note - used, "%scg: %s preconditioner",
                                   used ? "; " : "", atf_precond_name(pre->kind));
    if (pre->k > 0 && len > 0 && (size_t)len < sizeof res->info.method_note)
        len += snprintf(res->info.method_note + len, sizeof res->info.method_note - (size_t)len,
                        ", rank %d (randomly pivoted Cholesky, seed %llu), residual trace %.2g%%, "
                        "shift %.2g", pre->k,
                        (unsigned long long)(c->opt.seed ? c->opt.seed : ATF_CG_SEED),
                        100.0 * pre->trace_res / pre->trace0, pre->shift);
    else if (pre->kind == ATF_PRECOND_GRAM32 && len > 0 &&
             (size_t)len < sizeof res->info.method_note)
        len += snprintf(res->info.method_note + len, sizeof res->info.method_note - (size_t)len,
                        " (single precision, shift %.2g of the mean diagonal)",
                        pre->shift * pre->M / pre->trace0);
    if (len > 0 && (size_t)len < sizeof res->info.method_note)
        snprintf(res->info.method_note + len, sizeof res->info.method_note - (size_t)len,
                 ", built in %.2f s; %d steps + %d for the certificate", pre->seconds,
                 rep->steps, c->total_steps - rep->steps);
}

/* What a checkpoint of the main solve belongs to: the problem, the tolerance and the settings
 * in every key (atf_sv_checkpoint_key), then the preconditioner (kind, rank, seed), which the
 * resumed solve must build again the same. */
static atf_error lsqr_key(atf_sv_cg *c, double eps, char *err)
{
    atf_solver *s = c->s;
    atf_error e = atf_sv_checkpoint_key(s, ATF_CG_LSQR_STATE, &s->loss, eps, NULL, c->key, err);
    size_t k = strlen(c->key);
    if (!e && snprintf(c->key + k, sizeof c->key - k, "; preconditioner %s rank %d seed %llu",
                       atf_precond_name(c->pre.kind), c->pre.k,
                       (unsigned long long)(c->opt.seed ? c->opt.seed : ATF_CG_SEED)) >=
                  (int)(sizeof c->key - k)) {
        atf_errorf(err, "cg: checkpoint: the solve's description is longer than %d bytes",
                   ATF_CHECKPOINT_KEYLEN - 1);
        e = ATF_E_USAGE;
    }
    return e;
}

/* Checkpoints for the main solve when the caller keeps or resumes them: the key, and a resumed
 * state checked against it and against this solve's shape. Not when the interrupt flag ended
 * the preconditioner's pivoting early: that solve stops at once and must neither refuse nor
 * overwrite a state of the full preconditioner. */
static atf_error checkpoints_begin(atf_sv_cg *c, double eps, char *err)
{
    atf_solver *s = c->s;
    c->checkpointing = c->checkpoint_failed = 0, c->elapsed0 = 0.0;
    c->last_checkpoint = c->start, c->resume_from = NULL;
    if ((!s->hooks.checkpoint && !s->hooks.resume) || atf_sv_interrupted(s))
        return ATF_OK;
    if (s->procs) {
        atf_errorf(err, "cg: checkpoints are kept in one process only");
        return ATF_E_USAGE;
    }
    if (c->opt.krylov == ATF_CG_KRYLOV_CRAIG) {
        atf_errorf(err, "cg: checkpoints are kept by the LSQR solve only (not craig)");
        return ATF_E_USAGE;
    }
    atf_error e = lsqr_key(c, eps, err);
    if (!e && s->hooks.resume)
        e = atf_sv_checkpoint_is_ours("cg", s->hooks.resume, c->key, err);
    int exponent = 0;
    frexp(s->rnorm, &exponent);
    if (!e && s->hooks.resume && !atf_sv_cg_state_ok(c, s->hooks.resume, exponent)) {
        atf_errorf(err, "cg: the checkpoint's state is not an LSQR state of %d rows and %zu "
                        "variables (%lld numbers, or its header or values are damaged)",
                   c->M, c->n, (long long)s->hooks.resume->len);
        e = ATF_E_INPUT;
    }
    c->checkpointing = !e && s->hooks.checkpoint;
    c->resume_from = e ? NULL : s->hooks.resume;
    return e;
}

atf_error atf_sv_cg_run(atf_solver *s, const atf_sv_budget *b, atf_result *res, double *x,
                        char *err)
{
    atf_sv_cg *c = atf_linsys_pcg_engine(s->proj.ls);
    double t0 = c->start = atf_now();
    c->total_steps = 0;
    atf_error e = atf_sv_cg_prepare(c, err);
    if (!e)
        e = checkpoints_begin(c, b->eps, err);
    if (e != ATF_OK)
        return e;
    atf_pcg_job job = {.b = s->work.r, .bn = s->rnorm, .tol = fmin(b->eps, ATF_CG_TOL_MAX),
                   .max_steps = b->max_iter, .log = b->verbose ? b->log_every : 0, .x = x,
                   .lsqr = c->opt.krylov != ATF_CG_KRYLOV_CRAIG,
                   .main_solve = c->checkpointing || c->resume_from, .shown = 1};
    atf_sv_cg_solve(c, &job, &c->last);
    if (c->checkpoint_failed) {
        atf_errorf(err, "cg: the checkpoint at step %d could not be kept", c->last.steps + 1);
        return ATF_E_IO;
    }
    const atf_cg_report *rep = &c->last;
    memcpy(s->x_ls, x, s->n * sizeof *x); /* what a fallback would return */
    s->ls_residual = rep->rel_res;
    res->info.status = status_of(rep->outcome);
    res->info.iterations = rep->steps;
    res->info.primal_residual = rep->rel_res;
    res->info.dual_residual = 0.0; /* x = A'ᵀλ: the min-norm optimality condition holds exactly */
    res->info.stationarity = NAN;
    if (res->info.status == ATF_STATUS_SOLVED || res->info.status == ATF_STATUS_INFEASIBLE)
        res->info.stationarity = certificate(c, x, rep->steps > 50 ? 2 * rep->steps : 100);
    res->info.inner_iterations = c->total_steps;
    res->info.operator_passes = (int)s->passes;
    method_note(c, rep, res);
    s->t.projection = atf_now() - t0;
    if (b->verbose)
        atf_sv_log(s, "atf cg: %s after %d steps, relative residual %.3e, %ld passes, "
                               "%.2f s\n", atf_status_name(res->info.status), rep->steps,
                rep->rel_res, s->passes, s->t.projection);
    return ATF_OK;
}

int atf_sv_cg_status_message(const atf_solver *s, const atf_result *res, char *err)
{
    const atf_cg_report *rep = atf_sv_cg_last(s);
    if (!rep || s->check[0])
        return 0;
    double tol = atf_linsys_pcg_engine(s->proj.ls)->tol;
    switch (res->info.status) {
    case ATF_STATUS_INFEASIBLE:
        atf_errorf(err, "cg: the constraints are inconsistent (r is not in the range of A to "
                        "working precision): after %d steps every x with relative residual "
                        "<= %.1e has norm >= %.3e, %.1e times the returned point's, whose relative "
                        "residual is %.3e (the least-squares point of the preconditioned rows; "
                        "--method gram returns the unweighted one)", rep->steps, tol, rep->bound,
                   rep->xnorm > 0.0 ? rep->bound / rep->xnorm : INFINITY, rep->rel_res);
        return 1;
    case ATF_STATUS_MAX_ITERATIONS:
        if (rep->outcome == ATF_CG_STALLED)
            atf_errorf(err, "cg stalled after %d steps at relative residual %.3e above the "
                            "tolerance %.1e (rounding: A is too ill-conditioned for it); the last "
                            "iterate is returned", rep->steps, rep->rel_res, tol);
        else
            atf_errorf(err, "cg stopped at the step limit %d at relative residual %.3e "
                            "(tolerance %.1e); the last iterate is returned", rep->steps,
                       rep->rel_res, tol);
        return 1;
    case ATF_STATUS_NUMERICAL_ERROR:
        atf_errorf(err, "cg broke down after %d steps (the curvature of A Aᵀ along the search "
                        "direction is not positive and finite) at relative residual %.3e; the "
                        "last iterate is returned", rep->steps, rep->rel_res);
        return 1;
    default: return 0;
    }
}
