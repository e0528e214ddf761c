/* progress.c — the progress line of long runs, and the small run-time helpers every
 * experiment shares (timer, stop flag, log, output paths). */
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include "internal/exp_internal.h"

int atf_exp_stopped(const atf_exp_io *io)
{
    return io->interrupt && *io->interrupt;
}

static void vprint(FILE *f, const char *fmt, va_list ap)
{
    if (!f)
        return;
    vfprintf(f, fmt, ap);
    fflush(f);
}

void atf_exp_log(const atf_exp_io *io, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprint(io->log, fmt, ap);
    va_end(ap);
}

void atf_exp_note(const atf_exp_io *io, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprint(io->progress, fmt, ap);
    va_end(ap);
}

void atf_exp_log_to(void *stream, const char *text)
{
    if (stream)
        fputs(text, stream);
}

atf_error atf_exp_path(char *buf, size_t len, const char *dir, const char *name, char *err)
{
    int n = snprintf(buf, len, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= len) {
        atf_errorf(err, "%s: output directory name too long", dir);
        return ATF_E_USAGE;
    }
    return ATF_OK;
}

atf_error atf_exp_check_loss(const atf_rowstore *st, const atf_loss *loss, const char *table,
                             char *err)
{
    char spec[ATF_LOSS_SPECLEN];
    atf_loss_format(loss, spec, sizeof spec);
    for (int i = 0; i < atf_rowstore_count(st); i++) {
        const char *got = atf_row_get(atf_rowstore_row(st, i), "loss");
        if (got && strcmp(got, "interpolate") && strcmp(got, "-") && strcmp(got, spec)) {
            atf_errorf(err, "%s: rows of loss %s, but this run's loss is %s (use another output "
                            "directory)", table, got, spec);
            return ATF_E_USAGE;
        }
    }
    return ATF_OK;
}

int atf_exp_image_data(const atf_data_options *d)
{
    return !strncmp(d->source, "mnist", 5) || !strncmp(d->source, "fashion-mnist", 13);
}

