/* Garbage collection of blobs around store_gc: `tunehub gc [--dry-run]` for an operator, and the daemon's
 * collector thread, which runs it every --gc-interval seconds, logs one line per run and keeps the counts
 * /metrics shows. On a shared store every daemon runs the thread, and store_gc's lock lets one at a time
 * sweep the database's rows; the others clean only their own cache. */
#include "gc.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "store.h"
#include "th_log.h"
#include "th_util.h"

/* The report's one-line summary (the CLI's last line and the daemon's log line). */
static void srv__gc_summary(const store_gc_report *r, int dry_run, double grace_s, char *out, size_t n) {
  if (r->locked_out && !r->leftovers) {
    snprintf(out, n, "another process is collecting this store's blobs: nothing swept (%.2f s)", r->seconds);
    return;
  }
  snprintf(out, n,
           "%s%lld blob(s) (%lld bytes) and %lld leftover file(s) (%lld bytes)%s; kept %lld referenced blob(s) "
           "(%lld bytes) and %lld unreferenced within the %.0f s grace period (%lld bytes); %lld deleted "
           "version(s) %sremoved with their blobs, in %.2f s",
           dry_run ? "would sweep " : "swept ", (long long)r->swept, (long long)r->swept_bytes,
           (long long)r->leftovers, (long long)r->leftover_bytes,
           r->locked_out ? " (rows left to the process that holds the collector's lock)" : "", (long long)r->marked,
           (long long)r->marked_bytes, (long long)r->young, grace_s, (long long)r->young_bytes,
           (long long)r->versions_purged, dry_run ? "would be " : "", r->seconds);
}

static json_t *srv__gc_json(const store_gc_report *r, int dry_run, double grace_s) {
  json_t *list = json_array();
  for (size_t i = 0; list && i < r->nremoved; i++) {
    const store_gc_blob *b = &r->removed[i];
    char digest[TH_DIGEST_MAX];
    snprintf(digest, sizeof digest, "sha256:%s", b->digest);
    json_array_append_new(list, json_pack("{s:s,s:I,s:s,s:b}", "digest", digest, "size", (json_int_t)b->size,
                                          "media_type", b->media_type, "leftover", b->leftover));
  }
  return json_pack("{s:b,s:f,s:b,s:{s:I,s:I},s:{s:I,s:I},s:{s:I,s:I},s:{s:I,s:I},s:I,s:f,s:o}", "dry_run",
                   dry_run, "grace_s", grace_s, "locked_out", r->locked_out, "marked", "blobs",
                   (json_int_t)r->marked, "bytes", (json_int_t)r->marked_bytes, "young", "blobs",
                   (json_int_t)r->young, "bytes", (json_int_t)r->young_bytes, "swept", "blobs",
                   (json_int_t)r->swept, "bytes", (json_int_t)r->swept_bytes, "leftovers", "files",
                   (json_int_t)r->leftovers, "bytes", (json_int_t)r->leftover_bytes, "versions_removed",
                   (json_int_t)r->versions_purged, "seconds", r->seconds, dry_run ? "would_remove" : "removed",
                   list);
}

