/* The routes of the registry API, one row each: X(ID, name, methods, pattern, access, handler).
 * From this one table come the route enum and the metrics labels (srv_int.h, response.c), the size
 * of the per-route metrics (srv_t.requests), the handlers' prototypes and the router (routes.c):
 * adding a route is a row here, its handler, and its case in tests/unit/test_server_routes.c.
 *   ID       SRV_ROUTE_<ID>, the label r->route carries.
 *   name     the label of tunehub_http_requests_total{route=...} in /metrics; unique.
 *   methods  GH (GET and HEAD), GET, POST, PUT or DELETE (SRV_METHODS_<methods>); another method on
 *            the path gets 405, its Allow naming the methods of every row whose pattern matches.
 *   pattern  the decoded path's segments: a literal; "{key}", the three segments framework/network/
 *            batch, validated into a store_key before the handler runs; "{x}", one segment; "{x?}",
 *            an optional last segment. Where several rows match, the one with the most literal
 *            segments wins, then the first. "/v2/..." is matched on the raw path, before it is
 *            split, for every method: that handler answers its own errors, 405 included (oci.c).
 *   access   SRV_ACCESS_<access>: OPEN (anyone, --private or not); PAGE (the page's own files: OPEN
 *            for "/" and a name with an extension, else READ); READ (under --private, GET and HEAD
 *            need a read token); TUNE or ADMIN (a token with that scope, checked after the key and
 *            before the handler).
 *   handler  srv_route_<handler>(srv_t *, srv_request *, const srv_route_args *) (routes.h).
 * The rows are in the enum's order, which /metrics lists by; SRV_ROUTE_OTHER (0, "other") labels a
 * request no row matched. */
#ifndef SRV_ROUTE_TABLE_H
#define SRV_ROUTE_TABLE_H

/* clang-format off */
#define SRV_ROUTE_TABLE(X) \
  X(MODEL, "model", GH, "/models/{key}", READ, model)                                      \
  X(MANIFEST, "manifest", GH, "/models/{key}/manifest", READ, manifest)                    \
  X(CATALOG, "catalog", GH, "/models", READ, catalog)                                      \
  X(BLOB, "blob", GH, "/blobs/{ref}", READ, blob)                                          \
  X(TUNE, "tune", POST, "/models/{key}/tune", TUNE, tune)                                  \
  X(MODEL_DELETE, "model_delete", DELETE, "/models/{key}", ADMIN, model_delete)            \
  X(JOBS, "jobs", GH, "/jobs", READ, jobs)                                                 \
  X(JOB, "job", GH, "/jobs/{id}", READ, job)                                               \
  X(JOB_CANCEL, "job_cancel", DELETE, "/jobs/{id}", TUNE, job_cancel)                      \
  X(NETWORKS, "networks", GH, "/networks", READ, networks)                                 \
  X(TARGETS, "targets", GH, "/targets", READ, targets)                                     \
  X(HEALTHZ, "healthz", GH, "/healthz", OPEN, healthz)                                     \
  X(READYZ, "readyz", GH, "/readyz", OPEN, readyz)                                         \
  X(METRICS, "metrics", GH, "/metrics", READ, metrics)                                     \
  X(WEB, "web", GH, "/{file?}", PAGE, web)                                                 \
  X(VERSIONS, "versions", GH, "/models/{key}/versions", READ, versions)                    \
  X(TUNING, "tuning", GH, "/models/{key}/tuning", READ, tuning)                            \
  X(EVENTS, "events", GET, "/jobs/{id}/events", READ, events)                              \
  X(SCHEDULER, "scheduler", GH, "/scheduler", READ, scheduler)                             \
  X(NETWORK, "network", GH, "/networks/{name}", READ, network)                             \
  X(NETWORK_PUT, "network_put", PUT, "/networks/{name}", TUNE, network)                    \
  X(NETWORK_DELETE, "network_delete", DELETE, "/networks/{name}", ADMIN, network)          \
  X(OCI, "oci", GH, "/v2/...", READ, oci)                                                  \
  X(ALIASES, "aliases", GH, "/models/{key}/aliases/{alias?}", READ, aliases)               \
  X(ALIAS_PUT, "alias_put", PUT, "/models/{key}/aliases/{alias}", TUNE, aliases)           \
  X(ALIAS_DELETE, "alias_delete", DELETE, "/models/{key}/aliases/{alias}", ADMIN, aliases) \
  X(WORKERS, "workers", GH, "/workers", READ, workers)                                     \
  X(PROVENANCE, "provenance", GH, "/models/{key}/provenance", READ, provenance)             \
  X(RECORDS, "records", GH, "/records", READ, records)                                     \
  X(RECORDS_POST, "records_post", POST, "/records", TUNE, records)
/* clang-format on */

#endif
