/* bench_baseline_cg.c — the NTK min-norm baseline (Theorem 1) by the Gram path (method baseline:
 * the M × M Gram, Cholesky) and by preconditioned CG (method cg, docs/record/solver.md §9.1), side
 * by side on MNIST tangent features.
 *
 * Problem: `atf features --data mnist --n-train n --n-test 0`, built here: n digits of
 * data/mnist (standardised per image, data seed 1), the network 784-128-128-10 without bias,
 * ReLU, He initialisation (seed 1), one-hot targets; blocks W1, W2, W3 factored; M = 10 n.
 *
 * Every configuration runs in its own child process, so that its peak RSS (getrusage) is its
 * own (it includes the ≈ 0.3 GiB of the problem at n = 10 000 and its construction). The child
 * writes its result to a scratch file; the parent compares B with the reference of the same n:
 * the Gram solution when the Gram ran (n ≤ --gram-max), else a CG run to --ref-tol when given.
 * Columns: n, M, method, preconditioner, rank k, status, CG steps (main solve), certificate
 * steps, operator passes, seconds to build the preconditioner, wall and CPU seconds of
 * atf_solver_init + atf_solver_solve, peak RSS (MiB), relative constraint residual on the
 * problem's own data, stationarity, and ‖B − B_ref‖/‖B_ref‖.
 *
 * usage: bench_baseline_cg [--n 1000,2000,5000,10000] [--gram-max N] [--precond LIST]
 *                          [--rank LIST] [--shift LIST] [--tol EPS] [--max-iter K]
 *                          [--ref-tol EPS] [--krylov lsqr,craig] [--data DIR]
 *        LIST: comma-separated; precond names default,none,jacobi,nystrom,nystrom-block;
 *        rank 0 = the default (memory budget); shift 0 = the default.
 *        defaults: --n 1000,2000 --gram-max 2000 --precond default --rank 0 --shift 0
 *                  --tol 1e-8 (the CG default) --max-iter 10000 --ref-tol 0 (no reference). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "atf_data.h"
#include "atf_features.h"
#include "atf_mlp.h"
#include "atf_solver.h"
#include "atf_util.h"
#include "pcg.h"
#include "bench_timing.h"

#ifndef ATF_SOURCE_DATA
#define ATF_SOURCE_DATA "data"
#endif

#define MAXLIST 16

typedef struct {
    int ns[MAXLIST], nn;
    atf_precond pre[MAXLIST];
    int npre;
    long ranks[MAXLIST];
    int nranks;
    double shifts[MAXLIST];
    int nshifts;
    atf_cg_krylov krylov[2];
    int nkrylov;
    int gram_max, max_iter;
    double tol, ref_tol;
    const char *data;
} bench_args;

typedef struct {
    int gram;              /* method baseline, else cg */
    atf_cg_options opt;
    double tol;
} config;

/* The MNIST problem of the header. */
static atf_problem *mnist_problem(const char *data, int n)
{
    char err[ATF_ERRLEN], num[32];
    atf_data_options d = atf_data_options_default();
    snprintf(num, sizeof num, "%d", n);
    atf_net_options o = atf_net_options_default();
    atf_arch arch;
    atf_task task;
    atf_mlp *m = NULL;
    atf_problem *p = NULL;
    atf_error e = atf_data_option(&d, "data", "mnist", err);
    if (!e)
        e = atf_data_option(&d, "n-train", num, err);
    if (!e)
        e = atf_data_option(&d, "n-test", "0", err);
    if (!e)
        e = atf_data_add_dir(&d, data, err);
    if (!e)
        e = atf_net_arch(&o, &arch, err);
    if (!e)
        e = atf_task_load(&d, &arch, &task, err);
    if (!e) {
        e = atf_net_build(&o, &task, &m, err);
        if (!e)
            e = atf_tangent_problem(m, &task, NULL, &p, err);
        atf_task_free(&task);
    }
    atf_mlp_free(m);
    if (e) {
        fprintf(stderr, "bench_baseline_cg: %s (scripts/fetch_mnist.sh fetches the data)\n", err);
        exit(2);
    }
    return p;
}

static void scratch_path(char *buf, size_t len, int n, int index)
{
    snprintf(buf, len, "/tmp/bench_baseline_cg_%d_%d_%d.h5", (int)getppid(), n, index);
}

/* The child: build, solve, write the result to `out`, print the row except the B difference
 * (the parent appends it). */
