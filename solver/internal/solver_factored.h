/* solver_factored.h — private to solver/: the factored method (factored.c) and the space it
 * works in (factor_space.c, factor_precond.c). docs/solver.md ("factored") states the method;
 * docs/record/solver.md §20 the measurements behind its choices.
 *
 * Each var's core is written C = U Vᵀ, U rows × r and V cols × r (row-major), with the factor
 * penalty ψ(U) + ψ(V), ψ(U) = ½ Σ_j ω̃(λ_j(UᵀU)): for a singular value d of C the best split is
 * U's and V's singular values √d, where ψ gives ½ ω̃(d) twice, and no factorisation gives less
 * whenever t ↦ ω̃(eᵗ) is convex (the singular values of U Vᵀ are log-majorised by the products
 * of theirs): then min over U Vᵀ = C of ψ(U) + ψ(V) = Σ_j ω̃(σ_j(C)) (for `nuclear`, ψ(U) =
 * √γ ‖U‖², the familiar form). The objective Φ(U, V) = Σ_v ψ_v(U_v) + ψ_v(V_v) + g(A' vec(U Vᵀ))
 * is smooth in the factors, and its minima are the penalized problem's at the rank r. The
 * factors of all vars are packed into one vector: U_0, V_0, U_1, V_1, … (work units). */
#ifndef ATF_SOLVER_FACTORED_H
#define ATF_SOLVER_FACTORED_H

#include "solver_penalized.h"

/* What the space keeps of one point: its factors and what its products reuse. */
typedef struct {
    double *x;         /* [nf] the factors */
    double *z, *u;     /* [M] predictions A' vec(U Vᵀ) and the loss gradient there */
    double *T;         /* factored vars: H U (N × r), one var after another */
    double *Y;         /* factored vars: S = Σ_k u_{iC+k} δ_{iC+k} (N × cols); other vars: the
                          core gradient G = A_vᵀ u (rows × cols); one var after another */
    double *g;         /* [nf] ∇Φ */
    double *eig;       /* per var and side: UᵀU's eigenvectors (r × r, rows) and eigenvalues,
                          ω̃' there and its divided differences (r × r) */
    double F, pen, loss;
} atf_fs_point;

/* The space at given ranks. */
typedef struct {
    atf_solver *s;
    atf_pg_loss *pl;
    int nv;
    int *r;            /* [nv] ranks (0 ≤ r ≤ min(rows, cols)) */
    size_t *off;       /* [nv + 1] where var v's U starts in the packed vector; V follows */
    size_t nf;         /* the packed length */
    size_t *offT, *offY, *offE; /* [nv + 1] offsets into T, Y and eig */
    int fused;         /* every var factored: one read of D per Hessian product */
    double *slope;     /* [nv] ω̃'(0+) of each var's penalty (2√γ for nuclear, else 0) */
    int *nuclear;      /* [nv] the var's penalty is `nuclear` (ψ = √γ‖U‖², closed form) */
    atf_fs_point cur, trial;
    double *zw, *dZ, *scratch; /* [M], Σ N·cols, and the largest product's scratch */
    double *pw;        /* the penalty's Hessian products' scratch: 3 r² at the largest rank */
    double *lossi;     /* [N] the examples' losses of the fused pass, summed in order */
    /* single-precision Hessian products (atf_fs_single): the caller's copies of every var's H
     * and D, the current point's factors, T and S, and the products' scratch */
    const float *const *Hs, *const *Ds;
    float *xs, *Ts, *Ys, *dxs, *dTs, *dZs, *oxs, *scs;
    const atf_block **ops; /* [nv] the vars' operators (the fused curvature reads them) */
    double *yk;        /* [M] the curvature product's rows */
    long passes;       /* products with the data (each forward or backward one) */
    double flops;      /* their multiply-adds, for the B-space-equivalent count */
} atf_fs;

/* ---- factor_space.c ---- */
/* The space of the solver's vars at ranks r[0 … nvars) (copied). ATF_E_NOMEM only. */
atf_error atf_fs_init(atf_fs *fs, atf_solver *s, atf_pg_loss *pl, const int *r, char *err);
void atf_fs_free(atf_fs *fs);
/* The work of the passes so far in passes over the cores (a factored var's pass costs
 * N·(rows + cols)·r + M·cols multiply-adds in the factors, N·rows·cols + M·cols in the cores). */
double atf_fs_core_passes(const atf_fs *fs);
/* Whether at the current ranks a pass in the factors costs at least one over the cores (then
 * the factored form saves nothing). */
int atf_fs_dearer(const atf_fs *fs);
/* Φ at the factors x into fs->trial (its x ← x): the predictions, the loss, the penalty, the
 * gradient and what the Hessian products reuse. Two passes (forward and backward). */
