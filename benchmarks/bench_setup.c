/* bench_setup.c — what the subspace reduction of factored blocks costs at setup, and what it
 * saves per iteration (docs/record/solver.md §4).
 *
 * For a problem file it reports
 *  1. per factored side (H, D of every block): the decision of atf_sv_row_basis as the solver
 *     takes it (rule, rank) and the CPU and wall seconds of three ways to decide: the rule
 *     (auto), the rule without the skip of small reductions (no-skip: the Gram's eigenvectors,
 *     verified), and the column-pivoted QR alone (qr: what the solver did before); for the two
 *     that reduce, the seconds include forming the reduced factor X Q (N × rank), whose size is
 *     reported too (it exists beside the problem's own X for the whole solve);
 *  2. per configuration, each in its own child process (peak RSS of its own): atf_solver_init
 *     (wall and CPU seconds, RSS after it) and K iterations of the solve (CPU seconds per pass
 *     over the data — one application of A or Aᵀ, the unit of work of every method; FISTA's
 *     backtracking varies the passes per iteration — and peak RSS): `auto` (the solver as it is), `off` (settings.reduce = 0), and
 *     `forced` (every side that no-skip would reduce replaced by its reduced factor, both kept
 *     in memory as the solver would, then solved unreduced: the iterations of a solver that
 *     always reduced).
 * The loss is `xent:lambda=0.01·N` when the problem has labels, else `squared:lambda=0.01·N`;
 * penalty `sq`; method fista. The children share the parent's copy of the problem (fork), so
 * their RSS includes the part of it they touch (all of it during a solve).
 *
 * usage: bench_setup PROBLEM.h5 [--iters K] [--configs auto,off,forced] [--no-sides] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cblas.h>

#include "atf_util.h"
#include "solver_internal.h"
#include "bench_timing.h"

static double rss_mib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0;
}

static const char *rule_name(atf_sv_basis_rule r)
{
    static const char *names[] = {"full_rank", "skipped", "gram", "qr", "qr_fallback"};
    return names[r];
}

/* One way of deciding a side, timed with the reduced factor it implies. */
static void time_side(const double *X, int nr, int nc, atf_sv_basis_how how, const char *label)
{
    char err[ATF_ERRLEN] = "";
    int rank = nc;
    double *Qt = NULL;
    atf_sv_basis_rule rule;
    double c0 = bench_cpu_now(), w0 = atf_now();
    atf_error e = atf_sv_row_basis(X, nr, nc, how, &rank, &Qt, &rule, "bench", err);
    double *red = NULL;
    if (e == ATF_OK && Qt) {
        red = malloc((size_t)nr * (size_t)rank * sizeof *red);
        if (red)
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nr, rank, nc, 1.0, X, nc, Qt,
                        nc, 0.0, red, rank);
    }
    double cpu = bench_cpu_now() - c0, wall = atf_now() - w0;
    if (e != ATF_OK)
        printf("      %-8s error: %s\n", label, err);
    else
        printf("      %-8s %-12s rank %5d of %5d  cpu %8.3f s  wall %8.3f s  reduced factor %8.1f MiB\n",
               label, rule_name(rule), rank, nc, cpu, wall,
               Qt ? (double)nr * rank * 8.0 / 1048576.0 : 0.0);
    free(Qt), free(red);
}

static void time_sides(const atf_problem *p)
{
    printf("# sides: the decision (auto), without the skip (no-skip), the QR alone (qr)\n");
    for (int l = 0; l < p->nblocks; l++) {
        const atf_block *b = &p->blocks[l];
        if (b->kind != ATF_OP_FACTORED)
            continue;
        printf("  block %s: H %d × %d\n", b->name, b->N, b->rows);
        time_side(b->H, b->N, b->rows, ATF_SV_BASIS_AUTO, "auto");
        time_side(b->H, b->N, b->rows, ATF_SV_BASIS_NO_SKIP, "no-skip");
        time_side(b->H, b->N, b->rows, ATF_SV_BASIS_FORCE_QR, "qr");
        printf("  block %s: D %d × %d\n", b->name, b->M, b->cols);
        time_side(b->D, b->M, b->cols, ATF_SV_BASIS_AUTO, "auto");
        time_side(b->D, b->M, b->cols, ATF_SV_BASIS_NO_SKIP, "no-skip");
        time_side(b->D, b->M, b->cols, ATF_SV_BASIS_FORCE_QR, "qr");
    }
}

/* `forced`: each factor that no-skip reduces is replaced by X Q (the original stays allocated,
 * owned by `keep`, as the solver keeps the problem's arrays beside its reduced copies). */
