/* The command-line face of tunehub (build, run, tune, networks, import) and the hidden measure-worker entry. Each
 * returns a process exit code: 0 success, 1 failure, 2 bad usage. */
#ifndef SRV_CLI_H
#define SRV_CLI_H

#include "worker.h"

int cli_build(int argc, char **argv);
int cli_run(int argc, char **argv);
int cli_tune(int argc, char **argv);
int cli_networks(int argc, char **argv);
int cli_import(int argc, char **argv);
int cli_measure_worker(void);
/* tunehub migrate --from DIR --to postgresql://... (migrate.c) */
int cli_migrate(int argc, char **argv);
/* The builder registry jobs use. */
const tune_builder *cli_default_builder(const char *data_dir);

#endif
