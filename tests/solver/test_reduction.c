/* test_reduction.c — how the subspace basis of a factored block's side is decided
 * (docs/record/solver.md §4): the Gram XᵀX first, the column-pivoted QR only when the Gram cannot
 * settle it.
 *
 *  - full column rank: rule FULL_RANK, not reduced, and the QR agrees;
 *  - one null direction of 40 (2.5 % < 5 %, nr ≥ nc): SKIPPED, kept whole; the QR would drop it;
 *    the rule without the skip drops the same direction;
 *  - 8 null directions of 20 (H) and 3 zero columns of 12 (D, dead units): GRAM, the same rank
 *    and subspace as the QR (projectors equal to 1e-12);
 *  - singular values 1e-9·σ_max, which the QR keeps but the Gram cannot tell from 0: the
 *    Gram's candidates fail the verification on X and the QR decides (QR_FALLBACK, the QR's
 *    rank), alone and next to exact null directions;
 *  - a wide factor (nr < nc), X = 0 and rows of 2^±500 (the Gram would leave the range of
 *    doubles) go to the QR (rank ≤ nr; one direction kept; the QR's rank);
 *  - whole solves: for each case the interpolation answer (ADMM `sq` and `nuclear`, tolerance
 *    1e-10) with the reduction as decided equals the answer without reduction and the answer of
 *    the problem reduced by the QR's basis (solved unreduced, expanded by hand): objective to
 *    1e-8, B to 1e-6, constraint residual < 1e-12; the core has the decided size; and a
 *    penalized squared loss (FISTA) on the skipped block equals the QR-reduced one. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "atf_test.h"
#include "solver_internal.h"

/* ---- matrices with a known row space ---------------------------------------------------- */

/* Orthonormal columns: the n × k column-major Q (modified Gram–Schmidt, twice) of a random
 * n × k matrix. */
static double *orthonormal(atf_test_rng *rng, int n, int k)
{
    double *Q = atf_test_new_normal(rng, (size_t)n * (size_t)k);
    for (int pass = 0; pass < 2; pass++)
        for (int j = 0; j < k; j++) {
            double *q = Q + (size_t)j * (size_t)n;
            for (int i = 0; i < j; i++) {
                const double *p = Q + (size_t)i * (size_t)n;
                cblas_daxpy(n, -cblas_ddot(n, p, 1, q, 1), p, 1, q, 1);
            }
            cblas_dscal(n, 1.0 / cblas_dnrm2(n, q, 1), q, 1);
        }
    return Q;
}

/* X = U diag(sigma) Vᵀ (nr × nc, row-major) with random orthonormal U (nr × nc) and V (nc × nc):
 * its singular values are exactly sigma (up to rounding). */
static double *with_singular_values(atf_test_rng *rng, int nr, int nc, const double *sigma)
{
    double *U = orthonormal(rng, nr, nc), *V = orthonormal(rng, nc, nc);
    double *X = calloc((size_t)nr * (size_t)nc, sizeof *X);
    for (int j = 0; j < nc; j++) /* X += σ_j u_j v_jᵀ */
        cblas_dger(CblasRowMajor, nr, nc, sigma[j], U + (size_t)j * (size_t)nr, 1,
                   V + (size_t)j * (size_t)nc, 1, X, nc);
    free(U), free(V);
    return X;
}

/* σ = 1, …, 1 with `tiny` values 1e-9 and `zero` values 0 at the end. */
static double *spectrum(int nc, int tiny, int zero)
{
    double *s = malloc((size_t)nc * sizeof *s);
    for (int j = 0; j < nc; j++)
        s[j] = j >= nc - zero ? 0.0 : j >= nc - zero - tiny ? 1e-9 : 1.0 + 0.1 * j;
    return s;
}

/* ‖P_a − P_b‖_max for the projectors onto the row spaces of two bases (rank × nc, row-major;
 * NULL = the identity). */
