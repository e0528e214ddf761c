/* jacobian.c — factored per-layer Jacobians of an MLP (their Gram: atf_factored_gram in
 * problems/operators.c).
 *
 * ∂f^{(k)}(x_i)/∂W_ℓ[a, b] = c_ℓ h_{ℓ−1,a}(x_i) · δ_{ℓ,b}^{(k)}(x_i), so the Jacobian of block ℓ
 * is the rank-one matrix h δᵀ per row m = i·C + k. The cotangents δ of all C outputs are pushed
 * back together as an M × Q matrix (row m starts as e_k), one GEMM per layer, and multiplied by
 * σ′(a) of the layer's input: δ_{ℓ−1} = (c_ℓ δ_ℓ W_ℓᵀ) ∘ σ′(a_{ℓ−1}), for any elementwise σ.
 * Blocks: W1, then b1 if layer 1 has a bias, W2, ...
 *
 * The examples are taken in chunks of atf_shard_chunk(N) (a cut that depends on N only), one
 * forward and backward pass per chunk: a BLAS product's rows depend on how many rows it has
 * (OpenBLAS picks other kernels for other sizes), so only a fixed cut gives every example the
 * same bits whether all of them are formed here or a process forms its run of whole chunks
 * (`mpirun -np K atf features`, atf_mlp_jacobian_chunks). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf_features.h"
#include "mlp_internal.h"

void atf_jacobian_free(atf_jacobian *J)
{
    for (int b = 0; J->blocks && b < J->nblocks; b++) {
        free(J->blocks[b].H);
        free(J->blocks[b].D);
    }
    free(J->blocks);
    free(J->f);
    memset(J, 0, sizeof *J);
}

static atf_error alloc_blocks(const atf_mlp *m, atf_jacobian *J)
{
    int L = m->arch.L, nb = L + atf_arch_has_bias(&m->arch);
    J->blocks = calloc((size_t)nb, sizeof *J->blocks);
    if (!J->blocks)
        return ATF_E_NOMEM;
    J->nblocks = nb;
    int b = 0;
    for (int l = 0; l < L; l++) {
        for (int isbias = 0; isbias <= (m->arch.bias[l] ? 1 : 0); isbias++, b++) {
            atf_jac_block *jb = &J->blocks[b];
            snprintf(jb->name, sizeof jb->name, "%c%d", isbias ? 'b' : 'W', l + 1);
            jb->layer = l;
            jb->rows = isbias ? 1 : m->arch.widths[l];
            jb->cols = m->arch.widths[l + 1];
            jb->H = malloc((size_t)J->N * jb->rows * sizeof(double));
            jb->D = malloc((size_t)J->M * jb->cols * sizeof(double));
            if (!jb->H || !jb->D)
                return ATF_E_NOMEM;
        }
    }
    return ATF_OK;
}

/* Fill the blocks of layer l: H = c_l h_l (or ones), D = δ_l. */
static void fill_layer(const atf_mlp *m, int l, const mlp_cache *c, const double *delta,
                       atf_jacobian *J)
{
    for (int b = 0; b < J->nblocks; b++) {
        atf_jac_block *jb = &J->blocks[b];
        if (jb->layer != l)
            continue;
        size_t nh = (size_t)J->N * jb->rows;
        if (jb->name[0] == 'b') {
            for (size_t i = 0; i < nh; i++)
                jb->H[i] = 1.0;
        } else {
            double s = atf_mlp_scale(m, l);
            for (size_t i = 0; i < nh; i++)
                jb->H[i] = s * c->h[l][i];
        }
        memcpy(jb->D, delta, (size_t)J->M * jb->cols * sizeof(double));
    }
}

