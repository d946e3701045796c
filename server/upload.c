/* Uploaded networks (see upload.h): the naming rule, the import that validates a file before it is stored (on a
 * thread with a bounded stack), and the description the registry keeps with it. */
#include "upload.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "present.h"
#include "tc/backend.h"
#include "tc/network.h"
#include "tc/onnx.h"
#include "tc/space.h"
#include "tc/zoo.h"
#include "th_alloc.h"

int srv_network_name_ok(const char *name) {
  size_t n = name ? strlen(name) : 0;
  if (n < 1 || n > 63) return 0;
  for (size_t i = 0; i < n; i++) {
    char c = name[i];
    int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!alnum && (i == 0 || (c != '.' && c != '_' && c != '-'))) return 0;
  }
  return 1;
}

/* Every task of the network on this server's CPU target has a template: TH_ERR_UNSUPPORTED naming the first
 * kernel that has none. */
static th_status srv__upload_tasks(const tc_netsrc *net, int batch, char *err, size_t n) {
  tc_backend_target t;
  th_status rc = tc_backend_target_init(tc_backend_default(), NULL, &t, err, n);
  tc_task *tasks = NULL;
  int nt = 0;
  char why[TH_WHY_MAX] = "";
  if (rc == TH_OK) rc = tc_network_tasks_err(&t, net, batch, &tasks, &nt, why, sizeof why);
  if (rc != TH_OK && err[0] == '\0')
    snprintf(err, n, "%s: the graph passes refused the imported graph: %s", net->name,
             why[0] ? why : th_status_str(rc));
  for (int i = 0; rc == TH_OK && i < nt; i++) {
    tc_space sp;
    if (tc_backend_space(&t, &tasks[i].wl, &sp) != TH_OK) {
      snprintf(err, n, "%s: no %s template for kernel %s (workload %s)", net->name, tc_backend_name(t.backend),
               tc_kernel_name(tasks[i].wl.kernel), tasks[i].key);
      rc = TH_ERR_UNSUPPORTED;
    }
  }
  free(tasks);
  return rc;
}

/* The description of the file at path: imported at batch 1 with its weights (which checks every initializer)
 * and at batch 2 without (the batch dimensions); then, with those graphs freed, its tasks. A file that imports
 * at no batch but the one it fixes (a Reshape to [2, 12] of a [2, 3, 4] input: the shapes of its graph hold
 * there only) is a network of that batch alone: imported there, described with "fixed_batch", and refused
 * at any other batch (400 invalid_batch) instead of failing in the build. */
static th_status srv__upload_describe(const srv_upload_in *in, json_t **doc, char *err, size_t n) {
  tc_onnx_info *info = th_calloc(1, sizeof *info);
  if (!info) return TH_ERR_NOMEM;
  tc_graph *g1 = NULL, *g2 = NULL;
  tc_onnx_opts o1 = {.network = in->name, .batch = 1, .shapes = in->shapes, .weights = 1};
  tc_onnx_opts o2 = {.network = in->name, .batch = 2, .shapes = in->shapes, .weights = 0};
  th_status rc = tc_onnx_import_file(in->path, &o1, &g1, info, err, n);
  int fixed = 0;
  if ((rc == TH_ERR_INVALID || rc == TH_ERR_UNSUPPORTED) && info->file_batch > 1) {
    char *err2 = th_malloc(n);
    o1.batch = o2.batch = info->file_batch; /* the batch-1 error stays the answer should this fail too */
    if (err2 && tc_onnx_import_file(in->path, &o1, &g1, info, err2, n) == TH_OK) {
      fixed = o1.batch;
      rc = TH_OK;
    }
    free(err2);
  }
  if (rc == TH_OK) rc = tc_onnx_import_file(in->path, &o2, &g2, NULL, err, n);
  if ((rc == TH_ERR_INVALID || rc == TH_ERR_UNSUPPORTED) && g1 && !fixed &&
      info->file_batch == 1) { /* fixed at batch 1: a Squeeze of axis 0 (not out of memory at batch 2) */
    g2 = g1;
    fixed = 1;
    rc = TH_OK;
  }
  if ((rc == TH_ERR_INVALID || rc == TH_ERR_UNSUPPORTED) && g1 && !fixed && info->file_batch > 2) {
    /* fixed at B > 2 yet imported at 1, where a constant [B, 10] times the [B, 10] input broadcasts
     * (torch's PoissonNLLLoss at opset 6): taken at B alone, the batch-2 error the answer otherwise */
    tc_graph *gb = NULL;
    char *err2 = th_malloc(n);
    o1.batch = info->file_batch;
    if (err2 && tc_onnx_import_file(in->path, &o1, &gb, info, err2, n) == TH_OK) {
      tc_graph_free(g1);
      g1 = g2 = gb;
      fixed = o1.batch;
      rc = TH_OK;
    }
    free(err2);
  }
  json_t *d = NULL;
  if (rc == TH_OK) {
    rc = srv_present_onnx(in->name, g1, g2, info, &d);
    if (rc != TH_OK) snprintf(err, n, "cannot describe %s: %s", in->name, th_status_str(rc));
  }
  if (rc == TH_OK && fixed) json_object_set_new(d, "fixed_batch", json_integer(fixed));
  if (g2 != g1) tc_graph_free(g2);
  tc_graph_free(g1);
  free(info);
  if (rc == TH_OK) {
    tc_netsrc src = {in->name, in->path, in->shapes};
    rc = srv__upload_tasks(&src, fixed ? fixed : 1, err, n);
  }
  if (rc != TH_OK) {
    json_decref(d);
    return rc;
  }
  *doc = d;
  return TH_OK;
}

