/* atf_error.h — the one error enum of atf, with messages.
 *
 * It lives at the bottom of the dependency chain (penalties/ uses nothing else of atf), so every
 * module can share it. Functions that can fail return an atf_error and, when given a non-NULL
 * `err` buffer of ATF_ERRLEN bytes, write a one-line message "FILE: ITEM: reason" naming the
 * file, the item and the reason (never a command-line flag: the programs add those). No library
 * function prints.
 *
 * An atf_error is a failure only. How a solve ended (solved, infeasible, iteration limit,
 * interrupted) is not an error: it is the status in the result (atf_result.h), and a solve that
 * produced a result returns ATF_OK. Exit codes belong to the programs (drivers/cli). */
#ifndef ATF_ERROR_H
#define ATF_ERROR_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ATF_ERRLEN 512

typedef enum {
    ATF_OK = 0,
    ATF_E_USAGE,     /* a setting, option value or combination of them refused     */
    ATF_E_INPUT,     /* malformed, truncated, inconsistent or non-finite input     */
    ATF_E_NUMERICAL, /* a factorisation or iteration broke down                    */
    ATF_E_NOMEM,     /* allocation failed                                          */
    ATF_E_IO         /* a file could not be read or written (also: stopped by a
                        signal while reading or writing it)                        */
} atf_error;

/* Short stable name: "ok", "usage error", "bad input", "numerical error", "out of memory",
 * "i/o error"; "unknown error" for a value outside the enum. */
const char *atf_error_name(atf_error e);

/* printf-style write of a message into err (ATF_ERRLEN bytes); err may be NULL. */
void atf_errorf(char *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#ifdef __cplusplus
}
#endif

#endif
