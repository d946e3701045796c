/* tune_net: a network's name (or a job's key) resolved through the store into the compiler's tc_netsrc, the one
 * step where the tuner turns the registry's names into what the compiler builds (server -> store -> tuner ->
 * compiler): a zoo name stays a zoo source; an uploaded name becomes its ONNX file in the store and its shapes.
 * Thread-safe for distinct outputs. */
#ifndef TUNE_NET_H
#define TUNE_NET_H

#include <stddef.h>

#include "store.h"
#include "tc/network.h"
#include "th_status.h"

/* src points into the struct's own fields: keep a tune_net where tune_net_resolve wrote it (a copy would point
 * into the original). */
typedef struct tune_net {
  tc_netsrc src;        /* hand &net.src to the compiler while net lives */
  char name[64];
  char onnx_path[TH_PATH_MAX]; /* "" for a zoo network */
  char *shapes;         /* owned, or NULL */
  char digest[65];      /* the network's revision (store_key.net_digest): "" for a zoo network */
  int version;          /* an uploaded network's version; 0 for a zoo network */
} tune_net;

/* Resolves name into *out (free it with tune_net_free): a zoo name without asking the store (st may be NULL for
 * the zoo alone), else the uploaded network of that name. digest NULL takes the network's current revision; a
 * digest (a job's store_key.net_digest) must be the current one. Errors, with a message in err:
 * TH_ERR_NOT_FOUND (no such network: the message lists the valid names), TH_ERR_CONFLICT (the network was
 * replaced by a newer upload or deleted since the digest was taken), the store's errors. *out is written on TH_OK
 * only. */
th_status tune_net_resolve(store_t *st, const char *name, const char *digest, tune_net *out, char *err, size_t n);
/* Frees what tune_net_resolve put in net (not net itself); accepts NULL. */
void tune_net_free(tune_net *net);
/* "resnet-18, ..., mynet": the zoo's names and then the uploaded ones in st (st may be NULL), for messages; out
 * is always terminated. */
void tune_net_names(store_t *st, char *out, size_t n);

#endif
