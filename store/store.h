/* store: tunehub's persistent state behind one small interface. The metadata (networks, models,
 * jobs, workloads, tuning records, artifacts) lives in data_dir/tunehub.db (SQLite in WAL mode, the
 * embedded default) or in a PostgreSQL database that several daemons and workers share
 * (store_open_db). Both engines run the same SQL (db.h). The artifact bytes are content-addressed
 * files under data_dir/artifacts/ab/<sha256>: the bytes themselves in the embedded store; in a
 * shared store a verified read-through cache of the large objects that hold them in the database
 * (blob.h), so that each process has a data directory of its own.
 *
 * Thread safety: a store_t may be shared by threads; calls are serialised internally.
 * store_errmsg() returns the message of the calling thread's last failed call on this handle. */
#ifndef STORE_H
#define STORE_H

#include <stddef.h>
#include <stdint.h>

#include "th_limits.h"
#include "th_status.h"

typedef struct store store_t;

/* Opens (creating as needed) data_dir/tunehub.db and data_dir/artifacts, applies migrations. */
th_status store_open(const char *data_dir, store_t **out);
/* Opens the store on db_spec, a PostgreSQL URL (postgresql://user@host:port/dbname; libpq's URI syntax), with
 * data_dir for local files; db_spec NULL is store_open(data_dir). Migrations run in one transaction that holds
 * the database's write lock, so processes starting together apply each once. TH_ERR_INVALID for a spec that is
 * not a PostgreSQL URL, TH_ERR_UNAVAILABLE when the server cannot be reached. */
th_status store_open_db(const char *db_spec, const char *data_dir, store_t **out);
/* 1 when the store is shared with other processes and machines (PostgreSQL), 0 for the embedded SQLite file. */
int store_shared(const store_t *st);
/* How long the process's SQLite statements wait for another process's write lock: ms, or the default 15 s when
 * ms < 0. Past it the call fails with TH_ERR_UNAVAILABLE (a retry will succeed: the server answers 503 with
 * Retry-After, the scheduler requeues the job, which resumes from its records). The daemon sets a short wait:
 * every thread shares the store's one connection, so a statement that waits holds up all the others,
 * requests for published models included. Process-wide; call before the store's threads start; no effect on
 * PostgreSQL. */
void store_wait_limit(int ms);
/* The database's name for messages: the SQLite file, or the URL with its password hidden. */
const char *store_db_display(const store_t *st);
/* 1 when data_dir already holds a readable store (tools that only read one, and must not create one). */
int store_exists(const char *data_dir);

/* ---- naming the store on the command line: --db URL, or TUNEHUB_DB ---- */
/* The database a command names: flag (its --db value) when not NULL, else the environment variable
 * TUNEHUB_DB when it is set and not empty, else NULL, which is the embedded SQLite store in the
 * data directory. A value that is not a PostgreSQL URL is TH_ERR_INVALID with a message in err (n
 * bytes) that says where it came from and the form expected. *spec (borrowed from flag or the
 * environment) is written on TH_OK only. */
th_status store_db_resolve(const char *flag, const char **spec, char *err, size_t n);
/* 1 when spec names a PostgreSQL database (postgresql:// or postgres://), not a data directory. */
int store_is_db_url(const char *spec);
/* The store's name for messages before it is opened: the URL with its password hidden, or data_dir.
 */
void store_describe(const char *db_spec, const char *data_dir, char *out, size_t n);
/* Whether there is a store to read, without creating one: data_dir/tunehub.db when db_spec is NULL,
 * else a PostgreSQL database that tunehub's migrations have set up. TH_OK with *exists 0 or 1;
 * TH_ERR_UNAVAILABLE when the server cannot be reached, TH_ERR_DB when it cannot be asked
 * (store_errmsg(NULL) says why). */
th_status store_exists_db(const char *db_spec, const char *data_dir, int *exists);
/* Closes the handle; accepts NULL. */
void store_close(store_t *st);
/* The last error message on this handle for the calling thread; never NULL. store_errmsg(NULL) gives the
 * message of the calling thread's last failed store_open. */
const char *store_errmsg(store_t *st);
/* The data directory the store was opened on (borrowed). */
const char *store_data_dir(store_t *st);

/* ---- free space on the data directory ---- */
/* Sets the floor of free bytes (0, the default: none) that a new artifact file must leave on the
 * data directory's file system: store_artifact_put refuses one that would go below it, before a
 * byte is copied. Call before the store's threads start. */
void store_set_min_free(store_t *st, int64_t bytes);
int64_t store_min_free(const store_t *st);
/* The bytes an unprivileged writer may still use on the data directory's file system (statvfs
 * f_bavail). TH_OK, or TH_ERR_IO when statvfs fails (message on the handle). */
th_status store_free_space(store_t *st, int64_t *free_bytes);
/* TH_OK when `need` more bytes leave at least the floor free, else TH_ERR_NO_SPACE with a message
 * (on the handle) naming the free space, the floor and what (e.g. "the upload"). TH_ERR_IO when the
 * free space cannot be read. */
