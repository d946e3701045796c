-- tunehub's schema, for SQLite and PostgreSQL alike. Applied by store_open() as versioned migrations: each block
-- below "-- migration N" runs once, in order, inside one transaction, and sets the schema version to N (SQLite's
-- user_version, PostgreSQL's tunehub_schema row). The db layer (store/db.h) turns {id} into an auto-numbered
-- key and {real} into an 8-byte float on each engine; 64-bit integers are BIGINT (INTEGER to SQLite).

-- migration 1
CREATE TABLE networks (
  name        TEXT PRIMARY KEY,
  input_shape TEXT NOT NULL,            -- JSON array, batch 1
  flops       {real} NOT NULL,            -- batch 1
  params      BIGINT  NOT NULL,
  updated_at  {real} NOT NULL
);

CREATE TABLE artifacts (
  digest      TEXT PRIMARY KEY,         -- sha256 hex of the file
  size        BIGINT  NOT NULL,
  media_type  TEXT NOT NULL,
  created_at  {real} NOT NULL
);

CREATE TABLE models (
  id               {id},
  framework        TEXT NOT NULL,
  network          TEXT NOT NULL,
  batch            INTEGER NOT NULL,
  target           TEXT NOT NULL,
  compiler_version TEXT NOT NULL,
  version          INTEGER NOT NULL,     -- 1, 2, ... per key
  state            TEXT NOT NULL CHECK (state IN ('ready', 'deleted')),
  tuned            INTEGER NOT NULL DEFAULT 0,
  tar_digest       TEXT NOT NULL REFERENCES artifacts(digest),
  so_digest        TEXT NOT NULL REFERENCES artifacts(digest),
  manifest         TEXT NOT NULL,        -- JSON
  latency_ms       {real},                 -- median, when measured
  job_id           BIGINT,
  created_at       {real} NOT NULL,
  UNIQUE (framework, network, batch, target, compiler_version, version)
);

CREATE TABLE jobs (
  id               {id},
  framework        TEXT NOT NULL,
  network          TEXT NOT NULL,
  batch            INTEGER NOT NULL,
  target           TEXT NOT NULL,
  compiler_version TEXT NOT NULL,
  kind             TEXT NOT NULL DEFAULT 'build',   -- build | tune
  options          TEXT NOT NULL DEFAULT '{}',      -- JSON
  priority         INTEGER NOT NULL DEFAULT 0,
  state            TEXT NOT NULL CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
  stage            TEXT NOT NULL DEFAULT '',
  progress         TEXT NOT NULL DEFAULT '{}',      -- JSON
  error            TEXT,
  cancel_requested INTEGER NOT NULL DEFAULT 0,
  attempts         INTEGER NOT NULL DEFAULT 0,
  worker           TEXT,
  created_at       {real} NOT NULL,
  started_at       {real},
  finished_at      {real}
);
-- single-flight: one live job per key
CREATE UNIQUE INDEX jobs_live_key ON jobs (framework, network, batch, target, compiler_version)
  WHERE state IN ('queued', 'running');
CREATE INDEX jobs_state ON jobs (state, priority, id);

CREATE TABLE workloads (
  key           TEXT PRIMARY KEY,        -- tc_workload_key()
  template_name TEXT NOT NULL,
  flops         {real} NOT NULL,
  created_at    {real} NOT NULL
);

CREATE TABLE tuning_records (
  id            {id},
  workload_key  TEXT NOT NULL,
  template_name TEXT NOT NULL,
  target        TEXT NOT NULL,
  config        TEXT NOT NULL,
  config_index  BIGINT  NOT NULL,
  cost_mean_s   {real} NOT NULL,
  cost_std_s    {real} NOT NULL,
  error_class   INTEGER NOT NULL,
  gflops        {real} NOT NULL,
  tuner         TEXT NOT NULL,           -- xgb, ga, random, grid; verify: the end-of-task re-timing (not a trial)
  job_id        BIGINT,
  created_at    {real} NOT NULL
);
CREATE INDEX tuning_records_best ON tuning_records (workload_key, target, error_class, cost_mean_s);
CREATE INDEX tuning_records_template ON tuning_records (template_name, target);

-- migration 2
-- Users' own networks (uploaded ONNX files) beside the zoo's. An uploaded network's file is an artifact
-- (content-addressed, media type application/onnx); `digest` names the network's revision: the sha256 of
-- the file, or, when the upload came with a shapes string, the sha256 of "<file sha256>\n<shapes>". Zoo
-- networks have source 'zoo' and the digest ''.
ALTER TABLE networks ADD COLUMN source TEXT NOT NULL DEFAULT 'zoo' CHECK (source IN ('zoo', 'onnx'));
ALTER TABLE networks ADD COLUMN onnx_digest TEXT REFERENCES artifacts(digest);
ALTER TABLE networks ADD COLUMN shapes TEXT;            -- the importer's shapes string, when given
ALTER TABLE networks ADD COLUMN description TEXT;       -- JSON: inputs, outputs, flops, params, ops (uploads)
ALTER TABLE networks ADD COLUMN digest TEXT NOT NULL DEFAULT '';
ALTER TABLE networks ADD COLUMN version INTEGER NOT NULL DEFAULT 1;  -- 1, 2, ... per upload of new content
ALTER TABLE networks ADD COLUMN created_at {real};
-- Models and jobs record the revision of the network they were built from ('' for zoo networks), so that a
-- bundle built from an older upload is never served as the current one; it is part of a job's key, and
-- single-flight holds per revision.
ALTER TABLE models ADD COLUMN net_digest TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN net_digest TEXT NOT NULL DEFAULT '';
DROP INDEX jobs_live_key;
CREATE UNIQUE INDEX jobs_live_key ON jobs (framework, network, batch, target, compiler_version, net_digest)
  WHERE state IN ('queued', 'running');

-- migration 3
-- Aliases: a mutable name (prod, staging, ...) that pins one published version of a key, as MLflow's aliases
-- and OCI tags do. The row names the version by the model key's five name columns and its number (version
-- numbers count over the names alone, so the pair is one models row whatever the network's revision);
-- net_digest records the revision of the pinned version, so that after a re-upload the alias says its
-- version was retired instead of vanishing. A name is unique per repository (framework, network, target,
-- compiler version), not only per batch: the OCI tag <framework>/<network>:<alias> must name one image.
-- Retention never unpublishes a version an alias pins, and a garbage collector keeps its blobs.
CREATE TABLE aliases (
  framework        TEXT NOT NULL,
  network          TEXT NOT NULL,
  batch            INTEGER NOT NULL,
  target           TEXT NOT NULL,
  compiler_version TEXT NOT NULL,
  net_digest       TEXT NOT NULL DEFAULT '',
  name             TEXT NOT NULL,
  version          INTEGER NOT NULL,
  updated_at       {real} NOT NULL,
  UNIQUE (framework, network, target, compiler_version, name),
  FOREIGN KEY (framework, network, batch, target, compiler_version, version)
    REFERENCES models (framework, network, batch, target, compiler_version, version)
);
CREATE INDEX aliases_version ON aliases (framework, network, batch, target, compiler_version, version);

-- migration 4
-- A shared store (PostgreSQL) keeps every artifact's bytes in the database as well, so that any daemon or worker
-- can serve or use an artifact another one put: a large object per artifact, written in the transaction that
-- inserts the row and removed in the one that deletes it (store/blob.h). Each process's data_dir/artifacts is
-- then a read-through cache, verified against the digest when filled. The embedded store's files are the bytes
-- themselves, and lo_oid stays NULL there.
ALTER TABLE artifacts ADD COLUMN lo_oid BIGINT;

-- migration 5
-- Workers (issue 24): the processes that claim and run jobs, `tunehub worker` on each machine with hardware to
-- tune for and each daemon's own scheduler. A worker registers its concrete targets (worker_targets, for the
-- claim's join; targets, the same list as a JSON array, for the fleet view) and heartbeats on the database's
-- clock; alive means not stopped and a heartbeat within its own lease. A claim leases its job until
-- lease_until, which the heartbeat extends; a job whose lease passed is requeued by whoever looks first. jobs.
-- attempts, raised by every claim, is the fencing token: a write of a job carries the attempt it was made
-- under and is refused once another claim took the job. needs_target '' lets any worker claim a job; a job
-- handed back for tuning names the one target a claimer must have registered. tuning_records.attempt is the
-- claim a record was written under (0: outside a leased job, the CLI).
CREATE TABLE workers (
  name         TEXT PRIMARY KEY,       -- host:pid:random, or the worker's --name
  host         TEXT NOT NULL,
  targets      TEXT NOT NULL DEFAULT '[]',
  slots        INTEGER NOT NULL,
  lease_s      {real} NOT NULL,
  started_at   {real} NOT NULL,
  heartbeat_at {real} NOT NULL,
  stopped_at   {real}
);
CREATE TABLE worker_targets (
  worker TEXT NOT NULL,
  target TEXT NOT NULL,
  PRIMARY KEY (worker, target)
);
CREATE INDEX worker_targets_target ON worker_targets (target);
ALTER TABLE jobs ADD COLUMN lease_until {real};
ALTER TABLE jobs ADD COLUMN needs_target TEXT NOT NULL DEFAULT '';
ALTER TABLE tuning_records ADD COLUMN attempt INTEGER NOT NULL DEFAULT 0;

-- migration 6
-- Garbage collection of blobs (issue 22; store/store_gc.c): an artifact no published version, alias or network
-- references goes once it has been left alone for a grace period. touched_at is when a writer last put these
-- bytes (a put of bytes already stored touches the row; NULL: never since created_at), so that a blob put for a
-- publish that has not committed yet, even one whose bytes an older unreferenced row holds, counts as new. The
-- two indexes serve the collector's question "does any version point at this digest?".
ALTER TABLE artifacts ADD COLUMN touched_at {real};
CREATE INDEX models_tar_digest ON models (tar_digest);
CREATE INDEX models_so_digest ON models (so_digest);
-- The rows of deleted versions name their blobs by foreign key, so the collector removes a deleted version's row
-- (unless an alias pins it) with its blobs. Version numbers must never come back: a key's highest removed version
-- stays here, and a publish numbers past it as past the rows that remain.
CREATE TABLE model_version_floor (
  framework        TEXT NOT NULL,
  network          TEXT NOT NULL,
  batch            INTEGER NOT NULL,
  target           TEXT NOT NULL,
  compiler_version TEXT NOT NULL,
  version          INTEGER NOT NULL,
  PRIMARY KEY (framework, network, batch, target, compiler_version)
);

-- migration 7
-- Precision (issue 25): a cuda key names its arithmetic, fp32 (IEEE fp32 with FMA: every key before this
-- migration) or tf32 (tensor cores with fp32 accumulation, as cuDNN under PyTorch's defaults); llvm keys are
-- always fp32. It is one of the key's name columns, beside target: fp32 and tf32 of one network, batch and
-- target are two catalog entries, with versions, jobs, aliases and version floors of their own. Existing rows
-- become fp32. SQLite cannot alter a UNIQUE table constraint, so models, aliases (whose foreign key names the
-- models key) and model_version_floor are rebuilt: copied aside, dropped (aliases before models), created again
-- and copied back, ids kept ({postgresql} lines run on PostgreSQL only: its id sequence is moved past the
-- copied ids). jobs needs only its single-flight index again.
CREATE TABLE models_v6 AS SELECT * FROM models;
CREATE TABLE aliases_v6 AS SELECT * FROM aliases;
CREATE TABLE model_version_floor_v6 AS SELECT * FROM model_version_floor;
DROP TABLE aliases;
DROP TABLE model_version_floor;
DROP TABLE models;
CREATE TABLE models (
  id               {id},
  framework        TEXT NOT NULL,
  network          TEXT NOT NULL,
  batch            INTEGER NOT NULL,
  target           TEXT NOT NULL,
  compiler_version TEXT NOT NULL,
  precision        TEXT NOT NULL DEFAULT 'fp32' CHECK (precision IN ('fp32', 'tf32')),
  version          INTEGER NOT NULL,     -- 1, 2, ... per key
  state            TEXT NOT NULL CHECK (state IN ('ready', 'deleted')),
  tuned            INTEGER NOT NULL DEFAULT 0,
  tar_digest       TEXT NOT NULL REFERENCES artifacts(digest),
  so_digest        TEXT NOT NULL REFERENCES artifacts(digest),
  manifest         TEXT NOT NULL,        -- JSON
  latency_ms       {real},                 -- median, when measured
  job_id           BIGINT,
  created_at       {real} NOT NULL,
  net_digest       TEXT NOT NULL DEFAULT '',
  UNIQUE (framework, network, batch, target, compiler_version, precision, version)
);
INSERT INTO models (id, framework, network, batch, target, compiler_version, precision, version, state, tuned,
                    tar_digest, so_digest, manifest, latency_ms, job_id, created_at, net_digest)
  SELECT id, framework, network, batch, target, compiler_version, 'fp32', version, state, tuned, tar_digest,
         so_digest, manifest, latency_ms, job_id, created_at, net_digest FROM models_v6;
{postgresql} SELECT setval(pg_get_serial_sequence('models', 'id'), (SELECT coalesce(max(id), 0) + 1 FROM models), false);
CREATE INDEX models_tar_digest ON models (tar_digest);
CREATE INDEX models_so_digest ON models (so_digest);
CREATE TABLE aliases (
  framework        TEXT NOT NULL,
  network          TEXT NOT NULL,
  batch            INTEGER NOT NULL,
  target           TEXT NOT NULL,
  compiler_version TEXT NOT NULL,
  precision        TEXT NOT NULL DEFAULT 'fp32',
  net_digest       TEXT NOT NULL DEFAULT '',
  name             TEXT NOT NULL,
  version          INTEGER NOT NULL,
  updated_at       {real} NOT NULL,
  UNIQUE (framework, network, target, compiler_version, precision, name),
  FOREIGN KEY (framework, network, batch, target, compiler_version, precision, version)
    REFERENCES models (framework, network, batch, target, compiler_version, precision, version)
);
INSERT INTO aliases (framework, network, batch, target, compiler_version, precision, net_digest, name, version,
                     updated_at)
  SELECT framework, network, batch, target, compiler_version, 'fp32', net_digest, name, version, updated_at
  FROM aliases_v6;
CREATE INDEX aliases_version ON aliases (framework, network, batch, target, compiler_version, precision, version);
CREATE TABLE model_version_floor (
  framework        TEXT NOT NULL,
  network          TEXT NOT NULL,
  batch            INTEGER NOT NULL,
  target           TEXT NOT NULL,
  compiler_version TEXT NOT NULL,
  precision        TEXT NOT NULL DEFAULT 'fp32',
  version          INTEGER NOT NULL,
  PRIMARY KEY (framework, network, batch, target, compiler_version, precision)
);
INSERT INTO model_version_floor (framework, network, batch, target, compiler_version, precision, version)
  SELECT framework, network, batch, target, compiler_version, 'fp32', version FROM model_version_floor_v6;
DROP TABLE models_v6;
DROP TABLE aliases_v6;
DROP TABLE model_version_floor_v6;
ALTER TABLE jobs ADD COLUMN precision TEXT NOT NULL DEFAULT 'fp32' CHECK (precision IN ('fp32', 'tf32'));
DROP INDEX jobs_live_key;
CREATE UNIQUE INDEX jobs_live_key ON jobs (framework, network, batch, target, compiler_version, precision,
  net_digest) WHERE state IN ('queued', 'running');

-- migration 8
-- Signed provenance (tuner/provenance.c): the DSSE envelope of a version's in-toto statement, a content-addressed
-- blob like the bundle; NULL when the daemon that published the version had no --signing-key.
ALTER TABLE models ADD COLUMN provenance_digest TEXT REFERENCES artifacts(digest);
