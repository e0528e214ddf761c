/* equilibrate.c — the solver works on an equilibrated copy of the problem, so units do not matter.
 *
 * Two exact transformations, both by powers of two (multiplying a double by 2^k is exact unless
 * the result leaves the range of doubles, so the scaled data carry no new rounding):
 *  - rows: row m of A and r_m are multiplied by 2^(−E_m), E_m the binary exponent of ‖a_m‖
 *    (ATF_EQ_ROWS, as SCS and OSQP do), or all rows by the one factor of the largest row
 *    (ATF_EQ_COMMON). {A vec B = r} is the same set either way, so the solution is unchanged;
 *    but when r ∉ range(A) the least-squares point of W(A x − r) is not that of A x − r, and
 *    atf reports the latter (and its relative residual, which a common factor leaves exactly
 *    as it is): solver.c therefore decides consistency on the row-equilibrated data and, only
 *    when they are inconsistent, rebuilds with the common factor (docs/record/solver.md §7).
 *    Factored blocks are scaled inside their factors: each H row h_i is first brought to norm
 *    in [1/2, 1) and its factor moved into the rows δ_m (i = m div C) of D — which leaves A_ℓ
 *    unchanged — and then D takes the row factors, so A is never formed and the subspace bases
 *    come from a well-scaled H;
 *  - variables: B = c·B' with c = 2^k near the size of the row-scaled r. The constraints
 *    become A' vec B' = r'/c, and since every family's ω carries its scale γ as a factor,
 *    ω̃_γ(c v) = c²·ω̃_{γ/c²}(v) (substitute in min_z γω(z) + c²v²/z²): the penalty of B' is
 *    the same family with γ/c² (for `nuclear`, 2√(γ/c²)·v, the same identity), and the
 *    objective is c² times the scaled one. k is kept where every γ/c² stays inside
 *    [2^−EQ_GAMMA_EXP, 2^EQ_GAMMA_EXP]. When every block is `nuclear` the penalty is
 *    homogeneous, Σ 2√γ σ(c B') = c Σ 2√γ σ(B'): γ stays, the objective is c times the scaled
 *    one, and k is not limited.
 * Answers are unscaled by B = c·B' (blocks, least-squares point) and objective·c²; relative
 * residuals and certificates are scale-free. docs/record/solver.md §7 has the details and numbers.
 * Memory: an array whose rows all keep their scale (every exponent 0) is not copied — the work
 * problem points at the caller's array, which nothing writes. ATF_EQ_NONE (the penalized
 * losses, whose loss undoes any row scaling) scales only the variables, and H rows only when
 * they are far from unit size, so on ordinary data no operator array is copied. */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solver_internal.h"

/* γ/c² stays within 2^±EQ_GAMMA_EXP: far inside the range of doubles, so that the penalty
 * calculus can still form γ·ω(z) and √γ without overflow. */
#define EQ_GAMMA_EXP 900
#define NO_EXP INT_MIN /* exponent of a zero norm: the part does not count */
#define EQ_H_EXP 64    /* ATF_EQ_NONE: H rows within 2^±64 of unit norm are left as they are */
/* Interpolation: r' = r/c keeps its largest entry at least 2^−EQ_R_EXP (variable_exponent), far
 * from the denormal range even after squaring. */
#define EQ_R_EXP 256
/* which arrays of a work block are the solver's own (the others are the problem's, shared) */
#define EQ_OWN_J 1
#define EQ_OWN_DATA 2
#define EQ_OWN_H 4
#define EQ_OWN_D 8

/* Binary exponent e with x = f·2^e, f ∈ [1/2, 1); NO_EXP for 0. */
static int exponent_of(double x)
{
    if (!(x > 0.0))
        return NO_EXP;
    int e;
    frexp(x, &e);
    return e;
}

static double row_norm(const double *x, int n)
{
    return n > 0 ? cblas_dnrm2(n, x, 1) : 0.0;
}

/* Exponent of a block's part of row m (factored: ‖h_i‖‖δ_m‖ as eh_i + ed_m, eh the exponents
 * of the block's H rows). */
static int part_exponent(const atf_block *b, const int *eh, int m)
{
    switch (b->kind) {
    case ATF_OP_DENSE: {
        int len = b->rows * b->cols;
        return exponent_of(row_norm(b->J + (size_t)m * (size_t)len, len));
    }
    case ATF_OP_SPARSE:
        return exponent_of(row_norm(b->data + b->indptr[m], (int)(b->indptr[m + 1] - b->indptr[m])));
    case ATF_OP_FACTORED: {
        int ed = exponent_of(row_norm(b->D + (size_t)m * (size_t)b->cols, b->cols));
        int i = m / b->C;
        return ed == NO_EXP || eh[i] == NO_EXP ? NO_EXP : eh[i] + ed;
    }
    }
    return NO_EXP;
}

