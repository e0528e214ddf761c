/* rowstore.c — append-only CSV + JSON-lines tables with per-row fsync and resume. */
#include "rowstore.h"

#include <jansson.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atf_experiments.h"
#include "atf_solver.h"
#include "atf_util.h"
#include "atf_report.h"

struct atf_rowstore {
    char *csv_path, *jsonl_path;
    char key_field[ATF_ROW_NAMELEN];
    FILE *csv, *jsonl;
    int lock_fd;      /* write lock on CSV_PATH.lock: one writer per table */
    char *lock_path;  /* set once the lock is ours: the file is removed on close */
    int have_header;
    atf_row header;   /* column names in names[], values unused */
    atf_row *rows;
    int nrows, cap;
    int new_columns;  /* atf_rowstore_take_new_columns */
};

/* ---- rows ---- */

void atf_row_clear(atf_row *row)
{
    row->nfields = 0;
}

static int field_index(const atf_row *row, const char *name)
{
    for (int i = 0; i < row->nfields; i++)
        if (!strcmp(row->names[i], name))
            return i;
    return -1;
}

void atf_row_str(atf_row *row, const char *name, const char *value)
{
    int i = field_index(row, name);
    if (i < 0) {
        if (row->nfields >= ATF_ROW_MAXFIELDS)
            return;
        i = row->nfields++;
        snprintf(row->names[i], ATF_ROW_NAMELEN, "%s", name);
    }
    snprintf(row->values[i], ATF_ROW_VALUELEN, "%s", value ? value : "");
}

void atf_row_num(atf_row *row, const char *name, double value)
{
    char buf[64];
    if (isnan(value))
        snprintf(buf, sizeof buf, "nan");
    else if (isinf(value))
        snprintf(buf, sizeof buf, value > 0 ? "inf" : "-inf");
    else
        snprintf(buf, sizeof buf, "%.10g", value);
    atf_row_str(row, name, buf);
}

void atf_row_int(atf_row *row, const char *name, long value)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%ld", value);
    atf_row_str(row, name, buf);
}

const char *atf_row_get(const atf_row *row, const char *name)
{
    int i = field_index(row, name);
    return i < 0 ? NULL : row->values[i];
}

double atf_row_getnum(const atf_row *row, const char *name)
{
    const char *v = atf_row_get(row, name);
    if (!v || !*v)
        return NAN;
    char *end;
    double x = strtod(v, &end);
    return *end ? NAN : x;
}

/* ---- CSV and JSON text ---- */

int atf_csv_field(const char *s, char *buf, size_t len)
{
    size_t n = 0;
    int quote = strpbrk(s, ",\"\n\r") != NULL;
#define PUT(c)                                                                                    \
    do {                                                                                          \
        if (n + 1 < len)                                                                          \
            buf[n] = (c);                                                                         \
        n++;                                                                                      \
    } while (0)
    if (quote)
        PUT('"');
    for (; *s; s++) {
        if (*s == '"')
            PUT('"');
        PUT(*s);
    }
    if (quote)
        PUT('"');
#undef PUT
    if (len > 0)
        buf[n < len ? n : len - 1] = '\0';
    return (int)n;
}

static void csv_field(FILE *f, const char *s)
{
    char buf[2 * ATF_ROW_VALUELEN + 3]; /* every character doubled, plus the quotes */
    atf_csv_field(s, buf, sizeof buf);
    fputs(buf, f);
}

static void csv_line(FILE *f, const atf_row *row, int names)
{
    for (int i = 0; i < row->nfields; i++) {
        if (i)
            fputc(',', f);
        csv_field(f, names ? row->names[i] : row->values[i]);
    }
    fputc('\n', f);
}

/* The newline that ends the record starting at p (a newline inside a quoted field belongs to
 * the field; a doubled quote toggles the state twice), or NULL when the record is not ended. */
static char *record_end(char *p)
{
    int quoted = 0;
    for (; *p; p++) {
        if (*p == '"')
            quoted = !quoted;
        else if (*p == '\n' && !quoted)
            return p;
    }
    return NULL;
}

/* Split one CSV record (without its final newline) into out->values; returns the number of
 * fields or -1 for a malformed record (unterminated quote, too many fields). */
