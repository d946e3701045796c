/* conv2d NCHW[in_cb]c -> NCHW[out_cb]c with a register-tiled micro-kernel: a tile of VO output-channel
 * vectors (VL lanes each) x RW output columns lives in VO*RW vector accumulators for the whole reduction
 * (input-channel blocks, kh, kw, lanes), each input scalar is broadcast once and FMA'd with VO weight
 * vectors, and the fused epilogue (bias, residual, relu, clip) runs before the single store. Weights are
 * packed [oc/OT][ic/in_cb][kh][kw][in_cb][OT] (OT = VO*VL) so the kernel walks them sequentially. Border
 * padded convs first copy the input rows a task needs into a zero-bordered band on the stack (virtual padding
 * made real: [icb][band rows][padded width][in_cb]), so every tile, border and remainder included, runs the
 * same unchecked loop; the copy is shared by a group of output-channel tiles. A task is (batch, oc-tile
 * group, output-row tile), so late layers with few rows still split over the threads. Convs whose band
 * would not fit the stack fall back to bounds-checked border tiles. With tile_flat, a band's rows are one
 * flat run of positions cut into balanced tiles that wrap from one row to the next, so a 7x7 map is 9
 * tiles of 5-6 positions instead of rows of 3 + 2 + 2 columns. The kw loop stays rolled unless
 * unroll_kw asks otherwise, since unrolling it lets LLVM share broadcasts between taps and spill.
 * 3x3 stride-1 convs also have a Winograd path (knob `winograd` = m, conv2d_winograd.c), whose configs
 * read tile_oc as oc vectors, tile_ow as tiles per register tile, tile_oh as tiles per task and oc_groups
 * as for the direct path; its other knobs stay at their first value.
 * A grouped conv (wl->groups > 1, as ResNeXt's and RegNet's 3x3s) is G GEMMs in one kernel: an
 * oc tile lies inside one group (its vectors narrowed until they divide oc/G) and reduces over that
 * group's c/G input channels only, whole input blocks or, where the block holds several groups,
 * lanes of one block; weights are packed per group's channels ([oc/OT][c/G/gl][kh][kw][gl][OT], gl
 * the lanes a group reads per block); a padded band holds the task's groups' channels. No Winograd
 * path for those. A dilated conv (wl->dil_h, dil_w, DeepLab's and LR-ASPP's atrous 3x3s) reads tap
 * (kh, kw) at input row oh * sh - pt + kh * dil_h (columns alike): the same kernel and packing, its
 * band and border tiles sized by the window's span (k - 1) * dil + 1; no Winograd path either. */
#include "conv2d_int.h"
#include "th_rt.h"

/* A group's output and input channels (all of them when ungrouped). */
static int group_oc(const tc_workload *wl) {
  return wl->oc / tc_workload_groups(wl);
}
static int group_c(const tc_workload *wl) {
  return wl->c / tc_workload_groups(wl);
}

/* Input lanes a group reads per input block (the block, or the group's channels when one block
 * holds several groups) and the group's blocks. */
static int group_lanes(const tc_workload *wl) {
  return wl->in_cb < group_c(wl) ? wl->in_cb : group_c(wl);
}
static int group_blocks(const tc_workload *wl) {
  return group_c(wl) / group_lanes(wl);
}

/* Lanes per output vector: a power of two dividing the block and, grouped, the group's channels. */
static int vec_lanes(const tc_workload *wl, const tc_target *t) {
  int vl = t->simd_lanes < wl->out_cb ? t->simd_lanes : wl->out_cb;
  while (vl > 1 && group_oc(wl) % vl) vl /= 2;
  return vl < 1 ? 1 : vl;
}

#define BAND_MAX_FLOATS (48 * 1024) /* 192 KiB of stack per task */

static int has_pad(const tc_workload *wl) {
  return wl->pt || wl->pl || wl->pb || wl->pr;
}

/* Input rows and padded width the band of `toh` output rows covers. */
static int band_rows(const tc_workload *wl, int toh) {
  return (toh - 1) * wl->sh + tc_workload_span(wl, 0);
}
static int band_width(const tc_workload *wl) {
  return (wl->ow - 1) * wl->sw + tc_workload_span(wl, 1);
}
static int64_t band_floats(const tc_workload *wl, int toh) {
  return (int64_t)wl->c * band_rows(wl, toh) * band_width(wl);
}
static int use_band(const tc_workload *wl, int toh) {
  return has_pad(wl) && band_floats(wl, toh) <= BAND_MAX_FLOATS;
}

static int max_acc(const tc_target *t, int vo) {
  /* VO weight registers, one broadcast, and one spare: with all 16 ymm named, LLVM's FMA register
   * rotation spills an accumulator per step. */
  return t->nregs - vo - 2;
}

/* Output-width tiles of at most rw columns, balanced: ow = nt tiles, the first `big` of width q + 1 and
 * the rest of width q, so no narrow remainder tile starves the FMA pipes. */
static void balanced(int ow, int rw, int *nt, int *q, int *big) {
  *nt = (ow + rw - 1) / rw;
  *q = ow / *nt;
  *big = ow % *nt;
}

/* Largest transformed-weight footprints (bytes) for which the space offers Winograd F(4,3) and F(2,3).
 * Every task streams the whole U of its oc group, and a network's U all competes for the last-level cache
 * from one run to the next, so U must stay small. Measured on resnet-18 at batch 1 (znver3, 32 MiB L3, 2
 * threads): alone (kernels.sh), F(4,3) ran the 56x56x64 and 28x28x128 convs 2.7x and 3.2x faster than the
 * direct path (U 0.6 and 2.4 MiB), F(2,3) the 14x14x256 ones 1.6x (U 4 MiB), and F(2,3) on 7x7x512 (U 16
 * MiB) 1.5x slower. In the tuner's isolated timings F(4,3) on 14x14x256 (U 9 MiB) also beat F(2,3); inside
 * the network (ab.sh --layers) it was 1.27-1.38x slower, and the larger footprint slowed layers with
 * unchanged configs by 12-23%. */
#define WINO4_MAX_U_BYTES (4.0 * 1024 * 1024)
#define WINO2_MAX_U_BYTES (6.0 * 1024 * 1024)

