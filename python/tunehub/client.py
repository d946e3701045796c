"""Client(url, token): the tunehub HTTP API from Python. pull() asks for the bundle that suits this machine
(?target=auto with its CPU features, or its CUDA arch), follows the build job's events on a miss, checks the
bundle's SHA-256 against the digest the server states (Docker-Content-Digest) and keeps it under
$XDG_CACHE_HOME/tunehub/bundles (~/.cache/tunehub/bundles) by digest, so that a second pull of the same
digest downloads nothing. With verify_key, pull() also checks the version's signed provenance (GET
.../provenance?version=N, kept beside the bundle as <sha256>.dsse) and refuses an unsigned version."""
import json
import os
import shutil
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request

from . import machine
from .errors import IntegrityError, ProvenanceError, ServerError, TunehubError, UnsignedError
from . import model
from .model import cache_root, file_sha256
from .provenance import verify_bundle
from .sse import parse_sse


_shown = [None]  # the last (phase, stage) of a progress snapshot stderr_progress printed


def stderr_progress(event, data):
    """The default progress callback: one line on stderr per stage a job enters (from its stage events and
    from the progress snapshots, which a stream that joins late starts with), per published version, and
    at its end."""
    if not isinstance(data, dict):
        return
    job = data.get("job")
    if event == "stage":
        n, t = data.get("ntasks") or 0, data.get("task", -1)
        task = f" task {t + 1}/{n}" if n > 0 and t >= 0 else ""
        line = f"{data.get('phase', '')} {data.get('stage')}{task}"
    elif event == "progress" and isinstance(data.get("build"), dict) and data["build"].get("stage"):
        b = data["build"]
        line = f"{data.get('phase', '')} {b['stage']} ({b.get('done', 0)}/{b.get('total', 0)})"
        if _shown[0] == (data.get("phase"), b["stage"]):
            return
        _shown[0] = (data.get("phase"), b["stage"])
    elif event == "published":
        line = f"published version {data.get('version')} {data.get('digest')}"
    elif event == "done":
        line = f"{data.get('state')}" + (f": {data['error']}" if data.get("error") else "")
    else:
        return
    print(f"tunehub: {'job ' + str(job) + ': ' if job is not None else ''}{line.strip()}", file=sys.stderr)


