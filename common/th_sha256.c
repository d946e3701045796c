/* A compact, portable SHA-256. Throughput is about 200-400 MB/s, enough to hash bundles once at publish
 * time; digests are never recomputed on the serving path. */
#include "th_sha256.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

static const uint32_t th__k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

#define TH__ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void th__sha256_block(th_sha256 *s, const unsigned char *p) {
  uint32_t w[64];
  for (int i = 0; i < 16; i++)
    w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 |
           (uint32_t)p[4 * i + 3];
  for (int i = 16; i < 64; i++) {
    uint32_t s0 = TH__ROR(w[i - 15], 7) ^ TH__ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = TH__ROR(w[i - 2], 17) ^ TH__ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3], e = s->h[4], f = s->h[5], g = s->h[6],
           h = s->h[7];
  for (int i = 0; i < 64; i++) {
    uint32_t t1 = h + (TH__ROR(e, 6) ^ TH__ROR(e, 11) ^ TH__ROR(e, 25)) + ((e & f) ^ (~e & g)) +
                  th__k[i] + w[i];
    uint32_t t2 = (TH__ROR(a, 2) ^ TH__ROR(a, 13) ^ TH__ROR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  s->h[0] += a;
  s->h[1] += b;
  s->h[2] += c;
  s->h[3] += d;
  s->h[4] += e;
  s->h[5] += f;
  s->h[6] += g;
  s->h[7] += h;
}

void th_sha256_init(th_sha256 *s) {
  static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  memcpy(s->h, iv, sizeof iv);
  s->len = 0;
  s->fill = 0;
}

void th_sha256_update(th_sha256 *s, const void *data, size_t n) {
  const unsigned char *p = data;
  s->len += n;
  if (s->fill) {
    size_t take = 64 - s->fill < n ? 64 - s->fill : n;
    memcpy(s->block + s->fill, p, take);
    s->fill += take;
    p += take;
    n -= take;
    if (s->fill == 64) {
      th__sha256_block(s, s->block);
      s->fill = 0;
    }
  }
  while (n >= 64) {
    th__sha256_block(s, p);
    p += 64;
    n -= 64;
  }
  if (n) {
    memcpy(s->block, p, n);
    s->fill = n;
  }
}

void th_sha256_final(th_sha256 *s, unsigned char out[32]) {
  uint64_t bits = s->len * 8;
  unsigned char pad = 0x80;
  th_sha256_update(s, &pad, 1);
  unsigned char zero = 0;
  while (s->fill != 56) th_sha256_update(s, &zero, 1);
  unsigned char lenb[8];
  for (int i = 0; i < 8; i++) lenb[i] = (unsigned char)(bits >> (56 - 8 * i));
  th_sha256_update(s, lenb, 8);
  for (int i = 0; i < 8; i++) {
    out[4 * i] = (unsigned char)(s->h[i] >> 24);
    out[4 * i + 1] = (unsigned char)(s->h[i] >> 16);
    out[4 * i + 2] = (unsigned char)(s->h[i] >> 8);
    out[4 * i + 3] = (unsigned char)s->h[i];
  }
}

void th_hex(const unsigned char *bytes, size_t n, char *hex) {
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    hex[2 * i] = digits[bytes[i] >> 4];
    hex[2 * i + 1] = digits[bytes[i] & 15];
  }
  hex[2 * n] = '\0';
}

void th_base64(const unsigned char *in, size_t n, char *out) {
  static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t o = 0;
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)in[i] << 16;
    if (i + 1 < n) v |= (uint32_t)in[i + 1] << 8;
    if (i + 2 < n) v |= in[i + 2];
    out[o++] = t[(v >> 18) & 63];
    out[o++] = t[(v >> 12) & 63];
    out[o++] = i + 1 < n ? t[(v >> 6) & 63] : '=';
    out[o++] = i + 2 < n ? t[v & 63] : '=';
  }
  out[o] = '\0';
}

int th_is_sha256_hex(const char *s) {
  size_t i = 0;
  for (; s[i]; i++) {
    char c = s[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return 0;
  }
  return i == 64;
}

th_status th_unhex32(const char *hex, unsigned char out[32]) {
  if (!th_is_sha256_hex(hex)) return TH_ERR_INVALID;
  for (int i = 0; i < 32; i++) {
    int hi = hex[2 * i] <= '9' ? hex[2 * i] - '0' : hex[2 * i] - 'a' + 10;
    int lo = hex[2 * i + 1] <= '9' ? hex[2 * i + 1] - '0' : hex[2 * i + 1] - 'a' + 10;
    out[i] = (unsigned char)(hi << 4 | lo);
  }
  return TH_OK;
}

th_status th_sha256_file(const char *path, char hex[TH_HEX_MAX], int64_t *size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return TH_ERR_IO;
  th_sha256 s;
  th_sha256_init(&s);
  unsigned char buf[1 << 16];
  int64_t total = 0;
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0) {
      close(fd);
      return TH_ERR_IO;
    }
    if (n == 0) break;
    th_sha256_update(&s, buf, (size_t)n);
    total += n;
  }
  close(fd);
  unsigned char d[32];
  th_sha256_final(&s, d);
  th_hex(d, 32, hex);
  *size = total;
  return TH_OK;
}
