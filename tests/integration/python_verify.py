"""The Python client's check of signed provenance (Client(verify_key=...), tunehub-pull --verify-key) against a
real daemon; tests/integration/python_verify.sh starts it and runs this with /usr/bin/python3 and python/ on the
path. Usage: python_verify.py signed|unsigned BASE_URL KEY_DIR DATA_DIR WORK_DIR."""
import base64
import glob
import json
import os
import shutil
import subprocess
import sys

import tunehub
from tunehub.client import Client
from th_check import check, raises  # tests/integration/th_check.py

CASE, BASE, KEYS, DATA, WORK = sys.argv[1:6]
NET = "squeezenet_v1.1"
PUB, OTHER = os.path.join(KEYS, "pub.pem"), os.path.join(KEYS, "other_pub.pem")


def cache(name):
    """A fresh $XDG_CACHE_HOME for what follows."""
    os.environ["XDG_CACHE_HOME"] = os.path.join(WORK, name)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def pull_cli(*args):
    return subprocess.run([sys.executable, "-m", "tunehub.cli", NET, "1", "--url", BASE, *args],
                          capture_output=True, text=True)


def signed():
    cache("c1")
    c = Client(BASE, verify_key=PUB)
    path = c.pull(NET, 1, progress=None)
    hexd = os.path.basename(path)[:-4]
    st = c.last_statement
    check(isinstance(st, tunehub.Statement) and st.subject[0]["digest"]["sha256"] == hexd and
          st.subject[0]["name"] == f"llvm/{NET}/1" and st.predicate["latency_ms"]["median"] > 0,
          f"a signed pull verifies with the right key: version {c.last_version}, "
          f"subject {getattr(st, 'subject', st)}")
    env_path = path[:-4] + ".dsse"
    check(os.path.isfile(env_path), "the envelope is cached beside the bundle")
    with open(env_path, "rb") as f:
        envelope = f.read()
    check(tunehub.verify_bundle(path, envelope, PUB) == st, "verify_bundle on the cache gives the same statement")

    # a cached pull downloads nothing, fetches no statement, and still verifies
    asked = []
    real = c._request
    c._request = lambda m, p, *a, **k: asked.append((m, p)) or real(m, p, *a, **k)
    c.last_statement = None
    check(c.pull(NET, 1, progress=None) == path and c.last_statement == st and
          [m for m, _ in asked] == ["HEAD"], f"a cached pull verifies from the cached envelope: {asked}")

    # the key as PEM text; a wrong key, on the cached envelope and on a fresh one from the server
    with open(PUB, encoding="utf-8") as f:
        check(Client(BASE, verify_key=f.read()).pull(NET, 1, progress=None) == path, "the key as PEM text")
    raises(tunehub.SignatureError, lambda: Client(BASE, verify_key=OTHER).pull(NET, 1, progress=None),
           f"signature does not verify with {OTHER}", "the cached statement")
    cache("c2")
    raises(tunehub.SignatureError, lambda: Client(BASE, verify_key=OTHER).pull(NET, 1, progress=None),
           f"signature does not verify with {OTHER}")
    check(not glob.glob(os.path.join(WORK, "c2", "tunehub", "bundles", "*.dsse")),
          "an envelope that does not verify is not cached")
    r = pull_cli("--verify-key", OTHER)
    check(r.returncode == 1 and f"tunehub-pull: signature does not verify with {OTHER}" in r.stderr,
          f"tunehub-pull --verify-key with a wrong key exits 1: {r.stderr.strip()}")
    r = pull_cli("--verify-key", PUB)
    check(r.returncode == 0 and r.stdout.strip().endswith(hexd + ".tar"), f"tunehub-pull --verify-key: {r.stdout}")

    # a tampered statement: the cached envelope's payload edited (another median latency) and re-encoded, to
    # the same length (the daemon serves a blob by its stored size, and the served case below reuses it)
    cache("c1")
    b64 = json.loads(envelope)["payload"]
    payload = base64.b64decode(b64)
    at = payload.index(b'"median":') + len(b'"median":')
    forged = payload[:at] + (b"1" if payload[at:at + 1] != b"1" else b"2") + payload[at + 1:]
    forged_env = envelope.replace(b64.encode(), base64.b64encode(forged))
    check(len(forged_env) == len(envelope) and forged_env != envelope, "a forged envelope of the same length")
    with open(env_path, "wb") as f:
        f.write(forged_env)
    raises(tunehub.SignatureError, lambda: Client(BASE, verify_key=PUB).pull(NET, 1, progress=None),
           f"signature does not verify with {PUB}", env_path)
    with open(env_path, "wb") as f:
        f.write(envelope)

    # a tampered cached bundle: verify_bundle names both digests; pull() drops it, downloads it again and verifies
    bad = os.path.join(WORK, "bad.tar")
    shutil.copyfile(path, bad)
    with open(bad, "ab") as f:
        f.write(b"x")
    e = raises(tunehub.SubjectError, lambda: tunehub.verify_bundle(bad, envelope, PUB),
               f"bundle digest sha256:{tunehub.model.file_sha256(bad)} is not the statement's subject sha256:{hexd}")
    check(isinstance(e, tunehub.IntegrityError), "a provenance failure is an IntegrityError")
    # the same words as `tunehub verify` (tuner/provenance.c) for a tampered bundle, a wrong key, a forged statement
    with open(os.path.join(WORK, "forged.dsse"), "wb") as f:
        f.write(forged_env)
    for b, env_file, key in ((bad, env_path, PUB), (path, env_path, OTHER),
                             (path, os.path.join(WORK, "forged.dsse"), PUB)):
        r = subprocess.run([os.environ["TUNEHUB"], "verify", b, "--statement", env_file, "--key", key],
                           capture_output=True, text=True)
        try:
            with open(env_file, "rb") as f:
                tunehub.verify_bundle(b, f.read(), key)
            py = "verified"
        except tunehub.ProvenanceError as pe:
            py = str(pe)
        check(r.returncode == 1 and r.stderr.strip() == f"tunehub verify: FAILED: {py}",
              f"tunehub verify and verify_bundle say the same: {py}")
    with open(path, "ab") as f:
        f.write(b"x")
    check(Client(BASE, verify_key=PUB).pull(NET, 1, progress=None) == path and
          tunehub.model.file_sha256(path) == hexd,
          "a tampered cached bundle is downloaded again, then verified")

    # a tampered statement served by the server itself (its stored envelope edited): a fresh cache refuses it
    stored = [p for p in glob.glob(os.path.join(DATA, "**", "*"), recursive=True)
              if os.path.isfile(p) and os.path.getsize(p) == len(envelope) and read(p) == envelope]
    check(len(stored) >= 1, f"the daemon's stored envelope: {stored}")
    for p in stored:
        with open(p, "wb") as f:
            f.write(forged_env)
    cache("c3")
    raises(tunehub.SignatureError, lambda: Client(BASE, verify_key=PUB).pull(NET, 1, progress=None),
           f"signature does not verify with {PUB}")
    for p in stored:
        with open(p, "wb") as f:
            f.write(envelope)


