/* dataset_prep.c — tasks: source parsing, class selection, seeded sampling, train/test split,
 * per-image standardisation and targets (labels, given, teacher, teacher-sign).
 *
 * Image sources are kept as bytes until the examples are chosen, so a 70 000-image pool costs
 * 55 MB, not 440 MB of doubles. */
#include <errno.h>
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atf_tangent.h"
#include "h5io.h"
#include "mlp_internal.h"

#define DEFAULT_MNIST_DIR "data/mnist"
#define DEFAULT_FASHION_DIR "/usr/share/datasets/fashion-mnist"
#define DEFAULT_N 500
#define TEACHER_RCOND 1e-10

/* The examples to choose from: bytes (IDX, scaled by 1/255) or doubles (HDF5, synthetic). */
typedef struct {
    int N, D, C;
    const unsigned char *bytes;
    const double *X;
    const double *Y;      /* NULL: no given targets */
    const int *labels;    /* NULL: no labels */
} pool;

atf_data_options atf_data_options_default(void)
{
    atf_data_options o;
    memset(&o, 0, sizeof o);
    snprintf(o.source, sizeof o.source, "synthetic");
    o.n_train = -1;
    o.n_test = -1;
    o.seed = 1;
    o.standardize = -1;
    o.targets = ATF_TARGETS_AUTO;
    o.teacher_seed = 99991;
    return o;
}

const char *atf_targets_name(atf_targets t)
{
    switch (t) {
    case ATF_TARGETS_LABELS: return "labels";
    case ATF_TARGETS_GIVEN: return "given";
    case ATF_TARGETS_TEACHER: return "teacher";
    case ATF_TARGETS_TEACHER_SIGN: return "teacher-sign";
    default: return "auto";
    }
}

static atf_error parse_u64(const char *opt, const char *text, uint64_t *out, char *err)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (!*text || *end || errno || text[0] == '-') {
        atf_errorf(err, "--%s: '%s' is not a nonnegative integer", opt, text);
        return ATF_E_USAGE;
    }
    *out = v;
    return ATF_OK;
}

static atf_error parse_count(const char *opt, const char *text, int *out, char *err)
{
    uint64_t v;
    if (parse_u64(opt, text, &v, err))
        return ATF_E_USAGE;
    if (v > (1u << 30)) {
        atf_errorf(err, "--%s: %s is too large", opt, text);
        return ATF_E_USAGE;
    }
    *out = (int)v;
    return ATF_OK;
}

static atf_error parse_classes(const char *text, atf_data_options *o, char *err)
{
    o->nclasses = 0;
    const char *p = text;
    while (*p) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 0 || v > (1 << 30) || (*end && *end != ',') ||
            (*end == ',' && !end[1])) {
            atf_errorf(err, "--classes: '%s' is not a comma-separated list of class labels", text);
            return ATF_E_USAGE;
        }
        for (int j = 0; j < o->nclasses; j++) {
            if (o->classes[j] == v) {
                atf_errorf(err, "--classes: class %ld listed twice", v);
                return ATF_E_USAGE;
            }
        }
        if (o->nclasses == ATF_MAX_CLASSES) {
            atf_errorf(err, "--classes: more than %d classes", ATF_MAX_CLASSES);
            return ATF_E_USAGE;
        }
        o->classes[o->nclasses++] = (int)v;
        p = *end ? end + 1 : end;
    }
    if (o->nclasses == 0) {
        atf_errorf(err, "--classes: empty list");
        return ATF_E_USAGE;
    }
    return ATF_OK;
}

static atf_error parse_targets(const char *text, atf_targets *t, char *err)
{
    static const atf_targets all[] = {ATF_TARGETS_AUTO, ATF_TARGETS_LABELS, ATF_TARGETS_GIVEN,
                                      ATF_TARGETS_TEACHER, ATF_TARGETS_TEACHER_SIGN};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if (!strcmp(text, atf_targets_name(all[i]))) {
            *t = all[i];
            return ATF_OK;
        }
    }
    atf_errorf(err, "--targets: '%s' unknown (expected labels, given, teacher or teacher-sign)",
               text);
    return ATF_E_USAGE;
}

