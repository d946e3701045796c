/* upload: a user's ONNX network into the store, for PUT /networks/{name} and `tunehub import` alike. The name
 * follows one rule, a zoo name is refused, and the file is imported (onnx.h) before anything is stored: at batch
 * 1 with its weights (every initializer checked), at batch 2 for the batch dimensions, and once more on this
 * server's CPU target for its tasks (every kernel must have a template), so a network the registry accepts is
 * one it can build. Only then is it stored (store_network_put). Nothing here speaks HTTP; thread-safe. */
#ifndef SRV_UPLOAD_H
#define SRV_UPLOAD_H

#include <jansson.h>
#include <stddef.h>

#include "store.h"
#include "th_status.h"

/* The naming rule of uploaded networks, for messages. */
#define SRV_NETWORK_NAME_RULE                                                                                  \
  "[a-z0-9][a-z0-9._-]{0,62}: 1 to 63 lowercase letters, digits, '.', '_' and '-', starting with a letter or " \
  "digit"

/* 1 when name follows SRV_NETWORK_NAME_RULE. */
int srv_network_name_ok(const char *name);

typedef struct srv_upload_in {
  const char *name;
  const char *path;   /* the ONNX file */
  int take;           /* 1: path is a store_tmp_file file, renamed into the store on success */
  const char *sha256; /* path's sha256 (hex) when known, else NULL */
  const char *shapes; /* the importer's shapes string, or NULL */
} srv_upload_in;

/* Validates and stores the network. On TH_OK *doc (owned) is its GET /networks/{name} document as stored and
 * *change (free its jobs) what changed (store_network_put). Errors, with a message in err (1024 bytes or more
 * keep the importer's list of unsupported operators whole):
 *   TH_ERR_INVALID      a bad name (the rule is in the message), or a file the importer refuses (not ONNX,
 *                       truncated, an opset out of range, bad initializer data, a size past the limits, a cycle,
 *                       a dangling input, a bad shapes string);
 *   TH_ERR_UNSUPPORTED  operators the importer, or this server's CPU templates, do not map (listed);
 *   TH_ERR_CONFLICT     a zoo network's name;
 *   TH_ERR_IO, TH_ERR_NOMEM, the store's errors.
 * Nothing is stored on an error; a taken file is left for the caller to remove. */
th_status srv_upload_network(store_t *st, const srv_upload_in *in, json_t **doc, store_network_change *change,
                             char *err, size_t n);

#endif