static void scale_values(double *x, size_t n, int e)
{
    for (size_t i = 0; i < n; i++)
        x[i] = ldexp(x[i], e);
}

static double *copy_of(const double *x, size_t n)
{
    double *y = malloc((n ? n : 1) * sizeof *y);
    if (y && n)
        memcpy(y, x, n * sizeof *y);
    return y;
}

static int all_zero(const int *e, int n)
{
    for (int i = 0; i < n; i++)
        if (e[i] != 0)
            return 0;
    return 1;
}

/* The D row exponents of a factored block: row m moves by eh[m div C] − E[m]. */
static void d_exponents(const atf_block *b, const int *eh, const int *E, int *ed)
{
    for (int m = 0; m < b->M; m++) {
        int i = m / b->C;
        ed[m] = (eh[i] == NO_EXP ? 0 : eh[i]) - E[m];
    }
}

/* out = x with row m (entries start(b, m) … start(b, m + 1) − 1) scaled by 2^e[m]. A copy only
 * when some e is not 0: otherwise out is x itself (*owned = 0), so that an identity scaling
 * costs no memory — at full data scale the operator is the largest array there is. */
static double *scaled_rows(const double *x, size_t total, int rows, const int *e,
                           size_t (*start)(const atf_block *, int), const atf_block *b,
                           int *owned)
{
    if (all_zero(e, rows)) {
        *owned = 0;
        return (double *)x; /* shared, never written: see atf_sv_equilibrate_free */
    }
    double *y = copy_of(x, total);
    if (!y)
        return NULL;
    *owned = 1;
    for (int m = 0; m < rows; m++)
        scale_values(y + start(b, m), start(b, m + 1) - start(b, m), e[m]);
    return y;
}

static size_t dense_start(const atf_block *b, int m)
{
    return (size_t)m * (size_t)b->rows * (size_t)b->cols;
}

static size_t sparse_start(const atf_block *b, int m)
{
    return (size_t)b->indptr[m];
}

static size_t h_start(const atf_block *b, int i)
{
    return (size_t)i * (size_t)b->rows;
}

static size_t d_start(const atf_block *b, int m)
{
    return (size_t)m * (size_t)b->cols;
}

/* The scaled block b (row m of A_b by 2^−E_m); eh: exponents of b's H rows; ne: workspace
 * [max(N, M)] for the exponents each array's rows move by. Sets which arrays `out` owns
 * (EQ_OWN_*). */
static int scale_block(const atf_block *b, const int *eh, const int *E, int *ne,
                       atf_block *out, unsigned char *owns)
{
    int M = b->M, own = 0;
    *owns = 0;
    if (b->kind == ATF_OP_DENSE || b->kind == ATF_OP_SPARSE) {
        for (int m = 0; m < M; m++)
            ne[m] = -E[m];
        if (b->kind == ATF_OP_DENSE) {
            out->J = scaled_rows(b->J, dense_start(b, M), M, ne, dense_start, b, &own);
            *owns |= own ? EQ_OWN_J : 0;
            return out->J ? 0 : -1;
        }
        out->data = scaled_rows(b->data, (size_t)b->nnz, M, ne, sparse_start, b, &own);
        *owns |= own ? EQ_OWN_DATA : 0;
        return out->data ? 0 : -1;
    }
    for (int i = 0; i < b->N; i++)
        ne[i] = eh[i] == NO_EXP ? 0 : -eh[i];
    out->H = scaled_rows(b->H, h_start(b, b->N), b->N, ne, h_start, b, &own);
    *owns |= own ? EQ_OWN_H : 0;
    if (!out->H)
        return -1;
    d_exponents(b, eh, E, ne);
    out->D = scaled_rows(b->D, d_start(b, M), M, ne, d_start, b, &own);
    *owns |= own ? EQ_OWN_D : 0;
    return out->D ? 0 : -1;
}

/* Exponents of the H rows of a factored block into eh[N]. ATF_EQ_NONE (the penalized losses)
 * scales H only when some row is far from unit size (beyond 2^±EQ_H_EXP, e.g. data × 10³⁰⁰,
 * where the subspace bases need it): otherwise every eh is NO_EXP, H and D stay the
 * problem's own arrays, and no copy is made. */