static void run_child(const bench_args *a, int n, const config *cf, const char *out)
{
    atf_problem *p = mnist_problem(a->data, n);
    atf_settings set = atf_settings_default();
    set.method = cf->gram ? ATF_METHOD_BASELINE : ATF_METHOD_CG;
    set.eps_rel = cf->tol;
    set.max_iter = a->max_iter;
    char err[ATF_ERRLEN] = "";
    atf_solver *s = NULL;
    atf_result *res = NULL;
    double c0 = bench_cpu_now(), w0 = atf_now();
    atf_error e = atf_solver_init(p, &set, NULL, &s, err);
    if (!e && !cf->gram)
        e = atf_sv_cg_configure(s, &cf->opt, err);
    if (!e)
        e = atf_solver_solve(s, &res, err);
    double cpu = bench_cpu_now() - c0, wall = atf_now() - w0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    const atf_cg_report *rep = cf->gram ? NULL : atf_sv_cg_last(s);
    const char *pname = cf->gram ? "-" : atf_precond_name(cf->opt.precond);
    if (e) {
        printf("%6d %7d %-5s %-13s failed: %s\n", n, p->M, cf->gram ? "gram" : "cg", pname, err);
        exit(1);
    }
    int rank = 0;
    double pre_s = 0.0;
    if (!cf->gram) { /* the note says "rank K" when there is a low-rank part */
        const char *r = strstr(res->info.method_note, " rank ");
        rank = r ? atoi(r + 6) : 0;
        const char *b = strstr(res->info.method_note, "built in ");
        pre_s = b ? atof(b + 9) : 0.0;
    }
    printf("%6d %7d %-5s %-13s %5d %-14s %6d %5d %7d %7.2f %8.2f %8.2f %8.0f %10.2e %10.3e", n,
           p->M, cf->gram ? "gram" : cf->opt.krylov == ATF_CG_KRYLOV_CRAIG ? "craig" : "lsqr", pname, rank, atf_status_name(res->info.status),
           res->info.iterations, rep ? res->info.inner_iterations - res->info.iterations : 0,
           res->info.operator_passes, pre_s, wall, cpu, ru.ru_maxrss / 1024.0,
           res->info.constraint_residual, res->info.stationarity);
    fflush(stdout);
    if (atf_result_write(out, res, err) != ATF_OK)
        fprintf(stderr, "bench_baseline_cg: %s\n", err);
    atf_result_free(res);
    atf_solver_free(s);
    atf_problem_free(p);
    exit(0);
}

/* ‖B − B_ref‖/‖B_ref‖ over all blocks, NaN when either file is missing. */
static double b_difference(const char *path, const char *ref)
{
    char err[ATF_ERRLEN];
    atf_result *a = NULL, *b = NULL;
    double num = 0.0, den = 0.0;
    if (!ref || atf_result_read(path, &a, err) || atf_result_read(ref, &b, err)) {
        atf_result_free(a);
        return NAN;
    }
    for (int l = 0; l < a->nblocks; l++)
        for (int j = 0; j < a->blocks[l].rows * a->blocks[l].cols; j++) {
            double d = a->blocks[l].B[j] - b->blocks[l].B[j];
            num += d * d, den += b->blocks[l].B[j] * b->blocks[l].B[j];
        }
    atf_result_free(a), atf_result_free(b);
    return sqrt(num / den);
}

/* One configuration in a child; the parent prints the B difference after the child's row. */
static int run_config(const bench_args *a, int n, const config *cf, int index, const char *ref)
{
    char out[256];
    scratch_path(out, sizeof out, n, index);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        run_child(a, n, cf, out);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        printf("  (child failed)\n");
        return -1;
    }
    double d = b_difference(out, ref);
    printf(" %10.2e\n", d);
    fflush(stdout);
    return 0;
}

static void run_n(const bench_args *a, int n)
{
    char ref[256] = "";
    int index = 0;
    if (n <= a->gram_max) {
        config g = {.gram = 1, .tol = 1e-6};
        scratch_path(ref, sizeof ref, n, index);
        if (run_config(a, n, &g, index++, NULL) != 0)
            ref[0] = '\0';
    } else if (a->ref_tol > 0.0) {
        config r = {.gram = 0, .tol = a->ref_tol};
        scratch_path(ref, sizeof ref, n, index);
        printf("# reference: cg to relative residual %.0e\n", a->ref_tol);
        if (run_config(a, n, &r, index++, NULL) != 0)
            ref[0] = '\0';
    }
    for (int kr = 0; kr < a->nkrylov; kr++)
    for (int i = 0; i < a->npre; i++)
        for (int j = 0; j < a->nranks; j++)
            for (int k = 0; k < a->nshifts; k++) {
                config c = {.gram = 0, .tol = a->tol};
                c.opt.krylov = a->krylov[kr];
                c.opt.precond = a->pre[i];
                c.opt.rank = (int)a->ranks[j];
                c.opt.shift_factor = a->shifts[k];
                int low_rank = a->pre[i] != ATF_PRECOND_NONE &&
                               a->pre[i] != ATF_PRECOND_JACOBI;
                if (!low_rank && (j > 0 || k > 0))
                    continue; /* rank and shift do not apply */
                run_config(a, n, &c, index++, ref[0] ? ref : NULL);
            }
    for (int i = 0; i < index; i++) {
        char path[256];
        scratch_path(path, sizeof path, n, i);
        unlink(path);
    }
}

