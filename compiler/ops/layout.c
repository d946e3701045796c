/* Layout transform NCHW[in_cb]c -> NCHW[out_cb]c (cb = 1 is plain NCHW), inserted by the graph passes at
 * the edges of blocked regions. It is the channel copy of concat.c with offset 0. */
#include "ops_int.h"

static th_status space(const tc_workload *wl, const tc_target *t, tc_space *s) {
  int vl = tc__copy_lanes(wl, t);
  return tc_space_add(s, "vec", TC_KNOB_ANNOTATE, 1, 1, &vl);
}

static th_status fallback(const tc_workload *wl, const tc_target *t, const tc_space *s, tc_config *c) {
  (void)wl;
  (void)t;
  (void)s;
  c->idx[0] = 0;
  return TH_OK;
}

const tc__op tc__op_layout = {TC_KERNEL_LAYOUT, space, fallback, NULL, tc__lower_copy, NULL};
