"""tunehub: the Python client of the tunehub registry.

load(path) opens a bundle (.tar: manifest.json, model.so, params.bin) and runs numpy arrays through its
model.so; Client(url).pull(network, batch) asks a daemon for the bundle that suits this machine
(?target=auto with its CPU features), waits for a build with progress, checks the digest and caches it;
verify_bundle(path, envelope, key) checks a bundle against its signed provenance (Client(verify_key=...)
does on every pull).
"""
from .errors import (EnvelopeError, IntegrityError, ModelError, ProvenanceError, ServerError, SignatureError,
                     SubjectError, TunehubError, UnsignedError, VerifyKeyError)
from .model import Model, load
from .provenance import Statement, verify_bundle

__all__ = ["Client", "EnvelopeError", "IntegrityError", "Model", "ModelError", "ProvenanceError",
           "ServerError", "SignatureError", "Statement", "SubjectError", "TunehubError", "UnsignedError",
           "VerifyKeyError", "load", "verify_bundle"]


def __getattr__(name):  # Client imports urllib and friends: only when asked for
    if name == "Client":
        from .client import Client

        return Client
    raise AttributeError(name)
