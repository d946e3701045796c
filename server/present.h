/* present: every JSON document the HTTP API sends, built from the plain structs that store/ and tuner/ return.
 * The store and the tuner never see JSON or URLs; a second store backend implements their struct APIs and these
 * documents come out the same. Each function returns a new jansson value (owned by the caller: json_decref) or
 * NULL when out of memory, except where it says otherwise. Pure: no I/O, no locks; thread-safe. */
#ifndef SRV_PRESENT_H
#define SRV_PRESENT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* The URL of job id ("/jobs/17") into out. */
void srv_job_url(int64_t id, char *out, size_t n);

/* A job: {"id","framework",...,"progress","error","created_at",...,"elapsed_s","url"}. The stored options and
 * progress documents are embedded as objects ({} when unreadable). */
json_t *srv_present_job(const store_job *j);
/* {"count","jobs":[job...]}. */
json_t *srv_present_jobs(const store_job *jobs, size_t n);
/* {"count","models":[...]}: per key its newest version, or its live or failed job. */
json_t *srv_present_catalog(const store_catalog_row *rows, size_t n);
/* {"framework","network","batch","target","count","versions":[{version,tuned,digest,...}]} of key. */
json_t *srv_present_versions(const store_key *key, const store_model *versions, size_t n);

#endif
