/* Unit tests of signed provenance (tuner/provenance.c): a statement signed with a key verifies with
 * its public key and names the bundle; the DSSE signature is over PAE (checked against a PAE built
 * here from the spec's definition); URL-safe base64, which DSSE verifiers must accept, verifies
 * too; an edited payload, another bundle and another key each fail with their own kind; the records
 * digest is order-free and empty for a build of fallbacks; a key file that is no Ed25519 private
 * key is refused with the expected format. */
#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "provenance.h"
#include "th_test.h"

/* A fresh Ed25519 key pair written as PEM into dir/<name>.pem and dir/<name>.pub.pem. */
static void write_keys(const char *dir, const char *name) {
  EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
  CHECK(k != NULL);
  char p[256];
  snprintf(p, sizeof p, "%s/%s.pem", dir, name);
  FILE *f = fopen(p, "w");
  CHECK(f && PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL) == 1);
  fclose(f);
  snprintf(p, sizeof p, "%s/%s.pub.pem", dir, name);
  f = fopen(p, "w");
  CHECK(f && PEM_write_PUBKEY(f, k) == 1);
  fclose(f);
  EVP_PKEY_free(k);
}

static const char *manifest =
    "{\"key\":{\"target\":\"llvm -mcpu=test\"},\"precision\":\"fp32\",\"target\":{\"cpu\":\"test\","
    "\"features\":\"+avx2\",\"built_on\":{\"hostname\":\"h\",\"cpu\":\"test\"}},\"tuned\":true,"
    "\"latency_ms\":{\"median\":1.5,\"mean\":1.6,\"std\":0.1,\"n\":5},\"layers\":["
    "{\"workload\":\"w2\",\"config\":\"c2\",\"source\":\"transferred\"},"
    "{\"workload\":\"w1\",\"config\":\"c1\",\"source\":\"tuned\"},"
    "{\"workload\":\"w1\",\"config\":\"c1\",\"source\":\"tuned\"},"
    "{\"workload\":\"w3\",\"config\":\"c3\",\"source\":\"fallback\"}]}";

static const char *bundle = "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a";

static char *sign_one(const char *dir) {
  char p[256], err[512] = "";
  snprintf(p, sizeof p, "%s/k.pem", dir);
  tune_signer *sg = NULL;
  CHECK(tune_signer_load(p, &sg, err, sizeof err) == TH_OK);
  CHECK(strlen(tune_signer_keyid(sg)) == 64);
  store_key key;
  memset(&key, 0, sizeof key);
  snprintf(key.framework, sizeof key.framework, "llvm");
  snprintf(key.network, sizeof key.network, "resnet-18");
  key.batch = 1;
  snprintf(key.compiler_version, sizeof key.compiler_version, "0.1.0");
  char *env = NULL;
  tune_prov_machine m = {"w1"};
  CHECK(tune_prov_sign(sg, &key, bundle, manifest, &m, &env, err, sizeof err) == TH_OK);
  tune_signer_free(sg);
  return env;
}

static char *tmpdir(void) {
  char *d = strdup("/tmp/th_prov_XXXXXX");
  CHECK(mkdtemp(d) != NULL);
  write_keys(d, "k");
  write_keys(d, "other");
  return d;
}

static void rmdir_keys(char *d) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", d);
  CHECK(system(cmd) == 0);
  free(d);
}

/* The good triple verifies, and the statement is the in-toto one about the bundle. */
TH_TEST(sign_then_verify) {
  char *d = tmpdir(), pub[256], err[512] = "", *stmt = NULL;
  char *env = sign_one(d);
  snprintf(pub, sizeof pub, "%s/k.pub.pem", d);
  CHECK_EQ_INT(tune_prov_verify(env, strlen(env), pub, bundle, &stmt, err, sizeof err),
               TUNE_PROV_OK);
  json_t *s = json_loads(stmt, 0, NULL);
  CHECK_STR(json_string_value(json_object_get(s, "_type")), "https://in-toto.io/Statement/v1");
  json_t *subj = json_array_get(json_object_get(s, "subject"), 0);
  CHECK_STR(json_string_value(json_object_get(subj, "name")), "llvm/resnet-18/1");
  CHECK_STR(json_string_value(json_object_get(json_object_get(subj, "digest"), "sha256")), bundle);
  json_t *p = json_object_get(s, "predicate");
  CHECK(json_object_get(json_object_get(p, "target"), "built_on") == NULL);
  CHECK_STR(json_string_value(json_object_get(json_object_get(p, "measured_on"), "hostname")), "h");
  CHECK(json_number_value(json_object_get(json_object_get(p, "latency_ms"), "median")) == 1.5);
  CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(p, "records"), "count")), 2);
  json_decref(s);
  free(stmt);
  free(env);
  rmdir_keys(d);
  return 0;
}

