/* Logging for binaries (server/, CLI). Library code returns errors and does not print; the daemon and the
 * command line log through TH_LOG, which checks the level before formatting and adds the function name. */
#ifndef TH_LOG_H
#define TH_LOG_H

enum th_log_level { TH_LOG_ERROR = 0, TH_LOG_WARN = 1, TH_LOG_INFO = 2, TH_LOG_DEBUG = 3 };

extern int th_log_level_current;

void th_log_write(int level, const char *func, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Sets the level from a name ("error", "warn", "info", "debug"); returns 0, or -1 for an unknown name. */
int th_log_set_level(const char *name);

#define TH_LOG(level, ...)                                                \
  do {                                                                    \
    if ((level) <= th_log_level_current) th_log_write((level), __func__, __VA_ARGS__); \
  } while (0)

#endif
