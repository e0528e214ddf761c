/* train_diag.c — diagnostics of the factorised model (atf_train.h): the conserved quantities
 * M1ᵀM1 − WWᵀ and M2M2ᵀ − WᵀW − bbᵀ (both I along gradient flow from (I, 0, I, 0); docs/math.md,
 * "The balanced penalty"), singular values of W, B = M1 W M2 and the factors, and Σ ω̃(σ(B))
 * under balanced+balanced. */
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf_train.h"
#include "atf_util.h"

/* ‖K − I‖_F / ‖A‖_F for K = A − C (n × n, A and C given; K overwrites C). */
static double relative_defect(int n, const double *A, double *C)
{
    double num = 0.0, den = 0.0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            size_t k = (size_t)i * n + j;
            double d = A[k] - C[k] - (i == j ? 1.0 : 0.0);
            num += d * d;
            den += A[k] * A[k];
        }
    return den > 0.0 ? sqrt(num / den) : NAN;
}

void atf_model_drift(const atf_model *m, int l, double *drift1, double *drift2)
{
    *drift1 = *drift2 = NAN;
    if (m->kind != ATF_MODEL_FACTORIZED)
        return;
    int P = m->theta0->arch.widths[l], Q = m->theta0->arch.widths[l + 1];
    size_t n = (size_t)(P > Q ? P : Q);
    double *A = malloc(n * n * sizeof *A), *C = malloc(n * n * sizeof *C);
    if (A && C) {
        /* M1ᵀM1 − WWᵀ − I */
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, P, P, P, 1.0, m->M1[l], P,
                    m->M1[l], P, 0.0, A, P);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, P, P, Q, 1.0, m->W[l], Q, m->W[l],
                    Q, 0.0, C, P);
        *drift1 = relative_defect(P, A, C);
        /* M2M2ᵀ − WᵀW − I */
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Q, Q, Q, 1.0, m->M2[l], Q,
                    m->M2[l], Q, 0.0, A, Q);
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Q, Q, P, 1.0, m->W[l], Q, m->W[l],
                    Q, 0.0, C, Q);
        if (m->b[l]) /* with a bias the conserved quantity is M2M2ᵀ − WᵀW − bbᵀ */
            cblas_dger(CblasRowMajor, Q, Q, 1.0, m->b[l], 1, m->b[l], 1, C, Q);
        *drift2 = relative_defect(Q, A, C);
    }
    free(A);
    free(C);
}

/* Singular values (descending) of a rows × cols matrix into a new array; NULL on failure. */
static double *singular_values(int rows, int cols, const double *A)
{
    int k = rows < cols ? rows : cols;
    double *copy = malloc((size_t)rows * cols * sizeof *copy), *s = malloc((size_t)k * sizeof *s);
    if (copy && s) {
        memcpy(copy, A, (size_t)rows * cols * sizeof *copy);
        /* the row-major rows × cols matrix is the column-major cols × rows one (same values) */
        if (LAPACKE_dgesdd(LAPACK_COL_MAJOR, 'N', cols, rows, copy, cols, s, NULL, 1, NULL, 1)) {
            free(s);
            s = NULL;
        }
    } else {
        free(s);
        s = NULL;
    }
    free(copy);
    return s;
}

void atf_factor_diag_free(atf_factor_diag *d)
{
    free(d->sv_W);
    free(d->sv_B);
    free(d->sv_M1);
    free(d->sv_M2);
    memset(d, 0, sizeof *d);
}

static double sum_effective(const atf_penalty *pen, int n, const double *s)
{
    double sum = 0.0;
    for (int j = 0; j < n; j++)
        sum += atf_penalty_value(pen, s[j], NULL);
    return sum;
}

atf_error atf_model_diagnostics(const atf_model *m, int l, const atf_penalty *pen,
                                atf_factor_diag *out, char *err)
{
    memset(out, 0, sizeof *out);
    if (m->kind != ATF_MODEL_FACTORIZED || l < 0 || l >= m->theta0->arch.L) {
        atf_errorf(err, "diagnostics: layer %d of a %s model (the factorized model's layers "
                   "only)", l, atf_model_kind_name(m->kind));
        return ATF_E_USAGE;
    }
    int P = m->theta0->arch.widths[l], Q = m->theta0->arch.widths[l + 1];
    out->P = P;
    out->Q = Q;
    out->nsv = P < Q ? P : Q;
    double *B = malloc((size_t)P * Q * sizeof *B);
    if (B) {
        atf_model_delta(m, l, B, NULL);
        out->norm_B = cblas_dnrm2(P * Q, B, 1);
        out->sv_B = singular_values(P, Q, B);
    }
    free(B);
    out->sv_W = singular_values(P, Q, m->W[l]);
    out->sv_M1 = singular_values(P, P, m->M1[l]);
    out->sv_M2 = singular_values(Q, Q, m->M2[l]);
    if (!out->sv_B || !out->sv_W || !out->sv_M1 || !out->sv_M2) {
        atf_factor_diag_free(out);
        atf_errorf(err, "diagnostics: out of memory or SVD failure for layer %d (%d x %d)",
                   l + 1, P, Q);
        return ATF_E_NOMEM;
    }
    atf_model_drift(m, l, &out->drift1, &out->drift2);
    atf_penalty balanced;
    atf_error e = atf_penalty_parse("balanced+balanced", &balanced, err);
    if (e) {
        atf_factor_diag_free(out);
        return e;
    }
    out->omega_balanced = sum_effective(&balanced, out->nsv, out->sv_B);
    out->omega_penalty = pen ? sum_effective(pen, out->nsv, out->sv_B) : NAN;
    return ATF_OK;
}

