/* The fixed part of every generated CPU model.c (after the generated tables th__info,
 * th__in/th__out, th__consts, th__index_checks, th__calls, th__wparams and the th__* sizes, and
 * after th_params and model_rt_common.c, which compiler/embed.cmake puts in front of this file):
 * weight packing and the plan interpreter that copies the inputs into the workspace, calls the
 * kernels in order and copies the outputs out. Plain C11; it is embedded into tunehub and never
 * compiled into tunehub itself. */
#include <cpuid.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct th_model {
  float *weights;   /* packed weights and folded biases, one allocation */
  float *workspace; /* every intermediate tensor */
};

static int th__load_weights(struct th_model *m, const th_params_tensor *es, int n) {
  for (int i = 0; i < (int)(sizeof th__wparams / sizeof th__wparams[0]); i++) {
    const struct th__wparam *wp = &th__wparams[i];
    if (!wp->weight) continue; /* the placeholder row of a network without weights */
    float *w = th__folded_weights(wp, es, n, wp->boff >= 0 ? m->weights + wp->boff : NULL);
    if (!w) return -1;
    int rc = th_rt_pack_weights(wp->pack, w, m->weights + wp->woff);
    free(w);
    if (rc != 0) return th__fail("packing the weights of '%s' failed", wp->weight);
  }
  return 0;
}

/* Whether this CPU has feature f of th__cpu_needs (the compiler wrote its CPUID coordinates:
 * compiler/target.c, tc__features) and the OS saves the register state it needs (XCR0: xcr0). */
static int th__cpu_has(const struct th__cpu_feature *f, unsigned xcr0) {
  unsigned r[4] = {0, 0, 0, 0};
  /* __get_cpuid_count answers 0 for a leaf above the CPU's highest (basic or extended) */
  if (__get_cpuid_count(f->leaf, f->sub, &r[0], &r[1], &r[2], &r[3]) == 0 || f->reg > 3) return 0;
  if (!((r[f->reg] >> f->bit) & 1u)) return 0;
  int ymm = (xcr0 & 0x6u) == 0x6u, zmm = ymm && (xcr0 & 0xe0u) == 0xe0u,
      amx = (xcr0 & 0x60000u) == 0x60000u;
  return f->state == 0 || (f->state == 1 && ymm) || (f->state == 2 && zmm) ||
         (f->state == 3 && amx);
}

/* Refuses a CPU that lacks a feature the kernels were compiled for (never a SIGILL later), naming them. */
static int th__cpu_check(void) {
  unsigned a = 0, b = 0, c1 = 0, d = 0, xcr0 = 0;
  if (__get_cpuid(1, &a, &b, &c1, &d) &&
      (c1 & (1u << 27))) { /* OSXSAVE: XGETBV says which state is saved */
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = lo;
  }
  char missing[1024] = "";
  size_t used = 0;
  for (const struct th__cpu_feature *f = th__cpu_needs; f->name; f++) {
    if (th__cpu_has(f, xcr0)) continue;
    int w = snprintf(missing + used, sizeof missing - used, "%s%s", used ? ", " : "", f->name);
    if (w > 0 && (size_t)w < sizeof missing - used) used += (size_t)w;
  }
  if (!used) return 0;
  return th__fail("this bundle was built for the CPU '%s' and needs %s; this CPU lacks them", th__cpu_target,
                  missing);
}

int th_model_create(const void *params, size_t size, struct th_model **out) {
  if (th__cpu_check() != 0) return -1;
  th_params_tensor *es = NULL;
  int n = th__create_begin(params, size, out, &es);
  if (n < 0) return -1;
  struct th_model *m = calloc(1, sizeof *m);
  if (!m) {
    free(es);
    return th__fail("out of memory");
  }
  size_t wbytes = ((size_t)th__weights_floats * sizeof(float) + 63) / 64 * 64;
  size_t wsbytes = ((size_t)th__workspace_floats * sizeof(float) + 63) / 64 * 64;
  m->weights = aligned_alloc(64, wbytes ? wbytes : 64);
  m->workspace = aligned_alloc(64, wsbytes ? wsbytes : 64);
  int rc = (m->weights && m->workspace) ? 0 : th__fail("out of memory (%zu + %zu bytes)", wbytes, wsbytes);
  if (rc == 0) {
    memset(m->weights, 0, wbytes);
    memset(m->workspace, 0, wsbytes);
    rc = th__load_weights(m, es, n);
    if (rc == 0) rc = th__load_consts(m->weights, es, n);
  }
  free(es);
  if (rc != 0) {
    th_model_free(m);
    return -1;
  }
  *out = m;
  return 0;
}

static double th__now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The plan interpreter over checked arguments; call_seconds, when not NULL, gets each call's wall
 * time added. */
static int th__run(struct th_model *m, const void *const *inputs, void *const *outputs,
                   double *call_seconds) {
  for (int k = 0; k < th__info.num_inputs; k++)
    memcpy(m->workspace + th__in[k].off, inputs[k], th__in[k].bytes);
  for (int i = 0; i < (int)(sizeof th__calls / sizeof th__calls[0]); i++) {
    const struct th__call *c = &th__calls[i];
    void *args[5] = {0, 0, 0, 0, 0};
    for (int a = 0; a < c->nargs; a++) {
      switch (c->space[a]) {
        case 1: args[a] = m->workspace + c->off[a]; break;
        case 2:
        case 3: args[a] = m->weights + c->off[a]; break;
        default: args[a] = NULL; break;
      }
    }
    double t0 = call_seconds ? th__now() : 0;
    c->fn(args);
    if (call_seconds) call_seconds[i] += th__now() - t0;
  }
  for (int k = 0; k < th__info.num_outputs; k++)
    memcpy(outputs[k], m->workspace + th__out[k].off, th__out[k].bytes);
  return 0;
}

/* th_model_run's path: one float32 input and output. */
static int th__run_single(struct th_model *m, const float *input, float *output,
                          double *call_seconds, const char *fn) {
  if (!m || !input || !output) return th__fail("%s: NULL argument", fn);
  if (th__check_single(fn) != 0) return -1;
  const void *ins[1] = {input};
  void *outs[1] = {output};
  return th__run(m, ins, outs, call_seconds);
}

int th_model_run(struct th_model *m, const float *input, float *output) {
  return th__run_single(m, input, output, NULL, "th_model_run");
}

int th_model_run_profiled(struct th_model *m, const float *input, float *output, double *call_seconds) {
  if (!call_seconds) return th__fail("th_model_run_profiled: NULL call_seconds");
  return th__run_single(m, input, output, call_seconds, "th_model_run_profiled");
}

int th_model_run_io(struct th_model *m, const void *const *inputs, void *const *outputs) {
  if (th__check_io(m, inputs, outputs) != 0) return -1;
  return th__run(m, inputs, outputs, NULL);
}

int th_model_run_io_profiled(struct th_model *m, const void *const *inputs, void *const *outputs,
                             double *call_seconds) {
  if (!call_seconds) return th__fail("th_model_run_io_profiled: NULL call_seconds");
  if (th__check_io(m, inputs, outputs) != 0) return -1;
  return th__run(m, inputs, outputs, call_seconds);
}

void th_model_free(struct th_model *m) {
  if (!m) return;
  free(m->weights);
  free(m->workspace);
  free(m);
}
