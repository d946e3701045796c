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

/* Whether this CPU (and the OS, for the AVX and AVX-512 register state) has feature f, one of the names
 * the compiler lists in th__cpu_needs (compiler/target.c, tc__checked); -1 for a name it does not know. */
static int th__cpu_has(const char *f) {
  unsigned a = 0, b = 0, c = 0, d = 0, c1 = 0, d1 = 0, b7 = 0, c7 = 0, d7 = 0, a71 = 0, cx = 0;
  if (__get_cpuid(1, &a, &b, &c1, &d1) == 0) return 0;
  if (__get_cpuid_count(7, 0, &a, &b7, &c7, &d7) == 0) b7 = c7 = d7 = 0;
  if (__get_cpuid_count(7, 1, &a71, &b, &c, &d) == 0) a71 = 0;
  if (__get_cpuid(0x80000001u, &a, &b, &cx, &d) == 0) cx = 0;
  unsigned xcr0 = 0;
  if (c1 & (1u << 27)) { /* OSXSAVE: the OS saves the vector state; XGETBV says which */
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = lo;
  }
  int ymm = (xcr0 & 0x6) == 0x6, zmm = ymm && (xcr0 & 0xe0) == 0xe0;
  static const struct {
    const char *name;
    int leaf; /* 1: cpuid(1).ecx, 7: cpuid(7,0).ebx, 70: cpuid(7,0).ecx, 71: cpuid(7,0).edx,
                 72: cpuid(7,1).eax, 8: cpuid(0x80000001).ecx */
    int bit, state; /* state 1: needs ymm, 2: needs zmm */
  } fs[] = {{"sse4.2", 1, 20, 0},    {"popcnt", 1, 23, 0},     {"avx", 1, 28, 1},        {"avx2", 7, 5, 1},
            {"fma", 1, 12, 1},       {"f16c", 1, 29, 1},       {"bmi", 7, 3, 0},         {"bmi2", 7, 8, 0},
            {"lzcnt", 8, 5, 0},      {"movbe", 1, 22, 0},      {"avx512f", 7, 16, 2},    {"avx512bw", 7, 30, 2},
            {"avx512dq", 7, 17, 2},  {"avx512vl", 7, 31, 2},   {"avx512cd", 7, 28, 2},   {"avx512vnni", 70, 11, 2},
            {"avx512bf16", 72, 5, 2}, {"avx512fp16", 71, 23, 2}, {"avxvnni", 72, 4, 1}};
  for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++) {
    if (strcmp(fs[i].name, f) != 0) continue;
    unsigned r = fs[i].leaf == 1 ? c1 : fs[i].leaf == 7 ? b7 : fs[i].leaf == 70 ? c7 : fs[i].leaf == 71 ? d7
               : fs[i].leaf == 72 ? a71 : cx;
    int ok = (r >> fs[i].bit) & 1;
    if (fs[i].state == 1) ok = ok && ymm;
    if (fs[i].state == 2) ok = ok && zmm;
    return ok;
  }
  return -1;
}

/* Refuses a CPU that lacks a feature the kernels were compiled for (never a SIGILL later), naming them. */
static int th__cpu_check(void) {
  char missing[256] = "";
  size_t used = 0;
  const char *p = th__cpu_needs;
  while (*p) {
    size_t len = strcspn(p, ",");
    char f[32];
    snprintf(f, sizeof f, "%.*s", (int)(len < 31 ? len : 31), p);
    if (th__cpu_has(f) != 1) {
      int w = snprintf(missing + used, sizeof missing - used, "%s%s", used ? ", " : "", f);
      if (w > 0 && (size_t)w < sizeof missing - used) used += (size_t)w;
    }
    p += len + (p[len] == ',');
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
