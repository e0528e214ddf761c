/* cli.c — helpers shared by the subcommands: failure messages, strict number parsing, SIGINT,
 * the recorded command line, the result ↔ problem check and JSON lines (jansson). */
#include "atf_cli.h"
#include "atf_solver.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "experiment.h"

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

/* "WHAT: cannot write there: directory 'DIR' REASON" with the reason errno gives. */
static atf_error unwritable_dir(const char *what, const char *dir, int errnum, char *err)
{
    atf_errorf(err, "%s: cannot write there: directory '%s' %s", what, dir,
               errnum == ENOENT ? "does not exist" : strerror(errnum));
    return ATF_E_USAGE;
}

/* 0 if dir is a directory this process may create files in, else an errno value. */
static int dir_unwritable(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) != 0)
        return errno;
    if (!S_ISDIR(st.st_mode))
        return ENOTDIR;
    return access(dir, W_OK | X_OK) != 0 ? errno : 0;
}

atf_error atf_cli_check_output(const char *path, char *err)
{
    struct stat st;
    if (!path || !*path) {
        atf_errorf(err, "empty output path");
        return ATF_E_USAGE;
    }
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        atf_errorf(err, "%s: cannot write there: it is a directory", path);
        return ATF_E_USAGE;
    }
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    /* The writers create a temporary next to the target and rename it over the target. */
    int why = dir_unwritable(dir);
    return why ? unwritable_dir(path, dir, why, err) : ATF_OK;
}

atf_error atf_cli_output_dir(const char *dir, char *err)
{
    if (atf_mkdir_p(dir, err) != ATF_OK)
        return ATF_E_USAGE;
    int why = dir_unwritable(dir);
    return why ? unwritable_dir(dir, dir, why, err) : ATF_OK;
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

/* Characters that need no quoting in a POSIX shell word. */
static int shell_safe(const char *a)
{
    if (!*a)
        return 0;
    for (; *a; a++)
        if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:=,+-@%", *a))
            return 0;
    return 1;
}

/* Append text to out[len] at *n, truncating at the end of the buffer. */
static void append(char *out, size_t len, size_t *n, const char *text)
{
    size_t k = strlen(text);
    if (*n + 1 >= len)
        return;
    if (k > len - 1 - *n)
        k = len - 1 - *n;
    memcpy(out + *n, text, k);
    *n += k;
    out[*n] = '\0';
}

void atf_cli_command_line(int argc, char **argv, char *out, size_t len)
{
    size_t n = 0;
    out[0] = '\0';
    append(out, len, &n, "atf");
    for (int i = 0; i < argc; i++) {
        append(out, len, &n, " ");
        if (shell_safe(argv[i])) {
            append(out, len, &n, argv[i]);
            continue;
        }
        /* 'it'\''s': a quote inside single quotes is closed, escaped and reopened. */
        append(out, len, &n, "'");
        for (const char *c = argv[i]; *c; c++) {
            char one[2] = {*c, '\0'};
            append(out, len, &n, *c == '\'' ? "'\\''" : one);
        }
        append(out, len, &n, "'");
    }
}

void atf_cli_note_problem(const char *cmd, const atf_problem *prob, const char *prob_path)
{
    char note[ATF_ERRLEN];
    atf_problem_note(prob, prob_path, note);
    if (note[0])
        fprintf(stderr, "atf %s: %s\n", cmd, note);
}

atf_error atf_cli_check_pair(const char *cmd, const atf_result *res, const char *res_path,
                             const atf_problem *prob, const char *prob_path, char *err)
{
    char note[ATF_ERRLEN];
    atf_error e = atf_result_match(res, res_path, prob, prob_path, note, err);
    if (!e && note[0])
        fprintf(stderr, "atf %s: %s\n", cmd, note);
    if (!e)
        atf_cli_note_problem(cmd, prob, prob_path);
    return e;
}

void atf_cli_print_json(json_t *v)
{
    char *line = atf_json_line(v);
    json_decref(v);
    if (line) {
        printf("%s\n", line);
        free(line);
    } else {
        fprintf(stderr, "atf: out of memory for the JSON output\n");
    }
    fflush(stdout);
}
