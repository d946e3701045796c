/* Admission guards for new work (see guard.h). A key's build is planned before it is queued (the
 * graph passes and the memory plan, no code generated: tens of milliseconds), so that a build the
 * machine cannot hold is refused at the request instead of running alone past the budget; free
 * space is read with statvfs before a miss, a tune or an upload is taken, and the store checks it
 * again before an artifact is written (store_set_min_free). */
#include "guard.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>

#include "builder.h"
#include "response.h"

int64_t srv_min_free_default(const char *data_dir) {
  struct statvfs v;
  if (statvfs(data_dir, &v) != 0) return 0;
  int64_t size = (int64_t)v.f_blocks * (int64_t)v.f_frsize;
  int64_t pct = size / 20, gib = (int64_t)1 << 30;
  return pct < gib ? pct : gib;
}

th_status srv_guard_footprint(srv_t *s, const store_key *key, char *why, size_t n) {
  if (s->mem_budget <= 0) return TH_OK;
  tc_footprint fp;
  if (tune_key_footprint(s->st, key, NULL, NULL, &fp, NULL, 0) != TH_OK) return TH_OK;
  if (fp.peak_bytes <= s->mem_budget) return TH_OK;
  snprintf(why, n,
           "a build of %s/%s/%d needs about %" PRId64 " bytes (%.2f GiB: weights %" PRId64
           " bytes, workspace %" PRId64
           " bytes, as planned), more than this server's memory budget of %" PRId64
           " bytes (%.2f GiB, --memory-budget); nothing was queued: choose a smaller batch",
           key->framework, key->network, key->batch, fp.peak_bytes, fp.peak_bytes / 1073741824.0,
           fp.params_bytes, fp.workspace_bytes, s->mem_budget, s->mem_budget / 1073741824.0);
  return TH_ERR_TOO_LARGE;
}

th_status srv_guard_space(srv_t *s, int64_t need, const char *what, char *why, size_t n) {
  if (store_min_free(s->st) <= 0) return TH_OK;
  th_status rc = store_space_check(s->st, need, what);
  if (rc != TH_OK)
    snprintf(why, n, "%s; nothing was queued or stored, published models are still served",
             store_errmsg(s->st));
  return rc;
}

enum MHD_Result srv_guard_error(srv_t *s, srv_request *r, th_status rc, const char *code,
                                const char *why) {
  if (rc == TH_ERR_TOO_LARGE) return srv_error(s, r, rc, "over_budget", NULL, "%s", why);
  if (rc == TH_ERR_NO_SPACE) {
    int64_t avail = 0;
    char extra[128] = "";
    if (store_free_space(s->st, &avail) == TH_OK)
      snprintf(extra, sizeof extra, "{\"free_bytes\":%" PRId64 ",\"min_free_bytes\":%" PRId64 "}",
               avail, store_min_free(s->st));
    return srv_error(s, r, rc, "insufficient_storage", extra[0] ? extra : NULL, "%s", why);
  }
  return srv_error(s, r, rc, code, NULL, "%s", why);
}

void srv_guard_readyz(srv_t *s, json_t *doc) {
  int64_t avail = 0, floor = store_min_free(s->st);
  if (store_free_space(s->st, &avail) != TH_OK) return;
  json_object_set_new(doc, "data_free_bytes", json_integer((json_int_t)avail));
  json_object_set_new(doc, "min_free_bytes", json_integer((json_int_t)floor));
  json_object_set_new(doc, "disk", json_string(floor > 0 && avail < floor ? "low" : "ok"));
}

void srv_guard_metrics(srv_t *s, th_buf *b) {
  int64_t avail = 0;
  if (store_free_space(s->st, &avail) == TH_OK)
    th_buf_appendf(
        b,
        "# HELP tunehub_data_free_bytes Bytes free on the data directory's file system.\n"
        "# TYPE tunehub_data_free_bytes gauge\ntunehub_data_free_bytes %" PRId64 "\n",
        avail);
  th_buf_appendf(
      b,
      "# HELP tunehub_data_min_free_bytes The free-space floor below which new work is refused "
      "(--min-free).\n# TYPE tunehub_data_min_free_bytes gauge\ntunehub_data_min_free_bytes "
      "%" PRId64 "\n",
      store_min_free(s->st));
}
