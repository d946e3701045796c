/* Live job progress over Server-Sent Events (GET /jobs/{id}/events) and the scheduler's state (GET /scheduler).
 *
 * The scheduler's typed events (stage, progress, published, done) land in a bounded ring per job, each with a
 * per-job sequence number that is the SSE `id:`. A stream is a libmicrohttpd content-reader response: the
 * reader copies out what is pending and, when nothing is, suspends its connection; an event for the job, a
 * heartbeat deadline or shutdown resumes it. No thread ever spins on a stream. A client that reconnects with
 * Last-Event-ID gets the events after that id from the ring; when the ring no longer holds them (too far
 * behind, or the daemon restarted and numbering began again) it first gets a fresh `progress` snapshot. A
 * stream of a finished job sends the snapshot and `done` at once, and every stream ends after `done`. Streams
 * are capped per client address and in total. A ring that a stream follows is never evicted (a new
 * stream that finds every ring followed is refused instead), and when the daemon has tokens, streams
 * without one may follow at most half the rings alone: anonymous streams can neither end a stream
 * that others follow nor take every ring. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "events.h"
#include "srv_limits.h"

#include "present.h"
#include "request.h"
#include "response.h"
#include "scheduler.h"
#include "th_alloc.h"
#include "th_log.h"
#include "th_util.h"

#define EV_RING 256
#define EV_JOBS 64
#define EV_KEEPALIVE_S 15.0

typedef struct ev_item {
  int64_t id;
  int kind; /* tune_event_kind */
  char *data;
} ev_item;

typedef struct ev_job {
  int64_t job; /* 0: free slot */
  int64_t seq; /* id of the newest event */
  ev_item ring[EV_RING];
  int count;  /* items held: ids seq-count+1 .. seq */
  int done;
  double touched;
  char *last_progress;
} ev_job;

typedef struct ev_stream {
  struct ev_stream *next;
  srv_events *E;
  int64_t job;
  int64_t last_sent;
  struct MHD_Connection *con;
  th_buf out;
  size_t off;
  int suspended;
  int ended; /* end once out is drained */
  double next_ka;
  char ip[64];
  int anon; /* opened without a bearer token */
} ev_stream;

struct srv_events {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  ev_job jobs[EV_JOBS];
  ev_stream *streams;
  int nstreams;
  int max_total, max_per_ip;
  int stopping;
  pthread_t timer;
  int timer_started;
};

static const char *const ev_kind_names[] = {"stage", "progress", "published", "done"};

/* ---- the per-job rings ---- */

static ev_job *ev__find(srv_events *E, int64_t job) {
  for (int i = 0; i < EV_JOBS; i++)
    if (E->jobs[i].job == job) return &E->jobs[i];
  return NULL;
}

static void ev__job_clear(ev_job *j) {
  for (int i = 0; i < EV_RING; i++) {
    free(j->ring[i].data);
    j->ring[i].data = NULL;
  }
  free(j->last_progress);
  memset(j, 0, sizeof *j);
}

static void ev__resume(ev_stream *st) {
  if (st->suspended) {
    st->suspended = 0;
    MHD_resume_connection(st->con);
  }
}

/* Who follows job: 0 nobody, 1 anonymous streams only, 2 a stream with a token. Caller holds mu. */
static int ev__followers(const srv_events *E, int64_t job) {
  int f = 0;
  for (const ev_stream *st = E->streams; st && f < 2; st = st->next)
    if (st->job == job && !st->ended) f = st->anon ? 1 : 2;
  return f;
}

/* Rings that only anonymous streams follow. Caller holds mu. */
static int ev__anon_rings(const srv_events *E) {
  int n = 0;
  for (int i = 0; i < EV_JOBS; i++) n += E->jobs[i].job && ev__followers(E, E->jobs[i].job) == 1;
  return n;
}

/* The slot of job, made when absent: a free slot, else the least recently used finished job's, else
 * the least recently used, of the jobs no stream follows; NULL when every ring is followed. Caller
 * holds mu. */
static ev_job *ev__slot(srv_events *E, int64_t job) {
  ev_job *j = ev__find(E, job);
  if (j) return j;
  ev_job *victim = NULL;
  for (int i = 0; i < EV_JOBS && !victim; i++)
    if (E->jobs[i].job == 0) victim = &E->jobs[i];
  for (int pass = 0; pass < 2 && !victim; pass++)
    for (int i = 0; i < EV_JOBS; i++) {
      ev_job *c = &E->jobs[i];
      if ((pass == 1 || c->done) && (!victim || c->touched < victim->touched) &&
          !ev__followers(E, c->job))
        victim = c;
    }
  if (!victim) return NULL;
  if (victim->job) ev__job_clear(victim);
  victim->job = job;
  victim->touched = th_now_mono();
  return victim;
}

void srv_events_on_job(void *ctx, const tune_event *ev) {
  srv_t *s = ctx;
  srv_events *E = s->events;
  if (!E) return;
  int64_t job_id = ev->job_id;
  tune_event_kind kind = ev->kind;
  char *json = srv_present_event(ev);
  if (!json) return;
  pthread_mutex_lock(&E->mu);
  ev_job *j = ev__slot(E, job_id);
  if (!j) { /* every ring is followed and nobody follows this job: a stream starts from the store */
    pthread_mutex_unlock(&E->mu);
    free(json);
    return;
  }
  int slot = (int)(++j->seq % EV_RING);
  free(j->ring[slot].data);
  j->ring[slot].id = j->seq;
  j->ring[slot].kind = (int)kind;
  j->ring[slot].data = json;
  if (j->count < EV_RING) j->count++;
  j->touched = th_now_mono();
  if (kind == TUNE_EV_PROGRESS) {
    free(j->last_progress);
    j->last_progress = th_strdup(json);
  }
  if (kind == TUNE_EV_DONE) j->done = 1;
  for (ev_stream *st = E->streams; st; st = st->next)
    if (st->job == job_id) ev__resume(st);
  pthread_mutex_unlock(&E->mu);
}

/* ---- formatting ---- */

static void ev__append(ev_stream *st, int64_t id, const char *event, const char *data) {
  th_buf_appendf(&st->out, "id: %lld\nevent: %s\n", (long long)id, event);
  /* data may not hold newlines (compact JSON never does); split defensively */
  const char *p = data;
  for (;;) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    th_buf_append(&st->out, "data: ", 6);
    th_buf_append(&st->out, p, len);
    th_buf_append(&st->out, "\n", 1);
    if (!nl) break;
    p = nl + 1;
  }
  th_buf_append(&st->out, "\n", 1);
}

/* Appends the current progress (and done, when the job has ended) as of the ring's newest id. Caller holds
 * mu. */
static void ev__snapshot(ev_stream *st, ev_job *j) {
  ev__append(st, j->seq, "progress", j->last_progress ? j->last_progress : "{}");
  st->last_sent = j->seq;
  ev_item *it = &j->ring[j->seq % EV_RING];
  if (j->done && it->id == j->seq && it->kind == TUNE_EV_DONE && it->data) {
    ev__append(st, j->seq, "done", it->data);
    st->ended = 1;
  }
}

/* Appends the ring's events after st->last_sent (a snapshot first when some were lost). Caller holds mu. */
static void ev__drain_ring(ev_stream *st, ev_job *j) {
  int64_t oldest = j->seq - j->count + 1;
  if (st->last_sent < oldest - 1 || st->last_sent > j->seq) {
    /* too far behind (or ids from an earlier daemon): a fresh snapshot, then what is new */
    ev__snapshot(st, j);
    return;
  }
  for (int64_t id = st->last_sent + 1; id <= j->seq; id++) {
    ev_item *it = &j->ring[id % EV_RING];
    if (it->id != id || !it->data) continue;
    ev__append(st, id, ev_kind_names[it->kind], it->data);
    st->last_sent = id;
    if (it->kind == TUNE_EV_DONE) st->ended = 1;
  }
}

static ssize_t ev__reader(void *cls, uint64_t pos, char *buf, size_t max) {
  (void)pos;
  ev_stream *st = cls;
  srv_events *E = st->E;
  pthread_mutex_lock(&E->mu);
  if (st->off >= st->out.len) {
    st->out.len = 0;
    st->off = 0;
    if (!st->ended && !E->stopping) {
      ev_job *j = ev__find(E, st->job);
      if (j) ev__drain_ring(st, j);
      double now = th_now_mono();
      if (st->out.len == 0 && now >= st->next_ka) th_buf_append(&st->out, ": keepalive\n\n", 13);
      if (st->out.len > 0) st->next_ka = now + EV_KEEPALIVE_S;
    }
  }
  if (st->off < st->out.len) {
    size_t n = st->out.len - st->off;
    if (n > max) n = max;
    memcpy(buf, st->out.data + st->off, n);
    st->off += n;
    pthread_mutex_unlock(&E->mu);
    return (ssize_t)n;
  }
  if (st->ended || E->stopping) {
    pthread_mutex_unlock(&E->mu);
    return MHD_CONTENT_READER_END_OF_STREAM;
  }
  /* nothing to send: park the connection until an event, the heartbeat or shutdown resumes it */
  st->suspended = 1;
  MHD_suspend_connection(st->con);
  pthread_mutex_unlock(&E->mu);
  return 0;
}

