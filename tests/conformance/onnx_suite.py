#!/usr/bin/python3
"""ONNX's own backend conformance suites (Debian's libonnx-testdata: ONNX 1.12's `node`, `pytorch-converted`,
`pytorch-operator` and `simple` sets) through tunehub's daemon-free CLI (issue 38, item 4). For each test
directory it reads model.onnx and test_data_set_*/{input,output}_*.pb (python3-onnx), runs `tunehub import`,
`tunehub build llvm NAME BATCH` (fallback configs) and `tunehub run --input ... --output-dir`, and compares
every output with the expected one as ONNX's backend runner does (numpy's assert_allclose, rtol 1e-3, atol
1e-7, NaN equal to NaN; a test's data.json may set rtol/atol). Each test is classified:

  pass     every output of every data set agrees;
  refused  import or build refused it (the reason's first line is kept);
  wrong    an output differs, has another shape or size, or is missing, or `tunehub run` failed;
  crash    a tunehub process died by a signal or ran past its timeout;
  unfed    an input is neither float32 nor int64, which `tunehub run --input` cannot feed (not counted).

The batch of the build is the first dimension of the first input (the importer takes the first dimension of
every input as the batch). When the import refuses a test with several inputs, the inputs after the first
are frozen into initializers (as a deployed model has its weights and shape inputs) and the import is tried
again; the CSV's `frozen` column says which tests needed it.

It prints a table per set, the most frequent refusal reasons (unsupported operators counted by name), writes
a CSV, and exits 1 when a test is wrong or crashes and is not in the known-failures file, or when a set
passes fewer tests than its floor (onnx_suite_floor.txt: `SET MIN_PASS` lines; the floor only rises).

usage: /usr/bin/python3 onnx_suite.py --tunehub BIN [--sets node,simple,...] [--jobs N] [--csv FILE]
       [--floor FILE] [--known FILE] [--filter REGEX] [--data DIR] [--work DIR]
Exits 77 when the test data (libonnx-testdata) is not installed.
"""
import argparse
import collections
import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

DATA = "/usr/share/libonnx-testdata/data"
SETS = ("node", "pytorch-converted", "pytorch-operator", "simple")
RTOL, ATOL = 1e-3, 1e-7
IMPORT_TIMEOUT, BUILD_TIMEOUT, RUN_TIMEOUT = 60, 180, 60
FAILING = ("wrong", "crash")


def first_line(text, prefix_re=None):
    """The first non-empty line of a tool's stderr, without the tool's own prefix."""
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("building ", "importing ")):
            if prefix_re:
                line = re.sub(prefix_re, "", line)
            return line[:400]
    return "(no message)"