/* The Jacobian of N examples in one piece (one GEMM per layer over all of them). */
static atf_error jacobian_piece(const atf_mlp *m, int N, const double *X, atf_jacobian *J,
                               char *err)
{
    memset(J, 0, sizeof *J);
    int L = m->arch.L, C = m->arch.widths[L];
    J->N = N;
    J->C = C;
    J->M = N * C;
    mlp_cache c;
    atf_error e = mlp_forward_cache(m, N, X, &c, err);
    if (e)
        return e;
    J->f = c.out;
    c.out = NULL;
    int maxw = 0;
    for (int l = 0; l <= L; l++)
        maxw = m->arch.widths[l] > maxw ? m->arch.widths[l] : maxw;
    double *delta = malloc((size_t)J->M * maxw * sizeof *delta);
    double *prev = malloc((size_t)J->M * maxw * sizeof *prev);
    if (!delta || !prev || alloc_blocks(m, J)) {
        free(delta);
        free(prev);
        mlp_cache_free(&c);
        atf_jacobian_free(J);
        atf_errorf(err, "Jacobian: out of memory for %d examples", N);
        return ATF_E_NOMEM;
    }
    memset(delta, 0, (size_t)J->M * C * sizeof *delta);
    for (int m_row = 0; m_row < J->M; m_row++)
        delta[(size_t)m_row * C + m_row % C] = 1.0;
    for (int l = L - 1; l >= 0; l--) {
        fill_layer(m, l, &c, delta, J);
        if (l > 0) {
            mlp_backprop_layer(m, l, J->M, C, delta, c.dh[l], prev);
            double *t = delta;
            delta = prev;
            prev = t;
        }
    }
    free(delta);
    free(prev);
    mlp_cache_free(&c);
    return ATF_OK;
}

/* piece's examples as examples i0 … of J (same blocks, J allocated for all). */
static void copy_piece(atf_jacobian *J, const atf_jacobian *piece, int i0)
{
    size_t C = (size_t)J->C, at = (size_t)i0 * C;
    memcpy(J->f + at, piece->f, (size_t)piece->M * sizeof *J->f);
    for (int b = 0; b < J->nblocks; b++) {
        const atf_jac_block *src = &piece->blocks[b];
        atf_jac_block *dst = &J->blocks[b];
        memcpy(dst->H + (size_t)i0 * src->rows, src->H,
               (size_t)piece->N * src->rows * sizeof(double));
        memcpy(dst->D + at * src->cols, src->D, (size_t)piece->M * src->cols * sizeof(double));
    }
}

atf_error atf_mlp_jacobian_chunks(const atf_mlp *m, int N, const double *X, int chunk,
                                  atf_jacobian *J, char *err)
{
    memset(J, 0, sizeof *J);
    if (N < 1 || chunk < 1) {
        atf_errorf(err, "Jacobian: %d examples in chunks of %d: need an example and chunks of at "
                   "least one", N, chunk);
        return ATF_E_USAGE;
    }
    if (N <= chunk)
        return jacobian_piece(m, N, X, J, err);
    int D = m->arch.widths[0], C = m->arch.widths[m->arch.L];
    J->N = N;
    J->C = C;
    J->M = N * C;
    J->f = malloc((size_t)J->M * sizeof *J->f);
    if (!J->f || alloc_blocks(m, J)) {
        atf_jacobian_free(J);
        atf_errorf(err, "Jacobian: out of memory for %d examples", N);
        return ATF_E_NOMEM;
    }
    for (int i0 = 0; i0 < N; i0 += chunk) {
        atf_jacobian piece;
        atf_error e = jacobian_piece(m, N - i0 < chunk ? N - i0 : chunk, X + (size_t)i0 * D,
                                     &piece, err);
        if (e) {
            atf_jacobian_free(J);
            return e;
        }
        copy_piece(J, &piece, i0);
        atf_jacobian_free(&piece);
    }
    return ATF_OK;
}

atf_error atf_mlp_jacobian(const atf_mlp *m, int N, const double *X, atf_jacobian *J, char *err)
{
    if (N < 1) /* as before chunks: the forward pass names the problem */
        return jacobian_piece(m, N, X, J, err);
    return atf_mlp_jacobian_chunks(m, N, X, atf_shard_chunk(N), J, err);
}