static th_status space(const tc_workload *wl, const tc_target *t, tc_space *s) {
  int vl = vec_lanes(wl, t), nv = group_oc(wl) / vl; /* an oc tile stays inside its group */
  int vals[TC_MAX_KNOB_VALUES * TC_KNOB_WIDTH], k = 0;
  for (int vo = 1; vo <= nv && vo <= 8 && k < TC_MAX_KNOB_VALUES; vo++)
    if (nv % vo == 0) {
      vals[2 * k] = nv / vo;
      vals[2 * k + 1] = vo;
      k++;
    }
  th_status rc = tc_space_add(s, "tile_oc", TC_KNOB_SPLIT, 2, k, vals);
  k = 0;
  for (int rw = 1; rw <= wl->ow && rw <= 31 && k < TC_MAX_KNOB_VALUES; rw++) {
    vals[2 * k] = (wl->ow + rw - 1) / rw;
    vals[2 * k + 1] = rw;
    k++;
  }
  if (rc == TH_OK) rc = tc_space_add(s, "tile_ow", TC_KNOB_SPLIT, 2, k, vals);
  k = 0;
  for (int th = 1; th <= wl->oh && th <= 16 && k < TC_MAX_KNOB_VALUES; th++) {
    if ((th & (th - 1)) && wl->oh % th) continue; /* powers of two and divisors of oh */
    vals[2 * k] = (wl->oh + th - 1) / th;
    vals[2 * k + 1] = th;
    k++;
  }
  if (rc == TH_OK) rc = tc_space_add(s, "tile_oh", TC_KNOB_SPLIT, 2, k, vals);
  int unroll[2] = {0, 1};
  if (rc == TH_OK) rc = tc_space_add(s, "unroll_kw", TC_KNOB_ANNOTATE, 1, wl->kw > 1 ? 2 : 1, unroll);
  /* Output-channel tile groups per task (each group shares one input band). */
  k = 0;
  for (int g = 1; g <= wl->oc / vl && g <= 32; g *= 2) vals[k++] = g;
  if (rc == TH_OK) rc = tc_space_add(s, "oc_groups", TC_KNOB_OTHER, 1, k, vals);
  /* Input-channel chunks: the reduction runs chunk by chunk over all the task's rows, so an oc tile's
   * weights for one chunk stay in cache across rows; partial sums go through the output. */
  k = 0;
  for (int ch = 1; ch <= group_blocks(wl) && ch <= 16; ch *= 2)
    if (group_blocks(wl) % ch == 0) vals[k++] = ch;
  if (rc == TH_OK) rc = tc_space_add(s, "ic_chunks", TC_KNOB_OTHER, 1, k, vals);
  /* Output rows per register tile (padded convs, whose band holds the task's rows): with few columns
   * (7x7) a 2-row tile keeps enough accumulators in flight. */
  k = 0;
  for (int rh = 1; rh <= 4 && rh <= wl->oh; rh++) vals[k++] = rh;
  if (rc == TH_OK) rc = tc_space_add(s, "tile_rh", TC_KNOB_OTHER, 1, k, vals);
  /* Flat tiles over the band's rows (padded convs); 0, the old row-by-row tiling, comes first. */
  int flat[2] = {0, 1};
  if (rc == TH_OK) rc = tc_space_add(s, "tile_flat", TC_KNOB_ANNOTATE, 1, has_pad(wl) ? 2 : 1, flat);
  if (rc == TH_OK) tc_space_mark_added(s); /* records from before it mean 0 */
  /* Winograd tile size m (0: the direct path) */
  int wino[3] = {0, 2, 4}, nw = 1;
  if (tc__wino_eligible(wl, t)) {
    nw += 16.0 * wl->c * wl->oc * 4 <= WINO2_MAX_U_BYTES;
    nw += nw == 2 && 36.0 * wl->c * wl->oc * 4 <= WINO4_MAX_U_BYTES;
  }
  if (rc == TH_OK) rc = tc_space_add(s, "winograd", TC_KNOB_OTHER, 1, nw, wino);
  if (rc == TH_OK) tc_space_mark_added(s), tc_space_mark_algo(s);
  return rc;
}

/* Winograd configs: tile_oc (vo), tile_ow (rt), tile_oh (nt), oc_groups; the rest at their first value. */
static th_status wino_valid(const tc_workload *wl, const tc_target *t, const tc_space *s, const tc_config *c,
                            int m) {
  int k[4] = {tc_space_knob(s, "unroll_kw"), tc_space_knob(s, "ic_chunks"), tc_space_knob(s, "tile_rh"),
              tc_space_knob(s, "tile_flat")};
  for (int i = 0; i < 4; i++)
    if (k[i] < 0 || c->idx[k[i]] != 0) return TH_ERR_INVALID;
  int vo = tc__knob(s, c, "tile_oc")[1], rt = tc__knob(s, c, "tile_ow")[1], nt = tc__knob(s, c, "tile_oh")[1];
  int g = tc__knob(s, c, "oc_groups")[0], th, tw;
  int ntiles = wl->oc / (vo * vec_lanes(wl, t));
  if (vo * rt > max_acc(t, vo) || rt > nt || nt > tc__wino_tiles(wl, m, &th, &tw) || ntiles % g) return TH_ERR_INVALID;
  if (tc__wino_scratch_floats(wl, m, nt, vo * vec_lanes(wl, t)) > TC__WINO_SCRATCH_MAX) return TH_ERR_INVALID;
  return TH_OK;
}

/* Runs longer than this gain nothing over row tiles (the row's own tiles are already wide). */
#define FLAT_MAX_POSITIONS 64

/* Flat tiles need the band, whole row tiles (oh a multiple of toh, so the run has a fixed length), a
 * short run and single-row register tiles (rh is the row-wise alternative). */
static int flat_ok(const tc_workload *wl, int toh, int rh) {
  return use_band(wl, toh) && wl->oh % toh == 0 && rh == 1 && wl->ow * toh <= FLAT_MAX_POSITIONS;
}

static th_status valid(const tc_workload *wl, const tc_target *t, const tc_space *s, const tc_config *c) {
  const int *oc = tc__knob(s, c, "tile_oc"), *ow = tc__knob(s, c, "tile_ow");
  const int *g = tc__knob(s, c, "oc_groups");
  const int *rh = tc__knob(s, c, "tile_rh"), *toh = tc__knob(s, c, "tile_oh");
  if (!tc__knob(s, c, "ic_chunks") || !rh || !toh) return TH_ERR_INVALID;
  const int *wino = tc__knob(s, c, "winograd");
  if (!wino) return TH_ERR_INVALID;
  if (wino[0]) return tc__wino_eligible(wl, t) && oc && ow && g ? wino_valid(wl, t, s, c, wino[0]) : TH_ERR_INVALID;
  if (rh[0] > 1 && (!use_band(wl, toh[1]) || rh[0] > toh[1])) return TH_ERR_INVALID;
  if (!oc || !ow || !g || !tc__knob(s, c, "tile_oh") || !tc__knob(s, c, "unroll_kw")) return TH_ERR_INVALID;
  if (oc[1] * ow[1] * rh[0] > max_acc(t, oc[1])) return TH_ERR_INVALID;
  if (group_oc(wl) % (oc[1] * vec_lanes(wl, t))) return TH_ERR_INVALID; /* a tile in one group */
  if ((wl->oc / (oc[1] * vec_lanes(wl, t))) % g[0]) return TH_ERR_INVALID; /* even oc groups */
  const int *fl = tc__knob(s, c, "tile_flat");
  if (!fl || (fl[0] && !flat_ok(wl, toh[1], rh[0]))) return TH_ERR_INVALID;
  return TH_OK;
}