double atf_matrix_cosine(size_t n, const double *A, const double *B)
{
    double ab = 0.0, aa = 0.0, bb = 0.0;
    for (size_t i = 0; i < n; i++) {
        ab += A[i] * B[i];
        aa += A[i] * A[i];
        bb += B[i] * B[i];
    }
    return aa > 0.0 && bb > 0.0 ? ab / sqrt(aa * bb) : NAN;
}

/* Σ_j ω̃(σ_j(B)) of a P × Q matrix (NaN if the SVD fails). */
static double omega_of(const atf_penalty *pen, int P, int Q, const double *B)
{
    double *sv = singular_values(P, Q, B);
    double v = sv ? sum_effective(pen, P < Q ? P : Q, sv) : NAN;
    free(sv);
    return v;
}

static const atf_result_block *find_block(const atf_result *res, const char *name)
{
    for (int k = 0; k < res->nblocks; k++)
        if (!strcmp(res->blocks[k].name, name))
            return &res->blocks[k];
    return NULL;
}

atf_error atf_model_compare_result(const atf_model *m, const atf_result *res,
                                   const atf_penalty *pen, atf_model_comparison *out, char *err)
{
    memset(out, 0, sizeof *out);
    atf_penalty balanced;
    if (!pen) {
        atf_error e = atf_penalty_parse("balanced+balanced", &balanced, err);
        if (e)
            return e;
        pen = &balanced;
    }
    int L = m->theta0->arch.L;
    out->L = L;
    double dot = 0.0, nm = 0.0, nr = 0.0, dot_b = 0.0, nm_b = 0.0, nr_b = 0.0;
    for (int l = 0; l < L; l++) {
        int P = m->theta0->arch.widths[l], Q = m->theta0->arch.widths[l + 1];
        char name[16];
        snprintf(name, sizeof name, "W%d", l + 1);
        const atf_result_block *b = find_block(res, name);
        if (!b || b->rows != P || b->cols != Q || !b->B) {
            atf_errorf(err, "result: block %s: %s (the model's layer %d is %d x %d)", name,
                       !b ? "missing" : "shape differs", l + 1, P, Q);
            return ATF_E_INPUT;
        }
        double *B = malloc(((size_t)P * Q + (size_t)Q) * sizeof *B);
        if (!B) {
            atf_errorf(err, "compare: out of memory for layer %d (%d x %d)", l + 1, P, Q);
            return ATF_E_NOMEM;
        }
        size_t n = (size_t)P * Q;
        double *db = B + n;
        atf_model_delta(m, l, B, db);
        snprintf(name, sizeof name, "b%d", l + 1);
        const atf_result_block *bb = find_block(res, name);
        if (bb && bb->rows == 1 && bb->cols == Q && bb->B) {
            dot_b += atf_dot(db, bb->B, (size_t)Q);
            nm_b += atf_dot(db, db, (size_t)Q);
            nr_b += atf_dot(bb->B, bb->B, (size_t)Q);
        }
        out->cosine[l] = atf_matrix_cosine(n, B, b->B);
        out->norm_model[l] = cblas_dnrm2((int)n, B, 1);
        out->norm_result[l] = cblas_dnrm2((int)n, b->B, 1);
        out->omega_model[l] = omega_of(pen, P, Q, B);
        out->omega_result[l] = omega_of(pen, P, Q, b->B);
        out->omega_model_total += out->omega_model[l];
        out->omega_result_total += out->omega_result[l];
        dot += atf_dot(B, b->B, (size_t)n);
        nm += out->norm_model[l] * out->norm_model[l];
        nr += out->norm_result[l] * out->norm_result[l];
        free(B);
    }
    out->cosine_all = nm > 0.0 && nr > 0.0 ? dot / sqrt(nm * nr) : NAN;
    nm_b += nm;
    nr_b += nr;
    out->cosine_all_bias = nm_b > 0.0 && nr_b > 0.0 ? (dot + dot_b) / sqrt(nm_b * nr_b) : NAN;
    return ATF_OK;
}
