/* The blob engines (blob.h): "files", the embedded store's, whose local files are the bytes;
 * "pglo", a shared store's, whose bytes are PostgreSQL large objects reached through db.h. */
#include "blob.h"

static const store_blob_ops store__blob_files = {"files", NULL, NULL, NULL};

static const store_blob_ops store__blob_pglo = {"pglo", db_lo_import, db_lo_export, db_lo_unlink};

const store_blob_ops *store_blob_engine(db_engine e) {
  return e == DB_POSTGRES ? &store__blob_pglo : &store__blob_files;
}
