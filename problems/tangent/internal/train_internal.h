/* train_internal.h — private: the passes the three trained models share (train_model.c) and
 * what the training loop (train_loop.c) needs from them. */
#ifndef ATF_TRAIN_INTERNAL_H
#define ATF_TRAIN_INTERNAL_H

#include "atf_train.h"

/* Gradients, shaped like the model: W/b for the network and linearized models (w.r.t. θ or δ),
 * and additionally M1/M2 for the factorised one (W, b are then its W and b). */
typedef struct {
    double *W[ATF_MAX_LAYERS], *b[ATF_MAX_LAYERS];
    double *M1[ATF_MAX_LAYERS], *M2[ATF_MAX_LAYERS];
} model_grad;

/* A trained array and its gradient. */
typedef struct {
    double *p, *g;
    size_t n;
} param_block;

#define MODEL_MAX_BLOCKS (4 * ATF_MAX_LAYERS)

/* The trained arrays of m and their gradients in g (allocated by model_grad_alloc); returns
 * the count. With frozen_m1/frozen_m2 the factorised model's M1 / M2 are left out (a penalty
 * whose ω is `fixed` keeps them at I, as in problem (16)). */
int model_blocks(atf_model *m, const model_grad *g, int frozen_m1, int frozen_m2,
                 param_block *out);

int model_grad_alloc(const atf_model *m, model_grad *g); /* 0 or −1 (out of memory) */
void model_grad_free(model_grad *g);

/* Scratch space of the passes for batches of up to nmax rows. */
typedef struct model_work model_work;
model_work *model_work_new(const atf_model *m, int nmax);
void model_work_free(model_work *w);
/* Tests: take every factorised layer formed (0), batch-side (1) or the cheaper way (−1, the
 * default). Both ways are exact; they differ in rounding and cost. */
void model_work_force_side(model_work *w, int side);

/* The loss of kind `loss` on rows X [n × D] with targets Y [n × C] or labels [n], and (grad
 * not NULL) its gradient with respect to every trained array. */
atf_error model_loss_grad(const atf_model *m, model_work *w, int n, const double *X,
                          const double *Y, const int *labels, atf_loss_kind loss, double *value,
                          model_grad *grad, char *err);
/* The same for n rows that are part of a minibatch of n_mean: the loss and the gradient are
 * those of the rows' terms of the batch's mean (they add up over the batch's parts). */
atf_error model_loss_grad_part(const atf_model *m, model_work *w, int n, int n_mean,
                               const double *X, const double *Y, const int *labels,
                               atf_loss_kind loss, double *value, model_grad *grad, char *err);

/* F rows first … first + count − 1 (placed at F + first·C) = the model's outputs on those rows
 * of X [N × D], formed in the chunks of atf_shard_chunk(N) — atf_model_forward is the whole. */
atf_error model_forward_rows(const atf_model *m, int N, int first, int count, const double *X,
                             double *F, char *err);

/* The linear models' θ0 pass over rows first … first + count − 1 of a fixed split, kept for
 * repeated evaluation (NULL for the network model, no rows, a cache above 512 MiB or no memory:
 * evaluate without one). */
typedef struct model_eval_cache model_eval_cache;
model_eval_cache *model_eval_cache_new(const atf_model *m, const atf_dataset *ds, int first,
                                       int count);
void model_eval_cache_free(model_eval_cache *c);
/* Those rows of F [N × C] = the model's outputs on the cached rows (the same numbers as
 * model_forward_rows). */
void model_eval_cached(const atf_model *m, model_eval_cache *c, double *F);

/* Value of the explicit penalty μ Σ_ℓ (Σ ω1(s(M1)) + Σ ω2(s(M2)) + ‖W‖²) of the factorised
 * model; with grad, its gradient is added to grad. */
atf_error model_penalty(const atf_model *m, const atf_penalty *pen, double mu, int frozen_m1,
                        int frozen_m2, double *value, model_grad *grad, char *err);

/* The loss of predictions F [n × C] (squared: mean ‖f − y‖²/C, xent: mean cross-entropy) and,
 * with G, its gradient. */
double model_loss_of(atf_loss_kind loss, int n, int C, const double *F, const double *Y,
                     const int *labels, double *G);
/* The part of n rows in the mean over n_mean. */
double model_loss_of_part(atf_loss_kind loss, int n, int n_mean, int C, const double *F,
                          const double *Y, const int *labels, double *G);

/* A deep copy of the trained state of src into dst (same kind and shapes). */
void model_copy_state(atf_model *dst, const atf_model *src);
atf_model *model_clone(const atf_model *m);

#endif