static void h_exponents(const atf_solver *s, const atf_block *b, atf_sv_eq_mode mode, int *eh)
{
    int far = 0;
    for (int i = 0; i < b->N; i++) {
        eh[i] = b->kind == ATF_OP_FACTORED
                    ? exponent_of(row_norm(b->H + (size_t)i * (size_t)b->rows, b->rows))
                    : NO_EXP;
        far = far || (eh[i] != NO_EXP && abs(eh[i]) > EQ_H_EXP);
    }
    far = atf_sv_max(s, far) != 0.0; /* over processes, every one decides alike */
    if (mode == ATF_EQ_NONE && !far)
        for (int i = 0; i < b->N; i++)
            eh[i] = NO_EXP;
}

/* Largest binary exponent of the row-scaled r (NO_EXP if r = 0), without forming it (it may
 * overflow when A is tiny and r is not). */
static int scaled_r_exponent(const double *r, const int *E, int M)
{
    int K = NO_EXP;
    for (int m = 0; m < M; m++) {
        int q = exponent_of(fabs(r[m]));
        if (q != NO_EXP && q - E[m] > K)
            K = q - E[m];
    }
    return K;
}

/* The examples of b this process holds, as a block of its own (b itself with one process):
 * over processes only the rows held are looked at, and the row exponents they give are
 * gathered (row_exponents). */
static atf_block held(const atf_solver *s, const atf_block *b)
{
    atf_block view = *b;
    if (s->procs)
        view.N = s->share.count, view.M = s->share.count * b->C;
    return view;
}

/* Row exponents E[M]: each row's own (ATF_EQ_ROWS) or the largest (ATF_EQ_COMMON); a zero row
 * keeps its r_m (then r ∉ range(A) unless r_m = 0), and A = 0 leaves everything as it is.
 * Over processes each process finds those of the rows it holds (eh: its examples' H exponents)
 * and the processes gather them (small integers: exact as doubles). -1: out of memory, on
 * every process alike. */
static int row_exponents(const atf_solver *s, const int *eh, atf_sv_eq_mode mode, int *E)
{
    const atf_problem *prob = s->prob;
    int top = NO_EXP, M = prob->M, at = s->share.first * prob->C, rows = s->share.count * prob->C;
    if (mode == ATF_EQ_NONE) {
        memset(E, 0, (size_t)M * sizeof *E);
        return 0;
    }
    double *all = s->procs ? malloc((size_t)M * sizeof *all) : NULL;
    if (atf_sv_max(s, s->procs && !all ? 1.0 : 0.0) != 0.0) {
        free(all);
        return -1;
    }
    for (int m = 0; m < rows; m++) {
        int e = NO_EXP;
        for (int l = 0; l < prob->nblocks; l++) {
            atf_block view = held(s, &prob->blocks[l]);
            int p = part_exponent(&view, eh + (size_t)l * (size_t)prob->N, m);
            if (p > e)
                e = p;
        }
        E[at + m] = e;
        if (all)
            all[at + m] = e == NO_EXP ? -INFINITY : (double)e;
    }
    if (all) {
        atf_sv_gather(s, all, prob->C);
        for (int m = 0; m < M; m++)
            E[m] = isinf(all[m]) ? NO_EXP : (int)all[m];
        free(all);
    }
    for (int m = 0; m < M; m++) {
        if (E[m] > top)
            top = E[m];
        if (E[m] == NO_EXP)
            E[m] = 0;
    }
    if (mode == ATF_EQ_COMMON)
        for (int m = 0; m < M; m++)
            E[m] = top == NO_EXP ? 0 : top;
    return 0;
}

static void gamma_exponent_range(const atf_omega *w, int *lo, int *hi)
{
    if (w->family == ATF_FAMILY_FIXED)
        return;
    int g;
    frexp(w->scale, &g);
    /* γ·2^(−2k) within 2^±EQ_GAMMA_EXP  ⇔  (g − EQ)/2 ≤ k ≤ (g + EQ)/2 */
    *lo = fmax(*lo, ceil((g - EQ_GAMMA_EXP) / 2.0));
    *hi = fmin(*hi, floor((g + EQ_GAMMA_EXP) / 2.0));
}

/* Binary exponent of the largest finite entry of a warm start (NO_EXP if none): with r = 0 the
 * start is the only size the problem has (its shape is checked later, by map_warm_start). */
