/* stats.c — the statistics the experiments report: median, mean ± std over seeds, effective
 * rank of a block's singular values, the largest singular value of a result. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "atf_experiments.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int cmp_desc(const void *a, const void *b)
{
    return cmp_double(b, a);
}

double atf_median(const double *v, int n)
{
    if (n <= 0)
        return NAN;
    double *c = malloc(sizeof(double) * (size_t)n);
    if (!c)
        return NAN;
    memcpy(c, v, sizeof(double) * (size_t)n);
    qsort(c, (size_t)n, sizeof(double), cmp_double);
    double m = n % 2 ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
    free(c);
    return m;
}

void atf_mean_std(const double *v, int n, double *mean, double *std)
{
    double s = 0.0, s2 = 0.0;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) {
            s += v[i];
            k++;
        }
    *mean = k ? s / k : NAN;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i]))
            s2 += (v[i] - *mean) * (v[i] - *mean);
    *std = k > 1 ? sqrt(s2 / (k - 1)) : (k == 1 ? 0.0 : NAN);
}

int atf_effective_rank(const double *d, int k, double energy)
{
    if (k <= 0)
        return 0;
    double *s = malloc(sizeof(double) * (size_t)k);
    if (!s)
        return -1;
    for (int j = 0; j < k; j++)
        s[j] = fabs(d[j]);
    qsort(s, (size_t)k, sizeof(double), cmp_desc); /* entrywise layouts are not sorted */
    double total = 0.0, acc = 0.0;
    for (int j = 0; j < k; j++)
        total += s[j] * s[j];
    int rank = 0;
    if (total > 0.0)
        while (rank < k && acc < energy * total * (1.0 - 1e-12)) {
            acc += s[rank] * s[rank];
            rank++;
        }
    free(s);
    return rank;
}

double atf_result_max_singular(const atf_result *res)
{
    double m = 0.0;
    for (int b = 0; b < res->nblocks; b++)
        for (int j = 0; j < res->blocks[b].k && res->blocks[b].d; j++)
            m = fmax(m, fabs(res->blocks[b].d[j]));
    return m;
}