/* Estimated cycles of one reduction step of a vo x w tile: FMA throughput (2/cycle), load throughput
 * (2/cycle) and FMA latency (4 cycles per dependent accumulator chain), after oneDNN's estimate. */
static double tile_cycles(int vo, int w) {
  double fma = vo * w / 2.0, lat = 4.0, ld = (vo + w) / 2.0;
  double m = fma > lat ? fma : lat;
  return m > ld ? m : ld;
}


/* Switches c to the largest Winograd tile the space offers (the footprint rule): runs of one tile row (or
 * the largest run the stack scratch holds), 2 oc vectors x up to 6 tiles of accumulators, and oc groups
 * until there are 12 tasks. Leaves c alone when no valid Winograd config comes out. */
static void wino_fallback(const tc_workload *wl, const tc_target *t, const tc_space *s, tc_config *c) {
  int kw = tc_space_knob(s, "winograd");
  if (kw < 0 || s->knobs[kw].nvalues < 2 || !tc__wino_eligible(wl, t)) return;
  int mi = s->knobs[kw].nvalues - 1; /* the largest tile the space offers */
  int m = s->knobs[kw].values[mi][0], th, tw;
  int ttot = tc__wino_tiles(wl, m, &th, &tw);
  int koc = tc_space_knob(s, "tile_oc"), kow = tc_space_knob(s, "tile_ow"), koh = tc_space_knob(s, "tile_oh");
  int kg = tc_space_knob(s, "oc_groups");
  tc_config w = *c;
  for (int k = 0; k < s->nknobs; k++) w.idx[k] = 0;
  w.idx[kw] = mi;
  int vl = vec_lanes(wl, t);
  for (int i = 0; i < s->knobs[koc].nvalues; i++) /* 2 oc vectors, else the most there are */
    if (s->knobs[koc].values[i][1] <= 2) w.idx[koc] = i;
  int vo = s->knobs[koc].values[w.idx[koc]][1];
  /* the run: a whole tile row when it fits, else the longest run that fits and divides the row, else the
   * longest that fits */
  int best = -1, bscore = -1;
  for (int i = 0; i < s->knobs[koh].nvalues; i++) {
    int nt = s->knobs[koh].values[i][1];
    if (nt > ttot || tc__wino_scratch_floats(wl, m, nt, vo * vl) > TC__WINO_SCRATCH_MAX) continue;
    int score = nt == tw ? 1 << 20 : tw % nt == 0 ? (1 << 10) + nt : nt;
    if (score > bscore) bscore = score, best = i;
  }
  if (best < 0) return;
  w.idx[koh] = best;
  int nt = s->knobs[koh].values[best][1];
  int rtmax = max_acc(t, vo) / vo < 12 / vo ? max_acc(t, vo) / vo : 12 / vo;
  for (int i = 0; i < s->knobs[kow].nvalues; i++)
    if (s->knobs[kow].values[i][1] <= rtmax && s->knobs[kow].values[i][1] <= nt) w.idx[kow] = i;
  int ntiles = wl->oc / (vo * vl), nruns = (ttot + nt - 1) / nt;
  for (int i = 0; i < s->knobs[kg].nvalues; i++) {
    int g = s->knobs[kg].values[i][0];
    if (ntiles % g) break;
    w.idx[kg] = i;
    if ((int64_t)wl->n * g * nruns >= 12) break;
  }
  if (wino_valid(wl, t, s, &w, m) == TH_OK) *c = w;
}

/* The fallback's accumulator cap for a blocked input (its lanes loop unrolled in_cb times): inside whole
 * networks (znver4, AVX-512, 2 threads, batch 1) tiles of more accumulators ran their 1x1 convs at half the
 * speed that tuning found with 16-20 (resnet50 1x1 convs 205-230 GFLOP/s with 2 x 14 tiles against 400-450
 * tuned with 2 x 8 or 2 x 10), although kernels.sh timed the same 2 x 14 tiles alone at 430-490. A cap of
 * 20 against none, 3 interleaved rounds of the fallback bundles (ms, medians of 15-30 runs per round):
 * resnet50 18.0-22.2 against 25.9-30.7, densenet121 13.2-20.9 against 18.8-28.4, shufflenet_v2 1.48-2.85
 * against 3.12-3.20, mobilenet_v3_large 1.70-2.34 against 1.94-2.73, googlenet 6.24-7.99 against
 * 7.19-9.02, efficientnet_b0 3.42-4.71 against 3.92-5.34; a cap of 24 fell between, 16 and 12 lost to 20
 * on resnet50. AVX2's own register limit (max_acc, 8 to 13) is below it. */
#define BLOCKED_MAX_ACC 20

