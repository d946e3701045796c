"""tunehub: the Python client of the tunehub registry.

load(path) opens a bundle (.tar: manifest.json, model.so, params.bin) and runs numpy arrays through its
model.so; Client(url).pull(network, batch) asks a daemon for the bundle that suits this machine
(?target=auto with its CPU features), waits for a build with progress, checks the digest and caches it.
"""
from .errors import IntegrityError, ModelError, ServerError, TunehubError
from .model import Model, load

__all__ = ["Client", "IntegrityError", "Model", "ModelError", "ServerError", "TunehubError", "load"]


def __getattr__(name):  # Client imports urllib and friends: only when asked for
    if name == "Client":
        from .client import Client

        return Client
    raise AttributeError(name)