/* The signature is Ed25519 over PAE(payloadType, payload) exactly as DSSE v1 defines it. */
TH_TEST(signature_is_over_pae) {
  char *d = tmpdir(), pub[256];
  char *env = sign_one(d);
  json_t *e = json_loads(env, 0, NULL);
  const char *b64p = json_string_value(json_object_get(e, "payload"));
  const char *b64s = json_string_value(
      json_object_get(json_array_get(json_object_get(e, "signatures"), 0), "sig"));
  unsigned char *payload = malloc(strlen(b64p)), sig[80];
  int plen = EVP_DecodeBlock(payload, (const unsigned char *)b64p, (int)strlen(b64p));
  plen -= (int)(strlen(b64p) - strcspn(b64p, "="));
  CHECK_EQ_INT(EVP_DecodeBlock(sig, (const unsigned char *)b64s, (int)strlen(b64s)) - 2,
               64); /* "==" */
  const char *type = "application/vnd.in-toto+json";
  size_t cap = (size_t)plen + 100, n = 0;
  char *pae = malloc(cap);
  n = (size_t)snprintf(pae, cap, "DSSEv1 %zu %s %d ", strlen(type), type, plen);
  memcpy(pae + n, payload, (size_t)plen);
  n += (size_t)plen;
  snprintf(pub, sizeof pub, "%s/k.pub.pem", d);
  FILE *f = fopen(pub, "r");
  EVP_PKEY *k = PEM_read_PUBKEY(f, NULL, NULL, NULL);
  fclose(f);
  EVP_MD_CTX *ctx = EVP_MD_CTX_new();
  CHECK(EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, k) == 1);
  CHECK(EVP_DigestVerify(ctx, sig, 64, (unsigned char *)pae, n) == 1);
  EVP_MD_CTX_free(ctx);
  EVP_PKEY_free(k);
  free(pae);
  free(payload);
  json_decref(e);
  free(env);
  rmdir_keys(d);
  return 0;
}

/* URL-safe base64 without padding (DSSE verifiers accept both alphabets) verifies like the standard
 * one. */
TH_TEST(url_safe_base64_accepted) {
  char *d = tmpdir(), pub[256], err[512] = "";
  char *env = sign_one(d);
  json_t *e = json_loads(env, 0, NULL);
  json_t *sig = json_array_get(json_object_get(e, "signatures"), 0);
  char *p = strdup(json_string_value(json_object_get(e, "payload")));
  char *g = strdup(json_string_value(json_object_get(sig, "sig")));
  int changed = 0;
  for (char *t = p; *t; t++) { /* the payload's and the signature's alphabet, without padding */
    changed += *t == '+' || *t == '/';
    *t = *t == '+' ? '-' : *t == '/' ? '_' : *t;
  }
  for (char *t = g; *t; t++) *t = *t == '+' ? '-' : *t == '/' ? '_' : *t;
  p[strcspn(p, "=")] = '\0';
  g[strcspn(g, "=")] = '\0';
  CHECK(changed > 0); /* a statement of this size has some */
  json_object_set_new(e, "payload", json_string(p));
  json_object_set_new(sig, "sig", json_string(g));
  free(g);
  char *text = json_dumps(e, JSON_COMPACT);
  snprintf(pub, sizeof pub, "%s/k.pub.pem", d);
  CHECK_EQ_INT(tune_prov_verify(text, strlen(text), pub, bundle, NULL, err, sizeof err),
               TUNE_PROV_OK);
  free(text);
  free(p);
  json_decref(e);
  free(env);
  rmdir_keys(d);
  return 0;
}

/* An edited payload, another bundle, another key and junk fail, each with its own kind and message.
 */
