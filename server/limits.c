/* Per-client limits on work a request can queue. An anonymous client may cause at most --miss-rate new jobs a
 * minute (a token bucket per client address holding a minute's worth, refilled continuously); a miss on a key
 * whose job is already queued or running costs nothing, and a request with a valid tune token is not counted.
 * Past the limit a miss answers 429 with Retry-After (the seconds until the bucket holds one job again), and
 * nothing is queued. The table of buckets is bounded: when full, the bucket idle longest is reused (a client
 * that comes back after that starts full, which only ever errs on the client's side). */
/* srv_request_scopes counts failed authentications per address (auth.h's srv_auth_fails), so that a miss's
 * token check is no oracle for guessing tokens either. */
#include "limits.h"

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "auth.h"
#include "th_log.h"
#include "th_util.h"

#define LIM_BUCKETS 4096

typedef struct lim_bucket {
  char ip[48];
  double tokens;
  double at; /* monotonic time of the last refill */
} lim_bucket;

static lim_bucket lim__table[LIM_BUCKETS];
static pthread_mutex_t lim__mu = PTHREAD_MUTEX_INITIALIZER;

void srv_client_ip(struct MHD_Connection *con, char *ip, size_t n) {
  snprintf(ip, n, "?");
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(con, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  const struct sockaddr *sa = ci ? ci->client_addr : NULL;
  if (sa && sa->sa_family == AF_INET)
    inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, ip, (socklen_t)n);
  else if (sa && sa->sa_family == AF_INET6)
    inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, ip, (socklen_t)n);
}

/* Takes one job from ip's bucket at rate per minute; 0 and the seconds to wait when it is empty. */
static int lim__take(const char *ip, int rate, double *wait_s) {
  double now = th_now_mono(), per_s = rate / 60.0;
  pthread_mutex_lock(&lim__mu);
  lim_bucket *b = NULL, *idle = &lim__table[0];
  for (int i = 0; i < LIM_BUCKETS && !b; i++) {
    lim_bucket *x = &lim__table[i];
    if (!strcmp(x->ip, ip)) b = x;
    else if (x->at < idle->at) idle = x; /* an unused slot has at 0: it is taken first */
  }
  if (!b) {
    b = idle;
    snprintf(b->ip, sizeof b->ip, "%s", ip);
    b->tokens = rate;
    b->at = now;
  }
  b->tokens = fmin((double)rate, b->tokens + (now - b->at) * per_s);
  b->at = now;
  int ok = b->tokens >= 1.0;
  if (ok)
    b->tokens -= 1.0;
  else
    *wait_s = (1.0 - b->tokens) / per_s;
  pthread_mutex_unlock(&lim__mu);
  return ok;
}

int srv_miss_admit(srv_t *s, srv_request *r, const store_key *key, char *why, size_t n, char retry[16]) {
  if (s->cfg.miss_rate <= 0) return 1;
  if (srv_request_scopes(s, r, NULL) & SRV_SCOPE_TUNE)
    return 1; /* a read token's misses count as anonymous */
  store_job live;
  if (store_job_latest(s->st, key, &live) == TH_OK) {
    int joins = live.state == STORE_JOB_QUEUED || live.state == STORE_JOB_RUNNING;
    store_job_clear(&live);
    if (joins) return 1; /* it waits for work already queued */
  }
  char ip[48];
  srv_client_ip(r->con, ip, sizeof ip);
  double wait = 0;
  if (lim__take(ip, s->cfg.miss_rate, &wait)) return 1;
  snprintf(retry, 16, "%d", (int)ceil(wait));
  snprintf(why, n,
           "%s may queue at most %d new builds a minute without a token (--miss-rate); retry in %s s, or send a "
           "bearer token",
           ip, s->cfg.miss_rate, retry);
  return 0;
}

unsigned srv_request_scopes(srv_t *s, srv_request *r, int *wait_s) {
  if (wait_s) *wait_s = 0;
  const char *h = MHD_lookup_connection_value(r->con, MHD_HEADER_KIND, "Authorization");
  if (!h || !s->have_token) return 0;
  char ip[48];
  srv_client_ip(r->con, ip, sizeof ip);
  double now = th_now_mono();
  int wait = srv_auth_fails_wait(&s->auth_fails, ip, now);
  if (wait) { /* an address that guessed too often: its token is not even looked at */
    if (wait_s) *wait_s = wait;
    return 0;
  }
  unsigned granted = strncmp(h, "Bearer ", 7) == 0 ? srv_tokens_scopes(&s->tokens, h + 7) : 0;
  if (!granted) {
    srv_auth_fails_note(&s->auth_fails, ip, now);
    TH_LOG(TH_LOG_DEBUG, "%s: a bearer token that matches none (%s %s)", ip, r->method, r->path);
  }
  return granted;
}
