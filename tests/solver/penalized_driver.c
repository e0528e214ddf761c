/* penalized_driver.c — test driver for test_penalized_refs.py: solves the penalized problem (16)
 * of a problem file with atf_solve (settings.loss, method fista or newton) and prints one line of JSON
 * (status, objective, loss, penalty, certificates, and every block's B as a row-major list).
 *
 * Usage: penalized_driver PROBLEM.h5 LOSS [PENALTY|-] [EPS_REL] [METHOD] */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "atf_solver.h"
#include "atf_report.h"

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s PROBLEM.h5 LOSS [PENALTY|-] [EPS_REL] [METHOD]\n", argv[0]);
        return 2;
    }
    char err[ATF_ERRLEN] = "";
    atf_problem *p = NULL;
    atf_settings set = atf_settings_default();
    atf_error e = atf_loss_parse(argv[2], &set.loss, err);
    if (e == ATF_OK)
        e = atf_problem_read(argv[1], &p, err);
    if (e == ATF_OK && argc > 3 && argv[3][0] != '-')
        e = atf_problem_set_penalty(p, argv[3], err);
    set.method = ATF_METHOD_FISTA;
    if (e == ATF_OK && argc > 5)
        e = atf_method_parse(argv[5], &set.method);
    if (e != ATF_OK) {
        fprintf(stderr, "%s\n", err);
        atf_problem_free(p);
        return 2;
    }
    set.eps_rel = argc > 4 ? atof(argv[4]) : 1e-9;
    set.max_iter = 100000;
    atf_result *res = NULL;
    e = atf_solve(p, &set, NULL, &res, err);
    if (e) {
        fprintf(stderr, "%s\n", err);
        atf_problem_free(p);
        return 1;
    }
    json_t *o = json_object(), *blocks = json_object();
    json_object_set_new(o, "status", json_string(atf_status_name(res->info.status)));
    json_object_set_new(o, "objective", json_real(res->info.objective));
    json_object_set_new(o, "loss", json_real(res->info.loss_value));
    json_object_set_new(o, "penalty", json_real(res->info.penalty_value));
    json_object_set_new(o, "pg_residual", json_real(res->info.pg_residual));
    json_object_set_new(o, "duality_gap", atf_json_number(res->info.duality_gap));
    json_object_set_new(o, "stationarity", atf_json_number(res->info.stationarity));
    json_object_set_new(o, "iterations", json_integer(res->info.iterations));
    for (int l = 0; l < res->nblocks; l++) {
        json_t *B = json_array();
        for (int j = 0; j < res->blocks[l].rows * res->blocks[l].cols; j++)
            json_array_append_new(B, json_real(res->blocks[l].B[j]));
        json_object_set_new(blocks, res->blocks[l].name, B);
    }
    json_object_set_new(o, "blocks", blocks);
    char *line = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(17));
    printf("%s\n", line);
    free(line);
    json_decref(o);
    atf_status res_status = res->info.status;
    if (res_status != ATF_STATUS_SOLVED)
        fprintf(stderr, "%s\n", err);
    atf_result_free(res);
    atf_problem_free(p);
    return res_status == ATF_STATUS_SOLVED ? 0 : 1; /* err explains any other status */
}