static void force_reduction(atf_problem *p, double **keep, int *nkeep)
{
    for (int l = 0; l < p->nblocks; l++) {
        atf_block *b = &p->blocks[l];
        if (b->kind != ATF_OP_FACTORED)
            continue;
        for (int side = 0; side < 2; side++) {
            double **X = side ? &b->D : &b->H;
            int nr = side ? b->M : b->N, nc = side ? b->cols : b->rows, rank = nc;
            double *Qt = NULL;
            atf_sv_basis_rule rule;
            char err[ATF_ERRLEN];
            if (atf_sv_row_basis(*X, nr, nc, ATF_SV_BASIS_NO_SKIP, &rank, &Qt, &rule, "forced",
                                 err) != ATF_OK || !Qt)
                continue;
            double *red = malloc((size_t)nr * (size_t)rank * sizeof *red);
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nr, rank, nc, 1.0, *X, nc, Qt,
                        nc, 0.0, red, rank);
            keep[(*nkeep)++] = *X;
            *X = red;
            if (side)
                b->cols = rank;
            else
                b->rows = rank;
            free(Qt);
        }
    }
}

static void run_config(atf_problem *p, const char *config, int iters)
{
    double *keep[64];
    int nkeep = 0;
    atf_settings set = atf_settings_default();
    set.method = ATF_METHOD_FISTA;
    set.loss.kind = p->labels ? ATF_LOSS_XENT : ATF_LOSS_SQUARED;
    set.loss.lambda = 0.01 * p->N;
    set.max_iter = iters;
    set.eps_rel = 1e-12;
    if (strcmp(config, "off") == 0)
        set.reduce = 0;
    if (strcmp(config, "forced") == 0) {
        p->test = NULL; /* its blocks keep the full shapes (this child never frees p) */
        force_reduction(p, keep, &nkeep);
        set.reduce = 0;
    }
    char err[ATF_ERRLEN] = "";
    atf_solver *s = NULL;
    double c0 = bench_cpu_now(), w0 = atf_now();
    atf_error e = atf_solver_init(p, &set, NULL, &s, err);
    double init_cpu = bench_cpu_now() - c0, init_wall = atf_now() - w0, init_rss = rss_mib();
    if (e != ATF_OK) {
        printf("  %-7s init failed: %s\n", config, err);
        return;
    }
    size_t n = s->n;
    atf_result *res = NULL;
    c0 = bench_cpu_now();
    e = atf_solver_solve(s, &res, err);
    double solve_cpu = bench_cpu_now() - c0;
    /* FISTA's backtracking makes the passes per iteration differ between runs: the CPU per
     * pass over the data (one application of A or Aᵀ) is what compares the configurations */
    long passes = s->passes;
    printf("  %-7s variables %8zu  init wall %7.2f s  cpu %7.2f s  rss %7.0f MiB   "
           "%d iterations, %ld passes: cpu %7.3f s/pass  peak rss %7.0f MiB  objective %.9e\n",
           config, n, init_wall, init_cpu, init_rss, res ? res->info.iterations : 0, passes,
           passes ? solve_cpu / (double)passes : 0.0, rss_mib(), res ? res->info.objective : NAN);
    atf_result_free(res);
    atf_solver_free(s);
    for (int i = 0; i < nkeep; i++)
        free(keep[i]);
}

int main(int argc, char **argv)
{
    const char *path = NULL, *configs = "auto,off,forced";
    int iters = 3, sides = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc)
            iters = atoi(argv[++i]);
        else if (strcmp(argv[i], "--configs") == 0 && i + 1 < argc)
            configs = argv[++i];
        else if (strcmp(argv[i], "--no-sides") == 0)
            sides = 0;
        else if (argv[i][0] != '-' && !path)
            path = argv[i];
        else {
            fprintf(stderr, "usage: bench_setup PROBLEM.h5 [--iters K] [--configs "
                            "auto,off,forced] [--no-sides]\n");
            return 2;
        }
    }
    if (!path || iters < 1) {
        fprintf(stderr, "usage: bench_setup PROBLEM.h5 [--iters K] [--configs auto,off,forced] "
                        "[--no-sides]\n");
        return 2;
    }
    char err[ATF_ERRLEN] = "";
    atf_problem *p = NULL;
    double w0 = atf_now();
    if (atf_problem_read(path, &p, err) != ATF_OK) {
        fprintf(stderr, "bench_setup: %s\n", err);
        return 1;
    }
    printf("# bench_setup %s: N %d, M %d, %d blocks, read in %.1f s, rss %.0f MiB\n", path, p->N,
           p->M, p->nblocks, atf_now() - w0, rss_mib());
    fflush(stdout);
    if (sides)
        time_sides(p);
    printf("# configurations (one child each): fista, %d iterations\n", iters);
    fflush(stdout);
    char list[256];
    snprintf(list, sizeof list, "%s", configs);
    for (char *c = strtok(list, ","); c; c = strtok(NULL, ",")) {
        pid_t pid = fork();
        if (pid == 0) {
            run_config(p, c, iters);
            fflush(stdout);
            _exit(0);
        }
        int status;
        waitpid(pid, &status, 0);
    }
    atf_problem_free(p);
    return 0;
}
