/* bench_hvp.c — the cost of one Hessian–vector product of the penalized problem (16) (what each
 * CG step of --method newton pays, docs/record/solver.md §15) against its floor: the plain BLAS
 * calls that one A and one Aᵀ product need on the same arrays, with the same threads.
 *
 * The solver's product: g = A'ᵀ ∇²ℓ A'v (atf_sv_hess: with factored blocks one read of D,
 * the curvature C × C per example for xent applied while the example's rows are in cache), on
 * the solver's own work data (equilibrated and reduced as a solve would have them); beside it
 * the same product unfused, as three sweeps: z = A'v (atf_sv_apply), z ← ∇²ℓ z
 * (atf_pg_loss_hess), g = A'ᵀz (atf_sv_adjoint). The floor, per factored block
 * (H: N × rows, D: M × cols, M = N·C): T = H B (dgemm), y_i = D_i T_i per example (dgemv, C ×
 * cols), then S_i = D_iᵀ u_i (dgemv) and G = Hᵀ S (dgemm), with T and S allocated once; dense
 * blocks: dgemv with J and Jᵀ. No curvature, no stacking, no allocation: what is left is BLAS.
 *
 * Each is timed --reps times, interleaved (floor, fused, unfused, floor, …); the table has the
 * medians of wall and CPU seconds (CPU time of the process: all BLAS threads) and the ratios.
 *
 * usage: bench_hvp PROBLEM.h5 [--loss SPEC] [--reps K]
 *        defaults: --loss xent:lambda=<0.01·N> --reps 7 (threads: OPENBLAS_NUM_THREADS) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>

#include "atf_data.h"
#include "atf_util.h"
#include "solver_penalized.h"
#include "bench_timing.h"

typedef struct {
    double *T, *S; /* [N × cols] of the widest factored block */
} floor_work;

static void floor_block(const atf_block *b, const double *B, const double *u, double *y,
                        double *G, floor_work *w)
{
    if (b->kind == ATF_OP_DENSE) {
        int n = b->rows * b->cols;
        cblas_dgemv(CblasRowMajor, CblasNoTrans, b->M, n, 1.0, b->J, n, B, 1, 0.0, y, 1);
        cblas_dgemv(CblasRowMajor, CblasTrans, b->M, n, 1.0, b->J, n, u, 1, 0.0, G, 1);
        return;
    }
    if (b->kind != ATF_OP_FACTORED)
        return; /* sparse blocks: the operator is its own floor */
    int N = b->N, C = b->C, P = b->rows, Q = b->cols;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, Q, P, 1.0, b->H, P, B, Q, 0.0, w->T,
                Q);
    for (int i = 0; i < N; i++)
        cblas_dgemv(CblasRowMajor, CblasNoTrans, C, Q, 1.0, b->D + (size_t)i * C * Q, Q,
                    w->T + (size_t)i * Q, 1, 0.0, y + (size_t)i * C, 1);
    for (int i = 0; i < N; i++)
        cblas_dgemv(CblasRowMajor, CblasTrans, C, Q, 1.0, b->D + (size_t)i * C * Q, Q,
                    u + (size_t)i * C, 1, 0.0, w->S + (size_t)i * Q, 1);
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, P, Q, N, 1.0, b->H, P, w->S, Q, 0.0, G,
                Q);
}

