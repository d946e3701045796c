/* Opening the store under test: the embedded SQLite store in a case's data directory, or, when the
 * case runs as a `cluster` twin (tests/cluster/pg_case.sh), the fresh PostgreSQL database named by
 * TH_TEST_DB, with the data directory as the local cache. Cases that test what only one engine has
 * skip on the other with a reason. */
#ifndef TH_TEST_STORE_H
#define TH_TEST_STORE_H

#include <stdio.h>
#include <stdlib.h>

#include "store.h"
#include "th_test.h"

/* The PostgreSQL URL of this case's database, or NULL for the embedded store. */
static inline const char *th_test_db(void) {
  const char *db = getenv("TH_TEST_DB");
  return db && db[0] ? db : NULL;
}

/* store_open on the case's engine. */
static inline th_status th_test_store_open(const char *data_dir, store_t **out) {
  return store_open_db(th_test_db(), data_dir, out);
}

/* Skips the case (exit status 77) on PostgreSQL, printing why: it tests SQLite's own machinery. */
#define TH_SQLITE_ONLY(why)                             \
  do {                                                  \
    if (th_test_db()) {                                 \
      fprintf(stderr, "SKIP on PostgreSQL: %s\n", why); \
      return TH_SKIP;                                   \
    }                                                   \
  } while (0)

/* Skips the case on the embedded store, printing why: it tests what only a shared database has. */
#define TH_POSTGRES_ONLY(why)                       \
  do {                                              \
    if (!th_test_db()) {                            \
      fprintf(stderr, "SKIP on SQLite: %s\n", why); \
      return TH_SKIP;                               \
    }                                               \
  } while (0)

#endif