static int csv_split(const char *line, atf_row *out)
{
    int n = 0;
    const char *p = line;
    for (;;) {
        if (n >= ATF_ROW_MAXFIELDS)
            return -1;
        char *dst = out->values[n];
        int len = 0;
        if (*p == '"') {
            p++;
            for (;;) {
                if (!*p)
                    return -1;
                if (*p == '"' && p[1] == '"')
                    p++;
                else if (*p == '"')
                    break;
                if (len < ATF_ROW_VALUELEN - 1)
                    dst[len++] = *p;
                p++;
            }
            p++;
        } else {
            while (*p && *p != ',') {
                if (len < ATF_ROW_VALUELEN - 1)
                    dst[len++] = *p;
                p++;
            }
        }
        dst[len] = '\0';
        n++;
        if (*p == ',') {
            p++;
            continue;
        }
        return *p ? -1 : n;
    }
}

static int is_number(const char *s)
{
    if (!*s)
        return 0;
    char *end;
    double x = strtod(s, &end);
    return !*end && isfinite(x) && strcmp(s, "nan") && strcmp(s, "inf");
}

/* A field's JSON value: integers and other finite numbers as numbers, nan/inf as null (JSON has
 * neither), anything else as a string. */
static json_t *json_value(const char *v)
{
    if (!strcmp(v, "nan") || !strcmp(v, "inf") || !strcmp(v, "-inf"))
        return json_null();
    if (!is_number(v))
        return atf_json_text(v);
    char *end;
    errno = 0;
    long long i = strtoll(v, &end, 10);
    if (!*end && !errno)
        return json_integer(i);
    return json_real(strtod(v, NULL));
}

int atf_row_json(const atf_row *row, char *buf, int len)
{
    json_t *o = json_object();
    for (int i = 0; o && i < row->nfields; i++) {
        /* Keys must be UTF-8 too: the same replacement as atf_json_text for those that are not. */
        json_t *key = atf_json_text(row->names[i]);
        json_object_set_new(o, key ? json_string_value(key) : "?", json_value(row->values[i]));
        json_decref(key);
    }
    /* ", " and ": " separators (not JSON_COMPACT); 15 significant digits reproduce every value
     * of the CSV, whose numbers have at most 10 (atf_row_num). */
    char *text = o ? json_dumps(o, JSON_REAL_PRECISION(15)) : NULL;
    json_decref(o);
    int n = snprintf(buf, len > 0 ? (size_t)len : 0, "%s", text ? text : "{}");
    free(text);
    return n;
}

char *atf_row_json_line(const atf_row *row)
{
    int need = atf_row_json(row, NULL, 0) + 2;
    char *buf = malloc((size_t)need);
    if (buf) {
        atf_row_json(row, buf, need);
        strcat(buf, "\n");
    }
    return buf;
}

/* ---- files ---- */

static atf_error sync_file(FILE *f, const char *path, char *err)
{
    if (fflush(f) != 0 || fsync(fileno(f)) != 0) {
        atf_errorf(err, "%s: write failed: %s", path, strerror(errno));
        return ATF_E_IO;
    }
    return ATF_OK;
}

/* Read a whole file (NULL content and ATF_OK if it does not exist). */
static atf_error slurp(const char *path, char **text, long *size, char *err)
{
    *text = NULL;
    *size = 0;
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT)
            return ATF_OK;
        atf_errorf(err, "%s: cannot open: %s", path, strerror(errno));
        return ATF_E_IO;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        fclose(f);
        atf_errorf(err, "%s: cannot read", path);
        return ATF_E_IO;
    }
    fclose(f);
    buf[n] = '\0';
    *text = buf;
    *size = n;
    return ATF_OK;
}

static atf_error push_row(atf_rowstore *st, const atf_row *row, char *err)
{
    if (st->nrows == st->cap) {
        int cap = st->cap ? 2 * st->cap : 16;
        atf_row *r = realloc(st->rows, sizeof(atf_row) * (size_t)cap);
        if (!r) {
            atf_errorf(err, "%s: out of memory", st->csv_path);
            return ATF_E_NOMEM;
        }
        st->rows = r;
        st->cap = cap;
    }
    st->rows[st->nrows++] = *row;
    return ATF_OK;
}

/* The first record: the column names; the key column must be among them. */
static atf_error take_header(atf_rowstore *st, const atf_row *row, int n, int *key_col, char *err)
{
    st->header.nfields = n;
    for (int i = 0; i < n; i++)
        snprintf(st->header.names[i], ATF_ROW_NAMELEN, "%.*s", ATF_ROW_NAMELEN - 1,
                 row->values[i]);
    st->have_header = 1;
    *key_col = field_index(&st->header, st->key_field);
    if (*key_col < 0) {
        atf_errorf(err, "%s: header has no '%s' column", st->csv_path, st->key_field);
        return ATF_E_INPUT;
    }
    return ATF_OK;
}

