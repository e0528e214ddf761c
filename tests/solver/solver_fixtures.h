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
/* A nonconvex penalty's solve with the iteration table on (set->verbose, every row): the
 * objective column never rises (newton's table, and the factored method's with the newton rows
 * of a hand-over), the status matches the pg residual against eps_rel, the certificate is
 * finite and there is no duality gap. what names the case in failures. */
void check_nonconvex_run(const atf_problem *p, atf_settings set, const char *what);
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
/* One case of a resumable method (newton, alm, factored: their states keep the elapsed time at
 * entry 19): the solve with checkpoints at every step equals the one without; resumed from each
 * of its states it ends the same, and so does one stopped at a few of them; another solve's
 * state, the same solve's on other numbers (said apart), a damaged one and a checkpoint the
 * caller cannot keep are refused. The problem: factored(91, N, 2, 2, shapes, pen, 0) with
 * labels; rank the Newton preconditioner's; at least min_states states; warm_lambda > 0: every
 * solve from the answer at that λ; note: a text the plain solve's note must hold (NULL: newton's
 * preconditioner did not grow). */
void checkpoint_case_on(atf_method method, const char *pen, atf_loss loss, int rank,
                        int min_states, double warm_lambda, int N, const int (*shapes)[2],
                        const char *note);

/* A solve stopped at limits 1, 1 + step, … ≤ last keeps one state there, and resumed from it
 * with set's limit ends as the uninterrupted solve bit for bit. */
void checkpoint_at_limit_on(const atf_problem *p, atf_settings set, int last, int step,
                            const char *what);

#endif
