/* cli.c — helpers shared by the subcommands: getopt_long with one-line messages, strict number
 * parsing, exit codes, failure messages, SIGINT, the recorded command line, the result ↔ problem
 * check and JSON lines (jansson). */
#include "atf_cli.h"
#include "atf_solver.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atf_util.h"
#include "atf_report.h"

int atf_cli_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return 1;
    return 0;
}

void atf_cli_getopt_begin(void)
{
    optind = 0; /* 0, not 1: glibc then also resets its internal state (a new argv) */
    opterr = 0;
}

/* The long options whose names start with `name` (len characters), listed in out; their count. */
static int long_matches(const struct option *longopts, const char *name, size_t len, char *out,
                        size_t outlen)
{
    int n = 0;
    size_t used = 0;
    out[0] = '\0';
    for (const struct option *o = longopts; o && o->name; o++) {
        if (strncmp(o->name, name, len) != 0)
            continue;
        if (used + 1 < outlen)
            used += (size_t)snprintf(out + used, outlen - used, "%s--%s", n ? ", " : "", o->name);
        n++;
    }
    return n;
}

/* The message for getopt's '?' (unknown, ambiguous, or a flag given a value) and ':' (missing
 * value). A long option is the element before optind; a short one is optopt. */
static void bad_option(const char *cmd, int c, char **argv, int argc,
                       const struct option *longopts, char *err)
{
    const char *arg = optind >= 1 && optind - 1 < argc ? argv[optind - 1] : "";
    if (strncmp(arg, "--", 2) != 0) { /* a short option */
        if (c == ':')
            atf_errorf(err, "option '-%c' needs a value", optopt);
        else
            atf_errorf(err, "unknown option '-%c' (atf %s%s--help)", optopt, cmd, *cmd ? " " : "");
        return;
    }
    const char *eq = strchr(arg, '=');
    int len = eq ? (int)(eq - arg) : (int)strlen(arg);
    if (len > 100)
        len = 100;
    char names[256];
    if (c == ':')
        atf_errorf(err, "option '%.*s' needs a value", len, arg);
    else if (optopt != 0 && eq)
        atf_errorf(err, "option '%.*s' takes no value", len, arg);
    else if (long_matches(longopts, arg + 2, (size_t)len - 2, names, sizeof names) > 1)
        atf_errorf(err, "option '%.*s' is ambiguous (%s)", len, arg, names);
    else
        atf_errorf(err, "unknown option '%.*s' (atf %s%s--help)", len, arg, cmd, *cmd ? " " : "");
}

int atf_cli_getopt(const char *cmd, int argc, char **argv, const char *shortopts,
                   const struct option *longopts, char *err)
{
    /* ':' (report a missing value as ':') goes after a leading '+' or '-' (argument order) */
    char optstring[64];
    const char *rest = shortopts ? shortopts : "";
    int order = *rest == '+' || *rest == '-';
    snprintf(optstring, sizeof optstring, "%.*s:%s", order, rest, rest + order);
    int c = getopt_long(argc, argv, optstring, longopts, NULL);
    if (c == '?' || c == ':') {
        bad_option(cmd, c, argv, argc, longopts, err);
        return ATF_CLI_BAD_OPTION;
    }
    return c;
}

atf_error atf_cli_positionals(const char *cmd, int argc, char **argv, int min, int max,
                              const char *what, const char **out, int *n, char *err)
{
    int count = argc - optind;
    for (int i = 0; i < max; i++)
        out[i] = i < count ? argv[optind + i] : NULL;
    if (n)
        *n = count < max ? count : max;
    if (count > max) {
        atf_errorf(err, "unexpected argument '%s' (atf %s --help)", argv[optind + max], cmd);
        return ATF_E_USAGE;
    }
    if (count < min) {
        atf_errorf(err, "missing %s (atf %s --help)", what, cmd);
        return ATF_E_USAGE;
    }
    return ATF_OK;
}

int atf_cli_exit_code(atf_error e)
{
    switch (e) {
    case ATF_OK:
        return 0;
    case ATF_E_USAGE:
    case ATF_E_INPUT:
        return 2;
    default:
        return 1;
    }
}

int atf_cli_status_exit_code(atf_status s)
{
    switch (s) {
    case ATF_STATUS_SOLVED:
        return 0;
    case ATF_STATUS_INFEASIBLE:
        return 3;
    case ATF_STATUS_MAX_ITERATIONS:
        return 4;
    case ATF_STATUS_INTERRUPTED:
        return 130;
    default:
        return 1;
    }
}

static volatile sig_atomic_t interrupted; /* raised by the SIGINT handler (below) */
static volatile sig_atomic_t no_flag;     /* a host's run without a stop flag: never raised */
static FILE *host_out, *host_err;         /* a host's streams (NULL: stdout, stderr) */
static volatile sig_atomic_t *host_flag;  /* a host's stop flag while it runs a command */

FILE *atf_cli_stdout(void)
{
    return host_out ? host_out : stdout;
}

FILE *atf_cli_stderr(void)
{
    return host_err ? host_err : stderr;
}

void atf_cli_host_begin(FILE *out, FILE *err, volatile sig_atomic_t *interrupt)
{
    host_out = out, host_err = err;
    no_flag = 0;
    host_flag = interrupt ? interrupt : &no_flag;
}

void atf_cli_host_end(void)
{
    host_out = host_err = NULL;
    host_flag = NULL;
}

