/* The ONNX importer's first look at a file: an iterative walk of the protobuf wire format (tags,
 * varints, lengths) that follows the message types of the descriptors protoc-c generated, with an
 * explicit stack, before protobuf-c unpacks anything. protobuf-c recurses once per nested message
 * and allocates every message, array and string of a file before the importer sees a count, so a
 * 30 KB file nested 3,000 graphs deep overflowed the stack and 10 MB of empty nodes asked for 750
 * MB; this walk refuses such a file, naming the limit it passed (onnx.h: TC_ONNX_MAX_DEPTH, ...),
 * or malformed wire data, having allocated nothing. The byte-budgeted allocator below is given to
 * protobuf-c as well, so that a gap in this walk still cannot allocate without bound. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_int.h"

/* What protobuf-c 1.4 allocates, charged as the allocator below counts it: each allocation costs
 * its size plus TC__OXW_HDR. Every field occurrence costs a ScannedMember (32 bytes) in slabs that
 * double, so at most 64 bytes; an unknown field keeps a copy of its bytes and a 24-byte entry. */
#define TC__OXW_HDR 16
#define TC__OXW_SCANNED 64
#define TC__OXW_UNKNOWN ((size_t)sizeof(ProtobufCMessageUnknownField))
#define TC__OXW_FIELDS 32 /* the most fields of an ONNX message type (AttributeProto has 18) */

typedef struct tc__oxw_frame {
  const ProtobufCMessageDescriptor *d;
  size_t end;                     /* offset past the message's last byte */
  int graphs;                     /* GraphProto messages on the path to this one, itself included */
  uint32_t count[TC__OXW_FIELDS]; /* occurrences (packed: elements) of each field */
} tc__oxw_frame;

typedef struct tc__oxw {
  const uint8_t *p;
  size_t len, pos, budget;
  tc__ox_wire w;
  char *err;
  size_t errlen;
} tc__oxw;

size_t tc__ox_wire_budget(size_t len) {
  return len > SIZE_MAX - TC_ONNX_PARSE_OVERHEAD ? SIZE_MAX : len + TC_ONNX_PARSE_OVERHEAD;
}