th_status store_space_check(store_t *st, int64_t need, const char *what);

/* The name under which the process that holds data_dir claims jobs: "<hostname>:<absolute data
 * directory>". It stays the same across restarts, so that a daemon's start-up (store_recover) can
 * tell, in a shared store, the jobs its dead predecessor on this data directory left running from
 * the jobs of live workers elsewhere. Borrowed; valid until store_close. */
const char *store_owner(const store_t *st);
/* Daemon start-up recovery: requeues jobs left 'running' by a dead process and removes artifact
 * files and temp files that no row references (a crash between rename and insert). In a shared
 * store the jobs are those claimed under store_owner (the rest belong to live workers elsewhere)
 * and only files untouched for an hour go (a command on the same data directory may be placing
 * one). Writes the counts when non-NULL, on success only. A file is removed only when the database
 * answers that no row has its digest: any database error stops the sweep and is returned
 * (TH_ERR_BUSY, TH_ERR_DB), with every remaining artifact left in place. Only the process that owns
 * the data directory (the daemon) may call this. */
th_status store_recover(store_t *st, int *requeued, int *swept);

/* ---- model keys ---- */
typedef struct store_key {
  char framework[16];
  char network[64];
  int batch;
  char target[TH_TARGET_MAX];
  char compiler_version[32];
  char precision[8];   /* cuda's arithmetic: "fp32" (IEEE fp32 with FMA) or "tf32" (tensor cores, fp32
                          accumulation); llvm keys are always "fp32". "" reads as "fp32". A name column of
                          the key like target: each precision has its own versions, jobs and aliases. */
  char net_digest[TH_HEX_MAX]; /* the network's revision (store_network.digest): "" for a zoo network */
} store_key;

/* The key's precision as stored: k->precision, or "fp32" when it is "". */
const char *store_key_precision(const store_key *k);

/* ---- artifacts ---- */
/* Copies the file at src into the content-addressed store (temp file, fsync, rename, then the row;
 * in a shared store the row's transaction also writes the bytes to the database) and returns its
 * digest (hex) and size. Storing the same bytes twice is a no-op, in one process or in several at
 * once. src is left in place. */
th_status store_artifact_put(store_t *st, const char *src, const char *media_type, char digest[TH_HEX_MAX],
                             int64_t *size);
/* Creates an empty file in the store's scratch directory (data_dir/tmp, emptied at start-up by store_recover) for
 * a caller that streams bytes into the store (the server's uploads): *fd is open for writing (the caller closes
 * it) and path (n >= TH_PATH_MAX bytes) gets its name. The caller unlinks the file, or hands it to store_network_put
 * with take set. */
th_status store_tmp_file(store_t *st, const char *prefix, char *path, size_t n, int *fd);
/* Path of the artifact file for a digest (hex) in this data directory; TH_ERR_NOT_FOUND when
 * unknown. In a shared store a file missing from the local cache is fetched first: written to
 * data_dir/tmp, checked against the digest and size, then renamed into place; bytes that do not
 * match are TH_ERR_CORRUPT and never land in the cache. TH_ERR_UNAVAILABLE when the database cannot
 * be reached. Safe from any thread; the fetch holds no lock that other store calls wait on. */
th_status store_artifact_path(store_t *st, const char *digest, char *path, size_t n, int64_t *size,
                              char *media_type, size_t media_n);

/* ---- models ---- */
typedef struct store_model {
  int64_t id;
  store_key key;
  int version;
  int tuned;
  char tar_digest[TH_HEX_MAX];
  char so_digest[TH_HEX_MAX];
  int64_t tar_size, so_size;
  char *manifest; /* owned; free with store_model_clear */
  double latency_ms; /* < 0 when unmeasured */
  int64_t job_id;
  double created_at;
} store_model;

void store_model_clear(store_model *m);
/* Publishes a new version of key (version = previous max + 1) and writes it to *version. attempt is the fencing
 * token of the job claim it is published under (store_job_claim): with attempt > 0 the publish happens only when
 * job job_id is still running under that attempt, checked in the publish's own transaction, and is otherwise
 * refused with TH_ERR_CONFLICT (the message names the job, the stale attempt and the current one); attempt 0 is
 * unfenced (the CLI, tests). */
th_status store_model_publish(store_t *st, const store_key *key, int tuned, const char *tar_digest,
                              const char *so_digest, const char *manifest, double latency_ms,
                              int64_t job_id, int attempt, int *version);
/* store_model_publish of a signed version: prov_digest (hex; NULL or "": unsigned) is the artifact
 * that holds the DSSE envelope of its provenance statement (tuner/provenance.h), put like the
 * bundle before the call, and kept live by the version as its bundle is. */
th_status store_model_publish_signed(store_t *st, const store_key *key, int tuned,
                                     const char *tar_digest, const char *so_digest,
                                     const char *prov_digest, const char *manifest,
                                     double latency_ms, int64_t job_id, int attempt, int *version);
