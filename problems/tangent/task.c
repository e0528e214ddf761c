/* task.c — loading a task (atf_task_load): source parsing, the IDX directory search, class
 * selection, seeded sampling, train/test split, per-image standardisation and targets (labels,
 * given, teacher, teacher-sign).
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

#include "atf_data.h"
#include "atf_mlp.h"
#include "h5io.h"
#include "mlp_internal.h"

#define DEFAULT_N 500
#define TEACHER_RCOND 1e-10

/* The examples to choose from: bytes (IDX, scaled by 1/255) or doubles (HDF5, synthetic). */
typedef struct {
    int N, D, C;
    const unsigned char *bytes;
    const double *X;
    const double *Y;      /* NULL: no given targets */
    const int *labels;    /* NULL: no labels */
    int n_official_train; /* image pools with t10k-* files: the first rows, from train-* */
} pool;

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
            atf_errorf(err, "%s: expected key=value pairs (d, r, noise)", spec);
            return ATF_E_USAGE;
        }
        memcpy(key, p, klen);
        key[klen] = '\0';
        p += klen + 1;
        char *end;
        errno = 0;
        double v = strtod(p, &end);
        if (end == p || errno || (*end && *end != ',') || !isfinite(v)) {
            atf_errorf(err, "%s: bad value for '%s'", spec, key);
            return ATF_E_USAGE;
        }
        if (!strcmp(key, "d") && v == floor(v) && v >= 1 && v <= 1e6)
            s->d = (int)v;
        else if (!strcmp(key, "r") && v == floor(v) && v >= 1 && v <= 1e6)
            s->r = (int)v;
        else if (!strcmp(key, "noise") && v >= 0)
            s->noise = v;
        else {
            atf_errorf(err, "%s: unknown key or bad value '%s' (keys: d, r, noise)", spec,
                       key);
            return ATF_E_USAGE;
        }
        p = *end ? end + 1 : end;
    }
    if (s->r > s->d) {
        atf_errorf(err, "%s: r = %d exceeds d = %d", spec, s->r, s->d);
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

/* 1 if dir holds the training images and labels (plain or .gz). */
static int has_train_files(const char *dir)
{
    char path[ATF_PATHLEN + 64];
    find_idx(dir, "train-images-idx3-ubyte", path, sizeof path);
    if (!path[0])
        return 0;
    find_idx(dir, "train-labels-idx1-ubyte", path, sizeof path);
    return path[0] != '\0';
}

/* The first ROOT/name among the data roots that holds the training files, into dir; else an
 * error listing every directory searched. The working directory is never searched on its own. */
static atf_error search_data_dirs(const atf_data_options *o, const char *name, char *dir,
                                  char *err)
{
    if (o->ndata_dirs == 0) {
        atf_errorf(err, "%s: no data directory to search (give %s:DIR)", name, name);
        return ATF_E_INPUT;
    }
    char searched[ATF_ERRLEN] = "";
    size_t used = 0;
    for (int j = 0; j < o->ndata_dirs; j++) {
        int len = snprintf(dir, ATF_PATHLEN, "%s/%s", o->data_dirs[j], name);
        if (len > 0 && len < ATF_PATHLEN && has_train_files(dir)) /* a cut path is not it */
            return ATF_OK;
        if (used < sizeof searched) {
            int w = snprintf(searched + used, sizeof searched - used, "%s%s", j ? ", " : "", dir);
            used += w > 0 ? (size_t)w : 0;
        }
    }
    dir[0] = '\0';
    atf_errorf(err, "%s: train-images-idx3-ubyte[.gz] and train-labels-idx1-ubyte[.gz] not found "
               "in %s%s", name, searched,
               strcmp(name, "mnist") ? "" : " (run scripts/fetch_mnist.sh)");
    return ATF_E_INPUT;
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
            pl->n_official_train = n1 ? n0 : 0;
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
        if (colon && colon[1])
            snprintf(task->data_dir, sizeof task->data_dir, "%s", colon + 1);
        else if (search_data_dirs(o, task->source_name, task->data_dir, err))
            return ATF_E_INPUT;
        return load_idx_dir(task->data_dir, pl, st, err);
    } else if (strchr(src, '/') || strchr(src, '.')) {
        snprintf(task->source_name, sizeof task->source_name, "hdf5");
        atf_error e = atf_dataset_read_h5(src, &st->ds, err);
        if (e)
            return e;
    } else {
        atf_errorf(err, "unknown data source '%s' (expected synthetic[:d=..,r=..,noise=..],"
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
            atf_errorf(err, "%s: classes given but the data has no labels", o->source);
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
            atf_errorf(err, "%s: more than %d distinct labels (select some with classes)",
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

/* The rows of pool rows [from, to) in the selected classes into idx; their number. */
static int select_rows(const pool *pl, const atf_task *task, int from, int to, int *idx)
{
    int n = 0;
    for (int i = from; i < to; i++)
        if (!pl->labels || class_index(task, pl->labels[i]) >= 0)
            idx[n++] = i;
    return n;
}

/* The candidate rows, training candidates first: all rows (*n_first = n), or with the official
 * split the train-* rows then the t10k-* rows. Image pools are shuffled (each part on its own);
 * synthetic examples are already i.i.d. and a user's file keeps its order (train = first rows,
 * test = the next), so the user controls it. */
static atf_error candidate_rows(const atf_data_options *o, const pool *pl, const atf_task *task,
                                int *idx, int *n, int *n_first, char *err)
{
    int official = o->official_split && pl->bytes;
    if (o->official_split && !pl->n_official_train) {
        atf_errorf(err, "%s: the official split needs the t10k-* files of an image data set",
                   o->source);
        return ATF_E_USAGE;
    }
    *n_first = select_rows(pl, task, 0, official ? pl->n_official_train : pl->N, idx);
    *n = *n_first + (official ? select_rows(pl, task, pl->n_official_train, pl->N,
                                            idx + *n_first) : 0);
    if (pl->bytes) {
        atf_rng rng;
        atf_rng_seed(&rng, o->seed);
        atf_rng_shuffle(&rng, *n_first, idx);
        atf_rng_shuffle(&rng, *n - *n_first, idx + *n_first);
    }
    if (!official)
        *n_first = *n; /* one pool: training examples first, test examples after them */
    return ATF_OK;
}

/* Seeded choice of n_train + n_test distinct examples among those of the selected classes
 * (n_train 0: every candidate the test examples leave). */
static atf_error split(const atf_data_options *o, const pool *pl, atf_task *task, int n_train,
                       int n_test, char *err)
{
    int *idx = malloc((size_t)(pl->N > 0 ? pl->N : 1) * sizeof *idx);
    if (!idx) {
        atf_errorf(err, "%s: out of memory for %d example indices", o->source, pl->N);
        return ATF_E_NOMEM;
    }
    int n = 0, n_first = 0;
    atf_error e = candidate_rows(o, pl, task, idx, &n, &n_first, err);
    int official = n_first < n;
    int train_avail = official ? n_first : n - n_test, test_avail = official ? n - n_first : n;
    if (!e && n_train == 0)
        n_train = train_avail;
    if (!e && (n_train < 1 || n_train > train_avail || n_test > test_avail)) {
        if (official)
            atf_errorf(err, "%s: %d training + %d test examples requested but the official "
                       "split has %d + %d%s", o->source, n_train, n_test, n_first, n - n_first,
                       o->nclasses ? " in the selected classes" : "");
        else
            atf_errorf(err, "%s: %d training + %d test examples requested but %d available%s",
                       o->source, n_train, n_test, n,
                       o->nclasses ? " in the selected classes" : "");
        e = ATF_E_INPUT;
    }
    int standardize = o->standardize >= 0 ? o->standardize : pl->bytes != NULL;
    task->standardized = standardize;
    if (!e)
        e = gather(pl, task, idx, n_train, standardize, &task->train, err);
    if (!e)
        e = gather(pl, task, idx + (official ? n_first : n_train), n_test, standardize,
                   &task->test, err);
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
    int L = t->arch.L, P = t->arch.widths[L - 1], bias = t->arch.bias[L - 1];
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
            atf_errorf(err, "%s: targets given but the data has no /Y targets", o->source);
            return ATF_E_USAGE;
        }
        return ATF_OK;
    }
    if (task->nclasses == 0) {
        atf_errorf(err, "%s: targets %s need class labels but the data has none", o->source,
                   atf_targets_name(t));
        return ATF_E_USAGE;
    }
    if (task->nclasses < 2) {
        atf_errorf(err, "%s: targets %s need at least two classes", o->source,
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
        atf_errorf(err, "teacher targets need at least one hidden layer (widths)");
        return ATF_E_USAGE;
    }
    atf_mlp *teacher = NULL;
    if ((e = atf_mlp_create(&ta, o->teacher_seed, &teacher, err)))
        return e;
    e = apply_teacher(teacher, task, t == ATF_TARGETS_TEACHER_SIGN, err);
    atf_mlp_free(teacher);
    return e;
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
