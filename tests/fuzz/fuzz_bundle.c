/* libFuzzer target of the bundle reader of `tunehub run` (tc_bundle_read, compiler/bundle_read.c):
 * the input is written to a temp file, as the reader takes a path, and read as a bundle .tar with
 * libarchive, its manifest.json parsed and every file checked against it. Nothing is extracted or
 * dlopened: tc_bundle_infer does that only with what this reader accepted. An accepted bundle's
 * files are read back in full.
 *
 * Every input is read twice: as it is, and with the checksum of each 512-byte block that carries
 * the ustar magic repaired, because libarchive (not instrumented) drops a header whose checksum is
 * wrong, and nearly every mutation of a header field would stop there. Built by
 * tests/fuzz/fuzz.cmake with clang-16. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bundle_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char fz_path[64];

static void fz_unlink(void) {
  if (fz_path[0]) unlink(fz_path);
}

static void fz_read(const uint8_t *data, size_t size) {
  if (!fz_path[0]) {
    /* tmpfs when there is one: a file is written per input */
    snprintf(fz_path, sizeof fz_path, "%s/fuzz_bundle.XXXXXX",
             access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    int fd = mkstemp(fz_path);
    if (fd < 0) abort(); /* the harness cannot run at all */
    close(fd);
    atexit(fz_unlink);
  }
  FILE *f = fopen(fz_path, "wb");
  if (!f) abort();
  if (size && fwrite(data, 1, size, f) != size) abort();
  if (fclose(f) != 0) abort();
  tc_bundle_files b;
  char err[1024];
  err[0] = '\0';
  th_status rc = tc_bundle_read(fz_path, &b, err, sizeof err);
  if (rc != TH_OK) {
    if (!err[0] && rc != TH_ERR_NOMEM) __builtin_trap(); /* every failure says why */
    return;
  }
  volatile char sink = 0;
  for (int i = 0; i < TC_BUNDLE_NFILES; i++) {
    if (!b.data[i] || b.data[i][b.len[i]] != '\0') __builtin_trap();
    if (b.len[i]) sink ^= b.data[i][0] ^ b.data[i][b.len[i] - 1];
  }
  if (!b.manifest) __builtin_trap();
  (void)sink;
  tc_bundle_files_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_read(data, size);
  uint8_t *p = malloc(size ? size : 1);
  if (!p) return 0;
  memcpy(p, data, size);
  int fixed = 0;
  for (size_t off = 0; off + 512 <= size; off += 512) {
    uint8_t *h = p + off;
    if (memcmp(h + 257, "ustar", 5) != 0) continue;
    char was[8];
    memcpy(was, h + 148, 8);
    memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (int i = 0; i < 512; i++) sum += h[i];
    char field[9];
    snprintf(field, sizeof field, "%06o", sum & 0777777);
    memcpy(h + 148, field, 7); /* six octal digits, NUL, and the space that stays */
    fixed |= memcmp(was, h + 148, 8) != 0;
  }
  if (fixed) fz_read(p, size);
  free(p);
  return 0;
}