static double projector_distance(const double *Qa, int ra, const double *Qb, int rb, int nc)
{
    double *Pa = calloc((size_t)nc * (size_t)nc, sizeof *Pa);
    double *Pb = calloc((size_t)nc * (size_t)nc, sizeof *Pb);
    for (int i = 0; i < nc; i++) {
        if (!Qa)
            Pa[(size_t)i * (size_t)nc + (size_t)i] = 1.0;
        if (!Qb)
            Pb[(size_t)i * (size_t)nc + (size_t)i] = 1.0;
    }
    if (Qa)
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nc, nc, ra, 1.0, Qa, nc, Qa, nc, 0.0,
                    Pa, nc);
    if (Qb)
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nc, nc, rb, 1.0, Qb, nc, Qb, nc, 0.0,
                    Pb, nc);
    double d = 0.0;
    for (size_t i = 0; i < (size_t)nc * (size_t)nc; i++)
        d = fmax(d, fabs(Pa[i] - Pb[i]));
    free(Pa), free(Pb);
    return d;
}

/* ---- the decision on one side ----------------------------------------------------------- */

typedef struct {
    atf_sv_basis_rule rule;
    int rank;
    double *Qt;
} basis;

static basis decide(const double *X, int nr, int nc, atf_sv_basis_how how, const char *what)
{
    basis b = {ATF_SV_BASIS_QR, 0, NULL};
    char err[ATF_ERRLEN] = "";
    atf_error e = atf_sv_row_basis(X, nr, nc, how, &b.rank, &b.Qt, &b.rule, what, err);
    CHECK(e == ATF_OK, "%s: %s", what, err);
    CHECK((b.Qt == NULL) == (b.rank == nc), "%s: basis %p with rank %d of %d", what,
          (void *)b.Qt, b.rank, nc);
    return b;
}

/* The rule `want` with rank `rank`; the QR alone finds qr_rank; when both reduce, the same
 * subspace. */
static void check_side(const double *X, int nr, int nc, atf_sv_basis_how how,
                       atf_sv_basis_rule want, int rank, int qr_rank, const char *what)
{
    basis got = decide(X, nr, nc, how, what);
    basis qr = decide(X, nr, nc, ATF_SV_BASIS_FORCE_QR, what);
    CHECK(got.rule == want, "%s: rule %d, expected %d", what, (int)got.rule, (int)want);
    CHECK(got.rank == rank, "%s: rank %d, expected %d", what, got.rank, rank);
    CHECK(qr.rank == qr_rank, "%s: the QR's rank %d, expected %d", what, qr.rank, qr_rank);
    if (got.rank == qr.rank)
        CHECK(projector_distance(got.Qt, got.rank, qr.Qt, qr.rank, nc) < 1e-12,
              "%s: the subspace differs from the QR's by %.3g", what,
              projector_distance(got.Qt, got.rank, qr.Qt, qr.rank, nc));
    free(got.Qt), free(qr.Qt);
}

static void test_sides(void)
{
    atf_test_rng rng;
    atf_test_rng_seed(&rng, 11);
    double *s = spectrum(12, 0, 0);
    double *X = with_singular_values(&rng, 60, 12, s);
    check_side(X, 60, 12, ATF_SV_BASIS_AUTO, ATF_SV_BASIS_FULL_RANK, 12, 12, "full rank");
    free(X), free(s);

    s = spectrum(40, 0, 1);
    X = with_singular_values(&rng, 60, 40, s);
    check_side(X, 60, 40, ATF_SV_BASIS_AUTO, ATF_SV_BASIS_SKIPPED, 40, 39, "1 of 40 null");
    check_side(X, 60, 40, ATF_SV_BASIS_NO_SKIP, ATF_SV_BASIS_GRAM, 39, 39,
               "1 of 40 null, no skip");
    /* rows of 2^±500 would leave the Gram's range (it squares them): the QR decides */
    for (int i = 0; i < 60 * 40; i++)
        X[i] = ldexp(X[i], 500);
    check_side(X, 60, 40, ATF_SV_BASIS_AUTO, ATF_SV_BASIS_QR, 39, 39, "1 of 40 null, × 2^500");
    for (int i = 0; i < 60 * 40; i++)
        X[i] = ldexp(X[i], -1000);
    check_side(X, 60, 40, ATF_SV_BASIS_AUTO, ATF_SV_BASIS_QR, 39, 39, "1 of 40 null, × 2^-500");
    free(X), free(s);

    s = spectrum(20, 0, 8);
    X = with_singular_values(&rng, 60, 20, s);
    check_side(X, 60, 20, ATF_SV_BASIS_AUTO, ATF_SV_BASIS_GRAM, 12, 12, "8 of 20 null");
    free(X), free(s);

    double *D = atf_test_new_normal(&rng, 120 * 12); /* three dead units: zero columns */
    for (int m = 0; m < 120; m++)
        D[m * 12 + 2] = D[m * 12 + 7] = D[m * 12 + 11] = 0.0;
    check_side(D, 120, 12, ATF_SV_BASIS_AUTO, ATF_SV_BASIS_GRAM, 9, 9, "3 zero columns");
    free(D);

    s = spectrum(20, 4, 0);
    X = with_singular_values(&rng, 60, 20, s);
    check_side(X, 60, 20, ATF_SV_BASIS_AUTO, ATF_SV_BASIS_QR_FALLBACK, 20, 20,
               "4 of 20 at 1e-9");
    free(X), free(s);

    s = spectrum(20, 3, 3);
    X = with_singular_values(&rng, 60, 20, s);
    check_side(X, 60, 20, ATF_SV_BASIS_AUTO, ATF_SV_BASIS_QR_FALLBACK, 17, 17,
               "3 of 20 at 1e-9, 3 null");
    free(X), free(s);

    X = atf_test_new_normal(&rng, 8 * 20);
    check_side(X, 8, 20, ATF_SV_BASIS_AUTO, ATF_SV_BASIS_QR, 8, 8, "wide 8 × 20");
    memset(X, 0, 8 * 20 * sizeof *X);
    check_side(X, 20, 8, ATF_SV_BASIS_AUTO, ATF_SV_BASIS_QR, 1, 1, "zero 20 × 8");
    free(X);
}

