/* Fault injection for the tuner's build-isolation tests (test_tuner_session.c for CPU libraries,
 * test_tuner_cuda.c for device images): tune_build_fault_hook hangs on one config and crashes on
 * another in the build child, and an exec'd build worker reads the two configs back from a file
 * that the test names in TH_TEST_BUILD_FAULTS. Header-only, for the test executables. */
#ifndef TEST_BUILD_FAULTS_H
#define TEST_BUILD_FAULTS_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "space.h"
#include "th_test.h"
#include "tune_task.h"

static tc_config g_hang_cfg, g_crash_cfg;
static int g_hang_mod; /* > 0: also hang on the configs whose knob hash modulo it is 1 */

static inline int same_cfg(const tc_config *a, const tc_config *b) {
  if (a->nknobs != b->nknobs) return 0;
  for (int i = 0; i < a->nknobs; i++)
    if (a->idx[i] != b->idx[i]) return 0;
  return 1;
}

static inline void fault_hook(const tc_config *c) {
  unsigned h = 0;
  for (int i = 0; i < c->nknobs; i++) h = h * 31u + (unsigned)c->idx[i];
  if (same_cfg(c, &g_hang_cfg) || (g_hang_mod > 0 && h % (unsigned)g_hang_mod == 1u))
    for (;;) pause();
  if (same_cfg(c, &g_crash_cfg)) raise(SIGSEGV);
}

/* Writes the hang and crash configs to path and names it in TH_TEST_BUILD_FAULTS for exec'd
 * workers. */
static inline void faults_write(const char *path) {
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  CHECK(fwrite(&g_hang_cfg, sizeof g_hang_cfg, 1, f) == 1 &&
        fwrite(&g_crash_cfg, sizeof g_crash_cfg, 1, f) == 1);
  CHECK(fclose(f) == 0);
  CHECK(setenv("TH_TEST_BUILD_FAULTS", path, 1) == 0);
}

/* In an exec'd build worker: the faults of TH_TEST_BUILD_FAULTS, when named, become its hook. */
static inline void faults_load(void) {
  const char *faults = getenv("TH_TEST_BUILD_FAULTS");
  FILE *f = faults ? fopen(faults, "rb") : NULL;
  if (!f) return;
  if (fread(&g_hang_cfg, sizeof g_hang_cfg, 1, f) == 1 &&
      fread(&g_crash_cfg, sizeof g_crash_cfg, 1, f) == 1)
    tune_build_fault_hook = fault_hook;
  fclose(f);
}

#endif
