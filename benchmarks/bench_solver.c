/* bench_solver.c — cost of the ADMM solver on tangent-feature problems of a random two-layer
 * ReLU network, with and without the exact subspace reduction.
 *
 * Network f(x) = w2ᵀ relu(W1ᵀ x) with input dimension = width w (so W1 is w × w and both sides
 * of the first block grow with the width), He-initialised from the library's seeded generator
 * (atf_rng, problems/tangent). Its factored problem (docs/formats.md, C = 1): block W1 with H = X
 * (N × w), D = w2 ∘ relu'(X W1) (N × w); block W2 with H = relu(X W1) (N × w), D = 1 (N × 1);
 * r = y − f(X) with y standard normal. Penalty `sq:scale=0.01` on both blocks (an adaptive
 * penalty whose optimum is not the NTK point).
 *
 * Output: one row per (N, width, reduce): variables before/after reduction (the core size is
 * read from the first line of the solver's log), iterations to the
 * default tolerances, setup time, time per iteration ((projection + prox) / iterations), the
 * projection share of that, and the total time including certificates and factors.
 *
 * Each row is the fastest of K identical runs (--repeat, default 3): the machine is shared.
 *
 * usage: bench_solver [--n N1,N2,...] [--width W1,W2,...] [--seed S] [--penalty SPEC]
 *                     [--repeat K]
 *        defaults: --n 50,100,200,400 --width 64,256,1024 --seed 1 --penalty sq:scale=0.01 */
#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf_solver.h"
#include "atf_data.h"
#include "atf_util.h"

static void fill_normal(atf_rng *rng, double *x, size_t n, double scale)
{
    for (size_t i = 0; i < n; i++)
        x[i] = scale * atf_rng_normal(rng);
}

static atf_block make_block(const char *name, int index, int N, int rows, int cols, double *H,
                            double *D)
{
    atf_block b;
    memset(&b, 0, sizeof b);
    snprintf(b.name, sizeof b.name, "%s", name);
    b.index = index;
    b.rows = rows, b.cols = cols;
    b.N = N, b.C = 1, b.M = N;
    b.structure = ATF_STRUCT_MATRIX;
    b.kind = ATF_OP_FACTORED;
    b.H = H, b.D = D;
    return b;
}

/* The factored problem of f(x) = w2ᵀ relu(W1ᵀ x) at its initialisation. */
static atf_problem *two_layer_problem(int N, int w, uint64_t seed)
{
    atf_rng rng;
    atf_rng_seed(&rng, seed);
    size_t nw = (size_t)N * (size_t)w;
    double *X = malloc(nw * sizeof *X), *W1 = malloc((size_t)w * w * sizeof *W1);
    double *w2 = malloc((size_t)w * sizeof *w2), *hidden = malloc(nw * sizeof *hidden);
    double *delta = malloc(nw * sizeof *delta), *ones = malloc((size_t)N * sizeof *ones);
    atf_problem *p = calloc(1, sizeof *p);
    p->blocks = calloc(2, sizeof *p->blocks);
    p->r = malloc((size_t)N * sizeof *p->r);
    fill_normal(&rng, X, nw, 1.0);
    fill_normal(&rng, W1, (size_t)w * w, sqrt(2.0 / w));
    fill_normal(&rng, w2, (size_t)w, sqrt(1.0 / w));
    /* pre-activations A = X W1 into `hidden`, then ReLU and its derivative times w2 */
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, w, w, 1.0, X, w, W1, w, 0.0,
                hidden, w);
    for (size_t k = 0; k < nw; k++) {
        int positive = hidden[k] > 0.0;
        delta[k] = positive ? w2[k % (size_t)w] : 0.0;
        hidden[k] = positive ? hidden[k] : 0.0;
    }
    cblas_dgemv(CblasRowMajor, CblasNoTrans, N, w, -1.0, hidden, w, w2, 1, 0.0, p->r, 1);
    for (int i = 0; i < N; i++) { /* r = y − f(X) with y standard normal */
        p->r[i] += atf_rng_normal(&rng);
        ones[i] = 1.0;
    }
    free(W1), free(w2);
    p->N = N, p->C = 1, p->M = N;
    p->nblocks = 2;
    p->blocks[0] = make_block("W1", 0, N, w, w, X, delta);
    p->blocks[1] = make_block("W2", 1, N, w, 1, hidden, ones);
    return p;
}

