/* bench_penalized.c — cost of the matrix-free penalized solver (FISTA, solver/fista.c) against
 * the number of examples N, for the squared and the cross-entropy loss.
 *
 * Problem: the tangent features of a random ReLU network 784-128-128-10 without bias (He
 * initialisation, inputs standard normal), computed here: blocks W1 (784 × 128), W2 (128 × 128),
 * W3 (128 × 10), each factored with H = the layer's inputs (N × P) and D = ∂f_k/∂a (M × Q,
 * M = 10 N). Labels are the argmax of a random linear teacher on the inputs; the squared loss
 * fits one-hot targets (r = y − f0), the cross-entropy the labels from the logits f0 + A vec B.
 * λ grows with N (λ = λ0·N, default λ0 = 0.01) so that the loss is a mean over examples and the
 * problems of different N are comparable. Penalty `sq:scale=0.01` on every block.
 *
 * Each (N, loss) runs in its own child process, so that its peak RSS (getrusage ru_maxrss) is
 * its own (it includes the construction of the problem here). Columns: N, M, loss, status,
 * iterations (to --tol or --max-iter), setup seconds (atf_solver_init: equilibration, subspace
 * reduction, SVD workspaces; wall clock), seconds per iteration (the rest of the wall time
 * divided by the iterations), total wall seconds, CPU seconds of the setup and per iteration
 * (CPU time of the process around atf_solver_init and atf_solver_solve: on a shared machine the
 * wall clock counts the other jobs, the CPU time much less so; the solve's CPU time includes
 * the power iterations of the first step and the final certificate, about a dozen iterations'
 * worth, spread over the iterations), peak RSS (MiB), final pg residual, objective.
 *
 * usage: bench_penalized [--n N1,N2,...] [--tol EPS] [--max-iter K] [--lambda0 L]
 *                        [--loss squared|xent|both] [--seed S]
 *        defaults: --n 1000,2000,4000 --tol 1e-4 --max-iter 300 --lambda0 0.01 --loss both */
#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "atf_data.h"
#include "atf_util.h"
#include "atf_solver.h"
#include "bench_timing.h"

#define DIN 784
#define WIDTH 128
#define NOUT 10

static void fill_normal(atf_rng *rng, double *x, size_t n, double scale)
{
    for (size_t i = 0; i < n; i++)
        x[i] = scale * atf_rng_normal(rng);
}

static void relu_into(const double *a, double *h, double *mask, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h[i] = a[i] > 0.0 ? a[i] : 0.0;
        mask[i] = a[i] > 0.0 ? 1.0 : 0.0;
    }
}

static atf_block *block(atf_problem *p, int l, const char *name, int rows, int cols)
{
    atf_block *b = &p->blocks[l];
    snprintf(b->name, sizeof b->name, "%s", name);
    b->rows = rows, b->cols = cols;
    b->kind = ATF_OP_FACTORED;
    return b;
}