/* The provenance artifact's digest (hex) of ready version `version` of key into digest.
 * TH_ERR_NOT_FOUND when there is no such ready version or it was published unsigned (the message on
 * the handle says which). */
th_status store_model_provenance(store_t *st, const store_key *key, int version,
                                 char digest[TH_HEX_MAX]);
/* The newest ready version of key (tuned_only: the newest tuned one); TH_ERR_NOT_FOUND when none. */
th_status store_model_get(store_t *st, const store_key *key, int tuned_only, store_model *out);
/* Marks every version of key deleted; TH_ERR_NOT_FOUND when none. */
th_status store_model_delete(store_t *st, const store_key *key, int *deleted);
/* Frees an array of models from store_model_versions (each cleared); accepts NULL. After the call the array is
 * no longer valid. */
void store_model_list_free(store_model *models, size_t n);
/* Every ready version of key, oldest first, into a new array (*out, *n; manifests left NULL): the caller owns it
 * and frees it with store_model_list_free. TH_ERR_NOT_FOUND when none; nothing is written on an error. */
th_status store_model_versions(store_t *st, const store_key *key, store_model **out, size_t *n);
/* The ready version `version` of key, manifest loaded (clear it with store_model_clear); TH_ERR_NOT_FOUND when
 * key has no such ready version. */
th_status store_model_version(store_t *st, const store_key *key, int version, store_model *out);
/* Retention: marks deleted every ready version of key except its newest keep ones and the ones an alias pins
 * (those stay whatever their age, and do not count against keep). Blobs stay. keep < 1 changes nothing.
 * *retired (may be NULL) gets how many versions went; TH_ERR_DB, TH_ERR_BUSY. */
th_status store_model_retain(store_t *st, const store_key *key, int keep, int *retired);

/* ---- aliases: mutable names that pin one version of a key ---- */
/* A name is unique per repository: key's framework, network, target and compiler version (the OCI tag
 * <framework>/<network>:<name> names one image), so one name pins one batch. The server checks the naming rule.
 * An alias survives what unpublishes its version (DELETE of the key, a network's new revision): it then reads
 * as retired until it is moved or deleted. Retention never unpublishes a pinned version. */
typedef struct store_alias {
  store_key key;         /* the key it belongs to; net_digest is the revision of the pinned version */
  char name[65];
  int version;
  char tar_digest[TH_HEX_MAX];   /* the pinned version's bundle and .so */
  char so_digest[TH_HEX_MAX];
  int retired;           /* 1: the version is no longer served (unpublished, or of a replaced network revision) */
  double updated_at;
} store_alias;

/* Pins name to a ready version of key: the one numbered version (> 0), or with version 0 the newest whose
 * bundle (.tar) or .so has the sha256 digest (hex). Creates the alias or moves it; *out (may be NULL) gets it as
 * stored, *previous (may be NULL) the version it pinned before (0 when new). TH_ERR_NOT_FOUND when key has no
 * such ready version, TH_ERR_CONFLICT when the name pins another batch of the repository (message on the handle);
 * out-params are written on TH_OK only. */
th_status store_alias_set(store_t *st, const store_key *key, const char *name, int version, const char *digest,
                          store_alias *out, int *previous);
/* The alias name of key into *out; key->batch 0 looks in every batch of key's repository. retired is judged
 * against key->net_digest (the current revision). TH_ERR_NOT_FOUND when none. */
th_status store_alias_get(store_t *st, const store_key *key, const char *name, store_alias *out);
/* Removes the alias name of key; *version (may be NULL) gets the version it pinned. TH_ERR_NOT_FOUND when none. */
th_status store_alias_delete(store_t *st, const store_key *key, const char *name, int *version);
/* Every alias of key by name (key->batch 0: of every batch of the repository, by batch then name) into a new
 * array (*out, *n; NULL and 0 when none) that the caller frees with free(). Nothing is written on an error. */
th_status store_alias_list(store_t *st, const store_key *key, store_alias **out, size_t *n);
/* For a garbage collector: *pinned = 1 when some alias pins a version whose bundle or .so is the artifact with
 * sha256 digest (hex), retired versions included; such a blob must stay. TH_ERR_DB, TH_ERR_BUSY. */
th_status store_artifact_pinned(store_t *st, const char *digest, int *pinned);

/* ---- jobs ---- */
typedef enum store_job_state {
  STORE_JOB_QUEUED = 0,
  STORE_JOB_RUNNING,
  STORE_JOB_SUCCEEDED,
  STORE_JOB_FAILED,
  STORE_JOB_CANCELLED
} store_job_state;

const char *store_job_state_str(store_job_state s);
/* The state named s (store_job_state_str's names); STORE_JOB_FAILED for an unknown name. */
store_job_state store_job_state_parse(const char *s);