static th_status fallback(const tc_workload *wl, const tc_target *t, const tc_space *s, tc_config *c) {
  int koc = tc_space_knob(s, "tile_oc"), kow = tc_space_knob(s, "tile_ow");
  int koh = tc_space_knob(s, "tile_oh"), kun = tc_space_knob(s, "unroll_kw");
  int kg = tc_space_knob(s, "oc_groups"), kch = tc_space_knob(s, "ic_chunks");
  if (koc < 0 || kow < 0 || koh < 0 || kun < 0 || kg < 0 || kch < 0) return TH_ERR_INTERNAL;
  /* Row tile: the most rows whose band fits, preferring tiles that divide oh: each oc tile's weights
   * are then reused from cache across the tile's rows (at 7x7 one row tile is the whole map). */
  int bi = 0;
  double bscore = -1e30;
  for (int i = 0; i < s->knobs[koh].nvalues; i++) {
    int th = s->knobs[koh].values[i][1];
    int nrt = (wl->oh + th - 1) / th;
    if (has_pad(wl) && band_floats(wl, th) > BAND_MAX_FLOATS && th > 1) continue;
    if (!has_pad(wl) && th > 4) continue;
    double waste = (double)(nrt * th - wl->oh) / wl->oh;
    double score = th - 4.0 * waste; /* rows past oh are skipped: waste only unbalances tasks */
    if (score > bscore) bscore = score, bi = i;
  }
  int krh = tc_space_knob(s, "tile_rh"), kfl = tc_space_knob(s, "tile_flat");
  if (krh < 0 || kfl < 0) return TH_ERR_INTERNAL;
  int toh = s->knobs[koh].values[bi][1];
  /* Register tile (vo, rw, rh) by the cycle model over one row tile: rh-row tiles, then single rows. */
  double best = -1;
  for (int i = 0; i < s->knobs[koc].nvalues; i++) {
    int vo = s->knobs[koc].values[i][1];
    if (vo > 6) continue;
    for (int j = 0; j < s->knobs[kow].nvalues; j++) {
      int rw = s->knobs[kow].values[j][1];
      for (int h = 0; h < s->knobs[krh].nvalues; h++) {
        int rh = s->knobs[krh].values[h][0];
        if (vo * rw * rh > max_acc(t, vo) || (wl->in_cb > 1 && vo * rw * rh > BLOCKED_MAX_ACC)) continue;
        if (rh > 1 && (!use_band(wl, toh) || rh > toh)) continue;
        int nt, q, big;
        balanced(wl->ow, rw, &nt, &q, &big);
        double row_rh = big * tile_cycles(vo, (q + 1) * rh) + (nt - big) * tile_cycles(vo, q * rh);
        double row_1 = big * tile_cycles(vo, q + 1) + (nt - big) * tile_cycles(vo, q);
        double cyc = (toh / rh) * row_rh + (toh % rh) * row_1;
        double eff = (vo * wl->ow * toh / 2.0) / cyc;
        double score = eff + 0.0005 * vo * rw + 0.0001 * vo - 0.001 * (rh - 1);
        /* the same tile length as a flat run over the row tile: taken only when clearly better */
        int flat = 0;
        if (rh == 1 && s->knobs[kfl].nvalues > 1 && flat_ok(wl, toh, 1)) {
          balanced(wl->ow * toh, rw, &nt, &q, &big);
          double fcyc = big * tile_cycles(vo, q + 1) + (nt - big) * tile_cycles(vo, q);
          double fscore = (vo * wl->ow * toh / 2.0) / fcyc + 0.0005 * vo * rw + 0.0001 * vo - 0.02;
          if (fscore > score) score = fscore, flat = 1;
        }
        if (score > best) {
          best = score;
          c->idx[koc] = i;
          c->idx[kow] = j;
          c->idx[krh] = h;
          c->idx[kfl] = flat;
        }
      }
    }
  }
  if (best < 0) return TH_ERR_INTERNAL;
  c->idx[koh] = bi;
  int nrt = s->knobs[koh].values[bi][0];
  int ntiles = wl->oc / (s->knobs[koc].values[c->idx[koc]][1] * vec_lanes(wl, t));
  /* Groups: enough tasks (>= 16) to balance the threads, never more groups than tiles. */
  c->idx[kg] = 0;
  for (int i = 0; i < s->knobs[kg].nvalues; i++) {
    int g = s->knobs[kg].values[i][0];
    if (ntiles % g) break;
    c->idx[kg] = i;
    if ((int64_t)wl->n * g * nrt >= 16) break;
  }
  c->idx[kun] = 0;
  /* Chunks: an oc tile's weights per chunk within ~96 KiB (L2-resident with the band), when the task
   * has several rows to reuse them over. */
  c->idx[kch] = 0;
  int th = s->knobs[koh].values[bi][1];
  double tile_w =
      4.0 * s->knobs[koc].values[c->idx[koc]][1] * vec_lanes(wl, t) * group_c(wl) * wl->kh * wl->kw;
  if (th > 1)
    for (int i = 0; i < s->knobs[kch].nvalues; i++) {
      c->idx[kch] = i;
      if (tile_w / s->knobs[kch].values[i][0] <= 96 * 1024) break;
    }
  wino_fallback(wl, t, s, c);
  return TH_OK;
}

typedef struct conv_ctx {
  const tc_workload *wl;
  int vl, vo, ot, ntiles, unroll_kw;
  const tc_var *in, *wt, *bias, *res, *out;
  const tc_var *band; /* non-NULL: taps read the zero-bordered band, no bounds checks */
  int brows, bw;      /* band rows and padded width */
  const tc_expr *n, *t, *oh, *oy0; /* batch, oc tile, output row, first output row of the band */
  int nchunks, cpc;                /* input-channel chunks and blocks per chunk */
  int rh;                          /* output rows per register tile (band mode) */
  int flat, toh;                   /* flat: tiles are runs of the band's toh rows' positions; ow0 = first */
  const tc_expr *chunk;            /* current chunk (nchunks > 1) */
  tc_var *chunk_var;
  int gl, gb; /* input lanes per block and blocks a group reads (group_lanes, group_blocks) */
  /* the band's input blocks: nb from block blo (NULL: 0), the task's groups' when grouped */
  int nb;
  const tc_expr *blo;
} conv_ctx;

/* The input block and lane of the tile's group's block icb, lane ci: block icb and lane ci when
 * ungrouped; grouped, tile t's group starts at channel (t / tiles per group) * c/G. */
static void group_in(tc_ir *ir, const conv_ctx *x, const tc_expr *icb, const tc_expr *ci,
                     const tc_expr **blk, const tc_expr **lane) {
  const tc_workload *wl = x->wl;
  if (tc_workload_groups(wl) == 1) {
    *blk = icb;
    *lane = ci;
    return;
  }
  const tc_expr *ch0 =
      tc_e_mul(ir, tc_e_div(ir, x->t, tc__c(ir, group_oc(wl) / x->ot)), tc__c(ir, group_c(wl)));
  *blk = tc_e_add(ir, tc_e_div(ir, ch0, tc__c(ir, wl->in_cb)), icb);
  *lane = wl->in_cb > group_c(wl) ? tc_e_add(ir, tc_e_mod(ir, ch0, tc__c(ir, wl->in_cb)), ci) : ci;
}

/* Output row (relative to x->oh) and column of a tile's accumulator position p: p / rw and ow0 + p % rw
 * for row tiles; for flat tiles, position ow0 + p of the run, wrapped at the row's end (per position and
 * tile, outside the reduction loops). */
static void tile_pos(tc_ir *ir, const conv_ctx *x, const tc_expr *ow0, const tc_expr *p, int rw,
                     const tc_expr **row, const tc_expr **col) {
  if (x->flat) {
    const tc_expr *f = tc_e_add(ir, ow0, p);
    *row = tc_e_div(ir, f, tc__c(ir, x->wl->ow));
    *col = tc_e_mod(ir, f, tc__c(ir, x->wl->ow));
  } else {
    *row = tc_e_div(ir, p, tc__c(ir, rw));
    *col = tc_e_add(ir, ow0, tc_e_mod(ir, p, tc__c(ir, rw)));
  }
}

