"""Signed provenance, client side: verify_bundle(path, envelope, key) checks a bundle against the DSSE envelope a
signing daemon serves for it (GET .../provenance): the envelope's shape and payloadType, an Ed25519 signature over
PAE(payloadType, payload) (DSSE v1) with the public key, through OpenSSL's libcrypto by ctypes, that the payload is
an in-toto Statement v1, and that its subject is the bundle's sha256. Each failure is its own ProvenanceError
subclass, worded as `tunehub verify` words it (tuner/provenance.c)."""
import base64
import binascii
import ctypes
import ctypes.util
import json
import os

from .errors import EnvelopeError, SignatureError, SubjectError, VerifyKeyError
from .model import file_sha256

PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
BAD = "statement is not valid JSON/DSSE: "


class Statement(dict):
    """The verified in-toto statement (its JSON as a dict); .subject and .predicate for short."""

    @property
    def subject(self):
        return self.get("subject")

    @property
    def predicate(self):
        return self.get("predicate")


def pae(payload_type, payload):
    """DSSE's pre-authentication encoding: "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body (lengths in
    bytes, decimal), what the signature covers."""
    t = payload_type.encode("utf-8") if isinstance(payload_type, str) else bytes(payload_type)
    return b"DSSEv1 %d %s %d " % (len(t), t, len(payload)) + bytes(payload)


def b64decode(text):
    """DSSE's base64: the standard alphabet or the URL-safe one, padding optional; ValueError otherwise."""
    s = text.rstrip("=")
    if len(s) % 4 == 1 or any(c not in _B64 for c in s):
        raise ValueError("not base64")
    s = s.replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(s + "=" * (-len(s) % 4), validate=True)
    except binascii.Error:
        raise ValueError("not base64") from None


_B64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_")
_lib = [None]


def _crypto():
    """libcrypto.so.3 with the prototypes used here, loaded once."""
    if _lib[0] is None:
        name = ctypes.util.find_library("crypto") or "libcrypto.so.3"
        try:
            c = ctypes.CDLL(name)
        except OSError as e:
            raise VerifyKeyError(f"cannot load OpenSSL's libcrypto ({name}): {e}") from None
        p, i, sz = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
        for fn, res, args in (("BIO_new_mem_buf", p, [ctypes.c_char_p, i]), ("BIO_free", i, [p]),
                              ("PEM_read_bio_PUBKEY", p, [p, p, p, p]), ("EVP_PKEY_free", None, [p]),
                              ("EVP_PKEY_is_a", i, [p, ctypes.c_char_p]), ("EVP_MD_CTX_new", p, []),
                              ("EVP_MD_CTX_free", None, [p]), ("EVP_DigestVerifyInit", i, [p, p, p, p, p]),
                              ("EVP_DigestVerify", i, [p, ctypes.c_char_p, sz, ctypes.c_char_p, sz]),
                              ("ERR_clear_error", None, [])):
            f = getattr(c, fn)
            f.restype, f.argtypes = res, args
        _lib[0] = c
    return _lib[0]


def _read_key(key):
    """(PEM bytes, the name failures give it) of key: a PEM text (str/bytes with "-----BEGIN") or a path."""
    if isinstance(key, (bytes, bytearray)) and b"-----BEGIN" in key:
        return bytes(key), "the given PEM key"
    if isinstance(key, str) and "-----BEGIN" in key:
        return key.encode("utf-8"), "the given PEM key"
    path = os.fsdecode(key)
    try:
        with open(path, "rb") as f:
            return f.read(), path
    except OSError as e:
        raise VerifyKeyError(f"cannot read the public key file {path}: {e.strerror}") from None


def _pkey(pem, name):
    """An EVP_PKEY* of the Ed25519 public key in pem (the caller frees it), else VerifyKeyError."""
    c = _crypto()
    bio = c.BIO_new_mem_buf(pem, len(pem))
    if not bio:
        raise VerifyKeyError("out of memory reading the public key")
    k = c.PEM_read_bio_PUBKEY(bio, None, None, None)
    c.BIO_free(bio)
    if not k or c.EVP_PKEY_is_a(k, b"ED25519") != 1:
        if k:
            c.EVP_PKEY_free(k)
        c.ERR_clear_error()
        raise VerifyKeyError(f'{name} holds no Ed25519 public key: expected PEM ("BEGIN PUBLIC KEY"), as '
                             f"`openssl pkey -in SIGNING.pem -pubout -out {name}` writes")
    return k


def _verify_any(k, sigs, message):
    """Whether one of the envelope's signatures (base64 "sig") is an Ed25519 signature of message by k."""
    c = _crypto()
    for s in sigs:
        b64s = s.get("sig") if isinstance(s, dict) else None
        try:
            sig = b64decode(b64s) if isinstance(b64s, str) else None
        except ValueError:
            continue
        if sig is None:  # an entry with no string "sig" verifies nothing
            continue
        ctx = c.EVP_MD_CTX_new()
        ok = bool(ctx) and c.EVP_DigestVerifyInit(ctx, None, None, None, k) == 1 and \
            c.EVP_DigestVerify(ctx, sig, len(sig), message, len(message)) == 1
        c.EVP_MD_CTX_free(ctx)
        c.ERR_clear_error()
        if ok:
            return True
    return False


def verify_bundle(path, envelope, public_key_pem):
    """Checks the bundle at path against envelope (the DSSE envelope's bytes, GET .../provenance) with
    public_key_pem (a PEM text, or the path of a PEM file); returns the verified Statement. Raises
    EnvelopeError, VerifyKeyError, SignatureError or SubjectError (all ProvenanceError) naming the check."""
    try:
        env = json.loads(envelope)
    except (ValueError, TypeError) as e:
        raise EnvelopeError(f"{BAD}{e}") from None
    ptype = env.get("payloadType") if isinstance(env, dict) else None
    b64p = env.get("payload") if isinstance(env, dict) else None
    sigs = env.get("signatures") if isinstance(env, dict) else None
    if not isinstance(ptype, str) or not isinstance(b64p, str) or not isinstance(sigs, list) or not sigs:
        raise EnvelopeError(f"{BAD}a DSSE envelope has string payloadType and payload and a non-empty "
                            f"signatures array")
    if ptype != PAYLOAD_TYPE:
        raise EnvelopeError(f"{BAD}payloadType '{ptype}', expected {PAYLOAD_TYPE}")
    try:
        payload = b64decode(b64p)
    except ValueError:
        raise EnvelopeError(f"{BAD}the payload is not base64") from None
    pem, name = _read_key(public_key_pem)
    k = _pkey(pem, name)
    try:
        good = _verify_any(k, sigs, pae(ptype, payload))
    finally:
        _crypto().EVP_PKEY_free(k)
    if not good:
        raise SignatureError(f"signature does not verify with {name}")
    try:
        st = json.loads(payload)
    except ValueError:
        st = None
    subj = st.get("subject") if isinstance(st, dict) else None
    if not isinstance(st, dict) or st.get("_type") != STATEMENT_TYPE or not isinstance(subj, list):
        raise EnvelopeError(f"{BAD}the signed payload is no in-toto Statement v1 with a subject")
    digests = [x["digest"].get("sha256") for x in subj
               if isinstance(x, dict) and isinstance(x.get("digest"), dict)]
    digests = [d for d in digests if isinstance(d, str)]
    got = file_sha256(path)
    if got not in digests:
        raise SubjectError(f"bundle digest sha256:{got} is not the statement's subject "
                           f"sha256:{digests[0] if digests else '(none)'}")
    return Statement(st)
