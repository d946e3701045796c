"""Unit tests of tunehub.provenance (signed provenance, client side): DSSE's PAE against the spec's vector,
its base64 (standard and URL-safe, padding optional), and verify_bundle against envelopes signed here by the
openssl command over a PAE that printf builds, so neither side is checked against itself."""
import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from tunehub import (EnvelopeError, ProvenanceError, SignatureError, SubjectError, VerifyKeyError,
                     verify_bundle)
from tunehub.provenance import PAYLOAD_TYPE, b64decode, pae


class PaeTest(unittest.TestCase):
    def test_dsse_spec_vector(self):
        # the DSSE v1 protocol's own example (secure-systems-lab/dsse, protocol.md)
        self.assertEqual(pae("http://example.com/HelloWorld", b"hello world"),
                         b"DSSEv1 29 http://example.com/HelloWorld 11 hello world")

    def test_lengths_are_bytes_not_characters(self):
        self.assertEqual(pae("t", "é".encode()), b"DSSEv1 1 t 2 \xc3\xa9")
        self.assertEqual(pae("", b""), b"DSSEv1 0  0 ")


class Base64Test(unittest.TestCase):
    def test_standard_and_url_safe_with_or_without_padding(self):
        raw = bytes(range(256))
        std, url = base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()
        for enc in (std, url, std.rstrip("="), url.rstrip("=")):
            self.assertEqual(b64decode(enc), raw)
        self.assertEqual(b64decode(""), b"")

    def test_not_base64(self):
        for bad in ("a", "ab$d", "ab cd", "abc\n", "é"):
            with self.assertRaises(ValueError, msg=bad):
                b64decode(bad)


def openssl(*args, **kw):
    return subprocess.run(["openssl", *args], check=True, capture_output=True, **kw)


class VerifyBundleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not shutil.which("openssl"):
            raise unittest.SkipTest("no openssl command (scripts/deps.sh --test installs it)")
        cls.dir = tempfile.mkdtemp(prefix="th-prov-")
        d = cls.dir
        for k in ("key", "other"):
            openssl("genpkey", "-algorithm", "ed25519", "-out", f"{d}/{k}.pem")
            openssl("pkey", "-in", f"{d}/{k}.pem", "-pubout", "-out", f"{d}/{k}_pub.pem")
        openssl("genpkey", "-algorithm", "rsa", "-pkeyopt", "rsa_keygen_bits:1024", "-out", f"{d}/rsa.pem")
        openssl("pkey", "-in", f"{d}/rsa.pem", "-pubout", "-out", f"{d}/rsa_pub.pem")
        cls.bundle = f"{d}/b.tar"
        with open(cls.bundle, "wb") as f:
            f.write(b"bundle bytes\n")
        cls.hexd = hashlib.sha256(b"bundle bytes\n").hexdigest()
        cls.stmt = {"_type": "https://in-toto.io/Statement/v1",
                    "subject": [{"name": "llvm/net/1", "digest": {"sha256": cls.hexd}}],
                    "predicateType": "https://tunehub.dev/provenance/bundle/v1", "predicate": {"x": "é"}}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def envelope(self, statement=None, payload=None, key="key", ptype=PAYLOAD_TYPE, enc=base64.b64encode):
        """A DSSE envelope of statement (or the raw payload bytes) signed by openssl with key: the PAE is
        built by the shell's printf, not by tunehub.provenance.pae."""
        if payload is None:
            payload = json.dumps(statement or self.stmt, ensure_ascii=False).encode()
        d = self.dir
        with open(f"{d}/payload", "wb") as f:
            f.write(payload)
        subprocess.run(["bash", "-c", f'printf "DSSEv1 %d %s %d " "${{#T}}" "$T" "$(stat -c %s {d}/payload)" '
                        f'>{d}/pae && cat {d}/payload >>{d}/pae'], check=True, env=dict(os.environ, T=ptype))
        sig = openssl("pkeyutl", "-sign", "-inkey", f"{d}/{key}.pem", "-rawin", "-in", f"{d}/pae").stdout
        return json.dumps({"payloadType": ptype, "payload": enc(payload).decode(),
                           "signatures": [{"keyid": "", "sig": enc(sig).decode()}]}).encode()

    def test_good_envelope_verifies(self):
        pub = f"{self.dir}/key_pub.pem"
        st = verify_bundle(self.bundle, self.envelope(), pub)
        self.assertEqual(st.subject[0]["digest"]["sha256"], self.hexd)
        self.assertEqual(st.predicate, {"x": "é"})
        with open(pub) as f:  # the key as PEM text, and as bytes
            text = f.read()
        verify_bundle(self.bundle, self.envelope(), text)
        verify_bundle(self.bundle, self.envelope(), text.encode())
        # URL-safe base64 without padding (DSSE allows both)
        verify_bundle(self.bundle, self.envelope(enc=lambda b: base64.urlsafe_b64encode(b).rstrip(b"=")), pub)

    def test_tampered_statement(self):
        env = json.loads(self.envelope())
        forged = dict(self.stmt, predicate={"x": "faster"})
        env["payload"] = base64.b64encode(json.dumps(forged).encode()).decode()
        pub = f"{self.dir}/key_pub.pem"
        with self.assertRaisesRegex(SignatureError, f"^signature does not verify with {pub}$"):
            verify_bundle(self.bundle, json.dumps(env), pub)

    def test_wrong_key(self):
        pub = f"{self.dir}/other_pub.pem"
        with self.assertRaisesRegex(SignatureError, f"^signature does not verify with {pub}$"):
            verify_bundle(self.bundle, self.envelope(), pub)
        with self.assertRaisesRegex(SignatureError, "^signature does not verify with the given PEM key$"):
            with open(pub) as f:
                verify_bundle(self.bundle, self.envelope(), f.read())

    def test_tampered_bundle(self):
        bad = f"{self.dir}/bad.tar"
        with open(bad, "wb") as f:
            f.write(b"bundle bytes\nx")
        got = hashlib.sha256(b"bundle bytes\nx").hexdigest()
        with self.assertRaisesRegex(SubjectError, f"^bundle digest sha256:{got} is not the statement's subject "
                                                  f"sha256:{self.hexd}$"):
            verify_bundle(bad, self.envelope(), f"{self.dir}/key_pub.pem")

    def test_not_a_statement(self):
        pub = f"{self.dir}/key_pub.pem"
        for payload in (b"not json", b'{"_type": "https://in-toto.io/Statement/v0.1", "subject": []}',
                        b'{"_type": "https://in-toto.io/Statement/v1"}'):
            with self.assertRaisesRegex(EnvelopeError, "no in-toto Statement v1 with a subject"):
                verify_bundle(self.bundle, self.envelope(payload=payload), pub)
        st = dict(self.stmt, subject=[{"name": "x", "digest": "nope"}])
        with self.assertRaisesRegex(SubjectError, r"subject sha256:\(none\)$"):
            verify_bundle(self.bundle, self.envelope(st), pub)

    def test_not_dsse(self):
        pub = f"{self.dir}/key_pub.pem"
        good = json.loads(self.envelope())
        cases = [(b"not json", "Expecting value"),
                 (b"[]", "a DSSE envelope has string payloadType and payload and a non-empty signatures"),
                 (json.dumps(dict(good, signatures=[])), "non-empty signatures array"),
                 (json.dumps({k: v for k, v in good.items() if k != "payload"}),
                  "string payloadType and payload"),
                 (self.envelope(ptype="application/json"),
                  f"payloadType 'application/json', expected {PAYLOAD_TYPE}"),
                 (json.dumps(dict(good, payload="@@@")), "the payload is not base64")]
        for env, want in cases:
            with self.assertRaisesRegex(EnvelopeError, "^statement is not valid JSON/DSSE: .*" + re.escape(want),
                                        msg=want):
                verify_bundle(self.bundle, env, pub)
        bad_sig = dict(good, signatures=[{"sig": "@@@"}, {"nosig": 1}])
        with self.assertRaises(SignatureError):
            verify_bundle(self.bundle, json.dumps(bad_sig), pub)
        # a second signature that verifies is enough
        two = dict(good, signatures=[{"sig": "AAAA"}] + good["signatures"])
        verify_bundle(self.bundle, json.dumps(two), pub)

    def test_bad_keys(self):
        d = self.dir
        for k in (f"{d}/rsa_pub.pem", f"{d}/key.pem"):
            with self.assertRaisesRegex(VerifyKeyError, f"^{k} holds no Ed25519 public key"):
                verify_bundle(self.bundle, self.envelope(), k)
        with self.assertRaisesRegex(VerifyKeyError, f"^cannot read the public key file {d}/nowhere.pem"):
            verify_bundle(self.bundle, self.envelope(), f"{d}/nowhere.pem")
        self.assertTrue(issubclass(VerifyKeyError, ProvenanceError))


if __name__ == "__main__":
    unittest.main()
