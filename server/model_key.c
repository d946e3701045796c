/* Model keys: the (framework, network, batch, ?target=, ?precision=) of a request made into a store_key, with the
 * 4xx that lists the valid values when a part is wrong, and the questions asked of a key (its OCI suffix, whether
 * its target can be tuned here). The router, the model routes, the aliases and the OCI face validate through it,
 * so that one key means one thing on every face. */
#include "model_key.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builder.h"
#include "request.h"
#include "response.h"
#include "tc/backend.h"
#include "tc/tc.h"
#include "tc/zoo.h"
#include "th_util.h"
#include "tune_net.h"

/* The index of a framework's backend in tc_backend_at order (s->targets), or -1. */
int srv__backend_index(const char *fw) {
  return tc_backend_index(tc_backend_find(fw, NULL, 0));
}

/* The error detail of an unknown framework: {"valid":["llvm","cuda"]}, the backends' names. */
const char *srv_frameworks_valid(char *buf, size_t n) {
  size_t len = (size_t)snprintf(buf, n, "{\"valid\":[");
  for (int i = 0; tc_backend_at(i) && len < n; i++)
    len += (size_t)snprintf(buf + len, n - len, "%s\"%s\"", i ? "," : "",
                            tc_backend_name(tc_backend_at(i)));
  if (len < n) snprintf(buf + len, n - len, "]}");
  return buf;
}

/* Whether work on this framework needs a device this server lacks (why gets the reason). */
int srv__lacks_device(const char *fw, char *why, size_t n) {
  const tc_backend *b = tc_backend_find(fw, NULL, 0);
  return b && tc_backend_measure_kind(b) == TC_MEASURE_DEVICE && !tune_device(b, NULL, 0, NULL, 0, why, n);
}

/* ---- validation ---- */

/* {"valid": [every network's name]}: the zoo's, then the uploaded ones. */
static char *srv__names_json(srv_t *s) {
  json_t *arr = json_array();
  for (size_t i = 0; i < tc_zoo_count(); i++) json_array_append_new(arr, json_string(tc_zoo_at(i)->name));
  store_network *nets = NULL;
  size_t n = 0;
  if (store_network_list(s->st, "onnx", &nets, &n) == TH_OK) {
    for (size_t i = 0; i < n; i++) json_array_append_new(arr, json_string(nets[i].name));
    store_network_list_free(nets, n);
  }
  json_t *o = json_object();
  json_object_set_new(o, "valid", arr);
  char *t = json_dumps(o, JSON_COMPACT);
  json_decref(o);
  return t;
}

/* The revision of network net into digest ("" for a zoo network): 1 when net is a zoo or uploaded network, else
 * 0 with *rc TH_ERR_NOT_FOUND, or the store's error when it cannot say (its message on the handle). */
int srv__network_known(srv_t *s, const char *net, char digest[65], th_status *rc) {
  digest[0] = '\0';
  *rc = TH_OK;
  if (tc_zoo_find(net)) return 1;
  store_network row;
  *rc = store_network_get(s->st, net, &row);
  if (*rc != TH_OK) return 0;
  int onnx = row.onnx;
  if (onnx) memcpy(digest, row.digest, 65);
  store_network_clear(&row);
  if (!onnx) *rc = TH_ERR_NOT_FOUND;
  return onnx;
}

/* The batch an uploaded network is fixed at ("fixed_batch" of its description: its ONNX file imports at that
 * batch alone, server/upload.c), or 0: a zoo network, a network of any batch, one the store cannot read now
 * (the build then says what it finds). */
static int srv__fixed_batch(srv_t *s, const char *net) {
  if (tc_zoo_find(net)) return 0;
  store_network row;
  if (store_network_get(s->st, net, &row) != TH_OK) return 0;
  json_t *d = row.description ? json_loads(row.description, 0, NULL) : NULL;
  json_int_t b = json_integer_value(json_object_get(d, "fixed_batch"));
  json_decref(d);
  store_network_clear(&row);
  return b > 0 && b <= 4096 ? (int)b : 0;
}

/* Queues the 404 (or the store's error) for a network that is neither in the zoo nor uploaded. */
enum MHD_Result srv__unknown_network(srv_t *s, srv_request *r, const char *net, th_status rc,
                                     th_status status) {
  if (rc != TH_OK && rc != TH_ERR_NOT_FOUND)
    return srv_error(s, r, rc, "store_error", NULL, "%s", store_errmsg(s->st));
  char names[2048];
  tune_net_names(s->st, names, sizeof names);
  char *valid = srv__names_json(s);
  enum MHD_Result ret = srv_error(s, r, status, "unknown_network", valid, "unknown network '%s'; valid networks: %s",
                                  net, names);
  free(valid);
  return ret;
}

