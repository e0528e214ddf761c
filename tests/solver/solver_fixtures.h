/* solver_fixtures.h — small problems and helpers shared by the tests of the penalized methods
 * (solver_fixtures.c). */
#ifndef ATF_SOLVER_FIXTURES_H
#define ATF_SOLVER_FIXTURES_H

#include <signal.h>
#include <stdint.h>

#include "atf_test.h"
#include "atf_solver.h"

/* Factored blocks of the given shapes, standard normal data; row m of D scaled by 10^e_m with
 * e_m ∈ {−spread … spread} (the equilibration must then matter), r likewise. */
atf_problem *factored(uint64_t seed, int N, int C, int nb, const int (*shapes)[2],
                      const char *penalty, int spread);
/* Turn block l into a dense (or, with sparse, CSR with every other entry dropped) block. */
void make_dense(atf_problem *p, int l, int sparse);
/* Seeded labels in 0 … C−1 (and a random /f0 with with_f0). */
void add_labels(atf_problem *p, uint64_t seed, int with_f0);
/* The whole A [M × n] (problem units, blocks in order); *n_out = n. Caller frees. */
double *dense_A(const atf_problem *p, int *n_out);
/* The blocks of a result stacked in order [n]. Caller frees. */
double *stack_result(const atf_result *res, int n);
/* ‖a − b‖ / ‖b‖. */
double rel_dist(const double *a, const double *b, size_t n);
/* Default settings with eps_rel = eps, eps_abs = 1e-14, max_iter 20000. */
atf_settings tight(double eps);

/* ---- checkpoints: a resumed solve must be the uninterrupted one, bit for bit ---- */
#define MAX_STATES 400
/* What a checkpoint hook (keep_state) was handed: copies of the states, in order. */
typedef struct {
    int count, fail_at; /* fail_at ≥ 0: the callback refuses its fail_at-th call */
    int stop_at;        /* stop_at ≥ 0: its stop_at-th call raises *stop (as Ctrl-C would) */
    volatile sig_atomic_t *stop;
    atf_checkpoint states[MAX_STATES];
} kept_states;
/* atf_hooks.checkpoint with ctx a kept_states. */
int keep_state(void *ctx, const atf_checkpoint *state);
/* Frees the copies. */
void kept_states_free(kept_states *k);
/* atf_solve; *e its error. */
atf_result *solve_with_hooks(const atf_problem *p, const atf_settings *set, const atf_hooks *hooks,
                         atf_error *e, char *err);
/* Everything a row of a table is made of, compared bit for bit (times apart); n variables. */
int same_result(const atf_result *a, const atf_result *b, int n);

#endif
