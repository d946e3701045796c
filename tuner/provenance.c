/* Signed provenance (provenance.h): the in-toto Statement v1 of a published version, built from its
 * key, its bundle's digest and the manifest the build produced, signed with Ed25519 (OpenSSL's
 * EVP_DigestSign, PureEdDSA over the whole message) inside a DSSE v1 envelope, and the verifier of
 * such envelopes. DSSE signs PAE(payloadType, payload), never the JSON around it, and the verifier
 * parses only the bytes that verified. */
#include "provenance.h"

#include <errno.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "th_sha256.h"
#include "th_util.h"

struct tune_signer {
  EVP_PKEY *key;
  char keyid[65];
};

/* A PEM passphrase callback that gives none: an encrypted key fails to load instead of prompting.
 */
static int tune__no_pass(char *buf, int size, int rwflag, void *u) {
  (void)buf, (void)size, (void)rwflag, (void)u;
  return -1;
}

/* hex sha256 of the public key's DER SubjectPublicKeyInfo. */
static int tune__keyid(EVP_PKEY *k, char hex[65]) {
  unsigned char *der = NULL;
  int len = i2d_PUBKEY(k, &der);
  if (len <= 0) return 0;
  th_sha256 s;
  unsigned char d[32];
  th_sha256_init(&s);
  th_sha256_update(&s, der, (size_t)len);
  th_sha256_final(&s, d);
  th_hex(d, 32, hex);
  OPENSSL_free(der);
  return 1;
}

/* Reads a PEM key from path: the private key (is_private) or the public one. NULL with err set when
 * the file cannot be opened (*io set) or holds no Ed25519 key of that kind. */
static EVP_PKEY *tune__read_key(const char *path, int is_private, int *io, char *err, size_t n) {
  *io = 0;
  FILE *f = fopen(path, "r");
  if (!f) {
    *io = 1;
    snprintf(err, n, "cannot read the %s key file %s: %s", is_private ? "signing" : "public", path,
             strerror(errno));
    return NULL;
  }
  EVP_PKEY *k = is_private ? PEM_read_PrivateKey(f, NULL, tune__no_pass, NULL)
                           : PEM_read_PUBKEY(f, NULL, tune__no_pass, NULL);
  fclose(f);
  if (!k || !EVP_PKEY_is_a(k, "ED25519")) {
    EVP_PKEY_free(k);
    snprintf(err, n,
             is_private ? "%s holds no Ed25519 private key: expected an unencrypted PEM PKCS#8 key "
                          "(\"BEGIN PRIVATE "
                          "KEY\"), as `openssl genpkey -algorithm ed25519 -out %s` writes"
                        : "%s holds no Ed25519 public key: expected PEM (\"BEGIN PUBLIC KEY\"), as "
                          "`openssl pkey "
                          "-in SIGNING.pem -pubout -out %s` writes",
             path, path);
    return NULL;
  }
  return k;
}

th_status tune_signer_load(const char *path, tune_signer **out, char *err, size_t n) {
  int io = 0;
  EVP_PKEY *k = tune__read_key(path, 1, &io, err, n);
  if (!k) return io ? TH_ERR_IO : TH_ERR_INVALID;
  tune_signer *sg = calloc(1, sizeof *sg);
  if (!sg || !tune__keyid(k, sg->keyid)) {
    free(sg);
    EVP_PKEY_free(k);
    snprintf(err, n, "cannot derive the public key of %s", path);
    return TH_ERR_NOMEM;
  }
  sg->key = k;
  *out = sg;
  return TH_OK;
}

void tune_signer_free(tune_signer *sg) {
  if (!sg) return;
  EVP_PKEY_free(sg->key);
  free(sg);
}

const char *tune_signer_keyid(const tune_signer *sg) {
  return sg->keyid;
}

/* PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body, into a new buffer (*out,
 * *len). */
