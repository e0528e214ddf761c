/* progress.c — the progress line of long runs, and the small run-time helpers every
 * experiment shares (timer, stop flag, log, output paths). */
#include <math.h>
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

void atf_progress_show(atf_progress *p, const char *what)
{
    if (!p->to)
        return;
    snprintf(p->what, sizeof p->what, "%s", what ? what : "");
    double now = atf_now();
    double interval = p->tty ? ATF_PROGRESS_TTY_INTERVAL : ATF_PROGRESS_LOG_INTERVAL;
    int final = p->total > 0 && p->done >= p->total && !p->final_shown;
    if (p->lines == 0 || final || now - p->last >= interval)
        emit(p, now);
    else
        p->pending = 1;
}

void atf_progress_step(atf_progress *p)
{
    p->done++;
}

void atf_progress_end(atf_progress *p)
{
    if (!p->to)
        return;
    if (!p->final_shown) {
        snprintf(p->what, sizeof p->what, "done");
        emit(p, atf_now());
    } else if (p->pending) {
        emit(p, atf_now());
    }
    atf_progress_break(p);
}

void atf_progress_break(atf_progress *p)
{
    if (!p->to)
        return;
    if (p->pending)
        emit(p, atf_now());
    if (p->open) {
        fputc('\n', p->to);
        fflush(p->to);
        p->open = 0;
    }
}
