/* tune_prov: signed provenance of a published bundle. The daemon that publishes a version makes an
 * in-toto Statement v1 about it (subject: the bundle's sha256; predicate: what went into the build
 * and what was measured of it) and signs it with an Ed25519 key (OpenSSL libcrypto) inside a DSSE
 * envelope; `tunehub verify` checks such an envelope against a public key and a bundle. Nothing
 * here touches the store or the network. */
#ifndef TUNE_PROVENANCE_H
#define TUNE_PROVENANCE_H

#include <stddef.h>

#include "store.h"
#include "th_status.h"

/* The statement's predicateType: a tunehub URI, its major version at the end (README "Signed
 * provenance"). */
#define TUNE_PROV_PREDICATE_TYPE "https://tunehub.dev/provenance/bundle/v1"
/* The DSSE payloadType of an in-toto statement, and the media type of the envelope (served and in
 * /v2/). */
#define TUNE_PROV_PAYLOAD_TYPE "application/vnd.in-toto+json"
#define TUNE_PROV_ENVELOPE_MEDIA "application/vnd.dsse.envelope.v1+json"

typedef struct tune_signer tune_signer;

/* Reads an Ed25519 private key from path (PEM, PKCS#8 "BEGIN PRIVATE KEY", as `openssl genpkey
 * -algorithm ed25519` writes it) into a new signer (*out, freed with tune_signer_free). TH_ERR_IO
 * when the file cannot be read, TH_ERR_INVALID when it holds no such key; err names the file and
 * the expected format. */
th_status tune_signer_load(const char *path, tune_signer **out, char *err, size_t n);
/* Accepts NULL. After the call the signer is no longer valid. */
void tune_signer_free(tune_signer *sg);
/* The key's id: hex sha256 of its public key's DER (SubjectPublicKeyInfo), as in the envelope's
 * keyid. Borrowed: valid while the signer is. */
const char *tune_signer_keyid(const tune_signer *sg);

/* Where a version was measured (the predicate's measured_on). Strings are borrowed for the call;
 * NULL or "" leave a field out. */
typedef struct tune_prov_machine {
  const char *worker; /* the scheduler's worker name */
} tune_prov_machine;

/* Makes the statement of a version of key whose bundle has sha256 tar_digest (hex) and whose
 * manifest text (the build's, with its measurement: tc_build_bundle's manifest_json) is manifest,
 * and signs it: *envelope gets the DSSE envelope's JSON text (malloc'd, the caller frees it).
 * TH_ERR_INVALID when the manifest is not JSON; TH_ERR_INTERNAL when signing fails (err says why).
 * Thread-safe: a signer may sign from several threads. */
th_status tune_prov_sign(const tune_signer *sg, const store_key *key, const char *tar_digest,
                         const char *manifest, const tune_prov_machine *machine, char **envelope,
                         char *err, size_t n);

/* The sha256 (hex, 65 bytes) over the tuning records a build used, as its manifest names them:
 * every layer whose config is "tuned" or "transferred" contributes the line
 * "<workload>\t<config>\t<source>\n"; the lines are de-duplicated and sorted bytewise, then hashed.
 * A build of fallbacks alone has none: hex is "" and *count 0. TH_ERR_INVALID when the manifest has
 * no layers array. */
th_status tune_prov_records_digest(const char *manifest, char hex[65], int *count);

/* How an envelope failed tune_prov_verify. */
typedef enum tune_prov_failure {
  TUNE_PROV_OK = 0,
  TUNE_PROV_MALFORMED, /* not JSON, not a DSSE envelope, not base64, or a payload that is no in-toto
                          statement */
  TUNE_PROV_KEY,       /* the public key file cannot be read or holds no Ed25519 key */
  TUNE_PROV_SIGNATURE, /* no signature of the envelope verifies with the key */
  TUNE_PROV_SUBJECT,   /* the bundle's sha256 is not the statement's subject */
} tune_prov_failure;

/* Verifies the DSSE envelope text (len bytes) with the Ed25519 public key in pub_path (PEM "BEGIN
 * PUBLIC KEY", `openssl pkey -pubout`), then that the statement it signs has bundle_sha256 (hex) as
 * its subject's sha256. On TUNE_PROV_OK, *statement (may be NULL) gets the statement's JSON text,
 * the very bytes that verified (malloc'd, the caller frees it). Otherwise err says which check
 * failed, naming the key file or the two digests. */
tune_prov_failure tune_prov_verify(const char *envelope, size_t len, const char *pub_path,
                                   const char *bundle_sha256, char **statement, char *err,
                                   size_t n);

#endif
