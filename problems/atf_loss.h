/* atf_loss.h — the loss of problem (16): exact interpolation, or a penalized fit (also the loss
 * of the models trained by gradient descent).
 *
 * Minimising Ω(M) + ‖W‖² + L(f0 + ⟨G, M W⟩) over (M, W) equals minimising
 * Σ_ℓ Σ_j ω̃_ℓ(σ_j(B_ℓ)) + L(f0 + A vec B) over B for any loss L (docs/math.md;
 * docs/record/solver.md §14):
 *
 *   interpolate          the constraint A vec B = r (the default; L = χ{A vec B = r})
 *   squared:lambda=λ     L = (1/2λ) ‖A vec B − r‖²
 *   xent:lambda=λ        L = (1/λ) Σ_i −log softmax(z_i)[y_i],  z_i = f0_i + (A vec B)_(iC … iC+C−1)
 *
 * with integer labels y_i ∈ 0 … C−1 (the problem's /labels), f0 = 0 where the problem has none,
 * and C ≥ 2 for xent. λ > 0; λ → 0 recovers interpolation. Pure functions, no printing. */
#ifndef ATF_LOSS_H
#define ATF_LOSS_H

#include <stddef.h>

#include "atf_error.h"
#include "atf_problem.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ATF_LOSS_SPECLEN 64

typedef enum {
    ATF_LOSS_INTERPOLATE = 0, /* A vec B = r exactly */
    ATF_LOSS_SQUARED,         /* (1/2λ) ‖A vec B − r‖² */
    ATF_LOSS_XENT             /* (1/λ) Σ_i softmax cross-entropy of the logits f0 + A vec B */
} atf_loss_kind;

typedef struct {
    atf_loss_kind kind;
    double lambda; /* > 0 for squared and xent; unused (0) for interpolate */
} atf_loss;

/* `interpolate`. */
atf_loss atf_loss_default(void);

/* Parse `interpolate`, `squared:lambda=λ` or `xent:lambda=λ` (λ finite and > 0, required).
 * ATF_E_INPUT with a one-line message `loss "SPEC": reason` otherwise. */
atf_error atf_loss_parse(const char *spec, atf_loss *loss, char *err);

/* Canonical spec (round-trips through atf_loss_parse); returns the length snprintf needs. */
int atf_loss_format(const atf_loss *loss, char *buf, size_t len);

/* "interpolate", "squared" or "xent". */
const char *atf_loss_name(atf_loss_kind kind);

/* Whether the problem can carry this loss: xent needs C ≥ 2 and /labels with every label in
 * 0 … C−1. ATF_E_INPUT naming `what` (e.g. the file), the item and the reason. */
atf_error atf_loss_check(const atf_loss *loss, const atf_problem *prob, const char *what,
                         char *err);

/* L(p) for the predictions p = A vec B [M] (rows m = i·C + k) in the problem's units; grad
 * (may be NULL) receives ∇_p L [M]. Needs r for squared and labels for xent (f0 may be NULL:
 * zero). Stable for any logits (log-sum-exp); returns NaN for interpolate. */
double atf_loss_value(const atf_loss *loss, int N, int C, const double *pred, const double *r,
                      const double *f0, const int *labels, double *grad);

/* −log softmax(z)[y] of one example's logits z [C] (stable log-sum-exp); p (may be NULL)
 * receives softmax(z) [C]. */
double atf_softmax_xent(int C, const double *z, int y, double *p);

/* Mean softmax cross-entropy (1/N) Σ_i −log softmax(logits_i)[labels_i] of logits [N × C]
 * (no λ): the test cross-entropy that prediction reports. */
double atf_loss_mean_xent(int N, int C, const double *logits, const int *labels);

/* Lipschitz constant of ∇_p L: 1/λ for squared, 1/(2λ) for xent (the softmax cross-entropy
 * Hessian diag(p) − p pᵀ has norm ≤ 1/2). 0 for interpolate. */
double atf_loss_lipschitz(const atf_loss *loss);

#ifdef __cplusplus
}
#endif

#endif