/* ---- whole solves ----------------------------------------------------------------------- */

/* One factored block with the given H (N × P, taken) and a random D (M × Q); D's columns
 * listed in dead[] are zero. */
static atf_problem *one_block(atf_test_rng *rng, int N, int C, int P, int Q, double *H,
                              const int *dead, int ndead, const char *penalty)
{
    atf_problem *p = atf_problem_new(N, C, 1);
    free(p->r);
    p->r = atf_test_new_normal(rng, (size_t)p->M);
    atf_block *b = &p->blocks[0];
    snprintf(b->name, sizeof b->name, "W1");
    b->rows = P, b->cols = Q, b->kind = ATF_OP_FACTORED;
    b->H = H;
    b->D = atf_test_new_normal(rng, (size_t)p->M * (size_t)Q);
    for (int m = 0; m < p->M; m++)
        for (int j = 0; j < ndead; j++)
            b->D[(size_t)m * (size_t)Q + (size_t)dead[j]] = 0.0;
    char err[ATF_ERRLEN];
    if (atf_problem_set_penalty(p, penalty, err) != ATF_OK) {
        fprintf(stderr, "penalty %s: %s\n", penalty, err);
        exit(1);
    }
    return p;
}

/* X Qtᵀ (nr × r) for a basis Qt (r × nc), or a copy of X when Qt is NULL. */
static double *project_factor(const double *X, int nr, int nc, const double *Qt, int r)
{
    double *out = malloc((size_t)nr * (size_t)(Qt ? r : nc) * sizeof *out);
    if (!Qt)
        memcpy(out, X, (size_t)nr * (size_t)nc * sizeof *out);
    else
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nr, r, nc, 1.0, X, nc, Qt, nc, 0.0,
                    out, r);
    return out;
}

/* The answer through the QR's bases: the problem with H Q_c and D Q_r, solved unreduced, its
 * core expanded to B = Q_c C Q_rᵀ in place of the result's block; the objective is the core's
 * (same singular values). */
