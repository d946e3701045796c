/* oci: the read side of the OCI distribution API (distribution-spec v1.1) over the registry, so that standard
 * tools (skopeo, crane, container builds' COPY --from) pull tunehub bundles. Every published version is an OCI
 * image: repository <framework>/<network>, tags b<batch> (the newest version), b<batch>-v<version> (one
 * version) and every alias of the repository (aliases.c; a name pins one batch's version). A cuda key at
 * precision tf32 is the same repository with "-tf32" at the end of each tag (b1-tf32, b1-v2-sm_80-tf32,
 * prod-tf32): an fp32 key's tags are those from before precisions, so existing clients see no change. Its manifest has one layer, application/vnd.oci.image.layer.v1.tar, whose bytes are exactly the
 * bundle .tar (so the layer digest is the bundle's digest, served by /blobs/ too), and a minimal image config
 * (os linux, the host's architecture, the layer as its diff id); tunehub's own facts go into annotations.
 *
 * Nothing here is stored: a version's config and manifest are generated from its row, deterministically (the
 * same bytes on every call, sorted keys), and a request by digest regenerates the repository's versions and
 * matches. A tag of a key with no published version is a miss as on /models/: the job is queued (HEAD never
 * queues) and the answer is an OCI error with Retry-After, never a half-built manifest. Errors use OCI's body
 * {"errors": [{"code", "message", "detail"}]} and codes.
 *
 * OCI 1.1 referrers: a version published with a signing key has its provenance (the DSSE envelope,
 * tuner/provenance.h) as an artifact manifest whose subject is its image manifest, listed by
 * /v2/<repo>/referrers/<digest> and generated like the images; its blobs are the empty config and the
 * envelope. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "oci.h"

#include "aliases.h"
#include "srv_limits.h"
#include "present.h"
#include "request.h"
#include "response.h"
#include "model_key.h"
#include "models.h"
#include "provenance.h"
#include "th_alloc.h"
#include "th_sha256.h"
#include "th_util.h"

#define OCI_MANIFEST_TYPE "application/vnd.oci.image.manifest.v1+json"
#define OCI_CONFIG_TYPE "application/vnd.oci.image.config.v1+json"
#define OCI_LAYER_TYPE "application/vnd.oci.image.layer.v1.tar"
#define OCI_INDEX_TYPE "application/vnd.oci.image.index.v1+json"
/* OCI 1.1's empty descriptor: the config of an artifact that has none, the blob "{}" */
#define OCI_EMPTY_TYPE "application/vnd.oci.empty.v1+json"
#define OCI_EMPTY_DIGEST "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"

#if defined(__x86_64__)
#define OCI_ARCH "amd64"
#elif defined(__aarch64__)
#define OCI_ARCH "arm64"
#else
#define OCI_ARCH "unknown"
#endif

/* ---- answers ---- */

static enum MHD_Result oci__queue(srv_t *s, srv_request *r, unsigned int status, struct MHD_Response *resp) {
  if (resp) MHD_add_response_header(resp, "Docker-Distribution-API-Version", "registry/2.0");
  return srv_queue(s, r, status, resp);
}