/* A data record of n fields (record number lineno): named by the header, with a new key. */
static atf_error take_row(atf_rowstore *st, atf_row *row, int n, int key_col, int lineno,
                          char *err)
{
    if (n != st->header.nfields) {
        atf_errorf(err, "%s: line %d: %d fields but the header has %d", st->csv_path, lineno, n,
                   st->header.nfields);
        return ATF_E_INPUT;
    }
    row->nfields = n;
    for (int i = 0; i < n; i++)
        memcpy(row->names[i], st->header.names[i], ATF_ROW_NAMELEN);
    if (atf_rowstore_has(st, row->values[key_col])) {
        atf_errorf(err, "%s: line %d: duplicate key '%s'", st->csv_path, lineno,
                   row->values[key_col]);
        return ATF_E_INPUT;
    }
    return push_row(st, row, err);
}

/* Cut a torn tail (a record without its line break) off the file and the text. */
static atf_error cut_torn_tail(atf_rowstore *st, char *text, long size, char *err)
{
    long complete = 0; /* up to the end of the last whole record */
    for (char *end = text; (end = record_end(end)); end++)
        complete = end - text + 1;
    if (complete < size && truncate(st->csv_path, complete) != 0) {
        atf_errorf(err, "%s: cannot cut the torn last line: %s", st->csv_path, strerror(errno));
        return ATF_E_IO;
    }
    text[complete] = '\0';
    return ATF_OK;
}

/* Parse the complete records of the CSV; cut a torn tail. */
static atf_error load_csv(atf_rowstore *st, char *err)
{
    char *text;
    long size;
    atf_error e = slurp(st->csv_path, &text, &size, err);
    if (e || !text)
        return e;
    e = cut_torn_tail(st, text, size, err);
    int lineno = 0; /* records, counted as lines when no field holds a line break */
    int key_col = -1;
    for (char *line = text, *next; !e && *line; line = next) {
        next = record_end(line);
        *next++ = '\0';
        lineno++;
        atf_row row;
        int n = csv_split(line, &row);
        if (n < 0) {
            atf_errorf(err, "%s: line %d: malformed CSV", st->csv_path, lineno);
            e = ATF_E_INPUT;
        } else {
            e = lineno == 1 ? take_header(st, &row, n, &key_col, err)
                            : take_row(st, &row, n, key_col, lineno, err);
        }
    }
    free(text);
    return e;
}

/* The JSON lines the CSV implies; rewrite the file atomically unless it already says exactly
 * that (after a crash between the two appends it lacks the last row). */
static atf_error sync_jsonl(atf_rowstore *st, char *err)
{
    char *text;
    long size;
    atf_error e = slurp(st->jsonl_path, &text, &size, err);
    if (e)
        return e;
    size_t cap = 2, n = 0;
    for (int i = 0; i < st->nrows; i++)
        cap += (size_t)atf_row_json(&st->rows[i], NULL, 0) + 2;
    char *want = malloc(cap);
    if (!want) {
        free(text);
        atf_errorf(err, "%s: out of memory", st->jsonl_path);
        return ATF_E_NOMEM;
    }
    want[0] = '\0';
    for (int i = 0; i < st->nrows; i++) {
        n += (size_t)atf_row_json(&st->rows[i], want + n, (int)(cap - n));
        want[n++] = '\n';
        want[n] = '\0';
    }
    int same = text ? !strcmp(text, want) : n == 0;
    free(text);
    if (!same)
        e = atf_write_text_atomic(st->jsonl_path, want, n, err);
    free(want);
    return e;
}

/* A POSIX record lock on a separate file CSV_PATH.lock (closing any descriptor of a locked file
 * drops the lock, and the CSV itself is opened and closed while loading). Non-blocking: a second
 * run on the same table stops at once instead of interleaving rows with the first. */
static atf_error take_lock(atf_rowstore *st, char *err)
{
    size_t len = strlen(st->csv_path) + 8;
    char *path = malloc(len);
    if (!path) {
        atf_errorf(err, "%s: out of memory", st->csv_path);
        return ATF_E_NOMEM;
    }
    snprintf(path, len, "%s.lock", st->csv_path);
    st->lock_fd = open(path, O_RDWR | O_CREAT, 0666);
    atf_error e = ATF_OK;
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    if (st->lock_fd < 0) {
        atf_errorf(err, "%s: cannot create: %s", path, strerror(errno));
        e = ATF_E_IO;
    } else if (fcntl(st->lock_fd, F_SETLK, &fl) != 0) {
        atf_errorf(err, "%s: another atf run is writing this table (lock %s held)", st->csv_path,
                   path);
        e = ATF_E_USAGE;
    }
    if (e)
        free(path); /* not ours: the other run's lock file stays */
    else
        st->lock_path = path;
    return e;
}

