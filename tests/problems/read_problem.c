/* read_problem.c — test driver for the problem and result readers (used by the Python tests).
 *
 *   read_problem [--result] IN [OUT]
 *
 * Reads IN (a problem, or a result with --result); on failure prints the library's message on
 * stderr and exits as the atf command does (2 bad input, 1 other failures). On success prints a summary on stdout and, with
 * OUT, writes what it read to OUT. For problems the summary includes the residual
 * A vec(B) − r for the deterministic point B_l[j] = sin(j + 1 + l), so that the Python side can
 * check the operator conventions (row-major flattening, row m = i·C + k) against numpy. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf_problem.h"
#include "atf_result.h"

/* The exit codes of the atf command for failures (drivers/cli owns the mapping; this test
 * driver does not link the command). */
static int exit_code(atf_error e)
{
    return e == ATF_OK ? 0 : (e == ATF_E_USAGE || e == ATF_E_INPUT) ? 2 : 1;
}

static const char *kind_name(atf_operator_kind k)
{
    return k == ATF_OP_DENSE ? "dense" : k == ATF_OP_SPARSE ? "sparse" : "factored";
}

static int print_residual(const atf_problem *p, const char *label)
{
    double **Bs = calloc((size_t)p->nblocks, sizeof *Bs);
    double *res = malloc((size_t)p->M * sizeof *res);
    int ok = Bs && res;
    for (int l = 0; ok && l < p->nblocks; l++) {
        size_t n = (size_t)p->blocks[l].rows * p->blocks[l].cols;
        Bs[l] = malloc(n * sizeof **Bs);
        ok = Bs[l] != NULL;
        for (size_t j = 0; ok && j < n; j++)
            Bs[l][j] = sin((double)(j + 1 + (size_t)l));
    }
    if (ok) {
        atf_problem_residual(p, Bs, res);
        printf("%s", label);
        for (int m = 0; m < p->M; m++)
            printf(" %.17g", res[m]);
        printf("\n");
    }
    for (int l = 0; Bs && l < p->nblocks; l++)
        free(Bs[l]);
    free(Bs);
    free(res);
    return ok ? 0 : 1;
}

static int problem_main(const char *in, const char *out)
{
    char err[ATF_ERRLEN];
    atf_problem *p = NULL;
    atf_error e = atf_problem_read(in, &p, err);
    if (e) {
        fprintf(stderr, "%s\n", err);
        return exit_code(e);
    }
    printf("samples %d\noutputs %d\n", p->N, p->C);
    for (int l = 0; l < p->nblocks; l++) {
        const atf_block *b = &p->blocks[l];
        printf("block %s %d %s %d %d %s %s\n", b->name, b->index, kind_name(b->kind), b->rows,
               b->cols, b->structure == ATF_STRUCT_DIAGONAL ? "diagonal" : "matrix",
               b->penalty_spec);
    }
    printf("optional y=%d f0=%d labels=%d test=%d\n", p->y != NULL, p->f0 != NULL,
           p->labels != NULL, p->test != NULL);
    int st = print_residual(p, "residual");
    if (p->test) {
        printf("test_samples %d\n", p->test->N);
        st |= print_residual(p->test, "test_residual");
    }
    if (!st && out && (e = atf_problem_write(out, p, err))) {
        fprintf(stderr, "%s\n", err);
        st = exit_code(e);
    }
    atf_problem_free(p);
    return st;
}

static int result_main(const char *in, const char *out)
{
    char err[ATF_ERRLEN];
    atf_result *r = NULL;
    atf_error e = atf_result_read(in, &r, err);
    if (e) {
        fprintf(stderr, "%s\n", err);
        return exit_code(e);
    }
    printf("status %s\nmethod %s\niterations %d\n", atf_status_name(r->info.status),
           r->info.method,
           r->info.iterations);
    for (int l = 0; l < r->nblocks; l++)
        printf("block %s %d %d k=%d\n", r->blocks[l].name, r->blocks[l].rows, r->blocks[l].cols,
               r->blocks[l].k);
    int st = 0;
    if (out && (e = atf_result_write(out, r, err))) {
        fprintf(stderr, "%s\n", err);
        st = exit_code(e);
    }
    atf_result_free(r);
    return st;
}

int main(int argc, char **argv)
{
    int result = argc > 1 && strcmp(argv[1], "--result") == 0;
    int first = 1 + result;
    if (argc - first < 1 || argc - first > 2) {
        fprintf(stderr, "usage: read_problem [--result] IN [OUT]\n");
        return 2;
    }
    const char *out = argc - first == 2 ? argv[first + 1] : NULL;
    return result ? result_main(argv[first], out) : problem_main(argv[first], out);
}
