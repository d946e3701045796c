/* GET /models/{fw}/{net}/{batch}/provenance (?version=N): the DSSE envelope of a published
 * version's signed in-toto statement (tuner/provenance.h), which the daemon stored beside the
 * bundle when it published the version with --signing-key. A version published unsigned is a 404
 * that says so: a signature is never made after the fact, since the statement speaks of the build
 * and measurement the publishing daemon saw. */
#include "provenance.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "request.h"
#include "response.h"
#include "routes.h"
#include "srv_int.h"
#include "th_util.h"

enum MHD_Result srv_route_provenance(srv_t *s, srv_request *r, const srv_route_args *a) {
  const store_key *key = a->key;
  char vs[24] = "";
  int64_t version = 0;
  int hv = srv_query(r, "version", vs, sizeof vs);
  if (hv < 0 ||
      (hv > 0 && (th_parse_i64(vs, &version) != TH_OK || version < 1 || version > INT_MAX)))
    return srv_error(s, r, TH_ERR_INVALID, "invalid_version", NULL,
                     "invalid version '%s'; a version is a whole number from 1 to %d (GET "
                     ".../versions lists them)",
                     vs, INT_MAX);
  th_status rc = TH_OK;
  if (!hv) { /* the newest version, as GET /models/{key} serves it (a miss queues nothing here) */
    store_model m;
    rc = store_model_get(s->st, key, 0, &m);
    if (rc == TH_ERR_NOT_FOUND)
      return srv_error(s, r, rc, "not_built", NULL,
                       "%s/%s/%d has no published version yet; GET /models/%s/%s/%d builds it",
                       key->framework, key->network, key->batch, key->framework, key->network,
                       key->batch);
    if (rc != TH_OK) return srv_error(s, r, rc, "store_error", NULL, "%s", store_errmsg(s->st));
    version = m.version;
    store_model_clear(&m);
  }
  char digest[TH_HEX_MAX];
  rc = store_model_provenance(s->st, key, (int)version, digest);
  if (rc == TH_ERR_NOT_FOUND)
    return srv_error(
        s, r, rc, "no_provenance", NULL,
        "no signed provenance: %s (a daemon signs what it publishes only when started with "
        "--signing-key)",
        store_errmsg(s->st));
  if (rc != TH_OK) return srv_error(s, r, rc, "store_error", NULL, "%s", store_errmsg(s->st));
  char path[1400];
  int64_t size = 0;
  rc = store_artifact_path(s->st, digest, path, sizeof path, &size, NULL, 0);
  if (rc != TH_OK)
    return srv_error(s, r, rc == TH_ERR_UNAVAILABLE ? rc : TH_ERR_IO, "artifact_missing", NULL,
                     "%s", store_errmsg(s->st));
  char filename[200], vbuf[16];
  snprintf(filename, sizeof filename, "%s_%s_b%d_v%d.provenance.json", key->network, key->framework,
           key->batch, (int)version);
  snprintf(vbuf, sizeof vbuf, "%d", (int)version);
  const char *hdrs[][2] = {{"X-Tunehub-Version", vbuf}, {NULL, NULL}};
  return srv_send_file(s, r, path, size, digest, TUNE_PROV_ENVELOPE_MEDIA, filename, 0, hdrs);
}
