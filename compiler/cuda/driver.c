/* The CUDA driver, opened with dlopen at run time (see cu_driver.h), and tc_cuda_device_query. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cu_driver.h"
#include "tc_cuda.h"

static tc_cu tc__cu_table;
static th_status tc__cu_rc = TH_ERR_UNSUPPORTED;
static char tc__cu_err[512];
static pthread_once_t tc__cu_once = PTHREAD_ONCE_INIT;

static void tc__cu_load(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(tc__cu_err, sizeof tc__cu_err, "no CUDA device: the CUDA driver (libcuda.so.1) is not installed (%s)",
             dlerror());
    return;
  }
  tc_cu *c = &tc__cu_table;
  struct {
    void **slot;
    const char *name;
  } syms[] = {
      {(void **)&c->Init, "cuInit"},
      {(void **)&c->DriverGetVersion, "cuDriverGetVersion"},
      {(void **)&c->DeviceGetCount, "cuDeviceGetCount"},
      {(void **)&c->DeviceGet, "cuDeviceGet"},
      {(void **)&c->DeviceGetName, "cuDeviceGetName"},
      {(void **)&c->DeviceGetAttribute, "cuDeviceGetAttribute"},
      {(void **)&c->DeviceTotalMem, "cuDeviceTotalMem_v2"},
      {(void **)&c->DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"},
      {(void **)&c->DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"},
      {(void **)&c->CtxSetCurrent, "cuCtxSetCurrent"},
      {(void **)&c->ModuleLoadData, "cuModuleLoadData"},
      {(void **)&c->ModuleUnload, "cuModuleUnload"},
      {(void **)&c->ModuleGetFunction, "cuModuleGetFunction"},
      {(void **)&c->MemAlloc, "cuMemAlloc_v2"},
      {(void **)&c->MemFree, "cuMemFree_v2"},
      {(void **)&c->MemcpyHtoD, "cuMemcpyHtoD_v2"},
      {(void **)&c->MemcpyDtoH, "cuMemcpyDtoH_v2"},
      {(void **)&c->MemsetD8, "cuMemsetD8_v2"},
      {(void **)&c->MemsetD8Async, "cuMemsetD8Async"},
      {(void **)&c->LaunchKernel, "cuLaunchKernel"},
      {(void **)&c->StreamCreate, "cuStreamCreate"},
      {(void **)&c->StreamDestroy, "cuStreamDestroy_v2"},
      {(void **)&c->StreamQuery, "cuStreamQuery"},
      {(void **)&c->StreamSynchronize, "cuStreamSynchronize"},
      {(void **)&c->EventCreate, "cuEventCreate"},
      {(void **)&c->EventDestroy, "cuEventDestroy_v2"},
      {(void **)&c->EventRecord, "cuEventRecord"},
      {(void **)&c->EventQuery, "cuEventQuery"},
      {(void **)&c->EventElapsedTime, "cuEventElapsedTime"},
      {(void **)&c->GetErrorString, "cuGetErrorString"},
      {(void **)&c->FuncSetAttribute, "cuFuncSetAttribute"},
  };
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    *syms[i].slot = dlsym(h, syms[i].name);
    if (!*syms[i].slot) {
      snprintf(tc__cu_err, sizeof tc__cu_err, "no CUDA device: the CUDA driver lacks %s (too old?)", syms[i].name);
      return; /* the handle stays open: the process may hold other references */
    }
  }
  tc_cu_result r = c->Init(0);
  int n = 0;
  if (r == 0) r = c->DeviceGetCount(&n);
  if (r != 0) {
    snprintf(tc__cu_err, sizeof tc__cu_err, "no CUDA device: cuInit failed (%s)", tc__cu_errstr(c, r));
    return;
  }
  if (n < 1) {
    snprintf(tc__cu_err, sizeof tc__cu_err, "no CUDA device: the driver reports none");
    return;
  }
  tc__cu_rc = TH_OK;
}