typedef struct store_job {
  int64_t id;
  store_key key;
  char kind[16]; /* "build" or "tune" */
  char *options; /* owned: the options text the job was queued with (JSON, validated by server/) */
  int priority;
  store_job_state state;
  char stage[160];
  char *progress; /* owned: the progress document server/ wrote (JSON text, opaque to the store) */
  char *error;    /* owned, NULL when none */
  int cancel_requested;
  int attempts; /* claims so far; the running claim's fencing token */
  double created_at, started_at, finished_at; /* 0 when unset */
  char worker[128];       /* the worker that runs it (running), else "" */
  char needs_target[TH_TARGET_MAX]; /* "" any worker may claim it; else only one that registered this target */
  double lease_until;     /* the running claim's lease ends (the database's clock); 0 when not leased */
} store_job;

void store_job_clear(store_job *j);

/* Queues a job for key unless one is already queued or running (single-flight). Writes the live job's id and
 * *created = 1 when this call created it. A "tune" request meeting a live build job (which would publish its
 * quick build and end without tuning) makes it a tune job while it is queued, and gets TH_ERR_CONFLICT ("job N
 * is building this model ...") while it runs. No limit on the queue: store_job_enqueue_limited with max_queued 0. */
th_status store_job_enqueue(store_t *st, const store_key *key, const char *kind, const char *options,
                            int priority, int64_t *job_id, int *created);
/* store_job_enqueue with a bound on the queue (the daemon's --max-queued): when key has no live job and
 * max_queued > 0 jobs or more are queued, nothing is queued and it returns TH_ERR_BUSY ("N jobs are queued (the
 * limit is M)" on the handle). A key that already has a live job gets that job (TH_OK, *created = 0) even when
 * the queue is full. The look-up, the count and the insert are one write transaction, so threads and processes
 * racing for the last place never queue more than max_queued; a count that fails is an error (TH_ERR_DB or
 * TH_ERR_BUSY for a locked database), never "under the limit". Out-params are written on TH_OK only. */
th_status store_job_enqueue_limited(store_t *st, const store_key *key, const char *kind, const char *options,
                                    int priority, int64_t max_queued, int64_t *job_id, int *created);
/* Number of queued jobs. */
th_status store_job_count_queued(store_t *st, int64_t *n);
/* Claims for worker the oldest highest-priority queued job it may take: one whose needs_target is "" or one of
 * the targets the worker registered (store_worker_register; an unregistered name takes only "" jobs). The row
 * is selected with SKIP LOCKED, so claimers on other machines never wait for each other, and becomes running
 * with worker, attempts + 1 (the claim's fencing token, in out->attempts) and, when lease_s > 0, lease_until =
 * the database's now + lease_s (lease_s 0: no lease, the job is never reaped; tools and tests).
 * TH_ERR_NOT_FOUND when there is none. */
th_status store_job_claim(store_t *st, const char *worker, double lease_s, store_job *out);
/* TH_OK when job id is running under attempt (the fencing check every fenced write makes in its transaction);
 * TH_ERR_CONFLICT when another claim holds it, it was requeued or it ended, with a message that names the job,
 * the stale attempt and the current one; TH_ERR_NOT_FOUND for no such job. attempt 0 is always TH_OK. */
th_status store_job_fence(store_t *st, int64_t id, int attempt);
/* Requeues every running job whose lease passed (lease_until < the database's now): state queued, worker
 * cleared, stage "requeued: the lease of worker W expired"; a job whose cancel was requested is cancelled
 * instead. Any daemon or worker may call it. *requeued (may be NULL) gets how many went back to the queue. */
th_status store_job_reap(store_t *st, int *requeued);
/* Hands running job id (fenced by attempt, as store_model_publish) back to the queue for a worker that has
 * target: state queued, worker and lease cleared, needs_target = target, stage "waiting_for_target", and the
 * progress document replaced when progress is not NULL. TH_ERR_CONFLICT when attempt no longer holds it. */
th_status store_job_handoff(store_t *st, int64_t id, int attempt, const char *target, const char *progress);
th_status store_job_get(store_t *st, int64_t id, store_job *out);
/* The newest job for key (any state); TH_ERR_NOT_FOUND when none. */
th_status store_job_latest(store_t *st, const store_key *key, store_job *out);
/* Puts job id back in the queue when it is running under worker (the claim's name): its runner lost
 * the database mid-stage, or must give it up; it is claimed again and resumes from its records.
 * TH_ERR_CONFLICT when the job is not running under worker (it ended, or another runner has it). */
th_status store_job_requeue(store_t *st, int64_t id, const char *worker);
/* Persists the stage and the progress document of a running job; a NULL leaves that column as it is. Fenced by
 * attempt as store_model_publish (TH_ERR_CONFLICT once attempt lost the job; 0: unfenced). */
th_status store_job_progress(store_t *st, int64_t id, int attempt, const char *stage, const char *progress);
/* Ends a job: state must be succeeded, failed or cancelled. error may be NULL. Fenced by attempt as
 * store_model_publish; TH_ERR_CONFLICT also when the job has already ended. */
th_status store_job_finish(store_t *st, int64_t id, int attempt, store_job_state state, const char *error);
/* Cancels: a queued job ends at once; a running job gets cancel_requested and its runner stops between stages.
 * TH_ERR_CONFLICT when the job has already ended. */
