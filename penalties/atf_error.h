/* atf_error.h — the one error enum of atf, with messages.
 *
 * It lives at the bottom of the dependency chain (penalties/ uses nothing else of atf), so every
 * module can share it. Functions that can fail return an atf_error and, when given a non-NULL
 * `err` buffer of ATF_ERRLEN bytes, write a one-line message naming the file, the item and the
 * reason. No library function prints. */
#ifndef ATF_ERROR_H
#define ATF_ERROR_H

#include <stddef.h>

#define ATF_ERRLEN 512

typedef enum {
    ATF_OK = 0,
    ATF_E_USAGE,       /* bad command-line argument or option value            (exit 2) */
    ATF_E_INPUT,       /* malformed, truncated, inconsistent or non-finite input (exit 2) */
    ATF_E_INFEASIBLE,  /* the linear constraints have no solution              (exit 3) */
    ATF_E_MAXITER,     /* stopped at the iteration limit                       (exit 4) */
    ATF_E_INTERRUPTED, /* stopped by SIGINT                                    (exit 130) */
    ATF_E_NUMERICAL,   /* a factorisation or iteration broke down              (exit 1) */
    ATF_E_NOMEM,       /* allocation failed                                    (exit 1) */
    ATF_E_IO           /* an output could not be written                       (exit 1) */
} atf_error;

/* Short stable name, e.g. "bad input". */
const char *atf_error_name(atf_error e);

/* Process exit code the CLI uses for e (SPEC §6): 0, 2, 3, 4, 130 or 1. */
int atf_error_exit_code(atf_error e);

/* printf-style write of a message into err (ATF_ERRLEN bytes); err may be NULL. */
void atf_errorf(char *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif
