/* The scheduling policy (see sched_policy.h): the pure pick over plain structs and the learned
 * stage-duration estimates. Nothing here locks, sleeps, reads a clock or touches the store: the
 * runtime (scheduler.c) passes the state in and applies the answer. */
#include "sched_policy.h"

/* ---- the pure decision ---- */

static int tune__uses_cpu(const tune_sched_resources *r, const tune_sched_cand *c) {
  int dev_cpu = c->device >= 0 && c->device < r->ndevices && r->device_is_cpu[c->device];
  return dev_cpu || c->cpu_min != 0;
}

/* 1 when c's memory estimate fits beside the running stages' (or none that holds memory runs). */
static int tune__mem_fits(const tune_sched_resources *r, const tune_sched_cand *c) {
  return c->mem_bytes <= 0 || r->mem_budget <= 0 || r->mem_busy <= 0 || r->mem_busy + c->mem_bytes <= r->mem_budget;
}

/* 1 when c can start now; *grant = the CPU slots it gets. */
static int tune__fits(const tune_sched_resources *r, const tune_sched_cand *c, int *grant) {
  *grant = 0;
  if (c->device >= r->ndevices) return 0;
  if (!tune__mem_fits(r, c)) return 0;
  if (c->device >= 0 && r->device_busy[c->device]) return 0;
  int dev_cpu = c->device >= 0 && r->device_is_cpu[c->device];
  int free_slots = r->cpu_total - r->cpu_busy;
  if (dev_cpu || c->cpu_min < 0) { /* the whole pool: a CPU measurement, or a stage that asks for it all */
    if (r->cpu_busy != 0) return 0;
    *grant = r->cpu_total;
    return 1;
  }
  if (c->cpu_min == 0) return 1;
  int need = c->cpu_min > r->cpu_total ? r->cpu_total : c->cpu_min;
  if (free_slots < need || free_slots < 1) return 0;
  int max = c->cpu_max < 0 || c->cpu_max > r->cpu_total ? r->cpu_total : c->cpu_max;
  *grant = free_slots < max ? free_slots : max;
  if (*grant < need) *grant = need;
  return 1;
}

static double tune__score(const tune_sched_cand *c, double now, double aging_s) {
  double waited = now - c->ready_at;
  if (waited < 0) waited = 0;
  return (double)c->priority + waited / aging_s;
}

int tune_sched_pick(const tune_sched_resources *r, const tune_sched_cand *c, int n, double now,
                    const tune_sched_policy *p, int *cpu_grant) {
  double aging = p && p->aging_s > 0 ? p->aging_s : 5.0;
  int order[256];
  if (n > 256) n = 256;
  for (int i = 0; i < n; i++) order[i] = i;
  /* best first: score, then the shorter estimate, then the older job */
  for (int i = 1; i < n; i++) {
    int k = order[i], j = i;
    double sk = tune__score(&c[k], now, aging);
    while (j > 0) {
      const tune_sched_cand *a = &c[order[j - 1]];
      double sa = tune__score(a, now, aging);
      int before = sk > sa + 1e-12 ||
                   (sk > sa - 1e-12 && (c[k].estimate_s < a->estimate_s ||
                                        (c[k].estimate_s == a->estimate_s && c[k].job < a->job)));
      if (!before) break;
      order[j] = order[j - 1];
      j--;
    }
    order[j] = k;
  }
  /* reservations held by the best blocked stage on each resource: when it could start */
  double cpu_resv = -1, dev_resv[TUNE_SCHED_MAX_DEVICES];
  int mem_resv = 0; /* a better stage waits for memory: no later one may take memory before it */
  for (int d = 0; d < TUNE_SCHED_MAX_DEVICES; d++) dev_resv[d] = -1;
  for (int oi = 0; oi < n; oi++) {
    const tune_sched_cand *x = &c[order[oi]];
    int uses_cpu = tune__uses_cpu(r, x);
    int dev = x->device >= 0 && x->device < r->ndevices ? x->device : -1;
    double end = now + (x->estimate_s > 0 ? x->estimate_s : 0);
    int conflict = (uses_cpu && cpu_resv >= 0 && end > cpu_resv) || (dev >= 0 && dev_resv[dev] >= 0 && end > dev_resv[dev]) ||
                   (mem_resv && x->mem_bytes > 0);
    int grant = 0;
    if (!conflict && tune__fits(r, x, &grant)) {
      if (cpu_grant) *cpu_grant = grant;
      return order[oi];
    }
    if (conflict) continue;
    /* blocked: reserve what it waits for, from the time the holders are expected to end */
    double at = now;
    if (uses_cpu && r->cpu_busy > 0 && r->cpu_free_at > at) at = r->cpu_free_at;
    if (dev >= 0 && r->device_busy[dev] && r->device_free_at[dev] > at) at = r->device_free_at[dev];
    if (uses_cpu && cpu_resv < 0) cpu_resv = at;
    if (dev >= 0 && dev_resv[dev] < 0) dev_resv[dev] = at;
    if (!tune__mem_fits(r, x)) mem_resv = 1;
  }
  return -1;
}

/* ---- estimates ---- */

static const char *const tune__kind_names[TUNE_SK_COUNT] = {"quick", "select", "build", "measure",
                                                            "update", "rebuild", "job"};
static const double tune__kind_prior[TUNE_SK_COUNT] = {10.0, 0.05, 2.0, 2.0, 0.05, 10.0, 10.0};

const char *tune_sched_kind_str(int kind) {
  return kind >= 0 && kind < TUNE_SK_COUNT ? tune__kind_names[kind] : "unknown";
}

void tune_sched_estimates_init(tune_sched_estimates *e) {
  for (int i = 0; i < TUNE_SK_COUNT; i++) {
    e->mean_s[i] = tune__kind_prior[i];
    e->samples[i] = 0;
  }
}

void tune_sched_estimates_add(tune_sched_estimates *e, int kind, double seconds) {
  if (kind < 0 || kind >= TUNE_SK_COUNT || seconds < 0) return;
  e->mean_s[kind] = e->samples[kind] == 0 ? seconds : 0.7 * e->mean_s[kind] + 0.3 * seconds;
  e->samples[kind]++;
}

const char *tune_sched_stage_str(int kind) {
  switch (kind) {
    case TUNE_SK_SELECT: return "select";
    case TUNE_SK_MEASURE: return "measure";
    case TUNE_SK_UPDATE: return "update";
    case TUNE_SK_REBUILD: return "rebuild";
    default: return "build";
  }
}

const char *tune_sched_phase_str(int kind) {
  switch (kind) {
    case TUNE_SK_QUICK: return "quick";
    case TUNE_SK_REBUILD: return "rebuild";
    case TUNE_SK_JOB: return "job";
    default: return "tune";
  }
}