static int parse_args(int argc, char **argv, char *loss_spec, size_t len, int *reps)
{
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--loss"))
            snprintf(loss_spec, len, "%s", argv[i + 1]);
        else if (!strcmp(argv[i], "--reps"))
            *reps = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "bench_hvp: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (*reps < 1 || *reps > 1000) {
        fprintf(stderr, "bench_hvp: --reps must be 1 … 1000\n");
        return 2;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: bench_hvp PROBLEM.h5 [--loss SPEC] [--reps K]\n");
        return 2;
    }
    char loss_spec[128] = "", err[ATF_ERRLEN] = "";
    int reps = 7;
    if (parse_args(argc, argv, loss_spec, sizeof loss_spec, &reps))
        return 2;
    atf_problem *p = NULL;
    if (atf_problem_read(argv[1], &p, err) != ATF_OK) {
        fprintf(stderr, "bench_hvp: %s\n", err);
        return 2;
    }
    if (!loss_spec[0])
        snprintf(loss_spec, sizeof loss_spec, "xent:lambda=%g", 0.01 * p->N);
    atf_settings set = atf_settings_default();
    set.method = ATF_METHOD_NEWTON;
    atf_solver *s = NULL;
    atf_pg_loss pl;
    atf_error e = atf_loss_parse(loss_spec, &set.loss, err);
    if (e == ATF_OK)
        e = atf_solver_init(p, &set, NULL, &s, err);
    if (e == ATF_OK)
        e = atf_pg_loss_init(s, &set.loss, &pl, err);
    if (e != ATF_OK) {
        fprintf(stderr, "bench_hvp: %s\n", err);
        atf_solver_free(s), atf_problem_free(p);
        return 2;
    }
    size_t n = s->n, M = (size_t)s->work.M, widest = 1;
    for (int l = 0; l < s->nvars; l++)
        if (s->vars[l].op.kind == ATF_OP_FACTORED &&
            (size_t)s->vars[l].op.N * (size_t)s->vars[l].op.cols > widest)
            widest = (size_t)s->vars[l].op.N * (size_t)s->vars[l].op.cols;
    floor_work w = {malloc(widest * sizeof(double)), malloc(widest * sizeof(double))};
    double *v = malloc(n * sizeof *v), *g = malloc(n * sizeof *g), *z = malloc(M * sizeof *z);
    double *fw = malloc(6 * (size_t)reps * sizeof *fw); /* wall and CPU of the three, per rep */
    if (!w.T || !w.S || !v || !g || !z || !fw) {
        fprintf(stderr, "bench_hvp: out of memory\n");
        return 1;
    }
    atf_rng rng;
    atf_rng_seed(&rng, 1);
    for (size_t i = 0; i < n; i++)
        v[i] = 1e-2 * atf_rng_normal(&rng);
    atf_sv_apply(s, v, z);
    atf_pg_loss_curvature(&pl, z); /* the curvature at a point, as a Newton step has it */
    double *fl_wall = fw, *fl_cpu = fw + reps, *hv_wall = fw + 2 * reps, *hv_cpu = fw + 3 * reps;
    double *un_wall = fw + 4 * reps, *un_cpu = fw + 5 * reps;
    for (int r = 0; r < reps; r++) {
        double t0 = atf_now(), c0 = bench_cpu_now();
        for (int l = 0; l < s->nvars; l++)
            floor_block(&s->vars[l].op, v + s->vars[l].off, z, z, g + s->vars[l].off, &w);
        fl_wall[r] = atf_now() - t0, fl_cpu[r] = bench_cpu_now() - c0;
        t0 = atf_now(), c0 = bench_cpu_now();
        atf_sv_hess(s, atf_pg_loss_curv, &pl, v, z, g);
        hv_wall[r] = atf_now() - t0, hv_cpu[r] = bench_cpu_now() - c0;
        t0 = atf_now(), c0 = bench_cpu_now();
        atf_sv_apply(s, v, z);
        atf_pg_loss_hess(&pl, NULL, 0, z, z);
        atf_sv_adjoint(s, z, g);
        un_wall[r] = atf_now() - t0, un_cpu[r] = bench_cpu_now() - c0;
    }
    double fwall = bench_median(fl_wall, reps), fcpu = bench_median(fl_cpu, reps);
    double hwall = bench_median(hv_wall, reps), hcpu = bench_median(hv_cpu, reps);
    double uwall = bench_median(un_wall, reps), ucpu = bench_median(un_cpu, reps);
    printf("# bench_hvp %s: N %d, M %d, %zu variables (%d blocks), loss %s, %d reps, medians\n",
           argv[1], p->N, p->M, n, s->nvars, loss_spec, reps);
    printf("%-38s %10s %10s %8s %8s\n", "", "wall s", "CPU s", "wall/fl", "CPU/fl");
    printf("%-38s %10.4f %10.4f\n", "floor (A and Aᵀ as BLAS)", fwall, fcpu);
    printf("%-38s %10.4f %10.4f %8.2f %8.2f\n", "Hessian-vector product (atf_sv_hess)",
           hwall, hcpu, hwall / fwall, hcpu / fcpu);
    printf("%-38s %10.4f %10.4f %8.2f %8.2f\n", "  unfused: apply, curvature, adjoint", uwall,
           ucpu, uwall / fwall, ucpu / fcpu);
    free(w.T), free(w.S), free(v), free(g), free(z), free(fw);
    atf_pg_loss_free(&pl);
    atf_solver_free(s);
    atf_problem_free(p);
    return 0;
}
