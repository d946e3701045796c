"""Running a bundle in this process: load(path) unpacks a bundle .tar (manifest.json, model.so, params.bin)
into a cache folder keyed by its digest, dlopens model.so with ctypes, creates the model from params.bin
(th_model_create) and runs numpy arrays through th_model_run_io, inputs and outputs by name, dtype and shape
as the manifest gives them. The C ABI is compiler/model/tunehub_model.h."""
import ctypes
import hashlib
import json
import os
import shutil
import tarfile
import tempfile

import numpy as np

from .errors import ModelError

# enum th_dtype of tunehub_model.h, and the manifest's names of the dtypes
_DTYPES = {"float32": np.dtype(np.float32), "int64": np.dtype(np.int64)}
_TH_DTYPE = {0: "float32", 1: "int64"}
_MEMBERS = ("manifest.json", "model.so", "params.bin")


class _TensorDesc(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("ndim", ctypes.c_int),
                ("shape", ctypes.c_int64 * 6), ("count", ctypes.c_size_t)]


class _ModelInfo(ctypes.Structure):
    _fields_ = [("network", ctypes.c_char_p), ("target", ctypes.c_char_p), ("triple", ctypes.c_char_p),
                ("compiler_version", ctypes.c_char_p), ("batch", ctypes.c_int), ("input_ndim", ctypes.c_int),
                ("input_shape", ctypes.c_int64 * 4), ("output_ndim", ctypes.c_int),
                ("output_shape", ctypes.c_int64 * 4), ("input_size", ctypes.c_size_t),
                ("output_size", ctypes.c_size_t), ("workspace_bytes", ctypes.c_size_t),
                ("weights_bytes", ctypes.c_size_t), ("num_kernels", ctypes.c_int), ("num_inputs", ctypes.c_int),
                ("inputs", ctypes.POINTER(_TensorDesc)), ("num_outputs", ctypes.c_int),
                ("outputs", ctypes.POINTER(_TensorDesc))]


def cache_root():
    """$XDG_CACHE_HOME/tunehub, else ~/.cache/tunehub (the daemon's object cache keeps its k-*.o there too:
    the client uses subfolders)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tunehub")


def file_sha256(path):
    """The hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _unpack(path, digest):
    """The folder holding path's manifest.json, model.so and params.bin, unpacked once per digest."""
    models = os.path.join(cache_root(), "models")
    dest = os.path.join(models, digest)
    if all(os.path.isfile(os.path.join(dest, m)) for m in _MEMBERS):
        return dest
    os.makedirs(models, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".unpack-", dir=models)
    try:
        with tarfile.open(path, "r:") as tar:
            for name in _MEMBERS:  # only these three, as regular files: no path from the archive is trusted
                try:
                    info = tar.getmember(name)
                except KeyError:
                    raise ValueError(f"{path} is not a tunehub bundle: it has no {name}") from None
                if not info.isfile():
                    raise ValueError(f"{path}: {name} is not a regular file")
                with tar.extractfile(info) as src, open(os.path.join(tmp, name), "wb") as dst:
                    shutil.copyfileobj(src, dst)
        try:
            os.rename(tmp, dest)
        except OSError:  # another process unpacked it first
            shutil.rmtree(tmp, ignore_errors=True)
        return dest
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