/* `tunehub gc [--data DIR] [--db URL] [--grace SECONDS] [--dry-run] [--json]` */
int cli_gc(int argc, char **argv) {
  static const char usage_line[] =
      "usage: tunehub gc [--data DIR] [--db URL] [--grace SECONDS] [--dry-run] [--json]";
  if (cli_help(argc, argv, usage_line)) return 0;
  const char *data = "./data", *db_flag = NULL, *db = NULL;
  double grace = SRV_GC_GRACE_S;
  int dry_run = 0, as_json = 0;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--data") && i + 1 < argc) {
      data = argv[++i];
    } else if (!strcmp(argv[i], "--db") && i + 1 < argc) {
      db_flag = argv[++i];
    } else if (!strcmp(argv[i], "--grace") && i + 1 < argc) {
      const char *v = argv[++i];
      char *end = NULL;
      errno = 0;
      grace = strtod(v, &end);
      if (!*v || *end || errno || !isfinite(grace) || grace < 0) {
        fprintf(stderr,
                "tunehub gc: --grace takes a number of seconds >= 0 (default %d: an hour, longer than any "
                "publish takes from its put to its commit), got '%s'\n",
                SRV_GC_GRACE_S, v);
        return 2;
      }
    } else if (!strcmp(argv[i], "--dry-run")) {
      dry_run = 1;
    } else if (!strcmp(argv[i], "--json")) {
      as_json = 1;
    } else {
      fprintf(stderr, "tunehub gc: %s '%s'; valid: --data DIR --db URL --grace SECONDS --dry-run --json\n%s\n",
              argv[i][0] == '-' && (!strcmp(argv[i], "--data") || !strcmp(argv[i], "--db") ||
                                    !strcmp(argv[i], "--grace"))
                  ? "a value is missing after"
                  : "unknown argument",
              argv[i], usage_line);
      return 2;
    }
  }
  if (cli_db("gc", db_flag, &db) != 0) return 2;
  /* a mistyped directory or database is an error, not an empty store to collect */
  if (cli_store_needed("gc", db, data) < 0) return 1;
  store_t *st = cli_store_open("gc", db, data);
  if (!st) return 1;
  store_gc_report r;
  th_status rc = store_gc(st, grace, dry_run, &r);
  if (rc != TH_OK) {
    fprintf(stderr, "tunehub gc: %s\n", store_errmsg(st));
    store_close(st);
    return 1;
  }
  store_close(st);
  int status = 0;
  if (as_json) {
    json_t *doc = srv__gc_json(&r, dry_run, grace);
    char *text = doc ? json_dumps(doc, JSON_INDENT(2)) : NULL;
    json_decref(doc);
    if (text)
      printf("%s\n", text);
    else
      status = 1;
    free(text);
  } else {
    for (size_t i = 0; i < r.nremoved; i++) {
      const store_gc_blob *b = &r.removed[i];
      printf("%s sha256:%s %12lld bytes  %s\n", dry_run ? "would remove" : "removed", b->digest,
             (long long)b->size, b->leftover ? "(leftover file, no row)" : b->media_type);
    }
    char line[1024];
    srv__gc_summary(&r, dry_run, grace, line, sizeof line);
    printf("tunehub gc: %s\n", line);
  }
  store_gc_report_free(&r);
  if (status) fprintf(stderr, "tunehub gc: out of memory\n");
  return status;
}

/* One run of the daemon's collector: logged, and counted for /metrics. */
static void srv__gc_run(srv_t *s) {
  store_gc_report r;
  th_status rc = store_gc(s->st, s->cfg.gc_grace_s, 0, &r);
  char line[1024];
  if (rc == TH_OK) {
    srv__gc_summary(&r, 0, s->cfg.gc_grace_s, line, sizeof line);
    TH_LOG(TH_LOG_INFO, "gc: %s", line);
  } else {
    TH_LOG(TH_LOG_WARN, "gc: failed, nothing more swept until the next run: %s", store_errmsg(s->st));
  }
  pthread_mutex_lock(&s->metrics_mu);
  s->gc_last_run = th_now_wall();
  if (rc != TH_OK) {
    s->gc_runs[1]++;
  } else {
    s->gc_runs[r.locked_out ? 2 : 0]++;
    s->gc_swept_blobs += r.swept + r.leftovers;
    s->gc_swept_bytes += r.swept_bytes + r.leftover_bytes;
    if (!r.locked_out) s->gc_kept_bytes = r.marked_bytes + r.young_bytes;
  }
  pthread_mutex_unlock(&s->metrics_mu);
  if (rc == TH_OK) store_gc_report_free(&r);
}

