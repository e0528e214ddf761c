/* dataset_synthetic.c — the built-in multi-index regression task (no download needed).
 *
 * x ~ N(0, I_d), z = U x with U (r × d) having orthonormal rows, so z ~ N(0, I_r), and
 *     g(z) = ( He2(z_1)/√2 + He3(z_r)/√6 + Σ_{j<r} z_j z_{j+1} ) / √(r+1).
 * Each term has mean 0 and variance 1 and any two are uncorrelated (they are distinct products
 * of orthogonal Hermite polynomials of independent coordinates), so E g = 0 and Var g = 1; a
 * kernel method needs many samples to learn the degree-3 part, a feature learner fewer. */
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "atf_data.h"

static double multi_index_g(const double *z, int r)
{
    double he2 = z[0] * z[0] - 1.0;
    double zr = z[r - 1];
    double he3 = zr * zr * zr - 3.0 * zr;
    double sum = he2 / sqrt(2.0) + he3 / sqrt(6.0);
    for (int j = 0; j + 1 < r; j++)
        sum += z[j] * z[j + 1];
    return sum / sqrt((double)r + 1.0);
}

/* U (r × d row-major) with orthonormal rows: QR of a Gaussian d × r matrix. A row-major r × d
 * array is the column-major d × r matrix with leading dimension d, so LAPACK's Q lands in place. */
static atf_error random_orthonormal_rows(int r, int d, atf_rng *rng, double *U, char *err)
{
    for (int i = 0; i < r * d; i++)
        U[i] = atf_rng_normal(rng);
    double *tau = malloc((size_t)r * sizeof *tau);
    if (!tau) {
        atf_errorf(err, "synthetic: out of memory");
        return ATF_E_NOMEM;
    }
    int info = LAPACKE_dgeqrf(LAPACK_COL_MAJOR, d, r, U, d, tau);
    if (!info)
        info = LAPACKE_dorgqr(LAPACK_COL_MAJOR, d, r, r, U, d, tau);
    free(tau);
    if (info) {
        atf_errorf(err, "synthetic: QR of the random projection failed (info %d)", info);
        return ATF_E_NUMERICAL;
    }
    return ATF_OK;
}

atf_error atf_synthetic_make(const atf_synthetic *s, int n, uint64_t seed, atf_dataset *out,
                             char *err)
{
    memset(out, 0, sizeof *out);
    if (s->d < 1 || s->r < 1 || s->r > s->d || n < 1 || !(s->noise >= 0.0)) {
        atf_errorf(err, "synthetic: need 1 <= r <= d, n >= 1 and noise >= 0 (got d=%d, r=%d, "
                   "n=%d, noise=%g)", s->d, s->r, n, s->noise);
        return ATF_E_USAGE;
    }
    atf_rng rng;
    atf_rng_seed(&rng, seed);
    double *U = malloc((size_t)s->r * s->d * sizeof *U);
    double *Z = malloc((size_t)n * s->r * sizeof *Z);
    out->X = malloc((size_t)n * s->d * sizeof *out->X);
    out->Y = malloc((size_t)n * sizeof *out->Y);
    atf_error e = ATF_OK;
    if (!U || !Z || !out->X || !out->Y) {
        atf_errorf(err, "synthetic: out of memory for n=%d, d=%d", n, s->d);
        e = ATF_E_NOMEM;
    }
    if (!e)
        e = random_orthonormal_rows(s->r, s->d, &rng, U, err);
    if (!e) {
        for (int64_t i = 0; i < (int64_t)n * s->d; i++)
            out->X[i] = atf_rng_normal(&rng);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, s->r, s->d, 1.0, out->X, s->d, U,
                    s->d, 0.0, Z, s->r);
        for (int i = 0; i < n; i++)
            out->Y[i] = multi_index_g(Z + (size_t)i * s->r, s->r);
        for (int i = 0; i < n && s->noise > 0.0; i++)
            out->Y[i] += s->noise * atf_rng_normal(&rng);
        out->N = n;
        out->D = s->d;
        out->C = 1;
    }
    free(U);
    free(Z);
    if (e)
        atf_dataset_free(out);
    return e;
}

void atf_dataset_free(atf_dataset *ds)
{
    free(ds->X);
    free(ds->Y);
    free(ds->labels);
    memset(ds, 0, sizeof *ds);
}

void atf_standardize_rows(int N, int D, double *X)
{
    for (int i = 0; i < N; i++) {
        double *x = X + (size_t)i * D;
        double mean = 0.0;
        for (int j = 0; j < D; j++)
            mean += x[j];
        mean /= D;
        double var = 0.0;
        for (int j = 0; j < D; j++)
            var += (x[j] - mean) * (x[j] - mean);
        var /= D;
        double inv = var > 0.0 ? 1.0 / sqrt(var) : 0.0;
        for (int j = 0; j < D; j++)
            x[j] = (x[j] - mean) * inv;
    }
}
