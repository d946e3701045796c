/* The job routes: GET /jobs (the newest jobs, by state), GET /jobs/{id} and DELETE /jobs/{id} (cancel); a job's
 * live progress (GET /jobs/{id}/events) is events.c's. */
#include <stdio.h>
#include <string.h>

#include "longpoll.h"
#include "present.h"
#include "request.h"
#include "response.h"
#include "th_util.h"

static enum MHD_Result srv__jobs(srv_t *s, srv_request *r) {
  char state[32] = "", limit_s[16] = "";
  int hs = srv_query(r, "state", state, sizeof state);
  if (hs < 0) return srv_error(s, r, TH_ERR_INVALID, "invalid_query", NULL, "malformed query string");
  if (hs > 0 && state[0] && strcmp(state, "queued") && strcmp(state, "running") &&
      strcmp(state, "succeeded") && strcmp(state, "failed") && strcmp(state, "cancelled"))
    return srv_error(s, r, TH_ERR_INVALID, "invalid_state", NULL,
                     "invalid state '%s'; valid states: queued, running, succeeded, failed, cancelled",
                     state);
  int64_t limit = 100;
  if (srv_query(r, "limit", limit_s, sizeof limit_s) > 0 &&
      (th_parse_i64(limit_s, &limit) != TH_OK || limit < 1 || limit > 1000))
    return srv_error(s, r, TH_ERR_INVALID, "invalid_limit", NULL, "limit is a whole number from 1 to 1000");
  store_job *jobs = NULL;
  size_t n = 0;
  th_status rc = store_job_list(s->st, state[0] ? state : NULL, (int)limit, &jobs, &n);
  if (rc != TH_OK) return srv_error(s, r, rc, "store_error", NULL, "%s", store_errmsg(s->st));
  json_t *doc = srv_present_jobs(jobs, n);
  store_job_list_free(jobs, n);
  return srv_json_doc(s, r, 200, doc);
}

static enum MHD_Result srv__job(srv_t *s, srv_request *r, const char *id_s, int cancel) {
  int64_t id = 0;
  if (th_parse_i64(id_s, &id) != TH_OK || id < 1)
    return srv_error(s, r, TH_ERR_INVALID, "invalid_job_id", NULL, "a job id is a positive whole number");
  if (cancel) {
    th_status rc = store_job_cancel(s->st, id);
    if (rc == TH_ERR_NOT_FOUND) return srv_error(s, r, TH_ERR_NOT_FOUND, "job_unknown", NULL, "no job %lld", (long long)id);
    if (rc == TH_ERR_CONFLICT) return srv_error(s, r, rc, "job_ended", NULL, "%s", store_errmsg(s->st));
    if (rc != TH_OK) return srv_error(s, r, rc, "store_error", NULL, "%s", store_errmsg(s->st));
    srv_job_event(s, id);
  }
  store_job j;
  th_status rc = store_job_get(s->st, id, &j);
  if (rc == TH_ERR_NOT_FOUND) return srv_error(s, r, TH_ERR_NOT_FOUND, "job_unknown", NULL, "no job %lld", (long long)id);
  if (rc != TH_OK) return srv_error(s, r, rc, "store_error", NULL, "%s", store_errmsg(s->st));
  json_t *doc = srv_present_job(&j);
  store_job_clear(&j);
  return srv_json_doc(s, r, cancel ? 202 : 200, doc);
}

/* ---- the table's handlers (route_table.h) ---- */

enum MHD_Result srv_route_jobs(srv_t *s, srv_request *r, const srv_route_args *a) {
  (void)a;
  return srv__jobs(s, r);
}

enum MHD_Result srv_route_job(srv_t *s, srv_request *r, const srv_route_args *a) {
  return srv__job(s, r, a->seg[1], 0);
}

enum MHD_Result srv_route_job_cancel(srv_t *s, srv_request *r, const srv_route_args *a) {
  return srv__job(s, r, a->seg[1], 1);
}
