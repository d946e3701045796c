/* The CPU backend (framework "llvm") behind the tc_backend vtable: the host CPU as the target, the
 * NCHW[cb]c templates of ops/ as its template table, the layout pass, kernels emitted into one LLVM module
 * per core in parallel (the build's hot path), packed weights in the plan, model/model_rt.c as the runtime
 * of its model .so, and candidate libraries for the tuner (tc_kernels_build_so). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backend_int.h"
#include "ops.h"
#include "passes.h"
#include "target.h"
#include "tc_llvm.h"
#include "tc_model_embed.h"

_Static_assert(sizeof(tc_target) <= TC_BACKEND_TARGET_BYTES, "tc_target must fit tc_backend_target");

#define CPU(t) TC__CIMPL(tc_target, t)

static void llvm__fill(tc_backend_target *t, const tc_target *cpu) {
  *TC__IMPL(tc_target, t) = *cpu;
  snprintf(t->str, sizeof t->str, "llvm -mcpu=%.64s", cpu->cpu[0] ? cpu->cpu : "generic");

  snprintf(t->triple, sizeof t->triple, "%.63s", cpu->triple);
}

static th_status llvm__target_init(const char *arch, tc_backend_target *t, char *err, size_t errlen) {
  /* arch: the CPU a client deploys to (tc_target_named: "native", a CPU name or an x86-64-vN level) */
  tc_target cpu;
  th_status rc = tc_target_named(&cpu, arch, err, errlen);
  if (rc != TH_OK) return rc;
  /* a target with a feature the model .so's CPUID guard cannot test is refused before any code is
   * built */
  th_buf probe;
  th_buf_init(&probe, (size_t)1 << 16);
  rc = tc_target_guard(&cpu, &probe, err, errlen);
  th_buf_free(&probe);
  if (rc != TH_OK) return rc;
  llvm__fill(t, &cpu);
  return TH_OK;
}

static th_status llvm__target_parse(const char *target_str, tc_backend_target *t) {
  /* "llvm -mcpu=NAME": records and jobs name the CPU they were built for; the host's own name is the host */
  const char *p = strstr(target_str, "-mcpu=");
  char name[64] = "";
  if (p) snprintf(name, sizeof name, "%.*s", (int)strcspn(p + 6, " "), p + 6);
  return llvm__target_init(name, t, NULL, 0);
}

static const char *llvm__target_name_at(int i) {
  return tc_target_cpu_at((size_t)i); /* the CPU names and x86-64-vN levels tc_target_named knows */
}

static int llvm__runs_here(const tc_backend_target *t, char *why, size_t whylen) {
  tc_target host;
  if (tc_target_host(&host) != TH_OK) return 0;
  char missing[2048];
  tc_target_missing(CPU(t), &host, missing, sizeof missing);
  if (missing[0] && why && whylen)
    snprintf(why, whylen, "this machine's CPU (%s) lacks %s, which code built for %s needs", host.cpu, missing,
             CPU(t)->cpu);
  return missing[0] == '\0';
}

static th_status llvm__target_auto(const tc_client_machine *m, char *name, size_t n, char *reason,
                                   size_t rn, char *err, size_t errlen) {
  int feats = m->cpu_features && *m->cpu_features, cpu = m->cpu_name && *m->cpu_name;
  if (!feats && !cpu) {
    tc__seterr(
        err, errlen,
        "target=auto for llvm needs the client's CPU: its features in X-Tunehub-CPU-Features "
        "(the /proc/cpuinfo flags, comma-separated: avx2,avx512f,fma,...) or its LLVM CPU name in "
        "X-Tunehub-CPU");
    return TH_ERR_NOT_FOUND;
  }
  return tc_target_auto(m->cpu_features, m->cpu_name, name, n, reason, rn, err, errlen);
}

static int llvm__yes(char *why, size_t whylen) {
  (void)why, (void)whylen;
  return 1;
}

static th_status llvm__device(tc_device *out, char *err, size_t errlen) {
  tc_target cpu;
  th_status rc = tc_target_host(&cpu);
  if (rc != TH_OK) {
    tc__seterr(err, errlen, "LLVM has no target for this machine");
    return rc;
  }
  memset(out, 0, sizeof *out);
  snprintf(out->name, sizeof out->name, "%s", cpu.cpu);
  snprintf(out->arch, sizeof out->arch, "%.15s", cpu.cpu);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  out->multiprocessors = n > 0 ? (int)n : 1;
  return TH_OK;
}

/* ---- template table: ops/ (ops_int.h has one entry per family) ---------------------------------------- */

static int llvm__supports_op(tc_kernel k) {
  return tc_op_has_template(k);
}

static th_status llvm__space(const tc_backend_target *t, const tc_workload *wl, tc_space *out) {
  return tc_op_space(wl, CPU(t), out);
}

static th_status llvm__fallback(const tc_backend_target *t, const tc_workload *wl, const tc_space *s,
                                tc_config *out) {
  return tc_op_fallback(wl, CPU(t), s, out);
}

