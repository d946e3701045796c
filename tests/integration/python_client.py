"""The tunehub Python client against a real daemon (tests/integration/python_client.sh client starts it and
runs this with the venv's python, the package installed offline with pip). Usage:
python_client.py BASE_URL TUNEHUB_BINARY WORK_DIR DATA_DIR VENV_BIN TOKEN_FILE."""
import glob
import hashlib
import io
import os
import subprocess
import sys
import tarfile

import numpy as np

import tunehub
import tunehub.machine
from tunehub.client import Client
from th_check import check, raises  # tests/integration/th_check.py

BASE, TUNEHUB, WORK, DATA, VENV_BIN, TOKEN_FILE = sys.argv[1:7]
NET = "squeezenet_v1.1"


check(os.path.realpath(tunehub.__file__).startswith(os.path.realpath(os.path.dirname(VENV_BIN))),
      f"tunehub is imported from the venv ({tunehub.__file__})")
c = Client(BASE)

# errors from the server: its status, code and message
e = raises(tunehub.ServerError, lambda: c.pull("no-such-net", 1, progress=None), "unknown network")
check(e.status == 404 and e.code == "unknown_network", f"ServerError(404, unknown_network): {e.status} {e.code}")

# a miss: the build is followed through the job's events
events = []
path = c.pull(NET, 1, progress=lambda ev, data: events.append((ev, data)))
check(c.last_target[0] == "native", f"this machine's flags chose native: {c.last_target}")
check(any(ev in ("stage", "progress") for ev, _ in events) and events[-1][0] == "done",
      f"the progress callback saw the job's progress and its end ({[ev for ev, _ in events]})")
hexd = os.path.basename(path)[:-4]
check(path == os.path.join(os.environ["XDG_CACHE_HOME"], "tunehub", "bundles", hexd + ".tar"),
      f"the bundle is cached by digest under $XDG_CACHE_HOME/tunehub/bundles: {path}")
check(hashlib.sha256(open(path, "rb").read()).hexdigest() == hexd, "its bytes hash to its name")

# a second pull of the same digest downloads nothing
downloads = []
real_download = c._download
c._download = lambda *a: downloads.append(a) or real_download(*a)
check(c.pull(NET, 1, progress=None) == path and not downloads, "a second pull does not download again")

# the verifier hook sees every bundle pull returns, and may refuse it (verify_key: python_verify.py)
calls = []
check(Client(BASE, verifier=lambda p, d, cl: calls.append((p, d))).pull(NET, 1, progress=None) == path
      and calls == [(path, "sha256:" + hexd)], f"the verifier is called with the bundle and its digest: {calls}")


def refuse(p, d, cl):
    raise tunehub.IntegrityError("signature does not hold")


raises(tunehub.IntegrityError, lambda: Client(BASE, verifier=refuse).pull(NET, 1, progress=None), "signature")

# the model runs numpy arrays and gives what `tunehub run` gives
m = tunehub.load(path)
(iname, idtype, ishape), = m.inputs
(oname, _, oshape), = m.outputs
x = np.random.default_rng(7).standard_normal(ishape).astype(np.float32)
y = m.run(x)[oname]
check(y.shape == oshape and np.isfinite(y).all(), f"run gives {oname} {y.shape}")
check(np.array_equal(m.run({iname: x})[oname], y), "run by name gives the same")
x.tofile(os.path.join(WORK, "x.bin"))
subprocess.run([TUNEHUB, "run", path, "--input", f"{iname}={WORK}/x.bin", "--output-dir", f"{WORK}/out"],
               check=True, stdout=subprocess.DEVNULL)
ref = np.fromfile(os.path.join(WORK, "out", oname + ".bin"), dtype=np.float32).reshape(oshape)
diff = float(np.max(np.abs(ref - y)))
check(diff <= 1e-5, f"the outputs match `tunehub run`'s (max |diff| {diff:g})")

# wrong input: ValueError naming what was expected and what came
raises(ValueError, lambda: m.run(x.astype(np.float64)), "expected dtype float32", "got float64")
raises(ValueError, lambda: m.run(x[:, :, :-1]), f"expected shape {ishape}", f"got {x[:, :, :-1].shape}")
raises(ValueError, lambda: m.run(np.zeros((2,) + ishape[1:], np.float32)), "batch 1")
raises(ValueError, lambda: m.run({"nope": x}), f"inputs expected: {iname}", "got: nope")
raises(ValueError, lambda: m.run(x.tolist()), "expected a numpy array")
m.close()
raises(tunehub.ModelError, lambda: m.run(x), "closed")