static int warm_exponent(const atf_result *warm)
{
    int K = NO_EXP;
    for (int l = 0; warm && l < warm->nblocks; l++) {
        const atf_result_block *b = &warm->blocks[l];
        for (size_t j = 0; b->B && j < (size_t)b->rows * (size_t)b->cols; j++) {
            int q = isfinite(b->B[j]) ? exponent_of(fabs(b->B[j])) : NO_EXP;
            K = q > K ? q : K;
        }
    }
    return K;
}

static int all_nuclear(const atf_problem *prob)
{
    for (int l = 0; l < prob->nblocks; l++)
        if (!atf_penalty_is_nuclear(&prob->blocks[l].penalty))
            return 0;
    return 1;
}

/* The exponent range of k that keeps every γ/c² within 2^±EQ_GAMMA_EXP ([lo, hi]), and the
 * lower end that the `nuclear` blocks alone impose (lo_nuc). */
static void gamma_ranges(const atf_problem *prob, int *lo, int *hi, int *lo_nuc)
{
    int unused = INT_MAX / 4;
    *lo = *lo_nuc = INT_MIN / 4;
    *hi = INT_MAX / 4;
    for (int l = 0; l < prob->nblocks; l++) {
        const atf_penalty *pen = &prob->blocks[l].penalty;
        gamma_exponent_range(&pen->w1, lo, hi);
        gamma_exponent_range(&pen->w2, lo, hi);
        if (atf_penalty_is_nuclear(pen))
            gamma_exponent_range(&pen->w1, lo_nuc, &unused);
    }
}

/* k of the variable scale c = 2^k: the size of the row-scaled r (K), kept where every γ/c² is
 * representable comfortably (0 if the blocks' γ are too far apart for any common k).
 * Interpolation (may_cap) adds one case. When K lies more than EQ_R_EXP below that range, the
 * solution is at most 2^−(EQ_R_EXP + EQ_GAMMA_EXP/2) times √γ in every block: deep in the
 * region where ω̃(v) = v²(1 + O(v²/γ)) is v² to machine precision (every family but `nuclear`,
 * docs/math.md Prop. 3). The clamped k would leave r' = r/c below 2^−EQ_R_EXP — denormal or 0
 * for a denormal r with γ = 1e300, which gave `solved` at B = 0 with residual 1.0, or a false
 * `infeasible` from the precision a denormal r' has lost. So k = K + EQ_R_EXP instead, and
 * *cap = 1: the γ/c² above 2^EQ_GAMMA_EXP are capped there, which leaves ω̃ = v² to machine
 * precision (v/√γ' ≤ 2^−(EQ_R_EXP + EQ_GAMMA_EXP/2)) and the objective c²·Σv'² exact. Not when
 * a `nuclear` block's γ would need the cap (its ω̃ = 2√γ·v is not quadratic) or another γ would
 * fall below 2^−EQ_GAMMA_EXP; the penalized losses never cap (their B is not r's size). */
static int variable_exponent(const atf_problem *prob, int K, int may_cap, int *cap)
{
    *cap = 0;
    if (K == NO_EXP) /* r = 0 */
        return 0;
    if (all_nuclear(prob))
        return K;
    int lo, hi, lo_nuc;
    gamma_ranges(prob, &lo, &hi, &lo_nuc);
    int k = lo > hi ? 0 : K < lo ? lo : K > hi ? hi : K;
    int deep = K + EQ_R_EXP;
    if (may_cap && K - k < -EQ_R_EXP && deep <= hi && deep >= lo_nuc) {
        *cap = 1;
        k = deep;
    }
    return k;
}

static void scale_gamma(atf_omega *w, int k, int cap)
{
    if (w->family == ATF_FAMILY_FIXED)
        return;
    w->scale = ldexp(w->scale, -2 * k);
    if (cap)
        w->scale = fmin(w->scale, ldexp(1.0, EQ_GAMMA_EXP));
}

atf_error atf_sv_equilibrate(atf_solver *s, char *err)
{
    return atf_sv_equilibrate_mode(s, ATF_EQ_ROWS, err);
}