static enum MHD_Result oci__error(srv_t *s, srv_request *r, unsigned int status, const char *code,
                                  json_t *detail, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static enum MHD_Result oci__error(srv_t *s, srv_request *r, unsigned int status, const char *code,
                                  json_t *detail, const char *fmt, ...) {
  char msg[TH_WHY_LIST_MAX + TH_WHY_MAX]; /* a why (up to a list of valid values) in context */
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  json_t *e = json_pack("{s:s, s:s}", "code", code, "message", msg);
  if (e && detail) json_object_set_new(e, "detail", detail);
  else if (detail) json_decref(detail);
  json_t *doc = e ? json_pack("{s:[o]}", "errors", e) : NULL;
  struct MHD_Response *resp = srv_json_response(doc);
  if (!resp) return MHD_NO;
  return oci__queue(s, r, status, resp);
}

/* A generated document (manifest, config or index): body text with its digest, media type and ETag;
 * filters (may be NULL) is the OCI-Filters-Applied header of a filtered referrers list. */
static enum MHD_Result oci__send_doc_filtered(srv_t *s, srv_request *r, const char *text,
                                              const char *digest_hex, const char *media_type,
                                              const char *filters) {
  char etag[TH_ETAG_MAX], dcd[TH_DIGEST_MAX];
  snprintf(etag, sizeof etag, "\"sha256:%s\"", digest_hex);
  snprintf(dcd, sizeof dcd, "sha256:%s", digest_hex);
  const char *inm = MHD_lookup_connection_value(r->con, MHD_HEADER_KIND, "If-None-Match");
  int not_modified = srv_etag_matches(inm, etag);
  size_t len = strlen(text);
  struct MHD_Response *resp;
  /* libmicrohttpd answers HEAD with the headers of the full response (its Content-Length) and no body */
  if (not_modified)
    resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
  else
    resp = MHD_create_response_from_buffer(len, (void *)text, MHD_RESPMEM_MUST_COPY);
  if (!resp) return MHD_NO;
  MHD_add_response_header(resp, "Content-Type", media_type);
  MHD_add_response_header(resp, "Docker-Content-Digest", dcd);
  MHD_add_response_header(resp, "ETag", etag);
  MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
  if (filters) MHD_add_response_header(resp, "OCI-Filters-Applied", filters);
  return oci__queue(s, r, not_modified ? 304 : 200, resp);
}

static enum MHD_Result oci__send_doc(srv_t *s, srv_request *r, const char *text,
                                     const char *digest_hex, const char *media_type) {
  return oci__send_doc_filtered(s, r, text, digest_hex, media_type, NULL);
}

/* ---- the image of one version ---- */

typedef struct oci_image {
  char *config; /* text */
  char config_digest[TH_HEX_MAX];
  char *manifest; /* text */
  char manifest_digest[TH_HEX_MAX];
} oci_image;

static void oci__image_free(oci_image *im) {
  free(im->config);
  free(im->manifest);
  memset(im, 0, sizeof *im);
}

static void oci__digest(const char *text, char hex[TH_HEX_MAX]) {
  th_sha256 h;
  unsigned char d[32];
  th_sha256_init(&h);
  th_sha256_update(&h, text, strlen(text));
  th_sha256_final(&h, d);
  th_hex(d, 32, hex);
}

static void oci__rfc3339(double t, char *out, size_t n) {
  time_t sec = (time_t)t;
  struct tm tm;
  gmtime_r(&sec, &tm);
  strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Generates m's config and manifest (m's manifest text, when loaded, is not needed: the row says enough). */
static th_status oci__image(const store_model *m, oci_image *im) {
  memset(im, 0, sizeof *im);
  char layer[80], created[32], batch[16], version[16], latency[32], title[200];
  snprintf(layer, sizeof layer, "sha256:%s", m->tar_digest);
  oci__rfc3339(m->created_at, created, sizeof created);
  snprintf(batch, sizeof batch, "%d", m->key.batch);
  snprintf(version, sizeof version, "%d", m->version);
  if (m->latency_ms >= 0)
    snprintf(latency, sizeof latency, "%.4f", m->latency_ms);
  else
    snprintf(latency, sizeof latency, "unmeasured");
  snprintf(title, sizeof title, "%s_%s_b%d_v%d.tar", m->key.network, m->key.framework, m->key.batch, m->version);
  json_t *annotations = json_pack(
      "{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "org.opencontainers.image.created", created,
      "org.opencontainers.image.title", title, "org.opencontainers.image.version", version,
      "dev.tunehub.framework", m->key.framework, "dev.tunehub.network", m->key.network, "dev.tunehub.batch",
      batch, "dev.tunehub.target", m->key.target, "dev.tunehub.compiler_version", m->key.compiler_version,
      "dev.tunehub.tuned", m->tuned ? "true" : "false", "dev.tunehub.latency_ms", latency);
  json_t *config = json_pack("{s:s, s:s, s:s, s:{s:s, s:[s]}, s:{s:O}}", "created", created, "architecture",
                             OCI_ARCH, "os", "linux", "rootfs", "type", "layers", "diff_ids", layer, "config",
                             "Labels", annotations);
  im->config = config ? json_dumps(config, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
  json_decref(config);
  if (!im->config) {
    json_decref(annotations);
    return TH_ERR_NOMEM;
  }
  oci__digest(im->config, im->config_digest);
  char cdig[TH_DIGEST_MAX];
  snprintf(cdig, sizeof cdig, "sha256:%s", im->config_digest);
  json_t *man = json_pack("{s:i, s:s, s:{s:s, s:s, s:I}, s:[{s:s, s:s, s:I, s:{s:s}}], s:o}", "schemaVersion", 2,
                          "mediaType", OCI_MANIFEST_TYPE, "config", "mediaType", OCI_CONFIG_TYPE, "digest", cdig,
                          "size", (json_int_t)strlen(im->config), "layers", "mediaType", OCI_LAYER_TYPE,
                          "digest", layer, "size", (json_int_t)m->tar_size, "annotations",
                          "org.opencontainers.image.title", title, "annotations", annotations);
  im->manifest = man ? json_dumps(man, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
  json_decref(man);
  if (!im->manifest) {
    oci__image_free(im);
    return TH_ERR_NOMEM;
  }
  oci__digest(im->manifest, im->manifest_digest);
  return TH_OK;
}

/* The referrer of version m's image im: an OCI 1.1 artifact manifest (artifactType the DSSE
 * envelope's media type, the empty config, one layer that is the envelope blob, subject im's
 * manifest) for its signed provenance, generated like the image (sorted keys, no clock but the
 * version's date). Its text and digest into *text (malloc'd) and hex, the envelope's digest into
 * prov. TH_ERR_NOT_FOUND when m was published unsigned. */
static th_status oci__referrer(srv_t *s, const store_model *m, const oci_image *im, char **text,
                               char hex[TH_HEX_MAX], char prov[TH_HEX_MAX]) {
  th_status rc = store_model_provenance(s->st, &m->key, m->version, prov);
  char path[TH_PATH_MAX];
  int64_t size = 0;
  if (rc == TH_OK) rc = store_artifact_path(s->st, prov, path, sizeof path, &size, NULL, 0);
  if (rc != TH_OK) return rc;
  char pd[TH_DIGEST_MAX], sd[TH_DIGEST_MAX], created[32];
  snprintf(pd, sizeof pd, "sha256:%s", prov);
  snprintf(sd, sizeof sd, "sha256:%s", im->manifest_digest);
  oci__rfc3339(m->created_at, created, sizeof created);
  json_t *man = json_pack(
      "{s:i, s:s, s:s, s:{s:s, s:s, s:i, s:s}, s:[{s:s, s:s, s:I}], s:{s:s, s:s, s:I}, s:{s:s, "
      "s:s}}",
      "schemaVersion", 2, "mediaType", OCI_MANIFEST_TYPE, "artifactType", TUNE_PROV_ENVELOPE_MEDIA,
      "config", "mediaType", OCI_EMPTY_TYPE, "digest", "sha256:" OCI_EMPTY_DIGEST, "size", 2,
      "data", "e30=", "layers", "mediaType", TUNE_PROV_ENVELOPE_MEDIA, "digest", pd, "size",
      (json_int_t)size, "subject", "mediaType", OCI_MANIFEST_TYPE, "digest", sd, "size",
      (json_int_t)strlen(im->manifest), "annotations", "dev.tunehub.predicate_type",
      TUNE_PROV_PREDICATE_TYPE, "org.opencontainers.image.created", created);
  *text = man ? json_dumps(man, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
  json_decref(man);
  if (!*text) return TH_ERR_NOMEM;
  oci__digest(*text, hex);
  return TH_OK;
}

/* ---- names ---- */

/* A tag as the spec allows it: [a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}. */
static int oci__tag_valid(const char *t) {
  size_t n = strlen(t);
  if (n == 0 || n > 128 || t[0] == '.' || t[0] == '-') return 0;
  for (size_t i = 0; i < n; i++) {
    char c = t[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
          c == '-'))
      return 0;
  }
  return 1;
}

/* "b<batch>" (version 0: the newest) or "b<batch>-v<version>", each with an optional "-<target>" for a target
 * other than this server's own ("b1-x86-64-v3", "b1-v2-skylake-avx512"; the target is then in target, else
 * target is ""); 0 when t is none of these. A "-v<digits>" right after the batch is always the version. */
static int oci__tag_parse(const char *t, int *batch, int *version, char *target, size_t target_n) {
  if (t[0] != 'b') return 0;
  char *end = NULL;
  long b = strtol(t + 1, &end, 10);
  if (end == t + 1 || b < 1 || b > 1000000 || t[1] == '0' || t[1] == '+' || t[1] == '-') return 0;
  *batch = (int)b;
  *version = 0;
  target[0] = '\0';
  if (*end == '\0') return 1;
  if (end[0] != '-') return 0;
  if (end[1] == 'v' && end[2] >= '1' && end[2] <= '9') {
    char *vend = NULL;
    long v = strtol(end + 2, &vend, 10);
    if ((*vend == '\0' || *vend == '-') && v >= 1 && v <= 1000000000) {
      *version = (int)v;
      end = vend;
      if (*end == '\0') return 1;
    }
  }
  if (end[0] != '-' || !end[1] || strlen(end + 1) >= target_n) return 0;
  snprintf(target, target_n, "%s", end + 1);
  return 1;
}

/* The precision a tag names by its "-tf32" suffix (srv_target_suffix), taken off t, which may then be "":
 * "tf32", or NULL (fp32) when t has no such suffix. */
static const char *oci__tag_precision(char *t) {
  size_t n = strlen(t);
  if (!strcmp(t, "tf32")) {
    t[0] = '\0';
    return "tf32";
  }
  if (n > 5 && !strcmp(t + n - 5, "-tf32")) {
    t[n - 5] = '\0';
    return "tf32";
  }
  return NULL;
}


/* Every ready version of every batch of repository fw/net (tags and lookups by digest), oldest first per
 * key, keys ordered by batch. *out malloc'd (free with store_model_list_free); *n may be 0. */
static th_status oci__repo_versions(srv_t *s, const char *fw, const char *net, store_model **out, size_t *n) {
  store_catalog_row *rows = NULL;
  size_t nrows = 0;
  th_status rc = store_catalog(s->st, fw, net, "ready", &rows, &nrows);
  if (rc != TH_OK) return rc;
  store_model *all = NULL;
  size_t total = 0;
  for (size_t i = 0; rc == TH_OK && i < nrows; i++) {
    if (!rows[i].has_model) continue;
    store_model *vs = NULL;
    size_t nv = 0;
    th_status vr = store_model_versions(s->st, &rows[i].key, &vs, &nv);
    if (vr == TH_ERR_NOT_FOUND) continue;
    if (vr != TH_OK) {
      rc = vr;
      break;
    }
    store_model *grown = th_realloc(all, (total + nv) * sizeof *grown);
    if (!grown) {
      store_model_list_free(vs, nv);
      rc = TH_ERR_NOMEM;
      break;
    }
    all = grown;
    memcpy(all + total, vs, nv * sizeof *vs); /* ownership of each model's strings moves with it */
    total += nv;
    free(vs);
  }
  store_catalog_free(rows, nrows);
  if (rc != TH_OK) {
    store_model_list_free(all, total);
    return rc;
  }
  *out = all;
  *n = total;
  return TH_OK;
}

/* ---- routes ---- */

static enum MHD_Result oci__catalog(srv_t *s, srv_request *r) {
  store_catalog_row *rows = NULL;
  size_t n = 0;
  th_status rc = store_catalog(s->st, NULL, NULL, "ready", &rows, &n);
  if (rc != TH_OK)
    return oci__error(s, r, 503, "UNAVAILABLE", NULL, "the store does not answer: %s", store_errmsg(s->st));
  json_t *repos = json_array();
  char last[128] = "";
  for (size_t i = 0; i < n; i++) {
    if (!rows[i].has_model) continue;
    char name[128];
    snprintf(name, sizeof name, "%s/%s", rows[i].key.framework, rows[i].key.network);
    int seen = 0;
    for (size_t k = 0; k < json_array_size(repos) && !seen; k++)
      seen = strcmp(json_string_value(json_array_get(repos, k)), name) == 0;
    if (!seen) json_array_append_new(repos, json_string(name));
  }
  store_catalog_free(rows, n);
  /* lexical order, then the spec's pagination: ?n=N&last=NAME */
  size_t count = json_array_size(repos);
  const char **names = th_calloc(count ? count : 1, sizeof *names);
  for (size_t i = 0; names && i < count; i++) names[i] = json_string_value(json_array_get(repos, i));
  for (size_t i = 1; names && i < count; i++)
    for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
      const char *t = names[j];
      names[j] = names[j - 1];
      names[j - 1] = t;
    }
  char n_s[16] = "";
  int64_t limit = -1;
  if (srv_query(r, "n", n_s, sizeof n_s) > 0 && (th_parse_i64(n_s, &limit) != TH_OK || limit < 0 || limit > 10000)) {
    free(names);
    json_decref(repos);
    return oci__error(s, r, 400, "PAGINATION_NUMBER_INVALID", NULL, "n is a whole number from 0 to 10000");
  }
  srv_query(r, "last", last, sizeof last);
  json_t *page = json_array();
  for (size_t i = 0; names && i < count; i++) {
    if (last[0] && strcmp(names[i], last) <= 0) continue;
    if (limit >= 0 && (int64_t)json_array_size(page) >= limit) break;
    json_array_append_new(page, json_string(names[i]));
  }
  free(names);
  json_decref(repos);
  struct MHD_Response *resp = srv_json_response(json_pack("{s:o}", "repositories", page));
  if (!resp) return MHD_NO;
  return oci__queue(s, r, 200, resp);
}

static enum MHD_Result oci__tags(srv_t *s, srv_request *r, const char *fw, const char *net) {
  store_model *vs = NULL;
  size_t n = 0;
  th_status rc = oci__repo_versions(s, fw, net, &vs, &n);
  if (rc != TH_OK)
    return oci__error(s, r, 503, "UNAVAILABLE", NULL, "the store does not answer: %s", store_errmsg(s->st));
  json_t *tags = json_array();
  store_key repo;
  char why[TH_WHY_MAX];
  rc = srv_model_key(s, fw, net, 1, NULL, NULL, &repo, why, sizeof why);
  for (size_t i = 0; rc == TH_OK && i < n; i++) {
    char t[160], sfx[80];
    srv_target_suffix(s, &vs[i].key, sfx, sizeof sfx);
    /* the newest version of a key is its last one: b<batch>[-target][-tf32] once per key */
    if (i + 1 == n || vs[i + 1].key.batch != vs[i].key.batch || strcmp(vs[i + 1].key.target, vs[i].key.target) ||
        strcmp(vs[i + 1].key.precision, vs[i].key.precision)) {
      snprintf(t, sizeof t, "b%d%s", vs[i].key.batch, sfx);
      json_array_append_new(tags, json_string(t));
    }
    snprintf(t, sizeof t, "b%d-v%d%s", vs[i].key.batch, vs[i].version, sfx);
    json_array_append_new(tags, json_string(t));
  }
  store_model_list_free(vs, n);
  /* then the aliases whose version is served (a retired one would list a tag that answers 404) */
  store_alias *as = NULL;
  size_t na = 0;
  repo.batch = 0; /* every batch of the repository */
  if (rc == TH_OK) rc = store_alias_list(s->st, &repo, &as, &na);
  if (rc != TH_OK) {
    json_decref(tags);
    return oci__error(s, r, 503, "UNAVAILABLE", NULL, "the store does not answer: %s", store_errmsg(s->st));
  }
  for (size_t i = 0; i < na; i++)
    if (!as[i].retired) json_array_append_new(tags, json_string(as[i].name));
  free(as);
  /* and those of the repository's tf32 keys, where this server's own target takes tf32 */
  if (srv_model_key(s, fw, net, 1, NULL, "tf32", &repo, why, sizeof why) == TH_OK) {
    repo.batch = 0;
    if (store_alias_list(s->st, &repo, &as, &na) != TH_OK) {
      json_decref(tags);
      return oci__error(s, r, 503, "UNAVAILABLE", NULL, "the store does not answer: %s", store_errmsg(s->st));
    }
    for (size_t i = 0; i < na; i++)
      if (!as[i].retired) json_array_append_new(tags, json_pack("s++", as[i].name, "-", "tf32"));
    free(as);
  }
  char name[128];
  snprintf(name, sizeof name, "%s/%s", fw, net);
  struct MHD_Response *resp = srv_json_response(json_pack("{s:s, s:o}", "name", name, "tags", tags));
  if (!resp) return MHD_NO;
  return oci__queue(s, r, 200, resp);
}

/* The image of the version a digest names (its manifest or its config, by which), among the repository's. */
static th_status oci__by_digest(srv_t *s, const char *fw, const char *net, const char *hex, int config,
                                oci_image *out, store_model *layer_of) {
  store_model *vs = NULL;
  size_t n = 0;
  th_status rc = oci__repo_versions(s, fw, net, &vs, &n);
  if (rc != TH_OK) return rc;
  rc = TH_ERR_NOT_FOUND;
  for (size_t i = n; rc == TH_ERR_NOT_FOUND && i-- > 0;) {
    if (layer_of && strcmp(vs[i].tar_digest, hex) == 0) { /* the layer: the version's bundle */
      *layer_of = vs[i];
      memset(&vs[i], 0, sizeof vs[i]);
      rc = TH_OK;
      break;
    }
    oci_image im;
    th_status ir = oci__image(&vs[i], &im);
    if (ir != TH_OK) {
      rc = ir;
      break;
    }
    if (strcmp(config ? im.config_digest : im.manifest_digest, hex) == 0) {
      *out = im;
      rc = TH_OK;
    } else {
      oci__image_free(&im);
    }
  }
  store_model_list_free(vs, n);
  return rc;
}

/* The repository's signed version whose referrer manifest has digest hex (by_blob: whose envelope
 * blob has it): the referrer's text into *text (malloc'd), the envelope's digest into prov.
 * TH_ERR_NOT_FOUND when none. With subject (hex, may be NULL) only the version whose image manifest
 * has that digest is looked at. */
static th_status oci__find_referrer(srv_t *s, const char *fw, const char *net, const char *hex,
                                    int by_blob, const char *subject, char **text,
                                    char prov[TH_HEX_MAX]) {
  store_model *vs = NULL;
  size_t n = 0;
  th_status rc = oci__repo_versions(s, fw, net, &vs, &n);
  if (rc != TH_OK) return rc;
  rc = TH_ERR_NOT_FOUND;
  int subject_seen = 0; /* the subject's version was looked at: no other one can refer to it */
  for (size_t i = n; rc == TH_ERR_NOT_FOUND && !subject_seen && i-- > 0;) {
    oci_image im;
    char *t = NULL, rhex[TH_HEX_MAX], p[TH_HEX_MAX];
    th_status ir = oci__image(&vs[i], &im);
    if (ir != TH_OK) {
      rc = ir;
      break;
    }
    if (!subject || !strcmp(im.manifest_digest, subject)) {
      subject_seen = subject != NULL;
      ir = oci__referrer(s, &vs[i], &im, &t, rhex, p);
      if (ir == TH_OK && (subject || !strcmp(by_blob ? p : rhex, hex))) {
        *text = t;
        t = NULL;
        memcpy(prov, p, TH_HEX_MAX);
        rc = TH_OK;
      } else if (ir != TH_OK && ir != TH_ERR_NOT_FOUND) {
        rc = ir;
      }
    }
    free(t);
    oci__image_free(&im);
  }
  store_model_list_free(vs, n);
  return rc;
}

/* GET /v2/<repo>/referrers/<digest> (distribution-spec 1.1): an image index of the artifacts whose
 * subject is that manifest: the signed provenance of the version whose image it is, or none (an
 * empty index, 200, for an unsigned version and for a digest no version has, as the spec says).
 * ?artifactType=T keeps those of type T and says so in OCI-Filters-Applied. */
static enum MHD_Result oci__referrers(srv_t *s, srv_request *r, const char *fw, const char *net,
                                      const char *ref) {
  if (strncmp(ref, "sha256:", 7) != 0 || !th_is_sha256_hex(ref + 7))
    return oci__error(
        s, r, 400, "DIGEST_INVALID", NULL,
        "invalid digest '%s': a digest is sha256: followed by 64 lowercase hex digits", ref);
  char type[160] = "";
  int filtered = srv_query(r, "artifactType", type, sizeof type) > 0;
  char *text = NULL, prov[TH_HEX_MAX];
  th_status rc = oci__find_referrer(s, fw, net, NULL, 0, ref + 7, &text, prov);
  if (rc != TH_OK && rc != TH_ERR_NOT_FOUND)
    return oci__error(s, r, 503, "UNAVAILABLE", NULL, "the store does not answer: %s",
                      store_errmsg(s->st));
  json_t *list = json_array();
  if (rc == TH_OK && (!filtered || !strcmp(type, TUNE_PROV_ENVELOPE_MEDIA))) {
    char hex[TH_HEX_MAX], d[TH_DIGEST_MAX];
    oci__digest(text, hex);
    snprintf(d, sizeof d, "sha256:%s", hex);
    json_t *man = json_loads(text, 0, NULL);
    json_array_append_new(
        list, json_pack("{s:s, s:s, s:I, s:s, s:O}", "mediaType", OCI_MANIFEST_TYPE, "digest", d,
                        "size", (json_int_t)strlen(text), "artifactType", TUNE_PROV_ENVELOPE_MEDIA,
                        "annotations", json_object_get(man, "annotations")));
    json_decref(man);
  }
  free(text);
  json_t *index = json_pack("{s:i, s:s, s:o}", "schemaVersion", 2, "mediaType", OCI_INDEX_TYPE,
                            "manifests", list);
  char *doc = index ? json_dumps(index, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
  json_decref(index);
  if (!doc)
    return oci__error(s, r, 503, "UNAVAILABLE", NULL,
                      "cannot describe the referrers: out of memory");
  char hex[TH_HEX_MAX];
  oci__digest(doc, hex);
  enum MHD_Result ret =
      oci__send_doc_filtered(s, r, doc, hex, OCI_INDEX_TYPE, filtered ? "artifactType" : NULL);
  free(doc);
  return ret;
}

static enum MHD_Result oci__manifest(srv_t *s, srv_request *r, const char *fw, const char *net,
                                     const char *ref) {
  int head = strcmp(r->method, "HEAD") == 0;
  oci_image im;
  th_status rc;
  if (strncmp(ref, "sha256:", 7) == 0 || strchr(ref, ':')) {
    if (strncmp(ref, "sha256:", 7) != 0 || !th_is_sha256_hex(ref + 7))
      return oci__error(s, r, 400, "DIGEST_INVALID", NULL,
                        "invalid digest '%s': a digest is sha256: followed by 64 lowercase hex digits", ref);
    rc = oci__by_digest(s, fw, net, ref + 7, 0, &im, NULL);
    if (rc == TH_ERR_NOT_FOUND) { /* a signed version's provenance artifact (referrers) */
      char prov[TH_HEX_MAX];
      memset(&im, 0, sizeof im);
      rc = oci__find_referrer(s, fw, net, ref + 7, 0, NULL, &im.manifest, prov);
      if (rc == TH_OK) oci__digest(im.manifest, im.manifest_digest);
    }
    if (rc == TH_ERR_NOT_FOUND)
      return oci__error(s, r, 404, "MANIFEST_UNKNOWN", NULL, "no manifest %s in %s/%s", ref, fw, net);
  } else {
    int batch = 0, version = 0;
    char tag_target[96];
    if (!oci__tag_valid(ref))
      return oci__error(s, r, 400, "MANIFEST_INVALID", NULL,
                        "invalid tag '%s': a tag is [a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}", ref);
    store_key key;
    char why[TH_WHY_LIST_MAX]; /* an unknown target's message lists every valid one */
    if (!oci__tag_parse(ref, &batch, &version, tag_target, sizeof tag_target)) {
      /* an alias of the repository (of its tf32 keys with "-tf32" after the name), else an unknown tag */
      store_alias a;
      rc = srv_model_key(s, fw, net, 1, NULL, NULL, &key, why, sizeof why);
      key.batch = 0;
      if (rc == TH_OK) rc = srv_alias_name_valid(ref) ? store_alias_get(s->st, &key, ref, &a) : TH_ERR_NOT_FOUND;
      char name[160];
      snprintf(name, sizeof name, "%s", ref);
      if (rc == TH_ERR_NOT_FOUND && oci__tag_precision(name) && srv_alias_name_valid(name) &&
          srv_model_key(s, fw, net, 1, NULL, "tf32", &key, why, sizeof why) == TH_OK) {
        key.batch = 0;
        rc = store_alias_get(s->st, &key, name, &a);
      }
      if (rc == TH_ERR_NOT_FOUND)
        return oci__error(s, r, 404, "MANIFEST_UNKNOWN",
                          json_pack("{s:[s,s,s]}", "valid", "b<batch>", "b<batch>-v<version>", "<alias>"),
                          "unknown tag '%s' in %s/%s; tags are b<batch> (the newest version), b<batch>-v<version> "
                          "and the aliases of the repository (tags/list)",
                          ref, fw, net);
      if (rc != TH_OK)
        return oci__error(s, r, 503, "UNAVAILABLE", NULL, "the store does not answer: %s", store_errmsg(s->st));
      key.batch = a.key.batch;
      store_model m;
      rc = a.retired ? TH_ERR_NOT_FOUND : store_model_version(s->st, &key, a.version, &m);
      if (rc == TH_ERR_NOT_FOUND)
        return oci__error(s, r, 404, "MANIFEST_UNKNOWN", json_pack("{s:i,s:i}", "batch", a.key.batch, "version",
                          a.version),
                          "alias '%s' pins %s/%s:b%d-v%d, which was retired and is no longer served; move the alias "
                          "(PUT /models/%s/%s/%d/aliases/%s)",
                          ref, fw, net, a.key.batch, a.version, fw, net, a.key.batch, ref);
      if (rc != TH_OK)
        return oci__error(s, r, 503, "UNAVAILABLE", NULL, "the store does not answer: %s", store_errmsg(s->st));
      rc = oci__image(&m, &im);
      store_model_clear(&m);
      if (rc != TH_OK) return oci__error(s, r, 503, "UNAVAILABLE", NULL, "cannot describe the image: out of memory");
      enum MHD_Result ret = oci__send_doc(s, r, im.manifest, im.manifest_digest, OCI_MANIFEST_TYPE);
      oci__image_free(&im);
      return ret;
    }
    const char *precision = oci__tag_precision(tag_target);
    rc = srv_model_key(s, fw, net, batch, tag_target, precision, &key, why, sizeof why);
    if (rc == TH_ERR_UNSUPPORTED) /* b1-<something that is no target>: an unknown tag, with the valid targets */
      return oci__error(s, r, 404, "MANIFEST_UNKNOWN", NULL, "unknown tag '%s' in %s/%s: %s", ref, fw, net, why);
    if (rc != TH_OK) return oci__error(s, r, rc == TH_ERR_INVALID ? 400 : 404,
                                       rc == TH_ERR_INVALID ? "MANIFEST_INVALID" : "NAME_UNKNOWN", NULL, "%s", why);
    store_model m;
    memset(&m, 0, sizeof m);
    if (version == 0) {
      rc = store_model_get(s->st, &key, 0, &m);
    } else {
      store_model *vs = NULL;
      size_t n = 0;
      rc = store_model_versions(s->st, &key, &vs, &n);
      if (rc == TH_OK) {
        rc = TH_ERR_NOT_FOUND;
        for (size_t i = 0; i < n; i++)
          if (vs[i].version == version) {
            m = vs[i];
            memset(&vs[i], 0, sizeof vs[i]);
            rc = TH_OK;
          }
        store_model_list_free(vs, n);
      }
      if (rc == TH_ERR_NOT_FOUND)
        return oci__error(s, r, 404, "MANIFEST_UNKNOWN", NULL, "%s/%s has no version %d of batch %d", fw, net,
                          version, batch);
    }
    if (rc == TH_ERR_NOT_FOUND) {
      /* a miss: queue the build as GET /models/ does (HEAD never queues) */
      if (head) return oci__error(s, r, 404, "MANIFEST_UNKNOWN", NULL, "%s/%s:%s is not built yet", fw, net, ref);
      int64_t job_id = 0;
      int created = 0;
      char retry[16];
      if (!srv_miss_admit(s, r, &key, why, sizeof why, retry))
        return oci__error(s, r, 429, "TOOMANYREQUESTS", NULL, "%s", why);
      rc = srv_model_miss(s, &key, 0, 0, &job_id, &created, why, sizeof why);
      srv_miss_done(s, r, job_id, rc == TH_OK && created);
      if (rc == TH_ERR_BUSY) return oci__error(s, r, 429, "TOOMANYREQUESTS", NULL, "%s", why);
      if (rc == TH_ERR_TOO_LARGE || rc == TH_ERR_NO_SPACE) /* guard.c: nothing was queued */
        return oci__error(s, r, (unsigned)th_status_http(rc), "DENIED", NULL, "%s", why);
      if (rc != TH_OK && rc != TH_ERR_COMPILE && rc != TH_ERR_CANCELLED)
        return oci__error(s, r, 503, "UNAVAILABLE", NULL, "%s", why);
      char loc[64];
      srv_job_url(job_id, loc, sizeof loc);
      if (rc != TH_OK)
        return oci__error(s, r, 404, "MANIFEST_UNKNOWN", json_pack("{s:s}", "job", loc), "%s", why);
      char msg[TH_WHY_MAX];
      snprintf(msg, sizeof msg,
               "%s/%s:%s is not built yet; job %lld is %s. Retry later (Retry-After), or follow %s", fw, net, ref,
               (long long)job_id, created ? "now queued" : "already in progress", loc);
      json_t *e = json_pack("{s:s, s:s, s:{s:s, s:b}}", "code", "MANIFEST_UNKNOWN", "message", msg, "detail",
                            "job", loc, "queued", created);
      struct MHD_Response *resp = srv_json_response(e ? json_pack("{s:[o]}", "errors", e) : NULL);
      if (!resp) return MHD_NO;
      MHD_add_response_header(resp, "Retry-After", "5");
      return oci__queue(s, r, 503, resp);
    }
    if (rc != TH_OK)
      return oci__error(s, r, 503, "UNAVAILABLE", NULL, "the store does not answer: %s", store_errmsg(s->st));
    rc = oci__image(&m, &im);
    store_model_clear(&m);
  }
  if (rc != TH_OK)
    return oci__error(s, r, 503, "UNAVAILABLE", NULL, "the store does not answer: %s", store_errmsg(s->st));
  enum MHD_Result ret = oci__send_doc(s, r, im.manifest, im.manifest_digest, OCI_MANIFEST_TYPE);
  oci__image_free(&im);
  return ret;
}

static enum MHD_Result oci__blob(srv_t *s, srv_request *r, const char *fw, const char *net, const char *ref) {
  if (strncmp(ref, "sha256:", 7) != 0 || !th_is_sha256_hex(ref + 7))
    return oci__error(s, r, 400, "DIGEST_INVALID", NULL,
                      "invalid digest '%s': a digest is sha256: followed by 64 lowercase hex digits", ref);
  if (!strcmp(ref + 7, OCI_EMPTY_DIGEST)) /* the config of every provenance artifact */
    return oci__send_doc(s, r, "{}", OCI_EMPTY_DIGEST, OCI_EMPTY_TYPE);
  oci_image im;
  store_model layer;
  memset(&layer, 0, sizeof layer);
  th_status rc = oci__by_digest(s, fw, net, ref + 7, 1, &im, &layer);
  if (rc ==
      TH_ERR_NOT_FOUND) { /* a signed version's DSSE envelope, the provenance artifact's layer */
    char *text = NULL, prov[TH_HEX_MAX], path[TH_PATH_MAX];
    int64_t size = 0;
    rc = oci__find_referrer(s, fw, net, ref + 7, 1, NULL, &text, prov);
    free(text);
    if (rc == TH_OK) rc = store_artifact_path(s->st, prov, path, sizeof path, &size, NULL, 0);
    if (rc == TH_OK) {
      const char *hdrs[][2] = {{"Docker-Distribution-API-Version", "registry/2.0"}, {NULL, NULL}};
      return srv_send_file(s, r, path, size, prov, TUNE_PROV_ENVELOPE_MEDIA, "provenance.json", 1,
                           hdrs);
    }
  }
  if (rc == TH_ERR_NOT_FOUND)
    return oci__error(s, r, 404, "BLOB_UNKNOWN", NULL, "no blob %s in %s/%s", ref, fw, net);
  if (rc != TH_OK)
    return oci__error(s, r, 503, "UNAVAILABLE", NULL, "the store does not answer: %s", store_errmsg(s->st));
  if (!layer.tar_digest[0]) { /* the config */
    enum MHD_Result ret = oci__send_doc(s, r, im.config, im.config_digest, OCI_CONFIG_TYPE);
    oci__image_free(&im);
    return ret;
  }
  char path[TH_PATH_MAX], filename[200];
  int64_t size = 0;
  rc = store_artifact_path(s->st, layer.tar_digest, path, sizeof path, &size, NULL, 0);
  snprintf(filename, sizeof filename, "%s_%s_b%d_v%d.tar", layer.key.network, layer.key.framework,
           layer.key.batch, layer.version);
  store_model_clear(&layer);
  if (rc == TH_ERR_UNAVAILABLE)
    return oci__error(s, r, 503, "UNAVAILABLE", NULL, "the store does not answer: %s",
                      store_errmsg(s->st));
  if (rc != TH_OK) return oci__error(s, r, 404, "BLOB_UNKNOWN", NULL, "blob %s is missing from the store", ref);
  const char *hdrs[][2] = {{"Docker-Distribution-API-Version", "registry/2.0"}, {NULL, NULL}};
  return srv_send_file(s, r, path, size, ref + 7, OCI_LAYER_TYPE, filename, 1, hdrs);
}

enum MHD_Result srv_oci_route(srv_t *s, srv_request *r) {
  r->route = SRV_ROUTE_OCI;
  const char *p = r->path + 3; /* after "/v2" */
  int get = !strcmp(r->method, "GET") || !strcmp(r->method, "HEAD");
  if (!get)
    return oci__error(s, r, 405, "UNSUPPORTED", NULL,
                      "%s is not supported: this registry is read-only over OCI (GET and HEAD); tunehub publishes "
                      "its own builds", r->method);
  if (!strcmp(p, "") || !strcmp(p, "/")) {
    struct MHD_Response *resp = srv_json_response(json_object());
    if (!resp) return MHD_NO;
    return oci__queue(s, r, 200, resp);
  }
  if (!strcmp(p, "/_catalog")) return oci__catalog(s, r);
  /* /<fw>/<net>/(manifests|blobs)/<ref> or /<fw>/<net>/tags/list; names and refs never need decoding */
  char fw[32], net[96], kind[16], ref[160], extra[8];
  int n = 0;
  size_t len = strlen(p);
  if (len > 300 || strchr(p, '%'))
    return oci__error(s, r, 404, "NAME_UNKNOWN", NULL, "no such repository: %s", r->path);
  if (sscanf(p, "/%31[^/]/%95[^/]/%15[^/]/%159[^/]%7s%n", fw, net, kind, ref, extra, &n) != 4) {
    return oci__error(s, r, 404, "NAME_UNKNOWN", json_pack("{s:s}", "repositories", "<framework>/<network>"),
                      "no such repository or route: %s; repositories are <framework>/<network>, e.g. "
                      "/v2/llvm/resnet-18/manifests/b1",
                      r->path);
  }
  if (!strcmp(ref, "..") || !strcmp(ref, ".") || strstr(ref, ".."))
    return oci__error(s, r, 400, !strcmp(kind, "blobs") ? "DIGEST_INVALID" : "MANIFEST_INVALID", NULL,
                      "'%s' is not a valid reference", ref);
  store_key key;
  char why[TH_WHY_MAX];
  th_status rc = srv_model_key(s, fw, net, 1, NULL, NULL, &key, why, sizeof why);
  if (rc != TH_OK) return oci__error(s, r, 404, "NAME_UNKNOWN", NULL, "%s", why);
  if (!strcmp(kind, "manifests")) return oci__manifest(s, r, fw, net, ref);
  if (!strcmp(kind, "blobs")) return oci__blob(s, r, fw, net, ref);
  if (!strcmp(kind, "tags") && !strcmp(ref, "list")) return oci__tags(s, r, fw, net);
  if (!strcmp(kind, "referrers")) return oci__referrers(s, r, fw, net, ref);
  return oci__error(
      s, r, 404, "NAME_UNKNOWN", NULL,
      "no such route: %s; valid: /v2/<repo>/manifests/<ref>, /v2/<repo>/blobs/<digest>, "
      "/v2/<repo>/tags/list, /v2/<repo>/referrers/<digest>, /v2/_catalog",
      r->path);
}