/* Resolves (framework, network, batch) text into a key; on bad input queues the 4xx and returns 0. */
int srv__key(srv_t *s, srv_request *r, const char *fw, const char *net, const char *batch, store_key *key,
             enum MHD_Result *ret) {
  int64_t b = 0;
  int batch_ok = th_parse_i64(batch, &b) == TH_OK && b >= 1 && b <= s->cfg.max_batch;
  char why[2400], target[96] = "", precision[16] = "";
  if (srv_query(r, "target", target, sizeof target) < 0) {
    *ret = srv_error(s, r, TH_ERR_INVALID, "invalid_target", NULL, "malformed target in the query string");
    return 0;
  }
  if (srv_query(r, "precision", precision, sizeof precision) < 0) {
    *ret = srv_error(s, r, TH_ERR_INVALID, "invalid_precision", SRV__PRECISIONS, "malformed precision in the query "
                     "string; valid precisions: fp32, tf32");
    return 0;
  }
  if (!strcmp(target, "auto")) { /* the best target the client's machine (its headers) runs */
    const tc_backend *bk = tc_backend_find(fw, NULL, 0);
    tc_client_machine m = {
        MHD_lookup_connection_value(r->con, MHD_HEADER_KIND, "X-Tunehub-CPU-Features"),
        MHD_lookup_connection_value(r->con, MHD_HEADER_KIND, "X-Tunehub-CPU"),
        MHD_lookup_connection_value(r->con, MHD_HEADER_KIND, "X-Tunehub-CUDA-Arch")};
    if (bk && tc_backend_target_auto(bk, &m, r->auto_target, sizeof r->auto_target, r->auto_reason,
                                     sizeof r->auto_reason, why, sizeof why) != TH_OK) {
      r->auto_target[0] = '\0';
      *ret = srv_error(s, r, TH_ERR_INVALID, "invalid_target", NULL, "%s", why);
      return 0;
    }
    snprintf(target, sizeof target, "%s", bk ? r->auto_target : "");
  }
  th_status rc = srv_model_key(s, fw, net, batch_ok ? (int)b : 1, target, precision, key, why, sizeof why);
  if (rc != TH_OK && srv__backend_index(fw) < 0) {
    char valid[128];
    *ret = srv_error(s, r, rc, "unknown_framework", srv_frameworks_valid(valid, sizeof valid),
                     "%s", why);
    return 0;
  }
  if (rc == TH_ERR_NOT_FOUND) {
    *ret = srv__unknown_network(s, r, net, rc, TH_ERR_NOT_FOUND);
    return 0;
  }
  if (rc == TH_ERR_UNSUPPORTED) { /* a 400 that lists the valid targets */
    *ret = srv_error(s, r, TH_ERR_INVALID, "invalid_target", NULL, "%s", why);
    return 0;
  }
  if (rc == TH_ERR_INVALID) { /* the batch was given as valid: the precision, with why it cannot be */
    *ret = srv_error(s, r, TH_ERR_INVALID, "invalid_precision", SRV__PRECISIONS, "%s", why);
    return 0;
  }
  if (rc != TH_OK) {
    *ret = srv_error(s, r, rc, "store_error", NULL, "%s", why);
    return 0;
  }
  if (!batch_ok) {
    char extra[128];
    snprintf(extra, sizeof extra, "{\"valid\":{\"min\":1,\"max\":%d}}", s->cfg.max_batch);
    *ret = srv_error(s, r, TH_ERR_INVALID, "invalid_batch", extra,
                     "invalid batch '%s'; the batch is a whole number from 1 to %d", batch, s->cfg.max_batch);
    return 0;
  }
  int fixed = srv__fixed_batch(s, net);
  if (fixed && b != fixed) {
    char extra[128];
    snprintf(extra, sizeof extra, "{\"valid\":{\"min\":%d,\"max\":%d}}", fixed, fixed);
    *ret = srv_error(s, r, TH_ERR_INVALID, "invalid_batch", extra,
                     "invalid batch %lld for %s: its ONNX file fixes the batch to %d (its graph's shapes hold at "
                     "that batch only); ask for batch %d, or export it with a dynamic batch axis",
                     (long long)b, net, fixed, fixed);
    return 0;
  }
  return 1;
}