TH_TEST(each_failure_named) {
  char *d = tmpdir(), pub[256], other[256], err[512] = "";
  char *env = sign_one(d);
  snprintf(pub, sizeof pub, "%s/k.pub.pem", d);
  snprintf(other, sizeof other, "%s/other.pub.pem", d);
  CHECK_EQ_INT(tune_prov_verify(env, strlen(env), other, bundle, NULL, err, sizeof err),
               TUNE_PROV_SIGNATURE);
  CHECK(strstr(err, "signature does not verify with ") && strstr(err, "other.pub.pem"));
  const char *another = "6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b";
  CHECK_EQ_INT(tune_prov_verify(env, strlen(env), pub, another, NULL, err, sizeof err),
               TUNE_PROV_SUBJECT);
  CHECK(strstr(err, "bundle digest sha256:6b6b") &&
        strstr(err, "is not the statement's subject sha256:5a5a"));
  /* one character of the payload changed (base64 of another statement) */
  json_t *e = json_loads(env, 0, NULL);
  char *p = strdup(json_string_value(json_object_get(e, "payload")));
  p[10] = p[10] == 'A' ? 'B' : 'A';
  json_object_set_new(e, "payload", json_string(p));
  char *text = json_dumps(e, JSON_COMPACT);
  CHECK_EQ_INT(tune_prov_verify(text, strlen(text), pub, bundle, NULL, err, sizeof err),
               TUNE_PROV_SIGNATURE);
  free(text);
  free(p);
  json_decref(e);
  CHECK_EQ_INT(tune_prov_verify("{", 1, pub, bundle, NULL, err, sizeof err), TUNE_PROV_MALFORMED);
  CHECK(strstr(err, "statement is not valid JSON/DSSE: ") == err);
  const char *wrong =
      "{\"payload\":\"e30=\",\"payloadType\":\"text/plain\",\"signatures\":[{\"sig\":\"\"}]}";
  CHECK_EQ_INT(tune_prov_verify(wrong, strlen(wrong), pub, bundle, NULL, err, sizeof err),
               TUNE_PROV_MALFORMED);
  CHECK(strstr(err, "payloadType 'text/plain'") != NULL);
  char priv[256];
  snprintf(priv, sizeof priv, "%s/k.pem", d);
  CHECK_EQ_INT(tune_prov_verify(env, strlen(env), priv, bundle, NULL, err, sizeof err),
               TUNE_PROV_KEY);
  CHECK(strstr(err, "holds no Ed25519 public key") != NULL);
  free(env);
  rmdir_keys(d);
  return 0;
}

/* The records digest: the same records in another order (and repeated) give the same digest;
 * fallbacks count for nothing; a manifest without layers is refused. */
TH_TEST(records_digest_canonical) {
  char a[65], b[65], c[65];
  int na = 0, nb = 0, nc = 0;
  CHECK(tune_prov_records_digest(manifest, a, &na) == TH_OK);
  const char *reordered =
      "{\"layers\":[{\"workload\":\"w1\",\"config\":\"c1\",\"source\":\"tuned\"},"
      "{\"workload\":\"w3\",\"config\":\"c9\",\"source\":\"fallback\"},"
      "{\"workload\":\"w2\",\"config\":\"c2\",\"source\":\"transferred\"}]}";
  CHECK(tune_prov_records_digest(reordered, b, &nb) == TH_OK);
  CHECK_EQ_INT(na, 2);
  CHECK_EQ_INT(nb, 2);
  CHECK_STR(a, b);
  CHECK_EQ_INT((int)strlen(a), 64);
  const char *fallback =
      "{\"layers\":[{\"workload\":\"w3\",\"config\":\"c3\",\"source\":\"fallback\"}]}";
  CHECK(tune_prov_records_digest(fallback, c, &nc) == TH_OK);
  CHECK_STR(c, "");
  CHECK_EQ_INT(nc, 0);
  CHECK(tune_prov_records_digest("{}", c, &nc) == TH_ERR_INVALID);
  return 0;
}

/* A key file that is a public key, or no file, is refused naming the file and the format. */
TH_TEST(bad_signing_key_refused) {
  char *d = tmpdir(), p[256], err[512] = "";
  tune_signer *sg = NULL;
  snprintf(p, sizeof p, "%s/k.pub.pem", d);
  CHECK_EQ_INT(tune_signer_load(p, &sg, err, sizeof err), TH_ERR_INVALID);
  CHECK(strstr(err, "k.pub.pem holds no Ed25519 private key: expected an unencrypted PEM PKCS#8") !=
        NULL);
  snprintf(p, sizeof p, "%s/none.pem", d);
  CHECK_EQ_INT(tune_signer_load(p, &sg, err, sizeof err), TH_ERR_IO);
  CHECK(strstr(err, "cannot read the signing key file ") != NULL);
  CHECK(sg == NULL);
  rmdir_keys(d);
  return 0;
}
