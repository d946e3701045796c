/* auth: the bearer tokens that may read or change the registry, and what each may do.
 *
 * The --token-file holds one token per line, each as the token itself or as its hash, "sha256:<64
 * hex>" (the output of `tunehub hash-token`), so that the file need not hold a usable secret; then,
 * after a space, its scopes, comma-separated: `read` (the reads that `serve --private` closes to
 * anonymous clients, an uploaded network's ONNX file, and /workers in full), `tune` (queue tuning,
 * upload networks, set aliases, cancel jobs; tune implies read) and `admin` (delete models,
 * networks and aliases; admin implies tune). A line without scopes has them all, so the one-line
 * file of earlier versions keeps working. A token is at least SRV_TOKEN_MIN characters (a file with
 * a shorter one is refused at start, naming its line). Blank lines and lines starting with # are
 * ignored. Only hashes are kept in memory, and a presented token is hashed and compared with every
 * stored hash in constant time. Failed authentications are counted per client address
 * (srv_auth_fails) so that tokens cannot be guessed at the speed of the network. */
#ifndef SRV_AUTH_H
#define SRV_AUTH_H

#include <pthread.h>
#include <stddef.h>

#include "th_status.h"

/* Scope bits; a token's set is closed upwards (admin holds tune and read, tune holds read). */
enum { SRV_SCOPE_TUNE = 1, SRV_SCOPE_ADMIN = 2, SRV_SCOPE_READ = 4 };

#define SRV_MAX_TOKENS 64
/* The shortest token a token file (and hash-token) takes: 16 characters. `openssl rand -hex 32`
 * makes a token of 256 random bits; 16 characters is the floor below which a token is a password,
 * not a key. */
#define SRV_TOKEN_MIN 16
/* Failed authentications (a token presented that matches none) one client address may make in a
 * minute; past that, requests of that address that present a token answer 429 for the rest of the
 * minute, without the token being checked. */
#define SRV_AUTH_FAILS_PER_MIN 10
#define SRV_AUTH_FAIL_SLOTS 1024

typedef struct srv_tokens {
  int n;
  struct {
    unsigned char hash[32];
    unsigned scopes;
  } t[SRV_MAX_TOKENS];
} srv_tokens;

/* Parses the token file's text (see above) into *out. TH_ERR_INVALID with the line and the rule in err. */
th_status srv_tokens_parse(const char *text, srv_tokens *out, char *err, size_t n);
/* The scopes of the token presented (the text after "Bearer "), 0 when no stored token matches. */
unsigned srv_tokens_scopes(const srv_tokens *t, const char *presented);
/* The highest scope in the bits: "admin", "tune" or "read" ("none" for 0). */
const char *srv_scope_name(unsigned scope);

/* Failed authentications per client address in fixed one-minute windows. The table is bounded: when
 * full, the address whose window started first is forgotten. Thread-safe (its own mutex). */
typedef struct srv_auth_fails {
  pthread_mutex_t mu;
  int limit; /* failures an address may make per window; 0: no limit */
  struct {
    char ip[48];
    double start; /* monotonic seconds: when the address's window began; 0 for a free slot */
    int n;        /* failures in the window */
  } slot[SRV_AUTH_FAIL_SLOTS];
} srv_auth_fails;

/* limit failures a minute per address (0: none counted); srv_auth_fails_free releases the mutex. */
void srv_auth_fails_init(srv_auth_fails *f, int limit);
void srv_auth_fails_free(srv_auth_fails *f);
/* 0 when ip may present a token at monotonic time now; else the whole seconds (>= 1) until its
 * window ends. */
int srv_auth_fails_wait(srv_auth_fails *f, const char *ip, double now);
/* Counts one failed authentication of ip at now. */
void srv_auth_fails_note(srv_auth_fails *f, const char *ip, double now);
/* tunehub hash-token: reads a token from stdin (one line) and prints "sha256:<hex>" for a token file. */
int cli_hash_token(int argc, char **argv);

#endif