static void ev__free(void *cls) {
  ev_stream *st = cls;
  srv_events *E = st->E;
  pthread_mutex_lock(&E->mu);
  ev_stream **pp = &E->streams;
  while (*pp && *pp != st) pp = &(*pp)->next;
  if (*pp) {
    *pp = st->next;
    E->nstreams--;
  }
  pthread_mutex_unlock(&E->mu);
  th_buf_free(&st->out);
  free(st);
}

/* Resumes parked streams whose heartbeat is due; sleeps until the next one. */
static void *ev__timer(void *arg) {
  srv_events *E = arg;
  pthread_mutex_lock(&E->mu);
  while (!E->stopping) {
    double now = th_now_mono(), next = now + EV_KEEPALIVE_S;
    for (ev_stream *st = E->streams; st; st = st->next) {
      if (!st->suspended) continue;
      if (st->next_ka <= now)
        ev__resume(st);
      else if (st->next_ka < next)
        next = st->next_ka;
    }
    double wait = next - now;
    struct timespec ts = th_deadline_in(wait < 0.05 ? 0.05 : wait);
    pthread_cond_timedwait(&E->cv, &E->mu, &ts);
  }
  for (ev_stream *st = E->streams; st; st = st->next) ev__resume(st);
  pthread_mutex_unlock(&E->mu);
  return NULL;
}

th_status srv_events_new(int max_total, int max_per_ip, srv_events **out) {
  srv_events *E = th_calloc(1, sizeof *E);
  if (!E) return TH_ERR_NOMEM;
  E->max_total = max_total;
  E->max_per_ip = max_per_ip;
  pthread_mutex_init(&E->mu, NULL);
  pthread_cond_init(&E->cv, NULL);
  if (pthread_create(&E->timer, NULL, ev__timer, E) != 0) {
    pthread_mutex_destroy(&E->mu);
    pthread_cond_destroy(&E->cv);
    free(E);
    return TH_ERR_NOMEM;
  }
  E->timer_started = 1;
  *out = E;
  return TH_OK;
}

void srv_events_stop(srv_events *E) {
  if (!E) return;
  pthread_mutex_lock(&E->mu);
  E->stopping = 1;
  pthread_cond_signal(&E->cv);
  pthread_mutex_unlock(&E->mu);
  if (E->timer_started) pthread_join(E->timer, NULL); /* resumes every parked stream: they end */
  E->timer_started = 0;
}

void srv_events_free(srv_events *E) {
  if (!E) return;
  srv_events_stop(E);
  for (int i = 0; i < EV_JOBS; i++) ev__job_clear(&E->jobs[i]);
  pthread_mutex_destroy(&E->mu);
  pthread_cond_destroy(&E->cv);
  free(E);
}

/* ---- routes ---- */

enum MHD_Result srv_events_route(srv_t *s, srv_request *r, const char *id_text) {
  int64_t id = 0;
  if (th_parse_i64(id_text, &id) != TH_OK || id < 1)
    return srv_error(s, r, TH_ERR_INVALID, "invalid_job", NULL, "invalid job id '%s'; ids are positive whole numbers", id_text);
  store_job job;
  th_status rc = store_job_get(s->st, id, &job);
  if (rc == TH_ERR_NOT_FOUND) return srv_error(s, r, TH_ERR_NOT_FOUND, "job_not_found", NULL, "no job %lld", (long long)id);
  if (rc != TH_OK) return srv_error(s, r, rc, "store_error", NULL, "%s", store_errmsg(s->st));
  int64_t last = 0;
  const char *lei = MHD_lookup_connection_value(r->con, MHD_HEADER_KIND, "Last-Event-ID");
  if (srv_last_event_id_parse(lei, &last) != 0) {
    store_job_clear(&job);
    return srv_error(s, r, TH_ERR_INVALID, "invalid_last_event_id", NULL,
                     "Last-Event-ID must be an event id (a whole number) from this stream, got '%s'", lei);
  }
  srv_events *E = s->events;
  char ip[64];
  srv_client_ip(r->con, ip, sizeof ip);
  ev_stream *st = th_calloc(1, sizeof *st);
  if (!st) {
    store_job_clear(&job);
    return MHD_NO;
  }
  st->E = E;
  st->job = id;
  st->con = r->con;
  snprintf(st->ip, sizeof st->ip, "%s", ip);
  st->anon = !srv_token_holder(s, r);
  th_buf_init(&st->out, 8 << 20);
  int terminal = job.state != STORE_JOB_QUEUED && job.state != STORE_JOB_RUNNING;