static void format_duration(double s, char *buf, size_t len)
{
    if (!isfinite(s) || s < 0)
        snprintf(buf, len, "?");
    else if (s < 60)
        snprintf(buf, len, "%.0fs", s);
    else if (s < 3600)
        snprintf(buf, len, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
    else
        snprintf(buf, len, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
}

void atf_progress_start(atf_progress *p, FILE *to, int total, int skipped)
{
    memset(p, 0, sizeof *p);
    p->total = total;
    p->done = skipped;
    p->skipped = skipped;
    p->t0 = atf_now();
    p->to = to;
    p->tty = to && isatty(fileno(to));
    pthread_mutex_init(&p->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* the clock of atf_now */
    pthread_cond_init(&p->wake, &ca);
    pthread_condattr_destroy(&ca);
    if (to && skipped > 0)
        fprintf(to, "resuming: %d of %d runs already recorded\n", skipped, total);
}

/* Write the line of the current state with p->what (redrawn in place on a terminal). */
static void emit(atf_progress *p, double now)
{
    const int width = 24;
    int fill = p->total > 0 ? (int)((double)width * p->done / p->total) : width;
    char bar[32];
    for (int i = 0; i < width; i++)
        bar[i] = i < fill ? '=' : i == fill ? '>' : ' ';
    bar[width] = '\0';
    double elapsed = now - p->t0;
    int ran = p->done - p->skipped;
    double eta = ran > 0 ? elapsed / ran * (p->total - p->done) : NAN;
    char el[32], et[32];
    format_duration(elapsed, el, sizeof el);
    format_duration(eta, et, sizeof et);
    fprintf(p->to, "%s[%s] %d/%d  %s elapsed, ETA %s  %s%s", p->tty ? "\r\033[K" : "", bar,
            p->done, p->total, el, et, p->what, p->tty ? "" : "\n");
    fflush(p->to);
    p->last = now;
    p->lines++;
    p->open = p->tty;
    p->pending = 0;
    if (p->total > 0 && p->done >= p->total)
        p->final_shown = 1;
}

/* When the ticker's next line is due (INFINITY: none until an update): off a terminal the
 * update kept back, once the log's interval has passed; on a terminal also a redraw of the open
 * line every ATF_PROGRESS_TTY_REFRESH (elapsed time, ETA). */
static double ticker_due(const atf_progress *p)
{
    if (p->tty)
        return p->pending ? p->last + ATF_PROGRESS_TTY_INTERVAL
                          : p->open ? p->last + ATF_PROGRESS_TTY_REFRESH : INFINITY;
    return p->pending ? p->last + ATF_PROGRESS_LOG_INTERVAL : INFINITY;
}

static void *tick(void *arg)
{
    atf_progress *p = arg;
    pthread_mutex_lock(&p->mu);
    while (!p->closing) {
        double now = atf_now(), due = ticker_due(p);
        if (now >= due) {
            emit(p, now);
            continue;
        }
        if (isinf(due)) {
            pthread_cond_wait(&p->wake, &p->mu);
            continue;
        }
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        double at = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec + (due - now);
        ts.tv_sec = (time_t)at;
        ts.tv_nsec = (long)((at - (double)ts.tv_sec) * 1e9);
        pthread_cond_timedwait(&p->wake, &p->mu, &ts);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Starts the ticker (lock held) with every signal blocked in it: SIGINT stays with the thread
 * that polls the stop flag. Without a thread (creation failed) updates wait for the next call,
 * as before. */
static void start_ticker(atf_progress *p)
{
    if (p->ticking || p->closing)
        return;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    p->ticking = pthread_create(&p->ticker, NULL, tick, p) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Stops and joins the ticker; returns with the lock held. */
static void stop_ticker(atf_progress *p)
{
    pthread_mutex_lock(&p->mu);
    int running = p->ticking;
    p->closing = 1;
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->mu);
    if (running)
        pthread_join(p->ticker, NULL);
    pthread_mutex_lock(&p->mu);
    p->ticking = p->closing = 0;
}

void atf_progress_show(atf_progress *p, const char *what)
{
    if (!p->to)
        return;
    pthread_mutex_lock(&p->mu);
    snprintf(p->what, sizeof p->what, "%s", what ? what : "");
    double now = atf_now();
    double interval = p->tty ? ATF_PROGRESS_TTY_INTERVAL : ATF_PROGRESS_LOG_INTERVAL;
    int final = p->total > 0 && p->done >= p->total && !p->final_shown;
    if (p->lines == 0 || final || now - p->last >= interval)
        emit(p, now);
    else
        p->pending = 1;
    start_ticker(p);
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->mu);
}

void atf_progress_step(atf_progress *p)
{
    pthread_mutex_lock(&p->mu);
    p->done++;
    pthread_mutex_unlock(&p->mu);
}

void atf_progress_set_done(atf_progress *p, int done)
{
    pthread_mutex_lock(&p->mu);
    p->done = done;
    pthread_mutex_unlock(&p->mu);
}

/* atf_progress_break's work, ticker stopped and lock held. */
static void break_line(atf_progress *p)
{
    if (p->pending)
        emit(p, atf_now());
    if (p->open) {
        fputc('\n', p->to);
        fflush(p->to);
        p->open = 0;
    }
}

void atf_progress_end(atf_progress *p)
{
    if (!p->to)
        return;
    stop_ticker(p);
    if (!p->final_shown) {
        snprintf(p->what, sizeof p->what, "done");
        emit(p, atf_now());
    }
    break_line(p);
    pthread_mutex_unlock(&p->mu);
}

void atf_progress_break(atf_progress *p)
{
    if (!p->to)
        return;
    stop_ticker(p);
    break_line(p);
    pthread_mutex_unlock(&p->mu);
}
