/* test_link.c — a program of the library's users: it includes the public headers only and links
 * libatf.so (tests/api/meson.build); test_link.cpp compiles the same file as C++, so the file is
 * also valid C++ (casts of malloc, no designated initialisers).
 *
 * It checks atf_version() against the headers' ATF_VERSION and solves a 2-variable problem:
 * min Ω̃(B) s.t. B·(1, 2)ᵀ = 5 for a 1 × 2 block B, whose one singular value is ‖B‖, so that
 * every penalty's answer is the min-norm point (1, 2), by the baseline and by ADMM. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* every public header, so that the C++ build checks each one's extern "C" */
#include "atf_data.h"
#include "atf_error.h"
#include "atf_features.h"
#include "atf_kernel.h"
#include "atf_loss.h"
#include "atf_mlp.h"
#include "atf_penalty.h"
#include "atf_problem.h"
#include "atf_result.h"
#include "atf_solver.h"
#include "atf_version.h"

static int failures = 0;

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "FAIL: %s\n", what);
        failures++;
    }
}

static atf_problem *two_variables(void)
{
    atf_problem *p = atf_problem_new(1, 1, 1);
    if (!p)
        return NULL;
    atf_block *b = &p->blocks[0];
    snprintf(b->name, sizeof b->name, "W");
    b->rows = 1;
    b->cols = 2;
    b->kind = ATF_OP_DENSE;
    b->J = (double *)malloc(2 * sizeof(double));
    if (!b->J) {
        atf_problem_free(p);
        return NULL;
    }
    b->J[0] = 1.0;
    b->J[1] = 2.0;
    p->r[0] = 5.0;
    return p;
}

static void solve_with(const atf_problem *p, atf_method method, const char *name)
{
    char err[ATF_ERRLEN] = "";
    atf_settings set = atf_settings_default();
    set.method = method;
    atf_result *res = NULL;
    atf_error e = atf_solve(p, &set, NULL, &res, err);
    if (e != ATF_OK) {
        fprintf(stderr, "%s: %s: %s\n", name, atf_error_name(e), err);
        check(0, name);
        return;
    }
    check(res->info.status == ATF_STATUS_SOLVED, "status solved");
    check(!strcmp(res->info.method, name) && !strcmp(atf_method_name(method), name), "method");
    check(res->structure == ATF_GLOBAL_LAYER, "structure layer");
    const double *B = res->blocks[0].B;
    check(fabs(B[0] - 1.0) < 1e-6 && fabs(B[1] - 2.0) < 1e-6, "B = (1, 2)");
    printf("%s: %s, B = (%.9f, %.9f)\n", name, atf_status_name(res->info.status), B[0], B[1]);
    atf_result_free(res);
}

int main(void)
{
    printf("atf %s (headers %s)\n", atf_version(), ATF_VERSION);
    check(!strcmp(atf_version(), ATF_VERSION), "atf_version() == ATF_VERSION");
    char err[ATF_ERRLEN] = "";
    atf_problem *p = two_variables();
    check(p != NULL, "problem allocated");
    if (!p)
        return 1;
    check(atf_problem_validate(p, "two_variables", err) == ATF_OK, err);
    solve_with(p, ATF_METHOD_BASELINE, "baseline");
    solve_with(p, ATF_METHOD_ADMM, "admm");
    atf_loss loss = atf_loss_default();
    check(loss.kind == ATF_LOSS_INTERPOLATE, "default loss");
    atf_problem_free(p);
    if (failures)
        fprintf(stderr, "%d check(s) failed\n", failures);
    else
        printf("ok\n");
    return failures ? 1 : 0;
}