static const tc_stmt *conv_tile(tc_ir *ir, void *vctx, const tc_expr *ow0, int rw, int safe) {
  conv_ctx *x = vctx;
  const tc_workload *wl = x->wl;
  int vl = x->vl, vo = x->vo, icb_n = wl->c / wl->in_cb;
  const tc_expr *iblk, *ilane; /* the input block and lane of reduction step (icb, ci) */
  /* The tile covers rh output rows (band mode) x rw columns; accumulator p = row * rw + column. */
  int rh = x->band ? x->rh : 1, np = rh * rw;
  tc_type vt = tc_type_f32(vl);
  tc_var *acc = tc_var_buffer(ir, "acc", vt, -1);
  tc_var *wreg = tc_var_buffer(ir, "wreg", vt, -1);
  tc_var *v = tc_var_new(ir, "v", tc_type_int()), *r = tc_var_new(ir, "r", tc_type_int());
  const tc_expr *ai = tc_e_add(ir, tc_e_mul(ir, tc__v(ir, v), tc__c(ir, np)), tc__v(ir, r));
  /* acc = 0, or the partial sum of the previous input-channel chunks */
  const tc_expr *zero = tc_e_broadcast(ir, tc_e_float(ir, 0.0), vl);
  if (x->nchunks > 1) {
    const tc_expr *oc0 = tc_e_add(ir, tc_e_mul(ir, x->t, tc__c(ir, x->ot)), tc_e_mul(ir, tc__v(ir, v), tc__c(ir, vl)));
    const tc_expr *prow, *pcol;
    tile_pos(ir, x, ow0, tc__v(ir, r), rw, &prow, &pcol);
    const tc_expr *pidx =
        tc__idx_c(ir, x->n, oc0, tc_e_add(ir, x->oh, prow), pcol, wl->oc, wl->oh, wl->ow, wl->out_cb);
    zero = tc_e_select(ir, tc_e_bin(ir, TC_EXPR_EQ, x->chunk, tc__c(ir, 0)), zero,
                       tc_e_load(ir, x->out, pidx, vl, 4));
  }
  const tc_stmt *init = tc_s_for(
      ir, v, tc__c(ir, 0), tc__c(ir, vo), TC_FOR_UNROLLED,
      tc_s_for(ir, r, tc__c(ir, 0), tc__c(ir, np), TC_FOR_UNROLLED, tc_s_store(ir, acc, ai, zero, 64)));
  /* reduction */
  tc_var *icb = tc_var_new(ir, "icb", tc_type_int()), *kh = tc_var_new(ir, "kh", tc_type_int());
  tc_var *kw = tc_var_new(ir, "kw", tc_type_int()), *ci = tc_var_new(ir, "ci", tc_type_int());
  tc_var *iy = tc_var_new(ir, "iy", tc_type_int());
  tc_var *v2 = tc_var_new(ir, "v", tc_type_int()), *r2 = tc_var_new(ir, "r", tc_type_int());
  tc_var *v3 = tc_var_new(ir, "v", tc_type_int()), *xb = tc_var_new(ir, "xb", vt);
  group_in(ir, x, tc__v(ir, icb), tc__v(ir, ci), &iblk, &ilane);
  const tc_expr *wbase = tc_e_add(ir, tc_e_mul(ir, x->t, tc__c(ir, x->gb)), tc__v(ir, icb));
  wbase = tc_e_add(ir, tc_e_mul(ir, wbase, tc__c(ir, wl->kh)), tc__v(ir, kh));
  wbase = tc_e_add(ir, tc_e_mul(ir, wbase, tc__c(ir, wl->kw)), tc__v(ir, kw));
  wbase = tc_e_add(ir, tc_e_mul(ir, wbase, tc__c(ir, x->gl)), tc__v(ir, ci));
  wbase = tc_e_mul(ir, wbase, tc__c(ir, x->ot));
  const tc_stmt *ldw = tc_s_for(
      ir, v2, tc__c(ir, 0), tc__c(ir, vo), TC_FOR_UNROLLED,
      tc_s_store(ir, wreg, tc__v(ir, v2),
                 tc_e_load(ir, x->wt, tc_e_add(ir, wbase, tc_e_mul(ir, tc__v(ir, v2), tc__c(ir, vl))),
                           vl, 4),
                 64));
  /* the taps' input offsets: kh * dil_h rows, kw * dil_w columns */
  const tc_expr *khd = tc__v(ir, kh), *kwd = tc__v(ir, kw);
  if (tc_workload_dil(wl, 0) > 1) khd = tc_e_mul(ir, khd, tc__c(ir, tc_workload_dil(wl, 0)));
  if (tc_workload_dil(wl, 1) > 1) kwd = tc_e_mul(ir, kwd, tc__c(ir, tc_workload_dil(wl, 1)));
  const tc_expr *xs;
  if (x->band) {
    /* band[((icb * brows + iy) * bw + (ow0 + r) * sw + kw * dw) * in_cb + ci], iy = band row */
    const tc_expr *row, *col;
    tile_pos(ir, x, ow0, tc__v(ir, r2), rw, &row, &col);
    row = tc_e_mul(ir, row, tc__c(ir, wl->sh));
    const tc_expr *bx = tc_e_add(ir, tc_e_mul(ir, col, tc__c(ir, wl->sw)), kwd);
    const tc_expr *bblk = x->blo ? tc_e_sub(ir, iblk, x->blo) : iblk;
    const tc_expr *bi = tc_e_add(ir, tc_e_mul(ir, bblk, tc__c(ir, x->brows)),
                                 tc_e_add(ir, tc__v(ir, iy), row));
    bi = tc_e_add(ir, tc_e_mul(ir, bi, tc__c(ir, x->bw)), bx);
    bi = tc_e_add(ir, tc_e_mul(ir, bi, tc__c(ir, wl->in_cb)), ilane);
    xs = tc_e_load(ir, x->band, bi, 1, 4);
  } else {
    const tc_expr *ix = tc_e_add(
        ir, tc_e_mul(ir, tc_e_add(ir, ow0, tc__v(ir, r2)), tc__c(ir, wl->sw)),
        tc_e_sub(ir, kwd, tc__c(ir, wl->pl)));
    if (!safe) {
      xs = tc_e_load(ir, x->in,
                     tc__idx(ir, x->n, iblk, tc__v(ir, iy), ix, ilane, icb_n, wl->h, wl->w,
                             wl->in_cb),
                     1, 4);
    } else {
      const tc_expr *cx = tc_e_max(ir, tc_e_min(ir, ix, tc__c(ir, wl->w - 1)), tc__c(ir, 0));
      xs = tc_e_select(ir, tc__in_range(ir, ix, 0, wl->w),
                       tc_e_load(ir, x->in,
                                 tc__idx(ir, x->n, iblk, tc__v(ir, iy), cx, ilane, icb_n, wl->h,
                                         wl->w, wl->in_cb),
                                 1, 4),
                       tc_e_float(ir, 0.0));
    }
  }
  const tc_expr *ai3 = tc_e_add(ir, tc_e_mul(ir, tc__v(ir, v3), tc__c(ir, np)), tc__v(ir, r2));
  const tc_stmt *fmas = tc_s_for(
      ir, v3, tc__c(ir, 0), tc__c(ir, vo), TC_FOR_UNROLLED,
      tc_s_store(ir, acc, ai3,
                 tc_e_fma(ir, tc_e_var(ir, xb), tc_e_load(ir, wreg, tc__v(ir, v3), 1, 64),
                          tc_e_load(ir, acc, ai3, 1, 64)),
                 64));
  const tc_stmt *cols = tc_s_for(ir, r2, tc__c(ir, 0), tc__c(ir, np), TC_FOR_UNROLLED,
                                 tc_s_let(ir, xb, tc_e_broadcast(ir, xs, vl), fmas));
  const tc_stmt *lanes_body[2] = {ldw, cols};
  const tc_stmt *lanes = tc_s_for(ir, ci, tc__c(ir, 0), tc__c(ir, x->gl), TC_FOR_UNROLLED,
                                  tc_s_seq(ir, 2, lanes_body));
  tc_for_kind kwk = TC_FOR_ROLLED;
  if (x->unroll_kw || (!x->band && safe && ow0->kind == TC_EXPR_INT)) kwk = TC_FOR_UNROLLED;
  const tc_stmt *kws = tc_s_for(ir, kw, tc__c(ir, 0), tc__c(ir, wl->kw), kwk, lanes);
  const tc_expr *iyv;
  if (x->band) {
    iyv = tc_e_add(ir, tc_e_mul(ir, tc_e_sub(ir, x->oh, x->oy0), tc__c(ir, wl->sh)), khd);
  } else {
    int row_pad = wl->pt > 0 || (wl->oh - 1) * wl->sh - wl->pt + tc_workload_span(wl, 0) > wl->h;
    if (row_pad) kws = tc_s_if(ir, tc__in_range(ir, tc__v(ir, iy), 0, wl->h), kws, NULL);
    iyv = tc_e_add(ir, tc_e_mul(ir, x->oh, tc__c(ir, wl->sh)), tc_e_sub(ir, khd, tc__c(ir, wl->pt)));
  }
  const tc_expr *icb0 = x->nchunks > 1 ? tc_e_mul(ir, x->chunk, tc__c(ir, x->cpc)) : tc__c(ir, 0);
  const tc_stmt *red = tc_s_for(
      ir, icb, icb0, tc__c(ir, x->nchunks > 1 ? x->cpc : x->gb), TC_FOR_SERIAL,
      tc_s_for(ir, kh, tc__c(ir, 0), tc__c(ir, wl->kh), TC_FOR_SERIAL, tc_s_let(ir, iy, iyv, kws)));
  red = tc_s_allocate(ir, wreg, vo, TC_SCOPE_LOCAL, red);
  /* epilogue */
  tc_var *v4 = tc_var_new(ir, "v", tc_type_int()), *r4 = tc_var_new(ir, "r", tc_type_int());
  const tc_expr *oc0 = tc_e_add(ir, tc_e_mul(ir, x->t, tc__c(ir, x->ot)),
                                tc_e_mul(ir, tc__v(ir, v4), tc__c(ir, vl)));
  const tc_expr *orow, *ocol;
  tile_pos(ir, x, ow0, tc__v(ir, r4), rw, &orow, &ocol);
  const tc_expr *oidx =
      tc__idx_c(ir, x->n, oc0, tc_e_add(ir, x->oh, orow), ocol, wl->oc, wl->oh, wl->ow, wl->out_cb);
  const tc_expr *ai4 = tc_e_add(ir, tc_e_mul(ir, tc__v(ir, v4), tc__c(ir, np)), tc__v(ir, r4));
  const tc_expr *accv = tc_e_load(ir, acc, ai4, 1, 64);
  const tc_expr *val = tc__epilogue(ir, wl, accv, x->bias, oc0, x->res, oidx);
  if (x->nchunks > 1) /* partial sums are stored raw; the last chunk applies the epilogue */
    val = tc_e_select(ir, tc_e_bin(ir, TC_EXPR_EQ, x->chunk, tc__c(ir, x->nchunks - 1)), val, accv);
  const tc_stmt *epi = tc_s_for(
      ir, v4, tc__c(ir, 0), tc__c(ir, vo), TC_FOR_UNROLLED,
      tc_s_for(ir, r4, tc__c(ir, 0), tc__c(ir, np), TC_FOR_UNROLLED, tc_s_store(ir, x->out, oidx, val, 4)));
  const tc_stmt *all[3] = {init, red, epi};
  return tc_s_allocate(ir, acc, (int64_t)vo * np, TC_SCOPE_LOCAL, tc_s_seq(ir, 3, all));
}

