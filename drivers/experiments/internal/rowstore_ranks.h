/* rowstore_ranks.h — one table written by the processes of one run (io.ranks), the machinery the
 * row-wise experiments share (the samples experiment, the sweep; docs/experiments.md, "Several
 * processes"). Not installed.
 *
 * The table OUT/NAME.{csv,jsonl} takes one writer, so with K > 1 ranks each rank appends its
 * rows to its own part table OUT/NAME.part-R.{csv,jsonl}, and rank 0 moves the rows of every
 * part table into the table in the grid's order when all are done, or stopped. A run killed
 * before that leaves part tables: the next run — with any K, or alone — moves their rows in
 * first, so no finished row is lost or written twice. The one collective operation is the
 * elementwise maximum of atf_exp_ranks. */
#ifndef ATF_ROWSTORE_RANKS_H
#define ATF_ROWSTORE_RANKS_H

#include "exp_internal.h"

/* The rows a run may write, numbered 0 … nrows − 1 in the table's order. */
typedef struct {
    const char *dir;  /* OUT */
    const char *name; /* the table OUT/NAME.{csv,jsonl}, part tables OUT/NAME.part-R.{csv,jsonl} */
    long nrows;
    /* The grid row a key stands for; −1 for a key outside this grid (such rows of part tables
     * are kept, after the grid's, in the parts' order). */
    long (*index)(void *ctx, const char *key);
    /* ATF_OK when this run may add to a table (or part table) already written: ATF_E_USAGE
     * naming `table` and why otherwise (NULL: any table). */
    atf_error (*check)(void *ctx, const atf_rowstore *st, const char *table, char *err);
    void *ctx;
} exp_grid;

typedef struct {
    const atf_exp_ranks *ranks; /* the ranks sharing the run; NULL: this process alone */
    atf_rowstore *store;        /* the table (rank 0, or alone; NULL on the other ranks) */
    atf_rowstore *out;          /* where this process appends: its part table (ranks) or the
                                   table (alone); NULL after exp_shared_end */
    const int *done;            /* done[i], i < nrows: grid row i was in the table at the start
                                   (after the part tables were moved in); the same on every rank */
    int moved;                  /* rows moved from part tables into the table */
    int *flags;                 /* done's storage */
} exp_shared;

/* The start. Alone (ranks NULL or of size 1): open the table, check it, move the rows of part
 * tables left by an earlier run into it, read done. With ranks: rank 0 does the same and tells
 * every rank done; then every rank opens its part table. `before` is this process's failure
 * so far (ATF_OK: none; its message in err), agreed on with rank 0's: when rank 0 failed,
 * every process returns its failure and rank 0 alone keeps its message; when only others
 * failed, each of them keeps its own and the rest return the failure with err "" — so a
 * failure of every process (a missing file) is said once. A failure after that (this
 * process's part table) returns at once: the caller ends the job with its message.
 * exp_shared_close must follow, whatever happened. */
atf_error exp_shared_open(exp_shared *sh, const exp_grid *g, const atf_exp_ranks *ranks,
                          atf_error before, char *err);

/* 1 when grid row i (key `key`) is recorded: in the table at the start or appended since. */
int exp_shared_recorded(const exp_shared *sh, long i, const char *key);

/* The end, when this process has run its rows (or was stopped). With ranks: close the part
 * table, replace agree[0 … n−1] by their maximum over the ranks (how the run ended: stopped,
 * a status), and rank 0 moves every part table into the table. Alone: nothing (agree stays). */
atf_error exp_shared_end(exp_shared *sh, const exp_grid *g, int *agree, int n, char *err);

/* The rows this run added to the table: the rows moved from part tables, and alone the rows
 * it appended (`appended`). */
int exp_shared_added(const exp_shared *sh, int appended);

/* Close the tables (their lock files go) and free done. */
void exp_shared_close(exp_shared *sh);

#endif
