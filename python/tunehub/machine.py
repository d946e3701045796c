"""What this machine is, as the server's ?target=auto reads it: the CPU's feature flags from /proc/cpuinfo
(sent as X-Tunehub-CPU-Features) and, for cuda, the device's arch from the driver (libcuda.so.1,
cuDeviceGetAttribute; sent as X-Tunehub-CUDA-Arch)."""
import ctypes

from .errors import TunehubError

# CUdevice_attribute: CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR and _MINOR
_CC_MAJOR, _CC_MINOR = 75, 76


def parse_cpuinfo(text):
    """The flags of the first processor in a /proc/cpuinfo text, lower case, in their order ([] when it has
    no flags line: not an x86 machine)."""
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() == "flags":
            return value.lower().split()
    return []


def cpu_features(path="/proc/cpuinfo"):
    """This machine's CPU flags (parse_cpuinfo of path); [] when it cannot be read."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return parse_cpuinfo(f.read())
    except OSError:
        return []


def cuda_arch(libname="libcuda.so.1"):
    """The arch of CUDA device 0 ("sm_86") as the driver reports it; TunehubError("no CUDA device: ...")
    when the driver is missing or has no device."""
    try:
        cu = ctypes.CDLL(libname)
    except OSError as e:
        raise TunehubError(f"no CUDA device: cannot load {libname} ({e})") from None
    dev = ctypes.c_int()
    major, minor = ctypes.c_int(), ctypes.c_int()
    for what, rc in (("cuInit", lambda: cu.cuInit(0)), ("cuDeviceGet", lambda: cu.cuDeviceGet(ctypes.byref(dev), 0)),
                     ("cuDeviceGetAttribute", lambda: cu.cuDeviceGetAttribute(ctypes.byref(major), _CC_MAJOR, dev)
                      or cu.cuDeviceGetAttribute(ctypes.byref(minor), _CC_MINOR, dev))):
        code = rc()
        if code != 0:
            raise TunehubError(f"no CUDA device: {what} returned CUDA error {code}")
    return f"sm_{major.value}{minor.value}"
