/* Network names to compiler sources (tune_net.h). The zoo is asked first, so a zoo name never reaches the store;
 * an uploaded network is read from the store's row, whose file lies content-addressed under the artifacts. */
#include "tune_net.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tc/zoo.h"

void tune_net_free(tune_net *net) {
  if (!net) return;
  free(net->shapes);
  net->shapes = NULL;
}

void tune_net_names(store_t *st, char *out, size_t n) {
  size_t used = 0;
  if (n) out[0] = '\0';
  for (size_t i = 0; i < tc_zoo_count() && used + 2 < n; i++) {
    int w = snprintf(out + used, n - used, "%s%s", i ? ", " : "", tc_zoo_at(i)->name);
    if (w < 0) return;
    used += (size_t)w;
  }
  store_network *nets = NULL;
  size_t cnt = 0;
  if (!st || store_network_list(st, "onnx", &nets, &cnt) != TH_OK) return;
  for (size_t i = 0; i < cnt && used + 2 < n; i++) {
    int w = snprintf(out + used, n - used, ", %s", nets[i].name);
    if (w < 0) break;
    used += (size_t)w;
  }
  store_network_list_free(nets, cnt);
}

th_status tune_net_resolve(store_t *st, const char *name, const char *digest, tune_net *out, char *err, size_t n) {
  if (!name || !out) return TH_ERR_INVALID;
  tune_net net;
  memset(&net, 0, sizeof net);
  snprintf(net.name, sizeof net.name, "%s", name);
  if (tc_zoo_find(name)) {
    if (digest && digest[0]) {
      snprintf(err, n, "'%s' is a zoo network, not an upload of revision %.12s", name, digest);
      return TH_ERR_CONFLICT;
    }
    *out = net;
    out->src = tc_netsrc_zoo(out->name);
    return TH_OK;
  }
  store_network row;
  th_status rc = st ? store_network_get(st, name, &row) : TH_ERR_NOT_FOUND;
  if (rc == TH_ERR_NOT_FOUND || (rc == TH_OK && !row.onnx)) {
    if (rc == TH_OK) store_network_clear(&row);
    char names[TH_LIST_MAX];
    tune_net_names(st, names, sizeof names);
    if (digest && digest[0])
      snprintf(err, n, "network '%s' was deleted after this job was queued", name);
    else
      snprintf(err, n, "unknown network '%s'; valid networks: %s", name, names);
    return digest && digest[0] ? TH_ERR_CONFLICT : TH_ERR_NOT_FOUND;
  }
  if (rc != TH_OK) {
    snprintf(err, n, "cannot read network '%s' from the store: %s", name, store_errmsg(st));
    return rc;
  }
  if (digest && strcmp(digest, row.digest) != 0) {
    snprintf(err, n, "network '%s' was replaced by version %d (a new upload) after this job was queued", name,
             row.version);
    store_network_clear(&row);
    return TH_ERR_CONFLICT;
  }
  snprintf(net.onnx_path, sizeof net.onnx_path, "%s", row.onnx_path);
  snprintf(net.digest, sizeof net.digest, "%s", row.digest);
  net.version = row.version;
  net.shapes = row.shapes; /* taken from the row */
  row.shapes = NULL;
  store_network_clear(&row);
  *out = net;
  out->src = (tc_netsrc){out->name, out->onnx_path, out->shapes};
  return TH_OK;
}
