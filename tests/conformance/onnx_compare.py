#!/usr/bin/python3
"""Compares tunehub's outputs with ONNX Runtime's for onnx_conformance.sh. For every output of the export's
META.json at BATCH it reads REF_DIR/<name>.bin (ONNX Runtime, float32) and GOT_DIR/<name>.bin (tunehub) and
prints max |got - ref|, max |ref| and their ratio. It exits 1 when a ratio passes 1e-4 (or is not finite),
when a file does not hold the output's shape, or when the reference is degenerate: constant along its last
axis or across the batch (conformance_torch.check_varies), since agreeing with it would prove nothing.

usage: /usr/bin/python3 onnx_compare.py META.json BATCH REF_DIR GOT_DIR
"""
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "unit"))
import conformance_torch as ct  # noqa: E402

LIMIT = 1e-4


def compare(name, shape, ref, got):
    """True when got agrees with ref; prints the figures either way."""
    n = int(np.prod(shape))
    if ref.size != n or got.size != n:
        print("%s: ONNX Runtime gave %d values, tunehub %d; the shape %s has %d" % (name, ref.size, got.size,
                                                                                  shape, n))
        return False
    ok = True
    try:
        ct.check_varies("ORT " + name, torch.from_numpy(ref.reshape(shape)))
    except ct.Fail as e:
        print("the reference is degenerate: %s" % e)
        ok = False
    err = np.abs(got.astype(np.float64) - ref)
    scale, diff = float(np.abs(ref).max()), float(err.max())
    good = bool(np.isfinite(diff)) and diff <= LIMIT * scale
    worst = int(err.argmax())
    print("%s %s: max |tunehub - ORT| %.3g, max |ORT| %.4g, ratio %.3g (limit %g)%s"
          % (name, shape, diff, scale, diff / scale if scale else float("inf"), LIMIT,
             "" if good else ": FAIL, at flat index %d tunehub %.7g, ORT %.7g" % (worst, got[worst], ref[worst])))
    return ok and good


def main(meta_path, batch, ref_dir, got_dir):
    meta = json.load(open(meta_path))
    ok = True
    for out in meta["outputs"]:
        shape = [batch] + out["shape"][1:]
        files = [os.path.join(d, out["name"] + ".bin") for d in (ref_dir, got_dir)]
        missing = [f for f in files if not os.path.isfile(f)]
        if missing:
            print("b%d %s: no %s" % (batch, out["name"], " and no ".join(missing)))
            ok = False
            continue
        ref, got = (np.fromfile(f, "<f4") for f in files)
        ok = compare("b%d %s" % (batch, out["name"]), shape, ref, got) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]))