def unsigned():
    cache("c4")
    e = raises(tunehub.UnsignedError, lambda: Client(BASE, verify_key=PUB).pull(NET, 2, progress=None),
               f"version 1 of llvm/{NET}/2 is unsigned", "--signing-key", "refused")
    check(isinstance(e, tunehub.ProvenanceError), "UnsignedError is a ProvenanceError")
    check(not glob.glob(os.path.join(WORK, "c4", "tunehub", "bundles", "*.dsse")), "no envelope cached")
    r = subprocess.run([sys.executable, "-m", "tunehub.cli", NET, "2", "--url", BASE, "--verify-key", PUB],
                       capture_output=True, text=True)
    check(r.returncode == 1 and f"version 1 of llvm/{NET}/2 is unsigned" in r.stderr and not r.stdout,
          f"tunehub-pull --verify-key of an unsigned version exits 1: {r.stderr.strip()}")
    check(Client(BASE).pull(NET, 2, progress=None).endswith(".tar"), "without a key the unsigned pull passes")
    # the signed version of batch 1 (published by the signing daemon) still verifies from this one
    cache("c5")
    check(Client(BASE, verify_key=PUB).pull(NET, 1, progress=None).endswith(".tar"),
          "a version signed earlier verifies from a daemon now without a key")


{"signed": signed, "unsigned": unsigned}[CASE]()