# errors of th_model_create come with its text: a bundle whose params.bin fails its CRC
bad = os.path.join(WORK, "bad.tar")
with tarfile.open(path) as src, tarfile.open(bad, "w") as dst:
    for info in src.getmembers():
        data = src.extractfile(info).read()
        if info.name == "params.bin":
            data = data[:-8] + bytes(b ^ 0xFF for b in data[-8:])
        dst.addfile(info, io.BytesIO(data))
raises(tunehub.ModelError, lambda: tunehub.load(bad), "params")

# load=True and the context manager
with c.pull(NET, 1, progress=None, load=True) as m2:
    check(np.array_equal(m2.run(x)[oname], y), "pull(load=True) gives a Model that runs the same")

# a tampered cached bundle is refused: not returned, downloaded again
with open(path, "r+b") as f:
    f.seek(1000)
    f.write(b"tampered")
got = c.pull(NET, 1, progress=None)
check(len(downloads) == 1 and hashlib.sha256(open(got, "rb").read()).hexdigest() == hexd,
      "a tampered cached bundle is refused and downloaded again")

# tunehub-pull, the console script
out = os.path.join(WORK, "pulled.tar")
r = subprocess.run([os.path.join(VENV_BIN, "tunehub-pull"), NET, "1", "--url", BASE, "--out", out],
                   capture_output=True, text=True)
check(r.returncode == 0 and r.stdout.strip() == out and open(out, "rb").read() == open(path, "rb").read(),
      f"tunehub-pull --out writes the bundle ({r.returncode}: {r.stderr.strip()})")
# a miss (batch 2) through tunehub-pull: the default progress prints the job's stages on stderr
r = subprocess.run([os.path.join(VENV_BIN, "tunehub-pull"), NET, "2", "--url", BASE], capture_output=True,
                   text=True)
check(r.returncode == 0 and "tunehub: job " in r.stderr and "succeeded" in r.stderr,
      f"tunehub-pull shows the build's progress on stderr: {r.stderr.strip()!r}")
r = subprocess.run([os.path.join(VENV_BIN, "tunehub-pull"), "no-such-net", "1", "--url", BASE],
                   capture_output=True, text=True)
check(r.returncode == 1 and "unknown_network" in r.stderr, f"tunehub-pull reports the server's error: {r.stderr}")

# the catalog calls
check(any(n["name"] == NET for n in c.networks()), "networks() lists the zoo")
check(c.versions(NET, 1)["versions"][0]["digest"] == "sha256:" + hexd, "versions() gives the pulled digest")

# tune and upload reach their routes and bring the server's 400 back (nothing queued, nothing stored)
e = raises(tunehub.ServerError, lambda: c.tune(NET, 1, trials=2), "token")
check(e.status == 401, f"tune() without the token: {e.status} {e.code}")
ct = Client(BASE, token=open(TOKEN_FILE).read().strip())
e = raises(tunehub.ServerError, lambda: ct.tune(NET, 1, trials=0), "trials")
check(e.status == 400, f"tune(trials=0): {e.status} {e.code}")
bogus = os.path.join(WORK, "bogus.onnx")
with open(bogus, "wb") as f:
    f.write(b"not an onnx file")
e = raises(tunehub.ServerError, lambda: ct.upload(bogus, "bogus"))
check(e.status == 400 and not any(n["name"] == "bogus" for n in c.networks()), f"upload(bogus): {e.status} {e.code}")

# cuda: the device's arch from libcuda, or a clear error where there is none
try:
    arch = tunehub.machine.cuda_arch()
except tunehub.TunehubError:
    arch = None
if arch is None:
    raises(tunehub.TunehubError, lambda: c.pull(NET, 1, framework="cuda", progress=None), "no CUDA device")

# a named target is asked for as it is (no machine headers, no auto choice)
p3 = c.pull(NET, 1, target="x86-64-v3", progress=None)
check(p3 != path and c.last_target == (None, None), f"target=x86-64-v3 pulls its own bundle: {p3}")
with tunehub.load(p3) as m3:
    check(m3.target == "llvm -mcpu=x86-64-v3", f"its model.so is built for x86-64-v3: {m3.target}")

# a tampered served bundle is refused: the store's file is changed under the daemon (same size)
blob = glob.glob(os.path.join(DATA, "artifacts", "*", hexd))
check(len(blob) == 1, f"the bundle's blob is in the store: {blob}")
os.chmod(blob[0], 0o644)
with open(blob[0], "r+b") as f:
    f.seek(2000)
    f.write(b"evil")
os.unlink(path)
raises(tunehub.IntegrityError, lambda: c.pull(NET, 1, progress=None), "not to the sha256:" + hexd, "refused")
check(not os.path.exists(path) and not glob.glob(os.path.join(os.path.dirname(path), ".pull-*")),
      "nothing of the refused download is left in the cache")
print("python client: ok")
