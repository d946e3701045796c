/* The command-line face of tunehub (build, run, tune, networks, import) and the hidden measure-worker entry. Each
 * returns a process exit code: 0 success, 1 failure, 2 bad usage. */
#ifndef SRV_CLI_H
#define SRV_CLI_H

#include <signal.h>

#include "worker.h"

int cli_build(int argc, char **argv);
int cli_run(int argc, char **argv);
int cli_tune(int argc, char **argv);
int cli_networks(int argc, char **argv);
int cli_import(int argc, char **argv);
int cli_measure_worker(void);
/* tunehub migrate --from DIR --to postgresql://... (migrate.c) */
int cli_migrate(int argc, char **argv);
/* `tunehub worker --db URL ...` (cli_worker.c): runs jobs from a shared store until SIGTERM or SIGINT. */
int cli_worker(int argc, char **argv);
/* For a long-running command: blocks SIGINT and SIGTERM in this thread and every thread it starts afterwards
 * (the caller waits for them with sigwait on *set) and ignores SIGPIPE. */
void cli_stop_signals(sigset_t *set);
/* The builder registry jobs use. */
const tune_builder *cli_default_builder(const char *data_dir);

#endif