def run(cmd, timeout):
    """(status, rc, stderr, stdout): status is 'ok', 'fail', 'signal' or 'timeout'."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", None, "timed out after %d s" % timeout, ""
    if p.returncode < 0:
        return "signal", p.returncode, "killed by %s" % signal.Signals(-p.returncode).name, p.stdout
    return ("ok" if p.returncode == 0 else "fail"), p.returncode, p.stderr, p.stdout


class Test:
    def __init__(self, suite, name, path):
        self.suite, self.name, self.path = suite, name, path
        self.status, self.reason, self.frozen, self.seconds = "", "", False, 0.0


def load_sets(path):
    """[(model inputs by name, [expected outputs])] for each test_data_set_* of a test."""
    import onnx
    from onnx import numpy_helper
    out = []
    sets = sorted(d for d in os.listdir(path) if d.startswith("test_data_set_"))
    for d in sets:
        def read(prefix):
            files = sorted((f for f in os.listdir(os.path.join(path, d)) if re.fullmatch(prefix + r"_\d+\.pb", f)),
                           key=lambda f: int(re.search(r"(\d+)\.pb$", f).group(1)))
            arrs = []
            for f in files:
                t = onnx.TensorProto()
                with open(os.path.join(path, d, f), "rb") as fh:
                    t.ParseFromString(fh.read())
                arrs.append((t.name, numpy_helper.to_array(t)))
            return arrs
        out.append((read("input"), read("output")))
    return out


def freeze(model, names, values, dst):
    """Writes model with the graph inputs `names` turned into initializers of `values` to dst."""
    import onnx
    from onnx import numpy_helper
    m = onnx.ModelProto()
    m.CopyFrom(model)
    keep = [i for i in m.graph.input if i.name not in names]
    del m.graph.input[:]
    m.graph.input.extend(keep)
    for n in names:
        m.graph.initializer.append(numpy_helper.from_array(values[n], n))
    onnx.save(m, dst)


def compare(expected, got, rtol, atol):
    """'' when got agrees with expected, else why not."""
    import numpy as np
    if got.size != expected.size:
        return "%d values, expected %d (shape %s)" % (got.size, expected.size, list(expected.shape))
    try:
        np.testing.assert_allclose(got.reshape(expected.shape), expected, rtol=rtol, atol=atol)
    except AssertionError as e:
        lines = [ln.strip() for ln in str(e).splitlines() if ln.strip().startswith(("Mismatch", "Max"))]
        return "; ".join(lines) or "values differ"
    return ""


def run_test(t, tunehub, work):
    import numpy as np
    import onnx
    t0 = time.monotonic()
    try:
        _run_test(t, tunehub, work, np, onnx)
    except Exception as e:  # a harness error must not pass for a tunehub answer
        t.status, t.reason = "wrong", "harness: %s: %s" % (type(e).__name__, e)
    t.seconds = time.monotonic() - t0
    return t


def _run_test(t, tunehub, work, np, onnx):
    model = onnx.load(os.path.join(t.path, "model.onnx"))
    inits = {i.name for i in model.graph.initializer}
    gin = [i.name for i in model.graph.input if i.name not in inits]
    for kind, vis in (("input", [i for i in model.graph.input if i.name not in inits]),
                      ("output", model.graph.output)):
        for i in vis:
            if not i.type.HasField("tensor_type"):
                t.status, t.reason = "unfed", "%s '%s' is not a tensor (a sequence or optional)" % (kind, i.name)
                return
    sets = load_sets(t.path)
    if not sets:
        t.status, t.reason = "unfed", "no test_data_set"
        return
    tol = {}
    if os.path.isfile(os.path.join(t.path, "data.json")):
        tol = json.load(open(os.path.join(t.path, "data.json")))
    rtol, atol = float(tol.get("rtol", RTOL)), float(tol.get("atol", ATOL))
    values = [dict(zip(gin, [a for _, a in ins])) for ins, _ in sets]
    for name, arr in sets[0][0]:
        if arr.dtype not in (np.float32, np.int64):
            t.status, t.reason = "unfed", "input dtype %s" % arr.dtype
            return
    if len(sets[0][0]) != len(gin):
        t.status, t.reason = "unfed", "%d input files for %d graph inputs" % (len(sets[0][0]), len(gin))
        return
    first = sets[0][0][0][1] if gin else None
    batch = int(first.shape[0]) if first is not None and first.ndim > 0 and first.shape[0] > 0 else 1
    d = tempfile.mkdtemp(prefix=re.sub(r"\W", "_", t.name) + ".", dir=work)
    try:
        data = os.path.join(d, "data")
        net = "t"
        st, _, err, _ = run([tunehub, "import", os.path.join(t.path, "model.onnx"), "--name", net,
                             "--data", data], IMPORT_TIMEOUT)
        fed = gin
        if st == "fail" and len(gin) > 1 and len(sets) == 1:
            frozen_path = os.path.join(d, "frozen.onnx")
            freeze(model, gin[1:], values[0], frozen_path)
            st2, _, err2, _ = run([tunehub, "import", frozen_path, "--name", net, "--data", data], IMPORT_TIMEOUT)
            if st2 == "ok":
                st, err, fed, t.frozen = st2, err2, gin[:1], True
            elif st2 != "fail":
                st, err = st2, err2
        if st in ("signal", "timeout"):
            t.status, t.reason = "crash", "import: " + first_line(err)
            return
        if st != "ok":
            t.status, t.reason = "refused", first_line(err, r"^tunehub import: \S+: ")
            return
        tar = os.path.join(d, "b.tar")
        st, _, err, _ = run([tunehub, "build", "llvm", net, str(batch), "-o", tar, "--data", data], BUILD_TIMEOUT)
        if st in ("signal", "timeout"):
            t.status, t.reason = "crash", "build: " + first_line(err)
            return
        if st != "ok":
            t.status, t.reason = "refused", "build: " + first_line(err, r"^tunehub build: ")
            return
        for k, (ins, outs) in enumerate(sets):
            args = []
            for name in fed:
                f = os.path.join(d, "in%d_%d.bin" % (k, len(args)))
                values[k][name].tofile(f)
                args += ["--input", "%s=%s" % (name, f)]
            od = os.path.join(d, "out%d" % k)
            st, _, err, stdout = run([tunehub, "run", tar] + args + ["--output-dir", od], RUN_TIMEOUT)
            if st in ("signal", "timeout"):
                t.status, t.reason = "crash", "run: " + first_line(err)
                return
            if st != "ok":
                t.status, t.reason = "wrong", "run: " + first_line(err, r"^tunehub run: \S+: ")
                return
            written = {}
            for line in stdout.splitlines():
                m = re.match(r"^output (\S+) (\S+) .* -> (.*)$", line)
                if m:
                    written[m.group(1)] = (m.group(2), m.group(3))
            gout = [o.name for o in model.graph.output]
            for i, (_, exp) in enumerate(outs):
                name = gout[i] if i < len(gout) else "?"
                if name not in written:
                    t.status, t.reason = "wrong", "output '%s' not written" % name
                    return
                dtype, f = written[name]
                got = np.fromfile(f, "<i8" if dtype == "int64" else "<f4")
                if exp.dtype == np.object_:
                    t.status, t.reason = "unfed", "output '%s' is a %s tensor" % (name, exp.dtype)
                    return
                # in float64: tunehub's float32 answer is compared with the expected one as computed
                # (rounded to fp16 or to an integer there), never rounded to the expected type first
                why = compare(exp.astype(np.float64), got.astype(np.float64), rtol, atol)
                if why:
                    t.status, t.reason = "wrong", "output '%s' (data set %d): %s" % (name, k, why)
                    return
        t.status = "pass"
    finally:
        shutil.rmtree(d, ignore_errors=True)


def refusal_key(reason):
    """The operators an 'unsupported ONNX operators' refusal names, else the reason with names blanked."""
    ops = re.findall(r"(?:: |, )(\w+) \(node '", reason)
    if ops and "unsupported ONNX operators" in reason:
        return ["op " + o for o in sorted(set(ops))]
    r = re.sub(r"'[^']*'", "'…'", reason)
    r = re.sub(r"\d+", "N", r)
    return [r[:110]]


def read_known(path):
    known = {}
    if path and os.path.isfile(path):
        for line in open(path):
            line = line.split("#", 1)[0].strip()
            if line:
                parts = line.split(None, 2)
                known[parts[0]] = (parts[1] if len(parts) > 1 else "", parts[2] if len(parts) > 2 else "")
    return known


def read_floor(path):
    floor = {}
    if path and os.path.isfile(path):
        for line in open(path):
            line = line.split("#", 1)[0].split()
            if len(line) == 2:
                floor[line[0]] = int(line[1])
    return floor


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tunehub", required=True)
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--csv")
    ap.add_argument("--floor")
    ap.add_argument("--known")
    ap.add_argument("--filter")
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--work", default=None)
    ap.add_argument("--top", type=int, default=15)
    a = ap.parse_args()
    if not os.path.isdir(a.data):
        print("SKIP: %s is missing (Debian's libonnx-testdata: scripts/deps.sh --test)" % a.data)
        return 77
    try:
        import numpy  # noqa: F401
        import onnx  # noqa: F401
    except ImportError as e:
        print("%s cannot import onnx and numpy (python3-onnx: scripts/deps.sh --test): %s" % (sys.executable, e))
        return 1
    sets = [s for s in a.sets.split(",") if s]
    for s in sets:
        if not os.path.isdir(os.path.join(a.data, s)):
            print("unknown set '%s'; valid: %s" % (s, ", ".join(sorted(os.listdir(a.data)))))
            return 2
    tests = []
    for s in sets:
        for name in sorted(os.listdir(os.path.join(a.data, s))):
            p = os.path.join(a.data, s, name)
            if os.path.isfile(os.path.join(p, "model.onnx")) and (not a.filter or re.search(a.filter, name)):
                tests.append(Test(s, name, p))
    work = tempfile.mkdtemp(prefix="onnx-suite.", dir=a.work)
    t0 = time.monotonic()
    try:
        with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
            done = list(ex.map(lambda t: run_test(t, a.tunehub, work), tests))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    wall = time.monotonic() - t0

    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["set", "test", "status", "frozen", "seconds", "reason"])
            for t in done:
                w.writerow([t.suite, t.name, t.status, int(t.frozen), "%.2f" % t.seconds, t.reason])
    known, floor = read_known(a.known), read_floor(a.floor)
    rc = 0
    print("%-18s %6s %6s %8s %6s %6s %6s %7s" % ("set", "tests", "pass", "refused", "wrong", "crash", "unfed",
                                                 "frozen"))
    for s in sets:
        ts = [t for t in done if t.suite == s]
        c = collections.Counter(t.status for t in ts)
        print("%-18s %6d %6d %8d %6d %6d %6d %7d" % (s, len(ts), c["pass"], c["refused"], c["wrong"], c["crash"],
                                                     c["unfed"], sum(t.frozen and t.status == "pass" for t in ts)))
    for s in sets:
        ts = [t for t in done if t.suite == s and t.status == "refused"]
        if not ts:
            continue
        keys = collections.Counter(k for t in ts for k in refusal_key(t.reason))
        print("\n%s: top refusal reasons (%d refused; a test may name several operators)" % (s, len(ts)))
        for k, n in keys.most_common(a.top):
            print("  %4d  %s" % (n, k))
    print()
    for t in done:
        key = "%s/%s" % (t.suite, t.name)
        if t.status in FAILING:
            if key in known and known[key][0] == t.status:
                print("KNOWN %s %s: %s" % (t.status, key, t.reason))
            else:
                print("FAIL %s %s: %s" % (t.status, key, t.reason))
                rc = 1
        elif key in known and t.status == "pass":
            print("NOTE %s passes now: remove it from %s" % (key, a.known))
    for s in sets:
        npass = sum(t.status == "pass" for t in done if t.suite == s)
        if a.filter is None and npass < floor.get(s, 0):
            print("FAIL %s: %d tests pass, below the floor of %d in %s" % (s, npass, floor[s], a.floor))
            rc = 1
        elif a.filter is None and s in floor and npass > floor[s]:
            print("NOTE %s: %d tests pass, above the floor of %d: raise it in %s" % (s, npass, floor[s], a.floor))
    slow = sorted(done, key=lambda t: -t.seconds)[:3]
    print("%d tests in %.1f s with %d workers (slowest: %s)" % (
        len(done), wall, a.jobs, ", ".join("%s %.1f s" % (t.name, t.seconds) for t in slow)))
    return rc


if __name__ == "__main__":
    sys.exit(main())
