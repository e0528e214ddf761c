/* experiment_util.c — small helpers shared by the experiment, sweep and demo commands. */
#include "experiment.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atf_cli.h"

atf_error atf_mkdir_p(const char *path, char *err)
{
    char buf[1024];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        atf_errorf(err, "%s: path too long", path);
        return ATF_E_USAGE;
    }
    for (char *p = buf + 1;; p++) {
        int end = *p == '\0';
        if (*p == '/' || end) {
            *p = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST) {
                atf_errorf(err, "%s: cannot create directory: %s", buf, strerror(errno));
                return ATF_E_IO;
            }
            struct stat st;
            if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode)) {
                atf_errorf(err, "%s: exists and is not a directory", buf);
                return ATF_E_IO;
            }
            if (end)
                break;
            *p = '/';
        }
    }
    return ATF_OK;
}

atf_error atf_write_text(const char *path, const char *text, char *err)
{
    size_t len = strlen(path) + 32;
    char *tmp = malloc(len);
    if (!tmp) {
        atf_errorf(err, "%s: out of memory", path);
        return ATF_E_NOMEM;
    }
    snprintf(tmp, len, "%s.tmp%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    size_t n = strlen(text);
    int ok = f && fwrite(text, 1, n, f) == n;
    if (f) { /* in this order, and always close */
        ok = fflush(f) == 0 && ok;
        ok = fsync(fileno(f)) == 0 && ok;
        ok = fclose(f) == 0 && ok;
    }
    if (!ok || rename(tmp, path) != 0) {
        atf_errorf(err, "%s: cannot write: %s", path, strerror(errno));
        remove(tmp);
        free(tmp);
        return ATF_E_IO;
    }
    free(tmp);
    return ATF_OK;
}

static int cmp_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
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

atf_error atf_resolve_auto_scale(const char *spec, double dmax, double fraction, char *out,
                                 size_t outlen, double *gamma, char *err)
{
    static const char key[] = "scale=auto";
    double g = NAN;
    size_t n = 0;
    const char *p = spec;
    out[0] = '\0';
    while (*p) {
        const char *hit = strstr(p, key);
        size_t copy = hit ? (size_t)(hit - p) : strlen(p);
        if (n + copy + 1 > outlen)
            goto too_long;
        memcpy(out + n, p, copy);
        n += copy;
        out[n] = '\0';
        if (!hit)
            break;
        if (!(dmax > 0) || !(fraction > 0)) {
            atf_errorf(err, "penalty '%s': scale=auto needs a baseline with a nonzero singular "
                       "value and a positive fraction", spec);
            return ATF_E_INPUT;
        }
        g = fraction * dmax * fraction * dmax;
        int w = snprintf(out + n, outlen - n, "scale=%.6g", g);
        if (w < 0 || (size_t)w >= outlen - n)
            goto too_long;
        n += (size_t)w;
        p = hit + sizeof key - 1;
    }
    if (gamma)
        *gamma = g;
    return ATF_OK;
too_long:
    atf_errorf(err, "penalty '%s': too long", spec);
    return ATF_E_USAGE;
}

atf_test_metrics atf_metrics_of(int N, int C, const double *F, const double *y, const int *labels)
{
    atf_test_metrics m = {NAN, NAN};
    if (N <= 0)
        return m;
    m.error = labels ? atf_prediction_class_error(N, C, F, labels)
                     : atf_prediction_error(N, C, F, y);
    long M = (long)N * C;
    double mean = 0.0, var = 0.0, mse = 0.0;
    for (long i = 0; i < M; i++)
        mean += y[i];
    mean /= (double)M;
    for (long i = 0; i < M; i++) {
        var += (y[i] - mean) * (y[i] - mean);
        mse += (F[i] - y[i]) * (F[i] - y[i]);
    }
    m.rel_mse = var > 0 ? mse / var : NAN;
    return m;
}

atf_error atf_result_test_metrics(const atf_problem *prob, const atf_result *res,
                                  atf_test_metrics *out, char *err)
{
    *out = (atf_test_metrics){NAN, NAN};
    const atf_problem *t = prob->test;
    if (!t || t->N <= 0)
        return ATF_OK;
    if (res->nblocks != t->nblocks) {
        atf_errorf(err, "test split: %d blocks but the result has %d", t->nblocks, res->nblocks);
        return ATF_E_INPUT;
    }
    double *F = malloc(sizeof(double) * (size_t)t->M);
    double *y = malloc(sizeof(double) * (size_t)t->M);
    if (!F || !y) {
        free(F), free(y);
        atf_errorf(err, "test split: out of memory");
        return ATF_E_NOMEM;
    }
    /* y = r + f0 holds for every split (r = y − f0); f0 may be absent (then 0). */
    for (int m = 0; m < t->M; m++) {
        double f0 = t->f0 ? t->f0[m] : 0.0;
        F[m] = f0;
        y[m] = t->y ? t->y[m] : t->r[m] + f0;
    }
    for (int b = 0; b < t->nblocks; b++)
        atf_block_apply(&t->blocks[b], res->blocks[b].B, 1.0, F);
    *out = atf_metrics_of(t->N, t->C, F, y, t->labels);
    free(F);
    free(y);
    return ATF_OK;
}

atf_error atf_parse_list(const char *opt, const char *text, long lo, long hi, long *vals,
                            int max, int *n, char *err)
{
    *n = 0;
    char buf[512];
    if (!text || snprintf(buf, sizeof buf, "%s", text) >= (int)sizeof buf || !*buf) {
        atf_errorf(err, "%s: missing or too long list", opt);
        return ATF_E_USAGE;
    }
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (*n >= max) {
            atf_errorf(err, "%s: at most %d values", opt, max);
            return ATF_E_USAGE;
        }
        atf_error e = atf_cli_int(opt, tok, lo, hi, &vals[*n], err);
        if (e)
            return e;
        (*n)++;
    }
    return ATF_OK;
}