void atf_fs_eval(atf_fs *fs, const double *x);
/* trial becomes the current point (and the curvature is set there for Hessian products);
 * 0, or −1 out of memory. */
int atf_fs_accept(atf_fs *fs);
/* out = ∇²Φ dx at the current point: the loss's Gauss–Newton part, the coupling through the
 * loss gradient, and the penalty's. Two passes. */
void atf_fs_hvp(atf_fs *fs, const double *dx, double *out);
/* Hessian products from now on in single precision, on the caller's copies H[v] (N × rows)
 * and D[v] (M × cols) of every var (all factored: else nothing changes); 0, or −1 out of
 * memory. */
int atf_fs_single(atf_fs *fs, const float *const *H, const float *const *D);
/* With single-precision copies: 1/L as atf_pg_first_step computes it (the same start, at
 * most 12 power iterations to 1 %), its products in single precision; w [n], zw [M] work. */
double atf_fs_first_step_single(atf_fs *fs, double *w, double *zw);
/* atf_fs_core_gradient from the single-precision copies (for the checks between steps). */
void atf_fs_core_gradient_single(atf_fs *fs, double *g);
/* The cores C = U Vᵀ of the factors x (stacked, s->n values). */
void atf_fs_cores(const atf_fs *fs, const double *x, double *cores);
/* The core gradient of the loss at the current point (stacked, s->n values): A'ᵀ u. One pass
 * for the factored vars (Hᵀ S), none for the others (kept). */
void atf_fs_core_gradient(atf_fs *fs, double *g);
/* Balanced factors of the cores (stacked): per var the thin SVD C = Σ d_j a_j b_jᵀ and
 * U = [a_j √d_j], V = [b_j √d_j] over the d_j > drop·d_1, at most rank[v] of them (rank[v]
 * ← the count kept). x must hold Σ rank[v] (rows + cols) values. 0, or −1 out of memory or a
 * failed SVD. */
int atf_fs_balanced(const atf_solver *s, const double *cores, double drop, int *rank, double *x);
/* The top singular triplets of −G_v restricted to the complement of span(U_v) and span(V_v)
 * (G_v: var v's core gradient; U, V from the packed x at the space's ranks): their count in
 * *k (at most kmax, those above thresh), left vectors a (rows × kmax), right b (cols × kmax)
 * and values sv (column j of a and b, sv[j]). 0, or −1 out of memory or a failed SVD. */
int atf_fs_violations(const atf_fs *fs, int v, const double *x, const double *G, double thresh,
                      int kmax, int *k, double *a, double *b, double *sv);
/* 1 if var v's penalty has a factor form (t ↦ ω̃(eᵗ) convex and increasing on a wide grid
 * around its scale). */
int atf_fs_penalty_factors(const atf_penalty *pen);

/* ---- factor_precond.c: a Kronecker-factored preconditioner of ∇²Φ, block by block ---- */
typedef struct atf_fs_precond atf_fs_precond;
/* Built at fs's current point (the curvature set): per factored var, U's block of the
 * Gauss–Newton Hessian Σ_i h_i h_iᵀ ⊗ Ṽ_iᵀ K_i Ṽ_i (Ṽ_i = D_i V) taken as (Hᵀ H) ⊗ (Σ_i Ṽ_iᵀ K_i
 * Ṽ_i)/N, and V's as (Σ_i c_i D_iᵀ K_i D_i) ⊗ (Tᵀ T)/Σ c_i (T = H U, c_i = ‖T_i‖²), each plus
 * the penalty's mean curvature, inverted through the two factors' eigendecompositions; other
 * vars by that curvature alone. refresh_outer: rebuild D's weighted factor too (the costly
 * one); else only the small factors. Hᵀ H's eigendecomposition is made once. */
atf_error atf_fs_precond_build(atf_fs *fs, atf_fs_precond **pc, int refresh_outer, char *err);
/* out = P⁻¹ v (packed vectors at the space's ranks when built). */
void atf_fs_precond_apply(const atf_fs *fs, const atf_fs_precond *pc, const double *v,
                          double *out);
void atf_fs_precond_free(atf_fs_precond *pc);
/* For a checkpoint: the part a build may reuse (each var's cols-side factor, kept between full
 * builds) — its length, a copy, and a preconditioner (*pc, made when NULL) given it back;
 * ATF_E_INPUT when the copy does not fit these vars. */
size_t atf_fs_precond_saved_len(const atf_fs *fs, const atf_fs_precond *pc);
void atf_fs_precond_save(const atf_fs *fs, const atf_fs_precond *pc, double *out);
atf_error atf_fs_precond_load(const atf_fs *fs, atf_fs_precond **pc, const double *in,
                              size_t len, char *err);

#endif
