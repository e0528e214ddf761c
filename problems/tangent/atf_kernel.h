/* atf_kernel.h — the last stage of the tangent pipeline: kernels and their alignments
 * (docs/tangent.md §5, docs/math.md §6).
 *
 * The NTK, the exact adapted kernel of eq. 7, the paper's eq. 17, Theorem 1's kernel, the label
 * kernel, path-averaged kernels of a trained network, their alignments, and the kernel report of
 * `atf kernel`. All kernels are M × M over the rows m = i·C + k of a problem. `K` outputs are
 * accumulated (K += ...) so per-block kernels can be summed; zero them first. */
#ifndef ATF_KERNEL_H
#define ATF_KERNEL_H

#include "atf_error.h"
#include "atf_features.h"
#include "atf_mlp.h"
#include "atf_problem.h"
#include "atf_result.h"

#ifdef __cplusplus
extern "C" {
#endif

/* K += A_b A_bᵀ (the block's NTK; factored blocks as a Hadamard product). */
atf_error atf_kernel_ntk_block(const atf_block *b, double *K, char *err);

/* K += A_b M̂² A_bᵀ (eq. 7), by the result block's factor layout (see atf_result.h):
 *  - SPECTRAL: M̂ acts as W ↦ M̂1 W M̂2 with M̂1² = I + U diag(s1² − 1) Uᵀ and
 *    M̂2² = I + V diag(s2² − 1) Vᵀ (U, V, s1, s2 must be filled: see atf_result_factors).
 *    Factored blocks: (H Hᵀ + (HU) diag(s1²−1) (HU)ᵀ) ∘ (D Dᵀ + ...); dense and sparse blocks
 *    through their rows. Never forms a P×P or Q×Q matrix.
 *  - ENTRYWISE (diagonal structure): entry j is its own 1×1 block, M̂ scales its feature g_j by
 *    s1_j s2_j: K += Σ_j (s1_j s2_j)² g_j g_jᵀ. Factored blocks: Σ_q (H diag(S_:q) Hᵀ) ∘ δ_q δ_qᵀ
 *    or Σ_a h_a h_aᵀ ∘ (D diag(S_a:) Dᵀ), whichever is cheaper (no M × P·Q Jacobian).
 *  - VECTOR: refused (ATF_E_USAGE); the blocks share one transformation, see
 *    atf_kernel_adapted. */
atf_error atf_kernel_adapted_block(const atf_block *b, const atf_result_block *rb, double *K,
                                   char *err);

/* K += Σ_j (s1_j² s2_j² − 1) g_j g_jᵀ with g_j = A_b vec(u_j v_jᵀ): the paper's eq. 17 without
 * K0 (add the block's NTK for the printed formula). Equals eq. 7 for vector blocks only, and
 * for ENTRYWISE blocks (1×1 blocks, u = v = 1), which it accepts too; VECTOR as above. */
atf_error atf_kernel_paper17_block(const atf_block *b, const atf_result_block *rb, double *K,
                                   char *err);

/* The whole result (any layout; the only entry for VECTOR results, structure full):
 * K += eq. 7 and K += eq. 17's part without K0. For VECTOR factors β = (B_1..B_L) is one
 * P_total × 1 block, M̂1 = I + (s1 − 1) ββᵀ/‖β‖², M̂2 = s2 (1 × 1), so eq. 7 is
 * s2² (K0 + (s1² − 1) ‖β‖⁻² (Aβ)(Aβ)ᵀ) — Theorem 1's kernel when s2 = 1 — and eq. 17 adds
 * (s1² s2² − 1) ‖β‖⁻² (Aβ)(Aβ)ᵀ. Other layouts: the sum of the block functions. */
atf_error atf_kernel_adapted(const atf_problem *p, const atf_result *res, double *K, char *err);
atf_error atf_kernel_paper17(const atf_problem *p, const atf_result *res, double *K, char *err);

/* NULL if rb carries every factor its layout needs for the kernels, else what is missing
 * ("singular vectors U, V missing", ...). */
const char *atf_kernel_factors_missing(const atf_result_block *rb);

/* Theorem 1 (eq. 9): K = K0 + (s² − 1) ‖β‖⁻² (Aβ)(Aβ)ᵀ with β all blocks of the result as one
 * vector and s = argmin_{z≥1} ω(z) + ‖β‖²/z² for the penalty of the first block. Writes K. */
atf_error atf_kernel_theorem1(const atf_problem *p, const atf_result *res, const double *K0,
                              double *K, double *s_out, char *err);

/* K = v vᵀ (M × M), e.g. the label kernel with v = f − f0. */
void atf_kernel_outer(int M, const double *v, double *K);

/* ⟨K1, K2⟩_F / (‖K1‖_F ‖K2‖_F), and the centered alignment of Cortes et al. (2012): the same
 * after centering both with I − 11ᵀ/n. NaN when a norm is zero. */
double atf_kernel_cosine(int n, const double *K1, const double *K2);
double atf_kernel_cka(int n, const double *K1, const double *K2);

/* NTK of a network on X: K [M × M] = Σ_blocks, plus each block's part in K_blocks
 * [nblocks × M × M] when non-NULL (nblocks as in atf_mlp_jacobian). */
atf_error atf_kernel_mlp(const atf_mlp *m, int N, const double *X, double *K, double *K_blocks,
                         char *err);

/* Path-averaged tangent kernel (paper eq. 2 / 20): J̄ = (1/T) Σ_t ∇f_{θ_t} with
 * θ_t = θ0 + t_j (θ − θ0), t_j = j/(T−1) (T = 1: t = 0); K̄ = Σ_ℓ J̄_ℓ J̄_ℓᵀ.
 *  - MATERIALIZE: build J̄_ℓ (M × P·Q) in column panels and accumulate SYRKs:
 *      cost T·M·P·Q + M²·P·Q flops, memory M · panel.
 *  - HADAMARD: K̄_ℓ = T⁻² Σ_{t,t'} (H_t H_t'ᵀ) ∘ (D_t D_t'ᵀ) over pairs t ≤ t':
 *      cost T(T+1)/2 · (N²·P + M²·Q + M²) flops, memory T·(N·P + M·Q).
 *  - AUTO picks the smaller cost per block. */
typedef enum { ATF_PATH_AUTO = 0, ATF_PATH_MATERIALIZE, ATF_PATH_HADAMARD } atf_path_method;

atf_error atf_path_method_parse(const char *text, atf_path_method *out, char *err);

atf_error atf_kernel_path_average(const atf_mlp *m0, const atf_mlp *m1, int N, const double *X,
                                  int T, atf_path_method method, double *K, double *K_blocks,
                                  char *err);

/* The flop estimates used by AUTO for one block (exposed for tests and docs). */
double atf_path_cost(atf_path_method method, int N, int C, int P, int Q, int T);

/* ---------------------------------------------------------------------------------------------
 * Kernel reports (`atf kernel`): every kernel available from the inputs and their alignments.
 * Kernels, in this order when present: K0 (NTK at θ0), adapted (eq. 7), paper17 (eq. 17 as
 * printed: K0 + Σ_j (s1²s2² − 1) g_j g_jᵀ), theorem1, label ((f − f0)(f − f0)ᵀ with f − f0 = r),
 * final (NTK of the trained network), path_average.
 * ------------------------------------------------------------------------------------------- */

#define ATF_MAX_KERNELS 8

typedef struct {
    const atf_problem *problem; /* required */
    atf_result *result;         /* optional; U, V are filled by atf_result_factors if absent */
    const atf_mlp *mlp0;        /* optional: the network the problem was built from */
    const atf_mlp *mlp;         /* optional: the trained network (final and path kernels) */
    int path_points;            /* T for the path average (default 50 when 0) */
    atf_path_method path_method;
    /* names for messages, usually the file names (NULL: "problem", "result", "mlp0", "mlp") */
    const char *problem_name, *result_name, *mlp0_name, *mlp_name;
} atf_kernel_inputs;

typedef struct {
    int M, nkernels, nblocks;
    char names[ATF_MAX_KERNELS][16];
    double *K[ATF_MAX_KERNELS];  /* [M × M] */
    char (*blocks)[ATF_NAMELEN]; /* [nblocks] */
    double *cosine, *cka;        /* [nkernels × nkernels] */
    double *layer_cosine;        /* [nblocks × nkernels]: block ℓ's part of kernel j against the
                                    label kernel (NaN for kernels without per-block parts) */
    double *layer_cka;
    double theorem1_s;           /* s of Theorem 1 (NaN without a result) */
    double f0_check;             /* max |f_θ0(X) − f0| when mlp0 is given, else NaN */
} atf_kernel_report;

/* The inputs X of the networks are recovered from the problem's block W1 (H = c_1 X); with
 * mlp0 the function checks that f_θ0(X) reproduces the problem's /f0. */
atf_error atf_kernel_report_compute(const atf_kernel_inputs *in, atf_kernel_report *out,
                                    char *err);
/* HDF5: one dataset per kernel (/K0, /adapted, ...), /alignment/cosine, /alignment/cka and
 * /alignment/layer_cosine_label, /alignment/layer_cka_label with attributes `kernels` and
 * `blocks` (comma-separated names); root attribute format = "atf-kernels". Atomic. */
atf_error atf_kernel_report_write(const char *path, const atf_kernel_report *r, char *err);
void atf_kernel_report_free(atf_kernel_report *r);

#ifdef __cplusplus
}
#endif

#endif
