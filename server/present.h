/* present: every JSON document the HTTP API sends, built from the plain structs that store/ and tuner/ return.
 * The store and the tuner never see JSON or URLs; a second store backend implements their struct APIs and these
 * documents come out the same. Each function returns a new jansson value (owned by the caller: json_decref) or
 * NULL when out of memory, except where it says otherwise. Pure: no I/O, no locks; thread-safe. */
#ifndef SRV_PRESENT_H
#define SRV_PRESENT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "scheduler.h"
#include "store.h"
#include "tc/graph.h"
#include "tc/onnx.h"
#include "th_buf.h"
#include "tune_report.h"
#include "worker.h"

/* The URL of job id ("/jobs/17") into out. */
void srv_job_url(int64_t id, char *out, size_t n);

/* A job: {"id","framework",...,"progress","error","created_at",...,"elapsed_s","url"}. The stored options and
 * progress documents are embedded as objects ({} when unreadable). */
json_t *srv_present_job(const store_job *j);
/* {"count","jobs":[job...]}. */
json_t *srv_present_jobs(const store_job *jobs, size_t n);
/* GET /workers: {"count", "workers": [{name, host, targets, slots, lease_s, alive, started_at,
 * heartbeat_at, heartbeat_age_s, stopped_at, jobs: [{id, framework, network, batch, target, kind,
 * attempt, stage, lease_left_s, url}]}]}; alive ones first. Without full (an anonymous client), no
 * host, and a name that a worker made up from its host (host:pid:random, or a daemon's
 * host:data-directory) is shown as "worker-<12 hex of its sha256>": the same worker keeps its
 * label, and no host name or path is given away. */
json_t *srv_present_workers(const store_worker *ws, size_t n, int full);
/* {"count","models":[...]}: per key its newest version, or its live or failed job. */
json_t *srv_present_catalog(const store_catalog_row *rows, size_t n);
/* {"framework","network","batch","target","count","versions":[{version,tuned,digest,...,"aliases":[names]}],
 * "aliases":[alias...]} of key: each version names the live aliases that pin it; the list at the end has every
 * alias of the key, retired ones included. */
json_t *srv_present_versions(const store_key *key, const store_model *versions, size_t n, const store_alias *as,
                             size_t nas);
/* An alias: {"alias","framework","network","batch","target","version","digest","so_digest","retired",
 * "updated_at","url" (the bundle by alias),"oci" (the OCI reference <fw>/<net>:<alias>)}. */
json_t *srv_present_alias(const store_alias *a);
/* {"framework","network","batch","target","count","aliases":[alias...]} of key. */
json_t *srv_present_aliases(const store_key *key, const store_alias *as, size_t n);

/* {"network","batch","target","trials","tasks":[{"task","workload","template","count","gflop","trials","valid",
 * "best_gflops","curve":[[trial, best_gflops_so_far], ...]}]}. */
json_t *srv_present_curve(const tune_curve *c);

/* A job's progress document, appended to b as JSON text: the tuning session's fields ("tuner", "stage", "task",
 * "ntasks", "elapsed_s", "eta_s", "trials", "trials_total", "tasks"), then "phase", "build" ({"stage", "done",
 * "total", "fraction"}) and "tuning" where set; {} for NULL. */
th_status srv_present_progress(const tune_job_progress *p, th_buf *b);
/* The same as malloc'd text (the scheduler's progress encoder; ctx unused), or NULL when out of memory. */
char *srv_progress_doc(void *ctx, const tune_job_progress *p);
/* The data of an event stream's event, as malloc'd JSON text (NULL when out of memory): stage {"job","stage",
 * "phase","task","ntasks"}, progress (the progress document, {} when none), published {"job","version","tuned",
 * "digest"}, done {"job","state","error"}. */
char *srv_present_event(const tune_event *ev);
/* The scheduler's state appended to b: {"resources":{"cpu","devices"},"admitted","max_jobs","aging_s","jobs",
 * "waiting","estimates"}, then "store_queue": queue (a document, e.g. srv_present_jobs', consumed). */
th_status srv_present_scheduler(const tune_sched_info *in, json_t *queue, th_buf *b);

/* A zoo network's GET /networks entry, {"name", "source": "zoo", "description", "input", "inputs": [{"name",
 * "dtype", "shape"}], "outputs": [...], "flops", "params"}, at the default input size. In shapes a dimension
 * that follows the batch is the string "batch" (found by building the graph at batch 1 and 2,
 * without weights); "input" is the first input's shape at batch 1. FLOPs and parameters are at
 * batch 1. TH_ERR_NOT_FOUND for an unknown name, TH_ERR_NOMEM; *out is written only on success. */
th_status srv_present_network(const char *name, json_t **out);
/* An uploaded network's description as its import found it: {"name", "source": "onnx", "input", "inputs",
 * "outputs", "flops", "params" (as a zoo entry's, from its graphs at batch 1 and 2), "ops": [{"op_type", "count"}]
 * (the file's op types in first-seen order), "onnx": {"ir_version", "opset", "producer", "nodes", "initializers",
 * "param_elements", "folded", "fused_layer_norm", "fused_gelu"}}. TH_ERR_INTERNAL when the graphs disagree on
 * their inputs or outputs, TH_ERR_NOMEM; *out is written only on success. */
th_status srv_present_onnx(const char *name, const tc_graph *g1, const tc_graph *g2, const tc_onnx_info *info,
                           json_t **out);
/* An uploaded network's GET /networks entry: its stored description with the store's "version", "digest"
 * ("sha256:" of the ONNX file), "size", "shapes" (null when none), "created_at" and "updated_at". */
json_t *srv_present_uploaded(const store_network *n);
/* Replaces every "batch" dimension in a GET /networks document (one entry or {"networks":[...]})
 * with batch, in place, and sets each entry's "input" to its first input's shape at that batch. */
void srv_present_networks_at(json_t *doc, int batch);

#endif