th_status store_job_cancel(store_t *st, int64_t id);
/* 1 when a cancel was requested for the job. */
int store_job_cancel_requested(store_t *st, int64_t id);
/* The jobs, running first, then queued, then the rest, newest first within each; at most limit (<= 0: 100); state
 * (a store_job_state_str name) may be NULL. Writes a new array (*out, *n) that the caller owns and frees with
 * store_job_list_free; nothing is written on an error. */
th_status store_job_list(store_t *st, const char *state, int limit, store_job **out, size_t *n);
/* Frees an array from store_job_list (each job cleared); accepts NULL. */
void store_job_list_free(store_job *jobs, size_t n);
/* Counts of jobs by state, indexed by store_job_state. Any database error while reading them, part-way
 * included, is returned (TH_ERR_DB, TH_ERR_BUSY) and counts is then left as it was. */
th_status store_job_counts(store_t *st, int64_t counts[5]);

/* ---- workers: the processes that claim jobs (tunehub worker; each daemon's scheduler) ---- */
/* Registers (or re-registers) worker name on host with its concrete targets ("llvm -mcpu=znver4", "cuda
 * -arch=sm_90"; ntargets of them), its job slots and its lease, heartbeat now. A worker of the same name that
 * held running jobs was an earlier process under that name (a restart with --name): those jobs are requeued
 * (*requeued, may be NULL, gets how many). Workers stopped or silent for a day are forgotten. */
th_status store_worker_register(store_t *st, const char *name, const char *host, const char *const *targets,
                                int ntargets, int slots, double lease_s, int *requeued);
/* The heartbeat: heartbeat_at = the database's now, and every running job the worker holds gets lease_until =
 * now + lease_s (*extended, may be NULL, gets how many). TH_ERR_NOT_FOUND when the worker is not registered. */
th_status store_worker_heartbeat(store_t *st, const char *name, double lease_s, int *extended);
/* A clean stop: the running jobs the worker still holds go back to the queue at once (stage "requeued: worker W
 * stopped"; *requeued may be NULL) and the worker is marked stopped. Call it only once the worker's own writes
 * have ended. */
th_status store_worker_stop(store_t *st, const char *name, int *requeued);

/* A job a worker runs, as the fleet view shows it. */
typedef struct store_worker_job {
  int64_t id;
  store_key key;
  char kind[16];
  int attempt;
  char stage[160];
  double lease_left_s; /* until its lease ends, by the database's clock (< 0: overdue) */
} store_worker_job;

typedef struct store_worker {
  char name[128];
  char host[128];
  char *targets; /* owned: the JSON array of its concrete targets */
  int slots;
  double lease_s;
  double started_at, heartbeat_at, stopped_at; /* stopped_at 0 while it runs */
  double heartbeat_age_s;                      /* seconds since its heartbeat, by the database's clock */
  int alive;                                   /* not stopped, and its heartbeat is within its lease */
  store_worker_job *jobs;                      /* owned: the running jobs it holds, by id */
  size_t njobs;
} store_worker;

/* Every registered worker, alive ones first, then by name, with the jobs each runs, into a new array that the
 * caller frees with store_worker_list_free; nothing is written on an error. */
th_status store_worker_list(store_t *st, store_worker **out, size_t *n);
void store_worker_list_free(store_worker *workers, size_t n);
/* *n = live workers (see store_worker.alive) that registered target. */
th_status store_worker_live(store_t *st, const char *target, int *n);

/* Per concrete target: queued jobs of keys with that target, how many of them wait for a worker with it
 * (needs_target), and the live workers that registered it; targets with none of the three are left out. */
typedef struct store_target_stat {
  char target[TH_TARGET_MAX];
  int64_t queued, waiting;
  int64_t workers_alive;
} store_target_stat;

/* The per-target counts into a new array (*out, *n; the caller frees it with free()), ordered by target;
 * nothing is written on an error. */
th_status store_target_stats(store_t *st, store_target_stat **out, size_t *n);

/* ---- the catalog: one row per key ---- */
typedef enum store_catalog_state {
  STORE_CATALOG_READY = 0, /* a version is published */
  STORE_CATALOG_BUILDING,  /* none yet; a job is queued or running */
  STORE_CATALOG_FAILED     /* none; the last job failed */
} store_catalog_state;

/* "ready", "building", "failed" (the catalog's filter values); never NULL. */
const char *store_catalog_state_str(store_catalog_state s);

typedef struct store_catalog_row {
  store_key key;
  store_catalog_state state;
  int has_model;     /* model and versions are set only when 1 */
  store_model model; /* the newest ready version; manifest NULL */
  int versions;      /* ready versions of the key */
  int has_job;       /* the job fields are set only when 1 */
  int64_t job_id;    /* the key's newest job */
  store_job_state job_state;
  char job_stage[160];
  char *job_error; /* owned, NULL when none; freed by store_catalog_free */
} store_catalog_row;