static void *srv__gc_main(void *arg) {
  srv_t *s = arg;
  pthread_mutex_lock(&s->gc_mu);
  while (!s->gc_stop) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += s->cfg.gc_interval_s;
    int timed_out = 0;
    while (!s->gc_stop && !timed_out) timed_out = pthread_cond_timedwait(&s->gc_cv, &s->gc_mu, &until) != 0;
    if (s->gc_stop) break;
    pthread_mutex_unlock(&s->gc_mu);
    srv__gc_run(s);
    pthread_mutex_lock(&s->gc_mu);
  }
  pthread_mutex_unlock(&s->gc_mu);
  return NULL;
}

th_status srv_gc_start(srv_t *s, char *err, size_t n) {
  pthread_mutex_init(&s->gc_mu, NULL);
  pthread_cond_init(&s->gc_cv, NULL);
  if (s->cfg.gc_interval_s <= 0) {
    TH_LOG(TH_LOG_INFO, "gc: off (--gc-interval 0); `tunehub gc` collects on demand");
    return TH_OK;
  }
  if (pthread_create(&s->gc_thread, NULL, srv__gc_main, s) != 0) {
    snprintf(err, n, "cannot start the garbage collector's thread");
    return TH_ERR_INTERNAL;
  }
  s->gc_started = 1;
  TH_LOG(TH_LOG_INFO, "gc: every %d s, sweeping blobs unreferenced for %d s", s->cfg.gc_interval_s,
         s->cfg.gc_grace_s);
  return TH_OK;
}

void srv_gc_stop(srv_t *s) {
  if (!s->gc_started) return;
  pthread_mutex_lock(&s->gc_mu);
  s->gc_stop = 1;
  pthread_cond_broadcast(&s->gc_cv);
  pthread_mutex_unlock(&s->gc_mu);
  pthread_join(s->gc_thread, NULL);
  s->gc_started = 0;
}

void srv_gc_metrics(srv_t *s, th_buf *b) {
  static const char *const outcomes[3] = {"ok", "error", "locked_out"};
  pthread_mutex_lock(&s->metrics_mu);
  int64_t runs[3] = {s->gc_runs[0], s->gc_runs[1], s->gc_runs[2]};
  int64_t blobs = s->gc_swept_blobs, bytes = s->gc_swept_bytes, kept = s->gc_kept_bytes;
  double last = s->gc_last_run;
  pthread_mutex_unlock(&s->metrics_mu);
  th_buf_appendf(b,
                 "# HELP tunehub_gc_runs_total Blob garbage collections this daemon ran, by outcome (locked_out: "
                 "another process was collecting the shared store's rows).\n"
                 "# TYPE tunehub_gc_runs_total counter\n");
  for (int i = 0; i < 3; i++)
    th_buf_appendf(b, "tunehub_gc_runs_total{outcome=\"%s\"} %lld\n", outcomes[i], (long long)runs[i]);
  th_buf_appendf(b,
                 "# HELP tunehub_gc_swept_blobs_total Blobs and leftover files this daemon's collections removed.\n"
                 "# TYPE tunehub_gc_swept_blobs_total counter\ntunehub_gc_swept_blobs_total %lld\n"
                 "# HELP tunehub_gc_swept_bytes_total Bytes of the blobs and leftover files this daemon's "
                 "collections removed.\n"
                 "# TYPE tunehub_gc_swept_bytes_total counter\ntunehub_gc_swept_bytes_total %lld\n"
                 "# HELP tunehub_gc_kept_bytes Bytes of the blobs the last collection kept (referenced, or within "
                 "the grace period).\n"
                 "# TYPE tunehub_gc_kept_bytes gauge\ntunehub_gc_kept_bytes %lld\n"
                 "# HELP tunehub_gc_last_run_timestamp_seconds Unix time of the last collection's end (0: none "
                 "yet).\n"
                 "# TYPE tunehub_gc_last_run_timestamp_seconds gauge\ntunehub_gc_last_run_timestamp_seconds %.3f\n",
                 (long long)blobs, (long long)bytes, (long long)kept, last);
}