atf_error atf_data_option(atf_data_options *o, const char *name, const char *value, int *used,
                          char *err)
{
    *used = 1;
    if (!strcmp(name, "data")) {
        if (!*value || snprintf(o->source, sizeof o->source, "%s", value) >= (int)sizeof o->source) {
            atf_errorf(err, "--data: empty or too long");
            return ATF_E_USAGE;
        }
        return ATF_OK;
    }
    if (!strcmp(name, "classes"))
        return parse_classes(value, o, err);
    if (!strcmp(name, "n-train"))
        return parse_count(name, value, &o->n_train, err);
    if (!strcmp(name, "n-test"))
        return parse_count(name, value, &o->n_test, err);
    if (!strcmp(name, "data-seed"))
        return parse_u64(name, value, &o->seed, err);
    if (!strcmp(name, "teacher-seed"))
        return parse_u64(name, value, &o->teacher_seed, err);
    if (!strcmp(name, "targets"))
        return parse_targets(value, &o->targets, err);
    if (!strcmp(name, "standardize")) {
        if (strcmp(value, "0") && strcmp(value, "1")) {
            atf_errorf(err, "--standardize: '%s' (expected 0 or 1)", value);
            return ATF_E_USAGE;
        }
        o->standardize = value[0] == '1';
        return ATF_OK;
    }
    *used = 0;
    return ATF_OK;
}

/* ---- sources ---- */

/* "synthetic:d=20,r=2,noise=0.1" */
static atf_error parse_synthetic(const char *spec, atf_synthetic *s, char *err)
{
    s->d = 16;
    s->r = 2;
    s->noise = 0.0;
    const char *p = strchr(spec, ':');
    if (!p)
        return ATF_OK;
    p++;
    while (*p) {
        char key[16];
        size_t klen = strcspn(p, "=");
        if (klen == 0 || klen >= sizeof key || !p[klen]) {
            atf_errorf(err, "--data %s: expected key=value pairs (d, r, noise)", spec);
            return ATF_E_USAGE;
        }
        memcpy(key, p, klen);
        key[klen] = '\0';
        p += klen + 1;
        char *end;
        errno = 0;
        double v = strtod(p, &end);
        if (end == p || errno || (*end && *end != ',') || !isfinite(v)) {
            atf_errorf(err, "--data %s: bad value for '%s'", spec, key);
            return ATF_E_USAGE;
        }
        if (!strcmp(key, "d") && v == floor(v) && v >= 1 && v <= 1e6)
            s->d = (int)v;
        else if (!strcmp(key, "r") && v == floor(v) && v >= 1 && v <= 1e6)
            s->r = (int)v;
        else if (!strcmp(key, "noise") && v >= 0)
            s->noise = v;
        else {
            atf_errorf(err, "--data %s: unknown key or bad value '%s' (keys: d, r, noise)", spec,
                       key);
            return ATF_E_USAGE;
        }
        p = *end ? end + 1 : end;
    }
    if (s->r > s->d) {
        atf_errorf(err, "--data %s: r = %d exceeds d = %d", spec, s->r, s->d);
        return ATF_E_USAGE;
    }
    return ATF_OK;
}

/* dir/name or dir/name.gz, whichever exists ("" if neither). */
static void find_idx(const char *dir, const char *name, char *out, size_t len)
{
    snprintf(out, len, "%s/%s", dir, name);
    if (access(out, R_OK) == 0)
        return;
    snprintf(out, len, "%s/%s.gz", dir, name);
    if (access(out, R_OK) == 0)
        return;
    out[0] = '\0';
}

typedef struct {
    atf_idx images, labels;
} idx_pair;

/* "[60, 2]": an IDX file's dimensions, for messages. */
static void idx_shape(const atf_idx *idx, char *buf, size_t len)
{
    int64_t dims[4];
    for (int i = 0; i < idx->ndims && i < 4; i++)
        dims[i] = idx->dims[i];
    h5io_format_shape(buf, len, idx->ndims < 4 ? idx->ndims : 4, dims);
}

