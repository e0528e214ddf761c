/* rowstore.h — resumable result tables for sweeps and experiments (part of atf_experiments.h).
 *
 * A table is a CSV file (the record) plus a JSON-lines copy of it. Rows are appended one at a
 * time and each append is flushed and fsync'ed, so an interrupted run loses at most the row in
 * flight. Every row carries a key; reopening a table loads the finished keys so a re-run skips
 * them. A torn last line (a crash in the middle of a write) is cut off on open, and the JSON
 * lines are rebuilt from the CSV whenever they disagree with it, so the two never differ. One
 * writer at a time: opening takes a lock on CSV_PATH.lock and a second opener gets ATF_E_USAGE;
 * closing removes the lock file, so a finished, failed or interrupted run leaves none behind. */
#ifndef ATF_ROWSTORE_H
#define ATF_ROWSTORE_H

#include <stddef.h>

#include "atf_error.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { ATF_ROW_MAXFIELDS = 64, ATF_ROW_NAMELEN = 48, ATF_ROW_VALUELEN = 192 };

typedef struct {
    int nfields;
    char names[ATF_ROW_MAXFIELDS][ATF_ROW_NAMELEN];
    char values[ATF_ROW_MAXFIELDS][ATF_ROW_VALUELEN];
} atf_row;

/* Build a row field by field (a field of the same name is overwritten). Numbers are written with
 * 10 significant digits; NaN and infinities become "nan", "inf" ("null" in JSON). */
void atf_row_clear(atf_row *row);
void atf_row_str(atf_row *row, const char *name, const char *value);
void atf_row_num(atf_row *row, const char *name, double value);
void atf_row_int(atf_row *row, const char *name, long value);
/* Value of a field, NULL if absent. */
const char *atf_row_get(const atf_row *row, const char *name);
/* The same as a number (NaN if absent or not a number). */
double atf_row_getnum(const atf_row *row, const char *name);

typedef struct atf_rowstore atf_rowstore;

/* Open (creating if needed) CSV_PATH and JSONL_PATH; key_field names the column that identifies a
 * row. Errors: unreadable/unwritable files, a CSV whose header lacks key_field, duplicate keys. */
atf_error atf_rowstore_open(const char *csv_path, const char *jsonl_path, const char *key_field,
                            atf_rowstore **out, char *err);
void atf_rowstore_close(atf_rowstore *st);

/* 1 if a row with this key is already recorded. */
int atf_rowstore_has(const atf_rowstore *st, const char *key);

/* Append a row (it must contain key_field, with a new key). The first row fixes the columns;
 * later rows must have the same columns in the same order (ATF_E_INPUT otherwise: the table was
 * written by a different command) — unless the store takes new columns (below). */
atf_error atf_rowstore_append(atf_rowstore *st, const atf_row *row, char *err);

/* From now on a row whose columns hold all of the table's and more widens the table (its new
 * columns go at the end of the header, the recorded rows get "nan" there where the new row's
 * value is a number, else "-"; both files rewritten atomically), and a row with some of the
 * table's columns only gets the same fillers in the others; columns in another order are put
 * in the table's. A row neither of whose column sets holds the other is still refused. For
 * tables whose later runs may record more (the samples experiment: a λ path's columns added to
 * a table written without one). */
void atf_rowstore_take_new_columns(atf_rowstore *st);

/* All recorded rows, in file order (earlier runs included). */
int atf_rowstore_count(const atf_rowstore *st);
const atf_row *atf_rowstore_row(const atf_rowstore *st, int i);

/* One CSV field as RFC 4180 wants it: quoted when it contains a comma, a quote or a line break,
 * with quotes doubled. Writes into buf (len bytes, always terminated when len > 0) and returns
 * the length it needs, as snprintf. */
int atf_csv_field(const char *s, char *buf, size_t len);

/* Format a row as one JSON object (no newline) into buf; returns the length needed. Values that
 * parse completely as finite numbers are written as numbers, "nan"/"inf" as null, others as
 * strings (jansson: escaped as JSON requires; bytes that are not UTF-8 become '?'). */
int atf_row_json(const atf_row *row, char *buf, int len);
/* The same, newline-terminated, in a new buffer (caller frees); NULL when memory is short. */
char *atf_row_json_line(const atf_row *row);

#ifdef __cplusplus
}
#endif

#endif
