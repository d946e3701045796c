/* `tunehub serve` configuration: defaults for the embedded single-machine setup and strict flag parsing that
 * names the valid form of each flag. Limits that libmicrohttpd leaves open (connection timeout, per-IP
 * connections) get explicit values here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "srv.h"
#include "store.h"
#include "th_log.h"
#include "th_util.h"

void srv_config_defaults(srv_config *c) {
  memset(c, 0, sizeof *c);
  snprintf(c->listen_host, sizeof c->listen_host, "127.0.0.1");
  c->port = 8080;
  snprintf(c->data_dir, sizeof c->data_dir, "./data");
  snprintf(c->web_dir, sizeof c->web_dir, "%s", TH_WEB_DIR);
  c->workers = 4; /* jobs the scheduler admits at once; their stages share the CPU pool */
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  c->http_threads = cores > 1 ? (int)(cores < 8 ? cores : 8) : 2;
  c->max_batch = 256;
  c->max_queued = 256;
  c->connection_limit = 1000;
  c->per_ip_limit = 256; /* one client may not hold the whole connection budget (1000) */
  c->miss_rate = 60;      /* new jobs an anonymous client may cause a minute */
  c->anon_jobs_per_ip = 4;  /* ... and live at once */
  c->anon_queue_share = 50; /* the other half of the queue is kept for token holders */
  c->max_waits_per_ip = 32;
  c->timeout_s = 30;
  c->miss_tunes = 1;
  c->cpu_slots = 0;
  c->max_streams = 64;
  c->max_streams_per_ip = 8;
  c->max_upload = (int64_t)2 << 30;
  c->lease_s = 30;
  c->gc_interval_s = 3600;
  c->gc_grace_s = SRV_GC_GRACE_S;
  c->auth_fail_limit = SRV_AUTH_FAILS_PER_MIN;
  c->min_free = -1; /* srv_min_free_default, once the data directory's file system is known */
}

/* A byte count: a whole number with an optional K, M, G, T or P (binary: KiB, MiB, GiB, TiB, PiB),
 * from lo to hi. */
th_status srv_bytes_flag(const char *flag, const char *v, int64_t lo, int64_t hi, int64_t *out, char *err, size_t n) {
  char num[32];
  size_t len = v ? strlen(v) : 0;
  int shift = 0;
  if (len > 0 && len < sizeof num) {
    memcpy(num, v, len + 1);
    char u = num[len - 1];
    shift = u == 'K' || u == 'k'   ? 10
            : u == 'M' || u == 'm' ? 20
            : u == 'G' || u == 'g' ? 30
            : u == 'T' || u == 't' ? 40
            : u == 'P' || u == 'p' ? 50
                                   : 0;
    if (shift) num[len - 1] = '\0';
  }
  int64_t x = 0;
  if (!len || len >= sizeof num || th_parse_i64(num, &x) != TH_OK || x < 1 || x > (hi >> shift) ||
      (x << shift) < lo) {
    snprintf(err, n,
             "%s takes a size in bytes from %lld to %lld, optionally with K, M, G, T or P (e.g. "
             "2G), got '%s'",
             flag, (long long)lo, (long long)hi, v ? v : "");
    return TH_ERR_INVALID;
  }
  *out = x << shift;
  return TH_OK;
}

static th_status srv__int_flag(const char *flag, const char *v, int lo, int hi, int *out, char *err,
                               size_t n) {
  int64_t x = 0;
  if (!v || th_parse_i64(v, &x) != TH_OK || x < lo || x > hi) {
    snprintf(err, n, "%s takes a whole number from %d to %d, got '%s'", flag, lo, hi, v ? v : "");
    return TH_ERR_INVALID;
  }
  *out = (int)x;
  return TH_OK;
}

