/* `tunehub migrate --from DIR --to postgresql://...`: copies an embedded store (SQLite and its artifact files)
 * into a new PostgreSQL database and verifies it: every table by a digest of its rows, every blob by reading it
 * back from the database through a fresh, empty cache and hashing it. The source daemon must be stopped: the
 * copy takes the source's daemon lock, so a running daemon is refused instead of copied half-way. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "cli.h"
#include "store.h"
#include "th_sha256.h"
#include "th_util.h"

static void migrate__progress(void *ctx, const char *what, int64_t done, int64_t total) {
  (void)ctx;
  if (strcmp(what, "blobs") != 0 || done == total || isatty(2))
    fprintf(stderr, "%s  %-15s %" PRId64 "/%" PRId64 "%s", isatty(2) ? "\r" : "", what, done, total,
            done == total || !isatty(2) ? "\n" : "   ");
}

/* Reads every blob of `from` back from the database `to` through a store opened on an empty directory, so
 * nothing comes from a cache, and hashes it. */
static int migrate__verify_blobs(store_t *from, const char *to_url, const char *scratch, int64_t *n) {
  store_t *fresh = NULL;
  if (store_open_db(to_url, scratch, &fresh) != TH_OK) {
    fprintf(stderr, "tunehub migrate: cannot reopen %s: %s\n", to_url, store_errmsg(NULL));
    return 1;
  }
  char *digests = NULL;
  size_t count = 0;
  if (store_artifact_digests(from, &digests, &count) != TH_OK) {
    fprintf(stderr, "tunehub migrate: list the source's blobs: %s\n", store_errmsg(from));
    store_close(fresh);
    return 1;
  }
  int bad = 0;
  *n = 0;
  for (size_t i = 0; i < count; i++) {
    const char *digest = digests + i * 65;
    char path[TH_PATH_MAX], media[128], got[TH_HEX_MAX];
    int64_t size = 0, got_size = 0;
    th_status rc = store_artifact_path(fresh, digest, path, sizeof path, &size, media, sizeof media);
    if (rc == TH_OK) rc = th_sha256_file(path, got, &got_size);
    if (rc != TH_OK || strcmp(got, digest) != 0 || got_size != size) {
      fprintf(stderr, "tunehub migrate: blob %s did not come back intact from %s: %s\n", digest, to_url,
              rc != TH_OK ? (*store_errmsg(fresh) ? store_errmsg(fresh) : th_status_str(rc))
                          : "its bytes hash to another digest");
      bad = 1;
      break;
    }
    (*n)++;
  }
  free(digests);
  store_close(fresh);
  return bad;
}

static const char cli__migrate_usage[] =
    "usage: tunehub migrate --from DIR --to postgresql://user@host:port/dbname\n"
    "  copies the embedded store in DIR (tunehub.db and its artifacts) into a new, empty "
    "PostgreSQL database";

int cli_migrate(int argc, char **argv) {
  if (cli_help(argc, argv, cli__migrate_usage)) return 0;
  const char *from_dir = NULL, *to = NULL;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--from") && i + 1 < argc)
      from_dir = argv[++i];
    else if (!strcmp(argv[i], "--to") && i + 1 < argc)
      to = argv[++i];
    else {
      fprintf(stderr, "tunehub migrate: unknown argument '%s'; valid: --from DIR --to postgresql://...\n",
              argv[i]);
      return 2;
    }
  }
  if (!from_dir || !to) {
    fprintf(stderr, "%s\n", cli__migrate_usage);
    return 2;
  }
  if (!store_exists(from_dir)) {
    fprintf(stderr, "tunehub migrate: %s holds no tunehub store (no %s/tunehub.db)\n", from_dir, from_dir);
    return 1;
  }
  char lock_path[TH_SUBDIR_MAX];
  snprintf(lock_path, sizeof lock_path, "%s/daemon.lock", from_dir);
  int lock = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0 || flock(lock, LOCK_EX | LOCK_NB) != 0) {
    fprintf(stderr, "tunehub migrate: a tunehub daemon is serving %s; stop it first (lock %s)\n", from_dir,
            lock_path);
    if (lock >= 0) close(lock);
    return 1;
  }
  char scratch[] = "/tmp/tunehub-migrate-XXXXXX";
  if (!mkdtemp(scratch)) {
    perror("tunehub migrate: mkdtemp");
    close(lock);
    return 1;
  }
  char verify_dir[sizeof scratch + 16];
  snprintf(verify_dir, sizeof verify_dir, "%s/verify", scratch);
  store_t *src = NULL, *dst = NULL;
  int code = 1;
  if (store_open(from_dir, &src) != TH_OK) {
    fprintf(stderr, "tunehub migrate: cannot open %s: %s\n", from_dir, store_errmsg(NULL));
    goto out;
  }
  if (store_open_db(to, scratch, &dst) != TH_OK) {
    fprintf(stderr, "tunehub migrate: cannot open %s: %s\n", to, store_errmsg(NULL));
    goto out;
  }
  if (!store_shared(dst)) {
    fprintf(stderr, "tunehub migrate: --to must be a PostgreSQL URL (postgresql://...)\n");
    goto out;
  }
  fprintf(stderr, "tunehub migrate: %s -> %s\n", from_dir, store_db_display(dst));
  store_copy_report rep;
  if (store_copy(src, dst, migrate__progress, NULL, &rep) != TH_OK) {
    fprintf(stderr, "tunehub migrate: %s\n", store_errmsg(src));
    goto out;
  }
  store_copy_report check;
  if (store_copy_verify(src, dst, &check) != TH_OK) {
    fprintf(stderr, "tunehub migrate: verification failed: %s\n", store_errmsg(src));
    goto out;
  }
  int64_t blobs = 0;
  if (migrate__verify_blobs(src, to, verify_dir, &blobs) != 0) goto out;
  printf("migrated %s to %s, verified:\n", from_dir, store_db_display(dst));
  for (int t = 0; store_copy_table_name(t); t++)
    printf("  %-19s %" PRId64 " rows\n", store_copy_table_name(t), check.rows[t]);
  printf("  blobs           %" PRId64 " (%" PRId64 " bytes), each read back from the database and hashed\n", blobs,
         rep.blob_bytes);
  code = 0;
out:
  store_close(dst);
  store_close(src);
  th_rm_rf(scratch);
  close(lock);
  return code;
}