/* The catalog into a new array (*out, *n), ordered by network, framework, batch, target, precision. Each key
 * appears once: its newest ready version (state ready), else its live job (building), else its last failed job
 * (failed); keys whose last job was cancelled before a publish are left out. Filters may be NULL; state is a
 * store_catalog_state_str name. The caller owns the array and frees it with store_catalog_free; nothing is
 * written on an error. */
th_status store_catalog(store_t *st, const char *framework, const char *network, const char *state,
                        store_catalog_row **out, size_t *n);
/* Frees a catalog array; accepts NULL. After the call the array is no longer valid. */
void store_catalog_free(store_catalog_row *rows, size_t n);

/* ---- networks: the zoo's, and users' uploaded ONNX files ---- */
/* Records a zoo network (the daemon refreshes every zoo name at start); an uploaded network of the same name is
 * left as it is. */
th_status store_network_upsert(store_t *st, const char *name, const char *input_shape_json, double flops,
                               int64_t params);

typedef struct store_network {
  char name[64];
  int onnx;               /* 1: an uploaded ONNX file; 0: a zoo network (the fields below are empty) */
  char digest[TH_HEX_MAX];        /* the revision models and jobs record as store_key.net_digest: the file's sha256, or
                             with shapes the sha256 of "<file sha256>\n<shapes>"; "" for a zoo network */
  char onnx_digest[TH_HEX_MAX];   /* sha256 hex of the ONNX file (an artifact, media type application/onnx) */
  int64_t onnx_size;
  char onnx_path[TH_PATH_MAX]; /* the file in this data directory's content-addressed store:
                             store_network_get makes sure it is there (a shared store fetches it),
                             store_network_list does not */
  char *shapes;           /* owned: the importer's shapes string, or NULL */
  char *description;      /* owned: the JSON text stored with the upload, or NULL */
  int version;            /* 1, then one more for every upload of other content under the name */
  double flops;           /* at batch 1 */
  int64_t params;
  double created_at, updated_at;
} store_network;

/* Frees what a store_network owns (not n itself); accepts NULL. */
void store_network_clear(store_network *n);

typedef struct store_network_upload {
  const char *name;        /* 1..63 characters (the server checks its naming rule) */
  const char *path;        /* the ONNX file, already validated by the caller */
  int take;                /* 1: path comes from store_tmp_file and is renamed into place (gone after TH_OK);
                              0: it is copied and left in place */
  const char *sha256;      /* the file's sha256 (hex) when the caller hashed it while writing it; NULL: hashed here */
  const char *shapes;      /* NULL or "" when none */
  const char *description; /* JSON text, stored as given (may be NULL) */
  const char *input_shape; /* JSON text: the first input's shape at batch 1 (as store_network_upsert's) */
  double flops;            /* at batch 1 */
  int64_t params;
} store_network_upload;

/* What a store_network_put or store_network_delete changed. */
typedef struct store_network_change {
  int changed;   /* put: 0 nothing (the same file and shapes), 1 a new network, 2 a new version of it */
  int models;    /* the model versions marked deleted: delete, every one of the network; put, the replaced
                    revision's (stale bundles: no longer served, their blobs stay addressable) */
  int64_t *jobs; /* owned (free()): the queued or running jobs of the replaced or deleted revision that were
                    cancelled (queued ones end at once, running ones between stages); NULL when none */
  size_t njobs;
} store_network_change;

/* Stores an uploaded network under up->name. The file becomes an artifact (temp file, fsync, rename, then the
 * row, as store_artifact_put) and the row is written in one transaction with its consequences: other content
 * under an existing name is the next version: the old revision's live jobs are cancelled, its published versions
 * marked deleted (a bundle of it published later never matches the network's digest either), and its file goes
 * once nothing references it.
 * *out (may be NULL; clear it with store_network_clear) gets the network as stored, *change (may be NULL; free
 * its jobs) what changed. TH_ERR_CONFLICT when the name is a zoo network's, TH_ERR_INVALID for a bad name,
 * TH_ERR_IO, TH_ERR_DB, TH_ERR_BUSY. Out-params are written on TH_OK only. */
th_status store_network_put(store_t *st, const store_network_upload *up, store_network *out,
                            store_network_change *change);
/* The network named name (zoo or uploaded) into *out (clear it with store_network_clear); TH_ERR_NOT_FOUND when
 * the store has none. */
th_status store_network_get(store_t *st, const char *name, store_network *out);
/* The networks whose source is source ("zoo", "onnx", or NULL for both), by name, into a new array (*out, *n)
 * that the caller frees with store_network_list_free; nothing is written on an error. */
th_status store_network_list(store_t *st, const char *source, store_network **out, size_t *n);
/* Frees an array from store_network_list; accepts NULL. */
void store_network_list_free(store_network *nets, size_t n);
/* Deletes the uploaded network name: every version of its models (any revision) is marked deleted, its live
 * jobs are cancelled, its row goes, and its ONNX file too unless another network has the same bytes. *change
 * (may be NULL; free its jobs) says what went. TH_ERR_NOT_FOUND when no network has the name, TH_ERR_CONFLICT
 * for a zoo network. */