static atf_error read_idx_pair(const char *dir, const char *prefix, int required, idx_pair *p,
                               int *found, char *err)
{
    char ipath[ATF_PATHLEN + 64], lpath[ATF_PATHLEN + 64], name[64];
    snprintf(name, sizeof name, "%s-images-idx3-ubyte", prefix);
    find_idx(dir, name, ipath, sizeof ipath);
    snprintf(name, sizeof name, "%s-labels-idx1-ubyte", prefix);
    find_idx(dir, name, lpath, sizeof lpath);
    *found = ipath[0] && lpath[0];
    if (!*found) {
        if (!required && !ipath[0] && !lpath[0])
            return ATF_OK;
        atf_errorf(err, "%s: %s-%s-idx%d-ubyte[.gz] not found%s", dir, prefix,
                   ipath[0] ? "labels" : "images", ipath[0] ? 1 : 3,
                   strstr(dir, "mnist") && !strstr(dir, "fashion")
                       ? " (run scripts/fetch_mnist.sh)" : "");
        return ATF_E_INPUT;
    }
    atf_error e = atf_idx_read(ipath, &p->images, err);
    if (!e)
        e = atf_idx_read(lpath, &p->labels, err);
    if (e)
        return e;
    if (p->images.ndims != 3) {
        char shape[64];
        idx_shape(&p->images, shape, sizeof shape);
        atf_errorf(err, "%s: images have shape %s but need 3 dimensions (count, rows, cols)",
                   ipath, shape);
        return ATF_E_INPUT;
    }
    if (p->labels.ndims != 1) {
        char shape[64];
        idx_shape(&p->labels, shape, sizeof shape);
        atf_errorf(err, "%s: labels have shape %s but must be one-dimensional (one label per "
                   "image)", lpath, shape);
        return ATF_E_INPUT;
    }
    if (p->labels.dims[0] != p->images.dims[0]) {
        atf_errorf(err, "%s: %d labels but %s has %d images", lpath, p->labels.dims[0], ipath,
                   p->images.dims[0]);
        return ATF_E_INPUT;
    }
    return ATF_OK;
}

typedef struct {
    unsigned char *bytes;
    int *labels;
    atf_dataset ds; /* HDF5 or synthetic pools */
} pool_storage;

static void pool_storage_free(pool_storage *s)
{
    free(s->bytes);
    free(s->labels);
    atf_dataset_free(&s->ds);
}

/* train-* plus (when present) t10k-* files of dir, concatenated in that order. */
static atf_error load_idx_dir(const char *dir, pool *pl, pool_storage *st, char *err)
{
    idx_pair parts[2];
    memset(parts, 0, sizeof parts);
    int found[2] = {0, 0};
    atf_error e = read_idx_pair(dir, "train", 1, &parts[0], &found[0], err);
    if (!e)
        e = read_idx_pair(dir, "t10k", 0, &parts[1], &found[1], err);
    int rows = parts[0].images.dims[1], cols = parts[0].images.dims[2];
    if (!e && found[1] && (parts[1].images.dims[1] != rows || parts[1].images.dims[2] != cols)) {
        atf_errorf(err, "%s: t10k images are %dx%d but train images %dx%d", dir,
                   parts[1].images.dims[1], parts[1].images.dims[2], rows, cols);
        e = ATF_E_INPUT;
    }
    if (!e) {
        int n0 = parts[0].images.dims[0], n1 = found[1] ? parts[1].images.dims[0] : 0;
        size_t D = (size_t)rows * cols;
        st->bytes = malloc((size_t)(n0 + n1) * D);
        st->labels = malloc((size_t)(n0 + n1) * sizeof *st->labels);
        if (!st->bytes || !st->labels) {
            atf_errorf(err, "%s: out of memory for %d images of %zu bytes", dir, n0 + n1, D);
            e = ATF_E_NOMEM;
        } else {
            memcpy(st->bytes, parts[0].images.data, (size_t)n0 * D);
            if (n1)
                memcpy(st->bytes + (size_t)n0 * D, parts[1].images.data, (size_t)n1 * D);
            for (int i = 0; i < n0; i++)
                st->labels[i] = parts[0].labels.data[i];
            for (int i = 0; i < n1; i++)
                st->labels[n0 + i] = parts[1].labels.data[i];
            pl->N = n0 + n1;
            pl->D = (int)D;
            pl->bytes = st->bytes;
            pl->labels = st->labels;
        }
    }
    for (int i = 0; i < 2; i++) {
        atf_idx_free(&parts[i].images);
        atf_idx_free(&parts[i].labels);
    }
    return e;
}

static int has_prefix(const char *s, const char *prefix)
{
    size_t n = strlen(prefix);
    return !strncmp(s, prefix, n) && (s[n] == '\0' || s[n] == ':');
}