void atf_cli_log(void *ctx, const char *text)
{
    (void)ctx;
    fputs(text, atf_cli_stderr());
}

/* Whether the run was asked to stop (Ctrl-C, or the host's flag). */
static int stop_asked(void)
{
    return host_flag ? *host_flag != 0 : interrupted != 0;
}

int atf_cli_fail(const char *cmd, atf_error e, const char *msg)
{
    if (atf_cli_ranks() && !(msg && *msg)) /* another rank's failure: that rank says why */
        return atf_cli_exit_code(e);
    fprintf(atf_cli_stderr(), "atf %s: %s\n", cmd, msg && *msg ? msg : atf_error_name(e));
    atf_cli_ranks_failed();
    /* a failure after Ctrl-C (e.g. a read or write stopped by the signal) exits as interrupted */
    return e != ATF_OK && stop_asked() ? atf_cli_status_exit_code(ATF_STATUS_INTERRUPTED)
                                      : atf_cli_exit_code(e);
}

int atf_cli_fail_alike(const char *cmd, atf_error e, const char *msg)
{
    const atf_exp_ranks *rk = atf_cli_ranks();
    atf_cli_ranks_alike();
    return atf_cli_fail(cmd, e, rk && rk->rank != 0 ? "" : msg);
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


/* 1 if a and b name the same existing directory. */
static int same_dir(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

/* Append dir to roots (count *n of max) unless it is there already (same path, or the same
 * existing directory under another name). */
static void add_root(char (*roots)[ATF_CLI_PATHLEN], int max, int *n, const char *dir)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp(roots[i], dir) || same_dir(roots[i], dir))
            return;
    if (*n < max && snprintf(roots[*n], ATF_CLI_PATHLEN, "%s", dir) < ATF_CLI_PATHLEN)
        (*n)++;
}

/* BUILD/../data for the binary BUILD/drivers/atf (the repository it was built in), or "". */
static void binary_repository_data(char *out, size_t len)
{
    char exe[ATF_CLI_PATHLEN];
    out[0] = '\0';
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1); /* an absolute, resolved path */
    if (n <= 0 || n >= (ssize_t)sizeof exe - 1)
        return;
    exe[n] = '\0';
    const char *tail = "/drivers/atf"; /* an installed atf (PREFIX/bin/atf) has no repository */
    size_t nt = strlen(tail);
    if ((size_t)n <= nt || strcmp(exe + n - nt, tail) != 0)
        return;
    for (int up = 0; up < 3; up++) { /* atf, drivers, BUILD */
        char *slash = strrchr(exe, '/');
        if (!slash || slash == exe)
            return;
        *slash = '\0';
    }
    if (snprintf(out, len, "%s/data", exe) >= (int)len)
        out[0] = '\0'; /* too long to be of use */
}

int atf_cli_data_roots(char (*roots)[ATF_CLI_PATHLEN], int max)
{
    int n = 0;
    const char *env = getenv("ATF_DATA");
    if (env && *env) { /* set and not empty */
        for (const char *p = env; *p;) {
            size_t len = strcspn(p, ":");
            char dir[ATF_CLI_PATHLEN];
            if (len > 0 && len < sizeof dir) {
                snprintf(dir, sizeof dir, "%.*s", (int)len, p);
                add_root(roots, max, &n, dir);
            }
            p += len + (p[len] == ':');
        }
        return n;
    }
    char here[ATF_CLI_PATHLEN];
    binary_repository_data(here, sizeof here);
    if (here[0])
        add_root(roots, max, &n, here);
#ifdef ATF_SOURCE_DATA
    add_root(roots, max, &n, ATF_SOURCE_DATA);
#endif
    add_root(roots, max, &n, "/usr/share/datasets");
    return n;
}

static volatile sig_atomic_t armed; /* a command watches the flag (atf_cli_interrupt_flag) */

static void on_sigint(int sig)
{
    if (!armed) /* nothing watches the flag yet (or at all): stop now, with the exit code of
                 * an interrupted run; nothing has been written (outputs are atomic) */
        _exit(130);
    if (interrupted) { /* second Ctrl-C: give up at once */
        signal(sig, SIG_DFL);
        raise(sig);
    }
    interrupted = 1;
}

void atf_cli_catch_sigint(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
}

volatile sig_atomic_t *atf_cli_interrupt_flag(void)
{
    if (host_flag) /* the host's: its process's signals are its own */
        return host_flag;
    atf_cli_catch_sigint();
    armed = 1;
    return &interrupted;
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
        fprintf(atf_cli_stderr(), "atf %s: %s\n", cmd, note);
}

atf_error atf_cli_check_pair(const char *cmd, const atf_result *res, const char *res_path,
                             const atf_problem *prob, const char *prob_path, char *err)
{
    char note[ATF_ERRLEN];
    atf_error e = atf_result_match(res, res_path, prob, prob_path, note, err);
    if (!e && note[0])
        fprintf(atf_cli_stderr(), "atf %s: %s\n", cmd, note);
    if (!e)
        atf_cli_note_problem(cmd, prob, prob_path);
    return e;
}

void atf_cli_print_json(json_t *v)
{
    char *line = atf_json_line(v);
    json_decref(v);
    if (line) {
        fprintf(atf_cli_stdout(), "%s\n", line);
        free(line);
    } else {
        fprintf(atf_cli_stderr(), "atf: out of memory for the JSON output\n");
    }
    fflush(atf_cli_stdout());
}