th_status store_network_delete(store_t *st, const char *name, store_network_change *change);

/* ---- workloads and tuning records ---- */
th_status store_workload_upsert(store_t *st, const char *key, const char *template_name, double flops);

typedef struct store_record {
  int64_t id;
  char workload_key[TH_KEY_MAX];
  char template_name[64];
  char target[TH_TARGET_MAX];
  char config[1024];
  int64_t config_index;
  double cost_mean_s, cost_std_s; /* seconds; 1e9 when failed */
  int error_class; /* 0 ok, 1 instantiation, 2 compile host, 3 compile device, 4 runtime device, 5 wrong answer,
                      6 build timeout, 7 run timeout, 8 unknown */
  double gflops;
  char tuner[16];
  int64_t job_id;
  int attempt; /* the claim of job_id it was measured under: the write is fenced by it as store_model_publish's
                  (0: unfenced, outside a leased job) */
  double created_at;
} store_record;

/* The tuner name of verification records: a task's best configs and its fallback timed again side by side
 * at the end of tuning. They are records but not trials: counts and curves leave them out. */
#define STORE_TUNER_VERIFY "verify"

/* Stores one trial or verification record. With r->job_id > 0 and r->attempt > 0 the insert is fenced: refused
 * with TH_ERR_CONFLICT once that attempt no longer holds the job (see store_model_publish). */
th_status store_record_add(store_t *st, const store_record *r);
/* The record a build applies for (workload_key, target): the fastest valid one of the latest verification
 * (the verification records with the newest created_at), else the fastest valid trial; TH_ERR_NOT_FOUND if
 * none is valid. */
th_status store_record_best(store_t *st, const char *workload_key, const char *target, store_record *out);
/* Every record of a template on a target, oldest first; cb returns nonzero to stop early. */
th_status store_record_each(store_t *st, const char *template_name, const char *target,
                            int (*cb)(void *ctx, const store_record *r), void *ctx);
/* Trials of (workload_key, target): records other than verification ones. */
th_status store_record_count(store_t *st, const char *workload_key, const char *target, int64_t *n);
/* The GFLOPS of every trial of (workload_key, target), oldest first, 0 for failed trials. *gflops is malloc'd
 * (caller frees; NULL when *n is 0). */
th_status store_record_gflops(store_t *st, const char *workload_key, const char *target, double **gflops,
                              int64_t *n);

/* ---- carrying records from one store to another (tunehub records export / import) ---- */
typedef struct store_record_query {
  const char *target;        /* one target string ("cuda -arch=sm_90"), or NULL / "": every target */
  const char *target_prefix; /* only targets that start with it ("cuda "), or NULL / "" */
  int best;                  /* 1: of each (workload, template, target) only the record store_record_best
                                gives, the one a build applies; 0: every record */
} store_record_query;

/* Every record q selects (q NULL: all), oldest first; cb returns nonzero to stop early. As with
 * store_record_each, cb runs without the store's lock (it may call the store). TH_ERR_DB, TH_ERR_BUSY,
 * TH_ERR_NOMEM. */
th_status store_record_select(store_t *st, const store_record_query *q,
                              int (*cb)(void *ctx, const store_record *r), void *ctx);
/* Stores the n records recs (borrowed) in one write transaction, in order, as records of no job (job_id and
 * attempt are ignored; created_at is kept, so the latest verification stays the latest), skipping each one
 * whose workload_key, template_name, target, config_index, tuner and cost_mean_s a stored record (or an
 * earlier one of recs) already has: storing the same records twice adds nothing. All or nothing: after an
 * error no record of recs is stored. *added (may be NULL) gets how many were inserted, on TH_OK only.
 * The caller validates the records. TH_ERR_DB, TH_ERR_BUSY, TH_ERR_UNAVAILABLE. */
th_status store_record_import(store_t *st, const store_record *recs, size_t n, int64_t *added);

/* ---- job changes across processes (PostgreSQL LISTEN/NOTIFY; see store_events.c) ---- */
typedef enum store_event_kind {
  STORE_EV_QUEUED = 0, /* a job was queued or handed back to the queue */
  STORE_EV_CLAIMED,    /* a worker claimed it */
  STORE_EV_PROGRESS,   /* its stage or progress document changed */
  STORE_EV_PUBLISHED,  /* it published a version (version, tuned, digest: the bundle's sha256) */
  STORE_EV_DONE,       /* it ended (succeeded, failed or cancelled) */
  STORE_EV_CATALOG,    /* job_id 0: versions deleted or retired, aliases or networks changed */
  STORE_EV_RESYNC      /* the listener reconnected: changes may have been missed; re-read what you watch */
} store_event_kind;

typedef struct store_event {
  int64_t job_id;
  store_event_kind kind;
  char origin[17]; /* the sending handle's token (store_origin) */
  int version, tuned;
  char digest[TH_HEX_MAX];
} store_event;

/* "queued", "claimed", "progress", "published", "done", "catalog", "resync". */
const char *store_event_kind_str(store_event_kind k);
/* This handle's token in the notifications it sends: a process skips the events of its own handle. */
const char *store_origin(const store_t *st);

