#include "atf_error.h"
#include "atf_version.h"

#include <stdarg.h>
#include <stdio.h>

const char *atf_version(void)
{
    return ATF_VERSION;
}

const char *atf_error_name(atf_error e)
{
    switch (e) {
    case ATF_OK: return "ok";
    case ATF_E_USAGE: return "usage error";
    case ATF_E_INPUT: return "bad input";
    case ATF_E_NUMERICAL: return "numerical error";
    case ATF_E_NOMEM: return "out of memory";
    case ATF_E_IO: return "i/o error";
    }
    return "unknown error";
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