/* The factored problem of the network at its initialisation (see the header). */
static atf_problem *mlp_problem(int N, uint64_t seed)
{
    atf_rng rng;
    atf_rng_seed(&rng, seed);
    size_t nh = (size_t)N * WIDTH, M = (size_t)N * NOUT;
    double *X = malloc((size_t)N * DIN * sizeof *X), *W1 = malloc(DIN * WIDTH * sizeof *W1);
    double *W2 = malloc(WIDTH * WIDTH * sizeof *W2), *W3 = malloc(WIDTH * NOUT * sizeof *W3);
    double *a1 = malloc(nh * sizeof *a1), *h1 = malloc(nh * sizeof *h1), *m1 = malloc(nh * sizeof *m1);
    double *a2 = malloc(nh * sizeof *a2), *h2 = malloc(nh * sizeof *h2), *m2 = malloc(nh * sizeof *m2);
    double *f = malloc(M * sizeof *f), *T = malloc(DIN * NOUT * sizeof *T);
    double *teacher = malloc(M * sizeof *teacher), *g2 = malloc(nh * sizeof *g2);
    fill_normal(&rng, X, (size_t)N * DIN, 1.0);
    fill_normal(&rng, W1, DIN * WIDTH, sqrt(2.0 / DIN));
    fill_normal(&rng, W2, WIDTH * WIDTH, sqrt(2.0 / WIDTH));
    fill_normal(&rng, W3, WIDTH * NOUT, sqrt(1.0 / WIDTH));
    fill_normal(&rng, T, DIN * NOUT, 1.0);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, WIDTH, DIN, 1.0, X, DIN, W1, WIDTH,
                0.0, a1, WIDTH);
    relu_into(a1, h1, m1, nh);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, WIDTH, WIDTH, 1.0, h1, WIDTH, W2,
                WIDTH, 0.0, a2, WIDTH);
    relu_into(a2, h2, m2, nh);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, NOUT, WIDTH, 1.0, h2, WIDTH, W3,
                NOUT, 0.0, f, NOUT);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, NOUT, DIN, 1.0, X, DIN, T, NOUT,
                0.0, teacher, NOUT);
    atf_problem *p = atf_problem_new(N, NOUT, 3);
    p->labels = malloc((size_t)N * sizeof *p->labels);
    p->f0 = malloc(M * sizeof *p->f0);
    atf_block *b1 = block(p, 0, "W1", DIN, WIDTH), *b2 = block(p, 1, "W2", WIDTH, WIDTH);
    atf_block *b3 = block(p, 2, "W3", WIDTH, NOUT);
    b1->H = X, b2->H = h1;
    b3->H = malloc(nh * sizeof *b3->H);
    memcpy(b3->H, h2, nh * sizeof *h2);
    b1->D = malloc(M * WIDTH * sizeof *b1->D);
    b2->D = malloc(M * WIDTH * sizeof *b2->D);
    b3->D = calloc(M * NOUT, sizeof *b3->D);
    for (int i = 0; i < N; i++) {
        int best = 0;
        for (int k = 0; k < NOUT; k++) {
            size_t m = (size_t)i * NOUT + (size_t)k, row = (size_t)i * WIDTH;
            if (teacher[m] > teacher[(size_t)i * NOUT + (size_t)best])
                best = k;
            b3->D[m * NOUT + (size_t)k] = 1.0; /* δ3 = e_k */
            double *d2 = b2->D + m * WIDTH, *d1 = b1->D + m * WIDTH;
            for (int j = 0; j < WIDTH; j++) /* δ2 = W3[:, k] ∘ relu'(a2) */
                d2[j] = W3[(size_t)j * NOUT + (size_t)k] * m2[row + (size_t)j];
            /* δ1 = (W2 δ2) ∘ relu'(a1) */
            cblas_dgemv(CblasRowMajor, CblasNoTrans, WIDTH, WIDTH, 1.0, W2, WIDTH, d2, 1, 0.0, d1,
                        1);
            for (int j = 0; j < WIDTH; j++)
                d1[j] *= m1[row + (size_t)j];
        }
        p->labels[i] = best;
        for (int k = 0; k < NOUT; k++) {
            size_t m = (size_t)i * NOUT + (size_t)k;
            p->f0[m] = f[m];
            p->r[m] = (k == best ? 1.0 : 0.0) - f[m];
        }
    }
    char err[ATF_ERRLEN];
    atf_problem_set_penalty(p, "sq:scale=0.01", err);
    free(W1), free(W2), free(W3), free(a1), free(m1), free(a2), free(h2), free(m2), free(f);
    free(T), free(teacher), free(g2);
    return p;
}