static th_status tune__pae(const char *type, const char *body, size_t blen, unsigned char **out,
                           size_t *len) {
  char head[160];
  int h = snprintf(head, sizeof head, "DSSEv1 %zu %s %zu ", strlen(type), type, blen);
  if (h < 0 || (size_t)h >= sizeof head) return TH_ERR_INVALID;
  unsigned char *p = malloc((size_t)h + blen + 1);
  if (!p) return TH_ERR_NOMEM;
  memcpy(p, head, (size_t)h);
  memcpy(p + h, body, blen);
  *out = p;
  *len = (size_t)h + blen;
  return TH_OK;
}

/* Standard base64 of n bytes, malloc'd; NULL on OOM. */
static char *tune__b64(const void *p, size_t n) {
  char *o = malloc(4 * ((n + 2) / 3) + 1);
  if (o) th_base64(p, n, o);
  return o;
}

/* Decodes standard or URL-safe base64 (DSSE verifiers accept both; padding optional) into a new
 * buffer. */
static th_status tune__unb64(const char *s, unsigned char **out, size_t *len) {
  size_t n = strlen(s);
  while (n > 0 && s[n - 1] == '=') n--;
  if (n % 4 == 1) return TH_ERR_INVALID;
  size_t padded = (n + 3) / 4 * 4;
  char *t = malloc(padded + 1);
  unsigned char *o = malloc(padded / 4 * 3 + 1);
  th_status rc = t && o ? TH_OK : TH_ERR_NOMEM;
  for (size_t i = 0; rc == TH_OK && i < padded; i++) {
    char c = i < n ? s[i] : '=';
    if (c == '-') c = '+';
    if (c == '_') c = '/';
    int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
             c == '+' || c == '/' || (c == '=' && i >= n);
    if (!ok) rc = TH_ERR_INVALID;
    t[i] = c;
  }
  int got = -1;
  if (rc == TH_OK) got = EVP_DecodeBlock(o, (const unsigned char *)t, (int)padded);
  if (rc == TH_OK && got < 0) rc = TH_ERR_INVALID;
  free(t);
  if (rc != TH_OK) {
    free(o);
    return rc;
  }
  *out = o;
  *len = (size_t)got - (padded - n); /* EVP_DecodeBlock counts the padding's zero bytes */
  return TH_OK;
}

static int tune__cmp_line(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

th_status tune_prov_records_digest(const char *manifest, char hex[65], int *count) {
  json_t *m = json_loads(manifest, 0, NULL);
  json_t *layers = json_object_get(m, "layers");
  if (!json_is_array(layers)) {
    json_decref(m);
    return TH_ERR_INVALID;
  }
  size_t nl = json_array_size(layers), k = 0;
  char **lines = calloc(nl ? nl : 1, sizeof *lines);
  th_status rc = lines ? TH_OK : TH_ERR_NOMEM;
  for (size_t i = 0; rc == TH_OK && i < nl; i++) {
    json_t *l = json_array_get(layers, i);
    const char *src = json_string_value(json_object_get(l, "source"));
    const char *wl = json_string_value(json_object_get(l, "workload"));
    const char *cfg = json_string_value(json_object_get(l, "config"));
    if (!src || !wl || !cfg || (strcmp(src, "tuned") && strcmp(src, "transferred"))) continue;
    size_t len = strlen(wl) + strlen(cfg) + strlen(src) + 4;
    lines[k] = malloc(len);
    if (!lines[k]) {
      rc = TH_ERR_NOMEM;
      break;
    }
    snprintf(lines[k++], len, "%s\t%s\t%s\n", wl, cfg, src);
  }
  if (rc == TH_OK) qsort(lines, k, sizeof *lines, tune__cmp_line);
  th_sha256 s;
  th_sha256_init(&s);
  int used = 0;
  for (size_t i = 0; rc == TH_OK && i < k; i++) {
    if (i > 0 && strcmp(lines[i], lines[i - 1]) == 0) continue;
    th_sha256_update(&s, lines[i], strlen(lines[i]));
    used++;
  }
  for (size_t i = 0; lines && i < k; i++) free(lines[i]);
  free(lines);
  json_decref(m);
  if (rc != TH_OK) return rc;
  unsigned char d[32];
  th_sha256_final(&s, d);
  if (used)
    th_hex(d, 32, hex);
  else
    hex[0] = '\0';
  *count = used;
  return TH_OK;
}

/* The CPU's model string from /proc/cpuinfo ("model name"), into buf; "" when there is none. */
static void tune__cpu_model(char *buf, size_t n) {
  buf[0] = '\0';
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) != 0) continue;
    const char *v = strchr(line, ':');
    if (!v) break;
    v++;
    while (*v == ' ' || *v == '\t') v++;
    snprintf(buf, n, "%.*s", (int)strcspn(v, "\n"), v);
    break;
  }
  fclose(f);
}