static atf_error load_pool(const atf_data_options *o, int n_total, pool *pl, pool_storage *st,
                           atf_task *task, char *err)
{
    const char *src = o->source;
    if (has_prefix(src, "synthetic")) {
        snprintf(task->source_name, sizeof task->source_name, "synthetic");
        atf_synthetic s;
        atf_error e = parse_synthetic(src, &s, err);
        if (!e)
            e = atf_synthetic_make(&s, n_total, o->seed, &st->ds, err);
        if (e)
            return e;
    } else if (has_prefix(src, "mnist") || has_prefix(src, "fashion-mnist")) {
        int fashion = src[0] == 'f';
        snprintf(task->source_name, sizeof task->source_name, "%s",
                 fashion ? "fashion-mnist" : "mnist");
        const char *colon = strchr(src, ':');
        const char *dir = colon && colon[1] ? colon + 1
                                            : (fashion ? DEFAULT_FASHION_DIR : DEFAULT_MNIST_DIR);
        return load_idx_dir(dir, pl, st, err);
    } else if (strchr(src, '/') || strchr(src, '.')) {
        snprintf(task->source_name, sizeof task->source_name, "hdf5");
        atf_error e = atf_dataset_read_h5(src, &st->ds, err);
        if (e)
            return e;
    } else {
        atf_errorf(err, "--data: unknown data source '%s' (expected synthetic[:d=..,r=..,noise=..],"
                   " mnist[:DIR], fashion-mnist[:DIR] or an HDF5 file)", src);
        return ATF_E_USAGE;
    }
    pl->N = st->ds.N;
    pl->D = st->ds.D;
    pl->C = st->ds.C;
    pl->X = st->ds.X;
    pl->Y = st->ds.Y;
    pl->labels = st->ds.labels;
    return ATF_OK;
}

/* ---- selection ---- */

static int int_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Class list (given, or every label present in increasing order) and each class's presence. */
static atf_error resolve_classes(const atf_data_options *o, const pool *pl, atf_task *task,
                                 char *err)
{
    if (!pl->labels) {
        if (o->nclasses) {
            atf_errorf(err, "%s: --classes given but the data has no labels", o->source);
            return ATF_E_USAGE;
        }
        task->nclasses = 0;
        return ATF_OK;
    }
    if (o->nclasses) {
        for (int j = 0; j < o->nclasses; j++) {
            int present = 0;
            for (int i = 0; i < pl->N && !present; i++)
                present = pl->labels[i] == o->classes[j];
            if (!present) {
                atf_errorf(err, "%s: class %d absent from the data", o->source, o->classes[j]);
                return ATF_E_INPUT;
            }
        }
        task->nclasses = o->nclasses;
        memcpy(task->classes, o->classes, sizeof o->classes);
        return ATF_OK;
    }
    int *sorted = malloc((size_t)pl->N * sizeof *sorted);
    if (!sorted) {
        atf_errorf(err, "%s: out of memory for the labels of %d examples", o->source, pl->N);
        return ATF_E_NOMEM;
    }
    memcpy(sorted, pl->labels, (size_t)pl->N * sizeof *sorted);
    qsort(sorted, (size_t)pl->N, sizeof *sorted, int_cmp);
    int n = 0;
    for (int i = 0; i < pl->N; i++) {
        if (i > 0 && sorted[i] == sorted[i - 1])
            continue;
        if (n == ATF_MAX_CLASSES) {
            free(sorted);
            atf_errorf(err, "%s: more than %d distinct labels (select some with --classes)",
                       o->source, ATF_MAX_CLASSES);
            return ATF_E_INPUT;
        }
        task->classes[n++] = sorted[i];
    }
    free(sorted);
    task->nclasses = n;
    return ATF_OK;
}

static int class_index(const atf_task *task, int label)
{
    for (int j = 0; j < task->nclasses; j++)
        if (task->classes[j] == label)
            return j;
    return -1;
}

