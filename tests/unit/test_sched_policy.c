/* Unit tests of the scheduling policy alone (tuner/sched_policy.c), built from that one file with
 * no tuner library, store, threads or clock: each case hands tune_sched_pick a state as plain
 * structs and checks its answer. Covered here: the order among equals (score, then the shorter
 * estimate, then the older job), aging against priority, the CPU grant a stage gets from its range,
 * device slots and their reservations, and the estimates' and names' edge cases. The discrete-event
 * simulation of whole jobs is in test_scheduler.c. */
#include "sched_policy.h"
#include "th_test.h"

/* A stage that needs nothing but wants n slots at most: cpu_min 1, cpu_max n. */
static tune_sched_cand build_stage(int64_t job, int priority, double ready_at, double estimate_s) {
  return (tune_sched_cand){.job = job,
                           .priority = priority,
                           .ready_at = ready_at,
                           .cpu_min = 1,
                           .cpu_max = TUNE_SCHED_ALL_CPU,
                           .device = -1,
                           .estimate_s = estimate_s};
}

/* Equal scores: the shorter estimate first, then the older (smaller) job id, wherever they stand in
 * c. */
TH_TEST(pick_ties_shorter_then_older) {
  tune_sched_resources r = {.cpu_total = 4, .ndevices = 1, .device_is_cpu = {1}};
  tune_sched_cand c[3] = {build_stage(7, 1, 0, 5.0), build_stage(9, 1, 0, 2.0),
                          build_stage(3, 1, 0, 2.0)};
  int grant = 0;
  CHECK_EQ_INT(tune_sched_pick(&r, c, 3, 0.0, NULL, &grant), 2); /* 2 s, job 3 before job 9 */
  CHECK_EQ_INT(grant, 4);
  CHECK_EQ_INT(tune_sched_pick(&r, c, 2, 0.0, NULL, &grant), 1); /* 2 s before 5 s */
  return 0;
}

/* Score = priority + waited / aging_s: with aging 5 s (also the default for a NULL policy), a
 * priority-0 stage that waited 10 s (score 2) outranks a priority-1 stage that just arrived (score
 * 1); one that waited 4 s (score 0.8) does not; a slower aging (100 s) keeps priority first. */
TH_TEST(pick_aging_against_priority) {
  tune_sched_resources r = {.cpu_total = 1, .ndevices = 1, .device_is_cpu = {1}};
  tune_sched_cand c[2] = {build_stage(1, 1, 10.0, 1.0), build_stage(2, 0, 0.0, 1.0)};
  tune_sched_policy five = {.aging_s = 5.0}, slow = {.aging_s = 100.0};
  int grant = 0;
  CHECK_EQ_INT(tune_sched_pick(&r, c, 2, 10.0, &five, &grant), 1);
  CHECK_EQ_INT(tune_sched_pick(&r, c, 2, 10.0, NULL, &grant), 1);
  CHECK_EQ_INT(tune_sched_pick(&r, c, 2, 10.0, &slow, &grant), 0);
  c[1].ready_at = 6.0;
  CHECK_EQ_INT(tune_sched_pick(&r, c, 2, 10.0, &five, &grant), 0);
  /* a ready_at in the future counts as no wait, never as a penalty: score 1 against 0 */
  c[0].ready_at = 50.0;
  c[1].ready_at = 10.0;
  CHECK_EQ_INT(tune_sched_pick(&r, c, 2, 10.0, &five, &grant), 0);
  return 0;
}

/* The grant: as many free slots as cpu_max allows, at least cpu_min (clamped to the pool); a stage
 * whose minimum is not free waits; a stage that needs no slots gets none; one that asks for the
 * whole pool (cpu_min -1) waits until the pool is idle and then gets all of it. */
TH_TEST(pick_cpu_grant_ranges) {
  tune_sched_resources r = {.cpu_total = 8, .cpu_busy = 3, .ndevices = 1, .device_is_cpu = {1}};
  tune_sched_cand c = build_stage(1, 0, 0, 1.0);
  int grant = 0;
  c.cpu_max = 2;
  CHECK_EQ_INT(tune_sched_pick(&r, &c, 1, 0.0, NULL, &grant), 0);
  CHECK_EQ_INT(grant, 2);
  c.cpu_max = TUNE_SCHED_ALL_CPU;
  CHECK_EQ_INT(tune_sched_pick(&r, &c, 1, 0.0, NULL, &grant), 0);
  CHECK_EQ_INT(grant, 5);
  c.cpu_min = 6; /* only 5 free */
  CHECK_EQ_INT(tune_sched_pick(&r, &c, 1, 0.0, NULL, &grant), -1);
  c.cpu_min = 50; /* more than the pool: clamped to it, so it waits for the whole pool */
  CHECK_EQ_INT(tune_sched_pick(&r, &c, 1, 0.0, NULL, &grant), -1);
  r.cpu_busy = 0;
  CHECK_EQ_INT(tune_sched_pick(&r, &c, 1, 0.0, NULL, &grant), 0);
  CHECK_EQ_INT(grant, 8);
  c.cpu_min = 0;
  c.cpu_max = 0;
  r.cpu_busy = 8;
  grant = 99;
  CHECK_EQ_INT(tune_sched_pick(&r, &c, 1, 0.0, NULL, &grant), 0);
  CHECK_EQ_INT(grant, 0);
  c.cpu_min = -1;
  CHECK_EQ_INT(tune_sched_pick(&r, &c, 1, 0.0, NULL, &grant), -1);
  r.cpu_busy = 0;
  CHECK_EQ_INT(tune_sched_pick(&r, &c, 1, 0.0, NULL, &grant), 0);
  CHECK_EQ_INT(grant, 8);
  return 0;
}