atf_error atf_rowstore_open(const char *csv_path, const char *jsonl_path, const char *key_field,
                            atf_rowstore **out, char *err)
{
    *out = NULL;
    atf_rowstore *st = calloc(1, sizeof *st);
    if (!st) {
        atf_errorf(err, "%s: out of memory", csv_path);
        return ATF_E_NOMEM;
    }
    st->csv_path = strdup(csv_path);
    st->jsonl_path = strdup(jsonl_path);
    snprintf(st->key_field, sizeof st->key_field, "%s", key_field);
    st->lock_fd = -1;
    atf_error e = st->csv_path && st->jsonl_path ? ATF_OK : ATF_E_NOMEM;
    if (e)
        atf_errorf(err, "%s: out of memory", csv_path);
    if (!e)
        e = take_lock(st, err);
    if (!e)
        e = load_csv(st, err);
    if (!e)
        e = sync_jsonl(st, err);
    if (!e) {
        st->csv = fopen(csv_path, "ab");
        st->jsonl = fopen(jsonl_path, "ab");
        if (!st->csv || !st->jsonl) {
            atf_errorf(err, "%s: cannot open for appending: %s", !st->csv ? csv_path : jsonl_path,
                       strerror(errno));
            e = ATF_E_IO;
        }
    }
    if (e) {
        atf_rowstore_close(st);
        return e;
    }
    *out = st;
    return ATF_OK;
}

void atf_rowstore_close(atf_rowstore *st)
{
    if (!st)
        return;
    if (st->csv)
        fclose(st->csv);
    if (st->jsonl)
        fclose(st->jsonl);
    if (st->lock_path) /* removed while still locked: no other run can hold it meanwhile */
        unlink(st->lock_path);
    if (st->lock_fd >= 0)
        close(st->lock_fd);
    free(st->lock_path);
    free(st->csv_path);
    free(st->jsonl_path);
    free(st->rows);
    free(st);
}

int atf_rowstore_has(const atf_rowstore *st, const char *key)
{
    for (int i = 0; i < st->nrows; i++) {
        const char *k = atf_row_get(&st->rows[i], st->key_field);
        if (k && !strcmp(k, key))
            return 1;
    }
    return 0;
}

void atf_rowstore_take_new_columns(atf_rowstore *st)
{
    st->new_columns = 1;
}

/* Whether every column of a is one of b's. */
static int columns_within(const atf_row *a, const atf_row *b)
{
    for (int i = 0; i < a->nfields; i++)
        if (field_index(b, a->names[i]) < 0)
            return 0;
    return 1;
}

/* The value a row lacks in a column where `like` has v: "nan" for a number, else "-". */
static const char *filler(const char *v)
{
    return is_number(v) || !strcmp(v, "nan") || !strcmp(v, "inf") || !strcmp(v, "-inf") ? "nan"
                                                                                          : "-";
}

/* Both files again from the rows (atomically): the CSV with the header, the JSON lines. */
static atf_error rewrite_files(atf_rowstore *st, char *err)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem) {
        atf_errorf(err, "%s: out of memory", st->csv_path);
        return ATF_E_NOMEM;
    }
    csv_line(mem, &st->header, 1);
    for (int i = 0; i < st->nrows; i++)
        csv_line(mem, &st->rows[i], 0);
    fclose(mem);
    atf_error e = buf ? ATF_OK : ATF_E_NOMEM;
    if (!e) /* the JSON lines follow the CSV, the record (sync_jsonl after a crash between) */
        e = atf_write_text_atomic(st->csv_path, buf, len, err);
    free(buf);
    if (!e)
        e = sync_jsonl(st, err);
    FILE *csv = e ? NULL : fopen(st->csv_path, "ab"), *jsonl = e ? NULL : fopen(st->jsonl_path, "ab");
    if (!e && (!csv || !jsonl)) {
        atf_errorf(err, "%s: cannot open for appending: %s", st->csv_path, strerror(errno));
        e = ATF_E_IO;
    }
    if (!e) {
        fclose(st->csv), fclose(st->jsonl);
        st->csv = csv, st->jsonl = jsonl;
    } else {
        if (csv)
            fclose(csv);
        if (jsonl)
            fclose(jsonl);
    }
    return e;
}