/* The threads a model runs with here: what the runtime's pool takes (TH_NUM_THREADS, else the
 * online CPUs). */
static long tune__model_threads(void) {
  long t = sysconf(_SC_NPROCESSORS_ONLN);
  const char *env = getenv("TH_NUM_THREADS");
  int64_t v = 0;
  if (env && th_parse_i64(env, &v) == TH_OK && v >= 1) t = (long)v;
  return t < 1 ? 1 : t;
}

/* Copies m[name] into o[as] (a deep copy), when m has it. */
static void tune__copy(json_t *o, const char *as, json_t *m, const char *name) {
  json_t *v = json_object_get(m, name);
  if (v) json_object_set_new(o, as, json_deep_copy(v));
}

/* The statement's predicate (README "Signed provenance" lists its fields). */
static json_t *tune__predicate(const store_key *key, json_t *m, const char *manifest,
                               const tune_prov_machine *machine) {
  json_t *p = json_object();
  json_t *net = json_pack("{s:s}", "name", key->network);
  if (key->net_digest[0])
    json_object_set_new(net, "digest", json_pack("{s:s}", "sha256", key->net_digest));
  tune__copy(net, "source", m, "network_source");
  json_object_set_new(p, "network", net);

  json_t *comp =
      json_pack("{s:s,s:s}", "framework", key->framework, "version", key->compiler_version);
  json_t *mk = json_object_get(m, "key");
  tune__copy(comp, "target", mk, "target");
  tune__copy(comp, "precision", m, "precision");
  tune__copy(comp, "fusion_disabled", m, "fusion_disabled");
  json_object_set_new(p, "compiler", comp);

  /* the target as the compiler saw it (triple, CPU, feature string, the features the model
   * requires) */
  json_t *tgt = json_deep_copy(json_object_get(m, "target"));
  if (tgt) json_object_del(tgt, "built_on");
  json_object_set_new(p, "target", tgt ? tgt : json_null());

  char rhex[65] = "";
  int nrec = 0;
  tune_prov_records_digest(manifest, rhex, &nrec);
  json_object_set_new(
      p, "records",
      json_pack("{s:s,s:i,s:s}", "sha256", rhex, "count", nrec, "canonical",
                "sorted unique lines \"<workload>\\t<config>\\t<source>\\n\" of the layers whose "
                "source is tuned or transferred; empty when none"));
  tune__copy(p, "config_sources", m, "config_sources");
  tune__copy(p, "tuned", m, "tuned");

  json_t *lat = json_object_get(m, "latency_ms");
  json_object_set_new(p, "latency_ms", json_is_object(lat) ? json_deep_copy(lat) : json_null());
  tune__copy(p, "unmeasured", m, "unmeasured");
  json_t *on = json_object();
  json_t *built = json_object_get(json_object_get(m, "target"), "built_on");
  tune__copy(on, "hostname", built, "hostname");
  tune__copy(on, "cpu", built, "cpu");
  char model[256];
  tune__cpu_model(model, sizeof model);
  if (model[0]) json_object_set_new(on, "cpu_model", json_string(model));
  json_object_set_new(on, "threads", json_integer(tune__model_threads()));
  if (machine && machine->worker && machine->worker[0])
    json_object_set_new(on, "worker", json_string(machine->worker));
  json_object_set_new(p, "measured_on", on);

  /* what was checked numerically, and what was not: the records' configs passed the per-kernel
   * check against the reference (a record with error class 0); the whole network is only checked
   * for finite outputs */
  json_object_set_new(
      p, "numerical_check",
      json_pack(
          "{s:{s:s,s:f,s:f},s:s,s:n,s:n}", "kernels", "method",
          "every tuned or transferred config's output was compared with the naive reference kernel "
          "of its "
          "workload (|got - ref| <= atol * max|ref| + rtol * |ref|) before its record was kept",
          "rtol", 1e-4, "atol", 1e-5, "network",
          "the timed runs' outputs are finite; not compared with a reference framework",
          "max_abs_error", "max_rel_error"));
  return p;
}