static th_status llvm__valid(const tc_backend_target *t, const tc_workload *wl, const tc_space *s,
                             const tc_config *cfg, char *why, size_t whylen) {
  th_status rc = tc_op_valid(wl, CPU(t), s, cfg);
  if (rc != TH_OK) tc__seterr(why, whylen, "the template rejects this config");
  return rc;
}

static th_status llvm__lower(const tc_backend_target *t, const tc_workload *wl, const tc_config *cfg,
                             th_arena *arena, const tc_stmt **body) {
  return tc_op_lower(wl, cfg, CPU(t), arena, body);
}

static th_status llvm__graph_pass(const tc_backend_target *t, tc_graph *g) {
  return tc_pass_layout(g, CPU(t)->simd_lanes);
}

/* ---- emit: kernels split round-robin over one LLVM module per core, emitted in parallel ---------------- */

typedef struct llvm__job {
  const tc_target *t;
  const tc__kernel *ks;
  int nk, first, step;
  const char *path, *network;
  th_status rc;
  char err[512];
} llvm__job;

/* Emits kernels first, first+step, ... into one object file. Each job owns its LLVM module (and context),
 * which the LLVM backend allows across threads. */
static void *llvm__job_run(void *arg) {
  llvm__job *j = arg;
  tc_llvm_module_t *mod = NULL;
  j->rc = tc_llvm_module_new(j->t, j->network, &mod);
  if (j->rc != TH_OK) snprintf(j->err, sizeof j->err, "LLVM module: %s", mod ? tc_llvm_errmsg(mod) : "failed");
  for (int k = j->first; j->rc == TH_OK && k < j->nk; k += j->step) {
    j->rc = tc_llvm_add_kernel(mod, j->ks[k].fn, &j->ks[k].wl, &j->ks[k].cfg);
    if (j->rc != TH_OK) snprintf(j->err, sizeof j->err, "kernel %s: %s", j->ks[k].key, tc_llvm_errmsg(mod));
  }
  if (j->rc == TH_OK) {
    j->rc = tc_llvm_emit_object(mod, j->path);
    if (j->rc != TH_OK) snprintf(j->err, sizeof j->err, "codegen: %s", tc_llvm_errmsg(mod));
  }
  tc_llvm_module_free(mod);
  return NULL;
}

static th_status llvm__emit(const tc_backend_target *t, const tc__kernel *ks, int nk, const char *dir,
                            const char *network, tc__emit *out, char *err, size_t errlen) {
  int njobs = 1;
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  if (ncpu > 1) njobs = ncpu < TC__MAX_OBJS ? (int)ncpu : TC__MAX_OBJS;
  if (njobs > nk) njobs = nk > 0 ? nk : 1;
  llvm__job jobs[TC__MAX_OBJS];
  memset(jobs, 0, sizeof jobs);
  for (int j = 0; j < njobs; j++) {
    snprintf(out->objs[j], sizeof out->objs[j], "%s/kernels%d.o", dir, j);
    jobs[j] = (llvm__job){CPU(t), ks, nk, j, njobs, out->objs[j], network, TH_OK, ""};
  }
  pthread_t th[TC__MAX_OBJS];
  int started[TC__MAX_OBJS] = {0};
  for (int j = 1; j < njobs; j++) started[j] = pthread_create(&th[j], NULL, llvm__job_run, &jobs[j]) == 0;
  llvm__job_run(&jobs[0]);
  for (int j = 1; j < njobs; j++) {
    if (started[j]) pthread_join(th[j], NULL);
    else llvm__job_run(&jobs[j]);
  }
  th_status rc = TH_OK;
  for (int j = 0; j < njobs && rc == TH_OK; j++) {
    if (jobs[j].rc != TH_OK) {
      rc = jobs[j].rc;
      tc__seterr(err, errlen, "%s", jobs[j].err);
    }
  }
  out->nobjs = njobs;
  return rc;
}

static void llvm__emit_free(tc__emit *e) {
  (void)e; /* the objects live in the work directory */
}

/* ---- plan --------------------------------------------------------------------------------------------- */

static th_status llvm__plan_kernels(const tc_backend_target *t, const tc__kernel *ks, int nk, const tc__emit *e,
                                    th_buf *b) {
  (void)e;
  for (int k = 0; k < nk; k++) th_buf_appendf(b, "void %s(void *const *args);\n", ks[k].fn);
  /* the CPU features the kernels were compiled for: th_model_create checks them with CPUID (model_rt.c) */
  return tc_target_guard(CPU(t), b, NULL, 0);
}

static th_status llvm__weight_floats(const tc_backend_target *t, const tc__kernel *k, const tc_param *w,
                                     int64_t *floats) {
  (void)w; /* packed: the template's layout, not torch's */
  *floats = (int64_t)tc_op_packed_size(&k->wl, &k->cfg, CPU(t));
  return TH_OK;
}

