/* A thread-safe, line-at-a-time logger to stderr with an ISO-8601 UTC timestamp. One fprintf per line, so
 * lines from worker threads never interleave mid-line. */
#include "th_log.h"

#include "th_limits.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int th_log_level_current = TH_LOG_INFO;

static const char *const th__log_names[] = {"error", "warn", "info", "debug"};

void th_log_write(int level, const char *func, const char *fmt, ...) {
  char msg[TH_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  char when[32];
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
  if (level < 0) level = 0;
  if (level > 3) level = 3;
  fprintf(stderr, "%s.%03ldZ %-5s %s: %s\n", when, ts.tv_nsec / 1000000L, th__log_names[level], func, msg);
}

int th_log_set_level(const char *name) {
  for (int i = 0; i < 4; i++) {
    if (strcmp(name, th__log_names[i]) == 0) {
      th_log_level_current = i;
      return 0;
    }
  }
  return -1;
}