/* "100,200" into out (at most max positive integers); exits on a bad list. */
static int parse_list(const char *what, const char *text, int *out, int max)
{
    long v[16];
    int n;
    char err[ATF_ERRLEN];
    if (atf_parse_ints(text, 1, 1 << 28, v, max < 16 ? max : 16, &n, what, err)) {
        fprintf(stderr, "bench_solver: %s\n", err);
        exit(2);
    }
    for (int i = 0; i < n; i++)
        out[i] = (int)v[i];
    return n;
}

/* Number of core variables, read from the header line of the solver's log. */
/* The solver's log hook: into the FILE* given as its context. */
static void log_to(void *stream, const char *text)
{
    fputs(text, stream);
}

static long core_variables(FILE *log)
{
    char line[512];
    long n = -1;
    rewind(log);
    if (fgets(line, sizeof line, log)) {
        const char *at = strstr(line, "blocks, ");
        if (at)
            n = atol(at + strlen("blocks, "));
    }
    return n;
}

/* The best of `repeat` identical runs (same seed, same bits, same iterations): timings on a
 * shared machine only ever get worse, so the minimum is the measurement. */
static int run_row(int N, int w, int reduce, uint64_t seed, const char *penalty, int repeat)
{
    atf_problem *p = two_layer_problem(N, w, seed);
    char err[ATF_ERRLEN] = "";
    if (atf_problem_set_penalty(p, penalty, err) != ATF_OK) {
        fprintf(stderr, "%s\n", err);
        atf_problem_free(p);
        return 2;
    }
    atf_result *best = NULL;
    atf_status status = ATF_STATUS_SOLVED;
    long core = -1;
    for (int k = 0; k < repeat; k++) {
        atf_settings set = atf_settings_default();
        set.reduce = reduce;
        set.verbose = 1; /* only for the header line with the core size */
        set.log_every = 1 << 30;
        FILE *log = tmpfile();
        atf_hooks hooks = {.log = log_to, .log_ctx = log};
        atf_result *res = NULL;
        atf_error e = atf_solve(p, &set, &hooks, &res, err);
        core = core_variables(log);
        fclose(log);
        if (e) {
            fprintf(stderr, "N %d width %d: %s\n", N, w, err);
            atf_result_free(best);
            atf_problem_free(p);
            return 1;
        }
        if (!best || res->info.solve_seconds < best->info.solve_seconds) {
            atf_result_free(best);
            best = res, status = res->info.status;
        } else {
            atf_result_free(res);
        }
    }
    long vars = (long)w * w + w;
    double loop = best->info.projection_seconds + best->info.prox_seconds;
    int it = best->info.iterations > 0 ? best->info.iterations : 1;
    printf("| %d | %d | %s | %ld | %ld | %d%s | %.3f | %.3f | %.0f%% | %.0f%% | %.2f |\n", N, w,
           reduce ? "on" : "off", vars, core, best->info.iterations,
           status == ATF_STATUS_SOLVED ? "" : " (not solved)", best->info.setup_seconds, 1e3 * loop / it,
           loop > 0 ? 100.0 * best->info.projection_seconds / loop : 0.0,
           loop > 0 ? 100.0 * best->info.prox_seconds / loop : 0.0, best->info.solve_seconds);
    fflush(stdout);
    atf_result_free(best);
    atf_problem_free(p);
    return 0;
}

int main(int argc, char **argv)
{
    int ns[16] = {50, 100, 200, 400}, widths[16] = {64, 256, 1024}, nn = 4, nw = 3;
    long seed = 1;
    int repeat = 3;
    const char *penalty = "sq:scale=0.01";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--n"))
            nn = parse_list("--n", argv[i + 1], ns, 16);
        else if (!strcmp(argv[i], "--width"))
            nw = parse_list("--width", argv[i + 1], widths, 16);
        else if (!strcmp(argv[i], "--seed"))
            seed = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--penalty"))
            penalty = argv[i + 1];
        else if (!strcmp(argv[i], "--repeat"))
            repeat = atoi(argv[i + 1]) > 0 ? atoi(argv[i + 1]) : 1;
        else {
            fprintf(stderr, "usage: bench_solver [--n LIST] [--width LIST] [--seed S] "
                            "[--penalty SPEC] [--repeat K]\n");
            return 2;
        }
    }
    printf("| N | width | reduce | variables | core | iterations | setup s | ms/iter | "
           "projection share | prox share | total s |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int a = 0; a < nn; a++)
        for (int b = 0; b < nw; b++)
            for (int reduce = 1; reduce >= 0; reduce--)
                if (run_row(ns[a], widths[b], reduce, (uint64_t)seed, penalty, repeat) != 0)
                    return 1;
    return 0;
}