/* Copy the chosen pool rows into ds (X as doubles, Y if given, labels as class indices). */
static atf_error gather(const pool *pl, const atf_task *task, const int *idx, int n,
                        int standardize, atf_dataset *ds, char *err)
{
    memset(ds, 0, sizeof *ds);
    ds->N = n;
    ds->D = pl->D;
    ds->X = malloc((size_t)(n > 0 ? n : 1) * pl->D * sizeof(double));
    if (pl->Y)
        ds->Y = malloc((size_t)(n > 0 ? n : 1) * pl->C * sizeof(double));
    if (pl->labels)
        ds->labels = malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
    if (!ds->X || (pl->Y && !ds->Y) || (pl->labels && !ds->labels)) {
        atf_dataset_free(ds);
        atf_errorf(err, "%s: out of memory for %d examples of dimension %d", task->source, n,
                   pl->D);
        return ATF_E_NOMEM;
    }
    for (int r = 0; r < n; r++) {
        size_t i = (size_t)idx[r];
        double *x = ds->X + (size_t)r * pl->D;
        for (int j = 0; j < pl->D; j++)
            x[j] = pl->bytes ? pl->bytes[i * pl->D + j] / 255.0 : pl->X[i * pl->D + j];
        if (pl->Y)
            memcpy(ds->Y + (size_t)r * pl->C, pl->Y + i * pl->C, (size_t)pl->C * sizeof(double));
        if (pl->labels)
            ds->labels[r] = class_index(task, pl->labels[i]);
    }
    if (standardize)
        atf_standardize_rows(n, pl->D, ds->X);
    ds->C = pl->Y ? pl->C : 0;
    return ATF_OK;
}

/* Seeded choice of n_train + n_test distinct examples among those of the selected classes. */
static atf_error split(const atf_data_options *o, const pool *pl, atf_task *task, int n_train,
                       int n_test, char *err)
{
    int *idx = malloc((size_t)pl->N * sizeof *idx);
    if (!idx) {
        atf_errorf(err, "%s: out of memory for %d example indices", o->source, pl->N);
        return ATF_E_NOMEM;
    }
    int n = 0;
    for (int i = 0; i < pl->N; i++)
        if (!pl->labels || class_index(task, pl->labels[i]) >= 0)
            idx[n++] = i;
    atf_error e = ATF_OK;
    if (n_train + n_test > n || n_train < 1) {
        atf_errorf(err, "%s: %d training + %d test examples requested but %d available%s",
                   o->source, n_train, n_test, n, o->nclasses ? " in the selected classes" : "");
        e = ATF_E_INPUT;
    }
    int standardize = o->standardize >= 0 ? o->standardize : pl->bytes != NULL;
    task->standardized = standardize;
    if (!e) {
        /* Image pools are sampled; synthetic examples are already i.i.d. and a user's file
         * keeps its order (train = first rows, test = the next), so the user controls it. */
        if (pl->bytes) {
            atf_rng rng;
            atf_rng_seed(&rng, o->seed);
            atf_rng_shuffle(&rng, n, idx);
        }
        e = gather(pl, task, idx, n_train, standardize, &task->train, err);
    }
    if (!e)
        e = gather(pl, task, idx + n_train, n_test, standardize, &task->test, err);
    free(idx);
    return e;
}

/* ---- targets ---- */

/* ±1 (two classes: class index 0 ↦ −1, 1 ↦ +1) or one-hot (more classes). */
static atf_error label_targets(const atf_task *task, atf_dataset *ds, char *err)
{
    int K = task->nclasses, C = K == 2 ? 1 : K;
    free(ds->Y);
    ds->Y = calloc((size_t)(ds->N > 0 ? ds->N : 1) * C, sizeof(double));
    if (!ds->Y) {
        atf_errorf(err, "%s: out of memory for the targets of %d examples", task->source, ds->N);
        return ATF_E_NOMEM;
    }
    ds->C = C;
    for (int i = 0; i < ds->N; i++) {
        if (K == 2)
            ds->Y[i] = ds->labels[i] == 1 ? 1.0 : -1.0;
        else
            ds->Y[(size_t)i * C + ds->labels[i]] = 1.0;
    }
    return ATF_OK;
}

/* Z [N × (P+bias)] = last-layer features of the teacher (plus a ones column with bias). */
static atf_error teacher_features(const atf_mlp *t, const atf_dataset *ds, double **Z, int *cols,
                                  char *err)
{
    int L = t->arch.L, P = t->arch.widths[L - 1], bias = t->arch.bias;
    *cols = P + bias;
    *Z = malloc((size_t)(ds->N > 0 ? ds->N : 1) * (*cols) * sizeof **Z);
    if (!*Z) {
        atf_errorf(err, "teacher: out of memory");
        return ATF_E_NOMEM;
    }
    if (ds->N == 0)
        return ATF_OK;
    mlp_cache c;
    atf_error e = mlp_forward_cache(t, ds->N, ds->X, &c, err);
    if (e)
        return e;
    double s = atf_mlp_scale(t, L - 1);
    for (int i = 0; i < ds->N; i++) {
        for (int p = 0; p < P; p++)
            (*Z)[(size_t)i * (*cols) + p] = s * c.h[L - 1][(size_t)i * P + p];
        if (bias)
            (*Z)[(size_t)i * (*cols) + P] = 1.0;
    }
    mlp_cache_free(&c);
    return ATF_OK;
}