/* Fills the band for output rows [oy0, oy0 + toh): zero rows outside the input, zero columns in the
 * padding, in_cb-lane vector copies elsewhere. */
static const tc_stmt *band_fill(tc_ir *ir, const conv_ctx *x) {
  const tc_workload *wl = x->wl;
  int cb = wl->in_cb, icb_n = wl->c / cb;
  tc_var *icb = tc_var_new(ir, "bicb", tc_type_int()), *br = tc_var_new(ir, "brow", tc_type_int());
  const tc_expr *sblk = x->blo ? tc_e_add(ir, x->blo, tc__v(ir, icb)) : tc__v(ir, icb);
  tc_var *iy = tc_var_new(ir, "biy", tc_type_int());
  const tc_expr *zero = cb > 1 ? tc_e_broadcast(ir, tc_e_float(ir, 0.0), cb) : tc_e_float(ir, 0.0);
  const tc_expr *rowbase = tc_e_mul(
      ir, tc_e_add(ir, tc_e_mul(ir, tc__v(ir, icb), tc__c(ir, x->brows)), tc__v(ir, br)), tc__c(ir, x->bw));
  int xa = wl->pl, xb = wl->pl + wl->w < x->bw ? wl->pl + wl->w : x->bw;
  /* zero-filled row */
  tc_var *zx = tc_var_new(ir, "bx", tc_type_int());
  const tc_stmt *zrow = tc_s_for(
      ir, zx, tc__c(ir, 0), tc__c(ir, x->bw), TC_FOR_SERIAL,
      tc_s_store(ir, x->band, tc_e_mul(ir, tc_e_add(ir, rowbase, tc__v(ir, zx)), tc__c(ir, cb)), zero, 4));
  /* copied row: [0, xa) zero, [xa, xb) input, [xb, bw) zero */
  tc_stmt_list l = {0};
  if (xa > 0) {
    tc_var *px = tc_var_new(ir, "bx", tc_type_int());
    tc_list_push(ir, &l, tc_s_for(ir, px, tc__c(ir, 0), tc__c(ir, xa), TC_FOR_SERIAL,
                                  tc_s_store(ir, x->band,
                                             tc_e_mul(ir, tc_e_add(ir, rowbase, tc__v(ir, px)), tc__c(ir, cb)),
                                             zero, 4)));
  }
  if (xb > xa) {
    tc_var *px = tc_var_new(ir, "bx", tc_type_int());
    const tc_expr *src = tc__idx(ir, x->n, sblk, tc__v(ir, iy),
                                 tc_e_sub(ir, tc__v(ir, px), tc__c(ir, wl->pl)), tc__c(ir, 0), icb_n, wl->h,
                                 wl->w, cb);
    tc_list_push(ir, &l, tc_s_for(ir, px, tc__c(ir, xa), tc__c(ir, xb - xa), TC_FOR_SERIAL,
                                  tc_s_store(ir, x->band,
                                             tc_e_mul(ir, tc_e_add(ir, rowbase, tc__v(ir, px)), tc__c(ir, cb)),
                                             tc_e_load(ir, x->in, src, cb, 4), 4)));
  }
  if (x->bw > xb) {
    tc_var *px = tc_var_new(ir, "bx", tc_type_int());
    tc_list_push(ir, &l, tc_s_for(ir, px, tc__c(ir, xb), tc__c(ir, x->bw - xb), TC_FOR_SERIAL,
                                  tc_s_store(ir, x->band,
                                             tc_e_mul(ir, tc_e_add(ir, rowbase, tc__v(ir, px)), tc__c(ir, cb)),
                                             zero, 4)));
  }
  const tc_stmt *row = tc_s_if(ir, tc__in_range(ir, tc__v(ir, iy), 0, wl->h), tc_list_seq(ir, &l), zrow);
  const tc_expr *iyv = tc_e_add(ir, tc_e_mul(ir, x->oy0, tc__c(ir, wl->sh)),
                                tc_e_sub(ir, tc__v(ir, br), tc__c(ir, wl->pt)));
  return tc_s_for(ir, icb, tc__c(ir, 0), tc__c(ir, x->nb), TC_FOR_SERIAL,
                  tc_s_for(ir, br, tc__c(ir, 0), tc__c(ir, x->brows), TC_FOR_SERIAL,
                           tc_s_let(ir, iy, iyv, row)));
}