/* The import of a file runs on a thread of its own with an explicitly sized stack and a guard region, not on
 * the caller's (an HTTP connection thread, whose stack libmicrohttpd and the C library size, or the CLI's main
 * thread): what the importer may use is then a fixed figure the wire scan is measured against. The scan
 * (compiler/import/onnx_wire.c) keeps protobuf-c's recursion to TC_ONNX_MAX_DEPTH messages (a few KiB of
 * stack) and its allocations to a byte budget, so this stack is many times what an accepted file needs.
 * A thread rather than a child process: the import shares the store handle, the LLVM target set-up and the
 * log with the daemon, and a fork of a daemon holding LLVM, libmicrohttpd and worker threads may deadlock
 * the child on a lock another thread held at the fork, while exec'ing a helper would need its own protocol
 * for the description; a thread cannot survive a wild write of the importer's, which the fuzzers and the
 * scan's own tests are there to rule out. */
#define SRV_IMPORT_STACK ((size_t)8 << 20)
#define SRV_IMPORT_GUARD ((size_t)64 << 10)

typedef struct srv__describe_call {
  const srv_upload_in *in;
  json_t *doc;
  char *err;
  size_t n;
  th_status rc;
} srv__describe_call;

static void *srv__describe_main(void *arg) {
  srv__describe_call *c = arg;
  c->rc = srv__upload_describe(c->in, &c->doc, c->err, c->n);
  return NULL;
}

static th_status srv__upload_describe_bounded(const srv_upload_in *in, json_t **doc, char *err, size_t n) {
  srv__describe_call c = {in, NULL, err, n, TH_ERR_INTERNAL};
  pthread_attr_t attr;
  pthread_t t;
  int e = pthread_attr_init(&attr);
  if (e == 0) e = pthread_attr_setstacksize(&attr, SRV_IMPORT_STACK);
  if (e == 0) e = pthread_attr_setguardsize(&attr, SRV_IMPORT_GUARD);
  if (e == 0) e = pthread_create(&t, &attr, srv__describe_main, &c);
  pthread_attr_destroy(&attr);
  if (e != 0) {
    snprintf(err, n, "cannot start the import thread: %s", strerror(e));
    return e == EAGAIN || e == ENOMEM ? TH_ERR_NOMEM : TH_ERR_INTERNAL;
  }
  pthread_join(t, NULL);
  if (c.rc == TH_OK) *doc = c.doc;
  return c.rc;
}

th_status srv_upload_network(store_t *st, const srv_upload_in *in, json_t **doc, store_network_change *change,
                             char *err, size_t n) {
  if (err && n) err[0] = '\0';
  if (!srv_network_name_ok(in->name)) {
    snprintf(err, n, "invalid network name '%s'; a name is %s", in->name ? in->name : "", SRV_NETWORK_NAME_RULE);
    return TH_ERR_INVALID;
  }
  if (tc_zoo_find(in->name)) {
    snprintf(err, n, "'%s' is a zoo network; choose another name for an upload", in->name);
    return TH_ERR_CONFLICT;
  }
  json_t *desc = NULL;
  th_status rc = srv__upload_describe_bounded(in, &desc, err, n);
  if (rc != TH_OK) return rc;
  char *text = json_dumps(desc, JSON_COMPACT);
  char *shape = json_dumps(json_object_get(desc, "input"), JSON_COMPACT);
  store_network_upload up = {.name = in->name,
                             .path = in->path,
                             .take = in->take,
                             .sha256 = in->sha256,
                             .shapes = in->shapes,
                             .description = text,
                             .input_shape = shape,
                             .flops = json_number_value(json_object_get(desc, "flops")),
                             .params = (int64_t)json_integer_value(json_object_get(desc, "params"))};
  json_decref(desc);
  store_network row;
  store_network_change ch;
  rc = text && shape ? store_network_put(st, &up, &row, &ch) : TH_ERR_NOMEM;
  free(text);
  free(shape);
  if (rc != TH_OK) {
    snprintf(err, n, "cannot store %s: %s", in->name, rc == TH_ERR_NOMEM ? "out of memory" : store_errmsg(st));
    return rc;
  }
  *doc = srv_present_uploaded(&row);
  store_network_clear(&row);
  if (!*doc) {
    free(ch.jobs);
    snprintf(err, n, "out of memory");
    return TH_ERR_NOMEM;
  }
  *change = ch;
  return TH_OK;
}