  pthread_mutex_lock(&E->mu);
  int per_ip = 0;
  for (ev_stream *o = E->streams; o; o = o->next) per_ip += !strcmp(o->ip, ip);
  ev_job *j = ev__find(E, id);
  /* a live job without a ring needs one: never a followed one, and anonymous streams alone follow at
   * most half of them when the daemon has tokens */
  int capped = E->stopping || E->nstreams >= E->max_total || per_ip >= E->max_per_ip, ring_full = 0;
  if (!capped && !terminal && !j) {
    if (st->anon && s->have_token && ev__anon_rings(E) >= EV_JOBS / 2)
      ring_full = 1;
    else if (!(j = ev__slot(E, id)))
      ring_full = 2;
  }
  if (capped || ring_full) {
    int total = E->nstreams >= E->max_total;
    /* A parked stream does not notice that its client left: probe them now (a keepalive write to a closed
     * socket ends the stream), so a client that reconnects after Retry-After finds its slots free. */
    for (ev_stream *o = E->streams; o; o = o->next)
      if (total || ring_full || !strcmp(o->ip, ip)) {
        o->next_ka = 0;
        ev__resume(o);
      }
    pthread_mutex_unlock(&E->mu);
    store_job_clear(&job);
    th_buf_free(&st->out);
    free(st);
    char msg[256];
    if (total)
      snprintf(msg, sizeof msg, "too many event streams are open (the limit is %d); retry later", E->max_total);
    else if (ring_full == 1)
      snprintf(msg, sizeof msg,
               "streams without a token already follow %d jobs, their share of the %d event rings; "
               "retry later, or send a bearer token",
               EV_JOBS / 2, EV_JOBS);
    else if (ring_full == 2)
      snprintf(msg, sizeof msg,
               "streams follow %d jobs already, all this server keeps events for; retry later", EV_JOBS);
    else
      snprintf(msg, sizeof msg,
               "this client (%s) already has %d event streams open (the limit is %d per client); close one "
               "or retry later", ip, per_ip, E->max_per_ip);
    unsigned int http = (unsigned int)th_status_http(TH_ERR_BUSY);
    struct MHD_Response *resp = srv_error_response(http, "too_many_streams", NULL, msg);
    if (resp) MHD_add_response_header(resp, "Retry-After", "1");
    return srv_queue(s, r, http, resp);
  }
  th_buf_appendf(&st->out, "retry: 3000\n\n");
  if (terminal && !(j && j->done)) {
    /* finished before this daemon saw its events (or they were evicted): snapshot + done from the store */
    int64_t sid = j ? j->seq + 1 : 1;
    ev__append(st, sid, "progress", job.progress && *job.progress ? job.progress : "{}");
    tune_event done = {.kind = TUNE_EV_DONE, .job_id = id, .state = job.state, .error = job.error};
    char *dt = srv_present_event(&done);
    ev__append(st, sid + 1, "done", dt ? dt : "{}");
    free(dt);
    st->ended = 1;
  } else {
    if (!j->last_progress && job.progress && *job.progress) j->last_progress = th_strdup(job.progress);
    if (last > 0) {
      st->last_sent = last; /* resume: the ring's events after it, or a snapshot when they are gone */
      ev__drain_ring(st, j);
    } else {
      ev__snapshot(st, j); /* a new stream: the current progress, then what happens next */
    }
  }
  st->next_ka = th_now_mono() + EV_KEEPALIVE_S;
  st->next = E->streams;
  E->streams = st;
  E->nstreams++;
  pthread_mutex_unlock(&E->mu);
  store_job_clear(&job);

  struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, ev__reader, st, ev__free);
  if (!resp) {
    ev__free(st);
    return MHD_NO;
  }
  MHD_add_response_header(resp, "Content-Type", "text/event-stream");
  MHD_add_response_header(resp, "Cache-Control", "no-store");
  MHD_add_response_header(resp, "X-Accel-Buffering", "no");
  return srv_queue(s, r, 200, resp);
}

enum MHD_Result srv_scheduler_route(srv_t *s, srv_request *r) {
  tune_sched_info info;
  th_status rc = tune_workers_info(s->workers, &info);
  if (rc != TH_OK)
    return srv_error(s, r, rc, "scheduler_error", NULL, "cannot describe the scheduler: %s", th_status_str(rc));
  store_job *jobs = NULL;
  size_t njobs = 0;
  if (store_job_list(s->st, "queued", 100, &jobs, &njobs) != TH_OK) rc = TH_ERR_IO;
  th_buf b;
  th_buf_init(&b, 4 << 20);
  if (rc == TH_OK) rc = srv_present_scheduler(&info, srv_present_jobs(jobs, njobs), &b);
  store_job_list_free(jobs, njobs);
  tune_sched_info_free(&info);
  if (rc != TH_OK) {
    th_buf_free(&b);
    return srv_error(s, r, rc, "scheduler_error", NULL, "cannot describe the scheduler: %s", th_status_str(rc));
  }
  enum MHD_Result ret = srv_json(s, r, 200, b.data);
  th_buf_free(&b);
  return ret;
}