static void usage_exit(const char *msg)
{
    fprintf(stderr, "bench_baseline_cg: %s\n", msg);
    exit(2);
}

static void parse_list(const char *opt, const char *text, bench_args *a)
{
    char err[ATF_ERRLEN];
    long v[MAXLIST];
    int n = 0;
    if (!strcmp(opt, "--n")) {
        if (atf_parse_ints(text, 1, 1 << 24, v, MAXLIST, &n, opt, err))
            usage_exit(err);
        for (int i = 0; i < n; i++)
            a->ns[i] = (int)v[i];
        a->nn = n;
    } else if (!strcmp(opt, "--rank")) {
        if (atf_parse_ints(text, 0, 1 << 24, a->ranks, MAXLIST, &a->nranks, opt, err))
            usage_exit(err);
    } else if (!strcmp(opt, "--precond")) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", text);
        a->npre = 0;
        for (char *t = strtok(buf, ","); t && a->npre < MAXLIST; t = strtok(NULL, ","))
            if (atf_precond_parse(t, &a->pre[a->npre++]) != ATF_OK)
                usage_exit("--precond: unknown preconditioner");
    } else if (!strcmp(opt, "--krylov")) {
        a->nkrylov = 0;
        if (strstr(text, "lsqr"))
            a->krylov[a->nkrylov++] = ATF_CG_KRYLOV_LSQR;
        if (strstr(text, "craig"))
            a->krylov[a->nkrylov++] = ATF_CG_KRYLOV_CRAIG;
        if (!a->nkrylov)
            usage_exit("--krylov: lsqr, craig or lsqr,craig");
    } else if (!strcmp(opt, "--shift")) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", text);
        a->nshifts = 0;
        for (char *t = strtok(buf, ","); t && a->nshifts < MAXLIST; t = strtok(NULL, ","))
            a->shifts[a->nshifts++] = atof(t);
    }
}

int main(int argc, char **argv)
{
    bench_args a = {.ns = {1000, 2000}, .nn = 2, .pre = {ATF_PRECOND_AUTO}, .npre = 1,
                    .ranks = {0}, .nranks = 1, .shifts = {0.0}, .nshifts = 1,
                    .krylov = {ATF_CG_KRYLOV_LSQR}, .nkrylov = 1, .gram_max = 2000,
                    .max_iter = 10000, .tol = 1e-8, .ref_tol = 0.0, .data = ATF_SOURCE_DATA};
    for (int i = 1; i < argc; i += 2) {
        if (i + 1 >= argc)
            usage_exit("every option takes a value (see the header of bench_baseline_cg.c)");
        const char *o = argv[i], *v = argv[i + 1];
        if (!strcmp(o, "--gram-max"))
            a.gram_max = atoi(v);
        else if (!strcmp(o, "--max-iter"))
            a.max_iter = atoi(v);
        else if (!strcmp(o, "--tol"))
            a.tol = atof(v);
        else if (!strcmp(o, "--ref-tol"))
            a.ref_tol = atof(v);
        else if (!strcmp(o, "--data"))
            a.data = v;
        else if (!strcmp(o, "--n") || !strcmp(o, "--rank") || !strcmp(o, "--precond") ||
                 !strcmp(o, "--shift") || !strcmp(o, "--krylov"))
            parse_list(o, v, &a);
        else
            usage_exit("unknown option (see the header of bench_baseline_cg.c)");
    }
    printf("# bench_baseline_cg: MNIST 784-128-128-10 (He, seed 1), one-hot targets; cg tol %.0e, "
           "max %d steps; gram for n <= %d\n", a.tol, a.max_iter, a.gram_max);
    printf("%6s %7s %-5s %-13s %5s %-14s %6s %5s %7s %7s %8s %8s %8s %10s %10s %10s\n", "n", "M",
           "meth", "precond", "rank", "status", "steps", "cert", "passes", "pre_s", "wall_s",
           "cpu_s", "RSS_MiB", "constr", "station", "B_diff");
    for (int i = 0; i < a.nn; i++)
        run_n(&a, a.ns[i]);
    return 0;
}
