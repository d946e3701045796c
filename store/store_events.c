/* Job changes announced across processes. On a shared store (PostgreSQL) every write that changes a job (queued,
 * claimed, progress, a published version, its end) sends a NOTIFY on the channel tunehub_jobs, inside the write's
 * own transaction, so a listener hears of a change only once it is committed and readable. Daemons listen to
 * wake their long polls and feed their SSE streams with progress made by workers elsewhere; workers listen to
 * claim a new job at once. The embedded store has one process, whose scheduler tells its listeners directly: no
 * notification is sent there.
 *
 * Changes without a job (a version deleted or retired, an alias set or removed, a network uploaded or deleted)
 * are announced as "catalog" with job id 0: readers drop what they cached.
 *
 * Payload: "<job id> <kind> <origin> <version> <tuned> <digest>", origin being the sending store handle's
 * random token, so a process can skip what its own scheduler already told it. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "store_int.h"
#include "th_alloc.h"
#include "th_util.h"

#define STORE__CHANNEL "tunehub_jobs"

static const char *const store__ev_names[] = {"queued", "claimed",  "progress", "published",
                                              "done",   "catalog", "resync"};

const char *store_event_kind_str(store_event_kind k) {
  return (unsigned)k < sizeof store__ev_names / sizeof store__ev_names[0] ? store__ev_names[k] : "unknown";
}

void store__origin_init(store_t *st) {
  unsigned char r[8] = {0};
  if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
    uint64_t x = (uint64_t)(uintptr_t)st ^ (uint64_t)getpid() << 32;
    memcpy(r, &x, sizeof r);
  }
  for (int i = 0; i < 8; i++) snprintf(st->origin + 2 * i, 3, "%02x", r[i]);
}

const char *store_origin(const store_t *st) {
  return st->origin;
}

th_status store__announce(store_t *st, int64_t job_id, store_event_kind kind, int version, int tuned,
                          const char *digest) {
  if (!st->shared || (job_id <= 0 && kind != STORE_EV_CATALOG)) return TH_OK;
  char payload[200];
  snprintf(payload, sizeof payload, "%" PRId64 " %s %s %d %d %s", job_id, store_event_kind_str(kind), st->origin,
           version, tuned, digest && *digest ? digest : "-");
  if (db_notify(st->db, STORE__CHANNEL, payload) != TH_OK) return store__db_fail(st, "notify");
  return TH_OK;
}

struct store_listener {
  db_t *db;
  int listening;
};

th_status store_listener_open(store_t *st, store_listener **out) {
  *out = NULL;
  if (!st->shared) return store__fail(st, TH_ERR_UNSUPPORTED, "the embedded store has no notifications");
  store_listener *l = th_calloc(1, sizeof *l);
  if (!l) return store__fail(st, TH_ERR_NOMEM, "out of memory");
  char err[TH_ERR_MAX];
  pthread_mutex_lock(&st->mu);
  th_status rc = db_open_again(st->db, &l->db, err, sizeof err);
  pthread_mutex_unlock(&st->mu);
  if (rc != TH_OK) {
    free(l);
    return store__fail(st, rc, "%s", err);
  }
  if (db_listen(l->db, STORE__CHANNEL) != TH_OK) {
    rc = store__fail(st, db_errclass(l->db), "%s", db_errmsg(l->db));
    db_close(l->db);
    free(l);
    return rc;
  }
  l->listening = 1;
  *out = l;
  return TH_OK;
}

/* Parses a payload; 0 when it is not one of ours. */
static int store__parse_event(const char *p, store_event *ev) {
  char kind[16], digest[TH_HEX_MAX];
  long long id;
  memset(ev, 0, sizeof *ev);
  if (sscanf(p, "%lld %15s %16s %d %d %64s", &id, kind, ev->origin, &ev->version, &ev->tuned, digest) != 6)
    return 0;
  ev->job_id = id;
  for (size_t k = 0; k < sizeof store__ev_names / sizeof store__ev_names[0]; k++)
    if (!strcmp(kind, store__ev_names[k])) {
      ev->kind = (store_event_kind)k;
      snprintf(ev->digest, sizeof ev->digest, "%s", strcmp(digest, "-") ? digest : "");
      return 1;
    }
  return 0;
}

th_status store_listener_wait(store_listener *l, int timeout_ms, store_event *ev) {
  double deadline = th_now_mono() + timeout_ms / 1000.0;
  for (;;) {
    int left = (int)((deadline - th_now_mono()) * 1000);
    if (left < 0) return TH_ERR_TIMEOUT;
    if (!l->listening) {
      /* reconnects with the db layer's backoff; what was sent meanwhile is lost, so the caller re-reads */
      if (db_listen(l->db, STORE__CHANNEL) != TH_OK) {
        struct timespec ts = {0, 200 * 1000 * 1000};
        if (left > 200) nanosleep(&ts, NULL);
        if (th_now_mono() >= deadline) return TH_ERR_UNAVAILABLE;
        continue;
      }
      l->listening = 1;
      memset(ev, 0, sizeof *ev);
      ev->kind = STORE_EV_RESYNC;
      return TH_OK;
    }
    char payload[256];
    th_status rc = db_wait_notification(l->db, left, payload, sizeof payload);
    if (rc == TH_OK && store__parse_event(payload, ev)) return TH_OK;
    if (rc == TH_OK) continue; /* someone else's payload on our channel */
    if (rc == TH_ERR_TIMEOUT) return rc;
    l->listening = 0; /* the connection went away */
  }
}

const char *store_listener_errmsg(const store_listener *l) {
  return db_errmsg(l->db);
}

void store_listener_close(store_listener *l) {
  if (!l) return;
  db_close(l->db);
  free(l);
}