static atf_result *solve_qr_reduced(const atf_problem *p, const atf_settings *set, char *err)
{
    const atf_block *b = &p->blocks[0];
    basis h = decide(b->H, b->N, b->rows, ATF_SV_BASIS_FORCE_QR, "QR of H");
    basis d = decide(b->D, b->M, b->cols, ATF_SV_BASIS_FORCE_QR, "QR of D");
    atf_problem *core = atf_problem_new(p->N, p->C, 1);
    memcpy(core->r, p->r, (size_t)p->M * sizeof *core->r);
    atf_block *cb = &core->blocks[0];
    snprintf(cb->name, sizeof cb->name, "W1");
    cb->kind = ATF_OP_FACTORED;
    cb->rows = h.rank, cb->cols = d.rank;
    cb->H = project_factor(b->H, b->N, b->rows, h.Qt, h.rank);
    cb->D = project_factor(b->D, b->M, b->cols, d.Qt, d.rank);
    cb->penalty = b->penalty;
    snprintf(cb->penalty_spec, sizeof cb->penalty_spec, "%s", b->penalty_spec);
    atf_settings s = *set;
    s.reduce = 0;
    atf_result *cr = NULL, *res = NULL;
    if (atf_solve(core, &s, NULL, &cr, err) == ATF_OK) {
        res = atf_result_alloc(p);
        res->info.status = cr->info.status;
        res->info.objective = cr->info.objective;
        double *T = malloc((size_t)h.rank * (size_t)b->cols * sizeof *T); /* C Q_rᵀ */
        const double *C = cr->blocks[0].B;
        if (d.Qt)
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, h.rank, b->cols, d.rank, 1.0,
                        C, d.rank, d.Qt, b->cols, 0.0, T, b->cols);
        else
            memcpy(T, C, (size_t)h.rank * (size_t)b->cols * sizeof *T);
        if (h.Qt)
            cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, b->rows, b->cols, h.rank, 1.0,
                        h.Qt, b->rows, T, b->cols, 0.0, res->blocks[0].B, b->cols);
        else
            memcpy(res->blocks[0].B, T, (size_t)b->rows * (size_t)b->cols * sizeof *T);
        free(T);
    }
    atf_result_free(cr);
    atf_problem_free(core);
    free(h.Qt), free(d.Qt);
    return res;
}

static double relative_residual(const atf_problem *p, const atf_result *res)
{
    double *Bs[1] = {res->blocks[0].B}, *resid = malloc((size_t)p->M * sizeof *resid);
    atf_problem_residual(p, Bs, resid);
    double rel = cblas_dnrm2(p->M, resid, 1) / cblas_dnrm2(p->M, p->r, 1);
    free(resid);
    return rel;
}

static double block_distance(const atf_result *a, const atf_result *b)
{
    return max_rel_diff((size_t)a->blocks[0].rows * (size_t)a->blocks[0].cols, a->blocks[0].B,
                        b->blocks[0].B);
}

/* The core the solver builds for p has rows × cols. */
static void check_core(const atf_problem *p, const atf_settings *set, int rows, int cols,
                       const char *what)
{
    atf_solver *s = NULL;
    char err[ATF_ERRLEN] = "";
    CHECK(atf_solver_init(p, set, NULL, &s, err) == ATF_OK, "%s: init: %s", what, err);
    if (s)
        CHECK(s->vars[0].rows == rows && s->vars[0].cols == cols,
              "%s: core %d × %d, expected %d × %d", what, s->vars[0].rows, s->vars[0].cols, rows,
              cols);
    atf_solver_free(s);
}

/* Decided reduction = no reduction = the QR's reduction, for one problem and settings. */
static void compare_solves(const atf_problem *p, const atf_settings *set, int rows, int cols,
                           const char *what)
{
    check_core(p, set, rows, cols, what);
    atf_settings off = *set;
    off.reduce = 0;
    atf_result *on = NULL, *plain = NULL, *qr = NULL;
    char err[ATF_ERRLEN] = "";
    CHECK(atf_solve(p, set, NULL, &on, err) == ATF_OK && on && on->info.status == ATF_STATUS_SOLVED,
          "%s, reduced: %s", what, err);
    CHECK(atf_solve(p, &off, NULL, &plain, err) == ATF_OK && plain &&
              plain->info.status == ATF_STATUS_SOLVED,
          "%s, not reduced: %s", what, err);
    qr = solve_qr_reduced(p, set, err);
    CHECK(qr && qr->info.status == ATF_STATUS_SOLVED, "%s, QR-reduced: %s", what, err);
    if (on && plain && qr) {
        const atf_result *other[2] = {plain, qr};
        static const char *names[2] = {"not reduced", "the QR's reduction"};
        for (int k = 0; k < 2; k++) {
            CHECK(rel_diff(on->info.objective, other[k]->info.objective) < 1e-8,
                  "%s: objective %.12g, %s %.12g", what, on->info.objective, names[k],
                  other[k]->info.objective);
            CHECK(block_distance(on, other[k]) < 1e-6, "%s: B differs from %s by %.3g", what,
                  names[k], block_distance(on, other[k]));
            CHECK(relative_residual(p, other[k]) < 1e-12, "%s, %s: residual %.3g", what,
                  names[k], relative_residual(p, other[k]));
        }
        CHECK(on->info.constraint_residual < 1e-12 && relative_residual(p, on) < 1e-12,
              "%s: residual %.3g", what, on->info.constraint_residual);
    }
    atf_result_free(on), atf_result_free(plain), atf_result_free(qr);
}