static th_status llvm__pack(const tc_backend_target *t, const tc__kernel *k, int p[TC_PACK_NPARAMS]) {
  return tc_op_pack_params(&k->wl, &k->cfg, CPU(t), p);
}

static th_status llvm__plan_runtime(const tc_backend_target *t, const char *dir, th_buf *b) {
  (void)t, (void)dir;
  return th_buf_append(b, tc_model_src_model_rt_c, sizeof tc_model_src_model_rt_c - 1);
}

static json_t *llvm__manifest_target(const tc_backend_target *t) {
  const tc_target *c = CPU(t);
  char need[2048], host_name[256] = "";
  tc_target_required(c, need, sizeof need);
  tc_target host;
  if (tc_target_host(&host) != TH_OK) snprintf(host.cpu, sizeof host.cpu, "unknown");
  gethostname(host_name, sizeof host_name - 1);
  /* required_features: what th_model_create checks on the CPU it runs on; built_on: the host that compiled */
  return json_pack("{s:s,s:s,s:s,s:s,s:i,s:{s:s,s:s}}", "triple", c->triple, "cpu", c->cpu, "features",
                   c->features, "required_features", need, "simd_lanes", c->simd_lanes, "built_on", "hostname",
                   host_name, "cpu", host.cpu);
}

/* ---- candidates --------------------------------------------------------------------------------------- */

static th_status llvm__prepare(char *err, size_t errlen) {
  const char *rt_o = NULL;
  return tc_runtime_object(&rt_o, err, errlen);
}

th_status tc_kernels_build_so(const tc_target *t, int n, const tc_workload *wls, const tc_config *cfgs,
                              const char *const *fn_names, const char *so_path, char *err, size_t errlen) {
  if (err && errlen) err[0] = '\0';
  if (!t || n < 0 || (n > 0 && (!wls || !cfgs || !fn_names)) || !so_path) return TH_ERR_INVALID;
  tc_llvm_module_t *m = NULL;
  th_status rc = tc_llvm_module_new(t, "kernels", &m);
  if (rc != TH_OK) tc__seterr(err, errlen, "LLVM has no target for this machine");
  for (int i = 0; i < n && rc == TH_OK; i++) {
    rc = tc_llvm_add_kernel(m, fn_names[i], &wls[i], &cfgs[i]);
    if (rc != TH_OK) tc__seterr(err, errlen, "kernel %s: %s", fn_names[i], tc_llvm_errmsg(m));
  }
  char obj[4096];
  int w = snprintf(obj, sizeof obj, "%s.%ld.o", so_path, (long)getpid());
  if (rc == TH_OK && (w < 0 || (size_t)w >= sizeof obj)) rc = TH_ERR_TOO_LARGE;
  if (rc == TH_OK) {
    rc = tc_llvm_emit_object(m, obj);
    if (rc != TH_OK) tc__seterr(err, errlen, "codegen: %s", tc_llvm_errmsg(m));
  }
  tc_llvm_module_free(m);
  if (rc == TH_OK) {
    const char *objs[1] = {obj};
    rc = tc_link_so(1, objs, 0, NULL, so_path, err, errlen);
  }
  unlink(obj);
  return rc;
}

static th_status llvm__compile(const tc_backend_target *t, int n, const tc_workload *wls, const tc_config *cfgs,
                               const char *const *fn_names, const char *path, char *err, size_t errlen) {
  return tc_kernels_build_so(CPU(t), n, wls, cfgs, fn_names, path, err, errlen);
}

const tc_backend tc__backend_llvm = {
    .name = "llvm",
    .target_init = llvm__target_init,
    .target_parse = llvm__target_parse,
    .target_name_at = llvm__target_name_at,
    .target_hint = "an x86-64 CPU or level",
    .arch_flag = "-mcpu=",
    .claims_arch = NULL, /* the default backend: every name no other backend claims */
    .takes_precision = NULL,
    .has_device = llvm__yes,
    .can_build = llvm__yes,
    .device = llvm__device,
    .runs_here = llvm__runs_here,
    .target_auto = llvm__target_auto,
    .supports_op = llvm__supports_op,
    .space = llvm__space,
    .fallback = llvm__fallback,
    .valid = llvm__valid,
    .lower = llvm__lower,
    .graph_pass = llvm__graph_pass,
    .emit = llvm__emit,
    .emit_free = llvm__emit_free,
    .plan_includes = "#include \"th_rt.h\"\n",
    .call_field = "void (*fn)(void *const *);",
    .call_by_index = 0,
    .plan_kernels = llvm__plan_kernels,
    .weight_floats = llvm__weight_floats,
    .pack = llvm__pack,
    .plan_runtime = llvm__plan_runtime,
    .manifest_target = llvm__manifest_target,
    .manifest_build = NULL,
    .manifest_layer = NULL,
    .measure_kind = TC_MEASURE_LIBRARY,
    .prepare = llvm__prepare,
    .compile = llvm__compile,
    .measure = NULL,
};