class Model:
    """A bundle loaded in this process. run() takes numpy arrays and returns {output name: array}."""

    def __init__(self, path):
        self.path = os.fspath(path)
        self.digest = "sha256:" + file_sha256(self.path)
        self.dir = _unpack(self.path, self.digest.split(":", 1)[1])
        with open(os.path.join(self.dir, "manifest.json"), encoding="utf-8") as f:
            self.manifest = json.load(f)
        self._lib = ctypes.CDLL(os.path.join(self.dir, "model.so"))
        self._lib.th_model_info.restype = ctypes.POINTER(_ModelInfo)
        self._lib.th_model_create.argtypes = [ctypes.c_void_p, ctypes.c_size_t,
                                              ctypes.POINTER(ctypes.c_void_p)]
        self._lib.th_model_run_io.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p),
                                              ctypes.POINTER(ctypes.c_void_p)]
        self._lib.th_model_free.argtypes = [ctypes.c_void_p]
        self._lib.th_model_last_error.restype = ctypes.c_char_p
        info = self._lib.th_model_info().contents
        self.batch = info.batch
        self.target = info.target.decode()
        self.inputs = self._tensors(self.manifest.get("inputs"), info.inputs, info.num_inputs, "input")
        self.outputs = self._tensors(self.manifest.get("outputs"), info.outputs, info.num_outputs, "output")
        with open(os.path.join(self.dir, "params.bin"), "rb") as f:
            params = f.read()
        handle = ctypes.c_void_p()
        if self._lib.th_model_create(params, len(params), ctypes.byref(handle)) != 0:
            raise ModelError(self._last_error())
        self._handle = handle

    def _last_error(self):
        return (self._lib.th_model_last_error() or b"").decode("utf-8", "replace")

    @staticmethod
    def _tensors(listed, descs, n, kind):
        """[(name, dtype, shape)] from the manifest, checked against what model.so says of itself."""
        if not isinstance(listed, list) or len(listed) != n:
            raise ValueError(f"the manifest lists {len(listed or [])} {kind}s; model.so has {n}")
        out = []
        for i, t in enumerate(listed):
            d = descs[i]
            shape = tuple(int(x) for x in t["shape"])
            if (t["name"] != d.name.decode() or t["dtype"] != _TH_DTYPE.get(d.dtype)
                    or shape != tuple(d.shape[:d.ndim])):
                raise ValueError(f"the manifest's {kind} {t} differs from model.so's "
                                 f"({d.name.decode()}, {_TH_DTYPE.get(d.dtype)}, {tuple(d.shape[:d.ndim])})")
            if t["dtype"] not in _DTYPES:
                raise ValueError(f"{kind} {t['name']} has dtype {t['dtype']}; this client reads "
                                 f"{', '.join(_DTYPES)}")
            out.append((t["name"], _DTYPES[t["dtype"]], shape))
        return out

    def run(self, x):
        """Runs the model once. x: an array (a model with one input) or {input name: array}, each with exactly
        the manifest's dtype and shape (the batch included). Returns {output name: array}."""
        if self._handle is None:
            raise ModelError("the model is closed")
        names = [n for n, _, _ in self.inputs]
        if not isinstance(x, dict):
            if len(names) != 1:
                raise ValueError(f"this model has {len(names)} inputs ({', '.join(names)}): pass a dict by name")
            x = {names[0]: x}
        unknown = sorted(set(x) - set(names))
        missing = [n for n in names if n not in x]
        if unknown or missing:
            raise ValueError(f"inputs expected: {', '.join(names)}; got: {', '.join(sorted(map(str, x)))}")
        keep = []
        for name, dtype, shape in self.inputs:
            a = x[name]
            if not isinstance(a, np.ndarray):
                raise ValueError(f"input {name}: expected a numpy array of {dtype} {shape}, "
                                 f"got {type(a).__name__}")
            if a.dtype != dtype:
                raise ValueError(f"input {name}: expected dtype {dtype}, got {a.dtype}")
            if a.shape != shape:
                raise ValueError(f"input {name}: expected shape {shape} (batch {self.batch}), got {a.shape}")
            keep.append(np.ascontiguousarray(a))
        outs = {name: np.empty(shape, dtype) for name, dtype, shape in self.outputs}
        ins = (ctypes.c_void_p * len(keep))(*[a.ctypes.data for a in keep])
        outp = (ctypes.c_void_p * len(outs))(*[a.ctypes.data for a in outs.values()])
        if self._lib.th_model_run_io(self._handle, ins, outp) != 0:
            raise ModelError(self._last_error())
        return outs

    def close(self):
        """Frees the model (its weights and workspace); run() afterwards raises ModelError."""
        if getattr(self, "_handle", None) is not None:
            self._lib.th_model_free(self._handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def __repr__(self):
        return f"<tunehub.Model {self.manifest.get('network')} b{self.batch} {self.target} {self.digest[:19]}>"


def load(path):
    """Opens the bundle at path (a .tar from tunehub) and returns a Model ready to run."""
    return Model(path)
