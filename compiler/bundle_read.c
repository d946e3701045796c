/* Reading a bundle back (bundle_read.h): libarchive walks the tar without extracting anything, the six known
 * files are held in memory, and nothing in them is trusted until each matches the manifest's size and
 * sha256. Unknown entries are skipped, never written anywhere. */
#include "bundle_read.h"

#include <archive.h>
#include <archive_entry.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "th_sha256.h"

static const char *const tc__bundle_names[TC_BUNDLE_NFILES] = {
    "manifest.json", "model.so", "tunehub_model.h", "params.bin", "graph.json", "example.c"};

static void tc__read_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void tc__read_err(char *err, size_t errlen, const char *fmt, ...) {
  if (!err || !errlen) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

/* Reads every known entry of the tar into f. */
static th_status tc__read_tar(const char *tar_path, tc_bundle_files *f, char *err, size_t errlen) {
  struct archive *a = archive_read_new();
  if (!a) return TH_ERR_NOMEM;
  th_status rc = TH_OK;
  archive_read_support_format_tar(a);
  /* no entry can hold more bytes than the whole tar: the bound on what a header may make us allocate */
  struct stat sb;
  if (stat(tar_path, &sb) != 0 || archive_read_open_filename(a, tar_path, 1 << 16) != ARCHIVE_OK) {
    tc__read_err(err, errlen, "cannot open bundle %s: %s", tar_path, archive_error_string(a));
    rc = TH_ERR_IO;
  }
  int nentries = 0;
  while (rc == TH_OK) {
    struct archive_entry *e;
    int r = archive_read_next_header(a, &e);
    if (r == ARCHIVE_EOF) break;
    if (r != ARCHIVE_OK) {
      tc__read_err(err, errlen, "bundle %s is corrupt or truncated: %s", tar_path, archive_error_string(a));
      rc = TH_ERR_CORRUPT;
      break;
    }
    nentries++;
    const char *name = archive_entry_pathname(e);
    int idx = -1;
    for (int i = 0; i < TC_BUNDLE_NFILES && name; i++)
      if (strcmp(name, tc__bundle_names[i]) == 0) idx = i;
    if (idx < 0) continue; /* unknown entries are ignored, never extracted */
    la_int64_t sz = archive_entry_size(e);
    if (archive_entry_filetype(e) != AE_IFREG || sz < 0 || sz > ((la_int64_t)1 << 32) || f->data[idx]) {
      tc__read_err(err, errlen, "bundle %s: bad entry %s", tar_path, name);
      rc = TH_ERR_CORRUPT;
      break;
    }
    if (sz > (la_int64_t)sb.st_size) {
      tc__read_err(err, errlen,
                   "bundle %s is corrupt or truncated: %s claims %lld bytes, more than the whole file (%lld)",
                   tar_path, name, (long long)sz, (long long)sb.st_size);
      rc = TH_ERR_CORRUPT;
      break;
    }
    f->data[idx] = malloc((size_t)sz + 1);
    if (!f->data[idx]) {
      rc = TH_ERR_NOMEM;
      break;
    }
    size_t got = 0;
    while (got < (size_t)sz) {
      la_ssize_t k = archive_read_data(a, f->data[idx] + got, (size_t)sz - got);
      if (k <= 0) break;
      got += (size_t)k;
    }
    if (got != (size_t)sz) {
      tc__read_err(err, errlen, "bundle %s is truncated: %s has %zu of %lld bytes (%s)", tar_path, name, got,
                   (long long)sz, archive_error_string(a) ? archive_error_string(a) : "short read");
      rc = TH_ERR_CORRUPT;
      break;
    }
    f->data[idx][got] = '\0';
    f->len[idx] = got;
  }
  archive_read_free(a);
  if (rc == TH_OK && !f->data[TC_BUNDLE_MANIFEST]) {
    tc__read_err(err, errlen, "bundle %s has no manifest.json (%s)", tar_path,
                 nentries ? "not a tunehub bundle" : "empty or not a tar file");
    rc = TH_ERR_CORRUPT;
  }
  return rc;
}

/* Checks every file but the manifest against the manifest's "files" entry; the compact manifest into f. */
static th_status tc__check_files(const char *tar_path, tc_bundle_files *f, char *err, size_t errlen) {
  json_error_t je;
  json_t *m = json_loadb(f->data[TC_BUNDLE_MANIFEST], f->len[TC_BUNDLE_MANIFEST], 0, &je);
  if (!m || !json_is_object(json_object_get(m, "files"))) {
    tc__read_err(err, errlen, "bundle %s: manifest.json is not valid (%s)", tar_path, m ? "no files" : je.text);
    json_decref(m);
    return TH_ERR_CORRUPT;
  }
  th_status rc = TH_OK;
  for (int i = 1; rc == TH_OK && i < TC_BUNDLE_NFILES; i++) {
    json_t *e = json_object_get(json_object_get(m, "files"), tc__bundle_names[i]);
    const char *want = json_string_value(json_object_get(e, "sha256"));
    json_int_t size = json_integer_value(json_object_get(e, "size"));
    if (!f->data[i] || !want) {
      tc__read_err(err, errlen, "bundle %s: %s is missing", tar_path, tc__bundle_names[i]);
      rc = TH_ERR_CORRUPT;
      break;
    }
    th_sha256 s;
    unsigned char d[32];
    char hex[65];
    th_sha256_init(&s);
    th_sha256_update(&s, f->data[i], f->len[i]);
    th_sha256_final(&s, d);
    th_hex(d, 32, hex);
    if ((json_int_t)f->len[i] != size || strcmp(hex, want) != 0) {
      tc__read_err(err, errlen, "bundle %s: %s does not match the manifest's sha256 (corrupt)", tar_path,
                   tc__bundle_names[i]);
      rc = TH_ERR_CORRUPT;
    }
  }
  if (rc == TH_OK && !(f->manifest = json_dumps(m, JSON_COMPACT))) rc = TH_ERR_NOMEM;
  json_decref(m);
  return rc;
}

th_status tc_bundle_read(const char *tar_path, tc_bundle_files *out, char *err, size_t errlen) {
  if (err && errlen) err[0] = '\0';
  if (!tar_path || !out) return TH_ERR_INVALID;
  tc_bundle_files f;
  memset(&f, 0, sizeof f);
  th_status rc = tc__read_tar(tar_path, &f, err, errlen);
  if (rc == TH_OK) rc = tc__check_files(tar_path, &f, err, errlen);
  if (rc != TH_OK) {
    tc_bundle_files_free(&f);
    return rc;
  }
  *out = f;
  return TH_OK;
}

void tc_bundle_files_free(tc_bundle_files *f) {
  if (!f) return;
  for (int i = 0; i < TC_BUNDLE_NFILES; i++) free(f->data[i]);
  free(f->manifest);
  memset(f, 0, sizeof *f);
}
