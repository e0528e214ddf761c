/* exp_internal.h — helpers shared by the files of the experiments library (not installed,
 * not on dependants' include path). */
#ifndef ATF_EXP_INTERNAL_H
#define ATF_EXP_INTERNAL_H

#include "atf_experiments.h"

/* Timer (atf_now), atomic writes, number lists: problems/atf_util.h. */
#include "atf_util.h"

/* Split a comma list of names (or numbers kept as text, e.g. scales with "auto") into items
 * of at most ATF_EXP_NAMELEN − 1 characters, at most max of them; ATF_E_USAGE naming `what`
 * for an empty list, an empty or too long item, too many items. */
enum { ATF_EXP_NAMELEN = 32 };
atf_error atf_exp_split_names(const char *what, const char *text, char items[][ATF_EXP_NAMELEN],
                              int max, int *n, char *err);

/* λ as a path table's key and as written in loss specs: the shortest text that reads back as
 * exactly λ (atf_loss_format's rule; path.c). */
void atf_path_key(double lambda, char *key, size_t len);
/* A comma list of at most ATF_PATH_MAXLAMBDAS distinct finite λ > 0 (distinct also as the
 * path's row keys, atf_path_key) into v[*n]; ATF_E_USAGE naming `what` otherwise. */
atf_error atf_exp_parse_lambdas(const char *what, const char *list, double *v, int *n,
                                char *err);

/* 1 when the run was asked to stop. */
int atf_exp_stopped(const atf_exp_io *io);

/* printf to io->log (warnings) / io->progress (what is being done) when there is one. */
void atf_exp_log(const atf_exp_io *io, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void atf_exp_note(const atf_exp_io *io, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* An atf_hooks.log callback: the solver's verbose output onto the FILE * stream (NULL: none,
 * as on ranks other than 0). */
void atf_exp_log_to(void *stream, const char *text);

/* "DIR/NAME" into buf (len bytes); ATF_E_USAGE with a message when it does not fit. */
atf_error atf_exp_path(char *buf, size_t len, const char *dir, const char *name, char *err);
/* A table resumed with a penalized loss must have been written with the same loss: every
 * recorded row's `loss` is absent, "interpolate", "-" or this spec (ATF_E_USAGE naming the
 * table and both losses otherwise). */
atf_error atf_exp_check_loss(const atf_rowstore *st, const atf_loss *loss, const char *table,
                             char *err);

/* 1 for the image data sources (mnist, fashion-mnist), whose defaults follow the paper. */
int atf_exp_image_data(const atf_data_options *d);

#endif
