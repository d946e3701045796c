/* `tunehub verify BUNDLE --statement FILE --key PUB.pem`: checks a bundle against the signed
 * provenance a daemon serves for it (GET .../provenance): the DSSE envelope's signature with the
 * public key, then that the statement's subject is the bundle's sha256, and prints what the
 * predicate says. Each failure names the check that failed (tuner/provenance.c words it), so a
 * pipeline's log says whether the bundle, the statement or the key is the wrong one. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "provenance.h"
#include "th_sha256.h"
#include "th_util.h"

/* The largest statement file read: an envelope is a few KiB. */
#define CLI_VERIFY_MAX_STATEMENT ((size_t)16 << 20)

/* The predicate's facts, one a line, on stdout. */
static void cli__verify_summary(const char *statement) {
  json_t *st = json_loads(statement, 0, NULL);
  json_t *p = json_object_get(st, "predicate"),
         *subj = json_array_get(json_object_get(st, "subject"), 0);
  json_t *comp = json_object_get(p, "compiler"), *rec = json_object_get(p, "records");
  json_t *lat = json_object_get(p, "latency_ms"), *on = json_object_get(p, "measured_on");
  printf("subject:   %s sha256:%s\n", json_string_value(json_object_get(subj, "name")),
         json_string_value(json_object_get(json_object_get(subj, "digest"), "sha256")));
  printf("predicate: %s\n", json_string_value(json_object_get(st, "predicateType")));
  printf("compiler:  %s %s, target %s, precision %s\n",
         json_string_value(json_object_get(comp, "framework")),
         json_string_value(json_object_get(comp, "version")),
         json_string_value(json_object_get(comp, "target")),
         json_string_value(json_object_get(comp, "precision")));
  printf("network:   %s\n",
         json_string_value(json_object_get(json_object_get(p, "network"), "name")));
  const char *rd = json_string_value(json_object_get(rec, "sha256"));
  printf("records:   %lld%s%s%s\n", (long long)json_integer_value(json_object_get(rec, "count")),
         rd && rd[0] ? " (sha256:" : " (fallback configs only", rd && rd[0] ? rd : "", ")");
  if (json_is_object(lat))
    printf(
        "latency:   median %.3f ms, mean %.3f, std %.3f over %lld rounds on %s (%s, %lld "
        "threads)\n",
        json_number_value(json_object_get(lat, "median")),
        json_number_value(json_object_get(lat, "mean")),
        json_number_value(json_object_get(lat, "std")),
        (long long)json_integer_value(json_object_get(lat, "n")),
        json_string_value(json_object_get(on, "cpu")),
        json_string_value(json_object_get(on, "cpu_model")),
        (long long)json_integer_value(json_object_get(on, "threads")));
  else
    printf("latency:   unmeasured (%s)\n", json_string_value(json_object_get(p, "unmeasured")));
  printf("numerical: %s; network: %s\n",
         json_string_value(json_object_get(
             json_object_get(json_object_get(p, "numerical_check"), "kernels"), "method")),
         json_string_value(json_object_get(json_object_get(p, "numerical_check"), "network")));
  json_decref(st);
}

int cli_verify(int argc, char **argv) {
  static const char usage_line[] =
      "usage: tunehub verify BUNDLE.tar --statement ENVELOPE.json --key PUB.pem";
  if (cli_help(argc, argv, usage_line)) return 0;
  const char *bundle = NULL, *statement = NULL, *key = NULL;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--statement") && i + 1 < argc) {
      statement = argv[++i];
    } else if (!strcmp(argv[i], "--key") && i + 1 < argc) {
      key = argv[++i];
    } else if (argv[i][0] != '-' && !bundle) {
      bundle = argv[i];
    } else {
      fprintf(stderr, "tunehub verify: %s '%s'\n%s\n",
              !strcmp(argv[i], "--statement") || !strcmp(argv[i], "--key")
                  ? "a value is missing after"
                  : "unknown argument",
              argv[i], usage_line);
      return 2;
    }
  }
  if (!bundle || !statement || !key) {
    fprintf(stderr, "tunehub verify: %s is missing\n%s\n",
            !bundle      ? "the bundle"
            : !statement ? "--statement"
                         : "--key",
            usage_line);
    return 2;
  }
  char digest[TH_HEX_MAX];
  int64_t size = 0;
  if (th_sha256_file(bundle, digest, &size) != TH_OK) {
    fprintf(stderr, "tunehub verify: cannot read the bundle %s\n", bundle);
    return 2;
  }
  char *env = NULL;
  size_t len = 0;
  if (th_read_file(statement, CLI_VERIFY_MAX_STATEMENT, &env, &len) != TH_OK) {
    fprintf(stderr, "tunehub verify: cannot read the statement %s\n", statement);
    return 2;
  }
  char err[TH_MSG_MAX * 2] = "", *stmt = NULL;
  tune_prov_failure f = tune_prov_verify(env, len, key, digest, &stmt, err, sizeof err);
  free(env);
  if (f != TUNE_PROV_OK) {
    fprintf(stderr, "tunehub verify: FAILED: %s\n", err);
    return 1;
  }
  printf("verified: the signature verifies with %s and the bundle %s is the statement's subject\n",
         key, bundle);
  cli__verify_summary(stmt);
  free(stmt);
  return 0;
}
