/* atf_report.h — the JSON of results and the JSON helpers every --json line of the programs
 * uses (jansson). Not installed: the public header offers the text form (atf_result_json in
 * atf_solver.h); this one is for atf's own drivers and tests, which link the static library.
 * JSON is built with jansson, so every string is escaped as JSON requires. */
#ifndef ATF_REPORT_H
#define ATF_REPORT_H

#include <jansson.h>

#include "atf_result.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A JSON number, or null for NaN and infinities (JSON has neither). */
json_t *atf_json_number(double v);
/* A JSON string of s; bytes that are not valid UTF-8 (JSON strings are Unicode) become '?'. */
json_t *atf_json_text(const char *s);
/* Compact one-line text of a JSON value (caller frees), NULL on out of memory. */
char *atf_json_line(const json_t *v);

/* The result as a JSON object with the fields of atf_result_json (atf_solver.h); NULL on out of
 * memory. */
json_t *atf_result_json_object(const atf_result *res);
#ifdef __cplusplus
}
#endif

#endif