typedef struct store_listener store_listener;
/* Listens for job changes on a connection of its own; TH_ERR_UNSUPPORTED on the embedded store (its one
 * process hears its scheduler directly). */
th_status store_listener_open(store_t *st, store_listener **out);
/* Waits up to timeout_ms for the next change: TH_OK with *ev, TH_ERR_TIMEOUT, or TH_ERR_UNAVAILABLE while the
 * database is away (later calls reconnect, and the first event after a reconnect is STORE_EV_RESYNC). A
 * listener is used by one thread. */
th_status store_listener_wait(store_listener *l, int timeout_ms, store_event *ev);
/* The listener's last error message. */
const char *store_listener_errmsg(const store_listener *l);
void store_listener_close(store_listener *l);

/* ---- garbage collection of blobs (store_gc.c) ---- */
/* One blob a collection removed (a dry run: would remove). */
typedef struct store_gc_blob {
  char digest[TH_HEX_MAX];
  int64_t size;
  char media_type[64]; /* "" for a leftover */
  int leftover;        /* 1: a file under artifacts/ that no row names (a put or a collection that died, or
                          a shared store's cached copy of a blob another process swept) */
} store_gc_blob;

typedef struct store_gc_report {
  int64_t marked, marked_bytes; /* kept: a published version, an alias's version or a network names them */
  int64_t young, young_bytes;   /* kept: unreferenced, but put or touched within the grace period */
  int64_t swept, swept_bytes;   /* unreferenced past the grace period: removed (dry run: would be) */
  int64_t leftovers, leftover_bytes; /* files without a row, untouched for the grace period: removed */
  int64_t versions_purged;      /* rows of deleted, unaliased versions removed with their blobs */
  int locked_out;               /* 1: another process was collecting the database's rows: only this data
                                   directory's leftovers were looked at (none on the embedded store) */
  store_gc_blob *removed;       /* owned: every blob and leftover removed (would be), by digest */
  size_t nremoved;
  double started_at, seconds;   /* wall clock */
} store_gc_report;

/* Mark and sweep: every artifact that a ready version, any version an alias pins (retired ones included) or
 * an uploaded network references is marked; an unmarked one whose row was put or touched more than grace_s
 * seconds ago is swept: the rows of the deleted, unaliased versions that name it, its row, its engine copy (a
 * PostgreSQL large object) and its file under data_dir/artifacts go in one write transaction that checks the
 * references again, so a publish that commits first keeps it. Files under artifacts/ that no row names and
 * whose mtime is older than grace_s go too. A reader that has opened a blob's file keeps reading all of it
 * after the sweep (the inode lives until its last descriptor closes). dry_run: nothing is changed; the report
 * lists what would go. On a shared store one process at a time collects rows (an advisory lock; the others
 * report locked_out and sweep only their own data directory). *out is written on TH_OK only (free it with
 * store_gc_report_free); an error part-way leaves what was swept swept and everything else in place. TH_ERR_DB,
 * TH_ERR_BUSY, TH_ERR_UNAVAILABLE, TH_ERR_NOMEM, TH_ERR_INVALID for a negative grace. */
th_status store_gc(store_t *st, double grace_s, int dry_run, store_gc_report *out);
/* Frees what a report owns (not r itself); accepts NULL. */
void store_gc_report_free(store_gc_report *r);

/* ---- copying an embedded store into a shared one (tunehub migrate) ---- */
typedef struct store_copy_report {
  int64_t rows[8];   /* per table, in store_copy_table_name's order (artifacts: the blobs) */
  int64_t blobs, blob_bytes;
} store_copy_report;

/* Progress of a copy: what (a table, or "blobs"), done of total. */
typedef void (*store_copy_progress_fn)(void *ctx, const char *what, int64_t done, int64_t total);

/* Every artifact's digest, sorted, as a new array of *count 65-byte hex strings (*out; the caller frees it). */
th_status store_artifact_digests(store_t *st, char **out, size_t *count);
/* The name of table i of a copy (0 = artifacts), NULL past the last. */
const char *store_copy_table_name(int i);
/* Copies everything the embedded store `from` holds into `to`, which must be a new, empty database
 * (TH_ERR_CONFLICT otherwise, naming the table that has rows): every blob through store_artifact_put, checked
 * against its digest, then every table in one transaction on `to` (ids kept; a running job arrives queued).
 * Workers are not copied. Errors are reported on `from` (store_errmsg(from)). */
th_status store_copy(store_t *from, store_t *to, store_copy_progress_fn progress, void *ctx,
                     store_copy_report *rep);
/* Compares every copied table of `from` and `to` by a digest of their rows (see store_copy.c); TH_ERR_CORRUPT
 * naming the first table that differs. rep->rows gets the destination's row counts. To check the blobs
 * themselves, open `to` on an empty data directory and read each one back with store_artifact_path. */
th_status store_copy_verify(store_t *from, store_t *to, store_copy_report *rep);

#endif
