/* mlp_internal.h — private: the forward pass with the activations that backward passes need. */
#ifndef ATF_MLP_INTERNAL_H
#define ATF_MLP_INTERNAL_H

#include "atf_mlp.h"

/* h[0] = X (not owned); h[l] (l = 1..L−1) = σ_{l−1}(a_{l−1}) [N × widths[l]] and dh[l] =
 * σ′_{l−1}(a_{l−1}), the derivative at layer l's input (relu'(0) = 0 as in PyTorch); out = a_{L−1}
 * [N × C]. */
typedef struct {
    int N;
    const double *h[ATF_MAX_LAYERS];
    double *dh[ATF_MAX_LAYERS];
    double *owned[ATF_MAX_LAYERS];
    double *out;
} mlp_cache;

atf_error mlp_forward_cache(const atf_mlp *m, int N, const double *X, mlp_cache *c, char *err);
void mlp_cache_free(mlp_cache *c);

/* d_prev [R × widths[l]] = (c_l · d [R × widths[l+1]] W[l]ᵀ) ∘ σ′, with σ′ = dh[l] of the
 * cache (the row of example r / rows_per_example). */
void mlp_backprop_layer(const atf_mlp *m, int l, int R, int rows_per_example, const double *d,
                        const double *dh, double *d_prev);

/* Bytes of an architecture's weights and biases (for out-of-memory messages). */
double mlp_weight_bytes(const atf_arch *a);

#endif
