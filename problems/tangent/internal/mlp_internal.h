/* mlp_internal.h — private: the forward pass with the activations that backward passes need. */
#ifndef ATF_MLP_INTERNAL_H
#define ATF_MLP_INTERNAL_H

#include "atf_mlp.h"

/* h[0] = X (not owned); h[l] (l = 1..L−1) = relu(a_{l−1}) [N × widths[l]]; out = a_{L−1}
 * [N × C]. The ReLU mask of layer l's input is h[l] > 0 (relu'(0) = 0 as in PyTorch). */
typedef struct {
    int N;
    const double *h[ATF_MAX_LAYERS];
    double *owned[ATF_MAX_LAYERS];
    double *out;
} mlp_cache;

atf_error mlp_forward_cache(const atf_mlp *m, int N, const double *X, mlp_cache *c, char *err);
void mlp_cache_free(mlp_cache *c);

/* d_prev [R × widths[l]] = c_l · d [R × widths[l+1]] W[l]ᵀ, then zero where the layer input
 * h[l] (of example row / rows_per_example) is not positive. */
void mlp_backprop_layer(const atf_mlp *m, int l, int R, int rows_per_example, const double *d,
                        const double *h, double *d_prev);

/* Bytes of an architecture's weights and biases (for out-of-memory messages). */
double mlp_weight_bytes(const atf_arch *a);

#endif