atf_error atf_sv_equilibrate_mode(atf_solver *s, atf_sv_eq_mode mode, char *err)
{
    const atf_problem *prob = s->prob;
    int M = prob->M, L = prob->nblocks, maxN = prob->N;
    atf_problem *w = &s->work;
    *w = *prob; /* sizes and the shared CSR structure; arrays below are the solver's own */
    w->test = NULL;
    w->y = w->f0 = NULL;
    w->labels = NULL;
    w->r = NULL;
    w->blocks = calloc((size_t)L, sizeof *w->blocks);
    s->work_owns = calloc((size_t)L, 1);
    int *eh = malloc((size_t)L * (size_t)maxN * sizeof *eh);
    int *E = malloc((size_t)M * sizeof *E);
    int *ne = malloc((size_t)(M > maxN ? M : maxN) * sizeof *ne);
    if (!w->blocks || !s->work_owns || !eh || !E || !ne)
        goto nomem;
    for (int l = 0; l < L; l++) {
        atf_block view = held(s, &prob->blocks[l]);
        h_exponents(s, &view, mode, eh + (size_t)l * (size_t)maxN);
    }
    if (row_exponents(s, eh, mode, E) != 0)
        goto nomem;
    s->eq_mode = mode;
    int cap = 0, K = scaled_r_exponent(prob->r, E, M);
    if (K == NO_EXP) /* r = 0: the variable unit from the warm start, if any */
        K = warm_exponent(s->hooks.warm);
    int k = variable_exponent(prob, K, mode != ATF_EQ_NONE, &cap);
    s->var_exp = k;
    int homogeneous = all_nuclear(prob);
    s->obj_exp = homogeneous ? k : 2 * k;
    if (!(w->r = malloc((size_t)M * sizeof *w->r)))
        goto nomem;
    for (int m = 0; m < M; m++)
        w->r[m] = ldexp(prob->r[m], -E[m] - k);
    if (!atf_sv_all_finite(w->r, (size_t)M)) /* only when k had to stop at the γ range */
        goto beyond;
    for (int l = 0; l < L; l++) {
        const atf_block *b = &prob->blocks[l];
        atf_block *o = &w->blocks[l];
        *o = *b;
        o->J = o->data = o->H = o->D = NULL;
        atf_block view = held(s, b);
        if (scale_block(&view, eh + (size_t)l * (size_t)maxN, E + (size_t)s->share.first * prob->C,
                        ne, o, &s->work_owns[l]) != 0)
            goto nomem;
        if (!homogeneous) {
            scale_gamma(&o->penalty.w1, k, cap);
            scale_gamma(&o->penalty.w2, k, cap);
        }
    }
    free(eh), free(E), free(ne);
    return ATF_OK;
nomem:
    free(eh), free(E), free(ne);
    atf_errorf(err, "solver: out of memory for the equilibrated copy of the data");
    return ATF_E_NOMEM;
beyond:
    free(eh), free(E), free(ne);
    atf_errorf(err, "solver: r is 2^%d times the size of A's rows, but the penalty scales γ allow "
                    "a variable unit of at most 2^%d: the solution lies beyond the range of "
                    "doubles relative to √γ in any units (r overflows in them)", K, k);
    return ATF_E_NUMERICAL;
}

void atf_sv_equilibrate_free(atf_solver *s)
{
    atf_problem *w = &s->work;
    if (w->blocks && s->work_owns)
        for (int l = 0; l < w->nblocks; l++) {
            atf_block *b = &w->blocks[l];
            unsigned char own = s->work_owns[l];
            if (own & EQ_OWN_J)
                free(b->J);
            if (own & EQ_OWN_DATA)
                free(b->data);
            if (own & EQ_OWN_H)
                free(b->H);
            if (own & EQ_OWN_D)
                free(b->D);
        }
    free(w->blocks), free(w->r), free(s->work_owns);
    w->blocks = NULL;
    w->r = NULL;
    s->work_owns = NULL;
}

void atf_sv_unscale(const atf_solver *s, double *x, size_t n)
{
    scale_values(x, n, s->var_exp);
}

void atf_sv_to_scaled(const atf_solver *s, double *x, size_t n)
{
    scale_values(x, n, -s->var_exp);
}

double atf_sv_unscale_objective(const atf_solver *s, double objective)
{
    return ldexp(objective, s->obj_exp);
}

/* Ω = 2^obj_exp Ω'(B/2^var_exp): distances in B scale by 2^var_exp, gradients (and the dual
 * residual ρ‖ΔZ‖) by 2^(obj_exp − var_exp), ρ (a gradient per distance) by
 * 2^(obj_exp − 2 var_exp). */
double atf_sv_unscale_primal(const atf_solver *s, double v)
{
    return ldexp(v, s->var_exp);
}

double atf_sv_unscale_dual(const atf_solver *s, double v)
{
    return ldexp(v, s->obj_exp - s->var_exp);
}

double atf_sv_unscale_rho(const atf_solver *s, double rho)
{
    return ldexp(rho, s->obj_exp - 2 * s->var_exp);
}