static void test_solves(void)
{
    static const char *penalties[] = {"sq", "nuclear"};
    for (int k = 0; k < 2; k++) {
        atf_settings set = atf_settings_default();
        set.eps_rel = 1e-10;
        set.eps_abs = 1e-12;
        atf_test_rng rng;
        atf_test_rng_seed(&rng, 21 + (uint64_t)k);
        char what[96];

        double *s = spectrum(40, 0, 1); /* skipped: 1 of 40 */
        atf_problem *p = one_block(&rng, 60, 2, 40, 5, with_singular_values(&rng, 60, 40, s),
                                   NULL, 0, penalties[k]);
        snprintf(what, sizeof what, "%s, H 1 of 40 null (skipped)", penalties[k]);
        compare_solves(p, &set, 40, 5, what);
        atf_problem_free(p), free(s);

        s = spectrum(20, 0, 8); /* Gram route on both sides: H 8 of 20 null, D 3 dead units */
        static const int dead[3] = {2, 7, 11};
        p = one_block(&rng, 60, 1, 20, 12, with_singular_values(&rng, 60, 20, s), dead, 3,
                      penalties[k]);
        snprintf(what, sizeof what, "%s, H 8 of 20 null, D 3 dead (Gram)", penalties[k]);
        compare_solves(p, &set, 12, 9, what);
        atf_problem_free(p), free(s);

        s = spectrum(20, 3, 3); /* fallback: 3 at 1e-9 and 3 null */
        p = one_block(&rng, 60, 1, 20, 6, with_singular_values(&rng, 60, 20, s), NULL, 0,
                      penalties[k]);
        snprintf(what, sizeof what, "%s, H 3 at 1e-9 + 3 null (QR fallback)", penalties[k]);
        compare_solves(p, &set, 17, 6, what);
        atf_problem_free(p), free(s);
    }
}

/* A penalized squared loss (FISTA) on the skipped block: the same objective as through the
 * QR's core, where the start (B = 0) and the iterates differ only by the rotation. */
static void test_penalized_skip(void)
{
    atf_test_rng rng;
    atf_test_rng_seed(&rng, 31);
    double *s = spectrum(40, 0, 1);
    atf_problem *p = one_block(&rng, 60, 2, 40, 5, with_singular_values(&rng, 60, 40, s), NULL,
                               0, "sq");
    atf_settings set = atf_settings_default();
    set.method = ATF_METHOD_FISTA;
    set.loss.kind = ATF_LOSS_SQUARED;
    set.loss.lambda = 0.5;
    set.eps_rel = 1e-10;
    set.max_iter = 20000;
    check_core(p, &set, 40, 5, "fista, 1 of 40 null");
    atf_result *on = NULL;
    char err[ATF_ERRLEN] = "";
    CHECK(atf_solve(p, &set, NULL, &on, err) == ATF_OK && on && on->info.status == ATF_STATUS_SOLVED,
          "fista, skipped: %s", err);
    atf_result *qr = solve_qr_reduced(p, &set, err);
    CHECK(qr && qr->info.status == ATF_STATUS_SOLVED, "fista, QR-reduced: %s", err);
    if (on && qr) {
        CHECK(rel_diff(on->info.objective, qr->info.objective) < 1e-8, "fista: objective %.12g, QR %.12g",
              on->info.objective, qr->info.objective);
        CHECK(block_distance(on, qr) < 1e-6, "fista: B differs from the QR's by %.3g",
              block_distance(on, qr));
    }
    atf_result_free(on), atf_result_free(qr);
    atf_problem_free(p), free(s);
}

int main(void)
{
    test_sides();
    test_solves();
    test_penalized_skip();
    return atf_test_finish("test_reduction");
}