/* Y ← Z B with B the least-squares fit of the label targets on the training features. */
static atf_error apply_teacher(const atf_mlp *t, atf_task *task, int sign, char *err)
{
    atf_dataset *tr = &task->train, *te = &task->test;
    int C = tr->C, cols = 0, cols_test = 0;
    double *Z = NULL, *Zt = NULL, *B = NULL;
    atf_error e = teacher_features(t, tr, &Z, &cols, err);
    if (!e)
        e = teacher_features(t, te, &Zt, &cols_test, err);
    int ldb = tr->N > cols ? tr->N : cols;
    if (!e && !(B = calloc((size_t)ldb * C, sizeof *B))) {
        atf_errorf(err, "teacher: out of memory");
        e = ATF_E_NOMEM;
    }
    if (!e) {
        memcpy(B, tr->Y, (size_t)tr->N * C * sizeof *B);
        double *Zcopy = malloc((size_t)tr->N * cols * sizeof *Zcopy);
        double *sv = malloc((size_t)(tr->N < cols ? tr->N : cols) * sizeof *sv);
        lapack_int rank;
        int info = -1;
        if (Zcopy && sv) {
            memcpy(Zcopy, Z, (size_t)tr->N * cols * sizeof *Zcopy);
            /* minimum-norm fit; directions with σ < 1e-10 σ_max are dropped, since their huge
             * coefficients would blow up the test targets without changing the training fit */
            info = LAPACKE_dgelsd(LAPACK_ROW_MAJOR, tr->N, cols, C, Zcopy, cols, B, C, sv,
                                  TEACHER_RCOND, &rank);
        }
        free(Zcopy);
        free(sv);
        if (info) {
            atf_errorf(err, "teacher: least-squares fit failed (info %d)", info);
            e = ATF_E_NUMERICAL;
        }
    }
    /* B now holds the cols × C coefficients in its first rows. */
    for (int part = 0; !e && part < 2; part++) {
        atf_dataset *ds = part ? te : tr;
        const double *Zp = part ? Zt : Z;
        for (int i = 0; i < ds->N; i++) {
            for (int k = 0; k < C; k++) {
                double v = 0.0;
                for (int p = 0; p < cols; p++)
                    v += Zp[(size_t)i * cols + p] * B[(size_t)p * C + k];
                ds->Y[(size_t)i * C + k] = v;
            }
        }
        if (part == 0)
            task->teacher_accuracy = 1.0 - atf_prediction_class_error(ds->N, C, ds->Y, ds->labels);
        for (int i = 0; sign && i < ds->N; i++) {
            double *y = ds->Y + (size_t)i * C;
            if (C == 1) {
                y[0] = y[0] > 0.0 ? 1.0 : -1.0;
            } else {
                int best = 0;
                for (int k = 1; k < C; k++)
                    best = y[k] > y[best] ? k : best;
                for (int k = 0; k < C; k++)
                    y[k] = k == best ? 1.0 : 0.0;
            }
        }
    }
    free(Z);
    free(Zt);
    free(B);
    return e;
}