/* One output row (or rh rows) of the task: all output-width tiles. */
static const tc_stmt *conv_row(tc_ir *ir, conv_ctx *x, int rw) {
  const tc_workload *wl = x->wl;
  if (x->band || !has_pad(wl)) {
    /* every window is inside the (band or unpadded) input: balanced tiles, no checks; flat tiles are
     * balanced over the band's whole run of toh x ow positions instead of one row */
    int nt, q, big;
    balanced(x->flat ? wl->ow * x->toh : wl->ow, rw, &nt, &q, &big);
    tc_stmt_list l = {0};
    tc_var *j1 = tc_var_new(ir, "owt", tc_type_int()), *j2 = tc_var_new(ir, "owt", tc_type_int());
    if (big > 0)
      tc_list_push(ir, &l, tc_s_for(ir, j1, tc__c(ir, 0), tc__c(ir, big), TC_FOR_SERIAL,
                                    conv_tile(ir, x, tc_e_mul(ir, tc__v(ir, j1), tc__c(ir, q + 1)), q + 1, 0)));
    if (nt > big)
      tc_list_push(ir, &l,
                   tc_s_for(ir, j2, tc__c(ir, 0), tc__c(ir, nt - big), TC_FOR_SERIAL,
                            conv_tile(ir, x,
                                      tc_e_add(ir, tc_e_mul(ir, tc__v(ir, j2), tc__c(ir, q)),
                                               tc__c(ir, (int64_t)big * (q + 1))),
                                      q, 0)));
    return tc_list_seq(ir, &l);
  }
  return tc__ow_tiles(ir, wl->ow, rw, wl->sw, wl->pl, tc_workload_span(wl, 1), wl->w, conv_tile, x);
}