static void run_one(int N, const char *loss_name, double lambda0, double tol, int max_iter,
                    uint64_t seed)
{
    atf_problem *p = mlp_problem(N, seed);
    char spec[64], err[ATF_ERRLEN] = "";
    snprintf(spec, sizeof spec, "%s:lambda=%g", loss_name, lambda0 * N);
    atf_settings set = atf_settings_default();
    atf_loss_parse(spec, &set.loss, err);
    set.method = ATF_METHOD_FISTA;
    set.eps_rel = tol;
    set.max_iter = max_iter;
    atf_result *res = NULL;
    atf_solver *solver = NULL;
    double c0 = bench_cpu_now();
    atf_error e = atf_solver_init(p, &set, NULL, &solver, err);
    double c1 = bench_cpu_now();
    if (e == ATF_OK)
        e = atf_solver_solve(solver, &res, err);
    double c2 = bench_cpu_now();
    atf_solver_free(solver);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    if (e) {
        printf("%7d %8d %-22s failed: %s\n", N, p->M, spec, err);
    } else {
        double per_iter = (res->info.solve_seconds - res->info.setup_seconds) / fmax(1, res->info.iterations);
        printf("%7d %8d %-22s %-15s %6d %8.2f %9.3f %9.1f %9.2f %9.3f %9.0f %10.2e %14.7e\n", N,
               p->M, spec, atf_status_name(res->info.status), res->info.iterations, res->info.setup_seconds,
               per_iter, res->info.solve_seconds, c1 - c0, (c2 - c1) / fmax(1, res->info.iterations),
               ru.ru_maxrss / 1024.0, res->info.pg_residual, res->info.objective);
    }
    fflush(stdout);
    atf_result_free(res);
    atf_problem_free(p);
}

/* "1000,2000" into out (at most max sizes); exits on a bad list. */
static int parse_sizes(const char *s, int *out, int max)
{
    long v[32];
    int n;
    char err[ATF_ERRLEN];
    if (atf_parse_ints(s, 1, 1 << 28, v, max < 32 ? max : 32, &n, "--n", err)) {
        fprintf(stderr, "bench_penalized: %s\n", err);
        exit(2);
    }
    for (int i = 0; i < n; i++)
        out[i] = (int)v[i];
    return n;
}

int main(int argc, char **argv)
{
    int ns[32] = {1000, 2000, 4000}, nn = 3, max_iter = 300;
    double tol = 1e-4, lambda0 = 0.01;
    const char *which = "both";
    uint64_t seed = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--n"))
            nn = parse_sizes(argv[i + 1], ns, 32);
        else if (!strcmp(argv[i], "--tol"))
            tol = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--max-iter"))
            max_iter = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--lambda0"))
            lambda0 = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--loss"))
            which = argv[i + 1];
        else if (!strcmp(argv[i], "--seed"))
            seed = (uint64_t)atoll(argv[i + 1]);
        else {
            fprintf(stderr, "bench_penalized: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    printf("# bench_penalized: MLP 784-128-128-10 tangent features, penalty sq:scale=0.01, "
           "tol %g, max_iter %d, lambda = %g N\n", tol, max_iter, lambda0);
    printf("%7s %8s %-22s %-15s %6s %8s %9s %9s %9s %9s %9s %10s %14s\n", "N", "M", "loss",
           "status", "iters", "setup_s", "s/iter", "total_s", "setup_cpu", "cpu/iter", "RSS_MiB",
           "pg_res", "objective");
    fflush(stdout);
    const char *losses[2] = {"squared", "xent"};
    for (int i = 0; i < nn; i++)
        for (int l = 0; l < 2; l++) {
            if (strcmp(which, "both") && strcmp(which, losses[l]))
                continue;
            pid_t pid = fork();
            if (pid == 0) {
                run_one(ns[i], losses[l], lambda0, tol, max_iter, seed);
                _exit(0);
            }
            int status = 0;
            if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
                WEXITSTATUS(status) != 0)
                printf("%7d %-22s child failed\n", ns[i], losses[l]);
        }
    return 0;
}
