/* solver_fixtures.h — small problems and helpers shared by the tests of the penalized methods
 * (solver_fixtures.c). */
#ifndef ATF_SOLVER_FIXTURES_H
#define ATF_SOLVER_FIXTURES_H

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

#endif
