/* The store's blob engines: where an artifact's bytes live beside its row in `artifacts`. Every
 * process keeps the bytes it has put or read under data_dir/artifacts/<ab>/<sha256>
 * (store_artifact.c places them durably and content-addressed). In the embedded store those files
 * are the bytes themselves ("files": nothing else to keep). A shared store keeps them in the
 * database too ("pglo": a PostgreSQL large object per artifact, its oid on the row), so that the
 * local files are a read-through cache that any process can refill: a miss is fetched, checked
 * against its digest and only then renamed into place. Another engine (an S3 bucket, say) fills in
 * the same three calls. */
#ifndef STORE_BLOB_H
#define STORE_BLOB_H

#include <stdint.h>

#include "db.h"

typedef struct store_blob_ops {
  const char *name; /* "files", "pglo" */
  /* Inside the transaction that inserts the artifact's row on db: keeps the bytes of the local file
   * at path and writes the reference the row records (the `lo_oid` column). NULL: the local file is
   * all there is. */
  th_status (*put)(db_t *db, const char *path, int64_t *ref);
  /* Writes the bytes of ref to fd (a new temp file the caller verifies against the digest before
   * using it). NULL: no copy exists apart from the local file. */
  th_status (*get)(db_t *db, int64_t ref, int fd);
  /* Inside the transaction that deletes the artifact's row (or that lost the race to insert it):
   * drops ref. NULL: nothing to drop (the caller removes its local file after the commit). */
  th_status (*drop)(db_t *db, int64_t ref);
} store_blob_ops;

/* The engine a store on this database engine uses: files for SQLite, pglo for PostgreSQL. Never
 * NULL. */
const store_blob_ops *store_blob_engine(db_engine e);

#endif
