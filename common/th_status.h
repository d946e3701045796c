/* th_status: the one status enum shared by every tunehub module.
 * The X-macro below is the single source of the codes, their names, their messages and the HTTP status
 * that server/ maps them to. Codes are appended, never renumbered, so logs and records stay readable.
 * A missing device answers 501, not 503: this server cannot do it, and retrying will not help (a 503 would keep
 * `curl -f --retry` pipelines waiting for an hour on a request that cannot succeed). TH_ERR_UNAVAILABLE is the
 * opposite case: the database went away for a while (a PostgreSQL restart), and a retry will succeed. */
#ifndef TH_STATUS_H
#define TH_STATUS_H

/* X(name, value, http status, message) */
#define TH_STATUS_MAP(X)                                                     \
  X(TH_OK, 0, 200, "ok")                                                     \
  X(TH_ERR_INVALID, 1, 400, "invalid argument")                              \
  X(TH_ERR_NOT_FOUND, 2, 404, "not found")                                   \
  X(TH_ERR_NOMEM, 3, 500, "out of memory")                                   \
  X(TH_ERR_IO, 4, 500, "i/o error")                                          \
  X(TH_ERR_DB, 5, 500, "database error")                                     \
  X(TH_ERR_CONFLICT, 6, 409, "conflict")                                     \
  X(TH_ERR_UNSUPPORTED, 7, 501, "not supported")                             \
  X(TH_ERR_BUSY, 8, 429, "busy, try again later")                            \
  X(TH_ERR_CORRUPT, 9, 422, "corrupt or truncated data")                     \
  X(TH_ERR_COMPILE, 10, 500, "compilation failed")                           \
  X(TH_ERR_NO_DEVICE, 11, 501, "no device")                                  \
  X(TH_ERR_CANCELLED, 12, 409, "cancelled")                                  \
  X(TH_ERR_TIMEOUT, 13, 504, "timed out")                                    \
  X(TH_ERR_RUNTIME, 14, 500, "runtime error")                                \
  X(TH_ERR_UNAUTHORIZED, 15, 401, "unauthorized")                            \
  X(TH_ERR_TOO_LARGE, 16, 413, "too large")                                  \
  X(TH_ERR_WRONG_ANSWER, 17, 500, "wrong answer")                            \
  X(TH_ERR_INTERNAL, 18, 500, "internal error")                              \
  X(TH_ERR_UNAVAILABLE, 19, 503, "temporarily unavailable")                 \
  X(TH_ERR_FORBIDDEN, 20, 403, "forbidden")                                  \
  X(TH_ERR_NO_SPACE, 21, 507, "insufficient storage")

typedef enum th_status {
#define TH__STATUS_ENUM(name, value, http, msg) name = value,
  TH_STATUS_MAP(TH__STATUS_ENUM)
#undef TH__STATUS_ENUM
  TH_STATUS_COUNT
} th_status;

_Static_assert(TH_STATUS_COUNT == 22, "update the status table when adding codes");

/* The code's constant name ("TH_ERR_INVALID"). Never NULL. */
const char *th_status_name(th_status s);
/* A short human message for the code ("invalid argument"). Never NULL. */
const char *th_status_str(th_status s);
/* The HTTP status the code stands for; only server/ should call this. */
int th_status_http(th_status s);

#endif