th_status tune_prov_sign(const tune_signer *sg, const store_key *key, const char *tar_digest,
                         const char *manifest, const tune_prov_machine *machine, char **envelope,
                         char *err, size_t n) {
  json_t *m = json_loads(manifest, 0, NULL);
  if (!json_is_object(m)) {
    json_decref(m);
    snprintf(err, n, "the manifest is not a JSON object");
    return TH_ERR_INVALID;
  }
  char subject[sizeof key->framework + sizeof key->network + 16];
  snprintf(subject, sizeof subject, "%s/%s/%d", key->framework, key->network, key->batch);
  json_t *st =
      json_pack("{s:s,s:[{s:s,s:{s:s}}],s:s,s:o}", "_type", "https://in-toto.io/Statement/v1",
                "subject", "name", subject, "digest", "sha256", tar_digest, "predicateType",
                TUNE_PROV_PREDICATE_TYPE, "predicate", tune__predicate(key, m, manifest, machine));
  json_decref(m);
  char *payload = st ? json_dumps(st, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
  json_decref(st);
  unsigned char *pae = NULL, sig[64];
  size_t pae_len = 0, sig_len = sizeof sig;
  th_status rc = payload
                     ? tune__pae(TUNE_PROV_PAYLOAD_TYPE, payload, strlen(payload), &pae, &pae_len)
                     : TH_ERR_NOMEM;
  EVP_MD_CTX *ctx = rc == TH_OK ? EVP_MD_CTX_new() : NULL;
  if (rc == TH_OK && (!ctx || EVP_DigestSignInit(ctx, NULL, NULL, NULL, sg->key) != 1 ||
                      EVP_DigestSign(ctx, sig, &sig_len, pae, pae_len) != 1)) {
    snprintf(err, n, "Ed25519 signing failed");
    rc = TH_ERR_INTERNAL;
  }
  EVP_MD_CTX_free(ctx);
  free(pae);
  char *b64p = rc == TH_OK ? tune__b64(payload, strlen(payload)) : NULL;
  char *b64s = rc == TH_OK ? tune__b64(sig, sig_len) : NULL;
  free(payload);
  json_t *env = b64p && b64s
                    ? json_pack("{s:s,s:s,s:[{s:s,s:s}]}", "payloadType", TUNE_PROV_PAYLOAD_TYPE,
                                "payload", b64p, "signatures", "keyid", sg->keyid, "sig", b64s)
                    : NULL;
  free(b64p);
  free(b64s);
  char *text = env ? json_dumps(env, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
  json_decref(env);
  if (rc == TH_OK && !text) rc = TH_ERR_NOMEM;
  if (rc == TH_OK)
    *envelope = text;
  else
    free(text);
  return rc;
}

/* The statement's subject sha256 that equals want, else the first one (into got, "" when none); 1
 * on a match, -1 when the statement is no in-toto Statement v1. */
static int tune__subject(const char *stmt, size_t len, const char *want, char *got, size_t n) {
  got[0] = '\0';
  json_t *s = json_loadb(stmt, len, 0, NULL);
  json_t *subj = json_object_get(s, "subject");
  const char *type = json_string_value(json_object_get(s, "_type"));
  int r = -1;
  if (type && strcmp(type, "https://in-toto.io/Statement/v1") == 0 && json_is_array(subj)) {
    r = 0;
    for (size_t i = 0; i < json_array_size(subj) && r == 0; i++) {
      const char *d = json_string_value(
          json_object_get(json_object_get(json_array_get(subj, i), "digest"), "sha256"));
      if (!d) continue;
      if (!got[0] || strcmp(d, want) == 0) snprintf(got, n, "%s", d);
      if (strcmp(d, want) == 0) r = 1;
    }
  }
  json_decref(s);
  return r;
}

tune_prov_failure tune_prov_verify(const char *envelope, size_t len, const char *pub_path,
                                   const char *bundle_sha256, char **statement, char *err,
                                   size_t n) {
  json_error_t je;
  json_t *env = json_loadb(envelope, len, 0, &je);
  const char *type = json_string_value(json_object_get(env, "payloadType"));
  const char *b64p = json_string_value(json_object_get(env, "payload"));
  json_t *sigs = json_object_get(env, "signatures");
  tune_prov_failure f = TUNE_PROV_OK;
  if (!env) {
    snprintf(err, n, "statement is not valid JSON/DSSE: %s (line %d)", je.text, je.line);
    f = TUNE_PROV_MALFORMED;
  } else if (!type || !b64p || !json_is_array(sigs) || json_array_size(sigs) == 0) {
    snprintf(err, n,
             "statement is not valid JSON/DSSE: a DSSE envelope has string payloadType and payload "
             "and a "
             "non-empty signatures array");
    f = TUNE_PROV_MALFORMED;
  } else if (strcmp(type, TUNE_PROV_PAYLOAD_TYPE) != 0) {
    snprintf(err, n, "statement is not valid JSON/DSSE: payloadType '%s', expected %s", type,
             TUNE_PROV_PAYLOAD_TYPE);
    f = TUNE_PROV_MALFORMED;
  }
  unsigned char *payload = NULL, *pae = NULL;
  size_t plen = 0, pae_len = 0;
  if (f == TUNE_PROV_OK && tune__unb64(b64p, &payload, &plen) != TH_OK) {
    snprintf(err, n, "statement is not valid JSON/DSSE: the payload is not base64");
    f = TUNE_PROV_MALFORMED;
  }
  int io = 0;
  EVP_PKEY *k = NULL;
  if (f == TUNE_PROV_OK && !(k = tune__read_key(pub_path, 0, &io, err, n))) f = TUNE_PROV_KEY;
  if (f == TUNE_PROV_OK && tune__pae(type, (const char *)payload, plen, &pae, &pae_len) != TH_OK) {
    snprintf(err, n, "statement is not valid JSON/DSSE: payloadType too long");
    f = TUNE_PROV_MALFORMED;
  }
  int good = 0;
  for (size_t i = 0; f == TUNE_PROV_OK && !good && i < json_array_size(sigs); i++) {
    const char *b64s = json_string_value(json_object_get(json_array_get(sigs, i), "sig"));
    unsigned char *sig = NULL;
    size_t slen = 0;
    if (!b64s || tune__unb64(b64s, &sig, &slen) != TH_OK) continue;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    good = ctx && EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, k) == 1 &&
           EVP_DigestVerify(ctx, sig, slen, pae, pae_len) == 1;
    EVP_MD_CTX_free(ctx);
    free(sig);
  }
  if (f == TUNE_PROV_OK && !good) {
    snprintf(err, n, "signature does not verify with %s", pub_path);
    f = TUNE_PROV_SIGNATURE;
  }
  char got[80];
  int match = f == TUNE_PROV_OK
                  ? tune__subject((const char *)payload, plen, bundle_sha256, got, sizeof got)
                  : 0;
  if (f == TUNE_PROV_OK && match < 0) {
    snprintf(err, n,
             "statement is not valid JSON/DSSE: the signed payload is no in-toto Statement v1 with "
             "a subject");
    f = TUNE_PROV_MALFORMED;
  } else if (f == TUNE_PROV_OK && match == 0) {
    snprintf(err, n, "bundle digest sha256:%s is not the statement's subject sha256:%s",
             bundle_sha256, got[0] ? got : "(none)");
    f = TUNE_PROV_SUBJECT;
  }
  if (f == TUNE_PROV_OK && statement) {
    payload[plen] = '\0';
    *statement = (char *)payload;
    payload = NULL;
  }
  EVP_PKEY_free(k);
  free(pae);
  free(payload);
  json_decref(env);
  return f;
}