/* The table takes the columns of row it lacks (at the end of its header; its rows get fillers)
 * and *out is row with the table's columns in the table's order (fillers where row has none).
 * ATF_E_INPUT when neither column set holds the other. */
static atf_error conform(atf_rowstore *st, const atf_row *row, atf_row *out, char *err)
{
    int wider = columns_within(&st->header, row), narrower = columns_within(row, &st->header);
    if (!wider && !narrower) {
        atf_errorf(err, "%s: its columns differ from this run's (written by another command or "
                   "options?): use another output directory", st->csv_path);
        return ATF_E_INPUT;
    }
    int added = 0;
    for (int i = 0; i < row->nfields; i++) {
        if (field_index(&st->header, row->names[i]) >= 0)
            continue;
        if (st->header.nfields >= ATF_ROW_MAXFIELDS) {
            atf_errorf(err, "%s: more than %d columns", st->csv_path, ATF_ROW_MAXFIELDS);
            return ATF_E_INPUT;
        }
        const char *fill = filler(row->values[i]);
        snprintf(st->header.names[st->header.nfields++], ATF_ROW_NAMELEN, "%s", row->names[i]);
        for (int r = 0; r < st->nrows; r++)
            atf_row_str(&st->rows[r], row->names[i], fill);
        added = 1;
    }
    atf_row_clear(out);
    for (int i = 0; i < st->header.nfields; i++) {
        const char *name = st->header.names[i], *v = atf_row_get(row, name);
        const char *like = st->nrows ? atf_row_get(&st->rows[0], name) : NULL;
        atf_row_str(out, name, v ? v : filler(like ? like : ""));
    }
    return added ? rewrite_files(st, err) : ATF_OK;
}

static atf_error check_columns(const atf_rowstore *st, const atf_row *row, char *err)
{
    int same = row->nfields == st->header.nfields;
    for (int i = 0; same && i < row->nfields; i++)
        same = !strcmp(row->names[i], st->header.names[i]);
    if (!same) {
        atf_errorf(err, "%s: its columns differ from this run's (written by another command or "
                   "options?): use another output directory", st->csv_path);
        return ATF_E_INPUT;
    }
    return ATF_OK;
}

atf_error atf_rowstore_append(atf_rowstore *st, const atf_row *row, char *err)
{
    const char *key = atf_row_get(row, st->key_field);
    if (!key) {
        atf_errorf(err, "%s: row without '%s'", st->csv_path, st->key_field);
        return ATF_E_INPUT;
    }
    if (atf_rowstore_has(st, key)) {
        atf_errorf(err, "%s: key '%s' already recorded", st->csv_path, key);
        return ATF_E_INPUT;
    }
    atf_error e;
    if (st->have_header && st->new_columns && check_columns(st, row, err)) {
        atf_row *conformed = malloc(sizeof *conformed); /* (large for the stack) */
        if (!conformed) {
            atf_errorf(err, "%s: out of memory", st->csv_path);
            return ATF_E_NOMEM;
        }
        e = conform(st, row, conformed, err);
        if (!e)
            e = atf_rowstore_append(st, conformed, err); /* now of the table's columns */
        free(conformed);
        return e;
    }
    if (st->have_header) {
        if ((e = check_columns(st, row, err)))
            return e;
    } else {
        st->header = *row;
        st->have_header = 1;
        csv_line(st->csv, row, 1);
    }
    /* CSV first: it is the record; the JSON lines are rebuilt from it after a crash. */
    csv_line(st->csv, row, 0);
    if ((e = sync_file(st->csv, st->csv_path, err)))
        return e;
    char *line = atf_row_json_line(row);
    if (!line) {
        atf_errorf(err, "%s: out of memory", st->jsonl_path);
        return ATF_E_NOMEM;
    }
    fputs(line, st->jsonl);
    free(line);
    if ((e = sync_file(st->jsonl, st->jsonl_path, err)))
        return e;
    return push_row(st, row, err);
}

int atf_rowstore_count(const atf_rowstore *st)
{
    return st->nrows;
}

const atf_row *atf_rowstore_row(const atf_rowstore *st, int i)
{
    return i >= 0 && i < st->nrows ? &st->rows[i] : NULL;
}

/* ---- files ---- */


