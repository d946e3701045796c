/* The `tunehub tune` command: tunes a zoo network's tasks on this machine's CPU, writing every trial to the
 * store under --data, with a live progress line per task and a summary table at the end. Ctrl-C stops at the
 * next stage boundary; a rerun resumes from the stored records and skips tasks already at their budget. */
#ifndef TUNE_CLI_H
#define TUNE_CLI_H

/* argv[0] is the subcommand name ("tune"); then: FRAMEWORK NETWORK BATCH [--data DIR] [--trials N]
 * [--tuner xgb|ga|random|grid] [--early-stopping N] [--seed S] [--batch-size N]. Returns the process exit
 * code: 0 done, 2 usage error, 1 failure, 130 interrupted. Prints to stdout/stderr. */
int tune_cli_main(int argc, char **argv);

#endif
