/* tc__cu: the few CUDA driver API entry points tunehub uses, resolved with dlopen("libcuda.so.1") on first
 * use (never linked), so the compiler and its tests run on machines without a driver. Internal to
 * compiler/cuda/. The types mirror cuda.h's ABI (CUdeviceptr is 64-bit, handles are pointers). */
#ifndef TC_CU_DRIVER_H
#define TC_CU_DRIVER_H

#include <stddef.h>
#include <stdint.h>

#include "th_status.h"

typedef int tc_cu_result; /* CUresult: 0 = CUDA_SUCCESS */
typedef uint64_t tc_cu_ptr;
typedef void *tc_cu_handle;

typedef struct tc_cu {
  tc_cu_result (*Init)(unsigned);
  tc_cu_result (*DriverGetVersion)(int *);
  tc_cu_result (*DeviceGetCount)(int *);
  tc_cu_result (*DeviceGet)(int *, int);
  tc_cu_result (*DeviceGetName)(char *, int, int);
  tc_cu_result (*DeviceGetAttribute)(int *, int, int);
  tc_cu_result (*DeviceTotalMem)(size_t *, int);
  tc_cu_result (*DevicePrimaryCtxRetain)(tc_cu_handle *, int);
  tc_cu_result (*DevicePrimaryCtxRelease)(int);
  tc_cu_result (*CtxSetCurrent)(tc_cu_handle);
  tc_cu_result (*ModuleLoadData)(tc_cu_handle *, const void *);
  tc_cu_result (*ModuleUnload)(tc_cu_handle);
  tc_cu_result (*ModuleGetFunction)(tc_cu_handle *, tc_cu_handle, const char *);
  tc_cu_result (*MemAlloc)(tc_cu_ptr *, size_t);
  tc_cu_result (*MemFree)(tc_cu_ptr);
  tc_cu_result (*MemcpyHtoD)(tc_cu_ptr, const void *, size_t);
  tc_cu_result (*MemcpyDtoH)(void *, tc_cu_ptr, size_t);
  tc_cu_result (*MemsetD8)(tc_cu_ptr, unsigned char, size_t);
  tc_cu_result (*MemsetD8Async)(tc_cu_ptr, unsigned char, size_t, tc_cu_handle);
  tc_cu_result (*LaunchKernel)(tc_cu_handle, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                               unsigned, tc_cu_handle, void **, void **);
  tc_cu_result (*StreamCreate)(tc_cu_handle *, unsigned);
  tc_cu_result (*StreamDestroy)(tc_cu_handle);
  tc_cu_result (*StreamQuery)(tc_cu_handle);
  tc_cu_result (*StreamSynchronize)(tc_cu_handle);
  tc_cu_result (*EventCreate)(tc_cu_handle *, unsigned);
  tc_cu_result (*EventDestroy)(tc_cu_handle);
  tc_cu_result (*EventRecord)(tc_cu_handle, tc_cu_handle);
  tc_cu_result (*EventQuery)(tc_cu_handle);
  tc_cu_result (*EventElapsedTime)(float *, tc_cu_handle, tc_cu_handle);
  tc_cu_result (*GetErrorString)(tc_cu_result, const char **);
  tc_cu_result (*FuncSetAttribute)(tc_cu_handle, int, int);
} tc_cu;

/* The driver table, loaded and cuInit'ed once per process. TH_ERR_UNSUPPORTED with "no CUDA device: ..."
 * in err when libcuda.so.1 is missing, lacks a symbol, cuInit fails or there is no device. */
th_status tc__cu_get(const tc_cu **out, char *err, size_t errlen);
/* The driver's name for a CUresult ("CUDA_ERROR_..." text) or "error N". */
const char *tc__cu_errstr(const tc_cu *cu, tc_cu_result r);

/* CUdevice_attribute values (cuda.h) */
#define TC_CU_ATTR_MAX_THREADS_PER_BLOCK 1
#define TC_CU_ATTR_MAX_BLOCK_DIM_X 2 /* Y, Z follow */
#define TC_CU_ATTR_MAX_GRID_DIM_X 5  /* Y, Z follow */
#define TC_CU_ATTR_MAX_SHARED_PER_BLOCK 8
/* CUfunction_attribute: a kernel's dynamic shared memory above 48 KiB needs this opt-in */
#define TC_CU_FUNC_ATTR_MAX_DYNAMIC_SHARED 8
#define TC_CU_ATTR_MAX_REGS_PER_BLOCK 12
#define TC_CU_ATTR_MAX_THREADS_PER_SM 39
#define TC_CU_ATTR_MAX_SHARED_PER_SM 81
#define TC_CU_ATTR_MAX_REGS_PER_SM 82
#define TC_CU_ATTR_MAX_SHARED_PER_BLOCK_OPTIN 97
#define TC_CU_ATTR_CC_MAJOR 75
#define TC_CU_ATTR_CC_MINOR 76
#define TC_CU_ATTR_SM_COUNT 16
#define TC_CU_ATTR_L2_CACHE_SIZE 38
#define TC_CU_ERROR_NOT_READY 600

#endif
