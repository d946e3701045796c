/* GET /records and POST /records: the store's tuning records as JSON Lines over HTTP, in the format
 * and with the checks of `tunehub records export|import` (records.c). GET answers the whole export
 * at once (application/x-ndjson, at most SRV_RECORDS_MAX_EXPORT bytes); POST takes a body of at
 * most SRV_RECORDS_MAX_BODY bytes (http.c), checks every line before it stores any, and adds the
 * records in one transaction, skipping those already stored. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "records.h"
#include "request.h"
#include "response.h"
#include "srv.h"
#include "th_log.h"
#include "th_util.h"

/* The export's filters from the query (strings in the caller's buffers): 0, or -1 with why in err.
 */
static int srv__records_query(const srv_request *r, records_filter *f, char fw[64], char tg[64],
                              char net[SRV_MAX_SEGMENT], char *err, size_t n) {
  static const char *const names[] = {"framework", "target", "network"};
  char *bufs[] = {fw, tg, net};
  size_t sizes[] = {64, 64, SRV_MAX_SEGMENT};
  const char **fields[] = {&f->framework, &f->target, &f->network};
  memset(f, 0, sizeof *f);
  for (int i = 0; i < 3; i++) {
    int q = srv_query(r, names[i], bufs[i], sizes[i]);
    if (q < 0 || (q > 0 && !bufs[i][0])) {
      snprintf(err, n, "query parameter '%s' is malformed, empty or longer than %zu bytes",
               names[i], sizes[i] - 1);
      return -1;
    }
    *fields[i] = q > 0 ? bufs[i] : NULL;
  }
  char v[32];
  int q = srv_query(r, "batch", v, sizeof v);
  if (q != 0 && (q < 0 || th_parse_i64(v, &f->batch) != TH_OK || f->batch < 1 || f->batch > 4096)) {
    snprintf(err, n, "invalid batch '%s'; the batch is a whole number from 1 to 4096",
             q > 0 ? v : "");
    return -1;
  }
  q = srv_query(r, "best", v, sizeof v);
  if (q < 0 || (q > 0 && strcmp(v, "0") && strcmp(v, "1") && v[0])) {
    snprintf(err, n, "invalid best '%s'; valid: 1 (the record a build applies per workload) or 0",
             q > 0 ? v : "");
    return -1;
  }
  f->best = q > 0 && strcmp(v, "0");
  return 0;
}

static enum MHD_Result srv__records_get(srv_t *s, srv_request *r) {
  records_filter f;
  char fw[64], tg[64], net[SRV_MAX_SEGMENT], err[TH_MSG_MAX];
  if (srv__records_query(r, &f, fw, tg, net, err, sizeof err))
    return srv_error(s, r, TH_ERR_INVALID, "invalid_query", NULL, "%s", err);
  th_buf text;
  th_buf_init(&text, SRV_RECORDS_MAX_EXPORT);
  th_status rc = records_export(s->st, &f, &text, NULL, err, sizeof err);
  if (rc != TH_OK) {
    th_buf_free(&text);
    const char *code = rc == TH_ERR_INVALID     ? "invalid_query"
                       : rc == TH_ERR_NOT_FOUND ? "unknown_network"
                       : rc == TH_ERR_TOO_LARGE ? "export_too_large"
                                                : "store_error";
    return srv_error(s, r, rc, code, NULL, "%s", err);
  }
  size_t len = text.len;
  struct MHD_Response *resp = srv_response_buffer(th_buf_steal(&text), len);
  if (resp) MHD_add_response_header(resp, "Content-Type", "application/x-ndjson");
  if (resp) MHD_add_response_header(resp, "Cache-Control", "no-store");
  return srv_queue(s, r, 200, resp);
}

static enum MHD_Result srv__records_post(srv_t *s, srv_request *r) {
  if (r->body.len == 0)
    return srv_error(s, r, TH_ERR_INVALID, "invalid_records", "{\"line\":0}",
                     "the body is empty; send the JSON Lines of `tunehub records export` (a header "
                     "line {\"tunehub_records\":%d, ...}, then one record a line)",
                     RECORDS_FORMAT);
  FILE *f = fmemopen(r->body.data, r->body.len, "r");
  if (!f) return srv_error(s, r, TH_ERR_NOMEM, "internal_error", NULL, "cannot read the body");
  records_parsed p;
  char err[TH_MSG_MAX];
  th_status rc = records_parse(f, &p, err, sizeof err);
  fclose(f);
  if (rc == TH_ERR_INVALID) {
    char extra[64];
    snprintf(extra, sizeof extra, "{\"line\":%lld}", (long long)p.line);
    return srv_error(s, r, rc, "invalid_records", extra, "line %lld: %s; nothing was imported",
                     (long long)p.line, err);
  }
  if (rc != TH_OK) return srv_error(s, r, rc, "internal_error", NULL, "%s", err);
  int64_t added = 0;
  rc = store_record_import(s->st, p.recs, p.n, &added);
  if (rc != TH_OK) {
    records_parsed_free(&p);
    return srv_error(s, r, rc, "store_error", NULL, "%s; nothing was imported",
                     store_errmsg(s->st));
  }
  json_t *targets = json_array();
  for (int i = 0; targets && i < p.ntargets; i++)
    json_array_append_new(targets, json_string(p.targets[i]));
  json_t *doc = json_pack("{s:I, s:I, s:o}", "imported", (json_int_t)added, "present",
                          (json_int_t)((int64_t)p.n - added), "targets", targets);
  TH_LOG(TH_LOG_INFO, "records: imported %lld records (%lld already present) for %d targets",
         (long long)added, (long long)((int64_t)p.n - added), p.ntargets);
  records_parsed_free(&p);
  return srv_json_doc(s, r, 200, doc);
}

enum MHD_Result srv_route_records(srv_t *s, srv_request *r, const srv_route_args *a) {
  (void)a;
  return strcmp(r->method, "POST") ? srv__records_get(s, r) : srv__records_post(s, r);
}