class Client:
    """A tunehub daemon at url ("http://host:8080"); token: the bearer token for the routes that need one;
    verify_key: an Ed25519 public key (a PEM file's path or its text) that every pulled bundle's signed
    provenance must verify with."""

    def __init__(self, url, token=None, timeout=60, verifier=None, verify_key=None):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        # Signed provenance (issue 40, part 3) hooks in here: pull() calls verifier(path, digest, client) on
        # every bundle it returns, after the digest check (and after verify_key's check); it must raise to
        # refuse the bundle.
        self.verifier = verifier
        self.verify_key = verify_key
        self.last_target = (None, None)
        self.last_version = None  # the version pull() returned (X-Tunehub-Version)
        self.last_statement = None  # its verified in-toto statement (with verify_key)

    # ---- HTTP ------------------------------------------------------------------------------------------
    def _request(self, method, path, body=None, headers=None, miss_ok=False):
        h = dict(headers or {})
        if self.token:
            h["Authorization"] = f"Bearer {self.token}"
        req = urllib.request.Request(self.url + path, data=body, headers=h, method=method)
        try:
            return urllib.request.urlopen(req, timeout=self.timeout)
        except urllib.error.HTTPError as e:
            if miss_ok and (e.code == 503 or (e.code == 404 and method == "HEAD")):
                return e  # a miss (HEAD never queues: 404): the caller follows the job
            raise self._server_error(e) from None
        except urllib.error.URLError as e:
            raise TunehubError(f"cannot reach {self.url}: {e.reason}") from None

    @staticmethod
    def _server_error(e):
        try:
            err = json.loads(e.read().decode("utf-8", "replace"))["error"]
            return ServerError(e.code, err.get("code", ""), err.get("message", ""))
        except (ValueError, KeyError, TypeError, AttributeError):
            return ServerError(e.code, "", e.reason if isinstance(e.reason, str) else str(e))

    def _json(self, method, path, body=None, headers=None):
        with self._request(method, path, body, headers) as r:
            return json.loads(r.read().decode("utf-8"))

    @staticmethod
    def _key(framework, network, batch):
        q = urllib.parse.quote
        return f"/models/{q(framework, safe='')}/{q(network, safe='')}/{int(batch)}"

    # ---- the catalog -----------------------------------------------------------------------------------
    def networks(self):
        """GET /networks: the zoo and the uploaded networks (name, source, inputs, outputs, ...)."""
        return self._json("GET", "/networks")["networks"]

    def versions(self, network, batch, framework="llvm", target=None, precision=None):
        """GET .../versions: every published version of the key, oldest first, and its aliases."""
        return self._json("GET", self._key(framework, network, batch) + "/versions" +
                          self._query(target=target, precision=precision))

    def upload(self, path, name, shapes=None):
        """PUT /networks/{name} (token): an ONNX file as a new network or a new version of it."""
        with open(path, "rb") as f:
            body = f.read()
        q = self._query(shapes=shapes)
        return self._json("PUT", "/networks/" + urllib.parse.quote(name, safe="") + q, body,
                          {"Content-Type": "application/octet-stream"})

    def tune(self, network, batch, framework="llvm", trials=None, tuner=None, early_stopping=None,
             priority=None, target=None, precision=None):
        """POST .../tune (token): queues a tuning job with the options the API takes; returns its JSON."""
        opts = {k: v for k, v in (("trials", trials), ("tuner", tuner), ("early_stopping", early_stopping),
                                  ("priority", priority)) if v is not None}
        return self._json("POST", self._key(framework, network, batch) + "/tune" +
                          self._query(target=target, precision=precision), json.dumps(opts).encode(),
                          {"Content-Type": "application/json"})

    @staticmethod
    def _query(**kw):
        kv = {k: v for k, v in kw.items() if v is not None}
        return "?" + urllib.parse.urlencode(kv) if kv else ""

    # ---- pull ------------------------------------------------------------------------------------------
    @staticmethod
    def machine_headers(framework, target):
        """The headers that describe this machine to ?target=auto (none for a named target)."""
        if target != "auto":
            return {}
        if framework == "cuda":
            return {"X-Tunehub-CUDA-Arch": machine.cuda_arch()}
        flags = machine.cpu_features()
        if not flags:
            raise TunehubError("target=auto: /proc/cpuinfo has no CPU flags here; name a target (target=...)")
        return {"X-Tunehub-CPU-Features": ",".join(flags)}

    def follow_job(self, job, progress=stderr_progress):
        """Follows GET /jobs/{job}/events until its done event, calling progress(event, data) for each
        event; returns the done event's data."""
        with self._request("GET", f"/jobs/{int(job)}/events", headers={"Accept": "text/event-stream"}) as r:
            for event, data, _ in parse_sse(r):
                if progress:
                    progress(event, data)
                if event == "done":
                    return data
        raise TunehubError(f"the events of job {job} ended before it did")

    def pull(self, network, batch, framework="llvm", precision=None, alias=None, target="auto",
             progress=stderr_progress, load=False):
        """The bundle of (framework, network, batch) that this machine runs best: its path in the cache (or a
        loaded Model with load=True). On a miss the build is followed through its job's events (progress).
        Raises ServerError for the server's errors, IntegrityError when the bytes differ from the stated
        digest."""
        path = self._key(framework, network, batch) + self._query(target=target, precision=precision,
                                                                  alias=alias)
        headers = self.machine_headers(framework, target)
        # a published bundle already in the cache is not downloaded again: HEAD states its digest
        with self._request("HEAD", path, headers=headers, miss_ok=True) as r:
            digest = r.headers.get("Docker-Content-Digest") if r.status == 200 else None
            self.last_version = r.headers.get("X-Tunehub-Version") if r.status == 200 else None
            # what ?target=auto chose, and why (None for a named target)
            self.last_target = (r.headers.get("X-Tunehub-Target"), r.headers.get("X-Tunehub-Target-Reason"))
        cached = self._cached(digest) if digest else None
        if not cached:
            cached = self._download(path, headers, progress)
        if self.verify_key is not None:
            self.last_statement = self._check_provenance(cached, self._key(framework, network, batch),
                                                         target, precision, headers)
        if self.verifier is not None:
            self.verifier(cached, "sha256:" + os.path.basename(cached)[:-4], self)
        return model.load(cached) if load else cached

    @staticmethod
    def bundles_dir():
        """$XDG_CACHE_HOME/tunehub/bundles, else ~/.cache/tunehub/bundles."""
        return os.path.join(cache_root(), "bundles")

    def _cached(self, digest):
        """The cached bundle of digest when its bytes still hash to it; a tampered one is removed."""
        hexd = self._hex(digest)
        p = os.path.join(self.bundles_dir(), hexd + ".tar")
        if not os.path.isfile(p):
            return None
        if file_sha256(p) == hexd:
            return p
        os.unlink(p)  # refused: its bytes are not what its name says; downloaded again
        return None

    def _check_provenance(self, bundle, key, target, precision, headers):
        """The verified statement of bundle (a cached <sha256>.tar) by verify_key: its envelope from beside it
        (<sha256>.dsse), else from GET key/provenance?version=N (the version pulled), kept there once it
        verifies. An unsigned version is UnsignedError; a statement that does not hold, ProvenanceError."""
        env_path = bundle[:-4] + ".dsse"
        if os.path.isfile(env_path):
            with open(env_path, "rb") as f:
                envelope = f.read()
            try:
                return verify_bundle(bundle, envelope, self.verify_key)
            except ProvenanceError as e:
                raise type(e)(f"{e} (the cached statement {env_path}; delete it to fetch it again)") from None
        v = self.last_version
        if not v or not str(v).isdigit():
            raise UnsignedError(f"{key[len('/models/'):]}: the server stated no version for the bundle "
                                f"(X-Tunehub-Version), so its signed provenance cannot be fetched")
        try:
            with self._request("GET", key + "/provenance" + self._query(target=target, precision=precision,
                                                                         version=v), headers=headers) as r:
                envelope = r.read()
        except ServerError as e:
            if e.status == 404 and e.code == "no_provenance":
                raise UnsignedError(f"version {v} of {key[len('/models/'):]} is unsigned: {e.message}; "
                                    f"refused (a verify key was given)") from None
            raise
        st = verify_bundle(bundle, envelope, self.verify_key)
        fd, tmp = tempfile.mkstemp(prefix=".pull-", suffix=".dsse", dir=os.path.dirname(bundle))
        with os.fdopen(fd, "wb") as f:
            f.write(envelope)
        os.replace(tmp, env_path)
        return st

    @staticmethod
    def _hex(digest):
        algo, _, hexd = (digest or "").partition(":")
        if algo != "sha256" or len(hexd) != 64 or any(c not in "0123456789abcdef" for c in hexd):
            raise IntegrityError(f"the server stated no sha256 digest for the bundle (got '{digest}')")
        return hexd

    def _download(self, path, headers, progress):
        h = dict(headers, Prefer="respond-async")
        for _ in range(3):  # a miss: follow the job, then ask again (a newer build may have been queued)
            r = self._request("GET", path, headers=h, miss_ok=True)
            if r.status == 200:
                break
            r.close()
            loc = r.headers.get("Location") or r.headers.get("Link", "").partition(">")[0].lstrip("<")
            if "/jobs/" not in loc:
                raise ServerError(r.status, "", f"the server answered {r.status} without a job to follow")
            done = self.follow_job(int(loc.rsplit("/", 1)[1].split("?")[0]), progress)
            if isinstance(done, dict) and done.get("state") != "succeeded":
                raise ServerError(500, "build_failed", f"job {done.get('job')} {done.get('state')}: "
                                  f"{done.get('error')}")
        else:
            raise TunehubError(f"{path}: still not built after three jobs")
        with r:
            hexd = self._hex(r.headers.get("Docker-Content-Digest"))
            self.last_version = r.headers.get("X-Tunehub-Version")
            os.makedirs(self.bundles_dir(), exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".pull-", suffix=".tar", dir=self.bundles_dir())
            try:
                with os.fdopen(fd, "wb") as f:
                    shutil.copyfileobj(r, f, 1 << 20)
                got = file_sha256(tmp)
                if got != hexd:
                    raise IntegrityError(f"the bundle's bytes hash to sha256:{got}, not to the sha256:{hexd} "
                                         f"the server stated: refused")
                dest = os.path.join(self.bundles_dir(), hexd + ".tar")
                os.replace(tmp, dest)
                return dest
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