th_status srv_model_key(srv_t *s, const char *fw, const char *net, int batch, const char *target,
                        const char *precision, store_key *key, char *why, size_t n) {
  int fw_index = srv__backend_index(fw);
  if (fw_index < 0) {
    tc_backend_find(fw, why, n); /* "unknown framework 'x'; valid frameworks: llvm, cuda" */
    return TH_ERR_NOT_FOUND;
  }
  char digest[65];
  th_status nrc;
  if (!srv__network_known(s, net, digest, &nrc)) {
    if (nrc != TH_OK && nrc != TH_ERR_NOT_FOUND) {
      snprintf(why, n, "%s", store_errmsg(s->st));
      return nrc;
    }
    char names[2048];
    tune_net_names(s->st, names, sizeof names);
    snprintf(why, n, "unknown network '%s'; valid networks: %s", net, names);
    return TH_ERR_NOT_FOUND;
  }
  if (batch < 1 || batch > s->cfg.max_batch) {
    snprintf(why, n, "invalid batch %d; the batch is a whole number from 1 to %d", batch, s->cfg.max_batch);
    return TH_ERR_INVALID;
  }
  /* the concrete target: this server's own unless the client names another (normalised by the backend) */
  char concrete[256];
  snprintf(concrete, sizeof concrete, "%s", s->targets[fw_index]);
  if (target && *target && strcmp(target, "native") != 0) {
    tc_backend_target bt;
    char terr[2048] = "";
    if (tc_backend_target_init(tc_backend_at(fw_index), target, &bt, terr, sizeof terr) != TH_OK) {
      snprintf(why, n, "invalid target '%s' for %s: %s", target, fw, terr[0] ? terr : "unknown");
      return TH_ERR_UNSUPPORTED;
    }
    snprintf(concrete, sizeof concrete, "%s", bt.str);
  }
  tc_precision prec;
  if (tc_precision_check(fw, concrete, precision, &prec, why, n) != TH_OK) return TH_ERR_INVALID;
  memset(key, 0, sizeof *key);
  snprintf(key->precision, sizeof key->precision, "%s", tc_precision_name(prec));
  snprintf(key->framework, sizeof key->framework, "%.15s", fw);
  snprintf(key->network, sizeof key->network, "%.63s", net);
  memcpy(key->net_digest, digest, sizeof key->net_digest);
  key->batch = batch;
  snprintf(key->target, sizeof key->target, "%s", concrete);
  snprintf(key->compiler_version, sizeof key->compiler_version, "%s", s->compiler_version);
  return TH_OK;
}

void srv_target_suffix(srv_t *s, const store_key *key, char *out, size_t n) {
  int fw_index = srv__backend_index(key->framework);
  char abuf[65];
  const char *arch = fw_index >= 0 && strcmp(key->target, s->targets[fw_index])
                         ? tc_backend_target_arch(key->target, abuf, sizeof abuf)
                         : NULL;
  const char *p = store_key_precision(key);
  int fp32 = strcmp(p, "fp32") == 0;
  snprintf(out, n, "%s%s%s%s", arch ? "-" : "", arch ? arch : "", fp32 ? "" : "-", fp32 ? "" : p);
}

/* Whether a live worker of a shared store registered key's target (this daemon's own scheduler included, which
 * registers the targets this machine measures). */
int srv__fleet_measures(srv_t *s, const store_key *key) {
  int live = 0;
  return store_shared(s->st) && store_worker_live(s->st, key->target, &live) == TH_OK && live > 0;
}

int srv_target_tunable(srv_t *s, const store_key *key, char *why, size_t n) {
  int fw_index = srv__backend_index(key->framework);
  if (fw_index < 0) return 0;
  if (srv__fleet_measures(s, key)) return 1;
  if (s->cfg.workers > 0 && strcmp(key->target, s->targets[fw_index]) == 0) return 1;
  if (store_shared(s->st))
    snprintf(why, n,
             "no live worker measures %s (a `tunehub worker --db ...` on a machine with that target registers it): "
             "the untuned cross-compiled build is served, and tuning waits for a worker with that target",
             key->target);
  else
    snprintf(why, n,
             "this server measures only its own %s target (%s), not %s: the untuned cross-compiled build is "
             "served, and tuning waits for a worker with that target",
             key->framework, s->targets[fw_index], key->target);
  return 0;
}