static atf_error make_targets(const atf_data_options *o, const atf_arch *arch, atf_task *task,
                              int has_y, char *err)
{
    atf_targets t = o->targets;
    if (t == ATF_TARGETS_AUTO)
        t = has_y ? ATF_TARGETS_GIVEN : ATF_TARGETS_LABELS;
    task->targets = t;
    if (t == ATF_TARGETS_GIVEN) {
        if (!has_y) {
            atf_errorf(err, "%s: --targets given but the data has no /Y targets", o->source);
            return ATF_E_USAGE;
        }
        return ATF_OK;
    }
    if (task->nclasses == 0) {
        atf_errorf(err, "%s: --targets %s needs class labels but the data has none", o->source,
                   atf_targets_name(t));
        return ATF_E_USAGE;
    }
    if (task->nclasses < 2) {
        atf_errorf(err, "%s: --targets %s needs at least two classes", o->source,
                   atf_targets_name(t));
        return ATF_E_USAGE;
    }
    atf_error e = label_targets(task, &task->train, err);
    if (!e)
        e = label_targets(task, &task->test, err);
    if (e || t == ATF_TARGETS_LABELS)
        return e;
    if (!arch) {
        atf_errorf(err, "teacher targets need an architecture");
        return ATF_E_USAGE;
    }
    atf_arch ta = *arch;
    if ((e = atf_arch_fit_task(&ta, task, err)))
        return e;
    if (ta.L < 2) {
        atf_errorf(err, "teacher targets need at least one hidden layer (--widths)");
        return ATF_E_USAGE;
    }
    atf_mlp *teacher = NULL;
    if ((e = atf_mlp_create(&ta, o->teacher_seed, &teacher, err)))
        return e;
    e = apply_teacher(teacher, task, t == ATF_TARGETS_TEACHER_SIGN, err);
    atf_mlp_free(teacher);
    return e;
}

/* "the MLP file m.h5" or "--widths", and "data.h5: /X" or "--data SRC", for fit messages. */
static void fit_names(const atf_arch *arch, const atf_task *task, const char *item, char *widths,
                      char *data, size_t len)
{
    if (arch->origin[0])
        snprintf(widths, len, "%s", arch->origin);
    else
        snprintf(widths, len, "--widths");
    if (!strcmp(task->source_name, "hdf5") &&
        (item[1] == 'X' || task->targets == ATF_TARGETS_GIVEN))
        snprintf(data, len, "%s: %s", task->source, item);
    else
        snprintf(data, len, "--data %s: %s", task->source, item[1] == 'X' ? "inputs" :
                 "targets");
}

atf_error atf_arch_fit_task(atf_arch *arch, const atf_task *task, char *err)
{
    int D = task->train.D, C = task->train.C;
    if (arch->widths[0] == 0)
        arch->widths[0] = D;
    if (arch->widths[arch->L] == 0)
        arch->widths[arch->L] = C;
    char widths[ATF_PATHLEN + 16], data[ATF_PATHLEN + 32];
    atf_error e = arch->origin[0] ? ATF_E_INPUT : ATF_E_USAGE;
    if (arch->widths[0] != D) {
        fit_names(arch, task, "/X", widths, data, sizeof widths);
        atf_errorf(err, "%s: dimension %d but %s has input width %d", data, D, widths,
                   arch->widths[0]);
        return e;
    }
    if (arch->widths[arch->L] != C) {
        fit_names(arch, task, "/Y", widths, data, sizeof widths);
        atf_errorf(err, "%s: %d output%s but %s has output width %d", data, C,
                   C == 1 ? "" : "s", widths, arch->widths[arch->L]);
        return e;
    }
    return ATF_OK;
}

void atf_task_free(atf_task *task)
{
    atf_dataset_free(&task->train);
    atf_dataset_free(&task->test);
}

atf_error atf_task_load(const atf_data_options *o, const atf_arch *arch, atf_task *task,
                        char *err)
{
    memset(task, 0, sizeof *task);
    task->teacher_accuracy = NAN;
    snprintf(task->source, sizeof task->source, "%s", o->source);
    int n_train = o->n_train >= 0 ? o->n_train : DEFAULT_N;
    int n_test = o->n_test >= 0 ? o->n_test : DEFAULT_N;
    pool pl;
    memset(&pl, 0, sizeof pl);
    pool_storage st;
    memset(&st, 0, sizeof st);
    atf_error e = load_pool(o, n_train + n_test, &pl, &st, task, err);
    if (!e && !strcmp(task->source_name, "hdf5")) {
        /* a user file is used whole by default */
        if (o->n_test < 0)
            n_test = 0;
        if (o->n_train < 0)
            n_train = pl.N - n_test;
    }
    if (!e)
        e = resolve_classes(o, &pl, task, err);
    if (!e)
        e = split(o, &pl, task, n_train, n_test, err);
    if (!e)
        e = make_targets(o, arch, task, pl.Y != NULL, err);
    pool_storage_free(&st);
    if (e)
        atf_task_free(task);
    return e;
}
