#include "atf_error.h"

#include <stdarg.h>
#include <stdio.h>

const char *atf_error_name(atf_error e)
{
    switch (e) {
    case ATF_OK: return "ok";
    case ATF_E_USAGE: return "usage error";
    case ATF_E_INPUT: return "bad input";
    case ATF_E_INFEASIBLE: return "infeasible";
    case ATF_E_MAXITER: return "iteration limit";
    case ATF_E_INTERRUPTED: return "interrupted";
    case ATF_E_NUMERICAL: return "numerical error";
    case ATF_E_NOMEM: return "out of memory";
    case ATF_E_IO: return "i/o error";
    }
    return "unknown error";
}

int atf_error_exit_code(atf_error e)
{
    switch (e) {
    case ATF_OK: return 0;
    case ATF_E_USAGE:
    case ATF_E_INPUT: return 2;
    case ATF_E_INFEASIBLE: return 3;
    case ATF_E_MAXITER: return 4;
    case ATF_E_INTERRUPTED: return 130;
    default: return 1;
    }
}

void atf_errorf(char *err, const char *fmt, ...)
{
    if (!err)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, ATF_ERRLEN, fmt, ap);
    va_end(ap);
    /* A message is one line even when it quotes a string from a (corrupt) file: control
     * characters become '?'. */
    for (char *c = err; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
}