void atf_problem_center(atf_problem *p)
{
    if (!p)
        return;
    p->fingerprint[0] = '\0'; /* r changes: results must not claim the file's content */
    for (int m = 0; m < p->M; m++) {
        double f0 = p->f0 ? p->f0[m] : 0.0;
        p->r[m] += f0;
        if (p->f0)
            p->f0[m] = 0.0;
    }
}

atf_error atf_penalty_with_scale(const char *spec, const char *scale, char *out, size_t outlen,
                                 char *err)
{
    size_t n = 0;
    const char *p = spec;
    out[0] = '\0';
    while (*p) {
        size_t tlen = strcspn(p, "+");
        char term[256];
        if (tlen >= sizeof term)
            goto too_long;
        memcpy(term, p, tlen);
        term[tlen] = '\0';
        char *at = strstr(term, "scale=");
        int w;
        if (at) { /* replace the value, keep what follows it */
            size_t vlen = strcspn(at + 6, ",");
            w = snprintf(out + n, outlen - n, "%s%.*s%s%s", n ? "+" : "", (int)(at + 6 - term),
                         term, scale, at + 6 + vlen);
        } else {
            w = snprintf(out + n, outlen - n, "%s%s%sscale=%s", n ? "+" : "", term,
                         strchr(term, ':') ? "," : ":", scale);
        }
        if (w < 0 || (size_t)w >= outlen - n)
            goto too_long;
        n += (size_t)w;
        p += tlen + (p[tlen] == '+');
    }
    return ATF_OK;
too_long:
    atf_errorf(err, "penalty '%s' with scale=%s: too long", spec, scale);
    return ATF_E_USAGE;
}

/* ---- progress ---- */

static void format_duration(double s, char *buf, size_t len)
{
    if (!isfinite(s) || s < 0)
        snprintf(buf, len, "?");
    else if (s < 60)
        snprintf(buf, len, "%.0fs", s);
    else if (s < 3600)
        snprintf(buf, len, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
    else
        snprintf(buf, len, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
}

void atf_progress_start(atf_progress *p, int total, int skipped)
{
    p->total = total;
    p->done = skipped;
    p->skipped = skipped;
    p->t0 = atf_cli_now();
    p->tty = isatty(fileno(stderr));
    if (skipped > 0)
        fprintf(stderr, "resuming: %d of %d runs already recorded\n", skipped, total);
}

void atf_progress_show(atf_progress *p, const char *what)
{
    const int width = 24;
    int fill = p->total > 0 ? (int)((double)width * p->done / p->total) : width;
    char bar[32];
    for (int i = 0; i < width; i++)
        bar[i] = i < fill ? '=' : i == fill ? '>' : ' ';
    bar[width] = '\0';
    double elapsed = atf_cli_now() - p->t0;
    int ran = p->done - p->skipped;
    double eta = ran > 0 ? elapsed / ran * (p->total - p->done) : NAN;
    char el[32], et[32];
    format_duration(elapsed, el, sizeof el);
    format_duration(eta, et, sizeof et);
    fprintf(stderr, "%s[%s] %d/%d  %s elapsed, ETA %s  %s%s", p->tty ? "\r\033[K" : "", bar,
            p->done, p->total, el, et, what ? what : "", p->tty ? "" : "\n");
    fflush(stderr);
}

void atf_progress_step(atf_progress *p)
{
    p->done++;
}

void atf_progress_end(atf_progress *p)
{
    atf_progress_show(p, "done");
    if (p->tty)
        fputc('\n', stderr);
}

/* ---- statistics ---- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
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