/* Device slots: a measurement needs its device known (an index past ndevices never starts) and
 * free. The best stage blocked on the CPU pool also reserves its device from the time the pool
 * frees (10 s): a later stage on that device starts only if it ends by then (backfilling), while a
 * stage on another device is not held back. */
TH_TEST(pick_device_slots_and_reservations) {
  tune_sched_resources r = {.cpu_total = 2,
                            .cpu_busy = 2,
                            .cpu_free_at = 10.0,
                            .ndevices = 3,
                            .device_is_cpu = {1, 0, 0}};
  tune_sched_cand best = {
      .job = 1, .priority = 9, .cpu_min = 2, .cpu_max = 2, .device = 1, .estimate_s = 1};
  tune_sched_cand other = {.job = 2, .cpu_min = 0, .cpu_max = 0, .device = 2, .estimate_s = 50};
  tune_sched_cand same = {.job = 3, .cpu_min = 0, .cpu_max = 0, .device = 1, .estimate_s = 30};
  int grant = 0;
  tune_sched_cand c[2] = {best, other};
  CHECK_EQ_INT(tune_sched_pick(&r, c, 2, 0.0, NULL, &grant), 1); /* another device: not held back */
  c[1].device = 5;                                               /* no such device */
  CHECK_EQ_INT(tune_sched_pick(&r, c, 2, 0.0, NULL, &grant), -1);
  c[1] = same; /* ends at 30 s, after the reservation at 10 s */
  CHECK_EQ_INT(tune_sched_pick(&r, c, 2, 0.0, NULL, &grant), -1);
  CHECK_EQ_INT(tune_sched_pick(&r, &c[1], 1, 0.0, NULL, &grant), 0); /* alone, it starts */
  c[1].estimate_s = 5; /* ends before the pool frees: backfilled */
  CHECK_EQ_INT(tune_sched_pick(&r, c, 2, 0.0, NULL, &grant), 1);
  r.device_busy[1] = 1; /* and a busy device starts nothing on it */
  CHECK_EQ_INT(tune_sched_pick(&r, &c[1], 1, 0.0, NULL, &grant), -1);
  return 0;
}

/* The estimates ignore what is not a duration of a known kind, and the names answer for every kind.
 */
TH_TEST(estimates_and_names_edges) {
  tune_sched_estimates e;
  tune_sched_estimates_init(&e);
  double prior = e.mean_s[TUNE_SK_MEASURE];
  CHECK(prior > 0);
  tune_sched_estimates_add(&e, TUNE_SK_MEASURE, -1.0);
  tune_sched_estimates_add(&e, -1, 3.0);
  tune_sched_estimates_add(&e, TUNE_SK_COUNT, 3.0);
  CHECK(e.mean_s[TUNE_SK_MEASURE] == prior);
  CHECK_EQ_INT(e.samples[TUNE_SK_MEASURE], 0);
  tune_sched_estimates_add(&e, TUNE_SK_MEASURE, 0.0); /* the first sample replaces the prior */
  CHECK(e.mean_s[TUNE_SK_MEASURE] == 0.0);
  CHECK_EQ_INT(e.samples[TUNE_SK_MEASURE], 1);
  CHECK_STR(tune_sched_kind_str(TUNE_SK_QUICK), "quick");
  CHECK_STR(tune_sched_kind_str(TUNE_SK_JOB), "job");
  CHECK_STR(tune_sched_kind_str(TUNE_SK_COUNT), "unknown");
  CHECK_STR(tune_sched_stage_str(TUNE_SK_MEASURE), "measure");
  CHECK_STR(tune_sched_stage_str(TUNE_SK_QUICK), "build");
  CHECK_STR(tune_sched_phase_str(TUNE_SK_SELECT), "tune");
  CHECK_STR(tune_sched_phase_str(TUNE_SK_REBUILD), "rebuild");
  return 0;
}