static th_status tc__oxw_fail(tc__oxw *s, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static th_status tc__oxw_fail(tc__oxw *s, size_t at, const char *fmt, ...) {
  if (!s->err || !s->errlen) return TH_ERR_INVALID;
  va_list ap;
  va_start(ap, fmt);
  size_t k = (size_t)vsnprintf(s->err, s->errlen, fmt, ap);
  va_end(ap);
  if (k < s->errlen) snprintf(s->err + k, s->errlen - k, " (at byte %zu)", at);
  return TH_ERR_INVALID;
}

/* Charges n more bytes against the budget; the error names it. */
static th_status tc__oxw_charge(tc__oxw *s, size_t n, size_t at) {
  s->w.alloc = n > SIZE_MAX - s->w.alloc ? SIZE_MAX : s->w.alloc + n;
  if (s->w.alloc <= s->budget) return TH_OK;
  return tc__oxw_fail(s, at,
                      "protobuf would allocate more than %zu bytes (the file's %zu bytes plus %zu "
                      "MiB) to unpack this file",
                      s->budget, s->len, TC_ONNX_PARSE_OVERHEAD >> 20);
}

/* Reads a varint ending before `end`: 0, or -1 when it runs past end, -2 past 10 bytes. */
static int tc__oxw_varint(const uint8_t *p, size_t end, size_t *pos, uint64_t *v) {
  uint64_t r = 0;
  for (int i = 0; i < 10; i++) {
    if (*pos >= end) return -1;
    uint8_t b = p[(*pos)++];
    r |= (uint64_t)(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) {
      *v = r;
      return 0;
    }
  }
  return -2;
}

static th_status tc__oxw_read_varint(tc__oxw *s, size_t end, uint64_t *v, const char *what) {
  size_t at = s->pos;
  int r = tc__oxw_varint(s->p, end, &s->pos, v);
  if (r == -1) return tc__oxw_fail(s, at, "malformed protobuf: the %s varint is truncated", what);
  if (r == -2)
    return tc__oxw_fail(s, at, "malformed protobuf: the %s varint is over 10 bytes", what);
  return TH_OK;
}

/* The wire type a field of type t takes when not packed, and the size of one element in a
 * repeated field's array. */
static int tc__oxw_wire_type(ProtobufCType t) {
  switch (t) {
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_FLOAT:
      return PROTOBUF_C_WIRE_TYPE_32BIT;
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
      return PROTOBUF_C_WIRE_TYPE_64BIT;
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_BYTES:
    case PROTOBUF_C_TYPE_MESSAGE:
      return PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED;
    default:
      return PROTOBUF_C_WIRE_TYPE_VARINT;
  }
}

static size_t tc__oxw_elem_size(ProtobufCType t) {
  switch (t) {
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
      return 8;
    case PROTOBUF_C_TYPE_STRING:
      return sizeof(char *);
    case PROTOBUF_C_TYPE_BYTES:
      return sizeof(ProtobufCBinaryData);
    case PROTOBUF_C_TYPE_MESSAGE:
      return sizeof(void *);
    default:
      return 4; /* 32-bit numbers, enums and protobuf_c_boolean */
  }
}

static const char *const tc__oxw_wire_names[8] = {
    "0 (varint)",    "1 (64-bit)", "2 (length-delimited)", "3 (group start)",
    "4 (group end)", "5 (32-bit)", "6 (invalid)",          "7 (invalid)"};

/* Enters a message of type d, `len` bytes from s->pos, as field f of the top frame. */
static th_status tc__oxw_push(tc__oxw *s, tc__oxw_frame *st, int *n,
                              const ProtobufCMessageDescriptor *d, size_t len, size_t at) {
  if (*n >= TC_ONNX_MAX_DEPTH)
    return tc__oxw_fail(s, at, "messages nested deeper than %d levels", TC_ONNX_MAX_DEPTH);
  if (d->n_fields > TC__OXW_FIELDS)
    return tc__oxw_fail(s, at, "message type %s has more fields than the scan tracks",
                        d->short_name);
  int graphs = *n ? st[*n - 1].graphs : 0;
  if (d == &onnx__graph_proto__descriptor && ++graphs > TC_ONNX_MAX_GRAPH_DEPTH)
    return tc__oxw_fail(s, at,
                        "graph nesting deeper than %d levels (graphs inside graph-valued "
                        "attributes of nodes)",
                        TC_ONNX_MAX_GRAPH_DEPTH);
  if (d == &onnx__node_proto__descriptor && ++s->w.nodes > TC_ONNX_MAX_NODES)
    return tc__oxw_fail(s, at, "more than %d nodes", TC_ONNX_MAX_NODES);
  tc__oxw_frame *f = &st[(*n)++];
  memset(f, 0, sizeof *f);
  f->d = d;
  f->end = s->pos + len;
  f->graphs = graphs;
  if (*n > s->w.depth) s->w.depth = *n;
  return tc__oxw_charge(s, d->sizeof_message + TC__OXW_HDR, at);
}

/* Leaves the top message: its repeated fields' arrays are allocated at that size. */
static th_status tc__oxw_pop(tc__oxw *s, const tc__oxw_frame *f) {
  th_status rc = TH_OK;
  for (unsigned i = 0; rc == TH_OK && i < f->d->n_fields; i++)
    if (f->d->fields[i].label == PROTOBUF_C_LABEL_REPEATED && f->count[i] > 0)
      rc = tc__oxw_charge(s, f->count[i] * tc__oxw_elem_size(f->d->fields[i].type) + TC__OXW_HDR,
                          s->pos);
  return rc;
}

/* The elements of a packed payload p[at..at+len) of type t; -1 when it is malformed. */
static int64_t tc__oxw_packed(const uint8_t *p, size_t at, size_t len, ProtobufCType t) {
  int wt = tc__oxw_wire_type(t);
  if (wt == PROTOBUF_C_WIRE_TYPE_32BIT) return len % 4 ? -1 : (int64_t)(len / 4);
  if (wt == PROTOBUF_C_WIRE_TYPE_64BIT) return len % 8 ? -1 : (int64_t)(len / 8);
  if (len > 0 && (p[at + len - 1] & 0x80)) return -1; /* the last varint is cut */
  int64_t k = 0;
  for (size_t i = 0; i < len; i++) k += !(p[at + i] & 0x80);
  return k;
}

/* One field of the message f at s->pos. */
static th_status tc__oxw_field(tc__oxw *s, tc__oxw_frame *st, int *n) {
  tc__oxw_frame *f = &st[*n - 1];
  size_t at = s->pos;
  uint64_t tag, len = 0;
  th_status rc = tc__oxw_read_varint(s, f->end, &tag, "tag");
  if (rc != TH_OK) return rc;
  int wt = (int)(tag & 7);
  uint64_t num = tag >> 3;
  if (num == 0 || num > 536870911u)
    return tc__oxw_fail(s, at, "malformed protobuf: field number %llu in %s",
                        (unsigned long long)num, f->d->short_name);
  const ProtobufCFieldDescriptor *fd = NULL;
  unsigned fi = 0;
  for (; fi < f->d->n_fields; fi++)
    if (f->d->fields[fi].id == num) {
      fd = &f->d->fields[fi];
      break;
    }
  size_t start = s->pos; /* the payload */
  switch (wt) {
    case PROTOBUF_C_WIRE_TYPE_VARINT:
      rc = tc__oxw_read_varint(s, f->end, &len, "field");
      len = s->pos - start;
      break;
    case PROTOBUF_C_WIRE_TYPE_64BIT:
    case PROTOBUF_C_WIRE_TYPE_32BIT:
      len = wt == PROTOBUF_C_WIRE_TYPE_64BIT ? 8 : 4;
      if (f->end - s->pos < len)
        rc = tc__oxw_fail(s, at, "malformed protobuf: a %d-bit value runs past the end of %s",
                          (int)len * 8, f->d->short_name);
      s->pos += len;
      break;
    case PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED:
      rc = tc__oxw_read_varint(s, f->end, &len, "length");
      start = s->pos;
      if (rc == TH_OK && len > f->end - s->pos)
        rc = tc__oxw_fail(s, at,
                          "malformed protobuf: field %llu of %s is %llu bytes long, past the end "
                          "of its message (%zu bytes left)",
                          (unsigned long long)num, f->d->short_name, (unsigned long long)len,
                          f->end - s->pos);
      break;
    default:
      rc = tc__oxw_fail(s, at, "malformed protobuf: wire type %s in %s (field %llu)",
                        tc__oxw_wire_names[wt], f->d->short_name, (unsigned long long)num);
  }
  if (rc == TH_OK) rc = tc__oxw_charge(s, TC__OXW_SCANNED, at);
  if (rc != TH_OK) return rc;
  if (!fd) { /* unknown: protobuf-c keeps a copy */
    if (wt == PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED) s->pos += len;
    return tc__oxw_charge(s, TC__OXW_UNKNOWN + len + 2 * TC__OXW_HDR, at);
  }
  int repeated = fd->label == PROTOBUF_C_LABEL_REPEATED;
  int want = tc__oxw_wire_type(fd->type);
  int packed = repeated && want != PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED &&
               wt == PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED;
  if (wt != want && !packed)
    return tc__oxw_fail(s, at, "malformed protobuf: %s.%s has wire type %s, not %s",
                        f->d->short_name, fd->name, tc__oxw_wire_names[wt],
                        tc__oxw_wire_names[want]);
  if (packed) {
    int64_t k = tc__oxw_packed(s->p, start, len, fd->type);
    if (k < 0)
      return tc__oxw_fail(s, at, "malformed protobuf: the packed values of %s.%s are cut",
                          f->d->short_name, fd->name);
    s->pos += len;
    if ((uint64_t)f->count[fi] + (uint64_t)k > UINT32_MAX)
      return tc__oxw_fail(s, at, "%s.%s holds more than 2^32 values", f->d->short_name, fd->name);
    f->count[fi] += (uint32_t)k;
    return TH_OK;
  }
  if (repeated && ++f->count[fi] > TC_ONNX_MAX_REPEATED)
    return tc__oxw_fail(s, at, "%s.%s repeats more than %d times", f->d->short_name, fd->name,
                        TC_ONNX_MAX_REPEATED);
  if (!repeated && fd->type == PROTOBUF_C_TYPE_MESSAGE && f->count[fi]++ > 0)
    return tc__oxw_fail(s, at, "%s.%s, a single message, occurs twice", f->d->short_name, fd->name);
  if (f->d == &onnx__graph_proto__descriptor && fd->id == 5 &&
      ++s->w.initializers > TC_ONNX_MAX_INITIALIZERS)
    return tc__oxw_fail(s, at, "more than %d initializers", TC_ONNX_MAX_INITIALIZERS);
  if (fd->type == PROTOBUF_C_TYPE_MESSAGE)
    return tc__oxw_push(s, st, n, fd->descriptor, len, at); /* pos stays at its first field */
  s->pos = start + len;
  if (fd->type == PROTOBUF_C_TYPE_STRING) return tc__oxw_charge(s, len + 1 + TC__OXW_HDR, at);
  if (fd->type == PROTOBUF_C_TYPE_BYTES) return tc__oxw_charge(s, len + TC__OXW_HDR, at);
  return TH_OK;
}

th_status tc__ox_wire_scan(const void *data, size_t len, tc__ox_wire *out, char *err,
                           size_t errlen) {
  tc__oxw s = {
      .p = data, .len = len, .budget = tc__ox_wire_budget(len), .err = err, .errlen = errlen};
  if (err && errlen) err[0] = '\0';
  if (!data && len) return tc__oxw_fail(&s, 0, "no data");
  tc__oxw_frame st[TC_ONNX_MAX_DEPTH];
  int n = 0;
  th_status rc = tc__oxw_push(&s, st, &n, &onnx__model_proto__descriptor, len, 0);
  while (rc == TH_OK && n > 0) {
    if (s.pos == st[n - 1].end) {
      rc = tc__oxw_pop(&s, &st[n - 1]);
      n--;
    } else {
      rc = tc__oxw_field(&s, st, &n);
    }
  }
  if (rc == TH_OK && out) *out = s.w;
  return rc;
}

/* ---- the byte-budgeted allocator
 * ------------------------------------------------------------------------ */

static void *tc__ox_budget_alloc(void *data, size_t size) {
  tc__ox_budget *b = data;
  if (size > SIZE_MAX - TC__OXW_HDR || size + TC__OXW_HDR > b->limit - b->used) {
    b->over = 1;
    return NULL;
  }
  unsigned char *p = malloc(size + TC__OXW_HDR);
  if (!p) return NULL;
  memcpy(p, &size, sizeof size);
  b->used += size + TC__OXW_HDR;
  if (b->used > b->peak) b->peak = b->used;
  return p + TC__OXW_HDR;
}

static void tc__ox_budget_free(void *data, void *ptr) {
  if (!ptr) return;
  tc__ox_budget *b = data;
  unsigned char *p = (unsigned char *)ptr - TC__OXW_HDR;
  size_t size;
  memcpy(&size, p, sizeof size);
  b->used -= size + TC__OXW_HDR;
  free(p);
}

void tc__ox_budget_init(tc__ox_budget *b, size_t limit) {
  memset(b, 0, sizeof *b);
  b->limit = limit;
  b->pa.alloc = tc__ox_budget_alloc;
  b->pa.free = tc__ox_budget_free;
  b->pa.allocator_data = b;
}
