/* auth: the bearer tokens that may change the registry, and what each may do.
 *
 * The --token-file holds one token per line, each as the token itself or as its hash, "sha256:<64 hex>" (the
 * output of `tunehub hash-token`), so that the file need not hold a usable secret; then, after a space, its
 * scopes, comma-separated: `tune` (queue tuning, upload networks, set aliases, cancel jobs) and `admin` (delete
 * models, networks and aliases; admin implies tune). A line without scopes has both, so the one-line file of
 * earlier versions keeps working. Blank lines and lines starting with # are ignored. Only hashes are kept in
 * memory, and a presented token is hashed and compared with every stored hash in constant time. */
#ifndef SRV_AUTH_H
#define SRV_AUTH_H

#include <stddef.h>

#include "th_status.h"

enum { SRV_SCOPE_TUNE = 1, SRV_SCOPE_ADMIN = 2 };

#define SRV_MAX_TOKENS 64

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
/* "tune" or "admin". */
const char *srv_scope_name(unsigned scope);
/* tunehub hash-token: reads a token from stdin (one line) and prints "sha256:<hex>" for a token file. */
int cli_hash_token(void);

#endif
