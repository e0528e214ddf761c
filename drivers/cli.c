/* cli.c — helpers shared by the subcommands: failure messages, strict number parsing, SIGINT. */
#include "atf_cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int atf_cli_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return 1;
    return 0;
}

int atf_cli_fail(const char *cmd, atf_error e, const char *msg)
{
    fprintf(stderr, "atf %s: %s\n", cmd, msg && *msg ? msg : atf_error_name(e));
    return atf_error_exit_code(e);
}

atf_error atf_cli_int(const char *opt, const char *text, long lo, long hi, long *out, char *err)
{
    char *end = NULL;
    errno = 0;
    long v = text ? strtol(text, &end, 10) : 0;
    if (!text || !*text || *end || errno) {
        atf_errorf(err, "%s: '%s' is not an integer", opt, text ? text : "");
        return ATF_E_USAGE;
    }
    if (v < lo || v > hi) {
        atf_errorf(err, "%s: %ld is outside [%ld, %ld]", opt, v, lo, hi);
        return ATF_E_USAGE;
    }
    *out = v;
    return ATF_OK;
}

atf_error atf_cli_double(const char *opt, const char *text, double *out, char *err)
{
    char *end = NULL;
    errno = 0;
    double v = text ? strtod(text, &end) : 0.0;
    if (!text || !*text || *end || errno || !isfinite(v)) {
        atf_errorf(err, "%s: '%s' is not a finite number", opt, text ? text : "");
        return ATF_E_USAGE;
    }
    *out = v;
    return ATF_OK;
}

static volatile sig_atomic_t interrupted = 0;

static void on_sigint(int sig)
{
    if (interrupted) { /* second Ctrl-C: give up at once */
        signal(sig, SIG_DFL);
        raise(sig);
    }
    interrupted = 1;
}

volatile sig_atomic_t *atf_cli_interrupt_flag(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    return &interrupted;
}

double atf_cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
