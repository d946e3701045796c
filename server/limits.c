/* Per-client limits on work a request can queue. An anonymous client may cause at most --miss-rate new jobs a
 * minute (a token bucket per client address holding a minute's worth, refilled continuously); a miss on a key
 * whose job is already queued or running costs nothing, and a request with a valid tune token is not counted.
 * Past the limit a miss answers 429 with Retry-After (the seconds until the bucket holds one job again), and
 * nothing is queued. The table of buckets is bounded: when full, the bucket idle longest is reused (a client
 * that comes back after that starts full, which only ever errs on the client's side).
 *
 * An anonymous client's new jobs are also counted while they live (queued or running): at most
 * --anon-jobs-per-ip per address and, when the daemon has tokens, at most --anon-queue-share
 * percent of --max-queued for all anonymous clients together, so that token holders always find
 * room in the queue. The table of live anonymous jobs is this daemon's: a job is known live until
 * an event of its own (or a relay resync) marks it stale, and a stale one is looked up in the store
 * when next counted. Here "anonymous" means without a tune token: a read token's misses count too.
 *
 * srv_request_scopes counts failed authentications per address (auth.h's srv_auth_fails), so that a miss's
 * token check is no oracle for guessing tokens either. */
#include "srv_limits.h"

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "th_alloc.h"
#include "th_log.h"
#include "th_util.h"

#define LIM_BUCKETS 4096
#define LIM_ANON_RETRY_S 30 /* Retry-After of a refusal for live jobs: about a quick build */

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

int srv_token_holder(srv_t *s, srv_request *r) {
  return srv_request_scopes(s, r, NULL) != 0; /* a wrong token counts as a failed authentication */
}

/* ---- live anonymous jobs ---- */

struct srv_anon_job {
  char ip[48];
  int64_t job;                /* 0 while pending reserves it (between admit and srv_miss_done) */
  const srv_request *pending; /* the reserving request; NULL once the job is known */
  int stale;                  /* the job changed since last seen live: look it up when counting */
};

/* Drops the entries whose jobs ended, looking up the stale ones; counts the live ones, in all and
 * of ip. Caller holds anon_mu. */
static void lim__anon_count(srv_t *s, const char *ip, int *all, int *of_ip) {
  *all = *of_ip = 0;
  for (int i = 0; i < s->nanon;) {
    struct srv_anon_job *a = &s->anon[i];
    if (a->job && a->stale) {
      store_job j;
      th_status rc = store_job_get(s->st, a->job, &j);
      int live = rc != TH_OK; /* a store that does not answer: counted, on the side of the limit */
      if (rc == TH_OK) {
        live = j.state == STORE_JOB_QUEUED || j.state == STORE_JOB_RUNNING;
        store_job_clear(&j);
      } else if (rc == TH_ERR_NOT_FOUND) {
        live = 0;
      }
      if (!live) {
        s->anon[i] = s->anon[--s->nanon];
        continue;
      }
      a->stale = 0;
    }
    (*all)++;
    *of_ip += !strcmp(a->ip, ip);
    i++;
  }
}

/* Reserves a place for r's job in the anonymous clients' share; 0 with why when a limit is
 * reached. Caller holds anon_mu. */
static int lim__anon_reserve(srv_t *s, srv_request *r, const char *ip, char *why, size_t n) {
  int all = 0, of_ip = 0;
  lim__anon_count(s, ip, &all, &of_ip);
  int share = -1; /* without tokens there is nobody to keep a reserve for */
  if (s->have_token) share = (int)((int64_t)s->cfg.max_queued * s->cfg.anon_queue_share / 100);
  if (s->cfg.anon_jobs_per_ip > 0 && of_ip >= s->cfg.anon_jobs_per_ip) {
    snprintf(why, n,
             "%s already has %d live jobs it caused without a token, queued or running (the limit is %d "
             "a client address, --anon-jobs-per-ip); retry when one ends, or send a bearer token",
             ip, of_ip, s->cfg.anon_jobs_per_ip);
    return 0;
  }
  if (share >= 0 && all >= share) {
    snprintf(why, n,
             "clients without a token hold %d live jobs, their whole share of the queue (%d%% of "
             "--max-queued %d, --anon-queue-share; the rest is kept for token holders); retry later, or "
             "send a bearer token",
             all, s->cfg.anon_queue_share, s->cfg.max_queued);
    return 0;
  }
  if (s->nanon == s->anon_cap) {
    int cap = s->anon_cap ? 2 * s->anon_cap : 64;
    struct srv_anon_job *grown = th_realloc(s->anon, (size_t)cap * sizeof *grown);
    if (!grown) {
      snprintf(why, n, "out of memory counting the jobs of clients without a token; retry later");
      return 0;
    }
    s->anon = grown;
    s->anon_cap = cap;
  }
  struct srv_anon_job *a = &s->anon[s->nanon++];
  memset(a, 0, sizeof *a);
  snprintf(a->ip, sizeof a->ip, "%s", ip);
  a->pending = r;
  return 1;
}

void srv_miss_done(srv_t *s, srv_request *r, int64_t job_id, int created) {
  pthread_mutex_lock(&s->anon_mu);
  for (int i = 0; i < s->nanon; i++) {
    if (s->anon[i].pending != r) continue;
    if (created) {
      s->anon[i].job = job_id;
      s->anon[i].pending = NULL;
      s->anon[i].stale = 1; /* its first event may have come before this: look it up once */
    } else {
      s->anon[i] = s->anon[--s->nanon];
    }
    break;
  }
  pthread_mutex_unlock(&s->anon_mu);
}

void srv_anon_job_changed(srv_t *s, int64_t job_id) {
  pthread_mutex_lock(&s->anon_mu);
  for (int i = 0; i < s->nanon; i++)
    if (job_id == 0 || s->anon[i].job == job_id) s->anon[i].stale = 1;
  pthread_mutex_unlock(&s->anon_mu);
}

void srv_limits_free(srv_t *s) {
  free(s->anon);
  s->anon = NULL;
  s->nanon = s->anon_cap = 0;
}

int srv_miss_admit(srv_t *s, srv_request *r, const store_key *key, char *why, size_t n, char retry[16]) {
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
  pthread_mutex_lock(&s->anon_mu);
  if (!lim__anon_reserve(s, r, ip, why, n)) {
    pthread_mutex_unlock(&s->anon_mu);
    snprintf(retry, 16, "%d", LIM_ANON_RETRY_S);
    return 0;
  }
  double wait = 0;
  int ok = s->cfg.miss_rate <= 0 || lim__take(ip, s->cfg.miss_rate, &wait);
  pthread_mutex_unlock(&s->anon_mu);
  if (ok) return 1;
  srv_miss_done(s, r, 0, 0); /* the reservation goes: nothing is queued */
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
