/* The db layer's error recorder, kept on the connection (its message and its class: busy, conflict,
 * unavailable, ...). In a file of its own because both halves use it: db.c and the two engines it
 * dispatches to (db_sqlite.c, db_pg.c), which thus depend on it and not on each other. */
#include <stdarg.h>
#include <stdio.h>

#include "db_int.h"

th_status db__fail(db_t *db, th_status cls, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(db->err, sizeof db->err, fmt, ap);
  va_end(ap);
  db->errclass = cls;
  return cls;
}
