/* A model key (store_key) in SQL: binding its columns as statement parameters and reading them back
 * from a row, the same order everywhere, and its precision's default. Used by the files that speak
 * of models by key (models, jobs, aliases, workers); kept apart so that none of them depends on
 * another for it. */
#include "store_int.h"

/* Version numbers count over the key's names alone, so that they keep growing when an uploaded network gets a
 * new revision; every look-up matches the revision too (store__bind_key, store_int.h). */
const char *store_key_precision(const store_key *k) {
  return k->precision[0] ? k->precision : "fp32";
}

void store__bind_key(db_stmt *s, int first, const store_key *k, int with_digest) {
  db_bind_text(s, first, k->framework);
  db_bind_text(s, first + 1, k->network);
  db_bind_int(s, first + 2, k->batch);
  db_bind_text(s, first + 3, k->target);
  db_bind_text(s, first + 4, k->compiler_version);
  db_bind_text(s, first + 5, store_key_precision(k));
  if (with_digest) db_bind_text(s, first + 6, k->net_digest);
}

void store__col_key(db_stmt *s, int first, store_key *k) {
  store__col_copy(s, first, k->framework, sizeof k->framework);
  store__col_copy(s, first + 1, k->network, sizeof k->network);
  k->batch = db_col_int(s, first + 2);
  store__col_copy(s, first + 3, k->target, sizeof k->target);
  store__col_copy(s, first + 4, k->compiler_version, sizeof k->compiler_version);
  store__col_copy(s, first + 5, k->precision, sizeof k->precision);
}
