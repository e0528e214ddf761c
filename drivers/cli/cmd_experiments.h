/* cmd_experiments.h — what the experiment commands (cmd_experiment.c, cmd_sweep.c,
 * cmd_demo.c) share: they fill a config of the experiments library (atf_experiments.h) from
 * argv, run it and turn what happened into an exit code. */
#ifndef ATF_CMD_EXPERIMENTS_H
#define ATF_CMD_EXPERIMENTS_H

#include "atf_cli.h"
#include "atf_experiments.h"

/* Tables and JSON on stdout, progress and warnings on stderr (no progress when quiet), and
 * the SIGINT flag: a first Ctrl-C stops the run after its current step. */
atf_exp_io atf_cli_exp_io(int json, int quiet);

/* The exit code of a run: its error (2 or 1), else its status (0 done, 3 infeasible,
 * 130 interrupted; err then says why, on stderr as "atf CMD: ..."). */
int atf_cli_exp_exit(const char *cmd, atf_error e, const atf_exp_outcome *o, const char *err);

/* Comma lists of the experiment commands: training sizes (--ns), seeds (--seed-list). */
atf_error atf_cli_exp_ns(const char *opt, const char *text, atf_samples_config *cfg, char *err);
atf_error atf_cli_exp_seeds(const char *opt, const char *text, int list, atf_samples_config *cfg,
                            char *err);

int atf_experiment_alignment(int argc, char **argv);
int atf_experiment_penalties(int argc, char **argv);
int atf_experiment_samples(int argc, char **argv);

#endif