static th_status lower(const tc_workload *wl, const tc_target *t, const tc_space *s, const tc_config *c,
                       tc_ir *ir, const tc_stmt **out) {
  int m = tc__knob(s, c, "winograd")[0];
  if (m) {
    if (wino_valid(wl, t, s, c, m) != TH_OK) return TH_ERR_INVALID;
    return tc__wino_lower(wl, t, m, tc__knob(s, c, "tile_oc")[1], tc__knob(s, c, "tile_ow")[1],
                          tc__knob(s, c, "tile_oh")[1], tc__knob(s, c, "oc_groups")[0], ir, out);
  }
  conv_ctx x;
  memset(&x, 0, sizeof x);
  x.wl = wl;
  x.vl = vec_lanes(wl, t);
  x.vo = tc__knob(s, c, "tile_oc")[1];
  int rw = tc__knob(s, c, "tile_ow")[1];
  int toh = tc__knob(s, c, "tile_oh")[1];
  int ng = tc__knob(s, c, "oc_groups")[0];
  int rh = tc__knob(s, c, "tile_rh")[0];
  x.unroll_kw = tc__knob(s, c, "unroll_kw")[0];
  x.flat = tc__knob(s, c, "tile_flat")[0];
  x.toh = toh;
  if (x.flat && !flat_ok(wl, toh, rh)) return TH_ERR_INVALID;
  x.nchunks = tc__knob(s, c, "ic_chunks")[0];
  x.gl = group_lanes(wl);
  x.gb = group_blocks(wl);
  x.cpc = x.gb / x.nchunks;
  x.ot = x.vo * x.vl;
  if (group_oc(wl) % x.ot) return TH_ERR_INVALID;
  x.ntiles = wl->oc / x.ot;
  if (x.ntiles % ng) return TH_ERR_INVALID;
  x.in = tc_var_buffer(ir, "in", tc_type_f32(1), TC_ARG_IN);
  x.wt = tc_var_buffer(ir, "w", tc_type_f32(1), TC_ARG_WEIGHTS);
  x.bias = tc_var_buffer(ir, "bias", tc_type_f32(1), TC_ARG_BIAS);
  x.res = tc_var_buffer(ir, "res", tc_type_f32(1), TC_ARG_RESIDUAL);
  x.out = tc_var_buffer(ir, "out", tc_type_f32(1), TC_ARG_OUT);
  tc_var *band = NULL;
  if (use_band(wl, toh)) {
    band = tc_var_buffer(ir, "band", tc_type_f32(1), -1);
    x.band = band;
    x.brows = band_rows(wl, toh);
    x.bw = band_width(wl);
  }
  x.nb = wl->c / wl->in_cb;
  int nrt = (wl->oh + toh - 1) / toh;
  tc_var *task = tc_var_new(ir, "task", tc_type_int());
  tc_var *nv = tc_var_new(ir, "n", tc_type_int()), *gv = tc_var_new(ir, "g", tc_type_int());
  tc_var *tv = tc_var_new(ir, "t", tc_type_int());
  tc_var *rt = tc_var_new(ir, "rt", tc_type_int()), *ohi = tc_var_new(ir, "ohi", tc_type_int());
  tc_var *ohv = tc_var_new(ir, "oh", tc_type_int()), *oy0 = tc_var_new(ir, "oy0", tc_type_int());
  x.n = tc__v(ir, nv);
  x.t = tc__v(ir, tv);
  x.oh = tc__v(ir, ohv);
  x.oy0 = tc__v(ir, oy0);
  tc_var *chv = tc_var_new(ir, "chunk", tc_type_int());
  x.chunk_var = chv;
  x.chunk = tc__v(ir, chv);
  if (band && tc_workload_groups(wl) > 1) {
    /* the band holds the input channels of the task's conv groups only: whole groups (a task's
     * tiles cover k of them) or one (several tasks share a group); else all */
    int tpg0 = x.ntiles / ng, per = group_oc(wl) / x.ot; /* tiles per task, per conv group */
    int span = 0;                                          /* the task's input channels */
    if (tpg0 % per == 0) span = tpg0 / per * group_c(wl);
    else if (per % tpg0 == 0) span = group_c(wl);
    if (span > 0 && span % wl->in_cb == 0) {
      const tc_expr *g0 =
          tc_e_div(ir, tc_e_mul(ir, tc__v(ir, gv), tc__c(ir, tpg0)), tc__c(ir, per));
      x.nb = span / wl->in_cb;
      x.blo = tc_e_div(ir, tc_e_mul(ir, g0, tc__c(ir, group_c(wl))), tc__c(ir, wl->in_cb));
    }
  }
  const tc_stmt *rows;
  if (x.flat) {
    x.rh = 1;
    x.oh = x.oy0; /* tile rows are relative to the band's first row */
    rows = conv_row(ir, &x, rw);
  } else if (rh == 1) {
    x.rh = 1;
    const tc_stmt *row = conv_row(ir, &x, rw);
    if (wl->oh % toh) row = tc_s_if(ir, tc_e_bin(ir, TC_EXPR_LT, x.oh, tc__c(ir, wl->oh)), row, NULL);
    rows = tc_s_for(ir, ohi, tc__c(ir, 0), tc__c(ir, toh), TC_FOR_SERIAL,
                    tc_s_let(ir, ohv, tc_e_add(ir, x.oy0, tc__v(ir, ohi)), row));
  } else {
    /* rh rows per register tile; a tile that would run past oh falls back to single rows */
    x.rh = rh;
    const tc_stmt *row = conv_row(ir, &x, rw);
    if (wl->oh % toh) {
      tc_var *j = tc_var_new(ir, "ohj", tc_type_int()), *oh1 = tc_var_new(ir, "oh", tc_type_int());
      conv_ctx x1 = x;
      x1.rh = 1;
      x1.oh = tc__v(ir, oh1);
      const tc_stmt *one = tc_s_if(ir, tc_e_bin(ir, TC_EXPR_LT, x1.oh, tc__c(ir, wl->oh)), conv_row(ir, &x1, rw), NULL);
      const tc_stmt *singles = tc_s_for(ir, j, tc__c(ir, 0), tc__c(ir, rh), TC_FOR_SERIAL,
                                        tc_s_let(ir, oh1, tc_e_add(ir, x.oh, tc__v(ir, j)), one));
      row = tc_s_if(ir, tc_e_bin(ir, TC_EXPR_LE, tc_e_add(ir, x.oh, tc__c(ir, rh)), tc__c(ir, wl->oh)), row,
                    singles);
    }
    rows = tc_s_for(ir, ohi, tc__c(ir, 0), tc__c(ir, toh / rh), TC_FOR_SERIAL,
                    tc_s_let(ir, ohv, tc_e_add(ir, x.oy0, tc_e_mul(ir, tc__v(ir, ohi), tc__c(ir, rh))), row));
    if (toh % rh) { /* the row tile's last rows, one at a time */
      tc_var *j = tc_var_new(ir, "ohr", tc_type_int()), *oh1 = tc_var_new(ir, "oh", tc_type_int());
      conv_ctx x1 = x;
      x1.rh = 1;
      x1.oh = tc__v(ir, oh1);
      const tc_stmt *one = conv_row(ir, &x1, rw);
      if (wl->oh % toh) one = tc_s_if(ir, tc_e_bin(ir, TC_EXPR_LT, x1.oh, tc__c(ir, wl->oh)), one, NULL);
      const tc_stmt *tail = tc_s_for(
          ir, j, tc__c(ir, 0), tc__c(ir, toh % rh), TC_FOR_SERIAL,
          tc_s_let(ir, oh1, tc_e_add(ir, x.oy0, tc_e_add(ir, tc__v(ir, j), tc__c(ir, toh / rh * rh))), one));
      const tc_stmt *both[2] = {rows, tail};
      rows = tc_s_seq(ir, 2, both);
    }
  }
  /* group g holds oc tiles [g*tpg, (g+1)*tpg) */
  int tpg = x.ntiles / ng;
  tc_var *ti = tc_var_new(ir, "ti", tc_type_int());
  if (x.nchunks > 1) {
    rows = tc_s_for(ir, x.chunk_var, tc__c(ir, 0), tc__c(ir, x.nchunks), TC_FOR_SERIAL, rows);
  }
  const tc_stmt *tiles = tc_s_for(
      ir, ti, tc__c(ir, 0), tc__c(ir, tpg), TC_FOR_SERIAL,
      tc_s_let(ir, tv, tc_e_add(ir, tc_e_mul(ir, tc__v(ir, gv), tc__c(ir, tpg)), tc__v(ir, ti)), rows));
  if (band) {
    const tc_stmt *both[2] = {band_fill(ir, &x), tiles};
    tiles = tc_s_allocate(ir, band, (int64_t)x.nb * wl->in_cb * x.brows * x.bw, TC_SCOPE_LOCAL,
                          tc_s_seq(ir, 2, both));
  }
  const tc_expr *tk = tc__v(ir, task);
  const tc_stmt *body = tc_s_let(
      ir, nv, tc_e_div(ir, tk, tc__c(ir, (int64_t)ng * nrt)),
      tc_s_let(ir, gv, tc_e_mod(ir, tc_e_div(ir, tk, tc__c(ir, nrt)), tc__c(ir, ng)),
               tc_s_let(ir, rt, tc_e_mod(ir, tk, tc__c(ir, nrt)),
                        tc_s_let(ir, oy0, tc_e_mul(ir, tc__v(ir, rt), tc__c(ir, toh)), tiles))));
  *out = tc__parallel(ir, task, (int64_t)wl->n * ng * nrt, body);
  return ir->err;
}

static th_status pack(const tc_workload *wl, const tc_target *t, const tc_space *s, const tc_config *c,
                      int p[TC_PACK_NPARAMS]) {
  int vo = tc__knob(s, c, "tile_oc")[1];
  int m = tc__knob(s, c, "winograd")[0];
  if (m) {
    tc__wino_pack(wl, m, vo * vec_lanes(wl, t), p);
    return TH_OK;
  }
  p[0] = TH_RT_PACK_CONV;
  p[1] = wl->oc;
  p[2] = group_c(wl);
  p[3] = wl->kh;
  p[4] = wl->kw;
  p[5] = group_lanes(wl);
  p[6] = vo * vec_lanes(wl, t);
  return TH_OK;
}

const tc__op tc__op_conv2d = {TC_KERNEL_CONV2D, space, fallback, valid, lower, pack};