static th_status srv__str_flag(const char *flag, const char *v, char *out, size_t cap, char *err,
                               size_t n) {
  if (!v || !*v || strlen(v) >= cap) {
    snprintf(err, n, "%s takes a value of 1 to %zu characters", flag, cap - 1);
    return TH_ERR_INVALID;
  }
  memcpy(out, v, strlen(v) + 1);
  return TH_OK;
}

th_status srv_config_parse(srv_config *c, int argc, char **argv, char *err, size_t n) {
  th_status rc = TH_OK;
  for (int i = 0; i < argc && rc == TH_OK; i++) {
    const char *f = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(f, "--private")) { /* the one flag without a value */
      c->private_reads = 1;
      continue;
    }
    if (!strcmp(f, "--listen")) {
      const char *colon = v ? strrchr(v, ':') : NULL;
      if (!colon || colon == v || (size_t)(colon - v) >= sizeof c->listen_host) {
        snprintf(err, n, "--listen takes HOST:PORT, e.g. 127.0.0.1:8080, got '%s'", v ? v : "");
        return TH_ERR_INVALID;
      }
      memcpy(c->listen_host, v, (size_t)(colon - v));
      c->listen_host[colon - v] = '\0';
      rc = srv__int_flag("--listen port", colon + 1, 0, 65535, &c->port, err, n);
    } else if (!strcmp(f, "--data")) {
      rc = srv__str_flag(f, v, c->data_dir, sizeof c->data_dir, err, n);
    } else if (!strcmp(f, "--db")) {
      rc = srv__str_flag(f, v, c->db, sizeof c->db, err, n);
    } else if (!strcmp(f, "--token-file")) {
      rc = srv__str_flag(f, v, c->token_file, sizeof c->token_file, err, n);
    } else if (!strcmp(f, "--signing-key")) {
      rc = srv__str_flag(f, v, c->signing_key, sizeof c->signing_key, err, n);
    } else if (!strcmp(f, "--web")) {
      rc = srv__str_flag(f, v, c->web_dir, sizeof c->web_dir, err, n);
    } else if (!strcmp(f, "--workers")) {
      rc = srv__int_flag(f, v, 0, 64, &c->workers, err, n);
    } else if (!strcmp(f, "--lease")) {
      rc = srv__int_flag(f, v, 1, 3600, &c->lease_s, err, n);
    } else if (!strcmp(f, "--build-slots")) {
      rc = srv__int_flag(f, v, 1, 256, &c->cpu_slots, err, n);
    } else if (!strcmp(f, "--max-streams")) {
      rc = srv__int_flag(f, v, 1, 10000, &c->max_streams, err, n);
    } else if (!strcmp(f, "--max-streams-per-ip")) {
      rc = srv__int_flag(f, v, 1, 10000, &c->max_streams_per_ip, err, n);
    } else if (!strcmp(f, "--http-threads")) {
      rc = srv__int_flag(f, v, 1, 64, &c->http_threads, err, n);
    } else if (!strcmp(f, "--max-batch")) {
      rc = srv__int_flag(f, v, 1, 4096, &c->max_batch, err, n);
    } else if (!strcmp(f, "--max-queued")) {
      rc = srv__int_flag(f, v, 1, 100000, &c->max_queued, err, n);
    } else if (!strcmp(f, "--connection-limit")) {
      rc = srv__int_flag(f, v, 1, 100000, &c->connection_limit, err, n);
    } else if (!strcmp(f, "--max-connections-per-ip")) {
      rc = srv__int_flag(f, v, 1, 100000, &c->per_ip_limit, err, n);
    } else if (!strcmp(f, "--miss-rate")) {
      rc = srv__int_flag(f, v, 0, 1000000, &c->miss_rate, err, n);
    } else if (!strcmp(f, "--anon-jobs-per-ip")) {
      rc = srv__int_flag(f, v, 0, 100000, &c->anon_jobs_per_ip, err, n);
    } else if (!strcmp(f, "--anon-queue-share")) {
      rc = srv__int_flag(f, v, 0, 100, &c->anon_queue_share, err, n);
    } else if (!strcmp(f, "--max-waits-per-ip")) {
      rc = srv__int_flag(f, v, 1, 1024, &c->max_waits_per_ip, err, n);
    } else if (!strcmp(f, "--timeout")) {
      rc = srv__int_flag(f, v, 1, 3600, &c->timeout_s, err, n);
    } else if (!strcmp(f, "--on-miss")) {
      if (!v || (strcmp(v, "tune") && strcmp(v, "build"))) {
        snprintf(err, n, "--on-miss takes tune (quick build as v1, then tune and publish v2) or build "
                         "(quick build only), got '%s'", v ? v : "");
        return TH_ERR_INVALID;
      }
      c->miss_tunes = !strcmp(v, "tune");
    } else if (!strcmp(f, "--max-upload")) {
      rc = srv_bytes_flag(f, v, 1, (int64_t)1 << 40, &c->max_upload, err, n);
    } else if (!strcmp(f, "--memory-budget")) {
      rc = srv_bytes_flag(f, v, (int64_t)64 << 20, (int64_t)1 << 50, &c->mem_budget, err, n);
    } else if (!strcmp(f, "--min-free")) {
      if (v && !strcmp(v, "0"))
        c->min_free = 0;
      else
        rc = srv_bytes_flag(f, v, 1, (int64_t)1 << 60, &c->min_free, err, n);
    } else if (!strcmp(f, "--keep-versions")) {
      rc = srv__int_flag(f, v, 0, 1000000, &c->keep_versions, err, n);
    } else if (!strcmp(f, "--gc-interval")) {
      rc = srv__int_flag(f, v, 0, 30 * 86400, &c->gc_interval_s, err, n);
    } else if (!strcmp(f, "--gc-grace")) {
      rc = srv__int_flag(f, v, 0, 365 * 86400, &c->gc_grace_s, err, n);
    } else if (!strcmp(f, "--miss-trials")) {
      rc = srv__int_flag(f, v, 1, 100000, &c->miss_trials, err, n);
    } else if (!strcmp(f, "--log-level")) {
      if (!v || th_log_set_level(v) != 0) {
        snprintf(err, n, "--log-level takes error, warn, info or debug");
        return TH_ERR_INVALID;
      }
    } else {
      snprintf(err, n,
               "unknown flag '%s'; valid: --listen HOST:PORT --data DIR --db URL --token-file F "
               "--signing-key F --private "
               "--workers N --lease S --build-slots N --max-streams N --max-streams-per-ip N "
               "--http-threads N --max-batch N --max-queued N --connection-limit N "
               "--max-connections-per-ip N --miss-rate N --anon-jobs-per-ip N "
               "--anon-queue-share PERCENT --max-waits-per-ip N --timeout S --web DIR "
               "--on-miss tune|build --miss-trials N --max-upload BYTES --memory-budget BYTES "
               "--min-free BYTES --keep-versions N --gc-interval S --gc-grace S --log-level L",
               f);
      return TH_ERR_INVALID;
    }
    i++; /* every flag takes a value */
  }
  /* without --db, the environment may name the shared store */
  const char *db = NULL;
  if (rc == TH_OK) rc = store_db_resolve(c->db[0] ? c->db : NULL, &db, err, n);
  if (rc == TH_OK && db && db != c->db)
    rc = srv__str_flag("TUNEHUB_DB", db, c->db, sizeof c->db, err, n);
  if (rc == TH_OK && c->workers == 0 && !c->db[0]) {
    snprintf(err, n,
             "--workers 0 (a serving replica that runs no jobs) needs --db postgresql://...: with the embedded "
             "store in --data, no other process would run its jobs");
    return TH_ERR_INVALID;
  }
  if (rc == TH_OK && c->private_reads && !c->token_file[0]) {
    snprintf(err, n,
             "--private needs --token-file: every read then needs a token with the scope read (or "
             "tune, admin), and without a token file there would be none");
    return TH_ERR_INVALID;
  }
  return rc;
}