th_status tc__cu_get(const tc_cu **out, char *err, size_t errlen) {
  pthread_once(&tc__cu_once, tc__cu_load);
  if (tc__cu_rc != TH_OK) {
    if (err && errlen) snprintf(err, errlen, "%s", tc__cu_err);
    return tc__cu_rc;
  }
  *out = &tc__cu_table;
  return TH_OK;
}

const char *tc__cu_errstr(const tc_cu *cu, tc_cu_result r) {
  static _Thread_local char buf[64];
  const char *s = NULL;
  if (cu && cu->GetErrorString && cu->GetErrorString(r, &s) == 0 && s) return s;
  snprintf(buf, sizeof buf, "CUDA error %d", r);
  return buf;
}

th_status tc_cuda_device_query(tc_cuda_device *out, char *err, size_t errlen) {
  if (err && errlen) err[0] = '\0';
  if (!out) return TH_ERR_INVALID;
  const tc_cu *cu = NULL;
  th_status rc = tc__cu_get(&cu, err, errlen);
  if (rc != TH_OK) return rc;
  memset(out, 0, sizeof *out);
  int dev = 0;
  size_t mem = 0;
  tc_cu_result r = cu->DeviceGet(&dev, 0);
  if (r == 0) r = cu->DeviceGetName(out->name, (int)sizeof out->name, dev);
  if (r == 0) r = cu->DeviceGetAttribute(&out->major, TC_CU_ATTR_CC_MAJOR, dev);
  if (r == 0) r = cu->DeviceGetAttribute(&out->minor, TC_CU_ATTR_CC_MINOR, dev);
  if (r == 0) r = cu->DeviceGetAttribute(&out->multiprocessors, TC_CU_ATTR_SM_COUNT, dev);
  if (r == 0) r = cu->DeviceTotalMem(&mem, dev);
  if (r == 0) r = cu->DriverGetVersion(&out->driver_version);
  if (r != 0) {
    if (err && errlen) snprintf(err, errlen, "no CUDA device: querying device 0 failed (%s)", tc__cu_errstr(cu, r));
    return TH_ERR_UNSUPPORTED;
  }
  /* the limits: an attribute this driver does not know stays 0 (the arch table's value is used) */
  struct {
    int *dst, attr;
  } lim[] = {
      {&out->max_threads, TC_CU_ATTR_MAX_THREADS_PER_BLOCK},
      {&out->max_block[0], TC_CU_ATTR_MAX_BLOCK_DIM_X},
      {&out->max_block[1], TC_CU_ATTR_MAX_BLOCK_DIM_X + 1},
      {&out->max_block[2], TC_CU_ATTR_MAX_BLOCK_DIM_X + 2},
      {&out->max_grid[0], TC_CU_ATTR_MAX_GRID_DIM_X},
      {&out->max_grid[1], TC_CU_ATTR_MAX_GRID_DIM_X + 1},
      {&out->max_grid[2], TC_CU_ATTR_MAX_GRID_DIM_X + 2},
      {&out->max_shared_bytes, TC_CU_ATTR_MAX_SHARED_PER_BLOCK},
      {&out->max_shared_optin, TC_CU_ATTR_MAX_SHARED_PER_BLOCK_OPTIN},
      {&out->max_shared_per_sm, TC_CU_ATTR_MAX_SHARED_PER_SM},
      {&out->max_regs_per_block, TC_CU_ATTR_MAX_REGS_PER_BLOCK},
      {&out->max_regs_per_sm, TC_CU_ATTR_MAX_REGS_PER_SM},
      {&out->max_threads_per_sm, TC_CU_ATTR_MAX_THREADS_PER_SM},
      {&out->l2_bytes, TC_CU_ATTR_L2_CACHE_SIZE},
  };
  for (size_t i = 0; i < sizeof lim / sizeof lim[0]; i++)
    if (cu->DeviceGetAttribute(lim[i].dst, lim[i].attr, dev) != 0 || *lim[i].dst < 0)
      *lim[i].dst = 0;
  out->name[sizeof out->name - 1] = '\0';
  out->total_mem = (int64_t)mem;
  snprintf(out->arch, sizeof out->arch, "sm_%d%d", out->major, out->minor);
  return TH_OK;
}
