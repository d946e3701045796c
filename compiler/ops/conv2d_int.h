/* Internal contract between the conv2d template (conv2d.c: space, fallback, direct lowering) and
 * its Winograd path (conv2d_winograd.c). */
#ifndef TC_CONV2D_INT_H
#define TC_CONV2D_INT_H

#include <string.h>

#include "ops_int.h"

/* Floats of stack scratch (V and M) a Winograd task may use: 192 KiB, as the direct path's band. */
#define TC__WINO_SCRATCH_MAX (48 * 1024)

/* 3x3, stride 1, channel blocks that are whole vectors. */
int tc__wino_eligible(const tc_workload *wl, const tc_target *t);
/* Output tiles of m x m per image (th rows x tw columns); returns th * tw. */
int tc__wino_tiles(const tc_workload *wl, int m, int *th, int *tw);
/* Stack floats of a task with runs of nt tiles and oc tiles of ot channels. */
int64_t tc__wino_scratch_floats(const tc_workload *wl, int m, int nt, int ot);
/* The kernel: F(m x m, 3 x 3), vo oc vectors x rt tiles of accumulators, runs of nt tiles per task,
 * ng oc-tile groups. TH_ERR_INVALID for combinations it cannot build. */
th_status tc__wino_lower(const tc_workload *wl, const tc_target *t, int m, int vo, int rt, int nt,
                         int ng, tc_ir *ir, const tc_stmt **out);
void tc__wino_pack(const tc_workload *wl, int m, int ot, int p[TC_PACK_NPARAMS]);

#endif
